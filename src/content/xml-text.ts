// The text of an XML part as a reader sees it: tags removed, so that the
// runs Word splits a word into (`<w:t>ghp_</w:t></w:r><w:r><w:t>abc…`) read
// as one, entities decoded, and a line break where a paragraph, row, cell or
// break ends. Attribute values are not in it: the raw part, scanned too,
// holds them. Two regular expressions replace over the part's bytes read as
// Latin-1 (so UTF-8 passes through unchanged, and the string is one byte a
// character): a prepare judges a docx once, with code V8 has not optimised,
// where a loop over the tags in JavaScript cost half as much again.
import type { InspectContext } from "./inspect.js";

/** Elements whose end is a line break in the text (local names: w:p, a:p, text:p, row, c…). */
const BREAK_NAMES = "p|br|tab|tr|tc|row|c|si|h|li|div|cr|txBody";
// Linear: a prefix and a name are bounded runs of name characters, and no
// part of a tag may hold `<` or `>`, so a match tried at one `<` reads no
// further than the next.
const BREAK = new RegExp(`<\\/(?:[A-Za-z0-9_.-]{1,64}:)?(?:${BREAK_NAMES})[ \\t\\r\\n]*>|<(?:[A-Za-z0-9_.-]{1,64}:)?(?:${BREAK_NAMES})(?:[ \\t\\r\\n][^<>]*)?\\/>`, "g");
const TAG = /<[^<>]*>/g;
/**
 * A tag as HTML reads one (WHATWG HTML, 13.2.5.6): `<` then a letter, `/`,
 * `!` or `?`; any other `<` is text a browser or a Markdown renderer shows
 * (`a < ghp_…&shy;… > b`), which TAG would take out with all up to the `>`.
 */
const HTML_TAG = /<[A-Za-z/!?][^<>]*>/g;

/** Writes code point `cp` as UTF-8 at `o`; its length (U+FFFD for a lone surrogate, as Buffer's encoder writes it; nothing past U+10FFFF). */
export function writeUtf8(b: Buffer, o: number, cp: number): number {
  if (cp < 0x80) return (b[o] = cp), 1;
  if (cp < 0x800) return (b[o] = 0xc0 | (cp >> 6)), (b[o + 1] = 0x80 | (cp & 63)), 2;
  if (cp >= 0xd800 && cp <= 0xdfff) cp = 0xfffd;
  if (cp < 0x10000) return (b[o] = 0xe0 | (cp >> 12)), (b[o + 1] = 0x80 | ((cp >> 6) & 63)), (b[o + 2] = 0x80 | (cp & 63)), 3;
  if (cp > 0x10ffff) return 0;
  return (b[o] = 0xf0 | (cp >> 18)), (b[o + 1] = 0x80 | ((cp >> 12) & 63)), (b[o + 2] = 0x80 | ((cp >> 6) & 63)), (b[o + 3] = 0x80 | (cp & 63)), 4;
}

const hexValue = (c: number) => (c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : c >= 65 && c <= 70 ? c - 55 : -1);

/**
 * HTML's named character references (WHATWG HTML, 13.5) that read as a
 * character a key may hold (ASCII: `&lowbar;` for `_`, `&colon;`,
 * `&period;`), or as one a copy of the text carries inside a word and the
 * zero-width reading removes (`&shy;`, `&ZeroWidthSpace;`, `&zwnj;`,
 * `&zwj;`, `&NoBreak;`; since red-team pass 33 every one that names a
 * default-ignorable code point: `&lrm;`, `&rlm;`, `&af;`, `&it;`, `&ic;`
 * and their long names), or as a space that ends one (`&nbsp;`): a key
 * written with them is read whole where a browser or a Markdown renderer
 * shows it whole. The other 2,000 name letters with accents, symbols and
 * other spaces, which no key holds: they are left as they are.
 */
