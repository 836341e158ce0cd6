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
import { inspectBinary } from "../src/content/carriers.js";
import { NO_KNOWN_SECRETS } from "../src/content/known.js";
import { docx, flac, makePng, mp3, mp4, ogg, pdf, pdfAttachment, rng, tiffWithXpComment, wav, webm, zip } from "./corpus.js";
import { NOTHING_LEFT, cli, leftBehind, makeHome, outcome, write } from "./helpers.js";

let h: ReturnType<typeof makeHome>;
let work: string;
beforeEach(() => {
  h = makeHome();
  work = path.join(h.home, "work");
  fs.mkdirSync(work);
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

/** A RAR 4 archive storing `data` as notes.gz (marker, main header, file header, end): libarchive 3.6 (bsdtar) and unar 1.10 extract it. */
function rar4(data: Buffer): Buffer {
  const block = (body: Buffer) => Buffer.concat([le16(zlib.crc32(body) & 0xffff), body]);
  const name = Buffer.from("notes.gz");
  const file = Buffer.concat([Buffer.from([0x74]), le16(0x8000), le16(32 + name.length), le32(data.length), le32(data.length), Buffer.from([3]), le32(zlib.crc32(data)), le32(0x5a000000), Buffer.from([20, 0x30]), le16(name.length), le32(0x81a4), name]);
  return Buffer.concat([Buffer.from("Rar!\x1a\x07\x00", "latin1"), block(Buffer.from([0x73, 0, 0, 13, 0, 0, 0, 0, 0, 0, 0])), block(file), data, block(Buffer.from([0x7b, 0, 0x40, 7, 0]))]);
}

/** A RAR 5 archive storing `data` as notes.gz: libarchive 3.6 (bsdtar) extracts it. */
function rar5(data: Buffer): Buffer {
  const header = (body: Buffer) => {
    const sized = Buffer.concat([vint(body.length), body]);
    return Buffer.concat([le32(zlib.crc32(sized)), sized]);
  };
  const name = Buffer.from("notes.gz");
  const file = Buffer.concat([vint(2), vint(2), vint(data.length), vint(4), vint(data.length), vint(0o644), le32(zlib.crc32(data)), vint(0), vint(1), vint(name.length), name]);
  return Buffer.concat([Buffer.from("Rar!\x1a\x07\x01\x00", "latin1"), header(Buffer.from([1, 0, 0])), header(file), data, header(Buffer.from([5, 0, 0]))]);
}

const notes = zlib.gunzipSync(zlib.gzipSync(Buffer.from(`${Array.from({ length: 40 }, (_, i) => `line ${i + 1} of the meeting notes`).join("\n")}\nGITHUB_TOKEN=ghp_R2xD7qkV9mTzW4bN8cJ1pL6sYh3fA0eUoKiG\n`)));
const ARCHIVES: Record<string, Buffer> = { ...REAL, "RAR 4": rar4(zlib.gzipSync(notes)), "RAR 5": rar5(zlib.gzipSync(notes)) };
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
  it("refuses each kind in each carrier through prepare (unscannable_content, naming the part and the kind), publishes the clean twins, leaves nothing behind", () => {
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
    expect(report.media_dropped.map((d) => [path.basename(d.path), d.code, d.reason])).toEqual(
      expected.map(([name, kind]) => [name, "unscannable_content", expect.stringMatching(new RegExp(`an archive compressed with ${kind} starts in .+ \\(at byte \\d+ of (it|the file)\\): this check does not read it`))]),
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
      new RegExp(`^unscannable_content: .*an archive compressed with 7-Zip starts in the PDF's objects \\(at byte ${host.length} of the file\\)`),
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
  });
});
