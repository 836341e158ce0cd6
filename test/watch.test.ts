import { execFileSync, spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BIN, cli, makeHome, png, write } from "./helpers.js";
import { type Event, WatchProcess, waitUntil } from "./watch-helpers.js";

let h: ReturnType<typeof makeHome>;
let work: string;
let drop: string;
let quarantine: string;
const running: WatchProcess[] = [];

beforeEach(() => {
  h = makeHome();
  work = h.work;
  drop = path.join(h.home, "drop");
  quarantine = path.join(h.home, ".hermes", ".media_outbox-state", "quarantine");
});
afterEach(async () => {
  for (const w of running.splice(0)) await w.stop();
  h.cleanup();
});

async function startWatch(args: string[] = []): Promise<WatchProcess> {
  const w = new WatchProcess(args, h.env);
  running.push(w);
  await w.waitFor((e) => e.event === "ready", "ready");
  return w;
}

const prepareFile = (file: string) => {
  const r = cli(["prepare", file], { env: h.env, cwd: work });
  expect(r.code).toBe(0);
  return r.stdout.trim().slice("MEDIA:".length);
};
/** A drop folder's entries but the watch's lock (a dot-name drops never take), which lives there while the watch runs. */
const dropEntries = (dir: string) => fs.readdirSync(dir).filter((n) => n !== ".media-outbox-watch");
const isQuarantined = (name: string) => (e: Event) => e.event === "quarantined" && e.name === name;
const outcomeFor = (name: string) => (e: Event) => (e.event === "published" || e.event === "refused" || e.event === "skipped") && e.name === name;

/** Writes a file the way a careful agent does: under a temporary name, then renamed. */
function dropFile(dir: string, name: string, content: Buffer | string): string {
  const tmp = path.join(dir, `.drop-${process.pid}.part`);
  fs.writeFileSync(tmp, content);
  fs.renameSync(tmp, path.join(dir, name));
  return path.join(dir, name);
}

