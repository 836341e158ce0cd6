// A running watch follows its configuration file: prepare reads the file at
// every run, so a guard that kept the policy it started with would quarantine
// what prepare had just published under a widened one (and keep what a
// narrowed one no longer publishes). The file is read again when it changes:
// on a directory event (debounced, an editor writes in steps), at every
// rescan (a stat: events can be missed), and, synchronously, before the guard
// quarantines an entry for its extension or size. What a read widens is taken
// at once (prepare may have published by it already); what it narrows, only
// from a read of a file that stayed quiet (CONFIG_SETTLE_MS): one caught
// between a removal and its new copy must not move files away. A file that
// cannot be read or is refused leaves the last good configuration in force:
// never none.
import fs from "node:fs";
import path from "node:path";
import type { Config } from "../config/config.js";
import { escapeText } from "../core/escape.js";
import type { Logger } from "../log/logger.js";
import { errorText } from "./events.js";

/** How long the file must stay quiet after an event before it is read: an editor's write in several steps is read once. */
export const CONFIG_SETTLE_MS = 200;

/** What the watch runs by: the configuration with its flags, and without its policy flags (what a plain prepare publishes by). */
export interface WatchConfigs {
  config: Config;
  configured: Config;
}

export interface ConfigFollowerOptions {
  /** The file to follow (config.ts configFilePath). */
  file: string;
  /** Reads the configuration again, flags applied; throws when the file is refused. */
  load: () => WatchConfigs;
  /**
   * Takes a configuration read afresh; true when what the watch judges by
   * changed. `settled`: read once the file was quiet for CONFIG_SETTLE_MS;
   * otherwise (a stat saw a change) the watch may leave a narrowing for the
   * settled read (`false`), which then follows.
   */
  apply: (next: WatchConfigs, settled: boolean) => boolean;
  logger: Logger;
  /** How often the file is looked at without an event. */
  pollMs: number;
}

/** What the name leads to now, exactly enough to see any write or replacement; "missing" or an errno when there is nothing to read. */
function fileState(file: string): string {
  try {
    const st = fs.statSync(file, { bigint: true });
    return `${st.dev}-${st.ino}-${st.size}-${st.mtimeNs}-${st.ctimeNs}`;
  } catch (err) {
    return String((err as NodeJS.ErrnoException).code ?? "unreadable");
  }
}

export class ConfigFollower {
  /** The file's state when it was last read (or tried). */
  private seen: string | undefined;
  private watcher: fs.FSWatcher | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private settleTimer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly options: ConfigFollowerOptions) {}

  /** Starts following; the file is read once now, so that a change made while the watch started is not missed. */
  start(): void {
    const { file } = this.options;
    try {
      // The directory, not the file: an editor or a deploy replaces the file by a rename.
      this.watcher = fs.watch(path.dirname(file), { persistent: false }, (_type, name) => {
        if (name === null || name === path.basename(file)) this.schedule();
      });
      this.watcher.on("error", () => this.unwatch());
    } catch {
      // No such directory yet, or not ours to watch: the rescan's stat still sees the file come and change.
    }
    this.pollTimer = setInterval(() => this.refresh(), this.options.pollMs);
    this.pollTimer.unref();
    this.read(true);
  }

  stop(): void {
    this.stopped = true;
    if (this.pollTimer) clearInterval(this.pollTimer);
    if (this.settleTimer) clearTimeout(this.settleTimer);
    this.pollTimer = this.settleTimer = undefined;
    this.unwatch();
  }

  /**
   * Reads the file again now when it changed since it was last read: one
   * stat otherwise. True when what the watch judges by changed.
   */
  refresh(): boolean {
    if (this.stopped || fileState(this.options.file) === this.seen) return false;
    const applied = this.read(false);
    // Whatever was left for it, a settled read follows (a file caught mid-write, or removed and written anew, is read again once quiet).
    this.schedule();
    return applied;
  }

  private unwatch(): void {
    this.watcher?.close();
    this.watcher = undefined;
  }

  private schedule(): void {
    if (this.stopped) return;
    if (this.settleTimer) clearTimeout(this.settleTimer);
    // An event always means a read: two writes within the file times' granularity look the same to a stat.
    this.settleTimer = setTimeout(() => {
      this.settleTimer = undefined;
      if (!this.stopped) this.read(true);
    }, CONFIG_SETTLE_MS);
  }

  private read(settled: boolean): boolean {
    const { file, logger } = this.options;
    this.seen = fileState(file);
    let next: WatchConfigs;
    try {
      next = this.options.load();
    } catch (err) {
      logger.error(
        { event: "config_refused", file: escapeText(file), error: errorText(err) },
        "the configuration file changed but cannot be used; the watch keeps judging by the last good one",
      );
      return false;
    }
    try {
      return this.options.apply(next, settled);
    } catch (err) {
      // Never the end of the watch: what was in force before stays, and the next change is read again.
      logger.error({ event: "config_error", file: escapeText(file), error: errorText(err) }, "the changed configuration could not be taken; the watch goes on");
      return false;
    }
  }
}
