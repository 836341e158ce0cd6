// The command line's arguments as the bytes the caller gave. Node decodes
// argv as UTF-8 and turns every byte that is not into U+FFFD: a file named
// `caf\xe9.txt` (Latin-1) becomes `caf\u{fffd}.txt`, which names another
// file, and `r\xff.txt` can then open `r\u{fffd}.txt` beside it. So an
// argument holding U+FFFD is read again from /proc/self/cmdline and, where
// its bytes are not UTF-8, decoded as Python's surrogateescape does (PEP
// 383: byte 0xNN that no UTF-8 sequence holds becomes U+DCNN): a lone
// surrogate, which check 1 (safety/path-text.ts) refuses and escapeText
// shows, and which no file name can turn into another.
import fs from "node:fs";
import { isUtf8 } from "node:buffer";

/** Bytes as UTF-8, each byte outside a valid sequence as U+DC00 + its value. */
export function decodeSurrogateEscape(bytes: Buffer): string {
  let text = "";
  let from = 0;
  for (let at = 0; at < bytes.length; ) {
    const lead = bytes[at]!;
    const n = lead < 0x80 ? 1 : lead >= 0xc2 && lead < 0xe0 ? 2 : lead >= 0xe0 && lead < 0xf0 ? 3 : lead >= 0xf0 && lead < 0xf5 ? 4 : 0;
    if (n > 0 && at + n <= bytes.length && (n === 1 || isUtf8(bytes.subarray(at, at + n)))) {
      at += n;
      continue;
    }
    text += `${bytes.toString("utf8", from, at)}${String.fromCharCode(0xdc00 + lead)}`;
    at += 1;
    from = at;
  }
  return text + bytes.toString("utf8", from);
}

/**
 * `argv` (process.argv after the script) with each argument whose bytes are
 * not UTF-8 decoded by decodeSurrogateEscape; as it is when none holds
 * U+FFFD (the usual case costs one scan), or when /proc cannot say.
 */
export function commandLineArguments(argv: string[] = process.argv.slice(2), cmdline = "/proc/self/cmdline"): string[] {
  if (!argv.some((a) => a.includes("\ufffd"))) return argv;
  let raw: Buffer;
  try {
    raw = fs.readFileSync(cmdline);
  } catch {
    return argv;
  }
  const all: Buffer[] = [];
  for (let from = 0; from < raw.length; ) {
    const nul = raw.indexOf(0, from);
    const end = nul < 0 ? raw.length : nul;
    all.push(raw.subarray(from, end));
    from = end + 1;
  }
  // The arguments are the command line's last ones (Node's own options come before the script).
  const mine = all.slice(all.length - argv.length);
  if (mine.length !== argv.length) return argv;
  return argv.map((arg, i) => (arg.includes("\ufffd") && !isUtf8(mine[i]!) ? decodeSurrogateEscape(mine[i]!) : arg));
}
