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
  | "io_error";

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
 * mid-request); `gate_error`: it answered with an error instead of a report.
 */
export type FatalCode = "usage" | "config_invalid" | "outbox_unsafe" | "state_unsafe" | "gate_unavailable" | "gate_error";

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
