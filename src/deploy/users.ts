// Users and groups of the target system (its /etc/passwd under --root).
import path from "node:path";
import { readIfExists } from "./files.js";

export interface PasswdEntry {
  name: string;
  uid: number;
  gid: number;
  home: string;
}

/** The colon-separated lines of /etc/NAME (the target's under --root), with at least `fields` fields. */
function database(name: "passwd" | "group", root: string | undefined, fields: number): string[][] {
  const text = (root ? readIfExists(path.join(root, "etc", name)) : undefined) ?? readIfExists(path.join("/etc", name));
  if (!text) return [];
  return text
    .toString("utf8")
    .split("\n")
    .map((l) => l.split(":"))
    .filter((f) => f.length >= fields);
}

function passwd(root: string | undefined): PasswdEntry[] {
  return database("passwd", root, 7).map((f) => ({ name: f[0]!, uid: Number(f[2]), gid: Number(f[3]), home: f[5]! }));
}

export function userByUid(uid: number, root?: string): PasswdEntry | undefined {
  return passwd(root).find((e) => e.uid === uid);
}

export function userByName(name: string, root?: string): PasswdEntry | undefined {
  return passwd(root).find((e) => e.name === name);
}

export function groupName(gid: number, root?: string): string | undefined {
  return groups(root).find((g) => g.gid === gid)?.name;
}


export interface GroupEntry {
  name: string;
  gid: number;
  /** Supplementary members (the fourth field of /etc/group). */
  members: string[];
}

function groups(root: string | undefined): GroupEntry[] {
  return database("group", root, 4).map((f) => ({ name: f[0]!, gid: Number(f[2]), members: f[3]!.split(",").filter((m) => m !== "") }));
}

export function groupByName(name: string, root?: string): GroupEntry | undefined {
  return groups(root).find((g) => g.name === name);
}

/** Every home directory named in the target system's /etc/passwd. */
export function allHomes(root?: string): string[] {
  return [...new Set(passwd(root).map((e) => e.home))];
}

/** A user named by User= in a unit: a name or a numeric uid. */
export function userByNameOrUid(user: string, root?: string): PasswdEntry | undefined {
  return /^\d+$/.test(user) ? userByUid(Number(user), root) : userByName(user, root);
}

/** Whether `user` belongs to `group`, as its primary group or as a listed member. */
export function isMember(user: PasswdEntry, group: GroupEntry): boolean {
  return user.gid === group.gid || group.members.includes(user.name);
}

/** The ids of every group `user` belongs to: its primary group and each group that lists it. */
export function groupIdsOf(user: PasswdEntry, root?: string): Set<number> {
  return new Set([user.gid, ...groups(root).filter((g) => g.members.includes(user.name)).map((g) => g.gid)]);
}

/** Every user in `group`: those whose primary group it is, and its listed members. */
export function membersOf(group: GroupEntry, root?: string): PasswdEntry[] {
  return passwd(root).filter((u) => isMember(u, group));
}
