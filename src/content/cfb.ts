// Compound files (CFB, [MS-CFB]; file-type's `cfb`): .doc, .xls, .ppt, and
// an OLE object inside a docx or a workbook. A compound file is a small file
// system: a stream's sectors need not lie in order (the FAT chains them;
// a stream under 4 KiB lies in the mini stream, in 64-byte sectors the
// mini FAT chains), so a key a scan of the bytes as they are sees cut by a
// sector boundary is whole in the stream put together. Word keeps its text
// in UTF-16LE or in an 8-bit code page; InspectContext.scan reads both.
//
// Every stream is put together from its chain and scanned (its last
// sector whole: what lies after the stream's end in it too), and read as the
// document it is when it is one (an embedded workbook's Package, a PDF's
// CONTENTS, a compound file inside, the file an OLE package holds:
// InspectContext.readNested); the directory is
// scanned (names), and so is every byte no stream holds: the header, the
// FAT, free sectors, sectors no chain reaches, unused mini sectors, bytes
// after the last sector. Chains are walked a sector at a time, each sector
// taken once: a loop, or a sector two chains share, is refused, so the
// reading is linear in the file's size.
//
// An encrypted document (Word's, Excel's or PowerPoint's password to open,
// an encrypted OOXML package) is refused: its text cannot be read.
//
// A workbook's strings are also read as text (biff.ts): the shared string
// table, formula results and text boxes, whole where a CONTINUE record cuts
// one.
//
// Not read: Word's piece table (a fast-saved document's text in pieces out
// of order is scanned piece by piece, as it lies in the stream).
import { scanWorkbookText } from "./biff.js";
import { u32le } from "./bytes.js";
import type { InspectContext } from "./inspect.js";
import { readInside } from "./images.js";

const SIGNATURE = [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1];
/** Sector numbers above this are markers: end of chain, free, a FAT or DIFAT sector. */
const MAX_SECTOR = 0xfffffffa;
const END_OF_CHAIN = 0xfffffffe;
const FREE = 0xffffffff;
const MINI_SECTOR = 64;
/** Streams under this size lie in the mini stream ([MS-CFB] 2.2: the header must say 4096). */
const MINI_CUTOFF = 4096;
const ENTRY = 128;
const STREAM = 2;
const ROOT = 5;
/** The stream of an OLE package, which holds a file after a header of its own. */
const OLE10_NATIVE = "\u0001Ole10Native";
/**
 * A document has tens of directory entries, a mail with its attachments
 * hundreds; each stream costs a scan of its own, so past this many the file
 * is refused rather than read part by part (a directory of a million empty
 * entries is 128 MB of directory).
 */
const MAX_DIRECTORY_ENTRIES = 100_000;

/** What a sector of the file holds, as far as the reading got: nothing known yet, the FAT's structure, or a stream's bytes (scanned with the stream). */
const UNCLAIMED = 0;
const STRUCTURE = 1;
const STREAM_DATA = 2;

/** True when `b` opens with the compound file signature. */
export function isCfb(b: Uint8Array): boolean {
  return b.length >= 512 && SIGNATURE.every((byte, i) => b[i] === byte);
}

interface Entry {
  name: string;
  type: number;
  start: number;
  size: number;
}

/** The file's sectors: who holds each (a chain walked through them takes each once). */
class Sectors {
  readonly size: number;
  /** Sectors the file holds after its header, the last perhaps cut short. */
  readonly count: number;
  readonly owner: Uint8Array;
  fat = new Uint32Array(0);

  constructor(
    readonly b: Uint8Array,
    readonly shift: number,
    private readonly ctx: InspectContext,
  ) {
    this.size = 1 << shift;
    this.count = Math.max(0, Math.ceil((b.length - this.size) / this.size));
    this.owner = new Uint8Array(this.count);
  }

  /** Sector `n`'s bytes (fewer for a last sector the file cuts short). */
  at(n: number): Uint8Array {
    return this.b.subarray((n + 1) * this.size, (n + 2) * this.size);
  }

