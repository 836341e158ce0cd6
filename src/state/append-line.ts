// One rule for every append-only JSON-lines file media-outbox keeps (the
// ledger's day files, the quarantine's journal): a record is one line written
// by one write(2) with O_APPEND, so concurrent writers never interleave inside
// a line, and it never ends up glued to a torn one. A writer killed mid-line
// (or a crash) leaves a last line without its newline: the next record starts
// with one, so the torn line stays alone (a line that names nothing) and the
// record after it is whole. A write that stops part-way (a full disk) is
// taken back, so it leaves no torn line itself.
import fs from "node:fs";

/** Whether the open file ends in a newline (or is empty): a record may then start right there. */
function endsWithNewline(fd: number): boolean {
  const size = fs.fstatSync(fd).size;
  if (size === 0) return true;
  const last = Buffer.alloc(1);
  return fs.readSync(fd, last, 0, 1, size - 1) === 1 && last[0] === 10;
}

/**
 * Takes back the `written` bytes this writer appended, when they are still the
 * file's last bytes: an append that failed part-way leaves no torn line.
 */
function rollBack(fd: number, line: Buffer, written: number): void {
  if (written <= 0) return;
  try {
    const size = fs.fstatSync(fd).size;
    if (size < written) return;
    const tail = Buffer.alloc(written);
    if (fs.readSync(fd, tail, 0, written, size - written) !== written) return;
    if (tail.equals(line.subarray(0, written))) fs.ftruncateSync(fd, size - written);
  } catch {
    // Could not take it back: the next append starts on a new line anyway.
  }
}

/**
 * Appends `json` as one line to the file open on `fd` (O_RDWR|O_APPEND: the
 * last byte is read), or throws and leaves the file as it was. `what` names
 * the file in the error a short write raises.
 */
export function appendJsonLine(fd: number, json: string, what: string): void {
  const line = Buffer.from(endsWithNewline(fd) ? `${json}\n` : `\n${json}\n`);
  let written = 0;
  try {
    written = fs.writeSync(fd, line);
    // A short write means the next one would fail (no space): stop here.
    if (written !== line.length) throw Object.assign(new Error(`no space left to append to ${what}`), { code: "ENOSPC" });
  } catch (err) {
    rollBack(fd, line, written);
    throw err;
  }
}