const HTML_NAMED: ReadonlyMap<string, number> = new Map([
  ...(
    [
      [9, "Tab"], [10, "NewLine"], [33, "excl"], [34, "quot QUOT"], [35, "num"], [36, "dollar"], [37, "percnt"], [38, "amp AMP"], [39, "apos"],
      [40, "lpar"], [41, "rpar"], [42, "ast midast"], [43, "plus"], [44, "comma"], [46, "period"], [47, "sol"], [58, "colon"], [59, "semi"],
      [60, "lt LT"], [61, "equals"], [62, "gt GT"], [63, "quest"], [64, "commat"], [91, "lsqb lbrack"], [92, "bsol"], [93, "rsqb rbrack"],
      [94, "Hat"], [95, "lowbar UnderBar"], [96, "grave DiacriticalGrave"], [123, "lcub lbrace"], [124, "verbar vert VerticalLine"],
      [125, "rcub rbrace"], [0xa0, "nbsp NonBreakingSpace"], [0xad, "shy"],
      [0x200b, "ZeroWidthSpace NegativeVeryThinSpace NegativeThinSpace NegativeMediumSpace NegativeThickSpace"], [0x200c, "zwnj"], [0x200d, "zwj"],
      [0x2060, "NoBreak"], [0x200e, "lrm"], [0x200f, "rlm"], [0x2061, "ApplyFunction af"], [0x2062, "InvisibleTimes it"], [0x2063, "InvisibleComma ic"],
    ] as const
  ).flatMap(([cp, names]) => names.split(" ").map((name) => [name, cp] as const)),
]);

/**
 * Names HTML reads without their `;` too (its legacy references, of those
 * above): `&shy` before a letter is a soft hyphen in a browser. Each is at
 * least as long as its UTF-8, so the text still only shrinks.
 */
const HTML_LEGACY = ["amp", "AMP", "lt", "LT", "gt", "GT", "quot", "QUOT", "nbsp", "shy"].map((name) => ({ bytes: Buffer.from(name, "latin1"), cp: HTML_NAMED.get(name)! }));

/** The longest name HTML_NAMED holds. */
const LONGEST_NAME = Math.max(...[...HTML_NAMED.keys()].map((name) => name.length));

const isAlphanumeric = (c: number) => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);

/**
 * The length and code point of the HTML named reference at `at` (its `&`
 * to its `;`, or a legacy name's end), or undefined; no byte from `to` on
 * is read. At most LONGEST_NAME + 2 bytes are looked at.
 */
function htmlNamedAt(b: Buffer, at: number, to: number): { length: number; cp: number } | undefined {
  const first = at + 1 < to ? b[at + 1]! : -1;
  if (!isAlphanumeric(first)) return undefined;
  let k = at + 1;
  while (k < to && k - at <= LONGEST_NAME && isAlphanumeric(b[k]!)) k++;
  if (k < to && b[k] === 59 && k > at + 1) {
    const cp = HTML_NAMED.get(b.toString("latin1", at + 1, k));
    if (cp !== undefined) return { length: k + 1 - at, cp };
  }
  // Compared byte by byte: a string made for each `&` cost a file of nothing but `&` ten strings a byte.
  for (const { bytes, cp } of HTML_LEGACY) {
    if (bytes[0] === first && at + 1 + bytes.length <= to && b.compare(bytes, 0, bytes.length, at + 1, at + 1 + bytes.length) === 0) return { length: bytes.length + 1, cp };
  }
  return undefined;
}

/**
 * Decodes the entities of `b` between `from` and `to` in place (`&#10;`,
 * `&#x41;`, and XML's five named ones; anything else is left as it is) and
 * returns the new end; `html`: HTML's named references too (HTML_NAMED, a
 * text file's markup), `&#X41;`, and a numeric one without its `;`. The text
 * only shrinks: an entity is longer than its UTF-8. A byte loop: a regular
 * expression's replacement by a function cost ~0.3 µs an entity (90 ms/MiB
 * of nothing but `&#10;`), and a text file (an SVG) is read this way too.
 */
