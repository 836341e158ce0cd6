// Forms in which a copy-paste or a common tool writes a key so that neither
// the rules nor the host's known values match its bytes, and the second
// reading that undoes them (scan.ts reads a window so only where find.ts's
// passes saw the form, and only when the first reading found nothing):
// - zero-width characters and soft hyphens inside it (a copy from a web page
//   or a PDF: U+200B, U+200C, U+200D, U+2060, U+FEFF, U+00AD), and every
//   other invisible character (Unicode's default-ignorable code points:
//   bidi marks, variation selectors, tag characters), removed;
// - Markdown's backslash escapes (`ghp\_…`, `sk\-ant\-…`, as turndown and
//   markdownify write `_`, and their other punctuation), the backslash
//   before ASCII punctuation removed;
// - quoted-printable text (an e-mail saved as text: `=3D` for `=`, a soft
//   line break `=` at the end of every 76-column line), decoded;
// - a terminal's escape sequences inside it (`grep --color` highlights the
//   part that matched: `ghp_ESC[m ESC[KQ7mZ…`; `script`, a CI log, `tmux
//   capture-pane -e`), removed as a terminal hides them (terminal-escapes.ts
//   says what a sequence is), and so are those whose ESC is written as text
//   (`\u001b[m\u001b[K` of a JSON log: written-escapes.ts);
// - a shell's line continuation inside it (a wrapped `git clone
//   https://ghp_…\`, a Dockerfile's `RUN` line: a backslash, a line break
//   and the indent after it, which bash joins into one word), removed as a
//   line break inside a wrapped key is passed over;
// - since recall pass 34, `\x00` written after each of its characters
//   (Python's bytes repr of UTF-16 text: `open(p, 'rb').read()` of a
//   Windows "Unicode" export, `g\x00h\x00p\x00_\x00…`), removed, as the
//   UTF-16 reading (utf16.ts) narrows the bytes themselves.
// One byte loop over the window; each byte's offset in the window is kept,
// so that a finding names the byte of the file it starts at.

import { CSI_8BIT, ESC, STRING_8BIT, sequenceLength } from "./terminal-escapes.js";
import { writtenSequenceLength } from "./written-escapes.js";

/**
 * How a finding in a key cut by line breaks says so: the host's values are
 * compared across them (known.ts), the rules' vendor keys read joined at
 * their triggers (find.ts); neither needs a second reading.
 */
export const WRAPPED_WHAT = "with line breaks removed";

/** The forms, as bits: find.ts reports the ones it saw, the reading undoes them. */
export const Form = { ZeroWidth: 1, Escaped: 2, QuotedPrintable: 4, TerminalEscapes: 8, HexDump: 16, LineContinuation: 32, WrittenNuls: 64 } as const;
/** The forms undoForms undoes: a hex dump (Form.HexDump, seen by find.ts's colon pass) is read by hex-dumps.ts. */
export const UNDONE_FORMS = Form.ZeroWidth | Form.Escaped | Form.QuotedPrintable | Form.TerminalEscapes | Form.LineContinuation | Form.WrittenNuls;

/** How a finding of the second reading says the value was written, e.g. `…, with zero-width characters removed`. */
export function formsWhat(forms: number): string {
  const how: string[] = [];
  if (forms & Form.ZeroWidth) how.push("with zero-width characters or soft hyphens removed");
  if (forms & Form.Escaped) how.push("with Markdown's backslash escapes removed");
  if (forms & Form.QuotedPrintable) how.push("decoded from quoted-printable");
  if (forms & Form.TerminalEscapes) how.push("with terminal escape sequences removed");
  if (forms & Form.LineContinuation) how.push("with backslash line continuations removed");
  if (forms & Form.WrittenNuls) how.push("read as UTF-16 with its written \\x00 bytes removed");
  return how.join(", ");
}

/** ASCII punctuation: what a backslash escapes in Markdown (CommonMark: any of it). */
export const ASCII_PUNCTUATION = new Uint8Array(256);
for (const ch of "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~") ASCII_PUNCTUATION[ch.charCodeAt(0)] = 1;
/** Characters of a key: letters, digits and a token's punctuation (what a zero-width character or a line break inside a key lies between). */
export const KEY_CHAR = new Uint8Array(256);
for (const ch of "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.+/=:~") KEY_CHAR[ch.charCodeAt(0)] = 1;
/** Blanks, tabs and quote marks after a line break inside a wrapped key (an indent, `> `): at most this many. */
export const MAX_WRAP_INDENT = 16;
/** Whether `c` may follow a line break inside a wrapped key: an indent's blank or tab, a quote's `>`. */
export const isWrapIndent = (c: number) => c === 32 || c === 9 || c === 62;

