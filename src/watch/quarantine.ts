// The quarantine: where the guard moves what prepare did not publish. Entries
// are moved there by rename (never copied, never deleted) and keep their
// name; a journal beside them says why each one was caught.
import fs from "node:fs";
import path from "node:path";
import type { Config } from "../config/config.js";
import { randomBytes } from "node:crypto";
import { type RefusalCode, errnoCode, isErrno, usageError } from "../core/errors.js";
import { escapeText, isEscaped, quoteText } from "../core/escape.js";
import { type Logger, silentLogger } from "../log/logger.js";
import { truncateToBytes } from "../prepare/name.js";
import { type PrepareReport, prepare } from "../prepare/prepare.js";
import { addDropped, emptyReport, settleReport } from "../prepare/report.js";
import { type EntryKind, entryKind } from "../prepare/source.js";
import { entryPath, readNames, showName, textOfName } from "../safety/entry-names.js";
import { appendJsonLine } from "../state/append-line.js";
import { JOURNAL_NAME, openLayout } from "../state/layout.js";
import { JOURNAL_SHAPE, type JournalRecord, type QuarantineReason, readJournal } from "../state/quarantine-journal.js";
import { NAME_MAX } from "./receipt.js";

export type { EntryKind } from "../prepare/source.js";

export type { QuarantineReason } from "../state/quarantine-journal.js";

export { JOURNAL_NAME };
const JOURNAL_KEYS = JOURNAL_SHAPE.map((f) => f.key);
/** Clash names tried in order (`stem~2.ext`…) before a unique fallback. */
const CLASH_NUMBERS = 1000;

/**
 * Appends one record to the journal, by the ledger's rule (appendJsonLine):
 * after a line a crash cut short, the record starts on a line of its own; glued
 * onto the torn one, it would name nothing, and the janitor would keep that
 * entry forever (`not_in_journal`) and `quarantine list` show no reason.
 */
function appendJournal(quarantineDir: string, record: JournalRecord): void {
  const file = path.join(quarantineDir, JOURNAL_NAME);
  const { O_RDWR, O_APPEND, O_CREAT, O_NOFOLLOW, O_NONBLOCK } = fs.constants;
  const fd = fs.openSync(file, O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK, 0o600);
  try {
    if (!fs.fstatSync(fd).isFile()) throw new Error("the quarantine journal is not a regular file");
    // Keys in JOURNAL_SHAPE's order, however the record was built: a glued line is read by it.
    appendJsonLine(fd, JSON.stringify(record, JOURNAL_KEYS), "the quarantine journal");
  } finally {
    fs.closeSync(fd);
  }
}

/** `photo.png` -> `photo~2.png`: the extension stays last, so a restore can still judge it. */
export function clashName(name: string, n: number | string): string {
  const dot = name.lastIndexOf(".");
  const [stem, ext] = dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, ""];
  const tail = `~${n}${ext}`;
  return `${truncateToBytes(stem, Math.max(1, NAME_MAX - Buffer.byteLength(tail)))}${tail}`;
}

/**
 * The names a quarantined entry may get, in order: its own, `stem~2.ext` up
 * to `stem~1000.ext`, then `stem~<time>-<random>.ext` for as long as it
 * takes. Never runs out.
 */
export function* quarantineNames(base: string): Generator<string> {
  if (base !== JOURNAL_NAME) yield base;
  for (let n = 2; n <= CLASH_NUMBERS; n++) yield clashName(base, n);
  for (;;) yield clashName(base, `${Date.now().toString(36)}-${randomBytes(6).toString("hex")}`);
}

/** O_PATH (Linux): a descriptor naming the entry itself, whatever its permissions. Not in fs.constants. */
const O_PATH = 0o10000000;

/**
 * Gives the owner write permission on a planted directory before it is
 * moved: renaming a directory into another parent rewrites its `..`, which
 * needs write permission on it. Done through a descriptor opened without
 * following a link (O_PATH|O_NOFOLLOW|O_DIRECTORY), so a link swapped in
 * meanwhile is never followed; only that directory's own mode changes.
 */
