// The gate's half of prepare: the judgement of bytes. It never opens a path
// anybody names: it takes a name and bytes, and decides on what it staged
// itself. Checks 4 (extension), 5 (size cap), the staged copy, every content
// check, the output name, the atomic publication and the ledger. `serve` runs
// it on request bodies; local mode runs it in the same process as the client
// half (source.ts), on the open source descriptor.
import fs from "node:fs";
import { type Config, sizeCapFor } from "../config/config.js";
import { PLATFORM_LIMITS, type PlatformLimits, type PlatformName, categoryOf } from "../config/platforms.js";
import { Refusal, errnoCode } from "../core/errors.js";
import { escapeText } from "../core/escape.js";
import { formatBytes } from "../core/units.js";
import { assertSafePathText } from "../safety/path-text.js";
import type { Layout } from "../state/layout.js";
import type { KnownSecrets } from "../content/known.js";
import { rereadBudget } from "../content/scan.js";
import { checkContent, readsWholeFile, scanModeFor } from "./content.js";
import { extensionOf } from "./name.js";
import { publish } from "./publish.js";
import type { MediaResult } from "./report.js";
import { type Staged, createStagingFile, stageFromFd, stageFromStream, syncStaged } from "./stage.js";
import { type TextCheck, createTextCheck } from "./text-check.js";

/** What may be published: the allow-list and the size cap for an extension. */
export interface Policy {
  allow: readonly string[];
  capFor(ext: string): number;
  /** A running watch guards the outbox (local mode): what it leaves there. */
  guard?: WatchGuard;
}

/**
 * The watch guarding the outbox, as its lock answers (watch/lock.ts
 * watchHolder): its guard quarantines at once an entry whose extension its
 * allow-list lacks (extension_not_allowed) or whose size passes its cap
 * (too_large), so neither prepare nor the gate may publish one.
 */
export interface WatchGuard {
  allow: readonly string[];
  /** The size cap its guard quarantines above, for an extension on its allow-list. */
  capFor(ext: string): number;
  /** Who it is, for the message: "process 123". */
  who: string;
}

export function policyOf(config: Config): Policy {
  return { allow: config.allow, capFor: (ext) => sizeCapFor(config, ext) };
}

/** What a request may ask for; it only ever narrows the policy it is judged by. */
export interface PolicyRequest {
  allow?: readonly string[];
  maxSize?: number;
  platform?: PlatformName;
}

/**
 * `policy` narrowed by `request`: only extensions both allow, the smallest of
 * the caps (a requested platform's limit taken from `limits`, the gate's table).
 */
export function narrowPolicy(policy: Policy, request: PolicyRequest, limits: Record<PlatformName, PlatformLimits> = PLATFORM_LIMITS): Policy {
  const allow = request.allow ? policy.allow.filter((ext) => request.allow!.includes(ext)) : policy.allow;
  return {
    allow,
    capFor(ext) {
      let cap = policy.capFor(ext);
      if (request.maxSize !== undefined) cap = Math.min(cap, request.maxSize);
      if (request.platform !== undefined) cap = Math.min(cap, limits[request.platform][categoryOf(ext)]);
      return cap;
    },
  };
}

/**
 * `a` widened by `b`: every extension either allows, each with the larger cap
 * of those that allow it. The watch's guard judges by this (the
 * configuration's policy and the watch's own flags): it must keep what a
 * plain prepare publishes and what its drop folders publish.
 */
export function widenPolicy(a: Pick<Policy, "allow" | "capFor">, b: Pick<Policy, "allow" | "capFor">): Pick<Policy, "allow" | "capFor"> {
  const allow = [...new Set([...a.allow, ...b.allow])];
  return {
    allow,
    capFor: (ext) => Math.max(a.allow.includes(ext) ? a.capFor(ext) : 0, b.allow.includes(ext) ? b.capFor(ext) : 0),
  };
}

