// A Hermes home and its profiles (`profiles/NAME`, each a Hermes home of its
// own, with its own files of secrets and its own gateway.pid): what local
// mode reads secrets from, and where the gate's client, as local mode, finds
// the running gateways whose environments count. Small on purpose: the
// client's bundle holds it.
import fs from "node:fs";
import path from "node:path";

/** The Hermes home, then each of its profiles' homes in name order (none when it has no `profiles/`). */
export function hermesHomeDirs(hermesHome: string): string[] {
  return [hermesHome, ...readdirOrEmpty(path.join(hermesHome, "profiles")).map((profile) => path.join(hermesHome, "profiles", profile))];
}

/** The names in `dir`, sorted; none when it cannot be listed (not there, not a directory, not ours to read). */
export function readdirOrEmpty(dir: string): string[] {
  try {
    return fs.readdirSync(dir).sort();
  } catch {
    return [];
  }
}
