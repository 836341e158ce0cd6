import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { StatusReport } from "../src/janitor/status.js";
import { BIN, type CliResult, cli, makeHome, write } from "./helpers.js";

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

function populate(): void {
  aged(h.outbox, "old.png", 15 * DAY, Buffer.alloc(1000));
  aged(h.outbox, "soon.pdf", 13 * DAY + 12 * HOUR, Buffer.alloc(300));
  aged(h.outbox, "new.png", 30 * 60_000, Buffer.alloc(200));
  fs.mkdirSync(path.join(h.outbox, "stray-dir"));
  aged(path.join(state, "staging"), "1-dead.part", 2 * HOUR, Buffer.alloc(50));
  aged(path.join(state, "staging"), "2-live.part", 60_000, Buffer.alloc(10));
  aged(path.join(state, "quarantine"), "q.png", 20 * DAY, Buffer.alloc(7));
  write(path.join(state, "ledger"), "2026-11-01.jsonl", "{}\n");
  write(path.join(state, "ledger"), "2026-12-01.jsonl", "{}\n{}\n");
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
    expect(s.ledger).toMatchObject({ exists: true, files: 2, oldest_day: "2026-11-01", newest_day: "2026-12-01" });
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
