// A profile's gateway runs with HERMES_HOME=~/.hermes/profiles/NAME, and
// Hermes then takes ~/.hermes for the shared root whose .env, auth.json and
// other credential files it denies too (hermes_constants
// get_default_hermes_root; gateway/platforms/base.py
// _media_delivery_denied_paths). A red-team pass (redteam31, finding 1) found
// that from a profile, media-outbox knew only the profile's own files: a
// value of the root's .env, or of another profile's, was published, and the
// root's .env was no denied source. And `prepare --stdin < FILE` never had
// its file's place judged. Each case goes through the real CLI in a
// temporary home; each refusal leaves nothing behind.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Fakes } from "./corpus.js";
import { BIN, cli, makeHome, png, write } from "./helpers.js";

const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
// Values of no vendor's format: only the files that hold them make them known.
const f = new Fakes(3101);
const ROOT_VALUE = f.pick(ALNUM, 28);
const ROOT_AUTH = f.pick(ALNUM, 28);
const SIBLING_VALUE = f.pick(ALNUM, 28);
const OWN_VALUE = f.pick(ALNUM, 28);

let h: ReturnType<typeof makeHome>;
let root: string;
beforeEach(() => {
  h = makeHome();
  root = path.join(h.home, ".hermes");
});
afterEach(() => h.cleanup());

/** A file of secrets (0600) under `dir`, its directories made 0700. */
function secretFile(dir: string, name: string, content: string): string {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, name);
  fs.writeFileSync(file, content, { mode: 0o600 });
  return file;
}

/** A shared root with a .env and an auth.json, profile `work` (the caller's) and profile `other`, each with a .env. */
function rootWithProfiles(base: string): { work: string; other: string } {
  secretFile(base, ".env", `MY_SERVICE_TOKEN=${ROOT_VALUE}\n`);
  secretFile(base, "auth.json", JSON.stringify({ providers: { nous: { refresh_token: ROOT_AUTH } } }));
  const work = path.join(base, "profiles", "work");
  const other = path.join(base, "profiles", "other");
  secretFile(work, ".env", `WORK_SERVICE_TOKEN=${OWN_VALUE}\n`);
  secretFile(other, ".env", `SIBLING_SERVICE_TOKEN=${SIBLING_VALUE}\n`);
  return { work, other };
}

/** What a prepare left in a Hermes home's outbox and state (its defaults: HERMES_HOME/media_outbox, beside it its state). */
function leftIn(hermesHome: string) {
  const list = (dir: string) => (fs.existsSync(dir) ? fs.readdirSync(dir) : []);
  const state = path.join(hermesHome, ".media_outbox-state");
  return { outbox: list(path.join(hermesHome, "media_outbox")), staging: list(path.join(state, "staging")), ledger: list(path.join(state, "ledger")) };
}
const NOTHING = { outbox: [], staging: [], ledger: [] };

type Doc = { media: { source: string; path: string }[]; media_dropped: { path: string; code: string; reason: string }[] };

/** `prepare --json FILES` with HERMES_HOME `hermesHome`: each refused input as [its name, code, reason], and the published ones' names. */
function prepareFrom(hermesHome: string, files: string[], extra: string[] = []) {
  const r = cli(["prepare", "--json", ...extra, ...files], { env: { ...h.env, HERMES_HOME: hermesHome }, cwd: h.work });
  const doc = JSON.parse(r.stdout) as Doc;
  return { code: r.code, stderr: r.stderr, published: doc.media.map((m) => path.basename(m.source)), dropped: doc.media_dropped.map((d) => [path.basename(d.path), d.code, d.reason] as const) };
}

