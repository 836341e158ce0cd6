// `media-outbox doctor` in gate mode: the gate's socket is there and lets only
// its group in, the gate answers, the outbox belongs to the service user and
// cannot be written by the one running doctor (the agent), the gateways can
// read what it publishes, and a probe sent through the gate comes out as a
// MEDIA: line every gateway delivers. doctor.ts calls these in place of its
// single-user outbox checks and probe.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { type Config, type GateSocket, defaultStateDir } from "../config/config.js";
import { MOVED_STORES, USER_HOME_SECRET_FILES, readSecretFile, userHomeStoreFormat } from "../content/known.js";
import type { SecretFileFormat } from "../content/secret-file-formats.js";
import { FatalError, errnoCode, isErrno } from "../core/errors.js";
import { escapeText } from "../core/escape.js";
import { makePng } from "../core/png.js";
import { formatBytes, formatMode } from "../core/units.js";
import { prepareThroughGate, gateHealth } from "../gate/client.js";
import type { HealthDocument } from "../gate/protocol.js";
import { ExchangeError } from "../gate/http1.js";
import { sourcePolicyFor } from "../prepare/source.js";
import { type DoctorCheck, check } from "./doctor-check.js";
import type { ReaderProblem } from "./doctor.js";
import {
  GATE_OUTBOX,
  GATE_USER,
  type GatewayOwner,
  LOCAL_OUTBOX_VAR,
  envFileSetsLocalOutbox,
  existsOnDisk,
  gateStateDir,
  gatewayOwnerOf,
  environmentStoreFiles,
  gatewaySecretFiles,
  hermesHomeOf,
  hermesSecretFilesNow,
  profileSecretFilesNow,
  storeDirectoryFiles,
  managedLocalOutboxes,
  unfollowedCredentialFiles,
  untakenProfiles,
  watchedProfileDirs,
  userHomeStoreFiles,
  userHomeStoresNow,
} from "./gate.js";
import { readIfExists } from "./files.js";
import { rootOwnedProblem } from "./root-owned.js";
import { dotenvCodexHomeAuth } from "./hermes-environment.js";
import { profilesLeftOut } from "../content/hermes-profiles.js";
import { type EffectiveEnvironment, type UnitScope, diskReader, effectiveEnvironment, installDir, isTemplate, lenientDiskReader, onDisk, unitEnvironment, unitFiles, unitHermesHome } from "./gateway-units.js";
import { MAX_PROFILES, MAX_WATCHED_PROFILES, PROFILE_WATCHES, listWatches, profileWatchPaths, watchUnitName } from "./gate-profiles.js";
import { GATE_SECRETS_NEW_PATH, GATE_SECRETS_PATH, GATE_SECRETS_SERVICE, GATE_SERVICE, GATE_SOCKET_UNIT, WATCH_SERVICE } from "./render.js";
import { type Systemctl, shellLine } from "./systemctl.js";
import { parseUnitText, splitWords } from "./systemd-syntax.js";
import { groupByName, groupIdsOf, groupName, isMember, userByName, userByNameOrUid, userByUid } from "./users.js";
import { type AgentSecretFile, MAX_COPIES_BYTES, MAX_SECRET_FILE_BYTES, SECRET_FILE_PREFIX, isHermesHomeDotenv, parseSecretFileArg, rootAloneProblem } from "./gate-secrets.js";

const PROBE_NAME = "media-outbox-doctor-probe.png";
/** How long doctor waits for the gate at any one step: a bound on a hung gate, not a performance target. */
const ANSWER_TIMEOUT_MS = 15_000;

export interface GateContext {
  /** The gate as configuration found it (the same discovery prepare uses: config.ts). */
  gate: GateSocket;
  /** The gate's outbox: as the gate reports it, or the install default when it does not answer. */
  outbox: string;
  /** The gate's state directory: as the gate reports it, else where it was found (locateState); install's place when not known. */
  stateDir: string;
  /** Why the state directory was not checked (its place is not known), when it was not. */
  stateUnknown?: { why: string; fix: string };
  /** The socket's owner (the service user) and group (who may connect). */
  serviceUid?: number;
  group?: string;
  answering: boolean;
}

const me = () => os.userInfo().username;
const timeoutOf = (gate: GateSocket) => gate.timeoutMs ?? ANSWER_TIMEOUT_MS;

/** How the gate reads its copy of a user's home store (`file`: its path in that home). */
function homeStoreFormat(file: string): SecretFileFormat {
  const store = USER_HOME_SECRET_FILES.find((s) => file.endsWith(`/${s}`));
  return store === undefined ? "json" : userHomeStoreFormat(store);
}

/** The connect(2) error behind a gate the client could not reach, if that was the cause. */
function connectError(err: unknown): string | undefined {
  return err instanceof FatalError && err.cause instanceof ExchangeError && err.cause.kind === "connect" ? err.cause.code : undefined;
}

function socketChecks(socket: string, checks: DoctorCheck[]): Pick<GateContext, "serviceUid" | "group"> | undefined {
  let st: fs.Stats;
  try {
    st = fs.lstatSync(socket);
  } catch (err) {
    const why = isErrno(err, "ENOENT") ? "does not exist: the gate's socket unit is not listening" : `cannot be looked at: ${escapeText((err as Error).message)}`;
    check(checks, "gate socket", "fail", `${escapeText(socket)} ${why}`, escapeText(shellLine(["systemctl", "enable", "--now", GATE_SOCKET_UNIT])));
    return undefined;
  }
  const owner = userByUid(st.uid)?.name ?? `uid ${st.uid}`;
  const group = groupName(st.gid) ?? `gid ${st.gid}`;
  if (!st.isSocket()) check(checks, "gate socket", "fail", `${escapeText(socket)} is not a socket`, "run media-outbox install systemd --gate again");
  else if (st.mode & 0o002) {
    check(checks, "gate socket", "fail", `${escapeText(socket)} (mode ${formatMode(st.mode)}) lets every user connect, not only group ${escapeText(group)}`, `SocketMode=0660 in ${GATE_SOCKET_UNIT}: run media-outbox install systemd --gate again`);
  } else check(checks, "gate socket", "pass", `${escapeText(socket)} belongs to ${escapeText(owner)}:${escapeText(group)}, mode ${formatMode(st.mode)}: only root and group ${escapeText(group)} may connect`);
  return { serviceUid: st.uid, group };
}

