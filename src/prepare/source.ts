// The client half of prepare: the checks only the calling user can make,
// because they are about the caller's own files. Check 1 (the path's text),
// 2 (where the source really is, the denylist, hard links), 3 (opening it
// exactly once, never following a link, never hanging on a FIFO) and, after
// the copy, that the source did not change meanwhile. Local mode runs them in
// the same process as the gate's half (judge.ts); in gate mode the client
// does, before and while it streams the bytes to the gate.
import fs from "node:fs";
import path from "node:path";
import type { Config } from "../config/config.js";
import { Refusal, errnoCode, hostFailure, isHostErrno } from "../core/errors.js";
import { escapeText } from "../core/escape.js";
import { SourceDenylist, resolveExisting } from "../safety/denylist.js";
import { isWithin } from "../safety/gateway.js";
import { assertSafePathText } from "../safety/path-text.js";

export interface SourcePolicy {
  cwd: string;
  denylist: SourceDenylist;
  /** Resolved roots the source must lie under; empty means anywhere not denied. */
  sourceRoots: string[];
}

export interface OpenedSource {
  fd: number;
  stat: fs.Stats;
  resolved: string;
}

function checkLocation(resolved: string, policy: SourcePolicy): void {
  const why = policy.denylist.reason(resolved);
  if (why) throw new Refusal("denied_source", `${why}; only generated files may be sent`);
  if (policy.sourceRoots.length > 0 && !policy.sourceRoots.some((root) => isWithin(resolved, root))) {
    // The roots are the operator's (config or flag), named so the fix is plain; escaped like every path.
    const roots = policy.sourceRoots.map(escapeText).join(", ");
    throw new Refusal("denied_source", `it lies outside the allowed source roots (${roots}); write it under one of them, or add its directory to sourceRoots (--source-root)`);
  }
}

function resolveSource(given: string, cwd: string): string {
  try {
    return fs.realpathSync.native(path.resolve(cwd, given));
  } catch (err) {
    const code = errnoCode(err);
    if (code === "ENOENT" || code === "ENOTDIR") throw new Refusal("not_found", "no such file");
    if (code === "ELOOP") throw new Refusal("denied_source", "it is a symbolic link loop");
    if (code === "EACCES") throw new Refusal("io_error", "permission denied while resolving the path");
    if (isHostErrno(code)) throw hostFailure(err);
    throw new Refusal("io_error", `cannot resolve the path (${code ?? "error"})`);
  }
}

function openNoFollow(resolved: string): number {
  const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK, O_NOCTTY } = fs.constants;
  try {
    // O_NONBLOCK: a FIFO must not hang the command; it is refused below.
    return fs.openSync(resolved, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  } catch (err) {
    const code = errnoCode(err);
    if (code === "ENOENT") throw new Refusal("not_found", "the file disappeared before it could be opened");
    if (code === "ELOOP") throw new Refusal("denied_source", "the path was replaced by a symbolic link while it was checked");
    if (code === "ENXIO" || code === "EOPNOTSUPP") throw new Refusal("not_regular_file", "it is not a regular file");
    if (code === "EACCES") throw new Refusal("io_error", "permission denied");
    if (isHostErrno(code)) throw hostFailure(err);
    throw new Refusal("io_error", `cannot open the file (${code ?? "error"})`);
  }
}

export type EntryKind = "file" | "symlink" | "directory" | "fifo" | "socket" | "device";

/** What a directory entry is, by its lstat (or fstat). */
export function entryKind(st: fs.Stats): EntryKind {
  if (st.isSymbolicLink()) return "symlink";
  if (st.isDirectory()) return "directory";
  if (st.isFIFO()) return "fifo";
  if (st.isSocket()) return "socket";
  if (st.isCharacterDevice() || st.isBlockDevice()) return "device";
  return "file";
}

const REFUSED_KIND: Partial<Record<EntryKind, string>> = { directory: "a directory", fifo: "a FIFO", socket: "a socket", device: "a device" };

