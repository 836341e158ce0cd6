// Where drop-folder files are prepared: on worker threads (drop-worker.ts),
// so that the main thread, where the guard reacts to planted files, never
// waits for a drop's copy, hash and content checks. Workers start when the
// first drop arrives and end after a while without work.
import fs from "node:fs";
import path from "node:path";
import type { Worker } from "node:worker_threads";
import type { Config } from "../config/config.js";
import { FatalError, type FatalCode } from "../core/errors.js";
import { type PrepareReport, prepare } from "../prepare/prepare.js";

declare const __dirname: string;

export interface DropJob {
  id: number;
  file: string;
  config: Config;
}

export type DropAnswer =
  | { id: number; report: PrepareReport }
  | { id: number; fatal: { code: FatalCode; message: string } }
  | { id: number; error: string };

/** Prepares one dropped file; a FatalError means the outbox cannot take files now (the file stays). */
export type PrepareDrop = (file: string, config: Config) => Promise<PrepareReport>;

/** A worker that ran no job for this long is ended (its memory given back). */
const IDLE_MS = 30_000;

interface Slot {
  worker: Worker;
  busy?: { id: number; resolve: (a: DropAnswer) => void; reject: (e: Error) => void };
  idleTimer?: NodeJS.Timeout;
}

/** The bundled worker, when this code runs from the build (not from the TypeScript sources). */
export function bundledDropWorker(): string | undefined {
  if (typeof __dirname !== "string") return undefined;
  const file = path.join(__dirname, "..", "workers", "drop-prepare.js");
  return fs.existsSync(file) ? file : undefined;
}

export class DropWorkers {
  private readonly slots = new Set<Slot>();
  private nextId = 1;
  private closed = false;

  /** `workerFile` undefined: prepare runs on this thread (the library run from its sources). */
  constructor(private readonly workerFile: string | undefined = bundledDropWorker()) {}

  /** Prepares `file` with `config`: on an idle worker, or a new one. */
  readonly prepare: PrepareDrop = async (file, config) => {
    if (this.workerFile === undefined || this.closed) return prepare(file, { resolvedConfig: config });
    const answer = await this.run(file, config);
    if ("report" in answer) return answer.report;
    if ("fatal" in answer) throw new FatalError(answer.fatal.code, answer.fatal.message);
    throw new Error(answer.error);
  };

  private run(file: string, config: Config): Promise<DropAnswer> {
    const slot = [...this.slots].find((s) => !s.busy) ?? this.spawn();
    if (slot.idleTimer) clearTimeout(slot.idleTimer);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      slot.busy = { id, resolve, reject };
      slot.worker.postMessage({ id, file, config } satisfies DropJob);
    });
  }

  private spawn(): Slot {
    const { Worker } = process.getBuiltinModule("node:worker_threads");
    const slot: Slot = { worker: new Worker(this.workerFile!) };
    slot.worker.on("message", (answer: DropAnswer) => {
      const busy = slot.busy;
      if (!busy || busy.id !== answer.id) return;
      slot.busy = undefined;
      busy.resolve(answer);
      slot.idleTimer = setTimeout(() => this.end(slot), IDLE_MS).unref();
    });
    const gone = (why: string) => {
      this.slots.delete(slot);
      if (slot.idleTimer) clearTimeout(slot.idleTimer);
      slot.busy?.reject(new Error(`the drop worker stopped (${why}); the file stays and is tried again`));
      slot.busy = undefined;
    };
    slot.worker.on("error", (err) => gone(String(err?.message ?? err)));
    slot.worker.on("exit", (code) => gone(`exit code ${code}`));
    this.slots.add(slot);
    return slot;
  }

  private end(slot: Slot): void {
    if (slot.busy) return;
    this.slots.delete(slot);
    void slot.worker.terminate();
  }

  /** Ends every worker; call once no job is in flight (the work queue has drained). */
  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.slots];
    this.slots.clear();
    for (const s of all) if (s.idleTimer) clearTimeout(s.idleTimer);
    await Promise.all(all.map((s) => s.worker.terminate()));
  }
}
