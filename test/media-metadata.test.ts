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
import { inspectBinary, inspectFile } from "../src/content/carriers.js";
import { NO_KNOWN_SECRETS } from "../src/content/known.js";
import { DEFAULT_ALLOW } from "../src/config/config.js";
import { prepare } from "../src/prepare/prepare.js";
import { CORPUS_EXTRA_ALLOW, positives, wav } from "./corpus.js";
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
/** What each reader concludes, from memory and from the staged file (the two must agree). */
function inspected(file: Buffer, ext: string): string {
  const inMemory = outcome(() => inspectBinary(file, ext, ext, NO_KNOWN_SECRETS));
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
