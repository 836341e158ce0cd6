// The text of an XML part as a reader sees it: tags removed, so that the
// runs Word splits a word into (`<w:t>ghp_</w:t></w:r><w:r><w:t>abc…`) read
// as one, entities decoded, and a line break where a paragraph, row, cell or
// break ends. Attribute values are not in it: the raw part, scanned too,
// holds them. Two regular expressions replace over the part's bytes read as
// Latin-1 (so UTF-8 passes through unchanged, and the string is one byte a
// character): a prepare judges a docx once, with code V8 has not optimised,
// where a loop over the tags in JavaScript cost half as much again.

/** Elements whose end is a line break in the text (local names: w:p, a:p, text:p, row, c…). */
const BREAK_NAMES = "p|br|tab|tr|tc|row|c|si|h|li|div|cr|txBody";
// Linear: a prefix and a name are bounded runs of name characters, and no
// part of a tag may hold `<` or `>`, so a match tried at one `<` reads no
// further than the next.
const BREAK = new RegExp(`<\\/(?:[A-Za-z0-9_.-]{1,64}:)?(?:${BREAK_NAMES})[ \\t\\r\\n]*>|<(?:[A-Za-z0-9_.-]{1,64}:)?(?:${BREAK_NAMES})(?:[ \\t\\r\\n][^<>]*)?\\/>`, "g");
const TAG = /<[^<>]*>/g;

const ENTITY = /&(?:#(\d{1,7})|#x([0-9a-fA-F]{1,6})|(amp|lt|gt|quot|apos));/g;
const NAMED: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

/** An entity's character as UTF-8 bytes, one Latin-1 character each. */
function entity(_: string, dec: string | undefined, hex: string | undefined, name: string | undefined): string {
  if (name) return NAMED[name]!;
  const cp = dec !== undefined ? Number(dec) : Number.parseInt(hex!, 16);
  return cp <= 0x10ffff ? Buffer.from(String.fromCodePoint(cp), "utf8").toString("latin1") : "";
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
const XSTRING_CONTROL = /_x000([9aAdD])_/g;
const xstringControl = (_: string, c: string) => (c === "9" ? "\t" : c === "a" || c === "A" ? "\n" : "\r");

/** A character reference to a line break, after its `&#`: only an attribute's value holds one (XML reads a line break there as a space). */
const LINE_BREAK_REFERENCE = /^(?:0{0,4}1[03]|[xX]0{0,4}[aAdD]);/;

/** Whether `bytes` holds a character reference to a line break (each `&#` tried once, on the few bytes after it). */
function holdsLineBreakReference(bytes: Buffer): boolean {
  for (let at = bytes.indexOf("&#"); at >= 0; at = bytes.indexOf("&#", at + 2)) {
    if (LINE_BREAK_REFERENCE.test(bytes.toString("latin1", at + 2, Math.min(bytes.length, at + 10)))) return true;
  }
  return false;
}

/**
 * The part with its entities decoded and its tags kept, when an attribute's
 * value holds a line break (a picture's alt text, a shape's name, an Excel
 * prompt, an ODF sheet's name): a PEM block there is written `…KEY-----&#10;MII…`,
 * which neither the part as it is nor its text (tags removed) reads whole.
 * Undefined for any other part.
 */
export function xmlAttributesText(xml: Uint8Array): Buffer | undefined {
  const bytes = Buffer.from(xml.buffer, xml.byteOffset, xml.length);
  if (!holdsLineBreakReference(bytes)) return undefined;
  const out = Buffer.allocUnsafe(bytes.length);
  let length = 0;
  for (let at = 0; at < bytes.length; ) {
    let end = at + PIECE >= bytes.length ? bytes.length : bytes.indexOf(0x3c, at + PIECE);
    if (end < 0) end = bytes.length;
    const text = bytes.toString("latin1", at, end).replace(ENTITY, entity);
    length += out.write(text, length, "latin1");
    at = end;
  }
  return out.subarray(0, length);
}

/**
 * The part is read in pieces of about this many bytes, each cut just before a
 * `<`: no tag or entity holds a `<`, so none is cut, and each piece's strings
 * stay in V8's young generation (one string of a whole 80 MB sheet cost more
 * in garbage collection than the expressions did).
 */
const PIECE = 64 * 1024;

/** The text of `xml` (UTF-8 bytes) as UTF-8 bytes. */
export function xmlText(xml: Uint8Array): Buffer {
  const bytes = Buffer.from(xml.buffer, xml.byteOffset, xml.length);
  // The text is never longer than the part: a tag or an entity is longer than what it reads as.
  const out = Buffer.allocUnsafe(bytes.length);
  let length = 0;
  for (let at = 0; at < bytes.length; ) {
    let end = at + PIECE >= bytes.length ? bytes.length : bytes.indexOf(0x3c, at + PIECE);
    if (end < 0) end = bytes.length;
    let text = bytes.toString("latin1", at, end);
    if (text.includes("Header>") || text.includes("Footer>")) text = text.replace(HEADER_FOOTER, headerFooterText);
    text = text.replace(BREAK, "\n").replace(TAG, "");
    if (text.includes("&")) text = text.replace(ENTITY, entity);
    if (text.includes("_x00")) text = text.replace(XSTRING_CONTROL, xstringControl);
    const written = out.write(text, length, "latin1");
    // Buffer.write stops at the buffer's end without a word: text past it would go unread.
    if (written !== text.length) throw new Error(`the text of an XML part outgrew the part (${written} of ${text.length} characters kept)`);
    length += written;
    at = end;
  }
  return out.subarray(0, length);
}
