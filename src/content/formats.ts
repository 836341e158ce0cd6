// The file types (as file-type names them) that a reader of src/content
// knows, and how it reads them. Kept apart from the readers: prepare decides
// how to stage a file (keep its bytes or not) before, and without, loading
// them; carriers.ts's tables are typed by these lists, so a reader added
// there and not here (or the other way round) does not compile.
import type { ArchiveKind } from "./hidden-archives.js";

/**
 * Types whose reader reads the file a range at a time: audio and video
 * (their media data skipped), zips (one entry after another), PDF (images
 * and fonts skipped). Staging need not keep their bytes.
 */
export const RANGE_READ_TYPES = ["docx", "xlsx", "pptx", "odt", "ods", "odp", "epub", "zip", "apk", "pdf", "ai", "mp3", "flac", "mp4", "m4v", "m4a", "mov", "qt", "wav", "avi", "webm", "mkv", "ogg", "opus", "oga", "ogv", "spx", "ogx"] as const;

/** Types whose reader reads every byte, in memory: pictures, tar and gzip, compound files (.doc, .xls, .ppt: `cfb`), RTF. */
export const WHOLE_READ_TYPES = ["png", "apng", "jpg", "gif", "webp", "bmp", "tar", "gz", "tar.gz", "cfb", "rtf"] as const;

/** Archives compressed in a way no reader here reads, by type, with the compression's name: their reader refuses them. */
export const UNREADABLE_FORMATS = { bz2: "bzip2", xz: "xz", "7z": "7-Zip", rar: "RAR" } as const satisfies Record<string, ArchiveKind>;

/**
 * Text types also read a second time as what they mean (text-meaning.ts):
 * markup as its text, JSON with its escaped slashes read as slashes. Kept
 * here so that prepare loads that reader for these types only. Markdown is
 * markup too: it passes inline HTML (`<wbr>`, `<span>`) and character
 * references (`&shy;`, `&#95;`) through to the page a renderer makes.
 */
export const MARKUP_TEXT_TYPES = ["svg", "xml", "html", "htm", "md"] as const;
export const SECOND_READING_TYPES: ReadonlySet<string> = new Set([...MARKUP_TEXT_TYPES, "json"]);

export type RangeReadType = (typeof RANGE_READ_TYPES)[number];
export type WholeReadType = (typeof WHOLE_READ_TYPES)[number] | keyof typeof UNREADABLE_FORMATS;

const RANGES: ReadonlySet<string> = new Set(RANGE_READ_TYPES);
const WHOLE: ReadonlySet<string> = new Set([...WHOLE_READ_TYPES, ...Object.keys(UNREADABLE_FORMATS)]);

/** How the reader of a sniffed type reads it; undefined when no reader knows it (its bytes are scanned raw). */
export function readingOf(sniffedType: string): "ranges" | "whole" | undefined {
  return RANGES.has(sniffedType) ? "ranges" : WHOLE.has(sniffedType) ? "whole" : undefined;
}
