// The credential formats that must never leave, as one combined regular
// expression over text viewed one character per byte (UTF-8 bytes read as
// Latin-1: as cheap as a copy, and every pattern is ASCII, so a multi-byte
// character only ever reads as non-word characters).
//
// Linear time. V8's regular expressions backtrack, so each pattern is built
// to do bounded work wherever a match attempt starts, and to start only where
// a run of its alphabet starts:
// - every repetition is bounded ({m,n}), or is followed by a character that
//   its class cannot hold, so a failed attempt gives back at most n
//   characters once, never nested;
// - a token pattern starts with TOKEN_START, a look-behind that refuses to
//   start inside a run of the token alphabet. A run of `eyJ-eyJ-…` is then
//   tried once, from its first character, not once per `eyJ` (which made the
//   old JWT pattern quadratic: 20 s for 512 KiB);
// - a pattern that starts with a literal holds, after it, only classes that
//   exclude that literal's first character or bounded repetitions.
// So the work per start is bounded by the pattern's longest match (under
// 4 KiB, see MAX_MATCH), and a run of the alphabet is started once; test/
// content-rules.test.ts feeds every pattern repetitions of its prefix and
// long runs of its alphabet, and bench/content.mjs times the worst of them.
import { isPlaceholder, looksLikePassword, looksLikeTokenValue, looksRandom } from "./shape.js";

/** No match of any rule is longer than this: the scanner's block overlap must be at least this. */
export const MAX_MATCH = 4000;

const T = "A-Za-z0-9_\\-";
/** A token starts a run of the token alphabet (letters, digits, `_`, `-`). */
const TOKEN_START = `(?<![${T}])`;
/** … and ends it. */
const TOKEN_END = `(?![${T}])`;
const token = (body: string) => `${TOKEN_START}${body}${TOKEN_END}`;
/** Spaces and tabs, and the JSON escapes of line breaks. */
const NL = "(?:\\r?\\n|\\\\r?\\\\n)";

/** `aws` -> `[aA][wW][sS]`: case-insensitivity for one pattern inside a combined, case-sensitive regex. */
const anyCase = (word: string) => [...word].map((c) => (/[a-z]/i.test(c) ? `[${c.toLowerCase()}${c.toUpperCase()}]` : c)).join("");

export interface Rule {
  /** Stable identifier (tests, the bench). */
  id: string;
  /** What the refusal says was found: the kind, never the value. */
  what: string;
  source: string;
  /** Judges a match of at most MAX_MATCH characters; false lets the scan go on. */
  check?: (match: string, text: string, index: number) => boolean;
  /**
   * The two characters a match starts with (find.ts tries the rule only
   * where a token starts with one of them), or how else it is found.
   */
  start: string[] | "literal";
  /** A cheap test of the bytes at the start, before the regex runs (the rules tried at every hex or digit run). */
  guard?: (bytes: Uint8Array, at: number) => boolean;
}

// Documented example values that are published: they open no account.
// README "Documented example values" lists them.
export const DOCUMENTED_EXAMPLES = [
  "AKIAIOSFODNN7EXAMPLE", // AWS's example access key id
  "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", // AWS's example secret access key
  "sk_test_4eC39HqLyjWDarjtT1zdp7dc", // Stripe's documentation test key
  "sk_test_BQokikJOvBiI2HlWgH4olfQ2", // Stripe's older documentation test key
  "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ", // the payload of jwt.io's example token
];
const isDocumented = (match: string) => DOCUMENTED_EXAMPLES.some((e) => match.includes(e));

/** The part of a token after its vendor prefix (the first `len` characters dropped). */
const randomAfter = (len: number) => (match: string) => !isDocumented(match) && looksRandom(match.slice(len).replace(/^[_-]+/, ""));

const PEM_HEADER = "-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----";
/**
 * A PEM block with a body: the armour line, optional RFC 1421 / OpenPGP
 * headers, then 40 base64 characters. An armour line followed by `...` is
 * documentation, not a key.
 */
