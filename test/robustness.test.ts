// Configuration and arguments never hang or crash; stdout that goes away is
// said; output names are NFC and keep what a person wrote.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { buildSync } from "esbuild";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isUtf8 } from "node:buffer";
import { commandLineArguments, decodeSurrogateEscape } from "../src/cli/argv.js";
import { hostFailure, isHostErrno } from "../src/core/errors.js";
import { parseSize } from "../src/core/units.js";
import { outputName } from "../src/prepare/name.js";
import { BIN, ROOT, makeHome, png, write } from "./helpers.js";
import { WatchProcess, waitUntil } from "./watch-helpers.js";

let h: ReturnType<typeof makeHome>;
beforeEach(() => {
  h = makeHome();
  fs.mkdirSync(path.join(h.home, ".hermes"), { recursive: true, mode: 0o700 });
});
afterEach(() => h.cleanup());

/** The CLI with a deadline: a command that waits on a FIFO must fail the test, not hang it. */
function cli(args: string[], env: NodeJS.ProcessEnv = h.env, input?: Buffer) {
  const r = spawnSync(process.execPath, [BIN, ...args], { env, input, encoding: "utf8", timeout: 15_000, killSignal: "SIGKILL" });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, hung: r.signal === "SIGKILL" };
}

function expectOneLineRefusal(r: ReturnType<typeof cli>, what: RegExp): void {
  expect(r.hung, "the command hung").toBe(false);
  expect(r.code, r.stderr).toBe(2);
  expect(r.stderr).toMatch(what);
  expect(r.stderr.trimEnd().split("\n").length, r.stderr).toBe(1);
  expect(r.stderr).not.toMatch(/\n\s+at |internal error/);
}

describe("operator-named files that are not regular files", () => {
  function kinds(): Record<string, { file: string; is: RegExp }> {
    const fifo = path.join(h.home, "fifo.json");
    execFileSync("mkfifo", [fifo]);
    const dir = path.join(h.home, "dir.json");
    fs.mkdirSync(dir);
    const link = path.join(h.home, "link.json");
    fs.symlinkSync(fifo, link);
    return {
      FIFO: { file: fifo, is: /is a FIFO/ },
      device: { file: "/dev/zero", is: /is a device/ },
      directory: { file: dir, is: /is a directory/ },
      "link to a FIFO": { file: link, is: /is a FIFO \(through a symbolic link\)/ },
    };
  }

  it("a config file (by --config, MEDIA_OUTBOX_CONFIG, or at the default path) is refused at once", () => {
    const src = write(h.home, "a.png", png(1));
    for (const [kind, { file, is }] of Object.entries(kinds())) {
      expectOneLineRefusal(cli(["prepare", "--config", file, src]), new RegExp(`config_invalid: config file .* ${is.source}`));
      expectOneLineRefusal(cli(["status"], { ...h.env, MEDIA_OUTBOX_CONFIG: file }), is);
      void kind;
    }
    execFileSync("mkfifo", [path.join(h.home, ".hermes", "media-outbox.json")]);
    expectOneLineRefusal(cli(["janitor"]), /config file .*media-outbox\.json is a FIFO/);
    // Nothing was published or made.
    expect(fs.existsSync(h.outbox)).toBe(false);
  });

  it("a log file (by --log-file or the config's logFile) is refused at once", () => {
    const src = write(h.home, "a.png", png(1));
    for (const { file, is } of Object.values(kinds())) {
      expectOneLineRefusal(cli(["prepare", "--log-file", file, src]), new RegExp(`log file .* ${is.source}`));
      const config = write(h.home, "c.json", JSON.stringify({ logFile: file }));
      expectOneLineRefusal(cli(["janitor", "--config", config]), is);
    }
  });
});

