// Audio and video: their tags are scanned (ID3v2 frames, UTF-16 ones
// decoded, compressed ones inflated; ID3v1, APE and what follows the audio
// frames; FLAC's metadata blocks; RIFF chunks but the samples; ISO media
// in iso-media.ts), their media data is skipped.
//
// They read the file a range at a time (a ByteSource), so that the media
// data, most of a video's bytes, is never read into memory: prepare does not
// keep these files while staging them (judge.ts), and a 50 MB video cost a
// 50 MB buffer, its page faults and a second read of the whole file.
import type { ByteSource } from "./byte-source.js";
import { ascii, holds, u32be, u32le } from "./bytes.js";
import type { InspectContext } from "./inspect.js";

const syncsafe = (b: Uint8Array, i: number) => (b[i]! << 21) | (b[i + 1]! << 14) | (b[i + 2]! << 7) | b[i + 3]!;

/** The tail of an MP3 scanned as it is: ID3v1, APE and Lyrics3 tags, and anything appended after the audio. */
const MP3_TAIL = 128 * 1024;

/** Reverses ID3's unsynchronisation (0xFF 0x00 -> 0xFF). */
function resync(b: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(b.length);
  let n = 0;
  for (let i = 0; i < b.length; i++) {
    out[n++] = b[i]!;
    if (b[i] === 0xff && b[i + 1] === 0x00) i++;
  }
  return out.subarray(0, n);
}

/**
 * The ID3v2 tag `b` opens with (in `container`, of `fileLength` bytes: an
 * MP3 or FLAC file, or a WAV's `id3 ` chunk); where what follows it starts.
 * The one reader of ID3 frames: each place a tag lies reads it here, so a
 * compressed frame is inflated wherever it is (a WAV's went out deflated).
 */
function inspectId3v2(b: Uint8Array, ctx: InspectContext, fileLength: number, container = "the file"): number {
  if (b.length < 10 || ascii(b, 0, 3) !== "ID3") return 0;
  const version = b[3]!;
  const flags = b[5]!;
  const size = syncsafe(b, 6);
  const end = 10 + size + (flags & 0x10 ? 10 : 0);
  if (end > b.length || end > fileLength) throw ctx.unscannable(`its ID3 tag runs past the end of ${container}`);
  let tag: Uint8Array = b.subarray(10, 10 + size);
  ctx.scan("its ID3 tag", tag);
  if (flags & 0x80 && version < 4) tag = resync(tag);
  let at = 0;
  if (flags & 0x40) at += version === 3 ? 4 + u32be(tag, 0) : syncsafe(tag, 0);
  const idLength = version === 2 ? 3 : 4;
  const headerLength = version === 2 ? 6 : 10;
  while (at + headerLength <= tag.length && tag[at] !== 0) {
    const id = ascii(tag, at, idLength);
    const length = version === 2 ? (tag[at + 3]! << 16) | (tag[at + 4]! << 8) | tag[at + 5]! : version === 4 ? syncsafe(tag, at + 4) : u32be(tag, at + 4);
    const frameFlags = version === 2 ? 0 : tag[at + 9]!;
    let data: Uint8Array = tag.subarray(at + headerLength, Math.min(tag.length, at + headerLength + length));
    const part = `its ID3 ${id} frame`;
    if (version === 4 && frameFlags & 0x02) data = resync(data);
    const compressed = version === 4 ? frameFlags & 0x08 : version === 3 ? frameFlags & 0x80 : 0;
    if (compressed) {
      // A data length indicator (4 bytes) precedes the zlib stream.
      data = ctx.inflate(part, data.subarray(4), "zlib");
      ctx.scan(part, data);
    }
    // Text encodings 1 and 2 are UTF-16 (with a BOM, and big-endian).
    const encoding = data[0];
    if ((id.startsWith("T") || id.startsWith("COM") || id.startsWith("ULT") || id.startsWith("USLT")) && (encoding === 1 || encoding === 2)) {
      const text = data.subarray(id.startsWith("T") ? 1 : 4);
      const bom = text[0] === 0xfe ? "be" : text[0] === 0xff ? "le" : encoding === 2 ? "be" : "le";
      ctx.scanUtf16(part, text, bom);
    }
    at += headerLength + length;
  }
  return end;
}

