// The watch's worker thread (worker-pool.ts): a drop-folder file is prepared
// here, and the guard judges a large outbox file here. Staging, hashing and
// the content checks of a large file take a while, and the main thread must
// stay free for the guard: a planted file is quarantined at once, however
// busy the drop folders are. One job at a time; every answer is plain data.
import { parentPort } from "node:worker_threads";
import { FatalError, Refusal } from "../core/errors.js";
import { judgeFileContent } from "../prepare/judge-content.js";
import { prepare } from "../prepare/prepare.js";
import type { WorkerAnswer, WorkerJob } from "./watch-workers.js";

parentPort!.on("message", (job: WorkerJob & { id: number }) => {
  void answer(job).then((a) => parentPort!.postMessage(a));
});

async function answer(job: WorkerJob & { id: number }): Promise<WorkerAnswer> {
  const { id } = job;
  try {
    if (job.kind === "prepare") return { id, report: await prepare(job.file, { resolvedConfig: job.config }) };
    const judged = await judgeFileContent(job.fd, job.ext, { hermesHome: job.hermesHome, userHome: job.userHome });
    const verdict = judged.verdict instanceof Refusal ? { refusal: { code: judged.verdict.code, message: judged.verdict.message } } : { mime: judged.verdict.mime };
    return { id, bytes: judged.bytes, sha256: judged.sha256, verdict };
  } catch (err) {
    if (err instanceof FatalError) return { id, fatal: { code: err.code, message: err.message } };
    return { id, error: String((err as Error)?.stack ?? err) };
  }
}
