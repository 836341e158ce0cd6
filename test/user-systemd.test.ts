// User units on a real systemd ("Tests on a real systemd"): one container
// booted for this file (test/systemd-container.ts), two lingering users whose
// own managers run `install systemd --user --with-watch` as an operator would.
// `solo`'s manager is an ordinary one; `nouserns`'s may not make user
// namespaces (RestrictNamespaces=~user on its user@.service: clone(2) and
// unshare(2) of a user namespace fail with EPERM), as on a host with
// kernel.unprivileged_userns_clone=0. The units written before
// deploy/systemd/user/hardening.conf failed at every start in both: 226/NAMESPACE
// for solo (ProtectKernelLogs= inside the user namespace cannot cover
// nspawn's /proc/kmsg), 217/USER for nouserns (PrivateUsers=).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BIN, ROOT } from "./helpers";
import { type ExecOptions, SystemdContainer } from "./systemd-container";
import { waitUntil } from "./watch-helpers";

// /home on a real filesystem (a fresh host directory): on the volatile overlay
// files report another st_dev than their directory, which the janitor refuses.
const c = new SystemdContainer({ fresh: ["/home"], readOnly: [ROOT] });
const NODE = process.execPath;
const WATCH = "media-outbox-watch.service";
const JANITOR = "media-outbox-janitor.service";

interface Agent {
  name: string;
  /** What its manager may not do, for the test names. */
  label: string;
  uid: number;
}
const AGENTS: Agent[] = [
  { name: "solo", label: "an ordinary user manager", uid: 0 },
  { name: "nouserns", label: "a user manager that may not make user namespaces", uid: 0 },
];

/** A command as the agent, reaching its own manager (systemctl --user, systemd-run --user). */
const asAgent = (a: Agent, argv: string[], opts: ExecOptions = {}) =>
  c.exec(argv, { ...opts, user: a.name, env: { XDG_RUNTIME_DIR: `/run/user/${a.uid}`, DBUS_SESSION_BUS_ADDRESS: `unix:path=/run/user/${a.uid}/bus`, ...opts.env } });
const mo = (a: Agent, args: string[]) => asAgent(a, [NODE, BIN, ...args]);
/** `systemctl --user show UNIT -p P…` values. */
function show<K extends string>(a: Agent, unit: string, ...props: K[]): Record<K, string> {
  const r = asAgent(a, ["systemctl", "--user", "show", unit, ...props.flatMap((p) => ["-p", p])]);
  expect(r.code, r.stderr).toBe(0);
  const shown = Object.fromEntries(r.stdout.split("\n").filter((l) => l.includes("=")).map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]));
  return Object.fromEntries(props.map((p) => [p, shown[p] ?? ""])) as Record<K, string>;
}
/** The end of the agent's manager's journal: what a failed assertion shows. */
const journal = (a: Agent) => c.exec(["journalctl", "--no-pager", "-o", "cat", "-n", "30", `_UID=${a.uid}`]).stdout;
const outbox = (a: Agent) => `/home/${a.name}/.hermes/media_outbox`;
const exists = (p: string) => c.exec(["test", "-e", p]).code === 0;

beforeAll(async () => {
  await c.boot();
  for (const a of AGENTS) {
    c.run(["useradd", "--create-home", "--shell", "/bin/bash", a.name]);
    a.uid = Number(c.run(["id", "-u", a.name]).trim());
  }
  // A runtime drop-in (/run): the container's /etc/systemd/system stays as booted.
  const noUserns = AGENTS[1]!;
  c.run(["sh", "-ec", `mkdir -p /run/systemd/system/user@${noUserns.uid}.service.d && printf '[Service]\\nRestrictNamespaces=~user\\n' > /run/systemd/system/user@${noUserns.uid}.service.d/50-no-userns.conf && systemctl daemon-reload`]);
  for (const a of AGENTS) {
    c.run(["loginctl", "enable-linger", a.name]);
    await waitUntil(() => c.exec(["systemctl", "is-active", `user@${a.uid}.service`]).stdout.trim() === "active" && exists(`/run/user/${a.uid}/systemd/private`), `the user manager of ${a.name} (loginctl enable-linger)`, 60_000).catch((err: Error) => {
      throw new Error(`${err.message}: ${c.exec(["systemctl", "status", "--no-pager", `user@${a.uid}.service`]).stdout}`);
    });
    // A stand-in Hermes gateway among the user's units: install covers it.
    const r = asAgent(a, [
      "sh",
      "-ec",
      "mkdir -p ~/.hermes ~/.config/systemd/user && printf '[Unit]\\nDescription=Hermes gateway (a stand-in)\\n\\n[Service]\\nExecStart=/bin/sleep infinity\\n\\n[Install]\\nWantedBy=default.target\\n' > ~/.config/systemd/user/hermes-gateway.service && systemctl --user daemon-reload && systemctl --user enable --now hermes-gateway.service",
    ]);
    expect(r.code, `${a.name}: ${r.stderr}`).toBe(0);
  }
}, 240_000);

