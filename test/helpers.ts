import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Refusal } from "../src/core/errors.js";
import { makePng } from "../src/core/png.js";

export const ROOT = path.resolve(__dirname, "..");
export const BIN = path.join(ROOT, "bin", "media-outbox");

/** A temporary fake home with its own Hermes home, and a work directory in it for a test's files; never the real one. */
export function makeHome(): { home: string; outbox: string; work: string; env: NodeJS.ProcessEnv; cleanup: () => void } {
  const home = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "mo-test-")));
  const work = path.join(home, "work");
  fs.mkdirSync(work);
  // A gate configured on the machine (/etc/media-outbox/config.json) must never be used by a test.
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: home, HERMES_HOME: path.join(home, ".hermes"), MEDIA_OUTBOX_SYSTEM_CONFIG: path.join(home, "no-system-config.json"), HERMES_MANAGED_DIR: path.join(home, "managed") };
  return { home, outbox: path.join(home, ".hermes", "media_outbox"), work, env, cleanup: () => fs.rmSync(home, { recursive: true, force: true }) };
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function cli(args: string[], opts: { env: NodeJS.ProcessEnv; cwd?: string; input?: Buffer | string }): CliResult {
  const r = spawnSync(process.execPath, [BIN, ...args], { env: opts.env, cwd: opts.cwd, input: opts.input, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Prepares `content` as the file `name` in the test home, as its agent would; the published path. */
export function prepared(h: { home: string; env: NodeJS.ProcessEnv }, name: string, content: Buffer | string): string {
  const r = cli(["prepare", write(h.home, name, content)], { env: h.env });
  // helpers.ts is loaded by the global set-up too (python-env.ts), where vitest's expect is not to be imported.
  if (r.code !== 0) throw new Error(`prepare ${name} exited ${r.code}: ${r.stderr}`);
  return r.stdout.trim().slice("MEDIA:".length);
}

/** A small valid PNG; `seed` varies its bytes. */
export function png(seed = 0, size = 4): Buffer {
  return makePng(size, (i) => i * 31 + seed);
}

/**
 * Appends to `ledgerDir` the well-formed record prepare writes when it
 * publishes `name` with `bytes` bytes (today's day file, or `day`'s): the file is then
 * media-outbox's, for the guard and the janitor alike.
 */
export function recordPublished(ledgerDir: string, name: string, bytes: number, day?: string): string {
  const time = new Date().toISOString();
  const rec = { time, source: "/test/source", name, bytes, sha256: "0".repeat(64), mime: "application/octet-stream", reused: false };
  fs.mkdirSync(ledgerDir, { recursive: true, mode: 0o700 });
  const file = path.join(ledgerDir, `${day ?? time.slice(0, 10)}.jsonl`);
  fs.appendFileSync(file, `${JSON.stringify(rec)}\n`, { mode: 0o600 });
  return file;
}

export function write(dir: string, name: string, content: Buffer | string): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, content);
  return file;
}

/** What a prepare left in the outbox and its state (empty lists for directories not made). */
export function leftBehind(h: { home: string; outbox: string }): { outbox: string[]; staging: string[]; ledger: string[] } {
  const list = (dir: string) => (fs.existsSync(dir) ? fs.readdirSync(dir) : []);
  const state = path.join(h.home, ".hermes", ".media_outbox-state");
  return { outbox: list(h.outbox), staging: list(path.join(state, "staging")), ledger: list(path.join(state, "ledger")) };
}

export const NOTHING_LEFT = { outbox: [], staging: [], ledger: [] };

/**
 * Rewrites one byte of `file` at a time, in place (same size, new bytes, a
 * new mtime), over and over until the returned function is awaited: a source
 * that changes while it is copied.
 */
export function keepRewriting(file: string): () => Promise<void> {
  const size = fs.statSync(file).size;
  const fd = fs.openSync(file, "r+");
  let stop = false;
  const writer = (async () => {
    for (let i = 0; !stop; i++) {
      fs.writeSync(fd, Buffer.from(String(i % 10)), 0, 1, (i * 4099) % size);
      await new Promise((r) => setImmediate(r));
    }
  })();
  return async () => {
    stop = true;
    await writer;
    fs.closeSync(fd);
  };
}

/** What a reader concluded: "published", or the refusal's code and reason. */
export function outcome(read: () => void): string {
  try {
    read();
    return "published";
  } catch (err) {
    if (!(err instanceof Refusal)) throw err;
    return `${err.code}: ${err.message}`;
  }
}
