import { escapeText } from "./escape.js";

/** Reason codes for a refused input: stable, documented, safe to match on. */
export type RefusalCode =
  | "unsafe_path_chars"
  | "media_directive_in_path"
  | "denied_source"
  | "not_found"
  | "not_regular_file"
  | "empty_file"
  | "extension_not_allowed"
  | "too_large"
  | "content_mismatch"
  | "secret_detected"
  | "trailing_data"
  | "decompression_bomb"
  | "unscannable_content"
  | "changed_during_copy"
  | "io_error"
  | "host_error";

/** One input could not be published; the others go on. */
export class Refusal extends Error {
  override readonly name = "Refusal";
  constructor(
    readonly code: RefusalCode,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Codes of errors that stop a whole command before it changes anything.
 * `gate_unavailable`: the configured gate cannot be reached (no socket,
 * nobody listening, permission denied, no answer in time, busy, gone
 * mid-request); `gate_error`: it answered with an error instead of a report;
 * `already_running`: another watch holds this outbox or drop folder.
 */
export type FatalCode = "usage" | "config_invalid" | "outbox_unsafe" | "state_unsafe" | "gate_unavailable" | "gate_error" | "already_running";

/** A usage, configuration or safety error: exit 2, nothing published or deleted. */
export class FatalError extends Error {
  override readonly name = "FatalError";
  readonly exitCode = 2;
  constructor(
    readonly code: FatalCode,
    message: string,
    /** What caused it, for callers that act on the cause (doctor's fix for a gate it cannot reach). */
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

export const usageError = (message: string) => new FatalError("usage", message);
export const configError = (message: string) => new FatalError("config_invalid", message);

export function isErrno(err: unknown, ...codes: string[]): err is NodeJS.ErrnoException {
  return err instanceof Error && typeof (err as NodeJS.ErrnoException).code === "string" && codes.includes((err as NodeJS.ErrnoException).code!);
}

export function errnoCode(err: unknown): string | undefined {
  return err instanceof Error ? (err as NodeJS.ErrnoException).code : undefined;
}

/**
 * errno codes that say the host failed, not the file: a full disk, an I/O
 * error, no descriptors left. The same file may well pass later.
 */
const HOST_ERRNOS = new Set(["ENOSPC", "EDQUOT", "EIO", "EMFILE", "ENFILE", "ENOMEM", "ENOBUFS", "EROFS", "EAGAIN", "EBUSY", "ESTALE", "EFBIG"]);

export function isHostErrno(code: string | undefined): boolean {
  return code !== undefined && HOST_ERRNOS.has(code);
}

/**
 * The refusal for a failure of the host rather than of the file (`host_error`):
 * nothing was published, and the same file may pass later. The message is
 * escaped here (an fs message carries the path).
 */
export function hostFailure(err: unknown): Refusal {
  const code = errnoCode(err);
  const text = escapeText(String((err as Error)?.message ?? err));
  return new Refusal("host_error", `the host could not take the file (${code ?? "error"}: ${text}); nothing was published; try again later`);
}
