// The long-running watcher: the outbox guard (always on) and the drop
// folders, with one lifecycle. start() returns once every watch is armed and
// the first scans are done; stop() finishes the files already begun.
import fs from "node:fs";
import path from "node:path";
import { type Config, configFilePath, dropFolderRefusal, withPolicyOf } from "../config/config.js";
import { isErrno, usageError } from "../core/errors.js";
import { escapeText, quoteText } from "../core/escape.js";
import { type Logger, silentLogger } from "../log/logger.js";
import { assertDedicated } from "../safety/dedicated.js";
import { resolveExisting } from "../safety/denylist.js";
import { isWithin } from "../safety/gateway.js";
import { folderPathProblem } from "../safety/path-text.js";
import { type Policy, narrowsPolicy, policyOf, widenPolicy } from "../prepare/judge.js";
import { type Layout, openLayout } from "../state/layout.js";
import { ConfigFollower, type WatchConfigs } from "./config-follow.js";
import { DropFolder } from "./drop.js";
import { WatchWorkers } from "./watch-workers.js";
import { type GuardAnswer, WatchLock } from "./lock.js";
import { type EventSink, type WatchEvent, errorText } from "./events.js";
import { DEFAULT_RESCAN_MS, OutboxGuard } from "./guard.js";
import { WorkQueue } from "./work-queue.js";

/** Files prepared at the same time across all drop folders. */
export const DEFAULT_MAX_IN_FLIGHT = 4;

export interface WatchOptions {
  /** Resolved configuration: outbox, quarantine, `watch.drop`, `watch.settleMs`, `watch.keep`, policy. */
  config: Config;
  /**
   * The configuration without the watch's own policy flags (`--allow`,
   * `--max-size`, `--platform`): what a plain prepare publishes by. The guard
   * keeps what either publishes (guardPolicy). Default: `config`.
   */
  configured?: Config;
  /**
   * Reads the configuration again, as `config` and `configured` were (the
   * CLI: the file, then its flags): given, the watch follows the config file
   * and judges by what it says now (config-follow.ts). Only the policy (the
   * allow-list, the caps) is taken from it while the watch runs.
   */
  reload?: () => WatchConfigs;
  logger?: Logger;
  /** Called for each outcome (the CLI prints them as JSON lines). */
  onEvent?: EventSink;
  /** Longest time between two full scans of the outbox and of each drop folder (at most 5 s). */
  rescanMs?: number;
  maxInFlight?: number;
  /**
   * The worker script drop-folder files are prepared on (default: the bundled
   * one; without a build, they are prepared on this thread). A test seam.
   */
  dropWorker?: string;
}

/**
 * Makes a drop folder if missing and returns its real path. Anything but a
 * directory the watch's user may list, write and enter is a usage error: the
 * watch answers each drop there (a receipt, the original removed) and keeps
 * its lock there.
 */
function openDropFolder(dir: string): string {
  if (!path.isAbsolute(dir)) throw usageError(`drop folder ${escapeText(dir)} must be an absolute path`);
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (err) {
    if (!isErrno(err, "EEXIST")) {
      const link = fs.lstatSync(dir, { throwIfNoEntry: false })?.isSymbolicLink() ? fs.readlinkSync(dir) : undefined;
      if (link !== undefined) throw usageError(`drop folder ${escapeText(dir)} is a symbolic link to ${escapeText(link)}, which does not exist; make that directory, or give the path of a directory`);
      throw usageError(`cannot create drop folder ${escapeText(dir)}: ${escapeText((err as Error).message)}`);
    }
  }
  const st = fs.statSync(dir);
  if (!st.isDirectory()) throw usageError(`drop folder ${escapeText(dir)} is not a directory`);
  try {
    fs.accessSync(dir, fs.constants.R_OK | fs.constants.W_OK | fs.constants.X_OK);
  } catch (err) {
    if (!isErrno(err, "EACCES", "EPERM", "EROFS")) throw err;
    const who = typeof process.geteuid === "function" ? ` (uid ${process.geteuid()})` : "";
    throw usageError(
      `drop folder ${escapeText(dir)} is not one the watch's user${who} may list, write and enter (${err.code}): the watch writes each receipt and removes each drop there; give that user access, or choose another folder`,
    );
  }
  const real = fs.realpathSync.native(dir);
  // The path as given was checked with the configuration; a link in it may lead to a folder whose name no message can show as it is.
  const problem = folderPathProblem(real);
  if (problem !== undefined) throw usageError(`drop folder ${escapeText(dir)} is ${quoteText(real)} (shown escaped), which has ${problem} in its path: rename that folder (mv), then give its new path`);
  return real;
}

