// Allowed roots an agent's user can write: a way around the gate. doctor in
// gate mode (a gate run by hand, a fake systemctl whose gateway runs as the
// real user `nobody`) names each one and fails; install --gate warns. The
// roots are real directories in a temporary tree, with real owners and modes
// (the tests run as root). Every process started is killed by PID.
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fakeSystemctl, put } from "./deploy-helpers.js";
import { type Gate, killAll, startGate } from "./gate-helpers.js";
import { BIN, cli, makeHome } from "./helpers.js";
import type { DoctorCheck as Check } from "../src/deploy/doctor.js";

const GATEWAY = "hermes-gateway.service";
const NOBODY = 65534;
const NOGROUP = 65534;

let h: ReturnType<typeof makeHome>;
let gate: Gate;
let base: string;
let fake: string;
let env: NodeJS.ProcessEnv;

/** A directory of the temporary tree, made with this owner and mode (parents root's 0755). */
function dir(rel: string, mode = 0o755, uid = 0, gid = 0): string {
  const p = path.join(base, rel);
  fs.mkdirSync(p, { recursive: true, mode: 0o755 });
  fs.chmodSync(p, mode);
  fs.chownSync(p, uid, gid);
  return p;
}

/** The fake manager's view of the gateway: User=nobody, these roots (and its Hermes home, never root's own). */
function gatewayWith(roots: string[], user = "nobody"): void {
  put(
    path.join(fake, `show-${GATEWAY}`),
    `LoadState=loaded\nEnvironment=HERMES_HOME=${h.home}/.hermes HERMES_MEDIA_ALLOW_DIRS=${roots.join(":")} HERMES_MEDIA_DELIVERY_STRICT=1 HERMES_MEDIA_TRUST_RECENT_FILES=0\nEnvironmentFiles=\nUnsetEnvironment=\nUser=${user}\nActiveState=active\nMainPID=0\n`,
  );
}

function allowedRoots(): { code: number | null; line: Check; checks: Check[] } {
  const r = cli(["doctor", "--json", "--no-probe"], { env });
  const checks = (JSON.parse(r.stdout) as { checks: Check[] }).checks;
  const line = checks.find((c) => c.check === `allowed roots ${GATEWAY}`);
  expect(line, JSON.stringify(checks.map((c) => c.check))).toBeDefined();
  return { code: r.code, line: line!, checks };
}

const named = (line: Check, root: string) => line.message.includes(`${root} (set by `);

beforeAll(async () => {
  h = makeHome();
  gate = await startGate(h.home, h.env);
  // The tree the roots live in: passable by everyone, as /srv is.
  base = fs.mkdtempSync(path.join(os.tmpdir(), "mo-roots-"));
  fs.chmodSync(base, 0o755);
  fake = path.join(h.home, "fake-systemd");
  env = { ...h.env, MEDIA_OUTBOX_SOCKET: gate.socket, MEDIA_OUTBOX_SYSTEMCTL: fakeSystemctl(fake) };
  put(path.join(fake, "state"), "running\n");
  put(path.join(fake, "list-unit-files"), `${GATEWAY} enabled enabled\n`);
  put(path.join(fake, "list-units"), "");
});
afterAll(async () => {
  await killAll();
  h.cleanup();
  fs.rmSync(base, { recursive: true, force: true });
});

