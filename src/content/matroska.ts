// Matroska and WebM (mkv, webm): every element but the clusters is scanned
// (the EBML header; the segment's Info, Tracks, Tags, Attachments,
// Chapters, Cues and SeekHead; the text-bearing ones leaf by leaf), and
// whatever follows the last element; a
// cluster's blocks, the media data, are skipped, as an mp4's are, but for
// those of a text track (S_TEXT/*, S_ASS, S_SSA, S_KATE, WebVTT, Blu-ray's
// S_HDMV/TEXTST: subtitles a player shows),
// whose text is read (text-tracks.ts bounds it). A cluster of unknown
// size, which a browser's MediaRecorder writes, is walked block by block
// to find where it ends.
//
// The file is read a range at a time (a ByteSource): a 50 MB screen
// recording costs its element headers, not a scan of its 50 MB.
import type { ByteSource } from "./byte-source.js";
import type { InspectContext } from "./inspect.js";
import { TextSamples } from "./text-tracks.js";

const SEGMENT = 0x18538067;
/** What a file holds at its top level: EBML headers, segments, Void and CRC-32 elements. */
const TOP_LEVEL = new Set([0x1a45dfa3, SEGMENT, 0xec, 0xbf]);
const CLUSTER = 0x1f43b675;
/** What a cluster holds (Timecode, SimpleBlock, BlockGroup, Position, PrevSize, SilentTracks, EncryptedBlock, Void, CRC-32): a cluster of unknown size ends at the first element that is none of these. */
const CLUSTER_CHILDREN = new Set([0xe7, 0xa3, 0xa0, 0xa7, 0xab, 0x5854, 0xaf, 0xec, 0xbf]);
const NAMES: Record<number, string> = {
  0x1a45dfa3: "EBML header",
  0x114d9b74: "SeekHead",
  0x1549a966: "Info",
  0x1654ae6b: "Tracks",
  0x1c53bb6b: "Cues",
  0x1254c367: "Tags",
  0x1941a469: "Attachments",
  0x1043a770: "Chapters",
};
/**
 * Master elements that hold text a person wrote in their leaves (a title,
 * a track's name, a tag's string, a chapter's title, an attachment's name
 * and data): their leaves are scanned one by one, each alone, since a
 * string follows its size directly, and a size's last byte may be a letter
 * that would read as the string's first (a token then starts nowhere).
 */
const TEXT_MASTERS = new Set([
  0x1549a966, // Info
  0x1654ae6b, // Tracks
  0xae, // TrackEntry
  0xe0, // Video
  0xe1, // Audio
  0x1254c367, // Tags
  0x7373, // Tag
  0x63c0, // Targets
  0x67c8, // SimpleTag
  0x1043a770, // Chapters
  0x45b9, // EditionEntry
  0xb6, // ChapterAtom
  0x80, // ChapterDisplay
  0x8f, // ChapterTrack
  0x1941a469, // Attachments
  0x61a7, // AttachedFile
]);
/** Masters nested deeper than this are scanned as they are. */
const MAX_DEPTH = 16;

const TRACKS = 0x1654ae6b;
const TRACK_ENTRY = 0xae;
const TRACK_NUMBER = 0xd7;
const CODEC_ID = 0x86;
const CONTENT_ENCODINGS = 0x6d80;
const CONTENT_ENCODING = 0x6240;
const CONTENT_COMPRESSION = 0x5034;
const CONTENT_COMP_ALGO = 0x4254;
const CONTENT_COMP_SETTINGS = 0x4255;
const CONTENT_ENCRYPTION = 0x5035;
const CONTENT_ENCODING_SCOPE = 0x5032;
const CONTENT_ENCODING_TYPE = 0x5033;
const SIMPLE_BLOCK = 0xa3;
const BLOCK_GROUP = 0xa0;
const BLOCK = 0xa1;
/**
 * Blu-ray text subtitles (HDMV TextST): each frame one dialog presentation
 * segment with its descriptor, as mkvmerge writes it (textstText reads it).
 */
