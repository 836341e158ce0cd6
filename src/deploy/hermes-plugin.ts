// `install hermes-plugin` / `uninstall hermes-plugin`: the Hermes plugin
// (integrations/hermes/media-outbox in this package) copied into a Hermes
// home's plugins directory and enabled in its config.yaml (`plugins.enabled`,
// and out of `plugins.disabled`, which Hermes obeys first; edited as
// hermes-config edits: one line each, proved by a re-parse, atomic, with a
// backup). A record inside the plugin directory says what install did, so
// uninstall undoes exactly that.
import fs from "node:fs";
import path from "node:path";
import type { Config } from "../config/config.js";
import type { DoctorCheck } from "./doctor-check.js";
import { FatalError, isErrno } from "../core/errors.js";
import { escapeText } from "../core/escape.js";
import { mkdirs, readIfExists, sha256, writeFileAtomic } from "./files.js";
import { type HermesConfigResult, addListItem, editHermesConfig, hermesConfigPath, removeListItem } from "./hermes-config.js";
import { packageRoot } from "./render.js";

export const PLUGIN_NAME = "media-outbox";
/** The files of the plugin as shipped, and the one install writes (the command to run). */
const PLUGIN_FILES = ["plugin.yaml", "__init__.py"];
const COMMAND_FILE = "command.json";
const RECORD_FILE = ".media-outbox-install.json";
/** Where the plugin keeps what waits for a reply across a gateway restart (the plugin's STATE_DIRS, under the Hermes home). */
const STATE_DIR = ["state", PLUGIN_NAME] as const;
const ENABLED = ["plugins", "enabled"] as const;
const DISABLED = ["plugins", "disabled"] as const;

export const pluginSource = () => path.join(packageRoot(), "integrations", "hermes", PLUGIN_NAME);

interface InstallRecord {
  version: 1;
  configFile: string;
  /** install created config.yaml (uninstall removes it if unchanged). */
  createdConfig: boolean;
  /** install added the name to plugins.enabled (it was not there before). */
  enabledAdded: boolean;
  /** install took the name out of plugins.disabled (absent in records of earlier versions). */
  disabledRemoved?: boolean;
  beforeSha256?: string;
  afterSha256?: string;
  backup?: string;
  createdDirs: string[];
}

export interface PluginTarget {
  hermesHome: string;
  pluginDir: string;
  configFile: string;
}

/** Where the plugin goes: the Hermes home (or one profile of it), which must exist. */
export function pluginTarget(config: Config, profile?: string): PluginTarget {
  const configFile = hermesConfigPath(config, profile);
  const hermesHome = path.dirname(configFile);
  if (!fs.statSync(hermesHome, { throwIfNoEntry: false })?.isDirectory()) {
    throw new FatalError("config_invalid", `the Hermes home ${escapeText(hermesHome)} does not exist${profile ? "; is the profile name right?" : ""} (HERMES_HOME is ${escapeText(config.hermesHome)})`);
  }
  return { hermesHome, pluginDir: path.join(hermesHome, "plugins", PLUGIN_NAME), configFile };
}

function readRecord(pluginDir: string): InstallRecord | undefined {
  const data = readIfExists(path.join(pluginDir, RECORD_FILE));
  if (!data) return undefined;
  try {
    const r = JSON.parse(data.toString("utf8")) as InstallRecord;
    return r.version === 1 && typeof r.configFile === "string" ? r : undefined;
  } catch {
    return undefined;
  }
}

/** The files install writes into the plugin directory: the shipped ones and the command (node and this CLI, so the gateway's PATH does not matter). */
function pluginFiles(command: string[]): { name: string; content: string }[] {
  const src = pluginSource();
  return [...PLUGIN_FILES.map((name) => ({ name, content: fs.readFileSync(path.join(src, name), "utf8") })), { name: COMMAND_FILE, content: `${JSON.stringify(command)}\n` }];
}

interface EnableEdit {
  added: boolean;
  undisabled: boolean;
}

/**
 * The name added to plugins.enabled and taken out of plugins.disabled: Hermes
 * never loads a plugin listed in `disabled` (what `hermes plugins disable`
 * leaves), even when `enabled` lists it too. Each edit is proved by its own
 * re-parse; `did` says which were made.
 */