export function decodeEntities(b: Buffer, from: number, to: number, html = false): number {
  // Searches end at `to`: past it lies the rest of the buffer, and a search through it for every piece was quadratic.
  const text = b.subarray(0, to);
  let i = text.indexOf(38, from);
  if (i < 0 || i >= to) return to;
  let o = i;
  while (i < to) {
    const c = b[i]!;
    if (c === 38) {
      const length = entityLength(b, i, to, html);
      if (length > 0) {
        o += writeUtf8(b, o, entityValue(b, i, length));
        i += length;
        continue;
      }
      const named = html ? htmlNamedAt(b, i, to) : undefined;
      if (named !== undefined) {
        o += writeUtf8(b, o, named.cp);
        i += named.length;
        continue;
      }
    } else if (b[i + 1] !== 38 && b[i + 2] !== 38 && b[i + 3] !== 38) {
      // A run without `&` moves down in one copy (its end found natively); near ones, a byte at a time.
      const next = text.indexOf(38, i);
      const stop = next < 0 ? to : next;
      o += b.copy(b, o, i, stop);
      i = stop;
      continue;
    }
    b[o++] = c;
    i++;
  }
  return o;
}

/** The most significant digits (past any leading zeros) a numeric reference may have: U+10FFFF is 1114111, 10FFFF. */
const DECIMAL_DIGITS = 7;
const HEX_DIGITS = 6;

/**
 * The length of the entity that starts at `at` (its `&` to its `;`), 0 when
 * none does; no byte from `to` on is read (in place, what lies there is old
 * text). A numeric reference may have any number of leading zeros (XML 1.0
 * 4.1 CharRef; HTML's tokenizer, its numeric character reference states:
 * `&#00000095;` is `_`), then at most DECIMAL_DIGITS or HEX_DIGITS more: a
 * longer one is no character and is left as it is. In HTML (`html`) the
 * `;` may be missing: the reference ends before the first byte that is no
 * digit (`&#72&#120` is `Hx`, `&#x23` `#`, `&#38 ` `& `). Linear: a scan stops at
 * the first byte that is no digit, so no byte is read by two references'
 * scans, however many zeros a flood of `&#` holds. Its `x` is lowercase in
 * XML, either case in HTML (`&#X5F;`), which a text file's markup (`html`)
 * is read as.
 */
function entityLength(b: Buffer, at: number, to: number, html: boolean): number {
  const at1 = (k: number) => (at + k < to ? b[at + k]! : -1);
  const c = at1(1);
  if (c === 35) {
    const hex = at1(2) === 120 || (html && at1(2) === 88);
    const first = hex ? 3 : 2;
    let k = first;
    while (at1(k) === 48) k++;
    const significant = k;
    const isDigit = (d: number) => (hex ? hexValue(d) >= 0 : d >= 48 && d <= 57);
    while (k - significant < (hex ? HEX_DIGITS : DECIMAL_DIGITS) && isDigit(at1(k))) k++;
    if (k === first) return 0;
    if (at1(k) === 59) return k + 1;
    // HTML decodes one without its `;` too (a missing-semicolon parse error, in text and in attributes alike:
    // `&#72&#120`, `&#x23`; red-team pass 33), ending at the first byte that is no digit, as html.unescape does.
    return html && !isDigit(at1(k)) ? k : 0;
  }
  // XML's five: &amp; &apos; &lt; &gt; &quot;
  if (c === 97) {
    if (at1(2) === 109 && at1(3) === 112 && at1(4) === 59) return 5;
    return at1(2) === 112 && at1(3) === 111 && at1(4) === 115 && at1(5) === 59 ? 6 : 0;
  }
  if (c === 108 || c === 103) return at1(2) === 116 && at1(3) === 59 ? 4 : 0;
  return c === 113 && at1(2) === 117 && at1(3) === 111 && at1(4) === 116 && at1(5) === 59 ? 6 : 0;
}

/** The code point of the entity of `length` bytes at `at`. */
function entityValue(b: Buffer, at: number, length: number): number {
  const c = b[at + 1];
  if (c !== 35) return c === 97 ? (length === 5 ? 38 : 39) : c === 108 ? 60 : c === 103 ? 62 : 34;
  const hex = b[at + 2] === 120 || b[at + 2] === 88;
  let cp = 0;
  // HTML's reference may end without its `;` (entityLength).
  const end = b[at + length - 1] === 59 ? at + length - 1 : at + length;
  for (let k = at + (hex ? 3 : 2); k < end; k++) cp = hex ? cp * 16 + hexValue(b[k]!) : cp * 10 + b[k]! - 48;
  return cp;
}