describe("a log file that cannot be written", () => {
  it("under a regular file, or where the user may not write, is config_invalid naming it, never an internal error", () => {
    const src = write(h.home, "a.png", png(1));
    const file = write(h.home, "file", "x");
    for (const log of [path.join(file, "mo.log"), path.join(file, "logs", "mo.log")]) {
      expectOneLineRefusal(cli(["prepare", "--log-file", log, src]), /config_invalid: cannot write log file .*\/file\/.*mo\.log: a component of its path is not a directory; name a file the current user/);
      expectOneLineRefusal(cli(["janitor", "--config", write(h.home, "c.json", JSON.stringify({ logFile: log }))]), /cannot write log file/);
    }
    expect(fs.readFileSync(file, "utf8")).toBe("x");
    expect(fs.existsSync(h.outbox)).toBe(false);
    if (process.getuid?.() !== 0) return void console.warn("needs root to run the CLI as nobody: the permission case is skipped");
    const home = nobodysHome();
    try {
      for (const log of [path.join(h.home, "mo.log"), path.join(h.home, "logs", "mo.log")]) {
        const r = cliAsNobody(["watch", "--log-file", log], home);
        expect(r.code, r.stderr).toBe(2);
        expect(r.stderr).toMatch(/config_invalid: cannot write log file .*mo\.log: permission denied; name a file the current user \(uid 65534\) can write/);
        expect(r.stderr).not.toMatch(/internal error/);
      }
    } finally {
      fs.rmSync(home, { recursive: true, force: true });
    }
  });
});

describe("a bad value in the config file", () => {
  it("names the file and the key, whichever key it is", () => {
    for (const [value, says] of [
      [{ logLevel: "loud" }, /logLevel must be one of .*, got "loud"/],
      [{ watch: { keep: "yes" } }, /watch\.keep must be true or false/],
      [{ watch: { drop: "/srv/drop" } }, /watch\.drop must be a list of paths/],
      [{ watch: { drop: ["drop"] } }, /watch\.drop must be an absolute path \(or start with ~\/\), got "drop"/],
      [{ watch: { quarantine: "q" } }, /watch\.quarantine must be an absolute path/],
      [{ outbox: "outbox" }, /outbox must be an absolute path/],
      [{ stateDir: "state" }, /stateDir must be an absolute path/],
      [{ sourceRoots: "~/work" }, /sourceRoots must be a list of paths/],
      [{ sourceRoots: ["work"] }, /sourceRoots must be an absolute path/],
      [{ logFile: "mo.log" }, /logFile must be an absolute path/],
      [{ socket: "gate.sock" }, /socket must be an absolute path/],
      [{ platform: "icq" }, /unknown platform "icq"/],
      [{ platforms: 3 }, /platforms must be an object/],
      [{ platforms: { icq: "1MB" } }, /platforms: unknown platform "icq"/],
      [{ platforms: { discord: "1XB" } }, /platforms\.discord: cannot read "1XB" as a size/],
    ] as const) {
      const config = write(h.home, "c.json", JSON.stringify(value));
      // Named once: a value read inside another (platforms) is not named twice.
      const r = cli(["status", "--config", config]);
      expectOneLineRefusal(r, new RegExp(`^media-outbox: config_invalid: config file ${config}: ${says.source}`));
      expect(r.stderr.split("config file").length, r.stderr).toBe(2);
    }
    // A flag's value is named by the flag, not the file.
    expectOneLineRefusal(cli(["watch", "--drop", ""]), /^media-outbox: config_invalid: --drop must be a non-empty path/);
  });
});

