// What file-type says a staged file is. file-type/core over strtok3's file
// tokenizer: what file-type's Node entry's fileTypeFromFile does, without that
// entry's stream imports, which cost every run start-up time and are never
// used here. A small file is judged from the bytes kept in memory while
// staging: the same bytes, no second read.
//
// file-type tells an Office file (docx, xlsx, pptx…) from a plain zip by the
// first entry it meets walking the local headers, [Content_Types].xml, which
// it inflates through Node's web streams: loading them costs a document's
// prepare ~6 ms of its ~110. When that entry comes first (as Word, Excel,
// LibreOffice and python-docx write it), it is inflated here with node:zlib
// and handed to file-type stored, alone, behind the same local header:
// file-type reads the same XML and answers as it would (test/sniff.test.ts
// holds the two to the same answers, on damaged files too). Any other zip,
// or an answer of plain `zip`, goes to file-type as it is.
import { Buffer } from "node:buffer";
import { readAt } from "../core/read-at.js";
import type { ContentSource } from "./content.js";

export interface Sniffed {
  ext: string;
  mime: string;
}

const CONTENT_TYPES = "[Content_Types].xml";
/** What file-type reads of a zip entry for detection (core.js maximumZipTextEntrySizeInBytes). */
const MAX_DETECTION_ENTRY = 1024 * 1024;

/**
 * The file's first entry, [Content_Types].xml, inflated and stored behind a
 * copy of its local header (method 0, sizes and CRC of the inflated bytes, no
 * extra field); undefined when file-type would read it otherwise (stored, with
 * a data descriptor, larger than it reads, not inflating to its very end).
 */
function storedContentTypes(b: Buffer): Buffer | undefined {
  const nameLength = b.readUInt16LE(26);
  const flags = b.readUInt16LE(6);
  const compressed = b.readUInt32LE(18);
  if (flags & 0x08 || b.readUInt16LE(8) !== 8 || compressed > MAX_DETECTION_ENTRY || b.readUInt32LE(22) > MAX_DETECTION_ENTRY) return undefined;
  if (b.toString("latin1", 30, 30 + nameLength) !== CONTENT_TYPES) return undefined;
  const start = 30 + nameLength + b.readUInt16LE(28);
  if (start + compressed > b.length) return undefined;
  const zlib = process.getBuiltinModule("node:zlib");
  let result: { buffer: Buffer; engine: { bytesWritten: number } };
  try {
    // With `info`, node:zlib answers the output and its engine, whose bytesWritten counts the input it took.
    result = zlib.inflateRawSync(b.subarray(start, start + compressed), { maxOutputLength: MAX_DETECTION_ENTRY, info: true }) as unknown as typeof result;
  } catch {
    return undefined;
  }
  const xml = result.buffer;
  if (result.engine.bytesWritten !== compressed) return undefined;
  const header = Buffer.from(b.subarray(0, 30 + nameLength));
  header.writeUInt16LE(0, 8);
  header.writeUInt32LE(zlib.crc32(xml), 14);
  header.writeUInt32LE(xml.length, 18);
  header.writeUInt32LE(xml.length, 22);
  header.writeUInt16LE(0, 28);
  return Buffer.concat([header, xml]);
}

const isZip = (b: Uint8Array) => b.length >= 30 && b[0] === 0x50 && b[1] === 0x4b && b[2] === 0x03 && b[3] === 0x04;

/** The bytes of a staged file up to the end of its first zip entry's data, when that is all file-type could read of it for detection. */
function firstEntryOf(staged: ContentSource): Buffer | undefined {
  const read = (length: number) => {
    const b = Buffer.allocUnsafe(Math.min(length, staged.bytes));
    return b.subarray(0, readAt(staged.fd, b, 0));
  };
  const head = read(30);
  if (!isZip(head) || head.readUInt32LE(18) > MAX_DETECTION_ENTRY) return undefined;
  return read(30 + head.readUInt16LE(26) + head.readUInt16LE(28) + head.readUInt32LE(18));
}

/** What file-type says the staged file is. */
export async function sniff(staged: ContentSource): Promise<Sniffed | undefined> {
  const { fileTypeFromBuffer, fileTypeFromTokenizer } = await import("file-type/core");
  const zip = staged.content ? (isZip(staged.content) ? staged.content : undefined) : firstEntryOf(staged);
  const stored = zip && storedContentTypes(zip);
  const office = stored && (await fileTypeFromBuffer(stored));
  if (office && office.ext !== "zip") return office;
  if (staged.content) return fileTypeFromBuffer(staged.content);
  const { fromFile } = await import("strtok3");
  const tokenizer = await fromFile(staged.path ?? `/proc/self/fd/${staged.fd}`, { regularFileOnly: true });
  try {
    return await fileTypeFromTokenizer(tokenizer);
  } finally {
    await tokenizer.close();
  }
}
