// Scheduling without systemd: a foreground process that runs the sweep on a
// cron expression (node-cron, loaded only here), never two runs at once.
import type * as NodeCron from "node-cron";
import { usageError } from "../core/errors.js";
import { escapeText, quoteText } from "../core/escape.js";
import type { Logger } from "../log/logger.js";

function loadCron(): typeof NodeCron {
  // An indirect require keeps node-cron out of the command bundle: only a
  // scheduled janitor pays for loading it.
  const req = require;
  return req("node-cron") as typeof NodeCron;
}

/** Throws a usage error unless `zone` is an IANA time zone this Node knows. */
export function checkTimeZone(zone: string): void {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
  } catch {
    throw usageError(`--tz: unknown time zone ${quoteText(zone)} (use an IANA name such as Europe/Berlin or UTC)`);
  }
}

/** Throws a usage error unless `expression` is a five- or six-field cron expression. */
export function checkCronExpression(expression: string): void {
  const cron = loadCron();
  const result = cron.validateDetailed(expression);
  if (!result.valid) {
    const why = result.errors.map((e) => e.message).join("; ") || "not a cron expression";
    throw usageError(
      `--schedule: invalid cron expression ${quoteText(expression)}: ${escapeText(why)} (five fields "m h dom mon dow", or six with leading seconds, e.g. "0 3 * * *")`,
    );
  }
}

export interface ScheduleOptions {
  expression: string;
  timezone?: string;
  logger: Logger;
  /** One run; exceptions are logged and the schedule goes on. */
  run: () => void | Promise<void>;
}

export interface Schedule {
  /** The next planned run, if any. */
  nextRun(): Date | null;
  /** Stops the schedule; resolves once no run is in progress. */
  stop(): Promise<void>;
}

/** Starts the schedule. Validates first: a bad expression or zone is a usage error. */
export function startSchedule(options: ScheduleOptions): Schedule {
  if (options.timezone !== undefined) checkTimeZone(options.timezone);
  checkCronExpression(options.expression);
  const cron = loadCron();
  let running: Promise<void> | undefined;
  const log = options.logger;
  // node-cron's own messages (missed runs…) go to our log, never to stdout.
  const cronLogger = {
    info: (m: string) => log.debug({ event: "cron" }, m),
    warn: (m: string) => log.warn({ event: "cron" }, m),
    error: (m: string | Error) => log.error({ event: "cron" }, m instanceof Error ? m.message : m),
    debug: (m: string | Error) => log.debug({ event: "cron" }, m instanceof Error ? m.message : m),
  };
  const task = cron.schedule(
    options.expression,
    async () => {
      running = (async () => {
        try {
          await options.run();
        } catch (err) {
          log.error({ event: "janitor_failed", error: escapeText(err instanceof Error ? err.message : String(err)) }, "janitor run failed");
        }
      })();
      await running;
      running = undefined;
    },
    { noOverlap: true, logger: cronLogger, name: "media-outbox-janitor", ...(options.timezone !== undefined ? { timezone: options.timezone } : {}) },
  );
  return {
    nextRun: () => task.getNextRun(),
    stop: async () => {
      await task.destroy();
      await running;
    },
  };
}
