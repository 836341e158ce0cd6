// Archives no reader here inflates, found anywhere in a file's bytes:
// 7-Zip opens a 7z, xz, bzip2, Zstandard, gzip or Cabinet archive (and,
// built with its RAR code, a RAR) that starts in a file's first 8 MiB
// whatever bytes come before and after it (measured: 7-Zip 26.02, `7zz x`
// and `7z x`, on a PDF, an MP3, an Ogg, a WAV, an AVI, an mp4, a WebM, a
// FLAC, a PNG, a JPEG, a GIF, a WebP and a BMP with one appended, in a
// chunk or a free box, and inside the media data no reader here reads: an
// mp4's mdat, a PNG's IDAT, a JPEG's scan, a GIF's or WebP's frame, audio
// frames and packets, a PDF's image), cabextract a Cabinet anywhere in a
// file, unrar a RAR after fewer than 4 MiB of other bytes. Their content
// is unread here, so a file (or a part of one) that holds one is refused,
// as a file that is one is (archive.ts refuseUnreadable).
//
// Each kind is known by its signature and by a header that must hold
// beyond it: a checksum where the format has one (7z's start header CRC,
// xz's stream flags CRC, RAR's main header CRC), fixed fields where it has
// none (a Cabinet's reserved zeros and version, bzip2's 48-bit block
// magic, a Zstandard frame's header and its blocks walked, gzip's header
// as 7-Zip checks it and its deflate data inflated): random or compressed
// bytes that happen to hold a signature pass none of them (README:
// "Archives inside a file that goes out").
// lzip and .lzma streams are not looked for: no unpacker tried opens one
// after other bytes (7-Zip, libarchive, unar, lzip, xz).
import { isUtf8 } from "node:buffer";
import type { ByteSource } from "./byte-source.js";
import { ascii, u32le } from "./bytes.js";

/** The archives searched for, by the name a refusal gives them. */
export type ArchiveKind = "7-Zip" | "RAR" | "xz" | "bzip2" | "Zstandard" | "Microsoft Cabinet" | "gzip";

/**
 * A kind of archive: its signature, the part of it searched for (`needle`,
 * `lead` bytes into it: a first byte rare in text and in PDF syntax, where
 * the search is memchr's, not a 0x28 `(` or an `R` of `0 R`), and whether
 * the header at `at` (where the signature lies) holds.
 */
interface Kind {
  name: ArchiveKind;
  signature: Buffer;
  needle: Buffer;
  lead: number;
  confirm: (b: Uint8Array, at: number, env: Env) => Verdict;
}

/**
 * Whether a header holds; undefined when the bytes end before it can tell
 * and the file goes on past them (a window of it: Search.further).
 */
type Verdict = boolean | undefined;

/** What a confirmation is given besides the bytes. */
interface Env {
  /** The bytes left to checksum, walk or inflate for headers whose length the file gives (RAR's, Zstandard's blocks, gzip's), so that a pass stays linear. */
  left: number;
  /** Whether the bytes end where the file (or the part) ends. */
  atEnd: boolean;
  /** Told what a gzip member that is not confirmed decodes to (Search.decoded), at the member's start. */
  decoded: ((at: number, bytes: Buffer) => void) | undefined;
}

/** A header the bytes cut: none where the file ends there, else a question for more bytes. */
const cut = (env: Env): Verdict => (env.atEnd ? false : undefined);

/** What a pass found: the archive's kind and where it starts; or that the file holds more headers to confirm than a pass checks. */
export type HiddenArchive = { kind: string; at: number } | { tooMany: true };

let crc32: ((data: Uint8Array) => number) | undefined;
/** CRC-32 (ISO-HDLC, as zip, 7z, xz, RAR and gzip use it); node:zlib loaded only when a signature is found. */
const crc = (b: Uint8Array, from: number, to: number) => (crc32 ??= process.getBuiltinModule("node:zlib").crc32)(b.subarray(from, to));

/** 7z: signature, format version 0.x, then the start header (next header's offset, size and CRC) and its CRC-32. */
function is7z(b: Uint8Array, at: number, env: Env): Verdict {
  if (at + 32 > b.length) return cut(env);
  return b[at + 6] === 0 && crc(b, at + 12, at + 32) === u32le(b, at + 8);
}

