// ISO media (mp4, mov, m4a): every top-level box but the media data (mdat)
// is scanned as it is, and whatever follows the last box; the movie header
// (moov) is also read as a movie: a QuickTime compressed movie header
// (cmov) inflated and read as the moov it holds.
//
// The file is read a range at a time (a ByteSource): a 50 MB video costs
// its boxes' headers and its moov, never a read of its media data.
import type { ByteSource } from "./byte-source.js";
import { ascii, u32be } from "./bytes.js";
import type { InspectContext } from "./inspect.js";

/** A box inside a box held in memory: its type, where its data starts and where it ends. */
interface Box {
  type: string;
  dataAt: number;
  end: number;
}

/** The boxes that tile b[from, to) (bytes too few for a header at the end are left); undefined when one runs past `to`. */
function boxesIn(b: Uint8Array, from: number, to: number): Box[] | undefined {
  const boxes: Box[] = [];
  for (let at = from; at + 8 <= to; ) {
    let size = u32be(b, at);
    let header = 8;
    if (size === 1) {
      if (at + 16 > to) return undefined;
      size = u32be(b, at + 8) * 2 ** 32 + u32be(b, at + 12);
      header = 16;
    } else if (size === 0) {
      size = to - at;
    }
    if (size < header || at + size > to) return undefined;
    boxes.push({ type: ascii(b, at + 4, 4), dataAt: at + header, end: at + size });
    at += size;
  }
  return boxes;
}

export function inspectIsoMedia(src: ByteSource, ctx: InspectContext): void {
  const length = src.length;
  let at = 0;
  while (at + 8 <= length) {
    const h = src.read(at, 16);
    let size = u32be(h, 0);
    const type = ascii(h, 4, 4);
    let header = 8;
    if (size === 1) {
      if (at + 16 > length) break;
      size = u32be(h, 8) * 2 ** 32 + u32be(h, 12);
      header = 16;
    } else if (size === 0) {
      size = length - at;
    }
    if (size < header || at + size > length) throw ctx.unscannable(`its ${type} box runs past the end of the file`);
    if (type !== "mdat") {
      const box = src.read(at, size);
      ctx.scan(`its ${type} box`, box, at);
      if (type === "moov") readMovie(ctx, box, header, false);
    }
    at += size;
  }
  if (at < length) ctx.scan("the bytes after its last box", src.read(at, length - at), at);
}

/**
 * Reads a moov box (`moov`, its data from `dataAt`) as a movie: a
 * compressed movie header inside it (QuickTime's "compress movie header":
 * cmov, holding dcom, the compression, and cmvd, the size and the
 * compressed moov) is inflated and read as the moov it holds. `inflated`:
 * this moov is one (a cmov inside it is refused).
 */
function readMovie(ctx: InspectContext, moov: Uint8Array, dataAt: number, inflated: boolean): void {
  const children = boxesIn(moov, dataAt, moov.length);
  if (children === undefined) throw ctx.unscannable("a box inside its moov box runs past the moov's end");
  for (const child of children) {
    if (child.type === "cmov") readCompressedMovie(ctx, moov, child, inflated);
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
function readCompressedMovie(ctx: InspectContext, moov: Uint8Array, cmov: Box, inflated: boolean): void {
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
  readMovie(ctx, header.subarray(0, inner[0]!.end), inner[0]!.dataAt, true);
}
