// How the CLI names what the user typed in its usage and config errors: every
// value escaped exactly once (escapeText), never raw and never twice, in the
// project's words ("media-outbox: usage error: ..."), not Node's.
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parsePrepareQuery } from "../src/gate/protocol.js";
import { cli, leftBehind, makeHome } from "./helpers.js";

let h: ReturnType<typeof makeHome>;
beforeEach(() => {
  h = makeHome();
});
afterEach(() => h.cleanup());

const run = (args: string[]) => cli(args, { env: h.env, cwd: h.home });

// An escape sequence and a quote: shown once escaped, in quotes, the quote as \".
const BAD = '1\x1b[31m"x';
const SHOWN = String.raw`"1\x1b[31m\"x"`;

/** No raw control character, and none escaped twice (\\x1b, or JSON's \u001b escaped again). */
function escapedOnce(stderr: string): void {
  expect(stderr).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/);
  expect(stderr).not.toContain(String.raw`\\x1b`);
  expect(stderr).not.toContain("u001b");
}

describe("a bad option value is named escaped once", () => {
  const cases: [string, string[], string][] = [
    ["prepare --max-size", ["prepare", "--max-size", BAD, "x.png"], `max-size: cannot read ${SHOWN} as a size`],
    ["prepare --allow", ["prepare", "--allow", BAD, "x.png"], `allow: the gateway does not deliver ${SHOWN};`],
    ["prepare --platform", ["prepare", "--platform", BAD, "x.png"], `unknown platform ${SHOWN} (known:`],
    ["watch --settle", ["watch", "--settle", BAD], `settle: cannot read ${SHOWN} as a duration`],
    ["watch --max-size", ["watch", "--max-size", BAD], `max-size: cannot read ${SHOWN} as a size`],
    ["janitor --retention", ["janitor", "--retention", BAD], `retention: cannot read ${SHOWN} as a duration`],
    ["janitor --max-bytes", ["janitor", "--max-bytes", BAD], `max-bytes: cannot read ${SHOWN} as a size`],
    ["janitor --min-age", ["janitor", "--min-age", BAD], `min-age: cannot read ${SHOWN} as a duration`],
    ["janitor --schedule", ["janitor", "--schedule", BAD], `--schedule: invalid cron expression ${SHOWN}:`],
    ["janitor --tz", ["janitor", "--schedule", "0 3 * * *", "--tz", BAD], `--tz: unknown time zone ${SHOWN} (use`],
    ["serve --client-timeout", ["serve", "--client-timeout", BAD, "--socket", "s"], `client-timeout: cannot read ${SHOWN} as a duration`],
    ["serve --request-timeout", ["serve", "--request-timeout", BAD, "--socket", "s"], `request-timeout: cannot read ${SHOWN} as a duration`],
    ["serve --max-held-bytes", ["serve", "--max-held-bytes", BAD, "--socket", "s"], `max-held-bytes: cannot read ${SHOWN} as a size`],
    ["gate-secrets USER:PATH", ["gate-secrets", "--into", "/nonexistent", BAD], `${SHOWN} is not USER:/ABSOLUTE/PATH`],
  ];
  it.each(cases)("%s", (_, args, shown) => {
    const r = run(args);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(`media-outbox: usage error: ${shown}`);
    escapedOnce(r.stderr);
  });

  it("and so is a bad value in the config file, of any type", () => {
    const cases: [unknown, string][] = [
      [{ maxSize: BAD }, `max-size: cannot read ${SHOWN} as a size`],
      [{ maxSize: true }, "max-size: cannot read true as a size"],
      [{ platform: BAD }, `unknown platform ${SHOWN} (known:`],
      [{ platform: [BAD] }, `unknown platform [${SHOWN}] (known:`],
      [{ platforms: { [BAD]: {} } }, `platforms: unknown platform ${SHOWN} (known:`],
      [{ allow: [BAD] }, `allow: the gateway does not deliver ${SHOWN};`],
      [{ [BAD]: 1 }, `unknown key ${SHOWN} (known:`],
      [{ janitor: { retention: BAD } }, `retention: cannot read ${SHOWN} as a duration`],
      [{ logFile: BAD }, `must be an absolute path (or start with ~/), got ${SHOWN}`],
    ];
    const file = path.join(h.home, "config.json");
    for (const [config, shown] of cases) {
      fs.writeFileSync(file, JSON.stringify(config));
      const r = run(["janitor", "--dry-run", "--config", file]);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr, JSON.stringify(config)).toContain(shown);
      escapedOnce(r.stderr);
    }
  });

  it("and so is the gate's answer to an unknown parameter or platform", () => {
    expect(() => parsePrepareQuery(`name=a.png&${encodeURIComponent(BAD)}=1`)).toThrow(`unknown parameter ${SHOWN} (known:`);
    expect(() => parsePrepareQuery(`name=a.png&platform=${encodeURIComponent(BAD)}`)).toThrow(`unknown platform ${SHOWN} (known:`);
  });
});

