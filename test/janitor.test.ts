import { execFileSync, spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { StatusReport } from "../src/janitor/status.js";
import { type JanitorReport, runJanitor } from "../src/janitor/sweep.js";
import { LEDGER_SHAPE, appendLedger, parseLedgerLine } from "../src/state/ledger.js";
import { LongLine, recordOfLine } from "../src/state/torn-line.js";
import { JOURNAL_NAME, moveToQuarantine } from "../src/watch/quarantine.js";
import { BIN, type CliResult, cli, makeHome, recordPublished, write } from "./helpers.js";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

let h: ReturnType<typeof makeHome>;
let state: string;
let outside: string;
beforeEach(() => {
  h = makeHome();
  fs.mkdirSync(h.outbox, { recursive: true, mode: 0o700 });
  fs.chmodSync(h.outbox, 0o700);
  state = path.join(path.dirname(h.outbox), ".media_outbox-state");
  for (const sub of ["staging", "ledger", "quarantine"]) fs.mkdirSync(path.join(state, sub), { recursive: true, mode: 0o700 });
  outside = path.join(h.home, "outside");
  fs.mkdirSync(outside);
});
afterEach(() => h.cleanup());

/** Sets a file's mtime (and atime) to `ms` ago; links are aged themselves, never their target. */
function age(file: string, ms: number): string {
  const t = new Date(Date.now() - ms);
  fs.lutimesSync(file, t, t);
  return file;
}
/** A file `ms` old; in the outbox, one a ledger record names, as prepare publishes it (the janitor deletes no other). */
function oldFile(dir: string, name: string, ms: number, content: string | Buffer = "x"): string {
  if (dir === h.outbox) recordPublished(path.join(state, "ledger"), name, Buffer.byteLength(content));
  return age(write(dir, name, content), ms);
}

const jan = (args: string[] = [], env = h.env): CliResult => cli(["janitor", ...args], { env });
const report = (r: CliResult) => JSON.parse(r.stdout) as JanitorReport;
const names = (entries: { name: string }[]) => entries.map((e) => e.name).sort();
const exists = (p: string) => fs.existsSync(p) || fs.lstatSync(p, { throwIfNoEntry: false }) !== undefined;

describe("janitor: retention", () => {
  it("keeps 13 d 23 h, removes 14 d 1 h (exactly 14 x 24 h)", () => {
    const kept = oldFile(h.outbox, "kept.png", 13 * DAY + 23 * HOUR);
    const gone = oldFile(h.outbox, "gone.png", 14 * DAY + HOUR, "12345");
    const r = jan(["--json"]);
    expect(r.code).toBe(0);
    expect(exists(kept)).toBe(true);
    expect(exists(gone)).toBe(false);
    const doc = report(r);
    expect(doc.success).toBe(true);
    expect(doc.deleted).toEqual([expect.objectContaining({ area: "outbox", name: "gone.png", bytes: 5, reason: "expired" })]);
    // Scanned: the two outbox files and the ledger's day file naming them.
    expect(doc.totals).toMatchObject({ scanned: 3, deleted: 1, bytes_freed: 5, skipped: 0, errors: 0 });
    expect(r.stderr).toBe("media-outbox: janitor: scanned 3, deleted 1 (5 B freed), skipped 0, errors 0\n");
  });

  it("honours --retention and the config file's janitor.retention", () => {
    const f = oldFile(h.outbox, "a.pdf", 3 * DAY);
    expect(jan(["--retention", "4d"]).code).toBe(0);
    expect(exists(f)).toBe(true);
    fs.writeFileSync(path.join(h.home, ".hermes", "media-outbox.json"), JSON.stringify({ janitor: { retention: "2d" } }));
    expect(jan().code).toBe(0);
    expect(exists(f)).toBe(false);
  });

  it("a bad --retention is a usage error (exit 2)", () => {
    const r = jan(["--retention", "soon"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/usage error: retention/);
  });

  it("refuses a retention shorter than the min-age (a file just published would be deleted before the gateway sends it), from a flag or the config file, deleting nothing", () => {
    const fresh = oldFile(h.outbox, "just-published.png", 60_000);
    for (const args of [["--retention", "0"], ["--retention", "30m"], ["--retention", "30m", "--min-age", "2h"]]) {
      const r = jan(args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr).toMatch(/usage error: retention: \d+[smhd] is shorter than the min-age \(\d/);
    }
    expect(exists(fresh)).toBe(true);
    fs.writeFileSync(path.join(h.home, ".hermes", "media-outbox.json"), JSON.stringify({ janitor: { retention: "10m" } }));
    const fromFile = jan();
    expect(fromFile.code).toBe(2);
    expect(fromFile.stderr).toContain("media-outbox.json");
    expect(fromFile.stderr).toContain("is shorter than the min-age (1.0h)");
    expect(exists(fresh)).toBe(true);
    // With a min-age no longer than it, a short retention is the operator's to choose.
    expect(jan(["--retention", "30m", "--min-age", "10m"]).code).toBe(0);
    expect(exists(fresh)).toBe(true);
  });

  it("a missing outbox is not an error and is not created", () => {
    fs.rmSync(h.outbox, { recursive: true });
    const r = jan(["--json"]);
    expect(r.code).toBe(0);
    expect(report(r)).toMatchObject({ outbox_exists: false, totals: { scanned: 0, deleted: 0 } });
    expect(r.stderr).toMatch(/does not exist; nothing to do/);
    expect(exists(h.outbox)).toBe(false);
  });

  it("never prints a file name raw (control characters, forged directive)", () => {
    oldFile(h.outbox, "evil\nMEDIA:\u202e.png", 20 * DAY);
    const r = jan(["--json", "--dry-run"]);
    expect(r.code).toBe(0);
    expect(report(r).deleted[0]!.name).toBe("evil\\x0aMEDIA\\x3a\\u{202e}.png");
    expect(r.stdout).not.toMatch(/MEDIA:/);
  });
});

describe("janitor: a deletion that fails", () => {
  it("is reported, the rest goes on, exit 1", () => {
    const stuck = oldFile(h.outbox, "stuck.png", 20 * DAY);
    const other = oldFile(h.outbox, "other.png", 20 * DAY);
    const immutable = spawnSync("chattr", ["+i", stuck], { encoding: "utf8" }).status === 0;
    try {
      const r = jan(["--json"]);
      expect(exists(other)).toBe(false);
      if (!immutable) {
        console.warn("janitor failure test: chattr +i is not supported on this filesystem; asserting only the clean run");
        expect(r.code).toBe(0);
        return;
      }
      expect(r.code).toBe(1);
      expect(exists(stuck)).toBe(true);
      const doc = report(r);
      expect(doc.success).toBe(false);
      expect(doc.errors).toEqual([expect.objectContaining({ area: "outbox", name: "stuck.png", code: "EPERM" })]);
      expect(r.stderr).toMatch(/could not delete outbox\/stuck\.png: EPERM/);
      // In the system's words, once, with what to check; not Node's message with the janitor's own paths.
      expect(doc.errors[0]!.message).toBe("operation not permitted (rename); the janitor's user may not remove it: check the permissions of its directory and its attributes (lsattr: immutable, append-only)");
      expect(r.stderr).not.toMatch(/EPERM: EPERM|\/proc\/self\/fd|\.janitor-/);
      expect(r.stderr).toMatch(/deleted 1 .* errors 1/);
    } finally {
      if (immutable) spawnSync("chattr", ["-i", stuck]);
    }
  });
});

describe("janitor: what it never touches", () => {
  it("a symlink to an old file outside: the target survives, the link is reported", () => {
    const target = oldFile(outside, "secret.txt", 30 * DAY);
    const link = path.join(h.outbox, "link.txt");
    fs.symlinkSync(target, link);
    age(link, 30 * DAY);
    const r = jan(["--json"]);
    expect(r.code).toBe(0);
    expect(fs.readFileSync(target, "utf8")).toBe("x");
    expect(fs.lstatSync(link).isSymbolicLink()).toBe(true);
    expect(report(r).skipped).toEqual([expect.objectContaining({ area: "outbox", name: "link.txt", code: "symlink" })]);
    expect(report(r).deleted).toEqual([]);
  });

  it("a subdirectory with old files is not entered, not deleted", () => {
    const sub = path.join(h.outbox, "sub");
    fs.mkdirSync(sub);
    const inner = oldFile(sub, "old.png", 30 * DAY);
    age(sub, 30 * DAY);
    const r = jan(["--json"]);
    expect(r.code).toBe(0);
    expect(exists(inner)).toBe(true);
    expect(report(r).skipped).toEqual([expect.objectContaining({ name: "sub", code: "directory" })]);
  });

  it("a FIFO is reported, not opened or deleted", () => {
    const fifo = path.join(h.outbox, "pipe.txt");
    execFileSync("mkfifo", [fifo]);
    age(fifo, 30 * DAY);
    const r = jan(["--json"]);
    expect(r.code).toBe(0);
    expect(fs.lstatSync(fifo).isFIFO()).toBe(true);
    expect(report(r).skipped).toEqual([expect.objectContaining({ name: "pipe.txt", code: "not_regular_file", reason: expect.stringMatching(/FIFO/) })]);
  });

  it("a tmpfs or bind mount inside the outbox is never crossed", () => {
    const mnt = path.join(h.outbox, "mnt");
    fs.mkdirSync(mnt);
    const bound = write(h.outbox, "bound.txt", "placeholder");
    const source = oldFile(outside, "bind-source.txt", 30 * DAY, "keep me");
    const mounted: string[] = [];
    try {
      const tmpfs = spawnSync("mount", ["-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", mnt], { encoding: "utf8" });
      if (tmpfs.status === 0) mounted.push(mnt);
      const bind = spawnSync("mount", ["--bind", source, bound], { encoding: "utf8" });
      if (bind.status === 0) mounted.push(bound);
      if (mounted.length < 2) {
        console.warn(`janitor mount test: cannot mount here (${(tmpfs.stderr || bind.stderr).trim()}); asserting only that the directory is left alone`);
      }
      const inMount = mounted.includes(mnt) ? oldFile(mnt, "in-tmpfs.png", 30 * DAY) : oldFile(mnt, "in-dir.png", 30 * DAY);
      age(mnt, 30 * DAY);
      if (mounted.includes(bound)) age(bound, 30 * DAY);
      const r = jan(["--json"]);
      expect(r.code).toBe(0);
      const doc = report(r);
      expect(exists(inMount)).toBe(true);
      expect(doc.errors).toEqual([]);
      if (mounted.includes(mnt)) expect(doc.skipped).toContainEqual(expect.objectContaining({ name: "mnt", code: "mount_point" }));
      else expect(doc.skipped).toContainEqual(expect.objectContaining({ name: "mnt", code: "directory" }));
      if (mounted.includes(bound)) {
        expect(fs.readFileSync(source, "utf8")).toBe("keep me");
        expect(doc.skipped).toContainEqual(expect.objectContaining({ name: "bound.txt", code: "mount_point" }));
        expect(doc.deleted).toEqual([]);
      }
    } finally {
      for (const m of mounted.reverse()) spawnSync("umount", [m]);
    }
  });
});

describe("janitor: race safety", () => {
  it.each([
    ["through /proc/self/fd", false],
    ["from inside the open directory (chdir)", true],
  ])("outbox swapped for a symlink mid-run (%s): nothing outside is deleted", (_mode, chdir) => {
    // The same names, all old, in the outbox and in a directory outside it.
    for (const n of ["a.png", "b.png", "c.png"]) {
      oldFile(h.outbox, n, 30 * DAY);
      oldFile(outside, n, 30 * DAY);
    }
    const moved = `${h.outbox}.moved`;
    const cwdBefore = process.cwd();
    const rep = runJanitor({
      env: h.env,
      chdir,
      onOpened: () => {
        fs.renameSync(h.outbox, moved);
        fs.symlinkSync(outside, h.outbox);
      },
    });
    expect(fs.readdirSync(outside).sort()).toEqual(["a.png", "b.png", "c.png"]);
    // What was verified and opened is what was swept.
    expect(fs.readdirSync(moved)).toEqual([]);
    expect(rep.totals.deleted).toBe(3);
    expect(process.cwd()).toBe(cwdBefore);
  });

  it("an outbox that is a symlink at start is refused (exit 2), nothing deleted", () => {
    oldFile(outside, "a.png", 30 * DAY);
    fs.rmSync(h.outbox, { recursive: true });
    fs.symlinkSync(outside, h.outbox);
    const r = jan(["--json"]);
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout)).toMatchObject({ success: false, error: { code: "outbox_unsafe" } });
    expect(r.stderr).toMatch(/outbox_unsafe: .*symbolic link/);
    expect(fs.readdirSync(outside)).toEqual(["a.png"]);
  });

  it("a file reused by prepare during the sweep (fresh mtime) is kept", () => {
    const work = h.work;
    const src = write(work, "report.txt", "the same bytes\n");
    expect(cli(["prepare", src], { env: h.env }).code).toBe(0);
    const published = age(path.join(h.outbox, "report.txt"), 20 * DAY);
    oldFile(h.outbox, "other.txt", 20 * DAY);
    const rep = runJanitor({
      env: h.env,
      beforeUnlink: (_area, name) => {
        // The real prepare, between the janitor's scan and its unlink.
        if (name === "report.txt") expect(cli(["prepare", src], { env: h.env }).code).toBe(0);
      },
    });
    expect(exists(published)).toBe(true);
    expect(Date.now() - fs.statSync(published).mtimeMs).toBeLessThan(HOUR);
    expect(names(rep.deleted)).toEqual(["other.txt"]);
    expect(rep.skipped).toContainEqual(expect.objectContaining({ name: "report.txt", code: "refreshed" }));
  });

  it("a file prepare reuses after the janitor's last look, right before its removal, is kept (chdir or not)", () => {
    const work = h.work;
    const src = write(work, "report.txt", "the same bytes\n");
    for (const chdir of [false, true]) {
      const first = cli(["prepare", "--json", src], { env: h.env });
      expect(first.code, first.stderr).toBe(0);
      const published = age(path.join(h.outbox, "report.txt"), 20 * DAY);
      let line: { success: boolean; media: { path: string; reused: boolean }[] } | undefined;
      const rep = runJanitor({
        env: h.env,
        chdir,
        afterRecheck: (_area, name) => {
          // The real prepare, once the janitor has decided and before it acts: it reuses the file and says so.
          if (name === "report.txt") line = JSON.parse(cli(["prepare", "--json", src], { env: h.env }).stdout);
        },
      });
      expect(line).toMatchObject({ success: true, media: [{ path: published, reused: true }] });
      // What prepare's line names is there, with its bytes.
      expect(fs.readFileSync(published, "utf8")).toBe("the same bytes\n");
      expect(rep.deleted).toEqual([]);
      expect(rep.errors).toEqual([]);
      expect(rep.skipped).toContainEqual(expect.objectContaining({ name: "report.txt", code: "refreshed" }));
      // Nothing of the janitor's stays in the staging directory.
      expect(fs.readdirSync(path.join(state, "staging"))).toEqual([]);
    }
  });

  it("a file refreshed through a descriptor opened before the take, its name taken by a new file meanwhile: kept in the staging directory (reused_meanwhile), never replaced by the next take", () => {
    // Two expired files: whichever is taken first is the one reused, the other is taken after it.
    for (const n of ["a.png", "b.png"]) oldFile(h.outbox, n, 20 * DAY, `old bytes of ${n}`);
    let first: string | undefined;
    let fd: number | undefined;
    const rep = runJanitor({
      env: h.env,
      chdir: true,
      afterRecheck: (_area, name) => {
        // prepare's reuse opens the published file by name (to hash it) before the janitor takes it…
        if (first === undefined) {
          first = name;
          fd = fs.openSync(path.join(h.outbox, name), "r");
        }
      },
      afterTake: (name) => {
        // …and refreshes it through that descriptor after; meanwhile a new file took the name.
        if (name !== first || fd === undefined) return;
        fs.futimesSync(fd, new Date(), new Date());
        fs.closeSync(fd);
        fd = undefined;
        write(h.outbox, name, "new bytes");
      },
    });
    const other = first === "a.png" ? "b.png" : "a.png";
    const takenName = `.janitor-${process.pid}-1`;
    expect(rep.errors).toEqual([]);
    expect(rep.skipped).toEqual([expect.objectContaining({ name: first, code: "reused_meanwhile", reason: expect.stringContaining(takenName) })]);
    expect(names(rep.deleted)).toEqual([other]);
    expect(fs.readdirSync(h.outbox)).toEqual([first]);
    expect(fs.readFileSync(path.join(h.outbox, first!), "utf8")).toBe("new bytes");
    // The refreshed file is in the staging directory under the name given, with its bytes: the next take renamed onto another name.
    expect(fs.readdirSync(path.join(state, "staging"))).toEqual([takenName]);
    expect(fs.readFileSync(path.join(state, "staging", takenName), "utf8")).toBe(`old bytes of ${first}`);
  });

  it("an old file kept in the staging directory (another inode taken, its name taken meanwhile) is not swept from there by the same run", () => {
    const f = oldFile(h.outbox, "a.png", 20 * DAY, "first");
    const takenName = `.janitor-${process.pid}-1`;
    const rep = runJanitor({
      env: h.env,
      chdir: true,
      afterRecheck: () => {
        // Another inode, as old, under the name (made before the first goes, so its inode number differs)…
        age(write(h.outbox, "a.png.tmp", "second"), 20 * DAY);
        fs.renameSync(`${f}.tmp`, f);
      },
      // …and once it is taken, a new file under the name.
      afterTake: () => void write(h.outbox, "a.png", "third"),
    });
    expect(rep.errors).toEqual([]);
    expect(rep.deleted).toEqual([]);
    expect(rep.skipped).toEqual([expect.objectContaining({ name: "a.png", code: "reused_meanwhile" })]);
    expect(fs.readFileSync(f, "utf8")).toBe("third");
    expect(fs.readFileSync(path.join(state, "staging", takenName), "utf8")).toBe("second");
  });

  it.each([
    ["through /proc/self/fd", false],
    ["from inside the open directory (chdir)", true],
  ])("a directory that took an expired file's name after the look is never moved (%s)", (_mode, chdir) => {
    const f = oldFile(h.outbox, "a.png", 20 * DAY);
    const rep = runJanitor({
      env: h.env,
      chdir,
      afterRecheck: () => {
        fs.rmSync(f);
        fs.mkdirSync(f);
        write(f, "inside.png", "x");
      },
    });
    expect(fs.readdirSync(f)).toEqual(["inside.png"]);
    expect(fs.readdirSync(path.join(state, "staging"))).toEqual([]);
    expect(rep.errors).toEqual([]);
    expect(rep.deleted).toEqual([]);
    expect(rep.skipped).toEqual([expect.objectContaining({ name: "a.png", code: "replaced" })]);
  });

  it("a symlink that took an expired file's name after the look is put back as it was, its target untouched", () => {
    const f = oldFile(h.outbox, "a.png", 20 * DAY);
    const target = oldFile(outside, "secret.png", 20 * DAY, "outside");
    const rep = runJanitor({
      env: h.env,
      chdir: true,
      afterRecheck: () => {
        fs.rmSync(f);
        fs.symlinkSync(target, f);
      },
    });
    expect(fs.readlinkSync(f)).toBe(target);
    expect(fs.readFileSync(target, "utf8")).toBe("outside");
    expect(fs.readdirSync(path.join(state, "staging"))).toEqual([]);
    expect(rep.errors).toEqual([]);
    expect(rep.deleted).toEqual([]);
    expect(rep.skipped).toEqual([expect.objectContaining({ name: "a.png", code: "replaced" })]);
  });

  it("a file already under the name a take would use (a dead janitor of the same pid) is never renamed onto", () => {
    const staging = path.join(state, "staging");
    const stale = write(staging, `.janitor-${process.pid}-1`, "not this run's");
    for (let i = 0; i < 5; i++) oldFile(h.outbox, `f${i}.png`, 20 * DAY);
    const rep = runJanitor({ env: h.env, chdir: true });
    expect(rep.totals.deleted).toBe(5);
    expect(rep.errors).toEqual([]);
    expect(fs.readFileSync(stale, "utf8")).toBe("not this run's");
    expect(fs.readdirSync(staging)).toEqual([path.basename(stale)]);
  });

  it("a file replaced by another inode during the sweep is kept", () => {
    const f = oldFile(h.outbox, "a.png", 20 * DAY);
    const rep = runJanitor({
      env: h.env,
      beforeUnlink: () => {
        fs.renameSync(f, `${f}.tmp`);
        oldFile(h.outbox, "a.png", 20 * DAY, "new inode");
        fs.rmSync(`${f}.tmp`);
      },
    });
    expect(fs.readFileSync(f, "utf8")).toBe("new inode");
    expect(rep.skipped).toContainEqual(expect.objectContaining({ name: "a.png", code: "replaced" }));
  });

  it("two janitors at once: no failure, no double counting", async () => {
    // Enough files that the two runs overlap (measured: each takes about half).
    const N = 20_000;
    for (let i = 0; i < N; i++) oldFile(h.outbox, `f${i}.png`, 20 * DAY, "0123456789");
    const runOne = () =>
      new Promise<{ code: number | null; stdout: string }>((resolve) => {
        const child = spawn(process.execPath, [BIN, "janitor", "--json"], { env: h.env });
        let stdout = "";
        child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
        child.on("close", (code) => resolve({ code, stdout }));
      });
    const [a, b] = await Promise.all([runOne(), runOne()]);
    expect(a.code).toBe(0);
    expect(b.code).toBe(0);
    const ra = JSON.parse(a.stdout) as JanitorReport;
    const rb = JSON.parse(b.stdout) as JanitorReport;
    expect(ra.errors).toEqual([]);
    expect(rb.errors).toEqual([]);
    expect(ra.totals.deleted + rb.totals.deleted).toBe(N);
    expect(ra.totals.bytes_freed + rb.totals.bytes_freed).toBe(N * 10);
    const both = new Set([...ra.deleted, ...rb.deleted].map((d) => d.name));
    expect(both.size).toBe(N);
    expect(fs.readdirSync(h.outbox)).toEqual([]);
  }, 120_000);
});

describe("janitor: another janitor between scan and unlink", () => {
  it("counts only what it deleted itself; ENOENT is not an error", () => {
    for (let i = 0; i < 50; i++) oldFile(h.outbox, `f${i}.png`, 20 * DAY, "0123456789");
    let other: JanitorReport | undefined;
    const rep = runJanitor({
      env: h.env,
      beforeUnlink: () => {
        // The first time: a whole other janitor (the real CLI) sweeps everything.
        if (!other) other = report(jan(["--json"]));
      },
    });
    expect(other!.totals.deleted).toBe(50);
    expect(rep.totals.deleted).toBe(0);
    expect(rep.errors).toEqual([]);
    expect(rep.success).toBe(true);
    // The one in hand at the time is reported as vanished; the rest were gone before their lstat.
    expect(rep.skipped).toEqual([expect.objectContaining({ code: "vanished" })]);
  });
});

describe("janitor: unsafe outbox (exit 2, nothing deleted)", () => {
  const refused = (setup: () => void, why: RegExp) => {
    const f = oldFile(h.outbox, "old.png", 30 * DAY);
    setup();
    const r = jan();
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/outbox_unsafe/);
    expect(r.stderr).toMatch(why);
    expect(exists(f)).toBe(true);
  };

  it("writable by others", () => refused(() => fs.chmodSync(h.outbox, 0o777), /writable by group or others/));
  it("owned by another user (the fix: run it as the owner, or use a directory of one's own)", () =>
    refused(() => fs.chownSync(h.outbox, 65534, 65534), /owned by uid 65534, not by the current user \(uid \d+\); run the command as its owner \(uid 65534: sudo -u "#65534" media-outbox \.\.\.\), or point it at a directory of your own/));
  it("an ancestor writable by others (not sticky)", () => refused(() => fs.chmodSync(path.join(h.home, ".hermes"), 0o777), /ancestor .* writable by others/));
  it("not a directory", () => {
    fs.rmSync(h.outbox, { recursive: true });
    fs.writeFileSync(h.outbox, "x");
    const r = jan();
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/outbox_unsafe: .*not a directory/);
  });
});

