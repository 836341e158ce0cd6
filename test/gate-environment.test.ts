// The client's environment through the gate: local mode knows the secrets
// of the environments prepare runs under (the Hermes gateway's above an
// agent's command); the gate, another user, cannot read them, so prepare as
// its client sends them with each request (Media-Outbox-Environment) and the
// gate judges that request with them too. A real `serve` started without the
// variables; the real CLI started from a parent shell that holds them.
// Everything started is killed by PID (a shell and what it started: by its
// process group) after each test.
import { type ChildProcess, spawn } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { valuesWorthLookingFor } from "../src/content/known.js";
import { PATH_LIKE, environmentEntryMayHoldSecret } from "../src/content/secret-variables.js";
import { ENVIRONMENT_HEADER, MAX_ENVIRONMENT_HEADER } from "../src/gate/protocol.js";
import { type Gate, clearGate, gateLeftBehind, killAll, post, rawExchange, startGate, syncLog } from "./gate-helpers.js";
import { BIN, type CliResult, makeHome, write } from "./helpers.js";

/** A random 32-character token (base64url of 24 bytes), letters and digits both. */
function token(): string {
  for (;;) {
    const t = crypto.randomBytes(24).toString("base64url");
    if (/[0-9]/.test(t) && /[A-Za-z]/.test(t)) return t;
  }
}

const header = (entries: string[]) => ({ [ENVIRONMENT_HEADER]: Buffer.from(entries.join("\0"), "utf8").toString("base64") });

const shells = new Set<ChildProcess>();

/**
 * Runs `script` in `sh -c` (its own process group, so that it and what it
 * starts can be killed together), started with `env`, with `args` as $@.
 */
