// Benchmark for media-outbox janitor. Plain Node ESM, node: built-ins only.
// 100,000 files of which 50,000 are older than the 14-day retention; each tool
// gets a fresh, identical copy of the tree, side by side in one run:
//   media-outbox janitor
//   find DIR -maxdepth 1 -type f -mmin +20160 -delete
//   systemd-tmpfiles --clean CONF   (CONF: "e DIR - - - mM:14d")
// Targets: janitor wall time <= 1.25x the faster baseline; peak RSS < 150 MB.
// Run: npm run bench -- janitor   (BENCH_ROUNDS=N to change the round count)
// JANITOR_BASELINE_CLI=/other/checkout/bin/media-outbox adds another build's
// janitor to the same rounds (a change measured side by side with main).
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const CLI = path.join(ROOT, "bin", "media-outbox");
const BASELINE_CLI = process.env.JANITOR_BASELINE_CLI ? path.resolve(process.env.JANITOR_BASELINE_CLI) : undefined;
const FILES = 100_000;
const OLD = 50_000;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const DAY = 86_400_000;
const TARGET_RATIO = 1.25;
const TARGET_RSS_MB = 150;

const tempDirs = [];
process.on("exit", () => {
  for (const d of tempDirs) fs.rmSync(d, { recursive: true, force: true });
});

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** A fresh home with a private outbox holding the benchmark tree. */
function makeTree() {
  const home = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "mo-bench-janitor-")));
  tempDirs.push(home);
  const hermes = path.join(home, ".hermes");
  const dir = path.join(hermes, "media_outbox");
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  // The state beside it as prepare leaves it: the janitor takes expired files into its staging directory.
  fs.mkdirSync(path.join(hermes, ".media_outbox-state", "staging"), { recursive: true, mode: 0o700 });
  // And the ledger naming every file: the janitor deletes only what a record names (one record per file, as prepare writes).
  const ledger = path.join(hermes, ".media_outbox-state", "ledger");
  fs.mkdirSync(ledger, { mode: 0o700 });
  const time = new Date().toISOString();
  const records = [];
  for (let i = 0; i < FILES; i++) {
    records.push(JSON.stringify({ time, source: `/work/f${i}.png`, name: `f${String(i).padStart(6, "0")}.png`, bytes: 100, sha256: "0".repeat(64), mime: "image/png", reused: false }));
  }
  fs.writeFileSync(path.join(ledger, `${time.slice(0, 10)}.jsonl`), `${records.join("\n")}\n`, { mode: 0o600 });
  const now = Date.now();
  const oldTime = new Date(now - 20 * DAY);
  const newTime = new Date(now - 1 * DAY);
  const content = Buffer.alloc(100, 0x61);
  for (let i = 0; i < FILES; i++) {
    const file = path.join(dir, `f${String(i).padStart(6, "0")}.png`);
    fs.writeFileSync(file, content);
    // Interleaved, so old and young files are spread over the directory.
    const t = i % 2 === 0 ? oldTime : newTime;
    fs.utimesSync(file, t, t);
  }
  return { home, hermes, dir };
}

