// Gate mode (`install systemd --system --gate`): a dedicated system user owns
// the outbox and all of media-outbox's state and runs the pipeline behind a
// socket; the agents' users may connect and read what was published, nothing
// more. This module owns the gate's layout and placement rules, its accounts
// (the service user and group, the agents' membership), the code-integrity
// rule, and the gate's units; install.ts calls it for the rest (the gateway
// drop-ins, the manifest, systemctl).
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { type Config, SYSTEM_CONFIG, loadConfig } from "../config/config.js";
import { hermesRoot, readdirOrEmpty } from "../content/hermes-homes.js";
import { HERMES_STORES, HERMES_STORE_DIRS, PROFILE_FILES, USER_HOME_SECRET_FILES, profileFileFormat, storeDirFileNames, valuesWorthLookingFor } from "../content/known.js";
import type { SecretFileFormat } from "../content/secret-file-formats.js";
import { FatalError, isErrno, usageError } from "../core/errors.js";
import { escapeText } from "../core/escape.js";
import { SYSTEM_PREFIXES, resolveExisting } from "../safety/denylist.js";
import { isWithin } from "../safety/gateway.js";
import { type EnvFileRef, type ReadText, type UnitEnvironment, type UnitFiles, installDir, lenientDiskReader, onDisk, type UnitScope, unitHermesHome, variableSource } from "./gateway-units.js";
import { mkdirs, readIfExists } from "./files.js";
import { rootOwnedProblem } from "./root-owned.js";
import { GATE_SECRETS_WATCH, MAX_WATCHED_PROFILES, PROFILE_WATCHES, type ProfileListing, takeProfiles } from "./gate-profiles.js";
import { type AgentSecretFile, unitFileEnvironment } from "./gate-secrets.js";
import { type EnvironmentStores, LOCAL_OUTBOX_VAR, type UnitHermesEnvironment, dotenvSetsLocalOutbox, gatewayEnvironmentStores, unitHermesEnvironment } from "./hermes-environment.js";
import {
  DROP_IN_ENV_NAME,
  DROP_IN_NAME,
  GATE_SECRETS_NEW_PATH,
  GATE_SECRETS_PATH,
  GATE_SECRETS_SERVICE,
  GATE_SERVICE,
  GATE_SOCKET_UNIT,
  type GateParams,
  type ServiceParams,
  renderGateSecretsPath,
  renderGateSecretsService,
  renderGateSecretsWatch,
  renderGateService,
  renderGateSocket,
} from "./render.js";
import { assertUnitSafe } from "./systemd-syntax.js";
import { type PasswdEntry, allHomes, groupByName, isMember, userByName, userByNameOrUid } from "./users.js";

/** The install defaults of gate mode (COMMON contract): who, where, and the socket. */
export const GATE_USER = "media-outbox";
export const GATE_GROUP = "media-outbox";
export const GATE_OUTBOX = "/srv/media-outbox/outbox";
export const GATE_SOCKET_PATH = "/run/media-outbox/gate.sock";
/** Umask of the gate's services: published files and receipts are readable by the group (the agents), nothing by others. */
export const GATE_UMASK = "0027";

/** The gate keeps its state in `state` beside the outbox (same filesystem: publication is a rename). */
export const gateStateDir = (outbox: string) => path.join(path.dirname(outbox), "state");

/** What uninstall must know to undo the accounts part of an install. */
export interface GateRecord {
  user: string;
  group: string;
  createdUser: boolean;
  createdGroup: boolean;
  /** Agent users install added to the group (not those already members). */
  addedMembers: string[];
  outbox: string;
  stateDir: string;
  socket: string;
}

export interface GateInstallOptions {
  /** Users whose agents (and gateways) may connect and read published files (`--agent-user`). */
  agentUsers: string[];
  /** The outbox (`--outbox`); default GATE_OUTBOX. */
  outbox?: string;
  /** The gate's config file (`--config`, or MEDIA_OUTBOX_CONFIG): its policy; never root's own default config by accident. */
  configFile?: string;
}

export interface GateDir {
  path: string;
  mode: number;
  /** root: root-owned; service: the service user and group. */
  owner: "root" | "service";
}

export interface GatePlan {
  user: string;
  group: string;
  /** The accounts as found: created at apply when missing. */
  userExists: boolean;
  groupExists: boolean;
  /** Every user that must be in the group (named, and the covered gateways' users). */
  agentUsers: string[];
  /** Those not members yet: install adds them, uninstall removes them again. */
  newMembers: string[];
  outbox: string;
  stateDir: string;
  socket: string;
  /** The configuration as the gate's services will resolve it (their environment, the config file). */
  serviceConfig: Config;
  environment: Record<string, string>;
  /** The agents' Hermes .env files and credential stores, then the gateways' own systemd files (gatewaySecretFiles), then the stores of the agent users' homes (userHomeSecretFiles): the gate's secrets are copied from them at each start, each read as its user. */
  secrets: AgentSecretFile[];
  /** Those that did not exist at install: GATE_SECRETS_NEW_PATH watches them, GATE_SECRETS_PATH the others. */
  newSecretFiles: string[];
  /** Directories to create (in this order) or set right. */
  dirs: GateDir[];
  notes: string[];
}

/** A gateway unit as install covers it: whose it is and which Hermes home it reads. */
export interface GatewayOwner {
  unit: string;
  user?: string;
  hermesHome?: string;
  /** Its EnvironmentFile= files (not media-outbox's own). */
  environmentFiles?: EnvFileRef[];
  /** Its unit file and drop-ins (not media-outbox's own). */
  unitFiles?: string[];
  /** The unit file that sets MEDIA_OUTBOX_DIR for it, if one does. */
  localOutboxFrom?: string;
  /** What its unit sets of CODEX_HOME, HOME, HERMES_MANAGED_DIR and the credential files' variables: where its Hermes reads the Codex CLI's auth.json, the managed scope, the shared Nous store and a Google key (hermes-environment.ts). */
  hermesEnvironment?: UnitHermesEnvironment;
}

/**
 * In an agent's environment this variable means local mode (config.ts's
 * discovery): its prepare would publish into a directory of its own and never
 * ask the gate. The gateway's environment is its agents', so neither the
 * gateway's unit nor a Hermes .env (loaded into it) may set it. The rule
 * (dotenvSetsLocalOutbox) lives in hermes-environment.ts: gate-secrets
 * applies it to a managed scope it follows at run time.
 */
