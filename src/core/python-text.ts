// Reading text as the gateway's Python reads it. The gateway (Hermes) reads
// its settings with str.strip() and float(); JavaScript's trim() and Number()
// differ at the edges (U+001C-U+001F and U+0085 are Python whitespace, U+FEFF
// is not; float() takes digit underscores, `inf`, `nan` and any Unicode
// decimal digit). Every part that must read a value as the gateway does asks
// this module, never its own copy. Linear in the input.

/** Python's str.isspace() characters (3.11): what str.strip() removes. */
const PY_SPACE = /[\t\n\v\f\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/;

/** Whether `ch` is whitespace to Python's str.isspace(). */
export function isPythonSpace(ch: string): boolean {
  return ch.length > 0 && PY_SPACE.test(ch);
}

/** `s.strip()` as Python does it. */
export function pythonStrip(s: string): string {
  let start = 0;
  let end = s.length;
  while (start < end && PY_SPACE.test(s[start]!)) start++;
  while (end > start && PY_SPACE.test(s[end - 1]!)) end--;
  return s.slice(start, end);
}

/** The whitespace float() strips around a number: str.isspace() but U+001C-U+001F. */
const FLOAT_SPACE = /[\t\n\v\f\r\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/;

const DECIMAL = /\p{Nd}/u;

/**
 * The value of a Unicode decimal digit (Numeric_Type=Decimal): Unicode encodes
 * them in contiguous runs of ten, 0 to 9, so the value is the distance from the
 * run's start modulo 10. A run is at most a few dozen long (the mathematical
 * digits: 50): bounded.
 */
function digitValue(ch: string): number | undefined {
  const cp = ch.codePointAt(0)!;
  if (cp >= 0x30 && cp <= 0x39) return cp - 0x30;
  if (!DECIMAL.test(ch)) return undefined;
  let start = cp;
  while (start > 0 && DECIMAL.test(String.fromCodePoint(start - 1))) start--;
  return (cp - start) % 10;
}

/**
 * Python's float(s), or undefined where it raises ValueError: surrounding
 * whitespace (not U+001C-U+001F: the gateway's strip() has removed those), a sign, `inf`/`infinity`/`nan` in any case, digits (any
 * Unicode decimal digit) with single underscores between digits, a decimal
 * point and an exponent. Rounding is JavaScript's Number() of the ASCII
 * form, which is IEEE round-to-nearest like Python's.
 */
export function pythonFloat(s: string): number | undefined {
  // float() turns Unicode whitespace and decimal digits to ASCII, then strips.
  // float() strips less than str.strip(): not U+001C-U+001F.
  let start = 0;
  let end = s.length;
  while (start < end && FLOAT_SPACE.test(s[start]!)) start++;
  while (end > start && FLOAT_SPACE.test(s[end - 1]!)) end--;
  const chars: string[] = [];
  for (const ch of s.slice(start, end)) {
    const d = digitValue(ch);
    chars.push(d === undefined ? ch : String(d));
  }
  const ascii = chars.join("");
  const special = /^([+-]?)(inf|infinity|nan)$/i.exec(ascii);
  if (special) {
    if (special[2]!.toLowerCase() === "nan") return Number.NaN;
    return special[1] === "-" ? -Infinity : Infinity;
  }
  // Underscores only between two digits; then the plain decimal form.
  if (!/^[+-]?(?:\d(?:_?\d)*)?(?:\.(?:\d(?:_?\d)*)?)?(?:[eE][+-]?\d(?:_?\d)*)?$/.test(ascii)) return undefined;
  const plain = ascii.replace(/_/g, "");
  if (!/\d/.test(plain.split(/[eE]/)[0]!)) return undefined;
  return Number(plain);
}

/** Python's max(0.0, x): the first argument unless x is greater (so NaN gives 0). */
export function pythonMaxZero(x: number): number {
  return x > 0 ? x : 0;
}
