// What the gateway does with text and paths (../shared/DESIGN.md). Every part
// that must agree with the gateway asks this module, never its own copy.
import path from "node:path";
import { MEDIA_WORD } from "../core/escape.js";
import { hermesRoot, readdirOrEmpty } from "../content/hermes-homes.js";
import { pythonFloat, pythonMaxZero, pythonStrip } from "../core/python-text.js";
import { SYSTEM_PREFIXES, resolveExisting } from "./denylist.js";

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

/** Splits HERMES_MEDIA_ALLOW_DIRS as the gateway does (each entry stripped as Python's str.strip() does). */
export function parseAllowDirs(value: string | undefined, home = process.getBuiltinModule("node:os").homedir()): string[] {
  if (!value) return [];
  const roots: string[] = [];
  for (const raw of value.split(/[:,]/)) {
    let entry = pythonStrip(raw);
    if (entry === "") continue;
    // os.path.expanduser: `~name/…` is that user's home too (an unknown user's entry stays relative, and is skipped).
    entry = expandUser(entry, home);
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

/** Python's Path(p).suffix (3.11): the last component's text from its last dot, unless that dot starts or ends the name. */
function pythonSuffix(p: string): string {
  const name = path.basename(p);
  const i = name.lastIndexOf(".");
  return i > 0 && i < name.length - 1 ? name.slice(i) : "";
}

/** A known extension followed by what ends a path for the gateway's known-extension pattern (MEDIA_TAG_CLEANUP_RE's lookahead; no quote can be in the path). */
const KNOWN_EXT_ENDS = new RegExp(`\\.(?:${[...GATEWAY_EXTENSIONS].join("|")})[,;:)\\]}]`, "iu");
/** What the gateway strips from the end of an any-type path (_normalize_media_tag_path). */
const NORMALISE_STRIPS = new Set([..."`\"',.;:)}]"]);

/**
 * Why the exact line `line` would not make the current gateway (Hermes
 * 0.19.0) extract exactly `expectedPath`. A path with a known extension
 * follows mediaLineProblem (every version's rule). Any other absolute path
 * (`Makefile`, `.py`, `.log`) is taken whole by MEDIA_EXTENSIONLESS_TAG_RE
 * when it holds no whitespace or quote, ends in none of the characters the
 * gateway strips, and no known extension inside it ends the other pattern's
 * match; the gateway delivers it once it validates (deliveryProblem says).
 */
export function deliveredLineProblem(line: string, expectedPath: string): string | undefined {
  const known = mediaLineProblem(line, expectedPath);
  if (known === undefined || line !== `MEDIA:${expectedPath}` || !expectedPath.startsWith("/")) return known;
  if (GATEWAY_EXTENSIONS.has(pythonSuffix(expectedPath).slice(1).toLowerCase())) return known;
  for (const ch of expectedPath) if (isSpace(ch) || ch === "`" || ch === '"' || ch === "'") return known;
  if (NORMALISE_STRIPS.has(expectedPath[expectedPath.length - 1]!) || KNOWN_EXT_ENDS.test(expectedPath)) return known;
  return undefined;
}

/**
 * The path Hermes 0.19.0's any-type pattern (MEDIA_EXTENSIONLESS_TAG_RE)
 * reads from the unquoted path starting `rest` (text right after `MEDIA:`
 * and its whitespace): up to a whitespace, backtick or quote, then
 * _normalize_media_tag_path's strip. Undefined when that path has a known
 * extension: the other pattern owns it (and its reading may run on past a
 * space, as pathEnds reads it). The gateway sends the file once it validates.
 */
export function anyTypeReading(rest: string): string | undefined {
  let end = 0;
  while (end < rest.length && !isSpace(rest[end]!) && rest[end] !== "`" && rest[end] !== '"' && rest[end] !== "'") end++;
  while (end > 0 && NORMALISE_STRIPS.has(rest[end - 1]!)) end--;
  const p = rest.slice(0, end);
  if (p === "" || GATEWAY_EXTENSIONS.has(pythonSuffix(p).slice(1).toLowerCase())) return undefined;
  return p;
}

/** Python's `\w` in a str pattern: letters, numbers, the underscore. */
const PY_WORD = /^[\p{L}\p{N}_]$/u;

/** The code point of `text` that ends right before `at` (a surrogate pair taken whole). */
function codePointBefore(text: string, at: number): string {
  const low = text.charCodeAt(at - 1);
  if (low >= 0xdc00 && low <= 0xdfff && at >= 2) {
    const high = text.charCodeAt(at - 2);
    if (high >= 0xd800 && high <= 0xdbff) return text.slice(at - 2, at);
  }
  return text.slice(at - 1, at);
}

/**
 * Inline code as the gateway pairs its backticks (`` `[^`\n]+` ``, found left
 * to right over the whole text, by its code masker and extract_local_files
 * alike): each span's start and end, in order. A backtick that opens one is
 * left in place when the directive before it is removed (the masker blanks
 * it first). Linear: only a line's last backtick can fail to pair.
 */
export function inlineCodeSpans(text: string): [number, number][] {
  return [...text.matchAll(/`[^`\n]+`/g)].map((m): [number, number] => [m.index, m.index + m[0].length]);
}

/**
 * Offset ranges extract_local_files skips as code, paired as it pairs them:
 * fenced blocks (```` ```[^\n]*\n.*?``` ````) and inline code (`` `[^`\n]+` ``), each
 * over the whole text. Merged into disjoint ranges, sorted; linear but for the sort.
 */
function localFileCodeSpans(text: string): [number, number][] {
  const spans: [number, number][] = [];
  for (let at = text.indexOf("```"); at >= 0; ) {
    const nl = text.indexOf("\n", at + 3);
    const close = nl < 0 ? -1 : text.indexOf("```", nl + 1);
    if (close < 0) break;
    spans.push([at, close + 3]);
    at = text.indexOf("```", close + 3);
  }
  spans.push(...inlineCodeSpans(text));
  spans.sort((a, b) => a[0] - b[0]);
  const merged: [number, number][] = [];
  for (const span of spans) {
    const last = merged[merged.length - 1];
    if (last && span[0] <= last[1]) last[1] = Math.max(last[1], span[1]);
    else merged.push([span[0], span[1]]);
  }
  return merged;
}

/**
 * The files the gateway uploads from bare mentions in `text`, as
 * os.path.expanduser spells them for a gateway whose home is `home`:
 * extract_local_files, run on what extract_media leaves (pass `text` without
 * the directives the gateway removes: check-reply's withoutDirectives), finds
 * its pattern's matches in order (`(?<![/:\w.])(?:~/|/|[A-Za-z]:[/\\])
 * (?:[\w.\-]+[/\\])*[\w.\-]+\.(?:ext)\b`, case ignored), skips those that
 * start in code, and the gateway sends each that is a file, as well as the
 * MEDIA: files (it does not deduplicate across the two). Whether the gateway
 * then accepts a file is deliveryProblem's question.
 *
 * A match is read as the regex reads it, not by running it (its nested
 * quantifiers backtrack): from its anchor, the path runs over names of
 * `[\w.\-]` joined by single separators up to where that breaks (its run),
 * and ends at the last known extension in the run that has a name character
 * before its dot and a non-word character after it (the greedy quantifiers
 * give back from the right); with none, no match starts there. A later
 * anchor inside the same run (after a `-` or a `\`, which the look-behind
 * allows) sees the same run: each run is read once, so the whole text is
 * read in linear time. So `/q-/o/a.txt` is one path (not /o/a.txt),
 * `/o/a.txt.bak` and `/o/a.txt-x` end at `.txt`, and `/o/a.txt/o/b.txt` is
 * one path, which names no file.
 */
export function localFileMentions(text: string, home?: string): Set<string> {
  return new Set(localFileMatches(text, home).map((m) => m.path));
}

/** The matches localFileMentions reads, in order: where each starts and ends in `text`, and its path (expanded). */
export function localFileMatches(text: string, home?: string): { start: number; end: number; path: string }[] {
  const found: { start: number; end: number; path: string }[] = [];
  let spans: [number, number][] | undefined;
  let s = 0;
  /** The run last read: its names start at `from`, it breaks at `to`; its last extension's dot and end (-1: none). */
  let run: { from: number; to: number; dot: number; end: number } | undefined;
  const anchor = /~\/|\/|[A-Za-z]:[/\\]/g;
  for (let m = anchor.exec(text); m; m = anchor.exec(text)) {
    const at = m.index;
    const body = at + m[0].length;
    const before = at > 0 ? codePointBefore(text, at) : "";
    anchor.lastIndex = at + 1;
    if (before === "/" || before === ":" || before === "." || PY_WORD.test(before)) continue;
    if (!run || body < run.from || body >= run.to) run = readRun(text, body);
    if (run.end < 0 || run.dot <= body) continue;
    anchor.lastIndex = run.end;
    spans ??= localFileCodeSpans(text);
    while (s < spans.length && spans[s]![1] <= at) s++;
    if (s < spans.length && spans[s]![0] <= at) continue;
    const raw = text.slice(at, run.end);
    found.push({ start: at, end: run.end, path: home !== undefined ? expandUser(raw, home) : raw });
  }
  return found;
}

/** Python's `[^\s"'<>]` (str patterns: `\s` is str.isspace, U+FEFF is not one, U+001C-U+001F and U+0085 are). */
const PY_URL_CHAR = `(?:(?![\\x1c-\\x1f\\x85])[^\\s"'<>]|\\ufeff)`;
/** Python's `\s`. */
const PY_SPACE = `(?:[^\\S\\ufeff]|[\\x1c-\\x1f\\x85])`;
/**
 * extract_images' HTML pattern, `<img\s+src=["']?(https?://[^\s"'<>]+)["']?\s*\/?>\s*(?:</img>)?`:
 * a URL holds no `<`, so the runs read from different tags are disjoint (linear).
 */
const IMG_TAG = new RegExp(`<img${PY_SPACE}+src=["']?(https?://${PY_URL_CHAR}+)["']?${PY_SPACE}*/?>${PY_SPACE}*(?:</img>)?`, "g");
/** What extract_images takes a Markdown image's URL for an image by (a substring of the lowered URL). */
const IMAGE_URL_MARKS = [".png", ".jpg", ".jpeg", ".gif", ".webp", "fal.media", "fal-cdn", "replicate.delivery"];

/**
 * extract_images' Markdown pattern, `!\[([^\]]*)\]\((https?://[^\s\)]+)\)`, run as
 * finditer runs it: each match with its URL. Read without the regex (its
 * `[^\]]*` would rescan the text up to the next `]` from every `![`): every
 * `![` before the same `]` has the same alt's end, whose URL is read once.
 */
function markdownImages(text: string): { start: number; end: number; url: string }[] {
  const found: { start: number; end: number; url: string }[] = [];
  /** The `]` last found, and the URL read after it (its end; -1: none). */
  let close = -1;
  let url: { end: number; value: string } | undefined;
  for (let at = text.indexOf("!["); at >= 0; ) {
    if (close < at + 2) {
      close = text.indexOf("]", at + 2);
      if (close < 0) break;
      url = undefined;
      if (text[close + 1] === "(" && /^https?:\/\//.test(text.slice(close + 2, close + 10))) {
        let e = close + 2 + (text[close + 6] === "s" ? 8 : 7);
        const from = e;
        while (e < text.length && text[e] !== ")" && !isSpace(text[e]!)) e++;
        if (e > from && text[e] === ")") url = { end: e + 1, value: text.slice(close + 2, e) };
      }
    }
    if (url) {
      found.push({ start: at, end: url.end, url: url.value });
      at = text.indexOf("![", url.end);
    } else at = text.indexOf("![", at + 1);
  }
  return found;
}

/**
 * `text` as the gateway has it when it looks for bare paths, less its
 * MEDIA: directives (the caller removes those where they were): extract_media
 * removes `[[audio_as_voice]]`, then `[[as_document]]` (str.replace, in that
 * order), and extract_images removes each Markdown image whose URL looks like
 * an image's, and each `<img src=…>` tag with the whitespace after it (and
 * any Markdown image with a URL of those), Markdown first; then
 * _strip_media_directives removes both markers again. These removals glue
 * text onto a path (`Preview.<img …> /o/a.txt` is `Preview./o/a.txt`, which
 * is no mention) and pair backticks anew. The gateway's collapsing of blank
 * lines and strip change no mention. Linear: each step one scan.
 */
export function gatewayBareText(text: string): string {
  const markers = (t: string) => (t.includes("[[") ? t.replaceAll("[[audio_as_voice]]", "").replaceAll("[[as_document]]", "") : t);
  let t = markers(text);
  const md = t.includes("![") ? markdownImages(t) : [];
  const tags = t.includes("<img") ? [...t.matchAll(IMG_TAG)].map((m) => m[1]!) : [];
  const urls = new Set([...md.filter((m) => IMAGE_URL_MARKS.some((k) => m.url.toLowerCase().includes(k))).map((m) => m.url), ...tags]);
  if (urls.size === 0) return t;
  const pieces: string[] = [];
  let at = 0;
  for (const m of md) {
    if (!urls.has(m.url)) continue;
    pieces.push(t.slice(at, m.start));
    at = m.end;
  }
  pieces.push(t.slice(at));
  t = pieces.join("").replace(IMG_TAG, (whole, url: string) => (urls.has(url) ? "" : whole));
  return markers(t);
}

/** The code point of `text` that starts at `at` (a surrogate pair taken whole). */
const codePointAt = (text: string, at: number) => String.fromCodePoint(text.codePointAt(at)!);
/** A character of a name in extract_local_files' pattern: `[\w.\-]`. */
const isNameChar = (ch: string) => ch === "." || ch === "-" || PY_WORD.test(ch);
/** A character of a run (runStartBefore): a name's, or a separator. */
const isRunChar = (ch: string) => ch === "/" || ch === "\\" || isNameChar(ch);

/** Does a run end right before `at` (runStartBefore would move), read in one character? */
export const runEndsAt = (text: string, at: number): boolean => at > 0 && isRunChar(codePointBefore(text, at));

/** Does a run, or a `~/` path, start at `at`: text that a change before it may join to, or whose look-behind it may change? */
export const pathMayStartAt = (text: string, at: number): boolean => at < text.length && (isRunChar(codePointAt(text, at)) || text.startsWith("~/", at));

/**
 * Where the run of names and separators (`[\w.\-]`, `/`, `\`) that ends right
 * before `at` starts (`at` when none does): the text extract_local_files reads
 * as one, whose path a change at `at` may end elsewhere. Stops at the first
 * other character: the runs of successive directives are disjoint.
 * runEndAfter: where the run that starts at `at` ends, read forward alike.
 */
export function runEndAfter(text: string, at: number): number {
  let to = at;
  while (to < text.length) {
    const ch = codePointAt(text, to);
    if (!isRunChar(ch)) break;
    to += ch.length;
  }
  return to;
}

export function runStartBefore(text: string, at: number): number {
  let from = at;
  while (from > 0) {
    const ch = codePointBefore(text, from);
    if (!isRunChar(ch)) break;
    from -= ch.length;
  }
  return from;
}

/**
 * The run of names starting at `from` (see localFileMentions): where it
 * breaks (a character of no name, or a separator not followed by one), and
 * the last dot in it with a name character before it in its name and a known
 * extension after it (the whole word after the dot: `\b` follows), with
 * that extension's end.
 */
function readRun(text: string, from: number): { from: number; to: number; dot: number; end: number } {
  let dot = -1;
  let end = -1;
  let at = from;
  let nameStart = from;
  for (;;) {
    if (at >= text.length || !isNameChar(codePointAt(text, at))) break;
    while (at < text.length) {
      const ch = codePointAt(text, at);
      if (!isNameChar(ch)) break;
      if (ch === "." && at > nameStart) {
        let r = at + 1;
        while (r < text.length && PY_WORD.test(codePointAt(text, r))) r += codePointAt(text, r).length;
        const ext = [...text.slice(at + 1, r)].map((c) => FOLDED[c] ?? c.toLowerCase()).join("");
        if (GATEWAY_EXTENSIONS.has(ext)) {
          dot = at;
          end = r;
        }
        // The word after the dot holds no dot: it is read once.
        at = r;
        continue;
      }
      at += ch.length;
    }
    // A separator goes on to the next name; one with none after it ends the run (the loop's first test).
    const sep = text[at];
    if (sep !== "/" && sep !== "\\") break;
    at++;
    nameStart = at;
  }
  return { from, to: at, dot, end };
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
  return ["1", "true", "yes", "on"].includes(pythonStrip(raw ?? "0").toLowerCase());
}

/** The gateway's reading of HERMES_MEDIA_TRUST_RECENT_FILES (on unless 0/false/no/off or empty). */
export function trustRecentOn(raw: string | undefined): boolean {
  return !["0", "false", "no", "off", ""].includes(pythonStrip(raw ?? "1").toLowerCase());
}

/**
 * Seconds within which a modified file is trusted in strict mode; 0 when that
 * trust is off. As the gateway reads it (_media_delivery_recency_seconds):
 * `max(0.0, float(value.strip()))`, so `9_000` is 9000, `inf` trusts every
 * file, `nan` turns the trust off; a value float() refuses gives the default.
 */
export function trustRecentSeconds(trust: string | undefined, seconds: string | undefined): number {
  if (!trustRecentOn(trust)) return 0;
  const custom = pythonStrip(seconds ?? "");
  const n = custom === "" ? undefined : pythonFloat(custom);
  return n === undefined ? DEFAULT_TRUST_RECENT_SECONDS : pythonMaxZero(n);
}

/** The cache folders of a Hermes home the gateway delivers from: legacy and canonical layouts (MEDIA_DELIVERY_SAFE_ROOTS). */
const OWN_CACHES = ["image_cache", "audio_cache", "video_cache", "document_cache", "browser_screenshots"];
const CANONICAL_CACHES = ["images", "audio", "videos", "documents", "screenshots"].map((d) => `cache/${d}`);
/** A Kanban board's name, as the gateway takes one (_kanban_attachment_roots). */
const KANBAN_BOARD = /^[a-z0-9][a-z0-9_-]{0,63}$/;
/**
 * Entries of a profiles or boards directory looked at one by one; past
 * this many, an agent filled it, and the directory is taken whole (the
 * gateway reads every entry: a bound that looked at the first few would
 * hide the root it takes after them, and a file it sends would be dropped).
 */
const MAX_LISTED = 4096;

/** The entries of `dir` in name order, or undefined past MAX_LISTED (what lies under it is then the gateway's). */
function listedOrWhole(dir: string): string[] | undefined {
  const names = readdirOrEmpty(dir);
  return names.length > MAX_LISTED ? undefined : names;
}


/**
 * The roots the gateway always delivers from (_media_delivery_allowed_roots),
 * besides HERMES_MEDIA_ALLOW_DIRS: HERMES_HOME's caches; every profile's
 * caches under the shared root; the Kanban attachments (of
 * HERMES_KANBAN_ATTACHMENTS_ROOT when set, else of HERMES_KANBAN_HOME or the
 * shared root: its `kanban/attachments` and each board's with a kanban.db).
 * The shared root is Hermes' (hermes-homes.ts hermesRoot), not HERMES_HOME:
 * a profile gateway takes these, and a second set of denied credential files
 * (gatewayDeniedPaths), from `~/.hermes`.
 */
export function gatewayTrustedRoots(env: NodeJS.ProcessEnv, home: string, hermesHome: string, root = hermesRoot(hermesHome, home)): string[] {
  const fs = process.getBuiltinModule("node:fs");
  const isDir = (p: string) => fs.statSync(p, { throwIfNoEntry: false })?.isDirectory() === true;
  const roots = [...OWN_CACHES, ...CANONICAL_CACHES].map((d) => path.join(hermesHome, d));
  const profiles = path.join(root, "profiles");
  const profileNames = listedOrWhole(profiles);
  if (profileNames === undefined) roots.push(profiles);
  for (const name of profileNames ?? []) {
    if (isDir(path.join(profiles, name))) roots.push(...CANONICAL_CACHES.map((d) => path.join(profiles, name, d)));
  }
  const override = pythonStrip(env.HERMES_KANBAN_ATTACHMENTS_ROOT ?? "");
  if (override !== "") return [...roots, path.resolve(expandHome(override, home))];
  const kanbanHome = pythonStrip(env.HERMES_KANBAN_HOME ?? "");
  const kanban = path.join(kanbanHome !== "" ? path.resolve(expandHome(kanbanHome, home)) : root, "kanban");
  roots.push(path.join(kanban, "attachments"));
  const boards = path.join(kanban, "boards");
  const boardNames = listedOrWhole(boards);
  if (boardNames === undefined) roots.push(boards);
  for (const name of boardNames ?? []) {
    const board = path.join(boards, name);
    if (!KANBAN_BOARD.test(name) || fs.lstatSync(board, { throwIfNoEntry: false })?.isDirectory() !== true) continue;
    if (fs.statSync(path.join(board, "kanban.db"), { throwIfNoEntry: false })?.isFile() === true) roots.push(path.join(board, "attachments"));
  }
  return roots;
}

/** Credential folders under the home (_MEDIA_DELIVERY_DENIED_HOME_SUBPATHS). */
const DENIED_HOME_SUBPATHS = [".ssh", ".aws", ".gnupg", ".kube", ".docker", ".config", ".azure", ".gcloud", "Library/Keychains"];
/** Credential files and folders of a Hermes home (_ROOT_CREDENTIAL_FILES and _DIRS). */
const DENIED_HERMES_ENTRIES = [
  ".env", "auth.json", "auth.lock", "credentials", "config.yaml", ".anthropic_oauth.json", "google_token.json",
  "google_oauth_pending.json", "auth/google_oauth.json", "webhook_subscriptions.json", "cache/bws_cache.json", "pairing", "mcp-tokens",
];

/**
 * The gateway's own denylist (_media_delivery_denied_paths), resolved as it
 * compares them: system prefixes, the home's credential folders, and the
 * credential files of both HERMES_HOME and the shared root (a profile
 * gateway denies `~/.hermes/.env` too). The running user's home itself is
 * never denied (the `/root` exception of _path_under_denied_prefix).
 */
export function gatewayDeniedPaths(home: string, hermesHome: string, root: string): string[] {
  const denied = [...SYSTEM_PREFIXES, ...DENIED_HOME_SUBPATHS.map((d) => path.join(home, d))];
  for (const base of [hermesHome, root]) denied.push(...DENIED_HERMES_ENTRIES.map((e) => path.join(base, e)));
  const ownHome = resolveExisting(home);
  return [...new Set(denied.map((d) => resolveExisting(d)))].filter((d) => d !== ownHome);
}

export interface DeliveryPolicy {
  /** Roots the gateway always delivers from: HERMES_MEDIA_ALLOW_DIRS and its caches. */
  roots: string[];
  strict: boolean;
  /** Strict mode's trust window for recently modified files, in seconds (0: off). */
  recentSeconds: number;
  /** Why a resolved path is on the credential denylist (src/safety/denylist.ts), if it is. */
  denied: (resolved: string) => string | undefined;
  /** The gateway's own denylist, resolved (gatewayDeniedPaths): what it refuses whatever ours says. */
  gatewayDenied: string[];
  /** The gateway's home: what `~/` in a directive means. */
  home: string;
}

/** The delivery policy a gateway process with environment `env` applies. */
export function deliveryPolicy(env: NodeJS.ProcessEnv, home: string, hermesHome: string, denied: DeliveryPolicy["denied"]): DeliveryPolicy {
  const root = hermesRoot(hermesHome, home);
  return {
    roots: [...gatewayTrustedRoots(env, home, hermesHome, root), ...parseAllowDirs(env[ALLOW_DIRS_ENV], home)],
    strict: strictModeOn(env[STRICT_ENV]),
    recentSeconds: trustRecentSeconds(env[TRUST_RECENT_ENV], env[TRUST_RECENT_SECONDS_ENV]),
    denied,
    gatewayDenied: gatewayDeniedPaths(home, hermesHome, root),
    home,
  };
}

export type DeliveryCode = "not_found" | "not_regular_file" | "not_allowed" | "denied";

export interface DeliveryProblem {
  code: DeliveryCode;
  /** Short, for a sentence the user reads: "... could not be sent: <reason>". */
  reason: string;
}

/**
 * Why the gateway would not deliver the file at `p` (an absolute path as
 * extracted), or undefined when it would. The order is the gateway's
 * (validate_media_delivery_path): the file must exist and be regular; allowed
 * roots win over everything; then the denylists (ours and the gateway's);
 * then, in strict mode, only recently modified files. Its type does not
 * matter: a path without a known extension is delivered once it validates
 * (MEDIA_EXTENSIONLESS_TAG_RE, Hermes #36060).
 */
export function deliveryProblem(p: string, policy: DeliveryPolicy, now = Date.now()): DeliveryProblem | undefined {
  const expanded = expandHome(p, policy.home);
  // The gateway resolves only absolute paths (a quoted directive may hold any text).
  if (!path.isAbsolute(expanded)) return { code: "not_found", reason: "its path is not absolute" };
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
  if (policy.denied(resolved) || isUnderRoot(resolved, policy.gatewayDenied)) return { code: "denied", reason: "it is in a protected location" };
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
  /**
   * How Hermes 0.19.0 reads it: `known`, its known-extension pattern takes
   * it (a quoted path, or a bare one ending in a known extension), and
   * removes it from the text whether it delivers it or not; `any`, a bare
   * path its any-type pattern reads, removed only when the file validates;
   * `none`, markup before the path: neither pattern takes it, and it stays.
   */
  reading: "known" | "any" | "none";
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
  // A claim restarts the scan inside the token just read (glued copies): the end of its word, and of the markup and
  // punctuation before that end, are the same for every directive inside it, found once (a chain of n copies is
  // read in time linear in its length, not n times).
  let word: { from: number; to: number; cutAt: number; end: number } | undefined;
  const wordAt = (i: number) => {
    if (word && i >= word.from && i <= word.to) return word;
    let to = i;
    while (to < text.length && !isSpace(text[to]!)) to++;
    const cutAt = i + trailingCut(text.slice(i, to));
    word = { from: i, to, cutAt, end: closingMarkupEnd(text, cutAt, to) };
    return word;
  };
  // The first backtick or quote at or after an offset, up to a word's end: found once for every directive before it
  // (a chain of glued copies is read once, not once a copy).
  let quote = { from: 0, at: -1 };
  const quoteAt = (i: number, to: number) => {
    if (!(quote.from <= i && quote.at >= i)) quote = { from: i, at: quoteIn(text, i, to) };
    return Math.min(quote.at, to);
  };
  for (let m = marker.exec(text); m; m = marker.exec(text)) {
    let i = m.index + m[0].length;
    while (i < text.length && isSpace(text[i]!)) i++;
    const bare = i;
    let k: number;
    let end: number;
    let token: string;
    let cut: number;
    let reading: DirectiveOccurrence["reading"] = "known";
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
      const w = wordAt(i);
      k = w.to;
      // Right after `MEDIA:` and whitespace (no markup: the gateway's pattern allows none), a path goes on past its first word
      // to the last extension on its line, as the gateway reads it (pathEnds).
      const anchor = text[i] === "/" ? 1 : text[i] === "~" ? 2 : 3;
      const reached = i === bare ? pathEnd(i, i + anchor + 1) : -1;
      const later = reached > k ? reached : -1;
      if (reached < 0) reading = i === bare ? "any" : "none";
      if (later >= 0) {
        token = text.slice(i, later);
        cut = token.length;
        end = closingMarkupEnd(text, later, wordAt(later).to);
      } else if (reached >= 0 && reached < w.cutAt) {
        // The gateway's path ends inside the word, before more than punctuation (`MEDIA:/o/a.txt)/o/b.png\`): what
        // follows is text, where it may find a bare path of its own.
        token = text.slice(i, reached);
        cut = token.length;
        end = closingMarkupEnd(text, reached, k);
      } else {
        token = text.slice(i, k);
        cut = Math.max(w.cutAt, i) - i;
        end = w.cutAt >= i ? w.end : closingMarkupEnd(text, i, k);
        // The any-type pattern's path ends at a backtick or quote, which its match takes: a directive glued on after it
        // is one of its own (`MEDIA:/x/nope.log`MEDIA:/o/Makefile`).
        const q = reading === "any" ? quoteAt(i, k) : k;
        if (q < k && gluedMarkerIn(text, q, k)) {
          token = text.slice(i, q);
          cut = trailingCut(token);
          end = q + 1;
        }
      }
    }
    let start = m.index;
    while (start > 0 && WRAPPERS.has(text[start - 1]!)) start--;
    found.push({ start, end, marker: m.index, token, tokenStart: i, intended: token.slice(0, cut), reading });
    marker.lastIndex = i + (claims?.(token) ?? token.length);
  }
  return found;
}

/** The first backtick or quote in text[from, to), or `to`. */
function quoteIn(text: string, from: number, to: number): number {
  let at = from;
  while (at < to && text[at] !== "`" && text[at] !== '"' && text[at] !== "'") at++;
  return at;
}

/** Is there a `MEDIA:` in text[from, to)? Scans up to the next one anywhere: between two directives, read once. */
function gluedMarkerIn(text: string, from: number, to: number): boolean {
  const marker = new RegExp(`${MEDIA_WORD}:`, "giu");
  marker.lastIndex = from;
  const m = marker.exec(text);
  return m !== null && m.index < to;
}

/** Length of `token` without the markup and punctuation after the path. */
export function trailingCut(token: string): number {
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

/**
 * Where the markup closed right after a path ends (not sentence punctuation):
 * from `offset`, up to `limit`. After other markup (a closing backtick), a
 * `~/` starts a path glued on, whose `~` is not markup.
 */
export function closingMarkupEnd(text: string, offset: number, limit: number): number {
  let end = offset;
  while (end < limit && WRAPPERS.has(text[end]!) && !(end > offset && text[end] === "~" && text[end + 1] === "/")) end++;
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

/**
 * `p` as os.path.expanduser writes it: `~` and `~/…` are `home` (the
 * gateway's HOME), `~name` and `~name/…` that user's home (pwd.getpwnam, read
 * here from `passwd`: a user only the system's other name services know is
 * not found, and the path is left as it is, as Python leaves it for an
 * unknown user), without its trailing slashes (`/` when nothing is left),
 * then the rest as written (not normalised: a token's characters map one for
 * one past the `~…`). Any other path is returned as it is.
 */
export function expandUser(p: string, home: string, passwd = "/etc/passwd"): string {
  if (!p.startsWith("~")) return p;
  let slash = p.indexOf("/", 1);
  if (slash < 0) slash = p.length;
  const userHome = slash === 1 ? home : passwdHome(p.slice(1, slash), passwd);
  if (userHome === undefined) return p;
  let end = userHome.length;
  while (end > 0 && userHome[end - 1] === "/") end--;
  return userHome.slice(0, end) + p.slice(slash) || "/";
}

/** The home directory of the user `name` in a passwd file (`name:x:uid:gid:gecos:home:shell`), or undefined. */
function passwdHome(name: string, passwd: string): string | undefined {
  let text: string;
  try {
    text = process.getBuiltinModule("node:fs").readFileSync(passwd, "utf8");
  } catch {
    return undefined;
  }
  for (const line of text.split("\n")) {
    const fields = line.split(":");
    if (fields.length >= 7 && fields[0] === name) return fields[5];
  }
  return undefined;
}

/** A path as the gateway opens it: `~` and `~/…` are its home, `~name/…` that user's (os.path.expanduser: expandUser). */
export function expandHome(p: string, home: string): string {
  return expandUser(p, home);
}
