// The retention sweep. It deletes only what it can prove is old and its own:
// every directory is opened once and verified as opened, every later call goes
// through that open directory (/proc/self/fd/N), and each entry is looked at
// again right before unlink(2) (an outbox file: right after it was taken), so
// a swapped path, a replaced file or a file that prepare just reused (fresh
// mtime) is left alone. An outbox file is first taken out of the outbox by
// rename(2) into the staging directory and judged there, where no prepare can
// reuse it any more: a look and an unlink are two steps, and prepare's reuse
// between them would have been deleted after prepare printed its line. Every
// take renames onto the same name, so one rename(2) takes this file and
// deletes the one judged due before it.
//
// And it deletes only what media-outbox made: an outbox file only when a
// well-formed ledger record names it with its size (prepare published it), or
// when a record of its day that a crash cut short fits it and no other file
// (orphansOfTornRecords: the link survived, the record's end did not), a
// staging file only under the names prepare and the janitor give them, a
// quarantined entry only when the quarantine's journal says the guard moved
// it there, a ledger file only under a day file's name and holding a
// well-formed record (or nothing at all: an append taken back; or only a
// record of its day a crash cut short). Pointed at a
// directory that holds anything else, it reports that and deletes none of it.
import fs from "node:fs";
import path from "node:path";
import { getSystemErrorMap } from "node:util";
import { type Config, type ConfigOverrides, loadConfig } from "../config/config.js";
import { FatalError, errnoCode, isErrno } from "../core/errors.js";
import { escapeText } from "../core/escape.js";
import { DAY_MS } from "../core/units.js";
import { type Logger, silentLogger } from "../log/logger.js";
import { type EntryName, entryPath, isRawName, nameFromBytes, readEntries, showName } from "../safety/entry-names.js";
import { type OpenDir, openPrivateDir } from "../safety/private-dir.js";
import { STAGING_NAME } from "../prepare/stage.js";
import { DAY_FILE, type LedgerRecord, MAX_RECORD_BYTES, type TornLine, ledgerDays, readLedgerDayFrom } from "../state/ledger.js";
import { JOURNAL_NAME, openLayout } from "../state/layout.js";
import { quarantinedNames } from "../state/quarantine-journal.js";
import { type TornRecord, TornRecords, mtimeText, orphansOfTornRecords } from "../state/ledger-torn.js";
import { janitorSummary } from "./summary.js";

/** The directories the janitor sweeps. */
export type JanitorArea = "outbox" | "staging" | "quarantine" | "ledger";
export const JANITOR_AREAS: readonly JanitorArea[] = ["outbox", "staging", "quarantine", "ledger"];

/**
 * Why a file was (or, in a dry run, would be) deleted. `expired_torn_record`:
 * an outbox file no record names, aged by its own mtime because a record of
 * its day that a crash cut short can only be its (see orphansOfTornRecords).
 */
export type DeleteReason = "expired" | "expired_torn_record" | "quota" | "stale_staging" | "expired_quarantine" | "expired_ledger";

/** not_in_ledger's reason when a record a crash cut short fits it, and another file too. */
const TWO_FIT_TEXT =
  "no whole ledger record names it; a record of its day that a crash cut short fits it, but another file too, and which of them prepare published is not known: kept (the watch guard quarantines it; remove it by hand if it is prepare's)";

/**
 * not_in_ledger's reason when a record names the file, with another size: it
 * was published, then written to (the guard quarantines it as size_mismatch).
 */
const RESIZED_TEXT = "a ledger record names it, but with another size: it changed since prepare published it, so it is not the file published and is never deleted (the watch guard quarantines it)";

/** Why an entry was met and left alone. */
export type SkipCode =
  | "symlink"
  | "directory"
  | "mount_point"
  | "not_regular_file"
  | "not_utf8_name"
  | "not_ledger_file"
  | "not_in_ledger"
  | "not_staging_file"
  | "not_in_journal"
  | "no_ledger_record"
  | "refreshed"
  | "reused_meanwhile"
  | "replaced"
  | "vanished"
  | "ledger_active";

/** Why an entry is not media-outbox's to delete, whatever its age: it did not make it. */
export const NOT_MADE: ReadonlySet<SkipCode> = new Set<SkipCode>(["not_in_ledger", "not_utf8_name", "not_staging_file", "not_in_journal", "no_ledger_record"]);

export interface DeletedEntry {
  area: JanitorArea;
  /** The entry's name inside its directory, escaped. */
  name: string;
  bytes: number;
  /** ISO mtime the decision was made on. */
  mtime: string;
  reason: DeleteReason;
}

export interface SkippedEntry {
  area: JanitorArea;
  name: string;
  code: SkipCode;
  reason: string;
}

/** Something the run met that a reader should know and that is no entry's skip or error: a day file with a line too long to be read. */
export interface WarningEntry {
  area: JanitorArea;
  /** The entry's name, escaped. */
  name: string;
  message: string;
}

export interface ErrorEntry {
  area: JanitorArea;
  name: string;
  /** errno code such as EACCES, or "error". */
  code: string;
  message: string;
}

export interface Totals {
  scanned: number;
  deleted: number;
  bytes_freed: number;
  skipped: number;
  errors: number;
}

export interface QuotaResult {
  max_bytes: number;
  min_age_ms: number;
  /** Bytes of regular files directly in the outbox after the age sweep. */
  bytes_before: number;
  bytes_after: number;
  met: boolean;
}

export interface JanitorReport {
  /** No deletion failed and the quota (if any) is met. */
  success: boolean;
  dry_run: boolean;
  /** Real path of the outbox (escaped), or the configured one when it does not exist. */
  outbox: string;
  outbox_exists: boolean;
  started: string;
  finished: string;
  retention_ms: number;
  /** Outbox and quarantine entries with an mtime before this are expired. */
  cutoff: string;
  quota: QuotaResult | null;
  totals: Totals;
  areas: Record<JanitorArea, Totals & { path: string | null }>;
  /** What was deleted (in a dry run: what a real run would delete). */
  deleted: DeletedEntry[];
  skipped: SkippedEntry[];
  /** Things worth a line that are neither a skip nor an error (a ledger line too long to read); they do not fail the run. */
  warnings: WarningEntry[];
  errors: ErrorEntry[];
}

