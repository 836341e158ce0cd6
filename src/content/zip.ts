// Zip containers (docx, xlsx, pptx, odt…, epub, zip): every entry listed in
// the central directory (what Word, Excel and unzip read) is inflated within
// the file's budget and scanned; XML parts are also scanned as their text
// (xml-text.ts), where Word may have cut a key into several runs. A zip or
// a PDF inside (an embedded workbook, an attached report) is read by its
// reader too (InspectContext.readNested). Names,
// comments and whatever lies outside the entries are scanned as they are.
//
// node:zlib inflates; the central directory is read here (about sixty
// lines): measured against yauzl and fflate in README "Zip and PDF readers".
import { type ByteSource, bytesSource } from "./byte-source.js";
import { u32le as u32 } from "./bytes.js";
import { readPicture } from "./images.js";
import { type InspectContext, MAX_PARTS, type Reader } from "./inspect.js";
import { packageStyles, type StyleSheet } from "./office-styles.js";
import { shownText } from "./shown-text.js";
import { utf16Order } from "./utf16.js";
import { declaresEntities, hasAttributesText, writeUtf8, xmlAttributesText, xmlText } from "./xml-text.js";

const u16 = (b: Uint8Array, i: number) => b[i]! | (b[i + 1]! << 8);
const u64 = (b: Uint8Array, i: number) => u32(b, i) + u32(b, i + 4) * 2 ** 32;

const EOCD64_LOCATOR = 0x07064b50;
const EOCD64 = 0x06064b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;

const XML_PART = /\.(?:xml|rels|vml|xhtml|html?|svg|opf|ncx)$/i;

interface Entry {
  name: string;
  method: number;
  flags: number;
  compressed: number;
  /** The size the directory gives the inflated entry (a hint: the inflated bytes are what counts). */
  size: number;
  localOffset: number;
}

/**
 * How far from a file's end the end record is looked for: where unzip
 * looks (Info-ZIP process.c find_ecrec: the last 66,000 bytes, read in
 * 8 KiB blocks counted from the end, so up to 8 KiB more), past the 64 KiB
 * a comment can take. The last signature there is the record, whatever its
 * comment's length says: unzip, Python's zipfile and libarchive take it so,
 * and extract a zip with bytes after its comment.
 */
const SEARCH = 66_000 + 8192;

/** A zip's end record (and zip64 end record), as unzip reads it. */
interface ZipEnd {
  /** Where the end record lies. */
  eocd: number;
  /** The count of entries, the directory's size and where it starts (its offset as the record gives it). */
  count: number;
  cdSize: number;
  cdStart: number;
  /**
   * Where unzip reads the directory and what it adds to each entry's
   * offset; undefined when it finds no directory where the record leads
   * (it extracts nothing).
   */
  read?: { directory: number; shift: number };
}

/**
 * The end record of the zip that ends `src`, read as unzip reads it
 * (process.c find_ecrec, find_ecrec64 and do_seekable): the last signature
 * in the file's last SEARCH bytes; its zip64 end record just before the
 * locator; then the directory where the record says plus what unzip finds
 * before the zip ("extra bytes at beginning of zipfile": where the record
 * really is less where it says it is; negative when bytes are missing),
 * else where it says from the file's first byte. Undefined when no record
 * ends the file; a reason where readers disagree on what it says (a record
 * cut short at the very end, which unzip takes or passes over by where its
 * 8 KiB blocks fall; a zip64 record that is missing or disagrees with the
 * end record; a directory said to start at the first byte of a zip after
 * other bytes).
 */
