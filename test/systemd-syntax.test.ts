import { describe, expect, it } from "vitest";
import { expandSpecifiers, parseEnvFile, parseUnitText, splitWords, unitWord } from "../src/deploy/systemd-syntax.js";

describe("systemd syntax", () => {
  it("reads environment files as systemd does: quotes, comments, escapes, continuations", () => {
    const vars = parseEnvFile(
      [
        "# comment",
        "; also a comment",
        "A=plain value   ",
        'B="double \\"quoted\\" $x"',
        "C='single $x \\n'",
        "D=one\\",
        "two",
        "  E = spaced",
        "not a line",
        "1BAD=x",
      ].join("\n"),
    );
    expect(Object.fromEntries(vars)).toEqual({ A: "plain value", B: 'double "quoted" $x', C: "single $x \\n", D: "onetwo", E: "spaced" });
  });

  it("splits Environment= values into words with quotes and C escapes", () => {
    expect(splitWords('A=1 "B=two words" \'C=x\' D=\\x41\\n')).toEqual(["A=1", "B=two words", "C=x", "D=A\n"]);
    expect(splitWords("")).toEqual([]);
  });

  it("joins continuation lines and keeps sections", () => {
    expect(parseUnitText("[Service]\nEnvironment=A=1 \\\n  B=2\n# x\n[Install]\nWantedBy=x\n")).toEqual([
      { section: "Service", key: "Environment", value: "A=1  B=2" },
      { section: "Install", key: "WantedBy", value: "x" },
    ]);
  });

  it("expands instance specifiers only where there is an instance", () => {
    const ctx = { unit: "hermes-gateway@alice.service", home: "/root" };
    expect(expandSpecifiers("/srv/%i/%p/%h/%%", ctx)).toBe("/srv/alice/hermes-gateway//root/%");
    expect(expandSpecifiers("/srv/%i", { unit: "hermes-gateway@.service", home: "/root" })).toBeUndefined();
    expect(expandSpecifiers("/srv/%Z", ctx)).toBeUndefined();
  });

  it("quotes a word only when it must, and round-trips through splitWords", () => {
    expect(unitWord("A=/x")).toBe("A=/x");
    for (const w of ['A=/a b', 'A=say "hi"', "A=back\\slash", "A=semi;colon"]) expect(splitWords(unitWord(w))).toEqual([w]);
  });
});
