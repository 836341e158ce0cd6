import { formatBytes } from "../core/units.js";
import type { JanitorReport } from "./sweep.js";

/** The one-line human summary of a run (stderr, and the scheduler's log message). */
export function janitorSummary(report: JanitorReport): string {
  const t = report.totals;
  if (!report.outbox_exists) return `janitor: outbox ${report.outbox} does not exist; nothing to do`;
  const verb = report.dry_run ? "would delete" : "deleted";
  let line = `janitor${report.dry_run ? " (dry run)" : ""}: scanned ${t.scanned}, ${verb} ${t.deleted} (${formatBytes(t.bytes_freed)}${report.dry_run ? "" : " freed"}), skipped ${t.skipped}, errors ${t.errors}`;
  const q = report.quota;
  if (q && !q.met) {
    line += `; quota NOT met: the outbox holds ${formatBytes(q.bytes_after)} over a ${formatBytes(q.max_bytes)} quota and the rest is younger than the minimum age`;
  }
  return line;
}
