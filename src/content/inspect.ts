// What every carrier shares: where a part lies, the scan of its bytes with
// the refusal it leads to, and the budget of inflated bytes (zip, PDF, PNG
// text chunks) that turns a decompression bomb into a refusal instead of
// exhausting memory.
import { Refusal } from "../core/errors.js";
import { escapeText } from "../core/escape.js";
import { formatBytes } from "../core/units.js";
import type { ByteSource } from "./byte-source.js";
import { type ArchiveKind, GZIP, type HiddenArchive, type RawSearch, findHiddenArchive, findInFile, opensAs, rawSearchReach } from "./hidden-archives.js";
import type { KnownSecrets } from "./known.js";
import { BLOCK, type Finding, SecretScanner, scanBytes } from "./scan.js";
import { UTF16_READINGS, bigEndianMarks, narrowUtf16, utf16TextAlignments } from "./utf16.js";

/** Inflated bytes one file may produce in all. */
export const MAX_INFLATED_TOTAL = 256 * 1024 * 1024;
/** Past this size, a part may not inflate to more than MAX_RATIO times its compressed size. */
export const RATIO_FREE_BYTES = 1024 * 1024;
export const MAX_RATIO = 100;
/**
 * Each part costs a fixed few microseconds to scan and ten or more to
 * inflate, whatever its size: a 49 MB PDF of 620,000 one-byte compressed
 * streams took 35 s. So a file may have this many parts scanned, and each
 * compressed part counts as at least MIN_INFLATE_CHARGE bytes of
 * MAX_INFLATED_TOTAL (65,536 of them at most): about a second at worst.
 */
export const MAX_PARTS = 300_000;
export const MIN_INFLATE_CHARGE = 4 * 1024;
/** What a part of undeclared size is first inflated into: this many times its compressed size, at least MIN_GUESS (inflateCounted). */
const GUESSED_RATIO = 16;
const MIN_GUESS = 64 * 1024;

/**
 * The first credential in `units` read as UTF-16 (`order`), each unit
 * narrowed to a byte (utf16.ts), an odd last byte a unit of its own (its
 * other byte NUL); as scanBytes would find it in the narrowed text, which
 * is made a block at a time into one buffer: made whole, each reading of a
 * 200 MiB part was 100 MiB more, and an odd last byte a copy of the part.
 */
function scanUtf16Units(units: Uint8Array, order: "le" | "be", known: KnownSecrets): Finding | undefined {
  const count = (units.length + 1) >> 1;
  const narrowed = (from: number, to: number, out?: Buffer): Buffer => {
    const even = Math.min(2 * to, units.length & ~1);
    const state = { pendingHigh: false, valid: true, hasNul: false };
    const block = out === undefined ? Buffer.allocUnsafe(to - from) : out.subarray(0, to - from);
    narrowUtf16(units.subarray(2 * from, even), order, state, block);
    // The odd last byte: little-endian, the unit is that byte; big-endian, the byte times 256 (a non-word byte unless NUL).
    if (2 * to > units.length) block[to - from - 1] = order === "le" ? units[units.length - 1]! : units[units.length - 1] === 0 ? 0 : 0x80;
    return block;
  };
  if (count <= BLOCK) return scanBytes(narrowed(0, count), known);
  const scanner = new SecretScanner(known);
  const block = Buffer.allocUnsafe(BLOCK);
  for (let from = 0; from < count && !scanner.finding; from += BLOCK) {
    const to = Math.min(count, from + BLOCK);
    scanner.scanBlock(narrowed(from, to, block), to === count);
  }
  return scanner.finding;
}


/** What reads a part's bytes as a document of its format. */
export type Reader = (bytes: Uint8Array, ctx: InspectContext) => void;
/** The reader of a document found inside another (a PDF in a docx, a workbook attached to a PDF), by its first bytes. */
export type NestedReaderOf = (bytes: Uint8Array) => Reader | undefined;
/** Documents inside documents are read this deep: a zip that holds itself ends here. */
export const MAX_NESTING = 2;

