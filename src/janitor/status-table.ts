// The human view of `media-outbox status`: two aligned columns. Everything
// shown was escaped when the report was built.
import { formatBytes, formatDuration } from "../core/units.js";
import type { GateStatusReport } from "./gate-status.js";
import type { DirSummary, FileInfo, StatusReport } from "./status.js";

const files = (n: number, bytes: number) => `${n} file${n === 1 ? "" : "s"} (${formatBytes(bytes)})`;

function when(iso: string, nowMs: number): string {
  const delta = Date.parse(iso) - nowMs;
  return `${iso.replace(/\.\d{3}Z$/, "Z")} (${delta < 0 ? `${formatDuration(-delta)} ago` : `in ${formatDuration(delta)}`})`;
}

function fileLine(f: FileInfo | null, nowMs: number): string {
  return f ? `${f.name}  ${formatBytes(f.bytes)}  ${when(f.mtime, nowMs)}` : "-";
}

function dirLine(d: DirSummary, extra: string): string {
  if (!d.exists) return `${d.path ?? "-"}  (does not exist)`;
  const other = d.other_entries > 0 ? `, ${d.other_entries} other entr${d.other_entries === 1 ? "y" : "ies"}` : "";
  return `${d.path}  ${files(d.files, d.bytes)}${other}${extra}`;
}

/** The rows every status shows of an outbox; a section that is null (gate mode: not seen) shows as such. */
function outboxRows(r: GateStatusReport | StatusReport, nowMs: number, policyFrom?: string): [string, string][] {
  const rows: [string, string][] = [];
  if (!r.outbox) return rows;
  const safety = !r.outbox.exists && r.outbox.safe ? "does not exist (nothing to do)" : r.outbox.safe ? "safe" : `UNSAFE (${r.outbox.code}): ${r.outbox.problem}`;
  rows.push(["outbox", r.outbox.path], ["safety", safety]);
  if (r.outbox.exists && r.outbox.safe && r.files && r.janitor) {
    const others = r.files.other_entries;
    const other = others > 0 ? `, ${others} other entr${others === 1 ? "y" : "ies"} (the janitor never touches ${others === 1 ? "it" : "them"})` : "";
    const bad = r.files.not_utf8_names;
    const badNames = bad > 0 ? `, ${bad} name${bad === 1 ? "" : "s"} not UTF-8 (never published by prepare: run the watch guard)` : "";
    const u = r.files.unpublished ?? 0;
    const [them, its] = u === 1 ? ["it", "its"] : ["them", "their"];
    // Not only files prepare never published: one written to since (another size) too, or one published while status read the outbox.
    const unpublished = u > 0 ? `, ${u} not named by the ledger with ${its} size (changed since prepare published ${them}, or not published by it: the janitor keeps ${them}, the watch guard quarantines ${them})` : "";
    rows.push(["files", `${files(r.files.files, r.files.bytes)}${other}${badNames}${unpublished}`]);
    rows.push(["oldest", fileLine(r.files.oldest, nowMs)], ["newest", fileLine(r.files.newest, nowMs)]);
    const types = Object.entries(r.files.by_type).sort((a, b) => b[1].bytes - a[1].bytes);
    for (const [i, [type, t]] of types.entries()) rows.push([i === 0 ? "by type" : "", `${type.padEnd(6)} ${files(t.files, t.bytes)}`]);
    const j = r.janitor;
    rows.push(["retention", `${formatDuration(j.retention_ms)}${j.max_bytes !== null ? `, quota ${formatBytes(j.max_bytes)} (min age ${formatDuration(j.min_age_ms)})` : ""}${policyFrom ?? ""}`]);
    const n = j.next_run;
    if (n) {
      rows.push(["next janitor run", `would delete ${files(n.outbox.files, n.outbox.bytes)} from the outbox`]);
      rows.push(["", `staging ${n.staging.files}, quarantine ${n.quarantine.files}, ledger ${n.ledger.files}${n.quota_met === false ? "; quota cannot be met" : ""}`]);
    } else rows.push(["next janitor run", NOT_SEEN]);
    rows.push(["next expiry", j.next_expiry ? when(j.next_expiry, nowMs) : "-"]);
    rows.push(["expiring in 24h", files(j.expiring_24h.files, j.expiring_24h.bytes)]);
    rows.push(["staging", r.staging ? dirLine(r.staging, r.staging.stale > 0 ? `, ${r.staging.stale} left by a crashed prepare` : "") : NOT_SEEN]);
    rows.push(["quarantine", r.quarantine ? dirLine(r.quarantine, r.quarantine.expired > 0 ? `, ${r.quarantine.expired} past retention` : "") : NOT_SEEN]);
    const days = r.ledger?.oldest_day ? `, ${r.ledger.oldest_day} .. ${r.ledger.newest_day}` : "";
    rows.push(["ledger", r.ledger ? dirLine(r.ledger, days) : NOT_SEEN]);
  }
  return rows;
}

const NOT_SEEN = "(not seen: see below)";

function render(rows: [string, string][], bold: boolean): string {
  const width = Math.max(...rows.map(([label]) => label.length));
  return rows.map(([label, value]) => `${bold && label ? `\x1b[1m${label.padEnd(width)}\x1b[0m` : label.padEnd(width)}  ${value}\n`).join("");
}

/** Renders the report; `bold` labels (ANSI) only on a terminal. */
export function formatStatus(r: StatusReport, { bold = false, now = new Date() } = {}): string {
  return render(outboxRows(r, now.getTime()), bold);
}

/** Renders gate mode's report: the gate, then its outbox as far as it was seen, then what was not. */
export function formatGateStatus(r: GateStatusReport, { bold = false, now = new Date() } = {}): string {
  const g = r.gate;
  const rows: [string, string][] = [["gate", `${g.socket} (from ${g.from})`]];
  if (g.user !== null) rows.push(["gate user", g.user]);
  rows.push(["answers", g.answers ? "yes (GET /health)" : `NO (${g.code}): ${g.problem}`]);
  if (g.outbox_from === "unit") rows.push(["outbox from", `${g.policy_from} (the gate did not answer)`]);
  const policy = g.policy_from ? ` (from ${g.policy_from})` : " (the defaults: no janitor unit names this outbox)";
  rows.push(...outboxRows(r, now.getTime(), policy));
  if (g.unseen) rows.push(["not seen", g.unseen]);
  for (const [i, note] of g.notes.entries()) rows.push([i === 0 ? "notes" : "", note]);
  return render(rows, bold);
}
