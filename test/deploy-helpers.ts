// Fixtures for the deploy tests: a fake target root with Hermes gateway units,
// a fake systemctl, and byte-exact snapshots of a directory tree.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

export function put(file: string, content: string, mode = 0o644): string {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, content, { mode });
  fs.chmodSync(file, mode);
  return file;
}

/**
 * A target root with three gateway units: one with its own Environment=
 * roots, one whose EnvironmentFile= sets the variable (and beats
 * Environment=), and a template.
 */
export function gatewayRoot(base: string): string {
  const root = path.join(base, "target");
  const etc = path.join(root, "etc/systemd/system");
  put(
    path.join(etc, "hermes-gateway.service"),
    "[Unit]\nDescription=Hermes gateway\n\n[Service]\nExecStart=/bin/true\nEnvironment=HERMES_MEDIA_ALLOW_DIRS=/srv/shared:/srv/other FOO=bar\n\n[Install]\nWantedBy=multi-user.target\n",
  );
  put(path.join(etc, "hermes-gateway.service.d/10-local.conf"), "[Service]\nEnvironment=LOCAL=1\n");
  put(
    path.join(root, "usr/lib/systemd/system/hermes-gateway-work.service"),
    "[Unit]\nDescription=Hermes gateway (work profile)\n\n[Service]\nExecStart=/bin/true\nEnvironment=HERMES_MEDIA_ALLOW_DIRS=/srv/ignored\nEnvironmentFile=/etc/hermes/work.env\n",
  );
  put(path.join(root, "etc/hermes/work.env"), '# work profile\nHERMES_MEDIA_ALLOW_DIRS="/srv/work"\n');
  put(path.join(etc, "hermes-gateway@.service"), "[Unit]\nDescription=Hermes gateway %i\n\n[Service]\nExecStart=/bin/true\nEnvironment=HERMES_MEDIA_ALLOW_DIRS=/srv/%i\n");
  fs.mkdirSync(path.join(etc, "multi-user.target.wants"), { recursive: true });
  fs.symlinkSync("../hermes-gateway@.service", path.join(etc, "multi-user.target.wants/hermes-gateway@alice.service"));
  return root;
}

export type Snapshot = Record<string, string>;

/** Every entry under `dir`: type, mode and exact bytes (or link target). */
export function snapshot(dir: string): Snapshot {
  const out: Snapshot = {};
  const walk = (d: string) => {
    for (const name of fs.readdirSync(d).sort()) {
      const p = path.join(d, name);
      const rel = path.relative(dir, p);
      const st = fs.lstatSync(p);
      const mode = (st.mode & 0o7777).toString(8);
      if (st.isSymbolicLink()) out[rel] = `link ${fs.readlinkSync(p)}`;
      else if (st.isDirectory()) {
        out[rel] = `dir ${mode}`;
        walk(p);
      } else out[rel] = `file ${mode} ${fs.readFileSync(p).toString("base64")}`;
    }
  };
  walk(dir);
  return out;
}

export function run(cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) {
  const r = spawnSync(cmd, args, { encoding: "utf8", cwd: opts.cwd, env: opts.env ?? process.env, maxBuffer: 64 * 1024 * 1024 });
  return { code: r.status, stdout: r.stdout ?? "", stderr: r.stderr ?? "", error: r.error };
}

export function which(cmd: string): string | undefined {
  const r = spawnSync("sh", ["-c", 'command -v "$1"', "sh", cmd], { encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

/**
 * A fake systemctl: a real executable that answers from files in `dir`
 * (state, list-unit-files, list-units, show-UNIT) and logs other calls.
 */
export function fakeSystemctl(dir: string): string {
  fs.mkdirSync(dir, { recursive: true });
  const script = path.join(dir, "systemctl");
  put(
    script,
    `#!/bin/sh
d='${dir}'
[ "$1" = "--user" ] && shift
echo "$*" >> "$d/calls"
case "$1" in
  is-system-running) cat "$d/state"; [ "$(cat "$d/state")" = running ] ;;
  list-unit-files|list-units) cat "$d/$1" 2>/dev/null; exit 0 ;;
  show) if [ -f "$d/show-$2" ]; then cat "$d/show-$2"; else echo "LoadState=not-found"; fi ;;
  # As systemd: exit 1 for a unit that is not loaded (not listed in list-units), resetting the others.
  reset-failed) shift; rc=0
    for u in "$@"; do
      awk -v u="$u" '$1 == u { f = 1 } END { exit !f }' "$d/list-units" 2>/dev/null || { echo "Failed to reset failed state of unit $u: Unit $u not loaded." >&2; rc=1; }
    done
    exit $rc ;;
  *) exit 0 ;;
esac
`,
    0o755,
  );
  return script;
}
