// The layouts real generators write that the content check once read wrong,
// found by writing fake keys with the tools agents use (python-docx,
// openpyxl, python-pptx, odfpy, Pillow, exiftool, pypdf, README "Measured
// with the tools agents write files with"). Each file is built here byte
// for byte as the tool writes it: the tests need none of those tools.
import { describe, expect, it } from "vitest";
import { inspectBinary } from "../src/content/carriers.js";
import { NO_KNOWN_SECRETS } from "../src/content/known.js";
import { Refusal } from "../src/core/errors.js";
import { joinWrappedWords } from "../src/content/pdf-syntax.js";
import { checkContent } from "../src/prepare/content.js";
import { Fakes, jpeg, pdf, pdfOf, webp, zip } from "./corpus.js";
import { outcome } from "./helpers.js";

const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const f = new Fakes(2026);
const GITHUB = `ghp_${f.pick(ALNUM, 36)}`;
// 108 characters: an IPTC length of 0x006C, `l`.
const ANTHROPIC = `sk-ant-api03-${f.pick(`${ALNUM}_-`, 93)}AA`;
const PEM = f.pem("RSA PRIVATE KEY").trimEnd();
const TELEGRAM = `${f.pick("123456789", 1)}${f.pick("0123456789", 8)}:AA${f.pick(`${ALNUM}_-`, 33)}`;
const OPENROUTER = `OPENROUTER_API_KEY=${f.pick(ALNUM, 48)}`;
const CLEAN = "Quarterly summary 2026-Q3: revenue 1,234,567 EUR, churn 2.1%";

/** "published", or the refusal's code and reason. */
const judged = (bytes: Buffer, ext: string): string => outcome(() => inspectBinary(bytes, ext, ext, NO_KNOWN_SECRETS));

const xmlEscape = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/"/g, "&quot;");
/** An attribute's value as lxml and odfpy write it: a line break as `&#10;`. */
const attribute = (s: string) => xmlEscape(s).replace(/\n/g, "&#10;");

describe("XML attributes and OOXML strings", () => {
  // python-docx's alt text (docPr descr), python-pptx's shape name, an openpyxl validation's prompt, odfpy's sheet name.
  const docx = (descr: string) =>
    zip({
      "[Content_Types].xml": '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>',
      "word/document.xml": `<?xml version="1.0"?><w:document xmlns:w="w" xmlns:wp="wp"><w:body><w:p><w:r><w:drawing><wp:inline><wp:docPr id="1" name="Picture 1" descr="${attribute(descr)}"/></wp:inline></w:drawing></w:r></w:p></w:body></w:document>`,
    });
  const ods = (name: string) =>
    zip({
      mimetype: "application/vnd.oasis.opendocument.spreadsheet",
      "content.xml": `<?xml version="1.0"?><office:document-content xmlns:office="o" xmlns:table="t" xmlns:text="x"><office:body><office:spreadsheet><table:table table:name="${attribute(name)}"><table:table-row><table:table-cell><text:p>r0c0</text:p></table:table-cell></table:table-row></table:table></office:spreadsheet></office:body></office:document-content>`,
    });

  it("reads a PEM block in an attribute's value, its line breaks written as character references", () => {
    expect(judged(docx(PEM), "docx")).toMatch(/^secret_detected: .*private key.*the attributes of word\/document\.xml/);
    expect(judged(ods(PEM), "ods")).toMatch(/^secret_detected: .*private key.*the attributes of content\.xml/);
    expect(judged(docx(CLEAN), "docx")).toBe("published");
    expect(judged(docx(`${CLEAN}\n${CLEAN}`), "docx")).toBe("published");
    expect(judged(ods(CLEAN), "ods")).toBe("published");
  });

  // openpyxl: `ws.oddHeader.center.text = …` writes `&C` before the text, and a line break as `_x000a_`.
  const xlsx = (headerFooter: string) =>
    zip({
      "[Content_Types].xml": '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>',
      "xl/worksheets/sheet1.xml": `<?xml version="1.0"?><worksheet xmlns="s"><sheetData><row r="1"><c r="A1" t="s"><v>0</v></c></row></sheetData><headerFooter>${headerFooter}</headerFooter></worksheet>`,
    });
  const openpyxlText = (s: string) => xmlEscape(s).replace(/\n/g, "_x000a_");

  it("reads an Excel header's text without its codes, and OOXML's escaped line breaks", () => {
    expect(judged(xlsx(`<oddHeader>&amp;C${openpyxlText(GITHUB)}</oddHeader>`), "xlsx")).toMatch(/^secret_detected: .*GitHub token/);
    expect(judged(xlsx(`<oddFooter>&amp;L&amp;"Arial,Bold"&amp;12${openpyxlText(ANTHROPIC)}&amp;R&amp;P</oddFooter>`), "xlsx")).toMatch(/^secret_detected: .*Anthropic/);
    expect(judged(xlsx(`<firstHeader>&amp;K00FF00${openpyxlText(GITHUB)}</firstHeader>`), "xlsx")).toMatch(/^secret_detected: .*GitHub token/);
    expect(judged(xlsx(`<oddHeader>&amp;C${openpyxlText(PEM)}</oddHeader>`), "xlsx")).toMatch(/^secret_detected: .*private key/);
    expect(judged(xlsx(`<oddHeader>&amp;C${openpyxlText(CLEAN)}&amp;R&amp;D</oddHeader><oddFooter>&amp;CPage &amp;P of &amp;N</oddFooter>`), "xlsx")).toBe("published");
  });
});

