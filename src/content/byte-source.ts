// A file's bytes, a range at a time: how the readers that need only parts of
// a file (audio and video skip their media data; a zip reads its directory
// and one entry after another, a PDF skips its images) read a staged file
// without holding it whole. A 50 MB video or docx held whole cost a 50 MB
// buffer and its page faults (~0.5 ms per MiB of fresh memory), and a
// second read of the whole file.
import { readAt } from "../core/read-at.js";

/** A file's bytes, a range at a time. What `read` returns is valid until the next call. */
export interface ByteSource {
  readonly length: number;
  read(at: number, length: number): Uint8Array;
  /** Copies the bytes from `at` into `into` (as many as fit, to the end); how many it copied. */
  readInto(into: Uint8Array, at: number): number;
  /** All the bytes, when they are in memory: views of them stay valid (readers then copy nothing). */
  readonly whole?: Buffer;
}

/** The bytes of a file held in memory (a part of a container, a small file kept while staging). */
export function bytesSource(b: Uint8Array): ByteSource {
  const readInto = (into: Uint8Array, at: number) => {
    const bytes = b.subarray(at, at + into.length);
    into.set(bytes);
    return bytes.length;
  };
  return { length: b.length, read: (at, length) => b.subarray(at, at + length), readInto, whole: Buffer.from(b.buffer, b.byteOffset, b.length) };
}

/** Bytes [at, at + length) that stay valid: a view of what is in memory, else a copy. */
export function readKept(src: ByteSource, at: number, length: number): Buffer {
  return src.whole ? src.whole.subarray(at, at + length) : Buffer.from(src.read(at, length));
}

/** Where `pattern` (Latin-1) first occurs at or after `from`, or -1: read in ranges that grow from the window's size. */
export function indexOfIn(src: ByteSource, pattern: string, from: number): number {
  if (src.whole) return src.whole.indexOf(pattern, from, "latin1");
  // A match may straddle two ranges: each range starts pattern.length - 1 bytes before the last one's end.
  for (let at = from, size = WINDOW; at < src.length; size = Math.min(size * 2, 1024 * 1024)) {
    const range = src.read(at, size);
    const i = Buffer.from(range.buffer, range.byteOffset, range.length).indexOf(pattern, 0, "latin1");
    if (i >= 0) return at + i;
    // The end, or a file that ended early (it shrank since it was staged): no more to search.
    if (at + range.length >= src.length || range.length < Math.min(size, src.length - at)) return -1;
    at += range.length - (pattern.length - 1);
  }
  return -1;
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
  const fill = (into: Buffer, at: number, n: number) => into.subarray(0, readAt(fd, into.subarray(0, n), at));
  return {
    length,
    readInto: (into, at) => readAt(fd, into.subarray(0, Math.max(0, Math.min(into.length, length - at))), at),
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
