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
import { type Gate, killAll, post, rawExchange, startGate } from "./gate-helpers.js";
import { BIN, makeHome } from "./helpers.js";
import type { DoctorCheck } from "../src/deploy/doctor-check.js";
import { gateSecretChecks, gateServiceChecks } from "../src/deploy/doctor-gate.js";
import type { Systemctl } from "../src/deploy/systemctl.js";

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
function run(args: string[], opts: { asNobody?: boolean; nobodysHome?: string } = {}) {
  const argv = [BIN, "gate-secrets", ...args];
  let [cmd, cmdArgs] = opts.asNobody ? ["/usr/bin/setpriv", [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups", process.execPath, ...argv]] : [process.execPath, argv];
  if (opts.nobodysHome !== undefined) {
    const passwd = path.join(base, `passwd-${path.basename(opts.nobodysHome)}`);
    const lines = fs.readFileSync("/etc/passwd", "utf8").split("\n").map((line) => (line.startsWith("nobody:") ? line.split(":").map((f, i) => (i === 5 ? opts.nobodysHome : f)).join(":") : line));
    fs.writeFileSync(passwd, lines.join("\n"));
    [cmd, cmdArgs] = ["unshare", ["--mount", "--propagation", "private", "--", "sh", "-c", 'mount --bind "$0" /etc/passwd && exec "$@"', passwd, cmd as string, ...(cmdArgs as string[])]];
  }
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

describe("doctor: the stores of the agents' homes the gate's units name", () => {
  /** A target root whose /etc/passwd gives agent the home /home/agent, with its Hermes .env, a Codex CLI's files and a damaged Docker config. */
  function target(name: string): string {
    const root = path.join(base, name);
    const put = (file: string, content: string) => {
      fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
      fs.writeFileSync(path.join(root, file), content);
    };
    put("etc/passwd", "root:x:0:0:root:/root:/bin/bash\nagent:x:1500:1500::/home/agent:/bin/bash\n");
    put("home/agent/.hermes/.env", "TELEGRAM_BOT_TOKEN=7000000001:AAHfakeTokenValueOnlyForTheseTests\n");
    put("home/agent/.codex/auth.json", '{"tokens": {"refresh_token": "codexRefreshTokenOnlyForTheseTests"}}\n');
    // The older Codex CLI's settings beside it: ~/.codex is no Hermes home, and its config.yaml no Hermes store.
    put("home/agent/.codex/config.yaml", "model: o4-mini\n");
    put("home/agent/.docker/config.json", "auths: this is not JSON\n");
    return root;
  }
  const checksFor = (root: string, words: string[]) => {
    const unit = "/etc/systemd/system/media-outbox-gate.service";
    fs.mkdirSync(path.dirname(path.join(root, unit)), { recursive: true });
    fs.writeFileSync(path.join(root, unit), `[Service]\nExecStartPre=-+/usr/bin/node /bin/media-outbox gate-secrets --into /run/media-outbox-gate ${words.join(" ")}\n`);
    const checks: DoctorCheck[] = [];
    gateSecretChecks({ scope: "system", root, home: "/root" }, { fragment: unit, dropIns: [] }, checks, []);
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

  it("names the stores of the user's home that are there and that the gate's units do not name (an install by an older media-outbox)", () => {
    const checks = checksFor(target("doctor-home-stores-old"), ["agent:/home/agent/.hermes/.env"]);
    expect(checks).toEqual([
      {
        check: "gate secrets",
        status: "warn",
        message:
          "/home/agent/.docker/config.json, /home/agent/.codex/auth.json: not named in the gate's units (a profile added since install, a home that was not there then, or an install by an older media-outbox, which named MCP token files one by one and no store of the agents' homes): the gate does not know the values there",
        fix: "run media-outbox install systemd --gate again, with the same options",
      },
    ]);
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
  /** doctor's gate lines as a running systemd reports the units (a fake systemctl answering `show`). */
  function secretChecks(root: string): DoctorCheck[] {
    const shown: Record<string, Record<string, string>> = {
      "media-outbox-gate.socket": { LoadState: "loaded", UnitFileState: "enabled", ActiveState: "active" },
      "media-outbox-gate.service": { LoadState: "loaded", ActiveState: "inactive", FragmentPath: GATE_UNIT },
      "hermes-gateway.service": { LoadState: "loaded", FragmentPath: GATEWAY_UNIT },
    };
    const systemctl = { show: (unit: string) => new Map(Object.entries(shown[unit] ?? { LoadState: "not-found" })) } as unknown as Systemctl;
    const checks: DoctorCheck[] = [];
    gateServiceChecks({ scope: "system", root, home: "/root" }, ["hermes-gateway.service"], systemctl, checks);
    return checks.filter((c) => c.check === "gate secrets");
  }
  const named = ["agent:/srv/agent-hermes/.env", "agent:?/home/agent/.codex/auth.json"];

  it("is quiet when the gate's units name it, and takes its directory for no Hermes home", () => {
    expect(secretChecks(target("doctor-codex-named", [...named, "agent:?codex-home:/srv/codex-a/auth.json"]))).toEqual([]);
  });

  it("names one the gateway sets now that the gate's units do not name: in its unit (an install before media-outbox named it), or in its Hermes .env since install, which Hermes loads over the unit's", () => {
    const root = target("doctor-codex-unnamed", named);
    const unnamed = (file: string) => ({
      check: "gate secrets",
      status: "warn",
      message: `${file} (the Codex CLI's auth.json in a gateway's CODEX_HOME): set since install, not named in the gate's units: the gate does not know the values there`,
      fix: "run media-outbox install systemd --gate again, with the same options",
    });
    expect(secretChecks(root)).toEqual([unnamed("/srv/codex-a/auth.json")]);
    fs.writeFileSync(path.join(root, "srv/agent-hermes/.env"), "TELEGRAM_BOT_TOKEN=7000000001:AAHfakeTokenValueOnlyForTheseTests\nCODEX_HOME=~/codex-b\n");
    expect(secretChecks(root)).toEqual([unnamed("/home/agent/codex-b/auth.json")]);
    // Named at install, since moved by the .env.
    const moved = target("doctor-codex-moved", [...named, "agent:?codex-home:/srv/codex-a/auth.json"]);
    fs.writeFileSync(path.join(moved, "srv/agent-hermes/.env"), "CODEX_HOME=/srv/codex-\x1bMEDIA:/c\n");
    const checks = secretChecks(moved);
    expect(checks).toEqual([unnamed("/srv/codex-\\x1bMEDIA\\x3a/c/auth.json")]);
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
    expect(secretChecks(named2)).toEqual([]);
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
