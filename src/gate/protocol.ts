// The gate's protocol, one module for both ends: HTTP/1.1 over a Unix socket,
// so that a sandbox without media-outbox can speak it with curl.
//
//   POST /prepare?name=NAME[&max_size=SIZE][&allow=EXT,...][&platform=NAME]
//        body: the file's bytes (Content-Length, or chunked)
//        200: the prepare --json document for that one input
//   GET  /health    200: {"ok": true, "outbox": DIR}
//   anything else: an error document {"success": false, "error": {"code", "message"}}
import { parseAllowList } from "../config/config.js";
import { isPlatformName, PLATFORM_NAMES } from "../config/platforms.js";
import { usageError } from "../core/errors.js";
import { escapeText } from "../core/escape.js";
import { parseSize } from "../core/units.js";
import type { PolicyRequest } from "../prepare/judge.js";

export const PREPARE_PATH = "/prepare";
export const HEALTH_PATH = "/health";

/** The longest name a request may give (PATH_MAX: a client sends the path it was given). */
export const MAX_NAME_BYTES = 4096;

/** What an error answer's `code` says; its HTTP status is in STATUS_OF. */
export type GateErrorCode =
  | "bad_request"
  | "no_such_endpoint"
  | "method_not_allowed"
  | "expectation_failed"
  | "client_timeout"
  | "headers_too_large"
  | "busy"
  | "shutting_down"
  | "outbox_unsafe"
  | "state_unsafe"
  | "internal_error";

export const STATUS_OF: Record<GateErrorCode, number> = {
  bad_request: 400,
  no_such_endpoint: 404,
  method_not_allowed: 405,
  expectation_failed: 417,
  client_timeout: 408,
  headers_too_large: 431,
  busy: 503,
  shutting_down: 503,
  outbox_unsafe: 503,
  state_unsafe: 503,
  internal_error: 500,
};

export interface ErrorDocument {
  success: false;
  error: { code: string; message: string };
}

export interface HealthDocument {
  ok: boolean;
  outbox: string;
  error?: { code: string; message: string };
}

export function errorDocument(code: string, message: string): ErrorDocument {
  return { success: false, error: { code, message } };
}

export interface PrepareQuery {
  name: string;
  policy: PolicyRequest;
}

const QUERY_KEYS = new Set(["name", "max_size", "allow", "platform"]);
/** Longest value of a policy parameter: enough for every allowed extension, little to echo in an error. */
const MAX_POLICY_VALUE = 512;

/** The request target of a prepare call (what the client sends). */
export function prepareTarget(name: string, policy: PolicyRequest = {}): string {
  // Through UTF-8 and back: a lone surrogate (which encodeURIComponent refuses) becomes U+FFFD.
  const query = [`name=${encodeURIComponent(Buffer.from(name, "utf8").toString("utf8"))}`];
  if (policy.maxSize !== undefined) query.push(`max_size=${policy.maxSize}`);
  if (policy.allow !== undefined) query.push(`allow=${encodeURIComponent(policy.allow.join(","))}`);
  if (policy.platform !== undefined) query.push(`platform=${encodeURIComponent(policy.platform)}`);
  return `${PREPARE_PATH}?${query.join("&")}`;
}

/**
 * Reads a prepare call's query string. Throws a usage FatalError whose
 * message echoes nothing raw: the server answers it as `bad_request`.
 */
export function parsePrepareQuery(search: string): PrepareQuery {
  const params = new URLSearchParams(search);
  const seen = new Set<string>();
  for (const key of params.keys()) {
    if (!QUERY_KEYS.has(key)) throw usageError(`unknown parameter ${escapeText(JSON.stringify(key.slice(0, 64)))} (known: ${[...QUERY_KEYS].join(", ")})`);
    if (seen.has(key)) throw usageError(`parameter ${key} given more than once`);
    seen.add(key);
  }
  const name = params.get("name");
  if (name === null || name === "") throw usageError("the name parameter is required: POST /prepare?name=chart.png with the file's bytes as the body");
  if (Buffer.byteLength(name) > MAX_NAME_BYTES) throw usageError(`the name is longer than ${MAX_NAME_BYTES} bytes`);
  for (const key of ["max_size", "allow", "platform"]) {
    if ((params.get(key)?.length ?? 0) > MAX_POLICY_VALUE) throw usageError(`the ${key} parameter is longer than ${MAX_POLICY_VALUE} characters`);
  }
  const policy: PolicyRequest = {};
  const maxSize = params.get("max_size");
  if (maxSize !== null) policy.maxSize = parseSize(maxSize, "max_size");
  const allow = params.get("allow");
  if (allow !== null) policy.allow = parseAllowList(allow, "allow");
  const platform = params.get("platform");
  if (platform !== null) {
    if (!isPlatformName(platform)) throw usageError(`unknown platform ${escapeText(JSON.stringify(platform.slice(0, 64)))} (known: ${PLATFORM_NAMES.join(", ")})`);
    policy.platform = platform;
  }
  return { name, policy };
}

/** Splits a request target into its path and query; `//host/path` and `*` forms are not paths. */
export function splitTarget(target: string): { path: string; search: string } {
  const q = target.indexOf("?");
  return q < 0 ? { path: target, search: "" } : { path: target.slice(0, q), search: target.slice(q + 1) };
}
