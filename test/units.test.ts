import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../src/config/config.js";
import { escapeText, quoteText, quoteValue, safeJson } from "../src/core/escape.js";
import { formatMode, parseDuration, parseSize } from "../src/core/units.js";
import { checkGuarded, checkSize } from "../src/prepare/judge.js";
import { watchGuardOf } from "../src/watch/lock.js";
import { ASCII, UNICODE, outputName } from "../src/prepare/name.js";
import { allowDirProblem, extractMediaPaths, parseAllowDirs } from "../src/safety/gateway.js";
import { hasMediaDirective } from "../src/safety/path-text.js";
import { makeHome, write } from "./helpers.js";

describe("escapeText", () => {
  it("escapes controls, separators, bidi, invisible and backslashes, and defuses MEDIA:", () => {
    expect(escapeText("a\nb\u2028c\u202ed\u200be\\f")).toBe("a\\x0ab\\u{2028}c\\u{202e}d\\u{200b}e\\\\f");
    expect(escapeText("x MEDIA:/etc/passwd")).toBe("x MEDIA\\x3a/etc/passwd");
    expect(escapeText("media :/x")).not.toMatch(/media\s*:/i);
  });
  it("defuses MED\u0130A: and MED\u0131A:, which the gateway's case-insensitive Python pattern takes for MEDIA:", () => {
    expect(escapeText("x MED\u0130A:/etc/passwd")).toBe("x MED\u0130A\\x3a/etc/passwd");
    expect(escapeText("med\u0131a:/x")).toBe("med\u0131a\\x3a/x");
  });
  it("quoteText quotes once (escapeText, then a quote as \\\"); quoteValue quotes each string of a list the same way", () => {
    expect(quoteText('1\x1b[31m"x\\')).toBe(String.raw`"1\x1b[31m\"x\\"`);
    expect(quoteText("MEDIA:/etc/passwd")).toBe(String.raw`"MEDIA\x3a/etc/passwd"`);
    expect(quoteValue(["a\u202e", 1, true, null])).toBe(String.raw`["a\u{202e}",1,true,null]`);
    expect(quoteValue(false)).toBe("false");
    // A config file's non-string where a string belongs is shown as JSON, not as a string.
    expect(quoteText(5 as unknown as string)).toBe("5");
  });
  it("safeJson writes U+2028, U+2029 and U+0085 as escapes", () => {
    expect(safeJson("\u2028\u2029\u0085")).toBe('"\\u2028\\u2029\\u0085"');
  });
});

describe("directive detection", () => {
  it.each(["MEDIA:/x", "media: `x", "MEDIA: **'x", "MEDIA:~/x", "MEDIA:C:\\x", "MEDIA:c:/x", "MEDIA:\u201cx", "MED\u0130A:/x", "med\u0131a: /x"])("detects %s", (t) => {
    expect(hasMediaDirective(t)).toBe(true);
  });
  it.each(["MEDIA", "media-file.png", "MEDIA:x", "MEDIA: report"])("leaves %s", (t) => {
    expect(hasMediaDirective(t)).toBe(false);
  });
});

describe("sizes and durations", () => {
  it("parses sizes", () => {
    expect(parseSize("20MB")).toBe(20_000_000);
    expect(parseSize("50MiB")).toBe(52_428_800);
    expect(parseSize("1048576")).toBe(1_048_576);
    expect(() => parseSize("-1")).toThrow();
    expect(() => parseSize("10 parsecs")).toThrow();
  });
  it("parses durations as exact 24 h days", () => {
    expect(parseDuration("14d")).toBe(14 * 86_400_000);
    expect(parseDuration("1h30m")).toBe(5_400_000);
    expect(() => parseDuration("soon")).toThrow();
  });
  it("quotes a value it cannot read escaped: no raw bidi control, no live MEDIA: directive", () => {
    const messageOf = (fn: () => unknown): string => {
      try {
        fn();
      } catch (err) {
        return (err as Error).message;
      }
      throw new Error("expected a throw");
    };
    for (const message of [messageOf(() => parseSize("10\u202eMEDIA:/x")), messageOf(() => parseDuration("1d\u202eMEDIA:/x"))]) {
      expect(message).not.toContain("\u202e");
      expect(message).not.toMatch(/MEDIA:/);
      expect(message).toContain("\\u{202e}MEDIA\\x3a/x");
    }
  });
  it("a config file it cannot read or parse: the system's message is escaped too", () => {
    const h = makeHome();
    try {
      const missing = path.join(h.home, "gone\u202eMEDIA:/x.json");
      const broken = write(h.home, "broken.json", '{"outbox": \u202eMEDIA:/x}');
      for (const config of [missing, broken]) {
        let message = "";
        try {
          loadConfig({ config, env: h.env });
        } catch (err) {
          message = (err as Error).message;
        }
        expect(message).toMatch(/^(cannot read config file|config file .* is not valid JSON)/);
        expect(message).not.toContain("\u202e");
        expect(message).not.toMatch(/MEDIA:/);
      }
    } finally {
      h.cleanup();
    }
  });
});

