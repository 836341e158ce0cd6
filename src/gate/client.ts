// prepare as the gate's client: the client half of the checks (source.ts)
// on the calling user's side, then the bytes streamed from the open
// descriptor to the gate, which judges and publishes them. The report is the
// one local mode makes, the outbox being the gate's.
//
// With each request go the secret variables of the environments the client
// runs under (its own, and its same-user ancestors': the Hermes gateway's
// above an agent's prepare), which local mode knows and the gate, another
// user, cannot read. The agent may leave them out (curl speaks the protocol
// too): they only add refusals, and are no trust boundary; the gate's own
// copies of the host's secrets (gate-secrets) are. Nor do they tell anyone
// anything new: any process of the agent's user reads them in /proc.
import fs from "node:fs";
import type { GateSocket } from "../config/config.js";
import { hermesHomeDirs } from "../content/hermes-homes.js";
import { processEnvironments } from "../content/process-environments.js";
import { environmentEntryMayHoldSecret } from "../content/secret-variables.js";
import { FatalError } from "../core/errors.js";
import { escapeText, isEscaped } from "../core/escape.js";
import { type Logger, silentLogger } from "../log/logger.js";
import type { PolicyRequest } from "../prepare/judge.js";
import { type DroppedResult, type MediaResult, type PrepareReport, addDropped, addMedia, droppedResult, emptyReport, settleReport } from "../prepare/report.js";
import { type OpenedSource, type SourcePolicy, assertUnchanged, changedDuringCopy, checkStreamSource, openSource } from "../prepare/source.js";
import { type Answer, ExchangeError, GateConnection } from "./http1.js";
import { ENVIRONMENT_HEADER, HEALTH_PATH, type HealthDocument, encodeEnvironment, prepareTarget } from "./protocol.js";

/** How long the client waits for the gate at any one step (connect, 100 Continue, the answer). */
export const DEFAULT_GATE_TIMEOUT_MS = 60_000;
/** How long a busy gate is asked again before the client gives up. */
const BUSY_RETRY_MS = 10_000;
const CHUNK = 1024 * 1024;

/** A file on disk (under its own name, or under `name`), or bytes from a stream under a given name (and the descriptor it reads, if any), as for local prepare. */
export type GateInput = string | { path: string; name: string } | { stream: AsyncIterable<Uint8Array | string>; name: string; fd?: number };

export interface GateClientOptions {
  gate: GateSocket;
  sourcePolicy: SourcePolicy;
  /** Narrows the gate's policy (prepare's --max-size, --allow, --platform). */
  policy?: PolicyRequest;
  logger?: Logger;
  timeoutMs?: number;
  /**
   * The variables sent with each request for the gate to look for
   * (protocol.ts ENVIRONMENT_HEADER): by default clientEnvironment()'s;
   * [] sends none.
   */
  environment?: readonly [string, string][];
  /** The caller's Hermes home: the gateways its gateway.pid and its profiles' name count among the environments sent, as in local mode. */
  hermesHome?: string;
}

export interface GateClientResult {
  /** Everything done before a failure, if any. */
  report: PrepareReport;
  /** Set when the gate could not be reached or failed: exit 2, the rest of the inputs untried. */
  failure?: FatalError;
}

const JOURNAL_HINT = "see the gate's log: journalctl -u media-outbox-gate.service";

