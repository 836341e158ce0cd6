// Archives no reader here inflates, inside a file of a format that goes
// out (src/content/hidden-archives.ts): after a PDF's %EOF, an audio
// file's last frame, in a WAV chunk, an mp4's free box, a zip entry, a
// picture inside a docx, a PDF's attachment, a TIFF's bytes. 7-Zip extracts
// them from there (7z, xz, Zstandard, bzip2, Cabinet: measured with 7-Zip
// 26.02), cabextract a Cabinet anywhere, unrar a RAR after up to 4 MiB.
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { bytesSource, fileSource } from "../src/content/byte-source.js";
import { inspectBinary, inspectFile } from "../src/content/carriers.js";
import { type RawSearch, SCANNED_HEAD, findInFile, needlesBefore } from "../src/content/hidden-archives.js";
import { NO_KNOWN_SECRETS } from "../src/content/known.js";
import { docx, flac, jpeg, makePng, mp3, mp4, ogg, pdf, pdfAttachment, rng, tar, tiffWithXpComment, wav, webm, zip } from "./corpus.js";
import { NOTHING_LEFT, cli, leftBehind, makeHome, outcome, write } from "./helpers.js";

let h: ReturnType<typeof makeHome>;
let work: string;
beforeEach(() => {
  h = makeHome();
  work = h.work;
});
afterEach(() => h.cleanup());

/**
 * Notes with a fake GitHub token (41 lines and 20 more), compressed by the
 * real tools: `7zz a` (7-Zip 26.02), `xz` (XZ Utils 5.4.1), `zstd` (1.5.4),
 * `bzip2` (1.0.8), `gcab -c -z` (1.5, MSZIP). None holds the token as it is.
 */
const REAL: Record<string, Buffer> = {
  "7-Zip": Buffer.from("N3q8ryccAARpDTqg3gAAAAAAAABaAAAAAAAAADi8YCngBdcA1l0ANhpKHwigK7FtBp34sqWsrgs/8FF0Vt9Z8NBde8UAZVX7V1nG5K/jSjgThW48+4yLTUNdk19dHBRU1xuHRuPmHw5lMCSwRVxonloWM8WE/lzYwKpmGfUfLlqDSvTl1pMtYrFOtoidqpKGqx5J6bAX/zDAA5DeByQWhzyt7B426q8m3IpYrXDesWZVNAcAXoiWYQQ2pncUO4FioTMd36Nzj+DVdT0jhSCp3gFOcoFwu3UD5Es60UawWFvttqpSa/3tWBOxlwYByGQ+aCq86BAETXfEcrpLAAABBAYAAQmA3gAHCwEAASEhAQAMhdgACAoBU+v73gAABQEZCgAAAAAAAAAAAAARFQBuAG8AdABlAHMALgB0AHgAdAAAABQKAQAyDzdjX4TdARUGAQAggKSBAAA=", "base64"),
  xz: Buffer.from("/Td6WFoAAATm1rRGAgAhARYAAAB0L+Wj4AXXANddADYaSh8IoCuxbQad+LKlrK4LP/BRdFbfWfDQXXvFAGVV+1dZxuSv40o4E4VuPPuMi01DXZNfXRwUVNcbh0bj5h8OZTAksEVcaJ5aFjPFhP5c2MCqZhn1Hy5ag0r05daTLWKxTraInaqShqseSemwF/8wwAOQ3gckFoc8reweNuqvJtyKWK1w3rFmVTQHAF6IlmEENqZ3FDuBYqEzHd+jc4/g1XU9I4Ugqd4BTnKBcLt1A+RLOtFGsFhb7baqUmv97VgTsZcGAchkPmgqvOgQBRM8pPzuIMAAAAAqN+ZlryraUQAB8wHYCwAATeiGgrHEZ/sCAAAAAARZWg==", "base64"),
  Zstandard: Buffer.from("KLUv/WTYBO0HANLJISIwpWwOHLZ5j0T+NUxEb5Yl3yjDqs2L3SPQlhlw1IMCCwUDybtt27afnYZZFLi3y2KVblJZq0jySIhO8RGsxSDbstCsqJoIAD4KpMxxBAwwBoI3KA27BtEBYkhUYUJIiQfu7u7u7v7///+2bdt+dhpmUeA+2WKl011T1hgzF7HqLOrs4pQCATsgYKOSHRnIgoF8F8jMAlkqkI8CmU0giwTyRSAzwdEe4riDOeQ4B3OIOG6I46yFOQzDCHMYxgjmMIwRzDEMI5hjGEaYwzCMMEeGlYQREpgbGcNEykgIzIGMYR9lxAPmOsYwgGELZXghG8rwQiaUEi4vDCcG1hoM", "base64"),
  bzip2: Buffer.from("QlpoOTFBWSZTWROEomIAAdpfgAAQQAB/4jb9l6C77+xQMAEqrAp6jUzaqaZAAADRkepiAaeqZUAPUAAaaAAAAqVU0xMJtRhMJgjNEyZM01L8tE0IqcE+GiJVVVVUzta1jJdwAAAAAAAAAABMgZkCAAAPCTISTLokmVS4TnOc6aaYkuJJJMCS8kkmYwhCELGMY1hMXOOd+YBIkky0RIiUDMqYkRDsy6xIiHXCJEQ7g7vTDgiP3I4Ij+YQBEqmpq+9pcvHOVd19tkfchXKu79Ke3IxkU8O5H8IpEdaBFZJKBHwI+vQR3qtiKtngR5kk/CK8Qj1IrsiMBG4IsCKfIRYIoEc8dV0R4tkXRFwRZEcCOm//F3JFOFCQE4SiYg=", "base64"),
  "Microsoft Cabinet": Buffer.from("TVNDRgAAAABIAQAAAAAAACwAAAAAAAAAAwEBAAEAAAAAAAAARgAAAAEAAQDYBQAAAAAAAAAAhV25EiAAbm90ZXMudHh0AFWllYL6ANgFQ0t9071Ow0AQBODeT3GP4Nl1/FNQgEABgoKEHBBVFKJLfCK2g3IF4ukR5RRMOZriRp/2TmmKAWE+hDzEMMaY03QM05zjpTj9dSY6F10luoXoatE1omtF14kOpSqVDBQNlA0UDpQOFA+UDxQQlJApIZO3o4RMCZkSMiVkSsiUkCkhU0KuhFwJufxeSsiVkCshV0KuhFwJuRKq/hFaPvT3m5tt/7y6W18dh/P2xb5vm6/P127sf96qj3W7f8T5qb68D364LuNmXqVlsdvnNE8h5TgGUDJKTqmitKBUU2ootZQ6fr3kyGvAc8B7wIPAi8CTwJvAo8CrrCx+AQ==", "base64"),
};

const le16 = (n: number) => Buffer.from([n & 0xff, n >> 8]);
const le32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n >>> 0);
  return b;
};
const vint = (n: number) => {
  const out: number[] = [];
  for (; n >= 0x80; n = Math.floor(n / 128)) out.push((n & 0x7f) | 0x80);
  return Buffer.from([...out, n]);
};

