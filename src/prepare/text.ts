// The text check: valid text (UTF-8, or UTF-16 with its byte order mark), no
// NUL, no credential (src/content/scan.ts). It runs on the bytes as they are
// staged, or on ranges of the staging file read back (text-check.ts shares a
// large file between two threads); either way memory stays flat whatever the
// file's size, and the verdict is the same. With `raw`, only the credential
// scan runs: the bytes of a binary format nothing parses (see content.ts),
// as they are and as UTF-16 at both alignments (raw-utf16.ts).
import { isUtf8 } from "node:buffer";
import { type KnownSecrets, NO_KNOWN_SECRETS } from "../content/known.js";
import { readAt } from "../core/read-at.js";
import { BLOCK, CONTEXT, OVERLAP, type RereadBudget, SecretScanner } from "../content/scan.js";
import { type Utf16State, narrowUtf16, utf16Order } from "../content/utf16.js";
import { RawUtf16Scan, UTF16_TAIL } from "./raw-utf16.js";

export interface TextVerdict {
  hasNul: boolean;
  /** Valid in its encoding. */
  validUtf8: boolean;
  /** Set when the text is UTF-16 (a BOM opens it). */
  utf16?: "le" | "be";
  /** What kind of secret was found, if any, and at which byte. */
  secret?: string;
  secretAt?: number;
}

/** The verdict on a whole file from the verdicts on its ranges, given in file order. */
export function mergeVerdicts(ranges: TextVerdict[]): TextVerdict {
  const first = ranges.find((v) => v.secret !== undefined);
  const utf16 = ranges[0]?.utf16;
  return {
    hasNul: ranges.some((v) => v.hasNul),
    validUtf8: ranges.every((v) => v.validUtf8),
    ...(utf16 ? { utf16 } : {}),
    ...(first ? { secret: first.secret!, secretAt: first.secretAt! } : {}),
  };
}

let scratch: Buffer | undefined;

