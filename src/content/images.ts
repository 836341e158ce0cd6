// Images: their metadata is scanned (PNG text chunks, JPEG segments, GIF
// comment and application extensions, WebP EXIF/XMP chunks; a TIFF, whose
// bytes are scanned raw, has its XMP tag read), their pixel
// data is skipped, and any byte after the format's end marker is
// refused (`trailing_data`): a generated image has none, and a polyglot is
// how an archive rides inside a picture.
import { Refusal } from "../core/errors.js";
import { ascii, u32be, u32le } from "./bytes.js";
import { type ByteSource, bytesSource } from "./byte-source.js";
import type { InspectContext, Reader } from "./inspect.js";
import { scanXmpText } from "./xml-text.js";
import { readAppendedZip } from "./zip.js";


/** PNG chunks that hold pixels or layout, never text: skipped. */
const PNG_IMAGE_CHUNKS = new Set(["IHDR", "PLTE", "IDAT", "fdAT", "fcTL", "acTL", "tRNS", "gAMA", "cHRM", "sRGB", "bKGD", "pHYs", "sBIT", "hIST", "sPLT", "tIME", "oFFs", "sCAL", "cICP", "mDCv", "cLLi"]);

export function inspectPng(b: Uint8Array, ctx: InspectContext): void {
  let at = 8;
  for (;;) {
    if (at + 12 > b.length) throw ctx.unscannable("its chunk list ends before the IEND chunk");
    const length = u32be(b, at);
    const type = ascii(b, at + 4, 4);
    const dataAt = at + 8;
    const next = dataAt + length + 4;
    if (next > b.length) throw ctx.unscannable(`its ${type} chunk runs past the end of the file`);
    const data = b.subarray(dataAt, dataAt + length);
    if (type === "IEND") {
      ctx.trailing(b.subarray(next), next, "end (the IEND chunk)", true);
      return;
    }
    if (type === "zTXt" || type === "iCCP") {
      const nul = data.indexOf(0);
      ctx.scan(`its ${type} chunk`, data.subarray(0, Math.max(0, nul)));
      if (nul >= 0) ctx.scan(`its ${type} chunk`, ctx.inflate(`its ${type} chunk`, data.subarray(nul + 2), "zlib"));
    } else if (type === "iTXt") {
      ctx.scan("its iTXt chunk", data);
      const nul = data.indexOf(0);
      // keyword \0 flag method language \0 translated keyword \0 text
      const lang = nul < 0 ? -1 : data.indexOf(0, nul + 3);
      const translated = lang < 0 ? -1 : data.indexOf(0, lang + 1);
      if (translated >= 0) {
        const compressed = data[nul + 1] === 1;
        const text = compressed ? ctx.inflate("its iTXt chunk", data.subarray(translated + 1), "zlib") : data.subarray(translated + 1);
        if (compressed) ctx.scan("its iTXt chunk", text);
        // Where XMP lives in a PNG (XMP specification part 3, 1.1.5).
        if (nul === 17 && ascii(data, 0, nul) === "XML:com.adobe.xmp") scanXmpText(ctx, "its iTXt chunk's XMP", text);
      }
    } else if (!PNG_IMAGE_CHUNKS.has(type)) {
      // tEXt, eXIf and any chunk no one knows: read as they are.
      ctx.scan(`its ${type} chunk`, type === "eXIf" ? withoutCharsetCodes(data) : data);
    }
    at = next;
  }
}

const UNICODE_CODE = Buffer.from("UNICODE\0", "latin1");

/**
 * EXIF's bytes with the character code before each UTF-16 UserComment
 * (`UNICODE\0`, CIPA DC-008 4.6.5) made NULs. Read as UTF-16 its last two
 * bytes are the letter `E` (little-endian), so the comment's first token ran
 * on from it: Pillow's and exiftool's `ghp_…` read `Eghp_…`. The bytes
 * themselves unless one is there.
 */