const TEXTST = "S_HDMV/TEXTST";

/**
 * The codecs whose frames are text (SRT, SSA/ASS, WebVTT, USF in Matroska;
 * WebVTT in WebM), by the start of their CodecID (which may be padded with
 * NULs): S_ASS and S_SSA, Matroska's old IDs for ASS and SSA, which ffmpeg
 * still reads as ASS and shows (its events are text lines); S_KATE, Kate's
 * packets, whose text is UTF-8 among their fields (read as they are);
 * S_HDMV/TEXTST, Blu-ray's text subtitles (textstText).
 */
const TEXT_CODECS = ["S_TEXT/", "D_WEBVTT/", "S_ASS", "S_SSA", "S_KATE", TEXTST];

/** A size whose bits are all set: unknown (the element runs to its parent's end, or a cluster to the next element that is not its own). */
const UNKNOWN = -1;

interface Element {
  id: number;
  /** Its data's length, or UNKNOWN. */
  size: number;
  /** Where its data starts. */
  dataAt: number;
}

/** How many bytes a variable-length integer whose first byte is `b` takes (0: none, the byte is 0). */
const vintLength = (b: number) => (b === 0 ? 0 : Math.clz32(b) - 23);

/** The element that starts at `at`, or undefined where none can (too few bytes left, an ID or a size that is no variable-length integer). */
function elementAt(src: ByteSource, at: number): Element | undefined {
  const h = src.read(at, 12);
  if (h.length < 2) return undefined;
  const idLength = vintLength(h[0]!);
  if (idLength === 0 || idLength > 4 || idLength >= h.length) return undefined;
  let id = 0;
  for (let k = 0; k < idLength; k++) id = id * 256 + h[k]!;
  const sizeLength = vintLength(h[idLength]!);
  if (sizeLength === 0 || idLength + sizeLength > h.length) return undefined;
  const first = h[idLength]! & (0xff >> sizeLength);
  let size = first;
  let unknown = first === 0xff >> sizeLength;
  for (let k = 1; k < sizeLength; k++) {
    size = size * 256 + h[idLength + k]!;
    if (h[idLength + k] !== 0xff) unknown = false;
  }
  return { id, size: unknown ? UNKNOWN : size, dataAt: at + idLength + sizeLength };
}

const nameOf = (id: number) => NAMES[id] ?? `element 0x${id.toString(16).toUpperCase()}`;

export function inspectMatroska(src: ByteSource, ctx: InspectContext): void {
  const length = src.length;
  const text = new TextSamples(ctx);
  let at = 0;
  while (at < length) {
    const e = elementAt(src, at);
    // Not a top-level element (bytes appended after the last one): scanned below as they are.
    if (e === undefined || !TOP_LEVEL.has(e.id)) break;
    if (e.id === SEGMENT) {
      at = inspectSegment(src, ctx, text, at, e);
      continue;
    }
    if (e.size === UNKNOWN || e.dataAt + e.size > length) throw ctx.unscannable(`its ${nameOf(e.id)} at byte ${at} runs past the end of the file`);
    ctx.scan(`its ${nameOf(e.id)}`, src.read(at, e.dataAt + e.size - at), at);
    at = e.dataAt + e.size;
  }
  if (at < length) ctx.scan("the bytes after its last element", src.read(at, length - at), at);
}

