// Archives (tar, gzip; tar.gz): a tar's members are read one by one, as a
// zip's entries are (a picture by its picture reader, a zip, a PDF or a
// gzip inside by its reader); a gzip file is inflated within the file's
// budget and its content read as the tar or the bytes it is. An archive
// compressed some other way (bzip2, xz, 7-Zip, RAR) cannot be read here, so
// it is refused rather than let out unread: its bytes say nothing of what it
// holds.
//
// The tar format is POSIX ustar (pax, IEEE 1003.1-2017) with GNU's long
// names; node:zlib inflates gzip (RFC 1952).
import { UNREADABLE_FORMATS } from "./formats.js";
import { ascii, u32le } from "./bytes.js";
import { GZIP, opensAs } from "./hidden-archives.js";
import type { InspectContext, Reader } from "./inspect.js";
import { readInside, readPicture } from "./images.js";
import { OVERLAP } from "./scan.js";

const BLOCK = 512;

/** A header field of text (a name: UTF-8, as today's tars write it), up to its first NUL. */
function field(b: Uint8Array, at: number, length: number): string {
  let end = at;
  while (end < at + length && b[end] !== 0) end++;
  return Buffer.from(b.buffer, b.byteOffset + at, end - at).toString("utf8");
}

/** A header's number field: octal digits between optional spaces and NULs, or GNU's base-256 (a first byte of 0x80, then big-endian); -1 when it is neither. */
function octal(b: Uint8Array, at: number, length: number): number {
  let i = at;
  const end = at + length;
  if (b[at] === 0x80) {
    let n = 0;
    for (i = at + 1; i < end; i++) n = n * 256 + b[i]!;
    return Number.isSafeInteger(n) ? n : -1;
  }
  while (i < end && b[i] === 0x20) i++;
  if (i === end || b[i]! < 0x30 || b[i]! > 0x37) return -1;
  let n = 0;
  for (; i < end && b[i]! >= 0x30 && b[i]! <= 0x37; i++) n = n * 8 + (b[i]! - 0x30);
  for (; i < end; i++) if (b[i] !== 0x20 && b[i] !== 0) return -1;
  return n;
}

/**
 * True when the 512 bytes at `at` are a tar header: its checksum (bytes
 * summed, the checksum field as spaces) holds, summed as unsigned bytes
 * (POSIX) or as signed ones (old Unix tars, which GNU tar and libarchive
 * also take).
 */
function isHeader(b: Uint8Array, at: number): boolean {
  if (at + BLOCK > b.length) return false;
  const stored = octal(b, at + 148, 8);
  if (stored < 0) return false;
  let sum = 8 * 0x20;
  let high = 0;
  for (let i = at; i < at + BLOCK; i++) {
    if (i === at + 148) i += 8;
    sum += b[i]!;
    if (b[i]! >= 0x80) high++;
  }
  return sum === stored || sum - 256 * high === stored;
}

/** True when `b` opens with a tar header (`ustar` where POSIX and GNU write it, and a checksum that holds). */
export function isTar(b: Uint8Array): boolean {
  return b.length >= BLOCK && ascii(b, 257, 5) === "ustar" && isHeader(b, 0);
}

const isZero = (b: Uint8Array, from: number, to: number) => {
  for (let i = from; i < to; i++) if (b[i] !== 0) return false;
  return true;
};
const isZeroBlock = (b: Uint8Array, at: number) => isZero(b, at, at + BLOCK);

/** The records of a pax extended header (`LENGTH key=value\n` each) that name the next member or its size. */
function paxRecords(data: Uint8Array): { path?: string; size?: number } {
  // LENGTH counts bytes: the records are split as Latin-1 (a character a byte), the path decoded as the UTF-8 it is.
  const text = ascii(data, 0, data.length);
  const out: { path?: string; size?: number } = {};
  for (let at = 0; at < text.length; ) {
    const space = text.indexOf(" ", at);
    const length = space < 0 ? NaN : Number(text.slice(at, space));
    if (!Number.isSafeInteger(length) || length <= space - at) break;
    const record = text.slice(space + 1, at + length - 1);
    const eq = record.indexOf("=");
    const key = record.slice(0, eq);
    if (key === "path") out.path = Buffer.from(record.slice(eq + 1), "latin1").toString("utf8");
    else if (key === "size" && /^[0-9]{1,15}$/.test(record.slice(eq + 1))) out.size = Number(record.slice(eq + 1));
    at += length;
  }
  return out;
}

/** Members whose data is no file's content but names or attributes of the next one. */
const PAX_NEXT = 0x78; // 'x'
const PAX_GLOBAL = 0x67; // 'g'
const GNU_LONG_NAME = 0x4c; // 'L'
const GNU_LONG_LINK = 0x4b; // 'K'
const GNU_SPARSE = 0x53; // 'S'
/** The largest pax or GNU long name header read (the next member's names and size), as Go's archive/tar reads them. */
const MAX_NAMES_HEADER = 1024 * 1024;
/** Links, devices, directories and FIFOs: no data follows their header, whatever its size field says. */
const NO_DATA = new Set([0x31, 0x32, 0x33, 0x34, 0x35, 0x36]);

/**
 * A tar archive: each header is scanned (names, link targets, owners), each
 * member's data read as a zip entry is, and what follows the end-of-archive
 * blocks scanned. A header whose checksum fails is refused: a reader that
 * lost its place would let the rest out unread.
 */