async function healthCheck(gate: GateSocket, group: string | undefined, checks: DoctorCheck[]): Promise<HealthDocument | false> {
  let health: HealthDocument;
  try {
    health = await gateHealth(gate, timeoutOf(gate));
  } catch (err) {
    if (!(err instanceof FatalError)) throw err;
    // The client's own message says what happened (and is escaped); the fix is the operator's.
    const code = connectError(err);
    let fix = escapeText(shellLine(["journalctl", "-u", GATE_SERVICE]));
    if (code === "EACCES" || code === "EPERM") {
      // Install again with every option of the first install: a bare --agent-user ME would drop the other agent users (and --strict, --with-watch…).
      fix = `only root and members of group ${escapeText(group ?? GATE_USER)} may connect: as root, media-outbox uninstall systemd, then run the same install systemd --system --gate again with --agent-user ${escapeText(me())} added to its options; then log in again`;
    } else if (code === "ENOENT" || code === "ECONNREFUSED") fix = escapeText(shellLine(["systemctl", "enable", "--now", GATE_SOCKET_UNIT]));
    check(checks, "gate", "fail", `GET /health as ${escapeText(me())}: ${err.message}`, fix);
    return false;
  }
  const state = health.state === undefined ? "" : `, its state ${escapeText(health.state)}`;
  check(checks, "gate", "pass", `the gate answers GET /health; its outbox is ${escapeText(health.outbox)}${state}`);
  return health;
}

/**
 * Where the gate keeps its state (staging, ledger, quarantine). The gate
 * says so in its /health answer: install's place (`state` beside the
 * outbox), serve's default when started by hand (`.NAME-state` beside it),
 * or wherever MEDIA_OUTBOX_STATE_DIR or its config's stateDir put it. A gate
 * of an earlier version does not say, nor does one that does not answer:
 * then the one of those two places beside the outbox that is there is
 * taken; with both there, or neither, the state is not checked, and the
 * line says why and what to do.
 */
function locateState(outbox: string, health: HealthDocument | false): Pick<GateContext, "stateDir" | "stateUnknown"> {
  if (health && health.state !== undefined) return { stateDir: health.state };
  const installed = gateStateDir(outbox);
  const byHand = defaultStateDir(outbox);
  const there = [installed, byHand].filter((p) => existsOnDisk(p, {}));
  if (there.length === 1) return { stateDir: there[0]! };
  const silent = health ? "the gate's answer does not say where it keeps its state (a gate started before media-outbox said so)" : "the gate does not answer, so it cannot say where it keeps its state";
  const places = there.length === 0 ? `neither ${escapeText(installed)} (install's place) nor ${escapeText(byHand)} (serve's, started by hand) is there` : `both ${escapeText(installed)} and ${escapeText(byHand)} are there`;
  const fix = health ? "restart the gate with this media-outbox (its GET /health then names its state directory), then run doctor again" : "fix the gate line above, then run doctor again";
  return { stateDir: installed, stateUnknown: { why: `not checked: ${silent}, and ${places}`, fix } };
}

/** Who owns the outbox and the state, and that the one running doctor cannot write there. */
function ownershipChecks(ctx: GateContext, checks: DoctorCheck[]): void {
  const service = ctx.serviceUid === undefined ? GATE_USER : (userByUid(ctx.serviceUid)?.name ?? `uid ${ctx.serviceUid}`);
  let st: fs.Stats;
  try {
    st = fs.lstatSync(ctx.outbox);
  } catch (err) {
    check(checks, "outbox", "fail", `${escapeText(ctx.outbox)}: ${escapeText((err as Error).message)}`, "run media-outbox install systemd --gate again");
    return;
  }
  const fix = "run media-outbox install systemd --gate again (it sets the owner and mode)";
  const ancestors = rootOwnedProblem(path.dirname(ctx.outbox), {});
  if (!st.isDirectory()) check(checks, "outbox", "fail", `${escapeText(ctx.outbox)} is not a directory`, fix);
  else if (ctx.serviceUid !== undefined && st.uid !== ctx.serviceUid) check(checks, "outbox", "fail", `${escapeText(ctx.outbox)} belongs to uid ${st.uid}, not to the gate's user ${escapeText(service)}`, fix);
  else if (st.mode & 0o022) check(checks, "outbox", "fail", `${escapeText(ctx.outbox)} (mode ${formatMode(st.mode)}) is writable by its group or others: an agent could plant files`, fix);
  else if ((st.mode & 0o050) !== 0o050) check(checks, "outbox", "fail", `${escapeText(ctx.outbox)} (mode ${formatMode(st.mode)}) cannot be read by group ${escapeText(ctx.group ?? GATE_USER)}: the gateways cannot deliver`, fix);
  else if (ancestors) check(checks, "outbox", "fail", `above ${escapeText(ctx.outbox)}: ${ancestors}`, "make every directory above the outbox root's, writable by nobody else");
  else check(checks, "outbox", "pass", `${escapeText(ctx.outbox)} belongs to ${escapeText(service)} (mode ${formatMode(st.mode)}); every directory above belongs to root`);

  // The kernel's answer for the one running doctor (the agent): it must not be able to write.
  if (process.geteuid?.() !== 0) {
    let writable = true;
    try {
      fs.accessSync(ctx.outbox, fs.constants.W_OK);
    } catch {
      writable = false;
    }
    if (writable) check(checks, "outbox writers", "fail", `you (${escapeText(me())}) can write into ${escapeText(ctx.outbox)}: the gate does not hold`, fix);
    else check(checks, "outbox writers", "pass", `you (${escapeText(me())}) cannot write into the outbox: only the gate publishes`);
  }

  if (ctx.stateUnknown) {
    check(checks, "state", "warn", ctx.stateUnknown.why, ctx.stateUnknown.fix);
    return;
  }
  // Install makes the state beside the outbox and sets its owner and mode; a gate started by hand (serve) makes its own.
  const stateFix =
    ctx.stateDir === gateStateDir(ctx.outbox)
      ? fix
      : `as root: ${escapeText(shellLine(["chown", ctx.serviceUid === undefined ? GATE_USER : (userByUid(ctx.serviceUid)?.name ?? String(ctx.serviceUid)), ctx.stateDir]))} && ${escapeText(shellLine(["chmod", "0700", ctx.stateDir]))} (the gate, started by hand with media-outbox serve, keeps its state there)`;
  let state: fs.Stats;
  try {
    state = fs.lstatSync(ctx.stateDir);
  } catch (err) {
    const missing = ctx.stateDir === gateStateDir(ctx.outbox) ? fix : "restart the gate: media-outbox serve makes its state directory (0700) when it starts";
    check(checks, "state", "fail", `${escapeText(ctx.stateDir)}: ${escapeText((err as Error).message)}`, isErrno(err, "ENOENT") ? missing : stateFix);
    return;
  }
  if (!state.isDirectory() || (ctx.serviceUid !== undefined && state.uid !== ctx.serviceUid) || state.mode & 0o077) {
    check(checks, "state", "fail", `${escapeText(ctx.stateDir)} must be a directory of ${escapeText(service)} with mode 0700 (it is ${formatMode(state.mode)}, uid ${state.uid}): staging, ledger and quarantine live there`, stateFix);
  } else check(checks, "state", "pass", `${escapeText(ctx.stateDir)} (staging, ledger, quarantine) belongs to ${escapeText(service)}, mode 0700`);
}

