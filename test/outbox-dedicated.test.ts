// The outbox must be a directory of its own: every command refuses a home,
// the Hermes home, /, an ancestor of those or of the state, a denied prefix,
// whatever the path came from, and changes nothing.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fakeSystemctl, gatewayRoot, put, snapshot } from "./deploy-helpers";
import { BIN, makeHome, write } from "./helpers";
import { notDedicatedReason, passwdHomes, stateNotDedicatedReason } from "../src/safety/dedicated.js";

const DAY = 86_400_000;

let h: ReturnType<typeof makeHome>;
let hermes: string;
let elsewhere: string;
beforeEach(() => {
  h = makeHome();
  elsewhere = fs.mkdtempSync(path.join(os.tmpdir(), "mo-elsewhere-"));
  hermes = path.join(h.home, ".hermes");
  // What an operator's home holds, all old enough for any janitor.
  const old = new Date(Date.now() - 30 * DAY);
  const files = [
    write(h.home, ".bashrc", "export PS1='$ '\n"),
    put(path.join(hermes, ".env"), "OPENAI_API_KEY=sk-test-0000000000000000\n", 0o600),
    put(path.join(hermes, "config.yaml"), "gateway:\n  strict: true\n", 0o600),
    put(path.join(hermes, "state.db"), "SQLite format 3\0", 0o600),
    put(path.join(hermes, "profiles/work/.env"), "X=1\n", 0o600),
  ];
  for (const f of files) fs.utimesSync(f, old, old);
  fs.chmodSync(h.home, 0o700);
  fs.chmodSync(hermes, 0o700);
  fs.chmodSync(path.join(hermes, "profiles"), 0o700);
  fs.chmodSync(path.join(hermes, "profiles/work"), 0o700);
});
afterEach(() => {
  h.cleanup();
  fs.rmSync(elsewhere, { recursive: true, force: true });
});

