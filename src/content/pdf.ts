// PDF: every stream that can hold text (content streams, object streams,
// XMP metadata, embedded files, form XObjects) is decoded (FlateDecode, its
// TIFF or PNG predictor undone, ASCIIHexDecode, ASCII85Decode, or none)
// within the file's inflate budget
// and scanned, both as it is and as the text its show operators (Tj, TJ, ',
// ") draw, so a key cut into TJ pieces reads whole. Images and fonts are
// skipped. Every byte outside the streams (dictionaries, the Info
// dictionary, whatever follows the last %%EOF) is scanned as it is and as
// its decoded strings. An encrypted PDF cannot be read, so it is refused.
// Text drawn with an embedded subset font (glyph numbers in the stream) is
// read again through its font's ToUnicode map (pdf-fonts.ts). A file's
// content streams are read as one text, once its fonts are known.
import { type ByteSource, bytesSource, indexOfIn, readKept } from "./byte-source.js";
import type { InspectContext } from "./inspect.js";
import { readInside } from "./images.js";
import { scanXmpText } from "./xml-text.js";
import { Refusal } from "../core/errors.js";
import { GlyphText, objectNumberBefore, opensAsCMap, PdfFonts } from "./pdf-fonts.js";
import { decodeParmsOf, type Parms, predictorOf, undoPredictor } from "./pdf-predictor.js";
import { ABUTTING, decodeHex, ENDS_NAME, isBlank, lastReference, lastString, OPERATOR, readString, referenceAt, scanText, TextLine, WORD_GAP } from "./pdf-syntax.js";

const IMAGE_FILTERS = /\/(?:DCTDecode|DCT|JPXDecode|CCITTFaxDecode|CCF|JBIG2Decode)\b/;
const SKIPPED = /\/Subtype\s*\/(?:Image|Type1C|CIDFontType0C|OpenType)\b|\/Type\s*\/XRef\b/;
/** A font program's lengths (FontFile streams): skipped, unless it is a ToUnicode map (jsPDF writes /Length1 on those too). */
const FONT_PROGRAM = /\/Length[123]\b/;

/** The streams whose bytes may hold UTF-16 text. */
const STREAM_TYPE = /\/Type\s*\/(ObjStm|Metadata|EmbeddedFile)\b/;

