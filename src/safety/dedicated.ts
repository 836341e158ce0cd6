// The outbox, and the state beside it, are directories media-outbox owns
// alone. Everything in the outbox is deliverable (and skips the gateway's
// denylist) and the guard moves away what prepare did not publish: pointed at
// a directory that holds anything else (a home, the Hermes home, /), the
// gateway delivers it and the guard quarantines it (the janitor deletes only
// what a ledger record names, wherever it is pointed). The
// state directory holds what the janitor deletes when old (staging leftovers,
// quarantined entries, ledger days): pointed at a home, it took ~/staging and
// ~/quarantine for its own. Every command asks here, whatever the paths came from.
import fs from "node:fs";
import path from "node:path";
import { defaultStateDir } from "../config/config.js";
import { hermesRoot } from "../content/hermes-homes.js";
import { FatalError } from "../core/errors.js";
import { escapeText } from "../core/escape.js";
import { nameFromBytes, showName } from "./entry-names.js";
import { SYSTEM_PREFIXES, hermesEntryOf, homeEntryOf, resolveExisting, systemPrefixSpellings } from "./denylist.js";
import { isWithin } from "./gateway.js";

/** What the rule needs to know: the fields of a resolved Config. */
export interface OutboxPlace {
  outbox: string;
  home: string;
  hermesHome: string;
  stateDir: string;
}

/** The outbox (or its state) is not a dedicated directory: exit 2 with `outbox_unsafe` (`state_unsafe`), like any unsafe outbox (state). */
export class NotDedicatedError extends FatalError {
  constructor(message: string, code: "outbox_unsafe" | "state_unsafe" = "outbox_unsafe") {
    super(code, message);
  }
}

/** A directory the outbox must neither be nor contain, and how to name it. */
interface Protected {
  path: string;
  what: string;
}

/** The home directories of /etc/passwd (users of other name services are not listed there). */
export function passwdHomes(text?: string): Protected[] {
  let passwd = text;
  if (passwd === undefined) {
    try {
      passwd = fs.readFileSync("/etc/passwd", "utf8");
    } catch {
      return [];
    }
  }
  const homes: Protected[] = [];
  for (const line of passwd.split("\n")) {
    const fields = line.split(":");
    const [user, , , , , home] = fields;
    if (fields.length >= 7 && user && home && path.isAbsolute(home)) homes.push({ path: path.resolve(home), what: `the home directory of user ${user}` });
  }
  return homes;
}

function profiles(hermesHome: string): Protected[] {
  const dir = path.join(hermesHome, "profiles");
  if (!fs.lstatSync(dir, { throwIfNoEntry: false })) return [];
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return [];
  }
  return names.map((name) => ({ path: path.join(dir, name), what: `the Hermes profile ${name}` }));
}

/** The path as written and with the links in its existing part resolved (the outbox may not exist yet). */
function spellings(p: string): string[] {
  const abs = path.resolve(p);
  const real = resolveExisting(abs);
  return real === abs ? [abs] : [abs, real];
}

/**
 * A protected directory as written and, when it exists, its real path. One
 * realpath call: a directory that does not exist holds nothing to lose, and
 * prepare pays for this on every run.
 */
function protectedSpellings(abs: string): string[] {
  try {
    const real = fs.realpathSync.native(abs);
    return real === abs ? [abs] : [abs, real];
  } catch {
    return [abs];
  }
}

function describeFor(outbox: string, place: Protected, spelling: string): string {
  const shown = escapeText(spelling);
  return outbox === spelling ? `it is ${place.what} (${shown})` : `it contains ${place.what} (${shown})`;
}

/** What every directory media-outbox owns must neither be nor contain: the homes, the Hermes home and its profiles. */
function protectedPlaces(place: OutboxPlace, passwd: Protected[] | undefined): Protected[] {
  const hermesHome = path.resolve(place.hermesHome);
  const root = sharedRoot(place);
  return [
    { path: path.resolve(place.home), what: "your home directory" },
    { path: hermesHome, what: "the Hermes home" },
    ...profiles(hermesHome),
    ...(root === hermesHome ? [] : [{ path: root, what: "the shared Hermes root" }, ...profiles(root)]),
    ...(passwd ?? passwdHomes()),
  ];
}

/** A profile's home lies in the shared Hermes root (hermes-homes.ts hermesRoot), which holds the other profiles. */
function sharedRoot(place: OutboxPlace): string {
  return path.resolve(hermesRoot(path.resolve(place.hermesHome), path.resolve(place.home)));
}

/**
 * The part of the rule every directory media-outbox deletes or moves things
 * in shares (the outbox, its state directory, a quarantine of its own): why
 * `dir` is not a directory of its own, or undefined. It is `/`, or it is or
 * contains one of `places` (judged as written and by real path, so a link
 * cannot hide a home).
 */
