// `media-outbox install systemd` / `uninstall systemd` as a library: plan the
// files (units, gateway drop-ins), check that the plan really puts the outbox
// into every gateway's effective HERMES_MEDIA_ALLOW_DIRS, write atomically,
// record what was replaced, and undo exactly that.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Config } from "../config/config.js";
import { FatalError, isErrno, usageError } from "../core/errors.js";
import { escapeText, someOf } from "../core/escape.js";
import { assertDedicated, assertDedicatedOutbox } from "../safety/dedicated.js";
import { allowDirProblem, isWithin, parseAllowDirs } from "../safety/gateway.js";
import { mkdirs, readIfExists, sha256, writeFileAtomic } from "./files.js";
import {
  GATE_OUTBOX,
  GATE_UMASK,
  LOCAL_OUTBOX_VAR,
  type GateInstallOptions,
  type GatePlan,
  type GateRecord,
  type GatewayOwner,
  applyGateAccounts,
  applyGateDirs,
  gateFiles,
  gateUnits,
  gatewayOwnerOf,
  gateOwner,
  planGate,
  undoGateAccounts,
} from "./gate.js";
import { GATE_SECRETS_WATCH, GATE_SECRETS_WATCHES } from "./gate-profiles.js";
import { type PasswdEntry, groupName, userByName, userByNameOrUid, userByUid } from "./users.js";
import {
  type UnitScope,
  type VariableSource,
  diskReader,
  discoverGatewayUnits,
  effectiveEnvironment,
  gatewayHome,
  installDir,
  isGatewayUnitName,
  isInstance,
  isTemplate,
  onDisk,
  sortDropIns,
  templateOf,
  unitEnvironment,
  unitFiles,
  variableSource,
} from "./gateway-units.js";
import {
  DROP_IN_ENV_NAME,
  DROP_IN_NAME,
  GATE_SECRETS_NEW_PATH,
  GATE_SECRETS_PATH,
  GATE_SERVICE,
  GATE_SOCKET_UNIT,
  JANITOR_SERVICE,
  JANITOR_TIMER,
  type ServiceParams,
  WATCH_SERVICE,
  packageRoot,
  renderGatewayDropIn,
  renderJanitorService,
  renderJanitorTimer,
  renderWatchService,
} from "./render.js";
import { Systemctl, type Scope, type SystemctlResult, scopeArgs, shellLine } from "./systemctl.js";
import { envFileLine, escapeSpecifiers, pathWord, templateInstances, unitWord } from "./systemd-syntax.js";

export const ALLOW_DIRS = "HERMES_MEDIA_ALLOW_DIRS";
export const STRICT_VARS: Record<string, string> = { HERMES_MEDIA_DELIVERY_STRICT: "1", HERMES_MEDIA_TRUST_RECENT_FILES: "0" };

export interface PlannedFile {
  /** Path on the target system. */
  path: string;
  content: string;
  mode: number;
}

export interface CoveredUnit {
  unit: string;
  /** How the outbox reaches the unit: a drop-in Environment=, or a drop-in EnvironmentFile= (when the unit's own file sets the variable). */
  via: "environment" | "environment-file";
  previous: VariableSource;
  /** The value of HERMES_MEDIA_ALLOW_DIRS after install (as the gateway will see it). */
  value: string;
}

export interface InstallPlan {
  scope: UnitScope;
  outbox: string;
  files: PlannedFile[];
  units: CoveredUnit[];
  services: string[];
  serviceUser: string;
  /** uid/gid owning the outbox and the state directory (created 0700 when missing). */
  owner: { uid: number; gid: number };
  /** Directories the services must find at start (ReadWritePaths=). */
  dirs: string[];
  /** Drop folders (watch): in gate mode created group-writable for the agents. */
  dropDirs: string[];
  notes: string[];
  /** Gate mode: the accounts, directories and units of the gate. */
  gate?: GatePlan;
}

export interface InstallOptions {
  scope: Scope;
  root?: string;
  units?: string[];
  config: Config;
  strict?: boolean;
  withWatch?: boolean;
  node?: string;
  bin?: string;
  env?: NodeJS.ProcessEnv;
  /** Gate mode (`--gate`): a system user owns the outbox and runs the pipeline behind a socket. */
  gate?: GateInstallOptions;
  /** False for --dry-run: gate mode then names accounts that do not exist yet instead of refusing. */
  apply?: boolean;
}

/** The scope a command acts in: whose units, which home %h means. */
export function unitScope(scope: Scope, root: string | undefined, env: NodeJS.ProcessEnv = process.env): UnitScope {
  if (root !== undefined && !path.isAbsolute(root)) throw usageError(`--root must be an absolute path, got ${escapeText(root)}`);
  const me = os.userInfo();
  if (scope === "system") return { scope, ...(root ? { root } : {}), home: "/root", user: "root" };
  return { scope, ...(root ? { root } : {}), home: path.resolve(env.HOME || me.homedir), user: me.username };
}

/**
 * System units and their record (/etc/systemd/system, /var/lib/media-outbox)
 * are root's to change: anyone else is told so before anything is read or
 * written, instead of failing half-way on EACCES. --root (an image, a tree
 * of the caller's) and --user scopes are the caller's own.
 */
