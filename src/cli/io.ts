// stdout is an interface (MEDIA: lines or one JSON document), so it is
// written synchronously and completely: nothing is lost when the process exits.
import fs from "node:fs";

function sleep(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** Why standard output could not be written (its errno code: EPIPE when its reader went away), once that happened. */
let stdoutLost: string | undefined;
export function stdoutFailure(): string | undefined {
  return stdoutLost;
}

/**
 * Errors that end a stream's output for good: its reader went away (EPIPE,
 * EBADF), or the file it was sent to cannot take more (`> out.txt` on a full
 * disk, a quota, a failing device). Not a bug: the command says what was lost.
 */
const LOST_OUTPUT = new Set(["EPIPE", "EBADF", "ENOSPC", "EDQUOT", "EFBIG", "EIO"]);

/** A lost output's errno code, in words: "EPIPE: its reader went away". */
export function lostOutputWhy(code: string): string {
  return code === "EPIPE" || code === "EBADF" ? `${code}: its reader went away` : `${code}: where it goes cannot take more`;
}

/** Writes all of `text` to a file descriptor, waiting out a full pipe; the errno code when the rest cannot be written, else undefined. */
export function writeAll(fd: number, text: string): string | undefined {
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
      // Nothing more can be delivered; the exit code says the rest.
      if (code !== undefined && LOST_OUTPUT.has(code)) return code;
      throw err;
    }
  }
  return undefined;
}

/** Writes to stdout; a failure is remembered (stdoutFailure) so the command can say what was lost. */
export const out = (text: string): boolean => {
  if (stdoutLost !== undefined) return false;
  stdoutLost = writeAll(1, text);
  return stdoutLost === undefined;
};
export const err = (text: string): boolean => writeAll(2, text) === undefined;
