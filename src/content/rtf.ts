// RTF (file-type's `rtf`): scanned as its bytes, and as its text. Word
// cuts a paragraph into groups wherever its revision marks or formatting
// change (`{\rtlch\fcs1 \af0 \insrsid1234 ghp_ab}{\insrsid5678 cd}`) and
// breaks its lines every so often inside words (readers ignore CR and LF),
// so a key the bytes hold in pieces is whole in the text.
//
// The text is the file with control words and their parameters, braces and
// line breaks taken out, `\'hh` decoded (as a Latin-1 byte), `\uN` turned
// into its character (narrowed to a byte as utf16.ts does: above U+00FF,
// 0x80) with its fallback skipped, the paragraph, line, cell and row marks
// turned into line breaks and tabs (two paragraphs are not one token), and
// `\binN`'s N bytes skipped. Destinations (`{\*\...}`, the font and style
// tables, `\info` and its fields, annotations, fields, shapes' properties)
// keep their text, set apart by line breaks: a key may sit in the
// document's properties or a comment, and the author's name is not the
// title's first word. One pass, bytes in and bytes out.
//
// An embedded object (`{\*\objdata hex}`: an OLE1 object, whose data is a
// compound file, or an OLE package holding a file) is decoded from its hex
// and scanned, and its data read by its reader; a picture's hex is not
// decoded (its pixels, in the text as hex digits).
//
// A file that stores text it does not show is also read as shown (since
// red-team pass 33): without hidden text (`{\v …}`), tracked deletions
// (`{\deleted …}`), a field's instructions (`\fldinst`: its result is
// shown, in the line) and the destinations `\*` marks as ignorable (the
// bookmark `{\*\bkmkstart _GoBack}` Word writes at the last edit), whose
// text otherwise lies between a key's halves: Word and pandoc show the key
// whole. Beside the text, never instead (a key may be hidden text).
import { HEX_VALUE } from "./bytes.js";
import { packagedFile } from "./cfb.js";
import { readInside } from "./images.js";
import type { InspectContext } from "./inspect.js";

export function inspectRtf(b: Uint8Array, ctx: InspectContext): void {
  ctx.scan("its RTF source", b, 0);
  const reader = new RtfTextReader(b);
  ctx.scanDerivedText("the text of the RTF file", reader.read());
  if (reader.hides) ctx.scanDerivedText("the text of the RTF file as shown", new RtfTextReader(b, true).read());
  rtfObjects(b).forEach((object, k) => {
    const part = `its embedded object ${k + 1}`;
    ctx.scan(part, object);
    const native = nativeData(object);
    if (!native) return;
    // The packaged file first, as a compound file's (cfb.ts), then the object's data, a zip at its end included.
    const packaged = native.className === "Package" ? packagedFile(native.data, 2) : undefined;
    if (packaged) readInside(ctx, `the file packaged in ${part}`, packaged);
    readInside(ctx, part, native.data);
  });
}

const OBJDATA = Buffer.from("\\objdata", "latin1");

/** The data of each `\objdata` destination, its hex decoded (spaces and line breaks between the digits skipped), up to the brace that ends it. */
export function rtfObjects(b: Uint8Array): Buffer[] {
  const src = Buffer.from(b.buffer, b.byteOffset, b.length);
  const objects: Buffer[] = [];
  for (let at = src.indexOf(OBJDATA); at >= 0; at = src.indexOf(OBJDATA, at)) {
    const from = at + OBJDATA.length;
    const brace = src.indexOf(0x7d, from);
    const end = brace < 0 ? src.length : brace;
    const out = Buffer.allocUnsafe((end - from) >> 1);
    let n = 0;
    let high = -1;
    for (let i = from; i < end; i++) {
      const digit = HEX_VALUE[src[i]!]!;
      if (digit < 0) continue;
      if (high < 0) high = digit;
      else {
        out[n++] = high * 16 + digit;
        high = -1;
      }
    }
    objects.push(out.subarray(0, n));
    at = end;
  }
  return objects;
}

