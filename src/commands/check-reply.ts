import fs from "node:fs";
import { err, out } from "../cli/io.js";
import { BASE_OPTIONS, JSON_OPTION, configFromFlags } from "../cli/config-flags.js";
import type { Options } from "../cli/args.js";
import { runCli } from "../cli/run.js";
import { usageError } from "../core/errors.js";
import { safeJson } from "../core/escape.js";
import { judgeReply } from "../reply/reply-outbox.js";
import { SourceDenylist } from "../safety/denylist.js";
import { deliveryPolicy } from "../safety/gateway.js";

export const USAGE = `usage: media-outbox check-reply [--json] [--media PATH]... [--outbox DIR] [--config FILE] < REPLY
  reads a final reply on stdin and prints the reply to send: every --media file's exact
  MEDIA: line present (added at the end when missing or mangled), every other directive
  the gateway would not deliver replaced by a sentence saying so, nothing else changed`;

const OPTIONS = {
  ...BASE_OPTIONS,
  ...JSON_OPTION,
  media: { type: "string", multiple: true },
} satisfies Options;

export async function run(argv: string[]): Promise<number> {
  return runCli(argv, OPTIONS, USAGE, async ({ values, positionals }) => {
    if (positionals.length > 0) throw usageError(`check-reply reads the reply on stdin and takes no arguments (published files go in --media PATH)\n${USAGE}`);
    const config = configFromFlags(values);
    let reply: string;
    try {
      reply = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(fs.readFileSync(0));
    } catch {
      throw usageError("the reply on stdin is not valid UTF-8");
    }
    // The denylist costs a few dozen lstat calls: built only when a directive gets that far.
    let denylist: SourceDenylist | undefined;
    const denied = (resolved: string) => (denylist ??= new SourceDenylist({ home: config.home, hermesHome: config.hermesHome })).reason(resolved);
    const { report, gateProblem } = await judgeReply(reply, config, {
      published: values.media ?? [],
      policy: deliveryPolicy(process.env, config.home, config.hermesHome, denied),
    });
    if (gateProblem) err(`media-outbox: note: the gate's outbox is not known (${gateProblem}): files in it that the reply names in a mangled way are not repaired\n`);
    out(values.json === true ? `${safeJson(report)}\n` : report.reply);
    return 0;
  });
}
