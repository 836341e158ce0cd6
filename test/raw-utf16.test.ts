// The raw scan of a binary no reader knows (tiff, doc, xls, ppt, rtf) reads
// its bytes as they are and as UTF-16 at both alignments: a key in a Word
// 97-2003 document's text or in a TIFF's XPComment is every other byte.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BLOCK, scanBytes } from "../src/content/scan.js";
import { FROM_EVEN, FROM_ODD, hasUtf16Text, utf16TextAlignments } from "../src/content/utf16.js";
import { checkContent } from "../src/prepare/content.js";
import { UNIT, judgeUnit } from "../src/prepare/text-check.js";
import { TextScanner, type TextVerdict, mergeVerdicts } from "../src/prepare/text.js";
import { negatives, positives, rng, tiffWithXpComment, zip } from "./corpus.js";
import { NOTHING_LEFT, cli, leftBehind, makeHome, write } from "./helpers.js";

const MiB = 1024 * 1024;
const KEY = positives()["github-token"]!;
const TEXT = ` ${KEY} `;
/** Where the scan places the key in TEXT, in characters. */
const KEY_AT = scanBytes(Buffer.from(TEXT))!.offset;

const utf16 = (text: string, order: "le" | "be") => {
  const units = Buffer.from(text, "utf16le");
  return order === "be" ? units.swap16() : units;
};
/** Seeded noise: a picture's pixels, with NULs but no UTF-16 text. */
const noise = (n: number, seed = 1) => {
  const next = rng(seed);
  const bytes = Buffer.allocUnsafe(n);
  for (let i = 0; i < n; i++) bytes[i] = Math.floor(next() * 256);
  return bytes;
};
/** A JSON Web Token of about 3,000 characters: a match that starts thousands of bytes before a boundary it straddles. */
const LONG_JWT = (() => {
  const noisy = Buffer.from(Array.from({ length: 1100 }, (_, i) => Math.imul(i + 1, 2654435761) >>> 24)).toString("base64url");
  return `${Buffer.from('{"alg":"HS256","typ":"JWT"}').toString("base64url")}.${Buffer.from(`{"data":"${noisy}"}`).toString("base64url")}.${noisy.slice(0, 43)}`;
})();
const utf16Filler = (n: number) => Buffer.from("lorem ipsum dolor sit amet ".repeat(Math.ceil(n / 54)), "utf16le").subarray(0, n);

function scanRaw(bytes: Buffer, chunk: number): TextVerdict {
  const scanner = new TextScanner({ raw: true });
  for (let off = 0; off < bytes.length; off += chunk) scanner.push(bytes.subarray(off, off + chunk));
  return scanner.finish();
}

/** `text` in UTF-16 (`order`) at byte `at` of `filler`'s bytes; where its key's letter lies. */
function placed(filler: Buffer, at: number, order: "le" | "be", text = TEXT): { bytes: Buffer; keyAt: number } {
  const encoded = utf16(text, order);
  const bytes = Buffer.concat([filler.subarray(0, at), encoded, filler.subarray(at + encoded.length)]);
  // Big-endian text reads from the byte after each unit's first: its letter.
  return { bytes, keyAt: at + 2 * (scanBytes(Buffer.from(text))?.offset ?? 0) + (order === "be" ? 1 : 0) };
}

