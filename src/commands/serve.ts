import path from "node:path";
import type { Options } from "../cli/args.js";
import { BASE_OPTIONS, LOG_OPTIONS, POLICY_OPTIONS, configFromFlags } from "../cli/config-flags.js";
import { handleUncaughtErrors, runCli } from "../cli/run.js";
import { untilSignal } from "../cli/signals.js";
import { usageError } from "../core/errors.js";
import { escapeText } from "../core/escape.js";
import { parseDuration, parseSize } from "../core/units.js";
import { systemdSocket } from "../gate/listen.js";
import { DEFAULT_CLIENT_TIMEOUT_MS, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_HELD_BYTES, DEFAULT_REQUEST_TIMEOUT_MS, DEFAULT_SHUTDOWN_TIMEOUT_MS, GateServer } from "../gate/server.js";
import { type Logger, createLogger, loggerOptionsFrom } from "../log/logger.js";

export const USAGE = `usage: media-outbox serve [--socket PATH] [options]
options: --outbox DIR --config FILE --max-size SIZE --allow EXT,... --platform NAME
         --client-timeout DURATION --request-timeout DURATION --max-connections N
         --max-held-bytes SIZE --log-json --log-file FILE`;

const OPTIONS = {
  ...BASE_OPTIONS,
  ...LOG_OPTIONS,
  ...POLICY_OPTIONS,
  socket: { type: "string" },
  "client-timeout": { type: "string" },
  "request-timeout": { type: "string" },
  "max-connections": { type: "string" },
  "max-held-bytes": { type: "string" },
} satisfies Options;

/** sun_path holds 108 bytes, the terminating NUL included. */
const MAX_SOCKET_PATH_BYTES = 107;

function positiveDuration(value: string | undefined, fallback: number, what: string): number {
  if (value === undefined) return fallback;
  const ms = parseDuration(value, what);
  if (ms <= 0) throw usageError(`${what} must be longer than zero`);
  return ms;
}

function socketPath(value: string): string {
  const file = path.resolve(value);
  if (Buffer.byteLength(file) > MAX_SOCKET_PATH_BYTES) throw usageError(`the socket path ${escapeText(file)} is longer than ${MAX_SOCKET_PATH_BYTES} bytes, the limit of a Unix socket`);
  return file;
}

/**
 * Whatever escapes a request's own handling is logged and the gate goes on:
 * no input may end it (runCli would otherwise end the process with exit 1).
 */
function keepGoing(logger: Logger): void {
  handleUncaughtErrors((err: unknown) =>
    logger.error({ event: "internal_error", error: escapeText(err instanceof Error ? (err.stack ?? err.message) : String(err)) }, "internal error; the gate goes on"),
  );
}

export async function run(argv: string[]): Promise<number> {
  return runCli(argv, OPTIONS, USAGE, async ({ values, positionals }) => {
    if (positionals.length > 0) throw usageError(`serve takes no arguments\n${USAGE}`);
    // Signals that arrive during start-up stop the gate once it is up.
    const signalled = untilSignal();
    const clientTimeoutMs = positiveDuration(values["client-timeout"], DEFAULT_CLIENT_TIMEOUT_MS, "client-timeout");
    const requestTimeoutMs = positiveDuration(values["request-timeout"], DEFAULT_REQUEST_TIMEOUT_MS, "request-timeout");
    let maxConnections = DEFAULT_MAX_CONNECTIONS;
    if (values["max-connections"] !== undefined) {
      maxConnections = Number(values["max-connections"]);
      if (!Number.isSafeInteger(maxConnections) || maxConnections < 1) throw usageError("max-connections must be a whole number of at least 1");
    }
    const maxHeldBytes = values["max-held-bytes"] === undefined ? DEFAULT_MAX_HELD_BYTES : parseSize(values["max-held-bytes"], "max-held-bytes");
    if (maxHeldBytes < 1) throw usageError("max-held-bytes must be more than zero");
    const fd = systemdSocket();
    if (fd === undefined && values.socket === undefined) throw usageError(`serve needs --socket PATH, or a socket passed by systemd (LISTEN_FDS)\n${USAGE}`);
    const target = fd !== undefined ? { fd } : { path: socketPath(values.socket!) };

    // The gate judges with its own configuration only; a `socket` in it (a client's setting) means nothing here.
    const config = configFromFlags(values);
    // A service: it always logs (JSON lines on stderr, the journal under systemd, or to --log-file).
    const logger = await createLogger(loggerOptionsFrom(config, { logJson: true }, "media-outbox-serve"));
    keepGoing(logger);
    const gate = new GateServer({ config, logger, clientTimeoutMs, requestTimeoutMs, maxConnections, maxHeldBytes });
    await gate.listen(target);
    logger.info(
      { event: "ready", socket: "fd" in target ? "systemd" : escapeText(target.path), outbox: escapeText(gate.outbox), clientTimeoutMs, requestTimeoutMs, maxConnections, maxHeldBytes },
      "ready",
    );
    const signal = await signalled;
    logger.info({ event: "stopping", signal, connections: gate.connectionCount }, "stopping: finishing the requests already begun");
    await gate.close(DEFAULT_SHUTDOWN_TIMEOUT_MS);
    logger.info({ event: "stopped" }, "stopped");
    return 0;
  });
}
