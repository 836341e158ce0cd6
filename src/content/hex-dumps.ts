// Hex dumps: what an agent runs to show why a variable does not load (a
// byte order mark, a CR, a stray quote) or what a key file holds, and
// pastes into a report: `xxd` (`00000010: 454e 3d37 …  EN=7…`; `-e`'s
// little-endian words, `-b`'s bits), `hexdump -C` (`00000010  45 4e 3d 37
// …  |EN=7…|`), `od -c` (`0000020   N   = 7 …`) and `od -t x1`
// (`0000020 45 4e 3d 37 …`, `z`'s `>EN=7…<` after it, `-A n` without
// offsets). Sixteen bytes a line: a key's characters are cut every 16,
// under the reach of every rule and of the host values' walk across line
// breaks, and its bytes are also spelled in hex. The second reading here
// decodes each such line to the bytes it shows (from its hex column, or
// od's characters and escapes: exact, where an ASCII column shows a `.`
// for a line break) and joins consecutive lines, as the file dumped read;
// a squeeze's `*` is its line once more, the offset alone that ends a dump
// a line break, other lines are kept as they are. scan.ts reads a window
// so only where find.ts's colon pass saw an `xxd` line (isXxdOffsetColon)
// or findHexDump a `hexdump -C` or od one, and only when the first
// reading found nothing. One pass over the window, a few bytes read per
// byte: linear whatever the text.
import { HEX_VALUE } from "./bytes.js";
import { type PieceReading, pieceAt } from "./text-forms.js";

/** How a finding of this reading says where it was. */
export const DUMP_WHAT = "read from a hex dump";

/** A dump line's offset column: at least this many digits (xxd and hexdump write 8, od 7). */
const MIN_OFFSET_DIGITS = 7;
const MAX_OFFSET_DIGITS = 16;
/** Bytes a dump line shows: xxd's -c may take it to 256; hexdump -C and od write 16. */
const MAX_LINE_BYTES = 256;
/** Bytes of a dump line at most: od's four columns a byte, an offset and blanks. */
const MAX_DUMP_LINE = 4 * MAX_LINE_BYTES + 32;

const isOctal = (c: number) => c >= 48 && c <= 55;

/** od -c's escapes (`\n`), the byte each stands for. */
const OD_ESCAPE = new Int16Array(256).fill(-1);
for (const [c, v] of [
  ["0", 0],
  ["a", 7],
  ["b", 8],
  ["t", 9],
  ["n", 10],
  ["v", 11],
  ["f", 12],
  ["r", 13],
  ["\\", 92],
] as const)
  OD_ESCAPE[c.charCodeAt(0)] = v;

const scratchLine = new Uint8Array(MAX_LINE_BYTES);

/** The fewest digits of `od -t x1`'s offset (`-A x` writes 6); `-A n` writes none, its lines start with a blank. */
const MIN_OD_OFFSET_DIGITS = 6;

/**
 * Decodes the dump line at [start, end) (no line break) into `into` from
 * `at`; the number of bytes it shows, or -1 where it is no dump's line:
 * `xxd` (offset `:`, hex in groups of whole bytes, two blanks, a text
 * column as long as the bytes; `-e`'s groups little-endian words, `-b`'s
 * bytes in bits), `hexdump -C` (offset, two blanks, bytes of two digits,
 * `|text|` as long as them), `od -t x1` (an offset of 6 digits or more, or
 * none with `-A n`, then a blank and two digits a byte; `z`'s `>text<`
 * after them showing them) or `od -c` (an octal offset, then fields of
 * four columns: a character, an escape or three octal digits,
 * right-aligned). A line longer than MAX_DUMP_LINE is none.
 */
