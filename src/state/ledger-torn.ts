// Which outbox file a ledger record that a crash cut short belongs to: the
// one rule the janitor (which ages such a file by its own mtime) and the
// watch guard (which keeps it) both judge by. prepare appends a file's record
// right before the link that publishes it, both with the file's mtime as its
// time: a crash (power lost, ext4's delayed allocation, XFS) can keep the
// link and lose the record's end, even all of it but `{`.
import type { TornLine } from "./ledger.js";
import type { TornValue } from "./torn-line.js";

/** A record a crash cut short, as far as an outbox file can be told by it: its day file's day, and the fields prepare writes that the file shows (its mtime is the record's time). */
export interface TornRecord {
  day: string;
  /** The day file it is in (its name), and where its line starts. */
  file: string;
  at: number;
  time: TornValue | undefined;
  bytes: TornValue | undefined;
  /** What it holds of the published bytes' sha256 (the guard hashes; the janitor does not). */
  sha256: TornValue | undefined;
  name: TornValue | undefined;
}

/** An outbox file as a torn record is matched against it. */
export interface OutboxFile {
  name: string;
  size: number;
  mtimeMs: number;
}

/** At most this many distinct torn records are kept (a crash leaves a few; past it, an outbox file they would account for is not accounted for), and at most this many files looked through where several share a time. */
export const MAX_TORN_SEEN = 10_000;
/** A name's JSON text longer than this is no file name (255 bytes, at most 6 characters each): kept cut, which fits nothing whole. */
const MAX_TORN_NAME = 2048;

/** An mtime as the record's time field is written (prepare sets one from the other; the filesystem may store it a hair off the millisecond). */
export const mtimeText = (mtimeMs: number) => new Date(Math.round(mtimeMs)).toISOString();

/** The torn record a line of the day file `file` (its name) of `day` holds (readLedgerDayFrom's eachTorn). */
export function tornRecordOf(day: string, file: string, line: TornLine): TornRecord {
  let name = line.fields.get("name");
  if (name && name.text.length > MAX_TORN_NAME) name = { text: name.text.slice(0, MAX_TORN_NAME), whole: false };
  return { day, file, at: line.at, time: line.fields.get("time"), bytes: line.fields.get("bytes"), sha256: line.fields.get("sha256"), name };
}

const whatItHolds = (record: TornRecord) => [record.day, record.time, record.bytes, record.sha256, record.name];

/** Names one torn record, at its place: equal ones elsewhere are others. */
export const tornRecordKey = (record: TornRecord) => JSON.stringify([record.file, record.at, ...whatItHolds(record)]);

/**
 * The distinct torn records of the ledger, bounded: equal ones say the same
 * and count once (a flood of `{` lines is one record), and past MAX_TORN_SEEN
 * no more are kept.
 */
export class TornRecords {
  private readonly byKey = new Map<string, TornRecord>();

  /** Adds what a reading of the day file `file` (its name) of `day` handed over (readLedgerDayFrom's eachTorn). */
  add(day: string, file: string, line: TornLine): void {
    if (this.byKey.size >= MAX_TORN_SEEN) return;
    const record = tornRecordOf(day, file, line);
    const key = JSON.stringify(whatItHolds(record));
    if (!this.byKey.has(key)) this.byKey.set(key, record);
  }

  get size(): number {
    return this.byKey.size;
  }

  list(): TornRecord[] {
    return [...this.byKey.values()];
  }
}

/** Whether a torn field's text fits the value the file shows: equal when whole, its beginning when cut (a character cut inside its UTF-8 bytes decodes as U+FFFD: left out). */
function fitsValue(torn: TornValue | undefined, full: string): boolean {
  if (torn === undefined) return true;
  if (torn.whole) return torn.text === full;
  const text = torn.text.endsWith("\uFFFD") ? torn.text.slice(0, -1) : torn.text;
  return full.startsWith(text);
}

/** Whether what a torn record holds of its sha256 is the start of `sha256` (hex): the guard's check of the bytes it hashed. */
export function tornHashFits(record: TornRecord, sha256: string): boolean {
  return fitsValue(record.sha256, `"${sha256}"`);
}

