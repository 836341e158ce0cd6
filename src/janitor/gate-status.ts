// `status` in gate mode: when prepare would hand its files to the gate
// (config.gate, the one discovery prepare and doctor use), the outbox that
// matters is the gate's, not the caller's own. It reports the socket, whether
// the gate answers (GET /health, prepare's own client), and the gate's outbox
// and state as far as the caller may see them: root and the gate's user read
// everything (the directories must then be the gate's user's, not the
// caller's); an agent reads the outbox (its group's, 0750) but not the state
// (0700) and is told how to see it; one outside the group sees neither.
// Read-only, like status: it creates nothing and deletes nothing.
import fs from "node:fs";
import { type Config, type GateSocket, loadConfig } from "../config/config.js";
import { FatalError, isErrno } from "../core/errors.js";
import { escapeText } from "../core/escape.js";
import { type UnitScope, effectiveEnvironment } from "../deploy/gateway-units.js";
import { JANITOR_SERVICE } from "../deploy/render.js";
import { Systemctl } from "../deploy/systemctl.js";
import { userByNameOrUid, userByUid } from "../deploy/users.js";
import { gateHealth } from "../gate/client.js";
import type { DirOwner } from "../safety/private-dir.js";
import { type StatusReport, statusOf } from "./status.js";

/** How long status waits for the gate at any one step: a bound on a hung gate (MEDIA_OUTBOX_GATE_TIMEOUT overrides it). */
const ANSWER_TIMEOUT_MS = 10_000;
/** What install puts in the gate's units: the outbox, its state, the gate's config file (its policy). */
const UNIT_VARS = ["MEDIA_OUTBOX_DIR", "MEDIA_OUTBOX_STATE_DIR", "MEDIA_OUTBOX_CONFIG"] as const;
const SEE_ALL = "sudo media-outbox status";

export interface GateInfo {
  /** The socket prepare uses (escaped). */
  socket: string;
  /** Which setting named it (escaped). */
  from: string;
  /** The gate's user: the socket's owner (else the janitor unit's User=), escaped, `uid N` when /etc/passwd has no name; null when neither is known. */
  user: string | null;
  /** The gate answered GET /health with `"ok": true`. */
  answers: boolean;
  /** `gate_unavailable` (no answer) or `gate_error` (an error answer, such as an unsafe outbox); null when it answers. */
  code: string | null;
  /** Why it does not answer, as prepare would say it (escaped). */
  problem: string | null;
  /** Where the outbox below comes from: the gate's answer, the janitor's unit (the gate did not answer), or nowhere (null: not known). */
  outbox_from: "gate" | "unit" | null;
  /** The unit whose environment gave the state's place and the janitor's policy (retention, quota); null: serve's defaults. */
  policy_from: string | null;
  /** What the caller could read: the outbox and its state, the outbox alone, or neither. */
  seen: "all" | "outbox" | "nothing";
  /** What could not be seen, why, and how to see it; null when everything was seen. */
  unseen: string | null;
  /** Anything else worth knowing (a unit that names another outbox, a config it cannot read…), escaped. */
  notes: string[];
}

/**
 * status's document in gate mode: the gate, then the sections of local mode
 * for the gate's outbox, each null where the caller could not see it (or the
 * outbox is not known).
 */
export interface GateStatusReport {
  gate: GateInfo;
  outbox: StatusReport["outbox"] | null;
  files: StatusReport["files"] | null;
  janitor: (Omit<StatusReport["janitor"], "next_run"> & { next_run: StatusReport["janitor"]["next_run"] | null }) | null;
  staging: StatusReport["staging"] | null;
  quarantine: StatusReport["quarantine"] | null;
  ledger: StatusReport["ledger"] | null;
}

export interface GateStatusOptions {
  /** The caller's configuration; its `gate` is the gate looked at. */
  config: Config & { gate: GateSocket };
  now?: Date;
  /** Whose systemctl is asked (MEDIA_OUTBOX_SYSTEMCTL: tests put a fake there); process.env by default. */
  env?: NodeJS.ProcessEnv;
}

