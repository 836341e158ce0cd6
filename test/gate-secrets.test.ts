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
import { type Gate, gateLeftBehind, killAll, post, rawExchange, startGate } from "./gate-helpers.js";
import { BIN, makeHome } from "./helpers.js";
import type { DoctorCheck } from "../src/deploy/doctor-check.js";
import { gateAgentChecks, gateSecretChecks, gateServiceChecks } from "../src/deploy/doctor-gate.js";
import { GATE_SECRETS_WATCHES, ProfileWatches, takeProfiles, watchUnitName } from "../src/deploy/gate-profiles.js";
import { restartTargets } from "../src/deploy/install.js";
import type { Systemctl } from "../src/deploy/systemctl.js";
import { escapeUnitPath, templateInstances } from "../src/deploy/systemd-syntax.js";

const NOBODY = 65534;
const DAEMON = 1;
const SECRET = "TELEGRAM_BOT_TOKEN=7000000001:AAHfakeTokenValueOnlyForTheseTests\n";

let base: string;
let agentHome: string;
let into: string;

/**
 * Runs gate-secrets; `nobodysHome`: with /etc/passwd giving nobody that home,
 * in a mount namespace of its own (the host's /etc/passwd is not touched).
 */
function run(args: string[], opts: { asNobody?: boolean; nobodysHome?: string; env?: NodeJS.ProcessEnv } = {}) {
  const argv = [BIN, "gate-secrets", ...args];
  let [cmd, cmdArgs] = opts.asNobody ? ["/usr/bin/setpriv", [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups", process.execPath, ...argv]] : [process.execPath, argv];
  if (opts.nobodysHome !== undefined) {
    const passwd = path.join(base, `passwd-${path.basename(opts.nobodysHome)}`);
    const lines = fs.readFileSync("/etc/passwd", "utf8").split("\n").map((line) => (line.startsWith("nobody:") ? line.split(":").map((f, i) => (i === 5 ? opts.nobodysHome : f)).join(":") : line));
    fs.writeFileSync(passwd, lines.join("\n"));
    [cmd, cmdArgs] = ["unshare", ["--mount", "--propagation", "private", "--", "sh", "-c", 'mount --bind "$0" /etc/passwd && exec "$@"', passwd, cmd as string, ...(cmdArgs as string[])]];
  }
  // A bound on a hung run, so that it fails the test instead of the whole run (not a timing assertion).
  const r = spawnSync(cmd as string, cmdArgs as string[], { env: { PATH: process.env.PATH, HOME: base, ...opts.env }, encoding: "utf8", timeout: 60_000, killSignal: "SIGKILL" });
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

/** A file of nobody's under `root`, in directories of nobody's (0700) from `root` down. */
function nobodysFile(root: string, name: string, content: string): string {
  const file = path.join(root, name);
  for (let d = path.dirname(file); d !== path.dirname(root); d = path.dirname(d)) {
    fs.mkdirSync(d, { recursive: true, mode: 0o700 });
    fs.chownSync(d, NOBODY, NOBODY);
  }
  fs.writeFileSync(file, content, { mode: 0o600 });
  fs.chownSync(file, NOBODY, NOBODY);
  return file;
}

/** A runtime directory for the copies, the service user's (here daemon's), 0700. */
function intoDir(name: string): string {
  const d = path.join(base, name);
  fs.mkdirSync(d, { mode: 0o700 });
  fs.chownSync(d, DAEMON, DAEMON);
  return d;
}

/** gate-secrets' journal lines. */
const lines = (stderr: string) => stderr.split("\n").filter((l) => l !== "");

/** The Codex CLI's auth.json holding `token`, for `account`. */
const codexAuthJson = (token: string, account: string) => JSON.stringify({ tokens: { refresh_token: token, account_id: account } });

/** The watch unit of the path `p`, named as systemd-escape --path names it (the oracle for the names gate-secrets starts). */
const watchUnitOf = (p: string) => `media-outbox-gate-secrets-watch@${execFileSync("systemd-escape", ["--path", p], { encoding: "utf8" }).trim()}.path`;

/**
 * For a describe whose tests start gates on their copies: the function it
 * returns starts one with `copies` as its credentials, in a home of its own;
 * the describe's gates are ended and their homes removed after it.
 */
function gatesOnCopies(): (copies: string) => Promise<Gate> {
  const homes: ReturnType<typeof makeHome>[] = [];
  afterAll(async () => {
    await killAll();
    for (const h of homes) h.cleanup();
  });
  return (copies) => {
    const h = makeHome();
    homes.push(h);
    return startGate(h.home, { ...h.env, HERMES_HOME: path.join(h.home, "gate-home"), CREDENTIALS_DIRECTORY: copies });
  };
}

/** Each value, sent to the gate in a file, is refused as a secret, the reason holding its `reason`, and never echoed back. */
async function expectRefused(gate: Gate, cases: readonly (readonly [value: string, reason: string])[]): Promise<void> {
  for (const [value, reason] of cases) {
    const answer = await rawExchange(gate.socket, post("leak.txt", `notes: ${value}\n`));
    expect(answer.json, value).toMatchObject({ success: false, media: [], media_dropped: [{ path: "leak.txt", code: "secret_detected" }] });
    expect(answer.json.media_dropped[0].reason).toContain(reason);
    expect(answer.body).not.toContain(value);
  }
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
      "media-outbox: gate-secrets: 2 of 9 secret file(s) copied for the gate",
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
      "media-outbox: gate-secrets: 2 of 7 secret file(s) copied for the gate (3 optional store(s) not there)",
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
      "media-outbox: gate-secrets: 1 of 2 secret file(s) copied for the gate (1 optional store(s) not there)",
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

  it("copies at most 64 MiB in one run (the runtime directory is memory): the files first on the line first, each past the budget skipped with its name, its copy from before removed", () => {
    const intoOwn = path.join(base, "run-budget");
    fs.mkdirSync(intoOwn, { mode: 0o700 });
    fs.chownSync(intoOwn, DAEMON, DAEMON);
    const env = file("budget.env", SECRET);
    const tokens = path.join(agentHome, "budget-tokens");
    fs.mkdirSync(tokens, { mode: 0o700 });
    fs.chownSync(tokens, NOBODY, NOBODY);
    // 70 stores of 1,000,000 bytes: the budget (67,108,864 bytes) holds the .env and 67 of them.
    const big = Buffer.alloc(1_000_000, "x");
    for (let k = 0; k < 70; k++) file(`budget-tokens/${String(k).padStart(2, "0")}.json`, big);
    const late = file("budget-late.env", "WEBHOOK_SECRET=lateFileSecretOnlyForTheseTests\n");
    const entries = [`nobody:${env}`, `nobody:?${tokens}/`, `nobody:${late}`];
    const r = run(["--into", intoOwn, ...entries]);
    expect(r.code, r.stderr).toBe(0);
    const copies = fs.readdirSync(intoOwn);
    const total = (names: string[]) => names.reduce((n, c) => n + fs.statSync(path.join(intoOwn, c)).size, 0);
    expect(copies).toContain("hermes-env-0");
    expect(copies).toContain("hermes-env-2");
    expect(copies.filter((c) => c.startsWith("hermes-env-1-")).length).toBe(67);
    expect(total(copies)).toBeLessThanOrEqual(64 * 1024 * 1024);
    const budgetLine = (f: string) => `media-outbox: gate-secrets: skipped ${f} (read as nobody): its copy would take the copies past the 64 MiB they may hold in ${intoOwn} (a tmpfs: memory); the files named before it on the line were copied first; the gate will not know its values`;
    expect(r.stderr.split("\n").filter((l) => l !== "").slice(0, 3)).toEqual([67, 68, 69].map((k) => budgetLine(`${tokens}/${k}.json`)));
    // Grown past what is left: skipped, and its copy from before removed (the gate knows what this run copied).
    fs.writeFileSync(late, "WEBHOOK_SECRET=lateFileSecretOnlyForTheseTests\n#" + "y".repeat(500_000) + "\n");
    const again = run(["--into", intoOwn, ...entries]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toContain(budgetLine(late));
    expect(fs.readdirSync(intoOwn)).not.toContain("hermes-env-2");
    expect(total(fs.readdirSync(intoOwn))).toBeLessThanOrEqual(64 * 1024 * 1024);
    fs.rmSync(tokens, { recursive: true });
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
      [["--into", into, "nobody:?codex-home:relative/auth.json"], {}, /is not USER:\/ABSOLUTE\/PATH/],
      [["--into", into, "nobody:?environment-file:codex-home:/codex/auth.json"], {}, /is not USER:\/ABSOLUTE\/PATH/],
      [["--into", into, "nobody:managed:codex-home:/codex/auth.json"], {}, /is not USER:\/ABSOLUTE\/PATH/],
      [[`nobody:${path.join(agentHome, "own.env")}`], {}, /--into DIR is required/],
    ];
    for (const [args, opts, message] of cases) {
      const r = run(args, opts);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr.split("\n")[0]).toMatch(message);
    }
  });
});

describe("gate-secrets: the stores of an agent user's home (~/.docker/config.json, other agents' CLIs' OAuth tokens), as local mode reads them", () => {
  // Values of no vendor format: only the copies can make them known.
  const REGISTRY_PASSWORD = "Lp7Xw2Qz9Kd4Rm8Tv3Ny";
  const IDENTITY = "Jd3Vb8Nq2Xs7Kt5Wm9Pz4Rh";
  const CODEX = "Cx6Fh1Ty9Ub3Gn7Mk2Lq8Ws";
  const QWEN = "Rq4tWm8Zp2Lk6Vx9Nb3Hqw";
  const BASIC = Buffer.from(`agent:${REGISTRY_PASSWORD}`).toString("base64");
  let h: ReturnType<typeof makeHome>;
  let h2: ReturnType<typeof makeHome> | undefined;
  let gate: Gate | undefined;

  afterAll(async () => {
    await killAll();
    h?.cleanup();
    h2?.cleanup();
  });

  /** A file of `home`, nobody's, in directories of nobody's. */
  const homeFile = (home: string, name: string, content: string) => {
    for (let d = path.dirname(path.join(home, name)); d !== path.dirname(home); d = path.dirname(d)) {
      fs.mkdirSync(d, { recursive: true, mode: 0o700 });
      fs.chownSync(d, NOBODY, NOBODY);
    }
    const p = path.join(home, name);
    fs.writeFileSync(p, content, { mode: 0o600 });
    fs.chownSync(p, NOBODY, NOBODY);
    return p;
  };

  it("copies each store of the agent's passwd home as that agent, named after the store; one the agent may not read is not copied; the gate then refuses their values, naming the store, never printing them", async () => {
    const home = path.join(base, "home-stores");
    const docker = homeFile(home, ".docker/config.json", JSON.stringify({ auths: { "ghcr.io": { auth: BASIC }, "registry.example.com": { identitytoken: IDENTITY } } }));
    const codex = homeFile(home, ".codex/auth.json", JSON.stringify({ tokens: { refresh_token: CODEX, account_id: "acct-1234" } }));
    // Qwen's, a link to a file only root may read: the agent may not, so neither may the gate.
    const rootOnly = path.join(base, "root-only-qwen.json");
    fs.writeFileSync(rootOnly, JSON.stringify({ access_token: QWEN }), { mode: 0o600 });
    homeFile(home, ".qwen/keep", "");
    const qwen = path.join(home, ".qwen/oauth_creds.json");
    fs.symlinkSync(rootOnly, qwen);
    fs.lchownSync(qwen, NOBODY, NOBODY);
    // The same store's name in a directory that is not nobody's home: a copy like any other.
    const elsewhere = homeFile(path.join(base, "not-the-home"), ".docker/config.json", JSON.stringify({ auths: { "ghcr.io": { auth: BASIC } } }));
    const copies = path.join(base, "run-home-stores");
    fs.mkdirSync(copies, { mode: 0o700 });
    fs.chownSync(copies, DAEMON, DAEMON);
    const entries = [".claude/.credentials.json", ".qwen/oauth_creds.json", ".docker/config.json", ".codex/auth.json"].map((store) => `nobody:?${path.join(home, store)}`);
    const r = run(["--into", copies, ...entries, `nobody:?${elsewhere}`], { nobodysHome: home });
    expect(r.signal, "gate-secrets hung").toBeNull();
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr.split("\n").filter((l) => l !== "")).toEqual([
      `media-outbox: gate-secrets: skipped ${qwen} (read as nobody): its user may not read it; the gate will not know its values`,
      "media-outbox: gate-secrets: 3 of 5 secret file(s) copied for the gate (1 optional store(s) not there)",
    ]);
    expect(fs.readdirSync(copies).sort()).toEqual(["hermes-env-2-docker-config.json", "hermes-env-3-codex-auth.json", "hermes-env-4"]);
    expect(fs.readFileSync(path.join(copies, "hermes-env-2-docker-config.json"), "utf8")).toBe(fs.readFileSync(docker, "utf8"));
    expect(fs.readFileSync(path.join(copies, "hermes-env-3-codex-auth.json"), "utf8")).toBe(fs.readFileSync(codex, "utf8"));
    const copy = fs.statSync(path.join(copies, "hermes-env-2-docker-config.json"));
    expect([copy.uid, copy.gid, copy.mode & 0o7777]).toEqual([DAEMON, DAEMON, 0o400]);

    h = makeHome();
    gate = await startGate(h.home, { ...h.env, HERMES_HOME: path.join(h.home, "gate-home"), CREDENTIALS_DIRECTORY: copies });
    const dockerCopy = "an agent user's ~/.docker/config.json, credential hermes-env-2-docker-config.json";
    for (const [value, named] of [
      [REGISTRY_PASSWORD, `auths.ghcr.io.auth (${dockerCopy})`],
      [BASIC, `auths.ghcr.io.auth (${dockerCopy})`],
      [IDENTITY, `auths.registry.example.com.identitytoken (${dockerCopy})`],
      [CODEX, "tokens.refresh_token (an agent user's ~/.codex/auth.json, credential hermes-env-3-codex-auth.json)"],
    ] as const) {
      const answer = await rawExchange(gate.socket, post("leak.txt", `notes: ${value}\n`));
      expect(answer.json, value).toMatchObject({ success: false, media: [], media_dropped: [{ path: "leak.txt", code: "secret_detected" }] });
      expect(answer.json.media_dropped[0].reason).toContain(`the value of ${named}`);
      expect(answer.body).not.toContain(value);
    }
    // The store the agent could not read gave the gate nothing.
    expect((await rawExchange(gate.socket, post("qwen.txt", `notes: ${QWEN}\n`))).json).toMatchObject({ success: true });
    for (const value of [REGISTRY_PASSWORD, BASIC, IDENTITY, CODEX, QWEN]) expect(gate.log() + r.stderr + r.stdout).not.toContain(value);
  });

  it("copies the Codex CLI's auth.json where a gateway's $CODEX_HOME puts it (USER:?codex-home:FILE) as that agent, named as a copy of that store (read as JSON, named by where it came from), and a managed .env where its $HERMES_MANAGED_DIR does (USER:?managed:FILE) as it is; one the agent may not read is not copied; the gate then refuses their values, never printing them", async () => {
    const CODEX_ELSEWHERE = "Cz5Hq8Vn2Xr7Lm4Tk9Pw3Bd";
    const codexHome = path.join(base, "codex-home-elsewhere");
    const auth = homeFile(codexHome, "auth.json", JSON.stringify({ OPENAI_API_KEY: null, tokens: { access_token: `eyJ${CODEX_ELSEWHERE}`, refresh_token: CODEX_ELSEWHERE, account_id: "acct-5678" } }));
    // A $CODEX_HOME/auth.json that is a link to a file only root may read: the agent may not, so neither may the gate.
    const rootOnly = path.join(base, "root-only-codex.json");
    fs.writeFileSync(rootOnly, JSON.stringify({ tokens: { refresh_token: QWEN } }), { mode: 0o600 });
    const linked = path.join(base, "codex-home-linked");
    fs.mkdirSync(linked, { mode: 0o755 });
    fs.symlinkSync(rootOnly, path.join(linked, "auth.json"));
    const copies = path.join(base, "run-codex-home");
    fs.mkdirSync(copies, { mode: 0o700 });
    fs.chownSync(copies, DAEMON, DAEMON);
    // A managed scope's .env where a gateway's HERMES_MANAGED_DIR puts it: copied as it is.
    const MANAGED = "Mg7Kd2Vx9Qp4Lr8Tw3Zn";
    const managedEnv = homeFile(path.join(base, "managed-elsewhere"), ".env", `DASHBOARD_SECRET=${MANAGED}\n`);
    const r = run(["--into", copies, `nobody:?codex-home:${path.join(linked, "auth.json")}`, `nobody:?codex-home:${auth}`, `nobody:?codex-home:${path.join(base, "no-codex-home", "auth.json")}`, `nobody:?managed:${managedEnv}`]);
    expect(r.signal, "gate-secrets hung").toBeNull();
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr.split("\n").filter((l) => l !== "")).toEqual([
      `media-outbox: gate-secrets: skipped ${path.join(linked, "auth.json")} (read as nobody): its user may not read it; the gate will not know its values`,
      "media-outbox: gate-secrets: 2 of 4 secret file(s) copied for the gate (1 optional store(s) not there)",
    ]);
    expect(fs.readdirSync(copies).sort()).toEqual(["hermes-env-1-codex-home-auth.json", "hermes-env-3"]);
    expect(fs.readFileSync(path.join(copies, "hermes-env-1-codex-home-auth.json"), "utf8")).toBe(fs.readFileSync(auth, "utf8"));
    const copy = fs.statSync(path.join(copies, "hermes-env-1-codex-home-auth.json"));
    expect([copy.uid, copy.gid, copy.mode & 0o7777]).toEqual([DAEMON, DAEMON, 0o400]);

    h2 = makeHome();
    const codexGate = await startGate(h2.home, { ...h2.env, HERMES_HOME: path.join(h2.home, "gate-home"), CREDENTIALS_DIRECTORY: copies });
    const answer = await rawExchange(codexGate.socket, post("leak.txt", `notes: ${CODEX_ELSEWHERE}\n`));
    expect(answer.json).toMatchObject({ success: false, media: [], media_dropped: [{ path: "leak.txt", code: "secret_detected" }] });
    expect(answer.json.media_dropped[0].reason).toContain("the value of tokens.refresh_token (the Codex CLI's auth.json in a gateway's $CODEX_HOME, credential hermes-env-1-codex-home-auth.json)");
    expect(answer.body).not.toContain(CODEX_ELSEWHERE);
    const managed = await rawExchange(codexGate.socket, post("managed.txt", `notes: ${MANAGED}\n`));
    expect(managed.json.media_dropped[0].reason).toContain("the value of DASHBOARD_SECRET (credential hermes-env-3)");
    // The one the agent could not read gave the gate nothing: a file with its token passes.
    expect((await rawExchange(codexGate.socket, post("other.txt", `notes: ${QWEN}\n`))).json).toMatchObject({ success: true });
    for (const value of [CODEX_ELSEWHERE, QWEN, MANAGED]) expect(codexGate.log() + r.stderr + r.stdout + managed.body).not.toContain(value);
  });
});

