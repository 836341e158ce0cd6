// The guard: everything in the outbox is deliverable, yet any process of the
// agent's user can write there directly. Whatever prepare did not publish is
// moved into the quarantine at once. Entries are judged by lstat, never
// followed; the ledger says what was published.
import fs from "node:fs";
import path from "node:path";
import type { FSWatcher } from "chokidar";
import { errnoCode } from "../core/errors.js";
import { escapeText } from "../core/escape.js";
import { sha256OfFd, withRegularFile } from "../core/hash.js";
import { type Logger, silentLogger } from "../log/logger.js";
import { entryKind } from "../prepare/source.js";
import { type EventSink, errorText } from "./events.js";
import { type DirIdentity, dirIdentity, sameDir } from "./dir-identity.js";
import { watchDirectory } from "./dir-watch.js";
import { LedgerIndex } from "./ledger-index.js";
import { type QuarantineReason, moveToQuarantine } from "./quarantine.js";

/** The longest time between two full scans: a write through a hard link made elsewhere raises no event in the outbox. */
export const DEFAULT_RESCAN_MS = 3000;

export interface GuardOptions {
  /** Real path of the verified outbox. */
  outbox: string;
  quarantineDir: string;
  ledgerDir: string;
  /** Verifies the outbox again (re-creating it when missing) after it vanished; throws when it is unsafe. */
  reopen?: () => void;
  logger?: Logger;
  onEvent?: EventSink;
  rescanMs?: number;
}

/** What a verified regular file looked like; any change means judging it again. */
interface Verified {
  ino: number;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
}

function kindReason(st: fs.Stats): QuarantineReason | undefined {
  const kind = entryKind(st);
  return kind === "file" ? undefined : kind;
}

/** sha256 of the regular file at `file`, if it still is the inode lstat saw. */
function hashIfSame(file: string, seen: fs.Stats): string | undefined {
  // Gone, or replaced by a link, a special file or another inode: what is
  // there now raised its own event.
  return withRegularFile(file, (fd, st) => (st.ino === seen.ino ? sha256OfFd(fd) : undefined));
}

export class OutboxGuard {
  private readonly ledger: LedgerIndex;
  private readonly verified = new Map<string, Verified>();
  private readonly pending = new Set<string>();
  private readonly logger: Logger;
  private watcher: FSWatcher | undefined;
  /** The directory the watch was armed on. */
  private armedOn: DirIdentity | undefined;
  private timer: NodeJS.Timeout | undefined;
  private drainScheduled = false;
  private stopped = false;
  private lost = false;

  constructor(private readonly options: GuardOptions) {
    this.ledger = new LedgerIndex(options.ledgerDir);
    this.logger = options.logger ?? silentLogger;
  }

  /** Arms the watch, then scans the outbox, so nothing created during start-up is missed. */
  async start(): Promise<void> {
    this.ledger.refresh();
    await this.arm();
    // stop() may come while the watch is armed: then nothing may be left running.
    if (this.stopped) return;
    this.scan();
    this.timer = setInterval(() => this.tick(), this.options.rescanMs ?? DEFAULT_RESCAN_MS);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.disarm();
  }

  private async arm(): Promise<void> {
    const outbox = this.options.outbox;
    this.armedOn = dirIdentity(outbox);
    // A write through a hard link made elsewhere raises no event here: the rescan catches it.
    const watcher = await watchDirectory(
      outbox,
      (name) => this.schedule(name),
      (message) => this.logger.warn({ event: "watch_error", error: escapeText(message) }, "outbox watch error"),
    );
    if (this.stopped) return void (await watcher.close());
    this.watcher = watcher;
  }

  private async disarm(): Promise<void> {
    const watcher = this.watcher;
    this.watcher = undefined;
    await watcher?.close();
  }

  private schedule(name: string): void {
    if (this.stopped || name === "") return;
    this.pending.add(name);
    if (this.drainScheduled) return;
    this.drainScheduled = true;
    setImmediate(() => {
      this.drainScheduled = false;
      const names = [...this.pending];
      this.pending.clear();
      for (const n of names) this.judgeSafely(n);
    });
  }

  private tick(): void {
    if (this.stopped) return;
    try {
      if (this.lost) {
        this.recover().catch((err) => this.logger.error({ event: "guard_error", error: errorText(err) }, "cannot guard the outbox again yet; retrying"));
        return;
      }
      this.scan();
    } catch (err) {
      this.logger.error({ event: "guard_error", error: errorText(err) }, "outbox scan failed; retrying at the next scan");
    }
  }

