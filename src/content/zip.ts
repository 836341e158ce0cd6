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
import type { InspectContext } from "./inspect.js";
import { utf16Order } from "./utf16.js";
import { xmlText } from "./xml-text.js";

const u16 = (b: Uint8Array, i: number) => b[i]! | (b[i + 1]! << 8);
const u64 = (b: Uint8Array, i: number) => u32(b, i) + u32(b, i + 4) * 2 ** 32;

const EOCD = 0x06054b50;
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

/** The longest a zip's end record and its comment can be. */
const TAIL = 22 + 0xffff;

/** Where the end record lies in `tail`, the file's last bytes. */
function findEocd(tail: Uint8Array): number {
  // The record is 22 bytes, after which a comment of up to 65535 bytes may follow.
  for (let at = tail.length - 22; at >= 0; at--) {
    if (u32(tail, at) === EOCD && at + 22 + u16(tail, at + 20) === tail.length) return at;
  }
  for (let at = tail.length - 22; at >= 0; at--) if (u32(tail, at) === EOCD) return at;
  return -1;
}

const EOCD_SIGNATURE = Buffer.from("PK\x05\x06", "latin1");

/**
 * How far the zip that ends `src` lies from where its directory says it
 * starts: where its directory really is (just before its end record) less
 * where the end record says it is. unzip reads a zip whatever bytes come
 * before it by adding that much to every offset ("extra bytes at beginning
 * of zipfile"), so a zip appended to another file (after a PDF's %%EOF, an
 * audio file's last frame) is extracted whole. The end record is the one
 * whose comment reaches the last byte; else, as unzip also finds one with
 * bytes after it, the last one whose directory starts where it says (a
 * central header there). Undefined when there is none; a zip64 end record
 * gives its own sizes.
 */
export function zipShift(src: ByteSource): number | undefined {
  const from = Math.max(0, src.length - TAIL);
  // A copy: the reads below may reuse the buffer the source returned.
  const bytes = Buffer.from(src.read(from, src.length - from));
  let followed: number | undefined;
  for (let at = bytes.lastIndexOf(EOCD_SIGNATURE, bytes.length - 22); at >= 0; at = at > 0 ? bytes.lastIndexOf(EOCD_SIGNATURE, at - 1) : -1) {
    const { directoryStart, cdSize, cdStart } = directoryOf(src, bytes, from + at);
    if (at + 22 + u16(bytes, at + 20) === bytes.length) return directoryStart - cdStart;
    if (followed === undefined && cdSize >= 4 && directoryStart >= 0 && u32(src.read(directoryStart, 4), 0) === CENTRAL) followed = directoryStart - cdStart;
  }
  return followed;
}

/** Where the directory of the end record at `eocd` (`tail`: the file's last bytes) really starts, its size, and where the record says it starts. */
function directoryOf(src: ByteSource, tail: Buffer, eocd: number): { directoryStart: number; cdSize: number; cdStart: number } {
  const at = eocd - (src.length - tail.length);
  let cdSize = u32(tail, at + 12);
  let cdStart = u32(tail, at + 16);
  let directoryEnd = eocd;
  if (eocd >= 20 + 56 && u32(src.read(eocd - 20, 20), 0) === EOCD64_LOCATOR) {
    // The zip64 end record lies just before its locator.
    const record = src.read(eocd - 20 - 56, 56);
    if (u32(record, 0) === EOCD64) {
      cdSize = u64(record, 40);
      cdStart = u64(record, 48);
      directoryEnd = eocd - 20 - 56;
    }
  }
  return { directoryStart: directoryEnd - cdSize, cdSize, cdStart };
}

/**
 * Reads the zip appended to a file that is not one (a PDF, an audio file,
 * a compound file), as unzip would extract it: its entries, its directory
 * and the bytes between them; the file's own bytes before the zip were its
 * reader's. Nothing when no zip ends the file.
 */
export function readAppendedZip(src: ByteSource, ctx: InspectContext): void {
  const shift = zipShift(src);
  if (shift === undefined || shift < 0) return;
  const part = "the zip appended to it";
  const shifted: ByteSource = { length: src.length - shift, read: (at, length) => src.read(at + shift, length) };
  ctx.readDeeper(part, () => ctx.inPart(part, () => inspectZipSource(shifted, ctx, "appended")));
}