describe("janitor: dry run", () => {
  it("changes nothing and lists exactly what the real run deletes", () => {
    for (let i = 0; i < 5; i++) oldFile(h.outbox, `old${i}.png`, 15 * DAY + i * HOUR, "x".repeat(100));
    for (let i = 0; i < 3; i++) oldFile(h.outbox, `young${i}.png`, (i + 2) * HOUR, "x".repeat(100));
    oldFile(path.join(state, "staging"), "1-000000000000dead.part", 2 * HOUR);
    const before = fs.readdirSync(h.outbox).sort();
    const dry = jan(["--json", "--dry-run", "--max-bytes", "250"]);
    expect(dry.code).toBe(0);
    expect(fs.readdirSync(h.outbox).sort()).toEqual(before);
    expect(exists(path.join(state, "staging", "1-000000000000dead.part"))).toBe(true);
    expect(dry.stderr).toMatch(/^media-outbox: janitor \(dry run\): scanned 10, would delete 7 /);
    const real = jan(["--json", "--max-bytes", "250"]);
    expect(real.code).toBe(0);
    const pick = (d: JanitorReport) => d.deleted.map((e) => `${e.area}/${e.name}/${e.reason}`).sort();
    expect(pick(report(dry))).toEqual(pick(report(real)));
    expect(report(dry).dry_run).toBe(true);
    expect(fs.readdirSync(h.outbox).sort()).toEqual(["young0.png", "young1.png"]);
  });
});

