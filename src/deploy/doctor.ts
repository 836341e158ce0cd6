// `media-outbox doctor`: does the gateway really deliver from the outbox? One
// line per check, pass/warn/fail, each failure with the command that fixes it.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Config } from "../config/config.js";
import { FatalError } from "../core/errors.js";
import { escapeText, someOf } from "../core/escape.js";
import { makePng } from "../core/png.js";
import { formatBytes } from "../core/units.js";
import { prepare } from "../prepare/prepare.js";
import { NotDedicatedError } from "../safety/dedicated.js";
import { readOperatorFile } from "../safety/operator-file.js";
import { UNREADABLE_FORMATS } from "../content/formats.js";
import { UNTAKEN_PROFILES_FIX, knownSecretFiles, listHermesHomesNamed, readSecretFile, untakenProfilesMessage } from "../content/known.js";
import { environmentOf } from "../content/process-environments.js";
import { knownSecretSources } from "../prepare/content.js";
import { allowDirProblem, isUnderRoot, isWithin, mediaLineProblem, parseAllowDirs } from "../safety/gateway.js";
import { type Layout, openLayout } from "../state/layout.js";
import { type EffectiveEnvironment, type UnitScope, diskReader, effectiveEnvironment, installDir, onDisk, templateOf, unitFiles } from "./gateway-units.js";
import { BY_HAND, gateAgentChecks, gateLayoutChecks, gateProbe, gateReader, gateServiceChecks, startedByHand } from "./doctor-gate.js";
import { allowDirsOf, hermesConfigFiles, listsOutbox, readHermesConfig } from "./hermes-config.js";
import { pluginCheck } from "./hermes-plugin.js";
import { ALLOW_DIRS, STRICT_VARS, alsoWritable, gatewayUnitsFor, manifestPath, readManifest, unitScope } from "./install.js";
import { mediaPolicyChecks } from "./policy-sources.js";
import { writableRootChecks } from "./writable-roots.js";
import { GATE_SERVICE, JANITOR_SERVICE, JANITOR_TIMER, WATCH_SERVICE } from "./render.js";
import { type DoctorCheck, check } from "./doctor-check.js";
import { parseUnitText } from "./systemd-syntax.js";
import { type Scope, Systemctl, scopeArgs, shellLine } from "./systemctl.js";
import { userByName, userByUid } from "./users.js";

export type { CheckStatus, DoctorCheck } from "./doctor-check.js";

export interface DoctorReport {
  ok: boolean;
  outbox: string;
  scope: Scope;
  systemd: { running: boolean; detail: string };
  checks: DoctorCheck[];
}

export interface DoctorOptions {
  config: Config;
  scope?: Scope;
  root?: string;
  units?: string[];
  env?: NodeJS.ProcessEnv;
  /** Run the end-to-end prepare probe (default true). */
  probe?: boolean;
}

const PROBE_STEM = "media-outbox-doctor-probe";

/**
 * The fix commands, as they are typed in this scope (`--user` where each
 * program wants it, words shell-quoted) and escaped for output: a unit name
 * may carry a backslash or `media:`.
 */
function fixCommands(scope: Scope) {
  const sc = new Systemctl(scope);
  return {
    systemctl: (...args: string[]) => escapeText(sc.commandLine(...args)),
    journal: (unit: string) => escapeText(shellLine(["journalctl", ...scopeArgs(scope), "-u", unit])),
    mediaOutbox: (command: string[], ...args: string[]) => escapeText(shellLine(["media-outbox", ...command, ...scopeArgs(scope), ...args])),
  };
}

/** A tiny valid PNG with random pixels, so it never matches (and reuses) a file already in the outbox. */
export function probePng(): Buffer {
  return makePng(4, () => Math.floor(Math.random() * 256));
}