/** xz: signature, stream flags (a reserved zero byte, a check type 0 to 15) and their CRC-32. */
function isXz(b: Uint8Array, at: number, env: Env): Verdict {
  if (at + 12 > b.length) return cut(env);
  return b[at + 6] === 0 && b[at + 7]! < 16 && crc(b, at + 6, at + 8) === u32le(b, at + 8);
}

/**
 * RAR 1.5 to 4 (`Rar!\x1a\x07\x00`): the main header that follows, type
 * 0x73, at least its 13 bytes, whose first two bytes are the low 16 bits
 * of the CRC-32 of the rest. RAR 5 (`Rar!\x1a\x07\x01\x00`): its main
 * header, a CRC-32 of the header's size (a variable-length number) and
 * the header, type 1.
 */
function isRar(b: Uint8Array, at: number, env: Env): Verdict {
  if (at + 8 > b.length) return cut(env);
  if (b[at + 6] === 0) {
    const h = at + 7;
    if (h + 13 > b.length) return cut(env);
    if (b[h + 2] !== 0x73) return false;
    const size = b[h + 5]! | (b[h + 6]! << 8);
    if (size < 13) return false;
    if (h + size > b.length) return cut(env);
    if ((env.left -= size) < 0) return false;
    return (crc(b, h + 2, h + size) & 0xffff) === (b[h]! | (b[h + 1]! << 8));
  }
  if (b[at + 6] !== 1 || b[at + 7] !== 0) return false;
  const h = at + 8;
  // The header's size: up to 3 bytes of 7 bits (RAR 5 headers are at most 2 MiB), then its type.
  let size = 0;
  let v = h + 4;
  for (let shift = 0; ; shift += 7) {
    if (v >= b.length) return cut(env);
    size += (b[v]! & 0x7f) * 2 ** shift;
    if (b[v++]! < 0x80) break;
    if (shift === 14) return false;
  }
  if (size < 3) return false;
  if (v + size > b.length) return cut(env);
  if (b[v] !== 1 || (env.left -= size) < 0) return false;
  return crc(b, h + 4, v + size) === u32le(b, h);
}

/**
 * bzip2: `BZh`, a level 1 to 9, then the first block's 48-bit magic (or an
 * empty stream's end), followed by compressed bytes, not text: its block
 * magic is all ASCII (`BZh91AY&SY`), which a page about bzip2 holds.
 */
function isBzip2(b: Uint8Array, at: number, env: Env): Verdict {
  if (at + 10 > b.length) return cut(env);
  const opening = bzip2Opening(b, at);
  if (opening !== "block") return opening === "end";
  if (at + 10 + TEXT_PROBE > b.length && !env.atEnd) return undefined;
  return !readsAsText(b.subarray(at + 10, at + 10 + TEXT_PROBE));
}

