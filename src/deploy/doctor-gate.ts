// `media-outbox doctor` in gate mode: the gate's socket is there and lets only
// its group in, the gate answers, the outbox belongs to the service user and
// cannot be written by the one running doctor (the agent), the gateways can
// read what it publishes, and a probe sent through the gate comes out as a
// MEDIA: line every gateway delivers. doctor.ts calls these in place of its
// single-user outbox checks and probe.
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { isErrno } from "../core/errors.js";
import { escapeText } from "../core/escape.js";
import { makePng } from "../core/png.js";
import type { CheckStatus, DoctorCheck, ReaderProblem } from "./doctor.js";
import { GATE_OUTBOX, GATE_USER, SYSTEM_CONFIG, gateStateDir, rootOwnedProblem } from "./gate.js";
import { type EffectiveEnvironment, type UnitScope, diskReader, installDir, onDisk, unitFiles } from "./gateway-units.js";
import { GATE_SERVICE, GATE_SOCKET_UNIT } from "./render.js";
import { type Systemctl, shellLine } from "./systemctl.js";
import { parseUnitText } from "./systemd-syntax.js";
import { groupByName, groupName, isMember, userByNameOrUid, userByUid } from "./users.js";

const PROBE_NAME = "media-outbox-doctor-probe.png";
/** How long doctor waits for the gate's answer: a bound on a hung gate, not a performance target. */
const ANSWER_TIMEOUT_MS = 15_000;
const MAX_ANSWER_BYTES = 1 << 20;

export interface GateContext {
  socket: string;
  /** The gate's outbox: as the gate reports it, or the install default when it does not answer. */
  outbox: string;
  stateDir: string;
  /** The socket's owner (the service user) and group (who may connect). */
  serviceUid?: number;
  group?: string;
  answering: boolean;
}

function check(checks: DoctorCheck[], name: string, status: CheckStatus, message: string, fix?: string): void {
  checks.push({ check: name, status, message, ...(fix ? { fix } : {}) });
}

const mode = (m: number) => (m & 0o7777).toString(8).padStart(4, "0");
const me = () => os.userInfo().username;

/**
 * The gate doctor checks, when one is configured: MEDIA_OUTBOX_SOCKET, or the
 * `socket` of the system-wide config install --gate writes. `--outbox` or
 * MEDIA_OUTBOX_DIR mean the single-user mode (the same rule as prepare's).
 */
export function gateSocketFor(env: NodeJS.ProcessEnv, outboxGiven: boolean): string | undefined {
  if (outboxGiven || env.MEDIA_OUTBOX_DIR) return undefined;
  if (env.MEDIA_OUTBOX_SOCKET) return env.MEDIA_OUTBOX_SOCKET;
  try {
    const socket = (JSON.parse(fs.readFileSync(SYSTEM_CONFIG, "utf8")) as { socket?: unknown }).socket;
    return typeof socket === "string" && path.isAbsolute(socket) ? socket : undefined;
  } catch {
    return undefined;
  }
}

interface Answer {
  status: number;
  body: Buffer;
}

/** One HTTP request over the gate's socket (the protocol of `media-outbox serve`). */
export function gateRequest(socket: string, method: "GET" | "POST", target: string, body?: Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { socketPath: socket, method, path: target, headers: { host: "gate", ...(body ? { "content-type": "application/octet-stream", "content-length": String(body.length) } : {}) } },
      (res) => {
        const parts: Buffer[] = [];
        let size = 0;
        res.on("data", (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_ANSWER_BYTES) req.destroy(new Error("the answer is larger than 1 MiB"));
          else parts.push(chunk);
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts) }));
        res.on("error", reject);
      },
    );
    req.setTimeout(ANSWER_TIMEOUT_MS, () => req.destroy(Object.assign(new Error(`no answer within ${ANSWER_TIMEOUT_MS / 1000} s`), { code: "ETIMEDOUT" })));
    req.on("error", reject);
    req.end(body);
  });
}

