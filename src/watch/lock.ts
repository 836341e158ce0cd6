// One watch per outbox and per drop folder: two would give one drop two
// receipts, or race each other over the quarantine. Node has no flock(2), so
// the lock is a listening Unix socket at a known path:
// - it dies with its process: once the holder is gone, connect(2) is refused
//   (ECONNREFUSED), however the process ended (SIGKILL included), so a stale
//   lock is told from a live one without trusting a PID (a PID file would
//   need /proc, which systemd's ProtectProc= and PrivateUsers= hide, and PIDs
//   differ between namespaces; an abstract socket would be private to each
//   network namespace, and the watch unit has PrivateNetwork=yes);
// - it is taken with link(2), which never replaces: the socket is bound under
//   a unique temporary name, then linked to the lock name, so of two starters
//   exactly one gets the name;
// - the holder answers every connection with its PID and start time, which
//   the refused starter prints.
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { FatalError, isErrno } from "../core/errors.js";
import { escapeText } from "../core/escape.js";

export const LOCK_NAME = ".media-outbox-watch.lock";

/** Linux's sun_path holds 108 bytes with its NUL. */
const MAX_SOCKET_PATH = 107;
const PROBE_TIMEOUT_MS = 2000;

interface Holder {
  pid?: number;
  started?: string;
  nonce?: string;
}

/**
 * Runs `fn` with a socket path short enough for sun_path: a long one is
 * reached relative to its directory (chdir there and back, synchronously:
 * bind(2) and connect(2) on a Unix path happen within the call).
 */
function withSocketPath<T>(file: string, fn: (p: string) => T): T {
  if (Buffer.byteLength(file) <= MAX_SOCKET_PATH) return fn(file);
  const back = process.cwd();
  process.chdir(path.dirname(file));
  try {
    return fn(`./${path.basename(file)}`);
  } finally {
    process.chdir(back);
  }
}

function listenAt(server: net.Server, file: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    withSocketPath(file, (p) => server.listen(p, () => {
      server.off("error", reject);
      resolve();
    }));
  });
}

type Probe = { state: "held"; holder: Holder } | { state: "stale" } | { state: "gone" };

/** Asks whoever listens at `file` who they are. */
function probe(file: string): Promise<Probe> {
  const st = fs.lstatSync(file, { throwIfNoEntry: false });
  if (!st) return Promise.resolve({ state: "gone" });
  // Anything but a socket at the lock name holds nothing: it is removed.
  if (!st.isSocket()) return Promise.resolve({ state: "stale" });
  return new Promise((resolve) => {
    let text = "";
    let settled = false;
    const done = (p: Probe) => {
      if (settled) return;
      settled = true;
      socket.destroy();
      resolve(p);
    };
    const holder = (): Holder => {
      try {
        const h = JSON.parse(text) as Holder;
        return { ...(Number.isSafeInteger(h.pid) ? { pid: h.pid } : {}), ...(typeof h.started === "string" ? { started: h.started } : {}), ...(typeof h.nonce === "string" ? { nonce: h.nonce } : {}) };
      } catch {
        return {};
      }
    };
    const socket = withSocketPath(file, (p) => net.connect(p));
    socket.setEncoding("utf8");
    socket.on("data", (d: string) => {
      if (text.length < 4096) text += d;
    });
    socket.on("end", () => done({ state: "held", holder: holder() }));
    socket.on("error", (err) => {
      if (isErrno(err, "ECONNREFUSED")) done({ state: "stale" });
      else if (isErrno(err, "ENOENT")) done({ state: "gone" });
      // Connected but cut, a full backlog, another user's socket: someone is there.
      else done({ state: "held", holder: holder() });
    });
    // Accepted by the kernel but not answered (the holder is stopped or busy): still held.
    socket.setTimeout(PROBE_TIMEOUT_MS, () => done({ state: "held", holder: holder() }));
  });
}

/** Removes the stale lock `ino` at `file`, and nothing that replaced it meanwhile. */
function removeStale(file: string, ino: number | undefined): void {
  const trash = path.join(path.dirname(file), `.media-outbox-stale-${process.pid}-${randomBytes(6).toString("hex")}`);
  try {
    fs.renameSync(file, trash);
  } catch (err) {
    if (isErrno(err, "ENOENT")) return;
    throw err;
  }
  const taken = fs.lstatSync(trash, { throwIfNoEntry: false });
  if (taken && ino !== undefined && taken.ino !== ino) {
    // A live lock was linked in after the probe: give it its name back.
    try {
      fs.linkSync(trash, file);
    } catch {
      // Taken again meanwhile: the next probe says by whom.
    }
  }
  fs.rmSync(trash, { force: true });
}

export class WatchLock {
  private constructor(
    private readonly file: string,
    private readonly server: net.Server,
    private readonly ino: number,
  ) {}

  /**
   * Takes the lock at `file` for `what` (the outbox, a drop folder), or throws
   * FatalError `already_running` naming the process that holds it.
   */
  static async acquire(file: string, what: string): Promise<WatchLock> {
    const nonce = randomBytes(12).toString("hex");
    const me = JSON.stringify({ pid: process.pid, started: new Date().toISOString(), nonce });
    const server = net.createServer((c) => c.end(`${me}\n`));
    server.on("error", () => {});
    const temp = path.join(path.dirname(file), `.media-outbox-lock-${process.pid}-${randomBytes(6).toString("hex")}`);
    try {
      await listenAt(server, temp);
      server.unref();
      for (let attempt = 0; attempt < 5; attempt++) {
        try {
          fs.linkSync(temp, file);
        } catch (err) {
          if (!isErrno(err, "EEXIST")) throw err;
          const before = fs.lstatSync(file, { throwIfNoEntry: false });
          const found = await probe(file);
          if (found.state === "held") throw alreadyRunning(what, found.holder);
          if (found.state === "stale") removeStale(file, before?.ino);
          continue;
        }
        const ino = fs.lstatSync(temp).ino;
        fs.unlinkSync(temp);
        // Taking a stale lock races with other starters doing the same: the
        // name must now lead to this very socket.
        const check = await probe(file);
        if (check.state !== "held" || check.holder.nonce !== nonce) {
          throw alreadyRunning(what, check.state === "held" ? check.holder : {});
        }
        return new WatchLock(file, server, ino);
      }
      throw alreadyRunning(what, {});
    } catch (err) {
      server.close();
      fs.rmSync(temp, { force: true });
      throw err;
    }
  }

  /** Gives the lock up: the socket closes and its name goes (unless someone else holds it by now). */
  async release(): Promise<void> {
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    const st = fs.lstatSync(this.file, { throwIfNoEntry: false });
    if (st && st.ino === this.ino) fs.rmSync(this.file, { force: true });
  }
}

function alreadyRunning(what: string, holder: Holder): FatalError {
  const who = holder.pid !== undefined ? `process ${holder.pid}${holder.started ? ` (started ${escapeText(holder.started)})` : ""}` : "another process";
  return new FatalError(
    "already_running",
    `${who} already runs media-outbox watch for ${what}; one watch per outbox and per drop folder (two would answer a drop twice and race over the quarantine): stop that one first`,
  );
}
