// Finds the rules of rules.ts in text, in linear time and at the speed of
// the engine's string search on ordinary text. A regular expression that
// combines the rules, or a JavaScript loop over every byte, reads each
// position with dozens of alternatives (measured: 30 to 150 MB/s). Here each
// rule is tried only where a *trigger* of it lies, and triggers are found by
// String.prototype.indexOf (memchr, Boyer-Moore: GB/s) or a one-literal
// regular expression, in a few passes over the text:
// - the connectors `-`, `_` and `.`: a vendor token starts with a short word
//   and one of them (`sk-`, `ghp_`, `SG.`); the two bytes before the connector
//   pick, from a table, the few words that can end there;
// - `:`, `=` and `>`: a generic assignment's separator (the name before it
//   must end in a keyword letter), a URL's `://`, a Telegram or fal.ai key;
// - literals of their own: `BEGIN` of PEM armour, its base64, `AIza`, `eyJ`,
//   `Q~`, `machine`…
// At a trigger a few byte tests turn most candidates down; the rule's sticky
// regular expression (bounded, rules.ts) runs on the rest. Where a trigger
// sees its token cut by a line break (`textwrap.fill`, `fold -w`, a quote's
// `> `), the key is read joined from its first byte and tried with that
// rule only (Search.joined): prose's lines are never joined. Every trigger
// costs O(1) amortised: a candidate that is not at a token start skips the
// rest of its run; runs, values and the distance to a needed literal are
// measured once per pass and remembered (a candidate window is never
// re-scanned); a rejected base64 or recovery-key match is not re-read; a
// keyword inside a value already judged is not judged again. test/content
// feeds every rule its adversarial inputs; bench/content.mjs times them.
import {
  DATABASE_SCHEMES,
  ENDS_VALUE,
  GENERIC_WHAT,
  JWK_VALUE_MIN,
  MAX_MATCH,
  NAME_MAX,
  OPENSSH_BODY_LEAD,
  PASSWORD_MAX,
  PASSWORD_MIN,
  PANDOC_DASHES,
  PASSWORD_URL_SCHEMES,
  type Rule,
  TOKEN_MIN,
  TOKEN_VALUE,
  VALUE_MAX,
  allRules,
  nameKind,
  isNameChar,
  nameStartBefore,
  valueLooksSecret,
} from "./rules.js";
import { KEYWORD_ENDINGS, nameHoldsNoSecret } from "./secret-variables.js";
import { CSI_8BIT, SEQUENCE_BACK_MAX, digitEndsEscape, escapeStartBefore, sequenceThen, sequencesEnd } from "./terminal-escapes.js";
import { percentSignLength, writtenEscStart, writtenSequenceAfter, writtenEscapeEndAfter, writtenEscapeEndsAt, writtenEscapeThen, writtenSequenceLength, WRITTEN_ESCAPE_MAX } from "./written-escapes.js";
import { isXxdOffsetColon } from "./hex-dumps.js";
import { GrepContextMarks, type UnmarkedBlock, unmarkedBlock } from "./line-decorations.js";
import { isAscii } from "node:buffer";
import { ASCII_PUNCTUATION, Form, KEY_CHAR, WRAPPED_WHAT, cellBreakLength, continuationLength, isWrapIndent, mayEndCell, lineBreakLength, lineEndBeforeBreak, wrapBreakLength, zeroWidthLength } from "./text-forms.js";

const table = (chars: string) => {
  const t = new Uint8Array(256);
  for (const ch of chars) t[ch.charCodeAt(0)] = 1;
  return t;
};
const LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/** Letters and digits. */
const ALNUM = table(`${LETTERS}0123456789`);
/** Letters, digits, `_` and `-`: the token alphabet; a token starts where one follows something else. */
const TOKEN = table(`${LETTERS}0123456789_-`);
/** The token alphabet and `.`: what a vendor token's run is made of. */
const RUN = table(`${LETTERS}0123456789_-.`);
const DIGIT = table("0123456789");
const HEX = table("0123456789abcdef");
const UPPER_DIGIT = table("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789");
const BASE64 = table(`${LETTERS}0123456789+/`);
/** What may not come before a key's base64 body: base64, and a token's `_` and `-`. */
const BASE64_AROUND = table(`${LETTERS}0123456789+/_-`);
const BASE58 = table("123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz");
/**
 * Whether a terminal's escape or control sequence (terminal-escapes.ts:
 * `\x1b[0;1;39m`, `\x1b[K`, `\x1b(B`, `\x9b0m`), or an escape written as
 * text (written-escapes.ts: `\n`, `\u00a0`, `%20`, `\u001b[1;32m`), ends
 * with the token character at `f`: a token starts after it. Reads back what
 * rules.ts's TOKEN_START's look-behind reads, which it agrees with; what is
 * read back past `f` is counted (extraReading).
 */
function escapeEndsAt(b: Uint8Array, f: number): boolean {
  if (TOKEN[b[f]!] !== 1) return false;
  return escapeStartBefore(b, f, extraReading) >= 0 || writtenEscapeEndsAt(b, f);
}
/**
 * Where the run of digits (at most 11: a Telegram token's 8 to 10, and one
 * more to see that the run is longer) that ends before `end` starts; past
 * the digit that starts it where that digit ends a terminal's escape
 * sequence (`ESC ( 0`, `ESC 7`: a terminal shows the digits after it); past
 * a written escape's hex digits among its first four (`%20`, `\u0020`,
 * `\u00a0`: written-escapes.ts), asked only after a byte such an escape's
 * digits may follow.
 */
function digitsStart(b: Uint8Array, end: number): number {
  let start = end;
  while (start > 0 && end - start < 11 && DIGIT[b[start - 1]!] === 1) start--;
  if (start === 0 || start === end) return start;
  if (digitEndsEscape(b, start)) return start + 1;
  if (BEFORE_WRITTEN_DIGITS[b[start - 1]!] === 1) for (let f = start; f < start + 4 && f < end; f++) if (writtenEscapeEndsAt(b, f)) return f + 1;
  return start;
}
/** What the digits of a written escape that ends in a digit may follow: its `%`, `x`, `u`, an octal escape's backslash, or its other digits (the walk back stopped at its bound: `\U000000a0`'s eight and a token's eight to ten are more than it reads). */
const BEFORE_WRITTEN_DIGITS = table("\\%xuABCDEFabcdef0123456789");
/**
 * A Telegram bot token's digits: `count` of them from `start` (a line
 * break may lie between), 8 to 10, after no other digit (or after an
 * escape sequence's final digit, or a written escape's), as rules.ts's
 * pattern reads them.
 */
function isTelegramDigits(b: Uint8Array, start: number, count: number): boolean {
  return count >= 8 && count <= 10 && (start === 0 || DIGIT[b[start - 1]!] === 0 || digitEndsEscape(b, start - 1) || writtenEscapeEndsAt(b, start - 1));
}
/** A Meta token's lead right after a terminal's sequence (terminal-escapes.ts), or an escape written as text (written-escapes.ts). */
const META_AFTER_ESCAPE = sequenceThen("EAA");
const META_AFTER_WRITTEN = writtenEscapeThen("EAA");
/** Characters an Azure client secret is made of. */
const AZURE = table(`${LETTERS}0123456789_~.`);
const AZURE_AROUND = table(`${LETTERS}0123456789_~.-`);
/** What may not touch a Z.AI key. */
const ZAI_AROUND = table(`${LETTERS}0123456789_.-`);
/**
 * A generic assignment's name ends in a keyword: by its last three letters,
 * lower-cased (`c1 << 16 | c2 << 8 | c3`), the letter that must come before
 * them (0: none, a three-letter keyword).
 */
let KEYWORD_ENDING: Map<number, number>;
const code3 = (e: string) => (e.charCodeAt(e.length - 3) << 16) | (e.charCodeAt(e.length - 2) << 8) | e.charCodeAt(e.length - 1);
/** Bytes a keyword ends with, lower-cased: the first, cheapest test. */
let KEYWORD_END: Uint8Array;
/** A keyword's last two letters, lower-cased (`c2 << 8 | c3`): the second test, before KEYWORD_ENDING. */
let KEYWORD_PAIR: Uint8Array;
/**
 * Bytes before a separator that may end a secret's name: a keyword's last
 * letter, or a blank or quote between them. One lookup per separator keeps
 * the passes cheap before V8 has compiled them (an XML part holds a `:` and
 * a `>` at every tag).
 */
let NAME_END_BEFORE: Uint8Array;
/** Bytes before a `:` that lead to any of its tests but a URL's: a name's end, a Telegram token's digit, a fal.ai key's hex digit. */
let COLON_BEFORE: Uint8Array;
const URL_SCHEME = table("abcdefghijklmnopqrstuvwxyz0123456789+");
/** What a URL's user information holds none of (the URL rules' classes). */
const ENDS_USERINFO = table(" \t\n\r\v\f/@\"'<>");
const QUOTE = table("\"'`");
/** Characters of an Authorization header's credential. */
const AUTHORIZATION_VALUE = table(`${LETTERS}0123456789_-+/=.~`);

interface Sticky {
  rule: Rule;
  re: RegExp;
  /** The last match the check judged, and its verdict: a repeated match (adversarial input, a generated file) is judged once. */
  lastMatch: string;
  lastVerdict: boolean;
}
/** Each rule's sticky expression, by the rule's id. */
let STICKY: Map<string, Sticky>;
const sticky = (id: string): Sticky => {
  const s = STICKY.get(id);
  if (!s) throw new Error(`no rule ${id}`);
  return s;
};

/**
 * Vendor tokens by the word they start with, connector included. Tried in
 * the order of the rules. A word is at most WORD_MAX letters and digits.
 */
const WORDS: Record<string, string[]> = {
  "github-token": ["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_"],
  "gitlab-token": ["glpat-", "gldt-", "glrt-", "glcbt-", "glptt-", "glft-", "glimt-", "gloas-", "glsoat-", "glagent-", "glffct-", "glwt-"],
  "slack-token": ["xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-", "xoxe-", "xoxe.", "xapp-"],
  "anthropic-key": ["sk-"],
  "openrouter-key": ["sk-"],
  "langfuse-secret-key": ["sk-"],
  "openai-key": ["sk-"],
  "google-oauth": ["GOCSPX-", "ya29."],
  "groq-key": ["gsk_"],
  "xai-key": ["xai-"],
  "huggingface-token": ["hf_", "api_"],
  "fireworks-key": ["fw_", "fw-", "fpk_"],
  "perplexity-key": ["pplx-"],
  "replicate-token": ["r8_"],
  "tavily-key": ["tvly-"],
  "firecrawl-key": ["fc-"],
  "browserbase-key": ["bb_"],
  "nvidia-key": ["nvapi-"],
  "cerebras-key": ["csk-"],
  "digitalocean-token": ["doo_", "dop_", "dor_"],
  "notion-token": ["ntn_", "secret_"],
  "linear-key": ["lin_"],
  "exa-key": ["exa_"],
  "retaindb-key": ["retaindb_"],
  "hindsight-key": ["hsk-"],
  "mem0-key": ["mem0_"],
  "byterover-key": ["brv_"],
  "agentmail-key": ["am_"],
  "fal-token": ["fal_"],
  "elevenlabs-key": ["sk_"],
  "stripe-key": ["sk_", "rk_", "whsec_"],
  "npm-token": ["npm_"],
  "pypi-token": ["pypi-"],
  "sendgrid-key": ["SG."],
  "matrix-token": ["syt_", "mat_", "mct_", "mar_"],
};
const WORD_MAX = 8;
/** Every vendor token's run (letters, digits, `_-.`) from its start is at least this long. */
const TOKEN_RUN_MIN = 20;
const CONNECTORS = ["-", "_", "."] as const;
/** For each connector, the rules by word, and which two bytes may precede it. */
let BY_WORD: Map<string, Sticky[]>;
let PAIRS: Record<string, Uint8Array>;
/** A hash of each vendor word's bytes (wordHash), connector included: a word cut by a line break is told by it before it is sliced out. */
let WORD_HASHES: Set<number>;
/**
 * `h` (0 to start) extended with the bytes b[from, to) (`h * 31 + c`, 32
 * bits): one function for the table's words and for the pieces of a word
 * a line break cut, which must agree.
 */
function wordHash(h: number, b: Uint8Array, from: number, to: number): number {
  for (let k = from; k < to; k++) h = (Math.imul(h, 31) + b[k]!) | 0;
  return h;
}
/** Bytes at a token's edge that may be a line break's or its indent's: `\n`, `\r`, a blank, a tab, a quote's `>`. */
const LINE_EDGE = table("\n\r \t>");
/** PAIRS' bits: the two bytes end a word; they may end one cut by a line break. */
const PAIR_WORD = 1;
const PAIR_CUT = 2;
/** What ends a line break and the indent after it, before a cut word's rest: `\n`, a blank, a tab, a quote's `>`. */
const WRAP_BEFORE = [10, 32, 9, 62];
/** WRAP_BEFORE as a table: a byte before a Telegram token's digits that may end a line break and its indent. */
const WRAP_END = table("\n \t>");

/** Rules found by passes of their own below (and where, relative to the trigger, they start). */
const FOUND_BY_PASSES = [
  "private-key",
  "url-encoded-private-key",
  "ssh2-private-key",
  "putty-private-key",
  "base64-private-key",
  "der-private-key",
  "openssh-key-body",
  "aws-access-key-id",
  "aws-secret-access-key",
  "slack-webhook",
  "discord-webhook",
  "google-api-key",
  "meta-access-token",
  "google-oauth",
  "airtable-token",
  "twilio-key",
  "azure-storage-key",
  "azure-client-secret",
  "database-url",
  "url-password",
  "netrc-password",
  "telegram-bot-token",
  "discord-bot-token",
  "matrix-recovery-key",
  "jwt",
  "jwk-private-key",
  "zai-key",
  "fal-key",
  "authorization-header",
];
/** The rules the passes try by name. */
let PEM: Sticky;
let URL_PEM: Sticky;
let SSH2: Sticky;
let PUTTY: Sticky;
let BASE64_PEM: Sticky;
let DER_KEY: Sticky;
let OPENSSH_BODY: Sticky;
let AWS_KEY_ID: Sticky;
let AWS_SECRET: Sticky;
let SLACK_WEBHOOK: Sticky;
let DISCORD_WEBHOOK: Sticky;
let GOOGLE_API: Sticky;
let META: Sticky;
let GOOGLE_OAUTH: Sticky;
let AIRTABLE: Sticky;
let TWILIO: Sticky;
let AZURE_STORAGE: Sticky;
let AZURE_CLIENT: Sticky;
let DATABASE_URL: Sticky;
let URL_PASSWORD: Sticky;
let NETRC: Sticky;
let TELEGRAM: Sticky;
let DISCORD_BOT: Sticky;
let MATRIX_RECOVERY: Sticky;
let JWT: Sticky;
let JWK: Sticky;
let ZAI: Sticky;
let FAL: Sticky;
let AUTHORIZATION: Sticky;

// The rules' ~50 sticky expressions and the tables above are made by the
// first search (makeTables), not when the module loads: they cost every
// prepare run ~1 ms of start-up, and a file whose judging searches no text
// (a PNG without text chunks) never needs them. The passes read them as
// module bindings all the same, at no cost per byte.
let tablesMade = false;

