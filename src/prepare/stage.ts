// Check 5 and the copy of check 6: bytes go from the open source into a
// private staging file, hashed on the way, never more than the cap.
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { Refusal, errnoCode } from "../core/errors.js";
import { formatBytes } from "../core/units.js";

const CHUNK = 1024 * 1024;
/** Files up to this size are also kept in memory, so the content checks need no second read. */
export const KEEP_IN_MEMORY = 1024 * 1024;
let shared: Buffer | undefined;

export interface Staged {
  path: string;
  fd: number;
  bytes: number;
  sha256: string;
  /** The whole staged content, when it is small enough to keep (the bytes written, exactly). */
  content?: Buffer;
}

/** Sees every staged chunk, in order, once it is in the staging file (the text check). */
export interface ChunkObserver {
  push(chunk: Uint8Array): void;
}

/** The names createStagingFile gives (`<pid>-<16 hex digits>.part`): the janitor removes no other leftover from the staging directory. */
export const STAGING_NAME = /^\d{1,10}-[0-9a-f]{16}\.part$/;

/**
 * Creates a fresh 0600 staging file that nobody else can have opened, open
 * for reading too: the text check may read back what was staged.
 */
export function createStagingFile(stagingDir: string): { path: string; fd: number } {
  const { O_RDWR, O_CREAT, O_EXCL, O_NOFOLLOW } = fs.constants;
  for (;;) {
    const file = path.join(stagingDir, `${process.pid}-${randomBytes(8).toString("hex")}.part`);
    try {
      return { path: file, fd: fs.openSync(file, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600) };
    } catch (err) {
      if (errnoCode(err) !== "EEXIST") throw err;
    }
  }
}

function tooLarge(cap: number): Refusal {
  return new Refusal("too_large", `the file is larger than the ${formatBytes(cap)} cap`);
}

/** How much of a file is kept in memory while it is staged. */
export interface Keep {
  /** Keep files up to this many bytes (KEEP_IN_MEMORY by default; a parsed format's reader needs them all). */
  upTo: number;
  /** The size the file is expected to have, if known: kept in one buffer of that size. */
  expectedBytes?: number | undefined;
}

class StagingSink {
  readonly hash = createHash("sha256");
  bytes = 0;
  private kept: Buffer[] | undefined = [];
  /** The whole file, in one buffer of its expected size, when that size is worth keeping. */
  private whole: Buffer | undefined;

  constructor(
    readonly fd: number,
    private readonly cap: number,
    private readonly observer: ChunkObserver | undefined,
    private readonly keep: Keep = { upTo: KEEP_IN_MEMORY },
  ) {
    const expected = keep.expectedBytes;
    if (expected !== undefined && expected > KEEP_IN_MEMORY && expected <= keep.upTo && expected <= cap) this.whole = Buffer.allocUnsafe(expected);
  }

  write(chunk: Uint8Array): void {
    const at = this.bytes;
    this.bytes += chunk.length;
    if (this.bytes > this.cap) throw tooLarge(this.cap);
    this.hash.update(chunk);
    if (this.whole) {
      // Longer than expected: read back when needed.
      if (this.bytes <= this.whole.length) this.whole.set(chunk, at);
      else this.whole = undefined;
      this.kept = undefined;
    } else if (this.kept && this.bytes <= this.keep.upTo) this.kept.push(Buffer.from(chunk));
    else this.kept = undefined;
    let off = 0;
    while (off < chunk.length) off += fs.writeSync(this.fd, chunk, off, chunk.length - off);
    this.observer?.push(chunk);
  }

  finish(file: string): Staged {
    const staged: Staged = { path: file, fd: this.fd, bytes: this.bytes, sha256: this.hash.digest("hex") };
    if (this.whole && this.bytes === this.whole.length) staged.content = this.whole;
    else if (this.kept) staged.content = Buffer.concat(this.kept, this.bytes);
    return staged;
  }
}

/** Copies from an open source descriptor. */
export function stageFromFd(srcFd: number, target: { path: string; fd: number }, cap: number, observer?: ChunkObserver, keep?: Keep): Staged {
  const sink = new StagingSink(target.fd, cap, observer, keep);
  shared ??= Buffer.allocUnsafe(CHUNK);
  for (;;) {
    // Read to the end, not to the size fstat gave: growth past the cap is then seen (the sink refuses it).
    const n = fs.readSync(srcFd, shared, 0, CHUNK, null);
    if (n === 0) break;
    sink.write(shared.subarray(0, n));
  }
  return sink.finish(target.path);
}

/** Copies from a byte stream (standard input). */
export async function stageFromStream(stream: AsyncIterable<Uint8Array | string>, target: { path: string; fd: number }, cap: number, observer?: ChunkObserver, keep?: Keep): Promise<Staged> {
  const sink = new StagingSink(target.fd, cap, observer, keep);
  for await (const chunk of stream) {
    sink.write(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
  }
  return sink.finish(target.path);
}

/**
 * Makes the staged bytes durable before they are published: a crash must
 * never leave a published name on a file whose bytes never reached the disk.
 * Runs on the thread pool, so the content checks go on meanwhile.
 */
export function syncStaged(staged: Staged): Promise<void> {
  return new Promise((resolve, reject) => fs.fdatasync(staged.fd, (err) => (err ? reject(err) : resolve())));
}
