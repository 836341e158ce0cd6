// A Hermes home and its profiles (`profiles/NAME`, each a Hermes home of its
// own, with its own files of secrets and its own gateway.pid): what local
// mode reads secrets from, and where the gate's client, as local mode, finds
// the running gateways whose environments count. Small on purpose: the
// client's bundle holds it.
import fs from "node:fs";
import path from "node:path";

/** The Hermes home, then each of its profiles' homes in name order (none when it has no `profiles/`). */
export function hermesHomeDirs(hermesHome: string): string[] {
  let profiles: string[];
  try {
    profiles = fs.readdirSync(path.join(hermesHome, "profiles")).sort();
  } catch {
    profiles = [];
  }
  return [hermesHome, ...profiles.map((profile) => path.join(hermesHome, "profiles", profile))];
}
