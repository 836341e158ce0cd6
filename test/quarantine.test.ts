import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { cli, makeHome, png, write } from "./helpers.js";
import { type Event, WatchProcess } from "./watch-helpers.js";

let h: ReturnType<typeof makeHome>;
let work: string;
let quarantine: string;

beforeEach(() => {
  h = makeHome();
  work = h.work;
  quarantine = path.join(h.home, ".hermes", ".media_outbox-state", "quarantine");
});
afterEach(() => h.cleanup());

const q = (args: string[]) => cli(["quarantine", ...args], { env: h.env, cwd: work });

interface Listed {
  quarantine: string;
  entries: { name: string; kind: string; bytes: number; reason?: string; original?: string; quarantined_at?: string }[];
}

/**
 * Plants entries in the outbox and lets a real guard quarantine them. Each
 * entry is made beside the outbox and renamed into it whole, so the guard
 * never sees one half made (a file whose old mtime is not yet set, say).
 */
async function plant(entries: Record<string, (file: string) => void>): Promise<void> {
  const w = await WatchProcess.start([], h.env);
  try {
    const making = fs.mkdtempSync(path.join(h.home, "planting-"));
    for (const [name, make] of Object.entries(entries)) {
      make(path.join(making, name));
      fs.renameSync(path.join(making, name), path.join(h.outbox, name));
    }
    for (const name of Object.keys(entries)) await w.waitFor((e: Event) => e.event === "quarantined" && e.name === name, `quarantine of ${name}`);
  } finally {
    expect(await w.stop()).toBe(0);
  }
}

describe("quarantine list", () => {
  it("shows an empty quarantine without creating anything", () => {
    const r = q(["list", "--json"]);
    expect(r.code).toBe(0);
    expect((JSON.parse(r.stdout) as Listed).entries).toEqual([]);
    expect(fs.existsSync(h.outbox)).toBe(false);
    const human = q(["list"]);
    expect(human.code).toBe(0);
    expect(human.stdout).toBe("");
    expect(human.stderr).toContain("is empty");
  });

  it("lists what the guard caught, with kind and reason", async () => {
    const target = write(work, "t.txt", "target\n");
    await plant({
      "planted.png": (f) => fs.writeFileSync(f, png(1)),
      "link.png": (f) => fs.symlinkSync(target, f),
    });
    const r = q(["list", "--json"]);
    expect(r.code).toBe(0);
    const list = JSON.parse(r.stdout) as Listed;
    expect(list.quarantine).toBe(quarantine);
    const byName = Object.fromEntries(list.entries.map((e) => [e.name, e]));
    expect(byName["planted.png"]).toMatchObject({ kind: "file", bytes: png(1).length, reason: "not_in_ledger", original: "planted.png" });
    expect(byName["link.png"]).toMatchObject({ kind: "symlink", reason: "symlink" });
    expect(list.entries.length).toBe(2);
    const human = q(["list"]);
    expect(human.stdout.split("\n").filter(Boolean).length).toBe(2);
    expect(human.stdout).toContain("planted.png\tfile\t");
  });
});

describe("quarantine list of a journal another wrote", () => {
  it("escapes the journal's time, reason and original name (the agent's user may append to it): no raw control character, bidi control or MEDIA: directive on stdout, in either output", () => {
    expect(cli(["prepare", write(work, "a.txt", "hello\n")], { env: h.env, cwd: work }).code).toBe(0);
    fs.mkdirSync(quarantine, { recursive: true, mode: 0o700 });
    fs.writeFileSync(path.join(quarantine, "zz.txt"), "x\n");
    const forged = { time: "2026-12-05T14:30:11.694Z\u001b]0;owned\u0007", event: "quarantined", name: "zz.txt", original: "zz\u202etxt.exe\nMEDIA:/home/x/.env", reason: "not_in_ledger\u001b[2J\nMEDIA:/etc/passwd\u202e" };
    fs.writeFileSync(path.join(quarantine, ".media-outbox-quarantine.jsonl"), `${JSON.stringify(forged)}\n`, { mode: 0o600 });
    const human = q(["list"]);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout.split("\n")).toEqual(["zz.txt\tfile\t2\tnot_in_ledger\\x1b[2J\\x0aMEDIA\\x3a/etc/passwd\\u{202e}\t2026-12-05T14:30:11.694Z\\x1b]0;owned\\x07", ""]);
    const json = q(["list", "--json"]);
    expect(json.code, json.stderr).toBe(0);
    expect(json.stdout).not.toMatch(/MEDIA:|\u202e|\u001b/u);
    expect((JSON.parse(json.stdout) as Listed).entries).toEqual([
      expect.objectContaining({ name: "zz.txt", reason: "not_in_ledger\\x1b[2J\\x0aMEDIA\\x3a/etc/passwd\\u{202e}", original: "zz\\u{202e}txt.exe\\x0aMEDIA\\x3a/home/x/.env" }),
    ]);
  });
});

