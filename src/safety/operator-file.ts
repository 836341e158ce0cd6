// Files an operator names (a config file, a log file, a Hermes config.yaml):
// a typo can name a FIFO, a device, a directory or a link to one. Opening a
// FIFO waits for its other end forever and reading /dev/zero never ends, so
// every such file is opened without blocking, judged by fstat on the
// descriptor (what was opened, links followed), and refused unless it is a
// regular file: a clear error at once, never a hang.
import fs from "node:fs";
import path from "node:path";
import { FatalError, type FatalCode, isErrno } from "../core/errors.js";
import { escapeText } from "../core/escape.js";
import { readAt } from "../core/read-at.js";
import { entryKind } from "../prepare/source.js";

const KIND: Record<string, string> = { directory: "a directory", fifo: "a FIFO", socket: "a socket", device: "a device" };

/** The largest config file read (a config is a few hundred bytes; a multi-gigabyte one is a mistake). */
export const MAX_CONFIG_BYTES = 1024 * 1024;

export interface OperatorFileOptions {
  /** How messages name it: "config file", "log file"… */
  what: string;
  code?: FatalCode;
}

function refuse(file: string, options: OperatorFileOptions, why: string): FatalError {
  return new FatalError(options.code ?? "config_invalid", `${options.what} ${escapeText(file)} ${why}; name a regular file`);
}

/** "is a FIFO", "is a directory (through a symbolic link)"… */
function whatItIs(st: fs.Stats, file: string): string {
  const viaLink = fs.lstatSync(file, { throwIfNoEntry: false })?.isSymbolicLink() ? " (through a symbolic link)" : "";
  return `is ${KIND[entryKind(st)] ?? "not a regular file"}${viaLink}`;
}

function checkRegular(fd: number, file: string, options: OperatorFileOptions): fs.Stats {
  const st = fs.fstatSync(fd);
  if (!st.isFile()) throw refuse(file, options, whatItIs(st, file));
  return st;
}

function openFailed(err: unknown, file: string, options: OperatorFileOptions): never {
  // EISDIR: a directory opened for writing; ENXIO, EOPNOTSUPP: a FIFO nobody
  // reads, or a socket, opened for writing without blocking.
  if (isErrno(err, "EISDIR", "ENXIO", "EOPNOTSUPP")) {
    const st = fs.statSync(file, { throwIfNoEntry: false });
    throw refuse(file, options, st ? whatItIs(st, file) : "is not a regular file");
  }
  if (isErrno(err, "ELOOP")) throw refuse(file, options, "is a symbolic link loop");
  throw err;
}

/**
 * Reads a regular file the operator named, at most `maxBytes`. Throws the
 * fs error (ENOENT, EACCES…) for the caller to word, and FatalError when it
 * is not a regular file or too large.
 */
export function readOperatorFile(file: string, options: OperatorFileOptions & { maxBytes?: number }): { text: string; stat: fs.Stats } {
  const { bytes, stat } = readOperatorFileBytes(file, options);
  return { text: bytes.toString("utf8"), stat };
}

/**
 * readOperatorFile, as bytes. With `devNullIsEmpty`, /dev/null (a masked
 * systemd unit is a link to it) reads as empty instead of being refused.
 */
export function readOperatorFileBytes(file: string, options: OperatorFileOptions & { maxBytes?: number; devNullIsEmpty?: boolean }): { bytes: Buffer; stat: fs.Stats } {
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK | fs.constants.O_NOCTTY);
  } catch (err) {
    openFailed(err, file, options);
  }
  try {
    if (options.devNullIsEmpty) {
      const st = fs.fstatSync(fd);
      if (st.isCharacterDevice() && st.rdev === fs.statSync("/dev/null").rdev) return { bytes: Buffer.alloc(0), stat: st };
    }
    const stat = checkRegular(fd, file, options);
    const max = options.maxBytes ?? MAX_CONFIG_BYTES;
    if (stat.size > max) throw refuse(file, options, `is ${stat.size} bytes, more than the ${max} a ${options.what} may have`);
    const buf = Buffer.alloc(Math.min(stat.size, max) + 1);
    const got = readAt(fd, buf, 0);
    if (got > max) throw refuse(file, options, `grew past the ${max} bytes a ${options.what} may have`);
    return { bytes: buf.subarray(0, got), stat };
  } finally {
    fs.closeSync(fd);
  }
}

/** Why a file to write could not be made or opened, for the errnos that are a mistake in the path, not a bug. */
const CANNOT_WRITE: Record<string, string> = {
  EACCES: "permission denied",
  EPERM: "permission denied",
  ENOTDIR: "a component of its path is not a directory",
  EROFS: "it is on a read-only filesystem",
  ENAMETOOLONG: "its path is too long",
};

function writeFailed(err: unknown, file: string, options: OperatorFileOptions): never {
  if (!isErrno(err, ...Object.keys(CANNOT_WRITE))) throw err;
  const uid = typeof process.geteuid === "function" ? ` (uid ${process.geteuid()})` : "";
  throw new FatalError(options.code ?? "config_invalid", `cannot write ${options.what} ${escapeText(file)}: ${CANNOT_WRITE[err.code!]}; name a file the current user${uid} can write`);
}

/**
 * Opens a regular file the operator named for appending (a log), creating it
 * (0600, with its directory) when missing. The caller owns the descriptor.
 */
export function openOperatorFileForAppend(file: string, options: OperatorFileOptions): number {
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  } catch (err) {
    // EEXIST: a file where its directory should be.
    writeFailed(isErrno(err, "EEXIST") ? Object.assign(err, { code: "ENOTDIR" }) : err, file, options);
  }
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_APPEND | fs.constants.O_CREAT | fs.constants.O_NONBLOCK | fs.constants.O_NOCTTY, 0o600);
  } catch (err) {
    if (!isErrno(err, ...Object.keys(CANNOT_WRITE))) openFailed(err, file, options);
    writeFailed(err, file, options);
  }
  try {
    checkRegular(fd, file, options);
    return fd;
  } catch (err) {
    fs.closeSync(fd);
    throw err;
  }
}