export interface JanitorOptions extends ConfigOverrides {
  /** A configuration already resolved by the caller; overrides are then ignored. */
  resolvedConfig?: Config;
  /** Change nothing; report what a real run would delete. */
  dryRun?: boolean;
  /** The clock the ages are measured against (default: now). */
  now?: Date;
  logger?: Logger;
  /**
   * Called once every directory is open and verified, before anything is read
   * or deleted. A test seam (e.g. to swap the outbox path for a symlink).
   */
  onOpened?: () => void;
  /**
   * Work from inside each directory (chdir to the open directory, then
   * single-component names: the equivalent of unlinkat on a directory
   * descriptor) instead of through /proc/self/fd/N: fewer path lookups per
   * file. The process's working directory changes for the duration of the
   * (synchronous) call and is restored after; the CLI uses it, library callers
   * with async file operations on relative paths in flight should not.
   */
  chdir?: boolean;
  /** Called right before each final re-check and unlink (or take). A test seam. */
  beforeUnlink?: (area: JanitorArea, name: string) => void;
  /** Called right before the entry is taken (or unlinked), once the look before it (where one is made) decided to delete. A test seam. */
  afterRecheck?: (area: JanitorArea, name: string) => void;
  /** Called right after an outbox file was taken into the staging directory, before it is judged there. A test seam. */
  afterTake?: (name: string) => void;
}

function emptyTotals(): Totals {
  return { scanned: 0, deleted: 0, bytes_freed: 0, skipped: 0, errors: 0 };
}

const SKIP_TEXT: Record<SkipCode, string> = {
  symlink: "a symbolic link: never followed, never deleted",
  directory: "a directory: the janitor never recurses or deletes directories",
  mount_point: "a mount point (another filesystem): never crossed",
  not_regular_file: "not a regular file",
  not_utf8_name: "its name is not valid UTF-8, which prepare never publishes: never deleted (the watch guard quarantines it)",
  not_ledger_file: "not a ledger day file (YYYY-MM-DD.jsonl)",
  not_in_ledger:
    "no ledger record names it with its size: not published by media-outbox, or published while this run read the outbox, so it is kept (the watch guard quarantines what prepare did not publish)",
  not_staging_file: "not a name prepare or the janitor gives a staging file: media-outbox did not make it, so it is never deleted",
  not_in_journal: "the quarantine's journal does not say the guard moved it there: media-outbox did not put it there, so it is never deleted",
  no_ledger_record: "a day file's name, but no line in it is a well-formed ledger record, or one of that day a crash cut short: media-outbox did not write it, so it is never deleted",
  refreshed: "its mtime changed during the run (reused by prepare?): kept",
  reused_meanwhile: "prepare reused it while it was being removed, and the name was taken meanwhile: kept in the staging directory, under this name",
  replaced: "it was replaced by another file during the run: kept",
  vanished: "already gone (another janitor or a user removed it)",
  ledger_active: "holds a record newer than the retention plus one day",
};

function kindOf(st: fs.Stats): string {
  if (st.isFIFO()) return "a FIFO";
  if (st.isSocket()) return "a socket";
  if (st.isCharacterDevice()) return "a character device";
  if (st.isBlockDevice()) return "a block device";
  return "not a regular file";
}

/** One candidate's identity and age, as first seen. */
interface Seen {
  name: string;
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
}

type Outcome = "deleted" | "kept" | "gone" | "failed";

/** A file the last take judged due, still under the taken name until rename(2) of the next take drops it, or release() unlinks it. */
interface Held {
  name: string;
  bytes: number;
  mtimeMs: number;
  reason: DeleteReason;
}

/**
 * A failed deletion in the system's words and what to do: Node's message
 * repeats the code and names the paths of the call, which here are a
 * /proc/self/fd path and a take's temporary name the operator never gave.
 */
function failureText(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  const described = typeof e?.errno === "number" ? getSystemErrorMap().get(e.errno)?.[1] : undefined;
  if (described === undefined) return escapeText(e instanceof Error ? e.message : String(err));
  const what = e.syscall ? `${described} (${e.syscall})` : described;
  return isErrno(err, "EPERM", "EACCES")
    ? `${what}; the janitor's user may not remove it: check the permissions of its directory and its attributes (lsattr: immutable, append-only)`
    : what;
}

/** One run's bookkeeping: every decision goes into the report through here. */
class Sweep {
  readonly report: JanitorReport;
  private readonly dryRun: boolean;
  private readonly beforeUnlink: JanitorOptions["beforeUnlink"];
  private readonly afterRecheck: JanitorOptions["afterRecheck"];
  private readonly afterTake: JanitorOptions["afterTake"];
  private readonly logger: Logger;
  /**
   * Where an outbox file is taken before it is deleted (the staging
   * directory, on the outbox's filesystem); undefined without one, or once a
   * take met EXDEV (the two on separate mounts).
   */
  private takeInto: SweptDir | undefined;
  /** The taken name (in takeInto) while a file of ours exists under it: the placeholder, or `held`. */
  private takenName: string | undefined;
  private takenPath = "";
  private takenCount = 0;
  private held: Held | undefined;
  /** Taken names this run retired with a file in them to keep (reused_meanwhile, a failed judgment): the staging sweep leaves them. */
  readonly retired = new Set<string>();

  constructor(report: JanitorReport, options: JanitorOptions, takeInto: SweptDir | undefined) {
    this.report = report;
    this.dryRun = options.dryRun === true;
    this.beforeUnlink = options.beforeUnlink;
    this.afterRecheck = options.afterRecheck;
    this.afterTake = options.afterTake;
    this.logger = options.logger ?? silentLogger;
    this.takeInto = takeInto;
  }

