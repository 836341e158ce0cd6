// The text check of check 6, run on the bytes as they are staged: valid UTF-8,
// no NUL byte, no secret. Streaming keeps memory flat whatever the file's size
// and judges exactly the bytes written to the staging file.
import { isUtf8 } from "node:buffer";
import { findSecret } from "./secrets.js";

/** Bytes judged at once: large enough that the overlap below costs little. */
const BLOCK = 1024 * 1024;
/**
 * Each block is scanned together with the end of the one before, so a secret
 * that straddles a boundary is still seen whole (any of the patterns matches
 * in far fewer bytes than this).
 */
const OVERLAP = 64 * 1024;

export interface TextVerdict {
  hasNul: boolean;
  validUtf8: boolean;
  /** What kind of secret was found, if any. */
  secret?: string;
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
  private tail: Buffer = Buffer.alloc(0);
  private readonly verdict: TextVerdict = { hasNul: false, validUtf8: true };

  /** Observes the next chunk; the chunk may be reused by the caller afterwards. */
  push(chunk: Uint8Array): void {
    if (this.pendingBytes === 0 && chunk.length >= BLOCK) {
      this.judge(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length), false);
      return;
    }
    this.pending.push(Buffer.from(chunk));
    this.pendingBytes += chunk.length;
    if (this.pendingBytes >= BLOCK) this.flush(false);
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
    if (v.validUtf8) {
      const data = this.carry.length > 0 ? Buffer.concat([this.carry, block]) : block;
      const cut = final ? data.length : completeLength(data);
      if (!isUtf8(data.subarray(0, cut))) v.validUtf8 = false;
      this.carry = Buffer.from(data.subarray(cut));
    }
    if (v.secret !== undefined) return;
    const window = this.tail.length > 0 ? Buffer.concat([this.tail, block]) : block;
    const hit = findSecret(window.toString("latin1"));
    // A hit in the last OVERLAP bytes is judged again with what follows, so
    // that a token cut by the block boundary is never mistaken for a whole one.
    if (hit && (final || hit.index < window.length - OVERLAP)) v.secret = hit.what;
    this.tail = Buffer.from(window.subarray(Math.max(0, window.length - OVERLAP)));
  }
}
