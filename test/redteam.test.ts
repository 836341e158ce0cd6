// Forms a red-team pass (2026-12-06) found published: an OpenSSH private
// key's body without its armour (a comment's `# ` or a quote's `> ` before
// each line, an HTML page's `<br>` between them, Markdown's `\-` escapes of
// the dashes), and the Hermes host's known values as common tools escape
// them (percent-encoded in a URL, `json.dumps`, HTML-escaped in a Markdown
// file, a CSV field's doubled quotes). Each is refused through the real CLI
// with its reason and leaves nothing behind; its clean twin is published.
import { spawnSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { stringify as yamlStringify } from "yaml";
import { extraReading, findSecret } from "../src/content/find.js";
import { KnownSecrets, NO_KNOWN_SECRETS, escapedForms, hexForms, separatedHexForms } from "../src/content/known.js";
import { findByteEncodings, readByteEncodings } from "../src/content/byte-encodings.js";
import { readHexDumps } from "../src/content/hex-dumps.js";
import { BLOCK, OVERLAP, REREAD_BYTES, REREAD_DUMP_BYTES, REREAD_ENCODED_BYTES, REREAD_TERMINAL_BYTES, type RereadBudget, SecretScanner, rereadBudget, scanBytes } from "../src/content/scan.js";
import { CSI_PARAMETERS_MAX, SEQUENCE_BACK_MAX } from "../src/content/terminal-escapes.js";
import { Form, zeroWidthLength } from "../src/content/text-forms.js";
import { WRITTEN_ESCAPE_ENDS_BEFORE, writtenEscapeEndsAt } from "../src/content/written-escapes.js";
import { inspectBinary } from "../src/content/carriers.js";
import { rtfText } from "../src/content/rtf.js";
import { packageStyles } from "../src/content/office-styles.js";
import { shownText } from "../src/content/shown-text.js";
import { Refusal } from "../src/core/errors.js";
import { Fakes, docx, negatives, rng, triggerKeys, zip } from "./corpus.js";
import { cli, leftBehind, makeHome, png, write } from "./helpers.js";
import { systemPython } from "./python-env.js";

let h: ReturnType<typeof makeHome>;
let work: string;
beforeEach(() => {
  h = makeHome();
  work = h.work;
});
afterEach(() => h.cleanup());

const sshString = (b: Buffer | string) => {
  const body = Buffer.from(b);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(body.length);
  return Buffer.concat([length, body]);
};
const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};

/** An OpenSSH Ed25519 private key's body (`openssh-key-v1`, its structure, seeded bytes: never a real key), wrapped at 70 columns as ssh-keygen writes it. */
function opensshBody(seed: number, cipher = "none", kdf = "none", kdfOptions = Buffer.alloc(0)): string {
  const f = new Fakes(seed);
  const publicKey = f.bytes(32);
  const pub = Buffer.concat([sshString("ssh-ed25519"), sshString(publicKey)]);
  const check = f.bytes(4);
  let priv = Buffer.concat([check, check, sshString("ssh-ed25519"), sshString(publicKey), sshString(f.bytes(64)), sshString("agent@host")]);
  priv = Buffer.concat([priv, Buffer.from(Array.from({ length: (8 - (priv.length % 8)) % 8 }, (_, i) => i + 1))]);
  const blob = Buffer.concat([Buffer.from("openssh-key-v1\0", "latin1"), sshString(cipher), sshString(kdf), sshString(kdfOptions), u32(1), sshString(pub), sshString(priv)]);
  return blob.toString("base64").match(/.{1,70}/g)!.join("\n");
}
/** The forms of writing (text-forms.ts) the search saw in `text`. */
function formsIn(text: string): number {
  const seen = { forms: 0 };
  findSecret(text, 0, undefined, text.length, undefined, seen);
  return seen.forms;
}

/**
 * What the searches read beyond their passes (joined readings of keys cut
 * by line breaks, JWKs' objects and mappings) on `unit` repeated to 1 MiB
 * and to 4 MiB: linear, told by counts and not by time (the places and
 * bytes read grow as the text, at most `perByte` bytes a byte).
 */
function expectLinearReading(unit: string, perByte = 1.5): void {
  const MiB = 1024 * 1024;
  const counts = [MiB, 4 * MiB].map((size) => {
    extraReading.places = 0;
    extraReading.bytes = 0;
    expect(scanBytes(Buffer.from(unit.repeat(Math.ceil(size / unit.length)).slice(0, size), "latin1")), JSON.stringify(unit)).toBeUndefined();
    return { ...extraReading };
  });
  const [small, large] = counts as [typeof extraReading, typeof extraReading];
  expect(large.bytes, JSON.stringify(unit)).toBeLessThanOrEqual(perByte * 4 * MiB);
  expect(large.bytes, JSON.stringify(unit)).toBeLessThanOrEqual(4.2 * small.bytes + 8192);
  expect(large.places, JSON.stringify(unit)).toBeLessThanOrEqual(4.2 * small.places + 16);
}

const armoured = (body: string) => `-----BEGIN OPENSSH PRIVATE KEY-----\n${body}\n-----END OPENSSH PRIVATE KEY-----`;
const prefixed = (text: string, mark: string) => text.split("\n").map((line) => `${mark}${line}`).join("\n");

/** prepare --json of `files`; asserts that a refused file left nothing behind (no staging file, an outbox file per file published anew). */
function prepareJson(files: string[], allow = "txt,md,csv,json,html") {
  const before = leftBehind(h).outbox.length;
  const r = cli(["prepare", "--json", "--allow", allow, ...files], { env: h.env, cwd: work });
  const doc = JSON.parse(r.stdout) as { media: { source: string; reused?: boolean }[]; media_dropped: { path: string; code: string; reason: string }[] };
  const left = leftBehind(h);
  expect(left.staging).toEqual([]);
  expect(left.outbox).toHaveLength(before + doc.media.filter((m) => !m.reused).length);
  return { code: r.code, published: doc.media.map((m) => path.basename(m.source)), dropped: doc.media_dropped.map((d) => [path.basename(d.path), d.code, d.reason] as const) };
}

/** That written-escapes.ts's two readings agree at every byte of `texts`: the reading back (find.ts's) and the look-behind (rules.ts's). */
function expectEscapeEndsAgree(texts: string[]) {
  const lookBehind = new RegExp(WRITTEN_ESCAPE_ENDS_BEFORE, "y");
  for (const text of texts) {
    const b = Buffer.from(text, "latin1");
    for (let f = 0; f < b.length; f++) {
      lookBehind.lastIndex = f + 1;
      expect(writtenEscapeEndsAt(b, f), `${JSON.stringify(text)} at ${f} (${JSON.stringify(text.slice(Math.max(0, f - 12), f + 1))})`).toBe(lookBehind.test(text));
    }
  }
}

describe("an OpenSSH private key's body without its armour", () => {
  it("is refused through the CLI wherever a copy or a tool left it, and leaves nothing behind; a public key and a documented first line are published", () => {
    const body = opensshBody(1);
    const encrypted = opensshBody(2, "aes256-ctr", "bcrypt", Buffer.concat([sshString(new Fakes(3).bytes(16)), u32(24)]));
    const files = [
      write(work, "body.txt", `the deploy key's body:\n${body}\n`),
      write(work, "encrypted.txt", `${encrypted}\n`),
      write(work, "commented.txt", `${prefixed(armoured(body), "# ")}\n`),
      write(work, "quoted.md", `${prefixed(armoured(body), "> ")}\n`),
      write(work, "escaped.md", `${armoured(body).replace(/-/g, "\\-")}\n`),
      write(work, "page.html", `<p>${armoured(body).replace(/\n/g, "<br>")}</p>\n`),
      write(work, "escaped.json", `${JSON.stringify({ deploy: body })}\n`),
      write(work, "crlf.txt", `${body.replace(/\n/g, "\r\n")}\r\n`),
    ];
    const twins = [
      write(work, "public.txt", `ssh-ed25519 ${Buffer.concat([sshString("ssh-ed25519"), sshString(new Fakes(1).bytes(32))]).toString("base64")} agent@host\n`),
      write(work, "format.md", `An OpenSSH key's body starts \`${body.split("\n")[0]}\`...\n`),
      write(work, "header-only.txt", `${Buffer.concat([Buffer.from("openssh-key-v1\0", "latin1"), sshString("none"), sshString("none"), sshString(""), u32(1), Buffer.alloc(160, 0x41)]).toString("base64")}\n`),
    ];
    const r = prepareJson([...files, ...twins]);
    expect(r.code).toBe(1);
    expect(r.dropped.map(([name, code]) => [name, code])).toEqual(files.map((f) => [path.basename(f), "secret_detected"]));
    // Its armour under a comment's `# ` or a quote's `> ` on every line is read without them since red-team pass 34 (line-decorations.ts).
    const byArmour = ["commented.txt", "quoted.md"];
    for (const [name, , reason] of r.dropped) expect(reason).toContain(byArmour.includes(name) ? "a private key block" : "an OpenSSH private key (its base64 body)");
    expect(r.published).toEqual(twins.map((f) => path.basename(f)));
    // Only the twins went out; nothing of the refused files stays in staging.
    const left = leftBehind(h);
    expect(left.outbox).toHaveLength(twins.length);
    expect(left.staging).toEqual([]);
  });

  it("gives a verdict on repetitions of its lead and of the pair it is found by (verdicts only)", () => {
    const lead = "b3BlbnNzaC1rZXktdjE";
    const long = 512 * 1024;
    for (const text of [lead.repeat(long / lead.length), "ZX".repeat(long / 2), `${lead}${"A".repeat(long)}`, `${lead}${"AAAA\n".repeat(long / 5)}`, `${lead}${"# \n".repeat(long / 3)}`, `${lead}${new Fakes(5).bytes(long).toString("base64")}`]) {
      expect(findSecret(text)).toBeUndefined();
    }
    // A key after many leads that were no key's body is still found.
    expect(findSecret(`${`${lead}${"A".repeat(300)}\n`.repeat(2000)}${opensshBody(4)}\n`)?.what).toBe("an OpenSSH private key (its base64 body)");
  });
});

describe("the host's known values as common tools escape them", () => {
  const token = "7394028311:AAHq3kZp0Lw9Xv2Ty8Nc5Rb1Md4Fs6Gj7Hk";
  const password = "Tr0ub4dor&3#horse/Batt+ery";
  const quoted = 'pa"ss\\w0rd-Zk4Tr8Yb3N';
  const aws = "wJx7Kp2Lm9Qr4Tv6Yz8B/aC3dE5fG7hJ+kL9mN1p";

  it("refuses each form through the CLI, naming the variable and how it was written, never the value; another value written the same way is published", () => {
    fs.mkdirSync(path.join(h.home, ".hermes"), { recursive: true });
    write(path.join(h.home, ".hermes"), ".env", [`TELEGRAM_BOT_TOKEN=${token}`, `DB_PASSWORD='${password}'`, `SMTP_PASSWORD='${quoted}'`, `AWS_SECRET_ACCESS_KEY=${aws}`, ""].join("\n"));
    const query = (v: string) => `https://hooks.example.com/notify?token=${encodeURIComponent(v)}&chat=42\n`;
    const files = [
      write(work, "link.md", query(token)),
      write(work, "python-quote.txt", `s3://bucket?secret=${aws.replace(/\+/g, "%2B")}\n`),
      write(work, "conn.txt", `postgresql://app:${encodeURIComponent(password).replace(/%2F/g, "/")}@db/hermes (quote with / kept)\n`),
      write(work, "notes.md", `The password is ${password.replace(/&/g, "&amp;")}.\n`),
      write(work, "settings.json", `${JSON.stringify({ smtp: { password: quoted } })}\n`),
      write(work, "export.csv", `name,value\nsmtp,"${quoted.replace(/"/g, '""')}"\n`),
      write(work, "template.txt", `password: ${quoted.replace(/"/g, "&#34;")}\n`),
    ];
    const other = (v: string) => v.replace(/[0-9]/g, (d) => String((Number(d) + 1) % 10));
    // Another Telegram token percent-encoded is refused too since 2026-12-05 (by the rule, not as the host's value: below).
    const twins = [
      write(work, "other-notes.md", `The password is ${other(password).replace(/&/g, "&amp;")}.\n`),
      write(work, "other-settings.json", `${JSON.stringify({ note: other(quoted) })}\n`),
    ];
    const r = prepareJson([...files, ...twins]);
    expect(r.dropped.map(([name, code]) => [name, code])).toEqual(files.map((f) => [path.basename(f), "secret_detected"]));
    const reasons = r.dropped.map(([, , reason]) => reason);
    // Since 2026-12-05 the Telegram rule reads a percent-encoded colon, and a vendor rule's finding wins at the same place.
    expect(reasons[0]).toContain("a Telegram bot token");
    expect(reasons[1]).toContain("the value of AWS_SECRET_ACCESS_KEY (the Hermes .env), percent-encoded");
    expect(reasons[2]).toContain("the value of DB_PASSWORD (the Hermes .env), percent-encoded");
    expect(reasons[3]).toContain("the value of DB_PASSWORD (the Hermes .env), HTML-escaped");
    expect(reasons[4]).toContain("the value of SMTP_PASSWORD (the Hermes .env), escaped in a string");
    expect(reasons[5]).toContain("the value of SMTP_PASSWORD (the Hermes .env), escaped in a CSV field");
    expect(reasons[6]).toContain("the value of SMTP_PASSWORD (the Hermes .env), HTML-escaped");
    for (const reason of reasons) for (const v of [token, password, quoted, aws]) expect(reason).not.toContain(v);
    expect(r.published).toEqual(twins.map((f) => path.basename(f)));
    expect(leftBehind(h).outbox).toHaveLength(twins.length);
    expect(leftBehind(h).staging).toEqual([]);
    const otherLink = prepareJson([write(work, "other-link.md", query(other(token)))]);
    expect(otherLink.dropped).toEqual([["other-link.md", "secret_detected", expect.stringContaining("a Telegram bot token")]]);
    expect(otherLink.dropped[0]![2]).not.toContain("TELEGRAM_BOT_TOKEN");
  });

  it("adds no form for a value that no escape changes, and each form once", () => {
    expect(escapedForms("Qm7vLx2Pw9Zk4Tr8Yb3N")).toEqual([]);
    const forms = escapedForms(password).map((f) => f.form);
    expect(new Set(forms).size).toBe(forms.length);
    expect(forms).toContain("Tr0ub4dor%263%23horse%2FBatt%2Bery");
    expect(forms).toContain("Tr0ub4dor%263%23horse/Batt%2Bery");
    expect(forms).toContain("Tr0ub4dor&amp;3#horse/Batt+ery");
    // Found in one pass with the value itself.
    const known = new KnownSecrets([password, ...forms].map((v) => ({ name: "V", bytes: Buffer.from(v) })));
    expect(known.find(Buffer.from(`x=${forms[0]}`))?.index).toBe(2);
  });
});

