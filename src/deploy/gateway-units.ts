// Finding the Hermes gateway units and computing the environment systemd
// gives them: which files define a unit, in which order, and where
// HERMES_MEDIA_ALLOW_DIRS (and the strict-mode variables) come from. With a
// running systemd the unit's files come from `systemctl show`; otherwise (a
// container, or --root) from systemd's search path on disk.
import fs from "node:fs";
import path from "node:path";
import { isErrno } from "../core/errors.js";
import { readIfExists } from "./files.js";
import { type Scope, Systemctl } from "./systemctl.js";
import { userByName } from "./users.js";
import { environmentAssignments, expandSpecifiers, parseEnvFile, parseUnitText, splitWords } from "./systemd-syntax.js";

export interface UnitScope {
  scope: Scope;
  /** Alternative root directory (--root), or undefined for the live system. */
  root?: string;
  /** Home of the user whose units these are (user scope), or of root (system scope). */
  home: string;
  user?: string;
}

/** Where a path of the target system lives on this machine. */
export function onDisk(scope: UnitScope, p: string): string {
  return scope.root ? path.join(scope.root, p) : p;
}

/** The unit search path, highest priority first (systemd.unit(5)). */
export function unitSearchPath(scope: UnitScope): string[] {
  if (scope.scope === "system") {
    return ["/etc/systemd/system", "/run/systemd/system", "/usr/local/lib/systemd/system", "/usr/lib/systemd/system", "/lib/systemd/system"];
  }
  return [
    path.join(scope.home, ".config/systemd/user"),
    "/etc/systemd/user",
    path.join(scope.home, ".local/share/systemd/user"),
    "/usr/local/lib/systemd/user",
    "/usr/lib/systemd/user",
  ];
}

/** Where media-outbox writes units and drop-ins. */
export function installDir(scope: UnitScope): string {
  return unitSearchPath(scope)[0]!;
}

/** A Hermes gateway service: hermes-gateway.service, its template and instances, per-profile units. */
export function isGatewayUnitName(name: string): boolean {
  return /^hermes[A-Za-z0-9_.:@\\-]*\.service$/.test(name) && name.includes("gateway") && !name.startsWith("media-outbox");
}

export const isTemplate = (unit: string) => /@\.service$/.test(unit);
export const isInstance = (unit: string) => /@[^@]+\.service$/.test(unit);
export const templateOf = (unit: string) => unit.replace(/@[^@]*\.service$/, "@.service");

function listNames(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch (err) {
    if (isErrno(err, "ENOENT", "ENOTDIR", "EACCES")) return [];
    throw err;
  }
}

/**
 * Every installed gateway unit: unit files (templates included) and the
 * template instances enabled in a .wants/.requires directory or, with a
 * running systemd, loaded.
 */
export function discoverGatewayUnits(scope: UnitScope, systemctl?: Systemctl): string[] {
  const found = new Set<string>();
  if (systemctl) {
    for (const args of [
      ["list-unit-files", "--type=service", "--no-legend", "--plain", "--no-pager", "hermes*"],
      ["list-units", "--all", "--type=service", "--no-legend", "--plain", "--no-pager", "hermes*"],
    ]) {
      const r = systemctl.run(...args);
      for (const line of r.stdout.split("\n")) {
        const name = line.trim().split(/\s+/)[0] ?? "";
        if (isGatewayUnitName(name)) found.add(name);
      }
    }
    return [...found].sort();
  }
  for (const dir of unitSearchPath(scope)) {
    const real = onDisk(scope, dir);
    for (const name of listNames(real)) {
      if (isGatewayUnitName(name)) found.add(name);
      if (/\.(wants|requires)$/.test(name)) {
        for (const dep of listNames(path.join(real, name))) if (isGatewayUnitName(dep)) found.add(dep);
      }
    }
  }
  return [...found].sort();
}

export interface UnitFiles {
  unit: string;
  /** The unit file (target-system path), if there is one. */
  fragment?: string;
  /** Drop-ins (target-system paths) in the order systemd applies them. */
  dropIns: string[];
}