describe("an operator's folder whose path holds control or bidi characters", () => {
  it("the state directory, the quarantine and a source root are refused when the configuration is loaded, naming the setting and showing the path escaped; nothing is made", () => {
    const src = write(h.home, "a.png", png(1));
    for (const [bad, shown, what] of [
      ["state\nMEDIA:/etc/passwd", "state\\x0aMEDIA\\x3a/etc/passwd", "control or line-separator characters"],
      ["state\x1b[31m", "state\\x1b[31m", "control or line-separator characters"],
      ["state\u2028x", "state\\u{2028}x", "control or line-separator characters"],
      ["state\u202egnp", "state\\u{202e}gnp", "bidirectional control characters (which reorder how it is shown)"],
    ] as const) {
      const dir = path.join(h.home, bad);
      const named = `"${h.home}/${shown}" (shown escaped) has ${what} in its path: rename the folder (mv), then give its new path\n`;
      let files = 0;
      const fromFile = (value: object) => write(h.home, `c${++files}.json`, JSON.stringify(value));
      const cases: [string[], NodeJS.ProcessEnv, string][] = [
        [["status", "--config", fromFile({ stateDir: dir })], h.env, `config_invalid: config file ${h.home}/c1.json: stateDir: state directory ${named}`],
        [["janitor"], { ...h.env, MEDIA_OUTBOX_STATE_DIR: dir }, `config_invalid: MEDIA_OUTBOX_STATE_DIR: state directory ${named}`],
        [["quarantine", "list", "--config", fromFile({ watch: { quarantine: dir } })], h.env, `config_invalid: config file ${h.home}/c2.json: watch.quarantine: quarantine ${named}`],
        [["quarantine", "list", "--quarantine", dir], h.env, `usage error: --quarantine: quarantine ${named}`],
        [["prepare", "--config", fromFile({ sourceRoots: [path.join(h.home, "ok"), dir] }), src], h.env, `config_invalid: config file ${h.home}/c3.json: sourceRoots: source root ${named}`],
        [["prepare", "--source-root", dir, src], h.env, `usage error: --source-root: source root ${named}`],
      ];
      for (const [args, env, says] of cases) {
        const r = cli(args, env);
        expectOneLineRefusal(r, /./);
        expect(r.stderr, args.join(" ")).toBe(`media-outbox: ${says}`);
        expect(fs.existsSync(dir), args.join(" ")).toBe(false);
        expect(fs.existsSync(h.outbox), args.join(" ")).toBe(false);
      }
    }
  });
});

describe("sizes and durations out of range", () => {
  it("are usage errors naming the limit, from flags and from the config file", () => {
    expectOneLineRefusal(cli(["janitor", "--retention", "300000000d"]), /usage error: retention: "300000000d" is more than the limit of 36500d \(100 years\)/);
    expectOneLineRefusal(cli(["janitor", "--max-bytes", "99999999999999999999TB"]), /max-bytes: "99999999999999999999TB" is more than the limit of 1PiB/);
    expectOneLineRefusal(cli(["janitor", "--min-age", `${"9".repeat(400)}s`]), /min-age: .* is more than the limit/);
    expectOneLineRefusal(cli(["prepare", "--max-size", "2048TiB", "x.png"]), /max-size: "2048TiB" is more than the limit of 1PiB/);
    // The limit as named reads back: 1PiB is taken, 2PiB is past it.
    expectOneLineRefusal(cli(["prepare", "--max-size", "2PiB", "x.png"]), /max-size: "2PiB" is more than the limit of 1PiB/);
    expect(parseSize("1PiB")).toBe(1024 ** 5);
    expect(parseSize("1PB")).toBe(1e15);
    expectOneLineRefusal(cli(["watch", "--settle", "2h"]), /settle: "2h" is more than the limit of 1h/);
    for (const [key, value, limit] of [
      ["janitor", { retention: "300000000d" }, /retention: "300000000d" is more than the limit/],
      ["janitor", { retention: 1e300 }, /retention: 1e\+300 is more than the limit/],
      ["janitor", { maxBytes: "99999999999999999999TB" }, /max-bytes: .* is more than the limit of 1PiB/],
      ["maxSize", 1e30, /max-size: 1e\+30 is more than the limit of 1PiB/],
    ] as const) {
      const config = write(h.home, "c.json", JSON.stringify({ [key]: value }));
      expectOneLineRefusal(cli(["janitor", "--config", config]), new RegExp(`config_invalid: config file .*${limit.source}`));
    }
  });
});

/** A directory of its own for user nobody (65534), who cannot enter a test's home (0700, root's). */
function nobodysHome(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "mo-nobody-"));
  fs.chownSync(dir, 65534, 65534);
  return dir;
}

