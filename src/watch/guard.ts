// The guard: everything in the outbox is deliverable, yet any process of the
// agent's user can write there directly, ledger included. It fails closed: an
// entry stays only when it is a regular file with a valid UTF-8 name that
// prepare would have published it under (its name rules, the allow-list, the
// size cap, one hard link: prepare/outbox-entry.ts), that a well-formed ledger
// record names with these very bytes, *and* those bytes pass prepare's content checks
// (judged here, on the file in the outbox, by prepare's own entry point).
// One stand-in for the record: a record a crash cut short that accounts for
// the file (it fits it and no other: state/ledger-torn.ts, the janitor's
// rule), for as long as it does. Everything else is moved into the
// quarantine. Entries are judged by lstat, never followed.
//
// Two paths, so that a long check never delays a reaction: what can be told
// from the name, lstat and the ledger (a planted file, a link, a directory, a
// name prepare never gives, an extension off the allow-list, a size over the
// cap, a second hard link, a size no record has) is quarantined at once,
// synchronously; reading and judging the bytes of a file a record names runs one file at a
// time in the background, in 1 MiB steps.
import fs from "node:fs";
import path from "node:path";
import type { FSWatcher } from "chokidar";
import { Refusal, errnoCode } from "../core/errors.js";
import { escapeText } from "../core/escape.js";
import { type Logger, silentLogger } from "../log/logger.js";
import { KEEP_IN_MEMORY, judgeFileContent } from "../prepare/judge-content.js";
import { extensionOf } from "../prepare/name.js";
import { type Policy, narrowsPolicy } from "../prepare/judge.js";
import { type EntryProblem, type EntryRule, outboxEntryProblem } from "../prepare/outbox-entry.js";
import { entryKind } from "../prepare/source.js";
import type { KnownSecrets } from "../content/known.js";
import { knownSecretsFor } from "../prepare/content.js";
import { entryPath, isRawName, mayBeLossy, readNames, showName } from "../safety/entry-names.js";
import { type EventSink, errorText } from "./events.js";
import { type DirIdentity, dirIdentity, sameDir } from "./dir-identity.js";
import { watchDirectory } from "./dir-watch.js";
import { LedgerIndex } from "./ledger-index.js";
import { type QuarantineDetail, type QuarantineReason, moveToQuarantine } from "./quarantine.js";
import { MAX_TORN_SEEN, type OutboxFile, type TornRecord, orphansOfTornRecords, tornHashFits, tornRecordKey } from "../state/ledger-torn.js";
import type { JudgeFile } from "./watch-workers.js";

/** The longest time between two full scans: a write through a hard link made elsewhere raises no event in the outbox. */
export const DEFAULT_RESCAN_MS = 3000;

export interface GuardOptions {
  /** Real path of the verified outbox. */
  outbox: string;
  quarantineDir: string;
  ledgerDir: string;
  /** The staging directory: a published file's other name, for a moment, is there. */
  stagingDir: string;
  /**
   * The extension allow-list prepare publishes by, and its size cap for each
   * extension (the watch passes the configuration's widened by its own flags:
   * judge.ts widenPolicy).
   */
  allow: readonly string[];
  capFor(ext: string): number;
  /**
   * Reads the configuration again when it changed (the watch's
   * ConfigFollower), before an entry is quarantined for its extension or
   * size: true when the policy changed (setPolicy was called meanwhile).
   */
  refreshPolicy?: () => boolean;
  /** Verifies the outbox again (re-creating it when missing) after it vanished; throws when it is unsafe. */
  reopen?: () => void;
  logger?: Logger;
  onEvent?: EventSink;
  rescanMs?: number;
  /** Where the known secrets come from (the Hermes home's files, and the user's home's), for the content checks. */
  hermesHome?: string;
  userHome?: string;
  /**
   * Judges a file over 1 MiB off this thread (the watch passes its worker);
   * without it, here, a MiB at a time.
   */
  judgeLargeFile?: JudgeFile;
}

/** What a judged regular file looked like; any change means judging it again. */
interface Identity {
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
}

function identityOf(st: fs.Stats): Identity {
  return { dev: st.dev, ino: st.ino, size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs };
}

/** Compared field by field: the rescan asks this of every entry every few seconds. */
function sameIdentity(a: Identity | undefined, st: Identity): boolean {
  return a !== undefined && a.ino === st.ino && a.size === st.size && a.mtimeMs === st.mtimeMs && a.ctimeMs === st.ctimeMs && a.dev === st.dev;
}

