// install/uninstall systemd and install hermes-config, checked with systemd's own tools.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fakeSystemctl, gatewayRoot, put, run, snapshot, which } from "./deploy-helpers";
import { HERMES_STORE_DIRS, HERMES_STORES, USER_HOME_SECRET_FILES } from "../src/content/known.js";
import { BIN, cli, makeHome, png, write } from "./helpers";
import { type UnitHermesEnvironment, gatewayEnvironmentStores } from "../src/deploy/hermes-environment.js";

let t: ReturnType<typeof makeHome>;
beforeEach(() => {
  t = makeHome();
});
afterEach(() => t.cleanup());

const ETC = "etc/systemd/system";
/**
 * Settings a user manager applies only inside a user namespace of the
 * service's own (systemd.exec(5): "only available ... in per-user instances
 * ... when PrivateUsers= is enabled", implied since systemd 253), or not at
 * all (ProtectProc=, ProtectControlGroups=, RemoveIPC=; IPAddressDeny= and
 * DevicePolicy= need cgroup BPF programs it may not attach).
 */
const USER_NAMESPACE_ONLY = new Set([
  "PrivateUsers", "ProtectSystem", "ProtectHome", "ReadWritePaths", "ReadOnlyPaths", "InaccessiblePaths", "TemporaryFileSystem", "BindPaths", "BindReadOnlyPaths",
  "PrivateTmp", "PrivateDevices", "PrivateNetwork", "PrivateIPC", "PrivateMounts", "MountFlags", "ProtectHostname", "ProtectClock",
  "ProtectKernelTunables", "ProtectKernelModules", "ProtectKernelLogs", "ProtectControlGroups", "ProtectProc", "ProcSubset",
  "CapabilityBoundingSet", "AmbientCapabilities", "RemoveIPC", "IPAddressDeny", "DevicePolicy", "DeviceAllow",
]);
const OUTBOX = () => t.outbox;

function install(root: string, ...args: string[]) {
  return cli(["install", "systemd", "--root", root, ...args], { env: t.env });
}

/** systemd's own view of a unit: `systemd --test` (as nobody: it refuses root) over the target's unit directories. */
function systemdDump(root: string, unit: string): string[] {
  const unitPath = [path.join(root, ETC), path.join(root, "usr/lib/systemd/system")].join(":");
  const r = run("setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/lib/systemd/systemd", "--test", "--system", `--unit=${unit}`, "--no-pager"], {
    env: { PATH: process.env.PATH, SYSTEMD_UNIT_PATH: `${unitPath}:` },
  });
  expect(r.code, r.stderr).toBe(0);
  const lines = r.stdout.split("\n");
  const start = lines.findIndex((l) => l.trim() === `-> Unit ${unit}:`);
  expect(start, `systemd --test did not dump ${unit}`).toBeGreaterThanOrEqual(0);
  const end = lines.findIndex((l, i) => i > start && l.trim().startsWith("-> Unit "));
  return lines.slice(start + 1, end < 0 ? undefined : end).map((l) => l.trim());
}