export function decodeDumpLine(w: Uint8Array, start: number, end: number, into: Uint8Array, at: number, lines: XxdLines = { words: false }): number {
  if (end - start > MAX_DUMP_LINE) return -1;
  let i = start;
  const limit = end;
  while (i < limit && HEX_VALUE[w[i]!]! >= 0 && i - start <= MAX_OFFSET_DIGITS) i++;
  const digits = i - start;
  if (digits > MAX_OFFSET_DIGITS || (digits > 0 && digits < MIN_OD_OFFSET_DIGITS)) return -1;
  if (w[i] === 32 && HEX_VALUE[w[i + 1]!]! >= 0) {
    const n = odHexLine(w, i, limit, into, at);
    if (n >= 0 || digits === 0) return n;
  }
  if (digits < MIN_OFFSET_DIGITS) return -1;
  if (w[i] === 58 && w[i + 1] === 32) return xxdLine(w, i + 2, limit, into, at, lines);
  if (w[i] === 32 && w[i + 1] === 32 && HEX_VALUE[w[i + 2]!]! >= 0) {
    const n = hexdumpLine(w, i + 2, limit, into, at);
    if (n >= 0) return n;
  }
  if (w[i] === 32) {
    for (let k = start; k < i; k++) if (!isOctal(w[k]!)) return -1;
    return odLine(w, i, limit, into, at);
  }
  return -1;
}

/** How xxd, hexdump -C and od's `z` show a byte in their text column: itself if printable ASCII, else `.`. */
const shown = (c: number) => (c >= 32 && c < 127 ? c : 46);

/** Whether [at, at + n) of `into` is what the text column from `i` shows. */
function textColumnShows(w: Uint8Array, i: number, into: Uint8Array, at: number, n: number): boolean {
  for (let k = 0; k < n; k++) if (w[i + k] !== shown(into[at + k]!)) return false;
  return true;
}

/** Whether the hex part of an xxd line ends at `i` and its text column, the line's last n characters after two blanks or more, shows [at, at + n) of `into`. */
function xxdTextShows(w: Uint8Array, i: number, end: number, into: Uint8Array, at: number, n: number): boolean {
  const text = end - n;
  if (n === 0 || text < i + 2) return false;
  for (let k = i; k < text; k++) if (w[k] !== 32) return false;
  return textColumnShows(w, text, into, at, n);
}

/**
 * What a reading of a dump's lines carries from line to line: whether the
 * last xxd line read was `-e`'s (a line whose bytes its text column shows
 * as well in either order, each group's bytes unprintable, `..`, is read
 * as the line before it was). A line judged alone starts without.
 */
export interface XxdLines {
  words: boolean;
}

/** xxd's bytes from `i` (after `: `): as they are (plain, `-u`, `-g`) or `-e`'s little-endian words (the form of the line before first), else `-b`'s bits; each form's text column shows them. */
function xxdLine(w: Uint8Array, i: number, end: number, into: Uint8Array, at: number, lines: XxdLines): number {
  const first = lines.words ? xxdWordsLine(w, i, end, into, at) : xxdHexLine(w, i, end, into, at);
  if (first >= 0) return first;
  const second = lines.words ? xxdHexLine(w, i, end, into, at) : xxdWordsLine(w, i, end, into, at);
  if (second >= 0) {
    lines.words = !lines.words;
    return second;
  }
  return xxdBitsLine(w, i, end, into, at);
}

/** Plain xxd's bytes from `i`: groups of hex digit pairs between single blanks, blanks, then the text column: its last n characters, showing them. */
function xxdHexLine(w: Uint8Array, i: number, end: number, into: Uint8Array, at: number): number {
  let n = 0;
  while (i + 1 < end && n < MAX_LINE_BYTES) {
    const high = HEX_VALUE[w[i]!]!;
    const low = HEX_VALUE[w[i + 1]!]!;
    if (high < 0 || low < 0) break;
    into[at + n++] = (high << 4) | low;
    i += 2;
    // A single blank between groups; two or more before the text column.
    if (w[i] === 32 && HEX_VALUE[w[i + 1]!]! >= 0) i++;
  }
  return xxdTextShows(w, i, end, into, at, n) ? n : -1;
}

/**
 * `xxd -e`'s bytes from `i`: groups of the same number of hex digits (the
 * first's) between single blanks, each a little-endian word (its last
 * byte first); the last line's last group, shorter, right-aligned in a
 * whole group's columns (`  587052`), alone on its line with no blank
 * before it but those. Each group's digits are read once, backwards.
 */
