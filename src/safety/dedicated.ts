// The outbox is a directory media-outbox owns alone. Everything in it is
// deliverable (and skips the gateway's denylist), the janitor deletes what is
// old there and the guard moves away what prepare did not publish: pointed at
// a directory that holds anything else (a home, the Hermes home, /), the
// gateway delivers it, the janitor deletes it, the guard quarantines it. Every
// command asks here, whatever the outbox's path came from.
import fs from "node:fs";
import path from "node:path";
import { hermesRoot } from "../content/hermes-homes.js";
import { FatalError } from "../core/errors.js";
import { escapeText } from "../core/escape.js";
import { SYSTEM_PREFIXES, hermesEntryOf, homeEntryOf, resolveExisting, systemPrefixSpellings } from "./denylist.js";
import { isWithin } from "./gateway.js";

/** What the rule needs to know: the fields of a resolved Config. */
export interface OutboxPlace {
  outbox: string;
  home: string;
  hermesHome: string;
  stateDir: string;
}

/** The outbox is not a dedicated directory: exit 2 with `outbox_unsafe`, like any unsafe outbox. */
export class NotDedicatedError extends FatalError {
  constructor(message: string) {
    super("outbox_unsafe", message);
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
  const outboxes = spellings(place.outbox);
  if (outboxes.includes("/")) return "it is the root directory /";
  const home = path.resolve(place.home);
  const hermesHome = path.resolve(place.hermesHome);
  // A profile's home lies in the shared Hermes root (hermes-homes.ts hermesRoot), which holds the other profiles.
  const root = path.resolve(hermesRoot(hermesHome, home));
  const protectedDirs: Protected[] = [
    { path: home, what: "your home directory" },
    { path: hermesHome, what: "the Hermes home" },
    ...profiles(hermesHome),
    ...(root === hermesHome ? [] : [{ path: root, what: "the shared Hermes root" }, ...profiles(root)]),
    { path: path.resolve(place.stateDir), what: "its state directory" },
    ...(passwd ?? passwdHomes()),
  ];
  const seen = new Set<string>();
  for (const p of protectedDirs) {
    // /etc/passwd repeats homes (/nonexistent, /bin, /): each is judged once.
    if (seen.has(p.path)) continue;
    seen.add(p.path);
    for (const spelling of protectedSpellings(p.path)) {
      const outbox = outboxes.find((o) => isWithin(spelling, o));
      if (outbox !== undefined) return describeFor(outbox, p, spelling);
    }
  }
  for (const outbox of outboxes) {
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

/** Throws NotDedicatedError (exit 2, `outbox_unsafe`) unless the outbox is a directory of its own. */
export function assertDedicatedOutbox(place: OutboxPlace): void {
  const why = notDedicatedReason(place);
  if (why === undefined) return;
  const suggestion = path.join(path.resolve(place.hermesHome), "media_outbox");
  throw new NotDedicatedError(
    `outbox ${escapeText(place.outbox)} is not a directory of its own: ${why}. Everything in the outbox is deliverable, and the janitor and the watch guard delete or move whatever else is there; use a dedicated directory such as ${escapeText(suggestion)}`,
  );
}
