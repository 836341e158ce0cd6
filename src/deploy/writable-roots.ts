// Allowed roots an agent can write: a way around the gate. In gate mode only
// the gate writes into its outbox, but the gateway delivers from every root of
// its HERMES_MEDIA_ALLOW_DIRS: install keeps the roots it already had, and
// every other source of its media policy (.env, config.yaml) may add more. An
// agent whose user can write into such a root (or replace it, or create it,
// or change something below it) puts any file there, a secret included, and
// sends it: strict mode delivers from every allowed root, and files there even
// skip the gateway's own denylist. doctor in gate mode fails on each such
// root; install --gate warns about it. The roots are read as the gateway reads
// them (policy-sources.ts: every source, either precedence; gateway.ts: the
// parsing), and judged by the permission bits the kernel applies to each
// user (owner, group membership, others; the sticky bit), not by what the
// user running the check may do.
import fs from "node:fs";
import path from "node:path";
import { escapeText } from "../core/escape.js";
import { resolveExisting } from "../safety/denylist.js";
import { ALLOW_DIRS_ENV } from "../safety/gateway.js";
import { type DoctorCheck, check } from "./doctor-check.js";
import type { CoveredUnit } from "./install.js";
import { type UnitScope, onDisk } from "./gateway-units.js";
import { type PolicyContext, type PolicySource, allowedRoots, policyContexts } from "./policy-sources.js";
import type { Systemctl } from "./systemctl.js";
import { type PasswdEntry, groupByName, groupIdsOf, groupName, membersOf, userByName, userByNameOrUid } from "./users.js";

/** A user whose agents could place files: an agent user, a gateway's user. */
export interface Writer {
  name: string;
  uid: number;
  /** Every group the user is in. */
  gids: Set<number>;
}

export function writerOf(user: PasswdEntry, root?: string): Writer {
  return { name: user.name, uid: user.uid, gids: groupIdsOf(user, root) };
}

/** How many entries below a root are looked at, at most (a root may hold a whole tree). */
export const MAX_ENTRIES_BELOW = 10_000;

export interface RootFinding {
  user: string;
  /** How that user could put a file under the root, escaped. */
  how: string;
}

export interface RootVerdict {
  root: string;
  /** The first way found for each writer that has one. */
  findings: RootFinding[];
  /** Why the look below the root is incomplete, if it is. */
  incomplete?: string;
}

type Scope = Pick<UnitScope, "root">;

/**
 * Why `w` may change the entry `st` (a directory: create, rename and delete
 * in it, which takes write and search; a file: write it), or undefined. The
 * kernel takes the owner's bits for the owner, else the group's for a member,
 * else the others'; an owner may chmod, so ownership alone is enough.
 */
function changeRight(w: Writer, st: fs.Stats, scope: Scope): string | undefined {
  if (st.uid === w.uid) return `${escapeText(w.name)} owns it`;
  const need = st.isDirectory() ? 0o3 : 0o2;
  if (w.gids.has(st.gid)) {
    return ((st.mode >> 3) & need) === need ? `its group ${escapeText(groupName(st.gid, scope.root) ?? String(st.gid))} may write it, and ${escapeText(w.name)} is in that group` : undefined;
  }
  return (st.mode & need) === need ? "everyone may write it" : undefined;
}

/** Whether `w` may pass through the directory `st` (search), or make itself able to (its owner). */
function mayPass(w: Writer, st: fs.Stats): boolean {
  if (st.uid === w.uid) return true;
  return w.gids.has(st.gid) ? (st.mode & 0o010) !== 0 : (st.mode & 0o001) !== 0;
}

function lstat(p: string): fs.Stats | undefined {
  try {
    return fs.lstatSync(p);
  } catch {
    return undefined;
  }
}

/** The entry a path names as a directory would be used: a link's target. */
function followed(p: string, st: fs.Stats): fs.Stats | undefined {
  if (!st.isSymbolicLink()) return st;
  try {
    return fs.statSync(p);
  } catch {
    return undefined;
  }
}

/** `/`, `/a`, `/a/b`, ... down to `p`. */
function chainOf(p: string): string[] {
  const chain: string[] = [];
  for (let d = p; ; d = path.dirname(d)) {
    chain.unshift(d);
    if (d === path.dirname(d)) return chain;
  }
}