/** The quarantine reason for each of prepare's rules an entry can fail: the same words. */
const RULE_REASON: Record<EntryRule, QuarantineReason> = {
  name_refused: "name_refused",
  name_not_prepared: "name_not_prepared",
  extension_not_allowed: "extension_not_allowed",
  too_large: "too_large",
  hard_links: "hard_links",
};

/**
 * Whether the staging directory holds another name of the file `st`: read
 * only for a file with two names, a moment of every publication. A staging
 * directory that cannot be read (the agent's user may chmod it) holds no
 * name: the file is refused, never kept for want of an answer.
 */
function hasStagingName(stagingDir: string, st: fs.Stats): boolean {
  try {
    for (const n of fs.readdirSync(stagingDir)) {
      const other = fs.lstatSync(path.join(stagingDir, n), { throwIfNoEntry: false });
      if (other && other.ino === st.ino && other.dev === st.dev) return true;
    }
  } catch {
    return false;
  }
  return false;
}

/**
 * Whether the file `st` at `file`, with two names, is being published: its
 * other name is in the staging directory, or was and has just gone (prepare
 * removes it right after the link), so that the file has one name now.
 */
function inPublication(stagingDir: string, file: string | Buffer, st: fs.Stats): boolean {
  if (hasStagingName(stagingDir, st)) return true;
  const now = fs.lstatSync(file, { throwIfNoEntry: false });
  return now !== undefined && now.ino === st.ino && now.dev === st.dev && now.nlink === 1;
}

function kindReason(st: fs.Stats): QuarantineReason | undefined {
  const kind = entryKind(st);
  return kind === "file" ? undefined : kind;
}

/** Opens the regular file at `file` for reading without following a link or blocking; undefined when it is not one any more. */
function openRegular(file: string | Buffer): number | undefined {
  const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK, O_NOCTTY } = fs.constants;
  try {
    return fs.openSync(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  } catch (err) {
    // Gone, a link, a socket or a device with nothing behind it: judged again as what it is now.
    if (["ENOENT", "ELOOP", "ENXIO"].includes(errnoCode(err) ?? "")) return undefined;
    throw err;
  }
}

/** How long the known secrets read from the Hermes .env files are used before they are read again. */
const KNOWN_SECRETS_TTL_MS = 10_000;

/**
 * The known secrets for `hermesHome`, read on first need and again once they
 * are older than a few seconds: the guard runs for days, the .env files change,
 * and the start-up judges thousands of files with one read.
 */
function freshKnownSecrets(hermesHome: string, userHome: string | undefined): () => KnownSecrets {
  let known: KnownSecrets | undefined;
  let readAt = 0;
  return () => {
    if (!known || Date.now() - readAt > KNOWN_SECRETS_TTL_MS) {
      known = knownSecretsFor(hermesHome, userHome);
      readAt = Date.now();
    }
    return known;
  };
}

export class OutboxGuard {
  private readonly ledger: LedgerIndex;
  /** Entries judged good, by the identity they had then. */
  private readonly verified = new Map<string, Identity>();
  /** Of those, files kept on the word of a record a crash cut short: judged again at every scan (another file, or a whole record, may change what it says). */
  private readonly tornKept = new Set<string>();
  /** Counts scans and batches of events: which files torn records account for is worked out once per pass (tornRecordFor). */
  private pass = 0;
  private accounted: { pass: number; generation: number; orphans: Map<string, { file: OutboxFile; record: TornRecord }> } | undefined;
  /**
   * Torn records (tornRecordKey) once seen to fit two files or more: which
   * was prepare's is never known again, so they account for nothing, even
   * once all but one of those files are quarantined (the order the guard
   * met them in would otherwise choose).
   */
  private readonly ambiguous = new Set<string>();
  private readonly pending = new Set<string>();
  /** Files whose bytes wait to be judged (or are being judged), by the identity they were queued with. */
  private readonly toCheck = new Map<string, Identity>();
  private checking: Promise<void> | undefined;
  private idleWaiters: (() => void)[] = [];
  private readonly logger: Logger;
  private watcher: FSWatcher | undefined;
  /** The directory the watch was armed on. */
  private armedOn: DirIdentity | undefined;
  private timer: NodeJS.Timeout | undefined;
  private drainScheduled = false;
  private scanScheduled = false;
  private stopped = false;
  private lost = false;

