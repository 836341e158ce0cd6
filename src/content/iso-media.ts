// ISO media (mp4, mov, m4a): every top-level box but the media data (mdat)
// is scanned as it is, and whatever follows the last box; the movie header
// (moov) is also read as a movie: a QuickTime compressed movie header
// (cmov) inflated and read as the moov it holds, and the samples of each
// text track (subtitles: mov_text/tx3g, WebVTT, QuickTime text, CEA-608
// captions; told by
// its handler or by its sample description's format) found
// through its sample table, and in a fragmented movie (mvex: what ffmpeg's
// -movflags frag_keyframe+empty_moov, DASH and HLS packagers write) through
// each movie fragment's track runs (moof > traf > tfhd, trun), and their
// text scanned (text-tracks.ts bounds them). Audio and video samples are
// never read.
//
// The file is read a range at a time (a ByteSource): a 50 MB video costs
// its boxes' headers and its moov, never a read of its media data.
import type { ByteSource } from "./byte-source.js";
import { ascii, u32be } from "./bytes.js";
import type { InspectContext } from "./inspect.js";
import { TextSamples } from "./text-tracks.js";
import { scanXmpText } from "./xml-text.js";

/** A box inside a box held in memory: its type, where its data starts and where it ends. */
interface Box {
  type: string;
  dataAt: number;
  end: number;
}

/**
 * The size and header length of the box whose header is at b[at] (8 bytes
 * of it at least), `room` bytes from there to where it must end: a 32-bit
 * size, a 64-bit one after it (size 1), or to the end (size 0); undefined
 * when a 64-bit size does not fit in `room`. The one reading of a box's
 * header, in memory and in the file.
 */
function boxSize(b: Uint8Array, at: number, room: number): { size: number; header: number } | undefined {
  const size = u32be(b, at);
  if (size === 1) return room < 16 ? undefined : { size: u32be(b, at + 8) * 2 ** 32 + u32be(b, at + 12), header: 16 };
  return { size: size === 0 ? room : size, header: 8 };
}

/** The boxes that tile b[from, to) (bytes too few for a header at the end are left); undefined when one runs past `to`. */
function boxesIn(b: Uint8Array, from: number, to: number): Box[] | undefined {
  const boxes: Box[] = [];
  for (let at = from; at + 8 <= to; ) {
    const box = boxSize(b, at, to - at);
    if (box === undefined || box.size < box.header || at + box.size > to) return undefined;
    boxes.push({ type: ascii(b, at + 4, 4), dataAt: at + box.header, end: at + box.size });
    at += box.size;
  }
  return boxes;
}

/** A text track's samples' text so far: scanned as one text once the whole file is read (its fragments follow its moov). */
interface TextTrack {
  name: string;
  /** Its sample descriptions' formats, in order (a sample names one by its index from 1). */
  formats: string[];
  pieces: Uint8Array[];
  /** CEA-608 captions' text, per field (cdat, cdt2), joined across samples: a caption is sent a few characters to a sample. */
  captions: [Uint8Array[], Uint8Array[]];
  /** Its track ID (tkhd), by which a fragment names it; undefined when its tkhd cannot be read. */
  id: number | undefined;
}

/** A fragmented track's defaults (mvex > trex): the sample description and the size of a fragment's samples that name none. */
interface TrackDefaults {
  description: number;
  size: number;
}

/** What a file's movie header says of its tracks, for its samples' text and its fragments'. */
class Movie {
  readonly text: TextSamples;
  /** Every text track, in the order they were found. */
  readonly tracks: TextTrack[] = [];
  /** The text tracks by their track ID (tkhd), which a fragment's tfhd names. */
  readonly byId = new Map<number, TextTrack>();
  /** Every track's fragment defaults by track ID: a video track's fragment sizes place the text track's fragment after it. */
  readonly defaults = new Map<number, TrackDefaults>();
  constructor(ctx: InspectContext) {
    this.text = new TextSamples(ctx);
  }
}

/** The text of one sample of `track` in its format. */
function addSample(track: TextTrack, sample: Uint8Array, format: string | undefined): void {
  if (format === "c608") captionText(sample, track.captions);
  else sampleText(sample, format, track.pieces);
}

