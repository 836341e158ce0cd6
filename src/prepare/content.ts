// Content checks on the staged copy: the bytes must be what the extension
// says (file-type sniffs binaries), and text must be clean UTF-8 without secrets.
import { Refusal } from "../core/errors.js";
import type { Staged } from "./stage.js";
import type { TextVerdict } from "./text.js";

/** Extensions whose content is text: judged by decoding, not by magic bytes. */
const TEXT_MIME: Record<string, string> = {
  txt: "text/plain",
  md: "text/markdown",
  csv: "text/csv",
  tsv: "text/tab-separated-values",
  json: "application/json",
  yaml: "application/yaml",
  yml: "application/yaml",
  xml: "application/xml",
  svg: "image/svg+xml",
  html: "text/html",
  htm: "text/html",
};

/** Text types that file-type may recognise by their opening bytes. */
const TEXT_SNIFFS_ALLOWED: Record<string, string[]> = { xml: ["xml"], svg: ["xml", "svg"], html: ["html"], htm: ["html"] };

/** For binary extensions: the file-type results that agree with them. */
const BINARY_SNIFFS: Record<string, string[]> = {
  png: ["png", "apng"],
  jpg: ["jpg"],
  jpeg: ["jpg"],
  gif: ["gif"],
  webp: ["webp"],
  bmp: ["bmp"],
  tiff: ["tif"],
  mp4: ["mp4", "m4v"],
  mov: ["mov", "qt"],
  avi: ["avi"],
  mkv: ["mkv"],
  webm: ["webm"],
  mp3: ["mp3"],
  wav: ["wav"],
  ogg: ["ogg", "oga", "ogv", "opus", "spx", "ogx"],
  opus: ["opus", "ogg", "oga"],
  m4a: ["m4a", "mp4"],
  flac: ["flac"],
  pdf: ["pdf", "ai"],
  docx: ["docx"],
  xlsx: ["xlsx"],
  pptx: ["pptx"],
  doc: ["cfb", "doc"],
  xls: ["cfb", "xls"],
  ppt: ["cfb", "ppt"],
  odt: ["odt"],
  ods: ["ods"],
  odp: ["odp"],
  rtf: ["rtf"],
  epub: ["epub"],
  key: ["zip"],
  zip: ["zip"],
  apk: ["apk", "zip"],
  ipa: ["zip"],
  tar: ["tar"],
  gz: ["gz"],
  tgz: ["gz"],
  bz2: ["bz2"],
  xz: ["xz"],
  "7z": ["7z"],
  rar: ["rar"],
};

export function isTextExtension(ext: string): boolean {
  return Object.hasOwn(TEXT_MIME, ext);
}

export interface ContentVerdict {
  mime: string;
}

/**
 * file-type's detection over strtok3's file tokenizer: what its Node entry's
 * fileTypeFromFile does, without that entry's stream imports, which cost every
 * run start-up time and are never used here. A small file is judged from the
 * bytes kept in memory while staging: the same bytes, no second read.
 */
async function sniff(staged: Staged): Promise<{ ext: string; mime: string } | undefined> {
  if (staged.content) {
    const { fileTypeFromBuffer } = await import("file-type/core");
    return fileTypeFromBuffer(staged.content);
  }
  const [{ fileTypeFromTokenizer }, { fromFile }] = await Promise.all([import("file-type/core"), import("strtok3")]);
  const tokenizer = await fromFile(staged.path, { regularFileOnly: true });
  try {
    return await fileTypeFromTokenizer(tokenizer);
  } finally {
    await tokenizer.close();
  }
}

const describe = (sniffed: { ext: string } | undefined) => (sniffed ? `${sniffed.ext} data` : "content of no recognised binary type");

/** Judges a staged file; for a text extension, `text` is what the scan of its bytes finds. */
export async function checkContent(staged: Staged, ext: string, text?: Promise<TextVerdict>): Promise<ContentVerdict> {
  const [sniffed, verdict] = await Promise.all([sniff(staged), text]);
  if (isTextExtension(ext)) {
    if (sniffed && !(TEXT_SNIFFS_ALLOWED[ext] ?? []).includes(sniffed.ext)) {
      throw new Refusal("content_mismatch", `the file is named .${ext} but holds ${describe(sniffed)}; give it its real extension`);
    }
    if (!verdict) throw new Error("a text file reached the content check without its text scan");
    checkText(verdict, ext);
    return { mime: TEXT_MIME[ext]! };
  }
  const expected = BINARY_SNIFFS[ext];
  if (!expected || !sniffed || !expected.includes(sniffed.ext)) {
    throw new Refusal("content_mismatch", `the file is named .${ext} but holds ${describe(sniffed)}; give it its real extension`);
  }
  return { mime: sniffed.mime };
}

function checkText(verdict: TextVerdict, ext: string): void {
  if (verdict.hasNul) throw new Refusal("content_mismatch", `the .${ext} file contains NUL bytes, so it is not text`);
  if (!verdict.validUtf8) throw new Refusal("content_mismatch", `the .${ext} file is not valid UTF-8 text`);
  if (verdict.secret) throw new Refusal("secret_detected", `the file contains what looks like ${verdict.secret}; remove it before sending`);
}
