// prepare --name NAME with one FILE: the file is published once, under NAME,
// after every client-side check of its own path; the same in local mode and
// through a gate run by hand (killed by PID afterwards).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { escapeText } from "../src/core/escape.js";
import { type Gate, clearGate, gateLeftBehind, killAll, startGate, syncLog } from "./gate-helpers.js";
import { type CliResult, NOTHING_LEFT, cli, leftBehind, makeHome, png, write } from "./helpers.js";

let h: ReturnType<typeof makeHome>;
let work: string;
let gate: Gate;
let gateEnv: NodeJS.ProcessEnv;

beforeAll(async () => {
  h = makeHome();
  work = h.work;
  gate = await startGate(h.home, h.env);
  gateEnv = { ...h.env, MEDIA_OUTBOX_SOCKET: gate.socket };
});
afterAll(async () => {
  await killAll();
  h.cleanup();
});
beforeEach(() => {
  fs.rmSync(h.outbox, { recursive: true, force: true });
  fs.rmSync(path.join(h.home, ".hermes", ".media_outbox-state"), { recursive: true, force: true });
  clearGate(gate);
});

const local = (args: string[]): CliResult => cli(["prepare", ...args], { env: h.env, cwd: work });
const viaGate = (args: string[]): CliResult => cli(["prepare", ...args], { env: gateEnv, cwd: work });
const doc = (r: CliResult) => JSON.parse(r.stdout) as { success: boolean; media: { source: string; path: string; name: string; sha256: string }[]; media_dropped: { path: string; code: string }[] };
/** The local outbox and the gate's written as OUTBOX, so the two modes' output can be compared byte for byte. */
const shape = (r: CliResult, outbox: string) => ({ code: r.code, stdout: r.stdout.split(outbox).join("OUTBOX"), stderr: r.stderr });
const ledger = (dir: string) => fs.readdirSync(dir).flatMap((f) => fs.readFileSync(path.join(dir, f), "utf8").trim().split("\n").map((l) => JSON.parse(l) as { source: string; name: string }));

