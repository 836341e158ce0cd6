// How each file of secrets is written, read for its values: a .env
// (python-dotenv's grammar, dotenv.ts), a JSON store, Hermes' config.yaml
// (line by line), PostgreSQL's password file and git's credential store.
// Each reader calls `visit` with a value and the name that says what it is;
// known.ts judges whether it is worth looking for. Names from inside a file
// are escaped: a refusal prints them.
import { escapeText } from "../core/escape.js";
import { parseDotenv } from "./dotenv.js";

/** How a file of secrets is written: a .env, a JSON store, config.yaml, or (a credential copied for the gate) a .env or a JSON store; the two line formats of other tools' stores. */
export type SecretFileFormat = "dotenv" | "json" | "yaml" | "either" | "pgpass" | "url-lines";

/**
 * Calls `visit` with each value of a file of secrets written in `format`,
 * its name, and whether its shape alone may make it worth looking for (a
 * .env's values, a JSON object of variables); false for a JSON store that
 * is not JSON.
 */
export function forEachSecretEntry(text: string, format: SecretFileFormat, visit: (name: string, value: string, byShape: boolean) => void): boolean {
  if (format === "pgpass") {
    forEachPgpassPassword(text, (name, value) => visit(name, value, false));
    return true;
  }
  if (format === "url-lines") {
    forEachUrlLine(text, (name, value) => visit(name, value, false));
    return true;
  }
  // A .env's or config.yaml's first byte is never `{`; every JSON store's is. The lines of
  // one are no lines of the other (`NAME=value`, `key: value`): a copy is read as both.
  if (format === "json" || (format === "either" && text.trimStart().startsWith("{"))) return forEachJsonString(text, visit);
  if (format !== "yaml") for (const { name, value } of parseDotenv(text)) visit(name, value, true);
  if (format !== "dotenv") forEachYamlScalar(text, (name, value) => visit(name, value, false));
  return true;
}

/**
 * Calls `visit` with each password of a PostgreSQL password file
 * (`host:port:database:user:password` lines, `\:` and `\\` escaped, `#`
 * comments), named `USER@HOST:PORT/DATABASE password` (escaped).
 */
function forEachPgpassPassword(text: string, visit: (name: string, value: string) => void): void {
  for (const line of text.split("\n")) {
    if (line.startsWith("#")) continue;
    const fields: string[] = [];
    let field = "";
    for (let i = 0; i < line.length; i++) {
      const c = line[i]!;
      if (c === "\\" && i + 1 < line.length) field += line[++i];
      else if (c === ":" && fields.length < 4) {
        fields.push(field);
        field = "";
      } else field += c;
    }
    const [host, port, database, user] = fields;
    if (user !== undefined) visit(`${escapeText(`${user}@${host}:${port}/${database}`)} password`, field.replace(/\r$/, ""));
  }
}

/** Calls `visit` with each line of a file of URLs (git's credential store: `https://user:token@host`), named by its host (escaped): its password is looked for. */
function forEachUrlLine(text: string, visit: (name: string, value: string) => void): void {
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    const at = line.lastIndexOf("@");
    if (!line.includes("://") || at < 0) continue;
    visit(escapeText(line.slice(at + 1).split("/")[0]!), line);
  }
}

/** Strings a JSON store may hold and be read for: more are not looked at (a store of Hermes' holds tens). */
const MAX_JSON_STRINGS = 10_000;
/** A key that names an entry, not a secret, in a JSON store (Bitwarden's cache: the token's fingerprint, the project, the server). */
const ENTRY_KEY = "key";
/** A variable's name as a .env writes it: an object of such keys is a .env written as JSON (Bitwarden's cache of them). */
const ENV_NAME = /^[A-Z][A-Z0-9_]*$/;

/**
 * Calls `visit` with each string of a JSON document and the keys that lead
 * to it (the last three, joined with dots and escaped: `providers.nous.refresh_token`),
 * judged by its name as a .env's value is. By its shape too only where the
 * object's keys are all variables' names: a token store's other strings (a
 * date, a scope, a URL) are no secrets, whatever they look like.
 */
function forEachJsonString(text: string, visit: (name: string, value: string, byShape: boolean) => void): boolean {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return false;
  }
  const stack: { node: unknown; keys: string[]; byShape: boolean }[] = [{ node: doc, keys: [], byShape: false }];
  let strings = 0;
  while (stack.length > 0 && strings < MAX_JSON_STRINGS) {
    const { node, keys, byShape } = stack.pop()!;
    if (typeof node === "string") {
      strings++;
      if (keys.length > 0 && keys[keys.length - 1] !== ENTRY_KEY) visit(keys.slice(-3).map(escapeText).join("."), node, byShape);
    } else if (Array.isArray(node)) {
      for (const item of node) stack.push({ node: item, keys, byShape });
    } else if (node !== null && typeof node === "object") {
      const entries = Object.entries(node);
      const envLike = entries.length > 0 && entries.every(([key]) => ENV_NAME.test(key));
      for (const [key, value] of entries) stack.push({ node: value, keys: [...keys, key], byShape: envLike });
    }
  }
  return true;
}

/** `key: value` or `key:` (a list item's too), the key plain or quoted: the lines of a YAML block mapping. */
const YAML_PAIR = /^([ \t]*(?:- +)?)(?:"([^"\\]*)"|'([^']*)'|([A-Za-z_][\w.-]*))[ \t]*:(?:[ \t]+(.*))?$/;

/**
 * Calls `visit` with each scalar of a YAML block mapping (Hermes'
 * config.yaml: `api_key:` of its auxiliary models, the dashboard's
 * `password` and `secret`, an MCP server's `env` and `headers`) and the keys
 * that lead to it, by indentation (the last three, escaped). Line by line,
 * not a YAML parser: the `yaml` package takes ~15 ms to load and ~40 ms to
 * parse Hermes' default config.yaml in a fresh process, and a prepare reads
 * it each time. Block scalars (`|`, `>`), flow collections, anchors and tags
 * are passed over; a plain value ends at ` #`.
 */
function forEachYamlScalar(text: string, visit: (name: string, value: string) => void): void {
  const parents: { indent: number; key: string }[] = [];
  for (const line of text.split(/\r?\n/)) {
    const pair = YAML_PAIR.exec(line);
    if (!pair) continue;
    const indent = pair[1]!.length;
    const key = pair[2] ?? pair[3] ?? pair[4]!;
    while (parents.length > 0 && parents[parents.length - 1]!.indent >= indent) parents.pop();
    const value = yamlScalar(pair[5] ?? "");
    const name = [...parents.map((p) => p.key), key].slice(-3).map(escapeText).join(".");
    if (value !== undefined) visit(name, value);
    parents.push({ indent, key });
  }
}

/** The scalar a value's text writes: quoted (its escapes of quotes read), or plain to a comment; undefined for any other node. */
function yamlScalar(text: string): string | undefined {
  const first = text[0];
  if (first === '"') {
    let out = "";
    for (let i = 1; i < text.length; i++) {
      const c = text[i]!;
      if (c === '"') return out;
      if (c === "\\" && i + 1 < text.length) out += text[++i]!;
      else out += c;
    }
    return undefined;
  }
  if (first === "'") {
    let out = "";
    for (let i = 1; i < text.length; i++) {
      if (text[i] !== "'") out += text[i]!;
      else if (text[i + 1] === "'") out += text[++i]!;
      else return out;
    }
    return undefined;
  }
  if (first === undefined || "|>&*!{[#".includes(first)) return undefined;
  const comment = text.indexOf(" #");
  return (comment < 0 ? text : text.slice(0, comment)).trim();
}
