// The values the Hermes host holds in its .env files and JSON credential
// stores, looked for literally (and inside base64) wherever bytes go out:
// $HERMES_HOME/.env, auth.json and the other stores, the same in each
// $HERMES_HOME/profiles/* (and, for a profile's home, in the shared Hermes
// root and each of its profiles: hermes-homes.ts), the managed scope's, the credentials other
// agents' CLIs keep in the user's home, and (in gate mode, where the service cannot read
// the agents' homes) every file of $CREDENTIALS_DIRECTORY whose name starts
// with `hermes-env`; and the secrets of the environments this process runs
// under and of the running gateways each Hermes home's gateway.pid names
// (process-environments.ts). Each file is read by its format's reader
// (secret-file-formats.ts); this module judges which values are worth
// looking for, and looks. A value is never printed: a hit names the variable.
//
// One pass over the bytes, whatever the number of values: every value is at
// least MIN_VALUE bytes long, so each of its occurrences covers a 4-byte word
// at an offset divisible by 4 (by 16 when every value is 19 bytes or more,
// as API keys are). The pass reads those words only, looks each up in a
// filter of 512 Ki bits of the values' words at every alignment, and
// compares the few candidates the filter lets through. Measured on 50 MB:
// ~26 ms for 40 values read one word in four, against ~430 ms for a regex
// alternation of them and ~290 ms for an Aho-Corasick automaton walked byte
// by byte in JavaScript; a quarter of that one word in sixteen. A value cut
// by line breaks (a `.env` pasted into a report and wrapped) is found from
// any of its words the pass reads: every word of a value is in the filter,
// and the comparison goes outward from it across the breaks.
import fs from "node:fs";
import path from "node:path";
import { Refusal } from "../core/errors.js";
import { escapeText } from "../core/escape.js";
import { hermesRoot, listHermesHomes, readdirOrEmpty } from "./hermes-homes.js";
import { MAX_PROFILES, PROFILE_ID } from "./hermes-profiles.js";
import type { ProcessEnvironment } from "./process-environments.js";
import { type SecretFileFormat, forEachSecretEntry } from "./secret-file-formats.js";
import { AUTH_SCHEME, PATH_LIKE, USERINFO, basicPassword, environmentEntryMayHoldSecret, namesAuthorization, variableNameSaysSecret } from "./secret-variables.js";
import { isPlaceholderValue, looksLikeTokenValue } from "./shape.js";
import { WRAPPED_WHAT, cellBreakBefore, cellBreakLength, lineEndBeforeBreak, wrapBreakLength } from "./text-forms.js";
import { narrowedUtf16 } from "./utf16.js";

/** Shorter values are too common to look for (a user id, a port, `true`). */
export const MIN_VALUE = 8;
/** Longer values are looked for by their first bytes: a leak of that many is a leak. */
const MAX_COMPARED = 256;
const MAX_FILE = 1024 * 1024;

export interface KnownValue {
  /** The variable's name, and the file's role: what a refusal may say. */
  name: string;
  bytes: Uint8Array;
  /** Another form of a value also looked for as it is (escaped, base64-encoded): not a value of its own. */
  form?: true;
  /** Looked for whole only, not cut by line breaks (a gate client's value: cheapToCompare). */
  whole?: true;
}

/** Names of settings, not secrets, even when their value looks random. */
const SETTING_NAME = /_(?:URL|URI|HOST|PORT|PATH|FILE|DIR|ID|IDS|NAME|MODEL|REGION|USERS|USER|CHANNEL|CHANNELS|ROOMS|MODE|ENABLED|ENV|LEVEL|TIMEOUT|SECONDS|TTL|DOMAIN|SCHEME|ENDPOINT|PROFILE|ENGINE|PROXY|IMAGE)$/i;

/** The values of one .env worth looking for: secret names' values, URL passwords, values that look like credentials. */
export function valuesWorthLookingFor(name: string, value: string, byShape = true): string[] {
  const out: string[] = [];
  // The cheap tests first: an environment has a hundred variables, few of them secret, and this runs cold.
  const userinfo = value.includes("://") ? USERINFO.exec(value) : null;
  if (userinfo && userinfo[1]!.length >= MIN_VALUE) {
    out.push(userinfo[1]!);
    // A URL holds a password percent-encoded; a config file or a shell line writes it as it is.
    const decoded = percentDecoded(userinfo[1]!);
    if (decoded !== undefined && decoded !== userinfo[1] && decoded.length >= MIN_VALUE) out.push(decoded);
  }
  // An HTTP header's value (an MCP server's `Authorization: Bearer …` in config.yaml): its credential.
  const scheme = namesAuthorization(name) ? AUTH_SCHEME.exec(value) : null;
  if (scheme && scheme[1]!.length >= MIN_VALUE && !isPlaceholderValue(scheme[1]!)) out.push(scheme[1]!);
  // A Basic credential kept encoded (a Docker config's `auths.REGISTRY.auth`): the encoding as it is, and its password.
  const basic = namesAuthorization(name) ? basicPassword(value) : undefined;
  if (basic !== undefined) {
    if (value.length >= MIN_VALUE) out.push(value);
    if (basic.length >= MIN_VALUE && !isPlaceholderValue(basic)) out.push(basic);
  }
  if (MCP_SERVER_URL.test(name)) out.push(...credentialPathSegments(value));
  if (value.length < MIN_VALUE) return out;
  const secretName = variableNameSaysSecret(name);
  // The host's own value: skipped only when it is wholly a placeholder or a reference (`your-key-here`, `${OTHER}`),
  // not for a `<`, `here` or `abc123` inside it, as a generic assignment in a file is (isPlaceholder).
  if ((!secretName && !userinfo && !byShape) || isPlaceholderValue(value)) return out;
  if (secretName || userinfo || (!SETTING_NAME.test(name) && !PATH_LIKE.test(value) && looksLikeTokenValue(value))) {
    out.push(value);
    // A multi-line value (a key pasted into .env) is also looked for line by line.
    if (value.includes("\n")) for (const line of value.split(/\r?\n/)) if (line.trim().length >= 16) out.push(line.trim());
  }
  return out;
}

/** An MCP server's URL in config.yaml (`mcp_servers.NAME.url`), named by its last three keys. */
const MCP_SERVER_URL = /^mcp_servers\..+\.url$/;
/** The shortest path segment of an MCP server's URL taken for its credential. */
const MIN_URL_CREDENTIAL = 24;

/**
 * The segments of a URL's path that are its credential (Zapier's
 * `https://mcp.zapier.com/api/mcp/s/SECRET/mcp`, Composio's and others'
 * MCP URLs: the URL is the key): random ones (looksLikeTokenValue) of
 * MIN_URL_CREDENTIAL characters or more. Read for MCP servers' URLs only: a
 * URL elsewhere in a store is an address, and its path a name.
 */