/** The gate's configuration as its janitor unit resolves it (install gives the gate's units all the same environment). */
interface UnitConfig {
  config: Config;
  unit: string;
  user?: string;
}

/**
 * The janitor unit's environment, as systemd gives it (the running manager's
 * view, or the unit files when none runs), turned into the configuration the
 * janitor runs with: its outbox, state and policy. Undefined when there is no
 * such unit or it names no outbox.
 */
function janitorUnitConfig(env: NodeJS.ProcessEnv, notes: string[]): UnitConfig | undefined {
  const scope: UnitScope = { scope: "system", home: "/root", user: "root" };
  const systemctl = new Systemctl("system", env);
  const live = systemctl.state().running ? systemctl : undefined;
  const unit = effectiveEnvironment(scope, JANITOR_SERVICE, [...UNIT_VARS], live);
  if (!unit.loaded) return undefined;
  const vars: Record<string, string> = {};
  for (const key of UNIT_VARS) {
    const v = unit.vars.get(key);
    if (v?.unknown) notes.push(`${JANITOR_SERVICE}: ${escapeText(v.unknown)}`);
    if (v && (v.source === "environment" || v.source === "environment-file") && v.value !== undefined) vars[key] = v.value;
  }
  if (vars.MEDIA_OUTBOX_DIR === undefined) return undefined;
  // Its user's home, as the janitor has it: nothing of the caller's environment counts.
  const home = (unit.user ? userByNameOrUid(unit.user)?.home : undefined) ?? "/nonexistent";
  try {
    return { config: loadConfig({ env: { HOME: home, ...vars }, cwd: "/" }), unit: JANITOR_SERVICE, ...(unit.user ? { user: unit.user } : {}) };
  } catch (err) {
    if (!(err instanceof FatalError)) throw err;
    notes.push(`${JANITOR_SERVICE}: its configuration cannot be read: ${err.message}`);
    return undefined;
  }
}

/** A real path, or undefined when it cannot be resolved. */
function realPath(p: string): string | undefined {
  try {
    return fs.realpathSync.native(p);
  } catch {
    return undefined;
  }
}

/** The socket's owner: the gate's user (who must own the outbox), or undefined when the socket cannot be looked at. */
function socketOwner(socket: string): { uid: number; user: string } | undefined {
  try {
    const st = fs.lstatSync(socket);
    return { uid: st.uid, user: escapeText(userByUid(st.uid)?.name ?? `uid ${st.uid}`) };
  } catch {
    return undefined;
  }
}

