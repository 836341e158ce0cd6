// What prepare published, by name, as the guard needs it: the ledger's day
// files followed incrementally (only lines appended since the last read are
// parsed), so a refresh before every quarantine costs a few stat calls.
// The ledger is the agent's to write in the single-user mode: nothing in it
// may stop the guard. A day file that is a link, a directory, a FIFO or
// unreadable is skipped, and so is every line that is not a well-formed
// record; each is logged once, and everything else is still read. The
// records a crash cut short are kept too (state/ledger-torn.ts: the outbox
// file such a record can only be is prepare's): a complete line's for good,
// the last line's only while it stays the day file's unfinished tail (a
// reader may see an append in progress as a cut record).
import fs from "node:fs";
import path from "node:path";
import { errnoCode } from "../core/errors.js";
import { escapeText } from "../core/escape.js";
import { type LedgerDay, LedgerFileError, type TornLine, ledgerDays, readLedgerDayFrom } from "../state/ledger.js";
import { type TornRecord, TornRecords, tornRecordOf } from "../state/ledger-torn.js";

export interface PublishedBytes {
  bytes: number;
  sha256: string;
}

interface DayCursor {
  ino: number;
  end: number;
}

/** Something in the ledger that was skipped: a whole day file, or lines of one. */
export interface LedgerProblem {
  /** The day file (escaped) or the ledger directory. */
  file: string;
  problem: string;
}

export class LedgerIndex {
  private byName = new Map<string, PublishedBytes[]>();
  private cursors = new Map<string, DayCursor>();
  /** Records a crash cut short on complete lines. */
  private torn = new TornRecords();
  /** Each day file's unfinished last line, when it is a record cut short: read again at every refresh until a newline ends it. */
  private tails = new Map<string, TornRecord>();
  private tornVersion = 0;
  /** Problems already told, so a bad day file is logged once, not at every refresh. */
  private told = new Set<string>();

  constructor(
    private readonly ledgerDir: string,
    private readonly onProblem: (p: LedgerProblem) => void = () => {},
  ) {}

  /** Every version of `name` the ledger records; a name may be reused after the janitor removed it. */
  lookup(name: string): readonly PublishedBytes[] | undefined {
    return this.byName.get(name);
  }

  get size(): number {
    return this.byName.size;
  }

  /** The records a crash cut short, as of the last refresh. */
  tornRecords(): readonly TornRecord[] {
    return this.tails.size === 0 ? this.torn.list() : [...this.torn.list(), ...this.tails.values()];
  }

  /** Changes whenever what tornRecords() returns may have changed. */
  get tornGeneration(): number {
    return this.tornVersion;
  }

  /** Reads what was appended since the last refresh; starts over when a day file was removed or replaced. Never throws. */
  refresh(): void {
    let days;
    try {
      days = ledgerDays(this.ledgerDir);
    } catch (err) {
      this.tell(this.ledgerDir, `the ledger directory cannot be read (${errnoCode(err) ?? "error"}); every entry is judged without it`);
      return;
    }
    const present = new Set(days.map((d) => d.path));
    // The janitor drops whole old days: forget them, so the index does not
    // outgrow the ledger.
    if ([...this.cursors.keys()].some((p) => !present.has(p))) this.reset();
    for (const day of days) {
      if (!this.follow(day)) {
        this.reset();
        this.refresh();
        return;
      }
    }
  }

  /** Reads one day file's new lines; false when it was replaced or shrank (start over). */
  private follow(day: LedgerDay): boolean {
    const file = day.path;
    let st: fs.Stats | undefined;
    try {
      st = fs.lstatSync(file, { throwIfNoEntry: false });
    } catch (err) {
      this.tell(file, `cannot be looked at (${errnoCode(err) ?? "error"}); skipped`);
      return true;
    }
    if (!st) return true;
    if (!st.isFile()) {
      this.cursors.delete(file);
      this.forgetTail(file);
      this.tell(file, `is ${st.isSymbolicLink() ? "a symbolic link" : st.isDirectory() ? "a directory" : "not a regular file"}; skipped (never followed)`);
      return true;
    }
    const cursor = this.cursors.get(file);
    if (cursor && (cursor.ino !== st.ino || st.size < cursor.end)) return false;
    const current = cursor ?? { ino: st.ino, end: 0 };
    if (st.size === current.end) {
      this.cursors.set(file, current);
      return true;
    }
    try {
      // The last torn line handed over is held back: it is the tail's when it starts where the complete lines end.
      let last: TornLine | undefined;
      const name = path.basename(file);
      const onTorn = (line: TornLine) => {
        if (last) this.torn.add(day.day, name, last);
        last = line;
      };
      const { end, malformed } = readLedgerDayFrom(file, current.end, (rec) => this.add(rec.name, { bytes: rec.bytes, sha256: rec.sha256 }), onTorn);
      this.forgetTail(file);
      if (last && last.at >= end) this.tails.set(file, tornRecordOf(day.day, name, last));
      else if (last) this.torn.add(day.day, name, last);
      this.tornVersion++;
      if (malformed > 0) this.tell(`${file}:${current.end}`, `${malformed} line(s) after byte ${current.end} are not well-formed records; skipped`, file);
      current.end = end;
      this.cursors.set(file, current);
    } catch (err) {
      const why = err instanceof LedgerFileError ? "is not a regular file" : `cannot be read (${errnoCode(err) ?? "error"})`;
      this.tell(file, `${why}; skipped`);
    }
    return true;
  }

  private tell(key: string, problem: string, file = key): void {
    if (this.told.has(key)) return;
    // Bounded: a ledger gaining garbage all day must not grow this without end.
    if (this.told.size >= 10_000) this.told.clear();
    this.told.add(key);
    this.onProblem({ file: escapeText(file), problem });
  }

  private add(name: string, version: PublishedBytes): void {
    const list = this.byName.get(name);
    if (!list) this.byName.set(name, [version]);
    else if (!list.some((v) => v.sha256 === version.sha256 && v.bytes === version.bytes)) list.push(version);
  }

  private forgetTail(file: string): void {
    if (this.tails.delete(file)) this.tornVersion++;
  }

  private reset(): void {
    this.byName = new Map();
    this.cursors = new Map();
    this.torn = new TornRecords();
    this.tails = new Map();
    this.tornVersion++;
  }
}