function requireRoot(scope: UnitScope, command: "install" | "uninstall"): void {
  if (scope.scope !== "system" || scope.root !== undefined || (process.geteuid?.() ?? 0) === 0) return;
  const alternatives = command === "install" ? "; --user installs units of your own user, --dry-run shows what it would write" : "";
  throw usageError(
    `${command} systemd --system changes /etc/systemd/system and /var/lib/media-outbox, which only root may: run it as root (sudo media-outbox ${command} systemd ...)${alternatives}`,
  );
}

/** Where the record of an install lives (outside every unit directory). */
export function manifestPath(scope: UnitScope): string {
  return scope.scope === "system" ? "/var/lib/media-outbox/install-manifest.json" : path.join(scope.home, ".local/state/media-outbox/install-manifest.json");
}

/**
 * The gateway units to cover (or check): the named ones, or every one
 * installed. With `collapse`, instances of a found template are left out: the
 * template's drop-in covers them.
 */
export function gatewayUnitsFor(scope: UnitScope, named: string[] | undefined, systemctl?: Systemctl, { collapse = true } = {}): string[] {
  if (named && named.length > 0) {
    for (const n of named) {
      if (!/^[A-Za-z0-9_.:@\\-]+\.service$/.test(n)) throw usageError(`--unit ${escapeText(n)} is not a service unit name (NAME.service)`);
    }
    return [...new Set(named)];
  }
  const found = discoverGatewayUnits(scope, systemctl);
  if (!collapse) return found;
  const templates = new Set(found.filter(isTemplate));
  return found.filter((u) => !isInstance(u) || !templates.has(templateOf(u)));
}

/** Refuses an outbox the gateway could not parse in HERMES_MEDIA_ALLOW_DIRS. */
export function checkOutboxForGateway(outbox: string): void {
  const problem = allowDirProblem(outbox);
  if (problem) throw usageError(`the gateway cannot use the outbox ${escapeText(outbox)} in ${ALLOW_DIRS}: ${problem}; choose a plain absolute path`);
}

/** The previous roots with the outbox appended (kept as written, so specifiers in a unit stay specifiers). */
function mergedRoots(previous: string | undefined, previousValue: string | undefined, outbox: string, home: string, inUnit: boolean): string {
  const added = inUnit ? escapeSpecifiers(outbox) : outbox;
  if (previous === undefined || previous.trim() === "") return added;
  if (parseAllowDirs(previousValue ?? previous, home).includes(outbox)) return previous;
  return `${previous.replace(/[:,\s]+$/, "")}:${added}`;
}

/** Plans the drop-in for one gateway unit and checks that it wins; also says whose the gateway is (its User=). */
function planGatewayUnit(
  scope: UnitScope,
  unit: string,
  outbox: string,
  strict: boolean,
  systemctl: Systemctl | undefined,
): { files: PlannedFile[]; covered: CoveredUnit; user?: string; hermesHome?: string; localOutboxFrom?: string } & Pick<GatewayOwner, "environmentFiles" | "unitFiles" | "hermesEnvironment"> {
  const read = diskReader(scope);
  // systemd shows instances, not templates: a template's files are found on disk.
  const files = unitFiles(scope, unit, isTemplate(unit) ? undefined : systemctl);
  if (!files.fragment) throw new FatalError("config_invalid", `gateway unit ${escapeText(unit)} is not installed${scope.root ? ` under ${escapeText(scope.root)}` : ""}; name an installed unit with --unit`);
  const env = unitEnvironment(scope, files, read);
  const home = gatewayHome(scope, env.user);
  const keys = [ALLOW_DIRS, ...(strict ? Object.keys(STRICT_VARS) : [])];
  const sources = keys.map((k) => variableSource(scope, env, k, read));
  for (const s of sources) {
    if (s.unknown) {
      throw new FatalError(
        "config_invalid",
        `cannot tell what ${s.key} is for ${escapeText(unit)}: ${escapeText(s.unknown)}. Add ${escapeText(outbox)} to that file yourself, or fix it and run install again`,
      );
    }
    if (s.source === "unset") {
      throw new FatalError("config_invalid", `${escapeText(unit)} has UnsetEnvironment=${s.key}, which would discard the outbox; remove it first`);
    }
  }
  const allow = sources[0]!;
  const byFile = sources.some((s) => s.source === "environment-file");
  const dir = path.join(installDir(scope), `${unit}.d`);
  const dropIn = path.join(dir, DROP_IN_NAME);
  const planned: PlannedFile[] = [];
  if (byFile) {
    // EnvironmentFile= beats Environment=, so a drop-in Environment= would do
    // nothing: add an environment file of our own, read after the unit's.
    const value = mergedRoots(allow.raw, allow.value, outbox, home, false);
    const envFile = path.join(dir, DROP_IN_ENV_NAME);
    const lines = [envFileLine(ALLOW_DIRS, value), ...(strict ? Object.entries(STRICT_VARS).map(([k, v]) => envFileLine(k, v)) : [])];
    planned.push({ path: envFile, content: `# Written by media-outbox install systemd for ${unit}.\n${lines.join("")}`, mode: 0o644 });
    planned.push({ path: dropIn, content: renderGatewayDropIn(unit, [`EnvironmentFile=${pathWord(envFile, "environment file")}`]), mode: 0o644 });
  } else {
    const raw = mergedRoots(allow.raw, allow.value, outbox, home, true);
    const words = [unitWord(`${ALLOW_DIRS}=${raw}`), ...(strict ? Object.entries(STRICT_VARS).map(([k, v]) => unitWord(`${k}=${v}`)) : [])];
    planned.push({ path: dropIn, content: renderGatewayDropIn(unit, [`Environment=${words.join(" ")}`]), mode: 0o644 });
  }

  // Check the plan the way systemd will read it: our drop-in among the others, in order.
  const readAfter = diskReader(scope, new Map(planned.map((f) => [f.path, f.content])));
  const after = unitEnvironment(scope, { ...files, dropIns: sortDropIns([...files.dropIns, dropIn]) }, readAfter);
  const final = keys.map((k) => variableSource(scope, after, k, readAfter));
  const finalAllow = final[0]!;
  if (finalAllow.value === undefined || !parseAllowDirs(finalAllow.value, home).includes(outbox)) {
    throw new FatalError(
      "config_invalid",
      `installing for ${escapeText(unit)} would do nothing: ${ALLOW_DIRS} would still come from ${escapeText(finalAllow.from ?? "nowhere")}, which is read after ${DROP_IN_NAME}. Add ${escapeText(outbox)} there, or remove that setting`,
    );
  }
  for (const s of final.slice(1)) {
    if (s.value !== STRICT_VARS[s.key]) throw new FatalError("config_invalid", `--strict for ${escapeText(unit)} would do nothing: ${s.key} still comes from ${escapeText(s.from ?? "nowhere")}`);
  }
  const localOutbox = variableSource(scope, env, LOCAL_OUTBOX_VAR, read);
  // Whose the gateway is, its own secrets' files and where its Hermes reads (gate mode copies them).
  const { unit: _, ...owner } = gatewayOwnerOf(scope, unit, files, env, read);
  return {
    files: planned,
    covered: { unit, via: byFile ? "environment-file" : "environment", previous: allow, value: finalAllow.value },
    ...owner,
    ...(localOutbox.value !== undefined ? { localOutboxFrom: localOutbox.from ?? "the unit" } : {}),
  };
}

