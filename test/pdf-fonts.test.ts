// Text drawn with an embedded subset font is glyph numbers, read back
// through the font's ToUnicode map (src/content/pdf-fonts.ts): the map's
// three kinds of entries, codes of one and two bytes, the font's name tied to
// its map wherever the file names it, and bounds on what a map may make.
import zlib from "node:zlib";
import { describe, expect, it } from "vitest";
import { InspectContext } from "../src/content/inspect.js";
import { NO_KNOWN_SECRETS } from "../src/content/known.js";
import { inspectPdf } from "../src/content/pdf.js";
import { objectNumberBefore, parseToUnicode } from "../src/content/pdf-fonts.js";
import { pdfOf, pdfSubsetFont, positives, type SubsetFontLayout } from "./corpus.js";

const cmap = (body: string) => Buffer.from(`/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n${body}\nendcmap CMapName currentdict /CMap defineresource pop end end`, "latin1");
const stream = (dict: string, body: Buffer) => Buffer.concat([Buffer.from(`<< ${dict} /Length ${body.length} >>\nstream\n`), body, Buffer.from("\nendstream")]);
const judge = (file: Buffer) => () => inspectPdf(file, new InspectContext("pdf", NO_KNOWN_SECRETS));

/** The text `map` makes of `codes` (hex digits). */
function decoded(map: string, codes: string): string {
  const parsed = parseToUnicode(cmap(map));
  if (!parsed) return "(no map)";
  const bytes = Buffer.from(codes, "hex");
  const chunks: string[] = [];
  // What the map writes, collected as text instead of UTF-8 bytes.
  const sink = { codePoint: (cp: number) => chunks.push(String.fromCodePoint(cp)), text: (s: string) => chunks.push(s) };
  parsed.decode(bytes, 0, bytes.length, sink as never);
  return chunks.join("");
}

/** A one-page PDF whose font /F1 has `map` as its ToUnicode map and whose content stream is `content` (deflated, unless a repetition would be a bomb). */
function pdfWithMap(map: Buffer, content: string, extra: Buffer[] = [], deflate = true): Buffer {
  const body = (b: Buffer) => (deflate ? stream("/Filter /FlateDecode", zlib.deflateSync(b)) : stream("", b));
  return pdfOf([
    Buffer.from("<< /Type /Catalog /Pages 2 0 R >>"),
    Buffer.from("<< /Type /Pages /Kids [3 0 R] /Count 1 >>"),
    Buffer.from("<< /Type /Page /Parent 2 0 R /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>"),
    body(Buffer.from(content, "latin1")),
    Buffer.from("<< /Type /Font /Subtype /Type0 /BaseFont /AAAAAA+Sans /Encoding /Identity-H /ToUnicode 6 0 R >>"),
    body(map),
    ...extra,
  ]);
}

describe("a font's ToUnicode map", () => {
  it("reads bfchar, bfrange and bfrange arrays, ligatures and code points past U+FFFF; an unmapped code reads as nothing", () => {
    const map = "1 begincodespacerange <0000> <FFFF> endcodespacerange\n2 beginbfchar <0003> <0041>\n<0004> /space endbfchar\n2 beginbfrange <0010> <0012> <0061>\n<0020> <0021> [<0066006C> <D83DDE00>] endbfrange";
    expect(decoded(map, "0003001000110012002000210099")).toBe("Aabcfl\u{1F600}");
  });

  it("reads codes of one byte, and mixed lengths by the codespace (one byte below 0x80, two from 0x81)", () => {
    expect(decoded("1 begincodespacerange <00> <FF> endcodespacerange 1 beginbfrange <01> <1A> <0061> endbfrange", "0102031a")).toBe("abcz");
    const mixed = "2 begincodespacerange <00> <80> <8140> <FEFE> endcodespacerange 2 beginbfchar <41> <0058> <8241> <0059> endbfchar";
    expect(decoded(mixed, "41824141")).toBe("XYX");
  });

  it("turns down what is not a map, and maps of nothing", () => {
    expect(parseToUnicode(cmap("1 begincodespacerange <0000> <FFFF> endcodespacerange"))).toBeUndefined();
    expect(parseToUnicode(Buffer.from("BT /F1 12 Tf (Hello) Tj ET"))).toBeUndefined();
    // A code of five bytes, a destination past 512 bytes, a range that runs backwards: left out.
    expect(parseToUnicode(cmap(`3 beginbfchar <0102030405> <0041> <0003> <${"0041".repeat(300)}> <0004> <0042> endbfchar 1 beginbfrange <0020> <0010> <0061> endbfrange`))?.size).toBe(1);
  });

  it("finds an object's number before its obj keyword, and nothing in endobj or a name", () => {
    const b = Buffer.from("12 0 obj << >> endobj /objective 7 0 obj");
    expect(objectNumberBefore(b, b.indexOf("obj"))).toBe(12);
    expect(objectNumberBefore(b, b.indexOf("endobj") + 3)).toBeUndefined();
    expect(objectNumberBefore(b, b.indexOf("/objective") + 1)).toBeUndefined();
    expect(objectNumberBefore(b, b.lastIndexOf("obj"))).toBe(7);
  });
});