/** ISO media (mp4, mov, m4a): every top-level box but the media data, and whatever follows the last box; the moov also read as a movie (readMovie), each movie fragment (moof) as one (readFragment). */
export function inspectIsoMedia(src: ByteSource, ctx: InspectContext): void {
  const length = src.length;
  const movie = new Movie(ctx);
  // Where each movie fragment lies, read once every moov is (a text track's fragments are known by its tkhd and trex).
  const fragments: { at: number; header: number; size: number }[] = [];
  let at = 0;
  while (at + 8 <= length) {
    const h = src.read(at, 16);
    const type = ascii(h, 4, 4);
    const box = boxSize(h, 0, length - at);
    if (box === undefined) break;
    const { size, header } = box;
    if (size < header || at + size > length) throw ctx.unscannable(`its ${type} box runs past the end of the file`);
    if (type !== "mdat") {
      const box = src.read(at, size);
      ctx.scan(`its ${type} box`, box, at);
      readXmp(ctx, box, { type, dataAt: header, end: size }, 0);
      if (type === "moov") readMovie(src, ctx, movie, box, header, false);
      if (type === "moof") fragments.push({ at, header, size });
    }
    at += size;
  }
  if (at < length) ctx.scan("the bytes after its last box", src.read(at, length - at), at);
  if (fragments.length > 0) {
    // A text track no fragment can name could have its samples there unread.
    const unnamed = movie.tracks.find((t) => t.id === undefined);
    if (unnamed) throw ctx.unscannable(`its ${unnamed.name} has no track header (tkhd) giving the track ID its movie fragments name it by`);
    if (movie.byId.size > 0) for (const f of fragments) readFragment(src, ctx, movie, src.read(f.at, f.size), f.at, f.header);
  }
  for (const track of movie.tracks) {
    for (const field of track.captions) if (field.length > 0) track.pieces.push(Buffer.concat(field));
    movie.text.scanTrack(track.name, track.pieces);
  }
}

/**
 * Reads a moov box (`moov`, its data from `dataAt`) as a movie: a
 * compressed movie header inside it (QuickTime's "compress movie header":
 * cmov, holding dcom, the compression, and cmvd, the size and the
 * compressed moov) is inflated and read as the moov it holds; each text
 * track's samples are read from the file (`src`). `inflated`: this moov is
 * one (a cmov inside it is refused).
 */
function readMovie(src: ByteSource, ctx: InspectContext, movie: Movie, moov: Uint8Array, dataAt: number, inflated: boolean): void {
  const children = boxesIn(moov, dataAt, moov.length);
  if (children === undefined) throw ctx.unscannable("a box inside its moov box runs past the moov's end");
  // A fragmented movie (mvex) keeps most of its samples' tables in the movie fragments (moof): each track's defaults for them here.
  const mvex = children.find((c) => c.type === "mvex");
  for (const trex of (mvex && boxesIn(moov, mvex.dataAt, mvex.end)) ?? []) {
    if (trex.type !== "trex" || trex.end - trex.dataAt < 20) continue;
    movie.defaults.set(u32be(moov, trex.dataAt + 4), { description: u32be(moov, trex.dataAt + 8), size: u32be(moov, trex.dataAt + 16) });
  }
  let track = 0;
  for (const child of children) {
    if (child.type === "cmov") readCompressedMovie(src, ctx, movie, moov, child, inflated);
    if (child.type === "trak") readTrack(src, ctx, movie, moov, child, ++track);
  }
}

/** The handler types of tracks whose samples are text: QuickTime subtitles (sbtl), QuickTime text (text), ISO subtitles (subt: WebVTT, TTML). */
const TEXT_HANDLERS = new Set(["sbtl", "text", "subt"]);
/**
 * The sample description formats whose samples are text, whatever the
 * track's handler: ffmpeg (mov.c) takes a track whose description is one
 * of these as subtitles and shows it, with a handler such as subp, clcp or
 * meta as well as sbtl (mov_text/tx3g, WebVTT, QuickTime text, TTML,
 * CEA-608 captions, Apple's sbtt).
 */
const TEXT_FORMATS = new Set(["tx3g", "wvtt", "text", "stpp", "c608", "sbtt"]);

