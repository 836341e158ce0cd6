import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PARALLEL_SCAN_FROM, UNIT, createTextCheck, judgeUnit, liveTextWorkers } from "../src/prepare/text-check.js";
import { TextScanner, type TextVerdict, mergeVerdicts } from "../src/prepare/text.js";
import { ROOT, cli, makeHome, write } from "./helpers.js";

const MiB = 1024 * 1024;
const WORKER = path.join(ROOT, "dist", "workers", "text-scan.js");
const GITHUB = "ghp_R8xk2LmQ9vTz4WpN7bYc3HsJ6dFa1GqE5uKo";
const filler = (n: number) => Buffer.from("lorem ipsum dolor sit amet\n".repeat(Math.ceil(n / 27)).slice(0, n));

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "mo-textcheck-"));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

function sequential(bytes: Buffer): TextVerdict {
  const scanner = new TextScanner();
  for (let off = 0; off < bytes.length; off += MiB) scanner.push(bytes.subarray(off, off + MiB));
  return scanner.finish();
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Writes `bytes` to a file the way staging does, chunk by chunk, telling the
 * check after each chunk. Staging is slowed down so that a worker has started
 * well before it ends: the worker's part is then never empty.
 */
async function stageThrough(bytes: Buffer, workerFile: string | undefined): Promise<TextVerdict & { unitsByWorker: number }> {
  const fd = fs.openSync(path.join(dir, `staged-${Math.random()}`), "w+");
  const check = createTextCheck(fd, bytes.length, workerFile);
  try {
    for (let off = 0; off < bytes.length; off += MiB) {
      const chunk = bytes.subarray(off, off + MiB);
      fs.writeSync(fd, chunk);
      check.push(chunk);
      await pause(off < 4 * MiB ? 100 : 5);
    }
    return { ...(await check.verdict()), unitsByWorker: check.unitsByWorker };
  } finally {
    await check.dispose();
    fs.closeSync(fd);
  }
}

describe("judging a file in independent units", () => {
  const cases: [string, Buffer][] = [
    ["a token across a unit boundary", Buffer.concat([filler(UNIT - 9), Buffer.from(` ${GITHUB} `), filler(UNIT)])],
    ["a token cut by a unit boundary (not a whole one)", Buffer.concat([filler(UNIT - 21), Buffer.from(" AKIAABCDEFGHIJKLMNOPQRSTUVWXYZ "), filler(100)])],
    ["a token on a unit's first byte, after a letter", Buffer.concat([filler(UNIT - 1), Buffer.from("xAKIAABCDEFGHIJKLMNOP done"), filler(100)])],
    ["a token on a unit's first byte, after a space", Buffer.concat([filler(UNIT - 1), Buffer.from(" AKIAABCDEFGHIJKLMNOP done"), filler(100)])],
    ["a multi-byte character across a unit boundary", Buffer.concat([filler(UNIT - 2), Buffer.from("😀 é"), filler(UNIT)])],
    ["a truncated character at the end", Buffer.concat([filler(2 * UNIT), Buffer.from([0xf0, 0x9f])])],
    ["a lone continuation byte after a boundary", Buffer.concat([filler(UNIT), Buffer.from([0x80]), filler(10)])],
    ["a NUL byte in the second unit", Buffer.concat([filler(UNIT + 5), Buffer.from([0]), filler(10)])],
    ["a secret in the last bytes of a whole number of units", Buffer.concat([filler(2 * UNIT - GITHUB.length - 1), Buffer.from(` ${GITHUB}`)])],
    ["clean text", filler(3 * UNIT + 17)],
  ];
  it.each(cases)("gives the sequential scan's verdict: %s", (_, bytes) => {
    const file = path.join(dir, "f.txt");
    fs.writeFileSync(file, bytes);
    const fd = fs.openSync(file, "r");
    try {
      // Judged last unit first: each unit is judged on its own.
      const count = Math.ceil(bytes.length / UNIT);
      const units = Array.from({ length: count }, (_, i) => judgeUnit(fd, count - 1 - i, bytes.length)).reverse();
      expect(mergeVerdicts(units)).toEqual(sequential(bytes));
    } finally {
      fs.closeSync(fd);
    }
  });
});

describe("the shared text check of a large file", () => {
  const size = PARALLEL_SCAN_FROM + 3 * MiB + 123;
  const withSecretAt = (at: number) => Buffer.concat([filler(at), Buffer.from(` ${GITHUB} `), filler(size - at)]);

  it("finds a secret at the front (the worker's part) and at the back (this thread's part)", async () => {
    const front = await stageThrough(withSecretAt(100), WORKER);
    expect(front).toMatchObject({ hasNul: false, validUtf8: true, secret: "a GitHub token" });
    expect(front.unitsByWorker).toBeGreaterThan(0);
    const back = await stageThrough(withSecretAt(size - 200), WORKER);
    expect(back).toMatchObject({ hasNul: false, validUtf8: true, secret: "a GitHub token" });
    expect(back.unitsByWorker).toBeGreaterThan(0);
    const clean = await stageThrough(filler(size), WORKER);
    expect([clean.hasNul, clean.validUtf8, clean.secret]).toEqual([false, true, undefined]);
  });

  it("judges everything itself when the worker cannot start", async () => {
    const missing = path.join(dir, "no-such-worker.js");
    expect(await stageThrough(withSecretAt(100), missing)).toEqual({ hasNul: false, validUtf8: true, secret: "a GitHub token", secretAt: 101, unitsByWorker: 0 });
  });

  it("judges again what a worker claimed and then failed on", async () => {
    // A worker that claims the first three units as soon as it can, then dies.
    const failing = path.join(dir, "failing-worker.js");
    fs.writeFileSync(
      failing,
      `const { workerData } = require("node:worker_threads");
       for (let i = 0; i < 3; i++) Atomics.compareExchange(workerData.state, 3 + i, 0, 1);
       throw new Error("worker failed on purpose");`,
    );
    const bytes = Buffer.concat([filler(UNIT + 10), Buffer.from("\0"), withSecretAt(2 * UNIT)]).subarray(0, size);
    expect(await stageThrough(bytes, failing)).toEqual({ ...sequential(bytes), unitsByWorker: 0 });
    expect(sequential(bytes)).toMatchObject({ hasNul: true, secret: "a GitHub token" });
  });

  it("runs at most one worker per spare core; further large files are judged on this thread, with the same verdicts", async () => {
    const slots = Math.max(1, os.availableParallelism() - 1);
    const files = Array.from({ length: slots + 2 }, (_, i) => withSecretAt(100 + i));
    const fds = files.map((_, i) => fs.openSync(path.join(dir, `many-${i}`), "w+"));
    const checks = fds.map((fd, i) => createTextCheck(fd, files[i]!.length, WORKER));
    try {
      expect(liveTextWorkers()).toBe(slots);
      for (const [i, check] of checks.entries()) {
        fs.writeSync(fds[i]!, files[i]!);
        check.push(files[i]!);
        expect(await check.verdict()).toEqual(sequential(files[i]!));
      }
      expect(checks.filter((c) => c.unitsByWorker === 0).length).toBeGreaterThanOrEqual(2);
    } finally {
      for (const check of checks) await check.dispose();
      for (const fd of fds) fs.closeSync(fd);
    }
    expect(liveTextWorkers()).toBe(0);
    // A slot freed is taken again.
    const fd = fs.openSync(path.join(dir, "again"), "w+");
    const again = createTextCheck(fd, size, WORKER);
    expect(liveTextWorkers()).toBe(1);
    await again.dispose();
    await again.dispose();
    fs.closeSync(fd);
    expect(liveTextWorkers()).toBe(0);
  });

  it("stops its worker when staging is abandoned", async () => {
    const fd = fs.openSync(path.join(dir, "abandoned"), "w+");
    const check = createTextCheck(fd, size, WORKER);
    const chunk = filler(MiB);
    fs.writeSync(fd, chunk);
    check.push(chunk);
    await check.dispose();
    fs.closeSync(fd);
  });
});

describe("prepare: a text file large enough to be checked on two threads", () => {
  it("refuses a secret in its first or last MiB and publishes it intact when clean", () => {
    const h = makeHome();
    try {
      const size = PARALLEL_SCAN_FROM + 4 * MiB;
      const clean = Buffer.concat([Buffer.from("नमस्ते दुनिया — ".repeat(1000)), filler(size)]);
      const r = cli(["prepare", write(h.home, "big.txt", clean)], { env: h.env });
      expect([r.code, r.stderr]).toEqual([0, ""]);
      expect(fs.readFileSync(r.stdout.trim().slice("MEDIA:".length)).equals(clean)).toBe(true);
      for (const at of [10, size - 100]) {
        const leaked = Buffer.concat([filler(at), Buffer.from(` ${GITHUB}\n`), filler(size - at)]);
        const refused = cli(["prepare", write(h.home, `leak-${at}.md`, leaked)], { env: h.env });
        expect([refused.code, refused.stdout]).toEqual([1, ""]);
        expect(refused.stderr).toContain("secret_detected");
      }
      expect(fs.readdirSync(h.outbox)).toEqual(["big.txt"]);
    } finally {
      h.cleanup();
    }
  });
});
