import path from "node:path";
import type { Options } from "../cli/args.js";
import { loadPart } from "../cli/bundle-loader.js";
import { BASE_OPTIONS, JSON_OPTION, LOG_OPTIONS, POLICY_OPTIONS, configFromFlags } from "../cli/config-flags.js";
import { err, out, stdoutFailure } from "../cli/io.js";
import { runCli } from "../cli/run.js";
import { type Config, sizeCapFor } from "../config/config.js";
import { FatalError, usageError } from "../core/errors.js";
import { escapeText, safeJson } from "../core/escape.js";
import { type GateInput, prepareThroughGate } from "../gate/client.js";
import { createLogger, loggerOptionsFrom } from "../log/logger.js";
import type { PolicyRequest } from "../prepare/judge.js";
import type { LocalOutcome } from "../prepare/local-entry.js";
import type { PrepareInput, PrepareOptions } from "../prepare/prepare.js";
import type { PrepareReport } from "../prepare/report.js";
import type { WatchGuard } from "../prepare/judge.js";
import { sourcePolicyFor } from "../prepare/source.js";
import { watchGuardOf, watchHolder } from "../watch/lock.js";

declare const __dirname: string;

export const USAGE = `usage: media-outbox prepare [options] [--] FILE...
       media-outbox prepare [options] --name NAME [--] FILE
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

type LocalPart = { prepareLocal(inputs: PrepareInput[], options: PrepareOptions): Promise<LocalOutcome> };

/** Local mode's pipeline, from its own bundle beside this one. */
async function prepareLocally(inputs: PrepareInput[], options: PrepareOptions): Promise<PrepareReport> {
  const part = loadPart(path.join(__dirname, "..", "parts", "prepare-local.js")) as LocalPart;
  const outcome = await part.prepareLocal(inputs, options);
  if ("fatal" in outcome) throw new FatalError(outcome.fatal.code, outcome.fatal.message);
  return outcome.report;
}

/** In gate mode the policy flags narrow the gate's own policy; they cannot widen it. */
function policyRequest(values: { "max-size"?: string; allow?: string; platform?: string }, config: Config): PolicyRequest {
  return {
    ...(values["max-size"] !== undefined ? { maxSize: config.maxSize } : {}),
    ...(values.allow !== undefined ? { allow: config.allow } : {}),
    ...(values.platform !== undefined && config.platform ? { platform: config.platform } : {}),
  };
}

/**
 * Local mode, when the policy flags (`--allow`, `--max-size`, `--platform`)
 * widen the configuration's policy (an extension it lacks, a larger cap): the
 * watch guarding this outbox, if one runs. Its guard keeps what the
 * configuration's policy and its own flags publish (watch.ts guardPolicy) and
 * quarantines the rest, so a file published by a wider policy would be gone
 * once its MEDIA: line was printed. Only then is the watch's lock asked (one
 * connection); a prepare without those flags, or with flags that only narrow,
 * pays nothing.
 */
async function guardingWatch(values: Parameters<typeof configFromFlags>[0], config: Config): Promise<WatchGuard | undefined> {
  if (values.allow === undefined && values["max-size"] === undefined && values.platform === undefined) return undefined;
  const configured = configFromFlags({ ...values, allow: undefined, "max-size": undefined, platform: undefined });
  const widens = (ext: string) => !configured.allow.includes(ext) || sizeCapFor(config, ext) > sizeCapFor(configured, ext);
  if (!config.allow.some(widens)) return undefined;
  const holder = await watchHolder(config.stateDir);
  return holder && watchGuardOf(holder, configured.allow);
}

/**
 * Says on stderr which files were published when stdout could not take
 * their lines (its reader went away): they are in the outbox, but nobody got
 * the lines that deliver them. False when nothing was lost.
 */
function saidLinesLost(report: PrepareReport, printed: boolean): boolean {
  if (printed || report.media.length === 0) return false;
  const n = report.media.length;
  const paths = report.media.map((m) => escapeText(m.path)).join(" ");
  err(
    `media-outbox: published ${n} file(s), but their MEDIA: line${n === 1 ? " was" : "s were"} lost: standard output could not be written (${stdoutFailure() ?? "EPIPE"}). Published: ${paths}; run prepare again to print the line${n === 1 ? "" : "s"} (the same bytes reuse the same name)\n`,
  );
  return true;
}

/** Prints the report; the exit code it stands for. */
function printReport(report: PrepareReport, json: boolean): number {
  for (const d of report.media_dropped) err(`media-outbox: refused ${d.path}: ${d.code}: ${d.reason}\n`);
  const printed = json ? out(`${safeJson(report, 2)}\n`) : report.media.length === 0 || out(report.media.map((m) => `${m.directive}\n`).join(""));
  if (saidLinesLost(report, printed)) return 1;
  return report.success ? 0 : 1;
}

/**
 * The gate failed part-way: what it published is still printed (the agent
 * must not lose a line it can use), then the error, as every exit 2 prints it.
 */
function printFailure(report: PrepareReport, failure: FatalError, json: boolean): number {
  for (const d of report.media_dropped) err(`media-outbox: refused ${d.path}: ${d.code}: ${d.reason}\n`);
  err(`media-outbox: ${failure.code}: ${failure.message}\n`);
  const published = report.media.length > 0 ? { media: report.media } : {};
  // One line, as every exit 2 prints its document (runCommand): the agent cannot tell the modes apart.
  const printed = json
    ? out(`${safeJson({ success: false, error: { code: failure.code, message: failure.message }, ...published })}\n`)
    : report.media.length === 0 || out(report.media.map((m) => `${m.directive}\n`).join(""));
  saidLinesLost(report, printed);
  return failure.exitCode;
}

export async function run(argv: string[]): Promise<number> {
  return runCli(argv, OPTIONS, USAGE, async ({ values, positionals }) => {
    const json = values.json === true;
    if (values.stdin && positionals.length > 0) throw usageError(`--stdin takes no FILE arguments\n${USAGE}`);
    if (values.stdin && values.name === undefined) throw usageError(`--stdin needs --name NAME (the name decides the extension)\n${USAGE}`);
    if (!values.stdin && positionals.length === 0) throw usageError(`no file given\n${USAGE}`);
    if (!values.stdin && values.name !== undefined && positionals.length !== 1) throw usageError(`--name names one file: give exactly one FILE (or --stdin)\n${USAGE}`);

    const config = configFromFlags(values);
    const logger = await createLogger(loggerOptionsFrom(config, { logJson: values["log-json"] === true }, "media-outbox-prepare"));
    const inputs: GateInput[] = values.stdin
      ? [{ stream: process.stdin, name: values.name!, fd: 0 }]
      : values.name !== undefined
        ? [{ path: positionals[0]!, name: values.name }]
        : positionals;

    let report: PrepareReport;
    if (config.gate) {
      const result = await prepareThroughGate(inputs, {
        gate: config.gate,
        sourcePolicy: sourcePolicyFor(config),
        policy: policyRequest(values, config),
        logger,
        hermesHome: config.hermesHome,
        ...(config.gate.timeoutMs !== undefined ? { timeoutMs: config.gate.timeoutMs } : {}),
      });
      if (result.failure) return printFailure(result.report, result.failure, json);
      report = result.report;
    } else {
      const watchGuard = await guardingWatch(values, config);
      report = await prepareLocally(inputs, { resolvedConfig: config, logger, ...(watchGuard ? { watchGuard } : {}) });
    }
    return printReport(report, json);
  });
}
