// A Docker config base64-encoded whole: a Kubernetes image-pull secret's
// `.dockerconfigjson` (`kubectl create secret … -o yaml`), `base64
// ~/.docker/config.json`. Its `auth` is base64 of `user:TOKEN`, so a host's
// token lies base64-encoded inside base64, where neither the value nor its
// base64 forms stand in the file's bytes. Looking for every value's double
// encoding in every file (36 more known values a value) cost every text
// prepare: its known values took twice as long to make and to find first
// (+28 ms on the benchmark's 50 MB). So a config's encoded opening, as
// kubectl and docker write it, is looked for instead (a native search for
// each of a few literals), and the run of base64 after it decoded and
// searched for the host's values: its `auth` then holds a value's base64
// form, a `password` the value itself.
import type { KnownSecrets } from "./known.js";

/**
 * The base64 of a config's first bytes, as kubectl writes it (compact JSON)
 * and as `docker login` writes it (a tab), cut at a whole number of 3-byte
 * groups: those characters do not depend on what follows. Each is a native
 * search of every window a file's first reading clears: two more (a
 * formatter's two or four spaces) cost 50 MB of prose ~14 ms.
 */
const OPENINGS = ['{"auths":', '{\n\t"auths'].map((opening) => {
  const encoded = Buffer.from(opening, "latin1").toString("base64");
  // Searched from its `J` (eyJ…, ewoJ…): V8 runs to a needle's first character, and an `e` is every tenth of prose.
  const from = encoded.indexOf("J");
  return { encoded, needle: encoded.slice(from), lead: from };
});
/** What a run of base64 is made of, wrapped (`base64` breaks at 76 columns) or not. */
const BASE64_RUN = new Uint8Array(128);
for (const c of "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=\r\n") BASE64_RUN[c.charCodeAt(0)] = 1;
/** The most base64 decoded a config: a registry's config is a few hundred bytes. */
const MAX_RUN = 1024 * 1024;

/**
 * The first host value found inside a base64-encoded Docker config whose
 * encoding starts in [from, before) of `text` (a byte a character), named
 * as encoded twice (or once, a `password` in clear), at its opening. Each
 * run is read once, whichever opening finds it: linear.
 */
export function findInEncodedDockerConfig(text: string, from: number, before: number, known: KnownSecrets): { what: string; index: number } | undefined {
  for (const { encoded, needle, lead } of OPENINGS) {
    for (let j = text.indexOf(needle, from + lead); j >= 0 && j - lead < before; ) {
      const i = j - lead;
      if (!text.startsWith(encoded, i)) {
        j = text.indexOf(needle, j + 1);
        continue;
      }
      let end = i;
      while (end < text.length && end - i < MAX_RUN && BASE64_RUN[text.charCodeAt(end)] === 1) end++;
      const hit = known.find(Buffer.from(text.slice(i, end), "base64"));
      if (hit) return { what: `the value of ${hit.name.endsWith(", base64-encoded") ? `${hit.name} twice` : `${hit.name}, base64-encoded`}`, index: i };
      j = text.indexOf(needle, end);
    }
  }
  return undefined;
}
