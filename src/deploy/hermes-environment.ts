// What a gateway's environment moves of the stores local mode reads from its
// own environment (src/prepare/content.ts knownSecretSources): the Codex
// CLI's tokens, `$CODEX_HOME/auth.json` else `~/.codex/auth.json`
// (hermes_cli/auth.py `_import_codex_cli_tokens`, hermes_cli/codex_models.py:
// `os.getenv("CODEX_HOME", "").strip()`, then `Path(...).expanduser()`), and
// the managed scope, `$HERMES_MANAGED_DIR` else /etc/hermes, whose .env and
// config.yaml every agent loads (hermes_cli/managed_scope.py); and the
// shared Nous OAuth store `$HERMES_SHARED_AUTH_DIR/nous_auth.json` and the
// Google service account key `$VERTEX_CREDENTIALS_PATH` or
// `$GOOGLE_APPLICATION_CREDENTIALS` names (KEYS below). Local mode
// knows the ones its own environment names; the gate, which runs as another
// user, knows only what install names for gate-secrets. So install (and
// doctor, which compares) resolves those variables as the gateway's Hermes
// sees them: the unit's environment (Environment=, EnvironmentFile=:
// systemd's view, gateway-units.ts), then the Hermes home's .env, which
// Hermes loads over it (override on, at start and every turn:
// hermes_cli/env_loader.py `load_hermes_dotenv`), then the managed scope's
// .env, loaded last with override. CODEX_HOME's `~` is expanded as Python's
// Path.expanduser does (the gateway's HOME, else its user's home; `~name`:
// that user's home); HERMES_MANAGED_DIR is taken as it is, as Hermes takes
// it. A value is the agent's to write: one that uses `${...}` expansion (not
// followed here), is not absolute after expansion or holds a `..` component
// (systemd's PathChanged= refuses it) is not named, with a note; the files
// are read as the gateway's user, never as root (gate-secrets), so a value
// pointing anywhere gives the gate nothing that user could not read.
// gate-secrets resolves each gateway again at each run with this same code
// (its reads as the gateway's user: EnvironmentIo), so what is set after
// install is followed, and the managed .env is checked by the one rule
// install applies (dotenvSetsLocalOutbox).
import fs from "node:fs";
import path from "node:path";
import { escapeText } from "../core/escape.js";
import { readIfExists } from "./files.js";
import type { EnvironmentStore } from "./gate-secrets.js";
import { type ReadText, type UnitEnvironment, type UnitScope, onDisk, variableSource } from "./gateway-units.js";
import { dotenvText, parseEnvFile } from "./policy-sources.js";
import { userByName } from "./users.js";

/**
 * The variables that decide where the gateway's Hermes reads those stores:
 * CODEX_HOME, HOME (its `~`), HERMES_MANAGED_DIR (whose .env may set the
 * others too); and those whose value is where Hermes reads another
 * credential file (hermes-agent 0.19.0): the shared Nous OAuth store,
 * `$HERMES_SHARED_AUTH_DIR/nous_auth.json` (hermes_cli/auth.py
 * `_nous_shared_auth_dir`, `~` expanded; unset, `<root>/shared/`, a store of
 * the shared root: known.ts HOME_STORES), and a Google service account's
 * JSON key for Vertex (agent/vertex_adapter.py: the first of
 * VERTEX_CREDENTIALS_PATH, GOOGLE_APPLICATION_CREDENTIALS that exists, opened
 * as set: both are followed).
 */
const KEYS = ["CODEX_HOME", "HOME", "HERMES_MANAGED_DIR", "HERMES_SHARED_AUTH_DIR", "VERTEX_CREDENTIALS_PATH", "GOOGLE_APPLICATION_CREDENTIALS"] as const;
type Key = (typeof KEYS)[number];

/** The key files' variables, and the store each one's copy is (known.ts MOVED_STORES). */
const KEY_FILE_VARIABLES = [
  ["VERTEX_CREDENTIALS_PATH", "vertex-credentials"],
  ["GOOGLE_APPLICATION_CREDENTIALS", "google-credentials"],
] as const;

/** What a gateway's unit sets of KEYS (systemd's view: EnvironmentFile= over Environment=, UnsetEnvironment= last). */
export type UnitHermesEnvironment = Partial<Record<Key, { value?: string; from?: string; unknown?: string }>>;

