// The guard fails closed: a forged record proves nothing, a broken ledger
// never stops it, names are bytes, read-only directories still move,
// quarantine names never run out and never replace anything, one watch per
// outbox and per drop folder, and drop-folder work never delays it.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadConfig } from "../src/config/config.js";
import type { WatchEvent } from "../src/watch/events.js";
import { Watch } from "../src/watch/watch.js";
import { pdf } from "./corpus.js";
import { BIN, ROOT, cli, makeHome, png, prepared, write } from "./helpers.js";
import { type Event, WatchProcess, waitUntil } from "./watch-helpers.js";
import { gateLeftBehind, killAll, startGate } from "./gate-helpers.js";

let h: ReturnType<typeof makeHome>;
let state: string;
let ledger: string;
let quarantine: string;
const running: WatchProcess[] = [];

beforeEach(() => {
  h = makeHome();
  state = path.join(h.home, ".hermes", ".media_outbox-state");
  ledger = path.join(state, "ledger");
  quarantine = path.join(state, "quarantine");
  // A real outbox and state, made by prepare as the agent would.
  const r = cli(["prepare", write(h.home, "first.png", png(1))], { env: h.env });
  expect(r.code, r.stderr).toBe(0);
});
afterEach(async () => {
  for (const w of running.splice(0)) await w.stop();
  h.cleanup();
});

async function startWatch(args: string[] = [], env = h.env): Promise<WatchProcess> {
  const w = new WatchProcess(args, env);
  running.push(w);
  await w.waitFor((e) => e.event === "ready", "ready");
  return w;
}

const sha256 = (b: Buffer | string) => createHash("sha256").update(b).digest("hex");
const today = () => path.join(ledger, `${new Date().toISOString().slice(0, 10)}.jsonl`);
/** A record exactly as prepare writes it: what the agent's own user can forge. */
function forgeRecord(name: string, bytes: Buffer | string, file = today()): void {
  const b = Buffer.from(bytes);
  const rec = { time: new Date().toISOString(), source: name, name, bytes: b.length, sha256: sha256(b), mime: "text/plain", reused: false };
  fs.appendFileSync(file, `${JSON.stringify(rec)}\n`);
}
/** Puts a file into `dir` whole (written beside, then renamed in), as a careful planter would. */
function plant(dir: string, name: string, content: Buffer | string): string {
  const tmp = write(h.home, `.planting-${name}`, content);
  const file = path.join(dir, name);
  fs.renameSync(tmp, file);
  return file;
}
const quarantined = (name: string) => (e: Event) => e.event === "quarantined" && e.name === name;

describe("guard: a ledger record proves nothing by itself", () => {
  it("quarantines planted files whose forged records match, when their bytes fail prepare's content checks", async () => {
    const w = await startWatch();
    const secret = "aws_access_key_id = AKIA7Q2LZ9XK4M3RT8VW\n";
    const notPng = "this is text, not a PNG\n";
    forgeRecord("leak.txt", secret);
    forgeRecord("fake.png", notPng);
    plant(h.outbox, "leak.txt", secret);
    plant(h.outbox, "fake.png", notPng);
    const leak = await w.waitFor(quarantined("leak.txt"), "leak.txt quarantined");
    const fake = await w.waitFor(quarantined("fake.png"), "fake.png quarantined");
    expect(leak).toMatchObject({ reason: "content_refused", code: "secret_detected" });
    expect(fake).toMatchObject({ reason: "content_refused", code: "content_mismatch" });
    // Nothing lost: both are in the quarantine, byte for byte; the published file stays.
    expect(fs.readFileSync(path.join(quarantine, "leak.txt"), "utf8")).toBe(secret);
    expect(fs.readFileSync(path.join(quarantine, "fake.png"), "utf8")).toBe(notPng);
    expect(fs.readdirSync(h.outbox)).toEqual(["first.png"]);
    const journal = fs.readFileSync(path.join(quarantine, ".media-outbox-quarantine.jsonl"), "utf8");
    expect(journal).toMatch(/"reason":"content_refused","code":"secret_detected"/);
    // A clean file with a forged, matching record passed every check prepare makes: it stays.
    const clean = "nothing to hide\n";
    forgeRecord("clean.txt", clean);
    plant(h.outbox, "clean.txt", clean);
    write(h.outbox, "marker.txt", "planted after clean.txt\n");
    await w.waitFor(quarantined("marker.txt"), "marker quarantined");
    await waitUntil(() => !w.events.some(quarantined("clean.txt")) && w.stderr.includes("marker.txt"), "the guard judged past clean.txt");
    expect(fs.existsSync(path.join(h.outbox, "clean.txt"))).toBe(true);
  });

  it("judges a file over 1 MiB on its worker thread: a secret at its end is found, a clean one stays", async () => {
    const w = await startWatch();
    const big = `${"lorem ipsum dolor sit amet\n".repeat(90_000)}aws_access_key_id = AKIA7Q2LZ9XK4M3RT8VW\n`;
    const clean = "lorem ipsum dolor sit amet\n".repeat(90_000);
    expect(Buffer.byteLength(big)).toBeGreaterThan(2 * 1024 * 1024);
    forgeRecord("big.txt", big);
    forgeRecord("clean-big.txt", clean);
    plant(h.outbox, "clean-big.txt", clean);
    plant(h.outbox, "big.txt", big);
    expect(await w.waitFor(quarantined("big.txt"), "big.txt quarantined")).toMatchObject({ reason: "content_refused", code: "secret_detected" });
    write(h.outbox, "after.txt", "planted after the big ones\n");
    await w.waitFor(quarantined("after.txt"), "after.txt quarantined");
    expect(w.events.some(quarantined("clean-big.txt"))).toBe(false);
    expect(fs.existsSync(path.join(h.outbox, "clean-big.txt"))).toBe(true);
  });

  it("a record that is not well-formed names nothing", async () => {
    const bytes = "planted\n";
    const good = { time: new Date().toISOString(), source: "x", name: "p.txt", bytes: 8, sha256: sha256(bytes), mime: "text/plain", reused: false };
    const bad = [
      { ...good, sha256: "0" },
      { ...good, bytes: "8" },
      { ...good, name: "../p.txt" },
      { ...good, time: "yesterday" },
      { ...good, reused: "no" },
    ];
    fs.appendFileSync(today(), bad.map((b) => `${JSON.stringify(b)}\n`).join(""));
    const w = await startWatch();
    plant(h.outbox, "p.txt", bytes);
    expect(await w.waitFor(quarantined("p.txt"), "p.txt quarantined")).toMatchObject({ reason: "not_in_ledger" });
  });
});