function withoutCharsetCodes(data: Uint8Array): Uint8Array {
  let at = Buffer.from(data.buffer, data.byteOffset, data.length).indexOf(UNICODE_CODE);
  if (at < 0) return data;
  const out = Buffer.from(data);
  for (; at >= 0; at = out.indexOf(UNICODE_CODE, at + 8)) out.fill(0, at, at + 8);
  return out;
}

/**
 * A Photoshop APP13 segment with each IPTC dataset's header (0x1C, its
 * record and dataset numbers, its two length bytes) made line breaks, or
 * undefined for another APP13: the length's last byte is often a letter (a
 * caption of 108 bytes: `l`), which ran on into the caption's first token.
 * Read beside the segment as it is; a 0x1C that starts no dataset only adds
 * a break to this reading.
 */
function iptcDatasetsApart(data: Uint8Array): Buffer | undefined {
  if (ascii(data, 0, Math.min(14, data.length)) !== "Photoshop 3.0\0") return undefined;
  const out = Buffer.from(data);
  for (let at = out.indexOf(0x1c, 14); at >= 0 && at + 5 <= out.length; at = out.indexOf(0x1c, at + 1)) {
    if (out[at + 1]! >= 1 && out[at + 1]! <= 9) out.fill(10, at, at + 5);
  }
  return out;
}

/**
 * A JPEG: its segments scanned (APP and COM, and the others as they are;
 * the entropy-coded data skipped), and nothing after its end but
 * the images its MPF index places there. Phones write a depth map or an HDR
 * gain map as a second JPEG after the first one's end (CIPA DC-007 Multi-Picture
 * Format; Ultra HDR); each such image is read as a JPEG, and only bytes no
 * image of the index covers are trailing data.
 */
export function inspectJpeg(b: Uint8Array, ctx: InspectContext): void {
  const { end, images } = jpegSegments(b, ctx);
  let at = end;
  for (const image of images) {
    // The index places the images one after the other from the first one's end; any other layout is not trusted.
    if (image.start !== at || image.start + image.size > b.length || b[image.start] !== 0xff || b[image.start + 1] !== 0xd8) break;
    const part = `the image its MPF index places at byte ${image.start}`;
    const bytes = b.subarray(image.start, image.start + image.size);
    ctx.readWithin(part, bytes, (inner, c) => {
      const innerEnd = jpegSegments(inner, c).end;
      c.trailing(inner.subarray(innerEnd), innerEnd, "end-of-image marker", false);
    });
    at = image.start + image.size;
  }
  ctx.trailing(b.subarray(at), at, at === end ? "end-of-image marker" : "last image of its MPF index", true);
}

/** What opens an APP1 segment that carries an XMP packet (Adobe XMP specification part 3, 1.1.3). */
const STANDARD_XMP = "http://ns.adobe.com/xap/1.0/\0";
/** What opens an APP1 segment that carries a chunk of Extended XMP (Adobe XMP specification part 3, 1.1.3.1). */
const EXTENDED_XMP = "http://ns.adobe.com/xmp/extension/\0";
/** Its header: the namespace, the GUID (32 hex digits), the full length and the chunk's offset (big-endian). */
const EXTENDED_XMP_HEADER = EXTENDED_XMP.length + 32 + 8;
/** Extended XMP declared longer than this is refused: its chunks are joined up to this size, no further. */
export const MAX_EXTENDED_XMP = 64 * 1024 * 1024;

/** A chunk of Extended XMP: its offset in the packet, its bytes. */
interface XmpChunk {
  offset: number;
  bytes: Uint8Array;
}

/**
 * Scans the Extended XMP packets a JPEG's APP1 segments carry, each joined
 * from its chunks (by GUID, in offset order): Photoshop, Lightroom and depth
 * photos split an XMP packet past 64 KB over segments, exiftool reads it
 * whole, and a key across two chunks, each scanned alone, was published.
 * Chunks that follow one another are joined, in runs: a gap (chunks
 * missing) ends a run, a chunk that overlaps the run's end is left out of
 * it, and a chunk past the declared length joins none; each is already
 * scanned as it is, in its segment. Where chunks share an offset (written
 * twice), the runs are made with the first of them and again with the last
 * (exiftool keeps the last). A packet declared longer than
 * MAX_EXTENDED_XMP is refused.
 */
