// Minimal valid PNG generator (node: built-ins only).
import zlib from "node:zlib";
import crypto from "node:crypto";

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

function crc32(buf) {
  let c = 0xffffffff;
  for (let i = 0; i < buf.length; i++) c = CRC_TABLE[(c ^ buf[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type, data) {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type, "ascii"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(td));
  return Buffer.concat([len, td, crc]);
}

/**
 * Build a valid RGB 8-bit PNG of noise pixels.
 * @param {{width?: number, height?: number, seed?: number}} opts
 * Default 184x184 RGB noise gives ~100 KB (noise is incompressible).
 */
export function makePng({ width = 184, height = 184, seed = 0 } = {}) {
  const rowLen = width * 3 + 1;
  const raw = Buffer.alloc(rowLen * height);
  // deterministic noise from seed
  let off = 0;
  let counter = 0;
  while (off < raw.length) {
    const h = crypto.createHash("sha256").update(`${seed}:${counter++}`).digest();
    off += h.copy(raw, off);
  }
  for (let y = 0; y < height; y++) raw[y * rowLen] = 0; // filter type None
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // color type RGB
  ihdr[10] = 0; ihdr[11] = 0; ihdr[12] = 0;
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr),
    chunk("IDAT", zlib.deflateSync(raw)),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}
