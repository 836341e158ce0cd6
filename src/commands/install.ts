import path from "node:path";
import type { Options } from "../cli/args.js";
import { err, out } from "../cli/io.js";
import { BASE_OPTIONS, configFromFlags } from "../cli/config-flags.js";
import { runCli } from "../cli/run.js";
import { usageError } from "../core/errors.js";
import { escapeText } from "../core/escape.js";
import { formatMode } from "../core/units.js";
import { installHermesConfig } from "../deploy/hermes-config.js";
import { runHermesPlugin } from "../cli/hermes-plugin.js";
import { applyInstall, assertNotInstalled, planInstall, readManifest, restartTargets, uninstall } from "../deploy/install.js";
import { onDisk } from "../deploy/gateway-units.js";
import { dropInOverrides } from "../deploy/policy-sources.js";
import { writableRootWarnings } from "../deploy/writable-roots.js";
import { Systemctl, scopeArgs, shellLine } from "../deploy/systemctl.js";

export const USAGE = `usage: media-outbox install systemd [--system|--user] [--unit NAME]... [--outbox DIR] [--strict]
                                  [--with-watch] [--root DIR] [--dry-run] [--restart] [--config FILE]
       media-outbox install systemd --system --gate [--agent-user USER]... [--unit NAME]... [--outbox DIR]
                                  [--strict] [--with-watch] [--dry-run] [--restart] [--config FILE]
       media-outbox uninstall systemd [--system|--user] [--root DIR] [--remove-user]
       media-outbox install hermes-config [--profile NAME] [--outbox DIR] [--dry-run] [--config FILE]
       media-outbox install hermes-plugin [--profile NAME] [--dry-run]
       media-outbox uninstall hermes-plugin [--profile NAME]`;


const OPTIONS = {
  ...BASE_OPTIONS,
  system: { type: "boolean" },
  user: { type: "boolean" },
  unit: { type: "string", multiple: true },
  strict: { type: "boolean" },
  "with-watch": { type: "boolean" },
  root: { type: "string" },
  "dry-run": { type: "boolean" },
  restart: { type: "boolean" },
  profile: { type: "string" },
  gate: { type: "boolean" },
  "agent-user": { type: "string", multiple: true },
  "remove-user": { type: "boolean" },
} satisfies Options;

/** The options each `COMMAND TARGET` takes besides --outbox, --config and --help (the usage above, as data). */
const TAKES: Record<string, (keyof typeof OPTIONS)[]> = {
  "install systemd": ["system", "user", "unit", "strict", "with-watch", "root", "dry-run", "restart", "gate", "agent-user"],
  "uninstall systemd": ["system", "user", "root", "remove-user"],
  "install hermes-config": ["profile", "dry-run"],
  "install hermes-plugin": ["profile", "dry-run"],
  "uninstall hermes-plugin": ["profile"],
};

