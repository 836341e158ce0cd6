// doctor and install systemd against every place the gateway reads its media
// policy: the unit's environment (a fake systemctl), $HERMES_HOME/.env, the
// managed scope's .env and config.yaml, config.yaml's gateway keys, and the
// config.yaml of each profile a multiplexing gateway routes to.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readYaml } from "../src/deploy/hermes-config.js";
import { parseEnvFile } from "../src/deploy/policy-sources.js";
import { fakeSystemctl, gatewayRoot, put } from "./deploy-helpers.js";
import { cli, makeHome, png, write } from "./helpers.js";
import { ensureVenv } from "./python-env.js";
import type { DoctorCheck as Check } from "../src/deploy/doctor.js";

const GATEWAY = "hermes-gateway.service";
const LINE = `media policy ${GATEWAY}`;
const STRICT_LINE = `media policy ${GATEWAY} strict`;

let t: ReturnType<typeof makeHome>;
let fake: string;
let env: NodeJS.ProcessEnv;
let hermes: string;

function unit(extra = ""): void {
  put(
    path.join(fake, `show-${GATEWAY}`),
    `LoadState=loaded\nEnvironment=HERMES_HOME=${hermes} HERMES_MEDIA_ALLOW_DIRS=/srv/x:${t.outbox} HERMES_MEDIA_DELIVERY_STRICT=1 HERMES_MEDIA_TRUST_RECENT_FILES=0${extra}\nEnvironmentFiles=\nUnsetEnvironment=\nUser=\nActiveState=active\nMainPID=0\n`,
  );
}

beforeEach(() => {
  t = makeHome();
  hermes = path.join(t.home, ".hermes");
  fake = path.join(t.home, "fake-systemd");
  env = { ...t.env, MEDIA_OUTBOX_SYSTEMCTL: fakeSystemctl(fake) };
  put(path.join(fake, "state"), "running\n");
  put(path.join(fake, "list-unit-files"), `${GATEWAY} enabled enabled\n`);
  put(path.join(fake, "list-units"), "");
  unit();
  expect(cli(["prepare", write(t.home, "a.png", png(1))], { env }).code).toBe(0);
});
afterEach(() => t.cleanup());

function doctor(): Check[] {
  const r = cli(["doctor", "--json", "--no-probe"], { env });
  return (JSON.parse(r.stdout) as { checks: Check[] }).checks;
}

function line(checks: Check[], name: string): Check {
  const c = checks.find((x) => x.check === name);
  expect(c, `no "${name}" line in ${JSON.stringify(checks.map((x) => x.check))}`).toBeDefined();
  return c!;
}

