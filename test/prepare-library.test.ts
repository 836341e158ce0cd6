// The packaged library, logging, platform overrides, and the reason codes
// that need a moving or unusual source.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { BIN, NOTHING_LEFT, ROOT, cli, keepRewriting, leftBehind, makeHome, png, write } from "./helpers.js";

let h: ReturnType<typeof makeHome>;
beforeEach(() => {
  h = makeHome();
});
afterEach(() => h.cleanup());

/** A consumer project whose node_modules/media-outbox is this package. */
function consumer(): string {
  const dir = path.join(h.home, "app");
  fs.mkdirSync(path.join(dir, "node_modules"), { recursive: true });
  fs.symlinkSync(ROOT, path.join(dir, "node_modules", "media-outbox"));
  return dir;
}

describe("library API", () => {
  it("require and import of the package name return the typed prepare()", () => {
    const app = consumer();
    const src = write(h.home, "chart.png", png(1));
    const outbox = path.join(h.home, "ob");
    write(app, "use.cjs", `require("media-outbox").prepare([process.argv[2]], { outbox: process.argv[3] }).then((r) => console.log(JSON.stringify(r)));`);
    const cjs = JSON.parse(execFileSync(process.execPath, ["use.cjs", src, outbox], { cwd: app, env: h.env, encoding: "utf8" }));
    expect(cjs.success).toBe(true);
    expect(cjs.media[0].path).toBe(path.join(outbox, "chart.png"));
    expect(fs.readFileSync(cjs.media[0].path).equals(fs.readFileSync(src))).toBe(true);

    write(app, "use.mjs", `import { prepare, FatalError } from "media-outbox";\ntry { await prepare([], {}); } catch (e) { console.log(e instanceof FatalError, e.code); }`);
    expect(execFileSync(process.execPath, ["use.mjs"], { cwd: app, env: h.env, encoding: "utf8" })).toBe("true usage\n");
  });

  it("its type declarations resolve from the package name", () => {
    const app = consumer();
    write(
      app,
      "use.ts",
      `import { prepare, type PrepareReport } from "media-outbox";\nexport const run = (f: string): Promise<PrepareReport> => prepare([f], { platform: "telegram" });\n`,
    );
    write(app, "tsconfig.json", JSON.stringify({ compilerOptions: { strict: true, module: "node16", moduleResolution: "node16", noEmit: true, types: ["node"], skipLibCheck: false, typeRoots: [path.join(ROOT, "node_modules/@types")] }, files: ["use.ts"] }));
    const r = spawnSync(process.execPath, [path.join(ROOT, "node_modules/typescript/bin/tsc"), "-p", app], { encoding: "utf8" });
    expect(r.stdout + r.stderr).toBe("");
    expect(r.status).toBe(0);
  });
});

describe("prepare: logging", () => {
  it("--log-file appends synchronous JSON lines with escaped sources; stdout keeps only MEDIA: lines", () => {
    const log = path.join(h.home, "logs", "mo.log");
    const good = write(h.home, "a.png", png(2));
    const r = cli(["prepare", "--log-file", log, good, path.join(h.home, "bad\u202ename.png")], { env: h.env });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe(`MEDIA:${path.join(h.outbox, "a.png")}\n`);
    const lines = fs.readFileSync(log, "utf8").trim().split("\n").map((l) => JSON.parse(l));
    expect(lines.map((l) => l.event)).toEqual(["published", "refused"]);
    expect(lines[1].source).toContain("\\u{202e}");
    expect(fs.readFileSync(log, "utf8")).not.toContain("\u202e");
  });

  it("--log-file creates a missing file 0600 and its missing directories 0700, as the README says", () => {
    const log = path.join(h.home, "no", "such", "dir", "mo.log");
    const r = cli(["prepare", "--log-file", log, write(h.home, "c.png", png(4))], { env: h.env });
    expect(r.code, r.stderr).toBe(0);
    for (const dir of ["no", "no/such", "no/such/dir"]) expect(fs.statSync(path.join(h.home, dir)).mode & 0o777, dir).toBe(0o700);
    expect(fs.statSync(log).mode & 0o777).toBe(0o600);
    const row = fs.readFileSync(path.join(ROOT, "README.md"), "utf8").split("\n").find((l) => l.startsWith("| `--log-file FILE` | append pino JSON log lines to FILE"));
    expect(row).toContain("creating it (mode 0600) and any missing directory above it (0700)");
  });

  it("--log-json writes pino lines to stderr, never to stdout", () => {
    const r = cli(["prepare", "--log-json", write(h.home, "b.png", png(3))], { env: h.env });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^MEDIA:\S+\n$/);
    expect(JSON.parse(r.stderr.trim()).event).toBe("published");
  });
});