  skip(area: JanitorArea, name: string, code: SkipCode, reason = SKIP_TEXT[code]): void {
    this.report.skipped.push({ area, name: showName(name), code, reason });
    this.report.areas[area].skipped++;
  }

  /** An outbox file deleted on a torn record's word (expired_torn_record): logged with the record's place, so it can be checked. */
  tornDeleted(name: string, record: TornRecord): void {
    const shown = showName(name);
    const verb = this.dryRun ? "would delete" : "deleted";
    this.logger.warn(
      { event: "janitor_torn_record", name: shown, ledger: showName(record.file), at: record.at, dry_run: this.dryRun },
      `janitor: ${verb} outbox/${shown} by its own mtime: no well-formed ledger record names it, and the record a crash cut short at byte ${record.at} of ledger/${showName(record.file)} fits it and no other file`,
    );
  }

  warn(area: JanitorArea, name: string, message: string): void {
    this.report.warnings.push({ area, name: showName(name), message });
  }

  fail(area: JanitorArea, name: string, err: unknown): void {
    this.report.errors.push({ area, name: showName(name), code: errnoCode(err) ?? "error", message: failureText(err) });
    this.report.areas[area].errors++;
  }

  private deleted(area: JanitorArea, name: string, bytes: number, mtimeMs: number, reason: DeleteReason): void {
    this.report.deleted.push({ area, name: showName(name), bytes, mtime: mtimeText(mtimeMs), reason });
    const totals = this.report.areas[area];
    totals.deleted++;
    totals.bytes_freed += bytes;
  }

  /** lstat that reports a failure (null) instead of throwing; undefined when the entry is gone. */
  lstat(area: JanitorArea, name: string, file: string | Buffer): fs.Stats | undefined | null {
    try {
      return fs.lstatSync(file, { throwIfNoEntry: false });
    } catch (err) {
      this.fail(area, name, err);
      return null;
    }
  }

  /**
   * Classifies a directory entry that is not a regular file, or returns the
   * lstat of one that is (undefined once it is handled or gone). A mount point
   * is known from the mount table, never from st_dev: on overlayfs (every
   * container's writable layer) and btrfs subvolumes a file's st_dev differs
   * from its directory's without any mount in between.
   */
  statEntry(dir: SweptDir, area: JanitorArea, dirent: EntryName): fs.Stats | undefined {
    const name = dirent.name;
    if (dirent.isSymbolicLink()) return void this.skip(area, name, "symlink");
    if (isMountPoint(dir, name)) return void this.skip(area, name, "mount_point");
    const st = this.lstat(area, name, entryPath(dir.prefix, name));
    if (!st) return undefined; // gone since readdir (nothing to report), or reported
    // Without a mount table (not Linux), st_dev is the only sign of a mount left.
    if (st.isDirectory()) return void this.skip(area, name, dir.mounts === undefined && st.dev !== dir.dev ? "mount_point" : "directory");
    if (st.isSymbolicLink()) return void this.skip(area, name, "symlink");
    if (!st.isFile()) return void this.skip(area, name, "not_regular_file", `${kindOf(st)}: never touched`);
    if (dir.mounts === undefined && st.dev !== dir.dev) return void this.skip(area, name, "mount_point");
    return st;
  }

  /**
   * Looks at the entry again, right before unlink: still the same inode and
   * `stillDue` by its current lstat. Deletes it (unless dry run) and records it.
   * An outbox file is taken into the staging directory instead and judged
   * there, after the rename; `lookedJustNow` (the caller's lstat was made right
   * before this call) then spares the look before the take: the judgment after
   * the rename checks the same identity and age, and nothing the look could
   * refuse can be taken (see take).
   */
  remove(dir: SweptDir, area: JanitorArea, seen: Seen, reason: DeleteReason, stillDue: (now: fs.Stats) => boolean, lookedJustNow = false): Outcome {
    this.beforeUnlink?.(area, seen.name);
    const file = entryPath(dir.prefix, seen.name);
    const taking = area === "outbox" && !this.dryRun && this.takeInto !== undefined;
    let now = taking && lookedJustNow ? undefined : this.recheck(area, seen, file, stillDue);
    if (typeof now === "string") return now;
    this.afterRecheck?.(area, seen.name);
    if (taking) {
      const outcome = this.take(file, seen, reason, stillDue);
      if (outcome !== "cross_device") return outcome;
      // Outbox and staging on two mounts of one filesystem: unlinked where it is, as without a staging directory.
      now ??= this.recheck(area, seen, file, stillDue);
      if (typeof now === "string") return now;
    }
    if (!this.dryRun) {
      const outcome = this.unlink(area, seen.name, file);
      if (outcome !== "deleted") return outcome;
    }
    this.deleted(area, seen.name, now!.size, now!.mtimeMs, reason);
    return "deleted";
  }

  /** The look right before an unlink (or a take): the entry itself now, when it is still the one seen and still due. */
  private recheck(area: JanitorArea, seen: Seen, file: string | Buffer, stillDue: (now: fs.Stats) => boolean): fs.Stats | Outcome {
    const now = this.lstat(area, seen.name, file);
    if (now === null) return "failed";
    if (now === undefined) {
      this.skip(area, seen.name, "vanished");
      return "gone";
    }
    if (now.dev !== seen.dev || now.ino !== seen.ino || !(now.isFile() || now.isSymbolicLink())) {
      this.skip(area, seen.name, "replaced");
      return "kept";
    }
    if (!stillDue(now)) {
      this.skip(area, seen.name, "refreshed");
      return "kept";
    }
    return now;
  }