/** The child of `parent` (in `b`) of type `type`, if any; a parent whose boxes do not tile it is refused (`what` names it). */
function childOf(ctx: InspectContext, b: Uint8Array, parent: Box, type: string, what: string): Box | undefined {
  const children = boxesIn(b, parent.dataAt, parent.end);
  if (children === undefined) throw ctx.unscannable(`a box inside its ${what} runs past its end`);
  return children.find((c) => c.type === type);
}

/** The child of `parent` (in `b`) of type `type`, if any, where its boxes tile it (a track that is not text is not refused for a damaged box). */
function looseChildOf(b: Uint8Array, parent: Box | undefined, type: string): Box | undefined {
  return parent && boxesIn(b, parent.dataAt, parent.end)?.find((c) => c.type === type);
}

/** The first text format (TEXT_FORMATS) among the sample descriptions of the track whose mdia box is `mdia`, if any. */
function textFormatOf(b: Uint8Array, mdia: Box): string | undefined {
  const stsd = looseChildOf(b, looseChildOf(b, looseChildOf(b, mdia, "minf"), "stbl"), "stsd");
  return sampleFormats(b, stsd).find((f) => TEXT_FORMATS.has(f));
}

/**
 * A track of the moov `b`: when its handler (trak > mdia > hdlr) is a text
 * one, or one of its sample descriptions is a text format (whatever the
 * handler), the text of its samples, found through its sample table (stbl:
 * stsd, stsz or stz2, stsc, stco or co64), kept in `movie` with its track
 * ID (its fragments' samples are read after: readFragment). Other tracks'
 * samples (audio, video) are not read.
 */
function readTrack(src: ByteSource, ctx: InspectContext, movie: Movie, b: Uint8Array, trak: Box, index: number): void {
  const mdia = childOf(ctx, b, trak, "mdia", `track ${index}`);
  if (mdia === undefined) return;
  const hdlr = childOf(ctx, b, mdia, "hdlr", `track ${index}'s mdia box`);
  const handler = hdlr !== undefined && hdlr.end - hdlr.dataAt >= 12 ? ascii(b, hdlr.dataAt + 8, 4) : "";
  // A handler that is no text one is named by the text format, not echoed (its bytes are the file's).
  const kind = TEXT_HANDLERS.has(handler) ? handler : textFormatOf(b, mdia);
  if (kind === undefined) return;
  const name = `text track ${index} (${kind})`;
  const minf = childOf(ctx, b, mdia, "minf", `${name}'s mdia box`);
  const stbl = minf && childOf(ctx, b, minf, "stbl", `${name}'s minf box`);
  if (stbl === undefined) throw ctx.unscannable(`its ${name} has no sample table`);
  const tables = boxesIn(b, stbl.dataAt, stbl.end);
  if (tables === undefined) throw ctx.unscannable(`a box inside its ${name}'s sample table runs past its end`);
  const table = (type: string) => tables.find((t) => t.type === type);
  const sizes = sampleSizes(ctx, b, table("stsz") ?? table("stz2"), name);
  const chunks = chunkOffsets(ctx, b, table("stco") ?? table("co64"), name);
  const stsc = table("stsc");
  const formats = sampleFormats(b, table("stsd"));
  const tkhd = looseChildOf(b, trak, "tkhd");
  // Its track ID: after the version and flags and two times, 32-bit (version 0) or 64-bit (version 1).
  const idAt = tkhd && tkhd.dataAt + (b[tkhd.dataAt] === 1 ? 20 : 12);
  const id = idAt !== undefined && idAt + 4 <= tkhd!.end ? u32be(b, idAt) : undefined;
  const track: TextTrack = { name, formats, pieces: [], captions: [[], []], id };
  movie.tracks.push(track);
  if (id !== undefined) movie.byId.set(id, track);
  const text = movie.text;
  if (sizes.count === 0) return;
  text.willRead(name, sizes.count);
  if (stsc === undefined || chunks === undefined) throw ctx.unscannable(`its ${name}'s sample table has no sample-to-chunk or chunk offset box`);
  const runs = fullTable(ctx, b, stsc, 12, `${name}'s stsc box`);
  let sample = 0;
  let run = -1;
  for (let chunk = 1; chunk <= chunks.count && sample < sizes.count; chunk++) {
    // The run of chunks (first chunk, samples per chunk, sample description) this chunk is in.
    while (run + 1 < runs.count && u32be(b, runs.at + 12 * (run + 1)) <= chunk) run++;
    if (run < 0) continue;
    const inChunk = Math.min(u32be(b, runs.at + 12 * run + 4), sizes.count - sample);
    if (inChunk === 0) continue;
    const format = formats[u32be(b, runs.at + 12 * run + 8) - 1];
    let bytes = 0;
    for (let k = 0; k < inChunk; k++) bytes += sizes.of(sample + k);
    text.willReadBytes(name, bytes);
    const at = chunks.of(chunk - 1);
    if (at + bytes > src.length) throw ctx.unscannable(`its ${name}'s samples at byte ${at} run past the end of the file`);
    const data = Buffer.allocUnsafe(bytes);
    if (src.readInto(data, at) !== bytes) throw ctx.unscannable(`its ${name}'s samples at byte ${at} could not be read whole`);
    for (let k = 0, from = 0; k < inChunk; k++) {
      const size = sizes.of(sample + k);
      addSample(track, data.subarray(from, from + size), format);
      from += size;
    }
    sample += inChunk;
  }
}