/** A RAR 4 archive storing `data` as notes.deflate (marker, main header, file header, end): libarchive 3.6 (bsdtar) and unar 1.10 extract it. */
function rar4(data: Buffer): Buffer {
  const block = (body: Buffer) => Buffer.concat([le16(zlib.crc32(body) & 0xffff), body]);
  const name = Buffer.from("notes.deflate");
  const file = Buffer.concat([Buffer.from([0x74]), le16(0x8000), le16(32 + name.length), le32(data.length), le32(data.length), Buffer.from([3]), le32(zlib.crc32(data)), le32(0x5a000000), Buffer.from([20, 0x30]), le16(name.length), le32(0x81a4), name]);
  return Buffer.concat([Buffer.from("Rar!\x1a\x07\x00", "latin1"), block(Buffer.from([0x73, 0, 0, 13, 0, 0, 0, 0, 0, 0, 0])), block(file), data, block(Buffer.from([0x7b, 0, 0x40, 7, 0]))]);
}

/** A RAR 5 archive storing `data` as notes.deflate: libarchive 3.6 (bsdtar) extracts it. */
function rar5(data: Buffer): Buffer {
  const header = (body: Buffer) => {
    const sized = Buffer.concat([vint(body.length), body]);
    return Buffer.concat([le32(zlib.crc32(sized)), sized]);
  };
  const name = Buffer.from("notes.deflate");
  const file = Buffer.concat([vint(2), vint(2), vint(data.length), vint(4), vint(data.length), vint(0o644), le32(zlib.crc32(data)), vint(0), vint(1), vint(name.length), name]);
  return Buffer.concat([Buffer.from("Rar!\x1a\x07\x01\x00", "latin1"), header(Buffer.from([1, 0, 0])), header(file), data, header(Buffer.from([5, 0, 0]))]);
}

const notes = zlib.gunzipSync(zlib.gzipSync(Buffer.from(`${Array.from({ length: 40 }, (_, i) => `line ${i + 1} of the meeting notes`).join("\n")}\nGITHUB_TOKEN=ghp_R2xD7qkV9mTzW4bN8cJ1pL6sYh3fA0eUoKiG\n`)));
// Stored, its data a raw deflate stream (no signature any unpacker looks for: a gzip member would be found as one).
const ARCHIVES: Record<string, Buffer> = { ...REAL, "RAR 4": rar4(zlib.deflateRawSync(notes)), "RAR 5": rar5(zlib.deflateRawSync(notes)), gzip: zlib.gzipSync(notes) };
/** The name each kind is refused under (RAR 4 and 5 are one kind). */
const kindOf = (name: string) => (name.startsWith("RAR") ? "RAR" : name);

function noise(n: number, seed: number): Buffer {
  const random = rng(seed);
  return Buffer.from(Array.from({ length: n }, () => Math.floor(random() * 256)));
}
const be32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};

/** The files that go out, each with `archive` where an unpacker finds it, by extension: `archive` empty gives the clean twin. */
const CARRIERS: Record<string, (archive: Buffer) => [string, Buffer]> = {
  "after %%EOF": (a) => ["pdf", Buffer.concat([pdf("Quarterly report"), a])],
  "between bytes after %%EOF": (a) => ["pdf", Buffer.concat([pdf("Quarterly report"), noise(3000, 1), a, noise(500, 2)])],
  "a PDF's attachment": (a) => ["pdf", pdfAttachment(Buffer.concat([noise(300, 3), a]))],
  "an MP3's tail": (a) => ["mp3", Buffer.concat([mp3("note", false, 8000), a])],
  "an Ogg's tail": (a) => ["ogg", Buffer.concat([ogg("note"), a])],
  "a FLAC's tail": (a) => ["flac", Buffer.concat([flac("note"), a])],
  "a WebM's tail": (a) => ["webm", Buffer.concat([webm("note", { sized: true }), a])],
  "a WAV chunk": (a) => {
    const chunk = Buffer.concat([Buffer.from("junk"), le32(a.length + 100), noise(100, 4), a, Buffer.alloc(a.length % 2)]);
    const file = Buffer.concat([wav("note"), chunk]);
    file.writeUInt32LE(file.length - 8, 4);
    return ["wav", file];
  },
  "an mp4's free box": (a) => ["mp4", Buffer.concat([mp4("note"), be32(8 + 200 + a.length), Buffer.from("free"), noise(200, 5), a])],
  "a zip entry no reader knows": (a) => ["zip", zip({ "data.bin": Buffer.concat([noise(300, 6), a, noise(50, 7)]) })],
  "a picture's tail in a docx": (a) => ["docx", docx("Report", 3, { "word/media/image1.png": Buffer.concat([makePng(8, (i) => i), a]) })],
  "a TIFF's bytes": (a) => ["tiff", Buffer.concat([tiffWithXpComment("note"), a])],
};

function prepareJson(files: string[]) {
  const r = cli(["prepare", "--json", "--allow", "pdf,mp3,ogg,flac,webm,wav,mp4,zip,docx,tiff", ...files], { env: h.env, cwd: work });
  return JSON.parse(r.stdout) as { media: { name: string }[]; media_dropped: { path: string; code: string; reason: string }[] };
}


