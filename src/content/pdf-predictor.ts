// A FlateDecode stream's predictor (PDF 32000-1, 7.4.4.4): its
// /DecodeParms may say that the inflated bytes are differences (TIFF
// predictor 2: each component less the same component of the pixel before;
// PNG predictors 10 to 15: rows that each open with a byte naming how they
// were filtered, as in a PNG image). Every viewer undoes it, so a content
// stream written so shows its text while its inflated bytes hold row
// differences: undone here before anything reads them, in place (the
// output is never longer than the input and is written behind it), in one
// pass.

/** A stream's predictor, as its /DecodeParms give it, its defaults (Colors 1, BitsPerComponent 8, Columns 1) filled in. */
export interface Predictor {
  /** 2 (TIFF) or 10 to 15 (PNG: each row's own byte says how it was filtered). */
  predictor: number;
  colors: number;
  bitsPerComponent: number;
  columns: number;
}

/** Makes the error a stream is refused with, from why it cannot be read. */
export type Unreadable = (why: string) => Error;

/** poppler's limit on /Colors (gfxColorMaxComps): past it, it reads no predictor, which pdf.js applies. */
const MAX_COLORS = 32;
/** A row of more bits than this is past what poppler reads (an int's range). */
const MAX_ROW_BITS = 2 ** 31 - 1;

/** The end of a name (PDF's delimiters and blanks). */
const NAME_END = /[\s/<>[\]()%{}]/;

/**
 * Where the value of the first `/key` (a whole name) in `text` starts, past
 * blanks, or -1. indexOf from one place on: a regular expression that
 * looked again after every partial match would cost the square of a
 * dictionary of many near misses.
 */
function valueAt(text: string, key: string): number {
  for (let at = text.indexOf(key); at >= 0; at = text.indexOf(key, at + 1)) {
    let k = at + key.length;
    if (k < text.length && !NAME_END.test(text[k]!)) continue;
    while (k < text.length && /\s/.test(text[k]!)) k++;
    return k;
  }
  return -1;
}

/** An indirect reference (`12 0 R`) at `at`: where it ends, or -1. */
function referenceEnd(text: string, at: number): number {
  const m = /^\d+\s+\d+\s+R(?![A-Za-z0-9])/.exec(text.slice(at, at + 32));
  return m ? at + m[0].length : -1;
}

/** One /DecodeParms entry: a dictionary's text, `null` (none), or an indirect reference (which this reader does not follow). */
export type Parms = { dict: string } | "null" | "reference";

/** The entry at `at`, and where it ends; undefined when it is none of these. */
function parmsAt(text: string, at: number): { parms: Parms; end: number } | undefined {
  if (text.startsWith("<<", at)) {
    const close = text.indexOf(">>", at + 2);
    return close < 0 ? undefined : { parms: { dict: text.slice(at + 2, close) }, end: close + 2 };
  }
  if (text.startsWith("null", at)) return { parms: "null", end: at + 4 };
  const end = referenceEnd(text, at);
  return end < 0 ? undefined : { parms: "reference", end };
}

/**
 * The /DecodeParms of a stream dictionary, one for each filter, as poppler
 * and pdf.js pair them: a dictionary goes with a filter given as a name,
 * an array's entries with a filter array's, in order (a dictionary with an
 * array, or an array with a name, gives no filter any parameters); a
 * filter past them has none. `/DecodeParms`, or `/DP`; "both" when the
 * dictionary has both (poppler reads the first, pdf.js the second). Read once for all the filters (a stream of thousands of filters
 * read the array to its own for each, in time as the square of their count).
 */
export function decodeParmsOf(dict: string, filterIsArray: boolean): Parms[] | "both" {
  let at = valueAt(dict, "/DecodeParms");
  const dp = valueAt(dict, "/DP");
  // pdf.js takes /DP first: with both, the two readers may read different parameters.
  if (at >= 0 && dp >= 0) return "both";
  if (at < 0) at = dp;
  if (at < 0) return [];
  if (dict[at] !== "[") {
    const one = filterIsArray ? undefined : parmsAt(dict, at);
    return one === undefined ? [] : [one.parms];
  }
  if (!filterIsArray) return [];
  const all: Parms[] = [];
  for (let k = at + 1; ; ) {
    while (k < dict.length && /\s/.test(dict[k]!)) k++;
    const entry = parmsAt(dict, k);
    if (entry === undefined) return all;
    all.push(entry.parms);
    k = entry.end;
  }
}

