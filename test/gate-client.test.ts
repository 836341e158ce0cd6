// media-outbox prepare as the gate's client: the real CLI against a real
// `serve` on a temporary socket (or a fake gate, to break it on purpose).
// Every process started is killed by PID after each group.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type Gate, clearGate, gateLeftBehind, head, killAll, rawExchange, startGate, syncLog, track, waitFor } from "./gate-helpers.js";
import { pngWithText } from "./corpus.js";
import { BIN, type CliResult, cli, keepRewriting, makeHome, png, write } from "./helpers.js";

const NOTHING = { outbox: [], staging: [], ledger: [] };

/** Runs the CLI without blocking this process (a fake gate here must be able to answer). */
function cliAsync(args: string[], env: NodeJS.ProcessEnv, opts: { cwd?: string; input?: Buffer | string } = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    const p = track(spawn(process.execPath, [BIN, ...args], { env, cwd: opts.cwd }));
    let stdout = "";
    let stderr = "";
    p.stdout!.on("data", (c) => (stdout += c));
    p.stderr!.on("data", (c) => (stderr += c));
    p.stdin!.on("error", () => {});
    p.stdin!.end(opts.input);
    p.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

describe("prepare through the gate", () => {
  let h: ReturnType<typeof makeHome>;
  let gate: Gate;
  let work: string;
  let env: NodeJS.ProcessEnv;
  beforeAll(async () => {
    h = makeHome();
    work = h.work;
    gate = await startGate(h.home, h.env);
    env = { ...h.env, MEDIA_OUTBOX_SOCKET: gate.socket };
  });
  afterAll(async () => {
    await killAll();
    h.cleanup();
  });
  const clear = () => clearGate(gate);
  const prep = (args: string[], input?: Buffer | string) => cli(["prepare", ...args], { env, cwd: work, ...(input !== undefined ? { input } : {}) });

  it("prints the gate's MEDIA: line; the file is in the gate's outbox, 0640, with a ledger record; no local outbox is made", () => {
    clear();
    write(work, "chart.png", png(1));
    const r = prep(["chart.png"]);
    expect(r).toEqual({ code: 0, stdout: `MEDIA:${path.join(gate.outbox, "chart.png")}\n`, stderr: "" });
    expect(fs.readFileSync(path.join(gate.outbox, "chart.png"))).toEqual(png(1));
    expect(fs.statSync(path.join(gate.outbox, "chart.png")).mode & 0o777).toBe(0o640);
    const [day] = fs.readdirSync(path.join(gate.state, "ledger"));
    expect(JSON.parse(fs.readFileSync(path.join(gate.state, "ledger", day!), "utf8"))).toMatchObject({ source: "chart.png", name: "chart.png", mime: "image/png", reused: false });
    expect(fs.existsSync(h.outbox)).toBe(false);
  });

  it("--json, stderr and the exit code are local mode's, the outbox aside; several files go one request each, in order", async () => {
    clear();
    const before = (await syncLog(gate)).length;
    write(work, "a.png", png(2));
    write(work, "keys.txt", "aws = AKIAQ3RZ7XK2MNVW4TLP\n");
    write(work, "report.pdf", "just text\n");
    write(work, "empty.png", "");
    write(work, "notes.md", "# Notes\n");
    const inputs = ["a.png", "missing.png", "keys.txt", "report.pdf", "empty.png", "notes.md"];
    const local = path.join(h.home, "local-outbox");
    const viaLocal = cli(["prepare", "--json", "--outbox", local, ...inputs], { env: h.env, cwd: work });
    const viaGate = prep(["--json", ...inputs]);
    expect(viaGate.code).toBe(1);
    expect(viaGate.code).toBe(viaLocal.code);
    expect(viaGate.stderr).toBe(viaLocal.stderr);
    expect(viaGate.stdout.split(gate.outbox).join("OUTBOX")).toBe(viaLocal.stdout.split(fs.realpathSync(local)).join("OUTBOX"));
    expect(JSON.parse(viaGate.stdout).media.map((m: { name: string }) => m.name)).toEqual(["a.png", "notes.md"]);
    // Refused on the client's side (missing, empty): the gate never saw them.
    const judged = (await syncLog(gate)).slice(before).filter((e) => e.event === "published" || e.event === "refused");
    expect(judged.map((e) => e.source)).toEqual(["a.png", "keys.txt", "report.pdf", "notes.md"]);
  });

  it("--stdin --name streams standard input: the same document as local mode", () => {
    clear();
    // ~300 KB of metadata: a body of many reads (bytes after IEND would be trailing_data).
    const body = pngWithText("A caption written by the agent.\n".repeat(10_000));
    const viaGate = prep(["--json", "--stdin", "--name", "piped.png"], body);
    expect(viaGate.code).toBe(0);
    expect(fs.readFileSync(path.join(gate.outbox, "piped.png"))).toEqual(body);
    const viaLocal = cli(["prepare", "--json", "--outbox", path.join(h.home, "local2"), "--stdin", "--name", "piped.png"], { env: h.env, cwd: work, input: body });
    expect(viaGate.stdout.split(gate.outbox).join("OUTBOX")).toBe(viaLocal.stdout.split(fs.realpathSync(path.join(h.home, "local2"))).join("OUTBOX"));
    const secret = prep(["--stdin", "--name", "k.txt"], "token ghp_R8kd2LqP0vZ7xN3wT5yB9mH4cJ6fG1sA2eUo\n");
    expect(secret.code).toBe(1);
    expect(secret.stderr).toMatch(/^media-outbox: refused k\.txt: secret_detected: /);
    const empty = prep(["--stdin", "--name", "e.png"], "");
    expect(empty.stderr).toMatch(/refused e\.png: empty_file/);
    expect(gateLeftBehind(gate).outbox).toEqual(["piped.png"]);
  });

  it("the client's own checks refuse before anything reaches the gate, and nothing is left there", async () => {
    clear();
    fs.mkdirSync(path.join(h.home, ".ssh"), { recursive: true });
    write(path.join(h.home, ".ssh"), "id.png", png(3));
    write(work, "orig.png", png(4));
    fs.linkSync(path.join(work, "orig.png"), path.join(work, "alias.png"));
    execFileSync("mkfifo", [path.join(work, "pipe.png")]);
    fs.mkdirSync(path.join(work, "dir.png"));
    write(work, "bad\nname.png", png(5));
    const cases: [string, string][] = [
      [path.join(h.home, ".ssh", "id.png"), "denied_source"],
      ["alias.png", "denied_source"],
      ["pipe.png", "not_regular_file"],
      ["dir.png", "not_regular_file"],
      ["bad\nname.png", "unsafe_path_chars"],
      ["x/MEDIA:/etc/passwd.png", "media_directive_in_path"],
    ];
    const before = (await syncLog(gate)).length;
    for (const [file, code] of cases) {
      const r = prep(["--json", file]);
      expect(r.code, file).toBe(1);
      expect(JSON.parse(r.stdout).media_dropped[0].code, file).toBe(code);
      expect(JSON.parse(r.stdout).outbox).toBe(gate.outbox);
    }
    expect(gateLeftBehind(gate)).toEqual(NOTHING);
    const judged = (await syncLog(gate)).slice(before).filter((e) => e.event === "published" || e.event === "refused");
    expect(judged).toEqual([]);
  });

  it("--stdin from a regular file (`< FILE`) has its place judged on the client's side as a FILE's is: the Hermes .env is refused (denied_source) before anything reaches the gate; an ordinary file goes through", async () => {
    clear();
    const hermes = path.join(h.home, ".hermes");
    fs.mkdirSync(hermes, { recursive: true, mode: 0o700 });
    const dotEnv = write(hermes, ".env", "MY_SERVICE_TOKEN=Qz4Wn8Tr2Lk6Xv9Hm3Pb7Jd\n");
    const fromFile = (file: string, name: string) => {
      const fd = fs.openSync(file, "r");
      try {
        const r = spawnSync(process.execPath, [BIN, "prepare", "--json", "--stdin", "--name", name], { env, cwd: work, stdio: [fd, "pipe", "pipe"], encoding: "utf8" });
        return { code: r.status, doc: JSON.parse(r.stdout) };
      } finally {
        fs.closeSync(fd);
      }
    };
    const before = (await syncLog(gate)).length;
    const refused = fromFile(dotEnv, "x.txt");
    expect(refused.code).toBe(1);
    expect(refused.doc.media_dropped).toEqual([{ path: "x.txt", code: "denied_source", reason: "it is one of the Hermes home's secrets; only generated files may be sent" }]);
    expect(gateLeftBehind(gate)).toEqual(NOTHING);
    expect((await syncLog(gate)).slice(before).filter((e) => e.event === "published" || e.event === "refused")).toEqual([]);
    const ok = fromFile(write(work, "plain.txt", "meeting notes\n"), "plain.txt");
    expect(ok.code).toBe(0);
    expect(gateLeftBehind(gate).outbox).toEqual(["plain.txt"]);
  });

  it("--max-size, --allow and --platform narrow the gate's policy", () => {
    clear();
    write(work, "p.png", png(7));
    expect(JSON.parse(prep(["--json", "--max-size", "10", "p.png"]).stdout).media_dropped[0].code).toBe("too_large");
    expect(JSON.parse(prep(["--json", "--allow", "pdf", "p.png"]).stdout).media_dropped[0].code).toBe("extension_not_allowed");
    write(work, "big.png", Buffer.concat([png(8), Buffer.alloc(6_000_000)]));
    expect(JSON.parse(prep(["--json", "--platform", "whatsapp", "big.png"]).stdout).media_dropped[0].code).toBe("too_large");
    expect(prep(["--max-size", "lots", "p.png"]).code).toBe(2);
    expect(gateLeftBehind(gate)).toEqual(NOTHING);
  });

  it("a file changed while it is streamed is refused (changed_during_copy): the gate sees a cut body and publishes nothing", async () => {
    clear();
    const f = path.join(work, "busy.txt");
    const block = Buffer.alloc(1 << 20, "a");
    fs.writeFileSync(f, Buffer.concat(Array.from({ length: 40 }, () => block)));
    const stopRewriting = keepRewriting(f);
    const r = await cliAsync(["prepare", "--json", f], env);
    await stopRewriting();
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout).media_dropped[0].code).toBe("changed_during_copy");
    await waitFor(() => gate.events().some((e) => e.event === "aborted" && e.source === f));
    await waitFor(() => gateLeftBehind(gate).staging.length === 0);
    expect(gateLeftBehind(gate)).toEqual(NOTHING);
  });
});