export { LOCAL_OUTBOX_VAR };

/**
 * Whether a Hermes .env file (one that can be read) sets MEDIA_OUTBOX_DIR.
 * The file is the agent's to replace: a FIFO or a device there is never
 * waited on (readIfExists), it just sets nothing.
 */
export function envFileSetsLocalOutbox(file: string, scope: Pick<UnitScope, "root">): boolean {
  let bytes: Buffer | undefined;
  try {
    bytes = readIfExists(onDisk(scope as UnitScope, file));
  } catch {
    return false;
  }
  return bytes !== undefined && dotenvSetsLocalOutbox(bytes);
}

/**
 * The managed .env each gateway's Hermes loads (its HERMES_MANAGED_DIR's, else
 * /etc/hermes's: hermes-environment.ts resolves it) where it sets
 * MEDIA_OUTBOX_DIR: every agent of that gateway loads it.
 */
export function managedLocalOutboxes(gateways: GatewayOwner[], scope: Pick<UnitScope, "root">): { unit: string; file: string }[] {
  return gateways.flatMap((g) => {
    const localOutbox = gatewayStores(g, scope)?.stores.localOutbox;
    return localOutbox === undefined ? [] : [{ unit: g.unit, file: localOutbox }];
  });
}

/** A gateway's environment stores as hermes-environment.ts resolves them, with its user's name; none for a User= not in the passwd database. */
function gatewayStores(g: GatewayOwner, scope: Pick<UnitScope, "root">): { user: string; stores: EnvironmentStores } | undefined {
  const user = gatewayUserName(g, scope);
  if (user === undefined) return undefined;
  return { user, stores: gatewayEnvironmentStores({ unit: g.unit, user, hermesHome: g.hermesHome, environment: g.hermesEnvironment }, scope) };
}

/** Why a credential file's variable a gateway's Hermes sees (HERMES_SHARED_AUTH_DIR, VERTEX_CREDENTIALS_PATH, GOOGLE_APPLICATION_CREDENTIALS) is not followed, for each gateway (escaped). */
export function unfollowedCredentialFiles(gateways: GatewayOwner[], scope: Pick<UnitScope, "root">): string[] {
  return gateways.flatMap((g) => gatewayStores(g, scope)?.stores.credentialNotes ?? []);
}

/** Refuses a gate its agents would never use: a gateway unit or a Hermes .env (a home's, a profile's, a managed one) that sets MEDIA_OUTBOX_DIR. */
function checkNoLocalOutbox(gateways: GatewayOwner[], envFiles: string[], scope: Pick<UnitScope, "root">): void {
  const setters = gateways.filter((g) => g.localOutboxFrom).map((g) => `${escapeText(g.unit)} (in ${escapeText(g.localOutboxFrom!)})`);
  const files = new Set([...envFiles.filter((f) => envFileSetsLocalOutbox(f, scope)), ...managedLocalOutboxes(gateways, scope).map((m) => m.file)]);
  setters.push(...[...files].map(escapeText));
  if (setters.length > 0) {
    throw usageError(`${LOCAL_OUTBOX_VAR} is set for the agents by ${setters.join(", ")}: their prepare would publish into that directory instead of handing files to the gate. Remove it there, then run install again`);
  }
}

const isDenied = (p: string) => SYSTEM_PREFIXES.find((prefix) => isWithin(p, prefix));

/**
 * Refuses a gate outbox the agents (or the gateway's denylist) could defeat:
 * under a home (the agent's, or anyone's), under a prefix the gateway never
 * sends from, under /tmp (the services' PrivateTmp= hides it), or below a
 * directory someone other than root could change.
 */
export function checkGatePlacement(outbox: string, stateDir: string, scope: Pick<UnitScope, "root">): void {
  for (const [what, dir] of [
    ["outbox", outbox],
    ["state directory", stateDir],
  ] as const) {
    const home = [...allHomes(scope.root), "/home", "/root"].find((h) => h !== "/" && h !== "" && isWithin(dir, h) && !isDenied(h));
    if (home) throw usageError(`the gate's ${what} ${escapeText(dir)} lies under the home ${escapeText(home)}; a home's owner could change it. Choose a directory such as ${GATE_OUTBOX}`);
    const denied = isDenied(dir);
    if (denied) throw usageError(`the gate's ${what} ${escapeText(dir)} lies under ${denied}, which the gateway never sends from; choose a directory such as ${GATE_OUTBOX}`);
    for (const tmp of ["/tmp", "/var/tmp", "/dev/shm", "/run"]) {
      if (isWithin(dir, tmp)) throw usageError(`the gate's ${what} ${escapeText(dir)} lies under ${tmp} (shared or emptied at boot); choose a directory such as ${GATE_OUTBOX}`);
    }
    const problem = rootOwnedProblem(path.dirname(dir), scope);
    if (problem) throw usageError(`every directory above the gate's ${what} ${escapeText(dir)} must belong to root and be writable by nobody else: ${problem}`);
  }
}

/** A directory install creates or reuses: an existing one must be a real directory of the service user (or root, to be handed over). */
function checkExistingDir(dir: string, what: string, service: PasswdEntry | undefined, scope: Pick<UnitScope, "root">): void {
  let st: fs.Stats;
  try {
    st = fs.lstatSync(onDisk(scope as UnitScope, dir));
  } catch (err) {
    if (isErrno(err, "ENOENT")) return;
    throw err;
  }
  if (!st.isDirectory()) throw usageError(`the gate's ${what} ${escapeText(dir)} exists and is not a directory; move it away`);
  const owners = [0, ...(service ? [service.uid] : [])];
  if (!owners.includes(st.uid)) {
    throw usageError(`the gate's ${what} ${escapeText(dir)} exists and belongs to uid ${st.uid}; it must belong to ${GATE_USER} (or root): move it away or choose another --outbox`);
  }
}

/** Directories the units' hardening (deploy/systemd/hardening.conf) replaces with empty ones of their own. */
const HIDDEN_FROM_UNITS: readonly (readonly [string, string])[] = [
  ["/tmp", "PrivateTmp="],
  ["/var/tmp", "PrivateTmp="],
  ["/dev", "PrivateDevices="],
];

/**
 * The code the gate runs as its service user: node, and this package (bin,
 * dist, node_modules, package.json). Whoever can change it runs as the gate,
 * so it must belong to root and be writable by nobody else.
 */