describe("archives no reader here inflates, inside a file that goes out", () => {
  it("refuses each kind in each carrier through prepare (unscannable_content, naming the part and the kind; a gzip file just after a picture in a docx read as one), publishes the clean twins, leaves nothing behind", () => {
    const files: string[] = [];
    const expected: [string, string][] = [];
    for (const [where, make] of Object.entries(CARRIERS)) {
      for (const [kind, archive] of Object.entries(ARCHIVES)) {
        const [ext, bytes] = make(archive);
        const name = `${where}-${kind}`.replace(/[^a-z0-9]+/gi, "-");
        files.push(write(work, `${name}.${ext}`, bytes));
        expected.push([`${name}.${ext}`, kindOf(kind)]);
      }
    }
    const report = prepareJson(files);
    expect(report.media).toEqual([]);
    // A gzip file just after a picture's end, where no refusal of trailing bytes comes first (inside a docx), is read as one.
    const readGzip = "a-picture-s-tail-in-a-docx-gzip.docx";
    expect(report.media_dropped.map((d) => [path.basename(d.path), d.code, d.reason])).toEqual(
      expected.map(([name, kind]) =>
        name === readGzip
          ? [name, "secret_detected", expect.stringMatching(/looks like a GitHub token \(in the file it compresses of the \d+ bytes after its end \(the IEND chunk\) of word\/media\/image1\.png, at byte \d+ of it\)/)]
          : [name, "unscannable_content", expect.stringMatching(new RegExp(`an archive compressed with ${kind} starts in .+ \\(at byte \\d+ of (it|the file)\\): this check does not read it`))],
      ),
    );
    for (const d of report.media_dropped) expect(d.reason).not.toContain("ghp_");
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);

    const clean = Object.entries(CARRIERS).map(([where, make]) => {
      const [ext, bytes] = make(Buffer.alloc(0));
      return write(work, `clean-${where.replace(/[^a-z0-9]+/gi, "-")}.${ext}`, bytes);
    });
    const published = prepareJson(clean);
    expect(published.media_dropped).toEqual([]);
    expect(leftBehind(h).outbox).toHaveLength(clean.length);
  });

  it("names where the archive starts: the part, and the byte of the file", () => {
    const host = pdf("Quarterly report");
    expect(outcome(() => inspectBinary(Buffer.concat([host, ARCHIVES["7-Zip"]!]), "pdf", "pdf", NO_KNOWN_SECRETS))).toMatch(
      new RegExp(`^unscannable_content: .*an archive compressed with 7-Zip starts in its bytes \\(at byte ${host.length} of the file\\)`),
    );
    expect(outcome(() => inspectBinary(zip({ "logs/data.bin": Buffer.concat([Buffer.from("head"), ARCHIVES.xz!]) }), "zip", "zip", NO_KNOWN_SECRETS))).toMatch(/^unscannable_content: .*compressed with xz starts in logs\/data\.bin \(at byte 4 of it\)/);
  });

  it("publishes text that names bzip2's magic (all ASCII: `BZh91AY&SY`), in a document's text and as a PDF's bytes; refuses the real stream after it", () => {
    const prose = "A bzip2 stream opens BZh91AY&SY \u2014 the block magic \u2014 then the block's CRC.";
    expect(outcome(() => inspectBinary(docx(prose), "docx", "docx", NO_KNOWN_SECRETS))).toBe("published");
    expect(outcome(() => inspectBinary(pdf(prose), "pdf", "pdf", NO_KNOWN_SECRETS))).toBe("published");
    expect(outcome(() => inspectBinary(Buffer.concat([pdf("Quarterly report"), Buffer.from(`%${prose}\n`)]), "pdf", "pdf", NO_KNOWN_SECRETS))).toBe("published");
    expect(outcome(() => inspectBinary(Buffer.concat([pdf(prose), ARCHIVES.bzip2!]), "pdf", "pdf", NO_KNOWN_SECRETS))).toMatch(/^unscannable_content: .*compressed with bzip2/);
  });

  it("publishes bytes that hold a signature without the header that must follow it (random bytes, a damaged header), and a real one whose header is damaged", () => {
    const host = pdf("Quarterly report");
    const signatures = ["377abcaf271c", "526172211a0700", "526172211a070100", "fd377a585a00", "425a6839", "28b52ffd", "4d5343460000000000"].map((hex) => Buffer.from(hex, "hex"));
    for (const [i, signature] of signatures.entries()) {
      for (let seed = 0; seed < 20; seed++) {
        const file = Buffer.concat([host, signature, noise(200, 100 * i + seed)]);
        expect(outcome(() => inspectBinary(file, "pdf", "pdf", NO_KNOWN_SECRETS)), `${signature.toString("hex")} ${seed}`).toBe("published");
      }
    }
    // One byte of what each check reads changed: 7z's start header, xz's stream flags, RAR's main header, bzip2's block magic, a Cabinet's reserved field.
    const damaged: [string, number][] = [["7-Zip", 20], ["xz", 9], ["RAR 4", 15], ["RAR 5", 12], ["bzip2", 5], ["Microsoft Cabinet", 13]];
    for (const [kind, at] of damaged) {
      const archive = Buffer.from(ARCHIVES[kind]!);
      archive[at] = archive[at]! ^ 0x10;
      expect(outcome(() => inspectBinary(Buffer.concat([host, archive]), "pdf", "pdf", NO_KNOWN_SECRETS)), kind).toBe("published");
    }
    // Zstandard has no header checksum: x86 code that compares the magic (libzstd's, libLLVM's) has a valid first block header,
    // and the block that follows, inside the bytes, is of the reserved type.
    const code = Buffer.from(`28b52ffd7509c745fc010000${"00".repeat(62)}060000${"90".repeat(100)}`, "hex");
    expect(outcome(() => inspectBinary(Buffer.concat([host, code]), "pdf", "pdf", NO_KNOWN_SECRETS))).toBe("published");
    // A Zstandard frame cut short is refused, inside a block or after whole ones: 7-Zip writes out what it decodes of it.
    const frame = ARCHIVES.Zstandard!;
    expect(outcome(() => inspectBinary(Buffer.concat([host, frame.subarray(0, 40)]), "pdf", "pdf", NO_KNOWN_SECRETS))).toMatch(/^unscannable_content: .*compressed with Zstandard/);
    // Raw blocks of 1,000 bytes in a 1 KiB window (window descriptor 0), the frame cut after the second.
    const rawBlock = (last: boolean, seed: number) => Buffer.concat([Buffer.from([(1000 << 3) & 0xff | (last ? 1 : 0), (1000 << 3) >> 8, 0]), noise(1000, seed)]);
    const cut = Buffer.concat([Buffer.from("28b52ffd0000", "hex"), rawBlock(false, 8), rawBlock(false, 9)]);
    expect(outcome(() => inspectBinary(Buffer.concat([host, cut]), "pdf", "pdf", NO_KNOWN_SECRETS))).toMatch(/^unscannable_content: .*compressed with Zstandard/);
    expect(outcome(() => inspectBinary(Buffer.concat([host, cut, rawBlock(true, 10)]), "pdf", "pdf", NO_KNOWN_SECRETS))).toMatch(/^unscannable_content: .*compressed with Zstandard/);
  });

  it("judges a signature repeated for megabytes in linear time: 7z, Cabinet and Zstandard signatures without their headers are published, RAR headers whose length the file gives past its own are refused", () => {
    const host = pdf("Quarterly report");
    const repeated = (unit: Buffer, bytes = 4 << 20) => Buffer.concat([host, Buffer.concat(Array.from({ length: Math.ceil(bytes / unit.length) }, () => unit))]);
    expect(outcome(() => inspectBinary(repeated(Buffer.from("377abcaf271c0004", "hex")), "pdf", "pdf", NO_KNOWN_SECRETS))).toBe("published");
    expect(outcome(() => inspectBinary(repeated(Buffer.from("MSCF\0\0\0\0", "latin1")), "pdf", "pdf", NO_KNOWN_SECRETS))).toBe("published");
    expect(outcome(() => inspectBinary(repeated(Buffer.from("28b52ffd20ff020000", "hex")), "pdf", "pdf", NO_KNOWN_SECRETS))).toBe("published");
    expect(outcome(() => inspectBinary(repeated(Buffer.from("BZh9", "latin1")), "pdf", "pdf", NO_KNOWN_SECRETS))).toBe("published");
    // Each marker followed by a main header that says it is 65,000 bytes long: its CRC would be computed over them once per marker.
    const rar = Buffer.concat([Buffer.from("Rar!\x1a\x07\x00", "latin1"), Buffer.from([0, 0, 0x73, 0, 0]), le16(65000), Buffer.alloc(4)]);
    expect(outcome(() => inspectBinary(repeated(rar), "pdf", "pdf", NO_KNOWN_SECRETS))).toMatch(/^unscannable_content: .*holds more archive signatures, with headers to check, than this check reads/);
    // A gzip header 7-Zip takes and deflate data that decodes a few bytes, then fails at the next header: each one inflated.
    const gzip = Buffer.concat([Buffer.from("1f8b08000000000000ff", "hex"), zlib.deflateRawSync(Buffer.from("abc"), { finishFlush: zlib.constants.Z_SYNC_FLUSH })]);
    expect(outcome(() => inspectBinary(repeated(gzip), "pdf", "pdf", NO_KNOWN_SECRETS))).toMatch(/^unscannable_content: .*holds more archive signatures, with headers to check, than this check reads/);
    // A comment (FCOMMENT) that no NUL ends, every 30 bytes: each one searched for its end.
    const comment = Buffer.concat([Buffer.from("1f8b0810010101010203", "hex"), Buffer.alloc(20, 0x61)]);
    expect(outcome(() => inspectBinary(repeated(comment), "pdf", "pdf", NO_KNOWN_SECRETS))).toMatch(/^unscannable_content: .*holds more archive signatures, with headers to check, than this check reads/);
  });
});