function parseJson(body: Buffer): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(body.toString("utf8")) as unknown;
    return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function socketChecks(socket: string, checks: DoctorCheck[]): Pick<GateContext, "serviceUid" | "group"> | undefined {
  let st: fs.Stats;
  try {
    st = fs.lstatSync(socket);
  } catch (err) {
    const why = isErrno(err, "ENOENT") ? "does not exist: the gate's socket unit is not listening" : `cannot be looked at: ${escapeText((err as Error).message)}`;
    check(checks, "gate socket", "fail", `${escapeText(socket)} ${why}`, escapeText(shellLine(["systemctl", "enable", "--now", GATE_SOCKET_UNIT])));
    return undefined;
  }
  const owner = userByUid(st.uid)?.name ?? `uid ${st.uid}`;
  const group = groupName(st.gid) ?? `gid ${st.gid}`;
  if (!st.isSocket()) check(checks, "gate socket", "fail", `${escapeText(socket)} is not a socket`, "run media-outbox install systemd --gate again");
  else if (st.mode & 0o002) {
    check(checks, "gate socket", "fail", `${escapeText(socket)} (mode ${mode(st.mode)}) lets every user connect, not only group ${escapeText(group)}`, `SocketMode=0660 in ${GATE_SOCKET_UNIT}: run media-outbox install systemd --gate again`);
  } else check(checks, "gate socket", "pass", `${escapeText(socket)} belongs to ${escapeText(owner)}:${escapeText(group)}, mode ${mode(st.mode)}: only root and group ${escapeText(group)} may connect`);
  return { serviceUid: st.uid, group };
}

async function healthCheck(socket: string, group: string | undefined, checks: DoctorCheck[]): Promise<string | undefined | false> {
  let answer: Answer;
  try {
    answer = await gateRequest(socket, "GET", "/health");
  } catch (err) {
    if (isErrno(err, "EACCES", "EPERM")) {
      check(
        checks,
        "gate",
        "fail",
        `you (${escapeText(me())}) may not connect to ${escapeText(socket)}: only root and members of group ${escapeText(group ?? GATE_USER)} may`,
        `as root: media-outbox uninstall systemd, then media-outbox install systemd --gate --agent-user ${escapeText(me())}; then log in again`,
      );
    } else if (isErrno(err, "ENOENT", "ECONNREFUSED")) {
      check(checks, "gate", "fail", `nothing listens on ${escapeText(socket)}`, escapeText(shellLine(["systemctl", "enable", "--now", GATE_SOCKET_UNIT])));
    } else {
      check(checks, "gate", "fail", `GET /health over ${escapeText(socket)} failed: ${escapeText((err as Error).message)}`, escapeText(shellLine(["journalctl", "-u", GATE_SERVICE])));
    }
    return false;
  }
  const doc = parseJson(answer.body);
  if (answer.status !== 200 || doc?.ok !== true) {
    check(checks, "gate", "fail", `GET /health answered ${answer.status}: ${escapeText(answer.body.toString("utf8").slice(0, 200))}`, escapeText(shellLine(["journalctl", "-u", GATE_SERVICE])));
    return false;
  }
  const outbox = typeof doc.outbox === "string" && path.isAbsolute(doc.outbox) ? doc.outbox : undefined;
  check(checks, "gate", "pass", `the gate answers GET /health${outbox ? `; its outbox is ${escapeText(outbox)}` : ""}`);
  return outbox;
}

