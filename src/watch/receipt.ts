// Receipts in a drop folder: NAME.media or NAME.refused, written under a
// temporary dot-name and linked into place, so a receipt is either absent or
// complete, and never overwrites or follows anything already there.
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { errnoCode } from "../core/errors.js";
import { entryPath, nameBytes, textOfName, withSuffix } from "../safety/entry-names.js";

export const MEDIA_RECEIPT = ".media";
export const REFUSED_RECEIPT = ".refused";
/** NAME_MAX of Linux filesystems, in bytes. */
export const NAME_MAX = 255;

/** Names the drop folder processor never takes for drops: its own receipts and temporaries, and files still being written. */
export function isIgnoredDropName(name: string): boolean {
  // Judged on the name's text: the prefix and suffixes are ASCII, which a
  // name that is not UTF-8 keeps as they are.
  const text = textOfName(name);
  if (text.startsWith(".")) return true;
  const lower = text.toLowerCase();
  return [".part", ".tmp", ".crdownload", MEDIA_RECEIPT, REFUSED_RECEIPT].some((suffix) => lower.endsWith(suffix));
}

/** Whether both receipt names fit beside NAME (NAME_MAX bytes). */
export function receiptNamesFit(name: string): boolean {
  return nameBytes(name).length + Math.max(MEDIA_RECEIPT.length, REFUSED_RECEIPT.length) <= NAME_MAX;
}

/** The receipt already beside NAME, if any (a symlink counts: it is never followed or replaced); in the form of entry-names.ts. */
export function existingReceipt(dir: string, name: string): string | undefined {
  for (const suffix of [MEDIA_RECEIPT, REFUSED_RECEIPT]) {
    const receipt = withSuffix(name, suffix);
    if (fs.lstatSync(entryPath(dir, receipt), { throwIfNoEntry: false })) return receipt;
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
    fs.linkSync(tmp, entryPath(dir, receiptName));
    return true;
  } catch (err) {
    if (errnoCode(err) === "EEXIST") return false;
    throw err;
  } finally {
    fs.rmSync(tmp, { force: true });
  }
}
