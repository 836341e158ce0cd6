// The text of an office part as its application shows it, read beside the
// text of every element (xml-text.ts xmlText), never instead: a part stores
// text it does not show, and a key whose halves lie around it is whole on
// screen, in print and in `pandoc -t plain`, but not in the text with it
// in place (red-team pass 33):
// - WordprocessingML's tracked changes: a deleted run (`w:del`, its
//   `w:delText`, `w:delInstrText`) and a moved-from one (`w:moveFrom`),
//   which the document's final view (Word's default markup view, its
//   print, "Accept all", pandoc) leaves out;
// - a hidden run (`<w:vanish/>` in its properties, not `w:val="0"`) and a
//   field's code (`w:instrText`: Word and pandoc show the field's result);
// - a paragraph mark deleted, moved or hidden (`w:del`, `w:moveFrom`,
//   `w:vanish` in the paragraph's properties): its text runs on into the
//   next paragraph's, with no line break between;
// - SpreadsheetML's phonetic runs (`<rPh>`, a reading shown above a cell
//   only when asked for) and its escapes `_xHHHH_` (ST_Xstring, ECMA-376
//   22.4.2.4: Excel shows `ghp_x005F_Q7m…` as `ghp_Q7m…`, and `_x200B_`
//   as a zero-width space, which the zero-width reading then removes);
// - ODF's hidden text (`<text:hidden-text>`).
// The text they hold stays in the part's own text (a key may lie in a
// deleted run), so this is a second reading, made only for a part that
// holds one of them: one walk over its tags, then xmlText.
import { writeUtf8, xmlText } from "./xml-text.js";

/** Elements left out with their content (local names; `rPh` with or without a prefix, the others only with one, as Word, LibreOffice and pandoc write them). */
const LEFT_OUT = new Set(["del", "delText", "delInstrText", "instrText", "moveFrom", "hidden-text"]);
const LEFT_OUT_UNPREFIXED = new Set(["rPh"]);
const bytesOf = (words: string[]) => words.map((s) => Buffer.from(s, "latin1"));
/**
 * Each vocabulary (its namespace, found where every writer declares it:
 * the root element, in the part's first NAMESPACE_WITHIN bytes) and what a
 * part of it holds when it holds one of them, each looked for natively
 * before any tag is walked: only its own, and each led by a byte that is
 * rare in its parts (a search for `rPh` stopped at every `r` of a sheet's
 * `<row r=`, 0.3 s in 224 MB).
 */
