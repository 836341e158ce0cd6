// The gate's known secrets: each agent's Hermes .env and JSON credential
// stores (auth.json and the others of src/content/known.ts's list, each MCP
// server's token file), and the stores of each agent user's home that local
// mode reads (other agents' CLIs' OAuth tokens, Docker's registry logins;
// the Codex CLI's also where a gateway's $CODEX_HOME puts it), and the
// managed scope's where a gateway's $HERMES_MANAGED_DIR does, copied for
// the gate each time it starts. The gate's service user cannot
// read the agents' homes; systemd's LoadCredential= could, but it reads
// the file as root, and the file is the agent's to replace: a link to
// /etc/shadow or to another agent's .env made root read that into the
// gate, and a .env removed, a FIFO in its place or a file over systemd's
// size limit kept the gate from starting (its next start: after a crash, a
// reboot) — the agent could switch the gate off.
//
// So the gate's unit runs `media-outbox gate-secrets` before the gate, with
// full privileges, and it reads each file as the agent it belongs to (its
// uid, gid and groups): what that agent could not read, the gate does not
// get. It never blocks (O_NONBLOCK; a FIFO, a socket or a device is skipped),
// takes a regular file of at most 1 MiB (what the content checks read), and
// writes each copy into the unit's runtime directory (`hermes-env-N`; a
// store of its user's home with the store's name after, which the gate
// names what it finds there by), readable by the service user alone (the
// gate's, and in gate mode the watch's: it judges drops with the same
// checks). What it cannot take is skipped with a line in the journal: the
// gate always starts. A file named optional (a JSON store: most hosts have
// no google_token.json) that is not there is no news: it is counted in the
// last line, not named, at every start.
//
// A CODEX_HOME a Hermes home's .env (or a profile's) sets is read from the
// .env at each run, so one set after install is followed too
// (followCodexHome); and each covered gateway's environment is resolved
// again at each run, with install's own code (hermes-environment.ts), so a
// CODEX_HOME or HERMES_MANAGED_DIR set after install in its unit, an
// environment file, its Hermes .env or the managed .env is followed, the
// managed .env checked as install checks it (followGateway); so are
// HERMES_SHARED_AUTH_DIR, VERTEX_CREDENTIALS_PATH and
// GOOGLE_APPLICATION_CREDENTIALS (the shared Nous store, a Google key). A
// file so followed is copied once (Followed). A profiles directory whose
// listing leaves profiles out has them named beside its copies, and the
// gate refuses as local mode does. A Hermes home's profiles (`profiles/NAME`, made
// whenever the agent likes) are not named one by one: the home's profiles
// directory is, and each run lists it as the agent and copies what each
// profile there holds, as the home's files are copied (gate-profiles.ts
// says which profiles, and how their files are watched; ProfilesCopy
// below).
//
// A gateway's own unit holds secrets too: its EnvironmentFile= files and the
// Environment= values of its unit file and drop-ins are in the gateway's
// environment, and so in every tool it starts. systemd reads those as root
// (a root-only /etc/hermes/gateway.env for a gateway with User=hermes is
// usual): such a file its user may not read is read as root, but only when
// it is root's alone (it and every directory above it root's, writable by no
// one else, no symbolic link on the way), checked as it is read: no agent
// can then point it anywhere. Each is copied as the environment systemd
// makes of it (a unit file: its [Service] Environment= assignments), as
// NAME='value' lines; a file that sets nothing leaves no copy.
import fs from "node:fs";
import path from "node:path";
import { profilesLeftOut } from "../content/hermes-profiles.js";
import { HERMES_STORE_DIRS, PROFILE_FILES, type ProfileCopyFile, USER_HOME_SECRET_FILES, MOVED_STORES, type MovedStore, codexHomeCopyName, managedCopyTag, movedStoreCopyName, profileCopyName, storeDirFileNames, untakenProfilesCopyName, userHomeStoreCopyName } from "../content/known.js";
import { FatalError, errnoCode } from "../core/errors.js";
import { escapeText, someOf } from "../core/escape.js";
import { MAX_PROFILES, MAX_WATCHED_PROFILES, PROFILE_WATCHES, type Profile, type ProfileListing, type ProfileWatches, profileWatchPaths, takeProfiles } from "./gate-profiles.js";
import { type ReadText, type UnitScope, unitEnvironment, unitFilesOnDisk, unitHermesHome, unitSearchPath, variableSource } from "./gateway-units.js";
import { type EnvironmentIo, LOCAL_OUTBOX_VAR, dotenvCodexHomeAuth, dotenvSetsLocalOutbox, gatewayEnvironmentStores, unitHermesEnvironment } from "./hermes-environment.js";
import { rootOwnedProblem } from "./root-owned.js";
import { environmentAssignments, parseEnvFile, parseUnitText } from "./systemd-syntax.js";
import { type PasswdEntry, groupIdsOf, userByName } from "./users.js";

/** The gate's runtime directory (RuntimeDirectory=, under /run): the copies live there while it runs. */
export const GATE_RUNTIME_DIR_NAME = "media-outbox-gate";
/** The watch's, in gate mode (it judges drops with the same checks). */
export const WATCH_RUNTIME_DIR_NAME = "media-outbox-watch";
/** The content checks read the files of $CREDENTIALS_DIRECTORY named so (src/content/known.ts). */
export const SECRET_FILE_PREFIX = "hermes-env-";
/** The content checks ignore a larger file. */
export const MAX_SECRET_FILE_BYTES = 1024 * 1024;
/**
 * Bytes all the copies of one run may take: the runtime directory is a
 * tmpfs (memory), and what fills it is the agents' to write (256 files of
 * 1 MiB in each store directory, of the home and of each profile). A
 * host's real files take a few KiB; the files first on the line (the
 * .env files) are copied first.
 */
export const MAX_COPIES_BYTES = 64 * 1024 * 1024;