/** Names whose `.d/` directories apply to `unit`: itself, its template, its prefixes, the type. */
function dropInNames(unit: string): string[] {
  const names = [unit];
  if (isInstance(unit)) names.push(templateOf(unit));
  const stem = unit.replace(/\.service$/, "").replace(/@.*$/, "");
  const parts = stem.split("-");
  for (let i = parts.length - 1; i >= 1; i--) names.push(`${parts.slice(0, i).join("-")}-.service`);
  names.push("service");
  return names;
}

/** Sorts drop-ins the way systemd applies them: by file name, across directories. */
export function sortDropIns(paths: string[]): string[] {
  const byName = new Map<string, string>();
  for (const p of paths) if (!byName.has(path.basename(p))) byName.set(path.basename(p), p);
  return [...byName.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, p]) => p);
}

/** The files that define `unit`, as systemd would load them. */
export function unitFiles(scope: UnitScope, unit: string, systemctl?: Systemctl): UnitFiles {
  if (systemctl) {
    const props = systemctl.show(unit, ["FragmentPath", "DropInPaths"]);
    const fragment = props.get("FragmentPath") || undefined;
    const dropIns = (props.get("DropInPaths") ?? "").split(/\s+/).filter((p) => p !== "");
    return { unit, ...(fragment ? { fragment } : {}), dropIns: sortDropIns(dropIns) };
  }
  return unitFilesOnDisk(scope, unit, unitSearchPath(scope));
}

/** The files that define `unit` found in `search` (directories, highest priority first), as systemd would load them from there. */
export function unitFilesOnDisk(scope: Pick<UnitScope, "root">, unit: string, search: readonly string[]): UnitFiles {
  let fragment: string | undefined;
  for (const name of isInstance(unit) ? [unit, templateOf(unit)] : [unit]) {
    for (const dir of search) {
      if (fs.existsSync(onDisk(scope as UnitScope, path.join(dir, name)))) {
        fragment = path.join(dir, name);
        break;
      }
    }
    if (fragment) break;
  }
  const dropIns: string[] = [];
  for (const dir of search) {
    for (const name of dropInNames(unit)) {
      const d = path.join(dir, `${name}.d`);
      for (const f of listNames(onDisk(scope as UnitScope, d)).sort()) if (f.endsWith(".conf")) dropIns.push(path.join(d, f));
    }
  }
  return { unit, ...(fragment ? { fragment } : {}), dropIns: sortDropIns(dropIns) };
}

export interface EnvFileRef {
  /** The path as written (specifiers intact). */
  raw: string;
  /** The path after specifier expansion, or undefined if it uses one we cannot expand. */
  path?: string;
  /** `-` prefix: a missing file is ignored. */
  optional: boolean;
  /** The file that referenced it. */
  from: string;
}

export interface UnitEnvironment {
  unit: string;
  /**
   * Environment= variables, values as written (specifiers intact), and the
   * value itself where the manager has already expanded them (`systemctl show`).
   */
  environment: Map<string, { raw: string; from: string; value?: string }>;
  environmentFiles: EnvFileRef[];
  unset: string[];
  user?: string;
}

/** A file read from the target system; an overlay lets a plan be checked before it is written. */
export type ReadText = (targetPath: string) => string | undefined;

export function diskReader(scope: UnitScope, overlay: ReadonlyMap<string, string> = new Map()): ReadText {
  return (p) => (overlay.has(p) ? overlay.get(p) : readIfExists(onDisk(scope, p))?.toString("utf8"));
}

/** diskReader for one who may not read every file (doctor, run as an agent): a file it cannot read reads as absent, and is not judged. */
export function lenientDiskReader(scope: Pick<UnitScope, "root">): ReadText {
  const read = diskReader(scope as UnitScope);
  return (p) => {
    try {
      return read(p);
    } catch {
      return undefined;
    }
  };
}

