// Everything a user supplied (a path, a name) passes through escapeText before
// it reaches stdout, stderr, a log or a receipt, so that no output can carry a
// raw control character, a reordering bidi control or a forged MEDIA: directive.

// C0, DEL, C1 (NEL included), line/paragraph separators, bidi controls, other
// invisible code points, lone surrogates, and the backslash (so escapes stay
// unambiguous).
// Built on first use: its Unicode property classes take a fraction of a
// millisecond to build, which a run that only sees plain names never needs.
let unsafe: RegExp | undefined;
const UNSAFE = () => (unsafe ??= /[\u0000-\u001f\u007f-\u009f\u2028\u2029\\]|\p{Bidi_Control}|\p{Default_Ignorable_Code_Point}|\p{Cs}/gu);
const PLAIN = /^[\x20-\x39\x3b-\x5b\x5d-\x7e]*$/;
/**
 * "MEDIA" as the gateway reads it, a regular expression source for the i and
 * u flags: its extraction is a Python pattern with IGNORECASE, under which
 * U+0130 (İ) and U+0131 (ı) match "i", so "MEDİA:" is a directive to it too.
 * Every pattern that looks for a directive is built from this one.
 */
export const MEDIA_WORD = "med[i\u0130\u0131]a";
const DIRECTIVE = new RegExp(`(${MEDIA_WORD})(\\s*):`, "giu");

function escapeChar(ch: string): string {
  if (ch === "\\") return "\\\\";
  const cp = ch.codePointAt(0)!;
  return cp < 0x100 ? `\\x${cp.toString(16).padStart(2, "0")}` : `\\u{${cp.toString(16)}}`;
}

/** Makes untrusted text safe to print on one line. */
export function escapeText(text: string): string {
  // The common case (printable ASCII, no backslash, no colon) needs no work:
  // the janitor escapes every name it reports.
  if (PLAIN.test(text)) return text;
  return text.replace(UNSAFE(), escapeChar).replace(DIRECTIVE, "$1$2\\x3a");
}

/**
 * Untrusted text in double quotes, escaped once: escapeText, then `"` as
 * `\"` (unambiguous, since escapeText doubles every backslash). For a value
 * named in a message (`--max-size: cannot read "1\x1b[31m"`); never
 * escapeText(JSON.stringify(value)), which escapes control characters twice
 * (`"1\\u001b[31m"`).
 */
export function quoteText(text: string): string {
  // A config file's value of another type where a string belongs (maxSize: true): shown as JSON.
  if (typeof text !== "string") return quoteValue(text);
  return `"${escapeText(text).replace(/"/g, '\\"')}"`;
}

/**
 * A parsed JSON or YAML value as JSON.stringify writes it, each string (in
 * arrays too) quoted by quoteText, so escaped once.
 */
export function quoteValue(value: unknown): string {
  if (typeof value === "string") return quoteText(value);
  if (Array.isArray(value)) return `[${value.map(quoteValue).join(",")}]`;
  return escapeText(JSON.stringify(value) ?? String(value));
}

/** "a, b, c" or "a, b, c and 7 more": a few names of a longer list, each escaped. */
export function someOf(names: readonly string[], most = 4): string {
  const shown = names.slice(0, most).map(escapeText).join(", ");
  return names.length > most ? `${shown} and ${names.length - most} more` : shown;
}

/**
 * JSON.stringify leaves U+2028, U+2029 and U+0085 raw; some readers treat them
 * as line breaks, so they are written as \u escapes.
 */
export function safeJson(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent).replace(/[\u2028\u2029\u0085]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

let raw: RegExp | undefined;
/** What escapeText never lets through (the backslash aside, which it doubles). */
const RAW = () => (raw ??= new RegExp(String.raw`[\u0000-\u001f\u007f-\u009f\u2028\u2029]|\p{Bidi_Control}|\p{Default_Ignorable_Code_Point}|\p{Cs}|${MEDIA_WORD}\s*:`, "iu"));

/**
 * Whether `text` is safe to print as it is: what escapeText returns always
 * is. For text that another process says it escaped (the gate's answers).
 */
export function isEscaped(text: string): boolean {
  return PLAIN.test(text) || !RAW().test(text);
}
