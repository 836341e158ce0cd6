// `install hermes-config`: add the outbox to gateway.media_delivery_allow_dirs
// in a Hermes config.yaml. The file is parsed with `yaml` (to find exactly
// where the list is), edited as text at that one spot (so every comment,
// blank line and quoting style elsewhere stays byte for byte), re-parsed to
// prove the edit did exactly that, and written atomically after a backup.
import fs from "node:fs";
import path from "node:path";
import { isDeepStrictEqual } from "node:util";
import type { Config } from "../config/config.js";
import { FatalError, configError, isErrno, usageError } from "../core/errors.js";
import { escapeText } from "../core/escape.js";
import { assertDedicatedOutbox } from "../safety/dedicated.js";
import { readOperatorFile } from "../safety/operator-file.js";
import { parseAllowDirs } from "../safety/gateway.js";
import { writeFileAtomic } from "./files.js";
import { checkOutboxForGateway } from "./install.js";

type YamlModule = typeof import("yaml");
const loadYaml = async (): Promise<YamlModule> => import("yaml");

/** The config.yaml of the default profile, or of `profile`. */
export function hermesConfigPath(config: Config, profile?: string): string {
  if (profile === undefined) return path.join(config.hermesHome, "config.yaml");
  if (!/^[A-Za-z0-9_][A-Za-z0-9_.-]*$/.test(profile)) throw usageError(`--profile ${escapeText(profile)} is not a profile name`);
  return path.join(config.hermesHome, "profiles", profile, "config.yaml");
}

/** Every config.yaml of this Hermes home: the default one and each profile's. */
export function hermesConfigFiles(config: Config): { profile?: string; file: string }[] {
  const files: { profile?: string; file: string }[] = [{ file: hermesConfigPath(config) }];
  let profiles: string[] = [];
  try {
    profiles = fs.readdirSync(path.join(config.hermesHome, "profiles"));
  } catch (err) {
    if (!isErrno(err, "ENOENT", "ENOTDIR")) throw err;
  }
  for (const p of profiles.sort()) if (/^[A-Za-z0-9_][A-Za-z0-9_.-]*$/.test(p)) files.push({ profile: p, file: hermesConfigPath(config, p) });
  return files.filter((f) => fs.existsSync(f.file));
}

/**
 * Why a config.yaml does not parse, fit for one output line: the parser's
 * first line (what and where: "… at line 2, column 1"), escaped. The lines
 * after it quote the file around the error, and config.yaml holds API keys:
 * they are never shown.
 */
export function yamlProblem(errors: readonly { message: string }[]): string {
  const first = errors[0]?.message ?? "";
  const nl = first.indexOf("\n");
  return `not valid YAML: ${escapeText((nl < 0 ? first : first.slice(0, nl)).replace(/:$/, ""))}`;
}

/**
 * References through YAML aliases a config.yaml may make. The yaml package
 * stops at 100 (its guard against a billion laughs), and Hermes' PyYAML
 * has no bound: a config whose cron jobs share one anchor a hundred times
 * is Hermes' to read, so the bound is far above what a person writes and
 * still far below what an exponential expansion reaches.
 */
export const YAML_ALIAS_LIMIT = 10_000;

/** PyYAML's booleans: YAML 1.1's but for `y`, `Y`, `n` and `N`, which its resolver leaves strings. */
const PYYAML_TRUE = /^(?:[Yy]es|YES|[Tt]rue|TRUE|[Oo]n|ON)$/;
const PYYAML_FALSE = /^(?:[Nn]o|NO|[Ff]alse|FALSE|[Oo]ff|OFF)$/;
const pyyamlTags = (tags: import("yaml").Tags): import("yaml").Tags =>
  tags.map((t) => (typeof t === "object" && t.tag === "tag:yaml.org,2002:bool" && t.test ? { ...t, test: t.test.test("yes") ? PYYAML_TRUE : PYYAML_FALSE } : t));

/**
 * A config.yaml text parsed as Hermes' PyYAML reads it, and its value; or
 * why it cannot be (yamlProblem, or its aliases past YAML_ALIAS_LIMIT).
 * PyYAML reads YAML 1.1: `off` and `no` are false (`strict: off` turns
 * strict mode off), `<<` merges a mapping in, `012` is octal; the yaml
 * package's 1.1 schema reads so, with PyYAML's booleans. A key given twice
 * is no error to PyYAML: the last one holds (`uniqueKeys: false` reads
 * so), and a second `gateway:` section may turn strict mode off.
 */
