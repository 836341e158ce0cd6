// Which names hold secrets, and which variables of an environment may: the
// rules the content check (rules.ts, a generic `NAME = value` in a file),
// the known secrets (known.ts, a .env's and an environment's variables) and
// the gate's client (gate/client.ts, which of its environments' variables it
// sends the gate) all ask. No imports, and no table built at load beyond a
// few words: the gate's client bundle, loaded for every prepare, holds it.

// A generic assignment's name says key, token, secret or password: find.ts
// looks for these keywords' endings in a file.
const KEYWORDS = ["key", "token", "secret", "password", "passwd", "pwd", "passphrase", "pass", "credentials", "credential"];
const COMPOUND_PREFIXES = ["api", "access", "secret", "private", "auth", "client", "app", "bot", "refresh", "master", "admin", "db", "user", "signing", "encryption", "session", "consumer", "bearer", "identity"];
const KEYWORD_LAST = new Set(KEYWORDS.map((k) => k.charCodeAt(k.length - 1)));
/** The keywords' last four letters (three for a three-letter keyword), lower-cased: a name ending in none of them holds no secret. */
export const KEYWORD_ENDINGS = [...new Set(KEYWORDS.map((k) => k.slice(-4)))];
/** Names that end in a keyword but hold no secret. */
const NOT_SECRET_NAME_RE = /(?:public|publishable|pub|cache|sort|primary|foreign|partition|idempotency|hot|lookup|map|dict|row|hash|shortcut|translation|i18n|registry|object|next|page|continuation|csrf|xsrf|sitekey|metadata|max|min|num|count|total|input|output|prompt|completion|bypass|keypass)[_.-]?(?:[a-z]+[_.-]?)?(?:key|token|secret|pass|password)s?$/i;
/** NOT_SECRET_NAME_RE tried at one index (sticky). */
const NOT_SECRET_NAME_AT = new RegExp(NOT_SECRET_NAME_RE.source, "iy");

/**
 * Whether `name` ends in a key that holds no secret (`cache_key`, `sortKey`,
 * `max_tokens`, `OSLOGIN_ENABLE_2FA_METADATA_KEY`): NOT_SECRET_NAME_RE from a
 * word's start, not inside a word. Tried anywhere, it took `ADMIN_PASSWORD`
 * (`min_password`) and `ACCOUNT_KEY` (`count_key`) for such names and
 * published their values, until 2026-12-05. A name is at most a few dozen
 * characters (find.ts reads at most NAME_MAX), so one try per word is cheap.
 */
export function nameHoldsNoSecret(name: string): boolean {
  // Most names hold none of the list anywhere: one search says so, before a try at each word.
  if (name.length > 256 || !NOT_SECRET_NAME_RE.test(name)) return false;
  for (let at = 0; at < name.length; at++) {
    if (at > 0 && !startsWord(name, at)) continue;
    NOT_SECRET_NAME_AT.lastIndex = at;
    if (NOT_SECRET_NAME_AT.test(name)) return true;
  }
  return false;
}

/** A word of a name starts at `at`: after a character that is no letter or digit, or a capital after a small letter or digit (`sortKey`). */
const startsWord = (name: string, at: number) => !isWordChar(name.charCodeAt(at - 1)) || (isLowerOrDigit(name.charCodeAt(at - 1)) && isUpper(name.charCodeAt(at)));

export const isWordChar = (c: number) => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
const isUpper = (c: number) => c >= 65 && c <= 90;
const isLowerOrDigit = (c: number) => (c >= 48 && c <= 57) || (c >= 97 && c <= 122);

/** True when `name` ends in a keyword that starts a word of it: `API_KEY`, `apiKey`, `apikey`, `db.password`; not `monkey`. */
export function nameSaysSecret(name: string): boolean {
  // Every keyword ends in one of these letters: most names are turned down here.
  if (!KEYWORD_LAST.has(name.charCodeAt(name.length - 1) | 0x20)) return false;
  const lower = name.toLowerCase();
  for (const kw of KEYWORDS) {
    if (!lower.endsWith(kw)) continue;
    const at = name.length - kw.length;
    if (at === 0 || !isWordChar(name.charCodeAt(at - 1))) return true;
    if (isLowerOrDigit(name.charCodeAt(at - 1)) && isUpper(name.charCodeAt(at))) return true;
    for (const prefix of COMPOUND_PREFIXES) {
      const from = at - prefix.length;
      if (from >= 0 && lower.startsWith(prefix, from) && (from === 0 || !isWordChar(name.charCodeAt(from - 1)))) return true;
    }
  }
  return false;
}

