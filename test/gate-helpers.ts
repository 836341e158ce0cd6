// Helpers for the gate's tests: serve run by hand on a temporary socket (and
// always killed by PID), and raw HTTP exchanges over that socket.
import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { BIN } from "./helpers.js";

export interface Gate {
  proc: ChildProcess;
  pid: number;
  socket: string;
  outbox: string;
  state: string;
  /** Everything serve wrote on stderr so far (its log). */
  log(): string;
  /** Log lines parsed, those that are JSON. */
  events(): Record<string, unknown>[];
  /** Resolves with the exit code once the process has ended. */
  exited: Promise<number | null>;
}

const running = new Set<ChildProcess>();

/** Every process these helpers started and that still runs is killed by its PID (call in afterEach/afterAll). */
export async function killAll(): Promise<void> {
  const waits: Promise<unknown>[] = [];
  for (const proc of running) {
    if (proc.exitCode === null && proc.signalCode === null && proc.pid !== undefined) {
      waits.push(new Promise((resolve) => proc.once("exit", resolve)));
      process.kill(proc.pid, "SIGKILL");
    }
  }
  running.clear();
  await Promise.all(waits);
}

/** Starts a process that killAll() will end. */
export function track(proc: ChildProcess): ChildProcess {
  running.add(proc);
  proc.once("exit", () => running.delete(proc));
  return proc;
}

/** Waits until `check` holds; the test's own timeout bounds the wait (no timed assertion). */
export async function waitFor<T>(check: () => T | undefined | false): Promise<T> {
  for (let step = 20; ; step = Math.min(step + 10, 200)) {
    const value = check();
    if (value !== undefined && value !== false) return value;
    await new Promise((r) => setTimeout(r, step));
  }
}

function parseLines(text: string): Record<string, unknown>[] {
  return text
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => {
      try {
        return JSON.parse(l) as Record<string, unknown>;
      } catch {
        return {};
      }
    });
}

/**
 * Starts `media-outbox serve` on `<dir>/gate.sock` with its outbox in
 * `<dir>/gate/outbox`, and waits for its `ready` line. `command` replaces how
 * it is started (systemd-socket-activate), `args` are added.
 */
export async function startGate(dir: string, env: NodeJS.ProcessEnv, args: string[] = [], command?: { file: string; args: string[] }): Promise<Gate> {
  const socket = path.join(dir, "gate.sock");
  const outbox = path.join(dir, "gate", "outbox");
  const serveArgs = [BIN, "serve", "--outbox", outbox, ...(command ? [] : ["--socket", socket]), ...args];
  const proc = track(
    command
      ? spawn(command.file, [...command.args, process.execPath, ...serveArgs], { env, stdio: ["ignore", "ignore", "pipe"] })
      : spawn(process.execPath, serveArgs, { env, stdio: ["ignore", "ignore", "pipe"] }),
  );
  let stderr = "";
  proc.stderr!.on("data", (c) => (stderr += c));
  const exited = new Promise<number | null>((resolve) => proc.once("exit", (code) => resolve(code)));
  const gate: Gate = {
    proc,
    pid: proc.pid!,
    socket,
    outbox,
    state: path.join(dir, "gate", ".outbox-state"),
    log: () => stderr,
    events: () => parseLines(stderr),
    exited,
  };
  if (!command) {
    let ended = false;
    void exited.then(() => (ended = true));
    await waitFor(() => ended || gate.events().some((e) => e.event === "ready"));
    if (ended) throw new Error(`serve exited before it was ready:\n${stderr}`);
  }
  return gate;
}

/**
 * Returns once the gate's log, as read here, holds everything the gate did
 * so far: it asks for a unique unknown path and waits for that line.
 */
export async function syncLog(gate: Gate): Promise<Record<string, unknown>[]> {
  const marker = `/sync-${process.hrtime.bigint()}`;
  await rawExchange(gate.socket, [head(marker, {}, "GET")]);
  await waitFor(() => gate.log().includes(marker));
  return gate.events();
}

/** Empties a gate's outbox and ledger between tests that share it. */
export function clearGate(gate: Gate): void {
  for (const f of fs.readdirSync(gate.outbox)) fs.unlinkSync(path.join(gate.outbox, f));
  fs.rmSync(path.join(gate.state, "ledger"), { recursive: true, force: true });
}

/** What a gate left in its outbox and state. */
export function gateLeftBehind(gate: Gate): { outbox: string[]; staging: string[]; ledger: string[] } {
  const list = (d: string) => (fs.existsSync(d) ? fs.readdirSync(d) : []);
  return { outbox: list(gate.outbox), staging: list(path.join(gate.state, "staging")), ledger: list(path.join(gate.state, "ledger")) };
}

export interface RawAnswer {
  /** Everything the gate sent, as text. */
  text: string;
  status: number;
  body: string;
  /** The body parsed, when it is JSON. */
  json: any;
  /** How many bytes of the request the socket took before it closed. */
  written: number;
}

/**
 * Sends `parts` in order over a fresh connection (each a write; a number is
 * a pause in ms before the next), then reads until the gate closes.
 * `holdOpen` leaves the connection open after the last part.
 */
export function rawExchange(socket: string, parts: (string | Buffer | number)[], opts: { halfClose?: boolean } = {}): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const conn = net.connect(socket);
    const chunks: Buffer[] = [];
    let written = 0;
    let closed = false;
    conn.on("data", (c) => chunks.push(c));
    conn.on("error", () => {});
    conn.on("close", () => {
      closed = true;
      const text = Buffer.concat(chunks).toString("utf8");
      // The final answer, after any interim 1xx ones.
      const final = text.replace(/^(?:HTTP\/1\.1 1\d\d[^\r]*\r\n(?:[^\r]+\r\n)*\r\n)+/, "");
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(final)?.[1] ?? 0);
      const body = final.includes("\r\n\r\n") ? final.slice(final.indexOf("\r\n\r\n") + 4) : "";
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      resolve({ text, status, body, json, written });
    });
    conn.on("connect", async () => {
      try {
        for (const part of parts) {
          if (closed) break;
          if (typeof part === "number") {
            await new Promise((r) => setTimeout(r, part));
            continue;
          }
          // A write of nothing is still a write(2), which fails once the gate has answered and closed.
          if (part.length === 0) continue;
          await new Promise<void>((done) => {
            conn.write(part, (err) => {
              if (!err) written += Buffer.byteLength(part);
              done();
            });
          });
        }
        if (opts.halfClose && !closed) conn.end();
      } catch (err) {
        reject(err);
      }
    });
  });
}

/** A request head for POST /prepare (or any target). */
export function head(target: string, headers: Record<string, string | number> = {}, method = "POST"): string {
  return `${method} ${target} HTTP/1.1\r\nHost: gate\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join("")}\r\n`;
}

/** A complete POST /prepare with a Content-Length body. */
export function post(name: string, body: Buffer | string, extra: Record<string, string | number> = {}): (string | Buffer)[] {
  return [head(`/prepare?name=${encodeURIComponent(name)}`, { "Content-Length": Buffer.byteLength(body), ...extra }), body];
}

/** One chunk of a chunked body. */
export function chunk(data: Buffer | string): Buffer {
  const b = Buffer.from(data);
  return Buffer.concat([Buffer.from(`${b.length.toString(16)}\r\n`), b, Buffer.from("\r\n")]);
}
