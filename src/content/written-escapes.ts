// Escapes written as text, as a string's serialisation or its source keeps
// them on one line: JSON (`\n`, `\r\n`, `\t`, `\u00a0`: a chat export, a
// docker or Jupyter log), a Python repr (`\x1b`, `\r\n`), a CSV export's
// escaped line breaks, a URL's percent-escapes (`%20`, `%0A`, `%3D`, `%22`:
// encodeURIComponent, urlencode, curl --data-urlencode). A key right after
// one (`"Here is the token:\nghp_…"`, `text=my%20key%20ghp_…`) starts a
// token though the escape's last byte, a letter or a hex digit, is of the
// token alphabet; a renderer or a decoder shows the key alone.
// A terminal's sequence whose ESC is written as text (`\u001b[1;32m` in
// Jupyter's and docker's JSON, `\x1b[32m` in a repr, `\033[1m` and `\e[1m`
// in a shell script) is read as the sequence it stands for
// (terminal-escapes.ts says what one is): a token starts after it, and a run
// of them inside a key (`grep --color`'s, kept in a JSON log) is removed by
// text-forms.ts's second reading. Only control sequences, and escape
// sequences with an intermediate (`\x1b(B`, `tput sgr0`'s): a written ESC
// and a final alone (`\em`, `\end` of TeX) are no terminal's.
// Since recall pass 32c (red team 32c findings 2 and 3, published until
// then): JSON's own `\b` and `\f` (JSON.stringify writes them for 0x08 and
// 0x0C), C's `\v`, `\a` (which also ends a written OSC title,
// `\e]0;build\a`) and octal `\0`, `\012` (one to three digits, taken as C
// takes them: as many as there are, so `\0123` is `\012` and `3`); and
// the ESC written as `^[` (caret notation: `cat -v`, `less`, CI log
// viewers), `\u{1b}` (Rust's `{:?}`, JavaScript, Swift; up to six hex
// digits), `\U0000001b` and `\N{ESCAPE}` (Python), `\27` (Lua's decimal)
// and `\E` (terminfo). Since recall pass 33 (published until then):
// Python's eight-digit `\U000000a0` of any character, the ESC's short name
// `\N{ESC}` (Python's alias of `\N{ESCAPE}`), a percent-escape encoded
// twice (`%2520`: `%25`, the `%` encoded, then the two hex digits, as a
// URL encoded again writes it; since red-team pass 34 encoded up to 16
// times, `%252520`, and the ESC's name in any case, `\N{escape}`, as
// Python looks it up), and a written OSC (`\u001b]8;;URL\u001b\\`,
// `\x1b]0;title\x07`; DCS, APC, PM and SOS strings the same way) inside a
// key, read as terminal-escapes.ts reads one whose ESC is a byte (its end:
// a written ST, the written ESC and a written backslash `\\`, or a written
// BEL; cut short by the next written ESC). A backslash and another letter (TeX's `\em`,
// `\end`, `\begin` after `\b` is read: a token may start at `egin`, which
// is no key; a regex's `\w`, `\d`) is none.
// The one owner of these forms: rules.ts's TOKEN_START reads them back in a
// look-behind (WRITTEN_ESCAPE_ENDS_BEFORE), find.ts reads them back from
// their last byte (writtenEscapeEndsAt) and forward from their first
// (writtenSequenceLength, writtenEscapeThen), each a bounded reading.

import { HEX_VALUE } from "./bytes.js";
import {
  CONTROL_SEQUENCE_BODY,
  CSI_7BIT_SECOND,
  CSI_FINAL_FIRST,
  CSI_PARAMETERS_MAX,
  ESCAPE_FINAL_BYTE,
  ESCAPE_FINAL_FIRST,
  ESCAPE_INTERMEDIATES_MAX,
  FINAL_LAST,
  INTERMEDIATE_BYTE,
  STRING_SECOND,
  controlSequenceEnd,
  isIntermediate,
  isParameter,
} from "./terminal-escapes.js";

