// The Hermes profiles the gate knows (`$HERMES_HOME/profiles/NAME`, each a
// Hermes home of its own, `hermes profile create` makes them whenever the
// agent likes): gate-secrets lists each home's profiles directory at every
// run, as its agent, and copies what it finds there (src/deploy/gate-secrets.ts);
// doctor asks the same rules which profiles that is.
//
// A static path unit cannot watch them: systemd's PathChanged= on a
// directory fires for entries made, removed or written and closed in it,
// not for files inside a subdirectory made later (an inotify watch is not
// recursive; src/core/path.c), so `profiles/` itself tells of a profile made
// or gone, and nothing of the .env written into it after. So gate-secrets
// starts, for each profile, instances of one template path unit
// (GATE_SECRETS_WATCH: `PathChanged=%f`, the instance an escaped path) on
// the profile's directory (its .env and the other stores at its top: written
// and closed, made, renamed over), its .env (on its own: a path that does not
// exist is watched through its directory, its making seen), its store
// directories, and the Codex CLI's auth.json where its .env puts CODEX_HOME
// (and where a home's .env does: gate-secrets.ts followCodexHome); and it
// stops those of profiles gone. It starts them, and waits for them,
// before it reads a profile's files: a file written after the read is
// written while they watch.
//
// The profiles' names are the agent's: a name with a control character
// (or bytes that are no UTF-8) is refused, and so is a symbolic link (the
// agent could point the watches, and the copies, anywhere). Two bounds, each
// for its own cost, Hermes' own names first: at most MAX_PROFILES of a home
// are copied (the entries looked at, and the files read, at each run), and
// of those the first MAX_WATCHED_PROFILES are watched (each takes
// PROFILE_WATCHES of root's inotify instances, fs.inotify.max_user_instances,
// 128 by default, which every root service shares). A profile copied and not
// watched is copied again at each copy (the gate's start, a change to any
// watched file), not when its own files change; one past MAX_PROFILES is not
// copied. gate-secrets' journal and doctor name both.
import path from "node:path";
import { MAX_PROFILES, MAX_WATCHED_PROFILES, type Profile, type ProfileListing, takeProfiles } from "../content/hermes-profiles.js";
import { HERMES_STORE_DIRS } from "../content/known.js";
import { escapeText } from "../core/escape.js";
import type { Systemctl } from "./systemctl.js";
import { UNIT_NAME_MAX, escapeUnitPath, templateInstances } from "./systemd-syntax.js";

// The bound and the rule are local mode's too (its secret check reads the profiles takeProfiles takes): they live beside hermes-homes.ts, in the client's bundle.
export { MAX_PROFILES, MAX_WATCHED_PROFILES, type Profile, type ProfileListing, takeProfiles };

/** The template path unit whose instances watch the profiles' files (deploy/systemd/system). */
export const GATE_SECRETS_WATCH = "media-outbox-gate-secrets-watch@.path";
/** Its instances, as systemctl takes them (list-units, stop). */
export const GATE_SECRETS_WATCHES = templateInstances(GATE_SECRETS_WATCH);
const WATCH_PREFIX = GATE_SECRETS_WATCH.slice(0, GATE_SECRETS_WATCH.indexOf("@") + 1);

/** The watches (each one inotify instance of root's) of a profile: its directory, its .env, its store directories; one more where its .env sets CODEX_HOME. */
export const PROFILE_WATCHES = 2 + HERMES_STORE_DIRS.length;
/** What of a profile is watched (PROFILE_WATCHES paths); the Codex CLI's auth.json its .env points at is added by the caller. */
export function profileWatchPaths(dir: string): string[] {
  return [dir, path.join(dir, ".env"), ...HERMES_STORE_DIRS.map((d) => path.join(dir, d))];
}

/** The GATE_SECRETS_WATCH instance that watches `file` (absolute, normalised); undefined when its escaped path makes too long a unit name. */
export function watchUnitName(file: string): string | undefined {
  const name = `${WATCH_PREFIX}${escapeUnitPath(file)}.path`;
  return name.length <= UNIT_NAME_MAX ? name : undefined;
}

