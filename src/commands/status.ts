import { err, out } from "../cli/io.js";
import { BASE_OPTIONS, JSON_OPTION, configFromFlags } from "../cli/config-flags.js";
import { runCli } from "../cli/run.js";
import { usageError } from "../core/errors.js";
import { safeJson } from "../core/escape.js";
import { gateStatus, gateStatusExitCode } from "../janitor/gate-status.js";
import { outboxStatus } from "../janitor/status.js";
import { formatGateStatus, formatStatus } from "../janitor/status-table.js";

export const USAGE = `usage: media-outbox status [--json] [--outbox DIR] [--config FILE]`;

/**
 * Exit 0 when the outbox is safe (or does not exist yet), 1 when it is
 * unsafe, 2 on usage errors and when it is not a directory of its own (which
 * every other command refuses with exit 2; the report still says why). When
 * prepare would use a gate (config.gate) the outbox is the gate's, and a gate
 * that does not answer is exit 1 too.
 */
export async function run(argv: string[]): Promise<number> {
  return runCli(argv, { ...BASE_OPTIONS, ...JSON_OPTION }, USAGE, async ({ values, positionals }) => {
    const json = values.json === true;
    if (positionals.length > 0) throw usageError(`status takes no arguments\n${USAGE}`);
    const config = configFromFlags(values);
    const now = new Date();
    const bold = process.stdout.isTTY === true && !process.env.NO_COLOR;
    if (config.gate) {
      const report = await gateStatus({ config: { ...config, gate: config.gate }, now });
      out(json ? `${safeJson(report, 2)}\n` : formatGateStatus(report, { bold, now }));
      if (report.outbox && !report.outbox.dedicated) err(`media-outbox: ${report.outbox.code}: ${report.outbox.problem}\n`);
      return gateStatusExitCode(report);
    }
    const report = outboxStatus({ resolvedConfig: config, now });
    if (json) out(`${safeJson(report, 2)}\n`);
    else out(formatStatus(report, { bold, now }));
    if (!report.outbox.dedicated) {
      err(`media-outbox: ${report.outbox.code}: ${report.outbox.problem}\n`);
      return 2;
    }
    return report.outbox.safe ? 0 : 1;
  });
}