/** The integer `/key` of a parameter dictionary, or `fallback` when it has none; `unreadable` when it is not a plain integer. */
function integerOf(parms: string, key: string, fallback: number, unreadable: Unreadable): number {
  const at = valueAt(parms, key);
  if (at < 0) return fallback;
  if (referenceEnd(parms, at) >= 0) throw unreadable(`gives its ${key} as an indirect object, which this check does not follow`);
  const m = /^[+-]?\d+(?:\.0*)?(?![\d.])/.exec(parms.slice(at, at + 24));
  if (!m) throw unreadable(`gives its ${key} as something other than a whole number`);
  return Number(m[0]);
}

/**
 * The predictor a FlateDecode filter's parameters name, or undefined for
 * none (no /Predictor, or 1 and below, which poppler and pdf.js both read
 * as none). A predictor other than 2 and 10 to 15, and parameters out of
 * range, are refused (`unreadable`): pdf.js refuses such a stream (and
 * shows the page's text up to it), poppler reads its bytes as they are,
 * so what a reader shows is not the bytes either way.
 */
export function predictorOf(parms: Parms | undefined, unreadable: Unreadable): Predictor | undefined {
  if (parms === undefined || parms === "null") return undefined;
  if (parms === "reference") throw unreadable("has its /DecodeParms in an indirect object, which this check does not follow");
  const predictor = integerOf(parms.dict, "/Predictor", 1, unreadable);
  if (predictor <= 1) return undefined;
  if (predictor !== 2 && (predictor < 10 || predictor > 15)) throw unreadable(`names /Predictor ${predictor}, which is none of 1, 2 and 10 to 15`);
  const colors = integerOf(parms.dict, "/Colors", 1, unreadable);
  const bitsPerComponent = integerOf(parms.dict, "/BitsPerComponent", 8, unreadable);
  // `/BPC` is an inline image's abbreviation: pdf.js reads it in a stream's parameters too, poppler does not.
  if (integerOf(parms.dict, "/BPC", bitsPerComponent, unreadable) !== bitsPerComponent) throw unreadable("gives its predictor's component width as /BPC, which poppler does not read and pdf.js does");
  const columns = integerOf(parms.dict, "/Columns", 1, unreadable);
  if (colors < 1 || colors > MAX_COLORS) throw unreadable(`gives its predictor /Colors ${colors}, not 1 to ${MAX_COLORS}`);
  if (bitsPerComponent < 1 || bitsPerComponent > 16) throw unreadable(`gives its predictor /BitsPerComponent ${bitsPerComponent}, not 1 to 16`);
  // poppler adds TIFF components in a byte: wider ones come out cut to 8 bits there, whole in pdf.js.
  if (predictor === 2 && bitsPerComponent > 8) throw unreadable(`has a TIFF predictor on components of ${bitsPerComponent} bits, which poppler and pdf.js read differently`);
  if (columns < 1 || columns * colors * bitsPerComponent > MAX_ROW_BITS) throw unreadable(`gives its predictor /Columns ${columns}, not 1 to a row of 2^31 bits`);
  return { predictor, colors, bitsPerComponent, columns };
}

/**
 * `data` with the predictor undone, written over it: a view of its first
 * bytes. `unreadable`: a PNG row that names a filter other than 0 to 4, and
 * a last row cut short, which poppler fills from the row above (a string
 * cut at the row's end reads on into that row's tail: measured with
 * pdftotext 22.12) and pdf.js with zeros. A PNG filter byte with no row
 * after it ends the data in both.
 */
export function undoPredictor(data: Uint8Array, p: Predictor, unreadable: Unreadable): Uint8Array {
  const rowBytes = Math.ceil((p.columns * p.colors * p.bitsPerComponent) / 8);
  if (p.predictor === 2) {
    const cut = data.length % rowBytes;
    if (cut !== 0) throw unreadable(cutShort(cut, rowBytes));
    undoTiff(data, p, rowBytes);
    return data;
  }
  // PNG's "bytes per pixel": the left neighbour is this many bytes back, at least one.
  const pixelBytes = Math.ceil((p.colors * p.bitsPerComponent) / 8);
  return data.subarray(0, undoPng(data, pixelBytes, rowBytes, unreadable));
}

/**
 * PNG rows (RFC 2083, 6): each a filter byte, then `rowBytes` bytes, each
 * the difference from its left neighbour (`pixelBytes` back), the byte
 * above, their average, or the Paeth predictor of the two and the byte
 * above-left. Written over `d`: the row out starts before the row in (one
 * byte earlier for each row before), a byte is written only after the one
 * it replaces was read, and the bytes it is predicted from are the rows
 * out, behind. How many bytes are out.
 */
