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
  "abc123",
];

/** The marks as one case-insensitive expression: a single pass over a value, and no lower-cased copy of it. */
const PLACEHOLDER = new RegExp(PLACEHOLDER_MARKS.map((mark) => mark.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|"), "i");

/** True when `value` reads as a placeholder rather than a real credential. */
export function isPlaceholder(value: string): boolean {
  const first = value.charCodeAt(0);
  // `$NAME`, `%NAME%`, `@secret`: a reference to where the value is kept.
  if (first === 0x24 || first === 0x25 || first === 0x40) return true;
  return PLACEHOLDER.test(value);
}

/**
 * Words a template writes in place of a value (`your-api-key-here`,
 * `replace_with_your_token`, `secret-key`): a value made of these only is
 * no one's credential.
 */
const TEMPLATE_WORDS = new Set([
  "your", "my", "the", "a", "an", "here", "goes", "put", "enter", "insert", "paste", "replace", "with", "me", "change", "changeme", "example", "sample",
  "dummy", "fake", "placeholder", "redacted", "todo", "fixme", "tbd", "none", "null", "empty", "unset", "not", "set", "secret", "password", "passwd",
  "pass", "key", "api", "apikey", "token", "access", "value", "test",
]);
/** Template words that say placeholder beside any other words of letters (`your-openai-key-here`, `insert_slack_token`). */
const TEMPLATE_MARKS = new Set(["your", "here", "insert", "paste", "replace", "changeme", "example", "sample", "dummy", "placeholder", "redacted", "todo", "fixme", "tbd"]);
/** A piece of a vendor's prefix before a filler (`sk`, `ant`, `api03`, `v1`, `xoxb`): letters and at most two digits. */
const PREFIX_WORD = /^[a-z]{1,8}[0-9]{0,2}$/;
const LETTERS = /^[a-z]+$/;
/**
 * A reference to where a value is kept, as a whole value: `${NAME}`,
 * `${NAME:-default}`, `$NAME` and `%NAME%` of a variable's name in capitals
 * (`$Hn5vQ9x…` is a password: python-dotenv expands no `$NAME`, Hermes holds
 * it as it is), `{{ name }}`, `$(command)`, `<your key>`.
 */
const REFERENCE = /^(?:\$\{[^}]*\}|\$[A-Z_][A-Z0-9_]*|%[A-Z_][A-Z0-9_]*%|\{\{[^}]*\}\}|\$\([^)]*\)|<[^<>]*>)$/;
/** What fills a template's place for a key: four or more `x`, `*`, `.`, `…`, `#`, `-` or `_` in a row. */
const FILLER = /x{4,}|[*.#_-]{4,}|\.{3}|\u2026/gi;

/**
 * True when `value`, one the host itself holds (its .env's, a store's, an
 * environment's), is wholly a placeholder or a reference: a template's
 * words only (`your-key-here`, `secret-key`, `changeme`), filler after a
 * vendor's prefix (`sk-xxxxxxxx`, `sk-or-v1-...`, `ghp_XXXX`, `********`),
 * a reference (REFERENCE), one character repeated, a run of the alphabet or
 * the digits (`12345678`, `abcdefgh`), or documentation's stock password
 * (`password`, `admin123`). Not isPlaceholder, which judges a generic
 * assignment in a file and is right to read any `<`, `{{`, `here` or
 * `abc123` inside a value so: a real password holds those as often as a
 * generator's symbols allow (`Kp7<vR2x…`, `@Hn5v…`), and the host's own
 * value is looked for unless nothing of it could be a secret.
 */
export function isPlaceholderValue(value: string): boolean {
  if (REFERENCE.test(value) || isExamplePassword(value) || isRun(value.toLowerCase())) return true;
  let filled = -1;
  const words: string[] = [];
  // The filler's runs cut the value into words too (`AKIAXXXXXXXX`: `akia`, then filler); `-1` marks where the first was.
  for (const piece of value.toLowerCase().replace(FILLER, " \u0000 ").split(/[^a-z0-9\u0000]+/)) {
    if (piece === "\u0000") {
      if (filled < 0) filled = words.length;
    } else if (piece !== "") words.push(piece);
  }
  if (filled >= 0) {
    // Filler, then nothing but template words: a vendor's prefix before it.
    return words.every((word, i) => (i < filled ? PREFIX_WORD.test(word) : TEMPLATE_WORDS.has(word)));
  }
  if (words.length === 0) return false;
  if (words.every((word) => TEMPLATE_WORDS.has(word))) return true;
  return words.some((word) => TEMPLATE_MARKS.has(word)) && words.every((word) => TEMPLATE_WORDS.has(word) || LETTERS.test(word));
}

/** One character repeated, or a run of the alphabet, the digits or a keyboard's row (`aaaaaaaa`, `12345678`, `abcdefgh`, `qwertyui`). */
function isRun(lower: string): boolean {
  if (lower.length === 0) return false;
  let same = true;
  for (let i = 1; i < lower.length && same; i++) same = lower[i] === lower[0];
  return same || RUNS.some((run) => run.includes(lower));
}
const RUNS = ["abcdefghijklmnopqrstuvwxyz", "0123456789", "1234567890", "qwertyuiopasdfghjklzxcvbnm"];

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
/** Code: `o.password`, `matchResult?.pass`, `!this.result.issues`, `base64.urlsafe_b64decode`. */
const MEMBER_EXPRESSION = /^!*[A-Za-z_$][\w$]*(?:\??\.[A-Za-z_$][\w$]*)+$/;
const LETTER = /[A-Za-z]/;

/**
 * A value of a name that says key, token or secret is a credential when it
 * is a long random-looking token: at least 16 characters from a token
 * alphabet, letters and digits both, no placeholder.
 */
export function looksLikeTokenValue(value: string): boolean {
  return value.length >= 16 && /^[A-Za-z0-9_\-+/=.~]+$/.test(value) && DIGIT.test(value) && LETTER.test(value) && !looksLikeCode(value) && !isPublicKey(value) && looksRandom(value);
}

/**
 * An identifier or an expression of them: `Ipv6CidrAssociations`, `gnutls_x509_crt_verify_data2`
 * (also `_private_key_pkcs12`, `google_oauth2_flow_`: a private name, a prefix), `base64.urlsafe_b64decode`,
 * `0x7EC2DBB6F4DBF434`; a resource's path (`projects/my-project/locations/global/keyRings/my-ring/cryptoKeys/my-key`);
 * a time-based UUID.
 */
const looksLikeCode = (value: string) =>
  CAMEL_WORDS.test(value) || SNAKE_WORDS.test(withoutOuterUnderscores(value)) || HEX_NUMBER.test(value) || MEMBER_EXPRESSION.test(value) || isResourcePath(value) || TIME_UUID.test(value);

/** `value` without the `_` runs at its ends (a loop: a regex anchored at the end is tried from every `_`). */
function withoutOuterUnderscores(value: string): string {
  let from = 0;
  let to = value.length;
  while (from < to && value.charCodeAt(from) === 95) from++;
  while (to > from && value.charCodeAt(to - 1) === 95) to--;
  return from === 0 && to === value.length ? value : value.slice(from, to);
}

/**
 * A version 1 UUID (`e2bfb730-ecaa-11e6-8f88-34363bc7c4c0`, a constant terraform's
 * SDK uses as a map key): a clock reading and a network address, nothing random
 * to guess. A UUID issued as a key is a random one (version 4), which still counts.
 */
const TIME_UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-1[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$/;

/** A segment of a resource's path: lower-case letters, digits, `-` and `_`, starting with a letter (`my-project`, `us-central1-a`). */
const PATH_WORD = /^[a-z][a-z0-9_-]{0,62}$/;

/**
 * A path of words (`projects/my-project/locations/global/keyRings/my-keyring/cryptoKeys/my-key`,
 * `zones/us-central1-a`: a cloud resource's name that a `--kms-key=` flag or an
 * API's documentation gives): two or more segments, each lower-case words or a
 * collection's name in camel case (`keyRings`). Base64 holds `/` too, but 16 or
 * more of its characters fall in lower case and digits with a probability
 * under 1e-4, and camel case asks a small letter after each capital.
 */
function isResourcePath(value: string): boolean {
  const from = value.charCodeAt(0) === 47 ? 1 : 0;
  const segments = value.slice(from).split("/");
  if (segments.length < 2) return false;
  for (const segment of segments) if (!PATH_WORD.test(segment) && !isLowerCamel(segment)) return false;
  return true;
}

/** `keyRings`, `cryptoKeys`: a small letter first, and a small letter after every capital. */
function isLowerCamel(word: string): boolean {
  if (word.length < 2 || word.length > 63) return false;
  let c = word.charCodeAt(0);
  if (c < 97 || c > 122) return false;
  for (let i = 1; i < word.length; i++) {
    c = word.charCodeAt(i);
    if (c >= 97 && c <= 122) continue;
    if (c < 65 || c > 90) return false;
    const next = word.charCodeAt(i + 1);
    if (!(next >= 97 && next <= 122)) return false;
  }
  return true;
}

/** The key types an OpenSSH public key (`AAAAB3NzaC1yc2E…`, base64 of a length and `ssh-rsa`) opens with. */
const SSH_KEY_TYPE = /^\0\0\0[\x07-\x30](?:ssh-|ecdsa-|sk-)/;

/**
 * A public key in base64, so no credential: OpenSSH's (`--key='AAAAB3NzaC1yc2E…'`),
 * or a DER SubjectPublicKeyInfo (`MFkwEwYHKoZIzj0CAQYI…`, the signing keys a
 * package manager pins): a SEQUENCE whose first element is the algorithm's
 * SEQUENCE, opening with its OID. Every DER private key (PKCS #8, PKCS #1,
 * SEC 1) opens with a version INTEGER there instead.
 */
function isPublicKey(value: string): boolean {
  if (value.startsWith("AAAA")) return SSH_KEY_TYPE.test(Buffer.from(value.slice(0, 24), "base64").toString("latin1"));
  if (!value.startsWith("M")) return false;
  const der = Buffer.from(value.slice(0, 24), "base64");
  // The outer SEQUENCE's length: one byte, or 0x81 to 0x83 and that many bytes.
  const lengthBytes = der[1]! < 0x80 ? 0 : der[1]! - 0x80;
  if (lengthBytes > 3) return false;
  const inner = 2 + lengthBytes;
  return der[0] === 0x30 && der[inner] === 0x30 && der[inner + 1]! < 0x80 && der[inner + 2] === 0x06;
}

/**
 * An identifier, not a token: three or more words, each a capital and two or
 * more small letters, a capital, a small letter and digits (`Ed25519`), or
 * capitals before the next word (`PKCS12`), with five small letters in a row
 * somewhere: `Ipv6CidrAssociations` (an API's field in its documentation),
 * `PKCS12PrivateKeyTypes` (a Python signature's type). Over 3 million random
 * tokens of letters and digits each, 3e-4 read so at 16 characters, 1.4e-4
 * at 20 and 6e-5 at 24, where the test before (words of a capital and small
 * letters) took 1e-3, 3e-4 and 9e-5 and knew 23% of the identifiers with a
 * digit in this machine's code, where this one knows 42% (2026-12-04).
 */
const CAMEL_WORDS = /^(?=.*[a-z]{5})(?:[A-Z]{2,}[0-9]*(?=[A-Z][a-z])|[A-Z][a-z]{2,}[0-9]*|[A-Z][a-z][0-9]+(?=[A-Z][a-z])){3,}$/;

/** A 64-bit number written in hex (`GnuPG key: 0x7EC2DBB6F4DBF434`, a key's id): no credential is that short. */
const HEX_NUMBER = /^0[xX][0-9A-Fa-f]{1,16}$/;

/**
 * Three or more words of one case joined by `_` (`gnutls_x509_crt_verify_data2`,
 * a function a changelog's test output names after `rsa pss key:`): an
 * identifier. A random token of 16 or more characters over letters of both
 * cases reads so with a probability under 1e-4.
 */
const SNAKE_WORDS = /^(?:[a-z]+[0-9]*_){2,}[a-z]+[0-9]*$|^(?:[A-Z]+[0-9]*_){2,}[A-Z]+[0-9]*$/;

/**
 * A path (`PWD=/home/me/app`, `C:\\Users\\me`): an environment dump's working
 * directory, not a password. Only path characters: a password with a symbol
 * besides them still counts.
 */
const PATH = /^(?:(?:~|\.\.?)?\/|[A-Za-z]:[\\/])[\w.~\/\\-]*$/;
/** A URL without user information (`'Test2::Event::Pass' => 'http://github.com/…'`): a link, not a password. */
const URL_WITHOUT_USER = /^[A-Za-z][A-Za-z0-9+.-]{1,15}:\/\/[^@]*$/;
/**
 * The example passwords documentation writes (`password: 'secret123'`,
 * `DB_PASSWORD=admin123`, `P@ssw0rd1`, FTP's anonymous `-anonymous@`): a
 * stock word, a separator, up to four digits and a mark.
 */
const EXAMPLE_PASSWORD = /^-?(?:my|super)?(?:secret|password|passw0rd|p@ssw0rd|p@ssword|p4ssw0rd|p4ssword|pass|admin|test|demo|example|sample|foobar|changeit|hunter|anonymous)[-_.!@#]?\d{0,4}[!.]?$/i;

/** Whether `password` is one of documentation's example passwords (`p4ssw0rd`, `secret123`): the URL rules ask it too. */
export const isExamplePassword = (password: string) => EXAMPLE_PASSWORD.test(password);

/** A word and a colon (`_password: DEPRECATED: For improved security…`, an API's field list): a label, not a password. */
const LABEL = /^[A-Za-z]{1,64}:$/;

/**
 * A password needs less: 8 characters or more, letters and a digit or a
 * symbol, no placeholder, not one character repeated, not a path, not one
 * of documentation's example passwords.
 */
export function looksLikePassword(value: string): boolean {
  if (value.length < 8 || distinctPairs(value) < 0.6 || /\s/.test(value)) return false;
  if (PATH.test(value) || URL_WITHOUT_USER.test(value) || EXAMPLE_PASSWORD.test(value) || LABEL.test(value)) return false;
  // A digit or a symbol besides `.` and `_`, and not code (`o.password`, `this.pwd_`).
  if (!LETTER.test(value) || !/[^A-Za-z._$]/.test(value) || MEMBER_EXPRESSION.test(value)) return false;
  return entropy(value) >= 2.5 && !isPlaceholder(value);
}