/** tfhd's flags (ISO/IEC 14496-12, 8.8.7): which optional fields follow the track ID, each in this order. */
const TFHD_BASE_DATA_OFFSET = 0x01;
const TFHD_DESCRIPTION = 0x02;
const TFHD_DURATION = 0x08;
const TFHD_SIZE = 0x10;
const TFHD_FLAGS = 0x20;
const TFHD_BASE_IS_MOOF = 0x20000;
/** trun's flags (8.8.8): a data offset, the first sample's flags, then per sample its duration, size, flags and composition offset. */
const TRUN_DATA_OFFSET = 0x01;
const TRUN_FIRST_FLAGS = 0x04;
const TRUN_DURATION = 0x100;
const TRUN_SIZE = 0x200;
const TRUN_PER_SAMPLE = [TRUN_DURATION, TRUN_SIZE, 0x400, 0x800];

/**
 * A movie fragment (`moof`, at `moofAt` in the file, its data from
 * `header`): each track fragment (traf) of a text track has its samples
 * read, run after run (trun), where its header (tfhd) and each run place
 * them: from the base data offset tfhd gives, else the moof's start
 * (default-base-is-moof, and the first traf) or where the previous traf's
 * data ended; a run's data offset from that base, else where the previous
 * run's data ended; each sample's size from the run, else tfhd's default,
 * else trex's. The other tracks' fragments are placed, never read (a text
 * track's data may follow theirs). Counts past the boxes that hold them,
 * and samples past the end of the file, are refused.
 */