function makeTables(): void {
  const rules = allRules();
  STICKY = new Map(rules.map((rule): [string, Sticky] => [rule.id, { rule, re: new RegExp(rule.source, "y"), lastMatch: "", lastVerdict: false }]));
  KEYWORD_ENDING = new Map();
  for (const e of KEYWORD_ENDINGS) {
    const before = e.length === 4 ? e.charCodeAt(0) : 0;
    if (KEYWORD_ENDING.has(code3(e)) && KEYWORD_ENDING.get(code3(e)) !== before) throw new Error(`two keywords end in ${e.slice(-3)}`);
    KEYWORD_ENDING.set(code3(e), before);
  }
  KEYWORD_END = new Uint8Array(256);
  for (const e of KEYWORD_ENDINGS) KEYWORD_END[e.charCodeAt(e.length - 1)] = 1;
  KEYWORD_PAIR = new Uint8Array(1 << 16);
  for (const e of KEYWORD_ENDINGS) KEYWORD_PAIR[(e.charCodeAt(e.length - 2) << 8) | e.charCodeAt(e.length - 1)] = 1;
  NAME_END_BEFORE = new Uint8Array(256);
  COLON_BEFORE = new Uint8Array(256);
  for (let c = 0; c < 256; c++) {
    NAME_END_BEFORE[c] = KEYWORD_END[c | 0x20] === 1 || c === 32 || c === 9 || QUOTE[c] === 1 ? 1 : 0;
    COLON_BEFORE[c] = NAME_END_BEFORE[c]! | DIGIT[c]! | HEX[c]!;
  }
  BY_WORD = new Map();
  WORD_HASHES = new Set();
  PAIRS = Object.fromEntries(CONNECTORS.map((c) => [c, new Uint8Array(1 << 16)]));
  for (const rule of rules) {
    for (const word of WORDS[rule.id] ?? []) {
      const connector = word.at(-1)!;
      if (!(CONNECTORS as readonly string[]).includes(connector) || word.length - 1 > WORD_MAX || word.length < 3) throw new Error(`bad word ${word}`);
      const list = BY_WORD.get(word) ?? [];
      list.push(sticky(rule.id));
      BY_WORD.set(word, list);
      WORD_HASHES.add(wordHash(0, Buffer.from(word, "latin1"), 0, word.length));
      const pairs = PAIRS[connector]!;
      const last = word.charCodeAt(word.length - 2);
      pairs[(word.charCodeAt(word.length - 3) << 8) | last]! |= PAIR_WORD;
      // The same word cut by a line break before its connector (`ghp\n_`, `ghp\r\n_`) or its last letter (`gh\np_`, after an
      // indent or a quote's `>` too). Not before its connector and an indent (`ghp\n    _`): the pair of two blanks before a
      // connector is a manual's options' and a list's (`  -`), a test each. Not a dot's (`SG.`, `ya29.`, `xoxe.`): ` e.g.` is
      // prose's.
      if (connector === ".") continue;
      pairs[(last << 8) | 10]! |= PAIR_CUT;
      pairs[(13 << 8) | 10]! |= PAIR_CUT;
      for (const c of WRAP_BEFORE) pairs[(c << 8) | last]! |= PAIR_CUT;
    }
  }
  for (const rule of rules) {
    if (!WORDS[rule.id] && !FOUND_BY_PASSES.includes(rule.id)) throw new Error(`rule ${rule.id} has no way to be found`);
  }
  PEM = sticky("private-key");
  URL_PEM = sticky("url-encoded-private-key");
  SSH2 = sticky("ssh2-private-key");
  PUTTY = sticky("putty-private-key");
  BASE64_PEM = sticky("base64-private-key");
  DER_KEY = sticky("der-private-key");
  OPENSSH_BODY = sticky("openssh-key-body");
  AWS_KEY_ID = sticky("aws-access-key-id");
  AWS_SECRET = sticky("aws-secret-access-key");
  SLACK_WEBHOOK = sticky("slack-webhook");
  DISCORD_WEBHOOK = sticky("discord-webhook");
  GOOGLE_API = sticky("google-api-key");
  META = sticky("meta-access-token");
  GOOGLE_OAUTH = sticky("google-oauth");
  AIRTABLE = sticky("airtable-token");
  TWILIO = sticky("twilio-key");
  AZURE_STORAGE = sticky("azure-storage-key");
  AZURE_CLIENT = sticky("azure-client-secret");
  DATABASE_URL = sticky("database-url");
  URL_PASSWORD = sticky("url-password");
  NETRC = sticky("netrc-password");
  TELEGRAM = sticky("telegram-bot-token");
  DISCORD_BOT = sticky("discord-bot-token");
  MATRIX_RECOVERY = sticky("matrix-recovery-key");
  JWT = sticky("jwt");
  JWK = sticky("jwk-private-key");
  ZAI = sticky("zai-key");
  FAL = sticky("fal-key");
  AUTHORIZATION = sticky("authorization-header");
  tablesMade = true;
}

/** Where `ZX`, the rarest pair of OPENSSH_BODY_LEAD in text, lies in it. */
const OPENSSH_ZX = OPENSSH_BODY_LEAD.indexOf("ZX");
const DATABASE_SCHEME = new Set(DATABASE_SCHEMES);
const PASSWORD_URL_SCHEME = new Set(PASSWORD_URL_SCHEMES);
const AWS_SECRET_NAME = /(?:^|[^A-Za-z0-9_-])(aws[_-]?(?:secret[_-]?)?(?:access[_-]?)?key)$/i;
/** The base64 of `-----BEGIN ` at its three alignments, each searched from a part that starts with a rare letter (`0` and `t` are common). */
const BASE64_PEM_LEADS = new Map([
  ["LS0tLS1CRUdJTi", { lead: "LS0tLS1CRUdJTi", offset: 0 }],
  ["QkVHSU4g", { lead: "0tLS0tQkVHSU4g", offset: 6 }],
  ["LUJFR0lOI", { lead: "tLS0tLUJFR0lOI", offset: 5 }],
]);
const LONG_LEAD_LIST = ["BEGIN", "TTY-User-Key-File-", "machine", ...BASE64_PEM_LEADS.keys()];
const LONG_LEADS = new RegExp(LONG_LEAD_LIST.join("|"), "g");
/** Each long literal by its last byte (they all differ). */
const LONG_LEAD_BY_LAST: (string | undefined)[] = [];
for (const lead of LONG_LEAD_LIST) {
  if (LONG_LEAD_BY_LAST[lead.charCodeAt(lead.length - 1)]) throw new Error(`two long literals end in ${lead.at(-1)}`);
  LONG_LEAD_BY_LAST[lead.charCodeAt(lead.length - 1)] = lead;
}
/** Literals a rule needs after its trigger, looked for once per pass (Search.nextIndexOf). */
const NEXT_LITERALS = ["PRIVATE KEY", "password", "@"];
const NextLiteral = { PrivateKey: 0, Password: 1, At: 2 } as const;
type NextLiteral = (typeof NextLiteral)[keyof typeof NextLiteral];
/** PEM armour's base64 body starts at most this far after its label (six RFC 1421 headers between). */
const PEM_BODY_WITHIN = 1520;
/** An AWS access key id's prefix, and a Google API key's. */
const A_LEADS = /A(?:KIA|SIA|BIA|CCA|Iza)/g;
/** A Meta access token's start: EAA and 100 letters and digits, at a token's start (linear: such a start follows the end of a run). */
const META_LEAD = /(?<![A-Za-z0-9_-])EAA[A-Za-z0-9]{100}/g;
/** A Matrix recovery key: `E[sS]` and 46 base58 characters in groups of four, one space between groups. */
const MATRIX_LENGTH = 59;

/** How far after the start of its match a trigger may lie (a Discord token's first dot, a Z.AI key's). */
const MAX_TRIGGER_AFTER_START = 40;
/** A JSON Web Token's payload's first bytes (`{"`). */
const EYJ = [101, 121, 74];
/** A JSON Web Token's first dot is at most this far after its start. */
const JWT_HEADER_MAX = 810;
/** The separators of a name's words (`_`, `-`, `.`), which a value that repeats the name may drop. */
const SEPARATORS = /[_.-]/g;
/**
 * Whether `value` holds `name`, or `name` holds `value`, in any case and
 * without `_`, `-` and `.` (`'service_account_token': 'V1ServiceAccountTokenProjection'`,
 * a generated client's map of its fields to their types).
 */
function valueRepeatsName(name: string, value: string): boolean {
  const n = name.toLowerCase().replace(SEPARATORS, "");
  const v = value.toLowerCase().replace(SEPARATORS, "");
  return n.length >= 6 && (v.includes(n) || n.includes(v));
}
/** How far before a generic value's start its separator may lie. */
const MAX_SEPARATOR_BEFORE_VALUE = 24;
/** How far before its `kty` a JSON Web Key's object is read from (sorted members put an RSA-4096 key's `d`, `dp`, `dq` ~1,400 before it). */
const JWK_BEFORE = 2000;
/** A YAML `kty`'s indent and list items' `- ` before it, at most. */
const YAML_INDENT_MAX = 64;
/**
 * The indent of the YAML line b[from, to) (its blanks before its first
 * character), or -1 for a blank line or a comment, which neither belongs
 * to a mapping nor ends one.
 */
function yamlIndent(b: Uint8Array, from: number, to: number): number {
  let k = from;
  while (k < to && b[k] === 32) k++;
  return k >= to || b[k] === 13 || b[k] === 35 ? -1 : k - from;
}
/** yamlLineIndent's answer for a line without the mapping's marks (a comment's `#`, a quote's `>`): it ends the mapping. */
const NOT_IN_BLOCK = -2;
/**
 * The indent of the YAML line b[from, to) whose first `prefix` bytes must be
 * b[marks, marks + prefix) (a commented-out or quoted mapping's `# ` or
 * `> ` before each line; none: 0), measured after them, as yamlIndent's;
 * NOT_IN_BLOCK where they differ.
 */
function yamlLineIndent(b: Uint8Array, from: number, to: number, marks: number, prefix: number): number {
  if (prefix > 0) {
    if (to - from < prefix) return NOT_IN_BLOCK;
    for (let j = 0; j < prefix; j++) if (b[from + j] !== b[marks + j]) return NOT_IN_BLOCK;
  }
  return yamlIndent(b, from + prefix, to);
}
/** What may start a YAML line before its mapping's keys and still be read as one: a comment's `#`, a quote's `>`, blanks between. */
const YAML_MARK = table("#> \t");
/** Where the first member of the list item whose `-` is at `at` starts (after its `- `, and a nested item's). */
function yamlItemColumn(b: Uint8Array, at: number): number {
  let k = at;
  while (b[k] === 45 && b[k + 1] === 32) {
    k += 2;
    while (b[k] === 32) k++;
  }
  return k;
}
/** Whether a YAML document's marker (`---` or `...`) starts at `at`. */
const isYamlDocumentEnd = (b: Uint8Array, at: number) => (b[at] === 45 && b[at + 1] === 45 && b[at + 2] === 45) || (b[at] === 46 && b[at + 1] === 46 && b[at + 2] === 46);
/** A key cut by line breaks is read joined to at most this many characters: a vendor's key's match is at most ~320 (`xoxe.xoxp-`… of 300)… */
const JOINED_KEY = 320;
/** … a JWT's 1,024 (a header and a payload of a few hundred characters)… */
const JOINED_JWT = 1024;
const JOINED_MAX = JOINED_JWT;
/** … from at most this many bytes of the text: its match stays within the 4 KiB the next block overlaps. */
const JOINED_SPAN = 3072;
/** Places a search (a window) looks at for a key cut by line breaks, at most (Search.cuts). */
const CUT_PLACES = 256;
/** A line shorter than this ends no wrapped key's piece (`textwrap`'s widths are 20 or more; its hyphen chunks leave lines of 6). */
const WRAPPED_LINE_MIN = 6;
/** Characters after a key's last break that may be the next line's words joined to it (`…7L5` `\nand keep`). */
const JOINED_TAIL = 24;
/**
 * What a key read joined is made of: the token alphabet, `.` (a JWT's, a
 * Slack refresh token's) and `:` (a Telegram token's). Not `=`: a line of
 * a `.env` after a placeholder (`sk-or-v1-...\nOPENAI_API_KEY=…`) ends the
 * reading at its name.
 */
const JOINED_RUN = table(`${LETTERS}0123456789_-.:`);
/** … and `%`, for a Telegram token whose colon is percent-encoded (`%3A`), which a break may cut anywhere in. */
const PERCENT_JOINED_RUN = table(`${LETTERS}0123456789_-.:%`);
/** A Telegram token's longest match with its colon percent-encoded: 10 digits, `%3A` (`%253A`, encoded twice), 35 characters. */
const TELEGRAM_PERCENT_MAX = 50;
/** The joined reading's bytes, and where its breaks were removed (module-wide: searches do not run at once). */
const JOINED = Buffer.alloc(JOINED_MAX + JOINED_TAIL + 1);
const JOINS = new Int32Array(JOINED_MAX + JOINED_TAIL + 1);
/** How far after the judged part a form of writing is looked for: the first mark inside a key that starts there lies within it. */
const FORM_REACH = 256;
/**
 * The zero-width characters (U+200B, U+200C, U+200D, U+2060: UTF-8 0xE2 and
 * two bytes) and the soft hyphen (0xC2 0xAD), read a byte a character, each
 * looked for once. The other invisible characters, a byte order mark
 * among them, are looked for by OTHER_INVISIBLE_BEFORE_KEY.
 */
const ZERO_WIDTH_LEADS = [
  { lead: "\xe2", length: 3 },
  { lead: "\xc2\xad", length: 2 },
];
/**
 * The other invisible characters text-forms.ts's zeroWidthLength removes
 * (Unicode's default-ignorable code points: CGJ, ALM, the Hangul fillers,
 * the Mongolian and standard variation selectors, a byte order mark, the
 * tag characters…; red-team pass 33), before a key's character: one
 * expression, for byte sequences text seldom holds (an emoji's U+FE0F is
 * followed by a blank or another emoji; CJK's and Vietnamese's lead bytes
 * are no match), whose preceding byte is tested after.
 */
const OTHER_INVISIBLE_BEFORE_KEY =
  /(?:\xcd\x8f|\xd8\x9c|\xe1(?:\x85[\x9f\xa0]|\x9e[\xb4\xb5]|\xa0[\x8b-\x8f])|\xe3\x85\xa4|\xef(?:\xb8[\x80-\x8f]|\xbb\xbf|\xbe\xa0|\xbf[\xb0-\xb8])|\xf0(?:\x9b\xb2[\xa0-\xa3]|\x9d\x85[\xb3-\xba])|\xf3\xa0[\x80-\xbf][\x80-\xbf])(?=[A-Za-z0-9_.+/=:~-])/g;
/** `\x00` written after each of three characters of a key (Python's bytes repr of UTF-16 text: text-forms.ts), matched from the first character's `\x00` (the character tested after): led by a literal. */
const WRITTEN_NULS = /\\x00[A-Za-z0-9_.+/=:~-]\\x00[A-Za-z0-9_.+/=:~-]\\x00/g;
/** A shell's line continuation (text-forms.ts's continuationLength): a backslash before LF or CR LF. */
const CONTINUATION = /\\\r?\n/g;
/** What starts a terminal's sequence (terminal-escapes.ts), read a byte a character: ESC, and the 8-bit CSI (C2 9B in UTF-8: its 9B found). */
const TERMINAL_LEADS = ["\x1b", "\x9b"];
/**
 * A control string's 8-bit introducer (terminal-escapes.ts's STRING_8BIT: the OSC's 0x9D, and 0x90, 0x98, 0x9E, 0x9F; after C2
 * in UTF-8) after a key's character (text-forms.ts's KEY_CHAR) or its C2: where a run of sequences inside a key may start with one.
 */
const STRING_8BIT_LEAD = /[A-Za-z0-9_\-.+/=:~\xc2][\x90\x98\x9d-\x9f]/g;
const STRING_8BIT_BYTES = ["\x9d", "\x90", "\x98", "\x9e", "\x9f"];

/** Where the first of `needles` stands in `text` from `from`, or -1: a native search for each. */
function firstOf(text: string, needles: readonly string[], from: number): number {
  let first = -1;
  for (const needle of needles) {
    const at = text.indexOf(needle, from);
    if (at >= 0 && (first < 0 || at < first)) first = at;
  }
  return first;
}
/** A sequence whose ESC is written as text (written-escapes.ts) right after a key's character (text-forms.ts's KEY_CHAR). */
const WRITTEN_SEQUENCE_IN_KEY = writtenSequenceAfter("[A-Za-z0-9_.+/=:~-]");
/** Bytes of a key's characters and escapes around an escape that may be inside one: the shortest value looked for (8 characters) and an escape. */
const ESCAPED_RUN_MIN = 10;
/**
 * troff's font escapes: a manual's source, whose `\-` (a dash) and `\&` (a
 * zero-width mark) are troff's, not Markdown's (three in five windows of
 * this machine's manuals, documentation and node_modules were read again
 * for them, for nothing).
 */
const TROFF_FONTS = ["\\fB", "\\fI", "\\fR"];
/** How many bytes after a connector are read before the next is searched for. */
const NEAR_BYTES = 4;
/** Punctuation whose backslash escape marks Markdown written by a tool: all but JSON's `\/` and code's `\"`, `\'`, `\\`. */
const MARKDOWN_ESCAPED = Array.from(ASCII_PUNCTUATION.keys()).filter((c) => ASCII_PUNCTUATION[c] === 1 && c !== 47 && c !== 34 && c !== 39 && c !== 92);
/** A backslash escape of MARKDOWN_ESCAPED punctuation between two letters or digits (`p\_A`). */
const ESCAPE_BETWEEN = new RegExp(`[A-Za-z0-9]\\\\[${MARKDOWN_ESCAPED.map((c) => `\\x${c.toString(16)}`).join("")}][A-Za-z0-9]`, "g");
/** How far around a window's first escape troff's font escapes are looked for. */
const TROFF_REACH = 4096;

/**
 * What the searches read beyond their passes, counted (a few additions per
 * reading, none per byte): the places read as a key cut by line breaks
 * (Search.joined) and the JSON Web Keys' objects and YAML mappings read,
 * and the bytes each read. Adversarial text must keep both in proportion to
 * its size: test/redteam.test.ts asserts so, by counts, not by time.
 */