describe("gate-secrets: what a gateway's unit gives it (environment-file:, unit-file:), read as root only where root's alone", () => {
  // Values of no known format: only the copy can make them known.
  const ENV_VALUE = "Qm7vLx2Pw9Zk4Tr8Yb3NenvFile";
  const UNIT_VALUE = "Hd8sKq2Lm5Np7Rt9Vx3ZdropIn";
  const QUOTED_VALUE = "it's\\back-slashed-Pw0rd4u";
  let h: ReturnType<typeof makeHome>;
  let gate: Gate | undefined;

  /** A root-owned directory of `base`, `mode`. */
  const rootDir = (name: string, mode = 0o755) => {
    const d = path.join(base, name);
    fs.mkdirSync(d);
    fs.chmodSync(d, mode);
    return d;
  };
  const rootFile = (dir: string, name: string, content: string, mode = 0o600) => {
    const p = path.join(dir, name);
    fs.writeFileSync(p, content);
    fs.chmodSync(p, mode);
    return p;
  };
  const intoDir = (name: string) => {
    const d = path.join(base, name);
    fs.mkdirSync(d, { mode: 0o700 });
    fs.chownSync(d, DAEMON, DAEMON);
    return d;
  };

  afterAll(async () => {
    await killAll();
    h?.cleanup();
  });

  it("copies a root-only EnvironmentFile= and a root-only drop-in's Environment= for a gateway of another user (root's alone: read as root) as NAME='value' lines; the gate then refuses those values, never printing them", async () => {
    const etc = rootDir("etc-hermes");
    const envFile = rootFile(etc, "gateway.env", `# the gateway's keys\nOPENAI_API_KEY="${ENV_VALUE}"\nLOG_LEVEL=info\n`);
    const units = rootDir("hermes-gateway.service.d");
    const dropIn = rootFile(units, "10-keys.conf", `[Unit]\nDescription=keys\n[Service]\nEnvironment="MY_SERVICE_TOKEN=${UNIT_VALUE}" HERMES_HOME=/home/agent/.hermes\nEnvironment="DB_PASSWORD=it's\\\\back-slashed-Pw0rd4u"\n`);
    // A drop-in of other settings, and an optional environment file not there: no copy.
    const other = rootFile(units, "20-nice.conf", "[Service]\nNice=5\n", 0o644);
    const absent = path.join(etc, "absent.env");
    const copies = intoDir("run-unit");
    fs.writeFileSync(path.join(copies, "hermes-env-2"), "STALE_TOKEN=fromAnEarlierCopyOfThatDropIn\n");
    const r = run(["--into", copies, `nobody:environment-file:${envFile}`, `nobody:unit-file:${dropIn}`, `nobody:unit-file:${other}`, `nobody:?environment-file:${absent}`]);
    expect(r.signal, "gate-secrets hung").toBeNull();
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr.split("\n").filter((l) => l !== "")).toEqual(["media-outbox: gate-secrets: 3 of 4 secret file(s) copied for the gate (1 optional store(s) not there)"]);
    // The copy of a file that sets nothing, left from before, is gone.
    expect(fs.readdirSync(copies).sort()).toEqual(["hermes-env-0", "hermes-env-1"]);
    expect(fs.readFileSync(path.join(copies, "hermes-env-0"), "utf8")).toBe(`OPENAI_API_KEY='${ENV_VALUE}'\nLOG_LEVEL='info'\n`);
    expect(fs.readFileSync(path.join(copies, "hermes-env-1"), "utf8")).toBe(`MY_SERVICE_TOKEN='${UNIT_VALUE}'\nHERMES_HOME='/home/agent/.hermes'\nDB_PASSWORD='it\\'s\\\\back-slashed-Pw0rd4u'\n`);
    const copy = fs.statSync(path.join(copies, "hermes-env-1"));
    expect([copy.uid, copy.gid, copy.mode & 0o7777]).toEqual([DAEMON, DAEMON, 0o400]);

    h = makeHome();
    gate = await startGate(h.home, { ...h.env, HERMES_HOME: path.join(h.home, "gate-home"), CREDENTIALS_DIRECTORY: copies });
    for (const [value, named] of [
      [ENV_VALUE, "OPENAI_API_KEY (credential hermes-env-0)"],
      [UNIT_VALUE, "MY_SERVICE_TOKEN (credential hermes-env-1)"],
      [QUOTED_VALUE, "DB_PASSWORD (credential hermes-env-1)"],
    ] as const) {
      const answer = await rawExchange(gate.socket, post("leak.txt", `the key is ${value} here\n`));
      expect(answer.json, value).toMatchObject({ success: false, media: [], media_dropped: [{ path: "leak.txt", code: "secret_detected" }] });
      expect(answer.json.media_dropped[0].reason).toContain(named);
      expect(answer.body).not.toContain(value);
    }
    for (const value of [ENV_VALUE, UNIT_VALUE, QUOTED_VALUE]) {
      expect(gate.log()).not.toContain(value);
      expect(r.stderr + r.stdout).not.toContain(value);
    }
  });

  it("doctor's gate secrets line names a gateway's file gate-secrets skips (its user may not read it, not root's alone) and one its unit sets now that the gate's units do not name, and judges none of them as a Hermes file", () => {
    const etc = rootDir("etc-doctor");
    const rootAlone = rootFile(etc, ".env", `OPENAI_API_KEY=${ENV_VALUE}\n`);
    // In a directory named like a Hermes home: its config.yaml is no store the gate should have named.
    rootFile(etc, "config.yaml", "model: x\n");
    const agentsDir = path.join(base, "agents-doctor");
    fs.mkdirSync(agentsDir, { mode: 0o755 });
    fs.chownSync(agentsDir, NOBODY, NOBODY);
    const skipped = rootFile(agentsDir, "gateway.env", `OPENAI_API_KEY=${ENV_VALUE}\n`);
    const readable = rootFile(agentsDir, "10-keys.conf", `[Service]\nEnvironment=OPENAI_API_KEY=${ENV_VALUE}\n`, 0o644);
    const asRoot = rootFile(agentsDir, "root-gateway.env", `OPENAI_API_KEY=${ENV_VALUE}\n`);
    const words = [`nobody:environment-file:${rootAlone}`, `nobody:environment-file:${skipped}`, `nobody:unit-file:${readable}`, `root:environment-file:${asRoot}`, `nobody:?environment-file:${path.join(etc, "absent.env")}`];
    const unit = rootFile(base, "media-outbox-gate.service", `[Service]\nExecStartPre=-+/usr/bin/node /bin/media-outbox gate-secrets --into /run/media-outbox-gate ${words.join(" ")}\n`, 0o644);
    // The gateway's unit as it is now: a drop-in with a secret and an environment file added since install, and a drop-in of settings only.
    const added = rootFile(etc, "30-added.conf", `[Service]\nEnvironment=SLACK_BOT_TOKEN=${UNIT_VALUE}\n`, 0o644);
    const settings = rootFile(etc, "40-settings.conf", "[Service]\nEnvironment=LOG_LEVEL=debug\n", 0o644);
    const addedEnv = path.join(etc, "added.env");
    const ref = (file: string) => ({ raw: file, path: file, optional: false, from: readable });
    const gateway = { unit: "hermes-gateway.service", user: "nobody", environmentFiles: [ref(rootAlone), ref(skipped), ref(addedEnv)], unitFiles: [readable, added, settings] };
    const checks: DoctorCheck[] = [];
    gateSecretChecks({ scope: "system", home: "/root" }, { fragment: unit, dropIns: [] }, checks, [gateway]);
    expect(checks).toEqual([
      {
        check: "gate secrets",
        status: "warn",
        message: `the gate does not know what the gateways' units set in ${skipped} (an EnvironmentFile=): nobody may not read it, and root reads it for the gate only when it is root's alone: ${agentsDir} belongs to uid ${NOBODY}, not root`,
        fix: "make the file and every directory above it root's, writable by nobody else (systemd reads it as root), or readable by the gateway's user",
      },
      {
        check: "gate secrets",
        status: "warn",
        message: `${addedEnv}, ${added}: set for a gateway (an EnvironmentFile=, or Environment= values that look secret) and not named in the gate's units: the gate does not know the values there`,
        fix: "run media-outbox install systemd --gate again, with the same options",
      },
    ]);
    expect(JSON.stringify(checks)).not.toContain(UNIT_VALUE);
    expect(JSON.stringify(checks)).not.toContain(ENV_VALUE);
  });

  it("never reads as root a file its gateway's user may not read that is not root's alone (a link, a directory another user owns or may write, a file its group may write), nor a Hermes file; a file the user may read is read as the user", () => {
    const etc = rootDir("etc-refused");
    const target = rootFile(etc, "gateway.env", `OPENAI_API_KEY=${ENV_VALUE}\n`);
    const linkFile = path.join(etc, "link.env");
    fs.symlinkSync(target, linkFile);
    const linkedDir = path.join(base, "linked-etc");
    fs.symlinkSync(etc, linkedDir);
    const throughLink = path.join(linkedDir, "gateway.env");
    const agentsDir = path.join(base, "agents-dir");
    fs.mkdirSync(agentsDir, { mode: 0o755 });
    fs.chownSync(agentsDir, NOBODY, NOBODY);
    const inAgents = rootFile(agentsDir, "gateway.env", `OPENAI_API_KEY=${ENV_VALUE}\n`);
    const open = rootDir("open-dir", 0o777);
    const inOpen = rootFile(open, "gateway.env", `OPENAI_API_KEY=${ENV_VALUE}\n`);
    const groupWritable = rootFile(etc, "group-writable.env", `OPENAI_API_KEY=${ENV_VALUE}\n`, 0o620);
    const dropIn = rootFile(agentsDir, "secret.conf", `[Service]\nEnvironment=OPENAI_API_KEY=${ENV_VALUE}\n`);
    const readable = rootFile(agentsDir, "readable.env", `OPENAI_API_KEY=${ENV_VALUE}\n`, 0o644);
    const copies = intoDir("run-refused");
    const entries = [
      `nobody:environment-file:${linkFile}`,
      `nobody:environment-file:${throughLink}`,
      `nobody:environment-file:${inAgents}`,
      `nobody:environment-file:${inOpen}`,
      `nobody:environment-file:${groupWritable}`,
      // A Hermes file (no KIND:) systemd never reads: as its user only.
      `nobody:${target}`,
      `nobody:unit-file:${dropIn}`,
      `nobody:environment-file:${readable}`,
    ];
    const r = run(["--into", copies, ...entries]);
    expect(r.code, r.stderr).toBe(0);
    expect(fs.readdirSync(copies)).toEqual(["hermes-env-7"]);
    expect(fs.readFileSync(path.join(copies, "hermes-env-7"), "utf8")).toBe(`OPENAI_API_KEY='${ENV_VALUE}'\n`);
    const because = "its user may not read it, and root reads it for the gate only when it is root's alone";
    expect(r.stderr.split("\n").filter((l) => l !== "")).toEqual([
      `media-outbox: gate-secrets: skipped ${linkFile} (read as nobody): ${because}: ${linkFile} is a symbolic link; the gate will not know its values`,
      `media-outbox: gate-secrets: skipped ${throughLink} (read as nobody): ${because}: ${linkedDir} is a symbolic link; the gate will not know its values`,
      `media-outbox: gate-secrets: skipped ${inAgents} (read as nobody): ${because}: ${agentsDir} belongs to uid ${NOBODY}, not root; the gate will not know its values`,
      `media-outbox: gate-secrets: skipped ${inOpen} (read as nobody): ${because}: ${open} is writable by its group or others (mode 0777); the gate will not know its values`,
      `media-outbox: gate-secrets: skipped ${groupWritable} (read as nobody): ${because}: ${groupWritable} is writable by its group or others (mode 0620); the gate will not know its values`,
      `media-outbox: gate-secrets: skipped ${target} (read as nobody): its user may not read it; the gate will not know its values`,
      `media-outbox: gate-secrets: skipped ${dropIn} (read as nobody): ${because}: ${agentsDir} belongs to uid ${NOBODY}, not root; the gate will not know its values`,
      "media-outbox: gate-secrets: 1 of 8 secret file(s) copied for the gate",
    ]);
    expect(r.stderr).not.toContain(ENV_VALUE);
  });
});