/** The message of a gate that cannot be reached, with what to do about it. */
function unavailable(gate: GateSocket, err: ExchangeError, timeoutMs: number): FatalError {
  const where = `${escapeText(gate.path)} (from ${gate.from})`;
  let message: string;
  if (err.kind === "timeout") message = `the gate at ${where} did not answer within ${timeoutMs < 1000 ? `${timeoutMs} ms` : `${Math.round(timeoutMs / 1000)} s`}; ${JOURNAL_HINT}`;
  else if (err.kind === "closed") message = `the gate at ${where} closed the connection before answering (it may have stopped or crashed); nothing was published for this file; ${JOURNAL_HINT}`;
  else if (err.code === "ENOENT") message = `no gate socket at ${where}: the gate is not installed or its socket unit is not started; ask the administrator to run: systemctl start media-outbox-gate.socket`;
  else if (err.code === "ECONNREFUSED") message = `nothing listens on ${where}: the gate is not running; ask the administrator to run: systemctl start media-outbox-gate.socket`;
  else if (err.code === "EACCES" || err.code === "EPERM") {
    message = `permission denied on ${where}: this user may not use the gate; the administrator names agent users at install (media-outbox install systemd --system --gate --agent-user USER), and the user then starts a new session`;
  } else message = `cannot use the gate at ${where}: ${escapeText(err.message)}`;
  return new FatalError("gate_unavailable", message, { cause: err });
}

