// Scans a stream of bytes for credentials, block by block, memory flat
// whatever its length: the rules (find.ts) over the bytes read one character
// per byte, and the host's known secrets (known.ts) over the bytes.
//
// Each block is searched once, in a window that also holds the bytes before
// it: the last OVERLAP bytes of the stream so far, whose hits were deferred
// by the previous window, and CONTEXT bytes more, never judged, that only
// give the first ones their context (a token boundary, an assignment's
// name). A window judges the hits that start from its deferred bytes up to
// OVERLAP bytes before its end (to its end for the stream's last block); the
// rest is deferred to the next. So every hit is judged in exactly one
// window, which holds the whole of its match (every rule's is under
// MAX_MATCH, a known value is compared on at most 256 bytes) and what comes
// after it: a token cut by a block boundary is never mistaken for a whole one.
import { ENCODING_NAMES, encodedWindowOffset, findByteEncodings, readByteEncodings } from "./byte-encodings.js";
import { findInEncodedDockerConfig } from "./encoded-docker-config.js";
import { PADDING, findSecret } from "./find.js";
import { DUMP_WHAT, dumpWindowOffset, findHexDump, readHexDumps } from "./hex-dumps.js";
import { type KnownSecrets, NO_KNOWN_SECRETS } from "./known.js";
import { MAX_MATCH } from "./rules.js";
import { Form, type PieceReading, UNDONE_FORMS, type Undone, formsWhat, undoForms, windowOffset } from "./text-forms.js";

/**
 * Bytes judged at once: large enough that the window's extra bytes cost
 * little (4 KiB), small enough that their Latin-1 view stays out of V8's
 * large-object space.
 */
export const BLOCK = 64 * 1024;
export const OVERLAP = 4 * 1024;
/** Bytes before a window's judged part that its hits may read back (a name, a token boundary). */
export const CONTEXT = 256;
if (MAX_MATCH + 1 > OVERLAP) throw new Error("a rule's match may be longer than the block overlap");

export interface Finding {
  /** What was found: the kind of credential, never its value. */
  what: string;
  /** Offset of its first byte in the stream (for UTF-16, in its bytes as given). */
  offset: number;
}

/** The forms of writing the last search saw. */
const seen = { forms: 0 };

/**
 * How many bytes of a stream's windows may still be read a second time
 * (text-forms.ts), shared by the scanners of one file on one thread: the
 * second reading doubles a window's cost, and text made of a trigger and
 * its form (`a\_a:` repeated) read twice took a 50 MB file past three
 * times `cp && sha256sum`. Past it a window is read once.
 */
export interface RereadBudget {
  left: number;
  /** Of those, how many may be read again for a terminal's sequences (Form.TerminalEscapes). */
  terminalLeft: number;
  /** Of those, how many may be read again with a hex dump's lines decoded (hex-dumps.ts). */
  dumpLeft: number;
  /** Of those, how many may be read again with runs of a byte encoding decoded (byte-encodings.ts). */
  encodedLeft: number;
}
/** A file's budget on each thread: every window of a file of up to 8 MiB. */
export const REREAD_BYTES = 8 * 1024 * 1024;
/**
 * A file's budget on each thread for a terminal's sequences between a key's
 * characters (a `grep --color` output of 4 MiB read again whole, on two
 * threads): `ESC[mEAA` repeated, read again as `EAA` repeated (the Meta
 * pass's slowest text), took a 50 MB file from 2.4x to 3.4x `cp &&
 * sha256sum` within the 8 MiB every form shares (paired, 7 runs).
 */
export const REREAD_TERMINAL_BYTES = 2 * 1024 * 1024;
/**
 * A file's budget on each thread for hex dumps: a dump of a `.env` or a key
 * file is a few KiB, and 1 MiB of dump lines shows 256 KiB of bytes. 50 MB
 * of `od -c` lines, each window read again decoded within the 8 MiB, took
 * prepare from 2.3x to 4.3x `cp && sha256sum` (5 pairs).
 */
export const REREAD_DUMP_BYTES = 1024 * 1024;
/**
 * A file's budget on each thread for runs of a byte encoding (decimal
 * bytes, uuencode, Ascii85, base32): a `.env` or a key so encoded
 * is a few KiB.
 */
export const REREAD_ENCODED_BYTES = 1024 * 1024;
export const rereadBudget = (): RereadBudget => ({ left: REREAD_BYTES, terminalLeft: REREAD_TERMINAL_BYTES, dumpLeft: REREAD_DUMP_BYTES, encodedLeft: REREAD_ENCODED_BYTES });

