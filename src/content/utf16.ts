// UTF-16 text (a Windows editor's "Unicode", with its byte order mark) read
// for the secret scan: each code unit narrowed to one byte, so the rules,
// which are ASCII, see the text as they would see it in UTF-8 (a code unit
// above U+00FF reads as a non-word byte), and offsets stay proportional.

/** The byte order a BOM at the start of `head` announces, if any. */
export function utf16Order(head: Uint8Array): "le" | "be" | undefined {
  if (head.length >= 2 && head[0] === 0xff && head[1] === 0xfe) return "le";
  if (head.length >= 2 && head[0] === 0xfe && head[1] === 0xff) return "be";
  return undefined;
}

/** What the narrowing saw: validity carried from one block to the next. */
export interface Utf16State {
  /** The previous block ended on a high surrogate. */
  pendingHigh: boolean;
  valid: boolean;
  hasNul: boolean;
}

/** `block` (an even number of bytes) narrowed to one byte per code unit (into `out`, given); `state` is updated. */
export function narrowUtf16(block: Uint8Array, order: "le" | "be", state: Utf16State, out: Buffer = Buffer.allocUnsafe(block.length >> 1)): Buffer {
  const units = block.length >> 1;
  const hiAt = order === "le" ? 1 : 0;
  const loAt = 1 - hiAt;
  let pendingHigh = state.pendingHigh;
  for (let i = 0; i < units; i++) {
    const unit = (block[2 * i + hiAt]! << 8) | block[2 * i + loAt]!;
    if (unit === 0) state.hasNul = true;
    const isHigh = unit >= 0xd800 && unit <= 0xdbff;
    const isLow = unit >= 0xdc00 && unit <= 0xdfff;
    if (pendingHigh !== isLow) state.valid = false;
    pendingHigh = isHigh;
    out[i] = unit < 0x100 ? unit : 0x80;
  }
  state.pendingHigh = pendingHigh;
  return out.length === units ? out : out.subarray(0, units);
}

/** `units` narrowed as the scans read them, where the text's validity is no concern (a part's UTF-16 strings, a raw file's). */
export const narrowedUtf16 = (units: Uint8Array, order: "le" | "be") => narrowUtf16(units, order, { pendingHigh: false, valid: true, hasNul: false });

const printable = (c: number) => c >= 0x20 && c <= 0x7e;

/** utf16TextAlignments' bits: text whose letters lie at even bytes (little-endian from an even byte, big-endian from an odd one), or at odd ones. */
export const FROM_EVEN = 1;
export const FROM_ODD = 2;

/**
 * How text in UTF-16 of no declared byte order is read: little-endian from
 * an even and from an odd byte (`shift`), where the text's letters lie at
 * the alignment `bit` names, and big-endian where a big-endian byte order
 * mark says there is such text (bigEndianMarks); `at`, the letter's byte in
 * a unit. Read little-endian, big-endian text's last letter pairs with the
 * byte after it (lost unless that byte is NUL: a key one letter short no
 * longer matches); read big-endian, little-endian text's first letter pairs
 * with the byte before it (a name that loses its first letter may read as a
 * secret's), so each order is read only where its text may be.
 */
export const UTF16_READINGS = [
  { shift: 0, order: "le", bit: FROM_EVEN, at: 0 },
  { shift: 1, order: "le", bit: FROM_ODD, at: 0 },
  { shift: 0, order: "be", bit: FROM_ODD, at: 1 },
  { shift: 1, order: "be", bit: FROM_EVEN, at: 1 },
] as const;

const BE_MARK = Buffer.from([0xfe, 0xff, 0x00]);

/**
 * The alignments of the letters after a big-endian byte order mark in `b`
 * (FE FF, then a unit whose high byte is NUL: a PDF string `(þÿ…)`, an XMP
 * packet's `begin="\uFEFF"` in UTF-16BE): FROM_ODD for a mark at an even
 * byte, FROM_EVEN for one at an odd byte, both or neither.
 */
export function bigEndianMarks(b: Uint8Array): number {
  const bytes = Buffer.from(b.buffer, b.byteOffset, b.length);
  let found = 0;
  for (let at = bytes.indexOf(BE_MARK); at >= 0 && found !== (FROM_EVEN | FROM_ODD); at = bytes.indexOf(BE_MARK, at + 1)) found |= at % 2 === 0 ? FROM_ODD : FROM_EVEN;
  return found;
}

/**
 * Whether `b` holds a run of eight or more ASCII characters in UTF-16,
 * either byte order or alignment: the least a credential is. Such a run
 * fills an aligned block of 8 bytes (four characters), so one block in
 * every 8 bytes is looked at: a video's sample tables, all NULs and small
 * numbers, are turned down at a fraction of what scanning them costs.
 * The blocks before the first NUL cannot qualify and are not looked at.
 */
export function hasUtf16Text(b: Uint8Array): boolean {
  return utf16TextAlignments(b, true) !== 0;
}

/** A 32-bit word's bytes 1 and 3 (as they lie in memory), and 0 and 2. */
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
const ODD_BYTES = LITTLE_ENDIAN ? 0xff00ff00 : 0x00ff00ff;
const EVEN_BYTES = ~ODD_BYTES;

/**
 * hasUtf16Text per alignment: FROM_EVEN, FROM_ODD, both or neither (the raw
 * scan reads only the alignment that holds text). With `first`, the answer
 * once one is found.
 */
export function utf16TextAlignments(b: Uint8Array, first = false): number {
  // Such a block holds NULs: a part with none (an XML part, a text view) is turned down by one native search.
  const nul = Buffer.from(b.buffer, b.byteOffset, b.length).indexOf(0);
  if (nul < 0) return 0;
  // A block is read as two aligned 32-bit words, so its grid starts at the
  // part's first byte on a 4-byte boundary (any grid of 8-byte blocks
  // holds one of a 16-byte run); from an odd byte, a block's even bytes
  // are the part's odd ones. Read byte by byte, a fresh process spent
  // ~10 ms on a 19 MB PDF before the loop was optimised; this is ~5.
  const lead = (4 - (b.byteOffset & 3)) & 3;
  if (b.length < lead + 8) return 0;
  const lettersAtBlockEven = lead & 1 ? FROM_ODD : FROM_EVEN;
  const lettersAtBlockOdd = FROM_EVEN + FROM_ODD - lettersAtBlockEven;
  const words = new Uint32Array(b.buffer, b.byteOffset + lead, (b.length - lead) >> 2);
  let found = 0;
  // An alignment once found is not looked for again: in a block of UTF-16 text, the other one costs a test a block.
  for (let w = nul > lead ? ((nul - lead) >> 2) & ~1 : 0; w + 1 < words.length; w += 2) {
    const both = words[w]! | words[w + 1]!;
    const p = lead + 4 * w;
    if ((found & lettersAtBlockEven) === 0 && (both & ODD_BYTES) === 0) {
      if (!(printable(b[p]!) && printable(b[p + 2]!) && printable(b[p + 4]!) && printable(b[p + 6]!))) continue;
      found |= lettersAtBlockEven;
    } else if ((found & lettersAtBlockOdd) === 0 && (both & EVEN_BYTES) === 0) {
      if (!(printable(b[p + 1]!) && printable(b[p + 3]!) && printable(b[p + 5]!) && printable(b[p + 7]!))) continue;
      found |= lettersAtBlockOdd;
    } else continue;
    if (first || found === (FROM_EVEN | FROM_ODD)) return found;
  }
  return found;
}