function zipEnd(src: ByteSource): ZipEnd | string | undefined {
  const from = Math.max(0, src.length - SEARCH);
  const tail = src.read(from, src.length - from);
  const bytes = Buffer.from(tail.buffer, tail.byteOffset, tail.length);
  const at = bytes.lastIndexOf(EOCD_SIGNATURE);
  if (at < 0) return undefined;
  if (at + 22 > bytes.length) return "its last bytes hold a zip end record cut short";
  const eocd = from + at;
  const disk = u16(bytes, at + 4);
  const directoryDisk = u16(bytes, at + 6);
  const countHere = u16(bytes, at + 8);
  let count = u16(bytes, at + 10);
  let cdSize = u32(bytes, at + 12);
  let cdStart = u32(bytes, at + 16);
  // Where the records end: the zip64 end record, when there is one.
  let recordsAt = eocd;
  if (eocd >= 20 && u32(src.read(eocd - 20, 20), 0) === EOCD64_LOCATOR) {
    const locator = Buffer.from(src.read(eocd - 20, 20));
    const locatedAt = u64(locator, 8);
    const isRecord = (at: number) => at >= 0 && at + 56 <= src.length && u32(src.read(at, 4), 0) === EOCD64;
    // Where Python's zipfile reads it, and unzip too unless another lies where the locator says (the locator counts from the
    // zip's first byte: bytes before the zip move the record from there).
    const recordAt = eocd - 20 - 56;
    const record = isRecord(recordAt) ? Buffer.from(src.read(recordAt, 56)) : undefined;
    // unzip passes over a zip64 record whose disks or fields disagree with the end record (and reads the end record's own
    // fields), zipfile takes it: either reading could hide the other's entries, and no zip64 writer writes one.
    const agrees =
      record !== undefined &&
      (locatedAt === recordAt || !isRecord(locatedAt)) &&
      (disk === 0xffff || disk === u32(locator, 16) - 1) &&
      u32(record, 16) === u32(locator, 4) &&
      (directoryDisk === 0xffff || directoryDisk === u32(record, 20)) &&
      (countHere === 0xffff || countHere === u64(record, 24)) &&
      (count === 0xffff || count === u64(record, 32)) &&
      (cdSize === 0xffffffff || cdSize === u64(record, 40)) &&
      (cdStart === 0xffffffff || cdStart === u64(record, 48));
    if (!agrees) return "it has a damaged zip64 end record";
    count = u64(record, 32);
    cdSize = u64(record, 40);
    cdStart = u64(record, 48);
    recordsAt = recordAt;
  }
  const end: ZipEnd = { eocd, count, cdSize, cdStart };
  // An empty zip: nothing to extract.
  if (cdStart === 0 && cdSize === 0) return end;
  const shift = recordsAt - cdSize - cdStart;
  // A directory said to start at byte 0 after bytes that are not the zip's (zip 1.5's -go bug): unzip reads its entries'
  // offsets from the file's first byte, zipfile from the zip's.
  if (shift > 0 && cdStart === 0) return `its end record says its zip directory starts at its first byte, after ${shift} bytes that are not the zip's`;
  const isDirectory = (at: number) => at >= 0 && at + 4 <= src.length && u32(src.read(at, 4), 0) === CENTRAL;
  if (isDirectory(cdStart + shift)) return { ...end, read: { directory: cdStart + shift, shift } };
  // Not there: unzip looks where the record says from the file's first byte (zipfile does not).
  if (isDirectory(cdStart)) return { ...end, read: { directory: cdStart, shift: 0 } };
  return end;
}

const EOCD_SIGNATURE = Buffer.from("PK\x05\x06", "latin1");

const APPENDED = "the zip appended to it";

/**
 * Reads the zip appended to a file that is not one (a PDF, an audio file,
 * a compound file), as unzip would extract it: its entries, its directory
 * and the bytes between them; the file's own bytes before the zip were its
 * reader's. Nothing when no zip ends the file, or unzip finds no directory
 * where its end record leads.
 */
export function readAppendedZip(src: ByteSource, ctx: InspectContext): void {
  const end = zipEnd(src);
  if (end === undefined || (typeof end !== "string" && end.read === undefined)) return;
  ctx.readDeeper(APPENDED, () => ctx.inPart(APPENDED, () => readAppended(src, ctx, end)));
}

