// How each file of secrets is written, read for its values: a .env
// (python-dotenv's grammar, dotenv.ts), a JSON store, Hermes' config.yaml
// (line by line), PostgreSQL's password file, git's credential store and
// a .netrc.
// Each reader calls `visit` with a value and the name that says what it is;
// known.ts judges whether it is worth looking for. Names from inside a file
// are escaped: a refusal prints them.
import { escapeText } from "../core/escape.js";
import { parseDotenv } from "./dotenv.js";

/** How a file of secrets is written: a .env, a JSON store, config.yaml, or (a credential copied for the gate) a .env or a JSON store; other tools' stores' own formats. */
export type SecretFileFormat = "dotenv" | "json" | "yaml" | "either" | "pgpass" | "url-lines" | "netrc";

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
  if (format === "netrc") {
    forEachNetrcPassword(text, (name, value) => visit(name, value, false));
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
  if (format !== "dotenv") forEachYamlScalar(text, visit);
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

/**
 * Calls `visit` with each password of a .netrc (curl's, pip's, git's,
 * Python's netrc module's: words apart by blanks and line breaks, `machine
 * HOST` or `default` opening an entry, `login`, `password` and `account`
 * each followed by its word, `macdef NAME` a macro to the next empty line,
 * `#` a comment to the line's end), named `HOST password` (escaped; the
 * default entry's `default password`). A quoted word (`"…"`, `\` escapes:
 * Python's reader and curl's take them) is read unquoted.
 */
function forEachNetrcPassword(text: string, visit: (name: string, value: string) => void): void {
  const words = netrcWords(text);
  let machine = "default";
  for (let k = 0; k < words.length; k++) {
    const word = words[k]!;
    if (word === "machine") machine = words[++k] ?? machine;
    else if (word === "default") machine = "default";
    else if ((word === "password" || word === "account") && k + 1 < words.length) {
      const value = words[++k]!;
      if (word === "password") visit(`${escapeText(machine)} password`, value);
    }
  }
}

/** A .netrc's words, in order, without its comments and macros. */
function netrcWords(text: string): string[] {
  const words: string[] = [];
  const lines = text.split(/\r?\n/);
  for (let l = 0; l < lines.length; l++) {
    const line = lines[l]!;
    let i = 0;
    while (i < line.length) {
      while (i < line.length && (line[i] === " " || line[i] === "\t")) i++;
      if (i >= line.length || line[i] === "#") break;
      let word = "";
      if (line[i] === '"') {
        for (i++; i < line.length && line[i] !== '"'; i++) word += line[i] === "\\" && i + 1 < line.length ? line[++i] : line[i];
        i++;
      } else for (; i < line.length && line[i] !== " " && line[i] !== "\t"; i++) word += line[i];
      words.push(word);
      // A macro's lines are its body, to the next empty line: no words of the file.
      if (word === "macdef") {
        while (l + 1 < lines.length && lines[l + 1]!.trim() !== "") l++;
        break;
      }
    }
  }
  return words;
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
 * it each time. Read too, as yaml.safe_load gives Hermes them: a flow
 * mapping on the key's line (`env: {TOKEN: "…"}`: its pairs, each named as
 * the same pair in block style), a tag or an anchor before a scalar
 * (`!!str …`), and a block scalar (`|`, `>`: its following indented lines,
 * kept or folded); a sequence's scalars, block (`- --api-key`) or flow
 * (`args: [-y, --api-key, KEY]`) on the key's line: an MCP server's `args`
 * (SequenceItems). Aliases are passed over; a plain value ends at ` #`.
 * A pair is judged by its key (`byShape` false), an item by its shape or
 * the flag before it (it has no key).
 */
function forEachYamlScalar(text: string, visit: (name: string, value: string, byShape: boolean) => void): void {
  // Each key, and whether its line opened a collection (no value): a block sequence's `-` may stand at its key's indent.
  const parents: { indent: number; key: string; opens: boolean }[] = [];
  const lines = text.split(/\r?\n/);
  const named = (keys: string[]) => keys.slice(-3).map(escapeText).join(".");
  let items = new SequenceItems("", visit);
  for (let i = 0; i < lines.length; i++) {
    const pair = YAML_PAIR.exec(lines[i]!);
    if (!pair) {
      const item = SEQUENCE_ENTRY.exec(lines[i]!);
      if (item === null) continue;
      const indent = item[1]!.length;
      while (parents.length > 0 && (parents[parents.length - 1]!.indent > indent || (parents[parents.length - 1]!.indent === indent && !parents[parents.length - 1]!.opens))) parents.pop();
      const name = named(parents.map((p) => p.key));
      if (name !== items.name) items = new SequenceItems(name, visit);
      items.item(yamlScalar(withoutProperties(item[2] ?? "")));
      continue;
    }
    const indent = pair[1]!.length;
    const key = pair[2] ?? pair[3] ?? pair[4]!;
    while (parents.length > 0 && parents[parents.length - 1]!.indent >= indent) parents.pop();
    const path = [...parents.map((p) => p.key), key];
    const node = withoutProperties(pair[5] ?? "");
    const block = BLOCK_SCALAR_HEADER.exec(node);
    items = new SequenceItems("", visit);
    if (block) {
      // Its lines are its value's, not the mapping's: read here, and passed over by this loop.
      const { value, next } = blockScalar(lines, i + 1, indent, block[1] === ">", block[2] ?? block[3]);
      if (value.length > 0) visit(named(path), value, false);
      i = next - 1;
    } else if (node.startsWith("{")) forEachFlowPair(node, (inner, value) => visit(named([...path, inner]), value, false));
    else if (node.startsWith("[")) {
      const flow = new SequenceItems(named(path), visit);
      forEachFlowItem(node, (value) => flow.item(value));
    } else {
      const value = yamlScalar(node);
      if (value !== undefined) visit(named(path), value, false);
    }
    parents.push({ indent, key, opens: node === "" || node.startsWith("#") });
  }
}

/** A block sequence's entry that is no pair (`- --api-key`, `- 'KEY'`): its indent and its node. */
const SEQUENCE_ENTRY = /^([ \t]*)-(?:[ \t]+(.*))?$/;
/** A command-line option (`--api-key`, `-k`), alone or before `=` and its value (`--token=…`). */
const OPTION = /^(-{1,2}[A-Za-z][\w-]*)(?:=(.*))?$/;

/**
 * The scalars of one sequence, in order (an MCP server's `args`: `-y`,
 * `@acme/notion-mcp`, `--api-key`, `KEY`): each visited by its shape, under
 * the sequence's keys, the option before it named after them (`…args
 * --api-key`, which says secret as API_KEY does), and an option's value
 * given with `=` the same way. Many servers take their key on the command
 * line; `ps` and a copied config show it after a space, where no
 * assignment rule reads it.
 */
class SequenceItems {
  private option: string | undefined;
  constructor(
    readonly name: string,
    private readonly visit: (name: string, value: string, byShape: boolean) => void,
  ) {}

  item(value: string | undefined): void {
    const before = this.option;
    this.option = undefined;
    if (value === undefined || this.name === "") return;
    const option = OPTION.exec(value);
    if (option === null) this.visit(before === undefined ? this.name : `${this.name} ${escapeText(before)}`, value, true);
    else if (option[2] !== undefined) this.visit(`${this.name} ${escapeText(option[1]!)}`, option[2], true);
    else this.option = option[1];
  }
}

/** A value's text without its tag and anchor: the scalar after them is the value yaml.safe_load gives (`!!str` and `&a` change no scalar's text). */
function withoutProperties(text: string): string {
  return text.slice(afterProperties(text, 0, ""));
}

/**
 * Where a node's value starts, past its tag (`!!str`, `!local`, `!<tag:…>`)
 * and anchor (`&name`) at `from` and the blanks after each: at most one of
 * each. A property ends at a blank, or in a flow collection at one of `ends`.
 */
function afterProperties(text: string, from: number, ends: string): number {
  let i = from;
  for (let k = 0; k < 2 && (text[i] === "!" || text[i] === "&"); k++) {
    while (i < text.length && text[i] !== " " && text[i] !== "\t" && !ends.includes(text[i]!)) i++;
    while (i < text.length && (text[i] === " " || text[i] === "\t")) i++;
  }
  return i;
}

/** A block scalar's header: `|` (literal) or `>` (folded), its indentation and chomping indicators in either order, a comment. */
const BLOCK_SCALAR_HEADER = /^([|>])(?:([1-9])[+-]?|[+-]([1-9])?)?(?:[ \t]+(?:#.*)?)?$/;

/**
 * The value of the block scalar whose lines start at `from`, under a key
 * indented `parent` spaces: the lines indented more (their indentation the
 * first one's, or the header's indicator), less that indentation, joined as
 * YAML joins them (a literal's with their line breaks; a folded one's with
 * a space, an empty line a line break, a more indented line's breaks kept),
 * without the line breaks at its end (the value itself, whatever its
 * chomping indicator: a secret has none); and the line after it.
 */
function blockScalar(lines: readonly string[], from: number, parent: number, folded: boolean, indicator: string | undefined): { value: string; next: number } {
  let contentIndent = indicator === undefined ? undefined : parent + Number(indicator);
  const parts: string[] = [];
  let pendingBreaks = 0;
  let previousFolds = false;
  let i = from;
  for (; i < lines.length; i++) {
    const line = lines[i]!;
    const spaces = leadingSpaces(line);
    const blank = spaces === line.length || (line[spaces] === "\t" && line.trim() === "");
    if (blank && (contentIndent === undefined || line.length <= contentIndent)) {
      pendingBreaks++;
      continue;
    }
    contentIndent ??= spaces;
    if (spaces < contentIndent || contentIndent <= parent) break;
    const content = line.slice(contentIndent);
    // A line indented more than the others (or starting with a tab) keeps its line breaks in a folded scalar.
    const folds = folded && content[0] !== " " && content[0] !== "\t";
    if (parts.length === 0) parts.push("\n".repeat(pendingBreaks));
    else if (folds && previousFolds) parts.push(pendingBreaks === 0 ? " " : "\n".repeat(pendingBreaks));
    else parts.push("\n".repeat(pendingBreaks + 1));
    parts.push(content);
    pendingBreaks = 0;
    previousFolds = folds;
  }
  return { value: parts.join("").replace(/^\n+/, ""), next: i };
}

function leadingSpaces(line: string): number {
  let n = 0;
  while (n < line.length && line.charCodeAt(n) === 32) n++;
  return n;
}

/** Entries of one flow collection read: an MCP server's env, headers or args hold a few. */
const MAX_FLOW_ENTRIES = 256;

/**
 * Calls `visit` with each `KEY: value` pair of the flow mapping `text` opens
 * (`{INTERNAL_API_TOKEN: "…", X-Api-Key: …}`), on its line: keys and values
 * quoted or plain (a plain one ends at `,`, `}` or ` #`), a tag or anchor
 * before a value passed over, a nested collection's value passed over whole.
 */
function forEachFlowPair(text: string, visit: (key: string, value: string) => void): void {
  forEachFlowEntry(text, "}", (key, value) => {
    if (value !== undefined) visit(key!, value);
  });
}

/**
 * Calls `visit` with each scalar of the flow sequence `text` opens (`[-y,
 * "@acme/mcp", --api-key, "KEY"]`), on its line, read as a flow mapping's
 * values are (undefined for a nested collection, an alias or nothing).
 */
function forEachFlowItem(text: string, visit: (value: string | undefined) => void): void {
  forEachFlowEntry(text, "]", (_, value) => visit(value));
}

/**
 * Calls `visit` with each entry of the flow collection `text` opens, a
 * mapping (`close` `}`: each key, quoted or plain to a `:` that a blank,
 * `,` or `}` follows) or a sequence (`]`: no key), and its value
 * (flowNode). One pass over the line; the first MAX_FLOW_ENTRIES entries;
 * stops where the text is not a flow collection's.
 */
function forEachFlowEntry(text: string, close: "}" | "]", visit: (key: string | undefined, value: string | undefined) => void): void {
  let i = 1;
  const blanks = () => {
    while (i < text.length && (text[i] === " " || text[i] === "\t")) i++;
  };
  for (let entries = 0; entries < MAX_FLOW_ENTRIES; entries++) {
    blanks();
    if (i >= text.length || text[i] === close) return;
    let key: string | undefined;
    if (close === "}") {
      if (text[i] === '"' || text[i] === "'") {
        const quoted = readQuoted(text, i);
        if (!quoted) return;
        key = quoted.value;
        i = quoted.end;
      } else {
        const keyStart = i;
        while (i < text.length && !(text[i] === ":" && (i + 1 === text.length || " \t,}".includes(text[i + 1]!))) && !",{}[]".includes(text[i]!)) i++;
        key = text.slice(keyStart, i).trim();
      }
      blanks();
      if (text[i] !== ":") return;
      i++;
      blanks();
    }
    const node = flowNode(text, afterProperties(text, i, `,${close}`));
    if (!node) return;
    visit(key, node.value);
    if (node.comment) return;
    i = node.end;
    blanks();
    if (text[i] !== ",") return;
    i++;
  }
}

/**
 * The node of a flow collection at `i`: a quoted scalar (its escapes of
 * quotes read), a plain one (to `,`, a bracket or ` #`; undefined when
 * empty or an alias), or a nested collection passed over whole
 * (undefined); where it ends, and whether a comment ends the line there.
 * Undefined where a quoted one does not end on its line.
 */
function flowNode(text: string, i: number): { value: string | undefined; end: number; comment: boolean } | undefined {
  const c = text[i];
  if (c === '"' || c === "'") {
    const quoted = readQuoted(text, i);
    return quoted && { value: quoted.value, end: quoted.end, comment: false };
  }
  if (c === "{" || c === "[") return { value: undefined, end: afterCollection(text, i), comment: false };
  let end = i;
  while (end < text.length && !",}[]{".includes(text[end]!) && !(text[end] === "#" && (text[end - 1] === " " || text[end - 1] === "\t"))) end++;
  const value = text.slice(i, end).trim();
  return { value: value.length > 0 && c !== "*" ? value : undefined, end, comment: text[end] === "#" };
}

/** Where the flow collection opening at `from` ends (past its closing bracket; the line's end if none): quoted strings in it read whole. */
function afterCollection(text: string, from: number): number {
  let depth = 0;
  let i = from;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '"' || c === "'") {
      const quoted = readQuoted(text, i);
      if (!quoted) return text.length;
      i = quoted.end;
      continue;
    }
    if (c === "{" || c === "[") depth++;
    else if (c === "}" || c === "]") {
      depth--;
      if (depth === 0) return i + 1;
    }
    i++;
  }
  return i;
}

/** The quoted scalar opening at `from` (its escapes of quotes read) and where it ends; undefined if it does not on this line. */
function readQuoted(text: string, from: number): { value: string; end: number } | undefined {
  let out = "";
  if (text[from] === '"') {
    for (let i = from + 1; i < text.length; i++) {
      const c = text[i]!;
      if (c === '"') return { value: out, end: i + 1 };
      if (c === "\\" && i + 1 < text.length) out += text[++i]!;
      else out += c;
    }
    return undefined;
  }
  for (let i = from + 1; i < text.length; i++) {
    if (text[i] !== "'") out += text[i]!;
    else if (text[i + 1] === "'") out += text[++i]!;
    else return { value: out, end: i + 1 };
  }
  return undefined;
}

/** The scalar a value's text writes: quoted (its escapes of quotes read), or plain to a comment; undefined for any other node. */
function yamlScalar(text: string): string | undefined {
  const first = text[0];
  if (first === '"' || first === "'") return readQuoted(text, 0)?.value;
  if (first === undefined || "|>&*!{[#".includes(first)) return undefined;
  const comment = text.indexOf(" #");
  return (comment < 0 ? text : text.slice(0, comment)).trim();
}
