// What the gateway does with text and paths (../shared/DESIGN.md). Every part
// that must agree with the gateway asks this module, never its own copy.
import path from "node:path";
import { MEDIA_WORD } from "../core/escape.js";

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

// ---------------------------------------------------------------------------
// Delivery: would the gateway send the file a directive names? (the gateway's
// validate_media_delivery_path, ../shared/DESIGN.md). check-reply asks this for
// every directive of a final reply, with the gateway's own environment.
// ---------------------------------------------------------------------------

export const ALLOW_DIRS_ENV = "HERMES_MEDIA_ALLOW_DIRS";
export const STRICT_ENV = "HERMES_MEDIA_DELIVERY_STRICT";
export const TRUST_RECENT_ENV = "HERMES_MEDIA_TRUST_RECENT_FILES";
export const TRUST_RECENT_SECONDS_ENV = "HERMES_MEDIA_TRUST_RECENT_SECONDS";
export const DEFAULT_TRUST_RECENT_SECONDS = 600;

/** The gateway's reading of HERMES_MEDIA_DELIVERY_STRICT (off unless 1/true/yes/on). */
export function strictModeOn(raw: string | undefined): boolean {
  return ["1", "true", "yes", "on"].includes((raw ?? "0").trim().toLowerCase());
}

/** The gateway's reading of HERMES_MEDIA_TRUST_RECENT_FILES (on unless 0/false/no/off or empty). */
export function trustRecentOn(raw: string | undefined): boolean {
  return !["0", "false", "no", "off", ""].includes((raw ?? "1").trim().toLowerCase());
}

/** Seconds within which a modified file is trusted in strict mode; 0 when that trust is off. */
export function trustRecentSeconds(trust: string | undefined, seconds: string | undefined): number {
  if (!trustRecentOn(trust)) return 0;
  const custom = (seconds ?? "").trim();
  const n = custom === "" ? Number.NaN : Number(custom);
  return Number.isFinite(n) ? Math.max(0, n) : DEFAULT_TRUST_RECENT_SECONDS;
}

/** The gateway's own caches (TTS, image generation, screenshots...): always delivered from. */
export function hermesCacheRoots(hermesHome: string): string[] {
  const own = ["image_cache", "audio_cache", "video_cache", "document_cache", "browser_screenshots", "kanban/attachments"];
  const cache = ["images", "audio", "videos", "documents", "screenshots"].map((d) => `cache/${d}`);
  const bases = [hermesHome];
  try {
    const profiles = path.join(hermesHome, "profiles");
    for (const name of process.getBuiltinModule("node:fs").readdirSync(profiles)) bases.push(path.join(profiles, name));
  } catch {
    // No profiles.
  }
  return [...own.map((d) => path.join(hermesHome, d)), ...bases.flatMap((b) => cache.map((d) => path.join(b, d)))];
}

export interface DeliveryPolicy {
  /** Roots the gateway always delivers from: HERMES_MEDIA_ALLOW_DIRS and its caches. */
  roots: string[];
  strict: boolean;
  /** Strict mode's trust window for recently modified files, in seconds (0: off). */
  recentSeconds: number;
  /** Why a resolved path is on the credential denylist (src/safety/denylist.ts), if it is. */
  denied: (resolved: string) => string | undefined;
  /** The gateway's home: what `~/` in a directive means. */
  home: string;
}

/** The delivery policy a gateway process with environment `env` applies. */
export function deliveryPolicy(env: NodeJS.ProcessEnv, home: string, hermesHome: string, denied: DeliveryPolicy["denied"]): DeliveryPolicy {
  return {
    roots: [...parseAllowDirs(env[ALLOW_DIRS_ENV], home), ...hermesCacheRoots(hermesHome)],
    strict: strictModeOn(env[STRICT_ENV]),
    recentSeconds: trustRecentSeconds(env[TRUST_RECENT_ENV], env[TRUST_RECENT_SECONDS_ENV]),
    denied,
    home,
  };
}

export type DeliveryCode = "not_found" | "not_regular_file" | "not_allowed" | "denied" | "extension";

export interface DeliveryProblem {
  code: DeliveryCode;
  /** Short, for a sentence the user reads: "... could not be sent: <reason>". */
  reason: string;
}

