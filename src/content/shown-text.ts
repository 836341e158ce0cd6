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
// - ODF's hidden text (`<text:hidden-text>`);
// and since recall pass 34, where a key cut by them was published too:
// - a run or a paragraph hidden by its style (office-styles.ts: Word's
//   character and paragraph styles, ODF's automatic and common ones);
// - ODF's hidden paragraphs (`<text:hidden-paragraph>` in one) and
//   sections (`text:display`);
// - WordprocessingML's escapes `_xHHHH_`, decoded as in a spreadsheet;
// - in a second view, a web page's (Word's web layout, a page saved from
//   it), a run hidden there (`<w:webHidden/>`), read in windows around
//   those runs (webShown).
// The text they hold stays in the part's own text (a key may lie in a
// deleted run), so this is a second reading, made only for a part that
// holds one of them: one walk over its tags, then xmlText.
import { anyHiding, DEFAULT_PARAGRAPH, DOCUMENT_DEFAULTS, hidesByDisplay, NO_STYLES, odfStyles, type StyleSheet, stylesHiding, type Vocabulary, vocabularyOf } from "./office-styles.js";
import { attributeValue, isOff, readTag, type Tag } from "./xml-tags.js";
import { writeUtf8, xmlText } from "./xml-text.js";

/** Elements left out with their content (local names; `rPh` with or without a prefix, the others only with one, as Word, LibreOffice and pandoc write them). */
const LEFT_OUT = new Set(["del", "delText", "delInstrText", "instrText", "moveFrom", "hidden-text"]);
const LEFT_OUT_UNPREFIXED = new Set(["rPh"]);
const bytesOf = (words: string[]) => words.map((s) => Buffer.from(s, "latin1"));
/**
 * What a part of each vocabulary (office-styles.ts vocabularyOf) holds when
 * it holds one of the marks above, each looked for natively before any tag
 * is walked: only its own, and each led by a byte that is rare in its parts
 * (a search for `rPh` stopped at every `r` of a sheet's `<row r=`, 0.3 s in
 * 224 MB); whether its text holds `_xHHHH_` escapes.
 */
const MARKS: Record<Vocabulary, { needles: Buffer[]; escapes: boolean }> = {
  // `w:del` has attributes (its id and author); `nstrText` is in `w:instrText` and `w:delInstrText`.
  wordprocessingml: { needles: bytesOf([":del ", "delText", "nstrText", "moveFrom", "vanish"]), escapes: true },
  spreadsheetml: { needles: bytesOf(["Ph ", "Ph>"]), escapes: true },
  // `hidden-text`, `hidden-paragraph`; `display=` in a style's text properties or on a section.
  opendocument: { needles: bytesOf(["hidden-", "display="]), escapes: false },
};
// Led by `b`: a search for `webHidden` stopped at every `w:` of the part.
const WEB_HIDDEN = Buffer.from("bHidden", "latin1");

/**
 * Which view of the document: `print` (Word's default, print, pandoc),
 * `web` (Word's web layout and a page saved from it, which also leave out
 * a `w:webHidden` run: a Table of Contents' page numbers, as Word writes
 * them).
 */
export type View = "print" | "web";

/**
 * The text of an XML part (UTF-8) as shown in `view`: without the elements
 * above, the runs and paragraphs hidden by their properties or by a style
 * (`styles`: the package's, from its styles part; an ODF part's own
 * automatic styles are read from it), and with `_xHHHH_` escapes decoded in
 * a spreadsheet's or a Word document's part; undefined when the part holds
 * none of them (its text is then the shown one). In the `web` view, a Word
 * part's text around its `w:webHidden` runs only (webShown), undefined
 * when it holds none.
 */
export function shownText(xml: Uint8Array, styles: StyleSheet = NO_STYLES, view: View = "print"): Buffer | undefined {
  const bytes = Buffer.from(xml.buffer, xml.byteOffset, xml.length);
  const vocabulary = vocabularyOf(bytes);
  if (vocabulary === undefined) return undefined;
  if (view === "web") return vocabulary === "wordprocessingml" ? webShown(bytes, styles) : undefined;
  const walked = () => withoutHidden(bytes, (cuts) => walkerOf(vocabulary, bytes, cuts, styles, view));
  const { needles, escapes } = MARKS[vocabulary];
  const marked = anyHiding(styles) || needles.some((needle) => bytes.indexOf(needle) >= 0);
  const decode = escapes && holdsXstringEscape(bytes);
  return marked || decode ? textShown(marked ? walked() : undefined, decode, bytes) : undefined;
}