/** The CLI as user nobody, with a home of its own. */
function cliAsNobody(args: string[], home: string) {
  const env = { ...h.env, HOME: home, HERMES_HOME: path.join(home, ".hermes"), MEDIA_OUTBOX_SYSTEM_CONFIG: path.join(home, "no-system-config.json"), HERMES_MANAGED_DIR: path.join(home, "managed") };
  const r = spawnSync("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", process.execPath, BIN, ...args], { env, encoding: "utf8", timeout: 15_000, killSignal: "SIGKILL" });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, hung: r.signal === "SIGKILL" };
}

describe("an outbox or state path that cannot be reached", () => {
  it("under a regular file is a refusal naming the path, for every command, never an internal error", () => {
    const file = write(h.home, "file", "x");
    const src = write(h.home, "a.png", png(1));
    const under = path.join(file, "outbox");
    const notADir = /outbox_unsafe: outbox .*\/file\/outbox cannot be used: a component of its path is not a directory; point it at a directory/;
    for (const args of [["prepare", "--outbox", under, src], ["janitor", "--outbox", under], ["watch", "--outbox", under], ["quarantine", "list", "--outbox", under]]) {
      expectOneLineRefusal(cli(args), notADir);
    }
    expectOneLineRefusal(cli(["watch", "--quarantine", path.join(file, "q")]), /state_unsafe: quarantine .*\/file\/q cannot be used: a component of its path is not a directory/);
    expectOneLineRefusal(cli(["janitor"], { ...h.env, MEDIA_OUTBOX_STATE_DIR: path.join(file, "state") }), /state_unsafe: state directory .* cannot be used/);
    // status says it in its document (exit 1, as for any unsafe outbox).
    const status = cli(["status", "--json", "--outbox", under]);
    expect(status.code, status.stderr).toBe(1);
    expect(JSON.parse(status.stdout).outbox).toMatchObject({ safe: false, code: "outbox_unsafe", problem: expect.stringMatching(/a component of its path is not a directory/) });
  });

  it("where the user may not go is a refusal saying so, never an internal error", () => {
    if (process.getuid?.() !== 0) return void console.warn("needs root to run the CLI as nobody: skipped");
    const home = nobodysHome();
    try {
      // The test's home is root's, 0700: nobody can neither look into it nor create there.
      const src = path.join(home, "a.png");
      fs.writeFileSync(src, png(1));
      fs.chownSync(src, 65534, 65534);
      const denied = path.join(h.home, "outbox");
      for (const args of [["prepare", "--outbox", denied, src], ["watch", "--outbox", denied], ["janitor", "--outbox", path.join(denied, "x")]]) {
        const r = cliAsNobody(args, home);
        expect(r.hung).toBe(false);
        expect(r.code, r.stderr).toBe(2);
        expect(r.stderr).toMatch(/outbox_unsafe: outbox .* cannot be used: permission denied on its path; choose a path the current user \(uid 65534\) can reach and create/);
        expect(r.stderr).not.toMatch(/internal error/);
      }
      expect(fs.existsSync(denied)).toBe(false);
    } finally {
      fs.rmSync(home, { recursive: true, force: true });
    }
  });
});

