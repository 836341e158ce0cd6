// The Hermes plugin: its Python shim against a stand-in context (system
// python3, standard library unittest), install/uninstall hermes-plugin, and the
// plugin inside the real, published Hermes (hermes-agent in .venv/).
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { put, snapshot } from "./deploy-helpers.js";
import { BIN, ROOT, cli, makeHome, png, write } from "./helpers.js";
import { ensureVenv, systemPython } from "./python-env.js";

const PY_TESTS = path.join(ROOT, "test", "python");
const SHIPPED = path.join(ROOT, "integrations", "hermes", "media-outbox");

let t: ReturnType<typeof makeHome>;
beforeEach(() => {
  t = makeHome();
  fs.mkdirSync(path.join(t.home, ".hermes"), { recursive: true });
});
afterEach(() => t.cleanup());

/** Runs a unittest module; the test fails with Python's own report. */
function unittest(python: string, module: string, env: NodeJS.ProcessEnv): void {
  const r = spawnSync(python, ["-m", "unittest", "-v", module], { cwd: PY_TESTS, env: { ...env, PYTHONDONTWRITEBYTECODE: "1" }, encoding: "utf8", timeout: 600_000 });
  const report = `${r.stdout}${r.stderr}`;
  expect(r.status, report).toBe(0);
  expect(report).toMatch(/\nOK\n?$/);
}

describe("the Python shim against a stand-in plugin context", () => {
  it("registers, runs prepare with an argument list, bounds the hook in time and fails open", () => {
    unittest(systemPython(), "test_plugin_shim", { PATH: process.env.PATH, HOME: t.home });
  });

  it("ships a manifest whose version is the package's", () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as { version: string; files: string[] };
    expect(fs.readFileSync(path.join(SHIPPED, "plugin.yaml"), "utf8")).toContain(`\nversion: ${pkg.version}\n`);
    expect(pkg.files).toContain("integrations");
  });
});

