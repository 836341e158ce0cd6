// check-reply and the reply's Markdown: a repair removes the mangled copies
// of a published file's line and nothing else, so every code block opens and
// closes where it did. Judged through the CLI, and what the gateway delivers
// from each result by the real Hermes' extraction (hermes-agent in .venv/).
import { spawnSync } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fs from "node:fs";
import { escapeText } from "../src/core/escape.js";
import { checkReply } from "../src/reply/check-reply.js";
import { SourceDenylist } from "../src/safety/denylist.js";
import { deliveryPolicy, tokenNames } from "../src/safety/gateway.js";
import { rng } from "./corpus.js";
import { cli, makeHome, png, prepared, write } from "./helpers.js";
import { gatewaySends } from "./hermes-gateway.js";
import { ensureVenv } from "./python-env.js";

let h: ReturnType<typeof makeHome>;
let env: NodeJS.ProcessEnv;
let chart: string;
let notes: string;
let python: string;

beforeAll(() => {
  h = makeHome();
  chart = prepared(h, "chart.png", png(1));
  notes = prepared(h, "notes.txt", "meeting notes\n");
  // The environment the systemd drop-in gives the gateway.
  env = { ...h.env, HERMES_MEDIA_ALLOW_DIRS: h.outbox, HERMES_MEDIA_DELIVERY_STRICT: "1", HERMES_MEDIA_TRUST_RECENT_FILES: "0" };
  python = ensureVenv();
}, 15 * 60_000);
afterAll(() => h.cleanup());

function run(reply: string, published: string[]): string {
  const r = cli(["check-reply", ...published.flatMap((p) => ["--media", p])], { env, input: reply });
  expect(r.code, r.stderr).toBe(0);
  return r.stdout;
}

/** What the real gateway delivers from each reply: BasePlatformAdapter.extract_media, then its path validation. */
const delivered = (replies: string[]) => gatewaySends(python, env, replies, "media");

