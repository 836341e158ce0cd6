// A text file read a second time as what it means, where its bytes as they
// are hide a key: markup's text (SVG, XML, HTML, Markdown: tags removed,
// entities decoded, HTML's named ones too), so that a token cut by inline
// HTML (`ghp_…<wbr>…`, `&shy;`, `&#95;` for `_`) reads whole, and the lines
// of a PEM block matplotlib draws as one `<text>` element each, with a tag
// between every two, read as lines of their own; Markdown's inline marks
// inside a word removed too (emphasis `*`, `**`, strikethrough `~~`, a code
// span's backticks: `ghp_Q7mZ**k2Rp**…` renders as one word, copied whole)
// and an inline link's brackets and destination inside a word
// (`ghp_Q7mZ[k2Rp](#)…`, its text with blanks too: CommonMark, GFM and
// pandoc show the link's text in the word), and a reference link's
// (`ghp_Q7mZ[k2Rp][1]…`, `[k2Rp][]`, `[k2Rp]`) where the file defines its
// label; and since forms33 (2026-12-05) `==` (highlight) and `++`
// (insert) inside a word, which markdown-it's mark and ins plugins,
// Obsidian and Typora show as the word whole (pandoc 2.17 shows them as
// text: a key cut by them was published);

// and JSON with its escaped slashes read as slashes (pandas' `to_json` and
// PHP's `json_encode` write `\/`, which cut a base64 line of a PEM block
// in two). Read beside the bytes, never instead. HTML markup whose tags
// hold a reference is also read with its tags kept and its references
// decoded (markupReferences: an attribute's value).
import { MARKUP_TEXT_TYPES } from "./formats.js";
import { decodeEntities, xmlText } from "./xml-text.js";

const MARKUP: ReadonlySet<string> = new Set(MARKUP_TEXT_TYPES);
/** Markup a browser reads as HTML (a Markdown renderer passes its HTML on): a `<` not before a letter, `/`, `!` or `?` is text. */
const HTML_MARKUP: ReadonlySet<string> = new Set(["html", "htm", "md"] satisfies (typeof MARKUP_TEXT_TYPES)[number][]);
const ESCAPED_SLASH = Buffer.from("\\/", "latin1");

/** The second reading of a UTF-8 text file of extension `ext`, and what to call it; undefined when there is none. */
export function textMeaning(bytes: Buffer, ext: string): { part: string; text: Buffer } | undefined {
  if (MARKUP.has(ext)) {
    const text = xmlText(bytes, false, false, HTML_MARKUP.has(ext));
    return { part: "its text (tags removed)", text: ext === "md" ? withoutInlineMarks(withoutIntrawordReferences(withoutIntrawordLinks(text))) : text };
  }
  const slash = ext === "json" ? bytes.indexOf(ESCAPED_SLASH) : -1;
  if (slash >= 0) return { part: "its strings with `\\/` read as `/`", text: withoutSlashEscapes(bytes, slash) };
  return undefined;
}

/** A tag (as HTML reads one: a `<` before a letter) that holds a `&` before its end: an attribute's value with a reference in it. */
const REFERENCE_IN_TAG = /<[A-Za-z][^<>&]*&/;

/**
 * A third reading of HTML markup (`html`, `htm`, `md`) where a tag holds a
 * reference: the file with its references decoded as HTML decodes them
 * (xml-text.ts's decodeEntities: numeric ones with or without `;`, the
 * named ones a key holds) and its tags kept, so that an attribute's value
 * (a link's `title="&#x48&#x78…"`, which a browser shows on hover) reads
 * whole; the text reading takes tags out, attributes and all (red-team pass
 * 33's 08). Undefined where no tag holds a `&` (one expression's test: each
 * tag read once, up to its first `&`, `<` or `>`).
 */