/** How a refusal names what a source is instead of a regular file. */
function kindOf(st: fs.Stats): string {
  return REFUSED_KIND[entryKind(st)] ?? "not a regular file";
}

/** A denied place beside the credential denylist: the outbox, media-outbox's own state. */
export interface DeniedPlace {
  path: string;
  why: string;
}

/** The source policy of a configuration: its homes' denylist, `denied` besides, its source roots. */
export function sourcePolicyFor(config: Config, options: { cwd?: string; denied?: DeniedPlace[]; sourceRoots?: string[] } = {}): SourcePolicy {
  const denylist = new SourceDenylist({ home: config.home, hermesHome: config.hermesHome, extra: options.denied ?? [] });
  return { cwd: options.cwd ?? process.cwd(), denylist, sourceRoots: options.sourceRoots ?? config.sourceRoots.map(resolveExisting) };
}

/**
 * Checks the path's text, then resolves, vets and opens the source. The
 * caller owns the returned descriptor. Throws a Refusal for checks 1 to 3.
 */
export function openSource(given: string, policy: SourcePolicy): OpenedSource {
  assertSafePathText(given, "path");
  const resolved = resolveSource(given, policy.cwd);
  checkLocation(resolved, policy);
  const fd = openNoFollow(resolved);
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) throw new Refusal("not_regular_file", `it is ${kindOf(stat)}`);
    // A directory in the path may have been swapped between resolving and
    // opening: judge what the descriptor really is.
    const opened = openedPath(fd);
    if (opened !== undefined && opened !== resolved) checkLocation(opened, policy);
    refuseHardLinks(stat, "it has");
    if (stat.size === 0) throw new Refusal("empty_file", "the file is empty");
    return { fd, stat, resolved: opened ?? resolved };
  } catch (err) {
    fs.closeSync(fd);
    throw err;
  }
}

/**
 * The checks a FILE's place gets (the denylist, the source roots, hard
 * links), for a stream read from the descriptor `fd` that is a regular file:
 * `prepare --stdin < ~/.hermes/.env` hands prepare the secret itself, opened
 * by the shell, whose path prepare never saw. Its place is where the
 * descriptor really is (/proc/self/fd). A pipe, a terminal or a socket has no
 * place to judge (what it carries is judged by its bytes); nor has a
 * descriptor that cannot be looked at (closed: reading it fails after).
 * Throws a Refusal.
 */
export function checkStreamSource(fd: number, policy: SourcePolicy): void {
  let stat: fs.Stats;
  try {
    stat = fs.fstatSync(fd);
  } catch {
    return;
  }
  if (!stat.isFile()) return;
  const opened = openedPath(fd);
  // Without /proc the file's place is unknown: a FILE argument is judged by its path instead.
  if (opened === undefined) throw new Refusal("denied_source", "standard input is a file whose place cannot be told (no /proc); give its path as FILE instead");
  checkLocation(opened, policy);
  refuseHardLinks(stat, "standard input is a file with");
}

/** A file with more than one name may be an alias of a protected file (a hard link is never followed, it is the file): refused. */
export function refuseHardLinks(stat: Pick<fs.Stats, "nlink">, subject: string): void {
  if (stat.nlink > 1) throw new Refusal("denied_source", `${subject} ${stat.nlink} hard links, which may be an alias of a protected file; copy it first`);
}

/**
 * After the copy of `bytes` bytes: the source must still be what was opened,
 * or the copy may mix two versions of the file.
 */
export function assertUnchanged(source: OpenedSource, bytes: number): void {
  const after = fs.fstatSync(source.fd);
  if (after.size !== source.stat.size || after.mtimeMs !== source.stat.mtimeMs || bytes !== source.stat.size) {
    throw changedDuringCopy();
  }
}

export function changedDuringCopy(): Refusal {
  return new Refusal("changed_during_copy", "the file changed while it was copied; send it again once it is complete");
}

function openedPath(fd: number): string | undefined {
  try {
    return fs.readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return undefined;
  }
}
