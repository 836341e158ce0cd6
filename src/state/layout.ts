// Where the outbox and its state live on disk, verified. Everything inside the
// outbox is deliverable, so staging, the ledger and the quarantine live beside
// it, on the same filesystem (publication is a link, quarantine a rename).
import fs from "node:fs";
import path from "node:path";
import type { Config } from "../config/config.js";
import { FatalError, isErrno } from "../core/errors.js";
import { escapeText } from "../core/escape.js";
import { assertDedicated, assertDedicatedOutbox } from "../safety/dedicated.js";
import { isWithin } from "../safety/gateway.js";
import { trustDir } from "../safety/private-dir.js";

/**
 * The journal of quarantine moves, kept inside the quarantine under a name no
 * entry takes: state, not an entry, so the janitor and status leave it out.
 */
export const JOURNAL_NAME = ".media-outbox-quarantine.jsonl";

export interface Layout {
  /** Real path of the verified outbox. */
  outbox: string;
  outboxDev: number;
  /**
   * The outbox lets its group read (the gate's layout, 0750: the agents'
   * group reads what is published); publication follows it (judge.ts).
   */
  groupReadable: boolean;
  stateDir: string;
  stagingDir: string;
  ledgerDir: string;
  quarantineDir: string;
}

function stateProblem(message: string): FatalError {
  return new FatalError("state_unsafe", message);
}

/**
 * The filesystem a directory made at `dir` would be on: its own when it
 * exists, else its nearest existing ancestor's. Undefined when that cannot be
 * looked at (trustDir then says why).
 */
function deviceFor(dir: string): number | undefined {
  for (let d = dir; ; d = path.dirname(d)) {
    try {
      return fs.statSync(d).dev;
    } catch (err) {
      if (!isErrno(err, "ENOENT")) return undefined;
    }
    if (d === path.dirname(d)) return undefined;
  }
}

/**
 * Refuses, before it is made (trustDir's beforeCreate), a state directory
 * that would lie on another filesystem than the outbox: made first and
 * refused after, it was left behind.
 */
function assertOnOutboxFs(dir: string, outboxDev: number, what: string): void {
  const dev = deviceFor(dir);
  if (dev !== undefined && dev !== outboxDev) {
    throw stateProblem(`${what} ${escapeText(dir)} is on another filesystem than the outbox; choose a directory on the outbox's filesystem, such as the default beside the outbox (publication and quarantine are a link or a rename, never a copy)`);
  }
}

/**
 * Verifies the outbox (exit-2 `outbox_unsafe` when it cannot be trusted) and
 * its state directories (config.owner's, or the current user's). With
 * `create` (the default) missing ones are made 0700 (a gate's outbox 0750:
 * `groupReadable`); without it, undefined is returned when the outbox does
 * not exist. Without `state` only the outbox is verified (an agent's status
 * of the gate's outbox: the state is not the agent's to read), and the state
 * paths are returned as configured.
 */
export function openLayout(config: Config, { create = true, groupReadable = false, state: withState = true } = {}): Layout | undefined {
  // Before anything is created: a home or / must never become an outbox, nor hold its state.
  if (withState) assertDedicated(config);
  else assertDedicatedOutbox(config);
  const safeAncestors = new Set<string>();
  const owner = config.owner;
  const outbox = trustDir(config.outbox, { create, groupReadable, code: "outbox_unsafe", what: "outbox", gatewayVisible: true, safeAncestors, owner });
  if (!outbox) return undefined;
  const readableByGroup = (outbox.mode & 0o040) !== 0;
  // Checked only where one is made (an existing one is judged below): a prepare pays nothing for it.
  const sameFs = (dir: string, what: string) => () => assertOnOutboxFs(dir, outbox.dev, what);
  const state = withState
    ? trustDir(config.stateDir, { create, code: "state_unsafe", what: "state directory", safeAncestors, owner, beforeCreate: sameFs(config.stateDir, "state directory") })
    : undefined;
  if (!state) {
    return { outbox: outbox.real, outboxDev: outbox.dev, groupReadable: readableByGroup, stateDir: config.stateDir, stagingDir: config.stagingDir, ledgerDir: config.ledgerDir, quarantineDir: config.quarantineDir };
  }
  if (isWithin(state.real, outbox.real)) throw new FatalError("outbox_unsafe", `outbox ${escapeText(outbox.real)} contains its state directory ${escapeText(state.real)}: everything in the outbox is deliverable`);
  if (isWithin(outbox.real, state.real)) {
    throw stateProblem(`state directory ${escapeText(state.real)} and outbox ${escapeText(outbox.real)} must not contain each other: everything in the outbox is deliverable`);
  }
  if (state.dev !== outbox.dev) {
    throw stateProblem(`state directory ${escapeText(state.real)} is on another filesystem than the outbox; put it beside the outbox (publication must be a link, never a copy)`);
  }
  const sub = (dir: string, what: string) => {
    const checked = trustDir(dir, { create, code: "state_unsafe", what, safeAncestors, owner, beforeCreate: sameFs(dir, what) });
    if (checked && checked.dev !== outbox.dev) throw stateProblem(`${what} ${escapeText(checked.real)} must be on the outbox's filesystem`);
    if (checked && isWithin(checked.real, outbox.real)) throw stateProblem(`${what} ${escapeText(checked.real)} must not be inside the outbox`);
    return checked?.real ?? dir;
  };
  return {
    outbox: outbox.real,
    outboxDev: outbox.dev,
    groupReadable: readableByGroup,
    stateDir: state.real,
    stagingDir: sub(config.stagingDir, "staging directory"),
    ledgerDir: sub(config.ledgerDir, "ledger directory"),
    quarantineDir: sub(config.quarantineDir, "quarantine"),
  };
}

/** Lists a directory, or nothing when it does not exist. */
export function listDir(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch (err) {
    if (isErrno(err, "ENOENT")) return [];
    throw err;
  }
}
