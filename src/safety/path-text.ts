// Check 1 of prepare: the raw text of a source path or name, before anything
// resolves it or echoes it anywhere.
import { Refusal } from "../core/errors.js";
import { MEDIA_WORD } from "../core/escape.js";

const UNSAFE_CHARS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/u;

// `MEDIA:` in any case, optional whitespace and emphasis or quote characters,
// then a quote, a backtick, `/`, `~/` or a drive: what a gateway would take for
// a directive if the text ever reached a reply (its Python pattern ignores case
// so that U+0130 and U+0131 match "i" too).
const QUOTES = `"'\`\u2018\u2019\u201c\u201d\u00ab\u00bb`;
const DIRECTIVE = new RegExp(`${MEDIA_WORD}:[\\s*_~${QUOTES}]*(?:[${QUOTES}]|/|~/|[A-Za-z]:[\\\\/])`, "iu");

/** A surrogate standing alone: a byte that is not UTF-8, as cli/argv.ts decodes it (or a JavaScript caller's broken string). */
const NOT_UTF8 = /[\uD800-\uDFFF]/u;

export function hasUnsafeChars(text: string): boolean {
  return UNSAFE_CHARS.test(text) || NOT_UTF8.test(text);
}

let bidi: RegExp | undefined;
/** Built on first use (a Unicode property class). */
const BIDI = () => (bidi ??= /\p{Bidi_Control}/u);

/**
 * Why an operator's folder path (a drop folder) is refused as given, or
 * undefined: bytes that are not UTF-8 (cli/argv.ts), a control or
 * line-separator character, or a bidirectional
 * control (which shows the path's characters in another order). Every
 * message and log line could only show such a path escaped, never as the
 * operator types it; no folder needs one, and renaming it fixes it. Other
 * invisible code points (an emoji's variation selector) are shown escaped
 * too but are not refused: a folder may be named with an emoji.
 */
export function folderPathProblem(text: string): string | undefined {
  if (NOT_UTF8.test(text)) return "bytes that are not UTF-8 (read as UTF-8 it names another folder)";
  if (hasUnsafeChars(text)) return "control or line-separator characters";
  if (BIDI().test(text)) return "bidirectional control characters (which reorder how it is shown)";
  return undefined;
}

export function hasMediaDirective(text: string): boolean {
  return DIRECTIVE.test(text);
}

/** Throws the refusal for text that must not be resolved or echoed. */
export function assertSafePathText(text: string, what: "path" | "name" = "path"): void {
  // A path is fixed by renaming the file; a name (--name, the gate's name=) by choosing another.
  const fix = what === "name" ? "choose another name" : "rename the file";
  if (NOT_UTF8.test(text)) {
    const utf8Fix = what === "name" ? "choose a UTF-8 name" : "rename the file to a UTF-8 name";
    throw new Refusal("unsafe_path_chars", `the ${what} is not valid UTF-8, so it cannot be opened exactly as given (read as UTF-8 it names another file); ${utf8Fix}`);
  }
  if (hasUnsafeChars(text)) {
    throw new Refusal("unsafe_path_chars", `the ${what} contains control or line-separator characters; ${fix}`);
  }
  if (hasMediaDirective(text)) {
    throw new Refusal("media_directive_in_path", `the ${what} contains a MEDIA directive (MEDIA followed by a colon and a path); ${fix}`);
  }
}