export function readYaml(YAML: YamlModule, text: string, options: { keepSourceTokens?: boolean } = {}): { doc: import("yaml").Document.Parsed; value: unknown } | { problem: string } {
  const doc = YAML.parseDocument(text, { ...options, uniqueKeys: false, version: "1.1", customTags: pyyamlTags });
  if (doc.errors.length > 0) return { problem: yamlProblem(doc.errors) };
  try {
    return { doc, value: doc.toJS({ maxAliasCount: YAML_ALIAS_LIMIT }) };
  } catch (err) {
    if (!(err instanceof ReferenceError)) throw err;
    return { problem: `not read: its aliases expand to more than ${YAML_ALIAS_LIMIT} references (a guard against exponential expansion; Hermes' own reader would take as long)` };
  }
}

/** A config.yaml text's value; throws (a config error) when it cannot be read. */
export async function readHermesConfig(text: string): Promise<unknown> {
  const read = readYaml(await loadYaml(), text);
  if ("problem" in read) throw configError(read.problem);
  return read.value;
}

/** The configured allow-dirs of a config.yaml's value: undefined when the key is absent. */
export const allowDirsOf = (value: unknown): unknown => (value as { gateway?: { media_delivery_allow_dirs?: unknown } } | null)?.gateway?.media_delivery_allow_dirs;

/** True when the list names the outbox (entries read as the gateway reads allow-dirs). */
export function listsOutbox(list: unknown, outbox: string, home: string): boolean {
  return Array.isArray(list) && list.some((e) => typeof e === "string" && parseAllowDirs(e, home).includes(outbox));
}

function yamlScalar(value: string): string {
  return /^[A-Za-z0-9_./~+@-]+$/.test(value) && !value.startsWith("-") ? value : JSON.stringify(value);
}

const lineStart = (text: string, offset: number) => text.lastIndexOf("\n", offset - 1) + 1;
const column = (text: string, offset: number) => offset - lineStart(text, offset);
/** Offset just after the end of the line holding `offset`. */
function afterLine(text: string, offset: number): { at: number; prefix: string } {
  const nl = text.indexOf("\n", Math.max(offset - 1, 0));
  return nl < 0 ? { at: text.length, prefix: "\n" } : { at: nl + 1, prefix: "" };
}

/** The text with the outbox added to gateway.media_delivery_allow_dirs; throws when it cannot be done exactly. */
export async function addAllowDir(text: string, outbox: string, home: string): Promise<string | undefined> {
  return addListItem(text, ["gateway", "media_delivery_allow_dirs"], outbox, (list) => listsOutbox(list, outbox, home));
}

/** A key of a top-level section: `gateway.media_delivery_allow_dirs`, `plugins.enabled`. */
export type SectionKey = readonly [section: string, key: string];

async function parseForEdit(text: string) {
  const YAML = await loadYaml();
  const read = readYaml(YAML, text, { keepSourceTokens: true });
  if ("problem" in read) throw configError(read.problem);
  return { YAML, doc: read.doc, before: read.value as Record<string, unknown> | null };
}

/** Proves an edit: the new text parses to the old document with only `section.key` set to `list`. */
async function proveEdit(edited: string, before: Record<string, unknown> | null, [section, key]: SectionKey, list: unknown[]): Promise<string> {
  const after = readYaml(await loadYaml(), edited);
  const expected = structuredClone(before ?? {}) as Record<string, Record<string, unknown>>;
  expected[section] = { ...(expected[section] ?? {}), [key]: list };
  if ("problem" in after || !isDeepStrictEqual(after.value, expected)) {
    throw configError("the edit could not be made without changing something else");
  }
  return edited;
}

/**
 * The text with `item` appended to the list at `section.key` (the section
 * and the key created when missing), or undefined when `present` says the
 * list already holds it. One inserted line (or `, item` in a flow list);
 * throws when that cannot be done exactly.
 */