/** The socket, the gate's answer, and who owns what; returns what the later checks need. */
export async function gateLayoutChecks(gate: GateSocket, checks: DoctorCheck[]): Promise<GateContext> {
  const owner = socketChecks(gate.path, checks);
  const health = await healthCheck(gate, owner?.group, checks);
  const outbox = health ? health.outbox : GATE_OUTBOX;
  const ctx: GateContext = {
    gate,
    outbox,
    ...locateState(outbox, health),
    ...owner,
    answering: health !== false,
  };
  ownershipChecks(ctx, checks);
  return ctx;
}

/** A gateway reads published files (0640, the gate's group) when it runs as root, as the service user, or as a member of the group. */
export function gateReader(ctx: GateContext, scope: UnitScope): ReaderProblem {
  return (env: EffectiveEnvironment) => {
    if (!env.user) return undefined; // a system unit without User= runs as root
    const user = userByNameOrUid(env.user, scope.root);
    if (!user) return `the gateway runs as ${escapeText(env.user)}, which is not in /etc/passwd`;
    const group = ctx.group ? groupByName(ctx.group, scope.root) : undefined;
    if (user.uid === 0 || user.uid === ctx.serviceUid || (group && isMember(user, group))) return undefined;
    return `the gateway runs as ${escapeText(user.name)}, who is not in group ${escapeText(ctx.group ?? GATE_USER)}: it cannot read published files (mode 0640)`;
  };
}

/**
 * Each gateway's agents use the gate: nothing in their environment (the
 * gateway unit's, or the Hermes .env the gateway loads into it) sets
 * MEDIA_OUTBOX_DIR, which would keep their prepare in local mode.
 */
export function gateAgentChecks(scope: UnitScope, units: string[], systemctl: Systemctl | undefined, checks: DoctorCheck[]): void {
  for (const unit of units) {
    const env = effectiveEnvironment(scope, unit, [LOCAL_OUTBOX_VAR, "HERMES_HOME"], systemctl);
    if (!env.loaded) continue;
    const setters: string[] = [];
    const set = env.vars.get(LOCAL_OUTBOX_VAR);
    if (set?.value !== undefined) setters.push(`its unit (${escapeText(set.from ?? "?")})`);
    const hermesHome = unitHermesHome(env.vars.get("HERMES_HOME")?.value) ?? path.join(env.home, ".hermes");
    const dotEnv = path.join(hermesHome, ".env");
    if (envFileSetsLocalOutbox(dotEnv, scope)) setters.push(escapeText(dotEnv));
    // The managed .env its Hermes loads (its HERMES_MANAGED_DIR's, set since install too, else /etc/hermes's), as install and gate-secrets resolve it.
    for (const m of managedLocalOutboxes([gatewayOwner(scope, unit, systemctl)], scope)) setters.push(`${escapeText(m.file)} (the managed .env; gate-secrets does not follow it, and keeps its copies from before)`);
    const name = `agents of ${escapeText(unit)}`;
    if (setters.length > 0) {
      check(checks, name, "fail", `${LOCAL_OUTBOX_VAR} is set by ${setters.join(" and ")}: the agents' prepare publishes into that directory, never through the gate`, `remove it there, then ${escapeText(shellLine(["systemctl", "restart", unit]))}`);
    } else check(checks, name, "pass", `nothing in the gateway's environment sets ${LOCAL_OUTBOX_VAR}: its agents' prepare goes through the gate`);
  }
}

/** What doctor says of a gate that answers without its units. */
export const BY_HAND = "the gate that answers was started by hand (media-outbox serve)";

/**
 * The gate's units that are not installed: the socket unit systemd has not
 * loaded, or, without systemd, the socket and service units whose files are
 * not there. A gate that answers with one missing was started by hand
 * (startedByHand): doctor judges what it lacks as that, not as a broken
 * install.
 */