describe("doctor in gate mode: allowed roots an agent's user can write", () => {
  it("names every root the gateway's user can write into, replace, create or change something in, with how; fails", () => {
    const bad = {
      open: dir("open", 0o777),
      owned: dir("owned", 0o755, NOBODY, NOGROUP),
      group: dir("group", 0o770, 0, NOGROUP),
      replaceable: path.join(dir("mine", 0o755, NOBODY, NOGROUP), "root"),
      creatable: path.join(dir("drop", 0o777), "not-yet"),
      inside: dir("tree/a"),
      file: dir("files"),
      linked: path.join(base, "link"),
    };
    dir("mine/root");
    dir("tree/a/b/sub", 0o755, NOBODY, NOGROUP);
    put(path.join(bad.file, "report.pdf"), "%PDF-1.4\n", 0o666);
    fs.symlinkSync(bad.open, bad.linked);
    const good = {
      clean: dir("clean"),
      // Sticky (as /tmp): nobody may not replace root's entry in it.
      sticky: dir("sticky/kept", 0o755),
      // Out of reach: nobody may not pass through a root-only directory.
      hidden: path.join(dir("private", 0o700), "open"),
      // The group's bits apply to a member, not the others' (0707: the group may do nothing).
      groupDenied: dir("group-denied", 0o707, 0, NOGROUP),
    };
    fs.chmodSync(dir("sticky"), 0o1777);
    fs.mkdirSync(good.hidden, { mode: 0o777 });
    fs.chmodSync(good.hidden, 0o777);
    gatewayWith([gate.outbox, ...Object.values(bad), ...Object.values(good)]);

    const { code, line } = allowedRoots();
    expect(code).toBe(1);
    expect(line.status, line.message).toBe("fail");
    const expected: Record<keyof typeof bad, string> = {
      open: "nobody can write into it (everyone may write it)",
      owned: "nobody can write into it (nobody owns it)",
      group: "nobody can write into it (its group nogroup may write it, and nobody is in that group)",
      replaceable: `nobody can replace it: nobody may write ${path.join(base, "mine")} (nobody owns it)`,
      creatable: `nobody can create it: nobody may write ${path.join(base, "drop")} (everyone may write it)`,
      inside: `nobody can write into ${path.join(bad.inside, "b", "sub")} inside it (nobody owns it)`,
      file: `nobody can change ${path.join(bad.file, "report.pdf")} inside it (everyone may write it)`,
      linked: "nobody can write into it (everyone may write it)",
    };
    for (const [k, how] of Object.entries(expected)) {
      expect(line.message, k).toContain(`${bad[k as keyof typeof bad]} (set by the environment of ${GATEWAY}): ${how}`);
    }
    for (const [k, root] of Object.entries(good)) expect(named(line, root), k).toBe(false);
    expect(named(line, gate.outbox)).toBe(false);
    expect(line.message).toContain("the gateway sends it without the gate's checks");
    // The fix says where each root is set: the unit's own value, which the drop-in keeps a copy of.
    expect(line.fix).toBe(
      `remove ${Object.values(bad).join(", ")} from the unit's own HERMES_MEDIA_ALLOW_DIRS (the drop-in keeps a copy of the roots the unit had: media-outbox uninstall systemd, take them out of the unit, install again); or make each such root, every directory above it and everything in it root's and writable by nobody else; then restart the gateway`,
    );
  });

  it("passes when no agent or gateway user can write any root (the gate's outbox included)", () => {
    gatewayWith([gate.outbox, dir("clean2"), path.join(base, "nothing-here")]);
    const { line } = allowedRoots();
    expect(line).toMatchObject({ status: "pass" });
    expect(line.message).toBe(`no root the gateway delivers from (${gate.outbox}, ${path.join(base, "clean2")}, ${path.join(base, "nothing-here")}) can be written, replaced or created by nobody`);
  });

  it("reads the roots from every source the gateway reads: a writable root added by the Hermes .env is named with that file as the fix", () => {
    gatewayWith([gate.outbox]);
    const added = dir("from-env", 0o755, NOBODY, NOGROUP);
    const dotEnv = put(path.join(h.home, ".hermes", ".env"), `HERMES_MEDIA_ALLOW_DIRS=${gate.outbox}:${added}\n`, 0o600);
    try {
      const { line } = allowedRoots();
      expect(line.status).toBe("fail");
      expect(line.message).toContain(`${added} (set by ${dotEnv}): nobody can write into it (nobody owns it)`);
      expect(line.fix).toContain(`remove ${added} from HERMES_MEDIA_ALLOW_DIRS in ${dotEnv}`);
    } finally {
      fs.rmSync(dotEnv);
    }
  });

  it("judges the agents of the gate's group (the socket's) as well as the gateway's own user", () => {
    const open = dir("open2", 0o777);
    gatewayWith([gate.outbox, open], "");
    // The gate run by hand here belongs to root: its group has no member but root, the gateway runs as root.
    expect(allowedRoots().line).toEqual({ check: `allowed roots ${GATEWAY}`, status: "pass", message: "no agent user to judge the gateway's roots for: it runs as root, and no user but root is in group root" });
    // A gate whose group is nogroup: its member nobody is an agent user.
    fs.chownSync(gate.socket, 0, NOGROUP);
    try {
      const { line } = allowedRoots();
      expect(line.status).toBe("fail");
      expect(line.message).toContain(`${open} (set by the environment of ${GATEWAY}): `);
      expect(line.message).toContain("nobody can write into it (everyone may write it)");
    } finally {
      fs.chownSync(gate.socket, 0, 0);
    }
  });

  it("looks at most 10,000 entries below a root and says so (warn) when it stops", () => {
    const big = dir("big");
    for (let i = 0; i < 10_001; i++) fs.writeFileSync(path.join(big, `f${i}`), "");
    gatewayWith([gate.outbox, big]);
    const { line } = allowedRoots();
    expect(line.status).toBe("warn");
    expect(line.message).toContain(`${big}: it holds more than 10000 entries; only the first were looked at`);
  });
});

