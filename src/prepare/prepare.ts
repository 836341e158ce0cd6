// Local mode: both halves of prepare in one process, the client's checks
// (source.ts) and the gate's judgement of the bytes (judge.ts), exactly as
// `serve` and its client run them apart. One function for the CLI, the
// watcher and library callers.
import fs from "node:fs";
import { type Config, type ConfigOverrides, loadConfig } from "../config/config.js";
import { usageError } from "../core/errors.js";
import { type Logger, silentLogger } from "../log/logger.js";
import { openLayout } from "../state/layout.js";
import { knownSecretsReader } from "./content.js";
import { type JudgeContext, type WatchGuard, judge, policyOf } from "./judge.js";
import { type MediaResult, type PrepareReport, addDropped, addMedia, droppedResult, emptyReport, settleReport } from "./report.js";
import { type SourcePolicy, assertUnchanged, checkStreamSource, openSource, sourcePolicyFor } from "./source.js";

export type { DroppedResult, MediaResult, PrepareReport } from "./report.js";

/**
 * A file on disk (published under its own name, or under `name`: prepare's
 * `--name` with one FILE), or bytes from a stream under a given name (`fd`:
 * the descriptor it reads, when it has one, as standard input has: a regular
 * file there gets a FILE's checks of its place, source.ts checkStreamSource).
 */
export type PrepareInput = string | { path: string; name?: string } | { stream: AsyncIterable<Uint8Array | string>; name: string; fd?: number };

export interface PrepareOptions extends ConfigOverrides {
  /** A configuration already resolved by the caller; overrides are then ignored. */
  resolvedConfig?: Config;
  logger?: Logger;
  /**
   * `quarantine restore`: the quarantine (which lies in media-outbox's state)
   * is the only allowed source root; staging and ledger stay denied.
   */
  fromQuarantine?: boolean;
  /** A running watch guards the outbox: nothing off its allow-list is published (judge.ts checkGuarded). */
  watchGuard?: WatchGuard;
}

interface Context {
  judge: JudgeContext;
  sourcePolicy: SourcePolicy;
  logger: Logger;
}

export function sourceText(input: PrepareInput): string {
  if (typeof input === "string") return input;
  return "path" in input ? input.path : input.name;
}

async function prepareOne(ctx: Context, input: PrepareInput): Promise<MediaResult> {
  if (typeof input === "object" && "stream" in input) {
    if (input.fd !== undefined) checkStreamSource(input.fd, ctx.sourcePolicy);
    return judge(ctx.judge, { name: input.name, nameIs: "name", bytes: { stream: input.stream } });
  }
  const given = sourceText(input);
  const name = typeof input === "object" ? input.name : undefined;
  const source = openSource(given, ctx.sourcePolicy);
  try {
    return await judge(ctx.judge, {
      // A given name decides the extension and the output name; the path still passed every client check above.
      ...(name !== undefined ? { name, nameIs: "name", source: given } : { name: given, nameIs: "path" }),
      bytes: { fd: source.fd, size: source.stat.size, afterCopy: (staged) => assertUnchanged(source, staged.bytes) },
    });
  } finally {
    fs.closeSync(source.fd);
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
  const sourcePolicy = sourcePolicyFor(config, {
    ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
    denied: [{ path: layout.outbox, why: "it is already in the outbox" }, ...stateDenied],
    ...(options.fromQuarantine ? { sourceRoots: [layout.quarantineDir] } : {}),
  });
  return {
    judge: { layout, policy: { ...policyOf(config), ...(options.watchGuard ? { guard: options.watchGuard } : {}) }, known: knownSecretsReader(config.hermesHome, config.home) },
    sourcePolicy,
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
  const report = emptyReport(ctx.judge.layout.outbox);
  for (const input of list) {
    try {
      addMedia(report, await prepareOne(ctx, input), ctx.logger);
    } catch (err) {
      addDropped(report, droppedResult(sourceText(input), err), ctx.logger);
    }
  }
  return settleReport(report);
}
