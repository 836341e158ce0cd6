// The text check of check 6: valid UTF-8, no NUL byte, no secret. It runs on
// the bytes as they are staged, or on ranges of the staging file read back
// (text-check.ts shares a large file between two threads); either way memory
// stays flat whatever the file's size, and the verdict is the same.
import { isUtf8 } from "node:buffer";
import fs from "node:fs";
import { findSecret } from "./secrets.js";

/**
 * Bytes judged at once: large enough that the overlap below costs little,
 * small enough that their Latin-1 view is a young-generation string (larger
 * ones are slower to make, measured: 64 KiB blocks scan ~20% faster than 1 MiB).
 */
const BLOCK = 64 * 1024;
/**
 * Each block is scanned together with the end of the one before, so a secret
 * that straddles a boundary is still seen whole: any match of at most this
 * many bytes (every pattern's shortest match is under 200) is found wherever
 * it lies. Kept small: every seam is scanned twice.
 */
const OVERLAP = 4 * 1024;

export interface TextVerdict {
  hasNul: boolean;
  validUtf8: boolean;
  /** What kind of secret was found, if any. */
  secret?: string;
}

/** The verdict on a whole file from the verdicts on its ranges, given in file order. */
export function mergeVerdicts(ranges: TextVerdict[]): TextVerdict {
  const secret = ranges.find((v) => v.secret !== undefined)?.secret;
  return {
    hasNul: ranges.some((v) => v.hasNul),
    validUtf8: ranges.every((v) => v.validUtf8),
    ...(secret !== undefined ? { secret } : {}),
  };
}

let scratch: Buffer | undefined;

/** Bytes [from, to) of an open file, in a buffer reused by the next call. */
function readRange(fd: number, from: number, to: number): Buffer {
  if (!scratch || scratch.length < to - from) scratch = Buffer.allocUnsafe(to - from);
  const bytes = scratch.subarray(0, to - from);
  for (let off = 0; off < bytes.length; ) {
    const n = fs.readSync(fd, bytes, off, bytes.length - off, from + off);
    if (n === 0) throw new Error(`the staged file ended at byte ${from + off}, before byte ${to}`);
    off += n;
  }
  return bytes;
}

/** Where a trailing, still incomplete UTF-8 sequence starts (data.length when none). */
function completeLength(data: Buffer): number {
  for (let i = data.length - 1; i >= Math.max(0, data.length - 4); i--) {
    const b = data[i]!;
    if ((b & 0xc0) === 0x80) continue;
    const need = b < 0x80 ? 1 : b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return i + need > data.length ? i : data.length;
  }
  return data.length;
}

export class TextScanner {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private carry: Buffer = Buffer.alloc(0);
  private tail = "";
  private readonly verdict: TextVerdict = { hasNul: false, validUtf8: true };

  /**
   * Judges bytes [from, to) of an open file of `size` bytes on their own,
   * with the OVERLAP bytes before them as context: the verdict a scan of the
   * whole file gives them. Ranges that start and end on block boundaries (or
   * at the end of the file) can so be judged in any order, by any thread; the
   * file's verdict is their `mergeVerdicts`.
   */
  static judgeFileRange(fd: number, from: number, to: number, size: number): TextVerdict {
    if (from % BLOCK !== 0 || (to !== size && to % BLOCK !== 0)) throw new Error(`range ${from}..${to} is not on block boundaries`);
    const start = Math.max(0, from - OVERLAP);
    const bytes = readRange(fd, start, to);
    const before = bytes.subarray(0, from - start);
    const scanner = new TextScanner();
    scanner.carry = Buffer.from(before.subarray(completeLength(before)));
    scanner.tail = before.toString("latin1");
    scanner.push(bytes.subarray(from - start));
    return to === size ? scanner.finish() : scanner.verdict;
  }

  /** Observes the next chunk; the chunk may be reused by the caller afterwards. */
  push(chunk: Uint8Array): void {
    let bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length);
    if (this.pendingBytes > 0) {
      const take = Math.min(BLOCK - this.pendingBytes, bytes.length);
      this.pending.push(Buffer.from(bytes.subarray(0, take)));
      this.pendingBytes += take;
      bytes = bytes.subarray(take);
      if (this.pendingBytes < BLOCK) return;
      this.flush(false);
    }
    for (; bytes.length >= BLOCK; bytes = bytes.subarray(BLOCK)) this.judge(bytes.subarray(0, BLOCK), false);
    if (bytes.length > 0) {
      this.pending.push(Buffer.from(bytes));
      this.pendingBytes = bytes.length;
    }
  }

  finish(): TextVerdict {
    this.flush(true);
    return this.verdict;
  }

  private flush(final: boolean): void {
    const block = Buffer.concat(this.pending, this.pendingBytes);
    this.pending = [];
    this.pendingBytes = 0;
    this.judge(block, final);
  }

  private judge(block: Buffer, final: boolean): void {
    const v = this.verdict;
    if (!v.hasNul && block.includes(0)) v.hasNul = true;
    if (v.validUtf8) this.checkUtf8(block, final);
    if (v.secret === undefined) this.scanSecrets(block, final);
  }

  /** Validates `block` after the sequence the previous one left incomplete, without copying it. */
  private checkUtf8(block: Buffer, final: boolean): void {
    let start = 0;
    if (this.carry.length > 0) {
      const lead = this.carry[0]!;
      start = (lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2) - this.carry.length;
      if (start > block.length || !isUtf8(Buffer.concat([this.carry, block.subarray(0, start)]))) {
        this.verdict.validUtf8 = false;
        return;
      }
    }
    const cut = final ? block.length : completeLength(block);
    if (!isUtf8(block.subarray(start, Math.max(start, cut)))) this.verdict.validUtf8 = false;
    this.carry = Buffer.from(block.subarray(Math.max(start, cut)));
  }

  /**
   * Scans the block, and the seam where it meets the previous one (the
   * previous block's last OVERLAP bytes and this one's first): a secret that
   * straddles the boundary is found in the seam, everything else in the block.
   * A hit in the block's last OVERLAP bytes is judged again in the next seam,
   * with what follows, so a token cut by the boundary is never mistaken for a
   * whole one; a hit on the block's first byte is judged in the seam, where the
   * byte before it decides the word boundary.
   */
  private scanSecrets(block: Buffer, final: boolean): void {
    const text = block.toString("latin1");
    const deferFrom = final ? text.length : text.length - OVERLAP;
    if (this.tail !== "") {
      const hit = findSecret(this.tail + text.slice(0, OVERLAP));
      if (hit && hit.index <= this.tail.length) this.verdict.secret = hit.what;
    }
    if (this.verdict.secret === undefined) {
      const hit = findSecret(text, this.tail === "" ? 0 : 1);
      if (hit && hit.index < deferFrom) this.verdict.secret = hit.what;
    }
    this.tail = text.slice(Math.max(0, text.length - OVERLAP));
  }
}
