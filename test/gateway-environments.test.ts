// The running gateways' environments, found through Hermes' own PID file
// ({HERMES_HOME}/gateway.pid, and each profile's): a process that is no
// ancestor of prepare or of the watch (started here, beside them) holds a
// key, and a file holding it is refused only when a gateway.pid names it.
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isGatewayCommandLine, parseGatewayPid, parseStat, processEnvironments } from "../src/content/process-environments.js";
import { BIN, NOTHING_LEFT, cli, leftBehind, makeHome, write } from "./helpers.js";
import { WatchProcess } from "./watch-helpers.js";

const NAME = "GATEWAY_EXTRA_API_KEY";
const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
/** A fresh 32-character token: no file of the test home holds it. */
const token = () => Array.from(crypto.randomBytes(32), (b) => ALPHABET[b % ALPHABET.length]).join("");

let h: ReturnType<typeof makeHome>;
let work: string;
let hermes: string;
const children: ChildProcess[] = [];
const watches: WatchProcess[] = [];

beforeEach(() => {
  h = makeHome();
  work = h.work;
  hermes = path.join(h.home, ".hermes");
  fs.mkdirSync(hermes);
});
afterEach(async () => {
  for (const w of watches.splice(0)) await w.stop();
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) process.kill(child.pid!, "SIGKILL");
  }
  h.cleanup();
});

/** Field 22 of /proc/PID/stat (read here on its own, not by the code under test): what Hermes records as start_time. */
function startTime(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "latin1");
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]);
}

/**
 * A stand-in gateway: a process started beside the test's prepare (no ancestor of it) whose environment holds `value`;
 * `asHermes`: its command line a Hermes gateway's (`node … /usr/bin/hermes --profile work gateway run`), as a bare PID needs.
 */
async function gateway(value: string, as: { uid?: number; gid?: number } = {}, asHermes = false): Promise<number> {
  const [cmd, args] = asHermes ? [process.execPath, ["-e", "setTimeout(() => {}, 600_000)", "--", "/usr/bin/hermes", "--profile", "work", "gateway", "run"]] : ["sleep", ["600"]];
  const child = spawn(cmd, args, { env: { PATH: process.env.PATH, [NAME]: value }, stdio: "ignore", ...as });
  children.push(child);
  await new Promise<void>((resolve, reject) => child.once("spawn", resolve).once("error", reject));
  return child.pid!;
}

/** The record Hermes 0.19 writes (gateway/status.py write_pid_file: json.dumps of _build_pid_record). */
const record = (pid: number, start: unknown = startTime(pid)) => JSON.stringify({ pid, kind: "hermes-gateway", argv: ["/usr/bin/hermes", "gateway", "run"], start_time: start });

function prepareJson(files: string[], env = h.env) {
  const r = cli(["prepare", "--json", ...files], { env, cwd: work });
  return { code: r.code, stderr: r.stderr, report: JSON.parse(r.stdout) as { media: { name: string }[]; media_dropped: { code: string; reason: string }[] } };
}

