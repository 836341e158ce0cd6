// Check 7: publication. link(2) from the staging file gives the complete file
// its final name in one step and fails rather than overwrite, so no reader
// sees a partial file and no published file is ever replaced.
import fs from "node:fs";
import path from "node:path";
import { errnoCode } from "../core/errors.js";
import { sha256OfFd } from "../core/hash.js";
import { withRegularFile } from "../core/regular-file.js";
import { type LedgerRecord, appendLedger } from "../state/ledger.js";
import { outputName } from "./name.js";
import type { Staged } from "./stage.js";

/** How many `-<hash>-N` names to try after the hash name is taken by other bytes. */
const MAX_COLLISION_SUFFIX = 100;

export interface Published {
  name: string;
  path: string;
  reused: boolean;
}

function* candidateNames(input: string, sha256: string): Generator<string> {
  yield outputName(input);
  const short = sha256.slice(0, 8);
  yield outputName(input, short);
  for (let i = 2; i <= MAX_COLLISION_SUFFIX; i++) yield outputName(input, `${short}-${i}`);
}

/**
 * When `file` already holds exactly these bytes, refreshes its mtime (the
 * janitor counts retention from it), gives it the mode a publication gets
 * now (one published before the outbox's mode changed), and returns true.
 * A file whose mode cannot be set is not reused.
 */
function reuseIfSame(file: string, staged: Staged, now: Date, mode: number): boolean {
  const reused = withRegularFile(file, (fd, st) => {
    if (st.size !== staged.bytes || sha256OfFd(fd) !== staged.sha256) return false;
    // Through the descriptor that was hashed: the name may have been replaced since.
    if ((st.mode & 0o7777) !== mode) {
      try {
        fs.fchmodSync(fd, mode);
      } catch (err) {
        if (errnoCode(err) === "EPERM") return false;
        throw err;
      }
    }
    fs.futimesSync(fd, now, now);
    // Still the file under its name, after the refresh: the janitor takes an
    // expired file out of the outbox (rename) before it judges its age, so a
    // file taken before this look is not reused (published anew), and one
    // taken after it shows the janitor this refresh and is put back.
    const current = fs.lstatSync(file, { throwIfNoEntry: false });
    return current !== undefined && current.ino === st.ino && current.dev === st.dev;
  });
  return reused ?? false;
}

function exists(file: string): boolean {
  return fs.lstatSync(file, { throwIfNoEntry: false }) !== undefined;
}

export interface PublishContext {
  outbox: string;
  ledgerDir: string;
  /** The published file's mode (the staging file is 0600); see publishModeOf. */
  mode: number;
  /** The ledger record's fields that do not depend on the chosen name. */
  record: Omit<LedgerRecord, "name" | "reused" | "time">;
}

/**
 * Publishes a staged file under the first free name for `input`, or reuses a
 * published file with the same bytes. The ledger record is appended before
 * the link that makes the file visible (the watch guard relies on it).
 */
export function publish(staged: Staged, input: string, ctx: PublishContext): Published {
  const now = new Date();
  // The copy's mtime is its publication time.
  fs.futimesSync(staged.fd, now, now);
  if (ctx.mode !== 0o600) fs.fchmodSync(staged.fd, ctx.mode);
  for (const name of candidateNames(input, staged.sha256)) {
    const target = path.join(ctx.outbox, name);
    const record = (reused: boolean): LedgerRecord => ({ time: now.toISOString(), ...ctx.record, name, reused });
    // A concurrent prepare may take the name between the check and the link:
    // then the link fails and the same name is judged again.
    for (let attempt = 0; attempt < 2; attempt++) {
      if (exists(target)) {
        if (!reuseIfSame(target, staged, now, ctx.mode)) break;
        appendLedger(ctx.ledgerDir, record(true));
        return { name, path: target, reused: true };
      }
      appendLedger(ctx.ledgerDir, record(false));
      try {
        fs.linkSync(staged.path, target);
        return { name, path: target, reused: false };
      } catch (err) {
        if (errnoCode(err) !== "EEXIST") throw err;
      }
    }
  }
  throw new Error(`no free name for this file after ${MAX_COLLISION_SUFFIX} tries`);
}
