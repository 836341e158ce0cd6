// stdout is an interface (MEDIA: lines or one JSON document), so it is
// written synchronously and completely: nothing is lost when the process exits.
import fs from "node:fs";

function sleep(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** Why standard output could not be written (EPIPE: its reader went away), once that happened. */
let stdoutLost: string | undefined;
export function stdoutFailure(): string | undefined {
  return stdoutLost;
}

/** Writes all of `text` to a file descriptor, waiting out a full pipe; false when the reader went away. */
export function writeAll(fd: number, text: string): boolean {
  const buf = Buffer.from(text, "utf8");
  let off = 0;
  while (off < buf.length) {
    try {
      off += fs.writeSync(fd, buf, off, buf.length - off);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "EAGAIN") {
        sleep(1);
        continue;
      }
      // The reader went away: nothing more can be delivered; the exit code says the rest.
      if (code === "EPIPE" || code === "EBADF") return false;
      throw err;
    }
  }
  return true;
}

/** Writes to stdout; a failure is remembered (stdoutFailure) so the command can say what was lost. */
export const out = (text: string): boolean => {
  if (stdoutLost !== undefined) return false;
  if (writeAll(1, text)) return true;
  stdoutLost = "EPIPE";
  return false;
};
export const err = (text: string): boolean => writeAll(2, text);
