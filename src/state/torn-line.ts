// What a crash leaves of a record in an append-only JSON-lines file of
// media-outbox's (the ledger's day files, the quarantine's journal), told
// exactly from anything else. A record is JSON.stringify of an object whose
// keys come in the writer's order, so a line a crash cut short is a proper
// prefix of that serialisation: the same keys in the same order, each value
// of its kind as JSON.stringify writes it, cut anywhere before the closing
// brace. A user's file that merely happens to sit under a day file's name
// (a journal, expenses) is not: its first key, or its order, differs.
//
// Before the torn-line repair (append-line.ts), a record appended after a
// torn line was glued onto it: `{"time":"2026-…` + `{"time":"2026-…}` on one
// line. A JSON string holds no raw `"`, so `{"time":"` occurs in a line of
// ours only where a record starts: the line is cut there, and read when every
// piece before its last is torn (gluedRecordText; past the longest record,
// LongLine reads it piece by piece, holding one piece). Every check is one
// pass over the line: linear, whatever it holds.
//
// A filesystem may also fill the end of a file a crash cut short with NUL
// bytes (ext4's delayed allocation, XFS: the size was committed, the data
// not). JSON.stringify never writes a raw NUL, so NULs that end a line are
// never part of a record: what comes before them is judged (withoutNulTail),
// and a line of NULs alone is a record whose every byte was lost.

/** How a field's value is written: an ISO time (toISOString), a JSON string, a positive integer, a sha256 in hex, a boolean. */
export type FieldKind = "time" | "string" | "count" | "sha256" | "boolean";

export interface Field {
  key: string;
  kind: FieldKind;
  /** The writer leaves it out of some records. */
  optional?: boolean;
}

/** The opening every record's line starts with: its first key, time, and the quote of its value. */
export const RECORD_OPENING = '{"time":"';

/** The input ended inside what was being matched: a prefix of it. */
const END = -1;
/** The input differs from anything the writer writes. */
const BAD = -2;

/** `text` at `i`: the index after it, END when the line ends part-way through it, BAD when it differs. */
function literal(line: string, i: number, text: string): number {
  for (let k = 0; k < text.length; k++, i++) {
    if (i >= line.length) return END;
    if (line[i] !== text[k]) return BAD;
  }
  return i;
}

const isDigit = (c: string) => c >= "0" && c <= "9";
const isHex = (c: string) => isDigit(c) || (c >= "a" && c <= "f") || (c >= "A" && c <= "F");

/** A JSON string as JSON.stringify writes it (no raw control character; `\` before one of `"\/bfnrt`, or `u` and four hex digits). */
function jsonString(line: string, i: number): number {
  if (i >= line.length) return END;
  if (line[i] !== '"') return BAD;
  for (i++; i < line.length; i++) {
    const c = line[i]!;
    if (c === '"') return i + 1;
    if (c < " ") return BAD;
    if (c !== "\\") continue;
    if (++i >= line.length) return END;
    if ('"\\/bfnrt'.includes(line[i]!)) continue;
    if (line[i] !== "u") return BAD;
    for (let k = 0; k < 4; k++) {
      if (++i >= line.length) return END;
      if (!isHex(line[i]!)) return BAD;
    }
  }
  return END;
}

/** `"YYYY-MM-DDTHH:MM:SS.mmmZ"`, its day `day` when given (a day file's records are that day's). */
function isoTime(line: string, i: number, day: string | undefined): number {
  const template = `"${day ?? "dddd-dd-dd"}Tdd:dd:dd.dddZ"`;
  for (let k = 0; k < template.length; k++, i++) {
    if (i >= line.length) return END;
    const want = template[k]!;
    if (want === "d" ? !isDigit(line[i]!) : line[i] !== want) return BAD;
  }
  return i;
}

/** A positive safe integer: its digits run until the next field or the end of the line. */
function count(line: string, i: number): number {
  if (i >= line.length) return END;
  if (line[i]! < "1" || line[i]! > "9") return BAD;
  let n = i + 1;
  while (n < line.length && isDigit(line[n]!)) n++;
  return n - i > 16 ? BAD : n;
}

function sha256(line: string, i: number): number {
  if (i >= line.length) return END;
  if (line[i] !== '"') return BAD;
  for (let k = 0; k < 64; k++) {
    if (++i >= line.length) return END;
    const c = line[i]!;
    if (!isDigit(c) && (c < "a" || c > "f")) return BAD;
  }
  return literal(line, i + 1, '"');
}