/**
 * An Excel header's or footer's element and its text (SpreadsheetML's
 * `oddHeader`…`firstFooter`), whose codes start with `&` (`&C` centre,
 * `&"Arial,Bold"`, `&12`, `&K00FF00`): openpyxl writes `&amp;Cghp_…`, and
 * read with the code's letter, the token was glued to a word. A piece is cut
 * only before a `<`, so an element's opening tag and its text are in one.
 */
const HEADER_FOOTER = /(<(?:[A-Za-z0-9_.-]{1,64}:)?(?:odd|even|first)(?:Header|Footer)>)([^<]*)/g;
const HEADER_FOOTER_CODE = /&amp;(?:&quot;[^&<]{0,256}&quot;|"[^"<]{0,256}"|K[0-9A-Fa-f+-]{6}|[0-9]{1,3}|[A-Za-z])/g;
const headerFooterText = (_: string, tag: string, text: string) => tag + text.replace(HEADER_FOOTER_CODE, "\n");

/**
 * OOXML's escape of a control character in a string (ST_Xstring, ECMA-376
 * 22.9.2.19): openpyxl writes a header's line breaks `_x000a_`, Excel a
 * cell's carriage returns `_x000D_`; a PEM block's lines read as one line.
 * Only the tab and the line breaks, which separate words (a key holding
 * `_x000a_` would be cut in this reading only: the part as it is is
 * scanned too).
 */
const XSTRING_CONTROLS: [RegExp, string][] = [
  [/_x0009_/g, "\t"],
  [/_x000[aA]_/g, "\n"],
  [/_x000[dD]_/g, "\r"],
];
/** Three replacements by a string, native; one by a function per escape took 35 ms/MiB of nothing but `_x000a_`. */
const xstringControls = (text: string) => XSTRING_CONTROLS.reduce((t, [re, c]) => t.replace(re, c), text);

/** Whether a character reference to a line break (`&#10;`, `&#13;`, `&#xA;`, `&#xd;`, up to four leading zeros) follows its `&#` at `at`. */
function lineBreakReferenceAt(b: Buffer, at: number): boolean {
  const hex = b[at] === 120 || b[at] === 88;
  let k = hex ? at + 1 : at;
  const zeros = k + 4;
  while (k < zeros && b[k] === 48) k++;
  if (hex) return (b[k] === 97 || b[k] === 65 || b[k] === 100 || b[k] === 68) && b[k + 1] === 59;
  return b[k] === 49 && (b[k + 1] === 48 || b[k + 1] === 51) && b[k + 2] === 59;
}

/** Whether `bytes` holds a character reference to a line break (only an attribute's value holds one: XML reads a line break there as a space). */
function holdsLineBreakReference(bytes: Buffer): boolean {
  for (let at = bytes.indexOf(38); at >= 0; at = bytes.indexOf(38, at + 1)) if (bytes[at + 1] === 35 && lineBreakReferenceAt(bytes, at + 2)) return true;
  return false;
}

/**
 * The part with its entities decoded and its tags kept, when an attribute's
 * value holds a line break (a picture's alt text, a shape's name, an Excel
 * prompt, an ODF sheet's name): a PEM block there is written `…KEY-----&#10;MII…`,
 * which neither the part as it is nor its text (tags removed) reads whole.
 * Undefined for any other part. `inPlace`: decoded over the part's own
 * bytes (which nothing reads after), not a copy.
 */
export function xmlAttributesText(xml: Uint8Array, inPlace = false): Buffer | undefined {
  const bytes = Buffer.from(xml.buffer, xml.byteOffset, xml.length);
  if (!holdsLineBreakReference(bytes)) return undefined;
  const out = inPlace ? bytes : Buffer.from(bytes);
  return out.subarray(0, decodeEntities(out, 0, out.length));
}