/** Whether `next` keeps less than `old`: an extension it lacks, or a lower cap for one. */
export function narrowsPolicy(old: Pick<Policy, "allow" | "capFor">, next: Pick<Policy, "allow" | "capFor">): boolean {
  return old.allow.some((ext) => !next.allow.includes(ext) || next.capFor(ext) < old.capFor(ext));
}

/** Where the bytes come from. */
export type IncomingBytes =
  | {
      /** A regular file the caller opened (local mode): copied synchronously, the fast path. */
      fd: number;
      size: number;
      /** The caller's check once everything was read (the source must not have changed). */
      afterCopy(staged: Staged): void;
    }
  | {
      stream: AsyncIterable<Uint8Array | string>;
      /** The size the sender announced (Content-Length), if any. */
      declaredBytes?: number;
      /** Called once the checks that need no bytes have passed, before the first byte is read. */
      beforeRead?(): void;
    };

export interface Incoming {
  /** The name the bytes were given (the source path in local mode): decides the extension and the output name. */
  name: string;
  /** How refusals call that name: "path" or "name". */
  nameIs: "path" | "name";
  /** What the result and the ledger call the source when it is not the name: the FILE a `--name` was given for. */
  source?: string;
  bytes: IncomingBytes;
}

export interface JudgeContext {
  layout: Layout;
  policy: Policy;
  /** The host's known secrets (the Hermes .env files, or the gate's credentials), read on first need: knownSecretsReader. */
  known: () => KnownSecrets;
}

/** A published file readable by the outbox's group (the gate's agents, whose gateways upload it). */
export const GROUP_READABLE_FILE_MODE = 0o640;
export const PRIVATE_FILE_MODE = 0o600;

/**
 * The mode of a published file follows the outbox, whoever publishes
 * (prepare, serve, watch, a quarantine restore): readable by its group when
 * the outbox is (the gate's layout), by its owner alone otherwise.
 */
export function publishModeOf(layout: Pick<Layout, "groupReadable">): number {
  return layout.groupReadable ? GROUP_READABLE_FILE_MODE : PRIVATE_FILE_MODE;
}

/** Check 4: the extension `name` is judged by, when the allow-list has it; throws extension_not_allowed otherwise. */
export function checkExtension(policy: Pick<Policy, "allow">, name: string): string {
  const ext = extensionOf(name);
  if (!policy.allow.includes(ext)) {
    const allowed = policy.allow.join(" ") || "nothing is allowed";
    throw new Refusal(
      "extension_not_allowed",
      ext
        ? `.${escapeText(ext)} is not on the allow-list (${allowed})`
        : `the name has no extension, so nothing says what the file holds; give it one of these extensions: ${allowed}`,
    );
  }
  return ext;
}

/**
 * Check 4 again, by the watch's allow-list: an extension `--allow` (or the
 * gate's allow-list) added beyond it would be published, printed in a MEDIA:
 * line, then quarantined by the guard: the gateway would be handed a path to
 * a file that is gone.
 */
export function checkGuarded(policy: Pick<Policy, "guard">, ext: string): void {
  const guard = policy.guard;
  if (!guard || guard.allow.includes(ext)) return;
  const e = escapeText(ext);
  throw new Refusal(
    "extension_not_allowed",
    `.${e} is on this run's allow-list, but the watch guarding this outbox (${guard.who}) quarantines every entry off its allow-list (${guard.allow.map(escapeText).join(" ") || "nothing"}), so the file would be gone before it was delivered; add ${e} to "allow" in the configuration (a running watch reads it again when it changes) or to the watch's --allow (then restart the watch), then prepare it again`,
  );
}

/**
 * Check 5 on a size known before the copy (a file's, an announced one; the
 * guard's, of an outbox entry): throws too_large over the policy's cap for
 * `ext`, or over the cap of the watch guarding the outbox, which would
 * quarantine the file the moment its MEDIA: line was printed.
 */
