// Run by the gate's unit before the gate, as root (ExecStartPre=-+): copies
// each agent's Hermes .env and JSON credential stores for the gate, read as
// that agent, and the environment the gateways' units set. The logic and the
// why are in src/deploy/gate-secrets.ts.
import type { Options } from "../cli/args.js";
import { err } from "../cli/io.js";
import { runCli } from "../cli/run.js";
import { usageError } from "../core/errors.js";
import { escapeText, quoteText } from "../core/escape.js";
import { GATE_SECRETS_WATCH, MAX_PROFILES, MAX_WATCHED_PROFILES, ProfileWatches } from "../deploy/gate-profiles.js";
import { type AgentSecretFile, COPY_ROUNDS, copyAgentSecrets, parseSecretFileArg } from "../deploy/gate-secrets.js";
import { Systemctl } from "../deploy/systemctl.js";

export const USAGE = `usage: media-outbox gate-secrets --into DIR [--watch-profiles] USER:[?][KIND:|STORE:|profiles:|gateway:]FILE...
Run as root by media-outbox-gate.service before the gate starts (install
systemd --gate writes the line): copies each agent's Hermes .env or other
store FILE (or a store of USER's home: ~/.docker/config.json, another
agent CLI's OAuth tokens) into DIR for the gate's content checks, reading
it as USER; a FILE that ends with "/" is a directory, whose .json files
are each copied. For a Hermes home's .env (USER:FILE, FILE named .env),
the Codex CLI's auth.json where it puts CODEX_HOME at this run is copied
too, unless the line names that file.
A FILE after "?" is optional: when it is not there, nothing is said.
KIND environment-file: or unit-file: marks a file systemd reads for a
gateway running as USER (an EnvironmentFile=, a unit file or drop-in):
its environment is copied, read as root when USER may not read it and the
file and every directory above it are root's alone.
STORE codex-home: marks the Codex CLI's auth.json where a gateway's
CODEX_HOME puts it (copied as USER, read as JSON), managed:
the managed scope's .env or config.yaml where its HERMES_MANAGED_DIR does,
nous-shared: the shared Nous OAuth store where its HERMES_SHARED_AUTH_DIR
puts it, vertex-credentials: and google-credentials: the Google service
account key its VERTEX_CREDENTIALS_PATH or GOOGLE_APPLICATION_CREDENTIALS
names (each read as JSON).
A profiles directory that leaves profiles out (past ${MAX_PROFILES}, a link, a
control character) has them named beside its copies
(hermes-env-N-profiles-untaken): the gate then refuses every file whose
check needs the known values, as local mode does.
profiles: marks a Hermes home's profiles directory (FILE ends with "/"):
each profile in it (at most ${MAX_PROFILES}; no link, no control character in
its name) has its .env and stores copied, and the Codex CLI's auth.json
where its .env puts CODEX_HOME.
gateway: marks a gateway unit running as USER, named by its path in the
directory its drop-ins are written in (FILE ends with ".service"): its
environment is resolved at this run as install resolves it, and the
Codex CLI's auth.json where its CODEX_HOME puts it, the managed .env
and config.yaml where its HERMES_MANAGED_DIR does, the shared Nous store
where its HERMES_SHARED_AUTH_DIR does and the Google key its
VERTEX_CREDENTIALS_PATH or GOOGLE_APPLICATION_CREDENTIALS names are copied (not a
managed .env that sets MEDIA_OUTBOX_DIR: its copies from before are kept).
A file followed so is copied once, and not when the line names it.
--watch-profiles starts an instance of ${GATE_SECRETS_WATCH} on the files
of each profile (the first ${MAX_WATCHED_PROFILES} of a home), each auth.json a
CODEX_HOME so followed names, and each file a gateway's environment is
read from or moves, and stops those of profiles (and settings) gone.
A file read, a directory listed, that changed while the copies were made
(no path unit watches then) makes them again, at most ${COPY_ROUNDS} times in one
run; past that, a line names what kept changing.`;

const OPTIONS = { into: { type: "string" }, "watch-profiles": { type: "boolean" } } satisfies Options;

function agentFile(arg: string): AgentSecretFile {
  const file = parseSecretFileArg(arg);
  if (!file) throw usageError(`${quoteText(arg)} is not USER:/ABSOLUTE/PATH or USER:?/ABSOLUTE/PATH (KIND:, STORE:, profiles: or gateway: before the path; profiles: a directory, with a trailing "/"; gateway: a unit, NAME.service)\n${USAGE}`);
  return file;
}

export async function run(argv: string[]): Promise<number> {
  return runCli(argv, OPTIONS, USAGE, async ({ values, positionals }) => {
    if (values.into === undefined) throw usageError(`--into DIR is required\n${USAGE}`);
    const files = positionals.map(agentFile);
    if (process.geteuid?.() !== 0) throw usageError("gate-secrets reads each file as its agent, which needs root; the gate's unit runs it with ExecStartPre=-+");
    const watches = values["watch-profiles"] ? new ProfileWatches(new Systemctl("system")) : undefined;
    const { taken, skipped, absent, notes } = copyAgentSecrets(values.into, files, watches ? { watches } : {});
    for (const s of skipped) {
      const known = s.kept ? "the gate keeps its copy from before" : "the gate will not know its values";
      err(`media-outbox: gate-secrets: skipped ${escapeText(s.file)} (read as ${escapeText(s.user)}): ${s.why}; ${known}\n`);
    }
    for (const note of notes) err(`media-outbox: gate-secrets: ${note}\n`);
    // One line, whatever the number of optional stores not there: most hosts have few of them.
    const notThere = absent > 0 ? ` (${absent} optional store(s) not there)` : "";
    err(`media-outbox: gate-secrets: ${taken} of ${files.length} secret file(s) copied for the gate${notThere}\n`);
    return 0;
  });
}
