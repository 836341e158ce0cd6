// The text check of a file being staged. A small file is scanned in line, as
// its chunks are staged. A large one is judged in 1 MiB units (text.ts judges
// any aligned range on its own), shared with a worker thread on the other
// core: the worker takes units from the front as soon as they are staged,
// this thread takes them from the back once staging is done, and they meet
// in between.
// Nothing rests on the worker: whatever it does not answer for is judged here.
import fs from "node:fs";
import path from "node:path";
import type { Worker } from "node:worker_threads";
import { KnownSecrets, type KnownValue, NO_KNOWN_SECRETS } from "../content/known.js";
import { rereadBudget } from "../content/scan.js";
import type { ChunkObserver } from "./stage.js";
import { TextScanner, type TextScannerOptions, type TextVerdict, mergeVerdicts } from "./text.js";

declare const __dirname: string;

/**
 * Below this size the scan is over before a worker could help (one takes
 * ~30 ms to start here; the scan runs at ~1.5 ms per MiB).
 */
export const PARALLEL_SCAN_FROM = 16 * 1024 * 1024;

/** What the two threads share out: one claim each. */
export const UNIT = 1024 * 1024;

/** Judges unit `index` of the staging file, of `size` bytes (Infinity while it is known to go on). */
export function judgeUnit(fd: number, index: number, size: number, options: TextScannerOptions = {}): TextVerdict {
  return TextScanner.judgeFileRange(fd, index * UNIT, Math.min(size, (index + 1) * UNIT), size, options);
}

/** The shared Int32Array's slots: progress, flags, then one claim per unit. */
export const SLOT = { available: 0, done: 1, abort: 2, claims: 3 } as const;
export const CLAIMED_BY_WORKER = 1;
const CLAIMED_HERE = 2;

export interface WorkerInput {
  /** The staging file, shared by descriptor. */
  fd: number;
  /** Slots as in SLOT; `available` counts the units the worker may judge. */
  state: Int32Array;
  /** The staged size, set before `done`. */
  size: Float64Array;
  /** How many units have a claim slot. */
  capacity: number;
  /** The known secrets' values (rebuilt into a KnownSecrets in the worker). */
  known: KnownValue[];
  /** Credential scan only (a binary format's bytes). */
  raw: boolean;
}

/** The worker's answer: its verdicts for units 0, 1, … in order, or why it failed. */
export type FromWorker = { verdicts: TextVerdict[] } | { error: string };

export interface TextCheck extends ChunkObserver {
  /** The verdict on every staged byte; call once staging is complete. */
  verdict(): Promise<TextVerdict>;
  /** How many units a worker thread judged, once the verdict is in. */
  readonly unitsByWorker: number;
  /** Stops any work still running; call before the staging file is closed. */
  dispose(): Promise<void>;
}

class InlineTextCheck implements TextCheck {
  readonly unitsByWorker = 0;
  private readonly scanner: TextScanner;
  constructor(options: TextScannerOptions) {
    this.scanner = new TextScanner(options);
  }
  push(chunk: Uint8Array): void {
    this.scanner.push(chunk);
  }
  verdict(): Promise<TextVerdict> {
    return Promise.resolve(this.scanner.finish());
  }
  dispose(): Promise<void> {
    return Promise.resolve();
  }
}

/**
 * Worker threads alive at once. Each wants a core of its own to pay off; past
 * that (the gate judging many large bodies at once) a file is judged on the
 * calling thread, so memory and threads stay bounded whatever clients send.
 */
let liveWorkers = 0;
let maxLiveWorkers: number | undefined;
function workerSlots(): number {
  maxLiveWorkers ??= Math.max(1, process.getBuiltinModule("node:os").availableParallelism() - 1);
  return maxLiveWorkers;
}

class SharedTextCheck implements TextCheck {
  unitsByWorker = 0;
  private written = 0;
  private disposed = false;
  private readonly input: WorkerInput;
  private readonly worker: Worker;
  private readonly answer: Promise<FromWorker>;