  /** Judges every entry of the outbox; forgets what is gone. */
  scan(): void {
    let names: string[];
    try {
      if (!sameDir(dirIdentity(this.options.outbox), this.armedOn)) throw new Error("the outbox was removed or replaced");
      names = fs.readdirSync(this.options.outbox);
    } catch (err) {
      this.outboxLost(err);
      return;
    }
    const present = new Set(names);
    for (const name of this.verified.keys()) if (!present.has(name)) this.verified.delete(name);
    for (const name of names) this.judgeSafely(name);
  }

  private outboxLost(err: unknown): void {
    if (this.lost) return;
    this.lost = true;
    this.logger.error({ event: "outbox_lost", outbox: escapeText(this.options.outbox), error: errnoCode(err) ?? errorText(err) }, "the outbox cannot be read; retrying");
    void this.disarm();
  }

  private async recover(): Promise<void> {
    try {
      this.options.reopen?.();
      fs.readdirSync(this.options.outbox);
    } catch (err) {
      this.logger.debug({ event: "outbox_retry", error: errnoCode(err) ?? errorText(err) }, "the outbox is still unavailable");
      return;
    }
    if (this.stopped || !this.lost) return;
    this.lost = false;
    this.verified.clear();
    await this.arm();
    if (this.stopped) return;
    this.logger.info({ event: "outbox_back", outbox: escapeText(this.options.outbox) }, "the outbox is back; guarding it again");
    this.scan();
  }

  private judgeSafely(name: string): void {
    try {
      this.judge(name);
    } catch (err) {
      this.logger.error({ event: "guard_error", name: escapeText(name), error: errorText(err) }, "could not judge an outbox entry; it is judged again at the next scan");
    }
  }

  private judge(name: string): void {
    if (this.stopped) return;
    const file = path.join(this.options.outbox, name);
    const st = fs.lstatSync(file, { throwIfNoEntry: false });
    if (!st) {
      this.verified.delete(name);
      return;
    }
    const byKind = kindReason(st);
    if (byKind) return this.quarantine(name, byKind);
    const known = this.verified.get(name);
    if (known && known.ino === st.ino && known.size === st.size && known.mtimeMs === st.mtimeMs && known.ctimeMs === st.ctimeMs) return;
    this.verified.delete(name);

    let hash: string | undefined;
    let hashed = false;
    const hashOnce = () => {
      if (!hashed) hash = hashIfSame(file, st);
      hashed = true;
      return hash;
    };
    // "changed": the entry was replaced after lstat; the replacement raised
    // its own event (and the next scan sees it anyway).
    let reason = this.verdict(name, st, hashOnce);
    if (reason === "changed") return;
    if (reason) {
      // prepare appends the record before the link that makes a file
      // visible: read what the ledger gained since, before judging.
      this.ledger.refresh();
      reason = this.verdict(name, st, hashOnce);
      if (reason === "changed") return;
    }
    if (reason) return this.quarantine(name, reason);
    this.verified.set(name, { ino: st.ino, size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs });
  }

  private verdict(name: string, st: fs.Stats, hash: () => string | undefined): QuarantineReason | "changed" | undefined {
    const versions = this.ledger.lookup(name);
    if (!versions) return "not_in_ledger";
    const sized = versions.filter((v) => v.bytes === st.size);
    if (sized.length === 0) return "size_mismatch";
    const sha = hash();
    // The entry was replaced between lstat and open: judge what is there now.
    if (sha === undefined) return "changed";
    return sized.some((v) => v.sha256 === sha) ? undefined : "sha256_mismatch";
  }

  private quarantine(name: string, reason: QuarantineReason): void {
    // Never move anything out of a directory that merely took the outbox's path.
    if (!sameDir(dirIdentity(this.options.outbox), this.armedOn)) return this.outboxLost(new Error("the outbox was removed or replaced"));
    const moved = moveToQuarantine(this.options.outbox, this.options.quarantineDir, name, reason);
    this.verified.delete(name);
    if (moved === undefined) return;
    const event = { event: "quarantined" as const, name: escapeText(name), quarantine_name: escapeText(moved), reason };
    this.logger.warn(event, "quarantined an outbox entry prepare did not publish");
    this.options.onEvent?.(event);
  }
}
