// The credential formats that must never leave, each a regular expression
// tried (sticky) at the places find.ts's passes point to, over text viewed
// one character per byte (UTF-8 bytes read as Latin-1: as cheap as a copy,
// and every pattern is ASCII, so a multi-byte character only ever reads as
// non-word characters).
//
// Linear time. V8's regular expressions backtrack, so each pattern is built
// to do bounded work wherever a match attempt starts:
// - every repetition is bounded ({m,n}), or is followed by a character that
//   its class cannot hold, so a failed attempt gives back at most n
//   characters once, never nested;
// - a token pattern starts with TOKEN_START, a look-behind that refuses to
//   start inside a run of the token alphabet (and find.ts tries it only at a
//   token start), so a run of `eyJ-eyJ-…` is tried once, from its first
//   character, not once per `eyJ` (which made the old JWT pattern quadratic:
//   20 s for 512 KiB);
// - a pattern that starts with a literal holds, after it, only classes that
//   exclude that literal's first character or bounded repetitions.
// So the work per attempt is bounded by the pattern's longest match (under
// 4 KiB, see MAX_MATCH); test/content.test.ts feeds every pattern
// repetitions of its prefix and long runs of its alphabet, and
// bench/content.mjs times the worst of them.
import { isWordChar, nameHoldsNoSecret, nameSaysSecret } from "./secret-variables.js";
import { ESCAPE_ENDS_BEFORE } from "./terminal-escapes.js";
import { PERCENT_SIGN, WRITTEN_ESCAPE_ENDS_BEFORE } from "./written-escapes.js";
import { GREP_CONTEXT_ENDS_BEFORE } from "./line-decorations.js";
import { isExamplePassword, isPlaceholder, looksLikePassword, looksLikeTokenValue, looksRandom } from "./shape.js";

/** No match of any rule is longer than this: the scanner's block overlap must be at least this. */
export const MAX_MATCH = 4000;

const T = "A-Za-z0-9_\\-";
/**
 * A token starts a run of the token alphabet (letters, digits, `_`, `-`),
 * or right after a terminal's escape or control sequence (terminal-escapes.ts:
 * `\x1b[1;32mghp_…`, `\x1b(Bghp_…`), whose final byte is most often a letter,
 * or right after an escape written as text (written-escapes.ts: `\nghp_…`,
 * `\u00a0ghp_…`, `%20ghp_…`, `\u001b[1;32mghp_…`), or right after grep's
 * mark on a context line (line-decorations.ts: `notes.md-15-ghp_…`).
 */
export const TOKEN_START = `(?:(?<![${T}])|${ESCAPE_ENDS_BEFORE}|${WRITTEN_ESCAPE_ENDS_BEFORE}|${GREP_CONTEXT_ENDS_BEFORE})`;
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
  /** Judges a match of at most MAX_MATCH characters (a pure function of it); false lets the scan go on. */
  check?: (match: string) => boolean;
}

// Documented example values that are published: they open no account.
// README "Documented example values" lists them.
export const DOCUMENTED_EXAMPLES = [
  "AKIAIOSFODNN7EXAMPLE", // AWS's example access key id
  "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", // AWS's example secret access key
  "sk_test_4eC39HqLyjWDarjtT1zdp7dc", // Stripe's documentation test key
  "sk_test_BQokikJOvBiI2HlWgH4olfQ2", // Stripe's older documentation test key
  "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ", // the payload of jwt.io's example token
  "2YotnFZFEjr1zCsicMWpAA", // OAuth 2.0's (RFC 6749) example access token
  "tGzv3JOkF0XG5Qx2TlKWIA", // its example refresh token
  "SplxlOBeZQQYbYS6WxSbIA", // its example authorization code
  "czZCaGRSa3F0MzpnWDFmQmF0M2JW", // its example client credentials (s6BhdRkqt3:gX1fBat3bV), as HTTP Basic sends them
  "EAAAN6tcBzAUBOwtDtTfmZCJ9n3FHpSDcDTH86ekf", // the business token of Meta's WhatsApp Embedded Signup guide
  "eyJzb21lIjoicGF5bG9hZCJ9", // the payload of PyJWT's README example ({"some": "payload"}, signed with "secret")
  "0685bd9184jfhq22", // OAuth 1.0's (RFC 5849 3.5.1) example consumer key
  "ad180jjd733klru7", // its example token
  // Found by the precision audit of this machine's files (2026-12-05): examples of standards and of documentation an agent may send.
  "9djdj82h48djs9d2", // OAuth 1.0's (RFC 5849 3.1) example consumer key, which oauthlib's docstrings repeat
  "kkk9d7dh3k39sjv7", // its example token
  "45ghiukldjahdnhzdauz", // OAuth 2.0 token revocation's (RFC 7009 2.1) example token, in oauthlib's docstrings
  "lsdkfol23w54jlksdef", // oauthlib's docstring example OAuth 1.0 token (its access and request token endpoints)
  "sdf0o9823sjdfsdf", // requests-oauthlib's docstring example OAuth 1.0 token
  "2kjshdfp92i34asdasd", // and its token secret
  "eyJpc3MiOiJodHRwczovL2Rldi04N2V2eDlydS5hdXRo", // the payload of PyJWT's PyJWKClient example token ({"iss":"https://dev-87evx9ru.auth0.com/", expired in 2019)
  "EEGlnEPYJV//kbvvIqxKkQwOiS+UENyPncC4bF46ong=", // the WireGuard PrivateKey= of systemd.netdev(5)'s example
  "A7CEFC571974BE02CAC305269DC59F76", // the Master-Key of openssl-sess_id(1)'s example output
  "e0d96d6fad35a61a0577f467940509b5", // the SSH key fingerprint of gcloud's `os-login ssh-keys` examples (their manuals cut it at 57 digits)
  "123Abpassdord", // the --admin-password of gcloud's `oracle-database autonomous-databases create` example
  "a565c27146791cfb", // CherryPy's auth_digest docstring key
];
export const isDocumented = (match: string) => DOCUMENTED_EXAMPLES.some((e) => match.includes(e));