/** A segment's elements but its clusters (their text tracks' blocks apart); where it ends. */
function inspectSegment(src: ByteSource, ctx: InspectContext, text: TextSamples, from: number, segment: Element): number {
  const end = segment.size === UNKNOWN ? src.length : segment.dataAt + segment.size;
  if (end > src.length) throw ctx.unscannable(`its segment at byte ${from} runs past the end of the file`);
  const tracks = new Map<number, TextTrack>();
  // Where each cluster's children lie: walked for text tracks' blocks once the Tracks (wherever they lie) are read.
  const clusters: number[] = [];
  let at = segment.dataAt;
  while (at < end) {
    const e = elementAt(src, at);
    if (e === undefined) throw ctx.unscannable(`its element at byte ${at} is damaged`);
    if (e.id === CLUSTER) {
      const next = clusterEnd(src, ctx, at, e, end);
      clusters.push(e.dataAt, next);
      at = next;
      continue;
    }
    if (e.size === UNKNOWN || e.dataAt + e.size > end) throw ctx.unscannable(`its ${nameOf(e.id)} at byte ${at} runs past the end of its segment`);
    if (!TEXT_MASTERS.has(e.id) || !scanLeaves(src, ctx, nameOf(e.id), e.dataAt, e.dataAt + e.size, 0)) ctx.scan(`its ${nameOf(e.id)}`, src.read(at, e.dataAt + e.size - at), at);
    if (e.id === TRACKS) textTracks(src, ctx, e, tracks);
    at = e.dataAt + e.size;
  }
  if (tracks.size > 0) readTextBlocks(src, ctx, text, tracks, clusters);
  return end;
}

/** A text track: its name in messages, how its frames are encoded (ContentEncodings: zlib, or bytes stripped from each frame's head). */
interface TextTrack {
  name: string;
  zlib: boolean;
  strippedHead: Uint8Array | undefined;
  /** Its frames are HDMV TextST dialog presentation segments (textstText). */
  textst: boolean;
}

/** A TextST segment type: the dialog presentation segment, the one a frame holds (the style segment is the CodecPrivate). */
const DIALOG_PRESENTATION = 0x82;
/** What opens each entry of a region's data: the escape, then its type and its length. */
const TEXTST_ESCAPE = 0x1b;
const TEXTST_TEXT = 0x01;
const TEXTST_LINE_BREAK = 0x0a;

/**
 * The text of a TextST frame (a dialog presentation segment, as libbluray's
 * textst_decode reads it): its descriptor (type 0x82, a 16-bit size), the
 * start and end times (5 bytes each), a palette update flag and, when set,
 * a palette (a 16-bit length, then that many bytes), a region count, then
 * each region's flags, style and 16-bit data length, its data entries:
 * 0x1B, a type, an 8-bit length, the value. A text entry's value (UTF-8, or
 * the style's character code) is the text a player shows; a line break
 * entry ends a line; style changes between two text entries are not shown,
 * so the pieces of a region are joined, each region on a line of its own.
 * Undefined when a length runs past what holds it (the caller refuses).
 */
function textstText(frame: Uint8Array): Buffer | undefined {
  if (frame.length < 3 || frame[0] !== DIALOG_PRESENTATION) return undefined;
  const end = 3 + ((frame[1]! << 8) | frame[2]!);
  if (end > frame.length || end < 14) return undefined;
  let at = 13;
  if (frame[at++]! & 0x80) {
    if (at + 2 > end) return undefined;
    at += 2 + ((frame[at]! << 8) | frame[at + 1]!);
  }
  if (at + 1 > end) return undefined;
  const regions = frame[at++]!;
  const out: number[] = [];
  for (let r = 0; r < regions; r++) {
    if (at + 4 > end) return undefined;
    const dataEnd = at + 4 + ((frame[at + 2]! << 8) | frame[at + 3]!);
    if (dataEnd > end) return undefined;
    if (r > 0) out.push(0x0a);
    for (at += 4; at < dataEnd; ) {
      // A byte that opens no entry is passed over, as libbluray passes it.
      if (frame[at] !== TEXTST_ESCAPE) {
        at++;
        continue;
      }
      if (at + 3 > dataEnd) return undefined;
      const type = frame[at + 1]!;
      const valueEnd = at + 3 + frame[at + 2]!;
      if (valueEnd > dataEnd) return undefined;
      if (type === TEXTST_TEXT) for (let k = at + 3; k < valueEnd; k++) out.push(frame[k]!);
      else if (type === TEXTST_LINE_BREAK) out.push(0x0a);
      at = valueEnd;
    }
  }
  return Buffer.from(out);
}

