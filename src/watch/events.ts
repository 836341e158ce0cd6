// What the watcher reports: one JSON line per event on stdout with --json,
// and the same fields in a log line. Every name and path here is escaped.
import { FatalError, Refusal, type RefusalCode } from "../core/errors.js";
import { escapeText } from "../core/escape.js";
import type { QuarantineReason } from "./quarantine.js";

/** Why a drop-folder file was left in place, unprocessed. */
export type SkipCode = "receipt_exists" | "name_too_long" | "vanished" | "directory";

export type WatchEvent =
  | { event: "ready" }
  | { event: "quarantined"; name: string; quarantine_name: string; reason: QuarantineReason; code?: RefusalCode }
  | { event: "published"; drop: string; name: string; receipt: string; directive: string; published: string; reused: boolean }
  | { event: "refused"; drop: string; name: string; receipt: string; code: RefusalCode; reason: string }
  | { event: "skipped"; drop: string; name: string; code: SkipCode; reason: string }
  | { event: "stopped" };

export type EventSink = (event: WatchEvent) => void;

/**
 * An error's message for a log line, escaped exactly once: a FatalError's or a
 * Refusal's is escaped where it is built, anything else's (fs, chokidar) here.
 */
export function errorText(err: unknown): string {
  if (err instanceof FatalError || err instanceof Refusal) return err.message;
  return escapeText(String((err as Error)?.message ?? err));
}
