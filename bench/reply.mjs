// Benchmark for the Hermes plugin's final-reply hook (npm run bench -- reply):
// the time the hook adds to a turn, measured inside Python exactly as Hermes
// calls it (the plugin's transform_llm_output with a real check-reply), on
//  - a reply with MEDIA: lines and two files published that turn (target: at
//    most 150 ms added), beside a bare `node -e ''` spawned the same way;
//  - a reply without any MEDIA: line and nothing published (target: nothing
//    added, no subprocess: counted with a Python audit hook).
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { makePng } from "./make-png.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const CLI = path.join(ROOT, "bin", "media-outbox");
const PLUGIN = path.join(ROOT, "integrations", "hermes", "media-outbox", "__init__.py");
const RUNS = Number(process.env.BENCH_RUNS ?? 30);

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "mo-bench-reply-"));
process.on("exit", () => fs.rmSync(tmp, { recursive: true, force: true }));
const home = path.join(tmp, "home");
const hermes = path.join(home, ".hermes");
fs.mkdirSync(hermes, { recursive: true });
const outbox = path.join(hermes, "media_outbox");
const env = { PATH: process.env.PATH, PYTHONDONTWRITEBYTECODE: "1", HOME: home, HERMES_HOME: hermes, HERMES_MEDIA_ALLOW_DIRS: outbox, HERMES_MEDIA_DELIVERY_STRICT: "1", HERMES_MEDIA_TRUST_RECENT_FILES: "0" };

function prepared(name, content) {
  const src = path.join(tmp, name);
  fs.writeFileSync(src, content);
  const r = spawnSync(process.execPath, [CLI, "prepare", src], { env, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`prepare failed: ${r.stderr}`);
  return r.stdout.trim().slice("MEDIA:".length);
}
const chart = prepared("chart.png", makePng(64, (i) => (i * 7) & 255));
const notes = prepared("notes.txt", "meeting notes\n".repeat(100));
fs.writeFileSync(path.join(tmp, "command.json"), JSON.stringify([process.execPath, CLI]));

const driver = `
import importlib.util, json, subprocess, sys, time
from pathlib import Path
spawns = []
sys.addaudithook(lambda event, args: spawns.append(event) if event == "subprocess.Popen" else None)
spec = importlib.util.spec_from_file_location("media_outbox_bench", ${JSON.stringify(PLUGIN)})
plugin = importlib.util.module_from_spec(spec); spec.loader.exec_module(plugin)
plugin.COMMAND_FILE = Path(${JSON.stringify(path.join(tmp, "command.json"))})
hook = plugin.on_transform_llm_output
runs = ${RUNS}
chart, notes = ${JSON.stringify(chart)}, ${JSON.stringify(notes)}
with_media = "Here is the chart: \`MEDIA:" + chart + "\`.\\nThe notes are attached.\\n" + "Some more text. " * 200
plain = "Nothing to send, just an answer.\\n" + "Some more text. " * 200
def timed(fn):
    t = time.perf_counter(); out = fn(); return (time.perf_counter() - t) * 1000, out
node, hooked, bare = [], [], []
for _ in range(runs):
    node.append(timed(lambda: subprocess.run([${JSON.stringify(process.execPath)}, "-e", ""], check=True))[0])
    plugin.records.start("s"); plugin.records.add("s", [chart, notes])
    ms, out = timed(lambda: hook(response_text=with_media, session_id="s", model="m", platform="telegram"))
    assert out and out.endswith("MEDIA:" + chart + "\\nMEDIA:" + notes), out
    hooked.append(ms)
before = len(spawns)
for _ in range(runs):
    plugin.records.start("q")
    ms, out = timed(lambda: hook(response_text=plain, session_id="q", model="m", platform="telegram"))
    assert out is None
    bare.append(ms)
print(json.dumps({"node": node, "hooked": hooked, "bare": bare, "bare_spawns": len(spawns) - before}))
`;
const r = spawnSync("python3", ["-c", driver], { env, encoding: "utf8", maxBuffer: 16 * 1024 * 1024 });
if (r.status !== 0) {
  console.error(r.stdout, r.stderr);
  process.exit(1);
}
const m = JSON.parse(r.stdout);
const sorted = (xs) => [...xs].sort((a, b) => a - b);
const median = (xs) => {
  const s = sorted(xs);
  const k = s.length >> 1;
  return s.length % 2 ? s[k] : (s[k - 1] + s[k]) / 2;
};
const p95 = (xs) => sorted(xs)[Math.min(xs.length - 1, Math.ceil(xs.length * 0.95) - 1)];
const fmt = (x) => (x < 1 ? `${(x * 1000).toFixed(0)} µs` : `${x.toFixed(1)} ms`);

const hookedMed = median(m.hooked);
console.log(`machine: ${os.cpus().length} cores, load average ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}; ${RUNS} runs each`);
console.log("| figure | median | p95 | max | target |");
console.log("| --- | --- | --- | --- | --- |");
console.log(`| hook on a reply with MEDIA: lines, 2 files published (check-reply spawned) | ${fmt(hookedMed)} | ${fmt(p95(m.hooked))} | ${fmt(Math.max(...m.hooked))} | <= 150 ms: ${hookedMed <= 150 ? "PASS" : "FAIL"} |`);
console.log(`| bare \`node -e ''\` spawned the same way (baseline) | ${fmt(median(m.node))} | ${fmt(p95(m.node))} | ${fmt(Math.max(...m.node))} | |`);
console.log(`| hook on a reply without MEDIA:, nothing published | ${fmt(median(m.bare))} | ${fmt(p95(m.bare))} | ${fmt(Math.max(...m.bare))} | no subprocess: ${m.bare_spawns === 0 ? "PASS" : `FAIL (${m.bare_spawns})`} |`);
if (hookedMed > 150 || m.bare_spawns !== 0) process.exitCode = 1;