describe("a running gateway's environment, through its gateway.pid", () => {
  it("knows a key of a gateway that is no ancestor, named by the Hermes gateway.pid with its start time: the real CLI refuses a file holding it, names the variable and the process, never the value, and leaves nothing", async () => {
    const value = token();
    const pid = await gateway(value);
    const leak = write(work, "leak.txt", `the key is ${value}\n`);
    // Without the PID file the value is no one's the check knows: the stand-in is no ancestor of prepare.
    expect(prepareJson([write(work, "before.txt", `the key is ${value}\n`)]).report.media.map((m) => m.name)).toEqual(["before.txt"]);
    fs.rmSync(h.outbox, { recursive: true });
    fs.rmSync(path.join(hermes, ".media_outbox-state"), { recursive: true });
    write(hermes, "gateway.pid", record(pid));
    const { code, report, stderr } = prepareJson([leak]);
    expect(code).toBe(1);
    expect(report.media).toEqual([]);
    expect(report.media_dropped).toEqual([expect.objectContaining({ code: "secret_detected", reason: expect.stringContaining(`the value of ${NAME} (the environment of process ${pid}, sleep)`) })]);
    expect(JSON.stringify(report) + stderr).not.toContain(value);
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
    expect(fs.existsSync(leak)).toBe(true);
  });

  it("knows it through a profile's gateway.pid, a bare integer (older gateways), and a record without a start time, the last two of a process whose command line is a gateway's", async () => {
    const values = [token(), token(), token()];
    const pids = await Promise.all(values.map((v, i) => gateway(v, {}, i > 0)));
    const profile = path.join(hermes, "profiles", "work");
    fs.mkdirSync(profile, { recursive: true });
    write(profile, "gateway.pid", record(pids[0]!));
    const other = path.join(h.home, "other-hermes");
    fs.mkdirSync(other);
    const cases: [string, string][] = [
      [path.join(hermes, "profiles", "work"), record(pids[0]!)],
      [other, `${pids[1]}\n`],
      [other, JSON.stringify({ pid: pids[2], kind: "hermes-gateway", start_time: null })],
    ];
    for (const [i, [home, text]] of cases.entries()) {
      if (home === other) write(other, "gateway.pid", text);
      const env = home === other ? { ...h.env, HERMES_HOME: other } : h.env;
      const { code, report } = prepareJson([write(work, `leak${i}.txt`, `${values[i]}\n`)], env);
      expect(code, text).toBe(1);
      expect(report.media_dropped.map((d) => d.code)).toEqual(["secret_detected"]);
      expect(report.media_dropped[0]!.reason).toContain(`(the environment of process ${pids[i]}, ${i > 0 ? "node" : "sleep"})`);
    }
  });

  it("passes over a wrong start time (the PID reused), a garbage, empty, linked, oversized or FIFO gateway.pid, a dead process and a PID that is not a positive integer: published, no error", async () => {
    const value = token();
    const pid = await gateway(value);
    const dead = spawn("true", [], { stdio: "ignore" });
    const deadPid = await new Promise<number>((resolve) => dead.once("exit", () => resolve(dead.pid!)));
    const elsewhere = write(h.home, "elsewhere.pid", record(pid));
    const pidFile = path.join(hermes, "gateway.pid");
    const cases: [string, (file: string) => void][] = [
      ["wrong start time", (f) => fs.writeFileSync(f, record(pid, startTime(pid) + 1))],
      ["start time as text", (f) => fs.writeFileSync(f, record(pid, String(startTime(pid))))],
      ["garbage", (f) => fs.writeFileSync(f, "not a pid\n")],
      ["empty", (f) => fs.writeFileSync(f, "")],
      ["a JSON list", (f) => fs.writeFileSync(f, `[${pid}]`)],
      ["pid as text", (f) => fs.writeFileSync(f, JSON.stringify({ pid: String(pid), start_time: startTime(pid) }))],
      ["pid 0", (f) => fs.writeFileSync(f, "0")],
      ["negative pid", (f) => fs.writeFileSync(f, JSON.stringify({ pid: -pid }))],
      ["fractional pid", (f) => fs.writeFileSync(f, `${pid}.5`)],
      ["dead process", (f) => fs.writeFileSync(f, `${deadPid}`)],
      // A bare PID (an older gateway's) is no proof: reused since, or a container's (another PID namespace's).
      ["bare PID of a process that is no gateway", (f) => fs.writeFileSync(f, `${pid}\n`)],
      ["no start time, a process that is no gateway", (f) => fs.writeFileSync(f, JSON.stringify({ pid, kind: "hermes-gateway", argv: ["/usr/bin/hermes", "gateway", "run"], start_time: null }))],
      ["oversized", (f) => fs.writeFileSync(f, JSON.stringify({ pid, kind: "hermes-gateway", argv: ["x".repeat(70_000)], start_time: startTime(pid) }))],
      ["symlink", (f) => fs.symlinkSync(elsewhere, f)],
      ["fifo", (f) => execFileSync("mkfifo", [f])],
      ["directory", (f) => fs.mkdirSync(f)],
    ];
    const files = cases.map(([what], i) => write(work, `case${i}.txt`, `${value}\n`));
    for (const [i, [what, make]] of cases.entries()) {
      fs.rmSync(pidFile, { recursive: true, force: true });
      make(pidFile);
      const { code, report, stderr } = prepareJson([files[i]!]);
      expect({ what, code, published: report.media.map((m) => m.name), stderr }).toEqual({ what, code: 0, published: [`case${i}.txt`], stderr: "" });
    }
  });

  it("passes over a gateway of another user (the gate's case: it cannot read the agents' gateways), never an error", async () => {
    if (process.getuid?.() !== 0) throw new Error("this test needs root, to run prepare as an unprivileged user (uid 65534) beside a gateway of root's");
    const home = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "mo-nobody-")));
    try {
      fs.chmodSync(home, 0o755);
      const own = path.join(home, ".hermes");
      fs.mkdirSync(own, { mode: 0o700 });
      const value = token();
      const pid = await gateway(value);
      write(own, "gateway.pid", record(pid));
      const leak = write(home, "leak.txt", `${value}\n`);
      execFileSync("chown", ["-R", "65534:65534", home]);
      const env = { PATH: process.env.PATH, HOME: home, HERMES_HOME: own, MEDIA_OUTBOX_SYSTEM_CONFIG: path.join(home, "none.json"), HERMES_MANAGED_DIR: path.join(home, "managed") };
      const r = spawnSync(process.execPath, [BIN, "prepare", leak], { env, cwd: home, uid: 65534, gid: 65534, encoding: "utf8" });
      expect({ code: r.status, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
      expect(fs.readdirSync(path.join(own, "media_outbox"))).toEqual(["leak.txt"]);
    } finally {
      fs.rmSync(home, { recursive: true, force: true });
    }
  });
});

