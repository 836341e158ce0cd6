// Text drawn with an embedded subset font (what Chrome and Skia, WeasyPrint,
// LibreOffice, Word, Typst and pdf-lib write) is glyph numbers in the content
// stream, not letters: only the font's ToUnicode map (a CMap stream) says
// which letters they are. So the ToUnicode maps of a PDF are read, each font
// resource name (`/F4`) is tied to the maps of the fonts it names wherever
// the file names them (`/F4 12 0 R`, in a page's, a form's or an inherited
// resource dictionary, inline or an object of its own), and every content
// stream's strings are read again through the map of the font that shows
// them. Names are tied across the whole file instead of through each page's
// resources: a generator names a font once per file, and a name that two
// fonts share (merged files) is read through each of their maps.
import type { InspectContext } from "./inspect.js";
import { decodeHex, ENDS_NAME, lastString, OPERATOR, readString, TextLine } from "./pdf-syntax.js";

const HEX_DIGIT = new Uint8Array(256);
for (const c of Buffer.from("0123456789abcdefABCDEF", "latin1")) HEX_DIGIT[c] = 1;

const asBuffer = (b: Uint8Array) => (Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.length));
const isBlank = (c: number | undefined) => c === 32 || c === 10 || c === 13 || c === 9 || c === 12 || c === 0;
const isDigit = (c: number | undefined) => c !== undefined && c >= 48 && c <= 57;
/** A code's key: its length and its value, so that <0041> and <41> differ. */
const keyOf = (length: number, code: number) => length * 0x1_0000_0000 + code;
/** The longest Unicode text one code maps to (PDF 32000-1 allows 512 bytes); longer entries are ignored. */
const MAX_DESTINATION_BYTES = 512;

/** Blanks a map may give a space glyph (wkhtmltopdf maps it to a tab): read as a space, as they are drawn. */
const SPACE = new Uint8Array(0x3001);
for (const cp of [9, 0xa0, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x202f, 0x205f, 0x3000]) SPACE[cp] = 1;
/** The letters of U+FB00 to U+FB06, which a map may give a ligature's glyph. */
const LIGATURE = ["ff", "fi", "fl", "ffi", "ffl", "st", "st"];

/** Letters written as UTF-8, within the file's decode budget. */
class TextSink {
  private buf = Buffer.allocUnsafe(4096);
  length = 0;
  private limit = 0;
  private overflow: () => never = () => {
    throw new Error("TextSink used before start()");
  };

  /** Starts the text: at most `limit` bytes, past which `overflow` throws (a map may turn one byte into hundreds). */
  start(limit: number, overflow: () => never): void {
    this.length = 0;
    this.limit = limit;
    this.overflow = overflow;
  }

  private room(n: number): void {
    if (this.length + n <= this.buf.length) return;
    if (this.length + n > this.limit) this.overflow();
    const grown = Buffer.allocUnsafe(Math.min(Math.max(this.buf.length * 2, this.length + n), this.limit));
    this.buf.copy(grown, 0, 0, this.length);
    this.buf = grown;
  }

  byte(b: number): void {
    this.room(1);
    this.buf[this.length++] = b;
  }

  codePoint(cp: number): void {
    if (SPACE[cp] === 1) cp = 32;
    else if (cp >= 0xfb00 && cp <= 0xfb06) return this.text(LIGATURE[cp - 0xfb00]!);
    this.room(4);
    const b = this.buf;
    if (cp < 0x80) b[this.length++] = cp;
    else if (cp < 0x800) {
      b[this.length++] = 0xc0 | (cp >> 6);
      b[this.length++] = 0x80 | (cp & 0x3f);
    } else if (cp < 0x10000) {
      if (cp >= 0xd800 && cp <= 0xdfff) cp = 0xfffd;
      b[this.length++] = 0xe0 | (cp >> 12);
      b[this.length++] = 0x80 | ((cp >> 6) & 0x3f);
      b[this.length++] = 0x80 | (cp & 0x3f);
    } else {
      b[this.length++] = 0xf0 | (cp >> 18);
      b[this.length++] = 0x80 | ((cp >> 12) & 0x3f);
      b[this.length++] = 0x80 | ((cp >> 6) & 0x3f);
      b[this.length++] = 0x80 | (cp & 0x3f);
    }
  }

