// A terminal's escape sequences, as a captured terminal's output (`script`,
// a CI log, `grep --color`) writes them right before a key: the sequence's
// last byte is most often a letter or a digit, yet a token starts after it.
// The one owner of their bytes (ECMA-48, 5.3 and 5.4): rules.ts's
// TOKEN_START reads them back in a look-behind, find.ts reads them back
// from a final byte (escapeStartBefore) and forward from an introducer (a
// Meta token after one); all three are built from these constants. A key
// cut by them (`grep --color` writes them inside the part it matched) is
// read again with them removed: find.ts notes where a run of them
// (sequencesEnd) lies inside a key, text-forms.ts removes each
// (sequenceLength).
// - A control sequence (CSI): ESC `[` (7-bit), or the C1 byte 0x9B (8-bit;
//   UTF-8 writes it C2 9B), parameter bytes 0x30-0x3F, intermediate bytes
//   0x20-0x2F, a final byte 0x40-0x7E: `\x1b[1;32m`, `\x1b[K`, `\x9b0m`.
// - An escape sequence: ESC, intermediate bytes, a final byte 0x30-0x7E:
//   `ESC ( B` (select ASCII, which `tput sgr0` writes), `ESC 7`, `ESC M`.
// - An operating system command (OSC): ESC `]`, 0x9D or C2 9D, a string,
//   a terminator (controlStringLength says which). Since recall pass 33
//   the other control strings the same way (published until then when
//   inside a key): a device control string (DCS: ESC `P`, 0x90; sixel
//   images, tmux's and screen's passthrough, DECRQSS), an application
//   program command (APC: ESC `_`, 0x9F; kitty's graphics), a privacy
//   message (PM: ESC `^`, 0x9E) and a start of string (SOS: ESC `X`,
//   0x98), which a terminal hides up to their ST as it hides an OSC.
// At most CSI_PARAMETERS_MAX parameter bytes and ESCAPE_INTERMEDIATES_MAX
// intermediate ones, so that every reading back is bounded.

export const ESC = 0x1b;
/** The 7-bit control sequence introducer's second byte, after ESC: `[`. */
export const CSI_7BIT_SECOND = 0x5b;
/** The 8-bit control sequence introducer (C1), a byte of its own (in UTF-8, C2 9B: its last byte is this one). */
export const CSI_8BIT = 0x9b;
export const PARAMETER_FIRST = 0x30;
export const PARAMETER_LAST = 0x3f;
export const INTERMEDIATE_FIRST = 0x20;
export const INTERMEDIATE_LAST = 0x2f;
/** A control sequence's final byte: 0x40 (`@`) to 0x7E (`~`). */
export const CSI_FINAL_FIRST = 0x40;
/** An escape sequence's final byte: 0x30 (`0`) to 0x7E. */
export const ESCAPE_FINAL_FIRST = 0x30;
export const FINAL_LAST = 0x7e;
/**
 * A terminal takes a control sequence with any number of parameter bytes
 * (xterm and VTE ignore the parameters past their 30 or 32, not the
 * sequence: its bytes are hidden whole), and a program writes more than
 * 32 (`ESC[1;3;4;38;2;255;128;0;48;2;10;20;30m`, bold, italic, underline
 * and two 24-bit colours, is 37; with an underline colour and more
 * attributes about 80). This bound keeps a sequence read back from a key
 * at the start of a window's judged part inside the 256 bytes of context
 * the window holds before it (scan.ts's CONTEXT): a longer one could not be
 * read whole there. Linear whatever the bound: a run of parameter bytes is
 * read back only from the final byte right after it, and forward only from
 * the introducer right before it (no parameter byte is a final byte or an
 * introducer).
 */
export const CSI_PARAMETERS_MAX = 200;
export const ESCAPE_INTERMEDIATES_MAX = 2;
/** The most bytes a sequence that ends at a final byte is read back over, the final byte itself not counted. */
export const SEQUENCE_BACK_MAX = CSI_PARAMETERS_MAX + ESCAPE_INTERMEDIATES_MAX + 2;

const hex = (c: number) => `\\x${c.toString(16).padStart(2, "0")}`;
const range = (first: number, last: number) => `[${hex(first)}-${hex(last)}]`;
/**
 * A regular expression's look-behind that holds where a sequence has just
 * ended (its final byte is the character before), over text read one
 * character per byte (Latin-1).
 */