/** Everything install would write, checked; changes nothing. */
export function planInstall(options: InstallOptions, systemctl?: Systemctl): InstallPlan {
  const scope = unitScope(options.scope, options.root, options.env);
  if (options.gate && scope.scope !== "system") throw usageError("--gate installs system units (a system user owns the outbox): use --system, not --user");
  if (options.apply !== false) requireRoot(scope, "install");
  const outbox = options.gate ? (options.gate.outbox ?? GATE_OUTBOX) : options.config.outbox;
  checkOutboxForGateway(outbox);
  // The outbox must be a directory of its own, whichever mode installs it;
  // so must the state its units name (the gate's is its own, checked below).
  if (options.gate) assertDedicatedOutbox({ ...options.config, outbox });
  else assertDedicated(options.config);
  const notes: string[] = [];
  const units = gatewayUnitsFor(scope, options.units, systemctl);
  if (units.length === 0) {
    throw new FatalError(
      "config_invalid",
      `no Hermes gateway unit found in the ${scope.scope} unit path${scope.root ? ` under ${escapeText(scope.root)}` : ""}; name it with --unit NAME.service (or use --user / --system)`,
    );
  }
  for (const u of units) if (!isGatewayUnitName(u)) notes.push(`${escapeText(u)} does not look like a Hermes gateway unit; covering it because --unit named it`);

  const files: PlannedFile[] = [];
  const covered: CoveredUnit[] = [];
  const gateways: GatewayOwner[] = [];
  for (const unit of units) {
    const plan = planGatewayUnit(scope, unit, outbox, options.strict === true, systemctl);
    files.push(...plan.files);
    covered.push(plan.covered);
    gateways.push({
      unit,
      ...(plan.environmentFiles ? { environmentFiles: plan.environmentFiles } : {}),
      ...(plan.unitFiles ? { unitFiles: plan.unitFiles } : {}),
      ...(plan.user ? { user: plan.user } : {}),
      ...(plan.hermesHome ? { hermesHome: plan.hermesHome } : {}),
      ...(plan.localOutboxFrom ? { localOutboxFrom: plan.localOutboxFrom } : {}),
      ...(plan.hermesEnvironment ? { hermesEnvironment: plan.hermesEnvironment } : {}),
    });
  }

  const node = options.node ?? process.execPath;
  const bin = options.bin ?? path.join(packageRoot(), "bin", "media-outbox");
  for (const p of [node, bin]) {
    if (!path.isAbsolute(p)) throw usageError(`${escapeText(p)} must be an absolute path`);
  }
  const gate = options.gate
    ? planGate({ scope, gate: options.gate, config: options.config, gateways, node, packageRoot: path.dirname(path.dirname(bin)), apply: options.apply !== false })
    : undefined;
  // The services see the configuration the gate's environment gives them, or
  // (single-user mode) the one install resolved.
  const config = gate ? gate.serviceConfig : options.config;
  // User units have no PrivateTmp= (deploy/systemd/user/hardening.conf): they see /tmp.
  if (!gate && scope.scope === "system") {
    for (const dir of [config.outbox, config.stateDir]) {
      if (["/tmp", "/var/tmp"].some((tmp) => isWithin(dir, tmp))) {
        notes.push(`${escapeText(dir)} is under /tmp or /var/tmp: the janitor and watch units run with PrivateTmp=yes and will not see it; choose an outbox elsewhere (such as ~/.hermes/media_outbox)`);
      }
    }
  }
  notes.push(...(gate?.notes ?? []));

  let service: { name: string; group: string; uid: number; gid: number };
  let environment: Record<string, string>;
  if (gate) {
    service = { name: gate.user, group: gate.group, uid: -1, gid: -1 };
    environment = gate.environment;
  } else {
    // The services run as the outbox's owner: prepare made it 0700 for that user.
    const serviceUser = serviceUserFor(scope, config.outbox, new Set(gateways.map((g) => g.user).filter((u): u is string => u !== undefined)));
    service = { name: serviceUser.name, group: groupName(serviceUser.gid, scope.root) ?? serviceUser.name, uid: serviceUser.uid, gid: serviceUser.gid };
    environment = {};
    if (scope.scope === "system") environment.HOME = serviceUser.home;
    const sameUser = serviceUser.uid === (process.geteuid?.() ?? -1);
    const env = options.env ?? process.env;
    // Without one from the unit: the installer's (told, or its own user's), else the service user's ~/.hermes (HOME).
    const fallback = env.HERMES_HOME || sameUser ? config.hermesHome : path.join(serviceUser.home, ".hermes");
    const unitHome = env.HERMES_HOME ? undefined : servicesHermesHome(scope, serviceUser, gateways, config, fallback, notes);
    if (unitHome !== undefined) environment.HERMES_HOME = unitHome;
    else if (env.HERMES_HOME || sameUser) environment.HERMES_HOME = config.hermesHome;
    environment.MEDIA_OUTBOX_STATE_DIR = config.stateDir;
    if (config.configFile) environment.MEDIA_OUTBOX_CONFIG = config.configFile;
  }
  // Directories the services write, created when missing (ReadWritePaths= needs them).
  const serviceDirs = [config.outbox, config.stateDir];
  if (!config.quarantineDir.startsWith(`${config.stateDir}/`)) serviceDirs.push(config.quarantineDir);
  if (config.logFile) serviceDirs.push(path.dirname(config.logFile));
  const writable = writablePaths(config, scope, notes);
  const params: ServiceParams = {
    scope: scope.scope,
    node,
    bin,
    outbox: config.outbox,
    writable,
    watchWritable: config.watch.drop,
    environment,
    ...(scope.scope === "system" ? { user: service.name, group: service.group } : {}),
    ...(gate ? { umask: GATE_UMASK } : {}),
  };
  const dir = installDir(scope);
  const services: string[] = [];
  if (gate) {
    const written = gateFiles(gate, params, dir, options.withWatch === true);
    files.push(...written);
    services.push(...gateUnits(written));
  }
  files.push({ path: path.join(dir, JANITOR_SERVICE), content: renderJanitorService(params), mode: 0o644 });
  files.push({ path: path.join(dir, JANITOR_TIMER), content: renderJanitorTimer(), mode: 0o644 });
  services.push(JANITOR_SERVICE, JANITOR_TIMER);
  if (options.withWatch) {
    // In gate mode the watch judges drops knowing the agents' .env values, as the gate does.
    files.push({ path: path.join(dir, WATCH_SERVICE), content: renderWatchService(gate ? { ...params, secrets: gate.secrets } : params), mode: 0o644 });
    services.push(WATCH_SERVICE);
  }
  return {
    scope,
    outbox: config.outbox,
    files,
    units: covered,
    services,
    serviceUser: service.name,
    owner: { uid: service.uid, gid: service.gid },
    // The ReadWritePaths= of the units written: systemd refuses to start a
    // unit (226/NAMESPACE) when one of them is missing.
    dirs: [...new Set(serviceDirs)],
    dropDirs: options.withWatch ? [...new Set(params.watchWritable)] : [],
    notes,
    ...(gate ? { gate } : {}),
  };
}

