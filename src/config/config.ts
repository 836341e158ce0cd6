// The one place that decides the outbox, its state and the policy, for every
// command: flags > environment > config file > defaults.
import path from "node:path";
import { FatalError, configError, isErrno, usageError } from "../core/errors.js";
import { escapeText, quoteText } from "../core/escape.js";
import { formatDuration, parseDuration, parseSize } from "../core/units.js";
import { GATEWAY_EXTENSIONS } from "../safety/gateway.js";
import { readOperatorFile } from "../safety/operator-file.js";
import { folderPathProblem } from "../safety/path-text.js";
import type { DirOwner } from "../safety/private-dir.js";
import { type MediaCategory, PLATFORM_LIMITS, PLATFORM_NAMES, type PlatformLimits, type PlatformName, categoryOf, isPlatformName } from "./platforms.js";

export const DEFAULT_ALLOW = "png jpg jpeg gif webp pdf mp4 mov webm mp3 m4a ogg opus wav flac docx xlsx pptx txt csv md".split(" ");
export const DEFAULT_MAX_SIZE = 50 * 1000 * 1000;
export const DEFAULT_RETENTION_MS = 14 * 86_400_000;
export const DEFAULT_MIN_AGE_MS = 3_600_000;
export const STAGING_MAX_AGE_MS = 3_600_000;
export const DEFAULT_SETTLE_MS = 1000;
/** Written by `install systemd --system --gate`; holds only `{"socket": PATH}`. */
export const SYSTEM_CONFIG = "/etc/media-outbox/config.json";
/** The config file read when none is named: in the Hermes home. */
const DEFAULT_CONFIG_NAME = "media-outbox.json";
/** A drop that must stay unchanged longer than an hour is never taken: a longer settle is a typo. */
export const MAX_SETTLE_MS = 3_600_000;

/** Policy as written in the config file, or passed by a caller or a flag. */
export interface PolicyInput {
  outbox?: string;
  stateDir?: string;
  maxSize?: string | number;
  allow?: string | string[];
  platform?: string;
  platforms?: Record<string, string | number | Partial<Record<MediaCategory, string | number>>>;
  sourceRoots?: string[];
  logFile?: string;
  logLevel?: string;
  /** The gate's socket: prepare hands its files to the gate listening there. */
  socket?: string;
  janitor?: { retention?: string | number; maxBytes?: string | number; minAge?: string | number };
  watch?: { drop?: string[]; quarantine?: string; settle?: string | number; keep?: boolean };
}

export interface ConfigOverrides extends PolicyInput {
  /** Config file to read; when absent, `$HERMES_HOME/media-outbox.json` if it exists. */
  config?: string;
  env?: NodeJS.ProcessEnv;
  /** Base for relative paths given as flags. */
  cwd?: string;
}

/** The gate prepare talks to, and which setting named it (for messages). */
export interface GateSocket {
  path: string;
  from: string;
  /** How long the client waits for the gate at any one step (MEDIA_OUTBOX_GATE_TIMEOUT); the client's default when unset. */
  timeoutMs?: number;
}

export interface Config {
  home: string;
  hermesHome: string;
  /** The config file that was read, if any. */
  configFile?: string;
  /** Absolute outbox path as configured (not yet verified or resolved). */
  outbox: string;
  /** Directory beside the outbox holding staging/, ledger/ and quarantine/. */
  stateDir: string;
  stagingDir: string;
  ledgerDir: string;
  quarantineDir: string;
  maxSize: number;
  allow: string[];
  platform?: PlatformName;
  platformLimits: Record<PlatformName, PlatformLimits>;
  sourceRoots: string[];
  logFile?: string;
  logLevel: string;
  /**
   * Set when prepare is to use a gate (see gateSocket): then the outbox and
   * its state above are not used by prepare.
   */
  gate?: GateSocket;
  /**
   * Whose the outbox and its state must be: the current user's when unset.
   * Never read from a file or a flag: status sets it to the gate's user when
   * it looks at the gate's outbox as root (or as an agent).
   */
  owner?: DirOwner;
  janitor: { retentionMs: number; maxBytes?: number; minAgeMs: number; stagingMaxAgeMs: number };
  watch: { drop: string[]; settleMs: number; keep: boolean };
}

