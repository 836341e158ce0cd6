// A FlateDecode stream's TIFF and PNG predictors (PDF 32000-1, 7.4.4.4) are
// undone before its bytes are read: undoPredictor, which works in place,
// must give what the straightforward reading below gives (a fresh output,
// rows and components unpacked), and PDFs written with each predictor are
// read as their text. Parameters out of range and rows that name no PNG
// filter are refused; /DecodeParms pair with the filters as poppler and
// pdf.js pair them.
import zlib from "node:zlib";
import { describe, expect, it } from "vitest";
import { InspectContext } from "../src/content/inspect.js";
import { NO_KNOWN_SECRETS } from "../src/content/known.js";
import { inspectPdf } from "../src/content/pdf.js";
import { decodeParmsOf, type Predictor, predictorOf, undoPredictor } from "../src/content/pdf-predictor.js";
import { outcome } from "./helpers.js";
import { pdfOf, positives, rng } from "./corpus.js";

const rowBytesOf = (p: Predictor) => Math.ceil((p.columns * p.colors * p.bitsPerComponent) / 8);
const pixelBytesOf = (p: Predictor) => Math.ceil((p.colors * p.bitsPerComponent) / 8);

/** A row's components, `bits` wide, high bit first (whole components only). */
function unpack(row: number[], bits: number, count: number): number[] {
  const values: number[] = [];
  for (let c = 0; c < count && (c + 1) * bits <= row.length * 8; c++) {
    let v = 0;
    for (let b = c * bits; b < (c + 1) * bits; b++) v = v * 2 + ((row[b >> 3]! >> (7 - (b % 8))) & 1);
    values.push(v);
  }
  return values;
}

/** `row` with its first components replaced by `values`, `bits` wide (the bits after them kept). */
function pack(row: number[], values: number[], bits: number): number[] {
  const out = [...row];
  values.forEach((v, c) => {
    for (let k = 0; k < bits; k++) {
      const b = c * bits + k;
      const bit = Math.floor(v / 2 ** (bits - 1 - k)) % 2;
      out[b >> 3] = (out[b >> 3]! & ~(1 << (7 - (b % 8)))) | (bit << (7 - (b % 8)));
    }
  });
  return out;
}

/** The predictor undone, written for clarity: a fresh output, row by row; throws on a last row cut short (a PNG filter byte alone ends the data). */
function reference(data: Uint8Array, p: Predictor): Buffer {
  const rowBytes = rowBytesOf(p);
  const out: number[] = [];
  if (p.predictor === 2) {
    if (data.length % rowBytes !== 0) throw new Error("cut");
    const mod = 2 ** p.bitsPerComponent;
    for (let r = 0; r < data.length; r += rowBytes) {
      const row = [...data.subarray(r, r + rowBytes)];
      const values = unpack(row, p.bitsPerComponent, p.columns * p.colors);
      for (let c = p.colors; c < values.length; c++) values[c] = (values[c]! + values[c - p.colors]!) % mod;
      out.push(...pack(row, values, p.bitsPerComponent));
    }
    return Buffer.from(out);
  }
  const bpp = pixelBytesOf(p);
  let above: number[] = new Array(rowBytes).fill(0);
  for (let i = 0; i < data.length; ) {
    const filter = data[i++]!;
    const raw = [...data.subarray(i, i + rowBytes)];
    if (raw.length === 0) break;
    if (raw.length < rowBytes) throw new Error("cut");
    i += raw.length;
    const row: number[] = [];
    raw.forEach((x, j) => {
      const a = j >= bpp ? row[j - bpp]! : 0;
      const b = above[j]!;
      const c = j >= bpp ? above[j - bpp]! : 0;
      const pa = Math.abs(b - c);
      const pb = Math.abs(a - c);
      const pc = Math.abs(a + b - 2 * c);
      const predicted = [0, a, b, Math.floor((a + b) / 2), pa <= pb && pa <= pc ? a : pb <= pc ? b : c][filter];
      if (predicted === undefined) throw new Error(`filter ${filter}`);
      row.push((x + predicted) % 256);
    });
    out.push(...row);
    above = row;
  }
  return Buffer.from(out);
}