describe("janitor: --max-bytes quota", () => {
  beforeEach(() => {
    // 5 files of 1000 bytes: 5 h, 4 h, 3 h, 30 min and 10 min old.
    for (const [name, ms] of [["h5", 5 * HOUR], ["h4", 4 * HOUR], ["h3", 3 * HOUR], ["m30", 30 * 60_000], ["m10", 10 * 60_000]] as const) {
      oldFile(h.outbox, `${name}.bin`, ms, Buffer.alloc(1000));
    }
  });

  it("deletes the oldest first until the outbox fits", () => {
    const r = jan(["--json", "--max-bytes", "2500"]);
    expect(r.code).toBe(0);
    const doc = report(r);
    expect(doc.deleted.map((d) => d.name)).toEqual(["h5.bin", "h4.bin", "h3.bin"]);
    expect(doc.deleted.every((d) => d.reason === "quota")).toBe(true);
    expect(doc.quota).toEqual({ max_bytes: 2500, min_age_ms: HOUR, bytes_before: 5000, bytes_after: 2000, met: true });
  });

  it("never deletes a file younger than the minimum age: quota not met is exit 1", () => {
    const r = jan(["--json", "--max-bytes", "1500"]);
    expect(r.code).toBe(1);
    const doc = report(r);
    expect(doc.success).toBe(false);
    expect(doc.quota).toMatchObject({ met: false, bytes_after: 2000 });
    expect(fs.readdirSync(h.outbox).sort()).toEqual(["m10.bin", "m30.bin"]);
    expect(r.stderr).toMatch(/quota NOT met/);
  });

  it("--min-age and janitor.minAge move the guard", () => {
    expect(jan(["--max-bytes", "1500", "--min-age", "20m"]).code).toBe(0);
    expect(fs.readdirSync(h.outbox)).toEqual(["m10.bin"]);
    fs.writeFileSync(path.join(h.home, ".hermes", "media-outbox.json"), JSON.stringify({ janitor: { maxBytes: 1, minAge: "5m" } }));
    expect(jan().code).toBe(0);
    expect(fs.readdirSync(h.outbox)).toEqual([]);
  });
});