/**
 * Notes with the same fake token, small enough for a GIF's sub-block and
 * without a 0xFF byte (a JPEG's scan data stuffs each with a NUL), made by
 * the real tools: `7zz a` (7-Zip 26.02), `xz` (5.4.1), `zstd -19` (1.5.4,
 * 20 lines: fewer leave the token in raw literals), `bzip2` (1.0.8), `gcab
 * -c -z` (1.5), `gzip -n` (1.12); RAR 4 and 5 as above, storing the notes
 * deflated. Each one 7-Zip (and, for RAR, 7-Zip built with its RAR code)
 * extracted from every carrier below, the token whole.
 */
const SMALL: Record<string, Buffer> = {
  "7-Zip": Buffer.from("N3q8ryccAAT+NN46bgAAAAAAAABaAAAAAAAAAB7YE5HgAN0AZl0ANhpKHwigK7FtBp34sqWsrgs/8FF0Vt9Z8NBde8UAZVX7V1nG5K/jSjgThWv7kCobEa6LhUXOpES6DftHHbTFQ9gwQeJamLAvwhbFA4juGte2maFq8z4krVl+FdaIav0Ve1rG0toAAAEEBgABCW4ABwsBAAEhIQEADIDeAAgKAb8cLR8AAAUBGQsAAAAAAAAAAAAAABEVAG4AbwB0AGUAcwAuAHQAeAB0AAAAFAoBAGE42IVvhN0BFQYBACCApIEAAA==", "base64"),
  xz: Buffer.from("/Td6WFoAAATm1rRGAgAhARYAAAB0L+Wj4ADdAGZdADYaSh8IoCuxbQad+LKlrK4LP/BRdFbfWfDQXXvFAGVV+1dZxuSv40o4E4Vr+5AqGxGui4VFzqREug37Rx20xUPYMEHiWpiwL8IWxQOI7hrXtpmhavM+JK1ZfhXWiGr9FXtaxtLaAAAAALq83Ar9VugqAAGCAd4BAAAj7ARqscRn+wIAAAAABFla", "base64"),
  Zstandard: Buffer.from("KLUv/WRxAf0DAHJGGBhA9xECgA0E4Z3CkrUscrKGZbMCx7GQRgTA8ZcO6nO4rJ9AzHhUsXRTXWnk246yLxdifSjPY0JjLA6nCAjhyTHr1hkH11Y66dYZB9dWAOxhx0mM+2Hvm+w+lFcnqezc1wIUqBDo638H0HMDEBrhf0bMe9kbNzgFy5gHJAXYo/0B", "base64"),
  bzip2: Buffer.from("QlpoOTFBWSZTWUwtbJAAAEpfgAAQQAB/4jb9l6Cb7+xQIABkMlQNGagaA0PUHpPKafqmyEGUgTJhGCYIwmEYE3qkqUIrALwWZ9E9DHg06eaNSCOQNq7uSd1/qyr30sfGSwmX6kVrtwhRa5bgfIKsBwBYDuB+TAyuzAxbeDjBSsFPoNwBUDeoF4H9GkQKRg9AVwUu/i7kinChIJha2SA=", "base64"),
  "Microsoft Cabinet": Buffer.from("TVNDRgAAAAC2AAAAAAAAACwAAAAAAAAAAwEBAAEAAAAAAAAARgAAAAEAAQDeAAAAAAAAAAAAhV0qIiAAbm90ZXMudHh0ACbSfl9oAN4AQ0vLycxLVTBUyE9TKMlIVchNTS3JzEtXyMsvSS3mygHJGeGRM8YjZ4JHzhSPnBl2OXfPEI9Qp/gQf29XP9v0jIL4IKMKF/PC7DDL3JCqcJMkP4tkL8MCH7PiyAzjNEeD1NB870x3LgA=", "base64"),
  gzip: Buffer.from("H4sIAAAAAAAAA8vJzEtVMFTIT1MoyUhVyE1NLcnMS1fIyy9JLebKAckZ4ZEzxiNngkfOFI+cGXY5d88Qj1Cn+BB/b1c/2/SMgvggowoX88LsMMvckKpwkyQ/i2QvwwIfs+LIDOM0R4PU0HzvTHcuAL8cLR/eAAAA", "base64"),
};
const smallNotes = zlib.gunzipSync(SMALL.gzip!);
SMALL["RAR 4"] = rar4(zlib.deflateRawSync(smallNotes));
SMALL["RAR 5"] = rar5(zlib.deflateRawSync(smallNotes));

/** `n` random bytes, fast (xorshift), none of them 0xFF (a JPEG's scan data would end there). */
function randomBytes(n: number, seed: number): Buffer {
  const out = Buffer.allocUnsafe(n);
  let x = seed | 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = (x >>> 0) % 255;
  }
  return out;
}
const riffChunk = (id: string, data: Buffer) => Buffer.concat([Buffer.from(id, "latin1"), le32(data.length), data, Buffer.alloc(data.length % 2)]);
const riff = (form: string, chunks: Buffer[]) => {
  const body = Buffer.concat([Buffer.from(form, "latin1"), ...chunks]);
  return Buffer.concat([Buffer.from("RIFF"), le32(body.length), body]);
};
const pngChunk = (type: string, data: Buffer) => Buffer.concat([be32(data.length), Buffer.from(type, "latin1"), data, be32(zlib.crc32(Buffer.concat([Buffer.from(type, "latin1"), data])))]);

/**
 * The data each format's reader skips, holding `data`: an mp4's mdat, a
 * PNG's pixels (each row unfiltered, deflated as stored blocks, so that
 * they lie in its IDAT as they are: a real picture), a JPEG's scan, a
 * GIF's LZW sub-blocks, a WebP's VP8 frame, a BMP's pixels, MPEG audio
 * frames (before the last 128 KiB, which are read), FLAC frames (the
 * same), an Ogg audio packet, a WebM block, a WAV's samples, an AVI's
 * movi list, a PDF's image.
 */