export function checkGateCode(node: string, packageRoot: string): void {
  // `npm install -g DIR` links the global package to DIR (the clone stays its owner's): only --install-links makes root's copy.
  const howTo = "Install a copy of media-outbox owned by root (as root, in the clone: npm install -g --install-links .) and run install from there";
  const refuse = (problem: string) => usageError(`the gate would run code others can change: ${problem}. ${howTo}`);
  const unreadable = (problem: string) => usageError(`the gate's user could not run it: ${problem}. ${howTo}`);
  for (const p of [node, packageRoot]) {
    const real = resolveExisting(p);
    const hidden = HIDDEN_FROM_UNITS.find(([dir]) => isWithin(real, dir));
    if (hidden) throw unreadable(`${escapeText(real)} lies under ${hidden[0]}, which the gate's unit hides from it (${hidden[1]})`);
    const problem = rootOwnedProblem(p, {});
    if (problem) throw refuse(problem);
    const unreachable = unreachableProblem(path.dirname(p), {});
    if (unreachable) throw unreadable(unreachable);
  }
  if (!(fs.statSync(node).mode & 0o001)) throw unreadable(`${escapeText(node)} cannot be run by other users`);
  const walk = (p: string, mustRead: boolean): void => {
    let st: fs.Stats;
    try {
      st = fs.lstatSync(p);
    } catch (err) {
      if (isErrno(err, "ENOENT")) return;
      throw err;
    }
    if (st.uid !== 0) throw refuse(`${escapeText(p)} belongs to uid ${st.uid}, not root`);
    if (!st.isSymbolicLink() && st.mode & 0o022) throw refuse(`${escapeText(p)} is writable by its group or others`);
    if (mustRead && !st.isSymbolicLink() && !(st.mode & (st.isDirectory() ? 0o005 : 0o004))) throw unreadable(`${escapeText(p)} cannot be read by other users`);
    if (st.isDirectory()) for (const name of fs.readdirSync(p)) walk(path.join(p, name), mustRead);
  };
  // What the gate loads must also be readable by it; node_modules only needs to be root's.
  for (const part of ["bin", "dist", "package.json", "deploy"]) walk(path.join(packageRoot, part), true);
  walk(path.join(packageRoot, "node_modules"), false);
}

/** Why the service user (nobody in particular: it reaches files as "others") cannot get into `dir`. */
function unreachableProblem(dir: string, scope: Pick<UnitScope, "root">): string | undefined {
  for (let d = resolveExisting(onDisk(scope as UnitScope, dir)); ; d = path.dirname(d)) {
    if (!(fs.statSync(d).mode & 0o001)) return `${escapeText(d)} cannot be entered by other users`;
    if (d === path.dirname(d)) return undefined;
  }
}

/** The Hermes homes whose files the gate copies: those there, or whose directory is (Hermes set up after the gate). */
const homesThere = (homes: { home: string; user: string }[], scope: Pick<UnitScope, "root">) =>
  homes.filter(({ home }) => isDirectoryOnDisk(home, scope) || isDirectoryOnDisk(path.dirname(home), scope));

/**
 * The agents' Hermes secret files, each with the user it is read as
 * (gate-secrets copies them for the gate at each start: deploy/gate-secrets.ts):
 * the .env files first (their copies keep the numbers they had before the
 * stores were named), then the stores (JSON and config.yaml) and the store directories (mcp-tokens/, google_chat_user_tokens/).
 *
 * A Hermes home's own .env is named even before it exists, when the home or
 * the directory it would be made in does (Hermes set up after the gate): the
 * path unit that watches it sees it created, and the gate knows its values
 * from then on. The stores (JSON and config.yaml) of the home are named even
 * before they exist, optional (most never will: a host without Google has no
 * google_token.json; auth.json appears on the first `hermes auth`), and so
 * are the store directories (MCP token files), whose files gate-secrets
 * copies whatever they are (a server added after install is known once its
 * token is written). Its profiles are not named one by one: its profiles
 * directory is (profilesDirectories), last on the line.
 */
function hermesSecretFiles(homes: { home: string; user: string }[], scope: Pick<UnitScope, "root">): AgentSecretFile[] {
  const there = homesThere(homes, scope);
  return [...there.map(({ home, user }) => ({ user, file: path.join(home, ".env") })), ...there.flatMap(({ home, user }) => storesOf(home).map((file) => ({ user, file, optional: true })))];
}

/**
 * Each Hermes home's profiles directory (`USER:?profiles:HOME/profiles/`),
 * named whether it exists or not: gate-secrets lists it at each run and
 * copies each profile's .env and stores, a profile made after install too
 * (`hermes profile create`), and watches them (gate-profiles.ts); the path
 * units watch the directory itself, where a profile is made or goes. Last
 * on the line: the copies of what was named before keep their numbers.
 */
function profilesDirectories(homes: { home: string; user: string }[], scope: Pick<UnitScope, "root">): AgentSecretFile[] {
  return homesThere(homes, scope).map(({ home, user }) => ({ user, file: `${path.join(home, "profiles")}/`, optional: true, profiles: true }));
}

/**
 * Each covered gateway unit, for gate-secrets to resolve its environment at
 * each run (`USER:?gateway:/etc/systemd/system/UNIT`, named by its path in
 * the directory install writes its drop-ins in; USER its User=): what its
 * CODEX_HOME and HERMES_MANAGED_DIR move now (set after install in its
 * unit, an environment file, its Hermes .env or the managed one) is copied
 * and watched, the managed .env checked as install checks it
 * (gate-secrets.ts followGateway). Last on the line.
 */
function gatewaysFollowed(gateways: GatewayOwner[], scope: UnitScope): AgentSecretFile[] {
  return gateways.flatMap((g) => {
    const user = gatewayUserName(g, scope);
    return user === undefined ? [] : [{ user, file: path.join(installDir(scope), g.unit), optional: true, gateway: true }];
  });
}

/**
 * The stores of each agent user's home that local mode reads besides the
 * Hermes files (known.ts USER_HOME_SECRET_FILES: other agents' CLIs' OAuth
 * tokens, Docker's registry logins, the AWS, PostgreSQL and git
 * credentials), for each user
 * whose Hermes files the gate copies, in the home /etc/passwd gives it, when
 * that home is there: each named optional, even before it exists (most
 * hosts have one CLI or none; a `docker login` after install is copied once
 * written), and watched as the Hermes stores are: a CLI refreshes its OAuth
 * token while the gate runs for weeks. The Codex CLI's is named in ~/.codex
 * here, and also where a gateway's CODEX_HOME puts it (environmentStoreFiles).
 */
