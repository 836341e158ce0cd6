// The frame every command runs in: map errors to exit codes and messages.
import { FatalError } from "../core/errors.js";
import { escapeText, safeJson } from "../core/escape.js";
import { err, out } from "./io.js";

export type CommandRun = (argv: string[], command: string) => Promise<number>;

/**
 * Runs a command body. A FatalError becomes exit 2 with its message (and,
 * with --json, a JSON document saying so); anything unexpected is exit 1.
 */
export async function runCommand(body: () => Promise<number>, opts: { json?: () => boolean } = {}): Promise<number> {
  try {
    return await body();
  } catch (e) {
    if (e instanceof FatalError) {
      err(`media-outbox: ${e.code === "usage" ? "usage error" : e.code}: ${e.message}\n`);
      if (opts.json?.()) out(`${safeJson({ success: false, error: { code: e.code, message: e.message } })}\n`);
      return e.exitCode;
    }
    err(`media-outbox: internal error: ${escapeText(e instanceof Error ? (e.stack ?? e.message) : String(e))}\n`);
    return 1;
  }
}
