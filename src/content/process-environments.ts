// The environments a prepare was started under: its own, and each of its
// ancestors' that runs as the same user. An agent's command is a child of
// the Hermes gateway (through a shell or two), so the gateway's environment
// is among them, whatever put a key there: the unit's Environment= or
// EnvironmentFile=, `docker run -e`, an exported shell variable. Hermes
// removes provider keys from its tools' environment, but any tool of the
// agent can read its parent's /proc/PID/environ: what that holds can leak.
//
// Linux's /proc only; elsewhere (or in a PID namespace that hides the
// parents) there are fewer environments, never an error. A process that is
// not the same user's (or not dumpable) cannot be read and is passed over.
import fs from "node:fs";

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

/**
 * An ancestor's environment, by its PID and start time: what a process was
 * started with does not change, and a long-running process (the watch, the
 * gate) judges many files under the same ancestors.
 */
const ancestors = new Map<string, ProcessEnvironment | undefined>();

/** This process's environment, then its ancestors' that can be read, nearest first. */
export function processEnvironments(): ProcessEnvironment[] {
  const out: ProcessEnvironment[] = [{ pid: process.pid, command: "media-outbox", entries: ownEntries() }];
  const seen = new Set([process.pid]);
  for (let pid = process.ppid, n = 0; pid > 1 && n < MAX_ANCESTORS && !seen.has(pid); n++) {
    seen.add(pid);
    const stat = readProc(pid, "stat", 4096);
    if (stat === undefined) break;
    const { command, parent, start } = parseStat(stat.toString("latin1"));
    const key = `${pid}:${start}`;
    if (!ancestors.has(key)) {
      const entries = environmentOf(pid);
      ancestors.set(key, entries === undefined ? undefined : { pid, command, entries });
    }
    const env = ancestors.get(key);
    if (env !== undefined) out.push(env);
    if (parent === undefined) break;
    pid = parent;
  }
  return out;
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

/**
 * The command name, the parent's PID and the start time of a /proc/PID/stat
 * line (`PID (COMM) STATE PPID …`). The name may hold spaces and parentheses: it ends
 * at the line's last `)`.
 */
export function parseStat(stat: string): { command: string; parent?: number; start?: string } {
  const open = stat.indexOf("(");
  const close = stat.lastIndexOf(")");
  if (open < 0 || close < open) return { command: "" };
  // Fields from the state on: the parent is the 4th field of the line, the start time (in clock ticks) the 22nd.
  const fields = stat.slice(close + 2).split(" ");
  const parent = Number(fields[1]);
  const start = fields[19];
  return { command: stat.slice(open + 1, close), ...(Number.isInteger(parent) && parent > 0 ? { parent } : {}), ...(start ? { start } : {}) };
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
