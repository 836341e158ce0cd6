// The bare mentions the gateway uploads (Hermes 0.19.0's extract_local_files),
// read by gateway.ts localFileMentions without running the pattern: compared
// with the real function on seeded random text built from what makes its
// pattern start, run on and end (separators, `-` and `\` before a path, runs
// of names glued on, known extensions with and without a word after them,
// folded letters, code spans), and on adversarial text for linear time.
import { spawnSync } from "node:child_process";
import { beforeAll, describe, expect, it } from "vitest";
import { gatewayBareText, localFileMentions } from "../src/safety/gateway.js";
import { rng } from "./corpus.js";
import { ensureVenv } from "./python-env.js";

let python: string;
beforeAll(() => {
  python = ensureVenv();
}, 15 * 60_000);

/** The gateway's home for `~/` in these texts (nothing is read from it: isfile is answered yes for every match). */
const HOME = "/home/gw";

/**
 * What the real extract_local_files returns for each text, every match taken
 * for a file; `chain`: run on what the gateway's chain before it leaves
 * (extract_media, extract_images, _strip_media_directives).
 */
function realMentions(texts: string[], chain = false): string[][] {
  const read = chain
    ? "B.extract_local_files(_strip_media_directives(B.extract_images(B.extract_media(t)[1])[1]).strip())[0]"
    : "B.extract_local_files(t)[0]";
  const script = [
    "import json, logging, sys, os.path",
    "logging.disable(logging.CRITICAL)",
    "from gateway.platforms.base import BasePlatformAdapter as B, _strip_media_directives",
    "os.path.isfile = lambda p: True",
    `json.dump([${read} for t in json.load(sys.stdin)], sys.stdout)`,
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

  it("randomized (seeded): after the [[…]] markers and the images the gateway removes first (gatewayBareText), the same files as the real chain", () => {
    const rnd = rng(33);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
    const pieces = [
      "/o/a.txt", "/o/a.txt", "~/b.png", " ", " ", "\n", "x", ".", ":", "`", "`", "-", "_v2", "[[as_document]]", "[[audio_as_voice]]", "[[as_",
      "document]]", "![c](https://x.io/c.png)", "![c `v](https://x.io/c.png)", "![d](https://x.io/page)", "![e](https://x.io/fal-cdn/q)", "![",
      "](https://x.io/z.PNG)", '<img src="https://x.io/p.png">', "<img src='https://x.io/q.jpg'/>", '<img src="https://x.io/a`b.png">',
      '<img src="https://x.io/page"></img>', "<img  src=https://x.io/p.png> \n ", "<img src=\"", "https://x.io/c.png", ")", "]",
    ];
    const texts: string[] = [];
    for (let i = 0; i < 3000; i++) {
      let t = "";
      for (let n = 1 + Math.floor(rnd() * 10); n > 0; n--) t += pick(pieces);
      texts.push(t);
    }
    const real = realMentions(texts, true);
    texts.forEach((t, i) => {
      expect([...localFileMentions(gatewayBareText(t), HOME)].sort(), JSON.stringify(t)).toEqual([...new Set(real[i])].sort());
    });
  });

  it("gatewayBareText: the shapes that glue text onto a path or move it into code, with their verdicts, in linear time", () => {
    const cases: [string, string[]][] = [
      ["Preview.<img src=\"https://x.io/p.png\"> /o/a.txt", []],
      ["Chart:![c](https://x.io/c.png)/o/a.txt", []],
      ["Saved as /o/a.txt[[as_document]]x", []],
      ["Saved as /o/a.txt[[audio_as_voice]]_v2", []],
      ["`a ![b`](https://x.io/c.png) Saved as /o/a.txt `d`", []],
      // The other way: a backtick inside an image's alt no longer pairs with one after the path.
      ["![c `v2](https://x.io/c.png) Saved as /o/a.txt `note`", ["/o/a.txt"]],
      // An image whose URL does not look like one's stays, and so does what it holds.
      ["Chart:![c](https://x.io/page)/o/a.txt", ["/o/a.txt"]],
      ["See ![c](https://x.io/page) /o/a.txt", ["/o/a.txt"]],
    ];
    for (const [text, want] of cases) expect([...localFileMentions(gatewayBareText(text), HOME)], text).toEqual(want);
    expect(realMentions(cases.map((c) => c[0]), true)).toEqual(cases.map((c) => c[1]));
    // Many `![` before one `]` (the first one's alt holds the rest), many `<img` with no end: each read once.
    expect(gatewayBareText(`${"![".repeat(200_000)}](https://x.io/c.png) /o/a.txt`)).toBe(" /o/a.txt");
    const open = `${"![a".repeat(100_000)}](https://x.io/c.png /o/a.txt`;
    expect(gatewayBareText(open)).toBe(open);
    const tags = `${"<img src=https://x.io/".repeat(50_000)} /o/a.txt`;
    expect(gatewayBareText(tags)).toBe(tags);
    expect(gatewayBareText(`${'<img src="https://x.io/p.png">'.repeat(50_000)}/o/a.txt`)).toBe("/o/a.txt");
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
