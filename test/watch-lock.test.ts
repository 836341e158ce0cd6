// The one-watch lock under races, played out in a chosen order: starters are
// held at the lock's own pause points (its test seam) while others run.
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LOCK_DIR, type LockPoint, WatchLock } from "../src/watch/lock.js";
import { waitUntil } from "./watch-helpers.js";

let folder: string;
const held: WatchLock[] = [];
beforeEach(() => {
  folder = fs.mkdtempSync(path.join(os.tmpdir(), "mo-lock-"));
});
afterEach(async () => {
  for (const lock of held.splice(0)) await lock.release();
  fs.rmSync(folder, { recursive: true, force: true });
});

/** A gate the test opens: a starter paused at `point` waits on it. */
class Gate {
  reached = false;
  private open!: () => void;
  readonly opened = new Promise<void>((resolve) => (this.open = resolve));
  release(): void {
    this.open();
  }
}

/** Seams that hold a starter at each named point until the test releases it. */
function pausing(points: Partial<Record<LockPoint, Gate>>) {
  return {
    pause: async (point: LockPoint) => {
      const gate = points[point];
      if (!gate) return;
      gate.reached = true;
      await gate.opened;
    },
  };
}

/** The lock a watch killed with SIGKILL leaves: a socket nobody listens on, at the holder's name. */
async function staleLock(): Promise<void> {
  const dir = path.join(folder, LOCK_DIR);
  fs.mkdirSync(dir, { mode: 0o700 });
  const server = net.createServer();
  const temp = path.join(dir, "tmp-dead");
  await new Promise<void>((resolve) => server.listen(temp, resolve));
  fs.linkSync(temp, path.join(dir, "holder"));
  await new Promise<void>((resolve) => server.close(() => resolve()));
  expect(fs.lstatSync(path.join(dir, "holder")).isSocket()).toBe(true);
}

type Outcome = { lock: WatchLock } | { error: unknown };
const settle = (p: Promise<WatchLock>): Promise<Outcome> => p.then((lock) => ({ lock }), (error: unknown) => ({ error }));
const taken = (outcomes: Outcome[]) => outcomes.filter((o): o is { lock: WatchLock } => "lock" in o);
const refusedAsRunning = (o: Outcome) => "error" in o && (o.error as { code?: string }).code === "already_running";

describe("the one-watch lock", () => {
  it("a stale lock has one remover: a starter that judged it stale never removes the live lock another took meanwhile (three starters)", async () => {
    await staleLock();
    // B sees the stale lock, and is held before it acts on that judgement.
    const bStale = new Gate();
    const bBreaking = new Gate();
    const b = settle(WatchLock.acquire(folder, "B", pausing({ "stale-seen": bStale, breaking: bBreaking })));
    await waitUntil(() => bStale.reached, "B judged the lock stale");
    // A takes the lock over meanwhile (removing the stale one itself).
    const a = await WatchLock.acquire(folder, "A");
    held.push(a);
    // B goes on with its stale judgement; while it is at work, C starts.
    bStale.release();
    let bDone = false;
    void b.then(() => (bDone = true));
    await waitUntil(() => bBreaking.reached || bDone, "B at work on the lock");
    const c = await settle(WatchLock.acquire(folder, "C"));
    bBreaking.release();
    const outcomes = [await b, c];
    for (const o of taken(outcomes)) held.push(o.lock);
    // A holds the lock; neither B nor C got one of their own.
    expect(taken(outcomes)).toEqual([]);
    expect(outcomes.every(refusedAsRunning)).toBe(true);
    const d = await settle(WatchLock.acquire(folder, "D"));
    expect(refusedAsRunning(d)).toBe(true);
  });

  it("a holder giving its lock up keeps answering until the name is gone: no starter takes it over half-way (three starters)", async () => {
    const checked = new Gate();
    const h = await WatchLock.acquire(folder, "H", pausing({ "release-checked": checked }));
    const releasing = h.release();
    await waitUntil(() => checked.reached, "H checked its lock before removing it");
    // B starts while H is half-way through its release.
    const b = await settle(WatchLock.acquire(folder, "B"));
    checked.release();
    await releasing;
    const c = await settle(WatchLock.acquire(folder, "C"));
    const locks = taken([b, c]);
    for (const o of locks) held.push(o.lock);
    // One lock at a time: C, after H was gone; B, which came while H still held it, was refused.
    expect(refusedAsRunning(b)).toBe(true);
    expect(locks).toEqual([c]);
  });

  it("many starters at once on a stale lock: exactly one gets it, the others are refused", async () => {
    await staleLock();
    const outcomes = await Promise.all(Array.from({ length: 8 }, (_, i) => settle(WatchLock.acquire(folder, `S${i}`))));
    const locks = taken(outcomes);
    for (const o of locks) held.push(o.lock);
    expect(locks.length).toBe(1);
    expect(outcomes.filter((o) => !("lock" in o)).every(refusedAsRunning)).toBe(true);
    // What the removal used (break slots, removed locks, temporary sockets) is gone.
    expect(fs.readdirSync(path.join(folder, LOCK_DIR))).toEqual(["holder"]);
    await locks[0]!.lock.release();
    held.splice(0);
    expect(fs.readdirSync(folder)).toEqual([]);
  });
});
