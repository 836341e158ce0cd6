// A tool's mark on every line of a block it shows (red-team pass 34): the
// same bytes before and after each line, or a counter or a timestamp of the
// same shape before it. grep's context lines (`path-N-`, its match line
// `path:N:`), a diff's removed lines (`-`), `cat -A` (`$`, `^M$`), a CI
// log's timestamps, Hermes' search_files (`  N: `), a Markdown list's `- `,
// an indent deeper than a PEM block's breaks take. A PEM block's armour
// line says what the mark is (its bytes before the dashes and after them):
// the lines after it that carry the same mark are read without it, and the
// private-key rule (rules.ts) judges that reading as it judges a block as
// it is. A key's body glued to the mark (`path-2-MIIE…`, `-MIIE…`) is no
// token's start, and the armour's line no longer ends at its dashes: the
// rule read neither until then.

const table = (test: (c: number) => boolean) => Uint8Array.from({ length: 256 }, (_, c) => (test(c) ? 1 : 0));
const DIGIT = table((c) => c >= 48 && c <= 57);
const LETTER = table((c) => (c >= 65 && c <= 90) || (c >= 97 && c <= 122));
const HEADER_NAME = table((c) => LETTER[c] === 1 || c === 45);

/** A mark before a line is at most this long (a path and a line number, a timestamp). */
export const MARK_BEFORE_MAX = 256;
/** A mark after a line is at most this long (`cat -A`'s `^M$`, trailing blanks). */
export const MARK_AFTER_MAX = 8;
/** Lines read after the armour's: RFC 1421's or OpenPGP's headers (six at most), a blank line, the body's first. */
const LINES_MAX = 8;
/** A line's end is looked for this far at most (a body's line is 64 to 76 characters, a header's ~200): past it the line is read as it is. */
const LINE_MAX = 1024;
/** A run of digits in a mark (a line number, a timestamp's fields) is at most this long. */
const DIGITS_MAX = 20;

/** Whether byte `line` of a line's mark is byte `mark` of the armour line's: grep writes `:` after its match line's name and number, `-` after its context lines'. */
const sameMarkByte = (mark: number, line: number) => mark === line || ((mark === 58 || mark === 45) && (line === 58 || line === 45));

/**
 * The end of the mark that b[from, to) (the armour line's) is the shape of,
 * when the line at `at` starts with it; -1 when it does not. The same
 * bytes, a run of digits for a run of digits (a counter, a timestamp), a
 * run of blanks for a run of blanks of any length (`cat -n` and `nl` pad
 * their numbers to the left).
 */
function markEnd(b: Uint8Array, from: number, to: number, at: number, limit: number): number {
  let i = from;
  let j = at;
  while (i < to) {
    const c = b[i]!;
    if (DIGIT[c] === 1 || c === 32) {
      const digits = c !== 32;
      while (i < to && b[i] === c) i++;
      if (digits) while (i < to && DIGIT[b[i]!] === 1) i++;
      const start = j;
      if (digits) while (j < limit && j - start < DIGITS_MAX && DIGIT[b[j]!] === 1) j++;
      else while (j < limit && b[j] === 32) j++;
      if (digits && j === start) return -1;
      continue;
    }
    if (j >= limit || !sameMarkByte(c, b[j]!)) return -1;
    i++;
    j++;
  }
  return j;
}

/** The length of the line break at `at` (LF, CR LF, CR), or 0. */
function breakLength(b: Uint8Array, at: number): number {
  if (b[at] === 10) return 1;
  if (b[at] === 13) return b[at + 1] === 10 ? 2 : 1;
  return 0;
}

/** Whether b[from, to) reads as an RFC 1421 or OpenPGP header's start (`Proc-Type:`, `Version:`). */
function isHeader(b: Uint8Array, from: number, to: number): boolean {
  if (to - from < 3 || LETTER[b[from]!] !== 1) return false;
  let k = from + 1;
  while (k < to && k - from <= 31 && HEADER_NAME[b[k]!] === 1) k++;
  return k < to && b[k] === 58 && k - from >= 2;
}

export interface UnmarkedBlock {
  /** The armour line, then the lines after it without their mark, joined by `\n` ("" where none was read). */
  text: string;
  /** How far the reading read in the text. */
  readTo: number;
}

/**
 * A PEM block's first lines read without the mark a tool put on each: the
 * armour b[armourStart, armourEnd) (dashes to dashes), then each line after
 * it that carries the armour line's mark (markEnd) before it and the same
 * bytes after it, the mark dropped, up to the first that is neither a
 * header nor blank (the body's first line). Nothing where the armour line
 * carries no mark (the rule reads that block as it is) or the next line
 * does not carry it. Reads at most LINES_MAX lines: a line is read by the
 * armour before it only, or by two where one holds the next armour. The
 * reading is written into `into`, the caller's, which every armour reuses
 * (an armour every few bytes is adversarial input's: no object, no array
 * per armour).
 */
