// A drop folder: a directory a sandboxed agent writes to. A file that has its
// final name and a stable size is prepared with the folder as its only source
// root, answered with a receipt beside it, then removed. The folder is
// untrusted input: nothing in it crashes or stalls the watcher.
import fs from "node:fs";
import type { FSWatcher } from "chokidar";
import { type Config, sizeCapFor, withPolicyOf } from "../config/config.js";
import { FatalError, type RefusalCode, errnoCode } from "../core/errors.js";
import { escapeText } from "../core/escape.js";
import { type Logger, silentLogger } from "../log/logger.js";
import { extensionOf } from "../prepare/name.js";
import { prepare } from "../prepare/prepare.js";
import { entryPath, isRawName, mayBeLossy, readNames, showName, textOfName, withSuffix } from "../safety/entry-names.js";
import { type DirIdentity, dirIdentity, sameDir } from "./dir-identity.js";
import { watchDirectory } from "./dir-watch.js";
import { type EventSink, type SkipCode, errorText } from "./events.js";
import { MEDIA_RECEIPT, REFUSED_RECEIPT, existingReceipt, isIgnoredDropName, receiptNamesFit, writeReceipt } from "./receipt.js";
import type { PrepareDrop } from "./watch-workers.js";
import type { WorkQueue } from "./work-queue.js";

export interface DropFolderOptions {
  /** Real path of the drop folder. */
  dir: string;
  /** The watcher's configuration; its sourceRoots are replaced by this folder. */
  config: Config;
  settleMs: number;
  keep: boolean;
  queue: WorkQueue;
  logger?: Logger;
  onEvent?: EventSink;
  rescanMs: number;
  /** Where a dropped file is prepared (default: on this thread). The watcher passes its worker threads. */
  prepareDrop?: PrepareDrop;
}

/** The first wait before a file whose publication failed on the host's side is tried again; doubled each time, up to MAX. */
const DEFER_FIRST_MS = 1000;
const DEFER_MAX_MS = 60_000;

/** A file waiting for its size to settle. */
interface Settling {
  size: number;
  mtimeMs: number;
  since: number;
}

type Outcome = { kind: "media"; directive: string; published: string; reused: boolean } | { kind: "refused"; code: RefusalCode; reason: string };

export class DropFolder {
  readonly dir: string;
  private config: Config;
  private readonly logger: Logger;
  private readonly settling = new Map<string, Settling>();
  /** Queued, not begun: a lost folder drops these jobs, and their names must be free again when it is back. */
  private readonly queued = new Set<string>();
  /** Begun: the name is free again once the file has its receipt (or was left in place). */
  private readonly processing = new Set<string>();
  /** Left in place, with the reason already told: each is logged once, and judged again at every look. */
  private readonly skipped = new Map<string, SkipCode>();
  /** Kept after the host failed to publish them (a full disk): tried again after a growing wait. */
  private readonly deferred = new Map<string, { until: number; waitMs: number }>();
  private readonly prepareDrop: PrepareDrop;
  private scanScheduled = false;
  private watcher: FSWatcher | undefined;
  /** The directory the watch was armed on. */
  private armedOn: DirIdentity | undefined;
  private settleTimer: NodeJS.Timeout | undefined;
  private scanTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private lost = false;

  constructor(private readonly options: DropFolderOptions) {
    this.dir = options.dir;
    // The folder is the only place a drop may come from: a link pointing
    // elsewhere is refused (denied_source) by prepare's own checks.
    this.config = { ...options.config, sourceRoots: [options.dir] };
    this.logger = options.logger ?? silentLogger;
    this.prepareDrop = options.prepareDrop ?? ((file, config) => prepare(file, { resolvedConfig: config }));
  }

  /** Prepares the drops not begun yet by the policy of `config` (the watch read its configuration again). */
  setPolicy(config: Config): void {
    this.config = withPolicyOf(this.config, config);
  }

  async start(): Promise<void> {
    await this.arm();
    // stop() may come while the watch is armed: then nothing may be left running.
    if (this.stopped) return;
    this.scan();
    this.scanTimer = setInterval(() => this.tick(), this.options.rescanMs);
  }

