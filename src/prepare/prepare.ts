// The gate: source -> checks -> staged copy -> atomic publish -> result. One
// function for the CLI, the watcher and library callers.
import fs from "node:fs";
import { type Config, type ConfigOverrides, loadConfig, sizeCapFor } from "../config/config.js";
import { Refusal, type RefusalCode, errnoCode, usageError } from "../core/errors.js";
import { escapeText } from "../core/escape.js";
import { formatBytes } from "../core/units.js";
import { type Logger, silentLogger } from "../log/logger.js";
import { SourceDenylist, resolveExisting } from "../safety/denylist.js";
import { assertSafePathText } from "../safety/path-text.js";
import { type Layout, openLayout } from "../state/layout.js";
import { checkContent, isTextExtension } from "./content.js";
import { extensionOf } from "./name.js";
import { publish } from "./publish.js";
import { type OpenedSource, type SourcePolicy, openSource } from "./source.js";
import { type Staged, createStagingFile, stageFromFd, stageFromStream, syncStaged } from "./stage.js";
import { type TextCheck, createTextCheck } from "./text-check.js";

/** A file on disk, or bytes from a stream under a given name. */
export type PrepareInput = string | { path: string } | { stream: AsyncIterable<Uint8Array | string>; name: string };

export interface PrepareOptions extends ConfigOverrides {
  /** A configuration already resolved by the caller; overrides are then ignored. */
  resolvedConfig?: Config;
  logger?: Logger;
  /**
   * `quarantine restore`: the quarantine (which lies in media-outbox's state)
   * is the only allowed source root; staging and ledger stay denied.
   */
  fromQuarantine?: boolean;
}

export interface MediaResult {
  /** The source as given, escaped. */
  source: string;
  /** Real absolute path of the published copy. */
  path: string;
  /** The exact line the agent must repeat. */
  directive: string;
  name: string;
  bytes: number;
  sha256: string;
  mime: string;
  reused: boolean;
}

export interface DroppedResult {
  /** The source as given, escaped. */
  path: string;
  reason: string;
  code: RefusalCode;
}

export interface PrepareReport {
  success: boolean;
  partial_success: boolean;
  outbox: string;
  media: MediaResult[];
  media_dropped: DroppedResult[];
}

interface Context {
  config: Config;
  layout: Layout;
  sourcePolicy: SourcePolicy;
  logger: Logger;
}

function sourceText(input: PrepareInput): string {
  if (typeof input === "string") return input;
  return "path" in input ? input.path : input.name;
}

function checkExtension(ctx: Context, name: string): string {
  const ext = extensionOf(name);
  if (!ctx.config.allow.includes(ext)) {
    const shown = ext ? `.${ext}` : "no extension";
    throw new Refusal("extension_not_allowed", `${escapeText(shown)} is not on the allow-list (${ctx.config.allow.join(" ")})`);
  }
  return ext;
}

function checkUnchanged(source: OpenedSource, staged: Staged): void {
  const after = fs.fstatSync(source.fd);
  if (after.size !== source.stat.size || after.mtimeMs !== source.stat.mtimeMs || staged.bytes !== source.stat.size) {
    throw new Refusal("changed_during_copy", "the file changed while it was copied; send it again once it is complete");
  }
}

interface StagedInput {
  staged: Staged;
  ext: string;
  name: string;
}

/**
 * Stages `input` into `target`. A text file's check starts while it is
 * staged and is handed to `onTextCheck`, so the caller can stop it whatever
 * happens next.
 */
async function stageInput(ctx: Context, input: PrepareInput, target: { path: string; fd: number }, onTextCheck: (check: TextCheck) => void): Promise<StagedInput> {
  const textCheck = (ext: string, expectedBytes: number | undefined) => {
    if (!isTextExtension(ext)) return undefined;
    const check = createTextCheck(target.fd, expectedBytes);
    onTextCheck(check);
    return check;
  };
  if (typeof input === "object" && "stream" in input) {
    const ext = checkExtension(ctx, input.name);
    const cap = sizeCapFor(ctx.config, ext);
    const staged = await stageFromStream(input.stream, target, cap, textCheck(ext, undefined));
    if (staged.bytes === 0) throw new Refusal("empty_file", "standard input was empty");
    return { staged, ext, name: input.name };
  }
  const given = sourceText(input);
  const source = openSource(given, ctx.sourcePolicy);
  try {
    const ext = checkExtension(ctx, given);
    const cap = sizeCapFor(ctx.config, ext);
    if (source.stat.size > cap) throw new Refusal("too_large", `the file is ${formatBytes(source.stat.size)}, over the ${formatBytes(cap)} cap`);
    const staged = stageFromFd(source.fd, target, cap, textCheck(ext, source.stat.size));
    checkUnchanged(source, staged);
    return { staged, ext, name: given };
  } finally {
    fs.closeSync(source.fd);
  }
}