const TOP_KEYS = new Set(["outbox", "stateDir", "maxSize", "allow", "platform", "platforms", "sourceRoots", "logFile", "logLevel", "socket", "janitor", "watch"]);
const SYSTEM_KEYS = new Set(["socket"]);
const JANITOR_KEYS = new Set(["retention", "maxBytes", "minAge"]);
const WATCH_KEYS = new Set(["drop", "quarantine", "settle", "keep"]);
const LOG_LEVELS = new Set(["fatal", "error", "warn", "info", "debug", "trace", "silent"]);

function expandHome(p: string, home: string): string {
  return p === "~" || p.startsWith("~/") ? path.join(home, p.slice(1)) : p;
}

/** Turns a user-given path into an absolute one; relative is only allowed where a cwd applies. */
function absPath(p: string, home: string, base: string | undefined, what: string): string {
  if (typeof p !== "string" || p === "") throw configError(`${what} must be a non-empty path`);
  const expanded = expandHome(p, home);
  if (path.isAbsolute(expanded)) return path.resolve(expanded);
  if (base === undefined) throw configError(`${what} must be an absolute path (or start with ~/), got ${quoteText(p)}`);
  return path.resolve(base, expanded);
}

/** Reads `--allow`-style lists: "png,jpg", ["png", "jpg"], with or without dots. */
export function parseAllowList(value: string | string[], what = "allow"): string[] {
  const items = (Array.isArray(value) ? value : value.split(","))
    .map((e) => {
      if (typeof e !== "string") throw usageError(`${what} must list extensions as strings`);
      return e.trim().replace(/^\./, "").toLowerCase();
    })
    .filter((e) => e !== "");
  if (items.length === 0) throw usageError(`${what} must name at least one extension`);
  const unknown = items.filter((e) => !GATEWAY_EXTENSIONS.has(e));
  if (unknown.length > 0) {
    throw usageError(
      `${what}: the gateway does not deliver ${unknown.map((e) => quoteText(e)).join(", ")}; allowed extensions are: ${[...GATEWAY_EXTENSIONS].join(" ")}`,
    );
  }
  return [...new Set(items)];
}

function checkKeys(obj: unknown, allowed: Set<string>, where: string): Record<string, unknown> {
  if (obj === null || typeof obj !== "object" || Array.isArray(obj)) throw configError(`${where} must be a JSON object`);
  for (const key of Object.keys(obj)) {
    if (!allowed.has(key)) throw configError(`${where}: unknown key ${quoteText(key)} (known: ${[...allowed].join(", ")})`);
  }
  return obj as Record<string, unknown>;
}