export function missingGateUnits(scope: UnitScope, systemctl: Systemctl | undefined): string[] {
  if (!systemctl) return [GATE_SOCKET_UNIT, GATE_SERVICE].filter((u) => !fs.existsSync(onDisk(scope, path.join(installDir(scope), u))));
  return systemctl.show(GATE_SOCKET_UNIT, ["LoadState"]).get("LoadState") === "loaded" ? [] : [GATE_SOCKET_UNIT];
}

/** Whether the gate doctor found was started by hand (media-outbox serve): it answers GET /health, and its units are not installed. */
export function startedByHand(ctx: GateContext | undefined, scope: UnitScope, systemctl: Systemctl | undefined): boolean {
  return ctx?.answering === true && missingGateUnits(scope, systemctl).length > 0;
}

/**
 * The gate's socket unit listens, its service has not failed, and the .env
 * files it copies secrets from are there (or, all well, what it knows of
 * them). A gate that answers without its units was started by hand
 * (`media-outbox serve`): that works, and is a warning, not a failure.
 */
export function gateServiceChecks(scope: UnitScope, units: string[], systemctl: Systemctl | undefined, checks: DoctorCheck[], answering = false): void {
  const enable = escapeText(shellLine(["systemctl", "enable", "--now", GATE_SOCKET_UNIT]));
  const byHand = (what: string) =>
    check(checks, "gate units", "warn", `${what}: ${BY_HAND}; nothing restarts it if it stops, nor starts it at boot`, "to run it under systemd: media-outbox install systemd --system --gate");
  const missing = missingGateUnits(scope, systemctl);
  if (!systemctl) {
    if (missing.length > 0 && answering) byHand(`${missing.join(", ")} not installed`);
    else if (missing.length > 0) check(checks, "gate units", "fail", `${missing.join(", ")} not installed`, "media-outbox install systemd --gate");
    else check(checks, "gate units", "warn", `${GATE_SOCKET_UNIT} and ${GATE_SERVICE} are installed; their state is unknown without systemd`, `where systemd runs: ${enable}`);
    return;
  }
  const sock = systemctl.show(GATE_SOCKET_UNIT, ["LoadState", "UnitFileState", "ActiveState"]);
  if (missing.length > 0 && answering) byHand(`${GATE_SOCKET_UNIT} is not installed`);
  else if (missing.length > 0) check(checks, "gate units", "fail", `${GATE_SOCKET_UNIT} is not installed`, "media-outbox install systemd --gate");
  else if (sock.get("UnitFileState") !== "enabled" || sock.get("ActiveState") !== "active") {
    check(checks, "gate units", "fail", `${GATE_SOCKET_UNIT} is ${sock.get("UnitFileState") ?? "?"}/${sock.get("ActiveState") ?? "?"}: agents cannot reach the gate`, enable);
  } else {
    const svc = systemctl.show(GATE_SERVICE, ["ActiveState", "Result", "NRestarts"]);
    const active = svc.get("ActiveState") ?? "?";
    if (active === "failed") check(checks, "gate units", "fail", `${GATE_SERVICE} failed (${svc.get("Result") ?? "?"})`, escapeText(shellLine(["journalctl", "-u", GATE_SERVICE])));
    else {
      const state = active === "inactive" ? "inactive (it starts on the next connection)" : active;
      check(checks, "gate units", "pass", `${GATE_SOCKET_UNIT} listens; ${GATE_SERVICE} is ${state}, restarted ${svc.get("NRestarts") ?? "0"} times`);
    }
    // A gateway unit systemd no longer knows (removed since install: `hermes gateway uninstall`, a unit file deleted).
    const gone = (unit: string) => systemctl.show(unit, ["LoadState"]).get("LoadState") === "not-found";
    const line = gateSecretChecks(scope, unitFiles(scope, GATE_SERVICE, systemctl), checks, units.map((unit) => gatewayOwner(scope, unit, systemctl)), gone);
    if (active === "active" || systemctl.show(WATCH_SERVICE, ["ActiveState"]).get("ActiveState") === "active") profileWatchChecks(scope, line.named, systemctl, checks);
    madeAfterInstallChecks(scope, unitFiles(scope, GATE_SECRETS_NEW_PATH, systemctl), checks);
    // The watches on the agents' files: stopped (by hand, by its trigger limit, short of inotify instances), a changed file counts from the gate's next start only.
    for (const unit of [GATE_SECRETS_PATH, GATE_SECRETS_NEW_PATH]) {
      const watch = systemctl.show(unit, ["LoadState", "ActiveState", "Result"]);
      if (watch.get("LoadState") === "loaded" && watch.get("ActiveState") !== "active") {
        check(checks, "gate secrets", "warn", `${unit} is ${watch.get("ActiveState") ?? "?"} (${watch.get("Result") ?? "?"}): an agent's changed .env or credential store is copied for the gate only at its next start`, escapeText(shellLine(["systemctl", "restart", unit])));
      }
    }
    // Nothing above to say: say what the gate knows, as other checks say what holds.
    if (!checks.some((c) => c.check === "gate secrets")) gateSecretsKnown(scope, line, active, checks);
  }
}

/**
 * The agents' files the gate copies its secrets from (its gate-secrets
 * line): a .env gone, or one not a regular file, leaves the gate without its
 * values (the gate still starts); a store named optional (USER:?FILE) is
 * normally not there. And the files that hold secrets in the same Hermes
 * homes, or in the homes of the users it reads them as, that the line does
 * not name: a profile's, an MCP server's, made after install. A gateway's
 * systemd file (KIND:FILE) its user may not read and that is not root's
 * alone is skipped by gate-secrets: named here. So is a store a gateway's
 * CODEX_HOME or HERMES_MANAGED_DIR now moves (set in its unit or its Hermes
 * .env) that the line does not name, nor gate-secrets follow. Files the
 * one running doctor may not look at are not judged. Returns the line as
 * read, for the checks after (the unit files read once).
 */
