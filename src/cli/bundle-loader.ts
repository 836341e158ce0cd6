// Loads a command bundle with a V8 code cache made at build time. The agent
// runs `prepare` once per file, so start-up counts: with the cache, V8 neither
// parses the bundle nor compiles the functions a typical run calls.
//
// V8 checks a cache only against the source's length, so the cache file starts
// with the sha256 of the exact source it was made from; any other source (a
// rebuild, an edit) is compiled the ordinary way. A cache V8 itself refuses
// (another Node version) costs nothing but the wasted read.
import { hash } from "node:crypto";
import fs from "node:fs";
import Module from "node:module";
import path from "node:path";
import vm from "node:vm";

const HEADER_BYTES = 65;

export const cacheFileFor = (bundle: string) => `${bundle}.cache`;

interface Loaded {
  exports: unknown;
  script: vm.Script;
  source: string;
}

function readCache(bundle: string, sourceHash: string): Buffer | undefined {
  let data: Buffer;
  try {
    data = fs.readFileSync(cacheFileFor(bundle));
  } catch {
    return undefined;
  }
  return data.toString("latin1", 0, HEADER_BYTES) === `${sourceHash}\n` ? data.subarray(HEADER_BYTES) : undefined;
}

function compile(bundle: string): Loaded {
  const source = fs.readFileSync(bundle, "utf8");
  const cachedData = readCache(bundle, hash("sha256", source));
  const script = new vm.Script(Module.wrap(source), { filename: bundle, ...(cachedData ? { cachedData } : {}) });
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
      const data = Buffer.concat([Buffer.from(`${hash("sha256", loaded.source)}\n`, "latin1"), loaded.script.createCachedData()]);
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