function makeMovable(dir: string | Buffer, seen: fs.Stats): void {
  if ((seen.mode & 0o700) === 0o700) return;
  let fd: number;
  try {
    fd = fs.openSync(dir, O_PATH | fs.constants.O_NOFOLLOW | fs.constants.O_DIRECTORY);
  } catch {
    return; // gone or replaced: the rename below says what happened
  }
  try {
    const st = fs.fstatSync(fd);
    if (st.ino !== seen.ino || st.dev !== seen.dev) return;
    fs.chmodSync(`/proc/self/fd/${fd}`, (st.mode & 0o7777) | 0o700);
  } catch {
    // Not ours to change: the rename below fails and says so.
  } finally {
    fs.closeSync(fd);
  }
}

type Placed = { placed: true } | { placed: false; why: "taken" | "gone" };

/**
 * Moves a directory under `target` without ever replacing anything: the
 * name is reserved with mkdir (which fails when it is taken, even by a
 * concurrent mover), then the directory is renamed onto that empty
 * reservation, which rename(2) replaces only because it is an empty directory.
 */
function placeDirectory(src: string | Buffer, seen: fs.Stats, target: string): Placed {
  try {
    fs.mkdirSync(target, { mode: 0o700 });
  } catch (err) {
    if (isErrno(err, "EEXIST")) return { placed: false, why: "taken" };
    throw err;
  }
  makeMovable(src, seen);
  try {
    fs.renameSync(src, target);
    return { placed: true };
  } catch (err) {
    // Something was put into the reservation meanwhile: it stays, and so does the reservation.
    if (isErrno(err, "ENOTEMPTY", "EEXIST")) return { placed: false, why: "taken" };
    try {
      fs.rmdirSync(target);
    } catch {
      // Not empty any more: it holds what someone put there; leave it.
    }
    if (isErrno(err, "ENOENT", "ENOTDIR")) return { placed: false, why: "gone" };
    throw err;
  }
}

/**
 * Moves anything but a directory under `target` without ever replacing
 * anything: link(2) fails when the name is taken (and never follows a
 * symbolic link: the link itself is linked), then the outbox name is
 * removed. Where the filesystem refuses hard links, an exclusive placeholder
 * reserves the name and rename(2) replaces only that placeholder.
 */
function placeOther(src: string | Buffer, seen: fs.Stats, target: string): Placed {
  try {
    fs.linkSync(src, target);
  } catch (err) {
    if (isErrno(err, "EEXIST")) return { placed: false, why: "taken" };
    if (isErrno(err, "ENOENT")) return { placed: false, why: "gone" };
    if (!isErrno(err, "EPERM", "EMLINK", "ENOTSUP", "EOPNOTSUPP")) throw err;
    return placeByPlaceholder(src, target);
  }
  // The entry now has its quarantine name; take away its outbox name, unless
  // the outbox name was given to something else meanwhile (then that is
  // judged on its own, and this name holds the entry that was seen).
  const now = fs.lstatSync(src, { throwIfNoEntry: false });
  if (now && (now.ino !== seen.ino || now.dev !== seen.dev)) return { placed: true };
  if (now) {
    try {
      fs.unlinkSync(src);
      return { placed: true };
    } catch (err) {
      if (!isErrno(err, "ENOENT")) throw err;
    }
  }
  // The outbox name went meanwhile: another mover took it. When the entry
  // has another name too (that mover's quarantine name), this second one is
  // dropped; when it has none (the outbox name was removed), this is its only name.
  const mine = fs.lstatSync(target, { throwIfNoEntry: false });
  if (mine && mine.nlink > 1) {
    fs.unlinkSync(target);
    return { placed: false, why: "gone" };
  }
  return { placed: true };
}

