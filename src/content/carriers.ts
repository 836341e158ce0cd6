// Which reader a binary format gets. Loaded only for a binary file (a
// dynamic import from src/prepare/content.ts), so a text file never pays for
// it, and each reader does work only for its format.
import { inspectGzip, inspectTar, isGzip, isTar, refuseUnreadable, unreadableArchive } from "./archive.js";
import { inspectCfb, isCfb } from "./cfb.js";
import { inspectBmp, inspectGif, inspectJpeg, inspectPng, inspectTiffXmp, inspectWebp } from "./images.js";
import { type RangeReadType, UNREADABLE_FORMATS, type WholeReadType, readingOf } from "./formats.js";
import { type RawSearch, SCANNED_HEAD } from "./hidden-archives.js";
import { InspectContext, type Reader } from "./inspect.js";
import type { KnownSecrets } from "./known.js";
import { type ByteSource, bytesSource, fileSource } from "./byte-source.js";
import { inspectIsoMedia } from "./iso-media.js";
import { inspectFlac, inspectMp3, inspectRiff } from "./media.js";
import { inspectMatroska } from "./matroska.js";
import { inspectOgg } from "./ogg.js";
import { inspectPdf, inspectPdfSource } from "./pdf.js";
import { inspectRtf } from "./rtf.js";
import { inspectZip, inspectZipSource, readAppendedZip, zipReaderOf } from "./zip.js";

/**
 * Readers that read a file a range at a time: audio and video (their audio
 * and video samples are skipped, never read: an mp4's media data, a
 * Matroska file's clusters, Ogg's audio and video packets; only a text
 * track's samples, subtitles, are read), zips (their directory, then one entry after
 * another), PDF (its objects and the streams that can hold text; images and
 * fonts skipped).
 */
const RANGE_READERS: Record<RangeReadType, (src: ByteSource, ctx: InspectContext) => void> = {
  docx: inspectZipSource,
  xlsx: inspectZipSource,
  pptx: inspectZipSource,
  odt: inspectZipSource,
  ods: inspectZipSource,
  odp: inspectZipSource,
  epub: inspectZipSource,
  zip: inspectZipSource,
  apk: inspectZipSource,
  pdf: inspectPdfSource,
  ai: inspectPdfSource,
  mp3: inspectMp3,
  flac: inspectFlac,
  mp4: inspectIsoMedia,
  m4v: inspectIsoMedia,
  m4a: inspectIsoMedia,
  mov: inspectIsoMedia,
  qt: inspectIsoMedia,
  wav: inspectRiff,
  avi: inspectRiff,
  webm: inspectMatroska,
  mkv: inspectMatroska,
  ogg: inspectOgg,
  opus: inspectOgg,
  oga: inspectOgg,
  ogv: inspectOgg,
  spx: inspectOgg,
  ogx: inspectOgg,
};

const inMemory = (read: (src: ByteSource, ctx: InspectContext) => void): Reader => (bytes, ctx) => read(bytesSource(bytes), ctx);

/** Readers that read every byte, in memory. */
const WHOLE_READERS: Record<WholeReadType, Reader> = {
  png: inspectPng,
  apng: inspectPng,
  jpg: inspectJpeg,
  gif: inspectGif,
  webp: inspectWebp,
  bmp: inspectBmp,
  tar: inspectTar,
  gz: inspectGzip,
  "tar.gz": inspectGzip,
  // .doc, .xls, .ppt: file-type names them all `cfb` (21.3).
  cfb: inspectCfb,
  rtf: inspectRtf,
  bz2: refuseUnreadable(UNREADABLE_FORMATS.bz2),
  xz: refuseUnreadable(UNREADABLE_FORMATS.xz),
  "7z": refuseUnreadable(UNREADABLE_FORMATS["7z"]),
  rar: refuseUnreadable(UNREADABLE_FORMATS.rar),
};

/** Readers by the type file-type sniffed (a range reader reads a file in memory too: a document inside another). */
const READERS: Record<string, Reader> = {
  ...Object.fromEntries(Object.entries(RANGE_READERS).map(([ext, read]) => [ext, inMemory(read)])),
  ...WHOLE_READERS,
};

/** True when a reader knows the sniffed type; other binaries are scanned as raw bytes. */
export function hasReader(sniffedExt: string): boolean {
  return readingOf(sniffedExt) !== undefined;
}

/**
 * A reader, then the zip appended to what it read, if a zip ends it: unzip
 * extracts a zip whatever bytes come before it, so a PDF or a song with a
 * zip after its end carries the zip's compressed entries, which the scan of
 * the bytes after the format's end cannot read. A zip's own reader reads
 * the zip that ends the file already.
 */
function thenAppendedZip(read: Reader): Reader {
  return (bytes, ctx) => {
    read(bytes, ctx);
    readAppendedZip(bytesSource(bytes), ctx);
  };
}

const NESTED_PDF = thenAppendedZip(inspectPdf);
const NESTED_CFB = thenAppendedZip(inspectCfb);
const NESTED_GZIP = thenAppendedZip(inspectGzip);
const NESTED_TAR = thenAppendedZip(inspectTar);

/** Whether `b` opens with a zip's local file header signature (`PK\x03\x04`). */
const opensAsZip = (b: Uint8Array) => b[0] === 0x50 && b[1] === 0x4b && b[2] === 0x03 && b[3] === 0x04;

