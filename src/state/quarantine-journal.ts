// The quarantine's journal: one JSON line per move into the quarantine (and
// per restore), kept inside it under JOURNAL_NAME. `quarantine list` reads
// the reasons from it, and the janitor the names it may delete: an entry the
// guard did not move there is not media-outbox's to remove.
import fs from "node:fs";
import path from "node:path";
import type { RefusalCode } from "../core/errors.js";
import { isErrno } from "../core/errors.js";
import { JOURNAL_NAME } from "./layout.js";
import { type Field, recordOfLine } from "./torn-line.js";

/** Why the guard moved an entry: stable, documented, safe to match on. */
export type QuarantineReason =
  | "not_in_ledger"
  | "size_mismatch"
  | "sha256_mismatch"
  | "content_refused"
  | "name_not_utf8"
  | "name_refused"
  | "name_not_prepared"
  | "extension_not_allowed"
  | "too_large"
  | "hard_links"
  | "symlink"
  | "directory"
  | "fifo"
  | "socket"
  | "device";

export interface JournalRecord {
  time: string;
  event: "quarantined" | "restored";
  /** The name in the quarantine, escaped. */
  name: string;
  /** The name it had in the outbox, escaped (bytes that are not UTF-8 as \xNN). */
  original?: string;
  reason?: QuarantineReason;
  /** For content_refused and the name, extension and hard-link reasons: prepare's reason code (when it has one) and message. */
  code?: RefusalCode;
  message?: string;
}

/** A record as the guard writes it (watch/quarantine.ts: a move's, or a restore's three first fields): what a torn line of the journal is a prefix of. */
const JOURNAL_FIELDS: { [K in keyof JournalRecord]-?: Omit<Field, "key"> } = {
  // Every field of JournalRecord, in this order (a new one does not compile until it has its place: appendJournal writes only these).
  time: { kind: "time" },
  event: { kind: "string" },
  name: { kind: "string" },
  original: { kind: "string", optional: true },
  reason: { kind: "string", optional: true },
  code: { kind: "string", optional: true },
  message: { kind: "string", optional: true },
};
export const JOURNAL_SHAPE: readonly Field[] = Object.entries(JOURNAL_FIELDS).map(([key, f]) => ({ key, ...f }));

/**
 * The record a line holds, read as the ledger's are (torn-line.ts
 * recordOfLine): the line itself, or the whole record a crash's NULs follow
 * (a filesystem that committed the journal's size before its data), or, on
 * a line glued before the torn-line repair, the record after the torn ones.
 */
function parseJournalLine(line: string): JournalRecord | undefined {
  return recordOfLine(line, JOURNAL_SHAPE, journalRecordOf);
}

function journalRecordOf(text: string): JournalRecord | undefined {
  try {
    const rec = JSON.parse(text) as JournalRecord | null;
    return rec !== null && typeof rec === "object" && typeof rec.name === "string" ? rec : undefined;
  } catch {
    return undefined;
  }
}

/** The journal's latest record for each entry name (escaped, as written); empty when there is no journal. */
export function readJournal(quarantineDir: string): Map<string, JournalRecord> {
  const latest = new Map<string, JournalRecord>();
  let text = "";
  const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK } = fs.constants;
  try {
    const fd = fs.openSync(path.join(quarantineDir, JOURNAL_NAME), O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
    try {
      if (fs.fstatSync(fd).isFile()) text = fs.readFileSync(fd, "utf8");
    } finally {
      fs.closeSync(fd);
    }
  } catch (err) {
    if (!isErrno(err, "ENOENT", "ELOOP")) throw err;
  }
  for (const line of text.split("\n")) {
    if (line === "") continue;
    // A torn line names nothing; nor do NULs alone (a record of which a crash left nothing).
    const rec = parseJournalLine(line);
    if (rec) latest.set(rec.name, rec);
  }
  return latest;
}


/**
 * The entries (escaped names) the guard moved into the quarantine and that
 * are still its: their latest journal record is a move, not a restore.
 */
export function quarantinedNames(quarantineDir: string): Set<string> {
  const names = new Set<string>();
  for (const [name, rec] of readJournal(quarantineDir)) if (rec.event === "quarantined") names.add(name);
  return names;
}