  text(s: string): void {
    for (const ch of s) this.codePoint(ch.codePointAt(0)!);
  }

  bytes(): Buffer {
    return this.buf.subarray(0, this.length);
  }
}

/** A ToUnicode map's entry: one code point, or several (a ligature). */
type Destination = number | string;
interface Range {
  lo: number;
  hi: number;
  start: Destination;
}

/** UTF-16BE bytes as a destination. */
function destination(bytes: number[]): Destination | undefined {
  if (bytes.length < 2 || bytes.length > MAX_DESTINATION_BYTES) return undefined;
  const units: number[] = [];
  for (let i = 0; i + 1 < bytes.length; i += 2) units.push((bytes[i]! << 8) | bytes[i + 1]!);
  const s = String.fromCharCode(...units);
  const cp = s.codePointAt(0)!;
  return s.length === (cp > 0xffff ? 2 : 1) ? cp : s;
}

/** A destination moved on by `by` (a bfrange's later codes): its last unit counts up. */
function plus(start: Destination, by: number): Destination {
  if (typeof start === "number") return start + by;
  return start.slice(0, -1) + String.fromCharCode(start.charCodeAt(start.length - 1) + by);
}

/** Codes of one to four bytes to Unicode text (PDF 32000-1, 9.10.3). */
export class ToUnicodeMap {
  /** A code's length by its first byte, from the codespace ranges; 0: not declared. */
  private readonly lengthOf = new Uint8Array(256);
  private shortest = 0;
  private readonly chars = new Map<number, Destination>();
  /** bfrange entries, sorted by their first code's key. */
  private readonly ranges: Range[] = [];

  get size(): number {
    return this.chars.size + this.ranges.length;
  }

  codespace(lo: number[], hi: number[]): void {
    if (lo.length === 0 || lo.length > 4 || hi.length !== lo.length) return;
    for (let b = lo[0]!; b <= hi[0]!; b++) if (this.lengthOf[b] === 0) this.lengthOf[b] = lo.length;
    if (this.shortest === 0 || lo.length < this.shortest) this.shortest = lo.length;
  }

  char(code: number[], to: Destination): void {
    if (code.length === 0 || code.length > 4) return;
    this.chars.set(keyOf(code.length, codeValue(code)), to);
    if (this.shortest === 0) this.shortest = code.length;
  }

  range(lo: number[], hi: number[], start: Destination): void {
    if (lo.length === 0 || lo.length > 4 || hi.length !== lo.length) return;
    const from = keyOf(lo.length, codeValue(lo));
    const to = keyOf(lo.length, codeValue(hi));
    if (to < from) return;
    this.ranges.push({ lo: from, hi: to, start });
    if (this.shortest === 0) this.shortest = lo.length;
  }

  /** Sorts the ranges for the lookups; called once, after the last entry. */
  seal(): void {
    this.ranges.sort((a, b) => a.lo - b.lo);
  }

  private lookup(key: number): Destination | undefined {
    const found = this.chars.get(key);
    if (found !== undefined) return found;
    const r = this.ranges;
    let lo = 0;
    let hi = r.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (r[mid]!.lo <= key) lo = mid + 1;
      else hi = mid - 1;
    }
    const range = r[hi];
    return range !== undefined && key <= range.hi ? plus(range.start, key - range.lo) : undefined;
  }

  /** The text of the codes in `s` from `from` to `to`; a code the map does not hold reads as nothing. */
  decode(s: Uint8Array, from: number, to: number, sink: TextSink): void {
    const fallback = this.shortest || 1;
    let i = from;
    while (i < to) {
      const length = this.lengthOf[s[i]!] || fallback;
      if (i + length > to) break;
      let code = 0;
      for (let k = 0; k < length; k++) code = code * 256 + s[i + k]!;
      i += length;
      const text = this.lookup(keyOf(length, code));
      if (typeof text === "number") sink.codePoint(text);
      else if (text !== undefined) sink.text(text);
    }
  }
}

function codeValue(bytes: number[]): number {
  let v = 0;
  for (const b of bytes) v = v * 256 + b;
  return v;
}

/** A CMap's tokens that matter here: hex strings (as bytes), `[`, `]`, and words (names, numbers, operators). */
type Token = number[] | string;