describe("the raw scan as UTF-16", () => {
  it("tells at which alignment a block holds UTF-16 text, as hasUtf16Text sees it", () => {
    const text = "Report by the agent";
    const cases: [string, Buffer, number][] = [
      ["little-endian from an even byte", Buffer.concat([noise(64), utf16(text, "le"), noise(64)]), FROM_EVEN],
      ["little-endian from an odd byte", Buffer.concat([noise(65), utf16(text, "le"), noise(64)]), FROM_ODD],
      ["big-endian from an even byte", Buffer.concat([noise(64), utf16(text, "be"), noise(64)]), FROM_ODD],
      ["big-endian from an odd byte", Buffer.concat([noise(65), utf16(text, "be"), noise(64)]), FROM_EVEN],
      ["both", Buffer.concat([noise(64), utf16(text, "le"), noise(65), utf16(text, "le")]), FROM_EVEN | FROM_ODD],
      ["three letters", Buffer.concat([noise(64), utf16("Rep", "le"), Buffer.from([0xff, 0xff])]), 0],
      ["noise", noise(4096), 0],
    ];
    for (const [name, bytes, expected] of cases) {
      expect(utf16TextAlignments(bytes), name).toBe(expected);
      expect(hasUtf16Text(bytes), name).toBe(expected !== 0);
    }
  });

  it("finds a UTF-16 key across a block boundary, at both alignments and byte orders, at its byte in the file", () => {
    const length = 2 * BLOCK + 100;
    const fillers: [string, Buffer][] = [
      ["noise", noise(length)],
      ["UTF-16 text", utf16Filler(length)],
    ];
    // The key alone too: a hit starting a few letters before the boundary, where the block before holds no UTF-16 text.
    const bare = ` ${KEY.slice(KEY.indexOf("ghp_"))} `;
    for (const text of [TEXT, bare]) {
      const encodedLength = utf16(text, "le").length;
      for (const [fillerName, filler] of fillers) {
        // Every cut of the key by the boundary, from its first byte after it to its last byte before it, even and odd.
        for (let at = BLOCK - encodedLength; at <= BLOCK; at++) {
          for (const order of ["le", "be"] as const) {
            const { bytes, keyAt } = placed(filler, at, order, text);
            for (const chunk of [MiB, 777]) {
              const v = scanRaw(bytes, chunk);
              expect({ secret: v.secret, secretAt: v.secretAt }, `${JSON.stringify(text.slice(0, 8))}, ${order} at ${at} in ${fillerName}, chunk ${chunk}`).toEqual({ secret: "a GitHub token", secretAt: keyAt });
            }
          }
        }
      }
    }
  });

  it("finds a UTF-16 key at the file's first and last bytes, an odd last byte a unit of its own", () => {
    for (const order of ["le", "be"] as const) {
      const key = utf16(KEY, order);
      const keyAt = order === "be" ? 1 : 0;
      expect(scanRaw(key, MiB).secretAt, `${order} alone`).toBe(keyAt + scanBytes(Buffer.from(KEY))!.offset * 2);
      // Big-endian text from an even byte ends with its last letter: the odd view's last unit, a byte alone.
      const end = Buffer.concat([noise(BLOCK + (order === "be" ? 2 : 1)), key]);
      expect(scanRaw(end, MiB).secret, `${order} at the end`).toBe("a GitHub token");
    }
  });

  it("reads a UTF-16 key whole whatever bytes follow it: big-endian text after its byte order mark (its last letter before a byte other than NUL was lost), little-endian text between letters", () => {
    // Read little-endian, big-endian text's last letter pairs with the byte after it: a key one letter short no longer matches.
    // Read big-endian, little-endian text's letters pair with the bytes around them: each order is read where its text may be.
    const BOM_BE = Buffer.from([0xfe, 0xff]);
    for (const label of ["github-token", "aws-access-key-id", "telegram-bot-token", "sendgrid-key"]) {
      const key = positives(41)[label]!;
      const what = scanBytes(Buffer.from(` ${key} `))!.what;
      for (const pad of [64, 65]) {
        for (const [name, before, after] of [["0xff", [0xff], [0xff, 0xff]], ["letters", [0x51], [0x51, 0x51]], ["a parenthesis", [0x28], [0x29, 0x20]]] as const) {
          const le = Buffer.concat([noise(pad), Buffer.from(before), utf16(key, "le"), Buffer.from(after), noise(64, 2)]);
          expect(scanRaw(le, MiB).secret, `${label} le after ${pad} bytes, between ${name}`).toBe(what);
          const be = Buffer.concat([noise(pad), Buffer.from(before), BOM_BE, utf16(`by ${key}`, "be"), Buffer.from(after), noise(64, 2)]);
          expect(scanRaw(be, MiB).secret, `${label} be after ${pad} bytes, before ${name}`).toBe(what);
        }
      }
      // The mark in the block before, the key across the boundary; the mark across the boundary, the key after it.
      for (const markAt of [BLOCK - 200, BLOCK - 201, BLOCK - 2, BLOCK - 1]) {
        const be = Buffer.concat([noise(markAt), BOM_BE, utf16(`${"by the agent, ".repeat(6)}${key}`, "be"), Buffer.from([0x29, 0x20]), noise(200, 3)]);
        for (const chunk of [MiB, 777]) expect(scanRaw(be, chunk).secret, `${label} mark at ${markAt}, chunk ${chunk}`).toBe(what);
      }
    }
  });

  it("does not mistake a UTF-16 token cut by a block boundary for a whole one", () => {
    // AKIA + 16 characters is a key id only when a word boundary follows.
    const long = " AKIAABCDEFGHIJKLMNOPQRSTUVWXYZ ";
    for (const order of ["le", "be"] as const) {
      for (const at of [BLOCK - 30, BLOCK - 31, BLOCK - 40, BLOCK - 41]) {
        const { bytes } = placed(noise(BLOCK + 1000), at, order, long);
        expect(scanRaw(bytes, MiB).secret, `${order} at ${at}`).toBeUndefined();
      }
      const { bytes } = placed(noise(BLOCK + 1000), BLOCK - 31, order, " AKIAABCDEFGHIJKLMNOP ");
      expect(scanRaw(bytes, MiB).secret, order).toBe("an AWS access key id");
    }
  });

  it("names the first credential in the file when a block holds one as it is and one in UTF-16", () => {
    const other = positives()["stripe-key"]!;
    const ascii = Buffer.from(` ${other} `);
    const asIsAt = scanBytes(ascii)!.offset;
    const before = placed(Buffer.concat([noise(5000), ascii, noise(5000)]), 1001, "le");
    expect(scanRaw(before.bytes, MiB)).toMatchObject({ secret: "a GitHub token", secretAt: before.keyAt });
    const after = placed(Buffer.concat([noise(1000), ascii, noise(9000)]), 3001, "be");
    expect(scanRaw(after.bytes, MiB)).toMatchObject({ secretAt: 1000 + asIsAt });
  });

  it("publishes clean UTF-16 text and noise", () => {
    for (const text of Object.values(negatives())) expect(scanRaw(Buffer.concat([noise(100), utf16(` ${text} `, "le"), noise(100)]), MiB).secret, text).toBeUndefined();
    expect(scanRaw(noise(3 * BLOCK + 7), MiB).secret).toBeUndefined();
  });
});