/** unlink(2) without rmSync's recursive machinery, which costs start-up time to load. */
function unlinkIfPresent(file: string): void {
  try {
    fs.unlinkSync(file);
  } catch (err) {
    if (errnoCode(err) !== "ENOENT") throw err;
  }
}

async function prepareOne(ctx: Context, input: PrepareInput): Promise<MediaResult> {
  const given = sourceText(input);
  assertSafePathText(given, typeof input === "object" && "stream" in input ? "name" : "path");
  const target = createStagingFile(ctx.layout.stagingDir);
  let text: TextCheck | undefined;
  try {
    const { staged, ext, name } = await stageInput(ctx, input, target, (check) => (text = check));
    // The sync and the content checks overlap; both settle before the
    // descriptor is closed or anything is published. The sync is started
    // first: the text verdict may judge its share of a large file right away.
    const syncing = syncStaged(staged);
    const [content, synced] = await Promise.allSettled([checkContent(staged, ext, text?.verdict()), syncing]);
    if (content.status === "rejected") throw content.reason;
    if (synced.status === "rejected") throw synced.reason;
    const { mime } = content.value;
    const source = escapeText(given);
    const published = publish(staged, name, {
      outbox: ctx.layout.outbox,
      ledgerDir: ctx.layout.ledgerDir,
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

/** Builds what every prepare call needs; throws FatalError (exit 2) when the outbox is unsafe. */
function createContext(options: PrepareOptions): Context {
  const config = options.resolvedConfig ?? loadConfig(options);
  const layout = openLayout(config)!;
  const ownState = "it is media-outbox's own state";
  const stateDenied = options.fromQuarantine
    ? [layout.stagingDir, layout.ledgerDir].map((p) => ({ path: p, why: ownState }))
    : [{ path: layout.stateDir, why: ownState }];
  const denylist = new SourceDenylist({
    home: config.home,
    hermesHome: config.hermesHome,
    extra: [{ path: layout.outbox, why: "it is already in the outbox" }, ...stateDenied],
  });
  const sourceRoots = options.fromQuarantine ? [layout.quarantineDir] : config.sourceRoots.map(resolveExisting);
  return {
    config,
    layout,
    sourcePolicy: { cwd: options.cwd ?? process.cwd(), denylist, sourceRoots },
    logger: options.logger ?? silentLogger,
  };
}

/**
 * Checks each input and publishes it into the outbox. Refusals are reported
 * per input in `media_dropped`; a usage or outbox error throws FatalError.
 */
export async function prepare(inputs: PrepareInput | PrepareInput[], options: PrepareOptions = {}): Promise<PrepareReport> {
  const list = Array.isArray(inputs) ? inputs : [inputs];
  if (list.length === 0) throw usageError("prepare needs at least one file");
  const ctx = createContext(options);
  const report: PrepareReport = { success: false, partial_success: false, outbox: ctx.layout.outbox, media: [], media_dropped: [] };
  for (const input of list) {
    try {
      const result = await prepareOne(ctx, input);
      report.media.push(result);
      ctx.logger.info({ event: "published", source: result.source, name: result.name, bytes: result.bytes, sha256: result.sha256, reused: result.reused }, "published");
    } catch (err) {
      const refusal = err instanceof Refusal ? err : new Refusal("io_error", `unexpected error: ${escapeText((err as Error).message)}`);
      const dropped = { path: escapeText(sourceText(input)), reason: refusal.message, code: refusal.code };
      report.media_dropped.push(dropped);
      ctx.logger.warn({ event: "refused", source: dropped.path, code: dropped.code, reason: dropped.reason }, "refused");
    }
  }
  report.success = report.media_dropped.length === 0;
  report.partial_success = report.media.length > 0 && report.media_dropped.length > 0;
  return report;
}

