// The sniff answers what file-type answers on the whole file: its shortcut for
// Office files (the first entry inflated here, handed to file-type stored)
// must never change a verdict.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileTypeFromBuffer } from "file-type/core";
import { afterAll, describe, expect, it } from "vitest";
import { sniff } from "../src/prepare/sniff.js";
import { docx, pptx, rng, xlsx, zip } from "./corpus.js";

const types = (main: string) =>
  `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/>${main}</Types>`;
const override = (part: string, type: string) => `<Override PartName="${part}" ContentType="${type}"/>`;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "mo-sniff-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/**
 * What each answers, or that it threw: the sniff of the bytes in memory, the
 * sniff of them as a staged file (read through its descriptor), and
 * file-type on the bytes.
 */
async function both(bytes: Buffer): Promise<[unknown, unknown]> {
  const ours = await sniff({ fd: -1, bytes: bytes.length, content: bytes }).catch((err: Error) => `threw ${err.message}`);
  const file = path.join(dir, "staged.part");
  fs.writeFileSync(file, bytes);
  const fd = fs.openSync(file, "r");
  const fromFile = await sniff({ fd, bytes: bytes.length }).catch((err: Error) => `threw ${err.message}`);
  fs.closeSync(fd);
  const theirs = await fileTypeFromBuffer(bytes).catch((err: Error) => `threw ${err.message}`);
  expect(fromFile).toEqual(ours);
  return [ours, theirs];
}

/** `bytes` with the flag bits `set` in every local and central header. */
function withFlags(bytes: Buffer, set: number): Buffer {
  const b = Buffer.from(bytes);
  for (let at = 0; at + 4 <= b.length; at++) {
    const sig = b.readUInt32LE(at);
    if (sig === 0x04034b50) b.writeUInt16LE(b.readUInt16LE(at + 6) | set, at + 6);
    if (sig === 0x02014b50) b.writeUInt16LE(b.readUInt16LE(at + 8) | set, at + 8);
  }
  return b;
}

describe("sniff", () => {
  it("answers as file-type does on the whole file, for Office files, other zips and damaged ones", async () => {
    const text = "quarterly notes, nothing secret";
    const cases: Record<string, Buffer> = {
      docx: docx(text),
      xlsx: xlsx(text),
      pptx: pptx(text),
      "macro-enabled workbook": zip({ "[Content_Types].xml": types(override("/xl/workbook.xml", "application/vnd.ms-excel.sheet.macroEnabled.main+xml")), "xl/workbook.xml": "<workbook/>" }),
      "Word template": zip({ "[Content_Types].xml": types(override("/word/document.xml", "application/vnd.openxmlformats-officedocument.wordprocessingml.template.main+xml")), "word/document.xml": "<w/>" }),
      slideshow: zip({ "[Content_Types].xml": types(override("/ppt/presentation.xml", "application/vnd.openxmlformats-officedocument.presentationml.slideshow.main+xml")), "ppt/presentation.xml": "<p/>" }),
      "3D model": zip({ "[Content_Types].xml": types('<Default Extension="model" ContentType="application/vnd.ms-package.3dmanufacturing-3dmodel+xml"/>'), "3D/3dmodel.model": "<model/>" }),
      "an unknown main part": zip({ "[Content_Types].xml": types(override("/x/main.xml", "application/x-unknown.main+xml")), "x/main.xml": "<x/>" }),
      "no main part, word/ after": zip({ "[Content_Types].xml": types(""), "word/document.xml": "<w/>" }),
      "[Content_Types].xml second": zip({ "_rels/.rels": "<Relationships/>", "[Content_Types].xml": types(override("/word/document.xml", "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml")), "word/document.xml": "<w/>" }),
      "[Content_Types].xml stored": zip({ "[Content_Types].xml": types(override("/word/document.xml", "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml")), "word/document.xml": "<w/>" }, true),
      "an OpenDocument text": zip({ mimetype: "application/vnd.oasis.opendocument.text", "content.xml": "<office/>" }, true),
      "an EPUB": zip({ mimetype: "application/epub+zip", "META-INF/container.xml": "<container/>" }, true),
      "a plain zip": zip({ "notes.txt": text, "chart.csv": "a,b\n1,2\n" }),
      "a data descriptor flag": withFlags(docx(text), 0x08),
    };
    // Its first entry's deflate stream damaged: file-type's own reading decides.
    const damaged = Buffer.from(docx(text));
    damaged.fill(0xff, 30 + "[Content_Types].xml".length, 30 + "[Content_Types].xml".length + 12);
    cases["a damaged [Content_Types].xml"] = damaged;
    // More than file-type inflates for detection (1 MiB).
    cases["a [Content_Types].xml over 1 MiB"] = zip({ "[Content_Types].xml": types(`<!--${"x".repeat(1100 * 1024)}-->${override("/word/document.xml", "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml")}`), "word/document.xml": "<w/>" });
    for (const [name, bytes] of Object.entries(cases)) {
      const [ours, theirs] = await both(bytes);
      expect(ours, name).toEqual(theirs);
    }
    expect((await both(cases.docx!))[0]).toEqual({ ext: "docx", mime: "application/vnd.openxmlformats-officedocument.wordprocessingml.document" });
    expect((await both(cases["[Content_Types].xml second"]!))[0]).toMatchObject({ ext: "docx" });
  });

  it("answers as file-type does on 3,000 mutated Office files", async () => {
    const random = rng(31);
    const originals = [docx("one two three"), xlsx("a\nb"), pptx("slide")];
    const differ: string[] = [];
    for (let n = 0; n < 3000; n++) {
      const bytes = Buffer.from(originals[n % originals.length]!);
      // Mutations within the first entry and the directory, where the shortcut reads.
      for (let k = 1 + Math.floor(random() * 4); k > 0; k--) {
        const at = random() < 0.5 ? Math.floor(random() * Math.min(bytes.length, 400)) : bytes.length - 1 - Math.floor(random() * Math.min(bytes.length, 200));
        bytes[at] = Math.floor(random() * 256);
      }
      const [ours, theirs] = await both(bytes);
      if (JSON.stringify(ours) !== JSON.stringify(theirs)) differ.push(`${n}: ${JSON.stringify(ours)} vs ${JSON.stringify(theirs)}`);
    }
    expect(differ).toEqual([]);
  });
});
