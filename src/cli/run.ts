// The frame every command runs in: map errors to exit codes and messages.
import { FatalError } from "../core/errors.js";
import { escapeText, safeJson } from "../core/escape.js";
import { type Options, type ParsedCommandArgs, parseCommandArgs } from "./args.js";
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

/**
 * The frame of a command shell: parses `argv` strictly against `options`,
 * answers --help with the usage, and runs `body` inside runCommand (which
 * also prints --json's error document on exit 2).
 */
export function runCli<O extends Options>(argv: string[], options: O, usage: string, body: (args: ParsedCommandArgs<O>) => Promise<number>): Promise<number> {
  let json = false;
  return runCommand(
    async () => {
      const args = parseCommandArgs(argv, options, usage);
      const flags = args.values as { json?: unknown; help?: unknown };
      json = flags.json === true;
      if (flags.help === true) {
        out(`${usage}\n`);
        return 0;
      }
      return body(args);
    },
    { json: () => json },
  );
}
