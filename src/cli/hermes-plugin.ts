// The shell of `install hermes-plugin` / `uninstall hermes-plugin`: what the
// library did, one line per file on stdout (`wrote`, `backup`, `removed`,
// `restored`), what to do next on stderr.
import type { Config } from "../config/config.js";
import { escapeText } from "../core/escape.js";
import { PLUGIN_NAME, installHermesPlugin, uninstallHermesPlugin } from "../deploy/hermes-plugin.js";
import { err, out } from "./io.js";

export async function runHermesPlugin(command: string, config: Config, profile: string | undefined, dryRun: boolean): Promise<number> {
  const where = profile !== undefined ? { profile } : {};
  if (command === "uninstall") {
    const r = await uninstallHermesPlugin({ config, ...where });
    for (const f of r.restored) out(`restored ${escapeText(f)}\n`);
    if (r.edited) out(`wrote ${escapeText(r.edited.file)}\nbackup ${escapeText(r.edited.backup!)}\n`);
    for (const f of r.removed) out(`removed ${escapeText(f)}\n`);
    err("media-outbox: restart the gateway so it unloads the plugin\n");
    return 0;
  }
  const r = await installHermesPlugin({ config, ...where, dryRun });
  const undisabled = `${escapeText(r.config.file)} listed ${PLUGIN_NAME} in plugins.disabled, and Hermes never loads a plugin listed there (even with plugins.enabled)`;
  if (dryRun) {
    if (r.undisabled) err(`media-outbox: ${undisabled}: install would take it out\n`);
    for (const c of r.contents) out(`==> ${escapeText(c.file)} <==\n${c.content.split("\n").map(escapeText).join("\n")}`);
    if (r.config.changed) out(`==> ${escapeText(r.config.file)} <==\n${r.config.content.split("\n").map(escapeText).join("\n")}`);
    err("media-outbox: --dry-run: nothing was written\n");
    return 0;
  }
  for (const f of r.files) out(`wrote ${escapeText(f)}\n`);
  if (r.config.changed) out(`wrote ${escapeText(r.config.file)}\n${r.config.backup ? `backup ${escapeText(r.config.backup)}\n` : ""}`);
  else err(`media-outbox: ${escapeText(r.config.file)} already enables ${PLUGIN_NAME} in plugins.enabled\n`);
  if (r.undisabled) err(`media-outbox: ${undisabled}: it was taken out\n`);
  err(`media-outbox: restart the gateway so it loads the plugin (its send_file tool and the final-reply check)${r.reinstalled ? "; the plugin's files were replaced by this package's" : ""}\n`);
  return 0;
}