describe("install systemd --root", () => {
  it("writes units that systemd-analyze verify accepts without a single message", () => {
    const root = gatewayRoot(t.home);
    const r = install(root, "--with-watch", "--strict");
    expect(r.code, r.stderr).toBe(0);
    const etc = path.join(root, ETC);
    for (const f of ["media-outbox-janitor.service", "media-outbox-janitor.timer", "media-outbox-watch.service"]) expect(fs.existsSync(path.join(etc, f))).toBe(true);
    // Units from /etc and /usr/lib, drop-ins included (verify reads the .d directories beside each file), and a template instance.
    const v = run(
      "systemd-analyze",
      ["verify", "--man=no", "media-outbox-janitor.service", "media-outbox-janitor.timer", "media-outbox-watch.service", "hermes-gateway.service", "hermes-gateway@alice.service", path.join(root, "usr/lib/systemd/system/hermes-gateway-work.service")],
      { cwd: etc },
    );
    expect(v.stderr).toBe("");
    expect(v.stdout).toBe("");
    expect(v.code).toBe(0);
    // The check is real: a bad key in a drop-in is reported.
    put(path.join(etc, "hermes-gateway.service.d/50-bad.conf"), "[Service]\nBogusKey=1\n");
    expect(run("systemd-analyze", ["verify", "--man=no", "hermes-gateway.service"], { cwd: etc }).stderr).toContain("BogusKey");
  });

  it("writes user units that verify cleanly too", () => {
    const root = path.join(t.home, "target");
    put(path.join(root, t.home, ".config/systemd/user/hermes-gateway.service"), "[Service]\nExecStart=/bin/true\n");
    const r = cli(["install", "systemd", "--user", "--root", root, "--with-watch"], { env: t.env });
    expect(r.code, r.stderr).toBe(0);
    const dir = path.join(root, t.home, ".config/systemd/user");
    expect(fs.readFileSync(path.join(dir, "hermes-gateway.service.d/90-media-outbox.conf"), "utf8")).toContain(`HERMES_MEDIA_ALLOW_DIRS=${OUTBOX()}`);
    const janitor = fs.readFileSync(path.join(dir, "media-outbox-janitor.service"), "utf8");
    expect(janitor).not.toMatch(/^User=/m);
    // Install says what user units give up (deploy/systemd/user/hardening.conf).
    expect(r.stderr).toContain(`note: user units are not confined to ${path.join(t.home, ".hermes")}: the janitor and watch may write whatever your user may`);
    expect(r.stderr).not.toContain("ReadWritePaths= names the one directory");
    for (const unit of ["media-outbox-janitor.service", "media-outbox-watch.service"]) {
      const keys = fs
        .readFileSync(path.join(dir, unit), "utf8")
        .split("\n")
        .filter((l) => /^[A-Za-z]+=/.test(l))
        .map((l) => l.slice(0, l.indexOf("=")));
      // Nothing a user manager applies only through a user namespace (PrivateUsers=, implied for these since systemd 253):
      // where it cannot make one, or (nspawn) cannot cover /proc/kmsg from inside one, every start fails.
      expect(keys.filter((k) => USER_NAMESPACE_ONLY.has(k)), unit).toEqual([]);
      // What needs no namespace stays: seccomp filters and prctl flags.
      expect(keys, unit).toEqual(expect.arrayContaining(["NoNewPrivileges", "RestrictAddressFamilies", "RestrictNamespaces", "SystemCallFilter", "SystemCallErrorNumber", "UMask", "LockPersonality"]));
    }
    const xdg = fs.mkdtempSync(path.join(os.tmpdir(), "mo-xdg-"));
    try {
      const v = run("systemd-analyze", ["--user", "verify", "--man=no", "media-outbox-janitor.service", "media-outbox-janitor.timer", "media-outbox-watch.service", "hermes-gateway.service"], {
        cwd: dir,
        env: { ...process.env, XDG_RUNTIME_DIR: xdg, HOME: t.home },
      });
      expect(v.stderr).toBe("");
      expect(v.code).toBe(0);
    } finally {
      fs.rmSync(xdg, { recursive: true, force: true });
    }
  });

  it("hardens janitor and watch to a systemd-analyze security exposure of 2.0 or better", () => {
    const root = gatewayRoot(t.home);
    put(path.join(root, t.home, ".hermes/.env"), "TOKEN=x\n", 0o600);
    const r = install(root, "--with-watch");
    expect(r.code, r.stderr).toBe(0);
    // The one writable directory is ~/.hermes in the default layout, and install says what else that lets the services write.
    expect(r.stderr).toContain(`note: the services may write anywhere in ${path.join(t.home, ".hermes")}, which also holds .env: ReadWritePaths= names the one directory holding the outbox and its state, because link(2) and rename(2) fail with EXDEV`);
    for (const unit of ["media-outbox-janitor.service", "media-outbox-watch.service"]) {
      const file = path.join(root, ETC, unit);
      const s = run("systemd-analyze", ["security", "--offline=yes", file]);
      const score = Number(/Overall exposure level for \S+: ([\d.]+)/.exec(s.stdout)?.[1]);
      expect(score, s.stdout + s.stderr).toBeLessThanOrEqual(2.0);
      const text = fs.readFileSync(file, "utf8");
      expect(text).toContain("ProtectSystem=strict");
      // The system manager sets its namespaces up as root, before the user namespace: the whole block stays.
      expect(text).toContain("PrivateUsers=yes\n");
      expect(text).toContain("ProtectKernelLogs=yes\n");
      // One entry holding the outbox and its state: each entry is a mount of its own, and link(2) fails across mounts.
      expect(text).toContain(`ReadWritePaths=${path.join(t.home, ".hermes")}\n`);
      expect(text).toMatch(/SystemCallFilter=@system-service @pkey/);
      expect(text).not.toMatch(/^MemoryDenyWriteExecute/m);
      // Its stop would remove every IPC object of the agent's, the gateway's too (README, "Deliberately absent").
      expect(text).not.toMatch(/^RemoveIPC/m);
      expect(text).toContain("UMask=0077");
      expect(text).toContain("NoNewPrivileges=yes");
      expect(text).toContain(`ExecStart=${process.execPath} ${BIN} ${unit.includes("janitor") ? "janitor" : "watch"} --outbox ${OUTBOX()}`);
      // Literal paths: %h would be root's home in a system unit.
      expect(text.replace(/^#.*$/gm, "")).not.toMatch(/%h/);
    }
    const janitor = fs.readFileSync(path.join(root, ETC, "media-outbox-janitor.service"), "utf8");
    expect(janitor).toContain("PrivateNetwork=yes");
    expect(janitor).toContain("IPAddressDeny=any");
    expect(janitor).toContain("Type=oneshot");
    expect(janitor).not.toContain("[Install]");
    expect(fs.readFileSync(path.join(root, ETC, "media-outbox-watch.service"), "utf8")).toContain("Restart=always");
  });

  it("schedules the janitor with a calendar systemd-analyze calendar accepts, persistent and randomized", () => {
    const root = gatewayRoot(t.home);
    expect(install(root).code).toBe(0);
    const timer = fs.readFileSync(path.join(root, ETC, "media-outbox-janitor.timer"), "utf8");
    const cal = /^OnCalendar=(.+)$/m.exec(timer)![1]!;
    const r = run("systemd-analyze", ["calendar", cal]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("Next elapse:");
    expect(r.stdout).toContain("Normalized form: *-*-* 00:00:00");
    expect(timer).toMatch(/^Persistent=true$/m);
    expect(timer).toMatch(/^RandomizedDelaySec=\S+$/m);
  });

  it("merges the outbox into each gateway's roots as systemd itself computes them (Environment=, EnvironmentFile=, template)", () => {
    fs.chmodSync(t.home, 0o755); // systemd --test runs as nobody
    const root = gatewayRoot(t.home);
    // Previous roots written with quotes, an escaped quote and a space survive the merge as systemd reads them.
    put(path.join(root, ETC, "hermes-gateway-quoted.service"), '[Service]\nExecStart=/bin/true\nEnvironment="HERMES_MEDIA_ALLOW_DIRS=/srv/a b:/srv/say\\"hi\\"" OTHER=1\n');
    const r = install(root, "--strict");
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain("covering hermes-gateway-work.service via a drop-in EnvironmentFile=");
    expect(systemdDump(root, "hermes-gateway-quoted.service")).toContain(`Environment: HERMES_MEDIA_ALLOW_DIRS=/srv/a b:/srv/say"hi":${OUTBOX()}`);

    const plain = systemdDump(root, "hermes-gateway.service");
    expect(plain).toContain(`DropIn Path: ${path.join(root, ETC, "hermes-gateway.service.d/90-media-outbox.conf")}`);
    expect(plain).toContain(`Environment: HERMES_MEDIA_ALLOW_DIRS=/srv/shared:/srv/other:${OUTBOX()}`);
    expect(plain).toContain("Environment: FOO=bar");
    expect(plain).toContain("Environment: LOCAL=1");
    expect(plain).toContain("Environment: HERMES_MEDIA_DELIVERY_STRICT=1");
    expect(plain).toContain("Environment: HERMES_MEDIA_TRUST_RECENT_FILES=0");

    const instance = systemdDump(root, "hermes-gateway@alice.service");
    expect(instance).toContain(`Environment: HERMES_MEDIA_ALLOW_DIRS=/srv/alice:${OUTBOX()}`);

    // systemd lists the environment files in the order it reads them (later
    // ones win); it does not read them in --test mode, so their contents are
    // checked here with the same reading rules.
    const work = systemdDump(root, "hermes-gateway-work.service");
    const files = work.filter((l) => l.startsWith("EnvironmentFile: ")).map((l) => l.slice("EnvironmentFile: ".length));
    expect(files).toEqual(["/etc/hermes/work.env", "/etc/systemd/system/hermes-gateway-work.service.d/media-outbox.env"]);
    const ours = fs.readFileSync(path.join(root, files[1]!), "utf8");
    expect(ours).toContain(`HERMES_MEDIA_ALLOW_DIRS='/srv/work:${OUTBOX()}'`);
    expect(ours).toContain("HERMES_MEDIA_DELIVERY_STRICT='1'");
  });

  it("writes % and $ in paths literally: systemd expands neither", () => {
    fs.chmodSync(t.home, 0o755);
    const root = gatewayRoot(t.home);
    const outbox = path.join(t.home, "out%h$HOME");
    const r = install(root, "--outbox", outbox, "--unit", "hermes-gateway.service");
    expect(r.code, r.stderr).toBe(0);
    expect(systemdDump(root, "hermes-gateway.service")).toContain(`Environment: HERMES_MEDIA_ALLOW_DIRS=/srv/shared:/srv/other:${outbox}`);
    const janitor = systemdDump(root, "media-outbox-janitor.service");
    expect(janitor).toContain(`Environment: MEDIA_OUTBOX_STATE_DIR=${path.join(t.home, ".out%h$HOME-state")}`);
    expect(janitor).toContain(`ReadWritePaths: ${t.home}`);
    // systemd keeps ExecStart's `$$` until it spawns the command (then it is one `$`); %h must not have become /root.
    const exec = janitor.find((l) => l.startsWith("Command Line:"));
    expect(exec).toBe(`Command Line: ${process.execPath} ${BIN} janitor --outbox "${outbox.replace("$", "\\$\\$")}"`);
  });

  it("uninstall restores the original tree byte for byte, including a file install replaced", () => {
    const root = gatewayRoot(t.home);
    put(path.join(root, ETC, "media-outbox-janitor.timer"), "# an operator's old timer\n[Timer]\nOnCalendar=weekly\n", 0o600);
    const before = snapshot(root);
    const r = install(root, "--with-watch", "--strict");
    expect(r.code, r.stderr).toBe(0);
    expect(snapshot(root)).not.toEqual(before);
    const u = cli(["uninstall", "systemd", "--root", root], { env: t.env });
    expect(u.code, u.stderr).toBe(0);
    expect(u.stdout).toContain(`restored ${path.join(root, ETC, "media-outbox-janitor.timer")}`);
    // The restart it asks for, as a command to run.
    expect(u.stderr).toContain("restart the gateway units so they drop the outbox: systemctl try-restart hermes-gateway-work.service hermes-gateway.service 'hermes-gateway@*.service'");
    expect(snapshot(root)).toEqual(before);
    // Nothing left to uninstall.
    expect(cli(["uninstall", "systemd", "--root", root], { env: t.env }).code).toBe(2);
  });

  it("uninstall touches nothing when a file it wrote was changed since", () => {
    const root = gatewayRoot(t.home);
    expect(install(root).code).toBe(0);
    const dropIn = path.join(root, ETC, "hermes-gateway.service.d/90-media-outbox.conf");
    fs.appendFileSync(dropIn, "# edited by hand\n");
    const mid = snapshot(root);
    const u = cli(["uninstall", "systemd", "--root", root], { env: t.env });
    expect(u.code).toBe(2);
    expect(u.stderr).toContain("changed since install");
    expect(snapshot(root)).toEqual(mid);
  });

  it("refuses a second install over the first", () => {
    const root = gatewayRoot(t.home);
    expect(install(root).code).toBe(0);
    const before = snapshot(root);
    const r = install(root);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("already installed");
    // Refused before it says what it would cover: no line describes an install that does not happen.
    expect(r.stderr).not.toContain("covering");
    expect(r.stdout).toBe("");
    expect(snapshot(root)).toEqual(before);
  });

  it("gives the janitor and watch the HERMES_HOME= of their user's gateway units (a root install made for an agent), unless install was told one, the units disagree, or that home holds a config file install did not read", () => {
    const root = path.join(t.home, "target-hermes-home");
    put(path.join(root, "etc/passwd"), ["root:x:0:0:root:/root:/bin/bash", "agent:x:1500:1500::/home/agent:/bin/bash", ""].join("\n"));
    put(path.join(root, ETC, "hermes-gateway.service"), "[Service]\nUser=agent\nEnvironment=HERMES_HOME=/srv/agent-hermes\nExecStart=/bin/true\n");
    const env = { ...t.env };
    delete env.HERMES_HOME;
    const dryRun = (extra: NodeJS.ProcessEnv = {}) => {
      const r = cli(["install", "systemd", "--root", root, "--outbox", OUTBOX(), "--with-watch", "--dry-run"], { env: { ...env, ...extra } });
      expect(r.code, r.stderr).toBe(0);
      const unit = (name: string) => r.stdout.split(/^==> /m).find((f) => f.startsWith(path.join(root, ETC, name)))!;
      return { r, environment: (name: string) => unit(name).split("\n").filter((l) => l.startsWith("Environment=")) };
    };
    // The gateway reads /srv/agent-hermes: so do the services that run as its user (the watch knows the secrets of that .env).
    let { r, environment } = dryRun();
    for (const name of ["media-outbox-janitor.service", "media-outbox-watch.service"]) expect(environment(name).join("\n")).toContain("HERMES_HOME=/srv/agent-hermes ");
    // Told one: that one.
    ({ environment } = dryRun({ HERMES_HOME: "/srv/told" }));
    expect(environment("media-outbox-watch.service").join("\n")).toContain("HERMES_HOME=/srv/told ");
    // That home holds a config file install did not read: the services would take a policy the units were not written for.
    put(path.join(root, "srv/agent-hermes/media-outbox.json"), "{}\n");
    ({ r, environment } = dryRun());
    expect(environment("media-outbox-watch.service").join("\n")).not.toContain("HERMES_HOME=");
    expect(r.stderr).toContain(`note: the gateway's Hermes home /srv/agent-hermes holds /srv/agent-hermes/media-outbox.json, which install did not read: the janitor and watch read /home/agent/.hermes; run install with HERMES_HOME=/srv/agent-hermes`);
    fs.rmSync(path.join(root, "srv/agent-hermes/media-outbox.json"));
    // Two units of the agent that read two homes: neither, said.
    put(path.join(root, ETC, "hermes-gateway-work.service"), "[Service]\nUser=agent\nExecStart=/bin/true\n");
    ({ r, environment } = dryRun());
    expect(environment("media-outbox-watch.service").join("\n")).not.toContain("HERMES_HOME=");
    expect(r.stderr).toContain("note: the gateway units of agent read different Hermes homes (/home/agent/.hermes, /srv/agent-hermes): the janitor and watch read /home/agent/.hermes; run install with HERMES_HOME set to the one they should read");
  });

  it("--dry-run prints every file with its contents and writes nothing", () => {
    const root = gatewayRoot(t.home);
    const before = snapshot(root);
    const r = install(root, "--dry-run", "--with-watch");
    expect(r.code, r.stderr).toBe(0);
    expect(snapshot(root)).toEqual(before);
    for (const f of ["hermes-gateway.service.d/90-media-outbox.conf", "hermes-gateway-work.service.d/media-outbox.env", "media-outbox-watch.service", "media-outbox-janitor.timer"]) {
      expect(r.stdout).toContain(`==> ${path.join(root, ETC, f)} (mode 0644) <==`);
    }
    expect(r.stdout).toContain("OnCalendar=daily");
  });

  it("covers only the units named with --unit, and lists what it covered", () => {
    const root = gatewayRoot(t.home);
    const r = install(root, "--unit", "hermes-gateway.service");
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain("covering hermes-gateway.service");
    expect(r.stderr).not.toContain("hermes-gateway-work.service");
    expect(fs.existsSync(path.join(root, ETC, "hermes-gateway-work.service.d"))).toBe(false);
    expect(r.stdout).toContain("run: systemctl daemon-reload");
    expect(r.stdout).toContain("run: systemctl enable --now media-outbox-janitor.timer");
    expect(r.stdout).toContain("run: systemctl try-restart hermes-gateway.service");
    expect(r.stderr).toContain("systemd was not told (--root was given)");
  });

  it("refuses an environment file it cannot read for every instance, and writes nothing", () => {
    const root = gatewayRoot(t.home);
    put(path.join(root, ETC, "hermes-gateway@.service.d/20-env.conf"), "[Service]\nEnvironmentFile=/etc/hermes/%i.env\n");
    const before = snapshot(root);
    const r = install(root);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("hermes-gateway@.service");
    expect(r.stderr).toContain("/etc/hermes/%i.env");
    expect(snapshot(root)).toEqual(before);
  });

  it("refuses when a later drop-in would override the outbox, instead of installing something that does nothing", () => {
    const root = gatewayRoot(t.home);
    put(path.join(root, ETC, "hermes-gateway.service.d/95-late.conf"), "[Service]\nEnvironment=HERMES_MEDIA_ALLOW_DIRS=/srv/late\n");
    const before = snapshot(root);
    const r = install(root, "--unit", "hermes-gateway.service");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("would do nothing");
    expect(r.stderr).toContain("95-late.conf");
    expect(snapshot(root)).toEqual(before);
  });

  it("refuses an outbox path the gateway cannot parse", () => {
    const root = gatewayRoot(t.home);
    for (const bad of [path.join(t.home, "a,b"), path.join(t.home, "a:b"), path.join(t.home, "a b"), "relative/outbox"]) {
      const r = install(root, "--outbox", bad);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/HERMES_MEDIA_ALLOW_DIRS|relative entries/);
    }
    expect(fs.existsSync(path.join(root, ETC, "media-outbox-janitor.service"))).toBe(false);
  });

  it("says which gateway unit is missing", () => {
    const root = gatewayRoot(t.home);
    const r = install(root, "--unit", "hermes-nothere.service");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("hermes-nothere.service is not installed");
  });

  it("--gate --dry-run prints the gate's socket, service (an agent's Hermes .env and credential stores copied for it, read as the agent) and config; a real --gate install under --root is refused", () => {
    // The gate runs on a real systemd in test/gate-systemd.test.ts; this is the rendering, without accounts.
    const root = path.join(t.home, "target");
    put(path.join(root, ETC, "hermes-gateway.service"), "[Service]\nUser=nobody\nEnvironment=HERMES_HOME=/home/agent/.hermes\nExecStart=/bin/true\n");
    put(path.join(root, "home/agent/.hermes/.env"), "TOKEN=secretsecret\n", 0o600);
    put(path.join(root, "home/agent/.hermes/profiles/work/.env"), "TOKEN=othersecret\n", 0o600);
    // The directory of MCP token files is named as a directory (a trailing "/": gate-secrets copies each .json in it).
    put(path.join(root, "home/agent/.hermes/mcp-tokens/github.json"), '{"access_token": "mcpaccesstoken"}\n', 0o600);
    // The .env files first, then each home's stores and MCP token directory, optional ("?": named before they exist, no news when absent);
    // last, its profiles directory (gate-secrets lists it at each run, and watches each profile: --watch-profiles), never a profile's files one by one.
    const stores = (dir: string) => [...HERMES_STORES, ...HERMES_STORE_DIRS.map((name) => `${name}/`)].map((store) => `nobody:?${dir}/${store}`);
    // And each gateway unit, named by its path in the drop-ins' directory: gate-secrets resolves its environment at each run (a CODEX_HOME or HERMES_MANAGED_DIR set since is followed).
    const words = ["nobody:/home/agent/.hermes/.env", ...stores("/home/agent/.hermes"), "nobody:?profiles:/home/agent/.hermes/profiles/", "nobody:?gateway:/etc/systemd/system/hermes-gateway.service"].join(" ");
    expect(words).toContain("nobody:?/home/agent/.hermes/auth.json nobody:?/home/agent/.hermes/.anthropic_oauth.json");
    const before = snapshot(root);
    const r = install(root, "--gate", "--dry-run", "--strict");
    expect(r.code, r.stderr).toBe(0);
    expect(snapshot(root)).toEqual(before);
    const file = (name: string) => r.stdout.split(/^==> /m).find((f) => f.startsWith(path.join(root, name)))!;
    const service = file(`${ETC}/media-outbox-gate.service`);
    expect(service).toContain("User=media-outbox\n");
    expect(service).toContain("Restart=always\n");
    expect(service).toContain("UMask=0027\n");
    expect(service).toContain("ReadWritePaths=/srv/media-outbox\n");
    // The agents' .env files are copied at each start by gate-secrets, each read as its agent (here the gateway's user), never by systemd as root.
    expect(service).toContain(
      `RuntimeDirectory=media-outbox-gate\nRuntimeDirectoryMode=0700\nEnvironment=CREDENTIALS_DIRECTORY=/run/media-outbox-gate\nExecStartPre=-+${process.execPath} ${BIN} gate-secrets --into /run/media-outbox-gate --watch-profiles ${words}\n`,
    );
    expect(service).not.toContain("LoadCredential");
    expect(service).not.toContain("profiles/work");
    // The template whose instances (one per file of a profile) gate-secrets starts: not enabled, no [Install].
    const template = file(`${ETC}/media-outbox-gate-secrets-watch@.path`);
    expect(template).toContain("[Path]\nPathChanged=%f\nUnit=media-outbox-gate-secrets.service\n");
    expect(template).not.toContain("[Install]");
    expect(r.stdout).not.toContain("enable --now media-outbox-gate-secrets-watch");
    expect(service).toContain(`ExecStart=${process.execPath} ${BIN} serve --outbox /srv/media-outbox/outbox\n`);
    expect(file(`${ETC}/media-outbox-gate.socket`)).toContain("ListenStream=/run/media-outbox/gate.sock\nSocketUser=media-outbox\nSocketGroup=media-outbox\nSocketMode=0660\n");
    // The gate's own environment names its outbox; the system config holds exactly the socket (config.ts allows no other key there).
    expect(service).toContain("Environment=MEDIA_OUTBOX_DIR=/srv/media-outbox/outbox MEDIA_OUTBOX_STATE_DIR=/srv/media-outbox/state\n");
    expect(JSON.parse(file("etc/media-outbox/config.json").slice(file("etc/media-outbox/config.json").indexOf("\n") + 1))).toEqual({ socket: "/run/media-outbox/gate.sock" });
    const dropIn = file(`${ETC}/hermes-gateway.service.d/90-media-outbox.conf`);
    expect(dropIn).toContain("HERMES_MEDIA_ALLOW_DIRS=/srv/media-outbox/outbox HERMES_MEDIA_DELIVERY_STRICT=1");
    // The gateway's environment is its agents': MEDIA_OUTBOX_DIR there would keep their prepare local, off the gate.
    expect(r.stdout).not.toContain("MEDIA_OUTBOX_DIR=/srv/media-outbox/outbox HERMES");
    expect(dropIn).not.toMatch(/MEDIA_OUTBOX_(DIR|STATE_DIR|CONFIG)/);
    expect(r.stderr).toContain("would create system user media-outbox");
    expect(r.stderr).toContain("would add nobody to group media-outbox");
    // The shared hardening block is in every service, once.
    for (const unit of ["media-outbox-gate.service", "media-outbox-janitor.service"]) expect(file(`${ETC}/${unit}`).match(/^ProtectSystem=strict$/gm)).toHaveLength(1);

    // With --with-watch, the watch (the service user, judging drops) knows the same values, from a runtime directory of its own.
    const watched = install(root, "--gate", "--dry-run", "--with-watch");
    expect(watched.code, watched.stderr).toBe(0);
    const watch = watched.stdout.split(/^==> /m).find((f) => f.startsWith(path.join(root, ETC, "media-outbox-watch.service")))!;
    expect(watch).toContain(
      `RuntimeDirectory=media-outbox-watch\nRuntimeDirectoryMode=0700\nEnvironment=CREDENTIALS_DIRECTORY=/run/media-outbox-watch\nExecStartPre=-+${process.execPath} ${BIN} gate-secrets --into /run/media-outbox-watch --watch-profiles ${words}\n`,
    );
    expect(file(`${ETC}/media-outbox-janitor.service`)).not.toContain("gate-secrets");

    const real = install(root, "--gate");
    expect(real.code).toBe(2);
    expect(real.stderr).toContain("takes --root only with --dry-run");
    expect(snapshot(root)).toEqual(before);
    const user = cli(["install", "systemd", "--user", "--gate", "--root", root, "--dry-run"], { env: t.env });
    expect(user.code).toBe(2);
    expect(user.stderr).toContain("use --system, not --user");

    // A home's own .env is named before it exists (its path unit sees it created), its profiles directory too (a profile made later is copied).
    fs.rmSync(path.join(root, "home/agent/.hermes/.env"));
    fs.rmSync(path.join(root, "home/agent/.hermes/profiles"), { recursive: true });
    const early = install(root, "--gate", "--dry-run");
    expect(early.code, early.stderr).toBe(0);
    const gateLine = early.stdout.split("\n").find((l) => l.startsWith("ExecStartPre=-+"));
    expect(gateLine).toBe(`ExecStartPre=-+${process.execPath} ${BIN} gate-secrets --into /run/media-outbox-gate --watch-profiles ${words}`);
    // Every file named is watched, the optional ones too (a store made after install is copied once it is written):
    // those there at install by one path unit, the others by another (their directories' events would drop the first's).
    // The profiles directory is watched as a directory: a profile made or gone there.
    const unitText = (name: string) => early.stdout.split(/^==> /m).find((f) => f.startsWith(path.join(root, ETC, name)))!;
    const watchedBy = (name: string) => unitText(name).split("\n").filter((l) => l.startsWith("PathChanged=")).map((l) => l.slice("PathChanged=".length));
    const there = ["/home/agent/.hermes/mcp-tokens", "/etc/systemd/system/hermes-gateway.service"];
    expect(watchedBy("media-outbox-gate-secrets.path")).toEqual(there);
    const named = words.split(" ").map((w) => w.slice(w.indexOf(":") + 1).replace(/^\?/, "").replace(/^(profiles|gateway):/, "").replace(/\/$/, ""));
    expect(watchedBy("media-outbox-gate-secrets-new.path")).toEqual(named.filter((f) => !there.includes(f)));
    expect(watchedBy("media-outbox-gate-secrets-new.path")).toEqual(expect.arrayContaining(["/home/agent/.hermes/.env", "/home/agent/.hermes/auth.json", "/home/agent/.hermes/profiles"]));
    for (const name of ["media-outbox-gate-secrets.path", "media-outbox-gate-secrets-new.path"]) expect(unitText(name)).toContain("Unit=media-outbox-gate-secrets.service\n");
  });
});

  it("--gate copies the shared Hermes root's .env, stores and profiles for a profile's gateway (HERMES_HOME=<root>/profiles/NAME) whose user's home is elsewhere, as its Hermes denies them: a container's layout too", () => {
    const root = path.join(t.home, "target");
    // nobody's passwd home is /nonexistent: no agent's ~/.hermes names /home/agent/.hermes, only the gateway's HERMES_HOME lies in it.
    put(path.join(root, ETC, "hermes-gateway-work.service"), "[Service]\nUser=nobody\nEnvironment=HERMES_HOME=/home/agent/.hermes/profiles/work\nExecStart=/bin/true\n");
    put(path.join(root, ETC, "hermes-gateway-coder.service"), "[Service]\nUser=nobody\nEnvironment=HERMES_HOME=/opt/data/profiles/coder\nExecStart=/bin/true\n");
    for (const home of ["home/agent/.hermes", "opt/data"]) {
      put(path.join(root, home, ".env"), "TOKEN=rootsecret\n", 0o600);
      put(path.join(root, home, "profiles/other/.env"), "TOKEN=othersecret\n", 0o600);
    }
    put(path.join(root, "home/agent/.hermes/profiles/work/.env"), "TOKEN=worksecret\n", 0o600);
    put(path.join(root, "opt/data/profiles/coder/.env"), "TOKEN=codersecret\n", 0o600);
    const r = install(root, "--gate", "--dry-run", "--unit", "hermes-gateway-work.service", "--unit", "hermes-gateway-coder.service");
    expect(r.code, r.stderr).toBe(0);
    const words = r.stdout.split("\n").find((l) => l.startsWith("ExecStartPre=-+"))!.split(" ");
    // Each gateway's own home first, as before; the roots after: the .env files named before keep their copies' numbers.
    for (const word of [
      "nobody:/home/agent/.hermes/profiles/work/.env",
      "nobody:/opt/data/profiles/coder/.env",
      "nobody:/home/agent/.hermes/.env",
      "nobody:/opt/data/.env",
      "nobody:?/home/agent/.hermes/auth.json",
      "nobody:?/opt/data/auth.json",
      "nobody:?profiles:/home/agent/.hermes/profiles/",
      "nobody:?profiles:/opt/data/profiles/",
    ]) expect(words, word).toContain(word);
    expect(words.indexOf("nobody:/home/agent/.hermes/.env")).toBeGreaterThan(words.indexOf("nobody:/opt/data/profiles/coder/.env"));
    // Named once each.
    expect(words.filter((w) => w === "nobody:/home/agent/.hermes/.env")).toHaveLength(1);
  });

  it("--gate notes when the path units would watch more files than half the inotify instances root may have (systemd takes one per PathChanged=), the profiles' watches counted (at most 8 profiles a home)", () => {
    const root = path.join(t.home, "target");
    const gateway = (n: number) => put(path.join(root, ETC, `hermes-gateway-h${n}.service`), `[Service]\nUser=nobody\nEnvironment=HERMES_HOME=/home/agent/h${n}\nExecStart=/bin/true\n`);
    const profiles = (n: number, count: number) => {
      for (let i = 0; i < count; i++) fs.mkdirSync(path.join(root, `home/agent/h${n}/profiles/p${i}`), { recursive: true });
    };
    gateway(0);
    put(path.join(root, "home/agent/h0/.env"), "TOKEN=secretsecret\n", 0o600);
    // A home's files (its .env, stores, store directories, profiles directory, its gateway's unit), and 4 watches for each profile, 8 at most.
    const perHome = 1 + HERMES_STORES.length + HERMES_STORE_DIRS.length + 1 + 1;
    profiles(0, 12);
    const few = install(root, "--gate", "--dry-run");
    expect(few.code, few.stderr).toBe(0);
    const instances = Number(fs.readFileSync("/proc/sys/fs/inotify/max_user_instances", "utf8"));
    if (perHome + 4 * 8 <= instances / 2) expect(few.stderr).not.toContain("inotify");
    // Enough homes of 8 profiles (or more) each to pass half of this machine's limit.
    let homes = 1;
    while (homes * (perHome + 4 * 8) <= instances / 2) {
      gateway(homes);
      profiles(homes++, 9);
    }
    const many = install(root, "--gate", "--dry-run");
    expect(many.code, many.stderr).toBe(0);
    expect(many.stderr).toContain(
      `media-outbox-gate-secrets.path and media-outbox-gate-secrets-new.path watch ${homes * perHome} files, and the watches of ${homes * 8} Hermes profile(s) ${homes * 32} more, and systemd gives each its own inotify instance, of the ${instances} root may have`,
    );
  });

  it("--gate names what each gateway's unit gives it for gate-secrets, after the Hermes files: its EnvironmentFile= files (\"?\" for one marked -) and each unit file or drop-in whose Environment= sets a secret; never media-outbox's own, never a value", () => {
    const root = path.join(t.home, "target");
    const VALUE = "Hd8sKq2Lm5Np7Rt9Vx3ZdropIn";
    const d = `/${ETC}/hermes-gateway.service.d`;
    put(path.join(root, ETC, "hermes-gateway.service"), "[Service]\nUser=nobody\nEnvironment=HERMES_HOME=/home/agent/.hermes\nEnvironmentFile=/etc/hermes/gateway.env\nEnvironmentFile=-/etc/hermes/later.env\nExecStart=/bin/true\n");
    put(path.join(root, "etc/hermes/gateway.env"), `OPENAI_API_KEY=${VALUE}\n`, 0o600);
    put(path.join(root, "home/agent/.hermes/.env"), "TOKEN=secretsecret\n", 0o600);
    put(path.join(root, d, "10-keys.conf"), `[Service]\nEnvironment=OPENAI_API_KEY=${VALUE}\n`, 0o600);
    put(path.join(root, d, "20-plain.conf"), "[Service]\nEnvironment=LOG_LEVEL=debug HERMES_HOME=/home/agent/.hermes\n");
    // media-outbox's own drop-in and environment file, from an install before: not named.
    put(path.join(root, d, "90-media-outbox.conf"), `[Service]\nEnvironmentFile=${d}/media-outbox.env\n`);
    put(path.join(root, d, "media-outbox.env"), "HERMES_MEDIA_ALLOW_DIRS='/srv/media-outbox/outbox'\n");
    const r = install(root, "--gate", "--dry-run");
    expect(r.code, r.stderr).toBe(0);
    const gateLine = r.stdout.split("\n").find((l) => l.startsWith("ExecStartPre=-+"))!;
    const systemdWords = ["nobody:environment-file:/etc/hermes/gateway.env", "nobody:?environment-file:/etc/hermes/later.env", `nobody:unit-file:${d}/10-keys.conf`];
    expect(gateLine.startsWith(`ExecStartPre=-+${process.execPath} ${BIN} gate-secrets --into /run/media-outbox-gate --watch-profiles nobody:/home/agent/.hermes/.env `), gateLine).toBe(true);
    expect(gateLine.endsWith(` nobody:?/home/agent/.hermes/${HERMES_STORE_DIRS.at(-1)}/ ${systemdWords.join(" ")} nobody:?profiles:/home/agent/.hermes/profiles/ nobody:?gateway:/etc/systemd/system/hermes-gateway.service`), gateLine).toBe(true);
    expect(gateLine).not.toContain("media-outbox.env");
    expect(gateLine).not.toContain("90-media-outbox.conf");
    expect(gateLine).not.toContain("20-plain.conf");
    expect(gateLine).not.toContain(":/etc/systemd/system/hermes-gateway.service ");
    // Watched like the others: those there now by one path unit, the missing one by the other.
    const unitText = (name: string) => r.stdout.split(/^==> /m).find((f) => f.startsWith(path.join(root, ETC, name)))!;
    const watchedBy = (name: string) => unitText(name).split("\n").filter((l) => l.startsWith("PathChanged=")).map((l) => l.slice("PathChanged=".length));
    expect(watchedBy("media-outbox-gate-secrets.path")).toEqual(expect.arrayContaining(["/etc/hermes/gateway.env", `${d}/10-keys.conf`]));
    expect(watchedBy("media-outbox-gate-secrets-new.path")).toContain("/etc/hermes/later.env");
    expect(r.stdout + r.stderr).not.toContain(VALUE);
  });

  it("--gate names the stores of each agent user's home that local mode reads (~/.docker/config.json, other agents' CLIs' OAuth tokens), in the home /etc/passwd gives it, optional, read as that user, after every other file, watched like the Hermes stores; none for a home that is not there", () => {
    const root = path.join(t.home, "target");
    // The target's own users: the gateway's (agent) has a home there, the one named with --agent-user (other) has none.
    put(path.join(root, "etc/passwd"), ["root:x:0:0:root:/root:/bin/bash", "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin", "agent:x:1500:1500::/home/agent:/bin/bash", "other:x:1501:1501::/home/other:/bin/bash", ""].join("\n"));
    put(path.join(root, ETC, "hermes-gateway.service"), "[Service]\nUser=agent\nEnvironment=HERMES_HOME=/home/agent/.hermes\nEnvironmentFile=/etc/hermes/gateway.env\nExecStart=/bin/true\n");
    put(path.join(root, "etc/hermes/gateway.env"), "OPENAI_API_KEY=Qm7vLx2Pw9Zk4Tr8Yb3N\n", 0o600);
    put(path.join(root, "home/agent/.hermes/.env"), "TOKEN=secretsecret\n", 0o600);
    put(path.join(root, "home/agent/.docker/config.json"), '{"auths": {}}\n', 0o600);
    const r = install(root, "--gate", "--dry-run", "--agent-user", "other");
    expect(r.code, r.stderr).toBe(0);
    const gateLine = r.stdout.split("\n").find((l) => l.startsWith("ExecStartPre=-+"))!;
    const homeWords = USER_HOME_SECRET_FILES.map((store) => `agent:?/home/agent/${store}`).join(" ");
    expect(homeWords).toBe("agent:?/home/agent/.claude/.credentials.json agent:?/home/agent/.qwen/oauth_creds.json agent:?/home/agent/.docker/config.json agent:?/home/agent/.aws/credentials agent:?/home/agent/.pgpass agent:?/home/agent/.git-credentials agent:?/home/agent/.netrc agent:?/home/agent/.codex/auth.json");
    // After the gateway's own files: the copies of those keep the numbers they had.
    expect(gateLine.endsWith(` agent:environment-file:/etc/hermes/gateway.env ${homeWords} agent:?profiles:/home/agent/.hermes/profiles/ agent:?gateway:/etc/systemd/system/hermes-gateway.service`), gateLine).toBe(true);
    expect(gateLine).not.toContain("/home/other");
    // Watched as the Hermes stores are: the one there by one path unit, the others by the other.
    const unitText = (name: string) => r.stdout.split(/^==> /m).find((f) => f.startsWith(path.join(root, ETC, name)))!;
    const watchedBy = (name: string) => unitText(name).split("\n").filter((l) => l.startsWith("PathChanged=")).map((l) => l.slice("PathChanged=".length));
    expect(watchedBy("media-outbox-gate-secrets.path")).toEqual(["/home/agent/.hermes/.env", "/etc/hermes/gateway.env", "/home/agent/.docker/config.json", "/etc/systemd/system/hermes-gateway.service"]);
    expect(watchedBy("media-outbox-gate-secrets-new.path").filter((f) => !f.startsWith("/home/agent/.hermes"))).toEqual(["/home/agent/.claude/.credentials.json", "/home/agent/.qwen/oauth_creds.json", "/home/agent/.aws/credentials", "/home/agent/.pgpass", "/home/agent/.git-credentials", "/home/agent/.netrc", "/home/agent/.codex/auth.json"]);
  });

  it("--gate refuses a gateway whose agents would never ask the gate: MEDIA_OUTBOX_DIR set by its unit or by a Hermes .env", () => {
    const root = path.join(t.home, "target");
    const unit = path.join(root, ETC, "hermes-gateway.service");
    put(unit, "[Service]\nUser=nobody\nEnvironment=HERMES_HOME=/home/agent/.hermes MEDIA_OUTBOX_DIR=/home/agent/.hermes/media_outbox\nExecStart=/bin/true\n");
    const before = snapshot(root);
    const byUnit = install(root, "--gate", "--dry-run");
    expect(byUnit.code).toBe(2);
    expect(byUnit.stderr).toContain(`MEDIA_OUTBOX_DIR is set for the agents by hermes-gateway.service (in /${ETC}/hermes-gateway.service)`);
    expect(byUnit.stdout).toBe("");
    expect(snapshot(root)).toEqual(before);
    put(unit, "[Service]\nUser=nobody\nEnvironment=HERMES_HOME=/home/agent/.hermes\nExecStart=/bin/true\n");
    put(path.join(root, "home/agent/.hermes/.env"), "TOKEN=secretsecret\nexport MEDIA_OUTBOX_DIR=/home/agent/out\n", 0o600);
    const withEnv = snapshot(root);
    const byEnv = install(root, "--gate", "--dry-run");
    expect(byEnv.code).toBe(2);
    expect(byEnv.stderr).toContain("MEDIA_OUTBOX_DIR is set for the agents by /home/agent/.hermes/.env");
    expect(byEnv.stderr.split("\n").filter((l) => l !== "")).toHaveLength(1);
    expect(snapshot(root)).toEqual(withEnv);
    // A profile's .env, loaded when Hermes runs that profile, likewise.
    put(path.join(root, "home/agent/.hermes/.env"), "TOKEN=secretsecret\n", 0o600);
    put(path.join(root, "home/agent/.hermes/profiles/work/.env"), "MEDIA_OUTBOX_DIR=/home/agent/out\n", 0o600);
    const byProfile = install(root, "--gate", "--dry-run");
    expect(byProfile.code).toBe(2);
    expect(byProfile.stderr).toContain("MEDIA_OUTBOX_DIR is set for the agents by /home/agent/.hermes/profiles/work/.env");
    fs.rmSync(path.join(root, "home/agent/.hermes/profiles"), { recursive: true });
    // A managed .env, where the gateway's HERMES_MANAGED_DIR puts it or in /etc/hermes: every agent of the gateway loads it (one rule with gate-secrets: hermes-environment.ts dotenvSetsLocalOutbox).
    put(path.join(root, "home/agent/.hermes/.env"), "TOKEN=secretsecret\nHERMES_MANAGED_DIR=/opt/managed\n", 0o600);
    put(path.join(root, "opt/managed/.env"), "MEDIA_OUTBOX_DIR=/home/agent/out\n");
    const byManaged = install(root, "--gate", "--dry-run");
    expect(byManaged.code).toBe(2);
    expect(byManaged.stderr.split("\n").filter((l) => l !== "")).toEqual([
      "media-outbox: usage error: MEDIA_OUTBOX_DIR is set for the agents by /opt/managed/.env: their prepare would publish into that directory instead of handing files to the gate. Remove it there, then run install again",
    ]);
    put(path.join(root, "home/agent/.hermes/.env"), "TOKEN=secretsecret\n", 0o600);
    put(path.join(root, "etc/hermes/.env"), "MEDIA_OUTBOX_DIR=/home/agent/out\n");
    const byEtcHermes = install(root, "--gate", "--dry-run");
    expect(byEtcHermes.code).toBe(2);
    expect(byEtcHermes.stderr).toContain("MEDIA_OUTBOX_DIR is set for the agents by /etc/hermes/.env:");
    fs.rmSync(path.join(root, "etc/hermes/.env"));
    expect(install(root, "--gate", "--dry-run").code).toBe(0);
  });

  it("--gate names the Codex CLI's auth.json where each gateway's CODEX_HOME puts it, and the managed scope's .env and config.yaml where its HERMES_MANAGED_DIR does, as its Hermes resolves them (Environment=, EnvironmentFile=, then the Hermes .env and the managed one over them; ~ expanded in CODEX_HOME), optional, read as the gateway's user, last on the line, watched; ~/.codex/auth.json kept; a value it cannot name is a note, escaped", () => {
    const root = path.join(t.home, "target");
    put(path.join(root, "etc/passwd"), ["root:x:0:0:root:/root:/bin/bash", "agent:x:1500:1500::/home/agent:/bin/bash", "other:x:1501:1501::/srv/other-home:/bin/bash", ""].join("\n"));
    const unit = path.join(root, ETC, "hermes-gateway.service");
    const dotEnv = path.join(root, "home/agent/.hermes/.env");
    put(path.join(root, "home/agent/.hermes/auth.json"), "{}\n", 0o600);
    const setUnit = (lines: string) => put(unit, `[Service]\nUser=agent\nEnvironment=HERMES_HOME=/home/agent/.hermes\n${lines}ExecStart=/bin/true\n`);
    const gateLine = (r: { stdout: string }) => r.stdout.split("\n").find((l) => l.startsWith("ExecStartPre=-+"))!;
    const codexWords = (r: { stdout: string }) => gateLine(r).split(" ").filter((w) => w.includes(":?codex-home:"));
    const homeCodex = "agent:?/home/agent/.codex/auth.json";
    // Last on the line, the Hermes home's profiles directory: the endings below are before it.
    const profilesWord = " agent:?profiles:/home/agent/.hermes/profiles/ agent:?gateway:/etc/systemd/system/hermes-gateway.service";
    const dryRun = () => {
      const r = install(root, "--gate", "--dry-run");
      expect(r.code, r.stderr).toBe(0);
      return r;
    };

    // Not set: ~/.codex/auth.json only, as before.
    setUnit("");
    put(dotEnv, "TOKEN=secretsecret\n", 0o600);
    let r = dryRun();
    expect(codexWords(r)).toEqual([]);
    expect(gateLine(r).endsWith(` ${homeCodex}${profilesWord}`), gateLine(r)).toBe(true);
    expect(r.stderr).not.toContain("CODEX_HOME");

    // From the unit's Environment=: named last (the copies before keep their numbers), ~/.codex/auth.json kept; watched like the other stores.
    setUnit("Environment=CODEX_HOME=/srv/codex-agent\n");
    r = dryRun();
    expect(gateLine(r).endsWith(` ${homeCodex} agent:?codex-home:/srv/codex-agent/auth.json${profilesWord}`), gateLine(r)).toBe(true);
    const unitText = (name: string) => r.stdout.split(/^==> /m).find((f) => f.startsWith(path.join(root, ETC, name)))!;
    const watchedBy = (name: string) => unitText(name).split("\n").filter((l) => l.startsWith("PathChanged=")).map((l) => l.slice("PathChanged=".length));
    expect(watchedBy("media-outbox-gate-secrets-new.path")).toContain("/srv/codex-agent/auth.json");
    put(path.join(root, "srv/codex-agent/auth.json"), '{"tokens": {}}\n', 0o600);
    r = dryRun();
    expect(watchedBy("media-outbox-gate-secrets.path")).toContain("/srv/codex-agent/auth.json");

    // From an EnvironmentFile= (which beats Environment=), `~` as Python expands it: the gateway's user's home; `~other`: that user's.
    put(path.join(root, "etc/hermes/gateway.env"), "CODEX_HOME=~/codex-work\n", 0o600);
    setUnit("Environment=CODEX_HOME=/srv/codex-agent\nEnvironmentFile=/etc/hermes/gateway.env\n");
    expect(codexWords(dryRun())).toEqual(["agent:?codex-home:/home/agent/codex-work/auth.json"]);
    put(path.join(root, "etc/hermes/gateway.env"), "CODEX_HOME='  ~other//codex/ '\n", 0o600);
    expect(codexWords(dryRun())).toEqual(["agent:?codex-home:/srv/other-home/codex/auth.json"]);
    // The unit's HOME is the `~` of a Python process.
    setUnit("Environment=HOME=/srv/agent-home CODEX_HOME=~/codex\n");
    expect(codexWords(dryRun())).toEqual(["agent:?codex-home:/srv/agent-home/codex/auth.json"]);

    // The Hermes .env is loaded over the unit's environment; the managed .env over both.
    setUnit("Environment=CODEX_HOME=/srv/codex-agent\n");
    put(dotEnv, 'TOKEN=secretsecret\nexport CODEX_HOME="/srv/codex-from-env"\n', 0o600);
    expect(codexWords(dryRun())).toEqual(["agent:?codex-home:/srv/codex-from-env/auth.json"]);
    put(path.join(root, "etc/hermes/.env"), "CODEX_HOME=/srv/codex-managed\n");
    expect(codexWords(dryRun())).toEqual(["agent:?codex-home:/srv/codex-managed/auth.json"]);
    // A managed scope elsewhere ($HERMES_MANAGED_DIR, here from the Hermes .env): its .env and config.yaml are named too (the gate reads /etc/hermes itself), and its .env is the one loaded last.
    const managedWords = (r: { stdout: string }) => gateLine(r).split(" ").filter((w) => w.includes(":?managed:"));
    put(dotEnv, 'TOKEN=secretsecret\nexport CODEX_HOME="/srv/codex-from-env"\nHERMES_MANAGED_DIR=/opt/managed/\n', 0o600);
    r = dryRun();
    expect(managedWords(r)).toEqual(["agent:?managed:/opt/managed/.env", "agent:?managed:/opt/managed/config.yaml"]);
    expect(codexWords(r)).toEqual(["agent:?codex-home:/srv/codex-from-env/auth.json"]);
    put(path.join(root, "opt/managed/.env"), "CODEX_HOME=/srv/codex-managed-elsewhere\nMEDIA_OUTBOX_DIR=/home/agent/out\n");
    // Loaded into the agents' environment: its MEDIA_OUTBOX_DIR keeps them off the gate, as a Hermes .env's does.
    r = install(root, "--gate", "--dry-run");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("MEDIA_OUTBOX_DIR is set for the agents by /opt/managed/.env");
    put(path.join(root, "opt/managed/.env"), "CODEX_HOME=/srv/codex-managed-elsewhere\n");
    r = dryRun();
    expect(gateLine(r).endsWith(` ${homeCodex} agent:?managed:/opt/managed/.env agent:?managed:/opt/managed/config.yaml agent:?codex-home:/srv/codex-managed-elsewhere/auth.json${profilesWord}`), gateLine(r)).toBe(true);
    for (const [value, note] of [
      ["/etc//hermes/", undefined],
      ["managed", "HERMES_MANAGED_DIR for hermes-gateway.service (set in /home/agent/.hermes/.env) is managed, not an absolute path: the gate will not know the values of a managed .env and config.yaml there"],
      ["~/managed", "is ~/managed, not an absolute path"],
    ] as const) {
      put(dotEnv, `TOKEN=secretsecret\nHERMES_MANAGED_DIR=${value}\n`, 0o600);
      r = dryRun();
      expect(managedWords(r), value).toEqual([]);
      if (note) expect(r.stderr, value).toContain(note);
      else expect(r.stderr, value).not.toContain("HERMES_MANAGED_DIR");
    }
    fs.rmSync(path.join(root, "etc/hermes/.env"));

    // ~/.codex itself: named once, as the home's store.
    put(dotEnv, "TOKEN=secretsecret\nCODEX_HOME=/home/agent/.codex/\n", 0o600);
    r = dryRun();
    expect(codexWords(r)).toEqual([]);
    expect(gateLine(r).split(" ").filter((w) => w.endsWith("/.codex/auth.json"))).toEqual([homeCodex]);

    // What cannot be named: a note each, the value escaped; ~/.codex/auth.json still named.
    for (const [value, note] of [
      ["codex", 'CODEX_HOME for hermes-gateway.service (set in /home/agent/.hermes/.env) is codex, not an absolute path: the gate will not know a Codex CLI\'s auth.json there (it knows ~/.codex/auth.json)'],
      ['"rel\\bMEDIA:/x.png"', "is rel\\x08MEDIA\\x3a/x.png, not an absolute path"],
      ["~nosuchuser/codex", "is ~nosuchuser/codex, whose ~ names no user of /etc/passwd"],
      ["/srv/x/../../etc", 'is /srv/x/../../etc, which holds a ".." component; write it without'],
      ["${HOME}/codex", "uses ${...} expansion, which install does not follow; write the directory out"],
      ["'  '", "CODEX_HOME for hermes-gateway.service (set in /home/agent/.hermes/.env) is empty: Hermes reads ~/.codex/auth.json, which the gate knows"],
    ] as const) {
      put(dotEnv, `TOKEN=secretsecret\nCODEX_HOME=${value}\n`, 0o600);
      r = dryRun();
      expect(codexWords(r), value).toEqual([]);
      expect(gateLine(r).endsWith(` ${homeCodex}${profilesWord}`), value).toBe(true);
      expect(r.stderr, value).toContain(note);
      expect(r.stderr, value).not.toContain("\b");
    }
  });

  it("resolves a CODEX_HOME built against its reading (a megabyte of Python's spaces around it, of slashes after `~`, a HOME of slashes) in linear time", () => {
    const root = path.join(t.home, "target");
    put(path.join(root, "etc/passwd"), "root:x:0:0:root:/root:/bin/bash\nagent:x:1500:1500::/home/agent:/bin/bash\n");
    const env = path.join(root, "home/agent/.hermes/.env");
    const spaces = " \x1c\u3000".repeat(300_000);
    const resolve = (environment: UnitHermesEnvironment = {}) => gatewayEnvironmentStores({ unit: "hermes-gateway.service", user: "agent", environment }, { root });
    put(env, `CODEX_HOME="${spaces}~${"/".repeat(1_000_000)}codex${spaces}"\nHERMES_MANAGED_DIR="${spaces}${"/".repeat(1_000_000)}managed${spaces}"\n`);
    expect(resolve()).toEqual({ files: [{ file: "/managed/.env", store: "managed" }, { file: "/managed/config.yaml", store: "managed" }, { file: "/home/agent/codex/auth.json", store: "codex-home" }], notes: [], credentialNotes: [] });
    expect(resolve({ HOME: { value: "/".repeat(1_000_000), from: "/etc/systemd/system/hermes-gateway.service" } }).files.at(-1)).toEqual({ file: "/codex/auth.json", store: "codex-home" });
    put(env, `CODEX_HOME="${spaces}x${spaces}"\nHERMES_MANAGED_DIR=${"~".repeat(1_000_000)}\n`);
    expect(resolve().notes).toEqual([expect.stringMatching(/^HERMES_MANAGED_DIR .* not an absolute path/), expect.stringMatching(/is x, not an absolute path/)]);
    put(env, `CODEX_HOME=/${"../".repeat(500_000)}\n`);
    expect(resolve().notes).toEqual([expect.stringMatching(/holds a "\.\." component/)]);
    // The credential files' variables, built the same way: the shared Nous store's directory stripped and `~` expanded, a key's path taken as set.
    put(env, `HERMES_SHARED_AUTH_DIR="${spaces}~${"/".repeat(1_000_000)}nous${spaces}"\nVERTEX_CREDENTIALS_PATH=${"/".repeat(1_000_000)}key.json\nGOOGLE_APPLICATION_CREDENTIALS=/${"../".repeat(500_000)}\n`);
    const stores = resolve();
    expect(stores.files).toEqual([
      { file: "/home/agent/nous/nous_auth.json", store: "nous-shared" },
      { file: "/key.json", store: "vertex-credentials" },
    ]);
    expect(stores.credentialNotes).toEqual([expect.stringMatching(/^GOOGLE_APPLICATION_CREDENTIALS .* holds a "\.\." component/)]);
  });

describe("install hermes-config", () => {
  const YAML_TEXT = `# Hermes configuration
model: claude-sonnet   # the default model

gateway:
  # where the gateway listens
  port: 8080
  media_delivery_allow_dirs:
    - /srv/shared   # team share
    - '~/Pictures'
  telegram: {token_env: TG_TOKEN}

# trailing comment
logging:
  level: info
`;

  function config(profile?: string): string {
    return profile ? path.join(t.home, ".hermes/profiles", profile, "config.yaml") : path.join(t.home, ".hermes/config.yaml");
  }

  it("adds the outbox to the list, keeping every comment and byte around it, with a backup", () => {
    const file = put(config(), YAML_TEXT, 0o600);
    const r = cli(["install", "hermes-config"], { env: t.env });
    expect(r.code, r.stderr).toBe(0);
    const expected = YAML_TEXT.replace("    - '~/Pictures'\n", `    - '~/Pictures'\n    - ${OUTBOX()}\n`);
    expect(fs.readFileSync(file, "utf8")).toBe(expected);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const backup = /^backup (.+)$/m.exec(r.stdout)![1]!;
    expect(fs.readFileSync(backup, "utf8")).toBe(YAML_TEXT);
    expect(fs.statSync(backup).mode & 0o777).toBe(0o600);
    // Again: nothing to do, nothing written.
    const again = cli(["install", "hermes-config"], { env: t.env });
    expect(again.code).toBe(0);
    expect(again.stderr).toContain("already lists");
    expect(fs.readFileSync(file, "utf8")).toBe(expected);
  });

  it("edits a profile's flow list, adds a missing key, adds a missing gateway section", () => {
    const flow = put(config("work"), "gateway:\n  media_delivery_allow_dirs: [/srv/a, /srv/b]  # flow\nother: 1\n");
    expect(cli(["install", "hermes-config", "--profile", "work"], { env: t.env }).code).toBe(0);
    expect(fs.readFileSync(flow, "utf8")).toBe(`gateway:\n  media_delivery_allow_dirs: [/srv/a, /srv/b, ${OUTBOX()}]  # flow\nother: 1\n`);

    const noKey = put(config("home"), "gateway:\n    port: 1   # four-space indent\n# after\nx: y\n");
    expect(cli(["install", "hermes-config", "--profile", "home"], { env: t.env }).code).toBe(0);
    expect(fs.readFileSync(noKey, "utf8")).toBe(`gateway:\n    port: 1   # four-space indent\n    media_delivery_allow_dirs:\n      - ${OUTBOX()}\n# after\nx: y\n`);

    const noGateway = put(config("bare"), "# only a comment\nmodel: x");
    expect(cli(["install", "hermes-config", "--profile", "bare"], { env: t.env }).code).toBe(0);
    expect(fs.readFileSync(noGateway, "utf8")).toBe(`# only a comment\nmodel: x\ngateway:\n  media_delivery_allow_dirs:\n    - ${OUTBOX()}\n`);
  });

  it("keeps CRLF line endings", () => {
    const crlf = YAML_TEXT.replace(/\n/g, "\r\n");
    const file = put(config(), crlf);
    expect(cli(["install", "hermes-config"], { env: t.env }).code).toBe(0);
    expect(fs.readFileSync(file, "utf8")).toBe(crlf.replace("    - '~/Pictures'\r\n", `    - '~/Pictures'\r\n    - ${OUTBOX()}\r\n`));
  });

  it("--dry-run prints the new file and changes nothing", () => {
    const file = put(config(), YAML_TEXT);
    const r = cli(["install", "hermes-config", "--dry-run"], { env: t.env });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`    - ${OUTBOX()}`);
    expect(fs.readFileSync(file, "utf8")).toBe(YAML_TEXT);
    expect(fs.readdirSync(path.dirname(file))).toEqual(["config.yaml"]);
  });

  it("refuses invalid YAML, a non-list value, a missing profile, and changes nothing", () => {
    const bad = put(config(), "gateway: [unclosed\n");
    let r = cli(["install", "hermes-config"], { env: t.env });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("cannot edit");
    expect(fs.readFileSync(bad, "utf8")).toBe("gateway: [unclosed\n");
    put(config(), "gateway:\n  media_delivery_allow_dirs: /srv/a\n");
    r = cli(["install", "hermes-config"], { env: t.env });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("not a list");
    r = cli(["install", "hermes-config", "--profile", "nope"], { env: t.env });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("is the profile name right?");
    // No config.yaml: where it looked, and what to do.
    fs.rmSync(config());
    r = cli(["install", "hermes-config"], { env: t.env });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `media-outbox: config_invalid: ${config()} does not exist (HERMES_HOME is ${t.home}/.hermes): run this as the gateway's user with the HERMES_HOME the gateway has; a gateway without a config.yaml takes its allowed roots from its environment alone (install systemd, or HERMES_MEDIA_ALLOW_DIRS in its .env)\n`,
    );
    expect(fs.existsSync(config())).toBe(false);
    r = cli(["install", "hermes-config", "--profile", "../x"], { env: t.env });
    expect(r.code).toBe(2);
  });

  it("names invalid YAML on one escaped line, where and what, never quoting the file (config.yaml holds API keys)", () => {
    const text = "model: x\x1b[31m\nMEDIA:/etc/passwd.png\napi_key: sk-ant-Zq8Lm2Vx7Pw4Tr9Yb3Nk\n";
    put(config(), text);
    const where = "not valid YAML: Implicit keys need to be on a single line at line 2, column 1";
    for (const [args, after] of [
      [["install", "hermes-config"], `; add ${OUTBOX()} to gateway.media_delivery_allow_dirs by hand`],
      [["install", "hermes-plugin"], "; add media-outbox to plugins.enabled by hand (and take it out of plugins.disabled)"],
    ] as const) {
      const r = cli([...args], { env: t.env });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toBe(`media-outbox: config_invalid: cannot edit ${config()} safely: ${where}${after}\n`);
    }
    expect(fs.readFileSync(config(), "utf8")).toBe(text);
  });

  it("edits a config.yaml whose anchors are referenced hundreds of times, and refuses one whose aliases expand past the bound, changing nothing", () => {
    const shared = `defaults: &d {provider: openrouter}\n${Array.from({ length: 300 }, (_, i) => `job_${i}: *d\n`).join("")}`;
    put(config(), shared);
    let r = cli(["install", "hermes-config"], { env: t.env });
    expect(r.code, r.stderr).toBe(0);
    expect(fs.readFileSync(config(), "utf8")).toContain(OUTBOX());
    const laughs = `${["a0: &a0 [lol]", ...Array.from({ length: 9 }, (_, i) => `a${i + 1}: &a${i + 1} [${Array(10).fill(`*a${i}`).join(", ")}]`)].join("\n")}\n`;
    put(config(), laughs);
    r = cli(["install", "hermes-plugin"], { env: t.env });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toBe(`media-outbox: config_invalid: cannot edit ${config()} safely: not read: its aliases expand to more than 10000 references (a guard against exponential expansion; Hermes' own reader would take as long); add media-outbox to plugins.enabled by hand (and take it out of plugins.disabled)\n`);
    expect(fs.readFileSync(config(), "utf8")).toBe(laughs);
  });
});