/** One agent's file of secrets (its .env, a JSON store), and the user whose permissions it is read with. */
export interface AgentSecretFile {
  user: string;
  file: string;
  /** A store that may well not exist (it is made on first use): its absence is not reported. */
  optional?: boolean;
  /**
   * A file systemd reads (as root) for a gateway unit whose user is `user`:
   * one of its EnvironmentFile= files, or a unit file or drop-in whose
   * Environment= values are copied. Unset: a Hermes file, copied as it is.
   */
  kind?: SystemdFileKind;
  /**
   * A store a gateway's environment moves (hermes-environment.ts), read as
   * the user like a Hermes file: `codex-home`, the Codex CLI's auth.json in
   * its $CODEX_HOME, whose copy known.ts codexHomeCopyName names (the gate
   * reads it as JSON and names where it came from); `managed`, the managed scope's
   * .env or config.yaml in its $HERMES_MANAGED_DIR, copied as it is; a
   * store of known.ts MOVED_STORES (the shared Nous store in its
   * $HERMES_SHARED_AUTH_DIR, the Google key its $VERTEX_CREDENTIALS_PATH or
   * $GOOGLE_APPLICATION_CREDENTIALS names), read as JSON, named by the store.
   */
  store?: EnvironmentStore;
  /**
   * A Hermes home's profiles directory (`USER:?profiles:HOME/profiles/`):
   * its profiles, listed at each run, are copied (gate-profiles.ts).
   */
  profiles?: boolean;
  /**
   * A covered gateway unit (`USER:?gateway:/etc/systemd/system/UNIT`, named
   * by its path in the directory install writes its drop-ins in): at each
   * run its environment is resolved as install resolves it
   * (hermes-environment.ts), and the stores it moves now (its CODEX_HOME's
   * auth.json, its HERMES_MANAGED_DIR's .env and config.yaml) are copied
   * and watched (followGateway).
   */
  gateway?: boolean;
}

/** The stores a gateway's environment moves: where install found them (hermes-environment.ts), as secretFileArg marks them. */
export type EnvironmentStore = "codex-home" | "managed" | MovedStore;
const STORES: readonly EnvironmentStore[] = ["codex-home", "managed", ...(Object.keys(MOVED_STORES) as MovedStore[])];

export type SystemdFileKind = "environment-file" | "unit-file";
const KINDS: readonly SystemdFileKind[] = ["environment-file", "unit-file"];


/**
 * One file as gate-secrets takes it on its command line: `USER:PATH`, with
 * "?" before the path for an optional one, `KIND:` for a file systemd
 * reads for a gateway (`hermes:?environment-file:/etc/hermes/gateway.env`),
 * `STORE:` for a store a gateway's environment moves
 * (`hermes:?codex-home:/srv/codex/auth.json`), and `profiles:` for a Hermes
 * home's profiles directory (`hermes:?profiles:/home/hermes/.hermes/profiles/`,
 * a directory: the trailing "/"). A path starts with "/", so none is ever
 * part of it.
 */
export function secretFileArg(s: AgentSecretFile): string {
  const mark = s.kind ?? s.store ?? (s.profiles ? PROFILES_MARK : s.gateway ? GATEWAY_MARK : undefined);
  return `${s.user}:${s.optional ? "?" : ""}${mark ? `${mark}:` : ""}${s.file}`;
}
const PROFILES_MARK = "profiles";
const GATEWAY_MARK = "gateway";

/**
 * Whether a Hermes file of the line (not KIND:) is a Hermes home's own .env,
 * as install names it (`USER:PATH`): not a STORE: (a managed scope's .env),
 * named `.env` (a store's name never is). gate-secrets follows the
 * CODEX_HOME it sets at each run, as a profile's (followCodexHome); doctor
 * asks which those are.
 */
export function isHermesHomeDotenv(f: AgentSecretFile): boolean {
  return f.store === undefined && !f.gateway && !f.profiles && path.basename(f.file) === ".env";
}

/** The inverse of secretFileArg; undefined for a word that is not one. */
export function parseSecretFileArg(arg: string): AgentSecretFile | undefined {
  // A user name never holds a colon (/etc/passwd's separator); a path may.
  const colon = arg.indexOf(":");
  if (colon <= 0) return undefined;
  let rest = arg.slice(colon + 1);
  const optional = rest.startsWith("?");
  if (optional) rest = rest.slice(1);
  const kind = KINDS.find((k) => rest.startsWith(`${k}:`));
  if (kind) rest = rest.slice(kind.length + 1);
  const store = kind ? undefined : STORES.find((k) => rest.startsWith(`${k}:`));
  if (store) rest = rest.slice(store.length + 1);
  const profiles = !kind && !store && rest.startsWith(`${PROFILES_MARK}:`);
  if (profiles) rest = rest.slice(PROFILES_MARK.length + 1);
  const gateway = !kind && !store && !profiles && rest.startsWith(`${GATEWAY_MARK}:`);
  if (gateway) rest = rest.slice(GATEWAY_MARK.length + 1);
  if (!rest.startsWith("/") || (profiles && !rest.endsWith("/")) || (gateway && !rest.endsWith(".service"))) return undefined;
  return {
    user: arg.slice(0, colon),
    file: rest,
    ...(optional ? { optional } : {}),
    ...(kind ? { kind } : {}),
    ...(store ? { store } : {}),
    ...(profiles ? { profiles } : {}),
    ...(gateway ? { gateway } : {}),
  };
}

/**
 * The [Service] Environment= assignments of a unit file or drop-in, in
 * order, values as systemd gives them (`%%` is a `%`; other specifiers stay
 * as written: no secret holds one). An empty Environment= drops the
 * assignments before it.
 */
export function unitFileEnvironment(text: string): { name: string; value: string }[] {
  let out: { name: string; value: string }[] = [];
  for (const a of parseUnitText(text)) {
    if (a.section !== "Service" || a.key !== "Environment") continue;
    if (a.value === "") out = [];
    for (const { name, value } of environmentAssignments(a.value)) out.push({ name, value: value.replace(/%(.?)/g, (m, c: string) => (c === "%" ? "%" : m)) });
  }
  return out;
}

/**
 * The environment a systemd file gives a gateway, as .env lines the content
 * checks read back exactly (single-quoted: only `\\` and `\'` are escapes
 * there), or undefined when it sets nothing. A name a .env cannot hold has
 * its other characters made `_`: the name only says where a value is from.
 */
function environmentCopy(kind: SystemdFileKind, text: string): Buffer | undefined {
  const entries = kind === "unit-file" ? unitFileEnvironment(text) : [...parseEnvFile(text)].map(([name, value]) => ({ name, value }));
  if (entries.length === 0) return undefined;
  const line = ({ name, value }: { name: string; value: string }) => {
    const safe = name.replace(/[^A-Za-z0-9_]/g, "_").replace(/^(?=[0-9])/, "_");
    return `${safe}='${value.replace(/[\\']/g, (c) => `\\${c}`)}'\n`;
  };
  return Buffer.from(entries.map(line).join(""), "utf8");
}

export interface SecretsCopy {
  /** The copies written, as `hermes-env-N`. */
  copied: string[];
  /** `kept`: its copy from before stays (what the gate knew of it, it still knows). */
  skipped: { user: string; file: string; why: string; kept?: true }[];
  /** Optional files that do not exist. */
  absent: number;
  /** The files named that were copied (a directory counts once, whatever it holds). */
  taken: number;
  /** What else the journal should say (escaped): a profile's CODEX_HOME not followed, a watch not started, profiles not looked at. */
  notes: string[];
}

