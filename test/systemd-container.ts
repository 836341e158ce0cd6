// A real systemd manager for tests, booted the one way that is safe on these
// machines (../shared/DESIGN.md, "Testing against a real systemd"): inside a
// private mount namespace, `/` bind-mounted (not recursively) onto an empty
// directory and booted by systemd-nspawn with --volatile=overlay, so every
// write lands on a throwaway tmpfs and the host's /tmp and kernel settings are
// never touched. The container runs from cgroups of its own, so whatever is
// left at the end is found and killed by PID.
//
// Where it cannot boot (not root, no systemd-nspawn, a boot that fails), boot()
// throws an Error saying why: the tests fail, they are never skipped.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { which } from "./deploy-helpers";

/** SIGRTMIN+4 with glibc's SIGRTMIN (34): systemd powers off on it. */
const SIGRTMIN_PLUS_4 = 38;
const CGROUP_ROOT = "/sys/fs/cgroup";
/** Hierarchies the container is placed in when the host is cgroup v1 (hybrid): pids tracks it, systemd and unified keep nspawn's payload/ apart from other containers'. */
const V1_HIERARCHIES = ["pids", "systemd", "unified"];
const PATH_ENV = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

export interface ExecOptions {
  /** Run as this user (setpriv, with the user's groups as the container's /etc/group has them). */
  user?: string;
  /** Extra environment (the base is PATH, HOME, LANG and systemd's pager/colour switches off). */
  env?: Record<string, string>;
  input?: string | Buffer;
  cwd?: string;
  /** A bound on the command, so a hung one fails the test instead of the whole run (not a timing assertion). */
  timeoutMs?: number;
}

export interface ExecResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function readProcs(cgroup: string): number[] {
  try {
    return fs
      .readFileSync(path.join(cgroup, "cgroup.procs"), "utf8")
      .split("\n")
      .filter((l) => l !== "")
      .map(Number);
  } catch {
    return [];
  }
}

/** Every process in a cgroup and its descendants. */
function procsBelow(cgroup: string): number[] {
  if (!fs.existsSync(cgroup)) return [];
  const out = readProcs(cgroup);
  for (const e of fs.readdirSync(cgroup, { withFileTypes: true })) if (e.isDirectory()) out.push(...procsBelow(path.join(cgroup, e.name)));
  return out;
}

/** Removes a cgroup and its children, deepest first (rmdir is the only way to remove one). */
function removeCgroup(cgroup: string): void {
  if (!fs.existsSync(cgroup)) return;
  for (const e of fs.readdirSync(cgroup, { withFileTypes: true })) if (e.isDirectory()) removeCgroup(path.join(cgroup, e.name));
  fs.rmdirSync(cgroup);
}

/** The PID namespace path of a process: [host pid, …, pid inside]. */
function nsPids(pid: number): number[] | undefined {
  try {
    const line = /^NSpid:\s*(.*)$/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
    return line?.trim().split(/\s+/).map(Number);
  } catch {
    return undefined;
  }
}