  /** Stops noticing files; the queue owner waits for files already begun. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.scanTimer) clearInterval(this.scanTimer);
    if (this.settleTimer) clearInterval(this.settleTimer);
    this.scanTimer = this.settleTimer = undefined;
    const watcher = this.watcher;
    this.watcher = undefined;
    await watcher?.close();
  }

  private async arm(): Promise<void> {
    const dir = this.dir;
    this.armedOn = dirIdentity(dir);
    // No awaitWriteFinish: a file over the cap is refused at once, and one
    // settle timer for the folder is cheaper than one per file.
    const watcher = await watchDirectory(
      dir,
      // Node decoded the name and may have lost bytes: only a scan (names read as bytes) names that entry exactly.
      (name) => this.safely(() => (mayBeLossy(name) ? this.scheduleScan() : this.notice(name))),
      (message) => this.logger.warn({ event: "watch_error", drop: escapeText(dir), error: escapeText(message) }, "drop folder watch error"),
    );
    if (this.stopped) return void (await watcher.close());
    this.watcher = watcher;
  }

  private tick(): void {
    if (this.stopped) return;
    if (this.lost) return void this.recover().catch((err) => this.logError(err));
    this.safely(() => this.scan());
  }

  /** Nothing a drop folder holds may crash the watcher: log it, the next scan tries again. */
  private safely(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.logError(err);
    }
  }

  private logError(err: unknown): void {
    this.logger.error({ event: "drop_error", drop: escapeText(this.dir), error: errorText(err) }, "drop folder error; tried again at the next scan");
  }

  private scheduleScan(): void {
    if (this.scanScheduled) return;
    this.scanScheduled = true;
    setImmediate(() => {
      this.scanScheduled = false;
      if (!this.stopped && !this.lost) this.safely(() => this.scan());
    });
  }

  private scan(): void {
    let names: string[];
    try {
      if (!sameDir(dirIdentity(this.dir), this.armedOn)) throw new Error("the drop folder was removed or replaced");
      names = readNames(this.dir);
    } catch (err) {
      return this.folderLost(err);
    }
    const present = new Set(names);
    for (const name of this.skipped.keys()) if (!present.has(name)) this.skipped.delete(name);
    for (const name of this.deferred.keys()) if (!present.has(name)) this.deferred.delete(name);
    for (const name of names) this.notice(name);
  }

  private folderLost(err: unknown): void {
    if (this.lost) return;
    this.lost = true;
    this.settling.clear();
    this.options.queue.clear(this.dir);
    this.queued.clear();
    this.logger.error({ event: "drop_lost", drop: escapeText(this.dir), error: errnoCode(err) ?? errorText(err) }, "the drop folder cannot be read; retrying");
    const watcher = this.watcher;
    this.watcher = undefined;
    void watcher?.close();
  }

  private async recover(): Promise<void> {
    // Judged by lstat like the outbox: a drop folder replaced by a link is not followed.
    if (!dirIdentity(this.dir)) return;
    this.lost = false;
    await this.arm();
    if (this.stopped) return;
    this.logger.info({ event: "drop_back", drop: escapeText(this.dir) }, "the drop folder is back; watching it again");
    this.scan();
  }

  /** Looks at one name in the folder: ignore, skip, refuse at once, or let it settle. */
  private notice(name: string): void {
    if (this.stopped || this.lost || name === "" || isIgnoredDropName(name) || this.queued.has(name) || this.processing.has(name)) return;
    const deferred = this.deferred.get(name);
    if (deferred && Date.now() < deferred.until) return;
    const file = entryPath(this.dir, name);
    let st: fs.Stats | undefined;
    try {
      st = fs.lstatSync(file, { throwIfNoEntry: false });
    } catch (err) {
      this.logger.warn({ event: "drop_error", drop: escapeText(this.dir), name: showName(name), error: errnoCode(err) ?? "error" }, "cannot look at a dropped file");
      return;
    }
    if (!st) {
      this.settling.delete(name);
      this.skipped.delete(name);
      return;
    }
    if (this.leftInPlace(name, st)) return;
    // Links, FIFOs and devices are not written to: nothing to wait for.
    if (!st.isFile() || st.size > sizeCapFor(this.config, extensionOf(textOfName(name)))) return this.take(name);
    const now = Date.now();
    const prev = this.settling.get(name);
    if (!prev || prev.size !== st.size || prev.mtimeMs !== st.mtimeMs) this.settling.set(name, { size: st.size, mtimeMs: st.mtimeMs, since: now });
    this.armSettleTimer();
  }

  /** Skips NAME (logging it once) when it must stay where it is; false when it may be processed. */
  private leftInPlace(name: string, st: fs.Stats): boolean {
    if (st.isDirectory()) this.skip(name, "directory", "a directory is not a drop; it is left alone");
    else if (!receiptNamesFit(name)) this.skip(name, "name_too_long", "the name leaves no room for a receipt beside it (NAME_MAX is 255 bytes)");
    else {
      const receipt = existingReceipt(this.dir, name);
      if (!receipt) {
        this.skipped.delete(name);
        return false;
      }
      this.skip(name, "receipt_exists", `${showName(receipt)} already exists; the file is left in place`);
    }
    return true;
  }

  private armSettleTimer(): void {
    if (this.settleTimer || this.settling.size === 0) return;
    const every = Math.max(25, Math.min(250, Math.floor(this.options.settleMs / 4)));
    this.settleTimer = setInterval(() => this.safely(() => this.checkSettled()), every);
  }

  private checkSettled(): void {
    const now = Date.now();
    for (const [name, s] of this.settling) {
      if (this.stopped) break;
      if (now - s.since < this.options.settleMs) continue;
      // Judge the file as it is now: it may have grown since the last event.
      const st = fs.lstatSync(entryPath(this.dir, name), { throwIfNoEntry: false });
      if (!st) {
        this.settling.delete(name);
        continue;
      }
      if (st.size !== s.size || st.mtimeMs !== s.mtimeMs) {
        if (st.isFile() && st.size > sizeCapFor(this.config, extensionOf(textOfName(name)))) {
          this.settling.delete(name);
          this.take(name);
        } else {
          this.settling.set(name, { size: st.size, mtimeMs: st.mtimeMs, since: now });
        }
        continue;
      }
      this.settling.delete(name);
      this.take(name);
    }
    if (this.settling.size === 0 && this.settleTimer) {
      clearInterval(this.settleTimer);
      this.settleTimer = undefined;
    }
  }

  private skip(name: string, code: SkipCode, reason: string): void {
    this.settling.delete(name);
    if (this.skipped.get(name) === code) return;
    this.skipped.set(name, code);
    const event = { event: "skipped" as const, drop: escapeText(this.dir), name: showName(name), code, reason };
    this.logger.warn(event, "left a dropped file in place");
    this.options.onEvent?.(event);
  }

  private take(name: string): void {
    this.settling.delete(name);
    this.queued.add(name);
    const pushed = this.options.queue.push(this.dir, async () => {
      this.queued.delete(name);
      this.processing.add(name);
      try {
        await this.process(name);
      } finally {
        this.processing.delete(name);
      }
    });
    if (!pushed) this.queued.delete(name);
  }

  /**
   * Whether the folder's path still names the directory the watch was armed
   * on: swapped for a link to elsewhere, its names would reach other files.
   */
  private stillSameFolder(): boolean {
    if (sameDir(dirIdentity(this.dir), this.armedOn)) return true;
    this.folderLost(new Error("the drop folder was removed or replaced"));
    return false;
  }

  /** Once this begins, the file gets its receipt (or a log line saying why not). */
  private async process(name: string): Promise<void> {
    if (!this.stillSameFolder()) return;
    const file = entryPath(this.dir, name);
    const st = fs.lstatSync(file, { throwIfNoEntry: false });
    if (!st) return this.skip(name, "vanished", "the file disappeared before it was processed");
    // The agent may have written a receipt name meanwhile.
    if (this.leftInPlace(name, st)) return;

    let outcome: Outcome;
    if (st.isSymbolicLink()) {
      outcome = { kind: "refused", code: "denied_source", reason: "it is a symbolic link; links in a drop folder are never followed" };
    } else if (isRawName(name)) {
      // No path names it as text, and no MEDIA: line could carry it.
      outcome = { kind: "refused", code: "unsafe_path_chars", reason: "the name is not valid UTF-8; give the file a UTF-8 name and drop it again" };
    } else {
      try {
        const report = await this.prepareDrop(file as string, this.config);
        const media = report.media[0];
        const dropped = report.media_dropped[0]!;
        // The host failed, not the file (a full disk, an I/O error), or the
        // file is still being written: no verdict on it; it stays and is tried again.
        if (!media && (dropped.code === "host_error" || dropped.code === "changed_during_copy")) return this.defer(name, dropped.code, dropped.reason);
        outcome = media
          ? { kind: "media", directive: media.directive, published: media.name, reused: media.reused }
          : { kind: "refused", code: dropped.code, reason: dropped.reason };
      } catch (err) {
        if (!(err instanceof FatalError)) throw err;
        // The outbox or its state is unusable: nothing was published, so the
        // file stays for a later try.
        return this.defer(name, err.code, err.message);
      }
    }
    this.deferred.delete(name);
    this.answer(name, st, outcome);
  }

  /** Leaves the file for a later try (nothing was published), each time after a longer wait. */
  private defer(name: string, code: string, error: string): void {
    const waitMs = Math.min(DEFER_MAX_MS, (this.deferred.get(name)?.waitMs ?? DEFER_FIRST_MS / 2) * 2);
    this.deferred.set(name, { until: Date.now() + waitMs, waitMs });
    this.logger.error(
      { event: "drop_deferred", drop: escapeText(this.dir), name: showName(name), code, error, retry_in_ms: waitMs },
      "cannot publish now; the file stays and is tried again",
    );
  }

  private answer(name: string, st: fs.Stats, outcome: Outcome): void {
    if (!this.stillSameFolder()) {
      this.logger.error({ event: "drop_error", drop: escapeText(this.dir), name: showName(name), outcome: outcome.kind }, "the drop folder was replaced while a file was processed; no receipt written");
      return;
    }
    const receipt = withSuffix(name, outcome.kind === "media" ? MEDIA_RECEIPT : REFUSED_RECEIPT);
    // prepare's reasons are escaped where they are built, so a receipt is one line.
    const text = outcome.kind === "media" ? `${outcome.directive}\n` : `${outcome.code}: ${outcome.reason}\n`;
    if (!writeReceipt(this.dir, receipt, text)) {
      return this.skip(name, "receipt_exists", `${showName(receipt)} appeared while the file was processed; the file is left in place`);
    }
    if (!this.options.keep) this.removeOriginal(name, st);
    const base = { drop: escapeText(this.dir), name: showName(name), receipt: showName(receipt) };
    if (outcome.kind === "media") {
      const event = { event: "published" as const, ...base, directive: outcome.directive, published: escapeText(outcome.published), reused: outcome.reused };
      this.logger.info(event, "published a dropped file");
      this.options.onEvent?.(event);
    } else {
      const event = { event: "refused" as const, ...base, code: outcome.code, reason: outcome.reason };
      this.logger.warn(event, "refused a dropped file");
      this.options.onEvent?.(event);
    }
    // With --keep the original stays beside its receipt: not a drop any more
    // (and nothing to tell about it again).
    if (this.options.keep) this.skipped.set(name, "receipt_exists");
  }

  /**
   * Removes the dropped entry (a link as a link), unless something else took
   * its name meanwhile, or it was written to since it was looked at: what it
   * holds now was never judged, and stays beside its receipt.
   */
  private removeOriginal(name: string, seen: fs.Stats): void {
    const file = entryPath(this.dir, name);
    const now = fs.lstatSync(file, { throwIfNoEntry: false });
    if (!now || now.ino !== seen.ino || now.dev !== seen.dev) return;
    if (now.size !== seen.size || now.mtimeMs !== seen.mtimeMs || now.ctimeMs !== seen.ctimeMs) {
      this.logger.warn({ event: "drop_kept", drop: escapeText(this.dir), name: showName(name) }, "a processed file changed after it was looked at: kept beside its receipt; drop it again under a new name");
      return;
    }
    try {
      fs.unlinkSync(file);
    } catch (err) {
      if (errnoCode(err) !== "ENOENT") {
        this.logger.warn({ event: "drop_error", drop: escapeText(this.dir), name: showName(name), error: errnoCode(err) ?? "error" }, "cannot remove a processed file");
      }
    }
  }
}
