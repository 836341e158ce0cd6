import { execFileSync, spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makePng } from "../src/core/png.js";
import { outputName } from "../src/prepare/name.js";
import { extractMediaPaths } from "../src/safety/gateway.js";
import { BIN, type CliResult, NOTHING_LEFT, cli, leftBehind, makeHome, png, write } from "./helpers.js";

let h: ReturnType<typeof makeHome>;
let work: string;
beforeEach(() => {
  h = makeHome();
  work = h.work;
});
afterEach(() => h.cleanup());

const prep = (args: string[], input?: Buffer | string): CliResult => cli(["prepare", ...args], { env: h.env, cwd: work, ...(input !== undefined ? { input } : {}) });
const json = (r: CliResult) => JSON.parse(r.stdout) as {
  success: boolean;
  partial_success: boolean;
  outbox: string;
  media: { path: string; name: string; directive: string; sha256: string; reused: boolean; bytes: number; mime: string }[];
  media_dropped: { path: string; code: string; reason: string }[];
};
const refusedCode = (file: string, extra: string[] = []) => {
  const r = prep(["--json", ...extra, file]);
  expect(r.code).toBe(1);
  return json(r).media_dropped[0]!.code;
};

describe("prepare: happy path", () => {
  it("publishes a PNG and prints exactly one MEDIA: line", () => {
    const src = write(work, "chart.png", png(1));
    const r = prep([src]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe("");
    const dest = path.join(h.outbox, "chart.png");
    expect(r.stdout).toBe(`MEDIA:${dest}\n`);
    expect(fs.readFileSync(dest)).toEqual(fs.readFileSync(src));
    expect(fs.statSync(dest).mode & 0o777).toBe(0o600);
    expect(fs.statSync(h.outbox).mode & 0o777).toBe(0o700);
    expect(fs.readdirSync(h.outbox)).toEqual(["chart.png"]);
  });

  it("publishes 0640 into a group-readable outbox (the gate's layout), and a file reused there gets that mode too", () => {
    // A file published 0600 before the outbox became group-readable (as the watch did in gate mode).
    fs.mkdirSync(h.outbox, { recursive: true, mode: 0o700 });
    const before = prep([write(work, "old.png", png(4))]);
    expect(before.code).toBe(0);
    const old = path.join(h.outbox, "old.png");
    expect(fs.statSync(old).mode & 0o777).toBe(0o600);
    fs.chmodSync(h.outbox, 0o750);
    const r = prep([write(work, "chart.png", png(1))]);
    expect(r.code, r.stderr).toBe(0);
    expect(fs.statSync(path.join(h.outbox, "chart.png")).mode & 0o777).toBe(0o640);
    const again = prep(["--json", write(work, "old.png", png(4))]);
    expect(json(again).media[0]).toMatchObject({ path: old, reused: true });
    expect(fs.statSync(old).mode & 0o777).toBe(0o640);
    expect(fs.readdirSync(h.outbox).sort()).toEqual(["chart.png", "old.png"]);
  });

  it("writes a ledger record outside the outbox", () => {
    prep([write(work, "a.png", png(2))]);
    const ledgerDir = path.join(h.home, ".hermes", ".media_outbox-state", "ledger");
    const [day] = fs.readdirSync(ledgerDir);
    const rec = JSON.parse(fs.readFileSync(path.join(ledgerDir, day!), "utf8").trim());
    expect(rec).toMatchObject({ name: "a.png", bytes: png(2).length, mime: "image/png", reused: false });
  });

  it("JSON document has the documented shape", () => {
    const r = prep(["--json", write(work, "a.png", png(3)), "missing.png"]);
    expect(r.code).toBe(1);
    const doc = json(r);
    expect(doc.success).toBe(false);
    expect(doc.partial_success).toBe(true);
    expect(doc.outbox).toBe(h.outbox);
    expect(Object.keys(doc.media[0]!).sort()).toEqual(["bytes", "directive", "mime", "name", "path", "reused", "sha256", "source"]);
    expect(doc.media_dropped[0]).toMatchObject({ path: "missing.png", code: "not_found" });
  });

  it("reuses identical bytes and suffixes different bytes with the hash", () => {
    const a = write(work, "same.png", png(4));
    expect(json(prep(["--json", a])).media[0]!.reused).toBe(false);
    const again = json(prep(["--json", a])).media[0]!;
    expect(again.reused).toBe(true);
    expect(again.name).toBe("same.png");
    fs.mkdirSync(path.join(work, "b"));
    const b = write(path.join(work, "b"), "same.png", png(5));
    const other = json(prep(["--json", b])).media[0]!;
    expect(other.name).toBe(`same-${other.sha256.slice(0, 8)}.png`);
    expect(fs.readFileSync(path.join(h.outbox, "same.png"))).toEqual(png(4));
  });

  it("reads exact bytes from --stdin, NUL bytes and far beyond 128 KiB", () => {
    // Noise compresses badly: a PNG far beyond 128 KiB, NUL bytes included.
    const body = makePng(300, (i) => Math.imul(i + 6, 2654435761) >>> 24);
    const r = prep(["--json", "--stdin", "--name", "piped.png"], body);
    expect(r.code).toBe(0);
    const m = json(r).media[0]!;
    expect(fs.readFileSync(m.path)).toEqual(body);
  });

  it("concurrent prepares of different files with one name all succeed, bytes intact", async () => {
    const dirs = Array.from({ length: 6 }, (_, i) => {
      const d = path.join(work, `d${i}`);
      fs.mkdirSync(d);
      write(d, "report.png", png(100 + i));
      return d;
    });
    const bin = path.resolve(__dirname, "..", "bin", "media-outbox");
    const runs = dirs.map(
      (d) =>
        new Promise<string>((resolve, reject) => {
          const p = spawn(process.execPath, [bin, "prepare", path.join(d, "report.png")], { env: h.env });
          let out = "";
          p.stdout.on("data", (c) => (out += c));
          p.on("close", (code) => (code === 0 ? resolve(out.trim()) : reject(new Error(`exit ${code}`))));
        }),
    );
    const lines = await Promise.all(runs);
    const paths = lines.map((l) => l.replace(/^MEDIA:/, ""));
    expect(new Set(paths).size).toBe(6);
    const contents = new Set(paths.map((p) => fs.readFileSync(p).toString("hex")));
    expect(contents.size).toBe(6);
  });
});

describe("prepare: every refusal code", () => {
  it("unsafe_path_chars for control characters and U+2028", () => {
    for (const name of ["a\nb.png", "a\u2028b.png", "a\u0085b.png", "a\u007fb.png"]) {
      const r = prep(["--json", name]);
      expect(r.code).toBe(1);
      expect(json(r).media_dropped[0]!.code).toBe("unsafe_path_chars");
      expect(r.stderr).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u2028\u0085\u007f]/);
    }
  });

  it("unsafe_path_chars for a name that is not UTF-8, never the other file its U+FFFD reading names; a real U+FFFD is a name like any other", () => {
    // Node's argv turns the byte into U+FFFD: r\xff.txt read so is r\u{fffd}.txt, another file, here beside it.
    const bytesName = (latin1: string) => Buffer.concat([Buffer.from(`${work}/`), Buffer.from(latin1, "latin1")]);
    fs.writeFileSync(bytesName("caf\xe9.txt"), "latin-1 report\n");
    fs.writeFileSync(bytesName("r\xff.txt"), "the file that was asked for\n");
    write(work, "r\ufffd.txt", "ANOTHER FILE\n");
    // The shell passes the bytes as they are (printf's octal), as a caller's exec does.
    const raw = (...files: string[]) => {
      const r = spawnSync("sh", ["-c", `exec "$0" "$1" prepare --json ${files.map((f) => `"$(printf '${f}')"`).join(" ")}`, process.execPath, BIN], { env: h.env, cwd: work, encoding: "utf8" });
      return { code: r.status, stdout: r.stdout, stderr: r.stderr };
    };
    const r = raw("caf\\351.txt", "r\\377.txt", "r\\357\\277\\275.txt");
    expect(r.code, r.stderr).toBe(1);
    const report = json(r);
    expect(report.media_dropped.map((d) => [d.path, d.code])).toEqual([
      ["caf\\u{dce9}.txt", "unsafe_path_chars"],
      ["r\\u{dcff}.txt", "unsafe_path_chars"],
    ]);
    expect(report.media_dropped[0]!.reason).toBe("the path is not valid UTF-8, so it cannot be opened exactly as given (read as UTF-8 it names another file); rename the file to a UTF-8 name");
    // The one published is the file named with a real U+FFFD, given by its own bytes.
    expect(report.media.map((m) => fs.readFileSync(m.path, "utf8"))).toEqual(["ANOTHER FILE\n"]);
    expect(r.stderr).toBe(`media-outbox: refused caf\\u{dce9}.txt: unsafe_path_chars: ${report.media_dropped[0]!.reason}\nmedia-outbox: refused r\\u{dcff}.txt: unsafe_path_chars: ${report.media_dropped[0]!.reason}\n`);
  });

  it("media_directive_in_path, and the echo forms no directive", () => {
    fs.mkdirSync(path.join(work, "MEDIA:"));
    const r = prep(["--json", "MEDIA:/etc/passwd.png"]);
    expect(json(r).media_dropped[0]!.code).toBe("media_directive_in_path");
    expect(r.stderr).not.toMatch(/MEDIA:/i);
    expect(r.stdout).not.toMatch(/MEDIA:/i);
    expect(refusedCode("x/media: 'C:/y.png")).toBe("media_directive_in_path");
  });

  it("denied_source for /etc, home credentials, Hermes secrets, hard links and symlinks to secrets", () => {
    expect(refusedCode("/etc/hostname")).toBe("denied_source");
    fs.mkdirSync(path.join(h.home, ".ssh"));
    const key = write(path.join(h.home, ".ssh"), "id.txt", "ssh key\n");
    expect(refusedCode(key)).toBe("denied_source");
    fs.symlinkSync(key, path.join(work, "innocent.txt"));
    expect(refusedCode("innocent.txt")).toBe("denied_source");
    fs.mkdirSync(path.join(h.home, ".hermes", "profiles", "p1"), { recursive: true });
    const env = write(path.join(h.home, ".hermes", "profiles", "p1"), "config.yaml", "a: 1\n");
    fs.symlinkSync(env, path.join(work, "cfg.txt"));
    expect(refusedCode("cfg.txt")).toBe("denied_source");
    const orig = write(work, "orig.png", png(7));
    fs.linkSync(orig, path.join(work, "alias.png"));
    expect(refusedCode("alias.png")).toBe("denied_source");
  });

  it("denied_source for /dev/zero and for files outside --source-root", () => {
    expect(refusedCode("/dev/zero")).toBe("denied_source");
    fs.mkdirSync(path.join(work, "root"));
    const f = write(work, "out.png", png(8));
    expect(refusedCode(f, ["--source-root", path.join(work, "root")])).toBe("denied_source");
    // The refusal names the roots (escaped) and the fix.
    const odd = path.join(work, "r\u200b");
    fs.mkdirSync(odd);
    const named = prep(["--source-root", path.join(work, "root"), "--source-root", odd, f]);
    expect(named.stderr).toContain(`outside the allowed source roots (${path.join(work, "root")}, ${path.join(work, "r\\u{200b}")}); write it under one of them, or add its directory to sourceRoots (--source-root)`);
    expect(named.stderr).not.toContain("\u200b");
    const inside = write(path.join(work, "root"), "in.png", png(8));
    expect(prep(["--source-root", path.join(work, "root"), inside]).code).toBe(0);
  });

  it("denied_source for a file already in the outbox", () => {
    const r = json(prep(["--json", write(work, "x.png", png(9))]));
    expect(refusedCode(r.media[0]!.path)).toBe("denied_source");
  });

  it("not_found and not_regular_file (directory, FIFO without hanging)", () => {
    expect(refusedCode("nope.png")).toBe("not_found");
    fs.mkdirSync(path.join(work, "dir.png"));
    expect(refusedCode("dir.png")).toBe("not_regular_file");
    execFileSync("mkfifo", [path.join(work, "pipe.png")]);
    expect(refusedCode("pipe.png")).toBe("not_regular_file");
  });

  it("empty_file", () => {
    expect(refusedCode(write(work, "e.png", ""))).toBe("empty_file");
  });

  it("extension_not_allowed, and --allow replaces the list", () => {
    expect(refusedCode(write(work, "x.exe", "MZ"))).toBe("extension_not_allowed");
    expect(refusedCode(write(work, "noext", "hi\n"))).toBe("extension_not_allowed");
    const r = prep(["--allow", "png", write(work, "t.txt", "hi\n")]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("extension_not_allowed");
  });

  it("too_large by size cap and platform limit", () => {
    const f = write(work, "big.txt", "a".repeat(2000) + "\n");
    expect(refusedCode(f, ["--max-size", "1000"])).toBe("too_large");
    const img = write(work, "big.png", Buffer.concat([png(10), Buffer.alloc(6_000_000)]));
    expect(refusedCode(img, ["--platform", "whatsapp"])).toBe("too_large");
  });

  it("too_large for a file that grows past the cap while copied", async () => {
    const f = path.join(work, "grow.txt");
    fs.writeFileSync(f, "x".repeat(1000));
    const fd = fs.openSync(f, "a");
    let stop = false;
    const grow = (async () => {
      while (!stop) {
        fs.writeSync(fd, "y".repeat(1 << 20));
        await new Promise((r) => setImmediate(r));
      }
    })();
    const bin = path.resolve(__dirname, "..", "bin", "media-outbox");
    const code = await new Promise<string>((resolve) => {
      const p = spawn(process.execPath, [bin, "prepare", "--json", "--max-size", "200MB", f], { env: h.env });
      let out = "";
      p.stdout.on("data", (c) => (out += c));
      p.on("close", () => resolve(out));
    });
    stop = true;
    await grow;
    fs.closeSync(fd);
    expect(["too_large", "changed_during_copy"]).toContain(JSON.parse(code).media_dropped[0].code);
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
  });

  it("content_mismatch for a renamed ELF, text called .pdf, zip called .docx, binary .txt", () => {
    expect(refusedCode(write(work, "x.png", fs.readFileSync(process.execPath).subarray(0, 65536)))).toBe("content_mismatch");
    expect(refusedCode(write(work, "x.pdf", "just text\n"))).toBe("content_mismatch");
    execFileSync("python3", ["-c", `import zipfile; z=zipfile.ZipFile('${path.join(work, "x.docx")}','w'); z.writestr('a.txt','hi'); z.close()`]);
    expect(refusedCode(path.join(work, "x.docx"))).toBe("content_mismatch");
    expect(refusedCode(write(work, "nul.txt", Buffer.from("a\0b")))).toBe("content_mismatch");
    expect(refusedCode(write(work, "latin.txt", Buffer.from([0x63, 0x61, 0x66, 0xe9])))).toBe("content_mismatch");
  });

  it("secret_detected in text files", () => {
    const secrets = [
      "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n",
      "key=AKIAQ3RZ7XK2MNVW4TLP\n",
      "token ghp_R8xk2LmQ9vTz4WpN7bYc3HsJ6dFa1GqE5uKo\n",
      "xoxb-123456789012-1234567890123-Rk8xLmQ9vTz4WpN7bYc3HsJ6\n",
      "sk-ant-api03-Rk8xLmQ9vTz4WpN7bYc3HsJ6dFa1GqE5uKoR0tPz2Lw8\n",
      "OPENAI=sk-proj-Rk8xLmQ9vTz4WpN7bYc3HsJ6dFa1GqE5uKoR0tPz2Lw8Vn6Bq4Yt\n",
      "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U\n",
    ];
    secrets.forEach((s, i) => expect(refusedCode(write(work, `s${i}.md`, s))).toBe("secret_detected"));
  });
});

