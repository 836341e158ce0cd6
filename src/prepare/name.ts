// The output name: recognisable to a human, extracted whole by every known
// gateway, and safe on any filesystem. sanitize-filename is one layer; it
// misses bidi and zero-width characters, line separators, leading `-` or `.`,
// empty results and truncation that keeps the extension, so those are here.
import sanitizeFilename from "sanitize-filename";

export const MAX_NAME_BYTES = 200;

/** The patterns a name is cut with; `UNICODE` is the rule, `ASCII` its restriction to printable ASCII. */
interface NamePatterns {
  /** Invisible code points: controls, bidi controls, zero-width and every other default-ignorable, format characters, unpaired surrogates. */
  invisible: RegExp | undefined;
  /** Stem and extension: the extension is the letters and digits after the last dot. */
  extension: RegExp;
  /** What a stem may not keep: anything but letters, combining marks, digits, `-` and `_`. */
  notStem: RegExp;
}

let unicode: NamePatterns | undefined;
/**
 * Built on first use: Unicode property classes take about a millisecond to
 * build, and most names are plain ASCII, for which `ASCII` gives the same cut
 * (test/units.test.ts holds the two sets equal over every printable ASCII character).
 */
export const UNICODE = (): NamePatterns =>
  (unicode ??= {
    invisible: /[\p{Cc}\p{Cf}\p{Cs}]|\p{Bidi_Control}|\p{Default_Ignorable_Code_Point}/gu,
    extension: /^(.*)\.([\p{L}\p{N}]+)$/su,
    notStem: /[^\p{L}\p{M}\p{Nd}_-]+/gu,
  });
/** Printable ASCII holds no invisible code point, marks or non-ASCII letters and digits. */
export const ASCII: NamePatterns = {
  invisible: undefined,
  extension: /^(.*)\.([A-Za-z0-9]+)$/s,
  notStem: /[^A-Za-z0-9_-]+/g,
};
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;
const patternsFor = (text: string): NamePatterns => (PRINTABLE_ASCII.test(text) ? ASCII : UNICODE());

const WINDOWS_RESERVED = /^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³])$/iu;

export interface SplitName {
  stem: string;
  /** Lower-case extension without the dot; "" when there is none. */
  ext: string;
}

/** The last path component, with invisible characters removed. */
function cleanBase(input: string): string {
  const parts = input.normalize("NFC").split(/[/\\]/);
  const base = parts[parts.length - 1] ?? "";
  const { invisible } = patternsFor(base);
  return invisible ? base.replace(invisible, "") : base;
}

/** The extension a name is judged by (check 4): what the output name will end in. */
export function extensionOf(input: string): string {
  return splitName(input).ext;
}

export function splitName(input: string): SplitName {
  const base = cleanBase(input);
  const m = patternsFor(base).extension.exec(base);
  if (!m || m[1] === "") return { stem: base, ext: "" };
  return { stem: m[1]!, ext: m[2]!.toLowerCase() };
}

export function truncateToBytes(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text) <= maxBytes) return text;
  let result = "";
  let bytes = 0;
  // Cut between grapheme clusters, so no combining mark loses its base.
  for (const { segment } of new Intl.Segmenter(undefined, { granularity: "grapheme" }).segment(text)) {
    const size = Buffer.byteLength(segment);
    if (bytes + size > maxBytes) break;
    result += segment;
    bytes += size;
  }
  return result;
}

function sanitizeStem(raw: string): string {
  let stem = raw.replace(patternsFor(raw).notStem, "-").replace(/-{2,}/g, "-").replace(/^-+|-+$/g, "");
  if (WINDOWS_RESERVED.test(stem)) stem = `${stem}_`;
  stem = sanitizeFilename(stem, { replacement: "-" });
  stem = stem.replace(/^[-.]+/, "");
  return stem === "" ? "file" : stem;
}

/**
 * The output name for `input`, optionally with a `-suffix` (the content hash
 * used on a collision), at most MAX_NAME_BYTES UTF-8 bytes, extension kept.
 */
export function outputName(input: string, suffix?: string): string {
  const { stem: rawStem, ext } = splitName(input);
  const tail = `${suffix ? `-${suffix}` : ""}${ext ? `.${ext}` : ""}`;
  let stem = sanitizeStem(rawStem);
  stem = truncateToBytes(stem, MAX_NAME_BYTES - Buffer.byteLength(tail)).replace(/-+$/, "");
  if (stem === "") stem = "file";
  return `${stem}${tail}`;
}
