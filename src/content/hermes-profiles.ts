// The Hermes profiles of a home that media-outbox takes
// (`$HERMES_HOME/profiles/NAME`, each a Hermes home of its own, made by
// `hermes profile create` whenever the agent likes): one rule and one bound
// for the gate's copies (src/deploy/gate-profiles.ts, gate-secrets.ts) and
// for local mode's secret check (hermes-homes.ts), so that the two know the
// same profiles. Small on purpose: the client's bundle holds it.
import type fs from "node:fs";
import path from "node:path";
import { escapeText } from "../core/escape.js";

/** Hermes' own rule for a profile's name (hermes_cli/profiles.py `_PROFILE_ID_RE`): no dot, so a copy's name can carry it as it is. */
export const PROFILE_ID = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/** Profiles of one Hermes home the gate copies, and local mode's secret check reads (a bound on the work of each run, and of each prepare, whatever the agent makes). */
export const MAX_PROFILES = 32;
/**
 * Of those, the profiles whose files are watched: PROFILE_WATCHES of root's
 * inotify instances each (8 profiles: 32 of the 128 root has by default,
 * shared with every root service, systemd's other path units among them).
 */
export const MAX_WATCHED_PROFILES = 8;
/** Entries of a profiles directory looked at (lstat, as the agent): a directory the agent fills with links or files costs no more. */
const MAX_LOOKED_AT = 2 * MAX_PROFILES;
/** Refused entries, and entries not looked at, named one by one; those after are counted. */
const MAX_NAMED = 8;

/** C0 and C1 control characters, DEL, and U+FFFD (what Node makes of bytes that are no UTF-8: that name names no entry). */
const UNTAKEN_CHARACTER = /[\u0000-\u001f\u007f-\u009f\ufffd]/;

export interface Profile {
  name: string;
  dir: string;
  /** Its place among the profiles taken (a copy of a name Hermes takes for no profile is named by it). */
  place: number;
  /** Among the first MAX_WATCHED_PROFILES: its files are watched. */
  watched: boolean;
}

export interface ProfileListing {
  profiles: Profile[];
  /** Entries refused, with why (escaped). */
  refused: { file: string; why: string }[];
  /** Entries not looked at (past MAX_LOOKED_AT, or once MAX_PROFILES were taken), the first MAX_NAMED of them: not copied. */
  past: string[];
  /** Entries refused past those named, and entries not looked at past those named. */
  more: number;
  /** What the listing saw (names, and each profile directory's inode and times): another listing with the same key saw no profile made, gone or changed at its top. */
  key: string;
}

/**
 * The profiles of `profilesDir` whose entries are `names`, `look` giving an
 * entry's lstat (as the user whose directory it is; throws as lstat does):
 * each directory, not a symbolic link, whose name holds no control
 * character, at most MAX_PROFILES, Hermes' own names first, each group in
 * name order. Local mode looks with stat instead (a link to a directory is
 * then a directory): it reads as the user whose files they are, where the
 * gate's copies are made by root.
 */
export function takeProfiles(profilesDir: string, names: readonly string[], look: (p: string) => fs.Stats): ProfileListing {
  // Hermes' own names first: the profiles Hermes makes, before what else an agent put there.
  const ordered = [...names.filter((n) => PROFILE_ID.test(n)).sort(), ...names.filter((n) => !PROFILE_ID.test(n)).sort()];
  const out: ProfileListing = { profiles: [], refused: [], past: [], more: 0, key: "" };
  const keys: string[] = [String(names.length)];
  const refuse = (file: string, why: string) => (out.refused.length < MAX_NAMED ? out.refused.push({ file, why }) : out.more++);
  let looked = 0;
  for (const [i, name] of ordered.entries()) {
    if (out.profiles.length >= MAX_PROFILES || looked >= MAX_LOOKED_AT) {
      // Not looked at (no lstat): named as listed (the caller escapes), whatever each is.
      const rest = ordered.slice(i, i + MAX_NAMED).map((n) => path.join(profilesDir, n));
      out.past = rest;
      out.more += ordered.length - i - rest.length;
      break;
    }
    const dir = path.join(profilesDir, name);
    if (UNTAKEN_CHARACTER.test(name) || name === "." || name === ".." || name.includes("/")) {
      refuse(dir, "its name holds a control character or bytes that are no UTF-8; name the profile with letters, digits, _ and -");
      keys.push(`refused:${name}`);
      continue;
    }
    looked++;
    let st: fs.Stats;
    try {
      st = look(dir);
    } catch {
      // Gone since it was listed, or not the user's to look at: nothing to take.
      continue;
    }
    if (st.isSymbolicLink()) {
      refuse(dir, "it is a symbolic link, which is not followed (the agent's to point anywhere); make the profile a directory");
      keys.push(`link:${name}`);
    } else if (st.isDirectory()) {
      out.profiles.push({ name, dir, place: out.profiles.length, watched: out.profiles.length < MAX_WATCHED_PROFILES });
      keys.push(`${name}:${st.ino}:${st.mtimeMs}:${st.ctimeMs}`);
    }
  }
  out.key = keys.join("\n");
  return out;
}


/**
 * The profiles a listing of `profilesDir` leaves out, each described
 * (escaped): those refused (a name with a control character, a link where
 * the gate lists), those past the bound, named, and the count of the rest;
 * `read` (a home that is itself a profile of its root, read all the same)
 * left out. One rule for local mode (hermes-homes.ts) and the gate's copies
 * (gate-secrets.ts, which writes them beside its copies: known.ts
 * untakenProfilesCopyName): a file whose check needs the known values is
 * refused while there are any (unscannable_content), in either mode.
 */
export function profilesLeftOut(profilesDir: string, listing: Pick<ProfileListing, "refused" | "past" | "more">, read?: string): string[] {
  return [
    ...listing.refused.map(({ file, why }) => `${escapeText(file)} (${why})`),
    ...listing.past.filter((p) => p !== read).map((p) => `${escapeText(p)} (past the ${MAX_PROFILES} profiles of a Hermes home read)`),
    ...(listing.more > 0 ? [`${listing.more} more entries of ${escapeText(profilesDir)}`] : []),
  ];
}