function gateError(gate: GateSocket, message: string): FatalError {
  return new FatalError("gate_error", `the gate at ${escapeText(gate.path)} (from ${gate.from}) ${message}`);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function parseJson(answer: Answer): unknown {
  try {
    return JSON.parse(answer.body.toString("utf8"));
  } catch {
    return undefined;
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const isPlainPath = (v: unknown): v is string => typeof v === "string" && v.startsWith("/") && isEscaped(v);

function isMedia(v: unknown): v is MediaResult {
  return (
    isObject(v) &&
    isPlainPath(v.path) &&
    v.directive === `MEDIA:${v.path}` &&
    [v.source, v.name, v.sha256, v.mime].every((s) => typeof s === "string" && isEscaped(s)) &&
    typeof v.bytes === "number" &&
    typeof v.reused === "boolean"
  );
}

function isDropped(v: unknown): v is DroppedResult {
  return isObject(v) && [v.path, v.reason, v.code].every((s) => typeof s === "string" && isEscaped(s));
}

/**
 * The report in a 200 answer, checked: its text is printed as it is, so
 * nothing in it may be unescaped, and each directive must name its path.
 */
function reportOf(gate: GateSocket, answer: Answer): PrepareReport {
  const doc = parseJson(answer);
  if (isObject(doc) && isPlainPath(doc.outbox) && Array.isArray(doc.media) && Array.isArray(doc.media_dropped) && doc.media.every(isMedia) && doc.media_dropped.every(isDropped)) {
    return doc as unknown as PrepareReport;
  }
  throw gateError(gate, "answered with a document that is not a prepare report");
}

/** An answer other than a report: the gate's error document, escaped again (it is printed). */
function errorAnswer(gate: GateSocket, answer: Answer): FatalError {
  const doc = parseJson(answer);
  const error = isObject(doc) && isObject(doc.error) ? doc.error : {};
  const code = typeof error.code === "string" ? escapeText(error.code.slice(0, 64)) : "unknown";
  const message = typeof error.message === "string" ? escapeText(error.message.slice(0, 1000)) : "no message";
  return gateError(gate, `answered ${answer.status} ${code}: ${message}`);
}

const isBusy = (answer: Answer) => answer.status === 503 && (parseJson(answer) as { error?: { code?: unknown } } | undefined)?.error?.code === "busy";

/** Streams an open file, holding back its last chunk until the source is known unchanged. */
async function streamFile(conn: GateConnection, source: OpenedSource): Promise<void> {
  let pending: Buffer | undefined;
  let total = 0;
  for (;;) {
    const chunk = Buffer.allocUnsafe(CHUNK);
    const n = fs.readSync(source.fd, chunk, 0, CHUNK, null);
    if (n === 0) break;
    total += n;
    // Grown past what fstat said: the gate would take the first bytes as the whole file.
    if (total > source.stat.size) throw changedDuringCopy();
    if (pending) await conn.write(pending);
    if (conn.answered) return;
    pending = chunk.subarray(0, n);
  }
  // The last chunk goes only once the copy is known whole: otherwise the gate
  // sees a body cut short and publishes nothing.
  assertUnchanged(source, total);
  if (pending) await conn.write(pending);
}

async function streamChunked(conn: GateConnection, stream: AsyncIterable<Uint8Array | string>): Promise<void> {
  for await (const piece of stream) {
    const chunk = typeof piece === "string" ? Buffer.from(piece) : piece;
    if (chunk.length === 0) continue;
    await conn.write(`${chunk.length.toString(16)}\r\n`);
    await conn.write(chunk);
    await conn.write("\r\n");
    if (conn.answered) return;
  }
  await conn.write("0\r\n\r\n");
}

type Sender = (conn: GateConnection) => Promise<void>;

/**
 * One request: headers, `100 Continue`, the body, the answer. A busy gate
 * (nothing of the body sent yet) is asked again for a while.
 */
async function exchange(options: GateClientOptions, target: string, headers: Record<string, string>, send: Sender): Promise<Answer> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_GATE_TIMEOUT_MS;
  const giveUp = Date.now() + BUSY_RETRY_MS;
  for (let attempt = 0; ; attempt++) {
    let conn: GateConnection;
    try {
      conn = await GateConnection.open(options.gate.path, timeoutMs);
    } catch (err) {
      // A full listen queue: as busy as a 503.
      if (err instanceof ExchangeError && err.code === "EAGAIN" && Date.now() < giveUp) {
        await sleep(backoff(attempt));
        continue;
      }
      throw err;
    }
    try {
      conn.sendHead("POST", target, { ...headers, Expect: "100-continue" });
      const first = await conn.waitContinue();
      if (first !== "continue") {
        if (isBusy(first) && Date.now() < giveUp) {
          await sleep(backoff(attempt));
          continue;
        }
        return first;
      }
      try {
        await send(conn);
      } catch (err) {
        conn.abort();
        throw err;
      }
      return await conn.answer();
    } finally {
      conn.close();
    }
  }
}

/** 25 ms doubling to 800 ms, with jitter, so waiting clients do not return all at once. */
function backoff(attempt: number): number {
  const base = 25 * 2 ** Math.min(attempt, 5);
  return base / 2 + Math.random() * base;
}

async function sendOne(options: GateClientOptions, input: GateInput, headers: Record<string, string>): Promise<PrepareReport> {
  if (typeof input === "object" && "stream" in input) {
    // A regular file on standard input is the caller's to place, as a FILE is (source.ts checkStreamSource).
    if (input.fd !== undefined) checkStreamSource(input.fd, options.sourcePolicy);
    const answer = await exchange(options, prepareTarget(input.name, options.policy), { ...headers, "Transfer-Encoding": "chunked" }, (conn) => streamChunked(conn, input.stream));
    return answerReport(options.gate, answer);
  }
  const file = typeof input === "string" ? input : input.path;
  // The gate only ever sees a name: the file's own path, or the name it is to be published under.
  const name = typeof input === "string" ? input : input.name;
  const source = openSource(file, options.sourcePolicy);
  try {
    const answer = await exchange(options, prepareTarget(name, options.policy), { ...headers, "Content-Length": String(source.stat.size) }, (conn) => streamFile(conn, source));
    return answerReport(options.gate, answer);
  } finally {
    fs.closeSync(source.fd);
  }
}

/**
 * A file sent under another name is reported, as in local mode, by its path
 * as given (the gate only knew the name): the published file's `source`, or
 * the refused input's `path`.
 */
function reportedAsGiven(answered: PrepareReport, given: string): PrepareReport {
  const shown = escapeText(given);
  return { ...answered, media: answered.media.map((m) => ({ ...m, source: shown })), media_dropped: answered.media_dropped.map((d) => ({ ...d, path: shown })) };
}

function answerReport(gate: GateSocket, answer: Answer): PrepareReport {
  if (answer.status === 200) return reportOf(gate, answer);
  throw errorAnswer(gate, answer);
}

/**
 * The variables that may hold a secret (the rule known.ts judges
 * environments by: secret-variables.ts) of the environments local mode
 * reads: this process's, its ancestors', then the running gateways' that
 * the gateway.pid of `hermesHome` and its profiles name; nearest first,
 * each NAME=VALUE once.
 */
export function clientEnvironment(hermesHome?: string, environments = processEnvironments(hermesHome === undefined ? [] : hermesHomeDirs(hermesHome))): [string, string][] {
  const seen = new Set<string>();
  const out: [string, string][] = [];
  for (const env of environments) {
    for (const [name, value] of env.entries) {
      if (!environmentEntryMayHoldSecret(name, value)) continue;
      const key = `${name}\0${value}`;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push([name, value]);
    }
  }
  return out;
}

/** The environment's header, made once for all the requests of a call; what its bound cut is logged (the names, never a value). */
function environmentHeaders(options: GateClientOptions, logger: Logger): Record<string, string> {
  const { value, dropped } = encodeEnvironment(options.environment ?? clientEnvironment(options.hermesHome));
  if (dropped.length > 0) {
    const names = dropped.slice(0, 20).map(([name]) => escapeText(name.slice(0, 128)));
    logger.warn(
      { event: "environment_cut", dropped: dropped.length, names },
      `${dropped.length} variable(s) of the environments prepare runs under are not sent to the gate: they pass the ${ENVIRONMENT_HEADER} header's bound; the nearest environments are sent, and the gate does not look for the rest`,
    );
  }
  return value === "" ? {} : { [ENVIRONMENT_HEADER]: value };
}

/** The gate's outbox, from GET /health (when no input reached the gate, the report still names it). */
export async function gateHealth(gate: GateSocket, timeoutMs = DEFAULT_GATE_TIMEOUT_MS): Promise<HealthDocument> {
  let answer: Answer;
  try {
    const conn = await GateConnection.open(gate.path, timeoutMs);
    try {
      conn.sendHead("GET", HEALTH_PATH, {});
      answer = await conn.answer();
    } finally {
      conn.close();
    }
  } catch (err) {
    if (err instanceof ExchangeError) throw unavailable(gate, err, timeoutMs);
    throw err;
  }
  const doc = parseJson(answer);
  // A state path that would not print as it is (or none: a gate before the field) is left out, never a failure: prepare needs the outbox alone.
  if (answer.status === 200 && isObject(doc) && doc.ok === true && isPlainPath(doc.outbox)) return { ok: true, outbox: doc.outbox, ...(isPlainPath(doc.state) ? { state: doc.state } : {}) };
  throw errorAnswer(gate, answer);
}

/**
 * Prepares each input through the gate, in order, one request each. A
 * refusal (by the client's checks or the gate's) is reported per input; a
 * gate that cannot be reached or fails ends the call with `failure`.
 */
export async function prepareThroughGate(inputs: GateInput[], options: GateClientOptions): Promise<GateClientResult> {
  const logger = options.logger ?? silentLogger;
  const timeoutMs = options.timeoutMs ?? DEFAULT_GATE_TIMEOUT_MS;
  let outbox: string | undefined;
  const report = emptyReport("");
  const headers = environmentHeaders(options, logger);
  try {
    for (const input of inputs) {
      const given = typeof input === "string" ? input : "path" in input ? input.path : input.name;
      let answered: PrepareReport;
      try {
        answered = await sendOne(options, input, headers);
        if (typeof input === "object" && "path" in input) answered = reportedAsGiven(answered, given);
      } catch (err) {
        if (err instanceof ExchangeError) throw unavailable(options.gate, err, timeoutMs);
        if (err instanceof FatalError) throw err;
        addDropped(report, droppedResult(given, err), logger);
        continue;
      }
      outbox ??= answered.outbox;
      for (const m of answered.media) addMedia(report, m, logger);
      for (const d of answered.media_dropped) addDropped(report, d, logger);
    }
    report.outbox = outbox ?? (await gateHealth(options.gate, timeoutMs)).outbox;
  } catch (err) {
    if (!(err instanceof FatalError)) throw err;
    report.outbox = outbox ?? "";
    return { report: settleReport(report), failure: err };
  }
  return { report: settleReport(report) };
}