/** Who owns the outbox and the state, and that the one running doctor cannot write there. */
function ownershipChecks(ctx: GateContext, checks: DoctorCheck[]): void {
  const service = ctx.serviceUid === undefined ? GATE_USER : (userByUid(ctx.serviceUid)?.name ?? `uid ${ctx.serviceUid}`);
  let st: fs.Stats;
  try {
    st = fs.lstatSync(ctx.outbox);
  } catch (err) {
    check(checks, "outbox", "fail", `${escapeText(ctx.outbox)}: ${escapeText((err as Error).message)}`, "run media-outbox install systemd --gate again");
    return;
  }
  const fix = "run media-outbox install systemd --gate again (it sets the owner and mode)";
  const ancestors = rootOwnedProblem(path.dirname(ctx.outbox), {});
  if (!st.isDirectory()) check(checks, "outbox", "fail", `${escapeText(ctx.outbox)} is not a directory`, fix);
  else if (ctx.serviceUid !== undefined && st.uid !== ctx.serviceUid) check(checks, "outbox", "fail", `${escapeText(ctx.outbox)} belongs to uid ${st.uid}, not to the gate's user ${escapeText(service)}`, fix);
  else if (st.mode & 0o022) check(checks, "outbox", "fail", `${escapeText(ctx.outbox)} (mode ${mode(st.mode)}) is writable by its group or others: an agent could plant files`, fix);
  else if ((st.mode & 0o050) !== 0o050) check(checks, "outbox", "fail", `${escapeText(ctx.outbox)} (mode ${mode(st.mode)}) cannot be read by group ${escapeText(ctx.group ?? GATE_USER)}: the gateways cannot deliver`, fix);
  else if (ancestors) check(checks, "outbox", "fail", `above ${escapeText(ctx.outbox)}: ${ancestors}`, "make every directory above the outbox root's, writable by nobody else");
  else check(checks, "outbox", "pass", `${escapeText(ctx.outbox)} belongs to ${escapeText(service)} (mode ${mode(st.mode)}); every directory above belongs to root`);

  // The kernel's answer for the one running doctor (the agent): it must not be able to write.
  if (process.geteuid?.() !== 0) {
    let writable = true;
    try {
      fs.accessSync(ctx.outbox, fs.constants.W_OK);
    } catch {
      writable = false;
    }
    if (writable) check(checks, "outbox writers", "fail", `you (${escapeText(me())}) can write into ${escapeText(ctx.outbox)}: the gate does not hold`, fix);
    else check(checks, "outbox writers", "pass", `you (${escapeText(me())}) cannot write into the outbox: only the gate publishes`);
  }

  let state: fs.Stats;
  try {
    state = fs.lstatSync(ctx.stateDir);
  } catch (err) {
    check(checks, "state", "fail", `${escapeText(ctx.stateDir)}: ${escapeText((err as Error).message)}`, fix);
    return;
  }
  if (!state.isDirectory() || (ctx.serviceUid !== undefined && state.uid !== ctx.serviceUid) || state.mode & 0o077) {
    check(checks, "state", "fail", `${escapeText(ctx.stateDir)} must be a directory of ${escapeText(service)} with mode 0700 (it is ${mode(state.mode)}, uid ${state.uid}): staging, ledger and quarantine live there`, fix);
  } else check(checks, "state", "pass", `${escapeText(ctx.stateDir)} (staging, ledger, quarantine) belongs to ${escapeText(service)}, mode 0700`);
}

/** The socket, the gate's answer, and who owns what; returns what the later checks need. */
export async function gateLayoutChecks(socket: string, checks: DoctorCheck[]): Promise<GateContext> {
  const owner = socketChecks(socket, checks);
  const outbox = await healthCheck(socket, owner?.group, checks);
  const ctx: GateContext = {
    socket,
    outbox: outbox || GATE_OUTBOX,
    stateDir: gateStateDir(outbox || GATE_OUTBOX),
    ...owner,
    answering: outbox !== false,
  };
  ownershipChecks(ctx, checks);
  return ctx;
}

/** A gateway reads published files (0640, the gate's group) when it runs as root, as the service user, or as a member of the group. */
export function gateReader(ctx: GateContext, scope: UnitScope): ReaderProblem {
  return (env: EffectiveEnvironment) => {
    if (!env.user) return undefined; // a system unit without User= runs as root
    const user = userByNameOrUid(env.user, scope.root);
    if (!user) return `the gateway runs as ${escapeText(env.user)}, which is not in /etc/passwd`;
    const group = ctx.group ? groupByName(ctx.group, scope.root) : undefined;
    if (user.uid === 0 || user.uid === ctx.serviceUid || (group && isMember(user, group))) return undefined;
    return `the gateway runs as ${escapeText(user.name)}, who is not in group ${escapeText(ctx.group ?? GATE_USER)}: it cannot read published files (mode 0640)`;
  };
}

