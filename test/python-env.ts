// The Python the plugin tests need. The stand-in tests use the system's
// python3 (standard library only); the real-Hermes test needs the published
// hermes-agent package, installed once into .venv/ (git-ignored) from the pinned
// test/python/requirements.txt and kept while that file and the Python stay the
// same. Several test files may ask at once: a lock directory serialises them.
import { spawnSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { ROOT } from "./helpers.js";

export const VENV = path.join(ROOT, ".venv");
export const VENV_PYTHON = path.join(VENV, "bin", "python");
const REQUIREMENTS = path.join(ROOT, "test", "python", "requirements.txt");
const STAMP = path.join(VENV, ".media-outbox-requirements");
const LOCK = `${VENV}.lock`;

function sh(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  if (r.error || r.status !== 0) {
    throw new Error(`${[cmd, ...args].join(" ")} failed (${r.error?.message ?? `exit ${r.status}`}):\n${r.stdout}${r.stderr}`);
  }
  return r.stdout;
}

/** The system python3: fails with what to install when there is none. */
export function systemPython(): string {
  const r = spawnSync("python3", ["-c", "import sys; print(sys.executable)"], { encoding: "utf8" });
  if (r.status !== 0) throw new Error("the plugin tests need python3 (3.9 or newer) on the PATH: apt-get install -y python3 python3-venv");
  return r.stdout.trim();
}

function sleep(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** Creates or refreshes .venv/ when the pinned requirements (or the Python) changed; returns its python. */
export function ensureVenv(): string {
  const python = systemPython();
  const version = sh(python, ["-c", "import sys; print(sys.version)"]);
  const [major, minor] = version.split(".").map(Number);
  if (major !== 3 || minor! < 11 || minor! > 13) {
    throw new Error(`the real-Hermes tests need python3 3.11 to 3.13 (hermes-agent 0.19.0's range); python3 is ${version.split(" ")[0]}: install one of those as python3, with venv (apt-get install -y python3 python3-venv)`);
  }
  const want = crypto.createHash("sha256").update(fs.readFileSync(REQUIREMENTS)).update(version).digest("hex");
  const fresh = () => fs.existsSync(VENV_PYTHON) && fs.readFileSync(STAMP, { encoding: "utf8", flag: "a+" }) === want;
  if (fresh()) return VENV_PYTHON;
  for (;;) {
    try {
      fs.mkdirSync(LOCK);
      fs.writeFileSync(path.join(LOCK, "pid"), String(process.pid));
      break;
    } catch {
      let alive: boolean;
      try {
        const holder = Number(fs.readFileSync(path.join(LOCK, "pid"), "utf8"));
        process.kill(holder, 0);
        alive = holder > 0;
      } catch (err) {
        // No pid yet (the holder is between mkdir and write), unless that has lasted too long.
        alive = (err as NodeJS.ErrnoException).code === "ENOENT" && Date.now() - (fs.statSync(LOCK, { throwIfNoEntry: false })?.mtimeMs ?? 0) < 60_000;
      }
      if (!alive) fs.rmSync(LOCK, { recursive: true, force: true });
      else sleep(500);
    }
  }
  try {
    if (fresh()) return VENV_PYTHON;
    sh(python, ["-m", "venv", "--clear", VENV]);
    sh(VENV_PYTHON, ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-input", "-r", REQUIREMENTS]);
    fs.writeFileSync(STAMP, want);
    return VENV_PYTHON;
  } finally {
    fs.rmSync(LOCK, { recursive: true, force: true });
  }
}