export function gateSecretChecks(scope: UnitScope, files: { fragment?: string; dropIns: string[] }, checks: DoctorCheck[], gateways: GatewayOwner[], unitGone?: (unit: string) => boolean): GateSecretsLine {
  const line = gateSecretsLine(scope, files);
  const { named } = line;
  // The gateways install covered (`USER:?gateway:DIR/UNIT`) that systemd no longer knows: the line goes on naming what install found for them.
  const removed = unitGone ? named.filter((n) => n.gateway && unitGone(path.basename(n.file))).map((n) => escapeText(path.basename(n.file))) : [];
  if (removed.length > 0) {
    check(
      checks,
      "gate secrets",
      "warn",
      `${removed.join(", ")}: covered at install, no longer a unit systemd knows: the gate's units still name what install found for ${removed.length === 1 ? "it" : "them"} (${removed.length === 1 ? "its" : "their"} EnvironmentFile= and Environment= files, ${removed.length === 1 ? "its" : "their"} user's Hermes files), and the gate goes on copying those that are there: stale copies, of a gateway that is gone`,
      "media-outbox uninstall systemd --system, then media-outbox install systemd --system --gate again with the same options: the gate's units then name the gateways there now",
    );
  }
  const missing: string[] = [];
  for (const { file } of named.filter((n) => !n.optional)) {
    try {
      if (!fs.statSync(onDisk(scope, file)).isFile()) missing.push(`${escapeText(file)} (not a regular file)`);
    } catch (err) {
      if (isErrno(err, "ENOENT", "ENOTDIR")) missing.push(`${escapeText(file)} (not there)`);
    }
  }
  if (missing.length > 0) {
    check(checks, "gate secrets", "warn", `the gate copies the secrets it looks for from ${missing.join(", ")}: it does not know those values (it starts all the same)`, "put the file back: the gate copies it as soon as it is there");
  }
  // A gateway unit (gateway:) is followed, not copied: no Hermes file.
  const hermes = named.filter((n) => n.kind === undefined && !n.gateway);
  const homeStores = new Set(hermes.flatMap((n) => userHomeStoreFiles(n.user, scope)));
  // $CODEX_HOME/auth.json, the shared Nous store, a Google key: read as JSON (not the managed scope's .env and config.yaml).
  const jsonStores = new Set(hermes.filter((n) => n.store !== undefined && n.store !== "managed").map((n) => n.file));
  // A file copied as it is gives the gate what it gives local mode: none, from a damaged or oversized one (a user's home store is read as there: JSON, the AWS credentials as a .env; $CODEX_HOME/auth.json as JSON).
  // A profile's file is read as its copy is: by its own format (known.ts profileFileFormat).
  const formatOf = (file: string): SecretFileFormat => (homeStores.has(file) ? homeStoreFormat(file) : jsonStores.has(file) ? "json" : "either");
  const hermesFiles = hermes.flatMap(({ file, profiles }) =>
    profiles ? profileSecretFilesNow(file, scope) : (file.endsWith("/") ? storeDirectoryFiles(file.slice(0, -1), scope) : [file]).map((f) => ({ file: f, format: formatOf(f) })),
  );
  const unreadable = hermesFiles
    .map(({ file, format }) => readSecretFile({ file: onDisk(scope, file), where: escapeText(file), format }))
    .filter((r) => r.exists && r.problem !== undefined && r.problem !== "it cannot be read");
  if (unreadable.length > 0) {
    check(checks, "gate secrets", "warn", `the gate does not know the values of ${unreadable.map((r) => `${r.file.where}: ${r.problem}`).join("; ")}`, "make each a regular file of at most 1 MiB (a JSON store: valid JSON); the gate copies it again when it changes");
  }
  // gate-secrets stops copying at MAX_COPIES_BYTES (its runtime directory is memory): what it would copy now, as it sizes it.
  const copied = hermesFiles.reduce((sum, { file }) => sum + copiedBytes(onDisk(scope, file)), 0);
  if (copied > MAX_COPIES_BYTES) {
    check(
      checks,
      "gate secrets",
      "warn",
      `the files the gate copies its secrets from hold ${formatBytes(copied)}, more than the ${formatBytes(MAX_COPIES_BYTES)} its copies may take in memory: the last on its line are not copied, and the gate does not know their values`,
      "remove what does not belong there (a store directory such as mcp-tokens/ holds one small .json per server or user)",
    );
  }
  const notRead = named.filter((n) => n.kind !== undefined).flatMap((n) => {
    const why = unitFileNotRead(scope, n);
    return why ? [`${escapeText(n.file)} (${n.kind === "unit-file" ? "its Environment=" : "an EnvironmentFile="}): ${why}`] : [];
  });
  if (notRead.length > 0) {
    check(checks, "gate secrets", "warn", `the gate does not know what the gateways' units set in ${notRead.join("; ")}`, "make the file and every directory above it root's, writable by nobody else (systemd reads it as root), or readable by the gateway's user");
  }
  // What a gateway's unit sets now that install did not name (a drop-in or key added since): install judges each file the same way.
  const unnamedUnits = gatewaySecretFiles(gateways, scope, []).filter((w) => !named.some((n) => n.file === w.file));
  if (unnamedUnits.length > 0) {
    check(checks, "gate secrets", "warn", `${unnamedUnits.map((w) => escapeText(w.file)).join(", ")}: set for a gateway (an EnvironmentFile=, or Environment= values that look secret) and not named in the gate's units: the gate does not know the values there`, "run media-outbox install systemd --gate again, with the same options");
  }
  // A credential file's variable a gateway's Hermes sees (HERMES_SHARED_AUTH_DIR, VERTEX_CREDENTIALS_PATH, GOOGLE_APPLICATION_CREDENTIALS) whose value gate-secrets cannot follow (relative, `${...}`, `..`): followed otherwise, as CODEX_HOME.
  const unfollowed = unfollowedCredentialFiles(gateways, scope);
  if (unfollowed.length > 0) {
    check(checks, "gate secrets", "warn", `${unfollowed.join("; ")}: the gateway's Hermes reads a credential file there that the gate does not copy (a service account's private key is still found by its format)`, "write that variable as an absolute path, without ${...} or a .. component: gate-secrets then copies the file at each run");
  }
  unnamedStoreChecks(scope, named, hermes, homeStores, gateways, checks);
  profileChecks(scope, hermes, checks);
  return line;
}