describe("picture metadata", () => {
  const utf16 = (s: string) => Buffer.from(s, "utf16le").toString("latin1");
  // A TIFF header and an IFD offset, then the UserComment value: its character code and UTF-16LE text (Pillow, exiftool).
  const userComment = (s: string) => `\x08\0\0\0UNICODE\0${utf16(s)}`;

  it("reads an EXIF UserComment in UTF-16 after its character code, in a JPEG and a WebP", () => {
    for (const key of [GITHUB, ANTHROPIC]) {
      expect(judged(jpeg({ exifText: userComment(key) }), "jpg")).toMatch(/^secret_detected: /);
      expect(judged(webp(`II*\0${userComment(key)}`), "webp")).toMatch(/^secret_detected: /);
    }
    expect(judged(jpeg({ exifText: userComment(CLEAN) }), "jpg")).toBe("published");
    expect(judged(webp(`II*\0${userComment(CLEAN)}`), "webp")).toBe("published");
  });

  // exiftool -IPTC:Caption-Abstract=…: a Photoshop APP13 segment, an 8BIM resource 0x0404, a dataset 2:120.
  const withIptc = (caption: string) => {
    const text = Buffer.from(caption);
    const dataset = Buffer.concat([Buffer.from([0x1c, 2, 120, text.length >> 8, text.length & 0xff]), text]);
    const size = Buffer.alloc(4);
    size.writeUInt32BE(dataset.length);
    const data = Buffer.concat([Buffer.from("Photoshop 3.0\0" + "8BIM\x04\x04\0\0", "latin1"), size, dataset, Buffer.alloc(dataset.length & 1)]);
    const head = Buffer.from([0xff, 0xed, 0, 0]);
    head.writeUInt16BE(data.length + 2, 2);
    const plain = jpeg();
    // After the SOI and the APP0 segment (2 + 18 bytes).
    return Buffer.concat([plain.subarray(0, 20), head, data, plain.subarray(20)]);
  };

  it("reads each IPTC dataset apart from its length, whose last byte may be a letter", () => {
    expect(ANTHROPIC.length).toBe(0x6c);
    expect(judged(withIptc(ANTHROPIC), "jpg")).toMatch(/^secret_detected: .*Anthropic.*IPTC datasets/);
    expect(judged(withIptc(CLEAN), "jpg")).toBe("published");
  });
});

