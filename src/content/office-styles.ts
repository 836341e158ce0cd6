// Which styles of an office document hide the text they are applied to,
// and the vocabulary of a part (its namespace, where every writer declares
// it). A run whose text is hidden by its style rather than by its own
// properties is hidden all the same: Word's character and paragraph
// styles (`<w:vanish/>` in a style of word/styles.xml, applied by
// `w:rStyle` and `w:pStyle`; the default paragraph style and the document
// defaults too), ODF's (`text:display="none"` in a style's
// text properties, applied by `text:style-name`; LibreOffice writes its
// "Hidden" character attribute so). Read for shown-text.ts, since recall
// pass 34: a key whose halves lay around such a run was published.
import { attributeValue, isOff, readTag, type Tag } from "./xml-tags.js";

export type Vocabulary = "wordprocessingml" | "spreadsheetml" | "opendocument";
const NAMESPACES: [Vocabulary, Buffer][] = [
  ["wordprocessingml", Buffer.from("wordprocessingml", "latin1")],
  ["spreadsheetml", Buffer.from("spreadsheetml", "latin1")],
  ["opendocument", Buffer.from("opendocument:xmlns:text", "latin1")],
];
/** Every writer declares a part's namespace on its root element, in its first bytes. */
const NAMESPACE_WITHIN = 64 * 1024;

/** The vocabulary whose namespace the part declares first among these, in its first NAMESPACE_WITHIN bytes. */
export function vocabularyOf(xml: Buffer): Vocabulary | undefined {
  const head = xml.subarray(0, NAMESPACE_WITHIN);
  return NAMESPACES.find(([, namespace]) => head.indexOf(namespace) >= 0)?.[0];
}

/** Each style a part or a package defines: whether it says its text is hidden (undefined: as its parent says), and its parent. */
export type StyleSheet = ReadonlyMap<string, { hides: boolean | undefined; parent: string | undefined }>;
export const NO_STYLES: StyleSheet = new Map();

/** How many parents deep a style's hiding is looked for (a loop of parents ends there). */
const MAX_PARENTS = 32;
/**
 * Names no style has (XML names hold no NUL): Word's document defaults
 * (`w:docDefaults`, what a style that says nothing falls back on) and its
 * default paragraph style (`w:default="1"`, a paragraph's without a
 * `w:pStyle`), kept in a sheet beside its styles.
 */
export const DOCUMENT_DEFAULTS = "\u0000defaults";
export const DEFAULT_PARAGRAPH = "\u0000paragraph";

/**
 * Whether the style `name` hides its text: what the nearest of it and its
 * parents that says, looked for in `own` (a part's automatic styles) then
 * in `common` (the package's), says; undefined where none does (Word's
 * document defaults are DOCUMENT_DEFAULTS's).
 */
export function stylesHiding(own: StyleSheet, common: StyleSheet): (name: string) => boolean | undefined {
  const known = new Map<string, boolean | undefined>();
  return (name) => {
    if (known.has(name)) return known.get(name);
    let hides: boolean | undefined;
    let current: string | undefined = name;
    for (let depth = 0; current !== undefined && depth < MAX_PARENTS && hides === undefined; depth++) {
      const style: { hides: boolean | undefined; parent: string | undefined } | undefined = own.get(current) ?? common.get(current);
      hides = style?.hides;
      current = style?.parent;
    }
    known.set(name, hides);
    return hides;
  };
}

/** Whether any style of `sheet` says it hides its text. */
export const anyHiding = (sheet: StyleSheet) => [...sheet.values()].some((style) => style.hides === true);

/**
 * The styles a package's styles part defines (word/styles.xml, an ODF's
 * styles.xml), for the shown reading of its other parts; undefined for
 * another part.
 */
export function packageStyles(data: Uint8Array): StyleSheet | undefined {
  const xml = Buffer.from(data.buffer, data.byteOffset, data.length);
  const vocabulary = vocabularyOf(xml);
  if (vocabulary === "wordprocessingml") return wordStyles(xml);
  if (vocabulary === "opendocument") return odfStyles(xml);
  return undefined;
}