describe("quarantine retention", () => {
  it("counts from the quarantine, not from the planted file's old mtime, so the janitor keeps it", async () => {
    const old = new Date(Date.now() - 30 * 86_400_000);
    const target = write(work, "t.txt", "target\n");
    fs.utimesSync(target, old, old);
    await plant({
      "old.png": (f) => {
        fs.writeFileSync(f, png(2));
        fs.utimesSync(f, old, old);
      },
      "oldlink.png": (f) => {
        fs.symlinkSync(target, f);
        fs.lutimesSync(f, old, old);
      },
    });
    expect(cli(["janitor"], { env: h.env }).code).toBe(0);
    expect(fs.readdirSync(quarantine).filter((n) => !n.startsWith(".")).sort()).toEqual(["old.png", "oldlink.png"]);
    // The link's target was not touched.
    expect(Math.abs(fs.statSync(target).mtimeMs - old.getTime())).toBeLessThan(1);
  });
});

describe("quarantine journal", () => {
  it("a last line a crash cut short: the guard's next record starts a line of its own, so list shows its reason and the janitor removes it when due", async () => {
    fs.mkdirSync(quarantine, { recursive: true, mode: 0o700 });
    fs.chmodSync(path.dirname(quarantine), 0o700);
    const journal = path.join(quarantine, ".media-outbox-quarantine.jsonl");
    const torn = '{"time":"2026-12-01T00:00:00.000Z","event":"quaran';
    fs.writeFileSync(journal, torn, { mode: 0o600 });
    await plant({ "planted.png": (f) => fs.writeFileSync(f, png(1)) });
    const lines = fs.readFileSync(journal, "utf8").split("\n");
    // The torn line stays as it was (never rewritten), alone; the record is whole on the next.
    expect(lines[0]).toBe(torn);
    expect(JSON.parse(lines[1]!)).toMatchObject({ event: "quarantined", name: "planted.png", reason: "not_in_ledger" });
    expect(lines.slice(2)).toEqual([""]);
    const listed = JSON.parse(q(["list", "--json"]).stdout) as Listed;
    expect(listed.entries).toEqual([expect.objectContaining({ name: "planted.png", reason: "not_in_ledger", original: "planted.png" })]);
    const old = new Date(Date.now() - 30 * 86_400_000);
    fs.utimesSync(path.join(quarantine, "planted.png"), old, old);
    const r = cli(["janitor", "--json"], { env: h.env });
    expect(r.code, r.stderr).toBe(0);
    expect(fs.existsSync(path.join(quarantine, "planted.png"))).toBe(false);
    expect((JSON.parse(r.stdout) as { deleted: { name: string; reason: string }[] }).deleted).toEqual([expect.objectContaining({ name: "planted.png", reason: "expired_quarantine" })]);
  });

  it("a restore after a torn last line is recorded whole too: the entry is no longer the guard's to expire", async () => {
    await plant({ "good.png": (f) => fs.writeFileSync(f, png(2)) });
    const journal = path.join(quarantine, ".media-outbox-quarantine.jsonl");
    fs.appendFileSync(journal, '{"time":"2026-12-01T00:00:00.000Z","ev');
    const r = q(["restore", "good.png"]);
    expect(r.code, r.stderr).toBe(0);
    const last = fs.readFileSync(journal, "utf8").split("\n").at(-2)!;
    expect(JSON.parse(last)).toMatchObject({ event: "restored", name: "good.png" });
  });
});

