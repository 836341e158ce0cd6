// Content checks on the staged copy: the bytes must be what the extension
// says (file-type sniffs binaries); text must be clean UTF-8 (or UTF-16 with
// its BOM) without credentials; a binary's metadata, containers and trailing
// bytes must hold none either (src/content/carriers.ts), and an image must
// end where its format ends. `checkContent` is the one entry point: prepare
// calls it on the staged copy, the watch guard on a file in the outbox.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { SECOND_READING_TYPES, readingOf } from "../content/formats.js";
import { type KnownSecretSources, type KnownSecrets, loadKnownSecrets } from "../content/known.js";
import { processEnvironments } from "../content/process-environments.js";
import { rereadBudget } from "../content/scan.js";
import { Refusal } from "../core/errors.js";
import { readAt } from "../core/read-at.js";
import { sniff } from "./sniff.js";
import type { Staged } from "./stage.js";
import { TextScanner, type TextVerdict } from "./text.js";

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
  // file-type (21.3) names every compound file `cfb`, whatever it holds.
  doc: ["cfb"],
  xls: ["cfb"],
  ppt: ["cfb"],
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
  gz: ["gz", "tar.gz"],
  tgz: ["tar.gz", "gz"],
  bz2: ["bz2"],
  xz: ["xz"],
  "7z": ["7z"],
  rar: ["rar"],
};

export function isTextExtension(ext: string): boolean {
  return Object.hasOwn(TEXT_MIME, ext);
}

/**
 * How the reader of a file named `.ext` reads it (src/content/formats.ts):
 * "whole" when any type its extension allows is read in memory (staging
 * then keeps its bytes), "ranges" when each is read a range at a time,
 * undefined when no reader knows them.
 */
function readingFor(ext: string): "ranges" | "whole" | undefined {
  const readings = (BINARY_SNIFFS[ext] ?? []).map(readingOf);
  return readings.includes("whole") ? "whole" : readings.includes("ranges") ? "ranges" : undefined;
}

/** True when the content check reads every byte of a file named `.ext` after staging it (so staging keeps them all). */
export function readsWholeFile(ext: string): boolean {
  return readingFor(ext) === "whole";
}

/**
 * How a file's bytes are searched for credentials: as text; by a format
 * reader (after staging; an archive compressed in a way no reader here
 * reads is refused by its reader); or, for a binary format nothing here
 * reads (tiff, any type file-type knows and no reader here does), every
 * byte as it is and as UTF-16 at both alignments (src/prepare/raw-utf16.ts),
 * like text but without an encoding to check.
 */
export function scanModeFor(ext: string): "text" | "parsed" | "raw" {
  return isTextExtension(ext) ? "text" : readingFor(ext) !== undefined ? "parsed" : "raw";
}

/** The known secrets of the host (its Hermes files, and the user's other agents' CLIs' in `userHome`), as prepare, serve and the guard look for them. */
export function knownSecretsFor(hermesHome: string, userHome?: string): KnownSecrets {
  return loadKnownSecrets(knownSecretSources(hermesHome, userHome));
}

/**
 * Where the host's secrets are read from, for a Hermes home and the home of
 * the user it runs as (Hermes' own rules for the managed scope:
 * $HERMES_MANAGED_DIR, else /etc/hermes; Codex's: $CODEX_HOME, else ~/.codex),
 * the environments this process runs under (the gateway's, for an agent's
 * prepare; the gate's own, which holds none), and each running gateway's
 * that a gateway.pid of the Hermes home or a profile names (the gate,
 * another user, cannot read the agents' gateways').
 */
export function knownSecretSources(hermesHome: string, userHome?: string): KnownSecretSources {
  return {
    hermesHome,
    userHome,
    codexHome: codexHome(process.env.CODEX_HOME),
    // Hermes expands its `~` (Path.expanduser), as CODEX_HOME's.
    sharedAuthDir: codexHome(process.env.HERMES_SHARED_AUTH_DIR),
    serviceAccountKeys: serviceAccountKeys(process.env),
    credentialsDirectory: process.env.CREDENTIALS_DIRECTORY,
    managedDir: process.env.HERMES_MANAGED_DIR?.trim() || "/etc/hermes",
    environments: processEnvironments,
  };
}