function scanExtendedXmp(ctx: InspectContext, packets: Map<string, { length: number; chunks: XmpChunk[] }>): void {
  for (const { length, chunks } of packets.values()) {
    if (length > MAX_EXTENDED_XMP) throw ctx.unscannable(`its Extended XMP declares ${length} bytes, more than the ${MAX_EXTENDED_XMP} this check joins`, "export it again with less metadata");
    const inPlace = chunks.filter((c) => c.offset + c.bytes.length <= length);
    const firsts = new Map<number, XmpChunk>();
    const lasts = new Map<number, XmpChunk>();
    for (const c of inPlace) {
      if (!firsts.has(c.offset)) firsts.set(c.offset, c);
      lasts.set(c.offset, c);
    }
    scanXmpRuns(ctx, [...firsts.values()]);
    if (firsts.size < inPlace.length) scanXmpRuns(ctx, [...lasts.values()]);
  }
}

/** Scans each run of two or more of `chunks` (one per offset) that follow one another, joined. */
function scanXmpRuns(ctx: InspectContext, chunks: XmpChunk[]): void {
  chunks.sort((x, y) => x.offset - y.offset);
  let run: XmpChunk[] = [];
  let end = 0;
  const flush = () => {
    if (run.length < 2) return;
    const joined = Buffer.concat(run.map((c) => c.bytes));
    ctx.scanDerivedText("its Extended XMP (its APP1 segments' chunks joined)", joined);
    scanXmpText(ctx, "its Extended XMP (its APP1 segments' chunks joined)", joined);
  };
  for (const c of chunks) {
    if (run.length > 0 && c.offset < end) continue;
    if (c.offset > end || run.length === 0) {
      flush();
      run = [];
    }
    run.push(c);
    end = c.offset + c.bytes.length;
  }
  flush();
}

/** An image an MPF index places after the first: where it starts in the file, and its size. */
interface MpImage {
  start: number;
  size: number;
}