const PEM_SOURCE = `${PEM_HEADER}(?:[ \\t\\r\\n]|\\\\[rn]){1,8}(?:[A-Za-z][A-Za-z-]{1,30}: ?[^\\r\\n\\\\]{0,200}${NL}){0,6}(?:[ \\t\\r\\n]|\\\\[rn]){0,8}[A-Za-z0-9+/]{40}`;
const pemBodyIsRandom = (match: string) => looksRandom(match.slice(-40));

/** Base64 of `-----BEGIN `, at each of the three alignments it can have inside base64 text. */
export const BASE64_PEM_ANCHORS = [0, 1, 2].map((a) => {
  const header = Buffer.from("-----BEGIN ");
  const encoded = Buffer.concat([Buffer.alloc(a, 0x58), header]).toString("base64");
  return { align: a, first: Math.ceil((8 * a) / 6), text: encoded.slice(Math.ceil((8 * a) / 6), Math.floor((8 * (a + header.length)) / 6)) };
});

/**
 * Decodes base64 text that starts with one of BASE64_PEM_ANCHORS (whitespace
 * and `\n` escapes of wrapped lines dropped) and says whether it is a PEM
 * private key. Certificates and public keys pass.
 */
function base64IsPrivatePem(match: string): boolean {
  const chars = match.replace(/\\[rn]|[^A-Za-z0-9+/]/g, "");
  const anchor = BASE64_PEM_ANCHORS.find((a) => chars.startsWith(a.text));
  if (!anchor) return false;
  // Stand-ins for the characters before the anchor restore the alignment; they garble only the bytes before the header.
  const decoded = Buffer.from("A".repeat(anchor.first) + chars.slice(0, chars.length - ((anchor.first + chars.length) % 4)), "base64").toString("latin1");
  return /^[\s\S]{0,3}----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY/.test(decoded.slice(anchor.align));
}

/** A JWT whose header is JSON naming a real algorithm (an unsigned `alg: none` token is not a credential). */
function isSignedJwt(match: string): boolean {
  if (isDocumented(match)) return false;
  const start = match.indexOf("eyJ");
  const header = match.slice(start, match.indexOf(".", start));
  try {
    const parsed = JSON.parse(Buffer.from(header, "base64url").toString("utf8")) as { alg?: unknown };
    return typeof parsed.alg === "string" && parsed.alg.toLowerCase() !== "none";
  } catch {
    return false;
  }
}

/** A Discord bot token's first part is the bot's user id (a snowflake), base64-encoded. */
function isDiscordToken(match: string): boolean {
  const id = Buffer.from(match.slice(0, match.indexOf(".")), "base64url").toString("latin1");
  return /^[0-9]{17,20}$/.test(id) && looksRandom(match.slice(match.lastIndexOf(".") + 1));
}

/** `scheme://user:password@host`: a password that is neither a placeholder nor the user name again. */
function urlPassword(match: string): boolean {
  const userinfo = match.slice(match.indexOf("://") + 3, match.lastIndexOf("@"));
  const colon = userinfo.indexOf(":");
  const user = userinfo.slice(0, colon);
  const password = decodeURIComponentSafe(userinfo.slice(colon + 1));
  if (password === user || isPlaceholder(password) || COMMON_DEV_PASSWORDS.has(password.toLowerCase())) return false;
  return password.length >= 8 ? looksLikePassword(password) || looksRandom(password) : false;
}

const COMMON_DEV_PASSWORDS = new Set(["password", "passw0rd", "postgres", "mysql", "secret", "admin", "root", "guest", "changeit", "example", "pass", "test"]);

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** `.netrc`: the word after `password`. */
function netrcPassword(match: string): boolean {
  const password = match.slice(match.lastIndexOf("password") + 8).trim();
  return looksLikePassword(password) || (password.length >= 12 && looksRandom(password));
}

/** `Authorization: Basic|Bearer|Token VALUE`. */
function authorizationValue(match: string): boolean {
  const value = match.slice(match.search(/[ \t][^ \t]+$/) + 1);
  if (/basic/i.test(match.slice(0, match.length - value.length))) {
    const decoded = Buffer.from(value, "base64").toString("latin1");
    const colon = decoded.indexOf(":");
    return colon > 0 && /^[\x20-\x7e]+$/.test(decoded) && looksLikePassword(decoded.slice(colon + 1));
  }
  return !isDocumented(value) && looksLikeTokenValue(value);
}

