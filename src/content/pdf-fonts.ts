// Text drawn with an embedded subset font (what Chrome and Skia, WeasyPrint,
// LibreOffice, Word, Typst and pdf-lib write) is glyph numbers in the content
// stream, not letters: only the font's ToUnicode map (a CMap stream) says
// which letters they are. So the ToUnicode maps of a PDF are read, each font
// resource name (`/F4`) is tied to the maps of the fonts it names wherever
// the file names them (`/F4 12 0 R`, in a page's, a form's or an inherited
// resource dictionary, inline or an object of its own), and the strings of
// the content streams are read through the map of the font that shows them,
// in the same pass that reads them as they are (shownText). Names are tied
// across the whole file instead of through each page's resources: a
// generator names a font once per file, and a name that several fonts share
// (merged files) is read through each of their maps.
import { formatBytes } from "../core/units.js";
import type { InspectContext } from "./inspect.js";
import { HEX_VALUE } from "./bytes.js";
import { ABUTTING, decodeHex, ENDS_NAME, isBlank, isDigit, Offsets, referenceAt, scanText } from "./pdf-syntax.js";

const asBuffer = (b: Uint8Array) => (Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.length));
/** A code's key: its length and its value, so that <0041> and <41> differ. */
const keyOf = (length: number, code: number) => length * 0x1_0000_0000 + code;
/** The longest Unicode text one code maps to (PDF 32000-1 allows 512 bytes); longer entries are left out. */
const MAX_DESTINATION_BYTES = 512;
/**
 * Entries (codes and ranges) the maps of one file may hold in all: a font's
 * map lists the glyphs it uses, hundreds to a few tens of thousands. More is
 * refused as unscannable_content rather than held in memory.
 */
const MAX_MAP_ENTRIES = 1_000_000;
/**
 * Bytes of strings a file may have read through a second map or more (a
 * name that several fonts share, as in merged files; an empty string counts
 * as one byte): each such reading costs as much as the first, so a name
 * shared by many fonts would multiply the work. Past it: unscannable_content.
 */
const MAX_AMBIGUOUS_BYTES = 16 * 1024 * 1024;
/** Codes a map decodes through its lookups before it builds a table of every code of one or two bytes. */
const TABLE_AFTER = 4096;
/**
 * Tables (256 KiB and 65,792 lookups each) one file's maps may build in
 * all: a document has a few fonts, a merged one tens. A PDF of 4,000 fonts,
 * each with a map of one range and 4,096 codes shown, was 1 MB and built
 * 4,000 of them, 1.2 GB and 8 s; past this, the lookups alone read the
 * codes (as for a map that never decoded TABLE_AFTER), the same text.
 */
export const MAX_TABLES = 32;

/** How many more tables the maps of one file may build. */
export interface TableBudget {
  left: number;
}

/** Blanks a map may give a space glyph (wkhtmltopdf maps it to a tab): read as a space, as they are drawn. */
const SPACE = new Uint8Array(0x3001);
for (const cp of [9, 0xa0, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x202f, 0x205f, 0x3000]) SPACE[cp] = 1;
/** The letters of U+FB00 to U+FB06, which a map may give a ligature's glyph. */
const LIGATURE = ["ff", "fi", "fl", "ffi", "ffl", "st", "st"];

/** Letters written as UTF-8, at most `limit` bytes, past which `overflow` throws (a map may turn one byte into hundreds). */
class TextSink {
  private buf = Buffer.allocUnsafe(4096);
  length = 0;

