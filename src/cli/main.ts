// The dispatcher: tiny, so start-up costs only what the chosen command loads.
// Each command is its own bundle in dist/commands/.
import fs from "node:fs";
import path from "node:path";
import { commandLineArguments } from "./argv.js";
import { loadBundle, loadBundleForCache } from "./bundle-loader.js";
import { err, out } from "./io.js";

declare const __filename: string;

interface CommandInfo {
  bundle: string;
  summary: string;
}

const COMMANDS: Record<string, CommandInfo> = {
  prepare: { bundle: "prepare", summary: "check files and publish them into the outbox; prints MEDIA: lines" },
  janitor: { bundle: "janitor", summary: "delete outbox files past the retention (or run on a schedule)" },
  status: { bundle: "status", summary: "show the outbox, its state and what the janitor would remove" },
  watch: { bundle: "watch", summary: "guard the outbox and turn drop-folder files into outbox files" },
  quarantine: { bundle: "quarantine", summary: "list or restore what the watch guard quarantined" },
  serve: { bundle: "serve", summary: "the gate: run prepare's checks for clients on a Unix socket (gate mode)" },
  "gate-secrets": { bundle: "gate-secrets", summary: "(run by the gate's unit as root) copy each agent's Hermes .env and credential stores for the gate, read as that agent" },
  install: { bundle: "install", summary: "install the systemd units and drop-ins, the Hermes config entry, or the Hermes plugin" },
  uninstall: { bundle: "install", summary: "remove exactly what install wrote" },
  doctor: { bundle: "doctor", summary: "check that the gateway really delivers from the outbox" },
  "check-reply": { bundle: "check-reply", summary: "make a final reply carry every prepared file's MEDIA: line; name what the gateway would drop" },
};

function version(): string {
  try {
    const pkg = JSON.parse(fs.readFileSync(path.join(path.dirname(__filename), "..", "package.json"), "utf8")) as { version: string };
    return pkg.version;
  } catch {
    return "unknown";
  }
}

function usage(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((c) => c.length));
  const lines = Object.entries(COMMANDS).map(([name, info]) => `  ${name.padEnd(width)}  ${info.summary}`);
  return `usage: media-outbox COMMAND [options]\n\ncommands:\n${lines.join("\n")}\n\nRun media-outbox COMMAND --help for its options.\n`;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === "--help" || command === "-h" || command === "help") {
    (command === undefined ? err : out)(usage());
    return command === undefined ? 2 : 0;
  }
  if (command === "--version" || command === "-V") {
    out(`${version()}\n`);
    return 0;
  }
  const info = Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined;
  if (!info) {
    err(`media-outbox: usage error: unknown command ${JSON.stringify(command).replace(/[^\x20-\x7e]/g, "?")}\n${usage()}`);
    return 2;
  }
  const bundle = path.join(path.dirname(__filename), "commands", `${info.bundle}.js`);
  if (!fs.existsSync(bundle)) {
    err(`media-outbox: the ${command} command is not built in this installation (missing ${bundle}); run npm run build\n`);
    return 2;
  }
  type CommandModule = { run: (argv: string[], command: string) => Promise<number> };
  // The build's training run (scripts/build.mjs) records a code cache.
  if (process.env.MEDIA_OUTBOX_TRAIN_CODE_CACHE === "1") {
    const training = loadBundleForCache(bundle);
    try {
      return await (training.exports as CommandModule).run(rest, command);
    } finally {
      training.save();
    }
  }
  return (loadBundle(bundle) as CommandModule).run(rest, command);
}

// When a command's promise settles, its work is done and everything it printed
// was written synchronously (io.ts, pino's sync destinations), so the process
// can end at once: a natural exit would first tear down the whole V8 heap,
// which costs every one-file `prepare` call about 2 ms.
main(commandLineArguments()).then(
  (code) => process.exit(code),
  (e: unknown) => {
    // One line, printable ASCII only: the dispatcher stays tiny (no escape module).
    const line = (text: string) => text.replace(/[^\x20-\x7e]/g, "?").replace(/media(\s*):/gi, "media$1?");
    const message = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
    err(`media-outbox: internal error: ${line(message)}; nothing more was done. This is a bug: run it again with MEDIA_OUTBOX_DEBUG=1 to see the details, and please report it\n`);
    if (process.env.MEDIA_OUTBOX_DEBUG === "1") err(`media-outbox: details: ${line(String(e instanceof Error ? e.stack : e))}\n`);
    process.exit(1);
  },
);