describe("from a profile's home (HERMES_HOME=~/.hermes/profiles/work), the shared root's and the other profiles' secrets are the host's", () => {
  it("refuses a file holding a value of the root's .env, of its auth.json, or of another profile's .env, naming where it is from (secret_detected); the profile's own ordinary file is published", () => {
    const { work } = rootWithProfiles(root);
    const files = [write(h.work, "root.txt", `note: ${ROOT_VALUE}\n`), write(h.work, "auth.txt", `note: ${ROOT_AUTH}\n`), write(h.work, "sibling.txt", `note: ${SIBLING_VALUE}\n`), write(h.work, "own.txt", `note: ${OWN_VALUE}\n`)];
    const clean = write(h.work, "clean.txt", "meeting notes\n");
    const out = prepareFrom(work, [...files, clean]);
    expect(out.code).toBe(1);
    expect(out.dropped.map(([name, code]) => [name, code])).toEqual(files.map((file) => [path.basename(file), "secret_detected"]));
    expect(out.dropped[0]![2]).toContain("the value of MY_SERVICE_TOKEN (the .env of the shared Hermes root)");
    expect(out.dropped[1]![2]).toContain("the value of providers.nous.refresh_token (the auth.json of the shared Hermes root)");
    expect(out.dropped[2]![2]).toContain("the value of SIBLING_SERVICE_TOKEN (the .env of Hermes profile other)");
    expect(out.dropped[3]![2]).toContain("the value of WORK_SERVICE_TOKEN (the Hermes .env)");
    for (const value of [ROOT_VALUE, ROOT_AUTH, SIBLING_VALUE, OWN_VALUE]) expect(out.stderr).not.toContain(value);
    // Published into the profile's own outbox; the refused ones left nothing there, nor in its staging.
    expect(out.published).toEqual(["clean.txt"]);
    expect(leftIn(work)).toMatchObject({ outbox: ["clean.txt"], staging: [] });
    expect(leftIn(work).ledger).toHaveLength(1);
    expect(leftIn(root)).toEqual(NOTHING);
  });

  it("refuses the root's and another profile's files of secrets, and a link to one, as protected sources (denied_source), whatever their values look like", () => {
    const { work, other } = rootWithProfiles(root);
    secretFile(path.join(root, "sessions"), "s.json", '{"messages": []}\n');
    const link = path.join(h.work, "innocent.txt");
    fs.symlinkSync(path.join(root, ".env"), link);
    // The root's config.yaml a link to a file kept elsewhere: that file is the root's secret too.
    const kept = secretFile(path.join(h.home, "kept"), "hermes-config.yaml", "model: x\n");
    fs.symlinkSync(kept, path.join(root, "config.yaml"));
    for (const file of [path.join(root, ".env"), path.join(root, "auth.json"), path.join(root, "sessions", "s.json"), path.join(other, ".env"), link, kept]) {
      const out = prepareFrom(work, [file], ["--name", "e.txt"]);
      expect(out.dropped, file).toEqual([[path.basename(file), "denied_source", "it is one of the Hermes home's secrets; only generated files may be sent"]]);
      expect(leftIn(work), file).toEqual(NOTHING);
    }
    // The profile's own ordinary files are no secrets of the root's.
    fs.writeFileSync(path.join(work, "report.md"), "# Report\n");
    expect(prepareFrom(work, [path.join(work, "report.md")]).published).toEqual(["report.md"]);
  });

  it("derives the root as Hermes does: a container's layout (/opt/data/profiles/NAME: the parent named profiles) has its own root; a home within ~/.hermes (as written, or through a link) has ~/.hermes; any other home is its own root", () => {
    const data = path.join(h.home, "data");
    const { work } = rootWithProfiles(data);
    const value = write(h.work, "root.txt", `note: ${ROOT_VALUE}\n`);
    const fromProfile = prepareFrom(work, [value]);
    expect(fromProfile.dropped.map(([name, code]) => [name, code])).toEqual([["root.txt", "secret_detected"]]);
    expect(fromProfile.dropped[0]![2]).toContain("(the .env of the shared Hermes root)");
    expect(prepareFrom(work, [path.join(data, ".env")], ["--name", "e.txt"]).dropped.map(([name, code]) => [name, code])).toEqual([[".env", "denied_source"]]);
    expect(leftIn(work)).toEqual(NOTHING);
    // A home within ~/.hermes is under its root whatever its name (HERMES_HOME=~/.hermes/custom), and so is one within it through a link:
    // with ~/.hermes a link to ~/real-hermes, HERMES_HOME=~/real-hermes/agent resolves within it.
    secretFile(root, ".env", `MY_SERVICE_TOKEN=${ROOT_VALUE}\n`);
    const custom = path.join(root, "custom");
    fs.mkdirSync(custom, { mode: 0o700 });
    expect(prepareFrom(custom, [value]).dropped.map(([name, code, reason]) => [name, code, reason.includes("(the .env of the shared Hermes root)")])).toEqual([["root.txt", "secret_detected", true]]);
    expect(leftIn(custom)).toEqual(NOTHING);
    fs.rmSync(root, { recursive: true });
    const real = path.join(h.home, "real-hermes");
    secretFile(real, ".env", `MY_SERVICE_TOKEN=${ROOT_VALUE}\n`);
    fs.symlinkSync(real, root);
    const linked = path.join(real, "agent");
    fs.mkdirSync(linked, { mode: 0o700 });
    expect(prepareFrom(linked, [value]).dropped.map(([name, code, reason]) => [name, code, reason.includes("(the .env of the shared Hermes root)")])).toEqual([["root.txt", "secret_detected", true]]);
    expect(leftIn(linked)).toEqual(NOTHING);
    // /srv/agents/alice is no profile: /srv/agents is no Hermes home of hers (Hermes denies nothing there), so its .env is no secret of hers.
    const agents = path.join(h.home, "agents");
    secretFile(agents, ".env", `MY_SERVICE_TOKEN=${ROOT_VALUE}\n`);
    const alice = path.join(agents, "alice");
    fs.mkdirSync(alice, { mode: 0o700 });
    expect(prepareFrom(alice, [value]).published).toEqual(["root.txt"]);
  });

  it("check-reply drops a MEDIA: line naming the root's auth.json, which the profile's gateway denies, saying why", () => {
    const { work } = rootWithProfiles(root);
    const r = cli(["check-reply"], { env: { ...h.env, HERMES_HOME: work }, input: `Here it is:\nMEDIA:${path.join(root, "auth.json")}\n` });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe("Here it is:\n(auth.json could not be sent: it is in a protected location.)\n");
  });

  it("refuses an outbox that is another profile of the root (outbox_unsafe), and changes nothing there", () => {
    const { work, other } = rootWithProfiles(root);
    const r = cli(["prepare", write(h.work, "a.png", png(1))], { env: { ...h.env, HERMES_HOME: work, MEDIA_OUTBOX_DIR: other }, cwd: h.work });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`media-outbox: outbox_unsafe: outbox ${other} is not a directory of its own: it is the Hermes profile other (${other})`);
    expect(fs.readdirSync(other)).toEqual([".env"]);
  });
});