describe("doctor: every place the gateway reads its media policy", () => {
  it("passes when only the unit sets the policy, and says what each source says", () => {
    put(path.join(hermes, ".env"), "OPENAI_API_KEY=sk-not-shown\n");
    put(path.join(hermes, "config.yaml"), "gateway:\n  port: 1\n");
    const checks = doctor();
    const allow = line(checks, LINE);
    expect(allow.status).toBe("pass");
    expect(allow.message).toContain(`the environment of ${GATEWAY}: HERMES_MEDIA_ALLOW_DIRS=/srv/x:${t.outbox}`);
    expect(allow.message).toContain(`${hermes}/.env: sets none of them`);
    expect(allow.message).toContain(`${hermes}/config.yaml: sets none of them`);
    expect(allow.message).not.toContain("sk-not-shown");
    const strict = line(checks, STRICT_LINE);
    expect(strict.status).toBe("pass");
    expect(strict.message).toContain("HERMES_MEDIA_DELIVERY_STRICT=1");
  });

  it("says that no source sets the allowed roots when none does (not that they come from nothing)", () => {
    put(
      path.join(fake, `show-${GATEWAY}`),
      `LoadState=loaded\nEnvironment=HERMES_HOME=${hermes}\nEnvironmentFiles=\nUnsetEnvironment=\nUser=\nActiveState=active\nMainPID=0\n`,
    );
    const c = line(doctor(), LINE);
    expect(c.message).toContain("no source sets HERMES_MEDIA_ALLOW_DIRS, so none overrides it without the outbox (the gateway's own line says what it gets)");
    expect(c.message).not.toContain("comes from nothing");
  });

  it("shows a config.yaml value escaped once, strings quoted, in lists too", () => {
    put(path.join(hermes, "config.yaml"), 'gateway:\n  strict: "no\\e"\n  media_delivery_allow_dirs: ["/srv/a\\e\\"", 3]\n');
    const checks = doctor();
    expect(line(checks, STRICT_LINE).message).toContain(`${hermes}/config.yaml: gateway.strict: ${String.raw`"no\x1b"`}`);
    const allow = line(checks, LINE).message;
    expect(allow).toContain(`${hermes}/config.yaml: gateway.media_delivery_allow_dirs: ${String.raw`["/srv/a\x1b\"",3]`}`);
    expect(allow).not.toContain("u001b");
  });

  it("fails when $HERMES_HOME/.env sets the roots without the outbox (it is loaded over the unit every turn)", () => {
    put(path.join(hermes, ".env"), "# local\nHERMES_MEDIA_ALLOW_DIRS=/tmp/other   # old\n");
    const c = line(doctor(), LINE);
    expect(c.status).toBe("fail");
    expect(c.message).toContain(`the gateway ends up with HERMES_MEDIA_ALLOW_DIRS=/tmp/other from ${hermes}/.env, which lacks the outbox`);
    expect(c.fix).toBe(`remove HERMES_MEDIA_ALLOW_DIRS from ${hermes}/.env (the unit's drop-in sets it), or add ${t.outbox} to it; then restart the gateway`);
  });

  it("passes when .env lists the outbox too (quoted, exported)", () => {
    put(path.join(hermes, ".env"), `export HERMES_MEDIA_ALLOW_DIRS="/srv/y:${t.outbox}"\n`);
    const c = line(doctor(), LINE);
    expect(c.status, c.message).toBe("pass");
    expect(c.message).toContain(`HERMES_MEDIA_ALLOW_DIRS comes from ${hermes}/.env`);
  });

  it("fails when config.yaml's gateway.media_delivery_allow_dirs lacks the outbox (copied over the environment by mid-2026 gateways)", () => {
    put(path.join(hermes, "config.yaml"), "gateway:\n  media_delivery_allow_dirs:\n    - /srv/only\n");
    const checks = doctor();
    const c = line(checks, LINE);
    expect(c.status).toBe("fail");
    expect(c.message).toContain(`HERMES_MEDIA_ALLOW_DIRS=/srv/only from ${hermes}/config.yaml (gateways of mid-2026, which copy config.yaml over the environment)`);
    expect(c.fix).toContain("media-outbox install hermes-config");
    // install hermes-config fixes it.
    expect(cli(["install", "hermes-config"], { env }).code).toBe(0);
    expect(line(doctor(), LINE).status).toBe("pass");
  });

  it("fails when strict mode is on in the unit and off in config.yaml", () => {
    put(path.join(hermes, "config.yaml"), "gateway:\n  strict: false\n");
    const c = line(doctor(), STRICT_LINE);
    expect(c.status).toBe("fail");
    expect(c.message).toContain(`strict mode is set in the environment of ${GATEWAY} and unset in ${hermes}/config.yaml`);
    expect(c.message).toContain(`gateway.strict: false from ${hermes}/config.yaml (gateways of mid-2026`);
    expect(c.fix).toContain(`remove gateway.strict from ${hermes}/config.yaml`);
  });

  it("reads config.yaml as Hermes' PyYAML does (YAML 1.1): `strict: off` or `no` is strict mode off, as `false` is; an allow-list merged in with `<<` is the list (the red team's 32b/07: both passed)", () => {
    for (const off of ["off", "no", "Off", "NO"]) {
      put(path.join(hermes, "config.yaml"), `gateway:\n  strict: ${off}\n`);
      const c = line(doctor(), STRICT_LINE);
      expect(c.status, off).toBe("fail");
      expect(c.message).toContain(`gateway.strict: false from ${hermes}/config.yaml`);
    }
    put(path.join(hermes, "config.yaml"), "other: &o\n  media_delivery_allow_dirs: [/srv/other]\ngateway:\n  <<: *o\n");
    const c = line(doctor(), LINE);
    expect(c.status).toBe("fail");
    expect(c.message).toContain(`HERMES_MEDIA_ALLOW_DIRS=/srv/other from ${hermes}/config.yaml`);
  });

  it("fails when .env trusts recent files again while the unit does not", () => {
    put(path.join(hermes, ".env"), "HERMES_MEDIA_TRUST_RECENT_FILES='1'\n");
    const c = line(doctor(), STRICT_LINE);
    expect(c.status).toBe("fail");
    expect(c.message).toContain(`unset in ${hermes}/.env`);
    expect(c.message).toContain(`the gateway ends up with HERMES_MEDIA_TRUST_RECENT_FILES=1 from ${hermes}/.env`);
  });

  it("reads the managed scope ($HERMES_MANAGED_DIR): its .env wins over everything", () => {
    const managed = path.join(t.home, "managed");
    put(path.join(managed, ".env"), "HERMES_MEDIA_ALLOW_DIRS=/srv/pinned\n");
    put(path.join(hermes, ".env"), `HERMES_MEDIA_ALLOW_DIRS=${t.outbox}\n`);
    unit(` HERMES_MANAGED_DIR=${managed}`);
    const c = line(doctor(), LINE);
    expect(c.status).toBe("fail");
    expect(c.message).toContain(`from ${managed}/.env`);
  });

  it("with multiplexed profiles, checks each routed profile's config.yaml", () => {
    put(path.join(hermes, "config.yaml"), "gateway:\n  multiplex_profiles: true\n");
    put(path.join(hermes, "profiles/work/config.yaml"), "gateway:\n  strict: false\n");
    put(path.join(hermes, "profiles/home/config.yaml"), "model: x\n");
    const checks = doctor();
    expect(line(checks, `${STRICT_LINE.replace(" strict", "")} profile work strict`).status).toBe("fail");
    expect(line(checks, `${LINE} profile home strict`).status).toBe("pass");
    expect(line(checks, STRICT_LINE).status).toBe("pass");
  });

  it("with multiplexed profiles, .env is loaded at start-up only, so config.yaml beats it in mid-2026 gateways", () => {
    put(path.join(hermes, ".env"), `HERMES_MEDIA_ALLOW_DIRS=${t.outbox}\n`);
    put(path.join(hermes, "config.yaml"), "gateway:\n  multiplex_profiles: true\n  media_delivery_allow_dirs: /srv/only\n");
    const c = line(doctor(), LINE);
    expect(c.status).toBe("fail");
    expect(c.message).toContain(`HERMES_MEDIA_ALLOW_DIRS=/srv/only from ${hermes}/config.yaml (gateways of mid-2026`);
    // Without multiplexing, the .env reloaded every turn wins.
    put(path.join(hermes, "config.yaml"), "gateway:\n  media_delivery_allow_dirs: /srv/only\n");
    expect(line(doctor(), LINE).status).toBe("pass");
  });

  it("warns when it cannot tell what a source says", () => {
    put(path.join(hermes, ".env"), "HERMES_MEDIA_ALLOW_DIRS=${BASE}/outbox\n");
    const c = line(doctor(), LINE);
    expect(c.status).toBe("warn");
    expect(c.message).toContain("uses ${...} expansion");
  });

  it("says a source it cannot read is not known (never that it sets none), and that doctor should run as a user who can read it", () => {
    // Root reads any file: a directory in the .env's place is one doctor cannot read either way.
    fs.mkdirSync(path.join(hermes, ".env"), { recursive: true });
    const c = line(doctor(), LINE);
    expect(c.status).toBe("warn");
    expect(c.message).toContain(`cannot tell what ${hermes}/.env says (cannot read it: `);
    expect(c.message).toContain(`${hermes}/.env: not known`);
    expect(c.message).not.toContain(`${hermes}/.env: sets none of them`);
    expect(c.fix).toContain("run media-outbox doctor as the gateway's user or root, who can read them all");
    expect(c.fix).not.toContain("make those files readable");
  });

  it("a line python-dotenv cannot read does not hide the settings after it (an unterminated quote, text after a closing quote)", () => {
    put(path.join(hermes, ".env"), 'NOTE="x" y\nTOKEN="unterminated\nHERMES_MEDIA_ALLOW_DIRS=/tmp/other\n');
    const c = line(doctor(), LINE);
    expect(c.status).toBe("fail");
    expect(c.message).toContain(`HERMES_MEDIA_ALLOW_DIRS=/tmp/other from ${hermes}/.env`);
  });

  it("parses .env files as python-dotenv does", () => {
    const { values, expands } = parseEnvFile(
      "# c\nA=1\nexport B = two words  # comment\nC='lit\\'eral #x'\nD=\"a\\nb\"\nE=\"multi\nline\"\nNOEQUALS\nF=${X}\n G= x#y\r\n",
    );
    expect(Object.fromEntries(values)).toEqual({ A: "1", B: "two words", C: "lit'eral #x", D: "a\nb", E: "multi\nline", F: "${X}", G: "x#y" });
    expect([...expands]).toEqual(["F"]);
    const read = (text: string) => Object.fromEntries(parseEnvFile(text).values);
    // A line it cannot read is skipped up to its end; the next lines still count.
    expect(read('A="abc" junk\nB=2\n')).toEqual({ B: "2" });
    expect(read('A="unterminated\nB=2\n')).toEqual({ B: "2" });
    // Its escapes (\\$ is not one), a quoted name, a name alone (None: it unsets), \r line breaks, Python's whitespace before #.
    expect(read('B="d\\$x\\a\\v\\\'"\n')).toEqual({ B: "d\\$x\x07\x0b'" });
    expect(read("'A'=quoted key\n")).toEqual({ A: "quoted key" });
    expect(read("A=1\nA\n")).toEqual({});
    expect(read("A=1\rB=2\rC='x\r\ny'\r\n")).toEqual({ A: "1", B: "2", C: "x\ny" });
    expect(read("A=x\u00a0#c\nC=z#c\n")).toEqual({ A: "x", C: "z#c" });
    // ${...} is expanded in single-quoted values too.
    expect([...parseEnvFile("A='${HOME}/x'\nB='$HOME'\n").expands]).toEqual(["A"]);
  });

  it("reads .env files exactly as the python-dotenv in the pinned hermes-agent does (the real parser, in .venv/)", () => {
    const cases = [
      "# c\nA=1\nexport B = two words  # comment\nC='lit\\'eral #x'\nD=\"a\\nb\"\nE=\"multi\nline\"\nNOEQUALS\nF=${X}\n G= x#y\r\n",
      'A="abc" junk\nB=2\n',
      'A="unterminated\nB=2\n',
      "A='a\\\\'\nB='b'\n",
      'A="x\\"\nB=2\n',
      "export  \nA=1\n=oops\nB=2\n",
      'A="v"#c\nB="v" # c\nC="v"x\n',
      "\ufeffA=1\nB=2\n",
      "exportA=1\nexport\tB=2\nK#x=1\nL = \n",
      "A=\u2028x\nB=y\u2028\nC=1 \u0085#x\n",
    ];
    const script = [
      "import io, json, sys",
      "from dotenv import dotenv_values",
      "out = []",
      "for text in json.load(sys.stdin):",
      "    vals = dotenv_values(stream=io.StringIO(text, newline=None), interpolate=False)",
      "    out.append({k: v for k, v in vals.items() if v is not None})",
      "print(json.dumps(out))",
    ].join("\n");
    const r = spawnSync(ensureVenv(), ["-c", script], { input: JSON.stringify(cases), encoding: "utf8" });
    expect(r.status, r.stderr).toBe(0);
    const python = JSON.parse(r.stdout) as Record<string, string>[];
    cases.forEach((text, i) => expect(Object.fromEntries(parseEnvFile(text).values), JSON.stringify(text)).toEqual(python[i]));
  });
});