// Generic assignments: a name that says key, token, secret or password, a
// separator (`=`, `:`, `:=`, `=>`, `>` of an XML element), and a value that
// looks like a credential. find.ts finds them from either end: from a
// password keyword, or from a value that starts a token after a separator;
// either way the name is read back at most NAME_MAX characters and the value
// forward at most VALUE_MAX, so the work per place is bounded.
const KEYWORDS = ["key", "token", "secret", "password", "passwd", "pwd", "passphrase", "pass", "credentials", "credential"];
const COMPOUND_PREFIXES = ["api", "access", "secret", "private", "auth", "client", "app", "bot", "refresh", "master", "admin", "db", "user", "signing", "encryption", "session", "consumer", "bearer"];
export const NAME_MAX = 64;
const KEYWORD_LAST = new Set(KEYWORDS.map((k) => k.charCodeAt(k.length - 1)));
const VALUE_MAX = 256;
/** Names that end in a keyword but hold no secret. */
export const NOT_SECRET_NAME_RE = /(?:public|publishable|pub|cache|sort|primary|foreign|partition|idempotency|hot|lookup|map|dict|row|hash|shortcut|translation|i18n|registry|object|next|page|continuation|csrf|xsrf|sitekey|max|min|num|count|total|input|output|prompt|completion|bypass|keypass)[_.-]?(?:[a-z]+[_.-]?)?(?:key|token|secret|pass|password)s?$/i;
const isWordChar = (c: number) => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
const isUpper = (c: number) => c >= 65 && c <= 90;
const isLowerOrDigit = (c: number) => (c >= 48 && c <= 57) || (c >= 97 && c <= 122);
/** Characters of an identifier (names may be dotted or dashed: `spring.datasource.password`, `x-api-key`). */
export const isNameChar = (c: number) => isWordChar(c) || c === 95 || c === 45 || c === 46;

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

/** The character code at `i`, 0 outside the text (charCodeAt's NaN there would slow the functions V8 optimised for numbers). */
const code = (text: string, i: number) => text.charCodeAt(i) | 0;
const SPACE = (c: number) => c === 32 || c === 9;
const QUOTE = (c: number) => c === 34 || c === 39 || c === 96;
/** Characters that end an unquoted value: whitespace, quotes, code punctuation. */
const ENDS_VALUE = new Uint8Array(256);
for (const ch of " \t\r\n\v\f\"'`,;<>(){}[]\\&") ENDS_VALUE[ch.charCodeAt(0)] = 1;

/** Where the separator that follows a name ending at `nameEnd` ends, and the value starts; -1 when none follows. */
function valueStart(text: string, nameEnd: number): number {
  let i = nameEnd;
  if (code(text, i) === 92 && QUOTE(code(text, i + 1))) i++;
  if (QUOTE(code(text, i))) i++;
  for (let n = 0; n < 8 && SPACE(code(text, i)); n++) i++;
  const c = code(text, i);
  const next = code(text, i + 1);
  if ((c === 61 && next === 62) || (c === 58 && next === 61)) i += 2;
  else if (c === 61 || c === 58 || c === 62) i++;
  else return -1;
  for (let n = 0; n < 8 && SPACE(code(text, i)); n++) i++;
  if (code(text, i) === 92 && QUOTE(code(text, i + 1))) i++;
  if (QUOTE(code(text, i))) i++;
  return i;
}

/** Characters of a token value (base64 padding `=` only at its end). */
const TOKEN_VALUE = new Uint8Array(256);
for (const ch of "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+/.~") TOKEN_VALUE[ch.charCodeAt(0)] = 1;
const PASSWORD_MAX = 64;

/** Where the value judged by the last assignmentAt call that got that far ends (0 when none). */
export let assignmentValueEnd = 0;

/**
 * Judges the assignment whose name ends at `nameEnd` (the name is read back
 * from there, at most NAME_MAX characters; the value forward, at most
 * VALUE_MAX): true when the name says secret and the value looks like one.
 */