/** The part of a token after its vendor prefix (the first `len` characters dropped). */
const randomAfter = (len: number) => (match: string) => !isDocumented(match) && looksRandom(match.slice(len).replace(/^[_-]+/, ""));
/** What follows `prefix` reads as a token value: letters and digits, random, no identifier (`am_pm_format_v2`). */
const tokenAfter = (prefix: string) => (match: string) => !isDocumented(match) && looksLikeTokenValue(match.slice(prefix.length));

/**
 * The armour's five dashes, or the em and en dash pandoc's smart punctuation
 * writes for them (`—–BEGIN…`, UTF-8 read a byte a character): a key pasted
 * into a document converted by pandoc keeps its body and loses its dashes.
 */
export const PANDOC_DASHES = "\xe2\x80\x94\xe2\x80\x93";
const DASHES = `(?:-----|${PANDOC_DASHES})`;
const PEM_HEADER = `${DASHES}BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?${DASHES}`;
/**
 * What lies between a PEM block's lines: blanks, line breaks, and breaks
 * escaped once or more (`\n`; `\\n` where the PEM is a JSON string inside
 * JSON: Terraform state, a secret manager's `SecretString`), and a list's
 * quotes and commas (Python's list of the lines, `['-----BEGIN…', 'MIIE…']`).
 * A tool's mark on each line (grep's `path-N-`, a diff's `-`, `cat -A`'s
 * `$`) is read by line-decorations.ts, not here.
 */
const PEM_BREAK = `(?:[ \\t\\r\\n'",]|\\\\{1,3}[rn])`;
/** An RFC 1421 header's line break, escaped as PEM_BREAK's may be. */
const PEM_NL = `(?:\\r?\\n|(?:\\\\{1,3}r)?\\\\{1,3}n)`;
/**
 * An RFC 1421 or OpenPGP header (`Proc-Type: 4,ENCRYPTED`, `Version:`): to
 * its line break, or to its list item's end (`'DEK-Info: …', '…`). Linear:
 * each alternative's value ends at its first break or quote, so a header
 * ends at one of two places.
 */
const PEM_HEADER_LINE = `[A-Za-z][A-Za-z-]{1,30}: ?(?:[^\\r\\n\\\\]{0,200}${PEM_NL}|[^\\r\\n\\\\'"]{0,200}['"], ?['"])`;
/**
 * A PEM block with a body: the armour line, optional RFC 1421 / OpenPGP
 * headers, then 40 base64 characters. An armour line followed by `...` is
 * documentation, not a key.
 */
const PEM_SOURCE = `${PEM_HEADER}${PEM_BREAK}{1,8}(?:${PEM_HEADER_LINE}){0,6}${PEM_BREAK}{0,8}[A-Za-z0-9+/]{40}`;
const pemBodyIsRandom = (match: string) => looksRandom(match.slice(-40));

/** A space in a URL's query or a form's body: `%20` (`quote`, encodeURIComponent) or `+` (`quote_plus`, urlencode). */
const URL_SPACE = "(?:%20|\\+)";
/**
 * A PEM private key percent-encoded whole (`curl --data-urlencode
 * key@id_rsa`, Python's `quote(pem, safe="")` or `quote_plus`, a form's
 * body): the armour's spaces `%20` or `+`, its line breaks `%0A` (`%0D%0A`),
 * RFC 1421 headers (`Proc-Type%3A%204%2CENCRYPTED`), then 40 characters of
 * its body, whose `+` and `/` are `%2B` and `%2F` (or `/` kept: `quote`'s
 * default). Linear: the header's characters hold no `%0`, which ends it.
 */
const URL_PEM_SOURCE =
  `-----BEGIN${URL_SPACE}(?:[A-Z0-9]{1,20}${URL_SPACE}){0,4}PRIVATE${URL_SPACE}KEY(?:${URL_SPACE}BLOCK)?-----(?:%0[AaDd]|${URL_SPACE}){1,8}` +
  `(?:[A-Za-z][A-Za-z-]{1,30}%3[Aa](?:[A-Za-z0-9.,_-]|%2[0Cc]|\\+){0,200}(?:%0[AaDd]){1,4}){0,6}(?:[A-Za-z0-9/]|%2[BbFf]){40}`;
/** Its body's 40 characters, percent-decoded, are random (a placeholder's are not). */
const urlPemBodyIsRandom = (match: string) => looksRandom(decodeURIComponentSafe(match).slice(-40));

interface PemAnchor {
  align: number;
  first: number;
  text: string;
}
let pemAnchors: PemAnchor[] | undefined;
/** Base64 of `-----BEGIN `, at each of the three alignments it can have inside base64 text (made on first use, as the rules are). */
function base64PemAnchors(): PemAnchor[] {
  return (pemAnchors ??= [0, 1, 2].map((a) => {
    const header = Buffer.from("-----BEGIN ");
    const encoded = Buffer.concat([Buffer.alloc(a, 0x58), header]).toString("base64");
    return { align: a, first: Math.ceil((8 * a) / 6), text: encoded.slice(Math.ceil((8 * a) / 6), Math.floor((8 * (a + header.length)) / 6)) };
  }));
}

