import { createHash } from "node:crypto";
import fs from "node:fs";
import { errnoCode } from "./errors.js";

const CHUNK = 1024 * 1024;
let buffer: Buffer | undefined;

/** sha256 (hex) of everything left to read from an open descriptor. */
export function sha256OfFd(fd: number): string {
  const hash = createHash("sha256");
  buffer ??= Buffer.allocUnsafe(CHUNK);
  for (let n = fs.readSync(fd, buffer); n > 0; n = fs.readSync(fd, buffer)) hash.update(buffer.subarray(0, n));
  return hash.digest("hex");
}

/**
 * Opens `file` for reading and hands the descriptor and its fstat to `use`
 * when it is a regular file; the descriptor is closed afterwards. Undefined
 * when it is gone, a symbolic link or not a regular file: the entry there is
 * never followed, and a FIFO or a terminal never blocks or attaches.
 */
export function withRegularFile<T>(file: string, use: (fd: number, st: fs.Stats) => T): T | undefined {
  const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK, O_NOCTTY } = fs.constants;
  let fd: number;
  try {
    fd = fs.openSync(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  } catch (err) {
    // ELOOP: a symbolic link; ENXIO: a socket, or a device with nothing behind it.
    if (["ENOENT", "ELOOP", "ENXIO"].includes(errnoCode(err) ?? "")) return undefined;
    throw err;
  }
  try {
    const st = fs.fstatSync(fd);
    return st.isFile() ? use(fd, st) : undefined;
  } finally {
    fs.closeSync(fd);
  }
}
