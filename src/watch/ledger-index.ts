// What prepare published, by name, as the guard needs it: the ledger's day
// files followed incrementally (only lines appended since the last read are
// parsed), so a refresh before every quarantine costs a few stat calls.
import fs from "node:fs";
import { ledgerDays, readLedgerDayFrom } from "../state/ledger.js";

export interface PublishedBytes {
  bytes: number;
  sha256: string;
}

interface DayCursor {
  ino: number;
  end: number;
}

export class LedgerIndex {
  private byName = new Map<string, PublishedBytes[]>();
  private cursors = new Map<string, DayCursor>();

  constructor(private readonly ledgerDir: string) {}

  /** Every version of `name` the ledger records; a name may be reused after the janitor removed it. */
  lookup(name: string): readonly PublishedBytes[] | undefined {
    return this.byName.get(name);
  }

  get size(): number {
    return this.byName.size;
  }

  /** Reads what was appended since the last refresh; starts over when a day file was removed or replaced. */
  refresh(): void {
    const days = ledgerDays(this.ledgerDir);
    const present = new Set(days.map((d) => d.path));
    // The janitor drops whole old days: forget them, so the index does not
    // outgrow the ledger.
    if ([...this.cursors.keys()].some((p) => !present.has(p))) this.reset();
    for (const day of days) {
      let st: fs.Stats;
      try {
        st = fs.statSync(day.path);
      } catch {
        continue;
      }
      let cursor = this.cursors.get(day.path);
      if (cursor && (cursor.ino !== st.ino || st.size < cursor.end)) {
        this.reset();
        this.refresh();
        return;
      }
      cursor ??= { ino: st.ino, end: 0 };
      this.cursors.set(day.path, cursor);
      if (st.size === cursor.end) continue;
      const { records, end } = readLedgerDayFrom(day.path, cursor.end);
      cursor.end = end;
      for (const rec of records) this.add(rec.name, { bytes: rec.bytes, sha256: rec.sha256 });
    }
  }

  private add(name: string, version: PublishedBytes): void {
    const list = this.byName.get(name);
    if (!list) this.byName.set(name, [version]);
    else if (!list.some((v) => v.sha256 === version.sha256 && v.bytes === version.bytes)) list.push(version);
  }

  private reset(): void {
    this.byName = new Map();
    this.cursors = new Map();
  }
}
