// The content check through the gate: `serve` judges with exactly the rules
// of local mode, and, since its service user cannot read the agents' .env,
// knows their values from $CREDENTIALS_DIRECTORY/hermes-env* (the copies the
// gate unit's gate-secrets makes). serve runs by hand on a temporary socket
// and is killed by PID after the group.
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { docx, mp3, negatives, pdf, pngWithText, positives } from "./corpus.js";
import { type Gate, clearGate, gateLeftBehind, killAll, post, rawExchange, startGate } from "./gate-helpers.js";
import { cli, makeHome, write } from "./helpers.js";

const NOTHING = { outbox: [], staging: [], ledger: [] };
const VALUE = "Qm7vLx2Pw9Zk4Tr8Yb3N";
const OTHER = "Zz9Yy8Xx7Ww6Vv5Uu4Tt";

describe("serve: the content check", () => {
  let h: ReturnType<typeof makeHome>;
  let gate: Gate;
  let creds: string;
  let work: string;
  beforeAll(async () => {
    h = makeHome();
    work = path.join(h.home, "work");
    creds = path.join(h.home, "credentials");
    fs.mkdirSync(work);
    fs.mkdirSync(creds);
    write(creds, "hermes-env-1", `# agent one\nMY_CUSTOM_SERVICE_KEY="${VALUE}"\nTELEGRAM_ALLOWED_USERS=123456789\n`);
    // Not a hermes-env credential: never read.
    write(creds, "tls-key", `X_TOKEN=${OTHER}\n`);
    // The gate's own HERMES_HOME has no .env: what it knows comes from the credentials alone.
    gate = await startGate(h.home, { ...h.env, HERMES_HOME: path.join(h.home, "gate-home"), CREDENTIALS_DIRECTORY: creds });
  });
  afterAll(async () => {
    await killAll();
    h.cleanup();
  });

  it("refuses a value of $CREDENTIALS_DIRECTORY/hermes-env* in text, docx, PDF, PNG and MP3, naming the variable, never the value; nothing is left behind", async () => {
    clearGate(gate);
    const bodies: [string, Buffer][] = [
      ["pasted.txt", Buffer.from(`it is ${VALUE}, keep it safe\n`)],
      ["report.docx", docx(`see ${VALUE} there`)],
      ["report.pdf", pdf(`see ${VALUE} there`)],
      ["tagged.png", pngWithText(`note ${VALUE}`)],
      ["tagged.mp3", mp3(`note ${VALUE}`)],
    ];
    for (const [name, body] of bodies) {
      const r = await rawExchange(gate.socket, post(name, body));
      expect(r.json, name).toMatchObject({ success: false, media: [], media_dropped: [{ path: name, code: "secret_detected" }] });
      expect(r.json.media_dropped[0].reason, name).toContain("MY_CUSTOM_SERVICE_KEY (credential hermes-env-1)");
      expect(r.body, name).not.toContain(VALUE);
    }
    expect(gate.log()).not.toContain(VALUE);
    expect(gateLeftBehind(gate)).toEqual(NOTHING);
    // Only hermes-env* files are read, and settings are not secrets.
    const other = await rawExchange(gate.socket, post("other.txt", `${OTHER} 123456789\n`));
    expect(other.json).toMatchObject({ success: true, media: [{ name: "other.txt" }] });
  });

  it("prepare as the gate's client is refused a known value the client itself cannot know (the client has no .env either)", () => {
    clearGate(gate);
    write(work, "leak.md", `# notes\n${VALUE}\n`);
    const r = cli(["prepare", "leak.md"], { env: { ...h.env, MEDIA_OUTBOX_SOCKET: gate.socket }, cwd: work });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("secret_detected");
    expect(r.stderr).toContain("MY_CUSTOM_SERVICE_KEY (credential hermes-env-1)");
    expect(r.stderr).not.toContain(VALUE);
    expect(gateLeftBehind(gate)).toEqual(NOTHING);
  });

  it("a large text file (judged partly by the worker thread) is refused a known value at its front and at its end", async () => {
    clearGate(gate);
    const filler = Buffer.from("The quarterly report covers revenue and churn.\n".repeat(400_000));
    for (const [name, body] of [
      ["front.txt", Buffer.concat([Buffer.from(`${VALUE}\n`), filler])],
      ["end.txt", Buffer.concat([filler, Buffer.from(`${VALUE}\n`)])],
    ] as const) {
      expect(body.length).toBeGreaterThan(17 * 1024 * 1024);
      const r = await rawExchange(gate.socket, post(name, body));
      expect(r.json, name).toMatchObject({ success: false, media_dropped: [{ path: name, code: "secret_detected" }] });
    }
    expect(gateLeftBehind(gate)).toEqual(NOTHING);
  });

  it("a credential that changes while the gate runs counts from the next request", async () => {
    clearGate(gate);
    const later = "Hk29dLqp0Zx7Vn3wRt5Y";
    const before = await rawExchange(gate.socket, post("before.txt", `${later}\n`));
    expect(before.json).toMatchObject({ success: true });
    write(creds, "hermes-env-2", `WEBHOOK_SECRET=${later}\n`);
    try {
      const after = await rawExchange(gate.socket, post("after.txt", `${later}\n`));
      expect(after.json).toMatchObject({ success: false, media_dropped: [{ code: "secret_detected" }] });
      expect(after.json.media_dropped[0].reason).toContain("WEBHOOK_SECRET (credential hermes-env-2)");
    } finally {
      fs.unlinkSync(path.join(creds, "hermes-env-2"));
    }
  });

  it("judges the labelled corpus exactly as local mode does (same codes, same reasons)", async () => {
    clearGate(gate);
    const files: [string, Buffer][] = [];
    for (const [label, value] of Object.entries(positives(21))) {
      files.push([`${label}.txt`, Buffer.from(`notes\n${value}\n`)], [`${label}.docx`, docx(value)], [`${label}.pdf`, pdf(value)]);
    }
    for (const [label, text] of Object.entries(negatives(22))) files.push([`${label}.md`, Buffer.from(text)], [`${label}.docx`, docx(text)]);
    files.push(["known.txt", Buffer.from(`${VALUE}\n`)]);
    const viaGate: Record<string, string> = {};
    for (const [name, body] of files) {
      const r = await rawExchange(gate.socket, post(name, body));
      viaGate[name] = r.json.success ? "published" : `${r.json.media_dropped[0].code}: ${r.json.media_dropped[0].reason}`;
      write(work, name, body);
    }
    // Local mode, with the same .env in the agent's own Hermes home.
    fs.mkdirSync(path.join(h.home, ".hermes"), { recursive: true });
    fs.copyFileSync(path.join(creds, "hermes-env-1"), path.join(h.home, ".hermes", ".env"));
    const r = cli(["prepare", "--json", ...files.map(([name]) => name)], { env: h.env, cwd: work });
    const doc = JSON.parse(r.stdout) as { media: { source: string }[]; media_dropped: { path: string; code: string; reason: string }[] };
    const local: Record<string, string> = {};
    for (const m of doc.media) local[path.basename(m.source)] = "published";
    for (const d of doc.media_dropped) local[path.basename(d.path)] = `${d.code}: ${d.reason.replace("(the Hermes .env)", "(credential hermes-env-1)")}`;
    expect(viaGate).toEqual(local);
    expect(Object.values(viaGate).filter((v) => v === "published")).toHaveLength(2 * Object.keys(negatives(22)).length);
  });
});