describe("janitor: staging, quarantine, ledger", () => {
  it("removes staging leftovers older than 1 hour only", () => {
    const staging = path.join(state, "staging");
    const dead = oldFile(staging, "123-00000000deadbeef.part", 2 * HOUR);
    const live = oldFile(staging, "456-000000000000cafe.part", 10 * 60_000);
    const r = jan(["--json"]);
    expect(r.code).toBe(0);
    expect(exists(dead)).toBe(false);
    expect(exists(live)).toBe(true);
    expect(report(r).deleted).toEqual([expect.objectContaining({ area: "staging", name: "123-00000000deadbeef.part", reason: "stale_staging" })]);
  });

  it("leaves a file another janitor is judging in staging alone while that janitor lives; a dead janitor's is a leftover", () => {
    const staging = path.join(state, "staging");
    // A process that has exited: its pid is free (reuse within this test is not expected).
    const gone = spawnSync(process.execPath, ["-e", ""]).pid!;
    const inFlight = oldFile(staging, `.janitor-${process.pid}-1`, 20 * DAY);
    const leftover = oldFile(staging, `.janitor-${gone}-1`, 20 * DAY);
    const r = jan(["--json"]);
    expect(r.code).toBe(0);
    expect(exists(inFlight)).toBe(true);
    expect(exists(leftover)).toBe(false);
    expect(report(r).deleted).toEqual([expect.objectContaining({ area: "staging", name: `.janitor-${gone}-1`, reason: "stale_staging" })]);
  });

  it("removes quarantined entries past the retention; a quarantined symlink goes as a link", () => {
    const q = path.join(state, "quarantine");
    const target = oldFile(outside, "target.txt", 30 * DAY);
    // Caught by the guard (moveToQuarantine writes the journal), then aged there.
    const caught = (name: string, ms: number) => {
      expect(moveToQuarantine(h.outbox, q, name, "not_in_ledger")).toEqual({ name });
      return age(path.join(q, name), ms);
    };
    fs.symlinkSync(target, path.join(h.outbox, "link.png"));
    const link = caught("link.png", 20 * DAY);
    write(h.outbox, "old.png", "x");
    const old = caught("old.png", 20 * DAY);
    write(h.outbox, "young.png", "x");
    const young = caught("young.png", 2 * DAY);
    fs.mkdirSync(path.join(h.outbox, "adir"));
    const dir = caught("adir", 20 * DAY);
    const r = jan(["--json"]);
    expect(r.code).toBe(0);
    expect(exists(link)).toBe(false);
    expect(fs.readFileSync(target, "utf8")).toBe("x");
    expect(exists(old)).toBe(false);
    expect(exists(young)).toBe(true);
    expect(exists(dir)).toBe(true);
    expect(names(report(r).deleted)).toEqual(["link.png", "old.png"]);
    expect(report(r).skipped).toContainEqual(expect.objectContaining({ area: "quarantine", name: "adir", code: "directory" }));
  });

  it("keeps the quarantine's journal, however old, and status does not count it as an entry", () => {
    const q = path.join(state, "quarantine");
    write(h.outbox, "caught.png", "12345");
    expect(moveToQuarantine(h.outbox, q, "caught.png", "not_in_ledger")).toEqual({ name: "caught.png" });
    const journal = age(path.join(q, JOURNAL_NAME), 20 * DAY);
    const entry = age(path.join(q, "caught.png"), 20 * DAY);
    const journalText = fs.readFileSync(journal, "utf8");
    const status = () => JSON.parse(cli(["status", "--json"], { env: h.env }).stdout) as StatusReport;

    const before = status();
    expect(before.quarantine).toMatchObject({ files: 1, bytes: 5, other_entries: 0, expired: 1 });
    expect(before.janitor.next_run.quarantine).toEqual({ files: 1, bytes: 5 });

    const r = jan(["--json"]);
    expect(r.code).toBe(0);
    expect(exists(entry)).toBe(false);
    expect(fs.readFileSync(journal, "utf8")).toBe(journalText);
    const doc = report(r);
    expect(doc.deleted).toEqual([expect.objectContaining({ area: "quarantine", name: "caught.png", reason: "expired_quarantine" })]);
    expect(doc.skipped).toEqual([]);
    expect(doc.areas.quarantine).toMatchObject({ scanned: 1, deleted: 1, skipped: 0, errors: 0 });

    const after = status();
    expect(after.quarantine).toMatchObject({ files: 0, bytes: 0, other_entries: 0, expired: 0 });
    expect(after.janitor.next_run.quarantine).toEqual({ files: 0, bytes: 0 });
  });

  it("removes whole ledger day files whose newest record is older than retention + 1 day", () => {
    const ledger = path.join(state, "ledger");
    const rec = (msAgo: number) => `${JSON.stringify({ time: new Date(Date.now() - msAgo).toISOString(), source: "s", name: "n.png", bytes: 1, sha256: "0".repeat(64), mime: "image/png", reused: false })}\n`;
    const day = (msAgo: number) => new Date(Date.now() - msAgo).toISOString().slice(0, 10);
    const oldDay = age(write(ledger, `${day(16 * DAY)}.jsonl`, rec(16 * DAY) + rec(16 * DAY - 60_000)), 16 * DAY);
    // Its last write is old, but a record in it is still within retention + 1 day.
    const active = age(write(ledger, `${day(14 * DAY + 2 * HOUR)}.jsonl`, rec(14 * DAY + 2 * HOUR)), 16 * DAY);
    const today = write(ledger, `${day(0)}.jsonl`, rec(0));
    const stray = age(write(ledger, "notes.txt", "keep"), 30 * DAY);
    const r = jan(["--json"]);
    expect(r.code).toBe(0);
    expect(exists(oldDay)).toBe(false);
    expect(exists(active)).toBe(true);
    expect(exists(today)).toBe(true);
    expect(exists(stray)).toBe(true);
    const doc = report(r);
    expect(doc.deleted).toEqual([expect.objectContaining({ area: "ledger", reason: "expired_ledger" })]);
    expect(doc.skipped).toContainEqual(expect.objectContaining({ area: "ledger", code: "ledger_active" }));
    expect(doc.skipped).toContainEqual(expect.objectContaining({ area: "ledger", name: "notes.txt", code: "not_ledger_file" }));
  });
});