describe("the raw scan judged in independent units", () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "mo-raw-units-"));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  const size = 3 * UNIT + 17;
  const encodedLength = utf16(TEXT, "le").length;
  const cases: [string, Buffer][] = [];
  for (const order of ["le", "be"] as const) {
    for (const at of [UNIT - encodedLength, UNIT - 60, UNIT - 61, UNIT - 2 * KEY_AT - 3, UNIT - 5, UNIT]) {
      cases.push([`${order} at ${at} in noise`, placed(noise(size), at, order).bytes]);
      cases.push([`${order} at ${at} in UTF-16 text`, placed(utf16Filler(size), at, order).bytes]);
    }
    // A match that begins more than the raw scan's own context before the boundary (4352 bytes).
    for (const back of [5000, 2 * (4096 + 256) - 2]) cases.push([`${order} a long JWT from ${back} bytes before the boundary`, placed(noise(size), UNIT - back, order, ` ${LONG_JWT} `).bytes]);
    // The key alone, its first letters before the boundary: the range before holds no UTF-16 text.
    for (const at of [UNIT - 5, UNIT - 6, UNIT - 9]) cases.push([`${order} at ${at}, the key alone, in noise`, placed(noise(size), at, order, ` ${KEY.slice(KEY.indexOf("ghp_"))} `).bytes]);
  }
  cases.push(["a key as it is in the last unit, one in UTF-16 in the first", Buffer.concat([placed(noise(UNIT), 100, "le").bytes, noise(UNIT), Buffer.from(TEXT), noise(UNIT)])]);
  cases.push(["noise", noise(size)]);
  cases.push(["clean UTF-16 text", utf16Filler(size)]);

  it.each(cases)("gives the sequential scan's verdict: %s", (_, bytes) => {
    const file = path.join(dir, "f.tiff");
    fs.writeFileSync(file, bytes);
    const fd = fs.openSync(file, "r");
    try {
      const count = Math.ceil(bytes.length / UNIT);
      const units = Array.from({ length: count }, (_, i) => judgeUnit(fd, count - 1 - i, bytes.length, { raw: true })).reverse();
      const sequential = scanRaw(bytes, MiB);
      expect(mergeVerdicts(units)).toEqual(sequential);
      if (_.includes(" at ")) expect(sequential.secret).toBe("a GitHub token");
      if (_.includes("JWT")) expect(sequential.secret).toBe("a JSON Web Token");
    } finally {
      fs.closeSync(fd);
    }
  });
});