const VOCABULARIES = [
  // `w:del` has attributes (its id and author); `nstrText` is in `w:instrText` and `w:delInstrText`.
  { namespace: "wordprocessingml", needles: bytesOf([":del ", "delText", "nstrText", "moveFrom", "vanish"]), escapes: false },
  { namespace: "spreadsheetml", needles: bytesOf(["Ph ", "Ph>"]), escapes: true },
  { namespace: "opendocument:xmlns:text", needles: bytesOf(["hidden-text"]), escapes: false },
].map((v) => ({ ...v, namespace: Buffer.from(v.namespace, "latin1") }));
const NAMESPACE_WITHIN = 64 * 1024;
/** A name longer than this is none of those above: the walk reads no more of it. */
const MAX_NAME = 130;
/** `w:val` off (`0`, `false`, `off`): a `<w:vanish w:val="0"/>` shows its run. */
const OFF = /(?:^|[\s:])val\s*=\s*["'](?:0|false|off)["']/;

const isNameByte = (c: number) => c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d && c !== 0x2f && c !== 0x3e && c !== 0x3c;

/**
 * The text of an XML part (UTF-8) as shown: without the elements above, and
 * with SpreadsheetML's escapes decoded in a spreadsheet's part; undefined
 * when the part holds none of them (its text is then the shown one).
 */
export function shownText(xml: Uint8Array): Buffer | undefined {
  const bytes = Buffer.from(xml.buffer, xml.byteOffset, xml.length);
  const head = bytes.subarray(0, NAMESPACE_WITHIN);
  const vocabulary = VOCABULARIES.find((v) => head.indexOf(v.namespace) >= 0);
  if (vocabulary === undefined) return undefined;
  const without = vocabulary.needles.some((needle) => bytes.indexOf(needle) >= 0) ? withoutHidden(bytes) : undefined;
  const escapes = vocabulary.escapes && holdsXstringEscape(bytes);
  if (without === undefined && !escapes) return undefined;
  const text = xmlText(without ?? bytes, true, without !== undefined);
  return escapes ? decodeXstrings(text) : text;
}

/**
 * `xml` without the elements LEFT_OUT names and without the runs a
 * `w:vanish` hides, in a copy; undefined when there was none. One walk over
 * the tags: an element left out is skipped to its end tag (`</` its name
 * `>`), found by one search from its start; a name whose end is missing is
 * left in from there on and not looked for again (linear). Runs nest (a
 * text box's runs inside a picture's): a hidden run is the innermost one
 * open, and an outer one is left in (a reading that shows more is still one
 * the part's text is read beside).
 */
export function withoutHidden(xml: Buffer): Buffer | undefined {
  const n = xml.length;
  const out = Buffer.allocUnsafe(n);
  // Bytes of `xml` before `i` are written to out (up to `o`) or left out.
  let o = 0;
  let i = 0;
  let left = false;
  // The innermost run open: where it starts, where that lies in out, whether a w:vanish hides it.
  let run = -1;
  let runOut = 0;
  let hidden = false;
  // Inside a paragraph's properties; whether they delete, move or hide its mark (the paragraph then runs on into the next).
  let inProperties = false;
  let markGone = false;
  const endless = new Set<string>();
  for (let at = xml.indexOf(0x3c); at >= 0; ) {
    const closing = xml[at + 1] === 0x2f;
    const from = closing ? at + 2 : at + 1;
    let k = from;
    while (k < n && k - from <= MAX_NAME && isNameByte(xml[k]!)) k++;
    const end = xml.indexOf(0x3e, k);
    if (end < 0) break;
    const name = xml.toString("latin1", from, k);
    const colon = name.indexOf(":");
    const local = colon < 0 ? name : name.slice(colon + 1);
    const empty = xml[end - 1] === 0x2f;
    if (!closing && !empty && (colon >= 0 ? LEFT_OUT.has(local) : LEFT_OUT_UNPREFIXED.has(local)) && !endless.has(name)) {
      const close = xml.indexOf(`</${name}>`, end + 1, "latin1");
      if (close >= 0) {
        o += xml.copy(out, o, i, at);
        i = close + name.length + 3;
        left = true;
        at = xml.indexOf(0x3c, i);
        continue;
      }
      endless.add(name);
    }
    if (colon >= 0 && local === "r") {
      if (!closing && !empty) {
        run = at;
        runOut = o + (at - i);
        hidden = false;
      } else if (closing && run >= 0) {
        if (hidden) {
          if (i < run) xml.copy(out, o, i, run);
          o = runOut;
          i = end + 1;
          left = true;
        }
        run = -1;
      }
    } else if (run >= 0 && colon >= 0 && local === "vanish" && !OFF.test(xml.toString("latin1", k, end))) {
      hidden = true;
    } else if (colon >= 0 && local === "pPr") {
      inProperties = !closing && !empty;
    } else if (colon >= 0 && local === "p") {
      if (!closing) markGone = false;
      else if (markGone) {
        // Its end tag left out: no line break between the two paragraphs' text.
        o += xml.copy(out, o, i, at);
        i = end + 1;
        left = true;
        markGone = false;
      }
    } else if (inProperties && empty && colon >= 0 && (local === "del" || local === "moveFrom" || (local === "vanish" && !OFF.test(xml.toString("latin1", k, end))))) {
      markGone = true;
    }
    at = xml.indexOf(0x3c, end + 1);
  }
  if (!left) return undefined;
  o += xml.copy(out, o, i, n);
  return out.subarray(0, o);
}

const ESCAPE = Buffer.from("_x", "latin1");

const hexValue = (c: number) => (c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : c >= 65 && c <= 70 ? c - 55 : -1);

/** The code unit of the escape `_xHHHH_` at `at`, or -1. */
function escapeAt(b: Buffer, at: number, to: number): number {
  if (at + 7 > to || b[at + 6] !== 0x5f) return -1;
  let unit = 0;
  for (let k = at + 2; k < at + 6; k++) {
    const v = hexValue(b[k]!);
    if (v < 0) return -1;
    unit = unit * 16 + v;
  }
  return unit;
}

/** Whether `xml` holds an escape other than the tab's and the line breaks' (xmlText decodes those). */
function holdsXstringEscape(xml: Buffer): boolean {
  for (let at = xml.indexOf(ESCAPE); at >= 0; at = xml.indexOf(ESCAPE, at + 2)) {
    const unit = escapeAt(xml, at, xml.length);
    if (unit >= 0 && unit !== 9 && unit !== 10 && unit !== 13) return true;
  }
  return false;
}

/**
 * `text` with its `_xHHHH_` escapes decoded in place, left to right as Excel
 * reads them (`_x005F_x0041_` is `_x0041_`: the `_` escaped, the rest text),
 * a surrogate pair's two escapes as one character; never longer.
 */
export function decodeXstrings(text: Buffer): Buffer {
  const n = text.length;
  let at = text.indexOf(ESCAPE);
  if (at < 0) return text;
  let o = at;
  let i = at;
  while (at >= 0) {
    if (at > i) o += text.copy(text, o, i, at);
    let unit = escapeAt(text, at, n);
    if (unit < 0) {
      text[o++] = 0x5f;
      i = at + 1;
    } else {
      i = at + 7;
      const low = unit >= 0xd800 && unit <= 0xdbff && text[i] === 0x5f && text[i + 1] === 0x78 ? escapeAt(text, i, n) : -1;
      if (low >= 0xdc00 && low <= 0xdfff) {
        unit = 0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00);
        i += 7;
      }
      o += writeUtf8(text, o, unit);
    }
    at = text.indexOf(ESCAPE, i);
  }
  o += text.copy(text, o, i, n);
  return text.subarray(0, o);
}