/** Regular expression sources, a byte a character: an intermediate byte, an escape sequence's final byte, and a control sequence's body after its introducer (parameters, intermediates, its final byte). */
export const INTERMEDIATE_BYTE = range(INTERMEDIATE_FIRST, INTERMEDIATE_LAST);
export const ESCAPE_FINAL_BYTE = range(ESCAPE_FINAL_FIRST, FINAL_LAST);
export const CONTROL_SEQUENCE_BODY = `${range(PARAMETER_FIRST, PARAMETER_LAST)}{0,${CSI_PARAMETERS_MAX}}${INTERMEDIATE_BYTE}{0,${ESCAPE_INTERMEDIATES_MAX}}${range(CSI_FINAL_FIRST, FINAL_LAST)}`;
const SEQUENCE =
  `(?:${hex(ESC)}\\${String.fromCharCode(CSI_7BIT_SECOND)}|${hex(CSI_8BIT)})${CONTROL_SEQUENCE_BODY}` +
  `|${hex(ESC)}${INTERMEDIATE_BYTE}{0,${ESCAPE_INTERMEDIATES_MAX}}${ESCAPE_FINAL_BYTE}`;
export const ESCAPE_ENDS_BEFORE = `(?<=${SEQUENCE})`;
/**
 * A global expression for a sequence followed by `literal` (ASCII letters
 * and digits), read forward from its introducer: a token that a pass finds
 * by its lead only at a token's start (a Meta token's `EAA`) is looked for
 * after a sequence with it. Linear: an attempt starts only at an
 * introducer and reads at most SEQUENCE_BACK_MAX bytes and the literal.
 */
export const sequenceThen = (literal: string) => new RegExp(`(?:${SEQUENCE})${literal}`, "g");

export const isIntermediate = (c: number) => c >= INTERMEDIATE_FIRST && c <= INTERMEDIATE_LAST;
export const isParameter = (c: number) => c >= PARAMETER_FIRST && c <= PARAMETER_LAST;
/** What may come right before a sequence's final byte: a parameter or an intermediate byte, `[`, ESC, the 8-bit introducer. */
const BEFORE_FINAL = new Uint8Array(256).fill(1, INTERMEDIATE_FIRST, PARAMETER_LAST + 1);
BEFORE_FINAL[CSI_7BIT_SECOND] = 1;
BEFORE_FINAL[ESC] = 1;
BEFORE_FINAL[CSI_8BIT] = 1;

/**
 * Where the sequence whose final byte is at `f` starts (its ESC, or its
 * 8-bit introducer), as ESCAPE_ENDS_BEFORE reads it; -1 where none ends
 * there. Reads back at most SEQUENCE_BACK_MAX bytes, and most calls one
 * (the byte before `f`, a letter or a digit in a word or a key); a reading
 * past that one is counted in `reading` (find.ts's extraReading).
 */
export function escapeStartBefore(b: Uint8Array, f: number, reading?: { places: number; bytes: number }): number {
  const c = b[f]!;
  if (c < ESCAPE_FINAL_FIRST || c > FINAL_LAST || f < 1 || BEFORE_FINAL[b[f - 1]!] !== 1) return -1;
  // A digit ends an escape sequence only (`ESC 7`, `ESC ( 0`): right after its ESC or an intermediate, never in a run of digits.
  if (c < CSI_FINAL_FIRST && b[f - 1] !== ESC && !isIntermediate(b[f - 1]!)) return -1;
  let k = f - 1;
  const intermediates = f - 1 - ESCAPE_INTERMEDIATES_MAX;
  while (k > intermediates && k > 0 && isIntermediate(b[k]!)) k--;
  let start = -1;
  // An escape sequence: ESC, its intermediates, its final.
  if (b[k] === ESC) start = k;
  else if (c >= CSI_FINAL_FIRST) {
    const parameters = k - CSI_PARAMETERS_MAX;
    while (k > parameters && k > 0 && isParameter(b[k]!)) k--;
    if (b[k] === CSI_8BIT) start = k;
    else if (k >= 1 && b[k] === CSI_7BIT_SECOND && b[k - 1] === ESC) start = k - 1;
  }
  if (reading) {
    reading.places++;
    reading.bytes += f - k;
  }
  return start;
}