function value(line: string, i: number, kind: FieldKind, day: string | undefined): number {
  switch (kind) {
    case "time":
      return isoTime(line, i, day);
    case "string":
      return jsonString(line, i);
    case "count":
      return count(line, i);
    case "sha256":
      return sha256(line, i);
    case "boolean": {
      const t = literal(line, i, "true");
      return t === BAD ? literal(line, i, "false") : t;
    }
  }
}

/** `line` without the NUL bytes that end it (a crash's unwritten tail); the line itself when it ends in none. */
export function withoutNulTail(line: string): string {
  let end = line.length;
  while (end > 0 && line.charCodeAt(end - 1) === 0) end--;
  return end === line.length ? line : line.slice(0, end);
}

/** A field's value as far as a torn line holds it: its JSON text, and whether it is all there. */
export interface TornValue {
  text: string;
  whole: boolean;
}

/**
 * The fields a torn record of `shape` holds (their values' JSON text, keyed
 * by name; the last one maybe cut), or undefined when `line` is not a torn
 * record (isTornRecord). NULs ending the line are the crash's, not the
 * record's; a line of NULs alone is a record cut before its first byte.
 */
export function tornFields(line: string, shape: readonly Field[], day?: string): Map<string, TornValue> | undefined {
  const fields = new Map<string, TornValue>();
  const text = withoutNulTail(line);
  if (text.length === 0) return line.length > 0 ? fields : undefined;
  line = text;
  let i = literal(line, 0, "{");
  // The index in `shape` of the next field the writer may write.
  let next = 0;
  for (;;) {
    if (i === END) return fields;
    if (i === BAD) return undefined;
    if (next > 0) {
      if (i >= line.length) return fields;
      // A closing brace: whole (or not the shape), never torn.
      if (line[i] !== ",") return undefined;
      i++;
    }
    // The writer writes no comma after its last field.
    if (next >= shape.length) return undefined;
    // The key: the next field, or a later one when every field between is optional.
    let found = BAD;
    let field = -1;
    for (let j = next; j < shape.length; j++) {
      const at = literal(line, i, `"${shape[j]!.key}":`);
      if (at === END) return fields;
      if (at !== BAD) {
        found = at;
        field = j;
        break;
      }
      if (!shape[j]!.optional) break;
    }
    if (found === BAD) return undefined;
    const { key, kind } = shape[field]!;
    i = value(line, found, kind, day);
    if (i === BAD) return undefined;
    // A count's digits run to the end of the line: whole only when the next field's comma follows.
    const whole = i !== END && (kind !== "count" || i < line.length);
    fields.set(key, { text: line.slice(found, i === END ? line.length : i), whole });
    next = field + 1;
  }
}

/**
 * Whether `line` (without its newline) is a record of `shape` that a crash
 * cut short: a proper prefix of how the writer serialises one (a `day`
 * file's records hold times of that day), non-empty or ended by NULs. A
 * whole record is not torn, nor is anything with a byte the writer would not
 * have written there.
 */
export function isTornRecord(line: string, shape: readonly Field[], day?: string): boolean {
  return tornFields(line, shape, day) !== undefined;
}

/**
 * The record a complete line of a file of `shape`'s records holds, read as
 * every such file of ours is read (the ledger's day files, the quarantine's
 * journal): NULs that end it are a crash's (a whole record whose newline was
 * lost to them: the next append starts a line of its own after them), and a
 * line glued before the torn-line repair is read for its last record
 * (gluedRecordText). `parse` says what a record's text is, or undefined.
 */
export function recordOfLine<T>(line: string, shape: readonly Field[], parse: (text: string) => T | undefined, day?: string): T | undefined {
  const text = withoutNulTail(line);
  const rec = parse(text);
  if (rec !== undefined) return rec;
  const glued = gluedRecordText(text, shape, day);
  return glued === undefined ? undefined : parse(glued);
}

/**
 * The text of the last record in a line glued before the torn-line repair
 * (`{torn…}{torn…}{record}`): what follows the line's last RECORD_OPENING,
 * when every piece before it is a torn record of `shape`; undefined for any
 * other line. The caller parses it as it parses a line.
 */
export function gluedRecordText(line: string, shape: readonly Field[], day?: string): string | undefined {
  const last = line.lastIndexOf(RECORD_OPENING);
  if (last <= 0) return undefined;
  let from = 0;
  for (let at = line.indexOf(RECORD_OPENING, 1); ; at = line.indexOf(RECORD_OPENING, at + 1)) {
    if (!isTornRecord(line.slice(from, at), shape, day)) return undefined;
    if (at === last) return line.slice(last);
    from = at;
  }
}

const OPENING_BYTES = Buffer.from(RECORD_OPENING);
const NONE = Buffer.alloc(0);

