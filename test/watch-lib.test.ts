// Library parts of the watcher that are easier to pin down directly.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { appendLedger } from "../src/state/ledger.js";
import { LedgerIndex } from "../src/watch/ledger-index.js";
import { clashName } from "../src/watch/quarantine.js";
import { isIgnoredDropName, receiptNamesFit } from "../src/watch/receipt.js";
import { WorkQueue } from "../src/watch/work-queue.js";

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "mo-watch-lib-"));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const record = (name: string, sha256: string, bytes = 3) => ({ time: new Date().toISOString(), source: name, name, bytes, sha256, mime: "text/plain", reused: false });

describe("LedgerIndex", () => {
  it("follows appended records and skips a torn last line until it is complete", () => {
    const index = new LedgerIndex(dir);
    index.refresh();
    expect(index.lookup("a.txt")).toBeUndefined();
    appendLedger(dir, record("a.txt", "aa"));
    index.refresh();
    expect(index.lookup("a.txt")).toEqual([{ bytes: 3, sha256: "aa" }]);
    const day = path.join(dir, fs.readdirSync(dir)[0]!);
    const line = JSON.stringify(record("b.txt", "bb"));
    fs.appendFileSync(day, line.slice(0, 10));
    index.refresh();
    expect(index.lookup("b.txt")).toBeUndefined();
    fs.appendFileSync(day, `${line.slice(10)}\n`);
    index.refresh();
    expect(index.lookup("b.txt")).toEqual([{ bytes: 3, sha256: "bb" }]);
  });

  it("keeps every version of a reused name, once each", () => {
    appendLedger(dir, record("a.txt", "aa"));
    appendLedger(dir, record("a.txt", "aa"));
    appendLedger(dir, record("a.txt", "cc", 5));
    const index = new LedgerIndex(dir);
    index.refresh();
    expect(index.lookup("a.txt")).toEqual([
      { bytes: 3, sha256: "aa" },
      { bytes: 5, sha256: "cc" },
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