const MEDIA: Record<string, (data: Buffer) => [string, Buffer]> = {
  "an mp4's mdat": (d) => ["mp4", mp4("note", Buffer.concat([randomBytes(4000, 1), d, randomBytes(3000, 2)]))],
  "a PNG's IDAT": (d) => {
    const width = 400;
    const rows = Buffer.concat([randomBytes(1200, 3), d, randomBytes(3 * width - ((1200 + d.length) % (3 * width)) + 6 * width, 4)]);
    const raw = Buffer.concat(Array.from({ length: rows.length / (3 * width) }, (_, y) => Buffer.concat([Buffer.from([0]), rows.subarray(y * 3 * width, (y + 1) * 3 * width)])));
    const ihdr = Buffer.concat([be32(width), be32(rows.length / (3 * width)), Buffer.from([8, 2, 0, 0, 0])]);
    return ["png", Buffer.concat([Buffer.from("89504e470d0a1a0a", "hex"), pngChunk("IHDR", ihdr), pngChunk("IDAT", zlib.deflateSync(raw, { level: 0 })), pngChunk("IEND", Buffer.alloc(0))])];
  },
  "a JPEG's scan data": (d) => {
    const image = jpeg();
    const eoi = image.length - 2;
    return ["jpg", Buffer.concat([image.subarray(0, eoi), randomBytes(500, 5), d, randomBytes(300, 6), image.subarray(eoi)])];
  },
  "a GIF's frame": (d) => {
    const subBlocks = Buffer.concat([Buffer.from([255]), randomBytes(255, 7), d.length > 0 ? Buffer.concat([Buffer.from([d.length]), d]) : Buffer.alloc(0), Buffer.from([20]), randomBytes(20, 8), Buffer.from([0])]);
    return ["gif", Buffer.concat([Buffer.from("GIF89a"), le16(16), le16(16), Buffer.from([0x80, 0, 0, 0, 0, 0, 255, 255, 255, 0x2c]), le16(0), le16(0), le16(16), le16(16), Buffer.from([0, 2]), subBlocks, Buffer.from([0x3b])])];
  },
  "a WebP's frame": (d) => ["webp", riff("WEBP", [riffChunk("VP8 ", Buffer.concat([Buffer.from("9d012a", "hex"), randomBytes(700, 9), d, randomBytes(300, 10)]))])],
  "a BMP's pixels": (d) => {
    const pixels = Buffer.concat([randomBytes(1000, 11), d, randomBytes(64 * 64 * 3 - 1000 - d.length, 12)]);
    const dib = Buffer.concat([le32(40), le32(64), le32(64), le16(1), le16(24), le32(0), le32(pixels.length), le32(0), le32(0), le32(0), le32(0)]);
    return ["bmp", Buffer.concat([Buffer.from("BM"), le32(54 + pixels.length), le32(0), le32(54), dib, pixels])];
  },
  "MP3 frames": (d) => {
    const song = mp3("note", false, 400);
    const frame = song.length - 400 * 417 + 10 * 417;
    return ["mp3", Buffer.concat([song.subarray(0, frame + 4), d, song.subarray(frame + 4 + d.length)])];
  },
  "FLAC frames": (d) => ["flac", flac("note", Buffer.concat([Buffer.from([0xff, 0xf8, 0x69, 0x08]), randomBytes(20000, 13), d, randomBytes(200_000, 14)]))],
  "an Ogg audio packet": (d) => ["ogg", ogg("note", { audio: [randomBytes(300, 15), Buffer.concat([randomBytes(500, 16), d, randomBytes(200, 17)])] })],
  "a WebM block": (d) => ["webm", webm("note", { sized: true, blocks: [randomBytes(500, 18), Buffer.concat([randomBytes(100, 19), d, randomBytes(100, 20)])] })],
  "a WAV's samples": (d) => ["wav", wav("note", Buffer.concat([randomBytes(1000, 21), d, randomBytes(1000, 22)]))],
  "an AVI's movi": (d) => {
    const hdrl = riffChunk("LIST", Buffer.concat([Buffer.from("hdrl"), riffChunk("avih", Buffer.alloc(56))]));
    const movi = riffChunk("LIST", Buffer.concat([Buffer.from("movi"), riffChunk("00dc", Buffer.concat([randomBytes(800, 23), d, randomBytes(400, 24)]))]));
    return ["avi", riff("AVI ", [hdrl, movi])];
  },
  "a PDF's image": (d) => {
    const image = Buffer.concat([randomBytes(900, 25), d, randomBytes(600, 26)]);
    return ["pdf", pdf("Quarterly report", false, [Buffer.concat([Buffer.from(`<< /Type /XObject /Subtype /Image /Width 20 /Height 20 /BitsPerComponent 8 /ColorSpace /DeviceRGB /Filter /DCTDecode /Length ${image.length} >>\nstream\n`), image, Buffer.from("\nendstream")])])];
  },
};
const MEDIA_ALLOW = "mp4,png,jpg,gif,webp,bmp,mp3,flac,ogg,webm,wav,avi,pdf";
const prepareMedia = (files: string[]) => {
  const r = cli(["prepare", "--json", "--allow", MEDIA_ALLOW, ...files], { env: h.env, cwd: work });
  return JSON.parse(r.stdout) as { media: { name: string }[]; media_dropped: { path: string; code: string; reason: string }[] };
};

describe("archives inside the data no reader reads, and gzip members after other bytes", () => {
  it("refuses each kind inside each format's media data through prepare (unscannable_content, naming the kind and the byte of the file), leaves nothing behind", () => {
    const files: string[] = [];
    const expected: [string, string, number][] = [];
    for (const [where, make] of Object.entries(MEDIA)) {
      for (const [kind, archive] of Object.entries(SMALL)) {
        const [ext, bytes] = make(archive);
        // A GIF's sub-block holds 255 bytes: a larger archive is cut by their lengths (7-Zip finds none either).
        if (ext === "gif" && archive.length > 255) continue;
        const name = `${where}-${kind}`.replace(/[^a-z0-9]+/gi, "-");
        files.push(write(work, `${name}.${ext}`, bytes));
        expected.push([`${name}.${ext}`, kindOf(kind), bytes.indexOf(archive)]);
      }
    }
    const report = prepareMedia(files);
    expect(report.media).toEqual([]);
    expect(report.media_dropped.map((d) => [path.basename(d.path), d.code, d.reason])).toEqual(
      expected.map(([name, kind, at]) => [name, "unscannable_content", expect.stringContaining(`an archive compressed with ${kind} starts in its bytes (at byte ${at} of the file): this check does not read it`)]),
    );
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
  });

  it("publishes the same media with random data, and with signatures in it whose headers do not hold (a gzip header 7-Zip takes, random deflate data after it)", () => {
    const files: string[] = [];
    for (const [where, make] of Object.entries(MEDIA)) {
      const [ext, bytes] = make(Buffer.alloc(0));
      files.push(write(work, `clean-${where.replace(/[^a-z0-9]+/gi, "-")}.${ext}`, bytes));
    }
    // Each signature, its header's first bytes as a real one has them, then random bytes: in an mp4's mdat.
    // (bzip2's block magic is a header of its own: `BZh9` and random bytes.)
    const heads = ["377abcaf271c0004", "526172211a0700", "526172211a070100", "fd377a585a000004", "425a6839", "28b52ffd0458", "4d53434600000000", "1f8b0800000000000003", "1f8b0808000000000203"];
    for (const [i, head] of heads.entries()) {
      for (let seed = 0; seed < 8; seed++) {
        const media = Buffer.concat([randomBytes(3000, 100 + seed), Buffer.from(head, "hex"), randomBytes(4000, 200 + 10 * i + seed)]);
        files.push(write(work, `signature-${i}-${seed}.mp4`, mp4("note", media)));
      }
    }
    const report = prepareMedia(files);
    expect(report.media_dropped).toEqual([]);
    expect(leftBehind(h).outbox).toHaveLength(files.length);
  });
});