const BACKSLASH = 92;
const PERCENT = 37;
const CARET = 0x5e;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

const HEX_DIGIT = "[0-9A-Fa-f]";
/**
 * The written ESC after its backslash: `e`, `E` (bash's `echo -e`, printf, terminfo), `033` (octal), `27` (Lua's decimal), `x1b`
 * (C, Python), `u001b` (JSON, JavaScript), `u{1b}` (Rust, JavaScript, Swift), `U0000001b`, `N{ESCAPE}` and `N{ESC}` (Python, whose
 * name lookup ignores case: `N{escape}`, `N{Esc}` too).
 */
const WRITTEN_ESC_BODY = "(?:[eE]|033|27|x1[bB]|u001[bB]|u\\{0{0,4}1[bB]\\}|U0000001[bB]|N\\{[Ee][Ss][Cc](?:[Aa][Pp][Ee])?\\})";
/** ESC written as text: a backslash and WRITTEN_ESC_BODY, or caret notation's `^[` (`cat -v`, `less`). */
const WRITTEN_ESC = `(?:\\\\${WRITTEN_ESC_BODY}|\\^\\[)`;
/** A control sequence, or an escape sequence with an intermediate, after a written ESC (terminal-escapes.ts's bounds). */
const WRITTEN_SEQUENCE = `${WRITTEN_ESC}(?:\\[${CONTROL_SEQUENCE_BODY}|${INTERMEDIATE_BYTE}{1,${ESCAPE_INTERMEDIATES_MAX}}${ESCAPE_FINAL_BYTE})`;
/** An octal escape as C reads it: three digits, or fewer where no octal digit follows (`\0`, `\012`; not `\01` of `\012`). */
const OCTAL_ESCAPE = "[0-7](?:[0-7]{2}|[0-7]?(?![0-7]))";
/**
 * The most times a percent-escape's `%` is itself encoded (`%25`) before its two hex digits: a URL encoded again and again
 * (`%2520`, `%252520`); a bound, so that reading one back stays a few bytes' work.
 */
export const PERCENT_ENCODED_AGAIN_MAX = 15;
/** A percent-escape's `%`, encoded once or again up to PERCENT_ENCODED_AGAIN_MAX times more (`%`, `%25`, `%2525`): a pattern's source, for what follows it (two hex digits here; a Telegram token's `3A` in rules.ts). */
export const PERCENT_SIGN = `%(?:25){0,${PERCENT_ENCODED_AGAIN_MAX}}`;
/**
 * A written escape: of a line break, a tab, a backspace, a form feed, a vertical tab or a bell, a character by its code (`\xXX`,
 * `\uXXXX`, `\UXXXXXXXX`, octal), a percent-escape (encoded once or again, up to PERCENT_ENCODED_AGAIN_MAX times more: `%20`,
 * `%2520`, `%252520`), a terminal's sequence.
 */
const WRITTEN_ESCAPE = `\\\\(?:[nrtbfva]|x${HEX_DIGIT}{2}|u${HEX_DIGIT}{4}|U${HEX_DIGIT}{8}|${OCTAL_ESCAPE})|${PERCENT_SIGN}${HEX_DIGIT}{2}|${WRITTEN_SEQUENCE}`;
/** A regular expression's look-behind that holds where a written escape has just ended (its last byte is the character before). */
export const WRITTEN_ESCAPE_ENDS_BEFORE = `(?<=${WRITTEN_ESCAPE})`;
/**
 * A global expression for a written escape followed by `literal` (a token
 * that a pass finds by its lead only at a token's start: a Meta token's
 * `EAA`), read forward from the escape's `\`, `%` or `^`: text without
 * them is passed over in native code. (The literal first, with a
 * look-behind for the escape, tried the look-behind at each literal:
 * `EAA` repeated went from 2.3x to 3.7x `cp && sha256sum` at 50 MB.)
 * Linear: an attempt reads at most a written sequence's bounded length and
 * the literal.
 */