function inShell(script: string, args: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<CliResult> {
  return new Promise((resolve) => {
    const p = spawn("/bin/sh", ["-c", script, "sh", ...args], { env, cwd, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    shells.add(p);
    let stdout = "";
    let stderr = "";
    p.stdout!.on("data", (c) => (stdout += c));
    p.stderr!.on("data", (c) => (stderr += c));
    p.on("close", (code) => {
      shells.delete(p);
      resolve({ code, stdout, stderr });
    });
  });
}

function killShells(): void {
  for (const p of shells) {
    if (p.exitCode !== null || p.signalCode !== null) continue;
    try {
      // A shell leads its own group (what it started goes with it); a stand-in gateway is killed alone.
      process.kill(p.spawnargs[0] === "/bin/sh" ? -p.pid! : p.pid!, "SIGKILL");
    } catch {
      // Gone already.
    }
  }
  shells.clear();
}

describe("the client's environment, through the gate", () => {
  let h: ReturnType<typeof makeHome>;
  let gate: Gate;
  let work: string;
  let env: NodeJS.ProcessEnv;
  beforeAll(async () => {
    h = makeHome();
    work = h.work;
    // The gate knows none of the variables below: neither its environment nor its files hold them.
    gate = await startGate(h.home, { ...h.env, HERMES_HOME: path.join(h.home, "gate-home") });
    env = { ...h.env, MEDIA_OUTBOX_SOCKET: gate.socket };
  });
  afterEach(() => killShells());
  afterAll(async () => {
    killShells();
    await killAll();
    h.cleanup();
  });

  /** prepare run by a shell that holds EXTRA_SERVICE_API_KEY (as a gateway does) and exports OWN_SERVICE_TOKEN to prepare; prepare itself is started without the first. */
  const prepareUnderShell = (parent: Record<string, string>, own: string, args: string[]) =>
    inShell('export OWN_SERVICE_TOKEN="$1"; shift; env -u EXTRA_SERVICE_API_KEY "$@"; exit $?', [own, process.execPath, BIN, "prepare", ...args], { ...env, ...parent }, work);

  it("a key only prepare's parent holds (the gateway's, in local mode's terms) is refused through the gate, and one its shell exported; the value is never printed nor logged, nothing of them is published; the same file without the header is published", async () => {
    clearGate(gate);
    const [extra, own] = [token(), token()];
    write(work, "leak.txt", `the key is ${extra}\n`);
    write(work, "encoded.txt", `data: ${Buffer.from(`key=${extra}\n`).toString("base64")}\n`);
    write(work, "own.md", `# notes\n${own}\n`);
    write(work, "fine.txt", "nothing secret here\n");
    const r = await prepareUnderShell({ EXTRA_SERVICE_API_KEY: extra }, own, ["--json", "leak.txt", "encoded.txt", "own.md", "fine.txt"]);
    expect(r.code).toBe(1);
    const doc = JSON.parse(r.stdout) as { media: { name: string }[]; media_dropped: { path: string; code: string; reason: string }[] };
    expect(doc.media_dropped.map((d) => [d.path, d.code])).toEqual([
      ["leak.txt", "secret_detected"],
      ["encoded.txt", "secret_detected"],
      ["own.md", "secret_detected"],
    ]);
    expect(doc.media_dropped.map((d) => d.reason)).toEqual([
      expect.stringContaining("EXTRA_SERVICE_API_KEY (the client's environment)"),
      expect.stringContaining("EXTRA_SERVICE_API_KEY (the client's environment), base64-encoded"),
      expect.stringContaining("OWN_SERVICE_TOKEN (the client's environment)"),
    ]);
    expect(doc.media.map((m) => m.name)).toEqual(["fine.txt"]);
    await syncLog(gate);
    for (const secret of [extra, own]) {
      expect(r.stdout + r.stderr).not.toContain(secret);
      expect(gate.log()).not.toContain(secret);
    }
    expect(gateLeftBehind(gate).outbox).toEqual(["fine.txt"]);
    expect(gateLeftBehind(gate).staging).toEqual([]);

    // The header is what carried it: the gate itself does not know the value, for this request or any later one.
    const raw = await rawExchange(gate.socket, post("leak.txt", `the key is ${extra}\n`));
    expect(raw.json).toMatchObject({ success: true, media: [{ name: "leak.txt" }] });
  });

  it("a key of a running gateway that is no ancestor of prepare, named by a gateway.pid of the client's Hermes home (a profile's here), is refused through the gate too, as in local mode", async () => {
    clearGate(gate);
    const value = token();
    const gateway = spawn("sleep", ["600"], { env: { PATH: process.env.PATH, GATEWAY_EXTRA_API_KEY: value }, stdio: "ignore" });
    shells.add(gateway);
    await new Promise<void>((resolve, reject) => gateway.once("spawn", resolve).once("error", reject));
    write(work, "leak.txt", `the key is ${value}\n`);
    const profile = path.join(h.home, ".hermes", "profiles", "work");
    fs.mkdirSync(profile, { recursive: true });
    try {
      // Without the PID file the client knows no such process.
      expect(await prepareUnderShell({}, "short", ["leak.txt"])).toMatchObject({ code: 0 });
      clearGate(gate);
      // The record Hermes 0.19 writes: with the start time (a bare PID names a gateway only for a gateway's command line).
      const stat = fs.readFileSync(`/proc/${gateway.pid}/stat`, "latin1");
      const start = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]);
      write(profile, "gateway.pid", JSON.stringify({ pid: gateway.pid, kind: "hermes-gateway", argv: ["/usr/bin/hermes", "gateway", "run"], start_time: start }));
      const r = await prepareUnderShell({}, "short", ["--json", "leak.txt"]);
      expect(r.code).toBe(1);
      const doc = JSON.parse(r.stdout) as { media: unknown[]; media_dropped: { code: string; reason: string }[] };
      expect(doc.media).toEqual([]);
      expect(doc.media_dropped).toEqual([expect.objectContaining({ code: "secret_detected", reason: expect.stringContaining("GATEWAY_EXTRA_API_KEY (the client's environment)") })]);
      expect(r.stdout + r.stderr).not.toContain(value);
      expect(gateLeftBehind(gate)).toEqual({ outbox: [], staging: [], ledger: [] });
    } finally {
      fs.rmSync(path.join(h.home, ".hermes", "profiles"), { recursive: true, force: true });
    }
  });

  it("judges what a client sends as local mode judges an environment: a placeholder, a short value, a path or a setting is no finding; a real value is, for that request only", async () => {
    clearGate(gate);
    const real = token();
    const values = { placeholder: "your-extra-service-api-key-here", short: "s3cr3t7", keyFile: `/home/agent/.ssh/id_ed25519_${token()}`, setting: token() };
    const sent = header([
      `EXTRA_SERVICE_API_KEY=${values.placeholder}`,
      `SHORT_TOKEN=${values.short}`,
      `DEPLOY_SSH_KEY=${values.keyFile}`,
      `BUILD_ID=${values.setting}`,
      `REAL_SERVICE_TOKEN=${real}`,
    ]);
    for (const [name, value] of Object.entries(values)) {
      const r = await rawExchange(gate.socket, post(`${name}.txt`, `value ${value}\n`, sent));
      expect(r.json, name).toMatchObject({ success: true, media: [{ name: `${name}.txt` }] });
    }
    const refused = await rawExchange(gate.socket, post("real.txt", `value ${real}\n`, sent));
    expect(refused.json).toMatchObject({ success: false, media_dropped: [{ path: "real.txt", code: "secret_detected" }] });
    expect(refused.json.media_dropped[0].reason).toContain("REAL_SERVICE_TOKEN (the client's environment)");
    expect(refused.body).not.toContain(real);
    // Nothing is kept for the next request.
    const next = await rawExchange(gate.socket, post("real.txt", `value ${real}\n`));
    expect(next.json).toMatchObject({ success: true, media: [{ name: "real.txt" }] });

    // Through the CLI: a placeholder the gateway holds is sent and is no finding.
    write(work, "placeholder2.txt", `value ${values.placeholder}\n`);
    const r = await prepareUnderShell({ EXTRA_SERVICE_API_KEY: values.placeholder }, values.short, ["placeholder2.txt"]);
    expect(r).toEqual({ code: 0, stdout: `MEDIA:${path.join(gate.outbox, "placeholder2.txt")}\n`, stderr: "" });
  });

  it("a header the gate cannot read is 400 bad_request, which echoes none of it; nothing is published", async () => {
    clearGate(gate);
    const secret = token();
    const bad: [string, Record<string, string>][] = [
      ["not base64", { [ENVIRONMENT_HEADER]: `${secret}!!!!` }],
      // Node's base64 decoder takes these too; the protocol says standard base64.
      ["URL-safe base64", { [ENVIRONMENT_HEADER]: Buffer.from(`A_TOKEN=x???>>>${secret}`).toString("base64url").padEnd(4 * Math.ceil((18 + secret.length) / 3), "=") }],
      ["not padded", { [ENVIRONMENT_HEADER]: Buffer.from(`A_TOKEN=${secret}x`).toString("base64").replace(/=+$/, "") }],
      ["not UTF-8", { [ENVIRONMENT_HEADER]: Buffer.concat([Buffer.from("A_TOKEN="), Buffer.from([0xff, 0xfe, 0x41])]).toString("base64") }],
      ["no =", header([`A_TOKEN=${secret}`, secret])],
      ["no name", header([`=${secret}`])],
      ["empty entry", header([`A_TOKEN=${secret}`, ""])],
      ["over the bound", { [ENVIRONMENT_HEADER]: Buffer.from(`A_TOKEN=${secret}`.padEnd((MAX_ENVIRONMENT_HEADER / 4) * 3 + 3, "x")).toString("base64") }],
    ];
    for (const [why, headers] of bad) {
      const r = await rawExchange(gate.socket, post("a.txt", "hello\n", headers));
      expect(r.status, why).toBe(400);
      expect(r.json.error.code, why).toBe("bad_request");
      expect(r.json.error.message, why).toContain(ENVIRONMENT_HEADER);
      expect(r.body, why).not.toContain(secret);
      expect(r.body, why).not.toContain(headers[ENVIRONMENT_HEADER]!.slice(0, 16));
    }
    // Given twice: not two environments, a bad request.
    const twice = await rawExchange(gate.socket, [
      `POST /prepare?name=a.txt HTTP/1.1\r\nHost: gate\r\nContent-Length: 6\r\n${ENVIRONMENT_HEADER}: ${header([`A_TOKEN=${secret}`])[ENVIRONMENT_HEADER]}\r\n${ENVIRONMENT_HEADER}: \r\n\r\nhello\n`,
    ]);
    expect(twice.status).toBe(400);
    expect(twice.json.error).toMatchObject({ code: "bad_request", message: `the ${ENVIRONMENT_HEADER} header is given more than once` });
    await syncLog(gate);
    expect(gate.log()).not.toContain(secret);
    expect(gateLeftBehind(gate)).toEqual({ outbox: [], staging: [], ledger: [] });
  });

  it("an environment past the header's bound is cut, nearest first, with a warning naming what was not sent; the request is answered", async () => {
    clearGate(gate);
    const [extra, own] = [token(), token()];
    const fillers = Array.from({ length: 60 }, (_, i) => `FILLER_${String(i).padStart(2, "0")}_TOKEN=${crypto.randomBytes(100).toString("hex")}`);
    write(work, "own.txt", `value ${own}\n`);
    write(work, "extra.txt", `value ${extra}\n`);
    // prepare's own environment, in this order (env -i): the shell's, farther away, holds EXTRA_SERVICE_API_KEY.
    const ownEnv = Object.entries(env).map(([k, v]) => `${k}=${v}`);
    const r = await inShell('"$@"; exit $?', ["env", "-i", ...ownEnv, `OWN_SERVICE_TOKEN=${own}`, ...fillers, process.execPath, BIN, "prepare", "--log-json", "own.txt", "extra.txt"], { ...env, EXTRA_SERVICE_API_KEY: extra }, work);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe(`MEDIA:${path.join(gate.outbox, "extra.txt")}\n`);
    expect(r.stderr).toContain("refused own.txt: secret_detected");
    expect(r.stderr).toContain("OWN_SERVICE_TOKEN (the client's environment)");
    const cut = r.stderr
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as { event?: string; dropped?: number; names?: string[] })
      .find((e) => e.event === "environment_cut");
    expect(cut).toBeDefined();
    // About 42 fillers fit in 9 KiB; the rest, and the shell's variable after them, do not.
    expect(cut!.dropped).toBeGreaterThanOrEqual(2);
    expect(cut!.names).toContain("FILLER_59_TOKEN");
    expect(cut!.names).toContain("EXTRA_SERVICE_API_KEY");
    expect(cut!.names).not.toContain("FILLER_00_TOKEN");
    for (const secret of [extra, own, fillers[59]!.slice(16)]) expect(r.stderr).not.toContain(secret);
  });

  it("the largest request the protocol allows (a 4096-byte name percent-encoded, the header at its bound) fits the gate's headers", async () => {
    clearGate(gate);
    const filler = `A_TOKEN=${"x".repeat((MAX_ENVIRONMENT_HEADER / 4) * 3 - 8)}`;
    const sent = { [ENVIRONMENT_HEADER]: Buffer.from(filler).toString("base64") };
    expect(sent[ENVIRONMENT_HEADER]!.length).toBe(MAX_ENVIRONMENT_HEADER);
    const name = `${"é".repeat(2046)}.txt`;
    expect(Buffer.byteLength(name)).toBe(4096);
    const r = await rawExchange(gate.socket, post(name, "hello\n", sent));
    expect(r.status).toBe(200);
    expect(r.json.outbox).toBe(gate.outbox);
  });

  it("the client sends an entry whenever local mode could find a value in it: an entry it leaves out gives no value (but a path's)", () => {
    const entries: [string, string][] = [
      ["GATEWAY_API_TOKEN", token()],
      ["DATABASE_URL", `postgres://app:${token()}@db:5432/app`],
      ["X_AUTHORIZATION", `Bearer ${token()}`],
      ["REGISTRY_AUTH", Buffer.from(`ci:${token()}`).toString("base64")],
      ["BUILD_ID", token()],
      ["SESSION_COOKIE_NAME", token()],
      ["GIT_ASKPASS", "/usr/lib/git-core/git-gui--askpass"],
      ["API_KEY_FILE", token()],
      ["DEPLOY_SSH_KEY", `~/.ssh/${token()}`],
      ["NEXT_PAGE_TOKEN", token()],
      ["HOME", "/home/agent"],
      ["PUBLIC_KEY", token()],
    ];
    // A path is turned down whatever it could give: both ends ask the same rule for it.
    for (const [name, value] of entries) {
      if (!environmentEntryMayHoldSecret(name, value) && !PATH_LIKE.test(value)) expect(valuesWorthLookingFor(name, value, false), name).toEqual([]);
    }
    expect(entries.filter(([n, v]) => environmentEntryMayHoldSecret(n, v)).map(([n]) => n)).toEqual(["GATEWAY_API_TOKEN", "DATABASE_URL", "X_AUTHORIZATION", "REGISTRY_AUTH"]);
  });
});