/** A gzip member's header as gzip writes it (no name, no time), then `deflate`, then what follows (its CRC-32 and size, or not). */
const gzipHeader = Buffer.from("1f8b08000000000000ff", "hex");
const flushed = (text: string) => zlib.deflateRawSync(Buffer.from(text), { finishFlush: zlib.constants.Z_SYNC_FLUSH });
/** Deflate data that fails there: a block of the reserved type. */
const broken = Buffer.from([0xff, 0xff, 0xff, 0xff]);
const KEY_LINE = "GITHUB_TOKEN=ghp_R2xD7qkV9mTzW4bN8cJ1pL6sYh3fA0eUoKiG\n";

describe("gzip members after other bytes", () => {
  const inMdat = (member: Buffer) => mp4("note", Buffer.concat([randomBytes(5000, 31), member, randomBytes(2000, 32)]));
  const judge = (bytes: Buffer, ext = "mp4") => outcome(() => inspectBinary(bytes, ext, ext, NO_KNOWN_SECRETS));

  it("scans what a damaged member decodes to, as 7-Zip writes it out (with a data error): a key there is refused, clean text published", () => {
    const damaged = (text: string) => Buffer.concat([gzipHeader, flushed(text), broken]);
    const file = inMdat(damaged(`notes of the day\n${KEY_LINE}`));
    const at = file.indexOf(gzipHeader);
    expect(judge(file)).toMatch(new RegExp(`^secret_detected: .*GitHub token \\(in what the damaged gzip member at byte ${at} of the file decodes to, at byte 30 of it\\)`));
    expect(judge(inMdat(damaged("notes of the day, nothing secret\n")))).toBe("published");
    // Cut short by the file's end (the mdat last): the same.
    const cut = mp4("note", Buffer.concat([randomBytes(5000, 33), gzipHeader, flushed(`notes\n${KEY_LINE}`)]));
    expect(judge(cut)).toMatch(/^secret_detected: .*in what the damaged gzip member at byte \d+ of the file decodes to/);
    // Its CRC-32 wrong: 7-Zip writes the bytes out all the same.
    const member = zlib.gzipSync(Buffer.from(`notes\n${KEY_LINE}`));
    member.writeUInt32LE((member.readUInt32LE(member.length - 8) ^ 1) >>> 0, member.length - 8);
    expect(judge(inMdat(member))).toMatch(/^secret_detected: .*in what the damaged gzip member at byte \d+ of the file decodes to/);
    // A damaged member that decodes to another, which decodes to the key: read a level deeper.
    const inner = damaged(`notes\n${KEY_LINE}`);
    const outer = Buffer.concat([gzipHeader, zlib.deflateRawSync(Buffer.concat([Buffer.from("head "), inner]), { finishFlush: zlib.constants.Z_SYNC_FLUSH }), broken]);
    expect(judge(inMdat(outer))).toMatch(/^secret_detected: .*in what the damaged gzip member at byte 5 of what the damaged gzip member at byte \d+ of the file decodes to decodes to/);
  });

  it("takes for a member what decodes to 4,096 bytes or more before an error, and a whole member with its CRC-32 and size", () => {
    const text = Array.from({ length: 200 }, (_, i) => `line ${i} of a long log, ${(i * 7919) % 1000}`).join("\n");
    expect(Buffer.byteLength(text)).toBeGreaterThan(4096);
    expect(judge(inMdat(Buffer.concat([gzipHeader, flushed(text), broken])))).toMatch(/^unscannable_content: .*an archive compressed with gzip starts in its bytes \(at byte \d+ of the file\)/);
    // Whole, its CRC-32 wrong: what it decodes is over 4,096 bytes all the same.
    const long = zlib.gzipSync(Buffer.from(text));
    long.writeUInt32LE((long.readUInt32LE(long.length - 8) ^ 1) >>> 0, long.length - 8);
    expect(judge(inMdat(long))).toMatch(/^unscannable_content: .*compressed with gzip starts in its bytes/);
    expect(judge(inMdat(zlib.gzipSync(Buffer.from("a short note\n"))))).toMatch(/^unscannable_content: .*compressed with gzip starts in its bytes/);
    // The same inside a part no reader reads as a gzip file (bytes before it in a zip entry): that part's search.
    expect(judge(zip({ "data.bin": Buffer.concat([randomBytes(100, 34), zlib.gzipSync(Buffer.from("a short note\n"))]) }), "zip")).toMatch(/^unscannable_content: .*compressed with gzip starts in data\.bin \(at byte 100 of it\)/);
  });

  it("takes a header as 7-Zip does: a reserved flag, extra flags other than 0, 2 and 4, a name of 4 KiB or more are not opened (7-Zip 26.02: `Cannot open the file as archive`), any OS byte is", () => {
    const member = zlib.gzipSync(Buffer.from("a short note\n"));
    const changed = (patch: (m: Buffer) => Buffer) => judge(inMdat(patch(Buffer.from(member))));
    const withName = (length: number) => (m: Buffer) => Buffer.concat([m.subarray(0, 3), Buffer.from([0x08]), m.subarray(4, 10), Buffer.alloc(length, 0x61), Buffer.from([0]), m.subarray(10)]);
    expect(changed((m) => ((m[3] = 0x20), m))).toBe("published");
    expect(changed((m) => ((m[8] = 1), m))).toBe("published");
    expect(changed(withName(4096))).toBe("published");
    expect(changed(withName(4095))).toMatch(/^unscannable_content: .*compressed with gzip/);
    expect(changed((m) => ((m[9] = 200), m))).toMatch(/^unscannable_content: .*compressed with gzip/);
  });

  it("publishes gzip files that a reader reads: members of a tar, entries of a zip (stored or deflated), a file of two members, a PDF's attachment, a tar.gz of .gz files, a tar inside a zip", () => {
    const log = (n: number) => zlib.gzipSync(Buffer.from(`log ${n}\n${"an ordinary line of a log\n".repeat(50)}`));
    const twoMembers = Buffer.concat([log(1), log(2)]);
    const files = {
      "logs.tar": tar({ "a.log.gz": log(1), "b.log.gz": twoMembers }),
      "stored.zip": zip({ "a.log.gz": log(1), "b.log.gz": twoMembers }, true),
      "deflated.zip": zip({ "a.log.gz": log(1), "b.log.gz": twoMembers }),
      "report.docx": docx("Report", 3, { "word/embeddings/data.gz": log(3) }),
      "two.gz": twoMembers,
      "logs.tgz": zlib.gzipSync(tar({ "a.log.gz": log(1), "b.log.gz": twoMembers })),
      "attached.pdf": pdfAttachment(log(4)),
      "nested.zip": zip({ "logs.tar": tar({ "a.log.gz": log(1), "b.log.gz": twoMembers }) }, true),
    };
    const paths = Object.entries(files).map(([name, bytes]) => write(work, name, bytes));
    const r = cli(["prepare", "--json", "--allow", "tar,zip,docx,gz,tgz,pdf", ...paths], { env: h.env, cwd: work });
    const report = JSON.parse(r.stdout) as { media: unknown[]; media_dropped: unknown[] };
    expect(report.media_dropped).toEqual([]);
    expect(report.media).toHaveLength(paths.length);
  });
});

