import { type ParseArgsConfig, parseArgs } from "node:util";
import { usageError } from "../core/errors.js";
import { escapeText } from "../core/escape.js";

export type Options = NonNullable<ParseArgsConfig["options"]>;

/**
 * util.parseArgs in strict mode: options before `--`, unknown options are a
 * usage error (exit 2) whose message never echoes raw user text.
 */
export function parseCommandArgs<O extends Options>(argv: string[], options: O, usage: string) {
  try {
    return parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (e) {
    throw usageError(`${escapeText((e as Error).message)}\n${usage}`);
  }
}

export type ParsedCommandArgs<O extends Options> = ReturnType<typeof parseCommandArgs<O>>;
