// The content checks, as one entry point for everyone who judges bytes:
// prepare (judge.ts, in local mode and in the gate) runs judgeStagedContent on
// its staged copy, and the watch guard runs
// judgeFileContent on a file already in the outbox (in the single-user mode
// the agent can write a ledger record too, so a record proves nothing: what is
// in the outbox must pass the very checks prepare applies). Whatever the
// content rules become (content.ts), both judge with the same code.
import { createHash } from "node:crypto";
import fs from "node:fs";
import { Refusal } from "../core/errors.js";
import { type ContentVerdict, checkContent, isTextExtension } from "./content.js";
import type { Staged } from "./stage.js";
import { type TextCheck, createTextCheck } from "./text-check.js";

/**
 * The checks prepare runs after staging: the content must be what the
 * extension says, text must be clean. `text` is the text check that saw the
 * bytes while they were staged (for a text extension). Throws a Refusal.
 */
export function judgeStagedContent(staged: Staged, ext: string, text?: TextCheck): Promise<ContentVerdict> {
  return checkContent(staged, ext, text?.verdict());
}

/** What judgeFileContent found: the bytes it read, and the verdict on them. */
export interface FileJudgement {
  bytes: number;
  sha256: string;
  /** The content verdict, or the Refusal prepare would have given. */
  verdict: ContentVerdict | Refusal;
}

const CHUNK = 1024 * 1024;
/** As prepare keeps a small staged file in memory (stage.ts), so the sniff reads the same bytes. */
const KEEP_IN_MEMORY = 1024 * 1024;

let shared: Buffer | undefined;

/** A turn of the event loop, so that a caller's other work goes on between two chunks of a large file. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Judges an open regular file as prepare judges its staged copy: reads it
 * from the start, one MiB at a time with a turn of the event loop between two
 * (a long-running caller keeps answering events meanwhile), hashing it and feeding the text
 * check as staging does, then runs judgeStagedContent. A Refusal is returned
 * as the verdict; I/O errors are thrown. The file is read through `fd` only
 * (its path for the sniffer is /proc/self/fd/N): a swapped name changes nothing.
 */
export async function judgeFileContent(fd: number, ext: string): Promise<FileJudgement> {
  const hash = createHash("sha256");
  // The text check in line (an unknown size selects it): a long-running
  // caller judges one file at a time. The explicit "" spares the look-up of
  // the worker's bundle, which is never used here.
  const text = isTextExtension(ext) ? createTextCheck(fd, undefined, "") : undefined;
  let kept: Buffer[] | undefined = [];
  let bytes = 0;
  try {
    for (;;) {
      // Read in place (one chunk is a few milliseconds of work at most): a
      // small file, most of them, is judged without leaving this turn.
      if (bytes > 0) await nextTurn();
      // One buffer for every read: what is kept is copied out of it.
      shared ??= Buffer.allocUnsafe(CHUNK);
      const n = fs.readSync(fd, shared, 0, CHUNK, bytes);
      if (n === 0) break;
      const chunk = shared.subarray(0, n);
      bytes += n;
      hash.update(chunk);
      text?.push(chunk);
      if (kept && bytes <= KEEP_IN_MEMORY) kept.push(Buffer.from(chunk));
      else kept = undefined;
      // A short read is the end of a regular file (a file still growing is seen by its new size).
      if (n < CHUNK) break;
    }
    const staged: Staged = { path: `/proc/self/fd/${fd}`, fd, bytes, sha256: hash.digest("hex") };
    if (kept) staged.content = Buffer.concat(kept, bytes);
    let verdict: ContentVerdict | Refusal;
    try {
      verdict = bytes === 0 ? new Refusal("empty_file", "the file is empty") : await judgeStagedContent(staged, ext, text);
    } catch (err) {
      if (!(err instanceof Refusal)) throw err;
      verdict = err;
    }
    return { bytes, sha256: staged.sha256, verdict };
  } finally {
    await text?.dispose();
  }
}