function placeByPlaceholder(src: string | Buffer, target: string): Placed {
  const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW } = fs.constants;
  try {
    fs.closeSync(fs.openSync(target, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600));
  } catch (err) {
    if (isErrno(err, "EEXIST")) return { placed: false, why: "taken" };
    throw err;
  }
  try {
    fs.renameSync(src, target);
    return { placed: true };
  } catch (err) {
    fs.rmSync(target, { force: true });
    if (isErrno(err, "ENOENT")) return { placed: false, why: "gone" };
    throw err;
  }
}

/** What a move did: the entry's name in the quarantine, and whether the journal says so. */
export interface MovedEntry {
  name: string;
  /** The journal line could not be written (the move itself happened). */
  journalError?: string;
}

export interface QuarantineDetail {
  code?: RefusalCode;
  message?: string;
}

/**
 * Moves `outbox/name` into the quarantine, under its own name or, when that
 * is taken, the first free `stem~N.ext` (then a unique fallback): never
 * copied, never deleted, and never replacing anything already there, even
 * with another process moving entries at the same time. A name that is not
 * valid UTF-8 gets a valid one (each invalid byte becomes `_`); the journal
 * keeps the original, escaped. Returns undefined when the entry was already
 * gone (or another mover took it).
 */
export function moveToQuarantine(outbox: string, quarantineDir: string, name: string, reason: QuarantineReason, detail: QuarantineDetail = {}): MovedEntry | undefined {
  const src = entryPath(outbox, name);
  const seen = fs.lstatSync(src, { throwIfNoEntry: false });
  if (!seen) return undefined;
  let target: string | undefined;
  for (const candidate of quarantineNames(textOfName(name))) {
    const dst = path.join(quarantineDir, candidate);
    const placed = seen.isDirectory() ? placeDirectory(src, seen, dst) : placeOther(src, seen, dst);
    if (placed.placed) {
      target = candidate;
      break;
    }
    if (placed.why === "gone") return undefined;
  }
  const moved = target!;
  // The janitor counts a quarantined entry's retention from its mtime: start
  // it now, or an old file planted in the outbox would vanish at the next
  // sweep before an operator could look. lutimes: a link's target stays untouched.
  const now = new Date();
  const result: MovedEntry = { name: moved };
  try {
    fs.lutimesSync(path.join(quarantineDir, moved), now, now);
    appendJournal(quarantineDir, {
      time: now.toISOString(),
      event: "quarantined",
      name: escapeText(moved),
      original: showName(name),
      reason,
      ...(detail.code ? { code: detail.code } : {}),
      ...(detail.message ? { message: detail.message } : {}),
    });
  } catch (err) {
    result.journalError = errnoCode(err) ?? escapeText(String((err as Error).message));
  }
  return result;
}

export interface QuarantineEntry {
  /** Name in the quarantine, escaped. */
  name: string;
  kind: EntryKind;
  bytes: number;
  /** ISO time the entry was last modified. */
  modified: string;
  /** When and why the guard moved it, when the journal says. */
  quarantined_at?: string;
  /** One of the guard's QuarantineReason codes, unless another wrote the journal (escaped). */
  reason?: string;
  /** Its name in the outbox, escaped (differs from `name` after a name clash). */
  original?: string;
}

export interface QuarantineList {
  /** Real path of the quarantine, escaped. */
  quarantine: string;
  entries: QuarantineEntry[];
}

/** The quarantine's entries, oldest first (none when there is no quarantine yet). Creates nothing. */
export function listQuarantine(config: Config): QuarantineList {
  const layout = openLayout(config, { create: false });
  if (!layout) return { quarantine: escapeText(config.quarantineDir), entries: [] };
  let names: string[];
  try {
    names = readNames(layout.quarantineDir);
  } catch (err) {
    if (!isErrno(err, "ENOENT")) throw err;
    names = [];
  }
  const journal = readJournal(layout.quarantineDir);
  const entries: QuarantineEntry[] = [];
  for (const name of names) {
    if (name === JOURNAL_NAME) continue;
    let st: fs.Stats;
    try {
      st = fs.lstatSync(entryPath(layout.quarantineDir, name));
    } catch {
      continue;
    }
    const shown = showName(name);
    const rec = journal.get(shown);
    const caught = rec?.event === "quarantined" ? rec : undefined;
    entries.push({
      name: shown,
      kind: entryKind(st),
      bytes: st.size,
      modified: st.mtime.toISOString(),
      ...(caught ? journalSays(caught) : {}),
    });
  }
  entries.sort((a, b) => (a.quarantined_at ?? a.modified).localeCompare(b.quarantined_at ?? b.modified) || a.name.localeCompare(b.name));
  return { quarantine: escapeText(layout.quarantineDir), entries };
}

