// Whole files written in a byte encoding other than base64 and hex: what
// a program prints for raw bytes, or a stock tool makes of a file, when an
// agent is asked to "encode the .env" or logs a buffer:
// - decimal byte values in brackets: Node's JSON of a Buffer
//   (`{"type":"Buffer","data":[84,69,…]}`), Python's `list(bytes)`
//   (`[84, 69, …]`), Java's `Arrays.toString(bytes)` (signed: `-61`);
// - uuencode (`uuencode`, `begin 644 name` then lines of `M…`);
// - Ascii85 in Adobe's `<~ … ~>` armour (Python's a85encode(adobe=True));
// - base32 (coreutils `base32`, RFC 4648: capitals, 2 to 7, `=`).
// Every value of the file is then under the reach of no rule and of no
// host value. The second reading here replaces each run of such an
// encoding with the bytes it holds, the rest of the window as it is, and
// scan.ts reads it as it reads the window. A run is found by its opening
// (`[` and a decimal byte, `begin NNN name`, `<~`) or, for base32, as
// whole lines made only of its alphabet; it is read only when it holds 16
// bytes or more (a value's length), so a short list of numbers or a word
// in capitals stays as it is. A run belongs to the window it starts in
// (decoded there, up to the window's end); each byte of the window is read
// a few times at most. Bare Ascii85 and base85 (no armour: Python's
// a85encode, b85encode) are not read: their alphabets are nearly all of
// printable ASCII, so a minified script's line, a URL or base64 is a line
// of them; looking for them cost 18 ms for each 8 MiB of the benchmark's
// negatives, found 179 runs there and read each again (the whole scan
// 15 to 46 ms).
import { type PieceReading, pieceAt } from "./text-forms.js";

/** How a finding of this reading says where it was, by encoding. */
export const ENCODING_NAMES = ["", "decimal byte values", "uuencode", "Ascii85", "base32"] as const;
export const enum Encoding {
  Text = 0,
  Decimal = 1,
  Uu = 2,
  Ascii85 = 3,
  Base32 = 4,
}

/** Bytes a run must hold to be read: a value's length. */
export const MIN_DECODED = 16;
/** Blanks (line breaks, an indent) after a decimal list's comma at most: a pretty-printed JSON array's. */
const MAX_LIST_SPACE = 64;

const isDigit = (c: number) => c >= 48 && c <= 57;
const isBlank = (c: number) => c === 32 || c === 9 || c === 10 || c === 13;

/** Base32's digits' values (-1: none), RFC 4648's alphabet. */
const BASE32 = new Int8Array(256).fill(-1);
for (const [i, c] of [..."ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"].entries()) BASE32[c.charCodeAt(0)] = i;
/** Ascii85's digits: `!` to `u`, and `z` for four zero bytes. */
const isA85 = (c: number) => c >= 33 && c <= 117;
const isBase32 = (c: number) => BASE32[c]! >= 0;

/** A run of an encoding: [start, end) of the window, the decodings it is read as (bits of 1 << Encoding). */
interface Run {
  start: number;
  end: number;
  kinds: number;
}

/** `[`s before no number a window's search steps over one by one before an expression looks for the next list. */
const BRACKET_MISSES = 256;

/**
 * The decimal lists from `[` in the window: numbers of 0 to 255 (or -128
 * to -1, Java's signed bytes) between `,` and blanks, up to `]` (or the
 * window's end), at least MIN_DECODED of them. Each `[` before a number
 * and a comma opens one, found by a native search for `[` (code and logs
 * hold a few a line), past BRACKET_MISSES others by an expression's own
 * loop (a native search for each `[` and a look at it took `ESC [`
 * repeated, a `[` every other byte, from 58 to 115 ms for 8 MiB; the
 * expression alone read every byte of the benchmark's negatives: 8% of
 * their scan). The list is read from it, and the search goes on after
 * what was read.
 */