/** Applies the unit file and its drop-ins in order: the environment systemd configures for the unit. */
export function unitEnvironment(scope: UnitScope, files: UnitFiles, read: ReadText): UnitEnvironment {
  const env: UnitEnvironment = { unit: files.unit, environment: new Map(), environmentFiles: [], unset: [] };
  const ctx = { unit: files.unit, home: scope.home, ...(scope.user ? { user: scope.user } : {}) };
  for (const file of [...(files.fragment ? [files.fragment] : []), ...files.dropIns]) {
    const text = read(file);
    if (text === undefined) continue;
    for (const a of parseUnitText(text)) {
      if (a.section !== "Service") continue;
      if (a.key === "Environment") {
        if (a.value === "") env.environment.clear();
        for (const { name, value } of environmentAssignments(a.value)) env.environment.set(name, { raw: value, from: file });
      } else if (a.key === "EnvironmentFile") {
        if (a.value === "") env.environmentFiles = [];
        else {
          const optional = a.value.startsWith("-");
          const raw = optional ? a.value.slice(1) : a.value;
          const expanded = expandSpecifiers(raw, ctx);
          env.environmentFiles.push({ raw, ...(expanded !== undefined ? { path: expanded } : {}), optional, from: file });
        }
      } else if (a.key === "UnsetEnvironment") {
        if (a.value === "") env.unset = [];
        else env.unset.push(...splitWords(a.value));
      } else if (a.key === "User") {
        env.user = a.value;
      }
    }
  }
  return env;
}

export interface VariableSource {
  key: string;
  /** Where the value the gateway gets comes from. */
  source: "none" | "environment" | "environment-file" | "unset";
  /** The value as written (Environment=: specifiers intact; file: literal). */
  raw?: string;
  /** The value the process gets (specifiers expanded), when it can be computed. */
  value?: string;
  /** The unit file, drop-in or environment file that sets it. */
  from?: string;
  /** Why the value cannot be known for certain (an unreadable or per-instance environment file…). */
  unknown?: string;
}

/**
 * What `key` is in the unit's process environment, and where it comes from
 * (EnvironmentFile= beats Environment=; UnsetEnvironment= is applied last).
 * The one place that rule lives: the unit files and `systemctl show` both
 * come here.
 */