function sharedReason(dir: string, places: Protected[]): string | undefined {
  const dirs = spellings(dir);
  if (dirs.includes("/")) return "it is the root directory /";
  const seen = new Set<string>();
  for (const p of places) {
    // /etc/passwd repeats homes (/nonexistent, /bin, /): each is judged once.
    if (seen.has(p.path)) continue;
    seen.add(p.path);
    for (const spelling of protectedSpellings(p.path)) {
      const found = dirs.find((d) => isWithin(spelling, d));
      if (found !== undefined) return describeFor(found, p, spelling);
    }
  }
  return undefined;
}

/**
 * Why `place.outbox` cannot be an outbox; undefined when it is a directory of
 * its own. Refused: `/`; any user's home, the Hermes home, one of its
 * profiles, the shared Hermes root a profile's home lies in or one of the
 * root's profiles, the state directory, or a directory containing one of them; a
 * directory under (or above) one of the gateway's denied prefixes, unless that
 * prefix is the user's own home, which the gateway exempts; a credential
 * location of the home or the Hermes home. Both the path as written and its
 * real path are judged, so a link cannot hide a home.
 */
export function notDedicatedReason(place: OutboxPlace, passwd?: Protected[]): string | undefined {
  const shared = sharedReason(place.outbox, [...protectedPlaces(place, passwd), { path: path.resolve(place.stateDir), what: "its state directory" }]);
  if (shared !== undefined) return shared;
  // The rest is the gateway's: where it never sends from, and its secrets.
  const home = path.resolve(place.home);
  const hermesHome = path.resolve(place.hermesHome);
  const root = sharedRoot(place);
  for (const outbox of spellings(place.outbox)) {
    for (const [i, prefix] of SYSTEM_PREFIXES.entries()) {
      // The gateway drops a prefix from its denylist when it is its user's home (root's /root).
      if (prefix === home) continue;
      for (const spelling of systemPrefixSpellings()[i]!) {
        if (isWithin(outbox, spelling)) return `it lies under ${spelling}, which the gateway never sends from`;
        if (isWithin(spelling, outbox)) return `it contains ${spelling}, which the gateway never sends from`;
      }
    }
    const inHome = homeEntryOf(outbox, home);
    if (inHome !== undefined) return `it lies in ~/${inHome}, a credential location of the home`;
    const inHermes = hermesEntryOf(outbox, hermesHome);
    if (inHermes !== undefined) return `it lies in ${escapeText(inHermes)}, a secret of the Hermes home`;
    const inRoot = root === hermesHome ? undefined : hermesEntryOf(outbox, root);
    if (inRoot !== undefined) return `it lies in ${escapeText(inRoot)}, a secret of the shared Hermes root`;
  }
  return undefined;
}

/**
 * What media-outbox makes directly in a state directory: its staging/,
 * ledger/ and quarantine/ (config.ts), and dot-names of its own under
 * STATE_PREFIX: the watch's lock directory (watch/lock.ts
 * `.media-outbox-watch`), what the lock moved aside from its name
 * (`.media-outbox-junk-…`), and the lock files of earlier versions
 * (`.media-outbox-watch.lock`, `.media-outbox-lock-…`, `.media-outbox-stale-…`).
 */
const STATE_ENTRIES: ReadonlySet<string> = new Set(["staging", "ledger", "quarantine"]);
export const STATE_PREFIX = ".media-outbox-";
/** Foreign entries named in a refusal; the directory is read no further than that. */
const FOREIGN_SHOWN = 3;
/** What mkfs (ext2/3/4) makes at a filesystem's root for fsck: a state directory that is a mount point holds it, not made by anyone. */
const LOST_FOUND = "lost+found";

/**
 * Whether `dir` is the root of a mounted filesystem (its st_dev is not its
 * parent's) and its `lost+found` a directory of that filesystem: then the
 * filesystem's own, and no user's folder. A lost+found anywhere else, or
 * that is a link or a file, is a foreign entry like any other.
 */
function mountOwnLostFound(dir: string): boolean {
  try {
    const here = fs.statSync(dir);
    const parent = fs.statSync(path.join(dir, ".."));
    if (here.dev === parent.dev) return false;
    const lf = fs.lstatSync(path.join(dir, LOST_FOUND));
    return lf.isDirectory() && lf.dev === here.dev;
  } catch {
    return false;
  }
}

/**
 * Entries of the state directory `dir` that media-outbox does not make (a
 * user's files: `~/notes` named as the state), shown escaped, at most
 * FOREIGN_SHOWN and whether there are more; none when it holds only what
 * media-outbox makes, or does not exist yet (nor a mount point's own
 * lost+found: mountOwnLostFound). One that cannot be read is trustDir's to
 * report.
 */
function foreignStateEntries(dir: string, named: ReadonlySet<string>): { shown: string[]; more: boolean } {
  const found = { shown: [] as string[], more: false };
  let handle: fs.Dir;
  try {
    // Names as bytes: one that is not UTF-8 is shown as its bytes, never decoded into something else.
    handle = fs.opendirSync(dir, { bufferSize: 32, encoding: "buffer" as BufferEncoding });
  } catch {
    return found;
  }
  try {
    for (let d = handle.readSync(); d !== null; d = handle.readSync()) {
      const name = nameFromBytes(d.name as unknown as Buffer);
      if (STATE_ENTRIES.has(name) || name.startsWith(STATE_PREFIX) || named.has(name)) continue;
      if (name === LOST_FOUND && mountOwnLostFound(dir)) continue;
      if (found.shown.length === FOREIGN_SHOWN) {
        found.more = true;
        break;
      }
      found.shown.push(showName(name));
    }
  } catch {
    // Unreadable part-way: what was read is judged.
  } finally {
    handle.closeSync();
  }
  return found;
}