export function unmarkedBlock(text: string, b: Uint8Array, armourStart: number, armourEnd: number, end: number, into: UnmarkedBlock): UnmarkedBlock {
  into.text = "";
  into.readTo = armourEnd;
  let lineStart = armourStart;
  while (lineStart > 0 && armourStart - lineStart <= MARK_BEFORE_MAX && b[lineStart - 1] !== 10 && b[lineStart - 1] !== 13) lineStart--;
  if (armourStart - lineStart > MARK_BEFORE_MAX) return into;
  let after = armourEnd;
  while (after < end && after - armourEnd <= MARK_AFTER_MAX && breakLength(b, after) === 0) after++;
  const afterLength = after - armourEnd;
  if (afterLength > MARK_AFTER_MAX || after >= end || (lineStart === armourStart && afterLength === 0)) return into;
  let read = text.slice(armourStart, armourEnd);
  let at = after + breakLength(b, after);
  for (let n = 0; n < LINES_MAX && at < end; n++) {
    const from = markEnd(b, lineStart, armourStart, at, Math.min(end, at + MARK_BEFORE_MAX));
    if (from < 0) break;
    let lineEnd = from;
    const limit = Math.min(end, from + LINE_MAX);
    while (lineEnd < limit && breakLength(b, lineEnd) === 0) lineEnd++;
    let to = lineEnd;
    // A line read to its end carries the armour line's mark after it; one longer than LINE_MAX is a body's, read as it is.
    if (lineEnd < limit || lineEnd === end) {
      to = lineEnd - afterLength;
      if (to < from) break;
      let same = true;
      for (let k = 0; k < afterLength && same; k++) same = b[to + k] === b[armourEnd + k];
      if (!same) break;
    }
    read += "\n" + text.slice(from, to);
    at = lineEnd + breakLength(b, lineEnd);
    if (to > from && !isHeader(b, from, to)) {
      into.text = read;
      break;
    }
  }
  into.readTo = at;
  return into;
}

/** Whether `c` ends a line (LF or CR). */
const isBreak = (c: number) => c === 10 || c === 13;

/**
 * grep's mark on a context line when it numbers lines (`grep -n -A`, `-B`,
 * `-C`): `path-N-` at the line's start, the `-` after the number glued to
 * the line's first word (`notes.md-15-ghp_…`, where its match line reads
 * `notes.md:14:`). A vendor word's token starts after it as after grep's
 * `:` (find.ts's connector pass and its words; the literals' triggers do
 * not ask). The path is at most MARK_BEFORE_MAX bytes and holds no blank,
 * tab or colon. Read back from the bytes (GrepContextMarks) and in
 * rules.ts's token look-behind (GREP_CONTEXT_ENDS_BEFORE), which agree.
 */
export const GREP_CONTEXT_ENDS_BEFORE = `(?<=(?:^|[\\n\\r])[^\\s:]{1,${MARK_BEFORE_MAX}}-[0-9]{1,9}-)`;

/**
 * Tells grep's context mark from the bytes. Whether a line is a path up to
 * a place is read back from it to the line's start, or to the place asked
 * last when that lies on the same line (its verdict remembered): a search's
 * calls, in increasing order, read each byte once at most, and prose's
 * `-12-` stops at the blank before it.
 */
export class GrepContextMarks {
  /** The place asked last, and its line's start when a path leads up to it (-1: none does). */
  private at = -1;
  private lineStart = -1;

  /** Whether grep's context mark `path-N-` ends with the `-` at `f`. */
  endsAt(b: Uint8Array, f: number): boolean {
    if (b[f] !== 45 || DIGIT[b[f - 1]!] !== 1) return false;
    let k = f - 1;
    while (k > 0 && f - k < 9 && DIGIT[b[k - 1]!] === 1) k--;
    return b[k - 1] === 45 && this.isPathBefore(b, k - 1);
  }

  /** Whether b[its line's start, at) is a path: 1 to MARK_BEFORE_MAX bytes, no blank, tab or colon. */
  private isPathBefore(b: Uint8Array, at: number): boolean {
    const stop = Math.max(0, at - MARK_BEFORE_MAX);
    const known = this.at <= at && this.at >= stop ? this.at : -1;
    let lineStart = -1;
    let k = at;
    for (; k > stop && k !== known; k--) {
      const c = b[k - 1]!;
      if (isBreak(c) || c === 32 || c === 9 || c === 58) break;
    }
    if (k === known) lineStart = this.lineStart;
    else if (k === 0 || isBreak(b[k - 1]!)) lineStart = k;
    this.at = at;
    this.lineStart = lineStart;
    return lineStart >= 0 && at > lineStart && at - lineStart <= MARK_BEFORE_MAX;
  }
}
