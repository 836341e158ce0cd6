import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import zlib from "node:zlib";

export const ROOT = path.resolve(__dirname, "..");
export const BIN = path.join(ROOT, "bin", "media-outbox");

/** A temporary fake home with its own Hermes home; never the real one. */
export function makeHome(): { home: string; outbox: string; env: NodeJS.ProcessEnv; cleanup: () => void } {
  const home = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "mo-test-")));
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: home, HERMES_HOME: path.join(home, ".hermes") };
  return { home, outbox: path.join(home, ".hermes", "media_outbox"), env, cleanup: () => fs.rmSync(home, { recursive: true, force: true }) };
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

function crc32(buf: Buffer): number {
  let c = ~0;
  for (const b of buf) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xedb88320 : c >>> 1;
  }
  return ~c >>> 0;
}

function chunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type, "ascii"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(td));
  return Buffer.concat([len, td, crc]);
}

/** A small valid PNG; `seed` varies its bytes. */
export function png(seed = 0, size = 4): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr[8] = 8;
  ihdr[9] = 2;
  const raw = Buffer.alloc(size * (1 + size * 3));
  for (let i = 0; i < raw.length; i++) raw[i] = i % (1 + size * 3) === 0 ? 0 : (i * 31 + seed) & 0xff;
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk("IHDR", ihdr), chunk("IDAT", zlib.deflateSync(raw)), chunk("IEND", Buffer.alloc(0))]);
}

export function write(dir: string, name: string, content: Buffer | string): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, content);
  return file;
}