/** A target root for doctor: /etc/passwd gives agent the home /home/agent; `files` (path under the root: content) written there. */
function doctorTarget(name: string, files: Record<string, string>): string {
  const root = path.join(base, name);
  const put = (file: string, content: string) => {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    fs.writeFileSync(path.join(root, file), content);
  };
  put("etc/passwd", "root:x:0:0:root:/root:/bin/bash\nagent:x:1500:1500::/home/agent:/bin/bash\n");
  put("home/agent/.hermes/.env", "TELEGRAM_BOT_TOKEN=7000000001:AAHfakeTokenValueOnlyForTheseTests\n");
  for (const [file, content] of Object.entries(files)) put(file, content);
  return root;
}

const GATE_UNIT = "/etc/systemd/system/media-outbox-gate.service";
/** Writes the gate's unit into `root`, its gate-secrets line naming `words` (`flags` before them). */
function unitNaming(root: string, words: string[], flags = ""): void {
  fs.mkdirSync(path.dirname(path.join(root, GATE_UNIT)), { recursive: true });
  fs.writeFileSync(path.join(root, GATE_UNIT), `[Service]\nExecStartPre=-+/usr/bin/node /bin/media-outbox gate-secrets --into /run/media-outbox-gate ${flags}${words.join(" ")}\n`);
}

describe("ProfileWatches across copy rounds (gate-secrets copies again when a file changed during a run)", () => {
  it("starts again a watch a round stopped, and stops one a round started, each with one systemctl call; lists once", () => {
    const calls: string[][] = [];
    const a = watchUnitName("/home/agent/.hermes/profiles/a/.env")!;
    const b = watchUnitName("/home/agent/.hermes/profiles/b/.env")!;
    const systemctl = {
      run: (...args: string[]) => {
        calls.push(args);
        return args[0] === "list-units" ? { code: 0, stdout: `${a} loaded active waiting x\n`, stderr: "" } : { code: 0, stdout: "", stderr: "" };
      },
    } as unknown as Systemctl;
    const watches = new ProfileWatches(systemctl);
    // Round 1: b's profile is new, a's is gone.
    expect(watches.start(["/home/agent/.hermes/profiles/b/.env"])).toEqual([]);
    expect(watches.stopOthers(["/home/agent/.hermes/profiles/b/.env"])).toEqual([]);
    // Round 2: a's is back, b's gone again.
    expect(watches.start(["/home/agent/.hermes/profiles/a/.env"])).toEqual([]);
    expect(watches.stopOthers(["/home/agent/.hermes/profiles/a/.env"])).toEqual([]);
    expect(calls).toEqual([
      ["list-units", "--all", "--plain", "--no-legend", "--full", "--type=path", GATE_SECRETS_WATCHES],
      ["start", b],
      ["stop", "--no-block", a],
      ["start", a],
      ["stop", "--no-block", b],
    ]);
  });
});

describe("doctor: the stores of the agents' homes the gate's units name", () => {
  /** A target root whose /etc/passwd gives agent the home /home/agent, with its Hermes .env, a Codex CLI's files and a damaged Docker config. */
  const target = (name: string) =>
    doctorTarget(name, {
      "home/agent/.codex/auth.json": '{"tokens": {"refresh_token": "codexRefreshTokenOnlyForTheseTests"}}\n',
      // The older Codex CLI's settings beside it: ~/.codex is no Hermes home, and its config.yaml no Hermes store.
      "home/agent/.codex/config.yaml": "model: o4-mini\n",
      "home/agent/.docker/config.json": "auths: this is not JSON\n",
    });
  const checksFor = (root: string, words: string[]) => {
    unitNaming(root, words);
    const checks: DoctorCheck[] = [];
    gateSecretChecks({ scope: "system", root, home: "/root" }, { fragment: GATE_UNIT, dropIns: [] }, checks, []);
    return checks;
  };
  const homeStores = [".claude/.credentials.json", ".qwen/oauth_creds.json", ".docker/config.json", ".codex/auth.json"].map((store) => `agent:?/home/agent/${store}`);

  it("judges a named store of the user's home as the gate reads it (JSON), and takes none of them for a Hermes file (no false 'not named')", () => {
    const checks = checksFor(target("doctor-home-stores"), ["agent:/home/agent/.hermes/.env", ...homeStores]);
    expect(checks).toEqual([
      {
        check: "gate secrets",
        status: "warn",
        message: "the gate does not know the values of /home/agent/.docker/config.json: it is not valid JSON",
        fix: "make each a regular file of at most 1 MiB (a JSON store: valid JSON); the gate copies it again when it changes",
      },
    ]);
  });

  it("warns when the files the gate copies hold more than the 64 MiB gate-secrets copies, and is quiet again below it", () => {
    const root = target("doctor-copies-budget");
    const tokens = path.join(root, "home/agent/.hermes/mcp-tokens");
    fs.mkdirSync(tokens);
    const big = Buffer.alloc(1_000_000, "x");
    for (let k = 0; k < 70; k++) fs.writeFileSync(path.join(tokens, `${k}.json`), big);
    const words = ["agent:/home/agent/.hermes/.env", "agent:?/home/agent/.hermes/mcp-tokens/"];
    const warned = checksFor(root, words).filter((c) => c.message.includes("in memory"));
    expect(warned).toEqual([
      {
        check: "gate secrets",
        status: "warn",
        message: "the files the gate copies its secrets from hold 67 MiB, more than the 64 MiB its copies may take in memory: the last on its line are not copied, and the gate does not know their values",
        fix: "remove what does not belong there (a store directory such as mcp-tokens/ holds one small .json per server or user)",
      },
    ]);
    for (let k = 0; k < 10; k++) fs.rmSync(path.join(tokens, `${k}.json`));
    expect(checksFor(root, words).filter((c) => c.message.includes("in memory"))).toEqual([]);
  });

  it("names the stores of the user's home that are there and that the gate's units do not name (an install by an older media-outbox)", () => {
    const checks = checksFor(target("doctor-home-stores-old"), ["agent:/home/agent/.hermes/.env"]);
    expect(checks).toEqual([
      {
        check: "gate secrets",
        status: "warn",
        message:
          "/home/agent/.docker/config.json, /home/agent/.codex/auth.json: not named in the gate's units (a home that was not there at install, or an install by an older media-outbox, which named a profile's files only if the profile was there then, MCP token files one by one and no store of the agents' homes): the gate does not know the values there",
        fix: "run media-outbox install systemd --gate again, with the same options",
      },
    ]);
  });
});

describe("doctor: the profiles of a Hermes home the gate's units name (USER:?profiles:DIR/)", () => {
  /** A target root whose /etc/passwd gives agent the home /home/agent, with its Hermes .env and three profiles: work, late (made after install), a link. */
  function target(name: string): string {
    const root = doctorTarget(name, {
      "home/agent/.hermes/profiles/work/.env": "WORK_SERVICE_TOKEN=Wk8Rz3Vq6Lp1Xn4Tb7Jd\n",
      "home/agent/.hermes/profiles/late/.env": "LATE_SERVICE_TOKEN=Lt4Qw9Zx2Kv7Np3Rb8Hm\n",
      "home/agent/.hermes/profiles/late/mcp-tokens/tracker.json": "access_token: this is not JSON\n",
      "srv/elsewhere/.env": "ELSEWHERE_SERVICE_TOKEN=Es4Qw9Zx2Kv7Np3Rb8Hm\n",
    });
    fs.symlinkSync("../../../../srv/elsewhere", path.join(root, "home/agent/.hermes/profiles/linked"));
    return root;
  }
  const words = ["agent:/home/agent/.hermes/.env", "agent:?profiles:/home/agent/.hermes/profiles/"];

  it("takes a profile made after install for one the gate knows (no 'not named'); names a profile it does not take (a link) and a damaged store of one it does", () => {
    const root = target("doctor-profiles");
    unitNaming(root, words, "--watch-profiles ");
    const checks: DoctorCheck[] = [];
    gateSecretChecks({ scope: "system", root, home: "/root" }, { fragment: GATE_UNIT, dropIns: [] }, checks, []);
    expect(checks).toEqual([
      {
        check: "gate secrets",
        status: "warn",
        message: "the gate does not know the values of /home/agent/.hermes/profiles/late/mcp-tokens/tracker.json: it is not valid JSON",
        fix: "make each a regular file of at most 1 MiB (a JSON store: valid JSON); the gate copies it again when it changes",
      },
      {
        check: "gate secrets",
        status: "fail",
        message:
          "Hermes profiles the gate does not copy: /home/agent/.hermes/profiles/linked (it is a symbolic link, which is not followed (the agent's to point anywhere); make the profile a directory): the gate does not know the values there, and refuses every file whose check needs them (unscannable_content)",
        fix: "make each a directory named with letters, digits, _ and -, and keep at most 32 profiles in a Hermes home (hermes profile delete NAME); the gate copies them again when the profiles directory changes",
      },
    ]);
    // An install by an older media-outbox, which named the profiles there then (work) one by one: late is not named.
    const old = target("doctor-profiles-old");
    unitNaming(old, ["agent:/home/agent/.hermes/.env", "agent:/home/agent/.hermes/profiles/work/.env"], "--watch-profiles ");
    const oldChecks: DoctorCheck[] = [];
    gateSecretChecks({ scope: "system", root: old, home: "/root" }, { fragment: GATE_UNIT, dropIns: [] }, oldChecks, []);
    expect(oldChecks.filter((c) => c.message.includes("not named")).map((c) => c.message.split(": ")[0])).toEqual([
      "/home/agent/.hermes/profiles/late/.env, /home/agent/.hermes/profiles/late/mcp-tokens/tracker.json, /home/agent/.hermes/profiles/linked/.env",
    ]);
  });

  it("names the profiles it copies but does not watch (past the 8 of a home) and those it does not copy (past the 32), escaped", () => {
    const root = target("doctor-profiles-many");
    for (let i = 0; i < 32; i++) fs.mkdirSync(path.join(root, `home/agent/.hermes/profiles/p${String(i).padStart(2, "0")}`));
    fs.mkdirSync(path.join(root, "home/agent/.hermes/profiles/zz\x1b]0;"));
    unitNaming(root, words, "--watch-profiles ");
    const checks: DoctorCheck[] = [];
    gateSecretChecks({ scope: "system", root, home: "/root" }, { fragment: GATE_UNIT, dropIns: [] }, checks, []);
    const dir = "/home/agent/.hermes/profiles";
    // Hermes' own names first, in name order: late, p00…p29 are copied; the first 8 watched.
    const copied = ["late", ...Array.from({ length: 31 }, (_, i) => `p${String(i).padStart(2, "0")}`)];
    expect(checks.filter((c) => c.message.startsWith("Hermes profiles")).map((c) => c.message)).toEqual([
      `Hermes profiles the gate does not copy: ${dir}/linked (it is a symbolic link, which is not followed (the agent's to point anywhere); make the profile a directory); ${dir}/p31 (past the 32 profiles of a Hermes home read); ${dir}/work (past the 32 profiles of a Hermes home read); ${dir}/zz\\x1b]0; (past the 32 profiles of a Hermes home read): the gate does not know the values there, and refuses every file whose check needs them (unscannable_content)`,
      `Hermes profiles the gate copies but does not watch: ${copied.slice(8).map((n) => `${dir}/${n}`).join(", ")} (past the 8 of a home whose files are watched: each takes 4 of root's inotify instances): a change there reaches the gate with the next copy only (its start, a change to a watched file)`,
    ]);
  });

  it("names the profiles' files whose watch is not active while the gate runs (failed, or never started), and says how to start them", () => {
    const root = target("doctor-profile-watches");
    unitNaming(root, words, "--watch-profiles ");
    const unit = (p: string) => `media-outbox-gate-secrets-watch@${escapeUnitPath(p)}.path`;
    const work = "/home/agent/.hermes/profiles/work";
    const late = "/home/agent/.hermes/profiles/late";
    const listed = [
      ...[work, `${work}/.env`, `${work}/mcp-tokens`, `${work}/google_chat_user_tokens`].map((p) => `${unit(p)} loaded active waiting x`),
      ...[late, `${late}/mcp-tokens`, `${late}/google_chat_user_tokens`].map((p) => `${unit(p)} loaded active waiting x`),
      `${unit(`${late}/.env`)} loaded failed failed x`,
    ];
    const shown: Record<string, Record<string, string>> = {
      "media-outbox-gate.socket": { LoadState: "loaded", UnitFileState: "enabled", ActiveState: "active" },
      "media-outbox-gate.service": { LoadState: "loaded", ActiveState: "active", FragmentPath: GATE_UNIT },
    };
    const systemctl = (lines: string[]) =>
      ({
        show: (u: string) => new Map(Object.entries(shown[u] ?? { LoadState: "not-found" })),
        run: (...args: string[]) => (args[0] === "list-units" ? { code: 0, stdout: lines.map((l) => `${l}\n`).join(""), stderr: "" } : { code: 1, stdout: "", stderr: "" }),
      }) as unknown as Systemctl;
    const watchChecks = (lines: string[]) => {
      const checks: DoctorCheck[] = [];
      gateServiceChecks({ scope: "system", root, home: "/root" }, [], systemctl(lines), checks);
      return checks.filter((c) => c.message.includes("watches"));
    };
    expect(watchChecks(listed)).toEqual([
      {
        check: "gate secrets",
        status: "warn",
        message: `the watches of Hermes profiles' files are not active: ${late}/.env (failed): a change there is copied for the gate with the next copy only`,
        fix: "systemctl start media-outbox-gate-secrets.service",
      },
    ]);
    // A profile made while a copy ran, whose watches were never started.
    expect(watchChecks(listed.filter((l) => !l.includes("late")))[0]!.message).toContain(`${late} (not started), ${late}/.env (not started), ${late}/mcp-tokens (not started)`);
    expect(watchChecks([...listed.slice(0, -1), `${unit(`${late}/.env`)} loaded active waiting x`])).toEqual([]);
  });
});

