// check-reply in gate mode, as the gateway runs it there: no MEDIA_OUTBOX_DIR
// in its environment, the gate found through the system config (as
// /etc/media-outbox/config.json names it), the gate's outbox in
// HERMES_MEDIA_ALLOW_DIRS. The gate is `serve` run by hand on a temporary
// socket and killed by PID afterwards.
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gate, killAll, startGate } from "./gate-helpers.js";
import { type CliResult, cli, makeHome, png, write } from "./helpers.js";

let h: ReturnType<typeof makeHome>;
let gate: Gate;
/** The gateway's environment: strict mode, the gate's outbox allowed, the gate found by the system config. */
let gateway: NodeJS.ProcessEnv;
let chart: string;
let photo: string;

interface Report {
  reply: string;
  changed: boolean;
  added: string[];
  removed: { path: string; text: string }[];
  notes: { path: string; code: string; reason: string }[];
  kept: string[];
  ignored: { path: string; reason: string }[];
}

/** prepare as the agent runs it on a gate host: no flag, the system config names the gate. */
function prepared(name: string, content: Buffer): string {
  const r = cli(["prepare", write(h.home, name, content)], { env: gateway });
  expect(r.code, r.stderr).toBe(0);
  return r.stdout.trim().slice("MEDIA:".length);
}

function checkReply(reply: string, media: string[], env: NodeJS.ProcessEnv = gateway): CliResult & { report: Report } {
  const r = cli(["check-reply", "--json", ...media.flatMap((p) => ["--media", p])], { env, input: reply });
  expect(r.code, r.stderr).toBe(0);
  return { ...r, report: JSON.parse(r.stdout) as Report };
}

beforeAll(async () => {
  h = makeHome();
  gate = await startGate(h.home, h.env);
  const systemConfig = write(h.home, "system-config.json", JSON.stringify({ socket: gate.socket }));
  gateway = { ...h.env, MEDIA_OUTBOX_SYSTEM_CONFIG: systemConfig, HERMES_MEDIA_ALLOW_DIRS: gate.outbox, HERMES_MEDIA_DELIVERY_STRICT: "1", HERMES_MEDIA_TRUST_RECENT_FILES: "0" };
  chart = prepared("chart.png", png(1));
  photo = prepared("photo.png", png(2));
});
afterAll(async () => {
  await killAll();
  h.cleanup();
});

describe("check-reply in gate mode", () => {
  it("prepare published into the gate's outbox; no local outbox exists", () => {
    expect(path.dirname(chart)).toBe(gate.outbox);
    expect(path.dirname(photo)).toBe(gate.outbox);
    expect(fs.existsSync(h.outbox)).toBe(false);
  });

  it("takes a gate-published --media path and puts its exact line into the reply", () => {
    const { report } = checkReply("Here is the chart: `MEDIA:" + chart + "`", [chart]);
    expect(report.ignored).toEqual([]);
    expect(report.added).toEqual([chart]);
    expect(report.reply).toBe(`Here is the chart:\nMEDIA:${chart}`);
    // A good reply is left byte for byte.
    const good = `Done.\nMEDIA:${chart}\n`;
    expect(checkReply(good, [chart]).report).toMatchObject({ reply: good, changed: false, kept: [chart] });
  });

  it("repairs a mangled line naming a file in the gate's outbox that was not passed as published", () => {
    const { report } = checkReply(`The photo: **MEDIA:${photo}**.\nBye`, []);
    expect(report.notes).toEqual([]);
    expect(report.removed).toEqual([{ path: photo, text: `**MEDIA\\x3a${photo}**` }]);
    expect(report.reply).toBe(`The photo.\nBye\nMEDIA:${photo}`);
  });

  it("names a gate-published file the gateway would not deliver (its roots lack the gate's outbox) instead of ignoring it", () => {
    const { report } = checkReply("Sent!", [chart], { ...gateway, HERMES_MEDIA_ALLOW_DIRS: path.join(h.home, "elsewhere") });
    expect(report.ignored).toEqual([]);
    expect(report.notes).toEqual([{ path: chart, code: "not_allowed", reason: "it is outside the folders the gateway may send from" }]);
    expect(report.reply).toBe("Sent!\n(chart.png could not be sent: it is outside the folders the gateway may send from.)");
  });

  it("never takes a file outside the gate's outbox for published", () => {
    const planted = write(h.home, "planted.png", png(3));
    const { report } = checkReply(`Look: \`MEDIA:${planted}\``, [planted]);
    expect(report.ignored).toEqual([{ path: planted, reason: "not a regular file directly in the outbox" }]);
    expect(report.added).toEqual([]);
    expect(report.reply).toBe("Look: (planted.png could not be sent: it is outside the folders the gateway may send from.)");
  });

  it("asks the gate only when its outbox could change the verdict; a gate that does not answer leaves the mangled line named, and says why on stderr", () => {
    const gone = { ...gateway, MEDIA_OUTBOX_SYSTEM_CONFIG: write(h.home, "gone.json", JSON.stringify({ socket: path.join(h.home, "no-gate.sock") })) };
    const good = checkReply(`MEDIA:${chart}\n`, [chart], gone);
    expect(good.report.changed).toBe(false);
    expect(good.stderr).toBe("");
    const mangled = checkReply(`The photo: **MEDIA:${photo}**`, [], gone);
    expect(mangled.report.notes).toEqual([{ path: photo, code: "mangled", reason: "the line naming it was not written exactly, on a line of its own" }]);
    expect(mangled.stderr).toMatch(/^media-outbox: note: the gate's outbox is not known \(no gate socket at .*\): files in it that the reply names in a mangled way are not repaired\n$/);
  });
});