/**
 * Decodes base64 text that starts with one of base64PemAnchors() (whitespace
 * and `\n` escapes of wrapped lines dropped) and says whether it is a PEM
 * private key. Certificates and public keys pass.
 */
function base64IsPrivatePem(match: string): boolean {
  const chars = match.replace(/\\[rn]|[^A-Za-z0-9+/]/g, "");
  const anchor = base64PemAnchors().find((a) => chars.startsWith(a.text));
  if (!anchor) return false;
  // Stand-ins for the characters before the anchor restore the alignment; they garble only the bytes before the header.
  const decoded = Buffer.from("A".repeat(anchor.first) + chars.slice(0, chars.length - ((anchor.first + chars.length) % 4)), "base64").toString("latin1");
  return /^[\s\S]{0,3}----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY/.test(decoded.slice(anchor.align));
}

/** Characters of a DER private key's base64 that the rule reads: enough for its first 45 bytes. */
const DER_KEY_CHARS = 60;

/**
 * Whether base64 text starts with a private key's DER, the body of its PEM
 * block: a SEQUENCE, then version 0 and an INTEGER (PKCS#1 RSA, DSA) or a
 * SEQUENCE (PKCS#8), or version 1 and an OCTET STRING (SEC1 EC) or a
 * SEQUENCE (PKCS#8 v2). A certificate (a SEQUENCE in a SEQUENCE), a public
 * key (a SEQUENCE, or the INTEGER of a modulus first), a PKCS#12 file
 * (version 3) or a signature are other things. A key whose armour a tool
 * rewrote (pandoc's smart punctuation writes `-----` as `—–`; matplotlib's
 * SVG comments write `--` as `- -`) or a copy left out still holds its body.
 */
function derIsPrivateKey(match: string): boolean {
  const chars = match.slice(-DER_KEY_CHARS);
  // A lead repeated (a generated file, adversarial input) is no key's body: a key's next bytes are its own.
  if (chars.includes(chars.slice(0, 8), 1)) return false;
  const d = Buffer.from(chars, "base64");
  if (d[0] !== 0x30) return false;
  const lengthBytes = d[1]! < 0x80 ? 0 : d[1]! - 0x80;
  if (lengthBytes > 2) return false;
  const length = lengthBytes === 0 ? d[1]! : lengthBytes === 1 ? d[2]! : (d[2]! << 8) | d[3]!;
  // An Ed25519 key's PKCS#8 is 46 bytes; no key is shorter, none we know longer than 64 KiB.
  if (length < 46 || (lengthBytes === 1 && length < 0x80) || (lengthBytes === 2 && length < 0x100)) return false;
  const v = 2 + lengthBytes;
  if (d[v] !== 0x02 || d[v + 1] !== 0x01 || (d[v + 2] !== 0 && d[v + 2] !== 1)) return false;
  const next = d[v + 3];
  // RSA's modulus and DSA's p, the INTEGER after version 0, are 64 bytes or more in any key (python-rsa's docstring
  // decodes a toy key with a 5-byte modulus, `MC4CAQACBQ…`).
  if (d[v + 2] === 0 && next === 0x02) return d[v + 4]! >= 0x40;
  return next === 0x30 || (d[v + 2] === 1 && next === 0x04);
}

/** Base64 of `openssh-key-v1` (its NUL's first bits too), which opens every OpenSSH private key's body: found by one search. */
export const OPENSSH_BODY_LEAD = "b3BlbnNzaC1rZXktdjE";
/** Base64 characters of an OpenSSH key's body the rule reads: its header, and random bytes after it (the public key, or the salt and the ciphertext of an encrypted one). */
const OPENSSH_BODY_CHARS = 200;
/** Between the body's lines: blanks, `\n` escapes, and the marks a comment or a quote puts before each line (`#`, `>`, `;`, `*`, `%`, `|`; not `//`, whose slashes are base64). */
const OPENSSH_BODY_SOURCE = `${OPENSSH_BODY_LEAD}(?:[A-Za-z0-9+/]|[ \\t\\r\\n#>;*%|]|\\\\[rn]){${OPENSSH_BODY_CHARS - OPENSSH_BODY_LEAD.length},300}`;

/**
 * Whether base64 text that opens with OPENSSH_BODY_LEAD is an OpenSSH
 * private key's body (`ssh-keygen` wraps it at 70 columns): the magic, a
 * cipher's and a KDF's names of at most 32 printable characters (`none`,
 * `aes256-ctr`, `bcrypt`), KDF options of at most 1 KiB, one to 16 keys,
 * and its 160th to 200th characters random (the public key, or a salt and
 * the ciphertext; a key's first 52 bytes are the same for many). Its armour
 * is what the private-key rule reads; this reads the body a copy or a tool
 * left without it (a comment's `# ` before each line, a quote's `> `).
 */
function opensshBodyIsPrivateKey(match: string): boolean {
  const chars = match.replace(/\\[rn]|[^A-Za-z0-9+/]/g, "");
  if (chars.length < OPENSSH_BODY_CHARS) return false;
  const d = Buffer.from(chars.slice(0, OPENSSH_BODY_CHARS), "base64");
  if (d.toString("latin1", 0, 15) !== "openssh-key-v1\0") return false;
  let at = 15;
  for (const max of [32, 32]) {
    const length = d.readUInt32BE(at);
    if (length < 1 || length > max || !/^[\x21-\x7e]+$/.test(d.toString("latin1", at + 4, at + 4 + length))) return false;
    at += 4 + length;
  }
  const options = d.readUInt32BE(at);
  if (options > 1024) return false;
  at += 4 + options;
  // The key count lies within the bytes read unless the KDF's options are long (bcrypt's are 24 bytes).
  if (at + 4 <= d.length) {
    const keys = d.readUInt32BE(at);
    if (keys < 1 || keys > 16) return false;
  }
  return looksRandom(chars.slice(OPENSSH_BODY_CHARS - 40, OPENSSH_BODY_CHARS));
}