describe("prepare: platform limits", () => {
  it("config overrides a platform's limit per kind of media, and --platform applies it", () => {
    const cfg = write(h.home, "c.json", JSON.stringify({ platforms: { discord: "200", telegram: { image: "300" } } }));
    const img = write(h.home, "p.png", png(4, 32));
    expect(fs.statSync(img).size).toBeGreaterThan(300);
    const txt = write(h.home, "t.txt", "hello ".repeat(100));
    const run = (platform: string, file: string) => cli(["prepare", "--json", "--config", cfg, "--platform", platform, file], { env: h.env });
    expect(JSON.parse(run("discord", txt).stdout).media_dropped[0].code).toBe("too_large");
    expect(JSON.parse(run("telegram", img).stdout).media_dropped[0].code).toBe("too_large");
    expect(run("telegram", txt).code).toBe(0);
    expect(run("slack", img).code).toBe(0);
  });
});

describe("prepare: moving and unusual sources", () => {
  it("changed_during_copy when the file is rewritten in place while copied", async () => {
    const f = path.join(h.home, "busy.txt");
    const block = Buffer.alloc(1 << 20, "a");
    fs.writeFileSync(f, Buffer.concat(Array.from({ length: 40 }, () => block)));
    const stopRewriting = keepRewriting(f);
    const out = await new Promise<string>((resolve) => {
      const p = spawn(process.execPath, [BIN, "prepare", "--json", f], { env: h.env });
      let text = "";
      p.stdout.on("data", (c) => (text += c));
      p.on("close", () => resolve(text));
    });
    await stopRewriting();
    expect(JSON.parse(out).media_dropped[0].code).toBe("changed_during_copy");
    // 40 MiB of text is checked on two threads: the refusal ends the worker and leaves nothing.
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
  });

  it("io_error when the operating system cannot resolve the path", () => {
    // A component longer than NAME_MAX: ENAMETOOLONG, not a missing file.
    const r = cli(["prepare", "--json", path.join(h.home, `${"a".repeat(300)}.png`)], { env: h.env });
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout).media_dropped[0].code).toBe("io_error");
  });
});

describe("prepare: credential entries that are links", () => {
  it("denies a file reached directly in the place a credential entry links to", () => {
    const vault = path.join(h.home, "vault");
    fs.mkdirSync(vault);
    fs.symlinkSync(vault, path.join(h.home, ".ssh"));
    const key = write(vault, "id.txt", "key\n");
    const secrets = path.join(h.home, "srv-secrets");
    fs.mkdirSync(secrets);
    fs.mkdirSync(path.join(h.home, ".hermes"), { recursive: true });
    const envFile = write(secrets, "env.txt", "A=1\n");
    fs.symlinkSync(envFile, path.join(h.home, ".hermes", ".env"));
    for (const file of [key, envFile]) {
      const r = cli(["prepare", "--json", file], { env: h.env });
      expect(JSON.parse(r.stdout).media_dropped[0].code, file).toBe("denied_source");
    }
    expect(cli(["prepare", write(h.home, "fine.txt", "ok\n")], { env: h.env }).code).toBe(0);
  });
});

