// pino, loaded only when a log is wanted (it costs start-up time), always
// synchronous (a killed process loses nothing), never on stdout.
import type { Config } from "../config/config.js";

export interface Logger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  debug(obj: object, msg?: string): void;
  flush?(): void;
}

const noop = () => {};
export const silentLogger: Logger = { info: noop, warn: noop, error: noop, debug: noop };

export interface LoggerOptions {
  /** JSON lines on stderr. */
  json?: boolean;
  /** Append JSON lines to this file. */
  file?: string;
  level?: string;
  name?: string;
}

/**
 * Builds the logger a command asked for. Callers pass only escaped strings
 * for anything a user supplied.
 */
export async function createLogger(options: LoggerOptions): Promise<Logger> {
  if (!options.json && !options.file) return silentLogger;
  const { default: pino } = await import("pino");
  const dest = options.file
    ? pino.destination({ dest: options.file, sync: true, mkdir: true, append: true })
    : pino.destination({ dest: 2, sync: true });
  const logger = pino({ level: options.level ?? "info", base: { name: options.name ?? "media-outbox", pid: process.pid } }, dest);
  return logger as unknown as Logger;
}

export function loggerOptionsFrom(config: Config, flags: { logJson?: boolean }, name: string): LoggerOptions {
  return { json: flags.logJson === true, ...(config.logFile ? { file: config.logFile } : {}), level: config.logLevel, name };
}
