// The rules for a directory media-outbox trusts with its files: the outbox
// and the state beside it. prepare, janitor, watch and doctor all ask here.
import fs from "node:fs";
import path from "node:path";
import { FatalError, type FatalCode, isErrno } from "../core/errors.js";
import { escapeText } from "../core/escape.js";
import { allowDirProblem } from "./gateway.js";

export interface DirCheck {
  /** The directory's real, symlink-free path. */
  real: string;
  dev: number;
  ino: number;
  /** Its permission bits (as found, or as made). */
  mode: number;
}

function currentUid(): number {
  return typeof process.geteuid === "function" ? process.geteuid() : -1;
}

/**
 * Whose a trusted directory must be when it is not the current user's: the
 * gate's user, when root (or an agent) looks at the gate's outbox (status).
 */
export interface DirOwner {
  uid: number;
  /** How messages name it ("the gate's user media-outbox"). */
  name: string;
}

/** Why a directory, as seen by lstat, cannot be trusted; undefined when it can. */
export function privateDirProblem(st: fs.Stats, owner?: DirOwner): string | undefined {
  if (st.isSymbolicLink()) return "it is a symbolic link";
  if (!st.isDirectory()) return "it is not a directory";
  const uid = owner?.uid ?? currentUid();
  if (uid >= 0 && st.uid !== uid) return `it is owned by uid ${st.uid}, not by ${owner ? `${owner.name} (uid ${uid})` : `the current user (uid ${uid})`}`;
  if (st.mode & 0o022) return `it is writable by group or others (mode ${(st.mode & 0o7777).toString(8).padStart(4, "0")})`;
  return undefined;
}

/**
 * Why an ancestor of `real` lets someone else swap what lies beneath it: it is
 * writable by others, unless it is a root-owned sticky directory like /tmp.
 * The walk stops at a directory in `safe` (already found safe, with its
 * ancestors) and adds those it finds safe.
 */
export function ancestorProblem(real: string, safe: Set<string> = new Set()): string | undefined {
  for (let dir = path.dirname(real); !safe.has(dir); dir = path.dirname(dir)) {
    const st = fs.statSync(dir);
    const sticky = (st.mode & 0o1000) !== 0;
    if (st.mode & 0o002 && !(sticky && st.uid === 0)) {
      return `its ancestor ${escapeText(dir)} is writable by others`;
    }
    safe.add(dir);
    if (dir === path.dirname(dir)) break;
  }
  return undefined;
}

export interface TrustDirOptions {
  /** Create it (0700, parents too; see groupReadable) when missing. */
  create: boolean;
  /**
   * The gate's outbox: its group (the agent users) reads what is published,
   * so it is made 0750. Group or others may never write, in either mode.
   */
  groupReadable?: boolean;
  /** The error code when the directory is not safe. */
  code: FatalCode;
  /** How to name it in messages: "outbox", "state directory"… */
  what: string;
  /** Also require that the gateway can parse its path in HERMES_MEDIA_ALLOW_DIRS. */
  gatewayVisible?: boolean;
  /** Called just before a missing directory is made (with `create`): a rule of the caller's that throws to refuse the making. */
  beforeCreate?: () => void;
  /** Whose it must be: the current user's when unset. */
  owner?: DirOwner;
  /**
   * Directories already found safe as ancestors, shared by the checks of one
   * layout so each ancestor is looked at once; a trusted directory joins them.
   */
  safeAncestors?: Set<string>;
}

function refuse(options: TrustDirOptions, dir: string, why: string, fix: string): never {
  throw new FatalError(options.code, `${options.what} ${escapeText(dir)} is unsafe: ${why}; ${fix}`);
}

/**
 * Why a path the operator gave cannot even be looked at or made, by errno:
 * these are mistakes in the path (a file where a directory should be, a
 * directory the user may not enter), told as such, not as a bug.
 */
const UNREACHABLE: Record<string, string> = {
  ENOTDIR: "a component of its path is not a directory",
  EACCES: "permission denied on its path",
  EPERM: "permission denied on its path",
  ELOOP: "its path has too many levels of symbolic links",
  ENAMETOOLONG: "its path is too long",
  EROFS: "it is missing and its parent is on a read-only filesystem",
};

/** lstat, or undefined when the path cannot be looked at (missing, or an ancestor is not a directory). */
function lstatOrUndefined(p: string): fs.Stats | undefined {
  try {
    return fs.lstatSync(p);
  } catch {
    return undefined;
  }
}

/** Throws the refusal for a path that lstat or mkdir could not reach; other errors are rethrown. */
function unreachable(options: TrustDirOptions, dir: string, err: unknown): never {
  const why = isErrno(err, ...Object.keys(UNREACHABLE)) ? UNREACHABLE[err.code!] : undefined;
  if (!why) throw err;
  const uid = currentUid();
  const fix = isErrno(err, "EACCES", "EPERM") && uid >= 0 ? `choose a path the current user (uid ${uid}) can reach and create` : "point it at a directory of your own (mode 0700)";
  throw new FatalError(options.code, `${options.what} ${escapeText(dir)} cannot be used: ${why}; ${fix}`, { cause: err });
}