function outboxChecks(config: Config, checks: DoctorCheck[]): Layout | undefined {
  const problem = allowDirProblem(config.outbox);
  if (problem) check(checks, "outbox path", "fail", `the gateway cannot use ${escapeText(config.outbox)} in ${ALLOW_DIRS}: ${problem}`, "choose a plain absolute outbox path (--outbox / MEDIA_OUTBOX_DIR)");
  else check(checks, "outbox path", "pass", `${escapeText(config.outbox)} is parsable in ${ALLOW_DIRS} and survives MEDIA: extraction`);
  let layout: Layout | undefined;
  try {
    layout = openLayout(config, { create: false });
  } catch (err) {
    // Not a directory of its own (a home, /): refused outright, like every command does.
    if (!(err instanceof FatalError) || err instanceof NotDedicatedError) throw err;
    const name = err.code === "outbox_unsafe" ? "outbox" : "state";
    check(checks, name, "fail", err.message, "follow the instruction in the message, then run media-outbox doctor again");
    return undefined;
  }
  if (!layout) {
    check(checks, "outbox", "fail", `${escapeText(config.outbox)} does not exist`, `media-outbox prepare --outbox ${escapeText(config.outbox)} FILE creates it (0700), as the user the agent runs as`);
    return undefined;
  }
  check(checks, "outbox", "pass", `${escapeText(layout.outbox)} exists, is private (0700, yours) and no ancestor is writable by others`);
  // openLayout has already refused a state, staging, ledger or quarantine
  // directory on another filesystem (the "state" line above).
  check(checks, "staging", "pass", `staging, ledger and quarantine live beside the outbox, on its filesystem (${escapeText(layout.stateDir)})`);
  const st = fs.statfsSync(layout.outbox);
  const free = st.bavail * st.bsize;
  if (free < config.maxSize) check(checks, "free space", "fail", `${formatBytes(free)} free, less than one file of the ${formatBytes(config.maxSize)} cap`, "free space on that filesystem, or run media-outbox janitor");
  else if (free < 10 * config.maxSize) check(checks, "free space", "warn", `${formatBytes(free)} free: room for fewer than 10 files of the ${formatBytes(config.maxSize)} cap`, "free space, or lower the retention (janitor)");
  else check(checks, "free space", "pass", `${formatBytes(free)} free`);
  return layout;
}

/**
 * What the secret check knows of this host's own secrets (src/content/known.ts):
 * a Hermes file of secrets that is there but gives no values (too large,
 * unreadable, a damaged JSON store) leaves its values unknown, and nothing
 * else says so.
 */
function knownSecretChecks(config: Config, checks: DoctorCheck[]): void {
  // Profiles past the bound first: prepare refuses every file whose check needs their values (known.ts loadKnownSecrets).
  const { untaken } = listHermesHomesNamed(config.hermesHome, config.home);
  if (untaken.length > 0) {
    check(checks, "known secrets", "fail", `${untakenProfilesMessage(untaken)}: prepare refuses every file whose check needs them (unscannable_content)`, UNTAKEN_PROFILES_FIX);
    return;
  }
  const readings = knownSecretFiles(knownSecretSources(config.hermesHome, config.home)).map(readSecretFile).filter((r) => r.exists);
  const problems = readings.filter((r) => r.problem !== undefined);
  if (problems.length > 0) {
    const which = problems.map((r) => `${r.file.where} (${escapeText(r.file.file)}): ${r.problem}`).join("; ");
    check(checks, "known secrets", "warn", `the secret check does not know the values of ${which}`, "make each a readable regular file of at most 1 MiB (a JSON store: valid JSON), then run media-outbox doctor again");
    return;
  }
  if (readings.length === 0) {
    check(checks, "known secrets", "pass", `no Hermes file of secrets under ${escapeText(config.hermesHome)} (.env, auth.json, config.yaml…): the secret check looks for credential formats, and for ${ENVIRONMENT_SECRETS}`);
    return;
  }
  const values = new Set(readings.flatMap((r) => r.values.filter((v) => !v.form).map((v) => Buffer.from(v.bytes).toString("latin1"))));
  check(checks, "known secrets", "pass", `the secret check knows ${values.size} values from ${readings.map((r) => r.file.where).join(", ")}, and ${ENVIRONMENT_SECRETS}`);
}

/** The secrets no file gives, which doctor does not read: a prepare reads its own environments, the watch and the gate theirs. */
const ENVIRONMENT_SECRETS = "the secrets of the environment each prepare runs under (the gateway's) and of each running gateway a gateway.pid of the Hermes home or a profile names (read then, not here)";