/** The text of a part (`xml`) or of its copy `without` what it does not show, its escapes decoded (`decode`); undefined when that is the part's own text. */
function textShown(without: Buffer | undefined, decode: boolean, xml?: Buffer): Buffer | undefined {
  if (without === undefined && (!decode || xml === undefined)) return undefined;
  const text = xmlText(without ?? xml!, true, without !== undefined);
  return decode ? decodeXstrings(text) : text;
}

/**
 * The bytes of a part read either side of a `bHidden` in the web view. Not
 * the run's paragraph alone: a key wrapped over lines (`fold -w`, read
 * joined by text-forms.ts wrapBreakLength) may run from paragraphs before
 * the web-hidden run to paragraphs after it, and a paragraph whose mark is
 * deleted or hidden runs on into the next.
 */
const WEB_CONTEXT = 64 * 1024;
// Word's prefix: under another, no paragraph's end is found and a window runs to the previous one's end or the part's.
const PARAGRAPH_END = Buffer.from("</w:p>", "latin1");
// Between two windows' text: a blank line, which the wrapped keys' reading (wrapBreakLength) does not join over.
const WINDOWS_APART = Buffer.from("\n\n", "latin1");

/**
 * A Word part's text as a web page shows it, read only in windows: each
 * from a paragraph's end WEB_CONTEXT bytes or more before a `w:webHidden`
 * to one WEB_CONTEXT bytes or more after it (windows that meet are one),
 * walked as the whole part is in the print view, plus the web-hidden runs;
 * undefined when no window leaves anything out. A table of contents' page
 * numbers cost their window, not a second reading of the part. Linear:
 * each search runs over bytes no other one reads (backwards only down to
 * the previous window's end; forwards from past it).
 */
function webShown(xml: Buffer, styles: StyleSheet): Buffer | undefined {
  const hides = stylesHiding(NO_STYLES, styles);
  const pieces: Buffer[] = [];
  let end = 0;
  for (let hit = xml.indexOf(WEB_HIDDEN); hit >= 0; ) {
    const start = paragraphEndBefore(xml, hit - WEB_CONTEXT, end);
    // A web-hidden run within WEB_CONTEXT of this window's end widens it.
    do {
      end = paragraphEndAfter(xml, hit + WEB_CONTEXT);
      hit = xml.indexOf(WEB_HIDDEN, end);
    } while (hit >= 0 && hit - WEB_CONTEXT < end);
    const window = xml.subarray(start, end);
    const piece = withoutHidden(window, (cuts) => {
      const walk = new WordWalk(window, cuts, hides, "web");
      return (tag) => walk.visit(tag);
    });
    if (piece !== undefined) pieces.push(...(pieces.length > 0 ? [WINDOWS_APART, piece] : [piece]));
  }
  return pieces.length > 0 ? xmlText(Buffer.concat(pieces), true, true) : undefined;
}

/** Where the last paragraph end before `at` ends, not before `floor` (floor where none is). */
function paragraphEndBefore(xml: Buffer, at: number, floor: number): number {
  if (at <= floor) return floor;
  const k = xml.subarray(floor, at).lastIndexOf(PARAGRAPH_END);
  return k < 0 ? floor : floor + k + PARAGRAPH_END.length;
}

/** Where the first paragraph end from `at` on ends (the part's end where none is). */
function paragraphEndAfter(xml: Buffer, at: number): number {
  if (at >= xml.length) return xml.length;
  const k = xml.indexOf(PARAGRAPH_END, at);
  return k < 0 ? xml.length : k + PARAGRAPH_END.length;
}

const DISPLAY = Buffer.from("display=", "latin1");

/** What reads each tag of a part of `vocabulary`, cutting what it hides (a spreadsheet's part: only the elements left out). */
function walkerOf(vocabulary: Vocabulary, xml: Buffer, cuts: Cuts, styles: StyleSheet, view: View): (tag: Tag) => void {
  if (vocabulary === "wordprocessingml") {
    const walk = new WordWalk(xml, cuts, stylesHiding(NO_STYLES, styles), view);
    return (tag) => walk.visit(tag);
  }
  if (vocabulary === "opendocument") {
    // A part's automatic styles hide only with `display=` in it.
    const own = xml.indexOf(DISPLAY) >= 0 ? odfStyles(xml) : NO_STYLES;
    const walk = new OdfWalk(xml, cuts, anyHiding(own) || anyHiding(styles) ? stylesHiding(own, styles) : undefined);
    return (tag) => walk.visit(tag);
  }
  return () => {};
}

/**
 * A copy of a part being written without what it does not show: bytes of
 * the part before `i` are written to `out` (up to `o`) or left out.
 */