export const extraReading = { places: 0, bytes: 0 };

export interface SecretHit {
  what: string;
  /** Index of the match in the scanned text. */
  index: number;
}

/** Vendor rules win over known values, and both over a generic assignment, at the same index. */
const Rank = { Vendor: 0, Known: 1, Generic: 2 } as const;
type Rank = (typeof Rank)[keyof typeof Rank];

/** What an unquoted value is made of: anything ENDS_VALUE does not end it with. */
const IN_UNQUOTED_VALUE = ENDS_VALUE.map((ends) => 1 - ends);

/**
 * A run of the characters of `chars`, measured from some start and
 * remembered: a later start inside it is answered without reading again, or
 * by reading on from where the last measure stopped (starts come in
 * increasing order within a pass, so each byte is read once).
 */
class RememberedRun {
  private from = -1;
  private to = -1;
  /** Whether the run ends at `to` (false: the measure stopped at its bound). */
  private ended = false;

  constructor(private readonly chars: Uint8Array) {}

  /** The end of the run from `start` in `b`, at most `max` characters and `textEnd`. */
  end(b: Uint8Array, textEnd: number, start: number, max: number): number {
    const limit = Math.min(textEnd, start + max);
    let at: number;
    if (start >= this.from && start <= this.to) {
      if (this.ended || this.to >= limit) return Math.min(this.to, limit);
      at = this.to;
    } else {
      this.from = start;
      at = start;
    }
    const chars = this.chars;
    while (at < limit && chars[b[at]!] === 1) at++;
    this.to = at;
    this.ended = at < limit || limit === textEnd;
    return at;
  }
}

/** One text searched once: every pass, and what they remember. */
class Search {
  private best: SecretHit | undefined;
  private bestRank: Rank = Rank.Generic;
  /** Hits must lie before this index (the best hit so far, or the caller's bound). */
  private bound: number;
  // Remembered measurements, each valid for later positions of the same pass (passes move forward).

  /** The text's length; `b` holds PADDING zero bytes more, so that no test reads past its end (a read out of bounds would slow every read V8 compiles after it). */
  private readonly end: number;

  constructor(
    private readonly text: string,
    private readonly b: Uint8Array,
    private readonly from: number,
    before: number,
  ) {
    this.bound = before;
    this.end = text.length;
  }

  result(): SecretHit | undefined {
    return this.best;
  }

  /** Records a hit at `index` when it is better than the best so far. */
  hit(what: string, index: number, rank: Rank): void {
    if (index < this.from || index > this.bound) return;
    if (index === this.bound && (!this.best || rank >= this.bestRank)) return;
    this.best = { what, index };
    this.bestRank = rank;
    this.bound = index;
  }

  /**
   * Tries rule `s` at `at`: true when it matches and its check accepts; the
   * match's length, negated when the check refused it. The hit is at `hitAt`
   * (a JWK's is its `kty`, which lies inside the match). `text` is the
   * text's part a rule is read in when not the whole (a YAML mapping).
   */
  private tryRule(s: Sticky, at: number, hitAt = at, text = this.text): number {
    if (hitAt < this.from || hitAt > this.bound) return 0;
    s.re.lastIndex = at;
    const m = s.re.exec(text);
    if (m === null) return 0;
    const match = m[0];
    if (!this.accepts(s, match)) return -match.length;
    this.hit(s.rule.what, hitAt, Rank.Vendor);
    return match.length;
  }

  /** Whether rule `s`'s check accepts `match` (a repeated match, adversarial input or a generated file, is judged once). */
  private accepts(s: Sticky, match: string): boolean {
    if (!s.rule.check) return true;
    if (match !== s.lastMatch) {
      s.lastMatch = match;
      s.lastVerdict = s.rule.check(match);
    }
    return s.lastVerdict;
  }

  /**
   * A vendor's key cut by line breaks (Python's `textwrap.fill`, `fold -w`,
   * a quote's `> ` before each line), at a trigger of `rules` that saw one
   * cut (its token's run ends at a break, or a break cuts its word, its
   * digits, its header): read from its first byte `start` with each break
   * between two of a key's characters removed (`\n` or `\r\n`, and the
   * blanks, tabs and `>` after it), up to the first byte no key holds, and
   * tried with the rules; a match that spans a removed break is a hit, named
   * so. Only here, at a rule's trigger and with that rule: joining every
   * line would make keys of prose's words. Where a key ends a line, the
   * next line's first word is joined to it too, which a rule of a fixed
   * length refuses: the reading is also tried cut at its last two breaks.
   * Linear: a trigger inside what the last joined reading read is not read
   * again (the text there is one run of a key's characters).
   */
  private joined(rules: readonly Sticky[], start: number, max = JOINED_KEY, run: Uint8Array = JOINED_RUN): void {
    if (start < this.from || start > this.bound || this.inJoined(start)) return;
    const b = this.b;
    const out = JOINED;
    const joins = JOINS;
    let count = 0;
    let k = start;
    let n = 0;
    const limit = Math.min(this.end, start + JOINED_SPAN);
    // Past `max` characters (the longest match of the rules) and JOINED_TAIL more, the run is only measured: no trigger inside
    // it is read again.
    const most = max + JOINED_TAIL;
    let line = this.lineStart(start);
    while (k < limit && n <= most) {
      const c = b[k]!;
      if (c === 10 || c === 13) {
        const length = this.wrapAt(k, line, run);
        if (length === 0) {
          // Or a table's cell folded with no right border (the line ends after the piece).
          const cell = this.cellAt(k, run);
          if (cell === 0) break;
          joins[count++] = n;
          k += cell;
          line = k;
          continue;
        }
        joins[count++] = n;
        line = k + (c === 13 ? 2 : 1);
        k += length;
        continue;
      }
      // A table's cell folded: blanks and its border after the piece, the next piece at the same column of the next line.
      if (c === 32 && n > 0) {
        const cell = this.cellAt(k, run);
        if (cell > 0) {
          joins[count++] = n;
          k += cell;
          line = k;
          continue;
        }
      }
      k++;
      out[n++] = c;
      // The byte that ends the key is kept: the rules' look-ahead reads it.
      if (run[c] !== 1) break;
    }
    const measured = n > most;
    if (measured) k = this.joinedRunEnd(k, line, run);
    this.joinedFrom = start;
    this.joinedTo = k;
    extraReading.places++;
    extraReading.bytes += k - start;
    // No break inside; or the next line is a name's assignment (a `.env`'s after a placeholder, `NAME=`), no key's rest.
    if (count === 0 || out[n - 1] === 61) return;
    const what = this.joinedMatch(rules, n, count, measured);
    if (what) this.hit(`${what}, ${WRAPPED_WHAT}`, start, Rank.Vendor);
  }

  /**
   * What the first of `rules` finds in the joined reading (JOINED's first
   * `n` bytes, its `count` breaks at JOINS) across a removed break: the
   * reading whole, then cut at its last two breaks (a key that ends a line,
   * the next line's first word or two joined to it, where the run ends
   * within JOINED_TAIL after that break: a run of a key's characters that
   * goes on, `measured`, is no key and a word).
   */
  private joinedMatch(rules: readonly Sticky[], n: number, count: number, measured: boolean): string | undefined {
    const text = JOINED.toString("latin1", 0, n);
    const first = JOINS[0]!;
    for (const s of rules) {
      for (let e = count; e >= Math.max(0, count - 2); e--) {
        const end = e === count ? n : JOINS[e]!;
        if (end <= first || (e < count && (measured || n - end > JOINED_TAIL))) break;
        s.re.lastIndex = 0;
        const m = s.re.exec(end === n ? text : text.slice(0, end));
        if (m !== null && m[0].length > first && this.accepts(s, m[0])) return s.rule.what;
      }
    }
    return undefined;
  }
  /** Where the run of a key's characters and line breaks between them that goes on at `k` ends (measured, not read joined). */
  private joinedRunEnd(k: number, line: number, run: Uint8Array): number {
    const { b, end } = this;
    for (;;) {
      while (k < end && run[b[k]!] === 1) k++;
      const length = k < end ? this.wrapAt(k, line, run) : 0;
      if (length === 0) return k;
      line = k + (b[k] === 13 ? 2 : 1);
      k += length;
    }
  }

  /**
   * The length of the line break at `k` (and the indent after it) when it
   * may cut a key whose piece ends the line that starts at `line`: between
   * two of a key's characters, and at the end of a line of WRAPPED_LINE_MIN
   * bytes or more (`fold` and `textwrap` fill their lines; a line of a few
   * characters, `sk-` alone, is a list's); else 0.
   */
  private wrapAt(k: number, line: number, run: Uint8Array = JOINED_RUN): number {
    const b = this.b;
    if (k - line < WRAPPED_LINE_MIN || run[b[k - 1]!] !== 1) return 0;
    // The break's length whatever follows it (`%` is no key's character but in PERCENT_JOINED_RUN): `run` judges that.
    const length = wrapBreakLength(b, k);
    return length > 0 && run[b[k + length]!] === 1 ? length : 0;
  }

  /**
   * The length of a table cell's fold at `k` (text-forms.ts's
   * cellBreakLength: blanks and the cell's border after a piece of a key,
   * the next piece at the same column of the next line) between two of a
   * key's characters; else 0.
   */
  private cellAt(k: number, run: Uint8Array = JOINED_RUN): number {
    const b = this.b;
    if (run[b[k - 1]!] !== 1) return 0;
    const length = cellBreakLength(b, k);
    return length > 0 && run[b[k + length]!] === 1 ? length : 0;
  }

  /** Where the line that holds `at` starts (looked for at most WRAPPED_LINE_MIN back: a longer line is long enough). */
  private lineStart(at: number): number {
    const b = this.b;
    const stop = Math.max(0, at - WRAPPED_LINE_MIN);
    for (let k = at - 1; k >= stop; k--) if (b[k] === 10) return k + 1;
    return stop;
  }

  /**
   * How many more places this search may read as a key cut by line breaks,
   * past their byte tests (a vendor word's token that ends a line, a word
   * cut whose pieces make a vendor word's last letters, a JWT's dot, a
   * Telegram token's colon): text made of such places (`sk-\n` repeated)
   * cost 1.5 times the search's time when each was read; the 1,213 MB of
   * the precision audit hold at most 18 in a window. A key hidden behind
   * more than this many in one window is a deliberate hand's work.
   */
  private cuts = CUT_PLACES;
  /** What the last joined reading read of the text. */
  private joinedFrom = -1;
  private joinedTo = -1;
  /** Whether the last joined reading read `at` (a trigger there is not read again). */
  private inJoined(at: number): boolean {
    return at >= this.joinedFrom && at < this.joinedTo;
  }

  /** Whether a token starts at `at`: after a byte out of the token alphabet, or after a terminal's control sequence (escapeEndsAt). */
  private isTokenStart(at: number): boolean {
    const b = this.b;
    return TOKEN[b[at]!] === 1 && (at === 0 || TOKEN[b[at - 1]!] === 0 || escapeEndsAt(b, at - 1));
  }
  /** Whether grep's mark on a context line ends right before `at` (its `-` and a digit before it tested here: the call is rare). */
  private afterGrepMark(at: number): boolean {
    const b = this.b;
    return b[at - 1] === 45 && DIGIT[b[at - 2]!] === 1 && this.grepMarks.endsAt(b, at - 1);
  }
  /** grep's marks on context lines (`path-N-`), read back from the bytes. */
  private readonly grepMarks = new GrepContextMarks();

  /**
   * Where a token starts after a terminal's control sequence whose
   * parameters' digits and final letter begin the run of letters and digits
   * at `start` (a walk back over a token's alphabet from a trigger took them
   * for the token's: `\x1b[0mghp_`, `\x1b[38;5;208meyJ`), before `limit`;
   * -1 where none ends there. Asked only where a run's start read as it is
   * finds no rule, or a walk back stopped at its bound inside a run: its
   * digits are at most the walk's few.
   */
  private startAfterCsi(start: number, limit: number): number {
    const b = this.b;
    // A written escape's letter and hex digits that begin the run (`\u00a0ghp_`, `%A0ghp_`): the token after them.
    const written = writtenEscapeEndAfter(b, start, limit);
    if (written >= 0) return written + 1;
    let k = start;
    // A digit may be an escape sequence's final (`ESC 7`, `ESC ( 0`): tested at each (one byte's test before it, mostly).
    while (k < limit && DIGIT[b[k]!] === 1) {
      if (escapeEndsAt(b, k)) return k + 1;
      k++;
    }
    return k < limit && escapeEndsAt(b, k) ? k + 1 : -1;
  }

  /** The end of the run of token characters that holds `at` (remembered: each run is measured once per pass). */
  private tokenRunEnd(at: number): number {
    return this.tokenRun.end(this.b, this.end, at, Number.POSITIVE_INFINITY);
  }
  private readonly tokenRun = new RememberedRun(TOKEN);

  /** The end of the run of letters, digits and `_-.` that starts at or holds `at`. */
  private runEnd(at: number): number {
    return this.run.end(this.b, this.end, at, Number.POSITIVE_INFINITY);
  }
  private readonly run = new RememberedRun(RUN);
  /** Runs of base64 and token characters, which an M inside does not start a key's body in. */
  private readonly base64Run = new RememberedRun(BASE64_AROUND);
  /** Runs of base64 that may be a value: a key's body from its M (60 characters), an AWS secret key (40). */
  private readonly bodyRun = new RememberedRun(BASE64);

  /** The next index of `literal` at or after `at`, or -1 (remembered until passed: one slot per literal). */
  private nextIndexOf(literal: NextLiteral, at: number): number {
    const known = this.nextLiteral[literal]!;
    if (known === -1 || known >= at) return known;
    const next = this.text.indexOf(NEXT_LITERALS[literal]!, at);
    this.nextLiteral[literal] = next;
    return next;
  }
  /** The remembered indexes of NEXT_LITERALS (-2: not looked for yet). */
  private readonly nextLiteral = [-2, -2, -2];

  /** The end of an unquoted value from `start`, at most `max` characters (ENDS_VALUE ends it). */
  private valueEnd(start: number, max: number): number {
    return this.unquotedValue.end(this.b, this.end, start, max);
  }
  private readonly unquotedValue = new RememberedRun(IN_UNQUOTED_VALUE);

  /** The end of a token value from `start` (TOKEN_VALUE characters), at most `max` characters. */
  private tokenValueEnd(start: number, max: number): number {
    return this.tokenValue.end(this.b, this.end, start, max);
  }
  private readonly tokenValue = new RememberedRun(TOKEN_VALUE);

  /** Whether a .netrc's `password` and a word of 8 characters or more after it (rules.ts judges no shorter one) start between `from` and `within`. */
  private netrcPasswordWithin(from: number, within: number): boolean {
    const { b } = this;
    const password = this.nextIndexOf(NextLiteral.Password, from);
    if (password < 0 || password > within) return false;
    let value = password + 8;
    for (let n = 0; n < 16 && (b[value] === 32 || b[value] === 9); n++) value++;
    let length = 0;
    while (length < 8 && b[value + length]! > 32) length++;
    return length === 8;
  }

  /** Where a pass may stop: no trigger at or after this index leads to a hit before the bound. */
  private stopAt(after: number): number {
    return Math.min(this.end, this.bound + after + 1);
  }

  // ---- the passes ----------------------------------------------------------

  /**
   * The long literals, in one pass of one regular expression (its
   * Boyer-Moore skip makes it cheaper than a search per literal): `BEGIN` of
   * PEM and SSH2 armour, a PuTTY key's first line, the base64 of PEM armour,
   * a .netrc entry's `machine`.
   */
  longLiterals(): void {
    const { text, b } = this;
    const re = LONG_LEADS;
    re.lastIndex = this.from;
    // test() allocates no match: which literal matched is told by its last letter.
    while (re.test(text)) {
      const end = re.lastIndex;
      const lead = LONG_LEAD_BY_LAST[b[end - 1]!]!;
      const i = end - lead.length;
      if (i >= this.stopAt(6)) break;
      re.lastIndex = i + 1;
      switch (lead) {
        case "BEGIN": {
          const dashes = text.startsWith("-----", i - 5) ? 5 : text.startsWith(PANDOC_DASHES, i - 6) ? 6 : 0;
          // Percent-encoded whole (`-----BEGIN%20RSA%20PRIVATE%20KEY-----%0AMIIE…`, `+` for its spaces): rules.ts reads its body.
          if (dashes === 5 && (b[i + 5] === 37 || b[i + 5] === 43)) this.tryRule(URL_PEM, i - 5);
          else if (dashes > 0) {
            // The armour's label is at most 40 characters: PRIVATE KEY must follow within them, and a line of base64 within its headers.
            const label = this.nextIndexOf(NextLiteral.PrivateKey, i + 5);
            if (label < 0 || label > i + 45) break;
            if (this.base64RunWithin(label, i + PEM_BODY_WITHIN) && this.tryRule(PEM, i - dashes) === 0) this.markedPem(i - dashes, label);
          } else if (text.startsWith("---- ", i - 5) && text.startsWith(" SSH2", i + 5)) {
            this.tryRule(SSH2, i - 5);
          }
          break;
        }
        case "TTY-User-Key-File-":
          if (text.startsWith("Pu", i - 2)) this.tryRule(PUTTY, i - 2);
          break;
        case "machine": {
          const c = b[i + 7];
          if ((c === 32 || c === 9) && this.netrcPasswordWithin(i + 8, i + 600)) this.tryRule(NETRC, i);
          break;
        }
        default: {
          const { lead: whole, offset } = BASE64_PEM_LEADS.get(lead)!;
          const start = i - offset;
          if (!text.startsWith(whole, start)) break;
          const length = this.tryRule(BASE64_PEM, start);
          // A block found not to be a key is not read again from inside (it holds none of the other literals: they need `-` or a blank).
          if (length < 0) re.lastIndex = start - length;
        }
      }
    }
  }

