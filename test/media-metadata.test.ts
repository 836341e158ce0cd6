// Metadata of audio, video and pictures that lies outside the boxes and
// segments read as they are: a WAV's ID3 chunk (its compressed frames), a
// JPEG's Extended XMP (split over APP1 segments), a QuickTime compressed
// movie header (cmov), and the samples of text tracks (subtitles in an
// mp4/mov, in a WebM/Matroska file). Every file is made here; the keys
// are fakes.
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { inspectBinary, inspectFile, readsRanges } from "../src/content/carriers.js";
import { NO_KNOWN_SECRETS } from "../src/content/known.js";
import { DEFAULT_ALLOW } from "../src/config/config.js";
import { prepare } from "../src/prepare/prepare.js";
import { CORPUS_EXTRA_ALLOW, mp4, positives, wav } from "./corpus.js";
import { NOTHING_LEFT, leftBehind, makeHome, outcome, write } from "./helpers.js";

let h: ReturnType<typeof makeHome>;
let work: string;
beforeEach(() => {
  h = makeHome();
  work = path.join(h.home, "work");
  fs.mkdirSync(work);
});
afterEach(() => h.cleanup());

async function judge(files: string[]) {
  return prepare(files, { env: h.env, cwd: work, allow: [...DEFAULT_ALLOW, ...CORPUS_EXTRA_ALLOW] });
}

const token = /ghp_[A-Za-z0-9]+/.exec(positives(97)["github-token"]!)![0];
const be32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};
const le32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
};
const box = (type: string, ...data: Buffer[]) => Buffer.concat([be32(8 + data.reduce((n, d) => n + d.length, 0)), Buffer.from(type, "latin1"), ...data]);
/** The boxes at the top of an ISO media file: [type, whole box]. */
function topBoxes(file: Buffer): [string, Buffer][] {
  const out: [string, Buffer][] = [];
  for (let at = 0; at + 8 <= file.length; at += file.readUInt32BE(at)) out.push([file.toString("latin1", at + 4, at + 8), file.subarray(at, at + file.readUInt32BE(at))]);
  return out;
}

/** What the reader concludes, from memory and (a type read a range at a time) from the staged file: the two must agree. */
function inspected(file: Buffer, ext: string): string {
  const inMemory = outcome(() => inspectBinary(file, ext, ext, NO_KNOWN_SECRETS));
  if (!readsRanges(ext)) return inMemory;
  const fd = fs.openSync(write(work, `read.${ext}`, file), "r");
  try {
    expect(outcome(() => inspectFile(fd, file.length, ext, ext, NO_KNOWN_SECRETS))).toEqual(inMemory);
  } finally {
    fs.closeSync(fd);
  }
  return inMemory;
}

