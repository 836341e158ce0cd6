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
// - a stale lock is removed by one starter at a time: removing a name is
//   never conditional on what it names, so a starter that judged the lock
//   stale could otherwise remove the live lock another starter took meanwhile
//   (and a third take the name while the second holds a lock no name leads
//   to). Each remover first links its own socket to a "break slot" named
//   after the stale lock's identity, again with link(2); slots are taken in
//   order and one whose holder is alive makes the others wait, so the stale
//   lock has exactly one remover, who checks it is still that lock;
// - it lives in a directory of its own (`.media-outbox-watch`, 0700) inside
//   the outbox's state or the drop folder: agents write into drop folders (in
//   the gate's layout they are other users), and one that squatted the lock's
//   name would keep the watch from starting. A lock directory counts only when
//   it belongs to this user, root or the folder's owner; anything else at its
//   name is moved aside (renamed, never deleted);
// - the holder answers every connection with its PID and start time, which
//   the refused starter prints, and the outbox's holder with the allow-list
//   and size caps its guard judges entries by: prepare asks it before
//   publishing by a policy its flags widen, and the gate whenever the lock is
//   another one (watchHolder).
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { FatalError, isErrno } from "../core/errors.js";
import { escapeText } from "../core/escape.js";
import type { WatchGuard } from "../prepare/judge.js";

/** The lock's directory inside the outbox's state directory and inside each drop folder. */
export const LOCK_DIR = ".media-outbox-watch";
const HOLDER = "holder";

/** Linux's sun_path holds 108 bytes with its NUL. */
const MAX_SOCKET_PATH = 107;
const PROBE_TIMEOUT_MS = 2000;
/** Starters that may have died while removing one stale lock before the next gives up (each needs a SIGKILL mid-way). */
const MAX_BREAK_SLOTS = 64;
/** How often a starter looks whether another one has finished removing a stale lock, and for how long at most. */
const BREAK_POLL_MS = 20;
const BREAK_PATIENCE_MS = 30_000;
const ATTEMPTS = 20;

/** The outbox's lock only: what its guard leaves in the outbox. */
export interface GuardAnswer {
  /** The extensions. */
  allow: string[];
  /** The size cap of each, in bytes. */
  caps: Record<string, number>;
}

interface Holder extends Partial<GuardAnswer> {
  pid?: number;
  started?: string;
  nonce?: string;
}

/** The caps a holder's answer gives, when they are well-formed: non-negative whole numbers of bytes. */
function capsOf(value: unknown): Record<string, number> | undefined {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
  const entries = Object.entries(value as Record<string, unknown>);
  if (!entries.every(([, v]) => Number.isSafeInteger(v) && (v as number) >= 0)) return undefined;
  return Object.fromEntries(entries) as Record<string, number>;
}

/** What a holder answers every prober: who it is and, the outbox's lock, its guard's policy (which may change while it runs). */
class HolderAnswer {
  text: string;
  constructor(
    private readonly who: { pid: number; started: string; nonce: string },
    guard?: GuardAnswer,
  ) {
    this.text = this.answer(guard);
  }

  get nonce(): string {
    return this.who.nonce;
  }

  tell(guard: GuardAnswer): void {
    this.text = this.answer(guard);
  }

  private answer(guard: GuardAnswer | undefined): string {
    return `${JSON.stringify({ ...this.who, ...(guard ? { allow: guard.allow, caps: guard.caps } : {}) })}\n`;
  }
}