/**
 * An OLE1 embedded object's class and native data ([MS-OLEDS] 2.2.4 and
 * 2.2.5: version, format 2, the class, topic and item names each with its
 * length first, then the data with its length first); undefined for a
 * linked object or one cut short.
 */
function nativeData(o: Buffer): { className: string; data: Buffer } | undefined {
  if (o.length < 8 || o.readUInt32LE(4) !== 2) return undefined;
  let at = 8;
  let className = "";
  for (let name = 0; name < 3; name++) {
    if (at + 4 > o.length) return undefined;
    const length = o.readUInt32LE(at);
    if (name === 0) className = o.toString("latin1", at + 4, Math.min(o.length, at + 4 + length, at + 4 + 256)).split("\0")[0]!;
    at += 4 + length;
  }
  if (at + 4 > o.length) return undefined;
  const size = o.readUInt32LE(at);
  return at + 4 + size <= o.length ? { className, data: o.subarray(at + 4, at + 4 + size) } : undefined;
}

const NEWLINE = 1;
const TAB = 2;
const SPACE = 3;
/** A character no token holds (a typographic quote or dash): narrowed as a code unit above U+00FF is. */
const OTHER = 4;
const UNICODE = 5;
const UNICODE_SKIP = 6;
const BINARY = 7;
const DESTINATION = 8;
/** Character formatting that hides its text (`\v`, `\deleted`; a parameter of 0 ends it), and `\plain`, which ends both. */
const VANISH = 9;
const DELETED = 10;
const PLAIN = 11;

/** What hides a group's text in the shown reading: an ignorable destination or a field's instructions, hidden text, deleted text. */
const IGNORED = 1;
const HIDDEN = 2;
const STRUCK = 4;

/** Groups whose state (\ucN, destination) is kept on a stack: Word nests tens; deeper ones share their parent's. */
const MAX_DEPTH = 4096;
/** A control word's letters as a number (five bits each): up to ten letters, longer ones are none of those below. */
const MAX_WORD = 10;
const wordCode = (word: string) => [...word].reduce((code, c) => code * 32 + (c.charCodeAt(0) & 31), 0);

/** The control words that stand for a character or open a destination; every other one is dropped with its parameter. */
const WORDS = new Map<number, number>([
  ...["par", "line", "row", "sect", "page", "nestrow", "column"].map((w) => [wordCode(w), NEWLINE] as const),
  ...["tab", "cell", "nestcell"].map((w) => [wordCode(w), TAB] as const),
  ...["emspace", "enspace", "qmspace"].map((w) => [wordCode(w), SPACE] as const),
  ...["lquote", "rquote", "ldblquote", "rdblquote", "bullet", "endash", "emdash"].map((w) => [wordCode(w), OTHER] as const),
  [wordCode("u"), UNICODE],
  [wordCode("uc"), UNICODE_SKIP],
  [wordCode("bin"), BINARY],
  [wordCode("v"), VANISH],
  [wordCode("deleted"), DELETED],
  [wordCode("plain"), PLAIN],
  // Groups of their own text (those `\*` does not mark), set apart from what surrounds them.
  ...["info", "title", "subject", "author", "manager", "company", "operator", "category", "keywords", "comment", "doccomm", "hlinkbase", "fonttbl", "colortbl", "stylesheet", "field", "fldinst", "fldrslt", "footnote", "header", "footer", "headerl", "headerr", "headerf", "footerl", "footerr", "footerf", "pict", "object", "objdata", "txe", "xe", "tc", "sp", "sn", "sv", "shptxt"].map((w) => [wordCode(w), DESTINATION] as const),
]);

/** The bytes that end a run of text: CR, LF, braces and the backslash. */
const SPECIAL = new Uint8Array(256);
for (const c of [0x0d, 0x0a, 0x7b, 0x7d, 0x5c]) SPECIAL[c] = 1;
const isLetter = (c: number) => (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a);
const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
/** What a character-standing control word writes. */
const CHARACTER: Record<number, number> = { [NEWLINE]: 0x0a, [TAB]: 0x09, [SPACE]: 0x20, [OTHER]: 0x80 };