/**
 * A raw deflate stream made only of stored blocks, complete: where its
 * bytes lie in it, read without zlib; undefined for any other stream (zlib
 * inflates it). A picture or a video in a docx or a zip is such a stream
 * (deflate stores what it cannot compress), and zlib's inflate of it costs
 * ~0.6 ms per MiB in copies.
 */
function storedBlocks(compressed: Uint8Array): { size: number; consumed: number } | undefined {
  let size = 0;
  // Each stored block starts on a byte: the bits after BFINAL and BTYPE (00) pad it, then LEN and its complement.
  for (let at = 0; at + 5 <= compressed.length; ) {
    const head = compressed[at]!;
    if ((head & 0x06) !== 0) return undefined;
    const length = compressed[at + 1]! | (compressed[at + 2]! << 8);
    if ((length ^ (compressed[at + 3]! | (compressed[at + 4]! << 8))) !== 0xffff || at + 5 + length > compressed.length) return undefined;
    size += length;
    at += 5 + length;
    if (head & 0x01) return { size, consumed: at };
  }
  return undefined;
}

/**
 * Copies the data of the stored blocks in `compressed[0, consumed)`
 * (storedBlocks said they are) into `out`. Nothing is made per block: a
 * 40 MB stream of 8 million empty blocks held a view of each, 2 GB, 3 s.
 */
function copyStoredBlocks(compressed: Uint8Array, consumed: number, out: Buffer): void {
  const from = Buffer.from(compressed.buffer, compressed.byteOffset, consumed);
  let o = 0;
  for (let at = 0; at < consumed; ) {
    const length = from[at + 1]! | (from[at + 2]! << 8);
    if (length > 0) o += from.copy(out, o, at + 5, at + 5 + length);
    at += 5 + length;
  }
}

/** What node:zlib's inflate answers with `info`: the output, and its engine, whose bytesWritten counts the input it took. */
interface InflateResult {
  buffer: Buffer;
  engine: { bytesWritten: number };
}

export class InspectContext {
  private inflated = 0;
  private parts = 0;
  /** The container part being read by a format reader (a picture inside a docx), if any. */
  private within: string | undefined;
  /** How many documents deep the reading is (readNested). */
  private nesting = 0;

  /** The host's known secrets, read at the first search: a picture with nothing to search (a chart's PNG) never reads the .env files. */
  private knownSecrets: KnownSecrets | (() => KnownSecrets);

  /**
   * `rawSearch`: where the file's own bytes are searched for archives
   * (refuseHiddenArchiveInFile, after its reader): a part of the file the
   * search covers is not searched again.
   */
  constructor(
    readonly ext: string,
    known: KnownSecrets | (() => KnownSecrets),
    private readonly nestedReaderOf: NestedReaderOf = () => undefined,
    private readonly rawSearch?: RawSearch,
    private readonly readsEveryMember: (bytes: Uint8Array) => boolean = () => false,
  ) {
    this.knownSecrets = known;
  }

  private get known(): KnownSecrets {
    if (typeof this.knownSecrets === "function") this.knownSecrets = this.knownSecrets();
    return this.knownSecrets;
  }

  /** What inflate() made at the start of a buffer of its own (no pool's), the rest of which nothing uses. */
  private readonly alone = new WeakSet<Uint8Array>();

  /** Whether `bytes` is what inflate() made at the start of a buffer of its own: a reader may write after it. */
  ownsBufferOf(bytes: Uint8Array): boolean {
    return this.alone.has(bytes);
  }

  /**
   * `view`, the first bytes of `bytes` (what a reader decoding in place
   * made of them: a PDF stream's predictor undone), owning its buffer as
   * `bytes` did (ownsBufferOf): a reader may write after it as well.
   */
  shortened(bytes: Uint8Array, view: Uint8Array): Uint8Array {
    if (this.alone.has(bytes) && view.buffer === bytes.buffer && view.byteOffset === bytes.byteOffset) this.alone.add(view);
    return view;
  }