function credentialPathSegments(url: string): string[] {
  const scheme = url.indexOf("://");
  if (scheme < 0) return [];
  const pathStart = url.indexOf("/", scheme + 3);
  if (pathStart < 0) return [];
  const pathEnd = url.slice(pathStart).search(/[?#]/);
  const segments = (pathEnd < 0 ? url.slice(pathStart) : url.slice(pathStart, pathStart + pathEnd)).split("/");
  return segments.filter((segment) => segment.length >= MIN_URL_CREDENTIAL && looksLikeTokenValue(segment));
}

function percentDecoded(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}

/**
 * Shorter values are not looked for in base64: their encodings, less the
 * characters that depend on the bytes around them, hold too little of them
 * (a weak password's encoding would be most of a word's).
 */
const MIN_ENCODED_VALUE = 16;
/** Base64 characters of a value looked for whole; a longer encoding is looked for by its last pieces of this length. */
const PIECE = 24;
/** Pieces looked for per encoding: at least one of them is whole on each line of base64 wrapped at 64 or 76 columns. */
const PIECES = 4;

/**
 * How a value reads inside base64 (a Kubernetes secret's `data:`, a Docker
 * config's `auth`, an `Authorization: Basic` header, `base64 .env`): the
 * encoding of its bytes from each of the three positions a 3-byte group can
 * start at, in standard and URL-safe alphabets, without the characters that
 * depend on the bytes around it. An encoding longer than two pieces is looked
 * for by its last pieces, each whole within any line of a wrapped encoding:
 * a value's last bytes are its random ones (a JWT's header or an OpenSSH
 * key's first bytes are the same for many; their encodings are no one's).
 */
export function base64Forms(value: Uint8Array): Buffer[] {
  const bytes = Buffer.from(value.buffer, value.byteOffset, value.length);
  const forms = new Set<string>();
  if (bytes.length < MIN_ENCODED_VALUE) return [];
  for (let skip = 0; skip < 3; skip++) {
    const groups = Math.floor((bytes.length - skip) / 3);
    const chunk = bytes.subarray(skip, skip + 3 * groups);
    for (const alphabet of ["base64", "base64url"] as const) {
      const encoded = chunk.toString(alphabet);
      if (encoded.length < 2 * PIECE) forms.add(encoded);
      else for (let k = 1; k <= PIECES && k * PIECE <= encoded.length; k++) forms.add(encoded.slice(encoded.length - k * PIECE, encoded.length - (k - 1) * PIECE));
    }
  }
  return [...forms].map((form) => Buffer.from(form, "latin1"));
}

/**
 * How a value reads inside base64 of UTF-16LE text: PowerShell's
 * `-EncodedCommand` (the one form it takes) and
 * `[Convert]::ToBase64String([Text.Encoding]::Unicode.GetBytes($s))`. Each
 * character two bytes, so the value's encoding is ~2.7 characters a
 * character: from each of the three positions in a 3-byte group, standard
 * alphabet only (PowerShell's), the encoding whole when under two pieces,
 * else its last two pieces (PIECE) as one: a command line is not wrapped,
 * and 48 characters hold the value's last 18. Three forms a value of 16
 * characters or more (base64Forms' bound).
 */
export function utf16Base64Forms(value: string): Buffer[] {
  if (value.length < MIN_ENCODED_VALUE) return [];
  const bytes = Buffer.from(value, "utf16le");
  const forms = new Set<string>();
  for (let skip = 0; skip < 3; skip++) {
    const groups = Math.floor((bytes.length - skip) / 3);
    const encoded = bytes.subarray(skip, skip + 3 * groups).toString("base64");
    forms.add(encoded.length < 2 * PIECE ? encoded : encoded.slice(encoded.length - 2 * PIECE));
  }
  return [...forms].map((form) => Buffer.from(form, "latin1"));
}

/** Hex digits of a value looked for whole; a longer hex form is looked for by its last pieces of this length (19 or more: the pass's stride stays 16). */
const HEX_PIECE = 20;
/**
 * Pieces looked for per hex form: each tool's line holds two pieces (or two
 * and a byte), so a line break falls in at most one of the last two and the
 * other is whole. Four, as base64's, made the known values ~44 hex forms a
 * value (1,057 of a host's 1,229) and their table twice as slow to make.
 */
const HEX_PIECES = 2;

/**
 * How a value reads in hex (`xxd -p`, 60 digits a line; Python's `.hex()`,
 * Node's `toString("hex")`, `hexdump -ve '1/1 "%02x"'`, Go's `%X`): its
 * bytes' digits in small letters and in capitals, each byte two digits
 * whatever comes before it. A hex form of 40 digits or more is looked for
 * by its last pieces of HEX_PIECE digits (HEX_PIECES of them: a value's
 * last 20 bytes), one of which is whole on either side of a line break that
 * cuts it, as in a wrapped `xxd -p`. A hex dump's grouped columns (`xxd`,
 * `hexdump -C`, `od -c`) are read by hex-dumps.ts.
 */
export function hexForms(value: Uint8Array): Buffer[] {
  const hex = Buffer.from(value.buffer, value.byteOffset, value.length).toString("hex");
  const pieces = hex.length < 2 * HEX_PIECE ? [hex] : Array.from({ length: Math.min(HEX_PIECES, Math.floor(hex.length / HEX_PIECE)) }, (_, k) => hex.slice(hex.length - (k + 1) * HEX_PIECE, hex.length - k * HEX_PIECE));
  return pieces.flatMap((piece) => [piece, piece.toUpperCase()]).map((piece) => Buffer.from(piece, "latin1"));
}

/**
 * The hex a tool writes a byte at a time with a separator: `od -An -tx1` and
 * `od -t x1z` (16 bytes a line behind a blank), Python's `bytes.hex(' ')`
 * and `.hex(':')`, `xxd -i`'s C array (`0x54, 0x45,`, 12 a line), a `\x54\x45`
 * escape string; each in small letters and capitals, `prefix` before the
 * first byte. `bytes` of them to a piece: each piece is 19 characters or
 * more (the pass's stride stays 16), and two adjacent pieces less a byte
 * fit the tool's line, so a line inside a value's pieces holds one whole.
 */
const SEPARATED_HEX: readonly { prefix: string; separator: string; bytes: number }[] = [
  { prefix: "", separator: " ", bytes: 7 },
  { prefix: "", separator: ":", bytes: 7 },
  { prefix: "0x", separator: ", 0x", bytes: 4 },
  { prefix: "\\x", separator: "\\x", bytes: 5 },
];
/** 16-bit words of a byte-swapped dump (`hexdump`, `od -x`: `4554 5453`, 8 a line) to a piece: 19 characters. */
const SWAPPED_WORDS = 4;

/**
 * `units` (a value's bytes or words as a dump writes each) whole when fewer
 * than two pieces of `n`, else its last HEX_PIECES pieces of `n` end to end, as
 * hexForms cuts its digits: a line break in the value leaves one whole on
 * its longer side. None when fewer than `n`: too short to look for alone.
 */
function unitPieces(units: readonly string[], n: number): string[][] {
  if (units.length < n) return [];
  if (units.length < 2 * n) return [[...units]];
  const pieces: string[][] = [];
  for (let k = 1; k <= HEX_PIECES && k * n <= units.length; k++) pieces.push(units.slice(units.length - k * n, units.length - (k - 1) * n));
  return pieces;
}

/**
 * How a value reads in the hex dumps that write a byte at a time with a
 * separator (SEPARATED_HEX) or 16-bit words byte-swapped (`hexdump` and
 * `od -x` without options: the value's bytes paired from the even or the
 * odd offset it may start at, each pair's second byte first), by pieces as
 * hexForms; dumps with offsets and a text column (`xxd`, `hexdump -C`,
 * `od -c`) are read by hex-dumps.ts. More values of the one pass: no work
 * per byte.
 */
export function separatedHexForms(value: Uint8Array): Buffer[] {
  const digits = Array.from(value, (b) => b.toString(16).padStart(2, "0"));
  const forms = new Set<string>();
  for (const { prefix, separator, bytes } of SEPARATED_HEX) {
    for (const piece of unitPieces(digits, bytes)) {
      forms.add(prefix + piece.join(separator));
      forms.add(prefix + piece.join(separator).toUpperCase().replaceAll(separator.toUpperCase(), separator));
    }
  }
  for (const start of [0, 1]) {
    const words: string[] = [];
    for (let i = start; i + 1 < digits.length; i += 2) words.push(digits[i + 1]! + digits[i]!);
    for (const piece of unitPieces(words, SWAPPED_WORDS)) forms.add(piece.join(" "));
  }
  return [...forms].map((form) => Buffer.from(form, "latin1"));
}

/** A word's place in the filter: 19 bits, one bit each. */
const hash = (word: number) => Math.imul(word, 0x9e3779b1) >>> 13;
const inFilter = (filter: Uint8Array, h: number) => (filter[h >>> 3]! >>> (h & 7)) & 1;
/** The little-endian 32-bit word at `at`, as the pass reads it. */
const wordAt = (b: Uint8Array, at: number) => b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16) | (b[at + 3]! << 24);

/** A candidate's flags: the value's comparison starts at its word (a word the pass meets in each whole occurrence: offset < stride). */
const START = 1;
/** A candidate's flags: an occurrence cut by line breaks is looked for from its word (a value that may be wrapped, a word it holds once). */
const WALK = 2;

/**
 * Each word of each value at the offsets the pass may meet it, with the
 * values that hold it there, in the values' order: a map from each word to
 * the first of its entries, kept in typed arrays and chained. A host's 24
 * keys in every form make ~12,000 entries; as a Map of object lists they
 * cost a fresh process ~6% more instructions to make and search 50 MB of
 * text (callgrind; the bench's home).
 */
class Candidates {
  private readonly heads = new Map<number, number>();
  readonly value: Int32Array;
  readonly offset: Int32Array;
  readonly flags: Uint8Array;
  /** The next entry of the same word, -1 at the end. */
  readonly next: Int32Array;
  private size = 0;

  constructor(entries: number) {
    this.value = new Int32Array(entries);
    this.offset = new Int32Array(entries);
    this.flags = new Uint8Array(entries);
    this.next = new Int32Array(entries);
  }

  /** Puts an entry first in its word's list: values are added last to first. */
  add(word: number, value: number, offset: number, flags: number): void {
    const e = this.size++;
    this.value[e] = value;
    this.offset[e] = offset;
    this.flags[e] = flags;
    this.next[e] = this.heads.get(word) ?? -1;
    this.heads.set(word, e);
  }

  /** The first entry of `word`'s list, -1 if none. */
  first(word: number): number {
    return this.heads.get(word) ?? -1;
  }
}

/** The words a value holds more than once (usually none): a walk cannot start from one, it does not tell where it is. */
function repeatedWords(b: Uint8Array): number[] {
  const words = new Int32Array(Math.max(0, b.length - 3));
  for (let offset = 0; offset < words.length; offset++) words[offset] = wordAt(b, offset);
  words.sort();
  const repeated: number[] = [];
  for (let i = 1; i < words.length; i++) if (words[i] === words[i - 1] && repeated[repeated.length - 1] !== words[i]) repeated.push(words[i]!);
  return repeated;
}

export interface KnownHit {
  name: string;
  index: number;
}

/** The table cells' folds one search reads at most (KnownSecrets.cellBreak). */
const CELL_READINGS = 64;
/** Bytes of line breaks one occurrence may skip in all: its match stays far under the scanner's 4 KiB overlap. */
const MAX_SKIPPED = 1024;
/** Where a walk (KnownSecrets.walk) stopped, and where it found the value's first byte (-1: it did not). */
interface Walk {
  reached: number;
  start: number;
  breaks: number;
}

export class KnownSecrets {
  /** A bit per hash of the words looked for (64 KiB, as the byte per hash of 2^16 it replaced: an eighth of its false hits). */
  private readonly filter = new Uint8Array(1 << 16);
  private words: Candidates | undefined;
  /**
   * Bytes between the words the pass reads: a multiple of 4 at most the
   * shortest value's length less 3, so each occurrence of every value holds
   * a word at an offset divisible by it (the longer the values, the fewer
   * words read: one in 16 bytes for values of 19 bytes or more; each value
   * is entered at `stride` offsets, so it stays at 16). A value cut by line
   * breaks holds such a word in each piece of stride + 3 bytes or more (19:
   * wherever a piece starts, the next multiple of the stride is at most 15
   * bytes on), so every word of a value that may be wrapped is entered too.
   */
  private readonly stride: number;

  constructor(readonly values: KnownValue[]) {
    const shortest = Math.min(...values.map((v) => v.bytes.length));
    this.stride = Math.max(4, Math.min(16, ((shortest - 3) >> 2) << 2));
    for (const value of values) {
      const b = value.bytes;
      const last = mayWrap(value) ? b.length - 4 : this.stride - 1;
      for (let offset = 0; offset <= last; offset++) {
        const h = hash(wordAt(b, offset));
        this.filter[h >>> 3]! |= 1 << (h & 7);
      }
    }
  }

  /** The candidates (Candidates): made at the filter's first hit, so a scan that meets none (a picture's short text) allocates none of them. */
  private candidates(): Candidates {
    if (this.words !== undefined) return this.words;
    const { values, stride } = this;
    let entries = 0;
    for (const value of values) entries += mayWrap(value) ? value.bytes.length - 3 : stride;
    const words = new Candidates(entries);
    for (let v = values.length - 1; v >= 0; v--) {
      const value = values[v]!;
      const b = value.bytes;
      const wraps = mayWrap(value);
      const repeated = wraps ? repeatedWords(b) : [];
      const last = wraps ? b.length - 4 : stride - 1;
      for (let offset = 0; offset <= last; offset++) {
        const word = wordAt(b, offset);
        const flags = (offset < stride ? START : 0) | (wraps && !repeated.includes(word) ? WALK : 0);
        if (flags !== 0) words.add(word, v, offset, flags);
      }
    }
    return (this.words = words);
  }

  get size(): number {
    return this.values.length;
  }

  /**
   * The first known value found in `bytes` starting at or after `from` and
   * before `before`, or undefined: the leftmost whole one (an occurrence
   * that starts earlier holds a word at or before the one that found it),
   * or one cut by line breaks, named so.
   */
  find(bytes: Uint8Array, from = 0, before = bytes.length): KnownHit | undefined {
    if (this.values.length === 0) return undefined;
    this.cellReadings = CELL_READINGS;
    const { stride } = this;
    const end = bytes.length - 4;
    // One load per word where the bytes allow it (a scan's window is a buffer of its own): 50 MB
    // of text in 64 KiB windows, in a fresh process, 14.5 against 17.9 ms (medians of 6).
    const words = LITTLE_ENDIAN && (bytes.byteOffset & 3) === 0 ? new Int32Array(bytes.buffer, bytes.byteOffset, bytes.length >> 2) : undefined;
    // Where each value's last walk stopped: a walk is not started again inside what one read (made at the first walk).
    let walked: Map<KnownValue, number> | undefined;
    // The first word at a multiple of the stride that an occurrence starting at `from` can hold.
    for (let at = this.nextPassing(bytes, words, Math.floor(from / stride) * stride, end); at >= 0; at = this.nextPassing(bytes, words, at + stride, end)) {
      const candidates = this.candidates();
      let best: KnownHit | undefined;
      for (let e = candidates.first(wordAt(bytes, at)); e >= 0; e = candidates.next[e]!) {
        const value = this.values[candidates.value[e]!]!;
        const offset = candidates.offset[e]!;
        const start = at - offset;
        if ((candidates.flags[e]! & START) !== 0 && start >= from && start < before && start + value.bytes.length <= bytes.length && (!best || best.index > start) && equalAt(bytes, start, value.bytes)) {
          best = { name: value.name, index: start };
          continue;
        }
        if ((candidates.flags[e]! & WALK) === 0 || (walked !== undefined && at < (walked.get(value) ?? -1))) continue;
        walked ??= new Map();
        const w = this.walk(bytes, at, value.bytes, offset);
        walked.set(value, w.reached);
        if (w.breaks > 0 && w.start >= from && w.start < before && (!best || best.index > w.start)) best = { name: `${value.name}, ${WRAPPED_WHAT}`, index: w.start };
      }
      if (best) return best;
    }
    return undefined;
  }

  /**
   * Compares `value` with the bytes outward from its word at `offset`, which
   * lies at `at`, passing over a line break (and the blanks or quote marks
   * after it) wherever one stands between two of its characters: where the
   * comparison stopped going forward, and where the value starts (-1: it is
   * not there). Stops at the first other difference: it costs a few
   * comparisons wherever the word is only a word.
   */
  private walk(bytes: Uint8Array, at: number, v: Uint8Array, offset: number): Walk {
    const length = bytes.length;
    let i = at + 4;
    let k = offset + 4;
    let skipped = 0;
    let breaks = 0;
    // One break between two of its characters: a blank line between two pieces is no wrapping.
    let broke = false;
    while (k < v.length) {
      if (i < length && bytes[i] === v[k]) {
        i++;
        k++;
        broke = false;
        continue;
      }
      const wrap = broke ? 0 : wrapBreakLength(bytes, i, v[k]!);
      // A line break whose indent runs up to another byte (a table's border) may be a cell's fold.
      const n = broke ? 0 : wrap > 0 && bytes[i + wrap] === v[k] ? wrap : this.cellBreak(bytes, i, cellBreakLength) || wrap;
      skipped += n;
      if (n === 0 || skipped > MAX_SKIPPED) return { reached: i, start: -1, breaks };
      i += n;
      breaks++;
      broke = true;
    }
    let j = at - 1;
    k = offset - 1;
    broke = false;
    while (k >= 0) {
      if (j >= 0 && bytes[j] === v[k]) {
        j--;
        k--;
        broke = false;
        continue;
      }
      const n = broke ? 0 : breakBefore(bytes, j) || this.cellBreak(bytes, j + 1, cellBreakBefore);
      skipped += n;
      if (n === 0 || skipped > MAX_SKIPPED) return { reached: i, start: -1, breaks };
      j -= n;
      breaks++;
      broke = true;
    }
    return { reached: i, start: j + 1, breaks };
  }

  /**
   * A table cell's fold at `at` (text-forms.ts: `read` is cellBreakLength
   * forward, cellBreakBefore back), read where a blank or a line's end
   * follows a piece, and at most CELL_READINGS times a search: each reads
   * two lines of up to CELL_LINE_MAX bytes, and text made of a value's
   * pieces before blanks would have every walk read them.
   */
  private cellBreak(bytes: Uint8Array, at: number, read: (w: Uint8Array, at: number) => number): number {
    if (this.cellReadings <= 0) return 0;
    const c = read === cellBreakLength ? bytes[at] : bytes[at - 1];
    if (c !== 32 && c !== 10 && c !== 13) return 0;
    this.cellReadings--;
    return read(bytes, at);
  }
  private cellReadings = CELL_READINGS;

  /** The first offset from `at` to `end`, in steps of the stride, whose word the filter lets through; -1 if none. */
  private nextPassing(bytes: Uint8Array, words: Int32Array | undefined, at: number, end: number): number {
    const { filter, stride } = this;
    if (words !== undefined) {
      const step = stride >> 2;
      for (let i = at >> 2, last = end >> 2; i <= last; i += step) if (inFilter(filter, hash(words[i]!)) !== 0) return i << 2;
      return -1;
    }
    for (; at <= end; at += stride) if (inFilter(filter, hash(wordAt(bytes, at))) !== 0) return at;
    return -1;
  }
}

/** Whether a value is also looked for cut by line breaks: a value itself, not a form of it (escaped, base64), nor a gate client's. */
const mayWrap = (value: KnownValue) => value.form === undefined && value.whole === undefined;

/** The length of the line break (and its indent) that ends at `j`, read backward, or 0. */
function breakBefore(bytes: Uint8Array, j: number): number {
  const p = lineEndBeforeBreak(bytes, j + 1);
  return p < 0 ? 0 : j - p;
}

/** The words are read in the machine's order where they can be: little-endian, as wordAt reads them. */
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

function equalAt(bytes: Uint8Array, start: number, value: Uint8Array): boolean {
  for (let i = 0; i < value.length; i++) if (bytes[start + i] !== value[i]) return false;
  return true;
}

export const NO_KNOWN_SECRETS = new KnownSecrets([]);

/**
 * HTML 4's named references past ASCII (Python's html.entities.codepoint2name,
 * PHP's htmlentities table), as runs: a code point in hex, then the names of
 * it and of the code points after it; runs apart by commas.
 */
const HTML4_NAMES =
  "a0 nbsp iexcl cent pound curren yen brvbar sect uml copy ordf laquo not shy reg macr deg plusmn sup2 sup3 acute micro para middot cedil sup1 " +
  "ordm raquo frac14 frac12 frac34 iquest Agrave Aacute Acirc Atilde Auml Aring AElig Ccedil Egrave Eacute Ecirc Euml Igrave Iacute Icirc Iuml " +
  "ETH Ntilde Ograve Oacute Ocirc Otilde Ouml times Oslash Ugrave Uacute Ucirc Uuml Yacute THORN szlig agrave aacute acirc atilde auml aring " +
  "aelig ccedil egrave eacute ecirc euml igrave iacute icirc iuml eth ntilde ograve oacute ocirc otilde ouml divide oslash ugrave uacute ucirc " +
  "uuml yacute thorn yuml, 152 OElig oelig, 160 Scaron scaron, 178 Yuml, 192 fnof, 2c6 circ, 2dc tilde, 391 Alpha Beta Gamma Delta Epsilon Zeta " +
  "Eta Theta Iota Kappa Lambda Mu Nu Xi Omicron Pi Rho, 3a3 Sigma Tau Upsilon Phi Chi Psi Omega, 3b1 alpha beta gamma delta epsilon zeta eta " +
  "theta iota kappa lambda mu nu xi omicron pi rho sigmaf sigma tau upsilon phi chi psi omega, 3d1 thetasym upsih, 3d6 piv, 2002 ensp emsp, " +
  "2009 thinsp, 200c zwnj zwj lrm rlm, 2013 ndash mdash, 2018 lsquo rsquo sbquo, 201c ldquo rdquo bdquo, 2020 dagger Dagger bull, 2026 hellip, " +
  "2030 permil, 2032 prime Prime, 2039 lsaquo rsaquo, 203e oline, 2044 frasl, 20ac euro, 2111 image, 2118 weierp, 211c real, 2122 trade, 2135 " +
  "alefsym, 2190 larr uarr rarr darr harr, 21b5 crarr, 21d0 lArr uArr rArr dArr hArr, 2200 forall, 2202 part exist, 2205 empty, 2207 nabla isin " +
  "notin, 220b ni, 220f prod, 2211 sum minus, 2217 lowast, 221a radic, 221d prop infin, 2220 ang, 2227 and or cap cup int, 2234 there4, 223c " +
  "sim, 2245 cong, 2248 asymp, 2260 ne equiv, 2264 le ge, 2282 sub sup nsub, 2286 sube supe, 2295 oplus, 2297 otimes, 22a5 perp, 22c5 sdot, " +
  "2308 lceil rceil lfloor rfloor, 2329 lang rang, 25ca loz, 2660 spades, 2663 clubs, 2665 hearts diams";

/** Each character HTML4_NAMES names, with its name: made for the first value past ASCII. */
let html4Names: Map<number, string> | undefined;

function htmlNameOf(cp: number): string | undefined {
  if (html4Names === undefined) {
    html4Names = new Map();
    for (const run of HTML4_NAMES.split(", ")) {
      const [first, ...names] = run.split(" ");
      names.forEach((name, k) => html4Names!.set(parseInt(first!, 16) + k, name));
    }
  }
  return html4Names.get(cp);
}

/** `text` as PHP's htmlentities writes it: each character HTML4_NAMES names by its name (the ASCII ones are escapedForms'). */
function htmlEntities(text: string): string {
  return Array.from(text, (c) => {
    const name = htmlNameOf(c.codePointAt(0)!);
    return name === undefined ? c : `&${name};`;
  }).join("");
}

/**
 * What Windows-1252's bytes 0x80 to 0x9F stand for (WHATWG's table: the
 * five it leaves undefined as the C1 controls); the rest of its upper half
 * is Latin-1's. Node 20's TextDecoder reads it as Latin-1.
 */
const WINDOWS_1252_HIGH = "\u20ac\x81\u201a\u0192\u201e\u2026\u2020\u2021\u02c6\u2030\u0160\u2039\u0152\x8d\u017d\x8f\x90\u2018\u2019\u201c\u201d\u2022\u2013\u2014\u02dc\u2122\u0161\u203a\u0153\x9d\u017e\u0178";

/** `text` in Windows-1252, or undefined where it holds a character that has no byte there. */
function windows1252(text: string): Buffer | undefined {
  const out = Buffer.alloc(text.length);
  for (let i = 0; i < text.length; i++) {
    let byte = text.charCodeAt(i);
    if (byte >= 0x80 && (byte < 0xa0 || byte > 0xff)) {
      const k = WINDOWS_1252_HIGH.indexOf(text[i]!);
      if (k < 0) return undefined;
      byte = 0x80 + k;
    }
    out[i] = byte;
  }
  return out;
}

/** `bytes` read as Windows-1252. */
const fromWindows1252 = (bytes: Uint8Array) => Array.from(bytes, (b) => (b >= 0x80 && b < 0xa0 ? WINDOWS_1252_HIGH[b - 0x80]! : String.fromCharCode(b))).join("");

const PAST_ASCII = /[^\x00-\x7f]/;

/**
 * How a value with characters past ASCII reads where a tool wrote them
 * otherwise than in UTF-8: composed or decomposed (macOS gives NFD); in
 * Windows-1252 or Latin-1 (a PDF's text in a standard font, its
 * metadata's PDFDocEncoding, a Windows program's text); as the UTF-16
 * reading (utf16.ts) narrows a PowerShell or Notepad "Unicode" file; UTF-8
 * read as Windows-1252 and written again (mojibake: `KrÃ¤ftig`); and PHP's
 * htmlentities (`Kr&auml;ftig`). A form shorter than MIN_VALUE is left out.
 */
export function nonAsciiForms(value: string): { how: string; bytes: Buffer }[] {
  if (!PAST_ASCII.test(value)) return [];
  const own = Buffer.from(value, "utf8").toString("latin1");
  const forms = new Map<string, { how: string; bytes: Buffer }>();
  const add = (how: string, bytes: Buffer | undefined) => {
    const key = bytes?.toString("latin1");
    if (key !== undefined && key !== own && bytes!.length >= MIN_VALUE && !forms.has(key)) forms.set(key, { how, bytes: bytes! });
  };
  const nfc = value.normalize("NFC");
  add("Unicode-normalised", Buffer.from(nfc, "utf8"));
  add("Unicode-normalised", Buffer.from(value.normalize("NFD"), "utf8"));
  add("in Windows-1252 or UTF-16", windows1252(nfc));
  add("in UTF-16", narrowedUtf16(Buffer.from(nfc, "utf16le"), "le"));
  add("mis-decoded as Windows-1252", Buffer.from(fromWindows1252(Buffer.from(nfc, "utf8")), "utf8"));
  add("HTML-escaped", Buffer.from(htmlEntities(nfc), "utf8"));
  return [...forms.values()];
}

/** Characters of a value that the escapes of escapedForms change; a value without any has no other form. */
const ESCAPED = /[^A-Za-z0-9_.~-]/;

/**
 * How a value reads once a common tool has escaped it, where that differs
 * from the value: percent-encoded in a URL's query or a data: URI
 * (`encodeURIComponent`, Python's `quote` with and without `/` kept, which
 * `urlencode` and requests write: `:` of a Telegram token as `%3A`, `/` and
 * `+` of an AWS secret key as `%2F` and `%2B`), form-encoded
 * (application/x-www-form-urlencoded, `quote_plus`: a password's spaces as
 * `+`), inside a JSON or YAML string
 * (`"` and `\` escaped: `json.dumps`; and as JSON_ENCODERS write it: `&` as
 * Go's `\u0026`, `é` as Python's `\u00e9`, `/` as PHP's `\/`), in HTML that a template escaped and a
 * Markdown or text file kept (`&amp;`; Python's `html.escape` and
 * MarkupSafe's forms of quotes), in a CSV field (`"` doubled), inside
 * single quotes that double a `'` (SQL, YAML, PowerShell), and as
 * Python's repr writes a str (pythonRepr). Each is
 * one more value of the one pass: no cost per byte.
 */
export function escapedForms(value: string): { how: string; form: string }[] {
  if (!ESCAPED.test(value)) return [];
  const forms = new Map<string, string>();
  const add = (how: string, form: string) => {
    if (form !== value && !forms.has(form)) forms.set(form, how);
  };
  const percent = (keep: RegExp) => Array.from(Buffer.from(value, "utf8"), (c) => (keep.test(String.fromCharCode(c)) ? String.fromCharCode(c) : `%${c.toString(16).toUpperCase().padStart(2, "0")}`)).join("");
  const quoted = percent(/[A-Za-z0-9_.~-]/);
  add("percent-encoded", quoted);
  add("percent-encoded", percent(/[A-Za-z0-9_.~/-]/));
  add("percent-encoded", encodeURIComponent(value));
  // A form's body or a query that urlencode or requests wrote (Python's quote_plus): a space as `+`, a `+` as `%2B`; as quote only where the value holds a space.
  if (value.includes(" ")) add("form-encoded", quoted.replace(/%20/g, "+"));
  // .NET's HttpUtility.UrlEncode writes the digits in small letters (RFC 3986: either case).
  for (const [form, how] of [...forms]) add(how, form.replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase()));
  const json = JSON.stringify(value).slice(1, -1);
  add("escaped in a string", json);
  for (const encoder of JSON_ENCODERS) add("escaped in a string", jsonForm(json, encoder));
  const html = value.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  add("HTML-escaped", html.replace(/"/g, "&quot;").replace(/'/g, "&#x27;"));
  add("HTML-escaped", html.replace(/"/g, "&#34;").replace(/'/g, "&#39;"));
  // PHP's htmlspecialchars (ENT_QUOTES, its default since 8.1), JSP's <c:out> and fn:escapeXml (zero-padded), XML writers (`&apos;`).
  add("HTML-escaped", html.replace(/"/g, "&quot;").replace(/'/g, "&#039;"));
  add("HTML-escaped", html.replace(/"/g, "&#034;").replace(/'/g, "&#039;"));
  add("HTML-escaped", html.replace(/"/g, "&quot;").replace(/'/g, "&apos;"));
  add("escaped in a CSV field", value.replace(/"/g, '""'));
  for (const form of shellForms(value)) add("shell-quoted", form);
  // A `'` doubled inside single quotes: SQL's string literal, a YAML single-quoted scalar, PowerShell's verbatim string.
  if (value.includes("'")) add("quoted, its ' doubled", value.replace(/'/g, "''"));
  // Python's repr (`print(os.environ)`, `print(settings)`, a logged dict, a pytest diff): differs from the JSON form
  // with a backslash and a quote, or with both quotes (`'` then written `\'`).
  if ((value.includes("\\") && /['"]/.test(value)) || (value.includes("'") && value.includes('"'))) add("escaped in a string", pythonRepr(value));
  return Array.from(forms, ([form, how]) => ({ how, form }));
}

/**
 * A value as Python's repr writes a str, less its quotes: in `"` when it
 * holds a `'` and no `"`, else in `'` with each `'` written `\'`; a
 * backslash doubled, the other quote left as it is; `\t`, `\n`, `\r` and
 * `\xNN` for the other ASCII control characters. (Characters past ASCII
 * are kept as they are, where repr writes those it deems unprintable as
 * `\xNN` or `\uNNNN`: not looked for so.)
 */
function pythonRepr(value: string): string {
  const quote = value.includes("'") && !value.includes('"') ? '"' : "'";
  return value.replace(/[\\'\x00-\x1f\x7f]/g, (c) => {
    if (c === "\\") return "\\\\";
    if (c === "'") return quote === "'" ? "\\'" : c;
    if (c === "\t") return "\\t";
    if (c === "\n") return "\\n";
    if (c === "\r") return "\\r";
    return `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`;
  });
}

/** What bash's `printf %q` puts a backslash before (bash 5.2, checked); `#` and `~` only first. */
const SHELL_SPECIAL = /[ !"$&'()*,;<>?[\\\]^`{|}]/g;

/**
 * How a shell or a tool that writes commands quotes a value, where the value
 * does not stand in it as it is: a `'` closed and reopened by Python's
 * shlex.quote (`'"'"'`) and by bash's `set -x` and `${v@Q}` (`'\''`: the
 * value's other characters stand as they are between the quotes), and bash's
 * `printf %q` (a backslash before each special character). A value with a
 * control character is written `$'…'` by %q: not looked for so.
 */
function shellForms(value: string): string[] {
  const forms: string[] = [];
  if (value.includes("'")) forms.push(value.replace(/'/g, `'"'"'`), value.replace(/'/g, "'\\''"));
  if (!/[\x00-\x1f\x7f]/.test(value)) forms.push(value.replace(SHELL_SPECIAL, "\\$&").replace(/^[#~]/, "\\$&"));
  return forms;
}

/**
 * How the JSON encoders in common use write a string beyond JSON.stringify's
 * escapes (`"`, `\\`, control characters): each one form of a value, so a
 * value has at most these more (a form equal to another is added once).
 */
interface JsonEncoder {
  /** Characters it writes as `\u00XX` besides JSON.stringify's. */
  unicode: string;
  /** Whether it writes every character past ASCII as `\uXXXX` (surrogate pairs past the BMP). */
  asciiOnly: boolean;
  /** Whether it writes `/` as `\/`. */
  slash: boolean;
  upperHex: boolean;
}
const JSON_ENCODERS: readonly JsonEncoder[] = [
  // Go's encoding/json (docker inspect, kubectl -o json, terraform -json): HTML-safe, U+2028 and U+2029 too.
  { unicode: "<>&\u2028\u2029", asciiOnly: false, slash: false, upperHex: false },
  // Python's json.dumps (ensure_ascii, its default), Java's Jackson with ESCAPE_NON_ASCII.
  { unicode: "", asciiOnly: true, slash: false, upperHex: false },
  // PHP's json_encode (its default: `\/` and ASCII only).
  { unicode: "", asciiOnly: true, slash: true, upperHex: false },
  // Gson's default (HTML-safe: `=` and `'` too).
  { unicode: "<>&='\u2028\u2029", asciiOnly: false, slash: false, upperHex: false },
  // .NET's System.Text.Json default encoder: HTML-sensitive characters, `+`, `` ` ``, `"` and all past ASCII, in capitals.
  { unicode: "<>&'+`\"", asciiOnly: true, slash: false, upperHex: true },
];

/** `json` (a value as JSON.stringify escapes it, less its quotes) as `encoder` writes it. */
function jsonForm(json: string, encoder: JsonEncoder): string {
  let out = "";
  for (let i = 0; i < json.length; i++) {
    const c = json[i]!;
    const code = json.charCodeAt(i);
    if (c === "\\") {
      // An escape of JSON.stringify's, kept whole: `\"` is the one its encoder may write otherwise.
      const next = json[i + 1]!;
      out += next === '"' && encoder.unicode.includes('"') ? unicodeEscape(34, encoder.upperHex) : `\\${next}`;
      i++;
    } else if (encoder.unicode.includes(c) || (encoder.asciiOnly && code > 0x7f)) out += unicodeEscape(code, encoder.upperHex);
    else if (c === "/" && encoder.slash) out += "\\/";
    else out += c;
  }
  return out;
}

function unicodeEscape(code: number, upperHex: boolean): string {
  const hex = code.toString(16).padStart(4, "0");
  return `\\u${upperHex ? hex.toUpperCase() : hex}`;
}

/** What is looked for of one variable: each value worth it (valuesWorthLookingFor), as it is, escaped (escapedForms) and base64-encoded. */
function knownValuesOf(name: string, value: string, where: string, byShape: boolean): KnownValue[] {
  const out: KnownValue[] = [];
  for (const v of valuesWorthLookingFor(name, value, byShape)) {
    const bytes = Buffer.from(v, "utf8");
    out.push({ name: `${name} (${where})`, bytes: bytes.subarray(0, MAX_COMPARED) });
    for (const { how, form } of escapedForms(v)) out.push({ name: `${name} (${where}), ${how}`, bytes: Buffer.from(form, "utf8").subarray(0, MAX_COMPARED), form: true });
    for (const { how, bytes: form } of nonAsciiForms(v)) out.push({ name: `${name} (${where}), ${how}`, bytes: form.subarray(0, MAX_COMPARED), form: true });
    for (const form of base64Forms(bytes)) out.push({ name: `${name} (${where}), base64-encoded`, bytes: form, form: true });
    for (const form of utf16Base64Forms(v)) out.push({ name: `${name} (${where}), base64-encoded in UTF-16`, bytes: form, form: true });
    for (const form of hexForms(bytes)) out.push({ name: `${name} (${where}), hex-encoded`, bytes: form, form: true });
    for (const form of separatedHexForms(bytes)) out.push({ name: `${name} (${where}), hex-encoded`, bytes: form, form: true });
  }
  return out;
}

/**
 * The values of one file, each under `VARIABLE (where)` (a JSON store's: the
 * keys that lead to it); throws UnreadableSecrets for a JSON store that is
 * not JSON (a damaged store: its values are not known).
 */
function valuesOf(text: string, where: string, format: SecretFileFormat): KnownValue[] {
  const out: KnownValue[] = [];
  const read = forEachSecretEntry(text, format, (name, value, byShape) => out.push(...knownValuesOf(name, value, where, byShape)));
  if (!read) throw new UnreadableSecrets("it is not valid JSON");
  return out;
}

export interface KnownSecretSources {
  hermesHome: string;
  /** systemd's $CREDENTIALS_DIRECTORY, in gate mode. */
  credentialsDirectory?: string | undefined;
  /** Hermes' managed scope (machine-wide, root's: $HERMES_MANAGED_DIR, else /etc/hermes), whose .env and config.yaml every agent loads. */
  managedDir?: string | undefined;
  /** The home of the user Hermes runs as: other agents' CLIs keep credentials there that Hermes reads into its pool. */
  userHome?: string | undefined;
  /** $CODEX_HOME, where the Codex CLI keeps its auth.json (else ~/.codex). */
  codexHome?: string | undefined;
  /** $HERMES_SHARED_AUTH_DIR, where Hermes keeps the shared Nous OAuth store, nous_auth.json (else the shared root's shared/: HOME_STORES). */
  sharedAuthDir?: string | undefined;
  /** The Google service account keys (JSON) $VERTEX_CREDENTIALS_PATH and $GOOGLE_APPLICATION_CREDENTIALS name. */
  serviceAccountKeys?: readonly { variable: string; file: string }[] | undefined;
  /**
   * The environments this process was started under (its own, the gateway's
   * above it) and the running gateways' of these Hermes homes (their
   * gateway.pid): how they are read.
   */
  environments?: ((hermesHomes: readonly string[]) => ProcessEnvironment[]) | undefined;
}

/**
 * The credentials other agents' CLIs keep in the user's home, which Hermes
 * seeds its credential pool from (agent/credential_sources.py): Claude
 * Code's OAuth tokens, Qwen's, and the Codex CLI's; Docker's registry
 * logins (`auths.REGISTRY.auth`, base64 of user:password; an identity
 * token), which a terminal that runs in Docker pulls with; and the AWS
 * shared credentials (INI: `aws_secret_access_key`, `aws_session_token` of
 * each profile), which Hermes' Bedrock provider reads through
 * `AWS_PROFILE` (agent/bedrock_adapter.py); PostgreSQL's password file,
 * git's credential store and the .netrc (curl's, pip's, git's over HTTPS),
 * whose passwords the rules find only beside their host or in their URL. Not ~/.claude.json: Claude
 * Code's whole state, often past the 1 MiB read here (its API key has a
 * format the rules find).
 */
const USER_HOME_STORES: readonly { name: string; format: SecretFileFormat }[] = [
  { name: ".claude/.credentials.json", format: "json" },
  { name: ".qwen/oauth_creds.json", format: "json" },
  { name: ".docker/config.json", format: "json" },
  // Its `name = value` lines under `[profile]` read as a .env's.
  { name: ".aws/credentials", format: "dotenv" },
  { name: ".pgpass", format: "pgpass" },
  { name: ".git-credentials", format: "url-lines" },
  { name: ".netrc", format: "netrc" },
];
/** The Codex CLI's, in the user's home where $CODEX_HOME does not move it. */
const CODEX_AUTH = ".codex/auth.json";
/**
 * The stores of the user's home local mode reads when $CODEX_HOME is not
 * set: what the gate copies from each agent user's home (src/deploy/gate.ts;
 * a gateway's $CODEX_HOME it copies as CODEX_HOME_COPY_TAG).
 */
export const USER_HOME_SECRET_FILES: readonly string[] = [...USER_HOME_STORES.map((store) => store.name), CODEX_AUTH];

/** How a store of USER_HOME_SECRET_FILES is read. */
export function userHomeStoreFormat(store: string): SecretFileFormat {
  return USER_HOME_STORES.find((s) => s.name === store)?.format ?? "json";
}

/** A user's home store as the name of its copy for the gate ends: its path, each component's leading dot dropped, slashes made dashes (`docker-config.json`). */
const copyTag = (store: string) => store.replace(/^\./, "").replace(/\/\.?/g, "-");

/**
 * The name gate-secrets gives its copy of an agent user's home store (one
 * of USER_HOME_SECRET_FILES), `copy` being the name it gives any file
 * (`hermes-env-N`): the store's after it (`hermes-env-N-docker-config.json`),
 * so that the gate names what it finds there by the store, as local mode does.
 */
export function userHomeStoreCopyName(copy: string, store: string): string {
  return `${copy}-${copyTag(store)}`;
}

/**
 * The tag of the copy gate-secrets makes of the Codex CLI's auth.json where
 * a gateway's $CODEX_HOME puts it (`hermes-env-N-codex-home-auth.json`):
 * read as the store is, and named by where it came from.
 */
const CODEX_HOME_COPY_TAG = "codex-home-auth.json";
export const codexHomeCopyName = (copy: string) => `${copy}-${CODEX_HOME_COPY_TAG}`;

/**
 * The tag of the copy gate-secrets makes of a managed scope's .env or
 * config.yaml where a gateway's $HERMES_MANAGED_DIR puts it, followed at
 * run time (`hermes-env-N-managed.env`, `hermes-env-N-managed.config.yaml`):
 * read as either (.env and YAML lines), named by where it came from.
 */
export const managedCopyTag = (file: string) => `managed${file.startsWith(".") ? "" : "."}${file}`;
const MANAGED_COPY_TAGS = [".env", "config.yaml"].map(managedCopyTag);

/**
 * The stores, besides the Codex CLI's and the managed scope's, that a
 * gateway's environment moves (hermes-environment.ts): the shared Nous
 * OAuth store where `$HERMES_SHARED_AUTH_DIR` puts it
 * (`DIR/nous_auth.json`), and the Google service account key (a JSON key
 * file: `private_key`, `private_key_id`) `$VERTEX_CREDENTIALS_PATH` or
 * `$GOOGLE_APPLICATION_CREDENTIALS` names (agent/vertex_adapter.py, the
 * first that exists; both are read). Each copy is named by its tag
 * (`hermes-env-N-nous-shared-auth.json`), read as JSON, and named in a
 * refusal by where it came from.
 */
export const MOVED_STORES = {
  "nous-shared": { tag: "nous-shared-auth.json", where: "the shared Nous OAuth store in a gateway's $HERMES_SHARED_AUTH_DIR" },
  "vertex-credentials": { tag: "vertex-credentials.json", where: "the Google service account key a gateway's $VERTEX_CREDENTIALS_PATH names" },
  "google-credentials": { tag: "google-application-credentials.json", where: "the Google service account key a gateway's $GOOGLE_APPLICATION_CREDENTIALS names" },
} as const;
export type MovedStore = keyof typeof MOVED_STORES;
export const movedStoreCopyName = (copy: string, store: MovedStore) => `${copy}-${MOVED_STORES[store].tag}`;

/** The user's home store a credential is the copy of (userHomeStoreCopyName), if it is one. */
function userHomeStoreOfCopy(name: string): string | undefined {
  const tag = /^hermes-env-[0-9]+-(.+)$/.exec(name)?.[1];
  return tag === undefined ? undefined : USER_HOME_SECRET_FILES.find((store) => copyTag(store) === tag);
}

/**
 * Hermes' files of secrets besides its .env, under a Hermes home and each
 * profile's (hermes-agent 0.19's own list, gateway/platforms/base.py, what
 * its env_loader reads, and its plugins' stores): the 1Password service
 * account's token (.op.env, loaded after .env), OAuth tokens and pooled API
 * keys (auth.json), Anthropic's and Google's OAuth tokens, webhook secrets,
 * Bitwarden's and 1Password's caches of secret values (with them, the .env
 * may hold no key at all), Slack's OAuth tokens per workspace, the memory
 * plugins' settings (Honcho's, Supermemory's, Hindsight's: an `apiKey`
 * there), Google Chat's user token and client secret, and config.yaml (API
 * keys of auxiliary models and delegation, the dashboard's password and
 * secret, MCP servers' env and headers).
 */
const HOME_STORES: readonly { name: string; format: SecretFileFormat }[] = [
  { name: ".op.env", format: "dotenv" },
  ...[
    "auth.json",
    ".anthropic_oauth.json",
    "google_token.json",
    "auth/google_oauth.json",
    "webhook_subscriptions.json",
    "cache/bws_cache.json",
    "cache/op_cache.json",
    "slack_tokens.json",
    "honcho.json",
    "supermemory.json",
    "hindsight/config.json",
    "google_chat_user_token.json",
    "google_chat_user_client_secret.json",
    // The shared Nous login (hermes_cli/auth.py _nous_shared_store_path: `<root>/shared/nous_auth.json`, its OAuth
    // access and refresh tokens, rewritten at every refresh), in the shared root every profile's Hermes reads: a home
    // that is its own root holds it; a profile's home knows its root's (listHermesHomesNamed), and a profile's own is none.
    "shared/nous_auth.json",
  ].map((name) => ({ name, format: "json" as const })),
  { name: "config.yaml", format: "yaml" },
];
/** Every file of secrets of a Hermes home but its .env and store directories: what the gate copies besides (src/deploy/gate.ts). */
export const HERMES_STORES: readonly string[] = HOME_STORES.map((store) => store.name);
/** Directories of JSON stores, one file each: live MCP OAuth tokens and registered clients' secrets (per server), Google Chat's tokens (per user). */
export const HERMES_STORE_DIRS: readonly string[] = ["mcp-tokens", "google_chat_user_tokens"];
/** Files of a store directory read: a host has a few MCP servers, a few chat users. */
const MAX_STORE_DIR_FILES = 256;

/** Which entries of a store directory hold secrets: its `.json` files, in name order, the first MAX_STORE_DIR_FILES. Local mode, the gate's copies and doctor all ask this. */
export function storeDirFileNames(entries: readonly string[]): string[] {
  return entries.filter((name) => name.endsWith(".json")).sort().slice(0, MAX_STORE_DIR_FILES);
}

/** The files of a Hermes profile the gate copies besides its store directories' (those of a Hermes home: its .env, then HERMES_STORES). */
export const PROFILE_FILES: readonly string[] = [".env", ...HERMES_STORES];


/** What a copy of a profile's file is of: one of PROFILE_FILES, the Kth file of a store directory, or the Codex CLI's auth.json where the profile's .env puts CODEX_HOME. */
export type ProfileCopyFile = { store: string } | { storeDir: string; index: number } | { codexHome: true };

const CODEX_HOME_TAG = "codex-home-auth.json";
/** A profile file's part of its copy's name: its path in the profile, the leading dot dropped, "/" made "-" (`env`, `auth-google_oauth.json`, `mcp-tokens-0`). */
function profileFileTag(f: ProfileCopyFile): string {
  if ("codexHome" in f) return CODEX_HOME_TAG;
  if ("storeDir" in f) return `${f.storeDir}-${f.index}`;
  return copyTag(f.store);
}

/**
 * The name gate-secrets gives its copy of a file of a Hermes profile, `copy`
 * being the name of the profiles directory's copies (`hermes-env-N`):
 * `hermes-env-N-profile.ID.TAG`, ID the profile's name when Hermes would
 * take it for one (letters, digits, `_`, `-`: never a dot) and `~K` for any
 * other (K its place among the profiles copied: the name is the agent's,
 * and only Hermes' own are safe to carry as they are), TAG the file's
 * (profileFileTag). The gate names what it finds there by the profile and
 * the file, and reads it as local mode reads that file.
 */
export function profileCopyName(copy: string, profile: { name: string; place: number }, file: ProfileCopyFile): string {
  return `${copy}-profile.${PROFILE_ID.test(profile.name) ? profile.name : `~${profile.place}`}.${profileFileTag(file)}`;
}

/** How a file of a profile (one of PROFILE_FILES; any other: a store directory's) is read, by local mode and by the gate alike. */
export function profileFileFormat(store: string): SecretFileFormat {
  return store === ".env" ? "dotenv" : (HOME_STORES.find((s) => s.name === store)?.format ?? "json");
}

/** How the gate reads and names a copy of a profile's file (profileCopyName), if the credential is one; `shown`: its name escaped. */
function profileCopyOf(name: string, shown: string): { format: SecretFileFormat; where: string } | undefined {
  const m = /^hermes-env-[0-9]+-profile\.([a-z0-9_-]{1,64}|~[0-9]+)\.([^/]+)$/.exec(name);
  if (!m) return undefined;
  const id = m[1]!;
  const tag = m[2]!;
  const profile = id.startsWith("~") ? `profile directory number ${id.slice(1)} of a Hermes home (a name Hermes takes for no profile)` : `Hermes profile ${id}`;
  if (tag === CODEX_HOME_TAG) return { format: "json", where: `the Codex CLI's auth.json in the $CODEX_HOME of ${profile}, credential ${shown}` };
  const dir = HERMES_STORE_DIRS.find((d) => tag.startsWith(`${d}-`) && /^[0-9]+$/.test(tag.slice(d.length + 1)));
  if (dir !== undefined) return { format: "json", where: `a file of ${dir}/ of ${profile}, credential ${shown}` };
  const store = PROFILE_FILES.find((s) => profileFileTag({ store: s }) === tag);
  if (store === undefined) return undefined;
  return { format: profileFileFormat(store), where: `the ${store} of ${profile}, credential ${shown}` };
}

/** The store a gateway's environment moves whose copy `name` is (movedStoreCopyName), if it is one. */
function movedStoreOfCopy(name: string): MovedStore | undefined {
  return (Object.keys(MOVED_STORES) as MovedStore[]).find((store) => name.endsWith(`-${MOVED_STORES[store].tag}`));
}

export interface SecretFile {
  file: string;
  /** How a refusal names it. */
  where: string;
  format: SecretFileFormat;
}

/** A Hermes home, or a profile's (`profiles/NAME`, a Hermes home of its own), with how a refusal names a file there. */
export interface HermesHome {
  dir: string;
  named: (file: string) => string;
}

/**
 * The Hermes home and each of its profiles', in name order; and, for a
 * profile's home, the shared Hermes root it lies in and the root's other
 * profiles (hermes-homes.ts hermesRoot: Hermes denies the root's files to a
 * profile's gateway too, and its agents can read them): each has its own
 * files of secrets and its own gateway.pid. At most MAX_PROFILES profiles
 * of each, those the gate takes (hermes-homes.ts listHermesHomes); those
 * left out are `untaken`.
 */
export function listHermesHomesNamed(hermesHome: string, userHome?: string): { homes: HermesHome[]; untaken: string[] } {
  const root = hermesRoot(hermesHome, userHome);
  const { dirs, untaken } = listHermesHomes(hermesHome, root);
  const [home, ...others] = dirs;
  const homes = [
    { dir: home!, named: (file: string) => `the Hermes ${file}` },
    ...others.map((dir) =>
      dir === root ? { dir, named: (file: string) => `the ${file} of the shared Hermes root` } : { dir, named: (file: string) => `the ${file} of Hermes profile ${escapeText(path.basename(dir))}` },
    ),
  ];
  return { homes, untaken };
}

/**
 * The tag of the file gate-secrets writes beside the copies of a profiles
 * directory whose listing left profiles out (`hermes-env-N-profiles-untaken`):
 * those profiles (hermes-profiles.ts profilesLeftOut), one a line, escaped.
 * Its copies are then incomplete, and the gate's secret check refuses as
 * local mode does (loadKnownSecrets). No credential: never read for values.
 */
const UNTAKEN_PROFILES_TAG = "profiles-untaken";
export const untakenProfilesCopyName = (copy: string) => `${copy}-${UNTAKEN_PROFILES_TAG}`;
const isUntakenProfilesCopy = (name: string) => /^hermes-env-[0-9]+-profiles-untaken$/.test(name);

/** The profiles the gate's copies in `credentialsDirectory` leave out, as gate-secrets wrote them (untakenProfilesCopyName). */
function untakenInCopies(credentialsDirectory: string): string[] {
  const out: string[] = [];
  for (const name of readdirOrEmpty(credentialsDirectory)) {
    if (!isUntakenProfilesCopy(name)) continue;
    let text: string;
    try {
      text = fs.readFileSync(path.join(credentialsDirectory, name), "utf8");
    } catch {
      // There and not readable: the copies are incomplete all the same.
      text = `the profiles named in ${escapeText(name)}, which cannot be read`;
    }
    // Written escaped by gate-secrets, root's, in the gate's own directory (escaped again, a profile's `\x1b` would read `\\x1b`).
    out.push(...text.split("\n").filter((line) => line !== ""));
  }
  return out;
}

/** listHermesHomesNamed's homes alone. */
export function hermesHomes(hermesHome: string, userHome?: string): HermesHome[] {
  return listHermesHomesNamed(hermesHome, userHome).homes;
}

/**
 * What the secret check says of profiles whose files it does not read
 * (listHermesHomesNamed's `untaken`, escaped): a file whose check needs the
 * values it knows is refused while there are any (unscannable_content),
 * never published with a value of theirs unlooked for. The bound is the
 * gate's own (MAX_PROFILES): the work of each prepare stays bounded
 * whatever the agent makes in a profiles directory, and an agent that
 * makes profiles to push an operator's out of the bound gets refusals, not
 * its secrets.
 */
export function untakenProfilesMessage(untaken: readonly string[]): string {
  return `the secret check reads at most ${MAX_PROFILES} Hermes profiles of a home (Hermes' own names first, in name order), and does not know the values of ${untaken.join("; ")}`;
}

/** What to do about untakenProfilesMessage. */
export const UNTAKEN_PROFILES_FIX = `keep at most ${MAX_PROFILES} profiles in each Hermes home (hermes profile delete NAME), each a directory named with letters, digits, _ and -`;

/** The files that hold known secrets, each with how a refusal names it. */
export function knownSecretFiles(src: KnownSecretSources, homes = hermesHomes(src.hermesHome, src.userHome)): SecretFile[] {
  const files: SecretFile[] = [];
  for (const { dir: home, named } of homes) {
    files.push({ file: path.join(home, ".env"), where: named(".env"), format: "dotenv" });
    for (const { name, format } of HOME_STORES) files.push({ file: path.join(home, name), where: named(name), format });
    for (const dir of HERMES_STORE_DIRS) {
      for (const name of storeDirFileNames(readdirOrEmpty(path.join(home, dir)))) files.push({ file: path.join(home, dir, name), where: named(`${dir}/${escapeText(name)}`), format: "json" });
    }
  }
  if (src.userHome) {
    for (const name of USER_HOME_SECRET_FILES) if (name !== CODEX_AUTH || !src.codexHome) files.push({ file: path.join(src.userHome, name), where: `the user's ~/${name}`, format: userHomeStoreFormat(name) });
  }
  if (src.codexHome) files.push({ file: path.join(src.codexHome, "auth.json"), where: "the Codex CLI's auth.json ($CODEX_HOME)", format: "json" });
  if (src.sharedAuthDir) files.push({ file: path.join(src.sharedAuthDir, "nous_auth.json"), where: "the shared Nous OAuth store ($HERMES_SHARED_AUTH_DIR/nous_auth.json)", format: "json" });
  for (const { variable, file } of src.serviceAccountKeys ?? []) files.push({ file, where: `the Google service account key $${variable} names`, format: "json" });
  if (src.managedDir) {
    files.push({ file: path.join(src.managedDir, ".env"), where: "the managed Hermes .env", format: "dotenv" });
    files.push({ file: path.join(src.managedDir, "config.yaml"), where: "the managed Hermes config.yaml", format: "yaml" });
  }
  if (src.credentialsDirectory) {
    for (const name of readdirOrEmpty(src.credentialsDirectory)) {
      if (!name.startsWith("hermes-env") || isUntakenProfilesCopy(name)) continue;
      // A copy of an agent user's home store (~/.docker/config.json) is read as local mode reads the store, and named by it; the copy does not say whose home.
      const store = userHomeStoreOfCopy(name);
      const file = path.join(src.credentialsDirectory, name);
      // A copy of a profile's file first: its name holds the profile's, which may end like another copy's.
      // Named in refusals and doctor's lines: escaped once, here (a profile's name is the agent's).
      const shown = escapeText(name);
      const profileCopy = profileCopyOf(name, shown);
      if (profileCopy) files.push({ file, ...profileCopy });
      else if (movedStoreOfCopy(name) !== undefined) files.push({ file, where: `${MOVED_STORES[movedStoreOfCopy(name)!].where}, credential ${shown}`, format: "json" });
      else if (name.endsWith(`-${CODEX_HOME_COPY_TAG}`)) files.push({ file, where: `the Codex CLI's auth.json in a gateway's $CODEX_HOME, credential ${shown}`, format: "json" });
      else if (MANAGED_COPY_TAGS.some((tag) => name.endsWith(`-${tag}`))) files.push({ file, where: `the managed Hermes scope in a gateway's $HERMES_MANAGED_DIR, credential ${shown}`, format: "either" });
      else files.push(store === undefined ? { file, where: `credential ${shown}`, format: "either" } : { file, where: `an agent user's ~/${store}, credential ${shown}`, format: userHomeStoreFormat(store) });
    }
  }
  return files;
}

/** Why a file of secrets that is there gives no values. */
class UnreadableSecrets extends Error {}

/** What reading one file of secrets gave: its values, or why it gave none though it is there. */
export interface SecretFileReading {
  file: SecretFile;
  exists: boolean;
  values: KnownValue[];
  /** Set when the file is there and its values are not known. */
  problem?: string;
}

// A long-running process (watch, serve) re-reads a file only when it changed.
const cache = new Map<string, { key: string; reading: SecretFileReading }>();

/**
 * A file's text without the UTF-8 byte order mark an editor saved before it
 * (Notepad's "UTF-8 with BOM"): python-dotenv keeps it in the first name
 * (`\ufeffSMTP_PASSWORD`, which no .env name reads as, so that line gave no
 * value), Hermes' own sanitising reads the file as `utf-8-sig`, and a JSON
 * store with one is no JSON to JSON.parse. The value is the secret either way.
 */
const withoutBom = (text: string) => (text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);

/** Reads one file of secrets (cached while its inode, size and times are unchanged). */
export function readSecretFile(f: SecretFile): SecretFileReading {
  let st: fs.Stats;
  try {
    st = fs.statSync(f.file);
  } catch {
    cache.delete(f.file);
    return { file: f, exists: false, values: [] };
  }
  if (!st.isFile()) return { file: f, exists: true, values: [], problem: "it is not a regular file" };
  if (st.size > MAX_FILE) return { file: f, exists: true, values: [], problem: `it is larger than ${MAX_FILE / 1024 / 1024} MiB, more than this check reads` };
  const key = `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
  const cached = cache.get(f.file);
  if (cached?.key === key) return cached.reading;
  let reading: SecretFileReading;
  try {
    reading = { file: f, exists: true, values: valuesOf(withoutBom(fs.readFileSync(f.file, "utf8")), f.where, f.format) };
  } catch (err) {
    // Unreadable (the gate's service user, say: the credentials directory is how it gets them), or damaged.
    reading = { file: f, exists: true, values: [], problem: err instanceof UnreadableSecrets ? err.message : "it cannot be read" };
  }
  cache.set(f.file, { key, reading });
  return reading;
}

/** The known secrets of this host, read now (cached per file while unchanged). */
export function loadKnownSecrets(src: KnownSecretSources): KnownSecrets {
  const { homes, untaken } = listHermesHomesNamed(src.hermesHome, src.userHome);
  // In gate mode, the profiles the copies leave out: the same rule, the same refusal.
  if (src.credentialsDirectory) untaken.push(...untakenInCopies(src.credentialsDirectory));
  if (untaken.length > 0) throw new Refusal("unscannable_content", `${untakenProfilesMessage(untaken)}: nothing whose check needs them is published; ${UNTAKEN_PROFILES_FIX}`);
  const values = knownSecretFiles(src, homes).flatMap((f) => readSecretFile(f).values);
  if (src.environments) values.push(...environmentValues(src.environments(homes.map((home) => home.dir)), values));
  return values.length === 0 ? NO_KNOWN_SECRETS : new KnownSecrets(values);
}

/**
 * The secrets of the environments a process was started under and of the
 * running gateways (processEnvironments), those no file gave already (the gateway's environment holds its .env's keys when
 * its unit loads that file: the .env names them better). By name only
 * (`*_API_KEY`, `*_TOKEN`, a URL's password): an environment is full of
 * settings whose values look random (INVOCATION_ID, a session's cookie
 * name), and a path is no secret whatever its variable is called
 * (GIT_ASKPASS).
 */
function environmentValues(environments: ProcessEnvironment[], known: readonly KnownValue[]): KnownValue[] {
  return unknownYet(environments.flatMap(valuesOfEnvironment), known);
}

/** `values` less those `known` holds already, each once (the first to come names it). */
function unknownYet(values: readonly KnownValue[], known: readonly KnownValue[]): KnownValue[] {
  const seen = new Set(known.map((v) => Buffer.from(v.bytes).toString("latin1")));
  const out: KnownValue[] = [];
  for (const v of values) {
    const key = Buffer.from(v.bytes).toString("latin1");
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(v);
  }
  return out;
}

/** A process's environment is judged once (processEnvironments keeps it while the process lives). */
const judgedEnvironments = new WeakMap<ProcessEnvironment, KnownValue[]>();

function valuesOfEnvironment(env: ProcessEnvironment): KnownValue[] {
  let values = judgedEnvironments.get(env);
  if (values !== undefined) return values;
  const where = env.pid === process.pid ? "media-outbox's own environment" : `the environment of process ${env.pid}, ${escapeText(env.command)}`;
  values = valuesOfEntries(env.entries, where);
  judgedEnvironments.set(env, values);
  return values;
}

/**
 * The values worth looking for of an environment's variables, each under
 * `NAME (where)`: of those secret-variables.ts environmentEntryMayHoldSecret
 * lets through, judged by name, never by shape (valuesWorthLookingFor: too
 * short, a placeholder). Local mode's environments and a gate client's alike.
 */
function valuesOfEntries(entries: readonly [string, string][], where: string): KnownValue[] {
  return entries.flatMap(([name, value]) => (environmentEntryMayHoldSecret(name, value) ? knownValuesOf(escapeText(name), value, where, false) : []));
}

/** How a refusal names a variable that a gate's client sent. */
export const CLIENT_ENVIRONMENT = "the client's environment";

/**
 * `known` and the secrets of the environments a gate's client runs under,
 * as it sent them (gate/protocol.ts ENVIRONMENT_HEADER), judged as local
 * mode judges its own environments, those `known` holds already left out
 * (the gate's own credentials name them). For the one request that sent
 * them: `known` itself is not changed.
 */
export function withClientEnvironment(known: KnownSecrets, entries: readonly [string, string][]): KnownSecrets {
  // Looked for whole only: a walk along a value cut by line breaks starts from any word of it, where cheapToCompare's bound holds for comparisons from its first.
  const extra = cheapToCompare(unknownYet(valuesOfEntries(entries, CLIENT_ENVIRONMENT), known.values)).map((v): KnownValue => ({ ...v, whole: true }));
  return extra.length === 0 ? known : new KnownSecrets([...known.values, ...extra]);
}

/** Client values that may hold any one 4-byte word (cheapToCompare). */
const MAX_SHARING = 8;

/**
 * The client's `values` a scan compares at a bounded cost: a value is
 * compared from its first byte wherever the bytes hold one of its words
 * (KnownSecrets.find), so values that share their words (700 values of one
 * 12 KiB header that open with the same bytes) or one that holds its first
 * word again further on (`qqqq…q`, a prefix repeated) had a file of those
 * bytes compared again and again: 1 MB took 5 to 10 s to scan, against
 * 27 ms. Without those, an occurrence a comparison runs along cannot
 * overlap the next one's by a word, so each byte is compared a few times
 * per value at most, and with at most MAX_SHARING values to a word, a few
 * times in all. A secret's value (random, a JWT's segments, a key's lines)
 * holds its first word once and shares its words with few others. A value
 * left out costs nothing a client could not do: the header only adds
 * refusals, and a client may send none.
 */
function cheapToCompare(values: readonly KnownValue[]): KnownValue[] {
  const holding = new Map<number, number>();
  return values.filter(({ bytes }) => {
    const words = new Set<number>();
    for (let at = 0; at + 4 <= bytes.length; at++) words.add(wordAt(bytes, at));
    const first = wordAt(bytes, 0);
    for (let at = 1; at + 4 <= bytes.length; at++) if (wordAt(bytes, at) === first) return false;
    for (const word of words) if ((holding.get(word) ?? 0) >= MAX_SHARING) return false;
    for (const word of words) holding.set(word, (holding.get(word) ?? 0) + 1);
    return true;
  });
}
