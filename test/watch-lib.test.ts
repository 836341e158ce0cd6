// Library parts of the watcher that are easier to pin down directly.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadConfig } from "../src/config/config.js";
import { FatalError } from "../src/core/errors.js";
import { withRegularFile } from "../src/core/regular-file.js";
import { appendLedger } from "../src/state/ledger.js";
import { LedgerIndex } from "../src/watch/ledger-index.js";
import { clashName } from "../src/watch/quarantine.js";
import { isIgnoredDropName, receiptNamesFit } from "../src/watch/receipt.js";
import { Watch } from "../src/watch/watch.js";
import { type WatchEvent, errorText } from "../src/watch/events.js";
import { WorkQueue } from "../src/watch/work-queue.js";
import { ROOT, makeHome, png } from "./helpers.js";
import { waitUntil } from "./watch-helpers.js";

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "mo-watch-lib-"));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A well-formed sha256 from a short tag: the ledger takes only records prepare could have written. */
const sha = (tag: string) => tag.padEnd(64, "0");
const record = (name: string, tag: string, bytes = 3) => ({ time: new Date().toISOString(), source: name, name, bytes, sha256: sha(tag), mime: "text/plain", reused: false });

describe("LedgerIndex", () => {
  it("follows appended records and skips a torn last line until it is complete", () => {
    const index = new LedgerIndex(dir);
    index.refresh();
    expect(index.lookup("a.txt")).toBeUndefined();
    appendLedger(dir, record("a.txt", "aa"));
    index.refresh();
    expect(index.lookup("a.txt")).toEqual([{ bytes: 3, sha256: sha("aa") }]);
    const day = path.join(dir, fs.readdirSync(dir)[0]!);
    const line = JSON.stringify(record("b.txt", "bb"));
    fs.appendFileSync(day, line.slice(0, 10));
    index.refresh();
    expect(index.lookup("b.txt")).toBeUndefined();
    fs.appendFileSync(day, `${line.slice(10)}\n`);
    index.refresh();
    expect(index.lookup("b.txt")).toEqual([{ bytes: 3, sha256: sha("bb") }]);
  });

  it("keeps every version of a reused name, once each", () => {
    appendLedger(dir, record("a.txt", "aa"));
    appendLedger(dir, record("a.txt", "aa"));
    appendLedger(dir, record("a.txt", "cc", 5));
    const index = new LedgerIndex(dir);
    index.refresh();
    expect(index.lookup("a.txt")).toEqual([
      { bytes: 3, sha256: sha("aa") },
      { bytes: 5, sha256: sha("cc") },
    ]);
  });

  it("forgets a day file the janitor removed", () => {
    appendLedger(dir, record("a.txt", "aa"));
    const index = new LedgerIndex(dir);
    index.refresh();
    for (const f of fs.readdirSync(dir)) fs.rmSync(path.join(dir, f));
    index.refresh();
    expect(index.lookup("a.txt")).toBeUndefined();
  });
});

describe("drop and quarantine names", () => {
  it("ignores dot-names, temporaries and receipts", () => {
    for (const n of [".x.png", "a.part", "a.TMP", "a.crdownload", "a.png.media", "a.png.refused"]) expect(isIgnoredDropName(n)).toBe(true);
    for (const n of ["a.png", "media", "a.mediax"]) expect(isIgnoredDropName(n)).toBe(false);
  });

  it("knows when a receipt name would pass NAME_MAX", () => {
    expect(receiptNamesFit("x".repeat(247))).toBe(true);
    expect(receiptNamesFit("x".repeat(248))).toBe(false);
  });

  it("puts the clash number before the extension and stays within NAME_MAX", () => {
    expect(clashName("photo.png", 2)).toBe("photo~2.png");
    expect(clashName("noext", 3)).toBe("noext~3");
    expect(clashName(".hidden", 2)).toBe(".hidden~2");
    const long = clashName(`${"é".repeat(126)}.png`, 12);
    expect(Buffer.byteLength(long)).toBeLessThanOrEqual(255);
    expect(long.endsWith("~12.png")).toBe(true);
  });
});