/** Reads a JPEG's segments up to its end-of-image marker: where the marker ends, and the further images its MPF index lists. */
function jpegSegments(b: Uint8Array, ctx: InspectContext): { end: number; images: MpImage[] } {
  let images: MpImage[] = [];
  const extendedXmp = new Map<string, { length: number; chunks: XmpChunk[] }>();
  let at = 2;
  for (;;) {
    // Markers may be padded with 0xFF.
    while (at < b.length && b[at] === 0xff && b[at + 1] === 0xff) at++;
    if (at + 1 >= b.length || b[at] !== 0xff) throw ctx.unscannable("its segments end before the end-of-image marker");
    const marker = b[at + 1]!;
    if (marker === 0xd9) {
      scanExtendedXmp(ctx, extendedXmp);
      return { end: at + 2, images };
    }
    if ((marker >= 0xd0 && marker <= 0xd7) || marker === 0x01) {
      at += 2;
      continue;
    }
    if (at + 4 > b.length) throw ctx.unscannable("a segment runs past the end of the file");
    const length = (b[at + 2]! << 8) | b[at + 3]!;
    const end = at + 2 + length;
    if (length < 2 || end > b.length) throw ctx.unscannable("a segment runs past the end of the file");
    const data = b.subarray(at + 4, end);
    if ((marker >= 0xe0 && marker <= 0xef) || marker === 0xfe) {
      const what = marker === 0xfe ? "comment" : `APP${marker - 0xe0} segment`;
      const exif = marker === 0xe1 && data[0] === 0x45 && data[1] === 0x78;
      const segment = exif ? withoutCharsetCodes(data) : data;
      ctx.scan(`its ${what}`, segment);
      // EXIF's Windows tags (XPComment, XPAuthor…) are UTF-16: read them that way too.
      if (exif) ctx.scanUtf16(`its ${what}`, segment, data[6] === 0x49 ? "le" : "be");
      if (marker === 0xed) {
        const datasets = iptcDatasetsApart(data);
        if (datasets !== undefined) ctx.scan(`its ${what}'s IPTC datasets`, datasets);
      }
      if (marker === 0xe1 && data.length >= EXTENDED_XMP_HEADER && ascii(data, 0, EXTENDED_XMP.length) === EXTENDED_XMP) {
        const guid = ascii(data, EXTENDED_XMP.length, 32);
        const packet = extendedXmp.get(guid) ?? { length: 0, chunks: [] };
        extendedXmp.set(guid, packet);
        // Each chunk repeats the full length: the largest one declared is the packet's.
        packet.length = Math.max(packet.length, u32be(data, EXTENDED_XMP.length + 32));
        packet.chunks.push({ offset: u32be(data, EXTENDED_XMP.length + 36), bytes: data.subarray(EXTENDED_XMP_HEADER) });
        scanXmpText(ctx, `its ${what}'s Extended XMP chunk`, data.subarray(EXTENDED_XMP_HEADER));
      } else if (marker === 0xe1 && ascii(data, 0, Math.min(STANDARD_XMP.length, data.length)) === STANDARD_XMP) {
        scanXmpText(ctx, `its ${what}'s XMP`, data.subarray(STANDARD_XMP.length));
      }
      if (marker === 0xe2 && images.length === 0 && ascii(data, 0, Math.min(4, data.length)) === "MPF\0") images = mpImages(data, at + 8);
    } else if (data.length > 0) {
      // Tables, frame and scan headers, and any segment no decoder knows (JPG0-JPG13, reserved): a few
      // hundred bytes that hold no pixels, read as they are (a key in one, or in a scan header whose length
      // took a comment in, was published).
      ctx.scan(`its segment 0xFF${marker.toString(16).toUpperCase()}`, data, at + 4);
    }
    at = end;
    if (marker === 0xda) at = skipEntropyCoded(b, at);
  }
}

/**
 * The images after the first that an MPF segment's index lists (its data
 * after `MPF\0` is a TIFF structure; offsets count from it, at `tiffAt` in
 * the file), by start. A damaged index lists none: the bytes after the end
 * are then trailing data.
 */
function mpImages(data: Uint8Array, tiffAt: number): MpImage[] {
  const t = data.subarray(4);
  if (t.length < 8) return [];
  const little = t[0] === 0x49 && t[1] === 0x49;
  if (!little && !(t[0] === 0x4d && t[1] === 0x4d)) return [];
  const u16 = (i: number) => (little ? t[i]! | (t[i + 1]! << 8) : (t[i]! << 8) | t[i + 1]!);
  const u32 = (i: number) => (little ? u32le(t, i) : u32be(t, i));
  const ifd = u32(4);
  if (ifd + 2 > t.length) return [];
  const count = u16(ifd);
  for (let k = 0; k < count && ifd + 2 + 12 * k + 12 <= t.length; k++) {
    const entry = ifd + 2 + 12 * k;
    // MPEntry (0xB002): 16 bytes per image; attribute, size, offset, two dependent image numbers.
    if (u16(entry) !== 0xb002) continue;
    const bytes = u32(entry + 4);
    const from = u32(entry + 8);
    if (bytes % 16 !== 0 || from + bytes > t.length) return [];
    const images: MpImage[] = [];
    // The first entry is the image the index is in (offset 0).
    for (let e = from + 16; e < from + bytes; e += 16) images.push({ start: tiffAt + u32(e + 8), size: u32(e + 4) });
    return images.sort((x, y) => x.start - y.start);
  }
  return [];
}

/** The end of entropy-coded data: the next marker that is not a stuffed byte or a restart. */
function skipEntropyCoded(b: Uint8Array, from: number): number {
  const buf = Buffer.from(b.buffer, b.byteOffset, b.length);
  for (let at = buf.indexOf(0xff, from); at >= 0; at = buf.indexOf(0xff, at + 1)) {
    const next = buf[at + 1];
    if (next === undefined) return b.length;
    if (next === 0x00 || next === 0xff || (next >= 0xd0 && next <= 0xd7)) continue;
    return at;
  }
  return b.length;
}

