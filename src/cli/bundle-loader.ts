// Loads a command bundle with a V8 code cache made at build time. The agent
// runs `prepare` once per file, so start-up counts: with the cache, V8 neither
// parses the bundle nor compiles the functions a typical run calls.
//
// V8 checks a cache only against the source's length, so the cache file holds
// a copy of the exact source it was made from, compared byte for byte (a
// memcmp): any other source (a rebuild, an edit of the same length) is
// compiled the ordinary way. A hash would do the same, but loading node:crypto
// costs a command that needs no hash ~7 ms. A cache V8 itself refuses (another
// Node version) costs nothing but the wasted read.
import fs from "node:fs";
import Module from "node:module";
import path from "node:path";
import vm from "node:vm";

const MAGIC = "media-outbox code cache 2 ";

export const cacheFileFor = (bundle: string) => `${bundle}.cache`;

interface Loaded {
  exports: unknown;
  script: vm.Script;
  source: Buffer;
}

/** The V8 data of the cache file when it was made from exactly `source`. */
function readCache(bundle: string, source: Buffer): Buffer | undefined {
  let data: Buffer;
  try {
    data = fs.readFileSync(cacheFileFor(bundle));
  } catch {
    return undefined;
  }
  const header = `${MAGIC}${source.length}\n`;
  if (data.length < header.length + source.length || data.toString("latin1", 0, header.length) !== header) return undefined;
  const start = header.length + source.length;
  return data.subarray(header.length, start).equals(source) ? data.subarray(start) : undefined;
}

function compile(bundle: string): Loaded {
  const source = fs.readFileSync(bundle);
  const cachedData = readCache(bundle, source);
  const script = new vm.Script(Module.wrap(source.toString("utf8")), { filename: bundle, ...(cachedData ? { cachedData } : {}) });
  const wrapper = script.runInThisContext() as (...args: unknown[]) => void;
  const mod = { exports: {} as unknown };
  wrapper.call(mod.exports, mod.exports, Module.createRequire(bundle), mod, bundle, path.dirname(bundle));
  return { exports: mod.exports, script, source };
}

/** Requires a bundle, through its code cache when one matches. */
export function loadBundle(bundle: string): unknown {
  return compile(bundle).exports;
}

/**
 * Loads a bundle for a training run; `save()` afterwards writes a cache that
 * holds every function the run compiled. Used by the build only.
 */
export function loadBundleForCache(bundle: string): { exports: unknown; save: () => void } {
  const loaded = compile(bundle);
  return {
    exports: loaded.exports,
    save: () => {
      const data = Buffer.concat([Buffer.from(`${MAGIC}${loaded.source.length}\n`, "latin1"), loaded.source, loaded.script.createCachedData()]);
      const tmp = `${cacheFileFor(bundle)}.${process.pid}.tmp`;
      fs.writeFileSync(tmp, data);
      fs.renameSync(tmp, cacheFileFor(bundle));
    },
  };
}

/**
 * Loads a part of a command, bundled apart (dist/parts/) so that runs which
 * do not need it never read it. The build's training run records its code
 * cache too, when the process exits.
 */
export function loadPart(bundle: string): unknown {
  if (process.env.MEDIA_OUTBOX_TRAIN_CODE_CACHE !== "1") return loadBundle(bundle);
  const training = loadBundleForCache(bundle);
  process.once("exit", training.save);
  return training.exports;
}