describe("log text and hashing", () => {
  it("escapes an error's message once: a FatalError's was escaped when it was built", () => {
    expect(errorText(new Error("a\nb\\c"))).toBe("a\\x0ab\\\\c");
    expect(errorText(new FatalError("usage", "a\\x0ab"))).toBe("a\\x0ab");
  });

  it("opens only a regular file, never a link or a FIFO", () => {
    const file = path.join(dir, "f");
    fs.writeFileSync(file, "abc");
    fs.symlinkSync(file, path.join(dir, "link"));
    execFileSync("mkfifo", [path.join(dir, "fifo")]);
    const size = (name: string) => withRegularFile(path.join(dir, name), (_fd, st) => st.size);
    expect(size("f")).toBe(3);
    expect(size("link")).toBeUndefined();
    expect(size("fifo")).toBeUndefined();
    expect(size("missing")).toBeUndefined();
  });
});

describe("WorkQueue", () => {
  it("takes lanes in turn, never runs more than its limit, and finishes begun jobs on close", async () => {
    const queue = new WorkQueue(2, (err) => {
      throw err;
    });
    const order: string[] = [];
    let running = 0;
    let peak = 0;
    const job = (label: string) => async () => {
      running++;
      peak = Math.max(peak, running);
      await new Promise((r) => setTimeout(r, 5));
      order.push(label);
      running--;
    };
    for (let i = 0; i < 20; i++) queue.push("flood", job(`flood${i}`));
    queue.push("other", job("other"));
    await new Promise((r) => setTimeout(r, 40));
    await queue.close();
    expect(peak).toBeLessThanOrEqual(2);
    expect(running).toBe(0);
    expect(order.indexOf("other")).toBeLessThan(4);
    expect(order.length).toBeLessThan(21);
    expect(queue.push("late", job("late"))).toBe(false);
  });
});