  private unlink(area: JanitorArea, name: string, file: string | Buffer): Outcome {
    try {
      fs.unlinkSync(file);
      return "deleted";
    } catch (err) {
      // Another janitor took it first: not ours to count.
      if (isErrno(err, "ENOENT")) {
        this.skip(area, name, "vanished");
        return "gone";
      }
      this.fail(area, name, err);
      return "failed";
    }
  }

  /**
   * The path every take renames onto. Before the first take (and after a
   * take that left a file there to keep) an empty placeholder is made under a
   * new name: the taken name always holds a regular file of ours when a take
   * renames onto it, so rename(2) itself refuses a directory that took the
   * outbox name since the look (ENOTDIR), and a mount point cannot be renamed
   * at all (EBUSY).
   */
  private takenPathFor(into: SweptDir): string {
    if (this.takenName !== undefined) return this.takenPath;
    const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW } = fs.constants;
    for (let tries = 0; ; tries++) {
      const name = takenNameFor(process.pid, ++this.takenCount);
      const file = `${into.prefix}${name}`;
      try {
        fs.closeSync(fs.openSync(file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600));
      } catch (err) {
        // A dead janitor of the same pid left this name: the next one.
        if (isErrno(err, "EEXIST") && tries < 100) continue;
        throw err;
      }
      this.takenName = name;
      this.takenPath = file;
      return file;
    }
  }

  /** What the taken name held is gone (rename(2) over it, or unlink): the file judged due there is deleted now. */
  private dropHeld(): void {
    if (this.held) this.deleted("outbox", this.held.name, this.held.bytes, this.held.mtimeMs, this.held.reason);
    this.held = undefined;
  }

  /**
   * Takes an outbox file out of the outbox (rename(2) onto the taken name in
   * the staging directory, where nothing reuses it), judges it there, and
   * keeps it there as `held` when it is still the file seen and still due:
   * the next take's rename, or release(), deletes it. Otherwise it gets its
   * name back (link(2): never over another file). "cross_device" when the
   * staging directory is on another mount (nothing was done).
   */
  private take(file: string | Buffer, seen: Seen, reason: DeleteReason, stillDue: (now: fs.Stats) => boolean): Outcome | "cross_device" {
    let taken: string;
    try {
      taken = this.takenPathFor(this.takeInto!);
    } catch (err) {
      this.fail("outbox", seen.name, err);
      return "failed";
    }
    try {
      fs.renameSync(file, taken);
    } catch (err) {
      const code = errnoCode(err);
      if (code === "EXDEV") {
        this.takeInto = undefined;
        return "cross_device";
      }
      if (code === "ENOENT") this.skip("outbox", seen.name, "vanished");
      // The name holds a directory now (it cannot replace a file: ENOTDIR) or a mount point (EBUSY): never taken.
      else if (code === "ENOTDIR") this.skip("outbox", seen.name, "replaced");
      else if (code === "EBUSY") this.skip("outbox", seen.name, "mount_point");
      else this.fail("outbox", seen.name, err);
      return code === "ENOENT" ? "gone" : code === "ENOTDIR" || code === "EBUSY" ? "kept" : "failed";
    }
    // The rename replaced what the taken name held: the file judged due before this one is gone.
    this.dropHeld();
    this.afterTake?.(seen.name);
    const takenName = this.takenName!;
    try {
      const now = fs.lstatSync(taken, { throwIfNoEntry: false });
      // Removed from the staging directory meanwhile (by hand): not ours to count.
      if (now === undefined) {
        this.takenName = undefined;
        this.skip("outbox", seen.name, "vanished");
        return "gone";
      }
      if (now.dev === seen.dev && now.ino === seen.ino && stillDue(now)) {
        this.held = { name: seen.name, bytes: now.size, mtimeMs: now.mtimeMs, reason };
        return "deleted";
      }
      // From here on the taken name holds a file to keep: never renamed onto again.
      this.retire();
      try {
        fs.linkSync(taken, file);
        fs.unlinkSync(taken);
        this.retired.delete(takenName);
        // A freed inode number is soon given again: what is not a regular file any more was replaced.
        this.skip("outbox", seen.name, now.ino === seen.ino && now.isFile() ? "refreshed" : "replaced");
      } catch (err) {
        if (!isErrno(err, "EEXIST")) throw err;
        this.skip("outbox", seen.name, "reused_meanwhile", `${SKIP_TEXT.reused_meanwhile} ${escapeText(takenName)}`);
      }
      return "kept";
    } catch (err) {
      // It is in the staging directory, under takenName: reported, never lost silently.
      this.retire();
      this.fail("outbox", seen.name, err);
      return "failed";
    }
  }

  private retire(): void {
    if (this.takenName !== undefined) this.retired.add(this.takenName);
    this.takenName = undefined;
  }

  /** After the outbox (and its quota): the file still held under the taken name is deleted, the placeholder removed. */
  release(): void {
    if (this.takenName === undefined) return;
    const held = this.held;
    try {
      fs.unlinkSync(this.takenPath);
      this.dropHeld();
    } catch (err) {
      if (held && isErrno(err, "ENOENT")) this.skip("outbox", held.name, "vanished");
      else if (held) this.fail("outbox", held.name, err);
      else if (!isErrno(err, "ENOENT")) this.fail("staging", this.takenName, err);
    } finally {
      this.takenName = undefined;
      this.held = undefined;
    }
  }

  /**
   * A directory's entries, all read before the first unlink: deleting while
   * getdents(2) is still walking a large ext4 directory measured clearly
   * slower (find does the same through fts). `state` names a file of
   * media-outbox's own bookkeeping kept in the directory: it is not an entry,
   * so it is neither scanned nor ever a candidate.
   */
  entries(dir: SweptDir, area: JanitorArea, state?: string): EntryName[] {
    // Names exactly as on disk, also those that are not valid UTF-8.
    let list = readEntries(dir.prefix === "" ? "." : dir.base);
    if (state !== undefined) list = list.filter((d) => d.name !== state);
    this.report.areas[area].scanned += list.length;
    return list;
  }
}