/** The deepest directory holding all of `dirs` (absolute, normalised). */
function commonAncestor(dirs: string[]): string {
  let common = dirs[0]!;
  for (const d of dirs.slice(1)) while (!isWithin(d, common)) common = path.dirname(common);
  return common;
}

/**
 * What else lives in `dir`, a ReadWritePaths= entry, besides the ways down to
 * `targets` (the outbox, its state): the services may write that too.
 */
export function alsoWritable(dir: string, targets: string[]): string[] {
  const ways = new Set(targets.filter((t) => t !== dir && isWithin(t, dir)).map((t) => path.relative(dir, t).split(path.sep)[0]));
  try {
    return fs
      .readdirSync(dir)
      .filter((name) => !ways.has(name))
      .sort();
  } catch {
    return [];
  }
}

/**
 * The services' ReadWritePaths=. systemd makes each entry a mount of its own,
 * and link(2) and rename(2) fail with EXDEV across mounts even on one
 * filesystem: publication links staging into the outbox, the guard renames
 * into the quarantine. So the outbox, the state and the quarantine go in as
 * the one directory that holds them all; the log file's directory on its own.
 * That directory may hold more (in the default layout it is ~/.hermes):
 * install says so. The user units have no ReadWritePaths= at all
 * (deploy/systemd/user/hardening.conf says why): install says that instead.
 */