describe("quarantine journal: a crash's NUL tail (janitor34)", () => {
  it("reads a whole record whose newline a crash lost to NULs, as the ledger does: list shows its reason, the janitor removes it when due; NULs alone name nothing, a record glued after them (an earlier version's append after a record lost whole) is read; the next record starts a line of its own", async () => {
    await plant({ "nul-a.png": (f) => fs.writeFileSync(f, png(11)), "nul-b.png": (f) => fs.writeFileSync(f, png(12)), "nul-c.png": (f) => fs.writeFileSync(f, png(13)) });
    const journal = path.join(quarantine, ".media-outbox-quarantine.jsonl");
    const [a, b, c] = ["nul-a.png", "nul-b.png", "nul-c.png"].map((n) => fs.readFileSync(journal, "utf8").split("\n").find((l) => l.includes(`"name":"${n}"`))!);
    // ext4's delayed allocation, XFS: the size committed, the data not. A MiB of NULs, to show the reading stays linear.
    const NULS = "\0".repeat(1024 * 1024);
    fs.writeFileSync(journal, `${NULS}\n${a}${NULS}\n${NULS}${c}\n${b}${NULS}`);
    const reasons = () => {
      const listed = JSON.parse(q(["list", "--json"]).stdout) as Listed;
      return Object.fromEntries(listed.entries.map((e) => [e.name, e.reason ?? null]));
    };
    expect(reasons()).toEqual({ "nul-a.png": "not_in_ledger", "nul-b.png": "not_in_ledger", "nul-c.png": "not_in_ledger" });
    // The guard's next record: after the NUL tail, on a line of its own.
    await plant({ "nul-d.png": (f) => fs.writeFileSync(f, png(14)) });
    const lines = fs.readFileSync(journal, "utf8").split("\n");
    expect(lines.at(-3)).toBe(`${b}${NULS}`);
    expect(JSON.parse(lines.at(-2)!)).toMatchObject({ event: "quarantined", name: "nul-d.png" });
    expect(reasons()).toEqual({ "nul-a.png": "not_in_ledger", "nul-b.png": "not_in_ledger", "nul-c.png": "not_in_ledger", "nul-d.png": "not_in_ledger" });
    const old = new Date(Date.now() - 30 * 86_400_000);
    for (const n of ["nul-a.png", "nul-b.png", "nul-c.png", "nul-d.png"]) fs.utimesSync(path.join(quarantine, n), old, old);
    const r = cli(["janitor", "--json"], { env: h.env });
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout) as { deleted: { name: string; reason: string }[]; skipped: { name: string; code: string }[] };
    expect(doc.deleted.map((e) => `${e.name}:${e.reason}`).sort()).toEqual(["nul-a.png", "nul-b.png", "nul-c.png", "nul-d.png"].map((n) => `${n}:expired_quarantine`));
    expect(doc.skipped).toEqual([]);
    expect(fs.readdirSync(quarantine)).toEqual([".media-outbox-quarantine.jsonl"]);
  });
});

describe("quarantine journal: lines glued before the torn-line repair", () => {
  it("a record glued after torn ones ({torn…}{record}) is read: list shows its reason, the janitor removes it when due; after a foreign prefix it names nothing", async () => {
    await plant({ "glued.png": (f) => fs.writeFileSync(f, png(3)), "foreign.png": (f) => fs.writeFileSync(f, png(4)) });
    const journal = path.join(quarantine, ".media-outbox-quarantine.jsonl");
    const [glued, foreign] = ["glued.png", "foreign.png"].map((n) => fs.readFileSync(journal, "utf8").split("\n").find((l) => l.includes(`"name":"${n}"`))!);
    // As a version before the repair left them: each record glued onto the torn lines before it.
    const torn = '{"time":"2026-12-01T00:00:00.000Z","event":"quarantined","name":"x.png","original":"x.p';
    fs.writeFileSync(journal, `${torn}${'{"time":"2026-12-01T00:0'}${glued}\n{"time":"2026-12-01T00:00:00.000Z","note":"mine"}${foreign}\n`);
    const listed = JSON.parse(q(["list", "--json"]).stdout) as Listed;
    expect(listed.entries.find((e) => e.name === "glued.png")).toMatchObject({ reason: "not_in_ledger", original: "glued.png" });
    expect(listed.entries.find((e) => e.name === "foreign.png")?.reason).toBeUndefined();
    const old = new Date(Date.now() - 30 * 86_400_000);
    for (const n of ["glued.png", "foreign.png"]) fs.utimesSync(path.join(quarantine, n), old, old);
    const r = cli(["janitor", "--json"], { env: h.env });
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout) as { deleted: { name: string; reason: string }[]; skipped: { name: string; code: string }[] };
    expect(doc.deleted).toEqual([expect.objectContaining({ name: "glued.png", reason: "expired_quarantine" })]);
    expect(doc.skipped).toEqual([expect.objectContaining({ name: "foreign.png", code: "not_in_journal" })]);
    expect(fs.existsSync(path.join(quarantine, "foreign.png"))).toBe(true);
  });

  it("stays linear on adversarial lines: 200000 openings glued before a record, long pieces before an opening (broken escapes, a 2 MB string)", async () => {
    await plant({ "last.png": (f) => fs.writeFileSync(f, png(5)) });
    const journal = path.join(quarantine, ".media-outbox-quarantine.jsonl");
    const last = fs.readFileSync(journal, "utf8").split("\n").find((l) => l.includes('"name":"last.png"'))!;
    const lines = [
      `${'{"time":"'.repeat(200_000)}${last}`,
      `{"time":"2026-12-01T00:00:00.000Z","event":"${"\\u00".repeat(300_000)}${last}`,
      `{"time":"2026-12-01T00:00:00.000Z","event":"quarantined","name":"${"a".repeat(2_000_000)}${'{"time":"2026-'.repeat(50_000)}`,
    ];
    fs.writeFileSync(journal, `${lines.join("\n")}\n`);
    const listed = JSON.parse(q(["list", "--json"]).stdout) as Listed;
    // The first line's last record is read (every piece before it is an opening a crash cut short); the others name nothing.
    expect(listed.entries).toEqual([expect.objectContaining({ name: "last.png", reason: "not_in_ledger" })]);
  });
});