describe("config.yaml read as PyYAML reads it", () => {
  it("gives the values the pinned hermes-agent's PyYAML gives (YAML 1.1 booleans but y and n, merge keys, octal, sexagesimal)", async () => {
    const YAML = await import("yaml");
    const cases = [
      "a: off\nb: no\nc: On\nd: YES\ne: y\nf: n\ng: Y\nh: N\ni: true\nj: False\n",
      "b: &x {c: 1, d: [1, 2]}\ne:\n  <<: *x\n  c: 2\n",
      "a: 012\nb: 0o12\nc: 1_000\nd: 190:20:30\ne: 0x1F\nf: ~\ng: null\nh: '012'\n",
      "gateway:\n  strict: off\n  trust_recent_files: yes\n  media_delivery_allow_dirs:\n    - /srv/a\n    - ~/b\n",
      "a: 1\na: 2\n",
    ];
    const script = ["import json, sys, yaml", "print(json.dumps([yaml.safe_load(t) for t in json.load(sys.stdin)]))"].join("\n");
    const r = spawnSync(ensureVenv(), ["-c", script], { input: JSON.stringify(cases), encoding: "utf8" });
    expect(r.status, r.stderr).toBe(0);
    const python = JSON.parse(r.stdout) as unknown[];
    cases.forEach((text, i) => {
      const read = readYaml(YAML, text);
      expect("value" in read ? read.value : read, JSON.stringify(text)).toEqual(python[i]);
    });
  });
});