function decimalRuns(text: string, w: Uint8Array, length: number, runs: Run[]): void {
  let misses = 0;
  let i = text.indexOf("[");
  // The next `[` searched for only when the reading did not stop at one (`[1,[1,…`: a search a list).
  for (; i >= 0 && misses < BRACKET_MISSES; i = w[i] === 91 ? i : text.indexOf("[", i)) {
    // Read once: whether the `[` opens a list is its reading's first number and comma (`[1,` repeated read each twice: 190 M instructions a MiB).
    const read = readDecimalList(w, i, length, runs);
    if (read >= 0) i = Math.max(read, i + 1);
    else {
      misses++;
      i++;
    }
  }
  if (i < 0) return;
  const opening = /\[[ \t\r\n]*-?[0-9]{1,3}[ \t\r\n]*,/g;
  opening.lastIndex = i;
  for (let m = opening.exec(text); m; m = opening.exec(text)) opening.lastIndex = Math.max(readDecimalList(w, m.index, length, runs), m.index + 1);
}

/**
 * Reads the list from the `[` at `start`, adding it to `runs` if it is one;
 * where its reading stopped, or -1 where the `[` opens none (no number and
 * comma after it: the list's first byte is one).
 */
function readDecimalList(w: Uint8Array, start: number, length: number, runs: Run[]): number {
  let i = start + 1;
  let count = 0;
  let closed = false;
  for (;;) {
    let space = 0;
    while (i < length && isBlank(w[i]!) && space++ < MAX_LIST_SPACE) i++;
    const end = decimalEnd(w, i, length);
    if (end < 0) break;
    count++;
    i = end;
    space = 0;
    while (i < length && isBlank(w[i]!) && space++ < MAX_LIST_SPACE) i++;
    if (w[i] === 44) i++;
    else {
      if (count === 1) return -1;
      closed = w[i] === 93;
      break;
    }
  }
  if (count === 0) return -1;
  if (count >= MIN_DECODED && (closed || i >= length)) runs.push({ start, end: closed ? i + 1 : i, kinds: 1 << Encoding.Decimal });
  return i;
}

/** Where the decimal byte at `i` ends (`-` and up to 3 digits, 0 to 255 or -128 to -1, Java's signed bytes), or -1. */
function decimalEnd(w: Uint8Array, i: number, length: number): number {
  const negative = w[i] === 45;
  let k = negative ? i + 1 : i;
  let n = 0;
  const first = k;
  while (k < length && isDigit(w[k]!) && k - first < 4) n = n * 10 + w[k++]! - 48;
  if (k === first || k - first > 3 || (k < length && isDigit(w[k]!))) return -1;
  if (negative ? n === 0 || n > 128 : n > 255) return -1;
  return k;
}

/** The byte the decimal at [i, end) stands for (one decimalEnd read). */
function decimalByte(w: Uint8Array, i: number, end: number): number {
  const negative = w[i] === 45;
  let n = 0;
  for (let k = negative ? i + 1 : i; k < end; k++) n = n * 10 + w[k]! - 48;
  return negative ? 256 - n : n;
}

/** The end of the line at `i` (its `\n` or a `\r` before it), at most `limit`. */
function lineEnd(w: Uint8Array, i: number, limit: number): number {
  let k = i;
  while (k < limit && w[k] !== 10) k++;
  return k > i && w[k - 1] === 13 ? k - 1 : k;
}
/** Where the line after the one ending at `end` starts. */
const nextLine = (w: Uint8Array, end: number) => (w[end] === 13 ? end + 2 : end + 1);

/** Characters a uuencoded line of `n` bytes holds after its length character. */
const uuChars = (n: number) => Math.ceil(n / 3) * 4;
/** The bytes the uuencoded line at [i, end) holds, or -1 where it is none (its length character, then that many characters of ` ` to `` ` ``; one more is padding). */
function uuLineBytes(w: Uint8Array, i: number, end: number): number {
  const n = (w[i]! - 32) & 63;
  if (w[i]! < 32 || w[i]! > 96 || n === 0) return -1;
  const chars = end - i - 1;
  if (chars < uuChars(n) || chars > uuChars(n) + 1) return -1;
  for (let k = i + 1; k < end; k++) if (w[k]! < 32 || w[k]! > 96) return -1;
  return n;
}

const BEGIN = Buffer.from("\nbegin ", "latin1");

/**
 * Where the first line at or after `from` that starts with `begin ` starts,
 * or -1: searched with the line break before it, in the bytes (`begin `
 * alone stopped at each `b` of hex text: a sheet's 31 MB of digests, 30 ms;
 * the string's search for `\nbegin ` at each line of prose: 3.5 ms for 8
 * MiB, the bytes' 0.8).
 */
function beginLineFrom(b: Buffer, from: number): number {
  if (from === 0 && b.subarray(0, BEGIN.length - 1).equals(BEGIN.subarray(1))) return 0;
  const k = b.indexOf(BEGIN, Math.max(0, from - 1));
  return k < 0 ? -1 : k + 1;
}

/** Each `begin NNN name` line at a line's start and the uuencoded lines after it. */
function uuRuns(w: Uint8Array, length: number, runs: Run[]): void {
  const window = Buffer.from(w.buffer, w.byteOffset, length);
  for (let at = beginLineFrom(window, 0); at >= 0; at = beginLineFrom(window, at + 1)) {
    let k = at + 6;
    while (k < length && w[k]! >= 48 && w[k]! <= 55 && k - at < 11) k++;
    if (k - at < 9 || w[k] !== 32) continue;
    let i = nextLine(w, lineEnd(w, k, length));
    let bytes = 0;
    let end = i;
    while (i < length) {
      const e = lineEnd(w, i, length);
      const n = uuLineBytes(w, i, e);
      if (n < 0) break;
      bytes += n;
      end = e;
      i = nextLine(w, e);
    }
    // A uuencoded line holds no small letter: the next `begin` the search finds is past this run.
    if (bytes >= MIN_DECODED) runs.push({ start: at, end, kinds: 1 << Encoding.Uu });
  }
}

/** Each Adobe `<~ … ~>`: Ascii85's digits, `z` and blanks, up to `~>` (or the window's end). */
function adobeRuns(text: string, w: Uint8Array, length: number, runs: Run[]): void {
  for (let at = text.indexOf("<~", 0); at >= 0 && at < length; ) {
    let i = at + 2;
    let digits = 0;
    while (i < length && (isA85(w[i]!) || w[i] === 122 || isBlank(w[i]!))) {
      if (!isBlank(w[i]!)) digits += w[i] === 122 ? 5 : 1;
      i++;
    }
    const closed = w[i] === 126 && w[i + 1] === 62;
    if ((closed || i >= length) && (digits * 4) / 5 >= MIN_DECODED) runs.push({ start: at, end: closed ? i + 2 : i, kinds: 1 << Encoding.Ascii85 });
    at = text.indexOf("<~", Math.max(i, at + 2));
  }
}

/** Characters of base32 that hold MIN_DECODED bytes. */
const MIN_BASE32 = Math.ceil((MIN_DECODED * 8) / 5);

/**
 * Where the whole line of base32 (its digits, then `=` padding) from
 * `start` ends, or -1 where the line is no such one; one character
 * repeated (`AAAA…`, a heading's underline of capitals) is none either:
 * never an encoding of a value.
 */
function base32LineEnd(w: Uint8Array, start: number, length: number): number {
  let k = start;
  let repeated = true;
  while (k < length && isBase32(w[k]!)) if (w[k++] !== w[start]) repeated = false;
  if (k === start || repeated) return -1;
  while (k < length && w[k] === 61) k++;
  return k >= length || w[k] === 10 || (w[k] === 13 && w[k + 1] === 10) ? k : -1;
}

/**
 * Runs of consecutive whole lines of base32 (coreutils `base32`, wrapped at
 * 76 or not) that do not overlap a run found by its opening (`delimited`,
 * sorted). A line of 19 digits or more holds four at a multiple of 16: the
 * pass looks one byte up every 16 where there is none (0.5 to 0.9 ms for
 * 8 MiB), and goes past each stretch of digits it finds, so each byte is
 * read a few times at most.
 */
function base32Runs(w: Uint8Array, length: number, delimited: Run[], runs: Run[]): void {
  let next = 0;
  for (let i = 0; i + 3 < length; i += 16) {
    if (!isBase32(w[i]!) || !isBase32(w[i + 1]!) || !isBase32(w[i + 2]!) || !isBase32(w[i + 3]!)) continue;
    let start = i;
    while (start > 0 && isBase32(w[start - 1]!)) start--;
    let end = start > 0 && w[start - 1] !== 10 ? -1 : base32LineEnd(w, start, length);
    if (end < 0) {
      // Not a whole line: the next look is past its digits.
      end = i + 4;
      while (end < length && isBase32(w[end]!)) end++;
    } else {
      for (let line = nextLine(w, end); line < length; line = nextLine(w, end)) {
        const lineEnd = base32LineEnd(w, line, length);
        if (lineEnd < 0) break;
        end = lineEnd;
      }
      while (next < delimited.length && delimited[next]!.end <= start) next++;
      const overlaps = next < delimited.length && delimited[next]!.start < end;
      if (!overlaps && end - start >= MIN_BASE32) runs.push({ start, end, kinds: 1 << Encoding.Base32 });
    }
    i = end - (end % 16);
  }
}

/** The runs of the window, sorted, none overlapping another. */
export function findByteEncodings(text: string, w: Uint8Array, length: number): Run[] {
  const delimited: Run[] = [];
  decimalRuns(text, w, length, delimited);
  uuRuns(w, length, delimited);
  adobeRuns(text, w, length, delimited);
  delimited.sort((a, b) => a.start - b.start);
  const kept: Run[] = [];
  for (const run of delimited) if (kept.length === 0 || run.start >= kept[kept.length - 1]!.end) kept.push(run);
  const bare: Run[] = [];
  base32Runs(w, length, kept, bare);
  return [...kept, ...bare].sort((a, b) => a.start - b.start);
}

/** Decodes [start, end) as `kind` into `into` from `at`; the number of bytes written. */
function decode(w: Uint8Array, start: number, end: number, kind: Encoding, into: Uint8Array, at: number): number {
  switch (kind) {
    case Encoding.Decimal:
      return decodeDecimal(w, start, end, into, at);
    case Encoding.Uu:
      return decodeUu(w, start, end, into, at);
    case Encoding.Ascii85:
      return decodeAscii85(w, start + 2, end, into, at);
    case Encoding.Base32:
      return decodeBase32(w, start, end, into, at);
    default:
      return 0;
  }
}

function decodeDecimal(w: Uint8Array, start: number, end: number, into: Uint8Array, at: number): number {
  let o = at;
  for (let i = start + 1; i < end; ) {
    const next = decimalEnd(w, i, end);
    if (next >= 0) {
      into[o++] = decimalByte(w, i, next);
      i = next;
    } else i++;
  }
  return o - at;
}

function decodeUu(w: Uint8Array, start: number, end: number, into: Uint8Array, at: number): number {
  let o = at;
  for (let i = nextLine(w, lineEnd(w, start, end)); i < end; ) {
    const e = lineEnd(w, i, end);
    const n = uuLineBytes(w, i, e);
    if (n < 0) break;
    const digit = (k: number) => (w[k]! - 32) & 63;
    for (let j = 0, k = i + 1; j < n; j += 3, k += 4) {
      const v = (digit(k) << 18) | (digit(k + 1) << 12) | (digit(k + 2) << 6) | digit(k + 3);
      for (let b = 0; b < 3 && j + b < n; b++) into[o++] = (v >> (16 - 8 * b)) & 255;
    }
    i = nextLine(w, e);
  }
  return o - at;
}

/** Ascii85 (digits `!` to `u`, `z`, blanks skipped, up to `~`), groups of 5 digits to 4 bytes, a last group padded. */
function decodeAscii85(w: Uint8Array, start: number, end: number, into: Uint8Array, at: number): number {
  let o = at;
  let value = 0;
  let digits = 0;
  const flush = (count: number) => {
    for (let b = 0; b < count; b++) into[o++] = Math.floor(value / 2 ** (24 - 8 * b)) & 255;
  };
  for (let i = start; i < end; i++) {
    const c = w[i]!;
    let d: number;
    if (c === 122 && digits === 0) {
      value = 0;
      flush(4);
      continue;
    } else if (c === 126) break;
    else d = isA85(c) ? c - 33 : -1;
    if (d < 0) continue;
    value = value * 85 + d;
    if (++digits === 5) {
      value %= 2 ** 32;
      flush(4);
      value = 0;
      digits = 0;
    }
  }
  if (digits > 1) {
    const kept = digits - 1;
    for (; digits < 5; digits++) value = value * 85 + 84;
    value %= 2 ** 32;
    flush(kept);
  }
  return o - at;
}

function decodeBase32(w: Uint8Array, start: number, end: number, into: Uint8Array, at: number): number {
  let o = at;
  let bits = 0;
  let value = 0;
  for (let i = start; i < end; i++) {
    const d = BASE32[w[i]!]!;
    if (d < 0) {
      if (w[i] === 61) break;
      continue;
    }
    value = ((value << 5) | d) & 0xffff;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      into[o++] = (value >> bits) & 255;
    }
  }
  return o - at;
}

