// check-reply's model of what the gateway delivers, against the real Hermes
// 0.19.0 (hermes-agent in .venv/): any file type once its path validates; the
// roots it always trusts (Kanban attachments, every profile's caches under the
// shared root); the credential files of the shared root a profile gateway
// denies; its settings read as Python reads them (str.strip(), float()).
// Randomized (seeded) environments and files; every verdict of check-reply on
// a bare line is the gateway's: kept where it delivers, named where it does not.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pythonFloat, pythonStrip } from "../src/core/python-text.js";
import { checkReply } from "../src/reply/check-reply.js";
import { SourceDenylist } from "../src/safety/denylist.js";
import { hermesRoot } from "../src/content/hermes-homes.js";
import { deliveredLineProblem, deliveryPolicy, expandUser, parseAllowDirs } from "../src/safety/gateway.js";
import { rng } from "./corpus.js";
import { makeHome, png, prepared } from "./helpers.js";
import { gatewaySends } from "./hermes-gateway.js";
import { ensureVenv } from "./python-env.js";

let h: ReturnType<typeof makeHome>;
let python: string;
let root: string;

const DAY = 24 * 3600;
/** Writes `p` with its modification time `age` seconds ago. */
function file(p: string, age: number): string {
  fs.mkdirSync(path.dirname(p), { recursive: true });
  fs.writeFileSync(p, "data\n");
  const t = Date.now() / 1000 - age;
  fs.utimesSync(p, t, t);
  return p;
}

beforeAll(() => {
  h = makeHome();
  root = path.join(h.home, ".hermes");
  fs.mkdirSync(path.join(root, "profiles", "p1"), { recursive: true });
  fs.mkdirSync(path.join(root, "kanban", "boards", "work"), { recursive: true });
  fs.writeFileSync(path.join(root, "kanban", "boards", "work", "kanban.db"), "");
  // A board without its database, and one whose name the gateway does not take: not trusted.
  fs.mkdirSync(path.join(root, "kanban", "boards", "nodb"), { recursive: true });
  fs.mkdirSync(path.join(root, "kanban", "boards", "Bad"), { recursive: true });
  fs.writeFileSync(path.join(root, "kanban", "boards", "Bad", "kanban.db"), "");
  python = ensureVenv();
}, 15 * 60_000);
afterAll(() => h.cleanup());

