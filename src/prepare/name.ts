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
  /** What a stem may not start with: `-`, `.`, and combining marks, which have no letter to sit on. */
  leading: RegExp;
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
    leading: /^[\p{M}.-]+/u,
  });
/** Printable ASCII holds no invisible code point, marks or non-ASCII letters and digits. */
export const ASCII: NamePatterns = {
  invisible: undefined,
  extension: /^(.*)\.([A-Za-z0-9]+)$/s,
  notStem: /[^A-Za-z0-9_-]+/g,
  leading: /^[.-]+/,
};
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;
const patternsFor = (text: string): NamePatterns => (PRINTABLE_ASCII.test(text) ? ASCII : UNICODE());

const WINDOWS_RESERVED = /^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³])$/iu;

export interface SplitName {
  stem: string;
  /** Lower-case extension without the dot; "" when there is none. */
  ext: string;
}

/**
 * The last path component. Only `/` separates: a backslash is a character of
 * the name (`a\\b.mov` keeps both parts), never a directory separator.
 */
function lastComponent(input: string): string {
  return input.slice(input.lastIndexOf("/") + 1);
}

/**
 * Invisible code points removed, then NFC: in that order, so a mark kept
 * apart from its letter by a zero-width character composes with it
 * (`cafe` + U+200B + U+0301 gives the composed `café`).
 */
function visibleNfc(text: string): string {
  const { invisible } = patternsFor(text);
  return (invisible ? text.replace(invisible, "") : text).normalize("NFC");
}

/** The extension a name is judged by (check 4): what the output name will end in. */
export function extensionOf(input: string): string {
  return splitName(input).ext;
}

export function splitName(input: string): SplitName {
  const raw = lastComponent(input);
  const base = visibleNfc(raw);
  const m = patternsFor(base).extension.exec(base);
  if (!m) return { stem: base, ext: "" };
  if (m[1] === "") {
    // `.webm` as written is a dot-name without an extension; but a stem
    // made only of invisible characters (U+202E + `.webm`) was a stem: it
    // becomes `file`, and the extension stays.
    const stemWasWritten = raw.lastIndexOf(".") > 0;
    return stemWasWritten ? { stem: "", ext: m[2]!.toLowerCase() } : { stem: base, ext: "" };
  }
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
  const patterns = patternsFor(raw);
  let stem = raw.replace(patterns.notStem, "-").replace(/-{2,}/g, "-").replace(/^-+|-+$/g, "");
  // Leading marks go before the reserved-name test, or `\u0301-con` would
  // become `con` after it (and the name would not be its own output name,
  // which the watch guard holds every published name to).
  stem = stem.replace(patterns.leading, "");
  if (WINDOWS_RESERVED.test(stem)) stem = `${stem}_`;
  stem = sanitizeFilename(stem, { replacement: "-" });
  // A stem of combining marks alone has nothing to show: it becomes `file`.
  stem = stem.replace(patterns.leading, "");
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
  // Cut between grapheme clusters of an NFC stem, and normal again after the
  // cut (a cut never splits a cluster, so it stays NFC and within the bytes).
  stem = truncateToBytes(stem, MAX_NAME_BYTES - Buffer.byteLength(tail)).replace(/-+$/, "").normalize("NFC");
  if (stem === "") stem = "file";
  return `${stem}${tail}`;
}