describe("a WAV's ID3 chunk", () => {
  const synchsafe = (n: number) => Buffer.from([(n >> 21) & 0x7f, (n >> 14) & 0x7f, (n >> 7) & 0x7f, n & 0x7f]);
  /** An ID3v2.4 tag with a TIT2 frame holding `title` (UTF-8), zlib-compressed (flags: compression + data length indicator) when `compress`. */
  const id3 = (title: string, compress: boolean) => {
    const text = Buffer.concat([Buffer.from([3]), Buffer.from(title)]);
    const body = compress ? Buffer.concat([synchsafe(text.length), zlib.deflateSync(text)]) : text;
    const frame = Buffer.concat([Buffer.from("TIT2"), synchsafe(body.length), Buffer.from([0, compress ? 0x09 : 0]), body]);
    return Buffer.concat([Buffer.from("ID3\x04\x00\x00", "latin1"), synchsafe(frame.length), frame]);
  };
  /** A WAV with `tag` in an `id3 ` chunk (`chunkId`) after its samples, as Audacity and ffmpeg write it. */
  const tagged = (tag: Buffer, chunkId = "id3 ") => {
    const base = wav("note");
    const chunk = Buffer.concat([Buffer.from(chunkId, "latin1"), le32(tag.length), tag, Buffer.alloc(tag.length % 2)]);
    const body = Buffer.concat([base.subarray(8), chunk]);
    return Buffer.concat([Buffer.from("RIFF"), le32(body.length), body]);
  };

  it("inflates a compressed ID3 frame with the MP3's ID3 reader (a key in one was published); reads an uncompressed one as before; publishes clean ones; refuses a tag that runs past its chunk", async () => {
    expect(inspected(tagged(id3(`deploy ${token}`, true)), "wav")).toMatch(/^secret_detected: .*in its ID3 TIT2 frame of its id3  chunk/);
    expect(inspected(tagged(id3(`deploy ${token}`, true), "ID3 "), "wav")).toMatch(/^secret_detected: .*in its ID3 TIT2 frame of its ID3  chunk/);
    expect(inspected(tagged(id3(`deploy ${token}`, false)), "wav")).toMatch(/^secret_detected: /);
    expect(inspected(tagged(id3("Quarterly call", true)), "wav")).toBe("published");
    expect(inspected(tagged(id3("Quarterly call", false)), "wav")).toBe("published");
    // A tag whose size runs past its chunk: its frames cannot be placed.
    const long = id3("Quarterly call", true);
    long[9] = long[9]! + 40;
    expect(inspected(tagged(long), "wav")).toMatch(/^unscannable_content: .*its ID3 tag runs past the end of the chunk \(in its id3  chunk\)/);
    // A frame that does not inflate is refused, as in an MP3.
    const damaged = id3("Quarterly call", true);
    // The zlib header (after the tag's and the frame's headers and the data length indicator) made invalid.
    damaged[10 + 10 + 4] = 0x41;
    expect(inspected(tagged(damaged), "wav")).toMatch(/^unscannable_content: .*does not inflate/);

    const refused = await judge([write(work, "voice.wav", tagged(id3(`deploy ${token}`, true)))]);
    expect(refused.media_dropped.map((d) => d.code)).toEqual(["secret_detected"]);
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
    const published = await judge([write(work, "clean.wav", tagged(id3("Quarterly call", true)))]);
    expect(published.media_dropped).toEqual([]);
  });
});

