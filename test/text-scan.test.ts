import fs from "node:fs";
import { describe, expect, it } from "vitest";
import { TextScanner } from "../src/prepare/text.js";
import { cli, makeHome, write } from "./helpers.js";

const MiB = 1024 * 1024;

function scan(bytes: Buffer, chunkSize: number) {
  const scanner = new TextScanner();
  for (let off = 0; off < bytes.length; off += chunkSize) scanner.push(bytes.subarray(off, off + chunkSize));
  return scanner.finish();
}

const filler = (n: number) => Buffer.from("lorem ipsum dolor sit amet\n".repeat(Math.ceil(n / 27)).slice(0, n));
const GITHUB = "ghp_R8xk2LmQ9vTz4WpN7bYc3HsJ6dFa1GqE5uKo";

describe("TextScanner", () => {
  it("finds a secret that straddles a block boundary, whatever the chunk size", () => {
    for (const at of [MiB - 10, MiB - GITHUB.length, MiB, 2 * MiB - 3]) {
      const bytes = Buffer.concat([filler(at), Buffer.from(` ${GITHUB} `), filler(MiB)]);
      for (const chunk of [MiB, 64 * 1024, 4096, 777]) expect(scan(bytes, chunk).secret, `at ${at}, chunk ${chunk}`).toBe("a GitHub token");
    }
  });

  it("finds long tokens and PEM headers that straddle a block boundary", () => {
    const noise = Buffer.from(Array.from({ length: 1100 }, (_, i) => Math.imul(i + 1, 2654435761) >>> 24)).toString("base64url");
    const jwt = `${Buffer.from('{"alg":"HS256","typ":"JWT"}').toString("base64url")}.${Buffer.from(`{"data":"${noise}"}`).toString("base64url")}.${noise.slice(0, 43)}`;
    const pem = "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkqhkiG9w0BBQwwHAQI3k9Lx2vQp7YCAggA";
    for (const [token, what] of [[jwt, "a JSON Web Token"], [pem, "a private key block"]] as const) {
      for (const before of [10, 100, 2000, token.length - 1]) {
        const bytes = Buffer.concat([filler(MiB - before), Buffer.from(` ${token} `), filler(5000)]);
        for (const chunk of [MiB, 65_536, 1000]) expect(scan(bytes, chunk).secret, `${what}, ${before} bytes before the boundary, chunk ${chunk}`).toBe(what);
      }
    }
  });

  it("does not mistake a token cut by a block boundary for a whole one", () => {
    // AKIA + 16 characters is a key id only when a word boundary follows.
    const long = `AKIA${"ABCDEFGHIJKLMNOP"}QRSTUVWXYZ`;
    const bytes = Buffer.concat([filler(MiB - 20), Buffer.from(` ${long} `), filler(1000)]);
    expect(scan(bytes, MiB).secret).toBeUndefined();
    expect(scan(Buffer.from(` AKIAABCDEFGHIJKLMNOP `), 5).secret).toBe("an AWS access key id");
  });

  it("judges a token on a block's first byte by the byte before it", () => {
    const key = Buffer.from("AKIAABCDEFGHIJKLMNOP done\n");
    expect(scan(Buffer.concat([filler(MiB - 1), Buffer.from("x"), key, filler(100)]), MiB).secret).toBeUndefined();
    expect(scan(Buffer.concat([filler(MiB - 1), Buffer.from(" "), key, filler(100)]), MiB).secret).toBe("an AWS access key id");
  });

  it("accepts UTF-8 split across chunks and refuses broken or truncated UTF-8", () => {
    const text = Buffer.from("नमस्ते दुनिया, สวัสดี, مرحبا 😀 ".repeat(50_000));
    for (const chunk of [1, 2, 3, 5, 4096, MiB]) expect(scan(text.subarray(0, 300_000), chunk).validUtf8).toBe(true);
    expect(scan(Buffer.concat([text.subarray(0, 1000), Buffer.from([0xc3, 0x28])]), 7).validUtf8).toBe(false);
    expect(scan(Buffer.from([0x61, 0xf0, 0x9f, 0x98]), 1).validUtf8).toBe(false);
    expect(scan(Buffer.from([0x80, 0x61]), 1).validUtf8).toBe(false);
  });

  it("sees a NUL byte anywhere", () => {
    const bytes = Buffer.concat([filler(3 * MiB), Buffer.from([0]), filler(10)]);
    expect(scan(bytes, MiB).hasNul).toBe(true);
    expect(scan(filler(3 * MiB), MiB).hasNul).toBe(false);
  });

  it("names each kind of secret, including an AWS secret after a non-breaking space", () => {
    const cases: [string, string][] = [
      ["-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW", "a private key block"],
      ['AWS_Secret_Access_Key =\u00a0"Kq8vT2mLx9ZpW4rN7bYc3HsJ6dFa1GqE5uKoR0tP"', "an AWS secret access key"],
      ["token: xoxb-123456789012-1234567890123-Rk8xLmQ9vTz4WpN7bYc3HsJ6", "a Slack token"],
      ["key=sk-ant-api03-Rk8xLmQ9vTz4WpN7bYc3HsJ6dFa1GqE5uKoR0tPz2Lw8", "an Anthropic API key"],
      ["sk-proj-Rk8xLmQ9vTz4WpN7bYc3HsJ6dFa1GqE5uKoR0tPz2Lw8Vn6Bq4Yt", "an OpenAI-style API key"],
      [`${Buffer.from('{"alg":"HS256"}').toString("base64url")}.${Buffer.from('{"sub":"42","iat":1}').toString("base64url")}.Rk8xLmQ9vTz4WpN7bYc3HsJ6`, "a JSON Web Token"],
    ];
    for (const [text, what] of cases) expect(scan(Buffer.from(`café ${text}\n`), 3).secret, text).toBe(what);
    expect(scan(Buffer.from("an ordinary sk-short text about the AKIA prefix\n"), 4).secret).toBeUndefined();
  });
});

describe("prepare: text files larger than one scan block", () => {
  it("refuses a secret past the first MiB and publishes clean multi-byte text intact (CLI, from a file and from stdin)", () => {
    const h = makeHome();
    try {
      const text = Buffer.from("नमस्ते दुनिया — ".repeat(120_000));
      const clean = write(h.home, "notes.txt", text);
      const r = cli(["prepare", clean], { env: h.env });
      expect(r.code).toBe(0);
      expect(fs.readFileSync(r.stdout.trim().slice("MEDIA:".length)).equals(text)).toBe(true);

      const leaked = Buffer.concat([filler(MiB - 7), Buffer.from(` ${GITHUB}\n`), text]);
      const fromFile = cli(["prepare", write(h.home, "leak.md", leaked)], { env: h.env });
      expect([fromFile.code, fromFile.stdout]).toEqual([1, ""]);
      expect(fromFile.stderr).toContain("secret_detected");
      const fromStdin = cli(["prepare", "--stdin", "--name", "leak2.md"], { env: h.env, input: leaked });
      expect([fromStdin.code, fromStdin.stdout]).toEqual([1, ""]);
      expect(fromStdin.stderr).toContain("secret_detected");
      expect(fs.readdirSync(h.outbox)).toEqual(["notes.txt"]);
    } finally {
      h.cleanup();
    }
  });
});