describe("where a file's own bytes are searched (findInFile)", () => {
  const MiB = 1024 * 1024;
  const plan = { head: SCANNED_HEAD, gzip: true };

  /** `run` with a file of `base`'s bytes, `archive` written at `at` (restored after), open for reading, and the same bytes in memory. */
  function withArchive(file: string, base: Buffer, archive: Buffer, at: number, run: (fd: number, bytes: Buffer) => void): void {
    const fd = fs.openSync(file, "r+");
    try {
      fs.writeSync(fd, archive, 0, archive.length, at);
      const bytes = Buffer.from(base);
      archive.copy(bytes, at);
      run(fd, bytes);
    } finally {
      fs.writeSync(fd, base, at, archive.length, at);
      fs.closeSync(fd);
    }
  }

  it("finds each kind across the windows a file is read in, as in memory: to byte 8 MiB (7-Zip's reach), a Cabinet anywhere", () => {
    // Its last window holds more than a window's starts (the bytes a window holds past them): every one searched.
    const base = randomBytes(10 * MiB + 5000, 41);
    const file = write(work, "media.bin", base);
    expect(findInFile(fileSource(fs.openSync(file, "r"), base.length), plan)).toBeUndefined();
    const at = [0x100000 - 3, 0x100000 + 0x40000 - 10, 2 * MiB - 1, 5 * MiB + 12345, 8 * MiB - 100, 8 * MiB, 8 * MiB + 1, 9 * MiB + 7, base.length - 400];
    for (const [kind, archive] of Object.entries(SMALL)) {
      for (const where of at) {
        withArchive(file, base, archive, where, (fd, bytes) => {
          const expected = where <= 8 * MiB || kind === "Microsoft Cabinet" ? { kind: kindOf(kind), at: where } : undefined;
          expect(findInFile(fileSource(fd, bytes.length), plan), `${kind} at ${where}, from disk`).toEqual(expected);
          expect(findInFile(bytesSource(bytes), plan), `${kind} at ${where}, in memory`).toEqual(expected);
        });
      }
    }
  });

  it("reads a header that runs past a window's reach again from the file: a RAR 5 main header of 300 KiB, a Zstandard frame of raw blocks across two windows", () => {
    const base = randomBytes(3 * MiB, 42);
    const file = write(work, "media.bin", base);
    // A RAR 5 main header (type 1) whose extra area makes it 300 KiB, with its CRC-32: what the check reads of it.
    const body = Buffer.concat([vint(1), vint(1), vint(300 * 1024), vint(0), Buffer.alloc(300 * 1024, 7)]);
    const sized = Buffer.concat([vint(body.length), body]);
    const rar = Buffer.concat([Buffer.from("Rar!\x1a\x07\x01\x00", "latin1"), le32(zlib.crc32(sized)), sized]);
    // Raw blocks of 100,000 bytes in a 128 KiB window (descriptor 0x38), the fifth the last.
    const block = (last: boolean, seed: number) => Buffer.concat([Buffer.from([((100_000 << 3) & 0xff) | (last ? 1 : 0), (100_000 << 3) >> 8 & 0xff, (100_000 << 3) >> 16]), randomBytes(100_000, seed)]);
    const zstd = Buffer.concat([Buffer.from("28b52ffd0038", "hex"), ...[1, 2, 3, 4].map((i) => block(false, 50 + i)), block(true, 55)]);
    for (const [kind, archive] of [["RAR", rar], ["Zstandard", zstd]] as const) {
      withArchive(file, base, archive, MiB - 50, (fd, bytes) => {
        expect(findInFile(fileSource(fd, bytes.length), plan), kind).toEqual({ kind, at: MiB - 50 });
        expect(findInFile(bytesSource(bytes), plan), kind).toEqual({ kind, at: MiB - 50 });
      });
      // Its checksum or its last block broken: none, from disk as in memory.
      const damaged = Buffer.from(archive);
      const at = kind === "RAR" ? 9 : damaged.length - 100_003;
      damaged[at] = damaged[at]! ^ (kind === "RAR" ? 1 : 0x06);
      withArchive(file, base, damaged, MiB - 50, (fd, bytes) => {
        expect(findInFile(fileSource(fd, bytes.length), plan), kind).toBeUndefined();
        expect(findInFile(bytesSource(bytes), plan), kind).toBeUndefined();
      });
    }
  });

  it("leaves a part of the file past 8 MiB to its reader's search (named by its part), and media data past it published (7-Zip opens nothing there) but for a Cabinet", () => {
    const MDAT = 9 * MiB;
    const judgeFile = (name: string, bytes: Buffer, ext: string) => {
      const file = write(work, name, bytes);
      const fd = fs.openSync(file, "r");
      try {
        return outcome(() => inspectFile(fd, bytes.length, ext, ext, NO_KNOWN_SECRETS));
      } finally {
        fs.closeSync(fd);
      }
    };
    const media = randomBytes(MDAT, 43);
    const video = (archive: Buffer, at: number) => {
      const m = Buffer.from(media);
      archive.copy(m, at);
      return mp4("note", m);
    };
    const mdatAt = mp4("note", Buffer.alloc(0)).length;
    expect(judgeFile("a.mp4", video(SMALL["7-Zip"]!, 8 * MiB - mdatAt), "mp4")).toMatch(new RegExp(`^unscannable_content: .*compressed with 7-Zip starts in its bytes \\(at byte ${8 * MiB} of the file\\)`));
    expect(judgeFile("b.mp4", video(SMALL["7-Zip"]!, 8 * MiB + 1 - mdatAt), "mp4")).toBe("published");
    expect(judgeFile("c.mp4", video(SMALL.gzip!, 8 * MiB + 1 - mdatAt), "mp4")).toBe("published");
    expect(judgeFile("d.mp4", video(SMALL["Microsoft Cabinet"]!, 8 * MiB + 1000 - mdatAt), "mp4")).toMatch(new RegExp(`^unscannable_content: .*compressed with Microsoft Cabinet starts in its bytes \\(at byte ${8 * MiB + 1000} of the file\\)`));
    // A PDF of 9 MiB: the bytes after its %%EOF, past 8 MiB, are searched by its reader (and named so).
    const big = pdf("Quarterly report", false, [Buffer.concat([Buffer.from(`<< /Type /XObject /Subtype /Image /Filter /DCTDecode /Length ${MDAT} >>\nstream\n`), media, Buffer.from("\nendstream")])]);
    expect(judgeFile("e.pdf", Buffer.concat([big, Buffer.from("%% notes\n"), SMALL.xz!]), "pdf")).toMatch(new RegExp(`^unscannable_content: .*compressed with xz starts in the PDF's objects \\(at byte ${big.length + 9} of the file\\)`));
  });
});