/** Destinations whose text is the line's in the shown reading (a field's result), and the one that is not shown (its instructions). */
const FIELD = wordCode("field");
const FIELD_RESULT = wordCode("fldrslt");
const FIELD_INSTRUCTIONS = wordCode("fldinst");

/** The text of an RTF file (see the head of this file), `shown`: as shown; never longer than the file. */
export function rtfText(b: Uint8Array, shown = false): Buffer {
  return new RtfTextReader(b, shown).read();
}

/** One pass over an RTF file's bytes: each kind of token read by a method of its own, the text written as it goes. */
class RtfTextReader {
  // The two line breaks a destination adds stand for at least its four bytes (`{\*}`): the text is never longer than the file.
  private readonly out: Buffer;
  private n = 0;
  private i = 0;
  // Kept per group: \ucN (the fallback characters after each \uN), what hides its text (shown reading) and whether the group is a
  // destination, as uc * 16 + hide * 2 + 1 for one.
  private readonly outer: number[] = [];
  // Groups opened past MAX_DEPTH: they keep the state of the group around them (45 MB of `{` held 1 GB as a stack of states).
  private deeper = 0;
  private uc = 1;
  private destination = false;
  // Right after a brace: the group's first control word says whether it is a destination.
  private groupStart = false;
  // Fallback characters still to skip after a \uN: each a byte, a \'hh or a control word; a brace ends them.
  private skip = 0;
  // In the shown reading, what hides the text here (IGNORED, HIDDEN, STRUCK): nothing is written while it is not 0.
  private hide = 0;
  /** Whether the file holds text the shown reading leaves out (set in either reading). */
  hides = false;

  constructor(
    private readonly b: Uint8Array,
    private readonly shown = false,
  ) {
    this.out = Buffer.allocUnsafe(b.length);
  }

  read(): Buffer {
    const b = this.b;
    while (this.i < b.length) {
      const c = b[this.i]!;
      if (c === 0x0d || c === 0x0a) this.i++;
      else if (c === 0x7b) this.openGroup();
      else if (c === 0x7d) this.closeGroup();
      else if (c !== 0x5c) this.textRun();
      else if (this.i + 1 < b.length && isLetter(b[this.i + 1]!)) this.controlWord();
      else if (b[this.i + 1] === 0x27) this.hexByte();
      else this.controlSymbol();
    }
    return this.out.subarray(0, this.n);
  }

  private openGroup(): void {
    if (this.outer.length < MAX_DEPTH) this.outer.push(this.uc * 16 + this.hide * 2 + (this.destination ? 1 : 0));
    else this.deeper++;
    this.destination = false;
    this.groupStart = true;
    this.skip = 0;
    this.i++;
  }

  private closeGroup(): void {
    if (this.destination && this.hide === 0) this.out[this.n++] = 0x0a;
    if (this.deeper > 0) this.deeper--;
    else {
      const kept = this.outer.pop();
      if (kept !== undefined) {
        this.uc = Math.floor(kept / 16);
        this.hide = Math.floor(kept / 2) % 8;
        this.destination = kept % 2 === 1;
      }
    }
    this.groupStart = false;
    this.skip = 0;
    this.i++;
  }

  /** A run of text, but for the fallback characters a \uN skips. */
  private textRun(): void {
    const { b, out } = this;
    let i = this.i;
    this.groupStart = false;
    for (; this.skip > 0 && i < b.length && !SPECIAL[b[i]!]; i++) this.skip--;
    if (this.hide !== 0) {
      while (i < b.length && !SPECIAL[b[i]!]) i++;
      this.i = i;
      return;
    }
    let n = this.n;
    for (; i < b.length && !SPECIAL[b[i]!]; i++) out[n++] = b[i]!;
    this.n = n;
    this.i = i;
  }

