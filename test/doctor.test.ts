// doctor against a fake systemctl (a real executable on MEDIA_OUTBOX_SYSTEMCTL): healthy, then each broken variant.
import { spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fakeSystemctl, gatewayRoot, put } from "./deploy-helpers";
import { type Gate, killAll, startGate, track } from "./gate-helpers";
import { BIN, cli, makeHome, png, write } from "./helpers";
import type { DoctorCheck as Check } from "../src/deploy/doctor.js";

interface Report {
  ok: boolean;
  outbox: string;
  scope: string;
  systemd: { running: boolean; detail: string };
  checks: Check[];
}

let t: ReturnType<typeof makeHome>;
let fake: string;
let env: NodeJS.ProcessEnv;

const GATEWAY = "hermes-gateway.service";

function gatewayShow(environment: string, extra = ""): string {
  return `LoadState=loaded\nEnvironment=${environment}\nEnvironmentFiles=${extra}\nUnsetEnvironment=\nUser=\nActiveState=active\nMainPID=0\n`;
}

function healthy(): void {
  const put2 = (name: string, text: string) => put(path.join(fake, name), text);
  put2("state", "running\n");
  put2("list-unit-files", `${GATEWAY} enabled enabled\n`);
  put2("list-units", "");
  // HERMES_HOME: the media policy checks read the gateway's Hermes home, never the real /root/.hermes.
  put2(`show-${GATEWAY}`, gatewayShow(`HERMES_HOME=${t.home}/.hermes HERMES_MEDIA_ALLOW_DIRS=/srv/x:${t.outbox} HERMES_MEDIA_DELIVERY_STRICT=1 HERMES_MEDIA_TRUST_RECENT_FILES=0`));
  put2("show-media-outbox-janitor.timer", "LoadState=loaded\nUnitFileState=enabled\nActiveState=active\n");
  // One ReadWritePaths= entry holds the outbox and its state, as install writes it.
  put2("show-media-outbox-janitor.service", `LoadState=loaded\nResult=success\nExecMainStatus=0\nExecMainExitTimestamp=Thu 2026-12-03 00:12:00 UTC\nReadWritePaths=${t.home}/.hermes\n`);
  put2("show-media-outbox-watch.service", `LoadState=loaded\nActiveState=active\nUnitFileState=enabled\nResult=success\nReadWritePaths=${t.home}/.hermes\n`);
}

beforeEach(() => {
  t = makeHome();
  fake = path.join(t.home, "fake-systemd");
  env = { ...t.env, MEDIA_OUTBOX_SYSTEMCTL: fakeSystemctl(fake) };
  healthy();
  // A real outbox, made by prepare as the agent would.
  const r = cli(["prepare", write(t.home, "first.png", png(1))], { env });
  expect(r.code, r.stderr).toBe(0);
});
afterEach(() => t.cleanup());

function doctor(...args: string[]): { code: number | null; report: Report; stderr: string } {
  const r = cli(["doctor", "--json", ...args], { env });
  return { code: r.code, report: JSON.parse(r.stdout) as Report, stderr: r.stderr };
}

function line(report: Report, name: string): Check {
  const c = report.checks.find((x) => x.check === name);
  expect(c, `no "${name}" line in ${JSON.stringify(report.checks.map((x) => x.check))}`).toBeDefined();
  return c!;
}