  /** The allow-list and caps entries are judged by (setPolicy). */
  private policy: Pick<Policy, "allow" | "capFor">;

  /** Where the content checks find the known secrets (the Hermes .env values), read again every few seconds at most. */
  private readonly contentOptions: { known?: () => KnownSecrets };

  constructor(private readonly options: GuardOptions) {
    this.logger = options.logger ?? silentLogger;
    this.policy = { allow: options.allow, capFor: options.capFor };
    this.contentOptions = options.hermesHome ? { known: freshKnownSecrets(options.hermesHome, options.userHome) } : {};
    this.ledger = new LedgerIndex(options.ledgerDir, (p) =>
      this.logger.warn({ event: "ledger_skipped", file: p.file, problem: p.problem }, "part of the ledger was skipped; everything else is still judged"),
    );
  }

  /** Arms the watch, then scans the outbox and judges every entry, so nothing created during start-up is missed. */
  async start(): Promise<void> {
    this.ledger.refresh();
    await this.arm();
    // stop() may come while the watch is armed: then nothing may be left running.
    if (this.stopped) return;
    this.scan();
    this.timer = setInterval(() => this.tick(), this.options.rescanMs ?? DEFAULT_RESCAN_MS);
    await this.idle();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.disarm();
    this.toCheck.clear();
    await this.checking;
  }

  /**
   * Judges by `policy` from now on. When it keeps less than the last one (an
   * extension gone, a lower cap), every entry is judged again: one kept
   * under the old policy is no longer one prepare would publish.
   */
  setPolicy(policy: Pick<Policy, "allow" | "capFor">): void {
    const old = this.policy;
    this.policy = { allow: [...policy.allow], capFor: policy.capFor };
    if (!narrowsPolicy(old, this.policy)) return;
    this.verified.clear();
    this.scheduleScan();
  }

  /** Resolves once no file waits for its bytes to be judged. */
  idle(): Promise<void> {
    if (!this.checking) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
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
    // Node decoded the name and may have lost bytes on the way: only a scan
    // (which reads names as bytes) can name that entry exactly.
    if (mayBeLossy(name)) return this.scheduleScan();
    this.pending.add(name);
    if (this.drainScheduled) return;
    this.drainScheduled = true;
    setImmediate(() => {
      this.drainScheduled = false;
      const names = [...this.pending];
      this.pending.clear();
      this.pass++;
      for (const n of names) this.judgeSafely(n);
    });
  }

