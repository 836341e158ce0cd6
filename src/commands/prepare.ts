import { err, out } from "../cli/io.js";
import { BASE_OPTIONS, JSON_OPTION, LOG_OPTIONS, POLICY_OPTIONS, configFromFlags } from "../cli/config-flags.js";
import type { Options } from "../cli/args.js";
import { runCli } from "../cli/run.js";
import { usageError } from "../core/errors.js";
import { safeJson } from "../core/escape.js";
import { createLogger, loggerOptionsFrom } from "../log/logger.js";
import { type PrepareInput, prepare } from "../prepare/prepare.js";

export const USAGE = `usage: media-outbox prepare [options] [--] FILE...
       media-outbox prepare [options] --stdin --name NAME
options: --json --outbox DIR --max-size SIZE --allow EXT,... --platform NAME
         --source-root DIR... --config FILE --log-json --log-file FILE`;

const OPTIONS = {
  ...BASE_OPTIONS,
  ...JSON_OPTION,
  ...LOG_OPTIONS,
  ...POLICY_OPTIONS,
  stdin: { type: "boolean" },
  name: { type: "string" },
  "source-root": { type: "string", multiple: true },
} satisfies Options;

export async function run(argv: string[]): Promise<number> {
  return runCli(argv, OPTIONS, USAGE, async ({ values, positionals }) => {
    const json = values.json === true;
    if (values.stdin && positionals.length > 0) throw usageError(`--stdin takes no FILE arguments\n${USAGE}`);
    if (values.stdin && values.name === undefined) throw usageError(`--stdin needs --name NAME (the name decides the extension)\n${USAGE}`);
    if (!values.stdin && values.name !== undefined) throw usageError(`--name goes with --stdin\n${USAGE}`);
    if (!values.stdin && positionals.length === 0) throw usageError(`no file given\n${USAGE}`);

    const config = configFromFlags(values);
    const logger = await createLogger(loggerOptionsFrom(config, { logJson: values["log-json"] === true }, "media-outbox-prepare"));
    const inputs: PrepareInput[] = values.stdin ? [{ stream: process.stdin, name: values.name! }] : positionals;
    const report = await prepare(inputs, { resolvedConfig: config, logger });

    for (const d of report.media_dropped) err(`media-outbox: refused ${d.path}: ${d.code}: ${d.reason}\n`);
    if (json) out(`${safeJson(report, 2)}\n`);
    else if (report.media.length > 0) out(report.media.map((m) => `${m.directive}\n`).join(""));
    return report.success ? 0 : 1;
  });
}