/** The gate's socket unit listens, its service has not failed, and the files it loads as credentials are there. */
export function gateServiceChecks(scope: UnitScope, systemctl: Systemctl | undefined, checks: DoctorCheck[]): void {
  const enable = escapeText(shellLine(["systemctl", "enable", "--now", GATE_SOCKET_UNIT]));
  if (!systemctl) {
    const dir = installDir(scope);
    const missing = [GATE_SOCKET_UNIT, GATE_SERVICE].filter((u) => !fs.existsSync(onDisk(scope, path.join(dir, u))));
    if (missing.length > 0) check(checks, "gate units", "fail", `${missing.join(", ")} not installed`, "media-outbox install systemd --gate");
    else check(checks, "gate units", "warn", `${GATE_SOCKET_UNIT} and ${GATE_SERVICE} are installed; their state is unknown without systemd`, `where systemd runs: ${enable}`);
    return;
  }
  const sock = systemctl.show(GATE_SOCKET_UNIT, ["LoadState", "UnitFileState", "ActiveState"]);
  if (sock.get("LoadState") !== "loaded") check(checks, "gate units", "fail", `${GATE_SOCKET_UNIT} is not installed`, "media-outbox install systemd --gate");
  else if (sock.get("UnitFileState") !== "enabled" || sock.get("ActiveState") !== "active") {
    check(checks, "gate units", "fail", `${GATE_SOCKET_UNIT} is ${sock.get("UnitFileState") ?? "?"}/${sock.get("ActiveState") ?? "?"}: agents cannot reach the gate`, enable);
  } else {
    const svc = systemctl.show(GATE_SERVICE, ["ActiveState", "Result", "NRestarts"]);
    const active = svc.get("ActiveState") ?? "?";
    if (active === "failed") check(checks, "gate units", "fail", `${GATE_SERVICE} failed (${svc.get("Result") ?? "?"})`, escapeText(shellLine(["journalctl", "-u", GATE_SERVICE])));
    else {
      const state = active === "inactive" ? "inactive (it starts on the next connection)" : active;
      check(checks, "gate units", "pass", `${GATE_SOCKET_UNIT} listens; ${GATE_SERVICE} is ${state}, restarted ${svc.get("NRestarts") ?? "0"} times`);
    }
    // systemd refuses to start the gate when a LoadCredential= file is gone.
    // (`systemctl show` prints this property as "[unprintable]": the unit's files are read.)
    const files = unitFiles(scope, GATE_SERVICE, systemctl);
    const read = diskReader(scope);
    const gone = [...(files.fragment ? [files.fragment] : []), ...files.dropIns]
      .flatMap((f) => parseUnitText(read(f) ?? ""))
      .filter((a) => a.section === "Service" && a.key === "LoadCredential")
      .map((a) => a.value.slice(a.value.indexOf(":") + 1))
      .filter((p) => path.isAbsolute(p))
      .filter((p) => {
        try {
          fs.statSync(onDisk(scope, p));
          return false;
        } catch (err) {
          return isErrno(err, "ENOENT");
        }
      });
    if (gone.length > 0) {
      check(checks, "gate credentials", "fail", `the gate loads ${gone.map(escapeText).join(", ")} (an agent's Hermes .env), which no longer exists: the gate cannot start`, "restore the file, or run media-outbox install systemd --gate again");
    }
  }
}

/**
 * Sends a fixed probe PNG through the gate (always the same bytes and name, so
 * repeated runs reuse one file; the agent cannot delete it, the janitor does),
 * checks that the one running doctor can read what was published, and hands
 * it to `judge` for the gateways' verdict.
 */
export async function gateProbe(ctx: GateContext, checks: DoctorCheck[], judge: (media: { path: string; directive: string }) => void): Promise<void> {
  if (!ctx.answering) {
    check(checks, "probe", "fail", "skipped: the gate does not answer", "fix the gate line above");
    return;
  }
  const png = makePng(4, (i) => (i * 37 + 11) & 0xff);
  let answer: Answer;
  try {
    answer = await gateRequest(ctx.socket, "POST", `/prepare?name=${encodeURIComponent(PROBE_NAME)}`, png);
  } catch (err) {
    check(checks, "probe", "fail", `POST /prepare failed: ${escapeText((err as Error).message)}`, escapeText(shellLine(["journalctl", "-u", GATE_SERVICE])));
    return;
  }
  const doc = parseJson(answer.body);
  const media = Array.isArray(doc?.media) ? (doc.media[0] as { path?: unknown; directive?: unknown } | undefined) : undefined;
  if (!media || typeof media.path !== "string" || typeof media.directive !== "string") {
    const dropped = Array.isArray(doc?.media_dropped) ? (doc.media_dropped[0] as { code?: unknown; reason?: unknown } | undefined) : undefined;
    const why = dropped ? `${escapeText(String(dropped.code))}: ${escapeText(String(dropped.reason))}` : `answer ${answer.status}: ${escapeText(answer.body.toString("utf8").slice(0, 200))}`;
    check(checks, "probe", "fail", `the gate refused a generated PNG: ${why}`, escapeText(shellLine(["journalctl", "-u", GATE_SERVICE])));
    return;
  }
  try {
    fs.closeSync(fs.openSync(media.path, "r"));
  } catch (err) {
    check(checks, "probe", "fail", `the gate published ${escapeText(media.path)}, but you cannot read it: ${escapeText((err as Error).message)}`, "the gateway's user must be in the gate's group: run media-outbox install systemd --gate --agent-user USER again");
    return;
  }
  judge({ path: media.path, directive: media.directive });
}