describe("install hermes-plugin / uninstall hermes-plugin", () => {
  const CONFIG = "# Hermes\nmodel: claude   # default\n\nplugins:\n  enabled:\n    - disk-cleanup   # keep\n  disabled: []\n\nlogging:\n  level: info\n";
  const hermes = () => path.join(t.home, ".hermes");
  const pluginDir = (base = hermes()) => path.join(base, "plugins", "media-outbox");

  it("copies the plugin, enables it with one line and a backup; uninstall gives every byte back", () => {
    const config = put(path.join(hermes(), "config.yaml"), CONFIG, 0o600);
    const before = snapshot(hermes());
    const r = cli(["install", "hermes-plugin"], { env: t.env });
    expect(r.code, r.stderr).toBe(0);
    for (const f of ["plugin.yaml", "__init__.py"]) expect(fs.readFileSync(path.join(pluginDir(), f), "utf8")).toBe(fs.readFileSync(path.join(SHIPPED, f), "utf8"));
    expect(JSON.parse(fs.readFileSync(path.join(pluginDir(), "command.json"), "utf8"))).toEqual([process.execPath, fs.realpathSync(BIN)]);
    expect(fs.readFileSync(config, "utf8")).toBe(CONFIG.replace("    - disk-cleanup   # keep\n", "    - disk-cleanup   # keep\n    - media-outbox\n"));
    expect(fs.statSync(config).mode & 0o777).toBe(0o600);
    const backup = /^backup (.+)$/m.exec(r.stdout)![1]!;
    expect(fs.readFileSync(backup, "utf8")).toBe(CONFIG);
    expect(r.stderr).toContain("restart the gateway");

    // Again (a newer package): the files are replaced, the config is left alone.
    fs.writeFileSync(path.join(pluginDir(), "__init__.py"), "stale");
    const again = cli(["install", "hermes-plugin"], { env: t.env });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toContain("already enables media-outbox");
    expect(fs.readFileSync(path.join(pluginDir(), "__init__.py"), "utf8")).toBe(fs.readFileSync(path.join(SHIPPED, "__init__.py"), "utf8"));

    // What the plugin kept for a reply goes with it (Hermes' own state directory stays).
    const state = path.join(hermes(), "state", "media-outbox");
    put(path.join(state, "delegated.json"), '{"version": 1, "sessions": {}}', 0o600);
    const u = cli(["uninstall", "hermes-plugin"], { env: t.env });
    expect(u.code, u.stderr).toBe(0);
    expect(u.stdout).toContain(`restored ${config}`);
    expect(u.stdout).toContain(`removed ${state}\n`);
    fs.rmdirSync(path.dirname(state));
    expect(snapshot(hermes())).toEqual(before);
  });

  it("takes the name out of plugins.disabled too (Hermes never loads a plugin listed there), says so, and uninstall gives every byte back", () => {
    const cases: [string, string][] = [
      // What `hermes plugins disable media-outbox` leaves.
      ["plugins:\n  disabled:\n    - media-outbox\n", "plugins:\n  disabled: []\n  enabled:\n    - media-outbox\n"],
      ["plugins:\n  enabled: [a, media-outbox]\n  disabled: [b, media-outbox]   # off\n", "plugins:\n  enabled: [a, media-outbox]\n  disabled: [b]   # off\n"],
      ["plugins:\n  disabled:\n    - b\n    - \"media-outbox\"\n  enabled:\n    - a\n", "plugins:\n  disabled:\n    - b\n  enabled:\n    - a\n    - media-outbox\n"],
    ];
    const config = path.join(hermes(), "config.yaml");
    for (const [before, after] of cases) {
      put(config, before, 0o600);
      const dry = cli(["install", "hermes-plugin", "--dry-run"], { env: t.env });
      expect(dry.code, dry.stderr).toBe(0);
      expect(dry.stderr).toContain(`${config} listed media-outbox in plugins.disabled, and Hermes never loads a plugin listed there (even with plugins.enabled): install would take it out`);
      expect(fs.readFileSync(config, "utf8")).toBe(before);
      const r = cli(["install", "hermes-plugin"], { env: t.env });
      expect(r.code, r.stderr).toBe(0);
      expect(fs.readFileSync(config, "utf8")).toBe(after);
      expect(r.stderr).toContain(`${config} listed media-outbox in plugins.disabled, and Hermes never loads a plugin listed there (even with plugins.enabled): it was taken out`);
      expect(cli(["uninstall", "hermes-plugin"], { env: t.env }).code).toBe(0);
      expect(fs.readFileSync(config, "utf8")).toBe(before);
    }
    // Not a list: Hermes reads no deny-list from it, and it is left alone.
    put(config, "plugins:\n  disabled: media-outbox\n");
    const r = cli(["install", "hermes-plugin"], { env: t.env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toContain("plugins.disabled");
    expect(fs.readFileSync(config, "utf8")).toBe("plugins:\n  disabled: media-outbox\n  enabled:\n    - media-outbox\n");
  });

  it("creates a missing config.yaml (0600) and plugins directory, and removes exactly those", () => {
    const before = snapshot(hermes());
    const r = cli(["install", "hermes-plugin"], { env: t.env });
    expect(r.code, r.stderr).toBe(0);
    const config = path.join(hermes(), "config.yaml");
    expect(fs.readFileSync(config, "utf8")).toBe("plugins:\n  enabled:\n    - media-outbox\n");
    expect(fs.statSync(config).mode & 0o777).toBe(0o600);
    expect(cli(["uninstall", "hermes-plugin"], { env: t.env }).code).toBe(0);
    expect(snapshot(hermes())).toEqual(before);
  });

  it("after config.yaml was edited, uninstall takes out only its own entry (flow lists too)", () => {
    const config = put(path.join(hermes(), "config.yaml"), "plugins:\n  enabled: [a, b]   # flow\n");
    expect(cli(["install", "hermes-plugin"], { env: t.env }).code).toBe(0);
    expect(fs.readFileSync(config, "utf8")).toBe("plugins:\n  enabled: [a, b, media-outbox]   # flow\n");
    fs.appendFileSync(config, "timezone: UTC\n");
    // A link where the plugin's state would be is not the plugin's: left alone, and what it points to too.
    const elsewhere = put(path.join(t.home, "elsewhere", "keep.txt"), "keep\n");
    const link = path.join(hermes(), "state", "media-outbox");
    fs.mkdirSync(path.dirname(link));
    fs.symlinkSync(path.dirname(elsewhere), link);
    const u = cli(["uninstall", "hermes-plugin"], { env: t.env });
    expect(u.code, u.stderr).toBe(0);
    expect(fs.lstatSync(link).isSymbolicLink()).toBe(true);
    expect(fs.readFileSync(elsewhere, "utf8")).toBe("keep\n");
    expect(u.stdout).not.toContain(link);
    expect(fs.readFileSync(config, "utf8")).toBe("plugins:\n  enabled: [a, b]   # flow\ntimezone: UTC\n");
    expect(u.stdout).toMatch(/^backup /m);
    expect(fs.existsSync(pluginDir())).toBe(false);

    put(config, "plugins:\n  enabled:\n    - x\n");
    expect(cli(["install", "hermes-plugin"], { env: t.env }).code).toBe(0);
    fs.writeFileSync(config, fs.readFileSync(config, "utf8").replace("    - x\n", ""));
    expect(cli(["uninstall", "hermes-plugin"], { env: t.env }).code).toBe(0);
    expect(fs.readFileSync(config, "utf8")).toBe("plugins:\n  enabled: []\n");
  });

  it("--profile installs into that profile; --dry-run writes nothing", () => {
    const profile = path.join(hermes(), "profiles", "work");
    put(path.join(profile, "config.yaml"), "model: x\n");
    const before = snapshot(hermes());
    const dry = cli(["install", "hermes-plugin", "--profile", "work", "--dry-run"], { env: t.env });
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain(`==> ${path.join(pluginDir(profile), "__init__.py")} <==`);
    expect(dry.stdout).toContain("plugins:\n  enabled:\n    - media-outbox\n");
    expect(snapshot(hermes())).toEqual(before);
    expect(cli(["install", "hermes-plugin", "--profile", "work"], { env: t.env }).code).toBe(0);
    expect(fs.existsSync(path.join(pluginDir(profile), "plugin.yaml"))).toBe(true);
    expect(fs.existsSync(pluginDir())).toBe(false);
    expect(cli(["uninstall", "hermes-plugin", "--profile", "work"], { env: t.env }).code).toBe(0);
    expect(snapshot(hermes())).toEqual(before);
  });

  it("refuses, changing nothing: a missing profile, invalid YAML, a plugins section it cannot edit, a directory it did not write", () => {
    const before = snapshot(hermes());
    let r = cli(["install", "hermes-plugin", "--profile", "nope"], { env: t.env });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("is the profile name right?");
    for (const bad of ["plugins: [unclosed\n", "plugins: {enabled: [a]}\n", "plugins:\n  enabled: yes\n"]) {
      put(path.join(hermes(), "config.yaml"), bad);
      r = cli(["install", "hermes-plugin"], { env: t.env });
      expect(r.code, bad).toBe(2);
      expect(r.stderr).toContain("add media-outbox to plugins.enabled by hand");
      expect(fs.existsSync(path.join(hermes(), "plugins"))).toBe(false);
    }
    fs.rmSync(path.join(hermes(), "config.yaml"));
    expect(snapshot(hermes())).toEqual(before);
    put(path.join(pluginDir(), "__init__.py"), "# someone else's\n");
    r = cli(["install", "hermes-plugin"], { env: t.env });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("was not written by media-outbox install hermes-plugin");
    r = cli(["uninstall", "hermes-plugin"], { env: t.env });
    expect(r.code).toBe(2);
    expect(fs.readFileSync(path.join(pluginDir(), "__init__.py"), "utf8")).toBe("# someone else's\n");
  });
});

describe("the plugin inside the real Hermes (hermes-agent from the Python package registry)", () => {
  it(
    "loads through Hermes' loader, publishes through its registry and terminal, and every prepared file reaches the gateway; the skill installs as the README says",
    () => {
      const python = ensureVenv();
      // Left by an earlier `hermes plugins disable media-outbox`: install takes it out, and Hermes' own loader loads the plugin.
      put(path.join(t.home, ".hermes", "config.yaml"), "model: test-model\nplugins:\n  disabled: [media-outbox]\n");
      const r = cli(["install", "hermes-plugin"], { env: t.env });
      expect(r.code, r.stderr).toBe(0);
      const work = t.work;
      fs.mkdirSync(path.join(t.home, ".ssh"));
      write(work, "chart.png", png(7));
      write(work, "notes.txt", "meeting notes\n");
      write(work, "data.csv", "a,b\n1,2\n");
      write(path.join(t.home, ".ssh"), "id.txt", "not really a key\n");
      // The outbox exists before the gateway's environment names it, as after install systemd.
      expect(cli(["prepare", write(work, "first.png", png(8))], { env: t.env }).code).toBe(0);
      unittest(python, "test_real_hermes", {
        ...t.env,
        // The environment the systemd drop-in gives the gateway.
        HERMES_MEDIA_ALLOW_DIRS: t.outbox,
        HERMES_MEDIA_DELIVERY_STRICT: "1",
        HERMES_MEDIA_TRUST_RECENT_FILES: "0",
        MO_TEST_BIN: BIN,
        MO_TEST_WORK: work,
        TERMINAL_CWD: work,
      });
    },
    15 * 60_000,
  );
});