/** The elements that tile [from, end), or undefined when they do not (one of unknown size, or past `end`). */
function childrenIn(src: ByteSource, from: number, end: number): Element[] | undefined {
  const out: Element[] = [];
  for (let at = from; at < end; ) {
    const e = elementAt(src, at);
    if (e === undefined || e.size === UNKNOWN || e.dataAt + e.size > end) return undefined;
    out.push(e);
    at = e.dataAt + e.size;
  }
  return out;
}

/** An unsigned integer element's value. */
function uintOf(src: ByteSource, e: Element): number {
  const b = src.read(e.dataAt, Math.min(e.size, 8));
  let n = 0;
  for (const byte of b) n = n * 256 + byte;
  return n;
}

/** Adds the text tracks of a Tracks element to `tracks`, by track number. */
function textTracks(src: ByteSource, ctx: InspectContext, tracksElement: Element, tracks: Map<number, TextTrack>): void {
  const entries = childrenIn(src, tracksElement.dataAt, tracksElement.dataAt + tracksElement.size);
  if (entries === undefined) throw ctx.unscannable(`its Tracks at byte ${tracksElement.dataAt} are damaged`);
  for (const entry of entries) {
    if (entry.id !== TRACK_ENTRY) continue;
    const fields = childrenIn(src, entry.dataAt, entry.dataAt + entry.size);
    if (fields === undefined) throw ctx.unscannable(`its track entry at byte ${entry.dataAt} is damaged`);
    const codec = fields.find((f) => f.id === CODEC_ID);
    const codecId = codec ? Buffer.from(src.read(codec.dataAt, Math.min(codec.size, 64))).toString("latin1") : "";
    if (!TEXT_CODECS.some((c) => codecId.startsWith(c))) continue;
    const numberElement = fields.find((f) => f.id === TRACK_NUMBER);
    if (numberElement === undefined) continue;
    const number = uintOf(src, numberElement);
    const track: TextTrack = { name: `text track ${number}`, zlib: false, strippedHead: undefined, textst: codecId.startsWith(TEXTST) };
    const encodings = fields.find((f) => f.id === CONTENT_ENCODINGS);
    if (encodings) readEncoding(src, ctx, encodings, track);
    tracks.set(number, track);
  }
}

/**
 * How a text track's frames are encoded (ContentEncodings): one
 * compression, zlib or header stripping (its bytes put back before each
 * frame), is read; encryption, another compression (bzlib, lzo) or more
 * than one encoding is refused.
 */
function readEncoding(src: ByteSource, ctx: InspectContext, encodings: Element, track: TextTrack): void {
  const refuse = (why: string) => ctx.unscannable(`its ${track.name}'s frames are ${why}, which this check does not read`, "export it again without compressing the subtitles");
  const list = childrenIn(src, encodings.dataAt, encodings.dataAt + encodings.size)?.filter((e) => e.id === CONTENT_ENCODING);
  if (list === undefined || list.length > 1) throw refuse("encoded more than once or damaged");
  if (list.length === 0) return;
  const parts = childrenIn(src, list[0]!.dataAt, list[0]!.dataAt + list[0]!.size);
  const type = parts?.find((p) => p.id === CONTENT_ENCODING_TYPE);
  if (parts === undefined || parts.some((p) => p.id === CONTENT_ENCRYPTION) || (type && uintOf(src, type) !== 0)) throw refuse("encrypted or damaged");
  // Its scope (1: the frames, the default; 2: the codec's private data only, which is scanned with the Tracks).
  const scope = parts.find((p) => p.id === CONTENT_ENCODING_SCOPE);
  if (scope && (uintOf(src, scope) & 1) === 0) return;
  const compression = parts.find((p) => p.id === CONTENT_COMPRESSION);
  if (compression === undefined) throw refuse("encoded in a way not named");
  const settings = childrenIn(src, compression.dataAt, compression.dataAt + compression.size) ?? [];
  const algo = settings.find((p) => p.id === CONTENT_COMP_ALGO);
  const method = algo ? uintOf(src, algo) : 0;
  if (method === 0) track.zlib = true;
  else if (method === 3) {
    const head = settings.find((p) => p.id === CONTENT_COMP_SETTINGS);
    track.strippedHead = head ? Buffer.from(src.read(head.dataAt, Math.min(head.size, 4096))) : Buffer.alloc(0);
  } else throw refuse(`compressed with method ${method}`);
}

