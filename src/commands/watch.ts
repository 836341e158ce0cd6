import { out } from "../cli/io.js";
import { BASE_OPTIONS, JSON_OPTION, POLICY_OPTIONS, configFromFlags } from "../cli/config-flags.js";
import type { Options } from "../cli/args.js";
import { runCli } from "../cli/run.js";
import { untilSignal } from "../cli/signals.js";
import { usageError } from "../core/errors.js";
import { safeJson } from "../core/escape.js";
import { createLogger, loggerOptionsFrom } from "../log/logger.js";
import type { WatchConfigs } from "../watch/config-follow.js";
import type { WatchEvent } from "../watch/events.js";
import { Watch } from "../watch/watch.js";

export const USAGE = `usage: media-outbox watch [options]
options: --outbox DIR --drop DIR... --quarantine DIR --settle DURATION --keep --json
         --max-size SIZE --allow EXT,... --platform NAME --config FILE --log-file FILE`;

const OPTIONS = {
  ...BASE_OPTIONS,
  ...JSON_OPTION,
  ...POLICY_OPTIONS,
  drop: { type: "string", multiple: true },
  quarantine: { type: "string" },
  settle: { type: "string" },
  keep: { type: "boolean" },
  "log-file": { type: "string" },
} satisfies Options;

export async function run(argv: string[]): Promise<number> {
  return runCli(argv, OPTIONS, USAGE, async ({ values, positionals }) => {
    const json = values.json === true;
    if (positionals.length > 0) throw usageError(`watch takes no arguments (give drop folders with --drop DIR)\n${USAGE}`);
    // Signals that arrive during start-up stop the watcher once it is up.
    const signalled = untilSignal();
    const watchFlags = {
      watch: {
        ...(values.drop !== undefined ? { drop: values.drop } : {}),
        ...(values.quarantine !== undefined ? { quarantine: values.quarantine } : {}),
        ...(values.settle !== undefined ? { settle: values.settle } : {}),
        ...(values.keep ? { keep: true } : {}),
      },
    };
    // The flags win over the file at every reading: the watch reads it again when it changes (config-follow.ts).
    const reload = (): WatchConfigs => {
      const config = configFromFlags(values, watchFlags);
      // What a plain prepare publishes by: the guard keeps it whatever this watch's policy flags say (watch.ts guardPolicy).
      const policyFlags = values.allow !== undefined || values["max-size"] !== undefined || values.platform !== undefined;
      const configured = policyFlags ? configFromFlags({ ...values, allow: undefined, "max-size": undefined, platform: undefined }, watchFlags) : config;
      return { config, configured };
    };
    const { config, configured } = reload();
    // A service: it always logs (JSON lines on stderr, or to --log-file).
    const logger = await createLogger(loggerOptionsFrom(config, { logJson: true }, "media-outbox-watch"));
    const onEvent = json ? (event: WatchEvent) => out(`${safeJson(event)}\n`) : undefined;
    const watch = new Watch({ config, configured, reload, logger, ...(onEvent ? { onEvent } : {}) });
    await watch.start();
    const signal = await signalled;
    logger.info({ event: "stopping", signal }, "stopping: finishing files already begun");
    await watch.stop();
    return 0;
  });
}
