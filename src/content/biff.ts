// The text of an Excel 97-2003 workbook (a compound file's Workbook or Book
// stream, BIFF8 records: a type and a length, then at most 8224 bytes of
// data, [MS-XLS] 2.1.4). A record's data that does not fit goes on in
// CONTINUE records, and a string cut there is cut twice: by the next
// record's 4-byte header and, when the cut falls inside its characters, by a
// flags byte that may switch the characters after it between 8 bits and
// UTF-16LE (2.4.58). The scan of the stream's bytes sees such a string as
// two pieces; read here, it is whole: the shared strings (SST: every text
// cell's string, so past one record in a workbook of a few hundred cells of
// text), a formula's string result (STRING), a text box's or comment's text
// (TXO, cchText at its byte 10, the text in the CONTINUE records after it,
// 2.4.329).
//
// One pass over the records, each CONTINUE record read at most twice (by
// the walk and by the string it continues); nothing the file declares sizes
// an allocation (the string counts, a cch or cbExtRst past the data): what
// the data does not hold ends the text there.
import type { InspectContext } from "./inspect.js";

const BOF = 0x0809;
const CONTINUE = 0x003c;
const SST = 0x00fc;
const STRING = 0x0207;
const TXO = 0x01b6;
/** A BOF record's version for BIFF8 (Excel 97 to 2003); earlier ones lay STRING and TXO out otherwise. */
const BIFF8 = 0x0600;

/** A string's flags ([MS-XLS] 2.5.293): its characters in UTF-16 (else 8 bits each), formatting runs, phonetic data follow. */
const HIGH_BYTE = 0x01;
const EXT_ST = 0x04;
const RICH_ST = 0x08;

/** A record's data and the CONTINUE records' after it, read as one run of bytes, a piece (one record's data) at a time. */
class Continued {
  /** The current piece: bytes [at, end) of the stream. */
  private at: number;
  private end: number;

  constructor(
    private readonly b: Buffer,
    dataAt: number,
    end: number,
  ) {
    this.at = dataAt;
    this.end = end;
  }

  get leftInPiece(): number {
    return this.end - this.at;
  }

  /** Moves to the next record's data when it is a CONTINUE's: false at any other record or the stream's end. */
  nextPiece(): boolean {
    const head = this.end;
    if (head + 4 > this.b.length || this.b.readUInt16LE(head) !== CONTINUE) return false;
    this.at = head + 4;
    this.end = Math.min(this.b.length, this.at + this.b.readUInt16LE(head + 2));
    return true;
  }

  /** Whether a byte is left, in this piece or a next one. */
  hasMore(): boolean {
    while (this.at >= this.end) if (!this.nextPiece()) return false;
    return true;
  }

  /** The next byte, across pieces as plain data (a header, runs); -1 past the last piece. */
  byte(): number {
    return this.hasMore() ? this.b[this.at++]! : -1;
  }

  /** A little-endian field of `bytes` bytes; -1 past the last piece. */
  uint(bytes: number): number {
    let value = 0;
    for (let i = 0; i < bytes; i++) {
      const byte = this.byte();
      if (byte < 0) return -1;
      value += byte * 2 ** (8 * i);
    }
    return value;
  }

  /** Skips `n` bytes across pieces; false when the data ends first. */
  skip(n: number): boolean {
    while (n > 0) {
      if (this.at >= this.end && !this.nextPiece()) return false;
      const k = Math.min(n, this.end - this.at);
      this.at += k;
      n -= k;
    }
    return true;
  }

  /**
   * Appends `count` characters to `text`, each narrowed to a byte as the
   * scans read UTF-16 (a code unit past U+00FF reads as 0x80), the first in
   * UTF-16 when `high`: where a piece ends before them, the next piece opens
   * with a flags byte that says the width of the characters after it. False
   * when the data ends first (what it held is appended).
   */
  characters(count: number, high: boolean, text: Text): boolean {
    for (let left = count; ; ) {
      const width = high ? 2 : 1;
      const n = Math.min(left, Math.floor(this.leftInPiece / width));
      text.reserve(n);
      if (high) for (let i = 0; i < n; i++, this.at += 2) text.push(this.b[this.at + 1] === 0 ? this.b[this.at]! : 0x80);
      else {
        text.copy(this.b, this.at, this.at + n);
        this.at += n;
      }
      left -= n;
      if (left === 0) return true;
      // The piece ends inside the characters (a lone byte of a UTF-16 one is dropped): the next opens with its flags.
      do if (!this.nextPiece()) return false;
      while (this.leftInPiece === 0);
      high = (this.b[this.at++]! & HIGH_BYTE) !== 0;
    }
  }
}

