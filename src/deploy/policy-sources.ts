// Every place the gateway reads its media policy (../shared/DESIGN.md), what
// each says, and what the gateway ends up with. The gateway's environment
// (its systemd unit) is not the only source: at start and again every turn it
// loads $HERMES_HOME/.env over it (override on), the managed scope's .env
// (/etc/hermes, or $HERMES_MANAGED_DIR) over that, and at start-up gateways of
// mid-2026 copy config.yaml's `gateway:` keys over the environment (newer ones
// let an explicitly set variable win). Gateways that multiplex profiles read
// the routed profile's config.yaml for its turns. doctor shows every source and
// fails when the value the gateway ends up with (under either precedence) lacks
// the outbox, or when strict mode is on in one source and off in another;
// install systemd warns when a source would override its drop-in.
import fs from "node:fs";
import path from "node:path";
import { escapeText, quoteValue } from "../core/escape.js";
import { ALLOW_DIRS_ENV, STRICT_ENV, TRUST_RECENT_ENV, TRUST_RECENT_SECONDS_ENV, isUnderRoot, parseAllowDirs, strictModeOn, trustRecentOn } from "../safety/gateway.js";
import { readOperatorFileBytes } from "../safety/operator-file.js";
import { type UnitScope, effectiveEnvironment, gatewayHome, onDisk, unitHermesHome } from "./gateway-units.js";
import { readYaml } from "./hermes-config.js";
import type { Systemctl } from "./systemctl.js";

export const POLICY_VARS = [ALLOW_DIRS_ENV, STRICT_ENV, TRUST_RECENT_ENV, TRUST_RECENT_SECONDS_ENV] as const;
export type PolicyVar = (typeof POLICY_VARS)[number];

/** config.yaml `gateway:` keys and the variables the gateway copies them to. */
const CONFIG_KEYS: Record<PolicyVar, string> = {
  [ALLOW_DIRS_ENV]: "media_delivery_allow_dirs",
  [STRICT_ENV]: "strict",
  [TRUST_RECENT_ENV]: "trust_recent_files",
  [TRUST_RECENT_SECONDS_ENV]: "trust_recent_files_seconds",
};

export type SourceKind = "unit" | "env-file" | "managed-env-file" | "config" | "managed-config";

export interface PolicySource {
  kind: SourceKind;
  /** What an operator reads: a file path, or "the unit's environment". */
  label: string;
  /** The file on the target system, when the source is one. */
  file?: string;
  /** What the source sets, as the gateway would put it in its environment (config values converted as it converts them). */
  values: Partial<Record<PolicyVar, string>>;
  /** Which name each value is written under in the source (config.yaml keys, .env names). */
  written: Partial<Record<PolicyVar, string>>;
  /** How each setting reads in the source, escaped: `NAME=value`, or `gateway.key: value` for config.yaml. */
  shown?: Partial<Record<PolicyVar, string>>;
  /** Why doctor cannot tell what it says (unreadable, not parsable, `${VAR}` expansion). */
  unknown?: string;
}

export interface PolicyContext {
  /** `UNIT` or `UNIT profile NAME`; the Hermes home when no unit is known. */
  name: string;
  hermesHome: string;
  home: string;
  /** The gateway unit's User= (none: root, or the gateway is not a unit). */
  user?: string;
  /** The gateway multiplexes profiles (`gateway.multiplex_profiles`): it loads .env at start-up only. */
  multiplex?: boolean;
  sources: PolicySource[];
}

type YamlModule = typeof import("yaml");

// ---------------------------------------------------------------------------
// Reading the sources
// ---------------------------------------------------------------------------

// ---------------------------------------------------------------------------
// A .env file as Hermes loads it: python-dotenv 1.2.2's parser (hermes-agent's
// pinned version, dotenv/parser.py), ported step by step: the file read in
// text mode (\r\n and \r are line breaks), `\s` as Python reads it, a line
// the parser cannot read skipped (up to its end) while the lines after it
// still count, and `${NAME}` expanded in every value, quoted or not. Hermes'
// own repair of a damaged file (concatenated lines, NUL bytes, `***`
// placeholders) is not followed.
// ---------------------------------------------------------------------------