describe("janitor: deletes only what media-outbox made", () => {
  it("an outbox that is not one (~/.hermes/memories): files no ledger record names are kept, said on stderr and in --json, and status predicts no removal", () => {
    const memories = path.join(h.home, ".hermes", "memories");
    fs.mkdirSync(memories, { mode: 0o700 });
    const memory = oldFile(memories, "MEMORY.md", 30 * DAY, "User prefers metric units\n");
    const user = oldFile(memories, "USER.md", 2 * HOUR, "Name: A\n");
    const env = { ...h.env, MEDIA_OUTBOX_DIR: memories };
    const r = jan(["--json"], env);
    expect(r.code, r.stderr).toBe(0);
    expect(fs.readFileSync(memory, "utf8")).toBe("User prefers metric units\n");
    expect(exists(user)).toBe(true);
    const doc = report(r);
    expect(doc.deleted).toEqual([]);
    const why =
      "no ledger record names it with its size: not published by media-outbox, or published while this run read the outbox, so it is kept (the watch guard quarantines what prepare did not publish)";
    expect(doc.skipped).toEqual([
      { area: "outbox", name: "MEMORY.md", code: "not_in_ledger", reason: why },
      { area: "outbox", name: "USER.md", code: "not_in_ledger", reason: why },
    ]);
    expect(r.stderr).toContain(`media-outbox: janitor: kept outbox/MEMORY.md: ${why}\n`);
    // The quota neither counts nor chooses them: met, with nothing deleted.
    const quota = report(jan(["--json", "--max-bytes", "1"], env));
    expect(quota).toMatchObject({ success: true, deleted: [], quota: { bytes_before: 0, bytes_after: 0, met: true } });
    expect(exists(memory) && exists(user)).toBe(true);

    const st = JSON.parse(cli(["status", "--json"], { env }).stdout) as StatusReport;
    expect(st.files).toMatchObject({ files: 2, unpublished: 2, oldest: { name: "MEMORY.md", expires: null } });
    expect(st.janitor).toMatchObject({ next_expiry: null, expiring_24h: { files: 0, bytes: 0 }, next_run: { outbox: { files: 0, bytes: 0 } } });
    expect(cli(["status"], { env }).stdout).toMatch(
      /^files +2 files \(\d+ B\), 2 not named by the ledger with their size \(changed since prepare published them, or not published by it: the janitor keeps them, the watch guard quarantines them\)$/m,
    );
  });

  it("in the outbox: a file a record names with its size goes; the same name with another size, and a name no record has, stay", () => {
    const ours = oldFile(h.outbox, "ours.png", 20 * DAY, "12345");
    recordPublished(path.join(state, "ledger"), "resized.png", 5);
    const resized = age(write(h.outbox, "resized.png", "123"), 20 * DAY);
    const planted = age(write(h.outbox, "planted.png", "x"), 20 * DAY);
    const r = jan(["--json"]);
    expect(r.code).toBe(0);
    expect(exists(ours)).toBe(false);
    expect(exists(resized) && exists(planted)).toBe(true);
    const doc = report(r);
    expect(names(doc.deleted)).toEqual(["ours.png"]);
    expect(doc.skipped.map((e) => `${e.name}:${e.code}`).sort()).toEqual(["planted.png:not_in_ledger", "resized.png:not_in_ledger"]);
    // Each is told the truth: the resized one was published, then changed; the other was not published (or only while the run read the outbox).
    const why = Object.fromEntries(doc.skipped.map((e) => [e.name, e.reason]));
    expect(why["resized.png"]).toBe(
      "a ledger record names it, but with another size: it changed since prepare published it, so it is not the file published and is never deleted (the watch guard quarantines it)",
    );
    expect(why["planted.png"]).toMatch(/^no ledger record names it with its size: not published by media-outbox, or published while this run read the outbox, so it is kept/);
    expect(r.stderr).toContain(`media-outbox: janitor: kept outbox/resized.png: ${why["resized.png"]}\n`);
  });

  it("a well-formed record is needed: a malformed line, or a day file that is a link, names nothing", () => {
    const ledger = path.join(state, "ledger");
    write(ledger, "2026-01-01.jsonl", `${JSON.stringify({ time: new Date().toISOString(), name: "a.png", bytes: 1 })}\n`);
    const elsewhere = write(outside, "2026-01-02.jsonl", `${JSON.stringify({ time: new Date().toISOString(), source: "s", name: "b.png", bytes: 1, sha256: "0".repeat(64), mime: "image/png", reused: false })}\n`);
    fs.symlinkSync(elsewhere, path.join(ledger, "2026-01-02.jsonl"));
    const a = age(write(h.outbox, "a.png", "x"), 20 * DAY);
    const b = age(write(h.outbox, "b.png", "x"), 20 * DAY);
    const r = jan(["--json"]);
    expect(r.code).toBe(0);
    expect(exists(a) && exists(b)).toBe(true);
    expect(report(r).skipped).toEqual(expect.arrayContaining([expect.objectContaining({ name: "a.png", code: "not_in_ledger" }), expect.objectContaining({ name: "b.png", code: "not_in_ledger" })]));
  });

  it("ledger: a day file no line of which is a well-formed record is kept at any age and reported; one with a record (and torn or foreign lines) or nothing at all is the ledger's", () => {
    const ledger = path.join(state, "ledger");
    const rec = (msAgo: number) => JSON.stringify({ time: new Date(Date.now() - msAgo).toISOString(), source: "s", name: "n.png", bytes: 1, sha256: "0".repeat(64), mime: "image/png", reused: false });
    const expenses = age(write(ledger, "2025-01-01.jsonl", `${JSON.stringify({ date: "2025-01-01", spent: 12.5, what: "groceries" })}\n`), 400 * DAY);
    const diary = age(write(ledger, "2025-01-02.jsonl", "my journal\n"), 400 * DAY);
    // A record cut short by a crash, then the next one on a line of its own (as prepare appends): the ledger's.
    const torn = age(write(ledger, "2025-01-03.jsonl", `${rec(400 * DAY).slice(0, 40)}\n${rec(400 * DAY)}\nnot json\n`), 400 * DAY);
    // An append taken back on a full disk leaves an empty day file.
    const empty = age(write(ledger, "2025-01-04.jsonl", ""), 400 * DAY);
    // Young, and still no record: reported too (it is never the ledger's, whatever its age).
    const young = write(ledger, "2025-01-05.jsonl", "draft\n");
    const r = jan(["--json"]);
    expect(r.code, r.stderr).toBe(0);
    expect(fs.readFileSync(expenses, "utf8")).toContain("groceries");
    expect(fs.readFileSync(diary, "utf8")).toBe("my journal\n");
    expect(exists(young)).toBe(true);
    expect(exists(torn) || exists(empty)).toBe(false);
    const doc = report(r);
    expect(doc.deleted.map((e) => `${e.area}/${e.name}:${e.reason}`).sort()).toEqual(["ledger/2025-01-03.jsonl:expired_ledger", "ledger/2025-01-04.jsonl:expired_ledger"]);
    const why = "a day file's name, but no line in it is a well-formed ledger record, or one of that day a crash cut short: media-outbox did not write it, so it is never deleted";
    expect(doc.skipped).toEqual([
      { area: "ledger", name: "2025-01-01.jsonl", code: "no_ledger_record", reason: why },
      { area: "ledger", name: "2025-01-02.jsonl", code: "no_ledger_record", reason: why },
      { area: "ledger", name: "2025-01-05.jsonl", code: "no_ledger_record", reason: why },
    ]);
    expect(r.stderr).toContain(`media-outbox: janitor: kept ledger/2025-01-01.jsonl: ${why}\n`);
    // status asks the same dry run: nothing more of the ledger would go.
    const st = JSON.parse(cli(["status", "--json"], { env: h.env }).stdout) as StatusReport;
    expect(st.janitor.next_run.ledger).toEqual({ files: 0, bytes: 0 });
  });

  it("a state directory holding the user's own ledger/ (MEDIA_OUTBOX_STATE_DIR=~/notes): prepare and the janitor leave its day files alone", () => {
    const notes = path.join(h.home, "notes");
    fs.mkdirSync(path.join(notes, "ledger"), { recursive: true, mode: 0o700 });
    fs.chmodSync(notes, 0o700);
    const expenses = age(write(path.join(notes, "ledger"), "2025-01-01.jsonl", `${JSON.stringify({ date: "2025-01-01", spent: 12.5, what: "groceries" })}\n`), 400 * DAY);
    const diary = age(write(path.join(notes, "ledger"), "2025-01-02.jsonl", "my journal\n"), 400 * DAY);
    const env = { ...h.env, MEDIA_OUTBOX_STATE_DIR: notes };
    const src = write(h.work, "x.txt", "hi\n");
    const p = cli(["prepare", src], { env });
    expect(p.code, p.stderr).toBe(0);
    const r = jan(["--json"], env);
    expect(r.code, r.stderr).toBe(0);
    expect(fs.readFileSync(expenses, "utf8")).toContain("groceries");
    expect(fs.readFileSync(diary, "utf8")).toBe("my journal\n");
    expect(report(r).skipped.filter((e) => e.area === "ledger").map((e) => `${e.name}:${e.code}`)).toEqual(["2025-01-01.jsonl:no_ledger_record", "2025-01-02.jsonl:no_ledger_record"]);
  });

  it("more than ten such files: ten lines on stderr, then a count; --json lists all", () => {
    for (let i = 0; i < 12; i++) age(write(h.outbox, `f${String(i).padStart(2, "0")}.png`, "x"), 20 * DAY);
    const r = jan(["--json"]);
    expect(r.code).toBe(0);
    expect(r.stderr.split("\n").filter((l) => l.startsWith("media-outbox: janitor: kept outbox/"))).toHaveLength(10);
    expect(r.stderr).toContain("media-outbox: janitor: kept 2 more that media-outbox did not make (listed with --json)\n");
    expect(report(r).skipped).toHaveLength(12);
  });

  it("staging: only the names prepare and the janitor give its files; anything else, however old, stays", () => {
    const staging = path.join(state, "staging");
    const leftover = oldFile(staging, `${process.pid + 1}-0123456789abcdef.part`, 2 * HOUR);
    const draft = oldFile(staging, "draft.md", 30 * DAY);
    const near = oldFile(staging, "1-0123456789ABCDEF.part", 30 * DAY);
    const r = jan(["--json"]);
    expect(r.code).toBe(0);
    expect(exists(leftover)).toBe(false);
    expect(exists(draft) && exists(near)).toBe(true);
    const doc = report(r);
    expect(names(doc.deleted)).toEqual([path.basename(leftover)]);
    expect(doc.skipped.map((e) => `${e.area}/${e.name}:${e.code}`).sort()).toEqual(["staging/1-0123456789ABCDEF.part:not_staging_file", "staging/draft.md:not_staging_file"]);
    expect(r.stderr).toContain("media-outbox: janitor: kept staging/draft.md: not a name prepare or the janitor gives a staging file: media-outbox did not make it, so it is never deleted\n");
  });

  it("quarantine: only entries its journal says the guard moved there (and not since restored)", () => {
    const q = path.join(state, "quarantine");
    write(h.outbox, "caught.png", "x");
    expect(moveToQuarantine(h.outbox, q, "caught.png", "not_in_ledger")).toEqual({ name: "caught.png" });
    const caught = age(path.join(q, "caught.png"), 20 * DAY);
    const mail = oldFile(q, "suspicious-mail.eml", 30 * DAY);
    // Restored once (the journal's last word on the name), then put back by hand.
    fs.appendFileSync(path.join(q, JOURNAL_NAME), `${JSON.stringify({ time: new Date().toISOString(), event: "quarantined", name: "back.png", reason: "not_in_ledger" })}\n${JSON.stringify({ time: new Date().toISOString(), event: "restored", name: "back.png" })}\n`);
    const back = oldFile(q, "back.png", 30 * DAY);
    const r = jan(["--json"]);
    expect(r.code).toBe(0);
    expect(exists(caught)).toBe(false);
    expect(exists(mail) && exists(back)).toBe(true);
    const doc = report(r);
    expect(names(doc.deleted)).toEqual(["caught.png"]);
    expect(doc.skipped.map((e) => `${e.area}/${e.name}:${e.code}`).sort()).toEqual(["quarantine/back.png:not_in_journal", "quarantine/suspicious-mail.eml:not_in_journal"]);
  });
});