function readFragment(src: ByteSource, ctx: InspectContext, movie: Movie, moof: Uint8Array, moofAt: number, header: number): void {
  const what = `its movie fragment at byte ${moofAt}`;
  const trafs = boxesIn(moof, header, moof.length);
  if (trafs === undefined) throw ctx.unscannable(`a box inside ${what} runs past its end`);
  let previousEnd = moofAt;
  for (const traf of trafs) {
    if (traf.type !== "traf") continue;
    const boxes = boxesIn(moof, traf.dataAt, traf.end);
    if (boxes === undefined) throw ctx.unscannable(`a box inside a track fragment of ${what} runs past its end`);
    const tfhd = boxes.find((x) => x.type === "tfhd");
    if (tfhd === undefined) throw ctx.unscannable(`a track fragment of ${what} has no header (tfhd)`);
    const flags = tfhd.end - tfhd.dataAt >= 8 ? u32be(moof, tfhd.dataAt) & 0xffffff : 0;
    const fields = [TFHD_BASE_DATA_OFFSET, TFHD_DESCRIPTION, TFHD_DURATION, TFHD_SIZE, TFHD_FLAGS].map((f): number => (flags & f ? (f === TFHD_BASE_DATA_OFFSET ? 8 : 4) : 0));
    if (tfhd.end - tfhd.dataAt < 8 + fields.reduce((n, f) => n + f, 0)) throw ctx.unscannable(`the tfhd box of a track fragment of ${what} is cut short`);
    const id = u32be(moof, tfhd.dataAt + 4);
    // The optional fields, each where the ones before it end.
    const fieldAt = (k: number) => tfhd.dataAt + 8 + fields.slice(0, k).reduce((n, f) => n + f, 0);
    const defaults = movie.defaults.get(id) ?? { description: 1, size: 0 };
    const description = flags & TFHD_DESCRIPTION ? u32be(moof, fieldAt(1)) : defaults.description;
    const defaultSize = flags & TFHD_SIZE ? u32be(moof, fieldAt(3)) : defaults.size;
    const base = flags & TFHD_BASE_DATA_OFFSET ? u32be(moof, fieldAt(0)) * 2 ** 32 + u32be(moof, fieldAt(0) + 4) : flags & TFHD_BASE_IS_MOOF ? moofAt : previousEnd;
    const track = movie.byId.get(id);
    const name = track ? `${track.name}'s fragment in ${what.slice(4)}` : `a track fragment of ${what}`;
    let next = base;
    for (const trun of boxes) {
      if (trun.type !== "trun") continue;
      if (trun.end - trun.dataAt < 8) throw ctx.unscannable(`the trun box of ${name} is cut short`);
      const runFlags = u32be(moof, trun.dataAt) & 0xffffff;
      const count = u32be(moof, trun.dataAt + 4);
      let p = trun.dataAt + 8;
      // A data offset is signed: data before the moof is where some writers put it.
      const offset = runFlags & TRUN_DATA_OFFSET ? u32be(moof, p) | 0 : undefined;
      if (runFlags & TRUN_DATA_OFFSET) p += 4;
      if (runFlags & TRUN_FIRST_FLAGS) p += 4;
      const entry = 4 * TRUN_PER_SAMPLE.filter((f) => runFlags & f).length;
      if (p > trun.end || count * entry > trun.end - p) throw ctx.unscannable(`the trun box of ${name} lists ${count} samples, more than it holds`);
      const sizeAt = runFlags & TRUN_SIZE ? p + (runFlags & TRUN_DURATION ? 4 : 0) : -1;
      const sizeOf = sizeAt < 0 ? () => defaultSize : (k: number) => u32be(moof, sizeAt + entry * k);
      const at = offset === undefined ? next : base + offset;
      if (track) movie.text.willRead(track.name, count);
      let bytes = 0;
      if (sizeAt < 0) bytes = count * defaultSize;
      else for (let k = 0; k < count; k++) bytes += sizeOf(k);
      if (at < 0 || at + bytes > src.length) throw ctx.unscannable(`${track ? `its ${name}'s samples` : `the samples of ${name}`} at byte ${at} run past the end of the file`);
      if (track) {
        movie.text.willReadBytes(track.name, bytes);
        const data = Buffer.allocUnsafe(bytes);
        if (src.readInto(data, at) !== bytes) throw ctx.unscannable(`its ${name}'s samples at byte ${at} could not be read whole`);
        const format = track.formats[description - 1];
        for (let k = 0, from = 0; k < count; k++) {
          const size = sizeOf(k);
          addSample(track, data.subarray(from, from + size), format);
          from += size;
        }
      }
      next = at + bytes;
    }
    previousEnd = next;
  }
}

/** A table of `count` entries of `entry` bytes from `at` in a full box (version and flags, then a 32-bit count). */
interface Table {
  at: number;
  count: number;
}

/** The entries of the full box `box` (its count after its version and flags), refused when they run past its end. */
function fullTable(ctx: InspectContext, b: Uint8Array, box: Box, entry: number, what: string, countAt = 4): Table {
  if (box.end - box.dataAt < countAt + 4) throw ctx.unscannable(`its ${what} is cut short`);
  const count = u32be(b, box.dataAt + countAt);
  const at = box.dataAt + countAt + 4;
  if (count * entry > box.end - at) throw ctx.unscannable(`its ${what} lists ${count} entries, more than it holds`);
  return { at, count };
}

/** The sizes of a track's samples (stsz: one size for all, or one per sample; stz2: 4, 8 or 16 bits each). */
function sampleSizes(ctx: InspectContext, b: Uint8Array, box: Box | undefined, name: string): { count: number; of: (i: number) => number } {
  if (box === undefined) return { count: 0, of: () => 0 };
  const what = `${name}'s ${box.type} box`;
  if (box.end - box.dataAt < 12) throw ctx.unscannable(`its ${what} is cut short`);
  if (box.type === "stsz") {
    const fixed = u32be(b, box.dataAt + 4);
    if (fixed !== 0) return { count: u32be(b, box.dataAt + 8), of: () => fixed };
    const { at, count } = fullTable(ctx, b, box, 4, what, 8);
    return { count, of: (i) => u32be(b, at + 4 * i) };
  }
  const bits = b[box.dataAt + 7]!;
  if (bits !== 4 && bits !== 8 && bits !== 16) throw ctx.unscannable(`its ${what} has fields of ${bits} bits`);
  const { at, count } = fullTable(ctx, b, box, bits / 8, what, 8);
  if (bits === 4) return { count, of: (i) => (i & 1 ? b[at + (i >> 1)]! & 0x0f : b[at + (i >> 1)]! >> 4) };
  return { count, of: bits === 8 ? (i) => b[at + i]! : (i) => (b[at + 2 * i]! << 8) | b[at + 2 * i + 1]! };
}

/** Where a track's chunks start in the file (stco: 32-bit offsets; co64: 64-bit). */
function chunkOffsets(ctx: InspectContext, b: Uint8Array, box: Box | undefined, name: string): { count: number; of: (i: number) => number } | undefined {
  if (box === undefined) return undefined;
  const wide = box.type === "co64";
  const { at, count } = fullTable(ctx, b, box, wide ? 8 : 4, `${name}'s ${box.type} box`);
  return { count, of: wide ? (i) => u32be(b, at + 8 * i) * 2 ** 32 + u32be(b, at + 8 * i + 4) : (i) => u32be(b, at + 4 * i) };
}

/** The formats of a track's sample descriptions (stsd's entries: tx3g, wvtt, text, stpp…), in order. */
function sampleFormats(b: Uint8Array, stsd: Box | undefined): string[] {
  if (stsd === undefined || stsd.end - stsd.dataAt < 8) return [];
  return (boxesIn(b, stsd.dataAt + 8, stsd.end) ?? []).map((e) => e.type);
}

/**
 * The text of one sample of a text track, by its format: tx3g (mov_text)
 * and QuickTime text, a 16-bit length then the text (modifier boxes after it);
 * WebVTT (wvtt), cue boxes whose leaves (payl, iden, sttg, vtta) hold the
 * text; any other format (TTML, captions) as it is. A length's or a box
 * header's last byte may be a letter that would run into the text's first
 * word, so the text is taken apart from them.
 */
function sampleText(sample: Uint8Array, format: string | undefined, pieces: Uint8Array[]): void {
  if ((format === "tx3g" || format === "text") && sample.length >= 2) {
    const end = 2 + ((sample[0]! << 8) | sample[1]!);
    pieces.push(sample.subarray(2, end));
    // The modifier boxes after the text (styles, and href: a link's URL and its alternate text), as they are.
    if (end < sample.length) pieces.push(sample.subarray(end));
    return;
  }
  if (format === "wvtt") {
    const cues = boxesIn(sample, 0, sample.length);
    if (cues !== undefined) {
      for (const cue of cues) {
        const leaves = cue.type === "vttc" ? boxesIn(sample, cue.dataAt, cue.end) : [cue];
        for (const leaf of leaves ?? [cue]) pieces.push(sample.subarray(leaf.dataAt, leaf.end));
      }
      return;
    }
  }
  pieces.push(sample);
}

/**
 * The text of one CEA-608 caption sample (c608), added to its field's
 * (`fields`: cdat's, cdt2's): byte pairs, each byte's top bit an odd
 * parity bit, dropped; a pair whose first byte is 0x10-0x1F is a control
 * code (where the caption goes, its style, erase, special characters),
 * skipped; of the others, the printable characters are kept. The bytes
 * never spell the text as they are (the parity bit), so the scan of the
 * samples as they are cannot see a key in them. A sample that is not boxes
 * is read as field 1's pairs.
 */
function captionText(sample: Uint8Array, fields: [Uint8Array[], Uint8Array[]]): void {
  const boxes = boxesIn(sample, 0, sample.length) ?? [{ type: "cdat", dataAt: 0, end: sample.length }];
  for (const box of boxes) {
    const out = Buffer.allocUnsafe(box.end - box.dataAt);
    let n = 0;
    for (let at = box.dataAt; at + 1 < box.end; at += 2) {
      const first = sample[at]! & 0x7f;
      const second = sample[at + 1]! & 0x7f;
      if (first >= 0x10 && first <= 0x1f) continue;
      if (first >= 0x20 && first <= 0x7e) out[n++] = first;
      if (second >= 0x20 && second <= 0x7e) out[n++] = second;
    }
    if (n > 0) fields[box.type === "cdt2" ? 1 : 0].push(out.subarray(0, n));
  }
}

/** The UUID of the box that holds an mp4's XMP packet at the file's top (XMP specification part 3, 1.2.7.1). */
const XMP_UUID = "be7acfcb97a942e89c71999491e3afac";
/** The boxes on the way to an XMP packet: QuickTime's (moov > udta > XMP_) and ISO's (meta > xml , in the file, the moov or a track). */
const XMP_CONTAINERS = new Set(["moov", "trak", "udta", "meta"]);

/**
 * Scans the XMP packets in `box` (of `b`, already scanned as it is) also
 * with their entities decoded (xml-text.ts scanXmpText, as a JPEG's): a
 * top-level uuid box of XMP_UUID, QuickTime's XMP_ box, an ISO meta box's
 * xml box; down four containers at most (moov > trak > udta > meta). A container whose boxes do not
 * tile it is not looked into (its bytes were scanned as they are).
 */
function readXmp(ctx: InspectContext, b: Uint8Array, box: Box, depth: number): void {
  const data = b.subarray(box.dataAt, box.end);
  if (box.type === "uuid" && data.length >= 16 && Buffer.from(data.subarray(0, 16)).toString("hex") === XMP_UUID) scanXmpText(ctx, "its XMP box (uuid)", data.subarray(16));
  else if (box.type === "XMP_") scanXmpText(ctx, "its XMP box (udta > XMP_)", data);
  // A full box: its version and flags, then the XML.
  else if (box.type === "xml " && data.length >= 4) scanXmpText(ctx, "its XML box (meta > xml)", data.subarray(4));
  else if (XMP_CONTAINERS.has(box.type) && depth < 4) {
    // ISO's meta is a full box (version and flags before its children); QuickTime's is not: its first child's size is not 0.
    const from = box.type === "meta" && data.length >= 4 && u32be(data, 0) === 0 ? box.dataAt + 4 : box.dataAt;
    for (const child of boxesIn(b, from, box.end) ?? []) readXmp(ctx, b, child, depth + 1);
  }
}

/** The name a compressed movie header's part goes by. */
const CMOV = "its compressed movie header (moov > cmov)";

/**
 * A QuickTime compressed movie header: its cmvd inflated (zlib, the one
 * compression QuickTime writes; any other dcom is refused), within the
 * file's inflate budget and ratio as a zip entry is, scanned, and read as
 * the moov it holds. ffprobe reads the tags inside, which the scan of the
 * deflated bytes did not see.
 */
function readCompressedMovie(src: ByteSource, ctx: InspectContext, movie: Movie, moov: Uint8Array, cmov: Box, inflated: boolean): void {
  if (inflated) throw ctx.unscannable(`${CMOV} holds another compressed movie header, which no player reads`);
  const parts = boxesIn(moov, cmov.dataAt, cmov.end);
  const dcom = parts?.find((p) => p.type === "dcom");
  const cmvd = parts?.find((p) => p.type === "cmvd");
  if (dcom === undefined || cmvd === undefined || dcom.end - dcom.dataAt < 4 || cmvd.end - cmvd.dataAt < 4) {
    throw ctx.unscannable(`${CMOV} is damaged (its dcom or cmvd box is missing or cut short)`);
  }
  const method = ascii(moov, dcom.dataAt, 4);
  if (method !== "zlib") throw ctx.unscannable(`${CMOV} is compressed with '${method}', which this check does not read`, "export it again without compressing the movie header");
  const header = ctx.inflate(CMOV, moov.subarray(cmvd.dataAt + 4, cmvd.end), "zlib", u32be(moov, cmvd.dataAt));
  ctx.scan(CMOV, header);
  const inner = boxesIn(header, 0, header.length);
  if (inner === undefined || inner.length === 0 || inner[0]!.type !== "moov") throw ctx.unscannable(`${CMOV} does not inflate to a moov box`);
  readXmp(ctx, header, inner[0]!, 0);
  readMovie(src, ctx, movie, header.subarray(0, inner[0]!.end), inner[0]!.dataAt, true);
}
