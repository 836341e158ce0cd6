// The gate's protocol, one module for both ends: HTTP/1.1 over a Unix socket,
// so that a sandbox without media-outbox can speak it with curl.
//
//   POST /prepare?name=NAME[&max_size=SIZE][&allow=EXT,...][&platform=NAME]
//        [Media-Outbox-Environment: BASE64]
//        body: the file's bytes (Content-Length, or chunked)
//        200: the prepare --json document for that one input
//   GET  /health    200: {"ok": true, "outbox": DIR, "state": DIR}
//   anything else: an error document {"success": false, "error": {"code", "message"}}
//
// Media-Outbox-Environment (optional, at most once): the secret variables of
// the environments the client runs under, which the gate (another user)
// cannot read in /proc: the Hermes gateway's above an agent's prepare. The
// standard base64 (padded) of `NAME=VALUE` entries joined by NUL bytes, in
// UTF-8, at most MAX_ENVIRONMENT_HEADER characters; empty means none. The
// gate looks for their values in this request's file as it looks for its
// own known secrets (a refusal names the variable, "the client's
// environment"); a header it cannot read is 400 bad_request. Without it (a
// sandbox's curl) the request is judged as before: it only adds refusals.
import { parseAllowList } from "../config/config.js";
import { isPlatformName, PLATFORM_NAMES } from "../config/platforms.js";
import { usageError } from "../core/errors.js";
import { quoteText } from "../core/escape.js";
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
  /**
   * The gate's state directory (staging, ledger, quarantine), as its
   * configuration put it: beside the outbox (`state` when installed,
   * `.NAME-state` when started by hand), or MEDIA_OUTBOX_STATE_DIR, or a
   * config file's stateDir. doctor and status look there. A gate before
   * this field, or one whose state path would not print as it is, leaves
   * it out.
   */
  state?: string;
  error?: { code: string; message: string };
}

export function errorDocument(code: string, message: string): ErrorDocument {
  return { success: false, error: { code, message } };
}

/** The header that carries the client's environment (see above). */
export const ENVIRONMENT_HEADER = "Media-Outbox-Environment";
/**
 * Characters of its value: 9 KiB of entries (a gateway's secret variables
 * take a few hundred bytes). With the longest request line (a 4096-byte name
 * percent-encoded, the policy parameters at their bounds: under 17 KiB) it
 * stays under the gate's 32 KiB of request line and headers.
 */
export const MAX_ENVIRONMENT_HEADER = 12 * 1024;

/** What a client sends of its environment: the header's value, and the entries the bound left out. */
export interface EncodedEnvironment {
  value: string;
  dropped: [string, string][];
}

/** Whether the format carries an entry: a name without `=` or NUL, a value without NUL (as every environment's are). */
const carried = ([name, value]: readonly [string, string]) => name !== "" && !name.includes("=") && !name.includes("\0") && !value.includes("\0");

/**
 * The header's value for `entries`, nearest environment first: an entry
 * that would pass MAX_ENVIRONMENT_HEADER is left out with all after it (the
 * request is sent all the same; the caller says what was dropped). An entry
 * the format cannot carry is passed over.
 */
export function encodeEnvironment(entries: readonly [string, string][]): EncodedEnvironment {
  // Base64 writes 4 characters for each 3 bytes.
  const budget = (MAX_ENVIRONMENT_HEADER / 4) * 3;
  const parts: Buffer[] = [];
  let bytes = 0;
  for (let i = 0; i < entries.length; i++) {
    if (!carried(entries[i]!)) continue;
    const [name, value] = entries[i]!;
    const entry = Buffer.from(`${parts.length > 0 ? "\0" : ""}${name}=${value}`, "utf8");
    if (bytes + entry.length > budget) return { value: Buffer.concat(parts).toString("base64"), dropped: entries.slice(i) };
    parts.push(entry);
    bytes += entry.length;
  }
  return { value: Buffer.concat(parts).toString("base64"), dropped: [] };
}

/** Standard base64, padded: anything else is refused, never guessed at. */
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Reads the header's values (node's headersDistinct: one per header line).
 * Throws a usage FatalError that echoes nothing of it (it holds secrets):
 * the server answers it as `bad_request`.
 */
