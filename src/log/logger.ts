// pino, loaded only when a log is wanted (it costs start-up time), always
// synchronous (a killed process loses nothing), never on stdout.
import fs from "node:fs";
import path from "node:path";
import type pinoType from "pino";
import type { Config } from "../config/config.js";
import { openOperatorFileForAppend } from "../safety/operator-file.js";

declare const __dirname: string;

/** Loads pino from its own bundle beside the command bundles, else from node_modules. */
function loadPino(): typeof pinoType {
  // An indirect require keeps the bundler from inlining pino into every command.
  const req = require;
  const bundled = path.join(__dirname, "..", "vendor", "pino.js");
  const mod = fs.existsSync(bundled) ? req(bundled) : req("pino");
  return (mod.default ?? mod) as typeof pinoType;
}

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

/** The log a command opened, and where it goes: where an unexpected error's details are written (cli/run.ts). */
let active: { logger: Logger; where: string } | undefined;
export function activeLog(): { logger: Logger; where: string } | undefined {
  return active;
}

/**
 * Builds the logger a command asked for. Callers pass only escaped strings
 * for anything a user supplied.
 */
export async function createLogger(options: LoggerOptions): Promise<Logger> {
  if (!options.json && !options.file) return silentLogger;
  const pino = loadPino();
  // A log file that is a FIFO, a device or a directory is refused at once (exit 2), never waited on.
  const dest = options.file
    ? pino.destination({ dest: openOperatorFileForAppend(options.file, { what: "log file" }), sync: true })
    : pino.destination({ dest: 2, sync: true });
  const logger = pino({ level: options.level ?? "info", base: { name: options.name ?? "media-outbox", pid: process.pid } }, dest) as unknown as Logger;
  active = { logger, where: options.file ? `the log file ${options.file}` : "the JSON log on stderr" };
  return logger;
}

export function loggerOptionsFrom(config: Config, flags: { logJson?: boolean }, name: string): LoggerOptions {
  return { json: flags.logJson === true, ...(config.logFile ? { file: config.logFile } : {}), level: config.logLevel, name };
}