class Cuts {
  readonly out: Buffer;
  o = 0;
  i = 0;
  left = false;
  constructor(readonly xml: Buffer) {
    this.out = Buffer.allocUnsafe(xml.length);
  }
  /** Where the part's byte at `at` (not before `i`) lies in `out`. */
  outAt(at: number): number {
    return this.o + (at - this.i);
  }
  /** Leaves the part's bytes [from, to) out. */
  leaveOut(from: number, to: number): void {
    this.o += this.xml.copy(this.out, this.o, this.i, from);
    this.i = to;
    this.left = true;
  }
  /** Leaves out the element that starts at `from` (in `out` at `fromOut`, outAt) and ends before `to`, with whatever was cut inside it. */
  takeBack(from: number, fromOut: number, to: number): void {
    if (this.i < from) this.xml.copy(this.out, this.o, this.i, from);
    this.o = fromOut;
    this.i = to;
    this.left = true;
  }
  /** The copy, or undefined when nothing was left out. */
  result(): Buffer | undefined {
    if (!this.left) return undefined;
    this.o += this.xml.copy(this.out, this.o, this.i, this.xml.length);
    return this.out.subarray(0, this.o);
  }
}

/**
 * `xml` without the elements LEFT_OUT names and what the walker `walker`
 * makes cuts of, in a copy; undefined when there was none. One walk over
 * the tags: an element left out is skipped to its end tag (`</` its name
 * `>`), found by one search from its start; a name whose end is missing is
 * left in from there on and not looked for again (linear).
 */
function withoutHidden(xml: Buffer, walker: (cuts: Cuts) => (tag: Tag) => void): Buffer | undefined {
  const cuts = new Cuts(xml);
  const visit = walker(cuts);
  const endless = new Set<string>();
  for (let at = xml.indexOf(0x3c); at >= 0; ) {
    const tag = readTag(xml, at);
    if (tag === undefined) break;
    const after = leftOutEnd(xml, tag, endless);
    if (after >= 0) {
      cuts.leaveOut(at, after);
      at = xml.indexOf(0x3c, after);
      continue;
    }
    visit(tag);
    at = xml.indexOf(0x3c, tag.end + 1);
  }
  return cuts.result();
}

/** Where the element LEFT_OUT names that `tag` opens ends (past its end tag), or -1; a name whose end is missing goes in `endless`, not looked for again. */
function leftOutEnd(xml: Buffer, tag: Tag, endless: Set<string>): number {
  if (tag.closing || tag.empty || !(tag.prefixed ? LEFT_OUT.has(tag.local) : LEFT_OUT_UNPREFIXED.has(tag.local)) || endless.has(tag.name)) return -1;
  const close = xml.indexOf(`</${tag.name}>`, tag.end + 1, "latin1");
  if (close >= 0) return close + tag.name.length + 3;
  endless.add(tag.name);
  return -1;
}

/**
 * A WordprocessingML part's runs hidden (`w:vanish` in a run's properties,
 * not `w:val="0"`; or, where they say nothing, in its character style,
 * else its paragraph's style, the default one where it names none, else
 * the document defaults: the nearest that says; Word's toggle of two
 * styles that both hide is not followed, the run is hidden; in the web
 * view a `w:webHidden` too) and paragraph marks deleted,
 * moved or hidden (the paragraph then runs on into the next, with no line
 * break). Runs nest (a text box's runs inside a picture's): a hidden run is
 * the innermost one open, and an outer one is left in (a reading that shows
 * more is still one the part's text is read beside); so with paragraphs.
 */
class WordWalk {
  // The innermost run open: where it starts and where that lies in out; what its own properties and its style say (undefined: nothing), its webHidden.
  private run = -1;
  private runOut = 0;
  private own: boolean | undefined;
  private styled: boolean | undefined;
  private webHidden = false;
  // The innermost paragraph: its style hides it; inside its properties; they delete or move its mark, or hide it (undefined: they say nothing).
  private paragraphStyled = false;
  private inProperties = false;
  private markGone = false;
  private markHidden: boolean | undefined;
  constructor(
    private readonly xml: Buffer,
    private readonly cuts: Cuts,
    private readonly hides: (style: string) => boolean | undefined,
    private readonly view: View,
  ) {}

  visit(tag: Tag): void {
    if (!tag.prefixed) return;
    if (tag.local === "r") this.runTag(tag);
    else if (tag.local === "p") this.paragraphTag(tag);
    else if (tag.local === "pPr") this.inProperties = !tag.closing && !tag.empty;
    else if (this.inProperties) this.paragraphProperty(tag);
    else if (this.run >= 0) this.runProperty(tag);
  }

  private toggle(tag: Tag): boolean {
    return !isOff(attributeValue(this.xml, tag, "val"));
  }