/** Python's `\s` (str.isspace). */
const PY_SPACE = /[\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/;
const isPySpace = (ch: string | undefined) => ch !== undefined && PY_SPACE.test(ch);
/** python-dotenv's `${NAME}` / `${NAME:-default}`. */
const EXPANSION = /\$\{[^}:]*(?::-[^}]*)?\}/;
const DOUBLE_QUOTE_ESCAPES: Record<string, string> = { "\\": "\\", "'": "'", '"': '"', a: "\x07", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t", v: "\v" };

class DotenvSyntaxError extends Error {}

/**
 * A quoted value from the opening quote at `open`, as the pattern
 * `'((?:\\'|[^'])*)'` matches it (backtracking included): `\` followed by
 * the quote does not close it; when no closing quote follows, the last such
 * pair's quote closes it; with none, the line is unreadable.
 */
function quotedValue(text: string, open: number): { raw: string; next: number } {
  const q = text[open]!;
  let lastPair = -1;
  let j = open + 1;
  while (j < text.length && text[j] !== q) {
    if (text[j] === "\\" && text[j + 1] === q) {
      lastPair = j + 1;
      j += 2;
    } else j++;
  }
  const close = j < text.length ? j : lastPair;
  if (close < 0) throw new DotenvSyntaxError();
  const raw = text.slice(open + 1, close);
  const decoded = q === "'" ? raw.replace(/\\[\\']/g, (m) => m[1]!) : raw.replace(/\\[\\'"abfnrtv]/g, (m) => DOUBLE_QUOTE_ESCAPES[m[1]!]!);
  return { raw: decoded, next: close + 1 };
}

/**
 * The variables a .env file sets, read as python-dotenv 1.2.2 reads it (the
 * last setting wins; a name without `=` sets nothing), and the names whose
 * value uses `${...}` expansion (which doctor does not follow).
 */
export function parseEnvFile(input: string): { values: Map<string, string>; expands: Set<string> } {
  const text = input.replace(/\r\n?/g, "\n");
  const values = new Map<string, string>();
  const expands = new Set<string>();
  const n = text.length;
  let i = 0;
  const inlineSpace = () => {
    while (i < n && text[i] !== "\n" && isPySpace(text[i])) i++;
  };
  while (i < n) {
    while (i < n && isPySpace(text[i])) i++;
    if (i >= n) break;
    try {
      if (text.startsWith("export", i) && text[i + 6] !== "\n" && isPySpace(text[i + 6])) {
        i += 6;
        inlineSpace();
      }
      let key: string | undefined;
      if (text[i] === "'") {
        const close = text.indexOf("'", i + 1);
        if (close <= i + 1) throw new DotenvSyntaxError();
        key = text.slice(i + 1, close);
        i = close + 1;
      } else if (text[i] !== "#") {
        const from = i;
        while (i < n && text[i] !== "=" && text[i] !== "#" && !isPySpace(text[i])) i++;
        if (i === from) throw new DotenvSyntaxError();
        key = text.slice(from, i);
      }
      inlineSpace();
      let value: string | undefined;
      if (key !== undefined && text[i] === "=") {
        i++;
        inlineSpace();
        if (text[i] === "'" || text[i] === '"') {
          const quoted = quotedValue(text, i);
          value = quoted.raw;
          i = quoted.next;
        } else {
          const end = text.indexOf("\n", i) < 0 ? n : text.indexOf("\n", i);
          let part = text.slice(i, end);
          // `\s+#.*` removed, then trailing whitespace.
          for (let h = part.indexOf("#"); h >= 0; h = part.indexOf("#", h + 1)) {
            if (h > 0 && isPySpace(part[h - 1])) {
              let s = h - 1;
              while (s > 0 && isPySpace(part[s - 1])) s--;
              part = part.slice(0, s);
              break;
            }
          }
          let t = part.length;
          while (t > 0 && isPySpace(part[t - 1])) t--;
          value = part.slice(0, t);
          i = end;
        }
      }
      // Only a comment may follow on the line.
      inlineSpace();
      if (text[i] === "#") while (i < n && text[i] !== "\n") i++;
      if (i < n && text[i] !== "\n") throw new DotenvSyntaxError();
      i++;
      if (key !== undefined && value !== undefined) {
        values.set(key, value);
        if (EXPANSION.test(value)) expands.add(key);
        else expands.delete(key);
      } else if (key !== undefined) {
        // A name without `=` is read as None, which replaces an earlier value and sets nothing.
        values.delete(key);
        expands.delete(key);
      }
    } catch (err) {
      if (!(err instanceof DotenvSyntaxError)) throw err;
      // The rest of the line where reading stopped is skipped.
      while (i < n && text[i] !== "\n") i++;
      i++;
    }
  }
  return { values, expands };
}

/** A .env's text as Hermes decodes it: UTF-8 (a BOM kept), else Latin-1. */
export function dotenvText(bytes: Buffer): string {
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return bytes.toString("latin1");
  }
}

function readText(file: string, decode: (bytes: Buffer) => string = (b) => b.toString("utf8")): string | undefined | Error {
  try {
    // A FIFO or a device in a .env's place is an error at once, never waited on.
    return decode(readOperatorFileBytes(file, { what: "file", maxBytes: 16 * 1024 * 1024 }).bytes);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === "ENOENT" || code === "ENOTDIR" ? undefined : (err as Error);
  }
}

function envFileSource(kind: "env-file" | "managed-env-file", file: string, shown: string): PolicySource | undefined {
  const text = readText(file, dotenvText);
  if (text === undefined) return undefined;
  const label = escapeText(shown);
  if (text instanceof Error) return { kind, label, file: shown, values: {}, written: {}, unknown: `cannot read it: ${escapeText(text.message)}` };
  const parsed = parseEnvFile(text);
  const source: PolicySource = { kind, label, file: shown, values: {}, written: {} };
  for (const v of POLICY_VARS) {
    if (!parsed.values.has(v)) continue;
    source.values[v] = parsed.values.get(v)!;
    source.written[v] = v;
    if (parsed.expands.has(v)) source.unknown = `${v} uses \${...} expansion, which doctor does not follow`;
  }
  return source;
}

/** Python's truthiness of a YAML value, as the gateway tests it (`"1" if value else "0"`). */
function pythonTruthy(value: unknown): boolean {
  if (Array.isArray(value)) return value.length > 0;
  if (value && typeof value === "object") return Object.keys(value).length > 0;
  return Boolean(value);
}

/** Python's str() of a scalar. */
function pythonStr(value: unknown): string {
  if (value === true) return "True";
  if (value === false) return "False";
  return String(value);
}

async function configSource(YAML: YamlModule, kind: "config" | "managed-config", file: string, shown: string): Promise<{ source?: PolicySource; gateway?: Record<string, unknown> }> {
  const text = readText(file);
  if (text === undefined) return {};
  const label = escapeText(shown);
  if (text instanceof Error) return { source: { kind, label, file: shown, values: {}, written: {}, unknown: `cannot read it: ${escapeText(text.message)}` } };
  const read = readYaml(YAML, text);
  if ("problem" in read) return { source: { kind, label, file: shown, values: {}, written: {}, unknown: read.problem } };
  const js = read.value as { gateway?: unknown } | null;
  const gateway = js && typeof js.gateway === "object" && js.gateway !== null ? (js.gateway as Record<string, unknown>) : {};
  const source: PolicySource = { kind, label, file: shown, values: {}, written: {} };
  for (const v of POLICY_VARS) {
    const key = CONFIG_KEYS[v];
    if (!Object.hasOwn(gateway, key)) continue;
    const value = gateway[key];
    if (value === null || value === undefined) continue;
    source.written[v] = `gateway.${key}`;
    (source.shown ??= {})[v] = `gateway.${key}: ${quoteValue(value)}`;
    if (v === ALLOW_DIRS_ENV) {
      // Only a non-empty value is copied; a list is joined with ":".
      if (!pythonTruthy(value)) continue;
      const joined = typeof value === "string" ? value : Array.isArray(value) ? value.filter(pythonTruthy).map(pythonStr).join(":") : "";
      if (joined !== "") source.values[v] = joined;
    } else if (v === TRUST_RECENT_SECONDS_ENV) source.values[v] = pythonStr(value);
    else source.values[v] = pythonTruthy(value) ? "1" : "0";
    if (typeof value === "string" && value.includes("${")) source.unknown = `gateway.${key} uses \${...} expansion, which doctor does not follow`;
  }
  return { source, gateway };
}

export interface ContextOptions {
  scope: UnitScope;
  /** The gateway unit (its environment is a source), or none: a gateway not run by systemd. */
  unit?: string;
  systemctl?: Systemctl;
  /** Without a unit: the Hermes home to read. */
  hermesHome?: string;
  home?: string;
}

/** Every source for one gateway (and, when it multiplexes profiles, one context per profile). */
export async function policyContexts(options: ContextOptions): Promise<PolicyContext[]> {
  const YAML = await import("yaml");
  const { scope } = options;
  const sources: PolicySource[] = [];
  let hermesHome = options.hermesHome ?? path.join(scope.home, ".hermes");
  let home = options.home ?? scope.home;
  let managedDir = "/etc/hermes";
  let user: string | undefined;
  if (options.unit) {
    const env = effectiveEnvironment(scope, options.unit, [...POLICY_VARS, "HERMES_HOME", "HERMES_MANAGED_DIR"], options.systemctl);
    home = env.home;
    user = env.user;
    hermesHome = unitHermesHome(env.vars.get("HERMES_HOME")?.value) ?? path.join(gatewayHome(scope, env.user), ".hermes");
    managedDir = env.vars.get("HERMES_MANAGED_DIR")?.value || managedDir;
    const unit: PolicySource = { kind: "unit", label: `the environment of ${escapeText(options.unit)}`, values: {}, written: {} };
    for (const v of POLICY_VARS) {
      const s = env.vars.get(v)!;
      if (s.unknown) unit.unknown = escapeText(s.unknown);
      if (s.value !== undefined) {
        unit.values[v] = s.value;
        unit.written[v] = v;
      }
    }
    sources.push(unit);
  }
  const at = (p: string) => onDisk(scope, p);
  const userEnv = envFileSource("env-file", at(path.join(hermesHome, ".env")), path.join(hermesHome, ".env"));
  if (userEnv) sources.push(userEnv);
  const managedEnv = envFileSource("managed-env-file", at(path.join(managedDir, ".env")), path.join(managedDir, ".env"));
  if (managedEnv) sources.push(managedEnv);
  const managed = await configSource(YAML, "managed-config", at(path.join(managedDir, "config.yaml")), path.join(managedDir, "config.yaml"));
  if (managed.source) sources.push(managed.source);
  const own = await configSource(YAML, "config", at(path.join(hermesHome, "config.yaml")), path.join(hermesHome, "config.yaml"));
  const name = options.unit ? escapeText(options.unit) : escapeText(hermesHome);
  const multiplex = pythonTruthy(managed.gateway?.multiplex_profiles ?? own.gateway?.multiplex_profiles);
  const contexts: PolicyContext[] = [{ name, hermesHome, home, ...(user ? { user } : {}), ...(multiplex ? { multiplex } : {}), sources: own.source ? [...sources, own.source] : sources }];
  if (multiplex) {
    let profiles: string[] = [];
    try {
      profiles = fs.readdirSync(at(path.join(hermesHome, "profiles"))).sort();
    } catch {
      profiles = [];
    }
    for (const p of profiles) {
      const file = path.join(hermesHome, "profiles", p, "config.yaml");
      const routed = await configSource(YAML, "config", at(file), file);
      if (routed.source) contexts.push({ name: `${name} profile ${escapeText(p)}`, hermesHome: path.dirname(file), home, ...(user ? { user } : {}), multiplex, sources: [...sources, routed.source] });
    }
  }
  return contexts;
}

// ---------------------------------------------------------------------------
// What the gateway ends up with
// ---------------------------------------------------------------------------

export interface Outcome {
  value: string | undefined;
  source: PolicySource | undefined;
  /** Which gateways end up with it. */
  versions: "all" | "mid-2026" | "newer";
}

/**
 * The value of `v` the gateway ends up with, under both precedences: the
 * managed .env, then the Hermes .env (loaded over everything, every turn);
 * else config.yaml (managed keys first) over the unit in mid-2026 gateways,
 * the unit over config.yaml in newer ones. A gateway that multiplexes
 * profiles loads the .env files at start-up only (its turns read secrets
 * from each profile's own scope, never into the environment), before
 * config.yaml is copied over them: there config.yaml beats the .env too in
 * mid-2026 gateways.
 */
export function outcomes(sources: readonly PolicySource[], v: PolicyVar, multiplex = false): Outcome[] {
  const setting = (kind: SourceKind) => sources.find((s) => s.kind === kind && s.values[v] !== undefined);
  const env = setting("managed-env-file") ?? setting("env-file");
  const config = setting("managed-config") ?? setting("config");
  if (env && !(multiplex && config)) return [{ value: env.values[v], source: env, versions: "all" }];
  const environment = env ?? setting("unit");
  if (!config || !environment || config.values[v] === environment.values[v]) {
    const s = config ?? environment;
    return [{ value: s?.values[v], source: s, versions: "all" }];
  }
  return [
    { value: config.values[v], source: config, versions: "mid-2026" },
    { value: environment.values[v], source: environment, versions: "newer" },
  ];
}

/**
 * Every root the gateway may end up delivering from (HERMES_MEDIA_ALLOW_DIRS
 * as it parses it, under either precedence), each with the sources that set
 * the value it comes from.
 */
export function allowedRoots(ctx: PolicyContext): { root: string; sources: PolicySource[] }[] {
  const found = new Map<string, PolicySource[]>();
  for (const o of outcomes(ctx.sources, ALLOW_DIRS_ENV, ctx.multiplex)) {
    for (const root of parseAllowDirs(o.value, ctx.home)) {
      const sources = found.get(root) ?? [];
      if (o.source && !sources.includes(o.source)) sources.push(o.source);
      found.set(root, sources);
    }
  }
  return [...found].map(([root, sources]) => ({ root, sources }));
}

const VERSIONS: Record<Outcome["versions"], string> = { all: "", "mid-2026": " (gateways of mid-2026, which copy config.yaml over the environment)", newer: " (newer gateways, where the environment wins)" };

/** How a setting reads in its source. */
const shown = (s: PolicySource, v: PolicyVar) => s.shown?.[v] ?? `${s.written[v]}=${escapeText(s.values[v] ?? "")}`;

function says(s: PolicySource, vars: readonly PolicyVar[]): string {
  const parts = vars.filter((v) => s.written[v] !== undefined).map((v) => shown(s, v));
  // A file doctor could not read (or parse) sets nothing it knows of: not "none".
  return `${s.label}: ${parts.length > 0 ? parts.join(", ") : s.unknown ? "not known" : "sets none of them"}`;
}

export interface PolicyCheck {
  check: string;
  status: "pass" | "warn" | "fail";
  message: string;
  fix?: string;
}

function fixFor(s: PolicySource, v: PolicyVar, outbox: string): string {
  const where = s.kind === "unit" ? "media-outbox install systemd (the drop-in)" : s.file ? escapeText(s.file) : s.label;
  if (v === ALLOW_DIRS_ENV) {
    if (s.kind === "config" || s.kind === "managed-config") return `add ${escapeText(outbox)} to gateway.media_delivery_allow_dirs in ${where} (media-outbox install hermes-config does it for a Hermes home), or remove the key; then restart the gateway`;
    if (s.kind === "unit") return `${where}; then restart the gateway`;
    return `remove ${v} from ${where} (the unit's drop-in sets it), or add ${escapeText(outbox)} to it; then restart the gateway`;
  }
  return `set strict mode the same way everywhere: remove ${s.written[v] ?? v} from ${where}, or make it agree; then restart the gateway`;
}

/** Doctor's lines for one context: the allowed roots and strict mode, each naming every source. */
export function policyChecks(ctx: PolicyContext, outbox: string, outboxReal: string): PolicyCheck[] {
  const checks: PolicyCheck[] = [];
  const unknown = ctx.sources.filter((s) => s.unknown);
  const name = `media policy ${ctx.name}`;
  const setters = ctx.sources.filter((s) => POLICY_VARS.some((v) => s.written[v] !== undefined));
  const read = ctx.sources.length === 0 ? "no source found" : ctx.sources.map((s) => says(s, [ALLOW_DIRS_ENV])).join("; ");

  // Allowed roots.
  const results = outcomes(ctx.sources, ALLOW_DIRS_ENV, ctx.multiplex);
  const lacking = results.filter((o) => o.source && o.source.kind !== "unit" && !isUnderRoot(outboxReal, parseAllowDirs(o.value, ctx.home)) && !isUnderRoot(outbox, parseAllowDirs(o.value, ctx.home)));
  if (unknown.length > 0) {
    checks.push({ check: name, status: "warn", message: `cannot tell what ${unknown.map((s) => `${s.label} says (${s.unknown})`).join("; ")}. ${read}`, fix: "run media-outbox doctor as the gateway's user or root, who can read them all, and write each value literally (no ${...}) in valid YAML or .env syntax; then run it again" });
  } else if (lacking.length > 0) {
    const o = lacking[0]!;
    checks.push({
      check: name,
      status: "fail",
      message: `the gateway ends up with ${ALLOW_DIRS_ENV}=${escapeText(o.value ?? "")} from ${o.source!.label}${VERSIONS[o.versions]}, which lacks the outbox: outbox files are not delivered. Sources: ${read}`,
      fix: fixFor(o.source!, ALLOW_DIRS_ENV, outbox),
    });
  } else {
    // Set nowhere: not "comes from nothing"; whether the gateway then delivers from the outbox is the gateway's own line.
    const message = results.every((o) => !o.source)
      ? `no source sets ${ALLOW_DIRS_ENV}, so none overrides it without the outbox (the gateway's own line says what it gets). Sources: ${read}`
      : `${ALLOW_DIRS_ENV} comes from ${results.map((o) => `${o.source!.label}${VERSIONS[o.versions]}`).join(" / ")}; no other source overrides it without the outbox. Sources: ${read}`;
    checks.push({ check: name, status: "pass", message });
  }

  // Strict mode: every source that sets it must agree.
  const strictVars = [STRICT_ENV, TRUST_RECENT_ENV] as const;
  const on = (v: PolicyVar, value: string) => (v === STRICT_ENV ? strictModeOn(value) : !trustRecentOn(value));
  const conflicts = strictVars.flatMap((v) => {
    const set = ctx.sources.filter((s) => s.values[v] !== undefined);
    const strict = set.filter((s) => on(v, s.values[v]!));
    const loose = set.filter((s) => !on(v, s.values[v]!));
    return strict.length > 0 && loose.length > 0 ? [{ v, strict, loose }] : [];
  });
  const strictName = `media policy ${ctx.name} strict`;
  const strictRead = setters.length === 0 ? "no source sets it" : setters.map((s) => says(s, [STRICT_ENV, TRUST_RECENT_ENV, TRUST_RECENT_SECONDS_ENV])).join("; ");
  if (conflicts.length > 0) {
    const c = conflicts[0]!;
    const final = outcomes(ctx.sources, c.v, ctx.multiplex).map((o) => `${o.source ? `${shown(o.source, c.v)} from ${o.source.label}` : "unset"}${VERSIONS[o.versions]}`).join(" / ");
    const culprit = c.loose.find((s) => s.kind !== "unit") ?? c.strict.find((s) => s.kind !== "unit") ?? c.loose[0]!;
    checks.push({
      check: strictName,
      status: "fail",
      message: `strict mode is set in ${c.strict.map((s) => s.label).join(", ")} and unset in ${c.loose.map((s) => s.label).join(", ")}: the gateway ends up with ${final}. Sources: ${strictRead}`,
      fix: fixFor(culprit, c.v, outbox),
    });
  } else {
    checks.push({ check: strictName, status: "pass", message: `every source that sets strict mode agrees. Sources: ${strictRead}` });
  }
  return checks;
}

/** Doctor: the lines for every gateway unit (or, with none, the Hermes home). */
export async function mediaPolicyChecks(options: { scope: UnitScope; units: string[]; systemctl?: Systemctl; hermesHome: string; home: string; outbox: string; outboxReal: string }): Promise<PolicyCheck[]> {
  const targets: ContextOptions[] =
    options.units.length > 0
      ? options.units.map((unit) => ({ scope: options.scope, unit, ...(options.systemctl ? { systemctl: options.systemctl } : {}) }))
      : [{ scope: options.scope, hermesHome: options.hermesHome, home: options.home }];
  const checks: PolicyCheck[] = [];
  for (const t of targets) for (const ctx of await policyContexts(t)) checks.push(...policyChecks(ctx, options.outbox, options.outboxReal));
  return checks;
}

/**
 * install systemd: the sources that would override the drop-in for `unit`
 * (its value lists the outbox; with --strict it turns strict mode on), each
 * with its fix. The unit's own environment is the drop-in's, so it is left out.
 */
export async function dropInOverrides(options: { scope: UnitScope; unit: string; systemctl?: Systemctl; outbox: string; strict: boolean }): Promise<string[]> {
  const warnings: string[] = [];
  for (const ctx of await policyContexts(options)) {
    const others = ctx.sources.filter((s) => s.kind !== "unit");
    for (const s of others) {
      const value = s.values[ALLOW_DIRS_ENV];
      if (value !== undefined && !isUnderRoot(options.outbox, parseAllowDirs(value, ctx.home))) {
        const when = s.kind === "env-file" || s.kind === "managed-env-file" ? "which the gateway loads over its environment at start and every turn" : "which gateways of mid-2026 copy over the environment at start-up";
        warnings.push(`${ctx.name}: ${s.label} sets ${shown(s, ALLOW_DIRS_ENV)}, ${when}: the drop-in's ${ALLOW_DIRS_ENV} would be overridden and outbox files not delivered. Fix: ${fixFor(s, ALLOW_DIRS_ENV, options.outbox)}`);
      }
      if (!options.strict) continue;
      for (const v of [STRICT_ENV, TRUST_RECENT_ENV] as const) {
        const set = s.values[v];
        const off = set !== undefined && (v === STRICT_ENV ? !strictModeOn(set) : trustRecentOn(set));
        if (off) warnings.push(`${ctx.name}: ${s.label} sets ${shown(s, v)}, which overrides the drop-in's strict mode. Fix: ${fixFor(s, v, options.outbox)}`);
      }
    }
  }
  return warnings;
}