class Skip extends Error {
  constructor(
    why: string,
    /** The file is not there (not: there and not to be taken). */
    readonly missing = false,
    /** Its user may not read it (where root may take it instead: readForUnit). */
    readonly denied = false,
    /** Its copy from before is kept. */
    readonly kept = false,
  ) {
    super(why);
  }
}

function skipFor(err: unknown): Skip {
  const code = errnoCode(err);
  if (code === "ENOENT" || code === "ENOTDIR") return new Skip("it does not exist", true);
  if (code === "EACCES" || code === "EPERM") return new Skip("its user may not read it", false, true);
  if (code === "ENXIO" || code === "EOPNOTSUPP") return new Skip("it is not a regular file");
  if (code === "ELOOP") return new Skip("it is a symbolic link loop");
  return new Skip(`it cannot be read (${code ?? escapeText((err as Error).message)})`);
}

/**
 * Runs `fn` with the effective identity of `user` (uid, gid, and the groups
 * /etc/group gives it): the kernel then checks every path and the file as
 * it would for that user. Needs root; the identity is root's again after.
 */
function asUser<T>(user: PasswdEntry, fn: () => T): T {
  return asIdentity({ uid: user.uid, gid: user.gid, groups: [...groupIdsOf(user)] }, fn);
}

/** An effective identity: uid, gid and supplementary groups. */
interface Identity {
  uid: number;
  gid: number;
  groups: number[];
}

/** Runs `fn` with the effective identity `id` (from root's; root's again after). */
function asIdentity<T>(id: Identity, fn: () => T): T {
  const groups = process.getgroups!();
  const egid = process.getegid!();
  process.setgroups!(id.groups);
  try {
    process.setegid!(id.gid);
    try {
      process.seteuid!(id.uid);
      try {
        return fn();
      } finally {
        process.seteuid!(0);
      }
    } finally {
      process.setegid!(egid);
    }
  } finally {
    process.setgroups!(groups);
  }
}

/**
 * The bytes of `file`: a regular file of at most MAX_SECRET_FILE_BYTES,
 * opened without blocking. `rootAlone`: opened without following a link,
 * and taken only if root's and writable by no one else.
 */