describe("prepare: refusals leave nothing behind", () => {
  it("after every kind of refusal in one call, the outbox, staging and ledger hold nothing", () => {
    const dir = path.join(h.home, "in");
    fs.mkdirSync(dir);
    fs.mkdirSync(path.join(dir, "folder.png"));
    execFileSync("mkfifo", [path.join(dir, "pipe.png")]);
    const linked = write(dir, "orig.png", png(9));
    fs.linkSync(linked, path.join(dir, "alias.png"));
    fs.mkdirSync(path.join(h.home, ".ssh"));
    fs.symlinkSync(write(path.join(h.home, ".ssh"), "id.txt", "key\n"), path.join(dir, "innocent.txt"));
    execFileSync("python3", ["-c", `import zipfile; z=zipfile.ZipFile('${path.join(dir, "zip.docx")}','w'); z.writestr('a.txt','hi'); z.close()`]);
    const inputs = [
      path.join(dir, "bad\nname.png"),
      path.join(dir, "bad\u2028name.png"),
      path.join(dir, "MEDIA:/etc/x.png"),
      "/etc/hostname",
      "/dev/zero",
      path.join(dir, "innocent.txt"),
      path.join(dir, "missing.png"),
      path.join(dir, "folder.png"),
      path.join(dir, "pipe.png"),
      write(dir, "empty.png", ""),
      write(dir, "script.sh", "echo hi\n"),
      write(dir, "big.txt", "x".repeat(2000)),
      write(dir, "fake.pdf", "not a pdf\n"),
      write(dir, "elf.png", fs.readFileSync(process.execPath).subarray(0, 900)),
      path.join(dir, "zip.docx"),
      write(dir, "leak.md", "token ghp_R8xk2LmQ9vTz4WpN7bYc3HsJ6dFa1GqE5uKo\n"),
      path.join(dir, "alias.png"),
    ];
    const r = cli(["prepare", "--json", "--max-size", "1000", "--allow", "png,txt,pdf,md,docx", ...inputs], { env: h.env });
    expect(r.code).toBe(1);
    const codes = JSON.parse(r.stdout).media_dropped.map((d: { code: string }) => d.code);
    expect(codes).toEqual([
      "unsafe_path_chars",
      "unsafe_path_chars",
      "media_directive_in_path",
      "denied_source",
      "denied_source",
      "denied_source",
      "not_found",
      "not_regular_file",
      "not_regular_file",
      "empty_file",
      "extension_not_allowed",
      "too_large",
      "content_mismatch",
      "content_mismatch",
      "content_mismatch",
      "secret_detected",
      "denied_source",
    ]);
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
    // The same through standard input: a bad name, content that is not what the name says.
    for (const [name, bytes, code] of [
      ["bad\u2028name.png", png(1), "unsafe_path_chars"],
      ["elf.png", fs.readFileSync(process.execPath).subarray(0, 900), "content_mismatch"],
    ] as const) {
      const piped = cli(["prepare", "--json", "--stdin", "--name", name], { env: h.env, input: bytes });
      expect([piped.code, JSON.parse(piped.stdout).media_dropped[0].code]).toEqual([1, code]);
    }
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
  });
});

describe("reuse against the janitor", () => {
  it("a file the janitor takes out of the outbox while prepare refreshes it for reuse is published anew, not reused", async () => {
    const { prepare } = await import("../src/prepare/prepare.js");
    const work = h.work;
    const src = write(work, "chart.png", png(3));
    const first = await prepare(src, { env: h.env });
    const published = first.media[0]!.path;
    const taken = path.join(h.home, "taken.png");
    const futimes = fs.futimesSync;
    // The janitor's take (rename out of the outbox) lands between prepare's hash of the outbox file and its refresh.
    const spy = vi.spyOn(fs, "futimesSync").mockImplementation((fd, atime, mtime) => {
      if (fs.readlinkSync(`/proc/self/fd/${fd}`) === published && fs.existsSync(published)) fs.renameSync(published, taken);
      futimes(fd, atime, mtime);
    });
    try {
      const again = await prepare(src, { env: h.env });
      expect(again.media[0]).toMatchObject({ reused: false });
      // What the line names is there, with its bytes, whatever the janitor does with what it took.
      fs.rmSync(taken);
      expect(fs.readFileSync(again.media[0]!.path)).toEqual(png(3));
    } finally {
      spy.mockRestore();
    }
  });
});
