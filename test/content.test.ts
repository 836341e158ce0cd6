// The content check on the labelled corpus (test/corpus.ts): every fake
// credential in every carrier is refused with secret_detected and leaves
// nothing behind; the negatives are published; trailing data, decompression
// bombs and unreadable containers get their own codes; the Hermes .env's
// values are known; every rule stays linear on adversarial input.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { findSecret } from "../src/content/find.js";
import { parseDotenv } from "../src/content/dotenv.js";
import { KnownSecrets, base64Forms, loadKnownSecrets } from "../src/content/known.js";
import { checkContent } from "../src/prepare/content.js";
import { prepare } from "../src/prepare/prepare.js";
import { TextScanner } from "../src/prepare/text.js";
import { inspectBinary, inspectFile } from "../src/content/carriers.js";
import { InspectContext } from "../src/content/inspect.js";
import { NO_KNOWN_SECRETS } from "../src/content/known.js";
import { scanBytes } from "../src/content/scan.js";
import { valueLooksSecret } from "../src/content/rules.js";
import { looksLikePassword, looksLikeTokenValue } from "../src/content/shape.js";
import { nameHoldsNoSecret } from "../src/content/secret-variables.js";
import { hasUtf16Text } from "../src/content/utf16.js";
import { Refusal } from "../src/core/errors.js";
import { DEFAULT_ALLOW } from "../src/config/config.js";
import { rtfText } from "../src/content/rtf.js";
import { markupReferences, withoutInlineMarks, withoutIntrawordLinks, withoutIntrawordReferences } from "../src/content/text-meaning.js";
import { workbookText } from "../src/content/biff.js";
import { CARRIERS, CORPUS_EXTRA_ALLOW, Fakes, adversarial, biffPieces, biffRecord, bmp, cfb, docx, encode85, excelXls, excelXlsCut, flac, sstRecords, gif, olePackage, rtf, rtfObject, wordDoc, webm, jpeg, jpegMpf, makePng, mp3, mp4, negatives, ogg, oggPages, paxHeader, pdf, pdfOf, pdfSubsetFont, pngChunk, pngWithText, positives, pptx, rng, tar, tarHeader, wav, webp, xlsx, zip, pdfAttachment, pdfInfoUtf16, pdfXmpUtf16 } from "./corpus.js";
import { BIN, NOTHING_LEFT, cli, leftBehind, makeHome, outcome, write } from "./helpers.js";
import { parseEnviron, parseStat } from "../src/content/process-environments.js";

let h: ReturnType<typeof makeHome>;


const be32box = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};
let work: string;
beforeEach(() => {
  h = makeHome();
  work = h.work;
});
afterEach(() => h.cleanup());

const extOf = (carrier: string) => carrier.slice(carrier.lastIndexOf(".") + 1);

/**
 * DER keys in base64 around seeded bytes (the shapes of real ones, never a
 * real key): public ones as a SubjectPublicKeyInfo, private ones as PKCS #8.
 */
const derKey = (head: string, bytes: number, tail = "") => Buffer.concat([Buffer.from(head, "hex"), new Fakes(bytes).bytes(bytes), Buffer.from(tail, "hex")]).toString("base64");
const spkiPublicKey = (kind: "ec" | "rsa" | "ed25519") =>
  kind === "ec" ? derKey("3059301306072a8648ce3d020106082a8648ce3d03010703420004", 64)
  : kind === "rsa" ? derKey("30820122300d06092a864886f70d01010105000382010f003082010a0282010100", 256, "0203010001")
  : derKey("302a300506032b6570032100", 32);
const pkcs8PrivateKey = (kind: "ec" | "ed25519") =>
  kind === "ec" ? derKey("308187020100301306072a8648ce3d020106082a8648ce3d030107046d306b0201010420", 32, `a14403420004${"11".repeat(64)}`)
  : derKey("302e020100300506032b657004220420", 32);

async function judge(files: string[]) {
  return prepare(files, { env: h.env, cwd: work, allow: [...DEFAULT_ALLOW, ...CORPUS_EXTRA_ALLOW] });
}

