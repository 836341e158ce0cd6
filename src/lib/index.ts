// The library API: the same logic the CLI runs, with typed results.
export { prepare } from "../prepare/prepare.js";
export type { PrepareInput, PrepareOptions, PrepareReport, MediaResult, DroppedResult } from "../prepare/prepare.js";
export { loadConfig, DEFAULT_ALLOW, DEFAULT_MAX_SIZE, DEFAULT_RETENTION_MS } from "../config/config.js";
export type { Config, ConfigOverrides, PolicyInput } from "../config/config.js";
export { PLATFORM_LIMITS, PLATFORM_NAMES } from "../config/platforms.js";
export type { PlatformName, PlatformLimits, MediaCategory } from "../config/platforms.js";
export { openLayout } from "../state/layout.js";
export type { Layout } from "../state/layout.js";
export { Refusal, FatalError } from "../core/errors.js";
export type { RefusalCode, FatalCode } from "../core/errors.js";
export { escapeText } from "../core/escape.js";
export { outputName } from "../prepare/name.js";
export { GATEWAY_EXTENSIONS, extractMediaPaths, mediaLineProblem, parseAllowDirs, allowDirProblem } from "../safety/gateway.js";