  /**
   * `bytes` for a reader that keeps them to the end (a PDF's fonts): where
   * inflate() made them in a buffer more than twice their size (one as large
   * as what the file may still inflate, of which only the pages written take
   * memory), a copy of their own size.
   */
  fitted(bytes: Uint8Array): Uint8Array {
    return this.alone.has(bytes) && bytes.buffer.byteLength > 2 * bytes.length ? Buffer.from(bytes) : bytes;
  }

  /** A buffer given back by release(), where the next stored stream is copied. */
  private spare: Buffer | undefined;
  /** The buffers storedOut() handed out (only those may be given back). */
  private readonly lent = new WeakSet<Uint8Array>();

  private storedOut(size: number): Buffer {
    const spare = this.spare;
    const out = spare && spare.length >= size ? spare.subarray(0, size) : Buffer.allocUnsafeSlow(size);
    if (out.buffer === spare?.buffer) this.spare = undefined;
    this.lent.add(out);
    return out;
  }

  /**
   * Gives back what inflate() returned for a part once its reader is done
   * with it and keeps nothing of it (a picture in a zip): the next stream of
   * stored blocks is copied there, so memory is touched once rather than
   * once per part (fresh pages cost ~0.5 ms per MiB to fault in). Anything
   * inflate() did not copy itself is ignored.
   */
  release(bytes: Uint8Array): void {
    if (!this.lent.delete(bytes)) return;
    const whole = Buffer.from(bytes.buffer, 0, bytes.buffer.byteLength);
    if (!this.spare || whole.length > this.spare.length) this.spare = whole;
  }

  /**
   * Refuses when `bytes` (the part named `part`) holds a credential: as it
   * is, and, when it holds text in UTF-16, also as UTF-16 at each alignment
   * that holds text, little-endian, and big-endian after a big-endian byte
   * order mark (utf16.ts UTF16_READINGS: Windows metadata, an embedded
   * object's strings, a PDF string in UTF-16BE hold ASCII only every other
   * byte), unless `asUtf16` is false (an .xls workbook's strings, already
   * taken out of their UTF-16).
   */
  scan(part: string, bytes: Uint8Array, offsetBase?: number, asUtf16 = true): void {
    this.countPart();
    this.searchAll(part, bytes, offsetBase, asUtf16, true);
  }

  /**
   * scan() for text a reader made of a part (an XML part's text, the
   * strings a PDF shows, an RTF file's text): no unpacker reads it, so no
   * archive is looked for in it (a page about bzip2 holds its all-ASCII
   * magic, `BZh91AY&SY`).
   */
  scanDerivedText(part: string, text: Uint8Array, asUtf16 = true): void {
    this.countPart();
    this.searchAll(part, text, undefined, asUtf16, false);
  }

  /**
   * scan()'s search now, without counting the part or refusing: the refusal
   * it makes, if any, for told() to count and throw later (a PDF's content
   * streams are scanned before the text they show is written over them, and
   * what they hold is told after that text's findings).
   */
  findLater(part: string, bytes: Uint8Array): Refusal | undefined {
    try {
      this.searchAll(part, bytes, undefined, true, true);
    } catch (err) {
      if (err instanceof Refusal) return err;
      throw err;
    }
    return undefined;
  }

  /** Counts a part findLater() scanned, and throws what it found there. */
  told(found: Refusal | undefined): void {
    this.countPart();
    if (found) throw found;
  }

  /** scan() but for counting the part; `raw`: bytes of the file (or of a part it holds), where an archive is looked for too. */
  private searchAll(part: string, bytes: Uint8Array, offsetBase: number | undefined, asUtf16: boolean, raw: boolean): void {
    this.search(part, bytes, offsetBase, 1, 0);
    if (asUtf16) this.searchUtf16(part, bytes, offsetBase);
    if (raw) this.refuseHiddenArchive(part, bytes, offsetBase);
  }