function userHomeSecretFiles(users: string[], scope: Pick<UnitScope, "root">): AgentSecretFile[] {
  return [...new Set(users)].flatMap((user) => {
    const home = passwdHome(user, scope);
    return home !== undefined && isDirectoryOnDisk(home, scope) ? homeStorePaths(home).map((file) => ({ user, file, optional: true })) : [];
  });
}

/** Where the stores of USER_HOME_SECRET_FILES lie in a home. */
const homeStorePaths = (home: string) => USER_HOME_SECRET_FILES.map((store) => path.join(home, store));

/** The home /etc/passwd gives `user`: undefined for a user not there, or a home that is no absolute path. */
function passwdHome(user: string, scope: Pick<UnitScope, "root">): string | undefined {
  const home = userByName(user, scope.root)?.home;
  return home !== undefined && path.isAbsolute(home) ? home : undefined;
}

/** The stores of `user`'s home that the gate copies (userHomeSecretFiles), whether they exist or not. */
export function userHomeStoreFiles(user: string, scope: Pick<UnitScope, "root">): string[] {
  const home = passwdHome(user, scope);
  return home === undefined ? [] : homeStorePaths(home);
}

/** Those of them that exist now (that the caller may look at): doctor compares them with those the gate's units name. */
export function userHomeStoresNow(user: string, scope: Pick<UnitScope, "root">): string[] {
  return userHomeStoreFiles(user, scope).filter((file) => isFileOnDisk(file, scope));
}

/**
 * Whose a gateway unit is, from its files and environment as systemd reads
 * them (`read`: install's reader, which refuses what it cannot read, or
 * doctor's, which passes over what its user may not): its User=, the files
 * of its own environment, its Hermes home and what its Hermes reads.
 * Install plans the gate from it, doctor compares the gate's units with it.
 */
export function gatewayOwnerOf(scope: UnitScope, unit: string, files: UnitFiles, env: UnitEnvironment, read: ReadText): GatewayOwner {
  const hermesHome = unitHermesHome(variableSource(scope, env, "HERMES_HOME", read).value);
  return {
    unit,
    ...(env.user ? { user: env.user } : {}),
    ...gatewayEnvironmentSources(scope, files, env),
    ...(hermesHome ? { hermesHome } : {}),
    hermesEnvironment: unitHermesEnvironment(scope, env, read),
  };
}

/**
 * The files that make a gateway's own environment: its EnvironmentFile=
 * files and its unit file and drop-ins, not media-outbox's drop-in or
 * environment file (the media policy: no secret).
 */
function gatewayEnvironmentSources(scope: UnitScope, files: UnitFiles, env: UnitEnvironment): Pick<GatewayOwner, "environmentFiles" | "unitFiles"> {
  const ours = (f: string) => [DROP_IN_NAME, DROP_IN_ENV_NAME].includes(path.basename(f)) && path.dirname(path.dirname(f)) === installDir(scope);
  return {
    environmentFiles: env.environmentFiles.filter((ref) => ref.path === undefined || !ours(ref.path)),
    unitFiles: [files.fragment, ...files.dropIns].filter((f): f is string => f !== undefined && !ours(f)),
  };
}

/**
 * What each gateway's unit gives it that the gate must know too (gate-secrets
 * copies it, read as the gateway's user, or as root where systemd's alone):
 * each EnvironmentFile= (optional when marked `-`), and each unit file or
 * drop-in whose Environment= sets a value the content checks would look for
 * (one of other settings only is not named: doctor names it once it sets one).
 */
