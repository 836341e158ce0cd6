// Finds the rules of rules.ts in text, in linear time and fast on ordinary
// text. V8 tries every alternative of a combined regular expression at every
// position (fifty rules in one made the scan ~100x slower than the copy), so
// each rule is tried only where it can start:
// - token rules where a token starts inside a long run. Every token is part
//   of a run of at least RUN_MIN characters of letters, digits and
//   `_-.:/+=~`; a strided pass finds those runs by looking at one byte in
//   RUN_MIN (a run that long holds one), then each token start in the run
//   picks, by its first two characters, the few rules that can start there,
//   each a sticky regex tried at that one place;
// - generic assignments at a token start that follows a separator, and at
//   each password keyword (a password may be shorter than RUN_MIN);
// - the rules led by a literal (PEM armour, its base64, `Q~` of an Azure
//   secret, a Matrix recovery key) by one regex each, which V8 runs with a
//   Boyer-Moore skip.
// Each place is tried once; each try reads a bounded stretch; a stretch read
// for a rejected value or base64 block is not read again for the same rule.
// So the whole is linear in the text (test/content-rules.test.ts feeds every
// rule its adversarial inputs; bench/content.mjs times them).
import { GENERIC_WHAT, RULES, type Rule, assignmentAt, assignmentValueEnd, nameEndBefore } from "./rules.js";

/** Shortest run the strided pass stops at. */
const RUN_MIN = 12;

/** Letters, digits, `_` and `-`: what a token's parts are made of. */
const TOKEN = new Uint8Array(256);
/** TOKEN and the connectors inside tokens and assignments: `.:/+=~`. */
const RUN = new Uint8Array(256);
for (let c = 0; c < 128; c++) {
  const ch = String.fromCharCode(c);
  if (/[A-Za-z0-9_-]/.test(ch)) TOKEN[c] = 1;
  if (/[A-Za-z0-9_\-.:/+=~]/.test(ch)) RUN[c] = 1;
}

interface Sticky {
  rule: Rule;
  re: RegExp;
}

const sticky = (rule: Rule): Sticky => ({ rule, re: new RegExp(rule.source, "y") });

/** Token rules by the two bytes they start with (`first << 8 | second`). */
const BY_START = new Map<number, Sticky[]>();
const LITERAL = new Map<string, Sticky>();
for (const rule of RULES) {
  if (rule.start === "literal") {
    LITERAL.set(rule.id, sticky(rule));
    continue;
  }
  const s = sticky(rule);
  for (const two of rule.start) {
    const key = (two.charCodeAt(0) << 8) | two.charCodeAt(1);
    const list = BY_START.get(key);
    if (list) list.push(s);
    else BY_START.set(key, [s]);
  }
}

interface LiteralLead {
  re: RegExp;
  rule: Sticky;
  /** Where the rule's match starts, from the literal's. */
  offset: number;
  /** After a rejected match, literals inside it are not tried again (base64 text is full of them). */
  skipRejected: boolean;
}
const lead = (re: RegExp, id: string, offset = 0, skipRejected = false): LiteralLead => ({ re, rule: LITERAL.get(id)!, offset, skipRejected });
const LITERALS: LiteralLead[] = [
  lead(/-----BEGIN/g, "private-key"),
  lead(/---- BEGIN SSH2/g, "ssh2-private-key"),
  lead(/PuTTY-User-Key-File-/g, "putty-private-key"),
  lead(/LS0tLS1CRUdJTi|0tLS0tQkVHSU4g|tLS0tLUJFR0lOI/g, "base64-private-key", 0, true),
  lead(/Q~/g, "azure-client-secret", -4),
  lead(/E[sS][1-9A-HJ-NP-Za-km-z]{2} [1-9A-HJ-NP-Za-km-z]{4} /g, "matrix-recovery-key", 0, true),
];
const NETRC = LITERAL.get("netrc-password")!;
/** A .netrc entry's `machine` is at most this far before its `password`. */
const NETRC_SPAN = 600;
/** Password keywords: the generic assignment is judged from the end of the name they end. */
const PASSWORD_KEYWORD = /[pP](?:[aA][sS][sS](?:[wW](?:[oO][rR])?[dD]|[pP][hH][rR][aA][sS][eE])?|[wW][dD])/g;

export interface SecretHit {
  what: string;
  /** Index of the match in the scanned text. */
  index: number;
}

/** Length of the match of `s` at `at`, when its check accepts it; 0 otherwise. */
function matchAt(s: Sticky, text: string, at: number): number {
  if (at < 0) return 0;
  s.re.lastIndex = at;
  const m = s.re.exec(text);
  if (m === null) return 0;
  return !s.rule.check || s.rule.check(m[0], text, at) ? m[0].length : -m[0].length;
}

class Search {
  /** Generic values already judged end here: token starts before it are not judged as values again. */
  private judgedTo = 0;

  constructor(
    readonly text: string,
    readonly bytes: Uint8Array,
  ) {}

