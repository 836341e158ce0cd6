// stdout is an interface (MEDIA: lines or one JSON document), so it is
// written synchronously and completely: nothing is lost when the process exits.
import fs from "node:fs";

function sleep(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** Writes all of `text` to a file descriptor, waiting out a full pipe. */
export function writeAll(fd: number, text: string): void {
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
      if (code === "EPIPE") return;
      throw err;
    }
  }
}

export const out = (text: string) => writeAll(1, text);
export const err = (text: string) => writeAll(2, text);
