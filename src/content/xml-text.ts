// The text of an XML part as a reader sees it: tags removed, so that the
// runs Word splits a word into (`<w:t>ghp_</w:t></w:r><w:r><w:t>abc…`) read
// as one, entities decoded, and a line break where a paragraph, row, cell or
// break ends. Attribute values are not in it: the raw part, scanned too,
// holds them. Linear: each tag is found with one indexOf.

/** Elements whose end is a line break in the text (local names: w:p, a:p, text:p, row, c…). */
const BREAKS = new Set(["p", "br", "tab", "tr", "tc", "row", "c", "si", "h", "li", "div", "cr", "txBody"]);

const ENTITY = /&(?:#(\d{1,7})|#x([0-9a-fA-F]{1,6})|(amp|lt|gt|quot|apos));/g;
const NAMED: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

function decodeEntities(text: string): string {
  if (!text.includes("&")) return text;
  return text.replace(ENTITY, (_, dec: string | undefined, hex: string | undefined, name: string | undefined) => {
    if (name) return NAMED[name]!;
    const cp = dec !== undefined ? Number(dec) : Number.parseInt(hex!, 16);
    return cp <= 0x10ffff ? String.fromCodePoint(cp) : "";
  });
}

/** Ends an element's name: blank, `/`, `>`. */
const endsName = (c: number) => c === 32 || c === 9 || c === 10 || c === 13 || c === 47 || c === 62;

/** The text of `xml` (UTF-8 bytes) as UTF-8 bytes. */
export function xmlText(xml: Uint8Array): Buffer {
  const s = Buffer.from(xml.buffer, xml.byteOffset, xml.length).toString("utf8");
  const out: string[] = [];
  let at = 0;
  for (;;) {
    const lt = s.indexOf("<", at);
    if (lt < 0) {
      out.push(decodeEntities(s.slice(at)));
      break;
    }
    if (lt > at) out.push(decodeEntities(s.slice(at, lt)));
    const gt = s.indexOf(">", lt);
    if (gt < 0) break;
    const closing = s.charCodeAt(lt + 1) === 47;
    const selfClosing = s.charCodeAt(gt - 1) === 47;
    // Text elements (w:t, a:t, t) are runs: they join; paragraphs, rows and cells break.
    if (closing || selfClosing) {
      // The local name of the element this tag closes.
      const nameStart = closing ? lt + 2 : lt + 1;
      let nameEnd = nameStart;
      let colon = nameStart - 1;
      while (nameEnd < gt && !endsName(s.charCodeAt(nameEnd))) {
        if (s.charCodeAt(nameEnd) === 58) colon = nameEnd;
        nameEnd++;
      }
      if (nameEnd - colon - 1 <= 6 && BREAKS.has(s.slice(colon + 1, nameEnd))) out.push("\n");
    }
    at = gt + 1;
  }
  return Buffer.from(out.join(""), "utf8");
}
