// The flags that set policy, shared by every command: one mapping from flag
// names to loadConfig's overrides, so each means the same everywhere.
import { type Config, type ConfigOverrides, loadConfig } from "../config/config.js";

export interface PolicyFlags {
  config?: string | undefined;
  outbox?: string | undefined;
  "max-size"?: string | undefined;
  allow?: string | undefined;
  platform?: string | undefined;
  "source-root"?: string[] | undefined;
  "log-file"?: string | undefined;
}

/** Resolves the configuration from a command's parsed flags (flags > environment > file > defaults). */
export function configFromFlags(values: PolicyFlags, extra: Omit<ConfigOverrides, keyof PolicyFlags | "maxSize" | "sourceRoots" | "logFile"> = {}): Config {
  return loadConfig({
    ...extra,
    config: values.config,
    outbox: values.outbox,
    maxSize: values["max-size"],
    allow: values.allow,
    platform: values.platform,
    sourceRoots: values["source-root"],
    logFile: values["log-file"],
  });
}

// The declarations of those flags, for the commands that take them.
/** --outbox, --config and --help: every command takes them. */
export const BASE_OPTIONS = {
  outbox: { type: "string" },
  config: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;
export const JSON_OPTION = { json: { type: "boolean" } } as const;
export const LOG_OPTIONS = { "log-json": { type: "boolean" }, "log-file": { type: "string" } } as const;
/** The size and type policy prepare applies (watch applies it to drops). */
export const POLICY_OPTIONS = { "max-size": { type: "string" }, allow: { type: "string" }, platform: { type: "string" } } as const;