describe("doctor", () => {
  it("passes every line on a healthy setup, prints a table, and leaves the outbox as it was", () => {
    const before = fs.readdirSync(t.outbox).sort();
    const r = cli(["doctor"], { env });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^STATUS\s+CHECK\s+DETAIL\n/);
    expect(r.stdout).toContain("0 failed, 0 warnings");
    for (const name of ["outbox path", "outbox", "staging", "free space", "systemd", `gateway ${GATEWAY}`, `strict ${GATEWAY}`, "janitor timer", "watch service", "writable media-outbox-janitor.service", "writable media-outbox-watch.service", "hermes config", "probe", "allow list", "known secrets"]) {
      expect(r.stdout).toMatch(new RegExp(`^pass\\s+${name.replace(/[.]/g, "\\.")}\\s`, "m"));
    }
    // The probe went through prepare and was removed again; its ledger line says what it was.
    expect(fs.readdirSync(t.outbox).sort()).toEqual(before);
    const ledgerDir = path.join(t.home, ".hermes/.media_outbox-state/ledger");
    const ledger = fs.readdirSync(ledgerDir).map((f) => fs.readFileSync(path.join(ledgerDir, f), "utf8")).join("");
    expect(ledger).toContain("media-outbox-doctor-probe");

    const { report } = doctor();
    expect(report.ok).toBe(true);
    expect(report.systemd.running).toBe(true);
    expect(report.outbox).toBe(t.outbox);
    expect(report.checks.every((c) => c.status === "pass")).toBe(true);
  });

  it("says how many values of the Hermes files of secrets the secret check knows, and from which", () => {
    put(path.join(t.home, ".hermes", ".env"), "TELEGRAM_BOT_TOKEN=7394028311:AAHq3kZp0Lw9Xv2Ty8Nc5Rb1Md4Fs6Gj7Hk\nLLM_MODEL=anthropic/claude-sonnet-4\n");
    put(path.join(t.home, ".hermes", "auth.json"), JSON.stringify({ providers: { nous: { refresh_token: "Zq8Lm2Vx7Pw4Rt9Yb3NkHs6Dj1Fg5Cc0", expires_at: "2026-12-04T19:00:00Z" } } }));
    const { report } = doctor();
    expect(line(report, "known secrets")).toMatchObject({ status: "pass", message: "the secret check knows 2 values from the Hermes .env, the Hermes auth.json, and the secrets of the environment each prepare runs under (the gateway's) and of each running gateway a gateway.pid of the Hermes home or a profile names (read then, not here)" });
    expect(JSON.stringify(report)).not.toContain("Zq8Lm2Vx7Pw4");
  });

  it("accepts the outbox when it comes from an EnvironmentFile= (which beats Environment=)", () => {
    const envFile = put(path.join(t.home, "gw.env"), `HERMES_MEDIA_ALLOW_DIRS=${t.outbox}\nHERMES_MEDIA_DELIVERY_STRICT=1\nHERMES_MEDIA_TRUST_RECENT_FILES=0\n`);
    put(path.join(fake, `show-${GATEWAY}`), gatewayShow("HERMES_MEDIA_ALLOW_DIRS=/srv/x", `${envFile} (ignore_errors=no)`));
    const { code, report } = doctor();
    expect(code).toBe(0);
    expect(line(report, `gateway ${GATEWAY}`).message).toContain(envFile);
  });

  type Variant = { name: string; setup: () => void; args?: string[]; check: string; status: "warn" | "fail"; message: RegExp; fix?: RegExp; code: number };
  const variants: Variant[] = [
    {
      name: "the allow list has archives the secret check cannot read",
      setup: () => put(path.join(t.home, "allow.json"), JSON.stringify({ allow: ["png", "xz", "rar", "tar"] })),
      args: ["--config", "ALLOW_JSON"],
      check: "allow list",
      status: "warn",
      message: /\.xz \(xz\), \.rar \(RAR\), whose content the secret check cannot read/,
      fix: /\.zip or \.tar\.gz/,
      code: 0,
    },
    {
      name: "a Hermes file of secrets gives no values: a damaged JSON store, one too large",
      setup: () => {
        put(path.join(t.home, ".hermes", "auth.json"), '{"providers": {"nous": {"refresh_token": "Zq8Lm2Vx7Pw');
        put(path.join(t.home, ".hermes", "google_token.json"), `{"token": "${"x".repeat(1024 * 1024)}"}`);
      },
      check: "known secrets",
      status: "warn",
      message: /does not know the values of the Hermes auth\.json \(.*auth\.json\): it is not valid JSON; the Hermes google_token\.json \(.*\): it is larger than 1 MiB/,
      fix: /valid JSON/,
      code: 0,
    },
    {
      name: "the gateway's environment lacks the outbox",
      setup: () => put(path.join(fake, `show-${GATEWAY}`), gatewayShow("HERMES_MEDIA_ALLOW_DIRS=/srv/x HERMES_MEDIA_DELIVERY_STRICT=1 HERMES_MEDIA_TRUST_RECENT_FILES=0")),
      check: `gateway ${GATEWAY}`,
      status: "fail",
      message: /does not list the outbox \(\/srv\/x/,
      fix: /media-outbox install systemd --unit hermes-gateway\.service/,
      code: 1,
    },
    {
      name: "an EnvironmentFile= overrides the Environment= that has the outbox",
      setup: () => {
        const f = put(path.join(t.home, "override.env"), "HERMES_MEDIA_ALLOW_DIRS=/srv/only\n");
        put(path.join(fake, `show-${GATEWAY}`), gatewayShow(`HERMES_MEDIA_ALLOW_DIRS=${t.outbox}`, `${f} (ignore_errors=no)`));
      },
      check: `gateway ${GATEWAY}`,
      status: "fail",
      message: /override\.env/,
      code: 1,
    },
    {
      name: "the variable is not set at all",
      setup: () => put(path.join(fake, `show-${GATEWAY}`), gatewayShow("FOO=1")),
      check: `gateway ${GATEWAY}`,
      status: "fail",
      message: /is not set/,
      code: 1,
    },
    {
      name: "strict mode is off",
      setup: () => put(path.join(fake, `show-${GATEWAY}`), gatewayShow(`HERMES_MEDIA_ALLOW_DIRS=${t.outbox}`)),
      check: `strict ${GATEWAY}`,
      status: "warn",
      message: /default mode any path not on its denylist is delivered/,
      fix: /--strict/,
      code: 0,
    },
    {
      name: "the named unit does not exist",
      setup: () => {},
      args: ["--unit", "hermes-gateway-missing.service"],
      check: "gateway hermes-gateway-missing.service",
      status: "fail",
      message: /systemd does not know/,
      code: 1,
    },
    {
      name: "the gateway runs as another user than the outbox's owner",
      setup: () => put(path.join(fake, `show-${GATEWAY}`), gatewayShow(`HERMES_MEDIA_ALLOW_DIRS=${t.outbox}`).replace("User=\n", "User=nobody\n")),
      check: `gateway ${GATEWAY} user`,
      status: "fail",
      message: /runs as nobody but the outbox belongs to root/,
      code: 1,
    },
    {
      name: "the janitor timer is not installed",
      setup: () => fs.rmSync(path.join(fake, "show-media-outbox-janitor.timer")),
      check: "janitor timer",
      status: "fail",
      message: /not installed/,
      fix: /media-outbox install systemd/,
      code: 1,
    },
    {
      name: "the janitor timer is disabled",
      setup: () => put(path.join(fake, "show-media-outbox-janitor.timer"), "LoadState=loaded\nUnitFileState=disabled\nActiveState=inactive\n"),
      check: "janitor timer",
      status: "fail",
      message: /disabled\/inactive/,
      fix: /systemctl enable --now media-outbox-janitor\.timer/,
      code: 1,
    },
    {
      name: "the last janitor run failed",
      setup: () => put(path.join(fake, "show-media-outbox-janitor.service"), `LoadState=loaded\nResult=exit-code\nExecMainStatus=2\nExecMainExitTimestamp=Thu 2026-12-03 00:12:00 UTC\nReadWritePaths=${t.home}/.hermes\n`),
      check: "janitor timer",
      status: "fail",
      message: /last janitor run failed \(exit-code, exit status 2\)/,
      fix: /journalctl -u media-outbox-janitor\.service/,
      code: 1,
    },
    {
      name: "the watch service failed",
      setup: () => put(path.join(fake, "show-media-outbox-watch.service"), `LoadState=loaded\nActiveState=failed\nResult=exit-code\nReadWritePaths=${t.home}/.hermes\n`),
      check: "watch service",
      status: "fail",
      message: /failed/,
      code: 1,
    },
    {
      name: "the watch service cannot start and is restarted again and again (activating, auto-restart: never failed)",
      setup: () =>
        put(path.join(fake, "show-media-outbox-watch.service"), `LoadState=loaded\nActiveState=activating\nSubState=auto-restart\nUnitFileState=enabled\nResult=exit-code\nExecMainStatus=226\nReadWritePaths=${t.home}/.hermes\n`),
      check: "watch service",
      status: "fail",
      message: /^media-outbox-watch\.service keeps failing and being restarted \(exit-code, exit status 226\): the outbox is not guarded$/,
      fix: /^see why: journalctl -u media-outbox-watch\.service$/,
      code: 1,
    },
    {
      name: "an older install's watch unit lists the outbox and its state as two ReadWritePaths= entries (link(2) fails with EXDEV between them)",
      setup: () =>
        put(path.join(fake, "show-media-outbox-watch.service"), `LoadState=loaded\nActiveState=active\nUnitFileState=enabled\nResult=success\nReadWritePaths=${t.outbox} ${t.home}/.hermes/.media_outbox-state\n`),
      check: "writable media-outbox-watch.service",
      status: "fail",
      message: /has no one entry holding both the outbox .* and its state .*: systemd mounts each entry apart, and publication \(link\(2\)\) and quarantine \(rename\(2\)\) fail with EXDEV/,
      fix: /media-outbox uninstall systemd, then install systemd again/,
      code: 1,
    },
    {
      name: "the outbox is writable by others",
      setup: () => fs.chmodSync(t.outbox, 0o777),
      check: "outbox",
      status: "fail",
      message: /writable by group or others/,
      code: 1,
    },
    {
      name: "a profile's config.yaml lists other roots only",
      setup: () => put(path.join(t.home, ".hermes/profiles/work/config.yaml"), "gateway:\n  media_delivery_allow_dirs:\n    - /srv/x\n"),
      check: "hermes config work",
      status: "fail",
      message: /without the outbox/,
      fix: /media-outbox install hermes-config --profile work/,
      code: 1,
    },
  ];

  for (const v of variants) {
    it(`reports it when ${v.name}`, () => {
      v.setup();
      const { code, report } = doctor(...(v.args ?? []).map((a) => (a === "ALLOW_JSON" ? path.join(t.home, "allow.json") : a)));
      const c = line(report, v.check);
      expect(c.status, JSON.stringify(c)).toBe(v.status);
      expect(c.message).toMatch(v.message);
      if (v.fix) expect(c.fix).toMatch(v.fix);
      expect(code).toBe(v.code);
      expect(report.ok).toBe(v.code === 0);
    });
  }

  it("warns (--user) about user units an older install wrote with ReadWritePaths= and the namespacing that fails where no user namespace can be made; none for the units written now", () => {
    const old = doctor("--user");
    for (const unit of ["media-outbox-janitor.service", "media-outbox-watch.service"]) {
      const c = line(old.report, `writable ${unit}`);
      expect(c.status, JSON.stringify(c)).toBe("warn");
      expect(c.message).toContain(`${unit} has ReadWritePaths= and the other namespacing settings of an older install: a user manager applies them only inside a user namespace`);
      expect(c.fix).toBe("media-outbox uninstall systemd --user, then install systemd --user again");
    }
    // As install writes user units now (deploy/systemd/user/hardening.conf): no ReadWritePaths=, no line.
    put(path.join(fake, "show-media-outbox-janitor.service"), "LoadState=loaded\nResult=success\nExecMainStatus=0\nExecMainExitTimestamp=Thu 2026-12-03 00:12:00 UTC\nReadWritePaths=\n");
    put(path.join(fake, "show-media-outbox-watch.service"), "LoadState=loaded\nActiveState=active\nUnitFileState=enabled\nResult=success\nReadWritePaths=\n");
    const now = doctor("--user");
    expect(now.report.checks.filter((c) => c.check.startsWith("writable "))).toEqual([]);
  });

  it("fails the probe when the gateway would not deliver the prepared file", () => {
    put(path.join(fake, `show-${GATEWAY}`), gatewayShow("HERMES_MEDIA_ALLOW_DIRS=/srv/x"));
    const { report } = doctor();
    const probe = line(report, "probe");
    expect(probe.status).toBe("fail");
    expect(probe.message).toContain(`would not be delivered by ${GATEWAY}`);
  });

  it("a profile fixed with install hermes-config then passes", () => {
    put(path.join(t.home, ".hermes/profiles/work/config.yaml"), "gateway:\n  media_delivery_allow_dirs:\n    - /srv/x\n");
    expect(cli(["install", "hermes-config", "--profile", "work"], { env }).code).toBe(0);
    const { code, report } = doctor();
    expect(line(report, "hermes config work").status).toBe("pass");
    expect(code).toBe(0);
  });

  it("without a running systemd, reads the unit files (here under --root) and says what it cannot know", () => {
    put(path.join(fake, "state"), "offline\n");
    const root = gatewayRoot(t.home);
    expect(cli(["install", "systemd", "--root", root, "--strict"], { env }).code).toBe(0);
    const { code, report } = doctor("--root", root);
    expect(report.systemd.running).toBe(false);
    expect(line(report, "systemd")).toMatchObject({ status: "warn", message: "--root was given: the unit files were read instead, service states are unknown" });
    for (const unit of [GATEWAY, "hermes-gateway-work.service", "hermes-gateway@.service", "hermes-gateway@alice.service"]) {
      expect(line(report, `gateway ${unit}`).status).toBe("pass");
      expect(line(report, `strict ${unit}`).status).toBe("pass");
    }
    expect(line(report, "janitor timer").status).toBe("warn");
    expect(line(report, "probe").status).toBe("pass");
    expect(code).toBe(0);

    // Before install the same root fails, naming the fix.
    expect(cli(["uninstall", "systemd", "--root", root], { env }).code).toBe(0);
    const after = doctor("--root", root);
    expect(after.code).toBe(1);
    expect(line(after.report, `gateway ${GATEWAY}`).fix).toContain("media-outbox install systemd --unit hermes-gateway.service");
    expect(line(after.report, "janitor timer").status).toBe("fail");
  });

  it("reports a gateway unit added after install", () => {
    put(path.join(fake, "state"), "offline\n");
    const root = gatewayRoot(t.home);
    expect(cli(["install", "systemd", "--root", root, "--unit", GATEWAY], { env }).code).toBe(0);
    const { code, report } = doctor("--root", root);
    const late = line(report, "gateway hermes-gateway-work.service");
    expect(late.status).toBe("fail");
    expect(late.message).toContain("added after media-outbox was installed");
    expect(line(report, `gateway ${GATEWAY}`).status).toBe("pass");
    expect(code).toBe(1);
    // Installed: a second install is refused, and one with --unit would cover that unit alone.
    const again = "media-outbox uninstall systemd, then media-outbox install systemd with the other options it was installed with (without --unit it covers every gateway unit found, hermes-gateway-work.service included), then systemctl restart hermes-gateway-work.service";
    const strictAgain = "media-outbox uninstall systemd, then media-outbox install systemd --strict with the other options it was installed with";
    expect(late.fix).toBe(again);
    expect(line(report, "strict hermes-gateway-work.service").fix).toBe(strictAgain);
    // A record doctor cannot read (the system one is root's alone; doctor runs as the agent) still says it is installed.
    fs.writeFileSync(path.join(root, "var/lib/media-outbox/install-manifest.json"), "{");
    const unread = doctor("--root", root).report;
    expect(line(unread, "gateway hermes-gateway-work.service").message).not.toContain("added after");
    expect(line(unread, "gateway hermes-gateway-work.service").fix).toBe(again);
    expect(line(unread, "strict hermes-gateway-work.service").fix).toBe(strictAgain);
  });

  it("says when the outbox install set up is not the one it checks (root's own, right after sudo install), and how to check the installed one", () => {
    put(path.join(fake, "state"), "offline\n");
    const root = gatewayRoot(t.home);
    const agentOutbox = path.join(t.home, "agent", ".hermes", "media_outbox");
    fs.mkdirSync(agentOutbox, { recursive: true, mode: 0o700 });
    const installed = cli(["install", "systemd", "--root", root, "--outbox", agentOutbox], { env });
    expect(installed.code, installed.stderr).toBe(0);
    const message = `media-outbox install systemd set up ${agentOutbox}, but this doctor resolved ${t.outbox} (the outbox of the user it runs as, or of --outbox, MEDIA_OUTBOX_DIR, the config file): the lines below check that one`;
    let l = line(doctor("--root", root).report, "installed outbox");
    expect(l).toEqual({ check: "installed outbox", status: "fail", message, fix: `check that outbox: media-outbox doctor --outbox ${agentOutbox}` });
    // Another user's outbox: doctor is to be run as that user (prepare's rules and the probe are the agent's).
    put(path.join(root, "etc/passwd"), "root:x:0:0:root:/root:/bin/sh\nagent:x:65534:65534::/home/agent:/bin/sh\n");
    // Under --root, the target tree's outbox, as on the host it will run on.
    fs.mkdirSync(path.join(root, agentOutbox), { recursive: true, mode: 0o700 });
    fs.chownSync(path.join(root, agentOutbox), 65534, 65534);
    const report = doctor("--root", root).report;
    expect(report.checks[0]!.check).toBe("installed outbox");
    l = line(report, "installed outbox");
    expect(l.message).toBe(message.replace(`${agentOutbox},`, `${agentOutbox} (agent's),`));
    expect(l.fix).toBe("run doctor as agent, the user the agent runs as: sudo -u agent media-outbox doctor");
    // Checking the installed outbox: no such line.
    expect(doctor("--root", root, "--outbox", agentOutbox).report.checks.map((c) => c.check)).not.toContain("installed outbox");
  });

  it("names a config.yaml that is not valid YAML on one escaped line, never quoting the file (it holds API keys)", () => {
    put(path.join(t.home, ".hermes", "config.yaml"), "model: x\x1b[31m\nMEDIA:/etc/passwd.png\napi_key: sk-ant-Zq8Lm2Vx7Pw4Tr9Yb3Nk\n");
    const r = cli(["doctor", "--no-probe"], { env });
    const where = "not valid YAML: Implicit keys need to be on a single line at line 2, column 1";
    const { report } = doctor("--no-probe");
    expect(line(report, "hermes config").message).toBe(`cannot read ${t.home}/.hermes/config.yaml: ${where}`);
    expect(line(report, `media policy ${GATEWAY}`).message).toContain(`says (${where})`);
    expect(r.stdout).not.toMatch(/sk-ant|MEDIA:\/etc|\x1b/);
    expect(r.stdout).not.toContain("\\x1b");
  });

  it("reads a config.yaml whose anchors are referenced hundreds of times, as Hermes' PyYAML does, and names one whose aliases expand past the bound without failing", () => {
    const shared = `defaults: &d {provider: openrouter}\n${Array.from({ length: 300 }, (_, i) => `job_${i}: *d\n`).join("")}`;
    put(path.join(t.home, ".hermes", "config.yaml"), `${shared}gateway:\n  media_delivery_allow_dirs: &dirs [${t.outbox}]\nalso: *dirs\n`);
    let { report } = doctor("--no-probe");
    expect(line(report, "hermes config").status).not.toBe("warn");
    expect(JSON.stringify(report)).not.toContain("not read: its aliases");
    // A billion laughs: ten levels of ten.
    const laughs = ["a0: &a0 [lol]", ...Array.from({ length: 9 }, (_, i) => `a${i + 1}: &a${i + 1} [${Array(10).fill(`*a${i}`).join(", ")}]`)].join("\n");
    put(path.join(t.home, ".hermes", "config.yaml"), `${laughs}\n`);
    const r = cli(["doctor", "--no-probe"], { env });
    expect(r.stderr).not.toContain("internal error");
    ({ report } = doctor("--no-probe"));
    expect(line(report, "hermes config").message).toBe(`cannot read ${t.home}/.hermes/config.yaml: not read: its aliases expand to more than 10000 references (a guard against exponential expansion; Hermes' own reader would take as long)`);
  });

  it("says when the Hermes plugin is listed in plugins.disabled (Hermes never loads it), installed but not enabled, or enabled; nothing when neither mentions it", () => {
    const hermes = path.join(t.home, ".hermes");
    const work = path.join(hermes, "profiles", "work");
    put(path.join(hermes, "config.yaml"), "plugins:\n  enabled: [media-outbox]\n  disabled: [media-outbox]\n");
    put(path.join(work, "config.yaml"), "model: x\n");
    let { report } = doctor("--no-probe");
    let l = line(report, "hermes plugin");
    expect(l.status).toBe("fail");
    expect(l.message).toBe(`${hermes}/config.yaml lists media-outbox in plugins.disabled: Hermes never loads it, even with plugins.enabled; the gateway has no send_file tool and no final-reply check: a published file whose line the model leaves out is not sent`);
    expect(l.fix).toBe("media-outbox install hermes-plugin (it takes the name out of plugins.disabled), then restart the gateway");
    expect(report.ok).toBe(false);
    expect(report.checks.map((c) => c.check)).not.toContain("hermes plugin work");

    // Installed as install does it: enabled, and no longer disabled.
    expect(cli(["install", "hermes-plugin"], { env }).code).toBe(0);
    expect(cli(["install", "hermes-plugin", "--profile", "work"], { env }).code).toBe(0);
    put(path.join(work, "config.yaml"), "plugins:\n  enabled: [other]\n");
    ({ report } = doctor("--no-probe"));
    l = line(report, "hermes plugin");
    expect([l.status, l.message]).toEqual(["pass", `the plugin is in ${hermes}/plugins/media-outbox and enabled in ${hermes}/config.yaml (Hermes loads it when the gateway starts)`]);
    l = line(report, "hermes plugin work");
    expect(l.status).toBe("warn");
    expect(l.message).toContain(`but plugins.enabled in ${work}/config.yaml does not list it: Hermes does not load it`);
    expect(l.fix).toBe("media-outbox install hermes-plugin --profile work, then restart the gateway");
  });

  it("reads a key given twice in config.yaml as Hermes' PyYAML does: the last one holds (a second gateway: section turning strict mode off is seen, not 'not valid YAML')", () => {
    put(path.join(t.home, ".hermes", "config.yaml"), "gateway:\n  strict: true\nmodel: x\ngateway:\n  strict: false\n");
    const { report } = doctor("--no-probe");
    expect(line(report, "hermes config").status).toBe("pass");
    expect(JSON.stringify(report)).not.toContain("not valid YAML");
    expect(report.checks.find((c) => c.check.endsWith(" strict"))!.message).toContain("config.yaml: gateway.strict: false");
  });

  it("warns when the running gateway process started before the outbox was added", () => {
    // A real process whose environment lacks the outbox stands in for the gateway's main process.
    const child = spawn("sleep", ["60"], { env: { PATH: process.env.PATH, HERMES_MEDIA_ALLOW_DIRS: "/srv/x" }, stdio: "ignore" });
    try {
      const show = fs.readFileSync(path.join(fake, `show-${GATEWAY}`), "utf8").replace("MainPID=0", `MainPID=${child.pid}`);
      put(path.join(fake, `show-${GATEWAY}`), show);
      const { code, report } = doctor();
      expect(line(report, `gateway ${GATEWAY}`).status).toBe("pass");
      const proc = line(report, `gateway ${GATEWAY} process`);
      expect(proc.status).toBe("warn");
      expect(proc.fix).toBe(`systemctl restart ${GATEWAY}`);
      expect(code).toBe(0);
    } finally {
      child.kill();
    }
  });

  it("escapes a unit name in the table's check names (a name may carry a backslash or MEDIA:)", () => {
    const unit = "hermes-gateway-MEDIA:x\\x41.service";
    put(path.join(fake, `show-${unit}`), gatewayShow(`HERMES_MEDIA_ALLOW_DIRS=${t.outbox}`));
    const r = cli(["doctor", "--no-probe", "--unit", unit], { env });
    expect(r.stdout).not.toContain(unit);
    expect(r.stdout).not.toContain("MEDIA:x");
    const shown = "hermes-gateway-MEDIA\\x3ax\\\\x41.service";
    expect(r.stdout).toContain(`pass    gateway ${shown}  `);
    expect(r.stdout).toContain(`warn    strict ${shown}  `);
    // Escaped once, where the check is built: the JSON names it the same way.
    expect(doctor("--no-probe", "--unit", unit).report.checks.map((c) => c.check)).toContain(`gateway ${shown}`);
  });

  it("applies UnsetEnvironment= as systemd does, from systemctl show and from the unit files alike: NAME removes any value, NAME=VALUE only that value", () => {
    const value = `/srv/x:${t.outbox}`;
    const root = gatewayRoot(t.home);
    for (const c of [
      { unset: "HERMES_MEDIA_ALLOW_DIRS=/srv/other", status: "pass" },
      { unset: `HERMES_MEDIA_ALLOW_DIRS=${value}`, status: "fail" },
      { unset: "HERMES_MEDIA_ALLOW_DIRS", status: "fail" },
    ]) {
      put(path.join(fake, `show-${GATEWAY}`), gatewayShow(`HERMES_MEDIA_ALLOW_DIRS=${value}`).replace("UnsetEnvironment=\n", `UnsetEnvironment=${c.unset}\n`));
      put(path.join(root, "etc/systemd/system", `${GATEWAY}.d/50-unset.conf`), `[Service]\nEnvironment=HERMES_MEDIA_ALLOW_DIRS=${value}\nUnsetEnvironment=${c.unset}\n`);
      for (const args of [[], ["--root", root]]) {
        const gateway = line(doctor("--no-probe", "--unit", GATEWAY, ...args).report, `gateway ${GATEWAY}`);
        expect(gateway.status, `UnsetEnvironment=${c.unset} ${args.join(" ")}`).toBe(c.status);
        if (c.status === "fail") expect(gateway.message).toContain("is removed by UnsetEnvironment=");
      }
    }
  });

  it("checks each running template instance with systemctl show", () => {
    put(path.join(fake, "list-units"), "hermes-gateway@bob.service loaded active running Hermes gateway bob\n");
    put(path.join(fake, "show-hermes-gateway@bob.service"), gatewayShow("HERMES_MEDIA_ALLOW_DIRS=/srv/bob"));
    const { code, report } = doctor();
    expect(line(report, "gateway hermes-gateway@bob.service")).toMatchObject({ status: "fail" });
    expect(line(report, `gateway ${GATEWAY}`).status).toBe("pass");
    expect(code).toBe(1);
  });
});


