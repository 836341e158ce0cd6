// Ogg (ogg, opus, and the oga, ogv, spx, ogx file-type names): each logical
// stream's header packets, where its tags are (Vorbis and Theora comments,
// OpusTags, Speex's comment, Ogg FLAC's metadata blocks), are put together
// from the pages they span and scanned, and so is whatever follows the last
// page; the audio and video packets are skipped, as an mp4's media data is.
// A packet may span pages, so a tag cut by a page header, which a scan of
// the bytes as they are would miss, is read whole.
//
// The pages are read a range at a time (a ByteSource): a 50 MB voice note
// costs its page headers, not a scan of its 50 MB.
import type { ByteSource } from "./byte-source.js";
import { holds, u32le } from "./bytes.js";
import type { InspectContext } from "./inspect.js";
import { OVERLAP } from "./scan.js";

/** A page's header before its segment table: "OggS", version, flags, granule, serial, sequence, CRC, segment count. */
const PAGE_HEADER = 27;
/** A header packet is held while it is put together: past this, the file is not read. */
const MAX_HEADER_BYTES = 64 * 1024 * 1024;

interface LogicalStream {
  codec: string;
  /** Packets completed so far. */
  packets: number;
  /** How many header packets the codec has (Infinity: every packet is read, as for an unknown codec). */
  headers: number;
  /** The packet being put together, piece by piece. */
  pending: Buffer[];
  pendingBytes: number;
  /** A stream of a codec not known here: its packets, scanned together a megabyte at a time. */
  group: Buffer[];
  groupBytes: number;
}

/** The codec and number of header packets a stream's first packet says. */
function headersOf(first: Uint8Array): { codec: string; headers: number } {
  if (holds(first, 0, "OpusHead")) return { codec: "Opus", headers: 2 };
  if (holds(first, 0, "\x01vorbis")) return { codec: "Vorbis", headers: 3 };
  if (holds(first, 0, "\x80theora")) return { codec: "Theora", headers: 3 };
  if (holds(first, 0, "Speex   ")) return { codec: "Speex", headers: 2 };
  // Ogg FLAC: the mapping header, then metadata blocks until the one flagged last (read in addPacket).
  if (holds(first, 0, "\x7fFLAC")) return { codec: "FLAC", headers: Number.POSITIVE_INFINITY };
  // Skeleton and any codec not known here: every packet is metadata as far as this reader knows.
  return { codec: "Ogg", headers: Number.POSITIVE_INFINITY };
}

/** Whether a stream still has header packets to read. */
const inHeaders = (s: LogicalStream) => s.packets < s.headers;

/** A megabyte of an unknown codec's packets is scanned at once: a packet at a time, a large file would be thousands of parts. */
const GROUP_BYTES = 1024 * 1024;

function scanGroup(stream: LogicalStream, ctx: InspectContext): void {
  if (stream.groupBytes === 0) return;
  ctx.scan(`its ${stream.codec} stream's packets`, Buffer.concat(stream.group));
  stream.group = [];
  stream.groupBytes = 0;
}

/** `at`: where the packet lies in the file, when it lies on one page (one that spans pages has their headers inside it). */
function addPacket(stream: LogicalStream, packet: Buffer, at: number | undefined, ctx: InspectContext): void {
  if (stream.packets === 0) Object.assign(stream, headersOf(packet));
  if (stream.codec === "Ogg") {
    stream.group.push(packet);
    stream.groupBytes += packet.length;
    if (stream.groupBytes >= GROUP_BYTES) scanGroup(stream, ctx);
  } else {
    ctx.scan(`its ${stream.codec} header packet ${stream.packets + 1}`, packet, at);
  }
  stream.packets++;
  // Ogg FLAC's metadata blocks end with the one whose first bit is set.
  if (stream.codec === "FLAC" && stream.packets > 1 && (packet[0]! & 0x80) !== 0) stream.headers = stream.packets;
}