/**
 * Every mount point on the system, as bytes, from /proc/self/mountinfo;
 * undefined where there is none (not Linux). Field 5 is the mount point, with
 * space, tab, newline and backslash written as \ooo.
 */
function mountPoints(): Buffer[] | undefined {
  let table: Buffer;
  try {
    table = fs.readFileSync("/proc/self/mountinfo");
  } catch {
    return undefined;
  }
  const points: Buffer[] = [];
  let start = 0;
  while (start < table.length) {
    let end = table.indexOf(10, start);
    if (end < 0) end = table.length;
    const line = table.subarray(start, end);
    start = end + 1;
    let field = 0;
    let from = 0;
    for (let i = 0; i <= line.length && field <= 4; i++) {
      if (i < line.length && line[i] !== 32) continue;
      if (field === 4) points.push(unescapeMountPath(line.subarray(from, i)));
      field++;
      from = i + 1;
    }
  }
  return points;
}

function unescapeMountPath(raw: Buffer): Buffer {
  if (!raw.includes(92)) return raw;
  const text = raw.toString("latin1").replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8)));
  return Buffer.from(text, "latin1");
}

/**
 * Names (in entry-names form) directly inside `real` that are mount points. A
 * bind mount from the same filesystem keeps its st_dev, and overlayfs gives
 * files st_devs of their own: only the mount table tells.
 */
function mountsIn(real: string, points: Buffer[] | undefined): Set<string> | undefined {
  if (points === undefined) return undefined;
  const prefix = Buffer.from(real.endsWith("/") ? real : `${real}/`, "utf8");
  const names = new Set<string>();
  for (const point of points) {
    if (point.length <= prefix.length || !point.subarray(0, prefix.length).equals(prefix)) continue;
    const rest = point.subarray(prefix.length);
    if (!rest.includes(47)) names.add(nameFromBytes(rest));
  }
  return names;
}

function isMountPoint(dir: SweptDir, name: string): boolean {
  return dir.mounts?.has(name) === true;
}

/** A directory held open for the sweep, with the mount points directly inside it. */
interface SweptDir extends OpenDir {
  /** Names of mount points directly inside; undefined without a mount table. */
  mounts: Set<string> | undefined;
  /** What goes before an entry's name: "/proc/self/fd/N/", or "" when working from inside it. */
  prefix: string;
}

const seenOf = (name: string, st: fs.Stats): Seen => ({ name, dev: st.dev, ino: st.ino, size: st.size, mtimeMs: st.mtimeMs });

/**
 * Whether a well-formed ledger record names the outbox file `name` with its
 * size (prepare published it: "yes"), names it with other sizes only
 * ("resized": written to since), or does not name it ("no").
 */
type Published = (name: string, bytes: number) => "yes" | "resized" | "no";

/** What a day file holds: how many well-formed records, and the newest one's time. */
interface DayHeld {
  records: number;
  newestMs: number | undefined;
  /** No record, and every line is one of the day a crash cut short (state/torn-line.ts): prepare's, though it names nothing. */
  onlyTorn: boolean;
  /** Lines longer than a record can be and not glued ones of ours (not read), and where the first starts. */
  overlong: number;
  firstOverlongAt: number;
}

/**
 * What the ledger holds, read once before anything is deleted (the ledger's
 * own sweep comes last), each day file once: what prepare published (every
 * size each name was published with, for the outbox's sweep) and what each
 * day file holds (for the ledger's). A day file that is a link, not a
 * regular file or unreadable, and every line that is not a well-formed
 * record, name nothing (the guard reads it the same way); the ledger's sweep
 * reads such a file again, and reports why. Without a ledger directory
 * nothing is published.
 */
function readLedger(dir: SweptDir | undefined): { published: Published; days: Map<string, DayHeld>; torn: TornRecord[] } {
  const sizes = new Map<string, number[]>();
  const days = new Map<string, DayHeld>();
  const torn = new TornRecords();
  let list: ReturnType<typeof ledgerDays> = [];
  try {
    if (dir !== undefined) list = ledgerDays(dir.base);
  } catch {
    // Unlistable: nothing is published; the ledger's sweep reports it.
  }
  for (const day of list) {
    try {
      const file = path.basename(day.path);
      const onTorn = (line: TornLine) => torn.add(day.day, file, line);
      days.set(file, dayFileRecords(day.path, (rec) => {
        const list = sizes.get(rec.name);
        if (!list) sizes.set(rec.name, [rec.bytes]);
        else if (!list.includes(rec.bytes)) list.push(rec.bytes);
      }, onTorn));
    } catch {
      // Named nothing: see above.
    }
  }
  const published: Published = (name, bytes) => {
    const known = sizes.get(name);
    return known === undefined ? "no" : known.includes(bytes) ? "yes" : "resized";
  };
  return { published, days, torn: torn.list() };
}

/**
 * Outbox: regular files a ledger record names, older than the retention; the
 * rest of those are kept for the quota. A file no record names was not
 * published by prepare (a user's file in a directory that is not the
 * outbox it should be, or one planted there): it is reported, never deleted
 * and never counted by the quota; unless a record a crash cut short
 * accounts for it (orphansOfTornRecords): it then expires by its own mtime
 * (expired_torn_record), still outside the quota.
 */