function readAppended(src: ByteSource, ctx: InspectContext, end: ZipEnd | string): void {
  if (typeof end === "string") throw ctx.unscannable(end);
  const { directory, shift } = end.read!;
  readZip(src, ctx, end.eocd, end.count, directory, shift, "appended");
}

/**
 * The reader of a part (a member of a tar, an entry of a zip, a file a PDF
 * attaches) by the zip that ends it, if any: where its directory says it
 * starts at the part's first byte or before (its first bytes damaged or
 * cut: unzip still extracts it) or it is damaged, the zip's reader; after
 * other bytes (a file no reader here knows, with a zip appended), that zip,
 * already one document deeper (InspectContext.readNested).
 */
export function zipReaderOf(b: Uint8Array): Reader | undefined {
  const end = zipEnd(bytesSource(b));
  if (end === undefined) return undefined;
  if (typeof end === "string") return inspectZip;
  if (end.read === undefined) return undefined;
  if (end.read.shift <= 0 && end.read.directory <= end.cdStart) return inspectZip;
  return (bytes, ctx) => ctx.inPart(APPENDED, () => readAppended(bytesSource(bytes), ctx, end));
}

/** The directory's entries (each offset in the file, `shift` added), and where the directory ends. */
function readEntries(src: ByteSource, ctx: InspectContext, count: number, directory: number, shift: number): { entries: Entry[]; cdEnd: number } {
  // From the directory to the file's end: every record that follows is read, as unzip reads them (a count that says fewer
  // only warns it), and a reader that goes by the directory's size reads those records too; fewer than the count is damage.
  const b = src.read(directory, src.length - directory);
  const entries: Entry[] = [];
  let at = 0;
  for (; at + 4 <= b.length && u32(b, at) === CENTRAL; ) {
    if (at + 46 > b.length) throw ctx.unscannable("its zip directory is damaged");
    if (entries.length === MAX_PARTS) throw ctx.unscannable(`its zip directory lists more than ${MAX_PARTS.toLocaleString("en")} entries, more than this check reads for one file`, "send its content in another form");
    const nameLength = u16(b, at + 28);
    const extraLength = u16(b, at + 30);
    const commentLength = u16(b, at + 32);
    const name = Buffer.from(b.subarray(at + 46, at + 46 + nameLength)).toString("utf8");
    let compressed = u32(b, at + 20);
    let size = u32(b, at + 24);
    let localOffset = u32(b, at + 42);
    // zip64: the real sizes and offset are in extra field 0x0001, in this order, for the fields that are 0xFFFFFFFF.
    const extraEnd = Math.min(b.length, at + 46 + nameLength + extraLength);
    for (let x = at + 46 + nameLength; x + 4 <= extraEnd; x += 4 + u16(b, x + 2)) {
      if (u16(b, x) !== 1) continue;
      const fieldEnd = Math.min(extraEnd, x + 4 + u16(b, x + 2));
      let f = x + 4;
      const next = () => {
        if (f + 8 > fieldEnd) throw ctx.unscannable(`${name}'s zip64 field is shorter than the sizes it stands for`);
        f += 8;
        return u64(b, f - 8);
      };
      if (size === 0xffffffff) size = next();
      if (compressed === 0xffffffff) compressed = next();
      if (localOffset === 0xffffffff) localOffset = next();
    }
    entries.push({ name, method: u16(b, at + 10), flags: u16(b, at + 8), compressed, size, localOffset: localOffset + shift });
    at += 46 + nameLength + extraLength + commentLength;
  }
  if (entries.length < count) throw ctx.unscannable("its zip directory is damaged");
  return { entries, cdEnd: directory + at };
}