describe("prepare --name NAME FILE", () => {
  it("publishes the file once, under NAME: one copy in the outbox, the FILE named as its source", () => {
    const src = write(work, "render-0001.png", png(1));
    const r = local(["--json", "--name", "Q3 chart.png", "--", "render-0001.png"]);
    expect(r.code, r.stderr).toBe(0);
    const m = doc(r).media[0]!;
    expect(m).toMatchObject({ name: "Q3-chart.png", path: path.join(h.outbox, "Q3-chart.png"), source: "render-0001.png" });
    expect(fs.readdirSync(h.outbox)).toEqual(["Q3-chart.png"]);
    expect(fs.readFileSync(m.path)).toEqual(fs.readFileSync(src));
    expect(ledger(path.join(h.home, ".hermes", ".media_outbox-state", "ledger"))).toEqual([expect.objectContaining({ source: "render-0001.png", name: "Q3-chart.png" })]);
    // Without --json: one MEDIA: line, nothing else.
    const plain = local(["--name", "other.png", "render-0001.png"]);
    expect(plain).toEqual({ code: 0, stdout: `MEDIA:${path.join(h.outbox, "other.png")}\n`, stderr: "" });
  });

  it("NAME decides the extension, and the content is judged against it", () => {
    write(work, "output.bin", png(2));
    expect(doc(local(["--json", "--name", "chart.png", "output.bin"])).media[0]!.name).toBe("chart.png");
    write(work, "notes.txt", "just text\n");
    const wrongType = local(["--json", "--name", "notes.png", "notes.txt"]);
    expect(wrongType.code).toBe(1);
    expect(doc(wrongType).media_dropped[0]).toMatchObject({ path: "notes.txt", code: "content_mismatch" });
    const wrongExt = local(["--json", "--name", "run.sh", "notes.txt"]);
    expect(doc(wrongExt).media_dropped[0]).toMatchObject({ path: "notes.txt", code: "extension_not_allowed" });
    expect(fs.readdirSync(h.outbox)).toEqual(["chart.png"]);
  });

  it("the FILE's path still goes through every client-side check; NAME's text is checked like a path; nothing is left behind", () => {
    fs.mkdirSync(path.join(h.home, ".ssh"), { recursive: true });
    write(path.join(h.home, ".ssh"), "id_ed25519", "-----BEGIN OPENSSH PRIVATE KEY-----\n");
    write(work, "orig.png", png(3));
    fs.linkSync(path.join(work, "orig.png"), path.join(work, "alias.png"));
    execFileSync("mkfifo", [path.join(work, "pipe.png")]);
    write(work, "bad\nname.png", png(4));
    write(work, "empty.png", "");
    write(work, "ok.png", png(5));
    const cases: [string, string, string][] = [
      [path.join(h.home, ".ssh", "id_ed25519"), "safe.png", "denied_source"],
      ["alias.png", "safe.png", "denied_source"],
      ["pipe.png", "safe.png", "not_regular_file"],
      ["bad\nname.png", "safe.png", "unsafe_path_chars"],
      ["x/MEDIA:/etc/passwd.png", "safe.png", "media_directive_in_path"],
      ["missing.png", "safe.png", "not_found"],
      ["empty.png", "safe.png", "empty_file"],
      ["ok.png", "bad\nname.png", "unsafe_path_chars"],
      ["ok.png", "MEDIA:/etc/passwd.png", "media_directive_in_path"],
    ];
    for (const [file, name, code] of cases) {
      const r = local(["--json", "--name", name, "--", file]);
      expect(r.code, `${file} as ${name}`).toBe(1);
      // The refusal names the FILE as given (escaped), whichever of the two was refused.
      expect(doc(r).media_dropped, `${file} as ${name}`).toEqual([expect.objectContaining({ code, path: escapeText(file) })]);
      expect(r.stderr.startsWith(`media-outbox: refused ${escapeText(file)}: ${code}: `), r.stderr).toBe(true);
      // The fix fits what was refused: a name is chosen again, a file renamed.
      if (code === "unsafe_path_chars" || code === "media_directive_in_path") {
        expect(r.stderr, `${file} as ${name}`).toMatch(name === "safe.png" ? /^media-outbox: refused .*: the path contains .*; rename the file\n$/ : /^media-outbox: refused .*: the name contains .*; choose another name\n$/);
      }
    }
    expect(leftBehind(h)).toEqual({ ...NOTHING_LEFT, outbox: [] });
  });

  it("is a usage error (exit 2, nothing published) without exactly one FILE", () => {
    write(work, "a.png", png(6));
    write(work, "b.png", png(7));
    for (const args of [["--name", "x.png"], ["--name", "x.png", "a.png", "b.png"], ["--stdin", "--name", "x.png", "a.png"]]) {
      const r = local(args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr.split("\n")[0]).toMatch(/^media-outbox: /);
    }
    expect(local(["--name", "x.png", "a.png", "b.png"]).stderr).toContain("--name names one file: give exactly one FILE (or --stdin)");
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
  });

  it("through the gate: the same output as local mode, the gate only ever sees NAME", async () => {
    write(work, "render-0002.png", png(8));
    write(work, "notes.txt", "just text\n");
    fs.mkdirSync(path.join(h.home, ".ssh"), { recursive: true });
    write(path.join(h.home, ".ssh"), "key.png", png(9));
    const before = (await syncLog(gate)).length;
    for (const args of [
      ["--json", "--name", "Q3 chart.png", "render-0002.png"],
      ["--name", "Q3 chart.png", "render-0002.png"],
      ["--json", "--name", "notes.png", "notes.txt"],
      ["--json", "--name", "safe.png", path.join(h.home, ".ssh", "key.png")],
    ]) {
      const g = viaGate(args);
      const l = local(args);
      expect(shape(g, gate.outbox), args.join(" ")).toEqual(shape(l, fs.realpathSync(h.outbox)));
    }
    expect(gateLeftBehind(gate).outbox).toEqual(["Q3-chart.png"]);
    expect(doc(viaGate(["--json", "--name", "Q3 chart.png", "render-0002.png"])).media[0]).toMatchObject({ source: "render-0002.png", path: path.join(gate.outbox, "Q3-chart.png") });
    // The gate judged names, never paths (the denied source never reached it); its ledger records the name.
    const judged = (await syncLog(gate)).slice(before).filter((e) => e.event === "published" || e.event === "refused");
    expect(judged.map((e) => e.source)).toEqual(["Q3 chart.png", "Q3 chart.png", "notes.png", "Q3 chart.png"]);
    expect(ledger(path.join(gate.state, "ledger")).map((r) => r.source)).toEqual(["Q3 chart.png", "Q3 chart.png", "Q3 chart.png"]);
  });
});
