// Memory held while a document's compressed parts are read: a part is
// inflated into one buffer (no chunks joined), the text a PDF's content
// streams show and an XML part's text are written over the bytes they are
// read from, and the UTF-16 readings are made a block at a time. Measured as
// a prepare's peak resident memory in a process of its own; and the readings
// these changed give what they gave before (the same findings, the same
// offsets).
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { InspectContext } from "../src/content/inspect.js";
import { NO_KNOWN_SECRETS } from "../src/content/known.js";
import { scanBytes } from "../src/content/scan.js";
import { narrowedUtf16 } from "../src/content/utf16.js";
import { inspectZip, xmlAsUtf8 } from "../src/content/zip.js";
import { inspectPdf } from "../src/content/pdf.js";
import { pdfOf, pdfSubsetFont, positives, rng, zip } from "./corpus.js";
import { BIN, makeHome, outcome, write } from "./helpers.js";

const MiB = 1024 * 1024;
let h: ReturnType<typeof makeHome>;
beforeEach(() => {
  h = makeHome();
});
afterEach(() => h.cleanup());


const WORDS = ["alpha", "quarterly", "numbers", "fine", "report", "revenue", "growth", "margin", "team", "plan", "north", "south"];

/**
 * `size` bytes of lines made by `line` from eight words drawn at random: one
 * MiB of them, repeated (deflate looks 32 KiB back, so the copies compress
 * no better than the first: about 6 to 1, under the 100 to 1 a bomb is).
 */
function lines(size: number, line: (words: string, n: number) => string): Buffer {
  const next = rng(11);
  const one: string[] = [];
  for (let length = 0; length < MiB; ) {
    const l = line(Array.from({ length: 8 }, () => WORDS[Math.floor(next() * WORDS.length)]).join(" "), Math.floor(next() * 1e6));
    one.push(l);
    length += l.length;
  }
  const block = Buffer.from(one.join(""), "latin1");
  return Buffer.concat(Array.from({ length: Math.ceil(size / block.length) }, () => block)).subarray(0, size);
}

/** A prepare of `file` in a process of its own: its exit code and the most memory it held resident, in bytes. */
function preparePeak(file: string): { code: number | null; stderr: string; peak: number } {
  const probe = path.join(h.home, "peak.cjs");
  const out = path.join(h.home, "peak.txt");
  // The peak of this process's own memory (VmHWM): getrusage's maxRSS keeps the peak of the process it was forked from.
  fs.writeFileSync(probe, `process.on("exit", () => { const fs = require("node:fs"); fs.writeFileSync(${JSON.stringify(out)}, String(1024 * Number(/VmHWM:\\s*(\\d+) kB/.exec(fs.readFileSync("/proc/self/status", "utf8"))[1]))); });\n`);
  const r = spawnSync(process.execPath, ["--require", probe, BIN, "prepare", "--max-size", "100MB", "--", file], { env: h.env, encoding: "utf8" });
  return { code: r.status, stderr: r.stderr, peak: Number(fs.readFileSync(out, "utf8")) };
}

