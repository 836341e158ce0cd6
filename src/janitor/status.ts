// What an operator wants at a glance: the outbox and its safety, what is in
// it, what the next janitor run would remove, and the state beside it.
// Read-only: it creates nothing and deletes nothing.
import fs from "node:fs";
import { type Config, type ConfigOverrides, loadConfig } from "../config/config.js";
import { FatalError, isErrno } from "../core/errors.js";
import { escapeText } from "../core/escape.js";
import { DAY_MS } from "../core/units.js";
import { extensionOf } from "../prepare/name.js";
import { NotDedicatedError } from "../safety/dedicated.js";
import { entryPath, isRawName, nameFromBytes, showName, textOfName } from "../safety/entry-names.js";
import { DAY_FILE } from "../state/ledger.js";
import { JOURNAL_NAME, type Layout, openLayout } from "../state/layout.js";
import { JANITOR_AREAS, type JanitorArea, NOT_MADE, runJanitor } from "./sweep.js";

export interface FileInfo {
  /** Escaped name inside the outbox. */
  name: string;
  bytes: number;
  mtime: string;
  /** When the retention removes it; null when the janitor keeps it (no ledger record names it with its size: changed since prepare published it, or not published by it). */
  expires: string | null;
}

export interface DirSummary {
  /** Escaped path; null when it does not exist. */
  path: string | null;
  exists: boolean;
  /** Regular files directly inside. */
  files: number;
  bytes: number;
  /** Any other entries (links, directories…), never counted in bytes. */
  other_entries: number;
  /** Entries (of any kind) whose name is not valid UTF-8: prepare never publishes one; the guard quarantines them. */
  not_utf8_names: number;
}

export interface StatusReport {
  outbox: {
    path: string;
    exists: boolean;
    /** False when the outbox or its state cannot be trusted (see problem). */
    safe: boolean;
    problem: string | null;
    code: string | null;
    /** False when the outbox, or its state directory, is not a directory of its own (/, a home, the Hermes home…): every command refuses it. */
    dedicated: boolean;
  };
  files: DirSummary & {
    /**
     * Regular files no ledger record names with their size, names that are
     * not UTF-8 included: written to since prepare published them, or not
     * published by it (or published while status read the outbox); the
     * janitor keeps them, the watch guard quarantines them. Null when the
     * ledger was not read (an agent's view of the gate's outbox).
     */
    unpublished: number | null;
    oldest: FileInfo | null;
    newest: FileInfo | null;
    by_type: Record<string, { files: number; bytes: number }>;
  };
  janitor: {
    retention_ms: number;
    max_bytes: number | null;
    min_age_ms: number;
    /** What a janitor run now would delete (a dry run), per area. */
    next_run: Record<JanitorArea, { files: number; bytes: number }> & { quota_met: boolean | null };
    /** The earliest time a file still in the outbox expires. */
    next_expiry: string | null;
    /** Outbox files that expire within the next 24 hours. */
    expiring_24h: { files: number; bytes: number };
  };
  staging: DirSummary & { stale: number };
  quarantine: DirSummary & { expired: number };
  /**
   * The oldest and newest day of the ledger's own day files: those the
   * janitor's dry run judges media-outbox's (a file under a day file's name
   * holding no record of the ledger's, or unreadable, is not counted); null
   * when there is none, or when the dry run could not be made.
   */
  ledger: DirSummary & { oldest_day: string | null; newest_day: string | null };
}

export interface StatusOptions extends ConfigOverrides {
  resolvedConfig?: Config;
  now?: Date;
}

function emptyDir(path: string | null): DirSummary {
  return { path: path === null ? null : escapeText(path), exists: false, files: 0, bytes: 0, other_entries: 0, not_utf8_names: 0 };
}

/**
 * Calls `each` with the lstat of every entry directly in `dir` but `state` (a
 * file of media-outbox's own bookkeeping, not an entry); false when `dir` is missing.
 */