const CDATA_OPEN = Buffer.from("<![CDATA[", "latin1");
const CDATA_CLOSE = Buffer.from("]]>", "latin1");
const COMMENT_OPEN = Buffer.from("<!--", "latin1");
const COMMENT_CLOSE = Buffer.from("-->", "latin1");
const PI_OPEN = Buffer.from("<?", "latin1");
const PI_CLOSE = Buffer.from("?>", "latin1");
/** The processing instructions every packet holds outside its elements (its wrapper, an XML declaration): no reason to read it again. */
const PACKET_PIS = ["xpacket", "xml "].map((name) => Buffer.from(name, "latin1"));

/**
 * Whether `bytes` holds what an XML parser reads out of an element's text
 * other than an entity: a CDATA section (its text kept, its markers not), a
 * comment or a processing instruction (taken out whole), which a key's two
 * halves may lie around (`AKIA<![CDATA[…]]>…`, `AKIA<!-- -->…`).
 */
function holdsTextMarkup(bytes: Buffer): boolean {
  if (bytes.indexOf(CDATA_OPEN) >= 0 || bytes.indexOf(COMMENT_OPEN) >= 0) return true;
  for (let at = bytes.indexOf(PI_OPEN); at >= 0; at = bytes.indexOf(PI_OPEN, at + 2)) {
    if (!PACKET_PIS.some((name) => bytes.compare(name, 0, name.length, at + 2, Math.min(bytes.length, at + 2 + name.length)) === 0)) return true;
  }
  return false;
}

/**
 * `bytes` (XML) with its text as a parser gives it and its tags kept: each
 * CDATA section's text as it is (no entity decoded in it) without its
 * markers, comments and processing instructions taken out, entities
 * decoded everywhere else (attribute values too). A marker with no end is
 * left as it is, with what follows it, and neither it nor its end is
 * looked for again (`<!--` repeated with no `-->` is two searches, not two
 * each). Linear: the text between two markers is copied (and decoded,
 * where an `&` lies) once, and each marker's next place is looked for
 * again only once passed.
 */
function xmlReading(bytes: Buffer): Buffer {
  const out = Buffer.allocUnsafe(bytes.length);
  const n = bytes.length;
  let o = 0;
  let i = 0;
  // Each marker's next place (-1: none from there on, or its end missing), and the next `&`.
  const next = [-2, -2, -2];
  let amp = -2;
  for (;;) {
    let at = -1;
    let kind = -1;
    for (let k = 0; k < 3; k++) {
      if (next[k] !== -1 && next[k]! < i) next[k] = bytes.indexOf(MARKERS[k]!.open, i);
      if (next[k]! >= 0 && (at < 0 || next[k]! < at)) (at = next[k]!), (kind = k);
    }
    const stop = at < 0 ? n : at;
    if (amp !== -1 && amp < i) amp = bytes.indexOf(38, i);
    // Decoded only where an `&` lies (a call per span of `<!---->` repeated cost as much as the rest).
    if (stop > i) o = amp >= 0 && amp < stop ? decodeEntities(out, o, o + bytes.copy(out, o, i, stop)) : o + bytes.copy(out, o, i, stop);
    if (at < 0) break;
    const { open, close } = MARKERS[kind]!;
    const end = bytes.indexOf(close, at + open.length);
    if (end < 0) {
      // No end: this marker is text (with what follows it), and so is every later one of its kind.
      next[kind] = -1;
      o += bytes.copy(out, o, at, at + open.length);
      i = at + open.length;
      continue;
    }
    // A CDATA section's text as it is; a comment's or an instruction's, nothing.
    if (kind === 0) o += bytes.copy(out, o, at + open.length, end);
    i = end + close.length;
  }
  return out.subarray(0, o);
}
/** What xmlReading reads out of an element's text: a CDATA section (its text kept), a comment, a processing instruction. */
const MARKERS = [
  { open: CDATA_OPEN, close: CDATA_CLOSE },
  { open: COMMENT_OPEN, close: COMMENT_CLOSE },
  { open: PI_OPEN, close: PI_CLOSE },
];