/** Where an entry's stored bytes start, after its local header (which must give the directory's method and size). */
function dataStart(src: ByteSource, e: Entry, ctx: InspectContext): number {
  const at = e.localOffset;
  const local = at >= 0 && at + 30 <= src.length ? src.read(at, 30) : undefined;
  if (!local || u32(local, 0) !== LOCAL) throw ctx.unscannable(`${e.name} has no local header where the directory says`);
  // Read as the directory says, what a reader that follows the local header inflates would be read as stored, or cut short.
  if (u16(local, 8) !== e.method) throw ctx.unscannable(`${e.name}'s local header gives another compression method (${u16(local, 8)}) than its directory (${e.method})`);
  // A size the local header does not give: 0 (in a data descriptor after the data) or 0xFFFFFFFF (in its zip64 field).
  let localCompressed = u32(local, 18);
  const [nameLength, extraLength, flags, localSize] = [u16(local, 26), u16(local, 28), u16(local, 6), u32(local, 22)];
  const start = at + 30 + nameLength + extraLength;
  // unzip inflates as many bytes as the local header says unless a data descriptor follows (flag 3): 0xFFFFFFFF without a
  // zip64 field is 4 GiB, the whole deflate stream where the directory said less (its key was cut off here and published).
  if (localCompressed === 0xffffffff && !(flags & 0x08)) localCompressed = localZip64Size(src.read(at + 30 + nameLength, extraLength), localSize === 0xffffffff);
  if (localCompressed !== 0 && localCompressed !== e.compressed) {
    throw ctx.unscannable(`${e.name}'s local header gives another compressed size (${localCompressed} bytes) than its directory (${e.compressed})`);
  }
  if (start + e.compressed > src.length) throw ctx.unscannable(`${e.name} runs past the end of the file`);
  return start;
}

/** The compressed size a local header's zip64 field (0x0001) gives, after the size when that is there too; 0xFFFFFFFF without one. */
function localZip64Size(extra: Uint8Array, withSize: boolean): number {
  for (let x = 0; x + 4 <= extra.length; x += 4 + u16(extra, x + 2)) {
    const f = x + 4 + (withSize ? 8 : 0);
    if (u16(extra, x) === 1 && f + 8 <= Math.min(extra.length, x + 4 + u16(extra, x + 2))) return u64(extra, f);
  }
  return 0xffffffff;
}

const LOCAL_SIGNATURE = Buffer.from("PK\x03\x04", "latin1");

/**
 * Scans the bytes before the end record that neither a listed entry nor
 * the directory holds (before the first entry, between two, after the
 * last, between the directory and the end record), and
 * refuses a local header there: an entry the directory does not list is
 * not read here, and a reader that walks the local headers (libarchive,
 * 7-Zip, Java's ZipInputStream) extracts it.
 */
function scanOutsideEntries(src: ByteSource, entries: Entry[], starts: readonly number[], from: number, cdStart: number, cdEnd: number, eocd: number, ctx: InspectContext): void {
  const spans = entries.map((e, i) => [e.localOffset, starts[i]! + e.compressed] as const).sort((a, b) => a[0] - b[0]);
  const outside = (from: number, to: number, part: string) => {
    const gap = src.read(from, to - from);
    const local = Buffer.from(gap.buffer, gap.byteOffset, gap.length).indexOf(LOCAL_SIGNATURE);
    if (local >= 0) throw ctx.unscannable(`it holds an entry its zip directory does not list (a local header at byte ${from + local})`);
    ctx.scan(part, gap, from);
  };
  // Entries that share bytes are a zip bomb's layout (the same bytes read again for each: a 1 MB stored entry listed
  // 2,000 times took 4 s to scan, and time grew as the square of the file's size); unzip refuses them too.
  for (let i = 1; i < spans.length; i++) {
    if (spans[i]![0] < spans[i - 1]![1]) throw ctx.unscannable(`two of its zip entries share the bytes at byte ${spans[i]![0]} (a zip bomb's layout)`);
  }
  let at = from;
  for (const [start, end] of [...spans, [cdStart, cdStart] as const]) {
    if (start > at) outside(at, Math.min(start, cdStart), at === from ? "the bytes before its first entry" : `the bytes after its entries at byte ${at}`);
    at = Math.max(at, end);
  }
  // Between the directory and its end record: a zip64 end record and its locator, or what a directory said to lie elsewhere left there.
  if (eocd > cdEnd) outside(cdEnd, eocd, "the bytes between its zip directory and its end record");
}