/** What else of the configuration's a state directory may hold: paths it names (quarantine, log file, drop folders). */
export interface ConfiguredPlaces {
  quarantineDir?: string;
  logFile?: string;
  watch?: { drop?: readonly string[] };
}

/**
 * The names of the state directory's entries that the configuration names
 * itself, or names a path inside: `watch.quarantine: <state>/caught` makes
 * `caught`, which media-outbox then made (and the janitor deletes old files
 * in). The operator named it, so it is no user's folder the state was pointed
 * at; refusing it would refuse every command after the first.
 */
function configuredStateEntries(stateDir: string, place: ConfiguredPlaces): Set<string> {
  const names = new Set<string>();
  const state = path.resolve(stateDir);
  for (const p of [place.quarantineDir, place.logFile, ...(place.watch?.drop ?? [])]) {
    if (p === undefined) continue;
    const rel = path.relative(state, path.resolve(p));
    if (rel === "" || rel.startsWith("..") || path.isAbsolute(rel)) continue;
    names.add(rel.split(path.sep)[0]!);
  }
  return names;
}

/**
 * Why `place.stateDir` (or a quarantine kept outside it, `quarantineDir`)
 * cannot hold the outbox's state; undefined when it can. The janitor deletes
 * old files in its staging/, quarantine/ and ledger/, so it is held to the
 * outbox's own rule of places (sharedReason: not `/`, not a home, the Hermes
 * home or a profile, nor a directory containing one, nor the outbox or a
 * directory containing it), and the state directory holds nothing but what
 * media-outbox makes there (STATE_ENTRIES, STATE_PREFIX, and what the
 * configuration names inside it: configuredStateEntries): an ordinary folder
 * of the user's (`~/notes`) is not one of its own, whatever its files are
 * named. The gateway's denied prefixes and secrets are the outbox's alone:
 * nothing in the state is ever sent.
 */
export function stateNotDedicatedReason(place: OutboxPlace & ConfiguredPlaces, passwd?: Protected[]): string | undefined {
  const places = [...protectedPlaces(place, passwd), { path: path.resolve(place.outbox), what: "its outbox" }];
  const dirs: [string, string][] = [["state directory", place.stateDir]];
  if (place.quarantineDir !== undefined && !isWithin(path.resolve(place.quarantineDir), path.resolve(place.stateDir))) dirs.push(["quarantine", place.quarantineDir]);
  for (const [what, dir] of dirs) {
    const why = sharedReason(dir, places);
    if (why !== undefined) return `${what} ${escapeText(dir)} is not a directory of its own: ${why}`;
  }
  const foreign = foreignStateEntries(place.stateDir, configuredStateEntries(place.stateDir, place));
  if (foreign.shown.length > 0) {
    const list = `${foreign.shown.join(", ")}${foreign.more ? " and more" : ""}`;
    return `state directory ${escapeText(place.stateDir)} is not a directory of its own: it holds ${list}, which media-outbox does not make (only staging/, ledger/, quarantine/, ${STATE_PREFIX}… entries and the folders the configuration names inside it)`;
  }
  return undefined;
}

/** Throws NotDedicatedError (exit 2, `outbox_unsafe`) unless the outbox is a directory of its own. */
export function assertDedicatedOutbox(place: OutboxPlace): void {
  const why = notDedicatedReason(place);
  if (why === undefined) return;
  const suggestion = path.join(path.resolve(place.hermesHome), "media_outbox");
  throw new NotDedicatedError(
    `outbox ${escapeText(place.outbox)} is not a directory of its own: ${why}. Everything in the outbox is deliverable, and the watch guard moves whatever prepare did not publish there into its quarantine; use a dedicated directory such as ${escapeText(suggestion)}`,
  );
}

/**
 * Throws NotDedicatedError (exit 2, `state_unsafe`) unless the state
 * directory (and a quarantine kept outside it) is a directory of its own:
 * the janitor deletes what is old in its staging/, quarantine/ and ledger/.
 */
export function assertDedicatedState(place: OutboxPlace & ConfiguredPlaces): void {
  const why = stateNotDedicatedReason(place);
  if (why === undefined) return;
  throw new NotDedicatedError(
    `${why}. The janitor deletes old files in its staging/, quarantine/ and ledger/ directories, so it must hold nothing else; leave it unset (the default is ${escapeText(defaultStateDir(path.resolve(place.outbox)))} beside the outbox) or name a new, empty directory`,
    "state_unsafe",
  );
}

/** Throws NotDedicatedError unless the outbox and its state are directories of their own (the outbox first). */
export function assertDedicated(place: OutboxPlace & ConfiguredPlaces): void {
  assertDedicatedOutbox(place);
  assertDedicatedState(place);
}
