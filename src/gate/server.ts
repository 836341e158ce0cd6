// The gate: the judgement half of prepare (judge.ts) behind a Unix socket.
// It never opens a path a client names; it stages the request body itself
// and judges only that. Connections are accepted by a net.Server, which
// bounds them, and handed to an http.Server, which parses them.
import http from "node:http";
import net from "node:net";
import type { Config } from "../config/config.js";
import { FatalError } from "../core/errors.js";
import { escapeText, safeJson } from "../core/escape.js";
import { formatBytes } from "../core/units.js";
import { type KnownSecrets, withClientEnvironment } from "../content/known.js";
import type { Logger } from "../log/logger.js";
import { knownSecretsReader, readsWholeFile } from "../prepare/content.js";
import { type JudgeContext, type Policy, type WatchGuard, judge, narrowPolicy, policyOf } from "../prepare/judge.js";
import { extensionOf } from "../prepare/name.js";
import { addDropped, addMedia, droppedResult, emptyReport, settleReport } from "../prepare/report.js";
import { type Layout, openLayout } from "../state/layout.js";
import { lockIdentity, watchGuardOf, watchHolder } from "../watch/lock.js";
import { clearSocketPath, listenOnPath, removeOwnSocket } from "./listen.js";
import {
  ENVIRONMENT_HEADER,
  type ErrorDocument,
  type GateErrorCode,
  HEALTH_PATH,
  type HealthDocument,
  PREPARE_PATH,
  STATUS_OF,
  errorDocument,
  parseEnvironmentHeader,
  parsePrepareQuery,
  parseTarget,
} from "./protocol.js";

export const DEFAULT_CLIENT_TIMEOUT_MS = 10_000;
export const DEFAULT_REQUEST_TIMEOUT_MS = 300_000;
export const DEFAULT_MAX_CONNECTIONS = 64;
/** Upload bytes held at once (a document's body is kept whole while it arrives and is read): 64 documents of 50 MB would be 3.2 GB. */
export const DEFAULT_MAX_HELD_BYTES = 512 * 1024 * 1024;
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 10_000;
/** Request line and headers together; the name (up to 4096 bytes) may be percent-encoded threefold, the client's environment is at most protocol.ts MAX_ENVIRONMENT_HEADER. */
const MAX_HEADER_BYTES = 32 * 1024;
/** How long an answered connection may still take a body it will not read, and how much of it. */
const LINGER_MS = 1000;
/** How long the gate judges by a watch's answer before it asks its lock again (watchGuard). */
const GUARD_ANSWER_MS = 1000;
const DRAIN_BYTES = 8 * 1024 * 1024;

export interface GateOptions {
  config: Config;
  logger: Logger;
  /** A client that sends nothing for this long, before its body is complete, is cut off (408). */
  clientTimeoutMs?: number;
  /** A client must have sent its whole request within this time. */
  requestTimeoutMs?: number;
  /** Connections served at once; more are answered 503 `busy` at once and closed. */
  maxConnections?: number;
  /**
   * Bytes of uploads held at once: each document (a format whose reader
   * needs every byte: content.ts readsWholeFile) counted at its declared
   * length (or its cap, when it is sent chunked) until it is judged; a
   * request that would pass it is answered 503 `busy` before its body is
   * read. Text, audio and video go to the staging file as they arrive and
   * hold nothing. One request is always taken, however large, when no
   * other is held.
   */
  maxHeldBytes?: number;
}

/** What the server knows about one connection. */
interface Connection {
  socket: net.Socket;
  /** A request arrived on it (it is then finished before a shutdown ends). */
  inRequest: boolean;
  /** The body is complete: the time is the gate's own, no more timeouts. */
  bodyDone: boolean;
  answered: boolean;
  timedOut: boolean;
  /** A further request came on it while the first was served (see refusePipelined). */
  pipelined?: boolean;
  /** The client asked to wait for `100 Continue` before sending its body, and whether it got it. */
  expectContinue: boolean;
  continued: boolean;
  req?: http.IncomingMessage;
  res?: http.ServerResponse;
  lifetime?: NodeJS.Timeout;
  /** The request line as the client sent it (see recordRequestLine). */
  requestLine: RequestLine;
}

