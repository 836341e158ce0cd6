// Gate mode on a real systemd (issue 10, "Tests on a real systemd"): one
// container booted for this file (test/systemd-container.ts), a stand-in Hermes
// gateway running as the unprivileged user `agent`, and
// `install systemd --system --gate` as an operator would run it. What the
// kernel must hold is tried as `agent` would try it.
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HERMES_STORE_DIRS, HERMES_STORES, USER_HOME_SECRET_FILES } from "../src/content/known.js";
import { type Snapshot, snapshot } from "./deploy-helpers";
import { BIN, ROOT, png } from "./helpers";
import { type ExecOptions, SystemdContainer } from "./systemd-container";
import { waitUntil } from "./watch-helpers";

// /srv on a real filesystem (a fresh host directory), as on a server: the
// container's volatile overlay reports another st_dev for files than for
// their directory, which the janitor rightly refuses to cross.
const c = new SystemdContainer({ fresh: ["/srv"], readOnly: [ROOT] });
const NODE = process.execPath;
const OUTBOX = "/srv/media-outbox/outbox";
const STATE = "/srv/media-outbox/state";
const SOCKET = "/run/media-outbox/gate.sock";
/** The gate's runtime directory, where gate-secrets puts the agents' .env copies. */
const SECRETS = "/run/media-outbox-gate";
const GATEWAY = "hermes-gateway.service";
const SECRET = "7000000001:AAHfakeTokenValueOnlyForTheseTests";
/** A value only the agent's .env makes a secret (no pattern knows it): refused by the gate only if it knows the .env. */
const KNOWN = "Qm7vLx2Pw9Zk4Tr8Yb3N";
const DOT_ENV = `TELEGRAM_BOT_TOKEN=${SECRET}\nMY_CUSTOM_SERVICE_KEY=${KNOWN}`;
/** A Hermes home's stores and its directory of MCP token files as the gate-secrets line names them: optional ("?"), read as `user`. */
const storeWords = (user: string, home: string) => [...HERMES_STORES, ...HERMES_STORE_DIRS.map((name) => `${name}/`)].map((store) => `${user}:?${home}/${store}`).join(" ");
/** The stores of a user's home (~/.docker/config.json, other agents' CLIs' OAuth tokens) as the line names them, after all the others: optional, read as `user`. */
const homeStoreWords = (user: string, home: string) => USER_HOME_SECRET_FILES.map((store) => `${user}:?${home}/${store}`).join(" ");
/** The gate-secrets line of the main install (agent's gateway): its .env, stores, its home's stores, then its profiles directory. */
const gateSecretWords = `agent:/home/agent/.hermes/.env ${storeWords("agent", "/home/agent/.hermes")} ${homeStoreWords("agent", "/home/agent")} agent:?profiles:/home/agent/.hermes/profiles/ agent:?gateway:/etc/systemd/system/${GATEWAY}`;
/** The number of the profiles directory's copies on that line (hermes-env-N-profile.NAME.FILE). */
const PROFILES_COPY = `hermes-env-${1 + HERMES_STORES.length + HERMES_STORE_DIRS.length + USER_HOME_SECRET_FILES.length}`;
/** The number of the gateway's copies on that line (what its environment moves, followed at each run: hermes-env-N-managed.env…), last. */
const GATEWAY_COPY = `hermes-env-${2 + HERMES_STORES.length + HERMES_STORE_DIRS.length + USER_HOME_SECRET_FILES.length}`;

/** media-outbox inside the container (as root unless `user` is given). */
const mo = (args: string[], opts: ExecOptions = {}) => c.exec([NODE, BIN, ...args], opts);
const sh = (script: string, opts: ExecOptions = {}) => c.sh(script, opts);
const out = (script: string, opts: ExecOptions = {}) => c.run(["sh", "-c", script], opts).trim();
/** doctor's ok line of the gate's secrets, run as root while the gate runs: its copies counted as they are now. */
const secretsKnown = () =>
  expect.stringMatching(
    new RegExp(
      `^media-outbox-gate\\.service's gate-secrets line names \\d+ file\\(s\\) to copy the agents' secrets from \\(\\d+ of them optional stores\\); ${out(`ls -A ${SECRETS} | grep -c '^hermes-env-'`)} copies are in /run/media-outbox-gate now, the values the gate knows$`,
    ),
  );
/** `systemctl show UNIT -p P` values. */
function show<K extends string>(unit: string, ...props: K[]): Record<K, string> {
  const text = c.run(["systemctl", "show", unit, ...props.flatMap((p) => ["-p", p])]);
  const shown = Object.fromEntries(text.split("\n").filter((l) => l.includes("=")).map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]));
  return Object.fromEntries(props.map((p) => [p, shown[p] ?? ""])) as Record<K, string>;
}
/** The container's /etc/systemd/system, read from the host through its PID 1's root. */
const unitTree = (): Snapshot => snapshot(`/proc/${c.pid}/root/etc/systemd/system`);
const exists = (p: string) => sh(`test -e '${p}' || test -L '${p}'`).code === 0;
const statOf = (p: string) => out(`stat -c '%U:%G %a %F' '${p}'`);
const groupsOf = (user: string) => out(`id -nG ${user}`).split(" ");
/** A copy of this package's runnable parts in `dir` (made, under `parent` of mode `parentMode`), owned by root; returns its CLI. */
function copyPackage(parent: string, parentMode: string, dir: string): string {
  const from = path.dirname(path.dirname(BIN));
  const parts = ["bin", "dist", "deploy", "package.json"].map((p) => `${from}/${p}`).join(" ");
  c.run(["sh", "-ec", `install -d -m ${parentMode} ${parent} && install -d -m 0755 ${dir} && cp -a ${parts} ${dir}/ && chown -R root:root ${dir}`]);
  return `${dir}/bin/media-outbox`;
}

// A stand-in for the Hermes gateway: runs as `agent` with the environment its
// unit gives it and "uploads" a MEDIA: line sent to its socket the way the
// gateway decides (strict mode: only under HERMES_MEDIA_ALLOW_DIRS), answering
// the sha256 of what it read, or why it dropped it.
const STANDIN = `"use strict";
const fs = require("fs"), net = require("net"), crypto = require("crypto");
const roots = (process.env.HERMES_MEDIA_ALLOW_DIRS || "").split(/[:,]/).map((s) => s.trim()).filter((s) => s.startsWith("/"));
const strict = process.env.HERMES_MEDIA_DELIVERY_STRICT === "1";
const sock = "/run/hermes-standin/upload.sock";
fs.rmSync(sock, { force: true });
net.createServer((conn) => {
  let buf = "";
  conn.on("data", (d) => {
    buf += d;
    if (!buf.includes("\\n")) return;
    const m = /^MEDIA:(\\/\\S+)$/.exec(buf.slice(0, buf.indexOf("\\n")));
    if (!m) return conn.end("dropped: no directive\\n");
    try {
      const real = fs.realpathSync(m[1]);
      if (strict && !roots.some((r) => real === r || real.startsWith(r + "/"))) return conn.end("dropped: not under HERMES_MEDIA_ALLOW_DIRS\\n");
      conn.end("delivered " + crypto.createHash("sha256").update(fs.readFileSync(real)).digest("hex") + "\\n");
    } catch (e) {
      conn.end("dropped: " + e.code + "\\n");
    }
  });
}).listen(sock, () => fs.chmodSync(sock, 0o666));
`;
const UPLOAD = `const s = require("net").connect("/run/hermes-standin/upload.sock", () => s.write(process.argv[2] + "\\n")); s.pipe(process.stdout);`;

// Tries, as the calling user, every way of changing a directory's contents and
// a file in it; prints { "DIR": { op: errno code or "ok" } }.
const ATTACK = `"use strict";
const fs = require("fs"), path = require("path");
const own = process.argv[2];
const result = {};
for (const pair of process.argv.slice(3)) {
  const [dir, file] = pair.split("=");
  const r = (result[dir] = {});
  const t = (op, fn) => { try { fn(); r[op] = "ok"; } catch (e) { r[op] = e.code; } };
  t("create", () => fs.writeFileSync(path.join(dir, "planted.png"), "x", { flag: "wx" }));
  t("mkdir", () => fs.mkdirSync(path.join(dir, "planted-dir")));
  t("symlink", () => fs.symlinkSync("/etc/passwd", path.join(dir, "planted-link.png")));
  t("hardlink", () => fs.linkSync(own, path.join(dir, "planted-hard.png")));
  t("rename in", () => fs.renameSync(own, path.join(dir, "planted-moved.png")));
  t("rename", () => fs.renameSync(file, file + ".renamed"));
  t("append", () => fs.appendFileSync(file, "x"));
  t("open for writing", () => fs.closeSync(fs.openSync(file, "r+")));
  t("truncate", () => fs.truncateSync(file, 0));
  t("delete", () => fs.unlinkSync(file));
  t("chmod", () => fs.chmodSync(file, 0o666));
  t("utimes", () => fs.utimesSync(file, 0, 0));
  t("chmod dir", () => fs.chmodSync(dir, 0o777));
}
console.log(JSON.stringify(result));
`;

function attack(user: string, targets: Record<string, string>): Record<string, Record<string, string>> {
  // The attacker's own file, on the outbox's filesystem (/srv/shared is world-writable): a hard
  // link or rename from it is refused for its permissions, never for crossing filesystems.
  const own = `/srv/shared/${user}-own.png`;
  c.run(["install", "-o", user, "-g", user, "-m", "0644", path.join(c.work, "chart.png"), own]);
  const r = c.exec([NODE, path.join(c.work, "attack.js"), own, ...Object.entries(targets).map(([d, f]) => `${d}=${f}`)], { user });
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as Record<string, Record<string, string>>;
}

/** Every attempt refused by the kernel: EACCES or EPERM, nothing else (not even ENOENT, which would mean the check missed its target). */
function expectAllRefused(results: Record<string, Record<string, string>>): void {
  for (const [dir, ops] of Object.entries(results)) {
    for (const [op, code] of Object.entries(ops)) expect(["EACCES", "EPERM"], `${op} in ${dir}: ${code}`).toContain(code);
  }
}

/** The running gateway's environment, as KEY=value lines. */
function gatewayEnvironment(): string[] {
  const pid = Number(show(GATEWAY, "MainPID").MainPID);
  return out(`tr '\\0' '\\n' < /proc/${pid}/environ`).split("\n");
}

function gatePid(): number {
  return Number(show("media-outbox-gate.service", "MainPID").MainPID);
}

let before: Snapshot;