afterAll(() => c.shutdown(), 120_000);

describe("install systemd --user --with-watch on a real systemd", { timeout: 120_000 }, () => {
  it("the manager that may not make user namespaces really may not: PrivateUsers=yes fails there (217/USER), and runs in the ordinary one", () => {
    const run = (a: Agent) => asAgent(a, ["systemd-run", "--user", "--wait", "--quiet", "--collect", "-p", "PrivateUsers=yes", "/bin/true"]);
    expect(run(AGENTS[0]!).code, journal(AGENTS[0]!)).toBe(0);
    expect(run(AGENTS[1]!).code, journal(AGENTS[1]!)).toBe(217);
  });

  for (const a of AGENTS) {
    describe(`${a.name}: ${a.label}`, () => {
      it("install starts the watch: it runs as the user, under its seccomp filter, with no new privileges", () => {
        const r = mo(a, ["install", "systemd", "--user", "--with-watch"]);
        expect(r.code, `${r.stdout}\n${r.stderr}\n${journal(a)}`).toBe(0);
        expect(r.stdout).toContain("ran: systemctl --user enable --now media-outbox-watch.service\n");
        expect(r.stderr).toContain(`note: user units are not confined to /home/${a.name}/.hermes`);
        expect(show(a, WATCH, "ActiveState", "SubState", "NRestarts"), journal(a)).toEqual({ ActiveState: "active", SubState: "running", NRestarts: "0" });
        expect(show(a, "media-outbox-janitor.timer", "ActiveState", "UnitFileState")).toEqual({ ActiveState: "active", UnitFileState: "enabled" });
        const pid = Number(show(a, WATCH, "MainPID").MainPID);
        expect(pid).toBeGreaterThan(0);
        const status = c.run(["cat", `/proc/${pid}/status`]);
        expect(/^Uid:\s+(\d+)/m.exec(status)?.[1]).toBe(String(a.uid));
        expect(status).toMatch(/^NoNewPrivs:\s+1$/m);
        // 2: a seccomp filter (SystemCallFilter=, RestrictAddressFamilies=, …).
        expect(status).toMatch(/^Seccomp:\s+2$/m);
      });

      it("the watch guards the outbox: a file written there behind prepare's back goes to the quarantine", async () => {
        const planted = `${outbox(a)}/planted.txt`;
        c.run(["sh", "-ec", `printf 'not from prepare' > ${planted}`], { user: a.name });
        await waitUntil(() => !exists(planted), `the watch of ${a.name} to quarantine ${planted}`, 30_000).catch((err: Error) => {
          throw new Error(`${err.message}\n${journal(a)}`);
        });
        expect(c.run(["cat", `/home/${a.name}/.hermes/.media_outbox-state/quarantine/planted.txt`])).toBe("not from prepare");
        expect(show(a, WATCH, "ActiveState", "NRestarts")).toEqual({ ActiveState: "active", NRestarts: "0" });
      });

      it("the janitor's unit runs and exits 0, deleting an expired file and keeping a fresh one", () => {
        // The watch would quarantine the fixtures (prepare did not publish them) before the janitor saw them.
        expect(asAgent(a, ["systemctl", "--user", "stop", WATCH]).code).toBe(0);
        // Published by prepare (the janitor deletes only what a ledger record names), one of them long ago.
        c.run(["sh", "-ec", `printf old > /home/${a.name}/expired.txt; printf new > /home/${a.name}/fresh.txt`], { user: a.name });
        const p = mo(a, ["prepare", `/home/${a.name}/expired.txt`, `/home/${a.name}/fresh.txt`]);
        expect(p.code, p.stderr).toBe(0);
        c.run(["touch", "-d", "30 days ago", `${outbox(a)}/expired.txt`], { user: a.name });
        const r = asAgent(a, ["systemctl", "--user", "start", JANITOR]);
        expect(r.code, `${r.stderr}\n${journal(a)}`).toBe(0);
        expect(show(a, JANITOR, "Result", "ExecMainStatus")).toEqual({ Result: "success", ExecMainStatus: "0" });
        expect(exists(`${outbox(a)}/expired.txt`)).toBe(false);
        expect(exists(`${outbox(a)}/fresh.txt`)).toBe(true);
      });

      it("uninstall systemd --user removes the units and keeps the outbox", () => {
        const r = mo(a, ["uninstall", "systemd", "--user"]);
        expect(r.code, r.stderr).toBe(0);
        for (const unit of [WATCH, JANITOR, "media-outbox-janitor.timer"]) expect(exists(`/home/${a.name}/.config/systemd/user/${unit}`), unit).toBe(false);
        expect(show(a, WATCH, "LoadState").LoadState).toBe("not-found");
        expect(exists(`${outbox(a)}/fresh.txt`)).toBe(true);
      });
    });
  }

  it("a system install for an agent runs the janitor as the agent and leaves the agent's shared memory alone (no RemoveIPC=: its stop removed every IPC object of the user, the gateway's too)", () => {
    // An agent without a user manager of its own (no lingering, no session), as a gateway's system unit's user usually is.
    const a: Agent = { name: "gwagent", label: "", uid: 0 };
    c.run(["useradd", "--create-home", "--shell", "/bin/bash", a.name]);
    c.run(["install", "-d", "-o", a.name, "-g", a.name, "-m", "0700", `/home/${a.name}/.hermes`, outbox(a)]);
    // The gateway a system install covers, as the agent; not started: install reads its unit.
    c.run(["sh", "-ec", `printf '[Unit]\\nDescription=Hermes gateway (a stand-in)\\n\\n[Service]\\nUser=${a.name}\\nExecStart=/bin/sleep infinity\\n' > /etc/systemd/system/hermes-gateway.service && systemctl daemon-reload`]);
    const r = c.exec([NODE, BIN, "install", "systemd", "--system", "--outbox", outbox(a)]);
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    try {
      expect(c.run(["systemctl", "show", JANITOR, "-p", "User", "--value"]).trim()).toBe(a.name);
      // What a Python gateway's multiprocessing makes (sem_open, shm_open): files of the user's in /dev/shm.
      c.run(["sh", "-ec", "printf x > /dev/shm/sem.mp-gateway && printf y > /dev/shm/gateway-shm"], { user: a.name });
      const run = c.exec(["systemctl", "start", JANITOR]);
      expect(run.code, `${run.stderr}\n${c.exec(["journalctl", "--no-pager", "-o", "cat", "-n", "30", "-u", JANITOR]).stdout}`).toBe(0);
      expect(c.run(["systemctl", "show", JANITOR, "-p", "Result", "--value"]).trim()).toBe("success");
      expect(exists("/dev/shm/sem.mp-gateway") && exists("/dev/shm/gateway-shm")).toBe(true);
    } finally {
      const u = c.exec([NODE, BIN, "uninstall", "systemd", "--system"]);
      expect(u.code, u.stderr).toBe(0);
      c.run(["sh", "-ec", "rm -f /etc/systemd/system/hermes-gateway.service /dev/shm/sem.mp-gateway /dev/shm/gateway-shm && systemctl daemon-reload"]);
    }
  });

  it("shuts the container down leaving no process, cgroup or temporary directory", async () => {
    await c.shutdown();
    expect(c.leftovers()).toEqual({ processes: [], cgroups: [], dirs: [] });
  }, 120_000);
});
