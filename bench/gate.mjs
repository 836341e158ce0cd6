// Benchmark for gate mode: `prepare` through `media-outbox serve` on a Unix
// socket, side by side with its baselines in the same run. Plain Node ESM,
// node: built-ins only. Run: npm run bench -- gate
//
// Targets: a 100 KB PNG through the gate <= 1.15x local-mode prepare; 50 MB
// through the gate <= 1.5x `cp && sha256sum`; 100 concurrent clients all
// answered correctly. Also printed: the gate's RSS idle and under that load,
// and the client's transport measured both ways (node:net, which the client
// uses, against node:http).
import { spawn, spawnSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { makePng } from "./make-png.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const CLI = path.join(ROOT, "bin", "media-outbox");
const SMALL_RUNS = 30;
const BIG_RUNS = 5;
const BIG_MB = 50;
const CLIENTS = 100;
const TRANSPORT_RUNS = 30;

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "mo-bench-gate-"));
let gate;
function cleanup() {
  if (gate && gate.exitCode === null) gate.kill("SIGKILL");
  fs.rmSync(tmp, { recursive: true, force: true });
}
process.on("exit", cleanup);
for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => process.exit(130));

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
/** Each run over the baseline run made just before it: this VM's speed drifts, neighbours see the same speed. */
const pairedRatio = (ours, base) => median(ours.map((t, i) => t / base[i]));
const fmt = (n, d = 1) => n.toFixed(d);

