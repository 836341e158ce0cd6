// One tag of an XML part at a time, and an attribute's value in one: what
// the readings that follow a part's elements (shown-text.ts, office-styles.ts)
// walk with. Not a parser: a tag is `<` to the next `>`, its name the
// bytes before the first blank, `/` or `>`.

/** A name longer than this is none a reading looks for: no more of it is read. */
const MAX_NAME = 130;

const isNameByte = (c: number) => c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d && c !== 0x2f && c !== 0x3e && c !== 0x3c;
const isBlank = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;

export interface Tag {
  /** Its `<` and its `>`. */
  at: number;
  end: number;
  /** Where its name ends (its attributes follow). */
  nameEnd: number;
  /** Its name as written (`w:r`), and without its prefix (`r`). */
  name: string;
  local: string;
  prefixed: boolean;
  /** `</…>`; `<…/>`. */
  closing: boolean;
  empty: boolean;
}

/** The tag whose `<` is at `at`, or undefined when no `>` follows it. */
export function readTag(xml: Buffer, at: number): Tag | undefined {
  const n = xml.length;
  const closing = xml[at + 1] === 0x2f;
  const from = closing ? at + 2 : at + 1;
  let k = from;
  while (k < n && k - from <= MAX_NAME && isNameByte(xml[k]!)) k++;
  const end = xml.indexOf(0x3e, k);
  if (end < 0) return undefined;
  const name = xml.toString("latin1", from, k);
  const colon = name.indexOf(":");
  return { at, end, nameEnd: k, name, local: colon < 0 ? name : name.slice(colon + 1), prefixed: colon >= 0, closing, empty: xml[end - 1] === 0x2f };
}

/**
 * The value of the attribute whose local name is `local` (any prefix or
 * none: `w:val`, `val`) in `tag`, or undefined. Linear: each place `local`
 * lies is looked at once, past it only its blanks, `=` and quote.
 */
export function attributeValue(xml: Buffer, tag: Tag, local: string): string | undefined {
  const attributes = xml.toString("latin1", tag.nameEnd, tag.end);
  for (let k = attributes.indexOf(local); k >= 0; k = attributes.indexOf(local, k + 1)) {
    const before = attributes.charCodeAt(k - 1);
    if (before !== 0x3a && !isBlank(before)) continue;
    let j = k + local.length;
    while (isBlank(attributes.charCodeAt(j))) j++;
    if (attributes[j] !== "=") continue;
    j++;
    while (isBlank(attributes.charCodeAt(j))) j++;
    const quote = attributes[j];
    if (quote !== '"' && quote !== "'") continue;
    const close = attributes.indexOf(quote, j + 1);
    return close < 0 ? undefined : attributes.slice(j + 1, close);
  }
  return undefined;
}

/** A toggle's value turned off (`w:val="0"`, `false`, `off`): `<w:vanish w:val="0"/>` shows its run. */
export const isOff = (value: string | undefined) => value === "0" || value === "false" || value === "off";