/**
 * A variable whose name says its value is a secret (`*_API_KEY`, `*_TOKEN`),
 * not a setting that names one (`*_KEY_FILE`, `*_TOKEN_PATH`); also with a
 * number or a word of a second or an earlier credential after it
 * (`SMTP_PASSWORD1`, `DB_PASSWORD_2`, `PASSWORD_OLD`, `API_KEY_BACKUP`,
 * `API_KEY_V2`), the name without them judged the same way
 * (`MAX_TOKENS_2`, `PUBLIC_KEY_OLD`: no secret; `PASSWORD_MIN_LENGTH`,
 * `TOKEN_EXPIRY`, `KEY_ID` end in no such word).
 */
export function variableNameSaysSecret(name: string): boolean {
  const base = withoutSuffix(name);
  return nameSaysSecret(base) && !nameHoldsNoSecret(base) && !/_(?:PATH|FILE|DIR)$/i.test(base);
}

/** Words after a secret's name that say which of several it is: another, an older, a spare one. */
const SUFFIX_WORDS = ["old", "new", "prev", "previous", "next", "current", "backup", "bak", "alt", "secondary", "primary", "fallback", "rotated", "legacy", "orig", "original", "v"];

/**
 * `name` without what may follow a secret's name (variableNameSaysSecret):
 * digits (`PASSWORD1`, `_2`), a separator and one of SUFFIX_WORDS before
 * them (`_BACKUP2`, `_V2`, `_OLD`), and digits before that word (`_2_OLD`). Scanned back from the end: no
 * expression tried at each of a long name's digits.
 */
function withoutSuffix(name: string): string {
  let end = withoutDigits(name, name.length);
  // A `_V2` is a version: the V alone says so only before digits.
  for (const word of SUFFIX_WORDS) {
    const at = end - word.length;
    if (at < 2 || !isSeparator(name.charCodeAt(at - 1)) || name.slice(at, end).toLowerCase() !== word) continue;
    if (word === "v" && end === name.length) continue;
    // And a number before the word (`API_KEY_2_OLD`).
    end = withoutDigits(name, at - 1);
    break;
  }
  return end === name.length ? name : name.slice(0, end);
}

/** Where the digits that end `name[0, end)` start, with the separator before them (`_2`, `-2`, `.2`); `end` when none. */
function withoutDigits(name: string, end: number): number {
  let at = end;
  while (at > 0 && name.charCodeAt(at - 1) >= 48 && name.charCodeAt(at - 1) <= 57) at--;
  if (at === end || at === 0) return end;
  return at > 1 && isSeparator(name.charCodeAt(at - 1)) ? at - 1 : at;
}

const isSeparator = (c: number) => c === 95 || c === 45 || c === 46;

/** A value that is a path (absolute, home-relative or relative): a file's name, not a credential. */
export const PATH_LIKE = /^(?:[/~]|\.\.?\/)/;

/** A URL with a password: the password. */
export const USERINFO = /^[a-z][a-z0-9+.-]*:\/\/[^\s:/@]*:([^\s/@]+)@/i;

/** An Authorization header's value: its scheme, then the credential (looked for in a variable whose name says auth). */
export const AUTH_SCHEME = /^(?:Bearer|Basic|Token|Bot)[ \t]+(\S+)$/i;
export const namesAuthorization = (name: string) => /auth/i.test(name);

/** Standard base64, padded: what a Basic credential is written in. */
const BASE64_TEXT = /^[A-Za-z0-9+/]+={0,2}$/;

/** The password of `user:password` in base64, when `value` is that (a Basic credential), else undefined. */
export function basicPassword(value: string): string | undefined {
  if (value.length % 4 !== 0 || value.length > 4096 || !BASE64_TEXT.test(value)) return undefined;
  const decoded = Buffer.from(value, "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  // Printable text only: any base64 string decodes to some bytes.
  if (colon <= 0 || colon === decoded.length - 1 || !/^[\x20-\x7e\u00a0-\uffff]+$/.test(decoded) || decoded.includes("\ufffd")) return undefined;
  return decoded.slice(colon + 1);
}

/**
 * Whether a variable of an environment may hold a secret: by its name only
 * (an environment is full of settings whose values look random:
 * INVOCATION_ID, a session's cookie name), or a URL's password, or an
 * Authorization header's credential or a Basic credential kept encoded; never a path, whatever its variable is
 * called (GIT_ASKPASS). known.ts judges the variables this lets through (how
 * long, a placeholder); it finds nothing in one this turns down, so the gate's
 * client sends only these.
 */
export function environmentEntryMayHoldSecret(name: string, value: string): boolean {
  if (PATH_LIKE.test(value)) return false;
  return variableNameSaysSecret(name) || (value.includes("://") && USERINFO.test(value)) || (namesAuthorization(name) && (AUTH_SCHEME.test(value) || basicPassword(value) !== undefined));
}
