// Benchmark for media-outbox watch, with 10,000 published files already in
// the outbox (and their ledger records). Plain Node ESM, node: built-ins only.
// Measured side by side with baselines in the same run:
//   memory    watch RSS after ready vs. an idle bare `node` process (target < 150 MB)
//   idle CPU  watch over a quiet window vs. the bare process
//   latency   planted file -> quarantined event, median of 20 (target < 500 ms),
//             vs. a bare fs.watch on the same directory seeing the same plants
//   drops     drop-folder throughput (files/s) vs. one `prepare` run per file
//   stop      SIGTERM in the middle of a flood to exit (target < 5 s)
// Run: npm run bench -- watch
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const CLI = path.join(ROOT, "bin", "media-outbox");
const PUBLISHED = 10_000;
const PLANTS = 20;
const DROPS = 1000;
const PREPARE_BASELINE = 50;
const IDLE_WINDOW_MS = 5000;
const RSS_TARGET_MB = 150;
const LATENCY_TARGET_MS = 500;
const STOP_TARGET_MS = 5000;
const CLK_TCK = 100;

const home = fs.mkdtempSync(path.join(os.tmpdir(), "mo-bench-watch-"));
process.on("exit", () => fs.rmSync(home, { recursive: true, force: true }));
const env = { PATH: process.env.PATH, HOME: home, HERMES_HOME: path.join(home, ".hermes") };
const outbox = path.join(home, ".hermes", "media_outbox");
const ledgerDir = path.join(home, ".hermes", ".media_outbox-state", "ledger");
const drop = path.join(home, "drop");

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const rssMb = (pid) => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))[1]) / 1024;
const cpuTicks = (pid) => {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return Number(fields[11]) + Number(fields[12]);
};
const verdict = (ok) => (ok ? "PASS" : "MISS");

/** The outbox as prepare leaves it: 10,000 files and a ledger naming each. */
function seedOutbox() {
  fs.mkdirSync(outbox, { recursive: true, mode: 0o700 });
  fs.mkdirSync(ledgerDir, { recursive: true, mode: 0o700 });
  fs.chmodSync(path.dirname(ledgerDir), 0o700);
  const now = new Date().toISOString();
  const lines = [];
  for (let i = 0; i < PUBLISHED; i++) {
    const name = `published-${i}.txt`;
    const bytes = Buffer.from(`published file number ${i}\n`);
    fs.writeFileSync(path.join(outbox, name), bytes, { mode: 0o600 });
    lines.push(JSON.stringify({ time: now, source: name, name, bytes: bytes.length, sha256: createHash("sha256").update(bytes).digest("hex"), mime: "text/plain", reused: false }));
  }
  fs.writeFileSync(path.join(ledgerDir, `${now.slice(0, 10)}.jsonl`), `${lines.join("\n")}\n`, { mode: 0o600 });
}

/** Starts `watch --json`; resolves with the child, its events and the start-up time. */
function startWatch(args = []) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, [CLI, "watch", "--json", ...args], { env, stdio: ["ignore", "pipe", "ignore"] });
    const listeners = new Set();
    readline.createInterface({ input: child.stdout }).on("line", (line) => {
      const event = JSON.parse(line);
      if (event.event === "ready") resolve({ child, listeners, readyMs: performance.now() - t0 });
      for (const l of listeners) l(event);
    });
    child.on("exit", (code) => reject(new Error(`watch exited early (${code})`)));
  });
}

function stopWatch(w) {
  return new Promise((resolve) => {
    w.child.removeAllListeners("exit");
    w.child.on("exit", resolve);
    w.child.kill("SIGTERM");
  });
}

function nextEvent(w, pred) {
  return new Promise((resolve) => {
    const l = (e) => {
      if (pred(e)) {
        w.listeners.delete(l);
        resolve(e);
      }
    };
    w.listeners.add(l);
  });
}

/** A bare idle node process, for the memory and CPU baseline. */
function bareNode(script) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "ignore"] });
    readline.createInterface({ input: child.stdout }).once("line", () => resolve(child));
  });
}

async function idleCpuPercent(pid) {
  const t0 = cpuTicks(pid);
  await sleep(IDLE_WINDOW_MS);
  return ((cpuTicks(pid) - t0) / CLK_TCK / (IDLE_WINDOW_MS / 1000)) * 100;
}