function timeRun(cmd, args, env, input) {
  // No dirty pages from the previous run: prepare's fdatasync would pay for them.
  spawnSync("sync");
  const t0 = process.hrtime.bigint();
  const r = spawnSync(cmd, args, { env, input, stdio: [input ? "pipe" : "ignore", "pipe", "pipe"], maxBuffer: 64 << 20 });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} failed (rc=${r.status}): ${r.stderr}`);
  return { ms, stdout: r.stdout.toString() };
}

const home = path.join(tmp, "home");
fs.mkdirSync(home);
const baseEnv = { PATH: process.env.PATH, HOME: home, HERMES_HOME: path.join(home, ".hermes"), MEDIA_OUTBOX_SYSTEM_CONFIG: path.join(tmp, "none.json") };
const socket = path.join(tmp, "gate.sock");
const gateOutbox = path.join(tmp, "gate", "outbox");
const localOutbox = path.join(home, "outbox");
const gateEnv = { ...baseEnv, MEDIA_OUTBOX_SOCKET: socket };
const inputs = path.join(tmp, "inputs");
fs.mkdirSync(inputs);

function rssMb(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) / 1024 : NaN;
}

async function startGate() {
  const log = fs.openSync(path.join(tmp, "gate.log"), "a");
  gate = spawn(process.execPath, [CLI, "serve", "--socket", socket, "--outbox", gateOutbox, "--max-size", "60MB"], { env: baseEnv, stdio: ["ignore", "ignore", log] });
  for (let i = 0; i < 500 && !fs.readFileSync(path.join(tmp, "gate.log"), "utf8").includes('"ready"'); i++) await new Promise((r) => setTimeout(r, 20));
  if (!fs.existsSync(socket)) throw new Error(`the gate did not start:\n${fs.readFileSync(path.join(tmp, "gate.log"), "utf8")}`);
}

function prepareVia(env, extra, file) {
  const r = timeRun(process.execPath, [CLI, "prepare", ...extra, "--", file], env);
  if (!r.stdout.startsWith("MEDIA:")) throw new Error(`no MEDIA: line: ${r.stdout}`);
  return r;
}

const results = [];
await startGate();
const idleRss = rssMb(gate.pid);

// 1. One 100 KB PNG, through the gate and in local mode (and node -e '' for scale).
{
  const viaGate = [];
  const viaLocal = [];
  const node = [];
  let size = 0;
  // Warm-up, not counted: the gate's first request, the outbox creation, the filesystem cache.
  const warm = path.join(inputs, "warm.png");
  fs.writeFileSync(warm, makePng({ seed: 1 }));
  prepareVia(gateEnv, [], warm);
  prepareVia(baseEnv, ["--outbox", localOutbox], warm);
  for (let i = 0; i < SMALL_RUNS; i++) {
    const png = makePng({ seed: 1000 + i });
    size = png.length;
    const f = path.join(inputs, `small-${i}.png`);
    fs.writeFileSync(f, png);
    node.push(timeRun(process.execPath, ["-e", ""], baseEnv).ms);
    viaLocal.push(prepareVia(baseEnv, ["--outbox", localOutbox], f).ms);
    viaGate.push(prepareVia(gateEnv, [], f).ms);
  }
  results.push({ name: `prepare ${fmt(size / 1024)} KB PNG: gate vs local mode`, ours: `${fmt(median(viaGate))} ms`, base: `${fmt(median(viaLocal))} ms`, ratio: pairedRatio(viaGate, viaLocal), target: 1.15, runs: SMALL_RUNS });
  results.push({ name: `prepare ${fmt(size / 1024)} KB PNG: gate vs node -e ''`, ours: `${fmt(median(viaGate))} ms`, base: `${fmt(median(node))} ms`, ratio: pairedRatio(viaGate, node), target: null, runs: SMALL_RUNS });
  results.push({ name: `prepare ${fmt(size / 1024)} KB PNG: local vs node -e ''`, ours: `${fmt(median(viaLocal))} ms`, base: `${fmt(median(node))} ms`, ratio: pairedRatio(viaLocal, node), target: null, runs: SMALL_RUNS });
}

// 2. 50 MB through the gate against cp && sha256sum (and local mode).
{
  const MiB = 1 << 20;
  const body = Buffer.alloc(MiB);
  for (let i = 0; i < MiB; i++) body[i] = (i * 7919 + (i >> 11)) & 0xff;
  // An ISO-BMFF `ftyp` box (what file-type recognises as MP4), then one `mdat` box holding the rest: a valid file, whose media data the content check skips.
  const mdat = Buffer.alloc(8);
  mdat.writeUInt32BE(BIG_MB * MiB - 24, 0);
  mdat.write("mdat", 4, "latin1");
  const header = Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from("ftypmp42\0\0\0\0mp42isom"), mdat, body.subarray(32)]);
  const src = path.join(inputs, "big.mp4");
  const fd = fs.openSync(src, "w");
  for (let i = 0; i < BIG_MB; i++) fs.writeSync(fd, i === 0 ? header : body);
  fs.closeSync(fd);
  const mb = fs.statSync(src).size / MiB;
  const viaGate = [];
  const viaLocal = [];
  const cp = [];
  for (let i = 0; i < BIG_RUNS; i++) {
    const dst = path.join(tmp, "cp");
    fs.mkdirSync(dst, { recursive: true });
    cp.push(timeRun("sh", ["-c", 'cp "$1" "$2" && sha256sum "$2" >/dev/null', "sh", src, path.join(dst, "big.mp4")], baseEnv).ms);
    fs.rmSync(dst, { recursive: true, force: true });
    viaGate.push(prepareVia(gateEnv, [], src).ms);
    // Each run's copy goes once measured: the next one is published afresh, not reused.
    for (const f of fs.readdirSync(gateOutbox)) if (f.startsWith("big")) fs.unlinkSync(path.join(gateOutbox, f));
    viaLocal.push(prepareVia(baseEnv, ["--outbox", localOutbox, "--max-size", "60MB"], src).ms);
    for (const f of fs.readdirSync(localOutbox)) if (f.startsWith("big")) fs.unlinkSync(path.join(localOutbox, f));
  }
  const rate = (ms) => `${fmt(mb / (ms / 1000))} MB/s (${fmt(ms)} ms)`;
  results.push({ name: `prepare ${fmt(mb, 0)} MB .mp4: gate vs cp && sha256sum`, ours: rate(median(viaGate)), base: rate(median(cp)), ratio: pairedRatio(viaGate, cp), target: 1.5, runs: BIG_RUNS });
  results.push({ name: `prepare ${fmt(mb, 0)} MB .mp4: gate vs local mode`, ours: rate(median(viaGate)), base: rate(median(viaLocal)), ratio: pairedRatio(viaGate, viaLocal), target: null, runs: BIG_RUNS });
}

// 3. A hundred clients at once, each with its own PNG: every one answered with its own file.
// What the 50 MB runs left (V8 keeps the heap it grew), so the clients' own peak reads apart from it.
const beforeClients = rssMb(gate.pid);
let loadRss = beforeClients;
{
  const files = [];
  for (let i = 0; i < CLIENTS; i++) {
    const f = path.join(inputs, `client-${i}.png`);
    const png = makePng({ width: 32, height: 32, seed: 5000 + i });
    fs.writeFileSync(f, png);
    files.push({ f, sha: crypto.createHash("sha256").update(png).digest("hex") });
  }
  const sampler = setInterval(() => (loadRss = Math.max(loadRss, rssMb(gate.pid))), 5);
  const busyBefore = (fs.readFileSync(path.join(tmp, "gate.log"), "utf8").match(/"event":"busy"/g) ?? []).length;
  const t0 = process.hrtime.bigint();
  const outcomes = await Promise.all(
    files.map(
      ({ f }) =>
        new Promise((resolve) => {
          const p = spawn(process.execPath, [CLI, "prepare", "--json", f], { env: gateEnv, stdio: ["ignore", "pipe", "pipe"] });
          let out = "";
          p.stdout.on("data", (c) => (out += c));
          p.on("close", (code) => resolve({ code, out }));
        }),
    ),
  );
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  clearInterval(sampler);
  const busy = (fs.readFileSync(path.join(tmp, "gate.log"), "utf8").match(/"event":"busy"/g) ?? []).length - busyBefore;
  let correct = 0;
  outcomes.forEach(({ code, out }, i) => {
    try {
      const m = JSON.parse(out).media[0];
      if (code === 0 && m.sha256 === files[i].sha && fs.readFileSync(m.path).equals(fs.readFileSync(files[i].f))) correct++;
    } catch {
      // counted as wrong
    }
  });
  results.push({ name: `${CLIENTS} concurrent prepare clients (small PNGs)`, ours: `${correct}/${CLIENTS} correct in ${fmt(ms, 0)} ms (${busy} busy answers retried)`, base: "-", ratio: null, target: null, runs: 1, pass: correct === CLIENTS });
}
const idleAfter = rssMb(gate.pid);

// 4. The client's transport: node:net (hand-written HTTP/1.1, as the client does) against node:http,
// each a whole process sending the same 100 KB PNG the same way.
{
  const png = path.join(inputs, "transport.png");
  fs.writeFileSync(png, makePng({ seed: 7 }));
  const common = `const fs=require("fs");const fd=fs.openSync(process.argv[2],"r");const size=fs.fstatSync(fd).size;const sock=process.argv[3];