interface Above {
  /** How the writer could take over `p` through a directory above it. */
  problem?: string;
  /** Whether the writer may reach `p` (pass through every directory above it). */
  reaches: boolean;
}

/**
 * How `w` could take over the path `p` through the directories above it: a
 * directory it may change (and reach) lets it replace the next entry down
 * (unless the directory is sticky and neither it nor that entry is the
 * writer's), or create it where it does not exist yet.
 */
function above(w: Writer, p: string, scope: Scope): Above {
  const chain = chainOf(p);
  let parent: fs.Stats | undefined;
  let reaches = true;
  for (let i = 0; i < chain.length; i++) {
    const here = chain[i]!;
    const st = lstat(onDisk(scope as UnitScope, here));
    if (parent) {
      const up = chain[i - 1]!;
      const right = reaches && parent.isDirectory() ? changeRight(w, parent, scope) : undefined;
      if (right) {
        const shown = here === p ? "it" : escapeText(here);
        const how = `${escapeText(w.name)} may write ${escapeText(up)} (${right})`;
        if (!st) return { problem: `${escapeText(w.name)} can create ${shown}: ${how}`, reaches };
        const keptBySticky = (parent.mode & 0o1000) !== 0 && st.uid !== w.uid && parent.uid !== w.uid;
        if (!keptBySticky) return { problem: `${escapeText(w.name)} can replace ${shown}: ${how}`, reaches };
      }
      reaches &&= mayPass(w, parent);
    }
    if (!st) return { reaches: false };
    parent = followed(onDisk(scope as UnitScope, here), st);
    if (!parent) return { reaches: false };
  }
  return { reaches };
}

/**
 * Looks below a root (no link followed, at most MAX_ENTRIES_BELOW entries)
 * for a directory or file a writer may change, where it may reach it. Returns
 * why the look is incomplete, if it is.
 */
function below(dir: string, writers: Writer[], scope: Scope, found: Map<string, string>): string | undefined {
  const queue: { dir: string; reach: Writer[] }[] = [{ dir, reach: writers }];
  let seen = 0;
  let unreadable = 0;
  for (let item = queue.shift(); item; item = queue.shift()) {
    const reach = item.reach.filter((w) => !found.has(w.name));
    if (reach.length === 0) continue;
    let names: string[];
    try {
      names = fs.readdirSync(item.dir);
    } catch {
      unreadable++;
      continue;
    }
    for (const name of names) {
      if (++seen > MAX_ENTRIES_BELOW) return `it holds more than ${MAX_ENTRIES_BELOW} entries; only the first were looked at`;
      const p = path.join(item.dir, name);
      const st = lstat(p);
      if (!st || !(st.isDirectory() || st.isFile())) continue;
      const shown = escapeText(scope.root ? `/${path.relative(scope.root, p)}` : p);
      for (const w of reach) {
        const right = found.has(w.name) ? undefined : changeRight(w, st, scope);
        if (right) found.set(w.name, `${escapeText(w.name)} can ${st.isDirectory() ? "write into" : "change"} ${shown} inside it (${right})`);
      }
      if (st.isDirectory()) queue.push({ dir: p, reach: reach.filter((w) => mayPass(w, st)) });
    }
  }
  return unreadable > 0 ? `${unreadable} director${unreadable === 1 ? "y" : "ies"} below it could not be read (run doctor as root to look there too)` : undefined;
}

/**
 * Whether any of `writers` could put a file under `root`, as the gateway
 * finds it (it resolves links): through the directories above it (as written
 * and as resolved), the root itself, or anything below it (unless `descend`
 * is false: the gate's own outbox, whose contents only the gate makes).
 */