describe("doctor: the stores a gateway's CODEX_HOME and HERMES_MANAGED_DIR move", () => {
  const GATE_UNIT = "/etc/systemd/system/media-outbox-gate.service";
  const GATEWAY_UNIT = "/etc/systemd/system/hermes-gateway.service";
  /** A target root: agent's gateway, its Hermes .env, a Codex home elsewhere with the Codex CLI's auth.json and settings, and the gate's unit naming `words`. */
  function target(name: string, words: string[]): string {
    const root = path.join(base, name);
    const put = (file: string, content: string) => {
      fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
      fs.writeFileSync(path.join(root, file), content);
    };
    put("etc/passwd", "root:x:0:0:root:/root:/bin/bash\nagent:x:1500:1500::/home/agent:/bin/bash\n");
    put(GATEWAY_UNIT.slice(1), "[Service]\nUser=agent\nEnvironment=HERMES_HOME=/srv/agent-hermes CODEX_HOME=/srv/codex-a\nExecStart=/bin/true\n");
    put("srv/agent-hermes/.env", "TELEGRAM_BOT_TOKEN=7000000001:AAHfakeTokenValueOnlyForTheseTests\n");
    put("srv/codex-a/auth.json", '{"tokens": {"refresh_token": "codexRefreshTokenOnlyForTheseTests"}}\n');
    // The Codex CLI's settings beside it, named like a Hermes store: $CODEX_HOME is no Hermes home.
    put("srv/codex-a/config.yaml", "model: o4-mini\n");
    put(GATE_UNIT.slice(1), `[Service]\nExecStartPre=-+/usr/bin/node /bin/media-outbox gate-secrets --into /run/media-outbox-gate ${words.join(" ")}\n`);
    return root;
  }
  /** doctor's gate lines as a running systemd reports the units (a fake systemctl answering `show`), the gate's service `state`. */
  function secretChecks(root: string, state = "inactive"): DoctorCheck[] {
    const shown: Record<string, Record<string, string>> = {
      "media-outbox-gate.socket": { LoadState: "loaded", UnitFileState: "enabled", ActiveState: "active" },
      "media-outbox-gate.service": { LoadState: "loaded", ActiveState: state, FragmentPath: GATE_UNIT },
      "hermes-gateway.service": { LoadState: "loaded", FragmentPath: GATEWAY_UNIT },
    };
    const systemctl = { show: (unit: string) => new Map(Object.entries(shown[unit] ?? { LoadState: "not-found" })) } as unknown as Systemctl;
    const checks: DoctorCheck[] = [];
    gateServiceChecks({ scope: "system", root, home: "/root" }, ["hermes-gateway.service"], systemctl, checks);
    return checks.filter((c) => c.check === "gate secrets");
  }
  const named = ["agent:/srv/agent-hermes/.env", "agent:?/home/agent/.codex/auth.json"];
  /** The ok line: nothing to warn about, what the gate knows. */
  const known = (files: number, optional: number, copies: string) => ({
    check: "gate secrets",
    status: "pass",
    message: `media-outbox-gate.service's gate-secrets line names ${files} file(s) to copy the agents' secrets from (${optional} of them optional stores); ${copies}`,
  });
  const stopped = "no copies are in /run/media-outbox-gate now: media-outbox-gate.service is not running, and they are copied again when it starts";

  it("is quiet when the gate's units name it, and takes its directory for no Hermes home: its ok line says what the gate knows", () => {
    expect(secretChecks(target("doctor-codex-named", [...named, "agent:?codex-home:/srv/codex-a/auth.json"]))).toEqual([known(3, 2, stopped)]);
  });

  it("its ok line counts the gate's copies as the one running doctor sees them; while the gate runs without them, it warns", () => {
    const root = target("doctor-copies-counted", [...named, "agent:?codex-home:/srv/codex-a/auth.json"]);
    // Running (socket-activated, it is often not): systemd made its runtime directory, gate-secrets its copies.
    expect(secretChecks(root, "active")).toEqual([
      {
        check: "gate secrets",
        status: "warn",
        message: "media-outbox-gate.service's gate-secrets line names 3 file(s) to copy the agents' secrets from (2 of them optional stores), but /run/media-outbox-gate is not there while media-outbox-gate.service runs: the gate knows none of their values",
        fix: "systemctl restart media-outbox-gate.service",
      },
    ]);
    const copies = path.join(root, "run/media-outbox-gate");
    fs.mkdirSync(copies, { recursive: true });
    for (const name of ["hermes-env-0", "hermes-env-2-codex-home-auth.json", ".hermes-env-1.77.tmp", "notes"]) fs.writeFileSync(path.join(copies, name), "x\n");
    fs.mkdirSync(path.join(copies, "hermes-env-9"));
    expect(secretChecks(root, "active")).toEqual([known(3, 2, "2 copies are in /run/media-outbox-gate now, the values the gate knows")]);
    // Where the one running doctor may not look (the directory is the gate user's, 0700).
    fs.rmSync(copies, { recursive: true });
    fs.writeFileSync(copies, "");
    expect(secretChecks(root, "active")).toEqual([known(3, 2, `you (${os.userInfo().username}) cannot look into /run/media-outbox-gate (ENOTDIR)`)]);
  });

  it("names a gateway the gate's units name (gateway:) that systemd no longer knows: what install found for it is copied still, stale; not one that is there", () => {
    const gateway = (unit: string) => `agent:?gateway:/etc/systemd/system/${unit}`;
    const root = target("doctor-gateway-gone", [...named, gateway("hermes-gateway.service"), gateway("hermes-gateway-old.service"), gateway("hermes-gateway-\\x1b.service")]);
    const gone = secretChecks(root).filter((c) => c.message.includes("no longer a unit systemd knows"));
    expect(gone).toEqual([
      {
        check: "gate secrets",
        status: "warn",
        message:
          "hermes-gateway-old.service, hermes-gateway-\\x1b.service: covered at install, no longer a unit systemd knows: the gate's units still name what install found for them (their EnvironmentFile= and Environment= files, their user's Hermes files), and the gate goes on copying those that are there: stale copies, of a gateway that is gone",
        fix: "media-outbox uninstall systemd --system, then media-outbox install systemd --system --gate again with the same options: the gate's units then name the gateways there now",
      },
    ]);
    // Every gateway named is there: nothing said.
    expect(secretChecks(target("doctor-gateway-there", [...named, gateway("hermes-gateway.service")])).filter((c) => c.message.includes("no longer"))).toEqual([]);
  });

  it("says nothing of a credential file's variable a followed gateway's unit sets (gate-secrets copies the shared Nous store and the Google key there at each run); names one it cannot follow (relative), not its value", () => {
    const root = target("doctor-credential-paths", [...named, "agent:?gateway:/etc/systemd/system/hermes-gateway.service"]);
    const said = () => secretChecks(root).filter((c) => c.message.includes("credential file there"));
    expect(said()).toEqual([]);
    fs.writeFileSync(
      path.join(root, GATEWAY_UNIT.slice(1)),
      "[Service]\nUser=agent\nEnvironment=HERMES_HOME=/srv/agent-hermes GOOGLE_APPLICATION_CREDENTIALS=/srv/secret-sa.json\nEnvironment=HERMES_SHARED_AUTH_DIR=/srv/nous-shared\nExecStart=/bin/true\n",
    );
    expect(said()).toEqual([]);
    fs.writeFileSync(path.join(root, GATEWAY_UNIT.slice(1)), "[Service]\nUser=agent\nEnvironment=HERMES_HOME=/srv/agent-hermes GOOGLE_APPLICATION_CREDENTIALS=keys/secret-sa.json\nExecStart=/bin/true\n");
    const found = said();
    expect(found).toEqual([
      {
        check: "gate secrets",
        status: "warn",
        message: `GOOGLE_APPLICATION_CREDENTIALS for hermes-gateway.service (set in ${GATEWAY_UNIT}) is keys/secret-sa.json, not an absolute path: the gate will not know the Google service account key there: the gateway's Hermes reads a credential file there that the gate does not copy (a service account's private key is still found by its format)`,
        fix: "write that variable as an absolute path, without ${...} or a .. component: gate-secrets then copies the file at each run",
      },
    ]);
  });

  it("names one the gateway sets now that the gate's units do not name: in its unit (an install before media-outbox named it), or in its Hermes .env since install where gate-secrets does not follow it as Hermes does; not one that gate-secrets follows from the named .env", () => {
    const root = target("doctor-codex-unnamed", named);
    const unnamed = (file: string) => ({
      check: "gate secrets",
      status: "warn",
      message: `${file} (the Codex CLI's auth.json in a gateway's CODEX_HOME): set since install, not named in the gate's units: the gate does not know the values there`,
      fix: "run media-outbox install systemd --gate again, with the same options",
    });
    expect(secretChecks(root)).toEqual([unnamed("/srv/codex-a/auth.json")]);
    // Set since in the Hermes .env the units name, over the unit's: gate-secrets reads it there at each run (~ the passwd home).
    const dotEnv = path.join(root, "srv/agent-hermes/.env");
    fs.writeFileSync(dotEnv, "TELEGRAM_BOT_TOKEN=7000000001:AAHfakeTokenValueOnlyForTheseTests\nCODEX_HOME=~/codex-b\n");
    expect(secretChecks(root)).toEqual([known(2, 1, stopped)]);
    // A .env larger than gate-secrets reads gives it nothing to follow: Hermes reads it all the same.
    fs.writeFileSync(dotEnv, `CODEX_HOME=/srv/codex-big\n#${"x".repeat(1024 * 1024)}\n`);
    expect(secretChecks(root).filter((c) => c.message.includes("set since install"))).toEqual([unnamed("/srv/codex-big/auth.json")]);
    // A managed .env sets it over the home's: Hermes reads that one, which gate-secrets does not follow.
    fs.writeFileSync(dotEnv, "CODEX_HOME=/srv/codex-b\n");
    fs.mkdirSync(path.join(root, "etc/hermes"), { recursive: true });
    fs.writeFileSync(path.join(root, "etc/hermes/.env"), "CODEX_HOME=/srv/codex-m\n");
    expect(secretChecks(root)).toEqual([unnamed("/srv/codex-m/auth.json")]);
    // Named at install, since moved by the .env to a ~ the unit's HOME expands, which gate-secrets does not know (it takes the passwd home): named, escaped.
    const moved = target("doctor-codex-moved", [...named, "agent:?codex-home:/srv/codex-a/auth.json"]);
    fs.writeFileSync(path.join(moved, GATEWAY_UNIT.slice(1)), "[Service]\nUser=agent\nEnvironment=HERMES_HOME=/srv/agent-hermes HOME=/srv/agent-home CODEX_HOME=/srv/codex-a\nExecStart=/bin/true\n");
    fs.writeFileSync(path.join(moved, "srv/agent-hermes/.env"), "CODEX_HOME=~/codex-\x1bMEDIA:/c\n");
    expect(secretChecks(moved)).toEqual([unnamed("/srv/agent-home/codex-\\x1bMEDIA\\x3a/c/auth.json")]);
  });

  it("names a managed scope a gateway's HERMES_MANAGED_DIR now puts elsewhere, its .env and config.yaml; a named one is judged as the gate reads it (.env and YAML lines) and taken for no Hermes home", () => {
    const root = target("doctor-managed", [...named, "agent:?codex-home:/srv/codex-a/auth.json"]);
    fs.writeFileSync(path.join(root, "srv/agent-hermes/.env"), "HERMES_MANAGED_DIR=/opt/managed\n");
    expect(secretChecks(root)).toEqual([
      {
        check: "gate secrets",
        status: "warn",
        message:
          "/opt/managed/.env (the managed scope's, in a gateway's HERMES_MANAGED_DIR), /opt/managed/config.yaml (the managed scope's, in a gateway's HERMES_MANAGED_DIR): set since install, not named in the gate's units: the gate does not know the values there",
        fix: "run media-outbox install systemd --gate again, with the same options",
      },
    ]);
    // Named: quiet, its auth.json (a Hermes store's name) not asked for.
    const named2 = target("doctor-managed-named", [...named, "agent:?codex-home:/srv/codex-a/auth.json", "agent:?managed:/opt/managed/.env", "agent:?managed:/opt/managed/config.yaml"]);
    fs.writeFileSync(path.join(named2, "srv/agent-hermes/.env"), "HERMES_MANAGED_DIR=/opt/managed\n");
    fs.mkdirSync(path.join(named2, "opt/managed"), { recursive: true });
    fs.writeFileSync(path.join(named2, "opt/managed/.env"), "DASHBOARD_SECRET=Mg7Kd2Vx9Qp4Lr8Tw3Zn\n");
    fs.writeFileSync(path.join(named2, "opt/managed/auth.json"), "{}\n");
    expect(secretChecks(named2)).toEqual([known(5, 4, stopped)]);
  });

  it("names none of them for a gateway the line names (gateway:): gate-secrets follows its environment at each run; a managed .env that sets MEDIA_OUTBOX_DIR, which gate-secrets refuses to follow, fails the gateway's agents line", () => {
    const followedLine = [...named, "agent:?gateway:/etc/systemd/system/hermes-gateway.service"];
    const root = target("doctor-gateway-followed", followedLine);
    expect(secretChecks(root)).toEqual([known(3, 2, stopped)]);
    fs.writeFileSync(path.join(root, "srv/agent-hermes/.env"), "HERMES_MANAGED_DIR=/opt/managed\n");
    fs.mkdirSync(path.join(root, "opt/managed"), { recursive: true });
    fs.writeFileSync(path.join(root, "opt/managed/.env"), "CODEX_HOME=/srv/codex-m\n");
    expect(secretChecks(root)).toEqual([known(3, 2, stopped)]);
    // Without gateway: on the line (an install before media-outbox named it), the same is named.
    const older = target("doctor-gateway-older", named);
    fs.writeFileSync(path.join(older, "srv/agent-hermes/.env"), "HERMES_MANAGED_DIR=/opt/managed\n");
    expect(secretChecks(older).map((c) => c.message.split(": ")[0])).toEqual([
      "/opt/managed/.env (the managed scope's, in a gateway's HERMES_MANAGED_DIR), /opt/managed/config.yaml (the managed scope's, in a gateway's HERMES_MANAGED_DIR), /srv/codex-a/auth.json (the Codex CLI's auth.json in a gateway's CODEX_HOME)",
    ]);
    // The agents line: the managed .env the gateway's Hermes loads, set since install.
    const agents = () => {
      const checks: DoctorCheck[] = [];
      gateAgentChecks({ scope: "system", root, home: "/root" }, ["hermes-gateway.service"], undefined, checks);
      return checks;
    };
    expect(agents().map((c) => c.status)).toEqual(["pass"]);
    fs.writeFileSync(path.join(root, "opt/managed/.env"), "MEDIA_OUTBOX_DIR=/srv/local\x1b]0;\n");
    expect(agents()).toEqual([
      {
        check: "agents of hermes-gateway.service",
        status: "fail",
        message: "MEDIA_OUTBOX_DIR is set by /opt/managed/.env (the managed .env; gate-secrets does not follow it, and keeps its copies from before): the agents' prepare publishes into that directory, never through the gate",
        fix: "remove it there, then systemctl restart hermes-gateway.service",
      },
    ]);
  });

  it("judges a named one as the gate reads it: JSON", () => {
    const root = target("doctor-codex-damaged", [...named, "agent:?codex-home:/srv/codex-a/auth.json"]);
    fs.writeFileSync(path.join(root, "srv/codex-a/auth.json"), "tokens: not JSON\n");
    expect(secretChecks(root)).toEqual([
      {
        check: "gate secrets",
        status: "warn",
        message: "the gate does not know the values of /srv/codex-a/auth.json: it is not valid JSON",
        fix: "make each a regular file of at most 1 MiB (a JSON store: valid JSON); the gate copies it again when it changes",
      },
    ]);
  });
});

