// Scans a stream of bytes for credentials, block by block, memory flat
// whatever its length: the rules (find.ts) over the bytes read one character
// per byte, and the host's known secrets (known.ts) over the bytes.
//
// Each block is scanned together with the end of the one before, so a
// secret that straddles a boundary is still seen whole: any match of at most
// OVERLAP bytes (every rule's is under MAX_MATCH, a known value is compared
// on at most 256 bytes) is found wherever it lies. A hit in the block's last
// OVERLAP bytes is judged again in the next seam, with what follows, so a
// token cut by the boundary is never mistaken for a whole one; a hit on the
// block's first byte is judged in the seam, where the byte before it decides
// whether a token starts there.
import { findSecret } from "./find.js";
import { type KnownSecrets, NO_KNOWN_SECRETS } from "./known.js";
import { MAX_MATCH } from "./rules.js";

/**
 * Bytes judged at once: large enough that the overlap costs little, small
 * enough that their Latin-1 view is a young-generation string (measured:
 * 64 KiB blocks scan ~20% faster than 1 MiB ones).
 */
export const BLOCK = 64 * 1024;
export const OVERLAP = 4 * 1024;
if (MAX_MATCH > OVERLAP) throw new Error("a rule's match may be longer than the block overlap");

export interface Finding {
  /** What was found: the kind of credential, never its value. */
  what: string;
  /** Offset of its first byte in the stream (for UTF-16, in its bytes as given). */
  offset: number;
}

/** The leftmost hit of either finder at or after `from`. */
function firstHit(text: string, bytes: Uint8Array, from: number, known: KnownSecrets): { what: string; index: number } | undefined {
  const rule = findSecret(text, from, bytes);
  const value = known.find(bytes, from);
  if (value && (!rule || value.index < rule.index)) return { what: `the value of ${value.name}`, index: value.index };
  return rule;
}

export class SecretScanner {
  finding: Finding | undefined;
  private tail: Buffer = Buffer.alloc(0);
  private tailText = "";

  /**
   * `position` is where the first block starts in the stream; `scale` turns
   * positions into offsets (2 for UTF-16 narrowed to one byte per unit).
   */
  constructor(
    private readonly known: KnownSecrets = NO_KNOWN_SECRETS,
    private position = 0,
    private readonly scale = 1,
  ) {}

  /** Sets the bytes before the first block: context only, never judged. */
  setContext(before: Uint8Array): void {
    this.tail = Buffer.from(before.subarray(Math.max(0, before.length - OVERLAP)));
    this.tailText = this.tail.toString("latin1");
  }

  /** Judges the next block (at most BLOCK bytes; `final` for the stream's last). */
  scanBlock(block: Buffer, final: boolean): void {
    if (this.finding) return;
    const text = block.toString("latin1");
    const deferFrom = final ? block.length : block.length - OVERLAP;
    const tailLength = this.tail.length;
    if (tailLength > 0) {
      const head = block.subarray(0, OVERLAP);
      const hit = firstHit(this.tailText + text.slice(0, OVERLAP), Buffer.concat([this.tail, head]), 0, this.known);
      if (hit && hit.index <= tailLength) this.found(hit.what, this.position - tailLength + hit.index);
    }
    if (!this.finding) {
      const hit = firstHit(text, block, tailLength > 0 ? 1 : 0, this.known);
      if (hit && hit.index < deferFrom) this.found(hit.what, this.position + hit.index);
    }
    const keep = Math.min(OVERLAP, block.length);
    this.tail = Buffer.from(block.subarray(block.length - keep));
    this.tailText = text.slice(text.length - keep);
    this.position += block.length;
  }

  private found(what: string, position: number): void {
    this.finding = { what, offset: position * this.scale };
  }
}

/** The first credential in `bytes` (a whole part: a metadata chunk, an inflated XML file), or undefined. */
export function scanBytes(bytes: Uint8Array, known: KnownSecrets = NO_KNOWN_SECRETS): Finding | undefined {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  const scanner = new SecretScanner(known);
  for (let off = 0; off < buf.length || off === 0; off += BLOCK) {
    const end = Math.min(buf.length, off + BLOCK);
    scanner.scanBlock(buf.subarray(off, end), end === buf.length);
    if (scanner.finding || end === buf.length) break;
  }
  return scanner.finding;
}
