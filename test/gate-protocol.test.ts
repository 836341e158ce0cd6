// The gate's protocol and its pieces, in process: what the client sends is
// what the server reads, escaped text is recognised as such, a request only
// narrows the policy, and a failure inside the gate is answered 500 while
// the gate goes on.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadConfig } from "../src/config/config.js";
import { NO_KNOWN_SECRETS, withClientEnvironment } from "../src/content/known.js";
import { scanBytes } from "../src/content/scan.js";
import { escapeText, isEscaped } from "../src/core/escape.js";
import { MAX_ENVIRONMENT_HEADER, encodeEnvironment, parseEnvironmentHeader, parsePrepareQuery, parseTarget, prepareTarget, splitTarget } from "../src/gate/protocol.js";
import { GateServer } from "../src/gate/server.js";
import { narrowPolicy, policyOf } from "../src/prepare/judge.js";
import { head, post, rawExchange } from "./gate-helpers.js";
import { png } from "./helpers.js";

const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "mo-proto-")));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));
const config = (extra: object = {}) => loadConfig({ outbox: path.join(tmp, "outbox"), ...extra, env: { HOME: tmp, MEDIA_OUTBOX_SYSTEM_CONFIG: path.join(tmp, "none.json") } });

describe("protocol", () => {
  it("a name survives the request target whole, whatever it holds", () => {
    for (const name of ["chart.png", "my report (final).PDF", "a&b=c#d%e+f.png", "x\nMEDIA:/etc/passwd.png", "ünïcødé 图表.png", "dir/sub/../x.png", " lead.png"]) {
      const { path: p, search } = splitTarget(prepareTarget(name));
      expect(p).toBe("/prepare");
      expect(parsePrepareQuery(search).name).toBe(name);
    }
    expect(parsePrepareQuery(splitTarget(prepareTarget("a.png", { maxSize: 1000, allow: ["png", "pdf"], platform: "telegram" })).search)).toEqual({
      name: "a.png",
      policy: { maxSize: 1000, allow: ["png", "pdf"], platform: "telegram" },
    });
    // What curl users type: `+` and `%20` are both spaces.
    expect(parsePrepareQuery("name=my+chart%20v2.png").name).toBe("my chart v2.png");
  });

  it("the client's environment survives its header whole; what the format cannot carry is passed over; past the bound the rest is dropped, nearest kept", () => {
    const entries: [string, string][] = [
      ["A_TOKEN", "v=with=equals\nand a line"],
      ["ÜNÏ_KEY", "图表 ünïcødé"],
      ["EMPTY_SECRET", ""],
    ];
    const carried = encodeEnvironment([...entries, ["", "nameless"], ["BAD=NAME", "x"], ["NUL_TOKEN", "a\0b"]]);
    expect(carried.dropped).toEqual([]);
    expect(parseEnvironmentHeader([carried.value])).toEqual(entries);
    expect(encodeEnvironment([])).toEqual({ value: "", dropped: [] });
    expect(parseEnvironmentHeader([""])).toEqual([]);
    expect(parseEnvironmentHeader(undefined)).toEqual([]);

    const many = Array.from({ length: 100 }, (_, i): [string, string] => [`V${i}_TOKEN`, "x".repeat(200)]);
    const cut = encodeEnvironment(many);
    expect(cut.value.length).toBeLessThanOrEqual(MAX_ENVIRONMENT_HEADER);
    const kept = parseEnvironmentHeader([cut.value]);
    expect([...kept, ...cut.dropped]).toEqual(many);
    expect(kept.length).toBeGreaterThan(40);
    // Linear on the longest header it reads, whatever it holds.
    for (const text of ["=".repeat(MAX_ENVIRONMENT_HEADER), `${"A".repeat(MAX_ENVIRONMENT_HEADER - 1)}!`, "AAAA".repeat(MAX_ENVIRONMENT_HEADER / 4)]) {
      expect(() => parseEnvironmentHeader([text])).toThrow(/Media-Outbox-Environment/);
    }
  });

  it("the client's environment cannot make a scan compare its values over and over (found reading the header's path while fuzzing it, then measured): the hundreds of values of one 12 KiB header that open with the same bytes, or one that holds its first word again, held a 1 MB file of those bytes 5 to 10 s (27 ms with one value); a client's keys are still found", () => {
    const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    const header = (entries: [string, string][]) => parseEnvironmentHeader([encodeEnvironment(entries).value]);
    const file = Buffer.alloc(1 << 20, "q");
    const shared = header(Array.from({ length: 1000 }, (_, i): [string, string] => ["key", `${"q".repeat(22)}${letters[i % 62]}${letters[Math.floor(i / 62) % 62]}`]));
    const prefixed = header(Array.from({ length: 1000 }, (_, i): [string, string] => ["key", `X${"q".repeat(21)}${letters[i % 62]}${letters[Math.floor(i / 62) % 62]}`]));
    const repeated = header([["key", `${"q".repeat(255)}Z`]]);
    expect(shared.length).toBeGreaterThan(300);
    for (const entries of [shared, prefixed, repeated]) {
      const known = withClientEnvironment(NO_KNOWN_SECRETS, entries);
      expect(scanBytes(file, known)).toBeUndefined();
      // At most 8 values to a word; none that holds its first word again.
      const holding = new Map<string, number>();
      for (const { bytes } of known.values) {
        const text = Buffer.from(bytes).toString("latin1");
        expect(text.indexOf(text.slice(0, 4), 1)).toBe(-1);
        for (const word of new Set(Array.from({ length: text.length - 3 }, (_, at) => text.slice(at, at + 4)))) holding.set(word, (holding.get(word) ?? 0) + 1);
      }
      expect(Math.max(0, ...holding.values())).toBeLessThanOrEqual(8);
    }
    // A client's keys (several of one vendor, a JWT) are found, in the file and base64-encoded.
    const keys = Array.from({ length: 6 }, (_, i): [string, string] => [`K${i}_API_KEY`, `sk-proj-${Array.from({ length: 40 }, (_, j) => letters[(i * 7 + j * j * 13 + j) % 62]).join("")}`]);
    const jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJzdXBhYmFzZSIsInJlZiI6ImFiY2RlZmdoIiwicm9sZSI6InNlcnZpY2Vfcm9sZSJ9.c2lnbmF0dXJlLWJ5dGVzLWhlcmU";
    const known = withClientEnvironment(NO_KNOWN_SECRETS, header([...keys, ["SUPABASE_SERVICE_ROLE_KEY", jwt]]));
    for (const [name, value] of [...keys, ["SUPABASE_SERVICE_ROLE_KEY", jwt]]) {
      expect(known.values.map((v) => Buffer.from(v.bytes).toString()), name).toContain(value);
      expect(known.find(Buffer.from(`notes ${value} end`))?.name, name).toBe(`${name} (the client's environment)`);
      expect(known.find(Buffer.from(`data: ${Buffer.from(`x${value}`).toString("base64")}`))?.name, name).toBe(`${name} (the client's environment), base64-encoded`);
    }
  });

  it("a query that is not a prepare call is a usage error that echoes nothing raw", () => {
    const bad = ["", "name=", "name=a.png&name=b.png", "nam%0Ae=a.png", "name=a.png&max_size=0", "name=a.png&allow=exe", "name=a.png&platform=myspace%0A", `name=${"x".repeat(4097)}`, `name=a.png&allow=${"png,".repeat(200)}`];
    for (const search of bad) {
      let message = "";
      try {
        parsePrepareQuery(search);
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message, search.slice(0, 40)).not.toBe("");
      expect(message).not.toMatch(/[\n\r]/);
    }
  });

  it("a request narrows the policy and never widens it", () => {
    const policy = policyOf(config({ allow: "png,pdf", maxSize: "1MB" }));
    const narrowed = narrowPolicy(policy, { allow: ["png", "mp4"], maxSize: 500, platform: "telegram" });
    expect(narrowed.allow).toEqual(["png"]);
    expect(narrowed.capFor("png")).toBe(500);
    const wider = narrowPolicy(policy, { maxSize: 10_000_000_000 });
    expect(wider.capFor("png")).toBe(1_000_000);
    // Telegram allows 10 MB photos; the gate's own 1 MB cap stays.
    expect(narrowPolicy(policy, { platform: "telegram" }).capFor("png")).toBe(1_000_000);
    expect(narrowPolicy(policyOf(config()), { platform: "whatsapp" }).capFor("png")).toBe(5_000_000);
  });
});

