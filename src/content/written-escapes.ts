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
// The one owner of these forms: rules.ts's TOKEN_START reads them back in a
// look-behind (WRITTEN_ESCAPE_ENDS_BEFORE), find.ts reads them back from
// their last byte (writtenEscapeEndsAt) and forward from their first
// (writtenSequenceLength, writtenEscapeThen), each a bounded reading.

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
  controlSequenceEnd,
  isIntermediate,
  isParameter,
} from "./terminal-escapes.js";

const BACKSLASH = 92;
const PERCENT = 37;

const HEX_DIGIT = "[0-9A-Fa-f]";
/** ESC written as text: `\e` (bash's `echo -e`, printf), `\033` (octal), `\x1b` (C, Python), `\u001b` (JSON, JavaScript). */
const WRITTEN_ESC = "\\\\(?:e|033|x1[bB]|u001[bB])";
/** A control sequence, or an escape sequence with an intermediate, after a written ESC (terminal-escapes.ts's bounds). */
const WRITTEN_SEQUENCE = `${WRITTEN_ESC}(?:\\[${CONTROL_SEQUENCE_BODY}|${INTERMEDIATE_BYTE}{1,${ESCAPE_INTERMEDIATES_MAX}}${ESCAPE_FINAL_BYTE})`;
/** A written escape: of a line break or a tab, a character by its code (`\xXX`, `\uXXXX`), a percent-escape, a terminal's sequence. */
const WRITTEN_ESCAPE = `\\\\(?:[nrt]|x${HEX_DIGIT}{2}|u${HEX_DIGIT}{4})|%${HEX_DIGIT}{2}|${WRITTEN_SEQUENCE}`;
/** A regular expression's look-behind that holds where a written escape has just ended (its last byte is the character before). */
export const WRITTEN_ESCAPE_ENDS_BEFORE = `(?<=${WRITTEN_ESCAPE})`;
/**
 * A global expression for `literal` right after a written escape (a token
 * that a pass finds by its lead only at a token's start: a Meta token's
 * `EAA`). The literal first, so that the engine skips to it (a look-behind
 * first is tried at every byte); linear: the look-behind reads back at most
 * a sequence's bounded length.
 */
export const writtenEscapeThen = (literal: string) => new RegExp(`${literal}(?<=(?:${WRITTEN_ESCAPE})${literal})`, "g");

const HEX = new Uint8Array(256);
for (const ch of "0123456789ABCDEFabcdef") HEX[ch.charCodeAt(0)] = 1;

/** Whether a written ESC (`\e`, `\033`, `\x1b`, `\u001b`) ends at `e`. */
function writtenEscEndsAt(b: Uint8Array, e: number): boolean {
  const c = b[e]! | 0x20;
  if (c === 0x65) return b[e - 1] === BACKSLASH;
  if (c === 0x62) return b[e - 1] === 0x31 && ((b[e - 2] === 0x78 && b[e - 3] === BACKSLASH) || (b[e - 2] === 0x30 && b[e - 3] === 0x30 && b[e - 4] === 0x75 && b[e - 5] === BACKSLASH));
  return c === 0x33 && b[e - 1] === 0x33 && b[e - 2] === 0x30 && b[e - 3] === BACKSLASH;
}

/**
 * Whether a written escape ends with the byte at `f`, as
 * WRITTEN_ESCAPE_ENDS_BEFORE reads it: a token may start after it. A few
 * byte tests; a terminal's sequence is read back at most
 * CSI_PARAMETERS_MAX + ESCAPE_INTERMEDIATES_MAX + 7 bytes.
 */
export function writtenEscapeEndsAt(b: Uint8Array, f: number): boolean {
  const c = b[f]!;
  if (b[f - 1] === BACKSLASH) return c === 0x6e || c === 0x72 || c === 0x74;
  if (HEX[c] === 1 && HEX[b[f - 1]!] === 1) {
    const before = b[f - 2];
    if (before === PERCENT || (before === 0x78 && b[f - 3] === BACKSLASH)) return true;
    if (HEX[before!] === 1 && HEX[b[f - 3]!] === 1 && b[f - 4] === 0x75 && b[f - 5] === BACKSLASH) return true;
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

/** What may come just before a written escape's letter or hex digits: its backslash or `%`, its `u` or `x`, its other hex digits. */
const BEFORE_ESCAPE_DIGITS = new Uint8Array(256);
for (const ch of "\\%ux0123456789ABCDEFabcdef") BEFORE_ESCAPE_DIGITS[ch.charCodeAt(0)] = 1;

/**
 * Where a written escape ends among the first five bytes from `at`, where
 * a run of the token alphabet starts with its letter or its hex digits
 * (`\u00a0ghp_…`, `%A0ghp_…`, or a walk back that stopped at its bound
 * inside `\u00a0`), or -1: asked only after a byte that may come before
 * them, then at most five readings of writtenEscapeEndsAt.
 */
export function writtenEscapeEndAfter(b: Uint8Array, at: number): number {
  if (at < 1 || BEFORE_ESCAPE_DIGITS[b[at - 1]!] !== 1) return -1;
  for (let f = at; f < at + 5; f++) if (writtenEscapeEndsAt(b, f)) return f;
  return -1;
}

/** The length of the written ESC at `i`, or 0. */
function writtenEscLength(b: Uint8Array, i: number): number {
  if (b[i] !== BACKSLASH) return 0;
  const c = b[i + 1];
  if (c === 0x65) return 2;
  if (c === 0x30) return b[i + 2] === 0x33 && b[i + 3] === 0x33 ? 4 : 0;
  if (c === 0x78) return b[i + 2] === 0x31 && (b[i + 3]! | 0x20) === 0x62 ? 4 : 0;
  if (c === 0x75) return b[i + 2] === 0x30 && b[i + 3] === 0x30 && b[i + 4] === 0x31 && (b[i + 5]! | 0x20) === 0x62 ? 6 : 0;
  return 0;
}

/**
 * The length of the terminal's sequence written with a textual ESC that
 * starts at `i` (`\u001b[m`, `\x1b[01;31m`, `\033(B`), read forward as
 * writtenEscapeEndsAt reads it back; 0 where none starts there. Reads at
 * most 6 + CSI_PARAMETERS_MAX + ESCAPE_INTERMEDIATES_MAX + 2 bytes: `b`
 * past its end reads as 0 (a padded window).
 */
export function writtenSequenceLength(b: Uint8Array, i: number): number {
  const esc = writtenEscLength(b, i);
  if (esc === 0) return 0;
  let k = i + esc;
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
 * A written ESC that starts a sequence (a `[` or an intermediate after it)
 * right after `before` (a class of characters): a global expression, for
 * find.ts's native search of those inside a key (where one ends:
 * writtenEscStart). Its backslash first, so that the engine skips to one
 * (a look-behind first is tried at every byte). Text of `\\e` or TeX's
 * `\\em` repeated holds none.
 */
export const writtenSequenceAfter = (before: string) => new RegExp(`\\\\(?<=${before}\\\\)(?:e|033|x1[bB]|u001[bB])(?=\\[|${INTERMEDIATE_BYTE})`, "g");
/** Where the written ESC that writtenSequenceAfter found ending at `end` starts. */
export function writtenEscStart(b: Uint8Array, end: number): number {
  for (let length = 2; length <= 6; length += 2) if (writtenEscLength(b, end - length) === length) return end - length;
  return end;
}
