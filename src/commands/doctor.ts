import { out } from "../cli/io.js";
import { BASE_OPTIONS, JSON_OPTION, configFromFlags } from "../cli/config-flags.js";
import type { Options } from "../cli/args.js";
import { runCli } from "../cli/run.js";
import { usageError } from "../core/errors.js";
import { safeJson } from "../core/escape.js";
import { type DoctorReport, doctor } from "../deploy/doctor.js";

export const USAGE = `usage: media-outbox doctor [--unit NAME]... [--json] [--system|--user] [--root DIR] [--outbox DIR] [--config FILE] [--no-probe]`;

/**
 * The table: one line per check, the fix indented under it. Every field was
 * escaped where the check was built (deploy/doctor.ts), so it is printed as
 * is: escaping again would double each backslash.
 */
export function formatReport(report: DoctorReport): string {
  const width = Math.max(5, ...report.checks.map((c) => c.check.length));
  const lines = [`${"STATUS".padEnd(6)}  ${"CHECK".padEnd(width)}  DETAIL`];
  for (const c of report.checks) {
    lines.push(`${c.status.padEnd(6)}  ${c.check.padEnd(width)}  ${c.message}`);
    if (c.fix) lines.push(`${"".padEnd(6)}  ${"".padEnd(width)}  fix: ${c.fix}`);
  }
  const fails = report.checks.filter((c) => c.status === "fail").length;
  const warns = report.checks.filter((c) => c.status === "warn").length;
  lines.push(`${fails} failed, ${warns} warnings, ${report.checks.length - fails - warns} passed`);
  return `${lines.join("\n")}\n`;
}

const OPTIONS = {
  ...BASE_OPTIONS,
  ...JSON_OPTION,
  unit: { type: "string", multiple: true },
  system: { type: "boolean" },
  user: { type: "boolean" },
  root: { type: "string" },
  "no-probe": { type: "boolean" },
} satisfies Options;

export async function run(argv: string[]): Promise<number> {
  return runCli(argv, OPTIONS, USAGE, async ({ values, positionals }) => {
    const json = values.json === true;
    if (positionals.length > 0) throw usageError(`doctor takes no arguments\n${USAGE}`);
    if (values.system && values.user) throw usageError(`--system and --user exclude each other\n${USAGE}`);
    const config = configFromFlags(values);
    const report = await doctor({
      config,
      scope: values.user ? "user" : "system",
      ...(values.root !== undefined ? { root: values.root } : {}),
      ...(values.unit !== undefined ? { units: values.unit } : {}),
      probe: values["no-probe"] !== true,
    });
    out(json ? `${safeJson(report, 2)}\n` : formatReport(report));
    return report.ok ? 0 : 1;
  });
}