describe("a JPEG's Extended XMP", () => {
  const segment = (marker: number, payload: Buffer) => Buffer.concat([Buffer.from([0xff, marker]), Buffer.from([(payload.length + 2) >> 8, (payload.length + 2) & 0xff]), payload]);
  const NS = Buffer.from("http://ns.adobe.com/xmp/extension/\0", "latin1");
  const GUID = "0123456789ABCDEF0123456789ABCDEF";
  /** An APP1 segment carrying `bytes` as the chunk at `offset` of a packet of `length` bytes. */
  const chunk = (bytes: Buffer, offset: number, length: number, guid = GUID) => segment(0xe1, Buffer.concat([NS, Buffer.from(guid, "latin1"), be32(length), be32(offset), bytes]));
  const packet = (text: string) => Buffer.from(`<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF><rdf:Description><dc:description>${"n".repeat(200)} ${text} done</dc:description></rdf:Description></rdf:RDF></x:xmpmeta>`);
  /** A JPEG (from jpeg()'s layout) with `segments` after its SOI. */
  const withSegments = (...segments: Buffer[]) => {
    const base = Buffer.from("ffd8ffe000104a46494600010100000100010000ffdb004300" + "01".repeat(64) + "ffc0000b080001000101011100ffda0008010100003f00123456ffd9", "hex");
    return Buffer.concat([base.subarray(0, 2), ...segments, base.subarray(2)]);
  };
  /** The packet split in two chunks where `at` falls (inside the key when it holds one). */
  const split = (xmp: Buffer, at: number, guid = GUID) => [chunk(xmp.subarray(0, at), 0, xmp.length, guid), chunk(xmp.subarray(at), at, xmp.length, guid)];

  it("joins the chunks of each packet by GUID in offset order and scans the packet whole (a key across two chunks was published); chunks out of order too; clean packets and lone chunks published", async () => {
    const xmp = packet(`deploy token ${token}`);
    const cut = xmp.indexOf(token) + 15;
    const [first, second] = split(xmp, cut);
    expect(inspected(withSegments(first!, second!), "jpg")).toMatch(/^secret_detected: .*in its Extended XMP \(its APP1 segments' chunks joined\)/);
    expect(inspected(withSegments(second!, first!), "jpg")).toMatch(/^secret_detected: .*its Extended XMP/);
    // Two packets interleaved: each joined by its own GUID.
    const other = split(packet("a depth map"), 100, "F".repeat(32));
    expect(inspected(withSegments(first!, other[0]!, other[1]!, second!), "jpg")).toMatch(/^secret_detected: .*its Extended XMP/);
    // The same chunks under two GUIDs are two packets, neither whole: not joined (each chunk alone holds no key).
    expect(inspected(withSegments(first!, split(xmp, cut, "A".repeat(32))[1]!), "jpg")).toBe("published");
    const clean = packet("quarterly report");
    expect(inspected(withSegments(...split(clean, 120)), "jpg")).toBe("published");
    expect(inspected(withSegments(chunk(clean, 0, clean.length)), "jpg")).toBe("published");

    const refused = await judge([write(work, "photo.jpg", withSegments(first!, second!))]);
    expect(refused.media_dropped.map((d) => d.code)).toEqual(["secret_detected"]);
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
    const published = await judge([write(work, "clean.jpg", withSegments(...split(clean, 120)))]);
    expect(published.media_dropped).toEqual([]);
  });

  it("scans overlapping and missing chunks as they are (not joined across a gap or an overlap), joins no chunk past the declared length, and refuses a packet declared past the bound", () => {
    const xmp = packet(`deploy token ${token}`);
    const cut = xmp.indexOf(token) + 15;
    // A gap: the second chunk placed one byte further than the first ends.
    const gap = withSegments(chunk(xmp.subarray(0, cut), 0, xmp.length + 1), chunk(xmp.subarray(cut), cut + 1, xmp.length + 1));
    expect(inspected(gap, "jpg")).toBe("published");
    // An overlap: the run ends at it; the chunks that follow each other still join.
    const overlap = withSegments(chunk(xmp.subarray(0, cut), 0, xmp.length), chunk(xmp.subarray(0, 50), 0, xmp.length), chunk(xmp.subarray(cut), cut, xmp.length));
    expect(inspected(overlap, "jpg")).toMatch(/^secret_detected: .*its Extended XMP/);
    // Chunks written twice at one offset: joined with the first, and with the last (exiftool keeps the last).
    const rewritten = withSegments(chunk(xmp.subarray(0, 50), 0, xmp.length), chunk(xmp.subarray(0, cut), 0, xmp.length), chunk(xmp.subarray(cut), cut, xmp.length));
    expect(inspected(rewritten, "jpg")).toMatch(/^secret_detected: .*its Extended XMP/);
    // A chunk past the declared length is not joined.
    const past = withSegments(chunk(xmp.subarray(0, cut), 0, cut + 10), chunk(xmp.subarray(cut), cut, cut + 10));
    expect(inspected(past, "jpg")).toBe("published");
    // Declared past 64 MiB: refused, whatever the chunks hold.
    const huge = withSegments(chunk(Buffer.from("quarterly"), 0, 64 * 1024 * 1024 + 1));
    expect(inspected(huge, "jpg")).toMatch(/^unscannable_content: .*its Extended XMP declares 67108865 bytes, more than the 67108864 this check joins/);
    expect(inspected(withSegments(chunk(Buffer.from("quarterly"), 0, 64 * 1024 * 1024)), "jpg")).toBe("published");
    // Many chunks (a packet of 2,000 one-byte chunks, shuffled): joined in linear time.
    const many = Buffer.from(`${"x".repeat(1000)} ${token} `);
    const chunks = [...many].map((_, i) => chunk(many.subarray(i, i + 1), i, many.length));
    const shuffled = chunks.map((c, i) => chunks[(i * 7919) % chunks.length]!);
    expect(new Set(shuffled).size).toBe(chunks.length);
    expect(inspected(withSegments(...shuffled), "jpg")).toMatch(/^secret_detected: .*its Extended XMP/);
  });
});

/** A QuickTime movie's ftyp (brand `qt  `): sniffed as a .mov. */
const QT_FTYP = box("ftyp", Buffer.from("qt  "), be32(0x200), Buffer.from("qt  "));

describe("a QuickTime compressed movie header (moov > cmov)", () => {
  /** A mov whose moov is `moov` compressed (dcom `method`, cmvd with the size and the deflated bytes), as QuickTime's "compress movie header" writes it. */
  const compressed = (moov: Buffer, method = "zlib", deflated = zlib.deflateSync(moov)) => {
    const boxes = topBoxes(mp4("made by the screen recorder"));
    const cmov = box("moov", box("cmov", box("dcom", Buffer.from(method, "latin1")), box("cmvd", be32(moov.length), deflated)));
    return Buffer.concat(boxes.map(([type, whole]) => (type === "moov" ? cmov : type === "ftyp" ? QT_FTYP : whole)));
  };
  const moovOf = (file: Buffer) => topBoxes(file).find(([type]) => type === "moov")![1];

  it("inflates it and reads the moov it holds (a key in its tags, which ffprobe prints, was published); publishes a clean one", async () => {
    const secret = compressed(moovOf(mp4(`deploy ${token}`)));
    expect(secret.indexOf(token)).toBe(-1);
    expect(inspected(secret, "mov")).toMatch(/^secret_detected: .*in its compressed movie header \(moov > cmov\), at byte \d+ of it/);
    expect(inspected(compressed(moovOf(mp4("quarterly report"))), "mov")).toBe("published");
    const refused = await judge([write(work, "screen.mov", secret)]);
    expect(refused.media_dropped.map((d) => d.code)).toEqual(["secret_detected"]);
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
    const published = await judge([write(work, "clean.mov", compressed(moovOf(mp4("quarterly report"))))]);
    expect(published.media_dropped).toEqual([]);
  });

  it("refuses a compression it does not read, a damaged or bomb-like one, and a cmov inside an inflated one, each with its reason; nothing left behind", async () => {
    const moov = moovOf(mp4("quarterly report"));
    const cases: [string, Buffer, string, RegExp][] = [
      ["lzo.mov", compressed(moov, "lzo "), "unscannable_content", /its compressed movie header \(moov > cmov\) is compressed with 'lzo ', which this check does not read/],
      ["no-cmvd.mov", Buffer.concat(topBoxes(mp4("x")).map(([type, whole]) => (type === "moov" ? box("moov", box("cmov", box("dcom", Buffer.from("zlib")))) : type === "ftyp" ? QT_FTYP : whole))), "unscannable_content", /is damaged \(its dcom or cmvd box is missing or cut short\)/],
      ["damaged.mov", compressed(moov, "zlib", Buffer.from("not a zlib stream")), "unscannable_content", /its compressed movie header \(moov > cmov\) does not inflate/],
      // 4 MiB of NULs deflate to about 4 KiB: more than 100 times past 1 MiB.
      ["bomb.mov", compressed(Buffer.alloc(4 << 20)), "decompression_bomb", /its compressed movie header \(moov > cmov\) of the .mov file inflates to more than 100 times its compressed size/],
      ["not-moov.mov", compressed(box("free", Buffer.from("hello"))), "unscannable_content", /does not inflate to a moov box/],
      ["twice.mov", compressed(moovOf(compressed(moov))), "unscannable_content", /holds another compressed movie header/],
      // A box inside the moov whose size runs past the moov's end: where a cmov (or a track) lies cannot be told.
      ["cut-moov.mov", Buffer.concat(topBoxes(compressed(moov)).map(([type, whole]) => (type === "moov" ? Buffer.concat([box("moov", box("free"), be32(100), Buffer.from("cmov"))]) : whole))), "unscannable_content", /a box inside its moov box runs past the moov's end/],
    ];
    for (const [name, file, code, why] of cases) expect(inspected(file, "mov"), name).toMatch(new RegExp(`^${code}: .*${why.source}`));
    const refused = await judge(cases.map(([name, file]) => write(work, name, file)));
    expect(refused.media_dropped.map((d) => [path.basename(d.path), d.code])).toEqual(cases.map(([name, , code]) => [name, code]));
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
  });
});