/**
 * The reader of a document inside another, by its first bytes: a zip (an
 * embedded workbook, an attached docx), a PDF, a compound file (a docx's
 * OLE object, a workbook inside a .doc), a tar or a gzip file (an archive
 * inside an archive); else by the zip that ends it (a zip whose first bytes
 * are damaged, or a zip after bytes no reader here knows: unzip extracts
 * either); an archive compressed in a way this check does not read gets a
 * refusal.
 */
function nestedReaderOf(b: Uint8Array): Reader | undefined {
  if (b.length >= 22 && opensAsZip(b)) return inspectZip;
  if (b.length >= 8 && b[0] === 0x25 && b[1] === 0x50 && b[2] === 0x44 && b[3] === 0x46 && b[4] === 0x2d) return NESTED_PDF;
  if (isCfb(b)) return NESTED_CFB;
  if (isGzip(b)) return NESTED_GZIP;
  if (isTar(b)) return NESTED_TAR;
  const zip = zipReaderOf(b);
  if (zip) return zip;
  const unreadable = unreadableArchive(b);
  return unreadable === undefined ? undefined : refuseUnreadable(unreadable);
}

/** The types whose reader is a zip's, which reads the zip that ends the file itself. */
const ZIP_TYPES: readonly string[] = Object.entries(RANGE_READERS).flatMap(([type, read]) => (read === inspectZipSource ? [type] : []));
const isZipType = (sniffedExt: string) => ZIP_TYPES.includes(sniffedExt);

/**
 * Containers whose reader reads every member they hold, a gzip file among
 * them, and every byte between: a gzip member in one is read, not hidden
 * (InspectContext.refuseHiddenArchive). Each by its first bytes (a part of
 * a file: readsEveryMember) and by the types file-type gives it (the file
 * itself: rawSearchOf).
 */
const READS_EVERY_MEMBER: readonly { opens: (b: Uint8Array) => boolean; types: readonly string[] }[] = [
  { opens: opensAsZip, types: ZIP_TYPES },
  { opens: isCfb, types: ["cfb"] },
  { opens: isGzip, types: ["gz", "tar.gz"] },
  { opens: isTar, types: ["tar"] },
];
const readsEveryMember = (b: Uint8Array) => READS_EVERY_MEMBER.some(({ opens }) => opens(b));

/**
 * Where a file's own bytes are searched for archives (hidden-archives.ts
 * findInFile): where 7-Zip finds one after other bytes, in its first 8 MiB,
 * and a Cabinet everywhere (cabextract); every kind everywhere in a type
 * no reader knows (its bytes were searched so before, a window at a time).
 * A gzip member only outside containers that read every member.
 */
function rawSearchOf(sniffedExt: string): RawSearch {
  return { head: hasReader(sniffedExt) ? SCANNED_HEAD : Number.POSITIVE_INFINITY, gzip: !READS_EVERY_MEMBER.some(({ types }) => types.includes(sniffedExt)) };
}

/**
 * Reads a file: its reader, the zip appended to it (a zip's own reader
 * reads the zip that ends the file already), then its own bytes searched
 * for archives no reader here inflates, wherever they lie: a reader skips
 * media data (an mp4's mdat, a PNG's IDAT, audio frames) that 7-Zip opens
 * an archive in all the same. Its parts within that search are not
 * searched again (InspectContext.refuseHiddenArchive).
 */
function readFile(src: ByteSource, ctx: InspectContext, sniffedExt: string, read: () => void): void {
  read();
  if (!isZipType(sniffedExt)) readAppendedZip(src, ctx);
  ctx.refuseHiddenArchiveInFile(src);
}

/** Reads the file's metadata and containers; throws the Refusal a finding leads to. */
export function inspectBinary(bytes: Uint8Array, ext: string, sniffedExt: string, known: KnownSecrets | (() => KnownSecrets)): void {
  const ctx = new InspectContext(ext, known, nestedReaderOf, rawSearchOf(sniffedExt), readsEveryMember);
  readFile(bytesSource(bytes), ctx, sniffedExt, () => READERS[sniffedExt]!(bytes, ctx));
}

/** True when the sniffed type's reader reads the file a range at a time (inspectFile), not all its bytes. */
export function readsRanges(sniffedExt: string): boolean {
  return readingOf(sniffedExt) === "ranges";
}

/** inspectBinary for a type that readsRanges, from an open file of `length` bytes. */
export function inspectFile(fd: number, length: number, ext: string, sniffedExt: string, known: KnownSecrets | (() => KnownSecrets)): void {
  const ctx = new InspectContext(ext, known, nestedReaderOf, rawSearchOf(sniffedExt), readsEveryMember);
  const src = fileSource(fd, length);
  readFile(src, ctx, sniffedExt, () => RANGE_READERS[sniffedExt as RangeReadType](src, ctx));
}

/**
 * For an open file of a format no reader here knows (its bytes scanned
 * raw): refuses an archive no reader here inflates anywhere in it, read a
 * window at a time, and reads the zip appended to it, if a zip ends it; a
 * TIFF's XMP (`sniffedExt` tif) is also read with its entities decoded.
 */
export function inspectAppendedZip(fd: number, length: number, ext: string, known: KnownSecrets | (() => KnownSecrets), sniffedExt = ""): void {
  const ctx = new InspectContext(ext, known, nestedReaderOf, rawSearchOf(""), readsEveryMember);
  const src = fileSource(fd, length);
  readFile(src, ctx, "", () => (sniffedExt === "tif" ? inspectTiffXmp(src, ctx) : undefined));
}