/**
 * An XML part as UTF-8: OOXML allows UTF-16 parts, which XML requires to
 * start with a byte order mark (their raw scan reads them as UTF-16 already:
 * InspectContext.scan).
 */
export function xmlAsUtf8(data: Uint8Array): Uint8Array {
  const order = utf16Order(data);
  if (!order) return data;
  // Written unit by unit into one buffer, as Node's decoder and encoder would make it (a lone surrogate as U+FFFD): the
  // units swapped, their string and its UTF-8 were three copies (a part of 200 MiB held 700 MiB more).
  const units = (data.length - 2) >> 1;
  const hi = order === "le" ? 3 : 2;
  const lo = 5 - hi;
  const out = Buffer.allocUnsafe(3 * units);
  let o = 0;
  for (let k = 0; k < units; k++) {
    let cp = (data[2 * k + hi]! << 8) | data[2 * k + lo]!;
    if (cp >= 0xd800 && cp <= 0xdbff && k + 1 < units) {
      const low = (data[2 * k + 2 + hi]! << 8) | data[2 * k + 2 + lo]!;
      if (low >= 0xdc00 && low <= 0xdfff) {
        cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
        k++;
      }
    }
    o += writeUtf8(out, o, cp);
  }
  return out.subarray(0, o);
}

/** A zip in memory (a docx small enough to keep, a zip inside a document). */
export function inspectZip(b: Uint8Array, ctx: InspectContext): void {
  inspectZipSource(bytesSource(b), ctx);
}

/**
 * A zip read a range at a time: its directory, then one entry after
 * another, never the whole file at once. Its entries are read where its
 * end record says, counted from the file's first byte, as Word and most
 * readers read them; unzip, which adds the bytes it finds before a zip to
 * every offset, must find the same directory.
 */
export function inspectZipSource(src: ByteSource, ctx: InspectContext): void {
  const end = zipEnd(src);
  if (end === undefined) throw ctx.unscannable("it has no zip directory");
  if (typeof end === "string") throw ctx.unscannable(end);
  const { eocd, count, cdSize, cdStart, read } = end;
  if (read && (read.shift !== 0 || read.directory !== cdStart)) {
    throw ctx.unscannable(`unzip reads its zip directory at byte ${read.directory}, not at byte ${cdStart} where its end record says, and its entries ${read.shift} bytes further`);
  }
  if (cdStart + cdSize > src.length) throw ctx.unscannable("its zip directory lies past its end");
  readZip(src, ctx, eocd, count, cdStart, 0, "whole");
}

/**
 * Reads the zip whose end record lies at `eocd` and whose directory at
 * `directory`, `shift` added to its entries' offsets; every byte from the
 * file's first (`whole`) or from its first entry (`appended`: the bytes
 * before were the reader's of the file it was appended to) is read.
 */