/** The CLI, with a deadline: a command that fails to refuse must not hang the suite (watch, --schedule). */
function cli(args: string[], env: NodeJS.ProcessEnv) {
  const r = spawnSync(process.execPath, [BIN, ...args], { env, encoding: "utf8", timeout: 20_000, killSignal: "SIGKILL" });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Every command, as an operator would type it with `outboxArgs` naming the outbox. */
function commands(outboxArgs: string[], root: string, source: string): Record<string, string[]> {
  return {
    prepare: ["prepare", ...outboxArgs, source],
    janitor: ["janitor", ...outboxArgs],
    "janitor --schedule": ["janitor", ...outboxArgs, "--schedule", "0 3 * * *"],
    watch: ["watch", ...outboxArgs],
    status: ["status", "--json", ...outboxArgs],
    "quarantine list": ["quarantine", "list", ...outboxArgs],
    "install systemd": ["install", "systemd", "--root", root, "--strict", ...outboxArgs],
    "install hermes-config": ["install", "hermes-config", ...outboxArgs],
    doctor: ["doctor", "--root", root, "--no-probe", ...outboxArgs],
  };
}

function refusedByAll(outboxArgs: string[], env: NodeJS.ProcessEnv, why: RegExp, code = "outbox_unsafe", skip: string[] = []): void {
  const root = gatewayRoot(elsewhere);
  const source = write(h.home, "chart.txt", "hello\n");
  const systemctl = fakeSystemctl(path.join(elsewhere, "fake-systemd"));
  fs.writeFileSync(path.join(elsewhere, "fake-systemd", "state"), "offline\n");
  const before = snapshot(h.home);
  const rootBefore = snapshot(root);
  for (const [name, args] of Object.entries(commands(outboxArgs, root, source))) {
    if (skip.includes(name)) continue;
    const r = cli(args, { ...env, MEDIA_OUTBOX_SYSTEMCTL: systemctl });
    expect(r.code, `${name}: ${r.stderr}`).toBe(2);
    expect(r.stderr, name).toContain(code);
    expect(r.stderr, name).toMatch(why);
    expect(r.stderr, name).not.toMatch(/\n\s+at /);
    if (name === "status") {
      const doc = JSON.parse(r.stdout) as { outbox: { safe: boolean; dedicated: boolean; code: string; problem: string } };
      expect(doc.outbox).toMatchObject({ safe: false, dedicated: false, code });
      expect(doc.outbox.problem).toMatch(why);
    } else if (name !== "install systemd" && name !== "install hermes-config") {
      // Only install prints on stdout (what it wrote): nothing here.
      expect(r.stdout, name).toBe("");
    }
    // Nothing deleted, moved, created or rewritten in the home or the target root.
    expect(snapshot(h.home), name).toEqual(before);
    expect(snapshot(root), name).toEqual(rootBefore);
  }
}

describe("an outbox that is not a directory of its own is refused by every command", () => {
  it("the home directory, by flag", () => refusedByAll(["--outbox", h.home], h.env, /your home directory/));
  it("the Hermes home, by MEDIA_OUTBOX_DIR (the issue's janitor case)", () => refusedByAll([], { ...h.env, MEDIA_OUTBOX_DIR: hermes }, /the Hermes home/));
  it("a Hermes profile, by the config file", () => {
    put(path.join(hermes, "media-outbox.json"), JSON.stringify({ outbox: "~/.hermes/profiles/work" }));
    refusedByAll([], h.env, /the Hermes profile work/);
  });
  it("an ancestor of the home", () => refusedByAll(["--outbox", path.dirname(h.home)], h.env, /contains your home directory/));
  it("/", () => refusedByAll(["--outbox", "/"], h.env, /root directory/));
  it("another user's home from /etc/passwd (root's /root)", () => {
    expect(passwdHomes().map((p) => p.path)).toContain("/root");
    refusedByAll(["--outbox", "/root"], h.env, /home directory of user root/);
  });
  it("a directory on a denied prefix", () => refusedByAll(["--outbox", "/var/lib/media-outbox-test"], h.env, /under \/var\/lib/));
  it("a credential location of the home", () => refusedByAll(["--outbox", path.join(h.home, ".ssh", "outbox")], h.env, /~\/\.ssh/));
  it("an ancestor of its own state directory", () => {
    const outbox = path.join(h.home, "box");
    refusedByAll(["--outbox", outbox], { ...h.env, MEDIA_OUTBOX_STATE_DIR: path.join(outbox, "state") }, /contains its state directory/);
  });
  it("a link that leads to the home", () => {
    const link = path.join(h.home, "link-to-home");
    fs.symlinkSync(h.home, link);
    refusedByAll(["--outbox", path.join(link, ".")], h.env, /your home directory/);
    fs.unlinkSync(link);
  });
});

describe("a state directory that is not a directory of its own is refused by every command that uses it", () => {
  // The janitor deletes old files in its staging/, quarantine/ and ledger/: in the home, ~/staging/draft.md went.
  const refusedWithState = (env: NodeJS.ProcessEnv, why: RegExp) => {
    // What the home holds under the names the state uses, old enough for any janitor.
    const old = new Date(Date.now() - 30 * DAY);
    for (const [dir, name] of [["staging", "draft.md"], ["quarantine", "mail.eml"]] as const) {
      fs.mkdirSync(path.join(h.home, dir), { recursive: true });
      fs.utimesSync(write(path.join(h.home, dir), name, "the user's\n"), old, old);
    }
    // install hermes-config never touches the state: only the outbox is its concern.
    refusedByAll(["--outbox", path.join(elsewhere, "outbox")], env, why, "state_unsafe", ["install hermes-config"]);
  };
  it("the home, by MEDIA_OUTBOX_STATE_DIR (the red team's case)", () => refusedWithState({ ...h.env, MEDIA_OUTBOX_STATE_DIR: h.home }, /state directory .* is not a directory of its own: it is your home directory/));
  it("the Hermes home, by the config file's stateDir", () => {
    put(path.join(hermes, "media-outbox.json"), JSON.stringify({ stateDir: "~/.hermes" }));
    refusedWithState(h.env, /it is the Hermes home/);
  });
  it("a Hermes profile", () => refusedWithState({ ...h.env, MEDIA_OUTBOX_STATE_DIR: path.join(hermes, "profiles", "work") }, /it is the Hermes profile work/));
  it("an ancestor of the home", () => refusedWithState({ ...h.env, MEDIA_OUTBOX_STATE_DIR: path.dirname(h.home) }, /it contains your home directory/));
  it("/", () => refusedWithState({ ...h.env, MEDIA_OUTBOX_STATE_DIR: "/" }, /it is the root directory \//));
  it("a quarantine kept outside it (watch.quarantine) that is the home", () => {
    put(path.join(hermes, "media-outbox.json"), JSON.stringify({ watch: { quarantine: "~" } }));
    refusedWithState(h.env, /quarantine .* is not a directory of its own: it is your home directory/);
  });
});

describe("what the configuration names inside the state directory is the tool's own (red team 32c/04)", () => {
  it("watch.quarantine at <state>/caught: after the first command makes it, every later command still runs; a foreign entry beside it is still refused", () => {
    const state = path.join(hermes, ".media_outbox-state");
    put(path.join(hermes, "media-outbox.json"), JSON.stringify({ watch: { quarantine: path.join(state, "caught") }, logFile: path.join(state, "logs", "mo.log") }));
    const a = write(h.home, "a.csv", "chart data\n");
    const b = write(h.home, "b.md", "report\n");
    const first = cli(["prepare", a], h.env);
    expect(first.stderr).toBe("");
    expect(first.stdout).toMatch(/^MEDIA:/);
    // media-outbox made the quarantine it was told to keep there; the log file's folder too.
    fs.mkdirSync(path.join(state, "caught"), { recursive: true });
    fs.mkdirSync(path.join(state, "logs"), { recursive: true });
    const second = cli(["prepare", b], h.env);
    expect(second.stderr).toBe("");
    expect(second.code).toBe(0);
    expect(second.stdout).toMatch(/^MEDIA:.*b\.md/);
    expect(cli(["quarantine", "list"], h.env).code).toBe(0);
    expect(cli(["janitor"], h.env).code).toBe(0);
    // A name the configuration does not give is still a user's folder.
    fs.mkdirSync(path.join(state, "notes"));
    const refused = cli(["prepare", b], h.env);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("state_unsafe");
    expect(refused.stderr).toContain("it holds notes, which media-outbox does not make");
  });
});

describe("the rule itself", () => {
  const place = (outbox: string) => ({ outbox, home: "/home/a", hermesHome: "/home/a/.hermes", stateDir: "/home/a/.hermes/.media_outbox-state" });
  const passwd = passwdHomes("root:x:0:0:root:/root:/bin/bash\nbob:x:1000:1000::/home/bob:/bin/sh\nsvc:x:999:999::/var/lib/svc:/usr/sbin/nologin\nbad line\n");

  it("accepts the default outbox, a gate outbox and one under /tmp or /opt", () => {
    for (const o of ["/home/a/.hermes/media_outbox", "/srv/media-outbox/outbox", "/tmp/outbox", "/opt/data/media_outbox"]) {
      expect(notDedicatedReason(place(o), passwd), o).toBeUndefined();
    }
  });
  it("names what the outbox is or contains", () => {
    expect(notDedicatedReason(place("/home/bob"), passwd)).toMatch(/is the home directory of user bob/);
    expect(notDedicatedReason(place("/home"), passwd)).toMatch(/contains your home directory/);
    expect(notDedicatedReason(place("/var"), passwd)).toMatch(/contains/);
    expect(notDedicatedReason(place("/var/lib/svc/out"), passwd)).toMatch(/under \/var\/lib/);
    expect(notDedicatedReason(place("/home/a/.hermes/sessions"), passwd)).toMatch(/sessions, a secret of the Hermes home/);
    expect(notDedicatedReason(place("/home/a/.config/outbox"), passwd)).toMatch(/~\/\.config/);
  });
  it("a state directory: the same places, not the gateway's prefixes or secrets (nothing in it is sent)", () => {
    const state = (stateDir: string, quarantineDir?: string) => stateNotDedicatedReason({ ...place("/srv/outbox"), stateDir, ...(quarantineDir ? { quarantineDir } : {}) }, passwd);
    for (const d of ["/home/a/.hermes/.media_outbox-state", "/srv/.outbox-state", "/var/lib/media-outbox", "/home/a/.config/media-outbox"]) expect(state(d), d).toBeUndefined();
    expect(state("/home/bob")).toMatch(/^state directory \/home\/bob is not a directory of its own: it is the home directory of user bob \(\/home\/bob\)$/);
    expect(state("/home/a/.hermes")).toMatch(/it is the Hermes home/);
    expect(state("/home")).toMatch(/it contains your home directory/);
    expect(state("/")).toMatch(/it is the root directory/);
    expect(state("/srv")).toMatch(/it contains its outbox/);
    // A quarantine inside the state is judged with it; one elsewhere on its own.
    expect(state("/srv/.outbox-state", "/srv/.outbox-state/quarantine")).toBeUndefined();
    expect(state("/srv/.outbox-state", "/home/a")).toMatch(/^quarantine \/home\/a is not a directory of its own: it is your home directory \(\/home\/a\)$/);
  });
  it("exempts the denied prefix that is the user's own home, as the gateway does", () => {
    const rootPlace = { outbox: "/root/.hermes/media_outbox", home: "/root", hermesHome: "/root/.hermes", stateDir: "/root/.hermes/.media_outbox-state" };
    expect(notDedicatedReason(rootPlace, passwd)).toBeUndefined();
    expect(notDedicatedReason({ ...rootPlace, home: "/home/a" }, passwd)).toMatch(/under \/root/);
  });
});