describe("each kind's search bounded to the last start it must check (needlesBefore)", () => {
  const MiB = 1024 * 1024;

  /** The rule read plainly: every place of `needle` from `from` on, as indexOf finds them over all of `b`, while its signature (`lead` bytes before) starts before `end`. */
  function plain(b: Buffer, needle: Buffer, lead: number, from: number, end: number): number[] {
    const out: number[] = [];
    for (let n = b.indexOf(needle, from); n >= 0 && n - lead < end; n = b.indexOf(needle, n + 1)) out.push(n);
    return out;
  }
  function bounded(b: Buffer, needle: Buffer, lead: number, from: number, end: number): number[] {
    const out: number[] = [];
    const next = needlesBefore(b, needle, lead, end);
    for (let n = next(from); n >= 0; n = next(n + 1)) out.push(n);
    return out;
  }

  it("finds what indexOf finds, in order, over random bytes strewn with needles: one at the bound itself (the last start in range), one just past it, at the last place a needle fits, cut by the end; every from and end", () => {
    const random = rng(71);
    const int = (n: number) => Math.floor(random() * n);
    let trials = 0;
    let found = 0;
    let atBound = 0;
    for (let t = 0; t < 3000; t++) {
      // Few byte values, so that needles and their prefixes repeat and overlap (`aaa` in `aaaa`).
      const alphabet = 2 + int(3);
      const needle = Buffer.from(Array.from({ length: 1 + int(6) }, () => int(alphabet)));
      const lead = int(5);
      const b = Buffer.from(Array.from({ length: int(80) }, () => int(alphabet + 1)));
      const end = int(b.length + 10);
      // (Where the bytes end first, the needle's first bytes alone.)
      const put = (at: number) => at >= 0 && at <= b.length && needle.copy(b, at);
      // At the bound: the needle of a signature that starts at end - 1; past it: at end.
      put(end - 1 + lead);
      if (random() < 0.5) put(end + lead);
      // The last place it fits, and a prefix of it that the end cuts.
      if (random() < 0.5) put(b.length - needle.length);
      if (random() < 0.3) put(b.length - needle.length + 1);
      for (const from of [0, lead, int(b.length + 2), end - 1 + lead, end + lead, b.length]) {
        const expected = plain(b, needle, lead, from, end);
        found += expected.length;
        if (expected.includes(end - 1 + lead)) atBound++;
        trials++;
        expect(bounded(b, needle, lead, from, end), `needle ${needle.toString("hex")}, lead ${lead}, from ${from}, end ${end} in ${b.toString("hex")}`).toEqual(expected);
      }
    }
    expect(trials).toBe(18_000);
    expect(found).toBeGreaterThan(10_000);
    expect(atBound).toBeGreaterThan(2_000);
  });

  it("finds each kind's needle at the bounds of a window and of the file's first 8 MiB (7-Zip's reach), at the last place it fits, and none past them", () => {
    // Each kind's needle (the part of its signature searched for) and how far into the signature it lies.
    const needles: [string, number][] = [
      ["bcaf271c", 2],
      ["1a07", 4],
      ["fd377a585a00", 0],
      ["425a68", 0],
      ["b52ffd", 1],
      ["4d534346", 0],
      ["1f8b08", 0],
    ];
    const window = randomBytes(MiB + 256 * 1024, 72);
    const file = randomBytes(9 * MiB, 73);
    for (const [hex, lead] of needles) {
      const needle = Buffer.from(hex, "hex");
      // A window's starts (its bytes past them are the next window's), and a file's first 8 MiB searched whole.
      for (const [b, end] of [
        [window, MiB],
        [window, window.length],
        [window, 1],
        [file, SCANNED_HEAD],
        [file, file.length],
      ] as const) {
        for (const at of [end - 1, end, end + 1, b.length - needle.length - lead, b.length - needle.length - lead + 1]) {
          if (at < 0 || at + lead + needle.length > b.length) continue;
          const bytes = Buffer.from(b);
          needle.copy(bytes, at + lead);
          const expected = plain(bytes, needle, lead, 0, end);
          expect(expected.includes(at + lead), `${hex} at ${at}, end ${end}`).toBe(at < end);
          expect(bounded(bytes, needle, lead, 0, end), `${hex} at ${at}, end ${end}`).toEqual(expected);
        }
      }
    }
  });

  it("finds the archive that starts first in a file's searched starts, wherever each lies: a window's last start and its next's first, at 8 MiB and just past it, at the last place it fits; two kinds in one window (the later kind's search bounded by the earlier kind's find)", () => {
    const plan: RawSearch = { head: SCANNED_HEAD, gzip: true };
    const base = randomBytes(10 * MiB + 3000, 74);
    const file = write(work, "media.bin", base);
    const fd = fs.openSync(file, "r+");
    const rule = (placed: [string, number][]) => {
      // The rule read plainly: of the archives placed, those the plan searches (every kind to byte 8 MiB, a Cabinet anywhere), the first.
      const searched = placed.filter(([kind, at]) => kind === "Microsoft Cabinet" || at < plan.head).sort((x, y) => x[1] - y[1]);
      return searched.length === 0 ? undefined : { kind: kindOf(searched[0]![0]), at: searched[0]![1] };
    };
    try {
      expect(findInFile(bytesSource(base), plan)).toBeUndefined();
      const kinds = Object.keys(SMALL);
      const places = (archive: Buffer) => [MiB - 1, MiB, 2 * MiB - 1, 8 * MiB - 1, 8 * MiB, 8 * MiB + 1, base.length - archive.length];
      let cases = 0;
      for (const [i, kind] of kinds.entries()) {
        const archive = SMALL[kind]!;
        for (const at of places(archive)) {
          // Alone, then with another kind (the next in the list) after it in the same window, and before it.
          const other = kinds[(i + 3) % kinds.length]!;
          const second = SMALL[other]!;
          const layouts: [string, number][][] = [[[kind, at]]];
          if (at + archive.length + 100 + second.length <= base.length) layouts.push([[kind, at], [other, at + archive.length + 100]]);
          if (at - second.length - 100 >= 0) layouts.push([[kind, at], [other, at - second.length - 100]]);
          for (const placed of layouts) {
            const bytes = Buffer.from(base);
            for (const [k, p] of placed) {
              SMALL[k]!.copy(bytes, p);
              fs.writeSync(fd, SMALL[k]!, 0, SMALL[k]!.length, p);
            }
            const expected = rule(placed);
            const what = placed.map(([k, p]) => `${k} at ${p}`).join(", ");
            expect(findInFile(bytesSource(bytes), plan), `${what}, in memory`).toEqual(expected);
            expect(findInFile(fileSource(fd, bytes.length), plan), `${what}, from disk`).toEqual(expected);
            for (const [k, p] of placed) fs.writeSync(fd, base, p, SMALL[k]!.length, p);
            cases++;
          }
        }
      }
      expect(cases).toBeGreaterThan(100);
    } finally {
      fs.closeSync(fd);
    }
  }, 120_000);
});