  /** search() on `bytes` read as UTF-16, where it holds UTF-16 text. */
  private searchUtf16(part: string, bytes: Uint8Array, offsetBase: number | undefined): void {
    // Each reading only where the part holds text at its letters' alignment (most parts hold it at one), big-endian after its mark.
    const text = utf16TextAlignments(bytes);
    if (text === 0) return;
    const bigEndian = text & bigEndianMarks(bytes);
    for (const { shift, order, bit, at } of UTF16_READINGS) {
      if (!((order === "le" ? text : bigEndian) & bit)) continue;
      // An odd last byte is a unit of its own (text whose last NUL is cut off).
      this.report(part, scanUtf16Units(bytes.subarray(shift), order, this.known), offsetBase, 2, shift + at);
    }
  }

  /**
   * Refuses `bytes` (the part `part`) when an archive no reader here
   * inflates starts in it (hidden-archives.ts: 7-Zip and cabextract
   * extract it from whatever bytes surround it): every part scanned as it
   * is passes here, so a zip entry, a tar member, a PDF's attachment or a
   * stream decoded are all searched by the same rule. A part of the file
   * itself (at `offsetBase`) is searched only where the search of the
   * file's bytes (refuseHiddenArchiveInFile) does not reach: Cabinets are
   * searched there everywhere, the other kinds in its first 8 MiB. A gzip
   * member is not looked for in a container whose reader reads every member
   * it holds and every byte between them (a gzip file, a zip, a tar, a
   * compound file: `readsEveryMember`).
   */
  refuseHiddenArchive(part: string, bytes: Uint8Array, offsetBase?: number): void {
    const raw = this.within === undefined && offsetBase !== undefined ? this.rawSearch : undefined;
    const range = raw && ((kind: ArchiveKind) => this.notSearchedRaw(raw, kind, offsetBase!, bytes.length));
    const found = findHiddenArchive(bytes, {
      ...(range ? { range } : {}),
      decoded: (at, out) => this.scanDecoded(part, at, out, offsetBase),
      readsGzip: () => this.readsEveryMember(bytes),
    });
    this.refuseFound(part, found, offsetBase);
  }

  /** The starts of a part of the file at `offsetBase` that the search of the file's own bytes (`raw`) leaves to `kind`'s search. */
  private notSearchedRaw(raw: RawSearch, kind: ArchiveKind, offsetBase: number, length: number): readonly [number, number] | undefined {
    const from = Math.max(0, rawSearchReach(raw, kind) - offsetBase);
    return from < length ? [from, length] : undefined;
  }

  /**
   * Refuses the file when an archive no reader here inflates starts in its
   * own bytes where 7-Zip or cabextract finds one (`rawSearch`:
   * hidden-archives.ts findInFile): inside the media data no reader reads
   * (an mp4's mdat, a PNG's IDAT, a JPEG's scan, audio frames, a PDF's
   * images) as anywhere else. Called once the reader is done.
   */
  refuseHiddenArchiveInFile(src: ByteSource): void {
    if (!this.rawSearch) return;
    this.refuseFound("its bytes", findInFile(src, this.rawSearch, (at, out) => this.scanDecoded("its bytes", at, out, 0)), 0);
  }

  private refuseFound(part: string, found: HiddenArchive | undefined, offsetBase: number | undefined): void {
    if (found === undefined) return;
    if ("tooMany" in found) throw this.unscannable(`${part} holds more archive signatures, with headers to check, than this check reads`, "send its content in another form");
    const at = offsetBase === undefined || this.within !== undefined ? `at byte ${found.at} of it` : `at byte ${offsetBase + found.at} of the file`;
    throw this.unscannable(
      `an archive compressed with ${found.kind} starts in ${part} (${at}): this check does not read it, and an unpacker (7-Zip, cabextract, unrar) extracts it from there`,
      "send what it holds as a .zip or a .tar.gz, which this check reads",
    );
  }

