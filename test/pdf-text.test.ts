// shownText reads a content stream byte by byte into its result (fast with
// code V8 has not optimised yet). It must read every stream exactly as the
// straightforward reading below does: strings as slices, escapes decoded,
// hex strings through Buffer's own hex decoder. ASCII85 streams decode as an
// encoder written from the standard wrote them.
import { describe, expect, it } from "vitest";
import { InspectContext } from "../src/content/inspect.js";
import { NO_KNOWN_SECRETS } from "../src/content/known.js";
import { ascii85, inspectPdf, shownText } from "../src/content/pdf.js";
import { encode85, pdf, pdfAscii85, positives, rng } from "./corpus.js";

const ESCAPES: Record<number, string> = { 110: "\n", 114: "\r", 116: "\t", 98: "\b", 102: "\f", 40: "(", 41: ")", 92: "\\" };
const NEW_LINE_OPERATORS = new Set(["Td", "TD", "T*", "Tm", "ET", "'", '"']);
const isOperatorChar = (c: number) => (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 39 || c === 34 || c === 42;
const isOctal = (c: number) => c >= 48 && c <= 55;

function hexString(text: string): string {
  const hex = text.replace(/[^0-9A-Fa-f]/g, "");
  return Buffer.from(hex.length % 2 ? `${hex}0` : hex, "hex").toString("latin1");
}

/** The reading shownText must match, written for clarity rather than speed. */
function reference(stream: Uint8Array): Buffer {
  const s = Buffer.from(stream).toString("latin1");
  const out: string[] = [];
  let i = 0;
  while (i < s.length) {
    const c = s.charCodeAt(i);
    if (c === 40) {
      let depth = 1;
      let j = i + 1;
      let from = j;
      for (; j < s.length; j++) {
        const d = s.charCodeAt(j);
        if (d === 92) {
          out.push(s.slice(from, j));
          const next = s.charCodeAt(j + 1);
          if (ESCAPES[next] !== undefined) {
            out.push(ESCAPES[next]!);
            j++;
          } else if (isOctal(next)) {
            let k = j + 1;
            while (k < j + 4 && isOctal(s.charCodeAt(k))) k++;
            out.push(String.fromCharCode(Number.parseInt(s.slice(j + 1, k), 8) & 0xff));
            j = k - 1;
          } else if (next === 13 || next === 10) {
            j += next === 13 && s.charCodeAt(j + 2) === 10 ? 2 : 1;
          }
          from = j + 1;
        } else if (d === 40) depth++;
        else if (d === 41 && --depth === 0) break;
      }
      out.push(s.slice(from, j));
      i = j + 1;
    } else if (c === 60 && s.charCodeAt(i + 1) === 60) {
      i += 2;
    } else if (c === 60) {
      const end = s.indexOf(">", i);
      if (end < 0) break;
      out.push(hexString(s.slice(i + 1, end)));
      i = end + 1;
    } else if (c === 37) {
      while (i < s.length && s.charCodeAt(i) !== 10 && s.charCodeAt(i) !== 13) i++;
    } else if (isOperatorChar(c)) {
      let j = i + 1;
      while (j < s.length && isOperatorChar(s.charCodeAt(j))) j++;
      if (j - i <= 2 && NEW_LINE_OPERATORS.has(s.slice(i, j))) out.push("\n");
      i = j;
    } else {
      i++;
    }
  }
  return Buffer.from(out.join(""), "latin1");
}

describe("the text a PDF content stream shows", () => {
  it("reads TJ pieces, escapes, octal, line continuations, hex strings and text moves", () => {
    const stream = Buffer.from("BT /F1 10 Tf 50 750 Td\n[(sk_li) -20 (ve_\\(a\\)) 3 (b\\101\\60c\\\nd)] TJ\n0 -14 Td <48 65 6c6C6f3> Tj T* (x\\qy) ' % (not shown)\n(z) \" ET", "latin1");
    expect(shownText(stream).toString("latin1")).toBe("\nsk_live_(a)bA0cd\nHello0\nxqy\nz\n\n");
    expect(shownText(stream)).toEqual(reference(stream));
  });

  it("reads every stream as the reference reading does: random streams of the bytes that matter", () => {
    const random = rng(7);
    const alphabet = Buffer.from("()()\\\\<<>>%TdDm*ET'\"0123789aAfFxq \n\r\t-[]", "latin1");
    for (let n = 0; n < 3000; n++) {
      const length = Math.floor(random() * 80);
      const stream = Buffer.alloc(length);
      for (let k = 0; k < length; k++) stream[k] = random() < 0.9 ? alphabet[Math.floor(random() * alphabet.length)]! : Math.floor(random() * 256);
      expect(shownText(stream), JSON.stringify(stream.toString("latin1"))).toEqual(reference(stream));
    }
  });

  it("reads an ASCIIHexDecode stream's digits up to `>`, blanks ignored, an odd last digit padded", () => {
    const hexStream = (text: string) => {
      const hex = Buffer.from(text, "latin1").toString("hex").replace(/(..)/g, "$1 ").replace(/0 $/, "");
      return Buffer.from(`<< /Length ${hex.length + 1} /Filter /ASCIIHexDecode >>\nstream\n${hex}>\nendstream`, "latin1");
    };
    const judge = (text: string) => () => inspectPdf(pdf("Report", false, [hexStream(text)]), new InspectContext("pdf", NO_KNOWN_SECRETS));
    expect(judge(`notes: ${positives()["github-token"]!} end`)).toThrow(expect.objectContaining({ code: "secret_detected" }));
    expect(judge("quarterly figures, nothing secret 0")).not.toThrow();
  });
});

describe("ASCII85Decode streams", () => {
  const context = () => new InspectContext("pdf", NO_KNOWN_SECRETS);

  it("decodes what an encoder writes, zero groups and short last groups included, blanks ignored", () => {
    const random = rng(85);
    for (let n = 0; n < 500; n++) {
      const bytes = Buffer.from(Array.from({ length: Math.floor(random() * 40) }, () => (random() < 0.3 ? 0 : Math.floor(random() * 256))));
      const text = encode85(bytes).replace(/(.{7})/g, "$1\n ");
      expect(ascii85(Buffer.from(text, "latin1"), context(), "s"), JSON.stringify(text)).toEqual(bytes);
    }
  });

  it("refuses what is not ASCII85 as unscannable_content", () => {
    for (const bad of ["ab{cd~>", "a~>", "s8W-\"~>"]) {
      expect(() => ascii85(Buffer.from(bad, "latin1"), context(), "s"), bad).toThrow(expect.objectContaining({ code: "unscannable_content" }));
    }
  });

  it("reads a PDF stream filtered [/ASCII85Decode /FlateDecode] (it was refused as unscannable): a key inside is refused, plain text published", () => {
    const judge = (text: string) => () => inspectPdf(pdfAscii85(text), context());
    expect(judge(`notes ${positives()["github-token"]!} end`)).toThrow(expect.objectContaining({ code: "secret_detected" }));
    expect(judge("quarterly figures, nothing secret")).not.toThrow();
  });
});