/**
 * The GATE_SECRETS_WATCH instances systemd has loaded, each with its
 * ActiveState (`active`, `inactive`...), or why systemctl could not list
 * them (escaped). gate-secrets starts and stops them by it, doctor tells
 * which watched path has none active.
 */
export function listWatches(systemctl: Systemctl): Map<string, string> | string {
  const r = systemctl.run("list-units", "--all", "--plain", "--no-legend", "--full", "--type=path", GATE_SECRETS_WATCHES);
  if (r.code !== 0) return `systemctl list-units of the watches of the Hermes profiles' files failed: ${escapeText(r.stderr.trim())}`;
  return new Map(
    r.stdout
      .split("\n")
      .map((line) => line.trim().split(/\s+/))
      .filter((w) => (w[0] ?? "").startsWith(WATCH_PREFIX) && (w[0] ?? "").endsWith(".path"))
      .map((w) => [w[0]!, w[2] ?? ""] as const),
  );
}

/**
 * The GATE_SECRETS_WATCH instances, through systemctl: started (and waited
 * for) for the paths gate-secrets reads, and stopped for the paths no
 * longer there. The instances are listed once per run, first: one already
 * active is not started again (a run that changes nothing makes one
 * systemctl call, however many paths it watches: each call lengthens the
 * run, and a path unit drops its watches while the run it started lasts).
 */
export class ProfileWatches {
  private readonly started = new Set<string>();
  /** The instances as listed at the first call (unit: ActiveState), kept up to date with what this object starts and stops; or why they could not be listed. */
  private listing?: Map<string, string> | string;
  constructor(private readonly systemctl: Systemctl) {}

  private list(): Map<string, string> | string {
    this.listing ??= listWatches(this.systemctl);
    return this.listing;
  }

  /** Starts the watch of each path not active yet (nor started by this process), and waits until each watches. Returns what went wrong (escaped). */
  start(paths: readonly string[]): string[] {
    const problems: string[] = [];
    const units: string[] = [];
    for (const p of new Set(paths)) {
      const unit = watchUnitName(p);
      if (unit === undefined) problems.push(`${escapeText(p)} is not watched (its path is too long for a unit's name): a change there is copied for the gate with the next copy`);
      else if (!this.started.has(unit)) units.push(unit);
    }
    if (units.length === 0) return problems;
    const listing = this.list();
    for (const u of units) this.started.add(u);
    // Where the listing failed, each is started: a start of an active unit is harmless.
    const toStart = typeof listing === "string" ? units : units.filter((u) => listing.get(u) !== "active");
    if (toStart.length === 0) return problems;
    const r = this.systemctl.run("start", ...toStart);
    if (r.code !== 0) problems.push(`systemctl start of the watches of the Hermes profiles' files failed: ${escapeText(r.stderr.trim())}; a change there is copied for the gate with the next copy`);
    // The listing goes on saying what runs now: a later round's stopOthers stops these too, when they are no longer wanted.
    else if (typeof listing !== "string") for (const u of toStart) listing.set(u, "active");
    return problems;
  }

  /** Stops (without waiting) every GATE_SECRETS_WATCH instance listed but those of `paths`: a profile gone, a CODEX_HOME moved or unset. */
  stopOthers(paths: readonly string[]): string[] {
    const wanted = new Set(paths.map(watchUnitName));
    const listing = this.list();
    if (typeof listing === "string") return [listing];
    const stale = [...listing.keys()].filter((unit) => !wanted.has(unit));
    if (stale.length === 0) return [];
    const stop = this.systemctl.run("stop", "--no-block", ...stale);
    if (stop.code !== 0) return [`systemctl stop of the watches of Hermes profiles gone failed: ${escapeText(stop.stderr.trim())}`];
    // Stopped: a later round (gate-secrets copies again when a file changed meanwhile) that wants one again starts it again
    // (one no longer wanted is stopped again, as listed: a harmless call, the last of a round).
    for (const unit of stale) {
      listing.set(unit, "inactive");
      this.started.delete(unit);
    }
    return [];
  }
}
