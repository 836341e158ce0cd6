// What the real Hermes gateway (hermes-agent in .venv, python-env.ts) does
// with a final reply, asked in one Python process for many replies: the
// check-reply tests judge their results by it, never by a model of it.
import { spawnSync } from "node:child_process";

/** How much of the gateway's chain to run: `media` its MEDIA: files, `uploads` those and the bare local paths it also sends. */
export type GatewayChain = "media" | "uploads";

const SCRIPTS: Record<GatewayChain, string> = {
  // BasePlatformAdapter.extract_media, then its path validation.
  media: ["    media, _ = B.extract_media(text)", "    out.append([p for p, _ in B.filter_media_delivery_paths(media)])"].join("\n"),
  // As the gateway sends a reply: its MEDIA: files, then the bare local files in what is left once images and directives
  // are taken out (extract_local_files; it does not deduplicate across the two lists).
  uploads: [
    "    media, resp = B.extract_media(text)",
    "    media = B.filter_media_delivery_paths(media)",
    "    images, tc = B.extract_images(resp)",
    "    tc = _strip_media_directives(tc).strip()",
    "    local, tc = B.extract_local_files(tc)",
    "    out.append([p for p, _ in media] + B.filter_local_delivery_paths(local))",
  ].join("\n"),
};

/** The paths the real gateway, run with `env`, sends from each reply (a file once per upload). */
export function gatewaySends(python: string, env: NodeJS.ProcessEnv, replies: string[], chain: GatewayChain): string[][] {
  const script = [
    "import json, logging, sys",
    "logging.disable(logging.CRITICAL)",
    "from gateway.platforms.base import BasePlatformAdapter as B, _strip_media_directives",
    "out = []",
    "for text in json.load(sys.stdin):",
    SCRIPTS[chain],
    "json.dump(out, sys.stdout)",
  ].join("\n");
  const r = spawnSync(python, ["-c", script], { env: { ...env, PYTHONDONTWRITEBYTECODE: "1" }, input: JSON.stringify(replies), encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`the real Hermes failed on the replies (exit ${r.status}):\n${r.stderr}`);
  return JSON.parse(r.stdout) as string[][];
}