/**
 * Reads the blocks of the text tracks in the clusters ([dataAt, end)
 * pairs): each frame's text, bounded by `text`, then each track's text
 * scanned. The other tracks' blocks are passed over by their headers.
 */
function readTextBlocks(src: ByteSource, ctx: InspectContext, text: TextSamples, tracks: Map<number, TextTrack>, clusters: number[]): void {
  const pieces = new Map<TextTrack, Uint8Array[]>([...tracks.values()].map((t) => [t, []]));
  const readBlock = (block: Element) => {
    const head = src.read(block.dataAt, 8);
    const numberLength = vintLength(head[0] ?? 0);
    if (numberLength === 0 || numberLength > 8 || block.size < numberLength + 3) return;
    let number = head[0]! & (0xff >> numberLength);
    for (let k = 1; k < numberLength; k++) number = number * 256 + head[k]!;
    const track = tracks.get(number);
    if (track === undefined) return;
    text.willRead(track.name, 1);
    text.willReadBytes(track.name, block.size);
    // Its timecode (2 bytes) and flags follow the track number; then its frame, or its laced frames (flags' bits 1-2) with their lace sizes.
    const lacing = (head[numberLength + 2]! >> 1) & 3;
    const data = Buffer.from(src.read(block.dataAt + numberLength + 3, block.size - numberLength - 3));
    const frames = lacing === 0 ? [data] : lacedFrames(data, lacing);
    if (frames === undefined) throw ctx.unscannable(`its ${track.name}'s block at byte ${block.dataAt} has lace sizes that do not fit it`);
    text.willRead(track.name, frames.length - 1);
    // Each frame is encoded alone (a laced block's too).
    for (let frame of frames) {
      if (track.zlib) frame = ctx.inflate(`its ${track.name}'s block at byte ${block.dataAt}`, frame, "zlib");
      if (track.strippedHead) frame = Buffer.concat([track.strippedHead, frame]);
      pieces.get(track)!.push(frame);
      if (track.textst) {
        const shown = textstText(frame);
        if (shown === undefined) throw ctx.unscannable(`its ${track.name}'s block at byte ${block.dataAt} is no TextST dialog presentation segment, or one whose lengths run past its end`);
        pieces.get(track)!.push(shown);
      }
    }
  };
  for (let k = 0; k < clusters.length; k += 2) {
    const children = childrenIn(src, clusters[k]!, clusters[k + 1]!);
    if (children === undefined) throw ctx.unscannable(`its cluster at byte ${clusters[k]} is damaged`);
    for (const child of children) {
      if (child.id === SIMPLE_BLOCK) readBlock(child);
      else if (child.id === BLOCK_GROUP) {
        const group = childrenIn(src, child.dataAt, child.dataAt + child.size);
        if (group === undefined) throw ctx.unscannable(`its block group at byte ${child.dataAt} is damaged`);
        for (const g of group) if (g.id === BLOCK) readBlock(g);
      }
    }
  }
  for (const [track, texts] of pieces) text.scanTrack(track.name, texts);
}