describe("doctor in gate mode: an agent's Hermes .env is the agent's to replace", () => {
  it("a FIFO in its place never stops doctor (run as root, it read it waiting for a writer)", () => {
    const dotEnv = path.join(h.home, ".hermes", ".env");
    fs.mkdirSync(path.dirname(dotEnv), { recursive: true });
    execFileSync("mkfifo", [dotEnv]);
    try {
      gatewayWith([gate.outbox]);
      // A bound on a hung doctor, so that it fails this test instead of the run (not a timing assertion).
      const r = spawnSync(process.execPath, [BIN, "doctor", "--json", "--no-probe"], { env, encoding: "utf8", timeout: 60_000, killSignal: "SIGKILL" });
      expect(r.signal, "doctor hung on the FIFO").toBeNull();
      const checks = (JSON.parse(r.stdout) as { checks: Check[] }).checks;
      expect(checks.find((c) => c.check === `agents of ${GATEWAY}`)).toMatchObject({ status: "pass" });
    } finally {
      fs.rmSync(dotEnv);
    }
  }, 90_000);
});

describe("install systemd --gate warns about a root an agent's user can write", () => {
  it("names the root, who can write it and how, and the fix; installs anyway (--dry-run here)", () => {
    const root = path.join(h.home, "target");
    const ETC = "etc/systemd/system";
    put(path.join(root, ETC, GATEWAY), `[Service]\nUser=nobody\nEnvironment=HERMES_HOME=/home/agent/.hermes HERMES_MEDIA_ALLOW_DIRS=/srv/shared:/srv/clean\nExecStart=/bin/true\n`);
    for (const [d, uid] of [["srv/shared", NOBODY], ["srv/clean", 0]] as const) {
      fs.mkdirSync(path.join(root, d), { recursive: true });
      fs.chownSync(path.join(root, d), uid, uid === 0 ? 0 : NOGROUP);
    }
    const r = cli(["install", "systemd", "--root", root, "--gate", "--dry-run", "--strict"], { env: h.env });
    expect(r.code, r.stderr).toBe(0);
    const warnings = r.stderr.split("\n").filter((l) => l.includes("an agent's user can write"));
    expect(warnings).toEqual([
      `media-outbox: warning: ${GATEWAY}: the gateway will deliver from /srv/shared (set by the environment of ${GATEWAY}), which an agent's user can write: nobody can write into it (nobody owns it); an agent can put any file there and the gateway sends it without the gate's checks (strict mode delivers from every allowed root, and files there skip the gateway's denylist). Fix: remove /srv/shared from the unit's own HERMES_MEDIA_ALLOW_DIRS (then install again: the drop-in copies the roots the unit has); or make each such root, every directory above it and everything in it root's and writable by nobody else; then restart the gateway`,
    ]);
  });
});