function xxdWordsLine(w: Uint8Array, i: number, end: number, into: Uint8Array, at: number): number {
  let n = 0;
  let width = 0;
  for (let first = true; i < end && n < MAX_LINE_BYTES; first = false) {
    const blanksFrom = i;
    while (i < end && w[i] === 32) i++;
    const from = i;
    while (i < end && HEX_VALUE[w[i]!]! >= 0 && i - from <= 2 * MAX_LINE_BYTES) i++;
    const digits = i - from;
    const blanks = from - blanksFrom;
    if (first) width = digits + blanks;
    // A whole group after one blank (none before the first), or a shorter one right-aligned.
    const short = digits < width;
    if (digits === 0 || digits % 2 !== 0 || digits > width || blanks !== (first ? 0 : 1) + width - digits || n + digits / 2 > MAX_LINE_BYTES) {
      i = blanksFrom;
      break;
    }
    for (let k = i - 2; k >= from; k -= 2) into[at + n++] = (HEX_VALUE[w[k]!]! << 4) | HEX_VALUE[w[k + 1]!]!;
    if (short) break;
  }
  return xxdTextShows(w, i, end, into, at, n) ? n : -1;
}

/** `xxd -b`'s bytes from `i`: groups of eight binary digits a byte between single blanks, blanks, then the text column showing them. */
function xxdBitsLine(w: Uint8Array, i: number, end: number, into: Uint8Array, at: number): number {
  let n = 0;
  while (i + 8 <= end && n < MAX_LINE_BYTES) {
    let byte = 0;
    for (let k = 0; k < 8; k++) {
      const bit = w[i + k]! - 48;
      if (bit !== 0 && bit !== 1) return xxdTextShows(w, i, end, into, at, n) ? n : -1;
      byte = (byte << 1) | bit;
    }
    into[at + n++] = byte;
    i += 8;
    if (w[i] === 32 && (w[i + 1] === 48 || w[i + 1] === 49)) i++;
  }
  return xxdTextShows(w, i, end, into, at, n) ? n : -1;
}

/** hexdump -C's bytes from `i`: pairs of hex digits after one or two blanks, blanks, then `|text|` showing them. */
function hexdumpLine(w: Uint8Array, i: number, end: number, into: Uint8Array, at: number): number {
  let n = 0;
  while (i + 2 < end && n < MAX_LINE_BYTES) {
    const high = HEX_VALUE[w[i]!]!;
    const low = HEX_VALUE[w[i + 1]!]!;
    if (high < 0 || low < 0 || w[i + 2] !== 32) break;
    into[at + n++] = (high << 4) | low;
    i += 3;
    if (w[i] === 32 && HEX_VALUE[w[i + 1]!]! >= 0) i++;
  }
  const bar = end - n - 2;
  if (n === 0 || bar < i || w[bar] !== 124 || w[end - 1] !== 124) return -1;
  for (let k = i; k < bar; k++) if (w[k] !== 32) return -1;
  return textColumnShows(w, bar + 1, into, at, n) ? n : -1;
}

/**
 * `od -t x1`'s bytes from `i` (after the offset, or the line's start with
 * `-A n`): a blank and two hex digits each; the line ends there, or (`z`)
 * after two blanks or more and `>text<`, its text as long as the bytes
 * and showing them.
 */
function odHexLine(w: Uint8Array, i: number, end: number, into: Uint8Array, at: number): number {
  let n = 0;
  while (i + 3 <= end && n < MAX_LINE_BYTES && w[i] === 32 && (i + 3 === end || w[i + 3] === 32)) {
    const high = HEX_VALUE[w[i + 1]!]!;
    const low = HEX_VALUE[w[i + 2]!]!;
    if (high < 0 || low < 0) break;
    into[at + n++] = (high << 4) | low;
    i += 3;
  }
  if (n === 0) return -1;
  if (i === end) return n;
  const open = end - n - 2;
  if (open < i + 2 || w[open] !== 62 || w[end - 1] !== 60) return -1;
  for (let k = i; k < open; k++) if (w[k] !== 32) return -1;
  return textColumnShows(w, open + 1, into, at, n) ? n : -1;
}