describe("gate-secrets: the profiles of a Hermes home (USER:?profiles:DIR/), listed at each run as their agent", () => {
  // Values of no vendor format: only the copies can make them known.
  const WORK = "Wk8Rz3Vq6Lp1Xn4Tb7Jd";
  const LATE = "Lt4Qw9Zx2Kv7Np3Rb8Hm";
  const CODEX = "Cp5Jt8Wq1Zr6Kn3Vx9Lb";
  const LINKED = "Rl6Hd2Wm9Qx4Tz7Kv3Np";
  let h: ReturnType<typeof makeHome> | undefined;

  afterAll(async () => {
    await killAll();
    h?.cleanup();
  });

  it("copies each profile's .env, stores, store directories' files and CODEX_HOME's auth.json as its agent; a profile made after a run at the next; its copies go with it; a link and a name with control characters are refused, escaped, and named beside the copies: the gate refuses every text while they are there (unscannable_content, as local mode); then refuses the profiles' values, naming their copies", async () => {
    const home = path.join(base, "profiles-home");
    const profiles = path.join(home, ".hermes", "profiles");
    nobodysFile(home, ".hermes/profiles/work/.env", `WORK_SERVICE_TOKEN=${WORK}\nCODEX_HOME=~/codex-work\n`);
    nobodysFile(home, ".hermes/profiles/work/auth.json", '{"providers": {"nous": {"refresh_token": "workRefreshTokenOnlyForTests"}}}\n');
    nobodysFile(home, ".hermes/profiles/work/mcp-tokens/tracker.json", '{"access_token": "workMcpTokenOnlyForTheseTests"}\n');
    nobodysFile(home, "codex-work/auth.json", JSON.stringify({ tokens: { refresh_token: CODEX, account_id: "acct-4321" } }));
    const copies = intoDir("run-profiles");
    const arg = `nobody:?profiles:${profiles}/`;
    const first = run(["--into", copies, arg], { nobodysHome: home });
    expect(first.signal, "gate-secrets hung").toBeNull();
    expect(first.code, first.stderr).toBe(0);
    expect(lines(first.stderr)).toEqual(["media-outbox: gate-secrets: 1 of 1 secret file(s) copied for the gate"]);
    const workCopies = ["hermes-env-0-profile.work.auth.json", "hermes-env-0-profile.work.codex-home-auth.json", "hermes-env-0-profile.work.env", "hermes-env-0-profile.work.mcp-tokens-0"];
    expect(fs.readdirSync(copies).sort()).toEqual(workCopies);
    const copy = fs.statSync(path.join(copies, "hermes-env-0-profile.work.env"));
    expect([copy.uid, copy.gid, copy.mode & 0o7777]).toEqual([DAEMON, DAEMON, 0o400]);

    // After that run: `hermes profile create late` (its directory, then its .env); a link to a directory only root may read;
    // a name with control characters (and a forged directive); a name Hermes takes for no profile.
    nobodysFile(home, ".hermes/profiles/late/.env", `LATE_SERVICE_TOKEN=${LATE}\n`);
    const rootOnly = path.join(base, "root-only-profile");
    fs.mkdirSync(rootOnly, { mode: 0o755 });
    fs.writeFileSync(path.join(rootOnly, ".env"), `LINKED_SERVICE_TOKEN=${LINKED}\n`, { mode: 0o644 });
    const linked = path.join(profiles, "linked");
    fs.symlinkSync(rootOnly, linked);
    fs.lchownSync(linked, NOBODY, NOBODY);
    const control = path.join(profiles, "p\u001b]0;MEDIA:x\u0007");
    nobodysFile(control, ".env", "CONTROL_SERVICE_TOKEN=Ct7Hv2Qm9Wx4Lz8Kd3Rp\n");
    nobodysFile(home, ".hermes/profiles/Odd Name/.env", "ODD_SERVICE_TOKEN=Od3Vk8Zq2Wm7Xr4Lt9Hb\n");
    const second = run(["--into", copies, arg], { nobodysHome: home });
    expect(second.code, second.stderr).toBe(0);
    expect(lines(second.stderr)).toEqual([
      `media-outbox: gate-secrets: skipped ${linked} (read as nobody): it is a symbolic link, which is not followed (the agent's to point anywhere); make the profile a directory; the gate will not know its values`,
      `media-outbox: gate-secrets: skipped ${profiles}/p\\x1b]0;MEDIA\\x3ax\\x07 (read as nobody): its name holds a control character or bytes that are no UTF-8; name the profile with letters, digits, _ and -; the gate will not know its values`,
      "media-outbox: gate-secrets: 1 of 1 secret file(s) copied for the gate",
    ]);
    expect(second.stderr).not.toMatch(/[\u0000-\u0009\u000b-\u001f]/);
    // Hermes' names first (late, work), then the others: that one is named by its place. The two left out are written beside the copies.
    expect(fs.readdirSync(copies).sort()).toEqual(["hermes-env-0-profile.late.env", ...workCopies, "hermes-env-0-profile.~2.env", "hermes-env-0-profiles-untaken"].sort());
    const marker = fs.statSync(path.join(copies, "hermes-env-0-profiles-untaken"));
    expect([marker.uid, marker.gid, marker.mode & 0o7777]).toEqual([DAEMON, DAEMON, 0o400]);

    h = makeHome();
    const gate = await startGate(h.home, { ...h.env, HERMES_HOME: path.join(h.home, "gate-home"), CREDENTIALS_DIRECTORY: copies });
    // Its copies lack two profiles: every text is refused as local mode refuses it (the link's value too: it is not the gate's to read), the profiles named, escaped.
    for (const value of [LINKED, "meeting notes"]) {
      const answer = await rawExchange(gate.socket, post("notes.txt", `notes: ${value}\n`));
      expect(answer.json, value).toMatchObject({ success: false, media: [], media_dropped: [{ path: "notes.txt", code: "unscannable_content" }] });
      const reason: string = answer.json.media_dropped[0].reason;
      expect(reason).toContain("the secret check reads at most 32 Hermes profiles of a home");
      expect(reason).toContain(`${linked} (it is a symbolic link`);
      expect(reason).toContain(`${profiles}/p\\x1b]0;MEDIA\\x3ax\\x07 (its name holds a control character`);
      expect(answer.body).not.toContain(LINKED);
    }
    expect(gateLeftBehind(gate)).toEqual({ outbox: [], staging: [], ledger: [] });
    // Gone from the profiles directory: the next run writes no such file, and the gate knows every profile's values.
    fs.rmSync(linked);
    fs.rmSync(control, { recursive: true });
    expect(run(["--into", copies, arg], { nobodysHome: home }).code).toBe(0);
    expect(fs.readdirSync(copies).sort()).toEqual(["hermes-env-0-profile.late.env", ...workCopies, "hermes-env-0-profile.~2.env"].sort());
    for (const [value, named] of [
      [LATE, "LATE_SERVICE_TOKEN (the .env of Hermes profile late, credential hermes-env-0-profile.late.env)"],
      [WORK, "WORK_SERVICE_TOKEN (the .env of Hermes profile work, credential hermes-env-0-profile.work.env)"],
      [CODEX, "tokens.refresh_token (the Codex CLI's auth.json in the $CODEX_HOME of Hermes profile work, credential hermes-env-0-profile.work.codex-home-auth.json)"],
    ] as const) {
      const answer = await rawExchange(gate.socket, post("leak.txt", `notes: ${value}\n`));
      expect(answer.json, value).toMatchObject({ success: false, media: [], media_dropped: [{ path: "leak.txt", code: "secret_detected" }] });
      expect(answer.json.media_dropped[0].reason).toContain(`the value of ${named}`);
      expect(answer.body).not.toContain(value);
    }
    // Each refusal left nothing in the gate's outbox, staging or ledger.
    expect(gateLeftBehind(gate)).toEqual({ outbox: [], staging: [], ledger: [] });
    // The link was not followed: its values were never the gate's.
    expect((await rawExchange(gate.socket, post("linked.txt", `notes: ${LINKED}\n`))).json).toMatchObject({ success: true });
    for (const value of [WORK, LATE, CODEX]) expect(gate.log() + first.stderr + second.stderr).not.toContain(value);

    // `hermes profile delete late`: its copies go at the next run; the whole directory gone: all of them.
    fs.rmSync(path.join(profiles, "late"), { recursive: true });
    expect(run(["--into", copies, arg], { nobodysHome: home }).code).toBe(0);
    expect(fs.readdirSync(copies).filter((n) => n.includes(".late."))).toEqual([]);
    expect(fs.readdirSync(copies)).toEqual(expect.arrayContaining(workCopies));
    fs.rmSync(profiles, { recursive: true });
    const gone = run(["--into", copies, arg], { nobodysHome: home });
    expect(lines(gone.stderr)).toEqual(["media-outbox: gate-secrets: 0 of 1 secret file(s) copied for the gate (1 optional store(s) not there)"]);
    expect(fs.readdirSync(copies)).toEqual([]);
  });

  it("follows a profile's CODEX_HOME as install follows a gateway's: one it cannot follow is a journal line, the value escaped; a profiles directory that is a link is refused", () => {
    const home = path.join(base, "profiles-codex");
    const profiles = path.join(home, ".hermes", "profiles");
    nobodysFile(home, ".hermes/profiles/rel/.env", "CODEX_HOME=codex\u001b[31m\n");
    nobodysFile(home, ".hermes/profiles/expands/.env", "CODEX_HOME=${HOME}/codex\n");
    nobodysFile(home, ".hermes/profiles/dots/.env", "CODEX_HOME=/srv/../etc\n");
    const copies = intoDir("run-profiles-codex");
    const r = run(["--into", copies, `nobody:?profiles:${profiles}/`], { nobodysHome: home });
    expect(r.code, r.stderr).toBe(0);
    expect(lines(r.stderr)).toEqual([
      `media-outbox: gate-secrets: CODEX_HOME in ${profiles}/dots/.env is /srv/../etc, which holds a ".." component; write it without: the gate will not know a Codex CLI's auth.json there`,
      `media-outbox: gate-secrets: CODEX_HOME in ${profiles}/expands/.env uses \${...} expansion, which install does not follow; write the directory out: the gate will not know a Codex CLI's auth.json there`,
      `media-outbox: gate-secrets: CODEX_HOME in ${profiles}/rel/.env is codex\\x1b[31m, not an absolute path: the gate will not know a Codex CLI's auth.json there`,
      "media-outbox: gate-secrets: 1 of 1 secret file(s) copied for the gate",
    ]);
    // A profiles directory that is a link: not followed.
    const other = path.join(base, "profiles-linked-home");
    nobodysFile(other, ".hermes/keep", "");
    fs.symlinkSync(profiles, path.join(other, ".hermes", "profiles"));
    fs.lchownSync(path.join(other, ".hermes", "profiles"), NOBODY, NOBODY);
    const copies2 = intoDir("run-profiles-linked");
    const linked = run(["--into", copies2, `nobody:?profiles:${path.join(other, ".hermes", "profiles")}/`]);
    expect(lines(linked.stderr)).toEqual([
      `media-outbox: gate-secrets: skipped ${path.join(other, ".hermes", "profiles")}/ (read as nobody): it is a symbolic link, which is not followed (the agent's to point anywhere); the gate will not know its values`,
      "media-outbox: gate-secrets: 0 of 1 secret file(s) copied for the gate",
    ]);
    expect(fs.readdirSync(copies2)).toEqual([]);
  });

  it("copies at most 32 profiles of a home and watches the first 8 (Hermes' own names first), naming in its journal each profile copied and not watched and each entry not taken; looks at a bounded number of entries whatever the directory holds", () => {
    const home = path.join(base, "profiles-many");
    const profiles = path.join(home, ".hermes", "profiles");
    const id = (i: number) => `p${String(i).padStart(2, "0")}`;
    for (let i = 0; i < 35; i++) nobodysFile(home, `.hermes/profiles/${id(i)}/.env`, `P${i}_SERVICE_TOKEN=Mn${i}Kq8Wz2Lx7Vb4Rt9\n`);
    nobodysFile(home, ".hermes/profiles/.p.staging-1/.env", "STAGING_SERVICE_TOKEN=Sg4Kq8Wz2Lx7Vb4Rt9\n");
    const copies = intoDir("run-profiles-many");
    const log = path.join(base, "systemctl-many.log");
    const fake = path.join(base, "fake-systemctl-many");
    fs.writeFileSync(fake, `#!/bin/sh\nprintf '%s\\n' "$*" >> '${log}'\n`, { mode: 0o755 });
    const r = run(["--into", copies, "--watch-profiles", `nobody:?profiles:${profiles}/`], { env: { MEDIA_OUTBOX_SYSTEMCTL: fake } });
    const dirOf = (i: number) => path.join(profiles, id(i));
    const range = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => from + k);
    expect(lines(r.stderr)).toEqual([
      `media-outbox: gate-secrets: ${range(8, 32).map(dirOf).join(", ")}: copied, not watched: at most 8 Hermes profiles of a home are watched (each takes 4 of root's inotify instances); a change there is copied for the gate with the next copy (the gate's start, a change to a watched file)`,
      `media-outbox: gate-secrets: ${[...range(32, 35).map(dirOf), path.join(profiles, ".p.staging-1")].join(", ")}: not taken: at most 32 Hermes profiles of a home are copied for the gate (Hermes' own names first, in name order); the gate does not know the values there, and refuses every file whose check needs them (unscannable_content)`,
      "media-outbox: gate-secrets: 1 of 1 secret file(s) copied for the gate",
    ]);
    // Those left out are named beside the copies, as local mode names them.
    expect(fs.readdirSync(copies).sort()).toEqual([...range(0, 32).map((i) => `hermes-env-0-profile.${id(i)}.env`), "hermes-env-0-profiles-untaken"].sort());
    expect(fs.readFileSync(path.join(copies, "hermes-env-0-profiles-untaken"), "utf8").split("\n")).toEqual([...range(32, 35).map(dirOf), path.join(profiles, ".p.staging-1")].map((d) => `${d} (past the 32 profiles of a Hermes home read)`));
    // Only the first 8 are watched: 4 watches each.
    const started = fs.readFileSync(log, "utf8").split("\n").filter((l) => l.startsWith("start "));
    expect(started).toHaveLength(1);
    const escaped = (p: string) => execFileSync("systemd-escape", ["--path", p], { encoding: "utf8" }).trim();
    expect(started[0]!.split(" ").slice(1)).toEqual(range(0, 8).flatMap((i) => [dirOf(i), `${dirOf(i)}/.env`, `${dirOf(i)}/mcp-tokens`, `${dirOf(i)}/google_chat_user_tokens`].map((p) => `media-outbox-gate-secrets-watch@${escaped(p)}.path`)));

    // 100,000 entries of each kind: a few are looked at (lstat, as the agent), each name once.
    const ids = Array.from({ length: 100_000 }, (_, i) => `q${i}`);
    const odd = Array.from({ length: 100_000 }, (_, i) => `Q ${i}\u0007`);
    const dir = fs.statSync(base);
    const link = fs.lstatSync(path.join(profiles, "..", ".."));
    let looked = 0;
    const dirs = takeProfiles("/p", [...odd, ...ids], () => (looked++, dir));
    expect(dirs.profiles).toHaveLength(32);
    expect(dirs.profiles.slice(0, 9).map((p) => [p.name, p.watched])).toEqual([...["q0", "q1", "q10", "q100", "q1000", "q10000", "q10001", "q10002"].map((n) => [n, true]), ["q10003", false]]);
    expect(looked).toBe(32);
    expect(dirs.past).toHaveLength(8);
    looked = 0;
    const links = takeProfiles("/p", [...odd, ...ids], () => (looked++, { ...link, isSymbolicLink: () => true, isDirectory: () => false } as fs.Stats));
    expect(links.profiles).toEqual([]);
    expect(looked).toBe(64);
    expect(links.refused).toHaveLength(8);
    expect(links.refused.length + links.past.length + links.more).toBe(200_000);
  });

  it("an operator's profile pushed past the 32 by profiles the agent made: the gate refuses every text (unscannable_content, naming the bound and the profile) as local mode does, never publishes its value; with the agent's gone, it knows the value again", async () => {
    const home = path.join(base, "profiles-pushed");
    const profiles = path.join(home, ".hermes", "profiles");
    const OPERATOR = "Op7Zq3Wx9Kv2Lm8Rt4Hb";
    nobodysFile(home, ".hermes/profiles/zz-operator/.env", `OPERATOR_SERVICE_TOKEN=${OPERATOR}\n`);
    // The agent's own profiles, named before it.
    for (let i = 0; i < 32; i++) nobodysFile(home, `.hermes/profiles/a${String(i).padStart(2, "0")}/keep`, "");
    const copies = intoDir("run-profiles-pushed");
    const arg = `nobody:?profiles:${profiles}/`;
    expect(run(["--into", copies, arg], { nobodysHome: home }).code).toBe(0);
    const own = makeHome();
    const gate = await startGate(own.home, { ...own.env, HERMES_HOME: path.join(own.home, "gate-home"), CREDENTIALS_DIRECTORY: copies });
    for (const text of [`notes: ${OPERATOR}\n`, "meeting notes\n"]) {
      const answer = await rawExchange(gate.socket, post("notes.txt", text));
      expect(answer.json, text).toMatchObject({ success: false, media: [], media_dropped: [{ path: "notes.txt", code: "unscannable_content" }] });
      const reason: string = answer.json.media_dropped[0].reason;
      expect(reason).toContain("the secret check reads at most 32 Hermes profiles of a home");
      expect(reason).toContain(`${profiles}/zz-operator (past the 32 profiles of a Hermes home read)`);
      expect(reason).toContain("keep at most 32 profiles in each Hermes home");
      expect(answer.body).not.toContain(OPERATOR);
    }
    expect(gateLeftBehind(gate)).toEqual({ outbox: [], staging: [], ledger: [] });
    // One of the agent's gone: 32, the operator's copied, its value refused by name, an ordinary text published.
    fs.rmSync(path.join(profiles, "a31"), { recursive: true });
    expect(run(["--into", copies, arg], { nobodysHome: home }).code).toBe(0);
    expect(fs.readdirSync(copies)).not.toContain("hermes-env-0-profiles-untaken");
    const leak = await rawExchange(gate.socket, post("leak.txt", `notes: ${OPERATOR}\n`));
    expect(leak.json).toMatchObject({ success: false, media_dropped: [{ path: "leak.txt", code: "secret_detected" }] });
    expect(leak.json.media_dropped[0].reason).toContain("OPERATOR_SERVICE_TOKEN (the .env of Hermes profile zz-operator");
    expect((await rawExchange(gate.socket, post("clean.txt", "meeting notes\n"))).json).toMatchObject({ success: true });
    expect(gate.log()).not.toContain(OPERATOR);
    await killAll();
    own.cleanup();
  });

  it("--watch-profiles: starts the watch of each profile's directory, .env and store directories (named as systemd-escape --path names them) before any file is read, copies a profile made meanwhile in the same run, and stops the watches of profiles gone", () => {
    const home = path.join(base, "profiles-watched");
    const profiles = path.join(home, ".hermes", "profiles");
    nobodysFile(home, ".hermes/profiles/my-work/.env", "WORK_SERVICE_TOKEN=Ww3Kq8Wz2Lx7Vb4Rt9Zp\n");
    const copies = intoDir("run-profiles-watched");
    const log = path.join(base, "systemctl-watched.log");
    const unit = watchUnitOf;
    const stale = unit("/srv/gone/profiles/old/.env");
    // A fake systemctl: logs each call and what the copies are then; at its first start, a profile is made (as Hermes makes one).
    const fake = path.join(base, "fake-systemctl");
    fs.writeFileSync(
      fake,
      `#!/bin/sh
printf '%s | %s\\n' "$*" "$(ls -A '${copies}' | tr '\\n' ' ')" >> '${log}'
case "$1" in
  start) if [ ! -e '${profiles}/made' ]; then mkdir '${profiles}/made' && printf 'MADE_SERVICE_TOKEN=Md6Kq8Wz2Lx7Vb4Rt9Zp\\n' > '${profiles}/made/.env' && chown -R ${NOBODY}:${NOBODY} '${profiles}/made'; fi ;;
  list-units) printf '%s loaded active waiting x\\n' '${stale}' '${unit(path.join(profiles, "my-work"))}' ;;
esac
`,
      { mode: 0o755 },
    );
    const r = run(["--into", copies, "--watch-profiles", `nobody:?profiles:${profiles}/`], { env: { MEDIA_OUTBOX_SYSTEMCTL: fake } });
    expect(r.code, r.stderr).toBe(0);
    expect(lines(r.stderr)).toEqual(["media-outbox: gate-secrets: 1 of 1 secret file(s) copied for the gate"]);
    // The profile made while the copies were made is copied in the same run (the directory is listed again).
    expect(fs.readdirSync(copies).sort()).toEqual(["hermes-env-0-profile.made.env", "hermes-env-0-profile.my-work.env"]);
    const watches = (dir: string) => [dir, `${dir}/.env`, `${dir}/mcp-tokens`, `${dir}/google_chat_user_tokens`].map(unit);
    expect(fs.readFileSync(log, "utf8").split("\n").filter((l) => l !== "")).toEqual([
      // The watches listed once, first; before a file was read: no copy yet. One already active (my-work's directory) is not started again.
      `list-units --all --plain --no-legend --full --type=path media-outbox-gate-secrets-watch@*.path | `,
      `start ${watches(path.join(profiles, "my-work")).slice(1).join(" ")} | `,
      `start ${watches(path.join(profiles, "made")).join(" ")} | hermes-env-0-profile.my-work.env `,
      `stop --no-block ${stale} | hermes-env-0-profile.made.env hermes-env-0-profile.my-work.env `,
    ]);
  });

  it("names a template's instances as systemctl takes them, by one rule for the gateway's template and the watches' (never the bare template, which names none)", () => {
    expect(templateInstances("hermes-gateway@.service")).toBe("hermes-gateway@*.service");
    expect(GATE_SECRETS_WATCHES).toBe("media-outbox-gate-secrets-watch@*.path");
    expect(restartTargets(["hermes-gateway.service", "hermes-gateway@.service", "hermes-gateway@work.service"])).toEqual(["hermes-gateway.service", "hermes-gateway@*.service", "hermes-gateway@work.service"]);
    for (const unit of ["hermes-gateway.service", "hermes-gateway@work.service", "media-outbox-gate-secrets-watch@.path.d"]) expect(() => templateInstances(unit), unit).toThrow(/is not a template unit/);
  });

  it("escapes a path for an instance name as systemd-escape --path does", () => {
    for (const p of ["/home/agent/.hermes/profiles/my-work/.env", "/.x/y", "/a b/é\\x:y_z.w", "/srv/p\u0007q/-", "/"]) {
      expect(escapeUnitPath(p), p).toBe(execFileSync("systemd-escape", ["--path", p], { encoding: "utf8" }).trim());
    }
  });
});