/**
 * The stores the gate's line does not name: those a gateway's CODEX_HOME or
 * HERMES_MANAGED_DIR puts elsewhere since install, and the Hermes homes'
 * files the line missed (a home made after install, an older install).
 */
function unnamedStoreChecks(scope: UnitScope, named: AgentSecretFile[], hermes: AgentSecretFile[], homeStores: ReadonlySet<string>, gateways: GatewayOwner[], checks: DoctorCheck[]): void {
  // Where a gateway's CODEX_HOME or HERMES_MANAGED_DIR puts a store now (set since install, in its unit or its Hermes .env), install judging it the same way;
  // not a CODEX_HOME that gate-secrets follows itself at each run, as the named Hermes .env sets it.
  // Nor a gateway whose unit the line names (gateway:): gate-secrets resolves its environment at each run (a managed .env it refuses is the "agents of UNIT" line's).
  const followed = followedCodexHomes(scope, hermes);
  const followedUnits = new Set(named.filter((n) => n.gateway).map((n) => path.basename(n.file)));
  const moved = environmentStoreFiles(
    gateways.filter((g) => !followedUnits.has(g.unit)),
    scope,
    [],
  ).filter((c) => !named.some((n) => n.file === c.file) && !(c.store === "codex-home" && followed.has(c.file)));
  if (moved.length > 0) {
    const what = (c: AgentSecretFile) =>
      c.store === "codex-home" ? "the Codex CLI's auth.json in a gateway's CODEX_HOME" : c.store === "managed" ? "the managed scope's, in a gateway's HERMES_MANAGED_DIR" : MOVED_STORES[c.store!].where;
    check(
      checks,
      "gate secrets",
      "warn",
      `${moved.map((c) => `${escapeText(c.file)} (${what(c)})`).join(", ")}: set since install, not named in the gate's units: the gate does not know the values there`,
      "run media-outbox install systemd --gate again, with the same options",
    );
  }
  // Neither a store of a user's home nor one a gateway's environment moves is a Hermes home's (~/.codex/auth.json is named like a Hermes store).
  const notHermes = new Set([...homeStores, ...hermes.filter((n) => n.store !== undefined).map((n) => n.file)]);
  const unnamed = unnamedSecretFiles(scope, hermes, notHermes).filter((file) => !moved.some((c) => c.file === file));
  if (unnamed.length > 0) {
    const why = "not named in the gate's units (a home that was not there at install, or an install by an older media-outbox, which named a profile's files only if the profile was there then, MCP token files one by one and no store of the agents' homes)";
    check(checks, "gate secrets", "warn", `${unnamed.map(escapeText).join(", ")}: ${why}: the gate does not know the values there`, "run media-outbox install systemd --gate again, with the same options");
  }
}

/** The profiles the gate's copies leave out (it refuses while there are any), and those it copies without watching. */
function profileChecks(scope: UnitScope, hermes: readonly AgentSecretFile[], checks: DoctorCheck[]): void {
  // The profiles gate-secrets does not take of a profiles directory it lists (gate-profiles.ts: a link, a name with a control character, past MAX_PROFILES), and those it copies without watching (past MAX_WATCHED_PROFILES).
  const listings = hermes.filter((n) => n.profiles).map((n) => ({ dir: n.file, ...untakenProfiles(n.file, scope) }));
  // The rule local mode and the gate's copies apply (hermes-profiles.ts profilesLeftOut): the gate refuses while there are any.
  const untaken = listings.flatMap(({ dir, refused, past, more }) => profilesLeftOut(withoutSlash(dir), { refused, past, more }));
  if (untaken.length > 0) {
    check(
      checks,
      "gate secrets",
      "fail",
      `Hermes profiles the gate does not copy: ${untaken.join("; ")}: the gate does not know the values there, and refuses every file whose check needs them (unscannable_content)`,
      `make each a directory named with letters, digits, _ and -, and keep at most ${MAX_PROFILES} profiles in a Hermes home (hermes profile delete NAME); the gate copies them again when the profiles directory changes`,
    );
  }
  const unwatched = listings.flatMap(({ unwatched }) => unwatched.map(escapeText));
  if (unwatched.length > 0) {
    check(
      checks,
      "gate secrets",
      "warn",
      `Hermes profiles the gate copies but does not watch: ${unwatched.join(", ")} (past the ${MAX_WATCHED_PROFILES} of a home whose files are watched: each takes ${PROFILE_WATCHES} of root's inotify instances): a change there reaches the gate with the next copy only (its start, a change to a watched file)`,
      `keep at most ${MAX_WATCHED_PROFILES} profiles in a Hermes home, or ${escapeText(shellLine(["systemctl", "start", GATE_SECRETS_SERVICE]))} after changing one of the others`,
    );
  }
}

/** A profiles directory as the line names it (`…/profiles/`), without its slash. */
const withoutSlash = (dir: string) => (dir.endsWith("/") ? dir.slice(0, -1) : dir);

/** The files a gate-secrets line names, and the directory it copies them into (--into). */
export interface GateSecretsLine {
  named: AgentSecretFile[];
  into?: string;
}

/** The gate's gate-secrets line (its unit's ExecStartPre=): the files it names, and the directory it copies them into (--into). */
function gateSecretsLine(scope: UnitScope, files: { fragment?: string; dropIns: string[] }): GateSecretsLine {
  const read = diskReader(scope);
  let into: string | undefined;
  const named = [...(files.fragment ? [files.fragment] : []), ...files.dropIns]
    .flatMap((f) => parseUnitText(read(f) ?? ""))
    .filter((a) => a.section === "Service" && a.key === "ExecStartPre")
    .flatMap((a) => {
      const words = splitWords(a.value).map((w) => w.replace(/%%/g, "%"));
      const at = words.indexOf("gate-secrets");
      if (at < 0) return [];
      const args = words.slice(at + 1);
      const dir = args.indexOf("--into");
      if (dir >= 0) into = args[dir + 1];
      return args.filter((w, i, all) => w !== "--into" && all[i - 1] !== "--into");
    })
    .map(parseSecretFileArg)
    .filter((n): n is AgentSecretFile => n !== undefined);
  return { named, ...(into !== undefined ? { into } : {}) };
}

