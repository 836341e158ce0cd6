// Bounded, fair work for the drop folders: at most `limit` files in flight,
// taken round-robin from one queue per folder, so a flood in one folder
// never stalls the others.

export type Job = () => Promise<void>;

export class WorkQueue {
  private readonly lanes = new Map<string, Job[]>();
  private order: string[] = [];
  private next = 0;
  private running = 0;
  private accepting = true;
  private idleWaiters: (() => void)[] = [];

  constructor(
    private readonly limit: number,
    private readonly onError: (err: unknown) => void,
  ) {}

  get inFlight(): number {
    return this.running;
  }

  /** Queues a job in `lane`; ignored once stopping began (the file stays for the next start). */
  push(lane: string, job: Job): boolean {
    if (!this.accepting) return false;
    let queue = this.lanes.get(lane);
    if (!queue) {
      queue = [];
      this.lanes.set(lane, queue);
      this.order.push(lane);
    }
    queue.push(job);
    this.pump();
    return true;
  }

  /** Queued (not yet begun) jobs of one lane. */
  pending(lane: string): number {
    return this.lanes.get(lane)?.length ?? 0;
  }

  /** Drops jobs not yet begun in a lane. */
  clear(lane: string): void {
    this.lanes.get(lane)?.splice(0);
  }

  /** Stops taking and starting jobs; resolves once the jobs already begun are done. */
  async close(): Promise<void> {
    this.accepting = false;
    for (const queue of this.lanes.values()) queue.splice(0);
    if (this.running === 0) return;
    await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  private take(): Job | undefined {
    for (let i = 0; i < this.order.length; i++) {
      const lane = this.order[(this.next + i) % this.order.length]!;
      const job = this.lanes.get(lane)!.shift();
      if (job) {
        this.next = (this.next + i + 1) % this.order.length;
        return job;
      }
    }
    return undefined;
  }

  private pump(): void {
    while (this.accepting && this.running < this.limit) {
      const job = this.take();
      if (!job) break;
      this.running++;
      job()
        .catch(this.onError)
        .finally(() => {
          this.running--;
          if (this.running === 0 && !this.accepting) for (const wake of this.idleWaiters.splice(0)) wake();
          // A new turn of the event loop between files lets watcher events and
          // the guard run during a flood.
          setImmediate(() => this.pump());
        });
    }
  }
}
