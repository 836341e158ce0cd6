// The watch guard's way into the content checks. In the single-user mode the
// agent can write a ledger record too, so a record proves nothing: what is in
// the outbox must pass the very checks prepare applies. Prepare (judge.ts, in
// local mode and in the gate) calls checkContent on its staged copy; the guard
// calls it here, through judgeFileContent, on the file in the outbox: one
// entry point, so whatever the content rules become, both judge alike.
import { createHash } from "node:crypto";
import fs from "node:fs";
import { Refusal } from "../core/errors.js";
import { type ContentOptions, type ContentVerdict, checkContent } from "./content.js";

/** What judgeFileContent found: the bytes it read, and the verdict on them. */
export interface FileJudgement {
  bytes: number;
  sha256: string;
  /** The content verdict, or the Refusal prepare would have given. */
  verdict: ContentVerdict | Refusal;
}

const CHUNK = 1024 * 1024;
/** As prepare keeps a small staged file in memory (stage.ts): the checks then read no byte again. */
export const KEEP_IN_MEMORY = 1024 * 1024;

let shared: Buffer | undefined;

/** A turn of the event loop, so that a caller's other work goes on between two chunks of a large file. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Judges an open regular file as prepare judges its staged copy: reads it from
 * the start, one MiB at a time with a turn of the event loop between two,
 * hashing it, then runs checkContent on the same descriptor (a file of up to
 * 1 MiB from the bytes just read). A Refusal is returned as the verdict; I/O
 * errors are thrown. The file is read through `fd` only (its path for the
 * sniffer is /proc/self/fd/N): a swapped name changes nothing. `options` says
 * where the known secrets come from (the Hermes home's .env files).
 */
export async function judgeFileContent(fd: number, ext: string, options: Pick<ContentOptions, "known" | "hermesHome" | "userHome"> = {}): Promise<FileJudgement> {
  const hash = createHash("sha256");
  let kept: Buffer[] | undefined = [];
  let bytes = 0;
  for (;;) {
    // Read in place (one chunk is a few milliseconds of work at most): a
    // small file, most of them, is hashed without leaving this turn.
    if (bytes > 0) await nextTurn();
    shared ??= Buffer.allocUnsafe(CHUNK);
    const n = fs.readSync(fd, shared, 0, CHUNK, bytes);
    if (n === 0) break;
    const chunk = shared.subarray(0, n);
    bytes += n;
    hash.update(chunk);
    if (kept && bytes <= KEEP_IN_MEMORY) kept.push(Buffer.from(chunk));
    else kept = undefined;
    // A short read is the end of a regular file (one still growing is seen by its new size).
    if (n < CHUNK) break;
  }
  const sha256 = hash.digest("hex");
  let verdict: ContentVerdict | Refusal;
  try {
    if (bytes === 0) throw new Refusal("empty_file", "the file is empty");
    const content = kept ? Buffer.concat(kept, bytes) : undefined;
    verdict = await checkContent({ fd, bytes, ...(content ? { content } : {}), path: `/proc/self/fd/${fd}` }, ext, options);
  } catch (err) {
    if (!(err instanceof Refusal)) throw err;
    verdict = err;
  }
  return { bytes, sha256, verdict };
}