/** A sheet read tag by tag between `from` and `to`: `visit` gets each tag and the style being defined, and answers the style it opens, if any. */
function readSheet(xml: Buffer, from: number, to: number, visit: (tag: Tag, style: Style | undefined) => Style | undefined): Map<string, Style> {
  const sheet = new Map<string, Style>();
  let style: Style | undefined;
  for (let at = xml.indexOf(0x3c, from); at >= 0 && at < to; ) {
    const tag = readTag(xml, at);
    if (tag === undefined) break;
    const opened = visit(tag, style);
    if (opened !== undefined) {
      style = opened;
      sheet.set(opened.name, opened);
    } else if (style !== undefined && tag.closing && tag.name === style.tagName) style = undefined;
    at = xml.indexOf(0x3c, tag.end + 1);
  }
  return sheet;
}
interface Style {
  name: string;
  tagName: string;
  hides: boolean | undefined;
  parent: string | undefined;
}

/**
 * Word's styles (`w:style`, its `w:styleId`, `w:basedOn`, and a `w:vanish`
 * in its run properties, which a character or a paragraph style has), its
 * document defaults' `w:vanish` and its default paragraph style.
 */
function wordStyles(xml: Buffer): StyleSheet {
  const defaults: Style = { name: DOCUMENT_DEFAULTS, tagName: "", hides: undefined, parent: undefined };
  const paragraph: Style = { name: DEFAULT_PARAGRAPH, tagName: "", hides: undefined, parent: undefined };
  const sheet = readSheet(xml, 0, xml.length, (tag, style) => {
    if (!tag.prefixed || tag.closing) return undefined;
    if (tag.local === "docDefaults" && !tag.empty) return Object.assign(defaults, { tagName: tag.name });
    if (tag.local === "style" && !tag.empty) {
      const name = attributeValue(xml, tag, "styleId");
      if (name !== undefined && attributeValue(xml, tag, "type") === "paragraph" && isOn(attributeValue(xml, tag, "default"))) paragraph.parent ??= name;
      return name === undefined ? undefined : { name, tagName: tag.name, hides: undefined, parent: undefined };
    }
    if (style !== undefined && style !== defaults && tag.local === "basedOn") style.parent = attributeValue(xml, tag, "val");
    else if (style !== undefined && tag.local === "vanish") style.hides = !isOff(attributeValue(xml, tag, "val"));
    return undefined;
  });
  return sheet.set(DEFAULT_PARAGRAPH, paragraph);
}

/** An attribute of type ST_OnOff that is on (`w:default="1"`). */
const isOn = (value: string | undefined) => value === "1" || value === "true" || value === "on";

const ODF_BODY = ["<office:body", "<office:master-styles"].map((s) => Buffer.from(s, "latin1"));

/**
 * ODF's styles (`style:style`, its `style:name`, `style:parent-style-name`,
 * and `text:display` in its text properties: `none`, or `condition`, which
 * hides it when its condition holds: the shown reading takes it as held),
 * read where a part defines them, before its body or its master pages.
 */
export function odfStyles(xml: Buffer): StyleSheet {
  const ends = ODF_BODY.map((marker) => xml.indexOf(marker)).filter((at) => at >= 0);
  const to = ends.length > 0 ? Math.min(...ends) : xml.length;
  return readSheet(xml, 0, to, (tag, style) => {
    if (!tag.prefixed || tag.closing) return undefined;
    if (tag.local === "style" && !tag.empty) {
      const name = attributeValue(xml, tag, "name");
      return name === undefined ? undefined : { name, tagName: tag.name, hides: undefined, parent: attributeValue(xml, tag, "parent-style-name") };
    }
    if (style !== undefined && tag.local === "text-properties") {
      const display = attributeValue(xml, tag, "display");
      if (display !== undefined) style.hides = hidesByDisplay(display);
    }
    return undefined;
  });
}

/** ODF's `text:display` (a style's, a section's): `none` hides, `condition` hides where its condition holds. */
export const hidesByDisplay = (display: string | undefined) => display === "none" || display === "condition";