describe("gate-secrets: a file changed while the copies are made (no path unit sees it) is copied by another round", () => {
  // Values of no vendor format: only the copies can make them known; each version the same length, so only the times tell.
  const V1 = "RACE_SERVICE_TOKEN=Rv1Kq8Wz2Lx7Vb4Tn9Hd\n";
  const V2 = "RACE_SERVICE_TOKEN=Rv2Mc5Pz8Qd3Wj6Ky1Ls\n";
  const V3 = "RACE_SERVICE_TOKEN=Rv3Hn7Xb4Zt9Gf2Lq5Wc\n";
  const STORE = '{"access_token": "Rs8Tm3Vq6Kx1Zp4Nd7Hb"}\n';

  /**
   * A fake systemctl whose `stop` (the last thing a round does, after every
   * file was read: the stale watch it lists is stopped) runs `onStop`, given
   * the number of that stop: the agent writing while the copies are made,
   * exactly then. Each call and the copies' contents then are logged.
   */
  function fakeSystemctl(name: string, copies: string, onStop: string, onList = ""): { fake: string; log: string } {
    const log = path.join(base, `${name}.log`);
    const fake = path.join(base, `${name}-systemctl`);
    const stale = "media-outbox-gate-secrets-watch@srv-gone-profiles-old-.env.path";
    fs.writeFileSync(
      fake,
      `#!/bin/sh
printf '%s | %s\\n' "$1" "$(cat '${copies}'/hermes-env-* 2>/dev/null | tr '\\n' ' ')" >> '${log}'
case "$1" in
  list-units) ${onList}
    printf '%s loaded active waiting x\\n' '${stale}' ;;
  stop) n=$(grep -c '^stop ' '${log}'); ${onStop} ;;
esac
`,
      { mode: 0o755 },
    );
    return { fake, log };
  }

  it("a .env rewritten in place (same size, same inode) and a store made after they were read are copied by a second round, said in one journal line, their values never printed", () => {
    const dir = path.join(agentHome, "race-once");
    const env = nobodysFile(dir, ".env", V1);
    const store = path.join(dir, "auth.json");
    const copies = intoDir("run-race-once");
    // At the first round's end: the .env rewritten where it is (as `>` does), the store made (nobody's, as the agent makes it).
    const write = `if [ "$n" = 1 ]; then printf '${V2.replace("\n", "\\n")}' > '${env}' && printf '%s\\n' '${STORE.trim()}' > '${store}' && chown ${NOBODY}:${NOBODY} '${store}' && chmod 600 '${store}'; fi`;
    const { fake, log } = fakeSystemctl("race-once", copies, write);
    const ino = fs.statSync(env).ino;
    const r = run(["--into", copies, "--watch-profiles", `nobody:${env}`, `nobody:?${store}`], { env: { MEDIA_OUTBOX_SYSTEMCTL: fake } });
    expect(r.code, r.stderr).toBe(0);
    expect(fs.statSync(env).ino).toBe(ino);
    expect(fs.readFileSync(path.join(copies, "hermes-env-0"), "utf8")).toBe(V2);
    expect(fs.readFileSync(path.join(copies, "hermes-env-1"), "utf8")).toContain("Rs8Tm3Vq6Kx1Zp4Nd7Hb");
    expect(lines(r.stderr)).toEqual([
      `media-outbox: gate-secrets: ${env}, ${store} changed while the copies were made: copied again (round 2 of at most 3)`,
      "media-outbox: gate-secrets: 2 of 2 secret file(s) copied for the gate",
    ]);
    // The first round had copied the .env as it was (and no store); the second, what the agent wrote meanwhile.
    expect(fs.readFileSync(log, "utf8").split("\n").filter((l) => l !== "")).toEqual([`list-units | ${V1.trim()} `, `stop | ${V1.trim()} `, `stop | ${V2.trim()} ${STORE.trim()} `]);
    for (const value of ["Rv1Kq8Wz2Lx7Vb4Tn9Hd", "Rv2Mc5Pz8Qd3Wj6Ky1Ls", "Rs8Tm3Vq6Kx1Zp4Nd7Hb"]) expect(r.stdout + r.stderr).not.toContain(value);
  });

  it("files the agent wrote together just before they are read (each within the file clock's tick) are copied as written, in one round: each is read settled, none taken for changed while the copies were made", () => {
    const dir = path.join(agentHome, "written-together");
    const named = [nobodysFile(dir, "a.env", V1), nobodysFile(dir, "b.env", V1)];
    const profiles = path.join(dir, "profiles");
    const profileEnv = nobodysFile(profiles, "work/.env", V1);
    const copies = intoDir("run-written-together");
    // The listing of the watches comes after the profiles directory is listed and before any file is read: there, all three rewritten in place (same size, same inode).
    const write = [...named, profileEnv].map((f) => `printf '${V2.replace("\n", "\\n")}' > '${f}'`).join(" && ");
    const { fake, log } = fakeSystemctl("written-together", copies, "", `${write};`);
    const r = run(["--into", copies, "--watch-profiles", ...named.map((f) => `nobody:${f}`), `nobody:?profiles:${profiles}/`], { env: { MEDIA_OUTBOX_SYSTEMCTL: fake } });
    expect(r.code, r.stderr).toBe(0);
    expect(lines(r.stderr)).toEqual(["media-outbox: gate-secrets: 3 of 3 secret file(s) copied for the gate"]);
    for (const copy of ["hermes-env-0", "hermes-env-1", "hermes-env-2-profile.work.env"]) expect(fs.readFileSync(path.join(copies, copy), "utf8"), copy).toBe(V2);
    // One round: its listing, then the stop that ends it, the copies then as written.
    const calls = fs.readFileSync(log, "utf8").split("\n").filter((l) => l !== "");
    expect(calls.filter((l) => l.startsWith("stop"))).toEqual([`stop | ${V2.trim()} ${V2.trim()} ${V2.trim()} `]);
    expect(calls.filter((l) => l.startsWith("list-units"))).toEqual(["list-units | "]);
  });

  it("a file that keeps changing while the copies are made is copied at most 3 times in one run; a journal line names it (escaped), and the run ends (exit 0) with the copies of its last round", () => {
    const dir = path.join(agentHome, "race-\u001b[31mloop");
    const env = nobodysFile(dir, ".env", V1);
    const copies = intoDir("run-race-loop");
    // At every round's end: the .env rewritten again (V2, V3, V2, …).
    const write = `if [ $((n % 2)) = 1 ]; then printf '${V2.replace("\n", "\\n")}' > '${env}'; else printf '${V3.replace("\n", "\\n")}' > '${env}'; fi`;
    const { fake, log } = fakeSystemctl("race-loop", copies, write);
    const r = run(["--into", copies, "--watch-profiles", `nobody:${env}`], { env: { MEDIA_OUTBOX_SYSTEMCTL: fake } });
    expect(r.code, r.stderr).toBe(0);
    const named = env.replace("\u001b", "\\x1b");
    expect(lines(r.stderr)).toEqual([
      `media-outbox: gate-secrets: ${named} changed while the copies were made: copied again (round 2 of at most 3)`,
      `media-outbox: gate-secrets: ${named} changed while the copies were made: copied again (round 3 of at most 3)`,
      `media-outbox: gate-secrets: ${named} kept changing while the copies were made (3 rounds): the gate has the copies of the last round; the next change to a watched file copies them again`,
      "media-outbox: gate-secrets: 1 of 1 secret file(s) copied for the gate",
    ]);
    // Three rounds, each ending in a write; the copy is what the third read: V3, written at the second round's end.
    expect(fs.readFileSync(log, "utf8").split("\n").filter((l) => l.startsWith("stop"))).toEqual([`stop | ${V1.trim()} `, `stop | ${V2.trim()} `, `stop | ${V3.trim()} `]);
    expect(fs.readFileSync(path.join(copies, "hermes-env-0"), "utf8")).toBe(V3);
    expect(fs.readFileSync(env, "utf8")).toBe(V2);
  });
});