  /** Takes sector `n` for `what`; refused where it is past the file's end or already taken (a loop, or two chains sharing it). */
  claim(n: number, role: number, what: string): void {
    if (n > MAX_SECTOR) throw this.ctx.unscannable(`${what} breaks off: its FAT gives the marker 0x${n.toString(16).toUpperCase()} where a sector should follow`);
    if (n >= this.count) throw this.ctx.unscannable(`${what} points to sector ${n}, past the end of the file (cut short?)`);
    if (this.owner[n] !== UNCLAIMED) throw this.ctx.unscannable(`${what} runs into sector ${n}, which another chain or itself already holds (a loop, or a damaged file)`);
    this.owner[n] = role;
  }

  /** The FAT's entry for sector `n`: the next sector of its chain. */
  next(n: number, what: string): number {
    if (n >= this.fat.length) throw this.ctx.unscannable(`${what} runs through sector ${n}, which its FAT does not cover`);
    return this.fat[n]!;
  }

  /** The sectors of the chain from `first` to its end-of-chain marker, each taken for `what`. */
  chain(first: number, role: number, what: string): number[] {
    const out: number[] = [];
    for (let n = first; n !== END_OF_CHAIN; n = this.next(n, what)) {
      this.claim(n, role, what);
      out.push(n);
    }
    return out;
  }

  /** The chain's sectors one after the other. */
  gather(chain: number[]): Buffer {
    return Buffer.concat(chain.map((n) => this.at(n)));
  }
}

export function inspectCfb(b: Uint8Array, ctx: InspectContext): void {
  if (!isCfb(b)) throw ctx.unscannable("its compound file header is cut short or damaged");
  const u32 = (at: number) => u32le(b, at);
  const major = b[26]! | (b[27]! << 8);
  const shift = b[30]! | (b[31]! << 8);
  if ((major !== 3 && major !== 4) || (shift !== 9 && shift !== 12)) throw ctx.unscannable(`its compound file header says version ${major} with sectors of 2^${shift} bytes, which this check does not read`);
  if ((b[32]! | (b[33]! << 8)) !== 6 || u32(56) !== MINI_CUTOFF) throw ctx.unscannable("its compound file header gives mini sectors other than those of the format");
  const sectors = new Sectors(b, shift, ctx);
  if (b.length < sectors.size) throw ctx.unscannable("its compound file header is cut short");
  readFat(sectors, ctx);

  const directory = sectors.gather(sectors.chain(u32(48), STREAM_DATA, "its directory"));
  ctx.scan("its directory", directory);
  const count = Math.floor(directory.length / ENTRY);
  if (count > MAX_DIRECTORY_ENTRIES) {
    throw ctx.unscannable(`its directory has ${count.toLocaleString("en")} entries, more than the ${MAX_DIRECTORY_ENTRIES.toLocaleString("en")} this check reads`, "send its content in another form");
  }
  const entries: Entry[] = [];
  for (let i = 0; i < count; i++) entries.push(entryAt(directory, i * ENTRY, major));

  const mini = readMiniStream(sectors, entries[0], u32(60), ctx);
  for (const e of entries) {
    if (e.type !== STREAM || e.size === 0) continue;
    const stored = e.size < MINI_CUTOFF ? mini.stream(e) : sectors.gather(sectors.chain(e.start, STREAM_DATA, `its stream ${e.name}`));
    // A writer may leave the file's last sector unpadded, not unwritten: a chain shorter than its stream is a damaged file.
    if (stored.length < e.size) throw ctx.unscannable(`its stream ${e.name} is longer than its chain of sectors`);
    // The stream's last sector whole: bytes left after its end are scanned with it.
    ctx.scan(e.name, stored);
    const bytes = stored.subarray(0, e.size);
    if (isEncrypted(e.name, bytes)) throw ctx.unscannable(`its ${e.name} stream is encrypted (a document protected by a password)`, "remove its password and export it again");
    // A workbook's strings whole, where a CONTINUE record cuts them (biff.ts).
    if (e.name === "Workbook" || e.name === "Book") scanWorkbookText(e.name, bytes, ctx);
    // The file an OLE package holds first, by the name a finding in it is known by; then the stream, a zip at its end
    // included (zip.ts zipReaderOf: unzip extracts it from the stream too, also where the package's header is damaged).
    if (e.name === OLE10_NATIVE) {
      const packaged = packagedFile(bytes);
      if (packaged) readInside(ctx, `the file packaged in ${e.name}`, packaged);
    }
    readInside(ctx, e.name, bytes);
  }
  mini.scanUnclaimed();
  scanOutsideStreams(sectors, ctx);
}