/** A drop folder's path as given: loadConfig refuses one no message could show as it is; a library caller's config is checked here, before anything is made. */
function checkDropName(dir: string): void {
  const refusal = dropFolderRefusal(dir);
  if (refusal !== undefined) throw usageError(refusal);
}

const overlap = (a: string, b: string) => isWithin(a, b) || isWithin(b, a);

/**
 * Where things may live: the quarantine outside the outbox and every drop
 * folder, drop folders apart from the outbox, the state and each other (the
 * sandbox can write to a drop folder).
 */
function checkPlacement(layout: Pick<Layout, "outbox" | "quarantineDir" | "stateDir">, drops: string[]): void {
  if (overlap(layout.outbox, layout.quarantineDir)) {
    throw usageError(`the quarantine ${escapeText(layout.quarantineDir)} and the outbox must not contain each other: everything in the outbox is deliverable`);
  }
  drops.forEach((drop, i) => {
    const shown = escapeText(drop);
    if (overlap(drop, layout.outbox)) throw usageError(`drop folder ${shown} and the outbox must not contain each other: everything in the outbox is deliverable`);
    if (overlap(drop, layout.quarantineDir)) throw usageError(`drop folder ${shown} and the quarantine must not contain each other`);
    if (overlap(drop, layout.stateDir)) throw usageError(`drop folder ${shown} and the state directory ${escapeText(layout.stateDir)} must not contain each other`);
    const other = drops.findIndex((d, j) => j !== i && overlap(d, drop));
    if (other >= 0) throw usageError(`drop folders ${shown} and ${escapeText(drops[other]!)} overlap; give each folder once`);
  });
}

/** The quarantine holds what nobody checked (a hard link to a secret, say): only its owner may read it. */
function checkQuarantinePrivate(dir: string): void {
  const mode = fs.statSync(dir).mode & 0o777;
  if (mode & 0o077) {
    throw usageError(`the quarantine ${escapeText(dir)} is readable by others (mode ${mode.toString(8).padStart(4, "0")}); run: chmod 700 ${escapeText(dir)}`);
  }
}

/**
 * What the guard judges by: everything a plain prepare publishes (the
 * configuration's policy) and everything this watch's drop folders publish
 * (its own flags). A watch started with a narrower --allow, --max-size or
 * --platform narrows its drops only: judged by its flags alone, the guard
 * would quarantine a file a plain prepare had just published and printed.
 */
function guardPolicy({ config, configured }: WatchConfigs): Pick<Policy, "allow" | "capFor"> {
  return widenPolicy(policyOf(config), policyOf(configured));
}

/** The guard's policy as the outbox's lock tells it: the allow-list and each extension's cap. */
function guardAnswer(policy: Pick<Policy, "allow" | "capFor">): GuardAnswer {
  return { allow: [...policy.allow], caps: Object.fromEntries(policy.allow.map((ext) => [ext, policy.capFor(ext)])) };
}

/** Whether two answers tell the same allow-list (in the same order) and caps: only a change is told and logged. */
function sameAnswer(a: GuardAnswer, b: GuardAnswer): boolean {
  return a.allow.length === b.allow.length && a.allow.every((ext, i) => b.allow[i] === ext && a.caps[ext] === b.caps[ext]);
}

/** Each extension's cap, for a log line: "png=50000000". */
function capsText(answer: GuardAnswer): string[] {
  return answer.allow.map((ext) => `${escapeText(ext)}=${answer.caps[ext]}`);
}