function comm(pid: number): string | undefined {
  try {
    return fs.readFileSync(`/proc/${pid}/comm`, "utf8").trim();
  } catch {
    return undefined;
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

export interface ContainerOptions {
  /**
   * Directories of the container given a fresh, empty host directory of their
   * own (bind-mounted): a real filesystem instead of the volatile overlay, on
   * which files report the st_dev of their directory, as on a server.
   */
  fresh?: string[];
  /**
   * Host directories bound read-only at their own paths: the code under test.
   * Seen through the overlay of `/` otherwise, except under /tmp, where
   * systemd-nspawn mounts a tmpfs of its own (a clone in /tmp vanished).
   */
  readOnly?: string[];
}

export class SystemdContainer {
  /** Host PID of the container's PID 1 (systemd). */
  pid = 0;
  /** A directory bound into the container at the same path: files for and from the tests. */
  work = "";
  private base = "";
  private rootDir = "";
  private logFile = "";
  private readonly machine = `mo-test-${crypto.randomBytes(4).toString("hex")}`;
  private cgroups: string[] = [];
  /** The cgroup below which every process of the container (and of each exec) is listed. */
  private tracking = "";
  /** Where each exec's process goes (below tracking). */
  private execCgroup = "";
  private nspawn: ChildProcess | undefined;
  private nspawnExited: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(private readonly options: ContainerOptions = {}) {}

  /** Why this machine cannot boot a container, or undefined when it can try. */
  static preflight(): string | undefined {
    if (process.getuid?.() !== 0) return "booting systemd in a container needs root (run the tests as root, as CI does)";
    const missing = ["systemd-nspawn", "unshare", "nsenter", "mount", "setpriv"].filter((c) => !which(c));
    if (missing.length > 0) return `${missing.join(", ")} not installed: apt-get install -y systemd-container util-linux (README, Quick start)`;
    if (!["/usr/lib/systemd/systemd", "/lib/systemd/systemd"].some((p) => fs.existsSync(p))) return "systemd is not installed: apt-get install -y systemd";
    if (!fs.existsSync(path.join(CGROUP_ROOT, "pids", "cgroup.procs")) && !fs.existsSync(path.join(CGROUP_ROOT, "cgroup.controllers"))) {
      return `no cgroup hierarchy found under ${CGROUP_ROOT} (neither v1 pids nor v2)`;
    }
    return undefined;
  }

  /** Boots the container and waits until its manager is running; throws with the reason (and the console's end) when it cannot. */
  async boot(): Promise<void> {
    const why = SystemdContainer.preflight();
    if (why) throw new Error(`cannot boot systemd for these tests: ${why}`);
    this.base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "mo-nspawn-")));
    // The container's unprivileged users read test files from the work directory.
    fs.chmodSync(this.base, 0o755);
    this.rootDir = path.join(this.base, "root");
    this.work = path.join(this.base, "work");
    this.logFile = path.join(this.base, "console.log");
    fs.mkdirSync(this.rootDir, { mode: 0o755 });
    fs.mkdirSync(this.work, { mode: 0o755 });
    fs.mkdirSync(path.join(this.base, "fresh"), { mode: 0o755 });
    for (const [i, target] of (this.options.fresh ?? []).entries()) {
      if (!path.isAbsolute(target) || target === "/" || /[\s:]/.test(target)) throw new Error(`fresh: ${target} must be an absolute directory other than /`);
      fs.mkdirSync(path.join(this.base, "fresh", String(i)), { mode: 0o755 });
    }
    for (const dir of this.options.readOnly ?? []) {
      if (!path.isAbsolute(dir) || dir === "/" || /[\s:]/.test(dir)) throw new Error(`readOnly: ${dir} must be an absolute directory other than /, without spaces or colons`);
    }
    this.makeCgroups();
    try {
      this.start();
      this.pid = await this.findInit();
      await this.waitRunning();
    } catch (err) {
      const msg = `cannot boot systemd for these tests: ${(err as Error).message}\n--- container console (last lines) ---\n${this.consoleTail()}`;
      await this.shutdown();
      throw new Error(msg);
    }
  }

  private makeCgroups(): void {
    const name = this.machine;
    if (fs.existsSync(path.join(CGROUP_ROOT, "pids", "cgroup.procs"))) {
      for (const h of V1_HIERARCHIES) {
        if (!fs.existsSync(path.join(CGROUP_ROOT, h, "cgroup.procs"))) continue;
        const dir = path.join(CGROUP_ROOT, h, name);
        fs.mkdirSync(dir);
        this.cgroups.push(dir);
      }
      this.tracking = path.join(CGROUP_ROOT, "pids", name);
      this.execCgroup = this.tracking;
    } else {
      const dir = path.join(CGROUP_ROOT, name);
      fs.mkdirSync(dir);
      this.cgroups.push(dir);
      this.tracking = dir;
      // cgroup v2 keeps processes out of inner nodes: the execs get a leaf of their own beside nspawn's.
      this.execCgroup = path.join(dir, "tests");
      fs.mkdirSync(this.execCgroup);
    }
  }

  private start(): void {
    const log = fs.openSync(this.logFile, "a");
    // The shell joins the container's cgroups before it becomes unshare, so
    // every process after it starts inside them.
    const script = [
      'for cg in $CGROUPS; do echo $$ > "$cg/cgroup.procs" || exit 1; done',
      'exec unshare --mount --propagation private -- sh -c \'mount --bind / "$1" && exec systemd-nspawn --directory="$1" --machine="$2" --boot --register=no --keep-unit --volatile=overlay --private-network --console=read-only --bind="$3" $4 -- --unit=basic.target\' sh "$ROOT" "$MACHINE" "$WORK" "$FRESH"',
    ].join("\n");
    // If this process dies without shutdown() (a killed test run), nspawn gets
    // SIGTERM, which powers the container off: execs keep the death signal.
    this.nspawn = spawn("setpriv", ["--pdeathsig", "SIGTERM", "--", "sh", "-c", script], {
      env: {
        PATH: PATH_ENV,
        CGROUPS: this.cgroups.join(" "),
        ROOT: this.rootDir,
        MACHINE: this.machine,
        WORK: this.work,
        // Unquoted in the script on purpose: one word per bind (paths without spaces, checked above).
        FRESH: [
          ...(this.options.fresh ?? []).map((target, i) => `--bind=${path.join(this.base, "fresh", String(i))}:${target}`),
          ...(this.options.readOnly ?? []).map((dir) => `--bind-ro=${dir}`),
        ].join(" "),
      },
      stdio: ["ignore", log, log],
    });
    fs.closeSync(log);
    this.nspawnExited = new Promise((resolve) => {
      this.nspawn!.once("exit", () => resolve());
      this.nspawn!.once("error", () => resolve());
    });
  }

  /** The container's PID 1: the process of the cgroup that is PID 1 in its own namespace. */
  private async findInit(): Promise<number> {
    const deadline = Date.now() + 60_000;
    let exited = false;
    void this.nspawnExited.then(() => (exited = true));
    while (Date.now() < deadline) {
      for (const pid of procsBelow(this.tracking)) {
        const ns = nsPids(pid);
        // PID 1 of the new namespace is nspawn's own child until it execs systemd.
        if (ns && ns.length >= 2 && ns[ns.length - 1] === 1 && comm(pid) === "systemd") return pid;
      }
      if (exited) throw new Error(`systemd-nspawn exited (${this.nspawn?.exitCode ?? this.nspawn?.signalCode}) before the container's PID 1 appeared`);
      await sleep(50);
    }
    throw new Error("the container's PID 1 did not appear within 60 s");
  }

  /**
   * Waits for the manager: `is-system-running --wait` waits through the boot,
   * but says "offline" (or cannot connect at all) while the manager's
   * private socket is not up yet.
   */
  private async waitRunning(): Promise<void> {
    const deadline = Date.now() + 120_000;
    for (;;) {
      const r = this.exec(["systemctl", "is-system-running", "--wait"], { timeoutMs: 120_000 });
      const state = r.stdout.trim();
      if (state === "running" || state === "degraded") return;
      if ((state !== "offline" && state !== "") || Date.now() > deadline || !alive(this.pid)) {
        throw new Error(`the container's systemd did not come up (is-system-running: ${state || r.stderr.trim()})`);
      }
      await sleep(100);
    }
  }

  /** Runs a command inside the container (as root, or as `user`), from a process in the container's tracking cgroup. */
  exec(argv: string[], opts: ExecOptions = {}): ExecResult {
    if (!this.pid) throw new Error("the container is not running");
    const home = opts.user && opts.user !== "root" ? `/home/${opts.user}` : "/root";
    const env = { PATH: PATH_ENV, HOME: home, LANG: "C.UTF-8", SYSTEMD_PAGER: "", SYSTEMD_COLORS: "0", ...(opts.user ? { USER: opts.user, LOGNAME: opts.user } : {}), ...opts.env };
    const asUser = opts.user ? ["setpriv", `--reuid=${opts.user}`, `--regid=${opts.user}`, "--init-groups", "--"] : [];
    // The working directory is set inside: nsenter's --wd=DIR opens DIR on the host's side of --root.
    const inner = [...asUser, "env", "-i", ...Object.entries(env).map(([k, v]) => `${k}=${v}`), "sh", "-c", 'cd "$0" && exec "$@"', opts.cwd ?? "/", ...argv];
    const nsenter = ["nsenter", `--target=${this.pid}`, "--mount", "--uts", "--ipc", "--net", "--pid", "--cgroup", "--root", "--wd", "--", ...inner];
    // A session of its own (setsid): a `kill 0` inside reaches nothing of the test run.
    const r = spawnSync("sh", ["-c", 'echo $$ > "$TRACK/cgroup.procs" && exec setsid --wait "$@"', "sh", ...nsenter], {
      env: { PATH: PATH_ENV, TRACK: this.execCgroup },
      input: opts.input,
      encoding: "utf8",
      timeout: opts.timeoutMs ?? 60_000,
      killSignal: "SIGKILL",
      maxBuffer: 64 * 1024 * 1024,
    });
    if (r.error) return { code: null, stdout: r.stdout ?? "", stderr: `${r.stderr ?? ""}${r.error.message}` };
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  }

  /** A shell script inside the container. */
  sh(script: string, opts: ExecOptions = {}): ExecResult {
    return this.exec(["sh", "-c", script], opts);
  }

  /** Like exec, but throws (with the output) unless the command exits 0. */
  run(argv: string[], opts: ExecOptions = {}): string {
    const r = this.exec(argv, opts);
    if (r.code !== 0) throw new Error(`${argv.join(" ")} exited ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
    return r.stdout;
  }

  /** The last lines of the container's console (for failure messages). */
  consoleTail(lines = 40): string {
    try {
      return fs.readFileSync(this.logFile, "utf8").split("\n").slice(-lines).join("\n");
    } catch {
      return "(no console output)";
    }
  }

  /** Processes still in the container's cgroups (empty after shutdown). */
  leftoverProcesses(): number[] {
    return this.tracking ? procsBelow(this.tracking) : [];
  }

  /** What shutdown must leave behind: nothing. */
  leftovers(): { processes: number[]; cgroups: string[]; dirs: string[] } {
    return {
      processes: this.leftoverProcesses(),
      cgroups: this.cgroups.filter((c) => fs.existsSync(c)),
      dirs: [this.base].filter((d) => d !== "" && fs.existsSync(d)),
    };
  }

  /**
   * Powers the container off (SIGRTMIN+4 to its PID 1), kills by PID whatever
   * is left in its cgroups, removes the cgroups and the temporary
   * directories. Safe to call twice and after a failed boot.
   */
  async shutdown(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.pid && alive(this.pid)) {
      try {
        process.kill(this.pid, SIGRTMIN_PLUS_4);
      } catch {
        // Already gone.
      }
      await Promise.race([this.nspawnExited, sleep(30_000)]);
    }
    const deadline = Date.now() + 15_000;
    for (;;) {
      const left = this.tracking ? procsBelow(this.tracking) : [];
      if (this.nspawn?.pid && this.nspawn.exitCode === null && this.nspawn.signalCode === null) left.push(this.nspawn.pid);
      if (left.length === 0) break;
      for (const pid of left) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // Exited meanwhile.
        }
      }
      if (Date.now() > deadline) throw new Error(`processes ${left.join(" ")} of the test container survive SIGKILL`);
      await sleep(50);
    }
    await Promise.race([this.nspawnExited, sleep(5_000)]);
    for (const cg of this.cgroups) removeCgroup(cg);
    // nspawn's own bookkeeping on the host for this machine name.
    for (const dir of ["/run/systemd/nspawn/propagate", "/run/systemd/nspawn/unix-export"]) {
      try {
        fs.rmdirSync(path.join(dir, this.machine));
      } catch {
        // Not there (or not empty: then it is not ours to judge).
      }
    }
    if (this.base) {
      // The root mount point is only a mount inside the namespace that has just
      // ended: here it is an empty directory. rmdir, never a recursive removal.
      if (fs.existsSync(this.rootDir)) fs.rmdirSync(this.rootDir);
      fs.rmSync(this.base, { recursive: true, force: true });
    }
  }
}