async function enable(text: string, did: EnableEdit): Promise<string | undefined> {
  const added = await addListItem(text, ENABLED, PLUGIN_NAME, (list) => Array.isArray(list) && list.includes(PLUGIN_NAME));
  const undisabled = await removeListItem(added ?? text, DISABLED, PLUGIN_NAME);
  did.added = added !== undefined;
  did.undisabled = undisabled !== undefined;
  return undisabled ?? added;
}
const BY_HAND = `add ${PLUGIN_NAME} to plugins.enabled by hand (and take it out of plugins.disabled)`;

/**
 * doctor's line on the plugin for one config.yaml (its value, as Hermes reads
 * it) and the plugin directory beside it; undefined when neither mentions the
 * plugin. Hermes loads it only when plugins.enabled lists it and
 * plugins.disabled does not.
 */
export function pluginCheck(value: unknown, configFile: string, profile?: string): Omit<DoctorCheck, "check"> | undefined {
  const plugins = (value as { plugins?: unknown } | null)?.plugins as { enabled?: unknown; disabled?: unknown } | null | undefined;
  const lists = (list: unknown) => Array.isArray(list) && list.includes(PLUGIN_NAME);
  const dir = path.join(path.dirname(configFile), "plugins", PLUGIN_NAME);
  const installed = fs.existsSync(dir);
  const disabled = typeof plugins === "object" && plugins !== null && lists(plugins.disabled);
  if (!installed && !disabled) return undefined;
  const fix = `media-outbox install hermes-plugin${profile !== undefined ? ` --profile ${escapeText(profile)}` : ""}`;
  const without = "the gateway has no send_file tool and no final-reply check: a published file whose line the model leaves out is not sent";
  if (disabled) {
    return { status: "fail", message: `${escapeText(configFile)} lists ${PLUGIN_NAME} in plugins.disabled: Hermes never loads it, even with plugins.enabled; ${without}`, fix: `${fix} (it takes the name out of plugins.disabled), then restart the gateway` };
  }
  if (typeof plugins !== "object" || plugins === null || !lists(plugins.enabled)) {
    return { status: "warn", message: `the plugin is in ${escapeText(dir)}, but plugins.enabled in ${escapeText(configFile)} does not list it: Hermes does not load it; ${without}`, fix: `${fix}, then restart the gateway` };
  }
  return { status: "pass", message: `the plugin is in ${escapeText(dir)} and enabled in ${escapeText(configFile)} (Hermes loads it when the gateway starts)` };
}

export interface PluginInstallResult {
  pluginDir: string;
  /** Files written into the plugin directory. */
  files: string[];
  /** The same files' contents, for --dry-run. */
  contents: { file: string; content: string }[];
  config: HermesConfigResult;
  /** The name was (or, with --dry-run, would be) taken out of plugins.disabled. */
  undisabled: boolean;
  reinstalled: boolean;
}

export async function installHermesPlugin(options: { config: Config; profile?: string; dryRun?: boolean; command?: string[] }): Promise<PluginInstallResult> {
  const target = pluginTarget(options.config, options.profile);
  const command = options.command ?? [process.execPath, path.join(packageRoot(), "bin", "media-outbox")];
  const previous = readRecord(target.pluginDir);
  if (!previous && fs.existsSync(target.pluginDir)) {
    throw new FatalError("config_invalid", `${escapeText(target.pluginDir)} exists but was not written by media-outbox install hermes-plugin; move it away first`);
  }
  const files = pluginFiles(command);
  const contents = files.map((f) => ({ file: path.join(target.pluginDir, f.name), content: f.content }));
  // Check the config edit before anything is written: a file it cannot edit leaves everything as it was.
  const did: EnableEdit = { added: false, undisabled: false };
  const planned = await editHermesConfig(target.configFile, (text) => enable(text, did), { dryRun: true, byHand: BY_HAND });
  if (options.dryRun) return { pluginDir: target.pluginDir, files: contents.map((c) => c.file), contents, config: planned, undisabled: did.undisabled, reinstalled: previous !== undefined };

  const pluginsDir = path.dirname(target.pluginDir);
  const createdDirs = mkdirs(pluginsDir, 0o755);
  // The directory appears whole: staged beside it, then renamed into place.
  const stage = fs.mkdtempSync(path.join(pluginsDir, `.${PLUGIN_NAME}.`));
  let old: string | undefined;
  try {
    fs.chmodSync(stage, 0o755);
    for (const f of files) writeFileAtomic(path.join(stage, f.name), f.content, { mode: 0o644 });
    if (previous) {
      // A reinstall (a newer package): the old record comes along, so uninstall still undoes the first install.
      writeFileAtomic(path.join(stage, RECORD_FILE), JSON.stringify(previous), { mode: 0o600 });
      old = `${stage}.old`;
      fs.renameSync(target.pluginDir, old);
    }
    fs.renameSync(stage, target.pluginDir);
  } catch (err) {
    fs.rmSync(stage, { recursive: true, force: true });
    if (old && !fs.existsSync(target.pluginDir)) fs.renameSync(old, target.pluginDir);
    throw err;
  }
  if (old) fs.rmSync(old, { recursive: true, force: true });

  let result: HermesConfigResult;
  try {
    result = await editHermesConfig(target.configFile, (text) => enable(text, did), { byHand: BY_HAND });
  } catch (err) {
    // Nothing half-done: without its config entry, a first install leaves no plugin behind.
    if (!previous) fs.rmSync(target.pluginDir, { recursive: true, force: true });
    throw err;
  }
  if (!previous) {
    const after = readIfExists(target.configFile);
    const record: InstallRecord = {
      version: 1,
      configFile: target.configFile,
      createdConfig: result.created === true,
      enabledAdded: did.added,
      disabledRemoved: did.undisabled,
      ...(result.changed && !result.created ? { beforeSha256: sha256(readIfExists(result.backup!)!) } : {}),
      ...(result.changed && after ? { afterSha256: sha256(after) } : {}),
      ...(result.backup ? { backup: result.backup } : {}),
      createdDirs,
    };
    writeFileAtomic(path.join(target.pluginDir, RECORD_FILE), JSON.stringify(record), { mode: 0o600 });
  }
  return { pluginDir: target.pluginDir, files: contents.map((c) => c.file), contents, config: result, undisabled: did.undisabled, reinstalled: previous !== undefined };
}