export function assignmentAt(text: string, nameEnd: number): boolean {
  assignmentValueEnd = 0;
  const start = valueStart(text, nameEnd);
  if (start < 0) return false;
  // The value's widest extent first: what the caller need not judge again, and the cheapest refusal (too short).
  let end = start;
  while (end < text.length && end - start < PASSWORD_MAX && ENDS_VALUE[text.charCodeAt(end) & 0xff] === 0) end++;
  assignmentValueEnd = end;
  if (end - start < 8) return false;
  let nameStart = nameEnd;
  while (nameStart > 0 && nameEnd - nameStart < NAME_MAX && isNameChar(text.charCodeAt(nameStart - 1))) nameStart--;
  const name = text.slice(nameStart, nameEnd);
  if (!nameSaysSecret(name) || NOT_SECRET_NAME_RE.test(name)) return false;
  const password = /pass|pwd/i.test(name.slice(-10));
  if (!password) {
    end = start;
    while (end < text.length && end - start < VALUE_MAX && TOKEN_VALUE[text.charCodeAt(end) & 0xff] !== 0) end++;
    for (let pad = 0; pad < 2 && code(text, end) === 61; pad++) end++;
    if (end - start < 16) return false;
  }
  const value = text.slice(start, end);
  if (!(password ? looksLikePassword(value) : looksLikeTokenValue(value))) return false;
  return !isDocumented(value);
}

/**
 * The name end of an assignment whose value starts at `valueAt`, read
 * backwards over a quote, spaces, the separator, spaces and a quote; -1 when
 * what precedes is no separator.
 */
export function nameEndBefore(text: string, valueAt: number): number {
  let i = valueAt;
  if (QUOTE(code(text, i - 1))) i -= code(text, i - 2) === 92 ? 2 : 1;
  for (let n = 0; n < 8 && SPACE(code(text, i - 1)); n++) i--;
  const c = code(text, i - 1);
  if (c === 61 || c === 58 || c === 62) i -= code(text, i - 2) === 61 || code(text, i - 2) === 58 ? 2 : 1;
  else return -1;
  for (let n = 0; n < 8 && SPACE(code(text, i - 1)); n++) i--;
  if (QUOTE(code(text, i - 1))) i -= code(text, i - 2) === 92 ? 2 : 1;
  return i > 0 && isNameChar(code(text, i - 1)) ? i : -1;
}

/** Every two-character start made of one character of `firsts` and one of `seconds`. */
const pairs = (firsts: string, seconds: string) => [...firsts].flatMap((a) => [...seconds].map((b) => a + b));
const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const DIGITS = "0123456789";
const HEX = "0123456789abcdef";