/**
 * The ok line of the gate's secrets (when nothing is wrong with them): how
 * many files its line names, and how many copies of them the gate reads now,
 * as the one running doctor may see them (the copies' directory is the gate
 * user's, 0700: root sees into it). Its service stopped (socket-activated,
 * idle), systemd has removed that directory; gate-secrets copies again at
 * the next start. Running without it, the gate knows none of the values.
 */
function gateSecretsKnown(scope: UnitScope, line: GateSecretsLine, serviceState: string, checks: DoctorCheck[]): void {
  const { named, into } = line;
  if (named.length === 0 || into === undefined) {
    check(checks, "gate secrets", "pass", `${GATE_SERVICE} copies no agent's secret files (its unit has no gate-secrets line): its content checks know the secrets of its own environment only`);
    return;
  }
  const optional = named.filter((n) => n.optional).length;
  const lineSays = `${GATE_SERVICE}'s gate-secrets line names ${named.length} file(s) to copy the agents' secrets from${optional > 0 ? ` (${optional} of them optional stores)` : ""}`;
  const dir = escapeText(into);
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(onDisk(scope, into), { withFileTypes: true });
  } catch (err) {
    const code = errnoCode(err);
    if (code === "ENOENT" && serviceState !== "active") {
      check(checks, "gate secrets", "pass", `${lineSays}; no copies are in ${dir} now: ${GATE_SERVICE} is not running, and they are copied again when it starts`);
    } else if (code === "ENOENT") {
      check(checks, "gate secrets", "warn", `${lineSays}, but ${dir} is not there while ${GATE_SERVICE} runs: the gate knows none of their values`, escapeText(shellLine(["systemctl", "restart", GATE_SERVICE])));
    } else {
      const why = code === "EACCES" ? ", the gate user's: run doctor as root to count the copies there" : "";
      check(checks, "gate secrets", "pass", `${lineSays}; you (${escapeText(me())}) cannot look into ${dir} (${code ?? "error"})${why}`);
    }
    return;
  }
  const copies = entries.filter((e) => e.isFile() && e.name.startsWith(SECRET_FILE_PREFIX)).length;
  check(checks, "gate secrets", "pass", `${lineSays}; ${copies} copies are in ${dir} now, the values the gate knows`);
}

/**
 * The Codex CLI's auth.json files gate-secrets copies where a Hermes home's
 * .env on its line puts CODEX_HOME now (gate-secrets.ts followCodexHome:
 * the same rule), as the one running doctor reads those .env files.
 */
function followedCodexHomes(scope: UnitScope, named: AgentSecretFile[]): Set<string> {
  const out = new Set<string>();
  for (const n of named.filter(isHermesHomeDotenv)) {
    let bytes: Buffer | undefined;
    try {
      bytes = readIfExists(onDisk(scope, n.file));
    } catch {
      // Not a file, or not ours to read: gate-secrets (as the agent) decides; install's view below says what Hermes reads.
      continue;
    }
    // One past what gate-secrets reads gives it nothing to follow (named above as giving the gate no values).
    if (bytes === undefined || bytes.length > MAX_SECRET_FILE_BYTES) continue;
    const found = dotenvCodexHomeAuth(bytes, userByName(n.user, scope.root)?.home, scope.root);
    if (found !== undefined && "file" in found) out.add(found.file);
  }
  return out;
}

/**
 * The watches of the profiles' files (gate-profiles.ts: instances of
 * GATE_SECRETS_WATCH that gate-secrets starts at each copy), while the gate
 * (or the watch) runs: one not active (failed: short of inotify instances,
 * past its trigger limit; or never started: a profile made while a copy
 * ran) leaves a change there to the next copy.
 */
function profileWatchChecks(scope: UnitScope, named: AgentSecretFile[], systemctl: Systemctl, checks: DoctorCheck[]): void {
  const paths = named.filter((n) => n.profiles).flatMap((n) => watchedProfileDirs(n.file, scope).flatMap(profileWatchPaths));
  if (paths.length === 0) return;
  const state = listWatches(systemctl);
  if (typeof state === "string") return;
  const idle = paths.flatMap((p) => {
    const unit = watchUnitName(p);
    const active = unit === undefined ? "not watched: its path is too long for a unit's name" : (state.get(unit) ?? "not started");
    return active === "active" ? [] : [`${escapeText(p)} (${active})`];
  });
  if (idle.length > 0) {
    check(checks, "gate secrets", "warn", `the watches of Hermes profiles' files are not active: ${idle.join(", ")}: a change there is copied for the gate with the next copy only`, escapeText(shellLine(["systemctl", "start", GATE_SECRETS_SERVICE])));
  }
}

/** A gateway unit's user and the files of its environment, as install sees them (those the one running doctor may read). */
function gatewayOwner(scope: UnitScope, unit: string, systemctl: Systemctl | undefined): GatewayOwner {
  const read = lenientDiskReader(scope);
  const files = unitFiles(scope, unit, isTemplate(unit) ? undefined : systemctl);
  return gatewayOwnerOf(scope, unit, files, unitEnvironment(scope, files, read), read);
}

/**
 * Why gate-secrets skips a gateway's systemd file that is there: its user may
 * not read it (by the permission bits of the file: owner, group, others) and
 * root may not read it for the gate (rootAloneProblem, gate-secrets' own rule).
 */
