// media-outbox serve, spoken to over its socket the way a sandbox would:
// raw HTTP/1.1, good and bad. The gate runs as a real subprocess on a
// temporary socket and is killed by PID after each group, whatever happened.
import { execFileSync, spawn } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type Gate, clearGate, chunk, gateLeftBehind, head, killAll, post, rawExchange, startGate, syncLog, track, waitFor } from "./gate-helpers.js";
import { makePng } from "../src/core/png.js";
import { BIN, cli, makeHome, png } from "./helpers.js";

const MiB = 1024 * 1024;
const NOTHING = { outbox: [], staging: [], ledger: [] };

describe("serve: the protocol", () => {
  let h: ReturnType<typeof makeHome>;
  let gate: Gate;
  beforeAll(async () => {
    h = makeHome();
    gate = await startGate(h.home, h.env, ["--max-size", "1MiB", "--client-timeout", "5s", "--max-connections", "200"]);
  });
  afterAll(async () => {
    await killAll();
    h.cleanup();
  });
  const clear = () => clearGate(gate);

  it("GET /health names the outbox; HEAD answers the same without a body", async () => {
    const r = await rawExchange(gate.socket, [head("/health", {}, "GET")]);
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ ok: true, outbox: gate.outbox, state: gate.state });
    const headOnly = await rawExchange(gate.socket, [head("/health", {}, "HEAD")]);
    expect(headOnly.status).toBe(200);
    expect(headOnly.body).toBe("");
  });

  it("POST /prepare publishes the body: prepare's report, the outbox 0750, the file 0640, a ledger record", async () => {
    clear();
    const r = await rawExchange(gate.socket, post("chart.png", png(1)));
    expect(r.status).toBe(200);
    expect(r.text).toMatch(/\r\nContent-Type: application\/json; charset=utf-8\r\n/);
    const file = path.join(gate.outbox, "chart.png");
    expect(r.json).toEqual({
      success: true,
      partial_success: false,
      outbox: gate.outbox,
      media: [{ source: "chart.png", path: file, directive: `MEDIA:${file}`, name: "chart.png", bytes: png(1).length, sha256: crypto.createHash("sha256").update(png(1)).digest("hex"), mime: "image/png", reused: false }],
      media_dropped: [],
    });
    expect(fs.readFileSync(file)).toEqual(png(1));
    expect(fs.statSync(file).mode & 0o777).toBe(0o640);
    expect(fs.statSync(gate.outbox).mode & 0o777).toBe(0o750);
    const [day] = fs.readdirSync(path.join(gate.state, "ledger"));
    expect(JSON.parse(fs.readFileSync(path.join(gate.state, "ledger", day!), "utf8"))).toMatchObject({ source: "chart.png", name: "chart.png", reused: false });
    expect(gateLeftBehind(gate).staging).toEqual([]);
  });

  it("takes a chunked body, and answers 100 Continue before reading one that expects it", async () => {
    clear();
    const chunked = await rawExchange(gate.socket, [head("/prepare?name=a.png", { "Transfer-Encoding": "chunked" }), chunk(png(2).subarray(0, 10)), chunk(png(2).subarray(10)), "0\r\n\r\n"]);
    expect(chunked.json.media[0]).toMatchObject({ name: "a.png", bytes: png(2).length });
    const expecting = await rawExchange(gate.socket, [head("/prepare?name=b.png", { "Content-Length": png(3).length, Expect: "100-continue" }), 100, png(3)]);
    expect(expecting.text.startsWith("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n")).toBe(true);
    expect(expecting.json.media[0].name).toBe("b.png");
  });

  it("refusals are prepare's: a report with the reason code, nothing left in outbox, staging or ledger", async () => {
    clear();
    const cases: [string, Buffer | string, string][] = [
      ["notes.exe", "hello\n", "extension_not_allowed"],
      ["fake.png", "just text\n", "content_mismatch"],
      ["keys.txt", "AKIAQ3RZ7XK2MNVW4TLP\n", "secret_detected"],
      ["empty.png", "", "empty_file"],
      ["big.png", Buffer.concat([png(4), Buffer.alloc(2 * MiB)]), "too_large"],
    ];
    for (const [name, body, code] of cases) {
      const r = await rawExchange(gate.socket, post(name, body));
      expect(r.status, `${name}: ${JSON.stringify(r)}`).toBe(200);
      expect(r.json, name).toMatchObject({ success: false, partial_success: false, media: [], media_dropped: [{ path: name, code }] });
    }
    expect(gateLeftBehind(gate)).toEqual(NOTHING);
  });

  it("malformed requests get a clear JSON error with the right status, and publish nothing", async () => {
    clear();
    const cases: [(string | Buffer)[], number, string][] = [
      [[head("/prepare", { "Content-Length": 3 }), "abc"], 400, "bad_request"],
      [[head("/prepare?name=a.png&name=b.png", { "Content-Length": 3 }), "abc"], 400, "bad_request"],
      [[head("/prepare?name=a.png&colour=red", { "Content-Length": 3 }), "abc"], 400, "bad_request"],
      [[head("/prepare?name=a.png&max_size=lots", { "Content-Length": 3 }), "abc"], 400, "bad_request"],
      [[head("/prepare?name=a.png&allow=exe", { "Content-Length": 3 }), "abc"], 400, "bad_request"],
      [[head("/prepare?name=a.png", {}, "GET")], 405, "method_not_allowed"],
      [[head("/health", { "Content-Length": 3 }), "abc"], 405, "method_not_allowed"],
      [[head("/upload", {}, "GET")], 404, "no_such_endpoint"],
      [[head("/prepare?name=a.png", { "Content-Length": 3, Expect: "something-else" }), "abc"], 417, "expectation_failed"],
      [["GARBAGE\r\n\r\n"], 400, "bad_request"],
      [["POST /prepare?name=a.png HTTP/1.1\r\nContent-Length: nine\r\n\r\n"], 400, "bad_request"],
      [[head("/prepare?name=a.png", { "Transfer-Encoding": "chunked" }), "zz\r\nnot a chunk\r\n"], 400, "bad_request"],
      [[head("/prepare?name=a.png", { "X-Padding": "x".repeat(40_000) })], 431, "headers_too_large"],
      // What node's parser takes and the gate does not speak: a request line without its version (HTTP/0.9), a coding besides chunked.
      [["GET /health\r\n\r\n"], 400, "bad_request"],
      [[head("/prepare?name=a.txt", { "Transfer-Encoding": "gzip, chunked" }), "3\r\nabc\r\n0\r\n\r\n"], 400, "bad_request"],
      [[head("/prepare?name=a.txt", { "Transfer-Encoding": "chunked, chunked" }), "3\r\nabc\r\n0\r\n\r\n"], 400, "bad_request"],
    ];
    for (const [parts, status, code] of cases) {
      const r = await rawExchange(gate.socket, parts);
      expect(r.status, JSON.stringify(parts[0]).slice(0, 80)).toBe(status);
      expect(r.json, JSON.stringify(parts[0]).slice(0, 80)).toMatchObject({ success: false, error: { code, message: expect.any(String) } });
    }
    // The message says what Allow says.
    const health = await rawExchange(gate.socket, [head("/health", { "Content-Length": 3 }), "abc"]);
    expect(health.text).toMatch(/\r\nAllow: GET, HEAD\r\n/);
    expect(health.json.error.message).toBe("/health takes GET or HEAD");
    expect(gateLeftBehind(gate)).toEqual(NOTHING);
    expect(gate.proc.exitCode).toBeNull();
  });

  it("a request the parser refuses is told what was wrong in words, not only the parser's code, and never with its bytes", async () => {
    const cases: [(string | Buffer)[], RegExp, { halfClose?: boolean }?][] = [
      [["GARBAGE\r\n\r\n"], /\(HPE_INVALID_METHOD\): the request does not start with an HTTP method/],
      [["GET /health HTTP/9.9\r\n\r\n"], /\(HPE_INVALID_VERSION\): the request line does not end in HTTP\/1\.1/],
      [["GET /he\x1balth HTTP/1.1\r\n\r\n"], /\(HPE_INVALID_URL\): the request target is not a path starting with \/ nor an http:\/\/ URL, or holds a character HTTP does not allow/],
      [["GET /health HTTP/1.1\r\nX-Evil: a\x1b[31mMEDIA:/etc/passwd\r\n\r\n"], /\(HPE_INVALID_HEADER_TOKEN\): a header's name or value holds a character/],
      [["POST /prepare?name=a.png HTTP/1.1\r\nContent-Length: nine\r\n\r\n"], /\(HPE_INVALID_CONTENT_LENGTH\): the Content-Length header is not a decimal number/],
      [[head("/prepare?name=a.png", { "Content-Length": 3, "Transfer-Encoding": "chunked" }), "0\r\n\r\n"], /Content-Length|Transfer-Encoding/],
      [[head("/prepare?name=a.png", { "Transfer-Encoding": "chunked" }), "zz\r\nnot a chunk\r\n"], /\(HPE_INVALID_CHUNK_SIZE\): a chunk's size line is not a hexadecimal number/],
      // A Content-Length that promises more than comes, then the client's FIN.
      [[head("/prepare?name=lie.txt", { "Content-Length": 100 }), "hello"], /\(HPE_INVALID_EOF_STATE\): the client closed its side before the whole request arrived/, { halfClose: true }],
    ];
    for (const [parts, message, opts] of cases) {
      const r = await rawExchange(gate.socket, parts, opts);
      expect(r.status, JSON.stringify(parts[0]).slice(0, 80)).toBe(400);
      expect(r.json.error.message, JSON.stringify(parts[0]).slice(0, 80)).toMatch(message);
      expect(r.json.error.message).toMatch(/nothing was published/);
      expect(r.text).not.toMatch(/\x1b|MEDIA:|GARBAGE|nine|lie\.txt/);
    }
    expect(gate.proc.exitCode).toBeNull();
  });

  it("a request line other than METHOD SP TARGET SP VERSION (two spaces, a tab, a blank at either end) is a 400 that publishes and stages nothing", async () => {
    clear();
    const body = png(31);
    const length = `Host: gate\r\nContent-Length: ${body.length}\r\n\r\n`;
    const lines = [
      "GET  /health HTTP/1.1",
      "GET /health  HTTP/1.1",
      "GET   http://gate/health    HTTP/1.1",
      "GET\t/health HTTP/1.1",
      "GET /health\tHTTP/1.1",
      "GET /health HTTP/1.1 ",
      "GET /health HTTP/1.1\t",
      " GET /health HTTP/1.1",
      "POST  /prepare?name=two.png HTTP/1.1",
      "POST /prepare?name=tab.png\tHTTP/1.1",
      "POST /prepare?name=trailing.png HTTP/1.1  ",
    ];
    for (const line of lines) {
      const parts = line.startsWith("POST") ? [`${line}\r\n${length}`, body] : [`${line}\r\nHost: gate\r\n\r\n`];
      const r = await rawExchange(gate.socket, parts);
      expect(r.status, JSON.stringify(line)).toBe(400);
      // Node's parser refuses a tab and a blank at either end itself (its own words); two spaces or more between the parts are the gate's to refuse.
      const words = /\S {2,}\S/.test(line) ? /^the request line is not METHOD SP TARGET SP HTTP\/1\.1: put one space between/ : /^malformed HTTP request \(HPE_/;
      expect(r.json, JSON.stringify(line)).toMatchObject({ success: false, error: { code: "bad_request", message: expect.stringMatching(words) } });
      expect(r.json.error.message).toMatch(/nothing was published/);
      expect(r.text).not.toMatch(/\x09|two\.png|tab\.png|trailing\.png/);
    }
    expect(gateLeftBehind(gate)).toEqual(NOTHING);
    // The same requests, each part one space apart, are served; so is one after an empty line (RFC 9112 §2.2 lets a server ignore it).
    expect((await rawExchange(gate.socket, ["GET /health HTTP/1.1\r\nHost: gate\r\n\r\n"])).status).toBe(200);
    expect((await rawExchange(gate.socket, ["\r\nGET /health HTTP/1.1\r\nHost: gate\r\n\r\n"])).status).toBe(200);
    const served = await rawExchange(gate.socket, ["POST /prepare?name=one.png", " HTTP/1.1\r", `\n${length}`, body]);
    expect(served.json).toMatchObject({ success: true, media: [{ name: "one.png" }] });
    expect(gate.proc.exitCode).toBeNull();
  });

  it("a target in the absolute form (http://host/path, RFC 9112 §3.2.2) is routed by its path, whatever the host", async () => {
    clear();
    const health = await rawExchange(gate.socket, [head("http://gate/health", {}, "GET")]);
    expect(health.status).toBe(200);
    expect(health.json).toEqual({ ok: true, outbox: gate.outbox, state: gate.state });
    for (const target of ["HTTP://Localhost:8080/health", "http://[::1]/health", "http://127.0.0.1:/health", "http://some.host%2Dname/health"]) {
      const r = await rawExchange(gate.socket, [head(target, {}, "GET")]);
      expect(r.status, target).toBe(200);
    }
    // The Host header plays no part either.
    const otherHost = await rawExchange(gate.socket, [`GET http://gate/health HTTP/1.1\r\nHost: elsewhere.example\r\n\r\n`]);
    expect(otherHost.status).toBe(200);
    const published = await rawExchange(gate.socket, [head("http://localhost/prepare?name=abs.png", { "Content-Length": png(30).length }), png(30)]);
    expect(published.status).toBe(200);
    expect(published.json.media[0]).toMatchObject({ name: "abs.png", bytes: png(30).length });
    expect(fs.readFileSync(path.join(gate.outbox, "abs.png"))).toEqual(png(30));
    // The rules of the path are the same: methods, parameters, unknown paths.
    expect((await rawExchange(gate.socket, [head("http://gate/prepare?name=a.png", {}, "GET")])).json.error.code).toBe("method_not_allowed");
    expect((await rawExchange(gate.socket, [head("http://gate/prepare?colour=red", { "Content-Length": 3 }), "abc"])).json.error.code).toBe("bad_request");
    // No path is the root (RFC 9110 §4.2.3): no such endpoint, not a 400.
    for (const target of ["http://gate", "http://gate?name=a.png"]) {
      const r = await rawExchange(gate.socket, [head(target, {}, "GET")]);
      expect(r.status, target).toBe(404);
      expect(r.json.error.message, target).toMatch(/^no such endpoint: \/ /);
    }
    expect(fs.readdirSync(gate.outbox)).toEqual(["abs.png"]);
  });

  it("a malformed target is a 400 that says what is wrong, shows the target escaped and cut short, and publishes nothing", async () => {
    clear();
    const cases: [string, string, RegExp][] = [
      ["GET", "http://", /names no host after http:\/\//],
      ["GET", "http:///health", /names no host after http:\/\//],
      ["POST", "http://?name=a.png", /names no host/],
      ["GET", "http://user:pw@gate/health", /carries user information/],
      ["GET", "https://gate/health", /asks for https, which the gate's socket does not speak/],
      ["GET", "ftp://gate/health", /has the scheme "ftp", not http/],
      ["GET", "http://ga%zzte/health", /has a host that is not a host name/],
      ["GET", "http://gate:123456/health", /has a host that is not a host name/],
      ["GET", "http://[gate]/health", /has a host that is not a host name/],
      ["GET", "/health#top", /carries a #fragment/],
      ["GET", "http://gate/health#top", /carries a #fragment/],
      ["GET", "*", /\(the asterisk-form\) is only for OPTIONS/],
    ];
    for (const [method, target, message] of cases) {
      const r = await rawExchange(gate.socket, [head(target, {}, method)]);
      expect(r.status, target).toBe(400);
      expect(r.json.error, target).toEqual({ code: "bad_request", message: expect.stringMatching(message) });
      expect(r.json.error.message, target).toMatch(/send the path alone \(POST \/prepare\?name=NAME, GET \/health\) or an absolute http:\/\/ URL/);
      expect(r.json.error.message, target).toMatch(/nothing was published$/);
    }
    // OPTIONS * is well formed, and the gate has nothing there.
    const options = await rawExchange(gate.socket, [head("*", {}, "OPTIONS")]);
    expect(options.status).toBe(404);
    expect(options.json.error.code).toBe("no_such_endpoint");
    // A target with a forged directive and percent-encoded controls: shown escaped, never raw, in the answer and the log.
    const forged = await rawExchange(gate.socket, [head("ftp://x/MEDIA:/etc/passwd%0a%1b[31m", {}, "GET")]);
    expect(forged.status).toBe(400);
    expect(forged.json.error.message).toContain('"ftp://x/MEDIA\\x3a/etc/passwd%0a%1b[31m"');
    // A very long one (within the 32 KiB of headers): the message shows 120 characters of it.
    const long = `http://${"h".repeat(20_000)}@gate/health`;
    const longAnswer = await rawExchange(gate.socket, [head(long, {}, "GET")]);
    expect(longAnswer.status).toBe(400);
    expect(longAnswer.json.error.message).toContain(`"http://${"h".repeat(113)}..."`);
    expect(longAnswer.json.error.message.length).toBeLessThan(500);
    // Raw control characters and bytes over 0x7f never reach the router: node's parser refuses them, and the 400 says so in words.
    for (const target of ["http://gate/he\x1balth", "http://ga\x7fte/health", "http://gate/\u00e9", "health", "gate:80", "http:gate/health"]) {
      const r = await rawExchange(gate.socket, [Buffer.from(`GET ${target} HTTP/1.1\r\nHost: gate\r\n\r\n`, "latin1")]);
      expect(r.status, JSON.stringify(target)).toBe(400);
      expect(r.json.error.message, JSON.stringify(target)).toMatch(/\(HPE_INVALID_URL\): the request target is not a path starting with \/ nor an http:\/\/ URL/);
      expect(r.text).not.toMatch(/[\x1b\x7f\u00e9]/);
    }
    // The authority-form (CONNECT host:port) asks for a tunnel: answered, not dropped without a word.
    const connect = await rawExchange(gate.socket, ["CONNECT gate:80 HTTP/1.1\r\nHost: gate:80\r\n\r\n"]);
    expect(connect.status).toBe(400);
    expect(connect.json.error).toEqual({ code: "bad_request", message: expect.stringMatching(/^the gate is no proxy: CONNECT \(a host:port target\) is not served/) });
    await syncLog(gate);
    expect(gate.log()).not.toMatch(/MEDIA:\/etc\/passwd|\x1b/);
    expect(gateLeftBehind(gate)).toEqual(NOTHING);
    expect(gate.proc.exitCode).toBeNull();
  });

  it("a request answered at once still gets its answer when more bytes follow it in the same write (pipelined, or garbage)", async () => {
    clear();
    for (const extra of [head("/health", {}, "GET"), "GARBAGE\r\n\r\n"]) {
      const r = await rawExchange(gate.socket, [head("/health", {}, "GET") + extra]);
      expect(r.text.match(/HTTP\/1\.1 \d{3}/g), JSON.stringify(extra)).toHaveLength(1);
      expect(r.json, JSON.stringify(extra)).toEqual({ ok: true, outbox: gate.outbox, state: gate.state });
      const notFound = await rawExchange(gate.socket, [head("/upload", {}, "GET") + extra]);
      expect(notFound.json?.error?.code, JSON.stringify(extra)).toBe("no_such_endpoint");
    }
    expect(gate.proc.exitCode).toBeNull();
  });

  it("a Content-Length shorter than the body: its bytes are the file, and the client is told so (not a 400 for a file published)", async () => {
    clear();
    const r = await rawExchange(gate.socket, [head("/prepare?name=short.txt", { "Content-Length": 5 }) + "hello world, and bytes past the declared length\r\n\r\n"]);
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ success: true, media: [{ name: "short.txt", bytes: 5 }] });
    expect(fs.readFileSync(path.join(gate.outbox, "short.txt"), "utf8")).toBe("hello");
    expect((await syncLog(gate)).some((e) => e.event === "pipelined")).toBe(true);
  });

  it("random bytes and truncated requests never stop it; a body cut short publishes nothing", async () => {
    clear();
    for (let i = 0; i < 20; i++) await rawExchange(gate.socket, [crypto.randomBytes(1 + i * 97)], { halfClose: true });
    // Headers cut short, a body cut short, and a close right after connecting.
    await rawExchange(gate.socket, ["POST /prepare?name=a.png HTTP/1.1\r\nContent-Le"], { halfClose: true });
    await rawExchange(gate.socket, [head("/prepare?name=a.png", { "Content-Length": 1000 }), png(5).subarray(0, 20)], { halfClose: true });
    await rawExchange(gate.socket, [], { halfClose: true });
    await waitFor(() => gate.events().some((e) => e.event === "aborted"));
    expect(gateLeftBehind(gate)).toEqual(NOTHING);
    const r = await rawExchange(gate.socket, [head("/health", {}, "GET")]);
    expect(r.json.ok).toBe(true);
  });

  it("a client that shuts its side once the body is sent (nc, socat) still gets the answer", async () => {
    clear();
    const r = await rawExchange(gate.socket, post("half.png", png(6)), { halfClose: true });
    expect(r.status).toBe(200);
    expect(r.json.media[0]).toMatchObject({ name: "half.png", path: path.join(gate.outbox, "half.png") });
    const chunked = await rawExchange(gate.socket, [head("/prepare?name=half2.png", { "Transfer-Encoding": "chunked" }), chunk(png(7)), "0\r\n\r\n"], { halfClose: true });
    expect(chunked.json.media[0].name).toBe("half2.png");
  });

  it("serves one request per connection: requests packed after the first (pipelined, HTTP/1.0 keep-alive) are not served", async () => {
    clear();
    const many = (n: number, version: string, extra: string) =>
      Array.from({ length: n }, (_, i) => `POST /prepare?name=p${i}.png HTTP/${version}\r\nHost: gate\r\n${extra}Content-Length: ${png(i + 10).length}\r\n\r\n${png(i + 10).toString("latin1")}`).join("");
    for (const [version, extra] of [["1.1", ""], ["1.0", "Connection: keep-alive\r\n"]] as const) {
      clear();
      // All in one write: the gate's parser sees them at once.
      const r = await rawExchange(gate.socket, [Buffer.from(many(20, version, extra), "latin1")]);
      expect(r.text.match(/HTTP\/1\.1 \d{3}/g), version).toHaveLength(1);
      expect(r.json.media.map((m: { name: string }) => m.name)).toEqual(["p0.png"]);
      // Everything the gate did for that connection is in its log now: the other requests were never judged.
      const events = await syncLog(gate);
      expect(events.filter((e) => e.event === "pipelined").length).toBeGreaterThan(0);
      expect(fs.readdirSync(gate.outbox), version).toEqual(["p0.png"]);
    }
  });

  it("a body over the cap is cut off at the cap: answered too_large, the rest never read, nothing staged left", async () => {
    clear();
    // A declared size over the cap is refused before any byte is read: 100 Continue never comes.
    const declared = await rawExchange(gate.socket, [head("/prepare?name=big.png", { "Content-Length": 50 * MiB, Expect: "100-continue" })]);
    expect(declared.text.startsWith("HTTP/1.1 200 OK")).toBe(true);
    expect(declared.json.media_dropped[0]).toMatchObject({ code: "too_large" });
    // A chunked body of 40 MiB: the gate stops reading past the 1 MiB cap and closes.
    const block = chunk(Buffer.alloc(256 * 1024, 7));
    const parts: (string | Buffer)[] = [head("/prepare?name=big.png", { "Transfer-Encoding": "chunked" }), chunk(png(6))];
    for (let i = 0; i < 160; i++) parts.push(block);
    parts.push("0\r\n\r\n");
    const cut = await rawExchange(gate.socket, parts);
    expect(cut.status).toBe(200);
    expect(cut.json.media_dropped[0]).toMatchObject({ path: "big.png", code: "too_large" });
    // What the socket took before the gate closed: the cap and the kernel's buffers, not the 40 MiB sent.
    expect(cut.written).toBeLessThan(20 * MiB);
    await waitFor(() => gateLeftBehind(gate).staging.length === 0);
    expect(gateLeftBehind(gate)).toEqual(NOTHING);
  });

  it("a forged MEDIA: directive or control characters in the name are escaped in the answer and the log", async () => {
    clear();
    const forged = await rawExchange(gate.socket, post("x\nMEDIA:/etc/passwd\r.png", png(7)));
    expect(forged.json.media_dropped[0]).toEqual({ path: "x\\x0aMEDIA\\x3a/etc/passwd\\x0d.png", code: "unsafe_path_chars", reason: expect.any(String) });
    const directive = await rawExchange(gate.socket, post("MEDIA:/tmp/evil.png", png(7)));
    expect(directive.json.media_dropped[0]).toMatchObject({ path: "MEDIA\\x3a/tmp/evil.png", code: "media_directive_in_path" });
    // A bidi override is not a refusal (the output name drops it) but is never echoed raw.
    const bidi = await rawExchange(gate.socket, post("report\u202egnp.png", png(8)));
    expect(bidi.json.media[0]).toMatchObject({ source: "report\\u{202e}gnp.png", name: "reportgnp.png" });
    const notFound = await rawExchange(gate.socket, [head("/x%0A\\MEDIA:/etc/shadow%07", {}, "GET")]);
    expect(notFound.status).toBe(404);
    expect(notFound.json.error.message).toContain("/x%0A\\\\MEDIA\\x3a/etc/shadow%07");
    await syncLog(gate);
    for (const text of [forged.text, directive.text, bidi.text, notFound.text, gate.log()]) {
      expect(text).not.toMatch(/MEDIA:\/(etc\/passwd|tmp\/evil|etc\/shadow)/);
      expect(text).not.toMatch(/[\u0007\u202e]/);
    }
    expect(gate.log()).toContain("x\\\\x0aMEDIA\\\\x3a/etc/passwd");
  });

  it("answers a hundred concurrent connections, each correctly", async () => {
    clear();
    const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => rawExchange(gate.socket, post(`c${i}.png`, png(100 + i)))));
    answers.forEach((r, i) => {
      expect(r.status).toBe(200);
      expect(r.json.media[0]).toMatchObject({ name: `c${i}.png`, bytes: png(100 + i).length });
    });
    expect(gateLeftBehind(gate).outbox).toHaveLength(100);
  });

  it("a request can narrow the policy with max_size, allow and platform, never widen it", async () => {
    clear();
    const tiny = await rawExchange(gate.socket, [head(`/prepare?name=a.png&max_size=10`, { "Content-Length": png(9).length }), png(9)]);
    expect(tiny.json.media_dropped[0].code).toBe("too_large");
    const pdfOnly = await rawExchange(gate.socket, [head(`/prepare?name=a.png&allow=pdf`, { "Content-Length": png(9).length }), png(9)]);
    expect(pdfOnly.json.media_dropped[0]).toMatchObject({ code: "extension_not_allowed", reason: ".png is not on the allow-list (pdf)" });
    // Over the gate's 1 MiB cap, though the platform allows 10 MB.
    const body = Buffer.concat([png(9), Buffer.alloc(2 * MiB)]);
    const wider = await rawExchange(gate.socket, [head(`/prepare?name=a.png&platform=telegram&max_size=100MB`, { "Content-Length": body.length }), body]);
    expect(wider.json.media_dropped[0].code).toBe("too_large");
    expect(gateLeftBehind(gate).outbox).toEqual([]);
  });
});

describe("serve: stalled clients and the connection bound", () => {
  let h: ReturnType<typeof makeHome>;
  afterEach(async () => {
    await killAll();
    h.cleanup();
  });

  it("a client that stalls in its headers or its body is answered 408 and cut off; nothing staged is left", async () => {
    h = makeHome();
    const gate = await startGate(h.home, h.env, ["--client-timeout", "300ms"]);
    const inHeaders = await rawExchange(gate.socket, ["POST /prepare?name=a.png HTTP/1.1\r\nContent-"]);
    expect(inHeaders.status).toBe(408);
    expect(inHeaders.json.error.code).toBe("client_timeout");
    const inBody = await rawExchange(gate.socket, [head("/prepare?name=a.png", { "Content-Length": 1000 }), png(1).subarray(0, 30)]);
    expect(inBody.status).toBe(408);
    expect(inBody.json.error).toMatchObject({ code: "client_timeout", message: expect.stringContaining("nothing was published") });
    await waitFor(() => gateLeftBehind(gate).staging.length === 0);
    expect(gateLeftBehind(gate)).toEqual(NOTHING);
  });

  it("connections beyond --max-connections are answered 503 busy at once; the gate serves again once they are gone", async () => {
    h = makeHome();
    const gate = await startGate(h.home, h.env, ["--max-connections", "2", "--client-timeout", "60s"]);
    const { connect } = await import("node:net");
    // Two clients that send half a request line and then nothing.
    const holders = [1, 2].map(() => {
      const c = connect(gate.socket, () => c.write("POST /prepare?name=a.png HTTP/1.1\r\n"));
      c.on("error", () => {});
      return c;
    });
    // Until the gate has accepted both, a request may still get through.
    let busy = await rawExchange(gate.socket, post("c.png", png(2)));
    while (busy.status !== 503) busy = await rawExchange(gate.socket, post("c.png", png(2)));
    expect(busy.text).toMatch(/\r\nRetry-After: 1\r\n/);
    expect(busy.json).toEqual({ success: false, error: { code: "busy", message: expect.stringContaining("2 connections") } });
    expect(gate.events().some((e) => e.event === "busy")).toBe(true);
    for (const c of holders) c.destroy();
    let answer = busy;
    while (answer.status === 503) answer = await rawExchange(gate.socket, post("d.png", png(3)));
    expect(answer.status).toBe(200);
    expect(answer.json.media[0].name).toBe("d.png");
  });
});

describe("serve: the bound on upload bytes held at once", () => {
  let h: ReturnType<typeof makeHome>;
  afterEach(async () => {
    await killAll();
    h.cleanup();
  });

  it("answers 503 busy, before reading its body, a document that would pass --max-held-bytes; smaller ones and text (which holds nothing) pass, prepare waits it out, and one upload alone is always taken", async () => {
    h = makeHome();
    const gate = await startGate(h.home, h.env, ["--max-held-bytes", "1MiB", "--client-timeout", "60s"]);
    const { connect } = await import("node:net");
    // A client that declares 900,000 bytes of a picture (kept whole while it arrives), sends the first few and then nothing: those bytes are held.
    const holder = connect(gate.socket, () => holder.write(head("/prepare?name=held.png", { "Content-Length": 900_000 }) + "x".repeat(100)));
    holder.on("error", () => {});
    // 390 KB of noise: a picture that does not compress.
    const noise = crypto.randomBytes(400_000);
    const photo = makePng(360, (i) => noise[i]!);
    // Until the gate has taken the holder's request, this one may still get through.
    let busy = await rawExchange(gate.socket, post("photo.png", photo, { Expect: "100-continue" }));
    while (busy.status !== 503) busy = await rawExchange(gate.socket, post("photo.png", photo, { Expect: "100-continue" }));
    expect(busy.text).toMatch(/\r\nRetry-After: 1\r\n/);
    expect(busy.text).not.toMatch(/100 Continue/);
    expect(busy.json).toEqual({ success: false, error: { code: "busy", message: expect.stringContaining("would pass its bound of 1.0 MiB") } });
    // A small upload fits beside the held one.
    const small = await rawExchange(gate.socket, post("small.png", png(3)));
    expect(small.status).toBe(200);
    expect(small.json.media[0].name).toBe("small.png");
    // Text as large as the picture goes to the staging file as it arrives: it holds nothing, and passes.
    const notes = Buffer.from("quarterly notes, nothing secret\n".repeat(12_000));
    const text = await rawExchange(gate.socket, post("notes.txt", notes, { Expect: "100-continue" }));
    expect(text.status).toBe(200);
    expect(text.json.media[0].name).toBe("notes.txt");
    // prepare, through the gate, is answered busy and asks again until the held bytes are gone.
    const file = path.join(h.home, "photo.png");
    fs.writeFileSync(file, photo);
    const child = track(spawn(process.execPath, [BIN, "prepare", file], { env: { ...h.env, MEDIA_OUTBOX_SOCKET: gate.socket }, stdio: ["ignore", "pipe", "pipe"] }));
    let stdout = "";
    child.stdout!.on("data", (d) => (stdout += d));
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    const busyBefore = gate.events().filter((e) => e.event === "busy").length;
    await waitFor(() => gate.events().filter((e) => e.event === "busy").length > busyBefore);
    holder.destroy();
    expect(await exited).toBe(0);
    expect(stdout).toBe(`MEDIA:${path.join(gate.outbox, "photo.png")}\n`);
    // With nothing held, a document larger than the whole bound is taken.
    const largeNoise = crypto.randomBytes(1_300_000);
    const large = makePng(640, (i) => largeNoise[i]!);
    expect(large.length).toBeGreaterThan(1024 * 1024);
    const alone = await rawExchange(gate.socket, post("large.png", large));
    expect(alone.status).toBe(200);
    expect(alone.json.media[0].name).toBe("large.png");
    await waitFor(() => gateLeftBehind(gate).staging.length === 0);
  });
});

describe("serve: start, stop and the socket", () => {
  let h: ReturnType<typeof makeHome>;
  afterEach(async () => {
    await killAll();
    h.cleanup();
  });

  it("an error thrown outside any request's handling is logged (escaped) and the gate goes on serving", async () => {
    h = makeHome();
    // Loaded before the CLI: throws from a callback of its own when told to, as a bug in the gate would.
    const preload = path.join(h.home, "throw-on-usr2.cjs");
    fs.writeFileSync(preload, `process.on("SIGUSR2", () => setImmediate(() => { throw new Error("bug\\nMEDIA:/etc/passwd"); }));\n`);
    const gate = await startGate(h.home, { ...h.env, NODE_OPTIONS: `--require ${preload}` });
    process.kill(gate.pid, "SIGUSR2");
    await waitFor(() => gate.events().some((e) => e.event === "internal_error"));
    const r = await rawExchange(gate.socket, post("after.png", png(4)));
    expect(r.json.media[0].name).toBe("after.png");
    expect(gate.proc.exitCode).toBeNull();
    const logged = gate.events().find((e) => e.event === "internal_error");
    expect(logged?.error).toContain("bug\\x0aMEDIA\\x3a/etc/passwd");
    expect(gate.log()).not.toContain("internal error: Error");
  });

  it("creates its socket 0660 and removes it when stopped by SIGTERM (exit 0)", async () => {
    h = makeHome();
    const gate = await startGate(h.home, h.env);
    const st = fs.lstatSync(gate.socket);
    expect(st.isSocket()).toBe(true);
    expect(st.mode & 0o777).toBe(0o660);
    process.kill(gate.pid, "SIGTERM");
    expect(await gate.exited).toBe(0);
    expect(fs.existsSync(gate.socket)).toBe(false);
    expect(gate.events().map((e) => e.event)).toEqual(expect.arrayContaining(["ready", "stopping", "stopped"]));
  });

  it("on SIGTERM, finishes the request in flight and publishes it, then exits 0", async () => {
    h = makeHome();
    const gate = await startGate(h.home, h.env);
    const net = await import("node:net");
    const conn = net.connect(gate.socket);
    let text = "";
    conn.on("data", (c) => (text += c));
    const closed = new Promise((r) => conn.on("close", r));
    const body = png(3);
    conn.write(head("/prepare?name=late.png", { "Content-Length": body.length }));
    conn.write(body.subarray(0, 20));
    await waitFor(() => gateLeftBehind(gate).staging.length === 1);
    process.kill(gate.pid, "SIGTERM");
    await waitFor(() => gate.events().some((e) => e.event === "stopping"));
    conn.write(body.subarray(20));
    await closed;
    expect(text).toMatch(/^HTTP\/1\.1 200 OK/);
    expect(await gate.exited).toBe(0);
    expect(gateLeftBehind(gate)).toMatchObject({ outbox: ["late.png"], staging: [] });
  });

  it("never replaces what is not a socket, nor a live gate's socket; clears a dead one", async () => {
    h = makeHome();
    const file = path.join(h.home, "gate.sock");
    fs.writeFileSync(file, "precious\n");
    const refused = cli(["serve", "--socket", file, "--outbox", path.join(h.home, "gate", "outbox")], { env: h.env });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/refusing to replace .*gate\.sock: it is not a socket/);
    expect(fs.readFileSync(file, "utf8")).toBe("precious\n");
    fs.unlinkSync(file);

    // A socket left by a process that died: bound, never listened on, not removed.
    execFileSync("python3", ["-c", `import socket; s=socket.socket(socket.AF_UNIX); s.bind(${JSON.stringify(file)})`]);
    const gate = await startGate(h.home, h.env);
    expect((await rawExchange(gate.socket, [head("/health", {}, "GET")])).json.ok).toBe(true);
    const second = cli(["serve", "--socket", file, "--outbox", path.join(h.home, "gate", "outbox")], { env: h.env });
    expect(second.code).toBe(2);
    expect(second.stderr).toMatch(/another process already listens on/);
    expect((await rawExchange(gate.socket, [head("/health", {}, "GET")])).json.ok).toBe(true);
  });

  it("without --socket or a socket from systemd, and with a bad option, exits 2 with the usage", () => {
    h = makeHome();
    const none = cli(["serve", "--outbox", path.join(h.home, "o")], { env: h.env });
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/serve needs --socket PATH/);
    const bad = cli(["serve", "--socket", path.join(h.home, "s.sock"), "--max-connections", "0"], { env: h.env });
    expect(bad.code).toBe(2);
    expect(fs.existsSync(path.join(h.home, "s.sock"))).toBe(false);
  });

  it("runs on the socket systemd passes (systemd-socket-activate), started by the first connection", async () => {
    h = makeHome();
    const activate = "/usr/bin/systemd-socket-activate";
    if (!fs.existsSync(activate)) throw new Error(`${activate} is missing: install the systemd package (README, Quick start)`);
    const socket = path.join(h.home, "gate.sock");
    const gate = await startGate(h.home, h.env, [], { file: activate, args: ["-l", socket] });
    await waitFor(() => fs.existsSync(socket));
    const src = path.join(h.home, "chart.png");
    fs.writeFileSync(src, png(4));
    const r = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const p = track(spawn(process.execPath, [BIN, "prepare", src], { env: { ...h.env, MEDIA_OUTBOX_SOCKET: socket } }));
      let stdout = "";
      p.stdout!.on("data", (c) => (stdout += c));
      p.on("exit", (code) => resolve({ code, stdout }));
    });
    expect(r).toEqual({ code: 0, stdout: `MEDIA:${path.join(gate.outbox, "chart.png")}\n` });
    expect(gate.events().find((e) => e.event === "ready")).toMatchObject({ socket: "systemd" });
    process.kill(gate.pid, "SIGTERM");
    expect(await gate.exited).toBe(0);
    // The socket is systemd's: serve never removes it.
    expect(fs.lstatSync(socket).isSocket()).toBe(true);
  });
});