function tokens(b: Buffer): Token[] {
  const out: Token[] = [];
  const n = b.length;
  const scratch = Buffer.allocUnsafe(MAX_DESTINATION_BYTES + 1);
  let i = 0;
  while (i < n) {
    const c = b[i]!;
    if (c === 60 && b[i + 1] === 60) {
      i += 2;
    } else if (c === 60) {
      const end = b.indexOf(62, i);
      if (end < 0) break;
      out.push([...scratchHex(b, i + 1, end, scratch)]);
      i = end + 1;
    } else if (c === 91 || c === 93) {
      out.push(c === 91 ? "[" : "]");
      i++;
    } else if (c === 37) {
      while (i < n && b[i] !== 10 && b[i] !== 13) i++;
    } else if (ENDS_NAME[c] === 1 && c !== 47) {
      i++;
    } else {
      const from = i;
      i++;
      while (i < n && ENDS_NAME[b[i]!] !== 1) i++;
      out.push(b.toString("latin1", from, i));
    }
  }
  return out;
}

/**
 * The bytes of the hex digits from `from` to `end`, in `scratch` (room for
 * MAX_DESTINATION_BYTES and one more); none for more than any code or
 * destination holds, which every use turns down.
 */
function scratchHex(b: Buffer, from: number, end: number, scratch: Buffer): Buffer {
  let count = 0;
  for (let j = from; j < end; j++) if (HEX_DIGIT[b[j]!] === 1) count++;
  if (count > 2 * MAX_DESTINATION_BYTES) return scratch.subarray(0, 0);
  return scratch.subarray(0, decodeHex(b, from, end, scratch, 0));
}

/** A ToUnicode CMap's entries (codespace, bfchar, bfrange); undefined when it maps nothing. */
export function parseToUnicode(bytes: Uint8Array): ToUnicodeMap | undefined {
  const t = tokens(asBuffer(bytes));
  const map = new ToUnicodeMap();
  let section = "";
  for (let i = 0; i < t.length; ) {
    const token = t[i]!;
    if (typeof token === "string") {
      if (token === "begincodespacerange" || token === "beginbfchar" || token === "beginbfrange") section = token;
      else if (token.startsWith("end")) section = "";
      i++;
      continue;
    }
    const next = t[i + 1];
    if (section === "begincodespacerange" && Array.isArray(next)) {
      map.codespace(token, next);
      i += 2;
    } else if (section === "beginbfchar" && Array.isArray(next)) {
      const to = destination(next);
      if (to !== undefined) map.char(token, to);
      i += 2;
    } else if (section === "beginbfrange" && Array.isArray(next) && Array.isArray(t[i + 2])) {
      const to = destination(t[i + 2] as number[]);
      if (to !== undefined) map.range(token, next, to);
      i += 3;
    } else if (section === "beginbfrange" && Array.isArray(next) && t[i + 2] === "[") {
      // <lo> <hi> [<dst> <dst> …]: one destination per code, from lo on
      let j = i + 3;
      for (let code = codeValue(token); Array.isArray(t[j]); j++, code++) {
        const to = destination(t[j] as number[]);
        if (to !== undefined && token.length <= 4) map.char(codeBytes(code, token.length), to);
      }
      i = t[j] === "]" ? j + 1 : j;
    } else {
      i++;
    }
  }
  map.seal();
  return map.size > 0 ? map : undefined;
}

function codeBytes(code: number, length: number): number[] {
  const out: number[] = [];
  for (let k = length - 1; k >= 0; k--) out.push(Math.floor(code / 256 ** k) % 256);
  return out;
}

/** The number of the object whose `obj` keyword is at `objAt` (`12 0 obj`), if one is. */
export function objectNumberBefore(b: Uint8Array, objAt: number): number | undefined {
  let i = objAt - 1;
  if (!isBlank(b[i])) return undefined;
  while (i >= 0 && isBlank(b[i])) i--;
  const genEnd = i;
  while (i >= 0 && isDigit(b[i]) && genEnd - i < 6) i--;
  if (i === genEnd || !isBlank(b[i])) return undefined;
  while (i >= 0 && isBlank(b[i])) i--;
  let value = 0;
  let scale = 1;
  const numberEnd = i;
  while (i >= 0 && isDigit(b[i]) && numberEnd - i < 10) {
    value += (b[i]! - 48) * scale;
    scale *= 10;
    i--;
  }
  return i === numberEnd ? undefined : value;
}