/**
 * An XMP packet (or a chunk of one) read as XML, in a copy, its tags kept:
 * its entities decoded (XML's: numeric references and the five named
 * ones), in elements and in attributes alike, and (since recall pass 32)
 * its CDATA sections, comments and processing instructions read as a
 * parser reads them (xmlReading), as an XMP reader (exiftool) gives its
 * values: `ghp&#95;…` and `AKIA<![CDATA[…]]>…` are keys there. Undefined
 * when it holds neither, and reads as it is; `markup` says whether it held
 * more than entities.
 */
export function xmpText(xmp: Uint8Array): { text: Buffer; markup: boolean } | undefined {
  const bytes = Buffer.from(xmp.buffer, xmp.byteOffset, xmp.length);
  const markup = holdsTextMarkup(bytes);
  if (!markup && bytes.indexOf(38) < 0) return undefined;
  return { text: xmlReading(bytes), markup };
}

/**
 * Scans an XMP packet (or a chunk of one), wherever a reader finds it (a
 * JPEG's APP1, a PNG's iTXt, a WebP's or GIF's XMP, a PDF's Metadata
 * stream, a TIFF's tag 700, an mp4's XMP box), also read as XML (xmpText):
 * XMP is XML, and a key written `ghp&#95;…` or cut by a CDATA section's
 * markers in it is the key to exiftool and every XMP reader, where its
 * bytes hold none. The one reading of XMP as XML; the readers scan the
 * packet as it is.
 */
export function scanXmpText(ctx: Pick<InspectContext, "scanDerivedText">, part: string, xmp: Uint8Array): void {
  const read = xmpText(xmp);
  if (read !== undefined) ctx.scanDerivedText(`${part} (${read.markup ? "its text as an XML parser reads it" : "its entities decoded"})`, read.text);
}

const DOCTYPE = Buffer.from("!DOCTYPE", "latin1");
const ENTITY = Buffer.from("!ENTITY", "latin1");

/**
 * Whether `xml` declares an entity in a DTD (`<!DOCTYPE … [<!ENTITY k
 * "ghp_…">]>`, then `&k;` in its text): an XML parser (libxml2, and so
 * LibreOffice and lxml) expands it, where xmlText leaves `&k;` as it is.
 * Since recall pass 34 a zip's part that does is refused, not expanded:
 * no Office writer writes one, Word refuses a part with a DTD, and an
 * expansion is a bomb's tool (entities of entities). Looked for natively,
 * each needle led by `!`, rare in XML; a DOCTYPE in a comment counts too.
 */
export function declaresEntities(xml: Uint8Array): boolean {
  const bytes = Buffer.from(xml.buffer, xml.byteOffset, xml.length);
  const doctype = markupDeclaration(bytes, DOCTYPE, 0);
  return doctype >= 0 && markupDeclaration(bytes, ENTITY, doctype) >= 0;
}

/** Where `<` `needle` (a `!` and a name) first lies from `from`, or -1. */
function markupDeclaration(bytes: Buffer, needle: Buffer, from: number): number {
  for (let at = bytes.indexOf(needle, from); at >= 0; at = bytes.indexOf(needle, at + 1)) if (bytes[at - 1] === 0x3c) return at;
  return -1;
}

/** Whether xmlAttributesText has a reading of `xml`. */
export const hasAttributesText = (xml: Uint8Array): boolean => holdsLineBreakReference(Buffer.from(xml.buffer, xml.byteOffset, xml.length));

/**
 * The part is read in pieces of about this many bytes, each cut just before a
 * `<`: no tag or entity holds a `<`, so none is cut, and each piece's strings
 * stay in V8's young generation (one string of a whole 80 MB sheet cost more
 * in garbage collection than the expressions did).
 */
const PIECE = 64 * 1024;

