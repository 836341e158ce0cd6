// The pieces of PDF syntax both readings of a content stream share (the
// strings it shows, and the same strings through a font's ToUnicode map):
// literal and hex strings, names, operators, references, where a line or a
// page starts, and how either text is scanned (with its wrapped words
// joined, and its pieces placed end to end joined). Byte by byte with
// lookup tables: a prepare judges a PDF once, with code V8 has not
// optimised yet.

import { HEX_VALUE } from "./bytes.js";
import type { InspectContext } from "./inspect.js";

/**
 * Hex digits in `s` from `from` to `end`, in pairs, into `out` at `at`:
 * blanks and other bytes ignored, an odd last digit padded with 0 (a hex
 * string `<…>`, an ASCIIHexDecode stream). Where `out` ends.
 */
export function decodeHex(s: Uint8Array, from: number, end: number, out: Uint8Array, at: number): number {
  let high = -1;
  for (let j = from; j < end; j++) {
    const v = HEX_VALUE[s[j]!]!;
    if (v < 0) continue;
    if (high < 0) high = v;
    else {
      out[at++] = (high << 4) | v;
      high = -1;
    }
  }
  if (high >= 0) out[at++] = high << 4;
  return at;
}

/** What a backslash and the byte after it in a literal string read as; -1: not an escape that names a byte. */
const ESCAPED = new Int16Array(256).fill(-1);
for (const [c, byte] of [["n", 10], ["r", 13], ["t", 9], ["b", 8], ["f", 12], ["(", 40], [")", 41], ["\\", 92]] as const) ESCAPED[c.charCodeAt(0)] = byte;
/** Bytes an operator is made of: letters, ', " and *. */
export const OPERATOR = new Uint8Array(256);
for (const c of Buffer.from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'\"*", "latin1")) OPERATOR[c] = 1;
/** Bytes that end a name: blanks and delimiters. */
export const ENDS_NAME = new Uint8Array(256);
for (const c of Buffer.from(" \t\n\r\f\0()<>[]{}/%", "latin1")) ENDS_NAME[c] = 1;
const isOctal = (c: number) => c >= 48 && c <= 55;

/** Where the string last read by readString ends in its source (the index after its closing byte). */
export const lastString = { end: 0 };

/**
 * Writes the bytes of the string that opens at `s[i]` (`(` a literal, with
 * nesting and escapes, or `<` hex) into `out` at `o`; returns where `out`
 * ends, and sets lastString.end. `out` needs no more room than the source.
 * A hex string without its `>` ends the source.
 */
export function readString(s: Uint8Array, i: number, out: Uint8Array, o: number): number {
  const n = s.length;
  if (s[i] === 60) {
    const end = s.indexOf(62, i);
    if (end < 0) {
      lastString.end = n;
      return o;
    }
    lastString.end = end + 1;
    return decodeHex(s, i + 1, end, out, o);
  }
  let depth = 1;
  let j = i + 1;
  for (; j < n; j++) {
    const d = s[j]!;
    if (d === 92) {
      // An escape that names no byte (\q) drops the backslash only.
      if (j + 1 >= n) continue;
      const next = s[j + 1]!;
      if (ESCAPED[next]! >= 0) {
        out[o++] = ESCAPED[next]!;
        j++;
      } else if (isOctal(next)) {
        let k = j + 1;
        let value = 0;
        while (k < j + 4 && k < n && isOctal(s[k]!)) value = value * 8 + s[k++]! - 48;
        out[o++] = value & 0xff;
        j = k - 1;
      } else if (next === 13 || next === 10) {
        // a line continuation: \ and the line break read as nothing
        j += next === 13 && s[j + 2] === 10 ? 2 : 1;
      }
      continue;
    }
    if (d === 40) depth++;
    else if (d === 41 && --depth === 0) break;
    out[o++] = d;
  }
  lastString.end = j + 1;
  return o;
}

export const isDigit = (c: number | undefined) => c !== undefined && c >= 48 && c <= 57;

/** Where the reference last read by referenceAt ends (the index after its `R`). */
export const lastReference = { end: 0 };

/** The object number of a reference `12 0 R` at `at` (blanks first), or -1. */
export function referenceAt(b: Uint8Array, at: number): number {
  let k = at;
  while (k < b.length && isBlank(b[k])) k++;
  const first = k;
  let id = 0;
  while (k < b.length && isDigit(b[k]) && k - first < 10) id = id * 10 + b[k++]! - 48;
  if (k === first || !isBlank(b[k])) return -1;
  while (k < b.length && isBlank(b[k])) k++;
  const gen = k;
  while (k < b.length && isDigit(b[k]) && k - gen < 6) k++;
  if (k === gen || !isBlank(b[k])) return -1;
  while (k < b.length && isBlank(b[k])) k++;
  if (b[k] !== 82 || (k + 1 < b.length && ENDS_NAME[b[k + 1]!] !== 1)) return -1;
  lastReference.end = k + 1;
  return id;
}

/** Bytes of a word a layout may wrap (a key's letters, digits and punctuation: `_-+/.~`; not `=` or `:`, which end a name). */
const RUNS_ON = new Uint8Array(256);
for (const c of Buffer.from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+/.~", "latin1")) RUNS_ON[c] = 1;

/**
 * A key's bytes, and `=` and `:`: a name and the start of its value, which
 * a narrow cell wraps as one word (fpdf2's `OPENROUTER_API_KEY=8` /
 * `CcaaVGV8…`, `169006792:AAnjHsdZ3Y1` / `QDRm…`: the piece after the `=`
 * or `:` is short).
 */
const WRAPPED_ON = new Uint8Array(RUNS_ON);
WRAPPED_ON[61] = WRAPPED_ON[58] = 1;

/** A word this long that a line ends in may run on to the next: shorter ones end where the line does (a table's number cell). */
const WRAPPED_WORD = 16;

/** How many key bytes the word at `at` has, counted up to WRAPPED_WORD. */
function wordLength(text: Uint8Array, at: number): number {
  let k = at;
  while (k < text.length && k - at < WRAPPED_WORD && RUNS_ON[text[k]!] === 1) k++;
  return k - at;
}

/** Whether the word at `at` is a name assigned to (`=` or `:` after it): a line of its own, not a wrapped word's rest. */
function startsAssignment(text: Uint8Array, at: number): boolean {
  let k = at;
  while (k < text.length && RUNS_ON[text[k]!] === 1) k++;
  return text[k] === 61 || text[k] === 58;
}

/**
 * `text` with the line breaks that fall inside a long word taken out, or
 * undefined when there is none: a layout wraps a word too long for its line
 * or its table cell (LibreOffice breaks a 40-character token in a narrow
 * column, any generator a JWT longer than the page is wide), and a reader
 * who copies it back joins the pieces. A line that ends in a short word is
 * not joined: that word is a cell or a word of its own, and joining it would
 * hide where the next one starts; nor is a line that starts with a name
 * assigned to (`OLDPWD=`, `commit:`), which would make a value of two lines'
 * pieces. Read beside the text, not instead.
 */
export function joinWrappedWords(text: Uint8Array): Buffer | undefined {
  // Line by line (a native search for each break), not byte by byte: the text is read once more in a fresh process, before V8 optimises a loop over it.
  const b = Buffer.from(text.buffer, text.byteOffset, text.length);
  let out: Buffer | undefined;
  let o = 0;
  /** The bytes before this one are in `out` already. */
  let copied = 0;
  let lineStart = 0;
  /** The word a joined break ended: the next line's first word continues it (key bytes; with `=` and `:`). */
  let carried = 0;
  let carriedNamed = 0;
  for (let nl = b.indexOf(10); nl >= 0; nl = b.indexOf(10, nl + 1)) {
    // The word that ends the line, counted back (no further than it needs to be long).
    let k = nl;
    while (k > lineStart && nl - k < WRAPPED_WORD && RUNS_ON[b[k - 1]!] === 1) k--;
    const run = k === lineStart ? nl - k + carried : nl - k;
    // The same word with a name's `=` or `:` in it: wrapped too when the next line starts with a word as long (the value's rest), not with a word of its own (`DB_PASSWORD=admin123` / `export …`).
    let m = k;
    while (m > lineStart && nl - m < WRAPPED_WORD && WRAPPED_ON[b[m - 1]!] === 1) m--;
    const named = m === lineStart ? nl - m + carriedNamed : nl - m;
    const wrapped = run >= WRAPPED_WORD || (named >= WRAPPED_WORD && wordLength(b, nl + 1) >= WRAPPED_WORD);
    if (wrapped && RUNS_ON[b[nl + 1] ?? 0] === 1 && !startsAssignment(b, nl + 1)) {
      out ??= Buffer.allocUnsafe(b.length);
      o += b.copy(out, o, copied, nl);
      copied = nl + 1;
      carried = run;
      carriedNamed = named;
    } else {
      carried = 0;
      carriedNamed = 0;
    }
    lineStart = nl + 1;
  }
  if (out === undefined) return undefined;
  o += b.copy(out, o, copied, b.length);
  return out.subarray(0, o);
}

/**
 * Offsets in a text, in the order they are added, in a typed array that
 * doubles as it fills: one per string shown at most, 4 bytes each.
 */
export class Offsets {
  private values = new Uint32Array(64);
  length = 0;

  push(at: number): void {
    if (this.length === this.values.length) {
      const larger = new Uint32Array(2 * this.values.length);
      larger.set(this.values);
      this.values = larger;
    }
    this.values[this.length++] = at;
  }

  at(k: number): number {
    return this.values[k]!;
  }

  clear(): void {
    this.length = 0;
  }
}

/** Pieces shorter than this are copied byte by byte (withoutBytesAt). */
const SHORT_PIECE = 32;

/**
 * `text` without the bytes at `offsets` (ascending, each within the text):
 * the spaces TextLine put between pieces placed end to end taken out. One
 * native copy per piece.
 */
export function withoutBytesAt(text: Uint8Array, offsets: Offsets, inPlace = false): Buffer {
  const b = Buffer.from(text.buffer, text.byteOffset, text.length);
  // In place, each byte moves left or stays (Buffer.copy moves overlapping regions as memmove does).
  const out = inPlace ? b : Buffer.allocUnsafe(b.length);
  let o = 0;
  let copied = 0;
  for (let k = 0; k < offsets.length; k++) {
    const at = offsets.at(k);
    if (at < copied || at >= b.length) continue;
    // A short piece byte by byte: a native copy per glyph (a Tm per glyph) cost more than the copying.
    if (at - copied < SHORT_PIECE) while (copied < at) out[o++] = b[copied++]!;
    else o += b.copy(out, o, copied, at);
    copied = at + 1;
  }
  o += b.copy(out, o, copied, b.length);
  return out.subarray(0, o);
}

/**
 * Scans a text the content streams show, then the same with its wrapped
 * words joined (if any is), then, where TextLine found strings placed where
 * the text before them may end (`abutting`: the offsets of the spaces it put
 * before them), the same without those spaces, written over `text` (the
 * callers' last use of it); each counted against the decode budget.
 */
export function scanText(ctx: InspectContext, part: string, text: Uint8Array, asUtf16: boolean, abutting?: Offsets): void {
  ctx.scanDerivedText(part, text, asUtf16);
  const joined = joinWrappedWords(text);
  if (joined !== undefined) {
    ctx.spend(part, joined.length);
    ctx.scanDerivedText(`${part}, its wrapped words joined`, joined, asUtf16);
  }
  if (abutting === undefined || abutting.length === 0) return;
  // Written over the text, read for the last time above: a copy held a second text's worth (a 96 MiB stream's prepare 1.2 to 2.0 times its bytes).
  const pieces = withoutBytesAt(text, abutting, true);
  ctx.spend(part, pieces.length);
  ctx.scanDerivedText(`${part}, its pieces placed end to end joined`, pieces, asUtf16);
}

/** Bytes a number is written with. */
const NUMBER = new Uint8Array(256);
for (const c of Buffer.from("0123456789.+-", "latin1")) NUMBER[c] = 1;
/** PDF's white-space bytes. */
export const isBlank = (c: number | undefined) => c === 32 || c === 10 || c === 13 || c === 9 || c === 12 || c === 0;

/** The `k`th number before `at` counting back from 0 (an operator's operands), or NaN. */
function operandBefore(s: Uint8Array, at: number, k: number): number {
  let j = at - 1;
  let from = at;
  let to = at;
  for (let n = 0; n <= k; n++) {
    while (j >= 0 && isBlank(s[j])) j--;
    to = j + 1;
    while (j >= 0 && NUMBER[s[j]!] === 1 && to - j <= 32) j--;
    from = j + 1;
    if (from === to) return Number.NaN;
  }
  return numberIn(s, from, to);
}

/** Where operandsBefore writes: the last operand first. */
const OPERANDS = new Float64Array(6);

/**
 * The last `count` (up to 6) numbers before `at`, the last first, each as
 * operandBefore reads it (NaN from the first one missing on; the fourth and
 * fifth, a matrix's c and b, not read), in one walk back: Tm's and cm's
 * operands read one at a time walked back over the later ones again for
 * each (a Tm per glyph).
 */
function operandsBefore(s: Uint8Array, at: number, count: number): Float64Array {
  let j = at - 1;
  for (let n = 0; n < count; n++) {
    while (j >= 0 && isBlank(s[j])) j--;
    const to = j + 1;
    while (j >= 0 && NUMBER[s[j]!] === 1 && to - j <= 32) j--;
    const from = j + 1;
    if (from === to) {
      OPERANDS.fill(Number.NaN, n, count);
      break;
    }
    // A matrix's b and c (rotation and shear) are left aside: only walked over.
    if (n !== 3 && n !== 4) OPERANDS[n] = numberIn(s, from, to);
  }
  return OPERANDS;
}

const POWER_OF_TEN = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15];

/**
 * The number written from `from` to `to` in digits, a point and a sign,
 * as Number() reads it (NaN for `-`, `1.2.3`, `1-2`), without making a
 * string: Chrome writes a Td before every glyph. Up to 15 digits the
 * quotient of two exact integers is the correctly rounded value, as
 * Number()'s is; longer ones go through Number().
 */
function numberIn(s: Uint8Array, from: number, to: number): number {
  let i = from;
  const negative = s[i] === 45;
  if (negative || s[i] === 43) i++;
  let mantissa = 0;
  let digits = 0;
  let decimals = -1;
  for (; i < to; i++) {
    const c = s[i]!;
    if (c === 46) {
      if (decimals >= 0) return Number.NaN;
      decimals = 0;
    } else if (c >= 48 && c <= 57) {
      mantissa = mantissa * 10 + c - 48;
      digits++;
      if (decimals >= 0) decimals++;
    } else return Number.NaN;
  }
  if (digits === 0) return Number.NaN;
  if (digits > 15) return Number(Buffer.from(s.buffer, s.byteOffset + from, to - from).toString("latin1"));
  const value = decimals > 0 ? mantissa / POWER_OF_TEN[decimals]! : mantissa;
  return negative ? -value : value;
}

/** How deep q saves the graphics state for TextLine; deeper saves are not followed. */
const MAX_SAVED = 64;

/** A TJ adjustment at least this far right (thousandths of an em) is a space between words. */
export const WORD_GAP = 200;

/**
 * TextLine.separator's answer for a string placed anew on the same line
 * where the text before it may end: a space in the text read (its low byte),
 * left out of the reading with pieces placed end to end joined.
 */
export const ABUTTING = 0x120;

/**
 * The widest a glyph is, in ems, for telling where a string may end without
 * its font's widths: a full-width CJK glyph is 1 em, Helvetica's `W` 0.94,
 * Courier's every glyph 0.6.
 */
const WIDEST_GLYPH = 1;
/**
 * How far (in ems) past where the text before may end a string may start
 * and still continue its word: pdftotext joins two strings up to 0.1 em
 * apart, and breaks the word past that (poppler's minWordBreakSpace; Courier
 * 12 pt, measured: 1.2 pt apart read as one word, 1.5 pt as two).
 */
const WORD_BREAK = 0.1;
/** How far (in ems) a string may start back over the text before and still continue its word (pdftotext's raw reading breaks at 0.2). */
const OVERLAP = 0.2;

/**
 * Which line of text a content stream is on, as far as telling one line
 * from the next needs (PDF 32000-1, 8.4 and 9.4): the vertical place of the
 * text matrix (moved by Td, TD, T*, ' and ", set by Tm and BT) in the
 * current transformation (cm, saved by q and restored by Q; matplotlib
 * places each line with its own cm), rotation and shear left aside. A string
 * shown on another line than the last one starts a new line of the text
 * read; one shown further along the same line does not, as Chrome places
 * each glyph with its own `dx 0 Td`. One TextLine follows all the content
 * streams of a file: a page's streams share their state (PyMuPDF adds one
 * per line it writes).
 *
 * The horizontal place is followed the same way, with the font's size (Tf),
 * to tell a string placed anew where the text before it may end (pdfkit and
 * jsPDF write a Tm or a BT for every piece of a line: a bold prefix, a
 * highlighted word, a font fallback; some writers a Tm per glyph) from a
 * table's next cell: see separator.
 */
export class TextLine {
  private y = 0;
  /** The text matrix's vertical scale (Tm's d): Td's ty counts in text space. */
  private scale = 1;
  private leading = 0;
  private ctmY = 0;
  private ctmScale = 1;
  /** The same horizontally: the line matrix's x, Tm's a, the transformation's x and scale. */
  private x = 0;
  private xScale = 1;
  private ctmX = 0;
  private ctmXScale = 1;
  /** Tf's size; 0 before any Tf. */
  private size = 0;
  /** Tz's horizontal scaling (1: 100 %) and Tc's character spacing (text space units), which widen every glyph's advance. */
  private hScale = 1;
  private charSpacing = 0;
  private readonly saved: number[] = [];
  /** Where, in the text read, the spaces before strings that abut lie (separator's ABUTTING): showInto adds them. */
  readonly abutting = new Offsets();
  private shownY = Number.NaN;
  /**
   * Where (user space) the run of strings shown since the text was last
   * placed apart starts, and the furthest its glyphs may reach from there
   * (user space: each byte's widest advance in the size, scaling and
   * spacing it was shown with); `runUnsized`: a string of it was shown
   * with no size, and where it ends is not known.
   */
  private runX = 0;
  private runReach = 0;
  private runUnsized = false;
  /** The text was placed anew (Tm, BT) since the last string: a string on the same line is another word, a table's next cell. */
  private placed = false;
  /** Tf since the last string: a move by Td after it places the text anew (pdfTeX's `\texttt` word, its own font, moved to). */
  private fontChanged = false;
  /** A TJ array moved the next string right by a word space (see movedRight). */
  private gap = false;

  /** Follows the operator of `length` bytes at `s[at]`, its operands before it. */
  operator(s: Uint8Array, at: number, length: number): void {
    const c = s[at]!;
    if (length === 1) {
      if (c === 39 || c === 34) this.nextLine();
      else if (c === 113) {
        if (this.saved.length < 4 * MAX_SAVED) this.saved.push(this.ctmY, this.ctmScale, this.ctmX, this.ctmXScale);
      } else if (c === 81 && this.saved.length > 0) {
        this.ctmXScale = this.saved.pop()!;
        this.ctmX = this.saved.pop()!;
        this.ctmScale = this.saved.pop()!;
        this.ctmY = this.saved.pop()!;
      }
      return;
    }
    if (length !== 2) return;
    const d = s[at + 1]!;
    if (c === 84) {
      if (d === 100 || d === 68) {
        this.placed ||= this.fontChanged;
        const m = operandsBefore(s, at, 2);
        this.x += m[1]! * this.xScale;
        this.y += m[0]! * this.scale;
        if (d === 68) this.leading = -m[0]!;
      } else if (d === 42) this.nextLine();
      else if (d === 109) {
        const m = operandsBefore(s, at, 6);
        this.y = m[0]!;
        this.scale = m[2] || 1;
        this.x = m[1]!;
        this.xScale = m[5] || 1;
        this.placed = true;
      } else if (d === 76) this.leading = operandBefore(s, at, 0);
      else if (d === 122 || d === 99) {
        // Tz, Tc: an operand that is no number leaves the state as it was.
        const v = operandBefore(s, at, 0);
        if (Number.isFinite(v)) {
          if (d === 122) this.hScale = Math.abs(v) / 100;
          else this.charSpacing = v;
        }
      }
    } else if (c === 66 && d === 84) {
      this.y = 0;
      this.scale = 1;
      this.x = 0;
      this.xScale = 1;
      this.placed = true;
    } else if (c === 99 && d === 109) {
      const m = operandsBefore(s, at, 6);
      this.ctmY += m[0]! * this.ctmScale;
      this.ctmScale *= m[2] || 1;
      this.ctmX += m[1]! * this.ctmXScale;
      this.ctmXScale *= m[5] || 1;
    }
  }

  /** T*, ' and ": the start of the next line (the line matrix's x stays). */
  private nextLine(): void {
    this.y -= this.leading * this.scale;
  }

  /**
   * What separates a string shown now from the text before it: a line break
   * (10) where it starts another line (the first string does), a space (32)
   * where the text was placed anew on the same line or moved right by a word
   * space, else nothing (0). A move by Td on the same line is none: Chrome
   * places each glyph of monospaced text with its own `dx 0 Td`, and
   * wkhtmltopdf too.
   *
   * Placed anew on the same line where the text before it may end, the
   * space is ABUTTING: the fonts' widths are not read, so where the text
   * before ends is not known, only that its run of bytes since it was
   * last placed apart reaches no further than WIDEST_GLYPH a byte in the
   * size, Tz and Tc it was shown with (see abuts; pdftotext reads such pieces as one
   * word when they touch). A table's next cell lies further than its last
   * cell's bytes can reach (the next column), so it keeps its space alone;
   * pieces that abut are also read joined (scanText). Without a Tf, every
   * placement on the line may abut.
   */
  separator(): number {
    const placed = this.placed;
    this.placed = false;
    this.fontChanged = false;
    const y = this.ctmY + this.ctmScale * this.y;
    const x = this.ctmX + this.ctmXScale * this.x;
    const gap = this.gap;
    this.gap = false;
    if (y !== this.shownY) {
      this.shownY = y;
      this.newRun(x);
      return 10;
    }
    if (placed && !gap) {
      if (this.abuts(x)) return ABUTTING;
      this.newRun(x);
    }
    return placed || gap ? 32 : 0;
  }

  private newRun(x: number): void {
    this.runX = x;
    this.runReach = 0;
    this.runUnsized = false;
  }

  /**
   * Whether a string placed at `x` (user space) may start where the run
   * before it ends: from OVERLAP ems of its own font back over the run's
   * start to WORD_BREAK ems past the furthest the run's glyphs reach. That
   * reach adds each string's bytes in the size it was shown in (since
   * forms33, 2026-12-05: a piece in a smaller font after a larger one was
   * measured in the smaller, and a key so drawn was published), widened by
   * Tz's scaling and Tc's spacing (ignored until then too).
   */
  private abuts(x: number): boolean {
    const em = this.size * Math.abs(this.xScale * this.ctmXScale);
    if (!(em > 0) || this.runUnsized) return true;
    const distance = (x - this.runX) * Math.sign(this.xScale * this.ctmXScale);
    return distance >= -OVERLAP * em && distance <= this.runReach + WORD_BREAK * em;
  }

  /** A string of `bytes` bytes was shown: its run reaches further, by each byte's widest advance. */
  shown(bytes: number): void {
    const advance = (WIDEST_GLYPH * this.size + Math.max(0, this.charSpacing)) * this.hScale * Math.abs(this.xScale * this.ctmXScale);
    if (this.size > 0 && Number.isFinite(advance)) this.runReach += bytes * advance;
    else if (bytes > 0) this.runUnsized = true;
  }

  /**
   * A TJ array's adjustment moved the next string `thousandths` of an em
   * right: a word space (WORD_GAP or more) separates words, as pdfTeX, which
   * writes no space glyph, makes them; kerning (tens) does not.
   */
  movedRight(thousandths: number): void {
    if (thousandths >= WORD_GAP) this.gap = true;
  }

  /** `[` or `]`: a gap counts only before a string of the same array. */
  arrayBound(): void {
    this.gap = false;
  }

  /** Tf at `s[at]`: the font changed, and its size is the operand before (showInto reads Tf's name itself, for the glyph reading). */
  fontSelected(s: Uint8Array, at: number): void {
    this.fontChanged = true;
    this.size = Math.abs(operandBefore(s, at, 0)) || 0;
  }

  /**
   * A page's content starts in the default state (PDF 32000-1, 8.4.1): its
   * transformation is not the last page's. Kept across pages, Chrome's
   * `0.24 0 0 -0.24 0 792 cm` at every page's start multiplied the scale
   * to nothing after about 25 pages, and from then on no string started a line.
   */
  newPage(): void {
    this.y = 0;
    this.scale = 1;
    this.leading = 0;
    this.ctmY = 0;
    this.ctmScale = 1;
    this.x = 0;
    this.xScale = 1;
    this.ctmX = 0;
    this.ctmXScale = 1;
    this.size = 0;
    this.hScale = 1;
    this.charSpacing = 0;
    this.saved.length = 0;
    this.shownY = Number.NaN;
    this.newRun(0);
    this.placed = false;
    this.fontChanged = false;
    this.gap = false;
  }
}