describe("gate-secrets: the CODEX_HOME a Hermes home's .env sets (USER:PATH/.env), followed at each run as a profile's", () => {
  // Values of no vendor format: only the copies can make them known.
  const CODEX_A = "Ca7Kq2Wz9Lx4Vb8Rt3Nm";
  const CODEX_B = "Cb3Hv8Qm2Wx7Lz4Kd9Rp";
  const startGateOn = gatesOnCopies();
  const codexAuth = (token: string) => codexAuthJson(token, "acct-2468");

  it("copies the Codex CLI's auth.json where a home's .env puts CODEX_HOME, one set after a run at the next (read as the agent; ~ the .env's HOME, else the passwd home), named as a gateway's $CODEX_HOME copy; not a file the line names already, nor a managed .env's; its copy goes with the setting, the file or the .env; the gate refuses its value, never printing it", async () => {
    const home = path.join(base, "home-codex");
    const envA = nobodysFile(home, ".hermes/.env", "HOME_SERVICE_TOKEN=Hs4Kq8Wz2Lx7Vb4Rt9Zp\n");
    const authA = nobodysFile(home, "codex-a/auth.json", codexAuth(CODEX_A));
    // Another home whose .env sets HOME: its ~ is that HOME, not nobody's passwd home.
    const other = path.join(base, "home-codex-other");
    const envB = nobodysFile(other, ".hermes/.env", `HOME=${other}\nCODEX_HOME=~/codex-b\n`);
    const authB = nobodysFile(other, "codex-b/auth.json", codexAuth(CODEX_B));
    // A home whose .env names the CODEX_HOME install named (USER:?codex-home:FILE): copied once, as named.
    const namedAuth = nobodysFile(path.join(base, "codex-named"), "auth.json", codexAuth("Cn5Jt8Wq1Zr6Kn3Vx9Lb"));
    const envC = nobodysFile(path.join(base, "home-codex-named"), ".hermes/.env", `CODEX_HOME=${path.dirname(namedAuth)}\n`);
    // A managed scope's .env (STORE managed:) is not a home's: its CODEX_HOME is not followed here.
    const envD = nobodysFile(path.join(base, "managed-codex"), ".env", `CODEX_HOME=${path.dirname(authA)}\n`);
    // Nor a store's, .op.env, though it holds .env lines.
    const opEnv = nobodysFile(home, ".hermes/.op.env", `OP_SERVICE_ACCOUNT_TOKEN=ops_Op3Kq8Wz2Lx7Vb4Rt9\nCODEX_HOME=${path.dirname(authA)}\n`);
    const copies = intoDir("run-home-codex");
    const line = ["--into", copies, `nobody:${envA}`, `nobody:${envB}`, `nobody:${envC}`, `nobody:?codex-home:${namedAuth}`, `nobody:?managed:${envD}`, `nobody:?${opEnv}`];
    const copy = (name: string) => path.join(copies, name);

    const first = run(line, { nobodysHome: home });
    expect(first.signal, "gate-secrets hung").toBeNull();
    expect(first.code, first.stderr).toBe(0);
    expect(lines(first.stderr)).toEqual(["media-outbox: gate-secrets: 6 of 6 secret file(s) copied for the gate"]);
    expect(fs.readdirSync(copies).sort()).toEqual(["hermes-env-0", "hermes-env-1", "hermes-env-1-codex-home-auth.json", "hermes-env-2", "hermes-env-3-codex-home-auth.json", "hermes-env-4", "hermes-env-5"]);
    expect(fs.readFileSync(copy("hermes-env-1-codex-home-auth.json"), "utf8")).toBe(fs.readFileSync(authB, "utf8"));

    // After that run, the agent sets CODEX_HOME in its .env (Hermes loads it over its environment): copied at the next.
    fs.appendFileSync(envA, "CODEX_HOME=~/codex-a\n");
    const second = run(line, { nobodysHome: home });
    expect(lines(second.stderr)).toEqual(["media-outbox: gate-secrets: 6 of 6 secret file(s) copied for the gate"]);
    expect(fs.readFileSync(copy("hermes-env-0-codex-home-auth.json"), "utf8")).toBe(fs.readFileSync(authA, "utf8"));
    const st = fs.statSync(copy("hermes-env-0-codex-home-auth.json"));
    expect([st.uid, st.gid, st.mode & 0o7777]).toEqual([DAEMON, DAEMON, 0o400]);
    expect(fs.readdirSync(copies).filter((n) => n.endsWith("codex-home-auth.json")).sort()).toEqual(["hermes-env-0-codex-home-auth.json", "hermes-env-1-codex-home-auth.json", "hermes-env-3-codex-home-auth.json"]);

    const gate = await startGateOn(copies);
    const codexHomeCopy = (n: number) => `the value of tokens.refresh_token (the Codex CLI's auth.json in a gateway's $CODEX_HOME, credential hermes-env-${n}-codex-home-auth.json)`;
    await expectRefused(gate, [
      [CODEX_A, codexHomeCopy(0)],
      [CODEX_B, codexHomeCopy(1)],
    ]);
    expect(gateLeftBehind(gate)).toEqual({ outbox: [], staging: [], ledger: [] });
    for (const value of [CODEX_A, CODEX_B]) expect(gate.log() + first.stderr + second.stderr).not.toContain(value);

    // The setting gone: its copy goes at the next run.
    fs.writeFileSync(envA, "HOME_SERVICE_TOKEN=Hs4Kq8Wz2Lx7Vb4Rt9Zp\n");
    expect(run(line, { nobodysHome: home }).code).toBe(0);
    expect(fs.existsSync(copy("hermes-env-0-codex-home-auth.json"))).toBe(false);
    // Set again, and the other home's auth.json made a link to a file only root may read: that one is skipped, its copy removed.
    fs.appendFileSync(envA, "CODEX_HOME=~/codex-a\n");
    const rootOnly = path.join(base, "root-only-home-codex.json");
    fs.writeFileSync(rootOnly, codexAuth("Cr2Wm9Qx4Tz7Kv3NpRl6"), { mode: 0o600 });
    fs.rmSync(authB);
    fs.symlinkSync(rootOnly, authB);
    fs.lchownSync(authB, NOBODY, NOBODY);
    const third = run(line, { nobodysHome: home });
    expect(lines(third.stderr)).toEqual([
      `media-outbox: gate-secrets: skipped ${authB} (read as nobody): its user may not read it; the gate will not know its values`,
      "media-outbox: gate-secrets: 6 of 6 secret file(s) copied for the gate",
    ]);
    expect(fs.existsSync(copy("hermes-env-0-codex-home-auth.json"))).toBe(true);
    expect(fs.existsSync(copy("hermes-env-1-codex-home-auth.json"))).toBe(false);
    // The .env gone: what it set is not known, the copy of what its CODEX_HOME named goes.
    fs.rmSync(envA);
    const fourth = run(line, { nobodysHome: home });
    expect(lines(fourth.stderr)[0]).toBe(`media-outbox: gate-secrets: skipped ${envA} (read as nobody): it does not exist; the gate will not know its values`);
    expect(fs.existsSync(copy("hermes-env-0-codex-home-auth.json"))).toBe(false);
  });

  it("a CODEX_HOME of a home's .env it cannot follow is a journal line, the value escaped, and nothing is copied", () => {
    const root = path.join(base, "home-codex-unfollowed");
    const envs = [
      nobodysFile(root, "rel/.env", "CODEX_HOME=codex\u001b[31m\n"),
      nobodysFile(root, "expands/.env", "CODEX_HOME=${HOME}/codex\n"),
      nobodysFile(root, "dots/.env", "CODEX_HOME=/srv/../etc\n"),
    ];
    const copies = intoDir("run-home-codex-unfollowed");
    const r = run(["--into", copies, ...envs.map((e) => `nobody:${e}`)]);
    expect(r.code, r.stderr).toBe(0);
    expect(lines(r.stderr)).toEqual([
      `media-outbox: gate-secrets: CODEX_HOME in ${root}/rel/.env is codex\\x1b[31m, not an absolute path: the gate will not know a Codex CLI's auth.json there`,
      `media-outbox: gate-secrets: CODEX_HOME in ${root}/expands/.env uses \${...} expansion, which install does not follow; write the directory out: the gate will not know a Codex CLI's auth.json there`,
      `media-outbox: gate-secrets: CODEX_HOME in ${root}/dots/.env is /srv/../etc, which holds a ".." component; write it without: the gate will not know a Codex CLI's auth.json there`,
      "media-outbox: gate-secrets: 3 of 3 secret file(s) copied for the gate",
    ]);
    expect(fs.readdirSync(copies).sort()).toEqual(["hermes-env-0", "hermes-env-1", "hermes-env-2"]);
  });

  it("--watch-profiles: starts the watch of the auth.json a home's (and a profile's) CODEX_HOME names before it is read, keeps it, and stops the watch of one no longer named", () => {
    const root = path.join(base, "home-codex-watched");
    const auth = nobodysFile(root, "codex-home/auth.json", codexAuth(CODEX_A));
    const profileAuth = nobodysFile(root, "codex-profile/auth.json", codexAuth(CODEX_B));
    const env = nobodysFile(root, ".hermes/.env", `CODEX_HOME=${path.dirname(auth)}\n`);
    nobodysFile(root, ".hermes/profiles/w/.env", `CODEX_HOME=${path.dirname(profileAuth)}\n`);
    const profiles = path.join(root, ".hermes", "profiles");
    const copies = intoDir("run-home-codex-watched");
    const log = path.join(base, "systemctl-home-codex.log");
    const unit = watchUnitOf;
    const stale = unit(path.join(root, "codex-before", "auth.json"));
    // A fake systemctl: logs each call and what the copies are then.
    const fake = path.join(base, "fake-systemctl-home-codex");
    fs.writeFileSync(
      fake,
      `#!/bin/sh
printf '%s | %s\\n' "$*" "$(ls -A '${copies}' | tr '\\n' ' ')" >> '${log}'
case "$1" in
  list-units) printf '%s loaded active waiting x\\n' '${stale}' '${unit(auth)}' ;;
esac
`,
      { mode: 0o755 },
    );
    const r = run(["--into", copies, "--watch-profiles", `nobody:${env}`, `nobody:?profiles:${profiles}/`], { env: { MEDIA_OUTBOX_SYSTEMCTL: fake } });
    expect(r.code, r.stderr).toBe(0);
    expect(lines(r.stderr)).toEqual(["media-outbox: gate-secrets: 2 of 2 secret file(s) copied for the gate"]);
    expect(fs.readdirSync(copies).sort()).toEqual(["hermes-env-0", "hermes-env-0-codex-home-auth.json", "hermes-env-1-profile.w.codex-home-auth.json", "hermes-env-1-profile.w.env"]);
    const dir = path.join(profiles, "w");
    expect(fs.readFileSync(log, "utf8").split("\n").filter((l) => l !== "")).toEqual([
      `list-units --all --plain --no-legend --full --type=path media-outbox-gate-secrets-watch@*.path | `,
      `start ${[dir, `${dir}/.env`, `${dir}/mcp-tokens`, `${dir}/google_chat_user_tokens`].map(unit).join(" ")} | `,
      // Each auth.json watched once its .env is read, before it is: no copy of it yet (the home's is active already: not started again).
      `start ${unit(profileAuth)} | hermes-env-0 hermes-env-0-codex-home-auth.json hermes-env-1-profile.w.env `,
      `stop --no-block ${stale} | hermes-env-0 hermes-env-0-codex-home-auth.json hermes-env-1-profile.w.codex-home-auth.json hermes-env-1-profile.w.env `,
    ]);
  });
});