/** The allow list against what the secret check can read: an archive it cannot read is refused every time, so allowing it only moves the failure to 3 a.m. */
function allowChecks(config: Config, checks: DoctorCheck[]): void {
  const unreadable = config.allow.filter((ext) => Object.hasOwn(UNREADABLE_FORMATS, ext));
  if (unreadable.length === 0) {
    check(checks, "allow list", "pass", `the secret check reads every allowed type (${config.allow.length} extensions)`);
    return;
  }
  const which = unreadable.map((ext) => `.${ext} (${UNREADABLE_FORMATS[ext as keyof typeof UNREADABLE_FORMATS]})`).join(", ");
  check(checks, "allow list", "warn", `the allow list has ${which}, whose content the secret check cannot read: every such file is refused as unscannable_content`, "drop them from the allow list (config file or --allow); send archives as .zip or .tar.gz, which are read");
}

function unitRoots(env: EffectiveEnvironment): string[] | undefined {
  const v = env.vars.get(ALLOW_DIRS);
  return v?.value === undefined ? undefined : parseAllowDirs(v.value, env.home);
}

/**
 * doctor checks the outbox of the user it runs as (or --outbox, the config
 * file): run by root right after `sudo install systemd`, that is root's own,
 * and every outbox, unit and probe line would judge the wrong outbox, with
 * fixes that would set up a second one. The install record names the
 * outbox the units were written for.
 */