describe("an option the command does not take, or a value it does not fit", () => {
  const COMMANDS = [["prepare"], ["janitor"], ["status"], ["watch"], ["doctor"], ["install", "systemd"], ["uninstall", "systemd"], ["install", "hermes-plugin"], ["quarantine", "list"], ["check-reply"], ["serve"], ["gate-secrets"]];
  it.each(COMMANDS.map((c) => [c.join(" "), c]))("%s: unknown option, named once escaped in balanced quotes, then the usage", (_, command) => {
    for (const [option, shown] of [
      [`--${BAD}`, String.raw`"--1\x1b[31m\"x"`],
      [`--${BAD}=v`, String.raw`"--1\x1b[31m\"x"`],
      ["-Q", '"-Q"'],
    ] as const) {
      const r = run([...command, option, "x.png"]);
      expect(r.code, r.stderr).toBe(2);
      const [first, second] = r.stderr.split("\n");
      expect(first).toBe(`media-outbox: usage error: unknown option ${shown}`);
      expect(second).toMatch(/^usage: media-outbox /);
      escapedOnce(r.stderr);
    }
  });

  it("install and uninstall refuse an option their target does not take, changing nothing: uninstall --dry-run never uninstalls", () => {
    fs.mkdirSync(path.join(h.home, ".hermes"));
    expect(run(["install", "hermes-plugin"]).code).toBe(0);
    const plugin = path.join(h.home, ".hermes", "plugins", "media-outbox");
    const config = fs.readFileSync(path.join(h.home, ".hermes", "config.yaml"), "utf8");
    const cases: [string[], string][] = [
      [["uninstall", "hermes-plugin", "--dry-run"], "uninstall hermes-plugin does not take --dry-run; nothing was changed"],
      [["uninstall", "systemd", "--user", "--dry-run", "--restart"], "uninstall systemd does not take --dry-run, --restart; nothing was changed"],
      [["install", "hermes-plugin", "--strict", "--unit", "hermes-gateway.service"], "install hermes-plugin does not take --strict, --unit; nothing was changed"],
      [["install", "hermes-config", "--with-watch", "--dry-run"], "install hermes-config does not take --with-watch; nothing was changed"],
      [["install", "systemd", "--user", "--root", h.home, "--profile", "work"], "install systemd does not take --profile; nothing was changed"],
    ];
    for (const [args, message] of cases) {
      const r = run(args);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr.split("\n")[0]).toBe(`media-outbox: usage error: ${message}`);
      expect(r.stdout).toBe("");
    }
    expect(fs.existsSync(path.join(plugin, "__init__.py"))).toBe(true);
    expect(fs.readFileSync(path.join(h.home, ".hermes", "config.yaml"), "utf8")).toBe(config);
    // What each does take still works.
    expect(run(["install", "hermes-plugin", "--dry-run"]).code).toBe(0);
    expect(run(["uninstall", "hermes-plugin"]).code).toBe(0);
    expect(fs.existsSync(plugin)).toBe(false);
  });

  it("a flag given a value, an option without one, or one whose value looks like an option", () => {
    const first = (args: string[]) => {
      const r = run(args);
      expect(r.code, r.stderr).toBe(2);
      escapedOnce(r.stderr);
      return r.stderr.split("\n")[0];
    };
    expect(first(["prepare", "--json=yes", "x.png"])).toBe("media-outbox: usage error: --json takes no value");
    expect(first(["prepare", "x.png", "--outbox"])).toBe("media-outbox: usage error: --outbox needs a value");
    expect(first(["prepare", "--outbox", `-${BAD}`, "x.png"])).toBe(
      `media-outbox: usage error: --outbox needs a value, and the next argument ${String.raw`"-1\x1b[31m\"x"`} looks like an option; for a value that starts with "-", write --outbox=VALUE`,
    );
    // In a group of short letters, the first undeclared one is named.
    expect(first(["janitor", "-hz"])).toBe('media-outbox: usage error: unknown option "-z"');
    // An option of one value given twice: which one was meant is not guessed (parseArgs would keep the last).
    expect(first(["prepare", "--name", "a.png", "--name=b.png", "x.png"])).toBe("media-outbox: usage error: --name is given twice; it takes one value (give it once)");
    expect(first(["janitor", "--retention", "1d", "--outbox", "/o", "--retention", "2d"])).toBe("media-outbox: usage error: --retention is given twice; it takes one value (give it once)");
    expect(leftBehind(h)).toEqual({ outbox: [], staging: [], ledger: [] });
  });

  it("with --json, the refusal is also the JSON error document on stdout, as for any other usage error", () => {
    for (const args of [
      ["watch", "--json", `--${BAD}`],
      ["janitor", `--${BAD}`, "--json"],
      ["status", "--json", "--retention", "1d"],
      ["quarantine", "list", "--json", "-Q"],
      ["prepare", "--json", "x.png", "--outbox"],
      ["prepare", "--json", "--name", "a.png", "--name", "b.png", "x.png"],
    ]) {
      const r = run(args);
      expect(r.code, r.stderr).toBe(2);
      const doc = JSON.parse(r.stdout) as { success: boolean; error: { code: string; message: string } };
      expect(doc).toMatchObject({ success: false, error: { code: "usage" } });
      expect(r.stderr.startsWith(`media-outbox: usage error: ${doc.error.message.split("\n")[0]}\n`), r.stderr).toBe(true);
      escapedOnce(r.stderr);
    }
    // Without --json (or with it only after --, as a file name), stdout stays empty.
    for (const args of [["watch", `--${BAD}`], ["prepare", "--bogus", "--", "--json"]]) expect(run(args).stdout).toBe("");
  });
});