describe("gate-secrets: a gateway's environment (USER:?gateway:UNIT), resolved at each run as install resolves it", () => {
  // Values of no vendor format: only the copies can make them known.
  const CODEX_A = "Ga7Kq2Wz9Lx4Vb8Rt3Nm";
  const CODEX_B = "Gb3Hv8Qm2Wx7Lz4Kd9Rp";
  const CODEX_C = "Gc5Jt8Wq1Zr6Kn3Vx9Lb";
  const MANAGED = "Mg7Kd2Vx9Qp4Lr8Tw3Zn";
  const MANAGED_NEW = "Mn2Wq8Zx4Kv7Rp3Tb9Hd";
  const startGateOn = gatesOnCopies();
  const codexAuth = (token: string) => codexAuthJson(token, "acct-1357");
  /** A root-owned file (a unit, a drop-in, a root-only environment file). */
  const rootFile = (file: string, content: string, mode = 0o644) => {
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o755 });
    fs.writeFileSync(file, content, { mode });
    return file;
  };

  it("follows a CODEX_HOME set since in its unit's drop-in or environment file or in the managed .env, and a HERMES_MANAGED_DIR set since in its Hermes .env (a managed .env and config.yaml copied); refuses a managed .env that sets MEDIA_OUTBOX_DIR, loudly, keeping the copies from before; the gate refuses the values followed, never printing them", async () => {
    const home = path.join(base, "gw-home");
    const dotEnv = nobodysFile(home, ".hermes/.env", "HOME_SERVICE_TOKEN=Hs4Kq8Wz2Lx7Vb4Rt9Zp\n");
    const authA = nobodysFile(home, "codex-a/auth.json", codexAuth(CODEX_A));
    const authB = nobodysFile(home, "codex-b/auth.json", codexAuth(CODEX_B));
    const authC = nobodysFile(home, "codex-c/auth.json", codexAuth(CODEX_C));
    const managedEnv = nobodysFile(home, "managed/.env", `MANAGED_SERVICE_TOKEN=${MANAGED}\nCODEX_HOME=${path.dirname(authC)}\n`);
    nobodysFile(home, "managed/config.yaml", "model:\n  default: o4-mini\n");
    const units = path.join(base, "gw-units");
    const unit = rootFile(path.join(units, "hermes-gateway.service"), `[Service]\nUser=nobody\nEnvironment=HERMES_HOME=${home}/.hermes\nExecStart=/bin/true\n`);
    const copies = intoDir("run-gateway");
    const line = ["--into", copies, `nobody:${dotEnv}`, `nobody:?gateway:${unit}`];
    const copy = (name: string) => path.join(copies, name);
    const ok = "media-outbox: gate-secrets: 2 of 2 secret file(s) copied for the gate";
    const runOk = () => {
      const r = run(line);
      expect(r.signal, "gate-secrets hung").toBeNull();
      expect(r.code, r.stderr).toBe(0);
      return lines(r.stderr);
    };

    // Nothing moved yet: the .env only.
    expect(runOk()).toEqual([ok]);
    expect(fs.readdirSync(copies)).toEqual(["hermes-env-0"]);
    // (b) CODEX_HOME set since in a drop-in (systemctl edit): followed at the next run, read as the agent.
    rootFile(path.join(units, "hermes-gateway.service.d", "50-codex.conf"), `[Service]\nEnvironment=CODEX_HOME=${path.dirname(authA)}\n`);
    expect(runOk()).toEqual([ok]);
    expect(fs.readFileSync(copy("hermes-env-1-codex-home-auth.json"), "utf8")).toBe(codexAuth(CODEX_A));
    // In a root-only EnvironmentFile= (root's alone: read as root), which beats Environment=.
    const envFile = rootFile(path.join(base, "gw-etc", "gateway.env"), `CODEX_HOME=${path.dirname(authB)}\n`, 0o600);
    rootFile(path.join(units, "hermes-gateway.service.d", "60-env.conf"), `[Service]\nEnvironmentFile=${envFile}\n`);
    expect(runOk()).toEqual([ok]);
    expect(fs.readFileSync(copy("hermes-env-1-codex-home-auth.json"), "utf8")).toBe(codexAuth(CODEX_B));
    // (a) HERMES_MANAGED_DIR set since in the Hermes .env: its .env and config.yaml copied, and the CODEX_HOME that .env sets over the others followed.
    fs.appendFileSync(dotEnv, `HERMES_MANAGED_DIR=${path.dirname(managedEnv)}\n`);
    expect(runOk()).toEqual([ok]);
    expect(fs.readdirSync(copies).sort()).toEqual(["hermes-env-0", "hermes-env-1-codex-home-auth.json", "hermes-env-1-managed.config.yaml", "hermes-env-1-managed.env"]);
    expect(fs.readFileSync(copy("hermes-env-1-managed.env"), "utf8")).toBe(fs.readFileSync(managedEnv, "utf8"));
    expect(fs.readFileSync(copy("hermes-env-1-codex-home-auth.json"), "utf8")).toBe(codexAuth(CODEX_C));
    const st = fs.statSync(copy("hermes-env-1-managed.env"));
    expect([st.uid, st.gid, st.mode & 0o7777]).toEqual([DAEMON, DAEMON, 0o400]);

    const gate = await startGateOn(copies);
    await expectRefused(gate, [
      [MANAGED, "the value of MANAGED_SERVICE_TOKEN (the managed Hermes scope in a gateway's $HERMES_MANAGED_DIR, credential hermes-env-1-managed.env)"],
      [CODEX_C, "the value of tokens.refresh_token (the Codex CLI's auth.json in a gateway's $CODEX_HOME, credential hermes-env-1-codex-home-auth.json)"],
    ]);
    expect(gateLeftBehind(gate)).toEqual({ outbox: [], staging: [], ledger: [] });

    // The managed .env now sets MEDIA_OUTBOX_DIR (install refuses that): not followed, said loudly, the copies from before kept as they were.
    const before = Object.fromEntries(fs.readdirSync(copies).map((n) => [n, fs.readFileSync(copy(n), "utf8")]));
    fs.writeFileSync(managedEnv, `MANAGED_SERVICE_TOKEN=${MANAGED_NEW}\nMEDIA_OUTBOX_DIR=/srv/elsewhere\nCODEX_HOME=${path.dirname(authA)}\n`);
    expect(runOk()).toEqual([
      `media-outbox: gate-secrets: ${managedEnv}, the managed .env the agents of hermes-gateway.service load, sets MEDIA_OUTBOX_DIR: their prepare would publish there instead of handing files to the gate (install refuses it). Not followed: the gate keeps the copies it made for that gateway before; remove MEDIA_OUTBOX_DIR there`,
      ok,
    ]);
    expect(Object.fromEntries(fs.readdirSync(copies).map((n) => [n, fs.readFileSync(copy(n), "utf8")]))).toEqual(before);
    // Removed there: followed again.
    fs.writeFileSync(managedEnv, `MANAGED_SERVICE_TOKEN=${MANAGED_NEW}\n`);
    expect(runOk()).toEqual([ok]);
    expect(fs.readFileSync(copy("hermes-env-1-managed.env"), "utf8")).toBe(`MANAGED_SERVICE_TOKEN=${MANAGED_NEW}\n`);
    expect(fs.readFileSync(copy("hermes-env-1-codex-home-auth.json"), "utf8")).toBe(codexAuth(CODEX_B));
    // HERMES_MANAGED_DIR unset: the managed copies go; the line naming the auth.json itself (as install names what it finds): copied once, as named.
    fs.writeFileSync(dotEnv, "HOME_SERVICE_TOKEN=Hs4Kq8Wz2Lx7Vb4Rt9Zp\n");
    line.push(`nobody:?codex-home:${authB}`);
    expect(runOk()).toEqual(["media-outbox: gate-secrets: 3 of 3 secret file(s) copied for the gate"]);
    expect(fs.readdirSync(copies).sort()).toEqual(["hermes-env-0", "hermes-env-2-codex-home-auth.json"]);
    for (const value of [CODEX_A, CODEX_B, CODEX_C, MANAGED, MANAGED_NEW]) expect(gate.log()).not.toContain(value);
    // The unit gone: an optional entry not there.
    fs.rmSync(units, { recursive: true });
    expect(runOk()).toEqual(["media-outbox: gate-secrets: 2 of 3 secret file(s) copied for the gate (1 optional store(s) not there)"]);
  });

  it("follows the shared Nous store HERMES_SHARED_AUTH_DIR puts elsewhere and the Google key VERTEX_CREDENTIALS_PATH or GOOGLE_APPLICATION_CREDENTIALS names (in the unit, in the Hermes .env), copied as the agent and read as JSON; the root's shared/nous_auth.json is a store the line names; one it cannot follow is a journal line; the gate refuses their tokens and key, naming the store", async () => {
    const home = path.join(base, "gw-credentials");
    const ACCESS = "Na7Kq2Wz9Lx4Vb8Rt3NmQp5";
    const ROOT_REFRESH = "Nr3Hv8Qm2Wx7Lz4Kd9RpTs6";
    const KEY_LINE = "Kl5Jt8Wq1Zr6Kn3Vx9LbMd2Hs7Pq4Wc8Zt1Ny6Rf3Gk9Xb5Lm2Vd7Qs4Tj8Hw1Cp";
    const OTHER_KEY_LINE = "Ko2Wq8Zx4Kv7Rp3Tb9HdLs6Mn1Yc5Gx8Jf2Qt7Wb4Rk9Vz3Hp6Nd1Lg5Xs8Cm2T";
    const keyJson = (line: string) => JSON.stringify({ type: "service_account", private_key_id: "0123456789abcdef0123456789abcdef01234567", private_key: `-----BEGIN PRIVATE KEY-----\n${line}\n${line.split("").reverse().join("")}\n-----END PRIVATE KEY-----\n`, client_email: "hermes@demo.iam.gserviceaccount.com" });
    const dotEnv = nobodysFile(home, ".hermes/.env", `VERTEX_CREDENTIALS_PATH=${home}/keys/vertex.json\n`);
    const rootStore = nobodysFile(home, ".hermes/shared/nous_auth.json", JSON.stringify({ access_token: "Nx1Wq8Zx4Kv7Rp3Tb9HdLs6", refresh_token: ROOT_REFRESH }));
    nobodysFile(home, "nous/nous_auth.json", JSON.stringify({ access_token: ACCESS, refresh_token: "Nz9Kd2Vx9Qp4Lr8Tw3ZnQm1" }));
    nobodysFile(home, "keys/vertex.json", keyJson(KEY_LINE));
    nobodysFile(home, "keys/google.json", keyJson(OTHER_KEY_LINE));
    const units = path.join(base, "gw-credentials-units");
    const unit = rootFile(
      path.join(units, "hermes-gateway.service"),
      `[Service]\nUser=nobody\nEnvironment=HERMES_HOME=${home}/.hermes HERMES_SHARED_AUTH_DIR=${home}/nous GOOGLE_APPLICATION_CREDENTIALS=${home}/keys/google.json\nExecStart=/bin/true\n`,
    );
    const copies = intoDir("run-gateway-credentials");
    const line = ["--into", copies, `nobody:${dotEnv}`, `nobody:?${rootStore}`, `nobody:?gateway:${unit}`];
    const r = run(line);
    expect(r.code, r.stderr).toBe(0);
    expect(lines(r.stderr)).toEqual(["media-outbox: gate-secrets: 3 of 3 secret file(s) copied for the gate"]);
    expect(fs.readdirSync(copies).sort()).toEqual(["hermes-env-0", "hermes-env-1", "hermes-env-2-google-application-credentials.json", "hermes-env-2-nous-shared-auth.json", "hermes-env-2-vertex-credentials.json"]);
    const st = fs.statSync(path.join(copies, "hermes-env-2-vertex-credentials.json"));
    expect([st.uid, st.gid, st.mode & 0o7777]).toEqual([DAEMON, DAEMON, 0o400]);

    const gate = await startGateOn(copies);
    await expectRefused(gate, [
      [ACCESS, "the value of access_token (the shared Nous OAuth store in a gateway's $HERMES_SHARED_AUTH_DIR, credential hermes-env-2-nous-shared-auth.json)"],
      [ROOT_REFRESH, "the value of refresh_token (credential hermes-env-1)"],
      [KEY_LINE, "the value of private_key (the Google service account key a gateway's $VERTEX_CREDENTIALS_PATH names, credential hermes-env-2-vertex-credentials.json)"],
      [OTHER_KEY_LINE, "the value of private_key (the Google service account key a gateway's $GOOGLE_APPLICATION_CREDENTIALS names, credential hermes-env-2-google-application-credentials.json)"],
    ]);
    expect(gateLeftBehind(gate)).toEqual({ outbox: [], staging: [], ledger: [] });
    for (const value of [ACCESS, ROOT_REFRESH, KEY_LINE, OTHER_KEY_LINE]) expect(gate.log() + r.stderr).not.toContain(value);

    // Relative in the Hermes .env, which Hermes loads over the unit's: not followed, a journal line; that copy goes.
    fs.writeFileSync(dotEnv, "VERTEX_CREDENTIALS_PATH=keys/vertex.json\n");
    const again = run(line);
    expect(lines(again.stderr)).toEqual([
      `media-outbox: gate-secrets: VERTEX_CREDENTIALS_PATH for hermes-gateway.service (set in ${dotEnv}) is keys/vertex.json, not an absolute path: the gate will not know the Google service account key there`,
      "media-outbox: gate-secrets: 3 of 3 secret file(s) copied for the gate",
    ]);
    expect(fs.readdirSync(copies)).not.toContain("hermes-env-2-vertex-credentials.json");
  });

  it("--watch-profiles: watches each file a gateway's environment is read from or moves (its drop-in directory too), not those the line names, each before it is read", () => {
    const home = path.join(base, "gw-watch-home");
    const dotEnv = nobodysFile(home, ".hermes/.env", `HERMES_MANAGED_DIR=${home}/managed\n`);
    const managedEnv = nobodysFile(home, "managed/.env", `CODEX_HOME=${home}/codex\n`);
    const auth = nobodysFile(home, "codex/auth.json", codexAuth(CODEX_A));
    const units = path.join(base, "gw-watch-units");
    const unit = rootFile(path.join(units, "hermes-gateway.service"), `[Service]\nUser=nobody\nEnvironment=HERMES_HOME=${home}/.hermes\nExecStart=/bin/true\n`);
    const dropIn = rootFile(path.join(units, "hermes-gateway.service.d", "50-plain.conf"), "[Service]\nEnvironment=LOG_LEVEL=debug\n");
    const copies = intoDir("run-gateway-watch");
    const log = path.join(base, "systemctl-gateway.log");
    const watchUnit = watchUnitOf;
    const fake = path.join(base, "fake-systemctl-gateway");
    fs.writeFileSync(fake, `#!/bin/sh\nprintf '%s | %s\\n' "$*" "$(ls -A '${copies}' | tr '\\n' ' ')" >> '${log}'\n`, { mode: 0o755 });
    const r = run(["--into", copies, "--watch-profiles", `nobody:${dotEnv}`, `nobody:?gateway:${unit}`], { env: { MEDIA_OUTBOX_SYSTEMCTL: fake } });
    expect(lines(r.stderr)).toEqual(["media-outbox: gate-secrets: 2 of 2 secret file(s) copied for the gate"]);
    const calls = fs.readFileSync(log, "utf8").split("\n").filter((l) => l.startsWith("start "));
    const started = calls.flatMap((c) => c.split(" | ")[0]!.split(" ").slice(1));
    expect(new Set(started)).toEqual(new Set([path.join(units, "hermes-gateway.service.d"), dropIn, `${home}/managed/.env`, `${home}/managed/config.yaml`, auth].map(watchUnit)));
    expect(started).not.toContain(watchUnit(unit));
    expect(started).not.toContain(watchUnit(dotEnv));
    // Each before its copy is there.
    for (const [file, name] of [
      [managedEnv, "hermes-env-1-managed.env"],
      [auth, "hermes-env-1-codex-home-auth.json"],
    ] as const) {
      const at = calls.find((c) => c.includes(watchUnit(file)))!;
      expect(at.split(" | ")[1], file).not.toContain(name);
    }
    expect(fs.readdirSync(copies).sort()).toEqual(["hermes-env-0", "hermes-env-1-codex-home-auth.json", "hermes-env-1-managed.env"]);
    // A run that changes nothing, its watches all active: one systemctl call (the listing), however many paths it watches.
    const steady = path.join(base, "systemctl-gateway-steady.log");
    fs.writeFileSync(fake, `#!/bin/sh\nprintf '%s\\n' "$1" >> '${steady}'\ncase "$1" in list-units) printf '%s loaded active waiting x\\n' ${[...new Set(started)].map((u) => `'${u}'`).join(" ")} ;; esac\n`, { mode: 0o755 });
    expect(lines(run(["--into", copies, "--watch-profiles", `nobody:${dotEnv}`, `nobody:?gateway:${unit}`], { env: { MEDIA_OUTBOX_SYSTEMCTL: fake } }).stderr)).toEqual(["media-outbox: gate-secrets: 2 of 2 secret file(s) copied for the gate"]);
    expect(fs.readFileSync(steady, "utf8").split("\n").filter((l) => l !== "")).toEqual(["list-units"]);
  });

  it("a managed .env the line names (USER:?managed:FILE) that sets MEDIA_OUTBOX_DIR is not copied again: its copy from before is kept, and a journal line says why", () => {
    const managed = nobodysFile(path.join(base, "gw-named-managed"), ".env", "MANAGED_SERVICE_TOKEN=Mk3Wq8Zx4Kv7Rp2Tb9Hd\n");
    const copies = intoDir("run-gateway-named-managed");
    expect(lines(run(["--into", copies, `nobody:?managed:${managed}`]).stderr)).toEqual(["media-outbox: gate-secrets: 1 of 1 secret file(s) copied for the gate"]);
    fs.writeFileSync(managed, "MANAGED_SERVICE_TOKEN=Mz9Wq2Zx6Kv1Rp5Tb3Hd\nMEDIA_OUTBOX_DIR=/srv/elsewhere\n");
    expect(lines(run(["--into", copies, `nobody:?managed:${managed}`]).stderr)).toEqual([
      `media-outbox: gate-secrets: skipped ${managed} (read as nobody): it sets MEDIA_OUTBOX_DIR, which keeps the prepare of every agent that loads it from the gate (install refuses it): not copied again; remove MEDIA_OUTBOX_DIR there; the gate keeps its copy from before`,
      "media-outbox: gate-secrets: 0 of 1 secret file(s) copied for the gate",
    ]);
    expect(fs.readFileSync(path.join(copies, "hermes-env-0"), "utf8")).toBe("MANAGED_SERVICE_TOKEN=Mk3Wq8Zx4Kv7Rp2Tb9Hd\n");
  });

  it("copies a file a profile's CODEX_HOME names once: not when the line names it, nor when a home's .env (or another profile) follows it already", () => {
    const home = path.join(base, "gw-dup-home");
    const named = nobodysFile(home, "codex-named/auth.json", codexAuth(CODEX_A));
    const shared = nobodysFile(home, "codex-shared/auth.json", codexAuth(CODEX_B));
    const dotEnv = nobodysFile(home, ".hermes/.env", `CODEX_HOME=${path.dirname(shared)}\n`);
    nobodysFile(home, ".hermes/profiles/dup/.env", `CODEX_HOME=${path.dirname(named)}\n`);
    nobodysFile(home, ".hermes/profiles/twin/.env", `CODEX_HOME=${path.dirname(shared)}\n`);
    nobodysFile(home, ".hermes/profiles/own/.env", `CODEX_HOME=${home}/codex-own\n`);
    const own = nobodysFile(home, "codex-own/auth.json", codexAuth(CODEX_C));
    nobodysFile(home, ".hermes/profiles/own2/.env", `CODEX_HOME=${path.dirname(own)}\n`);
    const copies = intoDir("run-gateway-dup");
    const r = run(["--into", copies, `nobody:${dotEnv}`, `nobody:?codex-home:${named}`, `nobody:?profiles:${home}/.hermes/profiles/`]);
    expect(lines(r.stderr)).toEqual(["media-outbox: gate-secrets: 3 of 3 secret file(s) copied for the gate"]);
    const codexCopies = fs.readdirSync(copies).filter((n) => n.endsWith("codex-home-auth.json")).sort();
    expect(codexCopies).toEqual(["hermes-env-0-codex-home-auth.json", "hermes-env-1-codex-home-auth.json", "hermes-env-2-profile.own.codex-home-auth.json"]);
    expect(fs.readFileSync(path.join(copies, "hermes-env-0-codex-home-auth.json"), "utf8")).toBe(codexAuth(CODEX_B));
    expect(fs.readFileSync(path.join(copies, "hermes-env-1-codex-home-auth.json"), "utf8")).toBe(codexAuth(CODEX_A));
  });
});