/** The object number of a reference `12 0 R` at `at` (blanks first), or -1. */
function referenceAt(b: Uint8Array, at: number): number {
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
  return b[k] === 82 && (k + 1 >= b.length || ENDS_NAME[b[k + 1]!] === 1) ? id : -1;
}

/** Bytes that hold objects: the bytes between a PDF's streams, or an object stream's (with its index). */
interface ObjectText {
  bytes: Buffer;
  /** An object stream's objects: their numbers and where each starts, by start. */
  index?: { ids: number[]; starts: number[] };
}

export class PdfFonts {
  private readonly maps = new Map<number, ToUnicodeMap>();
  private readonly objectTexts: ObjectText[] = [];
  private readonly contents: Uint8Array[] = [];

  /** Keeps the decoded stream of object `id` if it is a ToUnicode map; whether it is a CMap. */
  addMap(id: number | undefined, data: Uint8Array): boolean {
    if (asBuffer(data).subarray(0, 2048).indexOf("begincmap", 0, "latin1") < 0) return false;
    const map = id === undefined ? undefined : parseToUnicode(data);
    if (map) this.maps.set(id!, map);
    return true;
  }

  /** Keeps a decoded content stream: its strings may be glyph numbers (with a font a stream before it chose). */
  addContent(data: Uint8Array): void {
    this.contents.push(data);
  }

  /** Keeps the bytes between streams: font dictionaries and resource dictionaries lie there. */
  addObjects(bytes: Uint8Array): void {
    this.objectTexts.push({ bytes: asBuffer(bytes) });
  }

  /** Keeps an object stream's objects, with the index its first bytes give (`/N` pairs of number and offset from `/First`). */
  addObjectStream(dict: string, data: Uint8Array): void {
    const count = Number(/\/N\s+(\d{1,9})/.exec(dict)?.[1] ?? 0);
    const first = Number(/\/First\s+(\d{1,12})/.exec(dict)?.[1] ?? 0);
    const b = asBuffer(data);
    const pairs: { id: number; start: number }[] = [];
    const numbers: number[] = [];
    let i = 0;
    while (numbers.length < 2 * count && i < Math.min(first, b.length)) {
      while (i < first && isBlank(b[i])) i++;
      if (!isDigit(b[i])) break;
      let v = 0;
      while (i < first && isDigit(b[i])) v = v * 10 + b[i++]! - 48;
      numbers.push(v);
    }
    for (let k = 0; k + 1 < numbers.length; k += 2) pairs.push({ id: numbers[k]!, start: first + numbers[k + 1]! });
    pairs.sort((a, c) => a.start - c.start);
    this.objectTexts.push({ bytes: b, index: { ids: pairs.map((p) => p.id), starts: pairs.map((p) => p.start) } });
  }

  /** Scans every kept content stream's strings again, through the ToUnicode maps of the fonts that show them. */
  scan(ctx: InspectContext): void {
    if (this.maps.size === 0 || this.contents.length === 0) return;
    const fonts = this.fontMaps();
    if (fonts.size === 0) return;
    const byName = this.mapsByName(fonts);
    if (byName.size === 0) return;
    // The font in use and the line carry from one content stream to the next, as they do across a page's streams;
    // the streams are read as one text (a key may span them) and scanned once.
    const state: { maps: ToUnicodeMap[] | undefined } = { maps: undefined };
    const line = new TextLine();
    const part = "the text its content streams show, read through their fonts' ToUnicode maps";
    const sink = new TextSink();
    sink.start(ctx.decodeBudgetLeft, () => ctx.spend(part, Number.MAX_SAFE_INTEGER) as never);
    for (const data of this.contents) glyphText(data, byName, state, line, sink);
    if (sink.length === 0) return;
    ctx.spend(part, sink.length);
    ctx.scan(part, sink.bytes(), undefined, false);
  }