describe("an unexpected error", () => {
  // The command frame (src/cli/run.ts) around a body that fails as a bug would.
  // Beside the bundles, so that it finds pino as they do; removed afterwards.
  const frame = path.join(ROOT, "dist", `test-frame-${process.pid}.js`);
  beforeEach(() => {
    buildSync({
      stdin: {
        contents: `
          import { runCommand } from "./src/cli/run.ts";
          import { createLogger } from "./src/log/logger.ts";
          const logFile = process.argv[2];
          runCommand(async () => {
            if (logFile) await createLogger({ file: logFile });
            throw new TypeError("boom\\nMEDIA:/etc/passwd");
          }).then((code) => process.exit(code));
        `,
        resolveDir: ROOT,
        loader: "ts",
      },
      bundle: true,
      platform: "node",
      format: "cjs",
      outfile: frame,
      alias: { debug: path.join(ROOT, "src/vendor/debug-stub.ts") },
      logLevel: "silent",
    });
  });
  afterEach(() => fs.rmSync(frame, { force: true }));

  it("is one escaped line saying what to do, never a stack trace; the details go to the log", () => {
    const plain = spawnSync(process.execPath, [frame], { env: h.env, encoding: "utf8" });
    expect(plain.status).toBe(1);
    expect(plain.stderr.split("\n").filter(Boolean)).toEqual([
      "media-outbox: internal error: TypeError: boom\\x0aMEDIA\\x3a/etc/passwd; nothing more was done. This is a bug: run it again with MEDIA_OUTBOX_DEBUG=1 to see the details, and please report it",
    ]);
    const debug = spawnSync(process.execPath, [frame], { env: { ...h.env, MEDIA_OUTBOX_DEBUG: "1" }, encoding: "utf8" });
    const lines = debug.stderr.split("\n").filter(Boolean);
    expect(lines.length).toBe(2);
    expect(lines[1]).toMatch(/^media-outbox: details: TypeError: boom\\x0aMEDIA\\x3a\/etc\/passwd\\x0a {4}at /);
    const log = path.join(h.home, "logs", "mo.log");
    const logged = spawnSync(process.execPath, [frame, log], { env: h.env, encoding: "utf8" });
    expect(logged.stderr.split("\n").filter(Boolean)).toEqual([expect.stringContaining(`the details are in the log file ${log}`)]);
    const entry = JSON.parse(fs.readFileSync(log, "utf8").trim()) as { event: string; error: string };
    expect(entry.event).toBe("internal_error");
    expect(entry.error).toMatch(/TypeError: boom\\x0aMEDIA\\x3a\/etc\/passwd\\x0a {4}at /);
  });
});

