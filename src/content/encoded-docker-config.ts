// A Docker config base64-encoded whole: a Kubernetes image-pull secret's
// `.dockerconfigjson` (`kubectl create secret … -o yaml`), `base64
// ~/.docker/config.json`. Its `auth` is base64 of `user:TOKEN`, so a host's
// token lies base64-encoded inside base64, where neither the value nor its
// base64 forms stand in the file's bytes. Looking for every value's double
// encoding in every file (36 more known values a value) cost every text
// prepare: its known values took twice as long to make and to find first
// (+28 ms on the benchmark's 50 MB). So the encoding of a config's key
// `"auths"` is looked for instead (a native search for each of three
// literals), and the run of base64 that holds it decoded and searched for
// the host's values: its `auth` then holds a value's base64 form, a
// `password` the value itself. Until forms33 (2026-12-05) only a config's
// encoded opening as kubectl and docker write it was looked for: one
// indented with spaces, written with CRLF, or whose first key is another
// (`credsStore`, `HttpHeaders`) was published.
import { type KnownSecrets, MIN_VALUE } from "./known.js";

/**
 * The base64 of `"auths"` at each of the three positions it can take in a
 * run's 3-byte groups, less the characters that depend on the bytes around
 * it, and where the needle starts in its first group (0, 2 or 3
 * characters in): `{"auths":`, `{\n  "auths"`, `{"credsStore":"…","auths"`
 * all hold one. One expression for the three, over every window a file's
 * first reading clears: Irregexp skips by the needles' length (8 MiB of
 * the benchmark's negatives 0.9 ms; three native searches took 6).
 */
const KEY = Buffer.from('"auths"', "latin1");
const NEEDLES = [0, 1, 2].map((skip) => {
  const encoded = Buffer.concat([Buffer.alloc(skip), KEY, Buffer.alloc(2)]).toString("base64");
  // A character is the key's alone when its 6 bits all come from the key's bytes.
  const into = Math.ceil((skip * 8) / 6);
  const last = Math.floor(((skip + KEY.length) * 8) / 6);
  return { needle: encoded.slice(into, last), into };
});
const NEEDLE = new RegExp(NEEDLES.map(({ needle }) => needle).join("|"), "g");
/** What a run of base64 is made of, wrapped (`base64` breaks at 76 columns) or not. */
const BASE64_RUN = new Uint8Array(128);
for (const c of "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=\r\n") BASE64_RUN[c.charCodeAt(0)] = 1;
/** The most base64 read either side of the key: a registry's config is a few hundred bytes. */
const MAX_RUN = 1024 * 1024;
/**
 * The fewest characters of a run that can hold a host's value: `"auths"`,
 * `:{"r":{"auth":"` and a value of MIN_VALUE bytes are 30 bytes. A shorter
 * run is not decoded: 8 MiB of lone keys (`ImF1dGhzIg `), each decoded and
 * searched, took 394 ms where prose takes 38.
 */
const MIN_RUN = Math.ceil(((7 + 15 + MIN_VALUE) * 4) / 3);

/**
 * The first host value found inside a base64-encoded Docker config (a run
 * of base64 that holds the encoding of `"auths"`) that starts before
 * `before` and whose key lies at `from` or after (a window's earlier bytes
 * were judged with the window before it), named as encoded twice (or once,
 * a `password` in clear), at the run's first byte. Each needle reads a
 * byte of `text` at most twice (once back to where the run starts, never
 * past the run it read last; once forward to its end): linear.
 */
export function findInEncodedDockerConfig(text: string, from: number, before: number, known: KnownSecrets): { what: string; index: number } | undefined {
  // Where the run each needle read last ends: a needle's later matches in it are that run's.
  const readTo = [0, 0, 0];
  NEEDLE.lastIndex = from;
  for (let m = NEEDLE.exec(text); m; m = NEEDLE.exec(text)) {
    const j = m.index;
    NEEDLE.lastIndex = j + 1;
    const k = NEEDLES.findIndex(({ needle }) => needle === m[0]);
    if (j < readTo[k]!) continue;
    const start = runStart(text, j - NEEDLES[k]!.into, Math.max(readTo[k]!, j - MAX_RUN));
    if (start < 0) continue;
    if (start >= before) break;
    let end = j;
    while (end < text.length && end - j < MAX_RUN && BASE64_RUN[text.charCodeAt(end)] === 1) end++;
    readTo[k] = end;
    if (end - start < MIN_RUN) continue;
    const hit = known.find(Buffer.from(text.slice(start, end), "base64"));
    if (hit) return { what: `the value of ${hit.name.endsWith(", base64-encoded") ? `${hit.name} twice` : `${hit.name}, base64-encoded`}`, index: start };
  }
  return undefined;
}

/**
 * Where the run of base64 whose 4-character group starts at `group` starts,
 * at a group's first character: back over base64 and line breaks (not a
 * `=`: padding ends a run, and `NAME=eyJ…` names one), no further than
 * `limit`, then forward past the characters that would put the decoding
 * out of step with `group` (a word just before a wrapped run's first line).
 * -1 where `group` is not in the run (the needle's first group cut short).
 */
function runStart(text: string, group: number, limit: number): number {
  if (group < limit) return -1;
  for (let k = group; k < group + 4; k++) if (!isBase64Char(text.charCodeAt(k))) return -1;
  let start = group;
  let count = 0;
  while (start > limit) {
    const c = text.charCodeAt(start - 1);
    if (c === 10 || c === 13) start--;
    else if (c !== 61 && BASE64_RUN[c] === 1) {
      start--;
      count++;
    } else break;
  }
  // Out of step by count % 4 characters: those are passed over, and the line breaks among them.
  for (let skip = count % 4; skip > 0; start++) if (isBase64Char(text.charCodeAt(start))) skip--;
  while (!isBase64Char(text.charCodeAt(start))) start++;
  return start;
}

const isBase64Char = (c: number) => c !== 10 && c !== 13 && c !== 61 && BASE64_RUN[c] === 1;