describe("PDF objects", () => {
  // pypdf's FreeText annotation: its /Contents a literal string with `_` written `\137`, after the Info's strings.
  const withAnnotation = (contents: string) =>
    pdfOf([
      Buffer.from("<< /Type /Catalog /Pages 2 0 R >>"),
      Buffer.from("<< /Type /Pages /Kids [3 0 R] /Count 1 >>"),
      Buffer.from("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Annots [5 0 R] >>"),
      Buffer.from("<< /Author (anonymous) /Subject (unspecified) /Title (untitled) /Trapped /False >>"),
      Buffer.from(`<< /Subtype /FreeText /Rect [ 50 550 500 700 ] /Contents (${contents.replace(/_/g, "\\137").replace(/[()]/g, "\\$&")}) /DA (0.0 0.0 0.0 rg) >>`),
    ]);

  it("reads each string of the objects on a line of its own", () => {
    expect(judged(withAnnotation(GITHUB), "pdf")).toMatch(/^secret_detected: .*GitHub token.*strings of the PDF's objects/);
    expect(judged(withAnnotation(ANTHROPIC), "pdf")).toMatch(/^secret_detected: .*Anthropic/);
    expect(judged(withAnnotation(CLEAN), "pdf")).toBe("published");
  });
});

describe("PDF text wrapped in a narrow cell", () => {
  // fpdf2's multi_cell(45, …) with DejaVu: a line every 21 or 22 characters, the first piece of a value after its `=` or `:` short.
  const wrapped = (s: string, width: number) => (s.match(new RegExp(`[\\s\\S]{1,${width}}`, "g")) ?? []).join("\n");

  it("joins a name and the start of its value, wrapped with the value's rest, as one word", () => {
    // A Telegram token cut is read joined by its rule's own trigger in the shown text (find.ts), before the words are joined.
    expect(judged(pdf(`Report\n${wrapped(TELEGRAM, 21)}`), "pdf")).toMatch(/^secret_detected: .*Telegram bot token, with line breaks removed/);
    expect(judged(pdf(`Report\n${wrapped(OPENROUTER, 20)}`), "pdf")).toMatch(/^secret_detected: .*wrapped words joined/);
    // A value that fits its line, then a line of its own: not joined.
    expect(joinWrappedWords(Buffer.from("DB_PASSWORD=admin123\nexport PGPASSWORD=P@ssw0rd1\n"))).toBeUndefined();
    expect(judged(pdf(`Report\n${wrapped(`${CLEAN} see ${"https://example.com/reports/2026/q3?id=42&view=full"}`, 21)}`), "pdf")).toBe("published");
  });
});

describe("text read as what it means", () => {
  /** checkContent's verdict on a text file of `ext` holding `text`. */
  const judged = async (text: string, ext: string) => {
    const content = Buffer.from(text);
    try {
      await checkContent({ fd: -1, bytes: content.length, content }, ext, { known: NO_KNOWN_SECRETS });
      return "published";
    } catch (err) {
      if (!(err instanceof Refusal)) throw err;
      return `${err.code}: ${err.message}`;
    }
  };
  // matplotlib's SVG with svg.fonttype 'none': each line of a title its own `<text>` element, its style and place before it.
  const svg = (title: string, anchor = (_line: number) => "middle") =>
    `<?xml version="1.0" encoding="utf-8" standalone="no"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="432pt" height="216pt" viewBox="0 0 432 216">\n <g id="text_1">\n${title
      .split("\n")
      .map((line, i) => `    <text style="font-size: 5px; font-family: 'DejaVu Sans', sans-serif; text-anchor: ${anchor(i)}" x="216" y="${20 + 6 * i}" transform="rotate(-0 216 ${20 + 6 * i})">${line.replace(/&/g, "&amp;").replace(/</g, "&lt;")}</text>`)
      .join("\n")}\n </g>\n</svg>\n`;
  // pandas' to_json: a string's line breaks `\n`, its slashes `\/`.
  const json = (cell: string) => JSON.stringify({ item: { "0": "alpha", "1": cell }, value: { "0": 1, "1": 2 } }).replace(/\//g, "\\/");

  it("reads an SVG's text, tags removed, and JSON's escaped slashes as slashes", async () => {
    // matplotlib's lines carry the same tags but their y (a number): read without those marks as they are (line-decorations.ts).
    expect(await judged(svg(PEM), "svg")).toMatch(/^secret_detected: .*private key block/);
    // Tags that differ from line to line beyond a number: the key is read with the tags removed.
    expect(await judged(svg(PEM, (i) => (i % 2 ? "start" : "middle")), "svg")).toMatch(/^secret_detected: .*private key.*tags removed/);
    expect(await judged(json(PEM), "json")).toMatch(/^secret_detected: .*private key.*read as/);
    expect(await judged(svg(`Revenue\n${CLEAN}`), "svg")).toBe("published");
    expect(await judged(json(`${CLEAN} https://example.com/a/b`), "json")).toBe("published");
  });

  it("reads an HTML code block whose key a highlighter cut into spans at each `-` (Pygments' markup)", async () => {
    const key = `sk-ant-api03-${new Fakes(41).pick("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 93)}AA`;
    const spans = key.split("-").map((part) => `<span class="n">${part}</span>`).join('<span class="o">-</span>');
    const html = `<html><body><pre><code><span class="n">client</span> <span class="o">=</span> <span class="n">Anthropic</span><span class="p">()</span>\n# ${spans}\n</code></pre></body></html>\n`;
    expect(await judged(html, "html")).toMatch(/^secret_detected: .*Anthropic API key.*tags removed/);
    expect(await judged(html.replace(key.split("-").at(-1)!, "REDACTED"), "html")).toBe("published");
  });
});
