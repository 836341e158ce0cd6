import { err, out } from "../cli/io.js";
import { BASE_OPTIONS, JSON_OPTION, LOG_OPTIONS, configFromFlags } from "../cli/config-flags.js";
import type { Options } from "../cli/args.js";
import { runCli } from "../cli/run.js";
import type { Config } from "../config/config.js";
import { FatalError, usageError } from "../core/errors.js";
import { escapeText, safeJson } from "../core/escape.js";
import { startSchedule } from "../janitor/schedule.js";
import { assertDedicated } from "../safety/dedicated.js";
import { janitorSummary } from "../janitor/summary.js";
import { type JanitorReport, NOT_MADE, janitorExitCode, runJanitor } from "../janitor/sweep.js";
import { type Logger, createLogger, loggerOptionsFrom } from "../log/logger.js";

export const USAGE = `usage: media-outbox janitor [options]
       media-outbox janitor --schedule "CRON" [--tz ZONE] [options]
options: --outbox DIR --retention 14d --max-bytes SIZE --min-age 1h --dry-run --json
         --config FILE --log-json --log-file FILE`;

const OPTIONS = {
  ...BASE_OPTIONS,
  ...JSON_OPTION,
  ...LOG_OPTIONS,
  retention: { type: "string" },
  "max-bytes": { type: "string" },
  "min-age": { type: "string" },
  "dry-run": { type: "boolean" },
  schedule: { type: "string" },
  tz: { type: "string" },
} satisfies Options;

export async function run(argv: string[]): Promise<number> {
  return runCli(argv, OPTIONS, USAGE, async ({ values, positionals }) => {
    const json = values.json === true;
    if (positionals.length > 0) throw usageError(`janitor takes no arguments (the outbox comes from --outbox or the config)\n${USAGE}`);
    if (values.tz !== undefined && values.schedule === undefined) throw usageError(`--tz goes with --schedule\n${USAGE}`);

    const config = configFromFlags(values, {
      janitor: { retention: values.retention, maxBytes: values["max-bytes"], minAge: values["min-age"] },
    });
    const dryRun = values["dry-run"] === true;
    if (values.schedule !== undefined) {
      return scheduled(config, { expression: values.schedule, timezone: values.tz, dryRun, json, logJson: values["log-json"] === true });
    }
    const logger = await createLogger(loggerOptionsFrom(config, { logJson: values["log-json"] === true }, "media-outbox-janitor"));
    const report = runJanitor({ resolvedConfig: config, dryRun, logger, chdir: true });
    printReport(report, json);
    return janitorExitCode(report);
  });
}

/** At most this many lines name what the janitor kept because media-outbox did not make it; --json lists them all. */
const NOT_MADE_LINES = 10;

function printReport(report: JanitorReport, json: boolean): void {
  for (const e of report.errors) err(`media-outbox: janitor: could not delete ${e.area}/${e.name}: ${e.code}: ${e.message}\n`);
  for (const w of report.warnings) err(`media-outbox: janitor: ${w.area}/${w.name}: ${w.message}\n`);
  // Deleted with no whole record naming it: said, so the ledger's torn line can be checked (the log has its place).
  for (const d of report.deleted.filter((e) => e.reason === "expired_torn_record")) {
    err(`media-outbox: janitor: ${report.dry_run ? "would delete" : "deleted"} outbox/${d.name} by its own mtime (${d.mtime}): no well-formed ledger record names it, and a record of its day that a crash cut short fits it and no other file\n`);
  }
  // A user's files in a directory that should be the outbox (or its state): said, not only counted.
  const notMade = report.skipped.filter((s) => NOT_MADE.has(s.code));
  for (const s of notMade.slice(0, NOT_MADE_LINES)) err(`media-outbox: janitor: kept ${s.area}/${s.name}: ${s.reason}\n`);
  if (notMade.length > NOT_MADE_LINES) err(`media-outbox: janitor: kept ${notMade.length - NOT_MADE_LINES} more that media-outbox did not make (listed with --json)\n`);
  err(`media-outbox: ${janitorSummary(report)}\n`);
  if (json) out(`${safeJson(report, 2)}\n`);
}

interface ScheduleFlags {
  expression: string;
  timezone: string | undefined;
  dryRun: boolean;
  json: boolean;
  logJson: boolean;
}

/**
 * Stays in the foreground and sweeps on the cron expression; every run's
 * summary is logged with pino (JSON lines on stderr unless a log file is
 * configured); --json adds each run's report as one JSON line on stdout.
 * SIGTERM or SIGINT stops it after the current run, exit 0.
 */
async function scheduled(config: Config, flags: ScheduleFlags): Promise<number> {
  // Refused at start, not at 3 a.m.: no later run can make a home an outbox, or its state.
  assertDedicated(config);
  const logger: Logger = await createLogger({ ...loggerOptionsFrom(config, { logJson: true }, "media-outbox-janitor"), json: flags.logJson || !config.logFile });
  const schedule = startSchedule({
    expression: flags.expression,
    ...(flags.timezone !== undefined ? { timezone: flags.timezone } : {}),
    logger,
    run: () => {
      try {
        // runJanitor logs the janitor_run line: one shape for a one-shot and a scheduled run.
        const report = runJanitor({ resolvedConfig: config, dryRun: flags.dryRun, logger, chdir: true });
        if (flags.json) out(`${safeJson(report)}\n`);
      } catch (e) {
        // An unsafe outbox at 3 a.m. is logged and retried at the next run, not fatal.
        if (!(e instanceof FatalError)) throw e;
        logger.error({ event: "janitor_refused", code: e.code, error: e.message }, `janitor refused: ${e.message}`);
      }
    },
  });
  const next = schedule.nextRun();
  const zone = flags.timezone ? ` (${escapeText(flags.timezone)})` : "";
  logger.info(
    { event: "janitor_scheduled", schedule: escapeText(flags.expression), timezone: flags.timezone ? escapeText(flags.timezone) : null, next_run: next?.toISOString() ?? null },
    `janitor scheduled "${escapeText(flags.expression)}"${zone}`,
  );
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      process.off("SIGTERM", onTerm);
      process.off("SIGINT", onInt);
      logger.info({ event: "janitor_stopping", signal }, `received ${signal}, stopping`);
      void schedule.stop().then(resolve, resolve);
    };
    const onTerm = () => stop("SIGTERM");
    const onInt = () => stop("SIGINT");
    process.on("SIGTERM", onTerm);
    process.on("SIGINT", onInt);
  });
  logger.info({ event: "janitor_stopped" }, "janitor schedule stopped");
  return 0;
}
