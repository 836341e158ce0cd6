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
import { inspectAppendedZip, inspectBinary, inspectFile, readsRanges } from "../src/content/carriers.js";
import { NO_KNOWN_SECRETS } from "../src/content/known.js";
import { DEFAULT_ALLOW } from "../src/config/config.js";
import { prepare } from "../src/prepare/prepare.js";
import { CORPUS_EXTRA_ALLOW, gif, mp4, pdf, positives, wav } from "./corpus.js";
import { NOTHING_LEFT, leftBehind, makeHome, outcome, write } from "./helpers.js";

let h: ReturnType<typeof makeHome>;
let work: string;
beforeEach(() => {
  h = makeHome();
  work = h.work;
});
afterEach(() => h.cleanup());

async function judge(files: string[]) {
  return prepare(files, { env: h.env, cwd: work, allow: [...DEFAULT_ALLOW, ...CORPUS_EXTRA_ALLOW, "mkv"] });
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

/** A JPEG segment: its marker, its length, `payload`. */
const segment = (marker: number, payload: Buffer) => Buffer.concat([Buffer.from([0xff, marker]), Buffer.from([(payload.length + 2) >> 8, (payload.length + 2) & 0xff]), payload]);
/** A JPEG (from jpeg()'s layout) with `segments` after its SOI. */
const withSegments = (...segments: Buffer[]) => {
  const base = Buffer.from("ffd8ffe000104a46494600010100000100010000ffdb004300" + "01".repeat(64) + "ffc0000b080001000101011100ffda0008010100003f00123456ffd9", "hex");
  return Buffer.concat([base.subarray(0, 2), ...segments, base.subarray(2)]);
};

describe("a JPEG's Extended XMP", () => {
  const NS = Buffer.from("http://ns.adobe.com/xmp/extension/\0", "latin1");
  const GUID = "0123456789ABCDEF0123456789ABCDEF";
  /** An APP1 segment carrying `bytes` as the chunk at `offset` of a packet of `length` bytes. */
  const chunk = (bytes: Buffer, offset: number, length: number, guid = GUID) => segment(0xe1, Buffer.concat([NS, Buffer.from(guid, "latin1"), be32(length), be32(offset), bytes]));
  const packet = (text: string) => Buffer.from(`<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF><rdf:Description><dc:description>${"n".repeat(200)} ${text} done</dc:description></rdf:Description></rdf:RDF></x:xmpmeta>`);
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

describe("an XMP packet with its entities decoded (XMP is XML: exiftool prints `ghp&#95;…` as `ghp_…`; the red team's 30b/05)", () => {
  const written = token.replace("_", "&#95;");
  const packet = (text: string, begin = true) =>
    Buffer.from(`${begin ? '<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?>' : ""}<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF><rdf:Description rdf:about="" photoshop:Headline="${text}"><dc:description><rdf:Alt><rdf:li xml:lang="x-default">${"n".repeat(200)} deploy token ${text}</rdf:li></rdf:Alt></dc:description></rdf:Description></rdf:RDF></x:xmpmeta>`);
  const xmpJpeg = (xmp: Buffer) => withSegments(segment(0xe1, Buffer.concat([Buffer.from("http://ns.adobe.com/xap/1.0/\0", "latin1"), xmp])));
  const NS = Buffer.from("http://ns.adobe.com/xmp/extension/\0", "latin1");
  const GUID = "0123456789ABCDEF0123456789ABCDEF";
  const chunk = (bytes: Buffer, offset: number, length: number) => segment(0xe1, Buffer.concat([NS, Buffer.from(GUID, "latin1"), be32(length), be32(offset), bytes]));
  const pngChunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, "latin1"), data]);
    return Buffer.concat([be32(data.length), body, be32(zlib.crc32(body))]);
  };
  const IHDR = Buffer.from("0000000100000001080000000000", "hex").subarray(0, 13);
  const png = (keyword: string, xmp: Buffer, compressed: boolean) =>
    Buffer.concat([
      Buffer.from("89504e470d0a1a0a", "hex"),
      pngChunk("IHDR", IHDR),
      pngChunk("iTXt", Buffer.concat([Buffer.from(`${keyword}\0${compressed ? "\x01" : "\0"}\0\0\0`, "latin1"), compressed ? zlib.deflateSync(xmp) : xmp])),
      pngChunk("IDAT", zlib.deflateSync(Buffer.from([0, 0]))),
      pngChunk("IEND", Buffer.alloc(0)),
    ]);
  const riffChunk = (id: string, data: Buffer) => Buffer.concat([Buffer.from(id, "latin1"), le32(data.length), data, Buffer.alloc(data.length % 2)]);
  const webp = (xmp: Buffer) => {
    const body = Buffer.concat([Buffer.from("WEBP"), riffChunk("VP8L", Buffer.from([0x2f, 0, 0, 0, 0x10, 0x07, 0x10, 0x11, 0x11, 0x88, 0x88, 0xfe, 0x07, 0])), riffChunk("XMP ", xmp)]);
    return Buffer.concat([Buffer.from("RIFF"), le32(body.length), body]);
  };

  it("reads a JPEG's XMP, its Extended XMP (a lone chunk and the chunks joined, a reference cut between them), a PNG's iTXt XMP (compressed or not) and a WebP's XMP chunk with their references decoded, in elements and attributes; `&#X5F;` (no XML reference), an overlong one, clean packets and another iTXt keyword are published", async () => {
    const xmp = packet(written);
    expect(inspected(xmpJpeg(xmp), "jpg")).toMatch(/^secret_detected: .*in its APP1 segment's XMP \(its entities decoded\)/);
    // Zero-padded, hex, and in an attribute only.
    expect(inspected(xmpJpeg(packet(token.replace("_", "&#x000005f;"))), "jpg")).toMatch(/^secret_detected: .*XMP \(its entities decoded\)/);
    const attributeOnly = Buffer.from(`<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF><rdf:Description photoshop:Headline="${written}"/></rdf:RDF></x:xmpmeta>`);
    expect(inspected(xmpJpeg(attributeOnly), "jpg")).toMatch(/^secret_detected: .*XMP \(its entities decoded\)/);
    const extended = packet(written, false);
    expect(inspected(withSegments(chunk(extended, 0, extended.length)), "jpg")).toMatch(/^secret_detected: .*in its APP1 segment's Extended XMP chunk \(its entities decoded\)/);
    // The reference cut between two chunks (`&#9` | `5;`): only the packet joined reads it.
    const once = Buffer.from(`<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF><rdf:Description><dc:description>${"n".repeat(200)} deploy token ${written}</dc:description></rdf:Description></rdf:RDF></x:xmpmeta>`);
    const cut = once.indexOf("&#95;") + 3;
    expect(inspected(withSegments(chunk(once.subarray(0, cut), 0, once.length), chunk(once.subarray(cut), cut, once.length)), "jpg")).toMatch(
      /^secret_detected: .*in its Extended XMP \(its APP1 segments' chunks joined\) \(its entities decoded\)/,
    );
    expect(inspected(png("XML:com.adobe.xmp", xmp, false), "png")).toMatch(/^secret_detected: .*in its iTXt chunk's XMP \(its entities decoded\)/);
    expect(inspected(png("XML:com.adobe.xmp", xmp, true), "png")).toMatch(/^secret_detected: .*in its iTXt chunk's XMP \(its entities decoded\)/);
    expect(inspected(webp(xmp), "webp")).toMatch(/^secret_detected: .*in its XMP chunk \(its entities decoded\)/);

    for (const text of [token.replace("_", "&#X5F;"), token.replace("_", "&#0000123456789;"), "quarterly report &amp; &#169; 2026 &lt;draft&gt;"]) {
      const clean = packet(text);
      expect(inspected(xmpJpeg(clean), "jpg"), text).toBe("published");
      expect(inspected(withSegments(chunk(clean, 0, clean.length)), "jpg"), text).toBe("published");
      expect(inspected(png("XML:com.adobe.xmp", clean, true), "png"), text).toBe("published");
      expect(inspected(webp(clean), "webp"), text).toBe("published");
    }
    // Only XMP is read as XML: another iTXt keyword's text is not.
    expect(inspected(png("Description", xmp, false), "png")).toBe("published");

    const refused = await judge([write(work, "xmp.jpg", xmpJpeg(xmp)), write(work, "xmp.png", png("XML:com.adobe.xmp", xmp, true)), write(work, "xmp.webp", webp(xmp))]);
    expect(refused.media_dropped.map((d) => [path.basename(d.path), d.code])).toEqual([["xmp.jpg", "secret_detected"], ["xmp.png", "secret_detected"], ["xmp.webp", "secret_detected"]]);
    for (const d of refused.media_dropped) expect(d.reason).not.toContain(token.slice(4, 12));
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
  });

  // Recall pass 32 (2026-12-06; published until then): an element's text as an XML parser gives it, a key cut by what it reads out.
  it("reads an element's text as an XML parser gives it: a key cut by a CDATA section's markers, a comment or a processing instruction is refused (JPEG, PNG, WebP, PDF, Extended XMP); CDATA's text is not decoded; markers with no end, clean packets and the packet's own wrapper are published", async () => {
    const aws = /AKIA[A-Z0-9]{16}/.exec(positives(98)["aws-access-key-id"]!)![0];
    const READ = /\(its text as an XML parser reads it\)/;
    const cuts = [
      (key: string) => `${key.slice(0, 4)}<![CDATA[${key.slice(4, 12)}]]>${key.slice(12)}`,
      (key: string) => `<![CDATA[${key.slice(0, 9)}]]>${key.slice(9)}`,
      (key: string) => `${key.slice(0, 10)}<!-- reviewed by ops -->${key.slice(10)}`,
      (key: string) => `${key.slice(0, 6)}<?php echo 1; ?>${key.slice(6)}`,
      // Both, and an entity beside them.
      (key: string) => `${key.slice(0, 3)}&#${key.charCodeAt(3)};<!---->${key.slice(4, 8)}<![CDATA[${key.slice(8)}]]>`,
    ];
    for (const key of [token, aws]) {
      for (const [i, cut] of cuts.entries()) {
        const xmp = packet(cut(key));
        for (const [label, result] of [
          ["jpg", inspected(xmpJpeg(xmp), "jpg")],
          ["png", inspected(png("XML:com.adobe.xmp", xmp, true), "png")],
          ["webp", inspected(webp(xmp), "webp")],
          ["pdf", inspected(xmpPdf(xmp, true), "pdf")],
          ["extended", inspected(withSegments(chunk(xmp, 0, xmp.length)), "jpg")],
        ] as const) {
          expect(result, `${key.slice(0, 4)} ${i} ${label}`).toMatch(/^secret_detected: /);
          expect(result, `${key.slice(0, 4)} ${i} ${label}`).toMatch(READ);
          expect(result).not.toContain(key.slice(4, 14));
        }
      }
    }
    // A CDATA section's text is not decoded (a parser gives `&#95;` there), a marker with no end cuts nothing, the wrapper is no cut.
    for (const text of [
      `${token.slice(0, 3)}<![CDATA[&#95;]]>${token.slice(4)}`,
      `${token.slice(0, 10)}<!-- ${token.slice(10)}`,
      `${token.slice(0, 10)}<![CDATA[${token.slice(10)}`,
      `${token.slice(0, 10)}<?pi ${token.slice(10)}`,
      "quarterly report <![CDATA[a & b]]> <!-- draft --> <?app x?> 2026",
    ]) {
      expect(inspected(xmpJpeg(packet(text)), "jpg"), text.slice(0, 20)).toBe("published");
    }
    expect(inspected(xmpJpeg(Buffer.from(`<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?><x:xmpmeta xmlns:x="adobe:ns:meta/"/><?xpacket end="w"?>`)), "jpg")).toBe("published");
    const refused = await judge([write(work, "cdata.jpg", xmpJpeg(packet(cuts[0]!(aws)))), write(work, "comment.pdf", xmpPdf(packet(cuts[2]!(token)), true))]);
    expect(refused.media_dropped.map((d) => [path.basename(d.path), d.code])).toEqual([["cdata.jpg", "secret_detected"], ["comment.pdf", "secret_detected"]]);
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
  });

  /** A PDF whose XMP metadata stream (/Type /Metadata, uncompressed or deflated) holds `xmp`. */
  const xmpPdf = (xmp: Buffer, deflate = false) => {
    const body = deflate ? zlib.deflateSync(xmp) : xmp;
    return pdf("Report", false, [Buffer.concat([Buffer.from(`<< /Type /Metadata /Subtype /XML /Length ${body.length}${deflate ? " /Filter /FlateDecode" : ""} >>\nstream\n`), body, Buffer.from("\nendstream")])]);
  };
  /** A little-endian TIFF of one 8-pixel strip whose IFD0 holds the XMP `xmp` in tag 700 (BYTE) and points to the next IFD at `next`. */
  const xmpTiff = (xmp: Buffer, patch: (ifd: Buffer) => void = () => {}) => {
    const entries = 4;
    const ifd = Buffer.alloc(2 + 12 * entries + 4);
    const xmpAt = 8 + ifd.length;
    const pixelsAt = xmpAt + xmp.length;
    ifd.writeUInt16LE(entries, 0);
    const tags: [number, number, number, number][] = [[256, 4, 1, 8], [257, 4, 1, 1], [273, 4, 1, pixelsAt], [700, 1, xmp.length, xmpAt]];
    tags.forEach(([tag, type, count, value], i) => {
      ifd.writeUInt16LE(tag, 2 + 12 * i);
      ifd.writeUInt16LE(type, 4 + 12 * i);
      ifd.writeUInt32LE(count, 6 + 12 * i);
      ifd.writeUInt32LE(value, 10 + 12 * i);
    });
    patch(ifd);
    return Buffer.concat([Buffer.from([0x49, 0x49, 42, 0, 8, 0, 0, 0]), ifd, xmp, Buffer.alloc(8, 0x80)]);
  };
  /** What the raw-format reader concludes of a TIFF (its bytes are scanned raw: prepare's other half). */
  const tiffInspected = (file: Buffer) => {
    const fd = fs.openSync(write(work, "read.tif", file), "r");
    try {
      return outcome(() => inspectAppendedZip(fd, file.length, "tif", NO_KNOWN_SECRETS, "tif"));
    } finally {
      fs.closeSync(fd);
    }
  };
  const XMP_UUID = Buffer.from("be7acfcb97a942e89c71999491e3afac", "hex");
  /** An mp4 (corpus's) with `xmp` where `where` says: a top-level uuid box, QuickTime's moov > udta > XMP_, or ISO's moov > meta > xml. */
  const xmpMp4 = (xmp: Buffer, where: "uuid" | "XMP_" | "meta") => {
    const base = topBoxes(mp4("a clip"));
    if (where === "uuid") return Buffer.concat([...base.map(([, whole]) => whole), box("uuid", XMP_UUID, xmp)]);
    const inner = where === "XMP_" ? box("udta", box("XMP_", xmp)) : box("meta", be32(0), box("hdlr", be32(0), be32(0), Buffer.from("mp7t"), Buffer.alloc(13)), box("xml ", be32(0), xmp));
    // The moov grows at its end; mp4's moov comes after its mdat, so no offset moves.
    return Buffer.concat(base.map(([type, whole]) => (type === "moov" ? box("moov", whole.subarray(8), inner) : whole)));
  };

  it("reads a PDF's XMP metadata stream, a TIFF's tag 700 and an mp4's XMP (uuid box, udta > XMP_, meta > xml) with their references decoded, through the one XMP reading; clean packets published; nothing left behind", async () => {
    const xmp = packet(written);
    expect(inspected(xmpPdf(xmp), "pdf")).toMatch(/^secret_detected: .*in the XMP metadata of the PDF stream at byte \d+ \(its entities decoded\)/);
    expect(inspected(xmpPdf(xmp, true), "pdf")).toMatch(/^secret_detected: .*XMP metadata of the PDF stream at byte \d+ \(its entities decoded\)/);
    expect(tiffInspected(xmpTiff(xmp))).toMatch(/^secret_detected: .*in its XMP \(tag 700\) \(its entities decoded\)/);
    // A packet of four bytes or fewer lies in the entry itself.
    expect(tiffInspected(xmpTiff(Buffer.from("&#9;"), (ifd) => ifd.writeUInt32LE(4, 6 + 36)))).toBe("published");
    expect(inspected(xmpMp4(xmp, "uuid"), "mp4")).toMatch(/^secret_detected: .*in its XMP box \(uuid\) \(its entities decoded\)/);
    expect(inspected(xmpMp4(xmp, "XMP_"), "mp4")).toMatch(/^secret_detected: .*in its XMP box \(udta > XMP_\) \(its entities decoded\)/);
    expect(inspected(xmpMp4(xmp, "meta"), "mp4")).toMatch(/^secret_detected: .*in its XML box \(meta > xml\) \(its entities decoded\)/);
    for (const text of [token.replace("_", "&#X5F;"), "quarterly report &amp; &#169; 2026 &lt;draft&gt;"]) {
      const clean = packet(text);
      expect(inspected(xmpPdf(clean, true), "pdf"), text).toBe("published");
      expect(tiffInspected(xmpTiff(clean)), text).toBe("published");
      for (const where of ["uuid", "XMP_", "meta"] as const) expect(inspected(xmpMp4(clean, where), "mp4"), `${where} ${text}`).toBe("published");
    }
    // Another uuid box's bytes are not read as XMP.
    expect(inspected(Buffer.concat([mp4("a clip"), box("uuid", Buffer.alloc(16, 1), xmp)]), "mp4")).toBe("published");

    const refused = await judge([write(work, "xmp.pdf", xmpPdf(xmp, true)), write(work, "xmp.tiff", xmpTiff(xmp)), write(work, "xmp.mp4", xmpMp4(xmp, "uuid"))]);
    expect(refused.media_dropped.map((d) => [path.basename(d.path), d.code])).toEqual([["xmp.pdf", "secret_detected"], ["xmp.tiff", "secret_detected"], ["xmp.mp4", "secret_detected"]]);
    for (const d of refused.media_dropped) expect(d.reason).not.toContain(token.slice(4, 12));
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
    const published = await judge([write(work, "clean.pdf", xmpPdf(packet("a report"), true)), write(work, "clean.tiff", xmpTiff(packet("a photo &amp; more"))), write(work, "clean.mp4", xmpMp4(packet("a clip"), "meta"))]);
    expect(published.media_dropped).toEqual([]);
  });

  it("reads what a damaged TIFF holds (an XMP or IFD past its end, more entries than it holds, IFDs that loop), since bytes past the end hide nothing: a key in it refused, a clean one published; an mp4 whose XMP box runs past its end is refused with its reason; nothing left behind", async () => {
    const damages: [string, (ifd: Buffer) => void][] = [
      ["xmp-count", (ifd) => ifd.writeUInt32LE(0x7ffffff0, 6 + 36)],
      ["ifd-count", (ifd) => ifd.writeUInt16LE(0xffff, 0)],
      ["ifd-next", (ifd) => ifd.writeUInt32LE(0x7ffffff0, 2 + 48)],
      ["ifd-loop", (ifd) => ifd.writeUInt32LE(8, 2 + 48)],
    ];
    for (const [name, damage] of damages) {
      expect(tiffInspected(xmpTiff(packet(written), damage)), name).toMatch(/^secret_detected: .*in its XMP \(tag 700\) \(its entities decoded\)/);
      expect(tiffInspected(xmpTiff(packet("a photo"), damage)), name).toBe("published");
    }
    // A second IFD after the XMP's is still walked, and its own XMP read.
    const second = xmpTiff(packet("a photo"));
    const chained = Buffer.concat([second, Buffer.alloc(2 + 12 + 4)]);
    const at = second.length;
    chained.writeUInt32LE(at, 8 + 2 + 48);
    const hidden = packet(written);
    chained.writeUInt16LE(1, at);
    chained.writeUInt16LE(700, at + 2);
    chained.writeUInt16LE(7, at + 4);
    chained.writeUInt32LE(hidden.length, at + 6);
    chained.writeUInt32LE(chained.length, at + 10);
    expect(tiffInspected(Buffer.concat([chained, hidden])), "second IFD").toMatch(/^secret_detected: /);
    // Many IFDs naming one packet read it once (a key in it still refused); packets that overlap to more bytes than the file holds are refused.
    const chain = (count: number, packet: Buffer, stride: number) => {
      const ifdAt = 8 + packet.length + stride * count;
      const ifds = Buffer.alloc(count * 18);
      for (let i = 0; i < count; i++) {
        const at = i * 18;
        ifds.writeUInt16LE(1, at);
        ifds.writeUInt16LE(700, at + 2);
        ifds.writeUInt16LE(7, at + 4);
        ifds.writeUInt32LE(packet.length, at + 6);
        ifds.writeUInt32LE(8 + stride * i, at + 10);
        ifds.writeUInt32LE(i + 1 < count ? ifdAt + at + 18 : 0, at + 14);
      }
      const head = Buffer.from([0x49, 0x49, 42, 0, 0, 0, 0, 0]);
      head.writeUInt32LE(ifdAt, 4);
      return Buffer.concat([head, packet, Buffer.alloc(stride * count), ifds]);
    };
    expect(tiffInspected(chain(2000, packet(written), 0)), "one packet, many IFDs").toMatch(/^secret_detected: .*in its XMP \(tag 700\)/);
    expect(tiffInspected(chain(2000, packet("a photo"), 0)), "one clean packet, many IFDs").toBe("published");
    expect(tiffInspected(chain(2000, packet("a photo"), 1)), "overlapping packets").toMatch(/^unscannable_content: .*its IFDs name XMP packets \(tag 700\) that overlap, more bytes in all than the file holds/);
    // A packet that lies wholly past the end is none: nothing of it is in the file.
    expect(tiffInspected(xmpTiff(packet("a photo"), (ifd) => ifd.writeUInt32LE(0x7ffffff0, 10 + 36))), "xmp-past").toBe("published");
    const uuidPast = Buffer.concat([mp4("a clip"), be32(1000), Buffer.from("uuid"), XMP_UUID, packet("a photo")]);
    expect(inspected(uuidPast, "mp4")).toMatch(/^unscannable_content: .*its uuid box runs past the end of the file/);
    const judged = await judge([write(work, "uuid-past.mp4", uuidPast), write(work, "ifd-loop.tiff", xmpTiff(packet(written), damages[3]![1]))]);
    expect(judged.media_dropped.map((d) => [path.basename(d.path), d.code])).toEqual([["uuid-past.mp4", "unscannable_content"], ["ifd-loop.tiff", "secret_detected"]]);
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
  });

  it("gives a verdict on XMP built against the decoder (a million zeros after `&#`, floods of `&#X` and `&#`; verdicts only)", () => {
    // Recall pass 32: floods of markers with and without their ends (each end looked for once past the last), and of `<`.
    for (const unit of ["&#" + "0".repeat(1_000_000), "&#" + "0".repeat(1_000_000) + "95;", "&#X", "&#", "&#x0", "&amp", "<![CDATA[", "<!--", "<?", "<?x", "<![CDATA[a]]>", "<!---->", "<?a?>", "<", "a<![CDATA[a]]]]>", "<!-- -- ->", "<![CDATA[<!--<?"]) {
      const xmp = Buffer.from(unit.repeat(Math.ceil((2 << 20) / unit.length)));
      expect(inspected(withSegments(chunk(xmp.subarray(0, 60_000), 0, xmp.length)), "jpg"), unit.slice(0, 8)).toBe("published");
      expect(inspected(png("XML:com.adobe.xmp", xmp, false), "png"), unit.slice(0, 8)).toBe("published");
      expect(inspected(webp(xmp), "webp"), unit.slice(0, 8)).toBe("published");
    }
  });
});

describe("a GIF's XMP application extension (`XMP DataXMP`: the packet raw after the identifier, then a 258-byte magic trailer; exiftool prints a key in it)", () => {
  const written = token.replace("_", "&#95;");
  const packet = (text: string) =>
    Buffer.from(`<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?><x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF><rdf:Description rdf:about=""><dc:description><rdf:Alt><rdf:li xml:lang="x-default">${"n".repeat(200)} deploy token ${text} done</rdf:li></rdf:Alt></dc:description></rdf:Description></rdf:RDF></x:xmpmeta><?xpacket end="w"?>`);
  /** 0x01, 0xFF down to 0x00, 0x00: where a reader walking sub-blocks through the packet lands, wherever it starts. */
  const TRAILER = Buffer.from([0x01, ...Array.from({ length: 256 }, (_, i) => 0xff - i), 0x00]);
  const HEAD = Buffer.from([0x21, 0xff, 11, ...Buffer.from("XMP DataXMP")]);
  /** The extension as Photoshop and exiftool write it: the packet raw, then `trailer`. */
  const rawXmp = (xmp: Buffer, trailer = TRAILER) => Buffer.concat([HEAD, xmp, trailer]);
  /** The extension with the packet in ordinary sub-blocks (no trailer), as some tools write it: up to 255 bytes each, one ending at `cutAt`. */
  const subBlockXmp = (xmp: Buffer, cutAt = xmp.length) => {
    const blocks: Buffer[] = [];
    for (const part of [xmp.subarray(0, cutAt), xmp.subarray(cutAt)]) {
      for (let at = 0; at < part.length; at += 255) blocks.push(Buffer.from([Math.min(255, part.length - at)]), part.subarray(at, at + 255));
    }
    return Buffer.concat([HEAD, ...blocks, Buffer.from([0])]);
  };
  /** A 1x1 GIF (corpus gif(): header and a two-colour table, 19 bytes) with `blocks` before its comment and image. */
  const withBlocks = (...blocks: Buffer[]) => {
    const base = gif("made by the screen recorder");
    return Buffer.concat([base.subarray(0, 19), ...blocks, base.subarray(19)]);
  };

  it("reads the packet raw, up to the magic trailer, and with its entities decoded (its sub-blocks cut the key, which was published); a clean packet published; nothing left behind", async () => {
    const plain = withBlocks(rawXmp(packet(`${token}`)));
    // Read as sub-blocks, the packet's letters are lengths: the key is cut, as the extension block read as before shows.
    expect(inspected(plain, "gif")).toMatch(/^secret_detected: .*in its XMP application extension/);
    expect(inspected(plain, "gif")).not.toMatch(/in an extension block/);
    expect(inspected(withBlocks(rawXmp(packet(written))), "gif")).toMatch(/^secret_detected: .*in its XMP application extension \(its entities decoded\)/);
    // The same packet in the file's second extension, after a loop block.
    const loop = Buffer.from([0x21, 0xff, 11, ...Buffer.from("NETSCAPE2.0"), 3, 1, 0, 0, 0]);
    expect(inspected(withBlocks(loop, rawXmp(packet("quarterly")), rawXmp(packet(written))), "gif")).toMatch(/^secret_detected: .*in its XMP application extension \(its entities decoded\)/);
    const clean = withBlocks(loop, rawXmp(packet("quarterly report &amp; &#169; 2026")));
    expect(inspected(clean, "gif")).toBe("published");
    expect(inspected(withBlocks(rawXmp(packet(token.replace("_", "&#X5F;")))), "gif")).toBe("published");

    const refused = await judge([write(work, "plain.gif", plain), write(work, "written.gif", withBlocks(rawXmp(packet(written))))]);
    expect(refused.media_dropped.map((d) => [path.basename(d.path), d.code])).toEqual([["plain.gif", "secret_detected"], ["written.gif", "secret_detected"]]);
    for (const d of refused.media_dropped) expect(d.reason).not.toContain(token.slice(4, 12));
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
    const published = await judge([write(work, "clean.gif", clean)]);
    expect(published.media_dropped).toEqual([]);
  });

  it("without the trailer reads the raw bytes to the sub-blocks' end (scanned, not refused: a packet in ordinary sub-blocks is a GIF tools write), and the sub-blocks joined as XML; a trailer past the sub-blocks' end bounds the packet; a file cut inside the trailer is refused", () => {
    // The trailer cut short (its first byte gone): the walk still ends at its last byte; no trailer is found, so the raw bytes to the walk's end are read.
    const short = withBlocks(rawXmp(packet(written), TRAILER.subarray(1)));
    expect(inspected(short, "gif")).toMatch(/^secret_detected: .*in its XMP application extension \(its entities decoded\)/);
    expect(inspected(withBlocks(rawXmp(packet("quarterly"), TRAILER.subarray(1))), "gif")).toBe("published");
    // In sub-blocks, the reference cut by a length byte (`&#9` | 5;): read joined, as a reader that walks them reads it.
    const xmp = packet(written);
    const cut = xmp.indexOf("&#95;") + 3;
    const split = withBlocks(subBlockXmp(xmp, cut));
    expect(inspected(split, "gif")).toMatch(/^secret_detected: .*in its XMP application extension's sub-blocks \(its entities decoded\)/);
    expect(inspected(withBlocks(subBlockXmp(packet(token))), "gif")).toMatch(/^secret_detected: .*in an extension block/);
    expect(inspected(withBlocks(subBlockXmp(packet("quarterly"), 100)), "gif")).toBe("published");
    expect(inspected(withBlocks(subBlockXmp(packet(token.replace("_", "&#X5F;")), cut)), "gif")).toBe("published");
    // A packet whose first bytes end the sub-blocks (3 bytes, a zero), then an image whose data runs over the rest of
    // the packet into the trailer: a reader that reads to the trailer reads the key; the image's data is not read.
    const early = Buffer.concat([HEAD, Buffer.from([3, 0x3c, 0x3f, 0x78, 0]), Buffer.from([0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0, 2, 0xf0]), Buffer.from(`<x:xmpmeta> deploy token ${token} </x:xmpmeta>`.padEnd(0xf0, " ")), TRAILER]);
    expect(inspected(withBlocks(early), "gif")).toMatch(/^secret_detected: .*in its XMP application extension/);
    // The file cut inside the trailer: its sub-blocks run past the end, damaged.
    const whole = withBlocks(rawXmp(packet("quarterly")));
    const trailerEnd = whole.indexOf(TRAILER) + TRAILER.length;
    expect(inspected(whole.subarray(0, trailerEnd - 100), "gif")).toMatch(/^unscannable_content: .*a block runs past the end of the file/);
  });

  it("gives a verdict on extensions built against the reader (megabytes of 0xFF with and without an end, trailers cut short over and over, 20,000 packets inside one whose trailer ends the file; verdicts only)", () => {
    const ff = Buffer.alloc(8 << 20, 0xff);
    // Each 0xFF a length of 255: the walk hops 256 bytes at a time to the zero after them.
    expect(inspected(withBlocks(Buffer.concat([HEAD, ff, Buffer.from([0])])), "gif")).toBe("published");
    // Without it, the walk lands in the image after them: damaged, whatever it reads there.
    expect(inspected(withBlocks(Buffer.concat([HEAD, ff])), "gif")).toMatch(/^unscannable_content: /);
    // The trailer without its last byte, 30,000 times: the walk hops from each to the next; no whole trailer anywhere.
    const shorts = Buffer.concat([HEAD, Buffer.concat(Array.from({ length: 30_000 }, () => TRAILER.subarray(0, 257))), Buffer.from([0])]);
    expect(outcome(() => inspectBinary(withBlocks(shorts), "gif", "gif", NO_KNOWN_SECRETS))).toMatch(/^(published|unscannable_content: .*)$/);
    // 20,000 XMP extensions whose sub-blocks end at once, each inside the first one's packet, which runs to a trailer after 4 MiB of image data.
    const tiny = Buffer.concat([HEAD, Buffer.from([3, 0x3c, 0x3f, 0x78, 0])]);
    const image = Buffer.concat([Buffer.from([0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0, 2]), Buffer.concat(Array.from({ length: 16_384 }, () => Buffer.concat([Buffer.from([0xff]), Buffer.alloc(255, 0x61)]))), Buffer.from([0xf0]), Buffer.alloc(0xf0, 0x61), TRAILER]);
    expect(inspected(withBlocks(...Array.from({ length: 20_000 }, () => tiny), image), "gif")).toBe("published");
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

describe("text tracks (subtitles) in mp4 and mov", () => {
  const full = (...data: Buffer[]) => Buffer.concat([be32(0), ...data]);
  const be16 = (n: number) => Buffer.from([n >> 8, n & 0xff]);
  type Layout = { handler?: string; format?: string; perChunk?: number; co64?: boolean; stz2?: boolean; fixedSize?: boolean; moovLast?: boolean; mvex?: boolean };
  /** A cue as a sample of `format`: tx3g and QuickTime text, a 16-bit length then the text; WebVTT, a vttc box holding a payl box. */
  /** A byte of CEA-608 with its odd parity bit (the top bit set when the other seven hold an even number of ones). */
  const parity = (c: number) => (c.toString(2).split("1").length % 2 === 1 ? c | 0x80 : c);
  /** A caption as CEA-608 byte pairs, as ffmpeg writes an .scc line: control pairs (resume caption loading, a row's place) doubled, the text, end of caption doubled. */
  const cc608 = (text: string) => Buffer.from([0x94, 0x20, 0x94, 0x20, 0x94, 0x52, 0x94, 0x52, ...Buffer.from(text.length % 2 ? `${text} ` : text).map(parity), 0x94, 0x2f, 0x94, 0x2f]);
  const cueSample = (text: string, format: string) => (format === "c608" ? box("cdat", cc608(text)) : format === "wvtt" ? box("vttc", box("payl", Buffer.from(text))) : format === "stpp" ? Buffer.from(`<tt><p>${text}</p></tt>`) : Buffer.concat([be16(Buffer.byteLength(text)), Buffer.from(text)]));
  const table32 = (values: number[]) => {
    const t = Buffer.alloc(4 * values.length);
    values.forEach((v, i) => t.writeUInt32BE(v, 4 * i));
    return t;
  };
  const hdlr = (handler: string) => box("hdlr", full(be32(0), Buffer.from(handler, "latin1"), Buffer.alloc(12), Buffer.from("Handler\0")));
  /** A trak whose samples (`sizes`) lie in chunks at `offsets`, `perChunk` to a chunk. */
  const trak = (handler: string, format: string, sizes: number[], offsets: number[], l: Layout) => {
    const stsd = box("stsd", full(be32(1), box(format, Buffer.alloc(30))));
    const stsz = l.stz2 ? box("stz2", full(Buffer.from([0, 0, 0, 8]), be32(sizes.length), Buffer.from(sizes))) : l.fixedSize ? box("stsz", full(be32(sizes[0]!), be32(sizes.length))) : box("stsz", full(be32(0), be32(sizes.length), table32(sizes)));
    const stsc = box("stsc", full(be32(1), be32(1), be32(l.perChunk ?? 1), be32(1)));
    const stco = l.co64 ? box("co64", full(be32(offsets.length), table32(offsets.flatMap((o) => [0, o])))) : box("stco", full(be32(offsets.length), table32(offsets)));
    return box("trak", box("tkhd", full(Buffer.alloc(80))), box("mdia", box("mdhd", full(Buffer.alloc(20))), hdlr(handler), box("minf", box("stbl", stsd, stsz, stsc, stco))));
  };
  /**
   * A movie with a video track (one sample, `video`) and a text track of
   * `cues`, its samples in mdat after the video's: one chunk each, or
   * `perChunk` to a chunk.
   */
  const movie = (cues: string[], l: Layout = {}, video = Buffer.alloc(2000, 0x11)) => {
    const format = l.format ?? "tx3g";
    const samples = cues.map((c) => cueSample(c, format));
    const perChunk = l.perChunk ?? 1;
    const ftyp = l.handler === "sbtl" || l.handler === undefined ? QT_FTYP : box("ftyp", Buffer.from("isom"), be32(0), Buffer.from("isommp41"));
    const build = (mdatAt: number) => {
      const offsets: number[] = [];
      for (let i = 0, at = mdatAt + 8 + video.length; i < samples.length; i += perChunk) {
        offsets.push(at);
        for (const s of samples.slice(i, i + perChunk)) at += s.length;
      }
      return box("moov", box("mvhd", full(Buffer.alloc(96))), ...(l.mvex ? [box("mvex", box("trex", full(Buffer.alloc(20))))] : []), trak("vide", "avc1", [video.length], [mdatAt + 8], {}), trak(l.handler ?? "sbtl", format, samples.map((s) => s.length), offsets, l));
    };
    const mdat = box("mdat", video, ...samples);
    if (l.moovLast) return Buffer.concat([ftyp, mdat, build(ftyp.length)]);
    const size = build(0).length;
    return Buffer.concat([ftyp, build(ftyp.length + size), mdat]);
  };
  const ext = (l: Layout) => (l.handler === "sbtl" || l.handler === undefined ? "mov" : "mp4");

  it("reads the text of every text track's samples (mov_text/tx3g, WebVTT, QuickTime text, TTML) through its sample table, in each layout; publishes clean subtitles; never reads the video's samples", async () => {
    const layouts: [string, Layout, RegExp][] = [
      ["mov_text in a mov", {}, /in its text track 2 \(sbtl\)/],
      ["mov_text in an mp4 (ffmpeg -c:s mov_text)", { handler: "sbtl" }, /text track 2 \(sbtl\)/],
      ["WebVTT in an mp4", { handler: "subt", format: "wvtt" }, /text track 2 \(subt\)/],
      ["TTML in an mp4", { handler: "subt", format: "stpp" }, /text track 2 \(subt\)/],
      ["QuickTime text", { handler: "text", format: "text" }, /text track 2 \(text\)/],
      ["three cues to a chunk", { perChunk: 3 }, /text track 2/],
      ["64-bit chunk offsets", { co64: true }, /text track 2/],
      ["8-bit sizes (stz2)", { stz2: true }, /text track 2/],
      ["the moov after the media data", { moovLast: true }, /text track 2/],
      // A text format under a handler that is no text one (ffmpeg shows it as subtitles): named by its format.
      ["mov_text with the handler subp", { handler: "subp" }, /text track 2 \(tx3g\)/],
      ["mov_text with the handler clcp", { handler: "clcp" }, /text track 2 \(tx3g\)/],
      ["WebVTT with the handler meta", { handler: "meta", format: "wvtt" }, /text track 2 \(wvtt\)/],
      ["CEA-608 captions (ffmpeg from an .scc)", { handler: "clcp", format: "c608" }, /text track 2 \(c608\)/],
    ];
    for (const [what, l, where] of layouts) {
      const cues = ["Hello there", "the build is green", `deploy token ${token}`, "bye"];
      expect(inspected(movie(cues, l), ext(l)), what).toMatch(new RegExp(`^secret_detected: .*${where.source}`));
      expect(inspected(movie(["Hello there", "the build is green"], l), ext(l)), what).toBe("published");
    }
    // One size for every sample (stsz's sample_size): cues of one length.
    expect(inspected(movie([`deploy ${token}`, `deploy ${token.replace(/./g, "x")}`], { fixedSize: true }), "mov")).toMatch(/^secret_detected: .*text track 2/);
    // CEA-608 captions sent two characters to a sample (as broadcast captions are): joined across samples, the control pairs skipped.
    const pairs = (t: string) => t.match(/.{1,2}/g)!;
    expect(inspected(movie(pairs(`deploy ${token}`), { handler: "clcp", format: "c608" }), "mp4")).toMatch(/^secret_detected: .*text track 2 \(c608\)/);
    expect(inspected(movie(pairs("Hello there, the build is green"), { handler: "clcp", format: "c608" }), "mp4")).toBe("published");
    // A track whose handler and format are no text ones (picture subtitles, mp4s under subp) is not read.
    expect(inspected(movie([`deploy token ${token}`], { handler: "subp", format: "mp4s" }), "mp4")).toBe("published");
    // A key in a video sample is not looked for (the media data is not read), as before.
    expect(inspected(movie(["Hello"], {}, Buffer.from(` ${token} `)), "mov")).toBe("published");
    // A cue's length whose last byte is a letter does not hide the key it runs into.
    const lengthIsLetter = `${token} ${"x".repeat(0x67 - token.length - 1)}`;
    expect(Buffer.byteLength(lengthIsLetter)).toBe(0x67);
    expect(inspected(movie([lengthIsLetter]), "mov")).toMatch(/^secret_detected: .*text track 2/);
    // Nor does a WebVTT cue's box type (payl) run into a key that opens the cue.
    expect(inspected(movie([token], { handler: "subt", format: "wvtt" }), "mp4")).toMatch(/^secret_detected: .*text track 2/);

    // Through prepare, with the Hermes .env's own value in a caption.
    const value = "Hx7Kp2Qm9Zr4Tv8WnB3cY6dL1fJ5gS0a";
    fs.mkdirSync(path.join(h.home, ".hermes"), { recursive: true, mode: 0o700 });
    write(path.join(h.home, ".hermes"), ".env", `MY_SERVICE_TOKEN=${value}\n`);
    const refused = await judge([write(work, "captions.mov", movie(["Hello", `service token ${value}`])), write(work, "webvtt.mp4", movie([`deploy ${token}`], { handler: "subt", format: "wvtt" }))]);
    expect(refused.media_dropped.map((d) => [d.code, d.reason.includes(value)])).toEqual([["secret_detected", false], ["secret_detected", false]]);
    expect(refused.media_dropped[0]!.reason).toContain("MY_SERVICE_TOKEN");
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
    const published = await judge([write(work, "clean.mov", movie(["Hello there", "the build is green"])), write(work, "clean.mp4", movie(["Hello"], { handler: "subt", format: "wvtt" }))]);
    expect(published.media_dropped).toEqual([]);
  });

  it("reads a text track inside a compressed movie header (cmov) too", () => {
    const plain = movie([`deploy ${token}`]);
    const boxes = topBoxes(plain);
    const moov = boxes.find(([type]) => type === "moov")![1];
    const deflated = zlib.deflateSync(moov);
    const cmov = box("moov", box("cmov", box("dcom", Buffer.from("zlib")), box("cmvd", be32(moov.length), deflated)));
    // The mdat keeps its offsets: the compressed header padded to the moov's size with a free box.
    const padded = Buffer.concat([cmov, box("free", Buffer.alloc(moov.length - cmov.length - 8))]);
    expect(padded.length).toBe(moov.length);
    const file = Buffer.concat(boxes.map(([type, whole]) => (type === "moov" ? padded : whole)));
    expect(inspected(file, "mov")).toMatch(/^secret_detected: .*text track 2 \(sbtl\)/);
  });

  it("refuses a sample index past its bounds or the file (a huge sample count, sizes past 16 MiB, chunk offsets past the end, tables cut short), each with its reason; stays linear on a crafted index; nothing left behind", async () => {
    const clean = movie(["Hello there", "bye"]);
    /** `clean` with its text track's table `type` given `data` (the same size), and the rest as it is. */
    const patched = (type: string, edit: (file: Buffer, at: number) => void) => {
      const file = Buffer.from(clean);
      const at = file.lastIndexOf(type, undefined, "latin1") + 4;
      edit(file, at);
      return file;
    };
    const cases: [string, Buffer, RegExp][] = [
      // stsz: one size for all, and 4,294,967,295 samples.
      ["count.mov", patched("stsz", (f, at) => (f.writeUInt32BE(5, at + 4), f.writeUInt32BE(0xffffffff, at + 8))), /its text tracks hold more than 100,000 samples \(text track 2 \(sbtl\) among them\), more than this check reads/],
      ["sizes.mov", patched("stsz", (f, at) => f.writeUInt32BE(0x7fffffff, at + 12)), /its text tracks' samples hold more than 16 MiB \(text track 2 \(sbtl\) among them\)/],
      ["offset.mov", patched("stco", (f, at) => f.writeUInt32BE(clean.length - 3, at + 8)), new RegExp(`its text track 2 \\(sbtl\\)'s samples at byte ${clean.length - 3} run past the end of the file`)],
      ["co-count.mov", patched("stco", (f, at) => f.writeUInt32BE(1_000_000, at + 4)), /its text track 2 \(sbtl\)'s stco box lists 1000000 entries, more than it holds/],
      ["sz-count.mov", patched("stsz", (f, at) => f.writeUInt32BE(50, at + 8)), /its text track 2 \(sbtl\)'s stsz box lists 50 entries, more than it holds/],
    ];
    for (const [name, file, why] of cases) expect(inspected(file, "mov"), name).toMatch(new RegExp(`^unscannable_content: .*${why.source}`));
    const refused = await judge(cases.map(([name, file]) => write(work, name, file)));
    expect(refused.media_dropped.map((d) => [path.basename(d.path), d.code])).toEqual(cases.map(([name]) => [name, "unscannable_content"]));
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);

    // 100,000 one-byte cues, one chunk each: read (the bound is not passed); one more is refused.
    const many = movie(Array.from({ length: 100_000 }, () => ""), { fixedSize: true });
    expect(inspected(many, "mov")).toBe("published");
    expect(inspected(movie(Array.from({ length: 100_001 }, () => ""), { fixedSize: true }), "mov")).toMatch(/^unscannable_content: .*more than 100,000 samples/);
    // A sample-to-chunk table that puts 4,294,967,295 samples in each chunk, and 2,000,000 chunks: the samples the sizes count are read, no more.
    const crafted = Buffer.concat([QT_FTYP, box("moov", trak("sbtl", "tx3g", [5, 5], Array.from({ length: 2_000_000 }, () => 8), { perChunk: 0xffffffff }))]);
    expect(inspected(crafted, "mov")).toBe("published");
    // No sample in any of its 2,000,000 chunks: each chunk looked at once.
    const empty = Buffer.concat([QT_FTYP, box("moov", trak("sbtl", "tx3g", [5, 5], Array.from({ length: 2_000_000 }, () => 8), { perChunk: 0 }))]);
    expect(inspected(empty, "mov")).toBe("published");
  });

  it("reads a movie's samples as before when it also has fragment defaults (mvex) and no fragment: it was refused as a fragmented movie", () => {
    expect(inspected(movie(["Hello", `deploy ${token}`], { mvex: true }), "mov")).toMatch(/^secret_detected: .*text track 2 \(sbtl\)/);
    expect(inspected(movie(["Hello"], { mvex: true }), "mov")).toBe("published");
  });
});

describe("text tracks (subtitles) in WebM and Matroska", () => {
  /** A Matroska element: its ID, its size (8 bytes; all bits set when `unknown`), its data. */
  const ebml = (id: number, body: Buffer, unknown = false) => {
    const size = Buffer.alloc(8);
    if (unknown) size.fill(0xff, 1);
    else size.writeBigUInt64BE(BigInt(body.length));
    size[0] = 0x01;
    return Buffer.concat([Buffer.from(id.toString(16).padStart(id > 0xffffff ? 8 : id > 0xffff ? 6 : id > 0xff ? 4 : 2, "0"), "hex"), size, body]);
  };
  const str = (id: number, text: string) => ebml(id, Buffer.from(text));
  const uint = (id: number, n: number) => ebml(id, Buffer.from([n]));
  /** A block's data: its track number (a one-byte variable-length integer), a timecode, flags, the frame. */
  const block = (track: number, frame: Buffer) => Buffer.concat([Buffer.from([0x80 | track, 0, 0, 0x80]), frame]);
  /** A vint of two bytes holding `n` (below 16,383). */
  const vint2 = (n: number) => Buffer.from([0x40 | (n >> 8), n & 0xff]);
  /** A laced block's data: the track, a timecode, flags with the lacing (1 Xiph, 2 fixed, 3 EBML), the frame count less one, the sizes of all but the last frame, the frames. */
  const lacedBlock = (track: number, frames: Buffer[], lacing: 1 | 2 | 3) => {
    const sized = frames.slice(0, -1);
    const sizes =
      lacing === 2
        ? []
        : lacing === 1
          ? sized.map((f) => Buffer.from([...Array<number>(Math.floor(f.length / 255)).fill(255), f.length % 255]))
          : sized.map((f, i) => (i === 0 ? vint2(f.length) : vint2(f.length - sized[i - 1]!.length + 8191)));
    return Buffer.concat([Buffer.from([0x80 | track, 0, 0, 0x80 | (lacing << 1), frames.length - 1]), ...sizes, ...frames]);
  };
  type Opts = { codec?: string; encoding?: Buffer; tracksLast?: boolean; sized?: boolean; group?: boolean; encode?: (frame: Buffer) => Buffer; laced?: 1 | 2 | 3; perBlock?: number };
  /**
   * A WebM/Matroska file with a video track (1) and a text track (2) of
   * `codec`, and a cluster holding a video block (`video`) and the cues,
   * each a SimpleBlock, or a Block in a BlockGroup (`group`).
   */
  const mkv = (cues: string[], o: Opts = {}, video = Buffer.alloc(500, 0x77)) => {
    const header = ebml(0x1a45dfa3, Buffer.concat([uint(0x4286, 1), str(0x4282, o.codec?.startsWith("S_") ? "matroska" : "webm")]));
    const info = ebml(0x1549a966, str(0x7ba9, "a recording"));
    const tracks = ebml(0x1654ae6b, Buffer.concat([
      ebml(0xae, Buffer.concat([uint(0xd7, 1), uint(0x83, 1), str(0x86, "V_VP9")])),
      ebml(0xae, Buffer.concat([uint(0xd7, 2), uint(0x83, 0x11), str(0x86, o.codec ?? "D_WEBVTT/SUBTITLES"), ...(o.encoding ? [ebml(0x6d80, o.encoding)] : [])])),
    ]));
    const frames = cues.map((c) => (o.encode ?? ((f: Buffer) => f))(Buffer.from(c)));
    const data = o.laced ? Array.from({ length: Math.ceil(frames.length / (o.perBlock ?? frames.length)) }, (_, i) => lacedBlock(2, frames.slice(i * (o.perBlock ?? frames.length), (i + 1) * (o.perBlock ?? frames.length)), o.laced!)) : frames.map((f) => block(2, f));
    const blocks = data.map((d) => (o.group ? ebml(0xa0, Buffer.concat([ebml(0xa1, d), uint(0x9b, 10)])) : ebml(0xa3, d)));
    const cluster = ebml(0x1f43b675, Buffer.concat([uint(0xe7, 0), ebml(0xa3, block(1, video)), ...blocks]), !o.sized);
    const tags = ebml(0x1254c367, ebml(0x7373, ebml(0x67c8, Buffer.concat([str(0x45a3, "COMMENT"), str(0x4487, "recorded")]))));
    const body = o.tracksLast ? [info, cluster, tracks, tags] : [info, tracks, cluster, tags];
    return Buffer.concat([header, ebml(0x18538067, Buffer.concat(body), !o.sized)]);
  };
  const compression = (algo: number, settings?: Buffer) => ebml(0x6240, ebml(0x5034, Buffer.concat([uint(0x4254, algo), ...(settings ? [ebml(0x4255, settings)] : [])])));

  it("reads the frames of S_TEXT and WebVTT tracks (SimpleBlock and BlockGroup, clusters of unknown size, Tracks after the clusters, zlib and header stripping); publishes clean subtitles; never reads the video's blocks", async () => {
    const cases: [string, Opts, string][] = [
      ["WebVTT in a WebM (ffmpeg -c:s webvtt)", {}, "webm"],
      ["SRT in a Matroska file", { codec: "S_TEXT/UTF8" }, "mkv"],
      ["ASS in a BlockGroup", { codec: "S_TEXT/ASS", group: true }, "mkv"],
      // Matroska's old IDs for ASS and SSA (ffmpeg reads both as ASS), one padded with NULs as EBML strings may be; Kate.
      ["S_ASS", { codec: "S_ASS" }, "mkv"],
      ["S_SSA padded with NULs", { codec: "S_SSA\0\0\0\0\0" }, "mkv"],
      ["S_KATE", { codec: "S_KATE" }, "mkv"],
      ["sizes known", { sized: true }, "webm"],
      ["Tracks after the clusters", { tracksLast: true, sized: true }, "webm"],
      ["zlib (mkvmerge --compression 2:zlib)", { codec: "S_TEXT/UTF8", encoding: compression(0), encode: (f) => zlib.deflateSync(f) }, "mkv"],
      // Compression of the codec's private data only (scope 2): the frames are as they are.
      ["compressed private data", { codec: "S_TEXT/ASS", encoding: ebml(0x6240, Buffer.concat([uint(0x5032, 2), ebml(0x5034, uint(0x4254, 0))])) }, "mkv"],
      // Each frame's first 16 bytes are the track's: the key's head among them.
      ["header stripping", { codec: "S_TEXT/UTF8", encoding: compression(3, Buffer.from("deploy token ghp")), encode: (f) => f.subarray(16) }, "mkv"],
    ];
    for (const [what, o, ext] of cases) {
      expect(inspected(mkv(["Hello there", `deploy token ${token}`], o), ext), what).toMatch(/^secret_detected: .*in its text track 2, at byte \d+ of it/);
      expect(inspected(mkv(["Hello there", "deploy token quarterly"], o), ext), what).toBe("published");
    }
    // The video's blocks are not read, as before.
    expect(inspected(mkv(["Hello"], {}, Buffer.from(` ${token} `)), "webm")).toBe("published");
    // Laced blocks are split into their frames: a lace size that is a letter (0x41 "A"; 255 + 0x41 as a Xiph run) is not glued to the key after it, nor one frame's last letter to the next.
    const laced: [string, string[], Opts][] = [
      ["Xiph lacing", [`${token} is the deploy token`.padEnd(0x41, "."), "Rotate it"], { laced: 1 }],
      ["Xiph lacing, a size past 255", [`${token} is the deploy token`.padEnd(255 + 0x41, "."), "Rotate it"], { laced: 1 }],
      ["EBML lacing", ["Hello there", `${token} is the deploy token`.padEnd(0x41, "."), "Rotate it"], { laced: 3, group: true }],
      ["fixed-size lacing", ["abcdefghij".padEnd(token.length + 1, "x"), `${token} `], { laced: 2 }],
    ];
    for (const [what, cues, o] of laced) {
      expect(inspected(mkv(cues, { codec: "S_TEXT/UTF8", sized: true, ...o }), "mkv"), what).toMatch(/^secret_detected: .*in its text track 2/);
      expect(inspected(mkv(cues.map((c) => c.replace(token, "deploy")), { codec: "S_TEXT/UTF8", sized: true, ...o }), "mkv"), what).toBe("published");
    }
    // zlib-compressed laced frames, each inflated alone.
    expect(inspected(mkv(["Hello", `deploy token ${token}`], { codec: "S_TEXT/UTF8", encoding: compression(0), encode: (f) => zlib.deflateSync(f), laced: 1 }), "mkv")).toMatch(/^secret_detected: .*in its text track 2/);
    // A track that is no text (S_HDMV/PGS: pictures) is not read.
    expect(inspected(mkv([`deploy token ${token}`], { codec: "S_HDMV/PGS" }), "mkv")).toBe("published");

    const refused = await judge([write(work, "captions.webm", mkv([`deploy token ${token}`])), write(work, "captions.mkv", mkv([`deploy token ${token}`], { codec: "S_TEXT/UTF8" }))]);
    expect(refused.media_dropped.map((d) => d.code)).toEqual(["secret_detected", "secret_detected"]);
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
    const published = await judge([write(work, "clean.webm", mkv(["Hello there"])), write(work, "clean.mkv", mkv(["Hello there"], { codec: "S_TEXT/UTF8" }))]);
    expect(published.media_dropped).toEqual([]);
  });

  /**
   * A Blu-ray TextST dialog presentation segment (as mkvmerge puts one in
   * a block): its descriptor, two times, a palette update (a 5-byte entry)
   * when `palette`, one region whose data is `text`'s pieces between `|`
   * as text entries with a font style change between two, `\n` a line
   * break entry. `patch` edits the segment after it is made.
   */
  const textst = (text: string, palette = true, patch: (s: Buffer) => void = () => {}) => {
    const entries = text.split("\n").map((line) => Buffer.concat(line.split("|").map((piece, i) => Buffer.concat([...(i > 0 ? [Buffer.from([0x1b, 0x03, 1, 0x01])] : []), Buffer.from([0x1b, 0x01, Buffer.byteLength(piece)]), Buffer.from(piece)]))));
    const data = Buffer.concat(entries.flatMap((e, i) => (i > 0 ? [Buffer.from([0x1b, 0x0a, 0]), e] : [e])));
    const body = Buffer.concat([Buffer.from([0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0x20]), Buffer.from([palette ? 0x80 : 0]), ...(palette ? [Buffer.from([0, 5, 1, 0x10, 0x80, 0x80, 0xff])] : []), Buffer.from([1, 0, 0, data.length >> 8, data.length & 0xff]), data]);
    const segment = Buffer.concat([Buffer.from([0x82, body.length >> 8, body.length & 0xff]), body]);
    patch(segment);
    return segment;
  };
  const textstMkv = (frames: Buffer[]) => mkv(frames.map((_, i) => String(i)), { codec: "S_HDMV/TEXTST", encode: (f) => frames[Number(f.toString())]! });

  it("reads a Blu-ray TextST track's text (S_HDMV/TEXTST: its text entries, a style change between two joined); publishes clean subtitles; nothing left behind", async () => {
    const half = token.length >> 1;
    // The key cut by a style change: its bytes never hold it whole.
    const cut = textst(`Hello there\ndeploy token ${token.slice(0, half)}|${token.slice(half)}`);
    expect(cut.includes(token)).toBe(false);
    expect(inspected(textstMkv([textst("Hello"), cut]), "mkv")).toMatch(/^secret_detected: .*in its text track 2/);
    expect(inspected(textstMkv([textst(`no palette ${token.slice(0, half)}|${token.slice(half)}`, false)]), "mkv")).toMatch(/^secret_detected: .*in its text track 2/);
    expect(inspected(textstMkv([textst("Hello there\nthe build|is green"), textst("bye", false)]), "mkv")).toBe("published");
    const refused = await judge([write(work, "textst.mkv", textstMkv([cut]))]);
    expect(refused.media_dropped.map((d) => [d.code, d.reason.includes(token)])).toEqual([["secret_detected", false]]);
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
    const published = await judge([write(work, "clean-textst.mkv", textstMkv([textst("Hello there|, friend")]))]);
    expect(published.media_dropped).toEqual([]);
  });

  it("refuses a TextST frame whose lengths run past its end, or that is no dialog presentation segment, with its reason; nothing left behind", async () => {
    const why = /its text track 2's block at byte \d+ is no TextST dialog presentation segment, or one whose lengths run past its end/;
    const cases: [string, Buffer][] = [
      ["segment-size.mkv", textstMkv([textst("Hello", true, (s) => s.writeUInt16BE(0xffff, 1))])],
      ["palette.mkv", textstMkv([textst("Hello", true, (s) => s.writeUInt16BE(0xfff0, 14))])],
      // The region's data length (after its flags and style), past the segment.
      ["region.mkv", textstMkv([textst("Hello", false, (s) => s.writeUInt16BE(0xfff0, 17))])],
      // The text entry's length (after 0x1B and its type), past the region.
      ["entry.mkv", textstMkv([textst("Hello", false, (s) => (s[21] = 0xf0))])],
      ["regions.mkv", textstMkv([textst("Hello", false, (s) => (s[14] = 200))])],
      ["style-segment.mkv", textstMkv([textst("Hello", false, (s) => (s[0] = 0x81))])],
    ];
    for (const [name, file] of cases) expect(inspected(file, "mkv"), name).toMatch(new RegExp(`^unscannable_content: .*${why.source}`));
    const refused = await judge(cases.map(([name, file]) => write(work, name, file)));
    expect(refused.media_dropped.map((d) => [path.basename(d.path), d.code])).toEqual(cases.map(([name]) => [name, "unscannable_content"]));
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
  });

  it("refuses an encoding it does not read, more text blocks or bytes than its bounds, and a damaged cluster, each with its reason; nothing left behind", async () => {
    const many = (n: number) => mkv(Array.from({ length: n }, () => "a"), { sized: true });
    const cases: [string, Buffer, RegExp][] = [
      ["bzlib.mkv", mkv(["Hello"], { codec: "S_TEXT/UTF8", encoding: compression(1) }), /its text track 2's frames are compressed with method 1, which this check does not read/],
      ["encrypted.mkv", mkv(["Hello"], { codec: "S_TEXT/UTF8", encoding: ebml(0x6240, ebml(0x5035, uint(0x47e1, 5))) }), /its text track 2's frames are encrypted or damaged/],
      ["encryption-type.mkv", mkv(["Hello"], { codec: "S_TEXT/UTF8", encoding: ebml(0x6240, uint(0x5033, 1)) }), /its text track 2's frames are encrypted or damaged/],
      ["twice.mkv", mkv(["Hello"], { codec: "S_TEXT/UTF8", encoding: Buffer.concat([compression(0), compression(3)]) }), /encoded more than once or damaged/],
      ["many.webm", many(100_001), /its text tracks hold more than 100,000 samples \(text track 2 among them\)/],
      ["large.webm", mkv(["x".repeat(9 << 20), "y".repeat(9 << 20)], { sized: true }), /its text tracks' samples hold more than 16 MiB/],
      ["damaged.webm", (() => {
        const file = mkv(["Hello"], { sized: true });
        // The first block's size made to run past its cluster.
        const at = file.indexOf(Buffer.from([0xa3, 0x01]), file.indexOf(Buffer.from([0x1f, 0x43, 0xb6, 0x75])));
        file.writeUInt32BE(0x00ffffff, at + 5);
        return file;
      })(), /its cluster at byte \d+ is damaged/],
    ];
    /** A file whose one text block holds `data` after its flags, laced by `lacing`. */
    const badLace = (lacing: number, data: Buffer) => {
      const file = mkv(["x".repeat(data.length)], { codec: "S_TEXT/UTF8", sized: true });
      const at = file.indexOf("x".repeat(data.length));
      file[at - 1] = 0x80 | (lacing << 1);
      data.copy(file, at);
      return file;
    };
    const lacing: [string, Buffer, RegExp][] = [
      // Two frames, the first 200 bytes long, in 10 bytes.
      ["xiph-size.mkv", badLace(1, Buffer.from([1, 200, ...Buffer.alloc(8, 0x61)])), /its text track 2's block at byte \d+ has lace sizes that do not fit it/],
      // 256 frames whose first size is a run of 255s through the whole block (1 MiB): refused once the run ends the data, each byte looked at once.
      ["xiph-run.mkv", badLace(1, Buffer.concat([Buffer.from([255]), Buffer.alloc(1 << 20, 255)])), /has lace sizes that do not fit it/],
      ["ebml-negative.mkv", badLace(3, Buffer.from([2, 0x82, 0x80, ...Buffer.alloc(8, 0x61)])), /has lace sizes that do not fit it/],
      ["fixed-uneven.mkv", badLace(2, Buffer.from([2, ...Buffer.alloc(10, 0x61)])), /has lace sizes that do not fit it/],
      // 391 blocks of 256 empty frames: each frame counts as a sample.
      ["laced-many.mkv", mkv(Array.from({ length: 391 * 256 }, () => ""), { codec: "S_TEXT/UTF8", sized: true, laced: 1, perBlock: 256 }), /its text tracks hold more than 100,000 samples/],
    ];
    cases.push(...lacing);
    for (const [name, file, why] of cases) expect(inspected(file, name.slice(name.indexOf(".") + 1)), name).toMatch(new RegExp(`^unscannable_content: .*${why.source}`));
    expect(inspected(many(100_000), "webm")).toBe("published");
    expect(inspected(mkv(Array.from({ length: 390 * 256 }, () => ""), { codec: "S_TEXT/UTF8", sized: true, laced: 1, perBlock: 256 }), "mkv")).toBe("published");
    const refused = await judge(cases.map(([name, file]) => write(work, name, file)));
    expect(refused.media_dropped.map((d) => [path.basename(d.path), d.code])).toEqual(cases.map(([name]) => [name, "unscannable_content"]));
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
  });
});

describe("text tracks in a fragmented mp4 (moof > traf > tfhd, trun: ffmpeg -movflags frag_keyframe+empty_moov; the red team's 30b/10)", () => {
  const full = (...data: Buffer[]) => Buffer.concat([be32(0), ...data]);
  const flagged = (flags: number, ...data: Buffer[]) => Buffer.concat([be32(flags), ...data]);
  const be16 = (n: number) => Buffer.from([n >> 8, n & 0xff]);
  /** How the fragments place their samples: an absolute base (ffmpeg's default), the moof as base (default_base_moof), or nothing (each traf's data after the one before). */
  type Base = "absolute" | "moof" | "none";
  type Frag = { base?: Base; format?: string; sizes?: "trun" | "tfhd" | "trex"; cueLength?: number };
  /** An empty-moov track: its tkhd (track ID `id`), its handler and its one sample description, no samples. */
  const emptyTrak = (id: number, handler: string, format: string) =>
    box("trak", box("tkhd", Buffer.from([0, 0, 0, 3]), be32(0), be32(0), be32(id), Buffer.alloc(68)), box("mdia", box("mdhd", full(Buffer.alloc(20))), box("hdlr", full(be32(0), Buffer.from(handler, "latin1"), Buffer.alloc(12), Buffer.from("Handler\0"))), box("minf", box("stbl", box("stsd", full(be32(1), box(format, Buffer.alloc(30)))), box("stts", full(be32(0))), box("stsc", full(be32(0))), box("stsz", full(be32(0), be32(0))), box("stco", full(be32(0)))))));
  const cueSample = (text: string, format: string) => (format === "wvtt" ? box("vttc", box("payl", Buffer.from(text))) : Buffer.concat([be16(Buffer.byteLength(text)), Buffer.from(text)]));
  const VIDEO = Buffer.alloc(300, 0x11);
  /** A track fragment of track `id` whose one sample of `size` bytes lies at `offset` (from its base, per `base`), its size where `sizes` says. */
  const traf = (id: number, size: number, base: Base, baseAt: number, offset: number | undefined, sizes: "trun" | "tfhd" | "trex") => {
    const tfhdFlags = (base === "absolute" ? 0x01 : 0) | (sizes === "tfhd" ? 0x10 : 0) | (base === "moof" ? 0x20000 : 0);
    const tfhd = box("tfhd", flagged(tfhdFlags, be32(id), ...(base === "absolute" ? [be32(0), be32(baseAt)] : []), ...(sizes === "tfhd" ? [be32(size)] : [])));
    const trunFlags = (offset === undefined ? 0 : 0x01) | 0x100 | (sizes === "trun" ? 0x200 : 0);
    const trun = box("trun", flagged(trunFlags, be32(1), ...(offset === undefined ? [] : [be32(offset)]), be32(1000), ...(sizes === "trun" ? [be32(size)] : [])));
    return box("traf", tfhd, box("tfdt", full(be32(0))), trun);
  };
  /** A fragment (moof, then mdat: the video's sample, then the cue's) at `at` in the file. */
  const fragment = (cue: Buffer, at: number, f: Frag) => {
    const base = f.base ?? "absolute";
    const sizes = f.sizes ?? "trun";
    const build = (moofSize: number) => {
      const dataAt = at + moofSize + 8;
      // Offsets from the base: the moof's start (moof, and a first traf with none), or the file's start (absolute, baseAt 0).
      const videoOffset = base === "absolute" ? dataAt : dataAt - at;
      const textOffset = base === "none" ? undefined : videoOffset + VIDEO.length;
      return box("moof", box("mfhd", full(be32(1))), traf(1, VIDEO.length, base, 0, videoOffset, "trun"), traf(2, cue.length, base, 0, textOffset, sizes));
    };
    const moof = build(build(0).length);
    return Buffer.concat([moof, box("mdat", VIDEO, cue)]);
  };
  /** A fragmented mp4 (empty moov with mvex; one fragment per cue) of a video track (1) and a text track (2). */
  const fragmented = (cues: string[], f: Frag = {}) => {
    const format = f.format ?? "tx3g";
    const samples = cues.map((c) => cueSample(f.cueLength ? c.padEnd(f.cueLength) : c, format));
    const ftyp = box("ftyp", Buffer.from("isom"), be32(0x200), Buffer.from("isomiso6mp41"));
    const trex = (id: number, size: number) => box("trex", full(be32(id), be32(1), be32(0), be32(size), be32(0)));
    const moov = box("moov", box("mvhd", full(Buffer.alloc(96))), emptyTrak(1, "vide", "avc1"), emptyTrak(2, format === "wvtt" ? "text" : "sbtl", format), box("mvex", trex(1, 0), trex(2, f.sizes === "trex" ? samples[0]!.length : 0)));
    const parts = [ftyp, moov];
    let at = ftyp.length + moov.length;
    for (const sample of samples) {
      const part = fragment(sample, at, f);
      parts.push(part);
      at += part.length;
    }
    return Buffer.concat(parts);
  };

  it("reads the text samples through each fragment's track runs, however the fragments place them; publishes clean subtitles; never reads the video's samples; nothing left behind", async () => {
    const layouts: [string, Frag][] = [
      ["an absolute base data offset (ffmpeg's default)", {}],
      ["the moof as base (default_base_moof)", { base: "moof" }],
      ["no base, no data offset: each track fragment's data after the one before", { base: "none" }],
      ["sizes in tfhd", { sizes: "tfhd", cueLength: 60 }],
      ["sizes in trex", { sizes: "trex", cueLength: 60 }],
      ["WebVTT", { format: "wvtt" }],
    ];
    for (const [what, f] of layouts) {
      expect(inspected(fragmented(["Hello there", `deploy token ${token}`, "bye"], f), "mp4"), what).toMatch(/^secret_detected: .*in its text track 2 \((sbtl|text)\)/);
      expect(inspected(fragmented(["Hello there", "the build is green"], f), "mp4"), what).toBe("published");
    }
    // A key cut over two fragments' cues is read whole: the track's text is one text, as for a movie that is not fragmented.
    const half = token.length >> 1;
    expect(inspected(fragmented([`deploy ${token.slice(0, half)}`, token.slice(half)]), "mp4")).toMatch(/^secret_detected: .*text track 2/);
    const refused = await judge([write(work, "fragmented.mp4", fragmented(["Hello", `deploy token ${token}`]))]);
    expect(refused.media_dropped.map((d) => [d.code, d.reason.includes(token)])).toEqual([["secret_detected", false]]);
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
    const published = await judge([write(work, "clean.mp4", fragmented(["Hello there", "the build is green"], { base: "moof" }))]);
    expect(published.media_dropped).toEqual([]);
  });

  it("refuses a track run past its box or the file, a track fragment header cut short, and more samples than the bound, each with its reason; stays linear on a crafted run; nothing left behind", async () => {
    const clean = fragmented(["Hello there", "bye"]);
    /** `clean` with its last box of `type` edited (the text track's: its traf is the moof's last). */
    const patched = (type: string, edit: (file: Buffer, at: number) => void) => {
      const file = Buffer.from(clean);
      edit(file, file.lastIndexOf(type, undefined, "latin1") + 4);
      return file;
    };
    const cases: [string, Buffer, RegExp][] = [
      ["run-count.mp4", patched("trun", (f, at) => f.writeUInt32BE(1_000_000, at + 4)), /the trun box of text track 2 \(sbtl\)'s fragment in movie fragment at byte \d+ lists 1000000 samples, more than it holds/],
      ["run-offset.mp4", patched("trun", (f, at) => f.writeUInt32BE(0x7ffffff0, at + 8)), /its text track 2 \(sbtl\)'s fragment in movie fragment at byte \d+'s samples at byte \d+ run past the end of the file/],
      ["base-offset.mp4", patched("tfhd", (f, at) => f.writeUInt32BE(7, at + 8)), /samples at byte \d+ run past the end of the file/],
      ["run-size.mp4", patched("trun", (f, at) => f.writeUInt32BE(0xffffffff, at + 16)), /run past the end of the file/],
      ["tfhd-cut.mp4", patched("tfhd", (f, at) => f.writeUInt32BE(0x3b, at)), /the tfhd box of a track fragment of its movie fragment at byte \d+ is cut short/],
      // A run of 4,294,967,295 samples of trex's default size, none listed: refused by the sample bound, never walked.
      ["run-many.mp4", patched("trun", (f, at) => (f.writeUInt32BE(0x000001, at), f.writeUInt32BE(0xffffffff, at + 4))), /its text tracks hold more than 100,000 samples/],
      // The text track's tkhd renamed: no fragment can name it.
      ["no-tkhd.mp4", (() => {
        const file = Buffer.from(clean);
        file.write("free", file.indexOf("tkhd", file.indexOf("tkhd") + 4, "latin1"), "latin1");
        return file;
      })(), /its text track 2 \(sbtl\) has no track header \(tkhd\) giving the track ID its movie fragments name it by/],
    ];
    for (const [name, file, why] of cases) expect(inspected(file, "mp4"), name).toMatch(new RegExp(`^unscannable_content: .*${why.source}`));
    const refused = await judge(cases.map(([name, file]) => write(work, name, file)));
    expect(refused.media_dropped.map((d) => [path.basename(d.path), d.code])).toEqual(cases.map(([name]) => [name, "unscannable_content"]));
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
    // 20,000 fragments of an empty cue each: read.
    expect(inspected(fragmented(Array.from({ length: 20_000 }, () => "")), "mp4")).toBe("published");
  });
});