export async function addListItem(text: string, where: SectionKey, item: string, present: (list: unknown) => boolean): Promise<string | undefined> {
  const [section, key] = where;
  const { YAML, doc, before } = await parseForEdit(text);
  const scalar = yamlScalar(item);
  const current = (before?.[section] as Record<string, unknown> | null | undefined)?.[key];
  if (present(current)) return undefined;
  const root = doc.contents;
  let edited: string;
  // New lines end the way the file's lines do.
  const nl = text.includes("\r\n") ? "\r\n" : "\n";
  const insert = (at: number, s: string) => `${text.slice(0, at)}${s.replace(/\n/g, nl)}${text.slice(at)}`;
  const append = (s: string) => `${text}${text === "" || text.endsWith("\n") ? "" : nl}${s.replace(/\n/g, nl)}`;
  const newSection = `${section}:\n  ${key}:\n    - ${scalar}\n`;

  if (root === null || (YAML.isScalar(root) && root.value === null)) {
    edited = append(newSection);
  } else if (!YAML.isMap(root) || root.flow) {
    throw configError("the top level is not a block mapping");
  } else {
    const sectionPair = root.items.find((p) => YAML.isScalar(p.key) && p.key.value === section);
    if (!sectionPair) {
      edited = append(newSection);
    } else {
      const sec = sectionPair.value;
      const keyStart = (sectionPair.key as { range: [number, number, number] }).range[0];
      const secIndent = column(text, keyStart);
      if (sec === null || (YAML.isScalar(sec) && sec.value === null && sec.range)) {
        const { at, prefix } = afterLine(text, (sectionPair.key as { range: [number, number, number] }).range[1]);
        const ind = " ".repeat(secIndent + 2);
        edited = insert(at, `${prefix}${ind}${key}:\n${ind}  - ${scalar}\n`);
      } else if (!YAML.isMap(sec) || sec.flow) {
        throw configError(`${section} is not a block mapping`);
      } else {
        const pair = sec.items.find((p) => YAML.isScalar(p.key) && p.key.value === key);
        const firstKey = sec.items[0]!.key as { range: [number, number, number] };
        const ind = " ".repeat(column(text, firstKey.range[0]));
        if (!pair) {
          const last = sec.items[sec.items.length - 1]!;
          const end = (last.value as { range?: [number, number, number] } | null)?.range?.[1] ?? (last.key as { range: [number, number, number] }).range[1];
          const { at, prefix } = afterLine(text, end);
          edited = insert(at, `${prefix}${ind}${key}:\n${ind}  - ${scalar}\n`);
        } else {
          const v = pair.value;
          const keyRange = (pair.key as { range: [number, number, number] }).range;
          if (v === null || (YAML.isScalar(v) && v.value === null)) {
            const { at, prefix } = afterLine(text, keyRange[1]);
            edited = insert(at, `${prefix}${ind}  - ${scalar}\n`);
          } else if (YAML.isSeq(v) && v.flow) {
            const close = text.lastIndexOf("]", v.range![1]);
            edited = insert(close, v.items.length === 0 ? scalar : `, ${scalar}`);
          } else if (YAML.isSeq(v)) {
            const last = v.items[v.items.length - 1] as { range: [number, number, number] };
            const { at, prefix } = afterLine(text, last.range[1]);
            edited = insert(at, `${prefix}${" ".repeat(column(text, v.range![0]))}- ${scalar}\n`);
          } else {
            throw configError(`${section}.${key} is not a list`);
          }
        }
      }
    }
  }
  return proveEdit(edited, before, where, [...(Array.isArray(current) ? current : []), item]);
}

/**
 * The text with every entry equal to `item` removed from the list at
 * `section.key`, or undefined when it holds none. A block item loses its
 * line (the key becomes `[]` when it was the last one), a flow item its
 * `, item`; throws when that cannot be done exactly.
 */
export async function removeListItem(text: string, where: SectionKey, item: string): Promise<string | undefined> {
  const [section, key] = where;
  const { YAML, doc, before } = await parseForEdit(text);
  const current = (before?.[section] as Record<string, unknown> | null | undefined)?.[key];
  if (!Array.isArray(current) || !current.includes(item)) return undefined;
  const sec = YAML.isMap(doc.contents) ? doc.contents.items.find((p) => YAML.isScalar(p.key) && p.key.value === section)?.value : undefined;
  const pair = YAML.isMap(sec) ? sec.items.find((p) => YAML.isScalar(p.key) && p.key.value === key) : undefined;
  const seq = pair?.value;
  if (!YAML.isSeq(seq)) throw configError(`${section}.${key} is not a list`);
  const spans: [number, number, string][] = [];
  const items = seq.items as { value?: unknown; range: [number, number, number] }[];
  const keep = items.filter((i) => !(YAML.isScalar(i) && i.value === item));
  if (seq.flow) {
    // Rebuild the flow list's inside from the items kept, as written.
    const open = text.indexOf("[", seq.range![0]);
    const close = text.lastIndexOf("]", seq.range![1]);
    spans.push([open + 1, close, keep.map((i) => text.slice(i.range[0], i.range[1])).join(", ")]);
  } else {
    for (const i of items) {
      if (!(YAML.isScalar(i) && i.value === item)) continue;
      const start = lineStart(text, i.range[0]);
      const { at } = afterLine(text, i.range[1]);
      spans.push([start, at, ""]);
    }
    if (keep.length === 0) {
      const keyEnd = (pair!.key as { range: [number, number, number] }).range[1];
      const colon = text.indexOf(":", keyEnd);
      spans.push([colon + 1, colon + 1, " []"]);
    }
  }
  let edited = text;
  for (const [s, e, r] of spans.sort((a, b) => b[0] - a[0])) edited = `${edited.slice(0, s)}${r}${edited.slice(e)}`;
  return proveEdit(edited, before, where, current.filter((v) => v !== item));
}

