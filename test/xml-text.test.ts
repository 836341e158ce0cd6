// xmlText reads an XML part's text with two regular expressions over its
// bytes as Latin-1, a piece of about 64 KiB at a time. It must read every well-formed part as the reading it
// replaced did (a loop over the tags, written for clarity below), and give
// its verdict in linear time on inputs built against each expression.
import { describe, expect, it } from "vitest";
import { xmlAttributesText, xmlText } from "../src/content/xml-text.js";
import { rng } from "./corpus.js";

const BREAKS = new Set(["p", "br", "tab", "tr", "tc", "row", "c", "si", "h", "li", "div", "cr", "txBody"]);
const NAMED: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

/** The reading xmlText must match; `html`: a numeric reference's `x` in either case and its `;` optional (HTML's), else lowercase and required (XML's). Leading zeros, any number, before a reference's 7 decimal or 6 hex digits. */
function reference(xml: Buffer, html = false): Buffer {
  const s = xml.toString("utf8");
  // HTML's numeric reference may end without its `;`, before the first byte that is no digit.
  const numeric = html ? /&(?:#0*(\d{1,7})(?:;|(?!\d))|#[xX]0*([0-9a-fA-F]{1,6})(?:;|(?![0-9a-fA-F]))|(amp|lt|gt|quot|apos);)/g : /&(?:#0*(\d{1,7})|#x0*([0-9a-fA-F]{1,6})|(amp|lt|gt|quot|apos));/g;
  const decode = (t: string) =>
    t.replace(numeric, (_, dec, hex, name) => {
      if (name) return NAMED[name]!;
      const cp = dec !== undefined ? Number(dec) : Number.parseInt(hex, 16);
      return cp <= 0x10ffff ? String.fromCodePoint(cp) : "";
    });
  const out: string[] = [];
  let at = 0;
  for (;;) {
    const lt = s.indexOf("<", at);
    if (lt < 0) {
      out.push(decode(s.slice(at)));
      break;
    }
    out.push(decode(s.slice(at, lt)));
    const gt = s.indexOf(">", lt);
    const tag = s.slice(lt, gt + 1);
    const name = /^<\/?(?:[\w.-]+:)?([\w.-]+)/.exec(tag)?.[1] ?? "";
    if ((tag.startsWith("</") || tag.endsWith("/>")) && BREAKS.has(name)) out.push("\n");
    at = gt + 1;
  }
  return Buffer.from(out.join(""), "utf8");
}

describe("the text of an XML part", () => {
  it("joins runs, breaks at paragraphs, rows, cells and breaks, decodes entities, keeps UTF-8", () => {
    const xml = '<w:document><w:p><w:r><w:t xml:space="preserve">ghp_</w:t></w:r><w:r><w:t>abc&amp;&#233;&#x1F600;</w:t></w:r></w:p><w:p><w:r><w:br w:type="page"/><w:t>é ü</w:t><w:tab/></w:r></w:p ></w:document>';
    expect(xmlText(Buffer.from(xml)).toString("utf8")).toBe("ghp_abc&é\u{1F600}\n\né ü\n\n");
  });

  /** A random well-formed part of up to `items` tags and texts. */
  function randomPart(random: () => number, items: number): string {
    const pick = <T,>(xs: T[]) => xs[Math.floor(random() * xs.length)]!;
    const names = ["w:p", "w:r", "w:t", "w:br", "a:p", "p", "c", "row", "x:txBody", "text:span", "w:tab", "table:table-row", "pi"];
    const texts = ["key", "sk_live_", "é", "€", " ", "&amp;", "&lt;", "&#65;", "&#x263A;", "&bogus;", "&", "\n", "0=1"];
    let xml = "";
    for (let k = items; k > 0; k--) {
      const name = pick(names);
      const attrs = random() < 0.3 ? ` a="1" b='x y'` : "";
      xml += pick([`<${name}${attrs}>`, `</${name}>`, `</${name} >`, `<${name}${attrs}/>`, pick(texts), pick(texts), "<!-- note -->", "<?pi x?>"]);
    }
    return xml;
  }

  it("reads 3,000 random well-formed parts as the tag-by-tag reading does", () => {
    const random = rng(17);
    for (let n = 0; n < 3000; n++) {
      const xml = randomPart(random, Math.floor(random() * 12));
      expect(xmlText(Buffer.from(xml)), JSON.stringify(xml)).toEqual(reference(Buffer.from(xml)));
    }
  });

  it("reads parts of several pieces as the tag-by-tag reading does (a piece ends before a `<`, so no tag, entity or character is cut)", () => {
    const random = rng(23);
    for (let n = 0; n < 12; n++) {
      // 200 to 600 KB: three to ten of xmlText's 64 KiB pieces, their ends wherever the random part puts a `<`.
      const xml = Buffer.from(randomPart(random, 20_000 + Math.floor(random() * 40_000)));
      expect(xmlText(xml).equals(reference(xml)), `part ${n}, ${xml.length} bytes`).toBe(true);
    }
    // A piece's end falls inside a run of text without a `<` for 200 KB: the piece runs on to the next one.
    const long = Buffer.from(`<w:p><w:t>${"é&amp;x".repeat(30_000)}</w:t></w:p><w:p><w:t>sk_live_</w:t></w:p>`);
    expect(xmlText(long).equals(reference(long))).toBe(true);
  });

  it("decodes entities as the reference does on text dense with their pieces (the in-place decoder: near, cut and overlong entities)", () => {
    const random = rng(29);
    const pieces = ["&", "#", "x", "X", "0", "00000", "1", "3", "9", "a", "F", ";", "amp;", "apos;", "lt;", "gt;", "quot;", "ap", "é", "\u{1F600}", "&#55296;", "&#x110000;", "&#1114111;", "&#9999999;", "&#x0000A;", "&#X5F;", "&#00000095;", "&#x000005f;", "&#00012345678;"];
    for (let n = 0; n < 2000; n++) {
      let text = "";
      for (let k = Math.floor(random() * 60); k > 0; k--) text += pieces[Math.floor(random() * pieces.length)];
      const xml = Buffer.from(`<w:t>${text}</w:t>`);
      expect(xmlText(xml), JSON.stringify(text)).toEqual(reference(xml));
      expect(xmlText(xml, false), JSON.stringify(text)).toEqual(reference(xml, true));
    }
  });

  /** HTML's named references a text file's markup is read with (xmlText(…, false)): the names, and those read without `;` too. */
  const HTML_NAMES: Record<string, string> = {
    ...NAMED, AMP: "&", LT: "<", GT: ">", QUOT: '"', Tab: "\t", NewLine: "\n", excl: "!", num: "#", dollar: "$", percnt: "%", lpar: "(", rpar: ")", ast: "*", midast: "*",
    plus: "+", comma: ",", period: ".", sol: "/", colon: ":", semi: ";", equals: "=", quest: "?", commat: "@", lsqb: "[", lbrack: "[", bsol: "\\", rsqb: "]", rbrack: "]",
    Hat: "^", lowbar: "_", UnderBar: "_", grave: "`", DiacriticalGrave: "`", lcub: "{", lbrace: "{", verbar: "|", vert: "|", VerticalLine: "|", rcub: "}", rbrace: "}",
    nbsp: "\u00a0", NonBreakingSpace: "\u00a0", shy: "\u00ad", ZeroWidthSpace: "\u200b", NegativeVeryThinSpace: "\u200b", NegativeThinSpace: "\u200b",
    NegativeMediumSpace: "\u200b", NegativeThickSpace: "\u200b", zwnj: "\u200c", zwj: "\u200d", NoBreak: "\u2060",
    lrm: "\u200e", rlm: "\u200f", ApplyFunction: "\u2061", af: "\u2061", InvisibleTimes: "\u2062", it: "\u2062", InvisibleComma: "\u2063", ic: "\u2063",
  };
  const LEGACY = ["amp", "AMP", "lt", "LT", "gt", "GT", "quot", "QUOT", "nbsp", "shy"];

  /** Entities decoded as a browser reads HTML's text: numeric, named with `;` (longest name), legacy names without it. */
  function htmlDecoded(text: string): string {
    const named = Object.keys(HTML_NAMES).sort((a, b) => b.length - a.length);
    const pattern = new RegExp(`&(?:#0*(\\d{1,7})(?:;|(?!\\d))|#[xX]0*([0-9a-fA-F]{1,6})(?:;|(?![0-9a-fA-F]))|(${named.join("|")});|(${LEGACY.join("|")}))`, "g");
    return text.replace(pattern, (_, dec, hex, name, legacy) => {
      if (name || legacy) return HTML_NAMES[name ?? legacy]!;
      const cp = dec !== undefined ? Number(dec) : Number.parseInt(hex, 16);
      return cp <= 0x10ffff ? String.fromCodePoint(cp >= 0xd800 && cp <= 0xdfff ? 0xfffd : cp) : "";
    });
  }

  it("reads a text file's markup with HTML's named references (a key's `&lowbar;`, `&shy;`, `&ZeroWidthSpace;` inside it), the legacy ones without `;` too, and leaves other names, other cases and an OOXML part's as they are", () => {
    const text = (xml: string, ooxml = false) => xmlText(Buffer.from(xml), ooxml).toString("utf8");
    expect(text("ghp&lowbar;a&period;b&colon;c&sol;d&equals;e&plus;f&NoBreak;g&zwnj;h")).toBe("ghp_a.b:c/d=e+f\u2060g\u200ch");
    // The names of the other invisible characters the zero-width reading removes (red-team 33's 07).
    expect(text("a&lrm;b&rlm;c&af;d&it;e&ic;f&ApplyFunction;g&InvisibleTimes;h&InvisibleComma;i")).toBe("a\u200eb\u200fc\u2061d\u2062e\u2063f\u2061g\u2062h\u2063i");
    expect(text("a&shy;b&shyc&nbsp;d&ZeroWidthSpace;e&NegativeThickSpace;f&amp&lt")).toBe("a\u00adb\u00adc\u00a0d\u200be\u200bf&<");
    expect(text("&Shy; &SHY; &shy1; &lowbar &bogus; &mdash; &copy; & &; &#;")).toBe("&Shy; &SHY; \u00ad1; &lowbar &bogus; &mdash; &copy; & &; &#;");
    expect(text("ghp&lowbar;a&shy;b", true)).toBe("ghp&lowbar;a&shy;b");
  });

  it("decodes a numeric reference with any number of leading zeros, and `&#X` in a text file's markup (HTML reads it) but not in an OOXML part (XML's `x` is lowercase); one with more than 7 decimal or 6 hex digits past its zeros is no character", () => {
    const text = (xml: string, ooxml = false) => xmlText(Buffer.from(xml), ooxml).toString("utf8");
    const zeros = "0".repeat(100);
    expect(text("a&#X5F;b&#00000095;c&#x000005f;d&#X0000005F;e&#0000000000000000000000095;f&#x" + zeros + "5F;g&#" + zeros + "0;h")).toBe("a_b_c_d_e_f_g\0h");
    expect(text("a&#X5F;b&#00000095;c&#x000005f;d&#X0000005F;e", true)).toBe("a&#X5F;b_c_d&#X0000005F;e");
    expect(text("&#01114111; &#00001114112; &#x0010FFFF; &#x00110000;")).toBe("\u{10FFFF}  \u{10FFFF} ");
    // Past the zeros, too many digits: not a character (HTML would read U+FFFD); left as it is. `&#0x5F;` is HTML's `&#0` and `x5F;`.
    expect(text("ghp&#012345678;x &#x0001234567; &#X1234567; &#X; &#x; &#0x5F; &#X-5F;")).toBe("ghp&#012345678;x &#x0001234567; &#X1234567; &#X; &#x; \0x5F; &#X-5F;");
    expect(text("ghp&#012345678;x &#x0001234567; &#X5F", true)).toBe("ghp&#012345678;x &#x0001234567; &#X5F");
  });

  it("decodes a numeric reference without its `;` in a text file's markup, as HTML5 does (red-team 33's 08: `&#72&#120`, `&#x23`), ending at the first byte that is no digit; not in an OOXML part (XML requires it)", () => {
    const text = (xml: string, ooxml = false) => xmlText(Buffer.from(xml), ooxml).toString("utf8");
    expect(text("<p>&#103&#104&#112&#95abc &#x23 &#X5fx &#x5F&#x5f; &#38 Jerry &#0000095&#95a &#x1F600!</p>")).toBe("ghp_abc # _x __ & Jerry __a \u{1F600}!\n");
    // Decimal ends at a letter, hex at a letter past F; the last reference of the text ends at its end.
    expect(text("&#72x &#72f &#x48g &#x4Ag &#65")).toBe("Hx Hf Hg Jg A");
    expect(text("&#103&#104&#112&#95abc &#x23", true)).toBe("&#103&#104&#112&#95abc &#x23");
    // Too many digits past the zeros, with or without `;`: left as it is.
    expect(text("&#12345678 &#x1234567 &#")).toBe("&#12345678 &#x1234567 &#");
  });

  it("takes out of an HTML or Markdown file only what HTML reads as a tag (`<` before a letter, `/`, `!`, `?`): any other `<` is text, which a key after it stays in", () => {
    const html = "a < ghp&shy;x > b <_ y > <1> <b>c</b> <!-- d --> <?pi e?> </x > <a-b c='1'>f";
    expect(xmlText(Buffer.from(html), false, false, true).toString("utf8")).toBe("a < ghp\u00adx > b <_ y > <1> c    f");
    expect(xmlText(Buffer.from(html), false).toString("utf8")).toBe("a  b   c    f");
  });

  it("decodes HTML's named references as the browser-like reference does on text dense with their pieces", () => {
    const random = rng(31);
    const pieces = ["&", ";", "#", "1", "x", "a", "shy", "lowbar", "lt", "ltx", "Zero", "WidthSpace", "ZeroWidthSpace", "nbsp", "amp", "QUOT", "Shy", "é", "<b>", "</p>", "&#95;", "&#x200B;", "period;", "NoBreak"];
    for (let n = 0; n < 3000; n++) {
      let text = "";
      for (let k = Math.floor(random() * 40); k > 0; k--) text += pieces[Math.floor(random() * pieces.length)];
      const xml = Buffer.from(`<p>${text}</p>`);
      const tagsOut = text.replace(/<\/p>/g, "\n").replace(/<[^<>]*>/g, "");
      expect(xmlText(xml, false).toString("utf8"), JSON.stringify(text)).toBe(`${htmlDecoded(tagsOut)}\n`);
    }
  });

  it("reads a CDATA section's text as an XML parser does: without its markers, with no tag taken out of it and no entity decoded in it; an opening with no end is read as before (forms33)", () => {
    const read = (xml: string, ooxml = false) => xmlText(Buffer.from(xml), ooxml).toString("utf8");
    expect(read("<text>ab<![CDATA[cd]]><![CDATA[ef]]>gh</text>")).toBe("abcdefgh");
    expect(read("<t><![CDATA[a<b>&amp;c]]>&amp;d</t>")).toBe("a<b>&amp;c&d");
    expect(read("<w:p><w:t><![CDATA[ab]]></w:t></w:p><w:p><w:t>c]]>d</w:t></w:p>", true)).toBe("ab\nc]]>d\n");
    expect(read("<t>a<![CDATA[b</t><t>c</t>")).toBe("a<![CDATA[bc");
    expect(read("<t>a<![CDATA[b]]]]></t><t><![CDATA[]]>c</t>")).toBe("ab]]c");
    // In place, a section's text moves down over its markers.
    const part = Buffer.from(`<t>${"x".repeat(70_000)}<![CDATA[<p>&lt;]]>y</t>`);
    expect(xmlText(part, true, true).toString("latin1")).toBe(`${"x".repeat(70_000)}<p>&lt;y`);
  });

  it("gives a verdict in linear time on CDATA sections: openings with and without ends, empty sections, openings inside sections (verdicts only)", () => {
    for (const unit of ["<![CDATA[", "<![CDATA[a]]>", "<![CDATA[]]>", "a<![CDATA[<![CDATA[b]]>", "<![CDATA[a]]", "]]>", "<t><![CDATA[&#95;]]></t>"]) {
      const xml = Buffer.from(unit.repeat(Math.ceil((4 << 20) / unit.length)));
      expect(xmlText(xml).length, unit).toBeGreaterThanOrEqual(0);
      expect(xmlText(xml, false, false, true).length, unit).toBeGreaterThanOrEqual(0);
    }
  });

  it("gives a verdict in linear time on inputs built against each expression (verdicts only)", () => {
    const inputs = ["&" + "a".repeat(40), "&ZeroWidthSpac", "&NegativeVeryThinSpaceX;", "&shy", "&&", "&l", "&nbs;", "</" + "a".repeat(64), "<w:" + "p ".repeat(1000), "<", "<<>", "</w:p" + " ".repeat(1000), "<p " + "x".repeat(1000) + "/", "&#" + "1".repeat(50), "<a:b:c:p/>", "<oddHeader>" + '&amp;"'.repeat(1000), "<oddFooter>&amp;&quot;" + "x".repeat(300), "<evenHeader>&amp;K" + "0".repeat(5), "_x000", "_x000a_", "&#10;" + "&#".repeat(100), "&#", "&", "&amp;K", "&#x", "&#1234567;", "&#0000", "&a", "&#X", "&#X0", "&#X5F;", "&#x00", "&#00000095;", "&#" + "0".repeat(1_000_000), "&#" + "0".repeat(1_000_000) + ";", "&#X" + "0".repeat(1_000_000) + "5F;", "&#" + "0".repeat(1000) + "1".repeat(1000)];
    // HTML's references without `;` (red-team 33's 08): each ends at the first byte that is no digit.
    inputs.push("&#1", "&#x1", "&#0", "&#12345678", "&#x1234567", "a &#38 b ", "&#72&#x4A");
    for (const unit of inputs) {
      const xml = Buffer.from(unit.repeat(Math.ceil((4 << 20) / unit.length)));
      expect(xmlText(xml).length, JSON.stringify(unit.slice(0, 20))).toBeGreaterThanOrEqual(0);
      expect(xmlText(xml, false).length, JSON.stringify(unit.slice(0, 20))).toBeGreaterThanOrEqual(0);
      expect(xmlAttributesText(xml)?.length ?? 0, JSON.stringify(unit.slice(0, 20))).toBeGreaterThanOrEqual(0);
    }
  });
});