export function inspectTar(b: Uint8Array, ctx: InspectContext): void {
  let at = 0;
  let longName: string | undefined;
  let pax: { path?: string; size?: number } = {};
  while (at + BLOCK <= b.length && !isZeroBlock(b, at)) {
    if (!isHeader(b, at)) throw ctx.unscannable(`its tar header at byte ${at} is damaged`);
    const type = b[at + 156]!;
    // POSIX ustar (`ustar\0`) splits a long name into a prefix; GNU's (`ustar `) keeps other fields there.
    const prefix = ascii(b, at + 257, 6) === "ustar\0" ? field(b, at + 345, 155) : "";
    const name = pax.path ?? longName ?? (prefix ? `${prefix}/${field(b, at, 100)}` : field(b, at, 100));
    ctx.scan(`the tar header of ${name}`, b.subarray(at, at + BLOCK), at);
    const declared = pax.size ?? octal(b, at + 124, 12);
    if (declared < 0) throw ctx.unscannable(`the size in its tar header at byte ${at} is not a number this check reads`);
    const size = NO_DATA.has(type) ? 0 : declared;
    let dataAt = at + BLOCK;
    // An old GNU sparse file ('S') lists more of its map in extension blocks after its header, each saying whether another follows.
    if (type === GNU_SPARSE && b[at + 482] === 1) {
      do {
        if (dataAt + BLOCK > b.length) throw ctx.unscannable(`the sparse map of ${name} runs past the end of the file`);
        ctx.scan(`the tar header of ${name}`, b.subarray(dataAt, dataAt + BLOCK), dataAt);
        dataAt += BLOCK;
      } while (b[dataAt - BLOCK + 504] === 1);
    }
    if (dataAt + size > b.length) throw ctx.unscannable(`${name} runs past the end of the file`);
    const data = b.subarray(dataAt, dataAt + size);
    at = dataAt + Math.ceil(size / BLOCK) * BLOCK;
    // The padding to the next block is NULs in a tar any tool writes; anything else there is no member's, and a key in
    // it, or across a size made shorter, was published: read with the end of the data before it.
    if (!isZero(b, dataAt + size, Math.min(at, b.length))) {
      const from = Math.max(dataAt, dataAt + size - OVERLAP);
      ctx.scan(`the padding after ${name}`, b.subarray(from, at), from);
    }
    if (type === PAX_NEXT || type === PAX_GLOBAL || type === GNU_LONG_NAME || type === GNU_LONG_LINK) {
      // Read as a string: past 512 MiB no string holds it (a 540 MB pax header threw, an internal error). Go's
      // archive/tar refuses these headers past 1 MiB too (maxSpecialFileSize); a real one is a few hundred bytes.
      if ((type === PAX_NEXT || type === GNU_LONG_NAME) && size > MAX_NAMES_HEADER) {
        throw ctx.unscannable(`the ${type === PAX_NEXT ? "pax" : "GNU long name"} header at byte ${dataAt - BLOCK} holds ${size} bytes, more than the ${MAX_NAMES_HEADER} this check reads`);
      }
      ctx.scan(`the tar header of ${name}`, data, dataAt);
      if (type === PAX_NEXT) pax = paxRecords(data);
      else if (type === GNU_LONG_NAME) longName = field(data, 0, data.length);
      continue;
    }
    longName = undefined;
    pax = {};
    if (size === 0 || readPicture(ctx, name, data)) continue;
    ctx.scan(name, data);
    ctx.readNested(name, data);
  }
  if (at < b.length) ctx.trailing(b.subarray(at), at, "end-of-archive blocks", false);
}

/** The end of a gzip member's header (RFC 1952 2.3): where its compressed data starts; its name, comment and extra field lie before. */
function gzipHeaderEnd(b: Uint8Array): number {
  const FEXTRA = 4;
  const FNAME = 8;
  const FCOMMENT = 16;
  const FHCRC = 2;
  const flags = b[3]!;
  let at = 10;
  if (flags & FEXTRA) at += 2 + (b[at]! | (b[at + 1]! << 8));
  for (const flag of [FNAME, FCOMMENT]) {
    if (!(flags & flag)) continue;
    while (at < b.length && b[at] !== 0) at++;
    at++;
  }
  if (flags & FHCRC) at += 2;
  return Math.min(at, b.length);
}

/**
 * A gzip file (`.gz`, `.tgz`): its header (the original name, a comment)
 * scanned, every member inflated within the file's budget, and the content
 * read as the tar it is, or scanned as bytes and read by its reader (a zip,
 * a PDF) when it is a document.
 */
export function inspectGzip(b: Uint8Array, ctx: InspectContext): void {
  ctx.scan("its gzip header", b.subarray(0, gzipHeaderEnd(b)), 0);
  // The last member's trailer gives its size modulo 2^32 (RFC 1952 ISIZE): a hint that sizes the output in one piece.
  const { out, consumed } = ctx.inflateCounted("its compressed content", b, "gzip", b.length >= 4 ? u32le(b, b.length - 4) : 0);
  if (consumed < b.length) ctx.trailing(b.subarray(consumed), consumed, "compressed content", false);
  if (isTar(out)) return ctx.readWithin("the tar it compresses", out, inspectTar);
  ctx.scan("the file it compresses", out);
  readInside(ctx, "the file it compresses", out);
}

/** True when `b` opens as a gzip member (magic and deflate). */
export const isGzip = (b: Uint8Array) => b.length >= 18 && opensAs(b, GZIP);

/** The compression of an archive this check cannot read, when `b` opens as one (by its signature, hidden-archives.ts opensAs: a part of another file). */
export function unreadableArchive(b: Uint8Array): string | undefined {
  return Object.values(UNREADABLE_FORMATS).find((format) => opensAs(b, format));
}

/** The reader of an archive whose compression this check does not read: a refusal, naming it. */
export function refuseUnreadable(format: string): Reader {
  return (_bytes, ctx) => {
    throw ctx.unscannable(`its content is compressed with ${format}, which this check does not read`, "send it as a .zip or a .tar.gz, which it reads");
  };
}
