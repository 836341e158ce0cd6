// Bundles the CLI (one small dispatcher plus one bundle per command, so a
// command loads only what it uses) and the library, then emits type
// declarations. `--bundles-only` skips the declarations (used by the tests).
import { build } from "esbuild";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const bundlesOnly = process.argv.includes("--bundles-only");

const commandDir = path.join(root, "src/commands");
const entries = {
  cli: path.join(root, "src/cli/main.ts"),
  "lib/index": path.join(root, "src/lib/index.ts"),
  "vendor/pino": path.join(root, "src/log/pino-entry.ts"),
};
for (const file of fs.readdirSync(commandDir)) {
  if (file.endsWith(".ts")) entries[`commands/${file.slice(0, -3)}`] = path.join(commandDir, file);
}

const result = await build({
  entryPoints: entries,
  outdir: path.join(root, "dist"),
  bundle: true,
  platform: "node",
  target: "node20.19",
  format: "cjs",
  minifySyntax: true,
  minifyWhitespace: true,
  legalComments: "none",
  sourcemap: false,
  write: false,
  logLevel: "warning",
});

// Write each bundle atomically: tests and a running CLI may load them while a
// rebuild is in progress.
for (const file of result.outputFiles) {
  fs.mkdirSync(path.dirname(file.path), { recursive: true });
  const tmp = `${file.path}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, file.contents);
  fs.renameSync(tmp, file.path);
}

if (!bundlesOnly) {
  execFileSync(process.execPath, [path.join(root, "node_modules/typescript/bin/tsc"), "-p", path.join(root, "tsconfig.build.json")], {
    stdio: "inherit",
  });
}