export const writtenEscapeThen = (literal: string) => new RegExp(`(?:${WRITTEN_ESCAPE})${literal}`, "g");
/** The most bytes a written escape before a literal is (a written ESC, a control sequence's longest body): where writtenEscapeThen's search starts before the literal. */
export const WRITTEN_ESCAPE_MAX = 10 + 1 + CSI_PARAMETERS_MAX + ESCAPE_INTERMEDIATES_MAX + 1;

const isHex = (c: number | undefined) => HEX_VALUE[c!]! >= 0;
const OCTAL = new Uint8Array(256).fill(1, 0x30, 0x38);
/** The letters of a string's one-letter escapes that end in a letter: `\n`, `\r`, `\t`, `\b`, `\f`, `\v`, `\a`. */
const ESCAPE_LETTER = new Uint8Array(256);
for (const ch of "nrtbfva") ESCAPE_LETTER[ch.charCodeAt(0)] = 1;
const bytesAre = (b: Uint8Array, at: number, text: string) => {
  for (let k = 0; k < text.length; k++) if (b[at + k] !== text.charCodeAt(k)) return false;
  return true;
};
/** Whether Python's `\N{` and a character's name `name` (capitals) start at `at`: the name in any case, as Python looks it up, then `}`. */
const pythonNameAt = (b: Uint8Array, at: number, name: string) => {
  if (!bytesAre(b, at, "\\N{") || b[at + 3 + name.length] !== CLOSE_BRACE) return false;
  for (let k = 0; k < name.length; k++) if ((b[at + 3 + k]! & 0xdf) !== name.charCodeAt(k)) return false;
  return true;
};

/** Whether an octal escape (OCTAL_ESCAPE) ends at `f`: one to three digits after a backslash, three or no octal digit after them. */
function octalEscapeEndsAt(b: Uint8Array, f: number): boolean {
  for (let d = 1; d <= 3 && OCTAL[b[f - d + 1]!] === 1; d++) if (b[f - d] === BACKSLASH) return d === 3 || OCTAL[b[f + 1]!] !== 1;
  return false;
}

/** Whether a written ESC (WRITTEN_ESC: `\e`, `\033`, `\27`, `\x1b`, `\u001b`, `\u{1b}`, `\U0000001b`, `\N{ESCAPE}`, `\N{ESC}`, `^[`) ends at `e`. */
function writtenEscEndsAt(b: Uint8Array, e: number): boolean {
  const raw = b[e]!;
  if (raw === 0x5b) return b[e - 1] === CARET;
  if (raw === 0x37) return b[e - 1] === 0x32 && b[e - 2] === BACKSLASH;
  if (raw === CLOSE_BRACE) {
    if (pythonNameAt(b, e - 9, "ESCAPE") || pythonNameAt(b, e - 6, "ESC")) return true;
    if ((b[e - 1]! | 0x20) !== 0x62 || b[e - 2] !== 0x31) return false;
    let k = e - 3;
    while (k > e - 7 && b[k] === 0x30) k--;
    return b[k] === OPEN_BRACE && b[k - 1] === 0x75 && b[k - 2] === BACKSLASH;
  }
  const c = raw | 0x20;
  if (c === 0x62 && b[e - 1] === 0x31 && bytesAre(b, e - 9, "\\U000000")) return true;
  if (c === 0x65) return b[e - 1] === BACKSLASH;
  if (c === 0x62) return b[e - 1] === 0x31 && ((b[e - 2] === 0x78 && b[e - 3] === BACKSLASH) || (b[e - 2] === 0x30 && b[e - 3] === 0x30 && b[e - 4] === 0x75 && b[e - 5] === BACKSLASH));
  return c === 0x33 && b[e - 1] === 0x33 && b[e - 2] === 0x30 && b[e - 3] === BACKSLASH;
}