/**
 * A line too long to be held whole (over `max` bytes, the most a record can
 * be), read in bounded memory and one pass. It can be a line of ours only as
 * one glued before the torn-line repair (records a crash cut short, then
 * one more, each within `max`), so it is cut where each record starts
 * (RECORD_OPENING) and each piece is judged as it ends: only the piece being
 * read is held, and a piece over `max` (or one before the last that is not a
 * torn record of `shape`) makes the line none of ours. NULs that end a piece
 * are a crash's, counted, not held: NULs followed by more in the same piece
 * are never ours either.
 */
export class LongLine {
  private readonly piece: Buffer;
  /** Bytes of the current piece held, and how many NULs follow them. */
  private held = 0;
  private nuls = 0;
  /** The start of an opening that ended the last feed (its `{` and up to 7 bytes after), not yet held: the next feed may complete it. */
  private carry: Buffer = NONE;
  /** Pieces judged torn before the current one. */
  private cut = 0;
  /** Bytes of the line fed so far. */
  private fed = 0;
  private bad = false;

  constructor(
    private readonly shape: readonly Field[],
    private readonly day: string | undefined,
    private readonly max: number,
  ) {
    this.piece = Buffer.allocUnsafe(max);
  }

  /** The next bytes of the line (never a newline). */
  feed(bytes: Buffer): void {
    if (this.bad || bytes.length === 0) return;
    let search = 0;
    if (this.carry.length > 0) {
      const have = this.carry.length;
      const take = Math.min(OPENING_BYTES.length - have, bytes.length);
      const continues = bytes.subarray(0, take).equals(OPENING_BYTES.subarray(have, have + take));
      if (continues && have + take < OPENING_BYTES.length) {
        this.carry = Buffer.concat([this.carry, bytes]);
        this.fed += bytes.length;
        return;
      }
      // Completed, an opening ends the piece before it (unless it starts the line); else the carry was only bytes.
      if (continues && this.fed - have > 0) this.endPiece();
      this.hold(this.carry);
      this.carry = NONE;
      if (continues) search = take;
    }
    let from = 0;
    for (let at = bytes.indexOf(OPENING_BYTES, search); at >= 0; at = bytes.indexOf(OPENING_BYTES, at + 1)) {
      // An opening at the line's very start begins its first piece.
      if (this.fed + at === 0) continue;
      this.hold(bytes.subarray(from, at));
      this.endPiece();
      from = at;
    }
    const carried = openingStartEnding(bytes, from);
    this.hold(bytes.subarray(from, bytes.length - carried));
    if (carried > 0) this.carry = Buffer.from(bytes.subarray(bytes.length - carried));
    this.fed += bytes.length;
  }

  /**
   * The line as a short one would read the same, or undefined when it cannot
   * be a line of ours: its pieces before the last (all torn) stand as `{`, a
   * record a crash cut to its first byte, and NULs that end it as one NUL.
   */
  line(): string | undefined {
    this.hold(this.carry);
    this.carry = NONE;
    if (this.bad) return undefined;
    const last = this.piece.toString("utf8", 0, this.held) + (this.nuls > 0 ? "\0" : "");
    return this.cut > 0 ? `{${last}` : last;
  }

  /** Adds bytes to the current piece: NULs ending them are counted; anything after NULs, or past `max`, makes the line none of ours. */
  private hold(bytes: Buffer): void {
    if (this.bad || bytes.length === 0) return;
    let end = bytes.length;
    while (end > 0 && bytes[end - 1] === 0) end--;
    if ((end > 0 && this.nuls > 0) || this.held + end > this.max) {
      this.bad = true;
      return;
    }
    bytes.copy(this.piece, this.held, 0, end);
    this.held += end;
    this.nuls += bytes.length - end;
  }

  /** Judges the piece held (a torn record, or the line is none of ours); the next starts empty. */
  private endPiece(): void {
    if (this.bad) return;
    const text = this.piece.toString("utf8", 0, this.held) + (this.nuls > 0 ? "\0" : "");
    if (!isTornRecord(text, this.shape, this.day)) this.bad = true;
    this.cut++;
    this.held = 0;
    this.nuls = 0;
  }
}

/** How many bytes ending `bytes` (from `from` on) start an opening without completing it: the opening's `{` is its only one, so they are its `{` and up to 7 bytes after. */
function openingStartEnding(bytes: Buffer, from: number): number {
  const start = Math.max(from, bytes.length - (OPENING_BYTES.length - 1));
  const inTail = bytes.subarray(start).lastIndexOf(OPENING_BYTES[0]!);
  if (inTail < 0) return 0;
  const brace = start + inTail;
  const have = bytes.length - brace;
  return bytes.subarray(brace).equals(OPENING_BYTES.subarray(0, have)) ? have : 0;
}