/** The settings a running watch cannot take from a changed configuration: where things are, how drops are taken, where it logs. */
function needsRestart(now: Config, next: Config): string[] {
  const differ = (a: unknown, b: unknown) => JSON.stringify(a) !== JSON.stringify(b);
  const settings: [string, unknown, unknown][] = [
    ["outbox", now.outbox, next.outbox],
    ["stateDir", now.stateDir, next.stateDir],
    ["watch.quarantine", now.quarantineDir, next.quarantineDir],
    ["watch.drop", now.watch.drop, next.watch.drop],
    ["watch.settle", now.watch.settleMs, next.watch.settleMs],
    ["watch.keep", now.watch.keep, next.watch.keep],
    ["logFile", now.logFile, next.logFile],
    ["logLevel", now.logLevel, next.logLevel],
  ];
  return settings.filter(([, a, b]) => differ(a, b)).map(([name]) => name);
}

export class Watch {
  readonly layout: Layout;
  readonly drops: string[];
  private readonly guard: OutboxGuard;
  private readonly folders: DropFolder[];
  private readonly queue: WorkQueue;
  private readonly workers: WatchWorkers;
  private readonly locks: WatchLock[] = [];
  /** The lock that tells the guard's policy (lock.ts watchHolder). */
  private outboxLock: WatchLock | undefined;
  /** The policy the guard judges by (guardPolicy), as the outbox's lock tells it. */
  private guardAnswer: GuardAnswer;
  /** What the drops are prepared by, and what a plain prepare publishes by: the last good configuration read. */
  private configs: WatchConfigs;
  private readonly follower: ConfigFollower | undefined;
  private readonly logger: Logger;
  private readonly emit: EventSink;
  private stopping: Promise<void> | undefined;

  /** Verifies the outbox (exit-2 `outbox_unsafe`), the quarantine and the drop folders; changes nothing else yet. */
  constructor(options: WatchOptions) {
    const { config } = options;
    const rescanMs = Math.min(options.rescanMs ?? DEFAULT_RESCAN_MS, 5000);
    this.logger = options.logger ?? silentLogger;
    this.configs = { config, configured: options.configured ?? config };
    const policy = guardPolicy(this.configs);
    this.guardAnswer = guardAnswer(policy);
    this.emit = (event: WatchEvent) => options.onEvent?.(event);
    config.watch.drop.forEach(checkDropName);
    assertDedicated(config);
    // Placement is checked before anything missing is made, so a wrong
    // quarantine or drop folder is never created inside the outbox.
    checkPlacement(
      { outbox: resolveExisting(config.outbox), quarantineDir: resolveExisting(config.quarantineDir), stateDir: resolveExisting(config.stateDir) },
      config.watch.drop.map(resolveExisting),
    );
    this.layout = openLayout(config)!;
    this.drops = config.watch.drop.map(openDropFolder);
    checkPlacement(this.layout, this.drops);
    checkQuarantinePrivate(this.layout.quarantineDir);
    const maxInFlight = options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT;
    this.queue = new WorkQueue(maxInFlight, (err) =>
      this.logger.error({ event: "drop_error", error: escapeText(String((err as Error)?.stack ?? err)) }, "a dropped file could not be processed"),
    );
    this.workers = new WatchWorkers({ maxDrops: maxInFlight, hermesHome: config.hermesHome, userHome: config.home, dropWorker: options.dropWorker });
    this.guard = new OutboxGuard({
      outbox: this.layout.outbox,
      quarantineDir: this.layout.quarantineDir,
      ledgerDir: this.layout.ledgerDir,
      stagingDir: this.layout.stagingDir,
      allow: policy.allow,
      capFor: policy.capFor,
      refreshPolicy: () => this.follower?.refresh() ?? false,
      reopen: () => void openLayout(config),
      logger: this.logger,
      onEvent: this.emit,
      rescanMs,
      hermesHome: config.hermesHome,
      userHome: config.home,
      judgeLargeFile: this.workers.judgeFile,
    });
    this.folders = this.drops.map(
      (dir) =>
        new DropFolder({
          dir,
          config,
          settleMs: config.watch.settleMs,
          keep: config.watch.keep,
          queue: this.queue,
          logger: this.logger,
          onEvent: this.emit,
          rescanMs,
          prepareDrop: this.workers.prepareDrop,
        }),
    );
    this.follower = options.reload
      ? new ConfigFollower({ file: configFilePath(config), load: options.reload, apply: (next, settled) => this.applyConfig(next, settled), logger: this.logger, pollMs: rescanMs })
      : undefined;
  }