export function judgeRoot(root: string, writers: Writer[], scope: Scope, descend = true): RootVerdict {
  const found = new Map<string, string>();
  const real = scope.root ? root : resolveExisting(root);
  const at = lstat(onDisk(scope as UnitScope, real));
  const st = at && followed(onDisk(scope as UnitScope, real), at);
  const inside: Writer[] = [];
  for (const w of writers) {
    const written = above(w, root, scope);
    const resolved = real === root ? written : above(w, real, scope);
    const problem = written.problem ?? resolved.problem;
    if (problem) {
      found.set(w.name, problem);
      continue;
    }
    if (!st || !resolved.reaches) continue;
    const right = changeRight(w, st, scope);
    if (right) found.set(w.name, `${escapeText(w.name)} can write into it (${right})`);
    else if (st.isDirectory() && mayPass(w, st)) inside.push(w);
  }
  const incomplete = descend && inside.length > 0 ? below(onDisk(scope as UnitScope, real), inside, scope, found) : undefined;
  return {
    root,
    findings: writers.filter((w) => found.has(w.name)).map((w) => ({ user: w.name, how: found.get(w.name)! })),
    ...(incomplete ? { incomplete } : {}),
  };
}

export interface JudgedRoot extends RootVerdict {
  /** The sources that set the value the root comes from. */
  sources: PolicySource[];
}

/** Every root a gateway context delivers from, judged for `writers`. The gate's outbox is judged without looking inside. */
export function judgeRoots(ctx: PolicyContext, writers: Writer[], gateOutbox: string, scope: Scope): JudgedRoot[] {
  const outboxReal = scope.root ? gateOutbox : resolveExisting(gateOutbox);
  return allowedRoots(ctx).map(({ root, sources }) => {
    const isOutbox = root === gateOutbox || (!scope.root && resolveExisting(root) === outboxReal);
    return { ...judgeRoot(root, writers, scope, !isOutbox), sources };
  });
}

/** Where a source sets the roots, and how to take `roots` out there. */
function removalFor(roots: string, source: PolicySource | undefined, when: "doctor" | "install"): string {
  if (!source) return `remove ${roots} from ${ALLOW_DIRS_ENV}`;
  if (source.kind === "unit") {
    return when === "doctor"
      ? `remove ${roots} from the unit's own ${ALLOW_DIRS_ENV} (the drop-in keeps a copy of the roots the unit had: media-outbox uninstall systemd, take them out of the unit, install again)`
      : `remove ${roots} from the unit's own ${ALLOW_DIRS_ENV} (then install again: the drop-in copies the roots the unit has)`;
  }
  return `remove ${roots} from ${source.written[ALLOW_DIRS_ENV] ?? ALLOW_DIRS_ENV} in ${source.file ? escapeText(source.file) : source.label}`;
}

/** One step per source that sets bad roots, naming them all. */
function fixFor(bad: JudgedRoot[], when: "doctor" | "install"): string {
  const bySource = new Map<PolicySource | undefined, string[]>();
  for (const r of bad) for (const s of r.sources.length > 0 ? r.sources : [undefined]) bySource.set(s, [...(bySource.get(s) ?? []), escapeText(r.root)]);
  const steps = [...bySource].map(([source, roots]) => removalFor(roots.join(", "), source, when));
  return `${steps.join("; ")}; or make each such root, every directory above it and everything in it root's and writable by nobody else; then restart the gateway`;
}

const whoCan = (r: RootVerdict) => r.findings.map((f) => f.how).join("; ");
const setBy = (r: JudgedRoot) => (r.sources.length > 0 ? r.sources.map((s) => s.label).join(" and ") : "?");
const AROUND = "an agent can put any file there and the gateway sends it without the gate's checks (strict mode delivers from every allowed root, and files there skip the gateway's denylist)";

/** The gate's group members and a gateway's own user: whose agents could place files. Root and the service user are left out (root may write anything; the service user is the gate). */
function writersFor(users: PasswdEntry[], exclude: Set<number>, scope: Scope): Writer[] {
  const byName = new Map<string, Writer>();
  for (const u of users) if (u.uid !== 0 && !exclude.has(u.uid) && !byName.has(u.name)) byName.set(u.name, writerOf(u, scope.root));
  return [...byName.values()];
}

export interface WritableRootOptions {
  scope: UnitScope;
  /** The gateway units checked; none: the Hermes home's sources alone. */
  units: string[];
  systemctl?: Systemctl;
  hermesHome: string;
  home: string;
  gateOutbox: string;
  /** The gate's group (the socket's): its members are the agent users. */
  group?: string;
  serviceUid?: number;
}

