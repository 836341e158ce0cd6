// A Hermes home and its profiles (`profiles/NAME`, each a Hermes home of its
// own, with its own files of secrets and its own gateway.pid), and, for a
// profile's home, the shared Hermes root it lies in and that root's other
// profiles: what local mode reads secrets from and denies as sources, and
// where the gate's client, as local mode, finds the running gateways whose
// environments count. Small on purpose: the client's bundle holds it.
import fs from "node:fs";
import path from "node:path";
import { resolveExisting } from "../core/real-path.js";

/** The user's home as Python's Path.home() reads it: $HOME, else the password database's (node:os only then: it costs start-up time). */
function defaultUserHome(): string {
  return process.env.HOME || process.getBuiltinModule("node:os").homedir();
}

/**
 * The shared Hermes root of the Hermes home `hermesHome`, derived exactly as
 * Hermes derives it (hermes-agent 0.19.0, hermes_constants.py
 * get_default_hermes_root, which gateway/platforms/base.py takes as
 * `_HERMES_ROOT` and whose .env, auth.json and other credential files
 * `_media_delivery_denied_paths` denies beside the home's own): the user's
 * `~/.hermes` when the home, resolved, lies within `~/.hermes` resolved (the
 * root itself, or a profile's `~/.hermes/profiles/NAME`); else, when the
 * home's parent is named `profiles` (`/opt/data/profiles/coder`, a
 * container's layout), that parent's parent; else the home itself. A
 * gateway of profile NAME runs with HERMES_HOME=<root>/profiles/NAME (`hermes
 * -p NAME gateway`), and its agents can read the root's files and every other
 * profile's: their values are as much this host's secrets.
 *
 * `resolve` sees through links as Path.resolve(strict=False) does (a caller
 * that judges another root's files, install's --root, passes its own).
 */
export function hermesRoot(hermesHome: string, userHome: string = defaultUserHome(), resolve: (p: string) => string = resolveExisting): string {
  const native = path.join(userHome, ".hermes");
  const home = resolve(hermesHome);
  const root = resolve(native);
  if (home === root || home.startsWith(root === "/" ? "/" : `${root}/`)) return native;
  return path.basename(path.dirname(hermesHome)) === "profiles" ? path.dirname(path.dirname(hermesHome)) : hermesHome;
}

/**
 * The Hermes home, then each of its profiles' homes in name order (none when
 * it has no `profiles/`); then, when `root` (its shared root, hermesRoot) is
 * another directory, the root and each of the root's profiles not listed
 * already (the home's siblings). Each profile directory there is listed, as
 * the home's own profiles always were: leaving one out would leave its values
 * unknown.
 */
export function hermesHomeDirs(hermesHome: string, root: string = hermesRoot(hermesHome)): string[] {
  const dirs = [hermesHome, ...profileDirs(hermesHome)];
  if (root === hermesHome) return dirs;
  const listed = new Set(dirs);
  for (const dir of [root, ...profileDirs(root)]) {
    if (listed.has(dir)) continue;
    listed.add(dir);
    dirs.push(dir);
  }
  return dirs;
}

/** The profile directories of a Hermes home (`profiles/NAME`), in name order. */
function profileDirs(hermesHome: string): string[] {
  return readdirOrEmpty(path.join(hermesHome, "profiles")).map((profile) => path.join(hermesHome, "profiles", profile));
}

/** The names in `dir`, sorted; none when it cannot be listed (not there, not a directory, not ours to read). */
export function readdirOrEmpty(dir: string): string[] {
  try {
    return fs.readdirSync(dir).sort();
  } catch {
    return [];
  }
}
