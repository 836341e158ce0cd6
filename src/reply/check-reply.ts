// `check-reply`: the judge of a final reply, just before the gateway extracts
// its MEDIA: directives. Three rules (issue 13):
//  1. every file prepare published this turn is named by its exact line, bare,
//     on a line of its own: a missing or mangled one is added once at the end
//     (a mangled copy is removed);
//  2. every other directive the gateway would not deliver is replaced by one
//     short sentence saying which file was not sent and why;
//  3. nothing else changes, byte for byte.
// The gateway's rules (extraction, allowed roots, strict mode, denylist) come
// from src/safety/gateway.ts; this module only edits text.
import fs from "node:fs";
import path from "node:path";
import { MEDIA_WORD, escapeText } from "../core/escape.js";
import { type DeliveryPolicy, type DeliveryProblem, type DirectiveOccurrence, closingMarkupEnd, deliveredLineProblem, deliveryProblem, anyTypeReading, expandUser, findDirectives, gatewayBareText, inlineCodeSpans, localFileMatches, localFileMentions, mediaLineProblem, pathMayStartAt, runEndAfter, runEndsAt, runStartBefore, tokenNames, trailingCut } from "../safety/gateway.js";

export interface CheckReplyOptions {
  /** Absolute paths of the files prepare published this turn (the `path` of each `media` entry), in order. */
  published: readonly string[];
  /** The outbox: only a file directly in it is taken as published, and any file directly in it that the reply names counts as one (it passed prepare). */
  outbox?: string;
  policy: DeliveryPolicy;
  now?: number;
}

export interface ReplyNote {
  path: string;
  code: DeliveryProblem["code"] | "mangled";
  reason: string;
}

export interface CheckReplyReport {
  /** The reply to send. Equal to the input, byte for byte, when `changed` is false. */
  reply: string;
  changed: boolean;
  /** Files whose exact line was added at the end. */
  added: string[];
  /** Mangled copies of a published file's line that were removed (as written). */
  removed: { path: string; text: string }[];
  /** Directives replaced by a sentence (or, for a published file, a sentence added at the end). */
  notes: ReplyNote[];
  /** Directives left as they were: bare, and the gateway delivers them. */
  kept: string[];
  /** Published paths that were not taken as published files, and why. */
  ignored: { path: string; reason: string }[];
  /** Published files the reply names as a bare path, which the gateway uploads from the text too (extract_local_files): no line added for them. */
  mentioned: string[];
}

interface Edit {
  start: number;
  end: number;
  replacement: string;
  /** A removal: if it leaves its line with only markup, the line goes too. */
  removal: boolean;
}

/** Characters a line may keep after a removal and still count as empty: spaces, list, quote and heading markers, emphasis, punctuation. */
const MARKUP = new Set([..." \t\r>#*+-_~`\"'.,;:!?()[]{}\u3000\u3001\u3002\uff0c\uff1a\uff1b\uff01\uff1f\u2026\u201c\u201d\u2018\u2019"]);

/** An ordered list item's number at the start of a line (`1.`, `2)`), which onlyMarkup and textStart pass over. */
const LIST_NUMBER = /^[ \t]*\d{1,9}[.)]/;

function onlyMarkup(line: string): boolean {
  const rest = line.replace(LIST_NUMBER, "");
  for (const ch of rest) if (!MARKUP.has(ch)) return false;
  return true;
}

/** The sentence that replaces an undeliverable directive: the file's name (escaped, never a path the gateway could pick up) and why. */
export function noteFor(p: string, reason: string): string {
  const name = escapeText(path.basename(p) || p);
  return `(${name} could not be sent: ${reason}.)`;
}

