// The quarantine: where the guard moves what prepare did not publish. Entries
// are moved there by rename (never copied, never deleted) and keep their
// name; a journal beside them says why each one was caught.
import fs from "node:fs";
import path from "node:path";
import type { Config } from "../config/config.js";
import { errnoCode, isErrno, usageError } from "../core/errors.js";
import { escapeText } from "../core/escape.js";
import { type Logger, silentLogger } from "../log/logger.js";
import { truncateToBytes } from "../prepare/name.js";
import { type PrepareReport, prepare } from "../prepare/prepare.js";
import { type EntryKind, entryKind } from "../prepare/source.js";
import { JOURNAL_NAME, listDir, openLayout } from "../state/layout.js";
import { NAME_MAX } from "./receipt.js";

export type { EntryKind } from "../prepare/source.js";

/** Why the guard moved an entry: stable, documented, safe to match on. */
export type QuarantineReason = "not_in_ledger" | "size_mismatch" | "sha256_mismatch" | "symlink" | "directory" | "fifo" | "socket" | "device";

export { JOURNAL_NAME };
const MAX_CLASH_SUFFIX = 1000;

interface JournalRecord {
  time: string;
  event: "quarantined" | "restored";
  /** The name in the quarantine, escaped. */
  name: string;
  /** The name it had in the outbox, escaped. */
  original?: string;
  reason?: QuarantineReason;
}

function appendJournal(quarantineDir: string, record: JournalRecord): void {
  const file = path.join(quarantineDir, JOURNAL_NAME);
  const fd = fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_APPEND | fs.constants.O_CREAT | fs.constants.O_NOFOLLOW, 0o600);
  try {
    fs.writeSync(fd, `${JSON.stringify(record)}\n`);
  } finally {
    fs.closeSync(fd);
  }
}

function readJournal(quarantineDir: string): Map<string, JournalRecord> {
  const latest = new Map<string, JournalRecord>();
  let text = "";
  try {
    text = fs.readFileSync(path.join(quarantineDir, JOURNAL_NAME), "utf8");
  } catch (err) {
    if (!isErrno(err, "ENOENT")) throw err;
  }
  for (const line of text.split("\n")) {
    if (line === "") continue;
    try {
      const rec = JSON.parse(line) as JournalRecord;
      if (typeof rec.name === "string") latest.set(rec.name, rec);
    } catch {
      // A torn last line names nothing.
    }
  }
  return latest;
}

/** `photo.png` -> `photo~2.png`: the extension stays last, so a restore can still judge it. */
export function clashName(name: string, n: number): string {
  const dot = name.lastIndexOf(".");
  const [stem, ext] = dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, ""];
  const tail = `~${n}${ext}`;
  return `${truncateToBytes(stem, Math.max(1, NAME_MAX - Buffer.byteLength(tail)))}${tail}`;
}

function isFree(dir: string, name: string): boolean {
  return name !== JOURNAL_NAME && fs.lstatSync(path.join(dir, name), { throwIfNoEntry: false }) === undefined;
}

/**
 * Moves `outbox/name` into the quarantine by rename, under its own name or,
 * when that is taken, the first free `stem~N.ext`, so no earlier entry is lost.
 * Returns the name it got, or undefined when the entry was already gone.
 */
export function moveToQuarantine(outbox: string, quarantineDir: string, name: string, reason: QuarantineReason): string | undefined {
  let target = name;
  for (let n = 2; !isFree(quarantineDir, target); n++) {
    // The caller's log line names the entry: an escaped name here would be escaped again there.
    if (n > MAX_CLASH_SUFFIX) throw new Error(`no free quarantine name after ${MAX_CLASH_SUFFIX} tries`);
    target = clashName(name, n);
  }
  try {
    // The quarantine is private (0700) and only media-outbox moves entries
    // into it, so the name checked free above is still free here.
    fs.renameSync(path.join(outbox, name), path.join(quarantineDir, target));
  } catch (err) {
    if (errnoCode(err) === "ENOENT") return undefined;
    throw err;
  }
  // The janitor counts a quarantined entry's retention from its mtime: start
  // it now, or an old file planted in the outbox would vanish at the next
  // sweep before an operator could look. lutimes: a link's target stays untouched.
  const now = new Date();
  fs.lutimesSync(path.join(quarantineDir, target), now, now);
  appendJournal(quarantineDir, { time: now.toISOString(), event: "quarantined", name: escapeText(target), original: escapeText(name), reason });
  return target;
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
  reason?: QuarantineReason;
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
  const names = listDir(layout.quarantineDir);
  const journal = readJournal(layout.quarantineDir);
  const entries: QuarantineEntry[] = [];
  for (const name of names) {
    if (name === JOURNAL_NAME) continue;
    let st: fs.Stats;
    try {
      st = fs.lstatSync(path.join(layout.quarantineDir, name));
    } catch {
      continue;
    }
    const shown = escapeText(name);
    const rec = journal.get(shown);
    const caught = rec?.event === "quarantined" ? rec : undefined;
    entries.push({
      name: shown,
      kind: entryKind(st),
      bytes: st.size,
      modified: st.mtime.toISOString(),
      ...(caught ? { quarantined_at: caught.time, ...(caught.reason ? { reason: caught.reason } : {}), ...(caught.original ? { original: caught.original } : {}) } : {}),
    });
  }
  entries.sort((a, b) => (a.quarantined_at ?? a.modified).localeCompare(b.quarantined_at ?? b.modified) || a.name.localeCompare(b.name));
  return { quarantine: escapeText(layout.quarantineDir), entries };
}

function checkEntryName(name: string): void {
  if (name === "" || name === "." || name === ".." || name.includes("/") || name.includes("\0") || name === JOURNAL_NAME) {
    throw usageError(`${escapeText(JSON.stringify(name))} is not a quarantine entry name; see media-outbox quarantine list`);
  }
}

/**
 * Runs the full prepare checks on a quarantined entry again; when it passes,
 * it is published and leaves the quarantine. A refusal leaves it in place.
 */
export async function restoreFromQuarantine(name: string, options: { resolvedConfig: Config; logger?: Logger }): Promise<PrepareReport> {
  checkEntryName(name);
  const logger = options.logger ?? silentLogger;
  const layout = openLayout(options.resolvedConfig)!;
  const file = path.join(layout.quarantineDir, name);
  let before: fs.Stats;
  try {
    before = fs.lstatSync(file);
  } catch (err) {
    if (isErrno(err, "ENOENT")) throw usageError(`nothing named ${escapeText(name)} in the quarantine ${escapeText(layout.quarantineDir)}; see media-outbox quarantine list`);
    throw err;
  }
  const report = await prepare(file, { resolvedConfig: options.resolvedConfig, logger, fromQuarantine: true });
  if (!report.success) return report;
  // Remove exactly what was checked: a replacement that appeared meanwhile stays.
  const after = fs.lstatSync(file, { throwIfNoEntry: false });
  if (after && after.ino === before.ino && after.dev === before.dev) fs.unlinkSync(file);
  appendJournal(layout.quarantineDir, { time: new Date().toISOString(), event: "restored", name: escapeText(name) });
  logger.info({ event: "restored", name: escapeText(name), published: report.media[0]?.name }, "restored from quarantine");
  return report;
}