/** Wall time and peak RSS of one command, via /usr/bin/time -v when present. */
function measure(cmd, args, env) {
  const hasTime = fs.existsSync("/usr/bin/time");
  const t0 = process.hrtime.bigint();
  const r = hasTime
    ? spawnSync("/usr/bin/time", ["-v", cmd, ...args], { env, encoding: "utf8", maxBuffer: 64 << 20 })
    : spawnSync(cmd, args, { env, encoding: "utf8", maxBuffer: 64 << 20 });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} failed (rc=${r.status}): ${r.stderr}`);
  const rss = /Maximum resident set size \(kbytes\): (\d+)/.exec(r.stderr ?? "");
  const user = /User time \(seconds\): ([\d.]+)/.exec(r.stderr ?? "");
  const sys = /System time \(seconds\): ([\d.]+)/.exec(r.stderr ?? "");
  const cpuMs = user && sys ? (Number(user[1]) + Number(sys[1])) * 1000 : NaN;
  return { ms, cpuMs, rssMb: rss ? Number(rss[1]) / 1024 : NaN };
}

function remaining(dir) {
  return fs.readdirSync(dir).length;
}

function janitor(cli, tree) {
  const env = { PATH: process.env.PATH, HOME: tree.home, HERMES_HOME: tree.hermes };
  return measure(process.execPath, [cli, "janitor", "--outbox", tree.dir], env);
}

const tools = {
  janitor: (tree) => janitor(CLI, tree),
  ...(BASELINE_CLI ? { "janitor (other)": (tree) => janitor(BASELINE_CLI, tree) } : {}),
  find(tree) {
    return measure("find", [tree.dir, "-maxdepth", "1", "-type", "f", "-mmin", "+20160", "-delete"], process.env);
  },
  "systemd-tmpfiles"(tree) {
    const conf = path.join(tree.home, "bench-tmpfiles.conf");
    fs.writeFileSync(conf, `e ${tree.dir} - - - mM:14d\n`);
    return measure("systemd-tmpfiles", ["--clean", conf], process.env);
  },
};

const results = Object.fromEntries(Object.keys(tools).map((k) => [k, { ms: [], cpu: [], rss: [] }]));
const names = Object.keys(tools);
console.log(`${FILES.toLocaleString("en")} files, ${OLD.toLocaleString("en")} older than 14 days; ${ROUNDS} rounds, fresh tree per tool per round`);
if (BASELINE_CLI) console.log(`janitor: ${CLI}\njanitor (other): ${BASELINE_CLI}`);
console.log(`load average at start: ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}`);
for (let round = 0; round < ROUNDS; round++) {
  // Rotate the order so no tool always runs first (or right after a tree was written).
  const order = names.map((_, i) => names[(i + round) % names.length]);
  for (const name of order) {
    const tree = makeTree();
    spawnSync("sync");
    const r = tools[name](tree);
    const left = remaining(tree.dir);
    if (left !== FILES - OLD) throw new Error(`${name} left ${left} files, expected ${FILES - OLD}`);
    results[name].ms.push(r.ms);
    results[name].cpu.push(r.cpuMs);
    results[name].rss.push(r.rssMb);
    console.log(`  round ${round + 1}  ${name.padEnd(17)} ${r.ms.toFixed(0).padStart(6)} ms wall  ${r.cpuMs.toFixed(0).padStart(6)} ms cpu  ${r.rssMb.toFixed(1).padStart(6)} MB peak RSS`);
    fs.rmSync(tree.home, { recursive: true, force: true });
  }
}

const med = Object.fromEntries(names.map((n) => [n, median(results[n].ms)]));
const baseline = med.find <= med["systemd-tmpfiles"] ? "find" : "systemd-tmpfiles";
const janitors = names.filter((n) => n.startsWith("janitor"));
const ratio = med.janitor / med[baseline];
const rss = Math.max(...results.janitor.rss);
const rssOf = (n) => Math.max(...results[n].rss);
const cpu = Object.fromEntries(names.map((n) => [n, median(results[n].cpu)]));
// Wall time is what the target is about; CPU time (user + sys) is printed too
// because unlink wall time on a shared disk swings with everyone else's I/O.
console.log(`\nmedians (load average at end: ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}):`);
for (const n of names) {
  const peak = janitors.includes(n) ? `  ${rssOf(n).toFixed(1).padStart(6)} MB peak RSS` : "";
  console.log(`  ${n.padEnd(17)} ${med[n].toFixed(0).padStart(6)} ms wall (${(med[n] / med[baseline]).toFixed(2)}x ${baseline})  ${cpu[n].toFixed(0).padStart(6)} ms cpu (${(cpu[n] / cpu[baseline]).toFixed(2)}x)${peak}`);
}
if (BASELINE_CLI) {
  const other = "janitor (other)";
  console.log(`janitor vs janitor (other): ${(med.janitor / med[other]).toFixed(2)}x wall, ${(cpu.janitor / cpu[other]).toFixed(2)}x cpu; janitor (other) vs ${baseline}: ${(med[other] / med[baseline]).toFixed(2)}x`);
}
const ratioOk = ratio <= TARGET_RATIO;
const rssOk = rss < TARGET_RSS_MB;
console.log(`janitor vs ${baseline} (faster baseline): ${ratio.toFixed(2)}x, target <= ${TARGET_RATIO}x: ${ratioOk ? "PASS" : "MISS"}`);
console.log(`janitor peak RSS: ${rss.toFixed(1)} MB, target < ${TARGET_RSS_MB} MB: ${Number.isNaN(rss) ? "MISS (not measured: no /usr/bin/time)" : rssOk ? "PASS" : "MISS"}`);
process.exitCode = ratioOk && rssOk ? 0 : 1;