/** The gate's status, as far as the one running it may see. Never throws for a gate that does not answer or an unsafe outbox: that is reported. */
export async function gateStatus(options: GateStatusOptions): Promise<GateStatusReport> {
  const { gate } = options.config;
  const now = options.now ?? new Date();
  const env = options.env ?? process.env;
  const notes: string[] = [];
  const info: GateInfo = {
    socket: escapeText(gate.path),
    from: gate.from,
    user: null,
    answers: false,
    code: null,
    problem: null,
    outbox_from: null,
    policy_from: null,
    seen: "nothing",
    unseen: null,
    notes,
  };
  const report: GateStatusReport = { gate: info, outbox: null, files: null, janitor: null, staging: null, quarantine: null, ledger: null };

  let answered: string | undefined;
  let answeredState: string | undefined;
  try {
    const health = await gateHealth(gate, gate.timeoutMs ?? ANSWER_TIMEOUT_MS);
    answered = health.outbox;
    answeredState = health.state;
    info.answers = true;
  } catch (err) {
    if (!(err instanceof FatalError)) throw err;
    info.code = err.code;
    info.problem = err.message;
  }

  // Whose the outbox must be: the socket's owner (as doctor has it), else the units' User=.
  const units = janitorUnitConfig(env, notes);
  const unitUser = units?.user !== undefined ? userByNameOrUid(units.user) : undefined;
  const found = socketOwner(gate.path) ?? (unitUser ? { uid: unitUser.uid, user: escapeText(unitUser.name) } : undefined);
  const owner: DirOwner | undefined = found && { uid: found.uid, name: `the gate's user ${found.user}` };
  info.user = found?.user ?? null;

  // Which outbox, and whose policy: the janitor's unit when it names the
  // outbox the gate answers with (or the gate does not answer); otherwise
  // the defaults serve runs with, the state beside the outbox.
  const unitOutbox = units && realPath(units.config.outbox);
  let config: Config | undefined;
  if (answered !== undefined) {
    info.outbox_from = "gate";
    if (units && unitOutbox !== undefined && escapeText(unitOutbox) === answered) config = units.config;
    else {
      if (units) notes.push(`${units.unit} names the outbox ${escapeText(units.config.outbox)}, not the gate's: its janitor does not sweep the gate's outbox; install the gate again`);
      // The answer is escaped: only a path that escaping left alone names itself. Its state is where the
      // gate says (a gate started by hand keeps it where its MEDIA_OUTBOX_STATE_DIR or config put it), else serve's default.
      const stateDir = answeredState !== undefined && escapeText(answeredState) === answeredState ? { stateDir: answeredState } : {};
      if (escapeText(answered) === answered) config = loadConfig({ outbox: answered, ...stateDir, env: { HOME: "/nonexistent" }, cwd: "/" });
      else notes.push(`the gate's outbox ${answered} holds characters printed escaped: its real path is not known here`);
    }
  } else if (units) {
    info.outbox_from = "unit";
    config = units.config;
  }
  if (!config) {
    info.unseen = answered === undefined ? `the gate's outbox: the gate does not answer and no ${JANITOR_SERVICE} names one` : "the gate's outbox: its path is not known";
    return report;
  }
  if (config === units?.config) info.policy_from = units.unit;

  if (!owner) {
    info.unseen = `the gate's outbox ${escapeText(config.outbox)}: whose it should be is not known (no socket, no ${JANITOR_SERVICE} with User=)`;
    return report;
  }

  const euid = process.geteuid?.() ?? -1;
  const all = euid === 0 || euid === owner.uid;
  let status: StatusReport;
  try {
    status = statusOf({ ...config, owner }, now, { state: all });
  } catch (err) {
    // One outside the gate's group: the outbox (0750) is not its to look at.
    if (!isErrno(err, "EACCES", "EPERM")) throw err;
    info.unseen = `the gate's outbox ${escapeText(config.outbox)} and its state: you (uid ${euid}) may not read them (only root, ${info.user} and the members of its group, the agent users, may read the outbox); see them with: ${SEE_ALL}`;
    return report;
  }
  report.outbox = status.outbox;
  info.seen = all ? "all" : "outbox";
  if (!all) info.unseen = `the gate's state (staging, ledger, quarantine) and what the next janitor run would delete: only root and ${info.user} may read them; see them with: ${SEE_ALL}`;
  // An outbox that is not there or cannot be trusted: local mode shows nothing more either.
  if (!status.outbox.exists || !status.outbox.safe) return report;
  report.files = status.files;
  report.janitor = all ? status.janitor : { ...status.janitor, next_run: null };
  if (all) {
    report.staging = status.staging;
    report.quarantine = status.quarantine;
    report.ledger = status.ledger;
  }
  return report;
}

/** status's exit code in gate mode: 0 when the gate answers and its outbox is safe (or not made yet), 2 when it is not a directory of its own, else 1. */
export function gateStatusExitCode(report: GateStatusReport): number {
  if (report.outbox && !report.outbox.dedicated) return 2;
  if (!report.gate.answers || !report.outbox || !report.outbox.safe) return 1;
  return 0;
}