describe("gateway model", () => {
  it("splits HERMES_MEDIA_ALLOW_DIRS on : and , with ~ and without relative entries", () => {
    expect(parseAllowDirs(" /a:~/b, rel ,/c ", "/home/u")).toEqual(["/a", "/home/u/b", "/c"]);
  });
  it("refuses outbox paths the gateway cannot parse", () => {
    for (const p of ["rel/x", "/a:b", "/a,b", "/a b", "/a`b", "/a\tb", "/my.files_x/o", "/a.b]/o"]) expect(allowDirProblem(p)).toBeDefined();
    expect(allowDirProblem("/home/u/.hermes/media_outbox")).toBeUndefined();
  });
  it("newer gateways cut after .ext and punctuation; backticks break extraction", () => {
    expect(extractMediaPaths("MEDIA:/a/b.png_c.png", "newer")).toEqual(["/a/b.png"]);
    expect(extractMediaPaths("MEDIA:/a/b.png_c.png", "classic")).toEqual(["/a/b.png_c.png"]);
    expect(extractMediaPaths("MEDIA:/a/`b.png")).toEqual([]);
  });
  it("output names never carry a dot in the stem", () => {
    expect(outputName("v1.2.3 final.tar.gz")).toBe("v1-2-3-final-tar.gz");
  });
  it("an output name is its own output name (the watch guard keeps only such names), seeded random names included", () => {
    // Leading marks before a reserved stem: stripped before the reserved-name test, so `con` gets its `_`.
    expect(outputName("\u0301 con.png")).toBe("con_.png");
    const atoms = ["a", "Z", "0", "-", "_", ".", ".png", " ", "\u0301", "\u200b", "é", "e\u0301", "\u202e", "con", "lpt¹", "\n", ":", "\\", "ß", "ﬁ", "Å", "😀", "\ufe0f", "ǅ", "١", "\u00ad", "日本語", "x".repeat(70)];
    let seed = 32;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    const changed: string[] = [];
    for (let i = 0; i < 20_000; i++) {
      let input = "";
      for (let n = 1 + (next() % 10); n > 0; n--) input += atoms[next() % atoms.length];
      for (const suffix of [undefined, "1a2b3c4d", "1a2b3c4d-7"]) {
        const name = outputName(input, suffix);
        if (outputName(name) !== name) changed.push(JSON.stringify([input, suffix, name]));
      }
    }
    expect(changed).toEqual([]);
  });
});

describe("output name patterns", () => {
  // The ASCII set is a fast path: it must cut every printable ASCII name exactly as the Unicode rule
  // does. Both sets differ only in their character classes, so agreeing on each character suffices.
  const printable = Array.from({ length: 0x7f - 0x20 }, (_, i) => String.fromCharCode(0x20 + i));
  const same = (re: RegExp | undefined, ref: RegExp, text: string) => {
    ref.lastIndex = 0;
    if (re) re.lastIndex = 0;
    return (re?.test(text) ?? false) === ref.test(text);
  };
  it("agrees with the Unicode patterns on every printable ASCII character", () => {
    const disagree = printable.filter(
      (c) =>
        !same(ASCII.invisible, UNICODE().invisible!, c) ||
        !same(ASCII.notStem, UNICODE().notStem, c) ||
        !same(ASCII.leading, UNICODE().leading, c) ||
        !same(ASCII.extension, UNICODE().extension, `a.${c}`) ||
        !same(ASCII.extension, UNICODE().extension, `a.b${c}`),
    );
    expect(disagree).toEqual([]);
  });
});

describe("formatMode", () => {
  it("prints the permission bits as chmod takes them, whatever else st_mode holds", () => {
    expect(formatMode(0o40750)).toBe("0750");
    expect(formatMode(0o100640)).toBe("0640");
    expect(formatMode(0o3770)).toBe("3770");
    expect(formatMode(0)).toBe("0000");
  });
});

describe("checkGuarded", () => {
  it("names the running watch's allow-list escaped: its lock's answer comes from another process", () => {
    let message = "";
    try {
      checkGuarded({ guard: { allow: ["png", "x\u001b[31m\nMEDIA:/etc/passwd"], capFor: () => 1, who: "process 7" } }, "svg");
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain("(png x\\x1b[31m\\x0aMEDIA\\x3a/etc/passwd)");
    expect(message).not.toMatch(/[\u0000-\u001f]|MEDIA:/);
  });
});

describe("watchGuardOf", () => {
  it("takes a running watch's caps as its lock answers them: an extension it names no cap for has none, an earlier watch's answer (no caps) no cap at all", () => {
    const guard = watchGuardOf({ pid: 7, allow: ["png"], caps: { png: 10 } }, ["txt"]);
    expect(guard).toMatchObject({ allow: ["png"], who: "process 7" });
    expect([guard.capFor("png"), guard.capFor("txt"), guard.capFor("constructor"), guard.capFor("__proto__")]).toEqual([10, 0, 0, 0]);
    const earlier = watchGuardOf({}, ["txt"]);
    expect(earlier).toMatchObject({ allow: ["txt"], who: "another process" });
    expect(earlier.capFor("txt")).toBe(Number.MAX_SAFE_INTEGER);
    // Over the guard's cap, within the run's own: too_large, naming the watch.
    expect(() => checkSize({ capFor: () => 100, guard }, "png", 11)).toThrow(/^the file is 11 B, within this run's cap, but the watch guarding this outbox \(process 7\) quarantines every \.png entry over 10 B/);
    expect(() => checkSize({ capFor: () => 100, guard }, "png", 10)).not.toThrow();
  });
});
