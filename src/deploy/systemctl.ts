// Talking to systemd. The binary is `systemctl` on the PATH unless
// MEDIA_OUTBOX_SYSTEMCTL names another (tests put a fake there).
import { spawnSync } from "node:child_process";
import fs from "node:fs";

export type Scope = "system" | "user";

export interface SystemctlResult {
  code: number;
  stdout: string;
  stderr: string;
}

export class Systemctl {
  readonly bin: string;
  constructor(
    readonly scope: Scope,
    env: NodeJS.ProcessEnv = process.env,
  ) {
    this.bin = env.MEDIA_OUTBOX_SYSTEMCTL || "systemctl";
  }

  /** The argument list for a command, as it would be typed. */
  args(...args: string[]): string[] {
    return [...scopeArgs(this.scope), ...args];
  }

  /** The command line, for printing (the plain name, never the override). */
  commandLine(...args: string[]): string {
    return shellLine(["systemctl", ...this.args(...args)]);
  }

  run(...args: string[]): SystemctlResult {
    const r = spawnSync(this.bin, this.args(...args), { encoding: "utf8", env: { ...process.env, SYSTEMD_PAGER: "", SYSTEMD_COLORS: "0" } });
    if (r.error) return { code: 127, stdout: "", stderr: r.error.message };
    return { code: r.status ?? 1, stdout: r.stdout, stderr: r.stderr };
  }

  /**
   * Whether a systemd manager for this scope is running, and if not, why (a
   * container whose PID 1 is something else, no user manager…).
   */
  state(): { running: boolean; why: string } {
    const r = this.run("is-system-running");
    const state = r.stdout.trim().split("\n")[0] ?? "";
    if (["running", "degraded", "starting", "initializing", "maintenance"].includes(state)) return { running: true, why: state };
    if (r.code === 127) return { running: false, why: `${this.bin} is not installed (${r.stderr.trim()})` };
    const pid1 = readPid1();
    const what = state === "offline" || state === "" ? `no ${this.scope === "user" ? "user " : ""}systemd manager is running` : `systemd reports "${state}"`;
    return { running: false, why: `${what}${pid1 && pid1 !== "systemd" ? ` (PID 1 is ${pid1}: a container?)` : ""}` };
  }

  /** `systemctl show UNIT -p …` as a map; a property listed several times (EnvironmentFiles) is joined with newlines. */
  show(unit: string, props: string[]): Map<string, string> {
    const r = this.run("show", unit, ...props.flatMap((p) => ["-p", p]));
    const map = new Map<string, string>();
    if (r.code !== 0) return map;
    for (const line of r.stdout.split("\n")) {
      const eq = line.indexOf("=");
      if (eq <= 0) continue;
      const key = line.slice(0, eq);
      const prev = map.get(key);
      map.set(key, prev === undefined ? line.slice(eq + 1) : `${prev}\n${line.slice(eq + 1)}`);
    }
    return map;
  }
}

function readPid1(): string | undefined {
  try {
    return fs.readFileSync("/proc/1/comm", "utf8").trim();
  } catch {
    return undefined;
  }
}

/** How a scope is named on a command line: systemctl, journalctl and media-outbox all take `--user`. */
export const scopeArgs = (scope: Scope): string[] => (scope === "user" ? ["--user"] : []);

/** A command printed to run by hand, each word as a POSIX shell needs it. */
export const shellLine = (words: string[]): string => words.map(shellWord).join(" ");

/** A word as a POSIX shell would need it, for commands printed to run by hand. */
export function shellWord(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`;
}
