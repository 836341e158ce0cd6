// The README and docs/ point into each other and into themselves: every
// relative link must name a file that exists and, with `#`, a heading that
// file has (as GitHub makes a heading's anchor). A section moved or renamed
// without its links mended fails here, not on a reader.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "./helpers.js";

const DOCS = ["README.md", ...fs.readdirSync(path.join(ROOT, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)];

/** GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped, each space a `-`; a repeated one gets `-1`, `-2`. */
function anchorsOf(absolute: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of fs.readFileSync(absolute, "utf8").split("\n")) {
    if (line.startsWith("```")) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6} (.*)$/.exec(line);
    if (!heading) continue;
    const base = heading[1]!.trim().toLowerCase().replace(/[^\p{L}\p{N}_\- ]/gu, "").replace(/ /g, "-");
    const n = seen.get(base);
    seen.set(base, (n ?? -1) + 1);
    anchors.add(n === undefined ? base : `${base}-${n + 1}`);
  }
  return anchors;
}

/** Every relative link (not `http:`, `mailto:`) outside code: its file (from the linking file's folder) and anchor. */
function linksOf(file: string): { line: number; target: string; anchor: string | undefined }[] {
  const links = [];
  let fenced = false;
  for (const [i, line] of fs.readFileSync(path.join(ROOT, file), "utf8").split("\n").entries()) {
    if (line.startsWith("```")) fenced = !fenced;
    if (fenced) continue;
    // Code spans hold examples, not links; a link's target has no blank and no `)`. Both patterns linear.
    for (const m of line.replace(/`[^`]*`/g, "").matchAll(/\]\(([^()\s]*)\)/g)) {
      const href = m[1]!;
      if (/^[a-z]+:/i.test(href)) continue;
      const hash = href.indexOf("#");
      const target = hash < 0 ? href : href.slice(0, hash);
      links.push({ line: i + 1, target: target === "" ? file : path.posix.normalize(path.posix.join(path.posix.dirname(file), target)), anchor: hash < 0 ? undefined : href.slice(hash + 1) });
    }
  }
  return links;
}

describe("documentation links", () => {
  it("every relative link of README.md and docs/*.md names a file that exists and a heading it has", () => {
    const anchors = new Map<string, Set<string>>();
    const broken: string[] = [];
    let checked = 0;
    for (const file of DOCS) {
      for (const { line, target, anchor } of linksOf(file)) {
        checked++;
        if (!fs.existsSync(path.join(ROOT, target))) {
          broken.push(`${file}:${line}: ${target} does not exist`);
          continue;
        }
        if (anchor === undefined) continue;
        if (!anchors.has(target)) anchors.set(target, anchorsOf(path.join(ROOT, target)));
        if (!anchors.get(target)!.has(anchor)) broken.push(`${file}:${line}: ${target} has no heading #${anchor}`);
      }
    }
    expect(broken).toEqual([]);
    // The README links into docs/ and into itself: a parser that found no link would pass the test above.
    expect(checked).toBeGreaterThan(20);
  });

  it("reads anchors as GitHub makes them", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "anchors-"));
    try {
      const file = path.join(dir, "a.md");
      fs.writeFileSync(file, "# `media-outbox prepare [options] [--] FILE...`\n## Run 49 (2026-12-05, the fourteenth session)\n## Run 49 (2026-12-05, the fourteenth session)\n```\n# not a heading\n```\n");
      expect([...anchorsOf(file)]).toEqual(["media-outbox-prepare-options----file", "run-49-2026-12-05-the-fourteenth-session", "run-49-2026-12-05-the-fourteenth-session-1"]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