/** od -c's bytes from `i` (after the offset): fields of four columns, a character (a blank too), `\n`-style escapes or three octal digits. */
function odLine(w: Uint8Array, i: number, end: number, into: Uint8Array, at: number): number {
  let n = 0;
  for (; i + 4 <= end && n < MAX_LINE_BYTES; i += 4) {
    const a = w[i]!;
    const b = w[i + 1]!;
    const c = w[i + 2]!;
    const d = w[i + 3]!;
    if (a !== 32) return -1;
    if (b === 32 && c === 32) into[at + n++] = d;
    else if (b === 32 && c === 92 && OD_ESCAPE[d]! >= 0) into[at + n++] = OD_ESCAPE[d]!;
    else if (isOctal(b) && isOctal(c) && isOctal(d)) into[at + n++] = ((b - 48) << 6) | ((c - 48) << 3) | (d - 48);
    else return -1;
  }
  return i === end && n > 0 ? n : -1;
}

/** The end of the line at `i` (its `\n`, or a `\r` before it), at most `limit`. */
function lineEnd(w: Uint8Array, i: number, limit: number): number {
  let k = i;
  while (k < limit && w[k] !== 10) k++;
  return k > i && w[k - 1] === 13 ? k - 1 : k;
}

/** Whether a dump's line starts at `start` (at the window's start or after a `\n`): decodeDumpLine reads it. */
function isDumpLineStart(w: Uint8Array, start: number): boolean {
  if (start < 0 || (start > 0 && w[start - 1] !== 10) || (HEX_VALUE[w[start]!]! < 0 && w[start] !== 32)) return false;
  // A longer line is no dump's: its end is not looked for further.
  const limit = Math.min(w.length, start + MAX_DUMP_LINE + 1);
  const end = lineEnd(w, start, limit);
  return (end < limit || limit === w.length) && decodeDumpLine(w, start, end, scratchLine, 0) > 0;
}

/**
 * Whether the `:` at `i` ends the offset of an `xxd` line (`00000010: 454e
 * …`), the line read whole: find.ts's colon pass asks it of a colon after
 * a `0` and before a blank (an offset of 16 bytes a line ends in `0`), at
 * no cost to other text.
 */
export function isXxdOffsetColon(w: Uint8Array, i: number): boolean {
  if (w[i + 1] !== 32 || w[i - 1] !== 48 || HEX_VALUE[w[i + 2]!]! < 0) return false;
  let start = i - 1;
  while (start > 0 && i - start < MAX_OFFSET_DIGITS + 1 && HEX_VALUE[w[start - 1]!]! >= 0) start--;
  return i - start >= MIN_OFFSET_DIGITS && i - start <= MAX_OFFSET_DIGITS && isDumpLineStart(w, start);
}

/** Columns of an offset `hexdump -C` and `od` write (more past 4 GiB and 2 MiB). */
const OFFSET_WIDTHS = [7, 8, 9, 10];
/** Where `hexdump -C` writes its text column's `|`: after the offset, two blanks, 16 bytes of three columns and a blank between the halves. */
const HEXDUMP_BAR = 2 + 16 * 3 + 1;

/**
 * Whether the window holds a `hexdump -C` line (its text column's `|`
 * after two blanks, at its column), an `od -c` one (a `\n`-style
 * escape's backslash after two blanks, in one of its fields) or another
 * od one (findOdOffset, findOdLineEnd), the line read whole: native
 * searches for characters prose seldom holds, the first such mark of a
 * line judged and the rest of the line passed over (its start found by a
 * search back that no other search of this line repeats): each byte read
 * a few times at most. (`xxd`'s lines are seen by find.ts's colon pass:
 * isXxdOffsetColon.)
 */
export function findHexDump(text: string, w: Uint8Array, from: number, limit: number): boolean {
  return (
    marksDumpLine(text, w, "|", from, limit, (i, start) => OFFSET_WIDTHS.some((width) => i - start === width + HEXDUMP_BAR)) ||
    marksDumpLine(text, w, "\\", from, limit, (i, start) => i - start >= MIN_OFFSET_DIGITS + 2) ||
    findOdOffset(w, text, from, limit) ||
    findOdLineEnd(w, text, from, limit)
  );
}

