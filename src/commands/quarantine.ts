import { err, out } from "../cli/io.js";
import { BASE_OPTIONS, JSON_OPTION, LOG_OPTIONS, configFromFlags } from "../cli/config-flags.js";
import type { Options } from "../cli/args.js";
import { runCli } from "../cli/run.js";
import { usageError } from "../core/errors.js";
import { escapeText, safeJson } from "../core/escape.js";
import { createLogger, loggerOptionsFrom } from "../log/logger.js";
import { listQuarantine, restoreFromQuarantine } from "../watch/quarantine.js";

export const USAGE = `usage: media-outbox quarantine list [--json] [options]
       media-outbox quarantine restore NAME [--json] [options]
options: --outbox DIR --quarantine DIR --config FILE --log-json --log-file FILE`;

const OPTIONS = {
  ...BASE_OPTIONS,
  ...JSON_OPTION,
  ...LOG_OPTIONS,
  quarantine: { type: "string" },
} satisfies Options;

export async function run(argv: string[]): Promise<number> {
  return runCli(argv, OPTIONS, USAGE, async ({ values, positionals }) => {
    const json = values.json === true;
    const [action, ...rest] = positionals;
    if (action !== "list" && action !== "restore") throw usageError(`say list or restore\n${USAGE}`);
    if (action === "list" && rest.length > 0) throw usageError(`list takes no arguments\n${USAGE}`);
    if (action === "restore" && rest.length !== 1) throw usageError(`restore takes exactly one NAME (see quarantine list)\n${USAGE}`);
    const config = configFromFlags(values, {
      ...(values.quarantine !== undefined ? { watch: { quarantine: values.quarantine } } : {}),
    });

    if (action === "list") {
      const list = listQuarantine(config);
      if (json) out(`${safeJson(list, 2)}\n`);
      else if (list.entries.length === 0) err(`media-outbox: the quarantine ${list.quarantine} is empty\n`);
      else out(list.entries.map((e) => `${e.name}\t${e.kind}\t${e.bytes}\t${e.reason ?? "-"}\t${e.quarantined_at ?? e.modified}\n`).join(""));
      return 0;
    }

    const logger = await createLogger(loggerOptionsFrom(config, { logJson: values["log-json"] === true }, "media-outbox-quarantine"));
    const report = await restoreFromQuarantine(rest[0]!, { resolvedConfig: config, logger });
    for (const d of report.media_dropped) err(`media-outbox: not restored ${escapeText(rest[0]!)}: ${d.code}: ${d.reason}\n`);
    if (json) out(`${safeJson(report, 2)}\n`);
    else out(report.media.map((m) => `${m.directive}\n`).join(""));
    return report.success ? 0 : 1;
  });
}