describe("watch: start-up", () => {
  it("prints ready first, creates the outbox, and exits 0 on SIGTERM", async () => {
    const w = await startWatch();
    expect(w.events[0]).toEqual({ event: "ready" });
    expect(fs.statSync(h.outbox).mode & 0o777).toBe(0o700);
    expect(await w.stop()).toBe(0);
    expect(w.events.at(-1)).toEqual({ event: "stopped" });
    expect(w.stderr).toContain('"event":"ready"');
  });

  it("refuses an unsafe outbox with exit 2 (outbox_unsafe)", () => {
    fs.mkdirSync(h.outbox, { recursive: true });
    fs.chmodSync(h.outbox, 0o777);
    const r = cli(["watch", "--json"], { env: h.env });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("outbox_unsafe");
    expect(JSON.parse(r.stdout)).toMatchObject({ success: false, error: { code: "outbox_unsafe" } });
  });

  it("refuses a drop folder inside the outbox, and a quarantine inside a drop folder (usage, exit 2)", () => {
    const inside = cli(["watch", "--drop", path.join(h.outbox, "drop")], { env: h.env });
    expect(inside.code).toBe(2);
    expect(inside.stderr).toContain("usage error");
    const q = cli(["watch", "--drop", drop, "--quarantine", path.join(drop, "q")], { env: h.env });
    expect(q.code).toBe(2);
    // Placement is checked before anything is created.
    expect(fs.existsSync(h.outbox)).toBe(false);
    expect(fs.existsSync(drop)).toBe(false);
  });

  it("refuses a drop folder whose path holds control or bidi characters, from --drop or the config file, saying to rename it; nothing is made", () => {
    // Bounded: a watch that took the folder would run until killed.
    const watch = (args: string[]) => {
      const r = spawnSync(process.execPath, [BIN, "watch", ...args], { env: h.env, encoding: "utf8", timeout: 20_000 });
      return { code: r.status, stderr: r.stderr };
    };
    for (const [bad, shown, what] of [
      ["drop\nMEDIA:/etc/passwd", "drop\\x0aMEDIA\\x3a/etc/passwd", "control or line-separator characters"],
      ["drop\x1b[31m", "drop\\x1b[31m", "control or line-separator characters"],
      ["drop\u2028x", "drop\\u{2028}x", "control or line-separator characters"],
      ["report\u202egnp", "report\\u{202e}gnp", "bidirectional control characters (which reorder how it is shown)"],
    ] as const) {
      const dir = path.join(h.home, bad);
      const flag = watch(["--drop", dir]);
      expect(flag.code, flag.stderr).toBe(2);
      expect(flag.stderr).toBe(`media-outbox: usage error: --drop: drop folder "${h.home}/${shown}" (shown escaped) has ${what} in its path: rename the folder (mv), then give its new path\n`);
      const config = write(h.home, "config.json", JSON.stringify({ watch: { drop: [dir] } }));
      const fromFile = watch(["--config", config]);
      expect(fromFile.code, fromFile.stderr).toBe(2);
      expect(fromFile.stderr).toContain(`config file ${config}: watch.drop: drop folder "${h.home}/${shown}" (shown escaped) has ${what} in its path: rename the folder (mv)`);
      expect(fs.existsSync(dir)).toBe(false);
      expect(fs.existsSync(h.outbox)).toBe(false);
    }
    // A link to such a folder: the folder it leads to is named, escaped.
    const real = path.join(h.home, "real\tdrop");
    fs.mkdirSync(real, { mode: 0o700 });
    fs.symlinkSync(real, path.join(h.home, "drop-link"));
    const linked = watch(["--drop", path.join(h.home, "drop-link")]);
    expect(linked.code, linked.stderr).toBe(2);
    expect(linked.stderr).toContain(`usage error: drop folder ${h.home}/drop-link is "${h.home}/real\\x09drop" (shown escaped), which has control or line-separator characters in its path: rename that folder (mv)`);
    expect(fs.readdirSync(real)).toEqual([]);
    // Bytes that are not UTF-8 (Node's argv reads them as U+FFFD, another folder): given raw by the shell.
    const raw = spawnSync("sh", ["-c", `exec "$0" "$1" watch --drop "$(printf '${h.home}/drop\\377')"`, process.execPath, BIN], { env: h.env, encoding: "utf8", timeout: 20_000 });
    expect(raw.status, raw.stderr).toBe(2);
    expect(raw.stderr).toBe(`media-outbox: usage error: --drop: drop folder "${h.home}/drop\\u{dcff}" (shown escaped) has bytes that are not UTF-8 (read as UTF-8 it names another folder) in its path: rename the folder (mv), then give its new path\n`);
    expect(fs.existsSync(path.join(h.home, "drop\ufffd"))).toBe(false);
  });

  it("refuses a quarantine inside the outbox, and one that others can read (usage, exit 2)", () => {
    const inside = cli(["watch", "--quarantine", path.join(h.outbox, "q")], { env: h.env });
    expect(inside.code).toBe(2);
    expect(inside.stderr).toContain("usage error");
    expect(fs.existsSync(path.join(h.outbox, "q"))).toBe(false);
    const open = path.join(h.home, "q-open");
    fs.mkdirSync(open, { mode: 0o755 });
    fs.chmodSync(open, 0o755);
    const readable = cli(["watch", "--quarantine", open], { env: h.env });
    expect(readable.code).toBe(2);
    expect(readable.stderr).toContain("chmod 700");
  });

  it("refuses a drop folder its user may not write, and a link to a missing folder (usage, exit 2, never an internal error)", () => {
    const link = path.join(h.home, "drop-link");
    fs.symlinkSync(path.join(h.home, "gone"), link);
    const dangling = cli(["watch", "--drop", link], { env: h.env });
    expect(dangling.code, dangling.stderr).toBe(2);
    expect(dangling.stderr).toMatch(/usage error: drop folder .*\/drop-link is a symbolic link to .*\/gone, which does not exist; make that directory/);
    if (process.getuid?.() !== 0) return void console.warn("needs root to run the watch as nobody: the permission case is skipped");
    // A folder nobody may enter but not write (root's, 0755), and a home of nobody's own.
    const place = fs.mkdtempSync(path.join(os.tmpdir(), "mo-nobody-"));
    try {
      fs.chmodSync(place, 0o755);
      const folder = path.join(place, "drop");
      fs.mkdirSync(folder, { mode: 0o755 });
      const home = path.join(place, "home");
      fs.mkdirSync(home, { mode: 0o700 });
      fs.chownSync(home, 65534, 65534);
      const env = { ...h.env, HOME: home, HERMES_HOME: path.join(home, ".hermes"), MEDIA_OUTBOX_SYSTEM_CONFIG: path.join(home, "none.json"), HERMES_MANAGED_DIR: path.join(home, "managed") };
      const r = spawnSync("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", process.execPath, BIN, "watch", "--drop", folder], { env, encoding: "utf8", timeout: 20_000 });
      expect(r.status, r.stderr).toBe(2);
      expect(r.stderr).toMatch(/usage error: drop folder .*\/drop is not one the watch's user \(uid 65534\) may list, write and enter \(EACCES\)/);
      expect(r.stderr).not.toMatch(/internal error/);
      expect(fs.readdirSync(folder)).toEqual([]);
    } finally {
      fs.rmSync(place, { recursive: true, force: true });
    }
  });

  it("refuses a quarantine or state directory on another filesystem before making it (state_unsafe, exit 2, nothing left behind)", () => {
    // /dev/shm is a tmpfs: another filesystem than the test's home.
    if (!fs.existsSync("/dev/shm") || fs.statSync("/dev/shm").dev === fs.statSync(h.home).dev) return void console.warn("no /dev/shm on another filesystem: skipped");
    const other = fs.mkdtempSync("/dev/shm/mo-test-");
    try {
      const q = cli(["watch", "--quarantine", path.join(other, "q", "sub")], { env: h.env });
      expect(q.code, q.stderr).toBe(2);
      expect(q.stderr).toMatch(/state_unsafe: quarantine .*\/q\/sub is on another filesystem than the outbox; choose a directory on the outbox's filesystem/);
      const state = cli(["prepare", write(work, "a.png", png(1))], { env: { ...h.env, MEDIA_OUTBOX_STATE_DIR: path.join(other, "state") } });
      expect(state.code, state.stderr).toBe(2);
      expect(state.stderr).toMatch(/state_unsafe: state directory .*\/state is on another filesystem than the outbox/);
      expect(fs.readdirSync(other)).toEqual([]);
    } finally {
      fs.rmSync(other, { recursive: true, force: true });
    }
  });

  it("judges what was there before start: published files stay, planted ones go", async () => {
    const published = prepareFile(write(work, "kept.png", png(1)));
    fs.mkdirSync(h.outbox, { recursive: true });
    write(h.outbox, "early.png", png(2));
    const w = await startWatch();
    await w.waitFor(isQuarantined("early.png"), "early.png quarantined");
    // The first scan is done before ready: what it caught comes first (README, JSON lines).
    expect(w.events.findIndex(isQuarantined("early.png"))).toBeLessThan(w.events.findIndex((e) => e.event === "ready"));
    expect(fs.existsSync(published)).toBe(true);
    expect(w.find(isQuarantined("kept.png"))).toBeUndefined();
  });
});

describe("watch: guard", () => {
  it("quarantines a planted file by rename, keeping its name and bytes", async () => {
    const w = await startWatch();
    const planted = write(h.outbox, "planted.png", png(3));
    const e = await w.waitFor(isQuarantined("planted.png"), "quarantine of planted.png");
    expect(e).toMatchObject({ reason: "not_in_ledger", quarantine_name: "planted.png" });
    expect(fs.existsSync(planted)).toBe(false);
    expect(fs.readFileSync(path.join(quarantine, "planted.png"))).toEqual(png(3));
    expect(fs.statSync(quarantine).mode & 0o777).toBe(0o700);
  });

  it("moves a planted symlink as a link; its target is untouched", async () => {
    const target = write(work, "secret.txt", "do not send\n");
    const w = await startWatch();
    fs.symlinkSync(target, path.join(h.outbox, "link.txt"));
    await w.waitFor(isQuarantined("link.txt"), "quarantine of link.txt");
    expect(w.find(isQuarantined("link.txt"))).toMatchObject({ reason: "symlink" });
    const moved = path.join(quarantine, "link.txt");
    expect(fs.lstatSync(moved).isSymbolicLink()).toBe(true);
    expect(fs.readlinkSync(moved)).toBe(target);
    expect(fs.readFileSync(target, "utf8")).toBe("do not send\n");
  });

  it("quarantines a dangling symlink that carries a published name", async () => {
    const w = await startWatch();
    fs.symlinkSync(path.join(h.home, "nowhere.png"), path.join(h.outbox, "ghost.png"));
    await w.waitFor(isQuarantined("ghost.png"), "quarantine of a dangling link");
  });

  it("quarantines a published file modified later: size_mismatch and sha256_mismatch", async () => {
    const grown = prepareFile(write(work, "grown.png", png(4)));
    const swapped = prepareFile(write(work, "swapped.png", png(5)));
    const untouched = prepareFile(write(work, "untouched.png", png(6)));
    const w = await startWatch();
    fs.appendFileSync(grown, "extra bytes");
    // One byte changed in place: writeFileSync would truncate first, and a guard that looks then sees a size mismatch.
    const at = fs.statSync(swapped).size - 20;
    const byte = fs.readFileSync(swapped)[at]!;
    const fd = fs.openSync(swapped, "r+");
    fs.writeSync(fd, Buffer.of(byte ^ 0xff), 0, 1, at);
    fs.closeSync(fd);
    expect((await w.waitFor(isQuarantined("grown.png"), "grown.png")).reason).toBe("size_mismatch");
    expect((await w.waitFor(isQuarantined("swapped.png"), "swapped.png")).reason).toBe("sha256_mismatch");
    expect(fs.existsSync(untouched)).toBe(true);
    expect(w.find(isQuarantined("untouched.png"))).toBeUndefined();
  });

  it("sees a hard link made outside the outbox, which raises no event there (prepare refuses a file with two names)", async () => {
    const published = prepareFile(write(work, "linked.png", png(7)));
    const w = await startWatch();
    fs.linkSync(published, path.join(work, "alias.png"));
    expect(await w.waitFor(isQuarantined("linked.png"), "linked.png")).toMatchObject({ reason: "hard_links", code: "denied_source" });
  });

  it("quarantines a subdirectory and a FIFO", async () => {
    const w = await startWatch();
    fs.mkdirSync(path.join(work, "sub"));
    write(path.join(work, "sub"), "inner.png", png(8));
    fs.renameSync(path.join(work, "sub"), path.join(h.outbox, "sub"));
    execFileSync("mkfifo", [path.join(h.outbox, "pipe.png")]);
    expect((await w.waitFor(isQuarantined("sub"), "sub")).reason).toBe("directory");
    expect((await w.waitFor(isQuarantined("pipe.png"), "pipe.png")).reason).toBe("fifo");
    expect(fs.readFileSync(path.join(quarantine, "sub", "inner.png"))).toEqual(png(8));
  });

  it("survives an outbox that vanishes: logged, re-created, guarded again", async () => {
    const w = await startWatch();
    fs.rmSync(h.outbox, { recursive: true });
    await waitUntil(() => w.stderr.includes('"event":"outbox_back"'), "outbox_back log line");
    expect(w.stderr).toContain('"event":"outbox_lost"');
    expect(fs.statSync(h.outbox).mode & 0o777).toBe(0o700);
    write(h.outbox, "after.png", png(9));
    await w.waitFor(isQuarantined("after.png"), "after.png");
  });

  it("guards an outbox that was swapped for a new directory between two scans", async () => {
    const w = await startWatch();
    fs.renameSync(h.outbox, path.join(h.home, "old-outbox"));
    fs.mkdirSync(h.outbox, { mode: 0o700 });
    await waitUntil(() => w.stderr.includes('"event":"outbox_back"'), "outbox_back log line");
    write(h.outbox, "swapped.png", png(19));
    await w.waitFor(isQuarantined("swapped.png"), "swapped.png");
  });

  it("keeps both entries on a name clash in the quarantine", async () => {
    const w = await startWatch();
    write(h.outbox, "twice.png", "first");
    await w.waitFor(isQuarantined("twice.png"), "first twice.png");
    write(h.outbox, "twice.png", "second");
    await w.waitForCount((e) => e.event === "quarantined" && e.name === "twice.png", 2, "second twice.png");
    expect(fs.readFileSync(path.join(quarantine, "twice.png"), "utf8")).toBe("first");
    expect(fs.readFileSync(path.join(quarantine, "twice~2.png"), "utf8")).toBe("second");
  });

  it("never quarantines what a concurrent prepare publishes", async () => {
    const w = await startWatch();
    const files = Array.from({ length: 40 }, (_, i) => write(work, `c${i}.png`, png(100 + i)));
    const runPrepare = (file: string) =>
      new Promise<number | null>((resolve) => spawn(process.execPath, [BIN, "prepare", file], { env: h.env, stdio: "ignore" }).on("exit", resolve));
    for (let i = 0; i < files.length; i += 8) {
      const codes = await Promise.all(files.slice(i, i + 8).map(runPrepare));
      expect(codes.every((c) => c === 0)).toBe(true);
    }
    // A marker planted afterwards: once it is quarantined, the guard has seen everything before it.
    write(h.outbox, "marker.png", "marker");
    await w.waitFor(isQuarantined("marker.png"), "marker");
    expect(w.events.filter((e) => e.event === "quarantined").map((e) => e.name)).toEqual(["marker.png"]);
    expect(fs.readdirSync(h.outbox).length).toBe(40);
  });
});

describe("watch: drop folders", () => {
  it("publishes a dropped file, writes NAME.media and removes the original", async () => {
    const w = await startWatch(["--drop", drop]);
    dropFile(drop, "chart.png", png(10));
    const e = await w.waitFor(outcomeFor("chart.png"), "chart.png");
    const dest = path.join(h.outbox, "chart.png");
    expect(e).toMatchObject({ event: "published", receipt: "chart.png.media", directive: `MEDIA:${dest}`, drop: fs.realpathSync(drop) });
    expect(fs.readFileSync(path.join(drop, "chart.png.media"), "utf8")).toBe(`MEDIA:${dest}\n`);
    expect(fs.readFileSync(dest)).toEqual(png(10));
    expect(fs.statSync(dest).mode & 0o777).toBe(0o600);
    expect(fs.existsSync(path.join(drop, "chart.png"))).toBe(false);
    expect(dropEntries(drop)).toEqual(["chart.png.media"]);
    expect(w.find(isQuarantined("chart.png"))).toBeUndefined();
  });

  it("publishes a dropped file 0640 into a group-readable outbox (the gate's layout: its group, the gateways, must read it)", async () => {
    fs.mkdirSync(h.outbox, { recursive: true, mode: 0o750 });
    fs.chmodSync(h.outbox, 0o750);
    const w = await startWatch(["--drop", drop]);
    dropFile(drop, "shared.png", png(15));
    expect(await w.waitFor(outcomeFor("shared.png"), "shared.png")).toMatchObject({ event: "published" });
    const dest = path.join(h.outbox, "shared.png");
    expect(fs.readFileSync(dest)).toEqual(png(15));
    expect(fs.statSync(dest).mode & 0o777).toBe(0o640);
    // The guard keeps what the watch published in a group-readable outbox.
    expect(w.find(isQuarantined("shared.png"))).toBeUndefined();
    expect(fs.statSync(h.outbox).mode & 0o777).toBe(0o750);
  });

  it("--keep keeps the original beside its receipt", async () => {
    const w = await startWatch(["--drop", drop, "--keep"]);
    dropFile(drop, "kept.png", png(11));
    await w.waitFor(outcomeFor("kept.png"), "kept.png");
    expect(dropEntries(drop).sort()).toEqual(["kept.png", "kept.png.media"]);
  });

  it("refuses with NAME.refused holding `<code>: <message>`", async () => {
    const w = await startWatch(["--drop", drop]);
    dropFile(drop, "fake.png", "this is not a png\n");
    dropFile(drop, "tool.exe", "MZ");
    const fake = await w.waitFor(outcomeFor("fake.png"), "fake.png");
    const exe = await w.waitFor(outcomeFor("tool.exe"), "tool.exe");
    expect(fake).toMatchObject({ event: "refused", code: "content_mismatch", receipt: "fake.png.refused" });
    expect(exe).toMatchObject({ event: "refused", code: "extension_not_allowed" });
    expect(fs.readFileSync(path.join(drop, "fake.png.refused"), "utf8")).toMatch(/^content_mismatch: [^\n]+\n$/);
    expect(fs.existsSync(path.join(drop, "fake.png"))).toBe(false);
    expect(fs.readdirSync(h.outbox)).toEqual([]);
  });

  it("escapes a name with control characters everywhere it is reported", async () => {
    const w = await startWatch(["--drop", drop]);
    const name = "bad\u001bname.png";
    dropFile(drop, name, png(12));
    const e = await w.waitFor((x) => x.event === "refused" && x.name === "bad\\x1bname.png", "escaped name");
    expect(e.code).toBe("unsafe_path_chars");
    expect(w.lines.join("\n")).not.toContain("\u001b");
    expect(w.stderr).not.toContain("\u001b");
    expect(fs.existsSync(path.join(drop, `${name}.refused`))).toBe(true);
  });

  it("refuses a symlink planted in the drop folder, removes the link, leaves its target", async () => {
    const target = write(work, "secret.png", png(13));
    const w = await startWatch(["--drop", drop]);
    fs.symlinkSync(target, path.join(drop, "evil.png"));
    const e = await w.waitFor(outcomeFor("evil.png"), "evil.png");
    expect(e).toMatchObject({ event: "refused", code: "denied_source" });
    expect(fs.readFileSync(path.join(drop, "evil.png.refused"), "utf8")).toMatch(/^denied_source: /);
    expect(fs.lstatSync(path.join(drop, "evil.png"), { throwIfNoEntry: false })).toBeUndefined();
    expect(fs.readFileSync(target)).toEqual(png(13));
    expect(fs.readdirSync(h.outbox)).toEqual([]);
  });

  it("leaves NAME in place when NAME.media already exists as a symlink (the link untouched)", async () => {
    fs.mkdirSync(drop);
    const victim = write(work, "victim.txt", "keep me\n");
    fs.symlinkSync(victim, path.join(drop, "photo.png.media"));
    const w = await startWatch(["--drop", drop]);
    dropFile(drop, "photo.png", png(14));
    const e = await w.waitFor(outcomeFor("photo.png"), "photo.png");
    expect(e).toMatchObject({ event: "skipped", code: "receipt_exists" });
    expect(fs.readFileSync(path.join(drop, "photo.png"))).toEqual(png(14));
    expect(fs.readlinkSync(path.join(drop, "photo.png.media"))).toBe(victim);
    expect(fs.readFileSync(victim, "utf8")).toBe("keep me\n");
    expect(fs.readdirSync(h.outbox)).toEqual([]);
    // Once the blocking name is gone, the file is processed after all.
    fs.unlinkSync(path.join(drop, "photo.png.media"));
    await w.waitFor((e) => e.event === "published" && e.name === "photo.png", "photo.png published");
    expect(fs.lstatSync(path.join(drop, "photo.png.media")).isFile()).toBe(true);
    expect(fs.readFileSync(victim, "utf8")).toBe("keep me\n");
  });

  it("leaves a name too long for a receipt in place", async () => {
    const w = await startWatch(["--drop", drop]);
    const name = `${"x".repeat(249)}.png`;
    dropFile(drop, name, png(15));
    expect(await w.waitFor(outcomeFor(name), "long name")).toMatchObject({ event: "skipped", code: "name_too_long" });
    expect(fs.existsSync(path.join(drop, name))).toBe(true);
  });

  it("ignores dot-names and temporaries, and waits while a file is still being written", async () => {
    const w = await startWatch(["--drop", drop, "--settle", "2s"]);
    for (const name of [".hidden.png", "a.png.part", "b.tmp", "c.crdownload"]) write(drop, name, png(16));
    const file = path.join(drop, "growing.txt");
    const fd = fs.openSync(file, "w");
    const chunks: string[] = [];
    // Keeps writing for several settle periods; no receipt may appear meanwhile.
    for (let i = 0; i < 12; i++) {
      const chunk = `line ${i} of a file still being written\n`;
      fs.writeSync(fd, chunk);
      chunks.push(chunk);
      await new Promise((r) => setTimeout(r, 250));
      expect(fs.existsSync(`${file}.media`) || fs.existsSync(`${file}.refused`)).toBe(false);
    }
    fs.closeSync(fd);
    const e = await w.waitFor(outcomeFor("growing.txt"), "growing.txt");
    expect(e.event).toBe("published");
    expect(fs.readFileSync(path.join(h.outbox, "growing.txt"), "utf8")).toBe(chunks.join(""));
    expect(dropEntries(drop).sort()).toEqual([".hidden.png", "a.png.part", "b.tmp", "c.crdownload", "growing.txt.media"]);
  });

  it("a file deleted before it settles is skipped with a log line, and the folder goes on", async () => {
    const w = await startWatch(["--drop", drop, "--settle", "1500ms"]);
    const gone = dropFile(drop, "gone.png", png(40));
    await new Promise((r) => setTimeout(r, 300));
    fs.rmSync(gone);
    dropFile(drop, "after.png", png(41));
    await w.waitFor(outcomeFor("after.png"), "after.png");
    const outcome = await w.waitFor(outcomeFor("gone.png"), "gone.png", 10_000).catch(() => undefined);
    // Either nothing was begun (no event) or it is reported as vanished; never a receipt for a file that is not there.
    if (outcome) expect(outcome).toMatchObject({ event: "skipped", code: "vanished" });
    expect(dropEntries(drop).sort()).toEqual(["after.png.media"]);
    expect(w.exitCode).toBeUndefined();
  });

  it("refuses a file over the size cap", async () => {
    const w = await startWatch(["--drop", drop, "--max-size", "1KB"]);
    dropFile(drop, "big.txt", "x".repeat(5000));
    expect(await w.waitFor(outcomeFor("big.txt"), "big.txt")).toMatchObject({ event: "refused", code: "too_large" });
  });

  it("refuses a file that never stops growing once it passes the cap, while it is still written", async () => {
    const w = await startWatch(["--drop", drop, "--max-size", "64KB", "--settle", "10s"]);
    const file = path.join(drop, "endless.txt");
    const fd = fs.openSync(file, "w");
    const receipt = `${file}.refused`;
    let writes = 0;
    // The writer never settles; it stops only when the receipt shows up.
    while (!fs.existsSync(receipt)) {
      if (++writes > 4000) throw new Error("no receipt for a file growing past the cap");
      fs.writeSync(fd, "x".repeat(1024));
      await new Promise((r) => setTimeout(r, 10));
    }
    fs.closeSync(fd);
    expect(await w.waitFor(outcomeFor("endless.txt"), "endless.txt")).toMatchObject({ event: "refused", code: "too_large" });
    expect(fs.readFileSync(receipt, "utf8")).toMatch(/^too_large: /);
    // Removed only when nothing was written since the watch looked; written to meanwhile, it stays beside its receipt, said in the log.
    expect(fs.existsSync(file)).toBe(/"event":"drop_kept"[^\n]*"name":"endless\.txt"/.test(w.stderr));
    expect(fs.readdirSync(h.outbox)).toEqual([]);
  });

  it("survives a drop folder that vanishes and comes back", async () => {
    const w = await startWatch(["--drop", drop]);
    fs.rmSync(drop, { recursive: true });
    await waitUntil(() => w.stderr.includes('"event":"drop_lost"'), "drop_lost log line");
    fs.mkdirSync(drop);
    await waitUntil(() => w.stderr.includes('"event":"drop_back"'), "drop_back log line");
    dropFile(drop, "again.png", png(17));
    expect(await w.waitFor(outcomeFor("again.png"), "again.png")).toMatchObject({ event: "published" });
  });

  it("never follows a drop folder swapped for a link to another directory", async () => {
    const w = await startWatch(["--drop", drop, "--settle", "100ms"]);
    const victims = path.join(h.home, "documents");
    fs.mkdirSync(victims);
    const privateFile = write(victims, "private.txt", "my own notes\n");
    const moved = path.join(h.home, "drop-moved");
    fs.renameSync(drop, moved);
    fs.symlinkSync(victims, drop);
    // An event from the old folder names a file that exists behind the link.
    write(moved, "private.txt", "bait\n");
    await waitUntil(() => w.stderr.includes('"event":"drop_lost"'), "drop_lost log line");
    // Give a would-be settle and processing time to happen; none may.
    await new Promise((r) => setTimeout(r, 1000));
    expect(fs.readFileSync(privateFile, "utf8")).toBe("my own notes\n");
    expect(fs.readdirSync(victims)).toEqual(["private.txt"]);
    expect(fs.readdirSync(h.outbox)).toEqual([]);
    expect(w.events.filter((e) => e.event !== "ready")).toEqual([]);
  });

  it("handles a flood of 2,000 files without stalling another drop folder", { timeout: 240_000 }, async () => {
    const other = path.join(h.home, "other");
    const w = await startWatch(["--drop", drop, "--drop", other, "--settle", "300ms"]);
    for (let i = 0; i < 2000; i++) fs.writeFileSync(path.join(drop, `f${i}.txt`), `flood file ${i}\n`);
    dropFile(other, "urgent.txt", "urgent\n");
    const all = await w.waitForCount((e) => e.event === "published" && String(e.drop).endsWith("/drop"), 2000, "2,000 flood receipts", 200_000);
    expect(all.length).toBe(2000);
    const urgent = w.events.findIndex(outcomeFor("urgent.txt"));
    const lastFlood = w.events.lastIndexOf(all.at(-1)!);
    expect(urgent).toBeGreaterThanOrEqual(0);
    expect(urgent).toBeLessThan(lastFlood);
    const left = dropEntries(drop);
    expect(left.filter((n) => n.endsWith(".media")).length).toBe(2000);
    expect(left.filter((n) => !n.endsWith(".media"))).toEqual([]);
    expect(fs.readdirSync(h.outbox).length).toBe(2001);
    expect(w.events.filter((e) => e.event === "quarantined")).toEqual([]);
  });

  it("on SIGTERM finishes files already begun, leaves the rest untouched, exits 0", { timeout: 120_000 }, async () => {
    const w = await startWatch(["--drop", drop, "--settle", "200ms"]);
    const count = 400;
    for (let i = 0; i < count; i++) fs.writeFileSync(path.join(drop, `s${i}.txt`), `sigterm file ${i}\n`);
    await w.waitFor((e) => e.event === "published", "first receipt");
    expect(await w.stop()).toBe(0);
    expect(w.events.at(-1)).toEqual({ event: "stopped" });
    const names = new Set(fs.readdirSync(drop));
    const published = w.events.filter((e) => e.event === "published");
    for (let i = 0; i < count; i++) {
      const name = `s${i}.txt`;
      const receipt = names.has(`${name}.media`);
      // Either answered (receipt, original gone) or untouched (original, no receipt).
      expect(receipt !== names.has(name)).toBe(true);
      if (!receipt) expect(fs.readFileSync(path.join(drop, name), "utf8")).toBe(`sigterm file ${i}\n`);
    }
    expect([...names].filter((n) => n.endsWith(".media")).length).toBe(published.length);
    // Nothing published without a receipt, and no copy left half made.
    expect(fs.readdirSync(h.outbox).length).toBe(published.length);
    expect([...names].filter((n) => n.startsWith(".")).length).toBe(0);
    expect(fs.readdirSync(path.join(h.home, ".hermes", ".media_outbox-state", "staging"))).toEqual([]);
  });
});