/**
 * Why the gateway would not deliver the file at `p` (an absolute path as
 * extracted), or undefined when it would. The order is the gateway's: the
 * file must exist and be regular; allowed roots win over everything; then the
 * denylist; then, in strict mode, only recently modified files.
 */
export function deliveryProblem(p: string, policy: DeliveryPolicy, now = Date.now()): DeliveryProblem | undefined {
  const expanded = expandHome(p, policy.home);
  // The gateway resolves only absolute paths (a quoted directive may hold any text).
  if (!path.isAbsolute(expanded)) return { code: "not_found", reason: "its path is not absolute" };
  const ext = /\.([A-Za-z0-9]+)$/.exec(p)?.[1]?.toLowerCase();
  if (!ext || !GATEWAY_EXTENSIONS.has(ext)) return { code: "extension", reason: `the gateway does not send ${ext ? `.${ext} files` : "files without an extension"}` };
  const fs = process.getBuiltinModule("node:fs");
  let resolved: string;
  let st: import("node:fs").Stats;
  try {
    resolved = fs.realpathSync.native(expanded);
    st = fs.statSync(resolved);
  } catch {
    return { code: "not_found", reason: "the file does not exist" };
  }
  if (!st.isFile()) return { code: "not_regular_file", reason: "it is not a regular file" };
  if (isUnderRoot(resolved, policy.roots.map(resolveRoot))) return undefined;
  if (policy.denied(resolved)) return { code: "denied", reason: "it is in a protected location" };
  if (!policy.strict) return undefined;
  if (policy.recentSeconds > 0 && (now - st.mtimeMs) / 1000 <= policy.recentSeconds) return undefined;
  return { code: "not_allowed", reason: "it is outside the folders the gateway may send from" };
}

/** A root as the gateway compares it: links resolved where they exist. */
function resolveRoot(root: string): string {
  try {
    return process.getBuiltinModule("node:fs").realpathSync.native(root);
  } catch {
    return root;
  }
}

// ---------------------------------------------------------------------------
// Directives in a reply, as written (mangled or not). Linear scans only.
// ---------------------------------------------------------------------------

