// Which outbox check-reply judges a reply against. In local mode it is the
// configured one. In gate mode (the same discovery as prepare: config.gate)
// the agents' prepare publishes into the gate's outbox, which the gateway's
// environment does not name (no MEDIA_OUTBOX_DIR there) and the system config
// does not hold (only the socket): the gate says where it is (GET /health).
// The gate is asked only when the answer could change the verdict: a
// published path that was not taken, or a mangled directive, which may name a
// file in the gate's outbox. Without an answer the reply is judged without it:
// a file is then never taken for published, never the other way round.
import type { Config } from "../config/config.js";
import { FatalError } from "../core/errors.js";
import { gateHealth } from "../gate/client.js";
import { type CheckReplyOptions, type CheckReplyReport, checkReply } from "./check-reply.js";

/** How long check-reply waits for the gate's answer: the plugin bounds the whole call (2 s by default), and a gate started by this very request needs a moment. */
export const GATE_OUTBOX_TIMEOUT_MS = 1500;

export interface JudgedReply {
  report: CheckReplyReport;
  /** Gate mode: why the gate's outbox is not known (the gate did not answer). */
  gateProblem?: string;
}

/**
 * Whether knowing the outbox could change the report: a published path not
 * taken (unless the reply already carries its exact line, which stays either
 * way), or a mangled directive.
 */
function outboxMatters(report: CheckReplyReport): boolean {
  return report.ignored.some((i) => !report.kept.includes(i.path)) || report.notes.some((n) => n.code === "mangled");
}

/** check-reply's judgement, against the local outbox or, in gate mode, the gate's. */
export async function judgeReply(reply: string, config: Config, options: Omit<CheckReplyOptions, "outbox">): Promise<JudgedReply> {
  if (!config.gate) return { report: checkReply(reply, { ...options, outbox: config.outbox }) };
  // The local default outbox means nothing in gate mode: no prepare publishes there.
  const first = checkReply(reply, options);
  if (!outboxMatters(first)) return { report: first };
  let outbox: string;
  try {
    outbox = (await gateHealth(config.gate, Math.min(config.gate.timeoutMs ?? GATE_OUTBOX_TIMEOUT_MS, GATE_OUTBOX_TIMEOUT_MS))).outbox;
  } catch (err) {
    if (!(err instanceof FatalError)) throw err;
    return { report: first, gateProblem: err.message };
  }
  return { report: checkReply(reply, { ...options, outbox }) };
}
