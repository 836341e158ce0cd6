import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { GateStatusReport } from "../src/janitor/gate-status.js";
import type { StatusReport } from "../src/janitor/status.js";
import { fakeSystemctl, put } from "./deploy-helpers.js";
import { type Gate, killAll, startGate, waitFor } from "./gate-helpers.js";
import { moveToQuarantine } from "../src/watch/quarantine.js";
import { BIN, type CliResult, cli, makeHome, recordPublished, write } from "./helpers.js";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

let h: ReturnType<typeof makeHome>;
let state: string;
beforeEach(() => {
  h = makeHome();
  fs.mkdirSync(h.outbox, { recursive: true, mode: 0o700 });
  state = path.join(path.dirname(h.outbox), ".media_outbox-state");
  for (const sub of ["staging", "ledger", "quarantine"]) fs.mkdirSync(path.join(state, sub), { recursive: true, mode: 0o700 });
});
afterEach(() => h.cleanup());

function aged(dir: string, name: string, ms: number, content: string | Buffer = "x"): string {
  const file = write(dir, name, content);
  const t = new Date(Date.now() - ms);
  fs.utimesSync(file, t, t);
  return file;
}
const status = (args: string[] = []): CliResult => cli(["status", ...args], { env: h.env });
const doc = (r: CliResult) => JSON.parse(r.stdout) as StatusReport;

/** What prepare published (a ledger record names it with its size), `ms` old. */
function published(name: string, ms: number, content: Buffer): string {
  recordPublished(path.join(state, "ledger"), name, content.length, "2026-12-01");
  return aged(h.outbox, name, ms, content);
}

function populate(): void {
  published("old.png", 15 * DAY, Buffer.alloc(1000));
  published("soon.pdf", 13 * DAY + 12 * HOUR, Buffer.alloc(300));
  published("new.png", 30 * 60_000, Buffer.alloc(200));
  fs.mkdirSync(path.join(h.outbox, "stray-dir"));
  aged(path.join(state, "staging"), "1-000000000000dead.part", 2 * HOUR, Buffer.alloc(50));
  aged(path.join(state, "staging"), "2-0000000000000a11.part", 60_000, Buffer.alloc(10));
  // Caught by the guard (the journal says so), 20 days ago.
  write(h.outbox, "q.png", Buffer.alloc(7));
  moveToQuarantine(h.outbox, path.join(state, "quarantine"), "q.png", "not_in_ledger");
  const t = new Date(Date.now() - 20 * DAY);
  fs.utimesSync(path.join(state, "quarantine", "q.png"), t, t);
  // A day's first record cut short by a crash: the ledger's day. A file under a day's name holding no record: not a day of the ledger's.
  write(path.join(state, "ledger"), "2026-11-01.jsonl", '{"time":"2026-11-01T10:00:00.000Z","source":"/w/a.png","byt');
  write(path.join(state, "ledger"), "2026-10-01.jsonl", "{}\n");
}