export function inspectOgg(src: ByteSource, ctx: InspectContext): void {
  const length = src.length;
  const streams = new Map<number, LogicalStream>();
  let at = 0;
  let lastBodyAt = 0;
  while (at + PAGE_HEADER <= length) {
    const h = src.read(at, PAGE_HEADER);
    // Not a page (bytes appended after the last one): scanned below as they are.
    if (!holds(h, 0, "OggS") || h[4] !== 0) break;
    const flags = h[5]!;
    const serial = u32le(h, 14);
    const segmentCount = h[26]!;
    const segments = Buffer.from(src.read(at + PAGE_HEADER, segmentCount));
    let bodyLength = 0;
    for (const s of segments) bodyLength += s;
    const bodyAt = at + PAGE_HEADER + segmentCount;
    lastBodyAt = bodyAt;
    if (segments.length < segmentCount || bodyAt + bodyLength > length) throw ctx.unscannable(`its page at byte ${at} runs past the end of the file`);
    let stream = streams.get(serial);
    if (stream === undefined || (flags & 0x02) !== 0) {
      if (stream !== undefined) finish(stream, ctx);
      stream = { codec: "Ogg", packets: 0, headers: 1, pending: [], pendingBytes: 0, group: [], groupBytes: 0 };
      streams.set(serial, stream);
    }
    if (inHeaders(stream)) {
      const body = Buffer.from(src.read(bodyAt, bodyLength));
      // A page that does not continue a packet ends what an earlier page left unfinished: read as far as it goes.
      if ((flags & 0x01) === 0) scanUnfinished(stream, ctx);
      let from = 0;
      let end = 0;
      for (const s of segments) {
        end += s;
        if (s === 255) continue;
        // A segment under 255 bytes ends a packet.
        const onePage = stream.pendingBytes === 0;
        stream.pending.push(body.subarray(from, end));
        addPacket(stream, takePending(stream), onePage ? bodyAt + from : undefined, ctx);
        from = end;
        if (!inHeaders(stream)) break;
      }
      if (inHeaders(stream) && from < end) {
        // The page ends inside a packet: the next page of this stream continues it.
        stream.pending.push(body.subarray(from, end));
        stream.pendingBytes += end - from;
        if (stream.pendingBytes > MAX_HEADER_BYTES) throw ctx.unscannable(`its ${stream.codec} header packet ${stream.packets + 1} holds more than ${MAX_HEADER_BYTES / 1024 / 1024} MiB`);
      }
    }
    at = bodyAt + bodyLength;
  }
  for (const stream of streams.values()) finish(stream, ctx);
  if (at < length) {
    ctx.scan("the bytes after its last page", src.read(at, length - at), at);
    // Where a page's damaged lacing ends it early, its last packet runs on into these bytes: a key across that seam,
    // read in two parts, was published. So the seam is read whole too (the last page's end and what follows, a match's length each).
    const from = Math.max(lastBodyAt, at - OVERLAP);
    if (from < at) ctx.scan("the end of its last page and the bytes after it", src.read(from, Math.min(length, at + OVERLAP) - from), from);
  }
}

/** The packet a stream is putting together, as one buffer; the stream then holds none. */
function takePending(stream: LogicalStream): Buffer {
  const packet = Buffer.concat(stream.pending);
  stream.pending = [];
  stream.pendingBytes = 0;
  return packet;
}

/** What a stream left when it ended: its unknown codec's last packets, a packet the file (or a new stream) cut off, read as far as it goes. */
function finish(stream: LogicalStream, ctx: InspectContext): void {
  scanGroup(stream, ctx);
  scanUnfinished(stream, ctx);
}

/** A packet a stream began and did not end (a page that does not continue it, a new stream, the file's end), scanned as far as it goes. */
function scanUnfinished(stream: LogicalStream, ctx: InspectContext): void {
  const unfinished = takePending(stream);
  if (unfinished.length > 0) ctx.scan(`its unfinished ${stream.codec} header packet`, unfinished);
}