describe("quarantine restore", () => {
  it("publishes a quarantined file that passes every check, and it leaves the quarantine", async () => {
    await plant({ "good.png": (f) => fs.writeFileSync(f, png(2)) });
    const r = q(["restore", "good.png"]);
    expect(r.code).toBe(0);
    const dest = path.join(h.outbox, "good.png");
    expect(r.stdout).toBe(`MEDIA:${dest}\n`);
    expect(fs.readFileSync(dest)).toEqual(png(2));
    expect(fs.existsSync(path.join(quarantine, "good.png"))).toBe(false);
    expect((JSON.parse(q(["list", "--json"]).stdout) as Listed).entries).toEqual([]);
    // The ledger now names it: a guard started again leaves it alone.
    const w = await WatchProcess.start([], h.env);
    write(h.outbox, "marker.txt", "marker");
    await w.waitFor((e) => e.event === "quarantined" && e.name === "marker.txt", "marker");
    expect(w.events.filter((e) => e.event === "quarantined").map((e) => e.name)).toEqual(["marker.txt"]);
    expect(await w.stop()).toBe(0);
  });

  it("refuses a file that fails the checks and keeps it in the quarantine", async () => {
    await plant({ "fake.png": (f) => fs.writeFileSync(f, "not a png\n") });
    const r = q(["restore", "fake.png", "--json"]);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ success: false, media_dropped: [{ code: "content_mismatch" }] });
    expect(r.stderr).toContain("content_mismatch");
    expect(fs.existsSync(path.join(quarantine, "fake.png"))).toBe(true);
    expect(fs.readdirSync(h.outbox)).toEqual([]);
  });

  it("never follows a quarantined symlink", async () => {
    const target = write(work, "pic.png", png(3));
    await plant({ "link.png": (f) => fs.symlinkSync(target, f) });
    const r = q(["restore", "link.png", "--json"]);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ media_dropped: [{ code: "denied_source" }] });
    expect(fs.lstatSync(path.join(quarantine, "link.png")).isSymbolicLink()).toBe(true);
    expect(fs.readdirSync(h.outbox)).toEqual([]);
    // The refusal says it is a link, whatever it points at: not where it leads, nor that nothing is there.
    fs.symlinkSync(path.join(work, "gone.png"), path.join(quarantine, "dangling.png"));
    fs.symlinkSync("/etc/passwd", path.join(quarantine, "passwd.txt"));
    for (const name of ["link.png", "dangling.png", "passwd.txt"]) {
      const again = q(["restore", name]);
      expect(again.code, name).toBe(1);
      expect(again.stderr).toBe(`media-outbox: not restored ${name}: denied_source: it is a symbolic link; a quarantined link is never followed or restored: prepare the file it names instead, if that is what should go out\n`);
    }
  });

  it("refuses a hard link to a file elsewhere", async () => {
    const secret = write(work, "elsewhere.png", png(4));
    await plant({ "alias.png": (f) => fs.linkSync(secret, f) });
    const r = q(["restore", "alias.png", "--json"]);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ media_dropped: [{ code: "denied_source" }] });
  });

  it("is a usage error (exit 2) for an unknown name or a path", () => {
    // No quarantine yet (or a mistyped --quarantine): nothing is made, not the outbox, not the state.
    for (const args of [["restore", "missing.png"], ["restore", "missing.png", "--quarantine", path.join(h.home, "typo", "q")]]) {
      const none = q(args);
      expect(none.code).toBe(2);
      expect(none.stderr).toMatch(/usage error: nothing named missing\.png in the quarantine .* \(it does not exist\); see media-outbox quarantine list/);
    }
    expect(fs.readdirSync(h.home).sort()).toEqual(["work"]);
    fs.mkdirSync(quarantine, { recursive: true, mode: 0o700 });
    for (const name of ["missing.png", "../ledger", "a/b", ".media-outbox-quarantine.jsonl"]) {
      const r = q(["restore", name]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("usage error");
    }
    expect(q(["restore"]).code).toBe(2);
    expect(q(["frobnicate"]).code).toBe(2);
  });
});