/**
 * A JSON Web Key (RFC 7517) as find.ts hands it: from its object's `{` (or
 * from as far back as it looked, when it saw none) to the next brace or
 * MAX_MATCH characters, which holds its `kty` (find.ts's trigger) and a
 * private key's members whatever their order (`json.dumps(sort_keys=True)`
 * puts `d`, `dp`, `dq` before `kty`). The same key written as YAML is this
 * rule too: a flow mapping (`{kty: EC, d: …}`) is read from its `{` as a
 * JSON object is; a block mapping (`kty: RSA` on a line of its own, in a
 * list item or not, commented out or quoted) is judged by the check alone
 * (find.ts reads its indentation and hands its lines from the first of its
 * members to `kty`'s, and from `kty`'s to its last, each at most
 * MAX_MATCH).
 */
const JWK_SOURCE = "\\{?[^{}]{1,3999}";
/** A private member's name (RFC 7518: an EC or OKP key's `d`, an RSA key's `d`, `p`, `q`, `dp`, `dq`, `qi`, a symmetric key's `k`). */
const JWK_PRIVATE_NAME = "(?:d|p|q|dp|dq|qi|k)";
/** Its value: base64url of 20 characters or more (a P-256 key's `d` is 43, a 128-bit `k` 22). */
export const JWK_VALUE_MIN = 20;
const JWK_PRIVATE_VALUE = `([A-Za-z0-9_-]{${JWK_VALUE_MIN},3000})`;
/**
 * A private member whose value is base64url: its name quoted (JSON, a
 * Python dict's single quotes, a JWK set's escaped quotes in a string) and
 * its value quoted; or, as YAML and a JavaScript object write it, its name
 * plain, at a line's start (after an indent, a list item's `- `, or a
 * comment's `#` or a quote's `>`: a mapping commented out or quoted) or
 * after a flow mapping's `{` or `,`, its value quoted or plain. Linear: each
 * attempt starts at a quote or a name after a blank, and the value's
 * class holds neither.
 */
const JWK_PRIVATE_MEMBER = new RegExp(
  `\\\\?["']${JWK_PRIVATE_NAME}\\\\?["'][ \\t]{0,8}:[ \\t\\r\\n]{0,16}\\\\?["']${JWK_PRIVATE_VALUE}|(?<![^\\s{,#>])${JWK_PRIVATE_NAME}[ \\t]{0,8}:[ \\t]{0,16}["']?${JWK_PRIVATE_VALUE}`,
  "g",
);

/**
 * Whether a JSON Web Key holds a private key: a private member whose value
 * is random. A public key (RSA's `n` and `e`, EC's `x` and `y`) passes, and
 * so does documentation's `"d": "..."`.
 */