describe("status --json", () => {
  it("reports the outbox, its content, what the janitor would remove and the state beside it", () => {
    populate();
    const before = Date.now();
    const r = status(["--json"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe("");
    const s = doc(r);
    expect(s.outbox).toEqual({ path: h.outbox, exists: true, safe: true, problem: null, code: null, dedicated: true });
    expect(s.files).toMatchObject({ files: 3, bytes: 1500, other_entries: 1 });
    expect(s.files.oldest).toMatchObject({ name: "old.png", bytes: 1000 });
    expect(s.files.newest).toMatchObject({ name: "new.png", bytes: 200 });
    expect(s.files.by_type).toEqual({ png: { files: 2, bytes: 1200 }, pdf: { files: 1, bytes: 300 } });
    expect(s.janitor.retention_ms).toBe(14 * DAY);
    expect(s.janitor.next_run).toEqual({
      outbox: { files: 1, bytes: 1000 },
      staging: { files: 1, bytes: 50 },
      quarantine: { files: 1, bytes: 7 },
      ledger: { files: 0, bytes: 0 },
      quota_met: null,
    });
    // soon.pdf expires in about 12 h: the next expiry, and within 24 h.
    const next = Date.parse(s.janitor.next_expiry!);
    expect(next - before).toBeGreaterThan(11 * HOUR);
    expect(next - before).toBeLessThan(13 * HOUR);
    expect(s.janitor.expiring_24h).toEqual({ files: 1, bytes: 300 });
    expect(s.staging).toMatchObject({ exists: true, files: 2, bytes: 60, stale: 1 });
    expect(s.quarantine).toMatchObject({ exists: true, files: 1, bytes: 7, expired: 1 });
    // Three day files, two of them the ledger's: 2026-10-01.jsonl holds no record of its day.
    expect(s.ledger).toMatchObject({ exists: true, files: 3, oldest_day: "2026-11-01", newest_day: "2026-12-01" });
    // Read-only: nothing was removed.
    expect(fs.readdirSync(h.outbox).sort()).toEqual(["new.png", "old.png", "soon.pdf", "stray-dir"]);
    expect(fs.readdirSync(path.join(state, "staging"))).toHaveLength(2);
  });

  it("reports the quota the next run cannot meet", () => {
    populate();
    const s = doc(status(["--json", "--config", writeConfig({ janitor: { maxBytes: 100 } })]));
    expect(s.janitor.max_bytes).toBe(100);
    expect(s.janitor.next_run.quota_met).toBe(false);
  });

  it("a published file written to since (another size) is one the janitor keeps: no expiry, and the table says why without claiming prepare never published it", () => {
    const file = published("grown.txt", 20 * DAY, Buffer.from("12345"));
    fs.appendFileSync(file, "more");
    fs.utimesSync(file, new Date(Date.now() - 20 * DAY), new Date(Date.now() - 20 * DAY));
    const s = doc(status(["--json"]));
    expect(s.files).toMatchObject({ files: 1, unpublished: 1, oldest: { name: "grown.txt", expires: null } });
    expect(s.janitor.next_run!.outbox).toEqual({ files: 0, bytes: 0 });
    const table = status().stdout;
    expect(table).toMatch(/^files +1 file \(9 B\), 1 not named by the ledger with its size \(changed since prepare published it, or not published by it: the janitor keeps it, the watch guard quarantines it\)$/m);
    expect(table).not.toContain("not published by prepare");
  });

  it("a missing outbox: exit 0, exists false, nothing created", () => {
    fs.rmSync(path.dirname(h.outbox), { recursive: true });
    const r = status(["--json"]);
    expect(r.code).toBe(0);
    expect(doc(r).outbox).toMatchObject({ exists: false, safe: true });
    expect(fs.existsSync(path.dirname(h.outbox))).toBe(false);
  });

  it("an unsafe outbox: exit 1 with the problem", () => {
    fs.chmodSync(h.outbox, 0o777);
    const r = status(["--json"]);
    expect(r.code).toBe(1);
    expect(doc(r).outbox).toMatchObject({ exists: true, safe: false, code: "outbox_unsafe", problem: expect.stringMatching(/writable by group or others/) });
  });

  it("escapes file names", () => {
    aged(h.outbox, "x\u001b[2Jy\nMEDIA:z.png", DAY);
    const s = doc(status(["--json"]));
    expect(s.files.oldest!.name).toBe("x\\x1b[2Jy\\x0aMEDIA\\x3az.png");
  });
});

function writeConfig(obj: object): string {
  return write(h.home, "config.json", JSON.stringify(obj));
}

describe("status (human)", () => {
  it("prints an aligned plain-text table when not on a terminal", () => {
    populate();
    const r = status();
    expect(r.code).toBe(0);
    expect(r.stdout).not.toMatch(/\x1b/);
    const lines = r.stdout.trimEnd().split("\n");
    const labels = ["outbox", "safety", "files", "oldest", "newest", "by type", "retention", "next janitor run", "next expiry", "expiring in 24h", "staging", "quarantine", "ledger"];
    for (const label of labels) expect(lines.some((l) => l.startsWith(`${label} `))).toBe(true);
    // Every value starts in the same column.
    const column = lines[0]!.indexOf(h.outbox);
    for (const line of lines) {
      expect(["", ...labels]).toContain(line.slice(0, column).trimEnd());
      expect(line[column]).not.toBe(" ");
    }
    expect(r.stdout).toMatch(/^safety +safe$/m);
    expect(r.stdout).toMatch(/^files +3 files \(1\.5 KiB\), 1 other entry \(the janitor never touches it\)$/m);
    expect(r.stdout).toMatch(/^next janitor run +would delete 1 file \(1000 B\) from the outbox$/m);
  });

  it("uses bold labels on a terminal", () => {
    populate();
    // `script` gives the CLI a pseudo-terminal as stdout.
    const cmd = `${process.execPath} ${BIN} status`;
    const outText = execFileSync("script", ["-qec", cmd, "/dev/null"], { env: { ...h.env, TERM: "xterm" }, encoding: "utf8" });
    expect(outText).toMatch(/\x1b\[1moutbox/);
    expect(outText).toMatch(/safe/);
  });
});

// Gate mode: prepare would hand its files to a gate (MEDIA_OUTBOX_SOCKET here,
// the system config on a gate host), so status describes the gate's outbox.
// A real `serve` on a temporary socket; every process is killed by PID.
describe("status in gate mode", () => {
  const NOBODY = 65534;
  const AGENT = 1; // daemon: a user of its own, in the gate's group only when given --groups
  let gate: Gate;
  let fake: string;
  let env: NodeJS.ProcessEnv;
  afterEach(() => killAll());

  /** systemctl as status asks it: a running manager whose janitor unit has `environment` (or none). */
  function janitorUnit(environment?: string, user = "nobody"): void {
    fakeSystemctl(fake);
    put(path.join(fake, "state"), "running\n");
    if (environment !== undefined) {
      put(path.join(fake, "show-media-outbox-janitor.service"), `LoadState=loaded\nEnvironment=${environment}\nEnvironmentFiles=\nUnsetEnvironment=\nUser=${user}\nActiveState=inactive\nMainPID=0\n`);
    }
  }
  const gateStatusOf = (r: CliResult) => JSON.parse(r.stdout) as GateStatusReport;
  const asUser = (uid: number, groups: number[], args: string[]): CliResult => {
    const r = spawnSync("/usr/bin/setpriv", [`--reuid=${uid}`, `--regid=${uid}`, ...(groups.length > 0 ? [`--groups=${groups.join(",")}`] : ["--clear-groups"]), process.execPath, BIN, "status", ...args], {
      env: { ...env, HOME: "/nonexistent", HERMES_HOME: "/nonexistent/.hermes" },
      encoding: "utf8",
    });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  };

  beforeEach(() => {
    fake = path.join(h.home, "fake-systemctl");
    janitorUnit();
    env = { ...h.env, MEDIA_OUTBOX_SYSTEMCTL: path.join(fake, "systemctl") };
  });

  /** The gate run by the test's own user (root), as the other gate tests run it. */
  async function ownGate(): Promise<void> {
    gate = await startGate(h.home, h.env);
    env.MEDIA_OUTBOX_SOCKET = gate.socket;
  }

  /** The gate run as nobody, as install runs it as its own user: its outbox 0750, its state 0700, its socket 0660. */
  async function nobodysGate(): Promise<void> {
    if (process.getuid?.() !== 0) throw new Error("this test runs the gate as nobody, which needs root");
    const dir = path.join(h.home, "srv");
    fs.mkdirSync(dir, { mode: 0o755 });
    fs.chownSync(dir, NOBODY, NOBODY);
    fs.chmodSync(h.home, 0o755);
    const socket = path.join(dir, "gate.sock");
    // Homes of their own: the test's Hermes home (0700) is root's.
    gate = await startGate(dir, { ...h.env, HOME: "/nonexistent", HERMES_HOME: "/nonexistent/.hermes" }, ["--socket", socket], { file: "/usr/bin/setpriv", args: [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups"] });
    let ended = false;
    void gate.exited.then(() => (ended = true));
    await waitFor(() => ended || gate.events().some((e) => e.event === "ready"));
    if (ended) throw new Error(`serve as nobody exited before it was ready:\n${gate.log()}`);
    env.MEDIA_OUTBOX_SOCKET = gate.socket;
  }

  /** Files as the gate would have published them (its user's, 0640), and state beside. */
  function publish(uid: number): void {
    const files = [aged(gate.outbox, "old.png", 15 * DAY, Buffer.alloc(1000)), aged(gate.outbox, "new.pdf", 30 * 60_000, Buffer.alloc(200))];
    files.push(aged(path.join(gate.state, "staging"), "1-000000000000dead.part", 2 * HOUR, Buffer.alloc(50)));
    for (const f of files) {
      fs.chmodSync(f, 0o640);
      fs.chownSync(f, uid, uid);
    }
    // The gate's ledger names what it published.
    const ledger = path.join(gate.state, "ledger");
    recordPublished(ledger, "old.png", 1000);
    const day = recordPublished(ledger, "new.pdf", 200);
    for (const p of [ledger, day]) fs.chownSync(p, uid, uid);
  }

  it("a gate started by hand with MEDIA_OUTBOX_STATE_DIR: its staging and ledger are read where it keeps them (its GET /health says), not beside the outbox", async () => {
    const elsewhere = path.join(h.home, "var", "gate-state");
    gate = await startGate(h.home, { ...h.env, MEDIA_OUTBOX_STATE_DIR: elsewhere });
    env.MEDIA_OUTBOX_SOCKET = gate.socket;
    aged(path.join(elsewhere, "staging"), "1-000000000000dead.part", 2 * HOUR, Buffer.alloc(50));
    const s = gateStatusOf(cli(["status", "--json"], { env }));
    expect(s.staging).toMatchObject({ path: path.join(elsewhere, "staging"), files: 1, stale: 1 });
    expect(s.ledger).toMatchObject({ path: path.join(elsewhere, "ledger") });
    expect(fs.existsSync(path.join(path.dirname(gate.outbox), ".outbox-state"))).toBe(false);
  });

  it("as root, with the gate answering: the gate's socket, user and outbox, its files, the janitor's next run and the state; no local outbox", async () => {
    await ownGate();
    publish(0);
    const r = cli(["status", "--json"], { env });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const s = gateStatusOf(r);
    expect(s.gate).toEqual({
      socket: gate.socket,
      from: "MEDIA_OUTBOX_SOCKET",
      user: "root",
      answers: true,
      code: null,
      problem: null,
      outbox_from: "gate",
      policy_from: null,
      seen: "all",
      unseen: null,
      notes: [],
    });
    expect(s.outbox).toEqual({ path: gate.outbox, exists: true, safe: true, problem: null, code: null, dedicated: true });
    expect(s.files).toMatchObject({ files: 2, bytes: 1200, oldest: { name: "old.png" }, newest: { name: "new.pdf" } });
    expect(s.janitor!.retention_ms).toBe(14 * DAY);
    expect(s.janitor!.next_run).toMatchObject({ outbox: { files: 1, bytes: 1000 }, staging: { files: 1, bytes: 50 } });
    expect(s.staging).toMatchObject({ path: path.join(gate.state, "staging"), files: 1, stale: 1 });
    expect(s.ledger).toMatchObject({ path: path.join(gate.state, "ledger"), exists: true });
    expect(r.stdout).not.toContain(h.outbox);
    expect(fs.readdirSync(gate.outbox).sort()).toEqual(["new.pdf", "old.png"]);

    const human = cli(["status"], { env });
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(new RegExp(`^gate +${gate.socket} \\(from MEDIA_OUTBOX_SOCKET\\)$`, "m"));
    expect(human.stdout).toMatch(/^answers +yes \(GET \/health\)$/m);
    expect(human.stdout).toMatch(new RegExp(`^outbox +${gate.outbox}$`, "m"));
    expect(human.stdout).toMatch(/^retention +14\.0d \(the defaults: no janitor unit names this outbox\)$/m);
    expect(human.stdout).toMatch(/^next janitor run +would delete 1 file \(1000 B\) from the outbox$/m);
    expect(human.stdout).not.toMatch(/not seen/);
  });

  it("the janitor's policy and state come from its unit when it names the gate's outbox; one that names another outbox is a note", async () => {
    await ownGate();
    publish(0);
    const config = write(h.home, "gate.json", JSON.stringify({ janitor: { retention: "10m", minAge: "5m" } }));
    janitorUnit(`MEDIA_OUTBOX_DIR=${gate.outbox} MEDIA_OUTBOX_STATE_DIR=${gate.state} MEDIA_OUTBOX_CONFIG=${config}`, "root");
    const s = gateStatusOf(cli(["status", "--json"], { env }));
    expect(s.gate).toMatchObject({ policy_from: "media-outbox-janitor.service", outbox_from: "gate", notes: [] });
    expect(s.janitor!.retention_ms).toBe(10 * 60_000);
    expect(s.janitor!.next_run!.outbox).toEqual({ files: 2, bytes: 1200 });

    janitorUnit(`MEDIA_OUTBOX_DIR=/srv/elsewhere/outbox MEDIA_OUTBOX_CONFIG=${config}`, "root");
    const other = gateStatusOf(cli(["status", "--json"], { env }));
    expect(other.gate.policy_from).toBeNull();
    expect(other.gate.notes).toEqual(["media-outbox-janitor.service names the outbox /srv/elsewhere/outbox, not the gate's: its janitor does not sweep the gate's outbox; install the gate again"]);
    expect(other.janitor!.retention_ms).toBe(14 * DAY);
  });

  it("a config file's socket, beside its outbox, is gate mode for status too; janitor still sweeps that outbox (README, Config file)", () => {
    const outbox = path.join(h.home, "local-outbox");
    const socket = path.join(h.home, "gate.sock");
    const config = write(h.home, "c.json", JSON.stringify({ outbox, socket }));
    const st = cli(["status", "--json", "--config", config], { env });
    expect(st.code).toBe(1);
    expect(gateStatusOf(st).gate).toMatchObject({ socket, answers: false, code: "gate_unavailable" });
    const jan = cli(["janitor", "--dry-run", "--json", "--config", config], { env });
    expect(jan.code, jan.stderr).toBe(0);
    expect(JSON.parse(jan.stdout)).toMatchObject({ outbox, outbox_exists: false });
  });

  it("a gate that does not answer: exit 1, the reason prepare would give; the outbox its janitor unit names is still shown", () => {
    const socket = path.join(h.home, "no\u001b[2J\ngate.sock");
    env.MEDIA_OUTBOX_SOCKET = socket;
    const r = cli(["status", "--json"], { env });
    expect(r.code).toBe(1);
    const s = gateStatusOf(r);
    const shown = path.join(h.home, "no\\x1b[2J\\x0agate.sock");
    expect(s.gate).toMatchObject({ socket: shown, user: null, answers: false, code: "gate_unavailable", outbox_from: null, seen: "nothing" });
    expect(s.gate.problem).toMatch(/^no gate socket at .*no\\x1b\[2J\\x0agate\.sock \(from MEDIA_OUTBOX_SOCKET\): the gate is not installed/);
    expect(s.gate.unseen).toBe("the gate's outbox: the gate does not answer and no media-outbox-janitor.service names one");
    expect(s.outbox).toBeNull();
    expect(r.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f]/);
    const human = cli(["status"], { env });
    expect(human.code).toBe(1);
    expect(human.stdout).toContain(`answers   NO (gate_unavailable): no gate socket at ${shown}`);
    expect(human.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f]/);

    // The janitor's unit names the outbox (its User='s): it is read all the same.
    const outbox = path.join(h.home, "srv", "outbox");
    fs.mkdirSync(outbox, { recursive: true, mode: 0o750 });
    fs.chownSync(outbox, NOBODY, NOBODY);
    aged(outbox, "kept.png", HOUR, Buffer.alloc(10));
    janitorUnit(`MEDIA_OUTBOX_DIR=${outbox}`);
    const fromUnit = cli(["status", "--json"], { env });
    expect(fromUnit.code).toBe(1);
    const u = gateStatusOf(fromUnit);
    expect(u.gate).toMatchObject({ answers: false, user: "nobody", outbox_from: "unit", policy_from: "media-outbox-janitor.service", seen: "all" });
    expect(u.outbox).toMatchObject({ path: outbox, safe: true });
    expect(u.files).toMatchObject({ files: 1, bytes: 10 });
  });

  it("as root, the gate's outbox belongs to the gate's user, not root: read directly, safe (local mode's --outbox refuses it as not root's)", async () => {
    await nobodysGate();
    publish(NOBODY);
    expect(fs.statSync(gate.outbox).uid).toBe(NOBODY);
    const r = cli(["status", "--json"], { env });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const s = gateStatusOf(r);
    expect(s.gate).toMatchObject({ user: "nobody", answers: true, seen: "all", unseen: null });
    expect(s.outbox).toMatchObject({ path: gate.outbox, safe: true });
    expect(s.files).toMatchObject({ files: 2, bytes: 1200 });
    expect(s.janitor!.next_run).toMatchObject({ outbox: { files: 1 }, staging: { files: 1 } });
    expect(s.staging).toMatchObject({ files: 1, stale: 1 });
    const local = cli(["status", "--json", "--outbox", gate.outbox], { env });
    expect(local.code).toBe(1);
    expect(doc(local).outbox.problem).toMatch(/not by the current user/);

    // An outbox its group could write into: the gate answers it is unsafe, and so does status, reading the outbox its janitor unit names.
    janitorUnit(`MEDIA_OUTBOX_DIR=${gate.outbox}`);
    fs.chmodSync(gate.outbox, 0o770);
    const unsafe = cli(["status", "--json"], { env });
    expect(unsafe.code).toBe(1);
    const u = gateStatusOf(unsafe);
    expect(u.gate).toMatchObject({ answers: false, code: "gate_error", problem: expect.stringMatching(/answered 503 outbox_unsafe/), outbox_from: "unit" });
    expect(u.outbox).toMatchObject({ safe: false, code: "outbox_unsafe", problem: expect.stringMatching(/writable by group or others.*install the gate again/) });
  });

  it("an outbox that is not the gate's user's is unsafe to root's status", async () => {
    await nobodysGate();
    const swapped = path.join(h.home, "srv", "gate", "other");
    fs.mkdirSync(swapped, { mode: 0o750 });
    fs.chownSync(swapped, AGENT, NOBODY);
    janitorUnit(`MEDIA_OUTBOX_DIR=${swapped}`);
    env.MEDIA_OUTBOX_SOCKET = path.join(h.home, "srv", "gone.sock");
    const s = gateStatusOf(cli(["status", "--json"], { env }));
    expect(s.gate).toMatchObject({ user: "nobody", outbox_from: "unit" });
    expect(s.outbox).toMatchObject({ safe: false, problem: expect.stringMatching(/owned by uid 1, not by the gate's user nobody \(uid 65534\)/) });
  });

  it("as an agent in the gate's group: the outbox and its files, not the state; told what it cannot see and how to see it", async () => {
    await nobodysGate();
    publish(NOBODY);
    const r = asUser(AGENT, [NOBODY], ["--json"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const s = gateStatusOf(r);
    expect(s.gate).toMatchObject({ user: "nobody", answers: true, seen: "outbox" });
    expect(s.gate.unseen).toBe(
      "the gate's state (staging, ledger, quarantine) and what the next janitor run would delete: only root and nobody may read them; see them with: sudo media-outbox status",
    );
    expect(s.outbox).toMatchObject({ path: gate.outbox, safe: true });
    expect(s.files).toMatchObject({ files: 2, bytes: 1200, oldest: { name: "old.png" } });
    expect(s.janitor).toMatchObject({ retention_ms: 14 * DAY, next_run: null });
    expect(s).toMatchObject({ staging: null, quarantine: null, ledger: null });

    const human = asUser(AGENT, [NOBODY], []);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^staging +\(not seen: see below\)$/m);
    expect(human.stdout).toMatch(/^not seen +the gate's state .*sudo media-outbox status$/m);
  });

  it("as a user outside the gate's group: the gate refuses it, and neither outbox nor state is seen", async () => {
    await nobodysGate();
    publish(NOBODY);
    janitorUnit(`MEDIA_OUTBOX_DIR=${gate.outbox}`);
    const r = asUser(AGENT, [], ["--json"]);
    expect(r.code).toBe(1);
    const s = gateStatusOf(r);
    expect(s.gate).toMatchObject({ user: "nobody", answers: false, code: "gate_unavailable", problem: expect.stringMatching(/^permission denied on /), outbox_from: "unit", seen: "nothing" });
    expect(s.gate.unseen).toBe(
      `the gate's outbox ${gate.outbox} and its state: you (uid 1) may not read them (only root, nobody and the members of its group, the agent users, may read the outbox); see them with: sudo media-outbox status`,
    );
    expect(s.outbox).toBeNull();
    expect(s.files).toBeNull();
  });
});
