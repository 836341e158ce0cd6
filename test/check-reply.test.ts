// check-reply: the judge of a final reply. The published files are real files
// prepared by the real CLI; the gateway's environment is the one the drop-in
// sets (the outbox allowed, strict mode, no trust in recent files).
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkReply } from "../src/reply/check-reply.js";
import { SourceDenylist } from "../src/safety/denylist.js";
import { deliveryPolicy, extractMediaPaths } from "../src/safety/gateway.js";
import { cli, makeHome, png, prepared, write } from "./helpers.js";

let h: ReturnType<typeof makeHome>;
let env: NodeJS.ProcessEnv;
let chart: string;
let notes: string;
let older: string;
let elsewhere: string;

beforeAll(() => {
  h = makeHome();
  chart = prepared(h, "chart.png", png(1));
  notes = prepared(h, "notes.txt", "meeting notes\n");
  older = prepared(h, "older.png", png(2));
  elsewhere = write(h.home, "elsewhere.png", png(3));
  env = { ...h.env, HERMES_MEDIA_ALLOW_DIRS: h.outbox, HERMES_MEDIA_DELIVERY_STRICT: "1", HERMES_MEDIA_TRUST_RECENT_FILES: "0" };
});
afterAll(() => h.cleanup());

/** The library with the drop-in's environment (or `extra` over it). */
function judge(reply: string, published: string[], extra: NodeJS.ProcessEnv = {}) {
  const e = { ...env, ...extra };
  const denylist = new SourceDenylist({ home: h.home, hermesHome: path.join(h.home, ".hermes") });
  return checkReply(reply, { published, outbox: h.outbox, policy: deliveryPolicy(e, h.home, path.join(h.home, ".hermes"), (p) => denylist.reason(p)) });
}

function run(reply: string | Buffer, published: string[], extra: NodeJS.ProcessEnv = {}, ...flags: string[]) {
  return cli(["check-reply", ...flags, ...published.flatMap((p) => ["--media", p])], { env: { ...env, ...extra }, input: reply });
}

/** Lines of `text` that are exactly `MEDIA:<p>`. */
const bareLines = (text: string, p: string) => text.split(/\r?\n/).filter((l) => l === `MEDIA:${p}`).length;