describe("prepare: names", () => {
  const nameOf = (file: string) => json(prep(["--json", file])).media[0]!.name;

  it("sanitises RTL overrides, zero-width, spaces, leading dashes, dots, case", () => {
    expect(nameOf(write(work, "\u202Eevil\u200Bgnp.png", png(11)))).toBe("evilgnp.png");
    expect(nameOf(write(work, "My Report (final).PNG", png(12)))).toBe("My-Report-final.png");
    expect(nameOf(write(work, "--rf.png", png(13)))).toBe("rf.png");
    expect(nameOf(write(work, "a.b.c.png", png(14)))).toBe("a-b-c.png");
    expect(nameOf(write(work, "नमस्ते दुनिया.png", png(15)))).toBe("नमस्ते-दुनिया.png");
    expect(nameOf(write(work, "CON.png", png(16)))).toBe("CON_.png");
  });

  it("a 300-byte name becomes at most 200 bytes with its extension", () => {
    const long = `${"é".repeat(125)}.png`;
    const name = nameOf(write(work, long, png(17)));
    expect(Buffer.byteLength(name)).toBeLessThanOrEqual(200);
    expect(name.endsWith(".png")).toBe(true);
  });

  it("a leading-dash argument after -- is a file, before it an option", () => {
    write(work, "-x.png", png(18));
    expect(prep(["-x.png"]).code).toBe(2);
    const r = prep(["--", "-x.png"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`MEDIA:${path.join(h.outbox, "x.png")}\n`);
  });

  it("printed paths survive the gateway's extraction for every allowed extension", () => {
    const all = ["png", "jpg", "jpeg", "gif", "webp", "pdf", "mp4", "mov", "webm", "mp3", "m4a", "ogg", "opus", "wav", "flac", "docx", "xlsx", "pptx", "txt", "csv", "md"];
    for (const ext of all) {
      for (const stem of ["plain", "a [weird] name, with: stuff; ok", "日本語「テスト」", "x.tar_y"]) {
        const line = `MEDIA:${path.join(h.outbox, outputName(`${stem}.${ext}`))}`;
        for (const v of ["classic", "newer"] as const) expect(extractMediaPaths(`Here it is:\n${line}\n`, v)).toEqual([line.slice(6)]);
      }
    }
  });
});

describe("prepare: usage and outbox errors", () => {
  it("no input, unknown option, bad --allow, bad size are exit 2", () => {
    expect(prep([]).code).toBe(2);
    expect(prep(["--bogus", "x.png"]).code).toBe(2);
    expect(prep(["--allow", "exe", "x.png"]).code).toBe(2);
    expect(prep(["--max-size", "lots", "x.png"]).code).toBe(2);
    expect(prep(["--platform", "myspace", "x.png"]).code).toBe(2);
  });

  it("refuses an unsafe outbox with exit 2 and publishes nothing", () => {
    const f = write(work, "a.png", png(19));
    const wide = path.join(h.home, "wide");
    fs.mkdirSync(wide, { mode: 0o777 });
    fs.chmodSync(wide, 0o777);
    let r = prep(["--outbox", wide, f]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("outbox_unsafe");
    fs.symlinkSync(h.home, path.join(h.home, "link"));
    expect(prep(["--outbox", path.join(h.home, "link"), f]).code).toBe(2);
    r = prep(["--outbox", path.join(h.home, "a,b"), f]);
    expect(r.code).toBe(2);
    expect(prep(["--outbox", path.join(h.home, "has space"), f]).code).toBe(2);
    expect(prep(["--outbox", path.join(h.home, "x.tar_y"), f]).code).toBe(2);
    expect(fs.readdirSync(wide)).toEqual([]);
    // Nothing was made for any of them: no outbox, no state beside it.
    expect(fs.readdirSync(h.home).sort()).toEqual(["link", "wide", "work"]);
  });

  it("config file: unknown keys and bad values are clear errors", () => {
    const cfg = write(h.home, "c.json", JSON.stringify({ outbx: "/tmp" }));
    const r = prep(["--config", cfg, "x.png"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("unknown key");
    write(h.home, "d.json", JSON.stringify({ maxSize: "huge" }));
    expect(prep(["--config", path.join(h.home, "d.json"), "x.png"]).code).toBe(2);
    write(h.home, "e.json", JSON.stringify({ maxSize: "100", allow: ["txt"] }));
    expect(refusedCode(write(work, "t.txt", "a".repeat(200)), ["--config", path.join(h.home, "e.json")])).toBe("too_large");
  });

  it("MEDIA_OUTBOX_DIR chooses the outbox when no flag is given", () => {
    const dir = path.join(h.home, "ob");
    const r = cli(["prepare", write(work, "a.png", png(20))], { env: { ...h.env, MEDIA_OUTBOX_DIR: dir }, cwd: work });
    expect(r.stdout).toBe(`MEDIA:${path.join(dir, "a.png")}\n`);
  });
});