/** KEYS as the unit sets them, for a GatewayOwner (install and doctor read the unit the same way). */
export function unitHermesEnvironment(scope: UnitScope, env: UnitEnvironment, read: ReadText): UnitHermesEnvironment {
  const out: UnitHermesEnvironment = {};
  for (const key of KEYS) {
    const s = variableSource(scope, env, key, read);
    if (s.value !== undefined || s.unknown !== undefined) out[key] = { ...(s.value !== undefined ? { value: s.value } : {}), ...(s.from ? { from: s.from } : {}), ...(s.unknown ? { unknown: s.unknown } : {}) };
  }
  return out;
}

export interface GatewayEnvironmentInput {
  unit: string;
  /** The user the gateway runs as (root for a system unit without User=), as /etc/passwd names it. */
  user: string;
  /** Its Hermes home, when its unit sets an absolute HERMES_HOME; else its user's ~/.hermes. */
  hermesHome?: string | undefined;
  environment?: UnitHermesEnvironment | undefined;
}

/** Python's str.strip(): the characters str.isspace() takes, at both ends (a loop: linear on any input). */
function pyStrip(text: string): string {
  const space = (ch: string | undefined) => ch !== undefined && /[\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/.test(ch);
  let start = 0;
  let end = text.length;
  while (start < end && space(text[start])) start++;
  while (end > start && space(text[end - 1])) end--;
  return text.slice(start, end);
}

/** The variable that keeps an agent's prepare in local mode (config.ts's discovery): its prepare never asks the gate. */
export const LOCAL_OUTBOX_VAR = "MEDIA_OUTBOX_DIR";

/**
 * Whether a Hermes .env (its bytes, as read) sets MEDIA_OUTBOX_DIR, as
 * Hermes parses it. The one rule install (a covered gateway's Hermes .env,
 * a profile's, the managed one), doctor and gate-secrets (a managed scope
 * followed at run time) apply.
 */
export function dotenvSetsLocalOutbox(bytes: Buffer): boolean {
  return setsLocalOutbox(parseEnvFile(dotenvText(bytes)));
}

/** The rule itself, on a .env already parsed (gatewayEnvironmentStores parses the managed one once). */
const setsLocalOutbox = (parsed: ReturnType<typeof parseEnvFile>) => parsed.values.has(LOCAL_OUTBOX_VAR);

/**
 * How the files of a Hermes environment are read: install and doctor read
 * the target system as themselves (diskIo); gate-secrets reads each as the
 * gateway's user, and watches it before (gate-secrets.ts). `readFile`:
 * undefined for a file that is not there; throws for one that cannot be
 * read (a FIFO, a directory, not the reader's: Hermes loads nothing from it).
 */
export interface EnvironmentIo {
  readFile(file: string): Buffer | undefined;
  isDirectory(dir: string): boolean;
}

/** The target system as the caller sees it. */
export function diskIo(scope: Pick<UnitScope, "root">): EnvironmentIo {
  return {
    readFile: (file) => readIfExists(onDisk(scope as UnitScope, file)),
    isDirectory: (dir) => {
      try {
        return fs.statSync(onDisk(scope as UnitScope, dir)).isDirectory();
      } catch {
        return false;
      }
    },
  };
}

/** A Hermes .env's bytes; none when it cannot be read. */
function dotenvBytes(io: EnvironmentIo, file: string): Buffer | undefined {
  try {
    return io.readFile(file);
  } catch {
    // A FIFO or a directory in its place (the agent's to make): Hermes loads nothing from it either.
    return undefined;
  }
}

/**
 * `~`, `~/rest`, `~name/rest` as Python's Path.expanduser expands them
 * (posixpath.expanduser: `$HOME`, else the user's passwd home; `~name`:
 * that user's home, trailing slashes dropped; an unknown name: undefined,
 * where Path.expanduser raises). Any other value as it is.
 */
export function expandUser(value: string, home: string | undefined, root: string | undefined): string | undefined {
  if (!value.startsWith("~")) return value;
  const slash = value.indexOf("/", 1);
  const end = slash < 0 ? value.length : slash;
  const userhome = end === 1 ? home : userByName(value.slice(1, end), root)?.home;
  if (userhome === undefined) return undefined;
  let trimmed = userhome.length;
  while (trimmed > 0 && userhome[trimmed - 1] === "/") trimmed--;
  return userhome.slice(0, trimmed) + value.slice(end) || "/";
}

export interface EnvironmentStores {
  /** Absolute, normalised; named optional for gate-secrets, read as the gateway's user. */
  files: { file: string; store: EnvironmentStore }[];
  /** Why a value that is set is not followed (escaped). */
  notes: string[];
  /** Those of `notes` about a credential file's variable (HERMES_SHARED_AUTH_DIR, VERTEX_CREDENTIALS_PATH, GOOGLE_APPLICATION_CREDENTIALS): doctor names them. */
  credentialNotes: string[];
  /** The managed .env Hermes loads (the managed scope's, wherever it is) when it sets MEDIA_OUTBOX_DIR: install refuses it, gate-secrets does not follow it. */
  localOutbox?: string;
}

/** A value that names a directory: stripped as Hermes strips it; why it is not followed, if it is not. */
function directoryValue(set: { value: string; expands?: boolean }, expand: (value: string) => string | undefined): { dir: string } | { why: string } | undefined {
  const value = pyStrip(set.value);
  if (value === "") return undefined;
  if (set.expands) return { why: "uses ${...} expansion, which install does not follow; write the directory out" };
  const expanded = expand(value);
  if (expanded === undefined) return { why: `is ${escapeText(value)}, whose ~ names no user of /etc/passwd` };
  if (!path.isAbsolute(expanded)) return { why: `is ${escapeText(value)}, not an absolute path` };
  if (expanded.split("/").includes("..")) return { why: `is ${escapeText(value)}, which holds a ".." component; write it without` };
  // Absolute, without "..": resolving only drops "." components, doubled and trailing slashes, as Python's Path does.
  return { dir: path.resolve(expanded) };
}

/**
 * Where the Codex CLI's auth.json lies for a Hermes whose environment sets
 * CODEX_HOME to `set` (its value, and whether it uses `${...}` expansion),
 * `home` its HOME (for `~`): as gatewayEnvironmentStores follows a gateway's.
 * Undefined for an empty value (Hermes reads ~/.codex/auth.json); `why`
 * (escaped) for one not followed. dotenvCodexHomeAuth asks it of a Hermes .env.
 */
export function codexHomeAuthFile(set: { value: string; expands?: boolean }, home: string | undefined, root?: string): { file: string } | { why: string } | undefined {
  const found = directoryValue(set, (v) => expandUser(v, home, root));
  return found === undefined || "why" in found ? found : { file: path.join(found.dir, "auth.json") };
}

/**
 * Where the Codex CLI's auth.json lies for a Hermes that loads the .env of
 * `bytes` (as read) over its environment: the CODEX_HOME it sets, followed
 * as codexHomeAuthFile follows one, its `~` the HOME that .env sets, else
 * `passwdHome`. Undefined when it sets none (or an empty one); `why` for one
 * not followed. gate-secrets asks it of each .env it copies that Hermes
 * loads so, a home's and a profile's, at each run; doctor asks it of a
 * home's .env to know which of them gate-secrets follows.
 */
export function dotenvCodexHomeAuth(bytes: Buffer, passwdHome: string | undefined, root?: string): { file: string } | { why: string } | undefined {
  const parsed = parseEnvFile(dotenvText(bytes));
  const value = parsed.values.get("CODEX_HOME");
  if (value === undefined) return undefined;
  const home = parsed.values.get("HOME") ?? (passwdHome !== undefined && path.isAbsolute(passwdHome) ? passwdHome : undefined);
  return codexHomeAuthFile({ value, ...(parsed.expands.has("CODEX_HOME") ? { expands: true } : {}) }, home, root);
}

/**
 * The stores a gateway's environment moves, as its Hermes resolves that
 * environment, for gate-secrets (optional, read as the gateway's user):
 * `$CODEX_HOME/auth.json` where Hermes reads the Codex CLI's tokens (none
 * when CODEX_HOME is not set or is empty: Hermes reads ~/.codex/auth.json,
 * which install names with the other stores of the home), and the managed
 * scope's .env and config.yaml where `$HERMES_MANAGED_DIR` puts them (none
 * for /etc/hermes, which the gate reads itself). A value that cannot be
 * followed is a note.
 */
export function gatewayEnvironmentStores(g: GatewayEnvironmentInput, scope: Pick<UnitScope, "root">, io: EnvironmentIo = diskIo(scope)): EnvironmentStores {
  const out: EnvironmentStores = { files: [], notes: [], credentialNotes: [] };
  const passwdHome = userByName(g.user, scope.root)?.home;
  const values = new Map<Key, { value: string; from: string; expands?: boolean }>();
  for (const key of KEYS) {
    const s = g.environment?.[key];
    if (s?.value !== undefined) values.set(key, { value: s.value, from: s.from ?? g.unit });
  }
  // The same for every variable (an environment file that cannot be read): said once.
  const unknown = KEYS.map((key) => g.environment?.[key]?.unknown).find((u) => u !== undefined);
  if (unknown !== undefined) out.notes.push(`cannot tell whether ${escapeText(g.unit)} sets ${KEYS.filter((k) => k !== "HOME").join(", ")}: ${escapeText(unknown)}`);
  const load = (file: string) => {
    const bytes = dotenvBytes(io, file);
    if (!bytes) return undefined;
    const parsed = parseEnvFile(dotenvText(bytes));
    for (const key of KEYS) {
      const value = parsed.values.get(key);
      if (value !== undefined) values.set(key, { value, from: file, ...(parsed.expands.has(key) ? { expands: true } : {}) });
    }
    return parsed;
  };
  const about = (key: Key) => `${key} for ${escapeText(g.unit)} (set in ${escapeText(values.get(key)!.from)})`;
  const hermesHome = g.hermesHome ?? (passwdHome !== undefined && path.isAbsolute(passwdHome) ? path.join(passwdHome, ".hermes") : undefined);
  if (hermesHome !== undefined) load(path.join(hermesHome, ".env"));

  // hermes_cli/managed_scope.py get_managed_dir: a non-empty $HERMES_MANAGED_DIR (as it is: no ~) if it is a directory, else none; unset, /etc/hermes if it is one.
  let managed: string | undefined = "/etc/hermes";
  const override = values.get("HERMES_MANAGED_DIR");
  const dir = override && directoryValue(override, (v) => v);
  if (dir && "why" in dir) {
    out.notes.push(`${about("HERMES_MANAGED_DIR")} ${dir.why}: the gate will not know the values of a managed .env and config.yaml there`);
    managed = undefined;
  } else if (dir) {
    managed = dir.dir;
    if (managed !== "/etc/hermes") out.files.push({ file: path.join(managed, ".env"), store: "managed" }, { file: path.join(managed, "config.yaml"), store: "managed" });
  }
  if (managed !== undefined && io.isDirectory(managed)) {
    const dotEnv = path.join(managed, ".env");
    const parsed = load(dotEnv);
    // Hermes loads it into every agent's environment: a MEDIA_OUTBOX_DIR there keeps their prepare local.
    if (parsed !== undefined && setsLocalOutbox(parsed)) out.localOutbox = dotEnv;
  }

  const codex = values.get("CODEX_HOME");
  if (codex !== undefined) {
    const found = codexHomeAuthFile(codex, values.get("HOME")?.value ?? passwdHome, scope.root);
    if (found === undefined) out.notes.push(`${about("CODEX_HOME")} is empty: Hermes reads ~/.codex/auth.json, which the gate knows`);
    else if ("why" in found) out.notes.push(`${about("CODEX_HOME")} ${found.why}: the gate will not know a Codex CLI's auth.json there (it knows ~/.codex/auth.json)`);
    else out.files.push({ file: found.file, store: "codex-home" });
  }

  const shared = values.get("HERMES_SHARED_AUTH_DIR");
  const sharedDir = shared && directoryValue(shared, (v) => expandUser(v, values.get("HOME")?.value ?? passwdHome, scope.root));
  if (sharedDir && "why" in sharedDir) out.credentialNotes.push(`${about("HERMES_SHARED_AUTH_DIR")} ${sharedDir.why}: the gate will not know the shared Nous OAuth store, nous_auth.json, there`);
  else if (sharedDir) out.files.push({ file: path.join(sharedDir.dir, "nous_auth.json"), store: "nous-shared" });

  for (const [key, store] of KEY_FILE_VARIABLES) {
    const set = values.get(key);
    // Opened as it is set: no stripping, no `~` (os.path.exists, google-auth's open).
    if (set === undefined || set.value === "") continue;
    const why = set.expands
      ? "uses ${...} expansion, which install does not follow; write the file's path out"
      : !path.isAbsolute(set.value)
        ? `is ${escapeText(set.value)}, not an absolute path`
        : set.value.split("/").includes("..")
          ? `is ${escapeText(set.value)}, which holds a ".." component; write it without`
          : undefined;
    if (why !== undefined) out.credentialNotes.push(`${about(key)} ${why}: the gate will not know the Google service account key there`);
    else out.files.push({ file: path.resolve(set.value), store });
  }
  out.notes.push(...out.credentialNotes);
  return out;
}