/**
 * The leftmost hit of either finder in [from, before); when there is none
 * and the search saw a form of writing that hides a key (text-forms.ts),
 * the leftmost in the window read again with the form undone, named so, at
 * the index of its first byte in the window. The undone window judges what
 * the window judges: a match that starts in it is whole in it unless its
 * marks make it longer than the overlap (a key of 1,000 characters with a
 * zero-width character after each).
 */
function firstHit(text: string, bytes: Uint8Array, padded: Uint8Array, from: number, before: number, known: KnownSecrets, reread?: RereadBudget): { what: string; index: number } | undefined {
  const hit = hitIn(text, bytes, padded, from, before, known, seen);
  if (hit) return hit;
  const forms = seen.forms & UNDONE_FORMS;
  const dump = (seen.forms & Form.HexDump) !== 0;
  return (
    (forms !== 0 ? formsHit(bytes, padded, from, before, known, forms, reread) : undefined) ??
    dumpHit(text, bytes, padded, from, before, known, dump, reread) ??
    encodedHit(text, bytes, from, before, known, reread) ??
    findInEncodedDockerConfig(text, from, before, known)
  );
}

/** Whether the budget lets a window of `length` bytes be read a second time (and takes it). */
function mayReread(reread: RereadBudget | undefined, length: number): boolean {
  if (!reread) return true;
  if (reread.left < length) return false;
  reread.left -= length;
  return true;
}

/** The leftmost hit in the window read again with `forms` undone (text-forms.ts). */
function formsHit(bytes: Uint8Array, padded: Uint8Array, from: number, before: number, known: KnownSecrets, seenForms: number, reread?: RereadBudget): { what: string; index: number } | undefined {
  let forms = seenForms;
  if (reread && forms & Form.TerminalEscapes) {
    if (reread.terminalLeft < bytes.length) forms &= ~Form.TerminalEscapes;
    else reread.terminalLeft -= bytes.length;
  }
  if (forms === 0 || !mayReread(reread, bytes.length)) return undefined;
  const found = hitInReading(undoForms(padded, bytes.length, forms, from, before, PADDING), known);
  return found && { what: `${found.what}, ${formsWhat(forms)}`, index: windowOffset(padded, bytes.length, forms, found.index) };
}

/**
 * The leftmost hit in a second reading of the window, which `read` makes
 * (undefined where the window holds nothing of its kind), and that reading:
 * within the budget of its `kind` and the one the forms share. Past them a
 * window is not searched for its kind either (a text of `od -c` lines finds
 * a dump in each).
 */
function rereadHit<R extends PieceReading>(length: number, known: KnownSecrets, reread: RereadBudget | undefined, kind: "dumpLeft" | "encodedLeft", read: () => R | undefined): { what: string; index: number; reading: R } | undefined {
  if (reread && (reread[kind] < length || reread.left < length)) return undefined;
  const reading = read();
  if (!reading) return undefined;
  if (reread) {
    reread.left -= length;
    reread[kind] -= length;
  }
  const found = hitInReading(reading, known);
  return found && { ...found, reading };
}

/**
 * The leftmost hit in the window read with its hex dump's lines decoded
 * (hex-dumps.ts), where it holds one (an xxd line the colon pass saw, or
 * one findHexDump finds), at the offset of the dump line it starts in.
 */
function dumpHit(text: string, bytes: Uint8Array, padded: Uint8Array, from: number, before: number, known: KnownSecrets, xxdSeen: boolean, reread?: RereadBudget): { what: string; index: number } | undefined {
  const hit = rereadHit(bytes.length, known, reread, "dumpLeft", () =>
    xxdSeen || findHexDump(text, padded, 0, bytes.length) ? readHexDumps(padded, bytes.length, from, before, PADDING) : undefined,
  );
  return hit && { what: `${hit.what}, ${DUMP_WHAT}`, index: dumpWindowOffset(hit.reading, hit.index) };
}

/**
 * The leftmost hit in the window read with its runs of a byte encoding
 * decoded (byte-encodings.ts), where it holds one, at the offset of the
 * run it starts in.
 */
function encodedHit(text: string, bytes: Uint8Array, from: number, before: number, known: KnownSecrets, reread?: RereadBudget): { what: string; index: number } | undefined {
  const hit = rereadHit(bytes.length, known, reread, "encodedLeft", () => {
    const runs = findByteEncodings(text, bytes, bytes.length);
    return runs.length === 0 ? undefined : readByteEncodings(bytes, bytes.length, runs, from, before, PADDING);
  });
  if (!hit) return undefined;
  const { offset, kind } = encodedWindowOffset(hit.reading, hit.index);
  return { what: kind ? `${hit.what}, read from ${ENCODING_NAMES[kind]}` : hit.what, index: offset };
}

