// Renders the unit templates in deploy/systemd with literal, quoted paths.
import fs from "node:fs";
import path from "node:path";
import { GATE_SECRETS_WATCH } from "./gate-profiles.js";
import { type AgentSecretFile, GATE_RUNTIME_DIR_NAME, WATCH_RUNTIME_DIR_NAME, secretFileArg } from "./gate-secrets.js";
import { assertUnitSafe, escapeSpecifiers, pathWord, unitWord } from "./systemd-syntax.js";
import type { Scope } from "./systemctl.js";

declare const __dirname: string;

export const JANITOR_SERVICE = "media-outbox-janitor.service";
export const JANITOR_TIMER = "media-outbox-janitor.timer";
export const WATCH_SERVICE = "media-outbox-watch.service";
export const GATE_SOCKET_UNIT = "media-outbox-gate.socket";
export const GATE_SERVICE = "media-outbox-gate.service";
/** Watches the agents' .env files and credential stores (those there at install) and copies them again for the running gate (and watch) when one changes. */
export const GATE_SECRETS_PATH = "media-outbox-gate-secrets.path";
/** Watches for those that were not there at install: kept apart, their directories' events do not drop the others' (the template says why). */
export const GATE_SECRETS_NEW_PATH = "media-outbox-gate-secrets-new.path";
export const GATE_SECRETS_SERVICE = "media-outbox-gate-secrets.service";
export const DROP_IN_NAME = "90-media-outbox.conf";
export const DROP_IN_ENV_NAME = "media-outbox.env";

/** This package's root (found from the bundle or the source tree; real path, so units survive a relinked global install). */
export function packageRoot(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, "deploy", "systemd", "gateway-dropin.conf"))) return fs.realpathSync(dir);
    if (dir === path.dirname(dir)) throw new Error(`cannot find deploy/systemd above ${__dirname}; the package is incomplete`);
  }
}

/** deploy/systemd of this package. */
export const templateDir = () => path.join(packageRoot(), "deploy", "systemd");

function fill(template: string, vars: Record<string, string>): string {
  const value = (m: string, name: string) => {
    const v = vars[name];
    if (v === undefined) throw new Error(`template placeholder ${m} has no value`);
    return v;
  };
  return (
    template
      // A placeholder alone on its line that renders to nothing takes its line with it.
      .replace(/^(@@([A-Z]+)@@)\n/gm, (_l, m: string, name: string) => {
        const v = value(m, name);
        return v === "" ? "" : `${v}\n`;
      })
      .replace(/@@([A-Z]+)@@/g, value)
  );
}

const readTemplate = (relative: string) => fs.readFileSync(path.join(templateDir(), relative), "utf8");

/**
 * The hardening block of a template: its scope's block (user/hardening.conf
 * for the user units, deploy/systemd/user/, which adds nothing a user
 * manager cannot apply without a user namespace: that file says why;
 * hardening.conf, the namespaces, for every system service), then
 * hardening-common.conf, what every service gets: one file each, so a
 * setting both need (the system call filter) is written once.
 */
function hardeningBlock(relative: string): string {
  const scope = relative.split("/")[0] === "user" ? "user/hardening.conf" : "hardening.conf";
  return `${readTemplate(scope)}${readTemplate("hardening-common.conf")}`;
}

/**
 * A template with its hardening block (hardeningBlock) in place of its
 * @@HARDENING@@ line, then every placeholder filled.
 */
export function renderTemplate(relative: string, vars: Record<string, string>): string {
  const text = readTemplate(relative);
  const withBlock = text.includes("@@HARDENING@@") ? text.replace(/^@@HARDENING@@\n/m, () => hardeningBlock(relative)) : text;
  return fill(withBlock, vars);
}

export interface ServiceParams {
  scope: Scope;
  node: string;
  bin: string;
  outbox: string;
  /** Directories the service may write (outbox, state…); watch adds the drop folders. */
  writable: string[];
  /** Extra directories only watch writes (drop folders). */
  watchWritable: string[];
  environment: Record<string, string>;
  user?: string;
  group?: string;
  /** The services' umask: 0077 (private files), 0027 in gate mode (published files readable by the group). */
  umask?: string;
}

function environmentLine(env: Record<string, string>): string {
  return Object.entries(env)
    .map(([k, v]) => unitWord(`${k}=${escapeSpecifiers(v)}`))
    .join(" ");
}

function serviceVars(p: ServiceParams, writable: string[]): Record<string, string> {
  return {
    NODE: pathWord(p.node, "node binary", { exec: true }),
    BIN: pathWord(p.bin, "media-outbox binary", { exec: true }),
    OUTBOX: pathWord(p.outbox, "outbox", { exec: true }),
    WRITABLE: [...new Set(writable)].map((d) => pathWord(d, "writable directory")).join(" "),
    ENVIRONMENT: environmentLine(p.environment),
    USER: p.user ?? "root",
    GROUP: p.group ?? p.user ?? "root",
    WANTEDBY: p.scope === "system" ? "multi-user.target" : "default.target",
    UMASK: p.umask ?? "0077",
  };
}

export function renderJanitorService(p: ServiceParams): string {
  return renderTemplate(`${p.scope}/${JANITOR_SERVICE}`, serviceVars(p, p.writable));
}

/** The watch unit; in gate mode (`secrets` given) it judges drops knowing the agents' .env values, as the gate does. */
export function renderWatchService(p: ServiceParams & { secrets?: AgentSecretFile[] }): string {
  const vars = serviceVars(p, [...p.writable, ...p.watchWritable]);
  return renderTemplate(`${p.scope}/${WATCH_SERVICE}`, { ...vars, SECRETS: p.secrets ? secretLines(p, p.secrets, WATCH_RUNTIME_DIR_NAME) : "" });
}