function scan(dir: string, each: (name: string, st: fs.Stats) => void, state?: string): boolean {
  let handle: fs.Dir;
  try {
    // Names as bytes: one that is not UTF-8 is counted, not lost to Node's decoding.
    handle = fs.opendirSync(dir, { bufferSize: 1024, encoding: "buffer" as BufferEncoding });
  } catch (err) {
    if (isErrno(err, "ENOENT")) return false;
    throw err;
  }
  try {
    for (let d = handle.readSync(); d !== null; d = handle.readSync()) {
      const name = nameFromBytes(d.name as unknown as Buffer);
      if (name === state) continue;
      const st = fs.lstatSync(entryPath(dir, name), { throwIfNoEntry: false });
      if (st) each(name, st);
    }
  } finally {
    handle.closeSync();
  }
  return true;
}

function summarize(dir: string, extra: (name: string, st: fs.Stats) => void = () => {}, state?: string): DirSummary {
  const summary = emptyDir(dir);
  summary.exists = scan(dir, (name, st) => {
    if (isRawName(name)) summary.not_utf8_names++;
    if (st.isFile()) {
      summary.files++;
      summary.bytes += st.size;
    } else summary.other_entries++;
    extra(name, st);
  }, state);
  return summary;
}

/** A regular file of the outbox, as status saw it. */
interface OutboxFile {
  /** Escaped, as the janitor's report names it. */
  name: string;
  bytes: number;
  mtimeMs: number;
}

function outboxFiles(layout: Layout): { summary: DirSummary; list: OutboxFile[]; byType: StatusReport["files"]["by_type"] } {
  const list: OutboxFile[] = [];
  const byType: Record<string, { files: number; bytes: number }> = {};
  const summary = summarize(layout.outbox, (name, st) => {
    if (!st.isFile()) return;
    list.push({ name: showName(name), bytes: st.size, mtimeMs: st.mtimeMs });
    const type = escapeText(extensionOf(textOfName(name)) || "(none)");
    const t = (byType[type] ??= { files: 0, bytes: 0 });
    t.files++;
    t.bytes += st.size;
  });
  return { summary, list, byType };
}

/**
 * What the retention will remove, and when: every file but those the janitor
 * said it never deletes (`unpublished`, from its dry run; unknown without
 * the state, when every file is counted).
 */
function expiries(list: OutboxFile[], retention: number, nowMs: number, unpublished: Set<string> | undefined) {
  let oldest: OutboxFile | undefined;
  let newest: OutboxFile | undefined;
  let nextExpiry: number | null = null;
  const expiring = { files: 0, bytes: 0 };
  for (const f of list) {
    if (!oldest || f.mtimeMs < oldest.mtimeMs) oldest = f;
    if (!newest || f.mtimeMs > newest.mtimeMs) newest = f;
    if (unpublished?.has(f.name)) continue;
    const expires = f.mtimeMs + retention;
    if (expires > nowMs) {
      if (nextExpiry === null || expires < nextExpiry) nextExpiry = expires;
      if (expires <= nowMs + DAY_MS) {
        expiring.files++;
        expiring.bytes += f.bytes;
      }
    }
  }
  const info = (f: OutboxFile | undefined): FileInfo | null =>
    f ? { name: f.name, bytes: f.bytes, mtime: new Date(f.mtimeMs).toISOString(), expires: unpublished?.has(f.name) ? null : new Date(f.mtimeMs + retention).toISOString() } : null;
  return { oldest: info(oldest), newest: info(newest), nextExpiry, expiring };
}

/** The outbox's status. Never throws for an unsafe outbox: that is reported. */
export function outboxStatus(options: StatusOptions = {}): StatusReport {
  return statusOf(options.resolvedConfig ?? loadConfig(options), options.now ?? new Date());
}

/**
 * The status of the outbox `config` names (config.owner's, or the current
 * user's). Without `state` only the outbox is looked at (an agent looking at
 * the gate's outbox, whose state it may not read): the state's summaries stay
 * empty and the janitor is not asked; the caller says they were not seen.
 */