  /**
   * A PEM block whose lines a tool marked (line-decorations.ts: grep's
   * `path-N-`, a diff's `-`, `cat -A`'s `$`, a CI log's timestamps), from
   * its armour at `at` whose label's `PRIVATE KEY` is at `label`: read
   * without the marks and judged by the private-key rule. An armour inside
   * what the last such reading read is read again only as its own block's.
   */
  private markedPem(at: number, label: number): void {
    const b = this.b;
    let armourEnd = label + 11;
    if (this.text.startsWith(" BLOCK", armourEnd)) armourEnd += 6;
    const dashes = this.text.startsWith("-----", armourEnd) ? 5 : this.text.startsWith(PANDOC_DASHES, armourEnd) ? 6 : 0;
    if (dashes === 0) return;
    const block = unmarkedBlock(this.text, b, at, armourEnd + dashes, this.end, this.unmarked);
    extraReading.places++;
    extraReading.bytes += block.readTo - at;
    if (block.text === "" || block.text === this.unmarkedJudged) return;
    // A reading the same as one judged no key (a unit repeated: adversarial input, a generated file) is judged the same: not tried again.
    if (this.tryRule(PEM, 0, at, block.text) <= 0 && at >= this.from && at <= this.bound) this.unmarkedJudged = block.text;
  }

  /**
   * Whether a run of 40 base64 characters starts in [at, limit]. What was
   * read is remembered (where the first run starts, or how long the run
   * read last is), so each byte is read once however many armour lines ask.
   */
  private base64RunWithin(at: number, limit: number): boolean {
    if (at < this.base64From || at > this.base64To) {
      this.base64From = this.base64To = at;
      this.base64Length = 0;
      this.base64Start = -1;
    }
    if (this.base64Start >= at) return this.base64Start <= limit;
    const b = this.b;
    const end = Math.min(this.end, limit + 40);
    let i = this.base64To;
    let length = this.base64Length;
    while (i < end && length < 40) {
      length = BASE64[b[i]!] === 1 ? length + 1 : 0;
      i++;
    }
    this.base64To = i;
    this.base64Length = length;
    if (length === 40) this.base64Start = i - 40;
    return this.base64Start >= at && this.base64Start <= limit;
  }
  private readonly unmarked: UnmarkedBlock = { text: "", readTo: 0 };
  /** The last marked block's reading the private-key rule tried and found no key in. */
  private unmarkedJudged = "";
  private base64From = -1;
  private base64To = -1;
  private base64Length = 0;
  private base64Start = -1;

  /** A literal that starts a token; a candidate inside a run skips the rest of the run. */
  private tokenLiteral(lead: string, s: Sticky, minRun: number, ok?: (at: number) => boolean): void {
    const { text } = this;
    for (let i = text.indexOf(lead, this.from); i >= 0 && i < this.stopAt(0); ) {
      if (!this.isTokenStart(i)) {
        i = text.indexOf(lead, this.tokenRunEnd(i));
        continue;
      }
      if (this.runEnd(i) - i >= minRun && (!ok || ok(i))) this.tryRule(s, i);
      i = text.indexOf(lead, i + lead.length);
    }
  }

  literals(): void {
    const b = this.b;
    for (let i = this.text.indexOf("//0", this.from + 1); i >= 0 && i < this.stopAt(1); i = this.text.indexOf("//0", i + 3)) {
      if (b[i - 1] === 49 && this.isTokenStart(i - 1) && this.runEnd(i + 3) - i >= 43) this.tryRule(GOOGLE_OAUTH, i - 1);
    }
    // A private key's DER in base64 (30 then a length: M and C to I), not inside other base64, 60 characters
    // long: each M found natively and tested by a few bytes (an expression that scans for the lead read
    // every byte itself: 9.5 ms on 50 MB of text, against 2.2 for the search).
    const derStop = this.stopAt(0);
    for (let i = this.text.indexOf("M", this.from); i >= 0 && i < derStop; ) {
      // An M inside base64 or a word starts no body: the search goes on after that run (remembered: each run is measured once).
      if (i > 0 && BASE64_AROUND[b[i - 1]!] === 1) {
        i = this.text.indexOf("M", this.base64Run.end(b, this.end, i, Number.POSITIVE_INFINITY));
        continue;
      }
      const c = b[i + 1]!;
      if (c >= 67 && c <= 73 && this.bodyRun.end(b, this.end, i, 60) - i === 60) this.tryRule(DER_KEY, i);
      i = this.text.indexOf("M", i + 1);
    }
    // An OpenSSH private key's body without its armour: its first 19 characters are the same in every
    // key. Found by their `ZX` (11 in), which text seldom holds: a search for the whole literal, or for
    // `b3Bl`, reads every byte of hex and base64 (10 and 8 ms on 50 MB of text, 1.3 ms for `ZX`), and
    // adding it to the long literals' expression made that pass six times slower. Wherever it lies
    // (after an armour's dashes that lost their line break, `-----b3Bl…`, as an HTML page's text
    // reads): no other text holds the literal and the structure after it. A body found not to be a
    // key is not read again from inside.
    for (let i = this.text.indexOf("ZX", this.from + OPENSSH_ZX); i >= 0 && i - OPENSSH_ZX < derStop; ) {
      const at = i - OPENSSH_ZX;
      const length = this.text.startsWith(OPENSSH_BODY_LEAD, at) ? this.tryRule(OPENSSH_BODY, at) : 0;
      i = this.text.indexOf("ZX", i + Math.max(1, -length));
    }
    // SK and exactly 32 hex digits.
    this.tokenLiteral("SK", TWILIO, 34, (at) => HEX[b[at + 2]!] === 1 && HEX[b[at + 33]!] === 1 && TOKEN[b[at + 34]!] !== 1);
    this.metaAccessToken();
    this.googleAndAwsLeads();
  }

  /**
   * A Meta access token: EAA and at least 100 letters and digits at a
   * token's start (META_LEAD), or right after a terminal's control sequence.
   */
  private metaAccessToken(): void {
    const b = this.b;
    // EAA and at least 100 letters and digits at a token's start. indexOf finds the first EAA (text
    // seldom has one); from there the expression, which returns only such runs, finds the next
    // candidate (base64 may hold `/EAA` every few bytes: stopping at each cost it twice the time).
    const text = this.text;
    const stop = this.stopAt(0);
    const meta = META_LEAD;
    const firstLead = text.indexOf("EAA", this.from);
    for (let i = firstLead; i >= 0 && i < stop; ) {
      meta.lastIndex = i;
      const m = meta.exec(text);
      if (!m || m.index >= stop) break;
      this.tryRule(META, m.index);
      i = text.indexOf("EAA", m.index + 3);
    }
    // One right after a terminal's escape or control sequence that ends in a letter or a digit (`\x1b[0mEAA…`, `\x1b(BEAA…`,
    // `\xc2\x9b0mEAA…`), which META_LEAD's look-behind does not take (TOKEN_START's second one, in that expression, cost every
    // EAA it passed: `EAA` repeated 5.9 to 9.5 ms/MiB): the sequence read forward from its introducer, in native code (a loop
    // here over every ESC and 0x9B, a UTF-8 continuation byte of Cyrillic's Л and others, cost their text twice the time).
    // From the first ESC or 0x9B (two native searches; the expression read every byte of text without one: 7% of the scan).
    const after = META_AFTER_ESCAPE;
    const introducer = firstOf(text, TERMINAL_LEADS, Math.max(0, this.from - SEQUENCE_BACK_MAX - 1));
    after.lastIndex = Math.max(0, introducer);
    // test(), not exec(): no match is allocated (the lead ends at lastIndex); `ESC[mEAA` repeated cost 8.4 ms/MiB with exec().
    while (introducer >= 0 && after.test(text)) {
      const at = after.lastIndex - 3;
      if (at >= stop) break;
      after.lastIndex = at;
      if (at < this.from) continue;
      // Its 100 letters and digits (its own bytes: no other candidate's), before the rule is tried.
      let r = at + 3;
      while (r < at + 103 && ALNUM[b[r]!] === 1) r++;
      if (r === at + 103) this.tryRule(META, at);
    }
    // And one right after an escape written as text (`\nEAA…`, `%20EAA…`, `\u001b[32mEAA…`: written-escapes.ts), the same way,
    // from the first EAA (text without one pays no search more).
    const written = META_AFTER_WRITTEN;
    // Read forward from the escape: from where the longest one before the first EAA would start.
    written.lastIndex = Math.max(0, firstLead - WRITTEN_ESCAPE_MAX);
    while (firstLead >= 0 && written.test(text)) {
      const at = written.lastIndex - 3;
      if (at >= stop) break;
      if (at < this.from) continue;
      let r = at + 3;
      while (r < at + 103 && ALNUM[b[r]!] === 1) r++;
      if (r === at + 103) this.tryRule(META, at);
    }
  }

  /** An AWS access key id (AKIA…) and a Google API key (AIza…), whole or cut by a line break. */
  private googleAndAwsLeads(): void {
    const b = this.b;
    // AKIA… and 16 capitals or digits; AIza and 35 token characters. Either cut by a line break (its run ends at one before
    // its length) is read joined (cutLead).
    // test(), not exec(): no match is allocated (every lead is 4 bytes: it starts 4 before lastIndex); text of `AIza\n`
    // repeated cost 7.2 ms/MiB with exec().
    const re = A_LEADS;
    re.lastIndex = this.from;
    while (re.test(this.text)) {
      const at = re.lastIndex - 4;
      if (at >= this.stopAt(0)) break;
      if (!this.isTokenStart(at)) re.lastIndex = this.tokenRunEnd(at);
      else if (b[at + 1] === 73) {
        const end = this.runEnd(at);
        if (end - at >= 39) this.tryRule(GOOGLE_API, at);
        // A line of a few bytes, the lead alone (`AIza\n`), is no key's piece: told without a call (a call each cost text of
        // `AIza\n\n` 0.4 ms/MiB).
        else if (b[end]! <= 13 && (b[end] === 10 || b[end] === 13) && (end - at >= WRAPPED_LINE_MIN || b[at - 1] !== 10) && !this.inJoined(at)) this.cutLead(GOOGLE_API, at, end);
      } else if ((UPPER_DIGIT[b[at + 19]!] === 0 || this.tryRule(AWS_KEY_ID, at) === 0) && !this.inJoined(at)) this.cutAwsKeyId(at);
    }
  }

  /** An AWS access key id's lead at `at` that is no key as it stands: read joined where a line break cuts its 16 characters (cutLead). */
  private cutAwsKeyId(at: number): void {
    const b = this.b;
    let end = at + 4;
    while (end - at < 20 && UPPER_DIGIT[b[end]!] === 1) end++;
    if (end - at < 20 && (b[end] === 10 || b[end] === 13)) this.cutLead(AWS_KEY_ID, at, end);
  }

  /**
   * A Google API key's or an AWS access key id's lead at `at` whose token a
   * line break at `end` cuts before its length (`AIzaSyB…\n…`, as `fold` or
   * `textwrap` cuts it): read joined where the line is long enough and the
   * next goes on with a key's characters (wrapAt). Asked only of a lead
   * whose run ends at a line break: text of `AIza\n` repeated pays the line
   * test (its lines are too short), `  AIza\n` one joined reading per run.
   */
  private cutLead(s: Sticky, at: number, end: number): void {
    if (this.cuts <= 0 || this.wrapAt(end, this.lineStart(at)) === 0) return;
    this.cuts--;
    this.joined([s], at, 40);
  }

  /** `Q~` of an Azure AD client secret: three characters and a digit before it. */
  azureClientSecret(): void {
    const { text, b } = this;
    for (let i = text.indexOf("Q~", this.from + 4); i >= 0 && i < this.stopAt(4); i = text.indexOf("Q~", i + 2)) {
      if (DIGIT[b[i - 1]!] === 1 && AZURE[b[i - 2]!] === 1 && AZURE[b[i - 3]!] === 1 && AZURE[b[i - 4]!] === 1 && (i === 4 || AZURE_AROUND[b[i - 5]!] === 0)) {
        this.tryRule(AZURE_CLIENT, i - 4);
      }
    }
  }

  /**
   * A Matrix recovery key: its shape (groups of four base58 characters) is
   * measured once per alignment, so a repeated group is read once.
   */
  matrixRecoveryKey(): void {
    const { text, b } = this;
    let shapeStart = -1;
    let shapeEnd = -1;
    for (const lead of ["Es", "ES"]) {
      for (let i = text.indexOf(lead, this.from); i >= 0 && i < this.stopAt(0); i = text.indexOf(lead, i + 2)) {
        if (i > 0 && ALNUM[b[i - 1]!] === 1) continue;
        if (i < shapeStart || i >= shapeEnd || (i - shapeStart) % 5 !== 0) {
          // Where the shape of groups that starts at `i` ends: positions 4, 9, … are spaces, the others base58.
          let at = i + 2;
          while (at < this.end && ((at - i) % 5 === 4 ? b[at] === 32 : BASE58[b[at]!] === 1)) at++;
          shapeStart = i;
          shapeEnd = at;
        }
        if (shapeEnd - i < MATRIX_LENGTH || ALNUM[b[i + MATRIX_LENGTH]!] === 1) continue;
        // A key that is not random (its groups repeated) is not read again from inside.
        const length = this.tryRule(MATRIX_RECOVERY, i);
        if (length < 0) i += -length - 2;
      }
    }
  }

  /** The connectors `-`, `_`, `.`: vendor words, and the tokens found at a dot. */
  connector(connector: "-" | "_" | "."): void {
    const { text, b } = this;
    const pairs = PAIRS[connector]!;
    const code = connector.charCodeAt(0);
    const dot = connector === ".";
    const after = dot ? JWT_HEADER_MAX : MAX_TRIGGER_AFTER_START;
    const length = text.length;
    let dense = false;
    for (let i = text.indexOf(connector, this.from + 2); i >= 0 && i < this.stopAt(after); ) {
      if (dot) this.atDot(i);
      const pair = pairs[(b[i - 2]! << 8) | b[i - 1]!]!;
      if (pair === PAIR_WORD) this.word(i, pairs);
      else if (pair !== 0) this.atPair(i, pair, pairs);
      // A run of the connector: none of it ends a word.
      while (b[i + 1] === code) i++;
      // `-` and `_` are token characters: after the first of them in a run, no word can start at a token start, but
      // after grep's mark on a context line (`notes.md-15-sk-…`): the search goes on from the mark's end.
      if (!dot) i = DIGIT[b[i + 1]!] === 1 ? this.grepMarkEnd(i) : Math.max(i, this.tokenRunEnd(i) - 1);
      // The next: where the connector recurs every few bytes (`a\_a\_`, a Markdown escape before each), a native call
      // each cost more than the rest of the pass, so after a near one the bytes after it are read first.
      let next: number;
      if (dense) {
        let k = i + 1;
        const near = Math.min(k + NEAR_BYTES, length);
        while (k < near && b[k] !== code) k++;
        next = k < near ? k : text.indexOf(connector, near);
      } else next = text.indexOf(connector, i + 1);
      dense = next >= 0 && next - i <= NEAR_BYTES;
      i = next;
    }
  }