/**
 * When and why the journal says the guard moved an entry, and its name in
 * the outbox. In single-user mode the agent's user can append to the
 * journal: its strings are shown escaped (the guard's own are already, and
 * are kept as they are), a field of another type not at all.
 */
function journalSays(rec: JournalRecord): Pick<QuarantineEntry, "quarantined_at" | "reason" | "original"> {
  const shown = (value: unknown) => (typeof value !== "string" || value === "" ? undefined : isEscaped(value) ? value : escapeText(value));
  const time = shown(rec.time);
  const reason = shown(rec.reason);
  const original = shown(rec.original);
  return { ...(time ? { quarantined_at: time } : {}), ...(reason ? { reason } : {}), ...(original ? { original } : {}) };
}

function checkEntryName(name: string): void {
  if (name === "" || name === "." || name === ".." || name.includes("/") || name.includes("\0") || name === JOURNAL_NAME) {
    throw usageError(`${quoteText(name)} is not a quarantine entry name; see media-outbox quarantine list`);
  }
}

/** Whether nothing is at `p` (an error other than ENOENT is for openLayout to report). */
function missing(p: string): boolean {
  try {
    return fs.lstatSync(p, { throwIfNoEntry: false }) === undefined;
  } catch {
    return false;
  }
}

/**
 * Runs the full prepare checks on a quarantined entry again; when it passes,
 * it is published and leaves the quarantine. A refusal leaves it in place.
 */
export async function restoreFromQuarantine(name: string, options: { resolvedConfig: Config; logger?: Logger }): Promise<PrepareReport> {
  checkEntryName(name);
  const logger = options.logger ?? silentLogger;
  const config = options.resolvedConfig;
  const nothingNamed = (dir: string, why = "") => usageError(`nothing named ${escapeText(name)} in the quarantine ${escapeText(dir)}${why}; see media-outbox quarantine list`);
  // A quarantine that does not exist holds nothing: say so before the outbox or its state are made (a mistyped --quarantine).
  if (missing(config.quarantineDir)) throw nothingNamed(config.quarantineDir, " (it does not exist)");
  const layout = openLayout(config)!;
  const file = path.join(layout.quarantineDir, name);
  let before: fs.Stats;
  try {
    before = fs.lstatSync(file);
  } catch (err) {
    if (isErrno(err, "ENOENT")) throw nothingNamed(layout.quarantineDir);
    throw err;
  }
  if (before.isSymbolicLink()) {
    // Never followed: prepare would judge where it points (and say so, as if that were the entry).
    const report = emptyReport(layout.outbox);
    addDropped(report, { path: escapeText(file), code: "denied_source", reason: "it is a symbolic link; a quarantined link is never followed or restored: prepare the file it names instead, if that is what should go out" }, logger);
    return settleReport(report);
  }
  const report = await prepare(file, { resolvedConfig: config, logger, fromQuarantine: true });
  if (!report.success) return report;
  // Remove exactly what was checked: a replacement that appeared meanwhile stays.
  const after = fs.lstatSync(file, { throwIfNoEntry: false });
  if (after && after.ino === before.ino && after.dev === before.dev) fs.unlinkSync(file);
  appendJournal(layout.quarantineDir, { time: new Date().toISOString(), event: "restored", name: escapeText(name) });
  logger.info({ event: "restored", name: escapeText(name), published: report.media[0]?.name }, "restored from quarantine");
  return report;
}
