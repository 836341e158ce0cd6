// A path with the links in its existing part resolved, as Python's
// Path.resolve(strict=False) gives it: the denylist and the outbox rule see
// through links with it, and hermes-homes.ts derives the Hermes root as
// Hermes does. Apart from denylist.ts: hermes-homes.ts (in the gate
// client's bundle) needs it, and the denylist needs hermes-homes.ts.
import fs from "node:fs";
import path from "node:path";

/** Resolves the longest existing prefix of `p`, so links in it are seen through. */
export function resolveExisting(p: string): string {
  const abs = path.resolve(p);
  let head = abs;
  const tail: string[] = [];
  for (;;) {
    try {
      const real = fs.realpathSync.native(head);
      return tail.length === 0 ? real : path.join(real, ...tail);
    } catch {
      const parent = path.dirname(head);
      if (parent === head) return abs;
      tail.unshift(path.basename(head));
      head = parent;
    }
  }
}