/** doctor in gate mode: one `allowed roots` line per gateway (and routed profile), failing when an agent or gateway user can write one of its roots. */
export async function writableRootChecks(options: WritableRootOptions, checks: DoctorCheck[]): Promise<void> {
  const { scope } = options;
  const group = options.group ? groupByName(options.group, scope.root) : undefined;
  const members = group ? membersOf(group, scope.root) : [];
  const exclude = new Set(options.serviceUid !== undefined ? [options.serviceUid] : []);
  const targets =
    options.units.length > 0
      ? options.units.map((unit) => ({ scope, unit, ...(options.systemctl ? { systemctl: options.systemctl } : {}) }))
      : [{ scope, hermesHome: options.hermesHome, home: options.home }];
  for (const t of targets) {
    for (const ctx of await policyContexts(t)) {
      const gatewayUser = ctx.user ? userByNameOrUid(ctx.user, scope.root) : undefined;
      const writers = writersFor([...members, ...(gatewayUser ? [gatewayUser] : [])], exclude, scope);
      const judged = judgeRoots(ctx, writers, options.gateOutbox, scope);
      const name = `allowed roots ${ctx.name}`;
      if (writers.length === 0) {
        check(checks, name, "pass", `no agent user to judge the gateway's roots for: it runs as root, and no user but root is in group ${escapeText(options.group ?? "?")}`);
        continue;
      }
      const who = writers.map((w) => escapeText(w.name)).join(", ");
      const bad = judged.filter((r) => r.findings.length > 0);
      if (bad.length > 0) {
        const list = bad.map((r) => `${escapeText(r.root)} (set by ${setBy(r)}): ${whoCan(r)}`).join("; ");
        check(checks, name, "fail", `the gateway delivers from ${bad.length === 1 ? "a root" : "roots"} an agent's user can write, a way around the gate: ${list}. So ${AROUND}`, fixFor(bad, "doctor"));
        continue;
      }
      const partial = judged.filter((r) => r.incomplete);
      const roots = judged.length > 0 ? judged.map((r) => escapeText(r.root)).join(", ") : "none";
      if (partial.length > 0) {
        check(checks, name, "warn", `no root the gateway delivers from (${roots}) can be written by ${who} as far as doctor could look: ${partial.map((r) => `${escapeText(r.root)}: ${r.incomplete}`).join("; ")}`, "look there, or take those roots out of HERMES_MEDIA_ALLOW_DIRS");
      } else check(checks, name, "pass", `no root the gateway delivers from (${roots}) can be written, replaced or created by ${who}`);
    }
  }
}

/**
 * install --gate: for each covered gateway, the roots it will deliver from
 * (its drop-in's value, and what its .env and config.yaml add) that an agent
 * user can write, each as a warning with the fix.
 */
export async function writableRootWarnings(options: { scope: UnitScope; units: CoveredUnit[]; systemctl?: Systemctl; agentUsers: string[]; gateOutbox: string }): Promise<string[]> {
  const { scope } = options;
  const users = options.agentUsers.map((n) => userByName(n, scope.root)).filter((u): u is PasswdEntry => u !== undefined);
  const writers = writersFor(users, new Set(), scope);
  const warnings: string[] = [];
  for (const covered of options.units) {
    for (const ctx of await policyContexts({ scope, unit: covered.unit, ...(options.systemctl ? { systemctl: options.systemctl } : {}) })) {
      // What the gateway will have once the drop-in is in place: the unit's value is the drop-in's.
      const sources = ctx.sources.map((s) => (s.kind === "unit" ? { ...s, values: { ...s.values, [ALLOW_DIRS_ENV]: covered.value }, written: { ...s.written, [ALLOW_DIRS_ENV]: ALLOW_DIRS_ENV } } : s));
      const bad = judgeRoots({ ...ctx, sources }, writers, options.gateOutbox, scope).filter((r) => r.findings.length > 0);
      for (const r of bad) {
        warnings.push(`${ctx.name}: the gateway will deliver from ${escapeText(r.root)} (set by ${setBy(r)}), which an agent's user can write: ${whoCan(r)}; ${AROUND}. Fix: ${fixFor([r], "install")}`);
      }
    }
  }
  return warnings;
}