beforeAll(async () => {
  await c.boot();
  fs.writeFileSync(path.join(c.work, "standin.js"), STANDIN);
  fs.writeFileSync(path.join(c.work, "upload.js"), UPLOAD);
  fs.writeFileSync(path.join(c.work, "attack.js"), ATTACK);
  fs.writeFileSync(path.join(c.work, "chart.png"), png(1, 16));
  fs.writeFileSync(path.join(c.work, "photo.png"), png(2, 16));
  fs.writeFileSync(path.join(c.work, "drop.png"), png(3, 16));
  c.run(
    ["sh", "-ec", `
useradd --create-home --shell /bin/bash agent
useradd --create-home --shell /bin/bash other
install -d -o agent -g agent -m 0700 /home/agent/.hermes
printf '${DOT_ENV.replace(/\n/g, "\\n")}\\n' > /home/agent/.hermes/.env
chown agent:agent /home/agent/.hermes/.env && chmod 600 /home/agent/.hermes/.env
install -o agent -g agent -m 0644 ${c.work}/chart.png /home/agent/chart.png
install -o agent -g agent -m 0644 ${c.work}/photo.png /home/agent/photo.png
install -o other -g other -m 0644 ${c.work}/chart.png /home/other/chart.png
install -d -m 1777 /srv/shared
install -d -o agent -g agent -m 0755 /srv/agent-owned
cat > /etc/systemd/system/${GATEWAY} <<EOF
[Unit]
Description=Hermes gateway (a stand-in for the tests)

[Service]
User=agent
Environment=HERMES_HOME=/home/agent/.hermes
RuntimeDirectory=hermes-standin
ExecStart=${NODE} ${c.work}/standin.js

[Install]
WantedBy=multi-user.target
EOF
systemctl daemon-reload
systemctl enable --now ${GATEWAY}
`],
  );
  before = unitTree();
}, 240_000);

afterAll(() => c.shutdown(), 120_000);