/**
 * Whether the digit at `f` ends an escape sequence (`ESC 7`, `ESC ( 0`):
 * the one test before escapeStartBefore is the byte before it (ESC or an
 * intermediate byte), small enough to inline on a hot path (every colon
 * after a digit asks it).
 */
export function digitEndsEscape(b: Uint8Array, f: number): boolean {
  const before = b[f - 1]!;
  return (before === ESC || (before >= INTERMEDIATE_FIRST && before <= INTERMEDIATE_LAST)) && escapeStartBefore(b, f) >= 0;
}

/**
 * The operating system command's second byte, after ESC: `]`; 0x9D is
 * the 8-bit introducer (C1), C2 9D its UTF-8 spelling. Its string ends at
 * BEL or at the string terminator: ESC `\\`, or the 8-bit ST, 0x9C after
 * 0x9D and C2 9C after the other two (a UTF-8 stream's: there a lone 0x9C
 * is a character's continuation byte). An OSC 8 hyperlink (`ESC ] 8 ; ;
 * URL ESC \\`) around a key's characters shows them, not the URL.
 */
export const OSC_SECOND = 0x5d;
export const OSC_8BIT = 0x9d;
/** A control string's introducer's second byte after ESC (`]`, `P`, `X`, `^`, `_`): 1 for an OSC, which BEL ends too, 2 for the others, which only ST ends. */
export const STRING_SECOND = new Uint8Array(256);
/** … and its 8-bit introducer (0x9D, 0x90, 0x98, 0x9E, 0x9F; in UTF-8 after C2), the same way. */
export const STRING_8BIT = new Uint8Array(256);
STRING_SECOND[OSC_SECOND] = STRING_8BIT[OSC_8BIT] = 1;
for (const c of "PX^_") STRING_SECOND[c.charCodeAt(0)] = 2;
for (const c of [0x90, 0x98, 0x9e, 0x9f]) STRING_8BIT[c] = 2;
const ST_8BIT = 0x9c;
const BEL = 0x07;
const BACKSLASH = 0x5c;

/**
 * The length of the sequence that starts at `i` (ESC, the 8-bit CSI 0x9B
 * or a control string's 8-bit introducer, 0x9D, 0x90, 0x98, 0x9E, 0x9F, or
 * C2 and one of them: UTF-8's spelling), read forward: a control sequence,
 * an escape sequence, an OSC or another control string ended by its
 * terminator; 0 where none starts there (a CSI or a control string that is
 * none is not read as a two-byte escape sequence with `[`, `]`, `P`, `X`,
 * `^` or `_` its final). Reads at most SEQUENCE_BACK_MAX + 2 bytes, or a
 * control string (controlStringLength); `b` past its end reads as 0 (a
 * padded window).
 */
export function sequenceLength(b: Uint8Array, i: number): number {
  const c = b[i]!;
  let k: number;
  if (c === CSI_8BIT) k = i + 1;
  else if (STRING_8BIT[c] !== 0) return continuesCharacter(b, i) ? 0 : controlStringLength(b, i, i + 1, false, STRING_8BIT[c] === 1);
  else if (c === 0xc2 && b[i + 1] === CSI_8BIT) k = i + 2;
  else if (c === 0xc2 && STRING_8BIT[b[i + 1]!] !== 0) return controlStringLength(b, i, i + 2, true, STRING_8BIT[b[i + 1]!] === 1);
  else if (c !== ESC) return 0;
  else {
    const second = b[i + 1]!;
    if (STRING_SECOND[second] !== 0) return controlStringLength(b, i, i + 2, true, STRING_SECOND[second] === 1);
    if (second !== CSI_7BIT_SECOND) {
      // An escape sequence: intermediates, a final 0x30-0x7E.
      let e = i + 1;
      while (e - i - 1 < ESCAPE_INTERMEDIATES_MAX && isIntermediate(b[e]!)) e++;
      const f = b[e]!;
      return f >= ESCAPE_FINAL_FIRST && f <= FINAL_LAST ? e + 1 - i : 0;
    }
    k = i + 2;
  }
  const end = controlSequenceEnd(b, k);
  return end < 0 ? 0 : end - i;
}

/**
 * Where a control sequence whose body (parameters, intermediates, final)
 * starts at `k`, after its introducer, ends: past its final byte; -1 where
 * none ends (too many parameter or intermediate bytes, no final). Reads at
 * most CSI_PARAMETERS_MAX + ESCAPE_INTERMEDIATES_MAX + 1 bytes.
 */