describe("processEnvironments with Hermes homes", () => {
  it("lists a gateway after the ancestors, once when it is one of them, and reads the PID file again at each call (a gateway restarts)", async () => {
    const homeA = path.join(h.home, "a");
    const homeB = path.join(h.home, "b");
    fs.mkdirSync(homeA);
    fs.mkdirSync(homeB);
    const [first, second] = [token(), token()];
    const pidFirst = await gateway(first);
    const pidSecond = await gateway(second);
    const pids = (homes: string[]) => processEnvironments(homes).map((e) => e.pid);
    const withoutHomes = pids([]);
    // The parent (an ancestor already listed), this process itself, and a gateway: listed once each.
    write(homeA, "gateway.pid", record(process.ppid));
    write(homeB, "gateway.pid", `${process.pid}`);
    expect(pids([homeA, homeB])).toEqual(withoutHomes);
    write(homeA, "gateway.pid", record(pidFirst));
    write(homeB, "gateway.pid", record(pidFirst));
    expect(pids([homeA, homeB])).toEqual([...withoutHomes, pidFirst]);
    const env = processEnvironments([homeA]).at(-1)!;
    expect(env).toMatchObject({ pid: pidFirst, command: "sleep" });
    expect(env.entries).toContainEqual([NAME, first]);
    // The gateway restarted under another PID: the file says so, and the new one counts, the old one no longer.
    write(homeA, "gateway.pid", record(pidSecond));
    const after = processEnvironments([homeA]);
    expect(after.map((e) => e.pid)).toEqual([...withoutHomes, pidSecond]);
    expect(after.at(-1)!.entries).toContainEqual([NAME, second]);
  });

  it("reads a gateway.pid as Hermes does, and a stat line's start time only when it is digits", () => {
    expect(parseGatewayPid('{"pid": 812, "kind": "hermes-gateway", "argv": ["hermes"], "start_time": 918273}\n')).toEqual({ pid: 812, start: "918273" });
    expect(parseGatewayPid("812\n")).toEqual({ pid: 812 });
    expect(parseGatewayPid('{"pid": 812, "start_time": null}')).toEqual({ pid: 812 });
    for (const bad of ["", "x", "[812]", "null", "true", '"812"', "0", "-3", "8.5", '{"pid": "812"}', '{"pid": 812, "start_time": "918273"}', '{"pid": 812, "start_time": 1.5}', '{"start_time": 3}', `${2 ** 60}`]) {
      expect(parseGatewayPid(bad), bad).toBeUndefined();
    }
    expect(parseStat("4242 (a) b (c)) S 17 4242 4242 0 -1 4194560 106 0 0 0 1 0 0 0 20 0 1 0 918273 6463488")).toMatchObject({ start: "918273" });
    expect(parseStat("4242 (x) S 17 4242 4242 0 -1 4194560 106 0 0 0 1 0 0 0 20 0 1 0 9e3 6463488")).toEqual({ command: "x", parent: 17 });
  });

  it("takes a command line for a gateway's as Hermes does (gateway/status.py looks_like_gateway_runtime_command_line)", () => {
    const gateways = [
      ["/usr/bin/hermes", "gateway", "run"],
      ["/usr/bin/hermes", "gateway"],
      ["/opt/hermes/.venv/bin/python3", "-m", "hermes_cli.main", "gateway", "restart"],
      ["python", "/opt/hermes/hermes_cli/main.py", "-p", "gateway", "gateway", "run"],
      ["hermes", "--profile=work", "gateway", "run", "--replace"],
      ["python3", "/srv/hermes/gateway/run.py"],
      ["/usr/local/bin/hermes-gateway"],
      ['"C:\\Program Files\\Hermes\\hermes.exe"', "GATEWAY", "RUN"],
    ];
    const others = [
      ["sleep", "600"],
      ["/usr/bin/hermes", "gateway", "status"],
      ["/usr/bin/hermes", "chat"],
      ["python", "-m", "tui_gateway"],
      ["/usr/bin/hermes", "--profile", "gateway", "chat"],
      ["node", "gateway", "run"],
      [],
    ];
    for (const argv of gateways) expect(isGatewayCommandLine(argv), argv.join(" ")).toBe(true);
    for (const argv of others) expect(isGatewayCommandLine(argv), argv.join(" ")).toBe(false);
  });

  it("reads a deep or long gateway.pid in linear time", () => {
    const deep = "[".repeat(100_000);
    const long = `{"pid": 1, "argv": ["${"a".repeat(60_000)}"], "start_time": 1}`;
    expect(parseGatewayPid(deep)).toBeUndefined();
    expect(parseGatewayPid(long)).toEqual({ pid: 1, start: "1" });
  });
});

describe("the watch's drop folders", () => {
  it("refuses a dropped file holding a key of a gateway the Hermes gateway.pid names, written after the watch started", async () => {
    const drop = path.join(h.home, "drop");
    const w = new WatchProcess(["--drop", drop], h.env);
    watches.push(w);
    await w.waitFor((e) => e.event === "ready", "ready");
    const value = token();
    const pid = await gateway(value);
    write(hermes, "gateway.pid", record(pid));
    const tmp = write(drop, ".leak.part", `${value}\n`);
    fs.renameSync(tmp, path.join(drop, "leak.txt"));
    const e = await w.waitFor((ev) => ev.name === "leak.txt" && (ev.event === "refused" || ev.event === "published"), "leak.txt");
    expect(e).toMatchObject({ event: "refused", code: "secret_detected", receipt: "leak.txt.refused" });
    const receipt = fs.readFileSync(path.join(drop, "leak.txt.refused"), "utf8");
    expect(receipt).toMatch(new RegExp(`^secret_detected: .*${NAME} \\(the environment of process ${pid}, sleep\\)`));
    expect(receipt + w.stderr + w.lines.join("\n")).not.toContain(value);
    expect(fs.readdirSync(h.outbox)).toEqual([]);
  });
});