async function main() {
  console.log(`seeding ${PUBLISHED.toLocaleString("en")} published files ...`);
  seedOutbox();

  // Memory and idle CPU.
  const bare = await bareNode("setInterval(() => {}, 1000); console.log('up')");
  const w = await startWatch();
  await sleep(500);
  const rss = rssMb(w.child.pid);
  const bareRss = rssMb(bare.pid);
  const [idle, bareIdle] = await Promise.all([idleCpuPercent(w.child.pid), idleCpuPercent(bare.pid)]);
  bare.kill();

  // Planted file -> quarantine latency, with a bare fs.watch on the same directory as the floor.
  const rawSeen = new Map();
  const raw = fs.watch(outbox, (_type, name) => {
    if (name && !rawSeen.has(name)) rawSeen.set(name, performance.now());
  });
  const latencies = [];
  const rawLatencies = [];
  for (let i = 0; i < PLANTS; i++) {
    const name = `planted-${i}.png`;
    const caught = nextEvent(w, (e) => e.event === "quarantined" && e.name === name);
    const t0 = performance.now();
    fs.writeFileSync(path.join(outbox, name), `planted ${i}`);
    await caught;
    latencies.push(performance.now() - t0);
    rawLatencies.push((rawSeen.get(name) ?? performance.now()) - t0);
    await sleep(100);
  }
  raw.close();
  await stopWatch(w);

  // Drop-folder throughput (settle 200 ms, counted from the first write to the last receipt).
  fs.mkdirSync(drop, { recursive: true });
  const d = await startWatch(["--drop", drop, "--settle", "200ms"]);
  let answered = 0;
  const allDone = new Promise((resolve) =>
    d.listeners.add((e) => {
      if ((e.event === "published" || e.event === "refused") && ++answered === DROPS) resolve();
    }),
  );
  const t0 = performance.now();
  for (let i = 0; i < DROPS; i++) fs.writeFileSync(path.join(drop, `drop-${i}.txt`), `dropped file ${i}\n`);
  await allDone;
  const dropSeconds = (performance.now() - t0) / 1000;
  const dropRate = DROPS / dropSeconds;

  // SIGTERM in the middle of a second flood: time to exit.
  const firstOfSecond = nextEvent(d, (e) => e.event === "published" && e.name.startsWith("late-"));
  for (let i = 0; i < DROPS; i++) fs.writeFileSync(path.join(drop, `late-${i}.txt`), `late file ${i}\n`);
  await firstOfSecond;
  const s0 = performance.now();
  const stopCode = await stopWatch(d);
  const stopMs = performance.now() - s0;

  // Baseline: the same kind of file through one `prepare` process each.
  const src = path.join(home, "src");
  fs.mkdirSync(src);
  const p0 = performance.now();
  for (let i = 0; i < PREPARE_BASELINE; i++) {
    const file = path.join(src, `base-${i}.txt`);
    fs.writeFileSync(file, `baseline file ${i}\n`);
    const r = spawnSync(process.execPath, [CLI, "prepare", file], { env, stdio: "ignore" });
    if (r.status !== 0) throw new Error("baseline prepare failed");
  }
  const prepareRate = PREPARE_BASELINE / ((performance.now() - p0) / 1000);

  const med = median(latencies);
  const rawMed = median(rawLatencies);
  console.log(`outbox: ${PUBLISHED.toLocaleString("en")} published files; machine: ${os.cpus().length} cores`);
  console.log(`start-up to ready        ${w.readyMs.toFixed(0)} ms`);
  console.log(`RSS after start          ${rss.toFixed(1)} MB   (bare node ${bareRss.toFixed(1)} MB, ratio ${(rss / bareRss).toFixed(2)}x)   target < ${RSS_TARGET_MB} MB: ${verdict(rss < RSS_TARGET_MB)}`);
  console.log(`idle CPU (${IDLE_WINDOW_MS / 1000} s window)    ${idle.toFixed(2)} %   (bare node ${bareIdle.toFixed(2)} %)`);
  console.log(
    `plant -> quarantine      median ${med.toFixed(1)} ms, max ${Math.max(...latencies).toFixed(1)} ms over ${PLANTS}   (bare fs.watch event ${rawMed.toFixed(1)} ms)   target < ${LATENCY_TARGET_MS} ms: ${verdict(med < LATENCY_TARGET_MS)}`,
  );
  console.log(
    `drop throughput          ${dropRate.toFixed(1)} files/s (${DROPS} files, settle 200 ms)   (one prepare run per file: ${prepareRate.toFixed(1)} files/s, ratio ${(dropRate / prepareRate).toFixed(1)}x)`,
  );
  console.log(`SIGTERM mid-flood to exit ${stopMs.toFixed(0)} ms (exit code ${stopCode})   target < ${STOP_TARGET_MS} ms: ${verdict(stopMs < STOP_TARGET_MS && stopCode === 0)}`);
  process.exitCode = rss < RSS_TARGET_MB && med < LATENCY_TARGET_MS && stopMs < STOP_TARGET_MS ? 0 : 1;
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
