// The environments a prepare was started under: its own, and each of its
// ancestors' that runs as the same user. An agent's command is a child of
// the Hermes gateway (through a shell or two), so the gateway's environment
// is among them, whatever put a key there: the unit's Environment= or
// EnvironmentFile=, `docker run -e`, an exported shell variable. Hermes
// removes provider keys from its tools' environment, but any tool of the
// agent can read its parent's /proc/PID/environ: what that holds can leak.
//
// And each running gateway's that Hermes' own record names ({HERMES_HOME}/
// gateway.pid, one per Hermes home and per profile): the watch (a service
// whose ancestors are the service manager) judges a sandbox's drops, and a
// prepare may start outside the gateway's tree (cron, another shell), and a
// gateway that is PID 1 of a container is no ancestor the walk reaches.
//
// Linux's /proc only; elsewhere (or in a PID namespace that hides the
// parents) there are fewer environments, never an error. A process that is
// not the same user's (or not dumpable) cannot be read and is passed over:
// the gate, a service user of its own, reads none of the agents' gateways.
import fs from "node:fs";
import path from "node:path";
import { withRegularFile } from "../core/regular-file.js";
import { readAt } from "../core/read-at.js";

/** Ancestors looked at: prepare, a shell or two, a tool runner, the gateway, the service manager. */
const MAX_ANCESTORS = 16;
/** Bytes of one environment read (Linux allows a few MiB; a gateway's holds a few KiB). */
const MAX_ENVIRONMENT_BYTES = 1024 * 1024;

export interface ProcessEnvironment {
  pid: number;
  /** The process's command name (escape it before printing: any process may name itself). */
  command: string;
  /** NAME=VALUE entries, in the environment's order. */
  entries: [string, string][];
}

/** Hermes' record of its running gateway, in each Hermes home (gateway/status.py `_get_pid_path`). */
export const GATEWAY_PID_FILE = "gateway.pid";
/** Bytes of a gateway.pid read: Hermes writes a PID, a kind, an argv and a start time (a few hundred bytes). */
const MAX_PID_FILE_BYTES = 64 * 1024;

/**
 * A process's environment, by its PID and start time: what a process was
 * started with does not change, and a long-running process (the watch, the
 * gate) judges many files under the same ancestors and gateways. Kept while
 * the last call still met the process: a gateway that restarted is dropped.
 */
const environments = new Map<string, ProcessEnvironment | undefined>();

/**
 * This process's environment, then its ancestors' that can be read (nearest
 * first), then the running gateway's that the gateway.pid of each of
 * `hermesHomes` names (in their order; one that is an ancestor already
 * listed is not listed again). The PID files are read at each call: a
 * gateway restarts under a new PID.
 */
export function processEnvironments(hermesHomes: readonly string[] = []): ProcessEnvironment[] {
  const out: ProcessEnvironment[] = [{ pid: process.pid, command: "media-outbox", entries: ownEntries() }];
  const seen = new Set([process.pid]);
  const met = new Set<string>();
  for (let pid = process.ppid, n = 0; pid > 1 && n < MAX_ANCESTORS && !seen.has(pid); n++) {
    seen.add(pid);
    const stat = readStat(pid);
    if (stat === undefined) break;
    const env = environmentCached(pid, stat, met);
    if (env !== undefined) out.push(env);
    if (stat.parent === undefined) break;
    pid = stat.parent;
  }
  for (const home of hermesHomes) {
    const record = readGatewayPid(path.join(home, GATEWAY_PID_FILE));
    if (record === undefined || seen.has(record.pid)) continue;
    const stat = readStat(record.pid);
    // Gone; or another process took its PID since (Hermes' own guard: the start time it recorded). An older
    // gateway's bare PID (no start time) may be reused, or be a container's, another PID namespace's: taken only
    // for a process whose command line is a gateway's, as Hermes checks it (gateway/status.py).
    if (stat === undefined || (record.start !== undefined ? record.start !== stat.start : !looksLikeGateway(record.pid))) continue;
    seen.add(record.pid);
    const env = environmentCached(record.pid, stat, met);
    if (env !== undefined) out.push(env);
  }
  for (const key of environments.keys()) if (!met.has(key)) environments.delete(key);
  return out;
}

