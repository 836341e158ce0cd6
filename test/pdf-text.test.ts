// shownText reads a content stream byte by byte into its result (fast with
// code V8 has not optimised yet). It must read every stream exactly as the
// straightforward reading below does: strings as slices, escapes decoded,
// hex strings through Buffer's own hex decoder. ASCII85 streams decode as an
// encoder written from the standard wrote them.
import { describe, expect, it } from "vitest";
import { InspectContext } from "../src/content/inspect.js";
import { NO_KNOWN_SECRETS } from "../src/content/known.js";
import { ascii85, inspectPdf, shownText } from "../src/content/pdf.js";
import { joinWrappedWords, TextLine, withoutBytesAt } from "../src/content/pdf-syntax.js";
import { encode85, pdf, pdfAscii85, positives, rng } from "./corpus.js";
import { outcome } from "./helpers.js";

const ESCAPES: Record<number, string> = { 110: "\n", 114: "\r", 116: "\t", 98: "\b", 102: "\f", 40: "(", 41: ")", 92: "\\" };
const isOperatorChar = (c: number) => (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 39 || c === 34 || c === 42;
const isOctal = (c: number) => c >= 48 && c <= 55;

function hexString(text: string): string {
  const hex = text.replace(/[^0-9A-Fa-f]/g, "");
  return Buffer.from(hex.length % 2 ? `${hex}0` : hex, "hex").toString("latin1");
}

/** The `k`th number written before `at` (0: the last), an operator's operand, or NaN. */
function operand(s: string, at: number, k: number): number {
  let before = s.slice(0, at);
  let value = Number.NaN;
  for (let n = 0; n <= k; n++) {
    before = before.replace(/[ \t\n\r\f\0]*$/, "");
    const digits = /[0-9.+-]*$/.exec(before)![0].slice(-32);
    if (digits === "") return Number.NaN;
    value = Number(digits);
    before = before.slice(0, before.length - digits.length);
  }
  return value;
}

/** The reading shownText must match, written for clarity rather than speed. */
function reference(stream: Uint8Array): Buffer {
  return readings(stream).shown;
}

/**
 * The text shown, and the same without the spaces before pieces placed
 * where the run before them may end (a string placed anew on the same line
 * between -0.2 em and the run's reach + 0.1 em from the run's start: each
 * byte's 1 em, in the size it was shown in, plus Tc, times Tz).
 */
function readings(stream: Uint8Array): { shown: Buffer; joined: Buffer } {
  const s = Buffer.from(stream).toString("latin1");
  const out: string[] = [];
  const joined: string[] = [];
  // The text matrix's vertical place and scale, the leading, and where the last string was shown.
  let y = 0;
  let scale = 1;
  let leading = 0;
  let shownY = Number.NaN;
  // Tm or BT placed the text anew since the last string; inside an array, a word space's gap (TJ's -200 or more) came since it.
  let placed = false;
  let inArray = false;
  let gap = false;
  // Tf since the last string: a Td or TD after it places the text anew.
  let fontChanged = false;
  // The transformation's place and scale, and those q saved (64 deep).
  let ctm = { y: 0, scale: 1, x: 0, xScale: 1 };
  const saved: (typeof ctm)[] = [];
  // The line matrix's x and Tm's a, Tf's size, and the run of strings since the text was last placed apart: its start and bytes.
  let x = 0;
  let xScale = 1;
  let size = 0;
  // Tz (as a factor) and Tc.
  let hScale = 1;
  let charSpacing = 0;
  let runX = 0;
  let runReach = 0;
  let runUnsized = false;
  const newRun = (at: number) => {
    runX = at;
    runReach = 0;
    runUnsized = false;
  };
  const abuts = (at: number) => {
    const em = size * Math.abs(xScale * ctm.xScale);
    if (!(em > 0) || runUnsized) return true;
    const distance = (at - runX) * Math.sign(xScale * ctm.xScale);
    return distance >= -0.2 * em && distance <= runReach + 0.1 * em;
  };
  const push = (text: string) => {
    out.push(text);
    joined.push(text);
    const advance = (size + Math.max(0, charSpacing)) * hScale * Math.abs(xScale * ctm.xScale);
    if (size > 0 && Number.isFinite(advance)) runReach += text.length * advance;
    else if (text.length > 0) runUnsized = true;
  };
  const shown = () => {
    const at = ctm.y + ctm.scale * y;
    const atX = ctm.x + ctm.xScale * x;
    if (at !== shownY) {
      out.push("\n");
      joined.push("\n");
      newRun(atX);
    } else if (placed && !gap && abuts(atX)) out.push(" ");
    else if (placed || gap) {
      out.push(" ");
      joined.push(" ");
      if (!gap) newRun(atX);
    }
    shownY = at;
    placed = false;
    gap = false;
    fontChanged = false;
  };
  let i = 0;
  while (i < s.length) {
    const c = s.charCodeAt(i);
    if (c === 40) {
      shown();
      let depth = 1;
      let j = i + 1;
      let from = j;
      for (; j < s.length; j++) {
        const d = s.charCodeAt(j);
        if (d === 92) {
          push(s.slice(from, j));
          const next = s.charCodeAt(j + 1);
          if (ESCAPES[next] !== undefined) {
            push(ESCAPES[next]!);
            j++;
          } else if (isOctal(next)) {
            let k = j + 1;
            while (k < j + 4 && isOctal(s.charCodeAt(k))) k++;
            push(String.fromCharCode(Number.parseInt(s.slice(j + 1, k), 8) & 0xff));
            j = k - 1;
          } else if (next === 13 || next === 10) {
            j += next === 13 && s.charCodeAt(j + 2) === 10 ? 2 : 1;
          }
          from = j + 1;
        } else if (d === 40) depth++;
        else if (d === 41 && --depth === 0) break;
      }
      push(s.slice(from, j));
      i = j + 1;
    } else if (c === 60 && s.charCodeAt(i + 1) === 60) {
      i += 2;
    } else if (c === 60) {
      shown();
      const end = s.indexOf(">", i);
      if (end < 0) break;
      push(hexString(s.slice(i + 1, end)));
      i = end + 1;
    } else if (c === 47) {
      i++;
      while (i < s.length && !" \t\n\r\f\0()<>[]{}/%".includes(s[i]!)) i++;
    } else if (c === 37) {
      while (i < s.length && s.charCodeAt(i) !== 10 && s.charCodeAt(i) !== 13) i++;
    } else if (c === 91 || c === 93) {
      inArray = c === 91;
      gap = false;
      i++;
    } else if (c === 45 && inArray) {
      const digits = /^[0-9]*/.exec(s.slice(i + 1))![0];
      if (digits !== "" && Number(digits) >= 200) gap = true;
      i += 1 + digits.length;
    } else if (isOperatorChar(c)) {
      let j = i + 1;
      while (j < s.length && isOperatorChar(s.charCodeAt(j))) j++;
      const op = s.slice(i, j);
      if ((op === "Td" || op === "TD") && fontChanged) placed = true;
      if (op === "Td" || op === "TD") x += operand(s, i, 1) * xScale;
      if (op === "Tf") {
        fontChanged = true;
        size = Math.abs(operand(s, i, 0)) || 0;
      }
      if (op === "Td") y += operand(s, i, 0) * scale;
      else if (op === "TD") {
        leading = -operand(s, i, 0);
        y -= leading * scale;
      } else if (op === "T*" || op === "'" || op === '"') y -= leading * scale;
      else if (op === "TL") leading = operand(s, i, 0);
      else if (op === "Tz" && Number.isFinite(operand(s, i, 0))) hScale = Math.abs(operand(s, i, 0)) / 100;
      else if (op === "Tc" && Number.isFinite(operand(s, i, 0))) charSpacing = operand(s, i, 0);
      else if (op === "Tm") {
        y = operand(s, i, 0);
        scale = operand(s, i, 2) || 1;
        x = operand(s, i, 1);
        xScale = operand(s, i, 5) || 1;
        placed = true;
      } else if (op === "BT") {
        y = 0;
        scale = 1;
        x = 0;
        xScale = 1;
        placed = true;
      } else if (op === "q") {
        if (saved.length < 64) saved.push({ ...ctm });
      } else if (op === "Q") {
        ctm = saved.pop() ?? ctm;
      } else if (op === "cm") {
        ctm = { y: ctm.y + operand(s, i, 0) * ctm.scale, scale: ctm.scale * (operand(s, i, 2) || 1), x: ctm.x + operand(s, i, 1) * ctm.xScale, xScale: ctm.xScale * (operand(s, i, 5) || 1) };
      }
      i = j;
    } else {
      i++;
    }
  }
  return { shown: Buffer.from(out.join(""), "latin1"), joined: Buffer.from(joined.join(""), "latin1") };
}

describe("the text a PDF content stream shows", () => {
  it("reads TJ pieces, escapes, octal, line continuations, hex strings and moves to another line", () => {
    const stream = Buffer.from("BT /F1 10 Tf 50 750 Td\n[(sk_li) -20 (ve_\\(a\\)) 3 (b\\101\\60c\\\nd)] TJ\n0 -14 Td <48 65 6c6C6f3> Tj 14 TL T* (x\\qy) ' % (not shown)\n(z) \" ET", "latin1");
    expect(shownText(stream).toString("latin1")).toBe("\nsk_live_(a)bA0cd\nHello0\nxqy\nz");
    expect(shownText(stream)).toEqual(reference(stream));
  });

  it("joins what is moved along the same line (Chrome's glyph at a time); text placed anew on that line (Tm, BT: a table's next cell) is another word", () => {
    const stream = Buffer.from("BT /F4 10 Tf 1 0 0 -1 8 18 Tm <41> Tj 6.4 0 Td <42> Tj ET BT 1 0 0 -1 20 18 Tm (C) Tj ET BT 1 0 0 -1 8 32 Tm (D) Tj 0 -14 TD (E) Tj T* (F) Tj ET", "latin1");
    expect(shownText(stream).toString("latin1")).toBe("\nAB C\nD\nE\nF");
    expect(shownText(stream)).toEqual(reference(stream));
  });

  it("reads the word spaces pdfTeX makes by moving the next string (TJ's -333, a Td after a Tf) as spaces; kerning (tens) joins: a key in LaTeX's running text and \\texttt is refused", () => {
    const stream = Buffer.from("BT /F1 10 Tf 50 700 Td [(The)-333(tok)27(e)1(n)-334(is)-0333.5(x)-199(y)] TJ [1 -400 2] d (z) Tj ET", "latin1");
    expect(shownText(stream).toString("latin1")).toBe("\nThe token is xy z".replace(" z", "z"));
    expect(shownText(stream)).toEqual(reference(stream));
    const token = /ghp_[A-Za-z0-9]+/.exec(positives()["github-token"]!)![0];
    const tex = (words: string) => pdf("Report", false, [Buffer.from(`<< /Length 1 >>\nstream\nBT /F33 9.96 Tf 148 707 Td [${words}] TJ ET\nendstream`, "latin1")]);
    const hex = (t: string) => `<${Buffer.from(t).toString("hex")}>`;
    const judge = (file: Buffer) => () => inspectPdf(file, new InspectContext("pdf", NO_KNOWN_SECRETS));
    expect(judge(tex(`${hex("The")}-333${hex("token")}-334${hex("is")}-333${hex(token.slice(0, 20))}28${hex(token.slice(20))}-333${hex("here.")}`))).toThrow(expect.objectContaining({ code: "secret_detected" }));
    expect(judge(tex(`${hex("The")}-333${hex("report")}-334${hex("is")}-333${hex("ready.")}`))).not.toThrow();
    // \texttt{…}: the word in its own font, moved to by Td on the same line.
    const texttt = (word: string) => pdf("Report", false, [Buffer.from(`<< /Length 1 >>\nstream\nBT /F33 9.96 Tf 148 707 Td [${hex("The")}-333${hex("token")}-334${hex("is")}]TJ /F34 9.96 Tf 57.6 0 Td [${hex(word.slice(0, 11))}-1${hex(word.slice(11))}]TJ /F33 9.96 Tf 212.5 0 Td [${hex("here.")}]TJ ET\nendstream`, "latin1")]);
    expect(judge(texttt(token))).toThrow(expect.objectContaining({ code: "secret_detected" }));
    expect(judge(texttt("quarterly-report-v2"))).not.toThrow();
  });

  it("reads a table row's cells (a text object each, at the row's height, as Chrome draws them) as words: a key in the cell after a number is refused", () => {
    // The token alone: only the separator between cells keeps it from the number before it.
    const key = /ghp_[A-Za-z0-9]+/.exec(positives()["github-token"]!)![0];
    // Hex strings, as Chrome writes: the stream's own bytes never hold the token.
    const row = (y: number, cells: string[]) => cells.map((cell, c) => `BT /F1 16 Tf 1 0 0 -1 ${11 + 120 * c} ${y} Tm <${Buffer.from(cell).toString("hex")}> Tj ET`).join("\n");
    const table = (cells: string) => pdf("Report", false, [Buffer.from(`<< /Length 1 >>\nstream\n${row(1063532, ["13999", "north south"])}\n${row(1063551, ["14000", cells])}\nendstream`, "latin1")]);
    const judge = (cells: string) => () => inspectPdf(table(cells), new InspectContext("pdf", NO_KNOWN_SECRETS));
    expect(judge(key)).toThrow(expect.objectContaining({ code: "secret_detected" }));
    expect(judge("quarterly revenue")).not.toThrow();
  });

  it("also reads strings placed anew where the text before them may end as one word, as pdftotext shows them (pdfkit and jsPDF: a Tm or a BT per piece; a Tm per glyph): a key in such pieces is refused; a table's next cell and words placed apart keep their space (the red team's 32a/06)", () => {
    const token = /ghp_[A-Za-z0-9]+/.exec(positives()["github-token"]!)![0];
    const [a, b] = [token.slice(0, 14), token.slice(14)];
    // Hex strings, so that the stream's own bytes never hold the token.
    const hex = (t: string) => `<${Buffer.from(t).toString("hex")}>`;
    // Courier 12 pt: 7.2 pt a glyph, so 14 glyphs end 100.8 pt on.
    const abutting: Record<string, [string, string]> = {
      tm: [`BT /F1 12 Tf 1 0 0 1 72 700 Tm ${hex(a)} Tj 1 0 0 1 172.8 700 Tm ${hex(b)} Tj ET`, `${a} ${b}`],
      bt: [`BT /F1 12 Tf 72 700 Td ${hex(a)} Tj ET BT /F1 12 Tf 172.8 700 Td ${hex(b)} Tj ET`, `${a} ${b}`],
      glyphs: [`BT /F1 12 Tf ${[...token].map((c, i) => `1 0 0 1 ${(72 + 7.2 * i).toFixed(1)} 700 Tm ${hex(c)} Tj`).join(" ")} ET`, [...token].join(" ")],
      // A bold prefix: another font, moved to by Td from the line's start.
      bold: [`BT /F2 12 Tf 72 700 Td ${hex(a)} Tj /F1 12 Tf 100.8 0 Td ${hex(b)} Tj ET`, `${a} ${b}`],
      // Chrome's page transform (0.24, the y axis turned): 50 pt in text space is 12 in user space.
      scaled: [`.24 0 0 -.24 0 792 cm BT /F1 50 Tf 1 0 0 -1 300 2900 Tm ${hex(a)} Tj 1 0 0 -1 720 2900 Tm ${hex(b)} Tj ET`, `${a} ${b}`],
      // Touching within pdftotext's 0.1 em (1.2 pt) past where the piece may end, or overlapping it.
      near: [`BT /F1 12 Tf 1 0 0 1 72 700 Tm ${hex(a)} Tj 1 0 0 1 ${72 + 14 * 12 + 1.1} 700 Tm ${hex(b)} Tj ET`, `${a} ${b}`],
      back: [`BT /F1 12 Tf 1 0 0 1 72 700 Tm ${hex(a)} Tj 1 0 0 1 70 700 Tm ${hex(b)} Tj ET`, `${a} ${b}`],
      // forms33: a large prefix then a smaller font (Courier 24 pt, 14.4 pt a glyph: measured in 9 pt, 14 glyphs reached 127 pt), in a BT each too.
      sizes: [`BT /F1 24 Tf 1 0 0 1 72 700 Tm ${hex(a)} Tj /F1 9 Tf 1 0 0 1 273.6 700 Tm ${hex(b)} Tj ET`, `${a} ${b}`],
      sizesBt: [`BT /F1 24 Tf 1 0 0 1 72 700 Tm ${hex(a)} Tj ET BT /F2 9 Tf 1 0 0 1 273.6 700 Tm ${hex(b)} Tj ET`, `${a} ${b}`],
      // Tz 200 and Tc 2: Courier 12 pt advances (7.2 + 2) × 2 = 18.4 pt a glyph.
      scaling: [`BT /F1 12 Tf 200 Tz 2 Tc 1 0 0 1 72 700 Tm ${hex(a)} Tj 1 0 0 1 ${72 + 14 * 18.4} 700 Tm ${hex(b)} Tj ET`, `${a} ${b}`],
    };
    const apart: Record<string, [string, string]> = {
      // A table's next cell (the next column, as Chrome draws it): 120 pt on from 5 glyphs of 16 pt, further than they reach.
      cells: [`BT /F1 16 Tf 1 0 0 -1 11 100 Tm (14000) Tj ET BT /F1 16 Tf 1 0 0 -1 131 100 Tm ${hex(token)} Tj ET`, `14000 ${token}`],
      // The halves placed a word apart past the furthest the first may reach (14 glyphs of 12 pt, 168 pt), or before it starts.
      words: [`BT /F1 12 Tf 1 0 0 1 72 700 Tm ${hex(a)} Tj 1 0 0 1 ${72 + 14 * 12 + 1.3} 700 Tm ${hex(b)} Tj ET`, `${a} ${b}`],
      before: [`BT /F1 12 Tf 1 0 0 1 172.8 700 Tm ${hex(a)} Tj 1 0 0 1 60 700 Tm ${hex(b)} Tj ET`, `${a} ${b}`],
      // Td's move counts in the text matrix's scale, cm's in the transformation's: 180 and 178 pt on, 15 and 14.8 em of 12 pt.
      scaledTd: [`BT /F1 6 Tf 2 0 0 2 72 700 Tm ${hex(a)} Tj /F2 6 Tf 90 0 Td ${hex(b)} Tj ET`, `${a} ${b}`],
      nestedCm: [`q 2 0 0 2 0 0 cm 1 0 0 1 36 350 cm BT /F1 6 Tf 0 0 Td ${hex(a)} Tj ET Q q 2 0 0 2 0 0 cm 1 0 0 1 125 350 cm BT /F1 6 Tf 0 0 Td ${hex(b)} Tj ET Q`, `${a} ${b}`],
      // Another line, and a word space in a TJ array, are no pieces to join.
      lines: [`BT /F1 12 Tf 1 0 0 1 72 700 Tm ${hex(a)} Tj 1 0 0 1 172.8 686 Tm ${hex(b)} Tj ET`, `${a}\n${b}`],
      spaced: [`BT /F1 12 Tf 72 700 Td [${hex(a)} -333 ${hex(b)}] TJ ET`, `${a} ${b}`],
      // Past the furthest a large prefix reaches (14 glyphs of 24 pt, 336 pt), or than Tz 50 lets a run reach (84 pt).
      sizesApart: [`BT /F1 24 Tf 1 0 0 1 72 700 Tm ${hex(a)} Tj /F1 9 Tf 1 0 0 1 ${72 + 336 + 1} 700 Tm ${hex(b)} Tj ET`, `${a} ${b}`],
      narrowed: [`BT /F1 12 Tf 50 Tz 1 0 0 1 72 700 Tm ${hex(a)} Tj 100 Tz 1 0 0 1 ${72 + 84 + 2} 700 Tm ${hex(b)} Tj ET`, `${a} ${b}`],
    };
    const read = (stream: string) => {
      const line = new TextLine();
      const text = shownText(Buffer.from(stream, "latin1"), line);
      // The text as it is read stays as it was, a space between the pieces.
      expect(text).toEqual(reference(Buffer.from(stream, "latin1")));
      return [text.toString("latin1"), withoutBytesAt(text, line.abutting).toString("latin1")];
    };
    for (const [name, [stream, shown]] of Object.entries(abutting)) expect(read(stream), name).toEqual([`\n${shown}`, `\n${token}`]);
    for (const [name, [stream, shown]] of Object.entries(apart)) expect(read(stream), name).toEqual([`\n${shown}`, `\n${shown}`]);
    const judge = (stream: string) => () => inspectPdf(pdf("Report", false, [Buffer.from(`<< /Length 1 >>\nstream\n${stream}\nendstream`, "latin1")]), new InspectContext("pdf", NO_KNOWN_SECRETS));
    for (const [name, [stream]] of Object.entries(abutting)) {
      expect(judge(stream), name).toThrow(expect.objectContaining({ code: "secret_detected", message: expect.stringContaining("its pieces placed end to end joined") }));
    }
    // (On two lines, the key is read joined by the wrapped words' reading.)
    for (const name of ["words", "before", "sizesApart", "narrowed"]) expect(judge(apart[name]![0]), name).not.toThrow();
    expect(judge(abutting.tm![0].replace(hex(a), hex("quarterly-")).replace(hex(b), hex("report-v2")))).not.toThrow();
  });

  it("gives a verdict on lines of thousands of Tm (built against the reading of pieces placed end to end): every glyph abutting, abutting and apart in turn, placed back over the line, without operands or a font size", () => {
    const token = /ghp_[A-Za-z0-9]+/.exec(positives()["github-token"]!)![0];
    const hex = (t: string) => `<${Buffer.from(t).toString("hex")}>`;
    const glyphs = 60_000;
    const text = "quarterly report, north and south regions. ".repeat(Math.ceil(glyphs / 43)).slice(0, glyphs);
    const streams = {
      abutting: `BT /F1 12 Tf ${[...text].map((c, i) => `1 0 0 1 ${72 + 7.2 * i} 700 Tm ${hex(c)} Tj`).join(" ")} ET`,
      inTurn: `BT /F1 12 Tf ${[...text].map((c, i) => `1 0 0 1 ${72 + 7.2 * i + (i % 2) * 500} 700 Tm ${hex(c)} Tj`).join(" ")} ET`,
      back: `BT /F1 12 Tf ${[...text].map((c, i) => `1 0 0 1 ${72 + (i % 7) * 3.6} 700 Tm ${hex(c)} Tj`).join(" ")} ET`,
      bare: `BT ${[...text].map((c, i) => `${i % 3 === 0 ? "0 Tf " : ""}Tm ${hex(c)} Tj 1 0 0 1 Tm`).join(" ")} ET`,
    };
    const judge = (stream: string) => outcome(() => inspectPdf(pdf("Report", false, [Buffer.from(`<< /Length 1 >>\nstream\n${stream}\nendstream`, "latin1")]), new InspectContext("pdf", NO_KNOWN_SECRETS)));
    for (const [name, stream] of Object.entries(streams)) {
      expect(judge(stream), name).toBe("published");
      expect(judge(stream.replace(/ ET$/, ` 1 0 0 1 9 9 Tm ${hex(token.slice(0, 20))} Tj 1 0 0 1 153 9 Tm ${hex(token.slice(20))} Tj ET`)), name).toMatch(/^secret_detected: .*GitHub token/);
    }
  });

  it("tells lines placed by the transformation apart (matplotlib: q, cm, BT 0 0 Td per line), and restores it with Q", () => {
    const stream = Buffer.from("q 1 0 0 1 17 799 cm BT 0 0 Td (A) Tj ET Q q 1 0 0 1 17 786 cm BT 0 0 Td (B) Tj ET q 2 0 0 2 0 0 cm Q BT 0 0 Td (C) Tj ET Q", "latin1");
    // C: a text object of its own on B's line (Q restored the transformation), so another word.
    expect(shownText(stream).toString("latin1")).toBe("\nA\nB C");
    expect(shownText(stream)).toEqual(reference(stream));
  });

  it("also reads a long word the layout wrapped as one (LibreOffice breaks a token in a narrow cell, any generator a JWT wider than the page): a key wrapped is refused", () => {
    const token = /ghp_[A-Za-z0-9]+/.exec(positives()["github-token"]!)![0];
    // A line per piece, hex strings so that the stream's own bytes never hold the token.
    const lines = (pieces: string[]) => `BT /F1 9 Tf 40 700 Td ${pieces.map((p) => `<${Buffer.from(p).toString("hex")}> Tj 0 -11 Td`).join(" ")} ET`;
    const judge = (pieces: string[]) => () => inspectPdf(pdf("Report", false, [Buffer.from(`<< /Length 1 >>\nstream\n${lines(pieces)}\nendstream`, "latin1")]), new InspectContext("pdf", NO_KNOWN_SECRETS));
    // A vendor's token cut is read joined at its rule's trigger in the text shown (find.ts); a Twilio API key, whose trigger
    // does not read it so (a Google API key's does since 2026-12-05), by the words joined.
    expect(judge(["14000", token.slice(0, 38), token.slice(38), "53504"])).toThrow(expect.objectContaining({ code: "secret_detected", message: expect.stringContaining("a GitHub token, with line breaks removed") }));
    const twilio = positives()["twilio-key"]!;
    expect(judge(["14000", twilio.slice(0, 20), twilio.slice(20), "Total: 53504"])).toThrow(expect.objectContaining({ code: "secret_detected", message: expect.stringContaining("wrapped words joined") }));
    expect(judge(["Quarterly figures for the", "north and south regions", "5feceb66ffc86f38d952786c6d696c79", "c2dbc239dd4e91b46729d73a27fb57e9", "53504"])).not.toThrow();
    // A line that ends in a short word (a number cell) is not joined to the next: the token after it keeps its start.
    expect(joinWrappedWords(Buffer.from(`14000\n${token}\n53504`))!.toString()).toBe(`14000\n${token}53504`);
    expect(joinWrappedWords(Buffer.from(`14000\n${token.slice(0, 20)}\n${token.slice(20)} next`))!.toString()).toBe(`14000\n${token} next`);
    expect(joinWrappedWords(Buffer.from("a sentence.\nAnother one, and a word: ok\n"))).toBeUndefined();
    // A line that starts with a name assigned to is a line of its own (an environment dump), and `=` ends a word.
    expect(joinWrappedWords(Buffer.from("PWD=/home/dev/project/app\nOLDPWD=/home/dev\ncommit: b7ec1dd761d21fcc3ea9ec792ec07bd\nmax_tokens: 4096"))).toBeUndefined();
  });

  it("joins wrapped words line by line as the byte-by-byte reading does, a word carried over several joined breaks included (20,000 random texts)", () => {
    const runsOn = (c: number | undefined) => c !== undefined && /[A-Za-z0-9_\-+/.~]/.test(String.fromCharCode(c));
    const assigned = (t: Uint8Array, at: number) => {
      let k = at;
      while (k < t.length && runsOn(t[k])) k++;
      return t[k] === 61 || t[k] === 58;
    };
    const wordLength = (t: Uint8Array, at: number) => {
      let k = at;
      while (k < t.length && runsOn(t[k])) k++;
      return k - at;
    };
    // The rule as written: a break after 16 or more word bytes (a joined break does not end the word), or after 16 or more
    // counting `=` and `:` before a word of 16 or more, before a word that is not assigned to.
    const reference = (t: Uint8Array) => {
      const out: number[] = [];
      let run = 0;
      let named = 0;
      let joined = false;
      for (let i = 0; i < t.length; i++) {
        if (t[i] === 10 && (run >= 16 || (named >= 16 && wordLength(t, i + 1) >= 16)) && runsOn(t[i + 1]) && !assigned(t, i + 1)) {
          joined = true;
          continue;
        }
        run = runsOn(t[i]) ? run + 1 : 0;
        named = runsOn(t[i]) || t[i] === 61 || t[i] === 58 ? named + 1 : 0;
        out.push(t[i]!);
      }
      return joined ? Buffer.from(out).toString("latin1") : undefined;
    };
    const random = rng(23);
    const alphabet = "aB9_\n\n\n \n=:.x";
    for (let round = 0; round < 20_000; round++) {
      let text = "";
      for (let n = Math.floor(random() * 120); n > 0; n--) text += random() < 0.3 ? "a" : alphabet[Math.floor(random() * alphabet.length)];
      const bytes = Buffer.from(text, "latin1");
      expect(joinWrappedWords(bytes)?.toString("latin1"), JSON.stringify(text)).toBe(reference(bytes));
    }
  });

  it("reads every stream as the reference reading does, and joins the same pieces placed end to end: random streams of the bytes that matter", () => {
    const random = rng(7);
    const alphabet = Buffer.from("()()\\\\<<>>%TdDm*ELBTqQqQcm//'\"0123789.+-aAfFxq \n\r\t-[]TmTmTdTf 1 0 10 ", "latin1");
    for (let n = 0; n < 3000; n++) {
      const length = Math.floor(random() * 80);
      const stream = Buffer.alloc(length);
      for (let k = 0; k < length; k++) stream[k] = random() < 0.9 ? alphabet[Math.floor(random() * alphabet.length)]! : Math.floor(random() * 256);
      const line = new TextLine();
      const text = shownText(stream, line);
      const expected = readings(stream);
      expect(text, JSON.stringify(stream.toString("latin1"))).toEqual(expected.shown);
      expect(withoutBytesAt(text, line.abutting), JSON.stringify(stream.toString("latin1"))).toEqual(expected.joined);
    }
    // Streams of operators and operands, so that matrices, moves and sizes are whole and pieces often abut.
    const tokens = ["1 0 0 1 ", "2 0 0 -2 ", "0.24 0 0 -0.24 ", "72 700 Tm ", "7.2 0 Td ", "14 700 Tm ", "100 700 Tm ", "-3 0 Td ", "0 -14 TD ", "12 Tf ", "/F1 0 Tf ", "/F2 12 Tf ", "0 792 cm ", "3 0 0 3 10 0 cm ", "q ", "Q ", "BT ", "ET ", "(ab) Tj ", "<414243> Tj ", "(x) ' ", "[(a) -300 (b) -20 (c)] TJ ", "T* ", "12 TL ", "9 ", "-1.5 ", "200 Tz ", "50 Tz ", "3 Tc ", "-2 Tc ", "/F1 24 Tf "];
    for (let n = 0; n < 3000; n++) {
      const stream = Buffer.from(Array.from({ length: Math.floor(random() * 40) }, () => tokens[Math.floor(random() * tokens.length)]).join(""), "latin1");
      const line = new TextLine();
      const text = shownText(stream, line);
      const expected = readings(stream);
      expect(text, stream.toString("latin1")).toEqual(expected.shown);
      expect(withoutBytesAt(text, line.abutting), stream.toString("latin1")).toEqual(expected.joined);
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

  it("keeps every byte after runs of zero groups (`z` makes four bytes of one character, more than the buffer sized for five to four holds)", () => {
    const random = rng(86);
    for (let n = 0; n < 200; n++) {
      const zeros = Buffer.alloc(4 * (1 + Math.floor(random() * 64)));
      const tail = Buffer.from(Array.from({ length: Math.floor(random() * 300) }, () => Math.floor(random() * 256)));
      const bytes = random() < 0.5 ? Buffer.concat([zeros, tail]) : Buffer.concat([tail.subarray(0, tail.length & ~3), zeros, tail]);
      expect(ascii85(Buffer.from(encode85(bytes), "latin1"), context(), "s").equals(bytes), `case ${n}`).toBe(true);
    }
    const key = positives()["github-token"]!;
    const text = Buffer.concat([Buffer.alloc(4096), Buffer.from(`notes ${key} end`)]);
    const body = encode85(text);
    expect(() => inspectPdf(pdf("Report", false, [Buffer.from(`<< /Length ${body.length} /Filter /ASCII85Decode >>\nstream\n${body}\nendstream`, "latin1")]), context())).toThrow(
      expect.objectContaining({ code: "secret_detected" }),
    );
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
