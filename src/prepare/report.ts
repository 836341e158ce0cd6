// The result of a prepare call: one document whichever mode made it (local,
// or the gate and its client), so the agent cannot tell the modes apart.
import { Refusal, type RefusalCode, hostFailure } from "../core/errors.js";
import { escapeText } from "../core/escape.js";
import type { Logger } from "../log/logger.js";

export interface MediaResult {
  /** The source as given, escaped. */
  source: string;
  /** Real absolute path of the published copy. */
  path: string;
  /** The exact line the agent must repeat. */
  directive: string;
  name: string;
  bytes: number;
  sha256: string;
  mime: string;
  reused: boolean;
}

export interface DroppedResult {
  /** The source as given, escaped. */
  path: string;
  reason: string;
  code: RefusalCode;
}

export interface PrepareReport {
  success: boolean;
  partial_success: boolean;
  outbox: string;
  media: MediaResult[];
  media_dropped: DroppedResult[];
}

export function emptyReport(outbox: string): PrepareReport {
  return { success: false, partial_success: false, outbox, media: [], media_dropped: [] };
}

/**
 * The refusal an error stands for: a Refusal as it is; anything else (a full
 * disk, an I/O error, a bug) is the host's failure, not a verdict on the
 * file: `host_error`, nothing was published, the file may pass later.
 */
export function refusalOf(err: unknown): Refusal {
  return err instanceof Refusal ? err : hostFailure(err);
}

/** The media_dropped entry for `source` (as given) refused by `err`. */
export function droppedResult(source: string, err: unknown): DroppedResult {
  const refusal = refusalOf(err);
  return { path: escapeText(source), reason: refusal.message, code: refusal.code };
}

/** Adds a published file to the report, and says so in the log. */
export function addMedia(report: PrepareReport, media: MediaResult, logger: Logger, extra: object = {}): void {
  report.media.push(media);
  logger.info({ event: "published", source: media.source, name: media.name, bytes: media.bytes, sha256: media.sha256, reused: media.reused, ...extra }, "published");
}

/** Adds a refused input to the report, and says so in the log. */
export function addDropped(report: PrepareReport, dropped: DroppedResult, logger: Logger, extra: object = {}): void {
  report.media_dropped.push(dropped);
  logger.warn({ event: "refused", source: dropped.path, code: dropped.code, reason: dropped.reason, ...extra }, "refused");
}

/** Sets `success` and `partial_success` from what the report holds. */
export function settleReport(report: PrepareReport): PrepareReport {
  report.success = report.media_dropped.length === 0;
  report.partial_success = report.media.length > 0 && report.media_dropped.length > 0;
  return report;
}