  /** Where the connector pass goes on from the `-` at `i` (a digit after it): grep's mark's end where `i` starts one, else its run's end. */
  private grepMarkEnd(i: number): number {
    const b = this.b;
    let k = i + 1;
    while (k - i <= 9 && DIGIT[b[k]!] === 1) k++;
    // A .netrc's password line that grep showed as context (`/home/u/.netrc-3-  password …`): a test per mark after a
    // `c`, as the colon pass's of `.netrc:3:` (a search for `.netrc` would stop at each `.` of the text).
    if (b[k] === 45 && b[i - 1] === 99 && b[i - 6] === 46 && this.text.startsWith("netr", i - 5) && this.netrcPasswordWithin(k + 1, k + 600)) this.tryRule(NETRC, i - 6);
    return this.grepMarks.endsAt(b, k) ? k : Math.max(i, this.tokenRunEnd(i) - 1);
  }

  /** The connector at `i` after two bytes its table knows (`pair`, PAIRS' bits). */
  private atPair(i: number, pair: number, pairs: Uint8Array): void {
    if ((pair & PAIR_WORD) !== 0) this.word(i, pairs);
    // A word cut before its connector or its last letter (`ghp\n_`, `gh\np_`): none of it, or one letter, on this line.
    if ((pair & PAIR_CUT) !== 0 && this.cuts > 0) this.cutWord(i, ALNUM[this.b[i - 1]!] === 1 ? i - 1 : i, pairs);
  }

  /**
   * The vendor word that ends with the connector at `i`, if any, and its
   * rules. A word whose token a line break cuts (its run ends at one: `sk-\n`,
   * `sk-ant-ap\ni03-…`, `ghp_abc\ndef…`), or that a line break cuts itself
   * (`g\nhp_`), is read joined (cutToken, called from one place: the common
   * path stays small enough for V8 to inline it in the connector's loop;
   * not inlined, it cost text of `abcdsk-\n` repeated half as much again).
   */
  private word(i: number, pairs: Uint8Array): void {
    const b = this.b;
    let start = i - 1;
    while (start > 0 && i - start < WORD_MAX && ALNUM[b[start - 1]!] === 1) start--;
    // Inside a run, unless grep's mark on a context line ends before the word (`notes.md-15-ghp_`) or a terminal's control
    // sequence ends in it (`\x1b[0mretaindb_`, `\x1b[1;32mgithub_`: the walk stopped at WORD_MAX inside the sequence's final
    // letter or digits).
    if (start > 0 && TOKEN[b[start - 1]!] === 1 && !this.afterGrepMark(start)) {
      const after = this.startAfterCsi(start - 1, i);
      if (after < 0) return;
      start = after;
    }
    // After a dot (SG., ya29., xoxe.), a token of 8 characters or more (or a line break).
    if (b[i] === 46 && this.tokenRunEnd(i + 1) - i <= 8 && LINE_EDGE[b[this.tokenRunEnd(i + 1)]!] === 0) return;
    const end = this.runEnd(start);
    let long = end - start >= TOKEN_RUN_MIN;
    if (long) {
      let rules = BY_WORD.get(this.text.slice(start, i + 1));
      // A run that starts with a terminal's control sequence's digits and final letter (`\x1b[0mghp_`): the word after them.
      if (!rules) {
        const after = this.startAfterCsi(start, i);
        if (after > 0) {
          start = after;
          long = end - start >= TOKEN_RUN_MIN;
          rules = long ? BY_WORD.get(this.text.slice(start, i + 1)) : undefined;
        }
      }
      // Found; or a match the rule's check refused (a placeholder, `ghp_xxxx…`), which more of it would not make a key.
      if (rules) for (const s of rules) if (this.tryRule(s, start) !== 0) return;
    }
    // A key only where a line break cuts it, at its end or before it.
    if (this.cuts > 0 && (LINE_EDGE[b[end]!] === 1 || LINE_EDGE[b[start - 1]!] === 1)) this.cutToken(i, start, end, pairs);
  }

  /**
   * A vendor word's token b[start, end), too short for its rules or not
   * matched by them, at a line's edge: read joined where a line break cuts
   * it (`sk-\n`, `ghp_abc\ndef…`), or where one cuts the word itself
   * (`g\nhp_`: cutWord).
   */
  private cutToken(i: number, start: number, end: number, pairs: Uint8Array): void {
    if (this.inJoined(start)) return;
    const b = this.b;
    const rules = this.rulesOf(start, i + 1);
    if (!rules) {
      if (start > 0 && (b[start - 1] === 10 || isWrapIndent(b[start - 1]!))) this.cutWord(i, start, pairs);
      return;
    }
    // Or a table's cell that folds it (blanks, then its border or the line's end: a byte test or two before the reading).
    const line = b[end] === 10 || b[end] === 13;
    if (!line && !(b[end] === 32 && mayEndCell(b, end))) return;
    this.cuts--;
    if ((line && this.wrapAt(end, this.lineStart(start)) > 0) || this.cellAt(end) > 0) this.joined(rules, start);
  }

  /**
   * BY_WORD's rules for the word b[start, end). The last word asked is
   * remembered by its bytes: a repeated one (adversarial input, a generated
   * file) is not sliced out again.
   */
  private rulesOf(start: number, end: number): Sticky[] | undefined {
    const b = this.b;
    const length = end - start;
    if (length === this.lastWordLength) {
      let k = 0;
      while (k < length && b[start + k] === this.lastWord[k]) k++;
      if (k === length) return this.lastWordRules;
    }
    const rules = BY_WORD.get(this.text.slice(start, end));
    this.lastWordLength = length;
    for (let k = 0; k < length; k++) this.lastWord[k] = b[start + k]!;
    this.lastWordRules = rules;
    return rules;
  }
  private lastWordLength = -1;
  private readonly lastWord = new Uint8Array(WORD_MAX + 1);
  private lastWordRules: Sticky[] | undefined;

  /**
   * A vendor word cut by a line break: its letters b[start, i) on this line
   * (none or some), after an indent and a break, the rest at the end of the
   * line before (`g\nhp_`, `sk\n-`, `gh\n    p_`): the key is read joined
   * from the word's first letter. A few byte tests turn most candidates
   * down: a Markdown list's `-` at a line's start, a word after a blank.
   */
  private cutWord(i: number, start: number, pairs: Uint8Array): void {
    const b = this.b;
    const q = lineEndBeforeBreak(b, start);
    if (q < 0 || ALNUM[b[q]!] !== 1) return;
    // The word's start on the line before, at a token's start.
    const n = i - start;
    let t = q;
    while (t > 0 && q - t + 1 + n < WORD_MAX && ALNUM[b[t - 1]!] === 1) t--;
    if (t > 0 && TOKEN[b[t - 1]!] === 1) return;
    // The word's last two letters once joined, which the connector's table must know; the line before, long enough.
    const last = n >= 1 ? b[i - 1]! : b[q]!;
    const beforeLast = n >= 2 ? b[i - 2]! : n === 1 ? b[q]! : q > 0 ? b[q - 1]! : 0;
    if ((pairs[(beforeLast << 8) | last]! & PAIR_WORD) === 0 || q + 1 - this.lineStart(q + 1) < WRAPPED_LINE_MIN || this.inJoined(t)) return;
    // A vendor word's, told by a hash of its bytes before it is sliced out (a line that ends in `that` before a line that starts
    // with `-`: `at` is `glpat-`'s pair).
    if (!WORD_HASHES.has(wordHash(wordHash(0, b, t, q + 1), b, start, i + 1))) return;
    this.cuts--;
    const rules = BY_WORD.get(this.text.slice(t, q + 1) + this.text.slice(start, i + 1));
    if (rules) this.joined(rules, t);
  }

  /**
   * The JWT whose first dot is at `i` and that the rule did not find whole
   * (atDot), its payload's `eyJ` after the dot (1) or cut by a line break
   * (2): cut by a line break after its first dot, in its payload or
   * signature, or in its header (its line starts inside it), it is read
   * joined. Not after a match the rule's check refused (documentation's
   * token, `alg: none`): more of its signature would change nothing.
   * `start` is where the run of token characters before the dot starts
   * (jwtHeaderStart: the caller has it, or asks for it only here).
   */
  private jwt(i: number, payload: 1 | 2, start: number): void {
    this.cuts--;
    const b = this.b;
    if ((start > 0 && TOKEN[b[start - 1]!] === 1) || this.inJoined(start)) return;
    if (this.jwtLeadAt(start)) {
      // A header of 10 characters or more after `eyJ` on this line, its payload cut after the dot or later.
      if (i - start >= 13 && (payload > 1 || lineBreakLength(b, this.runEnd(i + 1)) > 0)) this.joined([JWT], start, JOINED_JWT);
    } else if (start > 0 && (b[start - 1] === 10 || isWrapIndent(b[start - 1]!))) {
      const first = this.cutStartBefore(start, JWT_HEADER_MAX);
      if ((this.jwtLeadAt(first) || this.cutEyj(first)) && (first === 0 || TOKEN[b[first - 1]!] === 0)) this.joined([JWT], first, JOINED_JWT);
    }
  }

  /**
   * Where the JSON Web Token whose header's run starts at `start` and whose
   * first dot is at `i` starts: there, or after a terminal's control
   * sequence that starts the run (`\x1b[1;32meyJ…`); -1: none.
   */
  private jwtLead(start: number, i: number): number {
    if (this.jwtLeadAt(start)) return start;
    const after = this.startAfterCsi(start, i);
    return after > 0 && i - after >= 13 && this.jwtLeadAt(after) ? after : -1;
  }

  /** Where the run of token characters that ends at the dot `i` starts, read back at most JWT_HEADER_MAX + 1 of them (i: none). */
  private jwtHeaderStart(i: number): number {
    const b = this.b;
    let start = i;
    while (start > 0 && i - start <= JWT_HEADER_MAX && TOKEN[b[start - 1]!] === 1) start--;
    return start;
  }

  /** Whether a JSON Web Token's `eyJ` starts at `at` (after `ops_` for a 1Password token). */
  private jwtLeadAt(at: number): boolean {
    return this.text.startsWith("eyJ", at) || this.text.startsWith("ops_eyJ", at);
  }

  /** Whether `eyJ` may start at `e` at `at` cut by a line break (`e\nyJ`, `ey\nJ`): the byte tests before cutEyj. */
  private mayCutEyj(at: number): boolean {
    const b = this.b;
    const next = b[at + 1]!;
    return next === 10 || next === 13 || (next === 121 && (b[at + 2] === 10 || b[at + 2] === 13));
  }

  /** Whether `eyJ` starts at `at` cut by a line break (before it, or inside: `\neyJ`, `e\nyJ`, `ey\nJ`: a JWT cut after its first dot). */
  private cutEyj(at: number): boolean {
    const b = this.b;
    let k = at;
    let breaks = 0;
    for (const c of EYJ) {
      const n = breaks === 0 ? lineBreakLength(b, k) : 0;
      if (n > 0) {
        k += n;
        breaks++;
      }
      if (b[k] !== c) return false;
      k++;
    }
    return breaks === 1;
  }

  /**
   * Where a token whose line starts at `at` begins, read back across line
   * breaks over token characters (at most `max` of them): a JWT whose header
   * a break cut. What one call read is not read again by the next (a
   * trigger at each line of a run of token characters).
   */
  private cutStartBefore(at: number, max: number): number {
    const b = this.b;
    let start = at;
    let chars = 0;
    for (;;) {
      if (start <= this.cutReadTo && start > this.cutReadFrom) return this.cutReadFrom;
      let q = lineEndBeforeBreak(b, start);
      if (q < 0 || TOKEN[b[q]!] !== 1) break;
      while (q >= 0 && chars < max && TOKEN[b[q]!] === 1) {
        q--;
        chars++;
      }
      start = q + 1;
      if (chars >= max || (q >= 0 && TOKEN[b[q]!] === 1)) break;
    }
    this.cutReadFrom = start;
    this.cutReadTo = at;
    return start;
  }
  /** What cutStartBefore read last: from where it stopped to the line it started at. */
  private cutReadFrom = -1;
  private cutReadTo = -1;

  /** Whether the run of `chars` from `at` is cut by a line break before `length` of them. */
  private cutWithin(at: number, length: number, chars: Uint8Array): boolean {
    const b = this.b;
    let k = at;
    while (k - at < length && chars[b[k]!] === 1) k++;
    return k - at < length && lineBreakLength(b, k) > 0;
  }

  /** Tokens found at a dot: a JSON Web Token's first, a Discord bot token's, a Z.AI key's, an Airtable token's. */
  private atDot(i: number): void {
    const b = this.b;
    const next = b[i + 1]!;
    // A JSON Web Token: `eyJ` and a header of 10 to 800 characters (after `ops_` for a 1Password token), then `.eyJ`.
    if (next === 101) {
      if (b[i + 2] === 121 && b[i + 3] === 74) {
        let start = i - 1;
        while (start > 0 && i - start <= JWT_HEADER_MAX && TOKEN[b[start - 1]!] === 1) start--;
        if (start === 0 || TOKEN[b[start - 1]!] === 0) {
          // A header of at least 10 characters after eyJ, and as much of a payload; else, or where the rule finds none, a token
          // cut by a line break (in its payload or signature, or in its header: its line starts inside it) is read joined.
          const lead = i - start >= 13 && this.tokenRunEnd(i + 1) - i > 13 ? this.jwtLead(start, i) : -1;
          if (lead >= 0) {
            if (this.tryRule(JWT, lead) === 0 && this.cuts > 0) this.jwt(i, 1, start);
          }
          // jwt's start is this walk's, or the dot where the byte before it is none of a token's (this walk starts at that byte).
          else if (this.cuts > 0 && (i - start >= 13 || b[start - 1] === 10 || b[i - 1] === 10 || isWrapIndent(b[start - 1]!))) this.jwt(i, 1, TOKEN[b[i - 1]!] === 1 ? start : i);
        }
      }
      // Or `eyJ` cut by a line break (`.e\nyJ`, `.ey\nJ`).
      else if (this.cuts > 0 && !this.inJoined(i) && this.mayCutEyj(i + 1) && i + 2 - this.lineStart(i) >= WRAPPED_LINE_MIN && this.cutEyj(i + 1)) this.jwt(i, 2, this.jwtHeaderStart(i));
    }
    // Or cut just after it (`.\neyJ`): a test more per dot (`\n` and `\r` are under 14), and a few at a line's last (prose's
    // sentences end a line at one, and the next starts with a capital: asking cutEyj at each cost 50 MB of such prose 2 ms on 33).
    else if (next <= 13 && (next === 10 || next === 13) && (b[i + 2] === 101 || LINE_EDGE[b[i + 2]!] === 1) && TOKEN[b[i - 1]!] === 1 && this.cuts > 0 && !this.inJoined(i) && this.cutEyj(i + 1)) this.jwt(i, 2, this.jwtHeaderStart(i));
    // Discord: [MNO] and 23 to 27 characters, `.`, 6 characters, `.`.
    if (b[i + 7] === 46 && TOKEN[b[i + 1]!] === 1 && TOKEN[b[i + 6]!] === 1 && TOKEN[b[i - 1]!] === 1) {
      let start = i - 1;
      while (start > 0 && i - start < 28 && TOKEN[b[start - 1]!] === 1) start--;
      // Or after a terminal's control sequence whose digits and final letter the walk took for the token's.
      if (b[start] !== 77 && b[start] !== 78 && b[start] !== 79) {
        const after = this.startAfterCsi(start > 0 && TOKEN[b[start - 1]!] === 1 ? start - 1 : start, i);
        if (after > 0) start = after;
      }
      if (i - start >= 24 && (b[start] === 77 || b[start] === 78 || b[start] === 79) && this.tryRule(DISCORD_BOT, start) <= 0 && escapeEndsAt(b, start)) {
        // An escape sequence's final letter that is the token's first (`ESC M`, reverse index): the token after it.
        const next = start + 1;
        if (i - next >= 24 && (b[next] === 77 || b[next] === 78 || b[next] === 79)) this.tryRule(DISCORD_BOT, next);
      }
    }
    // Z.AI: 32 hex digits, `.`, 16 letters or digits.
    if (i >= 32 && HEX[b[i - 1]!] === 1 && HEX[b[i - 32]!] === 1 && (i === 32 || ZAI_AROUND[b[i - 33]!] === 0) && ALNUM[b[i + 1]!] === 1 && ALNUM[b[i + 16]!] === 1) this.tryRule(ZAI, i - 32);
    // Airtable: pat, 14 letters or digits, `.`.
    if (i >= 17 && b[i - 17] === 112 && b[i - 16] === 97 && b[i - 15] === 116) this.tryRule(AIRTABLE, i - 17);
  }