/** Whether `%` and one to PERCENT_ENCODED_AGAIN_MAX `25` end at `e` (the `5` of the last): a `%` encoded again before two hex digits. */
function percentEncodedAgainEndsAt(b: Uint8Array, e: number): boolean {
  let k = e;
  for (let again = 0; again < PERCENT_ENCODED_AGAIN_MAX && b[k] === 0x35 && b[k - 1] === 0x32; again++) {
    k -= 2;
    if (b[k] === PERCENT) return true;
  }
  return false;
}

/**
 * The length of the percent-escape's `%` that starts at `i`, PERCENT_SIGN read forward: `%` and as many `25` as follow it, up
 * to PERCENT_ENCODED_AGAIN_MAX (`%25253A`'s `%2525` is 5); 0 where no `%` is at `i`. At most 31 bytes read.
 */
export function percentSignLength(b: Uint8Array, i: number): number {
  if (b[i] !== PERCENT) return 0;
  let k = i + 1;
  while (k - i < 2 * PERCENT_ENCODED_AGAIN_MAX && b[k] === 0x32 && b[k + 1] === 0x35) k += 2;
  return k - i;
}

/**
 * Whether a written escape ends with the byte at `f`, as
 * WRITTEN_ESCAPE_ENDS_BEFORE reads it: a token may start after it. A few
 * byte tests; a terminal's sequence is read back at most
 * CSI_PARAMETERS_MAX + ESCAPE_INTERMEDIATES_MAX + 12 bytes (a written ESC of
 * up to 10).
 */
export function writtenEscapeEndsAt(b: Uint8Array, f: number): boolean {
  const c = b[f]!;
  if (b[f - 1] === BACKSLASH && ESCAPE_LETTER[c] === 1) return true;
  if (OCTAL[c] === 1 && octalEscapeEndsAt(b, f)) return true;
  if (isHex(c) && isHex(b[f - 1])) {
    const before = b[f - 2];
    if (before === PERCENT || (before === 0x78 && b[f - 3] === BACKSLASH)) return true;
    // `%2520`, `%252520`: a percent-escape encoded again (`%25` is the `%`), each `%25` read back to the `%`.
    if (before === 0x35 && b[f - 3] === 0x32 && percentEncodedAgainEndsAt(b, f - 2)) return true;
    if (isHex(before) && isHex(b[f - 3]) && b[f - 4] === 0x75 && b[f - 5] === BACKSLASH) return true;
    // `\U000000a0`: Python's eight hex digits.
    if (b[f - 8] === 0x55 && b[f - 9] === BACKSLASH && isHex(before) && isHex(b[f - 3]) && isHex(b[f - 4]) && isHex(b[f - 5]) && isHex(b[f - 6]) && isHex(b[f - 7])) return true;
  }
  if (c < ESCAPE_FINAL_FIRST || c > FINAL_LAST) return false;
  let k = f - 1;
  const intermediates = k - ESCAPE_INTERMEDIATES_MAX;
  while (k > intermediates && k > 0 && isIntermediate(b[k]!)) k--;
  if (k < f - 1 && writtenEscEndsAt(b, k)) return true;
  if (c < CSI_FINAL_FIRST) return false;
  const parameters = k - CSI_PARAMETERS_MAX;
  while (k > parameters && k > 0 && isParameter(b[k]!)) k--;
  return b[k] === CSI_7BIT_SECOND && writtenEscEndsAt(b, k - 1);
}

/** What may come just before a written escape's letter or hex digits: its backslash or `%`, its `u`, `U` or `x`, its other hex digits. */
const BEFORE_ESCAPE_DIGITS = new Uint8Array(256);
for (const ch of "\\%uUx0123456789ABCDEFabcdef") BEFORE_ESCAPE_DIGITS[ch.charCodeAt(0)] = 1;
/** The most bytes of a written escape's letter and digits after its backslash or `%`: `U000000a0`. */
const ESCAPE_DIGITS_MAX = 9;

