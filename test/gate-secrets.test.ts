// gate-secrets: what the gate's unit runs as root before the gate, to copy
// each agent's Hermes .env and credential stores for the content checks. The
// agent owns those files and may replace one with anything: a link to a file
// only root (or another agent) may read, a FIFO, a huge file, nothing at all.
// Each is tried here with real files and the real user nobody as the agent
// (the tests run as root); the CLI runs as a subprocess, bounded so that a
// hang fails the test.
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BIN } from "./helpers.js";

const NOBODY = 65534;
const DAEMON = 1;
const SECRET = "TELEGRAM_BOT_TOKEN=7000000001:AAHfakeTokenValueOnlyForTheseTests\n";

let base: string;
let agentHome: string;
let into: string;

function run(args: string[], opts: { asNobody?: boolean } = {}) {
  const argv = [BIN, "gate-secrets", ...args];
  const [cmd, cmdArgs] = opts.asNobody ? ["/usr/bin/setpriv", [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups", process.execPath, ...argv]] : [process.execPath, argv];
  // A bound on a hung run, so that it fails the test instead of the whole run (not a timing assertion).
  const r = spawnSync(cmd as string, cmdArgs as string[], { env: { PATH: process.env.PATH, HOME: base }, encoding: "utf8", timeout: 60_000, killSignal: "SIGKILL" });
  return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

/** A file of the agent's home, owned by `uid`, with `mode`. */
function file(name: string, content: string | Buffer, uid = NOBODY, mode = 0o600): string {
  const p = path.join(agentHome, name);
  fs.writeFileSync(p, content);
  fs.chownSync(p, uid, uid);
  fs.chmodSync(p, mode);
  return p;
}

/** A symbolic link the agent made in its home. */
function link(name: string, target: string): string {
  const p = path.join(agentHome, name);
  fs.symlinkSync(target, p);
  fs.lchownSync(p, NOBODY, NOBODY);
  return p;
}

beforeAll(() => {
  if (process.getuid?.() !== 0) throw new Error("gate-secrets reads files as another user, which needs root: run the tests as root (as CI does)");
  base = fs.mkdtempSync(path.join(os.tmpdir(), "mo-secrets-"));
  fs.chmodSync(base, 0o755);
  agentHome = path.join(base, "agent");
  fs.mkdirSync(agentHome, { mode: 0o700 });
  fs.chownSync(agentHome, NOBODY, NOBODY);
  // The gate's runtime directory: the service user's (here daemon's), 0700.
  into = path.join(base, "run");
  fs.mkdirSync(into, { mode: 0o700 });
  fs.chownSync(into, DAEMON, DAEMON);
});

afterAll(() => {
  fs.rmSync(base, { recursive: true, force: true });
});

describe("gate-secrets: each agent's .env and credential stores read as that agent, never blocking, the gate always started", () => {
  it("copies a file the agent may read, 0400 and owned by the runtime directory's owner; skips every other thing an agent can put in its place", () => {
    const own = file("own.env", SECRET);
    // Only root may read it (as /etc/shadow); another user's .env; a file over 1 MiB; a FIFO; a directory; nothing.
    const rootOnly = path.join(base, "root-only");
    fs.writeFileSync(rootOnly, "ROOT_ONLY_SECRET=neverEverCopiedToTheGate\n", { mode: 0o600 });
    const othersDir = path.join(base, "other-agent");
    fs.mkdirSync(othersDir, { mode: 0o700 });
    fs.chownSync(othersDir, DAEMON, DAEMON);
    const others = path.join(othersDir, ".env");
    fs.writeFileSync(others, "OTHER_AGENT_KEY=neverCopiedForThisAgent\n", { mode: 0o600 });
    fs.chownSync(others, DAEMON, DAEMON);
    const toRoot = link("to-root.env", rootOnly);
    const toOther = link("to-other.env", others);
    const big = file("big.env", Buffer.alloc(1024 * 1024 + 1, "a"));
    const fifo = path.join(agentHome, "fifo.env");
    execFileSync("mkfifo", [fifo]);
    fs.chownSync(fifo, NOBODY, NOBODY);
    const dir = path.join(agentHome, "dir.env");
    fs.mkdirSync(dir);
    fs.chownSync(dir, NOBODY, NOBODY);
    const gone = path.join(agentHome, "gone.env");
    // Root's own file, read as root (a gateway without User=): after the agent's files, root's identity is back.
    const rootsOwn = path.join(base, "root.env");
    fs.writeFileSync(rootsOwn, "ROOT_GATEWAY_TOKEN=readAsRootBecauseItsGatewayIsRoot\n", { mode: 0o600 });

    const entries = [`nobody:${own}`, `nobody:${toRoot}`, `nobody:${toOther}`, `nobody:${big}`, `nobody:${fifo}`, `nobody:${dir}`, `nobody:${gone}`, `nosuchuser:${own}`, `root:${rootsOwn}`];
    const r = run(["--into", into, ...entries]);
    expect(r.signal, "gate-secrets hung").toBeNull();
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe("");

    expect(fs.readdirSync(into).sort()).toEqual(["hermes-env-0", "hermes-env-8"]);
    const copy = fs.statSync(path.join(into, "hermes-env-0"));
    expect([copy.uid, copy.gid, copy.mode & 0o7777]).toEqual([DAEMON, DAEMON, 0o400]);
    expect(fs.readFileSync(path.join(into, "hermes-env-0"), "utf8")).toBe(SECRET);
    expect(fs.readFileSync(path.join(into, "hermes-env-8"), "utf8")).toContain("ROOT_GATEWAY_TOKEN");

    const lines = r.stderr.split("\n").filter((l) => l !== "");
    expect(lines).toEqual([
      `media-outbox: gate-secrets: skipped ${toRoot} (read as nobody): its user may not read it; the gate will not know its values`,
      `media-outbox: gate-secrets: skipped ${toOther} (read as nobody): its user may not read it; the gate will not know its values`,
      `media-outbox: gate-secrets: skipped ${big} (read as nobody): it is larger than 1048576 bytes; the gate will not know its values`,
      `media-outbox: gate-secrets: skipped ${fifo} (read as nobody): it is not a regular file; the gate will not know its values`,
      `media-outbox: gate-secrets: skipped ${dir} (read as nobody): it is not a regular file; the gate will not know its values`,
      `media-outbox: gate-secrets: skipped ${gone} (read as nobody): it does not exist; the gate will not know its values`,
      `media-outbox: gate-secrets: skipped ${own} (read as nosuchuser): there is no user nosuchuser; the gate will not know its values`,
      "media-outbox: gate-secrets: 2 of 9 Hermes secret file(s) copied for the gate",
    ]);
  });

  it("a store named optional (USER:?FILE) that is not there is counted, not named; one that is there is copied, read as its agent; one there but not to be taken is named", () => {
    const intoOwn = path.join(base, "run-optional");
    fs.mkdirSync(intoOwn, { mode: 0o700 });
    fs.chownSync(intoOwn, DAEMON, DAEMON);
    const store = file("auth.json", '{"providers": {"nous": {"refresh_token": "nousRefreshTokenOnlyForTheseTests"}}}\n');
    const dotEnv = file("optional-test.env", SECRET);
    // Not there: the store itself, a store whose directory is not there either, one under a file (ENOTDIR); a required file not there.
    const absent = path.join(agentHome, "google_token.json");
    const noDir = path.join(agentHome, "cache", "bws_cache.json");
    const underFile = path.join(dotEnv, "google_oauth.json");
    const gone = path.join(agentHome, "gone-again.env");
    // There, but not the agent's to read: named even though optional (root could read it; the agent may not).
    const rootOnly = path.join(base, "root-only-store.json");
    fs.writeFileSync(rootOnly, '{"access_token": "rootOnlyTokenNeverCopiedForTheAgent"}\n', { mode: 0o600 });
    const toRoot = link(".anthropic_oauth.json", rootOnly);

    const entries = [`nobody:${dotEnv}`, `nobody:?${store}`, `nobody:?${absent}`, `nobody:?${noDir}`, `nobody:?${underFile}`, `nobody:?${toRoot}`, `nobody:${gone}`];
    const r = run(["--into", intoOwn, ...entries]);
    expect(r.signal, "gate-secrets hung").toBeNull();
    expect(r.code, r.stderr).toBe(0);
    expect(fs.readdirSync(intoOwn).sort()).toEqual(["hermes-env-0", "hermes-env-1"]);
    expect(fs.readFileSync(path.join(intoOwn, "hermes-env-1"), "utf8")).toContain("nousRefreshTokenOnlyForTheseTests");
    const copy = fs.statSync(path.join(intoOwn, "hermes-env-1"));
    expect([copy.uid, copy.gid, copy.mode & 0o7777]).toEqual([DAEMON, DAEMON, 0o400]);
    expect(r.stderr.split("\n").filter((l) => l !== "")).toEqual([
      `media-outbox: gate-secrets: skipped ${toRoot} (read as nobody): its user may not read it; the gate will not know its values`,
      `media-outbox: gate-secrets: skipped ${gone} (read as nobody): it does not exist; the gate will not know its values`,
      "media-outbox: gate-secrets: 2 of 7 Hermes secret file(s) copied for the gate (3 optional store(s) not there)",
    ]);
  });

  it("copies each .json of a directory named with a trailing \"/\" (mcp-tokens/), read as its agent, as hermes-env-N-K, and removes the copies of files gone since", () => {
    const intoOwn = path.join(base, "run-directory");
    fs.mkdirSync(intoOwn, { mode: 0o700 });
    fs.chownSync(intoOwn, DAEMON, DAEMON);
    const tokens = path.join(agentHome, "mcp-tokens");
    fs.mkdirSync(tokens, { mode: 0o700 });
    fs.chownSync(tokens, NOBODY, NOBODY);
    file("mcp-tokens/github.json", '{"access_token": "githubMcpTokenOnlyForTheseTests"}\n');
    file("mcp-tokens/linear.json", '{"access_token": "linearMcpTokenOnlyForTheseTests"}\n');
    file("mcp-tokens/notes.txt", "not a token file\n");
    const rootOnly = path.join(base, "root-only-mcp.json");
    fs.writeFileSync(rootOnly, '{"access_token": "rootOnlyMcpTokenNeverCopied"}\n', { mode: 0o600 });
    const toRoot = link("mcp-tokens/stolen.json", rootOnly);
    const entries = ["nobody:?" + path.join(agentHome, "absent-mcp-tokens") + "/", `nobody:?${tokens}/`];
    const r = run(["--into", intoOwn, ...entries]);
    expect(r.code, r.stderr).toBe(0);
    expect(fs.readdirSync(intoOwn).sort()).toEqual(["hermes-env-1-0", "hermes-env-1-1"]);
    expect(fs.readFileSync(path.join(intoOwn, "hermes-env-1-0"), "utf8")).toContain("githubMcpTokenOnlyForTheseTests");
    expect(fs.readFileSync(path.join(intoOwn, "hermes-env-1-1"), "utf8")).toContain("linearMcpTokenOnlyForTheseTests");
    const copy = fs.statSync(path.join(intoOwn, "hermes-env-1-0"));
    expect([copy.uid, copy.gid, copy.mode & 0o7777]).toEqual([DAEMON, DAEMON, 0o400]);
    expect(r.stderr.split("\n").filter((l) => l !== "")).toEqual([
      `media-outbox: gate-secrets: skipped ${toRoot} (read as nobody): its user may not read it; the gate will not know its values`,
      "media-outbox: gate-secrets: 1 of 2 Hermes secret file(s) copied for the gate (1 optional store(s) not there)",
    ]);
    // A server removed: its copy goes with it; the directory removed: all of them.
    fs.rmSync(path.join(tokens, "github.json"));
    expect(run(["--into", intoOwn, ...entries]).code).toBe(0);
    expect(fs.readdirSync(intoOwn).sort()).toEqual(["hermes-env-1-0"]);
    expect(fs.readFileSync(path.join(intoOwn, "hermes-env-1-0"), "utf8")).toContain("linearMcpTokenOnlyForTheseTests");
    fs.rmSync(tokens, { recursive: true });
    expect(run(["--into", intoOwn, ...entries]).code).toBe(0);
    expect(fs.readdirSync(intoOwn)).toEqual([]);
  });

  it("replaces a copy left from before, never following what is in its place", () => {
    const own = file("again.env", "WEBHOOK_SECRET=secondVersionOfTheSecret\n");
    const elsewhere = path.join(base, "elsewhere");
    fs.writeFileSync(elsewhere, "untouched");
    fs.rmSync(path.join(into, "hermes-env-0"), { force: true });
    fs.symlinkSync(elsewhere, path.join(into, "hermes-env-0"));
    const r = run(["--into", into, `nobody:${own}`]);
    expect(r.code, r.stderr).toBe(0);
    expect(fs.lstatSync(path.join(into, "hermes-env-0")).isFile()).toBe(true);
    expect(fs.readFileSync(path.join(into, "hermes-env-0"), "utf8")).toContain("secondVersionOfTheSecret");
    expect(fs.readFileSync(elsewhere, "utf8")).toBe("untouched");
  });

  it("is a usage error (exit 2, one line) without root, without a directory to copy into, or with an entry that is not USER:/PATH", () => {
    const cases: [string[], { asNobody?: boolean }, RegExp][] = [
      [["--into", into, `nobody:${path.join(agentHome, "own.env")}`], { asNobody: true }, /needs root/],
      [["--into", path.join(base, "no-such-dir"), `nobody:${path.join(agentHome, "own.env")}`], {}, /no-such-dir is not a directory/],
      [["--into", into, "nobody:relative/.env"], {}, /is not USER:\/ABSOLUTE\/PATH/],
      [["--into", into, "/no/user.env"], {}, /is not USER:\/ABSOLUTE\/PATH/],
      [["--into", into, "nobody:?relative/auth.json"], {}, /is not USER:\/ABSOLUTE\/PATH or USER:\?\/ABSOLUTE\/PATH/],
      [["--into", into, "nobody:??/auth.json"], {}, /is not USER:\/ABSOLUTE\/PATH/],
      [[`nobody:${path.join(agentHome, "own.env")}`], {}, /--into DIR is required/],
    ];
    for (const [args, opts, message] of cases) {
      const r = run(args, opts);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr.split("\n")[0]).toMatch(message);
    }
  });
});