const isHexAt = (w: Uint8Array, i: number) => HEX_VALUE[w[i]!]! >= 0;

/**
 * Whether the line at `s` opens as an od line: `-A n -t x1`'s blank and a
 * byte's hex, or an offset of 6 to 16 digits, a blank, then
 * a byte's hex and a blank (`-t x1`) or a field of `-c` (a blank, or an
 * octal digit). A few bytes read, 20 at most.
 */
function opensOdLine(w: Uint8Array, s: number): boolean {
  // A byte's hex, then a blank or the line's end (a last line of one byte, after a window's too: its padding's zero).
  if (w[s] === 32) return isHexAt(w, s + 1) && isHexAt(w, s + 2) && (w[s + 3] === 32 || w[s + 3] === 10 || w[s + 3] === 13 || w[s + 3] === 0);
  let k = s;
  while (k - s <= MAX_OFFSET_DIGITS && isHexAt(w, k)) k++;
  const digits = k - s;
  if (digits < MIN_OD_OFFSET_DIGITS || digits > MAX_OFFSET_DIGITS || w[k] !== 32) return false;
  return (isHexAt(w, k + 1) && isHexAt(w, k + 2) && w[k + 3] === 32) || w[k + 1] === 32 || isOctal(w[k + 1]!);
}

/**
 * Whether the window holds an od line whose offset starts with `0` (`od -t
 * x1`, `-t x1z`, `-A x`, `-A d`; `od -c` of text without escapes): every
 * line of a dump's first MiB. One search for a line break before a `0`
 * (prose and code seldom start a line so), one line judged a line. A
 * search for `00 ` (an offset's end) stopped at each `0`: `0:` repeated
 * took 134 ms for 8 MiB, 93 without it and `0a`'s.
 */
function findOdOffset(w: Uint8Array, text: string, from: number, limit: number): boolean {
  const first = from === 0 || w[from - 1] === 10 ? from : -1;
  if (first >= 0 && first < limit && w[first] === 48 && opensOdLine(w, first) && isDumpLineStart(w, first)) return true;
  for (let i = text.indexOf("\n0", from); i >= 0 && i + 1 < limit; i = text.indexOf("\n0", i + 2)) {
    if (opensOdLine(w, i + 1) && isDumpLineStart(w, i + 1)) return true;
  }
  return false;
}

/**
 * Whether the window holds an od line that ends in `<` (`-t x1z`'s text
 * column, with offsets or without), the line read whole: one search, one
 * line judged for each line holding it, its start found by a search back
 * that no other search of this line repeats. (`od -A n -t x1` without its
 * text column is not seen: a search for ` 0a`, a line break's byte, stopped
 * at each `0` of hex text or each blank of prose; the host's values are
 * found in it by known.ts's separated hex forms.)
 */
function findOdLineEnd(w: Uint8Array, text: string, from: number, limit: number): boolean {
  const endsLine = (i: number) => w[i] === 10 || w[i] === 13 || i >= limit;
  return odMarks(w, text, "<", from, limit, (i) => endsLine(i + 1));
}

/** Whether a line holding `mark` where `at` says it may stand opens as od's and is a dump's: one such line judged a line. */
function odMarks(w: Uint8Array, text: string, mark: string, from: number, limit: number, at: (i: number) => boolean): boolean {
  for (let i = text.indexOf(mark, from); i >= 0 && i < limit; ) {
    if (at(i)) {
      const start = text.lastIndexOf("\n", i) + 1;
      if (start >= from && opensOdLine(w, start) && isDumpLineStart(w, start)) return true;
      const next = text.indexOf("\n", i);
      if (next < 0) return false;
      i = text.indexOf(mark, next);
    } else i = text.indexOf(mark, i + mark.length);
  }
  return false;
}

/** Marks not after two blanks a window's search steps over one by one before it looks for the blanks with the mark. */
const MARK_MISSES = 256;

/**
 * Whether a line holding `mark` after two blanks, where `at` says it may
 * stand, is a dump's (one such mark judged a line). The mark is searched
 * alone (memchr on a byte prose seldom holds); past MARK_MISSES marks not
 * after two blanks, with its blanks (a search that starts at each blank,
 * which prose is full of: 50 MB of it 1.1x to 1.5x `cp && sha256sum` when
 * always so; `|` repeated 2.6x when never so).
 */
