// Receipts in a drop folder: NAME.media or NAME.refused, written under a
// temporary dot-name and linked into place, so a receipt is either absent or
// complete, and never overwrites or follows anything already there.
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { errnoCode } from "../core/errors.js";

export const MEDIA_RECEIPT = ".media";
export const REFUSED_RECEIPT = ".refused";
/** NAME_MAX of Linux filesystems, in bytes. */
export const NAME_MAX = 255;

/** Names the drop folder processor never takes for drops: its own receipts and temporaries, and files still being written. */
export function isIgnoredDropName(name: string): boolean {
  if (name.startsWith(".")) return true;
  const lower = name.toLowerCase();
  return [".part", ".tmp", ".crdownload", MEDIA_RECEIPT, REFUSED_RECEIPT].some((suffix) => lower.endsWith(suffix));
}

/** Whether both receipt names fit beside NAME (NAME_MAX bytes). */
export function receiptNamesFit(name: string): boolean {
  return Buffer.byteLength(name) + Math.max(MEDIA_RECEIPT.length, REFUSED_RECEIPT.length) <= NAME_MAX;
}

/** The receipt already beside NAME, if any (a symlink counts: it is never followed or replaced). */
export function existingReceipt(dir: string, name: string): string | undefined {
  for (const suffix of [MEDIA_RECEIPT, REFUSED_RECEIPT]) {
    if (fs.lstatSync(path.join(dir, name + suffix), { throwIfNoEntry: false })) return name + suffix;
  }
  return undefined;
}

/**
 * Writes `text` to `dir/receiptName`. Returns false when that name is already
 * taken (by anything: link(2) neither follows nor overwrites).
 */
export function writeReceipt(dir: string, receiptName: string, text: string): boolean {
  const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW } = fs.constants;
  const tmp = path.join(dir, `.media-outbox-${process.pid}-${randomBytes(6).toString("hex")}.tmp`);
  // Readable by the sandboxed agent, which may run as another user.
  const fd = fs.openSync(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o644);
  try {
    try {
      const buf = Buffer.from(text);
      let off = 0;
      while (off < buf.length) off += fs.writeSync(fd, buf, off, buf.length - off);
    } finally {
      fs.closeSync(fd);
    }
    fs.linkSync(tmp, path.join(dir, receiptName));
    return true;
  } catch (err) {
    if (errnoCode(err) === "EEXIST") return false;
    throw err;
  } finally {
    fs.rmSync(tmp, { force: true });
  }
}
