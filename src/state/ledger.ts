// The append-only record of every published file: JSON lines, one file per
// UTC day, so that the janitor can drop whole old days and never rewrites a
// file that prepare may be appending to.
import fs from "node:fs";
import path from "node:path";
import { errnoCode, isErrno } from "../core/errors.js";
import { appendJsonLine } from "./append-line.js";
import { listDir } from "./layout.js";
import { type Field, type FieldKind, LongLine, type TornValue, recordOfLine, tornFields } from "./torn-line.js";

export interface LedgerRecord {
  /** ISO time of publication (or reuse). */
  time: string;
  /** The source as given, escaped. */
  source: string;
  /** File name inside the outbox. */
  name: string;
  bytes: number;
  sha256: string;
  mime: string;
  reused: boolean;
}

export const DAY_FILE = /^(\d{4}-\d{2}-\d{2})\.jsonl$/;

/** A record longer than this is not one prepare wrote (its longest field, the escaped source, is a path); a longer line is read piece by piece (LongLine). */
export const MAX_RECORD_BYTES = 64 * 1024;

const SHA256 = /^[0-9a-f]{64}$/;

/**
 * A record as appendLedger writes it, its keys in this order (the order
 * prepare has always built them in): what a torn line of ours is a prefix of.
 */
const LEDGER_FIELDS: { [K in keyof LedgerRecord]-?: FieldKind } = {
  // Every field of LedgerRecord, in this order (a new one does not compile until it has its place: appendLedger writes only these).
  time: "time",
  source: "string",
  bytes: "count",
  sha256: "sha256",
  mime: "string",
  name: "string",
  reused: "boolean",
};
export const LEDGER_SHAPE: readonly Field[] = Object.entries(LEDGER_FIELDS).map(([key, kind]) => ({ key, kind }));
const LEDGER_KEYS = LEDGER_SHAPE.map((f) => f.key);

/**
 * What a line of the day file `day` holds of a record of that day a crash
 * cut short (its fields as far as they go), or undefined when it is not one.
 * Any proper prefix counts, `{` and `{"ti` too, and one ended by NULs (or
 * NULs alone: a filesystem's unwritten tail): the day is the file's name, so
 * a cut before it, up to `{"time":"YYYY-MM-DD`, holds nothing its name does
 * not say; deleting such a file loses nothing. A user's file is never one of
 * these lines only, unless it holds nothing else.
 */
function tornOfDay(line: string, day: string | undefined): Map<string, TornValue> | undefined {
  return day === undefined ? undefined : tornFields(line, LEDGER_SHAPE, day);
}

export function ledgerFileFor(ledgerDir: string, when: Date): string {
  return path.join(ledgerDir, `${when.toISOString().slice(0, 10)}.jsonl`);
}

/** A day file is not a regular file: nothing is appended to it, nothing is read from it. */
export class LedgerFileError extends Error {
  override readonly name = "LedgerFileError";
}

function openDayFile(file: string, flags: number): number {
  const fd = fs.openSync(file, flags | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK, 0o600);
  try {
    // O_NONBLOCK above: a FIFO put in a day file's place opens at once
    // (reading) or fails (writing) instead of waiting for its other end.
    if (!fs.fstatSync(fd).isFile()) throw new LedgerFileError(`ledger day file ${file} is not a regular file`);
    return fd;
  } catch (err) {
    fs.closeSync(fd);
    throw err;
  }
}

/**
 * Appends one record, or throws and leaves the day file as it was: one line,
 * never glued to a torn one (appendJsonLine, the journal's rule too).
 */
export function appendLedger(ledgerDir: string, record: LedgerRecord): void {
  const file = ledgerFileFor(ledgerDir, new Date(record.time));
  const { O_RDWR, O_APPEND, O_CREAT } = fs.constants;
  const fd = openDayFile(file, O_RDWR | O_APPEND | O_CREAT);
  try {
    // Keys in LEDGER_SHAPE's order, however the record was built: a torn line is told by it.
    appendJsonLine(fd, JSON.stringify(record, LEDGER_KEYS), `the ledger ${file}`);
  } finally {
    fs.closeSync(fd);
  }
}

