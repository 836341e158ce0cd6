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

/** `block` (an even number of bytes) narrowed to one byte per code unit; `state` is updated. */
export function narrowUtf16(block: Uint8Array, order: "le" | "be", state: Utf16State): Buffer {
  const units = block.length >> 1;
  const out = Buffer.allocUnsafe(units);
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
  return out;
}
