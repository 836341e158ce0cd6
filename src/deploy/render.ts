// Renders the unit templates in deploy/systemd with literal, quoted paths.
import fs from "node:fs";
import path from "node:path";
import { escapeSpecifiers, pathWord, unitWord } from "./systemd-syntax.js";
import type { Scope } from "./systemctl.js";

declare const __dirname: string;

export const JANITOR_SERVICE = "media-outbox-janitor.service";
export const JANITOR_TIMER = "media-outbox-janitor.timer";
export const WATCH_SERVICE = "media-outbox-watch.service";
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
  return template.replace(/@@([A-Z]+)@@/g, (m, name: string) => {
    const v = vars[name];
    if (v === undefined) throw new Error(`template placeholder ${m} has no value`);
    return v;
  });
}

export function renderTemplate(relative: string, vars: Record<string, string>): string {
  return fill(fs.readFileSync(path.join(templateDir(), relative), "utf8"), vars);
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
  };
}

export function renderJanitorService(p: ServiceParams): string {
  return renderTemplate(`${p.scope}/${JANITOR_SERVICE}`, serviceVars(p, p.writable));
}

export function renderWatchService(p: ServiceParams): string {
  return renderTemplate(`${p.scope}/${WATCH_SERVICE}`, serviceVars(p, [...p.writable, ...p.watchWritable]));
}

export function renderJanitorTimer(): string {
  return renderTemplate(JANITOR_TIMER, {});
}

/** The gateway drop-in: `settings` are complete `Key=value` lines. */
export function renderGatewayDropIn(unit: string, settings: string[]): string {
  return renderTemplate("gateway-dropin.conf", { UNIT: unit.replace(/[^\x21-\x7e]/g, "?"), SETTINGS: settings.join("\n") });
}
