// A text file read a second time as what it means, where its bytes as they
// are hide a key: markup's text (SVG, XML, HTML, Markdown: tags removed,
// entities decoded, HTML's named ones too), so that a token cut by inline
// HTML (`ghp_…<wbr>…`, `&shy;`, `&#95;` for `_`) reads whole, and the lines
// of a PEM block matplotlib draws as one `<text>` element each, with a tag
// between every two, read as lines of their own;
// and JSON with its escaped slashes read as slashes (pandas' `to_json` and
// PHP's `json_encode` write `\/`, which cut a base64 line of a PEM block
// in two). Read beside the bytes, never instead.
import { MARKUP_TEXT_TYPES } from "./formats.js";
import { xmlText } from "./xml-text.js";

const MARKUP: ReadonlySet<string> = new Set(MARKUP_TEXT_TYPES);
/** Markup a browser reads as HTML (a Markdown renderer passes its HTML on): a `<` not before a letter, `/`, `!` or `?` is text. */
const HTML_MARKUP: ReadonlySet<string> = new Set(["html", "htm", "md"] satisfies (typeof MARKUP_TEXT_TYPES)[number][]);
const ESCAPED_SLASH = Buffer.from("\\/", "latin1");

/** The second reading of a UTF-8 text file of extension `ext`, and what to call it; undefined when there is none. */
export function textMeaning(bytes: Buffer, ext: string): { part: string; text: Buffer } | undefined {
  if (MARKUP.has(ext)) return { part: "its text (tags removed)", text: xmlText(bytes, false, false, HTML_MARKUP.has(ext)) };
  const slash = ext === "json" ? bytes.indexOf(ESCAPED_SLASH) : -1;
  if (slash >= 0) return { part: "its strings with `\\/` read as `/`", text: withoutSlashEscapes(bytes, slash) };
  return undefined;
}

/** `bytes` with the backslash of each `\\/` from `first` on taken out (a byte loop: a string's replaceAll, or a copy per escape, took 0.5 s on a 35 MB file). */
function withoutSlashEscapes(bytes: Buffer, first: number): Buffer {
  const out = Buffer.allocUnsafe(bytes.length);
  let o = bytes.copy(out, 0, 0, first);
  const n = bytes.length;
  for (let i = first; i < n; i++) {
    const c = bytes[i]!;
    if (c !== 92 || bytes[i + 1] !== 47) out[o++] = c;
  }
  return out.subarray(0, o);
}