describe("the hardened services at run time", () => {
  /** Expands a systemd syscall group (nested groups included) with systemd-analyze syscall-filter. */
  function group(name: string, seen = new Set<string>()): Set<string> {
    const out = new Set<string>();
    if (seen.has(name)) return out;
    seen.add(name);
    const r = run("systemd-analyze", ["syscall-filter", name]);
    for (const raw of r.stdout.split("\n").slice(1)) {
      const line = raw.trim();
      if (line === "" || line.startsWith("#")) continue;
      if (line.startsWith("@")) for (const s of group(line, seen)) out.add(s);
      else out.add(line);
    }
    return out;
  }

  it("janitor and watch run under their units' restrictions (systemd-run), or under an emulated syscall filter where no systemd runs", () => {
    const state = run("systemctl", ["is-system-running"]);
    const systemdRuns = ["running", "degraded"].includes(state.stdout.trim());
    // doctor states the same finding in its report, with the reason.
    const d = cli(["doctor", "--json", "--no-probe", "--unit", "hermes-none.service"], { env: t.env });
    const report = JSON.parse(d.stdout) as { systemd: { running: boolean; detail: string } };
    expect(report.systemd.running).toBe(systemdRuns);
    const janitorBuilt = fs.existsSync(path.join(path.dirname(BIN), "../dist/commands/janitor.js"));

    if (systemdRuns) {
      // PrivateTmp=yes hides the temporary home: this run's outbox and source live in the package directory.
      const base = fs.mkdtempSync(path.join(path.dirname(BIN), "..", ".systemd-run-"));
      try {
        const outbox = path.join(base, "outbox");
        const root = gatewayRoot(t.home);
        expect(install(root, "--outbox", outbox).code).toBe(0);
        fs.mkdirSync(outbox, { mode: 0o700 });
        fs.mkdirSync(path.join(base, ".outbox-state"), { mode: 0o700 });
        const src = write(base, "chart.png", png(7));
        const unitText = fs.readFileSync(path.join(root, ETC, "media-outbox-janitor.service"), "utf8");
        // A transient service with the janitor unit's own [Service] settings.
        const props = unitText
          .split("\n")
          .filter((l) => /^[A-Z]\w+=/.test(l) && !/^(Type|ExecStart|User|Group)=/.test(l))
          .flatMap((l) => ["-p", l]);
        const under = (...args: string[]) => run("systemd-run", ["--wait", "--pipe", "--collect", ...props, process.execPath, BIN, ...args]);
        const r = under("prepare", "--outbox", outbox, src);
        expect(r.code, r.stderr).toBe(0);
        expect(r.stdout).toContain(`MEDIA:${outbox}/chart.png`);
        if (janitorBuilt) {
          const j = under("janitor", "--outbox", outbox);
          expect(j.code, j.stderr).toBe(0);
        }
      } finally {
        fs.rmSync(base, { recursive: true, force: true });
      }
      return;
    }
    const root = gatewayRoot(t.home);
    expect(install(root, "--with-watch").code).toBe(0);
    const unitText = fs.readFileSync(path.join(root, ETC, "media-outbox-janitor.service"), "utf8");
    const src = write(t.home, "chart.png", png(7));
    console.warn(`no systemd manager runs here (${report.systemd.detail}): running media-outbox under the units' syscall filter emulated with strace`);
    expect(report.systemd.detail).toMatch(/no systemd manager is running|not installed|reports/);
    const strace = which("strace");
    if (!strace) {
      console.warn("strace is not installed either: only the unit files were checked (verify, security)");
      expect(strace).toBeUndefined();
      return;
    }
    // The filter as the unit states it: allowed = @system-service + @pkey - @privileged - @resources; everything else EPERM.
    expect(unitText).toContain("SystemCallFilter=@system-service @pkey\nSystemCallFilter=~@privileged @resources\nSystemCallErrorNumber=EPERM");
    const allowed = new Set([...group("@system-service"), ...group("@pkey")]);
    for (const s of [...group("@privileged"), ...group("@resources")]) allowed.delete(s);
    const denied = [...group("@known")].filter((s) => !allowed.has(s));
    expect(denied).toContain("setrlimit");
    expect(denied).not.toContain("pkey_alloc");
    const inject = denied.map((s) => `?${s}`).join(",");
    const emulate = (args: string[]) =>
      run(strace, ["-f", "-qq", "-o", "/dev/null", "-e", `trace=${inject}`, "-e", `inject=${inject}:error=EPERM`, process.execPath, ...args], { env: t.env });
    // prepare: the work janitor and watch share (files, hashing, publication).
    const p = emulate([BIN, "prepare", "--outbox", t.outbox, src]);
    expect(p.stderr).toBe("");
    expect(p.stdout).toBe(`MEDIA:${t.outbox}/chart.png\n`);
    // The janitor and watch bundles, where this tree has them; otherwise node's own start-up and an inotify watch.
    const j = janitorBuilt ? emulate([BIN, "janitor", "--outbox", t.outbox]) : emulate(["-e", "require('fs').watch(process.argv[1]).close(); console.log('ok')", t.outbox]);
    expect(j.code, j.stderr).toBe(0);
  });
});