describe("Watch (library)", () => {
  let h: ReturnType<typeof makeHome>;
  let drop: string;
  const watches: Watch[] = [];
  beforeEach(() => {
    h = makeHome();
    drop = path.join(h.home, "drop");
  });
  afterEach(async () => {
    for (const w of watches.splice(0)) await w.stop();
    h.cleanup();
  });

  /** Event names of the log lines written so far. */
  let logged: string[];
  const newWatch = (onEvent?: (e: WatchEvent) => void, maxInFlight?: number, dropWorker?: string) => {
    logged = [];
    const record = (obj: object) => void logged.push(String((obj as { event?: unknown }).event));
    const logger = { info: record, warn: record, error: record, debug: record };
    const config = loadConfig({ env: h.env, watch: { drop: [drop], settle: "50ms" } });
    const w = new Watch({ config, logger, rescanMs: 100, ...(onEvent ? { onEvent } : {}), ...(maxInFlight ? { maxInFlight } : {}), ...(dropWorker ? { dropWorker } : {}) });
    watches.push(w);
    return w;
  };

  it("a library caller's drop folder with a control character is refused before anything is made; an emoji's variation selector is a name like any other", () => {
    const config = loadConfig({ env: h.env, watch: { drop: [drop] } });
    const bad = path.join(h.home, "drop\x07");
    expect(() => new Watch({ config: { ...config, watch: { ...config.watch, drop: [bad] } } })).toThrow(/^drop folder ".*\/drop\\x07" \(shown escaped\) has control or line-separator characters in its path: rename the folder/);
    expect(fs.existsSync(bad)).toBe(false);
    expect(fs.existsSync(h.outbox)).toBe(false);
    const hearts = path.join(h.home, "photos \u2764\ufe0f");
    expect(loadConfig({ env: h.env, watch: { drop: [hearts] } }).watch.drop).toEqual([hearts]);
  });

  it("answers every file that was still queued when its drop folder went away and came back", async () => {
    fs.mkdirSync(drop, { mode: 0o700 });
    const names = Array.from({ length: 6 }, (_, i) => `f${i}.png`);
    for (const [i, name] of names.entries()) fs.writeFileSync(path.join(drop, name), png(i));
    const away = path.join(h.home, "drop-away");
    let moved = false;
    // One file at a time: when the first is answered, the others are still queued.
    const w = newWatch((e) => {
      if (e.event === "published" && !moved) {
        moved = true;
        fs.renameSync(drop, away);
      }
    }, 1);
    await w.start();
    // The next queued file to begin finds the folder gone, which drops the rest of the queue.
    await waitUntil(() => logged.includes("drop_lost"), "drop_lost", 10_000);
    expect(names.filter((name) => fs.existsSync(path.join(away, `${name}.media`)))).toHaveLength(1);
    fs.renameSync(away, drop);
    const answered = (name: string) => fs.existsSync(path.join(drop, `${name}.media`));
    await waitUntil(() => names.every(answered), "a receipt for every file", 10_000);
  });

  const answeringWorker = path.join(ROOT, "test/fixtures/answering-drop-worker.cjs");
  const asked = (name: string) => fs.readdirSync(h.home).filter((n) => n.startsWith(`asked-${name}-`)).length;

  it("a file that changed while it was copied is no verdict on it: no receipt, it stays and is tried again", async () => {
    fs.mkdirSync(drop, { mode: 0o700 });
    fs.writeFileSync(path.join(drop, "growing.txt"), "changing, still being written\n");
    const events: WatchEvent[] = [];
    const w = newWatch((e) => events.push(e), undefined, answeringWorker);
    await w.start();
    // Asked a second time: the first answer left it in place, for a later try.
    await waitUntil(() => asked("growing.txt") >= 2, "the file tried again", 20_000);
    expect(fs.readFileSync(path.join(drop, "growing.txt"), "utf8")).toBe("changing, still being written\n");
    expect(fs.readdirSync(drop).filter((n) => n.endsWith(".refused") || n.endsWith(".media"))).toEqual([]);
    expect(events.filter((e) => e.event !== "ready")).toEqual([]);
    expect(logged).toContain("drop_deferred");
  });

  it("a file written to after it was copied keeps what was not published: it stays beside its receipt", async () => {
    fs.mkdirSync(drop, { mode: 0o700 });
    fs.writeFileSync(path.join(drop, "notes.txt"), "append: the first part\n");
    const events: WatchEvent[] = [];
    const w = newWatch((e) => events.push(e), undefined, answeringWorker);
    await w.start();
    await waitUntil(() => events.find((e) => e.event === "published" && e.name === "notes.txt"), "notes.txt answered", 20_000);
    expect(fs.existsSync(path.join(drop, "notes.txt.media"))).toBe(true);
    expect(fs.readFileSync(path.join(drop, "notes.txt"), "utf8")).toBe("append: the first part\nwritten after the copy\n");
    expect(logged).toContain("drop_kept");
  });

  it("leaves no watch and no timer running when stopped during start()", async () => {
    fs.mkdirSync(drop, { mode: 0o700 });
    const counts = () => {
      const types = process.getActiveResourcesInfo();
      return { timers: types.filter((t) => t === "Timeout").length, watches: types.filter((t) => t === "FSEventWrap").length };
    };
    // A closed handle leaves the list on a later turn of the event loop (the last test's watches, say).
    const settledCounts = async () => {
      await new Promise((r) => setTimeout(r, 100));
      return counts();
    };
    const before = await settledCounts();
    const events: string[] = [];
    const w = newWatch((e) => events.push(e.event));
    const started = w.start();
    await w.stop();
    await started.catch(() => {});
    const after = await settledCounts();
    expect(after.timers).toBeLessThanOrEqual(before.timers);
    expect(after.watches).toBeLessThanOrEqual(before.watches);
    expect(events).toEqual(["stopped"]);
  });
});