/** The 11 bytes that name an application extension holding an XMP packet (XMP specification part 3, 1.1.2). */
const GIF_XMP_ID = "XMP DataXMP";
/**
 * What follows a GIF's XMP packet: 0x01, 0xFF down to 0x00, 0x00 (258
 * bytes). The packet is written raw after the identifier, not in
 * sub-blocks; a reader that walks sub-blocks takes its bytes as lengths and
 * lands, wherever it lands in this trailer, on its last byte: the
 * extension's terminator.
 */
const GIF_XMP_TRAILER = Buffer.from([0x01, ...Array.from({ length: 256 }, (_, i) => 0xff - i), 0x00]);

export function inspectGif(b: Uint8Array, ctx: InspectContext): void {
  if (b.length < 13) throw ctx.unscannable("it is shorter than its header");
  const buf = Buffer.from(b.buffer, b.byteOffset, b.length);
  // The last magic trailer found (-1: none after the packet searched from; -2: not searched yet). A packet searches
  // from its start only past it, and a packet never starts before the one read last ends: the file is searched once
  // however many packets it holds.
  let trailerAt = -2;
  let rawReadTo = 0;
  /**
   * Scans the XMP packet of the application extension whose raw bytes start
   * at `from` and whose sub-blocks end at `walkEnd`: exiftool and the XMP
   * toolkit read those bytes as they are (its sub-blocks split a key and took
   * its letters as lengths, so a key exiftool prints was published). They run
   * to the magic trailer (the first after `from` in the file), or, without
   * one, to the sub-blocks' end. A packet that starts inside one already read
   * is read to its own sub-blocks' end: the rest was read with the other.
   */
  const scanGifXmp = (from: number, walkEnd: number) => {
    let to = walkEnd - 1;
    if (from >= rawReadTo) {
      if (trailerAt !== -1 && trailerAt < from) {
        trailerAt = buf.indexOf(GIF_XMP_TRAILER, from);
      }
      if (trailerAt >= 0) to = trailerAt;
      rawReadTo = Math.max(to, walkEnd);
    }
    const xmp = b.subarray(from, Math.max(from, to));
    ctx.scan("its XMP application extension", xmp, from);
    scanXmpText(ctx, "its XMP application extension", xmp);
  };
  let at = 13;
  if (b[10]! & 0x80) at += 3 * (1 << ((b[10]! & 0x07) + 1));
  const subBlocks = (from: number): { data: Buffer; end: number } => {
    const parts: Uint8Array[] = [];
    let i = from;
    for (;;) {
      if (i >= b.length) throw ctx.unscannable("a block runs past the end of the file");
      const n = b[i]!;
      if (n === 0) return { data: Buffer.concat(parts), end: i + 1 };
      parts.push(b.subarray(i + 1, i + 1 + n));
      i += 1 + n;
    }
  };
  for (;;) {
    if (at >= b.length) throw ctx.unscannable("it ends before its trailer");
    const kind = b[at]!;
    if (kind === 0x3b) {
      ctx.trailing(b.subarray(at + 1), at + 1, "trailer", true);
      return;
    }
    if (kind === 0x21) {
      const label = b[at + 1]!;
      const { data, end } = subBlocks(at + 2);
      if (label !== 0xf9) ctx.scan(label === 0xfe ? "its comment" : "an extension block", data);
      if (label === 0xff && b[at + 2] === 11 && ascii(b, at + 3, 11) === GIF_XMP_ID) {
        scanGifXmp(at + 14, end);
        // Written in sub-blocks instead (no trailer), as some tools write it: a reader that joins them reads their XML.
        scanXmpText(ctx, "its XMP application extension's sub-blocks", data.subarray(11));
      }
      at = end;
    } else if (kind === 0x2c) {
      let i = at + 10;
      if (b[at + 9]! & 0x80) i += 3 * (1 << ((b[at + 9]! & 0x07) + 1));
      at = subBlocks(i + 1).end;
    } else {
      throw ctx.unscannable(`an unknown block (0x${kind.toString(16)}) at byte ${at}`);
    }
  }
}