/** The paths the real gateway reads from each reply (BasePlatformAdapter.extract_media, before any path is validated). */
function read(replies: string[]): string[][] {
  const script = [
    "import json, sys",
    "from gateway.platforms.base import BasePlatformAdapter as B",
    "json.dump([[p for p, _ in B.extract_media(r)[0]] for r in json.load(sys.stdin)], sys.stdout)",
  ].join("\n");
  const r = spawnSync(python, ["-c", script], { env: { ...env, PYTHONDONTWRITEBYTECODE: "1" }, input: JSON.stringify(replies), encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as string[][];
}

const F = "```";

describe("a repair keeps every fence line", () => {
  // [name, reply, result]: `MEDIA:C` stands for the published file's line.
  const cases: [string, string, string][] = [
    // The red-team's case: an indented fence, a copy, a fence. Both fences stay (the one left open is closed before the added line, as before).
    ["an indented fence, then the copy, then a fence", `Intro\n    ${F}\n\`MEDIA:C\`\nAfter:\n${F}\nmore\n`, `Intro\n    ${F}\nAfter:\n${F}\nmore\n${F}\nMEDIA:C\n`],
    ["the copy alone in a block", `Here:\n${F}\nMEDIA:C\n${F}\nThanks`, `Here:\n${F}\n${F}\nThanks\nMEDIA:C`],
    ["the copy among code", `Here:\n${F}python\nx = 1\nMEDIA:C\n${F}\nThanks\n`, `Here:\n${F}python\nx = 1\n${F}\nThanks\nMEDIA:C\n`],
    ["an indented block in a list item", `- item\n    ${F}\n    MEDIA:C\n    ${F}\n- next\n`, `- item\n    ${F}\n    ${F}\n- next\nMEDIA:C\n`],
    ["a block in a quote", `> ${F}\n> MEDIA:C\n> ${F}\nAfter\n`, `> ${F}\n> ${F}\nAfter\nMEDIA:C\n`],
    ["the copy as a fence's info string", `Intro\n${F} MEDIA:C\ncode\n${F}\nAfter\n`, `Intro\n${F}\ncode\n${F}\nAfter\nMEDIA:C\n`],
    ["the copy glued to a fence", `Intro\n${F}MEDIA:C\ncode\n${F}\nAfter\n`, `Intro\n${F}\ncode\n${F}\nAfter\nMEDIA:C\n`],
    ["the copy in backticks after a tilde fence", `Intro\n~~~ \`MEDIA:C\`\ncode\n~~~\nAfter\n`, `Intro\n~~~\ncode\n~~~\nAfter\nMEDIA:C\n`],
    ["a copy just before a block", `Intro\n**MEDIA:C**\n${F}\ncode\n${F}\n`, `Intro\n${F}\ncode\n${F}\nMEDIA:C\n`],
    ["a copy just after a block", `${F}\ncode\n${F}\n\`MEDIA:C\`\nAfter\n`, `${F}\ncode\n${F}\nAfter\nMEDIA:C\n`],
    ["a copy between two blocks", `${F}\na\n${F}\n_MEDIA:C_\n~~~~\nb\n~~~~\n`, `${F}\na\n${F}\n~~~~\nb\n~~~~\nMEDIA:C\n`],
    // Inside a block, a fence with text after it is code, not a closing fence: its line goes, so no fence closes the block early.
    ["a copy after a fence inside a block", `${F}\ncode\n${F} MEDIA:C\nstill code\n`, `${F}\ncode\nstill code\n${F}\nMEDIA:C\n`],
    // Triple backticks with a backtick after them are inline code, not a fence: the line is the copy's.
    ["inline code of three backticks", `Intro\n${F}MEDIA:C${F}\nAfter\n`, `Intro\nAfter\nMEDIA:C\n`],
    ["CRLF", `Intro\r\n${F}\r\nMEDIA:C\r\n${F}\r\nAfter\r\n`, `Intro\r\n${F}\r\n${F}\r\nAfter\r\nMEDIA:C\r\n`],
    // Where the two rules check-reply had disagreed (one: a fence at any indentation, after any markers, a block never ended by its
    // container; the other: at most three spaces, no markers): Markdown's one rule now. A line at the top level ends a list item's
    // block (and a quote's), and opens its own when it is a fence: the copy in its info string goes, the fence stays, and the block
    // it opens is closed before the added line. It was dropped whole, as the list item's code, moving `more` out of a code block.
    ["a fence with the copy after a list item's block", `- ${F}\n  code\n${F} MEDIA:C\nmore\n`, `- ${F}\n  code\n${F}\nmore\n${F}\nMEDIA:C\n`],
    ["a fence with the copy after a quote's block", `> ${F}\n> code\n${F} MEDIA:C\nmore\n`, `> ${F}\n> code\n${F}\nmore\n${F}\nMEDIA:C\n`],
    // Four spaces after a paragraph are no fence: the fence below opens the block (it was taken for the closing one).
    ["four spaces, then a fence with the copy", `Intro\n    ${F}\ncode\n${F} MEDIA:C\nmore\n`, `Intro\n    ${F}\ncode\n${F}\nmore\n${F}\nMEDIA:C\n`],
    // A block left open in a list item or a quote ends with it: no fence is added (at the top level it would open a block), as before.
    ["a block left open in a list item", `- ${F}\n  \`MEDIA:C\`\n  code\n`, `- ${F}\n  code\nMEDIA:C\n`],
    ["a block left open in a quote", `> ${F}\n> \`MEDIA:C\`\n> code\n`, `> ${F}\n> code\nMEDIA:C\n`],
    // The gateway takes a line in a tilde block (it masks only backtick fences): the exact line stays.
    ["the exact line in a tilde block", `Here:\n~~~\nMEDIA:C\n~~~\n`, `Here:\n~~~\nMEDIA:C\n~~~\n`],
  ];

  it("through the CLI: only the copy goes, every fence stays; the real gateway delivers the file once; judging again changes nothing", () => {
    const results = cases.map(([name, reply, result]) => {
      const out = run(reply.replaceAll("MEDIA:C", `MEDIA:${chart}`), [chart]);
      return { name, reply, result, out };
    });
    for (const { name, result, out } of results) expect(out.replaceAll(`MEDIA:${chart}`, "MEDIA:C"), name).toBe(result);
    expect(delivered(results.map((r) => r.out))).toEqual(results.map(() => [chart]));
    for (const { name, out } of results) expect(run(out, [chart]), name).toBe(out);
  });
});

describe("a repair in headings, tables, lists and quotes, and of a reply that is only a copy", () => {
  const cases: [string, string, string][] = [
    ["a reply of only the exact line", `MEDIA:C`, `MEDIA:C`],
    ["a reply of only a copy, with its line break", "`MEDIA:C`\n", "MEDIA:C\n"],
    ["a reply of only a copy, CRLF", "`MEDIA:C`\r\n", "MEDIA:C\r\n"],
    ["a reply of only a copy, no line break", "**MEDIA:C**", "MEDIA:C"],
    // A heading left with only its marker goes with the copy; one with text keeps it.
    ["a heading of only the copy", `# MEDIA:C\ntext\n`, `text\nMEDIA:C\n`],
    ["a heading with the copy first", "## `MEDIA:C`. Chart\ntext\n", `## Chart\ntext\nMEDIA:C\n`],
    ["a heading with the copy last", `## Chart: MEDIA:C\ntext\n`, `## Chart:\ntext\nMEDIA:C\n`],
    // A table keeps its rows: the cell is emptied.
    ["a table cell", `| a | b |\n|---|---|\n| MEDIA:C | x |\n| y | z |\n`, `| a | b |\n|---|---|\n| | x |\n| y | z |\nMEDIA:C\n`],
    ["a nested list item", `- a\n  - MEDIA:C\n- b\n`, `- a\n- b\nMEDIA:C\n`],
    ["a quote's line", `> a\n> MEDIA:C\n> b\n`, `> a\n> b\nMEDIA:C\n`],
    ["trailing spaces and tabs", `Intro\nMEDIA:C \t\nAfter  \n`, `Intro\nAfter  \nMEDIA:C\n`],
  ];

  it("through the CLI: only the copy goes; the real gateway delivers the file once; judging again changes nothing", () => {
    const results = cases.map(([name, reply, result]) => ({ name, result, out: run(reply.replaceAll("MEDIA:C", `MEDIA:${chart}`), [chart]) }));
    for (const { name, result, out } of results) expect(out.replaceAll(`MEDIA:${chart}`, "MEDIA:C"), name).toBe(result);
    expect(delivered(results.map((r) => r.out))).toEqual(results.map(() => [chart]));
    for (const { name, out } of results) expect(run(out, [chart]), name).toBe(out);
  });
});

describe("the same file named twice", () => {
  it("keeps the first exact line and removes the others: the real gateway uploads a file once per line", () => {
    const cases: [string, string][] = [
      [`MEDIA:C\ntext\nMEDIA:C\n`, `MEDIA:C\ntext\n`],
      ["`MEDIA:C`\nMEDIA:C\nx\nMEDIA:C", `MEDIA:C\nx`],
      [`MEDIA:C\nMEDIA:N\nMEDIA:C\nMEDIA:N\n`, `MEDIA:C\nMEDIA:N\n`],
    ];
    const fill = (t: string) => t.replaceAll("MEDIA:C", `MEDIA:${chart}`).replaceAll("MEDIA:N", `MEDIA:${notes}`);
    const outs = cases.map(([reply, result]) => {
      const out = run(fill(reply), [chart, notes]);
      expect(out).toBe(result.includes("MEDIA:N") ? fill(result) : `${fill(result)}${result.endsWith("\n") ? "" : "\n"}MEDIA:${notes}${result.endsWith("\n") ? "\n" : ""}`);
      expect(run(out, [chart, notes])).toBe(out);
      return out;
    });
    expect(delivered(outs)).toEqual(outs.map(() => [chart, notes]));
    // The input as written: the gateway would have sent the chart twice.
    expect(delivered([fill(cases[0]![0])])).toEqual([[chart, chart]]);
  });
});

describe("a fence closed before the added lines", () => {
  it("an exact line the gateway took in a block left open is moved after the fence that closes it, so the file is still delivered", () => {
    // The gateway masks a block only once it is closed: the chart is delivered as written; closing the block for the notes' line would mask it.
    const reply = `Code:\n${F}\nMEDIA:${chart}\nmore code\n`;
    expect(delivered([reply])).toEqual([[chart]]);
    const out = run(reply, [chart, notes]);
    expect(out).toBe(`Code:\n${F}\nmore code\n${F}\nMEDIA:${notes}\nMEDIA:${chart}\n`);
    expect(delivered([out])).toEqual([[notes, chart]]);
    expect(run(out, [chart, notes])).toBe(out);
    // With nothing to add, nothing closes the block: the reply stays as it was.
    expect(run(reply, [chart])).toBe(reply);
    const report = JSON.parse(cli(["check-reply", "--json", "--media", chart, "--media", notes], { env, input: reply }).stdout);
    expect(report).toMatchObject({ added: [notes, chart], kept: [] });
  });
});

describe("randomized replies (seeded): fences, quotes, lists, headings, tables, copies, CRLF", () => {
  /**
   * A line and what must become of it: kept as it is, dropped (a copy),
   * either (an exact line: kept where the gateway takes the first one), or
   * `becomes` (a copy inside a line of other text: what is left).
   */
  type Piece = { line: string; fate: "keep" | "drop" | "either" } | { line: string; fate: "becomes"; left: string };

  function reply(rnd: () => number, files: string[]): Piece[] {
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
    const file = () => pick(files);
    const copies = [(p: string) => `\`MEDIA:${p}\``, (p: string) => `**MEDIA:${p}**`, (p: string) => `> MEDIA:${p}`, (p: string) => `- MEDIA:${p}`, (p: string) => `# MEDIA:${p}`, (p: string) => `MEDIA:${p}.`, (p: string) => `  MEDIA:${p}  `, (p: string) => `media:${p}`, (p: string) => `MEDIA: ${p}`, (p: string) => `"MEDIA:${p}"`, (p: string) => `\`\`\`MEDIA:${p}\`\`\``];
    // A copy among other text: the line stays, without the copy.
    const inline: [(p: string) => string, string][] = [
      [(p) => `See \`MEDIA:${p}\` here.`, "See here."],
      [(p) => `| MEDIA:${p} | x |`, "| | x |"],
      [(p) => `## Chart: MEDIA:${p}`, "## Chart:"],
      [(p) => `- Chart: **MEDIA:${p}**.`, "- Chart."],
    ];
    // A blank line is written with a space: an empty last line could not be told from the final line break.
    const prose = ["Some text.", " ", "## A heading", "| a | b |", "|---|---|", "- an item", "  - nested", "> a quote", "1. first", "text with trailing spaces  ", "Use ``` inline.", "x = `code`"];
    const opens = ["```", "```python", "~~~", "~~~~", "    ```", "  ```", "> ```", "- ```"];
    const pieces: Piece[] = [];
    const n = 1 + Math.floor(rnd() * 12);
    for (let i = 0; i < n || pieces.length === 0; i++) {
      const r = rnd();
      if (r < 0.35) pieces.push({ line: pick(prose), fate: "keep" });
      else if (r < 0.55) pieces.push({ line: pick(copies)(file()), fate: "drop" });
      else if (r < 0.65) pieces.push({ line: `MEDIA:${file()}`, fate: "either" });
      else if (r < 0.72) {
        const [copy, left] = pick(inline);
        pieces.push({ line: copy(file()), fate: "becomes", left });
      }
      else {
        // A block: its fences stay; a copy inside goes; the last block may be left open.
        const open = pick(opens);
        const fence = /[`~]{3,}/.exec(open)![0];
        // A block's lines keep its quote (a line without `>` ends the quote, and the block with it) and are indented to its list item's content.
        const indent = open.slice(0, open.indexOf(fence[0]!)).replace(/-/g, " ");
        // Sometimes with a copy as its info string: the fence stays, the copy goes. (Four spaces at the top level
        // are no fence, as Markdown reads them, unless a list item's content is indented so: that line goes whole.)
        if (rnd() < 0.25 && open !== "    ```") pieces.push({ line: `${open} MEDIA:${file()}`, fate: "becomes", left: open });
        else pieces.push({ line: open, fate: "keep" });
        for (let k = Math.floor(rnd() * 4); k > 0; k--) {
          const c = rnd();
          if (c < 0.4) pieces.push({ line: `${indent}code ${k}`, fate: "keep" });
          else if (c < 0.7) pieces.push({ line: `${indent}${pick(copies)(file())}`, fate: "drop" });
          // A fence with text after it, inside a block, is code: this line is the copy's.
          else if (c < 0.8) pieces.push({ line: `${indent}${fence[0]!.repeat(3)} MEDIA:${file()}`, fate: "drop" });
          else pieces.push({ line: `${indent}MEDIA:${file()}`, fate: "either" });
        }
        // Closed at the indentation of its lines: `- ```` again would open another list item, and a block in it.
        if (i < n - 1 || rnd() < 0.7) pieces.push({ line: `${indent}${fence}`, fate: "keep" });
      }
    }
    return pieces;
  }

  it("each result carries every published file once where the real gateway takes it, changes only the copies, and is stable", () => {
    const denylist = new SourceDenylist({ home: h.home, hermesHome: path.join(h.home, ".hermes") });
    const policy = deliveryPolicy(env, h.home, path.join(h.home, ".hermes"), (p) => denylist.reason(p));
    const judge = (text: string, published: string[]) => checkReply(text, { published, outbox: h.outbox, policy }).reply;
    const seed = 30;
    const rnd = rng(seed);
    const cases: { input: string; out: string; published: string[] }[] = [];
    for (let i = 0; i < 400; i++) {
      const published = rnd() < 0.5 ? [chart] : [chart, notes];
      const pieces = reply(rnd, published);
      const crlf = rnd() < 0.3 ? "\r\n" : "\n";
      const input = pieces.map((p) => p.line).join(crlf) + (rnd() < 0.6 ? crlf : "");
      // A reply of one line without a line break gets the added lines with \n.
      const nl = input.includes("\n") ? crlf : "\n";
      const out = judge(input, published);
      const where = `seed ${seed}, reply ${i}: ${JSON.stringify(pieces)} -> ${JSON.stringify(out)}`;
      // (b) Line by line: every kept line is there as it was, in order; only copies (and repeated exact lines) are gone.
      const lines = out.split(nl);
      if (lines[lines.length - 1] === "") lines.pop();
      let at = 0;
      for (const p of pieces) {
        if (p.fate === "keep") expect(lines[at++], where).toBe(p.line);
        else if (p.fate === "becomes") expect(lines[at++], where).toBe(p.left);
        else if (p.fate === "either" && lines[at] === p.line) at++;
      }
      // What follows is the added tail: a fence closing a block left open, then the missing lines.
      for (const extra of lines.slice(at)) expect(extra, where).toMatch(new RegExp(`^(?:[\`~]{3,}|MEDIA:(?:${published.map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|")}))$`));
      expect(out.endsWith(nl) || !input.endsWith(nl), where).toBe(true);
      // (c) Judged again, nothing changes.
      expect(judge(out, published), where).toBe(out);
      cases.push({ input, out, published });
    }
    // (a) What the real gateway delivers from each: every published file, once.
    const got = delivered(cases.map((c) => c.out));
    cases.forEach((c, i) => expect([...got[i]!].sort(), `reply ${i}: ${JSON.stringify(c.input)} -> ${JSON.stringify(c.out)}`).toEqual([...c.published].sort()));
    // The CLI gives the library's result (a sample).
    for (const c of cases.slice(0, 10)) expect(run(c.input, c.published)).toBe(c.out);
  });
});

describe("paths with spaces outside quotes, read as the real gateway reads them (seeded)", () => {
  it("check-reply judges exactly the path the real Hermes reads from each directive (to the last extension on its line), leaves none it would read unjudged, and the result is stable", () => {
    // Files the gateway always sends from (its own cache), with spaces in their names; others that are not there.
    const cache = path.join(h.home, ".hermes", "cache", "images");
    fs.mkdirSync(cache, { recursive: true });
    const there = ["my chart.png", "a b c.pdf", "two  spaces.txt"].map((n) => write(cache, n, "x"));
    const gone = ["/srv/gone report.pdf", "/srv/x/notes final.md", "/srv/plain.png"];
    const denylist = new SourceDenylist({ home: h.home, hermesHome: path.join(h.home, ".hermes") });
    const policy = deliveryPolicy(env, h.home, path.join(h.home, ".hermes"), (p) => denylist.reason(p));
    const judge = (text: string, published: string[]) => checkReply(text, { published, outbox: h.outbox, policy });
    const rnd = rng(31);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
    const anyPath = () => (rnd() < 0.5 ? pick(there) : pick(gone));
    const forms: ((p: string) => string)[] = [
      (p) => `MEDIA:${p}`,
      (p) => `MEDIA: ${p}`,
      (p) => `Here it is: MEDIA:${p}`,
      (p) => `MEDIA:${p} and more text`,
      (p) => `MEDIA:${p}, see notes.md for the rest`,
      (p) => `MEDIA:${p}. Then report.pdf, ok`,
      (p) => `MEDIA:${p}\tand a tab`,
      (p) => `MEDIA:${p} MEDIA:${anyPath()}`,
      (p) => `MEDIA:${p} (chart.png)`,
      (p) => `MEDIA:/srv/abc then ${path.basename(p)}`,
      (p) => `see MEDIA:${p}\u3000end.pdf`,
      (p) => `MEDIA:${chart} and ${path.basename(p)}`,
    ];
    const prose = ["Some text.", "- an item", "1. first", "| a | b |"];
    const cases: { input: string; out: string; published: string[] }[] = [];
    for (let i = 0; i < 200; i++) {
      const lines: string[] = [];
      for (let n = 1 + Math.floor(rnd() * 5); n > 0; n--) lines.push(rnd() < 0.3 ? pick(prose) : pick(forms)(anyPath()));
      const published = rnd() < 0.5 ? [chart] : [];
      const input = lines.join("\n") + "\n";
      const report = judge(input, published);
      cases.push({ input, out: report.reply, published });
    }
    const before = read(cases.map((c) => c.input));
    const after = read(cases.map((c) => c.out));
    cases.forEach((c, i) => {
      const where = `reply ${i}: ${JSON.stringify(c.input)} -> ${JSON.stringify(c.out)}`;
      const report = judge(c.input, c.published);
      // Every path the gateway reads from the input is one check-reply judged, whole: kept, named with a sentence, or a
      // published file's copy (the published path and text glued on after it, which stays as text).
      const judged = new Set([...report.kept, ...report.notes.map((n) => n.path)]);
      const copyOf = (p: string) => report.removed.some((r) => tokenNames(escapeText(p), r.path));
      for (const p of before[i]!) expect(judged.has(escapeText(p)) || copyOf(p), `${where}: ${JSON.stringify(p)} not judged (judged: ${JSON.stringify([...judged])})`).toBe(true);
      // From the result, the gateway reads only what check-reply kept or added: no fragment of a path is left to read.
      const left = new Set([...report.kept, ...report.added]);
      for (const p of after[i]!) expect(left.has(escapeText(p)), `${where}: reads ${JSON.stringify(p)}`).toBe(true);
      // Judged again, nothing changes.
      expect(judge(c.out, c.published).reply, where).toBe(c.out);
    });
    // What the real gateway sends from the results: each published file once, and nothing else (a spaced path is named, never relied on)
    // but an outbox file whose path starts a spaced one (`MEDIA:/o/chart.png and notes final.md`): repaired like a published one.
    const sent = delivered(cases.map((c) => c.out));
    cases.forEach((c, i) => {
      const added = judge(c.input, c.published).added;
      expect([...sent[i]!].sort(), `reply ${i}: ${JSON.stringify(c.out)}`).toEqual([...new Set([...c.published, ...added])].sort());
    });
    // The case that was wrong: the gateway reads the whole path, and so does check-reply (it named "my", a file without an extension).
    const one = judge(`MEDIA:${there[0]}\n`, []);
    expect(one.reply).toBe("(my chart.png could not be sent: its path has a space, where older gateways end it.)\n");
    expect(one.notes).toEqual([{ path: there[0], code: "mangled", reason: "its path has a space, where older gateways end it" }]);
    expect(judge("Sent: MEDIA:/srv/gone report.pdf\n", []).reply).toBe("Sent: (gone report.pdf could not be sent: the file does not exist.)\n");
  });
});