  private scheduleScan(): void {
    if (this.scanScheduled) return;
    this.scanScheduled = true;
    setImmediate(() => {
      this.scanScheduled = false;
      if (!this.stopped && !this.lost) this.scan();
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
      names = readNames(this.options.outbox);
    } catch (err) {
      this.outboxLost(err);
      return;
    }
    const present = new Set(names);
    for (const name of this.verified.keys()) if (!present.has(name)) this.forget(name);
    this.pass++;
    for (const name of names) this.judgeSafely(name);
  }

  private outboxLost(err: unknown): void {
    if (this.lost) return;
    this.lost = true;
    this.toCheck.clear();
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
    this.tornKept.clear();
    await this.arm();
    if (this.stopped) return;
    this.logger.info({ event: "outbox_back", outbox: escapeText(this.options.outbox) }, "the outbox is back; guarding it again");
    this.scan();
  }

  private judgeSafely(name: string): void {
    try {
      this.judge(name);
    } catch (err) {
      this.logger.error({ event: "guard_error", name: showName(name), error: errorText(err) }, "could not judge an outbox entry; it is judged again at the next scan");
    }
  }

  /** The synchronous path: everything that the name, lstat and the ledger can tell, at once. */
  private judge(name: string): void {
    if (this.stopped) return;
    // prepare only ever publishes valid UTF-8 names.
    if (isRawName(name)) return this.quarantine(name, "name_not_utf8");
    const file = entryPath(this.options.outbox, name);
    const st = fs.lstatSync(file, { throwIfNoEntry: false });
    if (!st) return this.forget(name);
    const byKind = kindReason(st);
    if (byKind) return this.quarantine(name, byKind);
    // Judged already; one kept on a torn record's word is judged again, all but its bytes.
    const again = sameIdentity(this.verified.get(name), st);
    if (again && !this.tornKept.has(name)) return;
    const identity = identityOf(st);
    if (!again) this.forget(name);
    // A forged record names bytes, never a name or a link: prepare's own
    // rules decide whether it would have published this file under this name.
    // A file mid-publication (its staging name not yet removed) is judged
    // again once that name goes: the unlink changes its ctime.
    const problem = this.entryProblem(name, st, file);
    if (problem) return this.quarantine(name, RULE_REASON[problem.rule], { ...(problem.code ? { code: problem.code } : {}), message: problem.message });
    let reason = this.recordVerdict(name, st.size);
    if (reason) {
      // prepare appends the record before the link that makes a file
      // visible: read what the ledger gained since, before judging.
      this.ledger.refresh();
      reason = this.recordVerdict(name, st.size);
    }
    // No record names it: one a crash cut short may account for it (its bytes are then judged against that).
    const torn = reason === "not_in_ledger" ? this.tornRecordFor(name, st) : undefined;
    if (reason && !torn) return this.quarantine(name, reason);
    if (again) {
      if (torn) return;
      // A whole record names it now: its bytes are judged against it.
      this.forget(name);
    }
    // A record names this size: its bytes are judged in the background.
    if (sameIdentity(this.toCheck.get(name), identity)) return;
    this.toCheck.set(name, identity);
    this.pumpChecks();
  }

  /**
   * What prepare's rules say of the entry, by the current policy: before it
   * is refused for its extension or size, the configuration is read again
   * if it changed (prepare may have published it under the new one already).
   */
  private entryProblem(name: string, st: fs.Stats, file: string | Buffer): EntryProblem | undefined {
    const judge = () => outboxEntryProblem(name, st, this.policy, () => inPublication(this.options.stagingDir, file, st));
    const problem = judge();
    if (problem?.rule !== "extension_not_allowed" && problem?.rule !== "too_large") return problem;
    return this.options.refreshPolicy?.() ? judge() : problem;
  }

  /**
   * The record a crash cut short that accounts for the outbox file `name`
   * as `st` shows it: it fits that file and no other file no whole record
   * names (orphansOfTornRecords, the janitor's rule), or undefined. The
   * outbox is looked through once per pass, and only while the ledger holds
   * such a record; `fresh` looks again now.
   */
  private tornRecordFor(name: string, st: Pick<fs.Stats, "size" | "mtimeMs">, fresh = false): TornRecord | undefined {
    const torn = this.ledger.tornRecords();
    if (torn.length === 0) return undefined;
    if (fresh) this.pass++;
    const generation = this.ledger.tornGeneration;
    let accounted = this.accounted;
    if (accounted?.pass !== this.pass || accounted.generation !== generation) {
      accounted = this.accounted = { pass: this.pass, generation, orphans: this.orphansNow(torn) };
    }
    const found = accounted.orphans.get(name);
    return found && found.file.size === st.size && found.file.mtimeMs === st.mtimeMs ? found.record : undefined;
  }

  /** The outbox files no whole record names (the janitor's candidates: regular, a UTF-8 name) that a torn record accounts for, by name. */
  private orphansNow(torn: readonly TornRecord[]): Map<string, { file: OutboxFile; record: TornRecord }> {
    const unnamed: OutboxFile[] = [];
    try {
      for (const name of readNames(this.options.outbox)) {
        if (isRawName(name) || this.ledger.lookup(name)) continue;
        const st = fs.lstatSync(entryPath(this.options.outbox, name), { throwIfNoEntry: false });
        if (st?.isFile()) unnamed.push({ name, size: st.size, mtimeMs: st.mtimeMs });
      }
    } catch {
      // The outbox cannot be read now: no file is known to be the only one a record fits.
      return new Map();
    }
    const live = torn.filter((t) => !this.ambiguous.has(tornRecordKey(t)));
    const { orphans, ambiguous } = orphansOfTornRecords(unnamed, live);
    for (const t of ambiguous) if (this.ambiguous.size < MAX_TORN_SEEN) this.ambiguous.add(tornRecordKey(t));
    return new Map([...orphans].map(([file, record]) => [file.name, { file, record }]));
  }

  /** Forgets what was judged of `name`. */
  private forget(name: string): void {
    this.verified.delete(name);
    this.tornKept.delete(name);
  }

  /** What the ledger says of a name and size alone. */
  private recordVerdict(name: string, size: number): QuarantineReason | undefined {
    const versions = this.ledger.lookup(name);
    if (!versions) return "not_in_ledger";
    return versions.some((v) => v.bytes === size) ? undefined : "size_mismatch";
  }

  private pumpChecks(): void {
    if (this.checking || this.stopped) return;
    const next = this.toCheck.entries().next();
    if (next.done) {
      for (const wake of this.idleWaiters.splice(0)) wake();
      return;
    }
    const [name, identity] = next.value;
    this.checking = this.checkBytes(name, identity)
      .catch((err) => this.logger.error({ event: "guard_error", name: showName(name), error: errorText(err) }, "could not judge an outbox file's bytes; it is judged again at the next scan"))
      .finally(() => {
        if (this.toCheck.get(name) === identity) this.toCheck.delete(name);
        this.checking = undefined;
        if (this.stopped) for (const wake of this.idleWaiters.splice(0)) wake();
        else this.pumpChecks();
      });
  }

  /** The background path: the bytes must be the recorded ones and pass prepare's content checks. */
  private async checkBytes(name: string, identity: Identity): Promise<void> {
    const file = entryPath(this.options.outbox, name);
    const fd = openRegular(file);
    if (fd === undefined) return this.rejudge(name);
    let judged;
    try {
      if (!sameIdentity(identity, fs.fstatSync(fd))) return this.rejudge(name);
      const ext = extensionOf(name);
      const large = this.options.judgeLargeFile && identity.size > KEEP_IN_MEMORY;
      judged = large ? await this.options.judgeLargeFile!(fd, ext) : await judgeFileContent(fd, ext, this.contentOptions);
    } finally {
      fs.closeSync(fd);
    }
    if (this.stopped || this.lost) return;
    // Changed while it was read: what is there now is judged afresh.
    const now = fs.lstatSync(file, { throwIfNoEntry: false });
    if (!now || !sameIdentity(identity, now) || judged.bytes !== now.size) return this.rejudge(name);
    const recorded = () => this.ledger.lookup(name)?.some((v) => v.bytes === judged.bytes && v.sha256 === judged.sha256) === true;
    let torn: TornRecord | undefined;
    if (!recorded()) {
      this.ledger.refresh();
      if (!recorded()) {
        // No whole record: a torn one that still accounts for it, its sha256 (as far as it holds it) these bytes'.
        torn = this.ledger.lookup(name) ? undefined : this.tornRecordFor(name, now, true);
        if (!torn) return this.quarantine(name, this.ledger.lookup(name) ? "sha256_mismatch" : "not_in_ledger");
        if (!tornHashFits(torn, judged.sha256)) return this.quarantine(name, "sha256_mismatch");
      }
    }
    if (judged.verdict instanceof Refusal) {
      return this.quarantine(name, "content_refused", { code: judged.verdict.code, message: judged.verdict.message });
    }
    this.verified.set(name, identity);
    if (!torn) return void this.tornKept.delete(name);
    this.tornKept.add(name);
    this.logger.warn(
      { event: "guard_torn_record", name: showName(name), ledger: showName(torn.file), at: torn.at },
      "kept an outbox file no well-formed ledger record names: a record a crash cut short fits it and no other file, and its bytes pass prepare's checks",
    );
  }

  private rejudge(name: string): void {
    this.toCheck.delete(name);
    this.judgeSafely(name);
  }

  private quarantine(name: string, reason: QuarantineReason, detail: QuarantineDetail = {}): void {
    // Never move anything out of a directory that merely took the outbox's path.
    if (!sameDir(dirIdentity(this.options.outbox), this.armedOn)) return this.outboxLost(new Error("the outbox was removed or replaced"));
    this.toCheck.delete(name);
    const moved = moveToQuarantine(this.options.outbox, this.options.quarantineDir, name, reason, detail);
    this.forget(name);
    if (moved === undefined) return;
    const event = {
      event: "quarantined" as const,
      name: showName(name),
      quarantine_name: escapeText(moved.name),
      reason,
      ...(detail.code ? { code: detail.code } : {}),
    };
    this.logger.warn({ ...event, ...(detail.message ? { detail: detail.message } : {}) }, "quarantined an outbox entry that was not published by prepare, or no longer passes its checks");
    this.options.onEvent?.(event);
    if (moved.journalError) {
      this.logger.error({ event: "journal_error", name: escapeText(moved.name), error: moved.journalError }, "moved into the quarantine, but its journal line could not be written");
    }
  }
}