  /** A control word, its parameter (-?digits), and the space that may end it. */
  private controlWord(): void {
    const b = this.b;
    let j = this.i + 1;
    let code = 0;
    for (; j < b.length && isLetter(b[j]!); j++) code = code >= 0 && j - this.i <= MAX_WORD ? code * 32 + (b[j]! & 31) : -1;
    const negative = b[j] === 0x2d && j + 1 < b.length && isDigit(b[j + 1]!);
    if (negative) j++;
    let param: number | undefined;
    for (; j < b.length && isDigit(b[j]!); j++) param = Math.min(1e9, (param ?? 0) * 10 + (b[j]! - 0x30));
    if (negative && param !== undefined) param = -param;
    if (b[j] === 0x20) j++;
    this.i = j;
    const kind = WORDS.get(code);
    if (kind === DESTINATION && this.groupStart && code === FIELD_INSTRUCTIONS) this.hidden(IGNORED, true);
    // A field and its result are in the line where it stands in the shown reading.
    this.startDestination(kind === DESTINATION && !(this.shown && (code === FIELD || code === FIELD_RESULT || code === FIELD_INSTRUCTIONS)));
    if (kind === BINARY) {
      // Binary data: its bytes are no text (the scan of the bytes reads them).
      this.i = Math.min(b.length, this.i + Math.max(0, param ?? 0));
    } else if (this.skip > 0) {
      this.skip--;
    } else if (kind === UNICODE && param !== undefined) {
      const unit = param < 0 ? param + 0x10000 : param;
      if (this.hide === 0) this.out[this.n++] = unit >= 0 && unit < 0x100 ? unit : 0x80;
      this.skip = this.uc;
    } else if (kind === UNICODE_SKIP) {
      this.uc = Math.max(0, param ?? 1);
    } else if (kind === VANISH || kind === DELETED) {
      this.hidden(kind === VANISH ? HIDDEN : STRUCK, param !== 0);
    } else if (kind === PLAIN) {
      this.hidden(HIDDEN | STRUCK, false);
    } else if (kind !== undefined && CHARACTER[kind] !== undefined && this.hide === 0) {
      this.out[this.n++] = CHARACTER[kind]!;
    }
  }

  /** \'hh: a byte in the document's code page. */
  private hexByte(): void {
    const b = this.b;
    const i = this.i;
    this.groupStart = false;
    const high = i + 3 < b.length ? HEX_VALUE[b[i + 2]!]! : -1;
    const low = i + 3 < b.length ? HEX_VALUE[b[i + 3]!]! : -1;
    if (high >= 0 && low >= 0) {
      this.put(high * 16 + low);
      this.i += 4;
    } else {
      this.i += 2;
    }
  }

  /** A control symbol: \* (a destination follows), an escaped character, a space or a hyphen, a paragraph (a backslash before a line break). */
  private controlSymbol(): void {
    const symbol = this.b[this.i + 1];
    this.i += 2;
    if (symbol === 0x2a && this.groupStart) this.hidden(IGNORED, true);
    this.startDestination(symbol === 0x2a && !this.shown);
    if (symbol === 0x5c || symbol === 0x7b || symbol === 0x7d) this.put(symbol);
    else if (symbol === 0x7e) this.put(0x20);
    else if (symbol === 0x5f) this.put(0x2d);
    else if (symbol === 0x0d || symbol === 0x0a) this.put(0x0a);
    else if (this.skip > 0) this.skip--;
  }

  private put(c: number): void {
    if (this.skip > 0) this.skip--;
    else if (this.hide === 0) this.out[this.n++] = c;
  }

  private startDestination(isOne: boolean): void {
    if (this.groupStart && isOne && !this.destination) {
      this.destination = true;
      if (this.hide === 0) this.out[this.n++] = 0x0a;
    }
    this.groupStart = false;
  }

  /** Sets (`on`) or ends what hides the text here (`what`), in the shown reading; in either, notes that the file holds such text. */
  private hidden(what: number, on: boolean): void {
    if (on) this.hides = true;
    if (this.shown) this.hide = on ? this.hide | what : this.hide & ~what;
  }
}