function sweepOutbox(sweep: Sweep, dir: SweptDir, cutoffMs: number, keepList: boolean, published: Published, torn: readonly TornRecord[]): { kept: Seen[]; keptBytes: number } {
  const kept: Seen[] = [];
  let keptBytes = 0;
  // Files no record names, judged once every entry is seen (a torn record accounts for one only when no other file fits it).
  const unnamed: Seen[] = [];
  for (const dirent of sweep.entries(dir, "outbox")) {
    const st = sweep.statEntry(dir, "outbox", dirent);
    if (st === undefined) continue;
    // Not something prepare published: reported (the guard quarantines it), never deleted.
    if (isRawName(dirent.name)) {
      sweep.skip("outbox", dirent.name, "not_utf8_name");
      continue;
    }
    const known = published(dirent.name, st.size);
    if (known !== "yes") {
      if (known === "resized") sweep.skip("outbox", dirent.name, "not_in_ledger", RESIZED_TEXT);
      else if (torn.length > 0) unnamed.push(seenOf(dirent.name, st));
      else sweep.skip("outbox", dirent.name, "not_in_ledger");
      continue;
    }
    let outcome: Outcome = "kept";
    if (st.mtimeMs < cutoffMs) {
      // The look was statEntry's, just now.
      outcome = sweep.remove(dir, "outbox", seenOf(dirent.name, st), "expired", (now) => now.isFile() && now.mtimeMs < cutoffMs, true);
    }
    // Still there: it counts against the quota. Only files that were not due
    // are offered to the quota: a failed one is already reported, a refreshed
    // or replaced one is no longer what was seen.
    if (outcome === "kept" || outcome === "failed") keptBytes += st.size;
    if (st.mtimeMs < cutoffMs) continue;
    if (keepList) kept.push(seenOf(dirent.name, st));
  }
  const { orphans, twoFit } = orphansOfTornRecords(unnamed, torn);
  for (const seen of unnamed) {
    const record = orphans.get(seen);
    if (record === undefined) {
      sweep.skip("outbox", seen.name, "not_in_ledger", twoFit.has(seen) ? TWO_FIT_TEXT : undefined);
      continue;
    }
    // Its record was cut short by a crash: it ages by its own mtime, and is neither counted nor chosen by the quota.
    if (seen.mtimeMs >= cutoffMs) continue;
    const outcome = sweep.remove(dir, "outbox", seen, "expired_torn_record", (now) => now.isFile() && now.mtimeMs < cutoffMs && now.size === seen.size);
    if (outcome === "deleted") sweep.tornDeleted(seen.name, record);
  }
  return { kept, keptBytes };
}

/** After the age sweep: oldest first until the outbox fits, never a file younger than minAge. */
function enforceQuota(sweep: Sweep, dir: SweptDir, kept: Seen[], keptBytes: number, maxBytes: number, minAgeMs: number, nowMs: number): QuotaResult {
  const youngCutoff = nowMs - minAgeMs;
  let bytes = keptBytes;
  kept.sort((a, b) => a.mtimeMs - b.mtimeMs || (a.name < b.name ? -1 : 1));
  for (const seen of kept) {
    if (bytes <= maxBytes || seen.mtimeMs >= youngCutoff) break;
    const outcome = sweep.remove(dir, "outbox", seen, "quota", (now) => now.isFile() && now.mtimeMs <= seen.mtimeMs && now.mtimeMs < youngCutoff);
    if (outcome === "deleted" || outcome === "gone") bytes -= seen.size;
  }
  return { max_bytes: maxBytes, min_age_ms: minAgeMs, bytes_before: keptBytes, bytes_after: bytes, met: bytes <= maxBytes };
}

/** The name an outbox file is taken under, and its pattern: another janitor's staging sweep leaves it alone while that pid lives. */
const takenNameFor = (pid: number, n: number) => `.janitor-${pid}-${n}`;
const TAKEN_NAME = /^\.janitor-(\d{1,10})-\d{1,16}$/;

/**
 * Whether `name` is a file another janitor, still running, has just taken in
 * from the outbox and is judging: it keeps the outbox file's old mtime, so by
 * age alone it would look like a leftover. A dead janitor's is a leftover.
 */
function takenByLiveJanitor(name: string): boolean {
  const pid = TAKEN_NAME.exec(name)?.[1];
  if (pid === undefined || Number(pid) === 0 || Number(pid) === process.pid) return false;
  try {
    process.kill(Number(pid), 0);
    return true;
  } catch (err) {
    return isErrno(err, "EPERM");
  }
}

/**
 * Staging: regular files a crashed prepare (or janitor) left behind, under the
 * names they give (STAGING_NAME, TAKEN_NAME); never what a take of this run
 * kept there, never anything else.
 */
function sweepStaging(sweep: Sweep, dir: SweptDir, cutoffMs: number): void {
  for (const dirent of sweep.entries(dir, "staging")) {
    if (takenByLiveJanitor(dirent.name) || sweep.retired.has(dirent.name)) continue;
    const st = sweep.statEntry(dir, "staging", dirent);
    if (st === undefined) continue;
    if (!STAGING_NAME.test(dirent.name) && !TAKEN_NAME.test(dirent.name)) {
      sweep.skip("staging", dirent.name, "not_staging_file");
      continue;
    }
    if (st.mtimeMs >= cutoffMs) continue;
    sweep.remove(dir, "staging", seenOf(dirent.name, st), "stale_staging", (now) => now.isFile() && now.mtimeMs < cutoffMs);
  }
}

/**
 * Quarantine: any entry but a directory, past the retention. A quarantined
 * symlink is removed as a link (unlink never follows it); nothing is opened.
 * The journal beside the entries is what `quarantine list` reads the reasons
 * from: it only grows old because nothing was caught lately, and deleting it
 * would orphan every entry still there. It also says which entries the guard
 * moved there: no other is ever removed.
 */