export function parseEnvironmentHeader(values: readonly string[] | undefined): [string, string][] {
  if (values === undefined || values.length === 0) return [];
  if (values.length > 1) throw usageError(`the ${ENVIRONMENT_HEADER} header is given more than once`);
  const text = values[0]!;
  if (text.length > MAX_ENVIRONMENT_HEADER) throw usageError(`the ${ENVIRONMENT_HEADER} header is longer than ${MAX_ENVIRONMENT_HEADER} characters`);
  if (text.length % 4 !== 0 || !BASE64.test(text)) throw usageError(`the ${ENVIRONMENT_HEADER} header is not standard, padded base64`);
  let decoded: string;
  try {
    decoded = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(Buffer.from(text, "base64"));
  } catch {
    throw usageError(`the ${ENVIRONMENT_HEADER} header does not encode UTF-8 text`);
  }
  if (decoded === "") return [];
  const entries: [string, string][] = [];
  for (const entry of decoded.split("\0")) {
    const eq = entry.indexOf("=");
    if (eq <= 0) throw usageError(`entry ${entries.length + 1} of the ${ENVIRONMENT_HEADER} header is not NAME=VALUE (NUL-separated, the name not empty)`);
    entries.push([entry.slice(0, eq), entry.slice(eq + 1)]);
  }
  return entries;
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
    if (!QUERY_KEYS.has(key)) throw usageError(`unknown parameter ${quoteText(key.slice(0, 64))} (known: ${[...QUERY_KEYS].join(", ")})`);
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
    if (!isPlatformName(platform)) throw usageError(`unknown platform ${quoteText(platform.slice(0, 64))} (known: ${PLATFORM_NAMES.join(", ")})`);
    policy.platform = platform;
  }
  return { name, policy };
}

/** Splits an origin-form target (`/path?query`) into its path and query. */
export function splitTarget(target: string): { path: string; search: string } {
  const q = target.indexOf("?");
  return q < 0 ? { path: target, search: "" } : { path: target.slice(0, q), search: target.slice(q + 1) };
}

/** How much of a request target a 400's message shows (escaped): enough to recognise it, little to echo. */
const SHOWN_TARGET = 120;

/** What a malformed target's message says, with the target shown escaped and cut short. */
function badTarget(target: string, why: string): never {
  const shown = target.length > SHOWN_TARGET ? `${target.slice(0, SHOWN_TARGET)}...` : target;
  throw usageError(`the request target ${quoteText(shown)} ${why}; send the path alone (POST ${PREPARE_PATH}?name=NAME, GET ${HEALTH_PATH}) or an absolute http:// URL (http://gate${HEALTH_PATH})`);
}

/** A URI scheme (RFC 3986 §3.1). */
const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*$/;
/**
 * An authority without user information (RFC 3986 §3.2.2, 3.2.3): an IP
 * literal in brackets or a registered name (percent-encoding well formed),
 * then an optional port. Each alternative starts with a character of its
 * own: linear.
 */
const AUTHORITY = /^(?:\[[0-9A-Fa-f:.]+\]|\[v[0-9A-Fa-f]+\.[A-Za-z0-9\-._~!$&'()*+,;=:]+\]|(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})+)(?::[0-9]{0,5})?$/;

/**
 * The path and query of a request target (RFC 9112 §3.2). The origin-form
 * (`/health`) is what clients send; the absolute-form
 * (`http://gate/health`), which a server MUST accept (§3.2.2), is what a
 * client sends when it takes the gate for a proxy (curl with a proxy
 * variable set, some HTTP libraries): it is routed by its path. Its
 * authority names no host of a Unix socket's, so, as the `Host` header,
 * its value is not compared with anything; it must only be well formed: a
 * host is required (RFC 9110 §4.2.1: an empty one MUST be rejected), user
 * information is refused (§4.2.4), the scheme is http (the socket speaks no
 * TLS). `*` (the asterisk-form) is for OPTIONS alone (§3.2.4). A fragment is
 * never part of a target. Throws a usage FatalError whose message shows the
 * target escaped and cut short: the server answers it as `bad_request`.
 * One pass over the target: linear.
 */
export function parseTarget(target: string, method: string): { path: string; search: string } {
  if (target === "*") {
    // Well formed, and nothing there: no such endpoint.
    if (method === "OPTIONS") return { path: target, search: "" };
    badTarget(target, "(the asterisk-form) is only for OPTIONS");
  }
  if (target.includes("#")) badTarget(target, "carries a #fragment, which is never sent to a server");
  if (target.startsWith("/")) return splitTarget(target);
  const colon = target.indexOf(":");
  const scheme = colon < 0 ? "" : target.slice(0, colon);
  if (!SCHEME.test(scheme)) badTarget(target, "is neither a path starting with / nor an absolute URL");
  const lower = scheme.toLowerCase();
  if (lower === "https") badTarget(target, "asks for https, which the gate's socket does not speak (no TLS)");
  if (lower !== "http") badTarget(target, `has the scheme ${quoteText(scheme.slice(0, 32))}, not http`);
  if (!target.startsWith("//", colon + 1)) badTarget(target, "is not http:// followed by a host");
  const start = colon + 3;
  let end = start;
  while (end < target.length && target[end] !== "/" && target[end] !== "?") end++;
  const authority = target.slice(start, end);
  if (authority === "") badTarget(target, "names no host after http:// (any name will do: http://gate/...)");
  if (authority.includes("@")) badTarget(target, "carries user information (user@host), which HTTP does not send");
  if (!AUTHORITY.test(authority)) badTarget(target, "has a host that is not a host name, an IP address in brackets or a port of digits");
  // An empty path is the root (RFC 9110 §4.2.3): http://gate?x is /?x.
  const rest = target.slice(end);
  return splitTarget(rest.startsWith("/") ? rest : `/${rest}`);
}
