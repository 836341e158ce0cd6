// The samples of a video's text tracks (subtitles, captions: mov_text/tx3g
// and WebVTT in an mp4 or mov, S_TEXT and WebVTT in Matroska and WebM):
// unlike audio and video samples they hold text a person wrote, which any
// player shows, so their text is read; the readers (iso-media.ts,
// matroska.ts) find the samples, this module bounds what they read and
// scans it.
//
// A crafted sample index can name any number of samples anywhere in the
// file: a file may have at most MAX_TEXT_SAMPLES text samples read, of
// MAX_TEXT_BYTES in all (a feature film's subtitles are a few thousand
// samples, a few hundred KB); past that it is refused, not read further.
import type { InspectContext } from "./inspect.js";

/** Text samples one file may have read, in all its text tracks. */
export const MAX_TEXT_SAMPLES = 100_000;
/** Bytes of text samples one file may have read, in all its text tracks. */
export const MAX_TEXT_BYTES = 16 * 1024 * 1024;

const NEWLINE = Buffer.from("\n");

/** What one file's text tracks have cost so far; each track's text collected, then scanned as one text. */
export class TextSamples {
  private samples = 0;
  private bytes = 0;

  constructor(private readonly ctx: InspectContext) {}

  /** Counts `count` samples of `track` before they are read: past MAX_TEXT_SAMPLES, refused. */
  willRead(track: string, count: number): void {
    this.samples += count;
    if (this.samples > MAX_TEXT_SAMPLES) throw this.tooMuch(`its text tracks hold more than ${MAX_TEXT_SAMPLES.toLocaleString("en")} samples`, track);
  }

  /** Counts `length` bytes of `track`'s samples before they are read: past MAX_TEXT_BYTES, refused. */
  willReadBytes(track: string, length: number): void {
    this.bytes += length;
    if (this.bytes > MAX_TEXT_BYTES) throw this.tooMuch(`its text tracks' samples hold more than ${MAX_TEXT_BYTES / (1024 * 1024)} MiB`, track);
  }

  /** The refusal of text tracks past a bound (`past`: which, in words), `track` among them: one message and one remedy for both. */
  private tooMuch(past: string, track: string): Error {
    return this.ctx.unscannable(`${past} (${track} among them), more than this check reads`, "send the subtitles as a file of their own");
  }

  /** Scans `pieces` (the text of `track`'s samples, in order) as one text, a line break between two. */
  scanTrack(track: string, pieces: Uint8Array[]): void {
    if (pieces.length === 0) return;
    const text = Buffer.concat(pieces.flatMap((p, i) => (i === 0 ? [p] : [NEWLINE, p])));
    this.ctx.scanDerivedText(`its ${track}`, text);
  }
}