/** Where a test may hold a starter or a holder, to play races out in a chosen order. */
export type LockPoint = "stale-seen" | "breaking" | "release-checked";
export interface LockSeams {
  pause?(point: LockPoint): Promise<void>;
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
        const allow = Array.isArray(h.allow) && h.allow.every((e) => typeof e === "string") ? { allow: h.allow } : {};
        const caps = capsOf(h.caps);
        return {
          ...(Number.isSafeInteger(h.pid) ? { pid: h.pid } : {}),
          ...(typeof h.started === "string" ? { started: h.started } : {}),
          ...(typeof h.nonce === "string" ? { nonce: h.nonce } : {}),
          ...allow,
          ...(caps ? { caps } : {}),
        };
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

/** What the name `file` leads to, exactly enough that it never comes back: inode and ctime to the nanosecond. */
function identityOf(file: string): string | undefined {
  const st = fs.lstatSync(file, { bigint: true, throwIfNoEntry: false });
  return st ? `${st.ino}-${st.ctimeNs}` : undefined;
}

function unlinkIfSame(file: string, ino: number): void {
  const st = fs.lstatSync(file, { throwIfNoEntry: false });
  if (st?.ino !== ino) return;
  try {
    fs.unlinkSync(file);
  } catch (err) {
    if (!isErrno(err, "ENOENT")) throw err;
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Whether the lock directory's owner is one whose lock counts: this user, root, or the owner of the folder it is in. */
function counts(uid: number, folder: fs.Stats): boolean {
  return uid === process.geteuid?.() || uid === 0 || uid === folder.uid;
}

/**
 * The lock directory inside `folder`, made when missing. Anything else at its
 * name (a file, a link, another user's directory, one others may write) is
 * moved aside under a unique dot-name: nothing is deleted.
 */
function openLockDir(folder: string): string {
  const dir = path.join(folder, LOCK_DIR);
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const st = fs.lstatSync(dir, { throwIfNoEntry: false });
    if (!st) {
      try {
        fs.mkdirSync(dir, { mode: 0o700 });
      } catch (err) {
        if (!isErrno(err, "EEXIST")) throw err;
      }
      continue;
    }
    if (st.isDirectory() && (st.mode & 0o022) === 0 && counts(st.uid, fs.statSync(folder))) return dir;
    try {
      fs.renameSync(dir, path.join(folder, `.media-outbox-junk-${randomBytes(6).toString("hex")}`));
    } catch (err) {
      if (!isErrno(err, "ENOENT")) throw err;
    }
  }
  throw new Error(`cannot make the lock directory ${escapeText(dir)}: something keeps taking its name`);
}

export class WatchLock {
  private constructor(
    private readonly dir: string,
    private readonly server: net.Server,
    private readonly ino: number,
    private readonly seams: LockSeams,
    private readonly said: HolderAnswer,
  ) {}

  /**
   * The outbox's lock: answers `guard` from now on (the watch read a new
   * policy), then touches the lock (its ctime), so that whoever keeps an
   * earlier answer by the lock's identity (the gate: lockIdentity) asks again.
   */
  tellGuard(guard: GuardAnswer): void {
    this.said.tell(guard);
    const holder = path.join(this.dir, HOLDER);
    if (fs.lstatSync(holder, { throwIfNoEntry: false })?.ino !== this.ino) return;
    const now = new Date();
    fs.lutimesSync(holder, now, now);
  }

  /**
   * Takes the lock of `folder` (the outbox's state directory, a drop folder)
   * for `what` (the outbox, a drop folder), or throws FatalError
   * `already_running` naming the process that holds it. `guard`, for the
   * outbox's lock: the allow-list and caps the guard judges by, told to every
   * prober.
   */
  static async acquire(folder: string, what: string, seams: LockSeams = {}, guard?: GuardAnswer): Promise<WatchLock> {
    const said = new HolderAnswer({ pid: process.pid, started: new Date().toISOString(), nonce: randomBytes(12).toString("hex") }, guard);
    const nonce = said.nonce;
    const server = net.createServer((c) => c.end(said.text));
    server.on("error", () => {});
    let temp: string | undefined;
    try {
      let dir = openLockDir(folder);
      for (let attempt = 0; !temp; attempt++) {
        const name = path.join(dir, `tmp-${process.pid}-${randomBytes(6).toString("hex")}`);
        try {
          await listenAt(server, name);
          temp = name;
        } catch (err) {
          // The directory went with the last holder's release: make it again.
          if (!isErrno(err, "ENOENT") || attempt >= ATTEMPTS) throw err;
          dir = openLockDir(folder);
        }
      }
      server.unref();
      const holder = path.join(dir, HOLDER);
      for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
        try {
          fs.linkSync(temp, holder);
        } catch (err) {
          if (!isErrno(err, "EEXIST")) throw err;
          const seen = identityOf(holder);
          const found = await probe(holder);
          if (found.state === "held") throw alreadyRunning(what, found.holder);
          if (found.state === "stale" && seen !== undefined) {
            await seams.pause?.("stale-seen");
            await breakStale(dir, seen, temp, what, seams);
          }
          continue;
        }
        const ino = fs.lstatSync(temp).ino;
        fs.unlinkSync(temp);
        temp = undefined;
        // Nobody removes a live lock, so the name leads to this very socket; asked anyway, it costs one connection.
        const check = await probe(holder);
        if (check.state !== "held" || check.holder.nonce !== nonce) {
          throw alreadyRunning(what, check.state === "held" ? check.holder : {});
        }
        await sweepLeftovers(dir);
        return new WatchLock(dir, server, ino, seams, said);
      }
      throw alreadyRunning(what, {});
    } catch (err) {
      server.close();
      if (temp) fs.rmSync(temp, { force: true });
      throw err;
    }
  }

  /** Gives the lock up: its name goes while the socket still answers (so nobody judges it stale meanwhile), then the socket closes. */
  async release(): Promise<void> {
    const holder = path.join(this.dir, HOLDER);
    const st = fs.lstatSync(holder, { throwIfNoEntry: false });
    await this.seams.pause?.("release-checked");
    if (st?.ino === this.ino) unlinkIfSame(holder, this.ino);
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    try {
      fs.rmdirSync(this.dir);
    } catch {
      // Not empty (a starter is at work in it) or gone: it stays for them.
    }
  }
}

/**
 * Removes the stale lock whose identity is `id`, as its only remover: takes
 * the first free break slot of that lock (`me`, this starter's socket, linked
 * there), passing only slots whose holder died; a slot whose holder is alive
 * means another starter removes it: this one waits until it is done and
 * returns (or, when that takes too long, throws `already_running` naming
 * it). The lock is removed only when it is still that stale lock.
 */
async function breakStale(dir: string, id: string, me: string, what: string, seams: LockSeams): Promise<void> {
  const holder = path.join(dir, HOLDER);
  for (let k = 0; k < MAX_BREAK_SLOTS; k++) {
    const slot = path.join(dir, `break-${id}-${k}`);
    try {
      fs.linkSync(me, slot);
    } catch (err) {
      if (!isErrno(err, "EEXIST")) throw err;
      const found = await probe(slot);
      // A remover that died: its slot is passed, never reused.
      if (found.state === "stale") continue;
      const deadline = Date.now() + BREAK_PATIENCE_MS;
      for (let now: Probe = found; now.state === "held"; now = await probe(slot)) {
        if (Date.now() > deadline) throw alreadyRunning(what, now.holder);
        await sleep(BREAK_POLL_MS);
      }
      return;
    }
    const mine = fs.lstatSync(slot).ino;
    try {
      await seams.pause?.("breaking");
      // Only the holder of a slot of this lock removes it, and that is this
      // starter now: if the name still leads to that lock, it stays so until
      // the rename below.
      if (identityOf(holder) !== id || (await probe(holder)).state === "held") return;
      const trash = path.join(dir, `trash-${process.pid}-${randomBytes(6).toString("hex")}`);
      try {
        fs.renameSync(holder, trash);
      } catch (err) {
        if (isErrno(err, "ENOENT")) return;
        throw err;
      }
      try {
        fs.unlinkSync(trash);
      } catch {
        // Not a socket or a file (a directory someone put there): it stays, out of the way.
      }
    } finally {
      unlinkIfSame(slot, mine);
    }
    return;
  }
  throw new Error(`more than ${MAX_BREAK_SLOTS} starters died while removing the stale watch lock in ${escapeText(dir)}; remove that directory once no watch runs`);
}

/**
 * Once the lock is held: what starters that died left in its directory
 * (temporary sockets, break slots, removed locks) goes. A socket that still
 * answers belongs to a starter at work and stays.
 */
async function sweepLeftovers(dir: string): Promise<void> {
  for (const name of fs.readdirSync(dir)) {
    if (name === HOLDER) continue;
    const file = path.join(dir, name);
    if ((await probe(file)).state !== "stale") continue;
    try {
      fs.unlinkSync(file);
    } catch {
      // Gone already, or a directory someone put there: left alone.
    }
  }
}

/** A running watch, as its lock answers: who, and (the outbox's lock) the allow-list and caps its guard judges by. */
export type WatchHolder = Omit<Holder, "nonce">;

/**
 * What the lock of `folder` is now (inode and ctime), or undefined when there
 * is none: one lstat. The gate asks the lock again only when this changes
 * (a watch started, or another took over).
 */
export function lockIdentity(folder: string): string | undefined {
  try {
    return identityOf(path.join(folder, LOCK_DIR, HOLDER));
  } catch {
    // Not ours to look at (another user's lock directory): no watch that this process can ask.
    return undefined;
  }
}

/**
 * The guard of the watch `holder`, as prepare and the gate judge by it
 * (judge.ts WatchGuard). A watch of an earlier version does not say its
 * policy: it judges by the configuration's allow-list (`configured`) and by
 * no size cap.
 */
export function watchGuardOf(holder: WatchHolder, configured: readonly string[]): WatchGuard {
  const caps = holder.caps;
  return {
    allow: holder.allow ?? configured,
    // An extension its answer gives no cap for is one it quarantines at any size (never one of its allow-list).
    capFor: (ext) => (caps ? (Object.hasOwn(caps, ext) ? caps[ext]! : 0) : Number.MAX_SAFE_INTEGER),
    who: holder.pid !== undefined ? `process ${holder.pid}` : "another process",
  };
}

/**
 * The watch that holds the lock of `folder` (the outbox's state directory),
 * or undefined when none runs: one connection to its socket, or none when
 * there is no lock. Nothing is made or removed.
 */
export async function watchHolder(folder: string): Promise<WatchHolder | undefined> {
  let found: Probe;
  try {
    found = await probe(path.join(folder, LOCK_DIR, HOLDER));
  } catch {
    // The lock cannot be looked at (another user's directory): no watch this process can ask.
    return undefined;
  }
  if (found.state !== "held") return undefined;
  const { nonce: _, ...holder } = found.holder;
  return holder;
}

function alreadyRunning(what: string, holder: Holder): FatalError {
  const who = holder.pid !== undefined ? `process ${holder.pid}${holder.started ? ` (started ${escapeText(holder.started)})` : ""}` : "another process";
  return new FatalError(
    "already_running",
    `${who} already runs media-outbox watch for ${what}; one watch per outbox and per drop folder (two would answer a drop twice and race over the quarantine): stop that one first`,
  );
}