/**
 * $CODEX_HOME as Hermes reads it (stripped; a leading `~` or `~/` expanded
 * as Python's Path.expanduser does, with $HOME: a `.env` that Hermes loads
 * leaves it unexpanded in the environment its tools inherit). A relative
 * one (whose meaning is Hermes' working directory) is not followed:
 * ~/.codex is read instead.
 */
export function codexHome(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  if (!trimmed) return undefined;
  const expanded = trimmed === "~" || trimmed.startsWith("~/") ? `${os.homedir()}${trimmed.slice(1)}` : trimmed;
  return path.isAbsolute(expanded) ? expanded : undefined;
}

/**
 * The Google service account keys Hermes' Vertex provider reads
 * (agent/vertex_adapter.py: the first of VERTEX_CREDENTIALS_PATH,
 * GOOGLE_APPLICATION_CREDENTIALS that exists; both read here), each as it
 * is set, as Hermes and google-auth open it (no `~` expanded, nothing
 * stripped). A relative one (its meaning: Hermes' working directory) is not
 * followed.
 */
export function serviceAccountKeys(env: NodeJS.ProcessEnv): { variable: string; file: string }[] {
  return ["VERTEX_CREDENTIALS_PATH", "GOOGLE_APPLICATION_CREDENTIALS"].flatMap((variable) => {
    const file = env[variable];
    return file !== undefined && path.isAbsolute(file) ? [{ variable, file }] : [];
  });
}

/** knownSecretsFor(hermesHome, userHome), read on first call only: one per prepare run, one per gate request. */
export function knownSecretsReader(hermesHome: string, userHome?: string): () => KnownSecrets {
  let known: KnownSecrets | undefined;
  return () => (known ??= knownSecretsFor(hermesHome, userHome));
}

export interface ContentVerdict {
  mime: string;
}

/** The file judged: an open descriptor and its size (and its bytes, when the caller holds them). */
export type ContentSource = Pick<Staged, "fd" | "bytes" | "content"> & { path?: string };

export interface ContentOptions {
  /** The scan of a text (or raw) file made while it was staged; made here when absent. */
  text?: Promise<TextVerdict> | undefined;
  /** The known secrets (or how to get them, on first need); read from `hermesHome` (and `userHome`) when absent. */
  known?: KnownSecrets | (() => KnownSecrets);
  hermesHome?: string;
  /** The home of the user Hermes runs as: other agents' CLIs' credentials there are known secrets too. */
  userHome?: string;
}

const describe = (sniffed: { ext: string } | undefined) => (sniffed ? `${sniffed.ext} data` : "content of no recognised binary type");

/** Every byte of an open file, from its start. */
function readAll(source: ContentSource): Buffer {
  if (source.content) return source.content;
  const bytes = Buffer.allocUnsafe(source.bytes);
  if (readAt(source.fd, bytes, 0) < bytes.length) throw new Refusal("changed_during_copy", "the file got shorter while it was checked; send it again once it is complete");
  return bytes;
}

/** The text (or raw) scan of a file no one scanned while staging it: the guard's case. */
function scanFile(source: ContentSource, raw: boolean, known: KnownSecrets): TextVerdict {
  const scanner = new TextScanner({ known, raw, reread: rereadBudget() });
  if (source.content) scanner.push(source.content);
  else {
    const chunk = Buffer.allocUnsafe(1024 * 1024);
    for (let off = 0; off < source.bytes; ) {
      const n = fs.readSync(source.fd, chunk, 0, Math.min(chunk.length, source.bytes - off), off);
      if (n === 0) break;
      scanner.push(chunk.subarray(0, n));
      off += n;
    }
  }
  return scanner.finish();
}

const defaultHermesHome = () => process.env.HERMES_HOME || path.join(process.env.HOME || "/", ".hermes");

/**
 * Judges a file: its type against its extension, then what it holds (text:
 * encoding, NUL bytes and credentials; binary: metadata, containers and
 * trailing bytes). Throws the Refusal; resolves with the MIME type.
 */
