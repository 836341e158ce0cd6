// The parts of systemd's unit-file and environment-file syntax that media-outbox
// reads and writes: assignments, quoted words, specifiers, EnvironmentFile=
// lines. Only what the installer needs, and it refuses what it cannot read
// exactly rather than guessing.
import { usageError } from "../core/errors.js";
import { escapeText } from "../core/escape.js";

export interface Assignment {
  section: string;
  key: string;
  value: string;
}

/** Assignments of a unit file or drop-in, in order (continuation lines joined, comments dropped). */
export function parseUnitText(text: string): Assignment[] {
  const out: Assignment[] = [];
  let section = "";
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    let line = lines[i]!.trim();
    if (line === "" || line.startsWith("#") || line.startsWith(";")) continue;
    if (line.startsWith("[") && line.endsWith("]")) {
      section = line.slice(1, -1);
      continue;
    }
    // A trailing backslash continues the value on the next line (comment lines in between are skipped).
    while (line.endsWith("\\") && i + 1 < lines.length) {
      const next = lines[++i]!;
      if (/^\s*[#;]/.test(next)) continue;
      line = `${line.slice(0, -1)} ${next.trim()}`;
    }
    const eq = line.indexOf("=");
    if (eq <= 0) continue;
    out.push({ section, key: line.slice(0, eq).trim(), value: line.slice(eq + 1).trim() });
  }
  return out;
}

const C_ESCAPES: Record<string, string> = { n: "\n", t: "\t", r: "\r", a: "\x07", b: "\b", f: "\f", v: "\v", "\\": "\\", '"': '"', "'": "'", s: " " };

/** The NAME=VALUE assignments of an Environment= value, in order (splitWords; a word without `=` or a name is no assignment). */
export function environmentAssignments(value: string): { name: string; value: string }[] {
  const out: { name: string; value: string }[] = [];
  for (const word of splitWords(value)) {
    const eq = word.indexOf("=");
    if (eq > 0) out.push({ name: word.slice(0, eq), value: word.slice(eq + 1) });
  }
  return out;
}

/**
 * Splits a value into words the way systemd does for Environment= and
 * ReadWritePaths=: whitespace separates, "…" and '…' quote, C escapes are
 * decoded. Specifiers (%…) are left as they are.
 */
export function splitWords(value: string): string[] {
  const words: string[] = [];
  let i = 0;
  while (i < value.length) {
    while (i < value.length && /\s/.test(value[i]!)) i++;
    if (i >= value.length) break;
    let word = "";
    let quote: string | undefined;
    for (; i < value.length; i++) {
      const ch = value[i]!;
      if (quote === undefined && /\s/.test(ch)) break;
      if (ch === "\\" && i + 1 < value.length) {
        const next = value[++i]!;
        if (next === "x" && /^[0-9a-fA-F]{2}$/.test(value.slice(i + 1, i + 3))) {
          word += String.fromCharCode(Number.parseInt(value.slice(i + 1, i + 3), 16));
          i += 2;
        } else word += C_ESCAPES[next] ?? next;
        continue;
      }
      if (quote === undefined && (ch === '"' || ch === "'")) {
        quote = ch;
        continue;
      }
      if (ch === quote) {
        quote = undefined;
        continue;
      }
      word += ch;
    }
    words.push(word);
  }
  return words;
}

export interface SpecifierContext {
  /** Full unit name, e.g. hermes-gateway@alice.service. */
  unit: string;
  /** The home directory %h stands for in this unit. */
  home: string;
  /** The user name %u stands for. */
  user?: string;
}

/**
 * Expands the specifiers a gateway unit may use in paths. Returns undefined
 * when the text uses one this function does not know (the caller then
 * refuses, instead of guessing what the gateway sees).
 */
export function expandSpecifiers(text: string, ctx: SpecifierContext): string | undefined {
  const dot = ctx.unit.lastIndexOf(".");
  const stem = dot > 0 ? ctx.unit.slice(0, dot) : ctx.unit;
  const at = stem.indexOf("@");
  const prefix = at >= 0 ? stem.slice(0, at) : stem;
  const instance = at >= 0 ? stem.slice(at + 1) : "";
  // A template (name@.service) has no instance yet: %i means something different in each.
  const perInstance = at >= 0 && instance === "" ? undefined : instance;
  const table: Record<string, string | undefined> = {
    "%": "%",
    n: ctx.unit,
    N: stem,
    p: prefix,
    P: unescapeUnitName(prefix),
    i: perInstance,
    I: perInstance === undefined ? undefined : unescapeUnitName(perInstance),
    h: ctx.home,
    u: ctx.user,
  };
  let unknown = false;
  const out = text.replace(/%(.?)/g, (_m, c: string) => {
    const v = table[c];
    if (v === undefined) unknown = true;
    return v ?? "";
  });
  return unknown ? undefined : out;
}

function unescapeUnitName(s: string): string {
  return s.replace(/-/g, "/").replace(/\\x([0-9a-fA-F]{2})/g, (_m, h: string) => String.fromCharCode(Number.parseInt(h, 16)));
}

/**
 * What names every instance of a template unit (`NAME@.TYPE`) in a
 * systemctl command (try-restart, stop, list-units): `NAME@*.TYPE`, a
 * pattern systemctl matches against the units loaded; the bare template
 * names none of them. The one place of that rule.
 */
export function templateInstances(template: string): string {
  if (!/@\.[a-z]+$/.test(template)) throw new Error(`${escapeText(template)} is not a template unit`);
  return template.replace(/@\.([a-z]+)$/, "@*.$1");
}

/** The longest unit name systemd takes (UNIT_NAME_MAX, less its NUL). */
export const UNIT_NAME_MAX = 255;

/**
 * A path as an instance name, as `systemd-escape --path` makes it (systemd's
 * unit_name_path_escape): slashes at both ends dropped, "/" made "-", a
 * leading ".", and each byte (of its UTF-8) that is not a letter, a digit,
 * ":", "_" or "." (so "-" and "\\" too) written `\xNN`; "/" alone is "-". A template's
 * `%f` gives the path back. For a path without "." or ".." components and
 * doubled slashes (the caller's to check).
 */
export function escapeUnitPath(p: string): string {
  let start = 0;
  let end = p.length;
  while (start < end && p[start] === "/") start++;
  while (end > start && p[end - 1] === "/") end--;
  if (start === end) return "-";
  const bytes = Buffer.from(p.slice(start, end), "utf8");
  let out = "";
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    const plain = (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || b === 0x3a || b === 0x5f || (b === 0x2e && i > 0);
    out += b === 0x2f ? "-" : plain ? String.fromCharCode(b) : `\\x${b.toString(16).padStart(2, "0")}`;
  }
  return out;
}

/** Characters no path media-outbox writes into a unit may contain. */
const UNWRITABLE = /[\u0000-\u001f\u007f"'\\]/;

/** Refuses a path that could not be written into a unit file unambiguously. */
export function assertUnitSafe(text: string, what: string): void {
  if (UNWRITABLE.test(text)) throw usageError(`${what} ${escapeText(text)} contains a quote, backslash or control character; systemd units cannot carry it safely`);
}

/** `%` starts a specifier in unit files: a literal one is written `%%`. */
export const escapeSpecifiers = (text: string) => text.replace(/%/g, "%%");

/**
 * One word of a unit-file value: `text` already has its specifiers in unit
 * form. Quoted when it contains whitespace; in ExecStart= `$` is also doubled.
 */
export function unitWord(text: string, { exec = false } = {}): string {
  let t = exec ? text.replace(/\$/g, "$$$$") : text;
  if (/[\s"'\\;]/.test(t) || t === "") t = `"${t.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
  return t;
}

/** A literal path as one unit-file word. */
export function pathWord(p: string, what: string, opts: { exec?: boolean } = {}): string {
  assertUnitSafe(p, what);
  return unitWord(escapeSpecifiers(p), opts);
}

/**
 * Parses an EnvironmentFile= file as systemd does: KEY=VALUE lines, `#` and
 * `;` comments, '…' literal, "…" with backslash escapes, unquoted values with
 * trailing whitespace trimmed, backslash-newline continuation.
 */
export function parseEnvFile(text: string): Map<string, string> {
  const vars = new Map<string, string>();
  let i = 0;
  const n = text.length;
  while (i < n) {
    // Skip blank space and comment lines.
    while (i < n && /\s/.test(text[i]!)) i++;
    if (i >= n) break;
    if (text[i] === "#" || text[i] === ";") {
      while (i < n && text[i] !== "\n") i++;
      continue;
    }
    let key = "";
    while (i < n && text[i] !== "=" && text[i] !== "\n") key += text[i++];
    if (text[i] !== "=") continue; // a line without '=' is ignored
    i++;
    key = key.trim();
    let value = "";
    let pendingSpace = "";
    while (i < n && text[i] !== "\n") {
      const ch = text[i]!;
      if (ch === "'") {
        value += pendingSpace;
        pendingSpace = "";
        const end = text.indexOf("'", i + 1);
        value += text.slice(i + 1, end < 0 ? n : end);
        i = end < 0 ? n : end + 1;
      } else if (ch === '"') {
        value += pendingSpace;
        pendingSpace = "";
        i++;
        while (i < n && text[i] !== '"') {
          if (text[i] === "\\" && i + 1 < n) {
            const next = text[i + 1]!;
            if (next === "\n") i += 2;
            else if ('"\\`$'.includes(next)) {
              value += next;
              i += 2;
            } else value += text[i++];
          } else value += text[i++];
        }
        i++;
      } else if (ch === "\\" && i + 1 < n) {
        value += pendingSpace;
        pendingSpace = "";
        if (text[i + 1] !== "\n") value += text[i + 1];
        i += 2;
      } else if (/\s/.test(ch)) {
        if (value !== "") pendingSpace += ch;
        i++;
      } else {
        value += pendingSpace + ch;
        pendingSpace = "";
        i++;
      }
    }
    if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) vars.set(key, value);
  }
  return vars;
}

/** One KEY=VALUE line of an environment file, single-quoted so nothing in it is interpreted. */
export function envFileLine(key: string, value: string): string {
  if (/[\u0000-\u001f\u007f']/.test(value)) throw usageError(`${key} value ${escapeText(value)} contains a quote or control character; it cannot be written to an environment file safely`);
  return `${key}='${value}'\n`;
}