/**
 * Whether a stream says the document is encrypted: Word's FIB (fEncrypted),
 * a workbook's FILEPASS record before the end of its globals, PowerPoint's
 * Current User token, an encrypted OOXML file's package ([MS-DOC] 2.5.2,
 * [MS-XLS] 2.4.117, [MS-PPT] 2.3.2, [MS-OFFCRYPTO] 2.3.4.4). Its text is
 * then none this check can read.
 */
function isEncrypted(name: string, b: Buffer): boolean {
  if (name === "EncryptedPackage") return true;
  if (name === "WordDocument") return b.length >= 12 && b.readUInt16LE(0) === 0xa5ec && (b.readUInt16LE(10) & 0x0100) !== 0;
  if (name === "Current User") return b.length >= 16 && b.readUInt32LE(12) === 0xf3d1c4df;
  if (name !== "Workbook" && name !== "Book") return false;
  // The globals' records, up to their EOF record: a type, then a length.
  for (let at = 0; at + 4 <= b.length; at += 4 + b.readUInt16LE(at + 2)) {
    const type = b.readUInt16LE(at);
    if (type === 0x002f) return true;
    if (type === 0x000a) return false;
  }
  return false;
}

/**
 * The file an OLE package holds (Word's Insert > Object > Package, Outlook's
 * attachments): the \x01Ole10Native stream's size, flags, label and file
 * name (each NUL-ended), two 16-bit fields, the command (its length first),
 * then the data, its length first (as Apache POI and oletools read it);
 * `from`: where the label starts (an OLE1 package in RTF has no size and
 * flags first, 2). Undefined where the stream is no such package (the scan
 * of its bytes read it anyway).
 */
export function packagedFile(b: Buffer, from = 6): Buffer | undefined {
  let at = from;
  for (let strings = 0; strings < 2; strings++) {
    const nul = b.indexOf(0, at);
    if (nul < 0) return undefined;
    at = nul + 1;
  }
  at += 4;
  if (at + 4 > b.length) return undefined;
  at += 4 + u32le(b, at);
  if (at + 4 > b.length) return undefined;
  const size = u32le(b, at);
  return at + 4 + size <= b.length ? b.subarray(at + 4, at + 4 + size) : undefined;
}

/** The FAT: the sectors the DIFAT (the header's 109 entries, then its own chain of sectors) lists, one after the other. */
function readFat(sectors: Sectors, ctx: InspectContext): void {
  const b = sectors.b;
  const fatCount = u32le(b, 44);
  if (fatCount > sectors.count) throw ctx.unscannable(`its header lists ${fatCount} FAT sectors, more than the file holds`);
  const fatSectors: number[] = [];
  for (let i = 0; i < 109 && fatSectors.length < fatCount; i++) fatSectors.push(u32le(b, 76 + 4 * i));
  const perSector = sectors.size / 4;
  for (let n = u32le(b, 68); fatSectors.length < fatCount; ) {
    sectors.claim(n, STRUCTURE, "its DIFAT");
    const s = sectors.at(n);
    if (s.length < sectors.size) throw ctx.unscannable("its DIFAT runs past the end of the file");
    for (let i = 0; i < perSector - 1 && fatSectors.length < fatCount; i++) fatSectors.push(u32le(s, 4 * i));
    n = u32le(s, sectors.size - 4);
  }
  const fat = new Uint32Array(fatCount * perSector);
  fatSectors.forEach((n, k) => {
    sectors.claim(n, STRUCTURE, "its FAT");
    const s = sectors.at(n);
    if (s.length < sectors.size) throw ctx.unscannable("its FAT runs past the end of the file");
    for (let i = 0; i < perSector; i++) fat[k * perSector + i] = u32le(s, 4 * i);
  });
  sectors.fat = fat;
}