const MANGLED_REASON = "the line naming it was not written exactly, on a line of its own";
/** A line of its own whose path has whitespace: hermes-agent 0.19.0 reads it whole, older gateways stop at the space (never relied on). */
const SPACED_REASON = "its path has a space, where older gateways end it";
/** A later word of a spaced path that starts a path of its own (after a space or a `MEDIA:`, and any opening markup). */
const LATER_PATH = /[\s:][(\[{"'`*_]*~?\//u;
/** A path the gateway reads on past a space to a later word, where no such file is: the first word's file is not what it opens. */
const SPACED_MISSING_REASON = "the gateway reads the rest of its line as part of its path";

/**
 * Offset ranges the gateway masks as fenced code (``` ... ```), paired as its
 * extraction pairs them: an opening fence needs a line break after it, and
 * closes at the next ``` anywhere. A line inside is never delivered.
 */
function fencedRanges(text: string): [number, number][] {
  const ranges: [number, number][] = [];
  let at = text.indexOf("```");
  while (at >= 0) {
    const nl = text.indexOf("\n", at + 3);
    if (nl < 0) break;
    const close = text.indexOf("```", nl + 1);
    if (close < 0) break;
    ranges.push([at, close + 3]);
    at = text.indexOf("```", close + 3);
  }
  return ranges;
}

/** Where a line's text starts after its container markers (`>` quote markers, list item markers), and what they were. */
interface LineShape {
  /** Offset of the line's text, after every marker and the spaces before it. */
  text: number;
  /** Spaces and tabs before the first marker or the text: the line's own indentation. */
  lead: number;
  /** Spaces and tabs right before the text (after the last marker, less the one space a list marker takes). */
  indent: number;
  quote: boolean;
  /** The column a list item's content starts at, when the line opens one. */
  itemColumn?: number;
}

function lineShape(text: string, start: number, end: number): LineShape {
  let at = start;
  let quote = false;
  let itemColumn: number | undefined;
  let lead = -1;
  for (;;) {
    const from = at;
    while (at < end && (text[at] === " " || text[at] === "\t")) at++;
    if (lead < 0) lead = at - start;
    if (text[at] === ">") {
      quote = true;
      at++;
      continue;
    }
    let marker = at;
    if ("-*+".includes(text[at] ?? "x")) marker = at + 1;
    else {
      while (marker < end && marker - at < 9 && text[marker]! >= "0" && text[marker]! <= "9") marker++;
      marker = marker > at && (text[marker] === "." || text[marker] === ")") ? marker + 1 : at;
    }
    if (marker > at && (text[marker] === " " || text[marker] === "\t")) {
      at = marker + 1;
      itemColumn = at - start;
      continue;
    }
    return { text: at, lead, indent: at - from, quote, ...(itemColumn !== undefined ? { itemColumn } : {}) };
  }
}

/**
 * Where the run of a fence at `at` ends (three or more backticks or tildes;
 * a backtick fence's info string holds no backtick, else the line is inline
 * code), or undefined. `end` is the end of the line's text.
 */
function fenceRun(text: string, at: number, end: number): number | undefined {
  const ch = text[at];
  if (ch !== "`" && ch !== "~") return undefined;
  let run = at;
  while (run < end && text[run] === ch) run++;
  if (run - at < 3) return undefined;
  if (ch === "`" && text.slice(run, end).includes("`")) return undefined;
  return run;
}

/** The block a fence opened, and the container it lies in (a code block never continues past its container's end). */
interface OpenBlock {
  ch: string;
  length: number;
  container: "top" | "quote" | "item";
  /** A list item's content column. */
  indent: number;
}

interface Fences {
  /** The fence lines, as the start of each line mapped to where its fence run ends. */
  lines: Map<number, number>;
  /** The fence that closes a block left open at the end at the top level (one in a quote or list item ends with it), or undefined. */
  open?: string;
}

/**
 * The reply's code fences, by one rule, Markdown's (CommonMark): a fence is
 * three or more backticks or tildes, indented at most three spaces within
 * its container: after a line's `>` quote markers and list markers, or
 * under the list item the line continues (indented to its content). A line
 * that opens a block, and the line that closes it (the same character, at
 * least as many, nothing after), are fence lines; a line inside a block is
 * its content, even when it looks like a fence with an info string: removing
 * a copy from it must not turn it into a closing fence. A block in a quote
 * ends with the quote (a line without `>`), one in a list item with the item
 * (a line indented less than its content): the line that ends it is read
 * anew, and may open a block of its own. The lines of the result are those
 * check-reply keeps when it removes a copy; `open` is the block it closes
 * before the lines it adds at the end (the gateway's extraction never masks
 * past an unclosed fence; this is so they are not shown as code).
 */
function readFences(text: string): Fences {
  const lines = new Map<number, number>();
  let open: OpenBlock | undefined;
  /** The content column of the list item the lines are in (0: none). */
  let itemIndent = 0;
  for (let at = 0; at < text.length; ) {
    const nl = text.indexOf("\n", at);
    const next = nl < 0 ? text.length : nl + 1;
    const end = nl < 0 ? text.length : text[nl - 1] === "\r" ? nl - 1 : nl;
    const shape = lineShape(text, at, end);
    const blank = shape.text >= end;
    if (open && ((open.container === "quote" && !shape.quote) || (open.container === "item" && !blank && shape.lead < open.indent))) open = undefined;
    let container: OpenBlock["container"] = "top";
    let indent = 0;
    let relative = shape.lead;
    if (shape.quote) {
      container = "quote";
      // One space after `>` belongs to the marker.
      relative = Math.max(0, shape.indent - 1);
    } else if (shape.itemColumn !== undefined) {
      container = "item";
      indent = shape.itemColumn;
      relative = shape.indent;
    } else if (itemIndent > 0 && shape.lead >= itemIndent) {
      container = "item";
      indent = itemIndent;
      relative = shape.lead - itemIndent;
    }
    const fence = relative <= 3 ? fenceRun(text, shape.text, end) : undefined;
    if (open) {
      if (fence !== undefined && text[shape.text] === open.ch && fence - shape.text >= open.length && /^[ \t]*$/.test(text.slice(fence, end))) {
        open = undefined;
        lines.set(at, fence);
      }
    } else {
      if (fence !== undefined) {
        open = { ch: text[shape.text]!, length: fence - shape.text, container, indent };
        lines.set(at, fence);
      }
      if (shape.itemColumn !== undefined) itemIndent = shape.itemColumn;
      else if (!blank && !shape.quote && shape.lead < itemIndent) itemIndent = 0;
    }
    at = next;
  }
  return { lines, ...(open?.container === "top" ? { open: open.ch.repeat(open.length) } : {}) };
}

/** Is the file a regular file directly in `dir` (not a link)? A path through a file (`…/a.txt/`, ENOTDIR) names none. */
function isFileIn(p: string, dirs: readonly string[]): boolean {
  if (!dirs.includes(path.dirname(p)) || p.endsWith("/")) return false;
  try {
    return fs.lstatSync(p, { throwIfNoEntry: false })?.isFile() === true;
  } catch {
    return false;
  }
}

function realDir(dir: string): string {
  try {
    return fs.realpathSync.native(dir);
  } catch {
    return dir;
  }
}

/**
 * Why `p` is not taken as a published file, or undefined. Only the outbox
 * holds files that passed prepare: a path the plugin recorded from a tool's
 * output may be forged, and a file elsewhere in the gateway's allowed roots
 * (its own caches: other chats' uploads, screenshots) is never added for it.
 */
function publishedProblem(p: string, outboxDirs: readonly string[]): string | undefined {
  if (!path.isAbsolute(p) || path.resolve(p) !== p) return "not an absolute, normalised path";
  if (mediaLineProblem(`MEDIA:${p}`, p)) return "its MEDIA: line would not be extracted whole";
  if (!isFileIn(p, outboxDirs)) return "not a regular file directly in the outbox";
  return undefined;
}

/**
 * `text` without its directives (`MEDIA:` to its path's end, or to a bare
 * mention glued on inside it: mentionTail), as the gateway looks for bare
 * paths once it has removed them and check-reply has judged them. A mention
 * inside one's path is gone (`MEDIA:/x/q(/o/a.txt`), and one glued before one
 * (`/o/a.txtMEDIA:…`) ends where the directive was.
 */
function withoutDirectives(text: string, tailOf: (d: DirectiveOccurrence) => number, asText: (d: DirectiveOccurrence) => boolean, held: (d: DirectiveOccurrence) => boolean): string {
  const pieces: string[] = [];
  let at = 0;
  for (const d of findDirectives(text)) {
    // One check-reply leaves as written (leftAsText) is text to the gateway, as it was.
    if (asText(d)) continue;
    if (held(d)) {
      // One kept for the run before it (heldForRun): the gateway deletes it, with its closing quote, gluing the text either side.
      pieces.push(text.slice(at, Math.max(at, gatewayStart(text, d))));
      at = Math.max(at, d.end);
      continue;
    }
    // A space where it was: a directive check-reply edits becomes a sentence, which ends a path before it and may
    // start one after it (`…/m1.txtq(….)/o/a.txt`), where the text joined would be one path; one it keeps is a line of its own.
    pieces.push(text.slice(at, Math.max(at, d.marker)), " ");
    at = Math.max(at, d.tokenStart + tailOf(d));
  }
  pieces.push(text.slice(at));
  return pieces.join("");
}

/** The name a sentence gives a path that names no file: up to a glued `MEDIA:` (`/x/nope.log~MEDIA:/o/a.txt` and `/x/nope.png**MEDIA:`/o/a.txt` are not about a.txt). */
function sentenceName(p: string): string {
  const glued = GLUED_PATH.exec(p);
  if (!glued || glued.index === 0) return p;
  const before = p.slice(0, glued.index);
  return before.slice(0, trailingCut(before)) || before;
}

/** How much of a token namedFile reads: PATH_MAX and room for what may follow a path. */
const NAME_WINDOW = 4096 + 16;

/** A glued copy's `MEDIA:` inside a token: where an outbox file's name may end. */
const GLUED = new RegExp(`${MEDIA_WORD}:`, "iu");
/** A directive starting right here (a glued copy's or another's `MEDIA:`, the quote the gateway's pattern allows before it), up to its path. */
const GLUED_NEXT = new RegExp(`^[\`"']?${MEDIA_WORD}:[\\s\`*_"']*`, "iu");
/** A glued directive inside a path: `MEDIA:`, any markup the model opened (`` **MEDIA:`/o/a.txt` ``), and the start of a path. */
const GLUED_PATH = new RegExp(`${MEDIA_WORD}:[\`*_"'\\s]*(?:/|~/|[A-Za-z]:[\\\\/])`, "iu");

/**
 * The published or outbox file `token` names, read as the gateway opens it
 * (`~/` is the home): a published path, or a regular file directly in the
 * outbox whose exact line would deliver it (any type: a planted `it's.log`
 * would not be taken whole), followed by nothing that could continue a file
 * name (tokenNames: markup, punctuation, a glued copy). An outbox file the
 * plugin never recorded (a drop-folder file) is the token up to its first
 * glued `MEDIA:`, or the whole token, or its first word (a path the gateway
 * reads on past a space), without the markup and punctuation after it. `length` counts the
 * token's own characters (a `~/` token is shorter than the path it names).
 */
function namedFile(token: string, published: readonly string[], outboxDirs: readonly string[], home: string): Named | undefined {
  const tilde = token.startsWith("~/") && home !== "/" && !home.endsWith("/");
  // A path is at most PATH_MAX long: what follows it in a long token (a chain of glued copies) is never read here.
  const head = token.length > NAME_WINDOW ? token.slice(0, NAME_WINDOW) : token;
  const expanded = tilde ? expandUser(head, home) : head;
  const shift = expanded.length - head.length;
  const p = published.find((q) => tokenNames(expanded, q));
  if (p !== undefined) return { ref: p, length: p.length - shift };
  const glued = GLUED.exec(expanded);
  const trimmed = (t: string) => t.slice(0, trailingCut(t));
  const whole = head === token ? [trimmed(expanded)] : [];
  const space = /\s/u.exec(expanded);
  for (const c of [trimmed(glued ? expanded.slice(0, glued.index) : expanded), ...whole, ...(space ? [trimmed(expanded.slice(0, space.index))] : [])]) {
    if (c.length <= shift || !isFileIn(c, outboxDirs) || deliveredLineProblem(`MEDIA:${c}`, c) !== undefined || !tokenNames(expanded, c)) continue;
    return { ref: c, length: c.length - shift };
  }
  return undefined;
}

/** Rounds of judging before check-reply stops: each one handles the directives earlier removals formed. */
const MAX_ROUNDS = 8;

/** A file a directive's token names (rule 1), and how many of the token's characters name it. */
interface Named {
  ref: string;
  length: number;
}

interface Pass {
  /** The published or outbox file a token names (its path, absolute or `~/`, with markup, punctuation or a glued copy after it). */
  namedIn: (token: string) => Named | undefined;
  problemOf: (p: string) => DeliveryProblem | undefined;
  /** Published files whose copies were removed: their line goes at the end. */
  needed: string[];
  /** Published files named with a sentence (never also added as a line). */
  noted: Set<string>;
  /** Published files whose exact line the text carries. */
  present: Set<string>;
  report: CheckReplyReport;
  /** The gateway's home: what `~/` in a path means. */
  home: string;
  /** The files `text` names as bare paths the gateway uploads (localFileMentions: one scan a text, whatever the number of files asked). */
  mentions: (text: string) => Set<string>;
  /** Where the text a directive's edit may take ends in its token (mentionTail). */
  tailOf: (text: string, d: DirectiveOccurrence) => number;
  /** The files taken as published. */
  published: readonly string[];
  /** Is the directive, naming no published or outbox file, left as written (leftAsText)? */
  asText: (text: string, d: DirectiveOccurrence) => boolean;
  /** The `MEDIA` offsets of copies this round leaves as written (copyGlue): text to the gateway. */
  keptCopies: Set<number>;
  /** Does the path starting at `at` in `text` lie in the outbox (absolute or `~/`)? Reads as many characters as the outbox's path. */
  inOutbox: (text: string, at: number) => boolean;
  /** Directives this round keeps as written for the run of names before them (heldForRun), by their end: the run's start and theirs. */
  heldRuns: Map<number, { from: number; start: number; end: number }>;
  /** The sentences written for existing files (a mangled line), by their text: each later round checks them (takeBackWritten). */
  written: Map<string, { note: ReplyNote; file: string; byName?: boolean }[]>;
}


/** One round's work in progress: the text judged, the edits so far, and what the sentences may yet be taken back for. */
interface Round {
  text: string;
  pass: Pass;
  fenceAt: ReadonlyMap<number, number>;
  inFence: (offset: number) => boolean;
  edits: Edit[];
  /** Files this round's exact lines send. */
  sent: Set<string>;
  /** Sentences for existing files (mangled lines), judged once every exact line is known. */
  sentenced: { edit: Edit; note: ReplyNote; file?: string; missing?: string; lineEnd: number; d: DirectiveOccurrence }[];
  /** Where the gateway's inline code spans start (inlineCodeSpans), read when a sentence first asks. */
  codeOpeners?: Set<number>;
}

/** A directive and the line it is on (`line` is its text, without the terminator). */
interface Placed {
  d: DirectiveOccurrence;
  lineStart: number;
  lineEnd: number;
  line: string;
  /** The directive as found, when `d` is its part before a bare mention glued on inside it (mentionTail). */
  whole?: DirectiveOccurrence;
}

/** One round: the edits for every directive in `text` (rules 1 and 2), with the report filled in. */
function judgeDirectives(text: string, fences: [number, number][], fenceAt: ReadonlyMap<number, number>, pass: Pass): Edit[] {
  const inFence = (offset: number) => {
    const i = lastAtOrBefore(fences, offset, (r) => r[0]);
    return i >= 0 && offset < fences[i]![1];
  };
  const round: Round = { text, pass, fenceAt, inFence, edits: [], sent: new Set(), sentenced: [] };
  const spans: [number, number][] = [];
  const all = [...placedDirectives(text, pass)];
  for (const [k, placed] of all.entries()) {
    spans.push([placed.d.start, placed.d.end]);
    if (keptAsWritten(round, placed)) continue;
    const named = pass.namedIn(placed.d.token);
    if (named !== undefined) judgeNamed(round, placed, named);
    else judgeOther(round, placed, all[k - 1]?.d, all[k + 1]?.d);
  }
  takeBackSentences(round);
  takeBackWritten(round, spans);
  return round.edits;
}

/** A path as the gateway's path filter resolves it (`//o/a.txt` is `/o/a.txt`), so that two spellings of a file compare equal. */
const resolved = (p: string, home: string) => {
  const expanded = expandUser(p, home);
  return expanded.startsWith("/") ? path.resolve(expanded) : expanded;
};

/**
 * A sentence an earlier round wrote for an existing file, which the text as
 * it now stands sends by a bare mention: the edits around it joined what the
 * gateway read as one path into two (`MEDIA:~/o/a.txt/m/m37.txtMEDIA:/m/m37.txt`,
 * one path the gateway reads whole, is `/m/m37.txt(m37.txt could not be sent…)`
 * once the copy of a.txt goes), or took a backtick out of its pairing. The
 * sentence would contradict the attachment: it is removed, as a copy. Each
 * sentence's text is sought only for the files the text mentions (one scan
 * a sentence's text, however many times it is written).
 */
function takeBackWritten(round: Round, spans: readonly [number, number][]): void {
  const { text, pass } = round;
  if (pass.written.size === 0) return;
  const mentioned = new Set([...pass.mentions(text)].map((p) => resolved(p, pass.home)));
  if (mentioned.size === 0) return;
  const mentionedNames = new Set([...mentioned].map((p) => path.basename(p)));
  const dropped = new Set<ReplyNote>();
  for (const [s, entries] of pass.written) {
    // A path that names no file is about its name: a sentence with the name of a file the text sends contradicts it.
    if (!entries.some((e) => (e.byName ? mentionedNames.has(path.basename(e.file)) : mentioned.has(resolved(e.file, pass.home))))) continue;
    let k = 0;
    for (let at = text.indexOf(s); at >= 0; at = text.indexOf(s, at + s.length)) {
      while (k < spans.length && spans[k]![1] <= at) k++;
      // Inside a directive's span (its path holds the text): the directive's own edit decides.
      if ((k < spans.length && spans[k]![0] < at + s.length) || round.inFence(at)) continue;
      let lineEnd = text.indexOf("\n", at);
      if (lineEnd < 0) lineEnd = text.length;
      if (text[lineEnd - 1] === "\r") lineEnd--;
      round.edits.push({ ...widenRemoval(text, at, at + s.length, lineEnd), replacement: "", removal: true });
      pass.report.removed.push({ path: escapeText(entries[0]!.file), text: escapeText(s) });
      for (const e of entries) dropped.add(e.note);
    }
  }
  if (dropped.size > 0) pass.report.notes = pass.report.notes.filter((n) => !dropped.has(n));
}

/** The directives of `text` with their lines, found by moving forward (they come in order), never by scanning back. */
function* placedDirectives(text: string, pass: Pass): Generator<Placed> {
  let lineStart = 0;
  let lineEnd = -1;
  for (const d of findDirectives(text, (token) => pass.namedIn(token)?.length ?? laterDirective(token, pass.problemOf))) {
    while (lineEnd < d.start) {
      lineStart = lineEnd + 1;
      lineEnd = text.indexOf("\n", lineStart);
      if (lineEnd < 0) lineEnd = text.length;
    }
    yield { d, lineStart, lineEnd, line: text.slice(lineStart, text[lineEnd - 1] === "\r" ? lineEnd - 1 : lineEnd) };
  }
}

/** Is the directive an exact line of its own, outside code, that the gateway takes whole for `p`? */
function isExactLine(round: Round, { d, line }: Placed, p: string): boolean {
  return !round.inFence(d.start) && line === `MEDIA:${p}` && deliveredLineProblem(line, p) === undefined;
}

/**
 * A line the gateway delivers as written is kept, whatever its path ends in:
 * Hermes strips only `` `"',.;:)}] `` from an any-type path, so `notes.txt~`,
 * `Really?` or `out_` is the file's whole name, not punctuation.
 */
function keptAsWritten(round: Round, placed: Placed): boolean {
  const { d } = placed;
  if (d.intended === d.token || !isExactLine(round, placed, d.token) || round.pass.problemOf(d.token)) return false;
  round.pass.report.kept.push(escapeText(d.token));
  round.sent.add(d.token);
  return true;
}

/** Rule 1: a directive naming a published or outbox file is kept when exact, else named (undeliverable) or removed as a copy. */
function judgeNamed(round: Round, placed: Placed, named: Named): void {
  const { d } = placed;
  const { problemOf, present, report, noted } = round.pass;
  const problem = problemOf(named.ref);
  const whole = named.length === d.intended.length;
  if (whole && d.token === d.intended && isExactLine(round, placed, d.intended) && !problem && !present.has(named.ref)) {
    present.add(named.ref);
    report.kept.push(escapeText(named.ref));
    return;
  }
  if (problem && !noted.has(named.ref)) {
    // The gateway would not deliver it even written right: say so where the model put it.
    noted.add(named.ref);
    report.notes.push({ path: escapeText(named.ref), code: problem.code, reason: problem.reason });
    round.edits.push({ start: d.start, end: d.end, replacement: noteFor(named.ref, problem.reason), removal: false });
    return;
  }
  removeCopy(round, placed, named, whole);
  if (!problem && !round.pass.needed.includes(named.ref)) round.pass.needed.push(named.ref);
}

/**
 * Removes a copy of a named file's line (a second exact line is one too: the
 * gateway would upload the file once per line). The copy ends with the path
 * it names and the markup closed after it: text glued on after stays.
 */
function removeCopy(round: Round, { d, lineStart, lineEnd }: Placed, named: Named, whole: boolean): void {
  const { text } = round;
  const end = whole ? d.end : closingMarkupEnd(text, d.tokenStart + named.length, d.tokenStart + d.token.length);
  // A copy in a fence line's info string goes, the fence stays (the markup scan may have taken its backticks or tildes for the copy's).
  const fence = round.fenceAt.get(lineStart);
  const start = fence !== undefined && d.start < fence ? fence : d.start;
  const widened = widenRemoval(text, start, end, lineEnd);
  const glue = copyGlue(text, d, widened.start, widened.end, round.pass);
  if (glue === "keep") {
    round.pass.keptCopies.add(d.marker);
    return;
  }
  round.pass.report.removed.push({ path: escapeText(named.ref), text: escapeText(text.slice(start, end)) });
  round.edits.push(glue === "space" ? { ...widened, replacement: " ", removal: false } : { ...widened, replacement: "", removal: true });
}

/**
 * How a copy the gateway leaves in its text (see leftAsText) is taken out
 * without changing the bare path it reads right before it, through the
 * `MEDIA` word: removed (`remove`) when the text glued together reads the
 * same there, else replaced by a space (`space`: `/o/drop.txt*MEDIA:/o/a.txt/f/n.txt~`
 * is `/o/drop.txt /f/n.txt~`, where removed it would be `/o/drop.txt/f/n.txt~`,
 * no file), else left as written (`keep`): its file's line is added at the end all the same.
 */
function copyGlue(text: string, d: DirectiveOccurrence, start: number, end: number, pass: Pass): "remove" | "space" | "keep" {
  const from = runStartBefore(text, start);
  // A `~/` path after it starts a run too (`- itemMEDIA:/o/a.txt*~/o/a.txt.`: removed, `item~/…` is no mention).
  const to = runEndAfter(text, text.startsWith("~/", end) ? end + 1 : end);
  if (from === start && to === end) return "remove";
  // The matches before the copy, and those after it (offsets from its end), as the gateway reads them in the text as written.
  const lead = text.slice(Math.max(0, from - 4), from);
  const junction = lead.length + start - from;
  const readings = (t: string, afterAt: number) => {
    const ms = localFileMatches(t, pass.home);
    const before = ms.filter((m) => m.start < junction).map((m) => `${m.start}:${m.end}`);
    const after = ms.filter((m) => m.start >= afterAt).map((m) => `${m.start - afterAt}:${m.end - afterAt}`);
    return `${before.join(",")}|${after.join(",")}`;
  };
  const glued = lead + text.slice(from, start);
  // A directive glued on right after it (`…/m/m3.txtMEDIA:~/o/drop.txtMEDIA:/f/b.log`: text to the gateway, inside the
  // copy's any-type path) is judged on its own once the copy goes: unless it is a copy too, its sentence's `(` would
  // follow the text before this one, or, left as text, its `MEDIA` word: the copy goes only as both read alike.
  const next = GLUED_NEXT.exec(text.slice(end, end + 32));
  const afters = next && !pass.inOutbox(text, end + next[0].length) ? ["(", text.slice(end, to)] : [text.slice(end, to)];
  const spacedAs = (want: string) => afters.every((after) => readings(`${glued} ${after}`, glued.length + 1) === want);
  const gluedAs = (want: string) => afters.every((after) => readings(glued + after, glued.length) === want);
  // One the gateway removes from its text (its known-extension pattern takes it, or its any-type path validates):
  // the paths either side were apart there, and must not be glued into one here (`/f/plain.pngMEDIA:~/o/a.txt/o/a.txt`,
  // removed, is `/f/plain.png/o/a.txt`, no file): a space keeps them apart.
  if (!staysInText(d, pass.problemOf)) return afters.every((after) => readings(glued + after, glued.length) === readings(`${glued} ${after}`, glued.length + 1)) ? "remove" : "space";
  const afterFrom = runStartBefore(text, end);
  const afterLead = text.slice(Math.max(0, afterFrom - 4), end);
  const want = `${readings(`${lead}${text.slice(from, d.marker)}MEDIA:`, Infinity).split("|")[0]}|${readings(afterLead + text.slice(end, to), afterLead.length).split("|")[1]}`;
  if (gluedAs(want)) return "remove";
  return spacedAs(want) ? "space" : "keep";
}

/** Rule 2: a directive naming no published or outbox file is kept when the gateway delivers it as an exact line, else replaced by a sentence. */
function judgeOther(round: Round, placed: Placed, prev: DirectiveOccurrence | undefined, next: DirectiveOccurrence | undefined): void {
  let { d } = placed;
  const original = d;
  // A bare mention glued on inside it stays as text, and so does a later directive its path ran on into (judged on its
  // own, as the gateway's any-type pattern reads it): the sentence is about what comes before them.
  const tail = Math.min(round.pass.tailOf(round.text, d), laterDirective(d.token, round.pass.problemOf) ?? Infinity);
  if (tail < d.token.length) {
    const token = d.token.slice(0, tail).trimEnd();
    const cut = token.slice(0, trailingCut(token));
    placed = { ...placed, whole: d, d: { ...d, token, intended: cut || token, end: closingMarkupEnd(round.text, d.tokenStart + cut.length, d.tokenStart + tail) } };
    d = placed.d;
  }
  const problem = round.pass.problemOf(d.intended);
  if (!problem && d.token === d.intended && isExactLine(round, placed, d.intended)) {
    round.pass.report.kept.push(escapeText(d.intended));
    round.sent.add(d.intended);
    return;
  }
  if (round.pass.asText(round.text, original) || heldForRun(round, original, prev, next)) return;
  if (throughFileSentence(round, placed, problem) || anyTypeSentence(round, placed, problem) || runOnSentence(round, placed, problem)) return;
  plainSentence(round, placed, problem);
}

/**
 * Is there a `MEDIA:` after `from` on its line? A sentence for it may change
 * how the gateway reads a directive before it (its words may end a spaced
 * path): a directive left as written is judged in one text. Scans up to the
 * next `MEDIA:` only (successive directives' scans are disjoint).
 */
function laterOnLine(text: string, from: number): boolean {
  const marker = new RegExp(`${MEDIA_WORD}:`, "giu");
  marker.lastIndex = from;
  const m = marker.exec(text);
  return m !== null && !text.slice(from, m.index).includes("\n");
}

/**
 * Does the gateway leave the directive in its text: markup before its path,
 * or an any-type path that does not validate? Read within PATH_MAX (a chain
 * of glued copies is one long token for each of them): a longer path never
 * validates.
 */
function staysInText(d: DirectiveOccurrence, problemOf: (p: string) => DeliveryProblem | undefined): boolean {
  if (d.reading === "known") return false;
  if (d.reading === "none") return true;
  const head = d.token.length > NAME_WINDOW ? d.token.slice(0, NAME_WINDOW) : d.token;
  const reading = anyTypeReading(head);
  if (reading === undefined) return true;
  // Its path reaches past the window: longer than PATH_MAX.
  if (head !== d.token && reading.length >= head.length - 1) return true;
  return problemOf(reading) !== undefined;
}

/**
 * A directive the gateway leaves in its text (markup before its path, or an
 * any-type path that does not validate: it sends nothing from it) glued on
 * right after a bare path or word: the gateway reads that path on through
 * the `MEDIA` word, where a sentence's `(` would end it (`/o/m5.txt/o/a.txtMEDIA:/x/nope`
 * sends m5.txt, `/o/m5.txt/o/a.txt(` names no file). When the two readings
 * differ, the directive stays as it was written, and so does what the
 * gateway sends from the text before it: no file is lost for a sentence.
 */
function leftAsText(text: string, d: DirectiveOccurrence, problemOf: (p: string) => DeliveryProblem | undefined, home: string, held?: { from: number; start: number; end: number }): boolean {
  if (!staysInText(d, problemOf)) return false;
  // A bare mention glued on inside it, and a `MEDIA:` after that: the gateway's any-type pattern reads the whole word as
  // one path (`MEDIA:/x/nope.log,~/o/drop.txt/o/a.txtMEDIA:/f/b.log`, left as text, sends drop.txt), where a sentence
  // before the mention would free that `MEDIA:` to be a directive of its own, and glue its removal onto the mention's path.
  const tail = mentionTail(text, d, problemOf, home);
  if (tail < d.token.length) {
    const marker = new RegExp(`${MEDIA_WORD}:`, "giu");
    marker.lastIndex = tail;
    if (marker.test(d.token)) return true;
  }
  // Glued on after a directive kept for the run before it (heldForRun), which the gateway removes: that run is this one's.
  const from = held?.from ?? runStartBefore(text, d.start);
  const run = held ? text.slice(from, held.start) : text.slice(from, d.start);
  if (from === d.start || laterOnLine(text, d.tokenStart + d.token.length)) return false;
  // The characters before the run decide whether a match may start at its first anchor (a drive's `C:` and what precedes it).
  const lead = text.slice(Math.max(0, from - 4), from);
  const ends = (t: string) => localFileMatches(lead + t, home).map((m) => `${m.start}:${m.end}`).join(",");
  return ends(`${run}${text.slice(held ? Math.max(d.start, held.end) : d.start, d.marker)}MEDIA:`) !== ends(`${run}(`);
}

/**
 * A directive the gateway removes from its text (its known-extension pattern
 * takes it, or its any-type path validates), glued on right after a run of
 * names that the gateway then reads on into what follows it
 * (`` /f/p.png/m/m3.txtMEDIA:/m/m25.txt`MEDIA:/x/nope.logx ``: p.png, from
 * `…/m3.txtMEDIA`), where a sentence's `(` would end that run elsewhere
 * (`/f/p.png/m/m3.txt(`, no file): it stays as written (the gateway does
 * with it what it did), and a directive glued on after it is read with that
 * run (leftAsText). Reads the run before it and the one after: each run is
 * read by the directives either side of it only.
 */
function heldForRun(round: Round, d: DirectiveOccurrence, prev: DirectiveOccurrence | undefined, next: DirectiveOccurrence | undefined): boolean {
  const { text, pass } = round;
  if (staysInText(d, pass.problemOf)) return false;
  // The gateway's match starts at `MEDIA`, or at the one quote before it: other markup there stays, and ends the run.
  const start = gatewayStart(text, d);
  const from = runStartBefore(text, start);
  // The run must be text: one inside the directive before (a copy's path) is that one's to judge.
  if (from === start || (prev !== undefined && prev.end > from)) return false;
  // What the gateway reads after it: the `MEDIA` word of a directive glued on that it leaves as text (one it removes too
  // is not modelled: nothing is held for it), or the run there.
  const glued = next !== undefined && next.start <= d.end && d.end <= next.marker;
  if (glued && !staysInText(next, pass.problemOf)) return false;
  // A sentence later on its line may change how the gateway reads this one (its words may end a spaced path): as leftAsText.
  if (laterOnLine(text, glued ? next.tokenStart + next.token.length : d.tokenStart + d.token.length)) return false;
  const after = glued ? "MEDIA:" : text.slice(d.end, runEndAfter(text, d.end) + 1);
  const lead = text.slice(Math.max(0, from - 4), from);
  const head = lead + text.slice(from, start);
  const before = (t: string) =>
    localFileMatches(t, pass.home)
      .filter((m) => m.start < head.length)
      .map((m) => `${m.start}:${m.end}`)
      .join(",");
  if (before(head + after) === before(`${head}(`)) return false;
  pass.heldRuns.set(d.end, { from, start, end: d.end });
  return true;
}

/** Where the gateway's match of a directive starts: its `MEDIA`, or the one backtick or quote right before it. */
const gatewayStart = (text: string, d: DirectiveOccurrence) => (d.marker > d.start && "`\"'".includes(text[d.marker - 1]!) ? d.marker - 1 : d.marker);

/** The directive kept for its run (heldForRun) that `d` is glued on after: it ends between `d`'s markup and its `MEDIA`. */
const heldBefore = (pass: Pass, d: DirectiveOccurrence) => pass.heldRuns.get(d.marker) ?? pass.heldRuns.get(d.start);

/**
 * Where, in a directive's token, a bare mention the gateway sends begins
 * (the token's length when none does). The gateway leaves in its text a
 * directive it does not take (markup before its path) or whose any-type path
 * does not validate (`MEDIA:/x/nope.log-/o/b.png`), and finds bare paths in
 * it: a path glued on inside it, after a `-`, a `\` or punctuation, is sent.
 * check-reply's sentence ends there, and the mention stays, after the
 * sentence's `)`. A path the known-extension pattern takes is removed whole:
 * nothing in it is a mention.
 */
function mentionTail(text: string, d: DirectiveOccurrence, problemOf: (p: string) => DeliveryProblem | undefined, home: string): number {
  if (d.reading === "known") return d.token.length;
  // The character before the path decides whether a match may start at it: the directive's own path is not a mention of another.
  let lead = d.tokenStart > 0 ? text[d.tokenStart - 1]! : "";
  let from = 0;
  if (d.reading === "any") {
    const reading = anyTypeReading(d.token);
    if (reading !== undefined && !problemOf(reading)) {
      // The gateway removes what its any-type pattern took (up to a backtick or quote, and that one): the rest is text.
      while (from < d.token.length && !"`\"'".includes(d.token[from]!)) from++;
      if (from < d.token.length) from++;
      lead = " ";
    }
  }
  for (const m of localFileMatches(lead + d.token.slice(from), home)) {
    if (m.start > lead.length - (from > 0 ? 1 : 0) && !problemOf(m.path)) return from + m.start - lead.length;
  }
  return d.token.length;
}

/**
 * The regular file a path runs through as if it were a folder
 * (`/o/a.txt/o/b.txt`: a path glued on after a file's, ENOTDIR), or
 * undefined. The folders before it exist and every longer prefix fails, so
 * it is found by a binary search over the path's separators (within
 * PATH_MAX): a few stats a directive, whatever its length.
 */
function fileRunThrough(p: string): string | undefined {
  if (!p.startsWith("/")) return undefined;
  const fails = (q: string) => {
    try {
      fs.statSync(q);
      return undefined;
    } catch (e) {
      return (e as NodeJS.ErrnoException).code ?? "error";
    }
  };
  const head = p.length > NAME_WINDOW ? p.slice(0, NAME_WINDOW) : p;
  if (fails(head) !== "ENOTDIR") return undefined;
  const seps: number[] = [];
  for (let at = head.indexOf("/", 1); at >= 0; at = head.indexOf("/", at + 1)) seps.push(at);
  // The last prefix (ending before a separator) that exists.
  let lo = 0;
  let hi = seps.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (fails(head.slice(0, seps[mid])) === undefined) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  if (found < 0) return undefined;
  const file = head.slice(0, seps[found]);
  return fs.statSync(file, { throwIfNoEntry: false })?.isFile() === true ? file : undefined;
}

/**
 * A path that names no file because it runs on through a file as if that
 * were a folder (another path glued on after a file's: `MEDIA:/o/a.txt/o/b.txt`,
 * which the gateway reads whole): the model meant that file, and its line
 * was mangled. The sentence names it (never the glued path's last name, which
 * may be a file the result sends), and is taken back if the file goes anyway.
 */
function throughFileSentence(round: Round, placed: Placed, problem: DeliveryProblem | undefined): boolean {
  const { d } = placed;
  if (problem?.code !== "not_found") return false;
  const file = fileRunThrough(expandUser(d.intended, round.pass.home));
  if (file === undefined) return false;
  const fileProblem = round.pass.problemOf(file);
  const reason = fileProblem?.reason ?? MANGLED_REASON;
  sentence(round, placed, fileProblem ? undefined : file, { path: escapeText(file), code: fileProblem?.code ?? "mangled", reason }, noteFor(file, reason));
  return true;
}

/**
 * Replaces the directive with a sentence; `file`, when it exists, may yet be
 * sent by another line, and `missing`, a path that names no file, may bear
 * the name of one the result sends (takeBackSentences).
 */
function sentence(round: Round, { d, lineEnd, whole }: Placed, file: string | undefined, note: ReplyNote, replacement: string, missing?: string): void {
  // Glued on after a directive kept for its run, the markup between is that one's, as the gateway reads it.
  const held = heldBefore(round.pass, d);
  const edit: Edit = { start: held ? Math.max(d.start, held.end) : d.start, end: sentenceEnd(round, d), replacement, removal: false };
  round.pass.report.notes.push(note);
  round.edits.push(edit);
  if ((file !== undefined || missing !== undefined) && !round.inFence(d.start)) round.sentenced.push({ edit, note, lineEnd, d: whole ?? d, ...(file !== undefined ? { file } : { missing: missing! }) });
  if ((file !== undefined || missing !== undefined) && !round.inFence(d.start)) {
    const entries = round.pass.written.get(replacement) ?? [];
    if (entries.length === 0) round.pass.written.set(replacement, entries);
    entries.push(file !== undefined ? { note, file } : { note, file: missing!, byName: true });
  }
}

/**
 * Where a sentence replacing `d` ends: at the end of its path and the markup
 * closed after it, but before a backtick there that opens inline code as the
 * gateway pairs it (`` MEDIA:/x/nope.txt`/o/a.txt` ``): the gateway removes the
 * directive and leaves that backtick, and the code it opens, in place; taken
 * with the sentence, it would free the path after it to be a mention (seed 65).
 */
function sentenceEnd(round: Round, d: DirectiveOccurrence): number {
  // Only the markup after the path is read: each directive's own, so a reply of many stays linear.
  for (let at = d.tokenStart + d.intended.length; at < d.end; at++) {
    if (round.text[at] !== "`") continue;
    round.codeOpeners ??= new Set(inlineCodeSpans(round.text).map(([start]) => start));
    if (round.codeOpeners.has(at)) return at;
  }
  return d.end;
}

/**
 * Where, in a path token read on past a space, a later `MEDIA:` starts whose
 * file the gateway sends (`/f/b.log /o/d.txt,MEDIA:/f/n.txt~ MEDIA:/o/d.txt`
 * is one path to the known-extension pattern, but its any-type pattern reads
 * `MEDIA:/f/n.txt~` on its own, and sends it once it validates), or
 * undefined. Scans from the first space to that `MEDIA:` (the scan of the
 * directive found there starts after it), each later path read to its word's
 * end once.
 */
function laterDirective(token: string, problemOf: (p: string) => DeliveryProblem | undefined): number | undefined {
  const space = /\s/u.exec(token);
  if (!space) return undefined;
  const marker = new RegExp(`${MEDIA_WORD}:\\s*`, "giu");
  marker.lastIndex = space.index;
  for (let m = marker.exec(token); m; m = marker.exec(token)) {
    const reading = anyTypeReading(token.slice(m.index + m[0].length));
    if (reading !== undefined && !problemOf(reading)) return m.index;
    // The gateway's match took that path's word: no `MEDIA:` inside it is one of its own.
    marker.lastIndex = Math.max(marker.lastIndex, m.index + m[0].length + (reading?.length ?? 0));
  }
  return undefined;
}

/** Was the directive's path quoted (`MEDIA:"…"`)? The gateway takes it whole: no other reading of it applies. */
const quotedPath = (text: string, d: DirectiveOccurrence) => d.tokenStart > 0 && "\"'`".includes(text[d.tokenStart - 1]!);

/**
 * A path that names no file, where the gateway's any-type pattern reads an
 * existing one (up to a space, backtick or quote, without `` `"',.;:)}] ``:
 * `MEDIA:/o/out_`…`, `MEDIA:/o/b.log and …`): the sentence names that file, a
 * mangled line, never one that does not exist.
 */
function anyTypeSentence(round: Round, placed: Placed, problem: DeliveryProblem | undefined): boolean {
  const { d } = placed;
  if (problem?.code !== "not_found" || quotedPath(round.text, d)) return false;
  const space = /\s/u.exec(d.intended);
  const reading = anyTypeReading(space ? d.intended.slice(0, space.index) : d.token);
  if (reading === undefined || reading === d.intended || round.pass.problemOf(reading)) return false;
  sentence(round, placed, reading, { path: escapeText(reading), code: "mangled", reason: MANGLED_REASON }, noteFor(reading, MANGLED_REASON));
  return true;
}

/**
 * A path the gateway read on past a space to a later path's extension
 * (`MEDIA:/tmp/nope.log and I saved /o/a.txt`) that names no file: its first
 * word is what the model meant, and the sentence names that (never the later
 * path's file, which may be a published one, attached).
 */
function runOnSentence(round: Round, placed: Placed, problem: DeliveryProblem | undefined): boolean {
  const { d } = placed;
  const space = /\s/u.exec(d.intended);
  // A later directive it ran on into (laterDirective) is a later path too, though the sentence ends before it.
  const rest = (placed.whole ?? d).intended.slice(space?.index ?? 0);
  if (!space || quotedPath(round.text, d) || problem?.code !== "not_found" || !LATER_PATH.test(rest)) return false;
  const firstWord = d.intended.slice(0, space.index);
  const name = sentenceName(firstWord.slice(0, trailingCut(firstWord)));
  const { problemOf } = round.pass;
  const reason = problemOf(name)?.code === "not_found" ? problem.reason : SPACED_MISSING_REASON;
  sentence(round, placed, problemOf(name) ? undefined : name, { path: escapeText(d.intended), code: "not_found", reason }, noteFor(name, reason), problemOf(name)?.code === "not_found" ? name : undefined);
  return true;
}

/**
 * Any other directive the gateway would not deliver: its sentence says why.
 * A path glued to a copy's `MEDIA:` names the file before it: when that one
 * exists, the line naming it was mangled.
 */
function plainSentence(round: Round, placed: Placed, problem: DeliveryProblem | undefined): void {
  const { d, line } = placed;
  const spaced = line === `MEDIA:${d.intended}` && /\s/u.test(d.intended);
  const reason = problem?.reason ?? (spaced ? SPACED_REASON : MANGLED_REASON);
  const name = sentenceName(d.intended);
  const gluedFile = name !== d.intended && problem?.code === "not_found" && !round.pass.problemOf(name);
  const why = gluedFile ? MANGLED_REASON : reason;
  const note: ReplyNote = { path: escapeText(d.intended), code: gluedFile ? "mangled" : (problem?.code ?? "mangled"), reason: why };
  sentence(round, placed, gluedFile ? name : problem ? undefined : d.intended, note, noteFor(name, why), !gluedFile && problem?.code === "not_found" ? name : undefined);
}

/**
 * A file the text sends anyway, from an exact line, a bare mention or a line
 * added at the end (a copy of it removed), is never said not to be sent: its mangled directive is a copy, removed (the
 * gateway may take it too: the file would go twice). So is a path that names
 * no file but bears the name of one the result sends (a published file, one
 * an exact line or a bare mention sends): a sentence saying that name was not
 * sent would contradict the attachment (`/o/a.txt~/o/b.txt` and b.txt sent).
 */
function takeBackSentences(round: Round): void {
  const { text, pass } = round;
  const dropped = new Set<ReplyNote>();
  /** Sentences taken back whose directive stays as written. */
  const kept = new Set<Edit>();
  let sentNames: Set<string> | undefined;
  let resolvedMentions: Set<string> | undefined;
  const mentionedResolved = () => (resolvedMentions ??= new Set([...pass.mentions(text)].map((p) => resolved(p, pass.home))));
  const sendsName = (p: string) => {
    sentNames ??= new Set([...round.sent, ...pass.present, ...pass.mentions(text), ...pass.published.filter((q) => !pass.problemOf(q)), ...pass.needed].map((q) => path.basename(q)));
    return sentNames.has(path.basename(p));
  };
  for (const s of round.sentenced) {
    const sent = s.file !== undefined ? round.sent.has(s.file) || pass.present.has(s.file) || pass.needed.includes(s.file) || pass.mentions(text).has(s.file) || mentionedResolved().has(resolved(s.file, pass.home)) : sendsName(s.missing!);
    if (!sent) continue;
    dropped.add(s.note);
    // Taken out as a copy is: where removing it would glue the paths either side into one (`.MEDIA:/o/drop.txt/f/p.png\/o/drop.txt/`
    // would leave `./o/drop.txt/`, which no longer sends drop.txt), a space; where a space would change them too, as written.
    const widened = widenRemoval(text, s.edit.start, s.edit.end, s.lineEnd);
    const glue = copyGlue(text, s.d, widened.start, widened.end, pass);
    if (glue === "keep") {
      kept.add(s.edit);
      pass.keptCopies.add(s.d.marker);
      continue;
    }
    Object.assign(s.edit, widened, glue === "space" ? { replacement: " ", removal: false } : { replacement: "", removal: true });
    pass.report.removed.push({ path: escapeText(s.file ?? s.missing!), text: escapeText(text.slice(s.edit.start, s.edit.end)) });
  }
  if (kept.size > 0) round.edits = round.edits.filter((e) => !kept.has(e));
  if (dropped.size > 0) pass.report.notes = pass.report.notes.filter((n) => !dropped.has(n));
}

export function checkReply(reply: string, options: CheckReplyOptions): CheckReplyReport {
  const report: CheckReplyReport = { reply, changed: false, added: [], removed: [], notes: [], kept: [], ignored: [], mentioned: [] };
  const { policy } = options;
  const now = options.now ?? Date.now();
  const outboxDirs = options.outbox ? [...new Set([options.outbox, realDir(options.outbox)])] : [];

  const published: string[] = [];
  for (const p of options.published) {
    if (published.includes(p)) continue;
    const why = publishedProblem(p, outboxDirs);
    if (why) report.ignored.push({ path: escapeText(p), reason: why });
    else published.push(p);
  }
  const problems = new Map<string, DeliveryProblem | undefined>();
  const problemOf = (p: string) => {
    if (!problems.has(p)) problems.set(p, deliveryProblem(p, policy, now));
    return problems.get(p);
  };

  const needed: string[] = [];
  const noted = new Set<string>();
  const namedIn = (token: string) => namedFile(token, published, outboxDirs, policy.home);
  const tailOf = (text: string, d: DirectiveOccurrence) => mentionTail(text, d, problemOf, policy.home);
  // The bare mentions of the text judged last, read once (the text without its directives, its `[[…]]` markers and the
  // images extract_images takes, as the gateway reads it: gatewayBareText).
  let read: { text: string; files: Set<string> } | undefined;
  const mentions = (text: string): Set<string> => {
    if (read?.text !== text) read = { text, files: localFileMentions(gatewayBareText(withoutDirectives(text, (d) => tailOf(text, d), (d) => asText(text, d) || pass.keptCopies.has(d.marker), (d) => pass.heldRuns.get(d.end)?.start === gatewayStart(text, d))), policy.home) };
    return read.files;
  };
  const asText = (text: string, d: DirectiveOccurrence) => namedIn(d.token) === undefined && leftAsText(text, d, problemOf, policy.home, heldBefore(pass, d));
  const inOutbox = (text: string, at: number) => outboxDirs.some((dir) => expandUser(text.slice(at, at + dir.length + 2), policy.home).startsWith(`${dir}/`));
  const pass: Pass = { namedIn, problemOf, needed, noted, report, present: new Set(), mentions, published, home: policy.home, tailOf, asText, keptCopies: new Set(), inOutbox, heldRuns: new Map(), written: new Map() };

  // Published files the reply does not carry (as written, in the text judged last): their lines, or their sentences.
  const missing = (): string[] => {
    const toAdd: string[] = [];
    const endNotes: string[] = [];
    report.mentioned = [];
    for (const p of [...published, ...needed]) {
      if (pass.present.has(p) || toAdd.includes(p) || noted.has(p)) continue;
      const problem = problemOf(p);
      // The text names it as a bare path: the gateway uploads it from there, and would again for an added line.
      if (!problem && mentions(text).has(p)) {
        if (!report.mentioned.includes(escapeText(p))) report.mentioned.push(escapeText(p));
        continue;
      }
      if (problem) {
        noted.add(p);
        report.notes.push({ path: escapeText(p), code: problem.code, reason: problem.reason });
        endNotes.push(noteFor(p, problem.reason));
      } else {
        toAdd.push(p);
        if (!added.includes(p)) added.push(p);
      }
    }
    return [...toAdd.map((p) => `MEDIA:${p}`), ...endNotes];
  };
  const added: string[] = [];

  // A removal can join the text around it into a new directive (`media:` and
  // a path that were kept apart by the copy): the result is judged again
  // until nothing changes, a bounded number of times. The missing lines go
  // at the end once nothing else changes, and that is judged again too: a
  // fence that closes a block left open before them makes the gateway mask
  // what the block held, an exact line the gateway took while it was open.
  let text = reply;
  /** The last round removed or replaced something, and was not judged for missing lines after. */
  let edited = false;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    pass.present = new Set();
    pass.keptCopies = new Set();
    pass.heldRuns = new Map();
    report.kept = [];
    const fences = fencedRanges(text);
    const fenceAt = readFences(text).lines;
    const edits = judgeDirectives(text, fences, fenceAt, pass);
    edited = edits.length > 0;
    if (edited) {
      text = applyEdits(text, edits, fenceAt);
      continue;
    }
    const tail = missing();
    if (tail.length === 0) break;
    text = appendTail(text, reply, tail);
  }
  if (edited) {
    const tail = missing();
    if (tail.length > 0) text = appendTail(text, reply, tail);
  }
  if (text === reply) return report;
  report.kept = report.kept.filter((k) => !added.some((p) => escapeText(p) === k));
  report.added = added.map(escapeText);
  report.reply = text;
  report.changed = text !== reply;
  return report;
}

/**
 * `text` with the lines of `tail` at the end, each on a line of its own,
 * after closing a code block left open at the end (it would show them as
 * code). The line break is the reply's; the text ends with one if it did (a
 * reply whose every line went, holding only copies, as the reply did).
 */
function appendTail(text: string, reply: string, tail: readonly string[]): string {
  const fence = readFences(text).open;
  const nl = (text.includes("\n") ? text : reply).includes("\r\n") ? "\r\n" : "\n";
  const endsWithNewline = (text === "" ? reply : text).endsWith("\n");
  let out = text;
  if (out !== "" && !endsWithNewline) out += nl;
  if (fence !== undefined) out += `${fence}${nl}`;
  return out + tail.join(nl) + (endsWithNewline ? nl : "");
}

/** Index of the last item (sorted by `key`) whose key is at most `offset`; -1 when none. */
function lastAtOrBefore<T>(items: readonly T[], offset: number, key: (item: T) => number): number {
  let lo = 0;
  let hi = items.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (key(items[mid]!) <= offset) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

/** A removal in the middle of a sentence also takes the space before it, so no double space is left. */
function widenRemoval(text: string, start: number, end: number, lineEnd: number): { start: number; end: number } {
  const after = end >= lineEnd ? "" : text[end]!;
  if (start > 0 && text[start - 1] === " " && (after === "" || after === " " || after === "\r" || /[.,;:!?)\]\u3001\u3002\uff0c\uff01\uff1f]/u.test(after))) return { start: start - 1, end };
  return { start, end };
}

/** Punctuation that ends a sentence. */
const TERMINAL = new Set([...".!?\u3002\uff01\uff1f\u2026"]);
/** Punctuation inside a sentence, and the lead-ins that point at what follows (`Here it is:`). */
const CLAUSE = new Set([...":,;\uff1a\uff0c\uff1b\u3001\u2014\u2013"]);
/** Of those, what may not end a line (a colon may: `Here it is:` before the file's line). */
const DANGLING = new Set([...",;\uff0c\uff1b\u3001\u2014\u2013"]);
const OPENS: Record<string, string> = { "(": ")", "[": "]", "{": "}", "\uff08": "\uff09" };
/** What may open a line before its text: spaces, list, quote, heading and emphasis markers. */
const LEADING = new Set([..." \t>#*+-_~"]);
const isSpace = (ch: string | undefined) => ch === " " || ch === "\t" || ch === "\u3000";

/**
 * Where a removal inside a sentence ends, so that the text around it stays
 * well formed. What was around the copy is now side by side: brackets left
 * empty (`See (MEDIA:…) here`) go with it; of a lead-in and the
 * punctuation after the copy (`Here it is: MEDIA:….`, `图表如下：MEDIA:…。`), the
 * lead-in goes; after a sentence that had ended (`Like it? MEDIA:…?`) and at
 * the start of the line (`MEDIA:…. Thanks`), the punctuation after goes; a
 * comma or dash left at the end of the line goes. A colon may end a line.
 * `lineEnd` is the end of the line's text (before a `\r`), `textFrom` where
 * its text starts (after any list or quote markers).
 */
function tidyRemoval(text: string, edit: Edit, textFrom: number, lineEnd: number): Edit {
  const tidied = tidiedRemoval(text, edit, textFrom, lineEnd);
  if (tidied.start === edit.start && tidied.end === edit.end) return tidied;
  // Punctuation that kept two paths apart stays (`/f/p.png,MEDIA:…./f/p.png`: without the comma, one run that names no file).
  const joins = (s: number, e: number) => {
    if (s <= textFrom || e >= lineEnd) return false;
    const from = runStartBefore(text, s);
    const to = runEndAfter(text, e);
    return from < s && to > e && /[/\\]/.test(text.slice(from, s)) && /[/\\]/.test(text.slice(e, to));
  };
  return joins(tidied.start, tidied.end) && !joins(edit.start, edit.end) ? edit : tidied;
}

function tidiedRemoval(text: string, edit: Edit, textFrom: number, lineEnd: number): Edit {
  let { start, end } = edit;
  for (;;) {
    let before = start;
    while (before > textFrom && isSpace(text[before - 1])) before--;
    let after = end;
    while (after < lineEnd && isSpace(text[after])) after++;
    const left = before > textFrom ? text[before - 1]! : "";
    const right = after < lineEnd ? text[after]! : "";
    if (left !== "" && right !== "" && OPENS[left] === right) {
      // Empty brackets go, with the space before them when what follows is punctuation, a space or the end.
      const next = text[after + 1];
      start = before - 1 > textFrom && isSpace(text[before - 2]) && (after + 1 >= lineEnd || isSpace(next) || TERMINAL.has(next!) || CLAUSE.has(next!)) ? before - 2 : before - 1;
      end = after + 1;
      continue;
    }
    const punctuation = TERMINAL.has(right) || CLAUSE.has(right);
    if (left === "") {
      // At the start of the line's text: its markers stay, and what follows starts it (without punctuation or spaces before).
      while (start < end && isSpace(text[start])) start++;
      end = punctuation ? after + 1 : after;
      while (punctuation && end < lineEnd && isSpace(text[end])) end++;
    } else if (punctuation && CLAUSE.has(left)) {
      // The lead-in goes with the spaces around it: `Here it is — MEDIA:….` is `Here it is.`
      start = before - 1;
      while (start > textFrom && isSpace(text[start - 1])) start--;
      end = after;
    } else if (punctuation && TERMINAL.has(left)) end = after + 1;
    else if (right === "" && DANGLING.has(left)) {
      start = before - 1;
      while (start > textFrom && isSpace(text[start - 1])) start--;
    }
    return { ...edit, start, end };
  }
}

/** Where the text of a line starts after its list, quote and emphasis markers (what onlyMarkup passes over). */
function textStart(text: string, start: number, end: number): number {
  const numbered = LIST_NUMBER.exec(text.slice(start, Math.min(end, start + 64)));
  let at = start + (numbered ? numbered[0].length : 0);
  while (at < end && LEADING.has(text[at]!)) at++;
  return at;
}

/**
 * Can two removals with only markup between them be one, taking that markup
 * too? Not where the markup kept a path apart from the text either side: a
 * path starting right after the second, whose look-behind the gateway reads
 * (`Here it is: MEDIA:…,MEDIA:…/o/m12.txt`: as one, `:/o/m12.txt`, no
 * mention; `b.log*MEDIA:… MEDIA:…`~/o/drop.txt`: as one, `b.log~/…`), or a
 * run of names before the first that the markup's first character continues.
 * Read in a character each side: a line of thousands of copies stays linear.
 */
function mergeable(text: string, prev: Edit, edit: Edit): boolean {
  if (!prev.removal || !edit.removal || edit.start < prev.end || !onlyMarkup(text.slice(prev.end, edit.start))) return false;
  return edit.start === prev.end || (!pathMayStartAt(text, edit.end) && !(runEndsAt(text, prev.start) && pathMayStartAt(text, prev.end)));
}

/**
 * The removals of one line, tidied: two copies with nothing but spaces and
 * punctuation between them (`MEDIA:…, MEDIA:…`) are one removal, so that
 * what separated them goes too (mergeable); then each is tidied (tidyRemoval).
 */
function tidyRemovals(text: string, edits: Edit[], lineStart: number, lineEnd: number): Edit[] {
  const end = text[lineEnd - 1] === "\r" ? lineEnd - 1 : lineEnd;
  const merged: Edit[] = [];
  for (const edit of edits) {
    const prev = merged[merged.length - 1];
    if (prev !== undefined && mergeable(text, prev, edit)) {
      merged[merged.length - 1] = { ...prev, end: Math.max(prev.end, edit.end) };
    } else merged.push(edit);
  }
  const from = textStart(text, lineStart, end);
  return merged.map((edit) => (edit.removal && edit.end <= end ? tidyRemoval(text, edit, Math.min(from, edit.start), end) : edit));
}

interface Line {
  start: number;
  /** End of the line's text, before its terminator. */
  end: number;
  /** End including the `\n`. */
  next: number;
}

function splitLines(text: string): Line[] {
  const lines: Line[] = [];
  let start = 0;
  while (start < text.length) {
    const nl = text.indexOf("\n", start);
    const next = nl < 0 ? text.length : nl + 1;
    lines.push({ start, end: nl < 0 ? text.length : nl, next });
    start = next;
  }
  return lines;
}

/**
 * Applies the edits line by line. A line that a removal leaves with nothing
 * but markup is dropped whole, unless it is a fence line (the copy was its
 * info string): a code block emptied of its copy keeps both fences, so no
 * text moves into or out of a block. Every other byte stays as it was. An edit
 * that runs past its line (a directive whose path is on a later line: the
 * gateway allows line breaks after `MEDIA:`) joins the lines it spans into one.
 */
function applyEdits(text: string, edits: Edit[], fenceAt: ReadonlyMap<number, number>): string {
  if (edits.length === 0) return text;
  const lines = splitLines(text);
  const dropped = new Array<boolean>(lines.length).fill(false);
  /** Lines taken into an earlier one by an edit that spans them: not written on their own. */
  const joined = new Array<boolean>(lines.length).fill(false);
  /** For the first line of a group, the last line it spans. */
  const lastOf = new Map<number, number>();
  const replaced = new Map<number, string>();
  let e = 0;
  const sorted = [...edits].sort((a, b) => a.start - b.start);
  for (let i = 0; i < lines.length && e < sorted.length; i++) {
    const line = lines[i]!;
    const mine: Edit[] = [];
    let last = i;
    while (e < sorted.length && sorted[e]!.start < lines[last]!.next) {
      const edit = sorted[e++]!;
      mine.push(edit);
      while (edit.end > lines[last]!.end && last + 1 < lines.length) last++;
    }
    if (mine.length === 0) continue;
    // Built in one pass (a line may hold thousands of directives).
    const pieces: string[] = [];
    let at = line.start;
    // A fence line's copy is taken as it is (with the space before it): there is no sentence around it to tidy.
    const fenceLine = fenceAt.has(line.start);
    for (const edit of fenceLine ? mine : tidyRemovals(text, mine, line.start, lines[last]!.end)) {
      pieces.push(text.slice(at, Math.max(at, edit.start)), edit.replacement);
      at = Math.max(at, edit.end);
    }
    pieces.push(text.slice(at, lines[last]!.end));
    const body = pieces.join("");
    // A fence line stays, whatever a removal left of it: the reply's code blocks open and close where they did.
    const drop = mine.some((m) => m.removal) && onlyMarkup(body) && !fenceLine;
    if (drop) dropped[i] = true;
    else replaced.set(i, body);
    for (let k = i + 1; k <= last; k++) {
      joined[k] = true;
      dropped[k] = drop;
    }
    lastOf.set(i, last);
    i = last;
  }
  let out = "";
  for (let i = 0; i < lines.length; i++) {
    if (dropped[i] || joined[i]) continue;
    const line = lines[i]!;
    const tail = lines[lastOf.get(i) ?? i]!;
    const body = replaced.get(i);
    out += body === undefined ? text.slice(line.start, line.next) : body + text.slice(tail.end, tail.next);
  }
  // Dropping the last line must not leave the reply without the line break it ended with... nor add one.
  if (!text.endsWith("\n") && out.endsWith("\n") && dropped[lines.length - 1]) out = out.replace(/\r?\n$/, "");
  return out;
}
