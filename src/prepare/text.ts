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
  private tail = "";
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