function readStat(pid: number): ProcessStat | undefined {
  const stat = readProc(pid, "stat", 4096);
  return stat === undefined ? undefined : parseStat(stat.toString("latin1"));
}

/** Process `pid`'s environment, read once per process (by its start time), or undefined when it cannot be read. */
function environmentCached(pid: number, stat: ProcessStat, met: Set<string>): ProcessEnvironment | undefined {
  const key = `${pid}:${stat.start}`;
  met.add(key);
  if (!environments.has(key)) {
    const entries = environmentOf(pid);
    environments.set(key, entries === undefined ? undefined : { pid, command: stat.command, entries });
  }
  return environments.get(key);
}

/** What a gateway.pid says: the gateway's PID and, when recorded, its start time (field 22 of /proc/PID/stat). */
export interface GatewayPid {
  pid: number;
  start?: string;
}

/**
 * The gateway a gateway.pid names, or undefined when the file is absent,
 * not a regular file (a link, a FIFO: never followed, never waited on),
 * unreadable, larger than a PID file is, or says no positive PID.
 */
export function readGatewayPid(file: string): GatewayPid | undefined {
  let text: string | undefined;
  try {
    text = withRegularFile(file, (fd, st) => {
      if (st.size > MAX_PID_FILE_BYTES) return undefined;
      const buf = Buffer.alloc(st.size + 1);
      const got = readAt(fd, buf, 0);
      return got > st.size ? undefined : buf.toString("utf8", 0, got);
    });
  } catch {
    return undefined;
  }
  return text === undefined ? undefined : parseGatewayPid(text);
}

/**
 * A gateway.pid's text as Hermes reads it (gateway/status.py
 * `_read_pid_record`): JSON `{"pid": N, "start_time": T, …}`, or (older
 * gateways) a bare integer. A start time that is recorded but no integer
 * (Hermes writes one, or null where it has none) cannot be checked: no record.
 */
export function parseGatewayPid(text: string): GatewayPid | undefined {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return undefined;
  }
  const record: Record<string, unknown> | undefined = typeof doc === "number" ? { pid: doc } : doc !== null && typeof doc === "object" && !Array.isArray(doc) ? (doc as Record<string, unknown>) : undefined;
  const pid = record?.pid;
  if (typeof pid !== "number" || !Number.isSafeInteger(pid) || pid <= 0) return undefined;
  const start = record!.start_time;
  if (start === undefined || start === null) return { pid };
  if (typeof start !== "number" || !Number.isSafeInteger(start) || start < 0) return undefined;
  return { pid, start: String(start) };
}

/** Bytes of a command line read: a gateway's is a few hundred. */
const MAX_CMDLINE_BYTES = 64 * 1024;

/** Whether process `pid`'s command line is a Hermes gateway's (isGatewayCommandLine). */
function looksLikeGateway(pid: number): boolean {
  const cmdline = readProc(pid, "cmdline", MAX_CMDLINE_BYTES);
  return cmdline !== undefined && isGatewayCommandLine(cmdline.toString("utf8").split("\0"));
}

/**
 * Whether `argv` runs a Hermes gateway, as Hermes tells one
 * (gateway/status.py `looks_like_gateway_runtime_command_line`):
 * `gateway/run.py` or `hermes-gateway`, or Hermes' CLI (`hermes`,
 * `hermes_cli.main`) with its `gateway` subcommand, then `run`, `restart`
 * or nothing, a `--profile`/`-p` selector anywhere passed over.
 */