  /**
   * Takes the policy of a configuration read afresh: the guard judges by it,
   * the outbox's lock tells it, the drops are prepared by it. What only a
   * restart can change (the outbox, its folders, the drop folders) is kept,
   * and said. True when the guard's policy changed.
   */
  private applyConfig(next: WatchConfigs, settled: boolean): boolean {
    const configs = { config: withPolicyOf(this.configs.config, next.config), configured: withPolicyOf(this.configs.configured, next.configured) };
    const policy = guardPolicy(configs);
    // Narrowed on a read of a file maybe still being written: the settled read decides.
    if (!settled && narrowsPolicy(guardPolicy(this.configs), policy)) return false;
    const restart = needsRestart(this.configs.config, next.config);
    if (restart.length > 0) {
      this.logger.warn({ event: "config_needs_restart", settings: restart }, "the configuration file changed settings a running watch keeps; restart the watch to apply them");
    }
    this.configs = configs;
    for (const folder of this.folders) folder.setPolicy(configs.config);
    const answer = guardAnswer(policy);
    if (sameAnswer(answer, this.guardAnswer)) return false;
    this.guardAnswer = answer;
    this.guard.setPolicy(policy);
    this.tellGuard(answer);
    this.logger.info({ event: "policy_changed", allow: answer.allow.map(escapeText), caps: capsText(answer) }, "the configuration file changed: the guard judges by its policy now");
    return true;
  }

  /** Arms every watch, then scans; resolves when ready (the `ready` event has been sent). */
  async start(): Promise<void> {
    // One watch per outbox and per drop folder: a second one stops here (exit 2).
    try {
      // The outbox's lock tells prepare and the gate the policy the guard judges by (lock.ts watchHolder).
      await this.lock(this.layout.stateDir, `the outbox ${escapeText(this.layout.outbox)}`, this.guardAnswer);
      for (const drop of this.drops) await this.lock(drop, `the drop folder ${escapeText(drop)}`);
    } catch (err) {
      // The locks already taken are given back: nothing of this watch stays.
      await this.releaseLocks();
      throw err;
    }
    if (this.stopping) return;
    // Before the first scan: what changed while the watch started is judged by.
    this.follower?.start();
    await this.guard.start();
    for (const folder of this.folders) await folder.start();
    // Stopped during start-up: `stopped` has been sent and must stay the last event.
    if (this.stopping) return;
    this.logger.info({ event: "ready", outbox: escapeText(this.layout.outbox), quarantine: escapeText(this.layout.quarantineDir), drop: this.drops.map(escapeText) }, "ready");
    this.emit({ event: "ready" });
  }

  /** The outbox's lock tells prepare and the gate `answer` from now on; a lock that cannot be touched is asked again by the gate within GUARD_ANSWER_MS anyway. */
  private tellGuard(answer: GuardAnswer): void {
    try {
      this.outboxLock?.tellGuard(answer);
    } catch (err) {
      this.logger.error({ event: "lock_error", error: errorText(err) }, "the outbox's lock could not be marked changed; a gate asks it again within a second");
    }
  }

  private async lock(folder: string, what: string, guard?: GuardAnswer): Promise<void> {
    if (this.stopping) return;
    const lock = await WatchLock.acquire(folder, what, {}, guard);
    this.locks.push(lock);
    if (guard) this.outboxLock = lock;
    // Stopped while the lock was taken: stop() has already released the others.
    if (this.stopping) await this.releaseLocks();
  }

  private async releaseLocks(): Promise<void> {
    this.outboxLock = undefined;
    for (const lock of this.locks.splice(0)) await lock.release();
  }

  /** Stops watching, lets the files already begun get their receipts, leaves the rest untouched. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      const inFlight = this.queue.inFlight;
      // No new file begins from here on; those already begun run to their receipt.
      const drained = this.queue.close();
      this.follower?.stop();
      await Promise.all([this.guard.stop(), ...this.folders.map((f) => f.stop())]);
      await drained;
      await this.workers.close();
      await this.releaseLocks();
      this.logger.info({ event: "stopped", finished_in_flight: inFlight }, "stopped");
      this.emit({ event: "stopped" });
    })();
    return this.stopping;
  }
}

/** Builds a Watch and starts it. */
export async function startWatch(options: WatchOptions): Promise<Watch> {
  const watch = new Watch(options);
  try {
    await watch.start();
  } catch (err) {
    await watch.stop();
    throw err;
  }
  return watch;
}