function writablePaths(config: Config, scope: UnitScope, notes: string[]): string[] {
  const together = commonAncestor([config.outbox, config.stateDir, config.quarantineDir]);
  if (together === "/") {
    throw usageError(`the outbox ${escapeText(config.outbox)}, its state ${escapeText(config.stateDir)} and quarantine ${escapeText(config.quarantineDir)} share no directory but /: put them beside each other (the state is .NAME-state beside the outbox by default)`);
  }
  if (scope.scope === "user") {
    notes.push(
      `user units are not confined to ${escapeText(together)}: the janitor and watch may write whatever your user may (a user manager applies ProtectSystem=, ReadWritePaths= and PrivateTmp= only inside a user namespace, which many hosts and containers refuse it); they keep their seccomp filters and have no network. For that confinement install system units: sudo media-outbox install systemd --system (README, "Deploying with systemd")`,
    );
    return [together];
  }
  const others = alsoWritable(onDisk(scope, together), [config.outbox, config.stateDir, config.quarantineDir].map((p) => onDisk(scope, p)));
  if (others.length > 0) {
    notes.push(
      `the services may write anywhere in ${escapeText(together)}, which also holds ${someOf(others)}: ReadWritePaths= names the one directory holding the outbox and its state, because link(2) and rename(2) fail with EXDEV across systemd's per-entry mounts (README, "Deploying with systemd")`,
    );
  }
  const writable = [together];
  if (config.logFile && !isWithin(path.dirname(config.logFile), together)) writable.push(path.dirname(config.logFile));
  return writable;
}

/**
 * The Hermes home the services (janitor, watch) take from the gateway units
 * of their user (single-user mode, installer's environment without
 * HERMES_HOME): the HERMES_HOME= those units set, read from their
 * environment as install reads it, when they agree on one (a unit without
 * one reads the user's ~/.hermes). The watch then knows the secrets of the
 * Hermes home the gateway reads, not of ~/.hermes. Not when install read no
 * config file and that home holds a media-outbox.json (the services would
 * take its policy, drop folders among it, which the units install wrote do
 * not allow for): a note says to install again with that HERMES_HOME.
 */
function servicesHermesHome(scope: UnitScope, serviceUser: PasswdEntry, gateways: GatewayOwner[], config: Config, fallback: string, notes: string[]): string | undefined {
  const theirs = gateways.filter((g) => (scope.scope === "user" ? true : g.user === undefined ? serviceUser.uid === 0 : userByNameOrUid(g.user, scope.root)?.uid === serviceUser.uid));
  const homes = [...new Set(theirs.map((g) => g.hermesHome ?? path.join(serviceUser.home, ".hermes")))];
  const home = homes.length === 1 && theirs.some((g) => g.hermesHome !== undefined) ? homes[0]! : undefined;
  if (homes.length > 1) {
    notes.push(`the gateway units of ${escapeText(serviceUser.name)} read different Hermes homes (${homes.map(escapeText).join(", ")}): the janitor and watch read ${escapeText(fallback)}; run install with HERMES_HOME set to the one they should read`);
    return undefined;
  }
  if (home === undefined) return undefined;
  const configFile = path.join(home, "media-outbox.json");
  // A config file install read is the services' (MEDIA_OUTBOX_CONFIG), whatever their HERMES_HOME holds.
  if (config.configFile === undefined && fs.existsSync(onDisk(scope, configFile))) {
    notes.push(`the gateway's Hermes home ${escapeText(home)} holds ${escapeText(configFile)}, which install did not read: the janitor and watch read ${escapeText(fallback)}; run install with HERMES_HOME=${escapeText(home)} so that they, and install, take that policy`);
    return undefined;
  }
  return home;
}

function serviceUserFor(scope: UnitScope, outbox: string, gatewayUsers: Set<string>): PasswdEntry {
  const me = os.userInfo();
  const current: PasswdEntry = { name: me.username, uid: me.uid, gid: me.gid, home: me.homedir };
  if (scope.scope === "user") return current;
  if (!scope.root) {
    try {
      const st = fs.statSync(outbox);
      return userByUid(st.uid) ?? current;
    } catch {
      // Not created yet: fall back to the gateway's user.
    }
  }
  if (gatewayUsers.size === 1) {
    const name = [...gatewayUsers][0]!;
    const entry = userByName(name, scope.root);
    if (entry) return entry;
  }
  return current;
}

export interface InstallRecord {
  version: 1;
  scope: Scope;
  root: string | null;
  installedAt: string;
  outbox: string;
  units: string[];
  services: string[];
  files: { path: string; sha256: string; previous: string | null; previousMode: number | null }[];
  dirs: string[];
  enabled: string[];
  /** Gate mode: the accounts install created or changed (absent in records of a single-user install). */
  gate?: GateRecord;
  /** Single-user mode: the directories the services write (outbox, state…), which uninstall keeps (absent in older records). */
  serviceDirs?: string[];
}