describe("install systemd warns when .env or config.yaml would override its drop-in", () => {
  it("names the file, what it sets and the fix; installs anyway", () => {
    const root = gatewayRoot(t.home);
    const rootHermes = path.join(root, "root/.hermes");
    put(path.join(rootHermes, ".env"), "HERMES_MEDIA_ALLOW_DIRS=/srv/elsewhere\nHERMES_MEDIA_DELIVERY_STRICT=0\n");
    put(path.join(rootHermes, "config.yaml"), "gateway:\n  trust_recent_files: true\n");
    const r = cli(["install", "systemd", "--root", root, "--unit", GATEWAY, "--outbox", t.outbox, "--strict", "--dry-run"], { env: t.env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(
      `media-outbox: warning: ${GATEWAY}: /root/.hermes/.env sets HERMES_MEDIA_ALLOW_DIRS=/srv/elsewhere, which the gateway loads over its environment at start and every turn: the drop-in's HERMES_MEDIA_ALLOW_DIRS would be overridden and outbox files not delivered. Fix: remove HERMES_MEDIA_ALLOW_DIRS from /root/.hermes/.env`,
    );
    expect(r.stderr).toContain(`/root/.hermes/.env sets HERMES_MEDIA_DELIVERY_STRICT=0, which overrides the drop-in's strict mode`);
    expect(r.stderr).toContain(`/root/.hermes/config.yaml sets gateway.trust_recent_files: true, which overrides the drop-in's strict mode`);
    // Without those sources: no warning.
    fs.rmSync(rootHermes, { recursive: true });
    const quiet = cli(["install", "systemd", "--root", root, "--unit", GATEWAY, "--outbox", t.outbox, "--strict", "--dry-run"], { env: t.env });
    expect(quiet.stderr).not.toContain("warning");
  });
});
