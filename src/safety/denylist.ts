// The gateway's credential denylist (../shared/DESIGN.md), applied to resolved
// source paths. Files under a trusted root skip the gateway's own denylist, so
// this is the only place it is enforced for the outbox.
import fs from "node:fs";
import path from "node:path";
import { hermesHomeDirs, hermesRoot } from "../content/hermes-homes.js";
import { resolveExisting } from "../core/real-path.js";
import { isWithin } from "./gateway.js";

export { resolveExisting };

/** Where the gateway never sends from (its denylist's system prefixes). */
export const SYSTEM_PREFIXES = ["/etc", "/proc", "/sys", "/dev", "/root", "/boot", "/var/log", "/var/lib", "/var/run"];

const HOME_ENTRIES = [
  ".ssh",
  ".aws",
  ".gnupg",
  ".kube",
  ".docker",
  ".config",
  ".azure",
  ".gcloud",
  "Library/Keychains",
  ".netrc",
  ".pgpass",
  ".npmrc",
  ".pypirc",
  ".git-credentials",
];

const HERMES_DATABASES = ["state.db", "kanban.db"];
const HERMES_ENTRIES = [
  ".env",
  "auth.json",
  "auth.lock",
  "credentials",
  "config.yaml",
  ".anthropic_oauth.json",
  "google_token.json",
  "google_oauth_pending.json",
  "auth",
  "webhook_subscriptions.json",
  "cache/bws_cache.json",
  "cache/bws_cache.enc.json",
  "pairing",
  "mcp-tokens",
  "sessions",
  "browser-profile",
  ...HERMES_DATABASES.flatMap((db) => [db, `${db}-wal`, `${db}-shm`, `${db}-journal`]),
];

/**
 * `entry` (a relative path in normal form) beneath the absolute, normalised
 * `base`. prepare builds the denylist on every run, and path.join's
 * normalising allocates ~1 KB per call, which alone tipped a one-file run
 * into a garbage collection.
 */
function beneath(base: string, entry: string): string {
  return base === "/" ? `/${entry}` : `${base}/${entry}`;
}

let systemSpellings: string[][] | undefined;
/**
 * Each denied system prefix as written and with its links resolved (`/var/run`
 * is `/run`), looked up once per process: the outbox rule and the denylist
 * both need them, and prepare pays for every lookup at start-up.
 */
export function systemPrefixSpellings(): string[][] {
  return (systemSpellings ??= SYSTEM_PREFIXES.map(spellings));
}

/** Both spellings of a path: as written and with its links resolved. */
function spellings(p: string): string[] {
  const abs = path.resolve(p);
  const real = resolveExisting(abs);
  return real === abs ? [abs] : [abs, real];
}

/**
 * The spellings of `entry` beneath a base whose spellings are known: beneath
 * each of them, and the entry's own real path when it exists (it may be a
 * link to anywhere). A missing entry holds nothing to protect; one lstat per
 * entry keeps this cheap, since prepare builds the list on every run.
 */
function entrySpellings(baseSpellings: string[], entry: string): string[] {
  const found = new Set(baseSpellings.map((base) => beneath(base, entry)));
  const underReal = beneath(baseSpellings[baseSpellings.length - 1]!, entry);
  try {
    // Most entries are missing: asking without an exception keeps that cheap.
    if (fs.lstatSync(underReal, { throwIfNoEntry: false })) found.add(fs.realpathSync.native(underReal));
  } catch {
    // Unreadable: nothing beneath it can be a source.
  }
  return [...found];
}

export interface DenylistOptions {
  home: string;
  hermesHome: string;
  /** Further directories no source may come from (the outbox, its state). */
  extra?: { path: string; why: string }[];
}

export class SourceDenylist {
  private readonly systemPrefixes: string[][];
  private readonly homes: string[];
  private readonly homeEntries: string[];
  private readonly hermesHomes: string[];
  private readonly hermesEntries: string[];
  private readonly extra: { paths: string[]; why: string }[];

  constructor(options: DenylistOptions) {
    this.homes = spellings(options.home);
    this.systemPrefixes = systemPrefixSpellings();
    this.homeEntries = HOME_ENTRIES.flatMap((e) => entrySpellings(this.homes, e));
    // A profile's home (~/.hermes/profiles/NAME) lies in the shared Hermes
    // root, whose files Hermes denies to its gateway too (hermes-homes.ts
    // hermesRoot); its other profiles' are as much the host's secrets.
    const root = hermesRoot(options.hermesHome, options.home);
    this.hermesHomes = [...spellings(options.hermesHome), ...(root === options.hermesHome ? [] : spellings(root))];
    // The pattern match below sees paths as written; an entry that is itself a
    // link (say ~/.hermes/.env -> /srv/secrets/env) is caught by its resolution.
    this.hermesEntries = hermesHomeDirs(options.hermesHome, root).flatMap((base) => {
      const baseSpellings = spellings(base);
      return HERMES_ENTRIES.flatMap((e) => entrySpellings(baseSpellings, e));
    });
    this.extra = (options.extra ?? []).map((e) => ({ paths: spellings(e.path), why: e.why }));
  }

  /** Why a resolved source path must not be published; undefined when allowed. */
  reason(resolved: string): string | undefined {
    for (const e of this.extra) {
      if (e.paths.some((p) => isWithin(resolved, p))) return e.why;
    }
    if (this.homeEntries.some((p) => isWithin(resolved, p))) return "it lies in a credential location of the home directory";
    if (this.isHermesSecret(resolved) || this.hermesEntries.some((p) => isWithin(resolved, p))) return "it is one of the Hermes home's secrets";
    for (const prefix of this.systemPrefixes) {
      const hit = prefix.find((p) => isWithin(resolved, p));
      if (!hit) continue;
      // A home inside a denied system prefix (root's /root, a service home in
      // /var/lib) keeps its own subtree: only its home-relative entries are denied.
      const inOwnHome = this.homes.some((h) => isWithin(h, hit) && isWithin(resolved, h));
      if (!inOwnHome) return `it lies under ${hit}, which the gateway never sends from`;
    }
    return undefined;
  }

  private isHermesSecret(resolved: string): boolean {
    return this.hermesHomes.some((home) => hermesEntryOf(resolved, home) !== undefined);
  }
}

/** The first entry of `entries` that the relative path `parts` lies in (or is). */
function entryOf(parts: string[], entries: readonly string[]): string | undefined {
  return entries.find((entry) => entry.split("/").every((part, i) => parts[i] === part));
}

/**
 * The credential entry of a home (`.ssh`, `Library/Keychains`…) that the
 * absolute, normalised `p` is or lies in, by its text.
 */
export function homeEntryOf(p: string, home: string): string | undefined {
  if (!isWithin(p, home) || p === home) return undefined;
  return entryOf(path.relative(home, p).split(path.sep), HOME_ENTRIES);
}

/**
 * The Hermes home's (or one of its profiles') secret entry (`.env`,
 * `sessions`…) that `p` is or lies in, by its text.
 */
export function hermesEntryOf(p: string, hermesHome: string): string | undefined {
  if (!isWithin(p, hermesHome) || p === hermesHome) return undefined;
  const rel = path.relative(hermesHome, p).split(path.sep);
  // Entries apply to the Hermes home itself and to each profiles/<name>.
  const found = entryOf(rel, HERMES_ENTRIES);
  if (found !== undefined) return found;
  if (rel[0] === "profiles" && rel.length > 2) {
    const inProfile = entryOf(rel.slice(2), HERMES_ENTRIES);
    if (inProfile !== undefined) return `profiles/${rel[1]}/${inProfile}`;
  }
  return undefined;
}
