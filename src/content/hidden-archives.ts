// Archives no reader here inflates, found anywhere in the bytes a reader
// scans as they are: 7-Zip opens a 7z, xz, bzip2, Zstandard or Cabinet
// archive that starts in a file's first 8 MiB whatever bytes come before
// it (measured: 7-Zip 26.02, `7zz x` on a PDF, an MP3, an Ogg, a WAV, an
// mp4, a WebM and a FLAC with one appended or inside a chunk or a free
// box), cabextract a Cabinet anywhere in a file, unrar (and 7-Zip built
// with its RAR code) a RAR archive after up to 4 MiB of other bytes. Their
// compressed content says nothing of what it holds, so a part that holds
// one is refused, as a file that is one is (archive.ts refuseUnreadable).
//
// Each kind is known by its signature and by a header that must hold
// beyond it: a checksum where the format has one (7z's start header CRC,
// xz's stream flags CRC, RAR's main header CRC), fixed fields where it has
// none (a Cabinet's reserved zeros and version, bzip2's 48-bit block
// magic, a Zstandard frame's header and its blocks walked): random or
// compressed bytes that happen to hold a signature pass none of them
// (over this machine's 112,388 PDF, picture, audio, gz, zip, pyc and so
// files, every header confirmed was a real stream: README).
// lzip and .lzma streams are not looked for: no unpacker tried opens one
// after other bytes (7-Zip, libarchive, unar, lzip, xz).
import { isUtf8 } from "node:buffer";
import { u32le } from "./bytes.js";

/**
 * A kind of archive: its signature, the part of it searched for (`needle`,
 * `lead` bytes into it: a first byte rare in text and in PDF syntax, where
 * the search is memchr's, not a 0x28 `(` or an `R` of `0 R`), and whether
 * the header at `at` (where the signature lies) holds.
 */
interface Kind {
  name: string;
  signature: Buffer;
  needle: Buffer;
  lead: number;
  confirm: (b: Uint8Array, at: number, budget: Budget) => boolean;
}

/** The bytes left to checksum or walk for headers whose length the file gives (RAR's; Zstandard's blocks), so that a pass stays linear. */
interface Budget {
  left: number;
}

/** What a pass found: the archive's kind and where it starts; or that the file holds more headers to confirm than a pass checks. */
export type HiddenArchive = { kind: string; at: number } | { tooMany: true };

let crc32: ((data: Uint8Array) => number) | undefined;
/** CRC-32 (ISO-HDLC, as zip, 7z, xz and RAR use it); node:zlib loaded only when a signature is found. */
const crc = (b: Uint8Array, from: number, to: number) => (crc32 ??= process.getBuiltinModule("node:zlib").crc32)(b.subarray(from, to));

/** 7z: signature, format version 0.x, then the start header (next header's offset, size and CRC) and its CRC-32. */
function is7z(b: Uint8Array, at: number): boolean {
  return at + 32 <= b.length && b[at + 6] === 0 && crc(b, at + 12, at + 32) === u32le(b, at + 8);
}

/** xz: signature, stream flags (a reserved zero byte, a check type 0 to 15) and their CRC-32. */
function isXz(b: Uint8Array, at: number): boolean {
  return at + 12 <= b.length && b[at + 6] === 0 && b[at + 7]! < 16 && crc(b, at + 6, at + 8) === u32le(b, at + 8);
}

/**
 * RAR 1.5 to 4 (`Rar!\x1a\x07\x00`): the main header that follows, type
 * 0x73, at least its 13 bytes, whose first two bytes are the low 16 bits
 * of the CRC-32 of the rest. RAR 5 (`Rar!\x1a\x07\x01\x00`): its main
 * header, a CRC-32 of the header's size (a variable-length number) and
 * the header, type 1.
 */
