// What the gateway does with text and paths (../shared/DESIGN.md). Every part
// that must agree with the gateway asks this module, never its own copy.
import path from "node:path";

/** Extensions whose paths the gateway's MEDIA: extraction keeps whole. */
export const GATEWAY_EXTENSIONS: ReadonlySet<string> = new Set(
  (
    "png jpg jpeg gif webp bmp tiff svg mp4 mov avi mkv webm mp3 wav ogg opus m4a flac pdf docx doc odt rtf txt md " +
    "epub xlsx xls ods csv tsv json xml yaml yml pptx ppt odp key zip tar gz tgz bz2 xz 7z rar apk ipa html htm"
  ).split(" "),
);

/** Punctuation after which newer gateways cut a path that has a `.ext` before it. */
const CUT_AFTER_EXT = /\.[\p{L}\p{N}]+[_*[\]}),;:'"\u3000-\u303f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65]/u;

/** Characters that split or end HERMES_MEDIA_ALLOW_DIRS entries, or break extraction. */
const ALLOW_DIR_BREAKERS = /[:,\s`\u0000-\u001f\u007f-\u009f\u2028\u2029]/u;

/**
 * Why the gateway would not treat `dir` as exactly this root, or could not
 * extract a path beneath it whole; undefined when it is fine.
 */
export function allowDirProblem(dir: string): string | undefined {
  if (!path.isAbsolute(dir)) return "it is not an absolute path";
  const bad = ALLOW_DIR_BREAKERS.exec(dir);
  if (bad) {
    const ch = bad[0];
    if (ch === ":" || ch === ",") return `it contains "${ch}", which separates entries in HERMES_MEDIA_ALLOW_DIRS`;
    if (ch === "`") return "it contains a backtick, which breaks MEDIA: extraction";
    if (/\s/u.test(ch)) return "it contains whitespace, which ends a MEDIA: path";
    return "it contains a control character";
  }
  if (CUT_AFTER_EXT.test(dir)) return "a component looks like `.ext` followed by punctuation, where newer gateways cut the path short";
  return undefined;
}

/** Splits HERMES_MEDIA_ALLOW_DIRS as the gateway does. */
export function parseAllowDirs(value: string | undefined, home = process.getBuiltinModule("node:os").homedir()): string[] {
  if (!value) return [];
  const roots: string[] = [];
  for (const raw of value.split(/[:,]/)) {
    let entry = raw.trim();
    if (entry === "") continue;
    if (entry === "~" || entry.startsWith("~/")) entry = path.join(home, entry.slice(1));
    if (!path.isAbsolute(entry)) continue;
    roots.push(path.resolve(entry));
  }
  return roots;
}

/** The gateway's containment rule: the resolved path lies under a root. */
export function isUnderRoot(resolvedPath: string, roots: readonly string[]): boolean {
  return roots.some((root) => isWithin(resolvedPath, root));
}

/** True when `child` is `parent` or lies beneath it (both absolute, normalised). */
export function isWithin(child: string, parent: string): boolean {
  if (child === parent) return true;
  const prefix = parent.endsWith("/") ? parent : `${parent}/`;
  return child.startsWith(prefix);
}

export type GatewayVariant = "classic" | "newer";

/**
 * A model of the gateway's MEDIA: extraction: the paths a reply would deliver.
 * `classic` keeps a whitespace-free absolute path ending in a known
 * extension; `newer` also cuts it after a `.ext` followed by punctuation. A
 * backtick breaks extraction in both.
 */
export function extractMediaPaths(reply: string, variant: GatewayVariant = "newer"): string[] {
  const found: string[] = [];
  for (const m of reply.matchAll(/MEDIA:(\S+)/g)) {
    let candidate = m[1]!;
    if (candidate.includes("`")) continue;
    if (variant === "newer") {
      const cut = CUT_AFTER_EXT.exec(candidate);
      if (cut) candidate = candidate.slice(0, cut.index + cut[0].length - 1);
    }
    if (!candidate.startsWith("/")) continue;
    const ext = /\.([A-Za-z0-9]+)$/.exec(candidate)?.[1]?.toLowerCase();
    if (ext && GATEWAY_EXTENSIONS.has(ext)) found.push(candidate);
  }
  return found;
}

/** Why `line` would not deliver exactly `expectedPath` on every gateway version. */
export function mediaLineProblem(line: string, expectedPath: string): string | undefined {
  if (line !== `MEDIA:${expectedPath}`) return "the line is not exactly MEDIA:<path>";
  for (const variant of ["classic", "newer"] as const) {
    const got = extractMediaPaths(line, variant);
    if (got.length !== 1 || got[0] !== expectedPath) return `a ${variant} gateway would not extract the path whole`;
  }
  return undefined;
}