function readZip(src: ByteSource, ctx: InspectContext, eocd: number, count: number, directory: number, shift: number, where: "whole" | "appended"): void {
  const { entries, cdEnd } = readEntries(src, ctx, count, directory, shift);
  // Names, comments and extra fields, and any byte outside the entries (after the directory: a polyglot's payload; before it: scanOutsideEntries).
  ctx.scan("its zip directory", src.read(directory, cdEnd - directory));
  ctx.scan("the end of its zip directory", src.read(eocd, src.length - eocd), eocd);
  // Each local header read once: where its data starts, checked against the directory.
  const starts = entries.map((e) => dataStart(src, e, ctx));
  // An appended zip's first entry starts where the file it was appended to ends.
  const from = where === "appended" ? entries.reduce((first, e) => Math.min(first, e.localOffset), directory) : 0;
  scanOutsideEntries(src, entries, starts, from, directory, cdEnd, eocd, ctx);
  // The package's styles, read from its styles part (read first) for the shown reading of the others.
  let styles: StyleSheet | undefined;
  for (const i of stylesFirst(entries)) {
    const e = entries[i]!;
    if (e.name.endsWith("/")) continue;
    const part = e.name;
    if (e.flags & 0x01) throw ctx.unscannable(`${part} is encrypted`);
    const raw = src.read(starts[i]!, e.compressed);
    let data: Uint8Array;
    if (e.method === 0) data = raw;
    else if (e.method === 8) data = ctx.inflate(part, raw, "raw", e.size);
    else throw ctx.unscannable(`${part} is compressed with method ${e.method}, which this check does not read`);
    if (readPicture(ctx, part, data)) {
      // Read whole, nothing of it kept: its buffer takes the next picture's bytes.
      ctx.release(data);
      continue;
    }
    ctx.scan(part, data);
    const document = ctx.isDocument(data);
    // Bytes inflated for this part alone, and read as no document after: the last reading of them may write over them.
    if (XML_PART.test(e.name)) styles = scanXml(ctx, part, data, e.method === 8 && !document, styles) ?? styles;
    if (document) ctx.readNested(part, data);
  }
}

/** The styles parts of a Word document and of an ODF one, by the names their writers give them. */
const STYLES_PARTS = new Set(["word/styles.xml", "styles.xml"]);

/** The indexes of `entries`, a styles part's first: the shown reading of the others needs its styles. */
function stylesFirst(entries: readonly { name: string }[]): number[] {
  const indexes = [...entries.keys()];
  return [...indexes.filter((i) => STYLES_PARTS.has(entries[i]!.name)), ...indexes.filter((i) => !STYLES_PARTS.has(entries[i]!.name))];
}

/**
 * Scans an XML part's text (tags removed), its text as shown where it holds
 * text it does not show (shown-text.ts: tracked deletions, hidden runs,
 * runs hidden by a style of `styles` or of its own, field codes, phonetic
 * runs, escapes; in a web page's view too, where a run is hidden there),
 * and, when an attribute holds a line break, its attributes' (xml-text.ts).
 * Where `free` (nothing reads the part's bytes after), the last of them is
 * written over the bytes. A part that declares entities in a DTD is
 * refused (xml-text.ts declaresEntities). Returns the styles a styles part
 * defines.
 */
function scanXml(ctx: InspectContext, part: string, data: Uint8Array, free: boolean, styles: StyleSheet | undefined): StyleSheet | undefined {
  const xml = xmlAsUtf8(data);
  if (declaresEntities(xml)) throw ctx.unscannable(`${part} declares entities in a DTD (<!ENTITY), which an XML parser expands into its text and this check does not`, "export it again without them");
  const mine = free || xml !== data;
  const attributesToo = hasAttributesText(xml);
  const defined = STYLES_PARTS.has(part) ? packageStyles(xml) : undefined;
  // Read before the part's own text may be written over its bytes; scanned after it, so that a key both hold is named in the part's text.
  const shown = shownText(xml, defined ?? styles);
  const web = shownText(xml, defined ?? styles, "web");
  ctx.scanDerivedText(`the text of ${part}`, xmlText(xml, true, mine && !attributesToo));
  if (shown) ctx.scanDerivedText(`the text of ${part} as shown`, shown);
  if (web) ctx.scanDerivedText(`the text of ${part} as shown on a web page`, web);
  if (attributesToo) ctx.scanDerivedText(`the attributes of ${part}`, xmlAttributesText(xml, mine)!);
  return defined;
}
