import { usageError } from "./errors.js";
import { quoteText } from "./escape.js";

/** Days are exactly 24 h everywhere: retention, the ledger's grace day, "expiring in 24h". */
export const DAY_MS = 86_400_000;

const SIZE_UNITS: Record<string, number> = {
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
  pb: 1e15,
  k: 1024,
  kib: 1024,
  m: 1024 ** 2,
  mib: 1024 ** 2,
  g: 1024 ** 3,
  gib: 1024 ** 3,
  t: 1024 ** 4,
  tib: 1024 ** 4,
  // The limit is named in PiB (formatLimit): it must read back.
  p: 1024 ** 5,
  pib: 1024 ** 5,
};

/** The largest size any option takes: 1 PiB, far past any disk, well inside exact integers. */
export const MAX_SIZE_BYTES = 1024 ** 5;
/** The longest duration any option takes: 100 years (36500d), well inside what a Date can hold. */
export const MAX_DURATION_MS = 36_500 * DAY_MS;

function tooLarge(what: string, value: string | number, limit: string): never {
  const shown = typeof value === "number" ? String(value) : quoteText(value);
  throw usageError(`${what}: ${shown} is more than the limit of ${limit}`);
}

/**
 * Parses `20MB` (decimal), `50MiB` or `50M` (binary, as systemd reads it), or
 * plain bytes, at most `max` (default 1 PiB). Throws a usage error naming
 * `what` (and the limit, when it is passed) on anything else.
 */
export function parseSize(value: string | number, what = "size", max = MAX_SIZE_BYTES): number {
  if (typeof value === "number") {
    if (Number.isFinite(value) && value > max) tooLarge(what, value, formatLimit(max));
    if (Number.isSafeInteger(value) && value > 0) return value;
    throw usageError(`${what} must be a positive whole number of bytes, got ${value}`);
  }
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(value);
  const unit = m ? SIZE_UNITS[(m[2] || "b").toLowerCase()] : undefined;
  if (!m || unit === undefined) {
    throw usageError(`${what}: cannot read ${quoteText(value)} as a size (use e.g. 20MB, 50MiB or 1048576)`);
  }
  const bytes = Math.floor(Number(m[1]) * unit);
  if (bytes > max) tooLarge(what, value, formatLimit(max));
  if (!Number.isSafeInteger(bytes) || bytes <= 0) throw usageError(`${what} must be greater than zero, got ${quoteText(value)}`);
  return bytes;
}

/** A limit as a person reads it: `1 PiB`, `50 MB`. */
function formatLimit(bytes: number): string {
  return bytes === MAX_SIZE_BYTES ? "1PiB" : formatBytes(bytes);
}

const DURATION_UNITS: Record<string, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  min: 60_000,
  h: 3_600_000,
  d: DAY_MS,
  w: 604_800_000,
};

/**
 * Parses `14d`, `1h30m`, `90s`, `500ms` into milliseconds; a plain number is
 * seconds. Days are exactly 24 h. At most `max` (default 100 years, named in
 * the message as `maxText`).
 */
export function parseDuration(value: string | number, what = "duration", max = MAX_DURATION_MS, maxText = "36500d (100 years)"): number {
  const within = (ms: number) => (ms > max ? tooLarge(what, value, maxText) : ms);
  if (typeof value === "number") {
    if (Number.isFinite(value) && value >= 0) return within(value * 1000);
    if (value === Number.POSITIVE_INFINITY) tooLarge(what, value, maxText);
    throw usageError(`${what} must be a non-negative number of seconds, got ${value}`);
  }
  const text = value.trim();
  if (/^\d+(?:\.\d+)?$/.test(text)) return within(Number(text) * 1000);
  const part = /(\d+(?:\.\d+)?)\s*(ms|min|s|m|h|d|w)/gy;
  let total = 0;
  let end = 0;
  for (let m = part.exec(text); m; m = part.exec(text)) {
    total += Number(m[1]) * DURATION_UNITS[m[2]!]!;
    end = part.lastIndex;
  }
  if (text === "" || end !== text.length) {
    throw usageError(`${what}: cannot read ${quoteText(value)} as a duration (use e.g. 14d, 1h, 30m, 5s)`);
  }
  return within(total);
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = bytes;
  let i = -1;
  do {
    v /= 1024;
    i++;
  } while (v >= 1024 && i < units.length - 1);
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

/** A file mode's permission bits as `chmod` takes them: 0750. */
export function formatMode(mode: number): string {
  return (mode & 0o7777).toString(8).padStart(4, "0");
}

export function formatDuration(ms: number): string {
  const abs = Math.abs(ms);
  const sign = ms < 0 ? "-" : "";
  if (abs < 60_000) return `${sign}${Math.round(abs / 1000)}s`;
  if (abs < 3_600_000) return `${sign}${Math.round(abs / 60_000)}m`;
  if (abs < 86_400_000) return `${sign}${(abs / 3_600_000).toFixed(1)}h`;
  return `${sign}${(abs / 86_400_000).toFixed(1)}d`;
}
