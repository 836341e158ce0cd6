// Matroska and WebM (mkv, webm): every element but the clusters is scanned
// (the EBML header; the segment's Info, Tracks, Tags, Attachments,
// Chapters, Cues and SeekHead; the text-bearing ones leaf by leaf), and
// whatever follows the last element; a
// cluster's blocks, the media data, are skipped, as an mp4's are. A cluster
// of unknown size, which a browser's MediaRecorder writes, is walked block
// by block to find where it ends.
//
// The file is read a range at a time (a ByteSource): a 50 MB screen
// recording costs its element headers, not a scan of its 50 MB.
import type { ByteSource } from "./byte-source.js";
import type { InspectContext } from "./inspect.js";

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
  let at = 0;
  while (at < length) {
    const e = elementAt(src, at);
    // Not a top-level element (bytes appended after the last one): scanned below as they are.
    if (e === undefined || !TOP_LEVEL.has(e.id)) break;
    if (e.id === SEGMENT) {
      at = inspectSegment(src, ctx, at, e);
      continue;
    }
    if (e.size === UNKNOWN || e.dataAt + e.size > length) throw ctx.unscannable(`its ${nameOf(e.id)} at byte ${at} runs past the end of the file`);
    ctx.scan(`its ${nameOf(e.id)}`, src.read(at, e.dataAt + e.size - at), at);
    at = e.dataAt + e.size;
  }
  if (at < length) ctx.scan("the bytes after its last element", src.read(at, length - at), at);
}

/** A segment's elements but its clusters; where it ends. */
function inspectSegment(src: ByteSource, ctx: InspectContext, from: number, segment: Element): number {
  const end = segment.size === UNKNOWN ? src.length : segment.dataAt + segment.size;
  if (end > src.length) throw ctx.unscannable(`its segment at byte ${from} runs past the end of the file`);
  let at = segment.dataAt;
  while (at < end) {
    const e = elementAt(src, at);
    if (e === undefined) throw ctx.unscannable(`its element at byte ${at} is damaged`);
    if (e.id === CLUSTER) {
      at = clusterEnd(src, ctx, at, e, end);
      continue;
    }
    if (e.size === UNKNOWN || e.dataAt + e.size > end) throw ctx.unscannable(`its ${nameOf(e.id)} at byte ${at} runs past the end of its segment`);
    if (!TEXT_MASTERS.has(e.id) || !scanLeaves(src, ctx, nameOf(e.id), e.dataAt, e.dataAt + e.size, 0)) ctx.scan(`its ${nameOf(e.id)}`, src.read(at, e.dataAt + e.size - at), at);
    at = e.dataAt + e.size;
  }
  return end;
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