/**
 * Where the longest written escape ends among the first nine bytes from
 * `at` and before `limit`, where a run of the token alphabet starts with
 * its letter or its hex digits (`\u00a0ghp_…`, `%A0ghp_…`,
 * `\U000000a0ghp_…`, or a walk back that stopped at its bound inside
 * `\u00a0`), or -1: the longest, so that `%2520ghp_…` is `%2520` and not
 * `%25` and `20ghp_…`; the nine counted past the `25`s that begin the run
 * (`%252520ghp_…`, a `%` encoded again). Asked only after a byte that may
 * come before them, then at most nine readings of writtenEscapeEndsAt more
 * than the `25`s' count.
 */
export function writtenEscapeEndAfter(b: Uint8Array, at: number, limit: number): number {
  if (at < 1 || BEFORE_ESCAPE_DIGITS[b[at - 1]!] !== 1) return -1;
  let digits = at;
  if (b[digits] === 0x35 && b[digits - 1] === 0x32) digits++;
  while (digits - at < 2 * PERCENT_ENCODED_AGAIN_MAX && b[digits] === 0x32 && b[digits + 1] === 0x35) digits += 2;
  for (let f = Math.min(digits + ESCAPE_DIGITS_MAX, limit) - 1; f >= at; f--) if (writtenEscapeEndsAt(b, f)) return f;
  return -1;
}

/** The length of the written ESC at `i`, or 0. */
function writtenEscLength(b: Uint8Array, i: number): number {
  if (b[i] === CARET) return b[i + 1] === 0x5b ? 2 : 0;
  if (b[i] !== BACKSLASH) return 0;
  const c = b[i + 1];
  if (c === 0x65 || c === 0x45) return 2;
  if (c === 0x30) return b[i + 2] === 0x33 && b[i + 3] === 0x33 ? 4 : 0;
  if (c === 0x32) return b[i + 2] === 0x37 ? 3 : 0;
  if (c === 0x78) return b[i + 2] === 0x31 && (b[i + 3]! | 0x20) === 0x62 ? 4 : 0;
  if (c === 0x55) return bytesAre(b, i + 2, "0000001") && (b[i + 9]! | 0x20) === 0x62 ? 10 : 0;
  if (c === 0x4e) return pythonNameAt(b, i, "ESCAPE") ? 10 : pythonNameAt(b, i, "ESC") ? 7 : 0;
  if (c !== 0x75) return 0;
  if (b[i + 2] !== OPEN_BRACE) return b[i + 2] === 0x30 && b[i + 3] === 0x30 && b[i + 4] === 0x31 && (b[i + 5]! | 0x20) === 0x62 ? 6 : 0;
  let k = i + 3;
  while (k < i + 7 && b[k] === 0x30) k++;
  return b[k] === 0x31 && (b[k + 1]! | 0x20) === 0x62 && b[k + 2] === CLOSE_BRACE ? k + 3 - i : 0;
}
/** The longest written ESC (`\U0000001b`, `\N{ESCAPE}`, `\u{00001b}`). */
const WRITTEN_ESC_MAX = 10;

/**
 * The length of the terminal's sequence written with a textual ESC that
 * starts at `i` (`\u001b[m`, `\x1b[01;31m`, `\033(B`), read forward as
 * writtenEscapeEndsAt reads it back, or of the control string so written
 * (`\u001b]8;;URL\u001b\\`: writtenStringLength); 0 where none starts
 * there. Reads at most WRITTEN_ESC_MAX + CSI_PARAMETERS_MAX +
 * ESCAPE_INTERMEDIATES_MAX + 2 bytes, or a string: `b` past its end reads
 * as 0 (a padded window).
 */
