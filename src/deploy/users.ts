// Users and groups of the target system (its /etc/passwd under --root).
import path from "node:path";
import { readIfExists } from "./files.js";

export interface PasswdEntry {
  name: string;
  uid: number;
  gid: number;
  home: string;
}

function passwd(root: string | undefined): PasswdEntry[] {
  const text = (root ? readIfExists(path.join(root, "etc/passwd")) : undefined) ?? readIfExists("/etc/passwd");
  if (!text) return [];
  return text
    .toString("utf8")
    .split("\n")
    .map((l) => l.split(":"))
    .filter((f) => f.length >= 7)
    .map((f) => ({ name: f[0]!, uid: Number(f[2]), gid: Number(f[3]), home: f[5]! }));
}

export function userByUid(uid: number, root?: string): PasswdEntry | undefined {
  return passwd(root).find((e) => e.uid === uid);
}

export function userByName(name: string, root?: string): PasswdEntry | undefined {
  return passwd(root).find((e) => e.name === name);
}

export function groupName(gid: number, root?: string): string | undefined {
  const text = (root ? readIfExists(path.join(root, "etc/group")) : undefined) ?? readIfExists("/etc/group");
  return text
    ?.toString("utf8")
    .split("\n")
    .map((l) => l.split(":"))
    .find((f) => f.length >= 3 && Number(f[2]) === gid)?.[0];
}

