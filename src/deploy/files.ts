// Writing configuration that a running system reads: every file is replaced
// atomically (temp file, fsync, rename, fsync of the directory), so systemd or
// the gateway never reads half of one, and the previous bytes are recorded so
// that uninstall can put them back exactly.
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { isErrno } from "../core/errors.js";
import { readOperatorFileBytes } from "../safety/operator-file.js";

export interface WriteOptions {
  mode?: number;
  uid?: number;
  gid?: number;
}

function fsyncDir(dir: string): void {
  let fd: number | undefined;
  try {
    fd = fs.openSync(dir, "r");
    fs.fsyncSync(fd);
  } catch {
    // Some filesystems refuse fsync on a directory; the rename is still atomic.
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/** Replaces `file` with `data` atomically; never follows a link at the final name. */
export function writeFileAtomic(file: string, data: string | Buffer, options: WriteOptions = {}): void {
  const dir = path.dirname(file);
  const tmp = path.join(dir, `.${path.basename(file)}.${process.pid}.${crypto.randomBytes(4).toString("hex")}.tmp`);
  const fd = fs.openSync(tmp, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW, options.mode ?? 0o644);
  try {
    try {
      fs.writeFileSync(fd, data);
      if (options.mode !== undefined) fs.fchmodSync(fd, options.mode);
      if (options.uid !== undefined && options.gid !== undefined) fs.fchownSync(fd, options.uid, options.gid);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, file);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw err;
  }
  fsyncDir(dir);
}

export const sha256 = (data: string | Buffer) => crypto.createHash("sha256").update(data).digest("hex");

/**
 * The file's bytes, or undefined when it does not exist. A FIFO, a device or
 * a directory in its place is refused at once (exit 2), never waited on;
 * /dev/null (a masked unit) reads as empty.
 */
export function readIfExists(file: string): Buffer | undefined {
  try {
    return readOperatorFileBytes(file, { what: "file", maxBytes: 16 * 1024 * 1024, devNullIsEmpty: true }).bytes;
  } catch (err) {
    if (isErrno(err, "ENOENT", "ENOTDIR")) return undefined;
    throw err;
  }
}

/** Creates `dir` and missing parents; returns the ones it created, outermost first. */
export function mkdirs(dir: string, mode = 0o755): string[] {
  const created: string[] = [];
  const missing: string[] = [];
  for (let d = dir; !fs.existsSync(d); d = path.dirname(d)) missing.unshift(d);
  for (const d of missing) {
    fs.mkdirSync(d, { mode });
    created.push(d);
  }
  return created;
}
