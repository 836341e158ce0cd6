// The tests run the real built binary and the packaged library: build them from the current source first.
// The real-Hermes .venv/ is made here too, once, before any test: made inside a
// test, its 30 s or more of pip counted against that test's timeout.
import { execFileSync } from "node:child_process";
import path from "node:path";
import { ensureVenv } from "./python-env.js";

export default function setup(): void {
  const root = path.resolve(__dirname, "..");
  execFileSync(process.execPath, [path.join(root, "scripts/build.mjs")], { stdio: "inherit" });
  // Hermes' machine-wide managed scope (/etc/hermes) is never this machine's in a test: the workers inherit this.
  process.env.HERMES_MANAGED_DIR = path.join(root, "test", "no-managed-scope");
  ensureVenv();
}