  /** Each font object with a ToUnicode map this file holds: the object whose dictionary says `/ToUnicode 9 0 R`. */
  private fontMaps(): Map<number, ToUnicodeMap> {
    const fonts = new Map<number, ToUnicodeMap>();
    for (const text of this.objectTexts) {
      const b = text.bytes;
      let searchedFrom = 0;
      let owner: number | undefined;
      for (let at = b.indexOf("/ToUnicode", 0, "latin1"); at >= 0; at = b.indexOf("/ToUnicode", at + 10, "latin1")) {
        if (text.index) owner = ownerIn(text.index, at);
        else {
          // The `N G obj` last opened before it, searched back only to the previous one's place: linear in all.
          // A name may hold "obj" (/objective): such a find is passed over, and the search goes on back from it.
          for (let end = at; end > searchedFrom; ) {
            const objAt = b.subarray(searchedFrom, end).lastIndexOf("obj", undefined, "latin1");
            if (objAt < 0) break;
            const id = objectNumberBefore(b, searchedFrom + objAt);
            const ends = b[searchedFrom + objAt - 1] === 100; // endobj: what follows lies outside any object
            if (id !== undefined || ends) {
              owner = id;
              break;
            }
            end = searchedFrom + objAt;
          }
          searchedFrom = at;
        }
        const map = this.maps.get(referenceAt(b, at + 10));
        if (owner !== undefined && map) fonts.set(owner, map);
      }
    }
    return fonts;
  }

  /** The maps of the fonts each resource name refers to (`/F4 12 0 R`) anywhere in the file. */
  private mapsByName(fonts: Map<number, ToUnicodeMap>): Map<string, ToUnicodeMap[]> {
    const byName = new Map<string, ToUnicodeMap[]>();
    for (const { bytes: b } of this.objectTexts) {
      const n = b.length;
      let i = 0;
      while (i < n) {
        if (b[i] !== 47) {
          i++;
          continue;
        }
        const from = ++i;
        while (i < n && ENDS_NAME[b[i]!] === 0) i++;
        if (i === from || !isBlank(b[i])) continue;
        // The bytes after the name are read again by this loop; no `/` lies in a reference, so each is read twice at most.
        const map = fonts.get(referenceAt(b, i));
        if (!map) continue;
        const name = b.toString("latin1", from, i);
        const maps = byName.get(name);
        if (!maps) byName.set(name, [map]);
        else if (!maps.includes(map) && maps.length < 64) maps.push(map);
      }
    }
    return byName;
  }
}

/** The object of an object stream that holds byte `at`. */
function ownerIn(index: { ids: number[]; starts: number[] }, at: number): number | undefined {
  let lo = 0;
  let hi = index.starts.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (index.starts[mid]! <= at) lo = mid + 1;
    else hi = mid - 1;
  }
  return hi >= 0 ? index.ids[hi] : undefined;
}

/**
 * The strings a content stream shows with a font that has a ToUnicode map,
 * through that map (through each, one after the other, for a name that
 * several fonts share), a line break where the text moves to another line
 * (TextLine). Strings shown with
 * other fonts are left out: their bytes are read as they are (shownText).
 */
function glyphText(s: Uint8Array, byName: Map<string, ToUnicodeMap[]>, state: { maps: ToUnicodeMap[] | undefined }, line: TextLine, sink: TextSink): void {
  const b = asBuffer(s);
  const n = b.length;
  const scratch = Buffer.allocUnsafe(n);
  let nameFrom = 0;
  let nameTo = 0;
  let i = 0;
  while (i < n) {
    const c = b[i]!;
    if (c === 60 && b[i + 1] === 60) {
      i += 2;
    } else if (c === 40 || c === 60) {
      const length = readString(b, i, scratch, 0);
      i = lastString.end;
      const maps = state.maps;
      if (maps === undefined) continue;
      if (line.newLine()) sink.byte(10);
      for (let k = 0; k < maps.length; k++) {
        if (k > 0) sink.byte(10);
        maps[k]!.decode(scratch, 0, length, sink);
      }
    } else if (c === 47) {
      nameFrom = ++i;
      while (i < n && ENDS_NAME[b[i]!] === 0) i++;
      nameTo = i;
    } else if (c === 37) {
      while (i < n && b[i] !== 10 && b[i] !== 13) i++;
    } else if (OPERATOR[c] === 1) {
      let j = i + 1;
      while (j < n && OPERATOR[b[j]!] === 1) j++;
      if (j - i === 2 && c === 84 && b[i + 1] === 102) state.maps = byName.get(b.toString("latin1", nameFrom, nameTo));
      else line.operator(b, i, j - i);
      i = j;
    } else {
      i++;
    }
  }
}
