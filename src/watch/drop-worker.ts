// A drop-folder file is prepared here, on a worker thread: staging, hashing
// and the content checks of a large file take a while, and the main thread
// must stay free for the guard (a planted file is quarantined at once, however
// busy the drop folders are). One job at a time; the answer is plain data.
import { parentPort } from "node:worker_threads";
import type { Config } from "../config/config.js";
import { FatalError } from "../core/errors.js";
import { prepare } from "../prepare/prepare.js";
import type { DropJob, DropAnswer } from "./drop-workers.js";

parentPort!.on("message", (job: DropJob) => {
  void answer(job).then((a) => parentPort!.postMessage(a));
});

async function answer(job: DropJob): Promise<DropAnswer> {
  try {
    return { id: job.id, report: await prepare(job.file, { resolvedConfig: job.config as Config }) };
  } catch (err) {
    if (err instanceof FatalError) return { id: job.id, fatal: { code: err.code, message: err.message } };
    return { id: job.id, error: String((err as Error)?.stack ?? err) };
  }
}
