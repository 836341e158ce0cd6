// Directory entry names are bytes, not text. Node decodes them as UTF-8 and
// replaces what is not valid with U+FFFD, so a name that is not valid UTF-8
// cannot even be lstat'ed by the string Node returns: the guard would never
// see a file planted under such a name, the janitor would call it gone. Here a
// name is a string that can always be turned back into its bytes: valid names
// as themselves, the others as RAW followed by the hex of their bytes (a real
// name never holds NUL, so the two never meet).
import { isUtf8 } from "node:buffer";
import fs from "node:fs";
import { escapeText } from "../core/escape.js";

const RAW = "\0";
const REPLACEMENT = "\uFFFD";

/** A name read back from its bytes: itself when valid UTF-8, otherwise its RAW form. */
export function nameFromBytes(bytes: Buffer): string {
  return isUtf8(bytes) ? bytes.toString("utf8") : RAW + bytes.toString("hex");
}

/** Whether `name` stands for bytes that are not valid UTF-8. */
export function isRawName(name: string): boolean {
  return name.startsWith(RAW);
}

/** The bytes `name` stands for. */
export function nameBytes(name: string): Buffer {
  return isRawName(name) ? Buffer.from(name.slice(1), "hex") : Buffer.from(name, "utf8");
}

/** What to give fs calls for `dir/name`: a string, or the exact bytes for a raw name. */
export function entryPath(dir: string, name: string): string | Buffer {
  const prefix = dir === "" ? "" : dir.endsWith("/") ? dir : `${dir}/`;
  if (!isRawName(name)) return `${prefix}${name}`;
  return Buffer.concat([Buffer.from(prefix, "utf8"), nameBytes(name)]);
}

/** Whether a name as Node decoded it may have lost bytes (and must be read again as bytes). */
export function mayBeLossy(decoded: string): boolean {
  return decoded.includes(REPLACEMENT);
}

/** The names in `dir`, each exactly what is on disk. */
export function readNames(dir: string): string[] {
  const names = fs.readdirSync(dir);
  // The common case costs one includes() per name; only a directory holding a
  // name Node could not decode is read again, as bytes.
  if (!names.some(mayBeLossy)) return names;
  return fs.readdirSync(dir, { encoding: "buffer" }).map(nameFromBytes);
}

/** A directory entry as readdir's file types give it, with an exact name. */
export interface EntryName {
  name: string;
  isSymbolicLink(): boolean;
}

/** The entries of `dir` with their types (as readNames, without an lstat each). */
export function readEntries(dir: string): EntryName[] {
  const list = fs.readdirSync(dir, { withFileTypes: true });
  if (!list.some((d) => mayBeLossy(d.name))) return list;
  return fs.readdirSync(dir, { withFileTypes: true, encoding: "buffer" }).map((d) => {
    const name = nameFromBytes(d.name as unknown as Buffer);
    return { name, isSymbolicLink: () => d.isSymbolicLink() };
  });
}

/** Splits bytes into valid UTF-8 characters and single invalid bytes, in order. */
function* pieces(bytes: Buffer): Generator<{ text: string } | { byte: number }> {
  let i = 0;
  while (i < bytes.length) {
    const lead = bytes[i]!;
    const len = lead < 0x80 ? 1 : lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc2 ? 2 : 0;
    const seq = len > 0 && i + len <= bytes.length ? bytes.subarray(i, i + len) : undefined;
    if (seq && isUtf8(seq)) {
      yield { text: seq.toString("utf8") };
      i += len;
    } else {
      yield { byte: lead };
      i += 1;
    }
  }
}

/**
 * A name as it may be shown (logs, reports, receipts, JSON): escaped like
 * any user-supplied text, each byte that is not part of a valid UTF-8
 * character written as `\xNN`.
 */
export function showName(name: string): string {
  if (!isRawName(name)) return escapeText(name);
  let shown = "";
  for (const p of pieces(nameBytes(name))) shown += "text" in p ? escapeText(p.text) : `\\x${p.byte.toString(16).padStart(2, "0")}`;
  return shown;
}

/** Valid text for a raw name: each invalid byte becomes `_` (a name to give the entry elsewhere). */
export function textOfName(name: string): string {
  if (!isRawName(name)) return name;
  let text = "";
  for (const p of pieces(nameBytes(name))) text += "text" in p ? p.text : "_";
  return text;
}

/** `name` followed by the ASCII `suffix` (a receipt beside a dropped file), in the same form. */
export function withSuffix(name: string, suffix: string): string {
  return isRawName(name) ? nameFromBytes(Buffer.concat([nameBytes(name), Buffer.from(suffix, "utf8")])) : `${name}${suffix}`;
}