describe("memory of the decoding", () => {
  it("holds a PDF content stream of 96 MiB of text, and a sheet of 96 MiB of XML, at less than 1.5 times their inflated bytes above a small PDF's prepare", () => {
    const work = h.work;
    const stream = lines(96 * MiB, (words, n) => `BT /F1 12 Tf 72 ${n % 800} Td (${words} ${n}) Tj ET\n`);
    const packed = zlib.deflateSync(stream, { level: 1 });
    const page = (length: number) => [Buffer.from("<< /Type /Catalog /Pages 2 0 R >>"), Buffer.from("<< /Type /Pages /Kids [3 0 R] /Count 1 >>"), Buffer.from("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>"), Buffer.from(`<< /Length ${length} /Filter /FlateDecode >>\nstream\n`)];
    const pdfFile = write(work, "report.pdf", pdfOf([...page(packed.length).slice(0, 3), Buffer.concat([page(packed.length)[3]!, packed, Buffer.from("\nendstream")])]));
    const small = zlib.deflateSync(stream.subarray(0, 4096));
    const smallFile = write(work, "small.pdf", pdfOf([...page(small.length).slice(0, 3), Buffer.concat([page(small.length)[3]!, small, Buffer.from("\nendstream")])]));
    // A sheet of inline strings, its text most of its bytes (what a sheet's text costs, held beside it, shows).
    const sheet = lines(96 * MiB, (words, n) => `<row r="${n}"><c r="A${n}" t="inlineStr"><is><t>${words} ${words}</t></is></c></row>`);
    const sheetFile = write(
      work,
      "sheet.xlsx",
      zip({
        "[Content_Types].xml": '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/></Types>',
        "_rels/.rels": '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>',
        "xl/workbook.xml": '<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheets><sheet name="Sheet1" sheetId="1"/></sheets></workbook>',
        "xl/worksheets/sheet1.xml": sheet,
      }),
    );
    const base = preparePeak(smallFile);
    expect(base.code).toBe(0);
    for (const file of [pdfFile, sheetFile]) {
      const { code, stderr, peak } = preparePeak(file);
      expect(code, `${file}: ${stderr}`).toBe(0);
      // About 1.2 times here (the compressed part, then its inflated bytes, read once); 3.1 times for the PDF and
      // 2.2 for the sheet when zlib's chunks were joined and the text made beside the bytes.
      expect((peak - base.peak) / (96 * MiB), file).toBeLessThan(1.5);
    }
  });

  it("reads a zip entry whose directory understates its size whole: inflated again past the declared size, its key found", () => {
    const key = positives(67)["github-token"]!;
    const text = `${"a clean line of the notes\n".repeat(400)}the token ${key} here\n`;
    const file = zip({ "notes.txt": text });
    // The entry's inflated size, in its local header and in the directory: a tenth of the truth.
    file.writeUInt32LE(text.length / 10, 22);
    file.writeUInt32LE(text.length / 10, file.indexOf("PK\x01\x02", 0, "latin1") + 24);
    expect(outcome(() => inspectZip(file, new InspectContext("zip", NO_KNOWN_SECRETS)))).toMatch(new RegExp(`^secret_detected: .*in notes\\.txt, at byte ${scanBytes(Buffer.from(text))!.offset} of it`));
  });

  it("reads the text of a PDF whose first content stream opens with a hex string, and through a font's map where a string lies between the font's name and its Tf, when the text is written over the streams", () => {
    const key = positives(67)["github-token"]!;
    const hexString = Buffer.from(`the token ${key} here`).toString("hex");
    // Streams of 8 MiB or more have their text written over them: a comment makes them so.
    const filler = `\n%${"x".repeat(9 * MiB)}\n`;
    const stream = Buffer.from(`<${hexString}> Tj${filler}`);
    const first = pdfOf([Buffer.from("<< /Type /Catalog /Pages 2 0 R >>"), Buffer.from("<< /Type /Pages /Kids [3 0 R] /Count 1 >>"), Buffer.from("<< /Type /Page /Parent 2 0 R /Contents 4 0 R >>"), Buffer.concat([Buffer.from(`<< /Length ${stream.length} >>\nstream\n`), stream, Buffer.from("\nendstream")])]);
    // The text: a line break, then the string.
    const at = 1 + scanBytes(Buffer.from(`the token ${key} here`))!.offset;
    expect(outcome(() => inspectPdf(first, new InspectContext("pdf", NO_KNOWN_SECRETS)))).toMatch(new RegExp(`^secret_detected: .*in the text its content streams show, at byte ${at} of it`));
    // A key in the stream's bytes alone (a comment) is told after the text is read, naming the stream; one in both, naming the text.
    const withKey = (shown: string) => {
      const body = Buffer.from(`(${shown}) Tj${filler}% ${key}\n`);
      return pdfOf([Buffer.from("<< /Type /Catalog /Pages 2 0 R >>"), Buffer.from("<< /Type /Pages /Kids [3 0 R] /Count 1 >>"), Buffer.from("<< /Type /Page /Parent 2 0 R /Contents 4 0 R >>"), Buffer.concat([Buffer.from(`<< /Length ${body.length} >>\nstream\n`), body, Buffer.from("\nendstream")])]);
    };
    expect(outcome(() => inspectPdf(withKey("a clean line"), new InspectContext("pdf", NO_KNOWN_SECRETS)))).toMatch(/^secret_detected: .*\(in the PDF stream at byte \d+, at byte \d+ of it\)/);
    expect(outcome(() => inspectPdf(withKey(`the token ${key} here`), new InspectContext("pdf", NO_KNOWN_SECRETS)))).toMatch(/^secret_detected: .*in the text its content streams show, at byte \d+ of it/);
    // The string's text covers the name's bytes: a Tf after it reads a copy of the name.
    const font = pdfSubsetFont(`the token ${key} here`, { plain: true });
    const text = font.toString("latin1").replace("BT /F7 10 Tf", "BT /F7 (a string in the way) 10 Tf");
    const streamEnd = text.indexOf("\nendstream", text.indexOf("BT /F7"));
    const named = Buffer.from(text.slice(0, streamEnd) + filler + text.slice(streamEnd), "latin1");
    expect(named.length).toBeGreaterThan(font.length);
    expect(outcome(() => inspectPdf(named, new InspectContext("pdf", NO_KNOWN_SECRETS)))).toMatch(/^secret_detected: .*read through their fonts' ToUnicode maps/);
  });

  it("finds in a part's UTF-16 readings what the readings made whole found, at the same byte, across blocks, at either alignment and order, with an odd last byte", () => {
    const key = positives(67)["github-token"]!;
    const next = rng(3);
    for (let round = 0; round < 24; round++) {
      const size = 70_000 + Math.floor(next() * 200_000);
      let part = Buffer.alloc(size, 0x01);
      const order = next() < 0.5 ? "le" : "be";
      const units = Buffer.from(`token ${key} end`, "utf16le");
      if (order === "be") units.swap16();
      const at = Math.max(8, Math.min(size - units.length, Math.floor(next() * size)));
      units.copy(part, at);
      if (order === "be") Buffer.from([0xfe, 0xff, 0x00, 0x41]).copy(part, at % 2 === 0 ? 0 : 1);
      // Every fourth: the key last in little-endian, its last NUL cut off (the odd last byte is its last letter's unit).
      if (round % 4 === 0) part = Buffer.concat([Buffer.alloc(size, 0x01), Buffer.from(`token ${key}`, "utf16le").subarray(0, -1)]);
      // The readings as they were made: each whole, an odd last byte made a unit with a NUL.
      const expected = (() => {
        for (const [shift, o, byteAt] of [[0, "le", 0], [1, "le", 0], [0, "be", 1], [1, "be", 1]] as const) {
          let u = part.subarray(shift);
          if (u.length % 2 === 1) u = Buffer.concat([u, Buffer.alloc(1)]);
          const finding = scanBytes(narrowedUtf16(u, o));
          if (finding) return `at byte ${finding.offset * 2 + shift + byteAt} of it`;
        }
        return "none";
      })();
      const got = outcome(() => new InspectContext("bin", NO_KNOWN_SECRETS).scan("the part", part));
      expect(got === "published" ? "none" : /at byte \d+ of it/.exec(got)?.[0], `round ${round}, ${order} at ${at} of ${size}`).toBe(expected);
      expect(expected).not.toBe("none");
    }
  });

  it("makes a UTF-16 XML part UTF-8 as Node's decoder and encoder do: pairs joined, a lone surrogate U+FFFD", () => {
    const next = rng(9);
    for (let round = 0; round < 50; round++) {
      const units = new Uint16Array(1 + Math.floor(next() * 300));
      for (let k = 0; k < units.length; k++) {
        const r = next();
        units[k] = r < 0.4 ? 0x20 + Math.floor(next() * 95) : r < 0.6 ? 0xd800 + Math.floor(next() * 0x400) : r < 0.8 ? 0xdc00 + Math.floor(next() * 0x400) : Math.floor(next() * 0x10000);
      }
      const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(units.buffer), next() < 0.5 ? Buffer.from([0x41]) : Buffer.alloc(0)]);
      const be = Buffer.from(le);
      be[0] = 0xfe;
      be[1] = 0xff;
      be.subarray(2, 2 + ((be.length - 2) & ~1)).swap16();
      const node = Buffer.from(Buffer.from(units.buffer).toString("utf16le"), "utf8");
      expect(Buffer.from(xmlAsUtf8(le)).equals(node), `round ${round} le`).toBe(true);
      expect(Buffer.from(xmlAsUtf8(be)).equals(node), `round ${round} be`).toBe(true);
    }
  });
});