describe("prepare: files scanned raw", () => {
  let h: ReturnType<typeof makeHome>;
  let work: string;
  beforeEach(() => {
    h = makeHome();
    work = h.work;
  });
  afterEach(() => h.cleanup());

  /** The byte of `bytes` where the key's UTF-16LE letters begin. */
  const keyOffset = (bytes: Buffer) => bytes.indexOf(utf16(KEY, "le")) + 2 * scanBytes(Buffer.from(KEY))!.offset;

  it("refuses TIFFs holding a key in UTF-16 (little- and big-endian), at the key's byte, and publishes a clean one", () => {
    const tiff = tiffWithXpComment(`Taken by the agent ${KEY}`, noise(4096), 64);
    // Big-endian, the key across the scan's 1 MiB units (read by two threads): UTF-16BE as XMP may hold it.
    const bigEndian = tiffWithXpComment("holiday", Buffer.concat([noise(UNIT - 200), utf16(TEXT, "be"), noise(17 * MiB)]), 1024);
    const bigKeyAt = bigEndian.indexOf(utf16(TEXT, "be")) + 2 * KEY_AT + 1;
    const files = [write(work, "photo.tiff", tiff), write(work, "scan.tiff", bigEndian)];
    const refused = cli(["prepare", "--json", "--allow", "tiff", "--max-size", "60MB", ...files], { env: h.env, cwd: work });
    expect(refused.code).toBe(1);
    const report = JSON.parse(refused.stdout) as { media: unknown[]; media_dropped: { code: string; reason: string }[] };
    expect(report.media_dropped.map((d) => [d.code, d.reason])).toEqual([
      ["secret_detected", expect.stringContaining(`a GitHub token (at byte ${keyOffset(tiff)})`)],
      ["secret_detected", expect.stringContaining(`a GitHub token (at byte ${bigKeyAt})`)],
    ]);
    for (const d of report.media_dropped) expect(d.reason).not.toContain(KEY.slice(-16));
    expect(report.media).toEqual([]);
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);

    const clean = [write(work, "clean.tiff", tiffWithXpComment("Taken by the agent", noise(4096), 64))];
    const published = cli(["prepare", "--json", "--allow", "tiff", ...clean], { env: h.env, cwd: work });
    expect(published.code).toBe(0);
    expect((JSON.parse(published.stdout) as { media: { name: string }[] }).media.map((m) => m.name)).toEqual(["clean.tiff"]);
  });

  it("reads a zip appended to a TIFF (unzip extracts it whatever comes before it): a key deflated in it was published, its bytes scanned only as they are", () => {
    const key = positives(41)["github-token"]!;
    const host = tiffWithXpComment("Taken by the agent", noise(4096), 64);
    const files = [
      write(work, "appended.tiff", Buffer.concat([host, zip({ "notes.txt": `token ${key}\n` })])),
      write(work, "clean.tiff", Buffer.concat([host, zip({ "notes.txt": "hello" })])),
    ];
    const r = cli(["prepare", "--json", "--allow", "tiff", ...files], { env: h.env, cwd: work });
    const report = JSON.parse(r.stdout) as { media: { name: string }[]; media_dropped: { code: string; reason: string }[] };
    expect(report.media_dropped.map((d) => [d.code, d.reason])).toEqual([["secret_detected", expect.stringContaining("a GitHub token (in notes.txt of the zip appended to it")]]);
    expect(report.media_dropped[0]!.reason).not.toContain(key.slice(-16));
    expect(report.media.map((m) => m.name)).toEqual(["clean.tiff"]);
    expect(leftBehind(h)).toMatchObject({ outbox: ["clean.tiff"], staging: [] });
  });

  it("the guard's check refuses a key in UTF-16 in a file it reads itself", async () => {
    const tiff = tiffWithXpComment(`Taken by the agent ${KEY}`, noise(4096), 64);
    for (const [name, bytes, code] of [["photo.tiff", tiff, "secret_detected"], ["clean.tiff", tiffWithXpComment("Taken by the agent", noise(4096), 64), undefined]] as const) {
      const file = write(work, name, bytes);
      const fd = fs.openSync(file, "r");
      try {
        const verdict = checkContent({ fd, bytes: bytes.length, path: file }, "tiff", { hermesHome: path.join(h.home, ".hermes") });
        if (code) await expect(verdict).rejects.toMatchObject({ code, message: expect.stringContaining(`at byte ${keyOffset(tiff)}`) });
        else await expect(verdict).resolves.toMatchObject({ mime: "image/tiff" });
      } finally {
        fs.closeSync(fd);
      }
    }
  });
});