/** A window read with its runs decoded, a piece a run or a copied stretch. */
export interface EncodedReading extends PieceReading {
  /** Each piece's encoding (Encoding.Text: copied). */
  kinds: Encoding[];
}

let out = Buffer.alloc(0);

/**
 * `window` (its first `length` bytes, followed by zero bytes) with each of
 * `runs` replaced by its decodings, a line break after each, the rest as
 * it is; `from` and `before` are where its judged part starts and ends: a
 * run is on the side its first byte is.
 */
export function readByteEncodings(window: Uint8Array, length: number, runs: Run[], from: number, before: number, padding: number): EncodedReading {
  // Each decoding is shorter than its run (at most 4 bytes for 5 characters); three of one run, and their line breaks.
  const size = 3 * length + 3 * runs.length + padding;
  if (out.length < size) out = Buffer.alloc(size);
  const reading: EncodedReading = { bytes: out, length: 0, from: -1, before: -1, outStarts: [], windowStarts: [], kinds: [] };
  let o = 0;
  const mark = (at: number, windowStart: number, windowEnd: number, copied: boolean, outEnd: () => number) => {
    for (const key of ["from", "before"] as const) {
      const edge = key === "from" ? from : before;
      if (reading[key] >= 0 || edge >= windowEnd) continue;
      if (copied) reading[key] = at + Math.max(0, edge - windowStart);
      else reading[key] = edge <= windowStart ? at : outEnd();
    }
  };
  const copy = (start: number, end: number) => {
    if (end <= start) return;
    reading.outStarts.push(o);
    reading.windowStarts.push(start);
    reading.kinds.push(Encoding.Text);
    out.set(window.subarray(start, end), o);
    mark(o, start, end, true, () => 0);
    o += end - start;
  };
  let i = 0;
  for (const run of runs) {
    copy(i, run.start);
    const at = o;
    for (const kind of [Encoding.Decimal, Encoding.Uu, Encoding.Ascii85, Encoding.Base32]) {
      if ((run.kinds & (1 << kind)) === 0) continue;
      reading.outStarts.push(o);
      reading.windowStarts.push(run.start);
      reading.kinds.push(kind);
      o += decode(window, run.start, run.end, kind, out, o);
      out[o++] = 10;
    }
    mark(at, run.start, run.end, false, () => o);
    i = run.end;
  }
  copy(i, length);
  reading.from = reading.from < 0 ? o : reading.from;
  reading.before = reading.before < 0 ? o : reading.before;
  out.fill(0, o, o + padding);
  reading.length = o;
  reading.bytes = out.subarray(0, o + padding);
  return reading;
}

/** The piece of the reading that wrote its byte at `index`: the window's offset of that byte (copied) or of its run's start, and its encoding. */
export function encodedWindowOffset(reading: EncodedReading, index: number): { offset: number; kind: Encoding } {
  const lo = pieceAt(reading, index);
  const kind = reading.kinds[lo] ?? Encoding.Text;
  const start = reading.windowStarts[lo] ?? 0;
  return { offset: kind === Encoding.Text ? start + index - reading.outStarts[lo]! : start, kind };
}