  /**
   * Scans what a gzip member that is not taken for one (hidden-archives.ts
   * GZIP_DECODED) decodes to before it fails or ends: 7-Zip writes that out
   * (with an error), so a key in it is found. Searched for archives too, a
   * document deeper (the bytes may hold another such member: a member that
   * decodes to itself ends there); past the depth documents are read to,
   * for credentials only.
   */
  private scanDecoded(part: string, at: number, decoded: Buffer, offsetBase: number | undefined): void {
    const where = offsetBase === undefined || this.within !== undefined ? `at byte ${at} of ${part}` : `at byte ${offsetBase + at} of the file`;
    const member = `the damaged gzip member ${where}`;
    if (this.nesting >= MAX_NESTING) this.scanDerivedText(`what ${member} decodes to`, decoded);
    else this.readDeeper(member, () => this.scan(`what ${member} decodes to`, decoded));
  }

  /** Scans text given as UTF-16 (`order`), narrowed as the text scan does it. */
  scanUtf16(part: string, bytes: Uint8Array, order: "le" | "be"): void {
    this.countPart();
    this.report(part, scanUtf16Units(bytes.subarray(0, bytes.length & ~1), order, this.known), undefined, 2, 0);
  }

  private countPart(): void {
    if (++this.parts > MAX_PARTS) {
      throw new Refusal("unscannable_content", `the .${this.ext} file holds more than ${MAX_PARTS.toLocaleString("en")} parts to read (streams, entries, chunks), more than this check reads for one file; send its content in another form`);
    }
  }

  /** Refuses when `bytes` holds a credential; its offsets are `scale` times those in the part, plus `shift`. */
  private search(part: string, bytes: Uint8Array, offsetBase: number | undefined, scale: number, shift: number): void {
    this.report(part, scanBytes(bytes, this.known), offsetBase, scale, shift);
  }

  /** Refuses for `finding`, if any, in `part`; see search(). */
  private report(part: string, finding: Finding | undefined, offsetBase: number | undefined, scale: number, shift: number): void {
    if (!finding) return;
    part = this.named(part);
    const offset = finding.offset * scale + shift;
    const at = offsetBase === undefined || this.within !== undefined ? `in ${part}, at byte ${offset} of it` : `in ${part}, at byte ${offsetBase + offset} of the file`;
    throw new Refusal("secret_detected", `the .${this.ext} file holds what looks like ${finding.what} (${at}); remove it before sending`);
  }

  /**
   * Inflates a part within the file's budget; a bomb is refused with
   * `decompression_bomb`. `sizeHint`, the size a container declares, sizes
   * the output (it bounds nothing). The output starts a buffer of its own,
   * within one as large as the part may inflate to, of which only the
   * pages written take memory: a reader that keeps it to the end takes
   * fitted() of it.
   */
  inflate(part: string, compressed: Uint8Array, kind: "raw" | "zlib", sizeHint = 0): Buffer {
    return this.inflateCounted(part, compressed, kind, sizeHint).out;
  }