// A gate started by hand (media-outbox serve, as the README shows), not
// installed: doctor must look where that gate keeps its state, which its
// GET /health says, not where install would have put it.
describe("doctor in gate mode, the gate started by hand", () => {
  afterEach(() => killAll());

  /** doctor without blocking this process (the fake gate below answers from it). */
  function doctorAsync(gateEnv: NodeJS.ProcessEnv): Promise<Report> {
    return new Promise((resolve, reject) => {
      const p = track(spawn(process.execPath, [BIN, "doctor", "--json", "--no-probe"], { env: gateEnv }));
      let stdout = "";
      let stderr = "";
      p.stdout!.on("data", (c) => (stdout += c));
      p.stderr!.on("data", (c) => (stderr += c));
      p.on("close", () => {
        try {
          resolve(JSON.parse(stdout) as Report);
        } catch {
          reject(new Error(`doctor printed no JSON: ${stderr}`));
        }
      });
    });
  }

  async function handGate(extraEnv: NodeJS.ProcessEnv = {}): Promise<{ gate: Gate; gateEnv: NodeJS.ProcessEnv }> {
    const dir = path.join(t.home, "srv");
    fs.mkdirSync(dir);
    const gate = await startGate(dir, { ...t.env, ...extraEnv });
    return { gate, gateEnv: { ...env, MEDIA_OUTBOX_SOCKET: gate.socket } };
  }

  it("checks the state where serve keeps it by default (.outbox-state beside the outbox), not install's place", async () => {
    const { gate, gateEnv } = await handGate();
    const state = path.join(path.dirname(gate.outbox), ".outbox-state");
    expect(fs.statSync(state).isDirectory()).toBe(true);
    const report = await doctorAsync(gateEnv);
    expect(line(report, "gate")).toMatchObject({ status: "pass", message: `the gate answers GET /health; its outbox is ${gate.outbox}, its state ${state}` });
    expect(line(report, "state")).toEqual({ check: "state", status: "pass", message: `${state} (staging, ledger, quarantine) belongs to root, mode 0700` });
    expect(JSON.stringify(report)).not.toContain(path.join(path.dirname(gate.outbox), "state"));
    // Not installed: a gate run by hand works; doctor says what it lacks, as a warning.
    expect(line(report, "gate units")).toMatchObject({ status: "warn", message: expect.stringContaining("the gate that answers was started by hand (media-outbox serve)"), fix: "to run it under systemd: media-outbox install systemd --system --gate" });
    // The same without a systemd manager (a container): the unit files are looked for instead.
    put(path.join(fake, "state"), "offline\n");
    expect(line(await doctorAsync(gateEnv), "gate units")).toMatchObject({ status: "warn", message: expect.stringMatching(/^media-outbox-gate\.socket, media-outbox-gate\.service not installed: the gate that answers was started by hand/) });
  });

  it("without the janitor's timer: says that removing old files from the hand-started gate's outbox is the operator's job, and how (as the gate's user, on its outbox and state), as a warning; an installed gate without it fails", async () => {
    const { gate, gateEnv } = await handGate();
    const state = path.join(path.dirname(gate.outbox), ".outbox-state");
    fs.rmSync(path.join(fake, "show-media-outbox-janitor.timer"));
    const byHand = {
      check: "janitor timer",
      status: "warn",
      message: "media-outbox-janitor.timer is not installed: the gate that answers was started by hand (media-outbox serve), so nothing removes old files from its outbox; that is yours to schedule while it runs so",
      fix: `as root, from cron or a timer of your own (hourly): env MEDIA_OUTBOX_DIR=${gate.outbox} MEDIA_OUTBOX_STATE_DIR=${state} media-outbox janitor; or run the gate under systemd, janitor included: media-outbox install systemd --system --gate`,
    };
    expect(line(await doctorAsync(gateEnv), "janitor timer")).toEqual(byHand);
    // Without a systemd manager, the unit files are looked for: the same line.
    put(path.join(fake, "state"), "offline\n");
    expect(line(await doctorAsync(gateEnv), "janitor timer")).toEqual(byHand);
    // The gate's socket unit installed: not a gate run by hand, and a missing timer is a broken install.
    put(path.join(fake, "state"), "running\n");
    put(path.join(fake, "show-media-outbox-gate.socket"), "LoadState=loaded\nUnitFileState=enabled\nActiveState=active\n");
    expect(line(await doctorAsync(gateEnv), "janitor timer")).toMatchObject({ status: "fail", message: "media-outbox-janitor.timer is not installed", fix: "media-outbox install systemd" });
  });

  it("checks the state MEDIA_OUTBOX_STATE_DIR gave the gate, and says how to mend it there (not: install again)", async () => {
    const elsewhere = path.join(t.home, "srv", "var", "gate-state");
    const { gateEnv } = await handGate({ MEDIA_OUTBOX_STATE_DIR: elsewhere });
    expect(line(await doctorAsync(gateEnv), "state")).toMatchObject({ status: "pass", message: `${elsewhere} (staging, ledger, quarantine) belongs to root, mode 0700` });
    fs.chmodSync(elsewhere, 0o755);
    expect(line(await doctorAsync(gateEnv), "state")).toEqual({
      check: "state",
      status: "fail",
      message: `${elsewhere} must be a directory of root with mode 0700 (it is 0755, uid 0): staging, ledger and quarantine live there`,
      fix: `as root: chown root ${elsewhere} && chmod 0700 ${elsewhere} (the gate, started by hand with media-outbox serve, keeps its state there)`,
    });
  });

  it("a gate that does not say where its state is (an earlier version): the one place beside the outbox that is there, else a warning that says what was not checked", async () => {
    const outbox = path.join(t.home, "old", "outbox");
    fs.mkdirSync(outbox, { recursive: true, mode: 0o750 });
    fs.chmodSync(outbox, 0o750);
    const socket = path.join(t.home, "old.sock");
    const server = http.createServer((_req, res) => res.end(JSON.stringify({ ok: true, outbox })));
    await new Promise<void>((resolve) => server.listen(socket, resolve));
    try {
      const gateEnv = { ...env, MEDIA_OUTBOX_SOCKET: socket };
      const unknown = line(await doctorAsync(gateEnv), "state");
      expect(unknown).toEqual({
        check: "state",
        status: "warn",
        message: `not checked: the gate's answer does not say where it keeps its state (a gate started before media-outbox said so), and neither ${path.join(t.home, "old", "state")} (install's place) nor ${path.join(t.home, "old", ".outbox-state")} (serve's, started by hand) is there`,
        fix: "restart the gate with this media-outbox (its GET /health then names its state directory), then run doctor again",
      });
      const byHand = path.join(t.home, "old", ".outbox-state");
      fs.mkdirSync(byHand, { mode: 0o700 });
      expect(line(await doctorAsync(gateEnv), "state")).toMatchObject({ status: "pass", message: `${byHand} (staging, ledger, quarantine) belongs to root, mode 0700` });
      fs.mkdirSync(path.join(t.home, "old", "state"), { mode: 0o700 });
      expect(line(await doctorAsync(gateEnv), "state")).toMatchObject({ status: "warn", message: expect.stringContaining(`and both ${path.join(t.home, "old", "state")} and ${byHand} are there`) });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