/** The ID3v2 tag the file may open with, read from `src`; where what follows it starts. */
function inspectLeadingId3v2(src: ByteSource, ctx: InspectContext): number {
  const head = src.read(0, 10);
  const tagEnd = head.length === 10 && ascii(head, 0, 3) === "ID3" ? 10 + syncsafe(head, 6) + (head[5]! & 0x10 ? 10 : 0) : 0;
  return inspectId3v2(src.read(0, tagEnd), ctx, src.length);
}

export function inspectMp3(src: ByteSource, ctx: InspectContext): void {
  const audioFrom = inspectLeadingId3v2(src, ctx);
  const tailFrom = Math.max(audioFrom, src.length - MP3_TAIL);
  ctx.scan("its last bytes (ID3v1, APE tags and anything after the audio)", src.read(tailFrom, src.length - tailFrom), tailFrom);
}

/** The FLAC metadata blocks that hold no text a person wrote (STREAMINFO, PADDING, SEEKTABLE): not scanned. */
const FLAC_PLAIN_BLOCKS = new Set([0, 1, 3]);
const FLAC_BLOCK_NAMES: Record<number, string> = { 2: "APPLICATION", 4: "VORBIS_COMMENT", 5: "CUESHEET", 6: "PICTURE" };

/**
 * FLAC: an ID3v2 tag some taggers put first, every metadata block that can
 * hold text (Vorbis comments, pictures, cue sheets, application data), and
 * the last bytes (an ID3v1 tag, anything appended after the audio), as an
 * MP3's are; the audio frames are skipped.
 */
export function inspectFlac(src: ByteSource, ctx: InspectContext): void {
  const length = src.length;
  let at = inspectLeadingId3v2(src, ctx);
  if (!holds(src.read(at, 4), 0, "fLaC")) throw ctx.unscannable(`it has no fLaC marker at byte ${at}`);
  at += 4;
  for (let last = false; !last; ) {
    if (at + 4 > length) throw ctx.unscannable("its metadata ends before its audio");
    const h = src.read(at, 4);
    last = (h[0]! & 0x80) !== 0;
    const type = h[0]! & 0x7f;
    const size = (h[1]! << 16) | (h[2]! << 8) | h[3]!;
    if (at + 4 + size > length) throw ctx.unscannable(`its metadata block at byte ${at} runs past the end of the file`);
    if (!FLAC_PLAIN_BLOCKS.has(type)) ctx.scan(`its ${FLAC_BLOCK_NAMES[type] ?? `type ${type}`} metadata block`, src.read(at + 4, size), at + 4);
    at += 4 + size;
  }
  const tailFrom = Math.max(at, length - MP3_TAIL);
  ctx.scan("its last bytes (ID3v1 and anything after the audio)", src.read(tailFrom, length - tailFrom), tailFrom);
}

/** The RIFF chunks that hold an ID3v2 tag (how Audacity, ffmpeg and foobar2000 tag a WAV): read by the ID3 reader too. */
const RIFF_ID3_CHUNKS = new Set(["id3 ", "ID3 "]);

/** RIFF (wav, avi): every chunk but the samples, and whatever follows the RIFF size; an ID3 chunk's frames as an MP3's. */
export function inspectRiff(src: ByteSource, ctx: InspectContext): void {
  const length = src.length;
  const end = Math.min(length, 8 + u32le(src.read(0, 8), 4));
  for (let at = 12; at + 8 <= end; ) {
    const h = src.read(at, 12);
    const type = ascii(h, 0, 4);
    const size = u32le(h, 4);
    const listType = type === "LIST" && h.length >= 12 ? ascii(h, 8, 4) : "";
    if (type !== "data" && type !== "idx1" && listType !== "movi") {
      const name = `${type}${listType ? ` ${listType}` : ""}`;
      // Only the samples may run past the end (a recorder that never wrote their size): any other chunk that does was
      // misplaced by a damaged size before it, and a key across that seam, read as two chunks, was published.
      if (at + 8 + size > end) throw ctx.unscannable(`its ${name} chunk at byte ${at} runs past ${end === length ? "the end of the file" : "its RIFF size"}`);
      const chunk = src.read(at, 8 + size);
      ctx.scan(`its ${name} chunk`, chunk, at);
      // Its tag from the bytes just read (nothing reads the source between): a chunk of a file read in ranges is read once.
      if (RIFF_ID3_CHUNKS.has(type)) ctx.inPart(`its ${name} chunk`, () => inspectId3v2(chunk.subarray(8), ctx, size, "the chunk"));
    }
    at += 8 + size + (size & 1);
  }
  if (end < length) ctx.scan("the bytes after its RIFF size", src.read(end, length - end), end);
}