describe("local mode reads at most 32 profiles of a Hermes home (gate-profiles' bound, the gate's own: takeProfiles), and publishes nothing whose check needs the values of those it does not read", () => {
  const PAST_VALUE = f.pick(ALNUM, 28);
  /** `count` empty profiles a00, a01… (names Hermes takes, sorted before zz) in `base`, and profile zz, whose .env holds PAST_VALUE. */
  function profiles(base: string, count: number): string {
    for (let i = 0; i < count; i++) fs.mkdirSync(path.join(base, "profiles", `a${String(i).padStart(2, "0")}`), { recursive: true });
    const zz = path.join(base, "profiles", "zz");
    secretFile(zz, ".env", `ZZ_SERVICE_TOKEN=${PAST_VALUE}\n`);
    return zz;
  }

  it("with a 33rd profile (the root's, seen from a profile's home), a text is refused unscannable_content naming the bound and the profile, whatever it holds; an image with no text is published", () => {
    const zz = profiles(root, 32);
    const home = path.join(root, "profiles", "a00");
    const leak = write(h.work, "leak.txt", `note: ${PAST_VALUE}\n`);
    const clean = write(h.work, "clean.txt", "meeting notes\n");
    const image = write(h.work, "chart.png", png(1));
    const out = prepareFrom(home, [leak, clean, image]);
    expect(out.code).toBe(1);
    expect(out.dropped.map(([name, code]) => [name, code])).toEqual([
      ["leak.txt", "unscannable_content"],
      ["clean.txt", "unscannable_content"],
    ]);
    const reason = out.dropped[0]![2];
    expect(reason).toContain("at most 32 Hermes profiles of a home");
    expect(reason).toContain(`${zz} (past the 32`);
    expect(reason).not.toContain(PAST_VALUE);
    expect(out.published).toEqual(["chart.png"]);
    expect(leftIn(home).staging).toEqual([]);
  });

  it("with 32, the 32nd's value is known (secret_detected, named by its profile) and an ordinary text is published", () => {
    profiles(root, 31);
    const out = prepareFrom(root, [write(h.work, "leak.txt", `note: ${PAST_VALUE}\n`), write(h.work, "clean.txt", "meeting notes\n")]);
    expect(out.dropped.map(([name, code]) => [name, code])).toEqual([["leak.txt", "secret_detected"]]);
    expect(out.dropped[0]![2]).toContain("the value of ZZ_SERVICE_TOKEN (the .env of Hermes profile zz)");
    expect(out.published).toEqual(["clean.txt"]);
  });

  it("the home itself is read even where the root's listing leaves it out (a profile past the root's 32): nothing is refused for it", () => {
    const zz = profiles(root, 31);
    fs.mkdirSync(path.join(root, "profiles", "a31"));
    const out = prepareFrom(zz, [write(h.work, "leak.txt", `note: ${PAST_VALUE}\n`), write(h.work, "clean.txt", "meeting notes\n")]);
    expect(out.dropped.map(([name, code]) => [name, code])).toEqual([["leak.txt", "secret_detected"]]);
    expect(out.dropped[0]![2]).toContain("the value of ZZ_SERVICE_TOKEN (the Hermes .env)");
    expect(out.published).toEqual(["clean.txt"]);
  });

  it("a profile whose name holds a control character is not read either, and is named escaped; a link to a profile directory is read (its user's own)", () => {
    const elsewhere = path.join(h.home, "elsewhere");
    secretFile(elsewhere, ".env", `LINKED_SERVICE_TOKEN=${ROOT_VALUE}\n`);
    fs.mkdirSync(path.join(root, "profiles"), { recursive: true, mode: 0o700 });
    fs.symlinkSync(elsewhere, path.join(root, "profiles", "linked"));
    const linked = prepareFrom(root, [write(h.work, "linked.txt", `note: ${ROOT_VALUE}\n`)]);
    expect(linked.dropped.map(([name, code]) => [name, code])).toEqual([["linked.txt", "secret_detected"]]);
    secretFile(path.join(root, "profiles", "bad\x1b]0;x"), ".env", `BAD_SERVICE_TOKEN=${SIBLING_VALUE}\n`);
    const out = prepareFrom(root, [write(h.work, "clean.txt", "meeting notes\n")]);
    expect(out.dropped.map(([name, code]) => [name, code])).toEqual([["clean.txt", "unscannable_content"]]);
    expect(out.dropped[0]![2]).toContain(`${path.join(root, "profiles")}/bad\\x1b]0;x (its name holds a control character`);
    expect(out.stderr).not.toContain("\x1b");
  });

  it("doctor says so: the profiles past the bound, named, and that texts are refused until there are at most 32", () => {
    const zz = profiles(root, 32);
    const r = cli(["doctor"], { env: { ...h.env, HERMES_HOME: root }, cwd: h.work });
    const line = r.stdout.split("\n").find((l) => l.includes("known secrets"));
    expect(line, r.stdout).toMatch(/FAIL/i);
    expect(line).toContain(`${zz} (past the 32`);
  });
});

