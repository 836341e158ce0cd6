// Would prepare have published this outbox entry under this name? The rules
// prepare applies to a name and a file before anything reaches the outbox,
// asked of an entry already there. The watch guard asks: in the single-user
// mode the agent's user can forge a ledger record, so the guard's judgement is
// the real check, and a record names bytes, never the rules a name obeys.
// Every rule is asked of its owner, never written twice: the name's text
// (check 1, safety/path-text.ts), the allow-list (check 4, judge.ts), the
// output name (name.ts, the sanitiser publish names files with) and the
// hard-link rule (source.ts). The bytes are judged by judge-content.ts.
import type fs from "node:fs";
import { Refusal, type RefusalCode } from "../core/errors.js";
import { escapeText } from "../core/escape.js";
import { assertSafePathText } from "../safety/path-text.js";
import { type Policy, checkExtension, checkSize } from "./judge.js";
import { outputName } from "./name.js";
import { refuseHardLinks } from "./source.js";

/** Which of prepare's rules an entry fails. */
export type EntryRule = "name_refused" | "name_not_prepared" | "extension_not_allowed" | "too_large" | "hard_links";

export interface EntryProblem {
  rule: EntryRule;
  /** prepare's refusal code, when prepare would have refused with one. */
  code?: RefusalCode;
  /** Why, escaped: nothing of the name is shown raw. */
  message: string;
}

/** The problem a rule's Refusal is, or rethrows what is not a Refusal. */
function asProblem(rule: EntryRule, err: unknown): EntryProblem {
  if (!(err instanceof Refusal)) throw err;
  return { rule, code: err.code, message: err.message };
}

/**
 * Why prepare would not have published a regular file with `stat` in the
 * outbox under `name` by `policy`, or undefined: the first rule it fails, in
 * prepare's order. `inPublication` is asked only of a file with exactly two
 * names: true when the other is in the staging directory, as it is for a
 * moment while prepare (or the janitor, putting a file back) links the staged
 * file into the outbox and before it removes the staging name. Such a file is
 * no alias of a protected file, since it has no other name.
 */
export function outboxEntryProblem(
  name: string,
  stat: Pick<fs.Stats, "nlink" | "size">,
  policy: Pick<Policy, "allow" | "capFor">,
  inPublication: () => boolean,
): EntryProblem | undefined {
  try {
    assertSafePathText(name, "name");
  } catch (err) {
    return asProblem("name_refused", err);
  }
  let ext: string;
  try {
    ext = checkExtension(policy, name);
  } catch (err) {
    return asProblem("extension_not_allowed", err);
  }
  try {
    checkSize(policy, ext, stat.size);
  } catch (err) {
    return asProblem("too_large", err);
  }
  // Every name publish gives is outputName's, with or without a hash suffix, and outputName leaves such a name as it is.
  const given = outputName(name);
  if (given !== name) return { rule: "name_not_prepared", message: `prepare names no file so; it would name this one ${escapeText(given)}` };
  if (stat.nlink === 2 && inPublication()) return undefined;
  try {
    refuseHardLinks(stat, "it has");
  } catch (err) {
    return asProblem("hard_links", err);
  }
  return undefined;
}