const body=()=>{const b=Buffer.allocUnsafe(size);fs.readSync(fd,b,0,size,0);return b};`;
  const viaNet = `${common}const net=require("net");const s=net.connect(sock);let got="";
s.on("connect",()=>s.write("POST /prepare?name=t.png HTTP/1.1\\r\\nHost: gate\\r\\nContent-Length: "+size+"\\r\\nExpect: 100-continue\\r\\n\\r\\n"));
s.on("data",(c)=>{got+=c;if(got.startsWith("HTTP/1.1 100")&&!s.sent){s.sent=true;got=got.slice(got.indexOf("\\r\\n\\r\\n")+4);s.write(body())}
const i=got.indexOf("\\r\\n\\r\\n");if(i>=0&&!got.startsWith("HTTP/1.1 100")){const n=+/content-length: (\\d+)/i.exec(got)[1];if(got.length>=i+4+n){process.exit(got.includes('"success": true')?0:1)}}});`;
  const viaHttp = `${common}const http=require("http");const r=http.request({socketPath:sock,method:"POST",path:"/prepare?name=t.png",headers:{"Content-Length":size,Expect:"100-continue"}});
r.on("continue",()=>r.end(body()));r.on("response",(res)=>{let d="";res.on("data",(c)=>(d+=c));res.on("end",()=>process.exit(d.includes('"success": true')?0:1))});`;
  const netFile = path.join(tmp, "client-net.cjs");
  const httpFile = path.join(tmp, "client-http.cjs");
  fs.writeFileSync(netFile, viaNet);
  fs.writeFileSync(httpFile, viaHttp);
  const netTimes = [];
  const httpTimes = [];
  for (let i = 0; i < TRANSPORT_RUNS; i++) {
    netTimes.push(timeRun(process.execPath, [netFile, png, socket], baseEnv).ms);
    httpTimes.push(timeRun(process.execPath, [httpFile, png, socket], baseEnv).ms);
  }
  results.push({ name: "client transport, one 100 KB request: node:http vs node:net", ours: `${fmt(median(httpTimes))} ms`, base: `${fmt(median(netTimes))} ms`, ratio: pairedRatio(httpTimes, netTimes), target: null, runs: TRANSPORT_RUNS });
  // In one fresh process: node:net, then what node:http adds on top of it.
  const netLoad = [];
  const httpExtra = [];
  for (let i = 0; i < TRANSPORT_RUNS; i++) {
    const r = spawnSync(process.execPath, ["-e", 'const t0=process.hrtime.bigint();require("node:net");const t1=process.hrtime.bigint();require("node:http");const t2=process.hrtime.bigint();process.stdout.write(`${Number(t1-t0)/1e6} ${Number(t2-t1)/1e6}`)'], { encoding: "utf8" });
    const [a, b] = r.stdout.split(" ").map(Number);
    netLoad.push(a);
    httpExtra.push(b);
  }
  results.push({ name: "require() in a fresh process: node:net / what node:http adds", ours: `${fmt(median(netLoad), 2)} ms / +${fmt(median(httpExtra), 2)} ms`, base: "-", ratio: null, target: null, runs: TRANSPORT_RUNS });
}

results.push({ name: "gate RSS: idle at start / after the 50 MB runs / peak under the 100 clients / after", ours: `${fmt(idleRss)} / ${fmt(beforeClients)} / ${fmt(loadRss)} / ${fmt(idleAfter)} MB`, base: "-", ratio: null, target: null, runs: 1 });

gate.kill("SIGTERM");
await new Promise((r) => gate.once("exit", r));

const cols = ["benchmark", "runs", "media-outbox (median)", "baseline (median)", "ratio (paired)"];
const rows = results.map((r) => [r.name, String(r.runs), r.ours, r.base, r.ratio == null ? "-" : `${fmt(r.ratio, 2)}x`]);
const widths = cols.map((c, i) => Math.max(c.length, ...rows.map((r) => r[i].length)));
const line = (cells) => cells.map((c, i) => c.padEnd(widths[i])).join(" | ");
console.log(`node ${process.version}, ${os.platform()} ${os.arch()}, ${os.cpus().length} CPUs, load average ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}`);
console.log(line(cols));
console.log(widths.map((w) => "-".repeat(w)).join("-+-"));
for (const r of rows) console.log(line(r));
console.log("");
let missed = false;
for (const r of results) {
  if (r.pass !== undefined) {
    console.log(`${r.pass ? "PASS" : "MISS"}  ${r.name}: ${r.ours}`);
    missed ||= !r.pass;
  } else if (r.target == null) {
    console.log(`INFO  ${r.name}: ${r.ratio == null ? r.ours : `${fmt(r.ratio, 2)}x`} (no target)`);
  } else {
    const ok = r.ratio <= r.target;
    console.log(`${ok ? "PASS" : "MISS"}  ${r.name}: ${fmt(r.ratio, 2)}x (target <= ${r.target}x)`);
  }
}
