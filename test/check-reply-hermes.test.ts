// check-reply against the real Hermes 0.19.0 (hermes-agent in .venv/), the
// red team's comparison run as a test: each reply is judged by the gateway's
// own chain (extract_media, its path filter, extract_images,
// _strip_media_directives, extract_local_files, its filter) before and after
// check-reply. Files of any type whose names end in what is not punctuation to
// Hermes (`notes.txt~`, `Really?`, `out_`), glued copies of an outbox file's
// line (published or dropped in the folder, absolute or `~/`), bare `~/` and
// `\` mentions, and paths the gateway reads on past a space.
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkReply } from "../src/reply/check-reply.js";
import { SourceDenylist } from "../src/safety/denylist.js";
import { deliveryPolicy } from "../src/safety/gateway.js";
import { rng } from "./corpus.js";
import { makeHome, prepared, write } from "./helpers.js";
import { gatewaySends } from "./hermes-gateway.js";
import { ensureVenv } from "./python-env.js";

let h: ReturnType<typeof makeHome>;
let python: string;
let hermesHome: string;
/** The published file, and a file dropped in the outbox (the plugin never records it). */
let a: string;
let dropped: string;
/** Files elsewhere, any type, with names Hermes takes whole. */
let odd: string[];
let plain: string;
let log: string;

beforeAll(() => {
  h = makeHome();
  hermesHome = path.join(h.home, ".hermes");
  a = prepared(h, "a.txt", "hello\n");
  dropped = path.join(h.outbox, "drop.txt");
  fs.writeFileSync(dropped, "dropped\n");
  const f = path.join(h.home, "f");
  fs.mkdirSync(f);
  odd = ["notes.txt~", "draft~", "Really?", "Wow!", "out_", "x.md*", "y.txt>"].map((n) => write(f, n, "content\n"));
  plain = write(f, "plain.png", "not really a png\n");
  log = write(f, "b.log", "log\n");
  python = ensureVenv();
}, 15 * 60_000);
afterAll(() => h.cleanup());

function judge(reply: string, published: string[]) {
  const denylist = new SourceDenylist({ home: h.home, hermesHome });
  return checkReply(reply, { published, outbox: h.outbox, policy: deliveryPolicy(h.env, h.home, hermesHome, (p) => denylist.reason(p)) });
}

/** Every path the real gateway uploads from each reply (MEDIA: files, then bare local files), a file once per upload. */
const delivered = (replies: string[]) => gatewaySends(python, h.env, replies, "uploads");

