// The bare mentions the gateway uploads (Hermes 0.19.0's extract_local_files),
// read by gateway.ts localFileMentions without running the pattern: compared
// with the real function on seeded random text built from what makes its
// pattern start, run on and end (separators, `-` and `\` before a path, runs
// of names glued on, known extensions with and without a word after them,
// folded letters, code spans), and on adversarial text for linear time.
import { spawnSync } from "node:child_process";
import { beforeAll, describe, expect, it } from "vitest";
import { localFileMentions } from "../src/safety/gateway.js";
import { rng } from "./corpus.js";
import { ensureVenv } from "./python-env.js";

let python: string;
beforeAll(() => {
  python = ensureVenv();
}, 15 * 60_000);

/** The gateway's home for `~/` in these texts (nothing is read from it: isfile is answered yes for every match). */
const HOME = "/home/gw";

/** What the real extract_local_files returns for each text, every match taken for a file. */
function realMentions(texts: string[]): string[][] {
  const script = [
    "import json, logging, sys, os.path",
    "logging.disable(logging.CRITICAL)",
    "from gateway.platforms.base import BasePlatformAdapter as B",
    "os.path.isfile = lambda p: True",
    "json.dump([B.extract_local_files(t)[0] for t in json.load(sys.stdin)], sys.stdout)",
  ].join("\n");
  const r = spawnSync(python, ["-c", script], { env: { PATH: process.env.PATH, HOME, PYTHONDONTWRITEBYTECODE: "1" }, input: JSON.stringify(texts), encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`the real Hermes failed (exit ${r.status}):\n${r.stderr}`);
  return JSON.parse(r.stdout) as string[][];
}

describe("localFileMentions is extract_local_files", () => {
  it("randomized (seeded): the same files as the real function, on text made of what starts, runs on and ends its paths", () => {
    const rnd = rng(32);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
    const pieces = [
      "/", "/", "/o/", "~/", "\\", "-", "-/", ".", "..", ":", "C:/", "c:\\", "x", "a.txt", "b.png", ".txt", ".TXT", "txt",
      ".bak", ".tar.gz", ".ſvg", ".jpeg", "é", "_", " ", " ", "\n", "`", "```\n", "MEDIA:", "(", ")", "*", "file:", "~", "q-", "-x", "/-",
    ];
    const texts: string[] = [];
    for (let i = 0; i < 3000; i++) {
      let t = "";
      for (let n = 1 + Math.floor(rnd() * 14); n > 0; n--) t += pick(pieces);
      texts.push(t);
    }
    const real = realMentions(texts);
    texts.forEach((t, i) => {
      // The gateway's list is deduplicated in order; ours is a set.
      expect([...localFileMentions(t, HOME)].sort(), JSON.stringify(t)).toEqual([...new Set(real[i])].sort());
    });
  });

  it("the shapes check-reply relies on, with their verdicts", () => {
    const cases: [string, string[]][] = [
      ["see /o/a.txt.", ["/o/a.txt"]],
      ["/o/a.txt.bak", ["/o/a.txt"]],
      ["/o/a.txt-x", ["/o/a.txt"]],
      // A path glued on after it is one path; after a `//` another one.
      ["/o/a.txt/o/b.txt", ["/o/a.txt/o/b.txt"]],
      ["/o/a.txt//o/b.txt", ["/o/a.txt"]],
      // A path running up to a `-` takes what follows; a `-` or `\` with none before it starts one.
      ["/q-/o/a.txt", ["/q-/o/a.txt"]],
      ["x-/o/a.txt", ["/o/a.txt"]],
      ["/q\\/o/a.txt", ["/o/a.txt"]],
      ["/q-/-/o/a.txt", ["/q-/-/o/a.txt"]],
      ["~/o/a.txt", [`${HOME}/o/a.txt`]],
      // A `~` after a word starts no `~/` path, and its `/` is an anchor of its own.
      ["x~/o/a.txt", ["/o/a.txt"]],
      ["`/o/a.txt`", []],
      ["file:/o/a.txt", []],
      ["/o/.txt", []],
      ["/o/a.ſvg", ["/o/a.ſvg"]],
    ];
    for (const [text, want] of cases) expect([...localFileMentions(text, HOME)], text).toEqual(want);
    expect(realMentions(cases.map((c) => c[0]))).toEqual(cases.map((c) => c[1]));
  });

  it("reads each run of names once: a megabyte of anchors inside one run, of dots, of runs with no extension", () => {
    // Every `-/` is an anchor the look-behind allows, each inside the same run: read again from each, the time is quadratic.
    const dashes = `/q${"-/x".repeat(150_000)}.txt`;
    expect([...localFileMentions(dashes)]).toEqual([dashes]);
    const noExt = `/q${"-/x".repeat(150_000)}`;
    expect(localFileMentions(noExt).size).toBe(0);
    const dots = `/q/${"a.".repeat(300_000)}txt`;
    expect([...localFileMentions(dots)]).toEqual([dots]);
    const many = " /o/a.txt".repeat(100_000);
    expect([...localFileMentions(many)]).toEqual(["/o/a.txt"]);
    const code = "`/o/a.txt` ".repeat(60_000) + "/o/b.txt";
    expect([...localFileMentions(code)]).toEqual(["/o/b.txt"]);
  });
});