export function markupReferences(bytes: Buffer, ext: string): { part: string; text: Buffer } | undefined {
  if (!HTML_MARKUP.has(ext) || !REFERENCE_IN_TAG.test(bytes.toString("latin1"))) return undefined;
  const text = Buffer.from(bytes);
  return { part: "its markup with character references decoded", text: text.subarray(0, decodeEntities(text, 0, text.length, true)) };
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

/**
 * Markdown's inline marks: emphasis's `*`, strikethrough's `~` (two or
 * more: one is pandoc's subscript), a code span's backtick, highlight's
 * `==` and insert's `++` (exactly two: markdown-it's plugins read no other
 * run as one, and `a=b`, `C++`, `x===y` are text).
 */
const MARK = new Uint8Array(256);
for (const ch of "*~`=+") MARK[ch.charCodeAt(0)] = 1;
/**
 * What a mark inside a word lies between: letters, digits, `_` and `-` (a
 * token's alphabet). Not `_` as a mark: inside a word CommonMark, GFM and
 * pandoc (intraword_underscores) read `_` and `__` as text, and a key holds them.
 */
const WORD = new Uint8Array(256);
for (const ch of "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") WORD[ch.charCodeAt(0)] = 1;

/**
 * `text` (a Markdown file's text, tags removed) with each run of inline
 * marks between two of a word's characters taken out, in place: a key cut
 * by emphasis or a code span (`ghp_Q7mZ**k2Rp**Yc6…`, ghp_Q7mZ`k2Rp`Yc6…,
 * `~~`) reads as the one word a renderer shows. A run at a word's edge
 * (`**ghp_…**`) separates nothing and is left. One pass: a native search
 * for each mark's next place, a run read once.
 */
export function withoutInlineMarks(text: Buffer): Buffer {
  const n = text.length;
  const marks = new NextMarks(text);
  let i = marks.next(0);
  if (i < 0) return text;
  let o = i;
  // The byte before `i` as the text had it (the copy down may have written over it).
  let last = i > 0 ? text[i - 1]! : -1;
  while (i < n) {
    if (MARK[text[i]!] !== 1) {
      // Up to the next mark in one copy.
      const next = marks.next(i);
      const stop = next < 0 ? n : next;
      last = text[stop - 1]!;
      // A few bytes one at a time: a copy's call cost text of `a*` repeated twice the time.
      if (stop - i < 16) while (i < stop) text[o++] = text[i++]!;
      else {
        o += text.copy(text, o, i, stop);
        i = stop;
      }
      continue;
    }
    let end = i;
    // Whether each run of `=` or `+` in it is a pair.
    let pairs = true;
    while (end < n && MARK[text[end]!] === 1) {
      const c = text[end]!;
      if (c !== 61 && c !== 43) {
        end++;
        continue;
      }
      const from = end;
      while (end < n && text[end] === c) end++;
      if (end - from !== 2) pairs = false;
    }
    const inWord = last >= 0 && WORD[last] === 1 && end < n && WORD[text[end]!] === 1;
    const tilde = text[i] === 126 && end - i === 1;
    last = text[end - 1]!;
    if (!inWord || tilde || !pairs) while (i < end) text[o++] = text[i++]!;
    i = end;
  }
  return text.subarray(0, o);
}

/** Each mark's next place, looked for again only once passed: a search per mark per run took text of `*` and one `~` at its end quadratic time. */
class NextMarks {
  private readonly at = MARK_CODES.map(() => -2);
  constructor(private readonly text: Buffer) {}
  /** The index of the next mark at or after `from`, or -1. */
  next(from: number): number {
    let best = -1;
    for (let m = 0; m < MARK_CODES.length; m++) {
      let k = this.at[m]!;
      if (k !== -1 && k < from) this.at[m] = k = this.text.indexOf(MARK_CODES[m]!, from);
      if (k >= 0 && (best < 0 || k < best)) best = k;
    }
    return best;
  }
}
const MARK_CODES = [42, 126, 96, 61, 43];

/** The longest link text and destination read as a link inside a word: a key's piece and the words before it, a URL (longer: left as it is, so that each reading is bounded). */
const LINK_TEXT_MAX = 256;
const LINK_DESTINATION_MAX = 2048;
const LINK_MIDDLE = Buffer.from("](", "latin1");
const WORD_OR_MARK = WORD.map((w, c) => w | MARK[c]!);
/** What ends an inline link's destination written without `<>`: a blank, a control character, `(` (`)` ends it as its close). */
const DESTINATION_STOP = new Uint8Array(256).fill(1, 0, 33);
DESTINATION_STOP[40] = 1;
DESTINATION_STOP[127] = 1;

/** What a link's text does not hold, read back from its `]`: brackets (CommonMark allows balanced ones: not read), a line break. */
const TEXT_STOP = new Uint8Array(256);
for (const c of [91, 93, 10, 13]) TEXT_STOP[c] = 1;

/** Where the link text whose `]` is at `close` opens (its `[`), reading back at most LINK_TEXT_MAX bytes and not before `floor`; -1 where none does. */
function linkTextOpen(text: Buffer, close: number, floor: number): number {
  let open = close - 1;
  const stop = Math.max(floor, close - 1 - LINK_TEXT_MAX);
  while (open >= stop && TEXT_STOP[text[open]!] !== 1) open--;
  return open >= stop && open < close - 1 && text[open] === 91 ? open : -1;
}

/**
 * `text` with each inline link inside a word read as the text it shows:
 * `[`, and `](destination)`, taken out where a word's character touches
 * the link on one side (`ghp_Q7mZ[k2Rp](#)Yc6…`, `[ghp_Q7mZ](#)k2Rp…`,
 * and since recall pass 32 a text with blanks, `see [the key AKIA…](#)…`,
 * whose last word joins the word after it; or an inline mark does, read
 * next by withoutInlineMarks): a renderer shows the word whole, a copy
 * takes it whole. A link between blanks is left (its text is read as it
 * is). Linear: at each `](` a bounded read back over the link's text,
 * stopping at the previous bracket, and forward over a destination up to
 * its `)`, stopping at the next `](`'s `(`.
 */
export function withoutIntrawordLinks(text: Buffer): Buffer {
  let m = text.indexOf(LINK_MIDDLE);
  if (m < 0) return text;
  const n = text.length;
  let out: Buffer | undefined;
  let o = 0;
  let copied = 0;
  for (; m >= 0; m = text.indexOf(LINK_MIDDLE, m + 2)) {
    const open = linkTextOpen(text, m, copied);
    if (open < 0) continue;
    let close = m + 2;
    const limit = Math.min(n, m + 2 + LINK_DESTINATION_MAX);
    while (close < limit && DESTINATION_STOP[text[close]!] !== 1 && text[close] !== 41) close++;
    if (close >= limit || text[close] !== 41) continue;
    // A mark touching it counts (`ghp_Q7mZ**[k2Rp](#)**Yc6…`): the marks' reading, after this one, removes it between a word's characters.
    const inWord = (open > 0 && WORD_OR_MARK[text[open - 1]!] === 1) || (close + 1 < n && WORD_OR_MARK[text[close + 1]!] === 1);
    if (!inWord) {
      m = close - 1;
      continue;
    }
    out ??= Buffer.allocUnsafe(n);
    o = copyTo(out, o, text, copied, open);
    o = copyTo(out, o, text, open + 1, m);
    copied = close + 1;
    m = close - 1;
  }
  if (!out) return text;
  o += text.copy(out, o, copied, n);
  return out.subarray(0, o);
}

/** text[from, to) copied to out at `o`; where it ends. A few bytes one at a time: a copy's call cost text of `x[a]x` repeated a third of its time. */
function copyTo(out: Buffer, o: number, text: Buffer, from: number, to: number): number {
  if (to - from >= 16) return o + text.copy(out, o, from, to);
  while (from < to) out[o++] = text[from++]!;
  return o;
}

/** The longest label of a reference link (CommonMark: 999 characters). */
const LABEL_MAX = 999;
/** A link reference definition's label (`[1]: https://…`, at most three blanks before it): CommonMark's, on a line of its own. */
const DEFINITION = /^ {0,3}\[([^\[\]\n]{1,999})\]:/gm;
const DEFINITION_MARK = Buffer.from("]:", "latin1");
/** A label as CommonMark matches it to its definition: case and runs of blanks not told apart. */
const normalLabel = (label: string) => (/[ \t\r\n]/.test(label) ? label.trim().replace(/[ \t\r\n]+/g, " ") : label).toLowerCase();

/** Bytes a label is normalised for: blanks, line breaks, capitals. */
const UNNORMAL = new Uint8Array(256);
for (const c of [9, 10, 13, 32]) UNNORMAL[c] = 1;
UNNORMAL.fill(1, 65, 91);
/** The label in text[from, to) as normalLabel makes it: read as it is where it holds no blank and no capital (a regular expression's test per label cost text of `x[a]x` repeated a third more). */
function labelAt(text: Buffer, source: string, from: number, to: number): string {
  for (let k = from; k < to; k++) if (UNNORMAL[text[k]!] === 1) return normalLabel(source.slice(from, to));
  return source.slice(from, to);
}

/**
 * `text` with each reference link inside a word read as the text it shows,
 * as withoutIntrawordLinks reads an inline one: `ghp_Q7mZ[k2Rp][1]Yc6…`,
 * `[k2Rp][]` and `[k2Rp]` (full, collapsed, shortcut) where the file
 * defines the label (`[1]: #`): CommonMark, GFM and pandoc show `k2Rp` in
 * the word; with no definition they show the brackets, and it is left.
 * Linear: the definitions found by one expression, anchored at line
 * starts; at each `]` a bounded read back over the link's text, stopping at
 * the previous bracket, and forward over a label, stopping at the next.
 */
export function withoutIntrawordReferences(text: Buffer): Buffer {
  if (text.indexOf(DEFINITION_MARK) < 0) return text;
  const labels = new Set<string>();
  const source = text.toString("latin1");
  DEFINITION.lastIndex = 0;
  for (let d = DEFINITION.exec(source); d; d = DEFINITION.exec(source)) labels.add(normalLabel(d[1]!));
  if (labels.size === 0) return text;
  const n = text.length;
  let out: Buffer | undefined;
  let o = 0;
  let copied = 0;
  for (let c = text.indexOf(93); c >= 0; c = text.indexOf(93, c + 1)) {
    const after = text[c + 1];
    // An inline link's (withoutIntrawordLinks read those inside a word) or a definition's.
    if (after === 40 || after === 58) continue;
    const open = linkTextOpen(text, c, copied);
    if (open < 0) continue;
    let end = c;
    // The label: the link's text, or what the second brackets hold.
    let label = open + 1;
    if (after === 91) {
      let e = c + 2;
      const limit = Math.min(n, c + 2 + LABEL_MAX);
      while (e < limit && TEXT_STOP[text[e]!] !== 1) e++;
      if (e < n && text[e] === 93) {
        end = e;
        if (e > c + 2) label = c + 2;
      }
    }
    // Inside a word first: the label is read and looked up only then.
    const inWord = (open > 0 && WORD_OR_MARK[text[open - 1]!] === 1) || (end + 1 < n && WORD_OR_MARK[text[end + 1]!] === 1);
    if (inWord && labels.has(labelAt(text, source, label, label === open + 1 ? c : end))) {
      out ??= Buffer.allocUnsafe(n);
      o = copyTo(out, o, text, copied, open);
      o = copyTo(out, o, text, open + 1, c);
      copied = end + 1;
    }
    c = end;
  }
  if (!out) return text;
  o += text.copy(out, o, copied, n);
  return out.subarray(0, o);
}
