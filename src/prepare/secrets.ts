// Token formats that must never leave in a text file. Each pattern is anchored
// on a vendor prefix or a PEM armour line, so ordinary prose does not trip it.
//
// The patterns run over the UTF-8 bytes viewed as Latin-1 (one char per byte):
// that view is as cheap as a copy, unlike decoding, and every pattern is ASCII,
// so a multi-byte character only ever reads as non-word characters, exactly as
// it would once decoded. Whitespace is spelled out (ASCII, and NBSP's bytes)
// because `\s` would take a lone continuation byte 0xA0 for a space.

const WS = "(?:[\\t\\n\\v\\f\\r ]|\\xc2\\xa0)";

/** `aws` -> `[aA][wW][sS]`: case-insensitivity for one pattern inside a combined, case-sensitive regex. */
const anyCase = (word: string) => [...word].map((c) => (/[a-z]/i.test(c) ? `[${c.toLowerCase()}${c.toUpperCase()}]` : c)).join("");

const PATTERNS: [what: string, source: string][] = [
  ["a private key block", "-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"],
  ["an AWS access key id", "\\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\\b"],
  ["an AWS secret access key", `${anyCase("aws")}_?${anyCase("secret")}_?${anyCase("access")}_?${anyCase("key")}["']?${WS}*[:=]${WS}*["']?[A-Za-z0-9/+]{40}\\b`],
  ["a GitHub token", "\\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})\\b"],
  ["a Slack token", "\\bxox[abposr]-[A-Za-z0-9-]{10,}"],
  ["a Slack webhook URL", "https://hooks\\.slack\\.com/services/T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]+"],
  ["an Anthropic API key", "\\bsk-ant-[A-Za-z0-9_-]{20,}"],
  ["an OpenAI-style API key", "\\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"],
  ["a Google API key", "\\bAIza[0-9A-Za-z_-]{35}\\b"],
  ["a JSON Web Token", "\\beyJ[A-Za-z0-9_-]{10,}\\.eyJ[A-Za-z0-9_-]{10,}\\.[A-Za-z0-9_-]{10,}"],
];

// One pass of one regex finds any of them; the sticky ones then name it.
const ANY_SECRET = new RegExp(PATTERNS.map(([, source]) => `(?:${source})`).join("|"), "g");
const EACH_SECRET = PATTERNS.map(([what, source]) => [what, new RegExp(source, "y")] as const);

export interface SecretHit {
  what: string;
  /** Index of the match in the scanned text. */
  index: number;
}

/**
 * The leftmost secret in `latin1Text` (UTF-8 bytes read as Latin-1) that
 * starts at or after `from`, or undefined. What lies before `from` still
 * counts as context (a word boundary).
 */
export function findSecret(latin1Text: string, from = 0): SecretHit | undefined {
  ANY_SECRET.lastIndex = from;
  const m = ANY_SECRET.exec(latin1Text);
  if (!m) return undefined;
  for (const [what, re] of EACH_SECRET) {
    re.lastIndex = m.index;
    if (re.test(latin1Text)) return { what, index: m.index };
  }
  return { what: "a secret", index: m.index };
}