export async function checkContent(staged: ContentSource, ext: string, options: ContentOptions = {}): Promise<ContentVerdict> {
  const mode = scanModeFor(ext);
  let known: KnownSecrets | undefined;
  const knownSecrets = () =>
    (known ??= typeof options.known === "function" ? options.known() : (options.known ?? knownSecretsFor(options.hermesHome ?? defaultHermesHome(), options.userHome)));
  const text = options.text ?? (mode === "parsed" ? undefined : Promise.resolve().then(() => scanFile(staged, mode === "raw", knownSecrets())));
  const [sniffed, verdict] = await Promise.all([sniff(staged), text]);
  if (isTextExtension(ext)) {
    // A UTF-16 BOM (FF FE) also reads as an MPEG audio frame's sync: valid UTF-16 text wins.
    const utf16Text = verdict?.utf16 !== undefined && verdict.validUtf8 && !verdict.hasNul;
    if (sniffed && !utf16Text && !(TEXT_SNIFFS_ALLOWED[ext] ?? []).includes(sniffed.ext)) {
      throw new Refusal("content_mismatch", `the file is named .${ext} but holds ${describe(sniffed)}; give it its real extension`);
    }
    if (!verdict) throw new Error("a text file reached the content check without its text scan");
    checkText(verdict, ext);
    if (verdict.utf16 === undefined && SECOND_READING_TYPES.has(ext)) await checkTextMeaning(readAll(staged), ext, knownSecrets);
    return { mime: TEXT_MIME[ext]! };
  }
  const expected = BINARY_SNIFFS[ext];
  if (!expected || !sniffed || !expected.includes(sniffed.ext)) {
    throw new Refusal("content_mismatch", `the file is named .${ext} but holds ${describe(sniffed)}; give it its real extension`);
  }
  if (verdict?.secret !== undefined) throw secretRefusal(ext, verdict);
  const carriers = await import("../content/carriers.js");
  if (carriers.readsRanges(sniffed.ext) && !staged.content) carriers.inspectFile(staged.fd, staged.bytes, ext, sniffed.ext, knownSecrets);
  else if (carriers.hasReader(sniffed.ext)) carriers.inspectBinary(readAll(staged), ext, sniffed.ext, knownSecrets);
  else {
    if (!verdict) {
      const raw = scanFile(staged, true, knownSecrets());
      if (raw.secret !== undefined) throw secretRefusal(ext, raw);
    }
    // No reader reads its bytes, but a zip after them is extracted by unzip all the same.
    carriers.inspectAppendedZip(staged.fd, staged.bytes, ext, knownSecrets, sniffed.ext);
  }
  return { mime: sniffed.mime };
}

/** Refuses a UTF-8 text file whose second reading (markup's text, JSON's unescaped slashes) holds a credential. */
async function checkTextMeaning(bytes: Buffer, ext: string, known: () => KnownSecrets): Promise<void> {
  const [{ markupReferences, textMeaning }, { scanBytes }] = await Promise.all([import("../content/text-meaning.js"), import("../content/scan.js")]);
  // The markup's own reading (its attributes' references decoded) only where its text holds nothing: each reading is made when asked.
  for (const reading of [textMeaning, markupReferences]) {
    const meaning = reading(bytes, ext);
    const finding = meaning && scanBytes(meaning.text, known());
    if (finding) throw new Refusal("secret_detected", `the .${ext} file contains what looks like ${finding.what} (in ${meaning!.part}, at byte ${finding.offset} of it); remove it before sending`);
  }
}

function secretRefusal(ext: string, verdict: TextVerdict): Refusal {
  return new Refusal("secret_detected", `the .${ext} file contains what looks like ${verdict.secret} (at byte ${verdict.secretAt}); remove it before sending`);
}

function checkText(verdict: TextVerdict, ext: string): void {
  if (verdict.hasNul) throw new Refusal("content_mismatch", `the .${ext} file contains NUL bytes, so it is not text`);
  if (!verdict.validUtf8) throw new Refusal("content_mismatch", `the .${ext} file is not valid ${verdict.utf16 ? "UTF-16" : "UTF-8"} text`);
  if (verdict.secret !== undefined) throw secretRefusal(ext, verdict);
}