describe("check-reply leaves a good reply alone, byte for byte", () => {
  const untouched = () => [
    "Plain text, no files.",
    "",
    "Trailing newline only\n",
    `Here is the chart:\nMEDIA:${chart}\n`,
    `Here is the chart:\r\nMEDIA:${chart}\r\nBye\r\n`,
    `\ufeff图表如下：\nMEDIA:${chart}\n谢谢！`,
    `Two files\n\nMEDIA:${chart}\nMEDIA:${notes}`,
    `Mentions of media: in prose, MEDIA: without a path, and media:later.\n`,
    `An earlier file, repeated exactly:\nMEDIA:${older}\n`,
  ];

  it("through the CLI: stdout is the input, exactly", () => {
    for (const reply of untouched()) {
      const published = reply.includes(chart) ? [chart] : [];
      const r = run(reply, published);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toBe(reply);
      expect(r.stderr).toBe("");
    }
  });

  it("--json says nothing changed and lists what it kept", () => {
    const r = run(`Here:\nMEDIA:${chart}\n`, [chart], {}, "--json");
    const report = JSON.parse(r.stdout);
    expect(report).toMatchObject({ changed: false, added: [], removed: [], notes: [], kept: [chart], ignored: [] });
    expect(report.reply).toBe(`Here:\nMEDIA:${chart}\n`);
  });

  it("a reply that is not valid UTF-8, or an argument, is a usage error (exit 2)", () => {
    let r = run(Buffer.from([0x68, 0xff, 0x0a]), [chart]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("not valid UTF-8");
    r = cli(["check-reply", "reply.txt"], { env, input: "x" });
    expect(r.code).toBe(2);
  });
});

describe("rule 1: every published file's exact line, once, at the end", () => {
  it("adds a missing line on a line of its own", () => {
    expect(run("Done, the chart is attached.", [chart]).stdout).toBe(`Done, the chart is attached.\nMEDIA:${chart}`);
    expect(run("Done.\n", [chart]).stdout).toBe(`Done.\nMEDIA:${chart}\n`);
    expect(run("", [chart]).stdout).toBe(`MEDIA:${chart}`);
    expect(run("Done.\r\n", [chart]).stdout).toBe(`Done.\r\nMEDIA:${chart}\r\n`);
  });

  // Each mangling as the model writes it, and what is left of the reply around it.
  const manglings = (p: string): [string, string, string][] => [
    ["backticks", `Here it is: \`MEDIA:${p}\`\nThanks`, "Here it is:\nThanks"],
    ["backticked path", `Here it is: MEDIA:\`${p}\`\nThanks`, "Here it is:\nThanks"],
    ["bold", `**MEDIA:${p}**\nThanks`, "Thanks"],
    ["emphasis", `*MEDIA:${p}*\nThanks`, "Thanks"],
    ["underscores", `_MEDIA:${p}_\nThanks`, "Thanks"],
    ["double quotes", `"MEDIA:${p}"\nThanks`, "Thanks"],
    ["single quotes", `'MEDIA:${p}'\nThanks`, "Thanks"],
    ["curly quotes", `\u201cMEDIA:${p}\u201d\nThanks`, "Thanks"],
    ["full stop", `See MEDIA:${p}.\nThanks`, "See.\nThanks"],
    ["exclamation", `MEDIA:${p}!\nThanks`, "Thanks"],
    ["question", `Like it? MEDIA:${p}?\nThanks`, "Like it?\nThanks"],
    ["CJK full stop and text", `图表如下：MEDIA:${p}。谢谢\n好的`, "图表如下。谢谢\n好的"],
    ["CJK text glued on", `图表MEDIA:${p}谢谢\n好的`, "图表谢谢\n好的"],
    ["blockquote", `> MEDIA:${p}\nThanks`, "Thanks"],
    ["list item", `- MEDIA:${p}\n1. MEDIA:${p}\nThanks`, "Thanks"],
    ["space after the colon", `MEDIA: ${p}\nThanks`, "Thanks"],
    ["ideographic space after the colon", `\u56fe\u8868MEDIA:\u3000${p}\nThanks`, "\u56fe\u8868\nThanks"],
    ["line break after the colon", `Here:\nMEDIA:\n${p}\nThanks`, "Here:\nThanks"],
    ["blank lines after the colon, in a sentence", `The chart MEDIA:\r\n\r\n${p} shows growth.`, "The chart shows growth."],
    ["lower case", `media:${p}\nThanks`, "Thanks"],
    ["indented", `   MEDIA:${p}\nThanks`, "Thanks"],
    ["trailing spaces", `MEDIA:${p}   \nThanks`, "Thanks"],
    ["in a sentence", `The chart MEDIA:${p} shows growth.`, "The chart shows growth."],
    ["cut by the newer extraction", `MEDIA:${p}_final\nThanks`, "final\nThanks"],
    ["closing bracket", `(MEDIA:${p})\nThanks`, "Thanks"],
    ["two copies glued together", `Here: MEDIA:${p},MEDIA:${p}'\nThanks`, "Here:\nThanks"],
    ["two copies glued with nothing between", `Here: MEDIA:${p}MEDIA:${p}.\nThanks`, "Here.\nThanks"],
    ["a prefix left dangling before the copy", `Here: media:"\`MEDIA:${p}\`${p}'\nThanks`, "Here:\nThanks"],
    ["in a JSON string", `{"file": "MEDIA:${p}"}\nThanks`, `{"file": }\nThanks`],
    // The copy's line goes, the fences stay: the reply's code blocks open and close where they did.
    ["fenced block", `Here:\n\`\`\`\nMEDIA:${p}\n\`\`\`\nThanks`, "Here:\n```\n```\nThanks"],
    ["fenced with a language", `Here:\n\`\`\`text\nMEDIA:${p}\n\`\`\`\nThanks`, "Here:\n```text\n```\nThanks"],
    // What was around a copy inside a sentence stays well formed: no lead-in before punctuation, no doubled punctuation, no empty brackets.
    ["after a colon, at the sentence's end", `Here it is: MEDIA:${p}.\nThanks`, "Here it is.\nThanks"],
    ["after a colon, in backticks, more after", `Here it is: \`MEDIA:${p}\`. Enjoy!\nThanks`, "Here it is. Enjoy!\nThanks"],
    ["after a colon, a space before the full stop", `Here it is: MEDIA:${p} .`, "Here it is."],
    ["after a colon, in brackets", `Here it is: (MEDIA:${p}).`, "Here it is."],
    ["after a dash", `Here it is \u2014 MEDIA:${p}.`, "Here it is."],
    ["after a sentence that had ended", `Done. MEDIA:${p}. Next one tomorrow.`, "Done. Next one tomorrow."],
    ["a comma left at the end of the line", `Here is the chart, MEDIA:${p}\nThanks`, "Here is the chart\nThanks"],
    ["starting the line, punctuation after", `MEDIA:${p}. Thanks!`, "Thanks!"],
    ["in brackets inside a sentence", `See (MEDIA:${p}) for the numbers.`, "See for the numbers."],
    ["two copies in a sentence", `Here are both: MEDIA:${p}, MEDIA:${p}.`, "Here are both."],
    ["in a list item, after its text", `- Chart: MEDIA:${p}.\n- Notes`, "- Chart.\n- Notes"],
    ["starting a list item with text after", `- MEDIA:${p}, as asked\n- Notes`, "- as asked\n- Notes"],
    ["in a numbered list item, in backticks", `1. The chart: \`MEDIA:${p}\`;\n2. The notes`, "1. The chart;\n2. The notes"],
    ["alone on a line with a full stop", `Here it is:\nMEDIA:${p}.\nBye`, "Here it is:\nBye"],
    ["alone on a line, indented, trailing spaces", `Here it is:\n  MEDIA:${p}   \nBye`, "Here it is:\nBye"],
    ["trailing spaces after the sentence (kept, as every byte the repair does not need)", `Here it is: MEDIA:${p}.   \nBye`, "Here it is.   \nBye"],
  ];

  it.each(manglings("PATH").map(([name]) => name))("removes the mangled copy and adds the exact line: %s", (name) => {
    const [, input, left] = manglings(chart).find(([n]) => n === name)!;
    const r = judge(input, [chart]);
    // A CRLF reply left on one line still gets its kind of line break.
    expect(r.reply).toBe(`${left}${input.includes("\r\n") && !left.includes("\n") ? "\r\n" : "\n"}MEDIA:${chart}`);
    expect(r.changed).toBe(true);
    expect(r.added).toEqual([chart]);
    expect(r.removed.length).toBeGreaterThan(0);
    // What the gateway model extracts: exactly the published file, whole, on both versions.
    for (const variant of ["classic", "newer"] as const) expect(extractMediaPaths(r.reply, variant)).toEqual([chart]);
    // Judging the result again changes nothing.
    expect(judge(r.reply, [chart]).changed).toBe(false);
  });

  it("the CLI does the same (backticks, CJK, fence)", () => {
    for (const name of ["backticks", "CJK full stop and text", "fenced block"]) {
      const [, input, left] = manglings(chart).find(([n]) => n === name)!;
      const r = run(input, [chart]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toBe(`${left}\nMEDIA:${chart}`);
    }
  });

  it("CRLF replies: the same tidying, the line breaks kept as they were", () => {
    expect(run(`Here it is: MEDIA:${chart}.\r\nBye\r\n`, [chart]).stdout).toBe(`Here it is.\r\nBye\r\nMEDIA:${chart}\r\n`);
    expect(run(`- Chart: \`MEDIA:${chart}\`.\r\n- Notes\r\n`, [chart]).stdout).toBe(`- Chart.\r\n- Notes\r\nMEDIA:${chart}\r\n`);
    expect(run(`Here it is:\r\nMEDIA:${chart} \r\nBye`, [chart]).stdout).toBe(`Here it is:\r\nBye\r\nMEDIA:${chart}`);
    expect(run(`Here it is: MEDIA:\r\n${chart}.\r\nBye`, [chart]).stdout).toBe(`Here it is.\r\nBye\r\nMEDIA:${chart}`);
  });

  it("keeps an exact line where it is and removes only the mangled copies", () => {
    const reply = `Intro \`MEDIA:${chart}\`\nMEDIA:${chart}\nOutro **MEDIA:${chart}**\n`;
    const r = judge(reply, [chart]);
    expect(r.reply).toBe(`Intro\nMEDIA:${chart}\nOutro\n`);
    expect(r.added).toEqual([]);
    expect(bareLines(r.reply, chart)).toBe(1);
  });

  it("multi-file, multi-line: only what is missing is added, in publication order", () => {
    const reply = `# Report\n\nThe numbers are in.\n\nMEDIA:${notes}\n\nSee the chart \`MEDIA:${chart}\` and the appendix.\n\n-- \nBot\n`;
    const r = run(reply, [chart, notes, older], {}, "--json");
    const report = JSON.parse(r.stdout);
    expect(report.reply).toBe(`# Report\n\nThe numbers are in.\n\nMEDIA:${notes}\n\nSee the chart and the appendix.\n\n-- \nBot\nMEDIA:${chart}\nMEDIA:${older}\n`);
    expect(report.added).toEqual([chart, older]);
    expect(report.kept).toEqual([notes]);
    for (const p of [chart, notes, older]) expect(bareLines(report.reply, p)).toBe(1);
  });

  it("a published file named twice in --media is added once", () => {
    expect(run("ok", [chart, chart]).stdout).toBe(`ok\nMEDIA:${chart}`);
  });

  it("an outbox file from an earlier turn that the reply mangles is fixed like a published one", () => {
    expect(judge(`Again: \`MEDIA:${older}\``, []).reply).toBe(`Again:\nMEDIA:${older}`);
    // Written from the home (`~/`), as 0.19.0 expands it and older gateways' extraction does not: the exact line takes its place.
    const tilde = `~/${path.relative(h.home, older)}`;
    for (const published of [[], [older]]) {
      const r = judge(`Again:\nMEDIA:${tilde}\n`, published);
      expect(r.reply).toBe(`Again:\nMEDIA:${older}\n`);
      expect(r.notes).toEqual([]);
    }
  });

  it("closes a fence left open at the end before adding the line", () => {
    expect(judge("Code:\n```\nx = 1\n", [chart]).reply).toBe(`Code:\n\`\`\`\nx = 1\n\`\`\`\nMEDIA:${chart}\n`);
    // With the opening fence's own character and length.
    expect(judge("Code:\n~~~~\nx = 1\n", [chart]).reply).toBe(`Code:\n~~~~\nx = 1\n~~~~\nMEDIA:${chart}\n`);
  });

  it("adds no fence where none is open: triple backticks inside a line, or a block closed by a longer fence", () => {
    for (const reply of ["Use ```code``` or ``` here.\n", "````\nx\n`````\n", "```a``` b\n"]) expect(judge(reply, [chart]).reply).toBe(`${reply}MEDIA:${chart}\n`);
  });

  it("a published file the gateway would not deliver gets a sentence instead of a line", () => {
    // The gateway's environment lacks the outbox: in strict mode it drops every outbox file.
    const r = judge(`Here:\nMEDIA:${chart}\nand more`, [chart, notes], { HERMES_MEDIA_ALLOW_DIRS: "/srv/elsewhere" });
    expect(r.reply).toBe("Here:\n(chart.png could not be sent: it is outside the folders the gateway may send from.)\nand more\n(notes.txt could not be sent: it is outside the folders the gateway may send from.)");
    expect(extractMediaPaths(r.reply)).toEqual([]);
  });

  it("takes only files in the outbox for published: a forged path to a file elsewhere in the gateway's allowed roots is never added", () => {
    // The plugin records MEDIA: lines from a terminal's output, which anything may print.
    const shared = path.join(h.home, "shared");
    const screenshots = path.join(h.home, ".hermes", "cache", "screenshots");
    for (const dir of [shared, screenshots]) fs.mkdirSync(dir, { recursive: true });
    const report = write(shared, "report.pdf", "%PDF-1.4\n");
    const shot = write(screenshots, "other-chat.png", png(4));
    const r = run("ok", [report, shot], { HERMES_MEDIA_ALLOW_DIRS: `${h.outbox}:${shared}` }, "--json");
    const result = JSON.parse(r.stdout);
    expect(result).toMatchObject({ reply: "ok", changed: false, added: [] });
    expect(result.ignored).toEqual([
      { path: report, reason: "not a regular file directly in the outbox" },
      { path: shot, reason: "not a regular file directly in the outbox" },
    ]);
  });

  it("ignores a --media path that is a link in the outbox, a file in its state directory, or deleted since", () => {
    const link = path.join(h.outbox, "link.png");
    fs.symlinkSync(elsewhere, link);
    const stateDir = path.join(path.dirname(h.outbox), `.${path.basename(h.outbox)}-state`);
    const ledgerDay = fs.readdirSync(path.join(stateDir, "ledger")).map((f) => path.join(stateDir, "ledger", f))[0]!;
    const gone = prepared(h, "gone.png", png(5));
    fs.rmSync(gone);
    try {
      const r = run(`Here:\nMEDIA:${link}\n`, [link, ledgerDay, gone], {}, "--json");
      const report = JSON.parse(r.stdout);
      expect(report.ignored.map((i: { path: string }) => i.path)).toEqual([link, ledgerDay, gone]);
      expect(report.added).toEqual([]);
      // The link named in the reply is judged as any other path (strict mode: outside the roots once resolved).
      expect(report.reply).toBe("Here:\n(link.png could not be sent: it is outside the folders the gateway may send from.)\n");
    } finally {
      fs.rmSync(link);
    }
  });

  it("ignores --media paths that are not published files, and never adds their lines", () => {
    const r = run("ok", [elsewhere, "/etc/passwd", `${chart}\nMEDIA:/etc/passwd`, "relative.png", path.join(h.outbox, "missing.png")], {}, "--json");
    const report = JSON.parse(r.stdout);
    expect(report.reply).toBe("ok");
    expect(report.changed).toBe(false);
    expect(report.ignored.map((i: { path: string }) => i.path)).toEqual([elsewhere, "/etc/passwd", `${chart}\\x0aMEDIA\\x3a/etc/passwd`, "relative.png", path.join(h.outbox, "missing.png")]);
  });
});

describe("rule 2: every other directive the gateway would not deliver becomes a visible sentence", () => {
  it("names the file and why, in place, and changes nothing else", () => {
    fs.mkdirSync(path.join(h.home, "adir.png"), { recursive: true });
    const reply = [
      "Results:",
      "MEDIA:/nonexistent/report.pdf",
      "Secrets: MEDIA:/etc/passwd.txt",
      `Dir: MEDIA:${path.join(h.home, "adir.png")}`,
      `Outside: MEDIA:${elsewhere}`,
      "Script: MEDIA:/nonexistent/run.sh",
      "End.",
    ].join("\n");
    const r = run(reply, [], {}, "--json");
    const report = JSON.parse(r.stdout);
    expect(report.reply).toBe(
      [
        "Results:",
        "(report.pdf could not be sent: the file does not exist.)",
        "Secrets: (passwd.txt could not be sent: the file does not exist.)",
        "Dir: (adir.png could not be sent: it is not a regular file.)",
        "Outside: (elsewhere.png could not be sent: it is outside the folders the gateway may send from.)",
        "Script: (run.sh could not be sent: the file does not exist.)",
        "End.",
      ].join("\n"),
    );
    expect(report.notes.map((n: { code: string }) => n.code)).toEqual(["not_found", "not_found", "not_regular_file", "not_allowed", "not_found"]);
  });

  it("a file on the credential denylist is named as protected", () => {
    fs.mkdirSync(path.join(h.home, ".ssh"), { recursive: true });
    const ssh = write(path.join(h.home, ".ssh"), "id.txt", "key");
    const r = judge(`MEDIA:${ssh}\n`, [], { HERMES_MEDIA_DELIVERY_STRICT: "0" });
    expect(r.reply).toBe("(id.txt could not be sent: it is in a protected location.)\n");
  });

  it("outside strict mode a bare line for an existing file is delivered, so it stays; a mangled one is named", () => {
    const plain = `Here:\nMEDIA:${elsewhere}\n`;
    expect(judge(plain, [], { HERMES_MEDIA_DELIVERY_STRICT: "0" }).reply).toBe(plain);
    expect(judge(`Here: \`MEDIA:${elsewhere}\`\n`, [], { HERMES_MEDIA_DELIVERY_STRICT: "0" }).reply).toBe(
      "Here: (elsewhere.png could not be sent: the line naming it was not written exactly, on a line of its own.)\n",
    );
  });

  it("reads ~/ as the gateway's home", () => {
    const loose = { HERMES_MEDIA_DELIVERY_STRICT: "0" };
    expect(judge("MEDIA:~/nothing.png", [], loose).notes[0]!.code).toBe("not_found");
    // It exists, but only an absolute path survives every gateway's extraction.
    expect(judge("MEDIA:~/elsewhere.png", [], loose).notes[0]!.code).toBe("mangled");
  });

  it("a recently modified file is delivered in strict mode unless that trust is off", () => {
    const plain = `MEDIA:${elsewhere}`;
    expect(judge(plain, [], { HERMES_MEDIA_TRUST_RECENT_FILES: "1" }).changed).toBe(false);
    expect(judge(plain, [], { HERMES_MEDIA_TRUST_RECENT_FILES: "1", HERMES_MEDIA_TRUST_RECENT_SECONDS: "0" }).changed).toBe(true);
    expect(judge(plain, []).changed).toBe(true);
  });

  it("never echoes a forged directive or a raw control character from a file name", () => {
    const reply = [
      "MEDIA:/tmp/aMEDIA:/etc/passwd.png",
      "MEDIA:/tmp/x\u202egnp.exe.png",
      "MEDIA:/tmp/media:~/.ssh/id_rsa.png",
      "MEDIA:/tmp/b\\MEDIA:C:\\evil.png",
    ].join("\n");
    const r = run(reply, []);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.split("\n");
    expect(lines).toHaveLength(4);
    for (const line of lines) expect(line).toMatch(/^\(.* could not be sent: the file does not exist\.\)$/);
    expect(r.stdout).not.toMatch(/media:/i);
    expect(r.stdout).not.toContain("\u202e");
    expect(r.stdout).toContain("\\u{202e}");
    expect(extractMediaPaths(r.stdout, "classic")).toEqual([]);
    expect(extractMediaPaths(r.stdout, "newer")).toEqual([]);
    // The result judged again is stable.
    expect(run(r.stdout, []).stdout).toBe(r.stdout);
  });

  it("takes MEDIA: followed by any whitespace, line breaks included, for a directive, as the gateway's MEDIA:\\s* does", () => {
    expect(judge("Here: MEDIA:\u3000/nonexistent/x.png\nBye", []).reply).toBe("Here: (x.png could not be sent: the file does not exist.)\nBye");
    expect(judge("See MEDIA:\r\n/nonexistent/y.pdf\r\nBye\r\n", []).reply).toBe("See (y.pdf could not be sent: the file does not exist.)\r\nBye\r\n");
    // Prose that only ends a line with MEDIA: is left alone.
    const prose = "Lines start with MEDIA:\nthen a path.\n";
    expect(judge(prose, []).reply).toBe(prose);
  });

  it("a quoted path is one directive whatever it holds, as the gateway's quoted form takes it whole", () => {
    // Relative: the gateway takes it, then drops it without a word.
    expect(judge("Here is MEDIA:`chart.png` for you.", []).reply).toBe("Here is (chart.png could not be sent: its path is not absolute.) for you.");
    expect(judge('MEDIA:"/nonexistent/my report.pdf"\n', []).reply).toBe("(my report.pdf could not be sent: the file does not exist.)\n");
    // Not the quoted form (nothing inside, or text glued after the closing quote): prose stays.
    for (const prose of ["The MEDIA:'s format isn't hard.", 'MEDIA:"" is empty.']) expect(judge(prose, []).reply).toBe(prose);
  });

  it("a removal that joins the text around it into a new directive: that one is judged too", () => {
    // Removing the published copy leaves `media:` followed by a path: named, never left live.
    const r = judge(`Look: media:\`MEDIA:${chart}\`/nonexistent/secret.txt\nBye`, [chart]);
    expect(r.reply).toBe(`Look: (secret.txt could not be sent: the file does not exist.)\nBye\nMEDIA:${chart}`);
    expect(judge(r.reply, [chart]).changed).toBe(false);
  });

  it("takes MED\u0130A: and MED\u0131A: for directives, as the gateway's case-insensitive Python pattern does", () => {
    // An undeliverable one is named (the gateway would drop it silently); a published file's copy is repaired.
    expect(judge("Here: MED\u0130A:/nonexistent/x.png\nBye", []).reply).toBe("Here: (x.png could not be sent: the file does not exist.)\nBye");
    const r = judge(`med\u0131a:${chart}\nBye`, [chart]);
    expect(r.reply).toBe(`Bye\nMEDIA:${chart}`);
    expect(r.removed).toHaveLength(1);
    // A note never carries one: the name is escaped.
    const forged = run("MEDIA:/tmp/aMED\u0130A:evil.png\n", []);
    expect(forged.stdout).toBe("(aMED\u0130A\\x3aevil.png could not be sent: the file does not exist.)\n");
    // A glued directive's path is not the name: the sentence names what comes before it.
    expect(run("MEDIA:/tmp/aMED\u0130A:C:\\evil.png\n", []).stdout).toBe("(a could not be sent: the file does not exist.)\n");
  });

  it("stays linear on adversarial input (the behaviour holds on a huge reply)", () => {
    const noise = "media:".repeat(50_000) + "MEDIA: ".repeat(50_000) + `MEDIA:/${"a".repeat(200_000)}` + "```\n".repeat(20_001) + ` \`MEDIA:${chart}\``;
    const r = run(noise, [chart]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.endsWith(`\nMEDIA:${chart}`)).toBe(true);
    expect(r.stdout.startsWith("media:".repeat(50_000) + "MEDIA: ".repeat(50_000))).toBe(true);
    expect(r.stdout).toContain("could not be sent: the file does not exist.)");
    // Many directives on one long line: each is judged once, the line found without scanning back.
    // Quoted forms, line breaks after the colon, layers of prefixes a removal leaves dangling: every scan moves forward.
    const layered = `${"media:`".repeat(20_000)}MEDIA:${chart}${"`/x".repeat(20_000)}\n${"MEDIA:\"MEDIA:'MEDIA:`".repeat(20_000)}${`MEDIA:${"\n".repeat(10)}`.repeat(10_000)}`;
    const judged = judge(layered, [chart]);
    expect(judged.reply.endsWith(`\nMEDIA:${chart}\n`)).toBe(true);
    expect(bareLines(judged.reply, chart)).toBe(1);
    expect(judged.notes).toHaveLength(1);
    expect(judge(judged.reply, [chart]).changed).toBe(false);
    // Quoted, each is a directive of its own; bare, the gateway reads the line as one path, to its last extension.
    const line = 'MEDIA:"/nope/a.png" '.repeat(60_000);
    const many = run(line, []);
    expect(many.code, many.stderr).toBe(0);
    expect(many.stdout).toBe("(a.png could not be sent: the file does not exist.) ".repeat(60_000));
    const one = run("MEDIA:/nope/a.png ".repeat(60_000), []);
    expect(one.stdout).toBe("(a.png could not be sent: the file does not exist.) ");
    // A line read once for all its directives: each spaced path here stops before the next backtick (inline code, not modelled).
    const ticked = run("MEDIA:/nope/a b.png `c` ".repeat(30_000), []);
    expect(ticked.stdout).toBe("(a b.png could not be sent: the file does not exist.) `c` ".repeat(30_000));
  });

  it("tidies around removed copies in linear time: thousands on a line, between words, in nested brackets, after runs of spaces", () => {
    const copies = 20_000;
    const cases: [string, string][] = [
      // Separated by punctuation alone: one removal, the lead-in then goes before the full stop.
      [`Here: ${Array.from({ length: copies }, () => `\`MEDIA:${chart}\``).join(", ")}.`, "Here."],
      // Between words: each copy goes with the space before it.
      [`Start ${`MEDIA:${chart}. word `.repeat(copies)}end`, `Start${". word".repeat(copies)} end`],
      [`See ${"(".repeat(copies)}MEDIA:${chart}${")".repeat(copies)} now.`, "See now."],
      // Runs of spaces around each copy (each run is looked at from its two ends only): the spaces stay, as they were.
      [`a: ${`${" ".repeat(50)}MEDIA:${chart}${" ".repeat(50)}x`.repeat(2_000)}.`, `a: ${`${" ".repeat(49)}${" ".repeat(50)}x`.repeat(2_000)}.`],
    ];
    for (const [input, left] of cases) {
      const r = judge(input, [chart]);
      expect(r.reply).toBe(`${left}\nMEDIA:${chart}`);
      expect(bareLines(r.reply, chart)).toBe(1);
    }
    // Each takes tens of milliseconds; a tidying that scanned back along the line for each copy would take minutes (the test's timeout).
  });
});
