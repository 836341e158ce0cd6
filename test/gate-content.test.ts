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
import { USER_HOME_SECRET_FILES, userHomeStoreCopyName } from "../src/content/known.js";

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
    work = h.work;
    creds = path.join(h.home, "credentials");
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

  it("knows an agent user's home stores from their copies (gate-secrets names each after its store) exactly as local mode knows the stores: the same values, named by the same keys and store", async () => {
    clearGate(gate);
    const [claude, qwen, codex, registry, identity, aws, pg, git, netrc] = ["Ca7Lq2Wd9Xe4Rf8Tg3Yh", "Qw5Ne1Rt8Yu3Io6Pa2Sd", "Co4De9Xf2Gh7Jk1Lm5Nb", "Dk3Rg8St1Vw6Xy2Za7Bc", "Id9Tk4Nm2Qp7Rs1Uv5Wx", "Aw8Sk3Ey6Cr1Td4Fg9Hj2Kl5Zx", "Pg4Ws7Dx2Cv9Bn3Mk8Lq", "Gt6Kn1Hs8Jd3Fg5Ra9Zu", "Nr5Tc2Vx8Bq4Lm7Kd3Hs"];
    const stores: Record<string, unknown> = {
      ".claude/.credentials.json": { claudeAiOauth: { accessToken: claude, expiresAt: 1796418000000 } },
      ".qwen/oauth_creds.json": { access_token: qwen, token_type: "Bearer" },
      ".docker/config.json": { auths: { "ghcr.io": { auth: Buffer.from(`agent:${registry}`).toString("base64") }, "registry.example.com": { identitytoken: identity } } },
      ".aws/credentials": `[default]\naws_secret_access_key = ${aws}\n`,
      ".pgpass": `db.example.com:5432:*:app:${pg}\n`,
      ".git-credentials": `https://agent:${git}@git.example.com\n`,
      ".netrc": `machine api.example.com\n  login deploy\n  password ${netrc}\n`,
      ".codex/auth.json": { tokens: { refresh_token: codex } },
    };
    expect(Object.keys(stores)).toEqual([...USER_HOME_SECRET_FILES]);
    // The agent's home, where local mode reads the stores; the gate's own home has none of them.
    const agentHome = path.join(h.home, "agent-home");
    const copies = Object.entries(stores).map(([store, content], i) => {
      const name = userHomeStoreCopyName(`hermes-env-${10 + i}`, store);
      const text = typeof content === "string" ? content : JSON.stringify(content);
      write(creds, name, text);
      fs.mkdirSync(path.join(agentHome, path.dirname(store)), { recursive: true });
      write(agentHome, store, text);
      return [store, name] as const;
    });
    try {
      const values = [claude, qwen, codex, registry, Buffer.from(`agent:${registry}`).toString("base64"), identity, aws, pg, git, netrc];
      const names = values.map((v, i) => write(work, `home-store-${i}.txt`, `notes: ${v}\n`));
      const viaGate: string[] = [];
      for (const [i, value] of values.entries()) {
        const r = await rawExchange(gate.socket, post(`home-store-${i}.txt`, `notes: ${value}\n`));
        expect(r.body).not.toContain(value);
        viaGate.push(r.json.success ? "published" : `${r.json.media_dropped[0].code}: ${r.json.media_dropped[0].reason}`);
      }
      const local = JSON.parse(cli(["prepare", "--json", ...names], { env: { ...h.env, HOME: agentHome }, cwd: work }).stdout) as { media_dropped: { code: string; reason: string }[] };
      const asTheGateNamesThem = (reason: string) => copies.reduce((text, [store, name]) => text.replace(`(the user's ~/${store})`, `(an agent user's ~/${store}, credential ${name})`), reason);
      expect(local.media_dropped).toHaveLength(values.length);
      expect(viaGate).toEqual(local.media_dropped.map((d) => `${d.code}: ${asTheGateNamesThem(d.reason)}`));
      expect(viaGate[0]).toContain("claudeAiOauth.accessToken (an agent user's ~/.claude/.credentials.json, credential hermes-env-10-claude-credentials.json)");
      expect(viaGate[5]).toContain("auths.registry.example.com.identitytoken (an agent user's ~/.docker/config.json, credential hermes-env-12-docker-config.json)");
      expect(viaGate[9]).toContain("api.example.com password (an agent user's ~/.netrc, credential hermes-env-16-netrc)");
    } finally {
      for (const [, name] of copies) fs.rmSync(path.join(creds, name));
      fs.rmSync(agentHome, { recursive: true });
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