describe("prepare --stdin from a regular file: its place is judged as a FILE's is", () => {
  /** `prepare --json --stdin --name NAME` with standard input opened on `file` (as the shell's `< FILE` does). */
  function fromFile(file: string, name: string, hermesHome = root, extra: string[] = []) {
    const fd = fs.openSync(file, "r");
    try {
      const r = spawnSync(process.execPath, [BIN, "prepare", "--json", ...extra, "--stdin", "--name", name], { env: { ...h.env, HERMES_HOME: hermesHome }, cwd: h.work, stdio: [fd, "pipe", "pipe"], encoding: "utf8" });
      return { code: r.status, doc: JSON.parse(r.stdout) as Doc, stderr: r.stderr };
    } finally {
      fs.closeSync(fd);
    }
  }

  it("refuses the Hermes .env, a session, the root's .env from a profile, a hard link, a file in a credential location of the home, /etc, a file outside --source-root (denied_source), never reading them; an ordinary file is published", () => {
    const { work } = rootWithProfiles(root);
    const session = secretFile(path.join(root, "sessions"), "s.json", '{"messages": ["hello"]}\n');
    const ssh = secretFile(path.join(h.home, ".ssh"), "notes.txt", "host notes\n");
    const orig = write(h.work, "orig.txt", "plain words\n");
    fs.linkSync(orig, path.join(h.work, "alias.txt"));
    const cases: [string, string, string][] = [
      [path.join(root, ".env"), root, "it is one of the Hermes home's secrets; only generated files may be sent"],
      [session, root, "it is one of the Hermes home's secrets; only generated files may be sent"],
      [path.join(root, ".env"), work, "it is one of the Hermes home's secrets; only generated files may be sent"],
      [ssh, root, "it lies in a credential location of the home directory; only generated files may be sent"],
      [path.join(h.work, "alias.txt"), root, "standard input is a file with 2 hard links, which may be an alias of a protected file; copy it first"],
    ];
    for (const [file, hermesHome, reason] of cases) {
      const r = fromFile(file, "x.txt", hermesHome);
      expect(r.code, file).toBe(1);
      expect(r.doc.media_dropped, file).toEqual([{ path: "x.txt", code: "denied_source", reason }]);
      expect(leftIn(hermesHome), file).toEqual(NOTHING);
    }
    expect(fromFile("/etc/hostname", "x.txt").doc.media_dropped[0]).toMatchObject({ code: "denied_source", reason: "it lies under /etc, which the gateway never sends from; only generated files may be sent" });
    // Outside --source-root, as a FILE there would be.
    const allowed = path.join(h.work, "allowed");
    fs.mkdirSync(allowed);
    const outside = fromFile(write(h.work, "outside.txt", "plain words\n"), "x.txt", root, ["--source-root", allowed]).doc.media_dropped[0];
    expect(outside).toMatchObject({ code: "denied_source" });
    expect(outside!.reason).toContain("it lies outside the allowed source roots");
    expect(leftIn(root)).toEqual(NOTHING);
    const ok = fromFile(write(h.work, "notes.txt", "meeting notes\n"), "notes.txt");
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.doc.media.map((m) => path.basename(m.path))).toEqual(["notes.txt"]);
  });
});
