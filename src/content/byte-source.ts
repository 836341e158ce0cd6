// A file's bytes, a range at a time: how the readers that need only parts of
// a file (audio and video skip their media data; a zip reads its directory
// and one entry after another) read a staged file without holding it whole.
// A 50 MB video or docx held whole cost a 50 MB buffer and its page faults
// (~0.5 ms per MiB of fresh memory), and a second read of the whole file.
import fs from "node:fs";

/** A file's bytes, a range at a time. What `read` returns is valid until the next call. */
export interface ByteSource {
  readonly length: number;
  read(at: number, length: number): Uint8Array;
}

/** The bytes of a file held in memory (a part of a container, a small file kept while staging). */
export function bytesSource(b: Uint8Array): ByteSource {
  return { length: b.length, read: (at, length) => b.subarray(at, at + length) };
}

/** How much is read at once from a file: headers of boxes and chunks are served from it. */
const WINDOW = 64 * 1024;

/**
 * An open file's bytes, read on demand through a window (a box header costs
 * no system call of its own); a larger range is read into one buffer that
 * grows to the largest asked for and is reused, its memory touched once.
 */
export function fileSource(fd: number, length: number): ByteSource {
  const window = Buffer.allocUnsafe(WINDOW);
  let large: Buffer | undefined;
  let from = 0;
  let to = 0;
  const fill = (into: Buffer, at: number, n: number) => {
    let got = 0;
    while (got < n) {
      const r = fs.readSync(fd, into, got, n - got, at + got);
      if (r === 0) break;
      got += r;
    }
    return into.subarray(0, got);
  };
  return {
    length,
    read(at, n) {
      n = Math.max(0, Math.min(n, length - at));
      if (at >= from && at + n <= to) return window.subarray(at - from, at - from + n);
      if (n > WINDOW) {
        if (!large || large.length < n) large = Buffer.allocUnsafeSlow(n);
        return fill(large, at, n);
      }
      const got = fill(window, at, Math.min(WINDOW, length - at));
      from = at;
      to = at + got.length;
      return window.subarray(0, Math.min(n, got.length));
    },
  };
}