export function checkSize(policy: Pick<Policy, "capFor" | "guard">, ext: string, bytes: number): void {
  const cap = policy.capFor(ext);
  if (bytes > cap) throw new Refusal("too_large", `the file is ${formatBytes(bytes)}, over the ${formatBytes(cap)} cap`);
  const guard = policy.guard;
  if (!guard || bytes <= guard.capFor(ext)) return;
  throw new Refusal(
    "too_large",
    `the file is ${formatBytes(bytes)}, within this run's cap, but the watch guarding this outbox (${guard.who}) quarantines every .${escapeText(ext)} entry over ${formatBytes(guard.capFor(ext))}, so the file would be gone before it was delivered; raise "maxSize" in the configuration (a running watch reads it again when it changes) or the watch's --max-size (then restart the watch), then prepare it again`,
  );
}

/** The cap the staged copy must stay within: the policy's, or the guarding watch's when lower. */
function stagingCap(policy: Pick<Policy, "capFor" | "guard">, ext: string): number {
  const cap = policy.capFor(ext);
  return policy.guard ? Math.min(cap, policy.guard.capFor(ext)) : cap;
}

/** unlink(2) without rmSync's recursive machinery, which costs start-up time to load. */
function unlinkIfPresent(file: string): void {
  try {
    fs.unlinkSync(file);
  } catch (err) {
    if (errnoCode(err) !== "ENOENT") throw err;
  }
}

/**
 * Judges `incoming` and publishes it: the result, or a thrown Refusal (or any
 * other error, from the bytes' stream or the disk). Nothing staged is left
 * behind whatever happens.
 */
export async function judge(ctx: JudgeContext, incoming: Incoming): Promise<MediaResult> {
  const { name, bytes } = incoming;
  assertSafePathText(name, incoming.nameIs);
  const ext = checkExtension(ctx.policy, name);
  checkGuarded(ctx.policy, ext);
  const cap = stagingCap(ctx.policy, ext);
  const declared = "fd" in bytes ? bytes.size : bytes.declaredBytes;
  if (declared !== undefined) checkSize(ctx.policy, ext, declared);
  if ("stream" in bytes) bytes.beforeRead?.();

  const target = createStagingFile(ctx.layout.stagingDir);
  let text: TextCheck | undefined;
  try {
    // A text file's check (and the raw credential scan of a binary no reader knows) starts while it is staged.
    const mode = scanModeFor(ext);
    if (mode !== "parsed") text = createTextCheck(target.fd, declared, undefined, { known: ctx.known(), raw: mode === "raw", reread: rereadBudget() });
    let staged: Staged;
    // A document's reader needs every byte: kept while they are copied rather than read back (audio, video, zips and PDF are read by ranges).
    const keep = readsWholeFile(ext) ? { upTo: cap, expectedBytes: declared } : undefined;
    if ("fd" in bytes) {
      staged = stageFromFd(bytes.fd, target, cap, text, keep);
      bytes.afterCopy(staged);
    } else {
      staged = await stageFromStream(bytes.stream, target, cap, text, keep);
    }
    if (staged.bytes === 0) throw new Refusal("empty_file", "the file is empty");
    // The sync and the content checks overlap; both settle before the
    // descriptor is closed or anything is published. The sync is started
    // first: the text verdict may judge its share of a large file right away.
    const syncing = syncStaged(staged);
    const [content, synced] = await Promise.allSettled([checkContent(staged, ext, { text: text?.verdict(), known: ctx.known }), syncing]);
    if (content.status === "rejected") throw content.reason;
    if (synced.status === "rejected") throw synced.reason;
    const { mime } = content.value;
    const source = escapeText(incoming.source ?? name);
    const published = publish(staged, name, {
      outbox: ctx.layout.outbox,
      ledgerDir: ctx.layout.ledgerDir,
      mode: publishModeOf(ctx.layout),
      record: { source, bytes: staged.bytes, sha256: staged.sha256, mime },
    });
    return {
      source,
      path: published.path,
      directive: `MEDIA:${published.path}`,
      name: published.name,
      bytes: staged.bytes,
      sha256: staged.sha256,
      mime,
      reused: published.reused,
    };
  } finally {
    // A worker reading the staging file must be gone before its descriptor is closed.
    await text?.dispose();
    fs.closeSync(target.fd);
    unlinkIfPresent(target.path);
  }
}
