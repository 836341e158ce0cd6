// A .env file read as Hermes reads it (python-dotenv's grammar): `export`
// before a name, `#` comments (an unquoted value ends at ` #`), single-quoted
// values kept as written (`\'` and `\\` excepted), double-quoted values with
// backslash escapes, quoted values spanning lines, and `${NAME}` /
// `${NAME:-default}` expanded in every value (single-quoted too, as
// python-dotenv does) from what the file set before.

export interface DotenvEntry {
  name: string;
  value: string;
}

const NAME = /[A-Za-z_][A-Za-z0-9_.-]*/y;
const ESCAPES: Record<string, string> = { n: "\n", r: "\r", t: "\t", v: "\v", f: "\f", a: "\x07", b: "\b", "\\": "\\", "'": "'", '"': '"' };

/**
 * `value` with each `${NAME}` and `${NAME:-default}` replaced as
 * python-dotenv's interpolation does (its `\$\{([^}:]*)(?::-([^}]*))?\}`):
 * a name is anything to the first `}` or `:`, an unknown name is empty
 * (python-dotenv would take the loading process's environment, which this
 * one cannot know). A scan, not that expression: it tried from each `${`
 * runs to the end of a value with no `}`, a quadratic time on a line of
 * `${` (a gate reads the .env an agent writes).
 */
export function expand(value: string, known: ReadonlyMap<string, string>): string {
  let out = "";
  let from = 0;
  // The first `}` at or after the `${` being read: found once for all the `${` before it.
  let close = -1;
  for (let open = value.indexOf("${"); open >= 0; open = value.indexOf("${", open + 1)) {
    if (open < from) continue;
    if (close < open + 2) close = value.indexOf("}", open + 2);
    if (close < 0) break;
    const inside = value.slice(open + 2, close);
    const colon = inside.indexOf(":");
    // `${A:x}` is none: the expression then tries the next `${`.
    if (colon >= 0 && inside[colon + 1] !== "-") continue;
    const name = colon < 0 ? inside : inside.slice(0, colon);
    out += value.slice(from, open) + (known.get(name) ?? (colon < 0 ? "" : inside.slice(colon + 2)));
    from = close + 1;
  }
  return out + value.slice(from);
}

/** The entries of a .env file, in order; a later one wins, as when Hermes loads it. */
export function parseDotenv(text: string): DotenvEntry[] {
  const entries: DotenvEntry[] = [];
  const known = new Map<string, string>();
  let i = 0;
  const n = text.length;
  const skipBlanks = () => {
    while (i < n && (text[i] === " " || text[i] === "\t")) i++;
  };
  const skipLine = () => {
    while (i < n && text[i] !== "\n") i++;
    i++;
  };
  while (i < n) {
    skipBlanks();
    if (text.startsWith("export", i) && (text[i + 6] === " " || text[i + 6] === "\t")) {
      i += 6;
      skipBlanks();
    }
    let quote = "";
    if (text[i] === "'" || text[i] === '"') quote = text[i++]!;
    NAME.lastIndex = i;
    const m = NAME.exec(text);
    if (!m || (quote && text[i + m[0].length] !== quote)) {
      skipLine();
      continue;
    }
    const name = m[0];
    i += name.length + (quote ? 1 : 0);
    skipBlanks();
    if (text[i] !== "=") {
      skipLine();
      continue;
    }
    i++;
    skipBlanks();
    let value: string;
    const open = text[i];
    if (open === "'" || open === '"') {
      i++;
      let out = "";
      while (i < n && text[i] !== open) {
        if (text[i] === "\\" && i + 1 < n) {
          const next = text[i + 1]!;
          if (open === '"' && next in ESCAPES) out += ESCAPES[next];
          else if (open === "'" && (next === "'" || next === "\\")) out += next;
          else out += `\\${next}`;
          i += 2;
          continue;
        }
        out += text[i++];
      }
      i++;
      // python-dotenv expands single-quoted values too (the real parser, test/content.test.ts).
      value = expand(out, known);
      skipLine();
    } else {
      const end = text.indexOf("\n", i) < 0 ? n : text.indexOf("\n", i);
      let raw = text.slice(i, end);
      const comment = raw.search(/[ \t]#/);
      if (comment >= 0) raw = raw.slice(0, comment);
      value = expand(raw.replace(/\r$/, "").trim(), known);
      i = end + 1;
    }
    known.set(name, value);
    entries.push({ name, value });
  }
  return entries;
}