const WEBP_IMAGE_CHUNKS = new Set(["VP8 ", "VP8L", "VP8X", "ALPH", "ANIM", "ANMF"]);

export function inspectWebp(b: Uint8Array, ctx: InspectContext): void {
  const end = 8 + u32le(b, 4);
  if (end > b.length) throw ctx.unscannable("its RIFF size runs past the end of the file");
  for (let at = 12; at + 8 <= end; ) {
    const type = ascii(b, at, 4);
    const size = u32le(b, at + 4);
    if (at + 8 + size > end) throw ctx.unscannable(`its ${type} chunk runs past its end`);
    const data = b.subarray(at + 8, at + 8 + size);
    if (!WEBP_IMAGE_CHUNKS.has(type)) ctx.scan(`its ${type.trim()} chunk`, type === "EXIF" ? withoutCharsetCodes(data) : data);
    if (type === "XMP ") scanXmpText(ctx, "its XMP chunk", data);
    at += 8 + size + (size & 1);
  }
  ctx.trailing(b.subarray(end + (end & 1 && b[end] === 0 ? 1 : 0)), end, "end (its RIFF size)", true);
}

/** A TIFF's tag that holds its XMP packet (XMP specification part 3, 1.1.4: IFD0's tag 700, BYTE or UNDEFINED; ASCII read too). */
const TIFF_XMP_TAG = 700;
/** IFD entries a TIFF may have read in all, looking for its XMP: a camera's TIFF has a few dozen an IFD, a few IFDs. */
export const MAX_TIFF_ENTRIES = 1_000_000;

/**
 * A TIFF (its bytes are scanned raw: no reader reads its pixels or other
 * tags; raw-utf16.ts reads its UTF-16 tags): its XMP packet (tag 700 in
 * any IFD of the chain from IFD0) also with its entities decoded, as
 * exiftool reads it. What a damaged file holds is read and the rest passed
 * over, since bytes past the end hide nothing: the walk ends at an IFD past
 * the end or one named twice (a loop), an IFD's entries are read up to the
 * end, a packet that runs past the end is read to it. Each packet is read
 * once; more than MAX_TIFF_ENTRIES entries, or packets that overlap to more
 * bytes than the file holds, are refused. BigTIFF (version 43) is not walked
 * (its bytes are scanned raw).
 */
export function inspectTiffXmp(src: ByteSource, ctx: InspectContext): void {
  const head = src.read(0, 8);
  const little = head[0] === 0x49 && head[1] === 0x49;
  if (head.length < 8 || (!little && !(head[0] === 0x4d && head[1] === 0x4d))) return;
  const u16 = (b: Uint8Array, i: number) => (little ? b[i]! | (b[i + 1]! << 8) : (b[i]! << 8) | b[i + 1]!);
  const u32 = (b: Uint8Array, i: number) => (little ? u32le(b, i) : u32be(b, i));
  if (u16(head, 2) !== 42) return;
  const seen = new Set<number>();
  let entries = 0;
  // Each packet is read once, and all of them together at most the file's length: IFDs that name the same
  // packet, or packets that overlap, would otherwise have it read again and again (time as the square of the file).
  const packets = new Set<string>();
  let packetBytes = 0;
  const scanPacket = (at: number, bytes: Uint8Array) => {
    const key = `${at}:${bytes.length}`;
    if (packets.has(key)) return;
    packets.add(key);
    packetBytes += bytes.length;
    if (packetBytes > src.length) throw ctx.unscannable("its IFDs name XMP packets (tag 700) that overlap, more bytes in all than the file holds");
    scanXmpText(ctx, "its XMP (tag 700)", bytes);
  };
  for (let ifd = u32(head, 4); ifd !== 0 && !seen.has(ifd) && ifd + 2 <= src.length; ) {
    seen.add(ifd);
    const count = Math.min(u16(src.read(ifd, 2), 0), Math.floor((src.length - ifd - 2) / 12));
    entries += count;
    if (entries > MAX_TIFF_ENTRIES) throw ctx.unscannable(`its IFDs hold more than ${MAX_TIFF_ENTRIES.toLocaleString("en")} entries, more than this check reads`);
    // A copy: a packet's read reuses the source's window.
    const table = Buffer.from(src.read(ifd + 2, 12 * count + 4));
    for (let k = 0; k < count; k++) {
      const e = 12 * k;
      const type = u16(table, e + 2);
      if (u16(table, e) !== TIFF_XMP_TAG || (type !== 1 && type !== 2 && type !== 7)) continue;
      const length = u32(table, e + 4);
      const at = u32(table, e + 8);
      if (length <= 4) scanXmpText(ctx, "its XMP (tag 700)", table.subarray(e + 8, e + 8 + length));
      else if (at < src.length) scanPacket(at, src.read(at, Math.min(length, src.length - at)));
    }
    // The next IFD's offset, when the table's end lies in the file.
    ifd = table.length >= 12 * count + 4 ? u32(table, 12 * count) : 0;
  }
}