// Generous bounds for a loaded machine: the waits inside are bounded themselves, and nothing asserts a duration.
describe("install systemd --gate on a real systemd", { timeout: 120_000 }, () => {
  it("refuses an outbox an agent could reach or change, code it could change, and an unknown agent user, leaving nothing behind", () => {
    const cases: [string[], RegExp][] = [
      [["--outbox", "/home/agent/outbox"], /lies under the home \/home\/agent/],
      [["--outbox", "/var/lib/media-outbox/outbox"], /lies under \/var\/lib, which the gateway never sends from/],
      [["--outbox", "/srv/shared/outbox"], /\/srv\/shared is writable by its group or others/],
      [["--outbox", "/srv/agent-owned/outbox"], /\/srv\/agent-owned belongs to uid \d+, not root/],
      [["--outbox", "/tmp/outbox"], /lies under \/tmp/],
      [["--agent-user", "nosuch"], /--agent-user nosuch: no such user/],
    ];
    for (const [args, message] of cases) {
      const r = mo(["install", "systemd", "--system", "--gate", "--agent-user", "agent", ...args]);
      expect(r.code, r.stdout + r.stderr).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(r.stderr.split("\n").filter((l) => l !== "")).toHaveLength(1);
    }
    // A copy of media-outbox the agent could change: the gate would run the agent's code.
    const copied = copyPackage("/opt", "0755", "/opt/mo-copy");
    c.run(["chown", "-R", "agent:", "/opt/mo-copy/dist"]);
    const copy = c.exec([NODE, copied, "install", "systemd", "--system", "--gate", "--agent-user", "agent"]);
    expect(copy.code, copy.stderr).toBe(2);
    expect(copy.stderr).toMatch(/the gate would run code others can change: \/opt\/mo-copy\/dist\S* belongs to uid \d+, not root/);
    // The way out it names makes root's copy (a plain `npm install -g .` only links to the clone).
    expect(copy.stderr).toContain("as root, in the clone: npm install -g --install-links .");
    c.run(["rm", "-rf", "/opt/mo-copy"]);
    // Below a sticky directory (/tmp's mode 1777), root's own copy is root's alone: only root may rename or remove it there.
    // An outbox that does not exist yet is not: anyone could take its name first.
    const sticky = c.exec([NODE, copyPackage("/srv/sticky", "1777", "/srv/sticky/mo"), "install", "systemd", "--system", "--gate", "--agent-user", "agent", "--dry-run"]);
    expect(sticky.code, sticky.stderr).toBe(0);
    expect(sticky.stdout).toContain("media-outbox-gate.service");
    const stickyOutbox = mo(["install", "systemd", "--system", "--gate", "--agent-user", "agent", "--outbox", "/srv/sticky/outbox"]);
    expect(stickyOutbox.code).toBe(2);
    expect(stickyOutbox.stderr).toMatch(/\/srv\/sticky is writable by its group or others \(mode 1777\)/);
    c.run(["rm", "-rf", "/srv/sticky"]);
    // Under /var/tmp (sticky too) the gate would never see it: its unit has a /var/tmp of its own (PrivateTmp=).
    const hidden = c.exec([NODE, copyPackage("/var/tmp", "1777", "/var/tmp/mo"), "install", "systemd", "--system", "--gate", "--agent-user", "agent", "--dry-run"]);
    expect(hidden.code).toBe(2);
    expect(hidden.stderr).toContain("the gate's user could not run it: /var/tmp/mo lies under /var/tmp, which the gate's unit hides from it (PrivateTmp=)");
    c.run(["rm", "-rf", "/var/tmp/mo"]);
    // Not root (sudo forgotten): told so, before anything is read or written.
    const notRoot = mo(["install", "systemd", "--system", "--gate", "--agent-user", "agent"], { user: "agent" });
    expect(notRoot.code, notRoot.stderr).toBe(2);
    expect(notRoot.stderr).toContain("install systemd --system changes /etc/systemd/system and /var/lib/media-outbox, which only root may: run it as root");
    const user = mo(["install", "systemd", "--user", "--gate"]);
    expect(user.code).toBe(2);
    expect(user.stderr).toContain("use --system, not --user");
    expect(unitTree()).toEqual(before);
    expect(sh("getent passwd media-outbox").code).toBe(2);
    expect(sh("getent group media-outbox").code).toBe(2);
    for (const p of ["/srv/media-outbox", "/etc/media-outbox", "/var/lib/media-outbox/install-manifest.json", "/srv/shared/outbox", "/srv/agent-owned/outbox"]) expect(exists(p), p).toBe(false);
  });

  it("with --with-watch: the watch runs as the service user and takes an agent's file from a group-writable drop folder; an agent's .env written after install, and a Hermes set up after it, are known; uninstall --remove-user removes the accounts it created, never the files", async () => {
    let uninstalled: ReturnType<typeof mo>;
    const dotEnv = "/home/agent/.hermes/.env";
    // Installed before the agent has a .env: it is named all the same, and known once it is written.
    c.run(["mv", dotEnv, `${dotEnv}.saved`]);
    try {
      c.run(["sh", "-ec", `install -d -m 0755 /etc/mo-test && printf '{"watch": {"drop": ["/srv/cycle/drop"], "settle": "200ms"}}\\n' > /etc/mo-test/gate.json`]);
      // `other` has no ~/.hermes yet: its .env is named all the same (its home is there to make it in).
      const r = mo(["install", "systemd", "--system", "--gate", "--agent-user", "agent", "--agent-user", "other", "--outbox", "/srv/cycle/outbox", "--with-watch", "--config", "/etc/mo-test/gate.json"]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain("created system user media-outbox");
      expect(statOf("/srv/cycle/drop")).toBe("media-outbox:media-outbox 3770 directory");
      expect(show("media-outbox-watch.service", "ActiveState", "User")).toEqual({ ActiveState: "active", User: "media-outbox" });
      const watchPid = Number(show("media-outbox-watch.service", "MainPID").MainPID);
      expect(out(`stat -c %U /proc/${watchPid}`)).toBe("media-outbox");
      // The agent drops a file (under a temporary name, then renamed, as the README says).
      c.run(["sh", "-c", `cp /home/agent/chart.png /srv/cycle/drop/.chart.png.part && mv /srv/cycle/drop/.chart.png.part /srv/cycle/drop/chart.png`], { user: "agent" });
      await waitUntil(() => exists("/srv/cycle/drop/chart.png.media") || exists("/srv/cycle/drop/chart.png.refused"), "the watch's receipt");
      expect(out("cat /srv/cycle/drop/chart.png.media", { user: "agent" })).toBe("MEDIA:/srv/cycle/outbox/chart.png");
      // Published as the gate publishes: the outbox is group-readable, so the file is too (0640).
      expect(out("stat -c '%U:%G %a' /srv/cycle/outbox/chart.png")).toBe("media-outbox:media-outbox 640");
      // The agent reads what was published (the gateway runs as the agent), and changes nothing.
      expect(out("sha256sum < /srv/cycle/outbox/chart.png", { user: "agent" })).toBe(out("sha256sum < /home/agent/chart.png"));
      expectAllRefused(attack("agent", { "/srv/cycle/outbox": "/srv/cycle/outbox/chart.png" }));
      expect(out("journalctl -u media-outbox-watch.service -o cat --no-pager")).toContain(`gate-secrets: skipped ${dotEnv} (read as agent): it does not exist`);
      expect(exists("/run/media-outbox-watch/hermes-env-0")).toBe(false);
      // The agent writes its .env (renamed into place, as an editor does); the path unit copies it for the watch.
      c.run(["mv", `${dotEnv}.saved`, dotEnv], { user: "agent" });
      await waitUntil(() => exists("/run/media-outbox-watch/hermes-env-0"), "the watch's copy of the new .env", 20_000);
      // The watch judges drops as the gate does: it knows the agent's .env values (copied for it, read as the agent).
      c.run(["sh", "-c", `printf 'notes: ${KNOWN}\\n' > /srv/cycle/drop/.leak.txt.part && mv /srv/cycle/drop/.leak.txt.part /srv/cycle/drop/leak.txt`], { user: "agent" });
      await waitUntil(() => exists("/srv/cycle/drop/leak.txt.media") || exists("/srv/cycle/drop/leak.txt.refused"), "the watch's receipt");
      expect(out("cat /srv/cycle/drop/leak.txt.refused", { user: "agent" })).toContain("MY_CUSTOM_SERVICE_KEY (credential hermes-env-0)");
      expect(exists("/srv/cycle/outbox/leak.txt")).toBe(false);
      // A credential store written after install (auth.json appears on the first `hermes auth`) is named all the same:
      // the gate refuses its token (prepare through the gate).
      const refreshToken = "Nr9Kd2Wq7Lx3Vb8Tz5Hc";
      c.run(["sh", "-ec", `printf '{"providers": {"nous": {"refresh_token": "${refreshToken}"}}}\\n' > /home/agent/.hermes/.auth.new && mv /home/agent/.hermes/.auth.new /home/agent/.hermes/auth.json && printf 'notes: ${refreshToken}\\n' > /home/agent/auth-leak.txt`], { user: "agent" });
      // The two agents' .env files come first, then the agent's stores in their order.
      const authCopy = `hermes-env-${2 + HERMES_STORES.indexOf("auth.json")}`;
      await waitUntil(() => exists(`/run/media-outbox-watch/${authCopy}`), "the watch's copy of the new auth.json", 20_000);
      const authLeak = mo(["prepare", "/home/agent/auth-leak.txt"], { user: "agent" });
      expect(authLeak.code, authLeak.stdout + authLeak.stderr).toBe(1);
      expect(authLeak.stderr).toContain(`providers.nous.refresh_token (credential ${authCopy})`);
      // Made after install, it was copied at once; its later changes may go unseen (among the missing files' events): doctor says to install again.
      const doctor = JSON.parse(mo(["doctor", "--json", "--no-probe"]).stdout) as { checks: { check: string; status: string; message: string }[] };
      expect(doctor.checks.filter((x) => x.check === "gate secrets" && x.message.includes("made after install")).map((x) => x.message.split(": ")[0])).toEqual([`${dotEnv}, /home/agent/.hermes/auth.json`]);
      // An MCP server added after install: its token file, in the directory the units name, is known (the directory made with it in place).
      const mcpToken = "Wm4Zt8Kq2Vx7Lp3Nr9Bd";
      c.run(["sh", "-ec", `mkdir /home/agent/.hermes/.mcp.new && printf '{"access_token": "${mcpToken}"}\\n' > /home/agent/.hermes/.mcp.new/tracker.json && mv /home/agent/.hermes/.mcp.new /home/agent/.hermes/mcp-tokens && printf 'notes: ${mcpToken}\\n' > /home/agent/mcp-leak.txt`], { user: "agent" });
      const mcpCopy = `hermes-env-${2 + HERMES_STORES.length + HERMES_STORE_DIRS.indexOf("mcp-tokens")}-0`;
      await waitUntil(() => exists(`/run/media-outbox-watch/${mcpCopy}`), "the watch's copy of the new MCP token file", 20_000);
      const mcpLeak = mo(["prepare", "/home/agent/mcp-leak.txt"], { user: "agent" });
      expect(mcpLeak.code, mcpLeak.stdout + mcpLeak.stderr).toBe(1);
      expect(mcpLeak.stderr).toContain(`access_token (credential ${mcpCopy})`);
      // A `docker login` after install: the store of the agent's home, named for it after all the Hermes files, is copied once written,
      // and the gate names what it finds there by the store, as local mode does.
      const registryPassword = "Ht6Wd1Kx8Qm3Zr7Vn2Pb";
      const basic = Buffer.from(`agent:${registryPassword}`).toString("base64");
      c.run(["sh", "-ec", `mkdir -p /home/agent/.docker && printf '{"auths": {"registry.example.com": {"auth": "${basic}"}}}\\n' > /home/agent/.docker/config.json.new && mv /home/agent/.docker/config.json.new /home/agent/.docker/config.json && printf 'notes: ${registryPassword}\\n' > /home/agent/docker-leak.txt`], { user: "agent" });
      const dockerCopy = `hermes-env-${2 + 2 * (HERMES_STORES.length + HERMES_STORE_DIRS.length) + USER_HOME_SECRET_FILES.indexOf(".docker/config.json")}-docker-config.json`;
      await waitUntil(() => exists(`/run/media-outbox-watch/${dockerCopy}`), "the watch's copy of the new ~/.docker/config.json", 20_000);
      const dockerLeak = mo(["prepare", "/home/agent/docker-leak.txt"], { user: "agent" });
      expect(dockerLeak.code, dockerLeak.stdout + dockerLeak.stderr).toBe(1);
      expect(dockerLeak.stderr).toContain(`auths.registry.example.com.auth (an agent user's ~/.docker/config.json, credential ${dockerCopy})`);
      expect(dockerLeak.stderr).not.toContain(registryPassword);
      // A changed .env or store is copied for the watch too, not only for the gate: the .env files first, then the stores.
      expect(out("systemctl cat media-outbox-gate-secrets.service").split("\n")).toContain(
        `ExecStart=-+${NODE} ${BIN} gate-secrets --into /run/media-outbox-watch --watch-profiles agent:/home/agent/.hermes/.env other:/home/other/.hermes/.env ${storeWords("agent", "/home/agent/.hermes")} ${storeWords("other", "/home/other/.hermes")} ${homeStoreWords("agent", "/home/agent")} ${homeStoreWords("other", "/home/other")} agent:?profiles:/home/agent/.hermes/profiles/ other:?profiles:/home/other/.hermes/profiles/ agent:?gateway:/etc/systemd/system/${GATEWAY}`,
      );
      // Hermes set up for `other` after the install: its home made, then its .env; the watch knows its values.
      const otherKey = "Rv7Lq2Xz9Kw4Tn8Pb3Hj";
      c.run(["sh", "-ec", `install -d -m 0700 /home/other/.hermes && printf 'OTHER_SERVICE_TOKEN=${otherKey}\\n' > /home/other/.hermes/.env.new && mv /home/other/.hermes/.env.new /home/other/.hermes/.env`], { user: "other" });
      await waitUntil(() => exists("/run/media-outbox-watch/hermes-env-1"), "the watch's copy of other's new .env", 20_000);
      c.run(["sh", "-c", `printf 'notes: ${otherKey}\\n' > /srv/cycle/drop/.other.txt.part && mv /srv/cycle/drop/.other.txt.part /srv/cycle/drop/other.txt`], { user: "agent" });
      await waitUntil(() => exists("/srv/cycle/drop/other.txt.media") || exists("/srv/cycle/drop/other.txt.refused"), "the watch's receipt");
      expect(out("cat /srv/cycle/drop/other.txt.refused", { user: "agent" })).toContain("OTHER_SERVICE_TOKEN (credential hermes-env-1)");
    } finally {
      // Whatever failed above, the next tests start from a machine without this install, with the agent's .env and without other's.
      uninstalled = mo(["uninstall", "systemd", "--remove-user"]);
      if (exists(`${dotEnv}.saved`)) c.run(["mv", `${dotEnv}.saved`, dotEnv]);
      c.run(["rm", "-rf", "/home/other/.hermes", "/home/agent/.hermes/auth.json", "/home/agent/auth-leak.txt", "/home/agent/.hermes/mcp-tokens", "/home/agent/mcp-leak.txt", "/home/agent/.docker", "/home/agent/docker-leak.txt"]);
    }
    expect(uninstalled.code, uninstalled.stderr).toBe(0);
    expect(uninstalled.stdout).toContain("removed agent from group media-outbox");
    expect(uninstalled.stdout).toContain("removed user media-outbox");
    expect(uninstalled.stderr).toContain("kept /srv/cycle/outbox and /srv/cycle/state");
    expect(sh("getent passwd media-outbox").code).toBe(2);
    expect(sh("getent group media-outbox").code).toBe(2);
    expect(groupsOf("agent")).toEqual(["agent"]);
    expect(groupsOf("other")).toEqual(["other"]);
    expect(show("media-outbox-watch.service", "LoadState").LoadState).toBe("not-found");
    expect(exists("/srv/cycle/outbox/chart.png")).toBe(true);
    expect(unitTree()).toEqual(before);
    c.run(["sh", "-c", "rm -rf /srv/cycle /etc/mo-test"]);
  });

  it("creates the service user and group, the agent's membership, the directories, the config and the socket, each as the contract says", () => {
    const r = mo(["install", "systemd", "--system", "--gate", "--agent-user", "agent", "--strict", "--restart"]);
    expect(r.code, r.stderr).toBe(0);
    for (const line of ["created group media-outbox", "created system user media-outbox (no home, no login shell)", "added agent to group media-outbox", "ran: systemctl enable --now media-outbox-gate.socket"]) {
      expect(r.stdout).toContain(line);
    }
    const [name, , , , , home, shell] = out("getent passwd media-outbox").split(":");
    expect([name, home, shell]).toEqual(["media-outbox", "/nonexistent", "/usr/sbin/nologin"]);
    expect(exists("/nonexistent")).toBe(false);
    expect(Number(out("id -u media-outbox"))).toBeLessThan(1000);
    expect(groupsOf("agent")).toEqual(["agent", "media-outbox"]);
    expect(groupsOf("other")).toEqual(["other"]);
    expect(statOf("/srv/media-outbox")).toBe("root:root 755 directory");
    expect(statOf(OUTBOX)).toBe("media-outbox:media-outbox 750 directory");
    expect(statOf(STATE)).toBe("media-outbox:media-outbox 700 directory");
    expect(statOf("/etc/media-outbox/config.json")).toBe("root:root 644 regular file");
    expect(JSON.parse(out("cat /etc/media-outbox/config.json"))).toEqual({ socket: SOCKET });
    expect(statOf("/run/media-outbox")).toBe("root:root 755 directory");
    expect(statOf(SOCKET)).toBe("media-outbox:media-outbox 660 socket");
    // Socket activation: listening, and the gate itself not started yet.
    expect(show("media-outbox-gate.socket", "ActiveState", "UnitFileState")).toEqual({ ActiveState: "active", UnitFileState: "enabled" });
    expect(show("media-outbox-gate.service", "ActiveState").ActiveState).toBe("inactive");
    expect(show("media-outbox-janitor.timer", "ActiveState", "UnitFileState", "Unit")).toEqual({ ActiveState: "active", UnitFileState: "enabled", Unit: "media-outbox-janitor.service" });
  });

  it("writes gate units that systemd-analyze verify accepts and scores 2.0 or better; the agent's Hermes .env is copied for the gate as the agent", () => {
    const units = ["media-outbox-gate.socket", "media-outbox-gate.service", "media-outbox-gate-secrets.path", "media-outbox-gate-secrets-new.path", "media-outbox-gate-secrets.service", "media-outbox-janitor.service", "media-outbox-janitor.timer"];
    const v = c.exec(["systemd-analyze", "verify", "--man=no", ...units.map((u) => `/etc/systemd/system/${u}`)]);
    expect(v.stderr).toBe("");
    expect(v.code).toBe(0);
    for (const unit of ["media-outbox-gate.service", "media-outbox-janitor.service"]) {
      const s = c.exec(["systemd-analyze", "security", "--offline=yes", `/etc/systemd/system/${unit}`]);
      const score = Number(/Overall exposure level for \S+: ([\d.]+)/.exec(s.stdout)?.[1]);
      expect(score, s.stdout + s.stderr).toBeLessThanOrEqual(2.0);
    }
    const gate = show("media-outbox-gate.service", "User", "Group", "Restart", "Environment", "UMask");
    expect(gate.User).toBe("media-outbox");
    expect(gate.Group).toBe("media-outbox");
    expect(gate.Restart).toBe("always");
    expect(gate.UMask).toBe("0027");
    expect(gate.Environment.split(" ")).toEqual(expect.arrayContaining([`MEDIA_OUTBOX_DIR=${OUTBOX}`, `MEDIA_OUTBOX_STATE_DIR=${STATE}`]));
    // The agent's .env is copied for the gate at each start, read as the agent (never LoadCredential=: systemd reads those as root).
    const unit = out("systemctl cat media-outbox-gate.service").split("\n");
    expect(unit).toContain(`ExecStartPre=-+${NODE} ${BIN} gate-secrets --into ${SECRETS} --watch-profiles ${gateSecretWords}`);
    expect(unit.filter((l) => l.startsWith("LoadCredential"))).toEqual([]);
    // And again whenever the agent changes it, by the same command (the watch's copy too, when it runs).
    // The files there at install by one path unit, those not there yet (the stores) by another: their directories' events would drop the first's.
    for (const unit of ["media-outbox-gate-secrets.path", "media-outbox-gate-secrets-new.path"]) expect(show(unit, "ActiveState", "UnitFileState")).toEqual({ ActiveState: "active", UnitFileState: "enabled" });
    expect(out("systemctl cat media-outbox-gate-secrets.path").split("\n").filter((l) => l.startsWith("PathChanged="))).toEqual(["PathChanged=/home/agent/.hermes/.env", `PathChanged=/etc/systemd/system/${GATEWAY}`]);
    expect(out("systemctl cat media-outbox-gate-secrets-new.path").split("\n").filter((l) => l.startsWith("PathChanged="))).toEqual([
      ...[...HERMES_STORES, ...HERMES_STORE_DIRS].map((store) => `PathChanged=/home/agent/.hermes/${store}`),
      ...USER_HOME_SECRET_FILES.map((store) => `PathChanged=/home/agent/${store}`),
      // The profiles directory (none yet): a profile made there is copied, and its files watched by instances of the template below.
      "PathChanged=/home/agent/.hermes/profiles",
    ]);
    expect(out("systemctl cat media-outbox-gate-secrets.service").split("\n").filter((l) => l.startsWith("ExecStart"))).toEqual([`ExecStart=-+${NODE} ${BIN} gate-secrets --into ${SECRETS} --watch-profiles ${gateSecretWords}`]);
    expect(out("systemctl cat media-outbox-gate-secrets-watch@home-agent-.hermes-profiles-x.path").split("\n").filter((l) => /^(PathChanged|Unit)=/.test(l))).toEqual(["PathChanged=%f", "Unit=media-outbox-gate-secrets.service"]);
    // A gate that keeps failing is started again, never left stopped for good.
    expect(show("media-outbox-gate.service", "StartLimitIntervalUSec").StartLimitIntervalUSec).toBe("0");
    expect(show("media-outbox-janitor.service", "User").User).toBe("media-outbox");
  });

  it("gives the gateway unit an effective environment that lists the gate's outbox, and its restarted process the gate's group", () => {
    const env = show(GATEWAY, "Environment").Environment.split(" ");
    expect(env).toEqual(expect.arrayContaining([`HERMES_MEDIA_ALLOW_DIRS=${OUTBOX}`, "HERMES_MEDIA_DELIVERY_STRICT=1", "HERMES_MEDIA_TRUST_RECENT_FILES=0"]));
    const pid = Number(show(GATEWAY, "MainPID").MainPID);
    expect(pid).toBeGreaterThan(0);
    // --restart: the running gateway has the outbox and the group now, not at its next restart.
    expect(out(`tr '\\0' '\\n' < /proc/${pid}/environ`).split("\n")).toContain(`HERMES_MEDIA_ALLOW_DIRS=${OUTBOX}`);
    const gid = out("getent group media-outbox | cut -d: -f3");
    expect(out(`sed -n 's/^Groups:\\s*//p' /proc/${pid}/status`).split(/\s+/)).toContain(gid);
    // The gateway's environment is its agents': nothing there may keep their prepare in local mode.
    expect(env.filter((e) => e.startsWith("MEDIA_OUTBOX_"))).toEqual([]);
    expect(gatewayEnvironment().filter((e) => e.startsWith("MEDIA_OUTBOX_"))).toEqual([]);
  });

  it("as the agent, nothing in the outbox, staging, ledger or quarantine can be created, renamed, appended to or deleted", () => {
    // What the gate keeps there, made as the gate would (its user, its umask).
    c.run(
      ["sh", "-ec", `umask 027
for d in staging ledger quarantine; do mkdir -p ${STATE}/$d; chmod 700 ${STATE}/$d; done
printf 'published' > ${OUTBOX}/fixture.txt
printf 'half' > ${STATE}/staging/fixture.part
printf '{}\\n' > ${STATE}/ledger/fixture.jsonl
printf 'caught' > ${STATE}/quarantine/fixture`],
      { user: "media-outbox" },
    );
    expect(out(`cat ${OUTBOX}/fixture.txt`, { user: "agent" })).toBe("published");
    const results = attack("agent", {
      [OUTBOX]: `${OUTBOX}/fixture.txt`,
      [`${STATE}/staging`]: `${STATE}/staging/fixture.part`,
      [`${STATE}/ledger`]: `${STATE}/ledger/fixture.jsonl`,
      [`${STATE}/quarantine`]: `${STATE}/quarantine/fixture`,
      [STATE]: `${STATE}/ledger`,
    });
    expectAllRefused(results);
    expect(Object.keys(results)).toHaveLength(5);
    // The refusals were real: every fixture is still there, unchanged.
    expect(out(`cat ${OUTBOX}/fixture.txt ${STATE}/staging/fixture.part ${STATE}/ledger/fixture.jsonl ${STATE}/quarantine/fixture`)).toBe("publishedhalf{}\ncaught");
    expect(out(`ls -A ${OUTBOX}`)).toBe("fixture.txt");
  });

  it("lets nobody but root and the named agents connect: another user's connect(2) fails with EACCES", () => {
    const connect = `require("net").connect(${JSON.stringify(SOCKET)}).on("connect", () => { console.log("connected"); process.exit(0); }).on("error", (e) => { console.log(e.code); process.exit(0); })`;
    expect(out(`${NODE} -e '${connect}'`, { user: "other" })).toBe("EACCES");
    expect(show("media-outbox-gate.service", "ActiveState").ActiveState).toBe("inactive");
  });

  it("starts the gate on the agent's first prepare (socket activation), as the service user, and prints the gate's MEDIA: line", () => {
    expect(show("media-outbox-gate.service", "ActiveState").ActiveState).toBe("inactive");
    const r = mo(["prepare", "/home/agent/chart.png"], { user: "agent" });
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe(`MEDIA:${OUTBOX}/chart.png\n`);
    expect(r.code).toBe(0);
    expect(show("media-outbox-gate.service", "ActiveState").ActiveState).toBe("active");
    expect(out(`stat -c %U /proc/${gatePid()}`)).toBe("media-outbox");
    // gate-secrets copied the agent's Hermes .env for the gate, read as the agent (the service user cannot read the file itself).
    expect(out(`cat ${SECRETS}/hermes-env-0`)).toBe(DOT_ENV);
    expect(statOf(`${SECRETS}/hermes-env-0`)).toBe("media-outbox:media-outbox 400 regular file");
    expect(statOf(SECRETS)).toBe("media-outbox:media-outbox 700 directory");
    expect(sh("cat /home/agent/.hermes/.env", { user: "media-outbox" }).code).not.toBe(0);
    // The published file: the service user's, readable by the agent's group, the same bytes.
    expect(out(`stat -c '%U:%G %a' ${OUTBOX}/chart.png`)).toBe("media-outbox:media-outbox 640");
    expect(out(`sha256sum < ${OUTBOX}/chart.png`, { user: "agent" })).toBe(out("sha256sum < /home/agent/chart.png"));
    // The gateway, running as the agent with the unit's environment, delivers it.
    const hash = out("sha256sum < /home/agent/chart.png").split(" ")[0];
    expect(out(`${NODE} ${c.work}/upload.js 'MEDIA:${OUTBOX}/chart.png'`)).toBe(`delivered ${hash}`);
    // …and nothing of it can be changed by the agent.
    expectAllRefused(attack("agent", { [OUTBOX]: `${OUTBOX}/chart.png` }));
  });

  it("status describes the gate's outbox: as root all of it, with the janitor unit's policy; as the agent the outbox, not the state", () => {
    const asRoot = mo(["status", "--json"]);
    expect(asRoot.stderr).toBe("");
    expect(asRoot.code).toBe(0);
    const s = JSON.parse(asRoot.stdout);
    expect(s.gate).toMatchObject({ socket: SOCKET, from: "system config /etc/media-outbox/config.json", user: "media-outbox", answers: true, outbox_from: "gate", policy_from: "media-outbox-janitor.service", seen: "all", notes: [] });
    expect(s.outbox).toMatchObject({ path: OUTBOX, exists: true, safe: true });
    // What the outbox holds here (chart.png, and what earlier tests left): the files status counts.
    expect(s.files.files).toBe(Number(out(`find ${OUTBOX} -maxdepth 1 -type f | wc -l`)));
    expect(s.files.files).toBeGreaterThan(0);
    expect(s.staging.path).toBe(`${STATE}/staging`);
    expect(s.ledger).toMatchObject({ path: `${STATE}/ledger`, exists: true });
    const asAgent = mo(["status", "--json"], { user: "agent" });
    expect(asAgent.code).toBe(0);
    const a = JSON.parse(asAgent.stdout);
    expect(a.gate).toMatchObject({ user: "media-outbox", answers: true, policy_from: "media-outbox-janitor.service", seen: "outbox", unseen: expect.stringContaining("sudo media-outbox status") });
    // The agent may not read the gate's ledger: which files prepare did not publish (kept by the janitor, never expiring) is unknown to it, not guessed.
    type Files = { unpublished: number | null; oldest: { expires: string | null } | null; newest: { expires: string | null } | null };
    const withoutLedger = (f: Files) => ({ ...f, unpublished: null, oldest: f.oldest && { ...f.oldest, expires: null }, newest: f.newest && { ...f.newest, expires: null } });
    expect(a.files.unpublished).toBeNull();
    expect(withoutLedger(a.files)).toEqual(withoutLedger(s.files));
    expect(a).toMatchObject({ staging: null, ledger: null, janitor: { next_run: null } });
  });

  it("keeps the agent from signalling or stopping the gate", () => {
    const pid = gatePid();
    expect(pid).toBeGreaterThan(0);
    const kill = `try { process.kill(${pid}, "SIGTERM"); console.log("ok"); } catch (e) { console.log(e.code); }`;
    expect(out(`${NODE} -e '${kill}'`, { user: "agent" })).toBe("EPERM");
    const stop = c.exec(["systemctl", "stop", "media-outbox-gate.service"], { user: "agent" });
    expect(stop.code).not.toBe(0);
    const socket = c.exec(["systemctl", "stop", "media-outbox-gate.socket"], { user: "agent" });
    expect(socket.code).not.toBe(0);
    expect(gatePid()).toBe(pid);
    expect(show("media-outbox-gate.socket", "ActiveState").ActiveState).toBe("active");
  });

  it("refuses a prepare by a user not named at install with a clear error (exit 2), never a private outbox", () => {
    const r = mo(["prepare", "/home/other/chart.png"], { user: "other" });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toMatch(/EACCES|permission|may not|not allowed/i);
    expect(exists("/home/other/.hermes/media_outbox")).toBe(false);
  });

  it("brings the gate back after SIGKILL, and the next prepare succeeds", async () => {
    const pid = gatePid();
    expect(pid, "the gate is not running").toBeGreaterThan(0);
    const restarts = Number(show("media-outbox-gate.service", "NRestarts").NRestarts);
    c.run(["kill", "-KILL", String(pid)]);
    await waitUntil(() => {
      const s = show("media-outbox-gate.service", "ActiveState", "MainPID", "NRestarts");
      return s.ActiveState === "active" && Number(s.MainPID) > 0 && Number(s.MainPID) !== pid && Number(s.NRestarts) > restarts;
    }, "the gate to come back");
    const r = mo(["prepare", "/home/agent/photo.png"], { user: "agent" });
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe(`MEDIA:${OUTBOX}/photo.png\n`);
    expect(r.code).toBe(0);
  });

  it("knows the agent's .env values, and whatever the agent puts in the .env's place (a link to /etc/shadow, a FIFO, nothing), the gate starts and root reads nothing for it", async () => {
    const dotEnv = "/home/agent/.hermes/.env";
    /** Kills the gate (as root) and waits for systemd to start it again. */
    const restartGate = async () => {
      const pid = gatePid();
      c.run(["kill", "-KILL", String(pid)]);
      await waitUntil(() => {
        const s = show("media-outbox-gate.service", "ActiveState", "MainPID");
        return s.ActiveState === "active" && Number(s.MainPID) > 0 && Number(s.MainPID) !== pid;
      }, "the gate to come back");
    };
    // The gate knows the value from the .env alone (no pattern would refuse it).
    c.run(["sh", "-c", `printf 'notes: ${KNOWN}\\n' > /home/agent/leak.txt`], { user: "agent" });
    const leak = mo(["prepare", "/home/agent/leak.txt"], { user: "agent" });
    expect(leak.code).toBe(1);
    expect(leak.stderr).toContain("MY_CUSTOM_SERVICE_KEY (credential hermes-env-0)");
    c.run(["cp", "-p", dotEnv, "/root/agent-env.saved"]);
    try {
      for (const [what, script] of [
        ["a link to /etc/shadow", `rm -f ${dotEnv} && ln -s /etc/shadow ${dotEnv}`],
        ["a FIFO", `rm -f ${dotEnv} && mkfifo ${dotEnv}`],
        ["nothing", `rm -f ${dotEnv}`],
      ]) {
        c.run(["sh", "-c", script!], { user: "agent" });
        await restartGate();
        expect(exists(`${SECRETS}/hermes-env-0`), what).toBe(false);
        const r = mo(["prepare", "/home/agent/photo.png"], { user: "agent" });
        expect(r.stdout, what).toBe(`MEDIA:${OUTBOX}/photo.png\n`);
      }
      const journal = out("journalctl -u media-outbox-gate.service -o cat --no-pager");
      expect(journal).toContain("gate-secrets: skipped /home/agent/.hermes/.env (read as agent): its user may not read it");
      expect(journal).toContain("gate-secrets: skipped /home/agent/.hermes/.env (read as agent): it is not a regular file");
      expect(journal).toContain("gate-secrets: skipped /home/agent/.hermes/.env (read as agent): it does not exist");
      // The stores the agent does not have (none here) are no news: not named, counted in the last line.
      expect(journal).not.toMatch(/skipped \S+\.json/);
      // The stores, and the profiles directory (no profile there); the gateway's unit (followed, there: taken).
      const optional = HERMES_STORES.length + HERMES_STORE_DIRS.length + USER_HOME_SECRET_FILES.length + 1;
      expect(journal).toContain(`1 of ${2 + optional} secret file(s) copied for the gate (${optional} optional store(s) not there)`);
      // doctor (as root) names the .env the gate no longer knows; a warning: the gate works.
      const doctor = JSON.parse(mo(["doctor", "--json", "--no-probe"]).stdout) as { checks: { check: string; status: string; message: string }[] };
      expect(doctor.checks.find((x) => x.check === "gate secrets")).toMatchObject({ status: "warn", message: expect.stringContaining(`${dotEnv} (not there)`) });
    } finally {
      c.run(["sh", "-c", `rm -f ${dotEnv} && mv /root/agent-env.saved ${dotEnv}`]);
    }
    await restartGate();
    expect(out(`cat ${SECRETS}/hermes-env-0`)).toBe(DOT_ENV);
    expect(mo(["prepare", "/home/agent/leak.txt"], { user: "agent" }).stderr).toContain("MY_CUSTOM_SERVICE_KEY (credential hermes-env-0)");
  });

  it("knows a value the agent adds to its .env within seconds, without a restart of the gate (media-outbox-gate-secrets.path), and keeps the copy whole meanwhile", async () => {
    const dotEnv = "/home/agent/.hermes/.env";
    const pid = gatePid();
    const rotated = "Vw3Jr8Kq2Lz6Xn9Tb4Hm";
    c.run(["sh", "-c", `printf 'notes: ${rotated}\\n' > /home/agent/rotated.txt`], { user: "agent" });
    // Not a secret yet: no pattern knows it.
    expect(mo(["prepare", "/home/agent/rotated.txt"], { user: "agent" }).stdout).toBe(`MEDIA:${OUTBOX}/rotated.txt\n`);
    c.run(["rm", "-f", `${OUTBOX}/rotated.txt`]);
    c.run(["cp", "-p", dotEnv, "/root/agent-env.saved"]);
    try {
      // As an editor saves it: a new file renamed over the old one.
      c.run(["sh", "-c", `cp ${dotEnv} ${dotEnv}.new && printf '\\nMY_ROTATED_KEY=${rotated}\\n' >> ${dotEnv}.new && mv ${dotEnv}.new ${dotEnv}`], { user: "agent" });
      await waitUntil(() => out(`cat ${SECRETS}/hermes-env-0`).includes(rotated), "the gate's copy of the changed .env", 20_000);
      const r = mo(["prepare", "/home/agent/rotated.txt"], { user: "agent" });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("MY_ROTATED_KEY (credential hermes-env-0)");
      expect(exists(`${OUTBOX}/rotated.txt`)).toBe(false);
      // Nothing staged is left (an earlier test's fixture aside).
      expect(out(`ls -A ${STATE}/staging`).split("\n").filter((f) => f !== "" && f !== "fixture.part")).toEqual([]);
      // The old values too: the copy is the whole new file.
      expect(mo(["prepare", "/home/agent/leak.txt"], { user: "agent" }).stderr).toContain("MY_CUSTOM_SERVICE_KEY (credential hermes-env-0)");
      expect(gatePid()).toBe(pid);
      expect(out(`ls -A ${SECRETS}`).split("\n")).toEqual(["hermes-env-0"]);
      expect(out(`stat -c '%U %a' ${SECRETS}/hermes-env-0`)).toBe("media-outbox 400");
    } finally {
      c.run(["sh", "-c", `rm -f ${dotEnv} && mv /root/agent-env.saved ${dotEnv}`]);
    }
    await waitUntil(() => !out(`cat ${SECRETS}/hermes-env-0`).includes(rotated), "the copy of the restored .env", 20_000);
    expect(out(`cat ${SECRETS}/hermes-env-0`)).toBe(DOT_ENV);
    // Stopped, doctor says a changed .env waits for the gate's next start, and how to start it again.
    c.run(["systemctl", "stop", "media-outbox-gate-secrets.path"]);
    try {
      const doctor = JSON.parse(mo(["doctor", "--json", "--no-probe"]).stdout) as { checks: { check: string; status: string; message: string; fix?: string }[] };
      expect(doctor.checks.find((x) => x.check === "gate secrets")).toMatchObject({ status: "warn", message: expect.stringContaining("media-outbox-gate-secrets.path is inactive"), fix: "systemctl restart media-outbox-gate-secrets.path" });
    } finally {
      c.run(["systemctl", "start", "media-outbox-gate-secrets.path"]);
    }
  });

  it("knows a Hermes profile made after install (`hermes profile create`: its directory, then at once its .env) without install again or a restart of the gate, refusing its value and naming the copy of its .env; a .env written long after its directory, and changed later, too; forgets the profile when it goes", async () => {
    const profiles = "/home/agent/.hermes/profiles";
    const late = `${profiles}/late`;
    const slow = `${profiles}/slow-one`;
    const lateKey = "Pl3Kd8Wq2Zx7Vn4Tb9Hm";
    const slowKey = "Ps6Jt1Wm8Qz3Kx7Lb2Nv";
    const rotatedKey = "Pr9Vd4Kq7Wz2Lx5Tb8Hn";
    const pid = gatePid();
    expect(pid, "the gate is not running").toBeGreaterThan(0);
    const leaks: Record<string, string> = { [lateKey]: "leak-late.txt", [slowKey]: "leak-slow.txt", [rotatedKey]: "leak-rotated.txt" };
    c.run(["sh", "-c", Object.entries(leaks).map(([key, file]) => `printf 'notes: ${key}\\n' > /home/agent/${file}`).join(" && ")], { user: "agent" });
    // Not secrets yet: no pattern knows them.
    expect(mo(["prepare", `/home/agent/${leaks[lateKey]}`], { user: "agent" }).stdout).toBe(`MEDIA:${OUTBOX}/${leaks[lateKey]}\n`);
    c.run(["rm", "-f", `${OUTBOX}/${leaks[lateKey]}`]);
    /** prepare (as the agent) of the file holding `key`: refused, naming `named`, never printing the value. */
    const refused = (key: string, named: string) => {
      const r = mo(["prepare", `/home/agent/${leaks[key]}`], { user: "agent" });
      expect(r.code, r.stdout + r.stderr).toBe(1);
      expect(r.stderr).toContain("secret_detected");
      expect(r.stderr).toContain(named);
      expect(r.stdout + r.stderr).not.toContain(key);
      expect(exists(`${OUTBOX}/${leaks[key]}`)).toBe(false);
    };
    // The profiles' watches (the gateway's drop-in directory is watched too, all along).
    const watchUnits = () => out("systemctl list-units --all --plain --no-legend --full --type=path 'media-outbox-gate-secrets-watch@home-agent-.hermes-profiles*'").split("\n").filter((l) => l !== "").map((l) => l.split(/\s+/));
    try {
      try {
        // As `hermes profile create` makes one (hermes_cli/profiles.py before it built profiles in a staging directory): its directories, then its .env.
        c.run(["sh", "-ec", `mkdir -p ${late}/memories ${late}/sessions ${late}/skills && printf '# Per-profile secrets\\nLATE_SERVICE_TOKEN=${lateKey}\\n' > ${late}/.env && chmod 600 ${late}/.env`], { user: "agent" });
        const lateCopy = `${PROFILES_COPY}-profile.late.env`;
        await waitUntil(() => exists(`${SECRETS}/${lateCopy}`), "the gate's copy of the new profile's .env", 30_000);
        refused(lateKey, `LATE_SERVICE_TOKEN (the .env of Hermes profile late, credential ${lateCopy})`);
        expect(gatePid()).toBe(pid);
        expect(statOf(`${SECRETS}/${lateCopy}`)).toBe("media-outbox:media-outbox 400 regular file");
        // Its directory, .env and store directories are watched, by instances of the template gate-secrets started.
        const lateWatches = [late, `${late}/.env`, `${late}/mcp-tokens`, `${late}/google_chat_user_tokens`].map((p) => `media-outbox-gate-secrets-watch@${out(`systemd-escape --path '${p}'`)}.path`);
        await waitUntil(() => lateWatches.every((u) => watchUnits().some(([name, , active]) => name === u && active === "active")), "the watches of the new profile");

        // A profile whose .env is written long after its directory (by hand, with an editor's rename): copied once written.
        c.run(["mkdir", "-p", slow], { user: "agent" });
        await waitUntil(() => watchUnits().some(([name, , active]) => name === `media-outbox-gate-secrets-watch@${out(`systemd-escape --path '${slow}/.env'`)}.path` && active === "active"), "the watch of the slow profile's .env");
        await new Promise((r) => setTimeout(r, 1500));
        c.run(["sh", "-ec", `printf 'SLOW_SERVICE_TOKEN=${slowKey}\\n' > ${slow}/.env.new && mv ${slow}/.env.new ${slow}/.env`], { user: "agent" });
        const slowCopy = `${PROFILES_COPY}-profile.slow-one.env`;
        await waitUntil(() => exists(`${SECRETS}/${slowCopy}`), "the gate's copy of the slow profile's .env", 30_000);
        refused(slowKey, `SLOW_SERVICE_TOKEN (the .env of Hermes profile slow-one, credential ${slowCopy})`);

        // A key added later to a profile's .env (as `hermes -p late auth add` writes it): copied again.
        c.run(["sh", "-ec", `cp ${late}/.env ${late}/.env.tmp && printf 'ROTATED_SERVICE_TOKEN=${rotatedKey}\\n' >> ${late}/.env.tmp && mv ${late}/.env.tmp ${late}/.env`], { user: "agent" });
        await waitUntil(() => out(`cat ${SECRETS}/${lateCopy}`).includes(rotatedKey), "the gate's copy of the changed profile .env", 30_000);
        refused(rotatedKey, `ROTATED_SERVICE_TOKEN (the .env of Hermes profile late, credential ${lateCopy})`);
        expect(gatePid()).toBe(pid);

        // doctor knows them for the gate's: no 'not named', no watch idle; only that the profiles directory, made after install, is watched among the missing files.
        const doctor = JSON.parse(mo(["doctor", "--json", "--no-probe"]).stdout) as { checks: { check: string; status: string; message: string }[] };
        expect(doctor.checks.filter((x) => x.check === "gate secrets").map((x) => x.message)).toEqual([
          `${profiles}: made after install: copied for the gate when made, but a later change to them can go unseen until the gate's next start`,
        ]);

        // The gate started again: its own start copies the profiles and starts their watches (from its ExecStartPre, as root), saying nothing of them.
        c.run(["kill", "-KILL", String(pid)]);
        await waitUntil(() => {
          const s = show("media-outbox-gate.service", "ActiveState", "MainPID");
          return s.ActiveState === "active" && Number(s.MainPID) > 0 && Number(s.MainPID) !== pid;
        }, "the gate to come back");
        refused(lateKey, lateCopy);
        const journal = out("journalctl -u media-outbox-gate.service -o cat --no-pager").split("\n");
        expect(journal.filter((l) => l.includes("gate-secrets:") && (l.includes("systemctl") || l.includes(profiles)))).toEqual([]);
      } finally {
        // `hermes profile delete`: the copies go, and the watches.
        c.run(["rm", "-rf", late, slow], { user: "agent" });
      }
      await waitUntil(() => !out(`ls -A ${SECRETS}`).includes("-profile."), "the copies of the profiles gone", 30_000);
      await waitUntil(() => watchUnits().every(([, , active]) => active !== "active"), "the watches of the profiles gone", 30_000);
      expect(mo(["prepare", `/home/agent/${leaks[lateKey]}`], { user: "agent" }).stdout).toBe(`MEDIA:${OUTBOX}/${leaks[lateKey]}\n`);
    } finally {
      // The next tests start without a profiles directory (made after install: doctor would say so).
      c.run(["sh", "-c", `rm -rf ${profiles} /home/agent/leak-*.txt ${OUTBOX}/leak-*.txt`]);
    }
  });

  it("knows the Codex CLI's tokens where a CODEX_HOME the agent sets in its Hermes .env after install puts them, without install again or a restart of the gate; a token the CLI writes later too; forgets them when the setting goes", async () => {
    const dotEnv = "/home/agent/.hermes/.env";
    const codexHome = "/home/agent/codex-late";
    const copy = `${SECRETS}/hermes-env-0-codex-home-auth.json`;
    const firstKey = "Cl4Kd9Wq2Zx7Vn3Tb8Hm";
    const laterKey = "Cr8Vd3Kq6Wz1Lx4Tb7Hn";
    const leaks: Record<string, string> = { [firstKey]: "leak-codex-first.txt", [laterKey]: "leak-codex-later.txt" };
    const pid = gatePid();
    expect(pid, "the gate is not running").toBeGreaterThan(0);
    c.run(["sh", "-c", Object.entries(leaks).map(([key, file]) => `printf 'notes: ${key}\\n' > /home/agent/${file}`).join(" && ")], { user: "agent" });
    // Not a secret yet: no pattern knows it.
    expect(mo(["prepare", `/home/agent/${leaks[firstKey]}`], { user: "agent" }).stdout).toBe(`MEDIA:${OUTBOX}/${leaks[firstKey]}\n`);
    c.run(["rm", "-f", `${OUTBOX}/${leaks[firstKey]}`]);
    /** prepare (as the agent) of the file holding `key`: refused, naming the copy, never printing the value. */
    const refused = (key: string) => {
      const r = mo(["prepare", `/home/agent/${leaks[key]}`], { user: "agent" });
      expect(r.code, r.stdout + r.stderr).toBe(1);
      expect(r.stderr).toContain("tokens.refresh_token (the Codex CLI's auth.json in a gateway's $CODEX_HOME, credential hermes-env-0-codex-home-auth.json)");
      expect(r.stdout + r.stderr).not.toContain(key);
      expect(exists(`${OUTBOX}/${leaks[key]}`)).toBe(false);
    };
    const watch = `media-outbox-gate-secrets-watch@${out(`systemd-escape --path '${codexHome}/auth.json'`)}.path`;
    const watchActive = () => out(`systemctl show -p ActiveState --value '${watch}'`) === "active";
    c.run(["cp", "-p", dotEnv, "/root/agent-env.saved"]);
    try {
      // The Codex CLI logs in there, then the agent points Hermes at it in its .env (an editor's rename).
      c.run(["sh", "-ec", `mkdir -p ${codexHome} && printf '{"tokens": {"refresh_token": "${firstKey}"}}\\n' > ${codexHome}/auth.json && chmod 600 ${codexHome}/auth.json && cp ${dotEnv} ${dotEnv}.new && printf 'CODEX_HOME=~/codex-late\\n' >> ${dotEnv}.new && mv ${dotEnv}.new ${dotEnv}`], { user: "agent" });
      await waitUntil(() => exists(copy), "the gate's copy of the auth.json the .env's CODEX_HOME names", 30_000);
      refused(firstKey);
      expect(statOf(copy)).toBe("media-outbox:media-outbox 400 regular file");
      // Watched by an instance of the template, started by gate-secrets.
      await waitUntil(watchActive, "the watch of the CODEX_HOME's auth.json");
      // A token the CLI writes later (a new file renamed over it): copied through that watch.
      c.run(["sh", "-ec", `printf '{"tokens": {"refresh_token": "${laterKey}"}}\\n' > ${codexHome}/auth.json.tmp && mv ${codexHome}/auth.json.tmp ${codexHome}/auth.json`], { user: "agent" });
      await waitUntil(() => out(`cat ${copy}`).includes(laterKey), "the gate's copy of the rewritten auth.json", 30_000);
      refused(laterKey);
      expect(gatePid()).toBe(pid);
      // doctor knows it for the gate's: no 'set since install'; only its ok line, the copies counted.
      const doctor = JSON.parse(mo(["doctor", "--json", "--no-probe"]).stdout) as { checks: { check: string; message: string }[] };
      expect(doctor.checks.filter((x) => x.check === "gate secrets").map((x) => x.message)).toEqual([secretsKnown()]);
    } finally {
      // The setting goes: the copy goes, and the watch.
      c.run(["sh", "-c", `rm -f ${dotEnv} && mv /root/agent-env.saved ${dotEnv}`]);
    }
    try {
      await waitUntil(() => !exists(copy), "the copy gone with the setting", 30_000);
      await waitUntil(() => !watchActive(), "the watch gone with the setting", 30_000);
      expect(mo(["prepare", `/home/agent/${leaks[laterKey]}`], { user: "agent" }).stdout).toBe(`MEDIA:${OUTBOX}/${leaks[laterKey]}\n`);
      expect(out(`ls -A ${SECRETS}`).split("\n")).toEqual(["hermes-env-0"]);
    } finally {
      c.run(["sh", "-c", `rm -rf ${codexHome} /home/agent/leak-codex-*.txt ${OUTBOX}/leak-codex-*.txt`]);
    }
  });

  it("follows a CODEX_HOME set in a drop-in of the gateway's unit and a HERMES_MANAGED_DIR the agent sets in its Hermes .env after install, without install again or a restart of the gate; refuses, in its journal, a managed .env that sets MEDIA_OUTBOX_DIR, keeping the copies", async () => {
    const dotEnv = "/home/agent/.hermes/.env";
    const dropIn = `/etc/systemd/system/${GATEWAY}.d/50-codex.conf`;
    const codexCopy = `${SECRETS}/${GATEWAY_COPY}-codex-home-auth.json`;
    const managedCopy = `${SECRETS}/${GATEWAY_COPY}-managed.env`;
    const codexKey = "Cu5Kd8Wq3Zx6Vn2Tb9Hm";
    const managedKey = "Mu7Vd2Kq5Wz8Lx3Tb6Hn";
    const laterKey = "Ml3Wd6Kq9Zz2Lx5Tb8Hr";
    const leaks: Record<string, string> = { [codexKey]: "leak-unit-codex.txt", [managedKey]: "leak-managed.txt", [laterKey]: "leak-managed-later.txt" };
    const pid = gatePid();
    expect(pid, "the gate is not running").toBeGreaterThan(0);
    c.run(["sh", "-c", Object.entries(leaks).map(([key, file]) => `printf 'notes: ${key}\\n' > /home/agent/${file}`).join(" && ")], { user: "agent" });
    const refused = (key: string, where: string) => {
      const r = mo(["prepare", `/home/agent/${leaks[key]}`], { user: "agent" });
      expect(r.code, r.stdout + r.stderr).toBe(1);
      expect(r.stderr).toContain(where);
      expect(r.stdout + r.stderr).not.toContain(key);
    };
    c.run(["cp", "-p", dotEnv, "/root/agent-env.saved"]);
    try {
      // The Codex CLI's home, set for the gateway in a drop-in (as systemctl edit writes one): no install again.
      c.run(["sh", "-ec", `install -d -o agent -g agent -m 0700 /srv/codex-unit && printf '{"tokens": {"refresh_token": "${codexKey}"}}\\n' > /srv/codex-unit/auth.json && chown agent:agent /srv/codex-unit/auth.json && printf '[Service]\\nEnvironment=CODEX_HOME=/srv/codex-unit\\n' > ${dropIn}`]);
      await waitUntil(() => exists(codexCopy), "the gate's copy of the auth.json the drop-in's CODEX_HOME names", 30_000);
      refused(codexKey, `the Codex CLI's auth.json in a gateway's $CODEX_HOME, credential ${GATEWAY_COPY}-codex-home-auth.json`);
      // A managed scope the agent points its Hermes at (an editor's rename of its .env).
      c.run(["sh", "-ec", `install -d -m 0755 /srv/managed-late && printf 'MANAGED_SERVICE_TOKEN=${managedKey}\\n' > /srv/managed-late/.env && chmod 644 /srv/managed-late/.env`]);
      c.run(["sh", "-ec", `cp ${dotEnv} ${dotEnv}.new && printf 'HERMES_MANAGED_DIR=/srv/managed-late\\n' >> ${dotEnv}.new && mv ${dotEnv}.new ${dotEnv}`], { user: "agent" });
      await waitUntil(() => exists(managedCopy), "the gate's copy of the managed .env the Hermes .env's HERMES_MANAGED_DIR names", 30_000);
      refused(managedKey, `MANAGED_SERVICE_TOKEN (the managed Hermes scope in a gateway's $HERMES_MANAGED_DIR, credential ${GATEWAY_COPY}-managed.env)`);
      expect(statOf(managedCopy)).toBe("media-outbox:media-outbox 400 regular file");
      const doctor = JSON.parse(mo(["doctor", "--json", "--no-probe"]).stdout) as { checks: { check: string; status: string; message: string }[] };
      expect(doctor.checks.filter((x) => x.check === "gate secrets").map((x) => x.message)).toEqual([secretsKnown()]);
      // The managed .env now keeps the agents' prepare from the gate: not followed (said in the journal), the copy from before kept.
      c.run(["sh", "-ec", `printf 'MANAGED_SERVICE_TOKEN=${laterKey}\\nMEDIA_OUTBOX_DIR=/srv/elsewhere\\n' > /srv/managed-late/.env.new && mv /srv/managed-late/.env.new /srv/managed-late/.env`]);
      const journal = () => out("journalctl -u media-outbox-gate-secrets.service -o cat --no-pager");
      await waitUntil(() => journal().includes("/srv/managed-late/.env, the managed .env the agents of hermes-gateway.service load, sets MEDIA_OUTBOX_DIR"), "gate-secrets' refusal in its journal", 30_000);
      expect(out(`cat ${managedCopy}`)).toContain(managedKey);
      expect(out(`cat ${managedCopy}`)).not.toContain(laterKey);
      const agents = (JSON.parse(mo(["doctor", "--json", "--no-probe"], { user: "agent" }).stdout) as { checks: { check: string; status: string; message: string }[] }).checks.filter((x) => x.check === `agents of ${GATEWAY}`);
      expect(agents.map((x) => [x.status, x.message.split(":")[0]])).toEqual([["fail", "MEDIA_OUTBOX_DIR is set by /srv/managed-late/.env (the managed .env; gate-secrets does not follow it, and keeps its copies from before)"]]);
      expect(gatePid()).toBe(pid);
      for (const key of Object.keys(leaks)) expect(journal()).not.toContain(key);
    } finally {
      c.run(["sh", "-c", `rm -f ${dotEnv} ${dropIn} && mv /root/agent-env.saved ${dotEnv} && systemctl daemon-reload`]);
    }
    try {
      await waitUntil(() => !out(`ls -A ${SECRETS}`).includes(`${GATEWAY_COPY}-`), "the gateway's copies gone with the settings", 30_000);
      expect(out(`ls -A ${SECRETS}`).split("\n")).toEqual(["hermes-env-0"]);
    } finally {
      c.run(["sh", "-c", `rm -rf /srv/codex-unit /srv/managed-late /home/agent/leak-unit-codex.txt /home/agent/leak-managed*.txt`]);
    }
  });

  it("copies a store the agent writes while a copy runs (no path unit watches then), without another change: gate-secrets looks again at what it read, and copies again", async () => {
    const hold = "mo-test-hold.service";
    const go = "/run/mo-test-go";
    const watchDropIns = "/etc/systemd/system/media-outbox-gate-secrets-watch@.path.d";
    const gatewayDropIn = `/etc/systemd/system/${GATEWAY}.d/60-hold.conf`;
    const dockerName = `hermes-env-${1 + HERMES_STORES.length + HERMES_STORE_DIRS.length + USER_HOME_SECRET_FILES.indexOf(".docker/config.json")}-docker-config.json`;
    const registryPassword = "Hq5Wd8Kx2Qm7Zr3Vn6Pc";
    const basic = Buffer.from(`agent:${registryPassword}`).toString("base64");
    const state = (unit: string) => show(unit, "ActiveState").ActiveState;
    const journal = () => out("journalctl -u media-outbox-gate-secrets.service -o cat --no-pager");
    // A watch a copy starts waits for a unit that holds until the test says go: the copy lasts as long as the test wants (no FIFO, no large file).
    c.run(["sh", "-ec", `
install -d -m 0755 ${watchDropIns}
printf '[Unit]\\nWants=${hold}\\nAfter=${hold}\\n' > ${watchDropIns}/50-hold.conf
printf '[Service]\\nType=oneshot\\nTimeoutStartSec=60\\nExecStart=/bin/sh -c "until [ -e ${go} ]; do sleep 0.1; done"\\n' > /etc/systemd/system/${hold}
systemctl daemon-reload
`]);
    try {
      await waitUntil(() => state("media-outbox-gate-secrets.service") === "inactive", "no copy running");
      // A drop-in made for the gateway: its drop-in directory's watch starts a copy, which reads the stores of the agent's home,
      // then (the gateway last on the line) starts a watch for the new drop-in, and is held there.
      c.run(["sh", "-ec", `printf '[Service]\\nEnvironment=MO_TEST_HOLD=1\\n' > ${gatewayDropIn}`]);
      await waitUntil(() => state(hold) === "activating", "the copy held at the new drop-in's watch", 20_000);
      expect(state("media-outbox-gate-secrets.service")).toBe("activating");
      expect(exists(`${SECRETS}/${dockerName}`)).toBe(false);
      // `docker login` now, while the copy runs: ~/.docker/config.json made (renamed into place), which no path unit watches meanwhile.
      c.run(["sh", "-ec", `mkdir -p /home/agent/.docker && printf '{"auths": {"registry.example.com": {"auth": "${basic}"}}}\\n' > /home/agent/.docker/config.json.new && mv /home/agent/.docker/config.json.new /home/agent/.docker/config.json && printf 'notes: ${registryPassword}\\n' > /home/agent/docker-race-leak.txt`], { user: "agent" });
      c.run(["touch", go]);
      // Nothing else changes: the copy that was running looks again at what it read, and copies again.
      await waitUntil(() => exists(`${SECRETS}/${dockerName}`), "the gate's copy of the ~/.docker/config.json written while a copy ran", 20_000);
      expect(journal()).toContain("/home/agent/.docker/config.json changed while the copies were made: copied again (round 2 of at most 3)");
      const leak = mo(["prepare", "/home/agent/docker-race-leak.txt"], { user: "agent" });
      expect(leak.code, leak.stdout + leak.stderr).toBe(1);
      expect(leak.stderr).toContain(`auths.registry.example.com.auth (an agent user's ~/.docker/config.json, credential ${dockerName})`);
      expect(leak.stdout + leak.stderr + journal()).not.toContain(registryPassword);
    } finally {
      // The copy too: gate-secrets keeps the copy of a store that goes (the gate goes on knowing its values), and the next tests count the copies.
      c.run(["sh", "-c", `touch ${go}; rm -rf ${watchDropIns} /etc/systemd/system/${hold} ${gatewayDropIn} /home/agent/.docker /home/agent/docker-race-leak.txt; systemctl daemon-reload; rm -f ${go}`]);
      await waitUntil(() => state("media-outbox-gate-secrets.service") === "inactive", "the copies after the clean-up");
      c.run(["rm", "-f", `${SECRETS}/${dockerName}`]);
    }
  });

  it("doctor: an MCP server's token file made after install is known (its directory is named); a damaged store gives the gate no values", () => {
    const mcp = "/home/agent/.hermes/mcp-tokens";
    c.run(["sh", "-c", `mkdir -p ${mcp} && echo '{}' > ${mcp}/late.json`], { user: "agent" });
    try {
      const doctor = JSON.parse(mo(["doctor", "--json", "--no-probe"]).stdout) as { checks: { check: string; status: string; message: string; fix?: string }[] };
      expect(doctor.checks.filter((x) => x.check === "gate secrets" && x.message.includes("not named in the gate's units"))).toEqual([]);
    } finally {
      c.run(["rm", "-rf", mcp]);
    }
    const after = JSON.parse(mo(["doctor", "--json", "--no-probe"]).stdout) as { checks: { check: string; status: string; message: string }[] };
    expect(after.checks.filter((x) => x.check === "gate secrets")).toEqual([expect.objectContaining({ status: "pass", message: secretsKnown() })]);
    // A store the gate copies that is damaged gives it no values: doctor says which.
    c.run(["sh", "-c", `printf '{"providers": {"nous": ' > /home/agent/.hermes/auth.json`], { user: "agent" });
    try {
      const damaged = JSON.parse(mo(["doctor", "--json", "--no-probe"]).stdout) as { checks: { check: string; status: string; message: string }[] };
      expect(damaged.checks.filter((x) => x.check === "gate secrets" && x.message.startsWith("the gate does not know"))).toEqual([
        expect.objectContaining({ status: "warn", message: "the gate does not know the values of /home/agent/.hermes/auth.json: it is not valid JSON" }),
      ]);
    } finally {
      c.run(["rm", "-f", "/home/agent/.hermes/auth.json"]);
    }
  });

  it("prepare run with the gateway process's own environment (what its agents inherit) goes through the gate", () => {
    c.run(["install", "-o", "agent", "-g", "agent", "-m", "0644", path.join(c.work, "drop.png"), "/home/agent/reply.png"]);
    const env = Object.fromEntries(gatewayEnvironment().map((e) => [e.slice(0, e.indexOf("=")), e.slice(e.indexOf("=") + 1)]));
    const r = mo(["prepare", "/home/agent/reply.png"], { user: "agent", env });
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe(`MEDIA:${OUTBOX}/reply.png\n`);
    expect(out(`stat -c '%U:%G %a' ${OUTBOX}/reply.png`)).toBe("media-outbox:media-outbox 640");
    expect(exists("/home/agent/.hermes/media_outbox")).toBe(false);
  });

  it("check-reply, run as the agent with the gateway's own environment, takes the gate's files and repairs mangled lines; the stand-in gateway delivers every line", () => {
    const env = Object.fromEntries(gatewayEnvironment().map((e) => [e.slice(0, e.indexOf("=")), e.slice(e.indexOf("=") + 1)]));
    // chart.png was published this turn (--media); photo.png is in the gate's outbox, named by a mangled line only.
    const reply = `Here is the chart: \`MEDIA:${OUTBOX}/chart.png\`\nAnd the photo: **MEDIA:${OUTBOX}/photo.png**`;
    const r = mo(["check-reply", "--json", "--media", `${OUTBOX}/chart.png`], { user: "agent", env, input: reply });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as { reply: string; ignored: unknown[]; notes: unknown[] };
    expect(report.ignored).toEqual([]);
    expect(report.notes).toEqual([]);
    expect(report.reply).toBe(`Here is the chart:\nAnd the photo:\nMEDIA:${OUTBOX}/chart.png\nMEDIA:${OUTBOX}/photo.png`);
    for (const name of ["chart.png", "photo.png"]) {
      const hash = out(`sha256sum < ${OUTBOX}/${name}`).split(" ")[0];
      expect(out(`${NODE} ${c.work}/upload.js 'MEDIA:${OUTBOX}/${name}'`)).toBe(`delivered ${hash}`);
    }
  });

  it("doctor, run as the agent, passes every gate check, probe included; run as another user, says who may connect", () => {
    const r = mo(["doctor", "--json"], { user: "agent" });
    const report = JSON.parse(r.stdout) as { ok: boolean; outbox: string; checks: { check: string; status: string; message: string }[] };
    const status = Object.fromEntries(report.checks.map((x) => [x.check, x.status]));
    expect(status, JSON.stringify(report.checks, null, 1)).toMatchObject({
      "gate socket": "pass",
      gate: "pass",
      outbox: "pass",
      "outbox writers": "pass",
      state: "pass",
      [`gateway ${GATEWAY}`]: "pass",
      [`strict ${GATEWAY}`]: "pass",
      "gate units": "pass",
      [`agents of ${GATEWAY}`]: "pass",
      [`allowed roots ${GATEWAY}`]: "pass",
      "gate secrets": "pass",
      probe: "pass",
    });
    // The copies are the gate user's (0700): the agent is told who may count them.
    expect(report.checks.find((x) => x.check === "gate secrets")!.message).toMatch(
      /^media-outbox-gate\.service's gate-secrets line names \d+ file\(s\) to copy the agents' secrets from \(\d+ of them optional stores\); you \(agent\) cannot look into \/run\/media-outbox-gate \(EACCES\), the gate user's: run doctor as root to count the copies there$/,
    );
    expect(report.outbox).toBe(OUTBOX);
    const o = mo(["doctor", "--json", "--no-probe"], { user: "other" });
    expect(o.code).toBe(1);
    const other = JSON.parse(o.stdout) as { checks: { check: string; status: string; message: string }[] };
    expect(other.checks.find((x) => x.check === "gate")).toMatchObject({
      status: "fail",
      message: expect.stringContaining("may not use the gate"),
      // Every agent user and option of the install named again, not only this one.
      fix: expect.stringContaining("run the same install systemd --system --gate again with --agent-user other added to its options"),
    });
    // The agent's Hermes files, which `other` cannot read, are not known to it: never "sets none of them".
    const policy = other.checks.find((x) => x.check === `media policy ${GATEWAY}`);
    expect(policy).toMatchObject({ status: "warn", message: expect.stringContaining("/home/agent/.hermes/.env: not known") });
    expect(policy!.message).not.toContain("/home/agent/.hermes/.env: sets none of them");
    const root = JSON.parse(mo(["doctor", "--json"]).stdout) as { ok: boolean; checks: { check: string; status: string }[] };
    expect(root.checks.filter((x) => x.status === "fail"), JSON.stringify(root.checks, null, 1)).toEqual([]);
  });

  it("doctor fails on an allowed root the agent can write (one its Hermes .env adds), naming it: a way around the gate", () => {
    const dotEnv = "/home/agent/.hermes/.env";
    c.run(["cp", "-p", dotEnv, `${dotEnv}.saved`]);
    try {
      c.run(["sh", "-c", `printf 'HERMES_MEDIA_ALLOW_DIRS=${OUTBOX}:/srv/agent-owned\\n' >> ${dotEnv}`], { user: "agent" });
      const r = mo(["doctor", "--json", "--no-probe"], { user: "agent" });
      expect(r.code, r.stderr).toBe(1);
      const checks = (JSON.parse(r.stdout) as { checks: { check: string; status: string; message: string; fix?: string }[] }).checks;
      const line = checks.find((x) => x.check === `allowed roots ${GATEWAY}`);
      expect(line, JSON.stringify(checks, null, 1)).toMatchObject({ status: "fail" });
      expect(line!.message).toContain(`/srv/agent-owned (set by ${dotEnv}): agent can write into it (agent owns it)`);
      expect(line!.message).not.toContain(`${OUTBOX} (set by`);
      expect(line!.fix).toContain(`remove /srv/agent-owned from HERMES_MEDIA_ALLOW_DIRS in ${dotEnv}`);
    } finally {
      c.run(["mv", `${dotEnv}.saved`, dotEnv]);
    }
    expect(out(`cat ${dotEnv}`)).toBe(DOT_ENV);
  });

  it("runs the janitor timer's service as the service user, and it deletes an expired file and keeps a fresh one", () => {
    // Published through the gate (the janitor deletes only what a ledger record names), one of them long ago.
    c.run(["sh", "-ec", "printf old > /home/agent/expired.txt; printf new > /home/agent/fresh.txt"], { user: "agent" });
    const p = mo(["prepare", "/home/agent/expired.txt", "/home/agent/fresh.txt"], { user: "agent" });
    expect(p.code, p.stderr).toBe(0);
    c.run(["touch", "-d", "30 days ago", `${OUTBOX}/expired.txt`], { user: "media-outbox" });
    expect(show("media-outbox-janitor.timer", "Unit").Unit).toBe("media-outbox-janitor.service");
    c.run(["systemctl", "start", "media-outbox-janitor.service"]);
    expect(show("media-outbox-janitor.service", "Result", "ExecMainStatus", "User")).toEqual({ Result: "success", ExecMainStatus: "0", User: "media-outbox" });
    expect(exists(`${OUTBOX}/expired.txt`)).toBe(false);
    expect(exists(`${OUTBOX}/fresh.txt`)).toBe(true);
    // The journal records who ran it: the janitor's summary line came from the service user's uid.
    const uid = out("id -u media-outbox");
    const lines = c.run(["journalctl", "-u", "media-outbox-janitor.service", "-o", "json", "--no-pager"]).split("\n").filter((l) => l !== "");
    const summary = lines.map((l) => JSON.parse(l) as { MESSAGE?: string; _UID?: string }).filter((e) => typeof e.MESSAGE === "string" && e.MESSAGE.includes("janitor: scanned"));
    expect(summary.length).toBeGreaterThan(0);
    for (const e of summary) expect(e._UID).toBe(uid);
  });

  it("uninstall restores the unit tree byte for byte, stops the watches of the profiles, undoes the agent's membership, keeps the accounts (no --remove-user) and every published file", async () => {
    // A profile whose files are watched (gate-secrets started the instances): uninstall stops them.
    const watchUnits = () => out("systemctl list-units --all --plain --no-legend --full --type=path 'media-outbox-gate-secrets-watch@*'").split("\n").filter((l) => l !== "");
    c.run(["sh", "-ec", "mkdir -p /home/agent/.hermes/profiles/kept && printf 'KEPT_SERVICE_TOKEN=Kp4Wq9Zx2Lv7Nb3Rt8Hd\\n' > /home/agent/.hermes/profiles/kept/.env"], { user: "agent" });
    const profileWatches = () => watchUnits().filter((l) => l.includes("-profiles-"));
    await waitUntil(() => profileWatches().length === 4 && profileWatches().every((l) => l.split(/\s+/)[2] === "active"), "the watches of the profile");
    // The stamp systemd keeps for the janitor timer's Persistent=true (made when the timer started).
    const stamp = "/var/lib/systemd/timers/stamp-media-outbox-janitor.timer";
    expect(exists(stamp)).toBe(true);
    // The gateway's unit removed since install (its drop-in directory, media-outbox's, left): doctor says the gate's copies for it are stale; put back, nothing said.
    const gone = () =>
      (JSON.parse(mo(["doctor", "--json", "--no-probe"]).stdout) as { checks: { check: string; message: string }[] }).checks.filter((x) => x.check === "gate secrets" && x.message.includes("no longer a unit systemd knows")).map((x) => x.message.split(": ")[0]);
    c.run(["sh", "-ec", `mv /etc/systemd/system/${GATEWAY} /root/gateway.unit && systemctl daemon-reload`]);
    expect(show(GATEWAY, "LoadState")).toEqual({ LoadState: "not-found" });
    expect(gone()).toEqual([GATEWAY]);
    c.run(["sh", "-ec", `mv /root/gateway.unit /etc/systemd/system/${GATEWAY} && systemctl daemon-reload`]);
    expect(gone()).toEqual([]);
    const r = mo(["uninstall", "systemd"]);
    expect(r.code, r.stderr).toBe(0);
    expect(exists(stamp)).toBe(false);
    expect(r.stdout).toContain("removed agent from group media-outbox");
    expect(r.stderr).toContain("kept user media-outbox, group media-outbox (uninstall systemd --remove-user removes what install created)");
    expect(unitTree()).toEqual(before);
    expect(groupsOf("agent")).toEqual(["agent"]);
    expect(sh("getent passwd media-outbox").code).toBe(0);
    // /run/media-outbox too: systemd made it for the socket, and leaves it behind when the socket stops.
    // The gate's copies of the agents' secrets too (its runtime directory: systemd removes it with the stopped service).
    for (const p of ["/etc/media-outbox", SOCKET, "/run/media-outbox", SECRETS, "/var/lib/media-outbox/install-manifest.json"]) expect(exists(p), p).toBe(false);
    expect(r.stdout).toContain("removed /run/media-outbox\n");
    expect(show("media-outbox-gate.service", "LoadState", "ActiveState")).toEqual({ LoadState: "not-found", ActiveState: "inactive" });
    expect(out(`ls ${OUTBOX}`).split("\n")).toEqual(expect.arrayContaining(["chart.png", "photo.png", "fixture.txt", "fresh.txt"]));
    expect(r.stdout).toContain("ran: systemctl stop 'media-outbox-gate-secrets-watch@*.path'");
    expect(watchUnits()).toEqual([]);
    // Printed in the order done: systemd told, the files, the accounts, the reload; reset-failed said as it went (a real systemd's list-units).
    const lines = r.stdout.split("\n").filter((l) => l !== "");
    const firstFile = lines.findIndex((l) => /^(removed|restored) \//.test(l));
    expect(lines.slice(0, firstFile).every((l) => /^ran: systemctl (disable --now|stop|clean --what=state) /.test(l)), lines.join("\n")).toBe(true);
    expect(lines.indexOf("removed agent from group media-outbox")).toBeGreaterThan(firstFile);
    expect(lines.slice(-2)).toEqual(["ran: systemctl daemon-reload", expect.stringMatching(/^(nothing to reset: no media-outbox unit is in the failed state|ran: systemctl reset-failed \S.*)$/)]);
    c.run(["rm", "-rf", "/home/agent/.hermes/profiles"]);
    expect(mo(["uninstall", "systemd"]).code).toBe(2);
    // Installed again over the accounts the first install made and uninstall kept: --remove-user keeps them (this install did not make them) and says how to remove them.
    expect(mo(["install", "systemd", "--system", "--gate", "--agent-user", "agent"]).code).toBe(0);
    const again = mo(["uninstall", "systemd", "--remove-user"]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toContain("kept user media-outbox (it existed before install; if nothing else uses it: userdel media-outbox), group media-outbox (it existed before install; if nothing else uses it: groupdel media-outbox)");
    expect(unitTree()).toEqual(before);
  });

  it("shuts the container down leaving no process, cgroup or temporary directory", async () => {
    await c.shutdown();
    expect(c.leftovers()).toEqual({ processes: [], cgroups: [], dirs: [] });
  }, 120_000);
});