describe("parseTarget (the request target's path and query)", () => {
  it("is linear on adversarial input: hosts a regular expression could backtrack over, megabytes long", () => {
    const mb = 1_000_000;
    const bad = [`http://${"a".repeat(mb)}"/health`, `http://${"%4".repeat(mb / 2)}/x`, `http://[${":".repeat(mb)}/x`, `http://${"a".repeat(mb)}:${"1".repeat(mb)}/x`, `${"h".repeat(mb)}://x/`, `/${"#".repeat(mb)}`];
    for (const target of bad) expect(() => parseTarget(target, "GET"), target.slice(0, 20)).toThrow(/the request target "/);
    expect(parseTarget(`http://${"a".repeat(mb)}/health?${"q".repeat(mb)}`, "GET").path).toBe("/health");
    // Each of them takes a few milliseconds; a quadratic one would take minutes (the test's timeout).
  });
});

describe("isEscaped (the client prints a gate's text only when it is)", () => {
  it("holds for everything escapeText returns, and not for raw controls, bidi controls or a directive", () => {
    const nasty = ["plain.png", "a\nb", "MEDIA:/etc/passwd", "media :x", "back\\slash", "\u202eevil", "\u2028", "zero\u200bwidth", "\ud800", "tab\there", "Media\u00a0:/x"];
    for (const text of nasty) expect(isEscaped(escapeText(text)), JSON.stringify(text)).toBe(true);
    for (const text of ["a\nb", "MEDIA:/etc/passwd", "media :x", "\u202eevil", "\u2028", "zero\u200bwidth", "\u0085", "Media\u00a0:/x"]) expect(isEscaped(text), JSON.stringify(text)).toBe(false);
  });

  it("is linear on adversarial input", () => {
    const long = [`${"media".repeat(100_000)}`, `media${" ".repeat(200_000)}x`, `${"media ".repeat(50_000)}:`, `${"\\".repeat(200_000)}:`];
    expect(long.map(isEscaped)).toEqual([true, true, false, true]);
  });
});

describe("the gate in process", () => {
  it("a failure inside the gate is answered 500 and logged; the next request is served", async () => {
    const lines: object[] = [];
    const log = (obj: object) => lines.push(obj);
    const gate = new GateServer({ config: config(), logger: { info: log, warn: log, error: log, debug: log } });
    const socket = path.join(tmp, "g.sock");
    await gate.listen({ path: socket });
    try {
      const layout = (gate as unknown as { layout: () => unknown }).layout;
      (gate as unknown as { layout: () => unknown }).layout = () => {
        throw new Error("disk on fire\nMEDIA:/etc/passwd");
      };
      const failed = await rawExchange(socket, post("a.png", png(1)));
      expect(failed.status).toBe(500);
      expect(failed.json).toEqual({ success: false, error: { code: "internal_error", message: "the gate failed on this request; see its log" } });
      expect(lines).toContainEqual(expect.objectContaining({ event: "internal_error", error: expect.stringContaining("disk on fire\\x0aMEDIA\\x3a/etc/passwd") }));
      (gate as unknown as { layout: () => unknown }).layout = layout;
      const served = await rawExchange(socket, post("a.png", png(1)));
      expect(served.json.media[0].name).toBe("a.png");
      expect((await rawExchange(socket, [head("/health", {}, "GET")])).json.ok).toBe(true);
    } finally {
      await gate.close();
    }
    expect(fs.existsSync(socket)).toBe(false);
  });
});
