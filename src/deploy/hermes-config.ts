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

/** The configured allow-dirs of a config.yaml text: undefined when the key is absent. */
export async function readAllowDirs(text: string): Promise<unknown> {
  const YAML = await loadYaml();
  const doc = YAML.parseDocument(text);
  if (doc.errors.length > 0) throw configError(`not valid YAML: ${doc.errors[0]!.message}`);
  return (doc.toJS() as { gateway?: { media_delivery_allow_dirs?: unknown } } | null)?.gateway?.media_delivery_allow_dirs;
}

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
  const YAML = await loadYaml();
  const doc = YAML.parseDocument(text, { keepSourceTokens: true });
  if (doc.errors.length > 0) throw configError(`not valid YAML: ${doc.errors[0]!.message}`);
  const before = doc.toJS() as Record<string, unknown> | null;
  const item = yamlScalar(outbox);
  const current = (before as { gateway?: { media_delivery_allow_dirs?: unknown } } | null)?.gateway?.media_delivery_allow_dirs;
  if (listsOutbox(current, outbox, home)) return undefined;
  const root = doc.contents;
  let edited: string;
  // New lines end the way the file's lines do.
  const nl = text.includes("\r\n") ? "\r\n" : "\n";
  const insert = (at: number, s: string) => `${text.slice(0, at)}${s.replace(/\n/g, nl)}${text.slice(at)}`;
  const append = (s: string) => `${text}${text === "" || text.endsWith("\n") ? "" : nl}${s.replace(/\n/g, nl)}`;

  if (root === null || (YAML.isScalar(root) && root.value === null)) {
    edited = append(`gateway:\n  media_delivery_allow_dirs:\n    - ${item}\n`);
  } else if (!YAML.isMap(root) || root.flow) {
    throw configError("the top level is not a block mapping");
  } else {
    const gwPair = root.items.find((p) => YAML.isScalar(p.key) && p.key.value === "gateway");
    if (!gwPair) {
      edited = append(`gateway:\n  media_delivery_allow_dirs:\n    - ${item}\n`);
    } else {
      const gw = gwPair.value;
      const keyStart = (gwPair.key as { range: [number, number, number] }).range[0];
      const gwIndent = column(text, keyStart);
      if (gw === null || (YAML.isScalar(gw) && gw.value === null && gw.range)) {
        const { at, prefix } = afterLine(text, (gwPair.key as { range: [number, number, number] }).range[1]);
        const ind = " ".repeat(gwIndent + 2);
        edited = insert(at, `${prefix}${ind}media_delivery_allow_dirs:\n${ind}  - ${item}\n`);
      } else if (!YAML.isMap(gw) || gw.flow) {
        throw configError("gateway is not a block mapping");
      } else {
        const pair = gw.items.find((p) => YAML.isScalar(p.key) && p.key.value === "media_delivery_allow_dirs");
        const firstKey = gw.items[0]!.key as { range: [number, number, number] };
        const ind = " ".repeat(column(text, firstKey.range[0]));
        if (!pair) {
          const last = gw.items[gw.items.length - 1]!;
          const end = (last.value as { range?: [number, number, number] } | null)?.range?.[1] ?? (last.key as { range: [number, number, number] }).range[1];
          const { at, prefix } = afterLine(text, end);
          edited = insert(at, `${prefix}${ind}media_delivery_allow_dirs:\n${ind}  - ${item}\n`);
        } else {
          const v = pair.value;
          const keyRange = (pair.key as { range: [number, number, number] }).range;
          if (v === null || (YAML.isScalar(v) && v.value === null)) {
            const { at, prefix } = afterLine(text, keyRange[1]);
            edited = insert(at, `${prefix}${ind}  - ${item}\n`);
          } else if (YAML.isSeq(v) && v.flow) {
            const close = text.lastIndexOf("]", v.range![1]);
            edited = insert(close, v.items.length === 0 ? item : `, ${item}`);
          } else if (YAML.isSeq(v)) {
            const last = v.items[v.items.length - 1] as { range: [number, number, number] };
            const { at, prefix } = afterLine(text, last.range[1]);
            edited = insert(at, `${prefix}${" ".repeat(column(text, v.range![0]))}- ${item}\n`);
          } else {
            throw configError("gateway.media_delivery_allow_dirs is not a list");
          }
        }
      }
    }
  }

  // Prove the edit: the document is the same except for exactly one more list entry.
  const after = YAML.parseDocument(edited);
  const expected = structuredClone(before ?? {}) as Record<string, Record<string, unknown>>;
  expected.gateway = { ...(expected.gateway ?? {}) };
  const list = Array.isArray(expected.gateway.media_delivery_allow_dirs) ? expected.gateway.media_delivery_allow_dirs : [];
  expected.gateway.media_delivery_allow_dirs = [...list, outbox];
  if (after.errors.length > 0 || !isDeepStrictEqual(after.toJS(), expected)) {
    throw configError("the edit could not be made without changing something else");
  }
  return edited;
}

export interface HermesConfigResult {
  file: string;
  changed: boolean;
  content: string;
  backup?: string;
}

/** Adds the outbox to a profile's config.yaml: atomic, with a backup beside it. */
export async function installHermesConfig(options: { config: Config; profile?: string; dryRun?: boolean }): Promise<HermesConfigResult> {
  const { config } = options;
  checkOutboxForGateway(config.outbox);
  const file = hermesConfigPath(config, options.profile);
  let text: string;
  let st: fs.Stats;
  try {
    st = fs.statSync(file);
    text = fs.readFileSync(file, "utf8");
  } catch (err) {
    if (isErrno(err, "ENOENT")) {
      throw new FatalError("config_invalid", `${escapeText(file)} does not exist${options.profile ? "; is the profile name right?" : ""} (HERMES_HOME is ${escapeText(config.hermesHome)})`);
    }
    throw err;
  }
  let edited: string | undefined;
  try {
    edited = await addAllowDir(text, config.outbox, config.home);
  } catch (err) {
    if (err instanceof FatalError) {
      throw new FatalError(
        "config_invalid",
        `cannot edit ${escapeText(file)} safely: ${err.message}; add ${escapeText(config.outbox)} to gateway.media_delivery_allow_dirs by hand`,
      );
    }
    throw err;
  }
  if (edited === undefined) return { file, changed: false, content: text };
  if (options.dryRun) return { file, changed: true, content: edited };
  const stamp = new Date().toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
  const backup = `${file}.media-outbox-${stamp}.bak`;
  // 0600: it holds what config.yaml holds.
  fs.writeFileSync(backup, text, { flag: "wx", mode: 0o600 });
  writeFileAtomic(file, edited, { mode: st.mode & 0o7777, uid: st.uid, gid: st.gid });
  return { file, changed: true, content: edited, backup };
}