export function readManifest(scope: UnitScope): InstallRecord | undefined {
  const data = readIfExists(onDisk(scope, manifestPath(scope)));
  if (!data) return undefined;
  try {
    const rec = JSON.parse(data.toString("utf8")) as InstallRecord;
    if (rec.version !== 1 || !Array.isArray(rec.files)) throw new Error("unknown format");
    return rec;
  } catch (err) {
    throw new FatalError("config_invalid", `install record ${escapeText(onDisk(scope, manifestPath(scope)))} is unreadable (${escapeText((err as Error).message)}); restore it or remove the listed files by hand`);
  }
}

export interface ApplyResult {
  /** Accounts created or changed (gate mode). */
  accounts: string[];
  written: string[];
  /** systemctl commands that were run (with a running systemd) or are still to run. */
  ran: string[];
  toRun: string[];
  warnings: string[];
}

/** Throws when an install's record is already there: a second install is refused (uninstall first), before anything is said or written. */
export function assertNotInstalled(scope: UnitScope): void {
  if (readManifest(scope)) {
    throw new FatalError("config_invalid", `media-outbox is already installed here (${escapeText(onDisk(scope, manifestPath(scope)))}); run ${shellLine(["media-outbox", "uninstall", "systemd", ...scopeArgs(scope.scope)])} first`);
  }
}