describe("install and uninstall systemd --system by a user other than root", () => {
  it("is told to run it as root (exit 2, one line), before anything is read or written; --dry-run still shows the plan", () => {
    const root = gatewayRoot(t.home);
    fs.chmodSync(t.home, 0o755);
    const asNobody = (...args: string[]) =>
      run("setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", process.execPath, BIN, ...args], { env: { PATH: process.env.PATH, HOME: t.home } });
    for (const command of ["install", "uninstall"]) {
      const r = asNobody(command, "systemd", "--system");
      expect(r.code, r.stderr).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr).toBe(
        `media-outbox: usage error: ${command} systemd --system changes /etc/systemd/system and /var/lib/media-outbox, which only root may: run it as root (sudo media-outbox ${command} systemd ...)${command === "install" ? "; --user installs units of your own user, --dry-run shows what it would write" : ""}\n`,
      );
    }
    // Under --root the tree is the caller's: no root needed (nobody cannot write this one, so only the dry run is tried).
    const dry = asNobody("install", "systemd", "--root", root, "--dry-run");
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain("media-outbox-janitor.service");
  });
});

describe("install systemd --user with a running (fake) systemd", () => {
  function setup(environmentAfterReload: string) {
    const dir = path.join(t.home, ".config/systemd/user");
    const unit = put(path.join(dir, "hermes-gateway.service"), "[Service]\nExecStart=/bin/true\nEnvironment=HERMES_MEDIA_ALLOW_DIRS=/srv/x\n");
    const fake = path.join(t.home, "fake-systemd");
    const env = { ...t.env, MEDIA_OUTBOX_SYSTEMCTL: fakeSystemctl(fake) };
    put(path.join(fake, "state"), "running\n");
    put(path.join(fake, "list-unit-files"), "hermes-gateway.service enabled enabled\n");
    // What the manager reports: the unit's files, and (after daemon-reload) its environment.
    put(path.join(fake, "show-hermes-gateway.service"), `LoadState=loaded\nFragmentPath=${unit}\nDropInPaths=\nEnvironment=${environmentAfterReload}\n`);
    const calls = () => (fs.existsSync(path.join(fake, "calls")) ? fs.readFileSync(path.join(fake, "calls"), "utf8") : "");
    return { dir, env, calls };
  }

  it("reloads, enables the timer, checks the reloaded unit, restarts with --restart; uninstall disables and restores", () => {
    const { dir, env, calls } = setup(`HERMES_MEDIA_ALLOW_DIRS=/srv/x:${t.outbox}`);
    const before = snapshot(dir);
    const r = cli(["install", "systemd", "--user", "--restart"], { env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("ran: systemctl --user daemon-reload");
    expect(r.stdout).toContain("ran: systemctl --user enable --now media-outbox-janitor.timer");
    expect(r.stdout).toContain("ran: systemctl --user try-restart hermes-gateway.service");
    expect(calls()).toMatch(/^daemon-reload$/m);
    expect(calls()).toMatch(/^show hermes-gateway\.service -p LoadState -p Environment/m);
    expect(fs.readFileSync(path.join(dir, "hermes-gateway.service.d/90-media-outbox.conf"), "utf8")).toContain(`Environment=HERMES_MEDIA_ALLOW_DIRS=/srv/x:${t.outbox}`);
    // ReadWritePaths= needs them: install created the outbox and its state directory, private.
    expect(fs.statSync(t.outbox).mode & 0o777).toBe(0o700);
    expect(fs.statSync(path.join(t.home, ".hermes/.media_outbox-state")).mode & 0o777).toBe(0o700);

    const u = cli(["uninstall", "systemd", "--user"], { env });
    expect(u.code, u.stderr).toBe(0);
    expect(calls()).toMatch(/^disable --now media-outbox-janitor\.timer$/m);
    expect(snapshot(dir)).toEqual(before);
    expect(fs.existsSync(path.join(t.home, ".local/state/media-outbox/install-manifest.json"))).toBe(false);
  });

  it("uninstall prints what it did in the order it did it, and says whether reset-failed had anything to reset", () => {
    const { dir, env, calls } = setup(`HERMES_MEDIA_ALLOW_DIRS=/srv/x:${t.outbox}`);
    expect(cli(["install", "systemd", "--user", "--with-watch"], { env }).code).toBe(0);
    const u = cli(["uninstall", "systemd", "--user"], { env });
    expect(u.code, u.stderr).toBe(0);
    expect(u.stdout.split("\n")).toEqual([
      "ran: systemctl --user disable --now media-outbox-janitor.timer",
      "ran: systemctl --user disable --now media-outbox-watch.service",
      // The stamp file systemd keeps for Persistent=true, while the timer is still loaded.
      "ran: systemctl --user clean --what=state media-outbox-janitor.timer",
      `removed ${dir}/media-outbox-watch.service`,
      `removed ${dir}/media-outbox-janitor.timer`,
      `removed ${dir}/media-outbox-janitor.service`,
      `removed ${dir}/hermes-gateway.service.d/90-media-outbox.conf`,
      "ran: systemctl --user daemon-reload",
      // None had failed: reset-failed, given units that are not loaded, would exit 1 (it is not run).
      "nothing to reset: no media-outbox unit is in the failed state",
      "",
    ]);
    expect(calls()).not.toMatch(/^reset-failed/m);
    // The outbox and its state stay (the user's files), and it says so.
    expect(u.stderr).toContain(`media-outbox: kept ${t.outbox} and ${t.home}/.hermes/.media_outbox-state with the published files and state (no janitor sweeps them now): remove them by hand when you no longer need them\n`);
    expect(fs.existsSync(t.outbox)).toBe(true);
    expect(calls()).toMatch(/^disable --now media-outbox-watch\.service\nclean --what=state media-outbox-janitor\.timer$/m);

    // A unit that failed stays loaded (and listed as failed) after its file is gone: it is reset, and only it.
    expect(cli(["install", "systemd", "--user", "--with-watch"], { env }).code).toBe(0);
    put(path.join(env.MEDIA_OUTBOX_SYSTEMCTL!, "..", "list-units"), "media-outbox-watch.service not-found failed failed media-outbox-watch.service\n");
    const again = cli(["uninstall", "systemd", "--user"], { env });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout.split("\n").slice(-3)).toEqual(["ran: systemctl --user daemon-reload", "ran: systemctl --user reset-failed media-outbox-watch.service", ""]);
    expect(calls()).toMatch(/^list-units --all --state=failed --plain --no-legend --full media-outbox-janitor\.service media-outbox-janitor\.timer media-outbox-watch\.service\nreset-failed media-outbox-watch\.service$/m);
  });

  it("creates every directory the services write: a quarantine outside the state directory, the log file's directory, the drop folders", () => {
    const { dir, env } = setup(`HERMES_MEDIA_ALLOW_DIRS=/srv/x:${t.outbox}`);
    const quarantine = path.join(t.home, "quarantine");
    const logDir = path.join(t.home, "logs/media-outbox");
    const drop = path.join(t.home, "drop/agent");
    const config = put(path.join(t.home, "media-outbox.json"), JSON.stringify({ logFile: path.join(logDir, "media-outbox.log"), watch: { drop: [drop], quarantine } }));
    const r = cli(["install", "systemd", "--user", "--with-watch", "--config", config], { env });
    expect(r.code, r.stderr).toBe(0);
    // Without --restart: the command to run is printed, and nothing suggests installing again (a second install is refused).
    expect(r.stderr).toContain("only after a restart: run the try-restart command above\n");
    expect(r.stderr).not.toContain("install again");
    // Made for the services (in system units a missing ReadWritePaths= entry fails the start with 226/NAMESPACE; user units have none).
    for (const unit of ["media-outbox-janitor.service", "media-outbox-watch.service"]) expect(fs.readFileSync(path.join(dir, unit), "utf8")).not.toMatch(/^ReadWritePaths=/m);
    for (const p of [quarantine, logDir, drop]) expect(fs.statSync(p).mode & 0o777, p).toBe(0o700);
  });

  it("warns (exit 1) when the reloaded manager still does not list the outbox", () => {
    const { env } = setup("HERMES_MEDIA_ALLOW_DIRS=/srv/x");
    const r = cli(["install", "systemd", "--user"], { env });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("after daemon-reload, systemctl show hermes-gateway.service does not list the outbox");
    expect(r.stdout).toContain("run: systemctl --user try-restart hermes-gateway.service");
  });
});