/** Hex digits' values (-1: not one); quoted-printable writes capitals, decoders take both. */
const HEX_VALUE = new Int8Array(256).fill(-1);
for (let d = 0; d < 16; d++) {
  HEX_VALUE["0123456789ABCDEF".charCodeAt(d)] = d;
  HEX_VALUE["0123456789abcdef".charCodeAt(d)] = d;
}

/** A window read with its forms undone. */
export interface Undone {
  /** The bytes, followed by at least `padding` zero bytes (a view of a buffer reused by the next call). */
  bytes: Buffer;
  length: number;
  /** Where the window's `from` and `before` fall in them. */
  from: number;
  before: number;
}

/** A reading written a piece at a time (a dump's lines, encoded runs): where each piece starts in the result and in the window. */
export interface PieceReading extends Undone {
  outStarts: number[];
  windowStarts: number[];
}

/** The piece of `reading` that wrote its byte at `index` (a binary search: pieces are written in order). */
export function pieceAt(reading: PieceReading, index: number): number {
  let lo = 0;
  let hi = reading.outStarts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (reading.outStarts[mid]! <= index) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

let out = Buffer.alloc(0);
let o = 0;
/** The index of undoForms' result whose window offset undoSpan notes (in `found`); -1: none. */
let target = -1;
let found = -1;

/**
 * `window` (its first `length` bytes, followed by zero bytes) with `forms`
 * undone; `from` and `before` are where its judged part starts and ends.
 */
export function undoForms(window: Uint8Array, length: number, forms: number, from: number, before: number, padding: number): Undone {
  if (out.length < length + padding) out = Buffer.alloc(length + padding);
  o = 0;
  // In three spans, so that where `from` and `before` fall is known without a test per byte.
  let i = undoSpan(window, 0, from, forms);
  const uFrom = o;
  i = undoSpan(window, i, before, forms);
  const uBefore = o;
  undoSpan(window, i, length, forms);
  out.fill(0, o, o + padding);
  return { bytes: out.subarray(0, o + padding), length: o, from: uFrom, before: uBefore };
}

/**
 * The window's offset of the byte undoForms wrote at `index` of its
 * result (an escape's or a code's: of its first byte), found by undoing
 * the window once more: asked only for a finding, so that the reading of
 * every window keeps no offset per byte.
 */
export function windowOffset(window: Uint8Array, length: number, forms: number, index: number): number {
  o = 0;
  target = index;
  found = -1;
  undoSpan(window, 0, length, forms);
  target = -1;
  return found;
}

/** Copies window[i, end) to `out` with the forms undone; returns where it stopped (a sequence that starts before `end` is taken whole). */
function undoSpan(w: Uint8Array, i: number, end: number, forms: number): number {
  const zeroWidth = (forms & Form.ZeroWidth) !== 0;
  const escaped = (forms & Form.Escaped) !== 0;
  const qp = (forms & Form.QuotedPrintable) !== 0;
  const terminal = (forms & Form.TerminalEscapes) !== 0;
  const continued = (forms & Form.LineContinuation) !== 0;
  const nuls = (forms & Form.WrittenNuls) !== 0;
  const dst = out;
  const want = target;
  let p = o;
  while (i < end) {
    const c = w[i]!;
    // Before the zero-width test: C2 9B and C2 9D (the 8-bit CSI and OSC in UTF-8; C2 90, 98, 9E, 9F the other control strings) start as a soft hyphen does.
    if (terminal && (c === ESC || c === CSI_8BIT || STRING_8BIT[c] !== 0 || c === 0xc2 || c === 92 || c === 0x5e)) {
      // A backslash or a caret: an ESC written as text (`\u001b[m`, `^[[m`: written-escapes.ts).
      const n = c === 92 || c === 0x5e ? writtenSequenceLength(w, i) : sequenceLength(w, i);
      if (n > 0) {
        i += n;
        continue;
      }
    }
    if (c === 92 && nuls && w[i + 1] === 120 && w[i + 2] === 48 && w[i + 3] === 48) {
      i += 4;
      continue;
    }
    if (c >= 0x80 && zeroWidth) {
      const n = zeroWidthLength(w, i);
      if (n > 0) {
        i += n;
        continue;
      }
    } else if (c === 92 && continued && (w[i + 1] === 10 || w[i + 1] === 13)) {
      const n = continuationLength(w, i);
      if (n > 0) {
        i += n;
        continue;
      }
    } else if (c === 92 && escaped && ASCII_PUNCTUATION[w[i + 1]!] === 1) {
      if (p === want) found = i;
      dst[p++] = w[i + 1]!;
      i += 2;
      continue;
    } else if (c === 61 && qp) {
      const next = w[i + 1]!;
      if (next === 10 || (next === 13 && w[i + 2] === 10)) {
        i += next === 10 ? 2 : 3;
        continue;
      }
      const high = HEX_VALUE[next]!;
      const low = HEX_VALUE[w[i + 2]!]!;
      if (high >= 0 && low >= 0) {
        if (p === want) found = i;
        dst[p++] = (high << 4) | low;
        i += 3;
        continue;
      }
    }
    if (p === want) found = i;
    dst[p++] = c;
    i++;
  }
  o = p;
  return i;
}

/**
 * The length of the invisible character (UTF-8) at `i`, or 0: every
 * Default_Ignorable_Code_Point of Unicode 17 (DerivedCoreProperties.txt,
 * as V8's `\p{Default_Ignorable_Code_Point}` lists it): the zero-width
 * characters and the soft hyphen, and since red-team pass 33 the bidi marks
 * and controls (U+200E/F, U+061C, U+202A-E, U+2066-9: RTL chat clients and
 * web pages put them around LTR text), the variation selectors (U+180B-F,
 * U+FE00-F, U+E0100-E01EF), CGJ U+034F, the invisible operators U+2061-4,
 * U+180E, the Hangul fillers (U+115F, U+1160, U+3164, U+FFA0), U+17B4/5,
 * U+1BCA0-3, U+1D173-A, the tag characters (U+E0000-E0FFF) and the
 * unassigned ones among them.
 */
export function zeroWidthLength(w: Uint8Array, i: number): number {
  const c1 = w[i + 1]!;
  const c2 = w[i + 2]!;
  switch (w[i]) {
    case 0xc2: // U+00AD
      return c1 === 0xad ? 2 : 0;
    case 0xcd: // U+034F
      return c1 === 0x8f ? 2 : 0;
    case 0xd8: // U+061C
      return c1 === 0x9c ? 2 : 0;
    case 0xe1: // U+115F-1160, U+17B4-17B5, U+180B-180F
      return (c1 === 0x85 && (c2 === 0x9f || c2 === 0xa0)) || (c1 === 0x9e && (c2 === 0xb4 || c2 === 0xb5)) || (c1 === 0xa0 && c2 >= 0x8b && c2 <= 0x8f) ? 3 : 0;
    case 0xe2: // U+200B-200F, U+202A-202E, U+2060-206F
      return (c1 === 0x80 && ((c2 >= 0x8b && c2 <= 0x8f) || (c2 >= 0xaa && c2 <= 0xae))) || (c1 === 0x81 && c2 >= 0xa0 && c2 <= 0xaf) ? 3 : 0;
    case 0xe3: // U+3164
      return c1 === 0x85 && c2 === 0xa4 ? 3 : 0;
    case 0xef: // U+FE00-FE0F, U+FEFF, U+FFA0, U+FFF0-FFF8
      return (c1 === 0xb8 && c2 >= 0x80 && c2 <= 0x8f) || (c1 === 0xbb && c2 === 0xbf) || (c1 === 0xbe && c2 === 0xa0) || (c1 === 0xbf && c2 >= 0xb0 && c2 <= 0xb8) ? 3 : 0;
    case 0xf0: {
      // U+1BCA0-1BCA3, U+1D173-1D17A
      const c3 = w[i + 3]!;
      return (c1 === 0x9b && c2 === 0xb2 && c3 >= 0xa0 && c3 <= 0xa3) || (c1 === 0x9d && c2 === 0x85 && c3 >= 0xb3 && c3 <= 0xba) ? 4 : 0;
    }
    case 0xf3: {
      // U+E0000-E0FFF
      const c3 = w[i + 3]!;
      return c1 === 0xa0 && c2 >= 0x80 && c2 <= 0xbf && c3 >= 0x80 && c3 <= 0xbf ? 4 : 0;
    }
    default:
      return 0;
  }
}

/**
 * The length of a line break at `i` inside a wrapped key (`fold -w`,
 * Python's `textwrap.fill`, a quote's `> ` before each line): `\n` or
 * `\r\n`, and the blanks, tabs and `>` after it (at most MAX_WRAP_INDENT),
 * stopping before `stop` (a byte the key holds next); 0 where no line
 * break is.
 */
export function wrapBreakLength(w: Uint8Array, i: number, stop = -1): number {
  let k = w[i] === 10 ? i + 1 : w[i] === 13 && w[i + 1] === 10 ? i + 2 : i;
  if (k === i) return 0;
  const limit = Math.min(w.length, k + MAX_WRAP_INDENT);
  while (k < limit && w[k] !== stop && isWrapIndent(w[k]!)) k++;
  return k - i;
}

/** The index of the `\n` of the line break (and its indent, at most MAX_WRAP_INDENT) that ends just before `at`, or -1. */
function wrapBreakBefore(w: Uint8Array, at: number): number {
  let q = at - 1;
  const stop = Math.max(0, q - MAX_WRAP_INDENT);
  while (q > stop && isWrapIndent(w[q]!)) q--;
  return q >= 0 && w[q] === 10 ? q : -1;
}

/**
 * The length of a shell's line continuation at `i`: a backslash, then a
 * line break and its indent as wrapBreakLength reads them; or 0.
 */
export function continuationLength(w: Uint8Array, i: number): number {
  if (w[i] !== 92) return 0;
  const n = wrapBreakLength(w, i + 1);
  return n > 0 ? n + 1 : 0;
}

/**
 * The last byte of the line that a line break ending just before `at`
 * ends (wrapBreakBefore; a `\r\n`'s `\r` passed over): where a wrapped
 * key's piece before the break ends. -1 where no break ends there, or
 * nothing is before it (a piece must end there).
 */
export function lineEndBeforeBreak(w: Uint8Array, at: number): number {
  const nl = wrapBreakBefore(w, at);
  if (nl < 1) return -1;
  return w[nl - 1] === 13 ? nl - 2 : nl - 1;
}

// A table's cell folds a long key (rich's `overflow="fold"`, tabulate's
// `maxcolwidths`, prettytable's `max_width`, Markdown and pandoc grid tables
// as such tools write them): each piece on its own line between the cell's
// borders, at the same column, the row's other cells empty on the lines
// after the first. Since red-team pass 34 (published until then) such a
// fold is passed over as a line break is: its reading is here, find.ts's
// joined readings and known.ts's walks ask it.

/** The most bytes of a table's line read around a cell's fold (a wide terminal's table is a few hundred). */
export const CELL_LINE_MAX = 1024;
/** The most blanks between a cell's border and its text (rich and tabulate write one; a padding of a few). */
const CELL_MARGIN_MAX = 4;

/** The bytes of a cell's border at `i`: `|` (tabulate, prettytable, Markdown, pandoc), `│`, `┃`, `║` (UTF-8: rich, tabulate's grids); 0: none. */
function borderLength(w: Uint8Array, i: number): number {
  const c = w[i];
  if (c === 0x7c) return 1;
  if (c !== 0xe2) return 0;
  const d = w[i + 1];
  const e = w[i + 2];
  return (d === 0x94 && (e === 0x82 || e === 0x83)) || (d === 0x95 && e === 0x91) ? 3 : 0;
}

/** Whether the border at `i` and the one at `j` are the same character. */
function sameBorder(w: Uint8Array, i: number, j: number): boolean {
  const n = borderLength(w, i);
  return n > 0 && n === borderLength(w, j) && w[i + n - 1] === w[j + n - 1];
}

/** The column of `at` on the line that starts at `line`: a column per character (a box-drawing character and `…` are one). */
function columnOf(w: Uint8Array, line: number, at: number): number {
  let column = 0;
  for (let k = line; k < at; k++) if ((w[k]! & 0xc0) !== 0x80) column++;
  return column;
}

/** Where column `column` of the line that starts at `line` is, the line holding only blanks and borders before it (the row's other cells empty); -1: not so. */
function emptyColumnAt(w: Uint8Array, line: number, column: number): number {
  let k = line;
  for (let c = 0; c < column; c++) {
    if (w[k] === 32) k++;
    else {
      const n = borderLength(w, k);
      if (n === 0) return -1;
      k += n;
    }
  }
  return k;
}

/** Where column `column` of the line that starts at `line` is, within CELL_LINE_MAX bytes and before the line's end; -1: not there. */
function columnAt(w: Uint8Array, line: number, column: number): number {
  const stop = Math.min(w.length, line + CELL_LINE_MAX);
  for (let k = line, c = 0; k < stop && w[k] !== 10; k++) {
    if ((w[k]! & 0xc0) === 0x80) continue;
    if (c === column) return k;
    c++;
  }
  return -1;
}

/** Where the line that holds `at` starts, read back at most CELL_LINE_MAX bytes; -1: further. */
function cellLineStart(w: Uint8Array, at: number): number {
  const stop = Math.max(0, at - CELL_LINE_MAX);
  for (let k = at; k > stop; k--) if (w[k - 1] === 10) return k;
  return stop === 0 ? 0 : -1;
}

/**
 * Whether a cell's text may end at `i`: a few blanks, then a border or the
 * line's end. A byte test or two: asked before cellBreakLength's reading.
 */
export function mayEndCell(w: Uint8Array, i: number): boolean {
  let k = i;
  while (k - i < CELL_MARGIN_MAX && w[k] === 32) k++;
  return borderLength(w, k) > 0 || w[k] === 10 || (w[k] === 13 && w[k + 1] === 10);
}

/**
 * The length of a table cell's fold at `i`, the byte after a piece of its
 * text, up to the next piece's first byte on the next line; 0 where none
 * is. A fold where: the cell's left border is on this line, its text after
 * one to CELL_MARGIN_MAX blanks (its margin); after the piece, as many
 * blanks and the cell's right border (the piece fills the cell), or a few
 * blanks and the line's end (a last column without a border: rich's
 * MINIMAL box, tabulate's presto); on the next line, only blanks and
 * borders before the same border at the same column (the row's other cells
 * empty: a new row's would hold its own text), the same margin, and, where
 * the cell has a right border, the same border at its column. Reads the
 * two lines, at most CELL_LINE_MAX bytes of each.
 */
export function cellBreakLength(w: Uint8Array, i: number): number {
  if (!mayEndCell(w, i)) return 0;
  // The cell's left border on this line: the first border before the piece.
  const back = Math.max(0, i - CELL_LINE_MAX);
  let left = i - 1;
  while (left >= back && w[left] !== 10 && borderLength(w, left) === 0) left--;
  if (left < back || w[left] === 10) return 0;
  const edge = borderLength(w, left);
  let margin = 0;
  while (margin <= CELL_MARGIN_MAX && w[left + edge + margin] === 32) margin++;
  if (margin === 0 || margin > CELL_MARGIN_MAX) return 0;
  const line = cellLineStart(w, left);
  if (line < 0) return 0;
  const leftColumn = columnOf(w, line, left);
  let k = i;
  while (k - i < CELL_MARGIN_MAX && w[k] === 32) k++;
  let right = -1;
  let rightColumn = -1;
  if (borderLength(w, k) > 0) {
    if (k - i !== margin) return 0;
    right = k;
    rightColumn = columnOf(w, line, k);
    const stop = Math.min(w.length, line + CELL_LINE_MAX);
    while (k < stop && w[k] !== 10) k++;
  } else if (w[k] === 13) k++;
  if (w[k] !== 10) return 0;
  const next = k + 1;
  const border = emptyColumnAt(w, next, leftColumn);
  if (border < 0 || !sameBorder(w, left, border)) return 0;
  const text = border + edge + margin;
  for (let m = border + edge; m < text; m++) if (w[m] !== 32) return 0;
  if (right >= 0) {
    const end = columnAt(w, next, rightColumn);
    if (end < text || !sameBorder(w, right, end)) return 0;
  }
  return text - i;
}

/**
 * The length of the cell's fold that ends just before `at` (a piece's
 * first byte on its line: cellBreakLength read back), or 0: the place the
 * piece before it would end is found from this line's cell, and
 * cellBreakLength judges it.
 */
export function cellBreakBefore(w: Uint8Array, at: number): number {
  let margin = 0;
  while (margin <= CELL_MARGIN_MAX && w[at - 1 - margin] === 32) margin++;
  if (margin === 0 || margin > CELL_MARGIN_MAX) return 0;
  const next = cellLineStart(w, at);
  if (next < 2 || w[next - 1] !== 10) return 0;
  const line = cellLineStart(w, next - 1);
  if (line < 0) return 0;
  // This line's right border, where the cell has one: the piece before ends as far before that column on the line before.
  const stop = Math.min(w.length, at + CELL_LINE_MAX);
  let k = at;
  while (k < stop && w[k] !== 10 && borderLength(w, k) === 0) k++;
  let end: number;
  if (borderLength(w, k) > 0) {
    const right = columnAt(w, line, columnOf(w, next, k));
    if (right < 0) return 0;
    end = right - margin;
  } else {
    end = w[next - 2] === 13 ? next - 2 : next - 1;
    while (end > line && w[end - 1] === 32) end--;
  }
  return end > line && end < at && cellBreakLength(w, end) === at - end ? at - end : 0;
}

/**
 * wrapBreakLength where a key's character follows the break; or 0. The
 * bytes read are padded with zero bytes: no read passes their end.
 */
export function lineBreakLength(w: Uint8Array, i: number): number {
  const n = wrapBreakLength(w, i);
  return n > 0 && KEY_CHAR[w[i + n]!] === 1 ? n : 0;
}
