import { createHash } from "node:crypto";
import fs from "node:fs";

const CHUNK = 1024 * 1024;
let buffer: Buffer | undefined;

/** sha256 (hex) of everything left to read from an open descriptor. */
export function sha256OfFd(fd: number): string {
  const hash = createHash("sha256");
  buffer ??= Buffer.allocUnsafe(CHUNK);
  for (let n = fs.readSync(fd, buffer); n > 0; n = fs.readSync(fd, buffer)) hash.update(buffer.subarray(0, n));
  return hash.digest("hex");
}