describe("the labelled corpus", () => {
  // Every format in every carrier through the CLI: 20 to 35 s on this machine under eight engineers' load, the default timeout 30.
  it("refuses every fake credential in every carrier with secret_detected, naming the kind, never the value, leaving nothing behind", async () => {
    const files: string[] = [];
    const expected: { label: string; carrier: string; value: string }[] = [];
    for (const [label, value] of Object.entries(positives())) {
      for (const [carrier, make] of Object.entries(CARRIERS)) {
        files.push(write(work, `${label}-${carrier.replace(/\./g, "-")}.${extOf(carrier)}`, make(value)));
        expected.push({ label, carrier, value });
      }
    }
    const report = await judge(files);
    const missed = report.media.map((m) => m.source);
    expect(missed).toEqual([]);
    const wrong = report.media_dropped.flatMap((d, i) => (d.code === "secret_detected" ? [] : [`${expected[i]!.label} in ${expected[i]!.carrier}: ${d.code}: ${d.reason}`]));
    expect(wrong).toEqual([]);
    report.media_dropped.forEach((d, i) => {
      expect(d.reason).toMatch(/looks like (a|an|the) /);
      for (const line of expected[i]!.value.split("\n")) if (line.length >= 16) expect(d.reason).not.toContain(line.slice(-16));
    });
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
  }, 120_000);

  it("publishes every negative in every carrier but appended data", async () => {
    const files: string[] = [];
    for (const [label, text] of Object.entries(negatives())) {
      for (const [carrier, make] of Object.entries(CARRIERS)) {
        if (carrier.startsWith("after-")) continue;
        files.push(write(work, `${label}-${carrier.replace(/\./g, "-")}.${extOf(carrier)}`, make(text)));
      }
    }
    const report = await judge(files);
    expect(report.media_dropped.map((d) => `${d.path}: ${d.code}: ${d.reason}`)).toEqual([]);
  });

  it("finds each fake credential alone, and no placeholder of the documentation", () => {
    for (const [label, value] of Object.entries(positives(99))) expect(findSecret(` ${value} `), label).toBeDefined();
    for (const [label, text] of Object.entries(negatives(98))) expect(findSecret(text), label).toBeUndefined();
  });

  it("publishes what documentation and environment dumps write where a password or key would go, and still finds the real ones beside them (measured over this machine's documentation)", () => {
    const published = [
      "  PWD: '/Users/maciej',",
      '"PWD": "/home/nodeuser/project/node",',
      "export PWD=/srv/app2",
      "password: 'secret123'",
      "DB_PASSWORD=admin123",
      "--password=123Abpassword",
      'machine HOSTNAME login USERID password "PASSWORD"',
      '"result_key": "Ipv6CidrAssociations"',
      "arn:aws:secretsmanager:region:account-number:secret:myselfmanagedADtestsecret-123456",
      '{ \"Password\": \"user-password\" }',
      "POSTGRES_PASSWORD: ${POSTGRES_PASSWORD:-postgres}",
      "${DB_PASSWORD:?set DB_PASSWORD}",
      // Found in this machine's compressed manuals, changelogs and test logs once .gz files were read (2026-12-04).
      "rsa pss key: gnutls_x509_crt_verify_data2",
      "(GnuPG key: 0x7EC2DBB6F4DBF434)",
      "* tree-ssa-strlen.cc (strlen_pass::handle_assign,",
      "PASS: addr2line -f option",
      "XPASS: gdb.ada/assign_1.exp",
      "group_name:password:GID:user_list",
      "HOSTNAME:PORT:USERNAME:PASSWORD:BASE_DN:FLAGS",
      "private_key = ed25519.Ed25519PrivateKey.from_private_bytes(secret)",
      "key = base64.urlsafe_b64decode(key)",
      "credentials = standard_b64encode(credentials)",
      "pass: matchResult?.pass ?? false,",
      "const pass = !this.result.issues || this.result.issues.length",
      "--key='AAAAB3NzaC1yc2EAAAADAQABAAABAQC7vbqajDhA8mY3cUvZ2PzT'",
      "    pass = p4ssw0rd",
      "access_token=2YotnFZFEjr1zCsicMWpAA&state=xyz",
      "Authorization: Basic czZCaGRSa3F0MzpnWDFmQmF0M2JW",
      '"decryptionKey": "decryptionKey1024",',
      // Found in this machine's Python packages, C++ headers and npm (2026-12-04); the labelled corpus's "typed-code" holds them in context.
      "    key: PKCS12PrivateKeyTypes | None,",
      "            self, msg: str | bytes, key: Ed25519PrivateKey | Ed448PrivateKey",
      "  Pass *ResultPass = Resolver->getAnalysisIfAvailable(PI);",
      `key: "${spkiPublicKey("ec")}"`,
      `key: "${spkiPublicKey("rsa")}"`,
      `key: "${spkiPublicKey("ed25519")}"`,
      "  password: 'bm90IG15IHJlYWwgcGFzc3dvcmQ=',",
      // The same without its padding (a document's run may end before the `=`).
      "  password: 'bm90IG15IHJlYWwgcGFzc3dvcmQ",
      "    'Test2::Event::Pass'    => 'http://github.com/Test-More/test-more/issues',",
      "      $pass = '-anonymous@'",
      "MY_SERVICE_TOKEN=abc123randomstring",
      "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzb21lIjoicGF5bG9hZCJ9.4twFt5NiznN84AWoo1d7KO1T_yoc0Z6XOpOVswacPZg",
      'oauth_consumer_key="0685bd9184jfhq22", oauth_token="ad180jjd733klru7"',
      // Names that start with the prefixes of Hermes' redactor, and their placeholders (2026-12-04 evening).
      "am_pm_format_v2_string", "self.fal_client_settings_v2 = None", "exa_search_results_page2", "mem0_memory_client_v2", "retaindb_connection_pool_size_10",
      "EXA_API_KEY=exa_your_api_key_here_123", "hsk-xxxxxxxxxxxxxxxxxxxxxxxx", "brv_0000000000000000",
      // URLs whose password is documentation's, the user's own name, short, or a variable; links with an @ further on.
      "https://user:password@example.com/", "http://admin:admin@localhost:8080/", "git clone https://oauth2:${GITLAB_TOKEN}@gitlab.com/x.git",
      "https://alice:s3cret@example.org", "socks5://proxy.internal:1080", "see https://docs.python.org/3/ or mail me: dev@example.com",
      "http://localhost:8080@latest", "https://user:12345678@files.internal/", "MultiHostUrl('https://foo.com:123,foo:bar@bar.com/path')",
    ];
    // A curly quote ends a value as a straight one does; the scan reads UTF-8 bytes, so this one is given as bytes.
    expect(scanBytes(Buffer.from(" equivalent to \u2018--http-password=STRING\u2019. "))).toBeUndefined();
    expect(scanBytes(Buffer.from(" \u2018--http-password=Xk9#mP2qZ\u2019 "))?.what).toBe("a credential assigned to a key, token, secret or password name");
    for (const text of published) expect(findSecret(` ${text} `), text).toBeUndefined();
    const refused = ["password=/Xk9#mP2q", "password=Qv7mTz2kLp", "DB_PASSWORD=kq7Rw2pLz", "password=admin123456", '"result_key": "wJ7kQ2mX9pL4vN8rT3"', "api_key: Zq8vT2mLx9Rk4Wp7Ns3B", "POSTGRES_PASSWORD: ${POSTGRES_PASSWORD:-Xk9#mP2qZ}", "API_KEY: ${API_KEY:-Zq8vT2mLx9Rk4Wp7Ns3B}",
      // Beside the forms above that are published: the same names with real values.
      "PASS=Xk9#mP2qZ", "pass: Xk9#mP2qZ", "password: Xk9#mP2q:Zr", "private_key = 0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318",
      "key: gnutls_x509_Crt9verify_Q7data2", "token = aB3dE5fG.hJ9kL1mN-3pQ5", "access_token=2YotnFZFEjr1zCsicMWpAB", '"decryptionKey": "dKey1024xQ7mTz2kLpW9"', "pass: compass2024!",
      // Beside the code, public keys and examples above: a type name that is no identifier, private keys in the same encoding, a base64 password, a URL with one, a member access that is not one, other OAuth values.
      "key: PKCS12Xq7mTz2kLpW9 | None,", `key: "${pkcs8PrivateKey("ec")}"`, `key: "${pkcs8PrivateKey("ed25519")}"`, `key: "${derKey("305930130a", 85)}"`, `password: '${Buffer.from("Xk9#mP2qZ").toString("base64")}',`,
      "password => 'https://deploy:Xk9#mP2qZ@files.internal/'", "curl https://deploy:Xk9mP2qZr7@files.internal/report", "git+https://build:Qv7mTz2kLpW9@git.internal/repo.git",
      "wss://bot:Zq8vT2mLx9Rk@chat.internal/ws", "Pass *ResultPass = Xk9#mP2q-Zr;", 'oauth_consumer_key="0685bd9184jfhq23"', "MY_SERVICE_TOKEN=abc12Xq7mTz2kLpW9r"];
    for (const text of refused) expect(findSecret(` ${text} `), text).toBeDefined();
  });

  it("publishes the shapes the precision audit of this machine's files found refused (2026-12-05), and still finds real values of the same shapes", () => {
    const f = new Fakes(1205);
    const b64url = (text: string) => Buffer.from(text).toString("base64url");
    const jwtOf = (payload: object) => `${b64url('{"typ":"JWT","alg":"RS256"}')}.${b64url(JSON.stringify(payload))}.${f.pick("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-", 86)}`;
    const published = [
      // Standards' and documentation's example values (rules.ts DOCUMENTED_EXAMPLES).
      "            token=45ghiukldjahdnhzdauz&token_type_hint=refresh_token",
      'oauth_consumer_key="9djdj82h48djs9d2",\n    oauth_token="kkk9d7dh3k39sjv7",',
      "'oauth_token=lsdkfol23w54jlksdef&oauth_token_secret=qwe089234lkjsdf&my_specific=argument'",
      "    'oauth_token': 'sdf0o9823sjdfsdf',\n    'oauth_token_secret': '2kjshdfp92i34asdasd',",
      `    token = "${jwtOf({ iss: "https://dev-87evx9ru.auth0.com/", sub: "someone@clients", exp: 1572006964 })}"`,
      "[WireGuard]\nPrivateKey=EEGlnEPYJV//kbvvIqxKkQwOiS+UENyPncC4bF46ong=\nListenPort=51820",
      "    Master-Key: A7CEFC571974BE02CAC305269DC59F76EA9F0B180CB6642697A68251F2D2BB57E51DBBB4C7885573192AE9AEE220FACD",
      "$ gcloud compute os-login ssh-keys describe --key='e0d96d6fad35a61a0577f467940509b5aa08b6dea8d99456ec19a6e47126bc52'",
      "    \\-\\-key='e0d96d6fad35a61a0577f467940509b5aa08b6dea8d99456ec19a6e4\\e 126bc52'",
      "--admin-password=123Abpassdord --properties-compute-count=2",
      "'tools.auth_digest.key': 'a565c27146791cfb',",
      // Identifiers with a leading or trailing `_`, resource paths, a time-based UUID, a name's own label (shape.ts, find.ts).
      "_PKCS12_KEY = '_private_key_pkcs12'",
      "_FLOW_KEY = 'google_oauth2_flow_{0}'",
      "    oauth2client.client.OAuth2Credentials: _convert_oauth2_credentials,",
      "    --kms-key='projects/my-project/locations/us-central1/keyRings/my-key-ring/cryptoKeys/my-key'",
      "--set-kms-key=projects/my-project/locations/global/keyRings/my-keyring/cryptoKeys/my-key",
      "      key). Example key: zones/us-central1-a",
      'const TimeoutKey = "e2bfb730-ecaa-11e6-8f88-34363bc7c4c0"',
      'const ResourceManagerV3BasePathKey = "ResourceManagerV3"',
      "      'service_account_token': 'V1ServiceAccountTokenProjection'",
      // A URL's stock example password, a label after a password's name, a metadata entry's name, prose that names a page token.
      'os.environ[\'http_proxy\'] = "http://john.doe:p4ssw0rd@127.0.0.1:8180"',
      "    _password: DEPRECATED: For improved security, specify the password in the",
      "OSLOGIN_ENABLE_2FA_METADATA_KEY = 'enable-oslogin-2fa'",
      `    Next page token: ${f.pick("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 25)}`,
      // Names of keys that are no secret, from a word's start.
      "cache_key = 'Zq8vT2mLx9Rk4Wp7Ns3B'", "mySortKey: Zq8vT2mLx9Rk4Wp7Ns3B", "OBJECT_CACHE_TOKEN=Zq8vT2mLx9Rk4Wp7Ns3B",
    ];
    for (const text of published) expect(findSecret(` ${text} `), text).toBeUndefined();
    const hex = (n: number) => f.pick("0123456789abcdef", n);
    const refused = [
      "token=Qv7mTz2kLpW9rB4vN8sQ&token_type_hint=refresh_token",
      'oauth_token="kkk9d7dh3k39sjv8"',
      `token = "${jwtOf({ iss: "https://dev-97evx9ru.auth0.com/", sub: "someone@clients" })}"`,
      `PrivateKey=${Buffer.from(f.pick("0123456789abcdef", 32), "hex").toString("base64")}Xk9mP2qZr7Lw4vN8sQ2d`,
      `    Master-Key: ${hex(96).toUpperCase()}`,
      `--key='${hex(64)}'`,
      "--admin-password=Xk9#mP2qZ",
      "_KEY = '_q7mTz2kLpW9rB4vN8_'",
      "--kms-key='projects/Xq7mTz2kLpW9/rB4vN8sQ2d'",
      "key: 'aB3d/E5fG9hJ/kL1mN3pQ5rS'",
      'const TimeoutKey = "e2bfb730-ecaa-41e6-8f88-34363bc7c4c0"',
      'const ResourceManagerV3BasePathKey = "Zq8vT2mLx9Rk4Wp7Ns3B"',
      "'service_account_token': 'V1Zq8vT2mLx9Rk4Wp7Ns3BToken'",
      'os.environ["http_proxy"] = "http://john.doe:Xk9mP2qZr7@127.0.0.1:8180"',
      "    _password: Xk9mP2qZ:",
      "OSLOGIN_ENABLE_2FA_KEY = 'Zq8vT2mLx9Rk4Wp7Ns3B'",
      "    API token: Xq7mTz2kLpW9rB4vN8sQ2d",
      // A name that holds a word of a key that is no secret inside one of its words (`ad-min`, `ac-count`) still says secret.
      "ADMIN_PASSWORD=Xk9#mP2qZ", "AZURE_STORAGE_ACCOUNT_KEY=Zq8vT2mLx9Rk4Wp7Ns3B", "adminToken: Zq8vT2mLx9Rk4Wp7Ns3B",
    ];
    for (const text of refused) expect(findSecret(` ${text} `), text).toBeDefined();
  });

  it("refuses through prepare what this stop's rules and readings find (a key's body without armour, an armour in pandoc's dashes, an AWS key on the next line, a key a highlighter cut into spans), leaving nothing behind, and publishes their clean twins", async () => {
    const f = new Fakes(43);
    const body = derKey("308204a302010002820101", 600).match(/.{1,64}/g)!.join("\n");
    const aws = f.pick("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/+", 40);
    const anthropic = `sk-ant-api03-${f.pick("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 93)}AA`;
    const spans = (key: string) => key.split("-").map((part) => `<span class="n">${part}</span>`).join('<span class="o">-</span>');
    const cases: [string, (clean: boolean) => string, string][] = [
      ["body.txt", (clean) => `key material:\n${clean ? "(removed)" : body}\n`, "a private key block (its base64 body)"],
      ["pandoc.md", (clean) => `\u2014\u2013BEGIN PRIVATE KEY\u2014\u2013\n${clean ? "(removed)" : body}\n\u2014\u2013END PRIVATE KEY\u2014\u2013\n`, "a private key block"],
      ["aws.txt", (clean) => `aws_secret_access_key =\n${clean ? "(removed)" : aws}\n`, "an AWS secret access key"],
      ["code.html", (clean) => `<html><body><pre><code># ${spans(clean ? "sk-ant-api03-REDACTED" : anthropic)}</code></pre></body></html>\n`, "an Anthropic API key (in its text (tags removed)"],
    ];
    const allow = [...DEFAULT_ALLOW, "html"];
    const refused = await prepare(cases.map(([name, make]) => write(work, name, make(false))), { env: h.env, cwd: work, allow });
    expect(refused.media_dropped.map((d) => [path.basename(d.path), d.code, d.reason])).toEqual(cases.map(([name, , what]) => [name, "secret_detected", expect.stringContaining(what)]));
    for (const d of refused.media_dropped) expect(d.reason).not.toContain(aws.slice(0, 12));
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
    const published = await prepare(cases.map(([name, make]) => write(work, `clean-${name}`, make(true))), { env: h.env, cwd: work, allow });
    expect(published.media_dropped).toEqual([]);
    expect(leftBehind(h).outbox).toHaveLength(cases.length);
  });

  it("reads a Markdown file as markup too (the red team's 07: a token inline HTML cuts was published from a .md, refused from a .html): `<wbr>`, `&shy;`, `&#8203;`, `<span>` pieces, `&#95;` and HTML's named references for `_` and zero-width spaces are read through, and a `<` that opens no tag is kept as text; ordinary Markdown (`a < b`, autolinks, code spans and blocks of generics, comments, entities) is published", async () => {
    const key = positives(71)["github-token"]!;
    const [head, tail] = [key.slice(0, 14), key.slice(14)];
    const forms: [string, (k: [string, string]) => string][] = [
      ["wbr", ([a, b]) => `deploy token ${a}<wbr>${b}\n`],
      ["shy", ([a, b]) => `deploy token ${a}&shy;${b}\n`],
      ["shy-legacy", ([a, b]) => `deploy token ${a}&shy${b}\n`],
      ["zwsp-entity", ([a, b]) => `deploy token ${a}&#8203;${b}\n`],
      ["zwsp-named", ([a, b]) => `deploy token ${a}&ZeroWidthSpace;${b}\n`],
      ["span", ([a, b]) => `deploy token ${a}<span>${b}</span>\n`],
      ["underscore-entity", ([a, b]) => `deploy token ${(a + b).replace("_", "&#95;")}\n`],
      ["underscore-named", ([a, b]) => `deploy token ${(a + b).replace("_", "&lowbar;")}\n`],
      ["in-a-list", ([a, b]) => `# Notes\n\n- the token: <code>${a}</code><code>${b}</code>\n`],
      // A `<` that opens no tag is text a renderer shows: it does not take the key with it up to the next `>`.
      ["less-than", ([a, b]) => `if a < ${a}&shy;${b} > b\n`],
      ["less-than-underscore", ([a, b]) => `if a <_ ${a}&shy;${b} > b\n`],
    ];
    const refused = await prepare(forms.map(([name, make]) => write(work, `${name}.md`, make([head, tail]))), { env: h.env, cwd: work });
    expect(refused.media_dropped.map((d) => [path.basename(d.path), d.code, d.reason])).toEqual(forms.map(([name]) => [`${name}.md`, "secret_detected", expect.stringMatching(/GitHub token.*in its text \(tags removed\)/)]));
    for (const d of refused.media_dropped) expect(d.reason).not.toContain(tail.slice(0, 8));
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
    const ordinary = [
      "# Release notes &mdash; v2 &copy; 2026\n",
      "If a < b and c > d, then <b>bold</b> and <https://example.com/ghp/path?a=1&b=2> and <user@example.com>.\n",
      "Use `Map<String, List<T>>` or `Vec<u8>`; `a && b`; `x -> y`; 1 &lt; 2 &amp;&amp; 3 &gt; 2; &nbsp;&nbsp;indent.\n",
      "```rust\nfn id<T: Clone>(x: &T) -> T { x.clone() } // a<b>c\n```\n",
      "<!-- TODO: <b>check</b> the ghp_ prefix docs -->\n",
      "<details><summary>More</summary>\n\n| a | b |\n|---|---|\n| <kbd>Ctrl</kbd> | `<T>` |\n\n</details>\n",
      "Tokens look like `ghp_` followed by 36 characters, e.g. ghp_<wbr>XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX (a placeholder).\n",
      `deploy token ${head}<wbr>REDACTED and ${head.replace("_", "&#95;")}&shy;REDACTED\n`,
    ];
    const published = await prepare([write(work, "notes.md", ordinary.join("\n")), ...ordinary.map((text, i) => write(work, `ordinary-${i}.md`, text))], { env: h.env, cwd: work });
    expect(published.media_dropped).toEqual([]);
    expect(leftBehind(h).outbox).toHaveLength(ordinary.length + 1);
  });

  it("reads a Markdown file with its inline marks inside a word removed (the red team's 30b/08: a token cut by `**`, `*`, `~~` or a code span's backticks renders as one word and was published); `_` and `__` inside a word, a lone `~`, marks at a word's edge and ordinary emphasis are published", async () => {
    const key = positives(72)["github-token"]!;
    const [head, mid, tail] = [key.slice(0, 14), key.slice(14, 24), key.slice(24)];
    const marks = ["**", "*", "***", "~~", "`", "``", "**`"];
    const refused = await prepare(marks.map((m, i) => write(work, `mark-${i}.md`, `# Notes\n\nToken: ${head}${m}${mid}${[...m].reverse().join("")}${tail}\n`)), { env: h.env, cwd: work });
    expect(refused.media_dropped.map((d) => [path.basename(d.path), d.code, d.reason])).toEqual(marks.map((_, i) => [`mark-${i}.md`, "secret_detected", expect.stringMatching(/GitHub token.*in its text \(tags removed\)/)]));
    for (const d of refused.media_dropped) expect(d.reason).not.toContain(tail.slice(0, 8));
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
    const ordinary = [
      // What a renderer shows with its marks: `_` inside a word is text (CommonMark, GFM, pandoc), a lone `~` pandoc's subscript.
      `Token: ${head}__${mid}__${tail} and ${head}_${mid}_${tail} and ${head}~${mid}~${tail}\n`,
      `Token: **${head}** ${mid} *${tail}* and \`${head}\` \`${mid}${tail}\`\n`,
      "Use `snake_case`, a*b*c, 2**10, H~2~O, ~~old~~ new, **bold**text and `x`y`z`; see **README**.\n",
      ...Object.values(negatives(73)).map((text) => `Some notes\n\n${text.replace(/ /g, "**")}\n`),
    ];
    const published = await prepare(ordinary.map((text, i) => write(work, `ordinary-marks-${i}.md`, text)), { env: h.env, cwd: work });
    expect(published.media_dropped).toEqual([]);
  });

  it("removes Markdown's inline marks in linear time: runs of marks, marks between letters, and a lone mark far from the rest give a verdict", () => {
    const MiB = 1024 * 1024;
    for (const unit of ["*", "a*", "a`", "a~~", "*~`", "a**b", "`", "ghp_a**", "=", "a==", "a=", "a===", "+=", "a++b", "a+=+="]) {
      const text = Buffer.from(unit.repeat(MiB / unit.length) + "~", "latin1");
      const out = withoutInlineMarks(Buffer.from(text));
      expect(out.length, unit).toBeLessThanOrEqual(text.length);
      expect(scanBytes(out, NO_KNOWN_SECRETS), unit).toBeUndefined();
    }
    expect(withoutInlineMarks(Buffer.from("ab**cd** ~~ef~~g *h* i`j`k x~y")).toString()).toBe("abcd** ~~efg *h* ijk x~y");
    expect(withoutInlineMarks(Buffer.from("a==b++c**==d==**e f=g h===i j+=k l=+m n==")).toString()).toBe("abcde f=g h===i j+=k l=+m n==");
  });

  // forms33 (2026-12-05; published until then, as pandoc 2.17 shows them as text).
  it("reads a Markdown file with `==` (highlight) and `++` (insert) inside a word removed, as markdown-it's plugins, Obsidian and Typora show the word: a vendor token or a host value cut by them is refused; a lone `=` or `+`, runs of three, `C++`, `a==b` around another value and marks between blanks are published", async () => {
    const key = /ghp_\w+/.exec(positives(83)["github-token"]!)![0];
    const hostValue = new Fakes(84).pick("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 28);
    const other = new Fakes(85).pick("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 28);
    fs.mkdirSync(path.join(h.home, ".hermes"), { recursive: true, mode: 0o700 });
    write(path.join(h.home, ".hermes"), ".env", `BILLING_SERVICE_TOKEN=${hostValue}\n`);
    const cut = (v: string, open: string, close: string) => `${v.slice(0, 12)}${open}${v.slice(12, 22)}${close}${v.slice(22)}`;
    const marks: [string, string][] = [["==", "=="], ["++", "++"], ["**==", "==**"], ["==`", "`=="]];
    const texts = [key, hostValue].flatMap((v) => marks.map(([open, close]) => `# Notes\n\nSaved ${cut(v, open, close)}\n`));
    const files = texts.map((text, i) => write(work, `highlight-${i}.md`, text));
    const refused = await prepare(files, { env: h.env, cwd: work });
    expect(refused.media_dropped.map((d) => [path.basename(d.path), d.code, d.reason])).toEqual(
      files.map((file, i) => [path.basename(file), "secret_detected", expect.stringMatching(i < marks.length ? /GitHub token.*in its text \(tags removed\)/ : /the value of BILLING_SERVICE_TOKEN.*in its text \(tags removed\)/)]),
    );
    for (const d of refused.media_dropped) for (const v of [key, hostValue]) expect(d.reason).not.toContain(v.slice(22));
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
    const ordinary = [
      ...[key, hostValue].map((v) => `Saved ${cut(v, "=", "=")} and ${cut(v, "+", "+")} and ${cut(v, "===", "===")} and ${cut(v, "+++", "+++")} and ${cut(v, "=+", "+=")}\n`),
      ...[key, hostValue].map((v) => `Saved ${v.slice(0, 12)} == ${v.slice(12, 22)} ++ ${v.slice(22)}\n`),
      `Saved ${cut(other, "==", "==")} and ${cut(other, "++", "++")}; C++17, a==b, x += 1, ==marked== and ++new++.\n`,
      ...Object.values(negatives(86)).map((text) => `Some notes\n\n${text.replace(/ /g, "==")}\n`),
    ];
    const published = await prepare(ordinary.map((text, i) => write(work, `ordinary-highlight-${i}.md`, text)), { env: h.env, cwd: work });
    expect(published.media_dropped).toEqual([]);
    // A whole key in an undefined reference's brackets (shown as text) is in the bytes as they are.
    const undefinedReference = await prepare([key, hostValue].map((v, i) => write(work, `undefined-reference-${i}.md`, `# Notes\n\nSaved [${v}][x] and [${v}][]\n`)), { env: h.env, cwd: work });
    expect(undefinedReference.media_dropped.map((d) => d.code)).toEqual(["secret_detected", "secret_detected"]);
  });

  it("reads a Markdown file with an inline link inside a word as the word it shows (the red team's 31b: `ghp_…[k2Rp](#)…` renders as one word in CommonMark, GFM and pandoc, and was published); links between blanks and ordinary links are published", async () => {
    const key = /ghp_\w+/.exec(positives(76)["github-token"]!)![0];
    const [head, mid, tail] = [key.slice(0, 14), key.slice(14, 24), key.slice(24)];
    const links = [`${head}[${mid}](#)${tail}`, `[${head}](https://example.com/a_b?c=1)${mid}${tail}`, `${head}${mid}[${tail}](#x)`, `${head}**[${mid}](#)**${tail}`];
    const refused = await prepare(links.map((text, i) => write(work, `link-${i}.md`, `# Notes\n\nSaved ${text}\n`)), { env: h.env, cwd: work });
    expect(refused.media_dropped.map((d) => [path.basename(d.path), d.code, d.reason])).toEqual(links.map((_, i) => [`link-${i}.md`, "secret_detected", expect.stringMatching(/GitHub token.*in its text \(tags removed\)/)]));
    for (const d of refused.media_dropped) expect(d.reason).not.toContain(tail.slice(0, 8));
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
    const ordinary = [
      `Token: [${head}](#) ${mid}${tail} and ${head} [${mid}](#) ${tail} and ${head}[${mid} x](#)${tail} and ${head}[${mid}](a b)${tail}\n`,
      "See [the docs](https://example.com/docs), `fns[i](x)`, arr[0](1), [link][ref] and ![alt](img.png).\n",
      ...Object.values(negatives(77)).map((text) => `Some notes\n\n${text.replace(/ (\w+) /g, " [$1](https://example.com/$1) ")}\n`),
    ];
    const published = await prepare(ordinary.map((text, i) => write(work, `ordinary-links-${i}.md`, text)), { env: h.env, cwd: work });
    expect(published.media_dropped).toEqual([]);
  });

  it("reads Markdown's inline links inside words in linear time: runs of brackets, long link texts and destinations without their close give a verdict", () => {
    const MiB = 1024 * 1024;
    for (const unit of ["a](", "[a](", "](", `[${"a".repeat(300)}](`, `a[b](${"c".repeat(3000)}`, "a[b](c)", "a[b](c)d", "[[[[a](b"]) {
      const text = Buffer.from(unit.repeat(Math.ceil(MiB / unit.length)), "latin1");
      const out = withoutIntrawordLinks(text);
      expect(out.length, unit.slice(0, 12)).toBeLessThanOrEqual(text.length);
      expect(scanBytes(out, NO_KNOWN_SECRETS), unit.slice(0, 12)).toBeUndefined();
    }
    expect(withoutIntrawordLinks(Buffer.from("ab[cd](#)ef [gh](x) ij [k l](m)n o[p](q r)s [t](u)v w[x](y)")).toString()).toBe("abcdef [gh](x) ij k ln o[p](q r)s tv wx");
  });

  // Recall pass 32 (2026-12-06; published until then): pandoc 2.17's commonmark, gfm and markdown show these as the word whole.
  it("reads a Markdown link whose text holds a blank, and a reference link (`[text][ref]`, `[text][]`, `[text]`) whose label the file defines, inside a word as the word it shows; references with no definition, links between blanks and ordinary reference links are published", async () => {
    const key = /ghp_\w+/.exec(positives(78)["github-token"]!)![0];
    const [head, mid, tail] = [key.slice(0, 14), key.slice(14, 24), key.slice(24)];
    const links = [
      `[note: ${head}](#)${mid}${tail}`,
      `${head}[${mid}${tail} (rotated)](https://example.com/a)`,
      `${head}[${mid}][1]${tail}\n\n[1]: https://example.com/keys`,
      `${head}[${mid}][]${tail}\n\n[${mid}]: #`,
      `${head}[${mid}]${tail}\n\n[  ${mid.toUpperCase()}  ]: <#a>`,
      `${head}[${mid}][Key  Notes]${tail}\n\n   [key notes]: https://example.com "t"`,
    ];
    const refused = await prepare(links.map((text, i) => write(work, `blank-or-reference-${i}.md`, `# Notes\n\nSaved ${text}\n`)), { env: h.env, cwd: work });
    expect(refused.media_dropped.map((d) => [path.basename(d.path), d.code, d.reason])).toEqual(links.map((_, i) => [`blank-or-reference-${i}.md`, "secret_detected", expect.stringMatching(/GitHub token.*in its text \(tags removed\)/)]));
    for (const d of refused.media_dropped) expect(d.reason).not.toContain(tail.slice(0, 8));
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
    const ordinary = [
      // No definition: the brackets are shown (and a definition's own line is none).
      `Token: ${head}[${mid}][1]${tail} and ${head}[${mid}]${tail} and ${head}[${mid}][]${tail}\n\n[2]: #\n`,
      `Token: ${head}[${mid}]: ${tail}\n`,
      // Defined, but between blanks, or the key cut by the blank the text shows.
      `Token: ${head} [${mid}][1] ${tail} and ${head}[${mid} x][1]${tail}\n\n[1]: #\n`,
      "See [the docs][docs], [the API][] and [CHANGELOG]; `arr[i][j]` and arr[i][j] too.\n\n[docs]: https://example.com/docs\n[the api]: https://example.com/api\n[changelog]: ./CHANGELOG.md\n[i]: #\n",
      ...Object.values(negatives(79)).map((text) => `Some notes\n\n${text.replace(/ (\w+) /g, " [$1][r] ")}\n\n[r]: https://example.com\n`),
    ];
    const published = await prepare(ordinary.map((text, i) => write(work, `ordinary-references-${i}.md`, text)), { env: h.env, cwd: work });
    expect(published.media_dropped).toEqual([]);
    expect(withoutIntrawordReferences(Buffer.from("a[b][1]c d[e][]f g[E]h [i][1] j[k][none]l m[1]: n\n[1]: #\n[e]: #")).toString()).toBe("abc def gEh [i][1] j[k][none]l m[1]: n\n[1]: #\n[e]: #");
  });

  it("reads Markdown's reference links inside words in linear time: runs of brackets, long texts and labels without their close, many links to one definition give a verdict", () => {
    const MiB = 1024 * 1024;
    for (const unit of ["a][", "[a]", "x[a]x", "x[a][a]", "x[a][]", "[", "]", "][", `[${"a".repeat(300)}]`, `a[b][${"c".repeat(3000)}`, `a[${"b ".repeat(200)}][a]c`, "[[[[a][b", "a[\n"]) {
      const text = Buffer.from(`${unit.repeat(Math.ceil(MiB / unit.length))}\n\n[a]: #\n`, "latin1");
      const out = withoutIntrawordReferences(withoutIntrawordLinks(text));
      expect(out.length, unit.slice(0, 12)).toBeLessThanOrEqual(text.length);
      expect(scanBytes(out, NO_KNOWN_SECRETS), unit.slice(0, 12)).toBeUndefined();
    }
  });

  it("reads a numeric reference in a Markdown file with an upper-case `&#X` or any number of leading zeros, as HTML and pandoc do (the red team's 30b/04: `&#X5F;`, `&#00000095;`, `&#x000005f;` for `_` were published); one with too many digits past its zeros is no character, and the file is published", async () => {
    const key = positives(71)["github-token"]!;
    const refs = ["&#X5F;", "&#00000095;", "&#x000005f;", "&#X0000005F;", `&#x${"0".repeat(5000)}5f;`];
    const refused = await prepare(refs.map((ref, i) => write(work, `ref-${i}.md`, `# Notes\n\nToken: ${key.replace("_", ref)}\n`)), { env: h.env, cwd: work });
    expect(refused.media_dropped.map((d) => [path.basename(d.path), d.code, d.reason])).toEqual(refs.map((_, i) => [`ref-${i}.md`, "secret_detected", expect.stringMatching(/GitHub token.*in its text \(tags removed\)/)]));
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
    const published = await prepare([write(work, "overlong.md", `# Notes\n\nToken: ${key.replace("_", "&#000000000095000;")} and ${key.replace("_", "&#x05F0000;")}\n`)], { env: h.env, cwd: work });
    expect(published.media_dropped).toEqual([]);
  });

  /** The zip of the corpus (its entries deflated, as zip() writes them) with `from` replaced by `to` in the entry that holds it. */
  const zipWithText = (archive: Buffer, from: string, to: string) => {
    const entries: Record<string, Buffer> = {};
    for (let at = 0; archive.readUInt32LE(at) === 0x04034b50; ) {
      const [size, nameLength, extraLength] = [archive.readUInt32LE(at + 18), archive.readUInt16LE(at + 26), archive.readUInt16LE(at + 28)];
      const data = at + 30 + nameLength + extraLength;
      entries[archive.toString("utf8", at + 30, at + 30 + nameLength)] = Buffer.from(zlib.inflateRawSync(archive.subarray(data, data + size)).toString("utf8").replace(from, to));
      at = data + size;
    }
    return zip(entries);
  };
  // forms33 (2026-12-05; published until then): the text reading took a CDATA section out with its text, as a tag.
  it("reads a CDATA section's text as an XML parser does in an SVG, an XML file and docx, xlsx and pptx parts: a vendor token or a host value cut by sections or by a section and plain text is refused; the same layouts around another value are published", async () => {
    const key = /ghp_\w+/.exec(positives(80)["github-token"]!)![0];
    const hostValue = new Fakes(81).pick("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 28);
    const other = new Fakes(82).pick("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 28);
    fs.mkdirSync(path.join(h.home, ".hermes"), { recursive: true, mode: 0o700 });
    write(path.join(h.home, ".hermes"), ".env", `BILLING_SERVICE_TOKEN=${hostValue}\n`);
    const cuts = (v: string) => [`<![CDATA[${v.slice(0, 10)}]]><![CDATA[${v.slice(10)}]]>`, `${v.slice(0, 10)}<![CDATA[${v.slice(10)}]]>`, `<![CDATA[${v.slice(0, 10)}]]>${v.slice(10, 20)}<![CDATA[${v.slice(20)}]]>`];
    const svg = (text: string) => `<svg xmlns="http://www.w3.org/2000/svg" width="400" height="40"><text x="4" y="20">${text}</text></svg>\n`;
    const xml = (text: string) => `<?xml version="1.0"?>\n<config><token>${text}</token></config>\n`;
    const word = (text: string) => docx("Report", 7, { "word/document.xml": `<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>${text}</w:t></w:r></w:p></w:body></w:document>` });
    /** A zip that `make` (an xlsx or pptx of the corpus, stored) would write, with `text` where its one line `x` stood. */
    const sheet = (text: string) => zipWithText(xlsx("x"), "<t>x</t>", `<t>${text}</t>`);
    const slide = (text: string) => zipWithText(pptx("x"), "<a:t>x</a:t>", `<a:t>${text}</a:t>`);
    const carriers: [string, (text: string) => string | Buffer][] = [["svg", svg], ["xml", xml], ["docx", word], ["xlsx", sheet], ["pptx", slide]];
    const files = (values: string[], prefix: string) => carriers.flatMap(([ext, make]) => values.flatMap((v, n) => cuts(v).map((text, i) => write(work, `${prefix}-${n}-${i}.${ext}`, make(text)))));
    const allow = [...DEFAULT_ALLOW, "svg", "xml", "docx", "xlsx", "pptx"];
    const refusedFiles = files([key, hostValue], "cdata");
    const refused = await prepare(refusedFiles, { env: h.env, cwd: work, allow });
    expect(refused.media_dropped.map((d) => [path.basename(d.path), d.code])).toEqual(refusedFiles.map((file) => [path.basename(file), "secret_detected"]));
    for (const d of refused.media_dropped) {
      expect(d.reason).toMatch(/GitHub token|the value of BILLING_SERVICE_TOKEN/);
      for (const v of [key, hostValue]) expect(d.reason).not.toContain(v.slice(10));
    }
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
    const clean = files([other], "clean");
    const published = await prepare(clean, { env: h.env, cwd: work, allow });
    expect(published.media_dropped).toEqual([]);
  });

  it("reads a numeric reference without its `;` in a Markdown file's HTML and in an .html file, as HTML5 does (red-team 33's 08: `&#72&#120…`, `&#35` were published); `&#38` in prose is published", async () => {
    const key = positives(73)["github-token"]!;
    const dec = (v: string) => [...v].map((c) => `&#${c.codePointAt(0)}`).join("");
    const hex = (v: string) => [...v].map((c) => `&#x${c.codePointAt(0)!.toString(16)}`).join("");
    const cases: [string, string][] = [
      ["div.md", `# Build notes\n\n<div>\n${dec(key)}\n</div>\n`],
      ["td.md", `<table><tr><td>${key.replace("_", "&#95")}</td></tr></table>\n`],
      ["p.html", `<html><body><p>${hex(key)}</p></body></html>\n`],
      // In an attribute (a link's title, shown on hover): read with the tags kept, references decoded.
      ["title.md", `See <a title="${hex(key)}">here</a>.\n`],
      ["value.html", `<input type="hidden" value="${key.replace("_", "&#95").replace("p", "&#x70;")}">\n`],
    ];
    const allow = [...DEFAULT_ALLOW, "html"];
    const refused = await prepare(cases.map(([name, text]) => write(work, name, text)), { env: h.env, cwd: work, allow });
    const part = (name: string) => (name.startsWith("title") || name.startsWith("value") ? "its markup with character references decoded" : "its text (tags removed)");
    expect(refused.media_dropped.map((d) => [path.basename(d.path), d.code, d.reason])).toEqual(cases.map(([name]) => [name, "secret_detected", expect.stringContaining(`GitHub token (in ${part(name)}`)]));
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
    const published = await prepare(
      [
        write(work, "prose.md", "<p>Tom &#38 Jerry, R&#38D, &#169 2026, item &#35 7 and &#x2014 done</p>\n"),
        write(work, "prose.html", '<p title="Q&#38A">Q&#38A &#38amp; &#8212 notes <a href="/search?q=a&amp;page=2&#38sort=asc">next</a></p>\n'),
      ],
      { env: h.env, cwd: work, allow },
    );
    expect(published.media_dropped).toEqual([]);
  });

  it("reads HTML's names of invisible characters inside a key in a Markdown file as the characters, which the zero-width reading removes (red-team 33's 07: `&lrm;`, `&rlm;`, `&it;`)", async () => {
    const key = positives(74)["github-token"]!;
    const names = ["&lrm;", "&rlm;", "&InvisibleTimes;", "&af;"];
    const refused = await prepare(names.map((name, i) => write(work, `name-${i}.md`, `<p>Token: ${key.slice(0, 10)}${name}${key.slice(10)}</p>\n`)), { env: h.env, cwd: work });
    expect(refused.media_dropped.map((d) => [path.basename(d.path), d.code, d.reason])).toEqual(names.map((_, i) => [`name-${i}.md`, "secret_detected", expect.stringContaining("a GitHub token, with zero-width characters or soft hyphens removed (in its text (tags removed)")]));
  });

  it("reads markup with its references decoded and its tags kept only where a tag holds a `&`, and gives a verdict on text made against that test (verdicts only)", () => {
    expect(markupReferences(Buffer.from('<a title="&#72">x</a>'), "md")?.text.toString()).toBe('<a title="H">x</a>');
    expect(markupReferences(Buffer.from("<p>&#72 & more</p> a && b <3 &amp;"), "md")).toBeUndefined();
    expect(markupReferences(Buffer.from('<a title="&#72">x</a>'), "svg")).toBeUndefined();
    const long = 1 << 20;
    const rep = (s: string) => Buffer.from(s.repeat(Math.ceil(long / s.length)));
    for (const unit of ["<a", "<a ", `<a ${"x".repeat(1000)}`, "<a&", "<a &#1", "<<a>&", `<a title="${"&#1".repeat(100)}">`]) {
      expect(markupReferences(rep(unit), "html")?.text.length ?? 0, JSON.stringify(unit.slice(0, 20))).toBeGreaterThanOrEqual(0);
    }
  });

  it("finds an AWS secret key on the line after its name (a tool wrapped it), and not two lines below or after another name", () => {
    const f = new Fakes(37);
    const value = f.pick("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/+", 40);
    for (const text of [`aws_secret_access_key =\n${value}\n`, `aws_secret_access_key =\r\n   "${value}"\n`, `AWS_SECRET_ACCESS_KEY:\n  ${value}\n`, `<meta name="keywords" content="aws_secret_access_key =\n${value}" />`]) {
      expect(findSecret(text)?.what, JSON.stringify(text)).toBe("an AWS secret access key");
    }
    for (const text of [`aws_secret_access_key =\n\n${value}\n`, `other_key =\n${value}\n`, `aws_secret_access_key =\n${value.slice(0, 39)}\n`]) expect(findSecret(text), JSON.stringify(text)).toBeUndefined();
  });

  it("finds a private key's base64 body when its armour is rewritten or left out (pandoc's smart dashes, an SVG's comments), an armour in pandoc's dashes, and publishes certificates, public keys and PKCS#12", () => {
    const f = new Fakes(31);
    const pemLines = (base64: string) => base64.match(/.{1,64}/g)!.join("\n");
    // The DER's first bytes, then seeded ones: as a key's body begins (the rule reads its first 45 bytes).
    const keys = {
      "PKCS#1 RSA": derKey("308204a302010002820101", 600),
      "PKCS#8 RSA": derKey("308204bd020100300d06092a864886f70d0101010500", 600),
      "SEC1 P-256": derKey("30770201010420", 114),
      "SEC1 P-384": derKey("3081a40201010430", 160),
      "PKCS#8 Ed25519": pkcs8PrivateKey("ed25519"),
      "PKCS#8 P-256": pkcs8PrivateKey("ec"),
    };
    for (const [kind, body] of Object.entries(keys)) {
      const lines = pemLines(body);
      const what = "a private key block (its base64 body)";
      expect(findSecret(lines)?.what, `${kind}: the body alone`).toBe(what);
      // pandoc's smart punctuation writes each `-----` as an em dash and an en dash (UTF-8, read a byte a character).
      const smart = Buffer.from(`\u2014\u2013BEGIN PRIVATE KEY\u2014\u2013\n${lines}\n\u2014\u2013END PRIVATE KEY\u2014\u2013\n`, "utf8").toString("latin1");
      expect(findSecret(smart)?.what, `${kind}: pandoc`).toMatch(/^a private key block/);
      // matplotlib's SVG keeps each line of drawn text as a comment, `--` written `- -`.
      expect(findSecret(`<!-- - - - - -BEGIN PRIVATE KEY- - - - - -->\n${lines.split("\n").map((l) => `<!-- ${l} -->`).join("\n")}`)?.what, `${kind}: svg`).toBe(what);
      expect(findSecret(JSON.stringify({ key: lines })), `${kind}: JSON`).toBeDefined();
    }
    const published = {
      certificate: derKey("3082030f308201f7a003020102", 600),
      "SPKI public key": spkiPublicKey("rsa"),
      "PKCS#1 public key": derKey("3082010a0282010100", 600),
      "PKCS#12": derKey("308209cf02010330820985", 600),
      "Ed25519 public key": spkiPublicKey("ed25519"),
      "too short to be a key": derKey("302a0201000201", 60),
      // A toy RSA key of a 5-byte modulus (as python-rsa's docstring decodes one).
      "toy RSA key": derKey("302e020100020500", 60),
    };
    for (const [kind, body] of Object.entries(published)) expect(findSecret(pemLines(body)), kind).toBeUndefined();
    // OpenSSH's own format (ssh-keygen's default) has no DER: its armour is read in pandoc's dashes too, and
    // (since 2026-12-06, test/redteam.test.ts) its body without an armour.
    const openssh = pemLines(Buffer.concat([Buffer.from("openssh-key-v1\0\0\0\0\x04none\0\0\0\x04none\0\0\0\0\0\0\0\x01", "latin1"), f.bytes(300)]).toString("base64"));
    const pandoc = (label: string, body = openssh) => Buffer.from(`\u2014\u2013BEGIN ${label}\u2014\u2013\n${body}\n\u2014\u2013END ${label}\u2014\u2013\n`, "utf8").toString("latin1");
    expect(findSecret(pandoc("OPENSSH PRIVATE KEY"))?.what).toBe("a private key block");
    expect(findSecret(openssh)?.what).toBe("an OpenSSH private key (its base64 body)");
    expect(findSecret(pandoc("CERTIFICATE", pemLines(published.certificate)))).toBeUndefined();
    // Inside other base64 (after a `+` or `/`), and a key's body cut before 60 characters, are not read as a key.
    const rsa = keys["PKCS#1 RSA"];
    expect(findSecret(`${f.pick("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", 30)}+${rsa}`)).toBeUndefined();
    expect(findSecret(` ${rsa.slice(0, 59)} `)).toBeUndefined();
    expect(findSecret(` ${rsa.slice(0, 60)} `)?.what).toBe("a private key block (its base64 body)");
    // Prose's M words and a run of M are no key.
    expect(findSecret("MIT License, MD5 digests, MCMXCIV, MIIIIIIIII ".repeat(200))).toBeUndefined();
  });

  it("finds a Meta access token (WhatsApp Cloud's), and publishes Meta's documented example, a shorter run and base64 that starts a run with EAA", () => {
    const f = new Fakes(21);
    const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    const real = `EAAG${f.pick(ALNUM, 180)}`;
    expect(findSecret(`curl -H "Authorization: OAuth ${real}" https://graph.facebook.com`)).toEqual({ what: "a Meta (WhatsApp Cloud, Facebook) access token", index: 30 });
    const published = [
      // Meta's own example business token (the WhatsApp Embedded Signup guide).
      "EAAAN6tcBzAUBOwtDtTfmZCJ9n3FHpSDcDTH86ekf89XnnMZAtaitMUysPDE7LES3CXkA4MmbKCghdQeU1boHr0QZA05SShiILcoUy7ZAb2GE7hrUEpYHKLDuP2sYZCURkZCHGEvEGjScGLHzC4KDm8tq2slt4BsOQE1HHX8DzHahdT51MRDqBw0YaeZByrVFZkVAoVTxXUtuKgDDdrmJQXMnI4jqJYetsZCP1efj5ygGscZBm4OvvuCYB039ZAFlyNn",
      `EAAG${f.pick(ALNUM, 98)}`,
      `data:application/octet-stream;base64,${f.pick(ALNUM, 40)}+/EAA${f.pick(ALNUM, 150)}/${f.pick(ALNUM, 40)}`,
      `EAAG${f.pick(ALNUM, 150)}+${f.pick(ALNUM, 20)}==`,
      `${f.pick(ALNUM, 60)}+/EAA${f.pick(ALNUM, 150)}`,
      "EAA".repeat(400),
    ];
    for (const text of published) expect(findSecret(` ${text} `), text.slice(0, 40)).toBeUndefined();
  });

  it("judges each assignment's name on its own, also right after a name of the same length (a repeated name is judged once, told by its bytes)", () => {
    const value = "Zq8vT2mLx9Rk4Wp7Ns3B";
    expect(findSecret(` monkey = ${value}\n`)).toBeUndefined();
    const text = ` monkey = ${value}\n apikey = ${value}\n`;
    expect(findSecret(text)).toEqual({ what: "a credential assigned to a key, token, secret or password name", index: text.lastIndexOf(value) });
    expect(findSecret(` apikey = ${value}\n monkey = ${value}\n`)?.index).toBe(10);
  });

  it("judges each small part alone: what an earlier, longer part held is not found in a later one", () => {
    const known = new KnownSecrets([{ name: "API_KEY (the Hermes .env)", bytes: Buffer.from("Zq8vT2mLx9Rk4Wp7Ns3BcD5f") }]);
    const secret = "token: ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A";
    expect(scanBytes(Buffer.from(`notes notes Zq8vT2mLx9Rk4Wp7Ns3BcD5f and ${secret}`), known)?.what).toBe("the value of API_KEY (the Hermes .env)");
    expect(scanBytes(Buffer.from("notes notes"), known)).toBeUndefined();
    expect(scanBytes(Buffer.from(`x ${secret}`))?.what).toBe("a GitHub token");
    expect(scanBytes(Buffer.from("x token: ghp_aB3"))).toBeUndefined();
  });

  it("finds UTF-16 text of eight characters in either byte order and at either alignment, and none in a table of small numbers", () => {
    for (const pad of [0, 1, 2, 3, 5, 7]) {
      for (const order of ["le", "be"] as const) {
        const units = Buffer.from("hunter2!", "utf16le");
        if (order === "be") units.swap16();
        expect(hasUtf16Text(Buffer.concat([Buffer.alloc(pad, 0xff), units, Buffer.alloc(3, 0xff)])), `${order} after ${pad}`).toBe(true);
      }
    }
    const sampleSizes = Buffer.alloc(64 * 1024);
    for (let i = 0; i < sampleSizes.length; i += 4) sampleSizes.writeUInt32BE(1000 + ((i * 7919) % 30000), i);
    expect(hasUtf16Text(sampleSizes)).toBe(false);
  });

  it("finds a database URL with a password whatever byte ends its scheme (the colon pass tests `://` apart from the byte before it)", () => {
    for (const scheme of ["postgres", "mysql", "mongodb", "amqp", "neo4j", "mongodb+srv"]) {
      const text = `BROKER_URL=${scheme}://app:Zq8vT2mLx9Rk4Wp7Ns3B@broker.internal:5672/`;
      expect(findSecret(text), scheme).toEqual({ what: expect.stringContaining("database URL"), index: text.indexOf(scheme) });
    }
  });
});

describe("trailing data, bombs, unreadable containers", () => {
  it("inflates a deflate stream of stored blocks (a picture in a docx) as zlib does, and any other stream through zlib", () => {
    const random = rng(41);
    const bytes = (n: number) => Buffer.from(Array.from({ length: n }, () => Math.floor(random() * 256)));
    /** Stored blocks of `parts`, by hand: header bits after BTYPE set at random (zlib skips them), the last one final unless told. */
    const storedStream = (parts: Buffer[], final = true) =>
      Buffer.concat(
        parts.map((p, i) => {
          const head = Buffer.alloc(5);
          head[0] = (i === parts.length - 1 && final ? 1 : 0) | (Math.floor(random() * 32) << 3);
          head.writeUInt16LE(p.length, 1);
          head.writeUInt16LE(p.length ^ 0xffff, 3);
          return Buffer.concat([head, p]);
        }),
      );
    const streams: Record<string, Buffer> = {
      "noise at level 6 (zlib stores it)": zlib.deflateRawSync(bytes(300_000)),
      "noise at level 0": zlib.deflateRawSync(bytes(200_000), { level: 0 }),
      "text (compressed blocks)": zlib.deflateRawSync(Buffer.from("a line of text\n".repeat(5000))),
      "stored blocks by hand, padding bits set": storedStream([bytes(10), bytes(0), bytes(65535), bytes(3)]),
      "stored blocks, then bytes after the final one": Buffer.concat([storedStream([bytes(100)]), bytes(50)]),
      "stored blocks, none final": storedStream([bytes(100), bytes(20)], false),
      "a stored block, then a compressed one": Buffer.concat([storedStream([bytes(100)], false), zlib.deflateRawSync(Buffer.from("tail"))]),
      "LEN and NLEN that disagree": (() => {
        const s = storedStream([bytes(40)]);
        s[3] = s[3]! ^ 1;
        return s;
      })(),
      "a block longer than the stream": storedStream([bytes(100)]).subarray(0, 60),
      // Typed fixed (01) or dynamic (10) Huffman, with bytes after the type that would read as LEN and NLEN.
      "a fixed block that reads as a stored one": (() => {
        const s = storedStream([bytes(40)]);
        s[0] = 0x03;
        return s;
      })(),
      "a dynamic block that reads as a stored one": (() => {
        const s = storedStream([bytes(40)]);
        s[0] = 0x05;
        return s;
      })(),
      empty: Buffer.alloc(0),
    };
    for (const [name, stream] of Object.entries(streams)) {
      let expected: unknown;
      try {
        const r = zlib.inflateRawSync(stream, { finishFlush: zlib.constants.Z_SYNC_FLUSH, info: true }) as unknown as { buffer: Buffer; engine: { bytesWritten: number } };
        expected = { out: r.buffer.toString("hex"), consumed: r.engine.bytesWritten };
      } catch {
        expected = "refused";
      }
      let got: unknown;
      try {
        const r = new InspectContext("zip", NO_KNOWN_SECRETS).inflateCounted("part", stream, "raw");
        got = { out: r.out.toString("hex"), consumed: r.consumed };
      } catch (err) {
        expect(err, name).toBeInstanceOf(Refusal);
        got = "refused";
      }
      expect(got, name).toEqual(expected);
    }
  });

  it("inflates a stream of 8 million empty stored blocks (a 40 MB zip) in linear time and memory (found reviewing the readers: a view was kept of each block, 2 GB and 3 s), as zlib does", () => {
    const empty = Buffer.from([0x00, 0x00, 0x00, 0xff, 0xff]);
    const stream = Buffer.concat([Buffer.alloc(8_000_000 * empty.length).fill(empty), Buffer.from([0x01, 0x05, 0x00, 0xfa, 0xff]), Buffer.from("hello")]);
    const heap = process.memoryUsage().heapUsed;
    const { out, consumed } = new InspectContext("zip", NO_KNOWN_SECRETS).inflateCounted("part", stream, "raw");
    // About 60 ms here, and no more heap than before (with a view per block: 2 to 3 s, and 1 GB more heap).
    expect(process.memoryUsage().heapUsed - heap).toBeLessThan(100 * 1024 * 1024);
    expect([out.toString(), consumed]).toEqual(["hello", stream.length]);
    const key = positives(67)["github-token"]!;
    const keyed = zip({ "notes.txt": "placeholder" });
    // The entry's deflate stream made of the empty blocks and the key: the directory and local header given its size.
    const body = Buffer.concat([stream.subarray(0, 5_000_000), Buffer.from([0x01, key.length, 0, key.length ^ 0xff, 0xff]), Buffer.from(key)]);
    const local = keyed.subarray(0, 30 + "notes.txt".length);
    const file = Buffer.concat([local, body, Buffer.from(keyed.subarray(keyed.indexOf("PK\x01\x02", 0, "latin1")))]);
    file.writeUInt16LE(8, 8);
    file.writeUInt32LE(body.length, 18);
    file.writeUInt32LE(key.length, 22);
    const central = file.indexOf("PK\x01\x02", 0, "latin1");
    file.writeUInt16LE(8, central + 10);
    file.writeUInt32LE(body.length, central + 20);
    file.writeUInt32LE(key.length, central + 24);
    file.writeUInt32LE(central, file.length - 22 + 16);
    expect(outcome(() => inspectBinary(file, "zip", "zip", NO_KNOWN_SECRETS))).toMatch(/^secret_detected: .*GitHub token \(in notes\.txt/);
  });

  it("refuses bytes after an image's end with trailing_data, and a zip or PDF inside a picture", async () => {
    const archive = zip({ "notes.txt": "hello" });
    const files = [
      write(work, "polyglot.png", Buffer.concat([makePng(8, (i) => i), archive])),
      write(work, "junk.jpg", jpeg({ after: Buffer.from("more bytes") })),
      write(work, "clean.png", makePng(8, (i) => i * 3)),
      write(work, "clean.jpg", jpeg({ comment: "made by the chart tool" })),
    ];
    const report = await judge(files);
    expect(report.media_dropped.map((d) => d.code)).toEqual(["trailing_data", "trailing_data"]);
    expect(report.media.map((m) => m.name)).toEqual(["clean.png", "clean.jpg"]);
  });

  it("reads a zip appended to a file that is not one (unzip extracts it whatever comes before it): a key deflated in a zip after a PDF's %%EOF, a song, a voice note, a .doc, a tar or a picture inside a container was published; a clean one is published, a picture's refused as trailing data", async () => {
    const key = positives(41)["github-token"]!;
    const appended = zip({ "notes.txt": `token ${key}\n` });
    const clean = zip({ "notes.txt": "hello" });
    const hosts = { pdf: pdf("Quarterly report"), mp3: mp3("song"), flac: flac("song"), wav: wav("song"), opus: ogg("note"), doc: wordDoc("Report"), tar: tar({ "a.txt": "x" }) };
    const files = Object.entries(hosts).flatMap(([ext, host]) => [
      write(work, `right-after.${ext}`, Buffer.concat([host, appended])),
      write(work, `after-junk.${ext}`, Buffer.concat([host, Buffer.from("\njunk\n"), appended])),
      write(work, `clean.${ext}`, Buffer.concat([host, clean])),
    ]);
    // A polyglot whose zip counts its offsets from the file's first byte (no shift) is read from its first entry.
    const host = hosts.pdf;
    const counted = zip({ "notes.txt": `token ${key}\n` });
    const directoryAt = counted.readUInt32LE(counted.length - 6);
    for (let at = counted.indexOf("PK\x01\x02"); at >= 0 && at < counted.length - 22; at = counted.indexOf("PK\x01\x02", at + 4)) counted.writeUInt32LE(counted.readUInt32LE(at + 42) + host.length, at + 42);
    counted.writeUInt32LE(directoryAt + host.length, counted.length - 6);
    files.push(write(work, "counted.pdf", Buffer.concat([host, counted])));
    // Bytes after the zip's end record: unzip still finds it (its directory starts where it says); a signature with no directory there is no zip.
    files.push(write(work, "then-newline.pdf", Buffer.concat([host, appended, Buffer.from("\n")])));
    files.push(write(work, "then-noise.pdf", Buffer.concat([host, appended, new Fakes(7).bytes(100)])));
    files.push(write(work, "signature-only.pdf", Buffer.concat([host, Buffer.from("PK\x05\x06"), Buffer.alloc(40, 0x20)])));
    files.push(write(work, "polyglot.png", Buffer.concat([makePng(8, (i) => i), appended])));
    const report = await judge(files);
    expect(report.media.map((m) => m.name).sort()).toEqual([...Object.keys(hosts).map((ext) => `clean.${ext}`), "signature-only.pdf"].sort());
    expect(report.media_dropped.map((d) => [path.basename(d.path), d.code, d.reason.includes("in notes.txt of the zip appended to it")])).toEqual([
      ...Object.keys(hosts).flatMap((ext) => [[`right-after.${ext}`, "secret_detected", true], [`after-junk.${ext}`, "secret_detected", true]]),
      ["counted.pdf", "secret_detected", true],
      ["then-newline.pdf", "secret_detected", true],
      ["then-noise.pdf", "secret_detected", true],
      ["polyglot.png", "trailing_data", false],
    ]);
    for (const d of report.media_dropped) expect(d.reason).not.toContain(key.slice(-16));
    // Only the clean files reached the outbox; nothing of a refused one is left in staging.
    const left = leftBehind(h);
    expect([left.outbox.sort(), left.staging]).toEqual([report.media.map((m) => m.name).sort(), []]);
    // Read from the staged file by ranges as from memory; and inside a document: a docx's embedded PDF with a zip after it.
    const file = write(work, "ranges.pdf", Buffer.concat([host, appended]));
    const fd = fs.openSync(file, "r");
    try {
      expect(outcome(() => inspectFile(fd, fs.fstatSync(fd).size, "pdf", "pdf", NO_KNOWN_SECRETS))).toMatch(/^secret_detected: .*in notes\.txt of the zip appended to it/);
    } finally {
      fs.closeSync(fd);
    }
    const embedded = docx("Report", 7, { "word/embeddings/report.pdf": Buffer.concat([host, appended]) });
    expect(outcome(() => inspectBinary(embedded, "docx", "docx", NO_KNOWN_SECRETS))).toMatch(/^secret_detected: .*in notes\.txt of the zip appended to it of word\/embeddings\/report\.pdf/);
    // A picture inside a container, whose bytes after its end are not refused on their own: a zip there was published too.
    const png = Buffer.concat([makePng(8, (i) => i), appended]);
    expect(outcome(() => inspectBinary(docx("Report", 3, { "word/media/image1.png": png }), "docx", "docx", NO_KNOWN_SECRETS))).toMatch(/^secret_detected: .*in notes\.txt of the zip appended to it of word\/media\/image1\.png/);
    expect(outcome(() => inspectBinary(docx("Report", 3, { "word/media/image1.jpeg": Buffer.concat([jpeg(), appended]) }), "docx", "docx", NO_KNOWN_SECRETS))).toMatch(/^secret_detected: .*of word\/media\/image1\.jpeg/);
    expect(outcome(() => inspectBinary(tar({ "a.png": png }), "tar", "tar", NO_KNOWN_SECRETS))).toMatch(/^secret_detected: .*in notes\.txt of the zip appended to it of a\.png/);
    expect(outcome(() => inspectBinary(zlib.gzipSync(png), "gz", "gz", NO_KNOWN_SECRETS))).toMatch(/^secret_detected: .*of the file it compresses/);
    expect(outcome(() => inspectBinary(docx("Report", 3, { "word/media/image1.png": Buffer.concat([makePng(8, (i) => i), clean]) }), "docx", "docx", NO_KNOWN_SECRETS))).toBe("published");
  });

  it("reads an appended zip where unzip finds it, found by fuzzing: bytes after its end record or a comment length that lies, a count of entries that says fewer, a zip after bytes no reader knows inside a container; refuses a local header whose compressed size is 0xFFFFFFFF with no zip64 field, an end record cut short at the very end and a zip64 end record that disagrees with it", () => {
    const key = positives(41)["github-token"]!;
    const host = pdf("Quarterly report");
    const appended = zip({ "a.txt": "hello", "notes.txt": `token ${key}\n` });
    const end = appended.length - 22;
    const withEnd = (patch: (b: Buffer) => void) => {
      const b = Buffer.from(appended);
      patch(b);
      return b;
    };
    // unzip 6.0 extracts the key from each (checked with unzip -p); all were published.
    const extracted: [string, Buffer][] = [
      ["bytes after the end record", Buffer.concat([host, appended, Buffer.from("\njunk\n")])],
      ["a comment length with no comment", Buffer.concat([host, withEnd((b) => b.writeUInt16LE(5, end + 20))])],
      ["a count of 0", Buffer.concat([host, withEnd((b) => b.writeUInt16LE(0, end + 10))])],
    ];
    // The local header's compressed size 0xFFFFFFFF with no zip64 field, the directory's cut to 20 bytes: unzip inflates the whole stream.
    const sizes = withEnd((b) => {
      b.writeUInt32LE(0xffffffff, b.indexOf("notes.txt") - 30 + 18);
      b.writeUInt32LE(20, b.lastIndexOf("PK\x01\x02") + 20);
    });
    expect(outcome(() => inspectBinary(Buffer.concat([host, sizes]), "pdf", "pdf", NO_KNOWN_SECRETS))).toMatch(/^unscannable_content: .*notes\.txt's local header gives another compressed size \(4294967295 bytes\) than its directory \(20\)/);
    for (const [name, file] of extracted) {
      expect(outcome(() => inspectBinary(file, "pdf", "pdf", NO_KNOWN_SECRETS)), name).toMatch(/^secret_detected: .*in notes\.txt of the zip appended to it/);
      const fd = fs.openSync(write(work, "appended.pdf", file), "r");
      try {
        expect(outcome(() => inspectFile(fd, file.length, "pdf", "pdf", NO_KNOWN_SECRETS)), name).toMatch(/^secret_detected: .*in notes\.txt of the zip appended to it/);
      } finally {
        fs.closeSync(fd);
      }
    }
    // A file no reader here knows, with a zip after its bytes, inside a tar, a zip, a gzip file or attached to a PDF: unzip extracts the zip from it once it is taken out.
    const member = Buffer.concat([Buffer.from("a header no reader knows\n"), appended]);
    for (const [ext, file] of [["tar", tar({ "x.bin": member })], ["zip", zip({ "x.bin": member })], ["gz", zlib.gzipSync(member)], ["pdf", pdfAttachment(member)]] as const) {
      expect(outcome(() => inspectBinary(file, ext, ext, NO_KNOWN_SECRETS)), ext).toMatch(/^secret_detected: .*in notes\.txt of the zip appended to it/);
    }
    // The end record cut short by its last 2 bytes: unzip reads the file's end in 8 KiB blocks, and takes it where a block ends
    // just after its signature (here: the file 16 bytes past a multiple of 8 KiB), else passes it over.
    const cut = appended.subarray(0, -2);
    const pad = Buffer.alloc((2 * 8192 - ((host.length + cut.length) % 8192) + 16) % 8192, 0x0a);
    expect(outcome(() => inspectBinary(Buffer.concat([host, pad, cut]), "pdf", "pdf", NO_KNOWN_SECRETS))).toMatch(/^unscannable_content: .*its last bytes hold a zip end record cut short/);
    // A zip64 end record and locator before the end record, the record's count of entries other than the end record's: unzip
    // passes over it, Python's zipfile reads the directory by it.
    const record = Buffer.alloc(56);
    record.writeUInt32LE(0x06064b50, 0);
    record.writeBigUInt64LE(44n, 4);
    record.writeBigUInt64LE(2n, 24);
    record.writeBigUInt64LE(255n, 32);
    record.writeBigUInt64LE(BigInt(appended.readUInt32LE(end + 12)), 40);
    record.writeBigUInt64LE(BigInt(appended.readUInt32LE(end + 16)), 48);
    const locator = Buffer.alloc(20);
    locator.writeUInt32LE(0x07064b50, 0);
    locator.writeBigUInt64LE(BigInt(end), 8);
    locator.writeUInt32LE(1, 16);
    const zip64 = (r: Buffer) => Buffer.concat([host, appended.subarray(0, end), r, locator, withEnd((b) => b.writeUInt32LE(0xffffffff, end + 16)).subarray(end)]);
    expect(outcome(() => inspectBinary(zip64(record), "pdf", "pdf", NO_KNOWN_SECRETS))).toMatch(/^unscannable_content: .*it has a damaged zip64 end record/);
    const agreeing = Buffer.from(record);
    agreeing.writeBigUInt64LE(2n, 32);
    expect(outcome(() => inspectBinary(zip64(agreeing), "pdf", "pdf", NO_KNOWN_SECRETS))).toMatch(/^secret_detected: .*in notes\.txt of the zip appended to it/);
    // Clean, each is published.
    const clean = zip({ "a.txt": "hello", "notes.txt": "hello" });
    expect(outcome(() => inspectBinary(Buffer.concat([host, clean, Buffer.from("\njunk\n")]), "pdf", "pdf", NO_KNOWN_SECRETS))).toBe("published");
    expect(outcome(() => inspectBinary(tar({ "x.bin": Buffer.concat([Buffer.from("a header\n"), clean]) }), "tar", "tar", NO_KNOWN_SECRETS))).toBe("published");
  });

  it("refuses a zip whose entries share bytes (a zip bomb's layout): a 1 MB stored entry listed 2,000 times took 4 s to scan, in a zip or appended to a PDF, and time grew as the square of the size", () => {
    const one = zip({ "a.bin": Buffer.alloc(1 << 20, 0x61) }, true);
    const end = one.length - 22;
    const record = one.subarray(one.readUInt32LE(end + 16), end);
    const directory = Buffer.concat(Array.from({ length: 2000 }, () => record));
    const tail = Buffer.from(one.subarray(end));
    tail.writeUInt16LE(2000, 8);
    tail.writeUInt16LE(2000, 10);
    tail.writeUInt32LE(directory.length, 12);
    const bomb = Buffer.concat([one.subarray(0, end - record.length), directory, tail]);
    for (const [ext, file] of [["zip", bomb], ["pdf", Buffer.concat([pdf("Report"), bomb])]] as const) {
      expect(outcome(() => inspectBinary(file, ext, ext, NO_KNOWN_SECRETS)), ext).toMatch(/^unscannable_content: .*two of its zip entries share the bytes at byte \d+ \(a zip bomb's layout\)/);
    }
    // Two entries, each its own bytes: read.
    expect(outcome(() => inspectBinary(zip({ "a.bin": Buffer.alloc(1000), "b.bin": Buffer.alloc(1000) }, true), "zip", "zip", NO_KNOWN_SECRETS))).toBe("published");
  });

  it("publishes a phone's JPEG whose MPF index places a gain map after its end (refused as trailing_data until 2026-12-04), reads that image too, and refuses what the index does not cover", async () => {
    const key = positives()["github-token"]!;
    const gainMap = jpeg({ comment: "gain map" });
    const files = [
      write(work, "photo.jpg", jpegMpf([gainMap])),
      write(work, "stereo.jpg", jpegMpf([jpeg(), gainMap])),
      write(work, "secret-in-map.jpg", jpegMpf([jpeg({ comment: key })])),
      write(work, "more-after.jpg", jpegMpf([gainMap], { after: zip({ "notes.txt": "hello" }) })),
      // An index that places a zip where an image should be: not an image, so trailing data.
      write(work, "zip-as-image.jpg", jpegMpf([zip({ "notes.txt": "hello" })])),
    ];
    const report = await judge(files);
    expect(report.media.map((m) => m.name)).toEqual(["photo.jpg", "stereo.jpg"]);
    expect(report.media_dropped.map((d) => [d.code, d.reason])).toEqual([
      ["secret_detected", expect.stringContaining("of the image its MPF index places at byte")],
      ["trailing_data", expect.stringContaining("after its last image of its MPF index")],
      ["trailing_data", expect.stringContaining("after its end-of-image marker")],
    ]);
    expect(leftBehind(h)).toMatchObject({ outbox: ["photo.jpg", "stereo.jpg"], staging: [] });
  });

  it("refuses PDFs built against the reading of fonts' maps, through prepare, and leaves nothing behind: font programs whose first bytes are a bomb, maps of more than a million entries, a name shared past 16 MiB of readings, a map that turns each code into 256 letters", async () => {
    const stream = (dict: string, body: Buffer) => Buffer.concat([Buffer.from(`<< ${dict} /Length ${body.length} >>\nstream\n`), body, Buffer.from("\nendstream")]);
    const cmap = (body: string) => Buffer.from(`/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n1 begincodespacerange <0000> <FFFF> endcodespacerange\n${body}\nendcmap end end`);
    // A page whose font /F1 (object 3) has map 4, showing `content`; `more` objects after.
    const page = (map: Buffer, content: string, more: Buffer[] = []) =>
      pdfOf([Buffer.from("<< /Type /Catalog >>"), Buffer.from("<< /Type /Page /Resources << /Font << /F1 3 0 R >> >> /Contents 5 0 R >>"), Buffer.from("<< /Type /Font /ToUnicode 4 0 R >>"), stream("", map), stream("", Buffer.from(content)), ...more]);
    const identity = cmap("1 beginbfrange <0000> <FFFF> <0000> endbfrange");
    // Fifteen more fonts named /F1, each with its map: every string is read sixteen times.
    const shared = Array.from({ length: 15 }, (_, k) => [Buffer.from(`<< /Type /Font /ToUnicode ${7 + 2 * k} 0 R >>`), stream("", identity)]).flat();
    const names = Array.from({ length: 15 }, (_, k) => Buffer.from(`<< /Font << /F1 ${6 + 2 * k} 0 R >> >>`));
    const prefix = zlib.deflateSync(Buffer.alloc(1024 * 1024));
    const files = [
      write(work, "font-programs.pdf", pdfOf(Array.from({ length: 400 }, () => stream(`/Length1 9 /Filter /FlateDecode`, prefix)))),
      write(work, "entries.pdf", page(cmap(`1000001 beginbfchar ${"<0041> <0042> ".repeat(1_000_001)} endbfchar`), "BT /F1 10 Tf <0041> Tj ET")),
      write(work, "shared.pdf", page(identity, `BT /F1 10 Tf ${"<00410042> Tj ".repeat(300_000)} ET`, [...shared, ...names])),
      write(work, "letters.pdf", page(cmap(`1 beginbfchar <0003> <${"0041".repeat(256)}> endbfchar`), `BT /F1 10 Tf <${"0003".repeat(2_000_000)}> Tj ET`)),
      write(work, "fine.pdf", page(identity, "BT /F1 10 Tf <00480065006C006C006F> Tj ET", [...shared, ...names])),
    ];
    const report = await judge(files);
    expect(report.media_dropped.map((d) => [d.code, d.reason])).toEqual([
      ["decompression_bomb", expect.stringContaining("inflates past the 256 MiB")],
      ["unscannable_content", expect.stringContaining("more than 1,000,000 entries")],
      ["unscannable_content", expect.stringContaining("shared by so many fonts")],
      ["decompression_bomb", expect.stringContaining("decodes past the 256 MiB")],
    ]);
    expect(leftBehind(h)).toMatchObject({ outbox: ["fine.pdf"], staging: [] });
  });

  it("reads a PDF of thousands of fonts, each with a map and 4,096 codes shown, in linear time and memory (found reviewing the readers: each map built a table of every code, 256 KiB; 1 MB of them took 8 s and 1.2 GB); a key shown through the last font's map is still found", () => {
    const stream = (dict: string, body: Buffer) => Buffer.concat([Buffer.from(`<< ${dict} /Length ${body.length} >>\nstream\n`), body, Buffer.from("\nendstream")]);
    // Each map reads a code as the letter after it: `a` is b, and the key is written a letter back.
    const map = stream("", Buffer.from("begincmap 1 begincodespacerange <00> <ff> endcodespacerange 1 beginbfrange <00> <ff> <0001> endbfrange endcmap"));
    const key = positives(47)["github-token"]!;
    const fonts = (count: number, last: string) => {
      const objects: Buffer[] = [Buffer.from("<< /Type /Catalog >>"), Buffer.from("null")];
      const names: string[] = [];
      const contents: string[] = [];
      for (let k = 0; k < count; k++) {
        objects.push(map, Buffer.from(`<< /Type /Font /ToUnicode ${objects.length + 1} 0 R >>`));
        names.push(`/F${k} ${objects.length} 0 R`);
        if (k % 200 === 0) contents.push("BT ");
        contents[contents.length - 1] += `/F${k} 1 Tf (${"a".repeat(4096)}${k === count - 1 ? last : ""}) Tj\n`;
      }
      // Content streams of under 1 MiB each, compressed: 4,000 fonts' pages in 1 MB.
      const ids = contents.map((c) => (objects.push(stream("/Filter /FlateDecode", zlib.deflateSync(`${c}ET`, { level: 9 }))), objects.length));
      objects[1] = Buffer.from(`<< /Type /Page /Contents [${ids.map((id) => `${id} 0 R`).join(" ")}] /Resources << /Font << ${names.join(" ")} >> >> >>`);
      return pdfOf(objects);
    };
    const backOne = [...key].map((c) => String.fromCharCode(c.charCodeAt(0) - 1)).join("");
    for (const [file, expected] of [
      [fonts(4000, ""), /^published$/],
      [fonts(4000, `\x1f${backOne}`), /^secret_detected: .*GitHub token \(in the text its content streams show, read through their fonts' ToUnicode maps/],
    ] as const) {
      expect(outcome(() => inspectBinary(file, "pdf", "pdf", NO_KNOWN_SECRETS))).toMatch(expected);
      // About 1 s here (the codes read through 4,000 maps' lookups), against 8 s with a table each.
    }
  });

  it("reads archives through prepare: a tar's members (POSIX, GNU and pax names, a pax size), a gzip's content, a document or a picture inside, naming the member; refuses what it cannot read (bzip2, xz, 7-Zip, RAR, alone or inside a zip), a damaged header, a gzip bomb and bytes after a gzip; publishes them clean; leaves nothing behind", async () => {
    const token = /ghp_[A-Za-z0-9]+/.exec(positives()["github-token"]!)![0];
    const env = (k: string) => `GITHUB_TOKEN=${k}\n`;
    const longName = `project/${"d".repeat(60)}/${"e".repeat(70)}/.env`;
    const gnuLong = (k: string) => {
      const name = Buffer.from(`${longName}\0`);
      const data = Buffer.from(env(k));
      return Buffer.concat([tarHeader("././@LongLink", name.length, "L", "gnu"), name, Buffer.alloc(512 - name.length), tarHeader(longName.slice(0, 100), data.length, "0", "gnu"), data, Buffer.alloc(512 - data.length), Buffer.alloc(1024)]);
    };
    // A pax size that says more than the ustar field: a reader that kept the ustar size would read the key as a header.
    const paxSized = (k: string) => {
      const data = Buffer.from(`notes\n${env(k)}`);
      return Buffer.concat([...paxHeader({ path: longName, size: String(data.length) }), tarHeader("short", 0), data, Buffer.alloc(512 - data.length), Buffer.alloc(1024)]);
    };
    // Old Unix tars sum the header as signed bytes: a name with a byte past 0x7f then sums otherwise.
    const signedSum = (t: Buffer) => {
      let sum = 8 * 0x20;
      for (let i = 0; i < 512; i++) if (i < 148 || i >= 156) sum += t[i]! >= 0x80 ? t[i]! - 256 : t[i]!;
      t.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148, "latin1");
      return t;
    };
    const xz = Buffer.from([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00, 0x00, 0x04, 0xe6, 0xd6, 0xb4, 0x46]);
    const bz2 = Buffer.from("BZh91AY&SY\x00\x01", "latin1");
    const sevenZip = Buffer.from([0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c, 0x00, 0x04]);
    const rar = Buffer.from("Rar!\x1a\x07\x01\x00", "latin1");
    const withKey: [string, (k: string) => Buffer, string][] = [
      ["plain.tar", (k) => tar({ "project/.env": env(k) }), "in project/.env, at byte 13 of it"],
      // An old GNU sparse member: an extension block of its map follows its header, then its data.
      ["gnu-sparse.tar", (k) => {
        const data = Buffer.from(env(k));
        const header = tarHeader("sparse.env", data.length, "S", "gnu", (h) => (h[482] = 1));
        return Buffer.concat([header, Buffer.alloc(512), data, Buffer.alloc(512 - data.length), Buffer.alloc(1024)]);
      }, "in sparse.env, at byte 13 of it"],
      // GNU's base-256 size field.
      ["base256.tar", (k) => {
        const data = Buffer.from(env(k));
        const header = tarHeader("big.env", 0, "0", "gnu", (h) => {
          h.fill(0, 124, 136);
          h[124] = 0x80;
          h.writeUInt32BE(data.length, 132);
        });
        return Buffer.concat([header, data, Buffer.alloc(512 - data.length), Buffer.alloc(1024)]);
      }, "in big.env, at byte 13 of it"],
      ["signed-sum.tar", (k) => signedSum(tar({ "caf\u00e9/.env": env(k) })), "in caf\u00e9/.env, at byte 13 of it"],
      ["gnu-long.tar", gnuLong, `in ${longName}, at byte 13 of it`],
      ["pax-size.tar", paxSized, `in ${longName}, at byte 19 of it`],
      ["project.tgz", (k) => zlib.gzipSync(tar({ "project/.env": env(k) })), "in project/.env of the tar it compresses"],
      ["notes.gz", (k) => zlib.gzipSync(Buffer.from(`notes\n${env(k)}`)), "in the file it compresses, at byte 19 of it"],
      ["two-members.gz", (k) => Buffer.concat([zlib.gzipSync(Buffer.from("notes\n")), zlib.gzipSync(Buffer.from(env(k)))]), "in the file it compresses"],
      ["report-in.tar", (k) => tar({ "out/report.docx": docx(`Report\n${k}`) }), "of out/report.docx"],
      ["chart-in.tar", (k) => tar({ "out/chart.png": pngWithText(k, "zTXt") }), "of out/chart.png"],
      ["tar-in.zip", (k) => zip({ "backup.tar.gz": zlib.gzipSync(tar({ "project/.env": env(k) })) }), "of the tar it compresses of backup.tar.gz"],
    ];
    const refused = await judge(withKey.map(([name, make]) => write(work, name, make(token))));
    expect(refused.media_dropped.map((d) => [path.basename(d.path), d.code, d.reason])).toEqual(withKey.map(([name, , where]) => [name, "secret_detected", expect.stringContaining(where)]));
    for (const d of refused.media_dropped) expect(d.reason).not.toContain(token.slice(-16));

    const bomb = zlib.gzipSync(Buffer.alloc(300 * 1024 * 1024));
    const damaged = tar({ "notes.txt": "notes" });
    damaged[10] = damaged[10]! ^ 1;
    const unreadable: [string, Buffer, string, string][] = [
      ["backup.xz", xz, "unscannable_content", "compressed with xz, which this check does not read; send it as a .zip or a .tar.gz"],
      ["backup.bz2", bz2, "unscannable_content", "compressed with bzip2"],
      ["backup.7z", sevenZip, "unscannable_content", "compressed with 7-Zip"],
      ["backup.rar", rar, "unscannable_content", "compressed with RAR"],
      ["xz-in.zip", zip({ "logs.tar.xz": xz }), "unscannable_content", "an archive compressed with xz starts in logs.tar.xz (at byte 0 of it): this check does not read it"],
      ["damaged.tar", damaged, "unscannable_content", "its tar header at byte 0 is damaged"],
      ["bomb.gz", bomb, "decompression_bomb", "to more than 100 times its compressed size"],
      ["after.gz", Buffer.concat([zlib.gzipSync(Buffer.from("notes")), zip({ "a.txt": "hello" })]), "unscannable_content", "does not inflate"],
    ];
    const refusedToo = await judge(unreadable.map(([name, bytes]) => write(work, name, bytes)));
    expect(refusedToo.media_dropped.map((d) => [path.basename(d.path), d.code, d.reason])).toEqual(unreadable.map(([name, , code, why]) => [name, code, expect.stringContaining(why)]));
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);

    const clean = [...withKey.map(([name, make]) => write(work, `clean-${name}`, make(""))), write(work, "padded.gz", Buffer.concat([zlib.gzipSync(Buffer.from("notes")), Buffer.alloc(512)]))];
    const published = await judge(clean);
    expect(published.media_dropped).toEqual([]);
    expect(leftBehind(h).outbox).toHaveLength(clean.length);
  });

  it("reads audio and video past 1 MiB from the staged file a range at a time (their media data never read), and finds what the in-memory reading finds: a key in a moov after the media data, in a moov larger than the read window, after the last box, in a WAV's INFO after its samples, in an MP3's tag or tail; publishes them clean; leaves nothing behind", async () => {
    const token = /ghp_[A-Za-z0-9]+/.exec(positives()["github-token"]!)![0];
    const noise = (n: number, seed: number) => {
      const random = rng(seed);
      return Buffer.from(Array.from({ length: n }, () => Math.floor(random() * 256)));
    };
    const media = noise(3 << 20, 7);
    const cases: [string, (k: string) => Buffer, string][] = [
      ["camera.mp4", (k) => mp4(`note ${k}`, media, true), "in its moov box"],
      ["big-moov.mp4", (k) => mp4(`note ${k}`, media, true, 200_000), "in its moov box"],
      ["free-box.mp4", (k) => Buffer.concat([mp4("note", media), be32box(8 + k.length + 2), Buffer.from(`free ${k} `, "latin1")]), "in its free box"],
      ["edited.wav", (k) => wav(`note ${k}`, media, true), "in its LIST INFO chunk"],
      ["tagged.mp3", (k) => mp3(`note ${k}`, false, 8000), "in its ID3"],
      ["tail.mp3", (k) => Buffer.concat([mp3("note", false, 8000), Buffer.from(`TAG ${k} `)]), "in its last bytes"],
      ["tagged.flac", (k) => flac(`note ${k}`, media), "in its VORBIS_COMMENT metadata block"],
      ["cover.flac", (k) => flac("note", media, [[6, Buffer.concat([Buffer.from([0, 0, 0, 3, 0, 0, 0, 9]), Buffer.from("image/png"), be32box(k.length + 5), Buffer.from(`note ${k}`)])]]), "in its PICTURE metadata block"],
      ["tail.flac", (k) => Buffer.concat([flac("note", media), Buffer.from(`TAG ${k} `)]), "in its last bytes"],
      // A browser's recording: its clusters of unknown size end where the Tags begin.
      ["recording.webm", (k) => webm(`note ${k}`, { blocks: [media] }), "in its Tags"],
      ["sized.webm", (k) => webm(`note ${k}`, { sized: true, blocks: [media] }), "in its Tags"],
      ["appended.webm", (k) => Buffer.concat([webm("note", { sized: true, blocks: [media] }), Buffer.from(` ${k} `)]), "in the bytes after its last element"],
    ];
    const refused = await judge(cases.map(([name, make]) => write(work, name, make(token))));
    expect(refused.media_dropped.map((d) => [path.basename(d.path), d.code, d.reason])).toEqual(cases.map(([name, , where]) => [name, "secret_detected", expect.stringContaining(where)]));
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
    const published = await judge(cases.map(([name, make]) => write(work, `clean-${name}`, make("quarterly-report"))));
    expect(published.media_dropped).toEqual([]);
    expect(leftBehind(h).outbox).toHaveLength(cases.length);
    // FLAC and WebM read from the file as from memory.
    for (const [name, make] of cases.filter(([name]) => name.endsWith(".flac") || name.endsWith(".webm"))) {
      const file = make(token);
      const ext = name.slice(name.indexOf(".") + 1);
      const fd = fs.openSync(write(work, `file-${name}`, file), "r");
      try {
        expect(outcome(() => inspectFile(fd, file.length, ext, ext, NO_KNOWN_SECRETS)), name).toEqual(outcome(() => inspectBinary(file, ext, ext, NO_KNOWN_SECRETS)));
      } finally {
        fs.closeSync(fd);
      }
    }

    // The file reading against the in-memory one, on random layouts of boxes around the read window's edges.
    const random = rng(77);
    const key = `note ${token}`;
    for (let round = 0; round < 60; round++) {
      const boxes = Array.from({ length: 1 + Math.floor(random() * 6) }, (_, i) => {
        const size = Math.floor(random() * 3) === 0 ? 65_536 - 8 + Math.floor(random() * 17) - 8 : Math.floor(random() * 150_000);
        return Buffer.concat([be32box(size + 8), Buffer.from(i === 2 ? "mdat" : "free", "latin1"), noise(size, round * 10 + i)]);
      });
      const at = Math.floor(random() * boxes.length);
      // The moov of a small mp4 (after its 24-byte ftyp), among the boxes.
      const small = mp4(key);
      const file = Buffer.concat([...boxes.slice(0, at), small.subarray(24, 24 + small.readUInt32BE(24)), ...boxes.slice(at)]);
      const inMemory = outcome(() => inspectBinary(file, "mp4", "mp4", NO_KNOWN_SECRETS));
      const fd = fs.openSync(write(work, `layout-${round}.mp4`, file), "r");
      try {
        expect(outcome(() => inspectFile(fd, file.length, "mp4", "mp4", NO_KNOWN_SECRETS))).toEqual(inMemory);
      } finally {
        fs.closeSync(fd);
      }
      expect(inMemory).toContain("secret_detected");
    }
  });

  it("reads an Ogg file's header packets put together across the pages they span (Opus, Vorbis, Ogg FLAC, a chained second stream, a codec not known here) and what follows its last page, from the staged file as from memory; skips its audio packets; refuses a page cut short", async () => {
    const token = /ghp_[A-Za-z0-9]+/.exec(positives()["github-token"]!)![0];
    const opusHead = Buffer.concat([Buffer.from("OpusHead"), Buffer.from([1, 1, 0x38, 0x01, 0x80, 0xbb, 0, 0, 0, 0, 0])]);
    const opusTags = (text: string) => Buffer.concat([Buffer.from("OpusTags"), Buffer.from([3, 0, 0, 0]), Buffer.from("lib"), Buffer.from([1, 0, 0, 0, text.length + 8, 0, 0, 0]), Buffer.from(`COMMENT=${text}`)]);
    const flacBlock = (type: number, last: boolean, body: Buffer) => Buffer.concat([Buffer.from([(last ? 0x80 : 0) | type, 0, body.length >> 8, body.length & 0xff]), body]);
    const audio = [Buffer.alloc(400, 0x5a), Buffer.alloc(300, 0xa5)];
    const cases: [string, (k: string) => Buffer, string][] = [
      ["voice.opus", (k) => ogg(`note ${k}`), "in its Opus header packet 2"],
      ["cut.ogg", (k) => ogg(`note ${k}`, { codec: "vorbis", cut: true }), "in its Vorbis header packet 2"],
      ["flac.ogg", (k) => oggPages(3, [Buffer.concat([Buffer.from("\x7fFLAC\x01\x00\x00\x01fLaC", "latin1"), flacBlock(0, false, Buffer.alloc(34, 1))]), flacBlock(4, true, Buffer.from(`lib\x01COMMENT=note ${k}`, "latin1")), ...audio]), "in its FLAC header packet 2"],
      ["chained.opus", (k) => Buffer.concat([ogg("first part"), oggPages(9, [opusHead, opusTags(`note ${k}`), ...audio])]), "in its Opus header packet 2"],
      // Chained streams may reuse a serial number: a page that begins a stream begins it anew.
      ["same-serial.opus", (k) => Buffer.concat([ogg("first part"), ogg(`note ${k}`)]), "in its Opus header packet 2"],
      ["unknown.ogg", (k) => oggPages(5, [Buffer.from("fishead\x00\x03\x00", "latin1"), Buffer.from(`note ${k}`), Buffer.alloc(500, 7)]), "in its Ogg stream's packets"],
      ["appended.opus", (k) => Buffer.concat([ogg("note"), Buffer.from(` ${k} `)]), "in the bytes after its last page"],
    ];
    const refused = await judge(cases.map(([name, make]) => write(work, name, make(token))));
    expect(refused.media_dropped.map((d) => [path.basename(d.path), d.code, d.reason])).toEqual(cases.map(([name, , where]) => [name, "secret_detected", expect.stringContaining(where)]));
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
    // Where: the byte of the file for a packet on one page; of the packet for one that spans pages (their headers lie inside it).
    const reasonOf = (name: string) => refused.media_dropped.find((d) => path.basename(d.path) === name)!.reason;
    expect(reasonOf("voice.opus")).toContain(`at byte ${ogg(`note ${token}`).indexOf(token)} of the file`);
    expect(reasonOf("cut.ogg")).toMatch(/header packet 2, at byte \d+ of it\)/);
    const published = await judge(cases.map(([name, make]) => write(work, `clean-${name}`, make("quarterly-report"))));
    expect(published.media_dropped).toEqual([]);
    for (const [name, make] of cases) {
      const file = make(token);
      const ext = name.slice(name.indexOf(".") + 1);
      const sniffed = name.startsWith("flac") ? "oga" : name.startsWith("unknown") ? "ogx" : ext;
      const fd = fs.openSync(write(work, `file-${name}`, file), "r");
      try {
        expect(outcome(() => inspectFile(fd, file.length, ext, sniffed, NO_KNOWN_SECRETS)), name).toEqual(outcome(() => inspectBinary(file, ext, sniffed, NO_KNOWN_SECRETS)));
      } finally {
        fs.closeSync(fd);
      }
    }
    // A packet a page leaves unfinished, which the next page of its stream does not continue, is read as far as it goes.
    const cutComment = ogg(`note ${token} ${"and more ".repeat(25)}`, { codec: "vorbis", cut: true });
    const continued = cutComment.indexOf("OggS", cutComment.indexOf(token));
    cutComment[continued + 5] = cutComment[continued + 5]! & ~0x01;
    expect(outcome(() => inspectBinary(cutComment, "ogg", "ogg", NO_KNOWN_SECRETS))).toMatch(/^secret_detected: .*its unfinished Vorbis header packet/);
    // As an mp4's media data, the audio packets are not read: a voice note's sound is no text.
    expect(outcome(() => inspectBinary(ogg("note", { audio: [Buffer.from(` ${token} `)] }), "opus", "opus", NO_KNOWN_SECRETS))).toBe("published");
    // A recording's blocks are its media data, not read; one cut short is refused.
    expect(outcome(() => inspectBinary(webm("note", { blocks: [Buffer.from(` ${token} `)] }), "webm", "webm", NO_KNOWN_SECRETS))).toBe("published");
    const recording = webm("note");
    expect(outcome(() => inspectBinary(recording.subarray(0, 200), "webm", "webm", NO_KNOWN_SECRETS))).toMatch(/^unscannable_content: .*runs past the end of its segment/);
    const flacFile = flac("note");
    expect(outcome(() => inspectBinary(flacFile.subarray(0, 60), "flac", "flac", NO_KNOWN_SECRETS))).toMatch(/^unscannable_content: .*its metadata block at byte \d+ runs past the end of the file/);
    expect(outcome(() => inspectBinary(flacFile, "flac", "flac", NO_KNOWN_SECRETS))).toBe("published");
    const whole = ogg("note");
    expect(outcome(() => inspectBinary(whole.subarray(0, whole.length - 10), "opus", "opus", NO_KNOWN_SECRETS))).toMatch(/^unscannable_content: .*its page at byte \d+ runs past the end of the file/);
    // Through prepare, each cut file is refused with its code, and nothing is left behind.
    const before = leftBehind(h);
    const cut = await judge([write(work, "cut-short.opus", whole.subarray(0, whole.length - 10)), write(work, "cut-short.flac", flacFile.subarray(0, 60)), write(work, "cut-short.webm", recording.subarray(0, 200))]);
    expect(cut.media_dropped.map((d) => [path.basename(d.path), d.code])).toEqual([["cut-short.opus", "unscannable_content"], ["cut-short.flac", "unscannable_content"], ["cut-short.webm", "unscannable_content"]]);
    expect(leftBehind(h)).toEqual({ ...before, staging: [] });
  });

  it("reads a PDF from the staged file (its objects and text streams, never its images) as from memory: 600 mutated PDFs with streams about the read ranges' edges, indirect lengths, `stream` inside words, fonts, object streams and an attachment", () => {
    const random = rng(83);
    const noise = (n: number) => Buffer.from(Array.from({ length: n }, () => Math.floor(random() * 256)));
    const token = positives(23)["github-token"]!;
    const bare = /ghp_[A-Za-z0-9]+/.exec(token)![0];
    const differ: string[] = [];
    const kinds = new Set<string>();
    const edge = () => (random() < 0.4 ? [65_536, 131_072, 196_608][Math.floor(random() * 3)]! + Math.floor(random() * 24) - 12 : Math.floor(random() * 150_000));
    for (let round = 0; round < 600; round++) {
      const streams: Buffer[] = [];
      for (let i = 0; i < Math.floor(random() * 4); i++) {
        const data = noise(edge());
        // An image, its length given or by reference (then found by its endstream).
        const length = random() < 0.5 ? `${data.length}` : "99 0 R";
        streams.push(Buffer.concat([Buffer.from(`<< /Type /XObject /Subtype /Image /Width 8 /Height 8 /Length ${length} >>\nstream\n`), data, Buffer.from("\nendstream")]));
      }
      if (random() < 0.3) streams.push(Buffer.from(`<< /Title (the mainstream report ${round % 4 === 0 ? token : "draft"}) >>`));
      // Words that hold `stream` right before a key: each extends the bytes read since the last stream.
      if (random() < 0.2) streams.push(Buffer.from(`<< /Subject (upstream ${bare} downstream ${bare}) >>`));
      if (random() < 0.3) streams.push(Buffer.from(`<< /Length 12 >>\nstream\nnotes ${round % 7 === 0 ? token : "plain"}\nendstream`));
      const text = round % 5 === 0 ? `see ${token}` : "quarterly report";
      const file = Buffer.from(random() < 0.2 ? pdfSubsetFont(text) : pdf(text, random() < 0.3, streams));
      for (let k = Math.floor(random() * 4); k > 0; k--) file[Math.floor(random() * file.length)] = Math.floor(random() * 256);
      const inMemory = outcome(() => inspectBinary(file, "pdf", "pdf", NO_KNOWN_SECRETS));
      kinds.add(inMemory.split(":")[0]!);
      const fd = fs.openSync(write(work, `pdf-${round}.pdf`, file), "r");
      try {
        const fromFile = outcome(() => inspectFile(fd, file.length, "pdf", "pdf", NO_KNOWN_SECRETS));
        if (fromFile !== inMemory) differ.push(`${round}: ${fromFile} vs ${inMemory}`);
      } finally {
        fs.closeSync(fd);
      }
    }
    expect(differ).toEqual([]);
    expect([...kinds].sort()).toEqual(["published", "secret_detected", "unscannable_content"]);
  });

  // 600 zips, each judged from a file and from memory: 28 to 32 s on this machine under eight engineers' load, the default timeout 30.
  it("reads a zip from the staged file (its directory, then one entry at a time) as from memory: 600 mutated zips with entries about the read window's edges, pictures and a zip inside", () => {
    const random = rng(79);
    const noise = (n: number) => Buffer.from(Array.from({ length: n }, () => Math.floor(random() * 256)));
    const token = positives(19)["github-token"]!;
    const differ: string[] = [];
    const kinds = new Set<string>();
    for (let round = 0; round < 600; round++) {
      const entries: Record<string, string | Buffer> = {};
      for (let i = 0; i < 1 + Math.floor(random() * 5); i++) {
        const size = random() < 0.3 ? 65_536 + Math.floor(random() * 64) - 32 : Math.floor(random() * 90_000);
        entries[`word/media/n${i}.bin`] = noise(size);
      }
      entries["word/media/photo.png"] = makePng(40, (i) => i * 7 + round);
      entries["word/embeddings/inner.zip"] = zip({ "notes.txt": round % 3 === 0 ? `key ${token}` : "notes" });
      const original = docx(round % 5 === 0 ? `see ${token}` : "report", 7, entries);
      const file = Buffer.from(original);
      // Mutations, most in the directory and the end record, where the reader finds its way.
      for (let k = Math.floor(random() * 4); k > 0; k--) {
        const at = random() < 0.6 ? file.length - 1 - Math.floor(random() * Math.min(file.length, 600)) : Math.floor(random() * file.length);
        file[at] = Math.floor(random() * 256);
      }
      const inMemory = outcome(() => inspectBinary(file, "docx", "docx", NO_KNOWN_SECRETS));
      kinds.add(inMemory.split(":")[0]!);
      const fd = fs.openSync(write(work, `zip-${round}.docx`, file), "r");
      try {
        const fromFile = outcome(() => inspectFile(fd, file.length, "docx", "docx", NO_KNOWN_SECRETS));
        if (fromFile !== inMemory) differ.push(`${round}: ${fromFile} vs ${inMemory}`);
      } finally {
        fs.closeSync(fd);
      }
    }
    expect(differ).toEqual([]);
    expect([...kinds].sort()).toEqual(["published", "secret_detected", "unscannable_content"]);
  }, 120_000);

  it("refuses, through prepare, keys that long documents, table cells, wrapped words, pdfTeX's spaces and XML parts of several pieces hid, and leaves nothing behind; the same layouts without a key are published", async () => {
    const token = /ghp_[A-Za-z0-9]+/.exec(positives()["github-token"]!)![0];
    const lines = (last: string) => Array.from({ length: 300 }, (_, i) => (i === 297 ? last : `row ${i} 5feceb66ffc86f38d9527 53504`)).join("\n");
    const rows = (cell: string) => Array.from({ length: 300 }, (_, i) => (i === 297 ? `14000|${cell}|53504` : `${i}|north south|53504`)).join("\n");
    const hex = (t: string) => `<${Buffer.from(t).toString("hex")}>`;
    const tex = (word: string) => pdf("Report", false, [Buffer.from(`<< /Length 1 >>\nstream\nBT /F33 9.96 Tf 148 707 Td [${hex("The")}-333${hex("token")}-334${hex("is")}-333${hex(word)}-333${hex("here.")}] TJ ET\nendstream`, "latin1")]);
    const texttt = (word: string) => pdf("Report", false, [Buffer.from(`<< /Length 1 >>\nstream\nBT /F33 9.96 Tf 148 707 Td [${hex("is")}]TJ /F34 9.96 Tf 57.6 0 Td [${hex(word)}]TJ ET\nendstream`, "latin1")]);
    // An xlsx whose shared strings run past several of xmlText's 64 KiB pieces, the token in the last.
    const sheet = (last: string) => xlsx(Array.from({ length: 6000 }, (_, i) => (i === 5990 ? last : `north south ${i} quarterly`)).join("\n"));
    const cases: [string, (key: string) => Buffer][] = [
      ["long.pdf", (k) => pdfSubsetFont(lines(k), { pages: 60 })],
      ["cells.pdf", (k) => pdfSubsetFont(rows(k), { lines: "cells", pages: 60 })],
      ["wrapped.pdf", (k) => pdfSubsetFont(`Report\n14000\n${k.slice(0, 38)}\n${k.slice(38)}\n53504`)],
      ["tex.pdf", tex],
      ["texttt.pdf", texttt],
      ["sheet.xlsx", sheet],
    ];
    const refused = await judge(cases.map(([name, make]) => write(work, name, make(token))));
    expect(refused.media_dropped.map((d) => [path.basename(d.path), d.code])).toEqual(cases.map(([name]) => [name, "secret_detected"]));
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
    const published = await judge(cases.map(([name, make]) => write(work, `clean-${name}`, make("quarterly-report-v2"))));
    expect(published.media_dropped).toEqual([]);
    expect(leftBehind(h).outbox).toHaveLength(cases.length);
  });

  it("refuses a zip bomb and a PDF bomb with decompression_bomb, and an encrypted or damaged container with unscannable_content", async () => {
    const zeros = Buffer.alloc(64 * 1024 * 1024);
    const bombPdf = pdf("hello", false, [Buffer.concat([Buffer.from(`<< /Length ${zlib.deflateSync(zeros).length} /Filter /FlateDecode >>\nstream\n`), zlib.deflateSync(zeros), Buffer.from("\nendstream")])]);
    const damaged = docx("hello");
    const files = [
      write(work, "bomb.docx", docx("hello", 7, { "word/media/big.xml": zeros })),
      write(work, "bomb.pdf", bombPdf),
      write(work, "damaged.docx", damaged.subarray(0, damaged.length - 30)),
      write(work, "encrypted.pdf", Buffer.concat([pdf("hello"), Buffer.from("trailer\n<< /Encrypt 9 0 R >>\n%%EOF\n")])),
    ];
    const report = await judge(files);
    expect(report.media_dropped.map((d) => d.code)).toEqual(["decompression_bomb", "decompression_bomb", "unscannable_content", "unscannable_content"]);
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
  });

  it("refuses an ASCII85 stream of `z` (4 bytes each) past the decode budget before it holds more than the budget (found reviewing the readers: 200 MiB of `z` inflated from a 2 MB PDF grew to 1 GiB, 2.3 GB held, before the budget was counted)", () => {
    const stream = (dict: string, body: Buffer) => Buffer.concat([Buffer.from(`<< ${dict} /Length ${body.length} >>\nstream\n`), body, Buffer.from("\nendstream")]);
    const zs = 200 * 1024 * 1024;
    const compressed = zlib.deflateSync(Buffer.alloc(zs, "z"), { level: 9 });
    // Blanks after the zlib stream (zlib stops at its end): the stream is 100 times smaller than what it inflates to.
    const body = Buffer.concat([compressed, Buffer.alloc(zs / 100 - compressed.length + 1024, 0x20)]);
    const file = pdfOf([Buffer.from("<< /Type /Catalog >>"), stream("/Filter [/FlateDecode /ASCII85Decode]", body)]);
    const sizes: number[] = [];
    const allocUnsafe = Buffer.allocUnsafe;
    Buffer.allocUnsafe = (size: number) => (sizes.push(size), allocUnsafe(size));
    try {
      expect(outcome(() => inspectBinary(file, "pdf", "pdf", NO_KNOWN_SECRETS))).toMatch(/^decompression_bomb: the PDF stream at byte \d+ of the \.pdf file decodes past the 256 MiB/);
    } finally {
      Buffer.allocUnsafe = allocUnsafe;
    }
    expect(Math.max(...sizes)).toBeLessThanOrEqual(256 * 1024 * 1024);
    // A small one still decodes: `z` is four zero bytes, a key beside them is found.
    const key = positives(59)["github-token"]!;
    const small = pdfOf([Buffer.from("<< /Type /Catalog >>"), stream("/Filter /ASCII85Decode", Buffer.from(`${"z".repeat(100_000)}${encode85(Buffer.from(`BT (${key}) Tj ET`))}~>`))]);
    expect(outcome(() => inspectBinary(small, "pdf", "pdf", NO_KNOWN_SECRETS))).toMatch(/^secret_detected: .*GitHub token/);
  });
});

describe("compound files (.doc, .xls, .ppt) and RTF", () => {
  const token = () => /ghp_[A-Za-z0-9]+/.exec(positives()["github-token"]!)![0];
  const prepareJson = (files: string[]) => {
    const r = cli(["prepare", "--json", "--allow", "doc,xls,ppt,rtf", ...files], { env: h.env, cwd: work });
    return JSON.parse(r.stdout) as { media: { name: string }[]; media_dropped: { code: string; reason: string }[] };
  };
  /** A FAT (or mini FAT) whose chain for `name` is changed by `change(chain, table)`. */
  const patched = (name: string, change: (chain: number[], table: number[]) => void, mini = false) => ({
    patch: (fat: number[], miniFat: number[], chains: Record<string, number[]>) => change(chains[mini ? `mini:${name}` : name]!, mini ? miniFat : fat),
  });

  it("reads each stream put together from its chain (sectors out of order, the mini stream, 4 KiB sectors, DIFAT sectors), a document inside (a Package, a packaged file, a compound file), the directory and every byte no stream holds, through the CLI; refuses a loop, a sector past the end, a file cut short, an encrypted document; publishes clean ones; leaves nothing behind", () => {
    const key = token();
    const clean = wordDoc("Report\rAll is well");
    // Past the sectors the FAT covers (one FAT sector: 128 sectors), and in a free sector it covers.
    const after = Buffer.concat([clean, Buffer.alloc((129 - (clean.length / 512 - 1)) * 512), Buffer.from(`GITHUB_TOKEN=${key}\n`)]);
    const free = Buffer.concat([clean, Buffer.from(`GITHUB_TOKEN=${key}\n`.padEnd(512, " "))]);
    const big = (text: string) => Buffer.concat([Buffer.from(text, "utf16le"), Buffer.alloc(8 * 1024 * 1024)]);
    const files = [
      write(work, "fragmented.doc", wordDoc(`Report\r${key}\rThanks`)),
      write(work, "sectors4k.doc", wordDoc(`Report\r${key}`, { version: 4, shuffle: 9 })),
      write(work, "mini.xls", excelXls(["Name", key])),
      // 16,385 sectors need 129 FAT sectors: the 20 past the header's 109 are listed by a DIFAT sector.
      write(work, "difat.ppt", cfb({ "PowerPoint Document": big("Slides"), Notes: Buffer.from(`the token ${key} here`, "utf16le") }, { shuffle: 6 })),
      write(work, "summary.doc", cfb({ WordDocument: Buffer.alloc(5000), "\u0005SummaryInformation": Buffer.from(`author ${key}`) })),
      write(work, "package.doc", cfb({ WordDocument: Buffer.alloc(5000), Package: docx(`Report\n${key}`) })),
      // The object's two mini sectors swapped (seed 7): the key is whole only in its stream put together.
      write(work, "packaged.doc", cfb({ WordDocument: Buffer.alloc(5000), "\u0001Ole10Native": olePackage("notes.docx", docx(`Report\n${key}`)) })),
      write(work, "object.xls", cfb({ Workbook: Buffer.alloc(600), _1234: cfb({ Contents: Buffer.from(`Notes ${key} end`, "utf16le") }, { shuffle: 7 }) })),
      write(work, "free.doc", free),
      write(work, "after.doc", after),
      write(work, "loop.doc", wordDoc("Report", patched("WordDocument", (chain, fat) => (fat[chain.at(-1)!] = chain[0]!)))),
      write(work, "shared.doc", cfb({ A: Buffer.alloc(5000, 0x41), B: Buffer.alloc(5000, 0x42) }, { patch: (fat, _mini, chains) => (fat[chains.A!.at(-1)!] = chains.B![1]!) })),
      write(work, "mini-loop.xls", excelXls(["Name", "x".repeat(300)], patched("Workbook", (chain, miniFat) => (miniFat[chain.at(-1)!] = chain[1]!), true))),
      write(work, "range.doc", wordDoc("Report", patched("WordDocument", (chain, fat) => (fat[chain[2]!] = 999_999)))),
      write(work, "cut.doc", clean.subarray(0, clean.length - 1024)),
      write(work, "encrypted.doc", cfb({ WordDocument: Buffer.concat([Buffer.from("eca5c1000000000000000001", "hex"), Buffer.alloc(5000)]), "1Table": Buffer.alloc(600) })),
      write(work, "encrypted.xls", cfb({ Workbook: Buffer.concat([Buffer.from("09081000000605005438cd07c100000006000000", "hex"), Buffer.from("2f00360001000100", "hex"), Buffer.alloc(52)]) })),
      write(work, "encrypted.ppt", cfb({ "PowerPoint Document": Buffer.alloc(5000), "Current User": Buffer.concat([Buffer.from("000ff63614000000", "hex"), Buffer.from("14000000dfc4d1f3", "hex"), Buffer.alloc(40)]) })),
      write(work, "encrypted-docx.doc", cfb({ EncryptionInfo: Buffer.alloc(200), EncryptedPackage: Buffer.alloc(5000, 0x5a) })),
      write(work, "clean.doc", clean),
      write(work, "clean.xls", excelXls(["Name", "value"])),
      write(work, "clean.ppt", cfb({ "PowerPoint Document": big("Slides"), "Current User": Buffer.alloc(60) }, { version: 4, shuffle: 1 })),
    ];
    const doc = prepareJson(files);
    expect(doc.media_dropped.map((d) => d.code)).toEqual([...Array<string>(10).fill("secret_detected"), ...Array<string>(9).fill("unscannable_content")]);
    const reasons = doc.media_dropped.map((d) => d.reason);
    expect(reasons.slice(0, 10)).toEqual([
      expect.stringContaining("in WordDocument, at byte"),
      expect.stringContaining("in WordDocument, at byte"),
      expect.stringContaining("in Workbook, at byte"),
      expect.stringContaining("in Notes, at byte"),
      expect.stringContaining("in \\x05SummaryInformation, at byte"),
      expect.stringContaining("in the text of word/document.xml of Package"),
      expect.stringContaining("in the text of word/document.xml of the file packaged in \\x01Ole10Native"),
      expect.stringContaining("in Contents of _1234"),
      expect.stringContaining("in its sectors that no stream holds, at byte"),
      expect.stringContaining("in the bytes after its last sector, at byte"),
    ]);
    expect(reasons.slice(10)).toEqual([
      expect.stringContaining("its stream WordDocument runs into sector"),
      expect.stringContaining("its stream B runs into sector"),
      expect.stringContaining("its stream Workbook runs into mini sector"),
      expect.stringContaining("its stream WordDocument points to sector 999999, past the end of the file"),
      expect.stringContaining("past the end of the file (cut short?)"),
      expect.stringContaining("its WordDocument stream is encrypted (a document protected by a password); remove its password"),
      expect.stringContaining("its Workbook stream is encrypted"),
      expect.stringContaining("its Current User stream is encrypted"),
      expect.stringContaining("its EncryptedPackage stream is encrypted"),
    ]);
    for (const reason of reasons) expect(reason).not.toContain(key);
    expect(doc.media.map((m) => m.name)).toEqual(["clean.doc", "clean.xls", "clean.ppt"]);
    expect(leftBehind(h)).toMatchObject({ outbox: ["clean.doc", "clean.ppt", "clean.xls"], staging: [] });
  });

  it("bounds the reading: a directory of more than 100,000 entries, a mini stream longer than the file are refused; 20,000 one-byte streams and a 4 MB stream whose chain runs backwards (47 s and 17 GB in SheetJS cfb) are judged and published", () => {
    const backwards = cfb({ Big: Buffer.alloc(4 * 1024 * 1024, 0x43) }, {
      patch: (fat, _mini, chains) => {
        const chain = chains.Big!.sort((a, b) => b - a);
        chain.forEach((at, k) => (fat[at] = k + 1 < chain.length ? chain[k + 1]! : 0xfffffffe));
      },
    });
    const many = Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`s${i}`, Buffer.from("x")]));
    const files = [
      write(work, "entries.doc", cfb({ WordDocument: Buffer.alloc(5000) }, { emptyEntries: 100_001 })),
      write(work, "giant-mini.xls", cfb({ Workbook: Buffer.alloc(600) }, { rootSize: 0xffffffc0 })),
      write(work, "many.doc", cfb(many)),
      write(work, "backwards.doc", backwards),
    ];
    const doc = prepareJson(files);
    expect(doc.media_dropped.map((d) => [d.code, d.reason])).toEqual([
      ["unscannable_content", expect.stringContaining("its directory has 100,004 entries, more than the 100,000 this check reads")],
      ["unscannable_content", expect.stringContaining("its mini stream is longer than its chain of sectors")],
    ]);
    expect(doc.media.map((m) => m.name)).toEqual(["many.doc", "backwards.doc"]);
    expect(leftBehind(h)).toMatchObject({ staging: [] });
  });

  it("reads an .xls workbook's strings whole where a CONTINUE record cuts them (the SST's, the characters after the cut in 8 bits or in UTF-16; a formula's string result; a text box's text), through the CLI; publishes a long table of clean strings cut the same ways; leaves nothing behind", () => {
    const key = token();
    const u16 = (n: number) => Buffer.from([n & 0xff, n >> 8]);
    const [head, tail] = [`token ${key.slice(0, 20)}`, `${key.slice(20)} end`];
    // A formula's string result: its header and first characters in 8 bits, the rest after the cut in UTF-16.
    const formula = biffPieces(0x0207, [Buffer.concat([u16(head.length + tail.length), Buffer.from([0]), Buffer.from(head, "latin1")]), Buffer.concat([Buffer.from([1]), Buffer.from(tail, "utf16le")])]);
    // A text box: TXO (cchText at byte 10), its text in two CONTINUE records each opening with its flags byte, then its runs.
    const txo = Buffer.alloc(18);
    txo.writeUInt16LE(head.length + tail.length, 10);
    txo.writeUInt16LE(16, 12);
    const textBox = biffPieces(0x01b6, [txo, Buffer.from(`\0${head}`, "latin1"), Buffer.from(`\0${tail}`, "latin1"), Buffer.alloc(16)]);
    const clean = Array.from({ length: 3000 }, (_, i) => `row ${i}: north and south, quarterly ${"\u00e9\u20ac".repeat(i % 3)} figures ${"x".repeat(i % 700)}`);
    const files = [
      write(work, "cut.xls", excelXlsCut(`token ${key}`, false)),
      write(work, "cut-utf16.xls", excelXlsCut(`token ${key}`, true)),
      write(work, "formula.xls", excelXls(["Name"], { shuffle: 4 }, { records: formula })),
      write(work, "textbox.xls", excelXls(["Name"], { shuffle: 4 }, { records: textBox })),
      write(work, "long.xls", excelXls(clean, { shuffle: 5 })),
      write(work, "long-utf16.xls", excelXls(clean, { version: 4, shuffle: 6 }, { wideAfterCut: true })),
    ];
    const doc = prepareJson(files);
    expect(doc.media_dropped.map((d) => [d.code, d.reason])).toEqual([
      ["secret_detected", expect.stringMatching(/GitHub .*\(in the shared strings of Workbook, at byte 8194 of it\)/)],
      ["secret_detected", expect.stringMatching(/GitHub .*\(in the shared strings of Workbook, at byte 8194 of it\)/)],
      ["secret_detected", expect.stringContaining("(in the formula results and text boxes of Workbook, at byte 6 of it)")],
      ["secret_detected", expect.stringContaining("(in the formula results and text boxes of Workbook, at byte 6 of it)")],
    ]);
    for (const d of doc.media_dropped) expect(d.reason).not.toContain(key.slice(-16));
    expect(doc.media.map((m) => m.name)).toEqual(["long.xls", "long-utf16.xls"]);
    expect(leftBehind(h)).toMatchObject({ outbox: ["long-utf16.xls", "long.xls"], staging: [] });
  });

  it("takes an SST's strings out as xlrd does: runs and phonetic data skipped (no flags byte where a cut falls in them), a flags byte where a cut falls inside the characters (right after a header too), a lone byte of a UTF-16 character dropped, empty CONTINUE records passed over, characters past U+00FF narrowed to 0x80; STRING and TXO not read in a BIFF5 stream", () => {
    const u16 = (n: number) => Buffer.from([n & 0xff, n >> 8]);
    const u32 = (n: number) => Buffer.from([n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff, n >>> 24]);
    const latin1 = (s: string) => Buffer.from(s, "latin1");
    const sst = biffPieces(0x00fc, [
      // Counts, then "alpha" with 2 runs and 6 bytes of phonetic data, cut in its runs.
      Buffer.concat([u32(5), u32(5), u16(5), Buffer.from([0x0c]), u16(2), u32(6), latin1("alpha"), Buffer.alloc(3, 0xaa)]),
      // The runs' last 5 bytes and the phonetic data (no flags byte), then "beta" cut right after its header.
      Buffer.concat([Buffer.alloc(5, 0xaa), Buffer.alloc(6, 0xbb), u16(4), Buffer.from([0])]),
      Buffer.concat([Buffer.from([1]), Buffer.from("beta", "utf16le")]),
      // "d\u00e9\u20acta" in UTF-16 cut after 2 characters and a lone byte.
      Buffer.concat([u16(5), Buffer.from([1]), Buffer.from("d\u00e9", "utf16le"), Buffer.from([0x20])]),
      Buffer.concat([Buffer.from([1]), Buffer.from("\u20acta", "utf16le")]),
      // "epsilon" cut after 3 characters, empty CONTINUE records before the rest.
      Buffer.concat([u16(7), Buffer.from([0]), latin1("eps")]),
      Buffer.alloc(0),
      Buffer.alloc(0),
      Buffer.concat([Buffer.from([0]), latin1("ilon"), u16(4), Buffer.from([0]), latin1("zeta")]),
    ]);
    const formula = biffPieces(0x0207, [Buffer.concat([u16(3), Buffer.from([0]), latin1("abc")])]);
    const bof = (version: number) => biffRecord(0x0809, Buffer.concat([u16(version), u16(5), Buffer.alloc(12)]));
    const eof = biffRecord(0x000a, Buffer.alloc(0));
    const read = (b: Buffer) => {
      const { shared, other } = workbookText(b);
      return [shared.toString("latin1"), other.toString("latin1")];
    };
    expect(read(Buffer.concat([bof(0x0600), sst, formula, eof]))).toEqual(["alpha\nbeta\nd\xe9\x80ta\nepsilon\nzeta\n", "abc\n"]);
    expect(read(Buffer.concat([bof(0x0500), sst, formula, eof]))).toEqual(["alpha\nbeta\nd\xe9\x80ta\nepsilon\nzeta\n", ""]);
  });

  it("bounds the reading of an .xls workbook's strings: a cch or cbExtRst past the data, string counts of 2^32 - 1, a million empty CONTINUE records, records cut short end the text, each file judged and published in linear time; 5,000 mutated workbook streams give text no longer than themselves, never an exception", () => {
    const u16 = (n: number) => Buffer.from([n & 0xff, n >> 8]);
    const u32 = (n: number) => Buffer.from([n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff, n >>> 24]);
    const counts = Buffer.concat([u32(0xffffffff), u32(0xffffffff)]);
    const empties = (n: number) => Buffer.concat(Array.from({ length: n }, () => Buffer.from([0x3c, 0, 0, 0])));
    const bof = biffRecord(0x0809, Buffer.concat([u16(0x0600), u16(5), Buffer.alloc(12)]));
    const streams: Record<string, Buffer> = {
      // cch 65,535 with three characters, then a string the table never reaches.
      cch: biffPieces(0x00fc, [Buffer.concat([counts, u16(0xffff), Buffer.from([0]), Buffer.from("abc"), u16(2), Buffer.from([0]), Buffer.from("zz")])]),
      extRst: biffPieces(0x00fc, [Buffer.concat([counts, u16(3), Buffer.from([0x04]), u32(0xffffffff), Buffer.from("abc"), u16(2), Buffer.from([0]), Buffer.from("zz")])]),
      // A string cut inside its characters, then a million empty CONTINUE records; a text box the same.
      empties: Buffer.concat([biffPieces(0x00fc, [Buffer.concat([counts, u16(0xffff), Buffer.from([0]), Buffer.from("abc")])]), empties(1_000_000)]),
      textBox: Buffer.concat([biffPieces(0x01b6, [Buffer.concat([Buffer.alloc(10), u16(0xffff), Buffer.alloc(6)]), Buffer.from("\0abc")]), empties(1_000_000)]),
      // A million STRING records each saying 65,535 characters; a million SST records of counts only.
      strings: Buffer.concat(Array.from({ length: 1_000_000 }, () => biffPieces(0x0207, [Buffer.concat([u16(0xffff), Buffer.from([1]), Buffer.from("a")])]))),
      tables: Buffer.concat(Array.from({ length: 500_000 }, () => biffPieces(0x00fc, [counts]))),
      // Records whose lengths run past the stream's end, one cut in its header.
      cut: Buffer.concat([biffPieces(0x00fc, [Buffer.concat([counts, u16(3), Buffer.from([0]), Buffer.from("abc")])]), Buffer.from([0x3c, 0, 0xff, 0xff, 0, 0x61]), Buffer.from([0x3c, 0])]),
    };
    for (const [name, body] of Object.entries(streams)) {
      const workbook = Buffer.concat([bof, body]);
      const file = cfb({ Workbook: workbook });
      // Each took 100 to 500 ms here (a million STRING records the most); a reading quadratic in the records would take hours.
      expect(outcome(() => inspectBinary(file, "xls", "cfb", NO_KNOWN_SECRETS)), name).toBe("published");
    }
    // The characters a cch declares run to the data's end: the next string's bytes read as its characters.
    // Mutated workbooks (an SST cut in UTF-16, a STRING, a TXO, each continued): text no longer than the stream, never an exception.
    const sample = Buffer.concat([bof, sstRecords(["Name", "x".repeat(8200), "north south \u20ac".repeat(900)], { wideAfterCut: true }), biffPieces(0x0207, [Buffer.concat([u16(9), Buffer.from([0]), Buffer.from("abcd")]), Buffer.from("\x01e\0f\0g\0h\0i\0", "latin1")]), biffPieces(0x01b6, [Buffer.concat([Buffer.alloc(10), u16(6), Buffer.alloc(6)]), Buffer.from("\0abc"), Buffer.from("\x01d\0e\0f\0", "latin1"), Buffer.alloc(16)])]);
    const random = rng(43);
    const below = (n: number) => Math.floor(random() * n);
    for (let round = 0; round < 5000; round++) {
      const b = Buffer.from(sample);
      for (let n = 1 + below(6); n > 0; n--) b.writeUInt16LE([0xffff, 0, 1, 0x3c, 0xfc, below(0x10000)][below(6)]!, below(b.length - 2));
      const cut = below(3) === 0 ? b.subarray(0, below(b.length)) : b;
      const { shared, other } = workbookText(cut);
      expect(shared.length + other.length).toBeLessThanOrEqual(cut.length);
    }
    expect(workbookText(Buffer.concat([bof, streams.cch!])).shared.toString("latin1")).toBe("abc\x02\0\0zz\n");
    expect(workbookText(Buffer.concat([bof, streams.extRst!])).shared.toString()).toBe("abc\n");
    expect(workbookText(Buffer.concat([bof, streams.empties!])).shared.toString()).toBe("abc\n");
    expect(workbookText(Buffer.concat([bof, streams.textBox!])).other.toString()).toBe("abc\n");
    expect(workbookText(Buffer.concat([bof, streams.cut!])).shared.toString()).toBe("abc\n");
  });

  it("reads an RTF file's text: Word's groups and line breaks inside a key, \\'hh and \\uN, the \\info group and an annotation, an embedded object's data (a compound file, a packaged docx), through the CLI; paragraphs stay apart; publishes a clean one; leaves nothing behind", () => {
    const key = token();
    const escaped = [...key].map((c) => (c === "_" ? "\\'5f" : c === "p" ? "\\u112?" : c)).join("");
    const files = [
      write(work, "runs.rtf", rtf(`Report\n${key}\nThanks`)),
      write(work, "info.rtf", rtf("Report", { info: `}{\\title ${key.slice(0, 9)}\r\n${key.slice(9)}` })),
      write(work, "annotation.rtf", Buffer.from(`{\\rtf1\\ansi Report{\\*\\atnid A}{\\*\\annotation \\pard\\plain ${key.slice(0, 20)}\r\n${key.slice(20)}}\\par }`, "latin1")),
      write(work, "escaped.rtf", Buffer.from(`{\\rtf1\\ansi\\uc1 Report ${escaped}\\par }`, "latin1")),
      write(work, "object.rtf", Buffer.from(`{\\rtf1\\ansi Report\\par ${rtfObject("Excel.Sheet.8", cfb({ Workbook: Buffer.alloc(600), Contents: Buffer.from(`Notes ${key} end`, "utf16le") }, { shuffle: 7 }))}\\par }`, "latin1")),
      write(work, "package.rtf", Buffer.from(`{\\rtf1\\ansi Report\\par ${rtfObject("Package", olePackage("notes.docx", docx(`Report\n${key}`)).subarray(4))}\\par }`, "latin1")),
      // A label and the next paragraph: one token (`password:Xk9mP2qR7v`) if \par were dropped, as in a .txt two lines.
      write(work, "clean.rtf", rtf("Report\npassword:\nXk9mP2qR7v is the build id\nThanks")),
      write(work, "clean-object.rtf", Buffer.from(`{\\rtf1\\ansi Report\\par ${rtfObject("Package", olePackage("notes.docx", docx("Report\nhello")).subarray(4))}${rtfObject("Excel.Sheet.8", cfb({ Workbook: Buffer.alloc(6000, 0x20) }, { shuffle: 3 }))}\\par }`, "latin1")),
    ];
    const doc = prepareJson(files);
    expect(doc.media_dropped.map((d) => [d.code, d.reason])).toEqual([
      ["secret_detected", expect.stringContaining("in the text of the RTF file")],
      // The source's key cut by `\r\n` (which RTF's text drops) is read joined, before the text is.
      ...Array(2).fill(["secret_detected", expect.stringContaining("a GitHub token, with line breaks removed (in its RTF source")]),
      ["secret_detected", expect.stringContaining("in the text of the RTF file")],
      ["secret_detected", expect.stringContaining("in Contents of its embedded object 1")],
      ["secret_detected", expect.stringContaining("in the text of word/document.xml of the file packaged in its embedded object 1")],
    ]);
    expect(doc.media.map((m) => m.name)).toEqual(["clean.rtf", "clean-object.rtf"]);
    expect(leftBehind(h)).toMatchObject({ outbox: ["clean-object.rtf", "clean.rtf"], staging: [] });
  });

  it("takes an RTF file's text out in one pass: control words and their parameters, braces, CR and LF dropped; \\'hh, \\uN (its fallback skipped, \\ucN of the group), escapes and marks turned into bytes; \\binN's bytes skipped", () => {
    const text = (s: string) => rtfText(Buffer.from(s, "latin1")).toString("latin1");
    expect(text("{\\rtf1 ab{\\b cd}\\par ef\\line g\\tab h\\cell i\\row j}")).toBe("abcd\nef\ng\th\ti\nj");
    expect(text("g{\\insrsid12 h}\r\np_{\\rtlch\\fcs1 \\af0 x}\\fs24y\\b0 z")).toBe("ghp_xyz");
    expect(text("\\'e9\\'4a\\'zz\\u233?\\u8364?a\\u-4064 ?b")).toBe("\xe9Jzz\xe9\x80a\x80b");
    expect(text("{\\uc2\\u8364\\'80\\'80x}\\u8364??y")).toBe("\x80x\x80?y");
    expect(text("{\\uc3\\u8364 ab}cd")).toBe("\x80cd");
    expect(text("a\\bin3 \\}{b\\bin99999 cd")).toBe("ab");
    expect(text("\\{\\}\\\\\\~x\\_y\\-z\\*\\:")).toBe("{}\\ x-yz");
    // Destinations keep their text, each set apart by line breaks.
    expect(text("{\\info{\\author A}{\\title B}}{\\*\\annotation C}{\\fonttbl{\\f0 D;}}p\\\r\nq")).toBe("\n\nA\n\nB\n\n\nC\n\nD;\np\nq");
    expect(text("\\")).toBe("");
    expect(text("\\u")).toBe("");
    expect(text("\\abcdefghijklmnopqrstuvwxyzpar x")).toBe("x");
    // Linear on what would nest or repeat without end.
    expect(text("{".repeat(200_000) + "k" + "}".repeat(200_000))).toBe("k");
    // Past 4,096 levels a group keeps its parent's state (45 MB of `{` held 1 GB as a stack of states); the groups below still get theirs back.
    expect(text("{\\uc0 " + "{".repeat(5_000) + "}".repeat(5_000) + "\\u233 x}")).toBe("\xe9x");
    // Each \\uN's fallback is the next one.
    expect(text("\\u8364".repeat(100_000)).length).toBe(50_000);
  });
});

describe("damaged files of every format", () => {
  it("publishes or refuses each of 6,000 mutated files (of 18 formats) with a reason code (truncated, bytes changed, lengths overwritten, spans repeated or cut), never a crash", () => {
    const samples: [string, Buffer][] = [
      ["docx", docx("Report\nhello")],
      ["xlsx", xlsx("Name\nvalue")],
      ["pptx", pptx("Slide\ntext")],
      ["pdf", pdf("Hello PDF")],
      ["pdf", pdf("Hello plain", true)],
      ["png", pngWithText("a comment", "zTXt")],
      ["jpg", jpeg({ comment: "hello", exifText: "camera" })],
      ["mp3", mp3("a comment")],
      ["gif", gif("a comment")],
      ["webp", webp("camera")],
      ["bmp", bmp()],
      ["wav", wav("a comment")],
      ["mp4", mp4("a comment")],
      ["opus", ogg("a comment")],
      ["flac", flac("a comment")],
      ["webm", webm("a comment")],
      ["webm", webm("a comment", { sized: true })],
      ["ogg", ogg("a comment", { codec: "vorbis", cut: true })],
      ["jpg", jpegMpf([jpeg({ comment: "gain map" })])],
      ["pdf", pdfSubsetFont("Report\nhello world", { plain: true, lines: "glyphs" })],
      ["pdf", pdfSubsetFont("Report\nhello world", { plain: true, codes: 1, objectStream: true, lines: "cm" })],
      ["tar", tar({ "notes/a.txt": "hello", "notes/chart.png": pngWithText("a comment", "zTXt") }, (name) => (name.endsWith(".png") ? paxHeader({ path: "notes/chart-long-name.png" }) : []))],
      ["gz", zlib.gzipSync(tar({ "notes/a.txt": "hello" }))],
      ["gz", zlib.gzipSync(Buffer.from("hello notes"))],
      ["doc", wordDoc("Report\rhello")],
      ["xls", excelXls(["Name", "value"])],
      ["ppt", cfb({ "PowerPoint Document": Buffer.alloc(5000, 0x20), Notes: cfb({ Contents: Buffer.from("notes", "utf16le") }) }, { version: 4, shuffle: 2 })],
      ["rtf", rtf("Report\nhello", { info: "}{\\title a title" })],
      ["rtf", Buffer.from(`{\\rtf1\\ansi Report\\par ${rtfObject("Package", olePackage("notes.docx", docx("Report\nhello")).subarray(4))}}`, "latin1")],
    ];
    /** What file-type names each: a compound file `cfb`, whatever its extension. */
    const sniffed = (ext: string) => (ext === "doc" || ext === "xls" || ext === "ppt" ? "cfb" : ext);
    const random = rng(41);
    const below = (n: number) => Math.floor(random() * n);
    const LENGTHS = [0xffffffff, 0x7fffffff, 0x10000, 1, 0];
    const mutate = (bytes: Buffer): Buffer => {
      const b = Buffer.concat([bytes, Buffer.alloc(Math.max(0, 8 - bytes.length))]);
      switch (below(6)) {
        case 0:
          return b.subarray(0, below(b.length));
        case 1:
          for (let n = 1 + below(8); n > 0; n--) b[below(b.length)] = below(256);
          return b;
        case 2:
          b.writeUInt32LE(LENGTHS[below(5)]!, below(b.length - 4));
          return b;
        case 3:
          b.writeUInt32BE(LENGTHS[below(5)]!, below(b.length - 4));
          return b;
        case 4: {
          const at = below(b.length);
          return Buffer.concat([b.subarray(0, at), b.subarray(at, at + below(200)), b.subarray(at)]);
        }
        default: {
          const at = below(b.length);
          return Buffer.concat([b.subarray(0, at), b.subarray(at + below(64))]);
        }
      }
    };
    const outcomes = new Map<string, number>();
    for (let round = 0; round < 6000 / samples.length; round++) {
      for (const [ext, bytes] of samples) {
        let input = bytes;
        for (let n = 1 + below(3); n > 0; n--) input = mutate(input);
        let outcome = "published";
        try {
          inspectBinary(input, ext, sniffed(ext), NO_KNOWN_SECRETS);
        } catch (err) {
          // Anything but a Refusal would reach the operator as host_error ("try again later") for a file that will never pass.
          if (!(err instanceof Refusal)) throw new Error(`.${ext} mutated in round ${round}: ${String(err)} (bytes ${input.toString("base64")})`);
          outcome = err.code;
        }
        outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
      }
    }
    expect([...outcomes.keys()].sort()).toEqual(["published", "trailing_data", "unscannable_content"]);
  });

  it("publishes a tar cut short right after a 3-byte member that opens as bzip2 (`BZh`), found reviewing the readers: the check of bzip2's first block read past the member's end and threw (RangeError, an internal error), in memory and through prepare", async () => {
    const pad = (b: Buffer) => Buffer.concat([b, Buffer.alloc((512 - (b.length % 512)) % 512)]);
    const notes = Buffer.alloc(4000, "a");
    // Past 4 KiB, so that the member's last byte is its buffer's (a smaller one lies in Node's shared pool).
    const cut = Buffer.concat([tarHeader("notes.txt", notes.length), pad(notes), tarHeader("b.bz2", 3), Buffer.from("BZh")]);
    const own = new Uint8Array(cut.length);
    own.set(cut);
    expect(outcome(() => inspectBinary(own, "tar", "tar", NO_KNOWN_SECRETS))).toBe("published");
    const report = await judge([write(work, "cut.tar", cut)]);
    expect(report.media_dropped).toEqual([]);
    expect(report.media.map((m) => m.name)).toEqual(["cut.tar"]);
    // A bzip2 file inside is still refused.
    const bzip2 = Buffer.from("BZh91AY&SY\0\0", "latin1");
    expect(outcome(() => inspectBinary(tar({ "a.bz2": bzip2 }), "tar", "tar", NO_KNOWN_SECRETS))).toMatch(/^unscannable_content: .*compressed with bzip2/);
  });

  it("refuses a BMP shorter than its header as unscannable_content (found reviewing the readers: its size field, read past the end, was NaN, and a 2-byte `BM` was refused as 2 bytes of trailing data after its end)", async () => {
    const header = /its header's size does not fit the file/;
    for (const short of ["BM", "BM\x30\0\0", "BM\x1a\0\0\0"]) expect(outcome(() => inspectBinary(Buffer.from(short, "latin1"), "bmp", "bmp", NO_KNOWN_SECRETS)), JSON.stringify(short)).toMatch(/^unscannable_content: .*its header's size does not fit the file/);
    // file-type names two bytes `BM` a BMP.
    await expect(checkContent({ fd: -1, bytes: 2, content: Buffer.from("BM") }, "bmp", { known: NO_KNOWN_SECRETS })).rejects.toMatchObject({ code: "unscannable_content", message: expect.stringMatching(header) });
    expect(outcome(() => inspectBinary(bmp(), "bmp", "bmp", NO_KNOWN_SECRETS))).toBe("published");
  });

  it("refuses a tar's pax or GNU long name header past 1 MiB, as Go's archive/tar does (found reviewing the readers: one of 540 MB, sent with a larger --max-size, was read as a string past the 512 MiB a string holds and threw, an internal error); one under it is read", () => {
    const record = (key: string, value: string) => {
      const body = ` ${key}=${value}\n`;
      let length = body.length + 1;
      while (`${length}${body}`.length !== length) length++;
      return `${length}${body}`;
    };
    const big = Buffer.from(record("comment", "x".repeat(1024 * 1024)));
    const fine = Buffer.from(record("comment", "x".repeat(1024 * 1024 - 64)) + record("path", "notes/renamed.txt"));
    const withHeader = (type: string, data: Buffer) => tar({ "notes/a.txt": "hello" }, () => [tarHeader("PaxHeaders/a.txt", data.length, type), data, Buffer.alloc((512 - (data.length % 512)) % 512)]);
    expect(outcome(() => inspectBinary(withHeader("x", big), "tar", "tar", NO_KNOWN_SECRETS))).toMatch(/^unscannable_content: .*the pax header at byte 0 holds 1048593 bytes, more than the 1048576 this check reads/);
    expect(outcome(() => inspectBinary(withHeader("L", Buffer.alloc(1024 * 1024 + 1, 0x61)), "tar", "tar", NO_KNOWN_SECRETS))).toMatch(/^unscannable_content: .*the GNU long name header at byte 0 holds 1048577 bytes/);
    expect(outcome(() => inspectBinary(withHeader("x", fine), "tar", "tar", NO_KNOWN_SECRETS))).toBe("published");
    // The pax header's path names the member a finding is in.
    const key = positives(61)["github-token"]!;
    const named = tar({ "notes/a.txt": `note ${key}` }, () => [tarHeader("PaxHeaders/a.txt", fine.length, "x"), fine, Buffer.alloc((512 - (fine.length % 512)) % 512)]);
    expect(outcome(() => inspectBinary(named, "tar", "tar", NO_KNOWN_SECRETS))).toMatch(/^secret_detected: .*in notes\/renamed\.txt/);
  });

  it("refuses a RIFF chunk other than the samples that runs past the end: a damaged size before it cut a key in two chunks, read apart and published", () => {
    const key = positives(31)["github-token"]!;
    const file = wav(`note ${key}`);
    const list = file.indexOf("LIST", 0, "latin1");
    // The LIST chunk made to end 20 characters into the token: the rest reads as a chunk whose id and size are the token's letters.
    file.writeUInt32LE(file.indexOf("ghp_", 0, "latin1") + 20 - (list + 8), list + 4);
    expect(outcome(() => inspectBinary(file, "wav", "wav", NO_KNOWN_SECRETS))).toMatch(/^unscannable_content: .*its \w{4} chunk at byte \d+ runs past the end of the file; export it again$/);
    // The samples may run past the end (a recorder that never wrote their size); a clean file is published.
    const samples = wav("note", Buffer.alloc(64, 0x80));
    samples.writeUInt32LE(0xffffffff, samples.indexOf("data", 0, "latin1") + 4);
    expect(outcome(() => inspectBinary(samples, "wav", "wav", NO_KNOWN_SECRETS))).toBe("published");
    expect(outcome(() => inspectBinary(wav(`note ${key}`), "wav", "wav", NO_KNOWN_SECRETS))).toMatch(/^secret_detected: .*in its LIST INFO chunk/);
  });

  it("the refusals of damaged structure found by fuzzing, through the CLI: each names its code and leaves nothing behind", () => {
    const key = positives(43)["github-token"]!;
    const riff = wav(`note ${key}`);
    const list = riff.indexOf("LIST", 0, "latin1");
    riff.writeUInt32LE(riff.indexOf("ghp_", 0, "latin1") + 20 - (list + 8), list + 4);
    // A directory whose count says 0 and whose size 0 (its records still there): no record read, its entries not listed.
    const unlisted = docx("Report", 7, { "word/embeddings/oleObject1.bin": Buffer.from(`Notes ${key}`, "utf16le") });
    unlisted.writeUInt16LE(0, unlisted.length - 22 + 8);
    unlisted.writeUInt16LE(0, unlisted.length - 22 + 10);
    unlisted.writeUInt32LE(unlisted.readUInt32LE(unlisted.length - 22 + 12) + unlisted.readUInt32LE(unlisted.length - 22 + 16), unlisted.length - 22 + 16);
    unlisted.writeUInt32LE(0, unlisted.length - 22 + 12);
    const inDocx = (inner: Buffer) => docx("See the attached report.", 7, { "word/embeddings/inner.docx": inner });
    const deep = inDocx(inDocx(inDocx(docx(`Report\n${key}`))));
    const files = [write(work, "cut.wav", riff), write(work, "unlisted.docx", unlisted), write(work, "deep.docx", deep)];
    const r = cli(["prepare", "--json", ...files], { env: h.env });
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout) as { media: unknown[]; media_dropped: { code: string; reason: string }[] };
    expect(report.media).toEqual([]);
    expect(report.media_dropped.map((d) => d.code)).toEqual(["unscannable_content", "unscannable_content", "unscannable_content"]);
    for (const d of report.media_dropped) expect(d.reason).not.toContain(key);
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
  });

  it("reads an Ogg file's last page and the bytes after it together: a key its lacing, made shorter, cut in two was published", () => {
    const key = positives(37)["github-token"]!;
    const file = ogg(`note ${key}`);
    const tags = file.indexOf("OggS", 4, "latin1");
    const lacing = tags + 27 + file[tags + 26]! - 1;
    const bodyEnd = tags + 27 + file[tags + 26]! + file.subarray(tags + 27, lacing + 1).reduce((a, b) => a + b, 0);
    // The tags page's last lacing value made to end its packet, and the page, 20 characters into the token.
    file[lacing] = file[lacing]! - (bodyEnd - (file.indexOf("ghp_", 0, "latin1") + 20));
    expect(outcome(() => inspectBinary(file, "opus", "opus", NO_KNOWN_SECRETS))).toMatch(/^secret_detected: .*a GitHub token \(in the end of its last page and the bytes after it, at byte \d+ of the file\)/);
    expect(outcome(() => inspectBinary(ogg("note"), "opus", "opus", NO_KNOWN_SECRETS))).toBe("published");
  });

  it("reads a PDF string in UTF-16BE that its dictionary no longer decodes (a `<` or a `%` before it) whole: the key's last letter, before the `)`, was lost", () => {
    for (const label of ["github-token", "aws-access-key-id", "telegram-bot-token"]) {
      const key = positives(41)[label]!;
      const what = scanBytes(Buffer.from(` ${key} `))!.what;
      const file = pdfInfoUtf16(`by ${key}`, "literal").toString("latin1");
      for (const damage of ["<(", "%("]) {
        const damaged = Buffer.from(file.replace("<< /Author (", `<< /Author ${damage}`), "latin1");
        expect(outcome(() => inspectBinary(damaged, "pdf", "pdf", NO_KNOWN_SECRETS)), `${label} after ${damage}`).toMatch(new RegExp(`^secret_detected: .*${what} \\(in the PDF's objects`));
      }
    }
    expect(outcome(() => inspectBinary(Buffer.from(pdfInfoUtf16("by the agent", "literal").toString("latin1").replace("<< /Author (", "<< /Author %("), "latin1"), "pdf", "pdf", NO_KNOWN_SECRETS))).toBe("published");
  });

  it("reads a PDF stream that holds UTF-16 text as UTF-16 whatever its /Type: an XMP packet's key in UTF-16LE was published once `/Type /Metadata` was damaged (read as a content stream)", () => {
    const key = positives(41)["github-token"]!;
    for (const damage of ["/Tyqe /Metadata", "/Type /Metadatum", ""]) {
      const damaged = Buffer.from(pdfXmpUtf16(`by ${key}`).toString("latin1").replace("/Type /Metadata", damage), "latin1");
      expect(outcome(() => inspectBinary(damaged, "pdf", "pdf", NO_KNOWN_SECRETS)), damage).toMatch(/^secret_detected: .*a GitHub token \(in the PDF stream at byte \d+, at byte \d+ of it\)/);
    }
    expect(outcome(() => inspectBinary(Buffer.from(pdfXmpUtf16("by the agent").toString("latin1").replace("/Type /Metadata", ""), "latin1"), "pdf", "pdf", NO_KNOWN_SECRETS))).toBe("published");
  });

  it("refuses a zip holding an entry its directory does not list (a reader that walks the local headers extracts it): a docx whose directory's count said 0, or that left out the embedded object, published its key unread; scans the bytes between entries", () => {
    const key = positives(41)["github-token"]!;
    const object = docx("Report", 7, { "word/embeddings/oleObject1.bin": Buffer.from(`Notes ${key}`, "utf16le") });
    const endAt = object.length - 22;
    // The end record's count of entries (this disk's and the total) set to 0: every record the directory holds is read all
    // the same, as unzip reads them (the count only makes it warn).
    const none = Buffer.from(object);
    none.writeUInt16LE(0, endAt + 8);
    none.writeUInt16LE(0, endAt + 10);
    expect(outcome(() => inspectBinary(none, "docx", "docx", NO_KNOWN_SECRETS))).toMatch(/^secret_detected: .*in word\/embeddings\/oleObject1\.bin/);
    // The object's entry taken out of the directory (its last record): the document's entries still read.
    const cdSize = object.readUInt32LE(endAt + 12);
    const cdStart = object.readUInt32LE(endAt + 16);
    const lastRecord = object.lastIndexOf(Buffer.from("PK\x01\x02", "latin1"), endAt);
    const end = Buffer.from(object.subarray(endAt));
    end.writeUInt16LE(end.readUInt16LE(8) - 1, 8);
    end.writeUInt16LE(end.readUInt16LE(10) - 1, 10);
    end.writeUInt32LE(cdSize - (endAt - lastRecord), 12);
    const unlisted = Buffer.concat([object.subarray(0, lastRecord), end]);
    expect(cdStart).toBeLessThan(lastRecord);
    expect(outcome(() => inspectBinary(unlisted, "docx", "docx", NO_KNOWN_SECRETS))).toMatch(/^unscannable_content: .*does not list \(a local header at byte \d+\)/);
    // Bytes a writer left between two entries (a data descriptor's place) are scanned: a key there in a clean document.
    const clean = docx("Report", 7, { "word/embeddings/oleObject1.bin": Buffer.from("Notes", "utf16le") });
    const cleanEnd = clean.length - 22;
    const cleanCdStart = clean.readUInt32LE(cleanEnd + 16);
    const second = clean.indexOf(Buffer.from("PK\x03\x04", "latin1"), 4);
    const gap = Buffer.from(` ${key} `);
    const cd = Buffer.from(clean.subarray(cleanCdStart, cleanEnd));
    for (let at = cd.indexOf(Buffer.from("PK\x01\x02", "latin1")); at >= 0; at = cd.indexOf(Buffer.from("PK\x01\x02", "latin1"), at + 4)) {
      if (cd.readUInt32LE(at + 42) >= second) cd.writeUInt32LE(cd.readUInt32LE(at + 42) + gap.length, at + 42);
    }
    const gapEnd = Buffer.from(clean.subarray(cleanEnd));
    gapEnd.writeUInt32LE(cleanCdStart + gap.length, 16);
    const withGap = Buffer.concat([clean.subarray(0, second), gap, clean.subarray(second, cleanCdStart), cd, gapEnd]);
    expect(outcome(() => inspectBinary(withGap, "docx", "docx", NO_KNOWN_SECRETS))).toMatch(/^secret_detected: .*a GitHub token \(in the bytes after its entries at byte \d+/);
    expect(outcome(() => inspectBinary(object, "docx", "docx", NO_KNOWN_SECRETS))).toMatch(/^secret_detected: .*oleObject1\.bin/);
    expect(outcome(() => inspectBinary(docx("Report", 7, { "word/embeddings/oleObject1.bin": Buffer.from("Notes", "utf16le") }), "docx", "docx", NO_KNOWN_SECRETS))).toBe("published");
  });

  it("scans a zip's bytes between its directory and its end record, and refuses an entry there: a zip whose end record was zeroed (a directory of 0 bytes at byte 0) was published without a byte of it scanned", () => {
    const key = positives(41)["github-token"]!;
    const stored = zip({ "notes.txt": `token ${key}` }, true);
    const zeroed = Buffer.concat([stored.subarray(0, stored.length - 22), Buffer.from("504b0506", "hex"), Buffer.alloc(18)]);
    expect(outcome(() => inspectBinary(zeroed, "zip", "zip", NO_KNOWN_SECRETS))).toMatch(/^unscannable_content: .*an entry its zip directory does not list \(a local header at byte 0\)/);
    const clean = zip({ "notes.txt": "token" }, true);
    const between = Buffer.concat([clean.subarray(0, clean.length - 22), Buffer.from(` ${key} `), clean.subarray(clean.length - 22)]);
    expect(outcome(() => inspectBinary(between, "zip", "zip", NO_KNOWN_SECRETS))).toMatch(/^secret_detected: .*a GitHub token \(in the bytes between its zip directory and its end record/);
    expect(outcome(() => inspectBinary(clean, "zip", "zip", NO_KNOWN_SECRETS))).toBe("published");
  });

  it("refuses a zip entry whose local header and directory disagree on its compression method or compressed size: an embedded object the directory called stored, or 1 byte long, published its key unread", () => {
    const key = positives(41)["github-token"]!;
    const object = docx("Report", 7, { "word/embeddings/oleObject1.bin": Buffer.from(`Notes ${key}`, "utf16le") });
    const record = object.lastIndexOf(Buffer.from("PK\x01\x02", "latin1"));
    const stored = Buffer.from(object);
    stored.writeUInt16LE(0, record + 10);
    expect(outcome(() => inspectBinary(stored, "docx", "docx", NO_KNOWN_SECRETS))).toMatch(/^unscannable_content: .*oleObject1\.bin's local header gives another compression method \(8\) than its directory \(0\)/);
    const short = Buffer.from(object);
    short.writeUInt32LE(1, record + 20);
    expect(outcome(() => inspectBinary(short, "docx", "docx", NO_KNOWN_SECRETS))).toMatch(/^unscannable_content: .*oleObject1\.bin's local header gives another compressed size \(\d+ bytes\) than its directory \(1\)/);
    // A local header that leaves its sizes to a data descriptor (0) is read by the directory's.
    const described = Buffer.from(object);
    const local = described.indexOf("word/embeddings/oleObject1.bin") - 30;
    expect(described.readUInt32LE(local)).toBe(0x04034b50);
    described.writeUInt32LE(0, local + 18);
    expect(outcome(() => inspectBinary(described, "docx", "docx", NO_KNOWN_SECRETS))).toMatch(/^secret_detected: .*oleObject1\.bin/);
  });

  it("reads a zip inside another file by its end record when its first bytes are damaged (unzip finds it so): a docx in a tar or a gzip whose first byte was changed or first bytes cut published its embedded object's key unread", () => {
    const key = positives(41)["github-token"]!;
    const object = docx("Report", 7, { "word/embeddings/oleObject1.bin": Buffer.from(`Notes ${key}`, "utf16le") });
    const changed = Buffer.from(object);
    changed[0] = 0x70;
    const cut = object.subarray(32);
    for (const [name, inner] of [["first byte changed", changed], ["first bytes cut", cut]] as const) {
      expect(outcome(() => inspectBinary(tar({ "a/x.bin": inner }), "tar", "tar", NO_KNOWN_SECRETS)), `${name} in a tar`).toMatch(/^unscannable_content: .*\(in a\/x\.bin\)/);
      expect(outcome(() => inspectBinary(zlib.gzipSync(inner), "gz", "gz", NO_KNOWN_SECRETS)), `${name} in a gzip`).toMatch(/^unscannable_content: .*\(in the file it compresses\)/);
    }
    // Whole, it is read (the key found), and a file that only holds the signature near its end is not taken for a zip.
    expect(outcome(() => inspectBinary(tar({ "a/x.bin": object }), "tar", "tar", NO_KNOWN_SECRETS))).toMatch(/^secret_detected: .*oleObject1\.bin/);
    expect(outcome(() => inspectBinary(tar({ "a/x.bin": Buffer.concat([Buffer.from("notes PK\x05\x06"), Buffer.alloc(40, 0x20)]) }), "tar", "tar", NO_KNOWN_SECRETS))).toBe("published");
  });

  it("reads a tar member's padding when it is not NULs, with the end of the member: a key there, or across a size made shorter, was published", () => {
    const key = positives(41)["github-token"]!;
    const shortened = (text: string, cut: number) => {
      const header = tarHeader("notes.txt", text.length - cut);
      const data = Buffer.concat([Buffer.from(text), Buffer.alloc(512 - text.length)]);
      return Buffer.concat([header, data, Buffer.alloc(1024)]);
    };
    // The size ends 20 characters into the token; or before the token, which then lies whole in the padding.
    expect(outcome(() => inspectBinary(shortened(`Notes ${key} end`, key.length - 20 + 4), "tar", "tar", NO_KNOWN_SECRETS))).toMatch(/^secret_detected: .*a GitHub token \(in the padding after notes\.txt, at byte \d+ of the file\)/);
    expect(outcome(() => inspectBinary(shortened(`Notes ${key} end`, key.length + 4), "tar", "tar", NO_KNOWN_SECRETS))).toMatch(/^secret_detected: .*in the padding after notes\.txt/);
    expect(outcome(() => inspectBinary(tar({ "notes.txt": "Notes" }), "tar", "tar", NO_KNOWN_SECRETS))).toBe("published");
  });

  it("reads every JPEG segment but the entropy-coded data: a key in a segment no decoder knows, in a table, or in a comment a scan header's damaged length takes in, is refused", () => {
    const key = positives(23)["github-token"]!;
    const plain = jpeg();
    const sos = plain.indexOf(Buffer.from([0xff, 0xda]));
    const segment = (marker: number, data: Buffer) => Buffer.concat([Buffer.from([0xff, marker, (data.length + 2) >> 8, (data.length + 2) & 0xff]), data]);
    const before = (at: number, part: Buffer) => Buffer.concat([plain.subarray(0, at), part, plain.subarray(at)]);
    // The scan header (6 bytes) followed by a comment, its length made to take the comment in (a fuzzed file's damage).
    const comment = segment(0xfe, Buffer.from(` ${key} `));
    const swallowing = Buffer.concat([plain.subarray(0, sos + 10), comment, plain.subarray(sos + 10)]);
    swallowing.writeUInt16BE(8 + comment.length, sos + 2);
    for (const [name, file] of [
      ["JPG7 (0xFFF7)", before(sos, segment(0xf7, Buffer.from(` ${key} `)))],
      ["a second quantisation table", before(sos, segment(0xdb, Buffer.concat([Buffer.from([1]), Buffer.from(` ${key} `.padEnd(64, " "))])))],
      ["a scan header that takes a comment in", swallowing],
    ] as const) {
      expect(outcome(() => inspectBinary(file, "jpg", "jpg", NO_KNOWN_SECRETS)), name).toMatch(/^secret_detected: .*a GitHub token \(in its segment 0xFF(F7|DB|DA), at byte \d+ of the file\)/);
    }
    expect(outcome(() => inspectBinary(plain, "jpg", "jpg", NO_KNOWN_SECRETS))).toBe("published");
  });

  it("reads a stream dictionary's filters in linear time: 32 dictionaries of 64 KiB of `/Filter[` that never close took 5 s (found reviewing the readers; a regular expression looked for the `]` after each), and a `/Filter /FlateDecode` after them is still read", () => {
    const stream = (dict: string, body: Buffer) => Buffer.concat([Buffer.from(`<< ${dict} /Length ${body.length} >>\nstream\n`), body, Buffer.from("\nendstream")]);
    const unclosed = "/Filter[/A ".repeat(5900);
    const key = positives(53)["github-token"]!;
    const files: [Buffer, RegExp][] = [
      [pdfOf([Buffer.from("<< /Type /Catalog >>"), ...Array.from({ length: 32 }, () => stream(unclosed, Buffer.from("BT (hello) Tj ET")))]), /^published$/],
      [pdfOf([Buffer.from("<< /Type /Catalog >>"), stream(`${unclosed}/Filter /FlateDecode`, zlib.deflateSync(`BT (${key}) Tj ET`))]), /^secret_detected: .*GitHub token/],
    ];
    for (const [file, expected] of files) {
      expect(outcome(() => inspectBinary(file, "pdf", "pdf", NO_KNOWN_SECRETS))).toMatch(expected);
    }
  });

  it("refuses a file of countless tiny parts (a 49 MB PDF of 620,000 one-byte compressed streams took 35 s) once it passes the parts or inflate budget, reads a PDF's dictionaries in linear time, and leaves nothing behind", async () => {
    const many = (unit: Buffer, count: number) => Buffer.concat([Buffer.from("%PDF-1.4\n"), Buffer.concat(Array.from({ length: count }, () => unit)), Buffer.from("trailer\n<< /Root 1 0 R >>\n%%EOF\n")]);
    const plain = Buffer.from("1 0 obj\n<< /Length 1 >>\nstream\na\nendstream\nendobj\n");
    const flate = zlib.deflateSync(Buffer.from("a"));
    const compressed = Buffer.concat([Buffer.from(`1 0 obj\n<< /Length ${flate.length} /Filter /FlateDecode >>\nstream\n`), flate, Buffer.from("\nendstream\nendobj\n")]);
    const files = [
      // Three parts each (the objects before, the stream, its text): past 300,000.
      write(work, "streams.pdf", many(plain, 100_001)),
      // Each counts as 4 KiB of the 256 MiB: past 65,536.
      write(work, "compressed.pdf", many(compressed, 65_537)),
      // Just under both.
      write(work, "fine.pdf", many(compressed, 60_000)),
      // No `obj` anywhere: each stream's dictionary was looked for back to the file's start, here past 16 MB (quadratic).
      write(work, "no-objects.pdf", many(Buffer.concat([Buffer.alloc(16 * 1024 * 1024, "x"), Buffer.from(">>\nstream\nx\nendstream\n".repeat(100_001))]), 1)),
      // `stream` words that open nothing, after one `obj`: each read 64 KiB back as a dictionary.
      write(work, "words.pdf", Buffer.concat([Buffer.from("%PDF-1.4\n1 0 obj\n"), Buffer.from("x stream\n".repeat(200_000)), Buffer.from("trailer\n<< >>\n%%EOF\n")])),
    ];
    const report = await judge(files);
    expect(report.media_dropped.map((d) => [d.code, d.reason])).toEqual([
      ["unscannable_content", expect.stringContaining("more than 300,000 parts")],
      ["decompression_bomb", expect.stringContaining("each compressed part counts as at least 4.0 KiB")],
      ["unscannable_content", expect.stringContaining("more than 300,000 parts")],
    ]);
    expect(report.media.map((m) => m.name)).toEqual(["fine.pdf", "words.pdf"]);
    // Of the refused ones, nothing is left: no outbox file, no staging file.
    expect(leftBehind(h)).toMatchObject({ outbox: ["fine.pdf", "words.pdf"], staging: [] });
  });
});

describe("names from inside a file", () => {
  it("escapes an entry's name and a profile's name in every refusal: no control character, no MEDIA: directive reaches stderr", () => {
    const secret = positives(6)["github-token"]!;
    const evil = "word/\u001b[31mMEDIA:/etc/passwd\u0007.xml";
    const files = [
      write(work, "named.docx", docx("Report", 7, { [evil]: `<a>${secret}</a>` })),
      write(work, "damaged.docx", docx("Report", 7, { [`${evil}.bin`]: Buffer.alloc(10) }).subarray(0, -30)),
    ];
    const r = cli(["prepare", ...files], { env: h.env, cwd: work });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("secret_detected");
    expect(r.stderr).toContain("\\x1b[31mMEDIA\\x3a/etc/passwd\\x07.xml");
    // A profile whose name holds a control character is no profile Hermes makes: its values are not known, so what needs them is refused, the name escaped.
    const profile = path.join(h.home, ".hermes", "profiles", "p\u001b]0;x\u0007", ".env");
    fs.mkdirSync(path.dirname(profile), { recursive: true });
    fs.writeFileSync(profile, "EXTRA_TOKEN=Zq8vT2mLx9Rk4Wp7Ns3BcD5fGh6J\n");
    const known = cli(["prepare", write(work, "known.txt", "the value is Zq8vT2mLx9Rk4Wp7Ns3BcD5fGh6J here\n")], { env: h.env, cwd: work });
    expect(known.code).toBe(1);
    expect(known.stderr).toContain("unscannable_content");
    expect(known.stderr).toContain("profiles/p\\x1b]0;x\\x07 (its name holds a control character");
    for (const stderr of [r.stderr, known.stderr]) {
      expect(stderr).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/);
      expect(stderr).not.toMatch(/MEDIA:/);
    }
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
  });
});

describe("documents inside documents", () => {
  it("reads them two deep, the bound that ends a zip holding itself; a document one level deeper is refused, not published unread", async () => {
    const secret = positives(5)["github-token"]!;
    let nested = docx(`Report\n${secret}`);
    const levels: Buffer[] = [];
    for (let depth = 0; depth < 3; depth++) {
      nested = docx("See the attached report.", 7, { [`word/embeddings/level${depth}.docx`]: nested });
      levels.push(nested);
    }
    const files = levels.map((bytes, depth) => write(work, `nested-${depth + 1}.docx`, bytes));
    const report = await judge(files);
    expect(report.media_dropped.map((d) => [d.path.slice(d.path.lastIndexOf("/") + 1), d.code, d.reason])).toEqual([
      ["nested-1.docx", "secret_detected", expect.stringContaining("word/document.xml of word/embeddings/level0.docx, at byte")],
      ["nested-2.docx", "secret_detected", expect.stringContaining("word/document.xml of word/embeddings/level0.docx of word/embeddings/level1.docx, at byte")],
      ["nested-3.docx", "unscannable_content", expect.stringContaining("word/embeddings/level0.docx is a document 3 deep inside others, and documents are read 2 deep (in word/embeddings/level1.docx of word/embeddings/level2.docx)")],
    ]);
    expect(report.media).toEqual([]);
  });

  it("refuses a document deeper than it reads in every container, whether or not a key is inside (a tar and a PDF too; a picture or a plain part there is read)", () => {
    const secret = positives(5)["github-token"]!;
    const deep = (wrap: (inner: Buffer) => Buffer, inner: Buffer) => wrap(wrap(wrap(inner)));
    const inDocx = (inner: Buffer) => docx("See the attached report.", 7, { "word/embeddings/inner.docx": inner });
    for (const [ext, bytes] of [
      ["docx", deep(inDocx, docx(`Report\n${secret}`))],
      ["docx", deep(inDocx, docx("Report\nnothing secret"))],
      ["pdf", deep(pdfAttachment, pdf(`Report\n${secret}`))],
      ["tar", deep((inner) => tar({ "inner.tar.gz": zlib.gzipSync(inner) }), tar({ "notes.txt": "hello" }))],
    ] as const) {
      expect(outcome(() => inspectBinary(bytes, ext, ext, NO_KNOWN_SECRETS)), ext).toMatch(/^unscannable_content: .* is a document 3 deep inside others, and documents are read 2 deep \(in .*\); send the documents inside it as files of their own$/);
    }
    // Two deep, and a part that is no document three deep, are read as before.
    expect(outcome(() => inspectBinary(inDocx(inDocx(docx("Report"))), "docx", "docx", NO_KNOWN_SECRETS))).toBe("published");
    expect(outcome(() => inspectBinary(deep(inDocx, makePng(8, (i) => i)), "docx", "docx", NO_KNOWN_SECRETS))).toBe("published");
  });
});

describe("pictures inside a container", () => {
  it("reads a picture in a gzip file, a PDF's attachment, a compound file's stream and an RTF object's package by its reader too: a key in a PNG's compressed text was published", () => {
    const key = positives(29)["github-token"]!;
    const carriers = (picture: Buffer): [string, string, Buffer][] => [
      ["gz", "gz", zlib.gzipSync(picture)],
      ["pdf", "pdf", pdfAttachment(picture)],
      ["doc", "cfb", cfb({ WordDocument: Buffer.alloc(600, 0x20), Picture: picture })],
      ["rtf", "rtf", Buffer.from(`{\\rtf1\\ansi Report\\par ${rtfObject("Package", olePackage("chart.png", picture).subarray(4))}}`, "latin1")],
    ];
    for (const [ext, sniffed, file] of carriers(pngWithText(key, "zTXt"))) {
      expect(outcome(() => inspectBinary(file, ext, sniffed, NO_KNOWN_SECRETS)), ext).toMatch(/^secret_detected: .*a GitHub token \(in its zTXt chunk of /);
    }
    // A clean picture, and one with bytes after its end (not refused on their own inside a container), are published.
    for (const picture of [pngWithText("a chart", "zTXt"), Buffer.concat([makePng(8, (i) => i), Buffer.alloc(16, 0x41)])]) {
      for (const [ext, sniffed, file] of carriers(picture)) expect(outcome(() => inspectBinary(file, ext, sniffed, NO_KNOWN_SECRETS)), ext).toBe("published");
    }
  });

  it("reads a docx's pictures as pictures: metadata and appended bytes scanned, pixels skipped, trailing bytes not refused on their own; a damaged picture scanned as bytes", async () => {
    const p = positives(13);
    const picture = makePng(8, (i) => i * 5);
    const files = [
      write(work, "tagged.docx", docx("Report", 7, { "word/media/image1.png": pngWithText(p["github-token"]!) })),
      write(work, "appended.docx", docx("Report", 7, { "word/media/image1.png": Buffer.concat([picture, Buffer.from(` ${p["stripe-key"]} `)]) })),
      write(work, "damaged.docx", docx("Report", 7, { "word/media/image1.png": Buffer.concat([picture.subarray(0, 20), Buffer.from(` ${p["npm-token"]} `)]) })),
      write(work, "photo.docx", docx("Report", 7, { "word/media/image1.png": picture, "word/media/image2.jpg": jpeg({ comment: "taken by the agent" }) })),
      write(work, "padded.docx", docx("Report", 7, { "word/media/image1.png": Buffer.concat([picture, Buffer.alloc(64)]) })),
    ];
    const report = await judge(files);
    expect(report.media_dropped.map((d) => [d.path, d.code])).toEqual([
      [files[0], "secret_detected"],
      [files[1], "secret_detected"],
      [files[2], "secret_detected"],
    ]);
    expect(report.media_dropped[0]!.reason).toContain("a GitHub token (in its tEXt chunk of word/media/image1.png");
    expect(report.media_dropped[1]!.reason).toContain("after its end (the IEND chunk) of word/media/image1.png");
    expect(report.media.map((m) => m.name)).toEqual(["photo.docx", "padded.docx"]);
    expect(leftBehind(h).staging).toEqual([]);
  });

  it("reads each of many photos (stored blocks, copied into one reused buffer) as itself: a key in any of them, after larger and smaller ones, in a zip inside", async () => {
    const p = positives(17);
    const random = rng(43);
    /** A photo of noise (deflate stores it) of `size` pixels a side, with a comment chunk (compressed: zTXt) when given one. */
    const photo = (size: number, comment?: string, compressed = false) => {
      const noise = Buffer.from(Array.from({ length: size * size * 3 + size }, () => Math.floor(random() * 256)));
      const png = makePng(size, (i) => noise[i]!);
      if (comment === undefined) return png;
      const iend = png.length - 12;
      const text = compressed ? Buffer.concat([Buffer.from("Comment\0\0", "latin1"), zlib.deflateSync(Buffer.from(comment, "latin1"))]) : Buffer.from(`Comment\0${comment}`, "latin1");
      const head = Buffer.alloc(8);
      head.writeUInt32BE(text.length);
      head.write(compressed ? "zTXt" : "tEXt", 4, "latin1");
      const crc = Buffer.alloc(4);
      crc.writeUInt32BE(zlib.crc32(Buffer.concat([head.subarray(4), text])));
      return Buffer.concat([png.subarray(0, iend), head, text, crc, png.subarray(iend)]);
    };
    const key = p["github-token"]!;
    const album = (keyAt: number) =>
      docx("Photos", 7, Object.fromEntries([300, 120, 200, 60, 250].map((size, i) => [`word/media/image${i}.png`, photo(size, i === keyAt ? key : "holiday")])));
    const files = [0, 1, 2, 3, 4].map((i) => write(work, `album-${i}.docx`, album(i)));
    files.push(write(work, "clean-album.docx", album(-1)));
    // A zip inside, after the photos: its own photos reuse the buffer the outer ones gave back, while the zip's bytes are read.
    files.push(write(work, "nested.docx", docx("Photos", 7, { "word/media/a.png": photo(200, "x"), "word/embeddings/album.zip": zip({ "b.png": photo(150, "y"), "c.png": photo(100, key, true) }), "word/media/d.png": photo(220, "z") })));
    const report = await judge(files);
    expect(report.media_dropped.map((d) => [path.basename(d.path), d.code])).toEqual([
      ...[0, 1, 2, 3, 4].map((i) => [`album-${i}.docx`, "secret_detected"]),
      ["nested.docx", "secret_detected"],
    ]);
    report.media_dropped.slice(0, 5).forEach((d, i) => expect(d.reason).toContain(`a GitHub token (in its tEXt chunk of word/media/image${i}.png`));
    expect(report.media_dropped[5]!.reason).toContain("a GitHub token (in its zTXt chunk of c.png");
    expect(report.media.map((m) => m.name)).toEqual(["clean-album.docx"]);
    // Every photo a stream of stored blocks: the path this test is about.
    for (const size of [300, 60]) expect(zlib.deflateRawSync(photo(size))[0]! & 0x06).toBe(0);

    // Pixels are not read: a large photo whose stored pixels spell a key is published, and so is a smaller
    // one read after it into the same buffer (the larger one's bytes past its end are not the smaller one's).
    const spelled = (() => {
      const width = 400;
      const row = Buffer.concat([Buffer.from([0]), Buffer.from(Array.from({ length: width * 3 }, () => Math.floor(random() * 256)))]);
      row.write(` ${key} `, 100, "latin1");
      const raw = Buffer.concat(Array.from({ length: 300 }, (_, y) => (y === 150 ? row : Buffer.concat([Buffer.from([0]), Buffer.from(Array.from({ length: width * 3 }, () => Math.floor(random() * 256)))]))));
      const ihdr = Buffer.alloc(13);
      ihdr.writeUInt32BE(width, 0);
      ihdr.writeUInt32BE(300, 4);
      ihdr[8] = 8;
      ihdr[9] = 2;
      return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), pngChunk("IHDR", ihdr), pngChunk("IDAT", zlib.deflateSync(raw, { level: 0 })), pngChunk("IEND", Buffer.alloc(0))]);
    })();
    expect(spelled.includes(Buffer.from(key))).toBe(true);
    expect(zlib.deflateRawSync(spelled)[0]! & 0x06).toBe(0);
    const pixels = await judge([write(work, "pixels.docx", docx("Photos", 7, { "word/media/big.png": spelled, "word/media/small.png": photo(80) }))]);
    expect(pixels.media_dropped).toEqual([]);
  });
});

describe("known secrets: the values of the Hermes .env files", () => {
  const VALUE = "Qm7vLx2Pw9Zk4Tr8Yb3N";
  const env = ["# Hermes", "export LLM_MODEL=anthropic/claude-sonnet-4", `MY_CUSTOM_SERVICE_KEY="${VALUE}" # set by setup`, "TELEGRAM_ALLOWED_USERS=123456789", "OPENAI_API_KEY=your_api_key_here", "HERMES_MEDIA_ALLOW_DIRS=/home/agent/.hermes/media_outbox", ""].join("\n");

  it("reads .env with its grammar: export, quotes, comments, expansion", () => {
    expect(parseDotenv(`export A='x y' # c\nB="l1\\nl2"\nC=plain value # comment\nD=\${C}-x\n#E=no\n'F'=q`)).toEqual([
      { name: "A", value: "x y" },
      { name: "B", value: "l1\nl2" },
      { name: "C", value: "plain value" },
      { name: "D", value: "plain value-x" },
      { name: "F", value: "q" },
    ]);
  });

  it("refuses a known value wherever it goes out, naming the variable, never the value; settings and placeholders are not secrets", async () => {
    fs.mkdirSync(path.join(h.home, ".hermes", "profiles", "work"), { recursive: true });
    write(path.join(h.home, ".hermes"), ".env", env);
    write(path.join(h.home, ".hermes", "profiles", "work"), ".env", "DISCORD_ALLOWED_USERS=42\nWEBHOOK_SECRET=Hk29dLqp0Zx7Vn3w\n");
    const files = [
      write(work, "pasted.txt", `the key is ${VALUE}, keep it safe\n`),
      write(work, "pasted.docx", docx(`key: ${VALUE}`)),
      write(work, "tagged.png", pngWithText(`note ${VALUE}`)),
      write(work, "profile.md", "webhook Hk29dLqp0Zx7Vn3w\n"),
      write(work, "settings.md", "model anthropic/claude-sonnet-4, users 123456789, outbox /home/agent/.hermes/media_outbox, your_api_key_here\n"),
    ];
    const report = await judge(files);
    expect(report.media_dropped.map((d) => d.code)).toEqual(["secret_detected", "secret_detected", "secret_detected", "secret_detected"]);
    expect(report.media_dropped[0]!.reason).toContain("MY_CUSTOM_SERVICE_KEY (the Hermes .env)");
    expect(report.media_dropped[3]!.reason).toContain("WEBHOOK_SECRET (the .env of Hermes profile work)");
    for (const d of report.media_dropped) expect(d.reason).not.toContain(VALUE);
    expect(report.media.map((m) => m.name)).toEqual(["settings.md"]);
  });

  it("finds the leftmost known value at any alignment, whatever the values' lengths (the pass reads one word per stride)", () => {
    const next = rng(17);
    const pick = (n: number) => Array.from({ length: n }, () => "abcdefghij0123456789ABCDEF"[Math.floor(next() * 26)]).join("");
    for (let round = 0; round < 400; round++) {
      const values = Array.from({ length: 1 + Math.floor(next() * 4) }, (_, i) => ({ name: `V${i}`, bytes: Buffer.from(pick(8 + Math.floor(next() * (next() < 0.5 ? 6 : 70)))) }));
      const known = new KnownSecrets(values);
      const planted = values[Math.floor(next() * values.length)]!.bytes.toString();
      const from = Math.floor(next() * 24);
      // Often just at or after `from`, where the pass reads its first word.
      const at = next() < 0.3 ? from + Math.floor(next() * 4) : Math.floor(next() * 300);
      const text = Buffer.from(`${pick(at)}${next() < 0.8 ? planted : ""}${pick(Math.floor(next() * 200))}`);
      const naive = Math.min(...values.map((v) => text.indexOf(v.bytes, from)).filter((i) => i >= 0));
      // Read a word at a time where the bytes are aligned, byte by byte elsewhere: the same answer.
      const shift = round % 4;
      const placed = new Uint8Array(new ArrayBuffer(text.length + 4), shift, text.length);
      placed.set(text);
      expect(known.find(placed, from)?.index, `round ${round}, at byte offset ${shift}`).toBe(Number.isFinite(naive) ? naive : undefined);
    }
  });

  it("finds a known value inside base64 at each of its three alignments, in both alphabets, wrapped at 64 or 76 columns, and never names a value of under 16 bytes by a word of its encoding", () => {
    const next = rng(29);
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_:./";
    const pick = (n: number) => Array.from({ length: n }, () => alphabet[Math.floor(next() * alphabet.length)]).join("");
    const wrap = (text: string, width: number) => text.replace(new RegExp(`.{${width}}`, "g"), "$&\n");
    for (let round = 0; round < 300; round++) {
      const value = pick(16 + Math.floor(next() * 120));
      const other = pick(value.length);
      const known = new KnownSecrets([{ name: "V", bytes: Buffer.from(value) }, ...base64Forms(Buffer.from(value)).map((bytes) => ({ name: "V, base64-encoded", bytes, form: true as const }))]);
      const around = Buffer.from(`${pick(Math.floor(next() * 9))}${value}${pick(Math.floor(next() * 9))}`);
      const encoded = next() < 0.5 ? around.toString("base64") : around.toString("base64url");
      const width = [0, 64, 76][round % 3]!;
      const text = Buffer.from(`data: ${width ? wrap(encoded, width) : encoded}\n`);
      expect(known.find(text)?.name, `round ${round}: ${width}`).toBe("V, base64-encoded");
      const clean = Buffer.from(`data: ${Buffer.from(other).toString("base64")}\n`);
      expect(known.find(clean), `round ${round}`).toBeUndefined();
    }
    // A weak password's encoding, less its edges, is most of a word's: it is looked for literally only.
    expect(base64Forms(Buffer.from("password12345"))).toEqual([]);
  });

  it("refuses a known value base64-encoded (a Kubernetes secret, a Docker config, `base64 .env`) and a URL's password written decoded, naming the variable; publishes another value's encoding", async () => {
    const token = "7394028311:AAHq3kZp0Lw9Xv2Ty8Nc5Rb1Md4Fs6Gj7Hk";
    const password = "S3cr#t@pass-w0rd-long";
    const envText = [`TELEGRAM_BOT_TOKEN=${token}`, `DATABASE_URL=postgres://app:${encodeURIComponent(password)}@db/hermes`, `MY_SERVICE_SECRET=${VALUE}${VALUE}`, ""].join("\n");
    fs.mkdirSync(path.join(h.home, ".hermes"), { recursive: true });
    write(path.join(h.home, ".hermes"), ".env", envText);
    const b64 = (text: string) => Buffer.from(text).toString("base64");
    const files = [
      write(work, "secret.yaml", `apiVersion: v1\nkind: Secret\ndata:\n  tg: ${b64(token)}\n`),
      write(work, "config.json", `{"auths":{"registry.example":{"auth":"${b64(`robot:${VALUE}${VALUE}`)}"}}}\n`),
      write(work, "env.txt", `${b64(`#\n${envText}`).replace(/.{76}/g, "$&\n")}\n`),
      write(work, "db.md", `host db, password ${password}\n`),
      write(work, "other.yaml", `data:\n  tg: ${b64("5120937744:AAFw8Rt2Yp6Km1Ns4Lq9Zx3Cv7Bj5Hd0Gs")}\n`),
    ];
    const report = await prepare(files, { env: h.env, cwd: work, allow: [...DEFAULT_ALLOW, "yaml", "json"] });
    expect(report.media_dropped.map((d) => [path.basename(d.path), d.code])).toEqual([
      ["secret.yaml", "secret_detected"],
      ["config.json", "secret_detected"],
      ["env.txt", "secret_detected"],
      ["db.md", "secret_detected"],
    ]);
    expect(report.media_dropped[0]!.reason).toContain("the value of TELEGRAM_BOT_TOKEN (the Hermes .env), base64-encoded");
    expect(report.media_dropped[1]!.reason).toContain("the value of MY_SERVICE_SECRET (the Hermes .env), base64-encoded");
    expect(report.media_dropped[2]!.reason).toContain("base64-encoded");
    expect(report.media_dropped[3]!.reason).toContain("the value of DATABASE_URL (the Hermes .env)");
    for (const d of report.media_dropped) for (const secret of [token, password, VALUE, b64(token)]) expect(d.reason).not.toContain(secret);
    expect(report.media.map((m) => m.name)).toEqual(["other.yaml"]);
    expect(leftBehind(h)).toEqual({ ...NOTHING_LEFT, outbox: ["other.yaml"], ledger: leftBehind(h).ledger });
  });

  it("knows the values of Hermes' JSON credential stores too (auth.json's OAuth tokens and pooled keys, Anthropic's and Google's OAuth files, Bitwarden's cache, MCP tokens, a profile's), naming the keys that lead to a value; a store's dates, scopes and URLs are not secrets", async () => {
    const hermes = path.join(h.home, ".hermes");
    const token = (seed: number) => new Fakes(seed).pick("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 40);
    const [refresh, pooled, anthropic, bws, mcp, google] = [1, 2, 3, 4, 5, 6].map(token);
    fs.mkdirSync(path.join(hermes, "cache"), { recursive: true });
    fs.mkdirSync(path.join(hermes, "mcp-tokens"));
    fs.mkdirSync(path.join(hermes, "profiles", "work"), { recursive: true });
    write(hermes, "auth.json", JSON.stringify({ version: 1, providers: { nous: { refresh_token: refresh, token_type: "Bearer", expires_at: "2026-12-04T19:00:00.123456+00:00", scope: "inference:mint_agent_key" } }, credential_pool: { openrouter: [{ id: "a1b2c3", label: "primary", access_token: pooled, base_url: "https://openrouter.ai/api/v1" }] } }));
    write(hermes, ".anthropic_oauth.json", JSON.stringify({ accessToken: anthropic, expiresAt: 1796418000000 }));
    write(path.join(hermes, "cache"), "bws_cache.json", JSON.stringify({ key: "fp|project|https://vault.bitwarden.com", secrets: { TELEGRAM_BOT: bws }, fetched_at: 1796418000.5 }));
    write(path.join(hermes, "mcp-tokens"), "github.json", JSON.stringify({ access_token: mcp, token_type: "bearer" }));
    write(path.join(hermes, "profiles", "work"), "google_token.json", JSON.stringify({ token: google, token_uri: "https://oauth2.googleapis.com/token", client_id: "1234567890-abcdefghijklmnop.apps.googleusercontent.com", scopes: ["https://www.googleapis.com/auth/gmail.readonly"], expiry: "2026-12-04T19:00:00.123456Z" }));
    const files = [
      write(work, "refresh.txt", `token ${refresh}\n`),
      write(work, "pooled.md", `key: ${pooled}\n`),
      write(work, "anthropic.txt", `${anthropic}\n`),
      write(work, "bws.txt", `bot ${bws}\n`),
      write(work, "mcp.txt", `${mcp}\n`),
      write(work, "google.txt", `${google}\n`),
      write(work, "settings.md", "scope inference:mint_agent_key, expires 2026-12-04T19:00:00.123456+00:00, https://oauth2.googleapis.com/token, 1234567890-abcdefghijklmnop.apps.googleusercontent.com, https://openrouter.ai/api/v1, fp|project|https://vault.bitwarden.com\n"),
    ];
    const report = await judge(files);
    expect(report.media_dropped.map((d) => [path.basename(d.path), d.code])).toEqual(["refresh.txt", "pooled.md", "anthropic.txt", "bws.txt", "mcp.txt", "google.txt"].map((name) => [name, "secret_detected"]));
    const reasons = report.media_dropped.map((d) => d.reason);
    expect(reasons[0]).toContain("the value of providers.nous.refresh_token (the Hermes auth.json)");
    expect(reasons[1]).toContain("the value of credential_pool.openrouter.access_token (the Hermes auth.json)");
    expect(reasons[2]).toContain("the value of accessToken (the Hermes .anthropic_oauth.json)");
    expect(reasons[3]).toContain("the value of secrets.TELEGRAM_BOT (the Hermes cache/bws_cache.json)");
    expect(reasons[4]).toContain("the value of access_token (the Hermes mcp-tokens/github.json)");
    expect(reasons[5]).toContain("the value of token (the google_token.json of Hermes profile work)");
    for (const reason of reasons) for (const secret of [refresh, pooled, anthropic, bws, mcp, google]) expect(reason).not.toContain(secret);
    expect(report.media.map((m) => m.name)).toEqual(["settings.md"]);
    // The gate's copy of a JSON store (gate-secrets names every copy hermes-env-N) is read as JSON, by its first byte.
    const creds = path.join(h.home, "creds");
    fs.mkdirSync(creds);
    write(creds, "hermes-env-2", JSON.stringify({ providers: { nous: { access_token: refresh } } }));
    fs.rmSync(path.join(hermes, "auth.json"));
    const r = cli(["prepare", files[0]!], { env: { ...h.env, CREDENTIALS_DIRECTORY: creds } });
    expect(r.stderr).toContain("the value of providers.nous.access_token (credential hermes-env-2)");
  });

  it("knows the secrets of Hermes' config.yaml (auxiliary models' api_key, the dashboard's password and secret, an MCP server's env and Authorization header), read line by line, naming the keys that lead to a value; its models, URLs, names and placeholders are not secrets; lines built against the reading (a megabyte of one character, of `- `, of escapes) are read in linear time", async () => {
    const hermes = path.join(h.home, ".hermes");
    fs.mkdirSync(path.join(hermes, "profiles", "work"), { recursive: true });
    const [vision, signing, bearer] = [11, 12, 13].map((seed) => new Fakes(seed).pick("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 32));
    const config = [
      "model:",
      "  default: anthropic/claude-sonnet-4",
      "  base_url: https://openrouter.ai/api/v1",
      "auxiliary:",
      "  vision:",
      '    base_url: "https://llm.internal.example/v1"',
      `    api_key: "${vision}"   # the vision box`,
      "  web_extract:",
      '    api_key: ""',
      "dashboard:",
      "  basic:",
      "    username: admin",
      "    password: 'Tr0ub4dor&3-''horse'''",
      `    secret: ${signing} # signing`,
      "delegation:",
      "  api_key: your_api_key_here",
      "",
    ].join("\n");
    write(hermes, "config.yaml", config);
    write(path.join(hermes, "profiles", "work"), "config.yaml", ["mcp_servers:", "  tracker:", "    url: https://mcp.tracker.example/sse", "    headers:", `      - Authorization: Bearer ${bearer}`, ""].join("\n"));
    const files = [
      write(work, "vision.txt", `${vision}\n`),
      write(work, "dashboard.md", "log in with Tr0ub4dor&3-'horse' today\n"),
      write(work, "signing.txt", `${signing}\n`),
      write(work, "bearer.txt", `${bearer}\n`),
      write(work, "settings.md", "anthropic/claude-sonnet-4 via https://openrouter.ai/api/v1 and https://llm.internal.example/v1, user admin, your_api_key_here, https://mcp.tracker.example/sse\n"),
    ];
    const report = await judge(files);
    expect(report.media_dropped.map((d) => [path.basename(d.path), d.code])).toEqual(["vision.txt", "dashboard.md", "signing.txt", "bearer.txt"].map((name) => [name, "secret_detected"]));
    const reasons = report.media_dropped.map((d) => d.reason);
    expect(reasons[0]).toContain("the value of auxiliary.vision.api_key (the Hermes config.yaml)");
    expect(reasons[1]).toContain("the value of dashboard.basic.password (the Hermes config.yaml)");
    expect(reasons[2]).toContain("the value of dashboard.basic.secret (the Hermes config.yaml)");
    expect(reasons[3]).toContain("the value of tracker.headers.Authorization (the config.yaml of Hermes profile work)");
    for (const reason of reasons) for (const secret of [vision, signing, bearer, "Tr0ub4dor"]) expect(reason).not.toContain(secret);
    expect(report.media.map((m) => m.name)).toEqual(["settings.md"]);
    for (const line of ["a".repeat(1 << 20), "- ".repeat(1 << 19), `${" ".repeat(1 << 20)}k`, `k:${" ".repeat(1 << 20)}`, `"${"a".repeat(1 << 20)}`, `k: "${"\\".repeat(1 << 19)}`]) {
      const alone = path.join(h.home, "adversarial");
      fs.mkdirSync(alone, { recursive: true });
      write(alone, "config.yaml", line);
      expect(loadKnownSecrets({ hermesHome: alone }).values).toEqual([]);
    }
  });

  it("reads config.yaml's flow mappings on a key's line (an MCP server's `env: {…}`, `headers: {…}`), tagged values (`!!str`) and block scalars (`|`, `>-` kept or folded), through the CLI, naming the keys as block style does; their models, URLs, names and prompts are not secrets; lines built against the reading (a megabyte of pairs, of brackets, of an open quote, of a block's lines) are read in linear time", () => {
    const hermes = path.join(h.home, ".hermes");
    fs.mkdirSync(hermes, { recursive: true });
    const [flowEnv, flowHeader, tagged, kept, foldA, foldB, notSecret, prompt] = [61, 62, 63, 64, 65, 66, 67, 68].map((seed) => new Fakes(seed).pick("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 32));
    const config = [
      "mcp_servers:",
      "  internal:",
      "    command: npx",
      `    env: {INTERNAL_API_TOKEN: "${flowEnv}", LOG_LEVEL: debug, WORKSPACE: ${notSecret}}`,
      "  tracker:",
      "    url: https://mcp.tracker.example/sse",
      `    headers: {X-Api-Key: &key !!str ${flowHeader}, Accept: application/json} # the tracker`,
      "  files:",
      "    env:",
      `      FILES_TOKEN: !!str ${tagged}`,
      "      FILES_SECRET: |",
      `        ${kept}`,
      "      FILES_PASSWORD: >-",
      `        ${foldA}`,
      `        ${foldB}`,
      "agent:",
      "  system_prompt: |",
      `    You are terse. ${prompt}`,
      "  model: {default: anthropic/claude-sonnet-4, base_url: https://openrouter.ai/api/v1}",
      "",
    ].join("\n");
    write(hermes, "config.yaml", config);
    const files = [flowEnv, flowHeader, tagged, kept, `${foldA} ${foldB}`].map((value, i) => write(work, `leak${i}.txt`, `value ${value}\n`));
    files.push(write(work, "settings.md", `debug ${notSecret} application/json, ${prompt}, anthropic/claude-sonnet-4 via https://openrouter.ai/api/v1\n`));
    const r = cli(["prepare", "--json", ...files], { env: h.env });
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout) as { media: { name: string }[]; media_dropped: { reason: string }[] };
    const reasons = report.media_dropped.map((d) => d.reason);
    expect(reasons).toEqual([
      expect.stringContaining("the value of internal.env.INTERNAL_API_TOKEN (the Hermes config.yaml)"),
      expect.stringContaining("the value of tracker.headers.X-Api-Key (the Hermes config.yaml)"),
      expect.stringContaining("the value of files.env.FILES_TOKEN (the Hermes config.yaml)"),
      expect.stringContaining("the value of files.env.FILES_SECRET (the Hermes config.yaml)"),
      expect.stringContaining("the value of files.env.FILES_PASSWORD (the Hermes config.yaml)"),
    ]);
    for (const reason of reasons) for (const secret of [flowEnv, flowHeader, tagged, kept, foldA, foldB]) expect(reason).not.toContain(secret);
    expect(report.media.map((m) => m.name)).toEqual(["settings.md"]);
    // A folded scalar's lines are one value, joined with a space: each alone is no value of it.
    const lines = write(work, "lines.txt", `${foldA}\n`);
    expect(cli(["prepare", lines], { env: h.env }).code).toBe(0);
    const alone = path.join(h.home, "adversarial");
    fs.mkdirSync(alone, { recursive: true });
    for (const text of [`k: {${"a: b, ".repeat(1 << 17)}}`, `k: {${"{".repeat(1 << 20)}`, `k: {a: ${"[".repeat(1 << 20)}`, `k: {"${"a".repeat(1 << 20)}`, `k: {${"a".repeat(1 << 20)}`, `k: ${"!a ".repeat(1 << 18)}`, `k: >\n${" x\n".repeat(1 << 18)}`, `k: |\n${"\n".repeat(1 << 20)}`]) {
      write(alone, "config.yaml", text);
      expect(loadKnownSecrets({ hermesHome: alone }).values).toEqual([]);
    }
  });

  it("knows the 1Password service account's token (.op.env), 1Password's cache of secret values, and the managed scope's .env and config.yaml ($HERMES_MANAGED_DIR), through the CLI", () => {
    const hermes = path.join(h.home, ".hermes");
    const managed = path.join(h.home, "managed");
    fs.mkdirSync(path.join(hermes, "cache"), { recursive: true });
    fs.mkdirSync(managed);
    const [op, cached, pinned, auxiliary] = [21, 22, 23, 24].map((seed) => new Fakes(seed).pick("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 36));
    write(hermes, ".op.env", `OP_SERVICE_ACCOUNT_TOKEN=ops_${op}\n`);
    write(path.join(hermes, "cache"), "op_cache.json", JSON.stringify({ key: "fp|vault", secrets: { DISCORD_BOT: cached }, fetched_at: 1796418000.5 }));
    write(managed, ".env", `OPENROUTER_API_KEY=${pinned}\n`);
    write(managed, "config.yaml", `auxiliary:\n  vision:\n    api_key: ${auxiliary}\n`);
    const files = [`ops_${op}`, cached, pinned, auxiliary].map((value, i) => write(work, `leak${i}.txt`, `value ${value}\n`));
    const r = cli(["prepare", "--json", ...files], { env: { ...h.env, HERMES_MANAGED_DIR: managed } });
    expect(r.code).toBe(1);
    const reasons = (JSON.parse(r.stdout) as { media_dropped: { reason: string }[] }).media_dropped.map((d) => d.reason);
    expect(reasons).toEqual([
      expect.stringContaining("the value of OP_SERVICE_ACCOUNT_TOKEN (the Hermes .op.env)"),
      expect.stringContaining("the value of secrets.DISCORD_BOT (the Hermes cache/op_cache.json)"),
      expect.stringContaining("the value of OPENROUTER_API_KEY (the managed Hermes .env)"),
      expect.stringContaining("the value of auxiliary.vision.api_key (the managed Hermes config.yaml)"),
    ]);
    for (const reason of reasons) for (const secret of [op, cached, pinned, auxiliary]) expect(reason).not.toContain(secret);
  });

  it("reads the Codex CLI's auth.json where $CODEX_HOME puts it, its `~` expanded as Hermes expands it; a relative $CODEX_HOME is not followed (~/.codex is read)", () => {
    const value = (seed: number) => new Fakes(seed).pick("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 40);
    const [moved, inHome] = [51, 52].map(value);
    for (const [dir, token] of [["codex-work", moved], [".codex", inHome]] as const) {
      fs.mkdirSync(path.join(h.home, dir), { recursive: true });
      write(path.join(h.home, dir), "auth.json", JSON.stringify({ tokens: { refresh_token: token } }));
    }
    const leaks = [moved, inHome].map((v, i) => write(work, `codex${i}.txt`, `value ${v}\n`));
    const reasons = (codexHome: string) => {
      const r = cli(["prepare", "--json", "--", ...leaks], { env: { ...h.env, CODEX_HOME: codexHome }, cwd: work });
      return (JSON.parse(r.stdout) as { media_dropped: { reason: string }[]; media: { source: string }[] });
    };
    const tilde = reasons(" ~/codex-work ");
    expect(tilde.media_dropped.map((d) => d.reason)).toEqual([expect.stringContaining("the value of tokens.refresh_token (the Codex CLI's auth.json ($CODEX_HOME))")]);
    expect(tilde.media.map((m) => path.basename(m.source))).toEqual(["codex1.txt"]);
    fs.rmSync(h.outbox, { recursive: true, force: true });
    const relative = reasons("codex-work");
    expect(relative.media_dropped.map((d) => d.reason)).toEqual([expect.stringContaining("the value of tokens.refresh_token (the user's ~/.codex/auth.json)")]);
    expect(relative.media.map((m) => path.basename(m.source))).toEqual(["codex0.txt"]);
    // The refused file left nothing: the outbox holds only the one published, and no staging.
    expect(leftBehind(h).outbox).toEqual(["codex0.txt"]);
    expect(leftBehind(h).staging).toEqual([]);
  });

  it("knows the plugins' stores (Slack's OAuth tokens, Honcho's and Hindsight's settings, Google Chat's tokens per user) and the credentials other agents' CLIs keep in the user's home, which Hermes seeds its pool from (Claude Code's, Qwen's, Codex's), Docker's registry logins, the AWS shared credentials, PostgreSQL's password file and git's credential store", async () => {
    const hermes = path.join(h.home, ".hermes");
    const value = (seed: number) => new Fakes(seed).pick("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 40);
    const [slack, honcho, hindsight, chat, claude, qwen, codex] = [31, 32, 33, 34, 35, 36, 37].map(value);
    const put = (dir: string, name: string, content: unknown) => {
      fs.mkdirSync(path.join(dir, path.dirname(name)), { recursive: true });
      return write(dir, name, JSON.stringify(content));
    };
    put(hermes, "slack_tokens.json", { T0123: { token: slack, team_name: "Acme" } });
    put(hermes, "honcho.json", { apiKey: honcho, workspace: "hermes" });
    put(hermes, "hindsight/config.json", { apiKey: hindsight, bank: "default" });
    put(hermes, "google_chat_user_tokens/alice_example_com.json", { token: chat, expiry: "2026-12-04T19:00:00Z" });
    put(h.home, ".claude/.credentials.json", { claudeAiOauth: { accessToken: claude, refreshToken: "x".repeat(4), expiresAt: 1796418000000 } });
    put(h.home, ".qwen/oauth_creds.json", { access_token: qwen, token_type: "Bearer" });
    put(h.home, ".codex/auth.json", { tokens: { refresh_token: codex, account_id: "acct-1234" } });
    // Docker's registry logins: a Basic credential kept in base64 (its password and the encoding are known), an identity token.
    const [registryPassword, identity] = [38, 39].map(value);
    const basic = Buffer.from(`agent:${registryPassword}`).toString("base64");
    put(h.home, ".docker/config.json", { auths: { "https://index.docker.io/v1/": { auth: basic }, "ghcr.io": { identitytoken: identity } }, credsStore: "" });
    // The AWS shared credentials (INI), which Hermes' Bedrock provider reads through AWS_PROFILE: a secret key and a session token, each alone in a file.
    const [awsSecret, awsSession] = [40, 41].map(value);
    fs.mkdirSync(path.join(h.home, ".aws"), { recursive: true });
    write(h.home, ".aws/credentials", `[default]\naws_access_key_id = AKIA${"Q".repeat(16)}\naws_secret_access_key = ${awsSecret}\n\n[bedrock]\naws_session_token=${awsSession}\n`);
    // PostgreSQL's password file (`\:` escapes a colon) and git's credential store (a password percent-encoded in its URL).
    const [pgPassword, gitToken] = [value(42), value(43)];
    write(h.home, ".pgpass", `# host:port:db:user:password\ndb.example.com:5432:*:app:${pgPassword.slice(0, 10)}\\:${pgPassword.slice(10)}\n`);
    write(h.home, ".git-credentials", `https://agent:${gitToken.slice(0, 10)}%40${gitToken.slice(10)}@git.example.com\n`);
    const files = [slack, honcho, hindsight, chat, claude, qwen, codex, registryPassword, basic, identity, awsSecret, awsSession, `${pgPassword.slice(0, 10)}:${pgPassword.slice(10)}`, `${gitToken.slice(0, 10)}@${gitToken.slice(10)}`].map((v, i) => write(work, `leak${i}.txt`, `value ${v}\n`));
    const report = await judge(files);
    expect(report.media_dropped.map((d) => d.reason)).toEqual([
      expect.stringContaining("the value of T0123.token (the Hermes slack_tokens.json)"),
      expect.stringContaining("the value of apiKey (the Hermes honcho.json)"),
      expect.stringContaining("the value of apiKey (the Hermes hindsight/config.json)"),
      expect.stringContaining("the value of token (the Hermes google_chat_user_tokens/alice_example_com.json)"),
      expect.stringContaining("the value of claudeAiOauth.accessToken (the user's ~/.claude/.credentials.json)"),
      expect.stringContaining("the value of access_token (the user's ~/.qwen/oauth_creds.json)"),
      expect.stringContaining("the value of tokens.refresh_token (the user's ~/.codex/auth.json)"),
      expect.stringContaining("the value of auths.https://index.docker.io/v1/.auth (the user's ~/.docker/config.json)"),
      expect.stringContaining("the value of auths.https://index.docker.io/v1/.auth (the user's ~/.docker/config.json)"),
      expect.stringContaining("the value of auths.ghcr.io.identitytoken (the user's ~/.docker/config.json)"),
      expect.stringContaining("the value of aws_secret_access_key (the user's ~/.aws/credentials)"),
      expect.stringContaining("the value of aws_session_token (the user's ~/.aws/credentials)"),
      expect.stringContaining("the value of app@db.example.com:5432/* password (the user's ~/.pgpass)"),
      expect.stringContaining("the value of git.example.com (the user's ~/.git-credentials)"),
    ]);
    expect(report.media).toEqual([]);
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
    // An `auth` that is no Basic credential (not base64 of user:password) gives nothing of its own.
    put(h.home, ".docker/config.json", { auths: { "ghcr.io": { auth: Buffer.from([0xff, 0xfe, 0x00, 0x41, 0x42, 0x43]).toString("base64") } } });
    const noise = write(work, "noise.txt", `value ${Buffer.from([0xff, 0xfe, 0x00, 0x41, 0x42, 0x43]).toString("base64")}\n`);
    expect((await judge([noise])).media.map((m) => m.name)).toEqual(["noise.txt"]);
  });

  it("reads the gate's credentials ($CREDENTIALS_DIRECTORY/hermes-env*) through the CLI", () => {
    const creds = path.join(h.home, "creds");
    fs.mkdirSync(creds);
    write(creds, "hermes-env-1", `SLACK_APP_TOKEN=${VALUE}\n`);
    write(creds, "other", `X_TOKEN=Zz9Yy8Xx7Ww6Vv5Uu4\n`);
    const leak = write(work, "leak.txt", `${VALUE}\n`);
    const other = write(work, "other.txt", "Zz9Yy8Xx7Ww6Vv5Uu4\n");
    const r = cli(["prepare", leak, other], { env: { ...h.env, CREDENTIALS_DIRECTORY: creds } });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("secret_detected: the .txt file contains what looks like the value of SLACK_APP_TOKEN (credential hermes-env-1)");
    expect(r.stderr).not.toContain(VALUE);
    expect(r.stdout).toContain("other.txt");
  });

  it("knows the secrets of the environments prepare runs under: the gateway's above it (a unit's Environment= or EnvironmentFile=, `docker run -e`), though the agent's own shell lost them, and its own; by name only, never a path", () => {
    const value = (seed: number) => new Fakes(seed).pick("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 40);
    const [gateway, own, setting] = [41, 42, 43].map(value);
    const keyFile = `/home/agent/.ssh/id_ed25519_${value(44)}`;
    const files = [
      write(work, "gateway.txt", `value ${gateway}\n`),
      write(work, "encoded.txt", `data: ${Buffer.from(`token=${gateway}\n`).toString("base64")}\n`),
      write(work, "own.md", `value ${own}\n`),
      write(work, "setting.txt", `build ${setting}\n`),
      write(work, "key-file.txt", `ssh -i ${keyFile}\n`),
    ];
    // The shell holds the gateway's key; the process it starts (prepare) does not: Hermes strips keys from its tools' environment.
    const r = spawnSync("/bin/sh", ["-c", 'env -u GATEWAY_API_TOKEN "$@"; exit $?', "sh", process.execPath, BIN, "prepare", "--json", ...files], {
      env: { ...h.env, GATEWAY_API_TOKEN: gateway, MY_SERVICE_PASSWORD: own, BUILD_ID: setting, DEPLOY_SSH_KEY: keyFile },
      encoding: "utf8",
    });
    expect(r.status).toBe(1);
    const report = JSON.parse(r.stdout) as { media: { name: string }[]; media_dropped: { reason: string }[] };
    const reasons = report.media_dropped.map((d) => d.reason);
    expect(reasons).toEqual([
      expect.stringMatching(/the value of GATEWAY_API_TOKEN \(the environment of process \d+, sh\)/),
      expect.stringMatching(/the value of GATEWAY_API_TOKEN \(the environment of process \d+, sh\), base64-encoded/),
      expect.stringContaining("the value of MY_SERVICE_PASSWORD (media-outbox's own environment)"),
    ]);
    for (const reason of reasons) for (const secret of [gateway, own]) expect(reason).not.toContain(secret);
    expect(report.media.map((m) => m.name)).toEqual(["setting.txt", "key-file.txt"]);
  });

  it("reads a process's name and parent from /proc/PID/stat, and an environment block, whatever the name holds", () => {
    expect(parseStat("4242 (a) b (c)) S 17 4242 4242 0 -1 4194560 106 0 0 0 1 0 0 0 20 0 1 0 918273 6463488")).toEqual({ command: "a) b (c)", parent: 17, start: "918273" });
    expect(parseStat("garbage")).toEqual({ command: "" });
    expect(parseEnviron(Buffer.from("A=1\0B==x\0=nameless\0NOEQ\0CUT=by the c"))).toEqual([
      ["A", "1"],
      ["B", "=x"],
    ]);
  });
});

describe("through the real CLI", () => {
  it("refuses a representative set with its reason codes and leaves nothing behind", () => {
    const p = positives(5);
    const files = [
      write(work, "token.txt", p["github-token"]!),
      write(work, "key.docx", docx(p["pem-private-key"]!)),
      write(work, "k8s.txt", p["kubeconfig-client-key"]!),
      write(work, "report.pdf", pdf(p["discord-bot-token"]!)),
      write(work, "tagged.mp3", mp3(p["telegram-bot-token"]!)),
      write(work, "polyglot.png", Buffer.concat([makePng(8, (i) => i), zip({ "a.txt": "x" })])),
      write(work, "bomb.docx", docx("hello", 7, { "word/bomb.xml": Buffer.alloc(32 * 1024 * 1024) })),
    ];
    const r = cli(["prepare", "--json", ...files], { env: h.env });
    expect(r.code).toBe(1);
    const doc = JSON.parse(r.stdout) as { media: unknown[]; media_dropped: { code: string }[] };
    expect(doc.media).toEqual([]);
    expect(doc.media_dropped.map((d) => d.code)).toEqual(["secret_detected", "secret_detected", "secret_detected", "secret_detected", "secret_detected", "trailing_data", "decompression_bomb"]);
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
  });

  it("refuses a PDF that draws a key in pieces placed where the one before ends (a Tm or a BT each, a Tm per glyph: pdfkit and jsPDF), a vendor's token and the host's own opaque value, as pdftotext shows them whole; a table whose cells are placed apart is published; nothing left behind (the red team's 32a/06)", () => {
    const opaque = "Hx7Kp2Qm9Zr4Tv8WnB3cY6dL1fJ5gS0a";
    fs.mkdirSync(path.join(h.home, ".hermes"), { recursive: true });
    fs.chmodSync(write(path.join(h.home, ".hermes"), ".env", `MY_SERVICE_TOKEN=${opaque}\n`), 0o600);
    const token = /ghp_[A-Za-z0-9]+/.exec(positives(73)["github-token"]!)![0];
    // Courier 12 pt, uncompressed, hex strings (the file's bytes never hold a key): 7.2 pt a glyph.
    const hex = (t: string) => `<${Buffer.from(t).toString("hex")}>`;
    const courier = (content: string) =>
      pdfOf([
        Buffer.from("<< /Type /Catalog /Pages 2 0 R >>"),
        Buffer.from("<< /Type /Pages /Kids [3 0 R] /Count 1 >>"),
        Buffer.from("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>"),
        Buffer.from("<< /Type /Font /Subtype /Type1 /BaseFont /Courier >>"),
        Buffer.from(`<< /Length ${content.length} >>\nstream\n${content}\nendstream`, "latin1"),
      ]);
    const at = (pieces: string[], x = 72) => pieces.map((p, k) => `1 0 0 1 ${(x + 7.2 * pieces.slice(0, k).join("").length).toFixed(1)} 700 Tm ${hex(p)} Tj`).join(" ");
    const files = [
      write(work, "tm.pdf", courier(`BT /F1 12 Tf ${at([token.slice(0, 14), token.slice(14)])} ET`)),
      write(work, "bt.pdf", courier(`BT /F1 12 Tf 72 700 Td ${hex(token.slice(0, 14))} Tj ET BT /F1 12 Tf 172.8 700 Td ${hex(token.slice(14))} Tj ET`)),
      write(work, "glyphs.pdf", courier(`BT /F1 12 Tf ${at([...token])} ET`)),
      write(work, "opaque.pdf", courier(`BT /F1 12 Tf ${at([opaque.slice(0, 10), opaque.slice(10)])} ET`)),
      // forms33: a piece in a smaller size after a larger one (Courier 24 pt: 14.4 pt a glyph), and pieces widened by Tz and Tc.
      write(work, "sizes.pdf", courier(`BT /F1 24 Tf 1 0 0 1 72 700 Tm ${hex(token.slice(0, 14))} Tj ET BT /F1 9 Tf 1 0 0 1 273.6 700 Tm ${hex(token.slice(14))} Tj ET`)),
      write(work, "opaque-scaled.pdf", courier(`BT /F1 12 Tf 200 Tz 2 Tc 1 0 0 1 72 700 Tm ${hex(opaque.slice(0, 10))} Tj 1 0 0 1 256 700 Tm ${hex(opaque.slice(10))} Tj ET`)),
    ];
    const r = cli(["prepare", "--json", ...files], { env: h.env });
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout) as { media: unknown[]; media_dropped: { code: string; reason: string }[] };
    expect(report.media).toEqual([]);
    expect(report.media_dropped.map((d) => [d.code, d.reason])).toEqual([
      ...Array.from({ length: 3 }, () => ["secret_detected", expect.stringMatching(/GitHub token \(in the text its content streams show, its pieces placed end to end joined/)]),
      ["secret_detected", expect.stringMatching(/MY_SERVICE_TOKEN \(the Hermes \.env\) \(in the text its content streams show, its pieces placed end to end joined/)],
      ["secret_detected", expect.stringMatching(/GitHub token \(in the text its content streams show, its pieces placed end to end joined/)],
      ["secret_detected", expect.stringMatching(/MY_SERVICE_TOKEN \(the Hermes \.env\) \(in the text its content streams show, its pieces placed end to end joined/)],
    ]);
    for (const d of report.media_dropped) expect(d.reason).not.toContain(token.slice(-12));
    for (const d of report.media_dropped) expect(d.reason).not.toContain(opaque.slice(-12));
    expect(leftBehind(h)).toEqual(NOTHING_LEFT);
    // A table: each cell a text object of its own, the next column further than the cell's glyphs reach.
    const table = [["Region", "Revenue", "Units"], ["north", "14000", "53504"], ["south", "13999", "49120"]];
    const cells = table.map((row, i) => row.map((cell, c) => `BT /F1 12 Tf 1 0 0 1 ${72 + 120 * c} ${700 - 14 * i} Tm ${hex(cell)} Tj ET`).join(" ")).join("\n");
    const clean = cli(["prepare", write(work, "table.pdf", courier(cells))], { env: h.env });
    expect(clean.code).toBe(0);
    expect(leftBehind(h).outbox).toHaveLength(1);
  });

  it("judges 512 KiB of `eyJ-` (quadratic in the old pattern) and publishes it", () => {
    const file = write(work, "jwtish.txt", "eyJ-".repeat(128 * 1024));
    const r = cli(["prepare", file], { env: h.env });
    expect(r.code).toBe(0);
  });
});

describe("the guard's entry point", () => {
  it("checkContent judges an open file on its own (no staging scan): text and binary", async () => {
    const p = positives(7);
    const cases: [string, Buffer, string | undefined][] = [
      ["leak.txt", Buffer.from(p["stripe-key"]!), "secret_detected"],
      ["ok.txt", Buffer.from("hello\n"), undefined],
      ["leak.png", pngWithText(p["npm-token"]!), "secret_detected"],
      ["tail.png", Buffer.concat([makePng(8, (i) => i), Buffer.from("x")]), "trailing_data"],
    ];
    for (const [name, bytes, code] of cases) {
      const file = write(work, name, bytes);
      const fd = fs.openSync(file, "r");
      try {
        const verdict = checkContent({ fd, bytes: bytes.length, path: file }, name.split(".")[1]!, { hermesHome: path.join(h.home, ".hermes") });
        if (code) await expect(verdict).rejects.toMatchObject({ code });
        else await expect(verdict).resolves.toMatchObject({ mime: "text/plain" });
      } finally {
        fs.closeSync(fd);
      }
    }
  });
});

describe("linear time: every rule on adversarial input", () => {
  it("judges values of any length in one pass: the shapes that say code, a list or a public key (long runs of each)", () => {
    const long = 200_000;
    const values = ["a1_".repeat(long), `${"a1_".repeat(long)}!`, "A1_".repeat(long), `0x${"f".repeat(long)}`, `${"!".repeat(long)}a`, "a.".repeat(long), `${"a?.".repeat(long)}!`, "Aa0".repeat(long), `AAAA${"B".repeat(long)}`];
    // Identifiers with capitals before a word, links, base64 and DER (2026-12-04).
    values.push(`${"ABCDe".repeat(long)}!`, `${"Abc1".repeat(long)}a`, `${"A".repeat(long)}a`, `${"AB1".repeat(long)}Ab`, `http://${"a:".repeat(long)}@`, `M${"A".repeat(long)}`, `${"QUJD".repeat(long)}=!`);
    // Identifiers with outer underscores, resource paths, UUIDs, labels (the precision audit, 2026-12-05).
    values.push(`${"_".repeat(long)}a1_b_c${"_".repeat(long)}!`, `${"_".repeat(long)}a`, "a/".repeat(long), `${"aB/".repeat(long)}a`, `${"ab-".repeat(long)}/A`, `${"0".repeat(long)}-1`, `${"A".repeat(long)}:`, `${"a:".repeat(long)}`);
    // A name's words, each tried (names of up to 256 characters).
    for (const name of [`${"min_".repeat(63)}key`, `${"aB".repeat(126)}Key`, "_".repeat(255)]) expect(typeof nameHoldsNoSecret(name)).toBe("boolean");
    expect(findSecret(`${"x page token: ".repeat(50_000)}`)).toBeUndefined();
    for (const v of values) {
      expect(typeof looksLikeTokenValue(v)).toBe("boolean");
      expect(typeof looksLikePassword(v)).toBe("boolean");
      expect(typeof valueLooksSecret(v, "token")).toBe("boolean");
    }
  });

  it("gives a verdict on repetitions of each prefix and long runs of each alphabet, in blocks and across seams", () => {
    for (const [label, bytes] of Object.entries(adversarial(512 * 1024))) {
      const scanner = new TextScanner();
      scanner.push(bytes);
      const verdict = scanner.finish();
      expect(verdict.validUtf8, label).toBe(true);
      expect(verdict.secret, label).toBeUndefined();
    }
  });
});