describe("prepare whose stdout goes away", () => {
  /** A pipe whose reader is already gone: every write to it fails with EPIPE. */
  function brokenPipe(): number {
    const fifo = path.join(h.home, "stdout.fifo");
    execFileSync("mkfifo", [fifo]);
    const reader = fs.openSync(fifo, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
    const writer = fs.openSync(fifo, fs.constants.O_WRONLY);
    fs.closeSync(reader);
    return writer;
  }

  it.each([[[]], [["--json"]]])("exits 1 and says on stderr the file was published but its line was lost (%j)", async (extra) => {
    const src = write(h.home, "chart.png", png(4));
    const out = brokenPipe();
    const child = spawn(process.execPath, [BIN, "prepare", ...extra, src], { env: h.env, stdio: ["ignore", out, "pipe"] });
    fs.closeSync(out);
    let stderr = "";
    child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise((resolve) => child.on("exit", resolve));
    expect(code).toBe(1);
    expect(stderr).toMatch(new RegExp(`published 1 file\\(s\\), but their MEDIA: line was lost: standard output could not be written \\(EPIPE\\)\\. Published: ${h.outbox}/chart\\.png;`));
    expect(fs.readdirSync(h.outbox)).toEqual(["chart.png"]);
  });

  it("into a file on a full disk (/dev/full: ENOSPC): the same exit 1 and line, never an internal error", () => {
    const src = write(h.home, "chart.png", png(4));
    const full = fs.openSync("/dev/full", "w");
    try {
      const r = spawnSync(process.execPath, [BIN, "prepare", src], { env: h.env, stdio: ["ignore", full, "pipe"], encoding: "utf8" });
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(new RegExp(`^media-outbox: published 1 file\\(s\\), but their MEDIA: line was lost: standard output could not be written \\(ENOSPC\\)\\. Published: ${h.outbox}/chart\\.png;[^\\n]*\\n$`));
      expect(r.stderr).not.toContain("internal error");
      // Any other command too: its output is said to be lost, why in words.
      const status = spawnSync(process.execPath, [BIN, "status"], { env: h.env, stdio: ["ignore", full, "pipe"], encoding: "utf8" });
      expect(status.status).toBe(1);
      expect(status.stderr).toBe("media-outbox: could not write to standard output (ENOSPC: where it goes cannot take more), so part of the output was lost\n");
    } finally {
      fs.closeSync(full);
    }
    expect(fs.readdirSync(h.outbox)).toEqual(["chart.png"]);
  });
});

describe("output names", () => {
  it("are NFC after invisible characters go, keep the extension of a stem that had only marks or invisibles, and keep both sides of a backslash", () => {
    const composed = outputName("cafe\u200B\u0301.png");
    expect(composed).toBe("caf\u00e9.png");
    expect(composed).toBe(composed.normalize("NFC"));
    expect(outputName("\u202E.webm")).toBe("file.webm");
    expect(outputName("\u0301\u0308.png")).toBe("file.png");
    expect(outputName("\u200B\u200D.pdf")).toBe("file.pdf");
    expect(outputName("a\\b.mov")).toBe("a-b.mov");
    expect(outputName("dir/a\\b.mov")).toBe("a-b.mov");
    expect(outputName("\u0301leading.txt")).toBe("leading.txt");
    // A plain dot-name has no extension, as before.
    expect(outputName(".webm")).toBe("webm");
    // NFC whatever is cut: long names of decomposed letters stay composed and within the limit.
    const long = outputName(`${"e\u0301".repeat(150)}.txt`);
    expect(long).toBe(long.normalize("NFC"));
    expect(Buffer.byteLength(long)).toBeLessThanOrEqual(200);
  });

  it("prepare publishes them so, and says in a sentence that a name needs an extension", () => {
    const run = (name: string, bytes: Buffer | string) => cli(["prepare", "--stdin", "--name", name], h.env, Buffer.from(bytes));
    expect(run("cafe\u200B\u0301.png", png(5)).stdout).toBe(`MEDIA:${h.outbox}/caf\u00e9.png\n`);
    expect(run("\u202E.png", png(6)).stdout).toBe(`MEDIA:${h.outbox}/file.png\n`);
    expect(run("a\\b.txt", "text\n").stdout).toBe(`MEDIA:${h.outbox}/a-b.txt\n`);
    const noExt = run("README", "text\n");
    expect(noExt.code).toBe(1);
    expect(noExt.stderr).toMatch(/extension_not_allowed: the name has no extension, so nothing says what the file holds; give it one of these extensions: png jpg/);
  });
});

describe("host errors", () => {
  it("are told from refusals of the file by errno, and their message is escaped", () => {
    for (const code of ["ENOSPC", "EDQUOT", "EIO", "EMFILE", "ENFILE", "ENOMEM", "EROFS"]) expect(isHostErrno(code), code).toBe(true);
    for (const code of ["EACCES", "ENOENT", "ELOOP", undefined]) expect(isHostErrno(code), String(code)).toBe(false);
    const r = hostFailure(Object.assign(new Error("EIO: i/o error, read '/x/MEDIA:/etc\n'"), { code: "EIO" }));
    expect(r.code).toBe("host_error");
    expect(r.message).toBe("the host could not take the file (EIO: EIO: i/o error, read '/x/MEDIA\\x3a/etc\\x0a'); nothing was published; try again later");
  });
});

/**
 * Lowers the soft limit of open descriptors of process `pid` (prlimit(1), as
 * its own user may) so that exactly `free` descriptor numbers are left below it.
 */
function leaveDescriptors(pid: number, free: number): void {
  if (spawnSync("prlimit", ["--version"]).error) throw new Error("this test needs prlimit(1) (util-linux) to lower the watch's descriptor limit");
  const open = new Set(fs.readdirSync(`/proc/${pid}/fd`).map(Number));
  let limit = 0;
  for (let left = 0; left < free || open.has(limit); limit++) if (!open.has(limit)) left++;
  execFileSync("prlimit", ["--pid", String(pid), `--nofile=${limit}:`]);
}

describe("a drop that meets EMFILE (the watch's descriptors exhausted for real)", () => {
  it("stays without a receipt, is tried again, and is published once descriptors are free", async () => {
    const drop = path.join(h.home, "drop");
    const w = new WatchProcess(["--drop", drop, "--settle", "100ms"], h.env);
    try {
      await w.waitFor((e) => e.event === "ready", "ready");
      // A first drop, so the drop worker is up before descriptors run out.
      write(drop, "first.png", png(1));
      await w.waitFor((e) => e.event === "published" && e.name === "first.png", "first.png published");
      // One descriptor number left: a drop's source opens, its staging file cannot.
      leaveDescriptors(w.child.pid!, 1);
      write(drop, "chart.png", png(2));
      await waitUntil(() => /"drop_deferred".*"name":"chart\.png".*EMFILE/.test(w.stderr), "chart.png deferred on EMFILE");
      expect(fs.readdirSync(drop).filter((n) => !n.startsWith(".")).sort()).toEqual(["chart.png", "first.png.media"]);
      expect(w.events.some((e) => e.name === "chart.png")).toBe(false);
      execFileSync("prlimit", ["--pid", String(w.child.pid), "--nofile=1024:"]);
      const done = await w.waitFor((e) => e.name === "chart.png", "chart.png answered once descriptors are free");
      expect(done).toMatchObject({ event: "published" });
      expect(fs.readFileSync(path.join(drop, "chart.png.media"), "utf8")).toMatch(/^MEDIA:\/.*\/chart\.png\n$/);
      expect(fs.readFileSync(path.join(h.outbox, "chart.png"))).toEqual(png(2));
      expect(await w.stop()).toBe(0);
    } finally {
      await w.stop();
    }
  });
});

describe("command-line arguments that are not UTF-8 (cli/argv.ts)", () => {
  /** The bytes a surrogateescape reading stands for: what PEP 383's encoder gives back. */
  const encodeBack = (text: string) =>
    Buffer.concat(Array.from(text, (ch) => {
      const cp = ch.codePointAt(0)!;
      return cp >= 0xdc80 && cp <= 0xdcff ? Buffer.from([cp - 0xdc00]) : Buffer.from(ch);
    }));

  it("reads valid UTF-8 as it is and every other byte as U+DC00 + its value, giving the bytes back exactly (20,000 random byte strings)", () => {
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) >>> 0) >>> 24;
    for (let n = 0; n < 20_000; n++) {
      // Bytes drawn to hit lead bytes, continuations, overlongs, surrogates and truncations often.
      const bytes = Buffer.from(Array.from({ length: next() % 12 }, () => [0x41, 0x80, 0xbf, 0xc0, 0xc2, 0xe0, 0xed, 0xa0, 0xf0, 0xf4, 0xf5, 0xff, 0x9f, 0x90][next() % 14]!));
      const text = decodeSurrogateEscape(bytes);
      expect(encodeBack(text).equals(bytes), bytes.toString("hex")).toBe(true);
      if (isUtf8(bytes)) expect(text).toBe(bytes.toString("utf8"));
      else expect(/[\uDC80-\uDCFF]/.test(text)).toBe(true);
    }
    expect(decodeSurrogateEscape(Buffer.from([0x63, 0xc3, 0xa9, 0xe9, 0xed, 0xa0, 0x80]))).toBe("c\u00e9\udce9\udced\udca0\udc80");
  });

  it("decodes a megabyte of bytes that are not UTF-8 in one pass", () => {
    const text = decodeSurrogateEscape(Buffer.alloc(1 << 20, 0xff));
    expect(text.length).toBe(1 << 20);
    expect(text.charCodeAt(12345)).toBe(0xdcff);
  });

  it("leaves the arguments alone when none holds U+FFFD, and when the command line cannot be read", () => {
    const argv = ["prepare", "caf\ufffd.txt"];
    expect(commandLineArguments(["prepare", "x.png"], "/nonexistent")).toEqual(["prepare", "x.png"]);
    expect(commandLineArguments(argv, "/nonexistent")).toBe(argv);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "argv-"));
    try {
      const cmdline = path.join(dir, "cmdline");
      fs.writeFileSync(cmdline, Buffer.concat([Buffer.from("node\0--cpu-prof\0/x/bin/media-outbox\0prepare\0caf"), Buffer.from([0xe9]), Buffer.from(".txt\0")]));
      expect(commandLineArguments(argv, cmdline)).toEqual(["prepare", "caf\udce9.txt"]);
      // A real U+FFFD, given as its UTF-8 bytes, stays one.
      fs.writeFileSync(cmdline, Buffer.from("node\0/x/bin/media-outbox\0prepare\0caf\ufffd.txt\0"));
      expect(commandLineArguments(argv, cmdline)).toEqual(argv);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
