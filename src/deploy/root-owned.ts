// Whether a path is root's alone: every component from `/` down belongs to
// root and is writable by nobody else. The gate's placement, its code and
// config, and (gate-secrets) a file systemd reads for a gateway as root are
// held to it: what only root can change, no agent can redirect.
import fs from "node:fs";
import path from "node:path";
import { isErrno } from "../core/errors.js";
import { escapeText } from "../core/escape.js";
import { formatMode } from "../core/units.js";
import { resolveExisting } from "../safety/denylist.js";
import { type UnitScope, onDisk } from "./gateway-units.js";

/**
 * Why `p` (a path of the target system) may be changed by someone other than
 * root: a component of its real path, from `/` down to `p` itself (when it
 * exists), that is not a root-owned directory (or file) without group or other
 * write permission. Components that do not exist yet are skipped: install
 * creates them root-owned. A root-owned sticky directory (`/tmp`, mode 1777)
 * passes when the next component exists: only root may rename or remove
 * root's entries there (and the next component is held to the same rule); a
 * name not made yet could be taken by anyone first.
 *
 * With `links: "refuse"` the path is taken as written, and a symbolic link
 * anywhere in it is a problem: a link's target is not checked as the path a
 * caller then opens (gate-secrets reads the file as root right after).
 * An ACL that lets another user write shows in the group bits (its mask).
 */
export function rootOwnedProblem(p: string, scope: Pick<UnitScope, "root">, opts: { links?: "follow" | "refuse" } = {}): string | undefined {
  const refuseLinks = opts.links === "refuse";
  const real = refuseLinks ? path.resolve(onDisk(scope as UnitScope, p)) : resolveExisting(onDisk(scope as UnitScope, p));
  const top = scope.root ? (refuseLinks ? path.resolve(scope.root) : resolveExisting(scope.root)) : "/";
  const shown = (d: string) => escapeText(scope.root ? `/${path.relative(top, d)}` : d);
  const chain: string[] = [];
  // Under --root, the target system's `/` is the root directory.
  for (let d = real; ; d = path.dirname(d)) {
    chain.unshift(d);
    if (d === top || d === path.dirname(d)) break;
  }
  for (const [i, d] of chain.entries()) {
    let st: fs.Stats;
    try {
      st = fs.lstatSync(d);
    } catch (err) {
      if (isErrno(err, "ENOENT", "ENOTDIR")) break;
      throw err;
    }
    if (refuseLinks && st.isSymbolicLink()) return `${shown(d)} is a symbolic link`;
    if (st.uid !== 0) return `${shown(d)} belongs to uid ${st.uid}, not root`;
    const next = chain[i + 1];
    const stickyAboveExisting = st.isDirectory() && st.mode & 0o1000 && next !== undefined && fs.lstatSync(next, { throwIfNoEntry: false }) !== undefined;
    if (st.mode & 0o022 && !stickyAboveExisting) return `${shown(d)} is writable by its group or others (mode ${formatMode(st.mode)})`;
  }
  return undefined;
}