/** Directory entry `at` of `directory` ([MS-CFB] 2.6.1). */
function entryAt(directory: Buffer, at: number, major: number): Entry {
  const nameLength = Math.min(64, directory[at + 64]! | (directory[at + 65]! << 8));
  // The name's UTF-16 without its terminating NUL: a label for the part, escaped where it is shown.
  const name = directory.toString("utf16le", at, at + Math.max(0, nameLength - 2));
  // Version 3 files may hold anything in the size's high half ([MS-CFB] 2.6.3).
  const size = u32le(directory, at + 120) + (major === 4 ? u32le(directory, at + 124) * 2 ** 32 : 0);
  return { name, type: directory[at + 66]!, start: u32le(directory, at + 116), size };
}

interface MiniStream {
  /** A small stream's mini sectors, whole, one after the other. */
  stream(e: Entry): Buffer;
  /** Scans the mini sectors no small stream holds. */
  scanUnclaimed(): void;
}

/** The mini stream (the root entry's chain) and the mini FAT that chains its 64-byte sectors. */
function readMiniStream(sectors: Sectors, root: Entry | undefined, miniFatStart: number, ctx: InspectContext): MiniStream {
  const miniFatBytes = miniFatStart === END_OF_CHAIN || miniFatStart === FREE ? Buffer.alloc(0) : sectors.gather(sectors.chain(miniFatStart, STRUCTURE, "its mini FAT"));
  const miniFat = (n: number) => (4 * n + 4 <= miniFatBytes.length ? u32le(miniFatBytes, 4 * n) : FREE);
  const hasStream = root !== undefined && root.type === ROOT && root.size > 0 && root.start <= MAX_SECTOR;
  const bytes = hasStream ? sectors.gather(sectors.chain(root.start, STREAM_DATA, "its mini stream")) : Buffer.alloc(0);
  if (hasStream && bytes.length < root.size) throw ctx.unscannable("its mini stream is longer than its chain of sectors");
  const count = Math.ceil(bytes.length / MINI_SECTOR);
  const taken = new Uint8Array(count);
  return {
    stream(e) {
      const what = `its stream ${e.name}`;
      const pieces: Buffer[] = [];
      for (let n = e.start; n !== END_OF_CHAIN; n = miniFat(n)) {
        if (n >= count) throw ctx.unscannable(n > MAX_SECTOR ? `${what} breaks off: its mini FAT gives the marker 0x${n.toString(16).toUpperCase()} where a sector should follow` : `${what} points to mini sector ${n}, past the end of its mini stream`);
        if (taken[n] !== 0) throw ctx.unscannable(`${what} runs into mini sector ${n}, which another chain or itself already holds (a loop, or a damaged file)`);
        taken[n] = 1;
        pieces.push(bytes.subarray(n * MINI_SECTOR, (n + 1) * MINI_SECTOR));
      }
      const stored = Buffer.concat(pieces);
      if (stored.length < e.size) throw ctx.unscannable(`${what} is longer than its chain of mini sectors`);
      return stored;
    },
    scanUnclaimed() {
      forRuns(taken, (from, to) => ctx.scan("its mini stream's free sectors", bytes.subarray(from * MINI_SECTOR, to * MINI_SECTOR)));
    },
  };
}

/** Calls `scan(from, to)` for each run of entries of `owner` that are not `held` (no stream's). */
function forRuns(owner: Uint8Array, scan: (from: number, to: number) => void, held = 1): void {
  for (let from = 0; from < owner.length; ) {
    if (owner[from] === held) {
      from++;
      continue;
    }
    let to = from;
    while (to < owner.length && owner[to] !== held) to++;
    scan(from, to);
    from = to;
  }
}

/**
 * Every byte no stream holds, a run at a time: the header, the FAT and
 * DIFAT, free sectors and those no chain reaches, and what lies after the
 * sectors the FAT covers (bytes appended to the file).
 */
function scanOutsideStreams(sectors: Sectors, ctx: InspectContext): void {
  const covered = Math.min(sectors.count, sectors.fat.length);
  const offset = (n: number) => (n + 1) * sectors.size;
  ctx.scan("its header", sectors.b.subarray(0, sectors.size), 0);
  forRuns(sectors.owner.subarray(0, covered), (from, to) => ctx.scan("its sectors that no stream holds", sectors.b.subarray(offset(from), offset(to)), offset(from)), STREAM_DATA);
  if (covered < sectors.count) ctx.scan("the bytes after its last sector", sectors.b.subarray(offset(covered)), offset(covered));
}