/**
 * The frames of a laced block (`data`: what follows its flags; `lacing`:
 * 1 Xiph, 2 fixed-size, 3 EBML): its frame count less one, the sizes of
 * all frames but the last, then the frames, the last taking the rest; a
 * player splits them, so a lace size (which may be a letter, 0x41 "A") is
 * never glued to the frame after it. Undefined when the sizes do not fit
 * the data. Each byte is looked at once: at most 256 frames, and a Xiph
 * size's run of 255s moves through the data.
 */
function lacedFrames(data: Uint8Array, lacing: number): Uint8Array[] | undefined {
  if (data.length === 0) return undefined;
  const count = data[0]! + 1;
  const sizes: number[] = [];
  let at = 1;
  if (lacing === 2) {
    if ((data.length - 1) % count !== 0) return undefined;
    for (let k = 1; k < count; k++) sizes.push((data.length - 1) / count);
  } else if (lacing === 1) {
    for (let k = 1; k < count; k++) {
      let size = 0;
      for (let byte = 255; byte === 255; size += byte) {
        if (at >= data.length) return undefined;
        byte = data[at++]!;
      }
      sizes.push(size);
    }
  } else {
    // EBML: the first size a variable-length integer, each next one a signed difference from the one before (biased by half its range).
    let size = 0;
    for (let k = 1; k < count; k++) {
      const length = at < data.length ? vintLength(data[at]!) : 0;
      if (length === 0 || at + length > data.length) return undefined;
      let value = data[at]! & (0xff >> length);
      for (let j = 1; j < length; j++) value = value * 256 + data[at + j]!;
      at += length;
      size = k === 1 ? value : size + value - (2 ** (7 * length - 1) - 1);
      if (size < 0) return undefined;
      sizes.push(size);
    }
  }
  const frames: Uint8Array[] = [];
  for (const size of sizes) {
    if (at + size > data.length) return undefined;
    frames.push(data.subarray(at, at + size));
    at += size;
  }
  frames.push(data.subarray(at));
  return frames;
}

/**
 * Scans each leaf of the elements in [from, end) alone, descending into the
 * masters that hold text; false, having scanned nothing, when they do not
 * tile the range (a damaged master is then scanned as it is).
 */
function scanLeaves(src: ByteSource, ctx: InspectContext, part: string, from: number, end: number, depth: number): boolean {
  const leaves: Element[] = [];
  const masters: Element[] = [];
  for (let at = from; at < end; ) {
    const e = elementAt(src, at);
    if (e === undefined || e.size === UNKNOWN || e.dataAt + e.size > end) return false;
    (TEXT_MASTERS.has(e.id) && depth < MAX_DEPTH ? masters : leaves).push(e);
    at = e.dataAt + e.size;
  }
  for (const m of masters) if (!scanLeaves(src, ctx, part, m.dataAt, m.dataAt + m.size, depth + 1)) ctx.scan(`its ${part}`, src.read(m.dataAt, m.size), m.dataAt);
  for (const e of leaves) ctx.scan(`its ${part}`, src.read(e.dataAt, e.size), e.dataAt);
  return true;
}

/** Where a cluster ends: by its size, or, when that is unknown, at the first element after it that is not a cluster's. */
function clusterEnd(src: ByteSource, ctx: InspectContext, from: number, cluster: Element, end: number): number {
  if (cluster.size !== UNKNOWN) {
    if (cluster.dataAt + cluster.size > end) throw ctx.unscannable(`its cluster at byte ${from} runs past the end of its segment`);
    return cluster.dataAt + cluster.size;
  }
  let at = cluster.dataAt;
  while (at < end) {
    const e = elementAt(src, at);
    if (e === undefined) throw ctx.unscannable(`its element at byte ${at} is damaged`);
    if (!CLUSTER_CHILDREN.has(e.id)) return at;
    if (e.size === UNKNOWN || e.dataAt + e.size > end) throw ctx.unscannable(`its block at byte ${at} runs past the end of its segment`);
    at = e.dataAt + e.size;
  }
  return at;
}