/** The request body failed to arrive: the client went away, or was cut off. */
class BodyError extends Error {
  constructor(readonly why: "aborted" | "timeout") {
    super(why === "timeout" ? "the client stalled and was cut off" : "the client closed the connection before the whole body arrived");
  }
}

const REASON: Record<number, string> = { 200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 408: "Request Timeout", 417: "Expectation Failed", 431: "Request Header Fields Too Large", 500: "Internal Server Error", 503: "Service Unavailable" };

function jsonBody(doc: unknown): string {
  return `${safeJson(doc, 2)}\n`;
}

/** What the gate serves, as its refusals name it. */
const ENDPOINTS = `POST ${PREPARE_PATH}?name=NAME and GET ${HEALTH_PATH}`;

/**
 * What node's parser errors mean to a client that sent them (its error's
 * own text names parser states): a 400's message says what was wrong, never
 * with the client's bytes.
 */
const MALFORMED: Record<string, string> = {
  HPE_INVALID_METHOD: "the request does not start with an HTTP method (POST /prepare?name=NAME or GET /health)",
  HPE_INVALID_URL: "the request target is not a path starting with / nor an http:// URL, or holds a character HTTP does not allow there (a space, a control character or a byte over 0x7f: percent-encode it)",
  HPE_INVALID_VERSION: "the request line does not end in HTTP/1.1 (or HTTP/1.0)",
  HPE_INVALID_HEADER_TOKEN: "a header's name or value holds a character HTTP does not allow (a control character)",
  HPE_INVALID_CONTENT_LENGTH: "the Content-Length header is not a decimal number",
  HPE_UNEXPECTED_CONTENT_LENGTH: "Content-Length is given twice, or together with Transfer-Encoding",
  HPE_INVALID_TRANSFER_ENCODING: "the Transfer-Encoding is not chunked, or comes with a Content-Length",
  HPE_INVALID_CHUNK_SIZE: "a chunk's size line is not a hexadecimal number",
  HPE_INVALID_EOF_STATE: "the client closed its side before the whole request arrived (shorter than its Content-Length, or a chunked body without its last chunk)",
  HPE_CR_EXPECTED: "a line does not end in CRLF",
  HPE_LF_EXPECTED: "a line does not end in CRLF",
};

/**
 * What of a request node's parser takes is not the HTTP/1.1 the gate speaks
 * (a request line with more than one space between its parts is
 * requestLineProblem's): a request line without a version (HTTP/0.9, which
 * llhttp reads as one), or
 * a transfer coding other than chunked alone (`gzip, chunked` would make the
 * body's bytes compressed ones, judged and published as they came).
 */
function unspokenHttp(req: http.IncomingMessage): string | undefined {
  if (req.httpVersionMajor !== 1) return MALFORMED.HPE_INVALID_VERSION;
  const coding = req.headers["transfer-encoding"];
  if (coding !== undefined && coding.trim().toLowerCase() !== "chunked") return "the only Transfer-Encoding the gate reads is chunked, alone";
  return undefined;
}

/**
 * The first request line of a connection, as its bytes came (latin1),
 * without its CRLF and the empty lines before it: node's parser does not
 * hand it over, and takes more than HTTP/1.1's `METHOD SP TARGET SP
 * VERSION` (two spaces, a tab, a blank at the end: llhttp reads
 * `GET  /health HTTP/1.1` as `GET /health`). Undefined until its line
 * feed came (or when none came in the first MAX_HEADER_BYTES: the parser
 * answers 431 then).
 */
interface RequestLine {
  line?: string;
}

/**
 * Records the request line of what `socket` brings, from before node's
 * parser sees it: the listener is put first, and runs on each chunk before
 * the parser does (node's http server then reads the socket in JavaScript,
 * as it does any socket that has a data listener). It stops listening
 * once the line is complete, or past MAX_HEADER_BYTES; each byte is looked
 * at once.
 */