  /**
   * inflate(), also saying how many bytes of `compressed` the stream took
   * (what follows is not the stream's). "gzip" reads every member of a
   * multi-member file; bytes after the last one that are not a further
   * member are refused by zlib, except NULs (tape padding), which it skips.
   */
  inflateCounted(part: string, compressed: Uint8Array, kind: "raw" | "zlib" | "gzip", sizeHint = 0): { out: Buffer; consumed: number } {
    if (this.inflated + MIN_INFLATE_CHARGE > MAX_INFLATED_TOTAL) {
      throw new Refusal("decompression_bomb", `${this.named(part)} of the .${this.ext} file inflates past the ${formatBytes(MAX_INFLATED_TOTAL)} this check inflates for one file (each compressed part counts as at least ${formatBytes(MIN_INFLATE_CHARGE)}): refused as a decompression bomb`);
    }
    const remaining = MAX_INFLATED_TOTAL - this.inflated;
    const byRatio = Math.max(RATIO_FREE_BYTES, compressed.length * MAX_RATIO);
    const limit = Math.min(remaining, byRatio);
    const stored = kind === "raw" ? storedBlocks(compressed) : undefined;
    if (stored && stored.size <= limit) {
      const out = this.storedOut(stored.size);
      copyStoredBlocks(compressed, stored.consumed, out);
      this.inflated += Math.max(out.length, MIN_INFLATE_CHARGE);
      return { out, consumed: stored.consumed };
    }
    // The output in one buffer: of the declared size (plus one byte, so that a true declaration fills no second), else
    // of GUESSED_RATIO times the compressed size; past that, the part is inflated again into one as large as it may
    // inflate to (only the pages written take memory; fresh pages for each part cost a many-stream PDF 15% more). A zip
    // directory that understates a size, and a part that compresses better than the guess, pay part of an inflate more.
    const guess = sizeHint > 0 ? sizeHint : Math.max(MIN_GUESS, compressed.length * GUESSED_RATIO);
    const guessed = guess < limit ? this.zlibInflate(part, compressed, kind, guess, guess + 1) : undefined;
    const result = guessed ?? this.zlibInflate(part, compressed, kind, limit, limit);
    if (result === undefined) {
      const why = limit === remaining ? `past the ${formatBytes(MAX_INFLATED_TOTAL)} this check inflates for one file` : `to more than ${MAX_RATIO} times its compressed size`;
      throw new Refusal("decompression_bomb", `${this.named(part)} of the .${this.ext} file inflates ${why}: refused as a decompression bomb`);
    }
    const out = result.buffer;
    this.alone.add(out);
    this.inflated += Math.max(out.length, MIN_INFLATE_CHARGE);
    return { out, consumed: result.engine.bytesWritten };
  }

  /**
   * node:zlib's inflate of `compressed` into one buffer of `chunkSize`
   * bytes, at most `max` of them; undefined past `max`. zlib writes as much
   * as its output buffer holds before it makes another: in chunks of its
   * default 16 KiB, a PDF stream of 240 MiB made 15,000 of them, then their
   * concatenation, twice the output at once (805 MB resident). One buffer
   * as large as the part may inflate to costs only the pages written.
   */
  private zlibInflate(part: string, compressed: Uint8Array, kind: "raw" | "zlib" | "gzip", max: number, chunkSize: number): InflateResult | undefined {
    // node:zlib is loaded only by a file that holds compressed parts.
    const zlib = process.getBuiltinModule("node:zlib");
    try {
      // At least 4 KiB: a smaller buffer is a slice of Node's shared pool, and the output must start a buffer of its own (ownsBufferOf).
      const options = { maxOutputLength: Math.max(1, max), finishFlush: zlib.constants.Z_SYNC_FLUSH, chunkSize: Math.max(4096, chunkSize), info: true };
      const inflate = kind === "raw" ? zlib.inflateRawSync : kind === "zlib" ? zlib.inflateSync : zlib.gunzipSync;
      // With `info`, node:zlib answers the output and its engine, whose bytesWritten counts the input it took.
      return inflate(compressed, options) as unknown as InflateResult;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE") return undefined;
      throw this.unscannable(`${part} does not inflate (${(err as Error).message})`);
    }
  }

  /**
   * `part` with the container part it lies in, if any (`word/document.xml
   * of word/embeddings/report.docx`), escaped: entry names are the file's.
   */
  private named(part: string): string {
    return escapeText(this.within === undefined ? part : `${part} of ${this.within}`);
  }

  /** Bytes the file may still decode before its inflate budget is spent. */
  get decodeBudgetLeft(): number {
    return Math.max(0, MAX_INFLATED_TOTAL - this.inflated);
  }

