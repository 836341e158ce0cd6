// The janitor on the filesystems containers use: overlayfs (where a file's
// st_dev differs from its directory's) and tmpfs, mounted by the test in a
// private mount namespace. Expired files go; mount points are never crossed;
// an outbox on another mount than its staging directory is swept in place.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BIN } from "./helpers.js";
import { runInPrivateMounts } from "./fixtures/private-mounts.js";

interface Run {
  code: number;
  stderr: string;
  report: { errors: unknown[]; deleted: { name: string; reason: string }[]; skipped: { name: string; code: string }[] };
}
interface Seen {
  run: Run;
  left: string[];
  inside_mount: string[];
  bind_source: string;
  devs_differ?: boolean;
}

let base: string;
beforeEach(() => {
  base = fs.mkdtempSync(path.join(os.tmpdir(), "mo-mounts-"));
});
afterEach(() => fs.rmSync(base, { recursive: true, force: true }));

describe("janitor on container filesystems", () => {
  it("deletes expired files on overlayfs and on tmpfs, and never crosses a mount point", () => {
    const r = runInPrivateMounts<{ overlay: Seen; tmpfs: Seen; bind: { run: Run; left: string[]; staging: string[] }; left_mounted: number }>("janitor-mounts.mjs", { base, bin: BIN });
    // The condition the issue reports: the files' st_dev is not their directory's.
    expect(r.overlay.devs_differ).toBe(true);
    for (const [fsName, seen, expired, kept] of [
      ["overlay", r.overlay, ["old-in-lower.png", "old-in-upper.png"], ["young-in-lower.png", "young-in-upper.png"]],
      ["tmpfs", r.tmpfs, ["old.png"], ["young.png"]],
    ] as const) {
      expect(seen.run.code, `${fsName}: ${seen.run.stderr}`).toBe(0);
      expect(seen.run.report.errors, fsName).toEqual([]);
      expect(seen.run.report.deleted.map((d) => d.name).sort(), fsName).toEqual([...expired].sort());
      expect(seen.left, fsName).toEqual(["bound.png", ...kept, "mnt"].sort());
      expect(seen.run.report.skipped, fsName).toEqual(
        expect.arrayContaining([expect.objectContaining({ name: "mnt", code: "mount_point" }), expect.objectContaining({ name: "bound.png", code: "mount_point" })]),
      );
      // Nothing inside a mount, nothing behind a bind mount, was touched.
      expect(seen.inside_mount, fsName).toEqual(["inside-mount.png"]);
      expect(seen.bind_source, fsName).toBe("bind source");
    }
    // The outbox a bind mount beside its state: nothing can be taken into staging (EXDEV), expired files are unlinked where they are, nothing is left in staging.
    expect(r.bind.run.code, r.bind.run.stderr).toBe(0);
    expect(r.bind.run.report.errors).toEqual([]);
    expect(r.bind.run.report.deleted.map((d) => d.name).sort()).toEqual(["old.png", "old2.png"]);
    expect(r.bind.left).toEqual(["young.png"]);
    expect(r.bind.staging).toEqual([]);
    expect(r.left_mounted).toBe(0);
  });

  it("a state directory that is a filesystem's root may hold that filesystem's lost+found, nothing else of the kind: a link there, or one in a plain directory, is refused", () => {
    interface Layout { code: number; stderr: string; deleted: string[] | null; outbox: string[]; state: string[]; lost_found: string[] | string | null }
    const r = runInPrivateMounts<{ mountRoot: Layout; mountRootLink: Layout; plain: Layout; left_mounted: number }>("state-lost-found.mjs", { base, bin: BIN });
    // The mount point's own: the run goes on, and lost+found (and what is in it) is never touched.
    expect(r.mountRoot.code, r.mountRoot.stderr).toBe(0);
    expect(r.mountRoot.deleted).toEqual(["old.png"]);
    expect(r.mountRoot.outbox).toEqual(["young.png"]);
    expect(r.mountRoot.state).toEqual([".media-outbox-test-outbox", "ledger", "lost+found", "quarantine", "staging"]);
    expect(r.mountRoot.lost_found).toEqual(["#1234:what fsck found"]);
    // A link under that name, or a lost+found in a directory that is no mount point: an entry media-outbox does not make; nothing is deleted.
    for (const [what, run] of [["link", r.mountRootLink], ["plain", r.plain]] as const) {
      expect(run.code, what).toBe(2);
      expect(run.stderr, what).toMatch(/state_unsafe: state directory .* is not a directory of its own: it holds lost\+found, which media-outbox does not make/);
      expect(run.outbox, what).toEqual(["old.png", "young.png"]);
    }
    expect(r.mountRootLink.lost_found).toBe(base);
    expect(r.plain.lost_found).toEqual(["#1234:what fsck found"]);
    expect(r.left_mounted).toBe(0);
  });
});