const FILTER = /\/Filter\s*(\[|\/[A-Za-z0-9]+)/g;

/**
 * The filters of a stream dictionary, in order: those of the first
 * `/Filter` that gives a name or an array that closes. An array that does
 * not close is passed over for the next `/Filter`, and so are all later
 * ones (none of theirs closes either): a regular expression that looked for
 * the `]` after each took time as the square of the dictionary's length (a
 * dictionary of 64 KiB of `/Filter[`, 0.2 s; 1 MB of them, 2.7 s).
 */
function filters(dict: string): { names: string[]; inArray: boolean } {
  let closes = true;
  for (const m of dict.matchAll(FILTER)) {
    if (m[1] !== "[") return { names: [m[1]!.slice(1)], inArray: false };
    if (!closes) continue;
    const from = m.index + m[0].length;
    const close = dict.indexOf("]", from);
    if (close < 0) closes = false;
    else return { names: [...dict.slice(from, close).matchAll(/\/([A-Za-z0-9]+)/g)].map((f) => f[1]!), inArray: true };
  }
  return { names: [], inArray: false };
}

/**
 * A stream's bytes inflated, with the predictor its filter's /DecodeParms
 * (`parms`) name undone (pdf-predictor.ts), in place.
 */
function inflated(ctx: InspectContext, part: string, data: Uint8Array, parms: Parms | undefined | "both"): Uint8Array {
  const unreadable = (why: string) => ctx.unscannable(`${part} ${why}`);
  // The parameters are read first: a stream they make unreadable is refused before it is inflated.
  if (parms === "both") throw unreadable("has both /DecodeParms and /DP, which poppler and pdf.js choose between differently");
  const predictor = predictorOf(parms, unreadable);
  const out = ctx.inflate(part, data, "zlib");
  return predictor === undefined ? out : ctx.shortened(out, undoPredictor(out, predictor, unreadable));
}

/** An ASCIIHexDecode stream: its digits up to `>`. */
function asciiHex(data: Uint8Array): Buffer {
  const gt = data.indexOf(62);
  const end = gt < 0 ? data.length : gt;
  const out = Buffer.allocUnsafe((end >> 1) + 1);
  return out.subarray(0, decodeHex(data, 0, end, out, 0));
}

/**
 * An ASCII85Decode stream's bytes (PDF 32000-1, 7.4.3): groups of five
 * characters `!` to `u` make four bytes, `z` four zero bytes, blanks are
 * ignored, `~>` ends it, and a last group of two to four characters makes
 * one to three bytes. A character outside these makes the stream unreadable.
 */
export function ascii85(data: Uint8Array, ctx: InspectContext, part: string): Buffer {
  // Five characters make four bytes; only `z` (four zero bytes of one character) makes more, and the buffer grows then,
  // within what the file may still decode: 200 MiB of `z` inflated from 2 MB grew it to 1 GiB (2.3 GB held, 5 s) before
  // the budget was counted at the end.
  const budget = ctx.decodeBudgetLeft;
  // `out` twice as large, its first `used` bytes kept (a typed array drops what is stored past its end, so it grows before four bytes would not fit).
  const grown = (out: Buffer, used: number): Buffer => {
    if (used + 4 > budget) ctx.spend(part, used + 4);
    const larger = Buffer.allocUnsafe(Math.min(out.length * 2, budget + 4));
    out.copy(larger, 0, 0, used);
    return larger;
  };
  let out: Buffer = Buffer.allocUnsafe(Math.ceil(data.length / 5) * 4 + 4);
  let o = 0;
  let value = 0;
  let count = 0;
  for (let i = 0; i < data.length; i++) {
    const c = data[i]!;
    if (c >= 0x21 && c <= 0x75) {
      value = value * 85 + (c - 0x21);
      if (++count === 5) {
        if (value > 0xffffffff) throw ctx.unscannable(`${part} is not valid ASCII85 (a group past 2^32 at ${i})`);
        // Bytes stored one by one: writeUInt32BE's checks cost more than the decoding.
        if (o + 4 > out.length) out = grown(out, o);
        out[o] = value >>> 24;
        out[o + 1] = (value >>> 16) & 0xff;
        out[o + 2] = (value >>> 8) & 0xff;
        out[o + 3] = value & 0xff;
        o += 4;
        value = 0;
        count = 0;
      }
      continue;
    }
    if (c === 0x7e) break;
    if (c === 32 || c === 10 || c === 13 || c === 9 || c === 12 || c === 0) continue;
    if (c !== 0x7a || count !== 0) throw ctx.unscannable(`${part} is not valid ASCII85 (a byte ${c} at ${i})`);
    if (o + 4 > out.length) out = grown(out, o);
    out[o] = out[o + 1] = out[o + 2] = out[o + 3] = 0;
    o += 4;
  }
  if (count === 1) throw ctx.unscannable(`${part} is not valid ASCII85 (a last group of one character)`);
  if (count > 1) {
    // Padded with `u` (84) to a whole group; the first count - 1 bytes are the data.
    for (let k = count; k < 5; k++) value = value * 85 + 84;
    const last = Math.min(value, 0xffffffff);
    if (o + 4 > out.length) out = grown(out, o);
    for (let k = 0; k < count - 1; k++) out[o++] = (last >>> (24 - 8 * k)) & 0xff;
  }
  ctx.spend(part, o);
  return out.subarray(0, o);
}

/**
 * The strings a content stream shows, in order: TJ pieces joined, a line
 * break where the text moves to another line (`line`, which may carry over
 * from the stream before). With `glyphs`, the strings shown with a font that
 * has a ToUnicode map are also read through it, in the same pass. One pass
 * over the bytes, written straight into the result (never longer than the
 * stream, but for one line break per string): a prepare judges a PDF once,
 * with code V8 has not optimised yet, where building the text from many
 * small strings cost 3 times as much.
 */
export function shownText(s: Uint8Array, line = new TextLine(), glyphs?: GlyphText): Buffer {
  const out = Buffer.allocUnsafe(2 * s.length);
  return out.subarray(0, showInto(s, out, 0, line, glyphs));
}

/**
 * shownText written into `out` from `o` (which has room for twice the
 * stream's length); where it ends. `over`: `out` is the buffer `s` lies in,
 * the text written over the stream (scanContents), `o` at or before its
 * start. That is safe: a string's bytes are read before its text is written
 * (its separator last), the text is never longer than the bytes read, and
 * what is read back (an operator's operands) lies after the last string's
 * closing byte, which stays; only a name a string follows before its Tf is
 * copied first.
 */
function showInto(s: Uint8Array, out: Buffer, o: number, line: TextLine, glyphs: GlyphText | undefined, over = false): number {
  const n = s.length;
  let nameFrom = 0;
  let nameTo = 0;
  /** Where the last name's bytes are: the stream, or a copy. */
  let names: Uint8Array = s;
  /** The last name was taken by a Tf (which a Tf without a name of its own would take again: the font it has). */
  let nameTaken = false;
  // Inside an array (TJ's): its negative numbers move the next string right.
  let inArray = false;
  let i = 0;
  while (i < n) {
    const c = s[i]!;
    if (c === 60 && s[i + 1] === 60) {
      // `<<` opens a dictionary (an inline image's, a marked-content property list), not a hex string
      i += 2;
    } else if (c === 40 || c === 60) {
      if (over && glyphs !== undefined && !nameTaken && names === s) {
        names = Buffer.from(s.subarray(nameFrom, nameTo));
        nameFrom = 0;
        nameTo = names.length;
      }
      const separator = line.separator();
      const from = separator !== 0 ? o + 1 : o;
      const end = readString(s, i, out, from);
      if (separator !== 0) out[o] = separator & 0xff;
      if (separator === ABUTTING) line.abutting.push(o);
      line.shown(end - from);
      o = end;
      i = lastString.end;
      if (glyphs !== undefined) glyphs.show(out, from, o, separator);
    } else if (c === 47) {
      // a name (a font's, before Tf): its letters are no operator
      nameFrom = ++i;
      while (i < n && ENDS_NAME[s[i]!] === 0) i++;
      nameTo = i;
      names = s;
      nameTaken = false;
    } else if (c === 37) {
      // a comment, to the end of the line
      while (i < n && s[i] !== 10 && s[i] !== 13) i++;
    } else if (c === 91 || c === 93) {
      inArray = c === 91;
      line.arrayBound();
      i++;
    } else if (c === 45 && inArray) {
      // TJ's `-333`: how far right the next string moves, in thousandths of an em (only whether it reaches a word space matters).
      let value = 0;
      for (i++; i < n && s[i]! >= 48 && s[i]! <= 57; i++) value = value < WORD_GAP ? value * 10 + s[i]! - 48 : value;
      line.movedRight(value);
    } else if (OPERATOR[c] === 1) {
      let j = i + 1;
      while (j < n && OPERATOR[s[j]!] === 1) j++;
      if (j - i === 2 && c === 84 && s[i + 1] === 102) {
        line.fontSelected(s, i);
        // A name taken already is the font's name: selected again, it changes nothing.
        if (glyphs !== undefined && !nameTaken) glyphs.selectFont(names, nameFrom, nameTo);
        nameTaken = true;
      } else line.operator(s, i, j - i);
      i = j;
    } else {
      i++;
    }
  }
  return o;
}

/** Whether `>>` ends the bytes before `at`, but for blanks. */
function dictionaryEndsAt(buf: Buffer, at: number): boolean {
  let i = at - 1;
  while (i >= 0 && isBlank(buf[i])) i--;
  return i >= 1 && buf[i] === 62 && buf[i - 1] === 62;
}

/**
 * The bytes between the end of the last stream and what is read now (the
 * objects, a stream's dictionary, its `stream` keyword), kept: the fonts
 * keep them. From a file they are copied into a buffer that grows as the
 * reading goes on (a `stream` that opens none, as in `mainstream`, extends
 * it), each byte copied once; in memory they are a view.
 */
class Objects {
  private bytes = Buffer.alloc(0);
  private to: number;
  constructor(
    private readonly src: ByteSource,
    readonly from: number,
  ) {
    this.to = from;
  }

  /** The bytes [from, end), end at most the file's length. */
  upTo(end: number): Buffer {
    end = Math.min(end, this.src.length);
    if (this.src.whole) return this.src.whole.subarray(this.from, end);
    if (end > this.to) {
      const needed = end - this.from;
      if (needed > this.bytes.length) {
        const larger = Buffer.allocUnsafe(Math.max(needed, 2 * this.bytes.length));
        this.bytes.copy(larger, 0, 0, this.to - this.from);
        this.bytes = larger;
      }
      this.bytes.set(this.src.read(this.to, end - this.to), this.to - this.from);
      this.to = end;
    }
    return this.bytes.subarray(0, end - this.from);
  }
}

export function inspectPdf(b: Uint8Array, ctx: InspectContext): void {
  inspectPdfSource(bytesSource(b), ctx);
}

/**
 * A PDF read a range at a time: the bytes between streams and the streams
 * that can hold text are read, an image's or a font's data is not (it is
 * neither kept while staging nor read: a 19 MB PDF of pictures held whole
 * cost its page faults).
 */
export function inspectPdfSource(src: ByteSource, ctx: InspectContext): void {
  refuseEncrypted(src, ctx);
  const fonts = new PdfFonts(ctx);
  // Content streams are read once the fonts are known (a font's map may follow the pages that use it).
  const contents = new ContentStreams(ctx);
  let objects = new Objects(src, 0);
  for (let at = indexOfIn(src, "stream", 0); at >= 0; at = indexOfIn(src, "stream", at + 6)) {
    const stream = streamAt(src, objects, at, ctx);
    if (!stream) continue;
    scanObjects(ctx, fonts, objects.upTo(stream.dataAt), objects.from);
    objects = new Objects(src, stream.end);
    readStream(src, stream, ctx, fonts, contents);
    at = stream.end;
  }
  scanObjects(ctx, fonts, objects.upTo(src.length), objects.from);
  if (contents.streams.length > 0) scanContents(ctx, contents, fonts);
}

function refuseEncrypted(src: ByteSource, ctx: InspectContext): void {
  const tailFrom = Math.max(0, src.length - 64 * 1024);
  const tail = Buffer.from(src.read(tailFrom, src.length - tailFrom)).toString("latin1");
  const head = Buffer.from(src.read(0, Math.min(src.length, 4096))).toString("latin1");
  if (/\/Encrypt\s/.test(tail) || /\/Encrypt\s*\d+\s+\d+\s+R/.test(head)) {
    throw ctx.unscannable("it is encrypted");
  }
}

/** A stream's dictionary, its object number when the file gives one, and where its data starts and ends in the file. */
interface PdfStream {
  dict: string;
  id: number | undefined;
  dataAt: number;
  end: number;
}

/**
 * The stream the word `stream` at `at` opens, or undefined where it opens
 * none (`endstream`, no dictionary before it, no end of line after it).
 * `objects` holds the bytes since the last stream's end.
 */
function streamAt(src: ByteSource, objects: Objects, at: number, ctx: InspectContext): PdfStream | undefined {
  // The bytes since the last stream's end, to a little past this `stream`: every look back and the line end after it.
  const buf = objects.upTo(at + 8);
  const here = at - objects.from;
  // `stream` opens data only after a dictionary (`>>`), before an end of line; `endstream` is not it.
  if (here >= 3 && buf[here - 3] === 101 && buf[here - 2] === 110 && buf[here - 1] === 100) return undefined;
  let dataAt = here + 6;
  if (buf[dataAt] === 0x0d) dataAt++;
  if (buf[dataAt] !== 0x0a && buf[dataAt - 1] !== 0x0d) return undefined;
  if (buf[dataAt] === 0x0a) dataAt++;
  if (!dictionaryEndsAt(buf, here)) return undefined;
  // The dictionary: from its object's `obj` (within 64 KiB), never before the previous stream's end,
  // so no byte is searched or read for two streams (a search back to the file's start for each was quadratic).
  const lo = Math.max(0, here - 64 * 1024);
  const obj = buf.subarray(lo, here).lastIndexOf("obj", undefined, "latin1");
  const dict = buf.toString("latin1", obj < 0 ? Math.max(lo, here - 4096) : lo + obj, here);
  const id = obj < 0 ? undefined : objectNumberBefore(buf, lo + obj);
  dataAt += objects.from;
  return { dict, id, dataAt, end: streamEnd(src, dict, dataAt, at, ctx) };
}

/** Where a stream's data ends: at its `/Length` where `endstream` follows there, else at the next `endstream`. */
function streamEnd(src: ByteSource, dict: string, dataAt: number, at: number, ctx: InspectContext): number {
  const length = /\/Length\s+(\d+)(?!\s+\d+\s+R)/.exec(dict);
  if (length) {
    const candidate = dataAt + Number(length[1]);
    if (candidate <= src.length && /^\s*endstream/.test(Buffer.from(src.read(candidate, 20)).toString("latin1"))) return candidate;
  }
  const end = indexOfIn(src, "endstream", dataAt);
  if (end < 0) throw ctx.unscannable(`a stream at byte ${at} has no end`);
  return end;
}

/** Decodes and scans a stream that can hold text (an image's or a font program's data is not read), or adds it to the content streams. */
function readStream(src: ByteSource, { dict, id, dataAt, end }: PdfStream, ctx: InspectContext, fonts: PdfFonts, contents: ContentStreams): void {
  const part = `the PDF stream at byte ${dataAt}`;
  const { names: streamFilters, inArray } = filters(dict);
  // A font program's first bytes say whether it is a ToUnicode map (what startsAsCMap reads of them).
  if (SKIPPED.test(dict) || IMAGE_FILTERS.test(dict) || (FONT_PROGRAM.test(dict) && !startsAsCMap(ctx, part, src.read(dataAt, Math.min(end - dataAt, 2048)), dict, streamFilters, inArray))) return;
  // A decoded stream's bytes are read, not kept: the first filter makes its output of them (a copy of 40 MB held 40 MB more).
  let data: Uint8Array = streamFilters.length > 0 ? src.read(dataAt, end - dataAt) : readKept(src, dataAt, end - dataAt);
  const parms = streamFilters.length > 0 ? decodeParmsOf(dict, inArray) : [];
  for (const [index, f] of streamFilters.entries()) {
    if (f === "FlateDecode" || f === "Fl") data = inflated(ctx, part, data, parms === "both" ? parms : parms[index]);
    else if (f === "ASCIIHexDecode" || f === "AHx") data = asciiHex(data);
    else if (f === "ASCII85Decode" || f === "A85") data = ascii85(data, ctx, part);
    else throw ctx.unscannable(`${part} is encoded with ${f}, which this check does not read`);
  }
  // UTF-16 may be in an object stream's strings (an Info dictionary, a form field), in XMP metadata or an
  // embedded file, and in any stream whose /Type was damaged: every stream that holds UTF-16 text is read as
  // UTF-16 (InspectContext.scan; a content stream's text has no NULs, its glyph codes seldom read as text).
  const type = STREAM_TYPE.exec(dict)?.[1];
  // A content stream's bytes are scanned after the text it shows (scanContents).
  if (type === undefined && !opensAsCMap(data)) contents.add(id, part, data, ctx.ownsBufferOf(data));
  else {
    // A map and an object stream are kept to the end by the fonts.
    if (type === undefined || type === "ObjStm") data = ctx.fitted(data);
    if (type === undefined) fonts.addMap(id, data);
    ctx.scan(part, data);
  }
  if (type !== undefined) ctx.scanDerivedText(`the text of ${part}`, shownText(data, type === "ObjStm" ? new StringsApart() : undefined), type === "ObjStm");
  // XMP metadata (a document's title, author, description, as exiftool and every XMP reader give them).
  if (type === "Metadata") scanXmpText(ctx, `the XMP metadata of ${part}`, data);
  if (type === "ObjStm") fonts.addObjectStream(dict, data);
  // An attached file that is a document (a docx, a PDF) or a picture is read as one: its compressed parts are otherwise unseen.
  readInside(ctx, part, data);
}

/** A content stream: its object number, when the file gives one, where its decoded bytes lie in ContentStreams' buffer and how a finding names it. */
interface ContentStream {
  id: number | undefined;
  from: number;
  to: number;
  part: string;
}

/** Content streams up to this many bytes in all are kept in a buffer that doubles as it fills (ContentStreams). */
const GROWN_BY_DOUBLING = 8 * 1024 * 1024;
/** Content streams of this many bytes or more in all have the text they show written over them (scanContents). */
const OVER_THE_STREAMS = 8 * 1024 * 1024;

/**
 * The content streams' decoded bytes, one after another in one buffer,
 * which the text they show is then written over when they are large
 * (scanContents): kept apart, they and their text were held at once (a
 * stream of 240 MiB showed 166 MiB of text). The buffer is the first
 * stream's own where inflate made it at the start of a buffer of its own
 * (no copy; room after it); past its room, one that doubles for small
 * streams, and for large ones one as large as the streams so far and all
 * the file may still decode, of which only the pages written take memory.
 */
class ContentStreams {
  bytes: Buffer = Buffer.alloc(0);
  /** The bytes of the streams so far. */
  length = 0;
  readonly streams: ContentStream[] = [];
  constructor(private readonly ctx: InspectContext) {}

  /** Adds a stream's bytes; `alone`: they start a buffer of their own (InspectContext.ownsBufferOf), else they are copied. */
  add(id: number | undefined, part: string, data: Uint8Array, alone: boolean): void {
    const from = this.length;
    const to = from + data.length;
    if (from === 0 && alone) this.bytes = Buffer.from(data.buffer, data.byteOffset, data.buffer.byteLength - data.byteOffset);
    else {
      if (to > this.bytes.length) {
        // Small streams in a buffer that doubles (one as large as the budget, for every PDF, made V8 collect its heap), large
        // ones in one that takes all the file may still decode: grown once, not copied again (a copy is held beside its source).
        const larger = Buffer.allocUnsafeSlow(to <= GROWN_BY_DOUBLING ? Math.max(2 * to, 64 * 1024) : to + this.ctx.decodeBudgetLeft);
        this.bytes.copy(larger, 0, 0, from);
        this.bytes = larger;
      }
      this.bytes.set(data, from);
    }
    this.length = to;
    this.streams.push({ id, from, to, part });
  }
}

/**
 * The text the content streams show, as one text: a page's streams share
 * their state, and a key may span them (PyMuPDF writes a stream per line);
 * each page starts in the default state (a stream that is no page's, a form
 * or a stream of a file whose pages are not found, starts its own). Then, if
 * the file's fonts have ToUnicode maps, the same strings read through them,
 * made in the same pass.
 */
function scanContents(ctx: InspectContext, contents: ContentStreams, fonts: PdfFonts): void {
  const byName = fonts.mapsByName();
  const glyphs = byName === undefined ? undefined : new GlyphText(byName, ctx);
  const pages = pagesOfStreams(fonts.objectBytes());
  const line = new TextLine();
  const streams = contents.bytes;
  // Past OVER_THE_STREAMS, the text is written over the streams; below, beside them, their bytes scanned last (the text
  // made the scanner hot, and V8 has optimised it by now: scanned first, its last functions were still being compiled
  // when the text's scan ended, and the process's exit waits for a compilation under way; a 19 MB PDF: ~9 against ~3 ms).
  const over = contents.length >= OVER_THE_STREAMS;
  // One buffer for all streams' text (a buffer per stream, then their concatenation, cost a tenth of a text PDF's prepare).
  const shown = over ? streams : Buffer.allocUnsafe(2 * contents.length);
  let length = 0;
  let lastPage: number | undefined;
  // Written over, each stream's bytes are scanned before its text is written; what they hold is told after the text's
  // findings, stream by stream, as when they are scanned last.
  const found: (Refusal | undefined)[] = [];
  let foundAny = false;
  for (const { id, from, to, part } of contents.streams) {
    const page = id === undefined ? undefined : pages.get(id);
    if (page === undefined || page !== lastPage) line.newPage();
    lastPage = page;
    const data = streams.subarray(from, to);
    if (over) {
      // After a stream that holds something, the others are only counted: the first is what is told.
      const refusal: Refusal | undefined = foundAny ? undefined : ctx.findLater(part, data);
      foundAny ||= refusal !== undefined;
      found.push(refusal);
    }
    length = showInto(data, shown, length, line, glyphs, over);
  }
  // Also as UTF-16: a font with a Unicode encoding and no map (/UniGB-UCS2-H) shows two-byte codes that are the letters.
  scanText(ctx, "the text its content streams show", shown.subarray(0, length), true, line.abutting);
  glyphs?.scan();
  if (over) for (const refusal of found) ctx.told(refusal);
  else for (const { from, to, part } of contents.streams) ctx.scan(part, streams.subarray(from, to));
}

const CONTENTS = Buffer.from("/Contents", "latin1");

/**
 * The page each content stream belongs to, by object number: a page's
 * `/Contents 12 0 R` or `/Contents [12 0 R 13 0 R]`, the pages numbered as
 * their dictionaries come. An annotation's `/Contents (text)` names no stream.
 */
function pagesOfStreams(objects: readonly Buffer[]): Map<number, number> {
  const pages = new Map<number, number>();
  let page = 0;
  for (const buf of objects) {
    for (let at = buf.indexOf(CONTENTS); at >= 0; at = buf.indexOf(CONTENTS, at + CONTENTS.length)) {
      let k = at + CONTENTS.length;
      if (k < buf.length && ENDS_NAME[buf[k]!] !== 1) continue;
      while (k < buf.length && isBlank(buf[k])) k++;
      page++;
      if (buf[k] !== 0x5b) {
        const id = referenceAt(buf, k);
        if (id >= 0) pages.set(id, page);
        continue;
      }
      // An array of references, read up to its `]` or the first thing that is not one.
      for (k++; ; ) {
        const id = referenceAt(buf, k);
        if (id < 0) break;
        pages.set(id, page);
        k = lastReference.end;
      }
    }
  }
  return pages;
}

/**
 * Whether a stream's first bytes, decoded, open a CMap. A prefix of the
 * compressed bytes is inflated, within the file's budget (a file of many
 * such streams would otherwise inflate without bound); one that does not
 * inflate is a font program, skipped as before.
 */
function startsAsCMap(ctx: InspectContext, part: string, raw: Uint8Array, dict: string, streamFilters: readonly string[], inArray: boolean): boolean {
  if (streamFilters.length === 0) return opensAsCMap(raw);
  if (streamFilters.length > 1 || (streamFilters[0] !== "FlateDecode" && streamFilters[0] !== "Fl")) return false;
  if (predicted(ctx, decodeParmsOf(dict, inArray))) return true;
  try {
    return opensAsCMap(ctx.inflate(part, raw.subarray(0, 1024), "zlib"));
  } catch (err) {
    if (err instanceof Refusal && err.code === "unscannable_content") return false;
    throw err;
  }
}

/**
 * Whether a stream's one Flate filter has a predictor, or parameters that
 * may name one that cannot be read: such a stream is read whole, as any
 * other (where those are refused), not judged by a prefix, whose last row
 * may be cut.
 */
function predicted(ctx: InspectContext, parms: ReturnType<typeof decodeParmsOf>): boolean {
  if (parms === "both") return true;
  try {
    return predictorOf(parms[0], (why) => ctx.unscannable(why)) !== undefined;
  } catch (err) {
    if (err instanceof Refusal && err.code === "unscannable_content") return true;
    throw err;
  }
}

/**
 * The bytes between streams (dictionaries, the Info dictionary, what follows
 * the last %%EOF): as they are, and their strings decoded (a hex string, a
 * literal with escapes, a UTF-16BE title or author).
 */
function scanObjects(ctx: InspectContext, fonts: PdfFonts, objects: Buffer, from: number): void {
  fonts.addObjects(objects);
  ctx.scan("the PDF's objects", objects, from);
  ctx.scanDerivedText("the strings of the PDF's objects", shownText(objects, new StringsApart()));
}

/**
 * The strings of objects (dictionaries' values, not a content stream's):
 * no text state places them, so each is read on a line of its own. Read as
 * shown text, every string after the first ran on from the one before
 * (pypdf's annotation `/Contents (ghp\137…)` after the Info's `(untitled)`
 * read `untitledghp_…`, and a token glued to a word is none).
 */
class StringsApart extends TextLine {
  override separator(): number {
    return 10;
  }
}