export function inspectBmp(b: Uint8Array, ctx: InspectContext): void {
  // A file shorter than the header: its size field, read past the end, is NaN, which no comparison refuses (a 2-byte
  // `BM` was refused as 2 bytes of trailing data after its end).
  const end = b.length < 26 ? -1 : u32le(b, 2);
  if (end > b.length || end < 26) throw ctx.unscannable("its header's size does not fit the file");
  ctx.scan("its header", b.subarray(0, Math.min(end, 138)));
  ctx.trailing(b.subarray(end), end, "end (its header's size)", true);
}

/** The reader of the picture `d` is, by its first bytes, if any. */
function pictureReader(d: Uint8Array): Reader | undefined {
  if (d.length < 12) return undefined;
  if (d[0] === 0x89 && d[1] === 0x50 && d[2] === 0x4e && d[3] === 0x47) return inspectPng;
  if (d[0] === 0xff && d[1] === 0xd8 && d[2] === 0xff) return inspectJpeg;
  if (d[0] === 0x47 && d[1] === 0x49 && d[2] === 0x46 && d[3] === 0x38) return inspectGif;
  if (d[0] === 0x52 && d[1] === 0x49 && d[2] === 0x46 && d[3] === 0x46 && d[8] === 0x57 && d[9] === 0x45 && d[10] === 0x42 && d[11] === 0x50) return inspectWebp;
  if (d[0] === 0x42 && d[1] === 0x4d) return inspectBmp;
  return undefined;
}

/**
 * Reads `data`, a part of a container (a zip entry, a tar member), as the
 * picture it is: a picture's pixels hold no text, so its metadata and what
 * follows its end are read, as for a picture sent alone. False when it is no
 * picture or its reader cannot read it (a damaged picture is then scanned as
 * bytes by the caller).
 */
export function readPicture(ctx: InspectContext, part: string, data: Uint8Array): boolean {
  const reader = pictureReader(data);
  if (!reader) return false;
  try {
    ctx.readWithin(part, data, reader);
  } catch (err) {
    if (err instanceof Refusal && err.code === "unscannable_content") return false;
    throw err;
  }
  // Bytes after its end are not refused here, but a zip there is extracted by unzip all the same.
  ctx.inPart(part, () => readAppendedZip(bytesSource(data), ctx));
  return true;
}

/**
 * Reads `data`, a part of a container already scanned as bytes (a gzip
 * file's content, a PDF's attachment, a compound file's stream, an RTF
 * object's file), as the picture it is, as a zip's or a tar's entries are
 * (a PNG's compressed text was unseen there), or else as the document it is.
 */
export function readInside(ctx: InspectContext, part: string, data: Uint8Array): void {
  if (!readPicture(ctx, part, data)) ctx.readNested(part, data);
}