describe("prepare finds the gate", () => {
  let h: ReturnType<typeof makeHome>;
  let gate: Gate;
  let src: string;
  beforeAll(async () => {
    h = makeHome();
    gate = await startGate(h.home, h.env);
    src = write(h.home, "c.png", png(9));
  });
  afterAll(async () => {
    await killAll();
    h.cleanup();
  });
  const configFile = (obj: object) => {
    const file = path.join(h.home, ".hermes", "media-outbox.json");
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, JSON.stringify(obj));
    return file;
  };
  const systemConfig = (obj: object | string) => {
    const file = path.join(h.home, "etc-config.json");
    fs.writeFileSync(file, typeof obj === "string" ? obj : JSON.stringify(obj));
    return file;
  };

  it("from the socket key of the config file, and from the system-wide config", () => {
    const user = configFile({ socket: gate.socket });
    expect(cli(["prepare", src], { env: h.env }).stdout).toBe(`MEDIA:${path.join(gate.outbox, "c.png")}\n`);
    fs.unlinkSync(user);
    const env = { ...h.env, MEDIA_OUTBOX_SYSTEM_CONFIG: systemConfig({ socket: gate.socket }) };
    expect(cli(["prepare", src], { env }).stdout).toBe(`MEDIA:${path.join(gate.outbox, "c.png")}\n`);
    expect(fs.existsSync(h.outbox)).toBe(false);
  });

  it("--outbox, MEDIA_OUTBOX_DIR and a config file's outbox mean local mode, even with a gate configured", () => {
    const local = path.join(h.home, "mine");
    const env = { ...h.env, MEDIA_OUTBOX_SOCKET: gate.socket, MEDIA_OUTBOX_SYSTEM_CONFIG: systemConfig({ socket: gate.socket }) };
    expect(cli(["prepare", "--outbox", local, src], { env }).stdout).toBe(`MEDIA:${path.join(local, "c.png")}\n`);
    expect(cli(["prepare", src], { env: { ...env, MEDIA_OUTBOX_DIR: path.join(h.home, "mine2") } }).stdout).toBe(`MEDIA:${path.join(h.home, "mine2", "c.png")}\n`);
    const user = configFile({ outbox: path.join(h.home, "mine3") });
    expect(cli(["prepare", src], { env: { ...h.env, MEDIA_OUTBOX_SYSTEM_CONFIG: env.MEDIA_OUTBOX_SYSTEM_CONFIG } }).stdout).toBe(`MEDIA:${path.join(h.home, "mine3", "c.png")}\n`);
    fs.unlinkSync(user);
  });

  it("a system-wide config that is not {\"socket\": ABSOLUTE PATH} is exit 2, not a fallback", () => {
    for (const bad of [{ socket: gate.socket, outbox: "/tmp/x" }, { socket: "relative.sock" }, "{not json"]) {
      const r = cli(["prepare", src], { env: { ...h.env, MEDIA_OUTBOX_SYSTEM_CONFIG: systemConfig(bad) } });
      expect(r.code, JSON.stringify(bad)).toBe(2);
      expect(r.stderr).toMatch(/^media-outbox: config_invalid: .*etc-config\.json/);
      expect(r.stdout).toBe("");
    }
    expect(fs.existsSync(h.outbox)).toBe(false);
  });
});