  /** Counts `bytes` decoded from `part` some other way (ASCII85's `z`, text through a font's map) against the file's inflate budget. */
  spend(part: string, bytes: number): void {
    this.inflated += bytes;
    if (this.inflated > MAX_INFLATED_TOTAL) {
      throw new Refusal("decompression_bomb", `${this.named(part)} of the .${this.ext} file decodes past the ${formatBytes(MAX_INFLATED_TOTAL)} this check inflates for one file: refused as a decompression bomb`);
    }
  }

  /** The content could not be read to check it: refused rather than let out unchecked. */
  unscannable(why: string, remedy = "export it again"): Refusal {
    // `why` may hold an entry's name, or zlib's words about the file's bytes: escaped with the rest.
    const inside = this.within === undefined ? "" : ` (in ${this.within})`;
    return new Refusal("unscannable_content", `the .${this.ext} file could not be checked for secrets: ${escapeText(`${why}${inside}`)}; ${remedy}`);
  }

  /**
   * Reads `part`, a file inside a container, with its format's `reader`:
   * what the reader finds is named inside `part`, and bytes after its end
   * are scanned but not refused on their own (the file sent is the container).
   */
  readWithin(part: string, bytes: Uint8Array, reader: Reader): void {
    this.inPart(part, () => reader(bytes, this));
  }

  /** Runs `read` with what it finds named inside `part`. */
  inPart(part: string, read: () => void): void {
    const outer = this.within;
    this.within = outer === undefined ? part : `${part} of ${outer}`;
    try {
      read();
    } finally {
      this.within = outer;
    }
  }

  /**
   * Reads `bytes` (the part `part`, already scanned as bytes) as the
   * document it is, when it is one this check reads (a zip, a PDF), at most
   * MAX_NESTING deep: its compressed parts are otherwise never seen, so a
   * document deeper is refused, not published unread (a key in a docx in a
   * docx in a docx went out so).
   */
  readNested(part: string, bytes: Uint8Array): void {
    const reader = this.nestedReaderOf(bytes);
    if (reader) this.readDeeper(part, () => this.readWithin(part, bytes, reader));
  }

  /** Whether readNested reads `bytes` as a document (a reader may write over a part's bytes only where none does). */
  isDocument(bytes: Uint8Array): boolean {
    return this.nestedReaderOf(bytes) !== undefined;
  }

  /**
   * Reads the document `part` with `read`, one level deeper: a document
   * inside this one (readNested), or one appended to it (a zip after a
   * PDF's %%EOF, which unzip extracts: zip.ts readAppendedZip).
   */
  readDeeper(part: string, read: () => void): void {
    if (this.nesting >= MAX_NESTING) {
      throw this.unscannable(`${part} is a document ${MAX_NESTING + 1} deep inside others, and documents are read ${MAX_NESTING} deep`, "send the documents inside it as files of their own");
    }
    this.nesting++;
    try {
      read();
    } finally {
      this.nesting--;
    }
  }

  /**
   * Bytes after the format's end: scanned, then refused on their own for an
   * image; where they are not (a picture inside a docx), a gzip file there
   * is read as one: 7-Zip opens it there (bytes that open with gzip's
   * signature go to readNested, whose reader is a gzip file's where they
   * are one: archive.ts isGzip).
   */
  trailing(bytes: Uint8Array, endOffset: number, marker: string, refuse: boolean): void {
    if (bytes.length === 0) return;
    const part = `the ${bytes.length} bytes after its ${marker}`;
    this.scan(part, bytes, endOffset);
    if (refuse && this.within === undefined) {
      throw new Refusal("trailing_data", `the .${this.ext} file has ${bytes.length} bytes after its ${marker}; a generated image has none (an archive can ride inside a picture that way): export it again`);
    }
    if (opensAs(bytes, GZIP)) this.readNested(part, bytes);
  }
}
