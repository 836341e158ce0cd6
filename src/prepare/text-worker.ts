// The worker side of a shared text check (text-check.ts): it judges units of
// the staging file from the front, each as soon as it is staged, until it
// meets a unit the main thread has claimed. The file is shared by descriptor.
import { parentPort, workerData } from "node:worker_threads";
import { CLAIMED_BY_WORKER, type FromWorker, SLOT, type WorkerInput, judgeUnit, workerOptions } from "./text-check.js";
import type { TextVerdict } from "./text.js";

const input = workerData as WorkerInput;
const { fd, state, size, capacity } = input;
const options = workerOptions(input);

/** Waits until unit `index` may be judged; false when there is no such unit or the check was stopped. */
function staged(index: number): boolean {
  for (;;) {
    if (Atomics.load(state, SLOT.abort) === 1) return false;
    const available = Atomics.load(state, SLOT.available);
    if (index < available) return true;
    // The main thread raises `available` to the last unit only after `done`.
    if (Atomics.load(state, SLOT.done) === 1) return index < Atomics.load(state, SLOT.available);
    // The timeout only bounds how long a stop can go unseen.
    Atomics.wait(state, SLOT.available, available, 100);
  }
}

function judgeFromFront(): TextVerdict[] {
  const verdicts: TextVerdict[] = [];
  for (let index = 0; index < capacity && staged(index); index++) {
    if (Atomics.compareExchange(state, SLOT.claims + index, 0, CLAIMED_BY_WORKER) !== 0) break;
    // Until staging is done, a unit that may be judged has bytes after it, so it is not the last.
    const fileSize = Atomics.load(state, SLOT.done) === 1 ? size[0]! : Number.POSITIVE_INFINITY;
    verdicts.push(judgeUnit(fd, index, fileSize, options));
  }
  return verdicts;
}

let answer: FromWorker;
try {
  answer = { verdicts: judgeFromFront() };
} catch (err) {
  answer = { error: err instanceof Error ? err.message : String(err) };
}
parentPort!.postMessage(answer);