/**
 * The rules for a directory as found (`st`, not followed), then at its real path:
 * private, its real path one the gateway parses when it must, no ancestor
 * others could swap it under. Throws the refusal.
 */
function verifyDir(dir: string, st: fs.Stats, realOf: () => string, options: TrustDirOptions): string {
  const problem = privateDirProblem(st, options.owner);
  if (problem) {
    const fix = options.owner
      ? "install the gate again (media-outbox install systemd --system --gate): it sets the owner and mode"
      : st.isDirectory() && problem.includes("writable")
        ? `run: chmod 700 ${escapeText(dir)}`
        : st.isDirectory() && !st.isSymbolicLink() && problem.startsWith("it is owned by")
          ? // Another user's outbox (an agent's, looked at by root): its owner may use it, no one else.
            `run the command as its owner (uid ${st.uid}: sudo -u "#${st.uid}" media-outbox ...), or point it at a directory of your own (mode 0700)`
          : "point it at a directory of your own (mode 0700)";
    refuse(options, dir, problem, fix);
  }
  const real = realOf();
  if (options.gatewayVisible) {
    const gw = allowDirProblem(real);
    if (gw) refuse(options, real, gw, "choose a plain absolute path such as ~/.hermes/media_outbox");
  }
  const ancestor = ancestorProblem(real, options.safeAncestors);
  if (ancestor) refuse(options, dir, ancestor, "move it under a directory only you can write to");
  options.safeAncestors?.add(real);
  return real;
}

/**
 * Verifies (and with `create`, makes) a private directory. Returns undefined
 * when it is missing and `create` is false.
 */
export function trustDir(dir: string, options: TrustDirOptions): DirCheck | undefined {
  if (!path.isAbsolute(dir)) refuse(options, dir, "it is not an absolute path", "give an absolute path");
  if (options.gatewayVisible) {
    const problem = allowDirProblem(dir);
    if (problem) refuse(options, dir, problem, "choose a plain absolute path such as ~/.hermes/media_outbox");
  }
  let st: fs.Stats;
  try {
    st = fs.lstatSync(dir);
  } catch (err) {
    if (!isErrno(err, "ENOENT")) unreachable(options, dir, err);
    if (!options.create) return undefined;
    options.beforeCreate?.();
    try {
      fs.mkdirSync(dir, { recursive: true, mode: options.groupReadable ? 0o750 : 0o700 });
    } catch (mkdirErr) {
      unreachable(options, dir, mkdirErr);
    }
    st = fs.lstatSync(dir);
  }
  const real = verifyDir(dir, st, () => fs.realpathSync.native(dir), options);
  return { real, dev: st.dev, ino: st.ino, mode: st.mode & 0o7777 };
}

/** A trusted directory held open, so later operations cannot be redirected by a swapped path. */
export interface OpenDir extends DirCheck {
  fd: number;
  /**
   * The path to operate through: `/proc/self/fd/N` on Linux, which names the
   * open directory itself whatever happens to its path; the real path elsewhere.
   */
  base: string;
}

const PROC_FD = "/proc/self/fd";

/**
 * Opens a directory once (O_DIRECTORY|O_NOFOLLOW) and verifies the open
 * directory, not its path, by the same rules as trustDir. Returns undefined
 * when it does not exist; never creates it. The caller closes `fd`.
 */
export function openPrivateDir(dir: string, options: Omit<TrustDirOptions, "create">): OpenDir | undefined {
  const opts = { ...options, create: false };
  if (!path.isAbsolute(dir)) refuse(opts, dir, "it is not an absolute path", "give an absolute path");
  let fd: number;
  try {
    fd = fs.openSync(dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW);
  } catch (err) {
    if (isErrno(err, "ENOENT")) return undefined;
    if (isErrno(err, "ELOOP")) refuse(opts, dir, "it is a symbolic link", "point it at a directory of your own (mode 0700)");
    if (isErrno(err, "ENOTDIR") && lstatOrUndefined(dir)) refuse(opts, dir, "it is not a directory", "point it at a directory of your own (mode 0700)");
    unreachable(opts, dir, err);
  }
  try {
    const st = fs.fstatSync(fd);
    const procPath = `${PROC_FD}/${fd}`;
    const onProc = fs.existsSync(procPath);
    // The kernel's name for what was opened: the real path at this moment.
    const real = verifyDir(dir, st, () => (onProc ? fs.readlinkSync(procPath) : fs.realpathSync.native(dir)), opts);
    return { fd, base: onProc ? procPath : real, real, dev: st.dev, ino: st.ino, mode: st.mode & 0o7777 };
  } catch (err) {
    fs.closeSync(fd);
    throw err;
  }
}