/** Writes the plan (recording what each file replaced), then reloads systemd or says what to run. */
export function applyInstall(plan: InstallPlan, opts: { restart?: boolean; systemctl: Systemctl; live: boolean }): ApplyResult {
  const { scope } = plan;
  assertNotInstalled(scope);
  const record: InstallRecord = {
    version: 1,
    scope: scope.scope,
    root: scope.root ?? null,
    installedAt: new Date().toISOString(),
    outbox: plan.outbox,
    ...(plan.gate ? {} : { serviceDirs: plan.dirs }),
    units: plan.units.map((u) => u.unit),
    services: plan.services,
    files: [],
    dirs: [],
    enabled: [],
  };
  const manifestFile = onDisk(scope, manifestPath(scope));
  const manifestDirs = mkdirs(path.dirname(manifestFile), 0o755);
  record.dirs.push(...manifestDirs);
  const save = () => writeFileAtomic(manifestFile, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
  const result: ApplyResult = { accounts: [], written: [], ran: [], toRun: [], warnings: [] };
  let owner = plan.owner;
  if (plan.gate) {
    const g = plan.gate;
    record.gate = { user: g.user, group: g.group, createdUser: false, createdGroup: false, addedMembers: [], outbox: g.outbox, stateDir: g.stateDir, socket: g.socket };
    try {
      applyGateAccounts(g, record.gate, save);
    } catch (err) {
      // The accounts were rolled back: leave no record of an install that did not happen.
      fs.rmSync(manifestFile, { force: true });
      for (const d of [...manifestDirs].reverse()) fs.rmdirSync(d);
      throw err;
    }
    if (record.gate.createdGroup) result.accounts.push(`created group ${g.group}`);
    if (record.gate.createdUser) result.accounts.push(`created system user ${g.user} (no home, no login shell)`);
    for (const m of record.gate.addedMembers) result.accounts.push(`added ${m} to group ${g.group}`);
    owner = gateOwner(g);
    const extra = plan.dirs.filter((d) => d !== g.outbox && d !== g.stateDir).map((d) => ({ path: d, mode: 0o700 }));
    // Drop folders: the agents (group members) write, the watch (the owner) reads and removes; sticky, so no agent removes another's files.
    extra.push(...plan.dropDirs.map((d) => ({ path: d, mode: 0o3770 })));
    applyGateDirs(g, owner, extra);
  }
  for (const file of plan.files) {
    const real = onDisk(scope, file.path);
    record.dirs.push(...mkdirs(path.dirname(real), 0o755));
    const previous = readIfExists(real);
    const previousMode = previous ? fs.statSync(real).mode & 0o7777 : null;
    // Record first: a crash between the two leaves a record uninstall can still act on.
    record.files.push({ path: file.path, sha256: sha256(file.content), previous: previous ? previous.toString("base64") : null, previousMode });
    save();
    writeFileAtomic(real, file.content, { mode: file.mode });
    result.written.push(real);
  }
  save();
  if (!scope.root && !plan.gate) createServiceDirs(plan, owner);

  const sc = opts.systemctl;
  const toEnable = [
    ...(plan.gate ? [GATE_SOCKET_UNIT] : []),
    ...[GATE_SECRETS_PATH, GATE_SECRETS_NEW_PATH].filter((u) => plan.services.includes(u)),
    JANITOR_TIMER,
    ...(plan.services.includes(WATCH_SERVICE) ? [WATCH_SERVICE] : []),
  ];
  const commands: string[][] = [["daemon-reload"], ...toEnable.map((u) => ["enable", "--now", u])];
  const restart = restartTargets(plan.units.map((u) => u.unit));
  if (opts.live) {
    // `enable` creates a missing .wants directory, and `disable` leaves it behind: uninstall removes those it finds empty.
    for (const unit of toEnable) {
      const wants = onDisk(scope, path.join(installDir(scope), `${unit.endsWith(".timer") ? "timers" : unit.endsWith(".socket") ? "sockets" : scope.scope === "system" ? "multi-user" : "default"}.target.wants`));
      if (!fs.existsSync(wants) && !record.dirs.includes(wants)) record.dirs.push(wants);
    }
    save();
    for (const c of commands) {
      const r = sc.run(...c);
      if (r.code !== 0) result.warnings.push(`${sc.commandLine(...c)} failed: ${escapeText(r.stderr.trim())}`);
      else {
        result.ran.push(sc.commandLine(...c));
        if (c[0] === "enable") record.enabled.push(c[2]!);
      }
    }
    save();
    // Ask the reloaded manager, not our reading of the files: does every unit now list the outbox?
    for (const u of plan.units.filter((x) => !isTemplate(x.unit))) {
      const env = effectiveEnvironment(scope, u.unit, [ALLOW_DIRS], sc);
      const value = env.vars.get(ALLOW_DIRS)?.value;
      if (!value || !parseAllowDirs(value, env.home).includes(plan.outbox)) {
        result.warnings.push(`after daemon-reload, systemctl show ${escapeText(u.unit)} does not list the outbox in ${ALLOW_DIRS}; run media-outbox doctor`);
      }
    }
    if (opts.restart) {
      const r = sc.run("try-restart", ...restart);
      if (r.code !== 0) result.warnings.push(`${sc.commandLine("try-restart", ...restart)} failed: ${escapeText(r.stderr.trim())}`);
      else result.ran.push(sc.commandLine("try-restart", ...restart));
    } else result.toRun.push(sc.commandLine("try-restart", ...restart));
  } else {
    for (const c of commands) result.toRun.push(sc.commandLine(...c));
    result.toRun.push(sc.commandLine("try-restart", ...restart));
  }
  return result;
}

/**
 * ReadWritePaths= needs every directory it lists to exist, or the units fail
 * to start: create missing ones 0700 for the service user. They hold the
 * user's files, so uninstall leaves them.
 */
function createServiceDirs(plan: InstallPlan, owner: { uid: number; gid: number }): void {
  for (const dir of [...plan.dirs, ...plan.dropDirs]) {
    for (const created of mkdirs(dir, 0o700)) {
      fs.chmodSync(created, 0o700);
      fs.chownSync(created, owner.uid, owner.gid);
    }
  }
}

/** rmdir: true when it removed `dir`; false when it is not there, not empty, or a mount point (a sandbox's bind). */
function removeEmptyDir(dir: string): boolean {
  try {
    fs.rmdirSync(dir);
    return true;
  } catch (err) {
    if (isErrno(err, "ENOENT", "ENOTEMPTY", "EEXIST", "EBUSY", "ENOTDIR")) return false;
    throw err;
  }
}

/** What `systemctl try-restart` is given for gateway units: a template's instances (`NAME@*.service`), which its bare name does not restart. */
export function restartTargets(units: readonly string[]): string[] {
  return units.map((u) => (isTemplate(u) ? templateInstances(u) : u));
}

export interface UninstallResult {
  /**
   * What was done, one line each, in the order it was done, values escaped:
   * `ran: COMMAND`, `not cleaned: …` (the timer's stamp), `restored FILE`,
   * `removed FILE`, an account changed back (gate mode), `nothing to reset: …`.
   */
  done: string[];
  kept: string[];
  /** Commands to run where systemd runs (it was not told), in order. */
  toRun: string[];
  units: string[];
  /** Gate mode: the accounts kept. */
  keptAccounts: string[];
  /** The outbox and state (and what else the services wrote), never removed: they hold published files. */
  keptDirs: string[];
}

export interface UninstallOptions {
  systemctl: Systemctl;
  live: boolean;
  env?: NodeJS.ProcessEnv;
  /** Gate mode: also remove the service user and group install created. */
  removeUser?: boolean;
}

/** Undoes an install: each file gets its previous bytes back (or goes), created directories go when empty, added group memberships go. */
export function uninstall(scopeName: Scope, root: string | undefined, opts: UninstallOptions): UninstallResult {
  const scope = unitScope(scopeName, root, opts.env);
  requireRoot(scope, "uninstall");
  const record = readManifest(scope);
  if (!record) throw new FatalError("config_invalid", `nothing to uninstall: no install record at ${escapeText(onDisk(scope, manifestPath(scope)))}`);
  if (opts.removeUser && !record.gate) throw usageError("--remove-user: this install has no gate (no service user was created)");
  const sc = opts.systemctl;
  const result: UninstallResult = { done: [], kept: [], toRun: [], units: record.units, keptAccounts: [], keptDirs: [] };
  const ran = (...args: string[]) => result.done.push(`ran: ${escapeText(sc.commandLine(...args))}`);
  // Touch nothing unless every file is still what install wrote.
  for (const file of record.files) {
    const current = readIfExists(onDisk(scope, file.path));
    if (current && sha256(current) !== file.sha256) result.kept.push(onDisk(scope, file.path));
  }
  if (result.kept.length > 0) {
    throw new FatalError(
      "config_invalid",
      `changed since install: ${result.kept.map(escapeText).join(", ")}; nothing was removed. Put back what install wrote (or move your change elsewhere), then run uninstall again`,
    );
  }
  // Also what the operator enabled by hand after an install without systemd:
  // disabling is harmless either way. The gate's socket goes before its
  // service, so nothing starts the service again.
  const enabled = [...new Set([...record.enabled, ...record.services.filter((s) => s !== JANITOR_SERVICE)])];
  if (opts.live) {
    for (const unit of enabled) {
      const args = disableArgs(unit);
      if (sc.run(...args).code === 0) ran(...args);
    }
    // Persistent=true makes systemd keep the timer's last run in a stamp file of its own
    // (/var/lib/systemd/timers/, ~/.local/share/systemd/timers/): cleaned while the timer is
    // still loaded (once its file is gone, systemd no longer knows it).
    if (record.services.includes(JANITOR_TIMER)) {
      const args = ["clean", "--what=state", JANITOR_TIMER];
      const r = sc.run(...args);
      if (r.code === 0) ran(...args);
      else result.done.push(notDone("not cleaned", escapeText(sc.commandLine(...args)), r));
    }
  } else {
    for (const unit of enabled) result.toRun.push(sc.commandLine(...disableArgs(unit)));
  }
  // The watches of the Hermes profiles' files, which gate-secrets started (none starts them again: its path units are stopped).
  const profileWatches = record.files.some((f) => path.basename(f.path) === GATE_SECRETS_WATCH) ? [GATE_SECRETS_WATCHES] : [];
  for (const pattern of profileWatches) {
    if (!opts.live) result.toRun.push(sc.commandLine("stop", pattern));
    else if (sc.run("stop", pattern).code === 0) ran("stop", pattern);
  }
  for (const file of [...record.files].reverse()) {
    const real = onDisk(scope, file.path);
    const current = readIfExists(real);
    if (file.previous === null) {
      if (current) {
        fs.rmSync(real, { force: true });
        result.done.push(`removed ${escapeText(real)}`);
      }
    } else {
      writeFileAtomic(real, Buffer.from(file.previous, "base64"), { mode: file.previousMode ?? 0o644 });
      result.done.push(`restored ${escapeText(real)}`);
    }
  }
  if (record.gate) {
    const undone = undoGateAccounts(record.gate, { removeAccounts: opts.removeUser === true });
    result.done.push(...undone.done.map(escapeText));
    result.keptAccounts.push(...undone.kept);
    result.keptDirs.push(record.gate.outbox, record.gate.stateDir);
    // systemd made the socket's directory for the socket unit (DirectoryMode=) and
    // leaves it behind when the unit stops: once the socket is gone it is empty.
    if (opts.live && removeEmptyDir(path.dirname(record.gate.socket))) result.done.push(`removed ${escapeText(path.dirname(record.gate.socket))}`);
  } else {
    // The single-user outbox and state too: the user's published files (only those still there are named).
    result.keptDirs.push(...(record.serviceDirs ?? [record.outbox]).map((d) => onDisk(scope, d)).filter((d) => fs.existsSync(d)));
  }
  fs.rmSync(onDisk(scope, manifestPath(scope)), { force: true });
  for (const dir of [...record.dirs].reverse()) {
    try {
      fs.rmdirSync(dir);
    } catch {
      // Not empty any more: something else lives there now.
    }
  }
  if (opts.live) {
    if (sc.run("daemon-reload").code === 0) ran("daemon-reload");
    result.done.push(resetFailed(sc, [...record.services, ...profileWatches]));
  } else result.toRun.push(sc.commandLine("daemon-reload"));
  return result;
}

/**
 * A unit that failed stays listed as failed after its file is gone, until
 * reset. `systemctl reset-failed` exits 1 for a unit that is not loaded,
 * which after daemon-reload is each of ours that had not failed, though it
 * resets the others: so it is given only the units (names or patterns) that
 * systemd lists as failed, and the line says what happened.
 */
function resetFailed(sc: Systemctl, units: string[]): string {
  const listed = sc.run("list-units", "--all", "--state=failed", "--plain", "--no-legend", "--full", ...units);
  // A failed unit's line may start with a mark (older systemd prints it even with --plain).
  const failed = listed.stdout.split("\n").map((line) => line.trim().replace(/^[●*×]\s+/u, "").split(/\s+/)[0] ?? "").filter((unit) => unit !== "");
  const toReset = listed.code === 0 ? failed : units;
  if (toReset.length === 0) return "nothing to reset: no media-outbox unit is in the failed state";
  const r = sc.run("reset-failed", ...toReset);
  const line = escapeText(sc.commandLine("reset-failed", ...toReset));
  if (r.code === 0) return `ran: ${line}`;
  return notDone("not reset", line, r);
}

/** How uninstall takes a unit down: the gate's service, which its socket starts, is stopped; the others are disabled and stopped. */
function disableArgs(unit: string): string[] {
  return unit === GATE_SERVICE ? ["stop", unit] : ["disable", "--now", unit];
}

/** An uninstall line for a systemctl command (`line`, escaped) that failed: its exit code and the first line of what it said. */
function notDone(what: string, line: string, r: SystemctlResult): string {
  const said = r.stderr.trim().split("\n")[0]!;
  return `${what}: ${line} exited ${r.code}${said ? ` (${escapeText(said)})` : ""}`;
}