/** The leftmost hit in a second reading of a window (its judged part: [from, before)). */
function hitInReading(reading: Undone, known: KnownSecrets): { what: string; index: number } | undefined {
  return hitIn(reading.bytes.toString("latin1", 0, reading.length), reading.bytes.subarray(0, reading.length), reading.bytes, reading.from, reading.before, known);
}

/** The leftmost hit of either finder in [from, before) (with `forms`: and the forms of writing the search saw). */
function hitIn(text: string, bytes: Uint8Array, padded: Uint8Array, from: number, before: number, known: KnownSecrets, forms?: { forms: number }): { what: string; index: number } | undefined {
  const value = known.find(bytes, from, before);
  const knownHit = value && value.index < before ? { what: `the value of ${value.name}`, index: value.index } : undefined;
  return findSecret(text, from, padded, before, knownHit, forms);
}

export class SecretScanner {
  finding: Finding | undefined;
  /** The stream's last bytes so far: context, then `deferred` bytes not judged yet (a view of `kept`). */
  private before: Buffer = Buffer.alloc(0);
  private kept = Buffer.allocUnsafe(OVERLAP + CONTEXT);
  private deferred = 0;
  private window = Buffer.alloc(CONTEXT + OVERLAP + BLOCK + PADDING);

  /**
   * `position` is where the first block starts in the stream; `scale` turns
   * positions into offsets (2 for UTF-16 narrowed to one byte per unit).
   */
  constructor(
    private readonly known: KnownSecrets = NO_KNOWN_SECRETS,
    private position = 0,
    private readonly scale = 1,
    private readonly reread?: RereadBudget,
  ) {}

  /**
   * Sets the bytes before the first block. Its last OVERLAP bytes are
   * judged with the first block (a scanner that judged them before deferred
   * them to this one); what precedes them is context only.
   */
  setContext(before: Uint8Array): void {
    this.before = Buffer.from(before.subarray(Math.max(0, before.length - OVERLAP - CONTEXT)));
    this.deferred = Math.min(OVERLAP, this.before.length);
  }

  /** Judges the next block (at most BLOCK bytes; `final` for the stream's last). */
  scanBlock(block: Buffer, final: boolean): void {
    if (this.finding) return;
    const head = this.before.length;
    const length = head + block.length;
    if (this.window.length < length + PADDING) this.window = Buffer.alloc(length + PADDING);
    const padded = this.window.subarray(0, length + PADDING);
    const window = padded.subarray(0, length);
    this.before.copy(window, 0);
    block.copy(window, head);
    padded.fill(0, length);
    const judgeFrom = head - this.deferred;
    const judgeTo = final ? length : Math.max(judgeFrom, length - OVERLAP);
    const hit = firstHit(window.toString("latin1", 0, length), window, padded, judgeFrom, judgeTo, this.known, this.reread);
    if (hit) this.finding = { what: hit.what, offset: (this.position - head + hit.index) * this.scale };
    this.position += block.length;
    // The stream's last block: nothing is kept for a next one.
    if (final) return;
    const keep = Math.min(length, Math.max(OVERLAP, length - judgeTo) + CONTEXT);
    if (this.kept.length < keep) this.kept = Buffer.allocUnsafe(keep);
    window.copy(this.kept, 0, length - keep, length);
    this.before = this.kept.subarray(0, keep);
    this.deferred = length - judgeTo;
  }
}

/** The padded copy of a part of one block, reused: a file may hold a million parts of a few bytes. */
let scratch: Buffer | undefined;

/** The first credential in `bytes` (a whole part: a metadata chunk, an inflated XML file), or undefined. */
export function scanBytes(bytes: Uint8Array, known: KnownSecrets = NO_KNOWN_SECRETS): Finding | undefined {
  if (bytes.length <= BLOCK) {
    // One window, judged whole: what a scanner would do with it, without its buffers.
    scratch ??= Buffer.alloc(BLOCK + PADDING);
    scratch.set(bytes, 0);
    scratch.fill(0, bytes.length, bytes.length + PADDING);
    const hit = firstHit(scratch.toString("latin1", 0, bytes.length), scratch.subarray(0, bytes.length), scratch, 0, bytes.length, known);
    return hit && { what: hit.what, offset: hit.index };
  }
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  const scanner = new SecretScanner(known);
  for (let off = 0; off < buf.length || off === 0; off += BLOCK) {
    const end = Math.min(buf.length, off + BLOCK);
    scanner.scanBlock(buf.subarray(off, end), end === buf.length);
    if (scanner.finding || end === buf.length) break;
  }
  return scanner.finding;
}