function readConfigFile(file: string, required: boolean, keys = TOP_KEYS): PolicyInput | undefined {
  let text: string;
  try {
    // A FIFO, a device or a directory is refused at once, never waited on.
    text = readOperatorFile(file, { what: "config file" }).text;
  } catch (err) {
    if (err instanceof FatalError) throw err;
    if (!required && isErrno(err, "ENOENT")) return undefined;
    throw configError(`cannot read config file ${escapeText(file)}: ${escapeText((err as Error).message)}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw configError(`config file ${escapeText(file)} is not valid JSON: ${escapeText((err as Error).message)}`);
  }
  const where = `config file ${escapeText(file)}`;
  const top = checkKeys(parsed, keys, where);
  if (top.janitor !== undefined) checkKeys(top.janitor, JANITOR_KEYS, `${where}: janitor`);
  if (top.watch !== undefined) checkKeys(top.watch, WATCH_KEYS, `${where}: watch`);
  return top as PolicyInput;
}

/**
 * Wraps the reading of a value from the config file so that its error, a
 * usage or a config one, names the file: the operator sees which file to edit.
 */
function inFile<T>(file: string | undefined, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw namingFile(file, err);
  }
}

/** A usage or config error about a value read from `file`, made to name it; any other error as it is. */
function namingFile(file: string | undefined, err: unknown): unknown {
  if (file && err instanceof FatalError && (err.code === "usage" || err.code === "config_invalid")) {
    return configError(`config file ${escapeText(file)}: ${err.message}`);
  }
  return err;
}

/** Why an operator's folder (`what`: "drop folder", "state directory"...) is refused as given (folderPathProblem), or undefined: the one message, for loadConfig and a library caller's config (watch.ts). */
function folderRefusal(what: string, dir: string): string | undefined {
  const problem = folderPathProblem(dir);
  return problem === undefined ? undefined : `${what} ${quoteText(dir)} (shown escaped) has ${problem} in its path: rename the folder (mv), then give its new path`;
}

/** Why a drop folder's path as given is refused (folderRefusal), or undefined. */
export function dropFolderRefusal(dir: string): string | undefined {
  return folderRefusal("drop folder", dir);
}

/**
 * An operator's folder (a drop folder, the state directory, the quarantine,
 * a source root), refused when its path holds characters no message could
 * show as they are (path-text.ts folderPathProblem): every log line, error
 * and report about it would name it escaped, never as the operator typed it,
 * and no folder needs them. `setting` names where the value came from (the
 * config file's key, a flag, an environment variable): a value from the file
 * names the file too, as every bad setting does.
 */
function operatorFolder(dir: string, what: string, setting: string, fromFile: boolean, fileName: string | undefined): string {
  const message = folderRefusal(what, dir);
  if (message === undefined) return dir;
  if (fromFile) throw namingFile(fileName, configError(`${setting}: ${message}`));
  // A flag's value is a usage error, as every bad flag is; an environment variable's is the configuration's.
  throw setting.startsWith("--") ? usageError(`${setting}: ${message}`) : configError(`${setting}: ${message}`);
}

/**
 * Where the state lives when nothing names it: a sibling of the outbox whose
 * name does not start with the outbox's (`.NAME-state`), so no string-prefix
 * test of the allow-list can ever take it in. `serve` keeps it there when
 * started by hand (doctor looks there).
 */
export function defaultStateDir(outbox: string): string {
  return path.join(path.dirname(outbox), `.${path.basename(outbox)}-state`);
}

function stringList(value: unknown, what: string): string[] {
  if (!Array.isArray(value) || value.some((v) => typeof v !== "string")) throw configError(`${what} must be a list of paths`);
  return value as string[];
}

/** The platform limits, with the config file's `platforms` applied; errors are the caller's to place (inFile). */
function platformLimits(input: PolicyInput["platforms"]): Record<PlatformName, PlatformLimits> {
  const limits = Object.fromEntries(PLATFORM_NAMES.map((n) => [n, { ...PLATFORM_LIMITS[n] }])) as Record<PlatformName, PlatformLimits>;
  if (input === undefined) return limits;
  if (input === null || typeof input !== "object") throw configError("platforms must be an object of platform limits");
  for (const [name, value] of Object.entries(input)) {
    if (!isPlatformName(name)) throw configError(`platforms: unknown platform ${quoteText(name)} (known: ${PLATFORM_NAMES.join(", ")})`);
    const target = limits[name];
    if (typeof value === "string" || typeof value === "number") {
      const bytes = parseSize(value, `platforms.${name}`);
      for (const cat of Object.keys(target) as MediaCategory[]) target[cat] = bytes;
      continue;
    }
    const cats = checkKeys(value, new Set(["image", "video", "audio", "document"]), `platforms.${name}`);
    for (const [cat, size] of Object.entries(cats)) {
      target[cat as MediaCategory] = parseSize(size as string | number, `platforms.${name}.${cat}`);
    }
  }
  return limits;
}

/**
 * The janitor's policy. A retention shorter than the min-age is refused: the
 * min-age is the promise that a file just published (its MEDIA: line still
 * on its way in a reply) is not deleted before the gateway sends it, and the
 * retention sweep would break it (`--retention 0` deleted every file).
 */
function janitorPolicy(
  janitorIn: NonNullable<PolicyInput["janitor"]>,
  fromFile: (key: string) => boolean,
  fileOrFlag: <T>(fromFile: boolean, fn: () => T) => T,
): Config["janitor"] {
  const retentionMs = janitorIn.retention === undefined ? DEFAULT_RETENTION_MS : fileOrFlag(fromFile("retention"), () => parseDuration(janitorIn.retention!, "retention"));
  const minAgeMs = janitorIn.minAge === undefined ? DEFAULT_MIN_AGE_MS : fileOrFlag(fromFile("minAge"), () => parseDuration(janitorIn.minAge!, "min-age"));
  if (retentionMs < minAgeMs) {
    fileOrFlag(fromFile("retention") && fromFile("minAge"), () => {
      throw usageError(
        `retention: ${formatDuration(retentionMs)} is shorter than the min-age (${formatDuration(minAgeMs)}): a file just published, its MEDIA: line still on its way, would be deleted before the gateway sends it; set a retention of at least the min-age (or a shorter --min-age)`,
      );
    });
  }
  return {
    retentionMs,
    ...(janitorIn.maxBytes !== undefined ? { maxBytes: fileOrFlag(fromFile("maxBytes"), () => parseSize(janitorIn.maxBytes!, "max-bytes")) } : {}),
    minAgeMs,
    stagingMaxAgeMs: STAGING_MAX_AGE_MS,
  };
}

/** Resolves the configuration every command runs with. Throws FatalError on bad input. */
export function loadConfig(overrides: ConfigOverrides = {}): Config {
  const env = overrides.env ?? process.env;
  // node:os is loaded only when HOME is unset: it costs every run start-up time.
  const home = path.resolve(env.HOME || process.getBuiltinModule("node:os").homedir());
  const hermesHome = env.HERMES_HOME ? absPath(env.HERMES_HOME, home, undefined, "HERMES_HOME") : path.join(home, ".hermes");
  const cwd = overrides.cwd ?? process.cwd();

  const explicitFile = overrides.config ?? env.MEDIA_OUTBOX_CONFIG;
  const configFile = explicitFile ? absPath(explicitFile, home, cwd, "--config") : path.join(hermesHome, DEFAULT_CONFIG_NAME);
  const file = readConfigFile(configFile, explicitFile !== undefined) ?? {};
  const fileName = Object.keys(file).length > 0 || explicitFile ? configFile : undefined;

  const pick = <K extends keyof PolicyInput>(key: K): { value: PolicyInput[K]; fromFile: boolean } =>
    overrides[key] !== undefined ? { value: overrides[key], fromFile: false } : { value: file[key], fromFile: true };
  // A value from the file is named by its key and names the file; one from a flag (or a library caller) by the flag.
  const fromTheFile = (err: FatalError) => namingFile(fileName, err);
  const pathOf = (value: string, fromFile: boolean, key: string, flag = key) =>
    fromFile ? inFile(fileName, () => absPath(value, home, undefined, key)) : absPath(value, home, cwd, flag);
  const listOf = (value: unknown, fromFile: boolean, key: string, flag = key) =>
    fromFile ? inFile(fileName, () => stringList(value, key)) : stringList(value, flag);

  let outbox: string;
  if (overrides.outbox !== undefined) outbox = absPath(overrides.outbox, home, cwd, "--outbox");
  else if (env.MEDIA_OUTBOX_DIR) outbox = absPath(env.MEDIA_OUTBOX_DIR, home, undefined, "MEDIA_OUTBOX_DIR");
  else if (file.outbox !== undefined) outbox = inFile(fileName, () => absPath(file.outbox!, home, undefined, "outbox"));
  else outbox = path.join(hermesHome, "media_outbox");

  const stateOpt = pick("stateDir");
  // The default beside the outbox is the outbox's spelling: the outbox's own checks (allowDirProblem) refuse that.
  const stateDir =
    stateOpt.value !== undefined
      ? operatorFolder(pathOf(stateOpt.value, stateOpt.fromFile, "stateDir"), "state directory", "stateDir", stateOpt.fromFile, fileName)
      : env.MEDIA_OUTBOX_STATE_DIR
        ? operatorFolder(absPath(env.MEDIA_OUTBOX_STATE_DIR, home, undefined, "MEDIA_OUTBOX_STATE_DIR"), "state directory", "MEDIA_OUTBOX_STATE_DIR", false, fileName)
        : defaultStateDir(outbox);

  const maxSize = pick("maxSize");
  const allow = pick("allow");
  const platform = pick("platform");
  if (platform.value !== undefined && !isPlatformName(platform.value)) {
    const msg = `unknown platform ${quoteText(platform.value)} (known: ${PLATFORM_NAMES.join(", ")})`;
    throw platform.fromFile ? fromTheFile(configError(msg)) : usageError(msg);
  }
  const roots = pick("sourceRoots");
  const logFile = pick("logFile");
  const level = pick("logLevel");
  const logLevel = level.value ?? "info";
  if (!LOG_LEVELS.has(logLevel)) {
    const err = configError(`logLevel must be one of ${[...LOG_LEVELS].join(", ")}, got ${quoteText(String(logLevel))}`);
    throw level.fromFile ? fromTheFile(err) : err;
  }

  const janitorIn = { ...file.janitor, ...stripUndefined(overrides.janitor ?? {}) };
  const watchIn = { ...file.watch, ...stripUndefined(overrides.watch ?? {}) };
  const janitorFromFile = (k: string) => overrides.janitor?.[k as keyof PolicyInput["janitor"] & string] === undefined;
  const watchFromFile = (k: string) => overrides.watch?.[k as keyof NonNullable<PolicyInput["watch"]>] === undefined;

  const fileOrFlag = <T>(fromFile: boolean, fn: () => T) => (fromFile ? inFile(fileName, fn) : fn());
  const quarantineFromFile = watchFromFile("quarantine");
  const quarantineDir =
    watchIn.quarantine !== undefined
      ? operatorFolder(pathOf(watchIn.quarantine, quarantineFromFile, "watch.quarantine", "--quarantine"), "quarantine", quarantineFromFile ? "watch.quarantine" : "--quarantine", quarantineFromFile, fileName)
      : path.join(stateDir, "quarantine");

  if (watchIn.keep !== undefined && typeof watchIn.keep !== "boolean") {
    const err = configError("watch.keep must be true or false");
    throw watchFromFile("keep") ? fromTheFile(err) : err;
  }
  const janitor = janitorPolicy(janitorIn, janitorFromFile, fileOrFlag);
  const gate = gateSocket(overrides, env, file, fileName, home, cwd);
  if (gate && env.MEDIA_OUTBOX_GATE_TIMEOUT) {
    gate.timeoutMs = parseDuration(env.MEDIA_OUTBOX_GATE_TIMEOUT, "MEDIA_OUTBOX_GATE_TIMEOUT");
    if (gate.timeoutMs <= 0) throw configError("MEDIA_OUTBOX_GATE_TIMEOUT must be longer than zero");
  }

  return {
    home,
    hermesHome,
    ...(fileName ? { configFile: fileName } : {}),
    outbox,
    stateDir,
    stagingDir: path.join(stateDir, "staging"),
    ledgerDir: path.join(stateDir, "ledger"),
    quarantineDir,
    maxSize: maxSize.value === undefined ? DEFAULT_MAX_SIZE : fileOrFlag(maxSize.fromFile, () => parseSize(maxSize.value!, "max-size")),
    allow: allow.value === undefined ? [...DEFAULT_ALLOW] : fileOrFlag(allow.fromFile, () => parseAllowList(allow.value!)),
    ...(platform.value !== undefined ? { platform: platform.value as PlatformName } : {}),
    platformLimits: inFile(fileName, () => platformLimits(file.platforms)),
    sourceRoots:
      roots.value === undefined
        ? []
        : listOf(roots.value, roots.fromFile, "sourceRoots", "--source-root").map((r) =>
            operatorFolder(pathOf(r, roots.fromFile, "sourceRoots", "--source-root"), "source root", roots.fromFile ? "sourceRoots" : "--source-root", roots.fromFile, fileName),
          ),
    ...(logFile.value !== undefined ? { logFile: pathOf(logFile.value, logFile.fromFile, "logFile", "--log-file") } : {}),
    logLevel,
    ...(gate ? { gate } : {}),
    janitor,
    watch: {
      drop:
        watchIn.drop === undefined
          ? []
          : listOf(watchIn.drop, watchFromFile("drop"), "watch.drop", "--drop").map((d) =>
              operatorFolder(pathOf(d, watchFromFile("drop"), "watch.drop", "--drop"), "drop folder", watchFromFile("drop") ? "watch.drop" : "--drop", watchFromFile("drop"), fileName),
            ),
      settleMs: watchIn.settle === undefined ? DEFAULT_SETTLE_MS : fileOrFlag(watchFromFile("settle"), () => parseDuration(watchIn.settle!, "settle", MAX_SETTLE_MS, "1h")),
      keep: watchIn.keep ?? false,
    },
  };
}

/**
 * Which gate prepare uses, if any. The first of these that is set decides:
 * the caller's `outbox` (--outbox: local) or `socket`; MEDIA_OUTBOX_DIR
 * (local); MEDIA_OUTBOX_SOCKET; the config file's `socket`, then its `outbox`
 * (local); the system-wide config's `socket`. Nothing set: local mode. A gate
 * once named is never silently replaced by a local outbox.
 */
function gateSocket(overrides: ConfigOverrides, env: NodeJS.ProcessEnv, file: PolicyInput, fileName: string | undefined, home: string, cwd: string): GateSocket | undefined {
  if (overrides.outbox !== undefined) return undefined;
  if (overrides.socket !== undefined) return { path: absPath(overrides.socket, home, cwd, "socket"), from: "the socket option" };
  if (env.MEDIA_OUTBOX_DIR) return undefined;
  if (env.MEDIA_OUTBOX_SOCKET) return { path: absPath(env.MEDIA_OUTBOX_SOCKET, home, undefined, "MEDIA_OUTBOX_SOCKET"), from: "MEDIA_OUTBOX_SOCKET" };
  if (file.socket !== undefined) return { path: inFile(fileName, () => absPath(file.socket!, home, undefined, "socket")), from: `config file ${escapeText(fileName ?? "")}` };
  if (file.outbox !== undefined) return undefined;
  // MEDIA_OUTBOX_SYSTEM_CONFIG exists for tests: they must never meet the host's gate.
  const systemFile = env.MEDIA_OUTBOX_SYSTEM_CONFIG || SYSTEM_CONFIG;
  const system = readConfigFile(systemFile, false, SYSTEM_KEYS);
  if (system?.socket === undefined) return undefined;
  return { path: absPath(system.socket, home, undefined, `socket in ${escapeText(systemFile)}`), from: `system config ${escapeText(systemFile)}` };
}

function stripUndefined<T extends object>(obj: T): Partial<T> {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** The file `config` was read from, or would be once it exists (none named: the Hermes home's): the one a running watch follows. */
export function configFilePath(config: Pick<Config, "configFile" | "hermesHome">): string {
  return config.configFile ?? path.join(config.hermesHome, DEFAULT_CONFIG_NAME);
}

/** The fields of a configuration that say what may be published (the allow-list, the size caps). */
const POLICY_FIELDS = ["allow", "maxSize", "platform", "platformLimits"] as const satisfies readonly (keyof Config)[];

/** `base` with the publishing policy of `from`: everything else (the outbox, its state, the drop folders) stays `base`'s. */
export function withPolicyOf(base: Config, from: Config): Config {
  const next = { ...base };
  delete next.platform;
  for (const key of POLICY_FIELDS) if (from[key] !== undefined) Object.assign(next, { [key]: from[key] });
  return next;
}

/** The size cap for one file: the general cap, lowered by the platform's limit for its kind. */
export function sizeCapFor(config: Config, ext: string): number {
  if (!config.platform) return config.maxSize;
  return Math.min(config.maxSize, config.platformLimits[config.platform][categoryOf(ext)]);
}
