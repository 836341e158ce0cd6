// The append-only record of every published file: JSON lines, one file per
// UTC day, so that the janitor can drop whole old days and never rewrites a
// file that prepare may be appending to.
import fs from "node:fs";
import path from "node:path";
import { isErrno } from "../core/errors.js";
import { listDir } from "./layout.js";

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

export function ledgerFileFor(ledgerDir: string, when: Date): string {
  return path.join(ledgerDir, `${when.toISOString().slice(0, 10)}.jsonl`);
}

/**
 * Appends one record. A single write(2) of one line with O_APPEND, so
 * concurrent writers never interleave inside a line.
 */
export function appendLedger(ledgerDir: string, record: LedgerRecord): void {
  const file = ledgerFileFor(ledgerDir, new Date(record.time));
  const fd = fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_APPEND | fs.constants.O_CREAT | fs.constants.O_NOFOLLOW, 0o600);
  try {
    const line = Buffer.from(`${JSON.stringify(record)}\n`);
    const written = fs.writeSync(fd, line);
    if (written !== line.length) throw new Error(`short write to ledger ${file}`);
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

/** Parses the text of a day file; lines that are not records (a torn last line) are skipped. */
export function parseLedgerText(text: string): LedgerRecord[] {
  const records: LedgerRecord[] = [];
  for (const line of text.split("\n")) {
    if (line === "") continue;
    try {
      const rec = JSON.parse(line) as LedgerRecord;
      if (typeof rec.name === "string" && typeof rec.sha256 === "string" && typeof rec.bytes === "number") records.push(rec);
    } catch {
      // A line cut short by a crash names nothing that was published.
    }
  }
  return records;
}

/**
 * Reads the complete lines a day file gained since byte `offset` (a
 * long-running reader follows the file instead of re-reading it whole).
 * `end` is where the next read starts: just past the last complete line.
 */
export function readLedgerDayFrom(file: string, offset: number): { records: LedgerRecord[]; end: number } {
  let fd: number;
  try {
    // O_NONBLOCK: a FIFO swapped in under a day file's name must not hang the
    // reader (the janitor, the watch) waiting for a writer; it reads as empty.
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  } catch (err) {
    if (isErrno(err, "ENOENT")) return { records: [], end: offset };
    throw err;
  }
  try {
    const size = fs.fstatSync(fd).size;
    if (size <= offset) return { records: [], end: offset };
    const buf = Buffer.allocUnsafe(size - offset);
    let got = 0;
    while (got < buf.length) {
      const n = fs.readSync(fd, buf, got, buf.length - got, offset + got);
      if (n === 0) break;
      got += n;
    }
    const lastNewline = got === 0 ? -1 : buf.lastIndexOf(10, got - 1);
    if (lastNewline < 0) return { records: [], end: offset };
    return { records: parseLedgerText(buf.toString("utf8", 0, lastNewline)), end: offset + lastNewline + 1 };
  } finally {
    fs.closeSync(fd);
  }
}