function installedOutboxCheck(scope: UnitScope, installed: string, config: Config, checks: DoctorCheck[]): void {
  if (installed === config.outbox) return;
  let uid: number | undefined;
  try {
    uid = fs.statSync(onDisk(scope, installed)).uid;
  } catch {
    uid = undefined;
  }
  const owner = uid === undefined ? undefined : userByUid(uid, scope.root)?.name;
  const fix =
    owner !== undefined && uid !== process.geteuid?.()
      ? `run doctor as ${escapeText(owner)}, the user the agent runs as: ${escapeText(shellLine(["sudo", "-u", owner, "media-outbox", "doctor", ...scopeArgs(scope.scope)]))}`
      : `check that outbox: ${escapeText(shellLine(["media-outbox", "doctor", ...scopeArgs(scope.scope), "--outbox", installed]))}`;
  check(
    checks,
    "installed outbox",
    "fail",
    `media-outbox install systemd set up ${escapeText(installed)}${owner !== undefined ? ` (${escapeText(owner)}'s)` : ""}, but this doctor resolved ${escapeText(config.outbox)} (the outbox of the user it runs as, or of --outbox, MEDIA_OUTBOX_DIR, the config file): the lines below check that one`,
    fix,
  );
}

/** media-outbox is installed in this scope: the units its record covers, when the record can be read. */
interface Installed {
  units?: Set<string>;
}

/** Says why a gateway (its unit's environment) cannot read published files, if it cannot. */
export type ReaderProblem = (env: EffectiveEnvironment) => string | undefined;

/** Why the gateway's user cannot read files the outbox's owner published (0600), if it cannot. */
function readerProblem(scope: UnitScope, env: EffectiveEnvironment, outboxUid: number | undefined): string | undefined {
  if (outboxUid === undefined) return undefined;
  const uid = env.user ? (/^\d+$/.test(env.user) ? Number(env.user) : userByName(env.user, scope.root)?.uid) : scope.scope === "system" ? 0 : process.getuid?.();
  if (uid === undefined || uid === 0 || uid === outboxUid) return undefined;
  const owner = userByUid(outboxUid, scope.root)?.name ?? `uid ${outboxUid}`;
  return `the gateway runs as ${escapeText(env.user ?? String(uid))} but the outbox belongs to ${escapeText(owner)}: published files are 0600, so the gateway cannot read them`;
}

function gatewayChecks(
  scope: UnitScope,
  units: string[],
  outbox: string,
  reader: ReaderProblem,
  systemctl: Systemctl | undefined,
  installed: Installed | undefined,
  checks: DoctorCheck[],
): EffectiveEnvironment[] {
  const fix = fixCommands(scope.scope);
  const covered = installed?.units;
  // A second install is refused, and one with --unit covers only that unit: once installed, the fix is uninstall, then install as before.
  const reinstall = (...args: string[]) => `${fix.mediaOutbox(["uninstall", "systemd"])}, then ${fix.mediaOutbox(["install", "systemd"], ...args)} with the other options it was installed with`;
  const envs: EffectiveEnvironment[] = [];
  if (units.length === 0) {
    check(checks, "gateway units", "warn", `no Hermes gateway unit found (${scope.scope} units); the probe cannot check the gateway's roots`, `name it: ${fix.mediaOutbox(["doctor"], "--unit", "NAME.service")} (a gateway not run by systemd: see the hermes-config line)`);
    return envs;
  }
  for (const unit of units) {
    const name = `gateway ${escapeText(unit)}`;
    const env = effectiveEnvironment(scope, unit, [ALLOW_DIRS, ...Object.keys(STRICT_VARS)], systemctl);
    if (!env.loaded) {
      check(checks, name, "fail", `systemd does not know ${escapeText(unit)}`, `check the name: ${fix.systemctl("list-unit-files", "hermes*")}`);
      continue;
    }
    envs.push(env);
    const allow = env.vars.get(ALLOW_DIRS)!;
    const roots = unitRoots(env);
    const install = fix.mediaOutbox(["install", "systemd"], "--unit", unit);
    const again = `${reinstall()} (without --unit it covers every gateway unit found, ${escapeText(unit)} included)`;
    if (allow.unknown) check(checks, name, "fail", `cannot tell what ${ALLOW_DIRS} is: ${escapeText(allow.unknown)}`, "fix that file, then run media-outbox doctor again");
    else if (!roots || !isUnderRoot(outbox, roots)) {
      const later = covered && !covered.has(unit) && !covered.has(templateOf(unit)) ? " (added after media-outbox was installed)" : "";
      const what = allow.source === "none" ? "is not set" : allow.source === "unset" ? "is removed by UnsetEnvironment=" : `does not list the outbox (${escapeText(allow.value ?? "")}, from ${escapeText(allow.from ?? "?")})`;
      check(checks, name, "fail", `${ALLOW_DIRS} ${what}${later}: the gateway will not deliver outbox files`, `${installed ? again : install}, then ${fix.systemctl("restart", unit)}`);
    } else {
      check(checks, name, "pass", `${ALLOW_DIRS} lists the outbox (from ${escapeText(allow.from ?? "?")}, read via ${env.how})`);
      if (env.mainPid) {
        const entries = environmentOf(env.mainPid);
        const running = entries && new Map(entries);
        const runningRoots = running ? parseAllowDirs(running.get(ALLOW_DIRS), env.home) : undefined;
        if (runningRoots && !isUnderRoot(outbox, runningRoots)) {
          check(checks, `${name} process`, "warn", `the running gateway (pid ${env.mainPid}) started before the outbox was added`, fix.systemctl("restart", unit));
        }
      }
    }
    const cannotRead = reader(env);
    if (cannotRead) check(checks, `${name} user`, "fail", cannotRead, "run the agent (and so prepare) as the gateway's user, or the gateway as the outbox's owner");
    const strictOff = Object.entries(STRICT_VARS).filter(([k, v]) => env.vars.get(k)?.value !== v);
    if (strictOff.length === 0) check(checks, `strict ${escapeText(unit)}`, "pass", "strict mode is on: only the allowed roots (the outbox) are delivered");
    else {
      check(
        checks,
        `strict ${escapeText(unit)}`,
        "warn",
        `strict mode is off (${strictOff.map(([k, v]) => `${k}=${v} not set`).join(", ")}): in the gateway's default mode any path not on its denylist is delivered, so the outbox is not the only exit`,
        installed ? reinstall("--strict") : `${install} --strict`,
      );
    }
  }
  return envs;
}

/**
 * The janitor line when its timer is not installed. A gate started by hand
 * (media-outbox serve) was never installed, so no timer was either: the
 * janitor of its outbox is then the operator's job, said as a warning with
 * the command to schedule (as the gate's user, on its outbox and state), not
 * as a failed install.
 */
function janitorNotInstalled(checks: DoctorCheck[], fix: ReturnType<typeof fixCommands>, byHand: HandStartedGate | undefined): void {
  if (!byHand) {
    check(checks, "janitor timer", "fail", `${JANITOR_TIMER} is not installed`, fix.mediaOutbox(["install", "systemd"]));
    return;
  }
  const run = shellLine(["env", `MEDIA_OUTBOX_DIR=${byHand.outbox}`, `MEDIA_OUTBOX_STATE_DIR=${byHand.stateDir}`, "media-outbox", "janitor"]);
  check(
    checks,
    "janitor timer",
    "warn",
    `${JANITOR_TIMER} is not installed: ${BY_HAND}, so nothing removes old files from its outbox; that is yours to schedule while it runs so`,
    `as ${escapeText(byHand.user)}, from cron or a timer of your own (hourly): ${escapeText(run)}; or run the gate under systemd, janitor included: media-outbox install systemd --system --gate`,
  );
}

/** A gate started by hand: its outbox and state (as it answers), and the user it runs as (its socket's owner). */
interface HandStartedGate {
  outbox: string;
  stateDir: string;
  user: string;
}

function serviceChecks(scope: UnitScope, systemctl: Systemctl | undefined, why: string, checks: DoctorCheck[], byHand?: HandStartedGate): void {
  const fix = fixCommands(scope.scope);
  if (!systemctl) {
    // Without a manager, only the files can be checked.
    const dir = installDir(scope);
    const timer = fs.existsSync(onDisk(scope, path.join(dir, JANITOR_TIMER)));
    const enabled = fs.existsSync(onDisk(scope, path.join(dir, "timers.target.wants", JANITOR_TIMER)));
    if (!timer) janitorNotInstalled(checks, fix, byHand);
    else check(checks, "janitor timer", "warn", `${JANITOR_TIMER} is installed${enabled ? " and enabled" : ""}; its state is unknown: ${escapeText(why)}`, `where systemd runs: ${fix.systemctl("enable", "--now", JANITOR_TIMER)}`);
    const watch = fs.existsSync(onDisk(scope, path.join(dir, WATCH_SERVICE)));
    check(checks, "watch service", "pass", watch ? `${WATCH_SERVICE} is installed; its state is unknown without systemd` : `${WATCH_SERVICE} is not installed (optional: install systemd --with-watch)`);
    return;
  }
  const timer = systemctl.show(JANITOR_TIMER, ["LoadState", "UnitFileState", "ActiveState"]);
  const service = systemctl.show(JANITOR_SERVICE, ["Result", "ExecMainStatus", "ExecMainExitTimestamp"]);
  if (timer.get("LoadState") !== "loaded") janitorNotInstalled(checks, fix, byHand);
  else if (timer.get("UnitFileState") !== "enabled" || timer.get("ActiveState") !== "active") {
    check(checks, "janitor timer", "fail", `${JANITOR_TIMER} is ${timer.get("UnitFileState") ?? "?"}/${timer.get("ActiveState") ?? "?"}: old files are never removed`, fix.systemctl("enable", "--now", JANITOR_TIMER));
  } else if (service.get("Result") && service.get("Result") !== "success") {
    check(checks, "janitor timer", "fail", `the last janitor run failed (${service.get("Result")}, exit status ${service.get("ExecMainStatus") ?? "?"})`, fix.journal(JANITOR_SERVICE));
  } else {
    const last = service.get("ExecMainExitTimestamp");
    check(checks, "janitor timer", "pass", `enabled and active; last run: ${last ? `${escapeText(last)}, success` : "not yet"}`);
  }
  const watch = systemctl.show(WATCH_SERVICE, ["LoadState", "ActiveState", "SubState", "UnitFileState", "Result", "ExecMainStatus"]);
  if (watch.get("LoadState") !== "loaded") check(checks, "watch service", "pass", `${WATCH_SERVICE} is not installed (optional: install systemd --with-watch)`);
  else if (watch.get("ActiveState") === "active") check(checks, "watch service", "pass", `${WATCH_SERVICE} is running`);
  else if (watch.get("ActiveState") === "failed") check(checks, "watch service", "fail", `${WATCH_SERVICE} failed (${watch.get("Result") ?? "?"})`, `${fix.journal(WATCH_SERVICE)}; then ${fix.systemctl("restart", WATCH_SERVICE)}`);
  else if (watch.get("SubState") === "auto-restart") {
    // Restart=always with RestartSec=5s never reaches the start limit: a watch
    // that cannot start stays "activating" between attempts, never "failed".
    check(
      checks,
      "watch service",
      "fail",
      `${WATCH_SERVICE} keeps failing and being restarted (${watch.get("Result") ?? "?"}, exit status ${watch.get("ExecMainStatus") ?? "?"}): the outbox is not guarded`,
      `see why: ${fix.journal(WATCH_SERVICE)}`,
    );
  }
  else check(checks, "watch service", "warn", `${WATCH_SERVICE} is installed but ${watch.get("ActiveState") ?? "not running"}`, fix.systemctl("enable", "--now", WATCH_SERVICE));
}

/** The entries of a unit's ReadWritePaths=, as systemd has them (or as its files say, without systemd). */
function writablePathsOf(scope: UnitScope, unit: string, systemctl: Systemctl | undefined): string[] | undefined {
  let words: string[];
  if (systemctl) {
    const shown = systemctl.show(unit, ["LoadState", "ReadWritePaths"]);
    if (shown.get("LoadState") !== "loaded") return undefined;
    words = (shown.get("ReadWritePaths") ?? "").split(/\s+/);
  } else {
    const files = unitFiles(scope, unit);
    if (!files.fragment) return undefined;
    const read = diskReader(scope);
    words = [files.fragment, ...files.dropIns]
      .flatMap((f) => parseUnitText(read(f) ?? ""))
      .filter((a) => a.section === "Service" && a.key === "ReadWritePaths")
      .flatMap((a) => a.value.split(/\s+/));
  }
  // "-" marks an optional entry; quotes come from paths written with spaces (rare: shown as they are).
  return words.map((w) => w.replace(/^-/, "").replace(/^"(.*)"$/, "$1")).filter((w) => w !== "");
}

/**
 * Each installed media-outbox service may write the outbox and its state
 * through one ReadWritePaths= entry: systemd makes every entry a mount of its
 * own, and link(2) (publication) and rename(2) (quarantine) fail with EXDEV
 * across mounts, even on one filesystem. Units written by an older install
 * list them apart, and then every drop is refused. User units have none
 * (deploy/systemd/user/hardening.conf): one that has was written by an older
 * install, with namespacing a user manager applies only inside a user
 * namespace, and fails at every start where it cannot make one.
 */
function writablePathsChecks(scope: UnitScope, units: string[], systemctl: Systemctl | undefined, outbox: string, stateDir: string, checks: DoctorCheck[]): void {
  const fix = fixCommands(scope.scope);
  for (const unit of units) {
    const entries = writablePathsOf(scope, unit, systemctl);
    if (entries === undefined) continue;
    const name = `writable ${unit}`;
    if (scope.scope === "user") {
      if (entries.length > 0) {
        check(
          checks,
          name,
          "warn",
          `${unit} has ReadWritePaths= and the other namespacing settings of an older install: a user manager applies them only inside a user namespace, and where it cannot make one (unprivileged user namespaces off, many containers) every start fails (217/USER or 226/NAMESPACE)`,
          `${fix.mediaOutbox(["uninstall", "systemd"])}, then install systemd --user again`,
        );
      }
      continue;
    }
    const together = entries.find((e) => isWithin(outbox, e) && isWithin(stateDir, e));
    if (together) {
      const others = alsoWritable(onDisk(scope, together), [outbox, stateDir].map((p) => onDisk(scope, p)));
      const wider = others.length > 0 ? `; the service may also write what else is there (${someOf(others)})` : "";
      check(checks, name, "pass", `ReadWritePaths= ${escapeText(together)} holds the outbox and its state on one mount (link(2) and rename(2) need that)${wider}`);
    } else {
      check(
        checks,
        name,
        "fail",
        `ReadWritePaths= (${escapeText(entries.join(" ")) || "empty"}) has no one entry holding both the outbox ${escapeText(outbox)} and its state ${escapeText(stateDir)}: systemd mounts each entry apart, and publication (link(2)) and quarantine (rename(2)) fail with EXDEV across mounts`,
        `${fix.mediaOutbox(["uninstall", "systemd"])}, then install systemd again (it writes one entry)`,
      );
    }
  }
}

async function hermesConfigChecks(config: Config, checks: DoctorCheck[]): Promise<void> {
  const files = hermesConfigFiles(config);
  if (files.length === 0) {
    check(checks, "hermes config", "pass", `no config.yaml under ${escapeText(config.hermesHome)}: the gateway takes its roots from the environment`);
    return;
  }
  for (const f of files) {
    const name = `hermes config${f.profile ? ` ${escapeText(f.profile)}` : ""}`;
    let value: unknown;
    try {
      value = await readHermesConfig(readOperatorFile(f.file, { what: "Hermes config file" }).text);
    } catch (err) {
      // A FatalError's message is escaped where it is made (the file's name, the parser's words).
      check(checks, name, "warn", `cannot read ${escapeText(f.file)}: ${err instanceof FatalError ? err.message : escapeText((err as Error).message)}`, "fix the file");
      continue;
    }
    const fix = `media-outbox install hermes-config${f.profile ? ` --profile ${escapeText(f.profile)}` : ""}`;
    const list = allowDirsOf(value);
    if (list === undefined || list === null) check(checks, name, "pass", `${escapeText(f.file)} sets no gateway.media_delivery_allow_dirs (the environment decides)`);
    else if (listsOutbox(list, config.outbox, config.home)) check(checks, name, "pass", `${escapeText(f.file)} lists the outbox in gateway.media_delivery_allow_dirs`);
    else check(checks, name, "fail", `${escapeText(f.file)} sets gateway.media_delivery_allow_dirs without the outbox: that profile will not deliver outbox files`, fix);
    const plugin = pluginCheck(value, f.file, f.profile);
    if (plugin) check(checks, `hermes plugin${f.profile ? ` ${escapeText(f.profile)}` : ""}`, plugin.status, plugin.message, plugin.fix);
  }
}

/**
 * The verdict on a published probe, whoever published it (prepare here, or
 * the gate): its MEDIA: line extracts whole, and every checked gateway unit
 * would deliver it.
 */
export function judgeProbe(media: { path: string; directive: string }, envs: EffectiveEnvironment[], checks: DoctorCheck[], what: string): void {
  const lineProblem = mediaLineProblem(media.directive, media.path);
  if (lineProblem) {
    check(checks, "probe", "fail", `the MEDIA: line for ${escapeText(media.path)} would not reach the gateway whole: ${lineProblem}`, "choose a plain outbox path");
    return;
  }
  const real = fs.realpathSync(media.path);
  const outside = envs.filter((e) => !isUnderRoot(real, unitRoots(e) ?? []));
  if (envs.length === 0) check(checks, "probe", "warn", `${what} and its MEDIA: line extracts whole, but no gateway unit was checked for containment`, "name the gateway unit with --unit");
  else if (outside.length > 0) check(checks, "probe", "fail", `a prepared file would not be delivered by ${outside.map((e) => escapeText(e.unit)).join(", ")}: it is outside that unit's ${ALLOW_DIRS}`, "see the gateway lines above");
  else check(checks, "probe", "pass", `${what}; its MEDIA: line extracts whole and every checked gateway unit would deliver it`);
}

async function probe(config: Config, layout: Layout, envs: EffectiveEnvironment[], checks: DoctorCheck[]): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "media-outbox-doctor-"));
  let published: string | undefined;
  try {
    const src = path.join(dir, `${PROBE_STEM}.png`);
    fs.writeFileSync(src, probePng(), { mode: 0o600 });
    // The probe tests the way out, not the operator's source policy: any source root, png allowed.
    const probeConfig: Config = { ...config, sourceRoots: [], allow: config.allow.includes("png") ? config.allow : [...config.allow, "png"] };
    const report = await prepare([src], { resolvedConfig: probeConfig });
    const media = report.media[0];
    if (!media) {
      const d = report.media_dropped[0];
      check(checks, "probe", "fail", `prepare refused a generated PNG: ${d?.code ?? "?"}: ${d?.reason ?? "?"}`, "fix what the reason says, then run media-outbox doctor again");
      return;
    }
    if (!media.reused) published = media.path;
    judgeProbe(media, envs, checks, "prepare published a test image");
  } catch (err) {
    const msg = err instanceof FatalError ? err.message : escapeText((err as Error).message);
    check(checks, "probe", "fail", `prepare failed: ${msg}`, "fix what the message says, then run media-outbox doctor again");
  } finally {
    // The probe leaves one ledger line (the ledger is append-only); the file itself goes.
    if (published && path.dirname(published) === layout.outbox) fs.rmSync(published, { force: true });
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs every check. `ok` is false when any check fails. */
export async function doctor(options: DoctorOptions): Promise<DoctorReport> {
  const { config } = options;
  const scope = unitScope(options.scope ?? "system", options.root, options.env);
  const systemctl = new Systemctl(scope.scope, options.env);
  const state = options.root ? { running: false, why: "--root was given" } : systemctl.state();
  const live = state.running ? systemctl : undefined;
  const checks: DoctorCheck[] = [];
  // Gate mode exactly when prepare would use the gate (config.gate: the same discovery); --root looks at another system's files.
  const gate = config.gate && !options.root ? await gateLayoutChecks(config.gate, checks) : undefined;
  let record: ReturnType<typeof readManifest>;
  try {
    record = readManifest(scope);
  } catch {
    record = undefined;
  }
  // The system install record is root's alone (it keeps the bytes install replaced): a doctor run as
  // the agent, as it should be, cannot read it, but can see that it is there.
  const installed: Installed | undefined = record ? { units: new Set(record.units) } : fs.existsSync(onDisk(scope, manifestPath(scope))) ? {} : undefined;
  if (!gate && record && !record.gate) installedOutboxCheck(scope, record.outbox, config, checks);
  const layout = gate ? undefined : outboxChecks(config, checks);
  if (!gate) {
    allowChecks(config, checks);
    knownSecretChecks(config, checks);
  }
  if (state.running) check(checks, "systemd", "pass", `the ${scope.scope} manager is ${state.why}`);
  else check(checks, "systemd", "warn", `${escapeText(state.why)}: the unit files were read instead, service states are unknown`, "run media-outbox doctor on the host where the gateway runs");
  // Every instance too: each runs with its own environment.
  const units = gatewayUnitsFor(scope, options.units, live, { collapse: false });
  const outboxReal = gate?.outbox ?? layout?.outbox ?? config.outbox;
  const outboxUid = layout ? fs.statSync(layout.outbox).uid : undefined;
  const reader: ReaderProblem = gate ? gateReader(gate, scope) : (env) => readerProblem(scope, env, outboxUid);
  const envs = gatewayChecks(scope, units, outboxReal, reader, live, installed, checks);
  const byHand = gate && startedByHand(gate, scope, live) ? { outbox: gate.outbox, stateDir: gate.stateDir, user: gate.serviceUid === undefined ? "the gate's user" : (userByUid(gate.serviceUid)?.name ?? `uid ${gate.serviceUid}`) } : undefined;
  serviceChecks(scope, live, state.why, checks, byHand);
  const ours = gate ? [GATE_SERVICE, JANITOR_SERVICE, WATCH_SERVICE] : [JANITOR_SERVICE, WATCH_SERVICE];
  // Against the paths as install wrote them into the units (configured, not resolved).
  writablePathsChecks(scope, ours, live, gate?.outbox ?? config.outbox, gate?.stateDir ?? config.stateDir, checks);
  if (gate) {
    gateServiceChecks(scope, units, live, checks, gate.answering);
    gateAgentChecks(scope, units, live, checks);
  }
  await hermesConfigChecks(gate ? { ...config, outbox: gate.outbox } : config, checks);
  const policy = await mediaPolicyChecks({ scope, units, ...(live ? { systemctl: live } : {}), hermesHome: config.hermesHome, home: config.home, outbox: gate?.outbox ?? config.outbox, outboxReal });
  for (const c of policy) check(checks, c.check, c.status, c.message, c.fix);
  if (gate) {
    // A root an agent can write is a way around the gate (writable-roots.ts).
    await writableRootChecks(
      { scope, units, ...(live ? { systemctl: live } : {}), hermesHome: config.hermesHome, home: config.home, gateOutbox: gate.outbox, ...(gate.group ? { group: gate.group } : {}), ...(gate.serviceUid !== undefined ? { serviceUid: gate.serviceUid } : {}) },
      checks,
    );
  }
  if (gate) {
    if (options.probe !== false) await gateProbe(gate, config, checks, (media) => judgeProbe(media, envs, checks, "the gate published a test image"));
  } else if (layout && options.probe !== false) await probe(config, layout, envs, checks);
  else if (!layout) check(checks, "probe", "fail", "skipped: the outbox is not usable", "fix the outbox line above");
  return { ok: !checks.some((c) => c.status === "fail"), outbox: gate?.outbox ?? config.outbox, scope: scope.scope, systemd: { running: state.running, detail: state.why }, checks };
}