function jwkHoldsPrivateKey(match: string): boolean {
  JWK_PRIVATE_MEMBER.lastIndex = 0;
  for (let m = JWK_PRIVATE_MEMBER.exec(match); m; m = JWK_PRIVATE_MEMBER.exec(match)) if (looksRandom(m[1] ?? m[2]!)) return true;
  return false;
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

/** Database schemes: their URLs with a password are told apart from other URLs' (find.ts tries each rule at its schemes). */
export const DATABASE_SCHEMES = ["postgres", "postgresql", "mysql", "mariadb", "mongodb", "mongodb+srv", "redis", "rediss", "amqp", "amqps", "mssql", "sqlserver", "cockroachdb", "clickhouse", "couchdb", "neo4j", "neo4j+s"];
/** Other schemes whose URLs may carry a password: a proxy's (Hermes' TELEGRAM_PROXY), a repository's, a mail server's. */
export const PASSWORD_URL_SCHEMES = ["http", "https", "ws", "wss", "ftp", "ftps", "sftp", "ssh", "git", "git+https", "git+ssh", "socks4", "socks4a", "socks5", "socks5h", "smtp", "smtps", "imap", "imaps"];
/** `scheme://user:password@host` for these schemes: a user of at most 128 characters, a password of 3 to 128. */
const urlWithPassword = (schemes: string[]) => `(?:${schemes.map((s) => s.replace("+", "\\+")).join("|")})://[^\\s:/@"'<>]{0,128}:[^\\s/@"'<>]{3,128}@[A-Za-z0-9.\\[-]`;

/**
 * `scheme://user:password@host`: a password that is neither a placeholder
 * nor the user name again, nor a multi-host URL's port and next host
 * (`https://foo.com:123,foo:bar@bar.com`, pydantic's documentation).
 */
function urlPassword(match: string): boolean {
  const userinfo = match.slice(match.indexOf("://") + 3, match.lastIndexOf("@"));
  const colon = userinfo.indexOf(":");
  const user = userinfo.slice(0, colon);
  if (PORT_THEN_HOST.test(userinfo.slice(colon + 1))) return false;
  const password = decodeURIComponentSafe(userinfo.slice(colon + 1));
  // Documentation's example passwords (`http://john.doe:p4ssw0rd@127.0.0.1:8180`, boto's tests) as an assignment's are.
  if (password === user || isPlaceholder(password) || COMMON_DEV_PASSWORDS.has(password.toLowerCase()) || isExamplePassword(password)) return false;
  return password.length >= 8 ? looksLikePassword(password) || looksRandom(password) : false;
}

const PORT_THEN_HOST = /^[0-9]{1,5},/;
const COMMON_DEV_PASSWORDS = new Set(["password", "passw0rd", "postgres", "mysql", "secret", "admin", "root", "guest", "changeit", "example", "pass", "test"]);

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/**
 * What a tool puts before each line it shows: a line number (`cat -n`'s
 * `     3\t`, `nl`'s, Hermes' read_file `3|`, `grep -n`'s `3:`), a Markdown
 * list's marker (`- `), grep's file and line (`/home/agent/.netrc:1:`, a
 * context line's `-2-`).
 */
const NETRC_LINE_PREFIX = "(?:[ \\t]{0,8}[0-9]{1,9}[|:\\t]|[-*+][ \\t]|[^\\s]{0,255}\\.netrc[:-][0-9]{1,9}[:-])";
/** Between two words of a .netrc entry: blanks, or up to three line breaks, each line behind a tool's prefix or none. */
const NETRC_BREAK = `(?:[ \\t]{1,16}|[ \\t]{0,16}(?:\\r?\\n${NETRC_LINE_PREFIX}?[ \\t]{0,16}){1,3})`;

/** `.netrc`: the word after `password`. */
function netrcPassword(match: string): boolean {
  const password = match.slice(match.lastIndexOf("password") + 8).trim();
  return looksLikePassword(password) || (password.length >= 12 && looksRandom(password));
}

/** `Authorization: Basic|Bearer|Token VALUE`. */
function authorizationValue(match: string): boolean {
  const value = match.slice(match.search(/[ \t][^ \t]+$/) + 1);
  if (isDocumented(value)) return false;
  if (/basic/i.test(match.slice(0, match.length - value.length))) {
    const decoded = Buffer.from(value, "base64").toString("latin1");
    const colon = decoded.indexOf(":");
    return colon > 0 && PRINTABLE.test(decoded) && looksLikePassword(decoded.slice(colon + 1));
  }
  return looksLikeTokenValue(value);
}

// Generic assignments: a name that says key, token, secret or password
// (secret-variables.ts nameSaysSecret), a separator (`=`, `:`, `:=`, `=>`, `>` of an XML element), and a value that
// looks like a credential. find.ts finds them at their separator; the name
// is read back at most NAME_MAX characters and the value forward at most
// VALUE_MAX, so the work per place is bounded.
export const NAME_MAX = 64;
export const VALUE_MAX = 256;
/** Characters of an identifier (names may be dotted or dashed: `spring.datasource.password`, `x-api-key`). */
export const isNameChar = (c: number) => isWordChar(c) || c === 95 || c === 45 || c === 46;

/** Characters that end an unquoted value: whitespace, quotes, code punctuation. */
export const ENDS_VALUE = new Uint8Array(256);
for (const ch of " \t\r\n\v\f\"'`,;<>(){}[]\\&") ENDS_VALUE[ch.charCodeAt(0)] = 1;

const NAME_CHAR = new Uint8Array(256);
for (let c = 0; c < 256; c++) NAME_CHAR[c] = isNameChar(c) ? 1 : 0;

/** Where the name ending at `nameEnd` of `bytes` starts (at most NAME_MAX characters back). */
export function nameStartBefore(bytes: Uint8Array, nameEnd: number): number {
  let nameStart = nameEnd;
  while (nameStart > 0 && nameEnd - nameStart < NAME_MAX && NAME_CHAR[bytes[nameStart - 1]!] === 1) nameStart--;
  return nameStart;
}

/** Characters of a token value (base64 padding `=` only at its end). */
export const TOKEN_VALUE = new Uint8Array(256);
for (const ch of "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+/.~") TOKEN_VALUE[ch.charCodeAt(0)] = 1;
/** A password is read at most this far, a token value at most VALUE_MAX. */
export const PASSWORD_MAX = 64;
/** A password is at least this long, a token value at least TOKEN_MIN. */
export const PASSWORD_MIN = 8;
export const TOKEN_MIN = 16;

/** How a generic assignment's value is judged, by its name: as a password, as a token, or not at all (the name holds no secret). */
export function nameKind(name: string): "password" | "token" | undefined {
  if (!nameSaysSecret(name) || nameHoldsNoSecret(name)) return undefined;
  return /pass|pwd/i.test(name.slice(-10)) ? "password" : "token";
}

/** True when `value`, assigned to a name of `kind`, looks like a real credential. */
export function valueLooksSecret(value: string, kind: "password" | "token"): boolean {
  if (!(kind === "password" ? looksLikePassword(value) : looksLikeTokenValue(value))) return false;
  return !isDocumented(value) && !encodesPlaceholder(value) && !KEY_FILE_NAME.test(value);
}

/**
 * A key's or a certificate's file name (`--private-key=tpm2-pcr-private.pem`,
 * systemd-measure(1), which the reading of its troff source with `\-`
 * undone found): where the key is, not the key.
 */
const KEY_FILE_NAME = /\.(?:pem|key|crt|cer|der|p12|pfx|jks|jwk|pub|gpg|asc)$/i;

/**
 * Base64 of printable text that is a placeholder (`password: 'bm90IG15IHJlYWwgcGFzc3dvcmQ='`,
 * "not my real password", in npm's documentation): a Kubernetes secret's
 * values are written so, and their placeholders too.
 */
function encodesPlaceholder(value: string): boolean {
  // Its padding may be missing (cut off, or never written).
  if (value.length % 4 === 1 || !BASE64_VALUE.test(value)) return false;
  const text = Buffer.from(value, "base64").toString("latin1");
  return PRINTABLE.test(text) && isPlaceholder(text);
}
const BASE64_VALUE = /^[A-Za-z0-9+/]+={0,2}$/;
const PRINTABLE = /^[\x20-\x7e]+$/;

let rules: Rule[] | undefined;
/**
 * Every rule. Built on first call (by find.ts's first search), not when the
 * module loads: building them (and the finder's tables from them) cost every
 * prepare ~1 ms of start-up, and a file whose judging searches no text (a
 * PNG without text chunks) never needs them.
 */
export function allRules(): readonly Rule[] {
  return (rules ??= buildRules());
}

const buildRules = (): Rule[] => [
  { id: "private-key", what: "a private key block", source: PEM_SOURCE, check: pemBodyIsRandom },
  { id: "url-encoded-private-key", what: "a private key block (percent-encoded)", source: URL_PEM_SOURCE, check: urlPemBodyIsRandom },
  { id: "ssh2-private-key", what: "a private key block", source: "---- BEGIN SSH2 (?:ENCRYPTED )?PRIVATE KEY ----" },
  { id: "putty-private-key", what: "a PuTTY private key", source: `PuTTY-User-Key-File-[23]: ?[a-z0-9-]{3,40}${NL}Encryption: ?[a-z0-9-]{3,40}` },
  { id: "base64-private-key", what: "a base64-encoded private key", source: `(?:${base64PemAnchors().map((a) => a.text).join("|")})(?:[A-Za-z0-9+/]|[ \\t\\r\\n]|\\\\[rn]){40,160}`, check: base64IsPrivatePem },
  // Not inside base64 (a `+` or `/` before it), where M may start a line's run by chance; the check reads its DER.
  { id: "der-private-key", what: "a private key block (its base64 body)", source: `(?<![A-Za-z0-9+/_-])M[C-I][A-Za-z0-9+/]{${DER_KEY_CHARS - 2}}`, check: derIsPrivateKey },
  { id: "openssh-key-body", what: "an OpenSSH private key (its base64 body)", source: OPENSSH_BODY_SOURCE, check: opensshBodyIsPrivateKey },
  { id: "aws-access-key-id", what: "an AWS access key id", source: "(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])", check: (m) => !isDocumented(m) },
  {
    id: "aws-secret-access-key",
    what: "an AWS secret access key",
    source: `${anyCase("aws")}[_-]?(?:${anyCase("secret")}[_-]?)?(?:${anyCase("access")}[_-]?)?${anyCase("key")}["']?(?:[ \\t]|\\xc2\\xa0){0,8}[:=](?:[ \\t]|\\xc2\\xa0){0,8}(?:\\r?\\n(?:[ \\t]|\\xc2\\xa0){0,8})?["']?[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])`,
    check: (m) => !isDocumented(m) && looksRandom(m.slice(-40)),
  },
  { id: "github-token", what: "a GitHub token", source: token("(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59,240})"), check: randomAfter(4) },
  { id: "gitlab-token", what: "a GitLab token", source: `gl(?:pat|dt|rt|cbt|ptt|ft|imt|oas|soat|agent|ffct|wt)-[A-Za-z0-9_.-]{20,255}(?![A-Za-z0-9_.-])`, check: (m) => looksRandom(m.slice(m.indexOf("-") + 1)) },
  { id: "slack-token", what: "a Slack token", source: token("(?:xox[abposr]-(?:[0-9]{6,16}-){1,3}[A-Za-z0-9]{16,64}|xoxe(?:\\.xox[bp])?-[0-9]-[A-Za-z0-9]{60,300}|xapp-[0-9]-[A-Z0-9]{8,14}-[0-9]{8,16}-[a-f0-9]{32,80})"), check: (m) => looksRandom(m.slice(m.lastIndexOf("-") + 1)) },
  { id: "slack-webhook", what: "a Slack webhook URL", source: "https://hooks\\.slack\\.com/(?:services|workflows|triggers)/T[A-Z0-9]{6,12}/[A-Z0-9]{6,14}/[A-Za-z0-9]{16,40}", check: (m) => looksRandom(m.slice(m.lastIndexOf("/") + 1)) },
  { id: "discord-webhook", what: "a Discord webhook URL", source: "https://(?:(?:ptb|canary)\\.)?discord(?:app)?\\.com/api/webhooks/[0-9]{17,20}/[A-Za-z0-9_-]{60,70}", check: (m) => looksRandom(m.slice(m.lastIndexOf("/") + 1)) },
  { id: "anthropic-key", what: "an Anthropic API key", source: token("sk-ant-[A-Za-z0-9_-]{32,300}"), check: (m) => looksRandom(m.replace(/^sk-ant-(?:[a-z]+[0-9]{2}-)?/, "")) },
  { id: "openrouter-key", what: "an OpenRouter API key", source: token("sk-or-v1-[0-9a-f]{64}"), check: randomAfter(9) },
  { id: "langfuse-secret-key", what: "a Langfuse secret key", source: token("sk-lf-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), check: randomAfter(6) },
  {
    id: "openai-key",
    what: "an OpenAI-style API key",
    source: token("sk-(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{40,300}|[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}|[A-Za-z0-9]{32,64})"),
    check: (m) => /[0-9]/.test(m) && randomAfter(3)(m.replace(/^sk-(?:proj|svcacct|admin|None)-/, "sk-")),
  },
  { id: "google-api-key", what: "a Google API key", source: token("AIza[0-9A-Za-z_-]{35}"), check: randomAfter(4) },
  // Letters and digits only; not inside base64 (a `+`, `/` or `=` on either side), where EAA may start a run by chance.
  { id: "meta-access-token", what: "a Meta (WhatsApp Cloud, Facebook) access token", source: `(?<![+/])${token("EAA[A-Za-z0-9]{100,1000}")}(?![+/=])`, check: randomAfter(3) },
  { id: "google-oauth", what: "a Google OAuth client secret or token", source: `(?:GOCSPX-[A-Za-z0-9_-]{28}|ya29\\.[0-9A-Za-z_-]{30,2000}|1//0[0-9A-Za-z_-]{40,500})${TOKEN_END}`, check: (m) => looksRandom(m.slice(7)) },
  { id: "groq-key", what: "a Groq API key", source: token("gsk_[A-Za-z0-9]{48,60}"), check: randomAfter(4) },
  { id: "xai-key", what: "an xAI API key", source: token("xai-[A-Za-z0-9]{60,100}"), check: randomAfter(4) },
  { id: "huggingface-token", what: "a Hugging Face token", source: token("(?:hf_|api_org_)[A-Za-z0-9]{30,40}"), check: (m) => looksRandom(m.slice(m.lastIndexOf("_") + 1)) },
  { id: "fireworks-key", what: "a Fireworks AI API key", source: token("(?:fw[_-]|fpk_)[A-Za-z0-9]{20,64}"), check: (m) => /[0-9]/.test(m) && looksRandom(m.slice(3).replace(/^_/, "")) },
  { id: "perplexity-key", what: "a Perplexity API key", source: token("pplx-[A-Za-z0-9]{40,60}"), check: randomAfter(5) },
  { id: "replicate-token", what: "a Replicate API token", source: token("r8_[A-Za-z0-9]{37}"), check: randomAfter(3) },
  { id: "tavily-key", what: "a Tavily API key", source: token("tvly-(?:dev-|prod-)?[A-Za-z0-9]{28,40}"), check: (m) => looksRandom(m.slice(m.lastIndexOf("-") + 1)) },
  { id: "firecrawl-key", what: "a Firecrawl API key", source: token("fc-[0-9a-f]{32}"), check: randomAfter(3) },
  { id: "browserbase-key", what: "a Browserbase API key", source: token("bb_live_[A-Za-z0-9_-]{20,40}"), check: randomAfter(8) },
  { id: "nvidia-key", what: "an NVIDIA API key", source: token("nvapi-[A-Za-z0-9_-]{60,80}"), check: randomAfter(6) },
  { id: "cerebras-key", what: "a Cerebras API key", source: token("csk-[a-z0-9]{40,60}"), check: randomAfter(4) },
  { id: "digitalocean-token", what: "a DigitalOcean token", source: token("do[opr]_v1_[0-9a-f]{64}"), check: randomAfter(7) },
  { id: "notion-token", what: "a Notion token", source: token("(?:ntn_[A-Za-z0-9]{40,50}|secret_[A-Za-z0-9]{43})"), check: (m) => /[0-9]/.test(m) && looksRandom(m.slice(m.indexOf("_") + 1)) },
  { id: "linear-key", what: "a Linear API key", source: token("lin_(?:api|oauth)_[A-Za-z0-9]{40}"), check: (m) => looksRandom(m.slice(-40)) },
  { id: "airtable-token", what: "an Airtable token", source: token("pat[A-Za-z0-9]{14}\\.[0-9a-f]{64}"), check: (m) => looksRandom(m.slice(-64)) },
  { id: "elevenlabs-key", what: "an ElevenLabs API key", source: token("sk_[0-9a-f]{48}"), check: randomAfter(3) },
  // The prefixes Hermes' own redactor (agent/redact.py, hermes-agent 0.19.0)
  // knows for keys its .env template holds. Their lengths are not published,
  // so a body of 16 to 200 characters must also read as a token, not a name.
  { id: "exa-key", what: "an Exa API key", source: token("exa_[A-Za-z0-9]{16,200}"), check: tokenAfter("exa_") },
  { id: "retaindb-key", what: "a RetainDB API key", source: token("retaindb_[A-Za-z0-9]{16,200}"), check: tokenAfter("retaindb_") },
  { id: "hindsight-key", what: "a Hindsight API key", source: token("hsk-[A-Za-z0-9]{16,200}"), check: tokenAfter("hsk-") },
  { id: "mem0-key", what: "a Mem0 API key", source: token("mem0_[A-Za-z0-9]{16,200}"), check: tokenAfter("mem0_") },
  { id: "byterover-key", what: "a ByteRover API key", source: token("brv_[A-Za-z0-9]{16,200}"), check: tokenAfter("brv_") },
  { id: "agentmail-key", what: "an AgentMail API key", source: token("am_[A-Za-z0-9_-]{16,200}"), check: tokenAfter("am_") },
  { id: "fal-token", what: "a fal.ai API key", source: token("fal_[A-Za-z0-9_-]{16,200}"), check: tokenAfter("fal_") },
  { id: "stripe-key", what: "a Stripe secret key", source: token("(?:(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,250}|whsec_[A-Za-z0-9]{32,100})"), check: (m) => !isDocumented(m) && looksRandom(m.slice(m.lastIndexOf("_") + 1)) },
  { id: "npm-token", what: "an npm access token", source: token("npm_[A-Za-z0-9]{36}"), check: randomAfter(4) },
  { id: "pypi-token", what: "a PyPI API token", source: token("pypi-AgE[A-Za-z0-9_-]{70,300}"), check: randomAfter(30) },
  { id: "sendgrid-key", what: "a SendGrid API key", source: token("SG\\.[A-Za-z0-9_-]{22}\\.[A-Za-z0-9_-]{43}"), check: (m) => looksRandom(m.slice(-43)) },
  { id: "twilio-key", what: "a Twilio API key", source: token("SK[0-9a-f]{32}"), check: randomAfter(2) },
  { id: "azure-storage-key", what: "an Azure storage or Service Bus key", source: "(?:AccountKey|SharedAccessKey)=[A-Za-z0-9+/]{40,100}={0,2}", check: (m) => looksRandom(m.slice(m.indexOf("=") + 1)) },
  { id: "azure-client-secret", what: "an Azure AD client secret", source: "(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])", check: (m) => looksRandom(m.slice(6)) },
  {
    id: "database-url",
    what: "a database URL with a password",
    source: urlWithPassword(DATABASE_SCHEMES),
    check: urlPassword,
  },
  {
    id: "url-password",
    what: "a URL with a password",
    source: urlWithPassword(PASSWORD_URL_SCHEMES),
    check: urlPassword,
  },
  // An entry as the file writes it, or each line behind what a tool puts before it (NETRC_LINE_PREFIX); a password line grep found (`.netrc:3:  password …`).
  {
    id: "netrc-password",
    what: "a .netrc password",
    source: `machine[ \\t]{1,16}[^\\s]{1,253}${NETRC_BREAK}(?:login[ \\t]{1,16}[^\\s]{1,256}${NETRC_BREAK})?password[ \\t]{1,16}[^\\s]{4,256}|\\.netrc(?::(?:[0-9]{1,9}:)?|-[0-9]{1,9}-)[ \\t]{0,16}(?:machine[ \\t]{1,16}[^\\s]{1,253}[ \\t]{1,16})?(?:login[ \\t]{1,16}[^\\s]{1,256}[ \\t]{1,16})?password[ \\t]{1,16}[^\\s]{4,256}`,
    check: netrcPassword,
  },
  // After a written escape too (written-escapes.ts: `%20`, `\u00a0`). Its colon percent-encoded too (`%3A`, `%3a`: encodeURIComponent, Python's urlencode, curl --data-urlencode, in a URL's query or path), and encoded again up to 16 times in all (`%253A`, `%25253A`: a URL encoded again and again; written-escapes.ts's PERCENT_SIGN, since recall pass 34).
  { id: "telegram-bot-token", what: "a Telegram bot token", source: `(?:(?<![0-9])|${ESCAPE_ENDS_BEFORE}|${WRITTEN_ESCAPE_ENDS_BEFORE})[0-9]{8,10}(?::|${PERCENT_SIGN}3[Aa])[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])`, check: (m) => looksRandom(m.slice(-35)) },
  { id: "discord-bot-token", what: "a Discord bot token", source: token("[MNO][A-Za-z0-9_-]{23,27}\\.[A-Za-z0-9_-]{6}\\.[A-Za-z0-9_-]{27,40}"), check: isDiscordToken },
  { id: "matrix-token", what: "a Matrix access token", source: token("(?:syt_[A-Za-z0-9]{1,80}_[A-Za-z0-9]{20}_[A-Za-z0-9]{6}|(?:mat|mct|mar)_[A-Za-z0-9]{30}_[A-Za-z0-9]{6})"), check: (m) => looksRandom(m.split("_").at(-2)!) },
  { id: "matrix-recovery-key", what: "a Matrix recovery key", source: "(?<![A-Za-z0-9])E[Ss][1-9A-HJ-NP-Za-km-z]{2}(?: [1-9A-HJ-NP-Za-km-z]{4}){11}(?![A-Za-z0-9])", check: (m) => looksRandom(m.replace(/ /g, "")) },
  { id: "jwk-private-key", what: "a private key as a JSON Web Key (JWK)", source: JWK_SOURCE, check: jwkHoldsPrivateKey },
  { id: "jwt", what: "a JSON Web Token", source: `${TOKEN_START}(?:ops_)?eyJ[${T}]{10,800}\\.eyJ[${T}]{10,3000}\\.[${T}]{16}`, check: isSignedJwt },
  { id: "zai-key", what: "a Z.AI API key", source: "(?<![A-Za-z0-9_.-])[0-9a-f]{32}\\.[A-Za-z0-9]{16}(?![A-Za-z0-9_.-])", check: (m) => looksRandom(m.slice(-16)) && /[0-9]/.test(m.slice(-16)) },
  { id: "fal-key", what: "a fal.ai API key", source: "(?<![A-Za-z0-9-])[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}:[0-9a-f]{32}(?![A-Za-z0-9])", check: (m) => looksRandom(m.slice(-32)) },
  {
    id: "authorization-header",
    what: "an HTTP Authorization credential",
    source: `(?:${anyCase("proxy-")})?${anyCase("authorization")}["']?[ \\t]{0,8}[:=][ \\t]{0,8}["']?(?:${anyCase("bearer")}|${anyCase("token")}|${anyCase("basic")})[ \\t]{1,8}[A-Za-z0-9_\\-+/=.~]{16,2000}`,
    check: authorizationValue,
  },
];

/** What find.ts reports for a generic assignment. */
export const GENERIC_WHAT = "a credential assigned to a key, token, secret or password name";