describe("janitor: torn and glued ledger lines", () => {
  /** A ledger line exactly as prepare writes it: prepare run through the real CLI, its record read back from today's day file. */
  function realRecordLine(name: string, content: string): string {
    const p = cli(["prepare", write(h.work, name, content)], { env: h.env });
    expect(p.code, p.stderr).toBe(0);
    const ledger = path.join(state, "ledger");
    const lines = fs.readdirSync(ledger).flatMap((f) => fs.readFileSync(path.join(ledger, f), "utf8").split("\n"));
    const line = lines.find((l) => l.includes(`"name":${JSON.stringify(name)}`));
    expect(line).toBeDefined();
    return line!;
  }
  /** The same record on another day (a day file's records are of its day). */
  const onDay = (line: string, day: string) => line.replace(/^\{"time":"\d{4}-\d{2}-\d{2}/, `{"time":"${day}`);
  const dayAfter = (i: number) => new Date(Date.UTC(2024, 0, 1) + i * DAY).toISOString().slice(0, 10);

  it("a day file holding only a record of its day a crash cut short, at any byte (`{` too), is the ledger's: deleted when old; a user's file under a day's name is kept, whatever it starts with", () => {
    // A non-ASCII source: cuts inside a UTF-8 character too.
    const line = Buffer.from(realRecordLine("café-menu.txt", "soup\n"));
    const ledger = path.join(state, "ledger");
    const torn: string[] = [];
    // From `{` on: a cut before its day holds nothing the file's name does not say.
    for (let cut = 1, i = 0; cut < line.length; cut++, i++) {
      const day = dayAfter(i);
      torn.push(age(write(ledger, `${day}.jsonl`, Buffer.from(onDay(line.toString("utf8"), day)).subarray(0, cut)), 400 * DAY));
    }
    // Two crashes: the second record starts a line of its own (append-line.ts), and is cut short too.
    const twice = age(write(ledger, "2023-06-01.jsonl", `${onDay(line.toString(), "2023-06-01").slice(0, 60)}\n${onDay(line.toString(), "2023-06-01").slice(0, 90)}`), 400 * DAY);
    const kept: Record<string, string> = {
      // A user's JSON lines with a time first: another key follows.
      "2023-01-01.jsonl": '{"time":"2023-01-01T00:00:00.000Z","text":"dear diary"}\n',
      "2023-01-02.jsonl": '{"time":"2023-01-02T00:00:00.000Z","text":"dear dia',
      // A record of another day cut short: not this day's.
      "2023-01-03.jsonl": onDay(line.toString(), "2023-01-04").slice(0, 80),
      // Cut before its day, but of another day.
      "2023-01-05.jsonl": '{"time":"2023-02',
      // Pretty-printed JSON: its first line is `{`, its others are no record's.
      "2023-01-06.jsonl": '{\n  "time": "2023-01-06"\n}\n',
      // A torn record, then a user's line.
      "2023-01-07.jsonl": `${onDay(line.toString(), "2023-01-07").slice(0, 70)}\nnot json\n`,
      // The keys in another order than prepare's (name before bytes).
      "2023-01-08.jsonl": '{"time":"2023-01-08T00:00:00.000Z","source":"s","name":"n.png","by',
      // Whole, with a size prepare never writes: not a record, and not cut short either.
      "2023-01-09.jsonl": `{"time":"2023-01-09T00:00:00.000Z","source":"s","bytes":0,"sha256":"${"0".repeat(64)}","mime":"text/plain","name":"n","reused":false}\n`,
      // A hex digit prepare never writes (upper case) in the sha256.
      "2023-01-10.jsonl": `{"time":"2023-01-10T00:00:00.000Z","source":"s","bytes":5,"sha256":"ABC`,
      // A raw control character inside a string.
      "2023-01-11.jsonl": '{"time":"2023-01-11T00:00:00.000Z","source":"a\tb',
    };
    for (const [name, content] of Object.entries(kept)) age(write(ledger, name, content), 400 * DAY);
    const r = jan(["--json"]);
    expect(r.code, r.stderr).toBe(0);
    const doc = report(r);
    for (const f of [...torn, twice]) expect(exists(f), f).toBe(false);
    expect(doc.deleted.filter((e) => e.area === "ledger")).toHaveLength(torn.length + 1);
    expect(doc.deleted.every((e) => e.area === "ledger" && e.reason === "expired_ledger")).toBe(true);
    for (const [name, content] of Object.entries(kept)) expect(fs.readFileSync(path.join(ledger, name), "utf8"), name).toBe(content);
    expect(doc.skipped.map((e) => `${e.name}:${e.code}`).sort()).toEqual(Object.keys(kept).map((n) => `${n}:no_ledger_record`).sort());
  });

  it("appendLedger writes a record's keys in the order a torn line is told by, however the record was built", () => {
    const ledger = path.join(state, "ledger");
    const rec = { reused: false, name: "n.png", mime: "image/png", sha256: "0".repeat(64), bytes: 3, source: "/s", time: "2024-03-01T00:00:00.000Z" };
    appendLedger(ledger, rec);
    const line = fs.readFileSync(path.join(ledger, "2024-03-01.jsonl"), "utf8");
    expect(line).toBe(`{"time":"2024-03-01T00:00:00.000Z","source":"/s","bytes":3,"sha256":"${"0".repeat(64)}","mime":"image/png","name":"n.png","reused":false}\n`);
  });

  it("a line glued before the torn-line repair ({torn…}{record}) names what its last record names: the outbox file it published expires; a foreign prefix names nothing", () => {
    const ledger = path.join(state, "ledger");
    const glued = realRecordLine("glued.txt", "glued\n");
    const twice = realRecordLine("twice.txt", "twice twice\n");
    const chain = realRecordLine("chain.txt", "a long chain\n");
    const foreign = realRecordLine("foreign.txt", "foreign\n");
    const other = realRecordLine("other.txt", "other\n");
    for (const f of fs.readdirSync(ledger)) fs.rmSync(path.join(ledger, f));
    fs.rmSync(path.join(h.outbox, "other.txt"));
    const day = glued.slice('{"time":"'.length, '{"time":"'.length + 10);
    const lines = [
      `${other.slice(0, 50)}${glued}`,
      // Cut inside a string, right after a backslash: the next record still starts where its opening is.
      `${other.slice(0, 12)}${other.replace('"source":"', '"source":"C:\\\\').slice(0, 48)}${twice}`,
      // As many crashes as fit in a line, each cut at its opening: one pass over the line.
      `${'{"time":"'.repeat(7000)}${chain}`,
      // A user's whole object before it: not torn, so the record after it is not read.
      `{"time":"${day}T00:00:00.000Z","text":"x"}${foreign}`,
    ];
    write(ledger, `${day}.jsonl`, `${lines.join("\n")}\n`);
    const old = ["glued.txt", "twice.txt", "chain.txt", "foreign.txt"].map((n) => age(path.join(h.outbox, n), 20 * DAY));
    const r = jan(["--json"]);
    expect(r.code, r.stderr).toBe(0);
    const doc = report(r);
    expect(doc.deleted.map((e) => `${e.name}:${e.reason}`).sort()).toEqual(["chain.txt:expired", "glued.txt:expired", "twice.txt:expired"]);
    expect(exists(old[3]!)).toBe(true);
    expect(doc.skipped).toEqual([expect.objectContaining({ area: "outbox", name: "foreign.txt", code: "not_in_ledger" })]);
  });
});

describe("janitor: a crash's torn ledger tail (cut anywhere, NUL-filled) and the outbox file it published", () => {
  const ledger = () => path.join(state, "ledger");
  /**
   * Publishes `name` through the real CLI, then plays the crash: the file's
   * mtime (the record's time) set to `iso`, its record taken out of the
   * ledger and returned, with that time, for the test to write back cut.
   */
  function published(name: string, content: string, iso: string): { file: string; line: string } {
    const p = cli(["prepare", write(h.work, name, content)], { env: h.env });
    expect(p.code, p.stderr).toBe(0);
    const file = path.join(h.outbox, name);
    fs.utimesSync(file, new Date(iso), new Date(iso));
    let line: string | undefined;
    for (const f of fs.readdirSync(ledger())) {
      const lines = fs.readFileSync(path.join(ledger(), f), "utf8").split("\n");
      const ours = lines.find((l) => l.includes(`"name":${JSON.stringify(name)}`));
      if (ours === undefined) continue;
      line = ours;
      const rest = lines.filter((l) => l !== ours);
      if (rest.join("") === "") fs.rmSync(path.join(ledger(), f));
      else fs.writeFileSync(path.join(ledger(), f), rest.join("\n"));
    }
    expect(line).toBeDefined();
    return { file, line: line!.replace(/^\{"time":"[^"]*"/, `{"time":"${iso}"`) };
  }
  const dayFile = (iso: string, content: string | Buffer) => age(write(ledger(), `${iso.slice(0, 10)}.jsonl`, content), 400 * DAY);
  const cutAfter = (line: string, key: string) => line.slice(0, line.indexOf(`"${key}":`) + key.length + 3);
  const NULS = "\0".repeat(4096);

  it("an outbox file whose record a crash cut short, even to `{` or to NULs, ages by its own mtime (logged); two files one record could be are kept; nothing else goes", () => {
    const brace = published("brace.txt", "brace\n", "2024-01-01T10:00:00.123Z");
    dayFile("2024-01-01T", "{");
    // Cut inside its time's key, then (a later append starts a line of its own) a whole record of another file.
    const ti = published("ti.txt", "ti\n", "2024-01-02T10:00:00.000Z");
    const named = published("named.txt", "named\n", "2024-01-02T11:00:00.000Z");
    dayFile("2024-01-02T", `{"ti\n${named.line}\n`);
    const bytes = published("bytes.txt", "bytes\n", "2024-01-03T10:00:00.456Z");
    dayFile("2024-01-03T", `${cutAfter(bytes.line, "sha256")}`);
    // Cut inside its name, the rest of the block NULs (ext4 delayed allocation, XFS).
    const name = published("name-cut.txt", "name\n", "2024-01-04T10:00:00.000Z");
    dayFile("2024-01-04T", `${name.line.slice(0, name.line.indexOf('"name":"') + 12)}${NULS}`);
    // Nothing of it but NULs.
    const nul = published("zeros.txt", "zeros\n", "2024-01-05T10:00:00.000Z");
    dayFile("2024-01-05T", NULS);
    // Whole, its newline lost to NULs: read as the record it is.
    const whole = published("whole.txt", "whole\n", "2024-01-06T10:00:00.000Z");
    dayFile("2024-01-06T", `${whole.line}${NULS}`);
    // One record cut short, two files of its day that it could be: neither is known to be prepare's.
    const twinA = published("twin-a.txt", "a\n", "2024-01-07T10:00:00.000Z");
    const twinB = published("twin-b.txt", "b\n", "2024-01-07T12:00:00.000Z");
    dayFile("2024-01-07T", '{"time":"2024-01-07T1');
    // Records that do not fit: another millisecond, another size.
    const misfit = published("misfit.txt", "misfit\n", "2024-01-08T10:00:00.000Z");
    dayFile("2024-01-08T", `${misfit.line.replace("10:00:00.000Z", "10:00:00.001Z").slice(0, 60)}`);
    const resized = published("resized.txt", "resized\n", "2024-01-09T10:00:00.000Z");
    dayFile("2024-01-09T", cutAfter(resized.line.replace('"bytes":8,', '"bytes":9,'), "sha256"));
    // Two files published in the same millisecond, told apart by the size the record holds.
    const sizedA = published("sized-a.txt", "a\n", "2024-01-10T10:00:00.000Z");
    const sizedB = published("sized-b.txt", "bbbb\n", "2024-01-10T10:00:00.000Z");
    dayFile("2024-01-10T", cutAfter(sizedB.line, "sha256"));
    // Cut after its whole name: that file, when its time fits too.
    const wholeName = published("whole-name.txt", "whole name\n", "2024-01-11T10:00:00.000Z");
    dayFile("2024-01-11T", cutAfter(wholeName.line, "reused"));
    const wrongTime = published("wrong-time.txt", "wrong time\n", "2024-01-12T10:00:00.000Z");
    dayFile("2024-01-12T", cutAfter(wrongTime.line.replace("10:00:00.000Z", "10:00:00.001Z"), "reused"));
    // Two files of the same millisecond and size, told apart by the start of the name the record holds.
    const pairX = published("pair-x.txt", "pair\n", "2024-01-13T10:00:00.000Z");
    const pairY = published("pair-y.txt", "riap\n", "2024-01-13T10:00:00.000Z");
    dayFile("2024-01-13T", pairY.line.slice(0, pairY.line.indexOf('"name":"') + '"name":"pair-y'.length));
    // A file no record of its day could be (no day file at all).
    const stray = age(write(h.outbox, "stray.txt", "stray\n"), 400 * DAY);
    // Young: its torn record fits, it is not due.
    const youngIso = new Date(Date.now() - DAY).toISOString();
    const young = published("young.txt", "young\n", youngIso);
    write(ledger(), `${youngIso.slice(0, 10)}.jsonl`, "{");

    const expectDeleted = (doc: JanitorReport) => {
      expect(doc.deleted.filter((e) => e.area === "outbox").map((e) => `${e.name}:${e.reason}`).sort()).toEqual([
        "brace.txt:expired_torn_record",
        "bytes.txt:expired_torn_record",
        "name-cut.txt:expired_torn_record",
        "named.txt:expired",
        "pair-y.txt:expired_torn_record",
        "sized-b.txt:expired_torn_record",
        "ti.txt:expired_torn_record",
        "whole-name.txt:expired_torn_record",
        "whole.txt:expired",
        "zeros.txt:expired_torn_record",
      ]);
      expect(doc.skipped.filter((e) => e.area === "outbox").map((e) => `${e.name}:${e.code}`).sort()).toEqual(
        ["misfit.txt", "pair-x.txt", "resized.txt", "sized-a.txt", "stray.txt", "twin-a.txt", "twin-b.txt", "wrong-time.txt"].map((n) => `${n}:not_in_ledger`),
      );
      const twoFit = "no whole ledger record names it; a record of its day that a crash cut short fits it, but another file too, and which of them prepare published is not known: kept (the watch guard quarantines it; remove it by hand if it is prepare's)";
      expect(doc.skipped.filter((e) => e.reason === twoFit).map((e) => e.name)).toEqual(["twin-a.txt", "twin-b.txt"]);
      // Every day file but the young one's held only prepare's lines: the ledger's, and old.
      expect(doc.deleted.filter((e) => e.area === "ledger").map((e) => e.name).sort()).toEqual(["01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "11", "12", "13"].map((d) => `2024-01-${d}.jsonl`));
      expect(doc.skipped.filter((e) => e.area === "ledger")).toEqual([]);
      expect(doc.errors).toEqual([]);
    };
    const dry = jan(["--json", "--dry-run"]);
    expect(dry.code, dry.stderr).toBe(0);
    expectDeleted(report(dry));
    expect(dry.stderr).toContain("media-outbox: janitor: would delete outbox/brace.txt by its own mtime (2024-01-01T10:00:00.123Z): no well-formed ledger record names it, and a record of its day that a crash cut short fits it and no other file\n");
    expect(exists(brace.file)).toBe(true);

    const r = jan(["--json", "--log-json"]);
    expect(r.code, r.stderr).toBe(0);
    expectDeleted(report(r));
    expect(r.stderr).toContain("media-outbox: janitor: deleted outbox/zeros.txt by its own mtime (2024-01-05T10:00:00.000Z): ");
    // Logged with the place of the record that accounted for it.
    const logged = r.stderr.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.event === "janitor_torn_record");
    expect(logged.map((l) => `${l.name} ${l.ledger}:${l.at}`).sort()).toEqual(["brace.txt 2024-01-01.jsonl:0", "bytes.txt 2024-01-03.jsonl:0", "name-cut.txt 2024-01-04.jsonl:0", "pair-y.txt 2024-01-13.jsonl:0", "sized-b.txt 2024-01-10.jsonl:0", "ti.txt 2024-01-02.jsonl:0", "whole-name.txt 2024-01-11.jsonl:0", "zeros.txt 2024-01-05.jsonl:0"]);
    for (const f of [brace, ti, named, bytes, name, nul, whole]) expect(exists(f.file), f.file).toBe(false);
    // Nothing else was removed, nothing left in staging.
    expect(fs.readdirSync(h.outbox).sort()).toEqual(["misfit.txt", "pair-x.txt", "resized.txt", "sized-a.txt", "stray.txt", "twin-a.txt", "twin-b.txt", "wrong-time.txt", "young.txt"]);
    expect(exists(sizedB.file) || exists(wholeName.file) || exists(pairY.file)).toBe(false);
    for (const f of [twinA, twinB, misfit, resized, sizedA, pairX, young]) expect(fs.readFileSync(f.file, "utf8")).toMatch(/\n$/);
    expect(fs.readFileSync(stray, "utf8")).toBe("stray\n");
    expect(fs.readdirSync(ledger())).toEqual([`${youngIso.slice(0, 10)}.jsonl`]);
    expect(fs.readdirSync(path.join(state, "staging"))).toEqual([]);
  });

  it("a record's fit is looked for among at most 10000 files of one time: past that, one fitting file among them is not known to be the only one, and is kept", () => {
    const iso = "2024-04-01T10:00:00.000Z";
    const t = new Date(iso);
    // Sorted by time, then name: a-fit first, z-fit past the 10000 looked at; both of the record's size, the others not.
    const files = ["a-fit.txt", "z-fit.txt", ...Array.from({ length: 10_000 }, (_, i) => `m-${String(i).padStart(5, "0")}.txt`)];
    for (const n of files) fs.utimesSync(write(h.outbox, n, n.includes("fit") ? "22" : "1"), t, t);
    const torn = `{"time":"${iso}","source":"/s","bytes":2,"sha256":"`;
    dayFile(iso, torn);
    const r = jan(["--json"]);
    expect(r.code, r.stderr).toBe(0);
    const doc = report(r);
    expect(doc.deleted.filter((e) => e.area === "outbox")).toEqual([]);
    expect(fs.readdirSync(h.outbox)).toHaveLength(files.length);
    // Without z-fit and one other, every file of that time is looked at: a-fit is the only one of its size, and expires.
    fs.rmSync(path.join(h.outbox, "m-00000.txt"));
    fs.rmSync(path.join(h.outbox, "z-fit.txt"));
    // The first run deleted the day file (old, and prepare's): written again.
    dayFile(iso, torn);
    const again = report(jan(["--json"]));
    expect(again.deleted.filter((e) => e.area === "outbox").map((e) => `${e.name}:${e.reason}`)).toEqual(["a-fit.txt:expired_torn_record"]);
  });

  it("a day file ending in NULs after its last complete line is torn, not damaged: its records count, and it is the ledger's; NULs after anything else are not", () => {
    const rec = (day: string, name: string) => JSON.stringify({ time: `${day}T00:00:00.000Z`, source: "s", bytes: 1, sha256: "0".repeat(64), mime: "text/plain", name, reused: false });
    const ours = {
      "2024-02-01.jsonl": `${rec("2024-02-01", "a.txt")}\n${NULS}`,
      // NULs, then the next append's line (it starts with a newline after them).
      "2024-02-02.jsonl": `${rec("2024-02-02", "b.txt")}\n${NULS}\n${rec("2024-02-02", "c.txt")}\n`,
      "2024-02-03.jsonl": `${rec("2024-02-03", "d.txt").slice(0, 50)}${NULS}\n${rec("2024-02-03", "e.txt")}\n`,
    };
    const kept = {
      "2024-02-04.jsonl": `hello${NULS}`,
      "2024-02-05.jsonl": `${NULS}hello\n`,
      "2024-02-06.jsonl": `{"time":"2024-02-06T00:00:00.000Z","text":"x"}${NULS}`,
    };
    for (const [n, c] of Object.entries({ ...ours, ...kept })) age(write(ledger(), n, c), 400 * DAY);
    for (const n of ["a.txt", "b.txt", "c.txt", "e.txt"]) age(write(h.outbox, n, "x"), 20 * DAY);
    const r = jan(["--json"]);
    expect(r.code, r.stderr).toBe(0);
    const doc = report(r);
    expect(doc.deleted.map((e) => `${e.area}/${e.name}:${e.reason}`).sort()).toEqual([
      ...Object.keys(ours).map((n) => `ledger/${n}:expired_ledger`),
      ...["a.txt", "b.txt", "c.txt", "e.txt"].map((n) => `outbox/${n}:expired`),
    ].sort());
    expect(doc.skipped.map((e) => `${e.area}/${e.name}:${e.code}`).sort()).toEqual(Object.keys(kept).map((n) => `ledger/${n}:no_ledger_record`));
    for (const [n, c] of Object.entries(kept)) expect(fs.readFileSync(path.join(ledger(), n), "utf8")).toBe(c);
    expect(fs.readdirSync(ledger()).sort()).toEqual(Object.keys(kept));
  });

  it("a glued line longer than 64 KiB is read piece by piece (bounded memory, one pass): its last record counts; one that is no glued line of ours is not read, and says so, escaped, where it starts", () => {
    const day = "2024-03-01";
    const rec = (name: string) => JSON.stringify({ time: `${day}T00:00:00.000Z`, source: "/s", bytes: 1, sha256: "0".repeat(64), mime: "text/plain", name, reused: false });
    const first = `${rec("seen.txt")}\n`;
    const MiB = 1024 * 1024;
    // Adversarial and of ours: 200000 openings a crash cut short (1.8 MB, one of them across the reader's 1 MiB chunks), then a record.
    const openings = `${'{"time":"'.repeat(200_000)}${rec("hidden\u001b[31m.txt")}`;
    // A record cut short, 2 MiB of NULs (ext4, XFS: the data never written), then a record glued by a version before the repair.
    const nulled = `{"time":"${day}T00:00:00.0${"\0".repeat(2 * MiB)}${rec("after-nuls.txt")}`;
    // A whole record whose newline a crash lost to 2 MiB of NULs; the next append started a line of its own.
    const whole = `${rec("whole.txt")}${"\0".repeat(2 * MiB)}`;
    // None of ours: a piece over 64 KiB (2 MiB of `{`, or of an opening's prefix), a user's line, NULs followed by more.
    const braces = `${"{".repeat(2 * MiB)}${rec("braces.txt")}`;
    const prefixes = `${'{"time"'.repeat(300_000)}${rec("prefixes.txt")}`;
    const foreign = `{"time":"${day}T00:00:00.000Z","text":"${"x".repeat(70_000)}"}${rec("foreign.txt")}`;
    const nulThenMore = `{"time":"${"\0".repeat(70_000)}x${rec("nul-then-more.txt")}`;
    for (const l of [openings, nulled, whole, braces, prefixes, foreign, nulThenMore]) expect(Buffer.byteLength(l)).toBeGreaterThan(64 * 1024);
    const lines = [first, ...[openings, nulled, whole, braces, prefixes, foreign, nulThenMore].map((l) => `${l}\n`)];
    write(ledger(), `${day}.jsonl`, lines.join(""));
    const read = ["hidden\u001b[31m.txt", "after-nuls.txt", "whole.txt", "seen.txt"];
    const unread = ["braces.txt", "prefixes.txt", "foreign.txt", "nul-then-more.txt"];
    for (const n of [...read, ...unread]) age(write(h.outbox, n, "x"), 20 * DAY);
    const r = jan(["--json"]);
    expect(r.code, r.stderr).toBe(0);
    const doc = report(r);
    const firstUnread = Buffer.byteLength(lines.slice(0, 4).join(""));
    const message = `4 lines (the first) starting at byte ${firstUnread} are longer than the 64 KiB a record can be, and not lines glued before the torn-line repair (records a crash cut short, then one more, each within 64 KiB): not read, so they name nothing`;
    expect(doc.warnings).toEqual([{ area: "ledger", name: `${day}.jsonl`, message }]);
    expect(r.stderr).toContain(`media-outbox: janitor: ledger/${day}.jsonl: ${message}\n`);
    expect(r.stderr).not.toContain("\u001b");
    expect(doc.deleted.filter((e) => e.area === "outbox").map((e) => `${e.name}:${e.reason}`).sort()).toEqual(["after-nuls.txt", "hidden\\x1b[31m.txt", "seen.txt", "whole.txt"].map((n) => `${n}:expired`).sort());
    expect(doc.skipped.map((e) => `${e.area}/${e.name}:${e.code}`).sort()).toEqual(unread.map((n) => `outbox/${n}:not_in_ledger`).sort());
    expect(fs.readdirSync(h.outbox).sort()).toEqual([...unread].sort());
  });

  it("a long line reads the same however it is fed (an opening, or NULs before one, split across reads anywhere): as the short line would", () => {
    const day = "2024-03-03";
    const rec = (name: string) => JSON.stringify({ time: `${day}T00:00:00.000Z`, source: "/s", bytes: 1, sha256: "0".repeat(64), mime: "text/plain", name, reused: false });
    const lines: [string, string | undefined][] = [
      [`{"time":"{"time":"${day}T${rec("a")}`, "a"],
      [`{"ti\0\0${rec("b")}`, "b"],
      [`${rec("c")}\0\0\0`, "c"],
      [`\0\0${rec("d")}`, "d"],
      [rec("e"), "e"],
      [`{"time":"x${rec("f")}`, undefined],
      [`{"time":"${day}T00\0\0x${rec("g")}`, undefined],
      [`{"time":"2024-03-04T${rec("h")}`, undefined],
    ];
    for (const [line, name] of lines) {
      const bytes = Buffer.from(line);
      // As a short line reads.
      expect(recordOfLine(line, LEDGER_SHAPE, parseLedgerLine, day)?.name, line).toBe(name);
      for (let i = 0; i <= bytes.length; i++) {
        for (const j of [i + 1, i + 3, i + 8, bytes.length].map((k) => Math.min(k, bytes.length))) {
          const long = new LongLine(LEDGER_SHAPE, day, 4096);
          for (const part of [bytes.subarray(0, i), bytes.subarray(i, j), bytes.subarray(j)]) long.feed(part);
          const text = long.line();
          expect(text === undefined ? undefined : recordOfLine(text, LEDGER_SHAPE, parseLedgerLine, day)?.name, `${JSON.stringify(line)} cut at ${i}, ${j}`).toBe(name);
        }
      }
    }
  });

  it("a long glued line cut short at the end of the day file (its tail): its last record is read when NULs end it, and the day file is the ledger's", () => {
    const day = "2024-03-02";
    const rec = JSON.stringify({ time: `${day}T00:00:00.000Z`, source: "/s", bytes: 1, sha256: "0".repeat(64), mime: "text/plain", name: "tail.txt", reused: false });
    age(write(ledger(), `${day}.jsonl`, `${'{"time":"'.repeat(10_000)}${rec}${"\0".repeat(100_000)}`), 400 * DAY);
    age(write(h.outbox, "tail.txt", "x"), 20 * DAY);
    const doc = report(jan(["--json"]));
    expect(doc.warnings).toEqual([]);
    expect(doc.deleted.map((e) => `${e.area}/${e.name}:${e.reason}`).sort()).toEqual([`ledger/${day}.jsonl:expired_ledger`, "outbox/tail.txt:expired"]);
  });
});

describe("janitor: a state directory of its own", () => {
  const notes = () => path.join(h.home, "notes");
  /** ~/notes as the state: the user's own files, an old ledger/ of theirs, and a file the outbox's ledger names. */
  function notesAsState(extra: Record<string, string> = {}) {
    const dir = notes();
    fs.mkdirSync(path.join(dir, "ledger"), { recursive: true, mode: 0o700 });
    fs.chmodSync(dir, 0o700);
    const files = { "todo.txt": "milk\n", ...extra };
    for (const [name, content] of Object.entries(files)) write(dir, name, content);
    const day = age(write(path.join(dir, "ledger"), "2025-01-01.jsonl", "{}\n"), 400 * DAY);
    recordPublished(path.join(dir, "ledger"), "pub.png", 1);
    const pub = age(write(h.outbox, "pub.png", "x"), 20 * DAY);
    return { env: { ...h.env, MEDIA_OUTBOX_STATE_DIR: dir }, kept: [day, pub, ...Object.keys(files).map((n) => path.join(dir, n))] };
  }
  const expectUntouched = (before: string[]) => {
    const now = fs.readdirSync(notes()).sort();
    expect(now).toEqual(before);
  };

  it("refuses (exit 2, state_unsafe) a state directory holding entries media-outbox does not make, naming them escaped: janitor, prepare, status and quarantine; nothing is deleted or made", () => {
    const { env, kept } = notesAsState({ "expenses\u001b[31m.csv": "12.5\n" });
    const before = fs.readdirSync(notes()).sort();
    const src = write(h.work, "new.txt", "new\n");
    const runs = { janitor: ["janitor", "--json"], prepare: ["prepare", src], status: ["status"], quarantine: ["quarantine", "list"] };
    for (const [what, args] of Object.entries(runs)) {
      const r = cli(args, { env });
      expect(r.code, `${what}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toContain(`media-outbox: state_unsafe: state directory ${notes()} is not a directory of its own: it holds `);
      expect(r.stderr).toContain("which media-outbox does not make (only staging/, ledger/, quarantine/, .media-outbox-… entries and the folders the configuration names inside it)");
      expect(r.stderr).toContain("leave it unset (the default is");
      // The escape sequence never reaches the terminal raw.
      expect(r.stderr).not.toContain("\u001b");
      expect(r.stderr).toMatch(/todo\.txt|expenses\\x1b\[31m\.csv/);
    }
    for (const f of kept) expect(exists(f), f).toBe(true);
    expect(fs.readdirSync(h.outbox)).toEqual(["pub.png"]);
    expectUntouched(before);
  });

  it("names at most three of them, and a name that is not UTF-8 by its bytes", () => {
    const { env } = notesAsState({ "a.txt": "", "b.txt": "", "c.txt": "" });
    const r = jan([], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/it holds [^,]+, [^,]+, [^,]+ and more, which media-outbox does not make/);
    fs.rmSync(notes(), { recursive: true });
    fs.mkdirSync(notes(), { mode: 0o700 });
    fs.writeFileSync(Buffer.concat([Buffer.from(`${notes()}/`), Buffer.from([0x6e, 0xff, 0x2e, 0x74])]), "");
    const raw = jan([], env);
    expect(raw.code).toBe(2);
    expect(raw.stderr).toContain("it holds n\\xff.t, which media-outbox does not make");
  });

  it("accepts what media-outbox makes there: staging/, ledger/, quarantine/, the watch's lock directory and what it moved aside, earlier versions' lock files", () => {
    for (const name of [".media-outbox-watch", ".media-outbox-junk-0123456789ab"]) fs.mkdirSync(path.join(state, name), { mode: 0o700 });
    for (const name of [".media-outbox-watch.lock", ".media-outbox-lock-1-ab", ".media-outbox-stale-1-ab"]) write(state, name, "");
    const gone = oldFile(h.outbox, "old.png", 20 * DAY);
    const r = jan(["--json"]);
    expect(r.code, r.stderr).toBe(0);
    expect(exists(gone)).toBe(false);
    const p = cli(["prepare", write(h.work, "fresh.txt", "fresh\n")], { env: h.env });
    expect(p.code, p.stderr).toBe(0);
  });
});

describe("janitor --schedule", () => {
  it.each(["SIGTERM", "SIGINT"] as const)("runs on a six-field every-second expression, logs each run, stops cleanly on %s", async (stopSignal) => {
    oldFile(h.outbox, "old.png", 20 * DAY);
    const child = spawn(process.execPath, [BIN, "janitor", "--schedule", "* * * * * *", "--tz", "UTC"], { env: h.env });
    let stderr = "";
    let stdout = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    const runs = () => stderr.split("\n").filter((l) => l.includes('"event":"janitor_run"'));
    const twoRuns = new Promise<void>((resolve) => {
      child.stderr.on("data", (d: Buffer) => {
        stderr += d.toString();
        if (runs().length >= 2) resolve();
      });
    });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
    await twoRuns;
    child.kill(stopSignal);
    const { code, signal } = await exited;
    expect(signal).toBeNull();
    expect(code).toBe(0);
    expect(stdout).toBe("");
    const [first, second] = runs().map((l) => JSON.parse(l) as { event: string; deleted: number; scanned: number; success: boolean; msg: string });
    expect(first).toMatchObject({ event: "janitor_run", deleted: 1, success: true });
    expect(second).toMatchObject({ event: "janitor_run", deleted: 0, success: true });
    expect(first!.msg).toMatch(/^janitor: scanned 2, deleted 1/);
    expect(stderr).toMatch(new RegExp(`"event":"janitor_stopping","signal":"${stopSignal}"`));
    expect(stderr).toMatch(/"event":"janitor_stopped"/);
    expect(exists(path.join(h.outbox, "old.png"))).toBe(false);
  });

  it("an invalid cron expression is exit 2", () => {
    const r = jan(["--schedule", "61 * * * *"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/usage error: --schedule: invalid cron expression/);
    expect(jan(["--schedule", "* * *"]).code).toBe(2);
  });

  it("an unknown time zone is exit 2", () => {
    const r = jan(["--schedule", "0 3 * * *", "--tz", "Mars/Olympus"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/usage error: --tz: unknown time zone "Mars\/Olympus"/);
  });

  it("--tz without --schedule is a usage error", () => {
    expect(jan(["--tz", "UTC"]).code).toBe(2);
  });
});