/** The gateway's verdict on `MEDIA:<path>` for each case, each judged in its own environment (one Python per HERMES_HOME: Hermes reads it on import). */
function gatewayDelivers(cases: { env: NodeJS.ProcessEnv; path: string }[]): boolean[] {
  const script = [
    "import json, os, sys",
    "from gateway.platforms.base import BasePlatformAdapter as B",
    "base = dict(os.environ)",
    "out = []",
    "for case in json.load(sys.stdin):",
    "    os.environ.clear(); os.environ.update(base); os.environ.update(case['env'])",
    "    media, _ = B.extract_media('MEDIA:' + case['path'] + '\\n')",
    "    out.append(bool(B.filter_media_delivery_paths(media)))",
    "json.dump(out, sys.stdout)",
  ].join("\n");
  const verdicts: boolean[] = new Array(cases.length);
  const groups = new Map<string, number[]>();
  cases.forEach((c, i) => groups.set(c.env.HERMES_HOME!, [...(groups.get(c.env.HERMES_HOME!) ?? []), i]));
  for (const [hermesHome, idx] of groups) {
    const input = JSON.stringify(idx.map((i) => ({ env: cases[i]!.env, path: cases[i]!.path })));
    const r = spawnSync(python, ["-c", script], { env: { PATH: process.env.PATH, HOME: h.home, HERMES_HOME: hermesHome, PYTHONDONTWRITEBYTECODE: "1" }, input, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
    expect(r.status, r.stderr).toBe(0);
    (JSON.parse(r.stdout) as boolean[]).forEach((v, k) => (verdicts[idx[k]!] = v));
  }
  return verdicts;
}

/** check-reply's verdict: the line kept (delivered), or a sentence naming the file (and why). */
function checkReplyVerdict(env: NodeJS.ProcessEnv, p: string): { kept: boolean; named: string | undefined } {
  const hermesHome = env.HERMES_HOME!;
  const denylist = new SourceDenylist({ home: h.home, hermesHome });
  const r = checkReply(`MEDIA:${p}\n`, { published: [], policy: deliveryPolicy(env, h.home, hermesHome, (x) => denylist.reason(x)) });
  return { kept: r.kept.includes(p) && !r.changed, named: r.notes[0]?.reason };
}

describe("check-reply's verdicts are the real gateway's", () => {
  it("any file type: a validated Makefile, .py or .log line is kept; one the gateway refuses is named with the true reason", () => {
    const work = path.join(h.home, "w1");
    const allowed = path.join(h.home, "allowed1");
    const cases: [NodeJS.ProcessEnv, string, boolean][] = [];
    const loose = { HERMES_HOME: root, HERMES_MEDIA_DELIVERY_STRICT: "0" };
    const strict = { HERMES_HOME: root, HERMES_MEDIA_DELIVERY_STRICT: "1", HERMES_MEDIA_TRUST_RECENT_FILES: "0", HERMES_MEDIA_ALLOW_DIRS: allowed };
    for (const name of ["Makefile", "notes.py", "build.log", "run.sh", "settings.toml", "a.tx-t", "x.txt_old"]) {
      cases.push([loose, file(path.join(work, name), DAY), true]);
      cases.push([strict, file(path.join(allowed, name), DAY), true]);
      cases.push([strict, path.join(work, name), false]);
    }
    cases.push([loose, path.join(work, "missing.log"), false]);
    // The gateway strips `)` off the end of such a path: it looks for build.log, which is not there.
    cases.push([loose, file(path.join(work, "end.log)"), DAY), false]);
    const got = gatewayDelivers(cases.map(([env, p]) => ({ env, path: p })));
    cases.forEach(([env, p, expected], i) => {
      expect(got[i], `set-up: ${p}`).toBe(expected);
      const v = checkReplyVerdict(env, p);
      expect(v.kept, p).toBe(expected);
      if (!expected) expect(v.named, p).toMatch(/^(it is outside the folders the gateway may send from|the file does not exist)$/);
    });
    expect(checkReplyVerdict(strict, path.join(work, "build.log")).named).toBe("it is outside the folders the gateway may send from");
  });

  it("an any-type line is taken whole only when no known extension inside it ends the other pattern's match", () => {
    expect(deliveredLineProblem("MEDIA:/w/Makefile", "/w/Makefile")).toBeUndefined();
    expect(deliveredLineProblem("MEDIA:/w/a.tx-t", "/w/a.tx-t")).toBeUndefined();
    // Here the known-extension pattern takes /w/a.txt as well: two extractions, not the line's one path.
    expect(deliveredLineProblem("MEDIA:/w/a.txt,b.log", "/w/a.txt,b.log")).toBeDefined();
    expect(deliveredLineProblem("MEDIA:/w/a.TXT]b.log", "/w/a.TXT]b.log")).toBeDefined();
    // What the gateway strips off the end, and quotes, are never part of a path it takes.
    expect(deliveredLineProblem("MEDIA:/w/build.log)", "/w/build.log)")).toBeDefined();
    expect(deliveredLineProblem("MEDIA:/w/it's.log", "/w/it's.log")).toBeDefined();
    expect(deliveredLineProblem(" MEDIA:/w/Makefile", "/w/Makefile")).toBeDefined();
  });

  it("a file in the outbox of any type is repaired like a published one only when its exact line would be taken whole", () => {
    const env = { ...h.env, HERMES_MEDIA_ALLOW_DIRS: h.outbox, HERMES_MEDIA_DELIVERY_STRICT: "1", HERMES_MEDIA_TRUST_RECENT_FILES: "0" };
    const make = file(path.join(h.outbox, "Makefile"), 60);
    const quoted = file(path.join(h.outbox, "it's.log"), 60);
    const denylist = new SourceDenylist({ home: h.home, hermesHome: root });
    const policy = deliveryPolicy(env, h.home, root, (x) => denylist.reason(x));
    const judge = (text: string) => checkReply(text, { published: [], outbox: h.outbox, policy }).reply;
    const repaired = judge(`Here: \`MEDIA:${make}\`\n`);
    expect(repaired).toBe(`Here:\nMEDIA:${make}\n`);
    const named = judge(`Here: \`MEDIA:${quoted}\`\n`);
    expect(named).toBe("Here: (it's.log could not be sent: the line naming it was not written exactly, on a line of its own.)\n");
    expect(gatewayDelivers([{ env, path: make }, { env, path: quoted }])).toEqual([true, false]);
    fs.rmSync(make);
    fs.rmSync(quoted);
  });

  it("a profile gateway: the shared root's .env and auth.json are named as protected, its Kanban attachments and the other profiles' caches kept", () => {
    const profile = path.join(root, "profiles", "p1");
    expect(hermesRoot(profile, h.home)).toBe(root);
    const env = { HERMES_HOME: profile, HERMES_MEDIA_DELIVERY_STRICT: "1", HERMES_MEDIA_TRUST_RECENT_FILES: "0" };
    const cases: [NodeJS.ProcessEnv, string, boolean][] = [
      [{ HERMES_HOME: profile }, file(path.join(root, ".env"), DAY), false],
      [{ HERMES_HOME: profile }, file(path.join(root, "auth.json"), DAY), false],
      [env, file(path.join(root, "kanban", "attachments", "a.pdf"), DAY), true],
      [env, file(path.join(root, "kanban", "boards", "work", "attachments", "plan.pdf"), DAY), true],
      [env, file(path.join(root, "kanban", "boards", "nodb", "attachments", "x.pdf"), DAY), false],
      [env, file(path.join(root, "kanban", "boards", "Bad", "attachments", "x.pdf"), DAY), false],
      [env, file(path.join(root, "profiles", "p2", "cache", "images", "w.png"), DAY), true],
    ];
    const got = gatewayDelivers(cases.map(([e, p]) => ({ env: e, path: p })));
    cases.forEach(([e, p, expected], i) => {
      expect(got[i], `set-up: ${p}`).toBe(expected);
      expect(checkReplyVerdict(e, p).kept, p).toBe(expected);
    });
    expect(checkReplyVerdict({ HERMES_HOME: profile }, path.join(root, "auth.json")).named).toBe("it is in a protected location");
  });

  it("a boards or profiles directory an agent filled with stray entries hides no board or profile the gateway takes (the red team's 32b/04: 256 files before a board dropped its attachment)", () => {
    const kh = path.join(h.home, "kh-filled");
    const boards = path.join(kh, "kanban", "boards");
    fs.mkdirSync(path.join(boards, "zz"), { recursive: true });
    fs.writeFileSync(path.join(boards, "zz", "kanban.db"), "");
    for (let i = 0; i < 300; i++) fs.writeFileSync(path.join(boards, `a${String(i).padStart(3, "0")}`), "");
    const env = { HERMES_HOME: root, HERMES_KANBAN_HOME: kh, HERMES_MEDIA_DELIVERY_STRICT: "1", HERMES_MEDIA_TRUST_RECENT_FILES: "0" };
    const behind = file(path.join(boards, "zz", "attachments", "r.txt"), DAY);
    expect(gatewayDelivers([{ env, path: behind }]), "set-up").toEqual([true]);
    expect(checkReplyVerdict(env, behind).kept).toBe(true);
    // Past 4,096 entries the directory is taken whole: a board behind them is not looked for, and its file is kept.
    for (let i = 300; i < 4100; i++) fs.writeFileSync(path.join(boards, `a${String(i).padStart(4, "0")}`), "");
    expect(checkReplyVerdict(env, behind).kept).toBe(true);
    fs.rmSync(kh, { recursive: true, force: true });
  });

  it("randomized (seeded): environments, profiles, Kanban homes, settings written as Python reads them", () => {
    const rnd = rng(31);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
    const pads = ["", " ", "\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\u2003", "\u3000", "\t"];
    const pad = (s: string) => pick(pads) + s + pick(pads);
    const kb = path.join(h.home, "kb", "attachments");
    const kh = path.join(h.home, "kh");
    fs.mkdirSync(path.join(kh, "kanban", "boards", "b1"), { recursive: true });
    fs.writeFileSync(path.join(kh, "kanban", "boards", "b1", "kanban.db"), "");
    const allowed = path.join(h.home, "allowed2");
    const work = path.join(h.home, "w2");
    const names = ["Makefile", "notes.py", "build.log", "a.txt", "report.pdf", "x.tar.gz", "data.json"];
    const ages = [30, 2 * 3600, 2 * DAY];
    const places = [
      work,
      allowed,
      path.join(root, "kanban", "attachments"),
      path.join(root, "kanban", "boards", "work", "attachments"),
      path.join(root, "profiles", "p1", "cache", "documents"),
      path.join(root, "profiles", "p2", "cache", "images"),
      kb,
      path.join(kh, "kanban", "attachments"),
      path.join(kh, "kanban", "boards", "b1", "attachments"),
    ];
    const secrets = [path.join(root, ".env"), path.join(root, "auth.json"), path.join(h.home, ".ssh", "id.txt")];
    for (const s of secrets) file(s, DAY);
    const seconds = [undefined, "9_000", "inf", "-inf", "nan", "Infinity", "1e5", "\x1f9000\x85", "1__0", "", "\u0663\u0666\u0660\u0660", "86_400.5", "0x10", "5."];
    const cases: { env: NodeJS.ProcessEnv; path: string }[] = [];
    let n = 0;
    for (let i = 0; i < 400; i++) {
      const env: NodeJS.ProcessEnv = { HERMES_HOME: rnd() < 0.5 ? root : path.join(root, "profiles", "p1") };
      env.HERMES_MEDIA_DELIVERY_STRICT = pick(["1", "0", pad("on"), pad("true")]);
      const trust = pick([undefined, "1", "0", pad("off")]);
      if (trust !== undefined) env.HERMES_MEDIA_TRUST_RECENT_FILES = trust;
      const s = pick(seconds);
      if (s !== undefined) env.HERMES_MEDIA_TRUST_RECENT_SECONDS = s;
      if (rnd() < 0.7) env.HERMES_MEDIA_ALLOW_DIRS = `${pad(h.outbox)},${pad(allowed)}`;
      if (rnd() < 0.25) env.HERMES_KANBAN_ATTACHMENTS_ROOT = pad(kb);
      if (rnd() < 0.25) env.HERMES_KANBAN_HOME = pad(kh);
      let p: string;
      if (rnd() < 0.15) p = pick(secrets);
      else {
        p = path.join(pick(places), `${n++}-${pick(names)}`);
        file(p, pick(ages));
      }
      cases.push({ env, path: p });
    }
    const got = gatewayDelivers(cases);
    expect(got.filter(Boolean).length).toBeGreaterThan(50);
    expect(got.filter((v) => !v).length).toBeGreaterThan(50);
    cases.forEach((c, i) => {
      const v = checkReplyVerdict(c.env, c.path);
      const where = `case ${i}: ${JSON.stringify(c)}`;
      expect(v.kept, where).toBe(got[i]);
      if (!got[i]) expect(v.named, where).toBeDefined();
    });
  });
});

describe("HERMES_MEDIA_ALLOW_DIRS entries read as os.path.expanduser reads them", () => {
  it("~name/… is that user's home (from passwd), an unknown user's entry is skipped, ~ and ~/… the gateway's HOME: the real gateway's roots", () => {
    // A user of this system's passwd (root's home, /root, is never written: only the entries are compared).
    const entries = ["~root/media", "~root", "~/a", "~", "~nosuchuser32/x", "~nosuchuser32", "/abs/b", "~root//c/", "~/", "rel/x", " ~root/d ,~daemon/e"];
    const value = entries.join(":");
    const script = [
      "import json, os",
      "from gateway.platforms.base import _media_delivery_allowed_roots as roots",
      "extra = os.environ.pop('HERMES_MEDIA_ALLOW_DIRS')",
      "base = len(roots())",
      "os.environ['HERMES_MEDIA_ALLOW_DIRS'] = extra",
      "print(json.dumps([os.path.normpath(str(r)) for r in roots()[base:]]))",
    ].join("\n");
    const r = spawnSync(python, ["-c", script], { env: { PATH: process.env.PATH, HOME: h.home, HERMES_HOME: root, HERMES_MEDIA_ALLOW_DIRS: value, PYTHONDONTWRITEBYTECODE: "1" }, encoding: "utf8" });
    expect(r.status, r.stderr).toBe(0);
    const real = JSON.parse(r.stdout) as string[];
    expect(parseAllowDirs(value, h.home)).toEqual(real);
    expect(real).toContain("/root/media");
    expect(real.some((x) => x.includes("nosuchuser32"))).toBe(false);
  });

  it("expandUser: a passwd file's home for ~name, with its trailing slashes taken off; an unknown user's path left as it is", () => {
    const passwd = path.join(h.home, "passwd");
    fs.writeFileSync(passwd, "root:x:0:0:root:/root:/bin/sh\nalice:x:1000:1000:,,,:/srv/alice/:/bin/sh\nbroken:line\nslash:x:1:1::/:/bin/sh\n");
    expect(expandUser("~alice/o/a.txt", "/home/gw", passwd)).toBe("/srv/alice/o/a.txt");
    expect(expandUser("~alice", "/home/gw", passwd)).toBe("/srv/alice");
    expect(expandUser("~slash", "/home/gw", passwd)).toBe("/");
    expect(expandUser("~slash/x", "/home/gw", passwd)).toBe("/x");
    expect(expandUser("~broken/x", "/home/gw", passwd)).toBe("~broken/x");
    expect(expandUser("~bob/x", "/home/gw", passwd)).toBe("~bob/x");
    expect(expandUser("~/x", "/home/gw/", passwd)).toBe("/home/gw/x");
    expect(expandUser("/a/~alice", "/home/gw", passwd)).toBe("/a/~alice");
  });
});

describe("settings read as Python reads them", () => {
  it("pythonStrip and pythonFloat give Python's str.strip() and float() (ValueError as undefined)", () => {
    const inputs = ["9_000", "inf", "-inf", "nan", "-NaN", "Infinity", "iNfInItY", "1e1_0", "1__0", "_1", "1_", "1_.5", "1._5", "0x10", " 5 ", "\u0663", "\uff11\uff12", "+.5", "5.", ".", "1e", "1_0e-1_0", "1.5_0", "\x1c7\x1f", "\x1c7", "\u20037\u3000", "\ufeff7", "1e400", "-0", "", " ", "\x85", "infinit", "nan1", "+-1", "\ud835\udfd7"];
    const all: string[] = [];
    for (let c = 0; c < 0x3100; c++) all.push(String.fromCharCode(c));
    const script = "import json,sys\nd=json.load(sys.stdin)\ndef f(s):\n    try: return repr(float(s))\n    except ValueError: return None\njson.dump({'f':[f(s) for s in d['f']],'s':[('x'+c+'x'+c).strip() for c in d['s']]}, sys.stdout)";
    const r = spawnSync(python, ["-c", script], { input: JSON.stringify({ f: inputs, s: all }), encoding: "utf8" });
    expect(r.status, r.stderr).toBe(0);
    const py = JSON.parse(r.stdout) as { f: (string | null)[]; s: string[] };
    const repr = (x: number | undefined) => (x === undefined ? null : Number.isNaN(x) ? "nan" : x === Infinity ? "inf" : x === -Infinity ? "-inf" : x);
    inputs.forEach((s, i) => {
      const want = py.f[i];
      const got = repr(pythonFloat(s));
      if (want === null || ["nan", "inf", "-inf"].includes(want!)) expect(got, JSON.stringify(s)).toBe(want);
      else expect(got, JSON.stringify(s)).toBe(Number(want));
    });
    all.forEach((c, i) => expect(pythonStrip(`x${c}x${c}`), `U+${c.charCodeAt(0).toString(16)}`).toBe(py.s[i]));
  });
});

describe("a published file the reply names as a bare path (the gateway's extract_local_files)", () => {
  it("randomized (seeded): the real gateway uploads every published file, once where check-reply says the text names it", () => {
    const env: NodeJS.ProcessEnv = { ...h.env, HERMES_MEDIA_ALLOW_DIRS: h.outbox, HERMES_MEDIA_DELIVERY_STRICT: "1", HERMES_MEDIA_TRUST_RECENT_FILES: "0" };
    const files = [prepared(h, "report.txt", "report\n"), prepared(h, "chart.png", png(3))];
    const denylist = new SourceDenylist({ home: h.home, hermesHome: root });
    const policy = deliveryPolicy(env, h.home, root, (x) => denylist.reason(x));
    const F = "```";
    const tilde = (p: string) => `~${p.slice(h.home.length)}`;
    // [mention, the gateway uploads it from there and check-reply knows]
    const forms: [(p: string) => string, boolean][] = [
      [(p) => `I saved it as ${p} for you.`, true],
      [(p) => `Saved: ${p}.`, true],
      [(p) => `(${p})`, true],
      [(p) => `> see ${p}`, true],
      [(p) => `**${p}**`, true],
      [(p) => `"${p}"...`, true],
      [(p) => `文件：${p}。`, true],
      [(p) => `${p}-`, true],
      [(p) => `\`${p}\``, false],
      [(p) => `${F}\n${p}\n${F}`, false],
      [(p) => `file:${p}`, false],
      [(p) => `x${p}`, false],
      [(p) => `~${p}`, false],
      // The pattern's look-behind refuses only `/`, `:`, `.` and a word character: after a backslash the path is taken
      // (no match runs on through `\/`), after a `-` when no path runs up to it.
      [(p) => `\\${p}`, true],
      [(p) => `see \\${p}`, true],
      [(p) => `/q\\${p}`, true],
      [(p) => `x.txt\\${p}`, true],
      [(p) => `-${p}`, true],
      // A path running up to the `-` (`/q-/…`) is another file: never counted.
      [(p) => `/q-${p}`, false],
      // The `~/` spelling: expanduser makes it the file (the gateway's home is the policy's).
      [(p) => `Saved as ${tilde(p)}.`, true],
      [(p) => `(${tilde(p)},`, true],
      [(p) => `${tilde(p)}~`, true],
      [(p) => `"${tilde(p)}"`, true],
      [(p) => `-${tilde(p)}`, true],
      [(p) => `x${tilde(p)}`, false],
      [(p) => `.${tilde(p)}`, false],
      [(p) => `\`${tilde(p)}\``, false],
      [(p) => `MEDIA:${tilde(p)}x`, false],
      // The path ends at the last known extension with no word character after it; one after a `-` that no path runs up to starts there.
      [(p) => `${p}.bak`, true],
      [(p) => `${p}-x`, true],
      [(p) => `x-${p}`, true],
      [(p) => `/q-/-${p}`, false],
      // Glued to a later path, it is one path that names no file; a `//` ends it, and it is taken.
      [(p) => `${p}${p}`, false],
      [(p) => `${p}/${p}`, true],
      [(p) => `${p}x`, false],
    ];
    const rnd = rng(9);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
    const cases: { input: string; out: string; published: string[]; exact: string[] }[] = [];
    for (let i = 0; i < 150; i++) {
      const published = rnd() < 0.5 ? [files[0]!] : [...files];
      const lines: string[] = [];
      const exact = new Set<string>();
      for (let k = Math.floor(rnd() * 4); k >= 0; k--) {
        const r = rnd();
        if (r < 0.3) lines.push(pick(["Some text.", "", "- item", "> quote", "x = `code`"]));
        else {
          const p = pick(published);
          const [form, known] = pick(forms);
          lines.push(form(p));
          if (known) exact.add(p);
        }
      }
      const input = lines.join("\n");
      const report = checkReply(input, { published, outbox: h.outbox, policy });
      expect([...report.mentioned].sort(), input).toEqual([...exact].sort());
      cases.push({ input, out: report.reply, published, exact: [...exact] });
    }
    // Linear on adversarial input: many mentions, many code spans, runs of full stops after the path.
    const p0 = files[0]!;
    const huge = `${"`x` ".repeat(50_000)}${`x${p0} `.repeat(20_000)}${`${p0}${".".repeat(1000)}x `.repeat(100)}${"``` ".repeat(20_000)}\nsaved as ${p0}.`;
    expect(checkReply(huge, { published: [p0], outbox: h.outbox, policy }).mentioned).toEqual([p0]);
    const uploads = gatewaySends(python, env, cases.map((c) => c.out), "uploads");
    cases.forEach((c, i) => {
      const where = `${JSON.stringify(c.input)} -> ${JSON.stringify(c.out)}: ${JSON.stringify(uploads[i])}`;
      for (const p of c.published) {
        const n = uploads[i]!.filter((u) => u === p).length;
        expect(n, where).toBeGreaterThanOrEqual(1);
        if (c.exact.includes(p)) expect(n, where).toBe(1);
      }
    });
  });
});
