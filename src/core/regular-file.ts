// A file opened only if it is a regular file, never through a link, never
// blocking. Apart from hash.ts: what imports this (the gate's client, through
// process-environments.ts) need not load node:crypto.
import fs from "node:fs";
import { errnoCode } from "./errors.js";

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