describe("text drawn with a subset font (Chrome, WeasyPrint, LibreOffice)", () => {
  const key = positives()["github-token"]!;

  it("refuses a key drawn through the font's map in each way generators lay text out (fonts named inline, in an object or an object stream; codes of two bytes or one; a glyph at a time, lines placed by cm, a stream per line; a space mapped to a tab; /Length1 on the map)", () => {
    const layouts: SubsetFontLayout[] = [{}, { indirect: true }, { objectStream: true }, { codes: 1 }, { codes: 1, indirect: true }, { lines: "glyphs" }, { lines: "cm" }, { streamPerLine: true }, { lines: "cm", streamPerLine: true }, { spaceAsTab: true }, { length1: true }];
    for (const opts of layouts) {
      expect(judge(pdfSubsetFont(`Report\n${key}\nThanks`, opts)), JSON.stringify(opts)).toThrow(expect.objectContaining({ code: "secret_detected", message: expect.stringContaining("ToUnicode maps") }));
      expect(judge(pdfSubsetFont("Quarterly report\nRevenue grew by a tenth; costs fell.", opts)), JSON.stringify(opts)).not.toThrow();
    }
  });

  it("reads a long document as its pages draw it: each page starts anew (Chrome's page transform is never restored), a table's cells are words", () => {
    // The token alone: nothing but the text's separators keeps it from the digits before it.
    const token = /ghp_[A-Za-z0-9]+/.exec(key)![0];
    // 60 pages of five lines; the token on the last page, after a line that ends in digits.
    const lines = (last: string) => Array.from({ length: 300 }, (_, i) => (i === 297 ? last : `row ${i} 5feceb66ffc86f38d9527 53504`)).join("\n");
    for (const opts of [{ pages: 60 }, { pages: 60, streamPerLine: true }, { pages: 60, lines: "glyphs" }] satisfies SubsetFontLayout[]) {
      expect(judge(pdfSubsetFont(lines(token), opts)), JSON.stringify(opts)).toThrow(expect.objectContaining({ code: "secret_detected", message: expect.stringContaining("ToUnicode maps") }));
      expect(judge(pdfSubsetFont(lines("Revenue grew by a tenth"), opts)), JSON.stringify(opts)).not.toThrow();
    }
    // The token wrapped by the layout (LibreOffice, in a narrow cell): read with its pieces joined.
    // (A vendor's token cut is read joined at its rule's trigger; a Twilio API key, whose trigger does not read it so (a Google API key's does since 2026-12-05), by the words joined.)
    expect(judge(pdfSubsetFont(`Report\n14000\n${token.slice(0, 38)}\n${token.slice(38)}\n53504`))).toThrow(expect.objectContaining({ code: "secret_detected", message: expect.stringContaining("a GitHub token, with line breaks removed") }));
    const twilio = positives()["twilio-key"]!;
    expect(judge(pdfSubsetFont(`Report\n14000\n${twilio.slice(0, 20)}\n${twilio.slice(20)}\nTotal: 53504`))).toThrow(expect.objectContaining({ code: "secret_detected", message: expect.stringContaining("ToUnicode maps, its wrapped words joined") }));
    // Chrome's table: each cell a text object at its row's height; the token in the cell after a number, on the first page and the 60th.
    const rows = (cell: string) => Array.from({ length: 300 }, (_, i) => (i === 2 || i === 297 ? `14000|${cell}|53504` : `${i}|north south|53504`)).join("\n");
    for (const opts of [{ lines: "cells" }, { lines: "cells", pages: 60 }] satisfies SubsetFontLayout[]) {
      expect(judge(pdfSubsetFont(rows(token), opts)), JSON.stringify(opts)).toThrow(expect.objectContaining({ code: "secret_detected", message: expect.stringContaining("ToUnicode maps") }));
      expect(judge(pdfSubsetFont(rows("quarterly revenue"), opts)), JSON.stringify(opts)).not.toThrow();
    }
  });

  it("also reads a subset font's pieces placed anew where the ones before end (pdfkit and jsPDF: a Tm per piece) joined: a key in such pieces is refused (the red team's 32a/06)", () => {
    const token = /ghp_[A-Za-z0-9]+/.exec(key)![0];
    for (const codes of [1, 2] as const) {
      const pieces = (line: string) => pdfSubsetFont(`Report\n${line}\nTotal: 53504`, { lines: "pieces", codes });
      expect(judge(pieces(`${token.slice(0, 14)}|${token.slice(14, 30)}|${token.slice(30)}`)), `${codes}`).toThrow(
        expect.objectContaining({ code: "secret_detected", message: expect.stringContaining("ToUnicode maps, its pieces placed end to end joined") }),
      );
      expect(judge(pieces("quarterly-|report-|v2")), `${codes}`).not.toThrow();
    }
  });

  it("reads a name two fonts share (merged files) through each of their maps, and carries the font from one content stream to the next", () => {
    const letters = [...new Set(key)];
    const codes = (order: string[]) => `1 begincodespacerange <0000> <FFFF> endcodespacerange ${order.length} beginbfchar ${order.map((c, i) => `<${(i + 3).toString(16).padStart(4, "0")}> <${c.charCodeAt(0).toString(16).padStart(4, "0")}>`).join(" ")} endbfchar`;
    const shown = `<${[...key].map((c) => (letters.indexOf(c) + 3).toString(16).padStart(4, "0")).join("")}>`;
    // Font 5 (/F1 on page one) maps the codes otherwise; font 8 (/F1 of a merged page) maps them to the key.
    const file = pdfWithMap(cmap(codes([...letters].reverse())), `BT /F1 10 Tf 0 0 Td ${shown} Tj ET`, [
      Buffer.from("<< /Type /Page /Contents 9 0 R /Resources << /Font << /F1 8 0 R >> >> >>"),
      Buffer.from("<< /Type /Font /Subtype /Type0 /Encoding /Identity-H /ToUnicode 10 0 R >>"),
      stream("", Buffer.from("BT 0 0 Td (nothing) Tj ET")),
      stream("/Filter /FlateDecode", zlib.deflateSync(cmap(codes(letters)))),
    ]);
    expect(judge(file)).toThrow(expect.objectContaining({ code: "secret_detected" }));
    // The font chosen in stream 4 is still in use in stream 9.
    const carried = pdfWithMap(cmap(codes(letters)), "BT /F1 10 Tf ET", [stream("/Filter /FlateDecode", zlib.deflateSync(Buffer.from(`q BT 0 0 Td [${shown}] TJ ET Q`)))]);
    expect(judge(carried)).toThrow(expect.objectContaining({ code: "secret_detected" }));
  });

  it("reads the strings of a font whose encoding is Unicode itself (/UniGB-UCS2-H, no map) as UTF-16", () => {
    const ucs2 = (text: string) => `<${Buffer.from(text, "utf16le").swap16().toString("hex")}>`;
    const file = (text: string) =>
      pdfOf([
        Buffer.from("<< /Type /Catalog /Pages 2 0 R >>"),
        Buffer.from("<< /Type /Pages /Kids [3 0 R] /Count 1 >>"),
        Buffer.from("<< /Type /Page /Parent 2 0 R /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>"),
        stream("/Filter /FlateDecode", zlib.deflateSync(Buffer.from(`BT /F1 10 Tf 0 0 Td [${ucs2(text.slice(0, 9))} -20 ${ucs2(text.slice(9))}] TJ ET`))),
        Buffer.from("<< /Type /Font /Subtype /Type0 /BaseFont /STSong-Light /Encoding /UniGB-UCS2-H >>"),
      ]);
    expect(judge(file(`notes ${key} end`))).toThrow(expect.objectContaining({ code: "secret_detected" }));
    expect(judge(file("Quarterly report: revenue grew by a tenth."))).not.toThrow();
  });

  it("counts the text a map makes against the file's decode budget: a map of one code to 256 letters, shown 2 million times, is refused as decompression_bomb", () => {
    const map = cmap(`1 begincodespacerange <0000> <FFFF> endcodespacerange 1 beginbfchar <0003> <${"0041".repeat(256)}> endbfchar`);
    const content = `BT /F1 10 Tf <${"0003".repeat(2_000_000)}> Tj ET`;
    expect(judge(pdfWithMap(map, content))).toThrow(expect.objectContaining({ code: "decompression_bomb" }));
  });

  it("refuses as unscannable_content maps of more than a million entries in all, and a name shared by so many fonts that reading through each passes 16 MiB", () => {
    const entries = cmap(`1 begincodespacerange <0000> <FFFF> endcodespacerange 999999 beginbfchar ${"<0041> <0042> ".repeat(1_000_001)} endbfchar`);
    expect(judge(pdfWithMap(entries, "BT /F1 10 Tf <0041> Tj ET", [], false))).toThrow(expect.objectContaining({ code: "unscannable_content", message: expect.stringContaining("more than 1,000,000 entries") }));
    // Sixteen fonts named /F1, each with its map (font 5 and fifteen more: objects 7 + 2k, their maps 8 + 2k), each named in a resource dictionary of its own.
    const identity = cmap("1 begincodespacerange <0000> <FFFF> endcodespacerange 1 beginbfrange <0000> <FFFF> <0000> endbfrange");
    const more = Array.from({ length: 15 }, (_, k) => [Buffer.from(`<< /Type /Font /ToUnicode ${8 + 2 * k} 0 R >>`), stream("", identity)]).flat();
    const names = Array.from({ length: 15 }, (_, k) => Buffer.from(`<< /Font << /F1 ${7 + 2 * k} 0 R >> >>`));
    const shared = (strings: number) => pdfWithMap(identity, `BT /F1 10 Tf ${"<00410042> Tj ".repeat(strings)} ET`, [...more, ...names], false);
    expect(judge(shared(1000))).not.toThrow();
    expect(judge(shared(300_000))).toThrow(expect.objectContaining({ code: "unscannable_content", message: expect.stringContaining("shared by so many fonts") }));
  });

  it("gives a verdict in linear time on inputs built against each search: fonts' objects after long names holding obj, many names and references, pages' contents, a map of a million entries", () => {
    const map = cmap(`1 begincodespacerange <0000> <FFFF> endcodespacerange 1 beginbfrange <0000> <FFFF> <0000> endbfrange`);
    const shown = `BT /F1 10 Tf <${[...key].map((c) => c.charCodeAt(0).toString(16).padStart(4, "0")).join("")}> Tj ET`;
    // A searcher that looked back for each /ToUnicode to the file's start, or to the last obj of any kind, is quadratic here.
    const names = Buffer.from(`<< /x ${"/objobj ".repeat(200_000)} ${"/ToUnicode 6 0 R ".repeat(200_000)} >>`);
    expect(judge(pdfWithMap(map, shown, [names]))).toThrow(expect.objectContaining({ code: "secret_detected" }));
    const references = Buffer.from(`<< ${"/F1 5 0 R /Fx 99 0 R ".repeat(300_000)} >>`);
    expect(judge(pdfWithMap(map, shown, [references]))).toThrow(expect.objectContaining({ code: "secret_detected" }));
    // The pages' /Contents: the name repeated, and arrays of many references and of references cut short.
    const contents = Buffer.from(`<< ${"/Contents /Contents ".repeat(200_000)} /Contents [${"4 0 R ".repeat(300_000)}] ${"/Contents [4 0 ".repeat(100_000)} >>`);
    expect(judge(pdfWithMap(map, shown, [contents]))).toThrow(expect.objectContaining({ code: "secret_detected" }));
    // Operators whose operands the line reading reads back (Chrome's Td before every glyph, cm, q and Q), repeated.
    const operators = `BT /F1 10 Tf ${"<0041> Tj 6.4 0 Td 1 0 0 1 0 5 cm q q Q ".repeat(400_000)} ${shown.slice(3)}`;
    expect(judge(pdfWithMap(map, operators, [], false))).toThrow(expect.objectContaining({ code: "secret_detected" }));
    const big = cmap(`1 begincodespacerange <0000> <FFFF> endcodespacerange 65536 beginbfchar ${Array.from({ length: 65536 }, (_, i) => `<${i.toString(16).padStart(4, "0")}> <${i.toString(16).padStart(4, "0")}>`).join("\n")} endbfchar`);
    expect(judge(pdfWithMap(big, shown))).toThrow(expect.objectContaining({ code: "secret_detected" }));
    expect(judge(pdfWithMap(big, "BT /F1 10 Tf <00480069> Tj ET"))).not.toThrow();
  });
});