/** Markup a model wraps a directive in: backticks, emphasis, quotes. */
const WRAPPERS = new Set([..."`*_~\"'\u201c\u201d\u2018\u2019\u00ab\u00bb"]);
/** What may follow a path without being part of it: wrappers, closing brackets, punctuation (ASCII, CJK, full-width). */
const TRAILING = /[`*_~"'\u201c\u201d\u2018\u2019\u00ab\u00bb)\]}>.,;:!?\u3000-\u303f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65]/u;

export interface DirectiveOccurrence {
  /** Start of the directive with the markup opened right before it. */
  start: number;
  /** End of the path and of the markup closed right after it (trailing punctuation excluded). */
  end: number;
  /** Offset of `MEDIA` itself. */
  marker: number;
  /** The path token as written: from its first character up to the next whitespace. */
  token: string;
  tokenStart: number;
  /** The path the model meant: the token without trailing markup and punctuation. */
  intended: string;
}

/** Whitespace as the gateway's Python patterns read `\s` (str.isspace): JavaScript's but U+FEFF, and U+001C-U+001F and U+0085. */
const SPACE = /[^\S\ufeff]|[\x1c-\x1f\x85]/u;
const isSpace = (ch: string) => SPACE.test(ch);

/** What may follow a path's extension where the gateway's pattern ends it: its lookahead `(?=[\s`"',;:)\]}]|$)`. */
const AFTER_EXTENSION = new Set([..."`\"',;:)]}"]);
/** Characters the gateway's case-insensitive pattern also takes for i, k and s (Python's IGNORECASE: İ ı, the Kelvin sign, the long s). */
const FOLDED: Record<string, string> = { "\u0130": "i", "\u0131": "i", "\u212a": "k", "\u017f": "s" };
const extensionChar = (ch: string | undefined) => ch !== undefined && (/[A-Za-z0-9]/.test(ch) || ch in FOLDED);

/**
 * The gateway's reading of a bare path (hermes-agent 0.19.0,
 * MEDIA_TAG_CLEANUP_RE: `\S+(?:[^\S\n]+\S+)*?\.(?:ext)` then its lookahead
 * `(?=[\s`"',;:)\]}]|$)`): its lazy words are tried after its greedy \S+
 * has taken all it can, so the path runs to the last place on its line
 * where a known extension (in any case) ends and one of those follows. So
 * `MEDIA:/x/my chart.png` is `/x/my chart.png`, and `MEDIA:/x/a.png and
 * b.png` is `/x/a.png and b.png` (no such file: nothing is sent). Inline code
 * (`` `…` ``), which the gateway masks to spaces before it reads, is not
 * modelled: the path stops before a backtick.
 *
 * `pathEnd(i, minDot)` is where the path starting at `i` ends, or -1 when
 * nothing on its line ends one (`minDot`: the first place its dot may be, the
 * pattern's anchor and one character in). Each line is read once, when the
 * first directive on it asks (the directives come in order), its endings
 * kept in order and found by binary search: linear in the text.
 */
function pathEnds(text: string): (i: number, minDot: number) => number {
  let line: { start: number; end: number; dots: number[]; ends: number[]; ticks: number[] } | undefined;
  const read = (i: number) => {
    const start = text.lastIndexOf("\n", i - 1) + 1;
    let end = text.indexOf("\n", i);
    if (end < 0) end = text.length;
    const dots: number[] = [];
    const ends: number[] = [];
    const ticks: number[] = [];
    for (let at = start; at < end; at++) {
      if (text[at] === "`") ticks.push(at);
      // A dot with a character before it in its word (the pattern's \S+), then a known extension, then what the lookahead allows.
      if (text[at] !== "." || at === start || isSpace(text[at - 1]!)) continue;
      let r = at + 1;
      while (r < end && extensionChar(text[r])) r++;
      if (r === at + 1 || !(r === end || isSpace(text[r]!) || AFTER_EXTENSION.has(text[r]!))) continue;
      const ext = [...text.slice(at + 1, r)].map((c) => FOLDED[c] ?? c.toLowerCase()).join("");
      if (GATEWAY_EXTENSIONS.has(ext)) {
        dots.push(at);
        ends.push(r);
      }
    }
    return { start, end, dots, ends, ticks };
  };
  /** Index of the last item of `xs` (ascending) below `limit`, or -1. */
  const lastBelow = (xs: number[], limit: number) => {
    let lo = 0;
    let hi = xs.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (xs[mid]! < limit) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found;
  };
  return (i, minDot) => {
    if (!line || i < line.start || i > line.end) line = read(i);
    const tick = lastBelow(line.ticks, i) + 1;
    const limit = tick < line.ticks.length ? line.ticks[tick]! : line.end;
    const last = lastBelow(line.ends, limit + 1);
    return last >= 0 && line.dots[last]! >= minDot ? line.ends[last]! : -1;
  };
}

/**
 * Every `MEDIA:` directive in `text` (any case, whitespace or markup allowed
 * between the colon and a path starting with `/`, `~/` or a drive): what the
 * gateway might take for one, however it is wrapped. The gateway's pattern
 * allows any whitespace after the colon (`MEDIA:\s*`), line breaks and
 * ideographic spaces included: such a directive spans lines.
 *
 * `claims(token)` may say that only the first N characters of a path token
 * name a file (a published one, with text glued on after it): the scan then
 * goes on right after them, so a second directive glued on is found too.
 * Otherwise a `MEDIA:` inside the token (a forged directive in a file name)
 * is part of its path, as the extraction reads it.
 */
export function findDirectives(text: string, claims?: (token: string) => number | undefined): DirectiveOccurrence[] {
  const found: DirectiveOccurrence[] = [];
  const marker = new RegExp(`${MEDIA_WORD}:`, "giu");
  const pathEnd = pathEnds(text);
  for (let m = marker.exec(text); m; m = marker.exec(text)) {
    let i = m.index + m[0].length;
    while (i < text.length && isSpace(text[i]!)) i++;
    const bare = i;
    let k: number;
    let end: number;
    let token: string;
    let cut: number;
    const close = closingQuote(text, i);
    if (close !== undefined) {
      // A quoted path, whatever it holds (spaces, a relative path): the gateway takes it whole.
      token = text.slice(i + 1, close);
      i += 1;
      k = close;
      cut = trailingCut(token);
      let after = close;
      while (after < text.length && !isSpace(text[after]!)) after++;
      end = closingMarkupEnd(text, close, after);
    } else {
      // Skip opening markup, but not the `~` of a `~/` path.
      while (i < text.length && (isSpace(text[i]!) || (WRAPPERS.has(text[i]!) && !(text[i] === "~" && text[i + 1] === "/")))) i++;
      const rest = text.slice(i, i + 3);
      if (!(rest.startsWith("/") || rest.startsWith("~/") || /^[A-Za-z]:[\\/]/.test(rest))) continue;
      k = i;
      while (k < text.length && !isSpace(text[k]!)) k++;
      // Right after `MEDIA:` and whitespace (no markup: the gateway's pattern allows none), a path goes on past its first word
      // to the last extension on its line, as the gateway reads it (pathEnds).
      const anchor = text[i] === "/" ? 1 : text[i] === "~" ? 2 : 3;
      const reached = i === bare ? pathEnd(i, i + anchor + 1) : -1;
      const later = reached > k ? reached : -1;
      if (later >= 0) {
        let wordEnd = later;
        while (wordEnd < text.length && !isSpace(text[wordEnd]!)) wordEnd++;
        token = text.slice(i, later);
        cut = token.length;
        end = closingMarkupEnd(text, later, wordEnd);
      } else {
        token = text.slice(i, k);
        cut = trailingCut(token);
        end = closingMarkupEnd(text, i + cut, k);
      }
    }
    let start = m.index;
    while (start > 0 && WRAPPERS.has(text[start - 1]!)) start--;
    found.push({ start, end, marker: m.index, token, tokenStart: i, intended: token.slice(0, cut) });
    marker.lastIndex = i + (claims?.(token) ?? token.length);
  }
  return found;
}

/** Length of `token` without the markup and punctuation after the path. */
function trailingCut(token: string): number {
  let cut = token.length;
  while (cut > 0 && TRAILING.test(token[cut - 1]!)) cut--;
  return cut;
}

/** Characters the gateway's quoted-path alternative allows right after the closing quote. */
const AFTER_QUOTE = new Set([..."`\"',;:)]}"]);

/**
 * The gateway's quoted form, `MEDIA:"..."` (or '...' or a backtick pair):
 * where the closing quote is, when `open` starts a quote closed on the same
 * line, with something inside and a space, quote, `,;:)]}` or the end after it.
 * Scans only up to that quote or the line's end (each quote character's scans
 * are disjoint: linear).
 */
function closingQuote(text: string, open: number): number | undefined {
  const q = text[open];
  if (q !== '"' && q !== "'" && q !== "`") return undefined;
  let j = open + 1;
  while (j < text.length && text[j] !== q && text[j] !== "\n") j++;
  if (j >= text.length || text[j] !== q || j === open + 1) return undefined;
  const after = text[j + 1];
  return after === undefined || isSpace(after) || AFTER_QUOTE.has(after) ? j : undefined;
}

/** Where the markup closed right after a path ends (not sentence punctuation): from `offset`, up to `limit`. */
export function closingMarkupEnd(text: string, offset: number, limit: number): number {
  let end = offset;
  while (end < limit && WRAPPERS.has(text[end]!)) end++;
  return end;
}

/**
 * True when `token` (a directive's path token) names `published`: it starts
 * with that path and nothing that could continue a file name follows (an
 * outbox name has one dot, before its extension, so anything after the
 * extension is markup, punctuation or text the extraction would cut off).
 */
export function tokenNames(token: string, published: string): boolean {
  if (!token.startsWith(published)) return false;
  const next = token[published.length];
  // Another copy glued on (`…/a.txtMEDIA:…/a.txt`) begins with a letter too.
  return next === undefined || !/[A-Za-z0-9]/.test(next) || GLUED_DIRECTIVE.test(token.slice(published.length));
}

const GLUED_DIRECTIVE = new RegExp(`^${MEDIA_WORD}:`, "iu");

/** A directive's path as the gateway opens it: `~/` is its home (os.path.expanduser). */
export function expandHome(p: string, home: string): string {
  return p.startsWith("~/") ? path.join(home, p.slice(2)) : p;
}
