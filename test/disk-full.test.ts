// Nothing is lost on a full disk: the home (outbox and state) lies on a small
// tmpfs that the scenario fills, in a private mount namespace.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makePng } from "../src/core/png.js";
import { BIN, png } from "./helpers.js";
import { runInPrivateMounts } from "./fixtures/private-mounts.js";

interface Prepared {
  code: number;
  stderr: string;
  report: { success: boolean; media: { name: string }[]; media_dropped: { code: string; reason: string }[] } | null;
}
interface Ledger {
  ends_with_newline: boolean;
  size: number;
  lines: string[];
}

let base: string;
beforeEach(() => {
  base = fs.mkdtempSync(path.join(os.tmpdir(), "mo-full-"));
});
afterEach(() => fs.rmSync(base, { recursive: true, force: true }));
/** A 256-pixel square PNG of noise (~200 KB: deflate cannot shrink it), larger than any hole a small filesystem's allocator could fill; its file in `base`. */
const writeNoisePng = () => {
  let x = 0x9e3779b9;
  const file = path.join(base, "noise.png");
  fs.writeFileSync(
    file,
    makePng(256, () => {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      return x >>> 24;
    }),
  );
  return file;
};
const input = (scenario: string) => ({ base, bin: BIN, scenario, png: [0, 1, 2].map((s) => png(s, 8).toString("base64")) });

describe("a full disk", () => {
  it("prepare: a copy that does not fit is host_error and leaves nothing; a ledger append cut short leaves no torn line and publishes nothing", () => {
    const r = runInPrivateMounts<Record<string, unknown>>("disk-full.mjs", input("prepare"));
    const big = r.big as Prepared;
    expect(big.code).toBe(1);
    expect(big.report!.media_dropped).toEqual([expect.objectContaining({ code: "host_error", reason: expect.stringMatching(/ENOSPC.*nothing was published; try again later/) })]);
    expect(r.big_left).toEqual({ outbox: [], staging: [], ledger: [] });

    expect((r.first as Prepared).code).toBe(0);
    const before = r.ledger_before as Ledger;
    expect(before.size % 4096).toBe(4096 - 40);
    const failed = r.second_full as Prepared;
    expect(failed.code).toBe(1);
    // It was the ledger's append that failed (the staged copy had the last free page).
    expect(failed.report!.media_dropped).toEqual([expect.objectContaining({ code: "host_error", reason: expect.stringMatching(/ENOSPC: no space left to append to the ledger/) })]);
    // The partial write was taken back: the day file is exactly as before, ending in a newline.
    expect(r.ledger_after_failure).toEqual(before);
    // No record, no publication; no staging file left.
    expect(r.outbox_after_failure).toEqual(["first.png"]);
    expect(r.staging_after_failure).toEqual([]);
    // With space again, the next record starts on its own line: every line is one record.
    const again = r.second_again as Prepared;
    expect(again.code, again.stderr).toBe(0);
    const final = r.ledger_final as Ledger;
    expect(final.lines).toEqual(["first.png", "padding.png", "second.png"]);
    expect(final.ends_with_newline).toBe(true);
    expect(r.outbox_final).toEqual(["first.png", "second.png"]);
  });

  it("watch: a drop that cannot be published for lack of space stays, without a receipt, and is published once there is room", () => {
    const r = runInPrivateMounts<{ while_full: { drop: string[]; events: unknown[]; deferred_line: string }; after: { drop: string[]; outbox: string[]; receipt: string }; exit: number }>(
      "disk-full.mjs",
      input("drop"),
    );
    expect(r.while_full.drop).toEqual(["chart.png"]);
    expect(r.while_full.events).toEqual([]);
    expect(JSON.parse(r.while_full.deferred_line)).toMatchObject({ event: "drop_deferred", code: "host_error", name: "chart.png" });
    expect(r.after.drop).toEqual(["chart.png.media"]);
    expect(r.after.outbox).toEqual(["chart.png"]);
    expect(r.after.receipt).toMatch(/^MEDIA:\/.*\/chart\.png\n$/);
    expect(r.exit).toBe(0);
  });
});

describe("an I/O error (EIO)", () => {
  it("watch: a drop whose copy cannot be written (a real EIO from a device smaller than its filesystem) stays, without a receipt, and is published once writes work", () => {
    const r = runInPrivateMounts<{
      device_shrunk: boolean;
      while_failing: { drop: string[]; events: unknown[]; deferred_line: string; outbox: string[] | { unreadable: string } };
      after: { drop: string[]; outbox: string[]; receipt: string };
      exit: number;
    }>("disk-eio.mjs", { base, bin: BIN, pngFile: writeNoisePng() });
    expect(r.device_shrunk).toBe(true);
    expect(r.while_failing.drop).toEqual(["chart.png"]);
    expect(r.while_failing.events).toEqual([]);
    // Nothing published while writes fail: no event says so, and the outbox holds nothing (or, its filesystem failing, cannot be read at that moment).
    if (Array.isArray(r.while_failing.outbox)) expect(r.while_failing.outbox).toEqual([]);
    else expect(r.while_failing.outbox.unreadable).toMatch(/^E[A-Z]+$/);
    expect(JSON.parse(r.while_failing.deferred_line)).toMatchObject({ event: "drop_deferred", code: "host_error", name: "chart.png", error: expect.stringMatching(/\(EIO: /) });
    expect(r.after.drop).toEqual(["chart.png.media"]);
    expect(r.after.outbox).toEqual(["chart.png"]);
    expect(r.after.receipt).toMatch(/^MEDIA:\/.*\/chart\.png\n$/);
    expect(r.exit).toBe(0);
  });
});
