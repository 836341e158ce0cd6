import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { cacheFileFor, loadBundle, loadBundleForCache } from "../src/cli/bundle-loader.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function bundle(source: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "mo-loader-"));
  dirs.push(dir);
  const file = path.join(dir, "cmd.js");
  fs.writeFileSync(file, source);
  return file;
}

describe("loadBundle", () => {
  it("runs a bundle through the cache its training run wrote", () => {
    const file = bundle(`exports.answer = () => 42; exports.dir = __dirname; exports.path = require("node:path").sep;`);
    const trained = loadBundleForCache(file);
    expect((trained.exports as { answer: () => number }).answer()).toBe(42);
    trained.save();
    expect(fs.statSync(cacheFileFor(file)).size).toBeGreaterThan(65);
    const mod = loadBundle(file) as { answer: () => number; dir: string; path: string };
    expect([mod.answer(), mod.dir, mod.path]).toEqual([42, path.dirname(file), "/"]);
  });

  it("ignores a cache made from other source of the same length", () => {
    // V8 itself checks only the length: the copy of the source in the cache
    // file is what keeps a stale cache from running old code.
    const file = bundle(`exports.answer = () => 41;`);
    const trained = loadBundleForCache(file);
    (trained.exports as { answer: () => number }).answer();
    trained.save();
    fs.writeFileSync(file, `exports.answer = () => 43;`);
    expect((loadBundle(file) as { answer: () => number }).answer()).toBe(43);
  });

  it("loads a bundle with no cache or a corrupt one", () => {
    const file = bundle(`exports.ok = true;`);
    expect(loadBundle(file)).toEqual({ ok: true });
    fs.writeFileSync(cacheFileFor(file), "garbage");
    expect(loadBundle(file)).toEqual({ ok: true });
  });
});