  /** `:` — a URL's `://`, a Telegram bot token, a fal.ai key, a generic assignment. */
  colon(): void {
    this.judgedTo = 0;
    const { text, b } = this;
    const limit = Math.min(this.end, this.bound + MAX_TRIGGER_AFTER_START + 1);
    for (let i = text.indexOf(":", Math.max(1, this.from - MAX_SEPARATOR_BEFORE_VALUE)); i >= 0 && i < limit; i = text.indexOf(":", i + 1)) {
      if (COLON_BEFORE[b[i - 1]!] === 1 || (b[i + 1] === 47 && b[i + 2] === 47)) {
        // An xxd line's offset (`00000010: 454e …`): its colon after a `0`, before a blank (one test per other colon).
        if (b[i - 1] === 48 && b[i + 1] === 32 && (this.forms & Form.HexDump) === 0 && isXxdOffsetColon(b, i)) this.forms |= Form.HexDump;
        this.atColon(i);
      }
      // A colon that starts a line: a Telegram token's, cut just before it.
      else if (b[i - 1] === 10 && TOKEN[b[i + 1]!] === 1 && this.cuts > 0) this.telegramColonCut(i);
    }
  }

  /** A `:` after a byte of COLON_BEFORE, or before `//`. */
  private atColon(i: number): void {
    const b = this.b;
    const before = b[i - 1]!;
    // `"kty":` (`y` before its quote, or before a blank or an escaped quote), or YAML's `kty:` (not `key:`).
    if (i >= 3 && (b[i - 2] === 121 || b[i - 3] === 121 || (before === 121 && b[i - 2] === 116))) this.jsonWebKey(i);
    if (b[i + 1] === 47 && b[i + 2] === 47) this.url(i);
    if (DIGIT[before] === 1) this.telegram(i);
    // A blank or a tab before it (`\n` is the colon pass's own test): one test per colon.
    else if (before <= 32 && TOKEN[b[i + 1]!] === 1 && this.cuts > 0) this.telegramColonCut(i);
    if (HEX[before] === 1 && i >= 36 && b[i - 13] === 45 && HEX[b[i + 1]!] === 1) this.tryRule(FAL, i - 36);
    // A line of a .netrc that grep found (`/home/agent/.netrc:3:  password …`): a test per colon after a `c`, not a
    // search of its own (one for `.netrc` would stop at each `.` of the text).
    if (before === 99 && i >= 6 && b[i - 6] === 46 && this.text.startsWith("netr", i - 5) && this.netrcPasswordWithin(i + 1, i + 600)) this.tryRule(NETRC, i - 6);
    // A letter before: its pair with the letter before it must end a keyword (or be `on`, of Authorization) for an assignment.
    const last = before | 0x20;
    // `name::member` is a scope (C++, Rust, Ruby), not an assignment: `strlen_pass::handle_assign` in GCC's changelog.
    if (b[i + 1] === 58) return;
    if (NAME_END_BEFORE[before] === 1 && (KEYWORD_END[last] === 0 || last === 110 || KEYWORD_PAIR[((b[i - 2]! | 0x20) << 8) | last] === 1)) {
      this.assignment(i, b[i + 1] === 61 ? i + 2 : i + 1);
    }
  }

  /**
   * `"kty"` and the colon `i` after it: a JSON Web Key's type (single quotes
   * too, as Python prints a dict, and quotes escaped, as a JWK set kept in a
   * string), or `kty` plain (YAML, a JavaScript object: yamlWebKey). The
   * hit is at `kty`, so that the window that judges it sees the rest of its
   * object (OVERLAP bytes after it).
   */
  private jsonWebKey(i: number): void {
    const b = this.b;
    let q = i - 1;
    if (b[q] === 32 || b[q] === 9) q--;
    const quote = b[q]!;
    if (quote === 121) {
      if (b[q - 1] === 116) this.yamlWebKey(q, i);
      return;
    }
    if (quote !== 34 && quote !== 39) return;
    let k = q - 1;
    if (b[k] === 92) k--;
    if (k < 3 || b[k] !== 121 || b[k - 1] !== 116 || b[k - 2] !== 107 || b[k - 3] !== quote) return;
    this.objectWebKey(k >= 4 && b[k - 4] === 92 ? k - 4 : k - 3);
  }

  /**
   * A JSON Web Key's object whose `kty` is at `at`, read from its `{` (or a
   * `}` before it) within JWK_BEFORE characters back. What lies between the
   * last `kty` judged and this one is read back once: a `kty` with no brace
   * since the last one is in an object judged already.
   */
  private objectWebKey(at: number): void {
    const b = this.b;
    if (at < this.from || at > this.bound || at <= this.lastJwk) return;
    const farthest = Math.max(0, at - JWK_BEFORE);
    const stop = Math.max(farthest, this.lastJwk + 1);
    this.lastJwk = at;
    let start = -1;
    for (let n = at - 1; n >= stop; n--) {
      const c = b[n];
      if (c === 123 || c === 125) {
        start = c === 123 ? n : n + 1;
        break;
      }
    }
    extraReading.places++;
    extraReading.bytes += at - Math.max(start, stop);
    if (start < 0) {
      if (stop > farthest) return;
      start = farthest;
    }
    extraReading.bytes += Math.abs(this.tryRule(JWK, start, at));
  }
  /** The last `kty` judged (its index). */
  private lastJwk = -1;

  /**
   * `kty:` plain, its `y` at `y` and its colon at `i`, a value after a
   * blank: a JSON Web Key written as YAML. In a flow mapping (its value
   * followed by `,` or `}`, after `{`, `,` or a line break: `- {kty: EC,
   * d: …}`) it is read as a JSON object is; in a block mapping (`kty: RSA`
   * at a line's start, after an indent or a list item's `- `) the mapping
   * is read whole (yamlMapping), also commented out or quoted (a comment's
   * `# ` or a quote's `> ` before each of its lines: a config's disabled
   * block, YAML in a Markdown quote). Anything else (prose's `kty:`, in a
   * comment or not) is passed over.
   */
  private yamlWebKey(y: number, i: number): void {
    const b = this.b;
    const k = y - 2;
    if (k < 0 || b[y - 1] !== 116 || b[k] !== 107 || (b[i + 1] !== 32 && b[i + 1] !== 9)) return;
    // Back over blanks and list items' `- ` to what comes before `kty`.
    let p = k;
    let item = false;
    while (p > 0 && k - p < YAML_INDENT_MAX) {
      const c = b[p - 1]!;
      if (c === 32) p--;
      else if (c === 45 && b[p] === 32) {
        p--;
        item = true;
      } else break;
    }
    const c = p > 0 ? b[p - 1]! : 10;
    // Back over a comment's or a quote's marks to the line's start (`# `, `> > `): each line of the mapping starts with them.
    let marks = p;
    if (c === 35 || c === 62) {
      while (marks > 0 && k - marks < YAML_INDENT_MAX && YAML_MARK[b[marks - 1]!] === 1) marks--;
      if (marks > 0 && b[marks - 1] !== 10) return;
    } else if (c !== 10 && c !== 123 && c !== 44) return;
    if (this.inFlowMapping(i + 1)) this.objectWebKey(k);
    else if (c !== 123 && c !== 44) this.yamlMapping(k, p, item, marks);
  }

  /** Whether the value at `at` (a word, quoted or not) is followed by `,` or `}`, as a flow mapping's (PyYAML's cuts one at 80 columns). */
  private inFlowMapping(at: number): boolean {
    const b = this.b;
    let v = at;
    while (b[v] === 32 || b[v] === 9) v++;
    if (b[v] === 34 || b[v] === 39) v++;
    const word = v;
    while (ALNUM[b[v]!] === 1 && v - word < 16) v++;
    if (v === word) return false;
    if (b[v] === 34 || b[v] === 39) v++;
    while (b[v] === 32 || b[v] === 9) v++;
    return b[v] === 44 || b[v] === 125;
  }

  /**
   * The block mapping whose `kty` is at `k`, its keys' column starting at
   * `line` (`item`: after a list item's `- `, the mapping's first line), its
   * line at `marks`: b[marks, line) are a comment's or a quote's marks
   * (`# `, `> `) that every line of it starts with, or none. Its members
   * are the lines whose key starts at `kty`'s column; a line indented more
   * is one of their values', a blank line or a comment goes on, a line
   * indented less, without the marks, or `---` (a document's end) ends it.
   * It is read back to its first member (or its list item's line) within
   * JWK_BEFORE characters of `kty`, forward to its last within MAX_MATCH
   * characters of `kty`'s line (cut at a line's end: a search's window
   * holds OVERLAP bytes after any place it judges, so the mapping is read
   * in the window that judges `kty` wherever the file's blocks fall), and
   * judged by the JWK rule's check (its part before `kty`'s line, and the
   * rest, each at most MAX_MATCH), whatever its values
   * hold (a flow mapping's braces too); the hit is at `kty`. Linear: what
   * the mapping judged last holds is not read again (a `kty` in it is not
   * judged again, a read back stops at its end). So a `kty` repeated in one
   * mapping, or nested in a mapping before that mapping's own `kty`, is
   * judged with the first (a deliberate hand's: YAML allows a key once in
   * a mapping).
   */
  private yamlMapping(k: number, line: number, item: boolean, marks: number): void {
    if (k < this.from || k > this.bound || k < this.yamlJudgedTo) return;
    const b = this.b;
    const column = k - line;
    const prefix = line - marks;
    let start = marks;
    if (!item) {
      const floor = Math.max(0, k - JWK_BEFORE, this.yamlJudgedTo);
      // `p`: the start of the line below the one read.
      for (let p = marks; p > floor; ) {
        let from = p - 1;
        while (from > floor && b[from - 1] !== 10) from--;
        if (from > 0 && b[from - 1] !== 10) break;
        const indent = yamlLineIndent(b, from, p - 1, marks, prefix);
        if (indent === NOT_IN_BLOCK) break;
        if (indent < 0 || indent > column) {
          p = from;
          continue;
        }
        if (indent < column) {
          // The list item whose first member starts at the column.
          const at = from + prefix + indent;
          if (b[at] === 45 && yamlItemColumn(b, at) - from - prefix === column) start = from;
          break;
        }
        start = from;
        p = from;
      }
    }
    // Forward to the first line indented less (or without the marks, or a document's end), at most MAX_MATCH from kty's line.
    const limit = Math.min(this.end, marks + MAX_MATCH);
    let lineEnd = k;
    while (lineEnd < limit && b[lineEnd] !== 10) lineEnd++;
    let end = lineEnd + 1;
    for (;;) {
      if (end >= limit) {
        // Cut at the last line's end (unless it is `kty`'s).
        if (end > limit && limit < this.end) {
          let cut = limit;
          while (cut > lineEnd && b[cut - 1] !== 10) cut--;
          end = cut > lineEnd ? cut : limit;
        } else end = Math.min(end, this.end);
        break;
      }
      let to = end;
      while (to < limit && b[to] !== 10) to++;
      const indent = yamlLineIndent(b, end, to, marks, prefix);
      if (indent === NOT_IN_BLOCK || (indent >= 0 && (indent < column || (column === 0 && isYamlDocumentEnd(b, end + prefix))))) break;
      end = to + 1;
    }
    this.yamlJudgedTo = end;
    extraReading.places++;
    extraReading.bytes += end - start;
    // Beside `kty`'s line, room for a private member (`d: ` and its value) at least.
    if (marks - start + end - lineEnd - 1 < JWK_VALUE_MIN + 3) return;
    if (this.mappingHoldsKey(start, marks) || this.mappingHoldsKey(marks, end)) this.hit(JWK.rule.what, k, Rank.Vendor);
  }

  /** Whether the JWK rule's check accepts the YAML lines b[from, to) (their marks read as a blank: rules.ts). */
  private mappingHoldsKey(from: number, to: number): boolean {
    return to - from >= JWK_VALUE_MIN + 3 && this.accepts(JWK, this.text.slice(from, to));
  }
  /** Where the block mapping judged last ends (a line's start). */
  private yamlJudgedTo = 0;

  /** `scheme://`: a URL with a password (a database's, a proxy's…), a Slack or Discord webhook. */
  private url(i: number): void {
    const { text, b } = this;
    if (text.startsWith("https", i - 5) && this.isTokenStart(i - 5)) {
      if (text.startsWith("hooks.slack.com/", i + 3)) this.tryRule(SLACK_WEBHOOK, i - 5);
      else if (text.startsWith("discord", i + 3) || text.startsWith("ptb.discord", i + 3) || text.startsWith("canary.discord", i + 3)) this.tryRule(DISCORD_WEBHOOK, i - 5);
    }
    // A URL with a password: user:password@ is at most 258 characters.
    const at = this.nextIndexOf(NextLiteral.At, i + 3);
    if (at < 0 || at - i > 262) return;
    let start = i;
    while (start > 0 && i - start < 12 && URL_SCHEME[b[start - 1]!] === 1) start--;
    if (start === i || !this.isTokenStart(start)) return;
    if (!this.passwordBefore(i + 3, at)) return;
    const scheme = text.slice(start, i);
    if (DATABASE_SCHEME.has(scheme)) this.tryRule(DATABASE_URL, start);
    else if (PASSWORD_URL_SCHEME.has(scheme)) this.tryRule(URL_PASSWORD, start);
  }

  /**
   * Whether b[from, at) is `user:password` as the URL rules read it: a `:`
   * within 128 characters, 3 to 128 after it, no blank, quote, `<`, `>` or
   * `/` (tested here, not by an expression per link: a link every few bytes
   * cost 11 ms/MiB so). It stops at the first `/`, and every `://` holds
   * one, so no byte is read for more than one link.
   */
  private passwordBefore(from: number, at: number): boolean {
    const b = this.b;
    let colon = -1;
    for (let k = from; k < at; k++) {
      const c = b[k]!;
      if (ENDS_USERINFO[c] === 1) return false;
      if (c === 58 && colon < 0) colon = k;
    }
    return colon >= 0 && colon - from <= 128 && at - colon > 3 && at - colon <= 129;
  }

  /**
   * 8 to 10 digits, `:`, and exactly 35 token characters. A token cut by a
   * line break (after its colon, or in its digits) is read joined; one cut
   * just before its colon is telegramColonCut's. The common path stays as
   * small as it was: a test more here cost text of `0:` ~0.6 ms/MiB.
   */
  private telegram(i: number): void {
    const b = this.b;
    const start = digitsStart(b, i);
    const digits = i - start;
    // 8 to 10 digits, or digits cut by a line break before them (`71234\n56789:AA…` as `fold` cuts, after an indent or a quote's
    // `> ` too: telegramDigitsCut reads back over them). One table's test where there was one byte's (`\n`): a test more per
    // colon cost text of `0:` repeated ~0.6 ms/MiB.
    if (isTelegramDigits(b, start, digits) || WRAP_END[b[start - 1]!] === 1) this.telegramAt(i, start, digits);
  }

  /**
   * A Telegram token cut by a line break just before its colon `i`
   * (`7123456789\n:AA…`, after an indent or a quote's `> ` too): its 8 to
   * 10 digits end the line before, and it is read joined from them. Asked
   * (by its callers' byte tests) of a colon that starts a line or follows
   * a blank, before a token's character, and of no other: routed through
   * atColon, a colon that starts a line cost text of `\n:` 9.6 ms/MiB
   * against 4.1.
   */
  private telegramColonCut(i: number): void {
    const b = this.b;
    const q = lineEndBeforeBreak(b, i);
    if (q < 0 || DIGIT[b[q]!] !== 1) return;
    const start = digitsStart(b, q + 1);
    if (!isTelegramDigits(b, start, q + 1 - start) || this.inJoined(start)) return;
    this.cuts--;
    this.joined([TELEGRAM], start, 46);
  }

  /** The Telegram token whose `digits` digits from `start` end at the colon `i`: tried whole, or read joined where a line break cuts it. */
  private telegramAt(i: number, start: number, digits: number): void {
    const b = this.b;
    if (!isTelegramDigits(b, start, digits)) {
      if (this.cuts > 0) this.telegramDigitsCut(start, digits);
      return;
    }
    if (TOKEN[b[i + 35]!] === 1 && TOKEN[b[i + 36]!] !== 1 && this.tryRule(TELEGRAM, start) !== 0) return;
    if (this.cuts > 0 && !this.inJoined(start) && this.cutWithin(i + 1, 35, TOKEN) && i - this.lineStart(start) >= WRAPPED_LINE_MIN - 1) {
      this.cuts--;
      this.joined([TELEGRAM], start, 46);
    }
  }

  /**
   * A Telegram token's digits that start a line, after its indent or a
   * quote's `> ` or not (`digits` of them before its colon at `start +
   * digits`), the rest at the end of the line before:
   * read joined, where its 35 characters after the colon are whole on this
   * line or cut at its end.
   */
  private telegramDigitsCut(start: number, digits: number): void {
    const b = this.b;
    const colon = start + digits;
    let end = colon + 1;
    while (end - colon <= 35 && TOKEN[b[end]!] === 1) end++;
    if (end - colon <= 35 && lineBreakLength(b, end) === 0) return;
    const first = this.digitsBeforeBreak(start, digits);
    if (first >= 0) {
      this.cuts--;
      this.joined([TELEGRAM], first, 46);
    }
  }

