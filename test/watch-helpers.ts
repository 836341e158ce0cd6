// The real `media-outbox watch --json` as a subprocess, read line by line.
import { type ChildProcess, spawn } from "node:child_process";
import readline from "node:readline";
import { BIN } from "./helpers.js";

export type Event = Record<string, unknown> & { event: string };

/** Polls `check` until it returns a value other than undefined/false; generous by default. */
export async function waitUntil<T>(check: () => T | undefined | false, what: string, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

export class WatchProcess {
  readonly child: ChildProcess;
  readonly events: Event[] = [];
  /** Every stdout line, parsed or not: stdout must hold only JSON lines. */
  readonly lines: string[] = [];
  stderr = "";
  exitCode: number | null | undefined;
  readonly exited: Promise<number | null>;

  constructor(args: string[], env: NodeJS.ProcessEnv, as: { uid?: number; gid?: number } = {}) {
    this.child = spawn(process.execPath, [BIN, "watch", "--json", ...args], { env, stdio: ["ignore", "pipe", "pipe"], ...as });
    readline.createInterface({ input: this.child.stdout! }).on("line", (line) => {
      this.lines.push(line);
      this.events.push(JSON.parse(line) as Event);
    });
    this.child.stderr!.on("data", (d: Buffer) => {
      this.stderr += d.toString();
    });
    this.exited = new Promise((resolve) => this.child.on("exit", (code) => resolve((this.exitCode = code))));
  }

  static async start(args: string[], env: NodeJS.ProcessEnv): Promise<WatchProcess> {
    const w = new WatchProcess(args, env);
    await w.waitFor((e) => e.event === "ready", "ready");
    return w;
  }

  find(pred: (e: Event) => boolean): Event | undefined {
    return this.events.find(pred);
  }

  async waitFor(pred: (e: Event) => boolean, what: string, timeoutMs = 60_000): Promise<Event> {
    return waitUntil(
      () => {
        if (this.exitCode !== undefined && !this.find(pred)) throw new Error(`watch exited (${this.exitCode}) before ${what}: ${this.stderr}`);
        return this.find(pred);
      },
      what,
      timeoutMs,
    );
  }

  async waitForCount(pred: (e: Event) => boolean, count: number, what: string, timeoutMs = 120_000): Promise<Event[]> {
    return waitUntil(
      () => {
        const hits = this.events.filter(pred);
        if (hits.length >= count) return hits;
        if (this.exitCode !== undefined) throw new Error(`watch exited (${this.exitCode}) before ${what}: ${this.stderr}`);
        return undefined;
      },
      what,
      timeoutMs,
    );
  }

  /** SIGTERM, then the exit code. */
  async stop(): Promise<number | null> {
    if (this.exitCode === undefined) this.child.kill("SIGTERM");
    return this.exited;
  }
}
