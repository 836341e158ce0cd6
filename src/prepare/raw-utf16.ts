// The raw scan's UTF-16 reading. A binary format no reader here knows (a
// TIFF, a type file-type knows and no reader does) may hold its text as
// UTF-16 (Windows writes a TIFF's XPComment and XPTitle tags as UTF-16LE,
// XMP may be UTF-16BE), where an ASCII key is every other byte and the scan of the
// bytes as they are misses it. As InspectContext.scan does for a parsed
// part, the bytes are also read as UTF-16 from an even and from an odd
// byte, little-endian, and big-endian where a big-endian byte order mark
// lies in the block or the tail before it (utf16.ts UTF16_READINGS),
// narrowed to one byte per unit, each reading by a SecretScanner of its own.
//
// Narrowing costs more than the scan, so a block is read at an alignment
// only where a narrowed window could find something: when the block holds
// UTF-16 text at that alignment (utf16TextAlignments: four ASCII units in
// an aligned 8 bytes, which any credential's eight characters fill), or
// the bytes before it that its window judges with it do. Elsewhere that
// alignment's scanners stop; the next block that needs them starts them anew
// with the narrowed tail of the block before as its context: the state it
// would be in had it run all along. So a block's verdict does not depend
// on where the scan began, and a file judged in ranges (text-check.ts) is
// judged as when scanned whole.
import type { KnownSecrets } from "../content/known.js";
import { BLOCK, CONTEXT, type Finding, OVERLAP, SecretScanner } from "../content/scan.js";
import { FROM_EVEN, FROM_ODD, UTF16_READINGS, bigEndianMarks, narrowedUtf16, utf16TextAlignments } from "../content/utf16.js";

/**
 * The bytes before a block that its narrowed windows read (their deferred
 * units and context, two bytes a unit, and the odd alignment's byte before
 * them); a multiple of 8, as utf16TextAlignments' groups are aligned.
 */
export const UTF16_TAIL = 2 * (OVERLAP + CONTEXT) + 8;

type Reading = (typeof UTF16_READINGS)[number];

export class RawUtf16Scan {
  /** Each reading's scanner (UTF16_READINGS' order), while it runs. */
  private readonly scanners: (SecretScanner | undefined)[] = UTF16_READINGS.map(() => undefined);
  /** The last bytes before the next block (at most UTF16_TAIL). */
  private readonly tail = Buffer.alloc(UTF16_TAIL);
  private tailLength = 0;
  /** The alignments at which the tail holds UTF-16 text: the next block is read at them whatever it holds. */
  private tailText = 0;
  /** The alignments at which the tail holds a big-endian byte order mark: the next block is read big-endian there too. */
  private tailMarks = 0;
  /** A block's units put together when they are not the block as it is. */
  private units = Buffer.alloc(BLOCK + 2);

  /**
   * `position` is where the first block starts in the file (even); `before`,
   * the bytes before it, at least UTF16_TAIL of them when there are as many.
   */
  constructor(
    private readonly known: KnownSecrets,
    private position = 0,
    before?: Uint8Array,
  ) {
    if (position % 2 !== 0) throw new Error(`a UTF-16 scan cannot start at the odd byte ${position}`);
    if (before && before.length > 0) {
      this.keepTail(before);
      this.tailText = utf16TextAlignments(this.tail.subarray(0, this.tailLength));
      this.tailMarks = bigEndianMarks(this.tail.subarray(0, this.tailLength));
    }
  }