export function writtenSequenceLength(b: Uint8Array, i: number): number {
  const esc = writtenEscLength(b, i);
  if (esc === 0) return 0;
  let k = i + esc;
  const string = STRING_SECOND[b[k]!]!;
  if (string !== 0) return writtenStringLength(b, i, k + 1, string === 1);
  if (b[k] === CSI_7BIT_SECOND) {
    const end = controlSequenceEnd(b, k + 1);
    return end < 0 ? 0 : end - i;
  }
  const first = k;
  while (k - first < ESCAPE_INTERMEDIATES_MAX && isIntermediate(b[k]!)) k++;
  const f = b[k]!;
  return k > first && f >= ESCAPE_FINAL_FIRST && f <= FINAL_LAST ? k + 1 - i : 0;
}

/**
 * The length of a control string (an OSC, `bel`; a DCS, an APC, a PM, an
 * SOS) whose ESC is written as text, from its written ESC at `i`, its
 * string at `s`: up to and with a written ST, the written ESC and a
 * backslash written `\\` (as JSON, a repr and printf's source write one:
 * `\u001b\\`, `\x1b\\`, `\e\\`), or, an OSC's, a written BEL
 * (writtenBelLength); cut short before the next written ESC, which starts a
 * sequence of its own, as terminal-escapes.ts's raw strings are; 0 at a
 * control byte or DEL, or where the window ends first. No bound but the
 * window's, as the raw OSC's; linear: every written ESC stops a string, so
 * no byte is read by two.
 */
function writtenStringLength(b: Uint8Array, i: number, s: number, bel: boolean): number {
  const n = b.length;
  for (let k = s; k < n; k++) {
    const c = b[k]!;
    if (c < 0x20 || c === 0x7f) return 0;
    if (c !== BACKSLASH && c !== CARET) continue;
    const esc = writtenEscLength(b, k);
    if (esc > 0) return b[k + esc] === BACKSLASH && b[k + esc + 1] === BACKSLASH ? k + esc + 2 - i : k - i;
    if (bel) {
      const end = writtenBelLength(b, k);
      if (end > 0) return k + end - i;
    }
  }
  return 0;
}

/** The length of the BEL written as text at `k`: `\a`, `\x07`, `\u0007`, octal `\7`, `\07`, `\007` (as C reads them: no octal digit after), caret notation's `^G`; or 0. */
function writtenBelLength(b: Uint8Array, k: number): number {
  if (b[k] === CARET) return b[k + 1] === 0x47 ? 2 : 0;
  const c = b[k + 1];
  if (c === 0x61) return 2;
  if (c === 0x78) return b[k + 2] === 0x30 && b[k + 3] === 0x37 ? 4 : 0;
  if (c === 0x75) return bytesAre(b, k + 2, "0007") ? 6 : 0;
  let d = k + 1;
  while (d < k + 3 && b[d] === 0x30) d++;
  return b[d] === 0x37 && OCTAL[b[d + 1]!] !== 1 ? d + 1 - k : 0;
}

/**
 * A written ESC that starts a sequence (a `[`, an intermediate, or a control string's `]`, `P`, `X`, `^`, `_` after it)
 * right after `before` (a class of characters): a global expression, for
 * find.ts's native search of those inside a key (where one ends:
 * writtenEscStart). Its backslash first, so that the engine skips to one
 * (a look-behind first is tried at every byte). Text of `\\e` or TeX's
 * `\\em` repeated holds none.
 */
export const writtenSequenceAfter = (before: string) =>
  new RegExp(`[\\\\^](?<=${before}[\\\\^])(?:(?<=\\\\)${WRITTEN_ESC_BODY}|(?<=\\^)\\[)(?=[\\[\\]PX^_]|${INTERMEDIATE_BYTE})`, "g");
/** Where the written ESC that writtenSequenceAfter found ending at `end` starts. */
export function writtenEscStart(b: Uint8Array, end: number): number {
  for (let length = 2; length <= WRITTEN_ESC_MAX; length++) if (writtenEscLength(b, end - length) === length) return end - length;
  return end;
}