function sweepQuarantine(sweep: Sweep, dir: SweptDir, cutoffMs: number): void {
  let journaled: Set<string>;
  try {
    journaled = quarantinedNames(dir.base);
  } catch (err) {
    // Unreadable: no entry is known to be the guard's, so none is removed.
    sweep.fail("quarantine", JOURNAL_NAME, err);
    journaled = new Set();
  }
  for (const dirent of sweep.entries(dir, "quarantine", JOURNAL_NAME)) {
    const name = dirent.name;
    if (isMountPoint(dir, name)) {
      sweep.skip("quarantine", name, "mount_point");
      continue;
    }
    const st = sweep.lstat("quarantine", name, entryPath(dir.prefix, name));
    if (!st) continue;
    const unknownMounts = dir.mounts === undefined && st.dev !== dir.dev;
    if (st.isDirectory()) {
      sweep.skip("quarantine", name, unknownMounts ? "mount_point" : "directory");
      continue;
    }
    if (unknownMounts) {
      sweep.skip("quarantine", name, "mount_point");
      continue;
    }
    if (!st.isFile() && !st.isSymbolicLink()) {
      sweep.skip("quarantine", name, "not_regular_file", `${kindOf(st)}: never touched`);
      continue;
    }
    if (!journaled.has(showName(name))) {
      sweep.skip("quarantine", name, "not_in_journal");
      continue;
    }
    if (st.mtimeMs >= cutoffMs) continue;
    sweep.remove(dir, "quarantine", seenOf(name, st), "expired_quarantine", (now) => now.mtimeMs < cutoffMs && now.isSymbolicLink() === st.isSymbolicLink());
  }
}

/**
 * What the day file `file` holds, read through a descriptor that refuses
 * links, in bounded chunks (records are counted and handed to `each`, never
 * kept).
 */
function dayFileRecords(file: string, each?: (rec: LedgerRecord) => void, eachTorn?: (torn: TornLine) => void): DayHeld {
  let records = 0;
  let newestMs: number | undefined;
  const read = readLedgerDayFrom(
    file,
    0,
    (rec) => {
      records++;
      const t = Date.parse(rec.time);
      if (Number.isFinite(t) && (newestMs === undefined || t > newestMs)) newestMs = t;
      each?.(rec);
    },
    eachTorn,
  );
  // Every line a record of the day cut short, at least one: a crash during the day's first append (and after it, maybe, others').
  const onlyTorn = records === 0 && read.malformed === read.torn && read.tail !== "other" && (read.torn > 0 || read.tail === "torn");
  return { records, newestMs, onlyTorn, overlong: read.overlong, firstOverlongAt: read.firstOverlongAt };
}

/**
 * Ledger: whole day files whose newest record (and last write) is older than
 * the retention plus one day; a file is never rewritten, and one still being
 * appended to (its mtime moved) is kept. A day file is media-outbox's when
 * at least one of its lines is a well-formed record (the other lines are then
 * torn by a crash: prepare's appends start a new line after one), when it
 * is empty (an append taken back on a full disk leaves that), or when every
 * line is a record of that day cut short (a crash during the day's first
 * append: a proper prefix of how appendLedger writes a record, its time of
 * that day, never a whole line of anything else): a file under a day
 * file's name holding anything else (a user's own ledger/ in a state
 * directory that should have been a directory of its own) is kept and
 * reported (`no_ledger_record`), at any age.
 */
function sweepLedger(sweep: Sweep, dir: SweptDir, cutoffMs: number, read: ReadonlyMap<string, DayHeld>): void {
  for (const dirent of sweep.entries(dir, "ledger")) {
    const name = dirent.name;
    const st = sweep.statEntry(dir, "ledger", dirent);
    if (st === undefined) continue;
    if (!DAY_FILE.test(name)) {
      sweep.skip("ledger", name, "not_ledger_file");
      continue;
    }
    // Read at the run's start; a day file made since, or one that could not be read then, is read now.
    let held = read.get(name);
    try {
      held ??= dayFileRecords(`${dir.prefix}${name}`);
    } catch (err) {
      sweep.fail("ledger", name, err);
      continue;
    }
    if (held.overlong > 0) sweep.warn("ledger", name, overlongText(held));
    if (held.records === 0 && st.size > 0 && !held.onlyTorn) {
      sweep.skip("ledger", name, "no_ledger_record");
      continue;
    }
    if (st.mtimeMs >= cutoffMs) continue;
    if (held.newestMs !== undefined && held.newestMs >= cutoffMs) {
      sweep.skip("ledger", name, "ledger_active");
      continue;
    }
    sweep.remove(dir, "ledger", seenOf(name, st), "expired_ledger", (now) => now.isFile() && now.mtimeMs === st.mtimeMs && now.size === st.size);
  }
}

/** What a day file's lines too long to be records, and not glued ones of ours, mean. */
function overlongText(held: DayHeld): string {
  const one = held.overlong === 1;
  const lines = one ? "a line" : `${held.overlong} lines (the first)`;
  return (
    `${lines} starting at byte ${held.firstOverlongAt} ${one ? "is" : "are"} longer than the ${MAX_RECORD_BYTES / 1024} KiB a record can be, and not ${one ? "a line" : "lines"} glued before the torn-line repair (records a crash cut short, then one more, each within ${MAX_RECORD_BYTES / 1024} KiB): ` +
    `not read, so ${one ? "it names" : "they name"} nothing`
  );
}

function newReport(config: Config, dryRun: boolean, now: Date): JanitorReport {
  const areas = Object.fromEntries(JANITOR_AREAS.map((a) => [a, { path: null, ...emptyTotals() }])) as JanitorReport["areas"];
  return {
    success: true,
    dry_run: dryRun,
    outbox: escapeText(config.outbox),
    outbox_exists: false,
    started: now.toISOString(),
    finished: now.toISOString(),
    retention_ms: config.janitor.retentionMs,
    cutoff: new Date(now.getTime() - config.janitor.retentionMs).toISOString(),
    quota: null,
    totals: emptyTotals(),
    areas,
    deleted: [],
    skipped: [],
    warnings: [],
    errors: [],
  };
}