export interface LedgerDay {
  day: string;
  path: string;
}

/** The ledger's day files, oldest first. */
export function ledgerDays(ledgerDir: string): LedgerDay[] {
  return listDir(ledgerDir)
    .map((name) => ({ m: DAY_FILE.exec(name), name }))
    .filter((e): e is { m: RegExpExecArray; name: string } => e.m !== null)
    .map((e) => ({ day: e.m[1]!, path: path.join(ledgerDir, e.name) }))
    .sort((a, b) => (a.day < b.day ? -1 : 1));
}

/**
 * The record a line holds, or undefined when it is not one prepare could have
 * written: every field present with its type, a plain file name, a real
 * sha256, a positive size. The ledger is written by the agent's own user in
 * the single-user mode: a record is only ever a claim, never a proof.
 */
export function parseLedgerLine(line: string): LedgerRecord | undefined {
  let rec: unknown;
  try {
    rec = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (rec === null || typeof rec !== "object" || Array.isArray(rec)) return undefined;
  const r = rec as Record<string, unknown>;
  const { time, source, name, bytes, sha256, mime, reused } = r;
  if (typeof time !== "string" || !Number.isFinite(Date.parse(time))) return undefined;
  if (typeof source !== "string" || typeof mime !== "string" || typeof reused !== "boolean") return undefined;
  if (typeof name !== "string" || name === "" || name === "." || name === ".." || name.includes("/") || name.includes("\0")) return undefined;
  if (typeof bytes !== "number" || !Number.isSafeInteger(bytes) || bytes <= 0) return undefined;
  if (typeof sha256 !== "string" || !SHA256.test(sha256)) return undefined;
  return { time, source, name, bytes, sha256, mime, reused };
}

export interface LedgerRead {
  records: LedgerRecord[];
  /** Where the next read starts: just past the last complete line. */
  end: number;
  /** Complete lines that are not records (torn by a crash, garbage, too long). */
  malformed: number;
  /** Of those, lines that are a record of the day a crash cut short (tornOfDay): prepare wrote them. */
  torn: number;
  /** Lines longer than MAX_RECORD_BYTES that are not a line glued before the torn-line repair (LongLine: complete ones, counted as malformed too, and the tail), so name nothing; and where the first starts. */
  overlong: number;
  firstOverlongAt: number;
  /** What follows the last complete line: nothing, a record of the day cut short (a crash during the last append: maybe only its newline, lost to NULs), or anything else. */
  tail: "none" | "torn" | "other";
}

/** A record of the day a crash cut short, a complete line's or the tail's: the fields it holds, and where its line starts. */
export interface TornLine {
  fields: ReadonlyMap<string, TornValue>;
  at: number;
}

/** The record a complete line of the day file `day` holds (torn-line.ts recordOfLine: NULs ending it are a crash's; a glued line's last record). */
function ledgerRecordOfLine(line: string, day: string | undefined): LedgerRecord | undefined {
  return recordOfLine(line, LEDGER_SHAPE, parseLedgerLine, day);
}

const READ_CHUNK = 1024 * 1024;

/**
 * Reads the complete lines a day file gained since byte `offset` (a
 * long-running reader follows the file instead of re-reading it whole), in
 * bounded chunks: memory stays flat whatever the file holds. Throws
 * LedgerFileError when the day file is not a regular file (a link, a FIFO, a
 * directory: it is never followed or waited on). With `each`, every record
 * is handed to it instead of being kept in `records` (which stays empty): a
 * reader that keeps less than whole records keeps memory flat too. With
 * `eachTorn`, every record of the day a crash cut short (the tail's too) is
 * handed to it.
 */
export function readLedgerDayFrom(file: string, offset: number, each?: (rec: LedgerRecord) => void, eachTorn?: (torn: TornLine) => void): LedgerRead {
  let fd: number;
  try {
    fd = openDayFile(file, fs.constants.O_RDONLY);
  } catch (err) {
    if (isErrno(err, "ENOENT")) return { records: [], end: offset, malformed: 0, torn: 0, overlong: 0, firstOverlongAt: -1, tail: "none" };
    if (isErrno(err, "ELOOP")) throw new LedgerFileError(`ledger day file ${file} is a symbolic link`);
    if (errnoCode(err) === "EISDIR") throw new LedgerFileError(`ledger day file ${file} is a directory`);
    throw err;
  }
  const read: LedgerRead = { records: [], end: offset, malformed: 0, torn: 0, overlong: 0, firstOverlongAt: -1, tail: "none" };
  const day = DAY_FILE.exec(path.basename(file))?.[1];
  // A line none of ours past MAX_RECORD_BYTES: not read, never silently (the caller says where).
  const unread = () => {
    if (read.overlong++ === 0) read.firstOverlongAt = read.end;
  };
  const judgeLine = (line: string | undefined) => {
    if (line === "") return;
    const rec = line === undefined ? undefined : ledgerRecordOfLine(line, day);
    if (rec && each) return each(rec);
    if (rec) return void read.records.push(rec);
    read.malformed++;
    if (line === undefined) return unread();
    const fields = tornOfDay(line, day);
    if (fields) {
      read.torn++;
      eachTorn?.({ fields, at: read.end });
    }
  };
  try {
    const buf = Buffer.allocUnsafe(READ_CHUNK);
    // The start of the line not yet complete: held while it may be a record; past MAX_RECORD_BYTES, read on piece by piece (long).
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    let long: LongLine | undefined;
    const lengthen = (more: Buffer) => {
      if (!long && pendingBytes + more.length > MAX_RECORD_BYTES) {
        long = new LongLine(LEDGER_SHAPE, day, MAX_RECORD_BYTES);
        for (const held of pending) long.feed(held);
        pending = [];
      }
      if (long) long.feed(more);
      else pending.push(Buffer.from(more));
      pendingBytes += more.length;
    };
    let pos = offset;
    for (;;) {
      const n = fs.readSync(fd, buf, 0, buf.length, pos);
      if (n === 0) break;
      let start = 0;
      for (let nl = buf.indexOf(10, 0); nl >= 0 && nl < n; nl = buf.indexOf(10, start)) {
        if (!long && pendingBytes + (nl - start) <= MAX_RECORD_BYTES) {
          judgeLine(pendingBytes === 0 ? buf.toString("utf8", start, nl) : Buffer.concat([...pending, buf.subarray(start, nl)]).toString("utf8"));
        } else {
          lengthen(buf.subarray(start, nl));
          judgeLine(long!.line());
        }
        pending = [];
        pendingBytes = 0;
        long = undefined;
        start = nl + 1;
        read.end = pos + start;
      }
      // The rest of the chunk is the start of a line not yet complete.
      if (start < n) lengthen(buf.subarray(start, n));
      pos += n;
    }
    if (pendingBytes > 0) {
      const text = long ? long.line() : Buffer.concat(pending).toString("utf8");
      // A whole record whose newline a crash lost to NULs: read (its line is not complete, so `end` stays before it; a follower reads it again, as the same record).
      const rec = text?.endsWith("\0") ? ledgerRecordOfLine(text, day) : undefined;
      const fields = rec || text === undefined ? undefined : tornOfDay(text, day);
      read.tail = rec || fields ? "torn" : "other";
      if (rec && each) each(rec);
      else if (rec) read.records.push(rec);
      if (fields) eachTorn?.({ fields, at: read.end });
      if (text === undefined) unread();
    }
    return read;
  } finally {
    fs.closeSync(fd);
  }
}
