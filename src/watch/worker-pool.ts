// Worker threads for the watch's long work: the main thread is where the
// guard reacts to planted files, so nothing long may run there. Workers start
// when work arrives and end after a while without any.
import type { Worker } from "node:worker_threads";

/** A worker that ran no job for this long is ended (its memory given back). */
const IDLE_MS = 30_000;

interface Slot<A> {
  worker: Worker;
  busy?: { id: number; resolve: (a: A) => void; reject: (e: Error) => void };
  idleTimer?: NodeJS.Timeout;
}

/** Runs jobs on at most `size` workers of `file`, one job per worker at a time. */
export class WorkerPool<J extends object, A extends { id: number }> {
  private readonly slots = new Set<Slot<A>>();
  private readonly waiting: (() => void)[] = [];
  private nextId = 1;

  constructor(
    private readonly file: string,
    private readonly size: number,
    private readonly what: string,
  ) {}

  /** Runs `job` on an idle worker (a new one while fewer than `size` run; else the next to be free). */
  async run(job: J): Promise<A> {
    let slot = [...this.slots].find((s) => !s.busy) ?? (this.slots.size < this.size ? this.spawn() : undefined);
    while (!slot) {
      await new Promise<void>((resolve) => this.waiting.push(resolve));
      slot = [...this.slots].find((s) => !s.busy) ?? (this.slots.size < this.size ? this.spawn() : undefined);
    }
    if (slot.idleTimer) clearTimeout(slot.idleTimer);
    const id = this.nextId++;
    const taken = slot;
    return new Promise((resolve, reject) => {
      taken.busy = { id, resolve, reject };
      taken.worker.postMessage({ id, ...job });
    });
  }

  private spawn(): Slot<A> {
    const { Worker } = process.getBuiltinModule("node:worker_threads");
    const slot: Slot<A> = { worker: new Worker(this.file) };
    slot.worker.on("message", (answer: A) => {
      const busy = slot.busy;
      if (!busy || busy.id !== answer.id) return;
      slot.busy = undefined;
      busy.resolve(answer);
      slot.idleTimer = setTimeout(() => this.end(slot), IDLE_MS).unref();
      this.waiting.shift()?.();
    });
    const gone = (why: string) => {
      this.slots.delete(slot);
      if (slot.idleTimer) clearTimeout(slot.idleTimer);
      slot.busy?.reject(new Error(`the ${this.what} worker stopped (${why})`));
      slot.busy = undefined;
      this.waiting.shift()?.();
    };
    slot.worker.on("error", (err) => gone(String(err?.message ?? err)));
    slot.worker.on("exit", (code) => gone(`exit code ${code}`));
    this.slots.add(slot);
    return slot;
  }

  private end(slot: Slot<A>): void {
    if (slot.busy) return;
    this.slots.delete(slot);
    void slot.worker.terminate();
  }

  /** Ends every worker; call once no job is in flight. */
  async close(): Promise<void> {
    const all = [...this.slots];
    this.slots.clear();
    for (const s of all) if (s.idleTimer) clearTimeout(s.idleTimer);
    await Promise.all(all.map((s) => s.worker.terminate()));
    for (const wake of this.waiting.splice(0)) wake();
  }
}
