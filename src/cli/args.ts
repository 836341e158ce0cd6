import { type ParseArgsConfig, parseArgs } from "node:util";
import { usageError } from "../core/errors.js";
import { escapeText, quoteText } from "../core/escape.js";

export type Options = NonNullable<ParseArgsConfig["options"]>;

/**
 * util.parseArgs in strict mode: options before `--`, unknown options are a
 * usage error (exit 2) whose message never echoes raw user text.
 */
export function parseCommandArgs<O extends Options>(argv: string[], options: O, usage: string) {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options, allowPositionals: true, strict: true, tokens: true });
  } catch (e) {
    throw usageError(`${whatIsWrong(argv, options) ?? escapeText((e as Error).message)}\n${usage}`);
  }
  const twice = givenTwice(parsed.tokens, options);
  if (twice) throw usageError(`${twice} is given twice; it takes one value (give it once)\n${usage}`);
  return { values: parsed.values, positionals: parsed.positionals };
}

/**
 * The first option of one value given more than once (`--name a --name b`):
 * parseArgs keeps the last, and which one the user meant is not ours to guess.
 */
function givenTwice(tokens: ReturnType<typeof lenientTokens>, options: Options): string | undefined {
  const seen = new Set<string>();
  for (const token of tokens) {
    if (token.kind !== "option" || options[token.name]?.type !== "string" || options[token.name]?.multiple) continue;
    if (seen.has(token.name)) return `--${token.name}`;
    seen.add(token.name);
  }
  return undefined;
}

/**
 * What strict parsing refused, in the project's words. Node's own messages
 * quote the option unevenly ("as in '-- \"--x\"") and JSON-escape it, which
 * escapeText would escape again. The tokens of a lenient parse of the same
 * arguments say which option and why; undefined when they do not (Node's
 * message, escaped, is used then).
 */
function whatIsWrong(argv: string[], options: Options): string | undefined {
  for (const token of lenientTokens(argv, options)) {
    if (token.kind !== "option") continue;
    const spec = Object.hasOwn(options, token.name) ? options[token.name] : undefined;
    if (!spec) return `unknown option ${quoteText(token.rawName)}`;
    // A declared option: its name is ours, not the user's.
    const name = token.rawName;
    if (spec.type === "boolean" && token.value !== undefined) return `${name} takes no value`;
    if (spec.type === "string" && token.value === undefined) return `${name} needs a value`;
    if (spec.type === "string" && !token.inlineValue && token.value!.startsWith("-")) {
      return `${name} needs a value, and the next argument ${quoteText(token.value!)} looks like an option; for a value that starts with "-", write ${name.startsWith("--") ? `${name}=VALUE` : `${name}VALUE`}`;
    }
  }
  return undefined;
}

export type ParsedCommandArgs<O extends Options> = ReturnType<typeof parseCommandArgs<O>>;

/**
 * Whether boolean option `name` is among `argv` (before `--`), read leniently:
 * for arguments strict parsing refused, so that the refusal still honours
 * --json. False when even a lenient parse fails.
 */
export function flagGiven(argv: string[], options: Options, name: string): boolean {
  if (options[name]?.type !== "boolean") return false;
  return lenientTokens(argv, options).some((t) => t.kind === "option" && t.name === name && t.value === undefined);
}

/** The tokens of a lenient parse of arguments strict parsing refused; none when even that fails. */
function lenientTokens(argv: string[], options: Options) {
  try {
    return parseArgs({ args: argv, options, allowPositionals: true, strict: false, tokens: true }).tokens;
  } catch {
    return [];
  }
}