// Forms a second red-team pass (2026-12-06) found published: a key with
// zero-width characters or soft hyphens inside (a copy from a web page or a
// PDF), Markdown's backslash escapes inside it (turndown and markdownify
// write `ghp\_…`), quoted-printable text (an e-mail saved as text), and a
// private key as a JSON Web Key. The first three are read again with the
// form undone, where find.ts's passes saw it; a JWK is a rule.
describe("keys written in forms a copy or a tool produces", () => {
  const f = new Fakes(606);
  const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  const B64URL = `${ALNUM}_-`;
  const github = `ghp_${f.pick(ALNUM, 36)}`;
  const anthropic = `sk-ant-api03-${f.pick(B64URL, 93)}AA`;
  const telegram = `7${f.pick("0123456789", 9)}:AA${f.pick(B64URL, 33)}`;
  const stripe = `sk_live_${f.pick(ALNUM, 40)}`;
  const slack = `xoxb-${f.pick("0123456789", 12)}-${f.pick("0123456789", 13)}-${f.pick(ALNUM, 24)}`;
  const custom = f.pick(ALNUM, 32);
  const password = `Tr0ub4dor&3#horse*${f.pick(ALNUM, 8)}`;
  const every = (value: string, mark: string, n: number) => value.match(new RegExp(`.{1,${n}}`, "g"))!.join(mark);
  const escaped = (value: string) => value.replace(/[_*`[\]()#+\-.!|<>\\&]/g, (c) => `\\${c}`);
  /** Quoted-printable as Python's quopri writes it: `=` as `=3D`, lines cut at 76 columns by a soft break. */
  const quotedPrintable = (text: string) => {
    const encoded = text.replace(/=/g, "=3D");
    const lines: string[] = [];
    let rest = encoded;
    while (rest.length > 76) {
      lines.push(`${rest.slice(0, 75)}=`);
      rest = rest.slice(75);
    }
    return [...lines, rest].join("\n");
  };
  const mail = (body: string) => `Subject: keys\nContent-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: quoted-printable\n\n${quotedPrintable(body)}\n`;
  const jwkPrivate = { kty: "EC", crv: "P-256", x: f.pick(B64URL, 43), y: f.pick(B64URL, 43), d: f.pick(B64URL, 43) };
  const rsa = { kty: "RSA", n: f.pick(B64URL, 342), e: "AQAB", d: f.pick(B64URL, 342), p: f.pick(B64URL, 171), q: f.pick(B64URL, 171), dp: f.pick(B64URL, 171), dq: f.pick(B64URL, 171), qi: f.pick(B64URL, 171) };
  const sorted = (o: Record<string, string>) => Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : 1)));

  it("refuses each through the CLI, saying how the value was written and never the value, and leaves nothing behind; the clean twins are published", () => {
    fs.mkdirSync(path.join(h.home, ".hermes"), { recursive: true });
    write(path.join(h.home, ".hermes"), ".env", [`MY_SERVICE_KEY=${custom}`, `DB_PASSWORD='${password}'`, ""].join("\n"));
    const ZERO_WIDTH = "with zero-width characters or soft hyphens removed";
    const ESCAPES = "with Markdown's backslash escapes removed";
    const QP = "decoded from quoted-printable";
    const cases: [string, string | Buffer, string][] = [
      ["zwsp.txt", `key ${every(github, "\u200b", 4)}\n`, `a GitHub token, ${ZERO_WIDTH} (at byte 4)`],
      ["shy.md", `key: ${every(anthropic, "\u00ad", 6)}\n`, `an Anthropic API key, ${ZERO_WIDTH}`],
      ["joiners.txt", `bot ${every(telegram, "\u2060", 5).replace("\u2060", "\u200c").replace("\u2060", "\u200d")}\n`, `a Telegram bot token, ${ZERO_WIDTH}`],
      ["bom.txt", `token \u200b${every(slack, "\ufeff", 7)}\n${every(github, "\u200b", 9)}\n`, `a Slack token, ${ZERO_WIDTH}`],
      ["known-zwsp.txt", `the service key: ${every(custom, "\u200b", 4)}\n`, `the value of MY_SERVICE_KEY (the Hermes .env), ${ZERO_WIDTH}`],
      ["zwsp.docx", docx(`Your key: ${every(anthropic, "\u200b", 4)}`), `an Anthropic API key, ${ZERO_WIDTH} (in the text of word/document.xml, at byte 10 of it)`],
      ["escaped.md", `key ${github.replace(/_/g, "\\_")}\n`, `a GitHub token, ${ESCAPES} (at byte 4)`],
      ["stripe.md", `Live key: ${escaped(stripe)}\n`, `a Stripe secret key, ${ESCAPES}`],
      ["anthropic.md", `* ${escaped(anthropic)}\n`, `an Anthropic API key, ${ESCAPES}`],
      ["password.md", `The password is ${escaped(password)} (rotate it monthly).\n`, `the value of DB_PASSWORD (the Hermes .env), ${ESCAPES}`],
      ["mail.txt", mail(`Hello, here is the configuration you asked for, please keep it: SLACK_BOT_TOKEN=${slack} thanks`), `a Slack token, ${QP}`],
      ["soft-breaks.txt", mail(`${"Here is the key you asked for. ".repeat(2)}${anthropic} thanks`), `an Anthropic API key, ${QP}`],
      ["known-mail.txt", mail(`The database is reachable from the office network, and its password is ${password} for now.`), `the value of DB_PASSWORD (the Hermes .env), ${QP}`],
      ["jwk.json", `${JSON.stringify(jwkPrivate)}\n`, "a private key as a JSON Web Key (JWK) (at byte 1)"],
      ["jwks.json", `${JSON.stringify({ keys: [{ kty: "EC", crv: "P-256", x: jwkPrivate.x, y: jwkPrivate.y }, sorted(rsa)] }, null, 2)}\n`, "a private key as a JSON Web Key (JWK)"],
      ["jwk-python.txt", `key = {'kty': 'oct', 'k': '${f.pick(B64URL, 43)}', 'alg': 'HS256'}\n`, "a private key as a JSON Web Key (JWK)"],
      ["jwk-string.json", `${JSON.stringify({ JWKS: JSON.stringify({ keys: [{ kty: "OKP", crv: "Ed25519", x: f.pick(B64URL, 43), d: f.pick(B64URL, 43) }] }) })}\n`, "a private key as a JSON Web Key (JWK)"],
    ];
    const files = cases.map(([name, content]) => write(work, name, content));
    const twins = [
      write(work, "prose.txt", "Die Ver\u00adsiche\u00adrung ist ab\u00adge\u00adschlos\u00adsen, die Zu\u00adgangs\u00addaten kom\u00admen per Post.\n\u201eAnf\u00fchrungs\u00adzeichen\u201c \u2013 und \u200bnichts\u200b da\u00adhinter.\n"),
      write(work, "notes.md", "Set `snake\\_case\\_names`, then 1\\. run \\*this\\* and \\#tag it; see my\\_long\\_variable\\_name\\_here\\_2024 and C:\\\\Users.\n"),
      write(work, "public.json", `${JSON.stringify({ keys: [{ kty: "EC", crv: "P-256", x: jwkPrivate.x, y: jwkPrivate.y }, { kty: "RSA", n: rsa.n, e: "AQAB" }] }, null, 2)}\n`),
      write(work, "jwk-doc.md", '```json\n{"kty": "EC", "crv": "P-256", "d": "<your private key>", "x": "...", "y": "..."}\n```\n'),
      write(work, "mail-clean.txt", mail(`Hello, here is the agenda you asked for: 10:00 budget review, 11:00 hiring plan, a=b and c=d, 12:00 lunch with everyone`)),
      // systemd-measure(1)'s troff source: `\-` a dash, `\&` a zero-width mark, the value a key's file name.
      write(work, "manual.txt", ".SH \"EXAMPLES\"\n\\fBExample\\ \\&1.\\fR\n     \\-\\-private\\-key=tpm2\\-pcr\\-private\\&.pem \\e\n     \\-\\-public\\-key=tpm2\\-pcr\\-public\\&.pem\n"),
    ];
    const r = prepareJson([...files, ...twins], "txt,md,json,docx");
    expect(r.dropped.map(([name, code]) => [name, code])).toEqual(cases.map(([name]) => [name, "secret_detected"]));
    r.dropped.forEach(([, , reason], i) => expect(reason).toContain(cases[i]![2]));
    for (const [, , reason] of r.dropped) for (const v of [github, anthropic, telegram, stripe, slack, custom, password, jwkPrivate.d]) expect(reason).not.toContain(v);
    expect(r.published).toEqual(twins.map((t) => path.basename(t)));
    const left = leftBehind(h);
    expect(left.outbox).toHaveLength(twins.length);
    expect(left.staging).toEqual([]);
  });

  it("finds a key in a form across a block boundary, and names the byte of the file it starts at", () => {
    const at = BLOCK - 20;
    const text = Buffer.from(`${"x".repeat(at - 1)}\n${every(github, "\u200b", 4)}\n${"y".repeat(1000)}\n`);
    expect(scanBytes(text)).toEqual({ what: "a GitHub token, with zero-width characters or soft hyphens removed", offset: at });
    const body = mail(`${"Hello there. ".repeat(20)}your token is ${slack}, keep it`);
    expect(scanBytes(Buffer.from(body))).toEqual({ what: "a Slack token, decoded from quoted-printable", offset: body.indexOf("xoxb") });
  });

  it("says which forms a search saw only where they may hide a key", () => {
    const formsIn = (text: string) => {
      const seen = { forms: 0 };
      const latin1 = Buffer.from(text).toString("latin1");
      findSecret(latin1, 0, undefined, latin1.length, undefined, seen);
      return seen.forms;
    };
    // Between two characters of a key, not in prose's quotes and dashes, nor around a blank.
    expect(formsIn(`a${"\u200b"}b`)).toBe(Form.ZeroWidth);
    expect(formsIn(`a${"\u00ad"}b`)).toBe(Form.ZeroWidth);
    expect(formsIn("\u201cquoted\u201d \u2014 dashed \u2026 \u00ab\u00bb \u200b \u2060")).toBe(0);
    // A punctuation escape between letters or digits, in a run of a key's characters as long as a value's; not JSON's `\/`, nor
    // code's `\"`, `\'`, `\\`, nor an escape at a word's edge, nor a regular expression's `v\d+\.\d+`, nor troff's `\-`.
    expect(formsIn(`key ${escaped(stripe)} here`)).toBe(Form.Escaped);
    expect(formsIn(escaped(password))).toBe(Form.Escaped);
    expect(formsIn('https:\\/\\/example.com\\/path {\\"key\\":\\"value\\"} don\\\'t C:\\\\Users \\- \\*bold\\*')).toBe(0);
    expect(formsIn("/^v\\d+\\.\\d+$/ and a\\.b and sk\\_live")).toBe(0);
    expect(formsIn('key pa"ss\\\\w0rd\\-Zk4Tr8Yb3N')).toBe(Form.Escaped);
    expect(formsIn(".TH SYSTEMD\\-MEASURE\n\\fBsystemd\\-measure\\fR \\-\\-private\\-key=tpm2\\-pcr\\-private\\&.pem")).toBe(0);
    // `=3D`, or a soft break that ends a line of 74 to 76 characters; not a base64 line's padding, nor a shorter or longer line.
    expect(formsIn("a=3Db")).toBe(Form.QuotedPrintable);
    for (const n of [74, 75, 76]) expect(formsIn(`head\n${"x".repeat(n - 1)}=\nnext\n`)).toBe(Form.QuotedPrintable);
    for (const line of ["x".repeat(72), "x".repeat(76), `${"Q".repeat(74)}=`, "key =", "=", ""]) expect(formsIn(`head\n${line}=\nnext\n`)).toBe(0);
    // A search that found a key says nothing.
    expect(formsIn(`${github} a\u200bb`)).toBe(0);
  });

  it("gives a verdict on repetitions of each form and of its triggers (verdicts only)", () => {
    const long = 512 * 1024;
    const rep = (s: string) => Buffer.from(s.repeat(Math.ceil(long / s.length)));
    for (const text of [
      rep("\\_"),
      rep("a\\_"),
      rep("ab\\_cd "),
      rep("\\\\"),
      rep("=\n"),
      rep("=3D"),
      rep(`${"x".repeat(75)}=\n`),
      rep("\u200b"),
      rep("a\u200b"),
      rep("a\u00ad"),
      rep("\u201ca\u201d \u2014 "),
      rep('"kty":'),
      rep('{"kty":'),
      rep(`{"kty":"EC","d":"${"A".repeat(43)}"}`),
      Buffer.concat([Buffer.from('{"kty":"RSA","d":"'), Buffer.alloc(long, 0x41)]),
    ]) {
      expect(scanBytes(text)).toBeUndefined();
    }
    // A key after many forms that hid none is still found.
    expect(scanBytes(Buffer.concat([rep("ab\\_cd a\u200bb =3D "), Buffer.from(` ${escaped(github)}\n`)]))?.what).toBe("a GitHub token, with zero-width characters or soft hyphens removed, with Markdown's backslash escapes removed, decoded from quoted-printable");
    expect(scanBytes(Buffer.concat([rep('{"kty":"EC","d":"AAAA"}'), Buffer.from(`${JSON.stringify(jwkPrivate)}\n`)]))?.what).toBe("a private key as a JSON Web Key (JWK)");
  });

  // Red-team pass 33's 07: the other invisible characters (bidi marks and controls, variation selectors, CGJ, invisible
  // operators, U+180E, tag characters) inside a key were published; the zero-width reading removes every
  // Default_Ignorable_Code_Point since.
  it("removes exactly Unicode's default-ignorable code points in the zero-width reading (V8's `\\p{Default_Ignorable_Code_Point}`)", () => {
    const ignorable = /\p{Default_Ignorable_Code_Point}/u;
    const wrong: string[] = [];
    for (let cp = 0; cp < 0x110000; cp++) {
      if (cp >= 0xd800 && cp < 0xe000) continue;
      const ch = String.fromCodePoint(cp);
      const bytes = Buffer.concat([Buffer.from(ch), Buffer.alloc(4)]);
      if (zeroWidthLength(bytes, 0) !== (ignorable.test(ch) ? Buffer.byteLength(ch) : 0)) wrong.push(cp.toString(16));
    }
    expect(wrong).toEqual([]);
  });

  it("refuses a GitHub token and the host's value with each invisible character inside (red team 33's 07) through the CLI; RTL prose with bidi marks and emoji with variation selectors are published", () => {
    fs.mkdirSync(path.join(h.home, ".hermes"), { recursive: true });
    write(path.join(h.home, ".hermes"), ".env", `MY_SERVICE_KEY=${custom}\n`);
    const marks = [0x200e, 0x200f, 0x061c, 0x202a, 0x202c, 0x202e, 0x2066, 0x2069, 0xfe0f, 0xfe00, 0xe0101, 0x034f, 0x2061, 0x2063, 0x180e, 0xe0020, 0xe007f, 0x3164, 0xfeff];
    const files = marks.flatMap((cp) => {
      const mark = String.fromCodePoint(cp);
      return [write(work, `ghp-${cp.toString(16)}.txt`, `token: ${github.slice(0, 12)}${mark}${github.slice(12)}\n`), write(work, `env-${cp.toString(16)}.md`, `value ${custom.slice(0, 16)}${mark}${custom.slice(16)}\n`)];
    });
    const twins = [
      write(work, "rtl.md", "\u05e9\u05dc\u05d5\u05dd \u200eversion 2.4.1\u200f \u05e2\u05d5\u05d1\u05d3 \u2067\u0645\u0631\u062d\u0628\u0627\u2069 build-7f3a\u200e.\u200fdone \u202bRTL\u202c ok \u061c\u0661\u0662\n"),
      write(work, "emoji.md", "Release \u2764\ufe0f notes \u2705 done \u0031\ufe0f\u20e3 first, \u263a\ufe0fthanks \ud83d\udc4d\ud83c\udffd and \ud83c\udff4\udb40\udc67\udb40\udc62\udb40\udc73\udb40\udc63\udb40\udc74\udb40\udc7f flag\n"),
    ];
    const r = prepareJson([...files, ...twins], "txt,md");
    expect(r.dropped.map(([name, code]) => [name, code])).toEqual(files.map((f) => [path.basename(f), "secret_detected"]));
    for (const [, , reason] of r.dropped) {
      expect(reason).toContain("with zero-width characters or soft hyphens removed");
      expect(reason).not.toContain(github);
      expect(reason).not.toContain(custom);
    }
    expect(r.published).toEqual(twins.map((t) => path.basename(t)));
  });

  it("sees the other invisible characters only between a key's characters, and gives a verdict on their repetitions (verdicts only)", () => {
    const formsIn = (text: string) => {
      const seen = { forms: 0 };
      const latin1 = Buffer.from(text).toString("latin1");
      findSecret(latin1, 0, undefined, latin1.length, undefined, seen);
      return seen.forms;
    };
    for (const mark of ["\u034f", "\u061c", "\u180e", "\ufe0f", "\ufeff", "\u{e0020}", "\u{1d173}", "\u3164"]) {
      expect(formsIn(`a${mark}b`), JSON.stringify(mark)).toBe(Form.ZeroWidth);
      expect(formsIn(`a ${mark}b ${mark} a${mark} \u2764${mark}b`), JSON.stringify(mark)).toBe(0);
    }
    const long = 512 * 1024;
    const rep = (s: string) => Buffer.from(s.repeat(Math.ceil(long / Buffer.byteLength(s))));
    for (const unit of ["a\u200e", "\u200fa", "a\ufe0f", "\u2764\ufe0fa", "a\u{e0020}", "\u{e0020}", "a\u034f\u061c", "\u202e\u2066x\u2069", "\u3164a"]) {
      expect(scanBytes(rep(unit)), JSON.stringify(unit)).toBeUndefined();
    }
    expect(scanBytes(Buffer.concat([rep("a\ufe0fb "), Buffer.from(` ${github.slice(0, 9)}\u{e0041}${github.slice(9)}\n`)]))?.what).toBe("a GitHub token, with zero-width characters or soft hyphens removed");
  });

  // A private key as a JWK written as YAML (a red-team pass found it published, 2026-12-06): the JWK rule reads a YAML
  // mapping too, a block mapping whole (its members at `kty`'s column), a flow mapping as a JSON object.
  describe("a private key as a JWK written as YAML", () => {
    const g = new Fakes(1206);
    const v = (n: number) => g.pick(B64URL, n);
    const ec = { kty: "EC", crv: "P-256", x: v(43), y: v(43), d: v(43) };
    const okp = { kty: "OKP", crv: "Ed25519", x: v(43), d: v(43) };
    // RSA-4096: sorted, `d`, `dp` and `dq` lie ~1,400 characters before `kty`.
    const rsa = { kty: "RSA", n: v(683), e: "AQAB", d: v(683), p: v(342), q: v(342), dp: v(342), dq: v(342), qi: v(342) };
    const lines = (o: Record<string, string>, first: string, rest: string) => Object.entries(o).map(([k, x], n) => `${n === 0 ? first : rest}${k}: ${x}`).join("\n");
    const JWK = "a private key as a JSON Web Key (JWK)";

    it("refuses it through the CLI as PyYAML and the yaml package write it, in a list, a flow mapping, a Markdown block and a docx, never naming the value; public keys and other YAML are published", () => {
      const publicEc = { kty: "EC", crv: "P-256", x: ec.x, y: ec.y };
      const cases: [string, string | Buffer, string][] = [
        // The yaml package: a list item whose first member is `kty`.
        ["jwks.yaml", yamlStringify({ keys: [publicEc, okp] }), `${JWK} (at byte`],
        // PyYAML's safe_dump: members sorted (`d` before `kty`), a list's items not indented under their key.
        ["jwks-sorted.yml", `keys:\n${lines(sorted(publicEc), "- ", "  ")}\n${lines(sorted(ec), "- ", "  ")}\n`, JWK],
        ["rsa.yaml", `# the signing key\n${lines(sorted(rsa), "", "")}\n`, JWK],
        ["nested.yaml", `auth:\n  issuer: https://id.example.com\n  signing_key:\n${lines(sorted(rsa), "    ", "    ")}\n  audience: api\n`, JWK],
        // PyYAML's default_flow_style, wrapped at 80 columns: `kty` may start a line.
        ["flow.yaml", `{keys: [{crv: P-256, kty: EC, x: ${ec.x}, y: ${ec.y}, d: ${ec.d}}]}\n`, JWK],
        ["flow-wrapped.yaml", `{crv: Ed25519, d: ${okp.d},\n  kty: OKP, x: ${okp.x}}\n`, JWK],
        ["oct.md", `Signing secret:\n\n\`\`\`yaml\nkty: oct\nk: '${v(43)}'\nalg: HS256\n\`\`\`\n`, JWK],
        ["crlf.yaml", `keys:\r\n${lines(ec, "  - ", "    ").replace(/\n/g, "\r\n")}\r\n`, JWK],
        ["object.txt", `const key = {kty: 'EC', crv: 'P-256', x: '${ec.x}', d: '${ec.d}'};\n`, JWK],
        ["jwk.docx", docx(`Our signing key:\n${lines(okp, "", "")}`), `${JWK} (in the text of word/document.xml`],
      ];
      const files = cases.map(([name, content]) => write(work, name, content));
      const twins = [
        write(work, "public.yaml", yamlStringify({ keys: [publicEc, { kty: "RSA", n: rsa.n, e: "AQAB" }] })),
        // `d`, `p`, `k` with random values, no `kty`: ordinary YAML.
        write(work, "settings.yaml", `matrix:\n  d: ${v(43)}\n  p: ${v(43)}\n  k: ${v(32)}\n`),
        // A public JWK beside a mapping that holds a random `d`: not the key's member.
        write(work, "beside.yaml", `keys:\n- kty: EC\n  x: ${ec.x}\n  y: ${ec.y}\ncache:\n  d: ${v(43)}\n`),
        write(work, "sibling.yaml", `jwk:\n  kty: EC\n  x: ${ec.x}\nother:\n  d: ${v(43)}\n`),
        write(work, "doc.md", "A JWK's members:\n\n```yaml\nkty: EC\ncrv: P-256\nd: <your private key>\nx: ...\n```\n"),
        write(work, "prose.md", `Set kty: RSA in the header, and d: ${v(43)} is a note's id, not a key's member.\n`),
      ];
      const r = prepareJson([...files, ...twins], "yaml,yml,md,txt,docx");
      expect(r.dropped.map(([name, code]) => [name, code])).toEqual(cases.map(([name]) => [name, "secret_detected"]));
      r.dropped.forEach(([name, , reason], i) => expect(reason, name).toContain(cases[i]![2]));
      for (const [, , reason] of r.dropped) for (const x of [ec.d, okp.d, rsa.d]) expect(reason).not.toContain(x);
      expect(r.published).toEqual(twins.map((t) => path.basename(t)));
      const left = leftBehind(h);
      expect(left.outbox).toHaveLength(twins.length);
      expect(left.staging).toEqual([]);
    });

    // Published until a second pass of 2026-12-06: the mapping commented out or quoted, a flow mapping's brace before its private
    // member, its private member past 4,000 characters of the mapping from its first member.
    describe("commented out, quoted, with braces, or long", () => {
      const prefixed = (text: string, mark: string) => text.split("\n").map((l) => `${mark}${l}`).join("\n");
      /** A certificate chain's member, as the yaml package writes a list in a mapping (items at the key's column). */
      const x5c = (n: number, indent = "") => `${indent}x5c:\n${Array.from({ length: n }, () => `${indent}- ${g.pick(ALNUM, 1400)}`).join("\n")}`;
      const withChain = (n: number, indent = "") => `${indent}kty: EC\n${indent}use: sig\n${x5c(n, indent)}\n${indent}crv: P-256\n${indent}x: ${ec.x}\n${indent}y: ${ec.y}\n${indent}d: ${ec.d}`;

      it("is refused through the CLI and in a docx, never naming the value; its public and documented twins are published", () => {
        const cases: [string, string | Buffer][] = [
          // A config whose block was commented out, PyYAML's dump of it with `# ` before each line.
          ["disabled.yaml", `issuer: https://id.example.com\n${prefixed(`signing_key:\n${lines(sorted(ec), "  ", "  ")}`, "# ")}\n`],
          ["hashes.yaml", `${prefixed(lines(okp, "", ""), "#")}\n`],
          // YAML in a Markdown quote, in its fence, and a quote in a quote (a reply), CRLF.
          ["reply.md", `> Here is the key:\n>\n> \`\`\`yaml\n${prefixed(lines(ec, "", ""), "> ")}\n> \`\`\`\n`],
          ["nested-quote.md", `${prefixed(`keys:\n${lines(sorted(ec), "- ", "  ")}`, "> > ")}\n`.replace(/\n/g, "\r\n")],
          // A flow mapping's braces in a member before the private one.
          ["braces.yaml", `kty: RSA\nmeta: {created: 2026-01-01, by: ops}\nn: ${rsa.n}\ne: AQAB\nd: ${rsa.d}\n`],
          // The private member ~3,000 characters after `kty` (a chain of two certificates before it), and the mapping's first
          // member ~1,900 characters before `kty`: read from `kty`'s line, not from the mapping's first member.
          ["chain.yaml", yamlStringify({ keys: [{ kty: "EC", use: "sig", x5c: [g.pick(ALNUM, 1400), g.pick(ALNUM, 1400)], crv: "P-256", x: ec.x, y: ec.y, d: ec.d }] })],
          ["settings-first.yaml", `auth:\n${Array.from({ length: 60 }, (_, n) => `  setting_${n}: value number ${n}`).join("\n")}\n${withChain(2, "  ")}\n`],
          ["quoted.docx", docx(`Our signing key:\n${prefixed(lines(okp, "", ""), "> ")}`)],
        ];
        const files = cases.map(([name, content]) => write(work, name, content));
        const twins = [
          write(work, "disabled-public.yaml", `${prefixed(lines({ kty: "EC", crv: "P-256", x: ec.x, y: ec.y }, "", ""), "# ")}\n`),
          write(work, "doc-comment.yaml", "# kty: EC\n# crv: P-256\n# d: <your private key>\n# x: ...\n"),
          write(work, "quote-prose.md", `> The kty: member names the key's type, and\n> d: ${v(43)} was the ticket's id.\n`),
          // `kty` commented out or quoted, the random `d` outside its marks; a `d` in a mapping beside the key's.
          write(work, "outside.yaml", `# kty: EC\nd: ${v(43)}\n`),
          write(work, "quote-then-plain.md", `> kty: EC\n> x: ${ec.x}\nd: ${v(43)}\n`),
          write(work, "beside.md", `> jwk:\n>   kty: EC\n>   x: ${ec.x}\n> cache:\n>   d: ${v(43)}\n`),
          write(work, "heading.md", `## kty: EC\nd: ${v(43)}\n`),
        ];
        const r = prepareJson([...files, ...twins], "yaml,md,docx");
        expect(r.dropped.map(([name, code]) => [name, code])).toEqual(cases.map(([name]) => [name, "secret_detected"]));
        for (const [name, , reason] of r.dropped) expect(reason, name).toContain(JWK);
        expect(r.dropped.at(-1)![2]).toContain("(in the text of word/document.xml");
        for (const [, , reason] of r.dropped) for (const x of [ec.d, okp.d, rsa.d]) expect(reason).not.toContain(x);
        expect(r.published).toEqual(twins.map((t) => path.basename(t)));
        const left = leftBehind(h);
        expect(left.outbox).toHaveLength(twins.length);
        expect(left.staging).toEqual([]);
      });

      it("reads at most 4,000 characters from `kty`'s line and 2,000 back (the window that judges `kty` holds them), and no line without the marks", () => {
        // A chain of three certificates puts `d` ~4,400 characters after `kty`: not read (documented).
        expect(scanBytes(Buffer.from(`${withChain(2)}\n`))?.what).toBe(JWK);
        expect(scanBytes(Buffer.from(`${withChain(3)}\n`))).toBeUndefined();
        // Found wherever the blocks of a long file fall: `kty` near a block's end reads its 4,000 characters in that window.
        const key = Buffer.from(`${withChain(2)}\n`);
        for (const before of [BLOCK - 6000, BLOCK - 4200, BLOCK - 100, BLOCK + 10]) {
          expect(scanBytes(Buffer.concat([Buffer.from(`${"lorem ipsum dolor\n".repeat(Math.ceil(before / 18))}`.slice(0, before)), Buffer.from("\n"), key, Buffer.alloc(70_000, 0x0a)]))?.what, `${before}`).toBe(JWK);
        }
        // The marks are every line's: another mark, or none, ends the mapping.
        expect(scanBytes(Buffer.from(`# kty: EC\n> d: ${ec.d}\n`))).toBeUndefined();
        expect(scanBytes(Buffer.from(`> > kty: EC\n> d: ${ec.d}\n`))).toBeUndefined();
        expect(scanBytes(Buffer.from(`# kty: EC\n#\n#   # the private part\n# d: ${ec.d}\n`))?.what).toBe(JWK);
        expect(scanBytes(Buffer.from(`#kty: EC\n#d: ${ec.d}\n`))?.what).toBe(JWK);
      });

      it("reads what its triggers read in proportion to the text, and finds a key after repetitions of them (counts, not time)", () => {
        for (const unit of ["# kty: RSA\n", "> kty: EC\n", "> kty: EC\n>\n", "# - kty: EC\n", "> > kty: x\n> > a: 1\n", `#kty: EC\n# d: ${"A".repeat(43)}\n`, "#> #> kty: x\n", "kty: EC\nm: {a: 1}\n", "# kty: EC, ", `kty: EC\n- ${"A".repeat(80)}\n`, `> kty: EC\n> a: ${"A".repeat(3000)}\n`]) {
          expectLinearReading(unit);
        }
        const long = 512 * 1024;
        const rep = (s: string) => Buffer.from(s.repeat(Math.ceil(long / s.length)));
        expect(scanBytes(Buffer.concat([rep("> kty: EC\n>\n"), Buffer.from(`\nend of quote\n\n${prefixed(lines(ec, "", ""), "> ")}\n`)]))?.what).toBe(JWK);
        expect(scanBytes(Buffer.concat([rep("# kty: RSA\n"), Buffer.from(`\n---\n${prefixed(lines(okp, "", ""), "# ")}\n`)]))?.what).toBe(JWK);
      });
    });

    it("names the byte of `kty`, and reads a mapping from its first member and to its last, at any indent", () => {
      const text = `keys:\n${lines(sorted(ec), "  - ", "    ")}\n`;
      expect(scanBytes(Buffer.from(text))).toEqual({ what: JWK, offset: text.indexOf("kty") });
      // Only the members before `kty` are private, or only those after.
      expect(scanBytes(Buffer.from(`d: ${ec.d}\ncrv: P-256\nkty: EC\nx: ${ec.x}\n`))?.what).toBe(JWK);
      expect(scanBytes(Buffer.from(`- x: ${ec.x}\n  kty: EC\n\n  # the private part\n  d: ${ec.d}\n`))?.what).toBe(JWK);
      expect(scanBytes(Buffer.from(`keys:\n  - d: ${ec.d}\n    crv: P-256\n    kty: EC\n`))?.what).toBe(JWK);
      // A list item's mapping ends at the next item, a mapping at a line indented less, a document at `---`.
      expect(scanBytes(Buffer.from(`- kty: EC\n  x: ${ec.x}\n- d: ${ec.d}\n`))).toBeUndefined();
      expect(scanBytes(Buffer.from(`  - d: ${ec.d}\n  - kty: EC\n`))).toBeUndefined();
      expect(scanBytes(Buffer.from(`a:\n  kty: EC\nd: ${ec.d}\n`))).toBeUndefined();
      expect(scanBytes(Buffer.from(`kty: EC\nx: ${ec.x}\n---\nd: ${ec.d}\n`))).toBeUndefined();
      // `kty` in prose, a comment or a quote, and a `d` of a placeholder or under 20 characters.
      for (const t of [`The kty: EC member\nd: ${ec.d}\n`, `# kty: EC\nd: ${ec.d}\n`, `kty: EC\nd: ${"x".repeat(43)}\n`, `kty: EC\nd: ${ec.d.slice(0, 19)}\n`]) {
        expect(scanBytes(Buffer.from(t)), t).toBeUndefined();
      }
    });

    it("gives a verdict on repetitions of its triggers, and finds a key after them (verdicts only)", () => {
      const long = 512 * 1024;
      const rep = (s: string) => Buffer.from(s.repeat(Math.ceil(long / s.length)));
      const descending = Array.from({ length: 120 }, (_, n) => `${" ".repeat(119 - n)}kty: EC\n`).join("");
      for (const text of [
        rep("kty: RSA\n"),
        rep("- kty: EC\n"),
        rep("  kty: x\n a: 1\n"),
        rep("kty: EC\nd: AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n"),
        rep("{kty: EC, "),
        rep("kty: EC, "),
        rep(descending),
        rep(`${"    ".repeat(30)}d: x\n`),
        Buffer.concat([Buffer.from("kty: RSA\nd: "), Buffer.alloc(long, 0x41)]),
      ]) {
        expect(scanBytes(text)).toBeUndefined();
      }
      // A key after them: in a document of its own, in a list's next item.
      expect(scanBytes(Buffer.concat([rep("kty: EC\nd: AAAA\n"), Buffer.from(`\n---\n${lines(ec, "", "")}\n`)]))?.what).toBe(JWK);
      expect(scanBytes(Buffer.concat([rep("- kty: EC\n"), Buffer.from(`\n${lines(sorted(ec), "- ", "  ")}\n`)]))?.what).toBe(JWK);
      expect(scanBytes(Buffer.concat([rep("{kty: EC, "), Buffer.from(`}\n{kty: EC, d: ${ec.d}}\n`)]))?.what).toBe(JWK);
    });
  });

  it("reads again at most REREAD_BYTES of a file's windows on each thread (REREAD_TERMINAL_BYTES of them for a terminal's sequences): an escaped key after that much escaped text is read once (documented), one before it is found", () => {
    const ESCAPED_TEXT = Buffer.from("a\\_a:".repeat(Math.ceil((REREAD_BYTES + 3 * BLOCK) / 5)));
    const key = Buffer.from(` ${escaped(github)}\n`);
    const scan = (text: Buffer, reread: RereadBudget) => {
      const scanner = new SecretScanner(undefined, 0, 1, reread);
      for (let off = 0; off < text.length; off += BLOCK) scanner.scanBlock(text.subarray(off, Math.min(text.length, off + BLOCK)), off + BLOCK >= text.length);
      return scanner.finding?.what;
    };
    expect(scan(Buffer.concat([ESCAPED_TEXT.subarray(0, REREAD_BYTES - 2 * BLOCK), key]), rereadBudget())).toBe("a GitHub token, with Markdown's backslash escapes removed");
    // Each window read again spends its length; what is left is less than a window.
    const spent = rereadBudget();
    expect(scan(ESCAPED_TEXT, spent)).toBeUndefined();
    expect(spent.left).toBeLessThan(BLOCK);
    expect(scan(Buffer.concat([ESCAPED_TEXT.subarray(0, 3 * BLOCK), key]), { left: 0, terminalLeft: 0, dumpLeft: 0, encodedLeft: 0 })).toBeUndefined();
    // A terminal's sequences between a key's characters have a smaller share of it (REREAD_TERMINAL_BYTES): past it, a key
    // cut by them is read once; the other forms still have theirs.
    const COLOURED = Buffer.from("\x1b[mEAA".repeat(Math.ceil((REREAD_TERMINAL_BYTES + 3 * BLOCK) / 6)));
    const cutKey = Buffer.from(` ${github.slice(0, 10)}\x1b[m\x1b[K${github.slice(10)}\n`);
    expect(scan(Buffer.concat([COLOURED.subarray(0, REREAD_TERMINAL_BYTES - 2 * BLOCK), cutKey]), rereadBudget())).toBe("a GitHub token, with terminal escape sequences removed");
    const terminalSpent = rereadBudget();
    // (The key inside a whole window: a stream's short last window costs less than what is left.)
    expect(scan(Buffer.concat([COLOURED, cutKey, Buffer.from("words ".repeat(BLOCK / 6))]), terminalSpent)).toBeUndefined();
    expect(terminalSpent.terminalLeft).toBeLessThan(BLOCK);
    expect(scan(Buffer.concat([COLOURED, key, Buffer.from("words ".repeat(BLOCK / 6))]), rereadBudget())).toBe("a GitHub token, with Markdown's backslash escapes removed");
    // Through the CLI: a file of that much escaped text ends with the key as it is, found by the first reading.
    const plain = write(work, "plain-after.md", Buffer.concat([ESCAPED_TEXT, Buffer.from(` ${github}\n`)]));
    const r = cli(["prepare", "--", plain], { env: h.env, cwd: work });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("secret_detected: ");
    expect(leftBehind(h).outbox).toEqual([]);
  });
});

// A key cut by a line break in a text file, which a red-team pass
// (2026-12-05) found published: Python's `textwrap.fill` (it breaks after a
// token's hyphens, and inside a word longer than its width; an indent after
// each break with `subsequent_indent`), `fold -w` (a cut every N bytes), a
// Markdown or e-mail quote's `> ` before each line, LF or CRLF. The host's
// known values are compared across line breaks (known.ts); a vendor's key is
// read joined where a trigger of its rule saw it cut (find.ts).
describe("keys cut by line breaks", () => {
  const f = new Fakes(1205);
  const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  const B64URL = `${ALNUM}_-`;
  const HEX = "0123456789abcdef";
  const telegram = `7${f.pick("0123456789", 9)}:AA${f.pick(B64URL, 33)}`;
  const anthropic = `sk-ant-api03-${f.pick(B64URL, 93)}AA`;
  const github = `ghp_${f.pick(ALNUM, 36)}`;
  const openrouter = `sk-or-v1-${f.pick(HEX, 64)}`;
  const google = `AIza${f.pick(B64URL, 35)}`;
  const aws = `AKIA${f.pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)}`;
  const jwt = `eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.${Buffer.from(JSON.stringify({ sub: f.pick(ALNUM, 20), iat: 1764900000 })).toString("base64url")}.${f.pick(B64URL, 43)}`;
  // A value of the host's .env that no rule knows the format of.
  const custom = f.pick(ALNUM, 48);
  const textwrap = (text: string, width: number, indent = "") =>
    spawnSync(systemPython(), ["-c", "import sys, textwrap; sys.stdout.write(textwrap.fill(sys.stdin.read(), width=int(sys.argv[1]), subsequent_indent=sys.argv[2]) + '\\n')", String(width), indent], { input: text, encoding: "utf8" }).stdout;
  const fold = (text: string, width: number) => spawnSync("fold", ["-w", String(width)], { input: text, encoding: "utf8" }).stdout;
  const quoted = (text: string) => text.replace(/^/gm, "> ");
  const crlf = (text: string) => text.replace(/\n/g, "\r\n");
  /** Repetitions of what reaches the test of a Telegram token's digits cut after an indent or a quote's `> `: a colon after digits after a blank, read joined where the line before ends in digits (a value no key's: too many digits, or not random). */
  const telegramIndentUnits = [" 0:", " 1234567:", "1234567\n    1:", "> 1234\n> 567:", `12345678\n\t123:AA${f.pick(B64URL, 33)}\n`, `> 1234567\n> 1:AA${"A".repeat(33)}\n`];
  /** Repetitions of a Google API key's or an AWS access key id's lead that ends a line (short lines, runs of the key's alphabet across lines, indents). */
  const leadUnits = ["AIza\n", "AIza\n\n", "  AIza\n", "AKIA\n", "  AKIA\n", "AIzaAIzaAIzaAIza\n", "AKIAAAAAAAAAAAAAAAA\n", `AIza${"A".repeat(30)}\n`, "AIzaSy-_xxxxxxxxxxxxxxxxxxxxxxxxxx\r\n> ", "AKIA1234\n    5678\n", "word AIzaSyA\nmore words here\n"];
  /** `text` with `before` padded so that `fold -w width` cuts the key after its first `cut` characters. */
  const cutAt = (before: string, key: string, cut: number, width: number) => fold(`${before.padEnd(width - cut, ".")}${key} and keep it safe\n`, width);

  it("refuses each through the CLI, naming the kind and that line breaks were removed, never the value, and leaves nothing behind", () => {
    fs.mkdirSync(path.join(h.home, ".hermes"), { recursive: true });
    write(path.join(h.home, ".hermes"), ".env", `MY_SERVICE_KEY=${custom}\n`);
    const WRAPPED = "with line breaks removed";
    const cases: [string, string | Buffer, string][] = [
      ["telegram.txt", textwrap(`Here is the Telegram bot token: ${telegram} done`, 20), `a Telegram bot token, ${WRAPPED}`],
      ["telegram-indent.txt", textwrap(`TELEGRAM_BOT_TOKEN=${telegram}`, 30, "    "), `a Telegram bot token, ${WRAPPED}`],
      ["telegram-digits.txt", cutAt("Bot token:", telegram, 4, 40), `a Telegram bot token, ${WRAPPED}`],
      ["anthropic-hyphen.md", textwrap(`Here is the Anthropic key you asked for: ${anthropic} and please keep it safe.`, 70), `an Anthropic API key, ${WRAPPED}`],
      ["anthropic-body.txt", crlf(textwrap(`Anthropic: ${anthropic}`, 40, "  ")), `an Anthropic API key, ${WRAPPED}`],
      ["github-word.txt", cutAt("Your GitHub token:", github, 2, 30), `a GitHub token, ${WRAPPED}`],
      ["github-connector.txt", cutAt("Your GitHub token:", github, 3, 30), `a GitHub token, ${WRAPPED}`],
      ["openrouter.md", quoted(fold(`OPENROUTER_API_KEY=${openrouter}\n`, 40)), `an OpenRouter API key, ${WRAPPED}`],
      ["jwt-header.txt", cutAt("token:", jwt, 12, 40), `a JSON Web Token, ${WRAPPED}`],
      ["jwt-payload.md", quoted(fold(`Authorization token ${jwt}\n`, 64)), `a JSON Web Token, ${WRAPPED}`],
      ["known.txt", fold(`# pasted from ~/.hermes/.env\nMY_SERVICE_KEY=${custom}\n`, 40), `the value of MY_SERVICE_KEY (the Hermes .env), ${WRAPPED}`],
      // Cut just before a Telegram token's colon, and just before or after a JWT's first dot (2026-12-06; published until then).
      ["telegram-colon.txt", cutAt("Bot token:", telegram, 10, 40), `a Telegram bot token, ${WRAPPED}`],
      ["telegram-colon-quoted.md", crlf(quoted(cutAt("Bot token:", telegram, 10, 40))), `a Telegram bot token, ${WRAPPED}`],
      ["jwt-after-dot.txt", cutAt("token:", jwt, jwt.indexOf(".") + 1, 60), `a JSON Web Token, ${WRAPPED}`],
      ["jwt-after-dot-indent.md", `Authorization token: ${jwt.replace(".", ".\n    ")}\n`, `a JSON Web Token, ${WRAPPED}`],
      ["jwt-before-dot.txt", crlf(cutAt("token:", jwt, jwt.indexOf("."), 60)), `a JSON Web Token, ${WRAPPED}`],
      ["telegram-colon.docx", docx(`Bot token: ${telegram.replace(":", "\n:")}`), `a Telegram bot token, ${WRAPPED} (in the text of word/document.xml`],
      ["jwt-after-dot.docx", docx(`token: ${jwt.replace(".", ".\n")}`), `a JSON Web Token, ${WRAPPED} (in the text of word/document.xml`],
      ["known-report.md", crlf(textwrap(`The service key in use is ${custom}, rotated monthly.`, 24, "\t")), `the value of MY_SERVICE_KEY (the Hermes .env), ${WRAPPED}`],
      // Cut in its digits with an indent or a quote's `> ` after the break (a second pass of 2026-12-06; published until then).
      ["telegram-digits-indent.txt", textwrap(`TELEGRAM_BOT_TOKEN=${telegram}`, 24, "    "), `a Telegram bot token, ${WRAPPED}`],
      ["telegram-digits-quoted.md", quoted(cutAt("Bot token:", telegram, 4, 40)), `a Telegram bot token, ${WRAPPED}`],
      ["telegram-digits-nested.md", crlf(quoted(quoted(cutAt("Bot token:", telegram, 7, 40)))), `a Telegram bot token, ${WRAPPED}`],
      ["telegram-digits-tab.txt", `Bot token: ${telegram.slice(0, 4)}\n\t${telegram.slice(4)}\n`, `a Telegram bot token, ${WRAPPED}`],
      ["telegram-digits.docx", docx(`Bot token: ${telegram.slice(0, 3)}\n    ${telegram.slice(3)}`), `a Telegram bot token, ${WRAPPED} (in the text of word/document.xml`],
      // A Google API key or an AWS access key id cut after its lead (a second pass of 2026-12-06; published until then).
      ["google.txt", cutAt("Maps key:", google, 20, 40), `a Google API key, ${WRAPPED}`],
      ["google-wrapped.md", crlf(quoted(textwrap(`GOOGLE_API_KEY=${google}`, 24))), `a Google API key, ${WRAPPED}`],
      ["google-indent.txt", textwrap(`The Maps key: ${google}, rotate it monthly.`, 20, "    "), `a Google API key, ${WRAPPED}`],
      ["aws.txt", cutAt("AWS_ACCESS_KEY_ID=", aws, 9, 40), `an AWS access key id, ${WRAPPED}`],
      ["aws-quoted.md", quoted(cutAt("access key id:", aws, 17, 30)), `an AWS access key id, ${WRAPPED}`],
      ["google.docx", docx(`Maps key: ${google.slice(0, 12)}\n${google.slice(12)}`), `a Google API key, ${WRAPPED} (in the text of word/document.xml`],
    ];
    const files = cases.map(([name, content]) => write(work, name, content));
    // Each case is cut: the key is nowhere whole in it.
    for (const [name, content] of cases) for (const key of [telegram, anthropic, github, openrouter, jwt, custom, google, aws]) expect(content.includes(key), name).toBe(false);
    const r = prepareJson(files, "txt,md,docx");
    expect(r.code).toBe(1);
    expect(r.dropped.map(([name, code]) => [name, code])).toEqual(cases.map(([name]) => [name, "secret_detected"]));
    r.dropped.forEach(([name, , reason], i) => expect(reason, name).toContain(cases[i]![2]));
    for (const [, , reason] of r.dropped) for (const v of [telegram, anthropic, github, openrouter, jwt, custom, google, aws]) expect(reason).not.toContain(v);
    expect(r.published).toEqual([]);
    expect(leftBehind(h)).toMatchObject({ outbox: [], staging: [] });
  });

  it("publishes wrapped text that holds no key, and judges a wrapped PEM block as before", () => {
    const prose = textwrap(
      "The quarterly report covers revenue, churn and the task-based onboarding flow of the self-hosted gateway: our sk-learn pipeline, the xoxo-themed newsletter, ghp and am_pm settings, all re-run twice. " +
        "Passwords are rotated monthly; keys live in the vault. See https://example.com/a/very/long/path/that/wraps/over/the/line and e.g. the e-mail thread.",
      30,
    );
    const env = "OPENROUTER_API_KEY=sk-or-v1-...\nSLACK_BOT_TOKEN=xoxb-your-bot-token\nGITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\nTELEGRAM_BOT_TOKEN=123456789:ABC-DEF1234ghIkl-zyx57W2v1u123ew11\nSTRIPE=sk_test_4eC39HqLyjWDarjtT1zdp7dc\njwt.io: done\n";
    const twins = [
      write(work, "prose.txt", prose),
      write(work, "quoted-prose.md", quoted(prose)),
      write(work, "base64.txt", `${f.bytes(600).toString("base64").match(/.{1,76}/g)!.join("\n")}\n`),
      write(work, "hex.txt", spawnSync("xxd", [], { input: f.bytes(512) }).stdout.toString() || `${f.bytes(512).toString("hex").match(/.{1,32}/g)!.join("\n")}\n`),
      write(work, "code.md", "```python\ndef fetch_tokens(session_id: str, max_tokens: int = 4096) -> list[str]:\n    return [t for t in session.tokens if t.startswith('sk-')\n            and t.endswith('-v1')]\n```\n"),
      write(work, "env-example.txt", `${env}${fold(env, 20)}`),
      // A placeholder the rule's check refuses, ending a line before a random one: more of it is no key.
      write(work, "placeholder.txt", `token ghp_${"x".repeat(36)}\n${f.pick(ALNUM, 40)}\n`),
      write(work, "certificate.txt", fold(new Fakes(5).pem("CERTIFICATE"), 40)),
      // A line of digits before a colon that starts a line, and a dot that ends one before `eyJ`, that are no key's cut.
      write(
        work,
        "cut-lookalikes.txt",
        [
          "build 12345678",
          ": done in 3s",
          `ticket 1234567\n:AA${f.pick(B64URL, 33)}`,
          `order 12345678901\n:AA${f.pick(B64URL, 33)}`,
          // Digits after an indent or a quote's `> ` below a line that ends in digits: a time, a listing's numbers, too many
          // digits in all, a value that is no key's.
          "meeting in room 12345678",
          "    12:30 lunch, 14:00 review",
          "> order 1234567",
          "> 8901:AA" + f.pick(B64URL, 33),
          "  build 1234",
          "\t5678:" + "A".repeat(35),
          "2026-12-05 09:17:45 started 1234567",
          "    10:20:30 done, took 12345678",
          "    9:" + f.pick(ALNUM, 20) + " and more",
          // A lead that ends a line before a key's length, the next line no key's rest: AWS's documented example cut, a short
          // id, an AIza alone, prose after it, base64 with + and / in the next line's first characters.
          "the documented key id AKIAIOSFODNN7",
          "EXAMPLE and its secret",
          "instance ids AKIA1234",
          "ABCD are not keys",
          "AIza",
          `mentions of AIzaSyDemo`,
          "are only prefixes of keys, so the words that follow are not joined to them",
          `blob ${f.bytes(20).toString("base64").slice(0, 10)} AIzaQ`,
          "+/+/abcdefghijklmnopqrstuvwxyz0123456789",
          "Every token's header is JSON in base64url.",
          "eyJ is how it begins, and the payload follows.",
          // An unsigned token (`alg: none`) cut after its dot: no credential.
          `token ${Buffer.from('{"alg":"none","typ":"JWT"}').toString("base64url")}.`,
          `${Buffer.from(JSON.stringify({ sub: f.pick(ALNUM, 20) })).toString("base64url")}.`,
          "",
        ].join("\n"),
      ),
    ];
    const key = write(work, "key.txt", new Fakes(6).pem("RSA PRIVATE KEY"));
    const r = prepareJson([...twins, key], "txt,md");
    expect(r.dropped).toEqual([["key.txt", "secret_detected", expect.stringContaining("a private key block")]]);
    expect(r.published).toEqual(twins.map((t) => path.basename(t)));
  });

  it("finds the host's value cut at any width of 19 or more (values of 38 bytes or more), from any column, after LF, CRLF, an indent or a quote; not a gate client's value", () => {
    const next = rng(1205);
    const pick = (n: number) => Array.from({ length: n }, () => ALNUM[Math.floor(next() * ALNUM.length)]).join("");
    for (let round = 0; round < 400; round++) {
      const value = pick(38 + Math.floor(next() * 90));
      const width = 19 + Math.floor(next() * 60);
      const column = Math.floor(next() * width);
      const breaks = ["\n", "\r\n", "\n    ", "\n\t", "\n> ", "\r\n> > "][round % 6]!;
      const known = new KnownSecrets([{ name: "V", bytes: Buffer.from(value) }, { name: "W", bytes: Buffer.from(pick(40)) }]);
      const line = `${"x".repeat(column)}${value} and so on`;
      const text = Buffer.from(`head\n${line.match(new RegExp(`.{1,${width}}`, "g"))!.join(breaks)}\n`);
      const cut = column + value.length > width;
      expect(known.find(text), `round ${round}: width ${width}, column ${column}`).toEqual({ name: cut ? "V, with line breaks removed" : "V", index: 5 + column });
      if (!cut) continue;
      expect(new KnownSecrets([{ name: "V", bytes: Buffer.from(value), whole: true }]).find(text), `round ${round}`).toBeUndefined();
    }
    // Whole, it is named as before.
    expect(new KnownSecrets([{ name: "V", bytes: Buffer.from(custom) }]).find(Buffer.from(`key ${custom}\n`))).toEqual({ name: "V", index: 4 });
    // Two breaks in a row, or text between the pieces, are no wrapping.
    for (const text of [`${custom.slice(0, 24)}\n\n${custom.slice(24)}`, `${custom.slice(0, 24)} \n${custom.slice(24)}`, `${custom.slice(0, 24)}\nx${custom.slice(24)}`]) {
      expect(new KnownSecrets([{ name: "V", bytes: Buffer.from(custom) }]).find(Buffer.from(text))).toBeUndefined();
    }
  });

  it("gives a verdict on repetitions of its triggers and of a known value's pieces (verdicts only)", () => {
    const long = 512 * 1024;
    const rep = (s: string) => Buffer.from(s.repeat(Math.ceil(long / s.length)));
    for (const unit of ["sk-\n", "ghp\n_", "g\nhp_", "gh\np_", "sk-ant-\n", "7123\n456789:", "71234567\n:", ".e\nyJ", "eyJ\n", "eyJa.e\nyJ\n", "a\neyJ.eyJ", "AIza\n", "AKIA\n", "\n:", "xoxb-\n", "  -", "\n-", "sk-a\nb"]) {
      expect(scanBytes(rep(unit)), JSON.stringify(unit)).toBeUndefined();
    }
    // A Telegram token's colon and a JWT's dot cut from their digits and payload (2026-12-06).
    for (const unit of ["1234567890\n:", "1234567890\n:A", "\n:A", "0\n:", "12345678\n> :", "abcd 1234567890\n    :", "eyJ.\n", "eyJ.\neyJ", ".\neyJ", "a.\neyJ", "eyJhbGciOiJub25lIn0.\neyJ", "eyJhbGciOiJub25lIn0.\r\neyJhbGci\n"]) {
      expect(scanBytes(rep(unit)), JSON.stringify(unit)).toBeUndefined();
    }
    // Its digits cut after an indent or a quote's `> ` (a second pass of 2026-12-06).
    for (const unit of telegramIndentUnits) expect(scanBytes(rep(unit)), JSON.stringify(unit)).toBeUndefined();
    // A Google API key's and an AWS access key id's lead that ends a line (a second pass of 2026-12-06).
    for (const unit of leadUnits) expect(scanBytes(rep(unit)), JSON.stringify(unit)).toBeUndefined();
    expect(scanBytes(Buffer.concat([rep("  AIza\n"), Buffer.from(`\n\n${cutAt("Maps key:", google, 20, 40)}`)]))?.what).toBe("a Google API key, with line breaks removed");
    expect(scanBytes(Buffer.concat([rep("AKIAAAAAAAAAAAAAAAA\n"), Buffer.from(`\n\n${cutAt("key id:", aws, 9, 40)}`)]))?.what).toBe("an AWS access key id, with line breaks removed");
    expect(scanBytes(Buffer.concat([rep(telegramIndentUnits.at(-1)!), Buffer.from(`\n${quoted(cutAt("Bot token:", telegram, 4, 40))}`)]))?.what).toBe("a Telegram bot token, with line breaks removed");
    for (const unit of ["1234567890\n:", "12345678\n> :", "sk-ant-api03-AAAA\n", ...telegramIndentUnits, ...leadUnits]) expectLinearReading(unit);
    const cutKeys = Buffer.from(`\n${cutAt("Bot token:", telegram, 10, 40)}`);
    expect(scanBytes(Buffer.concat([rep("1234567890\n:"), cutKeys]))?.what).toBe("a Telegram bot token, with line breaks removed");
    expect(scanBytes(Buffer.concat([rep("eyJhbGciOiJub25lIn0.\neyJ"), Buffer.from(`\n${cutAt("token:", jwt, jwt.indexOf(".") + 1, 60)}`)]))?.what).toBe("a JSON Web Token, with line breaks removed");
    // A key's piece after each line of a run of a key's characters (one joined reading per run), and a key after it all, in a
    // window of its own; in the same window, behind more places than a search reads (Search.cuts, documented), it is not.
    expect(scanBytes(rep("sk-ant-api03-AAAA\n"))).toBeUndefined();
    const key = Buffer.from(`\n${textwrap(`key ${anthropic} end`, 30)}`);
    const prose = Buffer.from("The quarterly report covers revenue and churn.\n".repeat(2000));
    expect(scanBytes(Buffer.concat([rep("sk-\nsk-ant-\n"), prose, key]))?.what).toBe("an Anthropic API key, with line breaks removed");
    expect(scanBytes(Buffer.concat([rep("abcdefghij sk-\n").subarray(0, 32 * 1024), key]))).toBeUndefined();
    expect(scanBytes(Buffer.concat([rep("abcdefghij sk-\n").subarray(0, 2 * 1024), key]))?.what).toBe("an Anthropic API key, with line breaks removed");
    // Lines of under 6 bytes end no wrapped key's piece (a list's; documented).
    expect(scanBytes(Buffer.from(`key:\n${anthropic.match(/.{1,5}/g)!.join("\n")}\n`))).toBeUndefined();
    expect(scanBytes(Buffer.from(`key:\n${anthropic.match(/.{1,6}/g)!.join("\n")}\n`))?.what).toBe("an Anthropic API key, with line breaks removed");
    // A known value's pieces repeated, each cut short of the whole (one walk per piece read).
    const known = new KnownSecrets([{ name: "V", bytes: Buffer.from(custom) }]);
    const pieces = `${custom.slice(0, 20)}\n${custom.slice(20, 40)}\n`;
    expect(known.find(rep(pieces))).toBeUndefined();
    expect(known.find(rep(`${custom.slice(0, 47)}\n`))).toBeUndefined();
    expect(known.find(Buffer.concat([rep(pieces), Buffer.from(`${custom.slice(0, 30)}\n${custom.slice(30)}\n`)]))?.name).toBe("V, with line breaks removed");
  });

  // Red-team pass 33's 10: a key cut by a shell's line continuation (`\` and a line break), which bash joins into one word,
  // was published; a block where one lies between two of a key's characters is read again with them removed.
  const CONTINUED = "with backslash line continuations removed";
  it("refuses a key cut by a shell's line continuation through the CLI (a wrapped git clone, a Dockerfile's RUN, curl -u, CRLF, an indent), never the value; scripts with continuations and no key are published", () => {
    fs.mkdirSync(path.join(h.home, ".hermes"), { recursive: true });
    const password = `Zq8#tR4v${f.pick(ALNUM, 8)}`;
    write(path.join(h.home, ".hermes"), ".env", `MY_SERVICE_KEY=${custom}\nDB_PASSWORD=${password}\n`);
    const cases: [string, string, string][] = [
      ["clone.sh.txt", `git clone \\\n  https://${github.slice(0, 15)}\\\n${github.slice(15)}@github.com/acme/app.git\n`, `a GitHub token, ${CONTINUED}`],
      ["Dockerfile.md", `RUN curl -fsS -H "X-Service: ${custom.slice(0, 16)}\\\n${custom.slice(16)}" \\\n    https://api.example.com/v1/ping\n`, `the value of MY_SERVICE_KEY (the Hermes .env), ${CONTINUED}`],
      ["curl.txt", `curl -u admin:${password.slice(0, 8)}\\\n${password.slice(8)} https://db.example.com/\n`, `the value of DB_PASSWORD (the Hermes .env), ${CONTINUED}`],
      ["crlf.txt", `export URL=https://x.example/?k=${anthropic.slice(0, 30)}\\\r\n    ${anthropic.slice(30)}\r\n`, `an Anthropic API key, ${CONTINUED}`],
    ];
    const files = cases.map(([name, text]) => write(work, name, text));
    const twins = [
      write(work, "build.sh.txt", "#!/bin/sh\n./configure \\\n  --prefix=/usr \\\n  --with-ssl\nmake -j4 CFLAGS=-O2\\\n  all && \\\n  make install\nSRCS = main.c util.c\\\n\tio.c\n"),
      write(work, "Dockerfile-clean.md", "RUN apt-get update && \\\n    apt-get install -y curl\\\n    git && rm -rf /var/lib/apt/lists/*\n#define CHECK(x) do {\\\n  assert(x);\\\n} while (0)\n"),
    ];
    const r = prepareJson([...files, ...twins], "txt,md");
    expect(r.dropped.map(([name, code]) => [name, code])).toEqual(cases.map(([name]) => [name, "secret_detected"]));
    r.dropped.forEach(([, , reason], i) => expect(reason).toContain(cases[i]![2]));
    for (const [, , reason] of r.dropped) for (const v of [github, custom, password, anthropic]) expect(reason).not.toContain(v);
    expect(r.published).toEqual(twins.map((t) => path.basename(t)));
  });

  it("sees a line continuation only between a key's characters, and gives a verdict on repetitions of it (verdicts only)", () => {
    for (const text of ["abc\\\ndef", "abc\\\r\ndef", "abc\\\n    def", "abc\\\n> def"]) expect(formsIn(text), JSON.stringify(text)).toBe(Form.LineContinuation);
    for (const text of ["abc \\\ndef", "abc\\\n\ndef", "abc\\\n  \"def", "abc\\ndef", `abc\\\n${" ".repeat(17)}def`, "a)\\\nb"]) expect(formsIn(text), JSON.stringify(text)).toBe(0);
    const long = 512 * 1024;
    const rep = (s: string) => Buffer.from(s.repeat(Math.ceil(long / s.length)));
    for (const unit of ["a\\\nb", "\\\n", "\\\\\n", "a\\\r\n", `a\\\n${" ".repeat(16)}b`, "ab \\\n  cd", "x\\\n\\\n"]) expect(scanBytes(rep(unit)), JSON.stringify(unit)).toBeUndefined();
    expect(scanBytes(Buffer.concat([rep("a\\\nb "), Buffer.from(` ${github.slice(0, 9)}\\\n  ${github.slice(9)}\n`)]))?.what).toBe(`a GitHub token, ${CONTINUED}`);
  });
});