/**
 * The text of `xml` (UTF-8 bytes) as UTF-8 bytes; `ooxml`: also an Excel
 * header's or footer's codes read as line breaks and OOXML's escaped
 * control characters decoded (a zip's parts; a text file's markup has
 * neither, and each costs a replacement where it is); else HTML's named
 * references decoded (a text file's markup: HTML, Markdown, an SVG a page
 * holds; an OOXML part has XML's five only); `htmlTags`: only what HTML
 * reads as a tag is taken out (HTML_TAG: an HTML or Markdown file). `inPlace`: written
 * over the part's own bytes, which nothing reads after (a 222 MB sheet's
 * text held 85 MB more): each piece is read before its text is written,
 * and the text so far is never longer than the part so far.
 *
 * A CDATA section's text is kept as it is, without its markers, as an XML
 * parser reads it (no tag taken out of it, no entity decoded in it): since
 * forms33 (2026-12-05), where TAG took a section out whole with its text,
 * and a key cut in two by one (`<text>ghp_Q7mZ<![CDATA[k2Rp…]]></text>`,
 * two sections) was published. An opening with no end is markup, as
 * before, and no later one is looked for: linear, each byte searched at
 * most twice (for the next opening, for its end).
 */
export function xmlText(xml: Uint8Array, ooxml = true, inPlace = false, htmlTags = false): Buffer {
  const bytes = Buffer.from(xml.buffer, xml.byteOffset, xml.length);
  // The text is never longer than the part: a tag, an entity or a section's markers are longer than what they read as.
  const out = inPlace ? bytes : Buffer.allocUnsafe(bytes.length);
  let length = 0;
  let at = 0;
  let cdata = bytes.indexOf(CDATA_OPEN);
  for (;;) {
    length = markupText(bytes, at, cdata < 0 ? bytes.length : cdata, out, length, ooxml, htmlTags);
    if (cdata < 0) break;
    at = cdata;
    const close = bytes.indexOf(CDATA_CLOSE, cdata + CDATA_OPEN.length);
    if (close < 0) {
      cdata = -1;
      continue;
    }
    length += bytes.copy(out, length, cdata + CDATA_OPEN.length, close);
    at = close + CDATA_CLOSE.length;
    cdata = bytes.indexOf(CDATA_OPEN, at);
  }
  return out.subarray(0, length);
}

/** The longest text between two CDATA sections that isPlainText looks at byte by byte. */
const SHORT_TEXT = 64;
/** Whether bytes[from, to) holds no `<`, `&` or `_` (a tag's, an entity's or an OOXML escape's first byte): its text is itself. */
function isPlainText(bytes: Buffer, from: number, to: number): boolean {
  for (let k = from; k < to; k++) {
    const c = bytes[k];
    if (c === 0x3c || c === 0x26 || c === 0x5f) return false;
  }
  return true;
}

/** Writes the text of bytes[from, to) (no CDATA section in it) to `out` at `length`, a piece at a time; returns the new length. */
function markupText(bytes: Buffer, from: number, to: number, out: Buffer, length: number, ooxml: boolean, htmlTags: boolean): number {
  // A few bytes with no tag, entity or escape between two sections are copied: two replacements and a decoding each took 8 MiB of `a<![CDATA[b]]>` 570 ms.
  if (to - from <= SHORT_TEXT && isPlainText(bytes, from, to)) return length + bytes.copy(out, length, from, to);
  for (let at = from; at < to; ) {
    let end = at + PIECE >= to ? to : bytes.indexOf(0x3c, at + PIECE);
    if (end < 0 || end > to) end = to;
    let text = bytes.toString("latin1", at, end);
    if (ooxml && (text.includes("Header>") || text.includes("Footer>"))) text = text.replace(HEADER_FOOTER, headerFooterText);
    text = text.replace(BREAK, "\n").replace(htmlTags ? HTML_TAG : TAG, "");
    if (ooxml && text.includes("_x00")) text = xstringControls(text);
    const written = out.write(text, length, "latin1");
    // Buffer.write stops at the buffer's end without a word: text past it would go unread.
    if (written !== text.length) throw new Error(`the text of an XML part outgrew the part (${written} of ${text.length} characters kept)`);
    length = decodeEntities(out, length, length + written, !ooxml);
    at = end;
  }
  return length;
}
