// The frame every command runs in: map errors to exit codes and messages.
import { FatalError } from "../core/errors.js";
import { escapeText, safeJson } from "../core/escape.js";
import { type Options, type ParsedCommandArgs, flagGiven, parseCommandArgs } from "./args.js";
import { activeLog } from "../log/logger.js";
import { err, lostOutputWhy, out, stdoutFailure } from "./io.js";

export type CommandRun = (argv: string[], command: string) => Promise<number>;

/**
 * An unexpected error (a bug, or a failure nothing anticipated): one escaped
 * line on stderr saying what to do, the details (the stack) in the log when
 * the command has one, or on stderr with MEDIA_OUTBOX_DEBUG=1. Never a raw
 * stack trace.
 */
export function reportInternalError(e: unknown): void {
  const message = escapeText(e instanceof Error ? `${e.name}: ${e.message}` : String(e));
  const stack = escapeText(e instanceof Error ? (e.stack ?? e.message) : String(e));
  const log = activeLog();
  log?.logger.error({ event: "internal_error", error: stack }, "internal error");
  const details = log ? `the details are in ${escapeText(log.where)}` : "run it again with MEDIA_OUTBOX_DEBUG=1 to see the details";
  err(`media-outbox: internal error: ${message}; nothing more was done. This is a bug: ${details}, and please report it\n`);
  if (process.env.MEDIA_OUTBOX_DEBUG === "1") err(`media-outbox: details: ${stack}\n`);
}

/**
 * Runs a command body. A FatalError becomes exit 2 with its message (and,
 * with --json, a JSON document saying so); anything unexpected is exit 1,
 * one line (reportInternalError). Output that could not reach stdout (its
 * reader went away) turns a success into exit 1, with a line saying so.
 */
export async function runCommand(body: () => Promise<number>, opts: { json?: () => boolean } = {}): Promise<number> {
  // A long-running command (watch, janitor --schedule) may fail outside the
  // body's promise chain: that too is one line, then exit 1 (a supervisor
  // restarts it), unless the command handles such failures itself (serve).
  const uncaught = (e: unknown) => {
    if (ownUncaughtHandler) return ownUncaughtHandler(e);
    reportInternalError(e);
    process.exit(1);
  };
  process.on("uncaughtException", uncaught);
  process.on("unhandledRejection", uncaught);
  try {
    const code = await body();
    const lost = stdoutFailure();
    if (lost !== undefined && code === 0) {
      err(`media-outbox: could not write to standard output (${lostOutputWhy(lost)}), so part of the output was lost\n`);
      return 1;
    }
    return code;
  } catch (e) {
    if (e instanceof FatalError) {
      err(`media-outbox: ${e.code === "usage" ? "usage error" : e.code}: ${e.message}\n`);
      if (opts.json?.()) out(`${safeJson({ success: false, error: { code: e.code, message: e.message } })}\n`);
      return e.exitCode;
    }
    reportInternalError(e);
    return 1;
  } finally {
    process.off("uncaughtException", uncaught);
    process.off("unhandledRejection", uncaught);
    ownUncaughtHandler = undefined;
  }
}

let ownUncaughtHandler: ((e: unknown) => void) | undefined;

/**
 * For the command now running: a failure outside its promise chain goes to
 * `handler` instead of ending the process (serve: no input may end the gate).
 */
export function handleUncaughtErrors(handler: (e: unknown) => void): void {
  ownUncaughtHandler = handler;
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
      let args: ParsedCommandArgs<O>;
      try {
        args = parseCommandArgs(argv, options, usage);
      } catch (e) {
        // A refused argument line still gets --json's error document when it asked for one.
        json = flagGiven(argv, options, "json");
        throw e;
      }
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