/** Text gathered as bytes, its buffer grown by doubling (never sized by what a file declares). */
class Text {
  private buf = Buffer.allocUnsafe(4096);
  length = 0;

  reserve(n: number): void {
    if (this.length + n <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.length + n, 2 * this.buf.length));
    this.buf.copy(grown, 0, 0, this.length);
    this.buf = grown;
  }

  push(byte: number): void {
    this.reserve(1);
    this.buf[this.length++] = byte;
  }

  copy(from: Buffer, start: number, end: number): void {
    this.reserve(end - start);
    this.length += from.copy(this.buf, this.length, start, end);
  }

  /** Ends a string: a line break between it and the next. */
  endLine(): void {
    this.push(0x0a);
  }

  get bytes(): Buffer {
    return this.buf.subarray(0, this.length);
  }
}

/**
 * A string of the SST (XLUnicodeRichExtendedString, 2.5.293) or of a
 * STRING record (XLUnicodeString, 2.5.294, `rich` false: no runs, no
 * phonetic data): cch, flags, cRun and cbExtRst when the flags say so, the
 * characters, then the runs and phonetic data, skipped (no flags byte where
 * a piece ends in them). False when the data ends first.
 */
function readString(r: Continued, text: Text, rich: boolean): boolean {
  const cch = r.uint(2);
  const flags = r.byte();
  if (flags < 0) return false;
  const runs = rich && (flags & RICH_ST) !== 0 ? r.uint(2) : 0;
  const ext = rich && (flags & EXT_ST) !== 0 ? r.uint(4) : 0;
  if (runs < 0 || ext < 0) return false;
  const whole = r.characters(cch, (flags & HIGH_BYTE) !== 0, text);
  text.endLine();
  return whole && r.skip(4 * runs + ext);
}

/** The workbook's strings as `workbookText` found them, each set of them one text. */
export interface WorkbookText {
  /** The SST's strings, one a line. */
  shared: Buffer;
  /** Formulas' string results and text boxes' text, one a line. */
  other: Buffer;
}

/** The strings of the BIFF8 workbook stream `b`, read in one pass over its records (see the top of this file). */
export function workbookText(b: Buffer): WorkbookText {
  const shared = new Text();
  const other = new Text();
  // STRING and TXO are read as BIFF8 lays them unless the first BOF says an earlier version (the SST is BIFF8's alone).
  const biff8 = !(b.length >= 6 && b.readUInt16LE(0) === BOF && b.readUInt16LE(2) >= 2 && b.readUInt16LE(4) < BIFF8);
  for (let at = 0; at + 4 <= b.length; ) {
    const type = b.readUInt16LE(at);
    const dataAt = at + 4;
    const end = Math.min(b.length, dataAt + b.readUInt16LE(at + 2));
    if (type === SST) {
      // Its counts (cstTotal, cstUnique) first: not trusted, the strings are read while the data lasts.
      const r = new Continued(b, dataAt, end);
      if (r.skip(8)) while (r.hasMore() && readString(r, shared, true));
    } else if (type === STRING && biff8) {
      readString(new Continued(b, dataAt, end), other, false);
    } else if (type === TXO && biff8 && end - dataAt >= 12) {
      // cchText at byte 10 ([MS-XLS] 2.4.329); the text in the CONTINUE records after, each opening with its flags byte.
      const cch = b.readUInt16LE(dataAt + 10);
      const r = new Continued(b, end, end);
      if (cch > 0 && r.nextPiece() && r.leftInPiece > 0) {
        const flags = r.byte();
        r.characters(cch, (flags & HIGH_BYTE) !== 0, other);
        other.endLine();
      }
    }
    at = end;
  }
  return { shared: shared.bytes, other: other.bytes };
}

/**
 * Scans the strings of a workbook stream (`name`: Workbook, or Book) as
 * text: the SST's, then the formula results' and text boxes', each a part of
 * its own (the stream's bytes are scanned as they are too).
 */
export function scanWorkbookText(name: string, b: Buffer, ctx: InspectContext): void {
  const { shared, other } = workbookText(b);
  if (shared.length > 0) ctx.scanDerivedText(`the shared strings of ${name}`, shared, false);
  if (other.length > 0) ctx.scanDerivedText(`the formula results and text boxes of ${name}`, other, false);
}
