// The client's side of one HTTP/1.1 exchange with the gate, on node:net.
// node:http would do it too, but costs every `prepare` through the gate about
// 2 ms more to load (README, "Gate mode"), and the gate's answers are simple:
// an optional `100 Continue`, then one answer with a Content-Length (or
// ended by the connection's close).
import type net from "node:net";

/** An answer larger than this is not the gate's (one input's report is a few hundred bytes). */
const MAX_ANSWER_BYTES = 1024 * 1024;

export interface Answer {
  status: number;
  /** Header names in lower case. */
  headers: Map<string, string>;
  body: Buffer;
}

/** Why an exchange failed: the connect(2) error code, a timeout, an early close, or an answer that is not HTTP. */
export class ExchangeError extends Error {
  constructor(
    readonly kind: "connect" | "timeout" | "closed" | "protocol",
    message: string,
    readonly code?: string,
  ) {
    super(message);
  }
}

interface Waiter<T> {
  resolve(value: T): void;
  reject(err: Error): void;
}

export class GateConnection {
  private buffered: Buffer = Buffer.alloc(0);
  private finalHead?: { status: number; headers: Map<string, string>; length?: number };
  private final?: Answer;
  private failure?: ExchangeError;
  private continued = false;
  private readonly continueWaiters: Waiter<"continue" | Answer>[] = [];
  private readonly answerWaiters: Waiter<Answer>[] = [];
  private drainWaiters: (() => void)[] = [];

  private constructor(private readonly socket: net.Socket) {
    socket.on("data", (chunk: Buffer) => this.onData(chunk));
    socket.on("end", () => this.onEnd());
    socket.on("close", () => this.onEnd());
    socket.on("drain", () => this.wakeWriters());
    // A write that fails after the answer is complete (the gate closed first) changes nothing.
    socket.on("error", (err: NodeJS.ErrnoException) => this.fail(new ExchangeError("closed", `the connection failed (${err.code ?? err.message})`, err.code)));
    socket.on("timeout", () => {
      this.fail(new ExchangeError("timeout", "no answer in time"));
      socket.destroy();
    });
  }

  /** Connects to the Unix socket `file`; `timeoutMs` bounds every wait for the gate. */
  static open(file: string, timeoutMs: number): Promise<GateConnection> {
    const { connect } = process.getBuiltinModule("node:net") as typeof net;
    return new Promise((resolve, reject) => {
      const socket = connect({ path: file });
      socket.setTimeout(timeoutMs);
      const onError = (err: NodeJS.ErrnoException) => {
        socket.destroy();
        reject(new ExchangeError("connect", `cannot connect (${err.code ?? err.message})`, err.code));
      };
      const onTimeout = () => onError(Object.assign(new Error("timed out"), { code: "ETIMEDOUT" }));
      socket.once("error", onError);
      socket.once("timeout", onTimeout);
      socket.once("connect", () => {
        socket.off("error", onError);
        socket.off("timeout", onTimeout);
        resolve(new GateConnection(socket));
      });
    });
  }

  /** Whether the final answer is complete (the gate may answer before the body is sent). */
  get answered(): boolean {
    return this.final !== undefined;
  }

  /** Writes the request line and headers. */
  sendHead(method: string, target: string, headers: Record<string, string>): void {
    const lines = [`${method} ${target} HTTP/1.1`, "Host: gate", ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
    this.socket.write(`${lines.join("\r\n")}\r\n\r\n`, "latin1");
  }

  /** Waits for `100 Continue`, or for the final answer when the gate answers without reading the body. */
  waitContinue(): Promise<"continue" | Answer> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.final) return Promise.resolve(this.final);
    if (this.continued) return Promise.resolve("continue");
    return new Promise((resolve, reject) => this.continueWaiters.push({ resolve, reject }));
  }

  /** Writes part of the body, waiting while the gate is not reading. Nothing is written once the answer is in. */
  async write(data: Uint8Array | string): Promise<void> {
    if (this.failure) throw this.failure;
    if (this.final) return;
    if (this.socket.write(data)) return;
    await new Promise<void>((resolve) => this.drainWaiters.push(resolve));
    if (this.failure && !this.final) throw this.failure;
  }

  /** The final answer. */
  answer(): Promise<Answer> {
    if (this.final) return Promise.resolve(this.final);
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => this.answerWaiters.push({ resolve, reject }));
  }

  /** Drops the connection: the gate sees a body cut short and publishes nothing. */
  abort(): void {
    this.socket.destroy();
  }

  close(): void {
    this.socket.destroy();
  }

  private wakeWriters(): void {
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const wake of waiters) wake();
  }

  private onData(chunk: Buffer): void {
    if (this.final || this.failure) return;
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    if (this.buffered.length > MAX_ANSWER_BYTES) {
      this.fail(new ExchangeError("protocol", "the answer is too large"));
      this.socket.destroy();
      return;
    }
    try {
      this.parse();
    } catch (err) {
      this.fail(err as ExchangeError);
      this.socket.destroy();
    }
  }

  private parse(): void {
    while (!this.finalHead) {
      const end = this.buffered.indexOf("\r\n\r\n");
      if (end < 0) return;
      const head = this.buffered.toString("latin1", 0, end).split("\r\n");
      this.buffered = this.buffered.subarray(end + 4);
      const status = /^HTTP\/1\.[01] (\d{3})(?: |$)/.exec(head[0] ?? "");
      if (!status) throw new ExchangeError("protocol", "the answer is not HTTP/1.1");
      const code = Number(status[1]);
      if (code === 100) {
        this.continued = true;
        for (const w of this.continueWaiters.splice(0)) w.resolve("continue");
        continue;
      }
      if (code < 200) continue;
      const headers = new Map<string, string>();
      for (const line of head.slice(1)) {
        const colon = line.indexOf(":");
        if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
      }
      if (headers.get("transfer-encoding")?.toLowerCase().includes("chunked")) throw new ExchangeError("protocol", "a chunked answer is not the gate's");
      const length = headers.get("content-length");
      if (length !== undefined && !/^\d{1,7}$/.test(length)) throw new ExchangeError("protocol", "the answer's Content-Length is not a size");
      this.finalHead = { status: code, headers, ...(length !== undefined ? { length: Number(length) } : {}) };
    }
    const { length } = this.finalHead;
    if (length !== undefined && this.buffered.length >= length) this.complete(this.buffered.subarray(0, length));
  }

  private onEnd(): void {
    if (this.final || this.failure) return;
    // Without a Content-Length, the answer is what came before the close.
    if (this.finalHead && this.finalHead.length === undefined) this.complete(this.buffered);
    else this.fail(new ExchangeError("closed", "the connection was closed before the answer was complete"));
  }

  private complete(body: Buffer): void {
    const head = this.finalHead!;
    this.final = { status: head.status, headers: head.headers, body: Buffer.from(body) };
    this.socket.setTimeout(0);
    for (const w of this.continueWaiters.splice(0)) w.resolve(this.final);
    for (const w of this.answerWaiters.splice(0)) w.resolve(this.final);
    this.wakeWriters();
    this.socket.destroy();
  }

  private fail(err: ExchangeError): void {
    if (this.final || this.failure) return;
    this.failure = err;
    for (const w of this.continueWaiters.splice(0)) w.reject(err);
    for (const w of this.answerWaiters.splice(0)) w.reject(err);
    this.wakeWriters();
  }
}