describe("prepare: a gate that cannot be used is exit 2, never a local outbox", () => {
  let h: ReturnType<typeof makeHome>;
  afterEach(async () => {
    await killAll();
    h.cleanup();
  });

  it("no socket (ENOENT) and a socket nobody listens on (ECONNREFUSED): one line naming the socket, the --json error document", () => {
    h = makeHome();
    const src = write(h.home, "c.png", png(1));
    const missing = path.join(h.home, "no-such.sock");
    const r = cli(["prepare", src], { env: { ...h.env, MEDIA_OUTBOX_SOCKET: missing } });
    expect(r).toEqual({
      code: 2,
      stdout: "",
      stderr: `media-outbox: gate_unavailable: no gate socket at ${missing} (from MEDIA_OUTBOX_SOCKET): the gate is not installed or its socket unit is not started; ask the administrator to run: systemctl start media-outbox-gate.socket\n`,
    });
    const dead = path.join(h.home, "dead.sock");
    execFileSync("python3", ["-c", `import socket; s=socket.socket(socket.AF_UNIX); s.bind(${JSON.stringify(dead)})`]);
    const refused = cli(["prepare", "--json", src], { env: { ...h.env, MEDIA_OUTBOX_SOCKET: dead } });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/^media-outbox: gate_unavailable: nothing listens on .*dead\.sock \(from MEDIA_OUTBOX_SOCKET\)/);
    expect(JSON.parse(refused.stdout)).toEqual({ success: false, error: { code: "gate_unavailable", message: expect.stringContaining("nothing listens on") } });
    // Byte for byte as local mode prints its exit-2 document (one line).
    const local = cli(["prepare", "--json", "--outbox", "/", src], { env: h.env });
    expect(local.code).toBe(2);
    expect(local.stdout).toBe(`${JSON.stringify(JSON.parse(local.stdout))}\n`);
    expect(refused.stdout).toBe(`${JSON.stringify(JSON.parse(refused.stdout))}\n`);
    expect(fs.existsSync(h.outbox)).toBe(false);
  });

  it("a user who may not connect (EACCES on a 0660 socket) is told so", async () => {
    h = makeHome();
    for (const tool of ["/usr/bin/setpriv"]) if (!fs.existsSync(tool)) throw new Error(`${tool} is missing: it comes with util-linux`);
    if (process.getuid?.() !== 0) throw new Error("this test runs the client as nobody, which needs root");
    const gate = await startGate(h.home, h.env);
    // nobody's own home, and a file it can read.
    const other = fs.mkdtempSync(path.join(path.dirname(h.home), "mo-nobody-"));
    try {
      fs.chmodSync(other, 0o755);
      fs.chownSync(other, 65534, 65534);
      const src = write(other, "c.png", png(2));
      fs.chmodSync(src, 0o644);
      fs.chmodSync(h.home, 0o755);
      const env = { PATH: process.env.PATH, HOME: other, HERMES_HOME: path.join(other, ".hermes"), MEDIA_OUTBOX_SYSTEM_CONFIG: path.join(other, "none.json"), MEDIA_OUTBOX_SOCKET: gate.socket };
      const r = await new Promise<CliResult>((resolve) => {
        const p = track(spawn("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", process.execPath, BIN, "prepare", src], { env }));
        let stdout = "";
        let stderr = "";
        p.stdout!.on("data", (c) => (stdout += c));
        p.stderr!.on("data", (c) => (stderr += c));
        p.on("close", (code) => resolve({ code, stdout, stderr }));
      });
      expect(r.code).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr).toBe(
        `media-outbox: gate_unavailable: permission denied on ${gate.socket} (from MEDIA_OUTBOX_SOCKET): this user may not use the gate; the administrator names agent users at install (media-outbox install systemd --system --gate --agent-user USER), and the user then starts a new session\n`,
      );
      expect(fs.existsSync(path.join(other, ".hermes"))).toBe(false);
      expect(gateLeftBehind(gate)).toEqual(NOTHING);
    } finally {
      fs.rmSync(other, { recursive: true, force: true });
    }
  });

  it("a gate that does not answer in time (MEDIA_OUTBOX_GATE_TIMEOUT)", async () => {
    h = makeHome();
    const sock = path.join(h.home, "silent.sock");
    const silent = net.createServer(() => {}).listen(sock);
    await new Promise((r) => silent.once("listening", r));
    try {
      const src = write(h.home, "c.png", png(3));
      const r = await cliAsync(["prepare", src], { ...h.env, MEDIA_OUTBOX_SOCKET: sock, MEDIA_OUTBOX_GATE_TIMEOUT: "300ms" });
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/^media-outbox: gate_unavailable: the gate at .*silent\.sock \(from MEDIA_OUTBOX_SOCKET\) did not answer within 300 ms; see the gate's log/);
    } finally {
      silent.close();
    }
  });

  it("a gate that dies mid-request: exit 2, nothing printed on stdout", async () => {
    h = makeHome();
    const gate = await startGate(h.home, h.env);
    const p = track(spawn(process.execPath, [BIN, "prepare", "--stdin", "--name", "big.png"], { env: { ...h.env, MEDIA_OUTBOX_SOCKET: gate.socket } }));
    let stdout = "";
    let stderr = "";
    p.stdout!.on("data", (c) => (stdout += c));
    p.stderr!.on("data", (c) => (stderr += c));
    const closed = new Promise<number | null>((resolve) => p.on("close", resolve));
    p.stdin!.on("error", () => {});
    p.stdin!.write(png(4, 64));
    await waitFor(() => gateLeftBehind(gate).staging.length === 1);
    process.kill(gate.pid, "SIGKILL");
    await gate.exited;
    p.stdin!.end(Buffer.alloc(1 << 20));
    expect(await closed).toBe(2);
    expect(stdout).toBe("");
    expect(stderr).toMatch(/^media-outbox: gate_unavailable: the gate at .* closed the connection before answering \(it may have stopped or crashed\); nothing was published for this file; see the gate's log: journalctl -u media-outbox-gate\.service\n$/);
  });

  it("a busy gate is asked again: the client waits its turn and publishes", async () => {
    h = makeHome();
    const gate = await startGate(h.home, h.env, ["--max-connections", "1", "--client-timeout", "60s"]);
    const holder = net.connect(gate.socket, () => holder.write("POST /prepare?name=a.png HTTP/1.1\r\n"));
    holder.on("error", () => {});
    // The client starts only once the holder has the one connection (the gate answers busy), never before it.
    while ((await rawExchange(gate.socket, [head("/health", {}, "GET")])).status !== 503);
    const busyBefore = gate.events().filter((e) => e.event === "busy").length;
    const src = write(h.home, "c.png", png(5));
    const client = cliAsync(["prepare", src], { ...h.env, MEDIA_OUTBOX_SOCKET: gate.socket });
    await waitFor(() => gate.events().filter((e) => e.event === "busy").length > busyBefore);
    holder.destroy();
    expect(await client).toEqual({ code: 0, stdout: `MEDIA:${path.join(gate.outbox, "c.png")}\n`, stderr: "" });
  });
});