  /**
   * Judges the next block as UTF-16 (every block but the last of an even
   * length); answers the first credential it finds, its offset in the file.
   */
  judge(block: Buffer, final: boolean): Finding | undefined {
    const start = this.position;
    this.position += block.length;
    const text = utf16TextAlignments(block);
    const read = text | this.tailText;
    // Big-endian where a mark lies in the block, in the tail, or across the seam between them.
    const bigEndian = read && read & (this.tailMarks | bigEndianMarks(block) | this.seamMarks(block));
    let found: Finding | undefined;
    UTF16_READINGS.forEach((reading, i) => {
      if (!((reading.order === "le" ? read : bigEndian) & reading.bit)) {
        this.scanners[i] = undefined;
        return;
      }
      const f = this.scan(i, reading, block, start, final);
      if (f && (!found || f.offset < found.offset)) found = f;
    });
    if (final) return found;
    this.keepTail(block);
    // The tail lies within the block (blocks are longer), so it holds text only where the block does.
    const mayHold = block.length < UTF16_TAIL ? FROM_EVEN | FROM_ODD : text;
    this.tailText = mayHold && utf16TextAlignments(this.tail.subarray(0, this.tailLength)) & mayHold;
    this.tailMarks = bigEndianMarks(this.tail.subarray(0, this.tailLength));
    return found;
  }

  /** The marks across the seam: in the tail's last two bytes (it ends at an even byte) and the block's first two. */
  private seamMarks(block: Buffer): number {
    if (this.tailLength < 2) return 0;
    return bigEndianMarks(Buffer.concat([this.tail.subarray(this.tailLength - 2, this.tailLength), block.subarray(0, 2)]));
  }

  /** Scans the block's units as the `i`th reading; the first credential found, at its letter's byte in the file. */
  private scan(i: number, { shift, order, at }: Reading, block: Buffer, start: number, final: boolean): Finding | undefined {
    const scanner = (this.scanners[i] ??= this.startScanner(shift, order, start));
    scanner.scanBlock(narrowedUtf16(this.unitsOf(block, start, shift, final), order), final);
    const f = scanner.finding;
    return f && { what: f.what, offset: f.offset + shift + at };
  }

  /**
   * The scanner of the units from byte `start` on at one alignment, in the
   * state a scan from the file's start would leave it: the narrowed tail is
   * its context, its last OVERLAP units still to be judged.
   */
  private startScanner(shift: 0 | 1, order: "le" | "be", start: number): SecretScanner {
    // From an odd byte, the block's first unit is the byte before it and its first byte.
    const scanner = new SecretScanner(this.known, shift === 0 ? start / 2 : Math.max(0, start / 2 - 1), 2);
    if (start > 0) {
      const tail = this.tail.subarray(0, this.tailLength);
      const end = tail.length - shift;
      scanner.setContext(narrowedUtf16(tail.subarray(Math.max(0, end % 2), Math.max(0, end)), order));
    }
    return scanner;
  }

  /**
   * The bytes of this block's units from an even byte (shift 0) or an odd one
   * (shift 1): those whose second byte is in the block. A last byte without
   * its pair waits for the next block, or, at the file's end, is a unit of
   * its own (as InspectContext reads it).
   */
  private unitsOf(block: Buffer, start: number, shift: 0 | 1, final: boolean): Buffer {
    if (shift === 0 && block.length % 2 === 0) return block;
    if (this.units.length < block.length + 2) this.units = Buffer.alloc(block.length + 2);
    let length = 0;
    if (shift === 1 && start > 0) this.units[length++] = this.tail[this.tailLength - 1]!;
    const body = shift === 1 && start === 0 ? block.subarray(1) : block;
    body.copy(this.units, length);
    length += body.length;
    if (length % 2 === 1) {
      if (final) this.units[length++] = 0;
      else length--;
    }
    return this.units.subarray(0, length);
  }

  /** Keeps the last UTF16_TAIL bytes seen, `bytes` the latest. */
  private keepTail(bytes: Uint8Array): void {
    if (bytes.length >= UTF16_TAIL) {
      this.tail.set(bytes.subarray(bytes.length - UTF16_TAIL));
      this.tailLength = UTF16_TAIL;
      return;
    }
    const kept = Math.min(this.tailLength, UTF16_TAIL - bytes.length);
    this.tail.copyWithin(0, this.tailLength - kept, this.tailLength);
    this.tail.set(bytes, kept);
    this.tailLength = kept + bytes.length;
  }
}