export const RULES: Rule[] = [
  { id: "private-key", what: "a private key block", start: "literal", source: PEM_SOURCE, check: pemBodyIsRandom },
  { id: "ssh2-private-key", what: "a private key block", start: "literal", source: "---- BEGIN SSH2 (?:ENCRYPTED )?PRIVATE KEY ----" },
  { id: "putty-private-key", what: "a PuTTY private key", start: "literal", source: `PuTTY-User-Key-File-[23]: ?[a-z0-9-]{3,40}${NL}Encryption: ?[a-z0-9-]{3,40}` },
  { id: "base64-private-key", what: "a base64-encoded private key", start: "literal", source: `(?:${BASE64_PEM_ANCHORS.map((a) => a.text).join("|")})(?:[A-Za-z0-9+/]|[ \\t\\r\\n]|\\\\[rn]){40,160}`, check: base64IsPrivatePem },
  { id: "aws-access-key-id", what: "an AWS access key id", start: ["AK", "AS", "AB", "AC"], source: "(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])", check: (m) => !isDocumented(m) },
  {
    id: "aws-secret-access-key",
    what: "an AWS secret access key",
    start: pairs("aA", "wW"),
    source: `${anyCase("aws")}[_-]?(?:${anyCase("secret")}[_-]?)?(?:${anyCase("access")}[_-]?)?${anyCase("key")}["']?(?:[ \\t]|\\xc2\\xa0){0,8}[:=](?:[ \\t]|\\xc2\\xa0){0,8}["']?[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])`,
    check: (m) => !isDocumented(m) && looksRandom(m.slice(-40)),
  },
  { id: "github-token", what: "a GitHub token", start: ["gh", "gi"], source: token("(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59,240})"), check: randomAfter(4) },
  { id: "gitlab-token", what: "a GitLab token", start: ["gl"], source: `gl(?:pat|dt|rt|cbt|ptt|ft|imt|oas|soat|agent|ffct|wt)-[A-Za-z0-9_.-]{20,255}(?![A-Za-z0-9_.-])`, check: (m) => looksRandom(m.slice(m.indexOf("-") + 1)) },
  { id: "slack-token", what: "a Slack token", start: ["xo", "xa"], source: token("(?:xox[abposr]-(?:[0-9]{6,16}-){1,3}[A-Za-z0-9]{16,64}|xoxe(?:\\.xox[bp])?-[0-9]-[A-Za-z0-9]{60,300}|xapp-[0-9]-[A-Z0-9]{8,14}-[0-9]{8,16}-[a-f0-9]{32,80})"), check: (m) => looksRandom(m.slice(m.lastIndexOf("-") + 1)) },
  { id: "slack-webhook", what: "a Slack webhook URL", start: ["ht"], source: "https://hooks\\.slack\\.com/(?:services|workflows|triggers)/T[A-Z0-9]{6,12}/[A-Z0-9]{6,14}/[A-Za-z0-9]{16,40}", check: (m) => looksRandom(m.slice(m.lastIndexOf("/") + 1)) },
  { id: "discord-webhook", what: "a Discord webhook URL", start: ["ht"], source: "https://(?:(?:ptb|canary)\\.)?discord(?:app)?\\.com/api/webhooks/[0-9]{17,20}/[A-Za-z0-9_-]{60,70}", check: (m) => looksRandom(m.slice(m.lastIndexOf("/") + 1)) },
  { id: "anthropic-key", what: "an Anthropic API key", start: ["sk"], source: token("sk-ant-[A-Za-z0-9_-]{32,300}"), check: (m) => looksRandom(m.replace(/^sk-ant-(?:[a-z]+[0-9]{2}-)?/, "")) },
  { id: "openrouter-key", what: "an OpenRouter API key", start: ["sk"], source: token("sk-or-v1-[0-9a-f]{64}"), check: randomAfter(9) },
  { id: "langfuse-secret-key", what: "a Langfuse secret key", start: ["sk"], source: token("sk-lf-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), check: randomAfter(6) },
  {
    id: "openai-key",
    what: "an OpenAI-style API key",
    start: ["sk"],
    source: token("sk-(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{40,300}|[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}|[A-Za-z0-9]{32,64})"),
    check: (m) => /[0-9]/.test(m) && randomAfter(3)(m.replace(/^sk-(?:proj|svcacct|admin|None)-/, "sk-")),
  },
  { id: "google-api-key", what: "a Google API key", start: ["AI"], source: token("AIza[0-9A-Za-z_-]{35}"), check: randomAfter(4) },
  { id: "google-oauth", what: "a Google OAuth client secret or token", start: ["GO", "ya", "1/"], source: `(?:GOCSPX-[A-Za-z0-9_-]{28}|ya29\\.[0-9A-Za-z_-]{30,2000}|1//0[0-9A-Za-z_-]{40,500})${TOKEN_END}`, check: (m) => looksRandom(m.slice(7)) },
  { id: "groq-key", what: "a Groq API key", start: ["gs"], source: token("gsk_[A-Za-z0-9]{48,60}"), check: randomAfter(4) },
  { id: "xai-key", what: "an xAI API key", start: ["xa"], source: token("xai-[A-Za-z0-9]{60,100}"), check: randomAfter(4) },
  { id: "huggingface-token", what: "a Hugging Face token", start: ["hf", "ap"], source: token("(?:hf_|api_org_)[A-Za-z0-9]{30,40}"), check: (m) => looksRandom(m.slice(m.lastIndexOf("_") + 1)) },
  { id: "fireworks-key", what: "a Fireworks AI API key", start: ["fw", "fp"], source: token("(?:fw|fpk)_[A-Za-z0-9]{20,64}"), check: (m) => /[0-9]/.test(m) && looksRandom(m.slice(m.indexOf("_") + 1)) },
  { id: "perplexity-key", what: "a Perplexity API key", start: ["pp"], source: token("pplx-[A-Za-z0-9]{40,60}"), check: randomAfter(5) },
  { id: "replicate-token", what: "a Replicate API token", start: ["r8"], source: token("r8_[A-Za-z0-9]{37}"), check: randomAfter(3) },
  { id: "tavily-key", what: "a Tavily API key", start: ["tv"], source: token("tvly-(?:dev-|prod-)?[A-Za-z0-9]{28,40}"), check: (m) => looksRandom(m.slice(m.lastIndexOf("-") + 1)) },
  { id: "firecrawl-key", what: "a Firecrawl API key", start: ["fc"], source: token("fc-[0-9a-f]{32}"), check: randomAfter(3) },
  { id: "browserbase-key", what: "a Browserbase API key", start: ["bb"], source: token("bb_live_[A-Za-z0-9_-]{20,40}"), check: randomAfter(8) },
  { id: "nvidia-key", what: "an NVIDIA API key", start: ["nv"], source: token("nvapi-[A-Za-z0-9_-]{60,80}"), check: randomAfter(6) },
  { id: "cerebras-key", what: "a Cerebras API key", start: ["cs"], source: token("csk-[a-z0-9]{40,60}"), check: randomAfter(4) },
  { id: "digitalocean-token", what: "a DigitalOcean token", start: ["do"], source: token("do[opr]_v1_[0-9a-f]{64}"), check: randomAfter(7) },
  { id: "notion-token", what: "a Notion token", start: ["nt", "se"], source: token("(?:ntn_[A-Za-z0-9]{40,50}|secret_[A-Za-z0-9]{43})"), check: (m) => /[0-9]/.test(m) && looksRandom(m.slice(m.indexOf("_") + 1)) },
  { id: "linear-key", what: "a Linear API key", start: ["li"], source: token("lin_(?:api|oauth)_[A-Za-z0-9]{40}"), check: (m) => looksRandom(m.slice(-40)) },
  { id: "airtable-token", what: "an Airtable token", start: ["pa"], source: token("pat[A-Za-z0-9]{14}\\.[0-9a-f]{64}"), check: (m) => looksRandom(m.slice(-64)) },
  { id: "elevenlabs-key", what: "an ElevenLabs API key", start: ["sk"], source: token("sk_[0-9a-f]{48}"), check: randomAfter(3) },
  { id: "stripe-key", what: "a Stripe secret key", start: ["sk", "rk", "wh"], source: token("(?:(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,250}|whsec_[A-Za-z0-9]{32,100})"), check: (m) => !isDocumented(m) && looksRandom(m.slice(m.lastIndexOf("_") + 1)) },
  { id: "npm-token", what: "an npm access token", start: ["np"], source: token("npm_[A-Za-z0-9]{36}"), check: randomAfter(4) },
  { id: "pypi-token", what: "a PyPI API token", start: ["py"], source: token("pypi-AgE[A-Za-z0-9_-]{70,300}"), check: randomAfter(30) },
  { id: "sendgrid-key", what: "a SendGrid API key", start: ["SG"], source: token("SG\\.[A-Za-z0-9_-]{22}\\.[A-Za-z0-9_-]{43}"), check: (m) => looksRandom(m.slice(-43)) },
  { id: "twilio-key", what: "a Twilio API key", start: ["SK"], source: token("SK[0-9a-f]{32}"), check: randomAfter(2) },
  { id: "azure-storage-key", what: "an Azure storage or Service Bus key", start: ["Ac", "Sh"], source: "(?:AccountKey|SharedAccessKey)=[A-Za-z0-9+/]{40,100}={0,2}", check: (m) => looksRandom(m.slice(m.indexOf("=") + 1)) },
  { id: "azure-client-secret", what: "an Azure AD client secret", start: "literal", source: "(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])", check: (m) => looksRandom(m.slice(6)) },
  {
    id: "database-url",
    what: "a database URL with a password",
    start: ["po", "my", "ma", "mo", "re", "am", "ms", "sq", "co", "cl", "ne"],
    source: "(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\\+srv)?|rediss?|amqps?|mssql|sqlserver|cockroachdb|clickhouse|couchdb|neo4j(?:\\+s)?)://[^\\s:/@\"'<>]{0,128}:[^\\s/@\"'<>]{3,128}@[A-Za-z0-9.\\[-]",
    check: urlPassword,
  },
  { id: "netrc-password", what: "a .netrc password", start: "literal", source: "machine[ \\t]+[^\\s]{1,253}[ \\t\\r\\n]{1,16}(?:login[ \\t]+[^\\s]{1,256}[ \\t\\r\\n]{1,16})?password[ \\t]+[^\\s]{4,256}", check: netrcPassword },
  { id: "telegram-bot-token", what: "a Telegram bot token", start: pairs(DIGITS, DIGITS), guard: (b, at) => b[at + 8] === 58 || b[at + 9] === 58 || b[at + 10] === 58, source: "(?<![0-9])[0-9]{8,10}:[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])", check: (m) => looksRandom(m.slice(m.indexOf(":") + 1)) },
  { id: "discord-bot-token", what: "a Discord bot token", start: pairs("MNO", ALNUM + "_-"), guard: (b, at) => b[at + 24] === 46 || b[at + 25] === 46 || b[at + 26] === 46 || b[at + 27] === 46 || b[at + 28] === 46, source: token("[MNO][A-Za-z0-9_-]{23,27}\\.[A-Za-z0-9_-]{6}\\.[A-Za-z0-9_-]{27,40}"), check: isDiscordToken },
  { id: "matrix-token", what: "a Matrix access token", start: ["sy", "ma", "mc"], source: token("(?:syt_[A-Za-z0-9]{1,80}_[A-Za-z0-9]{20}_[A-Za-z0-9]{6}|(?:mat|mct|mar)_[A-Za-z0-9]{30}_[A-Za-z0-9]{6})"), check: (m) => looksRandom(m.split("_").at(-2)!) },
  { id: "matrix-recovery-key", what: "a Matrix recovery key", start: "literal", source: "(?<![A-Za-z0-9])E[Ss][1-9A-HJ-NP-Za-km-z]{2}(?: [1-9A-HJ-NP-Za-km-z]{4}){11}(?![A-Za-z0-9])", check: (m) => looksRandom(m.replace(/ /g, "")) },
  { id: "jwt", what: "a JSON Web Token", start: ["ey", "op"], source: `${TOKEN_START}(?:ops_)?eyJ[${T}]{10,800}\\.eyJ[${T}]{10,3000}\\.[${T}]{16}`, check: isSignedJwt },
  { id: "zai-key", what: "a Z.AI API key", start: pairs(HEX, HEX), guard: (b, at) => b[at + 32] === 46, source: "(?<![A-Za-z0-9_.-])[0-9a-f]{32}\\.[A-Za-z0-9]{16}(?![A-Za-z0-9_.-])", check: (m) => looksRandom(m.slice(-16)) && /[0-9]/.test(m.slice(-16)) },
  { id: "fal-key", what: "a fal.ai API key", start: pairs(HEX, HEX), guard: (b, at) => b[at + 36] === 58, source: "(?<![A-Za-z0-9-])[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}:[0-9a-f]{32}(?![A-Za-z0-9])", check: (m) => looksRandom(m.slice(-32)) },
  {
    id: "authorization-header",
    what: "an HTTP Authorization credential",
    start: pairs("aApP", "uUrR"),
    source: `(?:${anyCase("proxy-")})?${anyCase("authorization")}["']?[ \\t]{0,8}[:=][ \\t]{0,8}["']?(?:${anyCase("bearer")}|${anyCase("token")}|${anyCase("basic")})[ \\t]{1,8}[A-Za-z0-9_\\-+/=.~]{16,2000}`,
    check: authorizationValue,
  },
];

/** What find.ts reports for a generic assignment. */
export const GENERIC_WHAT = "a credential assigned to a key, token, secret or password name";