  constructor(
    fd: number,
    expectedBytes: number,
    workerFile: string,
    private readonly options: TextScannerOptions,
  ) {
    const capacity = Math.ceil(expectedBytes / UNIT) + 1;
    this.input = {
      fd,
      state: new Int32Array(new SharedArrayBuffer(4 * (SLOT.claims + capacity))),
      size: new Float64Array(new SharedArrayBuffer(8)),
      capacity,
      known: (options.known ?? NO_KNOWN_SECRETS).values,
      raw: options.raw === true,
    };
    const { Worker } = process.getBuiltinModule("node:worker_threads");
    // Not unref'd: while the verdict waits for the worker's answer, the worker
    // may be all that keeps the event loop alive. dispose() always ends it.
    this.worker = new Worker(workerFile, { workerData: this.input });
    liveWorkers++;
    this.answer = new Promise((resolve) => {
      this.worker.once("message", (msg: FromWorker) => resolve(msg));
      this.worker.once("error", (err) => resolve({ error: err.message }));
      this.worker.once("exit", (code) => resolve({ error: `the worker exited with code ${code}` }));
    });
  }

  /** Called once each chunk is in the staging file, where the worker reads it. */
  push(chunk: Uint8Array): void {
    this.written += chunk.length;
    // Every unit but the last one begun: only a unit with bytes after it is known not to be the file's last.
    this.publish(Math.max(0, Math.ceil(this.written / UNIT) - 1));
  }

  async verdict(): Promise<TextVerdict> {
    const { fd, state, size, capacity } = this.input;
    const units = Math.ceil(this.written / UNIT);
    size[0] = this.written;
    Atomics.store(state, SLOT.done, 1);
    this.publish(units);
    const mine: TextVerdict[] = [];
    let next = units - 1;
    for (; next >= 0; next--) {
      if (next < capacity && Atomics.compareExchange(state, SLOT.claims + next, 0, CLAIMED_HERE) !== 0) break;
      mine.push(judgeUnit(fd, next, this.written, this.options));
    }
    mine.reverse();
    if (next < 0) return mergeVerdicts(mine);
    // Units 0..next are the worker's.
    const answer = await this.answer;
    const answered = "verdicts" in answer && answer.verdicts.length === next + 1;
    if (answered) this.unitsByWorker = next + 1;
    const theirs = answered ? answer.verdicts : Array.from({ length: next + 1 }, (_, i) => judgeUnit(fd, i, this.written, this.options));
    return mergeVerdicts([...theirs, ...mine]);
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    Atomics.store(this.input.state, SLOT.abort, 1);
    Atomics.notify(this.input.state, SLOT.available);
    try {
      await this.worker.terminate();
    } finally {
      liveWorkers--;
    }
  }

  private publish(available: number): void {
    const { state } = this.input;
    if (Atomics.load(state, SLOT.available) === available) return;
    Atomics.store(state, SLOT.available, available);
    Atomics.notify(state, SLOT.available);
  }
}

/**
 * The text check for a file of `expectedBytes` (undefined when unknown, as
 * for standard input) staged into the open file `fd`.
 */
export function createTextCheck(fd: number, expectedBytes: number | undefined, workerFile: string | undefined = bundledWorkerFile(), options: TextScannerOptions = {}): TextCheck {
  if (expectedBytes === undefined || expectedBytes < PARALLEL_SCAN_FROM || workerFile === undefined) return new InlineTextCheck(options);
  if (liveWorkers >= workerSlots()) return new InlineTextCheck(options);
  return new SharedTextCheck(fd, expectedBytes, workerFile, options);
}

/** Worker threads the text checks have running now (tests, and the gate's health). */
export function liveTextWorkers(): number {
  return liveWorkers;
}

/** The worker's scanner options, from what the main thread sent. */
export function workerOptions(input: WorkerInput): TextScannerOptions {
  return { known: input.known.length > 0 ? new KnownSecrets(input.known) : NO_KNOWN_SECRETS, raw: input.raw, reread: rereadBudget() };
}

/** The worker's bundle, when this code runs from the build (not from the TypeScript sources). */
function bundledWorkerFile(): string | undefined {
  if (typeof __dirname !== "string") return undefined;
  const file = path.join(__dirname, "..", "workers", "text-scan.js");
  return fs.existsSync(file) ? file : undefined;
}