export interface HermesConfigResult {
  file: string;
  changed: boolean;
  content: string;
  backup?: string;
  /** The file did not exist and was created. */
  created?: boolean;
}

/** Adds the outbox to a profile's config.yaml: atomic, with a backup beside it. */
export async function installHermesConfig(options: { config: Config; profile?: string; dryRun?: boolean }): Promise<HermesConfigResult> {
  const { config } = options;
  checkOutboxForGateway(config.outbox);
  assertDedicatedOutbox(config);
  const file = hermesConfigPath(config, options.profile);
  return editHermesConfig(file, (text) => addAllowDir(text, config.outbox, config.home), {
    ...(options.dryRun ? { dryRun: true } : {}),
    // Nothing to edit is not a reason to create one: say where it looked, and what else decides.
    missing: `${escapeText(file)} does not exist${options.profile ? "; is the profile name right?" : ""} (HERMES_HOME is ${escapeText(config.hermesHome)}): run this as the gateway's user with the HERMES_HOME the gateway has; a gateway without a config.yaml takes its allowed roots from its environment alone (install systemd, or HERMES_MEDIA_ALLOW_DIRS in its .env)`,
    byHand: `add ${escapeText(config.outbox)} to gateway.media_delivery_allow_dirs by hand`,
  });
}

export interface EditOptions {
  dryRun?: boolean;
  /** The message when the file does not exist (exit 2); without it, a missing file is edited from empty and created 0600. */
  missing?: string;
  /** What to do by hand when the edit cannot be made exactly. */
  byHand: string;
}

/**
 * Edits a Hermes config.yaml with `edit` (undefined: nothing to change):
 * written atomically with its owner and mode kept, after a backup
 * `config.yaml.media-outbox-<UTC time>.bak` (0600) beside it.
 */
export async function editHermesConfig(file: string, edit: (text: string) => Promise<string | undefined>, options: EditOptions): Promise<HermesConfigResult> {
  let text = "";
  let st: fs.Stats | undefined;
  try {
    // Never waited on: a FIFO or a device in its place is refused at once.
    ({ text, stat: st } = readOperatorFile(file, { what: "Hermes config file" }));
  } catch (err) {
    if (!isErrno(err, "ENOENT") || options.missing !== undefined) {
      if (isErrno(err, "ENOENT")) throw new FatalError("config_invalid", options.missing!);
      throw err;
    }
  }
  let edited: string | undefined;
  try {
    edited = await edit(text);
  } catch (err) {
    if (err instanceof FatalError) throw new FatalError("config_invalid", `cannot edit ${escapeText(file)} safely: ${err.message}; ${options.byHand}`);
    throw err;
  }
  if (edited === undefined) return { file, changed: false, content: text };
  if (options.dryRun) return { file, changed: true, content: edited };
  if (!st) {
    // 0600: config.yaml is on the gateway's denylist; it may come to hold secrets.
    writeFileAtomic(file, edited, { mode: 0o600 });
    return { file, changed: true, content: edited, created: true };
  }
  const stamp = new Date().toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
  // 0600: it holds what config.yaml holds. Never over an earlier backup (two edits in one second).
  let backup = `${file}.media-outbox-${stamp}.bak`;
  for (let n = 2; ; n++) {
    try {
      fs.writeFileSync(backup, text, { flag: "wx", mode: 0o600 });
      break;
    } catch (err) {
      if (!isErrno(err, "EEXIST") || n > 100) throw err;
      backup = `${file}.media-outbox-${stamp}-${n}.bak`;
    }
  }
  writeFileAtomic(file, edited, { mode: st.mode & 0o7777, uid: st.uid, gid: st.gid });
  return { file, changed: true, content: edited, backup };
}
