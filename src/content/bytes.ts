// Numbers and names read from a file's bytes, as the format readers read
// them (images, audio and video, zip, tar).

export const u32be = (b: Uint8Array, i: number) => ((b[i]! << 24) >>> 0) + (b[i + 1]! << 16) + (b[i + 2]! << 8) + b[i + 3]!;
export const u32le = (b: Uint8Array, i: number) => b[i]! + (b[i + 1]! << 8) + (b[i + 2]! << 16) + ((b[i + 3]! << 24) >>> 0);
/** `n` bytes from `i`, a character each (a chunk type, a magic string). */
export const ascii = (b: Uint8Array, i: number, n: number) => Buffer.from(b.buffer, b.byteOffset + i, n).toString("latin1");
/** Whether `b` holds `text` (Latin-1) at `at`: false, not a read past its end, where it is too short. */
export const holds = (b: Uint8Array, at: number, text: string) => b.length >= at + text.length && ascii(b, at, text.length) === text;

/** A hex digit's value; -1 for any other byte (PDF's hex strings, RTF's \'hh and object data). */
export const HEX_VALUE = new Int8Array(256).fill(-1);
for (const [i, c] of [..."0123456789abcdef"].entries()) HEX_VALUE[c.charCodeAt(0)] = HEX_VALUE[c.toUpperCase().charCodeAt(0)] = i;