function marksDumpLine(text: string, w: Uint8Array, mark: string, from: number, limit: number, at: (i: number, start: number) => boolean): boolean {
  let misses = 0;
  for (let i = text.indexOf(mark, from); i >= 0 && i < limit; ) {
    if (w[i - 1] === 32 && w[i - 2] === 32) {
      const start = text.lastIndexOf("\n", i) + 1;
      if (start >= from && at(i, start) && isDumpLineStart(w, start)) return true;
      const next = text.indexOf("\n", i);
      if (next < 0) return false;
      i = text.indexOf(mark, next);
    } else if (++misses < MARK_MISSES) i = text.indexOf(mark, i + 1);
    else {
      const found = text.indexOf(`  ${mark}`, i + 1);
      i = found < 0 ? -1 : found + 2;
    }
  }
  return false;
}

/** Whether [start, end) is an offset alone, as hexdump and od end a dump with. */
function isOffsetAlone(w: Uint8Array, start: number, end: number): boolean {
  if (end - start < MIN_OD_OFFSET_DIGITS || end - start > MAX_OFFSET_DIGITS) return false;
  for (let k = start; k < end; k++) if (HEX_VALUE[w[k]!]! < 0) return false;
  return true;
}

/** A window read with its dump lines decoded, a piece a line. */
export type DumpReading = PieceReading;

let out = Buffer.alloc(0);

/**
 * `window` (its first `length` bytes, followed by zero bytes) with each
 * dump line decoded and joined to the next (their line breaks dropped),
 * other lines as they are; `from` and `before` are where its judged part
 * starts and ends (a line that starts before them is on their side).
 */
export function readHexDumps(window: Uint8Array, length: number, from: number, before: number, padding: number): DumpReading {
  // A dump line decodes to fewer bytes than it holds; any other line is copied.
  if (out.length < length + padding) out = Buffer.alloc(length + padding);
  const outStarts: number[] = [];
  const windowStarts: number[] = [];
  let o = 0;
  let uFrom = -1;
  let uBefore = -1;
  const lines: XxdLines = { words: false };
  /** Where the bytes of the line before start in the result, if it was a dump's. */
  let repeat = -1;
  /** Whether the lines before were a dump's (a `*` among them). */
  let inDump = false;
  for (let i = 0; i < length; ) {
    if (uFrom < 0 && i >= from) uFrom = o;
    if (uBefore < 0 && i >= before) uBefore = o;
    const end = lineEnd(window, i, length);
    const next = end < length && window[end] === 13 ? end + 2 : end + 1;
    outStarts.push(o);
    windowStarts.push(i);
    const n = decodeDumpLine(window, i, end, out, o, lines);
    if (n > 0) {
      repeat = o;
      o += n;
      inDump = true;
    } else if (repeat >= 0 && end === i + 1 && window[i] === 42) {
      // A `*` (hexdump, od, `xxd -a`): the line before it repeated, once here (a dump line is over three times the bytes it shows: the result stays shorter than the window).
      out.copyWithin(o, repeat, o);
      o += o - repeat;
      repeat = -1;
    } else if (inDump && isOffsetAlone(window, i, end)) {
      // The offset alone that ends a hexdump's or od's dump: the dump's end, not more of its last line's bytes.
      out[o++] = 10;
      repeat = -1;
      inDump = false;
    } else {
      repeat = -1;
      inDump = false;
      const stop = Math.min(next, length);
      out.set(window.subarray(i, stop), o);
      o += stop - i;
    }
    i = next;
  }
  if (uFrom < 0) uFrom = o;
  if (uBefore < 0) uBefore = o;
  out.fill(0, o, o + padding);
  return { bytes: out.subarray(0, o + padding), length: o, from: uFrom, before: uBefore, outStarts, windowStarts };
}

/** The window's offset of the line that wrote the result's byte at `index`. */
export function dumpWindowOffset(reading: DumpReading, index: number): number {
  return reading.windowStarts[pieceAt(reading, index)] ?? 0;
}
