// The tests run the real built binary and the packaged library: build them from the current source first.
import { execFileSync } from "node:child_process";
import path from "node:path";

export default function setup(): void {
  const root = path.resolve(__dirname, "..");
  execFileSync(process.execPath, [path.join(root, "scripts/build.mjs")], { stdio: "inherit" });
}