function unitFileNotRead(scope: UnitScope, n: AgentSecretFile): string | undefined {
  let st: fs.Stats;
  try {
    st = fs.statSync(onDisk(scope, n.file));
  } catch {
    return undefined;
  }
  const user = userByNameOrUid(n.user, scope.root);
  if (!user || user.uid === 0) return undefined;
  const bit = st.uid === user.uid ? 0o400 : groupIdsOf(user, scope.root).has(st.gid) ? 0o040 : 0o004;
  if (st.mode & bit) return undefined;
  const problem = rootAloneProblem(n.file, scope);
  return problem ? `${escapeText(user.name)} may not read it, and root reads it for the gate only when it is root's alone: ${problem}` : undefined;
}

/**
 * The files GATE_SECRETS_NEW_PATH watches for (named for the gate, not there
 * at install) that are there now: their making was copied for the gate, but
 * their later changes can go unseen among the other missing files' events
 * (deploy/systemd/system/media-outbox-gate-secrets-new.path says why).
 * Install again watches them with the others.
 */
function madeAfterInstallChecks(scope: UnitScope, files: { fragment?: string; dropIns: string[] }, checks: DoctorCheck[]): void {
  const read = diskReader(scope);
  const made = [...(files.fragment ? [files.fragment] : []), ...files.dropIns]
    .flatMap((f) => parseUnitText(read(f) ?? ""))
    .filter((a) => a.section === "Path" && a.key === "PathChanged")
    .map((a) => (splitWords(a.value)[0] ?? "").replace(/%%/g, "%"))
    .filter((file) => file !== "" && isThere(scope, file));
  if (made.length > 0) {
    const why = "made after install: copied for the gate when made, but a later change to them can go unseen until the gate's next start";
    check(checks, "gate secrets", "warn", `${made.map(escapeText).join(", ")}: ${why}`, "run media-outbox install systemd --gate again, with the same options");
  }
}

/** Whether `file` is there; false too where the one running doctor may not look. */
function isThere(scope: UnitScope, file: string): boolean {
  try {
    fs.lstatSync(onDisk(scope, file));
    return true;
  } catch {
    return false;
  }
}

/**
 * The files that hold secrets in the Hermes homes whose files the gate
 * copies (their .env, stores and MCP token files, and their profiles'), and
 * in the homes of the users it reads them as (~/.docker/config.json and the
 * others local mode reads), that it does not copy: install names a
 * profile's .env and an MCP server's token file only if it exists then, a
 * profile's stores only if the profile does, and a user's home's stores
 * (`homeStores`: userHomeStoreFiles of each user named) only if that home
 * does. What the one running doctor may not list is not judged.
 */
function unnamedSecretFiles(scope: UnitScope, named: AgentSecretFile[], homeStores: Set<string>): string[] {
  const users = [...new Set(named.map((n) => n.user))];
  const files = named.map((n) => n.file);
  // A store of a user's home is no Hermes file: ~/.codex/auth.json is named like a Hermes home's auth.json, and ~/.codex is no Hermes home.
  const homes = new Set(files.filter((file) => !homeStores.has(file)).map(hermesHomeOf).filter((h) => h !== undefined));
  const now = [...[...homes].flatMap((home) => hermesSecretFilesNow(home, scope)), ...users.flatMap((user) => userHomeStoresNow(user, scope))];
  // A file in a named directory (mcp-tokens/) is named with it; one of a profile of a named profiles directory, with it (or said apart: untakenProfiles).
  const profilesDirs = named.filter((n) => n.profiles).map((n) => n.file);
  return [...new Set(now)].filter((file) => !files.includes(file) && !files.includes(`${path.dirname(file)}/`) && !profilesDirs.some((dir) => file.startsWith(dir)));
}

/**
 * Sends a fixed probe PNG through the gate the way prepare does (always the
 * same bytes and name, so repeated runs reuse one file; the agent cannot
 * delete it, the janitor does), checks that the one running doctor can read
 * what was published, and hands it to `judge` for the gateways' verdict.
 */
export async function gateProbe(ctx: GateContext, config: Config, checks: DoctorCheck[], judge: (media: { path: string; directive: string }) => void): Promise<void> {
  if (!ctx.answering) {
    check(checks, "probe", "fail", "skipped: the gate does not answer", "fix the gate line above");
    return;
  }
  const png = makePng(4, (i) => (i * 37 + 11) & 0xff);
  const bytes = (async function* () {
    yield png;
  })();
  const { report, failure } = await prepareThroughGate([{ stream: bytes, name: PROBE_NAME }], {
    gate: ctx.gate,
    sourcePolicy: sourcePolicyFor(config),
    timeoutMs: timeoutOf(ctx.gate),
  });
  const journal = escapeText(shellLine(["journalctl", "-u", GATE_SERVICE]));
  if (failure) {
    check(checks, "probe", "fail", `prepare through the gate failed: ${failure.message}`, journal);
    return;
  }
  const media = report.media[0];
  if (!media) {
    const dropped = report.media_dropped[0];
    check(checks, "probe", "fail", `the gate refused a generated PNG: ${dropped ? `${dropped.code}: ${dropped.reason}` : "no answer for it"}`, journal);
    return;
  }
  try {
    fs.closeSync(fs.openSync(media.path, "r"));
  } catch (err) {
    check(checks, "probe", "fail", `the gate published ${escapeText(media.path)}, but you cannot read it: ${escapeText((err as Error).message)}`, "the gateway's user must be in the gate's group: run media-outbox install systemd --gate --agent-user USER again");
    return;
  }
  judge({ path: media.path, directive: media.directive });
}

/** The bytes gate-secrets copies of `file`: a regular file of at most MAX_SECRET_FILE_BYTES (it skips any other). */
function copiedBytes(file: string): number {
  try {
    const st = fs.statSync(file, { throwIfNoEntry: false });
    return st?.isFile() && st.size <= MAX_SECRET_FILE_BYTES ? st.size : 0;
  } catch {
    // Not ours to see (doctor run as another user than the agent's): not counted.
    return 0;
  }
}