function readSmallRegularFile(file: string, rootAlone = false): Buffer {
  const { O_RDONLY, O_NONBLOCK, O_NOCTTY, O_NOFOLLOW } = fs.constants;
  // Its state before it is read: one changed after the read gives another round (Sources).
  noteSource(file);
  let fd: number;
  try {
    fd = fs.openSync(file, O_RDONLY | O_NONBLOCK | O_NOCTTY | (rootAlone ? O_NOFOLLOW : 0));
  } catch (err) {
    throw skipFor(err);
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) throw new Skip("it is not a regular file");
    if (rootAlone && (st.uid !== 0 || st.mode & 0o022)) throw new Skip("it is not root's alone");
    if (st.size > MAX_SECRET_FILE_BYTES) throw new Skip(`it is larger than ${MAX_SECRET_FILE_BYTES} bytes`);
    // One byte more than allowed: a file that grows meanwhile is caught.
    const buf = Buffer.alloc(MAX_SECRET_FILE_BYTES + 1);
    let n = 0;
    for (let got = -1; got !== 0 && n < buf.length; n += got) {
      try {
        got = fs.readSync(fd, buf, n, buf.length - n, null);
      } catch (err) {
        throw skipFor(err);
      }
    }
    if (n > MAX_SECRET_FILE_BYTES) throw new Skip(`it is larger than ${MAX_SECRET_FILE_BYTES} bytes`);
    return buf.subarray(0, n);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Why root may not read `file` for a gateway whose user may not: undefined
 * when it and every directory above it are root's, writable by no one else,
 * with no symbolic link on the way (the same rule as the gate's own code and
 * config). Doctor asks it too.
 */
export function rootAloneProblem(file: string, scope: { root?: string } = {}): string | undefined {
  return rootOwnedProblem(file, scope, { links: "refuse" });
}

/**
 * A file systemd reads for a gateway: as its user, and, when that user may
 * not read it, as root if it is root's alone (checked now, just before it
 * is opened without following a link; only root could change it between).
 */
function readForUnit(user: PasswdEntry, file: string): Buffer {
  try {
    return asUser(user, () => readSmallRegularFile(file));
  } catch (err) {
    if (!(err instanceof Skip) || !err.denied) throw err;
    const problem = rootAloneProblem(file);
    if (problem) throw new Skip(`its user may not read it, and root reads it for the gate only when it is root's alone: ${problem}`);
    return readSmallRegularFile(file, true);
  }
}

/** Whom the copies belong to (the gate's user), and how many bytes they may still take (MAX_COPIES_BYTES). */
interface CopyOwner {
  uid: number;
  gid: number;
  bytesLeft: number;
}

/**
 * Writes `data` as `dir/name`, mode 0400, owned by `owner`, within its
 * budget (a Skip past it); never follows
 * what was there. Written under a temporary name, then renamed over the
 * old copy: a refresh while the gate runs (media-outbox-gate-secrets.path)
 * never leaves it a moment without the copy, or with half of one.
 */
function writeCopy(dir: string, name: string, data: Buffer, owner: CopyOwner): void {
  const file = path.join(dir, name);
  if (data.length > owner.bytesLeft) {
    // Its copy from an earlier run goes too: what the gate knows is what this run could copy.
    fs.rmSync(file, { force: true });
    throw new Skip(`its copy would take the copies past the ${MAX_COPIES_BYTES / (1024 * 1024)} MiB they may hold in ${escapeText(dir)} (a tmpfs: memory); the files named before it on the line were copied first`);
  }
  owner.bytesLeft -= data.length;
  const tmp = path.join(dir, `.${name}.${process.pid}.tmp`);
  try {
    fs.unlinkSync(tmp);
  } catch (err) {
    if (errnoCode(err) !== "ENOENT") throw err;
  }
  const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW } = fs.constants;
  const fd = fs.openSync(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o400);
  try {
    fs.fchownSync(fd, owner.uid, owner.gid);
    for (let off = 0; off < data.length; ) off += fs.writeSync(fd, data, off, data.length - off);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
}

/**
 * Writes `text` as `dir/name` as writeCopy does, outside the copies' budget:
 * a few lines that say the copies are incomplete (known.ts
 * untakenProfilesCopyName) are written whatever the copies took.
 */
function writeMarker(dir: string, name: string, text: string, owner: CopyOwner): void {
  writeCopy(dir, name, Buffer.from(text, "utf8"), { ...owner, bytesLeft: Number.POSITIVE_INFINITY });
}

/**
 * How many times one gate-secrets makes the copies, while a file it read
 * changed (or was made, or went) during the copies (Sources): a path unit
 * does not watch while the copy it started runs, and sees nothing of that
 * change when it watches again. Past the last, a journal line names what
 * kept changing, and the run ends: the path units then watch again, and the
 * next change there starts a copy (systemd's trigger limits apply to an
 * agent that writes without end).
 */
export const COPY_ROUNDS = 3;

/**
 * A file whose change time is closer to now than this may change again
 * within the same tick of the kernel's file clock (coarse: a jiffy, up to
 * 10 ms) and keep its times: its state is taken again once that tick is
 * past (Sources.note).
 */
const SAME_TICK_MS = 50;

/**
 * What one round of copies read (each file, each directory listed, each
 * directory whose existence it asked), and how each stood when it was read:
 * existence, device and inode (a file renamed over it), mode, size, and
 * modification and change times in nanoseconds, taken as the identity that
 * read it. After the round, each is looked at again (changed()): a file
 * changed, made or removed since it was read gives another round.
 *
 * Why not the path units alone: systemd drops a path unit's watches while
 * the unit it started runs, and when that ends it watches again without
 * looking whether a PathChanged= or PathModified= path changed meanwhile
 * (src/core/path.c: they are edge-triggered, and the re-check after the run
 * is skipped for them, systemd PR #15697); PathExists= and
 * DirectoryNotEmpty=, which are looked at again, start the copy again after
 * every run for as long as the file exists: a loop into the start limit
 * (systemd issue #5770 asks for the missing option, still open).
 */
class Sources {
  /** Keyed by the reader's uid and the path: one identity's view is compared with the same identity's. */
  private readonly seen = new Map<string, { path: string; id: Identity; state: string }>();
  /** Those seen changed within the round (read twice, differently; or changing while their state was taken). */
  private readonly moved = new Set<string>();

  /** Takes the state of `p` as the current identity, before it is read; a second read in the round must find it the same. */
  note(p: string): void {
    const id: Identity = { uid: process.geteuid!(), gid: process.getegid!(), groups: process.getgroups!() };
    const key = `${id.uid}\0${p}`;
    const state = settledState(p);
    const before = this.seen.get(key);
    if (before === undefined) this.seen.set(key, { path: p, id, state: state ?? "" });
    if (state === undefined || (before !== undefined && before.state !== state)) this.moved.add(key);
  }

  /** Forgets what was taken of `p` (as the current identity): it is read anew, and the copies made again from what it holds now (a profiles directory listed again). */
  forget(p: string): void {
    const key = `${process.geteuid!()}\0${p}`;
    this.seen.delete(key);
    this.moved.delete(key);
  }

  /**
   * The paths changed since the round read them, each looked at as the
   * identity that read it (as root: switches to each identity once, for all
   * its paths; a switch costs each of node's threads a signal).
   */
  changed(): string[] {
    const byIdentity = new Map<string, { id: Identity; entries: [string, { path: string; state: string }][] }>();
    for (const [key, entry] of this.seen) {
      const who = `${entry.id.uid}:${entry.id.gid}:${entry.id.groups.join(",")}`;
      const group = byIdentity.get(who) ?? { id: entry.id, entries: [] };
      group.entries.push([key, entry]);
      byIdentity.set(who, group);
    }
    const out = new Set<string>();
    for (const { id, entries } of byIdentity.values()) {
      const look = () => {
        for (const [key, { path: p, state }] of entries) if (this.moved.has(key) || pathState(p) !== state) out.add(p);
      };
      if (id.uid === 0) look();
      else asIdentity(id, look);
    }
    // In the order they were read (the journal names them so), each once.
    return [...new Set([...this.seen.values()].map((e) => e.path))].filter((p) => out.has(p));
  }
}

/** The sources of the round under way (copyAgentSecrets sets it): what reads a file or lists a directory notes it here first. */
let roundSources: Sources | undefined;
const noteSource = (p: string) => roundSources?.note(p);

/** How `p` stands, as the current identity sees it (following links, as the reads do): "absent", "error CODE", or its stat. */
function pathState(p: string): string {
  let st: fs.BigIntStats | undefined;
  try {
    st = fs.statSync(p, { bigint: true, throwIfNoEntry: false });
  } catch (err) {
    const code = errnoCode(err);
    return code === "ENOTDIR" ? "absent" : `error ${code ?? "unknown"}`;
  }
  if (st === undefined) return "absent";
  return `${st.dev}:${st.ino}:${st.mode}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
}

/** How long ago a stat's change time was, in milliseconds (negative when the file clock is ahead of now); undefined for a state without one. */
function changedAgoMs(state: string): number | undefined {
  const ctime = state.split(":")[5];
  return ctime === undefined ? undefined : Number(BigInt(Date.now()) * 1_000_000n - BigInt(ctime)) / 1e6;
}

/** Whether a stat's change time lies within SAME_TICK_MS of now (either side). */
function sameTick(state: string): boolean {
  const ago = changedAgoMs(state);
  return ago !== undefined && Math.abs(ago) < SAME_TICK_MS;
}

/**
 * The state of `p` once a change within the file clock's tick could no
 * longer leave its times as they are: taken again once its change time is
 * SAME_TICK_MS old when it changed more recently; undefined when it changed
 * again meanwhile (it is being written now: another round).
 *
 * It waits only for the rest of the file's own tick, so the files an agent
 * wrote together just before the run cost one wait in all, not one each:
 * once the first is settled, the others are as old (a wait of a whole tick
 * each added up, one file after another).
 */
function settledState(p: string): string | undefined {
  const first = pathState(p);
  if (!sameTick(first)) return first;
  const rest = Math.ceil(SAME_TICK_MS - changedAgoMs(first)!);
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, Math.min(rest, 2 * SAME_TICK_MS));
  const again = pathState(p);
  return again === first || !sameTick(again) ? again : undefined;
}

/** How often gate-secrets lists the profiles directories again after copying, while one shows a profile made, gone or changed meanwhile. */
const PROFILE_ROUNDS = 3;

/**
 * Copies each agent's file into `dir` as `hermes-env-N` (N its place in
 * `files`; a store of the agent's home: copyName; a profile's file:
 * profileCopyName), each read as its agent, the copies owned by `dir`'s
 * owner (the gate's user) and readable by it alone. Needs root. Throws
 * (FatalError) only when `dir` is not a real directory; a file it cannot
 * take is in `skipped`, unless it is optional and simply not there
 * (`absent`). A home's .env (isHermesHomeDotenv) is read for the
 * CODEX_HOME it sets now, and the Codex CLI's auth.json there copied
 * (`hermes-env-N-codex-home-auth.json`, N the .env's place) unless the line
 * names that file itself. With `watches`, the profiles' files and those
 * auth.json files are watched (gate-profiles.ts): the watches started
 * before they are read, those of profiles (and settings) gone stopped at
 * the end.
 *
 * A file read that changed (or was made, or went) while the copies were
 * made, which no path unit sees (Sources), makes them again, at most
 * COPY_ROUNDS times; what is reported is the last round's, with a note for
 * each round again and, past the last, one naming what kept changing.
 */
export function copyAgentSecrets(dir: string, files: AgentSecretFile[], opts: { watches?: ProfileWatches } = {}): SecretsCopy {
  const again: string[] = [];
  for (let round = 1; ; round++) {
    const sources = new Sources();
    roundSources = sources;
    let result: SecretsCopy;
    try {
      result = copyOnce(dir, files, opts);
    } finally {
      roundSources = undefined;
    }
    // Looked at last, after everything the round did (its watches stopped too): the path units watch again once this run ends.
    const changed = sources.changed();
    if (changed.length === 0 || round === COPY_ROUNDS) {
      result.notes.unshift(...again);
      if (changed.length > 0) {
        result.notes.push(
          `${someOf(changed)} kept changing while the copies were made (${COPY_ROUNDS} rounds): the gate has the copies of the last round; the next change to a watched file copies them again`,
        );
      }
      return result;
    }
    again.push(`${someOf(changed)} changed while the copies were made: copied again (round ${round + 1} of at most ${COPY_ROUNDS})`);
  }
}

/** One round of copyAgentSecrets: every file of the line, and what it follows, copied once. */
function copyOnce(dir: string, files: AgentSecretFile[], opts: { watches?: ProfileWatches }): SecretsCopy {
  const st = fs.lstatSync(dir, { throwIfNoEntry: false });
  if (!st?.isDirectory()) throw new FatalError("config_invalid", `${escapeText(dir)} is not a directory: the gate's unit names its RuntimeDirectory= here`);
  const owner: CopyOwner = { uid: st.uid, gid: st.gid, bytesLeft: MAX_COPIES_BYTES };
  const result: SecretsCopy = { copied: [], skipped: [], absent: 0, taken: 0, notes: [] };
  // The profiles directories are listed first, and their profiles' watches started, before any file is read.
  const profiles = new Map<number, ProfilesCopy>();
  const startWatches = (paths: string[]) => {
    if (opts.watches) result.notes.push(...opts.watches.start(paths));
  };
  // The files named on the line, copied as named (and watched by the path units): a file followed (a CODEX_HOME's auth.json, a managed scope) that is one of them is not copied again.
  const named = new Set(files.map((f) => f.file));
  const follow = new Followed(named);
  for (const [i, f] of files.entries()) if (f.profiles) profiles.set(i, new ProfilesCopy(dir, i, f, owner, startWatches, follow));
  startWatches([...profiles.values()].flatMap((p) => p.watchPaths()));
  // The Codex CLI's auth.json files the homes' .env files put CODEX_HOME at, and what the gateways' environments are read from and move: watched as long as they do.
  const codexFiles: string[] = [];
  const gatewayFiles: string[] = [];
  for (const [i, f] of files.entries()) {
    const { user: name, file, optional, kind, store } = f;
    const user = userByName(name);
    // A directory's files (mcp-tokens/: one per MCP server) are copied as hermes-env-N-K, K their place in name order.
    const isDirectory = file.endsWith("/");
    // A home's .env: the copy of the Codex CLI's auth.json where it puts CODEX_HOME, removed when it no longer does.
    const codexCopy = isHermesHomeDotenv(f) ? codexHomeCopyName(`${SECRET_FILE_PREFIX}${i}`) : undefined;
    try {
      if (!user) throw new Skip(`there is no user ${escapeText(name)}`);
      const profilesCopy = profiles.get(i);
      if (profilesCopy) profilesCopy.copy();
      else if (f.gateway) followGateway({ dir, prefix: `${SECRET_FILE_PREFIX}${i}`, user, unitPath: file, owner, result, follow, watch: (paths) => startWatches(paths), watched: gatewayFiles });
      else if (isDirectory) removeCopies(dir, `${SECRET_FILE_PREFIX}${i}-`, copyDirectory(dir, (k) => `${SECRET_FILE_PREFIX}${i}-${k}`, user, file, owner, result).length);
      else if (kind) {
        const copy = environmentCopy(kind, readForUnit(user, file).toString("utf8"));
        // Nothing set there (a drop-in of other settings): no copy, and none left from before.
        if (copy === undefined) fs.rmSync(path.join(dir, `${SECRET_FILE_PREFIX}${i}`), { force: true });
        else {
          writeCopy(dir, `${SECRET_FILE_PREFIX}${i}`, copy, owner);
          result.copied.push(`${SECRET_FILE_PREFIX}${i}`);
        }
      } else {
        const data = asUser(user, () => readSmallRegularFile(file));
        // A managed .env that keeps the agents' prepare from the gate (install refuses it): its copy from before is kept, not replaced.
        if (store === "managed" && path.basename(file) === ".env" && dotenvSetsLocalOutbox(data)) throw new Skip(MANAGED_LOCAL_OUTBOX, false, false, true);
        const name = environmentStoreCopyName(`${SECRET_FILE_PREFIX}${i}`, store) ?? copyName(`${SECRET_FILE_PREFIX}${i}`, user, file);
        writeCopy(dir, name, data, owner);
        result.copied.push(name);
        if (codexCopy !== undefined) {
          const codex = followCodexHome(user, file, data, result.notes, (paths) => startWatches(paths.filter((p) => !named.has(p))));
          if (codex === undefined || !follow.claim(codex, codexCopy)) fs.rmSync(path.join(dir, codexCopy), { force: true });
          else {
            codexFiles.push(codex);
            copyFollowed(dir, codexCopy, user, codex, owner, result);
          }
        }
      }
      result.taken++;
    } catch (err) {
      if (!(err instanceof Skip)) throw err;
      if (isDirectory) removeCopies(dir, `${SECRET_FILE_PREFIX}${i}-`, 0);
      // The .env not read: what it sets is not known this run.
      if (codexCopy !== undefined) fs.rmSync(path.join(dir, codexCopy), { force: true });
      if (optional && err.missing) result.absent++;
      else result.skipped.push({ user: name, file, why: err.message, ...(err.kept ? { kept: true as const } : {}) });
    }
  }
  // A profile made (or a file made at a profile's top) while the copies were made may have come between
  // the listing and the watches' start: listed again, and copied again where a listing differs.
  for (let round = 1; round < PROFILE_ROUNDS; round++) {
    const changed = [...profiles.values()].filter((p) => p.listAgain());
    if (changed.length === 0) break;
    startWatches(changed.flatMap((p) => p.watchPaths()));
    for (const p of changed) {
      try {
        p.copy();
      } catch (err) {
        // The directory gone meanwhile: its copies went with it.
        if (!(err instanceof Skip)) throw err;
      }
    }
  }
  for (const p of profiles.values()) p.report(result);
  // Those of the profiles made meanwhile are started here; the homes' Codex CLI's auth.json files and the gateways' files were, before they were read.
  const watched = [...[...profiles.values()].flatMap((p) => p.watchPaths()), ...codexFiles, ...gatewayFiles];
  startWatches(watched);
  if (opts.watches) result.notes.push(...opts.watches.stopOthers(watched));
  return result;
}

/** Why a named managed .env is not copied again (its copy from before is kept). */
const MANAGED_LOCAL_OUTBOX = `it sets ${LOCAL_OUTBOX_VAR}, which keeps the prepare of every agent that loads it from the gate (install refuses it): not copied again; remove ${LOCAL_OUTBOX_VAR} there`;

/**
 * The files gate-secrets follows in one run (not named on its line: the
 * auth.json a CODEX_HOME names, a managed scope's files), each copied once:
 * by the first that follows it (its copy's name), never when the line
 * names it (copied as named). A profile's CODEX_HOME that names a file the
 * line names, or one a home's .env or another profile follows, so gives one
 * copy, not two.
 */
class Followed {
  private readonly by = new Map<string, string>();
  constructor(private readonly named: ReadonlySet<string>) {}

  /** Whether `copy` is the copy of `file` this run (the first to ask for it, and the line does not name it). */
  claim(file: string, copy: string): boolean {
    if (this.named.has(file)) return false;
    const first = this.by.get(file);
    if (first === undefined) this.by.set(file, copy);
    return first === undefined || first === copy;
  }

  isNamed(file: string): boolean {
    return this.named.has(file);
  }
}

/** The name of the copy of a store a gateway's environment moves (`prefix`: hermes-env-N), read as JSON and named by the store: none for the managed scope's (managedCopyName, by the file) or another file. */
function environmentStoreCopyName(prefix: string, store: EnvironmentStore | undefined): string | undefined {
  if (store === "codex-home") return codexHomeCopyName(prefix);
  return store === undefined || store === "managed" ? undefined : movedStoreCopyName(prefix, store);
}

/** The copy of a managed scope's file a gateway's HERMES_MANAGED_DIR puts elsewhere (`hermes-env-N-managed.env`, `…-managed.config.yaml`): read as either, as a Hermes .env and config.yaml are. */
const managedCopyName = (prefix: string, file: string) => `${prefix}-${managedCopyTag(path.basename(file))}`;

interface GatewayFollow {
  dir: string;
  /** `hermes-env-N`, N the gateway's place on the line: its copies are `hermes-env-N-…`. */
  prefix: string;
  user: PasswdEntry;
  /** The unit, named by its path in the directory install writes its drop-ins in. */
  unitPath: string;
  owner: CopyOwner;
  result: SecretsCopy;
  follow: Followed;
  watch: (paths: string[]) => void;
  /** The paths watched for it, pushed here (kept watched at the end of the run). */
  watched: string[];
}

/**
 * A covered gateway's environment, resolved now as install resolves it
 * (hermes-environment.ts gatewayEnvironmentStores, the one place of that
 * rule): its unit's files (found in the unit's directory, then systemd's
 * search path) and EnvironmentFile= files, read as its user, or as root
 * where root's alone (readForUnit); its Hermes home's .env and the managed
 * scope's .env, read as its user. What it moves now (CODEX_HOME's
 * auth.json, HERMES_MANAGED_DIR's .env and config.yaml) is copied as
 * `hermes-env-N-codex-home-auth.json` and `hermes-env-N-managed…`, unless
 * the line names it or it was followed already; its copies from before of
 * what it no longer moves are removed. Each file read is watched first (not
 * those the line names: its path units watch them), and so is the unit's
 * drop-in directory: a HERMES_MANAGED_DIR or CODEX_HOME set later, in a
 * drop-in, an environment file, the Hermes .env or the managed one, is
 * followed without a restart.
 *
 * The managed .env is checked as install checks it: one that sets
 * MEDIA_OUTBOX_DIR is not followed (every agent of the gateway loads it,
 * and their prepare would publish there, never through the gate): a
 * journal line says so, and the gateway's copies from before are kept.
 */
function followGateway(g: GatewayFollow): void {
  const unit = path.basename(g.unitPath);
  const unitDir = path.dirname(g.unitPath);
  const scope: UnitScope = { scope: "system", home: "/root", user: "root" };
  // Its drop-in directory as it stands before it is listed: a drop-in made meanwhile gives another round (Sources).
  noteSource(path.join(unitDir, `${unit}.d`));
  const files = unitFilesOnDisk({}, unit, [unitDir, ...unitSearchPath(scope).filter((d) => d !== unitDir)]);
  if (files.fragment === undefined) throw new Skip("the gateway unit is not installed", true);
  // Each batch of paths watched in one call, before any of them is read.
  const watch = (paths: string[]) => {
    const fresh = [...new Set(paths)].filter((p) => !g.follow.isNamed(p) && !g.watched.includes(p));
    if (fresh.length === 0) return;
    g.watched.push(...fresh);
    g.watch(fresh);
  };
  // Its drop-in directory (a drop-in made there later, by systemctl edit, is followed at once), and its files.
  watch([path.join(unitDir, `${unit}.d`), ...(files.fragment ? [files.fragment] : []), ...files.dropIns]);
  // Each file read once (as the gateway's user): HERMES_HOME, CODEX_HOME and HERMES_MANAGED_DIR are each looked for in every EnvironmentFile=.
  const texts = new Map<string, string | undefined>();
  const read: ReadText = (p) => {
    if (texts.has(p)) return texts.get(p);
    watch([p]);
    let text: string | undefined;
    try {
      text = readForUnit(g.user, p).toString("utf8");
    } catch (err) {
      if (!(err instanceof Skip)) throw err;
      if (!err.missing) throw new Error(err.message);
    }
    texts.set(p, text);
    return text;
  };
  const lenient: ReadText = (p) => {
    try {
      return read(p);
    } catch {
      return undefined;
    }
  };
  const env = unitEnvironment(scope, files, lenient);
  // Its environment files, before they are read.
  watch(env.environmentFiles.flatMap((ref) => (ref.path !== undefined && !/[*?[]/.test(ref.path) ? [ref.path] : [])));
  const hermesHome = unitHermesHome(variableSource(scope, env, "HERMES_HOME", read).value);
  const io: EnvironmentIo = {
    readFile: (file) => {
      watch([file]);
      try {
        return asUser(g.user, () => readSmallRegularFile(file));
      } catch (err) {
        if (err instanceof Skip && err.missing) return undefined;
        throw err;
      }
    },
    isDirectory: (dir) =>
      asUser(g.user, () => {
        noteSource(dir);
        try {
          return fs.statSync(dir).isDirectory();
        } catch {
          return false;
        }
      }),
  };
  const found = gatewayEnvironmentStores(
    { unit, user: g.user.name, hermesHome, environment: unitHermesEnvironment(scope, env, read) },
    {},
    io,
  );
  g.result.notes.push(...found.notes);
  watch(found.files.map((f) => f.file));
  if (found.localOutbox !== undefined) {
    // A managed .env the line names says so itself (MANAGED_LOCAL_OUTBOX).
    if (!g.follow.isNamed(found.localOutbox)) {
      g.result.notes.push(
        `${escapeText(found.localOutbox)}, the managed .env the agents of ${escapeText(unit)} load, sets ${LOCAL_OUTBOX_VAR}: their prepare would publish there instead of handing files to the gate (install refuses it). Not followed: the gate keeps the copies it made for that gateway before; remove ${LOCAL_OUTBOX_VAR} there`,
      );
    }
    return;
  }
  const written = new Set<string>();
  for (const { file, store } of found.files) {
    const name = environmentStoreCopyName(g.prefix, store) ?? managedCopyName(g.prefix, file);
    if (!g.follow.claim(file, name)) continue;
    written.add(name);
    copyFollowed(g.dir, name, g.user, file, g.owner, g.result);
  }
  for (const name of fs.readdirSync(g.dir)) if (name.startsWith(`${g.prefix}-`) && !written.has(name)) fs.rmSync(path.join(g.dir, name), { force: true });
}

/**
 * The Codex CLI's auth.json where a Hermes .env (`bytes`, read from
 * `envFile` as `user`) puts CODEX_HOME, for a home's .env and a profile's
 * alike: read at each run, so one set after install is followed, as install
 * follows a gateway's (hermes-environment.ts dotenvCodexHomeAuth: `~` the
 * HOME that .env sets, else the user's passwd home; `${...}`, a relative
 * value or a `..` component not followed, each a note in `notes`). Its
 * watch is started (`watch`) before the caller reads it: a token written
 * after the read is written while it is watched.
 */
function followCodexHome(user: PasswdEntry, envFile: string, bytes: Buffer, notes: string[], watch: (paths: string[]) => void): string | undefined {
  const found = dotenvCodexHomeAuth(bytes, user.home);
  if (found === undefined) return undefined;
  if ("why" in found) {
    notes.push(`CODEX_HOME in ${escapeText(envFile)} ${found.why}: the gate will not know a Codex CLI's auth.json there`);
    return undefined;
  }
  watch([found.file]);
  return found.file;
}

/**
 * Copies a file gate-secrets followed (not named on its line: a home's
 * .env's CODEX_HOME auth.json) as `name`, read as `user` as a named one is;
 * its copy from before removed when it cannot be taken. One that is not
 * there is no news, as an optional store.
 */
function copyFollowed(dir: string, name: string, user: PasswdEntry, file: string, owner: CopyOwner, result: SecretsCopy): void {
  try {
    writeCopy(dir, name, asUser(user, () => readSmallRegularFile(file)), owner);
    result.copied.push(name);
  } catch (err) {
    if (!(err instanceof Skip)) throw err;
    fs.rmSync(path.join(dir, name), { force: true });
    if (!err.missing) result.skipped.push({ user: user.name, file, why: err.message });
  }
}

/** `p` without the slashes it ends with (a loop: linear on any input). */
function withoutTrailingSlashes(p: string): string {
  let end = p.length;
  while (end > 1 && p[end - 1] === "/") end--;
  return p.slice(0, end);
}

/**
 * One profiles directory of a Hermes home (`USER:?profiles:DIR/`): each
 * profile gate-profiles.ts takes (listed as the user, links refused) has its
 * .env, its stores and its store directories' files copied, read as the
 * user, as the home's are, named by profileCopyName; and the Codex CLI's
 * auth.json where its .env puts CODEX_HOME (followed as install follows a
 * gateway's: hermes-environment.ts). The copies of profiles (and files)
 * gone are removed.
 */
class ProfilesCopy {
  private readonly copyPrefix: string;
  private readonly from: string;
  private readonly user: PasswdEntry | undefined;
  private listing: ProfileListing | Skip;
  /** What the last copy found, for the report: the copies, what it skipped, its notes, the Codex CLI's auth.json files it read. */
  private last = { copied: [] as string[], skipped: [] as SecretsCopy["skipped"], notes: [] as string[], codexFiles: [] as string[] };

  constructor(
    private readonly dir: string,
    i: number,
    private readonly named: AgentSecretFile,
    private readonly owner: CopyOwner,
    /** Starts the watches of paths (copyAgentSecrets' startWatches). */
    private readonly watch: (paths: string[]) => void,
    /** Which followed files this run copies, and as what: one copy each. */
    private readonly follow: Followed,
  ) {
    this.copyPrefix = `${SECRET_FILE_PREFIX}${i}`;
    this.from = withoutTrailingSlashes(named.file);
    this.user = userByName(named.user);
    this.listing = this.list();
  }

  private list(): ProfileListing | Skip {
    const user = this.user;
    if (!user) return new Skip(`there is no user ${escapeText(this.named.user)}`);
    try {
      return asUser(user, () => {
        noteSource(this.from);
        if (fs.lstatSync(this.from).isSymbolicLink()) throw new Skip("it is a symbolic link, which is not followed (the agent's to point anywhere)");
        const names = fs.readdirSync(this.from);
        return takeProfiles(this.from, names, (p) => fs.lstatSync(p));
      });
    } catch (err) {
      if (err instanceof Skip) return err;
      return skipFor(err);
    }
  }

  /** Lists the directory again; whether it differs from the listing the copies were made from. */
  listAgain(): boolean {
    // The copies are made again from this listing: it is what a change after the round is measured against.
    if (this.user) asUser(this.user, () => roundSources?.forget(this.from));
    const again = this.list();
    const same = again instanceof Skip ? this.listing instanceof Skip && again.message === this.listing.message : !(this.listing instanceof Skip) && again.key === this.listing.key;
    this.listing = again;
    return !same;
  }

  /** The paths to watch: those of the profiles watched (gate-profiles.ts profileWatchPaths, MAX_WATCHED_PROFILES), and each CODEX_HOME's auth.json of theirs read last. */
  watchPaths(): string[] {
    if (this.listing instanceof Skip) return [];
    return [...this.listing.profiles.filter((p) => p.watched).flatMap((p) => profileWatchPaths(p.dir)), ...this.last.codexFiles];
  }

  /** Copies every profile of the listing; throws its Skip when the directory could not be listed (its copies then go). */
  copy(): void {
    const listing = this.listing;
    this.last = { copied: [], skipped: [], notes: [], codexFiles: [] };
    if (listing instanceof Skip) {
      this.removeCopiesBut(new Set());
      throw listing;
    }
    const user = this.user!;
    // The profiles left out, written before any profile is copied: the gate refuses (as local mode does) while its copies lack them.
    const untaken = profilesLeftOut(this.from, listing);
    const marker = untakenProfilesCopyName(this.copyPrefix);
    if (untaken.length > 0) writeMarker(this.dir, marker, untaken.join("\n"), this.owner);
    for (const profile of listing.profiles) this.copyProfile(user, profile);
    for (const { file, why } of listing.refused) this.last.skipped.push({ user: user.name, file, why });
    const unwatched = listing.profiles.filter((p) => !p.watched).map((p) => escapeText(p.dir));
    if (unwatched.length > 0) {
      this.last.notes.push(
        `${unwatched.join(", ")}: copied, not watched: at most ${MAX_WATCHED_PROFILES} Hermes profiles of a home are watched (each takes ${PROFILE_WATCHES} of root's inotify instances); a change there is copied for the gate with the next copy (the gate's start, a change to a watched file)`,
      );
    }
    if (listing.past.length > 0 || listing.more > 0) {
      const past = [...listing.past.map(escapeText), ...(listing.more > 0 ? [`${listing.more} more entries`] : [])];
      this.last.notes.push(
        `${past.join(", ")}: not taken: at most ${MAX_PROFILES} Hermes profiles of a home are copied for the gate (Hermes' own names first, in name order); the gate does not know the values there, and refuses every file whose check needs them (unscannable_content)`,
      );
    }
    this.removeCopiesBut(new Set([...this.last.copied, ...(untaken.length > 0 ? [marker] : [])]));
  }

  private copyProfile(user: PasswdEntry, profile: Profile): void {
    const take = (file: string, as: ProfileCopyFile): Buffer | undefined => {
      try {
        const data = asUser(user, () => readSmallRegularFile(file));
        const name = profileCopyName(this.copyPrefix, profile, as);
        writeCopy(this.dir, name, data, this.owner);
        this.last.copied.push(name);
        return data;
      } catch (err) {
        if (!(err instanceof Skip)) throw err;
        // A store that is not there is no news, as the home's optional ones.
        if (!err.missing) this.last.skipped.push({ user: user.name, file, why: err.message });
        return undefined;
      }
    };
    let dotEnv: Buffer | undefined;
    for (const store of PROFILE_FILES) {
      const data = take(path.join(profile.dir, store), { store });
      if (store === ".env") dotEnv = data;
    }
    for (const storeDir of HERMES_STORE_DIRS) {
      const sink: SecretsCopy = { copied: [], skipped: [], absent: 0, taken: 0, notes: [] };
      try {
        copyDirectory(this.dir, (index) => profileCopyName(this.copyPrefix, profile, { storeDir, index }), user, path.join(profile.dir, storeDir), this.owner, sink);
      } catch (err) {
        if (!(err instanceof Skip)) throw err;
        if (!err.missing) sink.skipped.push({ user: user.name, file: path.join(profile.dir, storeDir), why: err.message });
      }
      this.last.copied.push(...sink.copied);
      this.last.skipped.push(...sink.skipped);
    }
    if (dotEnv !== undefined) {
      // Hermes loads the profile's .env over its environment when it runs the profile. Watched (for a watched profile) unless the line names it (its path units watch it).
      const watch = (paths: string[]) => (profile.watched ? this.watch(paths.filter((p) => !this.follow.isNamed(p))) : undefined);
      const codex = followCodexHome(user, path.join(profile.dir, ".env"), dotEnv, this.last.notes, watch);
      if (codex !== undefined) {
        if (profile.watched && !this.follow.isNamed(codex)) this.last.codexFiles.push(codex);
        // One copy of a file: not again when the line names it, or a home's .env (or another profile) follows it already.
        if (this.follow.claim(codex, profileCopyName(this.copyPrefix, profile, { codexHome: true }))) take(codex, { codexHome: true });
      }
    }
  }

  /** Removes the copies of this directory's profiles but `keep`: profiles and files gone. */
  private removeCopiesBut(keep: Set<string>): void {
    for (const name of fs.readdirSync(this.dir)) {
      if (name.startsWith(`${this.copyPrefix}-`) && !keep.has(name)) fs.rmSync(path.join(this.dir, name), { force: true });
    }
  }

  /** Adds what the last copy found to `result`. */
  report(result: SecretsCopy): void {
    result.copied.push(...this.last.copied);
    result.skipped.push(...this.last.skipped);
    result.notes.push(...this.last.notes);
  }
}

/**
 * The name of the copy of `file`: `copy` (hermes-env-N), and for a store of
 * its user's home (/etc/passwd's; known.ts USER_HOME_SECRET_FILES, as install
 * names them) the store's after it, by which the content checks read and
 * name it as local mode does the store.
 */
function copyName(copy: string, user: PasswdEntry, file: string): string {
  const store = path.isAbsolute(user.home) ? USER_HOME_SECRET_FILES.find((s) => path.join(user.home, s) === file) : undefined;
  return store === undefined ? copy : userHomeStoreCopyName(copy, store);
}

/**
 * Copies the `.json` files of the agent's directory `from` (listed and read
 * as the agent) as `nameOf` their place in name order; returns the names
 * written (the caller removes the copies of files no longer there). A file
 * it cannot take is skipped with its name; the directory not being there is
 * a Skip of its own (missing).
 */
function copyDirectory(dir: string, nameOf: (k: number) => string, user: PasswdEntry, from: string, owner: CopyOwner, result: SecretsCopy): string[] {
  let names: string[];
  try {
    names = storeDirFileNames(
      asUser(user, () => {
        noteSource(from);
        return fs.readdirSync(from);
      }),
    );
  } catch (err) {
    throw skipFor(err);
  }
  const written: string[] = [];
  for (const name of names) {
    const file = path.join(from, name);
    try {
      const data = asUser(user, () => readSmallRegularFile(file));
      const copy = nameOf(written.length);
      writeCopy(dir, copy, data, owner);
      result.copied.push(copy);
      written.push(copy);
    } catch (err) {
      if (!(err instanceof Skip)) throw err;
      // Gone since it was listed: no news.
      if (!err.missing) result.skipped.push({ user: user.name, file, why: err.message });
    }
  }
  return written;
}

/** Removes the copies `prefix`K for K from `from` on: files removed from a directory since its last copy. */
function removeCopies(dir: string, prefix: string, from: number): void {
  for (const name of fs.readdirSync(dir)) {
    if (!name.startsWith(prefix)) continue;
    const k = Number(name.slice(prefix.length));
    if (Number.isInteger(k) && k >= from && String(k) === name.slice(prefix.length)) fs.rmSync(path.join(dir, name), { force: true });
  }
}