  /** What the style `tag` names says, else the document defaults (`orDefaults`), else nothing. */
  private styleHides(tag: Tag | string, orDefaults: boolean): boolean | undefined {
    const name = typeof tag === "string" ? tag : attributeValue(this.xml, tag, "val");
    const says = name === undefined ? undefined : this.hides(name);
    return says ?? (orDefaults ? this.hides(DOCUMENT_DEFAULTS) : undefined);
  }

  private runTag(tag: Tag): void {
    if (!tag.closing && !tag.empty) {
      this.run = tag.at;
      this.runOut = this.cuts.outAt(tag.at);
      this.own = undefined;
      this.styled = undefined;
      this.webHidden = false;
    } else if (tag.closing && this.run >= 0) {
      // The nearest that says: the run's own properties, its character style, its paragraph's style.
      if ((this.own ?? this.styled ?? this.paragraphStyled) || (this.view === "web" && this.webHidden)) this.cuts.takeBack(this.run, this.runOut, tag.end + 1);
      this.run = -1;
    }
  }

  private runProperty(tag: Tag): void {
    if (tag.closing) return;
    if (tag.local === "vanish") this.own = this.toggle(tag);
    else if (tag.local === "rStyle") this.styled = this.styleHides(tag, false);
    else if (tag.local === "webHidden") this.webHidden = this.toggle(tag);
  }

  private paragraphProperty(tag: Tag): void {
    if (tag.closing) return;
    if (tag.empty && (tag.local === "del" || tag.local === "moveFrom")) this.markGone = true;
    else if (tag.local === "vanish") this.markHidden = this.toggle(tag);
    else if (tag.local === "pStyle") this.paragraphStyled = this.styleHides(tag, true) === true;
  }

  private paragraphTag(tag: Tag): void {
    if (tag.closing && (this.markGone || (this.markHidden ?? this.paragraphStyled))) {
      // Its end tag left out: no line break between the two paragraphs' text.
      this.cuts.leaveOut(tag.at, tag.end + 1);
    }
    this.markGone = false;
    this.markHidden = undefined;
    // Until its properties name a style, a paragraph's is the default one.
    this.paragraphStyled = !tag.closing && !tag.empty && this.styleHides(DEFAULT_PARAGRAPH, true) === true;
  }
}

/** The ODF elements a style or a mark hides with their content; `p` and `h` are paragraphs. */
const ODF_HIDEABLE = new Set(["p", "h", "span", "section"]);

/**
 * An ODF part's paragraphs holding a `text:hidden-paragraph` (LibreOffice
 * hides one whose condition holds: the shown reading takes it as held),
 * and its paragraphs, headings, spans and sections whose style hides them
 * (`text:display`, office-styles.ts) or, a section, its own `text:display`.
 * The elements open are kept on a stack, each with where its paragraph
 * lies on it: a mark is set in constant time, however deep.
 */
class OdfWalk {
  private readonly open: { name: string; at: number; out: number; hidden: boolean; paragraph: number }[] = [];
  constructor(
    private readonly xml: Buffer,
    private readonly cuts: Cuts,
    private readonly hides: ((style: string) => boolean | undefined) | undefined,
  ) {}

  visit(tag: Tag): void {
    if (!tag.prefixed) return;
    if (tag.local === "hidden-paragraph") this.hideParagraph();
    else if (!ODF_HIDEABLE.has(tag.local) || tag.empty) return;
    else if (!tag.closing) this.opened(tag);
    else this.closed(tag);
  }

  private hideParagraph(): void {
    const paragraph = this.open.at(-1)?.paragraph ?? -1;
    if (paragraph >= 0) this.open[paragraph]!.hidden = true;
  }

  private opened(tag: Tag): void {
    const isParagraph = tag.local === "p" || tag.local === "h";
    const paragraph = isParagraph ? this.open.length : (this.open.at(-1)?.paragraph ?? -1);
    this.open.push({ name: tag.name, at: tag.at, out: this.cuts.outAt(tag.at), hidden: this.hiddenBy(tag), paragraph });
  }

  private hiddenBy(tag: Tag): boolean {
    if (tag.local === "section" && hidesByDisplay(attributeValue(this.xml, tag, "display"))) return true;
    if (this.hides === undefined) return false;
    const style = attributeValue(this.xml, tag, "style-name");
    return style !== undefined && this.hides(style) === true;
  }

  private closed(tag: Tag): void {
    const element = this.open.at(-1);
    // An end tag that closes no element open here (a damaged part) changes nothing.
    if (element?.name !== tag.name) return;
    this.open.pop();
    if (element.hidden) this.cuts.takeBack(element.at, element.out, tag.end + 1);
  }
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
function decodeXstrings(text: Buffer): Buffer {
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