describe("guard: prepare's name, extension and hard-link rules, whatever the ledger says", () => {
  it("quarantines, each with its forged record, what prepare would refuse: off the allow-list, an unsafe name, a name its sanitiser never gives, a second hard link", async () => {
    const w = await startWatch();
    const html = "<html><body><script>alert(document.cookie)</script></body></html>\n";
    const svg = '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>\n';
    const planted: Record<string, string> = { "page.html": html, "x.svg": svg, "nl\nMEDIA:x.txt": "hello\n", "My File.txt": "hello\n" };
    for (const [name, content] of Object.entries(planted)) {
      forgeRecord(name, content);
      plant(h.outbox, name, content);
    }
    // A Hermes session transcript (a denied source), linked into the outbox under a published-looking name, with a record of its bytes.
    const sessions = path.join(h.home, ".hermes", "sessions");
    fs.mkdirSync(sessions);
    const transcript = write(sessions, "s1.txt", "user: my address is 12 Elm St\n");
    forgeRecord("chat.txt", fs.readFileSync(transcript));
    fs.linkSync(transcript, path.join(h.outbox, "chat.txt"));
    const expected = {
      "page.html": { reason: "extension_not_allowed", code: "extension_not_allowed" },
      "x.svg": { reason: "extension_not_allowed", code: "extension_not_allowed" },
      "nl\\x0aMEDIA\\x3ax.txt": { reason: "name_refused", code: "unsafe_path_chars" },
      "My File.txt": { reason: "name_not_prepared" },
      "chat.txt": { reason: "hard_links", code: "denied_source" },
    };
    for (const [name, want] of Object.entries(expected)) expect(await w.waitFor(quarantined(name), name), name).toMatchObject(want);
    expect(w.find(quarantined("My File.txt"))!.code).toBeUndefined();
    expect(fs.readdirSync(h.outbox)).toEqual(["first.png"]);
    // The transcript is untouched: only the outbox's name of it moved.
    expect(fs.readFileSync(transcript, "utf8")).toBe("user: my address is 12 Elm St\n");
    const journal = fs.readFileSync(path.join(quarantine, ".media-outbox-quarantine.jsonl"), "utf8");
    expect(journal).toMatch(/"reason":"name_not_prepared","message":"prepare names no file so; it would name this one My-File\.txt"/);
    expect(journal).toMatch(/"reason":"hard_links","code":"denied_source","message":"it has 2 hard links/);
  });

  it("keeps what prepare publishes (png, txt, pdf, a hash-suffixed name) while it runs, and across a restart", async () => {
    const w = await startWatch();
    const names = [
      prepared(h, "photo.png", png(2)),
      prepared(h, "notes.txt", "meeting at noon\n"),
      prepared(h, "report.pdf", pdf("quarterly report")),
      // The same name with other bytes: published under the name with the hash suffix.
      prepared(h, "notes.txt", "meeting at one\n"),
      prepared(h, "Ünïcode ßtem.txt", "grüße\n"),
    ].map((p) => path.basename(p));
    expect(names[3]).toMatch(/^notes-[0-9a-f]{8}\.txt$/);
    // Bytes that fail the content check, planted after them: judged after them in the one background queue.
    forgeRecord("last.png", "not a png\n");
    plant(h.outbox, "last.png", "not a png\n");
    await w.waitFor(quarantined("last.png"), "last.png");
    expect(w.find((e) => e.event === "quarantined" && e.name !== "last.png")).toBeUndefined();
    await w.stop();
    // A new watch judges every file at start, as it is now (one name each), before it says ready.
    const again = await startWatch();
    expect(again.find((e) => e.event === "quarantined")).toBeUndefined();
    expect(fs.readdirSync(h.outbox).sort()).toEqual(["first.png", ...names].sort());
  });

  it("keeps a published file whose other name is in the staging directory (a publication's last moment), not one with a third name", async () => {
    const kept = prepared(h, "kept.txt", "kept\n");
    const linked = prepared(h, "linked.txt", "linked\n");
    const staging = path.join(state, "staging");
    fs.linkSync(kept, path.join(staging, "1-0123456789abcdef.part"));
    fs.linkSync(linked, path.join(staging, "2-0123456789abcdef.part"));
    fs.linkSync(linked, path.join(h.home, "elsewhere.txt"));
    const w = await startWatch();
    expect(w.find(quarantined("kept.txt"))).toBeUndefined();
    expect(fs.existsSync(kept)).toBe(true);
    expect(w.find(quarantined("linked.txt"))).toMatchObject({ reason: "hard_links", code: "denied_source" });
  });
});

describe("guard: nothing in the ledger stops it", () => {
  it("skips day files that are links, directories, FIFOs or hold garbage and torn lines, logs each escaped, and judges everything else", async () => {
    const planted = "planted\n";
    // A valid-looking day file elsewhere, reached through a link: never followed.
    const elsewhere = write(h.home, "elsewhere.jsonl", "");
    forgeRecord("via-link.txt", planted, elsewhere);
    fs.symlinkSync(elsewhere, path.join(ledger, "2026-01-01.jsonl"));
    fs.mkdirSync(path.join(ledger, "2026-01-02.jsonl"));
    execFileSync("mkfifo", [path.join(ledger, "2026-01-03.jsonl")]);
    // Garbage, a control character, an over-long line and a torn last line around one good record.
    const day = path.join(ledger, "2026-01-04.jsonl");
    fs.writeFileSync(day, `not json\n{"name":"\u001b[31mred"}\n${"x".repeat(70_000)}\n`);
    forgeRecord("kept.txt", "kept\n", day);
    fs.appendFileSync(day, '{"time":"2026-01-04T00:00:00Z","name":"torn.txt","by');
    write(h.outbox, "kept.txt", "kept\n");
    const w = await startWatch();
    write(h.outbox, "via-link.txt", planted);
    write(h.outbox, "torn.txt", "torn\n");
    expect(await w.waitFor(quarantined("via-link.txt"), "via-link quarantined")).toMatchObject({ reason: "not_in_ledger" });
    expect(await w.waitFor(quarantined("torn.txt"), "torn quarantined")).toMatchObject({ reason: "not_in_ledger" });
    // The good record in the damaged file still counts; the published file is untouched.
    expect(fs.existsSync(path.join(h.outbox, "kept.txt"))).toBe(true);
    expect(fs.existsSync(path.join(h.outbox, "first.png"))).toBe(true);
    const skipped = w.stderr.split("\n").filter((l) => l.includes('"ledger_skipped"'));
    for (const f of ["2026-01-01", "2026-01-02", "2026-01-03", "2026-01-04"]) expect(skipped.some((l) => l.includes(f)), f).toBe(true);
    expect(w.stderr).not.toContain("\u001b");
  });
});

describe("guard: a file whose record a crash cut short (janitor34)", () => {
  /**
   * Publishes `name` through the real CLI, then plays the crash: its mtime
   * (the record's time) set to `iso`, its record taken out of the ledger and
   * returned, with that time, for the test to write back cut.
   */
  function publishedThenCut(name: string, content: string, iso: string): string {
    const p = cli(["prepare", write(h.work, name, content)], { env: h.env });
    expect(p.code, p.stderr).toBe(0);
    fs.utimesSync(path.join(h.outbox, name), new Date(iso), new Date(iso));
    const lines = fs.readFileSync(today(), "utf8").split("\n");
    const ours = lines.find((l) => l.includes(`"name":${JSON.stringify(name)}`));
    expect(ours).toBeDefined();
    fs.writeFileSync(today(), lines.filter((l) => l !== ours).join("\n"));
    return ours!.replace(/^\{"time":"[^"]*"/, `{"time":"${iso}"`);
  }
  const dayFile = (iso: string, content: string) => fs.writeFileSync(path.join(ledger, `${iso.slice(0, 10)}.jsonl`), content);
  /** `line` cut after `keep` characters of the value of `key` (its quote included). */
  const cutInside = (line: string, key: string, keep: number) => line.slice(0, line.indexOf(`"${key}":`) + key.length + 3 + keep);

  it("keeps it while that record fits it and no other file (the janitor's rule, its bytes' sha256 as far as the record holds it, prepare's content checks); quarantines the rest", async () => {
    // Cut to `{` on a complete line (a later append started a line of its own), then a whole record.
    publishedThenCut("kept-brace.txt", "brace\n", "2026-01-05T10:00:00.123Z");
    const named = publishedThenCut("named.txt", "named\n", "2026-01-05T11:00:00.000Z");
    dayFile("2026-01-05", `{\n${named}\n`);
    fs.utimesSync(path.join(h.outbox, "named.txt"), new Date("2026-01-05T11:00:00.000Z"), new Date("2026-01-05T11:00:00.000Z"));
    // Cut inside its time's key: the day file's unfinished last line.
    publishedThenCut("kept-ti.txt", "ti\n", "2026-01-06T10:00:00.000Z");
    dayFile("2026-01-06", '{"ti');
    // Cut inside its sha256, which fits its bytes as far as it goes; and one whose does not.
    const sha = publishedThenCut("kept-sha.txt", "sha\n", "2026-01-07T10:00:00.000Z");
    dayFile("2026-01-07", `${cutInside(sha, "sha256", 21)}\0\0\0`);
    const badSha = publishedThenCut("bad-sha.txt", "bad sha\n", "2026-01-08T10:00:00.000Z");
    dayFile("2026-01-08", cutInside(badSha, "sha256", 2).replace(/"sha256":"[0-9a-f]$/, `"sha256":"${badSha.includes('"sha256":"0') ? "1" : "0"}`));
    // One record, two files of its day that it could be: neither is known to be prepare's.
    publishedThenCut("twin-a.txt", "twin a\n", "2026-01-09T10:00:00.000Z");
    publishedThenCut("twin-b.txt", "twin b\n", "2026-01-09T12:00:00.000Z");
    dayFile("2026-01-09", '{"time":"2026-01-09T1');
    // Another size than the record holds.
    const misfit = publishedThenCut("misfit.txt", "misfit\n", "2026-01-10T10:00:00.000Z");
    dayFile("2026-01-10", cutInside(misfit.replace(/"bytes":\d+/, '"bytes":99'), "sha256", 0));
    // A record cut to `{` fits a planted secret alone of its day: its bytes still fail prepare's checks.
    const secret = plant(h.outbox, "secret.txt", "aws_access_key_id = AKIA7Q2LZ9XK4M3RT8VW\n");
    fs.utimesSync(secret, new Date("2026-01-11T10:00:00.000Z"), new Date("2026-01-11T10:00:00.000Z"));
    dayFile("2026-01-11", "{\n");

    const w = await startWatch();
    const reasons = Object.fromEntries(
      await Promise.all(
        ["bad-sha.txt", "twin-a.txt", "twin-b.txt", "misfit.txt", "secret.txt"].map(async (n) => [n, (await w.waitFor(quarantined(n), `${n} quarantined`)).reason]),
      ),
    );
    expect(reasons).toEqual({ "bad-sha.txt": "sha256_mismatch", "twin-a.txt": "not_in_ledger", "twin-b.txt": "not_in_ledger", "misfit.txt": "not_in_ledger", "secret.txt": "content_refused" });
    const logged = () =>
      w.stderr.split("\n").filter((l) => l.includes('"guard_torn_record"')).map((l) => JSON.parse(l) as Record<string, unknown>);
    await waitUntil(() => logged().length === 3, "three files kept on a torn record's word");
    expect(logged().map((l) => `${l.name} ${l.ledger}:${l.at}`).sort()).toEqual(["kept-brace.txt 2026-01-05.jsonl:0", "kept-sha.txt 2026-01-07.jsonl:0", "kept-ti.txt 2026-01-06.jsonl:0"]);
    expect(fs.readdirSync(h.outbox).sort()).toEqual(["first.png", "kept-brace.txt", "kept-sha.txt", "kept-ti.txt", "named.txt"]);
    // The janitor judges them alike: the same three age by their own mtime.
    const jan = cli(["janitor", "--json", "--dry-run"], { env: h.env });
    expect(jan.code, jan.stderr).toBe(0);
    const doc = JSON.parse(jan.stdout) as { deleted: { area: string; name: string; reason: string }[] };
    expect(doc.deleted.filter((e) => e.area === "outbox" && e.reason === "expired_torn_record").map((e) => e.name).sort()).toEqual(["kept-brace.txt", "kept-sha.txt", "kept-ti.txt"]);

    // Only while it fits: once the cut record is gone from its day file, its file is quarantined at the next scan.
    dayFile("2026-01-05", `${named}\n`);
    expect(await w.waitFor(quarantined("kept-brace.txt"), "kept-brace.txt quarantined")).toMatchObject({ reason: "not_in_ledger" });
    // A second file of kept-ti.txt's day, which the tail's record fits too: neither is known to be prepare's any more.
    const late = write(h.work, "late.txt", "late\n");
    fs.utimesSync(late, new Date("2026-01-06T12:00:00.000Z"), new Date("2026-01-06T12:00:00.000Z"));
    fs.renameSync(late, path.join(h.outbox, "late.txt"));
    expect(await w.waitFor(quarantined("late.txt"), "late.txt quarantined")).toMatchObject({ reason: "not_in_ledger" });
    expect(await w.waitFor(quarantined("kept-ti.txt"), "kept-ti.txt quarantined")).toMatchObject({ reason: "not_in_ledger" });
    expect(fs.readdirSync(h.outbox).sort()).toEqual(["first.png", "kept-sha.txt", "named.txt"]);
    for (const n of ["bad-sha.txt", "twin-a.txt", "twin-b.txt", "misfit.txt", "secret.txt", "kept-brace.txt", "late.txt", "kept-ti.txt"]) expect(fs.existsSync(path.join(quarantine, n)), n).toBe(true);
   }, 120_000);
});

describe("guard: names are bytes", () => {
  it("quarantines a name that is not UTF-8 under a valid one, keeps the original (escaped) in the journal and logs it escaped", async () => {
    const w = await startWatch();
    const raw = Buffer.concat([Buffer.from(h.outbox + "/bad"), Buffer.from([0xff, 0xfe]), Buffer.from(".png")]);
    fs.writeFileSync(raw, png(7));
    const e = await w.waitFor((ev) => ev.event === "quarantined" && ev.reason === "name_not_utf8", "raw name quarantined");
    expect(e).toMatchObject({ name: "bad\\xff\\xfe.png", quarantine_name: "bad__.png" });
    expect(fs.readdirSync(h.outbox)).toEqual(["first.png"]);
    expect(fs.readFileSync(path.join(quarantine, "bad__.png"))).toEqual(png(7));
    expect(fs.readFileSync(path.join(quarantine, ".media-outbox-quarantine.jsonl"), "utf8")).toContain('"original":"bad\\\\xff\\\\xfe.png"');
    expect(Buffer.from(w.stderr, "latin1").includes(Buffer.from([0xff, 0xfe]))).toBe(false);
  });

  it("status counts such names; the janitor never deletes one (prepare never publishes one), old or young, and reports both", () => {
    const name = (s: string) => Buffer.concat([Buffer.from(`${h.outbox}/${s}`), Buffer.from([0xc3, 0x28]), Buffer.from(".png")]);
    fs.writeFileSync(name("old"), "x");
    const t = new Date(Date.now() - 30 * 86_400_000);
    fs.utimesSync(name("old"), t, t);
    fs.writeFileSync(name("young"), "y");
    const s = JSON.parse(cli(["status", "--json"], { env: h.env }).stdout) as { files: { not_utf8_names: number; files: number; unpublished: number } };
    expect(s.files).toMatchObject({ not_utf8_names: 2, files: 3, unpublished: 2 });
    const r = cli(["janitor", "--json"], { env: h.env });
    expect(r.code, r.stderr).toBe(0);
    const rep = JSON.parse(r.stdout) as { deleted: { name: string }[]; skipped: { name: string; code: string }[] };
    expect(rep.deleted).toEqual([]);
    expect(rep.skipped).toContainEqual(expect.objectContaining({ name: "old\\xc3(.png", code: "not_utf8_name" }));
    expect(rep.skipped).toContainEqual(expect.objectContaining({ name: "young\\xc3(.png", code: "not_utf8_name" }));
    expect(fs.existsSync(name("old"))).toBe(true);
    expect(fs.existsSync(name("young"))).toBe(true);
  });

  it("a drop-folder file whose name is not UTF-8 gets a .refused receipt beside it, named by the same bytes", async () => {
    const drop = path.join(h.home, "drop");
    const w = await startWatch(["--drop", drop, "--settle", "100ms"]);
    const raw = Buffer.concat([Buffer.from(`${drop}/photo`), Buffer.from([0xff]), Buffer.from(".png")]);
    fs.writeFileSync(raw, png(3));
    const e = await w.waitFor((ev) => ev.event === "refused", "refused receipt");
    expect(e).toMatchObject({ name: "photo\\xff.png", code: "unsafe_path_chars", receipt: "photo\\xff.png.refused" });
    const receipt = Buffer.concat([raw, Buffer.from(".refused")]);
    expect(fs.readFileSync(receipt, "utf8")).toMatch(/^unsafe_path_chars: the name is not valid UTF-8/);
    // A refusal of the file itself: the original is removed, nothing was published.
    expect(fs.existsSync(raw)).toBe(false);
    expect(fs.readdirSync(h.outbox)).toEqual(["first.png"]);
  });
});

describe("guard: read-only directories move, as a user without privileges", () => {
  it("moves a planted read-only directory (holding read-only entries) into the quarantine", async () => {
    if (process.getuid?.() !== 0) throw new Error("this test needs root, to run the watch as an unprivileged user (uid 65534)");
    // A home owned by nobody: its outbox and state are nobody's, as for any agent user.
    const home = fs.mkdtempSync(path.join(os.tmpdir(), "mo-nobody-"));
    try {
      fs.chmodSync(home, 0o755);
      const env = { PATH: process.env.PATH, HOME: home, HERMES_HOME: path.join(home, ".hermes") };
      const outbox = path.join(home, ".hermes", "media_outbox");
      fs.mkdirSync(path.join(home, ".hermes"), { mode: 0o700 });
      execFileSync("chown", ["-R", "65534:65534", home]);
      const asNobody = (args: string[]) => spawnSync(process.execPath, [BIN, ...args], { env, uid: 65534, gid: 65534, encoding: "utf8" });
      const src = path.join(home, "src.png");
      fs.writeFileSync(src, png(2));
      fs.chownSync(src, 65534, 65534);
      expect(asNobody(["prepare", src]).status).toBe(0);
      // Planted as nobody would, before the watch starts (its first scan judges it): a
      // read-only directory holding a read-only file and an unreadable subdirectory.
      const sh = (script: string) => execFileSync("su", ["-s", "/bin/sh", "nobody", "-c", script], { env: { PATH: process.env.PATH } });
      const dir = path.join(outbox, "planted");
      sh(`mkdir -p ${dir}/inner && echo secret > ${dir}/file.txt && chmod 0444 ${dir}/file.txt && chmod 0000 ${dir}/inner && chmod 0555 ${dir}`);
      // And an unreadable ledger day file, which must not stop the guard either.
      sh(`echo '{}' > ${home}/.hermes/.media_outbox-state/ledger/2026-01-05.jsonl && chmod 0000 ${home}/.hermes/.media_outbox-state/ledger/2026-01-05.jsonl`);
      // The same as a plain mv would meet it: moving it needs write permission on it.
      expect(spawnSync("su", ["-s", "/bin/sh", "nobody", "-c", `mv ${dir} ${home}/moved`]).status).not.toBe(0);
      const w = new WatchProcess([], env, { uid: 65534, gid: 65534 });
      running.push(w);
      const e = await w.waitFor(quarantined("planted"), "planted directory quarantined");
      expect(e).toMatchObject({ reason: "directory" });
      const q = path.join(home, ".hermes", ".media_outbox-state", "quarantine", "planted");
      expect(fs.readFileSync(path.join(q, "file.txt"), "utf8")).toBe("secret\n");
      expect(fs.statSync(path.join(q, "file.txt")).mode & 0o777).toBe(0o444);
      expect(fs.existsSync(path.join(outbox, "planted"))).toBe(false);
      expect(w.stderr).not.toMatch(/guard_error/);
      expect(w.stderr).toMatch(/"ledger_skipped".*2026-01-05\.jsonl.*cannot be read \(EACCES\)/);
      // The published file's record is in today's day file: it stays.
      expect(fs.readdirSync(outbox)).toEqual(["src.png"]);
    } finally {
      for (const w of running.splice(0)) await w.stop();
      fs.rmSync(home, { recursive: true, force: true });
    }
  });
});

describe("quarantine names", () => {
  it("never run out: after stem~2 … stem~1000 are taken, a unique name, and nothing already there is touched", async () => {
    fs.mkdirSync(quarantine, { recursive: true, mode: 0o700 });
    write(quarantine, "x.png", "original 1");
    for (let n = 2; n <= 1000; n++) write(quarantine, `x~${n}.png`, `original ${n}`);
    const w = await startWatch();
    write(h.outbox, "x.png", png(9));
    const e = await w.waitFor(quarantined("x.png"), "x.png quarantined");
    expect(String(e.quarantine_name)).toMatch(/^x~[0-9a-z]+-[0-9a-f]{12}\.png$/);
    expect(fs.readFileSync(path.join(quarantine, String(e.quarantine_name)))).toEqual(png(9));
    expect(fs.readFileSync(path.join(quarantine, "x.png"), "utf8")).toBe("original 1");
    for (let n = 2; n <= 1000; n++) expect(fs.readFileSync(path.join(quarantine, `x~${n}.png`), "utf8")).toBe(`original ${n}`);
  });

  it("two processes moving the same entries at once never replace or lose one", async () => {
    const outbox = h.outbox;
    fs.mkdirSync(quarantine, { recursive: true, mode: 0o700 });
    const names: string[] = [];
    for (let i = 0; i < 150; i++) {
      const n = `f${i % 10}.txt`;
      // Entries whose names clash with each other's quarantine names, of every kind.
      const name = `${i}-${n}`;
      if (i % 15 === 0) {
        fs.mkdirSync(path.join(outbox, name));
        write(path.join(outbox, name), "inside", `dir ${i}`);
      } else if (i % 15 === 1) fs.symlinkSync(`/target/${i}`, path.join(outbox, name));
      else write(outbox, name, `file ${i}`);
      names.push(name);
    }
    for (let i = 0; i < 30; i++) write(quarantine, `${i}-f${i % 10}.txt`, `already ${i}`);
    const go = path.join(h.home, "go");
    const script = `
      const fs = require("fs");
      const { moveToQuarantine } = require(${JSON.stringify(path.join(ROOT, "dist/lib/index.js"))});
      const names = ${JSON.stringify(names)};
      while (!fs.existsSync(${JSON.stringify(go)})) {}
      const moved = [];
      for (const n of names) { const m = moveToQuarantine(${JSON.stringify(outbox)}, ${JSON.stringify(quarantine)}, n, "not_in_ledger"); if (m) moved.push([n, m.name]); }
      console.log(JSON.stringify(moved));
    `;
    const procs = [0, 1].map(() => spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] }));
    const outputs = procs.map(
      (p) =>
        new Promise<[string, string][]>((resolve) => {
          let out = "";
          p.stdout!.on("data", (d: Buffer) => (out += d.toString()));
          p.on("exit", () => resolve(JSON.parse(out || "[]") as [string, string][]));
        }),
    );
    fs.writeFileSync(go, "");
    const moved = (await Promise.all(outputs)).flat();
    // Each entry was moved exactly once, and nothing is left in the outbox.
    expect(moved.map(([n]) => n).sort()).toEqual([...names].sort());
    expect(fs.readdirSync(outbox).filter((n) => n !== "first.png")).toEqual([]);
    // No quarantine name was given twice, and each holds what was moved there.
    expect(new Set(moved.map(([, q]) => q)).size).toBe(moved.length);
    for (const [n, q] of moved) {
      const i = Number(n.split("-")[0]);
      const p = path.join(quarantine, q);
      if (i % 15 === 0) expect(fs.readFileSync(path.join(p, "inside"), "utf8")).toBe(`dir ${i}`);
      else if (i % 15 === 1) expect(fs.readlinkSync(p)).toBe(`/target/${i}`);
      else expect(fs.readFileSync(p, "utf8")).toBe(`file ${i}`);
    }
    for (let i = 0; i < 30; i++) expect(fs.readFileSync(path.join(quarantine, `${i}-f${i % 10}.txt`), "utf8")).toBe(`already ${i}`);
    // No entry is there under a second name.
    const entries = fs.readdirSync(quarantine).filter((n) => !n.startsWith("."));
    expect(entries.length).toBe(30 + names.length);
  });
});

describe("prepare --allow beyond the guard's allow-list while a watch runs (red team 32c/06)", () => {
  const svg = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>\n';
  const staged = () => fs.readdirSync(path.join(state, "staging"));

  it("refuses, extension_not_allowed and what to do, what the guard would quarantine; publishes the rest; leaves nothing behind", async () => {
    const w = await startWatch();
    const chart = write(h.home, "chart.svg", svg);
    const data = write(h.home, "data.tsv", "a\tb\n1\t2\n");
    const r = cli(["prepare", "--allow", "svg,tsv,png", chart, data, write(h.home, "x.png", png(2))], { env: h.env });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^MEDIA:.*x\.png\n$/);
    for (const ext of ["svg", "tsv"]) {
      expect(r.stderr).toContain(`extension_not_allowed: .${ext} is on this run's allow-list, but the watch guarding this outbox (process ${w.child.pid})`);
      expect(r.stderr).toContain(`add ${ext} to "allow" in the configuration (a running watch reads it again when it changes) or to the watch's --allow (then restart the watch)`);
    }
    // Nothing of the refused files reached the outbox, the staging or the quarantine.
    expect(fs.readdirSync(h.outbox).sort()).toEqual(["first.png", "x.png"]);
    expect(staged()).toEqual([]);
    expect(fs.readdirSync(quarantine).filter((n) => !n.startsWith("."))).toEqual([]);
    await w.stop();
    running.splice(0);
    // With no watch running, --allow publishes as it always did.
    const alone = cli(["prepare", "--allow", "svg", chart], { env: h.env });
    expect(alone.stderr).toBe("");
    expect(alone.stdout).toMatch(/^MEDIA:.*chart\.svg\n$/);
  });

  it("judges by the running watch's own allow-list, as its lock tells it: a watch started with --allow svg keeps the svg", async () => {
    const w = await startWatch(["--allow", "png,svg"]);
    const r = cli(["prepare", "--allow", "svg", write(h.home, "chart.svg", svg)], { env: h.env });
    expect(r.stderr).toBe("");
    expect(r.stdout).toMatch(/^MEDIA:.*chart\.svg\n$/);
    // Published after the svg, off the watch's list: once the guard has judged it, it has judged the svg.
    write(h.outbox, "marker.txt", "after the svg\n");
    await w.waitFor(quarantined("marker.txt"), "marker quarantined");
    await waitUntil(() => w.stderr.includes("marker.txt"), "the guard judged past chart.svg");
    expect(w.find(quarantined("chart.svg"))).toBeUndefined();
    expect(fs.existsSync(path.join(h.outbox, "chart.svg"))).toBe(true);
  });
});

describe("one watch per outbox and per drop folder", () => {
  it("a second watch refuses to start (exit 2) and names the process that holds the lock; a killed holder's lock is taken over", async () => {
    const drop = path.join(h.home, "drop");
    const first = await startWatch(["--drop", drop]);
    const pid = first.child.pid!;
    const same = cli(["watch", "--json"], { env: h.env });
    expect(same.code).toBe(2);
    expect(same.stderr).toMatch(new RegExp(`already_running: process ${pid} .*already runs media-outbox watch for the outbox`));
    expect(JSON.parse(same.stdout)).toMatchObject({ success: false, error: { code: "already_running" } });
    // Another outbox, the same drop folder.
    const otherOutbox = path.join(h.home, "other", "outbox");
    const viaDrop = cli(["watch", "--outbox", otherOutbox, "--drop", drop], { env: h.env });
    expect(viaDrop.code).toBe(2);
    expect(viaDrop.stderr).toMatch(new RegExp(`process ${pid} .*for the drop folder`));
    // It left nothing behind: no lock of its own on the other outbox's state.
    expect(fs.readdirSync(path.join(h.home, "other", ".outbox-state")).filter((n) => n.startsWith(".media-outbox"))).toEqual([]);
    // SIGKILL: no clean-up at all; the lock dies with the process.
    first.child.kill("SIGKILL");
    await first.exited;
    running.splice(running.indexOf(first), 1);
    const second = await startWatch(["--drop", drop]);
    write(h.outbox, "planted.txt", "x\n");
    await second.waitFor(quarantined("planted.txt"), "the new watch guards");
    expect(await second.stop()).toBe(0);
    // A clean stop gives the lock back: nothing of it is left.
    expect(fs.readdirSync(drop)).toEqual([]);
    expect(fs.readdirSync(state).filter((n) => n.startsWith(".media-outbox"))).toEqual([]);
  });
});

describe("a lock squatted in a drop folder", () => {
  it("another user's socket or directory at the lock's name never keeps the watch from starting; it is moved aside, never deleted", async () => {
    if (process.getuid?.() !== 0) throw new Error("this test needs root, to plant entries owned by another user (uid 65534) as an agent of the gate would");
    const drop = path.join(h.home, "drop");
    fs.mkdirSync(drop, { mode: 0o700 });
    // An agent that can write into the drop folder listens at the lock's
    // names (the lock directory, and the socket name of earlier versions).
    const listening = (file: string) => {
      const server = net.createServer((c) => c.end('{"pid":1,"started":"squatted"}\n'));
      return new Promise<net.Server>((resolve) => server.listen(file, () => resolve(server)));
    };
    const squat = path.join(drop, ".media-outbox-watch");
    fs.mkdirSync(squat, { mode: 0o700 });
    const servers = [await listening(path.join(squat, "holder")), await listening(path.join(drop, ".media-outbox-watch.lock"))];
    execFileSync("chown", ["-R", "65534:65534", squat, path.join(drop, ".media-outbox-watch.lock")]);
    try {
      const w = await startWatch(["--drop", drop, "--settle", "100ms"]);
      write(drop, "chart.png", png(4));
      await w.waitFor((e) => e.event === "published" && e.name === "chart.png", "the drop folder works");
      const junk = fs.readdirSync(drop).filter((n) => n.startsWith(".media-outbox-junk-"));
      expect(junk.length).toBe(1);
      expect(fs.lstatSync(path.join(drop, junk[0]!, "holder")).isSocket()).toBe(true);
      expect(fs.lstatSync(path.join(drop, ".media-outbox-watch.lock")).isSocket()).toBe(true);
      expect(fs.lstatSync(path.join(drop, ".media-outbox-watch")).uid).toBe(0);
    } finally {
      for (const s of servers) s.close();
    }
  });
});

describe("drop-folder work never delays the guard", () => {
  it("quarantines a planted file while a drop is held mid-judgement on its worker thread", async () => {
    const drop = path.join(h.home, "drop");
    const events: WatchEvent[] = [];
    const config = loadConfig({ env: h.env, watch: { drop: [drop], settle: "50ms" } });
    const watch = new Watch({ config, onEvent: (e) => events.push(e), rescanMs: 500, dropWorker: path.join(ROOT, "test/fixtures/blocking-drop-worker.cjs") });
    await watch.start();
    try {
      write(drop, "big.txt", "a drop the worker holds\n");
      // The worker has begun, and now blocks its thread until released.
      await waitUntil(() => fs.existsSync(path.join(h.home, "hold-began")), "the drop worker began");
      write(h.outbox, "planted.txt", "planted while a drop is judged\n");
      await waitUntil(() => events.find((e) => e.event === "quarantined" && e.name === "planted.txt"), "planted.txt quarantined");
      // The drop is still held: no receipt yet.
      expect(events.some((e) => e.event === "refused" || e.event === "published")).toBe(false);
      expect(fs.existsSync(path.join(drop, "big.txt.refused"))).toBe(false);
      fs.writeFileSync(path.join(h.home, "release"), "");
      await waitUntil(() => events.find((e) => e.event === "refused" && e.name === "big.txt"), "the held drop answered");
    } finally {
      fs.writeFileSync(path.join(h.home, "release"), "");
      await watch.stop();
    }
  });
});

describe("the size cap, and policy flags that narrow or widen the configuration's (guard33)", () => {
  const configFile = () => path.join(h.home, ".hermes", "media-outbox.json");
  const setConfig = (c: object) => fs.writeFileSync(configFile(), JSON.stringify(c));
  const staged = () => fs.readdirSync(path.join(state, "staging"));
  const inQuarantine = () => (fs.existsSync(quarantine) ? fs.readdirSync(quarantine).filter((n) => !n.startsWith(".")) : []);
  const text = (n: number) => "lorem ipsum dolor sit amet\n".repeat(Math.ceil(n / 27)).slice(0, n);
  /** Plants a file no record names and waits until it is quarantined: the guard has judged everything planted or published before it. */
  async function judgedPast(w: WatchProcess, what: string): Promise<void> {
    const marker = `marker-${process.hrtime.bigint()}.txt`;
    write(h.outbox, marker, `after ${what}\n`);
    await w.waitFor(quarantined(marker), `${marker} quarantined`);
    await waitUntil(() => w.stderr.includes(marker), `the guard judged past ${what}`);
  }

  it("quarantines an entry over prepare's size cap whatever its forged record says (too_large); keeps one within it", async () => {
    setConfig({ maxSize: "2KiB" });
    const w = await startWatch();
    const big = text(3072);
    const small = text(1500);
    forgeRecord("big.txt", big);
    forgeRecord("small.txt", small);
    plant(h.outbox, "small.txt", small);
    plant(h.outbox, "big.txt", big);
    expect(await w.waitFor(quarantined("big.txt"), "big.txt quarantined")).toMatchObject({ reason: "too_large", code: "too_large" });
    await judgedPast(w, "small.txt");
    expect(w.find(quarantined("small.txt"))).toBeUndefined();
    // Moved whole, and nothing else: the published file and the one within the cap stay.
    expect(fs.readFileSync(path.join(quarantine, "big.txt"), "utf8")).toBe(big);
    expect(fs.readdirSync(h.outbox).sort()).toEqual(["first.png", "small.txt"]);
    const journal = fs.readFileSync(path.join(quarantine, ".media-outbox-quarantine.jsonl"), "utf8");
    expect(journal).toMatch(/"original":"big\.txt","reason":"too_large","code":"too_large","message":"the file is 3\.0 KiB, over the 2\.0 KiB cap"/);
  });

  it("prepare --max-size beyond the watch's cap is refused (too_large, what to do), leaving nothing behind; within it, or with no watch, it publishes", async () => {
    setConfig({ maxSize: "2KiB" });
    const w = await startWatch();
    const big = write(h.home, "big.txt", text(3072));
    const r = cli(["prepare", "--max-size", "10KB", big, write(h.home, "ok.txt", text(1500))], { env: h.env });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^MEDIA:.*ok\.txt\n$/);
    expect(r.stderr).toContain(`too_large: the file is 3.0 KiB, within this run's cap, but the watch guarding this outbox (process ${w.child.pid}) quarantines every .txt entry over 2.0 KiB`);
    expect(r.stderr).toContain(`raise "maxSize" in the configuration (a running watch reads it again when it changes) or the watch's --max-size (then restart the watch)`);
    expect(fs.readdirSync(h.outbox).sort()).toEqual(["first.png", "ok.txt"]);
    expect(staged()).toEqual([]);
    await judgedPast(w, "ok.txt");
    expect(inQuarantine().filter((n) => !n.startsWith("marker-"))).toEqual([]);
    await w.stop();
    running.splice(0);
    const alone = cli(["prepare", "--max-size", "10KB", big], { env: h.env });
    expect(alone.stderr).toBe("");
    expect(alone.stdout).toMatch(/^MEDIA:.*big\.txt\n$/);
  });

  it("a watch started with a narrower --allow and --max-size narrows its drops only: what a plain prepare publishes stays", async () => {
    const drop = path.join(h.home, "drop");
    const w = await startWatch(["--allow", "png", "--max-size", "1KB", "--drop", drop]);
    // Published by the configuration's policy (txt allowed, 50 MB), off the watch's --allow and over its --max-size: the guard keeps it.
    const notes = prepared(h, "notes.txt", text(1500));
    await judgedPast(w, "notes.txt");
    expect(w.find((e) => e.event === "quarantined" && !String(e.name).startsWith("marker-"))).toBeUndefined();
    expect(fs.existsSync(notes)).toBe(true);
    // A drop is still judged by the watch's own flags.
    write(drop, "d.txt", "dropped\n");
    expect(await w.waitFor((e) => e.event === "refused" && e.name === "d.txt", "d.txt refused")).toMatchObject({ code: "extension_not_allowed" });
    // And prepare --allow beyond both is still refused, as the lock tells it.
    const svg = cli(["prepare", "--allow", "svg", write(h.home, "c.svg", '<svg xmlns="http://www.w3.org/2000/svg"/>\n')], { env: h.env });
    expect(svg.code).toBe(1);
    expect(svg.stderr).toContain("extension_not_allowed: .svg is on this run's allow-list, but the watch guarding this outbox");
    expect(staged()).toEqual([]);
  });
});

describe("a gate and a watch on the same outbox (guard33)", () => {
  afterEach(async () => {
    await killAll();
  });
  const svg = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>\n';

  it("the gate refuses what the watch's guard would quarantine (its allow-list, its cap), leaving nothing behind; publishes the rest; once the watch stops, publishes all", async () => {
    fs.writeFileSync(path.join(h.home, ".hermes", "media-outbox.json"), JSON.stringify({ maxSize: "2KiB" }));
    const dir = path.join(h.home, "g");
    fs.mkdirSync(dir);
    const gate = await startGate(dir, h.env, ["--allow", "png,txt,svg", "--max-size", "1MB"]);
    const w = await startWatch(["--outbox", gate.outbox]);
    const viaGate = { ...h.env, MEDIA_OUTBOX_SOCKET: gate.socket };
    const chart = write(h.home, "chart.svg", svg);
    const big = write(h.home, "big.txt", "lorem ipsum dolor sit amet\n".repeat(120));
    const r = cli(["prepare", chart, big, write(h.home, "ok.png", png(4))], { env: viaGate });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^MEDIA:.*ok\.png\n$/);
    expect(r.stderr).toContain(`extension_not_allowed: .svg is on this run's allow-list, but the watch guarding this outbox (process ${w.child.pid})`);
    expect(r.stderr).toContain(`too_large: the file is 3.2 KiB, within this run's cap, but the watch guarding this outbox (process ${w.child.pid}) quarantines every .txt entry over 2.0 KiB`);
    expect(gateLeftBehind(gate).outbox).toEqual(["ok.png"]);
    expect(gateLeftBehind(gate).staging).toEqual([]);
    // The png the gate published is kept by the guard.
    const marker = "marker.txt";
    write(gate.outbox, marker, "after ok.png\n");
    await w.waitFor(quarantined(marker), "marker quarantined");
    await waitUntil(() => w.stderr.includes(marker), "the guard judged past ok.png");
    expect(w.find(quarantined("ok.png"))).toBeUndefined();
    const gateQuarantine = path.join(gate.state, "quarantine");
    expect(fs.readdirSync(gateQuarantine).filter((n) => !n.startsWith("."))).toEqual([marker]);
    await w.stop();
    running.splice(0);
    // No watch: the gate judges by its own policy again.
    const after = cli(["prepare", chart, big], { env: viaGate });
    expect(after.stderr).toBe("");
    expect(after.stdout.split("\n").filter(Boolean).map((l) => path.basename(l)).sort()).toEqual(["big.txt", "chart.svg"]);
  });
});

describe("a running watch follows its configuration file (watch34)", () => {
  const configFile = () => path.join(h.home, ".hermes", "media-outbox.json");
  const setConfig = (c: object | string) => fs.writeFileSync(configFile(), typeof c === "string" ? c : JSON.stringify(c));
  const svg = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>\n';
  const inQuarantine = () => fs.readdirSync(quarantine).filter((n) => !n.startsWith("."));
  const staged = () => fs.readdirSync(path.join(state, "staging"));
  /** Plants a file no record names and waits until it is quarantined: the guard has judged everything planted or published before it. */
  async function judgedPast(w: WatchProcess, what: string): Promise<void> {
    const marker = `marker-${process.hrtime.bigint()}.txt`;
    write(h.outbox, marker, `after ${what}\n`);
    await w.waitFor(quarantined(marker), `${marker} quarantined`);
    await waitUntil(() => w.stderr.includes(marker), `the guard judged past ${what}`);
  }
  const logged = (w: WatchProcess, event: string) => w.stderr.split("\n").filter((l) => l.includes(`"event":"${event}"`));

  it("widened under the watch: what prepare then publishes by it stays; a broken file keeps the last good policy, escaped in the log, and the watch runs on", async () => {
    setConfig({ allow: ["png", "txt"] });
    const w = await startWatch();
    // Widened, then published at once: the guard may judge the svg before the file's change reached it, and reads the file again first.
    setConfig({ allow: ["png", "txt", "svg"] });
    const chart = cli(["prepare", write(h.home, "chart.svg", svg)], { env: h.env });
    expect(chart.stderr).toBe("");
    expect(chart.stdout).toMatch(/^MEDIA:.*chart\.svg\n$/);
    await judgedPast(w, "chart.svg");
    expect(w.find(quarantined("chart.svg"))).toBeUndefined();
    expect(fs.existsSync(path.join(h.outbox, "chart.svg"))).toBe(true);
    await waitUntil(() => logged(w, "policy_changed").length > 0, "the policy change logged");
    // Its lock tells the new policy: svg is the watch's now, tsv is not.
    const tsv = cli(["prepare", "--allow", "png,svg,tsv", write(h.home, "data.tsv", "a\tb\n"), write(h.home, "c2.svg", svg)], { env: h.env });
    expect(tsv.code).toBe(1);
    expect(tsv.stdout).toMatch(/^MEDIA:.*c2\.svg\n$/);
    expect(tsv.stderr).toContain(`extension_not_allowed: .tsv is on this run's allow-list, but the watch guarding this outbox (process ${w.child.pid})`);
    expect(fs.readdirSync(h.outbox).filter((n) => n.endsWith(".tsv"))).toEqual([]);
    expect(staged()).toEqual([]);

    // Broken under the watch (a control character in it, which the parser's message quotes): the last good policy stays.
    setConfig('{"allow": ["png", "tsv", \x1b[2J');
    await waitUntil(() => logged(w, "config_refused").length > 0, "the broken file refused");
    const refusedLine = logged(w, "config_refused")[0]!;
    expect(refusedLine).not.toMatch(/[\x00-\x1f]/);
    expect(refusedLine).toContain("not valid JSON");
    expect(refusedLine).toContain("\\\\x1b");
    // A prepare of another configuration publishes an svg and a tsv: the guard keeps the svg and moves the tsv, as before the broken file.
    const other = path.join(h.home, "other.json");
    fs.writeFileSync(other, JSON.stringify({ allow: ["png", "svg", "tsv"] }));
    const r = cli(["prepare", "--config", other, write(h.home, "c3.svg", svg), write(h.home, "more.tsv", "c\td\n")], { env: h.env });
    expect(r.code, r.stderr).toBe(0);
    expect((await w.waitFor(quarantined("more.tsv"), "more.tsv quarantined")).reason).toBe("extension_not_allowed");
    await judgedPast(w, "c3.svg");
    expect(w.find(quarantined("c3.svg"))).toBeUndefined();
    expect(w.exitCode).toBeUndefined();
    expect(await w.stop()).toBe(0);
    running.splice(0);
  });

  it("narrowed under the watch: entries kept by the old policy are judged again, and its lock tells prepare the new one", async () => {
    setConfig({ allow: ["png", "txt", "svg"] });
    const w = await startWatch();
    const chart = prepared(h, "chart.svg", svg);
    await judgedPast(w, "chart.svg");
    expect(fs.existsSync(chart)).toBe(true);
    setConfig({ allow: ["png", "txt"] });
    expect((await w.waitFor(quarantined("chart.svg"), "chart.svg quarantined")).reason).toBe("extension_not_allowed");
    const r = cli(["prepare", "--allow", "png,svg", write(h.home, "c2.svg", svg)], { env: h.env });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`extension_not_allowed: .svg is on this run's allow-list, but the watch guarding this outbox (process ${w.child.pid})`);
    expect(staged()).toEqual([]);
    expect(inQuarantine().filter((n) => !n.startsWith("marker-"))).toEqual(["chart.svg"]);
  });

  it("its drop folders take the changed policy too: an svg dropped after the file allowed it is published", async () => {
    setConfig({ allow: ["png", "txt"] });
    const drop = path.join(h.home, "drop");
    const w = await startWatch(["--drop", drop, "--settle", "50ms"]);
    write(drop, "early.svg", svg);
    expect(await w.waitFor((e) => e.event === "refused" && e.name === "early.svg", "early.svg refused")).toMatchObject({ code: "extension_not_allowed" });
    expect(fs.readdirSync(h.outbox).filter((n) => n.endsWith(".svg"))).toEqual([]);
    setConfig({ allow: ["png", "txt", "svg"] });
    await waitUntil(() => logged(w, "policy_changed").length > 0, "the policy change taken");
    write(drop, "late.svg", svg);
    await w.waitFor((e) => e.event === "published" && e.name === "late.svg", "late.svg published");
    await judgedPast(w, "late.svg");
    expect(w.find(quarantined("late.svg"))).toBeUndefined();
  });
});

describe("a killed watch's lock (watch34)", () => {
  afterEach(async () => {
    await killAll();
  });
  const svg = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>\n';
  const lockName = (stateDir: string) => path.join(stateDir, ".media-outbox-watch", "holder");
  async function kill(w: WatchProcess): Promise<void> {
    w.child.kill("SIGKILL");
    await w.exited;
    running.splice(running.indexOf(w), 1);
  }

  it("prepare treats a SIGKILLed watch's lock as no watch; the next watch's answer is the one asked", async () => {
    const w = await startWatch();
    const chart = write(h.home, "chart.svg", svg);
    const refused = cli(["prepare", "--allow", "png,svg", chart], { env: h.env });
    expect(refused.stderr).toContain(`extension_not_allowed: .svg is on this run's allow-list, but the watch guarding this outbox (process ${w.child.pid})`);
    expect(fs.readdirSync(h.outbox).filter((n) => n.endsWith(".svg"))).toEqual([]);
    await kill(w);
    // Its lock is left as it was: a socket nobody listens on.
    expect(fs.lstatSync(lockName(state)).isSocket()).toBe(true);
    const alone = cli(["prepare", "--allow", "png,svg", chart], { env: h.env });
    expect(alone.stderr).toBe("");
    expect(alone.stdout).toMatch(/^MEDIA:.*chart\.svg\n$/);
    // Another watch takes the lock over: its own answer counts, not the dead one's.
    const next = await startWatch(["--allow", "png,svg"]);
    const r = cli(["prepare", "--allow", "png,svg,tsv", write(h.home, "d.tsv", "a\tb\n"), write(h.home, "c2.svg", svg)], { env: h.env });
    expect(r.stdout).toMatch(/^MEDIA:.*c2\.svg\n$/);
    expect(r.stderr).toContain(`extension_not_allowed: .tsv is on this run's allow-list, but the watch guarding this outbox (process ${next.child.pid})`);
  });

  it("the gate asks the watch again once its policy changed, and once it was SIGKILLed judges by its own policy", async () => {
    fs.writeFileSync(path.join(h.home, ".hermes", "media-outbox.json"), JSON.stringify({ allow: ["png", "txt"] }));
    const dir = path.join(h.home, "g");
    fs.mkdirSync(dir);
    const gate = await startGate(dir, h.env, ["--allow", "png,txt,svg,tsv"]);
    const w = await startWatch(["--outbox", gate.outbox]);
    const viaGate = { ...h.env, MEDIA_OUTBOX_SOCKET: gate.socket };
    const before = cli(["prepare", write(h.home, "chart.svg", svg)], { env: viaGate });
    expect(before.stderr).toContain(`extension_not_allowed: .svg is on this run's allow-list, but the watch guarding this outbox (process ${w.child.pid})`);
    expect(gateLeftBehind(gate).outbox.filter((n) => n.endsWith(".svg"))).toEqual([]);
    // Widened under the watch: once it took the change, the gate's next request asks its lock again.
    fs.writeFileSync(path.join(h.home, ".hermes", "media-outbox.json"), JSON.stringify({ allow: ["png", "txt", "svg"] }));
    await waitUntil(() => w.stderr.includes('"event":"policy_changed"'), "the watch took the change");
    const after = cli(["prepare", write(h.home, "chart.svg", svg)], { env: viaGate });
    expect(after.stderr).toBe("");
    expect(after.stdout).toMatch(/^MEDIA:.*chart\.svg\n$/);
    const tsv = write(h.home, "data.tsv", "a\tb\n");
    expect(cli(["prepare", tsv], { env: viaGate }).stderr).toContain(`extension_not_allowed: .tsv is on this run's allow-list, but the watch guarding this outbox (process ${w.child.pid})`);
    expect(gateLeftBehind(gate).outbox.filter((n) => n.endsWith(".tsv"))).toEqual([]);
    await kill(w);
    expect(fs.lstatSync(lockName(gate.state)).isSocket()).toBe(true);
    // The dead watch's answer goes: the gate judges by its own policy (tried until then, each refusal leaving nothing behind).
    const published = await waitUntil(() => {
      const r = cli(["prepare", tsv], { env: viaGate });
      if (r.code === 0) return r;
      expect(r.stderr).toContain("extension_not_allowed");
      expect(gateLeftBehind(gate).outbox.includes("data.tsv")).toBe(false);
      return undefined;
    }, "the gate publishes the tsv");
    expect(published.stdout).toMatch(/^MEDIA:.*data\.tsv\n$/);
    expect(gateLeftBehind(gate).staging).toEqual([]);
  });
});