export interface PluginUninstallResult {
  removed: string[];
  restored: string[];
  /** config.yaml edited (it had changed since install): the entry removed, with a new backup. */
  edited?: HermesConfigResult;
}

export async function uninstallHermesPlugin(options: { config: Config; profile?: string }): Promise<PluginUninstallResult> {
  const target = pluginTarget(options.config, options.profile);
  if (!fs.existsSync(target.pluginDir)) throw new FatalError("config_invalid", `the Hermes plugin is not installed in ${escapeText(target.hermesHome)}: ${escapeText(target.pluginDir)} does not exist`);
  const record = readRecord(target.pluginDir);
  if (!record) throw new FatalError("config_invalid", `${escapeText(target.pluginDir)} was not written by media-outbox install hermes-plugin; nothing was changed`);
  const result: PluginUninstallResult = { removed: [], restored: [] };

  if (record.enabledAdded || record.disabledRemoved) {
    const current = readIfExists(record.configFile);
    const unchanged = current !== undefined && record.afterSha256 === sha256(current);
    const backup = record.backup ? readIfExists(record.backup) : undefined;
    if (unchanged && record.createdConfig) {
      fs.rmSync(record.configFile);
      result.removed.push(record.configFile);
    } else if (unchanged && backup && sha256(backup) === record.beforeSha256) {
      // Nothing touched it since: its previous bytes come back exactly.
      const st = fs.statSync(record.configFile);
      writeFileAtomic(record.configFile, backup, { mode: st.mode & 0o7777, uid: st.uid, gid: st.gid });
      result.restored.push(record.configFile);
      fs.rmSync(record.backup!);
      result.removed.push(record.backup!);
    } else if (current !== undefined && record.enabledAdded) {
      // Edited since install: take out only our entry (one line), with a backup.
      const edited = await editHermesConfig(record.configFile, (text) => removeListItem(text, ENABLED, PLUGIN_NAME), { byHand: `remove ${PLUGIN_NAME} from plugins.enabled by hand` });
      if (edited.changed) result.edited = edited;
    }
  }
  fs.rmSync(target.pluginDir, { recursive: true, force: true });
  result.removed.push(target.pluginDir);
  // The plugin's own state (subagents' files waiting for a reply): of no use without it. A link there is not the plugin's.
  const state = path.join(target.hermesHome, ...STATE_DIR);
  if (fs.lstatSync(state, { throwIfNoEntry: false })?.isDirectory()) {
    fs.rmSync(state, { recursive: true, force: true });
    result.removed.push(state);
  }
  for (const dir of [...record.createdDirs].reverse()) {
    try {
      fs.rmdirSync(dir);
      result.removed.push(dir);
    } catch (err) {
      // Not empty (other plugins were installed since): it stays.
      if (!isErrno(err, "ENOTEMPTY", "EEXIST", "ENOENT")) throw err;
    }
  }
  return result;
}
