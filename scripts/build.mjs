// Bundles the CLI (one small dispatcher plus one bundle per command, so a
// command loads only what it uses) and the library, then emits type
// declarations. `--bundles-only` skips the declarations (used by the tests).
import { build } from "esbuild";
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const bundlesOnly = process.argv.includes("--bundles-only");

const commandDir = path.join(root, "src/commands");
const entries = {
  cli: path.join(root, "src/cli/main.ts"),
  "lib/index": path.join(root, "src/lib/index.ts"),
  "vendor/pino": path.join(root, "src/log/pino-entry.ts"),
  "workers/text-scan": path.join(root, "src/prepare/text-worker.ts"),
  // Local mode's pipeline, loaded by the prepare command only when no gate is used.
  "parts/prepare-local": path.join(root, "src/prepare/local-entry.ts"),
  "workers/watch-worker": path.join(root, "src/watch/watch-worker.ts"),
};
for (const file of fs.readdirSync(commandDir)) {
  if (file.endsWith(".ts")) entries[`commands/${file.slice(0, -3)}`] = path.join(commandDir, file);
}

/**
 * Node built-ins without esbuild's per-import copies. esbuild turns each
 * `import fs from "node:fs"` into a copy of all of fs's exports (`__toESM`),
 * which costs every run start-up time. Through this shim a built-in is
 * required once and used as it is: the default import is the module itself,
 * and each named export is one property read, kept only where it is imported.
 */
const require = createRequire(import.meta.url);
const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;
const isBindingName = (name) => {
  if (!IDENTIFIER.test(name) || name === "default") return false;
  try {
    new Function(`let ${name};`);
    return true;
  } catch {
    return false;
  }
};
const builtinsOnce = {
  name: "builtins-once",
  setup(b) {
    b.onResolve({ filter: /^node:/ }, (args) =>
      args.namespace === "builtins-once" ? { path: args.path, external: true } : { path: args.path, namespace: "builtins-once" },
    );
    b.onLoad({ filter: /.*/, namespace: "builtins-once" }, (args) => {
      const id = JSON.stringify(args.path);
      const names = Object.getOwnPropertyNames(require(args.path)).filter(isBindingName);
      const picks = names.map((n) => `export const ${n} = /* @__PURE__ */ pick(${JSON.stringify(n)});`);
      return { contents: [`const m = require(${id});`, "const pick = (name) => m[name];", "export default m;", ...picks].join("\n"), loader: "js" };
    });
  },
};

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
  alias: { debug: path.join(root, "src/vendor/debug-stub.ts") },
  plugins: [builtinsOnce],
});

/**
 * One training run per command bundle records a V8 code cache beside it
 * (src/cli/bundle-loader.ts). prepare's runs publish a real PNG and a text
 * file, once in local mode (which records local mode's part, dist/parts/)
 * and once through a gate (which records the command's own cache, the
 * client's, and serve's, from the requests it served); check-reply judges a
 * reply; the other commands only print their help.
 */
async function trainCodeCaches() {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "media-outbox-build-"));
  try {
    // MEDIA_OUTBOX_SYSTEM_CONFIG: a gate configured on this machine is never used by the training.
    const env = { PATH: process.env.PATH, HOME: tmp, HERMES_HOME: path.join(tmp, ".hermes"), MEDIA_OUTBOX_SYSTEM_CONFIG: path.join(tmp, "none.json"), MEDIA_OUTBOX_TRAIN_CODE_CACHE: "1" };
    const png = path.join(tmp, "probe.png");
    const txt = path.join(tmp, "notes.txt");
    fs.writeFileSync(png, tinyPng());
    fs.writeFileSync(txt, "media-outbox build probe\n");
    // A command that does not stop by itself must not hang the build.
    const run = (args, { input, extraEnv = {} } = {}) =>
      spawnSync(process.execPath, [path.join(root, "dist/cli.js"), ...args], { env: { ...env, ...extraEnv }, stdio: [input === undefined ? "ignore" : "pipe", "ignore", "ignore"], input, timeout: 20_000 });
    for (const file of fs.readdirSync(path.join(root, "dist/commands"))) {
      if (!file.endsWith(".js")) continue;
      const command = file.slice(0, -3);
      if (command === "serve") continue;
      if (command === "prepare") {
        run(["prepare", png, txt]);
        await throughGate(tmp, env, (socket) => run(["prepare", png, txt], { extraEnv: { MEDIA_OUTBOX_SOCKET: socket } }));
      } else if (command === "check-reply") {
        // check-reply judges a reply with a mangled line and a missing file, as the Hermes plugin asks it to.
        run(["check-reply", "--json", "--media", png], { input: `Here: \`MEDIA:${png}\`\nMEDIA:/nonexistent/x.pdf\n` });
      } else {
        run([command, "--help"]);
      }
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/** Runs `use` against a gate started for it, then stops the gate (its cache is saved as it exits). */
async function throughGate(tmp, env, use) {
  const socket = path.join(tmp, "gate.sock");
  const gate = spawn(process.execPath, [path.join(root, "dist/cli.js"), "serve", "--socket", socket, "--outbox", path.join(tmp, "gate", "outbox")], { env, stdio: "ignore" });
  const exited = new Promise((resolve) => gate.once("exit", resolve));
  try {
    for (let i = 0; i < 1000 && !fs.existsSync(socket) && gate.exitCode === null; i++) await new Promise((r) => setTimeout(r, 20));
    if (fs.existsSync(socket)) use(socket);
  } finally {
    gate.kill("SIGTERM");
    const killer = setTimeout(() => gate.kill("SIGKILL"), 20_000);
    await exited;
    clearTimeout(killer);
  }
}

/** A valid 1x1 PNG. */
function tinyPng() {
  return Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==", "base64");
}

// Write each bundle atomically: tests and a running CLI may load them while a
// rebuild is in progress.
for (const file of result.outputFiles) {
  fs.mkdirSync(path.dirname(file.path), { recursive: true });
  const tmp = `${file.path}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, file.contents);
  fs.renameSync(tmp, file.path);
}

await trainCodeCaches();

if (!bundlesOnly) {
  execFileSync(process.execPath, [path.join(root, "node_modules/typescript/bin/tsc"), "-p", path.join(root, "tsconfig.build.json")], {
    stdio: "inherit",
  });
}