export function renderJanitorTimer(): string {
  return renderTemplate(JANITOR_TIMER, {});
}

export interface GateParams extends ServiceParams {
  socket: string;
  /** The agents' Hermes .env files and credential stores gate-secrets copies for the gate at each start, each read as its user. */
  secrets: AgentSecretFile[];
}

export function renderGateSocket(p: Pick<GateParams, "socket" | "user" | "group">): string {
  return renderTemplate(GATE_SOCKET_UNIT, { SOCKET: pathWord(p.socket, "socket"), USER: p.user ?? "root", GROUP: p.group ?? p.user ?? "root" });
}

/**
 * The lines that give a gate-mode service (the gate, the watch) its agents'
 * secrets: gate-secrets run first, as root ("+"), each file read as its
 * agent, its failure never stopping the start ("-"); the copies in the
 * unit's own runtime directory, which the content checks read as
 * $CREDENTIALS_DIRECTORY. Not LoadCredential=: systemd reads those as root,
 * and an agent's .env is the agent's to replace.
 */
function secretLines(p: ServiceParams, secrets: AgentSecretFile[], runtimeDirName: string): string {
  if (secrets.length === 0) return "";
  const dir = `/run/${runtimeDirName}`;
  return [
    "# The agents' Hermes .env files and credential stores (USER:?FILE: one that",
    "# may not exist), what the gateways' units set (KIND:FILE: EnvironmentFile=,",
    "# Environment=), and the stores of the agents' homes (~/.docker/config.json,",
    "# other agents' CLIs' OAuth tokens): their values are secrets the content",
    "# checks look for, which the service user cannot read. Copied at each start,",
    "# each file read with its own agent's permissions (deploy/gate-secrets.ts).",
    `RuntimeDirectory=${runtimeDirName}`,
    "RuntimeDirectoryMode=0700",
    `Environment=${unitWord(`CREDENTIALS_DIRECTORY=${escapeSpecifiers(dir)}`)}`,
    `ExecStartPre=${copyCommand(p, secrets, dir)}`,
  ].join("\n");
}

/**
 * `-+NODE BIN gate-secrets --into DIR USER:FILE… USER:?FILE…`: run as root,
 * each file read as its agent, its failure never failing the unit; "?" marks
 * a file whose absence is normal (a store made on first use), KIND: a file
 * systemd reads for a gateway, STORE: one a gateway's environment moves
 * (secretFileArg).
 */
function copyCommand(p: ServiceParams, secrets: AgentSecretFile[], dir: string): string {
  for (const s of secrets) {
    assertUnitSafe(s.user, "agent user");
    assertUnitSafe(s.file, "Hermes secret file");
  }
  const vars = serviceVars(p, p.writable);
  const files = secrets.map((s) => unitWord(escapeSpecifiers(secretFileArg(s)), { exec: true }));
  // A profiles directory's profiles are watched by instances gate-secrets starts (GATE_SECRETS_WATCH).
  // And what a gateway's environment is read from and moves (gate-secrets.ts followGateway).
  const watch = secrets.some((s) => s.profiles || s.gateway) ? " --watch-profiles" : "";
  return `-+${vars.NODE} ${vars.BIN} gate-secrets --into ${pathWord(dir, "runtime directory", { exec: true })}${watch} ${files.join(" ")}`;
}

/** The template whose instances watch the files of the Hermes profiles (gate-profiles.ts). */
export function renderGateSecretsWatch(): string {
  return renderTemplate(`system/${GATE_SECRETS_WATCH}`, {});
}

/**
 * A path unit that notices an agent's changed .env or store (PathChanged=:
 * written and closed, made, or replaced): `unit` GATE_SECRETS_PATH for the
 * files there at install, GATE_SECRETS_NEW_PATH for the others.
 */
export function renderGateSecretsPath(unit: typeof GATE_SECRETS_PATH | typeof GATE_SECRETS_NEW_PATH, files: string[]): string {
  // A directory (mcp-tokens/) is watched as itself: a file written and closed in it counts as its change.
  return renderTemplate(`system/${unit}`, { PATHS: files.map((file) => `PathChanged=${pathWord(file.endsWith("/") ? file.slice(0, -1) : file, "Hermes secret file")}`).join("\n") });
}

/** The service it starts: the same copies the gate's unit (and the watch's, `withWatch`) makes at its start. */
export function renderGateSecretsService(p: ServiceParams, secrets: AgentSecretFile[], withWatch: boolean): string {
  const dirs = withWatch ? [GATE_RUNTIME_DIR_NAME, WATCH_RUNTIME_DIR_NAME] : [GATE_RUNTIME_DIR_NAME];
  const copies = dirs.map((name) => `ExecStart=${copyCommand(p, secrets, `/run/${name}`)}`);
  return renderTemplate(`system/${GATE_SECRETS_SERVICE}`, { COPIES: copies.join("\n") });
}

export function renderGateService(p: GateParams): string {
  return renderTemplate(`system/${GATE_SERVICE}`, { ...serviceVars(p, p.writable), SECRETS: secretLines(p, p.secrets, GATE_RUNTIME_DIR_NAME) });
}

/** The gateway drop-in: `settings` are complete `Key=value` lines. */
export function renderGatewayDropIn(unit: string, settings: string[]): string {
  return renderTemplate("gateway-dropin.conf", { UNIT: unit.replace(/[^\x21-\x7e]/g, "?"), SETTINGS: settings.join("\n") });
}