/**
 * The outbox files no whole record names (`unnamed`) that a record a crash
 * cut short accounts for, each with the record. Such a record fits a file
 * when its day is the file's mtime's UTC day and every field it holds, as
 * far as it goes, is what the file shows (`time` its mtime, `bytes` its
 * size, `name` its name); it accounts for the file when it fits that file
 * and no other: two files that fit are both not accounted for (`twoFit`),
 * the record cannot say which is prepare's (it is `ambiguous`). Candidates are found by the
 * time's text, a range of the files sorted by mtime; looking through ranges
 * of more than one stops after MAX_TORN_SEEN files in all (a range not
 * looked through accounts for nothing): n log n, whatever the ledger holds.
 */
export function orphansOfTornRecords<F extends OutboxFile>(
  unnamed: readonly F[],
  torn: readonly TornRecord[],
): { orphans: Map<F, TornRecord>; twoFit: Set<F>; ambiguous: Set<TornRecord> } {
  const found = new Map<F, TornRecord>();
  // Files a record fits along with another (said in their reason); marking stops after a bound, so the work stays n log n.
  const twoFit = new Set<F>();
  const ambiguous = new Set<TornRecord>();
  let marks = 0;
  if (unnamed.length === 0 || torn.length === 0) return { orphans: found, twoFit, ambiguous };
  // By time, then name: which files a bounded look sees does not depend on the directory's order.
  const order = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  const byTime = unnamed.map((seen) => ({ seen, time: `"${mtimeText(seen.mtimeMs)}"` })).sort((a, b) => order(a.time, b.time) || order(a.seen.name, b.seen.name));
  const byName = new Map(unnamed.map((seen) => [JSON.stringify(seen.name), seen]));
  // The record's time is of its day file's day (torn-line.ts checked it), so a fitting time is too.
  const fits = (t: TornRecord, seen: F, time: string) => fitsValue(t.time, time) && fitsValue(t.bytes, String(seen.size)) && fitsValue(t.name, JSON.stringify(seen.name));
  for (const t of torn) {
    let one: F | undefined;
    if (t.name?.whole) {
      // A whole name: that file, or none.
      const seen = byName.get(t.name.text);
      if (seen !== undefined && fits(t, seen, `"${mtimeText(seen.mtimeMs)}"`)) one = seen;
    } else {
      // The files whose mtime's text starts with what the record holds of its time (its day at least).
      // Cut before its day ends, the time says no more than its day file's name (torn-line.ts checks the one against the other).
      const time = t.time === undefined ? "" : t.time.whole ? t.time.text : t.time.text.replace(/\uFFFD$/, "");
      const prefix = time.length > t.day.length + 1 ? time : `"${t.day}`;
      let lo = 0;
      let hi = byTime.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (byTime[mid]!.time < prefix) lo = mid + 1;
        else hi = mid;
      }
      const first = byTime[lo];
      const second = byTime[lo + 1];
      if (second !== undefined && second.time.startsWith(prefix)) {
        // Several files in the range: the fields after the time (a size, a name's start) may tell them apart.
        const fitting = [];
        let k = lo;
        for (; k < byTime.length && marks < MAX_TORN_SEEN && byTime[k]!.time.startsWith(prefix); k++, marks++) {
          if (fits(t, byTime[k]!.seen, byTime[k]!.time)) fitting.push(byTime[k]!.seen);
        }
        const wholeRange = k === byTime.length || !byTime[k]!.time.startsWith(prefix);
        if (fitting.length > 1) {
          ambiguous.add(t);
          for (const seen of fitting) twoFit.add(seen);
        }
        else if (fitting.length === 1 && wholeRange) one = fitting[0];
      } else if (first !== undefined && first.time.startsWith(prefix) && fits(t, first.seen, first.time)) one = first.seen;
    }
    if (one !== undefined && !found.has(one)) found.set(one, t);
  }
  // A file one record accounts for is that record's, whatever another could be.
  for (const seen of found.keys()) twoFit.delete(seen);
  return { orphans: found, twoFit, ambiguous };
}