function recordRequestLine(socket: net.Socket): RequestLine {
  const record: RequestLine = {};
  const chunks: Buffer[] = [];
  let seen = 0;
  let started = false;
  const onData = (chunk: Buffer) => {
    let from = 0;
    // RFC 9112 §2.2: a server may ignore empty lines before the request line (llhttp does).
    if (!started) {
      while (from < chunk.length && (chunk[from] === 0x0d || chunk[from] === 0x0a)) from++;
      started = from < chunk.length;
    }
    const lf = started ? chunk.indexOf(0x0a, from) : -1;
    const part = chunk.subarray(from, lf < 0 ? chunk.length : lf);
    chunks.push(part);
    seen += chunk.length;
    if (lf >= 0) {
      const line = Buffer.concat(chunks).toString("latin1");
      record.line = line.endsWith("\r") ? line.slice(0, -1) : line;
    }
    if (lf >= 0 || seen > MAX_HEADER_BYTES) {
      chunks.length = 0;
      socket.off("data", onData);
    }
  };
  socket.prependListener("data", onData);
  return record;
}

/** Whitespace other than SP that a lenient reader takes between a request line's parts (RFC 9112 §3), and that ends a part here. */
const OTHER_BLANKS = /[\t\v\f\r]/;

/**
 * Why a request line is not `METHOD SP TARGET SP VERSION` with exactly one
 * space between its three parts and nothing before or after (RFC 9112 §3):
 * the gate reads requests only as HTTP/1.1 writes them, where a lenient
 * reader and a strict one could see different requests. Never with the
 * client's bytes.
 */
function requestLineProblem(record: RequestLine): string | undefined {
  const parts = record.line?.split(" ");
  if (parts?.length === 3 && parts.every((p) => p.length > 0 && !OTHER_BLANKS.test(p))) return undefined;
  return "the request line is not METHOD SP TARGET SP HTTP/1.1: put one space between the method, the target and HTTP/1.1, no tab, and nothing before the method or after the version";
}

/** A complete answer written straight to a socket that has no request object (yet). */
function rawAnswer(code: GateErrorCode, message: string): string {
  const status = STATUS_OF[code];
  const body = jsonBody(errorDocument(code, message));
  const retry = status === 503 ? "Retry-After: 1\r\n" : "";
  return `HTTP/1.1 ${status} ${REASON[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n${retry}\r\n${body}`;
}

/**
 * What one request is judged against: the gate's own known secrets, and for
 * this request only (nothing is kept for the next, nor for another client)
 * those of the environments its client runs under, as it sent them. A
 * client that sends none (curl) is judged by the gate's own alone: the
 * header only adds refusals, it is no trust boundary; the gate's copies of
 * the host's secrets are.
 */
function requestKnown(host: () => KnownSecrets, clientEnvironment: [string, string][]): () => KnownSecrets {
  if (clientEnvironment.length === 0) return host;
  let known: KnownSecrets | undefined;
  return () => (known ??= withClientEnvironment(host(), clientEnvironment));
}

/** Ends a connection with `answer`, reading (and dropping) what the client still sends until it is out. */
function closeWith(socket: net.Socket, answer: string): void {
  socket.on("error", () => {});
  socket.resume();
  socket.end(answer);
  const linger = setTimeout(() => socket.destroy(), LINGER_MS);
  linger.unref();
  socket.once("close", () => clearTimeout(linger));
}

export class GateServer {
  private readonly http: http.Server;
  private readonly net: net.Server;
  private readonly connections = new Map<net.Socket, Connection>();
  private readonly policy: Policy;
  private readonly clientTimeoutMs: number;
  private readonly requestTimeoutMs: number;
  private readonly maxConnections: number;
  private readonly maxHeldBytes: number;
  /** Bytes held by the uploads being received and judged (see maxHeldBytes). */
  private held = 0;
  private closing = false;
  private ownSocket?: { path: string; ino: number };
  private drained?: () => void;
  /** The verified outbox, for answers that name it. */
  readonly outbox: string;
  /** The watch guarding the outbox as its lock last answered, which lock that was, and when (watchGuard). */
  private guardSeen?: { lock: string; guard: WatchGuard | undefined; at: number };

