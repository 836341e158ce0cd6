// What a credential value looks like, and what a placeholder looks like. Used
// by the rules (a vendor prefix followed by "xxxx" is documentation) and by
// the known-secret loader (which .env values are worth looking for).

const counts = new Uint16Array(256);

/** Shannon entropy of `text` (one character per byte), in bits per character. */
export function entropy(text: string): number {
  let bits = 0;
  for (let i = 0; i < text.length; i++) counts[text.charCodeAt(i) & 0xff]!++;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i) & 0xff;
    const n = counts[c]!;
    if (n === 0) continue;
    const p = n / text.length;
    bits -= p * Math.log2(p);
    counts[c] = 0;
  }
  return bits;
}

const pairSeen = new Uint8Array(1 << 16);
const pairTouched = new Uint16Array(256);

/** Share of the character pairs of `text`'s first 64 characters that are distinct: ~1 for a random string, low for a repeated pattern. */
function distinctPairs(text: string): number {
  const n = Math.min(text.length, 64);
  if (n < 3) return 1;
  let distinct = 0;
  for (let i = 1; i < n; i++) {
    const pair = ((text.charCodeAt(i - 1) & 0xff) << 8) | (text.charCodeAt(i) & 0xff);
    if (pairSeen[pair] === 0) {
      pairSeen[pair] = 1;
      pairTouched[distinct++] = pair;
    }
  }
  for (let i = 0; i < distinct; i++) pairSeen[pairTouched[i]!] = 0;
  return distinct / (n - 1);
}

/**
 * Words and marks that documentation puts where a real value would go.
 * Matched in the lower-cased value; a random token of 64 characters holds one
 * of these four-letter runs with a probability under 1e-5.
 */
const PLACEHOLDER_MARKS = [
  "your",
  "example",
  "placeholder",
  "changeme",
  "change_me",
  "change-me",
  "replace",
  "redacted",
  "dummy",
  "sample",
  "insert",
  "xxxx",
  "****",
  "....",
  "\u2026",
  "\xe2\x80\xa6", // the same ellipsis, as UTF-8 bytes read one per character
  "<",
  ">",
  "${",
  "{{",
  "%(",
  "$(",
  "todo",
  "fixme",
  "here",
  "secret",
  "password",
  "passwd",
  "api_key",
  "apikey",
  "token_",
  "process.env",
  "environ",
  "getenv",
  "12345678",
  "abcdefgh",
];

/** True when `value` reads as a placeholder rather than a real credential. */
export function isPlaceholder(value: string): boolean {
  const v = value.toLowerCase();
  if (v.startsWith("$") || v.startsWith("%") || v.startsWith("@")) return true;
  for (const mark of PLACEHOLDER_MARKS) if (v.includes(mark)) return true;
  return false;
}

/**
 * True when `body` (a token without its vendor prefix) looks random: enough
 * distinct characters for its length, and no placeholder in it.
 */
export function looksRandom(body: string): boolean {
  if (body.length < 8) return false;
  // A random string over 16+ symbols reaches log2(length) bits for short bodies and ~4 beyond.
  const floor = Math.min(3.0, 0.7 * Math.log2(body.length));
  // Cheapest test first: a repeated pattern fails on its pairs.
  return distinctPairs(body) >= 0.6 && entropy(body) >= floor && !isPlaceholder(body);
}

const DIGIT = /[0-9]/;
const MEMBER_EXPRESSION = /^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+$/;
const LETTER = /[A-Za-z]/;

/**
 * A value of a name that says key, token or secret is a credential when it
 * is a long random-looking token: at least 16 characters from a token
 * alphabet, letters and digits both, no placeholder.
 */
export function looksLikeTokenValue(value: string): boolean {
  return value.length >= 16 && /^[A-Za-z0-9_\-+/=.~]+$/.test(value) && DIGIT.test(value) && LETTER.test(value) && !CAMEL_WORDS.test(value) && looksRandom(value);
}

/**
 * Three or more capitalised words (`Ipv6CidrAssociations`, an API's field
 * name in its documentation): an identifier, not a token. A random token of
 * 20 letters and digits reads so with a probability of about 1e-5.
 */
const CAMEL_WORDS = /^(?:[A-Z][a-z]+[0-9]*){3,}$/;

/**
 * A path (`PWD=/home/me/app`, `C:\\Users\\me`): an environment dump's working
 * directory, not a password. Only path characters: a password with a symbol
 * besides them still counts.
 */
const PATH = /^(?:(?:~|\.\.?)?\/|[A-Za-z]:[\\/])[\w.~\/\\-]*$/;
/**
 * The example passwords documentation writes (`password: 'secret123'`,
 * `DB_PASSWORD=admin123`, `P@ssw0rd1`): a stock word, a separator, up to
 * four digits and a mark.
 */
const EXAMPLE_PASSWORD = /^(?:my|super)?(?:secret|password|passw0rd|p@ssw0rd|p@ssword|pass|admin|test|demo|example|sample|foobar|changeit|hunter)[-_.!@#]?\d{0,4}[!.]?$/i;

/**
 * A password needs less: 8 characters or more, letters and a digit or a
 * symbol, no placeholder, not one character repeated, not a path, not one
 * of documentation's example passwords.
 */
export function looksLikePassword(value: string): boolean {
  if (value.length < 8 || distinctPairs(value) < 0.6 || /\s/.test(value)) return false;
  if (PATH.test(value) || EXAMPLE_PASSWORD.test(value)) return false;
  // A digit or a symbol besides `.` and `_`, and not code (`o.password`, `this.pwd_`).
  if (!LETTER.test(value) || !/[^A-Za-z._$]/.test(value) || MEMBER_EXPRESSION.test(value)) return false;
  return entropy(value) >= 2.5 && !isPlaceholder(value);
}
