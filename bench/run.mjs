// `npm run bench` runs every benchmark in turn; `npm run bench -- janitor`
// runs only the named ones. Each script measures media-outbox side by side
// with its baseline in the same run and prints the ratios.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const ORDER = ["prepare", "janitor", "watch", "reply", "gate", "content"];
const available = ORDER.filter((name) => fs.existsSync(path.join(here, `${name}.mjs`)));
const wanted = process.argv.slice(2);
const unknown = wanted.filter((name) => !available.includes(name));
if (unknown.length > 0) {
  console.error(`unknown benchmark: ${unknown.join(", ")} (known: ${available.join(", ")})`);
  process.exit(2);
}

let failed = false;
for (const name of wanted.length > 0 ? wanted : available) {
  console.log(`\n== ${name} ==`);
  const r = spawnSync(process.execPath, ["--expose-gc", path.join(here, `${name}.mjs`)], { stdio: "inherit" });
  if (r.status !== 0) failed = true;
}
process.exitCode = failed ? 1 : 0;
