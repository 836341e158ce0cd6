// Where the watch's long work runs: drop-folder files are prepared, and the
// guard judges large outbox files, on worker threads (watch-worker.ts), so
// that the main thread, where the guard reacts, never waits for a copy, a
// hash or the content checks. Drops and the guard have pools of their own: a
// flood of drops never delays the guard's judgements. Without the build (the
// library run from its sources) the work runs on this thread.
import fs from "node:fs";
import path from "node:path";
import type { Config } from "../config/config.js";
import { FatalError, type FatalCode, Refusal, type RefusalCode } from "../core/errors.js";
import { type FileJudgement, judgeFileContent } from "../prepare/judge-content.js";
import { type PrepareReport, prepare } from "../prepare/prepare.js";
import { WorkerPool } from "./worker-pool.js";

declare const __dirname: string;

export type WorkerJob = { kind: "prepare"; file: string; config: Config } | { kind: "judge"; fd: number; ext: string; hermesHome: string; userHome: string };

type Failure = { id: number; fatal: { code: FatalCode; message: string } } | { id: number; error: string };
export type WorkerAnswer =
  | { id: number; report: PrepareReport }
  | { id: number; bytes: number; sha256: string; verdict: { mime: string } | { refusal: { code: RefusalCode; message: string } } }
  | Failure;

/** Prepares one dropped file; a FatalError means the outbox cannot take files now (the file stays). */
export type PrepareDrop = (file: string, config: Config) => Promise<PrepareReport>;
/** Judges an open outbox file's bytes (judgeFileContent). */
export type JudgeFile = (fd: number, ext: string) => Promise<FileJudgement>;

/** The bundled worker, when this code runs from the build (not from the TypeScript sources). */
export function bundledWatchWorker(): string | undefined {
  if (typeof __dirname !== "string") return undefined;
  const file = path.join(__dirname, "..", "workers", "watch-worker.js");
  return fs.existsSync(file) ? file : undefined;
}

function failed(answer: WorkerAnswer): never {
  if ("fatal" in answer) throw new FatalError(answer.fatal.code, answer.fatal.message);
  if ("error" in answer) throw new Error(answer.error);
  throw new Error("the worker answered another kind of job");
}

export class WatchWorkers {
  private readonly drops: WorkerPool<WorkerJob, WorkerAnswer> | undefined;
  private readonly guard: WorkerPool<WorkerJob, WorkerAnswer> | undefined;
  private readonly hermesHome: string;
  private readonly userHome: string;

  /**
   * `dropWorker`: the worker file drops are prepared on (a test seam; default
   * the bundled one); `maxDrops`: how many drops at once.
   */
  constructor(options: { maxDrops: number; hermesHome: string; userHome: string; dropWorker?: string | undefined; workerFile?: string | undefined }) {
    const file = options.workerFile ?? bundledWatchWorker();
    const dropFile = options.dropWorker ?? file;
    this.drops = dropFile ? new WorkerPool(dropFile, options.maxDrops, "drop") : undefined;
    this.guard = file ? new WorkerPool(file, 1, "guard") : undefined;
    this.hermesHome = options.hermesHome;
    this.userHome = options.userHome;
  }

  readonly prepareDrop: PrepareDrop = async (file, config) => {
    if (!this.drops) return prepare(file, { resolvedConfig: config });
    const answer = await this.drops.run({ kind: "prepare", file, config });
    return "report" in answer ? answer.report : failed(answer);
  };

  readonly judgeFile: JudgeFile = async (fd, ext) => {
    if (!this.guard) return judgeFileContent(fd, ext, { hermesHome: this.hermesHome, userHome: this.userHome });
    const answer = await this.guard.run({ kind: "judge", fd, ext, hermesHome: this.hermesHome, userHome: this.userHome });
    if (!("sha256" in answer)) failed(answer);
    const v = answer.verdict;
    return { bytes: answer.bytes, sha256: answer.sha256, verdict: "refusal" in v ? new Refusal(v.refusal.code, v.refusal.message) : v };
  };

  async close(): Promise<void> {
    await Promise.all([this.drops?.close(), this.guard?.close()]);
  }
}
