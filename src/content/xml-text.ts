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
    let text = bytes.toString("latin1", at, end).replace(BREAK, "\n").replace(TAG, "");
    if (text.includes("&")) text = text.replace(ENTITY, entity);
    const written = out.write(text, length, "latin1");
    // Buffer.write stops at the buffer's end without a word: text past it would go unread.
    if (written !== text.length) throw new Error(`the text of an XML part outgrew the part (${written} of ${text.length} characters kept)`);
    length += written;
    at = end;
  }
  return out.subarray(0, length);
}
