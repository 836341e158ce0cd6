// Forms a red-team pass (2026-12-06) found published: an OpenSSH private
// key's body without its armour (a comment's `# ` or a quote's `> ` before
// each line, an HTML page's `<br>` between them, Markdown's `\-` escapes of
// the dashes), and the Hermes host's known values as common tools escape
// them (percent-encoded in a URL, `json.dumps`, HTML-escaped in a Markdown
// file, a CSV field's doubled quotes). Each is refused through the real CLI
// with its reason and leaves nothing behind; its clean twin is published.
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { findSecret } from "../src/content/find.js";
import { KnownSecrets, escapedForms } from "../src/content/known.js";
import { Fakes } from "./corpus.js";
import { cli, leftBehind, makeHome, write } from "./helpers.js";

let h: ReturnType<typeof makeHome>;
let work: string;
beforeEach(() => {
  h = makeHome();
  work = path.join(h.home, "work");
  fs.mkdirSync(work);
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
const armoured = (body: string) => `-----BEGIN OPENSSH PRIVATE KEY-----\n${body}\n-----END OPENSSH PRIVATE KEY-----`;
const prefixed = (text: string, mark: string) => text.split("\n").map((line) => `${mark}${line}`).join("\n");

function prepareJson(files: string[], allow = "txt,md,csv,json,html") {
  const r = cli(["prepare", "--json", "--allow", allow, ...files], { env: h.env, cwd: work });
  const doc = JSON.parse(r.stdout) as { media: { source: string }[]; media_dropped: { path: string; code: string; reason: string }[] };
  return { code: r.code, published: doc.media.map((m) => path.basename(m.source)), dropped: doc.media_dropped.map((d) => [path.basename(d.path), d.code, d.reason] as const) };
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
    for (const [, , reason] of r.dropped) expect(reason).toContain("an OpenSSH private key (its base64 body)");
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
    const twins = [
      write(work, "other-link.md", query(other(token))),
      write(work, "other-notes.md", `The password is ${other(password).replace(/&/g, "&amp;")}.\n`),
      write(work, "other-settings.json", `${JSON.stringify({ note: other(quoted) })}\n`),
    ];
    const r = prepareJson([...files, ...twins]);
    expect(r.dropped.map(([name, code]) => [name, code])).toEqual(files.map((f) => [path.basename(f), "secret_detected"]));
    const reasons = r.dropped.map(([, , reason]) => reason);
    expect(reasons[0]).toContain("the value of TELEGRAM_BOT_TOKEN (the Hermes .env), percent-encoded");
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
