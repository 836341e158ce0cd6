// A minimal valid PNG (8-bit RGB), for doctor's end-to-end probe and the tests:
// real bytes that file-type recognises, without an image library.
import zlib from "node:zlib";

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

function chunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(4);
  head.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(zlib.crc32(body));
  return Buffer.concat([head, body, crc]);
}

/** A `size` x `size` PNG whose pixels come from `pixel(i)` (one byte each channel). */
export function makePng(size: number, pixel: (i: number) => number): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // colour type: RGB
  const row = 1 + size * 3;
  const raw = Buffer.alloc(size * row);
  // Each row starts with filter type 0.
  for (let i = 0; i < raw.length; i++) raw[i] = i % row === 0 ? 0 : pixel(i) & 0xff;
  return Buffer.concat([SIGNATURE, chunk("IHDR", ihdr), chunk("IDAT", zlib.deflateSync(raw)), chunk("IEND", Buffer.alloc(0))]);
}