export async function run(argv: string[], command = "install"): Promise<number> {
  return runCli(argv, OPTIONS, USAGE, async ({ values, positionals }) => {
    const target = positionals[0];
    if (positionals.length !== 1 || (target !== "systemd" && target !== "hermes-config" && target !== "hermes-plugin")) {
      throw usageError(`${command} needs one target: systemd, hermes-config or hermes-plugin\n${USAGE}`);
    }
    if (values.system && values.user) throw usageError(`--system and --user exclude each other\n${USAGE}`);
    // The gateway ignores relative entries in HERMES_MEDIA_ALLOW_DIRS: say so instead of guessing a base.
    if (values.outbox !== undefined && !path.isAbsolute(values.outbox) && !values.outbox.startsWith("~/")) {
      throw usageError(`--outbox must be an absolute path (the gateway ignores relative entries), got ${escapeText(values.outbox)}`);
    }
    const gate = values.gate === true;
    if (!gate && values["agent-user"] !== undefined) throw usageError(`--agent-user belongs to --gate\n${USAGE}`);
    if (gate && (target !== "systemd" || command !== "install")) throw usageError(`--gate belongs to install systemd\n${USAGE}`);
    if (gate && values.user) throw usageError(`--gate installs system units (a system user owns the outbox): use --system, not --user\n${USAGE}`);
    if (values["remove-user"] && command !== "uninstall") throw usageError(`--remove-user belongs to uninstall systemd\n${USAGE}`);
    // An option the target does not take is refused, never ignored: `uninstall
    // systemd --dry-run` used to uninstall for real, `install hermes-plugin
    // --strict` to install without a word about it.
    const takes = TAKES[`${command} ${target}`];
    const stray = takes ? Object.keys(values).filter((name) => !Object.hasOwn(BASE_OPTIONS, name) && !takes.includes(name as keyof typeof OPTIONS)) : [];
    if (stray.length > 0) throw usageError(`${command} ${target} does not take ${stray.map((name) => `--${name}`).join(", ")}; nothing was changed\n${USAGE}`);
    const config = configFromFlags(values);

    if (target === "hermes-plugin") return runHermesPlugin(command, config, values.profile, values["dry-run"] === true);

    if (target === "hermes-config") {
      if (command !== "install") throw usageError("uninstall hermes-config is not a command: the backup install wrote beside config.yaml is the previous file");
      const r = await installHermesConfig({ config, ...(values.profile !== undefined ? { profile: values.profile } : {}), dryRun: values["dry-run"] === true });
      if (r.changed === false) {
        err(`media-outbox: ${escapeText(r.file)} already lists ${escapeText(config.outbox)} in gateway.media_delivery_allow_dirs; nothing to do\n`);
        return 0;
      }
      if (values["dry-run"]) {
        out(`==> ${escapeText(r.file)} <==\n${r.content.split("\n").map(escapeText).join("\n")}`);
        return 0;
      }
      out(`wrote ${escapeText(r.file)}\nbackup ${escapeText(r.backup!)}\n`);
      err("media-outbox: restart the gateway (or its profile) so it reads the new config.yaml\n");
      return 0;
    }

    const scopeName = values.user ? "user" : "system";
    const root = values.root;
    const systemctl = new Systemctl(scopeName);
    const state = root ? { running: false, why: "--root was given" } : systemctl.state();

    if (command === "uninstall") {
      const r = uninstall(scopeName, root, { systemctl, live: state.running, ...(values["remove-user"] ? { removeUser: true } : {}) });
      // In the order it was done: systemd told first, then the files, the accounts, the reload.
      for (const line of r.done) out(`${line}\n`);
      for (const c of r.toRun) out(`run: ${escapeText(c)}\n`);
      if (r.keptAccounts.length > 0) err(`media-outbox: kept ${r.keptAccounts.map(escapeText).join(", ")}${values["remove-user"] ? "" : " (uninstall systemd --remove-user removes what install created)"}\n`);
      if (r.keptDirs.length > 0) err(`media-outbox: kept ${r.keptDirs.map(escapeText).join(" and ")} with the published files and state (no janitor sweeps them now): remove them by hand when you no longer need them\n`);
      if (!state.running) err(`media-outbox: systemd was not told (${escapeText(state.why)}); run the commands above where it runs\n`);
      // The command itself, as install gives its try-restart: a unit name alone left the operator to find it.
      if (r.units.length > 0) err(`media-outbox: restart the gateway units so they drop the outbox: ${escapeText(systemctl.commandLine("try-restart", ...restartTargets(r.units)))}\n`);
      return 0;
    }

    const plan = planInstall(
      {
        scope: scopeName,
        ...(root !== undefined ? { root } : {}),
        ...(values.unit !== undefined ? { units: values.unit } : {}),
        config,
        strict: values.strict === true,
        withWatch: values["with-watch"] === true,
        apply: values["dry-run"] !== true,
        ...(gate
          ? {
              gate: {
                agentUsers: values["agent-user"] ?? [],
                ...(values.outbox !== undefined ? { outbox: config.outbox } : {}),
                // Only a config file named on purpose becomes the gate's (not root's own default one).
                ...((values.config !== undefined || process.env.MEDIA_OUTBOX_CONFIG) && config.configFile ? { configFile: config.configFile } : {}),
              },
            }
          : {}),
      },
      state.running ? systemctl : undefined,
    );
    // Refused before the plan's lines are printed: they described an install that was not going to happen.
    if (!values["dry-run"]) assertNotInstalled(plan.scope);
    for (const note of plan.notes) err(`media-outbox: note: ${note}\n`);
    for (const u of plan.units) {
      const via = u.via === "environment" ? "Environment=" : "EnvironmentFile= (the unit's own EnvironmentFile= sets the variable)";
      err(`media-outbox: covering ${escapeText(u.unit)} via a drop-in ${via}: HERMES_MEDIA_ALLOW_DIRS=${escapeText(u.value)}\n`);
    }
    for (const u of plan.units) {
      for (const w of await dropInOverrides({ scope: plan.scope, unit: u.unit, ...(state.running ? { systemctl } : {}), outbox: plan.outbox, strict: values.strict === true })) err(`media-outbox: warning: ${w}\n`);
    }
    if (plan.gate) {
      const writable = await writableRootWarnings({ scope: plan.scope, units: plan.units, ...(state.running ? { systemctl } : {}), agentUsers: plan.gate.agentUsers, gateOutbox: plan.outbox });
      for (const w of writable) err(`media-outbox: warning: ${w}\n`);
    }
    if (values["dry-run"]) {
      if (readManifest(plan.scope)) err("media-outbox: note: media-outbox is already installed here; a real install is refused until media-outbox uninstall systemd\n");
      const g = plan.gate;
      if (g) {
        if (!g.groupExists) err(`media-outbox: would create group ${g.group}\n`);
        if (!g.userExists) err(`media-outbox: would create system user ${g.user} (no home, no login shell)\n`);
        for (const m of g.newMembers) err(`media-outbox: would add ${escapeText(m)} to group ${g.group}\n`);
        for (const d of g.dirs) err(`media-outbox: would create ${escapeText(d.path)} (mode ${formatMode(d.mode)}, ${d.owner === "root" ? "root" : `${g.user}:${g.group}`}) if missing\n`);
      }
      for (const f of plan.files) {
        out(`==> ${escapeText(onDisk(plan.scope, f.path))} (mode ${formatMode(f.mode)}) <==\n${f.content.split("\n").map(escapeText).join("\n")}`);
        if (!f.content.endsWith("\n")) out("\n");
      }
      err("media-outbox: --dry-run: nothing was written\n");
      return 0;
    }
    const r = applyInstall(plan, { systemctl, live: state.running, ...(values.restart ? { restart: true } : {}) });
    for (const a of r.accounts) out(`${escapeText(a)}\n`);
    for (const f of r.written) out(`wrote ${escapeText(f)}\n`);
    for (const c of r.ran) out(`ran: ${escapeText(c)}\n`);
    for (const c of r.toRun) out(`run: ${escapeText(c)}\n`);
    for (const w of r.warnings) err(`media-outbox: warning: ${w}\n`);
    if (!state.running) err(`media-outbox: files written; systemd was not told (${escapeText(state.why)}): run the commands above on the target system\n`);
    else if (!values.restart) err(`media-outbox: the gateway units read the new environment${plan.gate ? " (and their users the new group)" : ""} only after a restart: run the try-restart command above\n`);
    if (plan.gate) err(`media-outbox: agents already logged in join group ${plan.gate.group} at their next login (processes started by a restarted gateway at once)\n`);
    err(`media-outbox: check it with: ${shellLine(["media-outbox", "doctor", ...scopeArgs(scopeName)])}\n`);
    return r.warnings.length > 0 ? 1 : 0;
  });
}