export function controlSequenceEnd(b: Uint8Array, k: number): number {
  const parameters = k + CSI_PARAMETERS_MAX;
  while (k < parameters && isParameter(b[k]!)) k++;
  const intermediates = k + ESCAPE_INTERMEDIATES_MAX;
  while (k < intermediates && isIntermediate(b[k]!)) k++;
  const f = b[k]!;
  return f >= CSI_FINAL_FIRST && f <= FINAL_LAST ? k + 1 : -1;
}

/**
 * Whether the byte at `i` (0x80-0xBF) is a UTF-8 character's continuation:
 * a lead byte 1 to 3 bytes before it, continuation bytes between, whose
 * character reaches `i`. Chinese text holds 0x9D so (来 is E6 9D A5, 板
 * E6 9D BF), which a UTF-8 terminal shows as a character, no 8-bit OSC: read
 * as one, it took the text after it up to the next ESC or C1 byte out of
 * the second reading (C2 9D, U+009D, is the OSC: its C2 is read first).
 */
function continuesCharacter(b: Uint8Array, i: number): boolean {
  for (let k = 1; k <= 3 && k <= i; k++) {
    const c = b[i - k]!;
    if (c >= 0xc2 && c <= 0xf4) return k < (c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2);
    if (c < 0x80 || c > 0xbf) return false;
  }
  return false;
}

/** CAN and SUB: a control byte that cancels a sequence (its bytes hidden with it). */
const CAN = 0x18;
const SUB = 0x1a;

/**
 * The length of the OSC (`bel`) or other control string at `i`, whose
 * string starts at `s`, up to and with its terminator, or 0 (a control
 * byte other than BEL, CAN, SUB and ESC, or DEL, in the string; or the
 * window ends first). `utf8`: introduced by
 * ESC or by C2 and its C1 byte (`ESC ]`, C2 9D), so that C2 80-9F are the
 * C1 controls and other bytes from 0x80 up its characters'; else (0x9D
 * alone) each byte 0x80-0x9F is one.
 * As a terminal's parser (ECMA-48's, xterm's, VTE's) ends it: at ST, or
 * BEL for an OSC (a DCS's, an APC's, a PM's or an SOS's BEL is one of the
 * string's bytes, hidden with it: DEC's parser passes or ignores it);
 * cancelled at CAN or SUB (taken with it); or cut short by the next ESC or
 * C1 control, which starts a sequence of its own (its string is hidden
 * all the same: a terminal never prints an OSC's bytes). No bound on the
 * string's length (a terminal hides it whole however long: xterm and VTE
 * drop an overlong command, not its bytes; a hyperlink's URL may run to
 * kilobytes): it is bounded by the window read (a block and its overlap).
 * Linear all the same: the string stops at every byte that introduces a
 * sequence of its own kind (ESC, C2 80-9F in a UTF-8 string; ESC,
 * 0x80-0x9F in an 8-bit one: every introducer is one of them), so no byte
 * is read by two strings of one kind, and at most twice in all.
 */
function controlStringLength(b: Uint8Array, i: number, s: number, utf8: boolean, bel: boolean): number {
  const n = b.length;
  for (let k = s; k < n; k++) {
    const c = b[k]!;
    if ((c === BEL && bel) || c === CAN || c === SUB) return k + 1 - i;
    if (c === BEL) continue;
    if (c === ESC) return b[k + 1] === BACKSLASH ? k + 2 - i : k - i;
    if (c < 0x20 || c === 0x7f) return 0;
    if (utf8) {
      if (c === 0xc2 && b[k + 1]! >= 0x80 && b[k + 1]! <= 0x9f) return b[k + 1] === ST_8BIT ? k + 2 - i : k - i;
    } else if (c >= 0x80 && c <= 0x9f) return c === ST_8BIT ? k + 1 - i : k - i;
  }
  return 0;
}

/**
 * Where the run of sequences that starts at `i` ends (consecutive
 * sequences, `ESC[m ESC[K`, as grep --color writes them); `i` where none
 * starts there. Linear: each sequence is read once.
 */
export function sequencesEnd(b: Uint8Array, i: number): number {
  let n: number;
  while ((n = sequenceLength(b, i)) > 0) i += n;
  return i;
}