function isRar(b: Uint8Array, at: number, budget: Budget): boolean {
  if (b[at + 6] === 0) {
    const h = at + 7;
    if (h + 13 > b.length || b[h + 2] !== 0x73) return false;
    const size = b[h + 5]! | (b[h + 6]! << 8);
    if (size < 13 || h + size > b.length || (budget.left -= size) < 0) return false;
    return (crc(b, h + 2, h + size) & 0xffff) === (b[h]! | (b[h + 1]! << 8));
  }
  if (b[at + 6] !== 1 || b[at + 7] !== 0) return false;
  const h = at + 8;
  // The header's size: up to 3 bytes of 7 bits (RAR 5 headers are at most 2 MiB), then its type.
  let size = 0;
  let v = h + 4;
  for (let shift = 0; shift < 21 && v < b.length; shift += 7) {
    size += (b[v]! & 0x7f) * 2 ** shift;
    if (b[v++]! < 0x80) break;
    if (shift === 14) return false;
  }
  if (size < 3 || v + size > b.length || b[v] !== 1 || (budget.left -= size) < 0) return false;
  return crc(b, h + 4, v + size) === u32le(b, h);
}

/**
 * bzip2: `BZh`, a level 1 to 9, then the first block's 48-bit magic (or an
 * empty stream's end), followed by compressed bytes, not text: its block
 * magic is all ASCII (`BZh91AY&SY`), which a page about bzip2 holds.
 */
function isBzip2(b: Uint8Array, at: number): boolean {
  if (at + 10 > b.length || b[at + 3]! < 0x31 || b[at + 3]! > 0x39) return false;
  const block = Buffer.from(b.buffer, b.byteOffset + at + 4, 6).toString("latin1");
  return block === "\x17rE8P\x90" || (block === "1AY&SY" && !readsAsText(b.subarray(at + 10, at + 10 + TEXT_PROBE)));
}

/** Bytes after a bzip2 block's magic that tell its compressed data from text: 32 random bytes read as UTF-8 text without a control character about once in 10^6. */
const TEXT_PROBE = 32;

/** Whether `bytes` read as UTF-8 text: no control character but tab, line feed and carriage return, valid UTF-8 (a character cut at the end allowed). */
function readsAsText(bytes: Uint8Array): boolean {
  for (const c of bytes) if ((c < 0x20 && c !== 9 && c !== 10 && c !== 13) || c === 0x7f) return false;
  for (let cut = 0; cut < 4 && cut <= bytes.length; cut++) if (isUtf8(bytes.subarray(0, bytes.length - cut))) return true;
  return false;
}

/** Microsoft Cabinet: `MSCF`, its three reserved fields zero, version 1.3, a cabinet at least its 36-byte header long with its files listed inside it. */
function isCab(b: Uint8Array, at: number): boolean {
  if (at + 36 > b.length || u32le(b, at + 12) !== 0 || u32le(b, at + 20) !== 0 || b[at + 24] !== 3 || b[at + 25] !== 1) return false;
  const size = u32le(b, at + 8);
  const files = u32le(b, at + 16);
  return size >= 36 && files >= 36 && files < size;
}

/**
 * Zstandard (RFC 8878 3.1.1): the frame header descriptor's reserved bit
 * zero, a window of at most 2 GiB, then every block walked to the last
 * or to the end of the bytes (7-Zip writes out what it decodes of a frame
 * cut short: measured): none of the reserved type, none larger than the
 * window or 128 KiB, no compressed block reusing a Huffman table before
 * one was given. The format has no header checksum: a signature and a
 * first block header alone passed in x86 code that compares the magic
 * (libzstd, libLLVM); the walk through the blocks that follow is what such
 * bytes fail.
 */