export function statusOf(config: Config, now: Date, { state: withState = true } = {}): StatusReport {
  const nowMs = now.getTime();
  const emptyNext: StatusReport["janitor"]["next_run"] = { ...(Object.fromEntries(JANITOR_AREAS.map((a) => [a, { files: 0, bytes: 0 }])) as Record<JanitorArea, { files: number; bytes: number }>), quota_met: null };
  const report: StatusReport = {
    outbox: { path: escapeText(config.outbox), exists: false, safe: true, problem: null, code: null, dedicated: true },
    files: { ...emptyDir(config.outbox), unpublished: null, oldest: null, newest: null, by_type: {} },
    janitor: {
      retention_ms: config.janitor.retentionMs,
      max_bytes: config.janitor.maxBytes ?? null,
      min_age_ms: config.janitor.minAgeMs,
      next_run: emptyNext,
      next_expiry: null,
      expiring_24h: { files: 0, bytes: 0 },
    },
    staging: { ...emptyDir(config.stagingDir), stale: 0 },
    quarantine: { ...emptyDir(config.quarantineDir), expired: 0 },
    ledger: { ...emptyDir(config.ledgerDir), oldest_day: null, newest_day: null },
  };
  let layout: Layout | undefined;
  try {
    layout = openLayout(config, { create: false, state: withState });
  } catch (err) {
    if (!(err instanceof FatalError)) throw err;
    // Another user's outbox (the gate's, config.owner) behind a directory this
    // user may not enter: not unsafe, just not this user's to see; the caller
    // (gate-status) says so and how to see it.
    if (config.owner && isErrno(err.cause, "EACCES", "EPERM")) throw err.cause;
    report.outbox.exists = fs.existsSync(config.outbox);
    report.outbox.safe = false;
    report.outbox.problem = err.message;
    report.outbox.code = err.code;
    report.outbox.dedicated = !(err instanceof NotDedicatedError);
    return report;
  }
  if (!layout) return report;
  report.outbox.path = escapeText(layout.outbox);
  report.outbox.exists = true;

  const { summary, list, byType } = outboxFiles(layout);
  const predict = (unpublished: Set<string> | undefined) => {
    const { oldest, newest, nextExpiry, expiring } = expiries(list, config.janitor.retentionMs, nowMs, unpublished);
    report.files = { ...summary, unpublished: unpublished?.size ?? null, oldest, newest, by_type: byType };
    report.janitor.next_expiry = nextExpiry === null ? null : new Date(nextExpiry).toISOString();
    report.janitor.expiring_24h = expiring;
  };
  predict(undefined);
  if (!withState) return report;

  // stale and expired are filled from the janitor's dry run below: rules of
  // their own here would drift from what a run really deletes.
  report.staging = { ...summarize(layout.stagingDir), stale: 0 };
  report.quarantine = { ...summarize(layout.quarantineDir, undefined, JOURNAL_NAME), expired: 0 };
  const days: string[] = [];
  report.ledger = {
    ...summarize(layout.ledgerDir, (name, st) => void (st.isFile() && DAY_FILE.test(name) && days.push(name.slice(0, 10)))),
    oldest_day: null,
    newest_day: null,
  };

  // Exactly what the janitor would do now: it is asked, in a dry run.
  try {
    const dry = runJanitor({ resolvedConfig: config, dryRun: true, now });
    for (const d of dry.deleted) {
      report.janitor.next_run[d.area].files++;
      report.janitor.next_run[d.area].bytes += d.bytes;
    }
    report.janitor.next_run.quota_met = dry.quota?.met ?? null;
    // A day file the janitor says media-outbox did not write (no_ledger_record), or could not read, is no day of the ledger's.
    const notOurs = new Set([...dry.skipped.filter((e) => e.area === "ledger" && NOT_MADE.has(e.code)), ...dry.errors.filter((e) => e.area === "ledger")].map((e) => e.name));
    const ours = days.filter((d) => !notOurs.has(`${d}.jsonl`)).sort();
    report.ledger.oldest_day = ours[0] ?? null;
    report.ledger.newest_day = ours.at(-1) ?? null;
    report.staging.stale = report.janitor.next_run.staging.files;
    report.quarantine.expired = report.janitor.next_run.quarantine.files;
    // What the janitor keeps in the outbox (no record names it with its size) never expires.
    predict(new Set(dry.skipped.filter((e) => e.area === "outbox" && (e.code === "not_in_ledger" || e.code === "not_utf8_name")).map((e) => e.name)));
  } catch (err) {
    if (!(err instanceof FatalError)) throw err;
    report.outbox.safe = false;
    report.outbox.problem = err.message;
    report.outbox.code = err.code;
  }
  return report;
}