  /**
   * `%3A` (or `%3a`): a Telegram bot token's colon percent-encoded, as
   * `encodeURIComponent`, Python's `urlencode` and `curl --data-urlencode`
   * write it in a URL's query or path (`?bot=7123456789%3AAA…`,
   * `/bot7123456789%3AAA…/getMe`). One native search for `%3`, which text
   * seldom holds; a byte's test turns down all but one after a digit, and
   * the digits are read back at most 11 (counted in extraReading).
   */
  percentColon(): void {
    const { text, b } = this;
    const stop = this.stopAt(10);
    for (let i = text.indexOf("%3", this.from + 8); i >= 0 && i < stop; i = text.indexOf("%3", i + 2)) {
      const a = b[i + 2]!;
      // `%3` and a line break (`7123456789%3\nAA…`): the token cut inside its colon.
      if ((a | 0x20) !== 97) {
        if ((a === 10 || a === 13) && this.cuts > 0) this.telegramPercentCut(i);
        continue;
      }
      if (DIGIT[b[i - 1]!] !== 1) {
        // A line break just before `%3A`: the digits end the line before.
        if (LINE_EDGE[b[i - 1]!] === 1 && this.cuts > 0) this.telegramPercentCut(i);
        continue;
      }
      const start = digitsStart(b, i);
      extraReading.places++;
      extraReading.bytes += i - start;
      const digits = i - start;
      if (isTelegramDigits(b, start, digits) && TOKEN[b[i + 37]!] === 1 && TOKEN[b[i + 38]!] !== 1 && this.tryRule(TELEGRAM, start) !== 0) continue;
      // Cut by a line break in its digits (after an indent or a quote's `> `), or in its 35 characters.
      if (this.cuts > 0 && ((digits < 8 && WRAP_END[b[start - 1]!] === 1) || (isTelegramDigits(b, start, digits) && this.cutWithin(i + 3, 35, TOKEN)))) this.telegramPercentCut(i);
    }
    // Encoded again, up to 16 times in all (`%253A`, `%25253A`: a URL encoded again and again, `%25` the `%`;
    // written-escapes.ts's bound): one native search more, for `%25`, which text seldom holds; its `25`s read forward
    // once (at most 15), and the search goes on after them, from the next `%25` at once where one follows (`%25` repeated:
    // a native call for each cost a quarter more of the whole scan). An expression led by `%25` passed the runs over in
    // native code but cost the negatives 7% (Irregexp reads every byte where indexOf skips to a `%`).
    for (let i = text.indexOf("%25", this.from + 8); i >= 0 && i < stop; ) {
      const sign = percentSignLength(b, i);
      const colon = i + sign;
      if (b[colon] === 51 && (b[colon + 1]! | 0x20) === 97 && DIGIT[b[i - 1]!] === 1) {
        const start = digitsStart(b, i);
        extraReading.places++;
        extraReading.bytes += i - start;
        if (isTelegramDigits(b, start, i - start) && TOKEN[b[colon + 36]!] === 1 && TOKEN[b[colon + 37]!] !== 1) this.tryRule(TELEGRAM, start);
      }
      i = b[colon] === 37 && b[colon + 1] === 50 && b[colon + 2] === 53 ? colon : text.indexOf("%25", colon);
    }
    // `%` that ends a line before `3A` (`7123456789%\n3AAA…`): text seldom holds one.
    for (const cut of ["%\n", "%\r\n"]) {
      for (let i = text.indexOf(cut, this.from + 8); i >= 0 && i < stop && this.cuts > 0; i = text.indexOf(cut, i + 2)) {
        const n = lineBreakLength(b, i + 1);
        if (n > 0 && b[i + 1 + n] === 51 && (b[i + 2 + n]! | 0x20) === 97 && DIGIT[b[i - 1]!] === 1) this.telegramPercentCut(i);
      }
    }
  }

  /**
   * A Telegram token whose colon is percent-encoded, its `%` at `p`, cut by
   * a line break somewhere in it (in its digits, before its `%`, inside
   * `%3A`, after it, in its 35 characters): read joined from its first digit,
   * `%` a key's character in that reading. Its digits end before `p`, or at
   * the end of the line before where a break comes just before `p`; they
   * may start a line, the rest at the end of the line before.
   */
  private telegramPercentCut(p: number): void {
    const b = this.b;
    let end = p;
    if (DIGIT[b[p - 1]!] !== 1) {
      const q = lineEndBeforeBreak(b, p);
      if (q < 0 || DIGIT[b[q]!] !== 1) return;
      end = q + 1;
    }
    let start = digitsStart(b, end);
    if (!isTelegramDigits(b, start, end - start)) {
      if (end - start >= 8 || WRAP_END[b[start - 1]!] !== 1) return;
      start = this.digitsBeforeBreak(start, end - start);
      if (start < 0) return;
    }
    // The joined reading counts what it reads, the digits with it.
    if (this.inJoined(start)) return;
    this.cuts--;
    this.joined([TELEGRAM], start, TELEGRAM_PERCENT_MAX, PERCENT_JOINED_RUN);
  }

  /**
   * Where a Telegram token starts whose `digits` digits from `start` start a
   * line (after its indent or a quote's `> ` or not), the rest of its digits
   * at the end of the line before; -1 where they are not a token's.
   */
  private digitsBeforeBreak(start: number, digits: number): number {
    const b = this.b;
    const q = lineEndBeforeBreak(b, start);
    if (q < 0 || q + 1 - this.lineStart(q + 1) < WRAPPED_LINE_MIN) return -1;
    const first = digitsStart(b, q + 1);
    return isTelegramDigits(b, first, q + 1 - first + digits) ? first : -1;
  }

  /** `=` — a generic assignment (`=>` too), an Azure connection string's key. */
  equals(): void {
    this.judgedTo = 0;
    const { text, b, end } = this;
    for (let i = text.indexOf("=", Math.max(1, this.from - MAX_SEPARATOR_BEFORE_VALUE)); i >= 0 && i < end && i <= this.bound; i = text.indexOf("=", i + 1)) {
      const next = b[i + 1]!;
      // Inside a run of `=` (a rule line of them, `=3D=3D` read again decoded) none but the first and the last ends a name
      // or opens a form: a search each cost 7.4 ms/MiB on a run.
      if (next === 61 && b[i - 1] === 61) {
        while (b[i + 2] === 61) i++;
        continue;
      }
      if ((next === 51 || next === 10 || next === 13) && (this.forms & Form.QuotedPrintable) === 0) this.quotedPrintableAt(i);
      // `:=` is the colon's and `==` no assignment: neither `:` nor `=` ends a name.
      const before = b[i - 1]!;
      if (NAME_END_BEFORE[before] === 0) continue;
      if (before === 121 && i >= 10 && b[i - 3] === 75) {
        const start = text.startsWith("SharedAccessKey", i - 15) ? i - 15 : text.startsWith("AccountKey", i - 10) ? i - 10 : -1;
        if (start >= 0 && this.isTokenStart(start)) this.tryRule(AZURE_STORAGE, start);
      }
      this.assignment(i, b[i + 1] === 62 ? i + 2 : i + 1);
    }
  }

  /**
   * Quoted-printable text at the `=` at `i`: `=3D` (an `=` encoded), or a
   * soft line break ending a line of 74 to 76 characters (encoders break at
   * 76, a character or two earlier not to cut a code: Python's quopri and
   * email packages, mail clients); not after another `=` (base64's
   * padding). A line of code, or of YAML with a base64 value, that ends in
   * `=` is seldom that long (the benchmark's text holds one of 73).
   */
  private quotedPrintableAt(i: number): void {
    const b = this.b;
    if (b[i + 1] === 51) {
      if (b[i + 2] === 68) this.forms |= Form.QuotedPrintable;
      return;
    }
    if ((b[i + 1] === 13 && b[i + 2] !== 10) || b[i - 1] === 61 || i < 76) return;
    // No line break in the line's last 73 characters (read back: a short line stops at once), one just before them.
    for (let k = i - 1; k > i - 74; k--) if (b[k] === 10) return;
    if (b[i - 74] === 10 || b[i - 75] === 10 || b[i - 76] === 10) this.forms |= Form.QuotedPrintable;
  }

  /** The forms of writing (text-forms.ts) seen in what this search judges. */
  private forms = 0;

  /**
   * The forms of writing seen where a key judged here may lie: those the
   * `=` pass saw, a zero-width character or soft hyphen between two
   * characters of a key, a backslash escape of punctuation between two
   * letters or digits (`ghp\_A`, `Tr0ub4dor\&3`; not `\/`, JSON's, nor
   * `\"`, `\'` or `\\`, code's) in a run of a key's characters and escapes
   * of ESCAPED_RUN_MIN or more, outside troff. Three native searches, for
   * bytes text seldom holds (typographic quotes and dashes start with 0xE2,
   * as the zero-width characters do: prose pays a test each, a manual's
   * troff source one per backslash); each stops at the first it finds.
   */
  formsOfWriting(): number {
    const { text, b } = this;
    const limit = Math.min(this.end, this.bound + FORM_REACH);
    let forms = this.forms;
    // A window of ASCII holds no invisible character past the leads and no 8-bit introducer (isAscii: 0.1 ms for 8 MiB).
    const ascii = isAscii(b.subarray(this.from, limit));
    for (const { lead, length } of ZERO_WIDTH_LEADS) {
      if (forms & Form.ZeroWidth) break;
      // A search goes on after the character found (a typographic quote or dash: prose holds many).
      for (let i = text.indexOf(lead, this.from); i >= 0 && i < limit; i = text.indexOf(lead, i + length)) {
        const n = zeroWidthLength(b, i);
        if (n > 0 && i > 0 && KEY_CHAR[b[i - 1]!] === 1 && KEY_CHAR[b[i + n]!] === 1) {
          forms |= Form.ZeroWidth;
          break;
        }
      }
    }
    // Where the expression took 5 ms over 8 MiB of prose.
    if (!(forms & Form.ZeroWidth) && !ascii) {
      // Each match read once (the expression's own loop between them); the first between two of a key's characters ends it.
      OTHER_INVISIBLE_BEFORE_KEY.lastIndex = this.from;
      for (let m = OTHER_INVISIBLE_BEFORE_KEY.exec(text); m; m = OTHER_INVISIBLE_BEFORE_KEY.exec(text)) {
        const i = m.index;
        if (i >= limit) break;
        if (i > 0 && KEY_CHAR[b[i - 1]!] === 1) {
          forms |= Form.ZeroWidth;
          break;
        }
      }
    }
    let troffAsked = false;
    // From the first backslash (text without one pays one native search), by one expression (Irregexp's loop, not a
    // call per backslash: text of backslashes and punctuation, `\_\_\_`, cost 3.6 ms/MiB so).
    const first = text.indexOf("\\", this.from);
    ESCAPE_BETWEEN.lastIndex = Math.max(0, first - 1);
    while (first >= 0 && ESCAPE_BETWEEN.test(text)) {
      const i = ESCAPE_BETWEEN.lastIndex - 3;
      if (i >= limit) break;
      // troff, asked at the first escape between letters (a manual's source changes font every few lines): none is Markdown's.
      // Looked for around it, not in the whole window: on text of backslashes, each is a place a search tries (4.7 ms/MiB).
      if (!troffAsked) {
        troffAsked = true;
        const near = text.slice(Math.max(0, i - TROFF_REACH), i + TROFF_REACH);
        if (TROFF_FONTS.some((font) => near.includes(font))) break;
      }
      // A run as long as a value's, not `v\d+\.\d+` of a regular expression; a shorter run is not read again.
      const end = this.escapedRunEnd(i);
      if (end - this.escapedRunStart(i) >= ESCAPED_RUN_MIN) {
        forms |= Form.Escaped;
        break;
      }
      ESCAPE_BETWEEN.lastIndex = Math.max(end - 1, ESCAPE_BETWEEN.lastIndex - 1);
    }
    if (this.sequencesInsideKey(limit, first, ascii)) forms |= Form.TerminalEscapes;
    if (first >= 0 && first < limit && this.continuationInsideKey(limit, first)) forms |= Form.LineContinuation;
    if (first >= 0 && first < limit && this.writtenNulsInsideKey(limit, first)) forms |= Form.WrittenNuls;
    return forms;
  }

  /**
   * Whether `\x00` is written after each of a run of a key's characters
   * (`g\x00h\x00p\x00_\x00`: Python's bytes repr of UTF-16LE text; of
   * UTF-16BE the same, one character on). One expression's own loop from
   * the first backslash, led by the literal `\x00` (a run of `\x00\x00…`
   * fails at each at its next byte); stops at the first found.
   */
  private writtenNulsInsideKey(limit: number, firstBackslash: number): boolean {
    const { text, b } = this;
    WRITTEN_NULS.lastIndex = firstBackslash;
    for (let m = WRITTEN_NULS.exec(text); m && m.index < limit; m = WRITTEN_NULS.exec(text)) {
      if (m.index > 0 && KEY_CHAR[b[m.index - 1]!] === 1) return true;
      WRITTEN_NULS.lastIndex = m.index + 1;
    }
    return false;
  }

  /**
   * Whether a shell's line continuation (a backslash, a line break and its
   * indent: text-forms.ts's continuationLength) lies between two of a key's
   * characters (`…ghp_Q7mZk2Rp9Xv\`, then `B4nT8…` on the next line; red-team
   * pass 33), not after a blank (`./configure \`, a Dockerfile's `&& \`).
   * One expression from the first backslash; stops at the first found.
   */
  private continuationInsideKey(limit: number, firstBackslash: number): boolean {
    const { text, b } = this;
    // One expression's own loop from the first backslash: two native searches, `\` LF and `\` CR LF, stopped at each
    // backslash (`\_` repeated, 8 MiB: 42 against 3 ms; text without a backslash pays neither).
    CONTINUATION.lastIndex = firstBackslash;
    for (let m = CONTINUATION.exec(text); m && m.index < limit; m = CONTINUATION.exec(text)) {
      const i = m.index;
      if (i > 0 && KEY_CHAR[b[i - 1]!] === 1 && KEY_CHAR[b[i + continuationLength(b, i)]!] === 1) return true;
    }
    return false;
  }

  /**
   * Whether a run of a terminal's sequences (terminal-escapes.ts: `ESC[m
   * ESC[K`, `ESC(B`, C2 9B `0m`, an OSC 8 hyperlink's ends, 0x9D's) lies
   * between two of a key's characters, as `grep --color` writes them inside
   * the part of a key it matched; not one at a word's edge (a colourised log's
   * `ESC[33mcommit`, `abc1234ESC[m (`), which the first reading reads
   * through. Three native searches, for bytes text seldom holds (and an
   * expression's from the first 0x9D, which Chinese holds); each run is
   * read once, the search going on after it, and each stops at the first
   * found.
   */
  private sequencesInsideKey(limit: number, firstBackslash: number, ascii: boolean): boolean {
    const { text, b } = this;
    for (const lead of TERMINAL_LEADS) {
      for (let i = text.indexOf(lead, this.from); i >= 0 && i < limit; ) {
        const start = b[i] === CSI_8BIT && i > 0 && b[i - 1] === 0xc2 ? i - 1 : i;
        const end = sequencesEnd(b, start);
        if (end > start && start > 0 && KEY_CHAR[b[start - 1]!] === 1 && KEY_CHAR[b[end]!] === 1) return true;
        i = text.indexOf(lead, Math.max(end, i + 1));
      }
    }
    // The 8-bit OSC, 0x9D or C2 9D, only after a key's character or C2, found by one expression from the first 0x9D: in UTF-8
    // text it is mostly a character's byte (Chinese: 板 is E6 9D BF), and a search and a reading at each cost that text five
    // times its first search (8 MiB of 板 6 to 35 ms). The other control strings' 8-bit introducers (0x90, 0x98, 0x9E, 0x9F:
    // an emoji's F0 9F) the same way, from the first of any of them (by hand, 8 MiB of emoji prose, one every 15 bytes, read
    // by the expression: 10 ms before them and 15 after; text without these bytes pays four native searches more).
    // A window of ASCII holds none of them, where the five searches each read it whole.
    const first = ascii ? -1 : firstOf(text, STRING_8BIT_BYTES, this.from);
    const lead = STRING_8BIT_LEAD;
    lead.lastIndex = Math.max(0, first - 1);
    while (first >= 0 && first < limit && lead.test(text)) {
      const i = lead.lastIndex - 1;
      if (i >= limit) break;
      const start = b[i - 1] === 0xc2 ? i - 1 : i;
      const end = sequencesEnd(b, start);
      if (end > start && start > 0 && KEY_CHAR[b[start - 1]!] === 1 && KEY_CHAR[b[end]!] === 1) return true;
      lead.lastIndex = Math.max(end, i + 1);
    }
    // Their ESC written as text (`sk-or-v1\u001b[m\u001b[K-3f9a…`: grep --color's output kept in a JSON log;
    // written-escapes.ts), the same way: one native search for a written ESC that starts a sequence after a key's character
    // (a search for any written ESC stopped at each of `\e` repeated: 8 MiB of it took 10 times the time), from the first
    // backslash (text without one pays no search more).
    // Caret notation's `^[` (`cat -v`'s) is looked for from its first too: one native search more.
    const firstCaret = text.indexOf("^[", this.from);
    const firstWritten = firstBackslash < 0 ? firstCaret : firstCaret < 0 ? firstBackslash : Math.min(firstBackslash, firstCaret);
    const written = WRITTEN_SEQUENCE_IN_KEY;
    written.lastIndex = firstWritten;
    while (firstWritten >= 0 && written.test(text)) {
      const start = writtenEscStart(b, written.lastIndex);
      if (start >= limit) break;
      let end = start;
      for (let n = writtenSequenceLength(b, end); n > 0; n = writtenSequenceLength(b, end)) end += n;
      if (end > start && KEY_CHAR[b[end]!] === 1) return true;
      written.lastIndex = Math.max(end, start + 1);
    }
    return false;
  }