function isZstd(b: Uint8Array, at: number, budget: Budget): boolean {
  const d = b[at + 4];
  if (d === undefined || d & 0x08) return false;
  const singleSegment = (d & 0x20) !== 0;
  let p = at + 5;
  let window = 0;
  if (!singleSegment) {
    if (p >= b.length || b[p]! >> 3 > 21) return false;
    const log = 10 + (b[p]! >> 3);
    window = 2 ** log + (2 ** log / 8) * (b[p]! & 7);
    p++;
  }
  p += [0, 1, 2, 4][d & 3]!;
  const fcsSize = [singleSegment ? 1 : 0, 2, 4, 8][d >> 6]!;
  if (p + fcsSize > b.length) return false;
  // A single-segment frame's window is its content's size (a 2-byte size counts from 256).
  if (singleSegment) for (let i = fcsSize - 1; i >= 0; i--) window = window * 256 + b[p + i]!;
  if (singleSegment && fcsSize === 2) window += 256;
  p += fcsSize;
  const maxBlock = Math.min(window, 128 * 1024);
  let table = false;
  // Whether a block with content was walked: of a frame cut short after (or inside) one, 7-Zip writes out what it decodes (measured).
  let content = false;
  for (;;) {
    // The frame cut short, here or inside the block before.
    if (p + 3 > b.length) return content;
    if ((budget.left -= 3) < 0) return false;
    const header = b[p]! | (b[p + 1]! << 8) | (b[p + 2]! << 16);
    const type = (header >> 1) & 3;
    const size = header >>> 3;
    if (type === 3 || size > maxBlock) return false;
    if (type === 2) {
      // Its literals: compressed with a table given here (2), or with the last one given (3, none yet in the frame's first).
      if (size < 1) return false;
      if (p + 4 > b.length) return true;
      const literals = b[p + 3]! & 3;
      if (literals === 3 && !table) return false;
      if (literals === 2) table = true;
    }
    // A raw or compressed block's bytes follow its header; an RLE block's one byte stands for `size` bytes.
    p += 3 + (type === 1 ? 1 : size);
    content ||= size > 0;
    if (header & 1) return true;
  }
}

const kind = (name: string, signature: Buffer, lead: number, length: number, confirm: Kind["confirm"]): Kind => ({ name, signature, needle: signature.subarray(lead, lead + length), lead, confirm });

const KINDS: Kind[] = [
  kind("7-Zip", Buffer.from([0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c]), 2, 4, is7z),
  kind("RAR", Buffer.from("Rar!\x1a\x07", "latin1"), 4, 2, isRar),
  kind("xz", Buffer.from([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]), 0, 6, isXz),
  kind("bzip2", Buffer.from("BZh", "latin1"), 0, 3, isBzip2),
  kind("Zstandard", Buffer.from([0x28, 0xb5, 0x2f, 0xfd]), 1, 3, isZstd),
  kind("Microsoft Cabinet", Buffer.from("MSCF\0\0\0\0", "latin1"), 0, 4, isCab),
];

/**
 * The first archive of a kind no reader here inflates that starts in
 * `bytes` before `limit` (a window of a larger file may give the bytes
 * after it, for a header that crosses it). One search a kind (about 1 ms
 * per 50 MB each, in memory), each header confirmed in constant time but
 * RAR's and Zstandard's, whose length the file gives: past the bytes' own
 * length in such headers (a signature repeated to make the pass
 * quadratic), `tooMany`.
 */
export function findHiddenArchive(bytes: Uint8Array, limit = bytes.length): HiddenArchive | undefined {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  const budget: Budget = { left: b.length + 64 * 1024 };
  let found: { kind: string; at: number } | undefined;
  for (const { name, signature, needle, lead, confirm } of KINDS) {
    const end = Math.min(limit, found?.at ?? limit);
    for (let n = b.indexOf(needle, lead); n >= 0 && n - lead < end; n = b.indexOf(needle, n + 1)) {
      const at = n - lead;
      if (at + signature.length > b.length) break;
      if (b.compare(signature, 0, lead, at, n) !== 0 || b.compare(signature, lead + needle.length, signature.length, n + needle.length, at + signature.length) !== 0) continue;
      if (confirm(b, at, budget)) {
        found = { kind: name, at };
        break;
      }
      if (budget.left < 0) return { tooMany: true };
    }
  }
  return found;
}