export function gatewaySecretFiles(gateways: GatewayOwner[], scope: Pick<UnitScope, "root">, notes: string[]): AgentSecretFile[] {
  const read = lenientDiskReader(scope);
  const files: AgentSecretFile[] = [];
  for (const g of gateways) {
    const user = gatewayUserName(g, scope);
    if (user === undefined) {
      if ((g.environmentFiles ?? []).length > 0 || (g.unitFiles ?? []).length > 0) notes.push(`${escapeText(g.unit)} runs as ${escapeText(g.user!)}, which is not in /etc/passwd: the gate will not know the values of its EnvironmentFile= and Environment=`);
      continue;
    }
    for (const ref of g.environmentFiles ?? []) {
      if (ref.path === undefined || /[*?[]/.test(ref.path)) {
        notes.push(`EnvironmentFile=${escapeText(ref.raw)} of ${escapeText(g.unit)} names no one file (a glob, or a specifier media-outbox cannot expand): the gate will not know its values`);
      } else files.push({ user, file: ref.path, kind: "environment-file", ...(ref.optional ? { optional: true } : {}) });
    }
    for (const file of g.unitFiles ?? []) {
      const setsSecret = unitFileEnvironment(read(file) ?? "").some(({ name, value }) => valuesWorthLookingFor(name, value).length > 0);
      if (setsSecret) files.push({ user, file, kind: "unit-file" });
    }
  }
  return files;
}

/**
 * The stores each gateway's environment moves, as its Hermes resolves that
 * environment (hermes-environment.ts: the unit's, then the Hermes .env, then
 * the managed one): the Codex CLI's auth.json where its CODEX_HOME puts it
 * (its copy read as ~/.codex/auth.json's is, named for its place), the managed scope's .env and
 * config.yaml where its HERMES_MANAGED_DIR does; named optional (Hermes reads
 * auth.json once the CLI logs in), read as the gateway's user. A value that
 * cannot be followed (relative, `${...}`) is a note. Where CODEX_HOME is
 * ~/.codex, the home's store is named already.
 */
export function environmentStoreFiles(gateways: GatewayOwner[], scope: Pick<UnitScope, "root">, notes: string[]): AgentSecretFile[] {
  const files: AgentSecretFile[] = [];
  for (const g of gateways) {
    const resolved = gatewayStores(g, scope);
    if (resolved === undefined) continue;
    const { user, stores: found } = resolved;
    notes.push(...found.notes);
    files.push(...found.files.map(({ file, store }) => ({ user, file, optional: true, store })));
  }
  return files;
}

/** The files of secrets as the gate's units name them: each once, each one a unit can carry. */
function nameableSecretFiles(all: AgentSecretFile[], notes: string[], scope: Pick<UnitScope, "root">): AgentSecretFile[] {
  const files: AgentSecretFile[] = [];
  for (const f of all) {
    // A gateway's unit file may be named for its Environment= too (unit-file:): named once as each.
    if (files.some((o) => o.file === f.file && !o.gateway === !f.gateway)) continue;
    try {
      assertUnitSafe(f.file, "secret file");
      files.push(f);
    } catch {
      notes.push(`${escapeText(f.file)} cannot be named in a unit (a quote, backslash or control character): the gate will not know its secrets`);
    }
  }
  // The profiles there now are watched too (PROFILE_WATCHES each, MAX_WATCHED_PROFILES of a home at most).
  const profiles = files.filter((f) => f.profiles).reduce((n, f) => n + Math.min(takenProfileDirs(f.file, scope).length, MAX_WATCHED_PROFILES), 0);
  const watches = files.length + PROFILE_WATCHES * profiles;
  const instances = inotifyInstancesAllowed();
  if (instances !== undefined && watches > instances / 2) {
    const what = profiles > 0 ? `${files.length} files, and the watches of ${profiles} Hermes profile(s) ${PROFILE_WATCHES * profiles} more,` : `${files.length} files,`;
    notes.push(
      `${GATE_SECRETS_PATH} and ${GATE_SECRETS_NEW_PATH} watch ${what} and systemd gives each its own inotify instance, of the ${instances} root may have (fs.inotify.max_user_instances): if one cannot start, a changed file is copied for the gate at its next start only (doctor says so); raise that limit`,
    );
  }
  return files;
}

/** fs.inotify.max_user_instances of this machine: each PathChanged= of a path unit takes one of PID 1's (systemd's PathSpec). */
function inotifyInstancesAllowed(): number | undefined {
  let n: number;
  try {
    n = Number(fs.readFileSync("/proc/sys/fs/inotify/max_user_instances", "utf8").trim());
  } catch {
    return undefined;
  }
  return Number.isInteger(n) && n > 0 ? n : undefined;
}

/**
 * A Hermes home's (or profile's) stores, each named whether it exists or
 * not, and its store directories, one file per MCP server or chat user (named with a trailing "/":
 * gate-secrets copies each file in it, so a server added after install is
 * known at once).
 */
function storesOf(dir: string): string[] {
  return [...HERMES_STORES.map((store) => path.join(dir, store)), ...HERMES_STORE_DIRS.map((name) => `${path.join(dir, name)}/`)];
}

/** The files of a Hermes home's (or profile's) store directories that exist now: what the content checks read there (src/content/known.ts). */
function storeDirFiles(dir: string, scope: Pick<UnitScope, "root">): string[] {
  return HERMES_STORE_DIRS.flatMap((name) => storeDirectoryFiles(path.join(dir, name), scope));
}

/** The files of one store directory (mcp-tokens/) that exist now, that the caller may list. */
export function storeDirectoryFiles(dir: string, scope: Pick<UnitScope, "root">): string[] {
  return storeDirFileNames(readdirSorted(dir, scope))
    .map((file) => path.join(dir, file))
    .filter((file) => isFileOnDisk(file, scope));
}

/**
 * The profiles of a profiles directory (`HOME/profiles/`) gate-secrets takes
 * now (gate-profiles.ts takeProfiles: no link, no control character, at
 * most MAX_PROFILES), as the caller sees them.
 */
export function takenProfileDirs(profilesDir: string, scope: Pick<UnitScope, "root">): string[] {
  return profileListing(profilesDir, scope).profiles.map((p) => p.dir);
}

/** gate-profiles.ts takeProfiles of a profiles directory (with or without its trailing "/"), listed and looked at as the caller. */
function profileListing(profilesDir: string, scope: Pick<UnitScope, "root">): ProfileListing {
  const dir = profilesDir.endsWith("/") ? profilesDir.slice(0, -1) : profilesDir;
  return takeProfiles(dir, readdirSorted(dir, scope), (p) => fs.lstatSync(onDisk(scope as UnitScope, p)));
}

/** The profile directories of a Hermes home (profiles/NAME) that exist now, in their names' order. */
function profileDirs(home: string, scope: Pick<UnitScope, "root">): string[] {
  const profiles = path.join(home, "profiles");
  return readdirSorted(profiles, scope)
    .map((name) => path.join(profiles, name))
    .filter((dir) => isDirectoryOnDisk(dir, scope));
}

/** The files that hold secrets and exist now in the profiles gate-secrets takes of a profiles directory (takenProfileDirs): what the gate has copies of, each with how it is read. */
export function profileSecretFilesNow(profilesDir: string, scope: Pick<UnitScope, "root">): { file: string; format: SecretFileFormat }[] {
  return takenProfileDirs(profilesDir, scope)
    .flatMap((dir) => [...PROFILE_FILES.map((store) => ({ file: path.join(dir, store), format: profileFileFormat(store) })), ...storeDirFiles(dir, scope).map((file) => ({ file, format: "json" as const }))])
    .filter(({ file }) => isFileOnDisk(file, scope));
}

/** The profiles gate-secrets watches of a profiles directory now (the first MAX_WATCHED_PROFILES it takes), as the caller sees them. */
export function watchedProfileDirs(profilesDir: string, scope: Pick<UnitScope, "root">): string[] {
  return profileListing(profilesDir, scope)
    .profiles.filter((p) => p.watched)
    .map((p) => p.dir);
}

/**
 * What gate-secrets does not take of a profiles directory now, as the caller
 * sees it: refused entries (escaped why), those past MAX_PROFILES (named, as
 * listed: the caller escapes them) and how many more; and the profiles it
 * copies but does not watch (past MAX_WATCHED_PROFILES).
 */
export function untakenProfiles(profilesDir: string, scope: Pick<UnitScope, "root">): Pick<ProfileListing, "refused" | "past" | "more"> & { unwatched: string[] } {
  const { refused, past, more, profiles } = profileListing(profilesDir, scope);
  return { refused, past, more, unwatched: profiles.filter((p) => !p.watched).map((p) => p.dir) };
}

/**
 * The files of a Hermes home and of its profiles that hold secrets and exist
 * now: each .env, store and store directory's file. Doctor compares them with
 * those the gate's units name. What the caller may not list is not there.
 */
export function hermesSecretFilesNow(home: string, scope: Pick<UnitScope, "root">): string[] {
  return [home, ...profileDirs(home, scope)]
    .flatMap((dir) => [path.join(dir, ".env"), ...HERMES_STORES.map((store) => path.join(dir, store)), ...storeDirFiles(dir, scope)])
    .filter((file) => isFileOnDisk(file, scope));
}

/**
 * The Hermes home a secret file the gate's units name belongs to: its .env,
 * one of its stores, store directories (mcp-tokens/) or their files, or the same of one of its profiles.
 * Undefined for a file of none of these shapes. A store of a user's home
 * can have one (~/.codex/auth.json): callers set those apart first
 * (userHomeStoreFiles).
 */
export function hermesHomeOf(file: string): string | undefined {
  if (file.endsWith("/profiles/")) return path.dirname(file.slice(0, -1));
  let dir: string;
  if (HERMES_STORE_DIRS.some((name) => file.endsWith(`/${name}/`) || path.basename(path.dirname(file)) === name)) dir = file.endsWith("/") ? path.dirname(file) : path.dirname(path.dirname(file));
  else {
    const name = [".env", ...HERMES_STORES].find((n) => file.endsWith(`/${n}`));
    if (name === undefined) return undefined;
    dir = file.slice(0, -name.length - 1);
  }
  return path.basename(path.dirname(dir)) === "profiles" ? path.dirname(path.dirname(dir)) : dir;
}

function readdirSorted(dir: string, scope: Pick<UnitScope, "root">): string[] {
  return readdirOrEmpty(onDisk(scope as UnitScope, dir));
}

function isDirectoryOnDisk(p: string, scope: Pick<UnitScope, "root">): boolean {
  try {
    return fs.statSync(onDisk(scope as UnitScope, p)).isDirectory();
  } catch {
    return false;
  }
}

/** Whether `p` is there, whatever it is (not followed if a link; systemd watches a path that is not through its directory). */
export function existsOnDisk(p: string, scope: Pick<UnitScope, "root">): boolean {
  try {
    fs.lstatSync(onDisk(scope as UnitScope, p));
    return true;
  } catch {
    return false;
  }
}

function isFileOnDisk(p: string, scope: Pick<UnitScope, "root">): boolean {
  try {
    return fs.statSync(onDisk(scope as UnitScope, p)).isFile();
  } catch {
    return false;
  }
}

/** The name of the user a gateway runs as (a system unit without User= runs as root), or undefined when /etc/passwd does not know its User=. */
function gatewayUserName(g: GatewayOwner, scope: Pick<UnitScope, "root">): string | undefined {
  return g.user === undefined ? "root" : userByNameOrUid(g.user, scope.root)?.name;
}

/**
 * Each Hermes home the gate's secrets come from, with the user whose it is (a
 * gateway's, an agent's); last, the shared Hermes root of each gateway whose
 * HERMES_HOME is a profile's home (gatewayHermesRoot), not named already: a
 * gateway of profile NAME run as root, or as a user whose passwd home is not
 * the root's (`/opt/data/profiles/NAME`), names no agent whose ~/.hermes it
 * is. Its profiles directory is named with it, so the profile's siblings are
 * copied too. Last: the .env files named before keep their copies' numbers.
 */
function hermesHomes(gateways: GatewayOwner[], agents: PasswdEntry[], scope: Pick<UnitScope, "root">, notes: string[]): { home: string; user: string }[] {
  const homes: { home: string; user: string }[] = [];
  const roots: { home: string; user: string }[] = [];
  for (const g of gateways) {
    if (g.hermesHome === undefined) continue;
    const user = gatewayUserName(g, scope);
    if (user === undefined) notes.push(`${escapeText(g.unit)} runs as ${escapeText(g.user!)}, which is not in /etc/passwd: the gate will not know the secrets of ${escapeText(g.hermesHome)}`);
    else {
      homes.push({ home: g.hermesHome, user });
      const root = gatewayHermesRoot(g, g.hermesHome, user, scope);
      if (root !== g.hermesHome) roots.push({ home: root, user });
    }
  }
  for (const a of agents) homes.push({ home: path.join(a.home, ".hermes"), user: a.name });
  homes.push(...roots);
  return homes.filter((h, i) => homes.findIndex((o) => o.home === h.home) === i);
}

/**
 * The shared Hermes root of a gateway's Hermes home, as its Hermes derives it
 * (hermes-homes.ts hermesRoot), with the HOME it runs with: its unit's, else
 * its user's passwd home (systemd's for User=). Under --root the target's
 * links are not seen through: its paths are judged as written.
 */
function gatewayHermesRoot(g: GatewayOwner, hermesHome: string, user: string, scope: Pick<UnitScope, "root">): string {
  const home = g.hermesEnvironment?.HOME?.value ?? userByName(user, scope.root)?.home;
  const resolve = scope.root ? (p: string) => path.resolve(p) : resolveExisting;
  // No home known: only the rule for a profile's home outside ~/.hermes (its parent named profiles) applies.
  return hermesRoot(hermesHome, home !== undefined && path.isAbsolute(home) ? home : "/nonexistent", resolve);
}

/** The users that must be in the gate's group: those named, and every covered gateway's own (non-root) user. */
function agentUsersFor(named: string[], gateways: GatewayOwner[], scope: Pick<UnitScope, "root">, notes: string[]): PasswdEntry[] {
  const found = new Map<string, PasswdEntry>();
  for (const name of named) {
    const entry = userByName(name, scope.root);
    if (!entry) throw usageError(`--agent-user ${escapeText(name)}: no such user`);
    if (entry.uid === 0) throw usageError("--agent-user root: root needs no membership, and an agent running as root defeats the gate");
    if (name === GATE_USER) throw usageError(`--agent-user ${GATE_USER}: that is the service user itself`);
    found.set(entry.name, entry);
  }
  for (const g of gateways) {
    if (!g.user) continue;
    const entry = userByNameOrUid(g.user, scope.root);
    if (!entry) {
      notes.push(`${escapeText(g.unit)} runs as ${escapeText(g.user)}, which is not in /etc/passwd (a template's %i?): name that user with --agent-user, or the gateway cannot read published files`);
      continue;
    }
    if (entry.uid === 0 || found.has(entry.name)) continue;
    if (entry.name === GATE_USER) throw usageError(`${escapeText(g.unit)} runs as ${GATE_USER}, the gate's own user: run the gateway as the agent's user`);
    notes.push(`${escapeText(g.unit)} runs as ${escapeText(entry.name)}: it joins group ${GATE_GROUP} to read published files`);
    found.set(entry.name, entry);
  }
  if (found.size === 0) throw usageError(`no agent user: name the user the agent runs as with --agent-user USER (the gateway units found run as root)`);
  return [...found.values()];
}

export interface PlanGateInput {
  scope: UnitScope;
  gate: GateInstallOptions;
  /** The configuration install was run with (its config file, if any, becomes the gate's). */
  config: Config;
  gateways: GatewayOwner[];
  node: string;
  packageRoot: string;
  /** Whether the plan will be applied (a dry run checks what it can, and names accounts that do not exist yet). */
  apply: boolean;
}

/** Everything gate mode adds to an install, checked; changes nothing. */
export function planGate(input: PlanGateInput): GatePlan {
  const { scope, gate } = input;
  if (scope.scope !== "system") throw usageError("--gate installs system units (a system user owns the outbox): use --system, not --user");
  if (scope.root && input.apply) throw usageError("--gate creates a system user and directories on the running system: it takes --root only with --dry-run");
  const notes: string[] = [];
  const outbox = gate.outbox ?? GATE_OUTBOX;
  if (!path.isAbsolute(outbox)) throw usageError(`--outbox must be an absolute path, got ${escapeText(outbox)}`);
  const stateDir = gateStateDir(outbox);
  checkGatePlacement(outbox, stateDir, scope);

  const service = userByName(GATE_USER, scope.root);
  const group = groupByName(GATE_GROUP, scope.root);
  if (service && group && service.gid !== group.gid) {
    throw usageError(`the existing user ${GATE_USER} has another primary group than ${GATE_GROUP} (gid ${service.gid}); make ${GATE_GROUP} its primary group, or remove both and install again`);
  }
  if (service && service.uid === 0) throw usageError(`the existing user ${GATE_USER} has uid 0`);
  checkExistingDir(outbox, "outbox", service, scope);
  checkExistingDir(stateDir, "state directory", service, scope);
  checkGateCode(input.node, input.packageRoot);

  const agents = agentUsersFor(gate.agentUsers, input.gateways, scope, notes);
  const newMembers = agents.filter((a) => !group || !isMember(a, group)).map((a) => a.name);

  // The configuration exactly as the gate's services will resolve it: their
  // environment, their config file (the one install was given, if any).
  const configFile = gate.configFile;
  if (configFile) {
    const problem = rootOwnedProblem(configFile, scope);
    if (problem) throw usageError(`the gate's config file ${escapeText(configFile)} must belong to root and be writable by nobody else: ${problem}`);
    const unreadable = unreachableProblem(path.dirname(configFile), scope) ?? (fs.statSync(onDisk(scope, configFile)).mode & 0o004 ? undefined : `${escapeText(configFile)} cannot be read by other users`);
    if (unreadable) throw usageError(`the gate's user could not read its config file: ${unreadable}; put it in /etc/media-outbox/ with mode 0644`);
  }
  const environment: Record<string, string> = { MEDIA_OUTBOX_DIR: outbox, MEDIA_OUTBOX_STATE_DIR: stateDir, ...(configFile ? { MEDIA_OUTBOX_CONFIG: configFile } : {}) };
  const serviceConfig = loadConfig({ ...(configFile ? { config: configFile } : {}), outbox, env: { HOME: service?.home ?? "/nonexistent", ...environment } });
  if (serviceConfig.stateDir !== stateDir) {
    throw usageError(`${escapeText(configFile ?? "the config file")} sets stateDir ${escapeText(serviceConfig.stateDir)}; the gate keeps its state in ${escapeText(stateDir)}: remove stateDir from it`);
  }

  // The gateways' own after the Hermes files, the users' homes' after both, what the gateways' environments move last: their copies keep the numbers they had before these were named.
  const homes = hermesHomes(input.gateways, agents, scope, notes);
  const named = [
    ...hermesSecretFiles(homes, scope),
    ...gatewaySecretFiles(input.gateways, scope, notes),
    ...userHomeSecretFiles(homes.map((h) => h.user), scope),
    ...environmentStoreFiles(input.gateways, scope, notes),
    ...profilesDirectories(homes, scope),
    ...gatewaysFollowed(input.gateways, scope),
  ];
  const secrets = nameableSecretFiles(named, notes, scope);
  checkNoLocalOutbox(
    input.gateways,
    // The profiles' there now too: a profile's .env is loaded when Hermes runs it.
    [...secrets.filter((s) => s.kind === undefined && path.basename(s.file) === ".env").map((s) => s.file), ...secrets.filter((s) => s.profiles).flatMap((s) => takenProfileDirs(s.file, scope).map((dir) => path.join(dir, ".env")))],
    scope,
  );
  const newSecretFiles = [...new Set(secrets.filter((s) => !existsOnDisk(s.file, scope)).map((s) => s.file))];

  const dirs: GateDir[] = [];
  for (let d = path.dirname(outbox), missing: string[] = []; ; d = path.dirname(d)) {
    if (fs.existsSync(onDisk(scope, d))) {
      dirs.push(...missing.map((m) => ({ path: m, mode: 0o755, owner: "root" as const })));
      break;
    }
    missing.unshift(d);
  }
  dirs.push({ path: outbox, mode: 0o750, owner: "service" }, { path: stateDir, mode: 0o700, owner: "service" });
  return {
    user: GATE_USER,
    group: GATE_GROUP,
    userExists: service !== undefined,
    groupExists: group !== undefined,
    agentUsers: agents.map((a) => a.name),
    newMembers,
    outbox,
    stateDir,
    socket: GATE_SOCKET_PATH,
    serviceConfig,
    environment,
    secrets,
    newSecretFiles,
    dirs,
    notes,
  };
}

/**
 * The gate's own files: socket, service, and the system-wide config that
 * points prepare at the socket (exactly `{"socket": PATH}`, readable by all:
 * config.ts reads that file with no other key allowed).
 */
export function gateFiles(plan: GatePlan, params: ServiceParams, unitDir: string, withWatch = false): { path: string; content: string; mode: number }[] {
  const gateParams: GateParams = { ...params, socket: plan.socket, secrets: plan.secrets };
  const present = [...new Set(plan.secrets.map((s) => s.file))].filter((file) => !plan.newSecretFiles.includes(file));
  return [
    { path: path.join(unitDir, GATE_SOCKET_UNIT), content: renderGateSocket(gateParams), mode: 0o644 },
    { path: path.join(unitDir, GATE_SERVICE), content: renderGateService(gateParams), mode: 0o644 },
    ...(present.length > 0 ? [{ path: path.join(unitDir, GATE_SECRETS_PATH), content: renderGateSecretsPath(GATE_SECRETS_PATH, present), mode: 0o644 }] : []),
    ...(plan.newSecretFiles.length > 0 ? [{ path: path.join(unitDir, GATE_SECRETS_NEW_PATH), content: renderGateSecretsPath(GATE_SECRETS_NEW_PATH, plan.newSecretFiles), mode: 0o644 }] : []),
    ...(plan.secrets.length > 0 ? [{ path: path.join(unitDir, GATE_SECRETS_SERVICE), content: renderGateSecretsService(params, plan.secrets, withWatch), mode: 0o644 }] : []),
    // Not enabled, not a unit of its own: gate-secrets starts its instances, one per file of a profile (and per file a gateway's environment is read from or moves).
    ...(plan.secrets.some((s) => s.profiles || s.gateway) ? [{ path: path.join(unitDir, GATE_SECRETS_WATCH), content: renderGateSecretsWatch(), mode: 0o644 }] : []),
    { path: SYSTEM_CONFIG, content: `${JSON.stringify({ socket: plan.socket })}\n`, mode: 0o644 },
  ];
}

/** The gate's units in `files` (gateFiles): the socket and the service, and the watches when there are agents' files to copy. */
export function gateUnits(files: { path: string }[]): string[] {
  const names = new Set(files.map((f) => path.basename(f.path)));
  return [GATE_SOCKET_UNIT, GATE_SERVICE, GATE_SECRETS_PATH, GATE_SECRETS_NEW_PATH, GATE_SECRETS_SERVICE].filter((u) => names.has(u));
}

function tool(cmd: string, args: string[]): void {
  const r = spawnSync(cmd, args, { encoding: "utf8" });
  if (r.error || r.status !== 0) {
    const why = r.error ? r.error.message : r.stderr.trim() || `exit status ${r.status}`;
    throw new FatalError("config_invalid", `${cmd} ${args.map(escapeText).join(" ")} failed: ${escapeText(why)}`);
  }
}

const NOLOGIN = ["/usr/sbin/nologin", "/sbin/nologin", "/usr/bin/false", "/bin/false"];

/**
 * Creates the group and the user when missing and adds the agents to the
 * group, recording each step in `record` (saved before the step, so a crash
 * leaves a record uninstall can act on). On a failure, what was done is undone
 * and the error thrown: nothing is left behind.
 */
export function applyGateAccounts(plan: GatePlan, record: GateRecord, save: () => void): void {
  try {
    if (!plan.groupExists) {
      record.createdGroup = true;
      save();
      tool("groupadd", ["--system", plan.group]);
    }
    if (!plan.userExists) {
      record.createdUser = true;
      save();
      const shell = NOLOGIN.find((s) => fs.existsSync(s)) ?? "/usr/sbin/nologin";
      tool("useradd", ["--system", "--gid", plan.group, "--no-create-home", "--home-dir", "/nonexistent", "--shell", shell, "--comment", "media-outbox gate", plan.user]);
    }
    for (const member of plan.newMembers) {
      record.addedMembers.push(member);
      save();
      tool("usermod", ["--append", "--groups", plan.group, member]);
    }
  } catch (err) {
    undoGateAccounts(record, { removeAccounts: true });
    throw err;
  }
}

/** The service user's uid and gid, once it exists. */
export function gateOwner(plan: GatePlan): { uid: number; gid: number } {
  const user = userByName(plan.user);
  if (!user) throw new FatalError("config_invalid", `user ${plan.user} does not exist after it was created`);
  return { uid: user.uid, gid: user.gid };
}

/**
 * Creates the gate's directories (or sets an existing one's owner and mode):
 * the outbox 0750 and the state 0700 for the service user, missing parents
 * root's 0755. They hold published files and state, so uninstall keeps them.
 */
export function applyGateDirs(plan: GatePlan, owner: { uid: number; gid: number }, extra: { path: string; mode: number }[]): void {
  for (const d of [...plan.dirs, ...extra.map((e) => ({ ...e, owner: "service" as const }))]) {
    for (const created of mkdirs(d.path, 0o755)) {
      fs.chmodSync(created, created === d.path ? d.mode : 0o755);
      if (created === d.path && d.owner === "service") fs.chownSync(created, owner.uid, owner.gid);
    }
    const st = fs.lstatSync(d.path);
    if (d.owner === "service" && (st.uid !== owner.uid || st.gid !== owner.gid)) fs.chownSync(d.path, owner.uid, owner.gid);
    if ((st.mode & 0o7777) !== d.mode) fs.chmodSync(d.path, d.mode);
  }
}

/**
 * Undoes the accounts part: group memberships install added go; the user and
 * group go only with `removeAccounts`, and only those install created.
 * Returns what it did, for the report.
 */
export function undoGateAccounts(record: GateRecord, opts: { removeAccounts: boolean }): { done: string[]; kept: string[] } {
  const done: string[] = [];
  const kept: string[] = [];
  const group = groupByName(record.group);
  for (const member of [...record.addedMembers].reverse()) {
    if (group?.members.includes(member)) {
      tool("gpasswd", ["--delete", member, record.group]);
      done.push(`removed ${member} from group ${record.group}`);
    }
  }
  record.addedMembers = [];
  if (opts.removeAccounts) {
    if (record.createdUser) {
      if (userByName(record.user)) tool("userdel", [record.user]);
      done.push(`removed user ${record.user}`);
    } else if (userByName(record.user)) kept.push(`user ${record.user} (it existed before install; if nothing else uses it: userdel ${record.user})`);
    if (record.createdGroup) {
      // userdel may already have removed the user's own group.
      if (groupByName(record.group)) tool("groupdel", [record.group]);
      done.push(`removed group ${record.group}`);
    } else if (groupByName(record.group)) kept.push(`group ${record.group} (it existed before install; if nothing else uses it: groupdel ${record.group})`);
  } else {
    if (userByName(record.user)) kept.push(`user ${record.user}`);
    if (groupByName(record.group)) kept.push(`group ${record.group}`);
  }
  return { done, kept };
}