/** The names check-reply's sentences say could not be sent. */
function namedNotSent(reply: string): string[] {
  return [...reply.matchAll(/\(([^()\n]+?) could not be sent: /g)].map((m) => m[1]!);
}

const tilde = (p: string) => `~${p.slice(h.home.length)}`;

/**
 * Judges each case's reply with its published files and asserts what the real gateway then sends: the expected reply,
 * every path it sent before still sent, each published file once, nothing a sentence names (`named`), and a second
 * judging changing nothing.
 */
function expectDelivered(cases: [string, string[], string][], { named = false } = {}): void {
  const outs = cases.map(([reply, published]) => judge(reply, published).reply);
  const got = delivered(cases.flatMap(([reply], i) => [reply, outs[i]!]));
  cases.forEach(([reply, published, want], i) => {
    const [before, after] = [got[2 * i]!, got[2 * i + 1]!];
    const where = `${reply} -> ${outs[i]}: ${JSON.stringify(before)} -> ${JSON.stringify(after)}`;
    expect(outs[i], where).toBe(want);
    if (named) for (const n of namedNotSent(outs[i]!)) expect(after.map((p) => path.basename(p)), where).not.toContain(n);
    for (const p of before) expect(after, where).toContain(p);
    for (const p of published) expect(after.filter((x) => x === p), where).toHaveLength(1);
    expect(judge(outs[i]!, published).reply).toBe(outs[i]);
  });
}

describe("check-reply and the real Hermes 0.19.0", () => {
  it("a file whose name ends in ~ ! ? * > _ is delivered as written: its line is kept", () => {
    const reply = odd.map((p) => `MEDIA:${p}`).join("\n") + "\n";
    const r = judge(reply, []);
    expect(r.reply).toBe(reply);
    const [before, after] = delivered([reply, r.reply]);
    expect(new Set(before)).toEqual(new Set(odd));
    expect(new Set(after)).toEqual(new Set(odd));
    // What Hermes strips is still punctuation: `notes.txt~.` names notes.txt~ to Hermes and stays a mangled line to check-reply.
    const stripped = judge(`MEDIA:${odd[0]}.\n`, []);
    expect(stripped.changed).toBe(true);
  });

  it("glued copies of an outbox file's line, published or not, absolute or ~/, are one line", () => {
    for (const p of [a, dropped]) {
      for (const reply of [`MEDIA:${p}MEDIA:${p}`, `MEDIA:${tilde(p)}MEDIA:${tilde(p)}`, `MEDIA:${tilde(p)},MEDIA:${p}`, `See MEDIA:${tilde(p)}MEDIA:${p}.`]) {
        for (const published of p === a ? [[], [a]] : [[]]) {
          const r = judge(`${reply}\n`, published);
          expect(namedNotSent(r.reply), reply).toEqual([]);
          expect(delivered([r.reply])[0]!.filter((x) => x === p), `${reply} -> ${r.reply}`).toHaveLength(1);
        }
      }
    }
  });

  it("a published file named by its bare ~/ path, or after a lone backslash, is not added again", () => {
    // No match runs on through `\/`: the path after a backslash is taken whatever precedes it.
    for (const reply of [`Saved as ${tilde(a)}.`, `(${tilde(a)},`, `${tilde(a)}~`, `"${tilde(a)}"`, `\\${a}`, `see \\${a} now`, `/q\\${a}`]) {
      const r = judge(reply, [a]);
      expect(r.changed, reply).toBe(false);
      expect(delivered([r.reply])[0]!.filter((x) => x === a), reply).toHaveLength(1);
    }
    // A path running up to a `-` is another file to Hermes: the line is added.
    const r = judge(`/q-${a}`, [a]);
    expect(r.added).toEqual([a]);
    expect(delivered([r.reply])[0]!.filter((x) => x === a)).toHaveLength(1);
  });

  it("a bare mention the gateway's earlier removals ([[…]] markers, images) glue onto text or move into code is no mention: the line is added", () => {
    const replies = [
      `\`a ![b\`](https://x.io/c.png) Saved as ${a} \`d\``,
      `Saved as \`<img src="https://x.io/a\`b.png"> ${a} \`z\``,
      `Saved as ${a}[[as_document]]x`,
      `Saved as ${a}[[audio_as_voice]]_v2`,
      `Preview.<img src="https://x.io/p.png"> ${a}`,
      `Chart:![chart](https://x.io/c.png)${a}`,
    ];
    const outs = replies.map((reply) => judge(reply, [a]));
    for (const [i, r] of outs.entries()) expect(r.added, replies[i]).toEqual([a]);
    // The other way: the image takes a backtick out of its pairing, and the path is a mention after all: no line added.
    const freed = `![chart \`v2](https://x.io/c.png) Saved as ${a} \`note\``;
    expect(judge(freed, [a]).changed).toBe(false);
    const got = delivered([...outs.map((r) => r.reply), freed]);
    for (const [i, after] of got.entries()) expect(after.filter((x) => x === a), String(i)).toHaveLength(1);
  });

  it("a missing file's directive with a copy of the published line glued on after markup is named by the missing file, never the attached one", () => {
    const cases: [string, string][] = [
      [`See MEDIA:/tmp/nope.png**MEDIA:\`${a}\``, "nope.png"],
      [`"MEDIA:/tmp/x.txt"\u200b${tilde(a)}.`, "x.txt"],
      [`MEDIA:/tmp/nope.png\`${a}`, "nope.png"],
      [`See MEDIA:/tmp/nope.png_ MEDIA:*${a}*`, "nope.png"],
    ];
    const outs = cases.map(([reply]) => judge(reply, [a]).reply);
    const got = delivered(outs);
    cases.forEach(([reply, name], i) => {
      expect(namedNotSent(outs[i]!), `${reply} -> ${outs[i]}`).toEqual([name]);
      expect(got[i]!.filter((x) => x === a), outs[i]).toHaveLength(1);
    });
  });

  it("a directive the gateway leaves as text, glued on right after a path it reads there, stays as written: a sentence's ( would end that path elsewhere", () => {
    fs.mkdirSync(path.join(h.home, "many5"), { recursive: true });
    const m5 = write(path.join(h.home, "many5"), "m5.txt", "5\n");
    const m20 = write(path.join(h.home, "many5"), "m20.txt", "20\n");
    const replies = [
      // The gateway reads m5.txt (a.txt runs on into MEDIA); before `(` it would read m5.txt/…/a.txt, no file.
      `${m5}${a}MEDIA:${path.dirname(m5)}/m25.txtx-\n`,
      `${m20}.${m5}MEDIA:${m5}/\n`,
      `x-${tilde(dropped)}${a}MEDIA:/tmp/nope.txtq\n`,
      // The published file's own path, glued to the directive left as text, is no mention to the gateway: its line is added.
      `Saved as ${a}MEDIA:/tmp/nope.txtq\n`,
    ];
    const outs = replies.map((reply) => judge(reply, [a]));
    const got = delivered(replies.flatMap((reply, i) => [reply, outs[i]!.reply]));
    replies.forEach((reply, i) => {
      const [before, after] = [got[2 * i]!, got[2 * i + 1]!];
      const where = `${reply} -> ${outs[i]!.reply}: ${JSON.stringify(before)} -> ${JSON.stringify(after)}`;
      // The directive stays, the file the gateway read before it still goes, and the published file goes once.
      expect(outs[i]!.reply.startsWith(reply.slice(0, -1)), where).toBe(true);
      for (const p of before) expect(after, where).toContain(p);
      expect(after.filter((x) => x === a), where).toHaveLength(1);
      expect(judge(outs[i]!.reply, [a]).reply).toBe(outs[i]!.reply);
    });
    // Where the two readings agree (a space before the directive, or no extension right before it), the sentence is written.
    expect(namedNotSent(judge(`${m5} MEDIA:/tmp/nope.txtq\n`, []).reply)).toEqual(["nope.txtq"]);
    expect(namedNotSent(judge(`${m5}/xMEDIA:/tmp/nope.txtq\n`, []).reply)).toEqual(["nope.txtq"]);
    // Linear: thousands of such directives, glued in a chain and on one line after one long run.
    const chain = judge(`${`${m5}MEDIA:/tmp/nope.log`.repeat(20_000)}\n`, []);
    expect(chain.changed).toBe(false);
    const long = judge(`${"/q".repeat(100_000)}/m.txt${"MEDIA:/tmp/nope.log ".repeat(20_000)}\n`, []);
    expect(long.notes.length).toBeGreaterThan(0);
  });

  it("a copy the gateway leaves as text is taken out without changing the paths it reads right before and after it: a space, or the copy stays", () => {
    const replies = [
      // Removed, drop.txt's path would run on into /f/notes.txt~ (no file).
      `${dropped}*MEDIA:${a}${odd[0]}x-\n`,
      // A path ending right before it, which the gateway reads on into the MEDIA word: the copy stays as written.
      `${dropped}${plain}MEDIA:${a}${odd[0]}x-\n`,
      // The published file's own path glued to a copy that stays is no mention to the gateway: its line is added.
      `Saved as ${a}MEDIA:${a}${odd[0]}x-\n`,
      // After it: removed, plain.png's path would follow `~//`, where no path starts; a space keeps the two apart.
      `Saved as ${odd[0]}/MEDIA:${tilde(a)}*${plain}.\n`,
    ];
    const outs = replies.map((reply) => judge(reply, [a]).reply);
    const got = delivered(replies.flatMap((reply, i) => [reply, outs[i]!]));
    replies.forEach((reply, i) => {
      const [before, after] = [got[2 * i]!, got[2 * i + 1]!];
      const where = `${reply} -> ${outs[i]}: ${JSON.stringify(before)} -> ${JSON.stringify(after)}`;
      for (const p of before) expect(after, where).toContain(p);
      expect(after.filter((x) => x === a), where).toHaveLength(1);
      expect(judge(outs[i]!, [a]).reply).toBe(outs[i]);
    });
    // A directive glued on after the copy (text to the gateway, in the copy's any-type path) is named once the copy goes:
    // its `(` would end plain.png's run at a.txt, where the gateway read plain.png before `MEDIA`: the copy stays (seed 58).
    expectDelivered([
      // A directive glued on after the copy that may be left as text, its `MEDIA` word glued on drop.txt's mention: the copy
      // goes only where both readings (that, and a sentence's `(`) keep the mention; here a space does.
      [`${tilde(dropped)}\`MEDIA:${tilde(a)}MEDIA:${plain}x-\n`, [a], `${tilde(dropped)} (plain.pngx- could not be sent: the file does not exist.)\nMEDIA:${a}\n`],
    ], { named: true });
    expectDelivered([[`${plain}${a}MEDIA:${tilde(dropped)}MEDIA:${log} \n`, [a], `${plain}${a}MEDIA:${tilde(dropped)}(b.log could not be sent: the line naming it was not written exactly, on a line of its own.) \nMEDIA:${a}\nMEDIA:${dropped}\n`]], { named: true });
    // A space would start a path (/f/notes.txt) where the gateway read none: the copy stays.
    expect(outs[0]).toBe(`${replies[0]}MEDIA:${a}\n`);
    expect(outs[3]).toBe(`Saved as ${odd[0]}/ ${plain}.\nMEDIA:${a}\n`);
    expect(outs[1]).toBe(`${replies[1]}MEDIA:${a}\n`);
    expect(outs[2]).toBe(`${replies[2]}MEDIA:${a}\n`);
    // Where gluing changes nothing, the copy goes as before.
    const plainCopy = judge(`(Saved: MEDIA:${a}*) done\n`, [a]);
    expect(plainCopy.removed).toHaveLength(1);
    expect(plainCopy.added).toEqual([a]);
    expect(delivered([plainCopy.reply])[0]).toEqual([a]);
  });

  it("a path read on past a space to the published file's path is named by its first word, never as the attached file", () => {
    // A mention inside a directive's spaced path is not one: the gateway removes the directive's text first.
    const r = judge(`MEDIA:/tmp/nope.log and I saved it as ${a}\n`, [a]);
    expect(namedNotSent(r.reply)).toEqual(["nope.log"]);
    expect(delivered([r.reply])[0]).toEqual([a]);
    // Its first word a file of another type, which Hermes' any-type pattern reads: named as a mangled line (never "does not exist").
    const other = judge(`MEDIA:${log} and I saved it as ${a}\n`, [a]);
    expect(other.reply).toBe(`(b.log could not be sent: the line naming it was not written exactly, on a line of its own.)\nMEDIA:${a}\n`);
    expect(delivered([other.reply])[0]).toEqual([a]);
    // So is a file Hermes reads up to a backtick.
    expect(namedNotSent(judge(`See MEDIA:${odd[4]}\`\n`, []).reply)).toEqual(["out_"]);
    // A mention inside a kept line is not one (the gateway removes the directive's text first): the line is added.
    const holder = path.join(h.home, "f", `q(${a}`);
    fs.mkdirSync(path.dirname(holder), { recursive: true });
    fs.writeFileSync(holder, "x\n");
    const inside = judge(`MEDIA:${holder}\n`, [a]);
    expect(inside.reply).toBe(`MEDIA:${holder}\nMEDIA:${a}\n`);
    expect(delivered([inside.reply])[0]).toEqual([holder, a]);
    // A spaced path with no later path in it is named whole, as before.
    expect(namedNotSent(judge("MEDIA:/nope/a b.png\n", []).reply)).toEqual(["a b.png"]);
  });

  it("stays linear on adversarial input: chains of glued copies (absolute, ~/, published or not), mentions, spaced and any-type paths", () => {
    // A chain of n glued copies is one word: each copy's scan restarts inside it, and must not read the rest again.
    for (const [p, published] of [[dropped, []], [a, [a]], [tilde(dropped), []]] as [string, string[]][]) {
      const r = judge(`${`MEDIA:${p}`.repeat(20_000)}${".".repeat(10_000)}\n`, published);
      const file = p === a ? a : dropped;
      expect(r.reply).toBe(`MEDIA:${file}\n`);
      expect(r.removed).toHaveLength(20_000);
    }
    const mentions = judge(`${` (${tilde(a)}x`.repeat(20_000)}${`q\\${a}x `.repeat(20_000)} see ${tilde(a)}.`, [a]);
    expect(mentions.changed).toBe(false);
    expect(mentions.mentioned).toEqual([a]);
    const spaced = judge(`${`MEDIA:/nope/x.log and ${a}\n`.repeat(5_000)}\n${"MEDIA:/nope/o_` ".repeat(20_000)}\n`, [a]);
    expect(spaced.notes).toHaveLength(25_000);
    expect(spaced.reply.startsWith("(x.log could not be sent: the file does not exist.)\n")).toBe(true);
    expect(spaced.reply.endsWith(`\nMEDIA:${a}\n`)).toBe(true);
    // A path run on past a space into a later directive, 70 000 times on one line: each one's scan ends at the next `MEDIA:`.
    const later = judge(`${`MEDIA:${log} a `.repeat(25_000)}${plain}\n`, []);
    expect(later.notes).toHaveLength(25_000);
    expect(judge(later.reply, []).changed).toBe(false);
    // Directives kept for the run before them (and those glued on after them), line after line, and after one long run.
    const runs = `${"/q/p.png/q/m.txtMEDIA:/x/nope.png`MEDIA:/x/nope.logx\n".repeat(20_000)}${"/q".repeat(200_000)}/p.png/m.txtMEDIA:/x/nope.png\`MEDIA:/x/nope.logx\n`;
    expect(judge(runs, []).changed).toBe(false);
    // Copies with markup between, after a long run of names: each merge reads a character either side.
    const merged = judge(`${"/q".repeat(100_000)}${`MEDIA:${a},`.repeat(20_000)}\n`, [a]);
    expect(merged.removed).toHaveLength(20_000);
    expect(merged.reply).toBe(`${"/q".repeat(100_000)},\nMEDIA:${a}\n`);
    // Sentences ending before the backtick that opens inline code (1 MiB on one line: the pairing is read once a round),
    // and one whose closing markup is a MiB of backticks that open nothing: each directive's markup is read once.
    const ticks = judge(`${"MEDIA:/tmp/nope.txt`x` ".repeat(45_000)}\n`, []);
    expect(ticks.notes).toHaveLength(45_000);
    expect(ticks.reply).toBe(`${"(nope.txt could not be sent: the file does not exist.)`x` ".repeat(45_000)}\n`);
    const run = judge(`MEDIA:/tmp/nope.txt${"`".repeat(1 << 20)}\n`, []);
    expect(run.notes).toHaveLength(1);
    expect(run.reply.startsWith("(nope.txt could not be sent: the file does not exist.)")).toBe(true);
  });

  it("a path through a file is that file's mangled line; a mention glued on inside a directive the gateway leaves stays after its sentence", () => {
    // The gateway reads the whole path, which names no file: the sentence names the file the model meant, never b.txt.
    const through = judge(`See MEDIA:${log}/tmp/b.txt here\n`, []);
    expect(through.reply).toBe("See (b.log could not be sent: the line naming it was not written exactly, on a line of its own.) here\n");
    // A path that names no file, with a mention glued on after a `-`: the gateway leaves the directive and sends plain.png from it.
    const glued = judge(`MEDIA:/x/nope.log-${plain}~\n`, []);
    expect(glued.reply).toBe(`(nope.log- could not be sent: the file does not exist.)${plain}~\n`);
    expect(delivered([`MEDIA:/x/nope.log-${plain}~\n`, glued.reply])).toEqual([[plain], [plain]]);
    // The `~` of a ~/ mention right after a directive's closing backtick is the mention's, not the directive's markup.
    const tildeAfter = `MEDIA:/x/nope.png\`${tilde(dropped)}\\\n`;
    const rt = judge(tildeAfter, []);
    expect(rt.reply).toBe(`(nope.png could not be sent: the file does not exist.)${tilde(dropped)}\\\n`);
    expect(delivered([tildeAfter, rt.reply])).toEqual([[dropped], [dropped]]);
  });

  it("past 32 files a reply, a mangled directive of a file a bare mention sends is removed, never named: the mentions are read once", () => {
    fs.mkdirSync(path.join(h.home, "many40"), { recursive: true });
    const files = Array.from({ length: 40 }, (_, i) => write(path.join(h.home, "many40"), `n${i}.txt`, `${i}\n`));
    const reply = `${files.map((p) => `See MEDIA:${p}. Also saved as ${p}.`).join("\n")}\n`;
    const r = judge(reply, []);
    expect(namedNotSent(r.reply)).toEqual([]);
    expect(r.removed).toHaveLength(40);
    const [after] = delivered([r.reply]);
    expect(after).toEqual(files);
    // A thousand mangled directives of the 40, each file mentioned on a line of its own: every one removed, none named.
    const big = Array.from({ length: 1000 }, (_, i) => `MEDIA:${files[i % 40]}.\n${files[i % 40]}`).join("\n");
    const rb = judge(big, []);
    expect(rb.notes).toEqual([]);
    expect(rb.removed).toHaveLength(1000);
  });

  it("a copy the gateway removes whole, and the punctuation tidied with it, are taken out without gluing the paths either side into one", () => {
    const cases: [string, string[], string][] = [
      // The gateway removes the whole directive (its path, read on to the last .txt, names no file) and sends plain.png;
      // the copy removed alone would leave plain.png's path running on into a.txt's: a space keeps them apart.
      [`${plain}MEDIA:${tilde(a)}${a}\n`, [a], `${plain} ${a}\n`],
      // The comma before the copy is a lead-in the tidying would take: it stays, or plain.png's path would run on into `.…`.
      [`${plain},MEDIA:${tilde(a)}.${plain} ${a} \n`, [a], `${plain},.${plain} ${a} \n`],
      // A sentence taken back (drop.txt goes by the mention after the `\\`) is taken out as a copy is: a space, not `./…`.
      [`.MEDIA:${dropped}${plain}\\${dropped}/\n`, [], `. ${dropped}/\n`],
      // A `~/` path after the copy (with the markup closed after it) starts a run too: `item~/…` would be no mention.
      [`- itemMEDIA:${a}*${tilde(a)}.\n`, [], `- item ${tilde(a)}.\n`],
      // Two copies with markup between are one removal only where the markup keeps no path apart (seeds 41, 47): as one,
      // `is:/f/plain.png` (a colon before it) and `b.log~/…` would be no mentions.
      [`Here it is: MEDIA:${a},MEDIA:${a}*${plain}.\n`, [a], `Here it is,${plain}.\nMEDIA:${a}\n`],
      [`${log}*MEDIA:${a} MEDIA:${tilde(a)}\`${tilde(dropped)}/\n`, [], `${log} ${tilde(dropped)}/\nMEDIA:${a}\n`],
      [`Saved as ${log} MEDIA:${a}, MEDIA:${a} ${tilde(dropped)}.\n`, [a], `Saved as ${log} ${tilde(dropped)}.\nMEDIA:${a}\n`],
    ];
    expectDelivered(cases);
  });

  it("a directive the gateway removes, glued on after a path it then reads on into the text after it, stays as written, and so does a directive it leaves glued on after that one", () => {
    fs.mkdirSync(path.join(h.home, "held"), { recursive: true });
    const m = write(path.join(h.home, "held"), "m25.txt", "25\n");
    // The gateway deletes m25.txt's directive (backtick and all) and reads plain.png from `…/a.txtMEDIA`; a sentence's `(`
    // would end the path at a.txt, which names no file (seed 46).
    const held = [`${plain}${a}MEDIA:${m}\`MEDIA:/tmp/nope.logx\n`, `${plain}${a}MEDIA:${m}\`MEDIA:${m}/\n`, `${plain}${a}MEDIA:${m}\`x\n`];
    expectDelivered([
      ...held.map((reply): [string, string[], string] => [reply, [], reply]),
      // The gateway deletes the held directive (and the quote before it), gluing a.txt's `~/` path onto what follows: no
      // mention, so its line is added.
      [`${tilde(a)}MEDIA:${log},MEDIA:${plain}\`MEDIA:${plain}*\n`, [a], `${tilde(a)}MEDIA:${log},MEDIA:${plain}\`MEDIA:${plain}*\nMEDIA:${a}\n`],
      [`${tilde(a)}\`MEDIA:${log} ${tilde(dropped)}\`${odd[0]}\\\n`, [a], `${tilde(a)}\`MEDIA:${log} ${tilde(dropped)}\`${odd[0]}\\\nMEDIA:${a}\n`],
    ]);
    // Where the gateway reads no path on into the text after it, the sentence is written, as before.
    expect(namedNotSent(judge(`${plain}${a}MEDIA:${m} MEDIA:/tmp/nope.logx\n`, []).reply)).toEqual(["m25.txt", "nope.logx"]);
    expect(namedNotSent(judge(`${plain}${a}MEDIA:${m}\`\n`, []).reply)).toEqual(["m25.txt"]);
  });

  it("a path read on past a space into a later directive is named up to that directive, which the gateway's any-type pattern reads on its own", () => {
    const mangled = "the line naming it was not written exactly, on a line of its own";
    const cases: [string, string][] = [
      // The known-extension pattern reads one path from b.log to drop.txt (no file); the any-type one sends b.log and notes.txt~.
      [`MEDIA:${log} and ${plain},MEDIA:${odd[0]} MEDIA:${tilde(dropped)}\n`, `(b.log could not be sent: ${mangled}.),(notes.txt~ could not be sent: ${mangled}.)\n`],
      [`MEDIA:/tmp/nope.log see MEDIA:${log} or ${plain}\n`, `(nope.log could not be sent: the file does not exist.) (b.log could not be sent: ${mangled}.)\n`],
    ];
    const outs = cases.map(([reply]) => judge(reply, []).reply);
    const got = delivered(cases.flatMap(([reply], i) => [reply, outs[i]!]));
    cases.forEach(([reply, want], i) => {
      const [before, after] = [got[2 * i]!, got[2 * i + 1]!];
      const where = `${reply} -> ${outs[i]}: ${JSON.stringify(before)} -> ${JSON.stringify(after)}`;
      expect(outs[i], where).toBe(want);
      // Each file the gateway sent before still goes, or a sentence names it (a mangled line): before, the sentence took them all.
      for (const p of before) if (!after.includes(p)) expect(namedNotSent(outs[i]!), where).toContain(path.basename(p));
      expect(judge(outs[i]!, []).reply).toBe(outs[i]);
    });
  });

  it("no sentence says a file was not sent that the text sends once the edits around it are made, and a chain the gateway reads as one path stays one", () => {
    fs.mkdirSync(path.join(h.home, "chain"), { recursive: true });
    const m = write(path.join(h.home, "chain"), "m37.txt", "37\n");
    const cases: [string, string[], string][] = [
      // The gateway reads one path (a.txt's copy, m37.txt, the MEDIA: after) and sends nothing; the copy removed, m37.txt is a
      // mention the next round's sentence would deny.
      [`MEDIA:${tilde(a)}${m}MEDIA:${m}\n`, [a], `${m}\nMEDIA:${a}\n`],
      // A sentence written over the backtick that closed inline code frees m37.txt's path, which the gateway then sends.
      [`\`${m}\`MEDIA:${m}\n`, [a], `\`${m}\nMEDIA:${a}\n`],
      // `//…/a.txt` is a.txt to the gateway's path filter, which the mention before it sends too.
      [`${a}MEDIA:/${a}\n`, [], `${a}\n`],
      // A sentence written for `~/…/drop.txt` that the mention after it sends: the same file, once expanded (taken back
      // with a space, or `:~/…` would follow the removed a.txt's copy… the space keeps the mention one).
      [`MEDIA:${tilde(a)}\`MEDIA:${tilde(dropped)}*${tilde(dropped)}./tmp/nope.log \n`, [], ` ${tilde(dropped)}./tmp/nope.log \nMEDIA:${a}\n`],
      // The gateway's any-type pattern reads the whole word as one path (no file: left as text), the b.log directive in it
      // too, and sends drop.txt from it; a sentence for nope.log would free the MEDIA: after and end drop.txt's path at a.txt.
      [`MEDIA:/tmp/nope.log,${tilde(dropped)}${a}MEDIA:${log}\n`, [a], `MEDIA:/tmp/nope.log,${tilde(dropped)}${a}MEDIA:${log}\nMEDIA:${a}\n`],
      // A path that names no file, named plain.png, then a backtick that opens inline code: the gateway leaves that code in
      // place, and sends nothing from it; the sentence ends before it (taking it would free plain.png's path to be sent).
      [`x-MEDIA:${m}.${plain}\`${plain}\`\n`, [a], `x-(plain.png could not be sent: the file does not exist.)\`${plain}\`\nMEDIA:${a}\n`],
      // A path that names no file, named drop.txt, where an exact line sends drop.txt: no sentence.
      [`(seeMEDIA:${odd[0]}q${dropped} MEDIA:/f/none.png-\nMEDIA:${dropped}\n`, [], `(see (none.png- could not be sent: the file does not exist.)\nMEDIA:${dropped}\n`],
      // A path run on through drop.txt (a mangled line of it), where an exact line before it sends drop.txt: no sentence (seed 56).
      [`MEDIA:${dropped}\nMEDIA:${dropped}${dropped}-\n`, [], `MEDIA:${dropped}\n`],
      [`MEDIA:${dropped}\nMEDIA:${dropped}${dropped}-\n`, [a], `MEDIA:${dropped}\nMEDIA:${a}\n`],
      // The backtick after a missing file's path opens inline code, which the gateway leaves in place: the sentence ends
      // before it, or a.txt's path would be freed to be a mention, and sent again beside its exact line (seed 65).
      [`MEDIA:/tmp/nope.txt\`${a}\`\nMEDIA:${a}\n`, [a], `(nope.txt could not be sent: the file does not exist.)\`${a}\`\nMEDIA:${a}\n`],
      [`MEDIA:/tmp/nope.txt\`${a}\`\nMEDIA:${a}\n`, [], `(nope.txt could not be sent: the file does not exist.)\`${a}\`\nMEDIA:${a}\n`],
      [`MEDIA:/tmp/nope.txt\`${a}\`\n`, [], `(nope.txt could not be sent: the file does not exist.)\`${a}\`\n`],
    ];
    expectDelivered(cases, { named: true });
  });

  // Seeds 35, 37 and 38 found copies removed (or sentences taken back) gluing two paths, and chains read as one path judged
  // in two rounds (the two tests above). Seed 36's reply has an exact line and a bare mention of a.txt: sent twice (README).
  // Seeds 41 and 47 found two copies with markup between removed as one, gluing the text either side; seeds 46 and 58
  // sentences ending a path the gateway reads on into the text after a directive it removes; seed 56 a sentence for a
  // file an exact line sends; seed 59 a sentence that took a later directive the gateway sends on its own; seed 65 a
  // sentence that took the backtick opening inline code after it (the tests above). The seeds still open are in the README.
  it.each([32, 33, 34, 35, 37, 38, 41, 46, 47, 56, 58, 59, 65])("randomized (seed %i): bare mentions glued to a directive or to another path, `-` and `\\` run-ons, replies of many files: nothing dropped, doubled or falsely named", (seed) => {
    const rnd = rng(seed);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
    fs.mkdirSync(path.join(h.home, "many"), { recursive: true });
    const many = Array.from({ length: 40 }, (_, i) => write(path.join(h.home, "many"), `m${i}.txt`, `${i}\n`));
    const paths = () => [a, tilde(a), dropped, tilde(dropped), plain, log, odd[0]!, "/tmp/nope.log", "/f/none.png", pick(many), pick(many)];
    // What joins a directive or a path to the next one: nothing, a `-`, a backslash, a space, markup.
    const glue = ["", "", "-", "\\", "/", " ", ",", ".", "x-", "q", "`", "*", ")"];
    const cases: { input: string; out: string; published: string[] }[] = [];
    for (let i = 0; i < 500; i++) {
      const published = rnd() < 0.6 ? [a] : [];
      const lines: string[] = [];
      for (let k = 1 + Math.floor(rnd() * 3); k > 0; k--) {
        let line = rnd() < 0.3 ? pick(["Here it is:", "- item", "Saved as", "(see", "x-"]) + (rnd() < 0.5 ? " " : "") : "";
        for (let n = 1 + Math.floor(rnd() * 4); n > 0; n--) {
          line += rnd() < 0.5 ? `MEDIA:${pick(paths())}` : pick(paths());
          line += pick(glue);
        }
        lines.push(line);
      }
      // Past 32 files a reply: each of many files named by a mangled directive and by a bare mention.
      if (rnd() < 0.1) lines.push(...many.map((p) => `MEDIA:${p}, also ${p}`));
      const input = `${lines.join("\n")}\n`;
      cases.push({ input, out: judge(input, published).reply, published });
    }
    const got = delivered(cases.flatMap((c) => [c.input, c.out]));
    const count = (xs: string[], p: string) => xs.filter((x) => x === p).length;
    cases.forEach((c, i) => {
      const before = got[2 * i]!;
      const after = got[2 * i + 1]!;
      const where = `${JSON.stringify(c.input)} -> ${JSON.stringify(c.out)}: ${JSON.stringify(before)} -> ${JSON.stringify(after)}`;
      const named = namedNotSent(c.out);
      // No sentence names a file the result sends.
      for (const n of named) expect(after.map((p) => path.basename(p)), where).not.toContain(n);
      for (const p of c.published) expect(count(after, p), where).toBe(1);
      for (const p of new Set([...before, ...after])) {
        // Nothing sent more often than before (once, at most, if it was not).
        expect(count(after, p), where).toBeLessThanOrEqual(Math.max(1, count(before, p)));
        // Nothing sent before is dropped without a sentence naming it.
        if (before.includes(p) && !after.includes(p)) expect(named, where).toContain(path.basename(p));
      }
    });
    for (const c of cases) expect(judge(c.out, c.published).reply, c.out).toBe(c.out);
  });

  it("randomized (seeded): no sentence names a file the gateway delivers, every published file goes once, every exact line Hermes delivers stays", () => {
    const rnd = rng(31);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
    const paths = () => [a, tilde(a), dropped, tilde(dropped), ...odd, plain, log, "/tmp/nope.log", "/f/none.png", `${odd[0]}`];
    const glue = ["", ",", " ", ")", ".", "~", " and I saved it as ", ", text see ", "`", "*", "> "];
    const prose = ["Here it is.", "", "- item", "Saved as", "x = `code`", "(see", "**done**"];
    const cases: { input: string; out: string; published: string[] }[] = [];
    for (let i = 0; i < 600; i++) {
      const published = rnd() < 0.6 ? [a] : [];
      const lines: string[] = [];
      for (let k = 1 + Math.floor(rnd() * 3); k > 0; k--) {
        let line = rnd() < 0.3 ? pick(prose) + " " : "";
        for (let n = 1 + Math.floor(rnd() * 3); n > 0; n--) {
          const p = pick(paths());
          // A bare mention after a space (two paths glued with nothing between are one path, whose name may be another file's).
          line += rnd() < 0.8 ? `MEDIA:${rnd() < 0.15 ? " " : ""}${p}` : ` ${p}`;
          line += pick(glue);
        }
        lines.push(line);
      }
      const input = `${lines.join("\n")}\n`;
      cases.push({ input, out: judge(input, published).reply, published });
    }
    const got = delivered(cases.flatMap((c) => [c.input, c.out]));
    const names = (ps: string[]) => new Set(ps.map((p) => path.basename(p)));
    cases.forEach((c, i) => {
      const before = got[2 * i]!;
      const after = got[2 * i + 1]!;
      const where = `${JSON.stringify(c.input)} -> ${JSON.stringify(c.out)}: ${JSON.stringify(after)}`;
      const sent = names(after);
      for (const n of namedNotSent(c.out)) expect(sent.has(n), where).toBe(false);
      for (const p of c.published) expect(after.filter((x) => x === p).length, where).toBe(1);
      // An exact line of its own that Hermes delivers is kept.
      for (const line of c.input.split("\n")) {
        const p = line.startsWith("MEDIA:/") ? line.slice(6) : undefined;
        if (p !== undefined && before.includes(p) && odd.includes(p)) expect(after, where).toContain(p);
      }
    });
    // Judging again changes nothing.
    for (const c of cases) expect(judge(c.out, c.published).reply, c.out).toBe(c.out);
  });
});