export function variableSource(scope: UnitScope, env: UnitEnvironment, key: string, read: ReadText): VariableSource {
  const ctx = { unit: env.unit, home: scope.home, ...(scope.user ? { user: scope.user } : {}) };
  let result: VariableSource = { key, source: "none" };
  const inEnv = env.environment.get(key);
  if (inEnv) {
    const value = inEnv.value ?? expandSpecifiers(inEnv.raw, ctx);
    // A specifier that cannot be expanded here (a template's %i) stays as written in the drop-in too.
    result = { key, source: "environment", raw: inEnv.raw, from: inEnv.from, value: value ?? inEnv.raw };
  }
  for (const ref of env.environmentFiles) {
    if (ref.path === undefined) {
      return { ...result, unknown: `EnvironmentFile=${ref.raw} (in ${ref.from}) names a different file for each instance (or a specifier media-outbox cannot expand); name the instances with --unit NAME@INSTANCE.service` };
    }
    if (/[*?[]/.test(ref.path)) return { ...result, unknown: `EnvironmentFile=${ref.raw} (in ${ref.from}) is a glob` };
    let text: string | undefined;
    try {
      text = read(ref.path);
    } catch (err) {
      return { ...result, unknown: `EnvironmentFile=${ref.path} cannot be read: ${(err as Error).message}` };
    }
    if (text === undefined) {
      if (ref.optional) continue;
      return { ...result, unknown: `EnvironmentFile=${ref.path} (in ${ref.from}) does not exist, so the unit cannot start` };
    }
    const vars = parseEnvFile(text);
    const v = vars.get(key);
    if (v !== undefined) result = { key, source: "environment-file", raw: v, value: v, from: ref.path };
  }
  // systemd.exec(5): a bare name removes the variable whatever its value;
  // NAME=VALUE removes only that exact assignment.
  const unset = env.unset.some((u) => u === key || (result.value !== undefined && u === `${key}=${result.value}`));
  if (unset) return { key, source: "unset", ...(result.from ? { from: result.from } : {}) };
  return result;
}

/** The home `~` means for a gateway: its User='s home in a system unit, the user's own in a user unit. */
/**
 * The Hermes home a gateway's HERMES_HOME names, read as Hermes reads it
 * (hermes_constants._hermes_home_from_env: stripped; empty is unset), or
 * undefined: unset, or relative (to a working directory deploy cannot know),
 * and then its user's ~/.hermes. One rule for install, gate-secrets and
 * doctor.
 */
export function unitHermesHome(value: string | undefined): string | undefined {
  const home = value?.trim();
  return home && path.isAbsolute(home) ? home : undefined;
}

export function gatewayHome(scope: UnitScope, user: string | undefined): string {
  if (scope.scope === "user" || !user) return scope.home;
  return userByName(user, scope.root)?.home ?? scope.home;
}

export interface EffectiveEnvironment {
  unit: string;
  /** False when systemd does not know the unit. */
  loaded: boolean;
  vars: Map<string, VariableSource>;
  /** The home `~` means in the gateway's HERMES_MEDIA_ALLOW_DIRS (its User='s home). */
  home: string;
  /** The unit's User= (none: root for a system unit, the user for a user unit). */
  user?: string;
  /** How it was computed: from the running manager, or from the unit files. */
  how: "systemctl show" | "unit files";
  activeState?: string;
  mainPid?: number;
}

/**
 * A loaded unit's environment settings as the running manager reports them:
 * Environment= merged, EnvironmentFiles= in reading order (`PATH
 * (ignore_errors=yes|no)`), UnsetEnvironment=, User=. systemd has already
 * expanded the specifiers in Environment=, so the values are taken as they
 * are rather than expanded again (a literal `%` would be misread).
 */
function shownEnvironment(unit: string, props: Map<string, string>): UnitEnvironment {
  const env: UnitEnvironment = { unit, environment: new Map(), environmentFiles: [], unset: splitWords(props.get("UnsetEnvironment") ?? "") };
  for (const { name, value } of environmentAssignments(props.get("Environment") ?? "")) env.environment.set(name, { raw: value, value, from: `${unit} Environment=` });
  for (const line of (props.get("EnvironmentFiles") ?? "").split("\n")) {
    const m = /^(.*) \(ignore_errors=(yes|no)\)$/.exec(line.trim());
    if (m) env.environmentFiles.push({ raw: m[1]!, path: m[1]!, optional: m[2] === "yes", from: `${unit} EnvironmentFiles=` });
  }
  if (props.get("User")) env.user = props.get("User")!;
  return env;
}

/**
 * The values of `keys` in the unit's process environment. With a running
 * systemd: `systemctl show` (Environment=, EnvironmentFiles=,
 * UnsetEnvironment=), then the environment files it names, which win.
 * Otherwise the unit files on disk. Templates (name@.service) are always read
 * from disk: systemd shows only their instances.
 */
export function effectiveEnvironment(scope: UnitScope, unit: string, keys: string[], systemctl?: Systemctl): EffectiveEnvironment {
  const read = diskReader(scope);
  const shown = systemctl && !isTemplate(unit) ? systemctl.show(unit, ["LoadState", "Environment", "EnvironmentFiles", "UnsetEnvironment", "User", "ActiveState", "MainPID"]) : undefined;
  let env: UnitEnvironment;
  let loaded: boolean;
  if (shown) {
    env = shownEnvironment(unit, shown);
    loaded = shown.get("LoadState") === "loaded";
  } else {
    const files = unitFiles(scope, unit);
    env = unitEnvironment(scope, files, read);
    loaded = files.fragment !== undefined;
  }
  const vars = new Map(keys.map((k) => [k, variableSource(scope, env, k, read)]));
  const pid = Number(shown?.get("MainPID") ?? "0");
  const activeState = shown?.get("ActiveState");
  return {
    unit,
    loaded,
    vars,
    home: gatewayHome(scope, env.user),
    ...(env.user ? { user: env.user } : {}),
    how: shown ? "systemctl show" : "unit files",
    ...(activeState ? { activeState } : {}),
    ...(pid > 0 ? { mainPid: pid } : {}),
  };
}