/** What an encoder writes: `raw`, padded with spaces to whole rows, as row differences, PNG rows filtered with `filterOf(row)`. */
function encode(unpadded: Buffer, p: Predictor, filterOf: (row: number) => number): Buffer {
  const rowBytes = rowBytesOf(p);
  const raw = Buffer.concat([unpadded, Buffer.alloc((rowBytes - (unpadded.length % rowBytes)) % rowBytes, 32)]);
  const out: number[] = [];
  if (p.predictor === 2) {
    const mod = 2 ** p.bitsPerComponent;
    for (let r = 0; r < raw.length; r += rowBytes) {
      const row = [...raw.subarray(r, r + rowBytes)];
      const values = unpack(row, p.bitsPerComponent, p.columns * p.colors);
      const diffs = values.map((v, c) => (c < p.colors ? v : (v - values[c - p.colors]! + mod) % mod));
      out.push(...pack(row, diffs, p.bitsPerComponent));
    }
    return Buffer.from(out);
  }
  const bpp = pixelBytesOf(p);
  for (let r = 0, n = 0; r < raw.length; r += rowBytes, n++) {
    const filter = filterOf(n);
    out.push(filter);
    for (let j = 0; j < Math.min(rowBytes, raw.length - r); j++) {
      const a = j >= bpp ? raw[r + j - bpp]! : 0;
      const b = r > 0 ? raw[r - rowBytes + j]! : 0;
      const c = r > 0 && j >= bpp ? raw[r - rowBytes + j - bpp]! : 0;
      const p0 = a + b - c;
      const paeth = Math.abs(p0 - a) <= Math.abs(p0 - b) && Math.abs(p0 - a) <= Math.abs(p0 - c) ? a : Math.abs(p0 - b) <= Math.abs(p0 - c) ? b : c;
      out.push((raw[r + j]! - [0, a, b, (a + b) >> 1, paeth][filter]! + 256) % 256);
    }
  }
  return Buffer.from(out);
}

const refusal = (why: string) => Object.assign(new Error(why), { code: "unscannable_content" });
const parms = (text: string) => predictorOf({ dict: text }, refusal);
const context = () => new InspectContext("pdf", NO_KNOWN_SECRETS);
const judge = (file: Buffer) => outcome(() => inspectPdf(file, context()));

/** A one-page PDF whose content stream is `body`, its dictionary's entries `entries` (the filter and parameters). */
function pagePdf(entries: string, body: Buffer, extra: Buffer[] = []): Buffer {
  return pdfOf([
    Buffer.from("<< /Type /Catalog /Pages 2 0 R >>"),
    Buffer.from("<< /Type /Pages /Kids [3 0 R] /Count 1 >>"),
    Buffer.from("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>"),
    Buffer.concat([Buffer.from(`<< /Length ${body.length} ${entries} >>\nstream\n`, "latin1"), body, Buffer.from("\nendstream")]),
    Buffer.from("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"),
    ...extra,
  ]);
}

const KEY = positives(31)["github-token"]!;
const page = (text: string) => Buffer.from(`BT /F1 10 Tf 50 750 Td (notes ${text} end) Tj ET\n`, "latin1");
const PLAIN = "quarterly figures, nothing secret";