// A red-team pass (2026-12-05, repro 01) found a vendor key published right
// after a terminal's control sequence (an SGR colour code, `\x1b[K`): a
// captured terminal's output (`script`, a CI log, `grep --color`) writes one
// before a key, and its final byte, a letter, read as the token's.
describe("a key right after a terminal's control sequence", () => {
  /**
   * Fakes made here (seeded), one a trigger: a vendor word, a literal (AIza, SK, EAA), a JWT's dot, a Telegram token's colon.
   * GitHub's fine-grained token has six letters before its connector: after `\x1b[1;32m` the walk back for the word stops
   * at WORD_MAX inside the digits. RetainDB's has eight: the walk back for the word stops at WORD_MAX, after the sequence's
   * final letter.
   */
  const keys = triggerKeys(new Fakes(30), [
    ["retaindb", "retaindb_", "a RetainDB API key"],
    ["mem0", "mem0_", "a Mem0 API key"],
  ]);
  /** SGR codes as terminals and tools write them (bold green, a reset, 256 colours, an erase, grep's), each as the last before the key. */
  const ESCAPES = ["\x1b[1;32m", "\x1b[0m", "\x1b[m", "\x1b[38;5;208m", "\x1b[K", "\x1b[01;31m\x1b[K", "\x1b[0;1;39m", "\x1b[?25h"];
  /** An escape that ends right before the key, and one right after it (`\x1b[0m`, `\x1b[K`): the key's end needs no other boundary. */
  const around = (e: string, key: string) => `${e}${key}\x1b[0m\x1b[K`;

  it("is refused through the CLI: after each SGR form, at a line's start, before another escape, inside a docx's text; escapes around words and digests are published", () => {
    const files = [
      ...ESCAPES.map((e, n) => write(work, `log-${n}.txt`, `$ gh auth token\nLogged in. Token: ${around(e, keys.github![0])}\n`)),
      write(work, "line-start.txt", `build log\n${around("\x1b[32m", keys.openrouter![0])}\n`),
      write(work, "file-start.txt", `${around("\x1b[1m", keys.anthropic![0])}\n`),
      write(work, "capture.docx", docx(`Terminal: ${around("\x1b[1;32m", keys.google![0])} done`)),
    ];
    const twins = [
      write(work, "words.txt", `${ESCAPES.map((e) => `${e}ghp_status\x1b[0m ${e}sk-ant-models\x1b[0m ${e}hello_world_and_more_words\x1b[0m`).join("\n")}\n`),
      write(work, "digests.txt", `${ESCAPES.map((e) => `${e}${new Fakes(7).bytes(32).toString("hex")}\x1b[0m sha256 ${e}e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\x1b[K`).join("\n")}\n`),
      write(work, "ls-color.txt", `\x1b[0m\x1b[01;34mnode_modules\x1b[0m  \x1b[01;32mbuild_release_artifacts.sh\x1b[0m  \x1b[00mREADME.md\x1b[0m\n`),
    ];
    const r = prepareJson([...files, ...twins], "txt,docx");
    expect(r.code).toBe(1);
    expect(r.dropped.map(([name, code]) => [name, code])).toEqual(files.map((file) => [path.basename(file), "secret_detected"]));
    const reasons = r.dropped.map(([, , reason]) => reason);
    for (const reason of reasons.slice(0, ESCAPES.length)) expect(reason).toContain("a GitHub token");
    expect(reasons.slice(ESCAPES.length)).toEqual([expect.stringContaining("an OpenRouter API key"), expect.stringContaining("an Anthropic API key"), expect.stringContaining("a Google API key")]);
    for (const reason of reasons) for (const [key] of Object.values(keys)) expect(reason).not.toContain(key.slice(4, 20));
    expect(r.published).toEqual(twins.map((file) => path.basename(file)));
    expect(leftBehind(h).staging).toEqual([]);
  });

  it("finds each kind of trigger's key after each escape, at the text's start and after words, and before another escape", () => {
    for (const [label, [key, what]] of Object.entries(keys)) {
      for (const e of ESCAPES) {
        for (const text of [`${e}${key}`, `Token: ${around(e, key)}\n`, `x=1 ${around(e, key)}`]) expect(findSecret(text)?.what, `${label} ${JSON.stringify(text.slice(0, 30))}`).toBe(what);
      }
      // A sequence of the longest parameters read back (CSI_PARAMETERS_MAX bytes), and intermediates.
      expect(findSecret(`\x1b[${"1;".repeat(15)}32m${key}`)?.what, label).toBe(what);
      expect(findSecret(`\x1b[${"1".repeat(CSI_PARAMETERS_MAX - 3)};32m${key}`)?.what, label).toBe(what);
      expect(findSecret(`\x1b[2 q${key}`)?.what, label).toBe(what);
    }
  });

  /**
   * The other sequences a terminal writes (2026-12-06; published until then): an escape sequence (ESC, intermediates, a
   * final: `tput sgr0`'s `ESC ( B`, the line-drawing set's `ESC ( 0`, `ESC 7`, `ESC M`) and the 8-bit control sequence
   * introducer, as a byte (0x9B) and in UTF-8 (C2 9B).
   */
  const OTHER_ESCAPES = ["\x1b(B", "\x1b[0m\x1b(B", "\x1b(0", "\x1b7", "\x1bM", "\x1b$)B", "\x9b1;32m", "\x9bK", "\xc2\x9b0m", "\xc2\x9b38;5;208m"];

  it("finds each kind of trigger's key after an escape sequence (`ESC ( B`, `ESC 7`) and after the 8-bit CSI (0x9B, C2 9B)", () => {
    for (const [label, [key, what]] of Object.entries(keys)) {
      for (const e of OTHER_ESCAPES) {
        for (const text of [`${e}${key}`, `Token: ${e}${key}\x1b(B\n`, `x=1 ${e}${key} done`]) expect(findSecret(text)?.what, `${label} ${JSON.stringify(text.slice(0, 30))}`).toBe(what);
      }
    }
  });

  it("is refused through the CLI after `tput sgr0`'s `ESC ( B` and after the 8-bit CSI in UTF-8; the same escapes around words are published", () => {
    const files = [
      write(work, "sgr0.txt", `$ gh auth token\nToken: \x1b[1m\x1b(B${keys.github![0]}\x1b(B\x1b[m\n`),
      write(work, "csi8.txt", `Token: \u009b1;32m${keys.anthropic![0]}\u009b0m\n`),
    ];
    const twins = [write(work, "words-sgr0.txt", `${OTHER_ESCAPES.filter((e) => !e.includes("\x9b")).map((e) => `${e}ghp_status ${e}sk-ant-models ${e}hello_world_and_more_words ${e}${new Fakes(8).bytes(32).toString("hex")}`).join("\n")}\n`)];
    const r = prepareJson([...files, ...twins], "txt");
    expect(r.dropped.map(([name, code, reason]) => [name, code, reason.includes("a GitHub token") || reason.includes("an Anthropic API key")])).toEqual(files.map((file) => [path.basename(file), "secret_detected", true]));
    for (const [, , reason] of r.dropped) for (const [key] of Object.values(keys)) expect(reason).not.toContain(key.slice(4, 20));
    expect(r.published).toEqual(twins.map((file) => path.basename(file)));
  });

  it("starts no token after an escape sequence that is none: too many intermediates, a final that is no final, a parameter after ESC alone, an 8-bit CSI's overlong parameters", () => {
    const [github] = keys.github!;
    for (const text of [`\x1b((((B${github}`, `\x1b(-${github}`, `(B${github}`, `\x1b0m${github}`, `\x9b${"1".repeat(CSI_PARAMETERS_MAX + 1)}m${github}`, `\x9b1;32mx${github}`, `\xc2\x9b0m9${github}`]) {
      expect(findSecret(text), JSON.stringify(text.slice(0, 40))).toBeUndefined();
    }
  });

  it("starts no token after what is no control sequence: a letter without ESC `[`, longer parameters, a letter inside the key's word", () => {
    const [github] = keys.github!;
    for (const text of [`[0m${github}`, `\x1b0m${github}`, `\x1b[${"1".repeat(CSI_PARAMETERS_MAX + 1)}m${github}`, `\x1b[1;32mx${github}`, `\x1b[0m9${github}`, `\x1b[   m${github}`, `\x1b[1-${github}`]) {
      expect(findSecret(text), JSON.stringify(text.slice(0, 40))).toBeUndefined();
    }
  });

  it("reads back a bounded number of bytes per candidate on adversarial text (counts, not time)", () => {
    const [github] = keys.github!;
    for (const unit of [
      "\x1b[",
      "\x1b[m",
      "\x1b[0mghp_",
      `\x1b[${"1;".repeat(40)}mghp_${"a".repeat(36)}`,
      `${"1".repeat(200)}mAIza`,
      `\x1b[${"0".repeat(31)}mSK${"0".repeat(32)} `,
      `\x1b[0meyJ${"a".repeat(20)}.eyJ`,
      `\x1b[0m${github.slice(0, 20)}`,
      `\x1b[1;32mEAA${"b".repeat(120)}`,
      `\x1b[1;32mgithub_${"a".repeat(70)}`,
      `${"1".repeat(40)}fc-`,
      `\x1b[0m${"M".repeat(26)}.abcdef.`,
      // The other sequences (2026-12-06): ESC alone, an escape sequence's intermediates and digit finals, the 8-bit CSI.
      "\x1b",
      "\x1b(",
      "\x1b(BEAA",
      `\x1b7EAA${"b".repeat(120)}`,
      `\x1b(Bghp_${"a".repeat(36)}`,
      "\x9b",
      "\xc2\x9b0m",
      `\x9b1;32mEAA${"b".repeat(120)}`,
      `\xc2\x9b${"1;".repeat(40)}mAIza`,
      "\xd0\x9b",
      `\x1b7${"7".repeat(30)}fc-`,
    ]) expectLinearReading(unit, 1.5);
    // However long the parameters before a final letter, a candidate reads back at most the sequence's bound.
    extraReading.places = 0;
    extraReading.bytes = 0;
    expect(findSecret(`\x1b[${"1".repeat(1000)}mAIza${"b".repeat(35)} `.repeat(1000))).toBeUndefined();
    expect(extraReading.places).toBeGreaterThanOrEqual(1000);
    expect(extraReading.bytes).toBeLessThanOrEqual(extraReading.places * SEQUENCE_BACK_MAX);
  });
});

// A red-team pass (2026-12-05, 32a findings 2 to 5) found keys published
// right after an escape written as text: a string's `\n`, `\r\n`, `\t`,
// `\u00a0` (a JSON chat export, a Python repr, a CSV's escaped line
// breaks), a URL's percent-escape (`%20`, `%0A`, `%3D`, `%22`), a terminal's
// colour code whose ESC is written (`\u001b[1;32m` of Jupyter's and
// docker's JSON, `\x1b[32m`, `\033[1m`, `\e[1m`), grep --color's codes so
// written inside a key, and a PEM private key percent-encoded whole. The
// escape's last byte, a letter or a hex digit, read as the token's
// (written-escapes.ts).
describe("a key right after an escape written as text", () => {
  const f = new Fakes(32);
  const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  /** Fakes made here (seeded), one a trigger: a vendor word, a literal (AIza, SK, EAA), a JWT's dot, a Telegram token's colon. */
  const keys = triggerKeys(f, [
    ["stripe", "sk_live_", "a Stripe secret key"],
    ["retaindb", "retaindb_", "a RetainDB API key"],
  ]);
  /** Escapes as JSON, a repr, a CSV export, a URL and a shell write them, each the last before the key. */
  const WRITTEN = [
    "\\n",
    "\\r\\n",
    "\\t",
    "\\u00a0",
    "\\u0020",
    "\\x20",
    "%20",
    "%0A",
    "%3D",
    "%22",
    "%C2%A0",
    "\\u001b[1;32m",
    "\\u001b[0m",
    "\\u001B[K",
    "\\x1b[32m",
    "\\x1B[01;31m\\x1B[K",
    "\\033[1m",
    "\\e[1m",
    "\\e[0m\\e(B",
    "\\u001b(B",
    // Red team 32c findings 2 and 3: JSON's `\b` and `\f`, C's `\v`, `\a`, octal; the ESC as caret notation, Rust's, Python's,
    // Lua's and terminfo's; a written OSC title, ended by a written BEL.
    "\\b",
    "\\f",
    "\\v",
    "\\a",
    "\\0",
    "\\012",
    "\\7",
    "^[[32m",
    "^[[0m^[(B",
    "\\u{1b}[32m",
    "\\u{001B}[0m",
    "\\U0000001b[32m",
    "\\N{ESCAPE}[32m",
    "\\27[32m",
    "\\E[1m",
    "\\e]0;build\\a",
    "\\e]0;build\\x07",
    "\\u001b]0;build\\u0007",
    // Recall pass 33: Python's eight digits of any character, the ESC's short name, a percent-escape encoded twice.
    "\\U000000a0",
    "\\U00000020",
    "\\U0000000A",
    "\\N{ESC}[32m",
    "%2520",
    "%250A",
    "%253D",
  ];

  it("finds each kind of trigger's key after each written escape, at the text's start, inside a JSON string and after words", () => {
    for (const [label, [key, what]] of Object.entries(keys)) {
      for (const e of WRITTEN) {
        for (const text of [`${e}${key}`, `{"text": "Token:${e}${key}\\n"}`, `x=1 ${e}${key} done`]) expect(findSecret(text)?.what, `${label} ${JSON.stringify(text.slice(0, 30))}`).toBe(what);
      }
    }
  });

  it("starts no token after what is no written escape: a backslash and another letter, too few hex digits, TeX's `\\em`, `\\e` and a final alone, overlong parameters, a letter between", () => {
    const [github] = keys.github!;
    for (const text of [`\\q${github}`, `\\k${github}`, `%2${github}`, `\\x2${github}`, `\\u00a${github}`, `\\em${github}`, `\\e${github}`, `\\u001b0m${github}`, `\\033[${"1".repeat(CSI_PARAMETERS_MAX + 1)}m${github}`, `\\x1b[1;32mx${github}`, `[0m${github}`, `n${github}`, `20${github}`,
      // An octal escape is as many digits as there are, to three (C's): the digit after `\0` or `\012` is the text's, glued.
      `\\08${github}`, `\\0123${github}`, `\\8${github}`,
      // A bracket and no caret, an ESC and a final alone, an ESC's name that is none, a letter between.
      `[[32m${github}`, `^[m${github}`, `\\u{1b}m${github}`, `\\u{1c}[32m${github}`, `\\N{ESCAP}[32m${github}`, `\\N{ES}[32m${github}`, `\\U0000001c[32m${github}`, `\\28[32m${github}`, `^[[32mx${github}`,
      // Recall pass 33: seven digits after `\\U`, a small `\\u` and eight, `%25` and one digit, `%%20`.
      `\\U000000a${github}`, `\\U0000a0${github}`, `%252${github}`, `%%2${github}`]) {
      expect(findSecret(text), JSON.stringify(text.slice(0, 40))).toBeUndefined();
    }
    // A written ESC and a final alone is no sequence inside a key either (TeX's `\\em`), where the second reading removes
    // grep's written codes between words of the same window.
    expect(scanBytes(Buffer.from(`build_release\\u001b[m\\u001b[K_artifacts ${github.slice(0, 12)}\\em${github.slice(12)}\n`)), "\\em").toBeUndefined();
    expect(scanBytes(Buffer.from(`build_release\\u001b[m\\u001b[K_artifacts ${github.slice(0, 12)}\\u001b[m${github.slice(12)}\n`))?.what).toBe("a GitHub token, with terminal escape sequences removed");
    // The ESC's other spellings inside a key (red team 32c/3): removed by the second reading the same way, caret notation's
    // too where the text holds no backslash.
    for (const cut of ["^[[m^[[K", "\\u{1b}[m", "\\U0000001B[K", "\\N{ESCAPE}[m", "\\27[m", "\\E[m"]) {
      expect(scanBytes(Buffer.from(`${github.slice(0, 12)}${cut}${github.slice(12)}\n`))?.what, cut).toBe("a GitHub token, with terminal escape sequences removed");
    }
  });

  it("reads a written escape's end back byte by byte where the look-behind does, and nowhere else (written-escapes.ts's two readings agree)", () => {
    expectEscapeEndsAgree([
      ...WRITTEN.map((e) => `x${e}ghp_`),
      // Octal, as C reads it: three digits, or fewer and no octal digit after.
      "\\0\\01\\012\\0123\\01g\\0777\\08\\8\\7a",
      "\\u{1b}[m\\u{01b}[m\\u{00001b}[m\\u{000001b}[m\\u{1c}[m\\U0000001B[m\\U000001b[m\\N{ESCAPE}[m\\N{ESC}[m\\N{escape}[m",
      "^[[1;2m^[(B^[m[[m^^[[m\\27[m\\127[m\\28[m\\E(0\\e]0;t\\a\\em\\end\\begin\\b\\w+\\b C:\\new\\table",
      // Recall pass 33: eight digits and fewer, any character's; `%25` alone, with one digit, with two, twice; the ESC's short name.
      "\\U000000a0\\U0000a0x\\U000000e9g\\U0010FFFF\\U000000G0\\u000000a0%2520%25%252g%25253A%2525%%2520\\N{ESC}[m\\N{ESC[m\\N{ESCA}[m\\N{ESC}m",
    ]);
  });

  it("starts no false token in TeX, Windows paths, regular expressions and prose that hold the new escapes' letters (red team 32c: the negatives)", () => {
    for (const text of [
      "\\documentclass{article}\n\\begin{document}\n\\emph{x} \\em bold \\bf ghp_status \\vspace{2pt} \\end{document}\n\\begin{equation}a\\beta_{ghp}\\end{equation}\n",
      "C:\\new\\table\\bin\\final\\vendor\\application_data_sk-ant-models\\a11y_tests\\0_readme.txt\nD:\\build\\ghp_status_report_for_the_release_train\\x\n",
      "pattern = /\\b\\w+\\b/; re.compile(r'\\bghp_[A-Za-z0-9]{36}\\b'); grep -E '^[[:space:]]*sk-ant-[a-z]+$' file; sed 's/\\f\\v\\a//g'\n",
      "Pressing ^[ (Escape) then [A moves up; x^[2] is a footnote; use \\0 to end a string; octal \\012 is a line feed; the bell \\a rings.\n",
      `The digest is \\0${new Fakes(12).bytes(32).toString("hex")} and \\b${new Fakes(13).bytes(20).toString("hex")}.\n`,
    ]) expect(scanBytes(Buffer.from(text)), JSON.stringify(text.slice(0, 50))).toBeUndefined();
  });

  it("is refused through the CLI (a JSON chat export, a repr, a CSV export, a notebook's stream, a shell script, a docker log of grep --color with the host's own values, URL-encoded messages, a PEM key percent-encoded whole); the same escapes before ordinary words, digests, a certificate and a placeholder key are published", () => {
    const [github] = keys.github!;
    const [stripe] = keys.stripe!;
    const [anthropic] = keys.anthropic!;
    const openrouter = `sk-or-v1-${f.pick("0123456789abcdef", 64)}`;
    const telegram = `7${f.pick("0123456789", 9)}:AAH${f.pick(`${ALNUM}_-`, 32)}`;
    fs.mkdirSync(path.join(h.home, ".hermes"), { recursive: true });
    write(path.join(h.home, ".hermes"), ".env", `OPENROUTER_API_KEY=${openrouter}\nTELEGRAM_BOT_TOKEN=${telegram}\n`);
    /** grep --color=always's codes around the part it matched, as JSON writes the line (docker's json-file log). */
    const grepJson = (line: string, match: string) => JSON.stringify({ log: `${line.replace(match, `\x1b[01;31m\x1b[K${match}\x1b[m\x1b[K`)}\n`, stream: "stdout" });
    const pem = f.pem("RSA PRIVATE KEY");
    const quotePlus = (text: string) => encodeURIComponent(text).replace(/%20/g, "+");
    const files = [
      write(work, "chat.txt", `${JSON.stringify({ role: "assistant", text: `Here is the token:\n${github}` })}\n`),
      write(work, "repr.md", `stdout='export done\\r\\n${github}\\r\\n'\n`),
      write(work, "export.csv", `id,message\n1,"line one\\n${stripe}"\n`),
      write(work, "tab.txt", `key:\\t${github}\n`),
      write(work, "nbsp.txt", `${JSON.stringify({ text: `key\u00a0${github}` }, null, 0).replace("\u00a0", "\\u00a0")}\n`),
      write(work, "notebook.txt", `{"output_type": "stream", "name": "stdout", "text": ["\\u001b[1;32m${github}\\u001b[0m\\n"]}\n`),
      write(work, "repr-sgr.txt", `print(repr(line)) -> '\\x1b[32m${github}\\x1b[0m'\n`),
      write(work, "script.md", `echo -e "\\033[1m${github}\\033[0m"\n`),
      write(work, "script-e.txt", `echo -e "\\e[1m${github}\\e[0m"\n`),
      write(work, "docker-or.txt", `${grepJson(`OPENROUTER_API_KEY=${openrouter}`, "sk-or-v1")}\n`),
      write(work, "docker-tg.txt", `${grepJson(`TELEGRAM_BOT_TOKEN=${telegram}`, "AAH")}\n`),
      write(work, "q-space.txt", `GET /sendMessage?chat_id=42&text=my%20key%20${github} HTTP/1.1\n`),
      write(work, "q-newline.txt", `POST body: note=line%0A${github}\n`),
      write(work, "q-equals.md", `https://x.example/s?text=key%3D${anthropic}\n`),
      write(work, "q-quote.csv", `text=%22${anthropic}%22\n`),
      write(work, "pem-quote.txt", `https://x.example/upload?key=${encodeURIComponent(pem)}\n`),
      write(work, "pem-quote-plus.txt", `key=${quotePlus(pem)}\n`),
      // Red team 32c findings 2 and 3: JSON.stringify's own `\b` and `\f`, C's octal, `cat -v`'s caret notation, Rust's
      // `{:?}`, Python's `\N{ESCAPE}`, Lua's `\27`, a written OSC title ended by `\a`.
      write(work, "json-bs.txt", `${JSON.stringify({ text: `the token is:\b${github}` })}\n`),
      write(work, "json-ff.txt", `${JSON.stringify({ text: `page two\f${stripe}` })}\n`),
      write(work, "octal.txt", `printf "token:\\012${github}\\012"\n`),
      write(work, "cat-v.txt", `build ok ^[[32m${github}^[[0m\n`),
      write(work, "rust.txt", `[src/main.rs:4] line = "\\u{1b}[32m${github}\\u{1b}[0m"\n`),
      write(work, "python-name.txt", `print("\\N{ESCAPE}[32m${github}\\N{ESCAPE}[0m")\n`),
      write(work, "lua.txt", `io.write("\\27[32m${github}\\27[0m")\n`),
      write(work, "osc-title.txt", `printf '\\e]0;build\\a${github}'\n`),
    ];
    const digest = new Fakes(9).bytes(32).toString("hex");
    const twins = [
      write(work, "chat-words.txt", `${JSON.stringify({ role: "assistant", text: "Here is the plan:\nghp_status sk-ant-models\thello_world_and_more_words\r\nnext_steps_for_the_release_train" })}\n${JSON.stringify({ text: `sha256:\n${digest}\u00a0done` })}\n`),
      write(work, "url-words.txt", `GET /search?q=my%20key%20ghp_status%20sk-ant-models%0Ahello_world_and_more_words%3D${digest}%22 HTTP/1.1\n`),
      write(work, "sgr-words.txt", `["\\u001b[1;32mghp_status\\u001b[0m", "\\x1b[32msk-ant-models\\x1b[0m", "\\033[1mhello_world_and_more_words\\033[0m", "\\e[1m${digest}\\e[0m", "\\u001b[01;31m\\u001b[Kbuild_release\\u001b[m\\u001b[K_artifacts"]\n`),
      write(work, "pem-public.txt", `cert=${encodeURIComponent(new Fakes(10).pem("CERTIFICATE"))}&pub=${quotePlus(new Fakes(11).pem("PUBLIC KEY"))}\n`),
      write(work, "escape-words.txt", `${JSON.stringify({ text: "the plan:\bghp_status\fsk-ant-models" })}\nbuild ok ^[[32mghp_status^[[0m \\u{1b}[1mhello_world_and_more_words\\N{ESCAPE}[0m \\27[1m${digest}\\012done\n\\begin{document}\\em C:\\new\\table\\bin /\\b\\w+\\b/\n`),
      write(work, "pem-placeholder.txt", `key=${encodeURIComponent("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n...\n-----END RSA PRIVATE KEY-----\n")}\n`),
    ];
    const r = prepareJson([...files, ...twins], "txt,md,csv");
    expect(r.code).toBe(1);
    expect(r.dropped.map(([name, code]) => [name, code])).toEqual(files.map((file) => [path.basename(file), "secret_detected"]));
    const reasons = Object.fromEntries(r.dropped.map(([name, , reason]) => [name, reason]));
    expect(reasons["export.csv"]).toContain("a Stripe secret key");
    expect(reasons["docker-or.txt"]).toMatch(/(an OpenRouter API key|the value of OPENROUTER_API_KEY).*, with terminal escape sequences removed/);
    expect(reasons["docker-tg.txt"]).toMatch(/(a Telegram bot token|the value of TELEGRAM_BOT_TOKEN).*, with terminal escape sequences removed/);
    expect(reasons["q-equals.md"]).toContain("an Anthropic API key");
    expect(reasons["pem-quote.txt"]).toContain("a private key block (percent-encoded)");
    expect(reasons["pem-quote-plus.txt"]).toContain("a private key block (percent-encoded)");
    for (const reason of Object.values(reasons)) for (const key of [github, stripe, anthropic, openrouter, telegram]) expect(reason).not.toContain(key.slice(9, 25));
    expect(r.published).toEqual(twins.map((file) => path.basename(file)));
    expect(leftBehind(h).staging).toEqual([]);
  });

  it("finds a PEM private key percent-encoded whole: `%20` or `+` for its spaces, `%0A` or `%0D%0A` between its lines, RFC 1421 headers, `/` kept or `%2F`, lower-case hex; not a certificate, a public key or a placeholder", () => {
    const pem = new Fakes(33).pem("EC PRIVATE KEY");
    const encrypted = `-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,${new Fakes(34).bytes(16).toString("hex").toUpperCase()}\n\n${new Fakes(35).bytes(96).toString("base64")}\n-----END RSA PRIVATE KEY-----\n`;
    const what = "a private key block (percent-encoded)";
    for (const text of [
      encodeURIComponent(pem),
      encodeURIComponent(pem).replace(/%20/g, "+"),
      encodeURIComponent(pem.replace(/\n/g, "\r\n")),
      encodeURIComponent(pem).replace(/%2F/g, "/"),
      encodeURIComponent(pem).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()),
      encodeURIComponent(encrypted),
      encodeURIComponent(encrypted).replace(/%20/g, "+"),
      encodeURIComponent(new Fakes(36).pem("PRIVATE KEY")),
    ]) expect(findSecret(`key=${text}&x=1`)?.what, text.slice(0, 60)).toBe(what);
    for (const text of [
      encodeURIComponent(new Fakes(37).pem("CERTIFICATE")),
      encodeURIComponent(new Fakes(38).pem("PUBLIC KEY")),
      encodeURIComponent(`-----BEGIN PRIVATE KEY-----\n${"A".repeat(64)}\n-----END PRIVATE KEY-----\n`),
      encodeURIComponent("-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----\n"),
    ]) expect(findSecret(`key=${text}&x=1`), text.slice(0, 60)).toBeUndefined();
  });

  it("gives a verdict on adversarial text of written escapes (each pattern's and loop's repetitions)", () => {
    const MiB = 1024 * 1024;
    for (const unit of [
      "\\n",
      "\\nghp_",
      "\\u00a0",
      "\\u00a0sk-",
      "%20",
      "%2",
      "%20AIza",
      `%20EAA${"b".repeat(120)}`,
      `\\nEAA${"b".repeat(99)} `,
      "\\u001b[",
      "\\u001b[m\\u001b[K",
      "a\\u001b[m\\u001b[Ka",
      `\\u001b[${"1;".repeat(40)}mghp_${"a".repeat(36)}`,
      `\\x1b[${"0".repeat(31)}mSK${"0".repeat(32)} `,
      "\\e",
      "\\em",
      "\\e(",
      "\\e[0m\\e(B",
      `%20${"1".repeat(20)}:`,
      `\\u0020${"7".repeat(10)}:`,
      `%20${"M".repeat(26)}.abcdef.`,
      "-----BEGIN%20",
      "-----BEGIN+",
      "-----BEGIN%20RSA%20PRIVATE%20KEY-----%0A",
      `-----BEGIN%20RSA%20PRIVATE%20KEY-----%0AProc-Type%3A%20${"4%2C".repeat(100)}`,
      `-----BEGIN+${"A+".repeat(30)}`,
      // Red team 32c's forms: octal runs, each ESC spelling alone, as a sequence, inside a run, and before a key.
      "\\b",
      "\\bghp_",
      "\\a",
      "\\0",
      "\\01",
      "\\0123",
      `\\0${"7".repeat(10)}:`,
      "^[",
      "^[[",
      "^[[m^[[K",
      "a^[[m^[[Ka",
      `^[[${"1;".repeat(40)}mghp_${"a".repeat(36)}`,
      "\\u{",
      "\\u{0000",
      "\\u{1b}[",
      "a\\u{1b}[ma",
      "\\U0000001b[",
      "\\N{ESCAPE}[",
      "a\\N{ESCAPE}[ma",
      "\\27[",
      "\\E(",
      "\\e]0;",
      "\\e]0;t\\aEAA",
      "\\begin{x}",
      "C:\\new\\table\\",
      // Recall pass 33's forms: eight digits, `%25` and its digits, the short name, written control strings unterminated, cut
      // short, ended, and their written terminators alone.
      "\\U",
      "\\U0000000",
      "\\U000000a0",
      "\\U000000a0ghp_",
      "%25",
      "%2520",
      "%2520ghp_",
      `%2520${"7".repeat(10)}%253A`,
      "%253A",
      "\\N{ESC}[",
      "a\\N{ESC}[ma",
      "\\u001b]",
      "a\\u001b]8;;u",
      "a\\u001b]8;;u\\u001b\\\\a",
      "a\\x1b]8;;u\\x07a",
      "a\\eP",
      "a\\eP\\\\",
      "a\\e_u\\e",
      "\\e\\\\",
      "\\a\\7\\x07^G",
    ]) expect(scanBytes(Buffer.from(unit.repeat(Math.ceil(MiB / unit.length)).slice(0, MiB), "latin1")), JSON.stringify(unit)).toBeUndefined();
  });
});

// A red-team pass (2026-12-06, 31b finding 1) found keys cut by a terminal's
// sequences published: `grep --color=always ghp_` writes its colour and
// erase codes inside the key (`ghp_ESC[m ESC[KQ7mZ…`), and a terminal shows
// it whole. Text that holds sequences between a key's characters is read a
// second time with them removed (text-forms.ts, terminal-escapes.ts).
describe("a key cut by a terminal's sequences", () => {
  const f = new Fakes(311);
  const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  const github = `ghp_${f.pick(ALNUM, 36)}`;
  const openrouter = `sk-or-v1-${f.pick("0123456789abcdef", 64)}`;
  const telegram = `7${f.pick("0123456789", 9)}:AAH${f.pick(`${ALNUM}_-`, 32)}`;
  const anthropic = `sk-ant-api03-${f.pick(`${ALNUM}_-`, 93)}AA`;
  const hostPassword = `Qm7v${f.pick(ALNUM, 16)}`;
  const REMOVED = "with terminal escape sequences removed";
  /** What `grep --color=always` writes for the part of a line it matched. */
  const grep = (line: string, match: string) => line.replace(match, `\x1b[01;31m\x1b[K${match}\x1b[m\x1b[K`);
  /** The sequences a terminal hides, each put inside a key: SGR and erase, ESC ( B, the 8-bit CSI (a byte, and C2 9B), OSC 8 hyperlinks (ESC \ and BEL). */
  const CUTS = ["\x1b[m\x1b[K", "\x1b[1;32m", "\x1b(B", "\x1b[0m\x1b(B", "\x9b0m", "\xc2\x9b38;5;208m", "\x1b]8;;https://example.com/a?b=1\x1b\\", "\x1b]8;id=x;file:///tmp/a\x07", "\x1b7"];
  const cut = (key: string, at: number, seq: string) => `${key.slice(0, at)}${seq}${key.slice(at)}`;

  it("is refused through the CLI as grep --color writes it (a GitHub token, an OpenRouter key, a Telegram token, the host's own .env value), naming the form and never the value, nothing left behind; colourised logs, test output and the negatives cut everywhere are published", () => {
    fs.mkdirSync(path.join(h.home, ".hermes"), { recursive: true });
    write(path.join(h.home, ".hermes"), ".env", `DB_PASSWORD=${hostPassword}\n`);
    const files = [
      write(work, "g1.txt", `${grep(`GITHUB=${github}`, "ghp_")}\n`),
      write(work, "g2.txt", `${grep(`OR=${openrouter}`, "sk-or-v1")}\n`),
      write(work, "g3.txt", `${grep(`TG=${telegram}`, "AAH")}\n`),
      write(work, "g4.txt", `${grep(`pw ${hostPassword} here`, "Qm7v")}\n`),
      write(work, "osc8.txt", `Made ${cut(anthropic, 30, "\x1b]8;;https://console.example.com/keys\x1b\\")}\x1b]8;;\x1b\\ done\n`),
    ];
    const whats = ["a GitHub token", "an OpenRouter API key", "a Telegram bot token", "the value of DB_PASSWORD (the Hermes .env)", "an Anthropic API key"];
    const gitLog = [
      "\x1b[33mcommit 3f9a7c2e8b1d4f6a0c5e9b2d7f1a3c8e6b4d0f2a\x1b[m\x1b[33m (\x1b[m\x1b[1;36mHEAD -> \x1b[m\x1b[1;32mmain\x1b[m\x1b[33m, \x1b[m\x1b[1;31morigin/main\x1b[m\x1b[33m)\x1b[m",
      "Author: Dev <dev@example.com>",
      "\x1b[1mdiff --git a/src/auth_token.ts b/src/auth_token.ts\x1b[m",
      "\x1b[31m-const token_name = process.env.GITHUB_TOKEN_NAME;\x1b[m",
      "\x1b[32m+const token_name = readTokenName(config_path);\x1b[m",
      "\x1b[36m@@ -1,4 +1,4 @@\x1b[m export_\x1b[1mdefault\x1b[m_settings",
    ].join("\n");
    const testOutput = " \x1b[32m✓\x1b[39m test/auth.test.ts \x1b[2m(\x1b[22m\x1b[2m12 tests\x1b[22m\x1b[2m)\x1b[22m\x1b[33m 304\x1b[2mms\x1b[22m\x1b[39m\n \x1b[1m\x1b[42m PASS \x1b[49m\x1b[22m sha256:\x1b[1me3b0c44298fc1c149afbf4c8996fb924\x1b[22m27ae41e4649b934ca495991b7852b855\n";
    const twins = [
      write(work, "git-log.txt", `${gitLog}\n`),
      write(work, "test-output.txt", testOutput),
      write(work, "grep-words.txt", `${grep("ghp_status and sk-or-v1-models here", "ghp_")}\n${grep("api_token_name = hello_world_and_more_words", "token")}\n`),
      write(work, "other-password.txt", `${grep(`pw ${hostPassword.replace(/[0-9]/g, "x")}Z here`, "Qm7v")}\n`),
      // The negatives as a terminal shows them are published; cut by sequences after every character, they read as they are.
      write(work, "negatives-cut.txt", Object.values(negatives(74)).map((text) => [...text].join("\x1b[1;31m")).join("\n")),
      write(work, "negatives-osc.txt", Object.values(negatives(75)).map((text) => text.replace(/ /g, "\x1b]8;;https://example.com\x1b\\ \x1b]8;;\x1b\\")).join("\n")),
    ];
    const r = prepareJson([...files, ...twins], "txt");
    expect(r.code).toBe(1);
    expect(r.dropped).toEqual(files.map((file, i) => [path.basename(file), "secret_detected", expect.stringContaining(`${whats[i]}, ${REMOVED}`)]));
    for (const [, , reason] of r.dropped) for (const key of [github, openrouter, telegram, anthropic, hostPassword]) expect(reason).not.toContain(key.slice(9, 20));
    expect(r.published).toEqual(twins.map((file) => path.basename(file)));
    expect(leftBehind(h).staging).toEqual([]);
  });

  it("finds a key cut by each sequence anywhere inside it, at its first byte, across a block's end; a sequence that is none (overlong, unterminated) is not removed", () => {
    for (const seq of CUTS) {
      for (const at of [1, 4, 10, 39]) {
        const head = "log line\nsaved ";
        expect(scanBytes(Buffer.from(`${head}${cut(github, at, seq)} done\n`, "latin1")), JSON.stringify(seq) + at).toEqual({ what: `a GitHub token, ${REMOVED}`, offset: head.length });
      }
      // Two cuts, and the key's start after one.
      expect(scanBytes(Buffer.from(`${seq}${cut(cut(openrouter, 40, seq), 8, seq)}`, "latin1"))?.what, JSON.stringify(seq)).toBe(`an OpenRouter API key, ${REMOVED}`);
    }
    const at = BLOCK - 20;
    const text = Buffer.from(`${"x".repeat(at - 1)}\n${cut(cut(github, 30, "\x1b[m\x1b[K"), 12, "\x1b[01;31m\x1b[K")}\n${"y".repeat(1000)}\n`, "latin1");
    expect(scanBytes(text)).toEqual({ what: `a GitHub token, ${REMOVED}`, offset: at });
    // Not a terminal's sequence: more parameters than the bound, an OSC with no end before a line break (a UTF-8 one's lone 0x9C is a
    // character's byte, no ST) or with a control byte in its string, ESC before a blank.
    for (const seq of [`\x1b[${"1".repeat(CSI_PARAMETERS_MAX + 1)}m`, "\x1b]8;;https://example.com", "\x1b]8;;a\nb\x1b\\", "\x1b \n", "\x9d8;;u", "\xc2\x9d8;;u\x9c", "\x1b]8;;a\tb\x07"]) {
      expect(scanBytes(Buffer.from(`saved ${cut(github, 12, seq)} done\n`, "latin1")), JSON.stringify(seq.slice(0, 12))).toBeUndefined();
    }
  });

  // Recall pass 32 (2026-12-06; published until then): what a terminal hides whole, read as it does.
  it("finds a key cut by an OSC 8 hyperlink of a long URL, a CSI of more than 32 parameter bytes, the 8-bit OSC (0x9D, C2 9D) ended by BEL, ESC \\, 0x9C or C2 9C; and a key right after such a CSI", () => {
    const url = `https://docs.example.com/${f.pick(ALNUM, 3000)}`;
    const truecolour = "\x1b[1;3;4;38;2;255;128;0;48;2;10;20;30;58;2;200;100;50m";
    const long = ["\x1b]8;;" + url + "\x1b\\", "\x1b]8;;" + url + "\x07", truecolour, `\x1b[${"0;".repeat(90)}1m`];
    const eightBit = ["\x9d8;;https://example.com/k\x07", "\x9d8;;https://example.com/k\x9c", "\x9d8;;https://example.com/k\x1b\\", "\xc2\x9d8;;https://example.com/k\xc2\x9c", "\xc2\x9d8;;u\x07", "\x1b]8;;https://example.com/k\xc2\x9c", "\x9d0;title\x9c\x9d8;;\x9c"];
    // Cut short as a terminal's parser cuts it (its bytes hidden all the same): by the next ESC or C1 control, which starts a sequence
    // of its own; cancelled by CAN or SUB.
    eightBit.push("\x1b]8;;u\x1b[m", "\x1b]0;title\x1b(B", "\x9d8;;u\x9bm", "\x1b]8;;u\xc2\x9bm", "\x1b]8;;u\x18", "\x9d8;;u\x1a");
    for (const seq of [...long, ...eightBit]) {
      for (const at of [4, 21]) {
        const head = "log line\nsaved ";
        expect(scanBytes(Buffer.from(`${head}${cut(github, at, seq)} done\n`, "latin1")), JSON.stringify(seq.slice(0, 16)) + at).toEqual({ what: `a GitHub token, ${REMOVED}`, offset: head.length });
      }
    }
    // A UTF-8 character whose bytes hold 0x9D (来, E6 9D A5) before a key is a character, no 8-bit OSC that hides the key's head.
    for (const before of ["来", "板 ", "✝"]) {
      const text = Buffer.from(`密钥${before}${cut(github, 10, "\x1b[m\x1b[K")}\n`, "utf8");
      expect(scanBytes(text), before).toEqual({ what: `a GitHub token, ${REMOVED}`, offset: text.indexOf("ghp_") });
    }
    // A hyperlink's two ends around the key's second half (`ESC]8;;URL ESC\ … ESC]8;; ESC\`), the URL over 2048 bytes.
    expect(scanBytes(Buffer.from(`Made ${cut(anthropic, 30, `\x1b]8;;${url}\x1b\\`)}\x1b]8;;\x1b\\ done\n`, "latin1"))?.what).toBe(`an Anthropic API key, ${REMOVED}`);
    // Right after a CSI of more than 32 parameter bytes: the first reading.
    expect(findSecret(`Token: ${truecolour}${github}\x1b[0m\n`)?.what).toBe("a GitHub token");
    expect(findSecret(`Token: \x9b${"0;".repeat(60)}1m${openrouter}\n`)?.what).toBe("an OpenRouter API key");
  });

  it("is read again only where sequences lie between two of a key's characters", () => {
    expect(formsIn("ab\x1b[m\x1b[Kcd")).toBe(Form.TerminalEscapes);
    expect(formsIn("ab\xc2\x9b0mcd")).toBe(Form.TerminalEscapes);
    expect(formsIn("ab\x1b]8;;u\x07cd")).toBe(Form.TerminalEscapes);
    expect(formsIn("ab\x9d8;;u\x9ccd")).toBe(Form.TerminalEscapes);
    expect(formsIn("ab\xc2\x9d8;;u\xc2\x9ccd")).toBe(Form.TerminalEscapes);
    for (const text of ["\x1b[33mcommit\x1b[m (HEAD)", "ab \x1b[1mcd", "ab\x1b[m cd", `ab\x1b[${"9".repeat(CSI_PARAMETERS_MAX + 1)}mcd`, "\xe4\xb8\x9b0mab", "ab\x1b\x1b[Kcd"]) {
      expect(formsIn(text), JSON.stringify(text)).toBe(0);
    }
  });

  it("gives a verdict on adversarial text, read in linear time: runs of ESC [, ESC [ with 32 parameter bytes, sequences alternating with a key's characters, unterminated OSCs", () => {
    const MiB = 1024 * 1024;
    for (const unit of ["\x1b[", "\x1b", `\x1b[${"1".repeat(32)}`, `a\x1b[${"1".repeat(32)}m`, "a\x1b[mb", "a\x1b(B", "a\xc2\x9b0m", "a\x1b]", `a\x1b]8;;${"u".repeat(3000)}`, "a\x1b]8;;u\x07", "ghp_\x1b[m\x1b[K",
      // Recall pass 32: CSIs at their bound, unterminated OSCs of either kind (a UTF-8 one over characters whose bytes are 0x9D and
      // 0x9C, each an 8-bit OSC's introducer or terminator), runs of 0x9D and C2 9D.
      `a\x1b[${"1".repeat(CSI_PARAMETERS_MAX)}`, `a\x1b[${"1".repeat(CSI_PARAMETERS_MAX)}m`, "\x9d", "\xc2\x9d", "a\x9d8;;u", "a\x9d8;;u\x9cb", "a\xc2\x9d8;;u\xc2\x9cb", "\x1b]\xe6\x9d\x9c", `\x1b]8;;${"\xe2\x9c\x9d".repeat(2000)}`, `\x9d${"u".repeat(3000)}`]) {
      const text = Buffer.from(unit.repeat(Math.ceil(MiB / unit.length)), "latin1");
      expect(scanBytes(text), JSON.stringify(unit.slice(0, 12))).toBeUndefined();
    }
  });
});

// Recall pass 33 (2026-12-05; published until then): a key right after
// Python's `\U000000a0` or `\N{ESC}[32m`, after `%2520` (a URL encoded
// twice), a Telegram token with its colon so encoded (`%253A`); an OSC whose
// ESC is written as text inside a key (a docker JSON log's hyperlink); DCS,
// APC, PM and SOS strings, and their 8-bit forms, inside a key: a terminal
// hides them up to their ST as it hides an OSC (terminal-escapes.ts,
// written-escapes.ts).
describe("escapes written as text and control strings a terminal hides (recall pass 33)", () => {
  const f = new Fakes(330);
  const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  const github = `ghp_${f.pick(ALNUM, 36)}`;
  const anthropic = `sk-ant-api03-${f.pick(`${ALNUM}_-`, 93)}AA`;
  const telegram = `7${f.pick("0123456789", 9)}:AAH${f.pick(`${ALNUM}_-`, 32)}`;
  const [digits, secret] = telegram.split(":") as [string, string];
  const openrouter = `sk-or-v1-${f.pick("0123456789abcdef", 64)}`;
  const hostTelegram = `8${f.pick("0123456789", 9)}:AAF${f.pick(`${ALNUM}_-`, 32)}`;
  const REMOVED = "with terminal escape sequences removed";
  const cut = (key: string, at: number, seq: string) => `${key.slice(0, at)}${seq}${key.slice(at)}`;
  /** Control strings a terminal hides, each ended by ST (ESC \, 0x9C, C2 9C) or cut short by the next ESC; BEL ends none but an OSC. */
  const STRINGS = [
    "\x1bPq#0;2;0;0;0#0~~@@\x1b\\",
    "\x1bP+q544e\x07x\x1b\\",
    "\x1b_Gf=100,a=T;iVBORw0KGgo\x1b\\",
    "\x1b^private note\x1b\\",
    "\x1bXstart of string\x1b\\",
    "\x1bPtmux;x\x1b[m",
    "\x90q#0\x9c",
    "\x9fGf=100\x9c",
    "\x9enote\x9c",
    "\x98sos\x9c",
    "\xc2\x90q#0\xc2\x9c",
    "\xc2\x9fGf=100\xc2\x9c",
    "\xc2\x9enote\xc2\x9c",
    "\xc2\x98sos\xc2\x9c",
  ];
  /** An OSC, a DCS and an APC whose ESC is written as text, ended by a written ST (the ESC and `\\`) or BEL, as JSON, a repr and a shell write them. */
  const WRITTEN_STRINGS = [
    "\\u001b]8;;https://x.example/k\\u001b\\\\",
    "\\u001b]8;;https://x.example/k\\u0007",
    "\\x1b]8;;https://x.example/k\\x1b\\\\",
    "\\x1b]0;title\\x07",
    "\\e]8;;https://x.example/k\\e\\\\",
    "\\033]0;t\\007",
    "\\e]0;t\\a",
    "^[]0;t^G",
    "\\u001bPq#0\\u001b\\\\",
    "\\x1b_Gf=100\\x1b\\\\",
    "\\u{1b}]8;;u\\u{1b}\\\\",
    "\\N{ESC}]8;;u\\N{ESC}\\\\",
  ];

  it("is refused through the CLI (a repr, a Python script, URLs encoded twice, docker JSON logs with the host's own values, a terminal's control strings), naming the form and never the value; the same forms around ordinary words are published", () => {
    fs.mkdirSync(path.join(h.home, ".hermes"), { recursive: true });
    write(path.join(h.home, ".hermes"), ".env", `OPENROUTER_API_KEY=${openrouter}\nTELEGRAM_BOT_TOKEN=${hostTelegram}\n`);
    const hyperlink = (text: string, at: number, end: string) => JSON.stringify({ log: `${cut(text, at, `\x1b]8;;https://openrouter.ai/keys${end}`)}\x1b]8;;${end}\n`, stream: "stdout" });
    const files = [
      write(work, "u8.txt", `print(repr(s)) -> 'token:\\U000000a0${github}'\n`),
      write(work, "esc-name.txt", `print("\\N{ESC}[32m${github}\\N{ESC}[0m")\n`),
      write(work, "twice.txt", `GET /r?next=%2Fsend%3Ftext%3Dmy%2520key%2520${anthropic} HTTP/1.1\n`),
      write(work, "tg-twice.txt", `redirect=https%3A%2F%2Fapi.telegram.org%2Fbot${digits}%253A${secret}%2FgetMe\n`),
      write(work, "docker-or.txt", `${hyperlink(`OPENROUTER_API_KEY=${openrouter}`, 27, "\x1b\\")}\n`),
      write(work, "docker-tg.txt", `${hyperlink(`TELEGRAM_BOT_TOKEN=${hostTelegram}`, 30, "\x07")}\n`),
      write(work, "repr-osc.txt", `'${cut(github, 12, "\\x1b]8;;https://x.example/k\\x1b\\\\")}'\n`),
      write(work, "dcs.txt", `saved ${cut(github, 10, STRINGS[0]!)} done\n`),
      write(work, "apc.txt", `saved ${cut(github, 20, STRINGS[2]!)} done\n`),
      // Written as UTF-8: U+0090 and U+009C are C2 90 and C2 9C.
      write(work, "c1.txt", `saved ${cut(github, 30, STRINGS[6]!)} done\n`),
    ];
    const whats = [/a GitHub token \(/, /a GitHub token \(/, /an Anthropic API key \(/, /a Telegram bot token \(/, new RegExp(`(an OpenRouter API key|the value of OPENROUTER_API_KEY).*, ${REMOVED}`), new RegExp(`(a Telegram bot token|the value of TELEGRAM_BOT_TOKEN).*, ${REMOVED}`)];
    for (let i = whats.length; i < files.length; i++) whats.push(new RegExp(`a GitHub token, ${REMOVED}`));
    const digest = new Fakes(331).bytes(32).toString("hex");
    const twins = [
      write(work, "u8-prose.txt", `repr: 'caf\\U000000e9 au lait', 'na\\U000000efve release_notes_for_version_two', '\\U00000020${digest}'\n`),
      write(work, "esc-name-words.txt", `print("\\N{ESC}[1mghp_status\\N{ESC}[0m \\N{ESC}[32mhello_world_and_more_words\\N{ESC}[0m")\n`),
      write(work, "twice-words.txt", `q=my%2520key%2520ghp_status%2520release_notes_for_version_two%253Dsha%2520${digest}&t=12%253A30&o=1234567890%253A${"A".repeat(35)}\n`),
      write(work, "osc-words.txt", `${hyperlink("see release_notes_for_version_two here", 20, "\x1b\\")}\n${JSON.stringify({ log: `build\\u001b]0;title\\u0007_artifacts ${digest}` })}\n`),
      write(work, "strings-words.txt", `release_notes${STRINGS[0]}_for_version_two ${digest.slice(0, 30)}${STRINGS[2]}${digest.slice(30)} hello_world${STRINGS[6]}_and_more_words\n`),
    ];
    const r = prepareJson([...files, ...twins], "txt");
    expect(r.code).toBe(1);
    expect(r.dropped.map(([name, code]) => [name, code])).toEqual(files.map((file) => [path.basename(file), "secret_detected"]));
    r.dropped.forEach(([name, , reason], i) => expect(reason, name).toMatch(whats[i]!));
    for (const [, , reason] of r.dropped) for (const key of [github, anthropic, secret, openrouter, hostTelegram]) expect(reason).not.toContain(key.slice(9, 25));
    expect(r.published).toEqual(twins.map((file) => path.basename(file)));
  });

  it("finds a Telegram token with its colon encoded twice, `%253A` and `%253a`, as the colon's precision allows; not `%25` and another", () => {
    for (const sep of ["%253A", "%253a"]) {
      const encoded = `${digits}${sep}${secret}`;
      for (const text of [encoded, `?bot=${encoded}&x=1`, `%2Fbot${encoded}%2FgetMe`, `%2520${encoded}`]) expect(findSecret(text)?.what, text.slice(0, 24)).toBe("a Telegram bot token");
      for (const text of [`1${digits}${sep}${secret}`, `${digits.slice(3)}${sep}${secret}`, `${encoded}A`, `${digits}${sep}${secret.slice(1)}`, `${digits}${sep}${"A".repeat(35)}`]) expect(findSecret(text), text.slice(0, 24)).toBeUndefined();
    }
    for (const sep of ["%253B", "%252A", "%25%3A", "%2525%3A"]) expect(findSecret(`${digits}${sep}${secret}`), sep).toBeUndefined();
  });

  it("finds a key cut by each control string and each written one, anywhere in it; one that is none (unterminated, a line break in it, a single backslash after the written ESC) is left", () => {
    for (const seq of [...STRINGS, ...WRITTEN_STRINGS]) {
      for (const at of [1, 12, 39]) {
        const head = "log line\nsaved ";
        expect(scanBytes(Buffer.from(`${head}${cut(github, at, seq)} done\n`, "latin1")), JSON.stringify(seq.slice(0, 16)) + at).toEqual({ what: `a GitHub token, ${REMOVED}`, offset: head.length });
      }
    }
    for (const seq of ["\x1bPq#0;2", "\x1bPq\nx\x1b\\", "\x1b_G\tf\x1b\\", "\x90q#0", "\xc2\x9fG\xc2", "\\u001b]8;;u", "\\u001b]8;;u\\u001b\\x", "\\e]8;;u\\e\\", "\\e]8;;u\n\\a", "\\u001bPq\\u0007"]) {
      expect(scanBytes(Buffer.from(`saved ${cut(github, 12, seq)} done\n`, "latin1")), JSON.stringify(seq)).toBeUndefined();
    }
    // A key right after one (a token starts after its terminator, a backslash or a control byte; not after caret notation's `^G`,
    // which is no written escape: documented).
    for (const seq of [...STRINGS.slice(0, 5), ...WRITTEN_STRINGS.filter((seq) => !seq.endsWith("^G"))]) expect(findSecret(`x ${seq}${github}`)?.what, JSON.stringify(seq)).toBe("a GitHub token");
  });

  it("is read again only where such a string lies between two of a key's characters; an emoji's 0x9F and Chinese text's are characters", () => {
    for (const text of ["ab\x1bPq\x1b\\cd", "ab\x90q\x9ccd", "ab\xc2\x9fG\xc2\x9ccd", "ab\x9enote\x9ccd", "ab\\u001b]8;;u\\u0007cd", "ab\\e_G\\e\\\\cd"]) expect(formsIn(text), JSON.stringify(text)).toBe(Form.TerminalEscapes);
    for (const text of ["ab \x1bPq\x1b\\cd", "ab\x1bPq\x1b\\ cd", "ab\\u001b]8;;u cd", "ab\\eP", Buffer.from("ok 🎉 ab🎉cd 来板", "utf8").toString("latin1")]) expect(formsIn(text), JSON.stringify(text)).toBe(0);
  });

  it("gives a verdict on adversarial text of control strings, raw and written (each loop's repetitions)", () => {
    const MiB = 1024 * 1024;
    for (const unit of ["\x1bP", "a\x1bPa", `a\x1bP${"u".repeat(3000)}`, `\x1b_${"\x07".repeat(3000)}`, "a\x1b_\x07b", "a\x90", "\x90", "\x9f", "a\xc2\x90u\xc2\x9cb", "a\x9fu\x9cb", "\xf0\x9f\x8e\x89 ok", "a\xf0\x9f\x8e\x89",
      "\\u001b]", `a\\u001b]${"u".repeat(3000)}`, "a\\u001b]8;;u\\u001b\\\\a", "a\\e]\\e]\\e]", `a\\eP${"\\\\".repeat(1000)}`, `a\\x1b_${"\\x0".repeat(1000)}`]) {
      const text = Buffer.from(unit.repeat(Math.ceil(MiB / unit.length)), "latin1");
      expect(scanBytes(text), JSON.stringify(unit.slice(0, 12))).toBeUndefined();
    }
  });
});

// A red-team pass (2026-12-05, repro 12) found a Telegram bot token the host
// does not hold published percent-encoded (`:` as `%3A`), as a URL's query
// or path holds it: the rule needed the colon itself.
describe("a Telegram bot token whose colon is percent-encoded", () => {
  const f = new Fakes(31);
  const B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
  const token = `6${f.pick("0123456789", 9)}:AA${f.pick(B64URL, 33)}`;
  const [digits, secret] = token.split(":") as [string, string];

  it("is refused through the CLI in a URL's query and path, `%3A` and `%3a`, and leaves nothing behind; `%3A` in ordinary URLs is published", () => {
    const files = [
      write(work, "query.txt", `webhook: https://relay.example.net/hook?${new URLSearchParams({ chat: "42", bot: token })}\n`),
      write(work, "path.txt", `GET https://api.telegram.org/bot${encodeURIComponent(token)}/getMe\n`),
      write(work, "lower.txt", `curl -d token=${digits}%3a${secret} https://example.net/notify\n`),
      write(work, "line-start.md", `${digits}%3A${secret}\n`),
    ];
    const twins = [
      write(work, "urls.md", ["https://example.com/search?q=time%3A12%3A30&at=2026-12-05T10%3A20%3A30Z", "https://example.com/r?next=https%3A%2F%2Fexample.org%2Fa%3Ab", "urn%3Aisbn%3A0451450523 and 12345678%3Aabc", ""].join("\n")),
      write(work, "ids.txt", `order=1234567890%3A${"A".repeat(35)}\nexample=123456789%3AABC-DEF1234ghIkl-zyx57W2v1u123ew11\nshort=${digits}%3A${secret.slice(0, 34)}\nlong=${digits}%3A${secret}x\nmany=12345678901%3A${secret}\n`),
    ];
    const r = prepareJson([...files, ...twins]);
    expect(r.code).toBe(1);
    expect(r.dropped).toEqual(files.map((file) => [path.basename(file), "secret_detected", expect.stringContaining("a Telegram bot token")]));
    for (const [, , reason] of r.dropped) expect(reason).not.toContain(secret);
    expect(r.published).toEqual(twins.map((file) => path.basename(file)));
    expect(leftBehind(h).staging).toEqual([]);
  });

  it("is found with either case of the escape, whatever its neighbours; a colon's precision holds for it", () => {
    for (const sep of ["%3A", "%3a"]) {
      const encoded = `${digits}${sep}${secret}`;
      for (const text of [encoded, `?bot=${encoded}&x=1`, `/bot${encoded}/getMe`, `"${encoded}"`]) expect(findSecret(text)?.what, text.slice(0, 20)).toBe("a Telegram bot token");
      // As the colon's: 8 to 10 digits, exactly 35 characters after, random.
      for (const text of [`1${digits}${sep}${secret}`, `${digits.slice(3)}${sep}${secret}`, `${encoded}A`, `${digits}${sep}${secret.slice(1)}`, `${digits}${sep}${"A".repeat(35)}`, `${digits}%3B${secret}`, `${digits}%2A${secret}`]) {
        expect(findSecret(text), text.slice(0, 20)).toBeUndefined();
      }
    }
  });

  /** `text` with a line break (and `indent` after it) inserted `at` characters into it. */
  const cutIn = (text: string, at: number, indent = "", nl = "\n") => `${text.slice(0, at)}${nl}${indent}${text.slice(at)}`;

  it("is found cut by a line break anywhere in it (its digits, before or inside `%3A`, after it, its 35 characters), after an indent or a quote's `> `, the break `\\n` or `\\r\\n` (2026-12-06; published where the break touched `%3A`); cut placeholders and ordinary URLs are not", () => {
    for (const sep of ["%3A", "%3a"]) {
      const encoded = `${digits}${sep}${secret}`;
      for (let at = 1; at < encoded.length; at++) {
        for (const [indent, nl] of [["", "\n"], ["    ", "\n"], ["> ", "\r\n"]] as const) {
          const text = `Bot token: ${cutIn(encoded, at, indent, nl)} and keep it safe\n`;
          expect(findSecret(text)?.what, JSON.stringify(text)).toMatch(/^a Telegram bot token/);
        }
      }
    }
    // Where the cut touches `%3A` no other reading finds it: the joined reading names the break.
    for (const at of [digits.length, digits.length + 1, digits.length + 2, digits.length + 3]) {
      expect(findSecret(`Bot token: ${cutIn(`${digits}%3A${secret}`, at)}\n`)?.what).toBe("a Telegram bot token, with line breaks removed");
    }
    const placeholders = [`1234567890%3A${"A".repeat(35)}`, "123456789%3AABC-DEF1234ghIkl-zyx57W2v1u123ew11", `${digits}%3A${secret.slice(1)}`, `${digits}%3B${secret}`];
    for (const text of placeholders) for (let at = 1; at < text.length; at++) expect(findSecret(`Value here: ${cutIn(text, at)} end\n`), cutIn(text, at)).toBeUndefined();
    expect(findSecret("https://example.com/search?q=time%3A12%3A30&at=2026-12-\n05T10%3A20%3A30Z and 50%\n3A of them, 1234567%3\nA\n")).toBeUndefined();
  });

  it("is refused through the CLI cut after `%3` and after `%3A` (the red team's form), and published when the value is a placeholder", () => {
    const files = [write(work, "cut-inside.txt", `Bot token: ${digits}%3\nA${secret} and keep it safe\n`), write(work, "cut-after.md", `> bot=${digits}%3A\r\n> ${secret}\r\n`)];
    const twins = [write(work, "cut-placeholder.txt", `Bot token: 1234567890%3\nA${"A".repeat(35)}\n`)];
    const r = prepareJson([...files, ...twins]);
    expect(r.dropped).toEqual(files.map((file) => [path.basename(file), "secret_detected", expect.stringContaining("a Telegram bot token, with line breaks removed")]));
    for (const [, , reason] of r.dropped) expect(reason).not.toContain(secret.slice(0, 12));
    expect(r.published).toEqual(twins.map((file) => path.basename(file)));
  });

  it("reads back a bounded number of digits per `%3A` on adversarial text (counts, not time)", () => {
    for (const unit of ["0%3A", "%3A", "%3a0", "1234567890%3A", `12345678%3A${"A".repeat(35)} `, "0%3A%3A", `${"9".repeat(40)}%3A`]) expectLinearReading(unit, 1.5);
    // Cut by line breaks (2026-12-06): each form of the cut, its digits before a break, a `%` that ends a line.
    for (const unit of ["%3\n", "1234567890%3\n", "1234567890%\n3A", "%\n3a", "abcdefgh 12345678\n%3A", "> 1234567\n> 1%3A", `1234567890%3A\n${"A".repeat(35)}\n`, "abcdef 1234\n567890%3\nAA", "0%\r\n3A"]) expectLinearReading(unit, 1.5);
  });
});

describe("a hex dump of the host's .env or of a key (`xxd`, `hexdump -C`, `od -c`, `xxd -p`; redteam32a 01)", () => {
  const f = new Fakes(3201);
  const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  // No vendor's format: only the .env names them.
  const opaque = f.pick(ALNUM, 32);
  const password = `${f.pick(ALNUM, 6)}#${f.pick(ALNUM, 9)}`;
  /** What `tool args` writes for `input` (LC_ALL=C: od's and hexdump's bytes past ASCII as octal and `.`). */
  const dump = (tool: string, args: string[], input: Buffer | string) => {
    const r = spawnSync(tool, args, { input, env: { PATH: process.env.PATH, LC_ALL: "C" }, maxBuffer: 64 << 20 });
    expect(r.status, `${tool} ${r.stderr}`).toBe(0);
    return r.stdout;
  };
  const tools: [string, string[]][] = [
    ["xxd", []],
    ["xxd", ["-u"]],
    ["xxd", ["-g", "1"]],
    ["hexdump", ["-C"]],
    ["od", ["-c"]],
  ];

  it("refuses the .env's dumps through the CLI, naming the value and the reading, never the value; dumps of random bytes and of ordinary text are published", () => {
    const hermes = path.join(h.home, ".hermes");
    fs.mkdirSync(hermes, { recursive: true, mode: 0o700 });
    const env = `MY_SERVICE_TOKEN=${opaque}\nDB_PASSWORD='${password}'\n`;
    write(hermes, ".env", env);
    const files = [...tools, ["xxd", ["-p"]] as [string, string[]]].map(([tool, args], i) => write(work, `env-${i}.txt`, dump(tool, args, env)));
    const key = armoured(opensshBody(3202));
    const token = `ghp_${f.pick(ALNUM, 36)}`;
    const keys = [write(work, "key.txt", dump("xxd", [], `${key}\n`)), write(work, "ghp.md", dump("hexdump", ["-C"], `token:\n${token}\n`)), write(work, "ghp-od.txt", dump("od", ["-c"], `token=${token}\n`))];
    const prose = "The quick brown fox jumps over the lazy dog; 10 apples, 20 pears. Step 10: done.\n".repeat(20);
    // Settings, no secret (another .env's token is refused there: its reading is a credential assigned to a token's name).
    const other = `LLM_MODEL=anthropic/claude-sonnet-4\nTIMEOUT_SECONDS=30\nCHAT_ID=${f.pick("0123456789", 12)}\n`;
    const twins = [
      ...tools.map(([tool, args], i) => write(work, `random-${i}.txt`, dump(tool, args, f.bytes(4096)))),
      ...tools.map(([tool, args], i) => write(work, `prose-${i}.txt`, dump(tool, args, prose))),
      ...tools.map(([tool, args], i) => write(work, `settings-${i}.txt`, dump(tool, args, other))),
      write(work, "random-p.txt", dump("xxd", ["-p"], f.bytes(4096))),
    ];
    const r = prepareJson([...files, ...keys, ...twins]);
    expect(r.dropped.map(([name, code]) => [name, code])).toEqual([...files, ...keys].map((file) => [path.basename(file), "secret_detected"]));
    // A dump of bytes between single blanks (`xxd -g 1`, `hexdump -C`) also spells the value's blank-separated hex form (redteam32c 01), found first.
    const blankSeparated = (i: number) => ["-g", "-C"].includes(tools[i]![1][0] ?? "");
    r.dropped.slice(0, tools.length).forEach(([, , reason], i) =>
      blankSeparated(i)
        ? expect(reason).toMatch(/the value of (MY_SERVICE_TOKEN|DB_PASSWORD) \(the Hermes \.env\), (read from a hex dump|hex-encoded)/)
        : expect(reason).toContain("the value of MY_SERVICE_TOKEN (the Hermes .env), read from a hex dump"),
    );
    expect(r.dropped[tools.length]![2]).toContain("the value of MY_SERVICE_TOKEN (the Hermes .env), hex-encoded");
    expect(r.dropped[tools.length + 1]![2]).toContain("a private key block, read from a hex dump");
    expect(r.dropped[tools.length + 2]![2]).toContain("a GitHub token, read from a hex dump");
    expect(r.dropped[tools.length + 3]![2]).toContain("a GitHub token, read from a hex dump");
    for (const [, , reason] of r.dropped) for (const v of [opaque, password, token]) expect(reason).not.toContain(v.slice(4, 16));
    expect(r.published).toEqual(twins.map((file) => path.basename(file)));
  });

  it("reads dumps again within REREAD_DUMP_BYTES of a file's windows on each thread: a key dumped after that much of `od -c` text is read once (documented), one before it is found", () => {
    const token = `ghp_${f.pick(ALNUM, 36)}`;
    const keyDump = dump("od", ["-c"], `token=${token}\n`);
    const filler = dump("od", ["-c"], Buffer.from("ab\n".repeat(Math.ceil((REREAD_DUMP_BYTES + 3 * BLOCK) / 16))));
    const scan = (text: Buffer, reread: RereadBudget) => {
      const scanner = new SecretScanner(undefined, 0, 1, reread);
      for (let off = 0; off < text.length; off += BLOCK) scanner.scanBlock(text.subarray(off, Math.min(text.length, off + BLOCK)), off + BLOCK >= text.length);
      return scanner.finding?.what;
    };
    expect(scan(keyDump, rereadBudget())).toBe("a GitHub token, read from a hex dump");
    expect(scan(keyDump, { ...rereadBudget(), dumpLeft: 0 })).toBeUndefined();
    const spent = rereadBudget();
    expect(scan(Buffer.concat([filler, keyDump]), spent)).toBeUndefined();
    expect(spent.dumpLeft).toBeLessThan(BLOCK);
    // The other forms keep theirs.
    expect(spent.left).toBeGreaterThan(REREAD_BYTES - REREAD_DUMP_BYTES - BLOCK);
  });

  it("finds the password alone, in each dump, whatever the line it starts on; and a value in hex cut by `xxd -p`'s lines, small letters or capitals", () => {
    for (let pad = 0; pad < 16; pad++) {
      const env = `${"#".repeat(pad)}\nDB_PASSWORD='${password}'\n`;
      const known = new KnownSecrets([{ name: "DB_PASSWORD", bytes: Buffer.from(password) }]);
      for (const [tool, args] of tools) expect(scanBytes(dump(tool, args, env), known)?.what, `${tool} ${args.join(" ")} ${pad}`).toMatch(/^the value of DB_PASSWORD(, read from a hex dump)?$/);
    }
    const forms = hexForms(Buffer.from(opaque));
    const known = new KnownSecrets([{ name: "T", bytes: Buffer.from(opaque) }, ...forms.map((bytes) => ({ name: "T, hex-encoded", bytes, form: true as const }))]);
    for (let pad = 0; pad < 40; pad++) {
      const text = dump("xxd", ["-p"], `${"x".repeat(pad)}${opaque}\n`);
      expect(scanBytes(text, known)?.what, `${pad}`).toBe("the value of T, hex-encoded");
      expect(scanBytes(Buffer.from(text.toString("latin1").toUpperCase(), "latin1"), known)?.what, `${pad}`).toBe("the value of T, hex-encoded");
    }
  });

  it("reads each dump back to the bytes dumped, exactly; a line whose text column does not show its bytes is not a dump's", () => {
    const bytes = f.bytes(4096);
    for (const [tool, args] of tools) {
      const text = dump(tool, args, bytes);
      const padded = Buffer.concat([text, Buffer.alloc(64)]);
      const reading = readHexDumps(padded, text.length, 0, text.length, 64);
      // The last line (the offset alone, for hexdump and od) reads as the dump's end: a line break.
      const lastLine = text.toString("latin1").trimEnd().split("\n").pop()!;
      const tail = /^[0-9a-f]+$/.test(lastLine) ? "\n" : "";
      expect(Buffer.from(reading.bytes.subarray(0, reading.length)).equals(Buffer.concat([bytes, Buffer.from(tail)])), `${tool} ${args.join(" ")}`).toBe(true);
    }
    const line = "00000000: 4142 4344 4546 4748 494a 4b4c 4d4e 4f50  ABCDEFGHIJKLMNOP\n";
    for (const wrong of [line.replace("OP\n", "Oq\n"), line.replace("  ABC", " ABC"), line.replace("ABCDEFGHIJKLMNOP", "ABCDEFGHIJKLMNO")]) {
      const reading = readHexDumps(Buffer.from(`${wrong}\0\0\0\0`), wrong.length, 0, wrong.length, 4);
      expect(reading.bytes.subarray(0, reading.length).toString("latin1")).toBe(wrong);
    }
  });

  it("stays linear on text made against the dump's reading (verdict only; measured by hand: see docs/content-check.md)", () => {
    const MiB = 1 << 20;
    const units = [
      "0 ",
      "0: ",
      "0000000 ",
      "00000000: ",
      "00000000  ",
      "0000000000000000000000 ",
      "00000000: 4141 4141 4141 4141 4141 4141 4141 4141  AAAAAAAAAAAAAAAA\n",
      "00000000  41 41 41 41 41 41 41 41  41 41 41 41 41 41 41 41  |AAAAAAAAAAAAAAAA|\n",
      "0000000   A   A   A   A   A   A   A   A   A   A   A   A   A   A   A   A\n",
      "00000000: 41 ",
      "0000000   A",
      "00000000  41 41 ",
      "00000000: 4141 4141 4141 4141 4141 4141 4141 4141  AAAAAAAAAAAAAAAq\n",
      // The searches' marks: a text column's bar, an od escape's backslash, after two blanks, at every column.
      "|",
      "  |",
      "  \\n",
      "\\",
      "0000000  \\n",
      "\n0000000  \\n",
      "\n00000000  41  |",
      "00000000: 0",
      "\n0000000:  ",
      `${"0".repeat(70)}  |\n`,
      // Lines longer than any dump's.
      `00000000: ${"4141 ".repeat(400)} ${"A".repeat(800)}\n`,
      `0000000${"   A".repeat(600)}\n`,
    ];
    for (const unit of units) for (const size of [MiB, 8 * MiB]) expect(scanBytes(Buffer.from(unit.repeat(Math.ceil(size / unit.length)).slice(0, size), "latin1")), JSON.stringify(unit)).toBeUndefined();
  });
});

// `od -An -tx1` (no offset, no text column) is not seen: looking for its lines stopped at each `0` of hex text (docs/content-check.md).
describe("a vendor's token dumped in the forms hex-dumps.ts did not read (`od -t x1z`, `od -A x -t x1z -v`, `od -t x1`, `xxd -e`, `xxd -b`) and in xxd's and hexdump's other options (hex33)", () => {
  const f = new Fakes(3301);
  const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  const B64URL = `${ALNUM}_-`;
  /** What `tool args` writes for `input` (LC_ALL=C). */
  const dump = (tool: string, args: string[], input: Buffer | string) => {
    const r = spawnSync(tool, args, { input, env: { PATH: process.env.PATH, LC_ALL: "C" }, maxBuffer: 64 << 20 });
    expect(r.status, `${tool} ${r.stderr}`).toBe(0);
    return r.stdout;
  };
  /** The forms this reading did not read before hex33. */
  const newForms: [string, string[]][] = [
    ["od", ["-t", "x1z"]],
    ["od", ["-A", "x", "-t", "x1z", "-v"]],
    ["od", ["-A", "n", "-t", "x1z"]],
    ["od", ["-t", "x1"]],
    ["xxd", ["-e"]],
    ["xxd", ["-e", "-g", "2"]],
    ["xxd", ["-e", "-g", "8"]],
    ["xxd", ["-b"]],
    ["xxd", ["-b", "-c", "8"]],
  ];
  /** Options of the forms read before, each a vendor's token now tested in. */
  const otherOptions: [string, string[]][] = [
    ["xxd", ["-u"]],
    ["xxd", ["-g", "1"]],
    ["xxd", ["-g", "4"]],
    ["xxd", ["-c", "32"]],
    ["xxd", ["-u", "-g", "4", "-c", "32"]],
    ["hexdump", ["-C"]],
  ];
  const forms = [...newForms, ...otherOptions];
  const name = ([tool, args]: [string, string[]]) => `${tool} ${args.join(" ")}`;
  const token = `ghp_${f.pick(ALNUM, 36)}`;
  const anthropic = `sk-ant-api03-${f.pick(B64URL, 93)}AA`;
  const pem = f.pem("RSA PRIVATE KEY");
  const secrets: [string, string, string][] = [
    ["ghp", `note: ${token}\n`, "a GitHub token"],
    ["ant", `echo $KEY\n${anthropic}\n`, "an Anthropic API key"],
    ["pem", `${pem}\n`, "a private key block"],
  ];
  const digests = Array.from({ length: 60 }, (_, i) => `file-${i}.bin,${f.bytes(32).toString("hex")}`).join("\n");

  it("refuses a GitHub token, an Anthropic key and a PEM key in each form through the CLI, read from the dump, never naming the value; each form's dump of a PNG, of a CSV of sha256 digests and of random bytes, and the CSV, are published", () => {
    const files = forms.flatMap((form, i) => secrets.map(([kind, text]) => write(work, `${kind}-${i}.txt`, dump(form[0], form[1], text))));
    const negativeFiles = [
      write(work, "digests.csv", `${digests}\n`),
      ...forms.flatMap((form, i) => [
        write(work, `png-${i}.txt`, dump(form[0], form[1], png(i, 24))),
        write(work, `digests-${i}.txt`, dump(form[0], form[1], `${digests}\n`)),
        write(work, `random-${i}.txt`, dump(form[0], form[1], f.bytes(3000))),
      ]),
    ];
    const r = prepareJson([...files, ...negativeFiles], "txt,csv");
    expect(r.dropped.map(([file, code]) => [file, code])).toEqual(files.map((file) => [path.basename(file), "secret_detected"]));
    r.dropped.forEach(([file, , reason], k) => {
      expect(reason, file).toContain(`${secrets[k % secrets.length]![2]}, read from a hex dump`);
      for (const v of [token, anthropic]) expect(reason).not.toContain(v.slice(4, 16));
    });
    expect(r.published).toEqual(negativeFiles.map((file) => path.basename(file)));
  });

  it("finds the token at each offset of a dump's line (scanBytes), and after a squeezed run (`*`) of zero bytes; not another text's", () => {
    for (const form of newForms)
      for (let pad = 0; pad < 16; pad++) {
        expect(scanBytes(dump(form[0], form[1], `${"#".repeat(pad)} ${token}\n`))?.what, `${name(form)} ${pad}`).toBe("a GitHub token, read from a hex dump");
        // Without a line break after it (`printf %s`), but `od -A n -t x1`, which shows none to be seen by (documented).
        const bare = scanBytes(dump(form[0], form[1], `${"#".repeat(pad)} ${token}`))?.what;
        if (name(form) === "od -An -tx1") expect(bare, `${name(form)} ${pad}`).toBeUndefined();
        else expect(bare, `${name(form)} ${pad}`).toBe("a GitHub token, read from a hex dump");
      }
    for (const form of [["hexdump", ["-C"]], ["od", ["-t", "x1z"]], ["od", ["-c"]], ["od", ["-t", "x1"]], ["xxd", ["-a"]]] as [string, string[]][]) {
      const text = dump(form[0], form[1], Buffer.concat([Buffer.from("blob\n"), Buffer.alloc(70), Buffer.from(`${token}\n`), Buffer.alloc(40)]));
      expect(text.toString("latin1"), name(form)).toContain("\n*\n");
      expect(scanBytes(text)?.what, name(form)).toBe("a GitHub token, read from a hex dump");
      expect(scanBytes(dump(form[0], form[1], Buffer.concat([Buffer.from("blob\n"), Buffer.alloc(70), Buffer.from(`gh_${f.pick(ALNUM, 36)}\n`), Buffer.alloc(40)]))), name(form)).toBeUndefined();
    }
  });

  it("reads each new form back to the bytes dumped, exactly (a short last line, xxd -e's right-aligned last group); a `*` as its line once more; a line whose text column differs by a byte is kept as it is", () => {
    const read = (text: Buffer) => {
      const reading = readHexDumps(Buffer.concat([text, Buffer.alloc(64)]), text.length, 0, text.length, 64);
      return Buffer.from(reading.bytes.subarray(0, reading.length));
    };
    for (const size of [4096, 4093, 4090])
      for (const form of newForms) {
        const bytes = f.bytes(size);
        const text = dump(form[0], form[1], bytes);
        // The offset alone that ends od's dump reads as a line break.
        const tail = form[0] === "od" && !form[1].includes("-An") && !form[1].includes("n") ? "\n" : "";
        expect(read(text).equals(Buffer.concat([bytes, Buffer.from(tail)])), `${name(form)} ${size}`).toBe(true);
      }
    const line = Buffer.from("0123456789abcdef");
    const rest = f.bytes(20);
    for (const form of [["hexdump", ["-C"]], ["od", ["-t", "x1z"]], ["od", ["-c"]], ["od", ["-A", "x", "-t", "x1"]]] as [string, string[]][]) {
      const text = dump(form[0], form[1], Buffer.concat([line, line, line, line, rest]));
      expect(text.toString("latin1"), name(form)).toContain("\n*\n");
      expect(read(text).equals(Buffer.concat([line, line, rest, Buffer.from("\n")])), name(form)).toBe(true);
    }
    for (const wrong of [
      "0000000 41 42 43 44 45 46 47 48 49 4a 4b 4c 4d 4e 4f 50  >ABCDEFGHIJKLMNOq<\n",
      "0000000 41 42 43 44 45 46 47 48 49 4a 4b 4c 4d 4e 4f 50  >ABCDEFGHIJKLMNO<\n",
      "0000000 41 42 43 44 45 46 47 48 49 4a 4b 4c 4d 4e 4f 50 >ABCDEFGHIJKLMNOP<\n",
      "00000000: 44434241 48474645 4c4b4a49 504f4e4d  ABCDEFGHIJKLMNOq\n",
      "00000000: 44434241 48474645 4c4b4a49 504f4e4d  ABCDEFGHIJKLMNO\n",
      "00000000: 44434241 48474645 4c4b4a49  504f4e4d  ABCDEFGHIJKLMNOP\n",
      "00000000: 44434241 48474645 4c4b4a49     4f4e4d  ABCDEFGHIJKLMNO\n",
      "00000000: 01000001 01000010 01000011 01000100 01000101 01000110  ABCDEq\n",
      "00000000: 01000001 01000010 01000011 01000100 01000101 0100011  ABCDEF\n",
      " 41 42 43 44 45 46 47 48 49 4a 4b 4c 4d 4e 4f 50  >ABCDEFGHIJKLMNOq<\n",
      " 41 42 43 44 45 46 47 48 49 4a 4b 4c 4d 4e 4f 5\n",
      "00000 41 42 43 44 45 46 47 48 49 4a 4b 4c 4d 4e 4f 50\n",
    ]) {
      const bytes = Buffer.from(wrong, "latin1");
      expect(read(bytes).toString("latin1"), JSON.stringify(wrong)).toBe(wrong);
    }
  });

  it("stays linear on text made against the new forms' reading and searches (verdict only; measured by hand: see docs/content-check.md)", () => {
    const MiB = 1 << 20;
    const A16 = "41 ".repeat(16).trimEnd();
    const units = [
      `0000000 ${A16}  >AAAAAAAAAAAAAAAq<\n`,
      `0000000 ${A16}  >AAAAAAAAAAAAAAAA<\n`,
      `0000000 ${A16}\n`,
      `000000 ${A16}\n*\n`,
      ` ${A16}\n`,
      ` ${A16}  >AAAAAAAAAAAAAAAq<\n`,
      " 41 41 4\n",
      "00 ",
      "00 0",
      "00  ",
      "0000000 \n",
      "000000 41\n",
      " 0a",
      " 0a\n",
      "0a 0a ",
      "<\n",
      "  >A<\n",
      `0000000${" 41".repeat(400)}\n`,
      "00000000: 41414141 41414141 41414141 41414141  AAAAAAAAAAAAAAAq\n",
      "00000000: 41414141 41414141 41414141       41  AAAAAAAAAAAAAq\n",
      `00000000: ${"4141 ".repeat(200)}      41  ${"A".repeat(100)}\n`,
      "00000000:       41 ",
      "00000000: 01000001 01000001 01000001 01000001 01000001 01000001  AAAAAq\n",
      "00000000: 01000001 01000001 01000001 01000001 01000001 01000001  AAAAAA\n",
      `00000000: ${"01000001 ".repeat(110)} ${"A".repeat(110)}\n`,
      "00000000: 0100000",
      "00000000  41 41 41 41 41 41 41 41  41 41 41 41 41 41 41 41  |AAAAAAAAAAAAAAAA|\n*\n",
      "*\n",
      "0000000   A   A   A   A   A   A   A   A   A   A   A   A   A   A   A   A\n0000020\n",
    ];
    for (const unit of units) for (const size of [MiB, 8 * MiB]) expect(scanBytes(Buffer.from(unit.repeat(Math.ceil(size / unit.length)).slice(0, size), "latin1")), JSON.stringify(unit)).toBeUndefined();
  });
});

describe("other hex forms of the host's .env: bytes with separators (`od -An -tx1`, `od -t x1z`, `.hex(' ')`, `.hex(':')`, `xxd -i`, `\\x` escapes) and byte-swapped words (`hexdump`, `od -x`; redteam32c 01)", () => {
  const f = new Fakes(3211);
  const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  const opaque = f.pick(ALNUM, 32);
  const password = `${f.pick(ALNUM, 6)}#${f.pick(ALNUM, 15)}`;
  const py = (expression: string) => ["-c", `import sys\nb = sys.stdin.buffer.read()\nprint(${expression})`];
  /** Each form as its tool writes it (the real od, xxd, hexdump and python3). */
  const forms: [string, string[]][] = [
    ["od", ["-An", "-tx1"]],
    ["od", ["-A", "x", "-t", "x1z"]],
    [systemPython(), py("b.hex(' ')")],
    [systemPython(), py("b.hex(':')")],
    [systemPython(), py("b.hex(':').upper()")],
    ["xxd", ["-i"]],
    [systemPython(), py("''.join('\\\\x%02x' % c for c in b)")],
    [systemPython(), py("''.join('\\\\x%02X' % c for c in b)")],
    ["hexdump", []],
    ["od", ["-x"]],
  ];
  const dump = (tool: string, args: string[], input: Buffer | string) => {
    const r = spawnSync(tool, args, { input, env: { PATH: process.env.PATH, LC_ALL: "C" }, maxBuffer: 64 << 20 });
    expect(r.status, `${tool} ${r.stderr}`).toBe(0);
    return r.stdout;
  };
  const knownOf = (value: string) => {
    const bytes = Buffer.from(value);
    return new KnownSecrets([{ name: "T", bytes }, ...[...hexForms(bytes), ...separatedHexForms(bytes)].map((form) => ({ name: "T, hex-encoded", bytes: form, form: true as const }))]);
  };

  it("finds a value of 32 bytes in each form whatever the offset and line it starts at; not another value's (od's dumps: its assignment to a token's name, read from a hex dump), nor random bytes'", () => {
    const known = knownOf(opaque);
    for (const [tool, args] of forms) {
      for (let pad = 0; pad < 16; pad++) expect(scanBytes(dump(tool, args, `${"#".repeat(pad)}\nMY_SERVICE_TOKEN=${opaque}\n`), known)?.what, `${tool} ${args.join(" ")} ${pad}`).toBe("the value of T, hex-encoded");
      // `od -t x1z` is a dump hex-dumps.ts decodes since hex33: another .env's token is refused there as in the .env (`od -An -tx1`, no offset nor text column, is not seen).
      const other = scanBytes(dump(tool, args, `MY_SERVICE_TOKEN=${f.pick(ALNUM, 32)}\n`), known)?.what;
      if (tool === "od" && args.includes("x1z")) expect(other, `${tool} ${args.join(" ")}`).toBe("a credential assigned to a key, token, secret or password name, read from a hex dump");
      else expect(other, `${tool} ${args.join(" ")}`).toBeUndefined();
      expect(scanBytes(dump(tool, args, f.bytes(4096)), known), `${tool} ${args.join(" ")}`).toBeUndefined();
    }
  });

  it("refuses the .env in each form through the CLI, naming the value, never it; the same forms of random bytes and of another .env are published (but od's dumps of another .env: its token's assignment, read decoded)", () => {
    const hermes = path.join(h.home, ".hermes");
    fs.mkdirSync(hermes, { recursive: true, mode: 0o700 });
    const env = `MY_SERVICE_TOKEN=${opaque}\nDB_PASSWORD='${password}'\n`;
    write(hermes, ".env", env);
    const files = forms.map(([tool, args], i) => write(work, `env-${i}.txt`, dump(tool, args, env)));
    const other = `MY_SERVICE_TOKEN=${f.pick(ALNUM, 32)}\nDB_PASSWORD='${f.pick(ALNUM, 22)}'\n`;
    const twins = [...forms.map(([tool, args], i) => write(work, `random-${i}.txt`, dump(tool, args, f.bytes(2048)))), ...forms.map(([tool, args], i) => write(work, `other-${i}.txt`, dump(tool, args, other)))];
    const r = prepareJson([...files, ...twins]);
    // od's second form is a dump hex-dumps.ts decodes (since hex33): another .env's token is refused there, as in the .env.
    const decoded = [1].map((i) => path.basename(twins[forms.length + i]!));
    expect(r.dropped.map(([name, code]) => [name, code])).toEqual([...files.map((file) => path.basename(file)), ...decoded].map((name) => [name, "secret_detected"]));
    for (const [name, , reason] of r.dropped) {
      if (decoded.includes(name)) expect(reason).toContain("a credential assigned to a key, token, secret or password name, read from a hex dump");
      else expect(reason).toMatch(/the value of (MY_SERVICE_TOKEN|DB_PASSWORD) \(the Hermes \.env\), hex-encoded/);
      for (const v of [opaque, password]) expect(reason).not.toContain(v.slice(4, 16));
    }
    expect(r.published).toEqual(twins.map((file) => path.basename(file)).filter((name) => !decoded.includes(name)));
  });
});

// Red-team pass 33 (01, 06, 09): text an office document stores but does not show, read in place between a key's halves,
// where Word, Excel, LibreOffice and pandoc show the key whole. Read also as shown (shown-text.ts, rtf.ts), beside the text.
describe("text an office document stores but does not show, inside a key", () => {
  const ghp = "ghp_Q7mZk2Rp9XvB4nT8sLw3Yc6Hd1Jf5Ga0Ue2K";
  const opaque = "Hx7Kp2Qm9Zr4Tv8WnB3cY6dL1fJ5gS0a";
  const password = "Zq8#tR4vLm2Xw9Pk";
  const W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"';
  const documentXml = (paragraphs: string) => `<?xml version="1.0" encoding="UTF-8"?><w:document ${W}><w:body>${paragraphs}</w:body></w:document>`;
  const body = (paragraphs: string) => docx("", 7, { "word/document.xml": documentXml(paragraphs) });
  const run = (text: string, props = "") => `<w:r>${props ? `<w:rPr>${props}</w:rPr>` : ""}<w:t xml:space="preserve">${text}</w:t></w:r>`;
  const deleted = (text: string) => `<w:del w:id="1" w:author="A" w:date="2026-01-01T00:00:00Z"><w:r><w:delText xml:space="preserve">${text}</w:delText></w:r></w:del>`;
  const inserted = (text: string) => `<w:ins w:id="2" w:author="A" w:date="2026-01-01T00:00:00Z">${run(text)}</w:ins>`;
  const movedFrom = (text: string) => `<w:moveFrom w:id="3" w:author="A">${run(text)}</w:moveFrom>`;
  const field = (instruction: string, result = "") =>
    `<w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText xml:space="preserve">${instruction}</w:instrText></w:r><w:r><w:fldChar w:fldCharType="separate"/></w:r>${result ? run(result) : ""}<w:r><w:fldChar w:fldCharType="end"/></w:r>`;
  const markDeleted = '<w:pPr><w:rPr><w:del w:id="4" w:author="A" w:date="2026-01-01T00:00:00Z"/></w:rPr></w:pPr>';
  const cut = (key: string, between: string, at = 15) => `<w:p>${run(key.slice(0, at))}${between}${run(key.slice(at))}</w:p>`;
  const SML = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"';
  // `stored`: a flood of marks deflates past the ratio a zip bomb is refused at.
  const workbook = (strings: string, cell = '<c r="A1" t="s"><v>0</v></c>', stored = false) =>
    zip(
      {
      "[Content_Types].xml": '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/></Types>',
      "xl/workbook.xml": `<?xml version="1.0"?><workbook ${SML}><sheets><sheet name="S" sheetId="1"/></sheets></workbook>`,
      "xl/sharedStrings.xml": `<?xml version="1.0"?><sst ${SML}>${strings}</sst>`,
      "xl/worksheets/sheet1.xml": `<?xml version="1.0"?><worksheet ${SML}><sheetData><row r="1">${cell}</row></sheetData></worksheet>`,
      },
      stored,
    );
  const TEXT = 'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"';
  const odt = (paragraphs: string) =>
    zip({
      mimetype: "application/vnd.oasis.opendocument.text",
      "content.xml": `<?xml version="1.0"?><office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" ${TEXT}><office:body><office:text>${paragraphs}</office:text></office:body></office:document-content>`,
    });
  const hiddenText = (text: string) => `<text:hidden-text text:condition="" text:string-value="${text}" text:is-hidden="true">${text}</text:hidden-text>`;
  const rtfOf = (s: string) => Buffer.from(`{\\rtf1\\ansi\\deff0{\\fonttbl{\\f0 Calibri;}}\\pard ${s}\\par}`, "latin1");
  const cutRtf = (key: string, between: string, at = 15) => rtfOf(`${key.slice(0, at)}${between}${key.slice(at)}`);

  it("refuses a key cut by a tracked deletion, a moved-from run, a hidden run, a field's code, a phonetic run, an escape or an ignorable destination, through the CLI, and publishes reports with those and no key", () => {
    const hermes = path.join(h.home, ".hermes");
    fs.mkdirSync(hermes, { recursive: true, mode: 0o700 });
    write(hermes, ".env", `MY_SERVICE_TOKEN=${opaque}\nDB_PASSWORD='${password}'\n`);
    const cases: [string, Buffer][] = [
      // 01: Word's track changes, as the red team's repro writes them.
      ["deleted-letter.docx", body(`<w:p>${run(opaque.slice(0, 15))}${deleted("w")}${inserted("W")}${run(opaque.slice(16))}</w:p>`)],
      ["deleted-password.docx", body(`<w:p>${run("Zq8#tR4v")}${deleted("1")}${inserted("L")}${run("m2Xw9Pk")}</w:p>`)],
      ["deleted-dash.docx", body(cut(ghp, deleted(" - ")))],
      ["moved-from.docx", body(cut(ghp, movedFrom("old text")))],
      // 06: a hidden run, a field's code with an empty result.
      ["vanish.docx", body(cut(ghp, run(" - ", "<w:vanish/>")))],
      ["vanish-env.docx", body(cut(opaque, run(" - ", "<w:b/><w:vanish/>"), 16))],
      ["field.docx", body(cut(ghp, field(' IF 1 = 1 "" " - " ')))],
      ["field-env.docx", body(cut(opaque, field(' IF 1 = 1 "" " - " '), 16))],
      ["goback.rtf", cutRtf(ghp, "{\\*\\bkmkstart _GoBack}{\\*\\bkmkend _GoBack}")],
      ["goback-env.rtf", cutRtf(opaque, "{\\*\\bkmkstart _GoBack}{\\*\\bkmkend _GoBack}", 16)],
      ["hidden.rtf", cutRtf(ghp, "{\\v  - }")],
      ["hidden-off.rtf", cutRtf(ghp, "\\v  - \\v0 ")],
      ["deleted-env.rtf", cutRtf(opaque, "{\\deleted\\revauthdel1  - }", 16)],
      ["field-env.rtf", cutRtf(opaque, '{\\field{\\*\\fldinst { IF 1 = 1 "" " - " }}{\\fldrslt }}', 16)],
      ["hidden.odt", odt(`<text:p>${ghp.slice(0, 15)}${hiddenText(" - ")}${ghp.slice(15)}</text:p>`)],
      // 09: Excel's escapes (`_x005F_` an underscore, a letter, a zero-width space) and a phonetic run.
      ["escape-underscore.xlsx", workbook("", `<c r="A1" t="inlineStr"><is><t>ghp_x005F_${ghp.slice(4)}</t></is></c>`)],
      ["escape-letter-env.xlsx", workbook(`<si><t>${opaque.slice(0, 16)}_x006E_${opaque.slice(17)}</t></si>`)],
      ["escape-zwsp.xlsx", workbook(`<si><t>${ghp.slice(0, 15)}_x200B_${ghp.slice(15)}</t></si>`)],
      ["phonetic-env.xlsx", workbook(`<si><r><t>${opaque.slice(0, 16)}</t></r><rPh sb="0" eb="1"><t> - </t></rPh><r><t>${opaque.slice(16)}</t></r></si>`)],
      ["phonetic.xlsx", workbook(`<si><r><t>${ghp.slice(0, 15)}</t></r><rPh sb="0" eb="1"><t> - </t></rPh><r><t>${ghp.slice(15)}</t></r></si>`)],
    ];
    // A key the hidden text itself holds, cut in two deleted runs or two hidden runs: still read in the part's own text.
    const inHidden: [string, Buffer][] = [
      ["key-deleted.docx", body(`<w:p>${run("was: ")}${deleted(ghp.slice(0, 15))}${deleted(ghp.slice(15))}</w:p>`)],
      ["key-hidden.rtf", rtfOf(`was: {\\v ${ghp.slice(0, 15)}}{\\v ${ghp.slice(15)}}`)],
      ["key-phonetic.xlsx", workbook(`<si><t>name</t><rPh sb="0" eb="1"><t>${ghp}</t></rPh></si>`)],
    ];
    // Reports with each of them and no key (as pandoc, Word, Excel and LibreOffice write them).
    const twins: [string, Buffer][] = [
      ["report-changes.docx", body(`<w:p>${markDeleted}${run("Summary:")}</w:p><w:p>${run("The build ")}${deleted("failed")}${inserted("passed")}${run(" on Monday; ")}${movedFrom("see the notes")}${run(" sha256 ")}${deleted("9f86d081884c7d659a2feaa0c55ad015")}${run("a3bf4f1b2b0b822cd15d6c15b0f00a08.")}</w:p>`)],
      ["report-fields.docx", body(`<w:p>${run("Page ")}${field(" PAGE ", "1")}${run(" of ")}${field(" NUMPAGES ", "3")}${run(" ")}${field(' HYPERLINK "https://example.com/docs" ', "the docs")}</w:p><w:p>${run("token_id ")}${run("(internal) ", "<w:vanish/>")}${run("is a column.", '<w:vanish w:val="0"/>')}</w:p>`)],
      ["report-hidden.odt", odt(`<text:p>Release notes${hiddenText("draft")} for 1.2.${hiddenText("max_tokens")}</text:p>`)],
      ["report-hidden.rtf", rtfOf(`Release {\\v draft }notes{\\*\\bkmkstart _GoBack}{\\*\\bkmkend _GoBack} page {\\field{\\*\\fldinst { PAGE }}{\\fldrslt 1}}{\\deleted  old} password_min_length\\par`)],
      ["report-phonetic.xlsx", workbook(`<si><r><t>\u6771\u4eac</t></r><rPh sb="0" eb="2"><t>\u30c8\u30a6\u30ad\u30e7\u30a6</t></rPh><phoneticPr fontId="1"/></si><si><t>max_x005F_tokens_x000D_\u000aline two _x0041_</t></si>`)],
    ];
    const files = [...cases, ...inHidden].map(([name, content]) => write(work, name, content));
    const clean = twins.map(([name, content]) => write(work, name, content));
    const r = prepareJson([...files, ...clean], "docx,xlsx,odt,rtf");
    expect(r.code).toBe(1);
    expect(r.dropped.map(([name, code]) => [name, code])).toEqual([...cases, ...inHidden].map(([name]) => [name, "secret_detected"]));
    r.dropped.forEach(([name, , reason], i) => {
      if (i < cases.length) expect(reason, name).toMatch(/as shown, at byte/);
      else expect(reason, name).not.toMatch(/as shown/);
      expect(reason, name).toMatch(name.includes("env") || name.includes("password") || name.includes("letter") ? /the value of (MY_SERVICE_TOKEN|DB_PASSWORD)/ : /a GitHub token/);
      for (const v of [ghp, opaque, password]) expect(reason, name).not.toContain(v.slice(4, 16));
    });
    expect(r.published).toEqual(twins.map(([name]) => name));
  });

  it("reads the shown text: without deleted, moved-from and hidden runs, field codes, phonetic runs, ignorable destinations; escapes decoded left to right", () => {
    const shown = (xml: string) => shownText(Buffer.from(xml, "utf8"))?.toString("utf8");
    // A WordprocessingML part: its namespace on the root, as every writer declares it.
    const wml = (paragraphs: string) => shown(`<w:body ${W}>${paragraphs}</w:body>`);
    expect(wml(`<w:p>${run("a")}${deleted("b")}${inserted("c")}${movedFrom("d")}${run("e", "<w:vanish/>")}${run("f", '<w:vanish w:val="false"/>')}${field(" PAGE ", "2")}</w:p>`)).toBe("acf2\n");
    // A part of no vocabulary named in its first 64 KiB is not read so (an XHTML page's <del> is shown, struck through).
    expect(shown(`<w:p>${run("a")}${deleted("b")}</w:p>`)).toBeUndefined();
    expect(shown(`<body xmlns="http://www.w3.org/1999/xhtml">${" ".repeat(64 * 1024)}<w:body ${W}><w:p>${run("a")}${deleted("b")}</w:p></w:body></body>`)).toBeUndefined();
    // The text of every element is left as it was: nothing to read again.
    expect(wml(`<w:p>${run("a")}${field("", "").replace(/<w:instrText[^]*?<\/w:instrText>/, "")}</w:p>`)).toBeUndefined();
    // A paragraph whose mark is deleted, moved or hidden runs on into the next; one whose mark is shown does not.
    expect(wml(`<w:p>${markDeleted}${run("a")}</w:p><w:p>${run("b")}</w:p><w:p><w:pPr><w:rPr><w:vanish/></w:rPr></w:pPr>${run("c")}</w:p><w:p>${run("d")}</w:p><w:p><w:pPr><w:rPr><w:vanish w:val="0"/></w:rPr></w:pPr>${run("e")}</w:p><w:p>${run("f")}${deleted("x")}</w:p>`)).toBe("ab\ncd\ne\nf\n");
    // A run hidden inside a text box inside a run: the inner one goes, the outer stays.
    expect(wml(`<w:p><w:r><w:t>a</w:t><w:pict><w:txbxContent><w:p>${run("b", "<w:vanish/>")}</w:p></w:txbxContent></w:pict><w:t>c</w:t></w:r></w:p>`)).toBe("a\nc\n");
    // An element with no end is left in, with what follows it.
    expect(wml(`<w:p>${run("a")}<w:del w:id="1"><w:r><w:delText>b</w:delText></w:r>`)).toBe("a");
    expect(wml(`<w:p>${run("a")}<w:delText>b</w:delText><w:del>c<w:t>d</w:t>`)).toBe("acd");
    const sml = (t: string) => `<sst ${SML}><si><t>${t}</t></si></sst>`;
    expect(shown(sml("a_x005F_x0041_b_x0041__x00e9__xD83D__xDE00__xD83D_c_x004_"))).toBe("a_x0041_bA\u00e9\u{1F600}\uFFFDc_x004_\n");
    expect(shown(sml("a_x000D_b"))).toBeUndefined();
    // A docx's escapes too (since recall pass 34).
    expect(wml(`<w:p>${run("a_x0041_")}${deleted("b")}</w:p>`)).toBe("aA\n");
    expect(shown(`<office:text ${TEXT}><text:p>a${hiddenText("b")}c</text:p></office:text>`)).toBe("ac\n");
    const rtfShown = (s: string) => rtfText(Buffer.from(s, "latin1"), true).toString("latin1");
    expect(rtfShown("{\\rtf1 a{\\*\\bkmkstart x}b{\\v c{\\v0 d}}e\\v f\\plain g{\\deleted h}{\\field{\\*\\fldinst PAGE}{\\fldrslt 3}}{\\fldinst x}{\\info{\\title t}}\\par i\\u233\\'41{\\v\\u233 ?}}")).toBe("abdeg3\n\nt\n\n\ni\u00e9");
    // The text of every destination and hidden group stays in the RTF file's own text.
    expect(rtfText(Buffer.from("{\\rtf1 a{\\*\\bkmkstart x}b{\\v c}d}", "latin1")).toString("latin1")).toBe("a\nx\nbcd");
  });

  it("gives a verdict on floods of the marks the shown reading looks for, closed or not (verdicts only), and finds a key cut by one after closed ones", () => {
    const MiB = 1024 * 1024;
    const flood = (unit: string) => unit.repeat(Math.ceil(MiB / unit.length));
    const stored = (paragraphs: string) => zip({ "[Content_Types].xml": "<Types/>", "word/document.xml": documentXml(paragraphs) }, true);
    const docxOf = (paragraphs: string) => outcomeOf(() => inspectBinary(stored(paragraphs), "docx", "docx", NO_KNOWN_SECRETS));
    for (const unit of ["<w:del>", "<w:del><w:delText>", "<w:r><w:vanish/>", "<w:r>", "</w:r>", "<w:instrText>x", "<w:vanish ", "<", "<w:moveFrom ", '<w:pPr><w:del w:id="1"/>', "</w:p>"]) {
      expect(docxOf(`<w:p>${flood(unit)}</w:p>`), unit).toBe("published");
    }
    for (const unit of [deleted("x"), run("a", '<w:vanish w:val="0"/>'), run("a", "<w:vanish/>"), field(" PAGE ", "1"), movedFrom("m"), `<w:p>${markDeleted}${run("a ")}</w:p>`]) {
      expect(docxOf(`<w:p>${flood(unit)}</w:p>${cut(ghp, deleted(" - "))}`), unit).toBe("secret_detected");
    }
    const xlsxOf = (strings: string) => outcomeOf(() => inspectBinary(workbook(strings, undefined, true), "xlsx", "xlsx", NO_KNOWN_SECRETS));
    for (const unit of ["_x", "_x005F_", "_xD83D_", "_x00", "<rPh>", "<rPh><t>"]) expect(xlsxOf(`<si><t>${flood(unit)}</t></si>`), unit).toBe("published");
    expect(xlsxOf(`<si><t>${flood("_x005F_")}</t></si><si><t>${ghp.slice(0, 15)}_x200B_${ghp.slice(15)}</t></si>`)).toBe("secret_detected");
    const rtfOutcome = (s: string) => outcomeOf(() => inspectBinary(rtfOf(s), "rtf", "rtf", NO_KNOWN_SECRETS));
    for (const unit of ["{\\v ", "{\\*", "\\v a", "{\\field{\\*\\fldinst ", "\\deleted\\plain ", "}"]) expect(rtfOutcome(flood(unit)), unit).toBe("published");
    for (const unit of ["{\\*\\bkmkstart a}", "{\\v a}", "\\v a\\v0 ", "{\\field{\\*\\fldinst PAGE}{\\fldrslt 1}} "]) {
      expect(rtfOutcome(`${flood(unit)}${ghp.slice(0, 15)}{\\v  - }${ghp.slice(15)}`), unit).toBe("secret_detected");
    }
  });

  // Recall pass 34: text hidden by a style, ODF's hidden paragraphs and styles, Word's web view, a docx's escapes, a DTD's entities.
  const styled = (styles: string) => `<?xml version="1.0" encoding="UTF-8"?><w:styles ${W}>${styles}</w:styles>`;
  const wordStyle = (type: string, id: string, inner: string) => `<w:style w:type="${type}" w:customStyle="1" w:styleId="${id}"><w:name w:val="${id}"/>${inner}</w:style>`;
  const STYLES = styled(
    `<w:docDefaults><w:rPrDefault><w:rPr><w:lang w:val="en-GB"/></w:rPr></w:rPrDefault></w:docDefaults>${wordStyle("paragraph", "Normal", "")}` +
      wordStyle("character", "Secret", '<w:rPr><w:vanish/><w:color w:val="FF0000"/></w:rPr>') +
      wordStyle("character", "Child", '<w:basedOn w:val="Secret"/><w:rPr><w:b/></w:rPr>') +
      wordStyle("character", "Shown", '<w:basedOn w:val="Secret"/><w:rPr><w:vanish w:val="0"/></w:rPr>') +
      wordStyle("paragraph", "Note", '<w:basedOn w:val="Normal"/><w:rPr><w:vanish/></w:rPr>'),
  );
  const withStyles = (paragraphs: string, styles = STYLES) => docx("", 7, { "word/document.xml": documentXml(paragraphs), "word/styles.xml": styles });
  const rStyle = (id: string) => `<w:rStyle w:val="${id}"/>`;
  const pStyle = (id: string) => `<w:pPr><w:pStyle w:val="${id}"/></w:pPr>`;
  const OFFICE = 'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0"';
  const odfStyle = (name: string, family: string, properties: string, parent = "") =>
    `<style:style style:name="${name}" style:family="${family}"${parent ? ` style:parent-style-name="${parent}"` : ""}><style:text-properties ${properties}/></style:style>`;
  const AUTOMATIC = `<office:automatic-styles>${odfStyle("T1", "text", 'text:display="none"')}${odfStyle("T2", "text", 'fo:font-weight="bold"')}${odfStyle("P1", "paragraph", 'text:display="none"')}${odfStyle("T3", "text", 'text:display="true"', "Hidden")}</office:automatic-styles>`;
  const odfStyles = (styles: string) =>
    `<?xml version="1.0"?><office:document-styles ${OFFICE} ${TEXT}><office:styles>${styles}</office:styles><office:master-styles/></office:document-styles>`;
  // `stored`: a flood deflates past the ratio a zip bomb is refused at.
  const odtStyled = (paragraphs: string, common = odfStyle("Hidden", "text", 'text:display="none"'), stored = false) =>
    zip(
      {
      mimetype: "application/vnd.oasis.opendocument.text",
      "content.xml": `<?xml version="1.0"?><office:document-content ${OFFICE} ${TEXT}>${AUTOMATIC}<office:body><office:text>${paragraphs}</office:text></office:body></office:document-content>`,
      "styles.xml": odfStyles(common),
      },
      stored,
    );
  const span = (style: string, text: string) => `<text:span text:style-name="${style}">${text}</text:span>`;
  const hiddenParagraph = '<text:hidden-paragraph text:condition="ooow:1==1" text:is-hidden="true"/>';
  // A text box anchored as a character inside a paragraph: its paragraphs' text lies between the outer one's.
  const textBox = (inner: string) => `<draw:frame draw:name="F1" text:anchor-type="as-char"><draw:text-box>${inner}</draw:text-box></draw:frame>`;
  const withEntities = (declarations: string, paragraphs: string) =>
    docx("", 7, { "word/document.xml": documentXml(paragraphs).replace("?>", `?><!DOCTYPE w:document [${declarations}]>`) });

  it("refuses a key cut by a run hidden by its style, an ODF hidden paragraph or style, a web-hidden run or a docx's escape, and one a DTD's entity holds (unscannable_content), through the CLI; publishes reports with those and no key", () => {
    const hermes = path.join(h.home, ".hermes");
    fs.mkdirSync(hermes, { recursive: true, mode: 0o700 });
    write(hermes, ".env", `MY_SERVICE_TOKEN=${opaque}\nDB_PASSWORD='${password}'\n`);
    const hiddenOff = '<w:vanish w:val="0"/>';
    const cases: [string, Buffer][] = [
      ["style-character.docx", withStyles(cut(ghp, run(" - ", rStyle("Secret"))))],
      ["style-based-on-env.docx", withStyles(cut(opaque, run(" - ", rStyle("Child")), 16))],
      // A paragraph style hides its runs (but one shown by its own properties) and its mark: the paragraph runs on into the next.
      ["style-default-paragraph.docx", withStyles(`<w:p>${run(ghp.slice(0, 15), hiddenOff)}${run(" - ")}${run(ghp.slice(15), hiddenOff)}</w:p>`, styled(wordStyle("paragraph", "Normal", "<w:rPr><w:vanish/></w:rPr>").replace("<w:style ", '<w:style w:default="1" ')))],
      ["style-paragraph.docx", withStyles(`<w:p>${pStyle("Note")}${run(ghp.slice(0, 15), hiddenOff)}${run(" - ")}${run(ghp.slice(15), hiddenOff)}</w:p>`)],
      ["web-hidden.docx", body(cut(ghp, run(" - ", "<w:webHidden/>")))],
      ["escape.docx", body(`<w:p>${run(`ghp_x005F_${ghp.slice(4)}`)}</w:p>`)],
      ["escape-env.docx", body(`<w:p>${run(`${opaque.slice(0, 16)}_x200B_${opaque.slice(16)}`)}</w:p>`)],
      ["hidden-paragraph.odt", odtStyled(`<text:p>${ghp.slice(0, 15)}${textBox(`<text:p>${hiddenParagraph} - </text:p>`)}${ghp.slice(15)}</text:p>`)],
      ["automatic-style-env.odt", odtStyled(`<text:p>${opaque.slice(0, 16)}${span("T1", " - ")}${opaque.slice(16)}</text:p>`)],
      ["paragraph-style.odt", odtStyled(`<text:p>${ghp.slice(0, 15)}${textBox('<text:p text:style-name="P1"> - </text:p>')}${ghp.slice(15)}</text:p>`)],
      ["common-style.odt", odtStyled(`<text:p>${ghp.slice(0, 15)}${span("Hidden", " - ")}${ghp.slice(15)}</text:p>`)],
    ];
    // An entity of a DTD, which an XML parser expands: refused, not read.
    const entities: [string, Buffer][] = [
      ["entity-halves.docx", withEntities(`<!ENTITY a "${ghp.slice(0, 15)}"><!ENTITY b "${ghp.slice(15)}">`, `<w:p>${run("&a;&b;")}</w:p>`)],
      ["entity-env.docx", withEntities(`<!ENTITY a "${opaque.slice(0, 16)}">`, `<w:p>${run(`&a;${opaque.slice(16)}`)}</w:p>`)],
    ];
    const twins: [string, Buffer][] = [
      // Word's table of contents: its page numbers hidden on a web page.
      ["report-contents.docx", withStyles(`<w:p>${run("Introduction")}${run("\t")}${run("3", "<w:webHidden/>")}</w:p><w:p>${run("token_", rStyle("Secret"))}${run("budget is ", rStyle("Shown"))}${run("max_x005F_tokens")}</w:p>`)],
      ["report-notes.docx", withStyles(`<w:p>${pStyle("Note")}${run("reviewer's note")}</w:p><w:p>${run("sha256 ")}${run("9f86d081884c7d659a2feaa0c55ad015", rStyle("Child"))}${run("a3bf4f1b2b0b822cd15d6c15b0f00a08.")}</w:p>`)],
      ["report-hidden.odt", odtStyled(`<text:p>Release notes${span("T1", "draft")} for 1.2.</text:p><text:p>${hiddenParagraph}internal</text:p><text:p text:style-name="P1">private</text:p><text:p>${span("T3", "shown")} and ${span("T2", "bold")}</text:p>`)],
      // A DOCTYPE without entities (an external DTD's name only) is read as before.
      ["report-doctype.docx", docx("", 7, { "word/document.xml": documentXml(`<w:p>${run("A plain report.")}</w:p>`).replace("?>", '?><!DOCTYPE w:document SYSTEM "wml.dtd">') })],
    ];
    const files = [...cases, ...entities].map(([name, content]) => write(work, name, content));
    const clean = twins.map(([name, content]) => write(work, name, content));
    const r = prepareJson([...files, ...clean], "docx,odt");
    expect(r.code).toBe(1);
    expect(r.dropped.map(([name, code]) => [name, code])).toEqual([...cases.map(([name]) => [name, "secret_detected"]), ...entities.map(([name]) => [name, "unscannable_content"])]);
    r.dropped.forEach(([name, , reason], i) => {
      if (i < cases.length) {
        expect(reason, name).toMatch(name.startsWith("web") ? /as shown on a web page, at byte/ : /as shown, at byte/);
        expect(reason, name).toMatch(name.includes("env") ? /the value of MY_SERVICE_TOKEN/ : /a GitHub token/);
      } else expect(reason, name).toContain("word/document.xml declares entities in a DTD (<!ENTITY)");
      for (const v of [ghp, opaque, password]) expect(reason, name).not.toContain(v.slice(4, 16));
    });
    expect(r.published).toEqual(twins.map(([name]) => name));
  });

  it("reads the shown text with the package's styles, ODF's hidden paragraphs, styles and sections, and Word's web view", () => {
    const stylesOf = (xml: string) => packageStyles(Buffer.from(xml, "utf8"))!;
    const wml = (paragraphs: string, view: "print" | "web" = "print", styles = STYLES) => shownText(Buffer.from(`<w:body ${W}>${paragraphs}</w:body>`, "utf8"), stylesOf(styles), view)?.toString("utf8");
    // A character style, one based on it, one based on it that shows its text; a paragraph style, its runs and its mark; a run's own properties first.
    expect(wml(`<w:p>${run("a")}${run("b", rStyle("Secret"))}${run("c", rStyle("Child"))}${run("d", rStyle("Shown"))}${run("e", rStyle("Normal"))}${run("f", rStyle("Unknown"))}${run("g", `${rStyle("Secret")}<w:vanish w:val="0"/>`)}</w:p>`)).toBe("adefg\n");
    expect(wml(`<w:p>${pStyle("Note")}${run("a")}${run("b", '<w:vanish w:val="0"/>')}</w:p><w:p>${run("c")}</w:p><w:p><w:pPr><w:pStyle w:val="Note"/><w:rPr><w:vanish w:val="0"/></w:rPr></w:pPr>${run("d", '<w:vanish w:val="off"/>')}</w:p><w:p>${pStyle("Normal")}${run("e")}</w:p>`)).toBe("bc\nd\ne\n");
    // Parents in a loop end; a styles part of no known vocabulary defines none.
    const looped = styled(wordStyle("character", "A", '<w:basedOn w:val="B"/>') + wordStyle("character", "B", '<w:basedOn w:val="A"/>') + wordStyle("character", "C", "<w:rPr><w:vanish/></w:rPr>"));
    expect(wml(`<w:p>${run("a", rStyle("A"))}${run("b", rStyle("Secret"))}${run("c", rStyle("C"))}</w:p>`, "print", looped)).toBe("ab\n");
    expect(packageStyles(Buffer.from("<styles/>"))).toBeUndefined();
    // The default paragraph style (a paragraph's without w:pStyle) and the document defaults (a style's that says nothing).
    const off = '<w:vanish w:val="0"/>';
    const hiddenNormal = styled(wordStyle("paragraph", "Normal", "<w:rPr><w:vanish/></w:rPr>").replace("<w:style ", '<w:style w:default="1" ') + wordStyle("paragraph", "Body", ""));
    expect(wml(`<w:p>${run("a", off)}${run("b")}</w:p><w:p>${pStyle("Body")}${run("c")}</w:p>`, "print", hiddenNormal)).toBe("ac\n");
    const hiddenDefaults = styled(`<w:docDefaults><w:rPrDefault><w:rPr><w:vanish/></w:rPr></w:rPrDefault></w:docDefaults>${wordStyle("character", "Shown", `<w:rPr>${off}</w:rPr>`)}${wordStyle("paragraph", "Body", "<w:rPr><w:b/></w:rPr>")}`);
    expect(wml(`<w:p>${run("a")}${run("b", off)}${run("c", rStyle("Shown"))}</w:p><w:p>${pStyle("Body")}${run("d")}</w:p><w:p>${run("e", off)}</w:p>`, "print", hiddenDefaults)).toBe("bce");
    // A docx's escapes decoded, as a spreadsheet's.
    expect(wml(`<w:p>${run("a_x005F_x0041_b_x0041_")}</w:p>`)).toBe("a_x0041_bA\n");
    // The web view leaves out a web-hidden run too, and the print view does not; no web view without one.
    const contents = `<w:p>${run("a")}${run("b", "<w:webHidden/>")}${run("c", '<w:webHidden w:val="0"/>')}${run("d", "<w:vanish/>")}</w:p>`;
    expect([wml(contents), wml(contents, "web")]).toEqual(["abc\n", "ac\n"]);
    expect(wml(`<w:p>${run("a")}</w:p>`, "web")).toBeUndefined();
    // ODF: a paragraph holding a hidden-paragraph field, automatic and common styles (and a child that shows its text), a section.
    const odf = (body: string, common = "") =>
      shownText(Buffer.from(`<office:document-content ${OFFICE} ${TEXT}>${AUTOMATIC}<office:body><office:text>${body}</office:text></office:body></office:document-content>`, "utf8"), stylesOf(odfStyles(common)))?.toString("utf8");
    const hiddenCommon = odfStyle("Hidden", "text", 'text:display="none"') + odfStyle("Kid", "text", 'fo:color="#000000"', "Hidden");
    expect(odf(`<text:p>a${textBox(`<text:p>b${span("T2", `c${hiddenParagraph}`)}</text:p>`)}d</text:p><text:p>e</text:p>`)).toBe("ad\ne\n");
    expect(odf(`<text:p>a${span("T1", `b${span("T2", "c")}`)}${span("T2", "d")}${span("T3", "e")}${span("Hidden", "f")}${span("Kid", "g")}h</text:p><text:p text:style-name="P1">i</text:p>`, hiddenCommon)).toBe("adeh\n");
    expect(odf(`<text:p>a</text:p><text:section text:name="S" text:display="none"><text:p>b</text:p></text:section><text:section text:name="T" text:display="true"><text:p>c</text:p></text:section>`)).toBe("a\nc\n");
    // An end tag that closes nothing open, and one never closed, change nothing.
    expect(odf(`<text:p>a</text:span>${span("T1", "b")}<text:span text:style-name="T1">c</text:p>`)).toBe("ac\n");
  });

  // Word's table of contents: a web-hidden page number at each entry's end, in the part's first paragraphs.
  const contentsEntries = (count: number) => Array.from({ length: count }, (_, i) => `<w:p>${run(`Section ${i + 1}`)}${run("\t")}${run(String(i + 2), "<w:webHidden/>")}</w:p>`).join("");
  // Paragraphs of prose no two alike (a repeated one deflates past a zip bomb's ratio): about 100 bytes of the part each.
  const prose = (count: number) => Array.from({ length: count }, (_, i) => `<w:p>${run(`Paragraph ${i} reads ${((i * 2654435761) >>> 0).toString(36)} and ${((i * 40503) >>> 0).toString(16)}.`)}</w:p>`).join("");

  it("reads a table of contents' document in the web view around its web-hidden runs: a key cut by one far past it is refused, the document without one published (since recall pass 34)", () => {
    const late = body(`${contentsEntries(40)}${prose(3000)}${cut(ghp, run(" - ", "<w:webHidden/>"))}${prose(50)}`);
    const clean = body(`${contentsEntries(40)}${prose(3000)}`);
    const files = [write(work, "contents-late-key.docx", late), write(work, "contents-clean.docx", clean)];
    const r = prepareJson(files, "docx");
    expect(r.code).toBe(1);
    expect(r.dropped.map(([name, code]) => [name, code])).toEqual([["contents-late-key.docx", "secret_detected"]]);
    expect(r.dropped[0]![2]).toMatch(/as shown on a web page, at byte/);
    expect(r.dropped[0]![2]).not.toContain(ghp.slice(4, 16));
    expect(r.published).toEqual(["contents-clean.docx"]);
  });

  it("reads in the web view the paragraphs around a web-hidden run, not its own alone: a key wrapped over two paragraphs, a paragraph whose mark is hidden", () => {
    const W_NS = `<w:body ${W}>`;
    const web = (paragraphs: string) => shownText(Buffer.from(`${W_NS}${paragraphs}</w:body>`, "utf8"), undefined, "web")?.toString("utf8");
    // Far from the contents, only their windows are read: each entry's text without its page number, the prose between left out.
    const far = web(`${contentsEntries(2)}${prose(2000)}<w:p>${run("a")}${run("b", "<w:webHidden/>")}${run("c")}</w:p>${prose(2000)}`)!;
    expect(far.startsWith("Section 1\t\nSection 2\t\nParagraph 0 reads")).toBe(true);
    expect(far).toContain("\nac\n");
    expect(far).toContain("\n\n");
    expect(far.length).toBeLessThan(Buffer.byteLength(prose(4000)) / 2);
    // A key wrapped over two paragraphs, the web-hidden run opening the second; a paragraph whose mark is hidden runs on into the next.
    const wrapped = `<w:p>${run(ghp.slice(0, 20))}</w:p><w:p>${run(" - ", "<w:webHidden/>")}${run(ghp.slice(20))}</w:p>`;
    expect(web(wrapped)).toBe(`${ghp.slice(0, 20)}\n${ghp.slice(20)}\n`);
    const markHidden = `<w:p><w:pPr><w:rPr><w:vanish/></w:rPr></w:pPr>${run(ghp.slice(0, 20))}</w:p><w:p>${run(" - ", "<w:webHidden/>")}${run(ghp.slice(20))}</w:p>`;
    expect(web(markHidden)).toBe(`${ghp}\n`);
    const CT = "<Types/>";
    const docxOf = (paragraphs: string) => outcomeOf(() => inspectBinary(zip({ "[Content_Types].xml": CT, "word/document.xml": documentXml(paragraphs) }, true), "docx", "docx", NO_KNOWN_SECRETS));
    expect(docxOf(`${prose(2000)}${markHidden}`)).toBe("secret_detected");
    // The wrapped key is read joined in the web view only: with the run shown there too, its halves are apart.
    expect(docxOf(`${prose(2000)}${wrapped}`)).toBe("secret_detected");
    expect(docxOf(`${prose(2000)}${wrapped.replace("<w:webHidden/>", '<w:webHidden w:val="0"/>')}`)).toBe("published");
  });

  it("gives a verdict on floods of styles, ODF marks, web-hidden runs, escapes and DTD declarations (verdicts only), and finds a key cut after them", () => {
    const MiB = 1024 * 1024;
    const flood = (unit: string) => unit.repeat(Math.ceil(MiB / unit.length));
    const CT = "<Types/>";
    const docxOf = (paragraphs: string, styles = STYLES) =>
      outcomeOf(() => inspectBinary(zip({ "[Content_Types].xml": CT, "word/document.xml": documentXml(paragraphs), "word/styles.xml": styles }, true), "docx", "docx", NO_KNOWN_SECRETS));
    for (const unit of [`<w:r><w:rPr>${rStyle("Secret")}`, `<w:p>${pStyle("Note")}`, "<w:r><w:webHidden/>", "</w:p>", "bHidden</w:p>", "_x", "_x005F_", `<w:rStyle w:val="Secret" val val `, "<!DOCTYPE", "<!ENTITY"]) {
      expect(docxOf(`<w:p>${flood(unit)}</w:p>`), unit).toBe("published");
    }
    expect(docxOf(`<w:p><w:r><w:rPr><w:rStyle ${flood("val val= ")}/></w:rPr></w:r></w:p>`)).toBe("published");
    // Web-hidden runs 64 KiB apart: a window of the web view each (since recall pass 34), every one read.
    const spaced = `${run("a", "<w:webHidden/>")}</w:p><w:p>${"b".repeat(64 * 1024)}</w:p><w:p>`;
    for (const unit of [run("a", rStyle("Secret")), run("a", "<w:webHidden/>"), spaced, run("a_x0041_"), `<w:p>${pStyle("Note")}${run("a")}</w:p>`]) {
      expect(docxOf(`<w:p>${flood(unit)}</w:p>${cut(ghp, run(" - ", rStyle("Child")))}`), unit).toBe("secret_detected");
    }
    // A styles part of floods: parents in a chain, styles never closed, a style's vanish repeated.
    const sheets: [string, string][] = [
      [wordStyle("character", "A", '<w:basedOn w:val="A"/>'), "published"],
      ['<w:style w:styleId="A">', "published"],
      ['<w:style w:styleId="S"><w:vanish/>', "secret_detected"],
    ];
    for (const [unit, outcome] of sheets) expect(docxOf(cut(ghp, run(" - ", rStyle("S")), 15), styled(flood(unit))), unit).toBe(outcome);
    const odtOf = (paragraphs: string, common?: string) => outcomeOf(() => inspectBinary(odtStyled(paragraphs, common, true), "odt", "odt", NO_KNOWN_SECRETS));
    for (const unit of ['<text:span text:style-name="T1">', "<text:p>", hiddenParagraph, "</text:span>", '<text:section text:display="none">', "display=", "hidden-"]) {
      expect(odtOf(flood(unit)), unit).toBe("published");
    }
    expect(odtOf(`${flood(`<text:p>${hiddenParagraph}a</text:p>`)}<text:p>${ghp.slice(0, 15)}${span("T1", " - ")}${ghp.slice(15)}</text:p>`)).toBe("secret_detected");
    expect(odtOf("<text:p>a</text:p>", flood(odfStyle("A", "text", 'text:display="none"', "A")))).toBe("published");
  });

});

/** The refusal's code, or "published". */
function outcomeOf(f: () => void): string {
  try {
    f();
    return "published";
  } catch (err) {
    if (err instanceof Refusal) return err.code;
    throw err;
  }
}

describe("the host's .env as decimal byte values, uuencode, Ascii85 or base32 (redteam33 03, 04)", () => {
  const f = new Fakes(3301);
  const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  // No vendor's format: only the .env names them.
  const opaque = f.pick(ALNUM, 32);
  const password = `${f.pick(ALNUM, 6)}#${f.pick(ALNUM, 9)}`;
  /** Python's encodings of `input` (the system python3, its standard library), by the expression of `b` that prints each. */
  const encode = (expression: string, input: Buffer | string) => {
    const r = spawnSync(systemPython(), ["-c", `import sys, json, base64, binascii\nb = sys.stdin.buffer.read()\nsys.stdout.write(${expression})`], { input, maxBuffer: 64 << 20 });
    expect(r.status, `${expression} ${r.stderr}`).toBe(0);
    return r.stdout;
  };
  const base32 = (input: Buffer | string) => {
    const r = spawnSync("base32", [], { input, env: { PATH: process.env.PATH, LC_ALL: "C" }, maxBuffer: 64 << 20 });
    expect(r.status, `base32 ${r.stderr}`).toBe(0);
    return r.stdout;
  };
  /** Each form, named as the refusal names its reading. */
  const forms: [string, string, (input: Buffer | string) => Buffer][] = [
    ["node-buffer.txt", "decimal byte values", (b) => encode(`json.dumps({"level": 30, "buf": {"type": "Buffer", "data": list(b)}}) + "\\n"`, b)],
    ["python-list.txt", "decimal byte values", (b) => encode(`str(list(b)) + "\\n"`, b)],
    ["java-bytes.md", "decimal byte values", (b) => encode(`"    [" + ", ".join(str(c if c < 128 else c - 256) for c in b) + "]\\n"`, b)],
    ["pretty.json", "decimal byte values", (b) => encode(`json.dumps({"data": list(b)}, indent=2)`, b)],
    ["uu.txt", "uuencode", (b) => encode(`"begin 644 .env\\n" + "".join(binascii.b2a_uu(b[i:i + 45]).decode() for i in range(0, len(b), 45)) + "\\x60\\nend\\n"`, b)],
    ["adobe.txt", "Ascii85", (b) => encode(`base64.a85encode(b, wrapcol=76, adobe=True).decode() + "\\n"`, b)],
    ["b32.txt", "base32", base32],
  ];
  /** Bare Ascii85 and base85, not read (documented: their alphabets are nearly all of printable ASCII, the search cost every text). */
  const bare: [string, (input: Buffer | string) => Buffer][] = [
    ["a85.txt", (b) => encode(`base64.a85encode(b).decode() + "\\n"`, b)],
    ["b85.md", (b) => encode(`"\\x60\\x60\\x60\\n" + base64.b85encode(b).decode() + "\\n\\x60\\x60\\x60\\n"`, b)],
  ];

  it("refuses the .env in each form through the CLI, naming the value and the reading, never the value; the same forms of random bytes and ordinary numbers, capitals and IDs are published", () => {
    const hermes = path.join(h.home, ".hermes");
    fs.mkdirSync(hermes, { recursive: true, mode: 0o700 });
    const env = `MY_SERVICE_TOKEN=${opaque}\nDB_PASSWORD='${password}'\n`;
    write(hermes, ".env", env);
    const files = forms.map(([name, , form]) => write(work, `env-${name}`, form(env)));
    const token = `ghp_${f.pick(ALNUM, 36)}`;
    const keys = forms.map(([name, , form]) => write(work, `ghp-${name}`, form(`token: ${token}\n`)));
    const numbers = Array.from({ length: 64 }, () => [...f.bytes(8)]);
    const twins = [
      // One of each encoding: random bytes (a key's value is not among them: no rule, no host value).
      ...forms.map(([name, , form]) => write(work, `random-${name}`, form(f.bytes(2048)))),
      // Numbers: a CSV, JSON arrays of coordinates and of RGB values (small ints, many of them), a Python list of them.
      write(work, "numbers.csv", `a,b,c,d,e,f,g,h\n${numbers.map((row) => row.join(",")).join("\n")}\n`),
      write(work, "points.json", JSON.stringify({ points: numbers.map((row) => row.slice(0, 2)), rgb: numbers.flat() })),
      write(work, "rgb.txt", `${String(numbers.flat().slice(0, 48))}\n[${numbers.flat().join(", ")}]\n`),
      // Capitals: prose and base32-looking IDs (TOTP secrets, ULIDs, one a line and in a column), Markdown fences and rules.
      write(work, "caps.md", `# NOTICE\n\nTHE QUICK BROWN FOX JUMPS OVER THE LAZY DOG. PLEASE READ THE TERMS.\n\n${"=".repeat(40)}\n\n\x60\x60\x60\nJBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP\n\x60\x60\x60\n`),
      write(work, "ids.txt", Array.from({ length: 40 }, () => f.pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 32)).join("\n")),
      // uuencode and `<~` of an ordinary text: read, and nothing in it.
      ...forms.map(([name, , form]) => write(work, `prose-${name}`, form("The quick brown fox jumps over the lazy dog; 10 apples, 20 pears.\n".repeat(8)))),
      // Bare Ascii85 and base85 of the .env: not read (documented).
      ...bare.map(([name, form]) => write(work, `bare-${name}`, form(env))),
    ];
    const r = prepareJson([...files, ...keys, ...twins]);
    expect(r.dropped.map(([name, code]) => [name, code])).toEqual([...files, ...keys].map((file) => [path.basename(file), "secret_detected"]));
    forms.forEach(([, reading], i) => {
      expect(r.dropped[i]![2]).toContain(`the value of MY_SERVICE_TOKEN (the Hermes .env), read from ${reading}`);
      expect(r.dropped[forms.length + i]![2]).toContain(`a GitHub token, read from ${reading}`);
    });
    for (const [, , reason] of r.dropped) for (const v of [opaque, password, token]) expect(reason).not.toContain(v.slice(4, 16));
    expect(r.published).toEqual(twins.map((file) => path.basename(file)));
  });

  it("finds the password alone in each form, at each alignment of its groups; a run holding fewer than 16 bytes is not read", () => {
    const known = new KnownSecrets([{ name: "DB_PASSWORD", bytes: Buffer.from(password) }]);
    // A byte past ASCII before the value (Java's bytes are signed: \`-61, -87\`); five offsets: every alignment of base32's 5-byte groups, Ascii85's and base85's 4-byte ones and uuencode's 3-byte ones.
    for (let pad = 0; pad < 5; pad++)
      for (const [name, reading, form] of forms) expect(scanBytes(form(`${"#".repeat(pad)} café\nDB_PASSWORD='${password}'\n`), known)?.what, `${name} ${pad}`).toBe(`the value of DB_PASSWORD, read from ${reading}`);
    // 15 bytes: the password's first 15 (a value's length is 16 and more).
    const short = new KnownSecrets([{ name: "P", bytes: Buffer.from(password.slice(0, 15)) }]);
    for (const [name, , form] of forms) expect(scanBytes(form(password.slice(0, 15)), short), name).toBeUndefined();
  });

  it("finds the value in each form wherever it lies about a block's boundary (a run belongs to the window it starts in)", () => {
    const known = new KnownSecrets([{ name: "MY_SERVICE_TOKEN", bytes: Buffer.from(opaque) }]);
    const encoded = forms.map(([name, reading, form]) => [name, reading, form(`MY_SERVICE_TOKEN=${opaque}\n`)] as const);
    const line = "The quick brown fox jumps over the lazy dog; 10 apples.\n";
    for (let at = BLOCK - OVERLAP - 400; at < BLOCK + 200; at += 23) {
      const filler = Buffer.from(line.repeat(Math.ceil(at / line.length)).slice(0, at));
      for (const [name, reading, text] of encoded) expect(scanBytes(Buffer.concat([filler, Buffer.from("\n"), text, filler]), known)?.what, `${name} ${at}`).toBe(`the value of MY_SERVICE_TOKEN, read from ${reading}`);
    }
  });

  it("reads each form back to the bytes encoded; finds no run in ordinary lines of no blank", () => {
    const bytes = f.bytes(3000);
    for (const [name, , form] of forms) {
      const text = form(bytes);
      const runs = findByteEncodings(text.toString("latin1"), text, text.length);
      const reading = readByteEncodings(text, text.length, runs, 0, text.length, 16);
      expect(reading.bytes.subarray(0, reading.length).includes(bytes), name).toBe(true);
    }
    // What is no run: lines of no blank in one case (a link, a name in backticks), a fence, a rule, a list of 15 bytes, capitals with blanks.
    for (const text of ["[docs/gate-secrets.md](docs/gate-secrets.md).", "`HERMES_MEDIA_TRUST_RECENT_FILES=0`).", "```", "~~~~~~~~~~~~~~~~~~~~~~~~", "=".repeat(40), `[${Array.from({ length: 15 }, (_, i) => i).join(", ")}]`, "THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG"])
      expect(findByteEncodings(text, Buffer.from(text, "latin1"), text.length), text).toEqual([]);
  });

  it("reads encodings again within REREAD_ENCODED_BYTES of a file's windows on each thread", () => {
    const token = `ghp_${f.pick(ALNUM, 36)}`;
    const encoded = base32(`token=${token}\n`);
    const filler = base32(f.bytes(Math.ceil(((REREAD_ENCODED_BYTES + 3 * BLOCK) * 5) / 8)));
    const scan = (text: Buffer, reread: RereadBudget) => {
      const scanner = new SecretScanner(undefined, 0, 1, reread);
      for (let off = 0; off < text.length; off += BLOCK) scanner.scanBlock(text.subarray(off, Math.min(text.length, off + BLOCK)), off + BLOCK >= text.length);
      return scanner.finding?.what;
    };
    expect(scan(encoded, rereadBudget())).toBe("a GitHub token, read from base32");
    expect(scan(encoded, { ...rereadBudget(), encodedLeft: 0 })).toBeUndefined();
    const spent = rereadBudget();
    expect(scan(Buffer.concat([filler, Buffer.from("\n"), encoded]), spent)).toBeUndefined();
    expect(spent.encodedLeft).toBeLessThan(BLOCK);
    expect(spent.dumpLeft).toBe(REREAD_DUMP_BYTES);
  });

  it("stays linear on text made against the reading (verdict only; measured by hand: see docs/content-check.md)", () => {
    const MiB = 1 << 20;
    const units = [
      "[",
      "[1,",
      "[-1, ",
      "[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1",
      "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]",
      `[${" ".repeat(200)}`,
      "[1,\n    ",
      "1,",
      "begin ",
      "begin 644 a\n",
      "begin 644 a\nM",
      `begin 644 a\nM${"!".repeat(60)}\n`,
      "<~",
      "<~!",
      "~>",
      "<~!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!",
      "AB",
      "AB\n",
      "ABCDEFGH\n",
      "!#",
      "!#\n",
      "a!#$%&()*+-;<=>?@^_",
      "A=",
      "\n",
      "x ",
    ];
    for (const unit of units) for (const size of [MiB, 8 * MiB]) expect(scanBytes(Buffer.from(unit.repeat(Math.ceil(size / unit.length)).slice(0, size), "latin1")), JSON.stringify(unit)).toBeUndefined();
  });
});

// Red-team pass 34 (finding 12; published until then): a key folded inside a
// table's cell (rich's `overflow="fold"`, tabulate's `maxcolwidths`,
// prettytable's `max_width`, Markdown and pandoc grid tables): each piece on
// its own line between the cell's borders, at the same column, the row's
// other cells empty on the lines after the first. text-forms.ts's
// cellBreakLength reads such a fold as a line break; find.ts's joined
// readings and known.ts's walks pass over it.
describe("a key folded inside a table's cell (red-team pass 34, finding 12)", () => {
  const f = new Fakes(3412);
  const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  const github = `ghp_${f.pick(ALNUM, 36)}`;
  const openrouter = `sk-or-v1-${f.pick("0123456789abcdef", 64)}`;
  const anthropic = `sk-ant-api03-${f.pick(`${ALNUM}_-`, 93)}AA`;
  const hostValue = f.pick(ALNUM, 40);
  const WRAPPED = "with line breaks removed";
  /** What the scan finds in `text` written as UTF-8 (box-drawing characters are three bytes). */
  const found = (text: string) => scanBytes(Buffer.from(text))?.what;
  /** A table's borders as a tool draws them: the left edge, between the columns, the right edge ("" where there is none), the rules around. */
  interface Box {
    left: string;
    mid: string;
    right: string;
    top?: string;
    under?: string;
    bottom?: string;
    /** Blanks after the last column's text where it has no right edge (rich's MINIMAL pads them; presto none). */
    trail?: boolean;
  }
  const BOXES: Record<string, Box> = {
    "rich heavy head": { left: "│", mid: "│", right: "│", top: "┏━┳━┓", under: "┡━╇━┩", bottom: "└─┴─┘" },
    "rich rounded": { left: "│", mid: "│", right: "│", top: "╭─┬─╮", under: "├─┼─┤", bottom: "╰─┴─╯" },
    "rich ascii": { left: "|", mid: "|", right: "|", top: "+-+-+", under: "|-+-|", bottom: "+-+-+" },
    "rich double": { left: "║", mid: "║", right: "║", top: "╔═╦═╗", under: "╠═╬═╣", bottom: "╚═╩═╝" },
    "rich minimal": { left: " ", mid: "│", right: " ", under: "╶─┼─╴", trail: true },
    "tabulate heavy_grid": { left: "┃", mid: "┃", right: "┃", top: "┏━┳━┓", under: "┣━╋━┫", bottom: "┗━┻━┛" },
    "tabulate grid, pandoc grid": { left: "|", mid: "|", right: "|", top: "+-+-+", under: "+=+=+", bottom: "+-+-+" },
    "tabulate pipe, Markdown": { left: "|", mid: "|", right: "|", under: "|-|-|" },
    "tabulate presto": { left: "", mid: "|", right: "", under: "-+-" },
  };
  /** A rule of `box` (`┏━┳━┓`: its left corner, fill, cross, fill, right corner) for columns of `widths`. */
  const rule = (spec: string, widths: number[]) => {
    const [l, fill, cross, , r] = [...spec];
    if (spec.length < 5) return widths.map((w) => `${spec[0]}${spec[1]!.repeat(w + 2)}`).join(spec[2]!);
    return `${l}${widths.map((w) => fill!.repeat(w + 2)).join(cross)}${r}`;
  };
  /** A table of `rows` drawn with `box`, each value folded every `width` characters as rich and tabulate fold it. */
  const table = (box: Box, rows: [string, string][], width: number, eol = "\n") => {
    const labels = Math.max(7, ...rows.map(([label]) => label.length));
    const widths = [labels, width];
    const line = (label: string, value: string) => {
      const cells = box.left === "" ? `${label.padEnd(labels)} ${box.mid} ${value}` : `${box.left} ${label.padEnd(labels)} ${box.mid} ${value.padEnd(width)} ${box.right}`;
      return box.right === "" || box.right === " " ? (box.trail ? `${cells.trimEnd()}${" ".repeat(width - value.length + 2)}` : cells.trimEnd()) : cells;
    };
    const lines: string[] = [];
    if (box.top) lines.push(rule(box.top, widths));
    lines.push(line("Setting", "Value"));
    if (box.under) lines.push(rule(box.under, widths));
    for (const [label, value] of rows) {
      const pieces = value.match(new RegExp(`.{1,${width}}`, "g")) ?? [""];
      pieces.forEach((piece, i) => lines.push(line(i === 0 ? label : "", piece)));
    }
    if (box.bottom) lines.push(rule(box.bottom, widths));
    return `${lines.join(eol)}${eol}`;
  };
  /** The finding's first input as rich wrote it (width 40: the label cut with `…`, three bytes and one column). */
  const richReport = (key: string) =>
    `┏${"━".repeat(18)}┳${"━".repeat(19)}┓\n┃ Setting          ┃ Value             ┃\n┡${"━".repeat(18)}╇${"━".repeat(19)}┩\n│ model            │ openrouter/auto   │\n` +
    key
      .match(/.{1,17}/g)!
      .map((piece, i) => `│ ${i === 0 ? "OPENROUTER_API_…" : "                "} │ ${piece.padEnd(17)} │\n`)
      .join("") +
    `└${"─".repeat(18)}┴${"─".repeat(19)}┘\n`;

  it("is refused through the CLI in each tool's box, LF or CRLF, the host's own value too, naming the fold and never the value, nothing left behind; tables of words, digests, UUIDs and rows of short tokens are published", () => {
    const hermes = path.join(h.home, ".hermes");
    fs.mkdirSync(hermes, { recursive: true, mode: 0o700 });
    write(hermes, ".env", `CUSTOM_SECRET=${hostValue}\n`);
    const files = [
      write(work, "rich-report.txt", richReport(openrouter)),
      ...Object.entries(BOXES).map(([name, box], i) => write(work, `${name.replace(/\W+/g, "-")}.txt`, table(box, [["repo", "acme/web"], ["GITHUB_TOKEN", github], ["user", "bob"]], 16 + i))),
      write(work, "anthropic-crlf.md", table(BOXES["tabulate pipe, Markdown"]!, [["model", "claude"], ["ANTHROPIC_API_KEY", anthropic]], 30, "\r\n")),
      write(work, "host-value.txt", table(BOXES["rich heavy head"]!, [["service", "billing"], ["CUSTOM_SECRET", hostValue]], 21)),
    ];
    const whats = [/an OpenRouter API key, with line breaks removed/, ...Object.keys(BOXES).map(() => /a GitHub token, with line breaks removed/), /an Anthropic API key, with line breaks removed/, /the value of CUSTOM_SECRET \(the Hermes \.env\), with line breaks removed/];
    const digest = () => f.bytes(32).toString("hex");
    const uuid = () => crypto.randomUUID();
    const twins = [
      // Words, and a long word folded (a path): no key's trigger.
      write(work, "words.txt", table(BOXES["rich heavy head"]!, [["repo", "acme/web"], ["path", "/srv/releases/2026/web/build/artifacts/index.html"], ["notes", "the quick brown fox jumps over the lazy dog"]], 18)),
      // Digests and UUIDs, one a row and folded over several.
      write(work, "digests.txt", table(BOXES["tabulate grid, pandoc grid"]!, Array.from({ length: 8 }, (_, i): [string, string] => [`file${i}.tar`, digest()]), 64) + table(BOXES["rich rounded"]!, [["sha256", digest()], ["uuid", uuid()]], 20)),
      write(work, "uuids.md", table(BOXES["tabulate pipe, Markdown"]!, Array.from({ length: 8 }, (_, i): [string, string] => [`node${i}`, uuid()]), 36)),
      // Rows of short tokens filling their cells, each row its own label: a new row's text, no fold.
      write(work, "prefixes.txt", table(BOXES["rich heavy head"]!, Array.from({ length: 6 }, (_, i): [string, string] => [`key${i}`, `ghp_${f.pick(ALNUM, 12)}`]), 16)),
      write(work, "or-prefixes.txt", table(BOXES["rich ascii"]!, Array.from({ length: 6 }, (_, i): [string, string] => [`key${i}`, `sk-or-v1-${f.pick("0123456789abcdef", 8)}`]), 17)),
    ];
    const r = prepareJson([...files, ...twins]);
    expect(r.code).toBe(1);
    expect(r.dropped.map(([name, code]) => [name, code])).toEqual(files.map((file) => [path.basename(file), "secret_detected"]));
    r.dropped.forEach(([name, , reason], i) => expect(reason, name).toMatch(whats[i]!));
    for (const [, , reason] of r.dropped) for (const key of [github, openrouter, anthropic, hostValue]) expect(reason).not.toContain(key.slice(9, 25));
    expect(r.published).toEqual(twins.map((file) => path.basename(file)));
  });

  it("finds a key folded at every width in each box, at the table's start and after text, in a middle column and the first; the host's value whatever its pieces", () => {
    for (const [name, box] of Object.entries(BOXES)) {
      for (let width = 8; width < github.length; width++) {
        const text = table(box, [["repo", "acme/web"], ["GITHUB_TOKEN", github]], width);
        expect(found(text), `${name} ${width}`).toBe(`a GitHub token, ${WRAPPED}`);
        expect(found(`log line\n${text}`), `${name} ${width} after text`).toBe(`a GitHub token, ${WRAPPED}`);
      }
    }
    // A middle column (the row's third cell empty on the fold's lines too) and the first.
    const pieces = github.match(/.{1,14}/g)!;
    const middle = pieces.map((piece, i) => `│ ${i === 0 ? "token" : "     "} │ ${piece.padEnd(14)} │ ${i === 0 ? "prod" : "    "} │`).join("\n");
    const first = pieces.map((piece, i) => `| ${piece.padEnd(14)} | ${i === 0 ? "GitHub" : "      "} |`).join("\n");
    for (const text of [middle, first]) expect(found(`${text}\n`), text.slice(0, 40)).toBe(`a GitHub token, ${WRAPPED}`);
    const known = new KnownSecrets([{ name: "CUSTOM_SECRET", bytes: Buffer.from(hostValue) }]);
    // A piece of 19 bytes or more holds a word the pass reads wherever it lies (docs/content-check.md).
    for (let width = 19; width < hostValue.length; width++) {
      for (const box of [BOXES["rich heavy head"]!, BOXES["tabulate presto"]!]) {
        const text = Buffer.from(table(box, [["service", "billing"], ["CUSTOM_SECRET", hostValue]], width));
        expect(scanBytes(text, known)?.what, `${width}`).toBe(`the value of CUSTOM_SECRET, ${WRAPPED}`);
      }
    }
  });

  it("joins no pieces that are no fold: another row's text beside the next line, another column, a cell not filled, a margin or border not the same", () => {
    const [a, b] = [github.slice(0, 20), github.slice(20)];
    for (const text of [
      // The next line is another row (its own label).
      `│ token │ ${a} │\n│ other │ ${b.padEnd(20)} │\n`,
      // The piece does not fill its cell (a value of its own, padded).
      `│ token │ ${a}  │\n│       │ ${b.padEnd(21)} │\n`,
      // The next line's cell starts at another column, or its border is another character, or its margin is wider.
      `│ token │ ${a} │\n│      │ ${b.padEnd(20)}  │\n`,
      `│ token │ ${a} │\n│       ┃ ${b.padEnd(20)} ┃\n`,
      `│ token │ ${a} │\n│       │  ${b.padEnd(19)} │\n`,
      // No right border on the next line where the first had one.
      `│ token │ ${a} │\n│       │ ${b}\n`,
      // A blank line between.
      `│ token │ ${a} │\n\n│       │ ${b.padEnd(20)} │\n`,
    ]) expect(found(text), JSON.stringify(text)).toBeUndefined();
  });

  it("stays linear on text made against the fold's reading (verdict only; measured by hand: see docs/content-check.md)", () => {
    const MiB = 1 << 20;
    const hex = new Fakes(3413);
    const randomHexTable = table(BOXES["rich heavy head"]!, Array.from({ length: 64 }, (_, i): [string, string] => [i % 2 === 0 ? `k${i}` : "", hex.bytes(40).toString("hex")]), 17);
    const units = [
      "│",
      "│ ",
      "┃ ║ | ",
      "| sk- |",
      "│ sk- │\n",
      "│ ghp_abcdefghij │\n│ ",
      `│ ghp_abcdefghij │\n│${" ".repeat(200)}`,
      `| sk-or-v1-abcdef |\n|${" ".repeat(17)}| `,
      "sk-or-v1-abcdef \n",
      `│${" ".repeat(1000)}│ sk- │\n`,
      randomHexTable,
    ];
    for (const unit of units) for (const size of [MiB, 4 * MiB]) expect(scanBytes(Buffer.from(unit.repeat(Math.ceil(size / unit.length)).slice(0, size))), JSON.stringify(unit.slice(0, 30))).toBeUndefined();
    // The host's value's pieces before a cell's blanks and border, each a walk's start.
    const known = new KnownSecrets([{ name: "CUSTOM_SECRET", bytes: Buffer.from(hostValue) }]);
    for (const unit of [`│ ${hostValue.slice(0, 20)} │\n│ ${" ".repeat(20)} │\n`, `${hostValue.slice(0, 16)} │`, `│ ${hostValue.slice(0, 20)}\n${" ".repeat(1000)}`]) {
      expect(scanBytes(Buffer.from(unit.repeat(Math.ceil(MiB / unit.length))), known), JSON.stringify(unit.slice(0, 30))).toBeUndefined();
    }
  });
});

// Red-team pass 34 (the last pass's open escapes; published until then): a
// percent-escape encoded three times and more (`%252520`: `%25` again and
// again, then two hex digits), and Python's `\N{escape}` in any case (its
// name lookup ignores case). written-escapes.ts owns both; rules.ts's
// look-behind is built from the same source.
describe("a percent-escape encoded again and again, and `\\N{escape}` in any case (red-team pass 34)", () => {
  const f = new Fakes(3414);
  const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  const github = `ghp_${f.pick(ALNUM, 36)}`;
  const anthropic = `sk-ant-api03-${f.pick(`${ALNUM}_-`, 93)}AA`;
  const encoded = (times: number, hex = "20") => `%${"25".repeat(times - 1)}${hex}`;
  const NAMES = ["\\N{escape}[32m", "\\N{Escape}[0m", "\\N{eScApE}[1;31m", "\\N{esc}[32m", "\\N{Esc}[m", "\\N{eSC}(B"];

  it("is refused through the CLI (a URL encoded three and five times, a Python script's names in small letters), naming the key, nothing left behind; the same forms around words are published", () => {
    const files = [
      write(work, "thrice.txt", `GET /r?next=%252Fsend%253Ftext%253Dmy${encoded(3)}key${encoded(3)}${anthropic} HTTP/1.1\n`),
      write(work, "five.txt", `q=token${encoded(5, "3A")}${github}&x=1\n`),
      write(work, "names.txt", `print("\\N{escape}[32m${github}\\N{escape}[0m")\n`),
      write(work, "short-name.txt", `log.info("\\N{Esc}[1m" + "${github}")\nprint("\\N{esc}[32m${github}\\N{esc}[0m")\n`),
    ];
    const twins = [
      write(work, "thrice-words.txt", `q=my${encoded(3)}key${encoded(3)}ghp_status${encoded(4)}release_notes_for_version_two${encoded(3, "3D")}sha\n`),
      write(work, "names-words.txt", `print("\\N{escape}[1mghp_status\\N{escape}[0m \\N{Esc}[32mhello_world_and_more_words\\N{esc}[0m")\n`),
    ];
    const r = prepareJson([...files, ...twins]);
    expect(r.code).toBe(1);
    expect(r.dropped.map(([name, code]) => [name, code])).toEqual(files.map((file) => [path.basename(file), "secret_detected"]));
    const whats = [/an Anthropic API key \(/, /a GitHub token \(/, /a GitHub token \(/, /a GitHub token \(/];
    r.dropped.forEach(([name, , reason], i) => expect(reason, name).toMatch(whats[i]!));
    for (const [, , reason] of r.dropped) for (const key of [github, anthropic]) expect(reason).not.toContain(key.slice(9, 25));
    expect(r.published).toEqual(twins.map((file) => path.basename(file)));
  });

  it("starts a token after a `%` encoded up to 16 times and after each case of the ESC's names, at the start, in JSON, after words; not past 16 nor after what is no escape", () => {
    for (let times = 3; times <= 16; times++) {
      for (const hex of ["20", "0A", "3d"]) {
        const e = encoded(times, hex);
        for (const text of [`${e}${github}`, `{"q": "a${e}${github}"}`, `x=1 ${e}${github} done`]) expect(findSecret(text)?.what, `${times} ${hex} ${text.slice(0, 30)}`).toBe("a GitHub token");
      }
    }
    for (const e of NAMES) for (const text of [`${e}${github}`, `{"text": "Token:${e}${github}\\n"}`, `x=1 ${e}${github} done`]) expect(findSecret(text)?.what, JSON.stringify(text.slice(0, 30))).toBe("a GitHub token");
    // The names inside a key: removed by the second reading as the capitals' are.
    for (const e of NAMES.slice(0, 4)) expect(scanBytes(Buffer.from(`${github.slice(0, 12)}${e}${github.slice(12)}\n`))?.what, e).toBe("a GitHub token, with terminal escape sequences removed");
    for (const text of [`${encoded(17)}${github}`, `%${"25".repeat(5)}2${github}`, `${"25".repeat(4)}20${github}`, `\\n{escape}[32m${github}`, `\\N{escap}[32m${github}`, `\\N{escapes}[32m${github}`, `\\N{ esc}[32m${github}`, `\\N{escape}m${github}`]) {
      expect(findSecret(text), JSON.stringify(text.slice(0, 40))).toBeUndefined();
    }
  });

  it("reads the new forms' ends back byte by byte where the look-behind does, and nowhere else", () => {
    expectEscapeEndsAgree([
      `${encoded(3)}${encoded(4, "3A")}%25%2525%252525${encoded(16)}x${encoded(17)}y%${"25".repeat(20)}2g%2%252%25252${"25".repeat(40)}20%%252520`,
      "\\N{escape}[m\\N{Escape}[m\\N{ESCape}[m\\N{esc}[m\\N{Esc}[m\\N{eSC}(B\\N{escap}[m\\N{escapes}[m\\n{esc}[m\\N{ESC}m\\N{esc[m\\N{}[m\\N{e\\N{ESCAPE}[m",
    ]);
  });

  it("stays linear on text made against the new forms (verdict only; measured by hand: see docs/content-check.md)", () => {
    const MiB = 1 << 20;
    for (const unit of ["%25", "%2525", "25", "%252520ghp_", `%${"25".repeat(15)}20ghp_`, `${"25".repeat(20)}20ghp_a`, "\\N{", "\\N{e", "\\N{escape}", "\\N{escape}[", "\\N{esc}[1;", "a\\N{Esc}[ma", "\\N{eSc"]) {
      for (const size of [MiB, 4 * MiB]) expect(scanBytes(Buffer.from(unit.repeat(Math.ceil(size / unit.length)).slice(0, size), "latin1")), JSON.stringify(unit)).toBeUndefined();
    }
  });
});

// Red-team pass 34's 13 and 05: a .netrc shown through a tool that numbers its lines (Hermes' read_file `N|`, `cat -n`,
// `nl`, `grep -n`) or as a Markdown list, and a password line grep found (`.netrc:3:  password …`); a key in Python's
// bytes repr of UTF-16 text (`g\x00h\x00p\x00_…`). Each was published.
describe("a .netrc behind a tool's line prefixes, and a key in Python's bytes repr of UTF-16 text (redteam34 13, 05)", () => {
  const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  const f = new Fakes(3413);
  const password = f.pick(ALNUM, 22);
  const github = `ghp_${f.pick(ALNUM, 36)}`;
  const entry = (pw: string) => ["machine api.example.com", "  login deploy", `  password ${pw}`];
  const netrcForms = (pw: string): Record<string, string> => ({
    "read-file.txt": entry(pw).map((l, i) => `${i + 1}|${l}\n`).join(""),
    "cat-n.txt": entry(pw).map((l, i) => `${String(i + 1).padStart(6)}\t${l}\n`).join(""),
    "crlf-list.md": entry(pw).map((l) => `- ${l.trim()}\r\n`).join(""),
    "grep-rn.txt": `/home/agent/.netrc:3:  password ${pw}\n`,
    "grep-context.txt": `/home/agent/.netrc:1:machine api.example.com\n/home/agent/.netrc-2-  login deploy\n/home/agent/.netrc-3-  password ${pw}\n`,
    "grep-one-line.txt": `.netrc:machine api.example.com login deploy password ${pw}\n`,
  });
  const utf16Repr = (text: string, encoding: "utf-16" | "utf-16-be") => {
    const py = spawnSync(systemPython(), ["-c", `import sys\nprint(repr(sys.argv[1].encode(${JSON.stringify(encoding)})))`, text], { encoding: "utf8" });
    expect(py.status, py.stderr).toBe(0);
    return py.stdout;
  };
  const NULS = "read as UTF-16 with its written \\x00 bytes removed";

  it("refuses each through the CLI, never the value; the same forms with a placeholder password, and reprs of UTF-16 text with no key, are published", () => {
    const cases: [string, string, string][] = [
      ...Object.entries(netrcForms(password)).map(([name, text]): [string, string, string] => [name, text, "a .netrc password"]),
      ["repr-le.txt", `>>> open('settings.txt','rb').read()\n${utf16Repr(`# deploy\r\nGITHUB_TOKEN=${github}\r\n`, "utf-16")}`, `a GitHub token, ${NULS}`],
      ["repr-be.txt", utf16Repr(`token ${github}`, "utf-16-be"), `a GitHub token, ${NULS}`],
    ];
    const files = cases.map(([name, text]) => write(work, name, text));
    const twins = [
      ...Object.entries(netrcForms("changeme")).map(([name, text]) => write(work, `other-${name}`, text)),
      write(work, "other-repr.txt", utf16Repr("# deploy settings\r\nREGION=eu-west-1\r\nLOG_LEVEL=debug\r\n", "utf-16")),
    ];
    const r = prepareJson([...files, ...twins], "txt,md");
    expect(r.dropped.map(([name, code]) => [name, code])).toEqual(cases.map(([name]) => [name, "secret_detected"]));
    r.dropped.forEach(([, , reason], i) => expect(reason).toContain(cases[i]![2]));
    for (const [, , reason] of r.dropped) for (const v of [password, github]) expect(reason).not.toContain(v.slice(4));
    expect(r.published).toEqual(twins.map((t) => path.basename(t)));
  });

  it("sees written \\x00 bytes only after three of a key's characters, and gives verdicts on repetitions of the prefixes, of `.netrc:` and of `\\x00` (verdicts only)", () => {
    for (const text of ["a\\x00b\\x00c\\x00", "x\\x00\\x00a\\x00b\\x00c\\x00"]) expect(formsIn(text) & Form.WrittenNuls, text).toBe(Form.WrittenNuls);
    for (const text of ["\\x00a\\x00b\\x00", "a\\x00b\\x00", "a\\x00 \\x00c\\x00", "\\x00\\x00\\x00\\x00\\x00"]) expect(formsIn(text) & Form.WrittenNuls, text).toBe(0);
    const long = 1024 * 1024;
    const rep = (s: string) => Buffer.from(s.repeat(Math.ceil(long / s.length)));
    for (const unit of ["\\x00", "a\\x00", "ab\\x00", "\\x00a", "a\\x00b\\x00c\\x00 ", ".netrc:", ".netrc:1:", ".netrc-1- password \n", "1|machine a\n", "machine a\n1|", "machine a\n2|  login b\n", `machine a\n${"x".repeat(250)}.netrc-2- password\n`, "- machine ", "password \n1|", "\n- "])
      expect(scanBytes(rep(unit)), JSON.stringify(unit)).toBeUndefined();
    expect(scanBytes(Buffer.concat([rep("a\\x00b\\x00c\\x00 "), Buffer.from(`\n${utf16Repr(`t=${github}`, "utf-16")}`)]))?.what).toBe(`a GitHub token, ${NULS}`);
    expect(scanBytes(Buffer.concat([rep(".netrc:1: password \n"), Buffer.from(`.netrc:9:  password ${password}\n`)]))?.what).toBe("a .netrc password");
    expect(scanBytes(Buffer.concat([rep("1|machine a\n"), Buffer.from(entry(password).map((l, i) => `${i + 1}|${l}\n`).join(""))]))?.what).toBe("a .netrc password");
  });
});

// Red-team pass 34's two gaps left open (published until recall pass 34's
// esc65): a Telegram bot token whose colon is percent-encoded three to 16
// times (`%25253A`: a URL encoded again and again, the bound of
// written-escapes.ts's PERCENT_ENCODED_AGAIN_MAX), and a lone grep context
// line of a .netrc password (`.netrc-3-  password …`, grep -A/-C over
// ~/.netrc), read from the `-` connector pass's grep mark.
describe("a Telegram colon encoded up to 16 times, and a lone grep context line of a .netrc password (esc65)", () => {
  const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  const f = new Fakes(3465);
  const telegram = `7${f.pick("0123456789", 9)}:AAH${f.pick(`${ALNUM}_-`, 32)}`;
  const [digits, secret] = telegram.split(":") as [string, string];
  const password = f.pick(ALNUM, 22);
  const colon = (times: number, hex = "3A") => `%${"25".repeat(times - 1)}${hex}`;

  it("is refused through the CLI, never the value, nothing left behind; ordinary URLs with `%25`, a context line of a login and prose with \"password\" are published", () => {
    const files = [
      write(work, "tg-thrice.txt", `redirect=https%25253A%25252F%25252Fapi.telegram.org%25252Fbot${digits}${colon(3)}${secret}%25252FgetMe\n`),
      write(work, "tg-sixteen.txt", `?bot=${digits}${colon(16, "3a")}${secret}&x=1\n`),
      write(work, "netrc-context.txt", `.netrc-3-  password ${password}\n`),
      write(work, "netrc-path.txt", `$ grep -C1 login ~/.netrc\n/home/u/.netrc-3-  password ${password}\n`),
    ];
    const twins = [
      write(work, "urls.txt", `https://example.com/a%2525b%252520c?t=12%25253A30&p=50%2525&n=${digits}${colon(17)}${secret}\n`),
      write(work, "netrc-login.txt", `.netrc-3-  login x\n/home/u/.netrc-4-  login deploy_user_name\n.netrc-5-  password changeme\n`),
      write(work, "prose.txt", "Set the password in .netrc-3- style lines: the password field holds your password, never shared.\n"),
    ];
    const r = prepareJson([...files, ...twins]);
    expect(r.code).toBe(1);
    expect(r.dropped.map(([name, code]) => [name, code])).toEqual(files.map((file) => [path.basename(file), "secret_detected"]));
    const whats = ["a Telegram bot token", "a Telegram bot token", "a .netrc password", "a .netrc password"];
    r.dropped.forEach(([name, , reason], i) => expect(reason, name).toContain(whats[i]!));
    for (const [, , reason] of r.dropped) for (const v of [secret, password]) expect(reason).not.toContain(v.slice(4, 20));
    expect(r.published).toEqual(twins.map((file) => path.basename(file)));
  });

  it("finds the colon encoded one to 16 times, in either case, at a token's edges only; not past 16 nor `%25` before another escape", () => {
    for (let times = 1; times <= 16; times++) {
      for (const hex of ["3A", "3a"]) {
        const token = `${digits}${colon(times, hex)}${secret}`;
        for (const text of [token, `?bot=${token}&x=1`, `%2Fbot${token}%2FgetMe`, `a ${token}\n`]) expect(findSecret(text)?.what, `${times} ${text.slice(0, 30)}`).toBe("a Telegram bot token");
        for (const text of [`1${token}`, `${digits.slice(3)}${colon(times, hex)}${secret}`, `${token}A`, `${digits}${colon(times, hex)}${secret.slice(1)}`, `${digits}${colon(times, hex)}${"A".repeat(35)}`]) {
          expect(findSecret(text), `${times} ${text.slice(0, 30)}`).toBeUndefined();
        }
      }
    }
    for (const sep of [colon(17), colon(20), colon(4, "3B"), colon(4, "2A"), "%2525%3A", "%25%253A", "%252%3A", "%2525253"]) expect(findSecret(`${digits}${sep}${secret}`), sep).toBeUndefined();
  });

  it("finds a lone grep context line of a .netrc password, after a path or none, with a machine or login before it on the line; not a login's line nor prose", () => {
    for (const text of [`.netrc-3-  password ${password}\n`, `/home/u/.netrc-3-  password ${password}\n`, `/root/.netrc-12-\tpassword\t${password}`, `x\n.netrc-1-machine a.example login u password ${password}\n`, `C:/Users/u/.netrc-7- password ${password}`]) {
      expect(findSecret(text)?.what, JSON.stringify(text)).toBe("a .netrc password");
    }
    for (const text of [".netrc-3-  login x\n", `.netrc-3-  login ${password}\n`, ".netrc-3-  password changeme\n", `.netrc-3-\n  password ${password}\n`, `netrc-3-  password ${password}\n`, `.netrc-x-  password ${password}\n`, `.netrc-3-  passwd ${password}\n`, "The password for the .netrc-3- line is the password you chose.\n"]) {
      expect(findSecret(text), JSON.stringify(text)).toBeUndefined();
    }
  });

  it("gives verdicts on repetitions of `%25`, of the encoded colon after digits, of `.netrc-1- password ` (verdicts only), and finds a key after them", () => {
    const MiB = 1 << 20;
    const rep = (unit: string, size = MiB) => Buffer.from(unit.repeat(Math.ceil(size / unit.length)).slice(0, size), "latin1");
    const units = ["%25", "%2525", "1%25", "1234567890%25", `1234567890${"%25".repeat(40)}`, `1234567890${colon(16)}`, `1234567890${colon(16)}A`, `${digits}${colon(16)}${"A".repeat(34)} `, ".netrc-1-  password \n", ".netrc-1-", "c-1-", `.netrc-1- password ${"x".repeat(7)}\n`];
    for (const unit of units) for (const size of [MiB, 4 * MiB]) expect(scanBytes(rep(unit, size)), JSON.stringify(unit.slice(0, 24))).toBeUndefined();
    // Without line breaks each password's value is the next `.netrc-1-`, a word of nine that reads as a password, as the
    // colon's `.netrc:1: password .netrc:1:` does: found at the first.
    for (const unit of [".netrc-1- password ", ".netrc:1: password "]) expect(scanBytes(rep(unit, 4 * MiB)), unit).toEqual({ what: "a .netrc password", offset: 0 });
    expect(scanBytes(Buffer.concat([rep("%25"), Buffer.from(` ${digits}${colon(16)}${secret}\n`)]))?.what).toBe("a Telegram bot token");
    expect(scanBytes(Buffer.concat([rep(".netrc-1- password \n"), Buffer.from(`.netrc-9-  password ${password}\n`)]))?.what).toBe("a .netrc password");
  });
});

// Red-team pass 34 (findings 01, 08, 09, 10, 11, 14): a private key published
// when an ordinary tool decorates each of its lines: grep's context lines
// (`path-N-`), a diff's removed lines (`-`), `cat -A` (`$`, `^M$`), a CI
// log's timestamps, Hermes' search_files (`  N: `), a Markdown list; or
// joins them into one line: Python's list of lines, a PEM inside a JSON
// string inside JSON (`\\n`). Certificates, public keys and placeholders
// under the same decorations pass.
describe("red-team pass 34: a private key under a tool's per-line decoration", () => {
  const f = new Fakes(3400);
  const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  const hex = f.bytes(16).toString("hex").toUpperCase();
  const wrapped = (n: number) => f.bytes(n).toString("base64").match(/.{1,64}/g)!.join("\n");
  const KEYS: Record<string, string> = {
    "RSA PKCS#1": f.pem("RSA PRIVATE KEY"),
    "PKCS#8": f.pem("PRIVATE KEY"),
    "encrypted PKCS#8": f.pem("ENCRYPTED PRIVATE KEY"),
    "legacy encrypted RSA": `-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,${hex}\n\n${wrapped(480)}\n-----END RSA PRIVATE KEY-----\n`,
    OpenSSH: `${armoured(opensshBody(3401))}\n`,
    PGP: `-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\n${wrapped(480)}\n-----END PGP PRIVATE KEY BLOCK-----\n`,
  };
  const PASSING: Record<string, string> = {
    certificate: f.pem("CERTIFICATE"),
    "public key": f.pem("PUBLIC KEY"),
    "PGP public key": `-----BEGIN PGP PUBLIC KEY BLOCK-----\nVersion: GnuPG v2\n\n${wrapped(480)}\n-----END PGP PUBLIC KEY BLOCK-----\n`,
    placeholder: "-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----\n",
    "placeholder body": `-----BEGIN RSA PRIVATE KEY-----\n${"A".repeat(64)}\n${"x".repeat(64)}\n-----END RSA PRIVATE KEY-----\n`,
  };
  const lines = (pem: string) => pem.trimEnd().split("\n");
  const DECORATIONS: Record<string, (l: string[]) => string> = {
    "grep -rn -A": (l) => `$ grep -rn -A 40 'PRIVATE KEY-----' ~/.ssh\n${l.map((s, i) => `/home/agent/.ssh/id_rsa${i === 0 ? `:${i + 1}:` : `-${i + 1}-`}${s}\n`).join("")}`,
    "grep -r -A": (l) => l.map((s, i) => `/srv/app/tls/key.pem${i === 0 ? ":" : "-"}${s}\n`).join(""),
    "a diff's removed lines": (l) => `diff --git a/deploy/key b/deploy/key\ndeleted file mode 100644\n--- a/deploy/key\n+++ /dev/null\n@@ -1,${l.length} +0,0 @@\n${l.map((s) => `-${s}\n`).join("")}`,
    "cat -A": (l) => `$ cat -A key\n${l.map((s) => `${s}$\n`).join("")}`,
    "cat -A of CRLF": (l) => l.map((s) => `${s}^M$\n`).join(""),
    "CI log timestamps": (l) => l.map((s, i) => `2026-12-05T10:00:01.${String(i).padStart(7, "0")}Z ${s}\n`).join(""),
    "Hermes search_files": (l) => `/home/agent/.ssh/id_ed25519\n${l.map((s, i) => `  ${i + 1}: ${s}\n`).join("")}`,
    "a Markdown list": (l) => l.map((s) => `- ${s}\n`).join(""),
    "a deep YAML indent": (l) => `tls:\n  key: |\n${l.map((s) => `            ${s}\n`).join("")}`,
    "Python's list of lines": (l) => `${JSON.stringify(l).replace(/"/g, "'").replace(/','/g, "', '")}\n`,
    "a JSON string in JSON": (l) => `${JSON.stringify({ secret: JSON.stringify({ key: l.join("\n") }) })}\n`,
  };
  const KEY_FOUND = /a private key block|an OpenSSH private key/;

  it("finds every private key under every decoration; certificates, public keys and placeholders under the same pass", () => {
    for (const [kind, pem] of Object.entries(KEYS)) {
      for (const [tool, decorate] of Object.entries(DECORATIONS)) expect(findSecret(decorate(lines(pem)))?.what, `${kind}, ${tool}`).toMatch(KEY_FOUND);
    }
    for (const [kind, pem] of Object.entries(PASSING)) {
      for (const [tool, decorate] of Object.entries(DECORATIONS)) expect(findSecret(decorate(lines(pem))), `${kind}, ${tool}`).toBeUndefined();
    }
    const sshPublic = (seed: number) => `ssh-ed25519 ${Buffer.concat([sshString("ssh-ed25519"), sshString(new Fakes(seed).bytes(32))]).toString("base64")} agent${seed}@host`;
    expect(findSecret(`Authorised keys:\n\n${[1, 2, 3, 4].map((s) => `- ${sshPublic(s)}\n`).join("")}`)).toBeUndefined();
  });

  it("finds a token right after grep's mark on a context line (`path-N-`), as after its match line's `path:N:`; not a word there, nor a token glued inside a line", () => {
    const github = `ghp_${f.pick(ALNUM, 36)}`;
    const openrouter = `sk-or-v1-${f.pick("0123456789abcdef", 64)}`;
    const context = (token: string) => `/home/agent/notes.md:14:## CI token\n/home/agent/notes.md-15-${token}\n/home/agent/notes.md-16-rotate it monthly\n`;
    expect(findSecret(context(github))?.what).toBe("a GitHub token");
    expect(findSecret(context(openrouter))?.what).toBe("an OpenRouter API key");
    expect(findSecret(`notes-v2.md-3-${github}\n`)?.what).toBe("a GitHub token");
    for (const text of [
      context("ghp_status sk-or-v1-models"),
      context("sk-or-v1-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),
      `see the notes: ab-15-${github}\n`,
      `release 2026-12-05-${github}\n`,
    ]) expect(findSecret(text), text).toBeUndefined();
  });

  it("is refused through the CLI with its reason and leaves nothing behind; a removed certificate, grep's context over a public key and a list of public keys are published", () => {
    const files = [
      write(work, "grep-rsa.txt", DECORATIONS["grep -rn -A"]!(lines(KEYS["RSA PKCS#1"]!))),
      write(work, "grep-openssh.txt", DECORATIONS["grep -rn -A"]!(lines(KEYS.OpenSSH!))),
      write(work, "diff-pkcs8.md", `\`\`\`diff\n${DECORATIONS["a diff's removed lines"]!(lines(KEYS["PKCS#8"]!))}\`\`\`\n`),
      write(work, "cat-a.txt", DECORATIONS["cat -A of CRLF"]!(lines(KEYS.OpenSSH!))),
      write(work, "ci.txt", DECORATIONS["CI log timestamps"]!(lines(KEYS.PGP!))),
      write(work, "list.md", DECORATIONS["a Markdown list"]!(lines(KEYS["legacy encrypted RSA"]!))),
      write(work, "repr.txt", DECORATIONS["Python's list of lines"]!(lines(KEYS.OpenSSH!))),
      write(work, "state.md", `\`\`\`json\n${DECORATIONS["a JSON string in JSON"]!(lines(KEYS["encrypted PKCS#8"]!))}\`\`\`\n`),
    ];
    const sshPublic = `ssh-ed25519 ${Buffer.concat([sshString("ssh-ed25519"), sshString(new Fakes(3402).bytes(32))]).toString("base64")} agent@host`;
    const twins = [
      write(work, "diff-cert.md", DECORATIONS["a diff's removed lines"]!(lines(PASSING.certificate!))),
      write(work, "grep-public.txt", DECORATIONS["grep -rn -A"]!(lines(PASSING["public key"]!))),
      write(work, "keys.md", `- ${sshPublic}\n- ${sshPublic.replace("agent@", "deploy@")}\n`),
    ];
    const r = prepareJson([...files, ...twins]);
    expect(r.code).toBe(1);
    expect(r.dropped.map(([name, code]) => [name, code])).toEqual(files.map((file) => [path.basename(file), "secret_detected"]));
    for (const [name, , reason] of r.dropped) expect(reason, name).toMatch(KEY_FOUND);
    expect(r.published).toEqual(twins.map((file) => path.basename(file)));
    expect(leftBehind(h).staging).toEqual([]);
  });

  it("gives a verdict on adversarial decorated armour (each form's repetitions, 1 MiB and 4 MiB) and still finds a key after them", () => {
    const armour = "-----BEGIN RSA PRIVATE KEY-----";
    const units = [
      ...Object.values(DECORATIONS).map((decorate) => decorate([armour])),
      ...Object.values(DECORATIONS).map((decorate) => decorate([armour, "Proc-Type: 4,ENCRYPTED", ""])),
      ...Object.values(DECORATIONS).map((decorate) => decorate([armour, "A".repeat(64)])),
      "-----BEGIN",
      "------BEGIN PRIVATE KEY-----\n-",
      "/home/agent/x-1-",
      "/home/agent/x-1-\n",
      "^M$\n",
      "$\n",
      "\\\\n",
      "-----BEGIN PRIVATE KEY-----\\\\n",
      "', '",
      `- ${armour}\n${"- Proc-Type: 4\n".repeat(20)}`,
      `${armour}$\n${"x".repeat(3000)}$\n`,
      "x.a-1-",
      "a-1-",
      "a-1-\n",
      "-1-",
      "/x/notes.md-15-ghp_\n",
      "/x/notes.md-15-sk-or-v1-\n",
      `${"x".repeat(250)}-1-sk-`,
      "2026-12-05-12-",
    ];
    for (const unit of units) expectLinearReading(unit);
    const decorated = DECORATIONS["grep -rn -A"]!(lines(KEYS.OpenSSH!));
    expect(findSecret(`${DECORATIONS["grep -rn -A"]!([armour, "Proc-Type: 4,ENCRYPTED", "x"]).repeat(20000)}${decorated}`)?.what).toMatch(KEY_FOUND);
    // A marked block read the same way as one judged no key is not tried again: a key's block after 1 MiB of them is.
    const removed = DECORATIONS["a diff's removed lines"]!;
    const judged = removed([armour, "A".repeat(64)]);
    expect(findSecret(`${judged.repeat(Math.ceil(2 ** 20 / judged.length))}${removed(lines(KEYS["PKCS#8"]!))}`)?.what).toMatch(KEY_FOUND);
  });
});
