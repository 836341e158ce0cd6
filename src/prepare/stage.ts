// Check 5 and the copy of check 6: bytes go from the open source into a
// private staging file, hashed on the way, never more than the cap.
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { Refusal, errnoCode } from "../core/errors.js";
import { formatBytes } from "../core/units.js";

const CHUNK = 1024 * 1024;
/** Files up to this size are also kept in memory, so the content checks need no second read. */
const KEEP_IN_MEMORY = 1024 * 1024;
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

class StagingSink {
  readonly hash = createHash("sha256");
  bytes = 0;
  private kept: Buffer[] | undefined = [];

  constructor(
    readonly fd: number,
    private readonly cap: number,
    private readonly observer: ChunkObserver | undefined,
  ) {}

  write(chunk: Uint8Array): void {
    this.bytes += chunk.length;
    if (this.bytes > this.cap) throw tooLarge(this.cap);
    this.hash.update(chunk);
    if (this.kept && this.bytes <= KEEP_IN_MEMORY) this.kept.push(Buffer.from(chunk));
    else this.kept = undefined;
    let off = 0;
    while (off < chunk.length) off += fs.writeSync(this.fd, chunk, off, chunk.length - off);
    this.observer?.push(chunk);
  }

  finish(file: string): Staged {
    const staged: Staged = { path: file, fd: this.fd, bytes: this.bytes, sha256: this.hash.digest("hex") };
    if (this.kept) staged.content = Buffer.concat(this.kept, this.bytes);
    return staged;
  }
}

/** Copies from an open source descriptor. */
export function stageFromFd(srcFd: number, target: { path: string; fd: number }, cap: number, observer?: ChunkObserver): Staged {
  const sink = new StagingSink(target.fd, cap, observer);
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
export async function stageFromStream(stream: AsyncIterable<Uint8Array | string>, target: { path: string; fd: number }, cap: number, observer?: ChunkObserver): Promise<Staged> {
  const sink = new StagingSink(target.fd, cap, observer);
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
