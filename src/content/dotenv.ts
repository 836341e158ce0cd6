// A .env file read as Hermes reads it (python-dotenv's grammar): `export`
// before a name, `#` comments (an unquoted value ends at ` #`), single-quoted
// values kept as written (`\'` and `\\` excepted), double-quoted values with
// backslash escapes, quoted values spanning lines, and `${NAME}` /
// `${NAME:-default}` expanded in unquoted and double-quoted values from what
// the file set before.

export interface DotenvEntry {
  name: string;
  value: string;
}

const NAME = /[A-Za-z_][A-Za-z0-9_.-]*/y;
const ESCAPES: Record<string, string> = { n: "\n", r: "\r", t: "\t", v: "\v", f: "\f", a: "\x07", b: "\b", "\\": "\\", "'": "'", '"': '"' };

function expand(value: string, known: Map<string, string>): string {
  return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (_, name: string, fallback: string | undefined) => known.get(name) ?? fallback ?? "");
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
      value = open === '"' ? expand(out, known) : out;
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