  constructor(private readonly options: GateOptions) {
    this.clientTimeoutMs = options.clientTimeoutMs ?? DEFAULT_CLIENT_TIMEOUT_MS;
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.maxConnections = options.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
    this.maxHeldBytes = options.maxHeldBytes ?? DEFAULT_MAX_HELD_BYTES;
    this.policy = policyOf(options.config);
    // Verified (and made, 0750) before the first connection: an unsafe outbox is exit 2, not a failing request.
    this.outbox = this.layout().outbox;
    this.http = http.createServer({ maxHeaderSize: MAX_HEADER_BYTES, requireHostHeader: false });
    // A client may shut its side once the body is sent (nc, socat and
    // shutdown(2) do) and still read the answer: without this, node's http
    // ends the connection at the client's FIN, and the file is published
    // with nobody told. (The option is node's own, not in its typings.)
    (this.http as http.Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
    // Timeouts are this server's own (see onConnection); a listener here keeps http from destroying the socket first.
    this.http.on("timeout", () => {});
    this.http.on("request", (req, res) => this.dispatch(req, res, false));
    this.http.on("checkContinue", (req, res) => this.dispatch(req, res, true));
    this.http.on("checkExpectation", (req, res) => this.dispatch(req, res, false, true));
    this.http.on("clientError", (err: NodeJS.ErrnoException, socket: net.Socket) => this.onClientError(err, socket));
    // Without a listener, node closes a CONNECT's connection without a word.
    this.http.on("connect", (_req: http.IncomingMessage, socket: net.Socket) => this.onConnect(socket));
    // allowHalfOpen: a client may shut its side once the body is sent and still read the answer.
    this.net = net.createServer({ allowHalfOpen: true }, (socket) => this.onConnection(socket));
    this.net.on("error", (err) => this.options.logger.error({ event: "listen_error", error: escapeText(err.message) }, "listening socket error"));
  }

  /**
   * Listens on an inherited descriptor (systemd's, never removed), or creates
   * the socket at a path (removed again by close()).
   */
  async listen(target: { fd: number } | { path: string }): Promise<void> {
    if ("path" in target) {
      await clearSocketPath(target.path);
      const { ino } = await listenOnPath(this.net, target.path);
      this.ownSocket = { path: target.path, ino };
      return;
    }
    await new Promise<void>((resolve, reject) => {
      this.net.once("error", reject);
      this.net.listen({ fd: target.fd }, () => {
        this.net.off("error", reject);
        resolve();
      });
    });
  }

  /** How many connections are open now. */
  get connectionCount(): number {
    return this.connections.size;
  }

  /**
   * Stops accepting, lets every request that has begun finish (at most
   * `timeoutMs`), then closes what is left.
   */
  async close(timeoutMs = DEFAULT_SHUTDOWN_TIMEOUT_MS): Promise<void> {
    this.closing = true;
    this.net.close();
    for (const conn of this.connections.values()) if (!conn.inRequest) conn.socket.destroy();
    if (this.connections.size > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        this.drained = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    for (const conn of this.connections.values()) conn.socket.destroy();
    if (this.ownSocket) removeOwnSocket(this.ownSocket.path, this.ownSocket.ino);
  }

  private layout(): Layout {
    return openLayout(this.options.config, { groupReadable: true })!;
  }

  private onConnection(socket: net.Socket): void {
    const { logger } = this.options;
    if (this.closing) {
      closeWith(socket, rawAnswer("shutting_down", "the gate is shutting down; try again in a moment"));
      return;
    }
    if (this.connections.size >= this.maxConnections) {
      logger.warn({ event: "busy", connections: this.connections.size }, "connection refused: too many at once");
      closeWith(socket, rawAnswer("busy", `the gate is serving ${this.maxConnections} connections; try again in a moment`));
      return;
    }
    const conn: Connection = { socket, inRequest: false, bodyDone: false, answered: false, timedOut: false, expectContinue: false, continued: false, requestLine: {} };
    this.connections.set(socket, conn);
    socket.setTimeout(this.clientTimeoutMs);
    socket.on("timeout", () => this.onStall(conn, `the client sent nothing for ${this.clientTimeoutMs} ms`));
    conn.lifetime = setTimeout(() => this.onStall(conn, `the request did not arrive within ${this.requestTimeoutMs} ms`), this.requestTimeoutMs);
    socket.once("close", () => {
      clearTimeout(conn.lifetime);
      // Once answered, http no longer ends the request when its socket goes: a body still being read must fail here.
      if (!conn.bodyDone) conn.req?.destroy(new BodyError(conn.timedOut ? "timeout" : "aborted"));
      this.connections.delete(socket);
      if (this.connections.size === 0) this.drained?.();
    });
    this.http.emit("connection", socket);
    // After http took the socket (its listener wrapper then hands the parser the bytes in JavaScript), before any byte arrives.
    conn.requestLine = recordRequestLine(socket);
  }

  /** The client stalls before its request is complete: answer 408 and cut it off. */
  private onStall(conn: Connection, why: string): void {
    if (conn.bodyDone || conn.answered) return;
    conn.timedOut = true;
    this.options.logger.warn({ event: "client_timeout", why }, "client cut off");
    conn.socket.pause();
    if (conn.res && !conn.res.headersSent) this.sendError(conn, conn.res, "client_timeout", `${why}; nothing was published`);
    else {
      conn.answered = true;
      closeWith(conn.socket, rawAnswer("client_timeout", `${why}; nothing was published`));
    }
    // The body's reader then fails, whatever the client does next.
    setTimeout(() => conn.socket.destroy(), LINGER_MS).unref();
  }

  private onClientError(err: NodeJS.ErrnoException, socket: net.Socket): void {
    const conn = this.connections.get(socket);
    // Node's parser error code, never the client's bytes.
    const code = typeof err.code === "string" ? err.code : "unknown";
    // Bytes after a whole first request (a lying Content-Length, pipelined
    // garbage) are not that request's: it is answered as usual, even if
    // published already; these are never served.
    if (conn?.inRequest && conn.req?.complete && code !== "ECONNRESET") {
      this.refusePipelined(conn);
      return;
    }
    if (code === "ECONNRESET" || !socket.writable || conn?.answered || conn?.res?.headersSent) {
      socket.destroy();
      return;
    }
    if (conn) conn.answered = true;
    this.options.logger.warn({ event: "bad_request", code }, "malformed request");
    const answer =
      code === "HPE_HEADER_OVERFLOW"
        ? rawAnswer("headers_too_large", `the request line and headers are over ${MAX_HEADER_BYTES} bytes`)
        : rawAnswer("bad_request", `malformed HTTP request (${code}): ${MALFORMED[code] ?? "not the HTTP/1.1 the gate speaks"}; nothing was published; see the protocol in the README`);
    closeWith(socket, answer);
  }

  /**
   * CONNECT (its target in the authority-form, `host:port`) asks for a
   * tunnel: the gate is no proxy. node hands over the bare socket, after
   * the request's head; the answer is written to it whole.
   */
  private onConnect(socket: net.Socket): void {
    const conn = this.connections.get(socket);
    if (!conn || conn.answered) {
      socket.destroy();
      return;
    }
    conn.answered = true;
    // The head is all there is: no body is read, no timeout applies any more.
    conn.bodyDone = true;
    clearTimeout(conn.lifetime);
    this.options.logger.warn({ event: "request_error", code: "bad_request", error: "CONNECT" }, "request answered with an error");
    closeWith(socket, rawAnswer("bad_request", `the gate is no proxy: CONNECT (a host:port target) is not served; it answers ${ENDPOINTS}; nothing was published`));
  }

  private dispatch(req: http.IncomingMessage, res: http.ServerResponse, expectContinue: boolean, badExpectation = false): void {
    // A client that goes away fails the body's reader or the answer's write; neither may become an uncaught error.
    req.on("error", () => {});
    res.on("error", () => {});
    const conn = this.connections.get(req.socket);
    // Before the answered check: the first request's answer (one given at
    // once, as /health's) may still be on its way out, and destroying the
    // socket would drop it.
    if (conn?.inRequest) {
      this.refusePipelined(conn, req);
      return;
    }
    if (!conn || conn.answered) {
      req.socket.destroy();
      return;
    }
    conn.inRequest = true;
    conn.expectContinue = expectContinue;
    conn.req = req;
    conn.res = res;
    this.route(conn, req, res, expectContinue, badExpectation).catch((err: unknown) => {
      this.options.logger.error({ event: "internal_error", error: escapeText(err instanceof Error ? (err.stack ?? err.message) : String(err)) }, "request failed");
      if (!conn.answered) this.sendError(conn, res, "internal_error", "the gate failed on this request; see its log");
    });
  }

  /**
   * A further request on a connection whose first one is still being served
   * (pipelined, or HTTP/1.0 keep-alive): never served. One request per
   * connection (every answer says Connection: close) is what makes
   * --max-connections bound the requests judged at once; node's parser would
   * otherwise hand over every request a client packs into one connection.
   * Nothing more is read from it; the first request is answered as usual.
   */
  private refusePipelined(conn: Connection, req?: http.IncomingMessage): void {
    if (!conn.pipelined) this.options.logger.warn({ event: "pipelined" }, "a further request on the same connection is not served: the gate takes one request per connection");
    conn.pipelined = true;
    conn.socket.pause();
    req?.resume();
  }

  private async route(conn: Connection, req: http.IncomingMessage, res: http.ServerResponse, expectContinue: boolean, badExpectation: boolean): Promise<void> {
    // First: what the parser made of a malformed line is not what was sent.
    const badLine = requestLineProblem(conn.requestLine);
    if (badLine) return this.sendError(conn, res, "bad_request", `${badLine}; nothing was published; see the protocol in the README`);
    let target;
    try {
      target = parseTarget(req.url ?? "", req.method ?? "");
    } catch (err) {
      if (!(err instanceof FatalError)) throw err;
      return this.sendError(conn, res, "bad_request", `${err.message}; nothing was published`);
    }
    const unspoken = unspokenHttp(req);
    if (unspoken) return this.sendError(conn, res, "bad_request", `${unspoken}; nothing was published; see the protocol in the README`);
    const { path, search } = target;
    if (path === PREPARE_PATH) {
      if (req.method !== "POST") return this.sendError(conn, res, "method_not_allowed", `${PREPARE_PATH} takes POST`, { Allow: "POST" });
      if (badExpectation) return this.sendError(conn, res, "expectation_failed", "the only expectation understood is 100-continue");
      return this.prepare(conn, req, res, search, expectContinue);
    }
    if (path === HEALTH_PATH) {
      if (req.method !== "GET" && req.method !== "HEAD") return this.sendError(conn, res, "method_not_allowed", `${HEALTH_PATH} takes GET or HEAD`, { Allow: "GET, HEAD" });
      return this.health(conn, res);
    }
    return this.sendError(conn, res, "no_such_endpoint", `no such endpoint: ${escapeText(path.slice(0, 200))} (the gate answers ${ENDPOINTS})`);
  }

  private health(conn: Connection, res: http.ServerResponse): void {
    let doc: HealthDocument;
    try {
      const layout = this.layout();
      doc = { ok: true, outbox: layout.outbox, state: layout.stateDir };
    } catch (err) {
      if (!(err instanceof FatalError)) throw err;
      this.options.logger.error({ event: "unhealthy", code: err.code, error: err.message }, "the outbox or its state is unsafe");
      return this.send(conn, res, 503, { ok: false, outbox: this.outbox, state: this.options.config.stateDir, error: { code: err.code, message: err.message } } satisfies HealthDocument);
    }
    this.send(conn, res, 200, doc);
  }

  private async prepare(conn: Connection, req: http.IncomingMessage, res: http.ServerResponse, search: string, expectContinue: boolean): Promise<void> {
    const { logger } = this.options;
    const started = performance.now();
    let query;
    let clientEnvironment: [string, string][];
    try {
      query = parsePrepareQuery(search);
      // Its values are never logged nor echoed: its errors name nothing of it.
      clientEnvironment = parseEnvironmentHeader(req.headersDistinct[ENVIRONMENT_HEADER.toLowerCase()]);
    } catch (err) {
      if (!(err instanceof FatalError)) throw err;
      return this.sendError(conn, res, "bad_request", err.message);
    }
    let ctx: JudgeContext;
    try {
      const layout = this.layout();
      const guard = await this.watchGuard(layout.stateDir);
      ctx = {
        layout,
        policy: { ...narrowPolicy(this.policy, query.policy, this.options.config.platformLimits), ...(guard ? { guard } : {}) },
        // Read per request (a changed .env or credential counts from the next one): $CREDENTIALS_DIRECTORY/hermes-env* in a unit.
        known: requestKnown(knownSecretsReader(this.options.config.hermesHome, this.options.config.home), clientEnvironment),
      };
    } catch (err) {
      if (!(err instanceof FatalError) || (err.code !== "outbox_unsafe" && err.code !== "state_unsafe")) throw err;
      logger.error({ event: "unhealthy", code: err.code, error: err.message }, "the outbox or its state is unsafe");
      return this.sendError(conn, res, err.code, err.message);
    }
    const length = req.headers["content-length"];
    const holds = this.heldFor(query.name, length, ctx.policy);
    if (this.held > 0 && this.held + holds > this.maxHeldBytes) {
      logger.warn({ event: "busy", held: this.held, request: holds }, "uploads held at once at the bound: answered busy");
      return this.sendError(conn, res, "busy", `the gate holds ${formatBytes(this.held)} of uploads being judged, and this one would pass its bound of ${formatBytes(this.maxHeldBytes)}; try again in a moment`);
    }
    this.held += holds;
    const report = emptyReport(ctx.layout.outbox);
    try {
      const media = await judge(ctx, {
        name: query.name,
        nameIs: "name",
        bytes: {
          stream: this.body(conn, req),
          ...(length !== undefined ? { declaredBytes: Number(length) } : {}),
          beforeRead: () => {
            if (!expectContinue) return;
            conn.continued = true;
            res.writeContinue();
          },
        },
      });
      addMedia(report, media, logger, { ms: Math.round(performance.now() - started) });
    } catch (err) {
      if (err instanceof BodyError) {
        // Answered already (timeout), or nobody is left to answer.
        if (err.why === "aborted") logger.warn({ event: "aborted", source: escapeText(query.name), error: err.message }, "nothing was published");
        return;
      }
      addDropped(report, droppedResult(query.name, err), logger, { ms: Math.round(performance.now() - started) });
    } finally {
      this.held -= holds;
    }
    this.send(conn, res, 200, settleReport(report));
  }

  /**
   * The watch guarding this outbox (a watch on the gate's host, `--with-watch`),
   * if one runs: its guard quarantines what its policy lacks, so the gate must
   * not publish it (judge.ts checkGuarded, checkSize), however its own
   * allow-list and caps were set. One lstat of its lock per request; the lock
   * is asked (one connection) only when it is another one than last time
   * (a watch started, another took over, or the watch read a new policy: it
   * touches its lock), or when a watch's answer is older than
   * GUARD_ANSWER_MS: a watch that was killed leaves its lock as it was, and
   * its answer must not outlive it. A dead lock's "no watch" is kept: it
   * never answers again.
   */
  private async watchGuard(stateDir: string): Promise<WatchGuard | undefined> {
    const lock = lockIdentity(stateDir);
    if (lock === undefined) return undefined;
    const seen = this.guardSeen;
    if (seen?.lock === lock && (seen.guard === undefined || performance.now() - seen.at < GUARD_ANSWER_MS)) return seen.guard;
    const at = performance.now();
    const holder = await watchHolder(stateDir);
    const guard = holder && watchGuardOf(holder, this.policy.allow);
    // Asked again at the next request when the lock changed meanwhile.
    if (lockIdentity(stateDir) === lock) this.guardSeen = { lock, guard, at };
    return guard;
  }

  /**
   * What an upload holds while it is received and judged: a document, its
   * declared length, at most its cap (a chunked one: its cap); anything
   * else, nothing (its bytes go to the staging file as they arrive, and its
   * checks read them from there).
   */
  private heldFor(name: string, contentLength: string | undefined, policy: Policy): number {
    const ext = extensionOf(name);
    if (!readsWholeFile(ext)) return 0;
    const cap = policy.capFor(ext);
    const declared = contentLength === undefined ? Number.NaN : Number(contentLength);
    return Number.isSafeInteger(declared) && declared >= 0 ? Math.min(declared, cap) : cap;
  }

  /**
   * The request body, chunk by chunk. Leaving the loop early (the cap) does
   * not destroy the request, so the refusal can still be answered; a failed
   * body is a BodyError. Once it is complete, no timeout applies any more.
   */
  private async *body(conn: Connection, req: http.IncomingMessage): AsyncGenerator<Uint8Array> {
    try {
      for await (const chunk of req.iterator({ destroyOnReturn: false })) {
        if (conn.timedOut) throw new BodyError("timeout");
        yield chunk as Uint8Array;
      }
    } catch (err) {
      if (err instanceof BodyError) throw err;
      throw new BodyError(conn.timedOut ? "timeout" : "aborted");
    }
    if (conn.timedOut) throw new BodyError("timeout");
    conn.bodyDone = true;
    conn.socket.setTimeout(0);
    clearTimeout(conn.lifetime);
  }

  private sendError(conn: Connection, res: http.ServerResponse, code: GateErrorCode, message: string, headers: Record<string, string> = {}): void {
    if (code !== "client_timeout") this.options.logger.warn({ event: "request_error", code, error: message }, "request answered with an error");
    const extra = STATUS_OF[code] === 503 ? { "Retry-After": "1", ...headers } : headers;
    this.send(conn, res, STATUS_OF[code], errorDocument(code, message) satisfies ErrorDocument, extra);
  }

  /**
   * The one way an answer goes out: JSON, complete, and the connection closed
   * after it. A client may still be sending a body the gate will not read
   * (an early refusal, a body past the cap): then the rest is read and
   * dropped for a moment (DRAIN_BYTES, LINGER_MS), so that the client can
   * read the answer instead of failing on a closed connection.
   */
  private send(conn: Connection, res: http.ServerResponse, status: number, doc: unknown, headers: Record<string, string> = {}): void {
    if (conn.answered || res.headersSent) return;
    conn.answered = true;
    const body = jsonBody(doc);
    const req = res.req;
    res.writeHead(status, { "Content-Type": "application/json; charset=utf-8", "Content-Length": Buffer.byteLength(body), Connection: "close", ...headers });
    const linger = setTimeout(() => conn.socket.destroy(), Math.max(LINGER_MS, this.clientTimeoutMs));
    linger.unref();
    conn.socket.once("close", () => clearTimeout(linger));
    // Ending the answer closes the connection once it is written (http's Connection: close).
    const noBodyComing = req.complete || conn.timedOut || (conn.expectContinue && !conn.continued);
    if (noBodyComing) {
      res.end(req.method === "HEAD" ? undefined : body);
      return;
    }
    res.write(body);
    let dropped = 0;
    req.on("data", (chunk: Buffer) => {
      dropped += chunk.length;
      if (dropped > DRAIN_BYTES) conn.socket.destroy();
    });
    req.once("end", () => res.end());
    req.resume();
    setTimeout(() => conn.socket.destroy(), LINGER_MS).unref();
  }
}