/** What follows a bzip2 stream's `BZh` at `at` (10 bytes there): a level 1 to 9, then its first block's magic, or an empty stream's end; else none. */
function bzip2Opening(b: Uint8Array, at: number): "block" | "end" | undefined {
  if (b[at + 3]! < 0x31 || b[at + 3]! > 0x39) return undefined;
  const block = ascii(b, at + 4, 6);
  return block === "1AY&SY" ? "block" : block === "\x17rE8P\x90" ? "end" : undefined;
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
function isCab(b: Uint8Array, at: number, env: Env): Verdict {
  if (at + 36 > b.length) return cut(env);
  if (u32le(b, at + 12) !== 0 || u32le(b, at + 20) !== 0 || b[at + 24] !== 3 || b[at + 25] !== 1) return false;
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
function isZstd(b: Uint8Array, at: number, env: Env): Verdict {
  const d = b[at + 4];
  if (d === undefined) return cut(env);
  if (d & 0x08) return false;
  const singleSegment = (d & 0x20) !== 0;
  let p = at + 5;
  let window = 0;
  if (!singleSegment) {
    if (p >= b.length) return cut(env);
    if (b[p]! >> 3 > 21) return false;
    const log = 10 + (b[p]! >> 3);
    window = 2 ** log + (2 ** log / 8) * (b[p]! & 7);
    p++;
  }
  p += [0, 1, 2, 4][d & 3]!;
  const fcsSize = [singleSegment ? 1 : 0, 2, 4, 8][d >> 6]!;
  if (p + fcsSize > b.length) return cut(env);
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
    if (p + 3 > b.length) return env.atEnd ? content : undefined;
    if ((env.left -= 3) < 0) return false;
    const header = b[p]! | (b[p + 1]! << 8) | (b[p + 2]! << 16);
    const type = (header >> 1) & 3;
    const size = header >>> 3;
    if (type === 3 || size > maxBlock) return false;
    if (type === 2) {
      // Its literals: compressed with a table given here (2), or with the last one given (3, none yet in the frame's first).
      if (size < 1) return false;
      if (p + 4 > b.length) return env.atEnd ? true : undefined;
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

/**
 * gzip (RFC 1952), as 7-Zip takes a member after other bytes (its
 * IsArc_Gz: no reserved flag, extra flags 0, 2 or 4, a well-formed extra
 * field, a name under 4 KiB and a comment under 64 KiB, ended by NULs; a
 * first deflate block not of the reserved type, a stored one's length and
 * its complement, a dynamic one's at most 30 distance codes), then its
 * deflate data inflated (inflatesAsGzip).
 */
function isGzip(b: Uint8Array, at: number, env: Env): Verdict {
  if (at + 10 > b.length) return cut(env);
  const flags = b[at + 3]!;
  const extraFlags = b[at + 8]!;
  if (flags & 0xe0 || (extraFlags !== 0 && extraFlags !== 2 && extraFlags !== 4)) return false;
  let p = at + 10;
  if (flags & 0x04) {
    if (p + 2 > b.length) return cut(env);
    // Subfields, each an ID, a length and that many bytes, filling the field exactly (walked within the budget, as the name and comment are searched).
    let left = b[p]! | (b[p + 1]! << 8);
    if ((env.left -= left) < 0) return false;
    p += 2;
    while (left !== 0) {
      if (left < 4) return false;
      if (p + 4 > b.length) return cut(env);
      const length = b[p + 2]! | (b[p + 3]! << 8);
      if (length > left - 4) return false;
      p += 4 + length;
      left -= 4 + length;
    }
  }
  for (const [flag, max] of GZIP_STRINGS) {
    if (!(flags & flag)) continue;
    const field = Buffer.from(b.buffer, b.byteOffset + p, Math.max(0, Math.min(max, b.length - p)));
    const nul = field.indexOf(0);
    if ((env.left -= nul < 0 ? field.length : nul) < 0) return false;
    if (nul < 0) return p + max >= b.length ? cut(env) : false;
    p += nul + 1;
  }
  if (flags & 0x02) p += 2;
  // The first deflate block's header.
  if (p + 5 > b.length) return cut(env);
  const type = (b[p]! >> 1) & 3;
  if (type === 3) return false;
  if (type === 0 && (b[p]! >> 3 !== 0 || (b[p + 1]! | (b[p + 2]! << 8)) !== (~(b[p + 3]! | (b[p + 4]! << 8)) & 0xffff))) return false;
  if (type === 2 && (b[p + 1]! & 0x1f) + 1 > 30) return false;
  return inflatesAsGzip(b, at, p, env);
}

/** A gzip header's name and comment (FNAME, FCOMMENT): the longest 7-Zip takes, with their NUL. */
const GZIP_STRINGS = [
  [0x08, 4096],
  [0x10, 65536],
] as const;

/**
 * Bytes a gzip member must decode to before any error to be taken for one
 * when it does not end with its CRC-32 and size: random bytes after a
 * header 7-Zip takes decode to at most 816 before an error (242,000 tried,
 * README). 7-Zip writes out what it decodes of a damaged member: what a
 * member not taken decodes to is scanned instead (Search.decoded).
 */
export const GZIP_DECODED = 4096;
/** Deflate data tried first, then at most: random bytes fail or end within 80 (measured); 64 KiB that do neither, with fewer than GZIP_DECODED bytes out, are taken for a member. */
const GZIP_PROBES = [4096, 64 * 1024];

type Zlib = typeof import("node:zlib");
/** One inflate of `input` as raw deflate data: what it decoded and the input it took; "long" past GZIP_DECODED - 1 bytes out; "error" where the data fails. */
function inflateRaw(zlib: Zlib, input: Uint8Array): { out: Buffer; used: number } | "long" | "error" {
  try {
    const options = { finishFlush: zlib.constants.Z_SYNC_FLUSH, maxOutputLength: GZIP_DECODED - 1, info: true };
    // With `info`, node:zlib answers the output and its engine, whose bytesWritten counts the input it took.
    const result = zlib.inflateRawSync(input, options) as unknown as { buffer: Buffer; engine: { bytesWritten: number } };
    return { out: result.buffer, used: result.engine.bytesWritten };
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE" ? "long" : "error";
  }
}

/**
 * Whether the deflate data at `p` of the gzip member at `at` makes a
 * member: it decodes to GZIP_DECODED bytes or more before any error, or
 * it ends, followed by the CRC-32 and the size of what it decoded. A
 * member it does not make is told to `env.decoded` with what it decodes to
 * before it fails (the longest prefix of its data that inflates), ends or
 * the bytes end. node:zlib is loaded only here: for a header 7-Zip takes.
 */
function inflatesAsGzip(b: Uint8Array, at: number, p: number, env: Env): Verdict {
  const zlib = process.getBuiltinModule("node:zlib");
  for (const probe of GZIP_PROBES) {
    const input = b.subarray(p, p + probe);
    if ((env.left -= input.length) < 0) return false;
    const tried = inflateRaw(zlib, input);
    if (tried === "long") return true;
    if (tried === "error") {
      // What it decodes before its error (node:zlib answers the error alone): the output of the longest prefix that
      // inflates, found by halves; GZIP_DECODED bytes or more of it take the member.
      let [good, bad] = [0, input.length];
      while (bad - good > 1 && env.left >= 0) {
        const mid = (good + bad) >>> 1;
        env.left -= mid;
        const prefix = inflateRaw(zlib, input.subarray(0, mid));
        if (prefix === "long") return true;
        if (prefix === "error") bad = mid;
        else good = mid;
      }
      const before = inflateRaw(zlib, input.subarray(0, good));
      if (before === "long") return true;
      if (before !== "error" && before.out.length > 0) env.decoded?.(at, before.out);
      return false;
    }
    const { out, used } = tried;
    if (used < input.length) {
      // Its deflate data ended: the member's CRC-32 and size follow.
      const trailer = p + used;
      if (trailer + 8 > b.length && !env.atEnd) return undefined;
      if (trailer + 8 <= b.length && zlib.crc32(out) === u32le(b, trailer) && out.length === u32le(b, trailer + 4)) return true;
      if (out.length > 0) env.decoded?.(at, out);
      return false;
    }
    if (input.length < probe) {
      // The bytes ended inside its data.
      if (!env.atEnd) return undefined;
      if (out.length > 0) env.decoded?.(at, out);
      return false;
    }
  }
  return true;
}

const kind = (name: ArchiveKind, signature: Buffer, lead: number, length: number, confirm: Kind["confirm"]): Kind => ({ name, signature, needle: signature.subarray(lead, lead + length), lead, confirm });

export const CABINET: ArchiveKind = "Microsoft Cabinet";
export const GZIP: ArchiveKind = "gzip";
const BZIP2: ArchiveKind = "bzip2";

const KINDS: Kind[] = [
  kind("7-Zip", Buffer.from([0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c]), 2, 4, is7z),
  kind("RAR", Buffer.from("Rar!\x1a\x07", "latin1"), 4, 2, isRar),
  kind("xz", Buffer.from([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]), 0, 6, isXz),
  kind(BZIP2, Buffer.from("BZh", "latin1"), 0, 3, isBzip2),
  kind("Zstandard", Buffer.from([0x28, 0xb5, 0x2f, 0xfd]), 1, 3, isZstd),
  kind(CABINET, Buffer.from("MSCF\0\0\0\0", "latin1"), 0, 4, isCab),
  kind(GZIP, Buffer.from([0x1f, 0x8b, 0x08]), 0, 3, isGzip),
];

/**
 * Whether `b` opens as an archive of the kind `name` (a file, or a part
 * of one, that is such an archive: archive.ts isGzip and
 * unreadableArchive): its signature at byte 0, and for bzip2, whose
 * signature is text, its level and first block's magic too.
 */
export function opensAs(b: Uint8Array, name: ArchiveKind): boolean {
  const { signature } = KINDS.find((k) => k.name === name)!;
  if (b.length < signature.length || Buffer.compare(b.subarray(0, signature.length), signature) !== 0) return false;
  // bzip2's 10 bytes: shorter bytes are none (a read past the end threw at a 3-byte `BZh` that ended a tar member or a zip entry).
  return name !== BZIP2 || (b.length >= 10 && bzip2Opening(b, 0) !== undefined);
}

/** Where one search looks, and what it is told. */
export interface Search {
  /** The starts each kind (by name) is looked for at, [from, to) in the bytes; undefined: not looked for. All of them when absent. */
  range?: (kind: ArchiveKind) => readonly [number, number] | undefined;
  /** Whether the bytes end where the file (or the part) they are of ends; else a header that runs past them is confirmed on `further`'s bytes. */
  atEnd?: boolean;
  /** The bytes from `at` of these on, as many as a header may need (FAR_REACH), and whether they end where the file does. */
  further?: (at: number) => { bytes: Buffer; atEnd: boolean };
  /** Told what a gzip member that is not confirmed decodes to: 7-Zip writes it out (with an error), so it is scanned. */
  decoded?: (at: number, bytes: Buffer) => void;
  /** Whether a reader here reads the gzip members the bytes hold (they are a document it reads: a gzip file, a zip, a tar); then none is looked for. Asked at the first gzip signature. */
  readsGzip?: () => boolean;
}

/** A window's headers read again from the file (Search.further) at most this many times a search: past it, `tooMany`. */
const MAX_FURTHER = 4;

/**
 * The next place of `needle` in `b` from a byte on, as `b.indexOf(needle,
 * from)` finds it, where the signature it is `lead` bytes into starts
 * before `end`; -1 past the last such place. The search reads no byte
 * past that place's needle: indexOf alone runs on to the next match, in
 * random bytes a 4-byte needle's 4 GiB on, so each kind's last search
 * read to the window's end: the REACH bytes it holds past its starts, the
 * rest of the window that holds a file's 8 MiB mark, and the bytes after
 * an archive an earlier kind found.
 */
export function needlesBefore(b: Buffer, needle: Uint8Array, lead: number, end: number): (from: number) => number {
  const scope = b.subarray(0, Math.max(0, Math.min(b.length, end + lead + needle.length - 1)));
  return (from) => scope.indexOf(needle, from);
}

/**
 * The first archive of a kind no reader here inflates that starts in
 * `bytes` where `search` says. One search a kind (memchr's, about 0.07
 * ms per MiB each, up to the kind's last start: needlesBefore), each
 * header confirmed in constant time but RAR's, Zstandard's and gzip's,
 * whose length the file gives: past the bytes' own length in such headers
 * (a signature repeated to make the pass quadratic), `tooMany`.
 */
export function findHiddenArchive(bytes: Uint8Array, search: Search = {}): HiddenArchive | undefined {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  const env: Env = { left: b.length + 64 * 1024, atEnd: search.atEnd ?? true, decoded: search.decoded };
  let further = 0;
  let readsGzip: boolean | undefined;
  let found: { kind: string; at: number } | undefined;
  for (const { name, signature, needle, lead, confirm } of KINDS) {
    const range = search.range ? search.range(name) : ([0, b.length] as const);
    if (range === undefined) continue;
    const end = Math.min(range[1], found?.at ?? range[1]);
    const needleAt = needlesBefore(b, needle, lead, end);
    for (let n = needleAt(range[0] + lead); n >= 0; n = needleAt(n + 1)) {
      const at = n - lead;
      if (at + signature.length > b.length) break;
      if (b.compare(signature, 0, lead, at, n) !== 0 || b.compare(signature, lead + needle.length, signature.length, n + needle.length, at + signature.length) !== 0) continue;
      if (name === GZIP && (readsGzip ??= search.readsGzip?.() ?? false)) break;
      let verdict = confirm(b, at, env);
      if (verdict === undefined) {
        // The header runs past the window: read again from the file, as far as any header reaches (past that, taken).
        if (!search.further || ++further > MAX_FURTHER) return { tooMany: true };
        const more = search.further(at);
        const { atEnd, decoded } = env;
        env.atEnd = more.atEnd;
        env.decoded = decoded && ((from, out) => decoded(at + from, out));
        verdict = confirm(more.bytes, 0, env) ?? true;
        Object.assign(env, { atEnd, decoded });
      }
      if (verdict) {
        found = { kind: name, at };
        break;
      }
      if (env.left < 0) return { tooMany: true };
    }
  }
  return found;
}

/**
 * Where 7-Zip finds an archive that starts after other bytes: at byte
 * 8 MiB or before (measured, each kind: one at byte 8,388,608 opens, one
 * at 8,388,609 does not).
 */
export const SCANNED_HEAD = 8 * 1024 * 1024 + 1;

/** Where a file's own bytes are searched: every kind (gzip if `gzip`) in the starts before `head`, Cabinets everywhere (cabextract finds one anywhere). */
export interface RawSearch {
  head: number;
  gzip: boolean;
}

/**
 * How far into the file the search of its own bytes looks for `kind`'s
 * starts: the one rule findInFile follows and a part's search
 * (inspect.ts notSearchedRaw) completes.
 */
export function rawSearchReach(plan: RawSearch, kind: ArchiveKind): number {
  if (kind === CABINET) return Number.POSITIVE_INFINITY;
  return kind === GZIP && !plan.gzip ? 0 : plan.head;
}

/**
 * Starts searched at once, each kind in turn: a window's bytes stay in the
 * processor's cache for the next kind (a 50 MB file searched whole, one
 * kind after the other, took 15.6 ms; a window at a time, 12.1 ms). Read
 * from disk, a window carries the REACH bytes past its starts into the
 * next: each byte is read once.
 */
const WINDOW = 1024 * 1024;
/** Every header of fixed size, RAR 4's main header (64 KiB at most), gzip's (128 KiB of extra field and comment) with its first deflate data: few headers run further. */
const REACH = 256 * 1024;
/** How far a header read again reaches: a RAR 5 main header (2 MiB at most), gzip's with its 64 KiB of deflate data, a Zstandard frame walked that far (then taken). */
const FAR_REACH = 2 * 1024 * 1024 + 256 * 1024;
let windowBuffer: Buffer | undefined;

/**
 * The first archive in a file's own bytes (`src`: in memory, or read from
 * disk through one buffer kept for the next file) where `plan` says;
 * `decoded` told what a gzip member not taken decodes to, at its byte of
 * the file.
 */
export function findInFile(src: ByteSource, plan: RawSearch, decoded?: (at: number, bytes: Buffer) => void): HiddenArchive | undefined {
  const { length, whole } = src;
  const range = (w: number, starts: number) => (name: ArchiveKind) => {
    const reach = rawSearchReach(plan, name);
    return w >= reach ? undefined : ([0, Math.min(starts, reach - w)] as const);
  };
  /** The bytes from `at` on, `n` at most, and whether they reach the file's end (a file that ended early, as it shrank since it was staged, ends there). */
  const bytesAt = (at: number, n: number, into?: Buffer) => {
    if (whole) return { bytes: whole.subarray(at, Math.min(length, at + n)), atEnd: at + n >= length };
    const buffer = into ?? Buffer.allocUnsafe(Math.max(0, Math.min(n, length - at)));
    const got = src.readInto(buffer, at);
    return { bytes: buffer.subarray(0, got), atEnd: at + got >= length || got < buffer.length };
  };
  let carried = 0;
  for (let w = 0; w < length; w += WINDOW) {
    let window: { bytes: Buffer; atEnd: boolean };
    if (whole) window = bytesAt(w, WINDOW + REACH);
    else {
      // The window holds [w, w + WINDOW + REACH): the REACH bytes the last one held past its starts, then those read now.
      const buffer = (windowBuffer ??= Buffer.allocUnsafeSlow(WINDOW + REACH));
      if (w > 0) buffer.copyWithin(0, WINDOW, WINDOW + carried);
      const want = Math.min(WINDOW + REACH, length - w) - carried;
      const read = bytesAt(w + carried, want, buffer.subarray(carried, carried + want));
      window = { bytes: buffer.subarray(0, carried + read.bytes.length), atEnd: read.atEnd };
      carried = Math.max(0, window.bytes.length - WINDOW);
    }
    // The last window searches every start it holds.
    const found = findHiddenArchive(window.bytes, {
      range: range(w, window.atEnd ? window.bytes.length : WINDOW),
      atEnd: window.atEnd,
      further: (at) => bytesAt(w + at, FAR_REACH),
      ...(decoded ? { decoded: (at: number, out: Buffer) => decoded(w + at, out) } : {}),
    });
    if (found) return "tooMany" in found ? found : { kind: found.kind, at: w + found.at };
    if (window.atEnd) break;
  }
  return undefined;
}