  /** The first hit at or after `from` and before `before` among the token starts of long runs. */
  firstTokenHit(from: number, before: number): SecretHit | undefined {
    const b = this.bytes;
    const len = Math.min(b.length, before + RUN_MIN);
    // One byte in RUN_MIN: a run of RUN_MIN or more holds one of them.
    for (let probe = from + RUN_MIN - 1; probe < len; probe += RUN_MIN) {
      if (RUN[b[probe]!] === 0) continue;
      let start = probe;
      while (start > 0 && RUN[b[start - 1]!] !== 0) start--;
      let end = probe + 1;
      while (end < b.length && RUN[b[end]!] !== 0) end++;
      if (end - start >= RUN_MIN) {
        const hit = this.firstInRun(Math.max(start, from), end, before);
        if (hit) return hit;
      }
      // The next probe lies past this run, so every run is read once.
      probe = end - 1;
    }
    return undefined;
  }

  private firstInRun(start: number, end: number, before: number): SecretHit | undefined {
    const b = this.bytes;
    for (let at = start; at < end && at < before; at++) {
      // A token starts where a letter, digit, `_` or `-` follows something else.
      if (TOKEN[b[at]!] === 0 || (at > 0 && TOKEN[b[at - 1]!] !== 0)) continue;
      const hit = this.tokenAt(at);
      if (hit) return hit;
    }
    return undefined;
  }

  /** What starts at `at`, a token start: a token rule, or the value of a generic assignment. */
  private tokenAt(at: number): SecretHit | undefined {
    const rules = at + 1 < this.bytes.length ? BY_START.get((this.bytes[at]! << 8) | this.bytes[at + 1]!) : undefined;
    if (rules) for (const s of rules) if ((!s.rule.guard || s.rule.guard(this.bytes, at)) && matchAt(s, this.text, at) > 0) return { what: s.rule.what, index: at };
    if (at < this.judgedTo) return undefined;
    const nameEnd = nameEndBefore(this.text, at);
    if (nameEnd <= 0) return undefined;
    const secret = assignmentAt(this.text, nameEnd);
    this.judgedTo = Math.max(this.judgedTo, assignmentValueEnd);
    return secret ? { what: GENERIC_WHAT, index: at } : undefined;
  }

  /** The first hit of a literal-led rule, a password assignment or a .netrc entry at or after `from`, before `before`. */
  firstLiteralHit(from: number, before: number): SecretHit | undefined {
    let best: SecretHit | undefined;
    for (const { re, rule, offset, skipRejected } of LITERALS) {
      re.lastIndex = Math.max(0, from - offset);
      for (let m = re.exec(this.text); m && m.index + offset < (best?.index ?? before); m = re.exec(this.text)) {
        const at = m.index + offset;
        const length = at >= from ? matchAt(rule, this.text, at) : 0;
        if (length > 0) {
          best = { what: rule.rule.what, index: at };
          break;
        }
        re.lastIndex = skipRejected && length < 0 ? at - length : m.index + 1;
      }
    }
    return this.firstPasswordHit(from, best?.index ?? before) ?? best;
  }

  private firstPasswordHit(from: number, before: number): SecretHit | undefined {
    const text = this.text;
    let judgedTo = 0;
    // The `machine` words of .netrc entries, found going forward: each is found, and tried, once.
    let machine = -1;
    let nextMachine = text.indexOf("machine", Math.max(0, from - NETRC_SPAN));
    let triedMachine = -1;
    PASSWORD_KEYWORD.lastIndex = from;
    for (let m = PASSWORD_KEYWORD.exec(text); m && m.index < before; m = PASSWORD_KEYWORD.exec(text)) {
      const nameEnd = m.index + m[0].length;
      if (nameEnd < judgedTo) continue;
      if (assignmentAt(text, nameEnd)) return { what: GENERIC_WHAT, index: m.index };
      judgedTo = Math.max(judgedTo, assignmentValueEnd);
      // `.netrc`: `machine HOST login USER password PASSWORD`, the words separated by blanks.
      const c = text.charCodeAt(nameEnd) | 0;
      if ((c === 32 || c === 9) && m[0].length === 8) {
        while (nextMachine >= 0 && nextMachine < m.index) {
          machine = nextMachine;
          nextMachine = text.indexOf("machine", nextMachine + 7);
        }
        if (machine >= from && machine !== triedMachine && m.index - machine < NETRC_SPAN) {
          triedMachine = machine;
          if (matchAt(NETRC, text, machine) > 0) return { what: NETRC.rule.what, index: machine };
        }
      }
    }
    return undefined;
  }
}

/**
 * The leftmost credential in `latin1Text` (UTF-8 bytes read as Latin-1; its
 * bytes in `bytes`, when the caller has them) that starts at or after
 * `from`, or undefined. What lies before `from` still counts as context (a
 * token boundary, an assignment's name).
 */
export function findSecret(latin1Text: string, from = 0, bytes: Uint8Array = Buffer.from(latin1Text, "latin1")): SecretHit | undefined {
  const search = new Search(latin1Text, bytes);
  const literalHit = search.firstLiteralHit(from, latin1Text.length);
  return search.firstTokenHit(from, literalHit?.index ?? latin1Text.length) ?? literalHit;
}