  /** Where the run of a key's characters and backslash escapes that holds the escape at `i` ends (at most ESCAPED_RUN_MIN on). */
  private escapedRunEnd(i: number): number {
    const b = this.b;
    let k = i;
    while (k - i < ESCAPED_RUN_MIN) {
      if (b[k] === 92 && ASCII_PUNCTUATION[b[k + 1]!] === 1) k += 2;
      else if (KEY_CHAR[b[k]!] === 1) k++;
      else break;
    }
    return k;
  }

  /** Where that run starts (at most ESCAPED_RUN_MIN back). */
  private escapedRunStart(i: number): number {
    const b = this.b;
    let k = i;
    while (i - k < ESCAPED_RUN_MIN && k > 0) {
      if (k >= 2 && b[k - 2] === 92 && ASCII_PUNCTUATION[b[k - 1]!] === 1) k -= 2;
      else if (KEY_CHAR[b[k - 1]!] === 1) k--;
      else break;
    }
    return k;
  }

  /** `>` — the end of an XML element's start tag (`<password>…`). */
  greaterThan(): void {
    this.judgedTo = 0;
    const { text, b, end } = this;
    for (let i = text.indexOf(">", Math.max(1, this.from - MAX_SEPARATOR_BEFORE_VALUE)); i >= 0 && i < end && i <= this.bound; i = text.indexOf(">", i + 1)) {
      if (NAME_END_BEFORE[b[i - 1]!] === 1) this.assignment(i, i + 1);
    }
  }

  /** Whether the name ending at `nameEnd` opens a `${` expansion. */
  private nameInExpansion(nameEnd: number): boolean {
    const nameStart = nameStartBefore(this.b, nameEnd);
    return nameStart >= 2 && this.b[nameStart - 1] === 123 && this.b[nameStart - 2] === 36;
  }

  /** `Authorization` (or `Proxy-Authorization`, any case) ending at `nameEnd`, its scheme and a value of 16 characters or more. */
  private authorization(nameEnd: number, separatorEnd: number): void {
    const b = this.b;
    if (!this.lowerCaseIs(nameEnd - 13, "authorization")) return;
    const start = nameEnd >= 19 && this.lowerCaseIs(nameEnd - 19, "proxy-") ? nameEnd - 19 : nameEnd - 13;
    if (!this.isTokenStart(start)) return;
    let at = separatorEnd;
    for (let n = 0; n < 8 && (b[at] === 32 || b[at] === 9); n++) at++;
    if (b[at] === 34 || b[at] === 39) at++;
    // Bearer, Token or Basic, then blanks, then the credential.
    let word = at;
    while (word < at + 6 && ALNUM[b[word]!] === 1) word++;
    if (b[word] !== 32 && b[word] !== 9) return;
    while (word < at + 14 && (b[word] === 32 || b[word] === 9)) word++;
    if (AUTHORIZATION_VALUE[b[word]!] === 1 && AUTHORIZATION_VALUE[b[word + 15]!] === 1) this.tryRule(AUTHORIZATION, start);
  }

  /** Whether the text at `at`, lower-cased, is `word` (lower-case letters and `-`). */
  private lowerCaseIs(at: number, word: string): boolean {
    for (let k = 0; k < word.length; k++) if ((this.b[at + k]! | 0x20) !== word.charCodeAt(k)) return false;
    return true;
  }

  /** A keyword inside a value already judged is not judged again. */
  private judgedTo = 0;

  /**
   * A generic assignment whose separator spans [separator, separatorEnd):
   * a name that ends in a keyword and a value that looks like a credential
   * (rules.ts judges both). An AWS secret key is such an assignment too.
   */
  private assignment(separator: number, separatorEnd: number): void {
    const b = this.b;
    // Backwards from the separator: up to 8 blanks, a quote (maybe escaped), the name.
    let nameEnd = separator;
    for (let n = 0; n < 8 && nameEnd > 1 && (b[nameEnd - 1] === 32 || b[nameEnd - 1] === 9); n++) nameEnd--;
    if (nameEnd > 2 && QUOTE[b[nameEnd - 1]!] === 1) nameEnd -= b[nameEnd - 2] === 92 ? 2 : 1;
    if (nameEnd < 3) return;
    const last = b[nameEnd - 1]! | 0x20;
    if (last === 110 && nameEnd >= 13) this.authorization(nameEnd, separatorEnd);
    if (KEYWORD_END[last] === 0 || nameEnd < this.judgedTo || KEYWORD_PAIR[((b[nameEnd - 2]! | 0x20) << 8) | last] === 0) return;
    const before = KEYWORD_ENDING.get(((b[nameEnd - 3]! | 0x20) << 16) | ((b[nameEnd - 2]! | 0x20) << 8) | last);
    if (before === undefined || (before !== 0 && (nameEnd < 4 || (b[nameEnd - 4]! | 0x20) !== before))) return;
    // `PASS: addr2line`: a test log's result (DejaGnu, Automake), not a password; `PASS=…` still is one.
    if (last === 115 && b[separator] === 58 && this.isTestResult(nameEnd)) return;
    // Forwards from it: up to 8 blanks, a quote (maybe escaped), the value.
    let start = separatorEnd;
    for (let n = 0; n < 8 && (b[start] === 32 || b[start] === 9); n++) start++;
    if (b[start] === 92 && QUOTE[b[start + 1]!] === 1) start++;
    if (QUOTE[b[start]!] === 1) start++;
    // `${NAME:-default}` (or :? :+; := is a separator already), a shell's or Compose's expansion: its default is the value.
    if (start === separatorEnd && b[separator] === 58 && (b[start] === 45 || b[start] === 63 || b[start] === 43) && this.nameInExpansion(nameEnd)) start++;
    if (start > this.bound) return;
    const text = this.text;
    // The value is measured before the name is read: most candidates are too short for any kind.
    // Password keywords end in d (password, passwd, pwd), e (passphrase) or s (pass); an AWS secret key is 40 characters, maybe after a non-breaking space.
    const maybeToken = TOKEN[b[start]!] === 1 && TOKEN_VALUE[b[start + TOKEN_MIN - 1]!] === 1;
    const maybePassword = (last === 100 || last === 101 || last === 115) && ENDS_VALUE[b[start + PASSWORD_MIN - 1]!] === 0 && start + PASSWORD_MIN <= this.end;
    // An AWS secret key may lie on the next line (a tool wrapped it: pandoc's HTML attributes at 72 columns, a narrow PDF cell).
    const awsNextLine = last === 121 && (b[start] === 10 || (b[start] === 13 && b[start + 1] === 10)) ? this.awsValueOnNextLine(start) : false;
    const maybeAws = awsNextLine || (last === 121 && (b[start] === 0xc2 || TOKEN_VALUE[b[start + 39]!] === 1));
    if (!maybeToken && !maybePassword && !maybeAws) return;
    let tokenEnd = start;
    if (maybeToken || maybeAws) {
      tokenEnd = TOKEN[b[start]!] === 1 ? this.tokenValueEnd(start, VALUE_MAX) : start;
      for (let pad = 0; pad < 2 && b[tokenEnd] === 61; pad++) tokenEnd++;
    }
    const passwordEnd = maybePassword ? this.valueEnd(start, PASSWORD_MAX) : start;
    const aws = awsNextLine || (maybeAws && (tokenEnd - start >= 40 || b[start] === 0xc2));
    if (tokenEnd - start < TOKEN_MIN && passwordEnd - start < PASSWORD_MIN && !aws) return;
    // A repeated name (adversarial input, a generated file) is judged once,
    // told by its bytes: comparing the strings cost a fifth of such a scan.
    const nameStart = nameStartBefore(b, nameEnd);
    if (!this.isLastName(nameStart, nameEnd)) {
      this.lastName = text.slice(nameStart, nameEnd);
      this.lastNameKind = nameKind(this.lastName);
      this.lastNameAwsLength = -1;
      for (let k = nameStart; k < nameEnd; k++) this.lastNameBytes[k - nameStart] = b[k]!;
    }
    const name = this.lastName;
    if (aws) {
      // Asked once per name (a repeated one is told by its bytes, above), and only of a name an AWS value follows.
      if (this.lastNameAwsLength < 0) this.lastNameAwsLength = AWS_SECRET_NAME.exec(name)?.[1]!.length ?? 0;
      if (this.lastNameAwsLength > 0) this.tryRule(AWS_SECRET, nameEnd - this.lastNameAwsLength);
    }
    const kind = this.lastNameKind;
    if (kind === undefined || start < this.from) return;
    const end = kind === "password" ? passwordEnd : tokenEnd;
    this.judgedTo = end;
    // A call (`credentials = standard_b64encode(credentials)`) or a member
    // access (`Pass *p = Resolver->get(PI)`, whose value stops at `>`): code.
    if (end - start < (kind === "password" ? PASSWORD_MIN : TOKEN_MIN) || b[end] === 40 || this.arrowAt(end - 1)) return;
    let value = text.slice(start, end);
    // `‘--http-password=STRING’`: a curly quote (UTF-8, read a byte a character) ends a value as a straight one does.
    const curly = kind === "password" ? value.indexOf("\xe2\x80") : -1;
    if (curly >= 0 && value.charCodeAt(curly + 2) >= 0x98 && value.charCodeAt(curly + 2) <= 0x9f) {
      value = value.slice(0, curly);
      if (value.length < PASSWORD_MIN) return;
    }
    // `group_name:password:GID:user_list`, `HOSTNAME:PORT:USERNAME:PASSWORD:BASE_DN`: a list of fields a manual describes, not an assignment.
    if (b[separator] === 58 && start === separatorEnd && value.includes(":")) return;
    // A repeated assignment (adversarial input, a generated file) is judged once.
    if (value !== this.lastValue || kind !== this.lastKind || name !== this.lastValueName) {
      this.lastValue = value;
      this.lastKind = kind;
      this.lastValueName = name;
      // `"encryptionKey": "encryptionKey1024"` (Go's ML-KEM test vectors): a value that repeats its own name is a label
      // (a name of six or more characters: `pass: compass2024!` is still a password); so is one its name holds
      // (`ResourceManagerV3BasePathKey = "ResourceManagerV3"`, a Go constant of a Terraform provider).
      this.lastSecret = valueLooksSecret(value, kind) && !(name.length >= 6 && valueRepeatsName(name, value));
    }
    // Asked last, of the few values that look secret: it reads the word before the name.
    if (this.lastSecret && !this.proseNameSaysNoSecret(nameStart, name)) this.hit(GENERIC_WHAT, start, Rank.Generic);
  }

  /**
   * Prose that names a key which is no secret: `Next page token: eav1…` (an
   * API's documentation), `Primary key: …`. Only a name of one word, after one
   * blank and a word of at most 24 letters; the two are judged as one name
   * (`page_token`), by nameHoldsNoSecret. `API key: …` still counts.
   */
  private proseNameSaysNoSecret(nameStart: number, name: string): boolean {
    const b = this.b;
    if (name.length > 12 || nameStart < 2 || b[nameStart - 1] !== 32 || ALNUM[b[nameStart - 2]!] !== 1) return false;
    for (let k = 0; k < name.length; k++) if (ALNUM[name.charCodeAt(k)] !== 1) return false;
    let wordStart = nameStart - 1;
    while (wordStart > 0 && nameStart - 1 - wordStart < 24 && ALNUM[b[wordStart - 1]!] === 1) wordStart--;
    if (wordStart > 0 && ALNUM[b[wordStart - 1]!] === 1) return false;
    return nameHoldsNoSecret(`${this.text.slice(wordStart, nameStart - 1)}_${name}`);
  }

  /** Whether 40 characters of an AWS secret key start the line after the break at `at` (after its blanks and a quote). */
  private awsValueOnNextLine(at: number): boolean {
    const b = this.b;
    let k = at + (b[at] === 13 ? 2 : 1);
    for (let n = 0; n < 8 && (b[k] === 32 || b[k] === 9); n++) k++;
    if (QUOTE[b[k]!] === 1) k++;
    return this.bodyRun.end(b, this.end, k, 40) - k === 40;
  }

  /** Whether `->` starts at `i`, as it is or escaped in XML (`-&gt;`, a docx's or an xlsx's markup). */
  private arrowAt(i: number): boolean {
    const b = this.b;
    return b[i] === 45 && (b[i + 1] === 62 || (b[i + 1] === 38 && b[i + 2] === 103 && b[i + 3] === 116 && b[i + 4] === 59));
  }

  /** Whether the name ending at `nameEnd` is `PASS`, `XPASS` or `KPASS`, in capitals, as test logs write their results. */
  private isTestResult(nameEnd: number): boolean {
    const b = this.b;
    if (nameEnd < 4 || b[nameEnd - 1] !== 83 || b[nameEnd - 2] !== 83 || b[nameEnd - 3] !== 65 || b[nameEnd - 4] !== 80) return false;
    let from = nameEnd - 4;
    if (from > 0 && (b[from - 1] === 88 || b[from - 1] === 75)) from--;
    return from === 0 || !isNameChar(b[from - 1]!);
  }
  /** Whether b[from, to) is the last name judged. */
  private isLastName(from: number, to: number): boolean {
    if (to - from !== this.lastName.length) return false;
    const b = this.b;
    for (let k = from; k < to; k++) if (b[k] !== this.lastNameBytes[k - from]) return false;
    return true;
  }

  private lastName = "";
  /** lastName's bytes (a name is at most NAME_MAX long). */
  private readonly lastNameBytes = new Uint8Array(NAME_MAX);
  private lastNameKind: "password" | "token" | undefined;
  /** The length of lastName's AWS part (AWS_SECRET_NAME; 0: none; -1: not asked yet). */
  private lastNameAwsLength = -1;
  private lastValue = "";
  /** The name lastValue was judged under (the verdict asks whether the value repeats it). */
  private lastValueName = "";
  private lastKind = "";
  private lastSecret = false;
}

/** Zero bytes after the text in the bytes the search reads (more than any test reads ahead). */
export const PADDING = 64;

/**
 * A credential in `latin1Text` (UTF-8 bytes read as Latin-1; its bytes in
 * `bytes`, followed by PADDING zero bytes, when the caller has them) whose match starts at or after `from`
 * and before `before`: the leftmost one, or undefined. What lies outside
 * [from, before) still counts as context (a token boundary, an assignment's
 * name, the rest of a match). `known` is a hit found by the caller (a known
 * secret's value) that a rule's hit must come before to win. With `seen`,
 * a search that finds nothing also says which forms of writing
 * (text-forms.ts) it saw, for the caller to read the text again with them
 * undone.
 */
export function findSecret(latin1Text: string, from = 0, bytes?: Uint8Array, before = latin1Text.length, known?: SecretHit, seen?: { forms: number }): SecretHit | undefined {
  if (!tablesMade) makeTables();
  let padded = bytes;
  if (!padded || padded.length < latin1Text.length + PADDING) {
    const copy = Buffer.alloc(latin1Text.length + PADDING);
    if (bytes) copy.set(bytes.subarray(0, latin1Text.length));
    else copy.write(latin1Text, "latin1");
    padded = copy;
  }
  const search = new Search(latin1Text, padded, from, before);
  if (known) search.hit(known.what, known.index, Rank.Known);
  search.longLiterals();
  search.literals();
  search.azureClientSecret();
  search.matrixRecoveryKey();
  for (const c of CONNECTORS) search.connector(c);
  search.colon();
  search.percentColon();
  search.equals();
  search.greaterThan();
  const hit = search.result();
  if (seen) seen.forms = hit ? 0 : search.formsOfWriting();
  return hit;
}
