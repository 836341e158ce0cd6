// A watch follows a directory's inode, a scan its path: when the path comes to
// name another directory (deleted and made again, or swapped), the watch is
// deaf and must be armed again.
import fs from "node:fs";

export interface DirIdentity {
  dev: number;
  ino: number;
}

/** The identity of the directory at `dir` (not followed), or undefined when there is none. */
export function dirIdentity(dir: string): DirIdentity | undefined {
  const st = fs.lstatSync(dir, { throwIfNoEntry: false });
  return st?.isDirectory() ? { dev: st.dev, ino: st.ino } : undefined;
}

export function sameDir(a: DirIdentity | undefined, b: DirIdentity | undefined): boolean {
  return a !== undefined && b !== undefined && a.dev === b.dev && a.ino === b.ino;
}