/** The directory's entries, where it lies and where its end record lies. */
function readEntries(src: ByteSource, ctx: InspectContext): { entries: Entry[]; cdStart: number; cdEnd: number; eocd: number } {
  const tailFrom = Math.max(0, src.length - TAIL);
  const tail = src.read(tailFrom, src.length - tailFrom);
  const tailAt = findEocd(tail);
  if (tailAt < 0) throw ctx.unscannable("it has no zip directory");
  const eocd = tailFrom + tailAt;
  let count = u16(tail, tailAt + 10);
  let cdSize = u32(tail, tailAt + 12);
  let cdStart = u32(tail, tailAt + 16);
  if (eocd >= 20 && u32(src.read(eocd - 20, 20), 0) === EOCD64_LOCATOR) {
    const at = u64(src.read(eocd - 12, 8), 0);
    const record = at + 56 <= src.length ? src.read(at, 56) : undefined;
    if (!record || u32(record, 0) !== EOCD64) throw ctx.unscannable("it has a damaged zip64 directory");
    count = u64(record, 32);
    cdSize = u64(record, 40);
    cdStart = u64(record, 48);
  }
  if (cdStart + cdSize > src.length) throw ctx.unscannable("its zip directory lies past its end");
  // From the directory to the file's end: a count that lies is caught entry by entry.
  const b = src.read(cdStart, src.length - cdStart);
  const entries: Entry[] = [];
  let at = 0;
  for (let i = 0; i < count; i++) {
    if (at + 46 > b.length || u32(b, at) !== CENTRAL) throw ctx.unscannable("its zip directory is damaged");
    const nameLength = u16(b, at + 28);
    const extraLength = u16(b, at + 30);
    const commentLength = u16(b, at + 32);
    const name = Buffer.from(b.subarray(at + 46, at + 46 + nameLength)).toString("utf8");
    let compressed = u32(b, at + 20);
    let size = u32(b, at + 24);
    let localOffset = u32(b, at + 42);
    // zip64: the real sizes and offset are in extra field 0x0001, in this order, for the fields that are 0xFFFFFFFF.
    for (let x = at + 46 + nameLength; x + 4 <= at + 46 + nameLength + extraLength; x += 4 + u16(b, x + 2)) {
      if (u16(b, x) !== 1) continue;
      let f = x + 4;
      if (size === 0xffffffff) {
        size = u64(b, f);
        f += 8;
      }
      if (compressed === 0xffffffff) {
        compressed = u64(b, f);
        f += 8;
      }
      if (localOffset === 0xffffffff) localOffset = u64(b, f);
    }
    entries.push({ name, method: u16(b, at + 10), flags: u16(b, at + 8), compressed, size, localOffset });
    at += 46 + nameLength + extraLength + commentLength;
  }
  return { entries, cdStart, cdEnd: cdStart + at, eocd };
}

/** Where an entry's stored bytes start, after its local header (which must give the directory's method and size). */
function dataStart(src: ByteSource, e: Entry, ctx: InspectContext): number {
  const at = e.localOffset;
  const local = at + 30 <= src.length ? src.read(at, 30) : undefined;
  if (!local || u32(local, 0) !== LOCAL) throw ctx.unscannable(`${e.name} has no local header where the directory says`);
  // Read as the directory says, what a reader that follows the local header inflates would be read as stored, or cut short.
  if (u16(local, 8) !== e.method) throw ctx.unscannable(`${e.name}'s local header gives another compression method (${u16(local, 8)}) than its directory (${e.method})`);
  // A size the local header does not give: 0 or 0xFFFFFFFF (in a data descriptor after the data, in a zip64 field).
  const localCompressed = u32(local, 18);
  if (localCompressed !== 0 && localCompressed !== 0xffffffff && localCompressed !== e.compressed) {
    throw ctx.unscannable(`${e.name}'s local header gives another compressed size (${localCompressed} bytes) than its directory (${e.compressed})`);
  }
  const start = at + 30 + u16(local, 26) + u16(local, 28);
  if (start + e.compressed > src.length) throw ctx.unscannable(`${e.name} runs past the end of the file`);
  return start;
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
function xmlAsUtf8(data: Uint8Array): Uint8Array {
  const order = utf16Order(data);
  if (!order) return data;
  const units = Buffer.from(data.subarray(2, 2 + ((data.length - 2) & ~1)));
  if (order === "be") units.swap16();
  return Buffer.from(units.toString("utf16le"), "utf8");
}

/** A zip in memory (a docx small enough to keep, a zip inside a document). */
export function inspectZip(b: Uint8Array, ctx: InspectContext): void {
  inspectZipSource(bytesSource(b), ctx);
}

/** A zip read a range at a time: its directory, then one entry after another, never the whole file at once. */
export function inspectZipSource(src: ByteSource, ctx: InspectContext, where: "whole" | "appended" = "whole"): void {
  const { entries, cdStart, cdEnd, eocd } = readEntries(src, ctx);
  // Names, comments and extra fields, and any byte outside the entries (after the directory: a polyglot's payload; before it: scanOutsideEntries).
  ctx.scan("its zip directory", src.read(cdStart, cdEnd - cdStart));
  ctx.scan("the end of its zip directory", src.read(eocd, src.length - eocd), eocd);
  // Each local header read once: where its data starts, checked against the directory.
  const starts = entries.map((e) => dataStart(src, e, ctx));
  // An appended zip's first entry starts where the file it was appended to ends.
  const from = where === "appended" ? entries.reduce((first, e) => Math.min(first, e.localOffset), cdStart) : 0;
  scanOutsideEntries(src, entries, starts, from, cdStart, cdEnd, eocd, ctx);
  for (const [i, e] of entries.entries()) {
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
    if (XML_PART.test(e.name)) ctx.scan(`the text of ${part}`, xmlText(xmlAsUtf8(data)));
    ctx.readNested(part, data);
  }
}