  constructor(
    private readonly limit: number,
    private readonly overflow: () => never,
  ) {}

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
    if (cp <= 0x3000 && SPACE[cp] === 1) cp = 32;
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
function destination(b: Uint8Array, length: number): Destination | undefined {
  if (length < 2 || length > MAX_DESTINATION_BYTES) return undefined;
  const first = (b[0]! << 8) | b[1]!;
  if (length === 2 && (first < 0xd800 || first > 0xdfff)) return first;
  const units: number[] = [];
  for (let i = 0; i + 1 < length; i += 2) units.push((b[i]! << 8) | b[i + 1]!);
  const s = String.fromCharCode(...units);
  const cp = s.codePointAt(0)!;
  return s.length === 2 && cp > 0xffff ? cp : s;
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
  private longest = 0;
  private readonly chars = new Map<number, Destination>();
  /** bfrange entries, sorted by their first code's key. */
  private readonly ranges: Range[] = [];
  /** Every code of one byte (0 to 255) and two (256 on): its code point, -1 for none, -2 for several; built once used enough. */
  private table: Int32Array | undefined;
  private lookups = 0;

  get size(): number {
    return this.chars.size + this.ranges.length;
  }

  codespace(loFirst: number, hiFirst: number, length: number): void {
    if (length === 0 || length > 4) return;
    for (let b = loFirst; b <= hiFirst; b++) if (this.lengthOf[b] === 0) this.lengthOf[b] = length;
    this.sawLength(length);
  }

  private sawLength(length: number): void {
    if (this.shortest === 0 || length < this.shortest) this.shortest = length;
    if (length > this.longest) this.longest = length;
  }

  char(length: number, code: number, to: Destination): void {
    this.chars.set(keyOf(length, code), to);
    this.sawLength(length);
  }

  range(length: number, lo: number, hi: number, start: Destination): void {
    if (hi < lo) return;
    this.ranges.push({ lo: keyOf(length, lo), hi: keyOf(length, hi), start });
    this.sawLength(length);
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

  /** The table of every code of one and two bytes, built once this map has decoded TABLE_AFTER codes, while the file's `tables` last. */
  private tableOf(tables: TableBudget): Int32Array | undefined {
    if (this.table || this.longest > 2 || ++this.lookups < TABLE_AFTER || tables.left <= 0) return this.table;
    tables.left--;
    const table = new Int32Array(256 + 65536);
    for (let code = 0; code < table.length; code++) {
      const text = code < 256 ? this.lookup(keyOf(1, code)) : this.lookup(keyOf(2, code - 256));
      table[code] = typeof text === "number" ? text : text === undefined ? -1 : -2;
    }
    this.table = table;
    return table;
  }

  /**
   * Writes the text of the codes in `s` from `from` to `to` into `sink`; a
   * code the map does not hold reads as nothing. `tables`: the file's, shared
   * by all its maps.
   */
  decode(s: Uint8Array, from: number, to: number, sink: TextSink, tables: TableBudget = { left: MAX_TABLES }): void {
    const fallback = this.shortest || 1;
    let i = from;
    while (i < to) {
      const length = this.lengthOf[s[i]!] || fallback;
      if (i + length > to) break;
      let code = 0;
      for (let k = 0; k < length; k++) code = code * 256 + s[i + k]!;
      i += length;
      const table = this.tableOf(tables);
      if (table !== undefined && length <= 2) {
        const cp = table[length === 1 ? code : 256 + code]!;
        if (cp >= 0) sink.codePoint(cp);
        if (cp !== -2) continue;
      }
      const text = this.lookup(keyOf(length, code));
      if (typeof text === "number") sink.codePoint(text);
      else if (text !== undefined) sink.text(text);
    }
  }
}

const word = (w: string) => Buffer.from(w, "latin1");
const BEGIN_CODESPACE = word("begincodespacerange");
const BEGIN_BFCHAR = word("beginbfchar");
const BEGIN_BFRANGE = word("beginbfrange");

/** Whether `b` from `from` to `to` holds the bytes of `w`. */
function isWord(b: Uint8Array, from: number, to: number, w: Uint8Array): boolean {
  if (to - from !== w.length) return false;
  for (let k = 0; k < w.length; k++) if (b[from + k] !== w[k]) return false;
  return true;
}

const enum Token {
  End,
  Hex,
  Word,
  Open,
  Close,
}

/** A CMap's tokens, one at a time: hex strings (their bytes in `hex`), words (`wordFrom` to `wordTo`), `[` and `]`. */
class CMapTokens {
  /** The last hex string's bytes; a string longer than any code or destination has none. */
  readonly hex = Buffer.allocUnsafe(MAX_DESTINATION_BYTES + 1);
  hexLength = 0;
  wordFrom = 0;
  wordTo = 0;
  private i = 0;

  constructor(private readonly b: Buffer) {}

  next(): Token {
    const b = this.b;
    const n = b.length;
    while (this.i < n) {
      const c = b[this.i]!;
      if (c === 60 && b[this.i + 1] === 60) {
        this.i += 2;
      } else if (c === 60) {
        const end = b.indexOf(62, this.i);
        if (end < 0) return Token.End;
        let digits = 0;
        for (let j = this.i + 1; j < end; j++) if (HEX_VALUE[b[j]!]! >= 0) digits++;
        this.hexLength = digits > 2 * MAX_DESTINATION_BYTES ? 0 : decodeHex(b, this.i + 1, end, this.hex, 0);
        this.i = end + 1;
        return Token.Hex;
      } else if (c === 91 || c === 93) {
        this.i++;
        return c === 91 ? Token.Open : Token.Close;
      } else if (c === 37) {
        while (this.i < n && b[this.i] !== 10 && b[this.i] !== 13) this.i++;
      } else if (ENDS_NAME[c] === 1 && c !== 47) {
        this.i++;
      } else {
        this.wordFrom = this.i++;
        while (this.i < n && ENDS_NAME[b[this.i]!] !== 1) this.i++;
        this.wordTo = this.i;
        return Token.Word;
      }
    }
    return Token.End;
  }

  /** The last hex string as a code: its value, and its length in bytes (0: not a code of one to four bytes). */
  code(): [value: number, length: number] {
    if (this.hexLength === 0 || this.hexLength > 4) return [0, 0];
    let v = 0;
    for (let k = 0; k < this.hexLength; k++) v = v * 256 + this.hex[k]!;
    return [v, this.hexLength];
  }
}

/**
 * A ToUnicode CMap's entries (codespace, bfchar, bfrange in both forms);
 * undefined when it maps nothing. `entries` is called with the count as it
 * grows, to bound what one file's maps may hold.
 */
export function parseToUnicode(bytes: Uint8Array, entries: (count: number) => void = () => {}): ToUnicodeMap | undefined {
  const b = asBuffer(bytes);
  const t = new CMapTokens(b);
  const map = new ToUnicodeMap();
  let section: Uint8Array | undefined;
  // The codes read so far of the entry being read: a source (and a range's end), then its destination.
  let codes = 0;
  let lo = 0;
  let loLength = 0;
  let hi = 0;
  let inArray = false;
  let count = 0;
  for (let token = t.next(); token !== Token.End; token = t.next()) {
    if (token === Token.Word) {
      codes = 0;
      inArray = false;
      // A name is a destination this check does not read (/space): the entry is left out, the section goes on.
      if (b[t.wordFrom] === 47) continue;
      // Any other word ends a section (endbfchar, a count, an operator) or begins one.
      section = [BEGIN_CODESPACE, BEGIN_BFCHAR, BEGIN_BFRANGE].find((x) => isWord(b, t.wordFrom, t.wordTo, x));
      continue;
    }
    if (token === Token.Open) {
      inArray = section === BEGIN_BFRANGE && codes === 2;
      continue;
    }
    if (token === Token.Close) {
      inArray = false;
      codes = 0;
      continue;
    }
    if (section === undefined) continue;
    if (inArray) {
      // <lo> <hi> [<dst> <dst> …]: one destination per code from lo, to hi at most
      const to = destination(t.hex, t.hexLength);
      if (to !== undefined && lo <= hi) map.char(loLength, lo, to);
      lo++;
      entries(++count);
      continue;
    }
    if (codes === 0 || (codes === 1 && section !== BEGIN_BFCHAR)) {
      const [value, length] = t.code();
      if (codes === 0) [lo, loLength] = [value, length];
      else hi = length === loLength ? value : -1;
      codes++;
      if (section === BEGIN_CODESPACE && codes === 2) {
        if (loLength > 0 && hi >= 0) map.codespace(firstByte(lo, loLength), firstByte(hi, loLength), loLength);
        codes = 0;
      }
      continue;
    }
    // The destination of a bfchar (after one code) or a bfrange (after two).
    const to = destination(t.hex, t.hexLength);
    if (to !== undefined && loLength > 0) {
      if (section === BEGIN_BFCHAR) map.char(loLength, lo, to);
      else if (hi >= 0) map.range(loLength, lo, hi, to);
      entries(++count);
    }
    codes = 0;
  }
  map.seal();
  return map.size > 0 ? map : undefined;
}

const firstByte = (code: number, length: number) => Math.floor(code / 256 ** (length - 1)) % 256;

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

/** Bytes that hold objects: the bytes between a PDF's streams, or an object stream's (with its index). */
interface ObjectText {
  bytes: Buffer;
  /** An object stream's objects: their numbers and where each starts, by start. */
  index?: { ids: number[]; starts: number[] };
}

const TO_UNICODE = word("/ToUnicode");

/** Whether decoded stream bytes open a CMap (`begincmap` within their first 2 KiB). */
export function opensAsCMap(b: Uint8Array): boolean {
  return asBuffer(b).subarray(0, 2048).indexOf("begincmap", 0, "latin1") >= 0;
}

export class PdfFonts {
  private readonly maps = new Map<number, ToUnicodeMap>();
  private readonly objectTexts: ObjectText[] = [];
  private entries = 0;

  constructor(private readonly ctx: InspectContext) {}

  /** Keeps the decoded stream of object `id` if it is a ToUnicode map; whether it is a CMap. */
  addMap(id: number | undefined, data: Uint8Array): boolean {
    if (!opensAsCMap(data)) return false;
    if (id === undefined) return true;
    const before = this.entries;
    const map = parseToUnicode(data, (count) => {
      if (before + count > MAX_MAP_ENTRIES) throw this.ctx.unscannable(`its fonts' ToUnicode maps hold more than ${MAX_MAP_ENTRIES.toLocaleString("en")} entries, more than this check reads for one file`);
      this.entries = before + count;
    });
    if (map) this.maps.set(id, map);
    return true;
  }

  /** The bytes that hold the file's objects (between streams, and object streams'), for other readers of its dictionaries. */
  objectBytes(): Buffer[] {
    return this.objectTexts.map((text) => text.bytes);
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

  /**
   * The maps of the fonts each resource name refers to (`/F4 12 0 R`)
   * anywhere in the file, for the names that have any; undefined when none
   * has.
   */
  mapsByName(): Map<string, ToUnicodeMap[]> | undefined {
    if (this.maps.size === 0) return undefined;
    const fonts = this.fontMaps();
    if (fonts.size === 0) return undefined;
    const byName = this.namesOf(fonts);
    return byName.size === 0 ? undefined : byName;
  }

  /**
   * Each font object with a ToUnicode map this file holds: the object whose
   * dictionary says `/ToUnicode 9 0 R`. One pass over each region that holds
   * one, remembering the last object opened (`12 0 obj`), so that no byte is
   * searched twice.
   */
  private fontMaps(): Map<number, ToUnicodeMap> {
    const fonts = new Map<number, ToUnicodeMap>();
    for (const text of this.objectTexts) {
      const b = text.bytes;
      const last = b.lastIndexOf(TO_UNICODE);
      if (last < 0) continue;
      let owner: number | undefined;
      for (let i = 0; i <= last; i++) {
        const c = b[i];
        if (c === 111 && b[i + 1] === 98 && b[i + 2] === 106 && !text.index) {
          // obj: an object opens (or, endobj, closes); an "obj" inside a name (/objective) changes nothing
          owner = b[i - 1] === 100 && b[i - 2] === 110 ? undefined : (objectNumberBefore(b, i) ?? owner);
        } else if (c === 47 && b[i + 1] === 84 && isWord(b, i, i + 10, TO_UNICODE)) {
          const map = this.maps.get(referenceAt(b, i + 10));
          const font = text.index ? ownerIn(text.index, i) : owner;
          if (font !== undefined && map) fonts.set(font, map);
          i += 9;
        }
      }
    }
    return fonts;
  }

  /** The names that refer to fonts with maps, and those maps. */
  private namesOf(fonts: Map<number, ToUnicodeMap>): Map<string, ToUnicodeMap[]> {
    const byName = new Map<string, Set<ToUnicodeMap>>();
    for (const { bytes: b } of this.objectTexts) {
      const n = b.length;
      // The last name tied, so that a name repeated (every page's resources) is not made a string again.
      let lastFrom = 0;
      let lastTo = 0;
      let lastId = -1;
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
        const id = referenceAt(b, i);
        const map = fonts.get(id);
        if (!map) continue;
        if (id === lastId && sameBytes(b, from, i, lastFrom, lastTo)) continue;
        [lastFrom, lastTo, lastId] = [from, i, id];
        const name = b.toString("latin1", from, i);
        const maps = byName.get(name);
        if (!maps) byName.set(name, new Set([map]));
        else maps.add(map);
      }
    }
    return new Map([...byName].map(([name, maps]) => [name, [...maps]]));
  }
}

/** Whether `b` holds the same bytes from `from` to `to` as from `otherFrom` to `otherTo`. */
function sameBytes(b: Uint8Array, from: number, to: number, otherFrom: number, otherTo: number): boolean {
  if (to - from !== otherTo - otherFrom) return false;
  for (let k = 0; k < to - from; k++) if (b[from + k] !== b[otherFrom + k]) return false;
  return true;
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
 * The strings a file's content streams show with a font that has a
 * ToUnicode map, read through that map (through each, one after the other,
 * for a name that several fonts share), a line break where the text moves to
 * another line, as one text scanned at the end. shownText walks the streams
 * and hands each string and each Tf here. Strings shown with other fonts
 * are left out: their bytes are read as they are.
 */
export class GlyphText {
  private maps: ToUnicodeMap[] | undefined;
  /** The last font name selected (its bytes), so that a name repeated at every Tf is not made a string again. */
  private lastName = Buffer.alloc(0);
  /** The separator owed (10 a line break, 32 a space, ABUTTING a space between pieces placed end to end, 0 none): the text moved while strings without a map were shown. */
  private owed = 0;
  /** Where the spaces owed as ABUTTING are in the text read. */
  private readonly abutting = new Offsets();
  /** Bytes read through a second map or more (a name several fonts share). */
  private ambiguous = 0;
  /** The tables its maps may still build (ToUnicodeMap.decode). */
  private readonly tables: TableBudget = { left: MAX_TABLES };
  private readonly sink: TextSink;
  private readonly part = "the text its content streams show, read through their fonts' ToUnicode maps";

  constructor(
    private readonly byName: Map<string, ToUnicodeMap[]>,
    private readonly ctx: InspectContext,
  ) {
    this.sink = new TextSink(ctx.decodeBudgetLeft, () => ctx.spend(this.part, Number.MAX_SAFE_INTEGER) as never);
  }

  /** Tf: the font named by `s` from `from` to `to` is in use. */
  selectFont(s: Uint8Array, from: number, to: number): void {
    const last = this.lastName;
    if (to - from === last.length) {
      let k = 0;
      while (k < last.length && s[from + k] === last[k]) k++;
      if (k === last.length) return;
    }
    this.lastName = Buffer.from(s.subarray(from, to));
    this.maps = this.byName.get(this.lastName.toString("latin1"));
  }

  /** A string shown (its bytes in `b` from `from` to `to`), after the separator TextLine gives it. */
  show(b: Uint8Array, from: number, to: number, separator: number): void {
    // A line break owed outweighs a space, and a space a space between pieces that abut.
    if (separator === 10 || this.owed === 0 || (separator === 32 && this.owed === ABUTTING)) this.owed = separator || this.owed;
    const maps = this.maps;
    if (maps === undefined) return;
    if (this.owed === ABUTTING) this.abutting.push(this.sink.length);
    if (this.owed !== 0) this.sink.byte(this.owed & 0xff);
    this.owed = 0;
    if (maps.length > 1) {
      this.ambiguous += Math.max(1, to - from) * (maps.length - 1);
      if (this.ambiguous > MAX_AMBIGUOUS_BYTES) {
        throw this.ctx.unscannable(`its fonts' names are shared by so many fonts that reading its text through each of their maps passes ${formatBytes(MAX_AMBIGUOUS_BYTES)}`);
      }
    }
    for (let k = 0; k < maps.length; k++) {
      if (k > 0) this.sink.byte(10);
      maps[k]!.decode(b, from, to, this.sink, this.tables);
    }
  }

  /** Scans the text read, counted against the file's decode budget. */
  scan(): void {
    if (this.sink.length === 0) return;
    this.ctx.spend(this.part, this.sink.length);
    scanText(this.ctx, this.part, this.sink.bytes(), false, this.abutting);
  }
}