describe("FlateDecode predictors", () => {
  it("undoes every predictor in place as the straightforward reading does, on random data: random rows' filter bytes 0 to 4, every component width, and refuses a last row cut short as it does", () => {
    const random = rng(4444);
    const widths = [1, 2, 3, 4, 5, 7, 8, 12, 16];
    let cut = 0;
    for (let n = 0; n < 3000; n++) {
      const p: Predictor = {
        predictor: random() < 0.3 ? 2 : 10 + Math.floor(random() * 6),
        colors: 1 + Math.floor(random() * 4),
        bitsPerComponent: widths[Math.floor(random() * widths.length)]!,
        columns: 1 + Math.floor(random() * 17),
      };
      // TIFF components of more than 8 bits are refused (predictorOf): not read here.
      if (p.predictor === 2) p.bitsPerComponent = Math.min(p.bitsPerComponent, 8);
      const rowIn = rowBytesOf(p) + (p.predictor === 2 ? 0 : 1);
      // Whole rows mostly; a row cut short (or a PNG filter byte alone) one time in four.
      const length = rowIn * Math.floor(random() * 12) + (random() < 0.25 ? Math.floor(random() * rowIn) : 0);
      const data = Buffer.from(Array.from({ length }, () => Math.floor(random() * 256)));
      if (p.predictor !== 2) for (let i = 0; i < length; i += rowBytesOf(p) + 1) data[i] = Math.floor(random() * 5);
      let expected: Buffer | undefined;
      try {
        expected = reference(data, p);
      } catch {
        cut++;
      }
      // In a buffer of its own with room after it, as inflate gives it: the result is a view of its start.
      const copy = Buffer.concat([data, Buffer.alloc(7, 0xee)]).subarray(0, length);
      if (expected === undefined) {
        expect(() => undoPredictor(copy, p, refusal), `${JSON.stringify(p)} ${data.toString("hex")}`).toThrow(/last predicted row of \d+ bytes/);
        continue;
      }
      const got = undoPredictor(copy, p, refusal);
      expect(Buffer.from(got), `${JSON.stringify(p)} ${data.toString("hex")}`).toEqual(expected);
      expect(got.buffer).toBe(copy.buffer);
    }
    expect(cut).toBeGreaterThan(300);
  });

  it("gives back the bytes an encoder started from, for each PNG filter and TIFF at each width", () => {
    const random = rng(2083);
    for (const predictor of [2, 10, 11, 12, 13, 14, 15]) {
      for (const bitsPerComponent of predictor === 2 ? [1, 2, 4, 8] : [1, 2, 4, 8, 16]) {
        for (const filter of [0, 1, 2, 3, 4, -1]) {
          const p: Predictor = { predictor, colors: 3, bitsPerComponent, columns: 5 };
          // Whole rows (an encoder pads the last).
          const raw = Buffer.from(Array.from({ length: 7 * rowBytesOf(p) }, () => Math.floor(random() * 256)));
          const encoded = encode(raw, p, (row) => (filter >= 0 ? filter : row % 5));
          expect(Buffer.from(undoPredictor(encoded, p, refusal)), JSON.stringify({ p, filter })).toEqual(raw);
        }
      }
    }
  });

  it("reads a page written with each predictor (PNG rows of each filter, PNG 10 to 15 and 16-bit, TIFF at 8 and 4 bits): a key in it is refused, plain text published (the red team's 06: a /Predictor 12 page was published)", () => {
    const cases: [string, Predictor, number][] = [];
    for (const filter of [0, 1, 2, 3, 4]) cases.push([`/Predictor 12 /Columns 7`, { predictor: 12, colors: 1, bitsPerComponent: 8, columns: 7 }, filter]);
    for (const predictor of [10, 11, 13, 14, 15]) cases.push([`/Predictor ${predictor} /Colors 3 /Columns 4`, { predictor, colors: 3, bitsPerComponent: 8, columns: 4 }, predictor === 15 ? -1 : predictor - 10]);
    cases.push([`/Predictor 2 /Colors 2 /Columns 9`, { predictor: 2, colors: 2, bitsPerComponent: 8, columns: 9 }, 0]);
    cases.push([`/Predictor 2 /Colors 1 /BitsPerComponent 4 /Columns 12`, { predictor: 2, colors: 1, bitsPerComponent: 4, columns: 12 }, 0]);
    cases.push([`/Predictor 12 /BitsPerComponent 16 /Colors 2 /Columns 3`, { predictor: 12, colors: 2, bitsPerComponent: 16, columns: 3 }, 4]);
    for (const [entries, p, filter] of cases) {
      const file = (text: string) => pagePdf(`/Filter /FlateDecode /DecodeParms << ${entries} >>`, zlib.deflateSync(encode(page(text), p, (row) => (filter >= 0 ? filter : row % 5))));
      expect(judge(file(KEY)), entries).toMatch(/^secret_detected: .*GitHub token/);
      expect(judge(file(PLAIN)), entries).toBe("published");
    }
  });

  it("undoes the predictor of an object stream, an embedded file, XMP metadata, a stream marked /Length1, and of a Flate filter after another (parameters paired with the filters' array)", () => {
    const p: Predictor = { predictor: 12, colors: 1, bitsPerComponent: 8, columns: 6 };
    const png = (text: string) => zlib.deflateSync(encode(Buffer.from(text, "latin1"), p, (row) => 1 + (row % 4)));
    const stream = (entries: string, body: Buffer) => Buffer.concat([Buffer.from(`<< /Length ${body.length} ${entries} >>\nstream\n`, "latin1"), body, Buffer.from("\nendstream")]);
    const parmsText = "/DecodeParms << /Predictor 12 /Columns 6 >>";
    const extras: [string, (text: string) => Buffer][] = [
      ["object stream", (text) => stream(`/Type /ObjStm /N 1 /First 4 /Filter /FlateDecode ${parmsText}`, png(`7 0 << /Subject (${text}) >>`))],
      ["embedded file", (text) => stream(`/Type /EmbeddedFile /Filter /FlateDecode ${parmsText}`, png(`deploy notes\n${text}\n`))],
      ["XMP metadata", (text) => stream(`/Type /Metadata /Subtype /XML /Filter /FlateDecode ${parmsText}`, png(`<x:xmpmeta><dc:description>${text}</dc:description></x:xmpmeta>`))],
      ["[/ASCIIHexDecode /FlateDecode]", (text) => stream(`/Filter [/ASCIIHexDecode /FlateDecode] /DecodeParms [null << /Predictor 12 /Columns 6 >>]`, Buffer.from(`${png(`BT (${text}) Tj ET`).toString("hex")}>`))],
      ["/DP", (text) => stream(`/Filter /FlateDecode /DP << /Predictor 12 /Columns 6 >>`, png(`BT (${text}) Tj ET`))],
      // A /Length1 stream is judged by its first bytes (a font program, or a map jsPDF marks so); predicted, it is read whole.
      ["/Length1", (text) => stream(`/Length1 40 /Filter /FlateDecode ${parmsText}`, png(`BT (${text}) Tj ET`))],
    ];
    for (const [name, extra] of extras) {
      const file = (text: string) => pagePdf("", page(PLAIN), [extra(text)]);
      expect(judge(file(KEY)), name).toMatch(/^secret_detected: .*GitHub token/);
      expect(judge(file(PLAIN)), name).toBe("published");
    }
  });

  it("pairs /DecodeParms with the filters as poppler and pdf.js do: an array with a filter name, or a dictionary with a filter array, gives no predictor (the bytes are read as they are); /Predictor 1 and below is none", () => {
    const plain = zlib.deflateSync(page(KEY));
    for (const entries of ["/Filter /FlateDecode /DecodeParms [<< /Predictor 12 /Columns 7 >>]", "/Filter [/FlateDecode] /DecodeParms << /Predictor 12 /Columns 7 >>", "/Filter /FlateDecode /DecodeParms << /Predictor 1 /Columns 7 >>", "/Filter /FlateDecode /DecodeParms << /Predictor 0 >>", "/Filter /FlateDecode /DecodeParms << /Columns 7 >>", "/Filter /FlateDecode /DecodeParms null", "/Filter [/FlateDecode] /DecodeParms [null]", "/Filter [/FlateDecode] /DecodeParms []"]) {
      expect(judge(pagePdf(entries, plain)), entries).toMatch(/^secret_detected: .*GitHub token/);
    }
    expect(decodeParmsOf("/Filter [/A /B /C] /DecodeParms [null << /Predictor 12 >> 9 0 R]", true)).toEqual(["null", { dict: " /Predictor 12 " }, "reference"]);
    expect(decodeParmsOf("/Filter /A /DecodeParms<</Predictor 2>>", false)).toEqual([{ dict: "/Predictor 2" }]);
    expect(decodeParmsOf("/Filter /A /DecodeParms<</Predictor 2>>/DP << /Predictor 12 >>", false)).toBe("both");
    expect(decodeParmsOf("/Filter /A /DecodeParmsX << /Predictor 2 >>", false)).toEqual([]);
  });

  it("undoes a predictor in place: what it gives of inflate's output still owns its buffer (a content stream is not copied again)", () => {
    const ctx = context();
    const out = ctx.inflate("s", zlib.deflateSync(Buffer.from([2, 97, 98, 99, 2, 1, 1, 1])), "zlib");
    const undone = undoPredictor(out, { predictor: 12, colors: 1, bitsPerComponent: 8, columns: 3 }, refusal);
    expect(Buffer.from(undone).toString("latin1")).toBe("abcbcd");
    expect(ctx.ownsBufferOf(ctx.shortened(out, undone))).toBe(true);
    expect(ctx.ownsBufferOf(ctx.shortened(out, Buffer.from(undone)))).toBe(false);
  });

  it("refuses as unscannable_content, saying why, what poppler and pdf.js read differently or not at all: a predictor or parameters out of range, parameters it would have to follow, /BPC, /DP beside /DecodeParms, TIFF past 8 bits, a PNG row that names no filter, a last row cut short", () => {
    const cases: [string, RegExp][] = [
      ["/Predictor 5", /names \/Predictor 5, which is none of 1, 2 and 10 to 15/],
      ["/Predictor 16", /\/Predictor 16/],
      ["/Predictor 12.5", /\/Predictor as something other than a whole number/],
      ["/Predictor 12 /Colors 0", /\/Colors 0, not 1 to 32/],
      ["/Predictor 12 /Colors 33", /\/Colors 33/],
      ["/Predictor 2 /BitsPerComponent 0", /\/BitsPerComponent 0, not 1 to 16/],
      ["/Predictor 2 /BitsPerComponent 32", /\/BitsPerComponent 32/],
      ["/Predictor 12 /Columns 0", /\/Columns 0/],
      ["/Predictor 12 /Columns 3000000000", /\/Columns 3000000000/],
      ["/Predictor 12 /Columns 7 0 R", /\/Columns as an indirect object/],
      ["/Predictor 2 /BitsPerComponent 16", /TIFF predictor on components of 16 bits, which poppler and pdf.js read differently/],
      ["/Predictor 12 /BPC 16", /as \/BPC, which poppler does not read and pdf.js does/],
    ];
    for (const [entries, why] of cases) {
      expect(() => parms(entries), entries).toThrow(why);
      expect(judge(pagePdf(`/Filter /FlateDecode /DecodeParms << ${entries} >>`, zlib.deflateSync(page(PLAIN)))), entries).toMatch(/^unscannable_content: /);
    }
    expect(judge(pagePdf("/Filter /FlateDecode /DecodeParms 9 0 R", zlib.deflateSync(page(PLAIN))))).toMatch(/^unscannable_content: .*\/DecodeParms in an indirect object/);
    expect(judge(pagePdf("/Filter /FlateDecode /DecodeParms << /Predictor 12 >> /DP << /Predictor 1 >>", zlib.deflateSync(page(PLAIN))))).toMatch(/^unscannable_content: .*both \/DecodeParms and \/DP/);
    const p: Predictor = { predictor: 12, colors: 1, bitsPerComponent: 8, columns: 7 };
    // A last row cut short: poppler reads on into the row above's tail (pdftotext 22.12 showed `HEADHEAD1` from `(HEADHEAD1` cut after its 10th byte, above `…xx) Tj \n`).
    const rows16 = (filter: number) => Buffer.concat([encode(Buffer.from("BT /F1 12 Tf 20 100 Td %xxxxxxxxxxxxxxxxxx) Tj \n", "latin1"), { ...p, columns: 16 }, () => filter), Buffer.from([filter]), Buffer.from("(HEADHEAD1", "latin1")]);
    for (const filter of [0, 2]) {
      expect(judge(pagePdf("/Filter /FlateDecode /DecodeParms << /Predictor 12 /Columns 16 >>", zlib.deflateSync(rows16(filter))))).toMatch(/^unscannable_content: .*a last predicted row of 10 bytes, not 16: poppler fills the rest from the row above/);
    }
    expect(judge(pagePdf("/Filter /FlateDecode /DecodeParms << /Predictor 2 /Columns 16 >>", zlib.deflateSync(Buffer.from(`${page(PLAIN)}x`, "latin1"))))).toMatch(/^unscannable_content: .*a last predicted row/);
    // A filter byte with nothing after it ends the data (poppler and pdf.js alike), whatever it names.
    expect(Buffer.from(undoPredictor(Buffer.from([2, 65, 66, 9]), { ...p, columns: 2 }, refusal)).toString("latin1")).toBe("AB");
    const bad = encode(page(PLAIN), p, () => 2);
    bad[3 * 8] = 5;
    expect(judge(pagePdf("/Filter /FlateDecode /DecodeParms << /Predictor 12 /Columns 7 >>", zlib.deflateSync(bad)))).toMatch(/^unscannable_content: .*a row \(3\) whose PNG predictor byte is 5, not 0 to 4/);
    expect(() => undoPredictor(Buffer.from([0, 1, 255, 1]), { ...p, columns: 1 }, refusal)).toThrow(/row \(1\).* 255/);
  });

  it("gives a verdict in linear time on inputs built against the reading: 400 streams of 6,000 filters and their parameters, names that start as a parameter's, 4 MiB streams of the narrowest and the widest rows (verdicts only)", () => {
    // A dictionary is read within 64 KiB of its `obj`: 6,000 filters and their parameters fill most of it.
    const many = 6000;
    const entries = `/Filter [/FlateDecode${" /AHx".repeat(many)}] /DecodeParms [<< /Predictor 12 /Columns 4 >>${" null".repeat(many)}]`;
    const body = zlib.deflateSync(encode(Buffer.from("41424344>", "latin1"), { predictor: 12, colors: 1, bitsPerComponent: 8, columns: 4 }, () => 2));
    const stream = Buffer.concat([Buffer.from(`<< /Length ${body.length} ${entries} >>\nstream\n`, "latin1"), body, Buffer.from("\nendstream")]);
    expect(judge(pagePdf("", page(PLAIN), Array.from({ length: 400 }, () => stream)))).toBe("published");
    // Names that start as a parameter's and are not one, before the parameters.
    const nearMisses = ["/DecodeParmsX ", "/DPx ", "/Predictors 1 ", "/Colorsx 1 ", "/Columnsx 1 "].map((unit) => unit.repeat(Math.ceil(5000 / unit.length))).join("");
    expect(judge(pagePdf(`${nearMisses} /Filter /FlateDecode /DecodeParms << ${nearMisses} /Predictor 12 /Columns 7 >>`, zlib.deflateSync(encode(page(KEY), { predictor: 12, colors: 1, bitsPerComponent: 8, columns: 7 }, () => 4))))).toMatch(/^secret_detected: /);
    const big = Buffer.alloc(4 << 20, 4);
    for (const [p, size] of [
      [{ predictor: 12, colors: 1, bitsPerComponent: 8, columns: 1 }, 4 << 20],
      [{ predictor: 12, colors: 1, bitsPerComponent: 8, columns: (4 << 20) - 1 }, 4 << 20],
      [{ predictor: 2, colors: 8, bitsPerComponent: 3, columns: 1 << 19 }, 3 << 20],
      [{ predictor: 2, colors: 1, bitsPerComponent: 1, columns: 8 << 20 }, 4 << 20],
    ] as const) {
      expect(undoPredictor(big.subarray(0, size), p, refusal).length).toBeGreaterThan(0);
    }
  });
});