/** Bytes [from, to) of an open file, in a buffer reused by the next call. */
function readRange(fd: number, from: number, to: number): Buffer {
  if (!scratch || scratch.length < to - from) scratch = Buffer.allocUnsafe(to - from);
  const bytes = scratch.subarray(0, to - from);
  const got = readAt(fd, bytes, from);
  if (got < bytes.length) throw new Error(`the staged file ended at byte ${from + got}, before byte ${to}`);
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

export interface TextScannerOptions {
  known?: KnownSecrets;
  /** Scan for credentials only: no encoding or NUL verdict (a binary format's raw bytes). */
  raw?: boolean;
  /** What may still be read a second time (scan.ts RereadBudget): one per file and thread. */
  reread?: RereadBudget;
}

export class TextScanner {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private carry: Buffer = Buffer.alloc(0);
  private started = false;
  private order: "le" | "be" | undefined;
  private utf16: Utf16State = { pendingHigh: false, valid: true, hasNul: false };
  private secrets: SecretScanner;
  /** With `raw`: the bytes read as UTF-16. */
  private asUtf16: RawUtf16Scan | undefined;
  private readonly verdict: TextVerdict = { hasNul: false, validUtf8: true };

  constructor(private readonly options: TextScannerOptions = {}) {
    this.secrets = new SecretScanner(options.known ?? NO_KNOWN_SECRETS, 0, 1, options.reread);
    if (options.raw) this.asUtf16 = new RawUtf16Scan(options.known ?? NO_KNOWN_SECRETS);
  }

  /**
   * Judges bytes [from, to) of an open file of `size` bytes on their own,
   * with the bytes before them as context: the verdict a scan of the whole
   * file gives them. Ranges that start and end on block boundaries (or at the
   * end of the file) can so be judged in any order, by any thread; the file's
   * verdict is their `mergeVerdicts`.
   */
  static judgeFileRange(fd: number, from: number, to: number, size: number, options: TextScannerOptions = {}): TextVerdict {
    if (from % BLOCK !== 0 || (to !== size && to % BLOCK !== 0)) throw new Error(`range ${from}..${to} is not on block boundaries`);
    const scanner = new TextScanner(options);
    if (from === 0) {
      scanner.push(readRange(fd, 0, to));
      return to === size ? scanner.finish() : scanner.snapshot();
    }
    const order = options.raw ? undefined : utf16Order(readRange(fd, 0, Math.min(2, size)));
    // The bytes before `from` that the scan of the range before deferred, and their context. UTF-16 narrows to half: twice the bytes.
    const start = Math.max(0, from - (options.raw ? UTF16_TAIL : (order ? 2 : 1) * (OVERLAP + CONTEXT)));
    const bytes = readRange(fd, start, to);
    const before = bytes.subarray(0, from - start);
    scanner.started = true;
    scanner.order = order;
    if (order) {
      scanner.verdict.utf16 = order;
      scanner.secrets = new SecretScanner(options.known ?? NO_KNOWN_SECRETS, from / 2, 2, options.reread);
      const context = narrowUtf16(before, order, scanner.utf16);
      scanner.utf16 = { pendingHigh: scanner.utf16.pendingHigh, valid: true, hasNul: false };
      scanner.secrets.setContext(context);
    } else {
      scanner.secrets = new SecretScanner(options.known ?? NO_KNOWN_SECRETS, from, 1, options.reread);
      scanner.secrets.setContext(before);
      if (options.raw) scanner.asUtf16 = new RawUtf16Scan(options.known ?? NO_KNOWN_SECRETS, from, before);
      scanner.carry = Buffer.from(before.subarray(completeLength(before)));
    }
    scanner.push(bytes.subarray(from - start));
    return to === size ? scanner.finish() : scanner.snapshot();
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
    return this.snapshot();
  }

  private snapshot(): TextVerdict {
    const f = this.secrets.finding;
    if (f && this.verdict.secret === undefined) {
      this.verdict.secret = f.what;
      this.verdict.secretAt = f.offset;
    }
    return this.verdict;
  }

  private flush(final: boolean): void {
    const block = Buffer.concat(this.pending, this.pendingBytes);
    this.pending = [];
    this.pendingBytes = 0;
    this.judge(block, final);
  }

  private judge(block: Buffer, final: boolean): void {
    if (!this.started) {
      this.started = true;
      if (!this.options.raw) {
        this.order = utf16Order(block);
        if (this.order) {
          this.verdict.utf16 = this.order;
          this.secrets = new SecretScanner(this.options.known ?? NO_KNOWN_SECRETS, 0, 2, this.options.reread);
        }
      }
    }
    if (this.asUtf16) {
      this.judgeRaw(block, final, this.asUtf16);
      return;
    }
    const v = this.verdict;
    if (this.order) {
      if (final && block.length % 2 !== 0) v.validUtf8 = false;
      const narrow = narrowUtf16(block.subarray(0, block.length & ~1), this.order, this.utf16);
      if (final && this.utf16.pendingHigh) this.utf16.valid = false;
      v.hasNul ||= this.utf16.hasNul;
      v.validUtf8 &&= this.utf16.valid;
      this.secrets.scanBlock(narrow, final);
      return;
    }
    if (!v.hasNul && block.includes(0)) v.hasNul = true;
    if (v.validUtf8) this.checkUtf8(block, final);
    this.secrets.scanBlock(block, final);
  }

  /**
   * A binary's bytes, as they are and as UTF-16. The verdict is the first
   * block's to find anything (the ranges of judgeFileRange end on blocks),
   * of its findings the first in the file; later blocks are not read.
   */
  private judgeRaw(block: Buffer, final: boolean, asUtf16: RawUtf16Scan): void {
    if (this.verdict.secret !== undefined) return;
    this.secrets.scanBlock(block, final);
    const inUtf16 = asUtf16.judge(block, final);
    const asIs = this.secrets.finding;
    const first = asIs && inUtf16 ? (inUtf16.offset < asIs.offset ? inUtf16 : asIs) : (asIs ?? inUtf16);
    if (!first) return;
    this.verdict.secret = first.what;
    this.verdict.secretAt = first.offset;
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
}
