// One read of a file's range, whatever the kernel hands back per call: a
// read(2) may return fewer bytes than asked for (a signal, a file still being
// written), so every reader of a range loops the same way.
import fs from "node:fs";

/** Reads into `into` from byte `position` of `fd` until it is full or the file ends; how many bytes it read. */
export function readAt(fd: number, into: Uint8Array, position: number): number {
  let got = 0;
  while (got < into.length) {
    const n = fs.readSync(fd, into, got, into.length - got, position + got);
    if (n === 0) break;
    got += n;
  }
  return got;
}