/** Opens a directory that openLayout verified and checks it is still the same one. */
function reopen(expected: string, area: JanitorArea, code: "outbox_unsafe" | "state_unsafe", what: string, points: Buffer[] | undefined, owner: Config["owner"]): SweptDir | undefined {
  const dir = openPrivateDir(expected, { code, what, gatewayVisible: area === "outbox", owner });
  if (dir && dir.real !== expected) {
    fs.closeSync(dir.fd);
    throw new FatalError(code, `${what} ${escapeText(expected)} changed while the janitor opened it (now ${escapeText(dir.real)}); nothing was deleted; run it again`);
  }
  return dir && { ...dir, mounts: mountsIn(dir.real, points), prefix: `${dir.base}/` };
}

/**
 * Runs one sweep: outbox (retention, then the quota), staging leftovers,
 * expired quarantine entries, old ledger day files. Throws FatalError
 * (`outbox_unsafe`, `state_unsafe`, `config_invalid`) before deleting anything
 * when a directory cannot be trusted. A missing outbox is nothing to do.
 */
export function runJanitor(options: JanitorOptions = {}): JanitorReport {
  const config = options.resolvedConfig ?? loadConfig(options);
  const now = options.now ?? new Date();
  const nowMs = now.getTime();
  const dryRun = options.dryRun === true;
  const logger = options.logger ?? silentLogger;
  const report = newReport(config, dryRun, now);
  const { retentionMs, maxBytes, minAgeMs, stagingMaxAgeMs } = config.janitor;

  // Path-level rules first (owner, mode, ancestors, layout), creating nothing…
  const layout = openLayout(config, { create: false });
  const opened: Partial<Record<JanitorArea, SweptDir>> = {};
  const points = layout ? mountPoints() : undefined;
  try {
    // …then the directories themselves, held open for the whole run.
    opened.outbox = layout && reopen(layout.outbox, "outbox", "outbox_unsafe", "outbox", points, config.owner);
    if (!layout || !opened.outbox) return finish(report, logger);
    report.outbox = escapeText(opened.outbox.real);
    report.outbox_exists = true;
    opened.staging = reopen(layout.stagingDir, "staging", "state_unsafe", "staging directory", points, config.owner);
    opened.quarantine = reopen(layout.quarantineDir, "quarantine", "state_unsafe", "quarantine", points, config.owner);
    opened.ledger = reopen(layout.ledgerDir, "ledger", "state_unsafe", "ledger directory", points, config.owner);
    for (const area of JANITOR_AREAS) report.areas[area].path = opened[area] ? escapeText(opened[area].real) : null;
    options.onOpened?.();

    const sweep = new Sweep(report, options, opened.staging);
    // Read before anything is deleted, through the open directory.
    const { published, days, torn } = readLedger(opened.ledger);
    const cwd: { fd?: number; path?: string } = {};
    const enter = options.chdir ? (dir: SweptDir) => enterDir(dir, cwd) : (dir: SweptDir) => dir;
    try {
      const cutoffMs = nowMs - retentionMs;
      const outbox = enter(opened.outbox);
      try {
        const { kept, keptBytes } = sweepOutbox(sweep, outbox, cutoffMs, maxBytes !== undefined, published, torn);
        if (maxBytes !== undefined) report.quota = enforceQuota(sweep, outbox, kept, keptBytes, maxBytes, minAgeMs, nowMs);
      } finally {
        sweep.release();
      }
      if (opened.staging) sweepStaging(sweep, enter(opened.staging), nowMs - stagingMaxAgeMs);
      if (opened.quarantine) sweepQuarantine(sweep, enter(opened.quarantine), cutoffMs);
      if (opened.ledger) sweepLedger(sweep, enter(opened.ledger), cutoffMs - DAY_MS, days);
    } finally {
      leaveDirs(cwd);
    }
    return finish(report, logger);
  } finally {
    for (const dir of Object.values(opened)) if (dir) fs.closeSync(dir.fd);
  }
}

/**
 * Makes the open directory the working directory (through its descriptor, so
 * a swapped path cannot redirect it) and checks that it is. The first call
 * remembers the working directory to return to.
 */
function enterDir(dir: SweptDir, cwd: { fd?: number; path?: string }): SweptDir {
  if (cwd.fd === undefined && cwd.path === undefined) {
    try {
      cwd.path = process.cwd();
    } catch {
      cwd.path = "/"; // the working directory was deleted: nowhere better to return to
    }
    try {
      cwd.fd = fs.openSync(".", fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
    } catch {
      // An unreadable working directory: go back by its path.
    }
  }
  process.chdir(dir.base);
  const here = fs.statSync(".");
  if (here.dev !== dir.dev || here.ino !== dir.ino) throw new Error(`could not enter ${escapeText(dir.real)} through its descriptor`);
  return { ...dir, prefix: "" };
}

function leaveDirs(cwd: { fd?: number; path?: string }): void {
  if (cwd.path === undefined) return;
  try {
    process.chdir(cwd.fd !== undefined && fs.existsSync(`/proc/self/fd/${cwd.fd}`) ? `/proc/self/fd/${cwd.fd}` : cwd.path);
  } finally {
    if (cwd.fd !== undefined) fs.closeSync(cwd.fd);
  }
}

function finish(report: JanitorReport, logger: Logger): JanitorReport {
  for (const area of JANITOR_AREAS) {
    const a = report.areas[area];
    report.totals.scanned += a.scanned;
    report.totals.deleted += a.deleted;
    report.totals.bytes_freed += a.bytes_freed;
    report.totals.skipped += a.skipped;
    report.totals.errors += a.errors;
  }
  report.success = report.errors.length === 0 && (report.quota?.met ?? true);
  report.finished = new Date().toISOString();
  const fields = { event: "janitor_run", dry_run: report.dry_run, outbox: report.outbox, ...report.totals, quota_met: report.quota?.met ?? null, success: report.success };
  if (report.success) logger.info(fields, janitorSummary(report));
  else logger.error(fields, janitorSummary(report));
  return report;
}

/** Exit status for a report: 0 clean, 1 when a deletion failed or the quota is not met. */
export function janitorExitCode(report: JanitorReport): number {
  return report.success ? 0 : 1;
}