function undoPng(d: Uint8Array, pixelBytes: number, rowBytes: number, unreadable: Unreadable): number {
  const n = d.length;
  let i = 0;
  let o = 0;
  /** Where the row above starts in the output, or -1 before the first row (whose row above is zeros). */
  let up = -1;
  for (let row = 0; i < n; row++) {
    const filter = d[i++]!;
    if (i === n) break;
    const length = Math.min(rowBytes, n - i);
    if (length < rowBytes) throw unreadable(cutShort(length, rowBytes));
    switch (filter) {
      case 0:
        d.copyWithin(o, i, i + length);
        break;
      case 1:
        for (let j = 0; j < length; j++) d[o + j] = d[i + j]! + (j >= pixelBytes ? d[o + j - pixelBytes]! : 0);
        break;
      case 2:
        if (up < 0) d.copyWithin(o, i, i + length);
        else for (let j = 0; j < length; j++) d[o + j] = d[i + j]! + d[up + j]!;
        break;
      case 3:
        for (let j = 0; j < length; j++) {
          const left = j >= pixelBytes ? d[o + j - pixelBytes]! : 0;
          const above = up < 0 ? 0 : d[up + j]!;
          d[o + j] = d[i + j]! + ((left + above) >> 1);
        }
        break;
      case 4:
        for (let j = 0; j < length; j++) {
          const left = j >= pixelBytes ? d[o + j - pixelBytes]! : 0;
          const above = up < 0 ? 0 : d[up + j]!;
          const aboveLeft = up < 0 || j < pixelBytes ? 0 : d[up + j - pixelBytes]!;
          d[o + j] = d[i + j]! + paeth(left, above, aboveLeft);
        }
        break;
      default:
        throw unreadable(`has a row (${row}) whose PNG predictor byte is ${filter}, not 0 to 4`);
    }
    up = o;
    o += length;
    i += length;
  }
  return o;
}

/** Why a stream whose last row is cut short is not read. */
const cutShort = (length: number, rowBytes: number) =>
  `has a last predicted row of ${length} bytes, not ${rowBytes}: poppler fills the rest from the row above, pdf.js with zeros, so a viewer shows what its bytes do not say`;

/** PNG's Paeth predictor: of left, above and above-left, the one nearest to left + above - above-left (ties in that order). */
function paeth(a: number, b: number, c: number): number {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/**
 * TIFF predictor 2 (TIFF 6.0, section 14): in each row, every component
 * but the first pixel's is its difference from the same component of the
 * pixel before, modulo 2^BitsPerComponent (8 at most: predictorOf), components packed high bit
 * first; a row's bits left over are padding. In place: each value is
 * written where it was read; whole rows only (undoPredictor).
 */
function undoTiff(d: Uint8Array, p: Predictor, rowBytes: number): void {
  const { colors, bitsPerComponent: bits } = p;
  const n = d.length;
  for (let row = 0; row < n; row += rowBytes) {
    const end = row + rowBytes;
    if (bits === 8) {
      for (let k = row + colors; k < end; k++) d[k] = d[k]! + d[k - colors]!;
    } else {
      // Any other width (1 to 7 bits), a component at a time; a row's bits after its last component are padding.
      const mask = (1 << bits) - 1;
      const components = p.columns * colors;
      for (let c = colors; c < components; c++) {
        const value = (bitsAt(d, row, c * bits, bits) + bitsAt(d, row, (c - colors) * bits, bits)) & mask;
        setBitsAt(d, row, c * bits, bits, value);
      }
    }
  }
}

/** The `width` bits at bit `bit` of the row at `row`, high bit first. */
function bitsAt(d: Uint8Array, row: number, bit: number, width: number): number {
  let value = 0;
  for (let b = bit; b < bit + width; b++) value = (value << 1) | ((d[row + (b >> 3)]! >> (7 - (b & 7))) & 1);
  return value;
}

/** Writes `value` in the `width` bits at bit `bit` of the row at `row`, high bit first. */
function setBitsAt(d: Uint8Array, row: number, bit: number, width: number, value: number): void {
  for (let k = width - 1, b = bit; k >= 0; k--, b++) {
    const at = row + (b >> 3);
    const shift = 7 - (b & 7);
    d[at] = (d[at]! & ~(1 << shift)) | (((value >> k) & 1) << shift);
  }
}