describe("prepare: what a gate answers is checked before it is printed", () => {
  let h: ReturnType<typeof makeHome>;
  afterEach(async () => {
    await killAll();
    h.cleanup();
  });

  /** A fake gate: answers each request with `answers[n]` (a report, or "close" to hang up), reading the body first. */
  async function fakeGate(sock: string, answers: (object | "close")[]): Promise<net.Server> {
    let n = 0;
    const server = net.createServer((c) => {
      const answer = answers[n++];
      if (answer === "close" || answer === undefined) {
        c.destroy();
        return;
      }
      let got = "";
      let continued = false;
      c.on("data", (d) => {
        got += d.toString("latin1");
        const end = got.indexOf("\r\n\r\n");
        if (end < 0) return;
        if (!continued) {
          continued = true;
          c.write("HTTP/1.1 100 Continue\r\n\r\n");
        }
        const length = Number(/content-length: (\d+)/i.exec(got)?.[1] ?? 0);
        if (got.length - end - 4 < length) return;
        const body = JSON.stringify(answer);
        c.end(`HTTP/1.1 200 OK\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
      });
    });
    server.listen(sock);
    await new Promise((r) => server.once("listening", r));
    return server;
  }
  const report = (file: string, directive = `MEDIA:/srv/out/${file}`) => ({
    success: true,
    partial_success: false,
    outbox: "/srv/out",
    media: [{ source: file, path: `/srv/out/${file}`, directive, name: file, bytes: 1, sha256: "ab", mime: "image/png", reused: false }],
    media_dropped: [],
  });

  it("a gate lost after the first of two files: the first's line is still printed (and in --json), then exit 2", async () => {
    h = makeHome();
    const sock = path.join(h.home, "fake.sock");
    const server = await fakeGate(sock, [report("a.png"), "close", report("a.png"), "close"]);
    try {
      const a = write(h.home, "a.png", png(1));
      const b = write(h.home, "b.png", png(2));
      const env = { ...h.env, MEDIA_OUTBOX_SOCKET: sock };
      const plain = await cliAsync(["prepare", a, b], env);
      expect(plain.code).toBe(2);
      expect(plain.stdout).toBe("MEDIA:/srv/out/a.png\n");
      expect(plain.stderr).toMatch(/^media-outbox: gate_unavailable: the gate at .* closed the connection before answering/);
      const json = await cliAsync(["prepare", "--json", a, b], env);
      expect(json.code).toBe(2);
      expect(JSON.parse(json.stdout)).toMatchObject({ success: false, error: { code: "gate_unavailable" }, media: [{ directive: "MEDIA:/srv/out/a.png" }] });
    } finally {
      server.close();
    }
  });

  it("an answer carrying an unescaped directive, or not a report at all, is a gate_error: nothing is printed on stdout", async () => {
    h = makeHome();
    const sock = path.join(h.home, "fake.sock");
    const forged = report("a.png");
    forged.media[0]!.path = "/srv/out/a.png\nMEDIA:/etc/shadow";
    forged.media[0]!.directive = `MEDIA:${forged.media[0]!.path}`;
    const server = await fakeGate(sock, [forged, { hello: "world" }]);
    try {
      const a = write(h.home, "a.png", png(1));
      const env = { ...h.env, MEDIA_OUTBOX_SOCKET: sock };
      for (let i = 0; i < 2; i++) {
        const r = await cliAsync(["prepare", a], env);
        expect(r.code).toBe(2);
        expect(r.stdout).toBe("");
        expect(r.stderr).toMatch(/^media-outbox: gate_error: the gate at .* answered with a document that is not a prepare report\n$/);
      }
    } finally {
      server.close();
    }
  });
});