export function isGatewayCommandLine(argv: readonly string[]): boolean {
  const tokens = argv.filter((a) => a !== "").map((a) => trimQuotes(a).replaceAll("\\", "/").toLowerCase());
  const base = (t: string) => t.slice(t.lastIndexOf("/") + 1);
  if (tokens.some((t) => t === "gateway/run.py" || t.endsWith("/gateway/run.py") || base(t) === "hermes-gateway" || base(t) === "hermes-gateway.exe")) return true;
  const joined = tokens.join(" ");
  if (!(joined.includes("hermes_cli.main") || joined.includes("hermes_cli/main.py") || tokens.some((t) => base(t) === "hermes" || base(t) === "hermes.exe"))) return false;
  const rest: string[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (t === "--profile" || t === "-p") i++;
    else if (!t.startsWith("--profile=") && !t.startsWith("-p=")) rest.push(t);
  }
  const at = rest.indexOf("gateway");
  if (at < 0) return false;
  const sub = rest[at + 1];
  return sub === undefined || sub === "run" || sub === "restart";
}

/** `t` without the quotes it starts and ends with (Python's `strip("\"'")`; a loop, linear on any input). */
function trimQuotes(t: string): string {
  let from = 0;
  let to = t.length;
  const quote = (c: string) => c === '"' || c === "'";
  while (from < to && quote(t[from]!)) from++;
  while (to > from && quote(t[to - 1]!)) to--;
  return t.slice(from, to);
}

/** The environment process `pid` was started with, or undefined when it cannot be read (gone, another user's, not dumpable). */
export function environmentOf(pid: number): [string, string][] | undefined {
  const environ = readProc(pid, "environ", MAX_ENVIRONMENT_BYTES);
  return environ === undefined ? undefined : parseEnviron(environ);
}

function ownEntries(): [string, string][] {
  return Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined);
}

/** At most `max` bytes of /proc/PID/NAME, or undefined when it cannot be read (gone, another user's). */
function readProc(pid: number, name: string, max: number): Buffer | undefined {
  let fd: number;
  try {
    fd = fs.openSync(`/proc/${pid}/${name}`, "r");
  } catch {
    return undefined;
  }
  try {
    // /proc files report size 0: read until the end, or the cap.
    const buf = Buffer.allocUnsafe(max);
    let n = 0;
    for (let got = -1; got !== 0 && n < max; n += got) got = fs.readSync(fd, buf, n, max - n, null);
    return buf.subarray(0, n);
  } catch {
    return undefined;
  } finally {
    fs.closeSync(fd);
  }
}

export interface ProcessStat {
  command: string;
  parent?: number;
  /** In clock ticks since boot, as the line writes it: with the PID, it names one process (a reused PID has another). */
  start?: string;
}

/**
 * The command name, the parent's PID and the start time of a /proc/PID/stat
 * line (`PID (COMM) STATE PPID …`). The name may hold spaces and parentheses: it ends
 * at the line's last `)`.
 */
export function parseStat(stat: string): ProcessStat {
  const open = stat.indexOf("(");
  const close = stat.lastIndexOf(")");
  if (open < 0 || close < open) return { command: "" };
  // Fields from the state on: the parent is the 4th field of the line, the start time (in clock ticks) the 22nd.
  const fields = stat.slice(close + 2).split(" ");
  const parent = Number(fields[1]);
  const start = fields[19];
  // Digits only: it is compared, as text, with the start time a gateway.pid recorded.
  return { command: stat.slice(open + 1, close), ...(Number.isInteger(parent) && parent > 0 ? { parent } : {}), ...(start !== undefined && /^[0-9]+$/.test(start) ? { start } : {}) };
}

/** The entries of a /proc/PID/environ block (NUL-terminated NAME=VALUE strings; one cut by the cap is dropped). */
export function parseEnviron(block: Buffer): [string, string][] {
  const entries: [string, string][] = [];
  let start = 0;
  for (let end = block.indexOf(0, start); end >= 0; start = end + 1, end = block.indexOf(0, start)) {
    const entry = block.toString("utf8", start, end);
    const eq = entry.indexOf("=");
    if (eq > 0) entries.push([entry.slice(0, eq), entry.slice(eq + 1)]);
  }
  return entries;
}
