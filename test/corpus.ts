// The labelled corpus of the content tests and the bench: fake credentials
// in every format the rules know (format-valid, random from a seed, never a
// real key), the carriers they ride in (text, docx, xlsx, pptx, PDF, PNG and
// JPEG metadata, MP3 tags, bytes appended after an image), negatives that
// must be published, and adversarial inputs for time.
import zlib from "node:zlib";
import { makePng } from "../src/core/png.js";

/** A seeded generator (mulberry32): the same corpus every run. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const LOWER = "abcdefghijklmnopqrstuvwxyz";
const DIGITS = "0123456789";
const ALNUM = UPPER + LOWER + DIGITS;
const B64URL = `${ALNUM}_-`;
const HEX = "0123456789abcdef";
const B64 = `${ALNUM}+/`;

export class Fakes {
  private readonly next: () => number;
  constructor(seed: number) {
    this.next = rng(seed);
  }
  pick(alphabet: string, n: number): string {
    let s = "";
    for (let i = 0; i < n; i++) s += alphabet[Math.floor(this.next() * alphabet.length)];
    return s;
  }
  bytes(n: number): Buffer {
    return Buffer.from(Array.from({ length: n }, () => Math.floor(this.next() * 256)));
  }
  pem(label: string, lines = 8): string {
    const body = this.bytes(48 * lines).toString("base64").match(/.{1,64}/g)!.join("\n");
    return `-----BEGIN ${label}-----\n${body}\n-----END ${label}-----\n`;
  }
}

const b64url = (text: string) => Buffer.from(text).toString("base64url");

/**
 * A fake key of each kind of trigger the scan starts a token at, by label, with
 * what the scan calls it: a vendor word (ghp_, github_pat_, GOCSPX-, sk-or-v1-,
 * sk-ant-api03-), a literal (AIza, SK, EAA), a JWT's dot, a Telegram token's
 * colon, a Discord token's dots; and after the Anthropic key, `words`: keys of
 * a vendor word and 40 letters (each caller's own, in its order). Made from `f`
 * in that order, so a seed gives the same keys; `f` goes on from there.
 */
export function triggerKeys(f: Fakes, words: [label: string, prefix: string, what: string][]): Record<string, [key: string, what: string]> {
  const keys: Record<string, [string, string]> = {
    github: [`ghp_${f.pick(ALNUM, 36)}`, "a GitHub token"],
    "github-fine-grained": [`github_pat_${f.pick(ALNUM, 22)}_${f.pick(ALNUM, 59)}`, "a GitHub token"],
    "google-oauth": [`GOCSPX-${f.pick(B64URL, 28)}`, "a Google OAuth client secret or token"],
    openrouter: [`sk-or-v1-${f.pick(HEX, 64)}`, "an OpenRouter API key"],
    anthropic: [`sk-ant-api03-${f.pick(B64URL, 93)}AA`, "an Anthropic API key"],
  };
  for (const [label, prefix, what] of words) keys[label] = [`${prefix}${f.pick(ALNUM, 40)}`, what];
  return {
    ...keys,
    google: [`AIza${f.pick(B64URL, 35)}`, "a Google API key"],
    twilio: [`SK${f.pick(HEX, 32)}`, "a Twilio API key"],
    meta: [`EAAG${f.pick(ALNUM, 180)}`, "a Meta (WhatsApp Cloud, Facebook) access token"],
    jwt: [`${b64url('{"alg":"HS256","typ":"JWT"}')}.${b64url(`{"sub":"${f.pick(DIGITS, 8)}","iat":1700000000}`)}.${f.pick(B64URL, 43)}`, "a JSON Web Token"],
    telegram: [`7${f.pick(DIGITS, 9)}:AA${f.pick(B64URL, 33)}`, "a Telegram bot token"],
    discord: [`${b64url(`1${f.pick(DIGITS, 18)}`)}.${f.pick(B64URL, 6)}.${f.pick(B64URL, 38)}`, "a Discord bot token"],
  };
}

/** One fake of every format the rules know, by label. */
export function positives(seed = 11): Record<string, string> {
  const f = new Fakes(seed);
  const pem = f.pem("RSA PRIVATE KEY");
  return {
    "github-token": `token ghp_${f.pick(ALNUM, 36)}`,
    "github-fine-grained": `github_pat_${f.pick(ALNUM, 22)}_${f.pick(ALNUM, 59)}`,
    "gitlab-token": `glpat-${f.pick(B64URL, 20)}`,
    "slack-bot-token": `SLACK_BOT_TOKEN: xoxb-${f.pick(DIGITS, 12)}-${f.pick(DIGITS, 13)}-${f.pick(ALNUM, 24)}`,
    "slack-app-token": `xapp-1-A${f.pick(UPPER + DIGITS, 10)}-${f.pick(DIGITS, 13)}-${f.pick(HEX, 64)}`,
    "slack-webhook": `https://hooks.slack.com/services/T${f.pick(UPPER + DIGITS, 8)}/B${f.pick(UPPER + DIGITS, 8)}/${f.pick(ALNUM, 24)}`,
    "anthropic-key": `ANTHROPIC_API_KEY=sk-ant-api03-${f.pick(B64URL, 93)}AA`,
    "openrouter-key": `sk-or-v1-${f.pick(HEX, 64)}`,
    "openai-key": `sk-proj-${f.pick(B64URL, 64)}`,
    "openai-legacy-key": `sk-${f.pick(ALNUM, 20)}T3BlbkFJ${f.pick(ALNUM, 20)}`,
    "deepseek-key": `DEEPSEEK_API_KEY=sk-${f.pick(HEX, 32)}`,
    "google-api-key": `GOOGLE_API_KEY=AIza${f.pick(B64URL, 35)}`,
    "google-oauth-secret": `GOCSPX-${f.pick(B64URL, 28)}`,
    "meta-access-token": `WhatsApp Cloud, the bot's: EAAG${f.pick(ALNUM, 180)}`,
    "groq-key": `gsk_${f.pick(ALNUM, 52)}`,
    "xai-key": `xai-${f.pick(ALNUM, 80)}`,
    "huggingface-token": `hf_${f.pick(UPPER + LOWER, 34)}`,
    "fireworks-key": `fw_${f.pick(ALNUM, 24)}`,
    "perplexity-key": `pplx-${f.pick(ALNUM, 48)}`,
    "tavily-key": `tvly-dev-${f.pick(ALNUM, 32)}`,
    "firecrawl-key": `fc-${f.pick(HEX, 32)}`,
    "nvidia-key": `nvapi-${f.pick(B64URL, 64)}`,
    "elevenlabs-key": `sk_${f.pick(HEX, 48)}`,
    "telegram-bot-token": `TELEGRAM_BOT_TOKEN=${f.pick("123456789", 1)}${f.pick(DIGITS, 9)}:AA${f.pick(B64URL, 33)}`,
    "discord-bot-token": `${b64url(`1${f.pick(DIGITS, 18)}`)}.${f.pick(B64URL, 6)}.${f.pick(B64URL, 38)}`,
    "matrix-token": `syt_${b64url("hermesbot")}_${f.pick(ALNUM, 20)}_${f.pick(ALNUM, 6)}`,
    "matrix-recovery-key": `Es${Array.from({ length: 12 }, (_, i) => f.pick("123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz", i === 0 ? 2 : 4)).join(" ")}`,
    "stripe-key": `sk_live_${f.pick(ALNUM, 24)}`,
    "npm-token": `//registry.npmjs.org/:_authToken=npm_${f.pick(ALNUM, 36)}`,
    "pypi-token": `pypi-AgEIcHlwaS5vcmc${f.pick(B64URL, 80)}`,
    "sendgrid-key": `SG.${f.pick(B64URL, 22)}.${f.pick(B64URL, 43)}`,
    "twilio-key": `SK${f.pick(HEX, 32)}`,
    "aws-access-key-id": `aws_access_key_id = AKIA${f.pick(UPPER + "234567", 16)}`,
    "aws-secret-access-key": `aws_secret_access_key = ${f.pick(B64, 40)}`,
    "azure-storage-key": `DefaultEndpointsProtocol=https;AccountName=reports;AccountKey=${f.pick(B64, 86)}==;EndpointSuffix=core.windows.net`,
    "azure-client-secret": `${f.pick(ALNUM, 3)}8Q~${f.pick(`${ALNUM}_~.-`, 34)}`,
    "gcp-service-account": JSON.stringify({ type: "service_account", project_id: "demo", private_key_id: f.pick(HEX, 40), private_key: f.pem("PRIVATE KEY"), client_email: "x@demo.iam.gserviceaccount.com" }, null, 2),
    "database-url": `DATABASE_URL=postgres://app:${f.pick(ALNUM, 20)}@db.internal:5432/app`,
    "pem-private-key": pem,
    "openssh-private-key": f.pem("OPENSSH PRIVATE KEY"),
    "pgp-private-key": `-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\n${f.bytes(300).toString("base64").match(/.{1,64}/g)!.join("\n")}\n-----END PGP PRIVATE KEY BLOCK-----\n`,
    "putty-private-key": `PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: deploy\nPublic-Lines: 2\n${f.bytes(48).toString("base64")}\n`,
    "kubeconfig-client-key": `users:\n- name: admin\n  user:\n    client-key-data: ${Buffer.from(f.pem("EC PRIVATE KEY")).toString("base64")}\n`,
    "base64-pem-wrapped": Buffer.from(f.pem("PRIVATE KEY")).toString("base64").match(/.{1,76}/g)!.join("\n"),
    "netrc-password": `machine api.example.com\n  login deploy\n  password ${f.pick(ALNUM, 22)}\n`,
    jwt: `Authorization: Bearer ${b64url('{"alg":"HS256","typ":"JWT"}')}.${b64url(`{"sub":"${f.pick(DIGITS, 8)}","iat":1700000000}`)}.${f.pick(B64URL, 43)}`,
    "generic-dotenv": `MY_SERVICE_TOKEN=${f.pick(ALNUM, 32)}`,
    "generic-export-password": `export DB_PASSWORD='${f.pick(LOWER, 6)}${f.pick(DIGITS, 3)}!${f.pick(UPPER, 3)}'`,
    "generic-yaml": `service:\n  api_key: ${f.pick(ALNUM, 40)}\n`,
    "generic-json": `{"clientSecret": "${f.pick(ALNUM, 40)}"}`,
    "generic-ini": `[database]\nhost = db.internal\npassword = ${f.pick(LOWER, 5)}${f.pick(DIGITS, 4)}${f.pick(UPPER, 3)}\n`,
    "authorization-basic": `Authorization: Basic ${Buffer.from(`deploy:${f.pick(ALNUM, 10)}7!`).toString("base64")}`,
    // The prefixes Hermes' own redactor knows (2026-12-04 evening), appended so that the fakes above keep their values.
    "exa-key": `search with exa_${f.pick(ALNUM, 32)}`,
    "retaindb-key": `retaindb_${f.pick(ALNUM, 40)}`,
    "hindsight-key": `hsk-${f.pick(ALNUM, 32)}`,
    "mem0-key": `memory: mem0_${f.pick(ALNUM, 40)}`,
    "byterover-key": `brv_${f.pick(ALNUM, 32)}`,
    "agentmail-key": `am_${f.pick(ALNUM, 24)}_${f.pick(ALNUM, 16)}`,
    "fal-token": `fal_${f.pick(B64URL, 40)}`,
    "fireworks-dash-key": `fw-${f.pick(ALNUM, 28)}`,
    // A proxy's URL with its password (Hermes' TELEGRAM_PROXY, GATEWAY_PROXY_URL).
    "url-password": `TELEGRAM_PROXY=socks5://hermes:${f.pick(ALNUM, 20)}@proxy.internal:1080`,
  };
}

/** Text that must be published: what agents send every day. */
export function negatives(seed = 12): Record<string, string> {
  const f = new Fakes(seed);
  const rows = Array.from({ length: 200 }, () => `${f.pick(HEX, 64)},${f.pick(HEX, 8)}-${f.pick(HEX, 4)}-4${f.pick(HEX, 3)}-a${f.pick(HEX, 3)}-${f.pick(HEX, 12)},${f.pick(DIGITS, 6)}`);
  const log = Array.from({ length: 50 }, (_, i) => `commit ${f.pick(HEX, 40)}\nAuthor: Dev ${i} <dev${i}@example.com>\nDate:   Mon Jan ${(i % 28) + 1} 10:00:00 2026 +0000\n\n    Fix token refresh in the ${f.pick(LOWER, 6)} module (#${1000 + i})\n\n    Change-Id: I${f.pick(HEX, 40)}\n`);
  return {
    "sha256-uuid-csv": `sha256,uuid,size\n${rows.join("\n")}\n`,
    "git-log": log.join("\n"),
    "placeholder-docs": [
      "# Setup",
      "Put your keys in `~/.hermes/.env`:",
      "```",
      "OPENROUTER_API_KEY=sk-or-v1-...",
      "OPENAI_API_KEY=your_api_key_here",
      "ANTHROPIC_API_KEY=<YOUR_ANTHROPIC_KEY>",
      "TELEGRAM_BOT_TOKEN=123456789:ABC-DEF1234ghIkl-zyx57W2v1u123ew11",
      "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
      "SLACK_BOT_TOKEN=xoxb-your-bot-token",
      "DATABASE_URL=postgres://user:password@localhost:5432/app",
      "api_key: changeme",
      "password: ********",
      "password: 'secret123'",
      "POSTGRES_PASSWORD: ${POSTGRES_PASSWORD:-postgres}",
      "DB_PASSWORD=admin123",
      "export PGPASSWORD=P@ssw0rd1",
      "token = ${API_TOKEN}",
      'secret = os.environ["SECRET"]',
      "```",
      "-----BEGIN PRIVATE KEY-----",
      "...",
      "-----END PRIVATE KEY-----",
      "AWS example: AKIAIOSFODNN7EXAMPLE / wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
      "Stripe test key from the docs: sk_test_4eC39HqLyjWDarjtT1zdp7dc",
      "jwt.io: eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    ].join("\n"),
    "minified-js": `!function(e){var t={};function n(r){if(t[r])return t[r].exports;var o=t[r]={i:r,l:!1,exports:{}};return e[r].call(o.exports,o,o.exports,n),o.l=!0,o.exports}n.m=e,n.c=t,n.d=function(e,t,r){n.o(e,t)||Object.defineProperty(e,t,{enumerable:!0,get:r})};var apiKey=e.apiKey||"",token=n.token,secret=this._getSecret(),password=o.password;const passwordField=document.getElementById("password");key:"sort",keyPath:"id",tokenizer:new t.Tokenizer({maxTokens:4096})}(${JSON.stringify(Array.from({ length: 50 }, () => f.pick(LOWER, 8)))});\n`.repeat(40),
    prose: [
      "The quarterly report covers revenue, churn and the new onboarding flow. Passwords are rotated monthly; keys live in the vault.",
      "Le rapport trimestriel couvre le chiffre d'affaires et le nouveau parcours d'inscription. Les mots de passe sont changés chaque mois.",
      "Der Quartalsbericht umfasst Umsatz, Abwanderung und den neuen Anmeldeprozess. Schlüssel und Passwörter liegen im Tresor.",
      "季度报告涵盖收入、流失率和新的注册流程。密码每月轮换一次，密钥保存在保险库中。",
      "四半期報告書には、収益、解約率、新しいオンボーディングの流れが含まれています。パスワードは毎月変更されます。",
      "Квартальный отчёт охватывает выручку, отток и новый процесс регистрации. Пароли меняются ежемесячно.",
      "يغطي التقرير الفصلي الإيرادات ومعدل التراجع وعملية التسجيل الجديدة. يتم تغيير كلمات المرور شهريًا.",
      "Monkey business: the turkey key-lime pie recipe uses a passage about tokenizers and bypass valves.",
    ].join("\n\n"),
    "certificate-base64": `tls.crt: ${Buffer.from(f.pem("CERTIFICATE")).toString("base64")}\n`,
    "public-keys": `{"publicKey": "${f.pick(ALNUM, 44)}", "pk_live": "pk_live_${f.pick(ALNUM, 24)}", "ssh": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI${f.pick(B64, 43)} user@host"}\n`,
    "lockfile-integrity": Array.from({ length: 30 }, (_, i) => `    "node_modules/pkg${i}": {\n      "version": "1.${i}.0",\n      "resolved": "https://registry.npmjs.org/pkg${i}/-/pkg${i}-1.${i}.0.tgz",\n      "integrity": "sha512-${f.pick(B64, 86)}=="\n    },`).join("\n"),
    // Code an agent sends (found in this machine's Python packages, C++ headers and Node's own bundles, 2026-12-04): type annotations, member access, pinned public keys, documentation's examples.
    "typed-code": [
      "def serialize_key_and_certificates(",
      "    name: bytes | None,",
      "    key: PKCS12PrivateKeyTypes | None,",
      "    cert: x509.Certificate | None,",
      ") -> bytes: ...",
      "def sign(data: bytes, certificate: x509.Certificate, private_key: PKCS7PrivateKeyTypes, hash_algorithm: PKCS7HashTypes): ...",
      "  Pass *ResultPass = Resolver->getAnalysisIfAvailable(PI);",
      `const keys = [{ keyid: "SHA256:${f.pick(B64, 43)}", scheme: "ecdsa-sha2-nistp256", key: "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE${f.pick(B64, 86)}==" }];`,
      `signing_key: MCowBQYDK2VwAyEA${f.pick(B64, 43)}=`,
      "  password: 'bm90IG15IHJlYWwgcGFzc3dvcmQ=',",
      "    'Test2::Event::Pass'    => 'http://github.com/Test-More/test-more/issues',",
      "      $pass = '-anonymous@'",
      "# e.g. ``MY_SERVICE_TOKEN=abc123randomstring``",
      '    >>> jwt.encode({"some": "payload"}, "secret", algorithm="HS256")',
      "    eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzb21lIjoicGF5bG9hZCJ9.4twFt5NiznN84AWoo1d7KO1T_yoc0Z6XOpOVswacPZg",
      '    Authorization: OAuth realm="Example", oauth_consumer_key="0685bd9184jfhq22", oauth_token="ad180jjd733klru7", oauth_signature_method="HMAC-SHA1"',
    ].join("\n"),
    "uuids-and-hashes-config": `cache_key: ${f.pick(HEX, 32)}\nsort_key: created_at\nprimary_key: id\nrequest_id: ${f.pick(HEX, 8)}-${f.pick(HEX, 4)}-4${f.pick(HEX, 3)}-a${f.pick(HEX, 3)}-${f.pick(HEX, 12)}\nmax_tokens: 4096\ncommit: ${f.pick(HEX, 40)}\nPWD=/home/dev/project/app\nOLDPWD=/home/dev\nHOME=/home/dev\nSHELL=/bin/bash\nPATH=/usr/local/bin:/usr/bin:/bin\n`,
  };
}

/** Inputs built to make a backtracking pattern slow: repetitions of each prefix, long runs of each alphabet. */
export function adversarial(size: number): Record<string, Buffer> {
  const fill = (unit: string) => Buffer.from(unit.repeat(Math.ceil(size / unit.length)).slice(0, size), "latin1");
  const units = ["eyJ-", "eyJ", "sk-", "sk-ant-", "ghp_", "AKIA", "xoxb-1234567-", "-----BEGIN ", "-----BEGIN PRIVATE KEY-----\nProc-Type: x\n", "LS0tLS1CRUdJTi", "key=", "Key:", "a=", "1234567890:", "postgres://u:", "machine a password ", "Authorization: Bearer ", "Es12 ", "password=", "pass", "AAA1Q~", "ab/", "M", "0"];
  // The triggers of find.ts's passes, repeated.
  units.push(".eyJ", "-", ".", "_", "a.aaaaaa.", "0123456789abcdef", "//0", "SK", "~", '"key": "', "<password>", "xoxe.", "https://", "class=", "ion: Bearer ");
  // A `:` after each kind of byte that leads the colon pass to its tests (a hex digit, a keyword's last letter), and Word's markup.
  units.push("a:", "0:", "y:", ":", '<w:r><w:t xml:space="preserve">t</w:t></w:r>');
  // A shell expansion's default (`${NAME:-default}`), whose name is read back.
  units.push("${password:-", "${x_password:-}");
  // What the generic assignment turns down as code or a list (2026-12-04): a scope, a test log's result, fields, a call, member expressions.
  units.push("key::", "PASS: ", "password:a:", "key=f(", "pass: a?.b\n", "key=a_b_c_d9_", "key=0x0", "key=AAAAB3NzaC1yc2E");
  units.push("\xe2\x80\x98--password=Xk9#mP\xe2\x80\x99");
  // A Meta access token's lead (2026-12-04), alone and before a long run.
  units.push("EAA", "EAAG0", "+/EAA");
  // A terminal's control sequence before a key (2026-12-05): each read back from its final letter, or forward from its ESC (Meta).
  units.push("\x1b[mEAA", "\x1b[1;32mghp_", "\x1b[", "\x1b[0m", "0%3A", "1234567890%3A");
  // The prefixes of Hermes' redactor (2026-12-04 evening), and words that end like them.
  units.push("exa_", "retaindb_", "hsk-", "mem0_", "brv_", "am_", "fal_", "fw-", "am_a1", "xretaindb_");
  // Any URL's password (2026-12-04 evening): a link's scheme, and one with a user before an @ far on.
  units.push("https://u:", "socks5://a:b", "http://a:bcd");
  // What the precision audit publishes (2026-12-05): a value its name holds, prose naming a page token, a resource path.
  units.push("service_account_token: 'V1ServiceAccountTokenProjection' ", "a Next page token: eav1kjh3k4j5h6k7j8h9 ", "k: projects/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o ");
  // A private key's base64 body (2026-12-05): its DER's lead; an armour in pandoc's dashes.
  units.push("aws_key=\n", "aws_secret_access_key =\n", "aws_key:\r\n  '");
  units.push("MIIE", "MC", "+MIIEowIBAAKCAQEA", "MIIEowIBAAKCAQEA", "\xe2\x80\x94\xe2\x80\x93BEGIN PRIVATE KEY\xe2\x80\x94\xe2\x80\x93\n");
  // An OpenSSH key's body without armour, and the triggers of the forms a copy writes a key in (2026-12-05: Markdown's escapes,
  // quoted-printable, zero-width characters and soft hyphens, typographic quotes that share their lead byte, a JWK's type).
  // A unit of UTF-8 is 4 bytes long, so that no length a test or the benchmark fills cuts a character.
  units.push("b3BlbnNzaC1rZXktdjE", "ZX", "\\_", "a\\_", "=\n", "=3D", "a\xe2\x80\x8b", "ab\xc2\xad", "x\xe2\x80\x9c", '"kty":', '{"kty":"RSA","d":"');
  // A key cut by line breaks (2026-12-05): the triggers that read a key joined (a vendor word's run ending at a break, a break
  // inside the word or before its connector, a Telegram token's digits or colon at a line's start, a JWT's `eyJ` or header cut),
  // and a run of a key's characters cut at every line, read joined once.
  units.push("sk-\n", "ghp\n_", "g\nhp_", "  -", "7123\n456789:", ".e\nyJ", "a\neyJ.eyJ", "sk-ant-api03-AAAA\n");
  // The same after lines long enough to end a wrapped key's piece (6 bytes or more).
  units.push("abcdsk-\n", "abcdeg\nhp_", "abcdeghp\n_", "ab 123456\n789:", "abcd.e\nyJ", "abcdefgh\neyJ.eyJ", "abcdef\n -");
  // A JWK written as YAML's `kty` (a block mapping's, a list item's, a flow mapping's), a Telegram token's colon that starts a
  // line, a JWT's dot that ends one (2026-12-06).
  units.push("kty: RSA\n", "- kty: EC\n", "{kty: ", "kty: EC, ", "1234567890\n:", "\n:A", "eyJ.\n", "abcdefgh.\neyJ", "eyJhbGciOiJub25lIn0.\neyJ");
  // The readings of recall passes 33 and 34 (2026-12-05 and 06): a decimal list's opening (one every 3 bytes), uuencode's and
  // Ascii85's, an od line's offset, a written NUL after a key's character, a percent-escape encoded again, a named escape, a
  // table cell's borders around a vendor word (16 bytes: a unit of UTF-8 that no length cuts).
  units.push("[1,", "[-1 ,", "begin 644 ", "<~", "\n0000000 ", "a\\x00", "%25", "\\N{", "\xe2\x94\x82 sk-ab   \xe2\x94\x82\n");
  const out: Record<string, Buffer> = {};
  for (const u of units) out[`repeat ${JSON.stringify(u)}`] = fill(u);
  out["run of a"] = fill("a");
  out["run of base64"] = fill("Ab9+/");
  return out;
}

// ---- carriers -------------------------------------------------------------

function crc32(buf: Buffer): number {
  return zlib.crc32(buf);
}

/** A zip of `entries` (deflated unless `stored`). */
export function zip(entries: Record<string, string | Buffer>, stored = false): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const [name, content] of Object.entries(entries)) {
    const data = Buffer.isBuffer(content) ? content : Buffer.from(content);
    const body = stored ? data : zlib.deflateRawSync(data);
    const nameBytes = Buffer.from(name);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(stored ? 0 : 8, 8);
    local.writeUInt32LE(crc32(data), 14);
    local.writeUInt32LE(body.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(nameBytes.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(stored ? 0 : 8, 10);
    central.writeUInt32LE(crc32(data), 16);
    central.writeUInt32LE(body.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(nameBytes.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, nameBytes, body);
    centrals.push(central, nameBytes);
    offset += 30 + nameBytes.length + body.length;
  }
  const cd = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(Object.keys(entries).length, 8);
  end.writeUInt16LE(Object.keys(entries).length, 10);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, cd, end]);
}

/** One 512-byte ustar header: `name`, `size`, `type` ('0' a file, 'x' pax, 'L' GNU long name…), its checksum computed. */
export function tarHeader(name: string, size: number, type = "0", magic: "posix" | "gnu" = "posix", patch: (h: Buffer) => void = () => {}): Buffer {
  const h = Buffer.alloc(512);
  h.write(name.slice(0, 100), 0, "utf8");
  h.write("0000644\0", 100);
  h.write("0001750\0", 108);
  h.write("0001750\0", 116);
  h.write(`${size.toString(8).padStart(11, "0")}\0`, 124);
  h.write("15107413240\0", 136);
  h.write("        ", 148);
  h.write(type, 156);
  h.write(magic === "posix" ? "ustar\u000000" : "ustar  \0", 257, "latin1");
  h.write("agent", 265);
  h.write("agent", 297);
  patch(h);
  let sum = 0;
  for (const byte of h) sum += byte;
  h.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148);
  return h;
}

const padded = (data: Buffer) => Buffer.concat([data, Buffer.alloc((512 - (data.length % 512)) % 512)]);

/** A tar of `files` (name -> content), in POSIX ustar form, ended by two zero blocks; `headers` come before each file's own (pax, GNU long names). */
export function tar(files: Record<string, string | Buffer>, headers: (name: string) => Buffer[] = () => []): Buffer {
  const parts: Buffer[] = [];
  for (const [name, content] of Object.entries(files)) {
    const data = Buffer.isBuffer(content) ? content : Buffer.from(content);
    parts.push(...headers(name), tarHeader(name, data.length), padded(data));
  }
  return Buffer.concat([...parts, Buffer.alloc(1024)]);
}

/** A pax extended header ('x') that gives the next member these records (`path`, `size`…). */
export function paxHeader(records: Record<string, string>): Buffer[] {
  let body = "";
  for (const [key, value] of Object.entries(records)) {
    const rest = ` ${key}=${value}\n`;
    let length = rest.length + 1;
    while (`${length}${rest}`.length !== length) length++;
    body += `${length}${rest}`;
  }
  const data = Buffer.from(body);
  return [tarHeader("./PaxHeaders/x", data.length, "x"), padded(data)];
}

const xmlEscape = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/** Word's document.xml for `text`: each line a paragraph, each line cut into runs of `run` characters (as Word does). */
function documentXml(text: string, run: number, encoding = "UTF-8"): string {
  const paragraphs = text.split("\n").map((line) => {
    const runs = line.match(new RegExp(`[\\s\\S]{1,${run}}`, "g")) ?? [""];
    return `<w:p><w:r><w:rPr><w:b/></w:rPr><w:t xml:space="preserve">${runs.map(xmlEscape).join('</w:t></w:r><w:r w:rsidR="00A1B2C3"><w:t xml:space="preserve">')}</w:t></w:r></w:p>`;
  });
  return `<?xml version="1.0" encoding="${encoding}"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>${paragraphs.join("")}</w:body></w:document>`;
}

/** A docx whose body holds `text` (documentXml). */
export function docx(text: string, run = 7, extra: Record<string, string | Buffer> = {}): Buffer {
  return zip({
    "[Content_Types].xml": '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>',
    "_rels/.rels": '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>',
    "word/document.xml": documentXml(text, run),
    ...extra,
  });
}

/** `text` as UTF-16 with its byte order mark. */
function utf16(text: string, order: "le" | "be"): Buffer {
  const units = Buffer.from(text, "utf16le");
  if (order === "be") units.swap16();
  return Buffer.concat([Buffer.from(order === "le" ? [0xff, 0xfe] : [0xfe, 0xff]), units]);
}

/** A docx whose document.xml is UTF-16 (OOXML allows it; XML then requires the byte order mark). */
export function docxUtf16(text: string, order: "le" | "be"): Buffer {
  return docx("", 7, { "word/document.xml": utf16(documentXml(text, 7, "UTF-16"), order) });
}

/** A docx with an embedded object (word/embeddings/oleObject1.bin, a compound file) whose strings are UTF-16LE, as OLE's are. */
export function docxWithObject(text: string): Buffer {
  const object = cfb({ "\u0001CompObj": Buffer.alloc(76, 1), Contents: Buffer.concat([Buffer.from(text, "utf16le"), Buffer.alloc(64)]) });
  return docx("See the attached object.", 7, { "word/embeddings/oleObject1.bin": object });
}

/**
 * A grayscale little-endian TIFF of `pixels` (8 bits a pixel, one strip)
 * with `text` in an XPComment tag (0x9C9C, BYTE: UTF-16LE with its NUL, as
 * Windows' file properties write it).
 */
export function tiffWithXpComment(text: string, pixels: Buffer = Buffer.alloc(64, 0x80), width = 8): Buffer {
  const comment = Buffer.from(`${text}\0`, "utf16le");
  const tags: [number, number, number, number][] = [];
  const ifdAt = 8;
  const entries = 9;
  const commentAt = ifdAt + 2 + 12 * entries + 4;
  const pixelsAt = commentAt + comment.length + (comment.length % 2);
  const SHORT = 3;
  const LONG = 4;
  tags.push([256, SHORT, 1, width], [257, SHORT, 1, Math.ceil(pixels.length / width)], [258, SHORT, 1, 8], [259, SHORT, 1, 1], [262, SHORT, 1, 1]);
  tags.push([273, LONG, 1, pixelsAt], [278, SHORT, 1, Math.ceil(pixels.length / width)], [279, LONG, 1, pixels.length], [0x9c9c, 1, comment.length, commentAt]);
  const ifd = Buffer.alloc(2 + 12 * entries + 4);
  ifd.writeUInt16LE(entries, 0);
  tags.forEach(([tag, type, count, value], i) => {
    const at = 2 + 12 * i;
    ifd.writeUInt16LE(tag, at);
    ifd.writeUInt16LE(type, at + 2);
    ifd.writeUInt32LE(count, at + 4);
    if (type === SHORT) ifd.writeUInt16LE(value, at + 8);
    else ifd.writeUInt32LE(value, at + 8);
  });
  const header = Buffer.from([0x49, 0x49, 0x2a, 0x00, ifdAt, 0, 0, 0]);
  return Buffer.concat([header, ifd, comment, Buffer.alloc(comment.length % 2), pixels]);
}

/** A PDF with `file` attached (an EmbeddedFile stream, compressed). */
export function pdfAttachment(file: Buffer): Buffer {
  const body = zlib.deflateSync(file);
  return pdf("See the attachment.", false, [Buffer.concat([Buffer.from(`<< /Type /EmbeddedFile /Length ${body.length} /Filter /FlateDecode >>\nstream\n`), body, Buffer.from("\nendstream")])]);
}

/** A PDF whose Info dictionary sits in a compressed object stream, its author `text` in UTF-16BE (a hex string). */
export function pdfObjectStream(text: string): Buffer {
  const objects = Buffer.from(`9 0 << /Author <${utf16(text, "be").toString("hex")}> >>`);
  const body = zlib.deflateSync(objects);
  return pdf("Report", false, [Buffer.concat([Buffer.from(`<< /Type /ObjStm /N 1 /First 4 /Length ${body.length} /Filter /FlateDecode >>\nstream\n`), body, Buffer.from("\nendstream")])]);
}

/** A PDF with XMP metadata in UTF-16LE (XMP allows it, with a byte order mark) holding `text`. */
export function pdfXmpUtf16(text: string): Buffer {
  const xmp = utf16(`<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?><x:xmpmeta xmlns:x="adobe:ns:meta/"><dc:description>${xmlEscape(text)}</dc:description></x:xmpmeta><?xpacket end="w"?>`, "le");
  return pdf("Report", false, [Buffer.concat([Buffer.from(`<< /Type /Metadata /Subtype /XML /Length ${xmp.length} >>\nstream\n`), xmp, Buffer.from("\nendstream")])]);
}

/** A PDF whose Info dictionary's author is `text` in UTF-16BE, as a hex string or a literal one (with its escapes). */
export function pdfInfoUtf16(text: string, form: "hex" | "literal"): Buffer {
  const units = utf16(text, "be");
  const escaped = Buffer.from([...units].flatMap((b) => (b === 0x28 || b === 0x29 || b === 0x5c ? [0x5c, b] : [b])));
  const value = form === "hex" ? Buffer.from(`<${units.toString("hex").toUpperCase()}>`) : Buffer.concat([Buffer.from("("), escaped, Buffer.from(")")]);
  return pdf("Report", false, [Buffer.concat([Buffer.from("<< /Author "), value, Buffer.from(" >>")])]);
}

export function xlsx(text: string): Buffer {
  const lines = text.split("\n");
  return zip({
    "[Content_Types].xml": '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/></Types>',
    "_rels/.rels": '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>',
    "xl/workbook.xml": '<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheets><sheet name="Sheet1" sheetId="1"/></sheets></workbook>',
    "xl/sharedStrings.xml": `<?xml version="1.0" encoding="UTF-8"?><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">${lines.map((l) => `<si><t>${xmlEscape(l)}</t></si>`).join("")}</sst>`,
    "xl/worksheets/sheet1.xml": `<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>${lines.map((_, i) => `<row r="${i + 1}"><c r="A${i + 1}" t="s"><v>${i}</v></c></row>`).join("")}</sheetData></worksheet>`,
  });
}

export function pptx(text: string): Buffer {
  return zip({
    "[Content_Types].xml": '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Override PartName="/ppt/presentation.xml" ContentType="application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml"/></Types>',
    "_rels/.rels": '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="ppt/presentation.xml"/></Relationships>',
    "ppt/presentation.xml": '<?xml version="1.0" encoding="UTF-8"?><p:presentation xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"/>',
    "ppt/slides/slide1.xml": `<?xml version="1.0" encoding="UTF-8"?><p:sld xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><p:cSld><p:spTree><p:sp><p:txBody>${text
      .split("\n")
      .map((l) => `<a:p><a:r><a:t>${xmlEscape(l.slice(0, 9))}</a:t></a:r><a:r><a:t>${xmlEscape(l.slice(9))}</a:t></a:r></a:p>`)
      .join("")}</p:txBody></p:sp></p:spTree></p:cSld></p:sld>`,
  });
}

/** A one-page PDF that shows `text`, each line a TJ array cut into pieces, its content stream deflated unless `plain`. */
export function pdf(text: string, plain = false, extraStreams: Buffer[] = []): Buffer {
  const pdfString = (s: string) => `(${s.replace(/[\\()]/g, "\\$&")})`;
  const ops = text
    .split("\n")
    .map((line, i) => `0 -14 Td [${(line.match(/[\s\S]{1,5}/g) ?? [""]).map(pdfString).join(" -20 ")}] TJ${i === 0 ? "" : ""}`)
    .join("\n");
  const content = Buffer.from(`BT /F1 10 Tf 50 750 Td\n${ops}\nET\n`, "latin1");
  const body = plain ? content : zlib.deflateSync(content);
  const objects: Buffer[] = [
    Buffer.from("<< /Type /Catalog /Pages 2 0 R >>"),
    Buffer.from("<< /Type /Pages /Kids [3 0 R] /Count 1 >>"),
    Buffer.from("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>"),
    Buffer.concat([Buffer.from(`<< /Length ${body.length}${plain ? "" : " /Filter /FlateDecode"} >>\nstream\n`), body, Buffer.from("\nendstream")]),
    Buffer.from("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"),
    ...extraStreams,
  ];
  return pdfOf(objects);
}

/** A PDF of `objects`, numbered from 1 (the first is the catalog), with its cross-reference table. */
export function pdfOf(objects: Buffer[]): Buffer {
  const parts: Buffer[] = [Buffer.from("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "latin1")];
  const offsets: number[] = [];
  let length = parts[0]!.length;
  objects.forEach((o, i) => {
    offsets.push(length);
    const obj = Buffer.concat([Buffer.from(`${i + 1} 0 obj\n`), o, Buffer.from("\nendobj\n")]);
    parts.push(obj);
    length += obj.length;
  });
  const xref = `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, "0")} 00000 n \n`).join("")}trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${length}\n%%EOF\n`;
  parts.push(Buffer.from(xref));
  return Buffer.concat(parts);
}

export function pngChunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(4);
  head.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, "latin1"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(zlib.crc32(body));
  return Buffer.concat([head, body, crc]);
}

/** A PNG with a text chunk before its end: tEXt, zTXt or iTXt (compressed). */
export function pngWithText(text: string, kind: "tEXt" | "zTXt" | "iTXt" = "tEXt", seed = 1): Buffer {
  const png = makePng(8, (i) => i * 31 + seed);
  const iend = png.length - 12;
  const data =
    kind === "tEXt"
      ? Buffer.from(`Comment\0${text}`, "latin1")
      : kind === "zTXt"
        ? Buffer.concat([Buffer.from("Comment\0\0", "latin1"), zlib.deflateSync(Buffer.from(text, "latin1"))])
        : Buffer.concat([Buffer.from("Description\0\x01\0en\0\0", "latin1"), zlib.deflateSync(Buffer.from(text, "utf8"))]);
  return Buffer.concat([png.subarray(0, iend), pngChunk(kind, data), png.subarray(iend)]);
}

/**
 * A phone's JPEG: a primary image whose APP2 MPF index (CIPA DC-007) lists
 * `more` (a gain map, a depth map), which follow its end-of-image marker;
 * `after`, bytes after them.
 */
export function jpegMpf(more: Buffer[], opts: { comment?: string; after?: Buffer } = {}): Buffer {
  const entries = 1 + more.length;
  // "MPF\0", a little-endian TIFF header, an IFD of two entries (version, MPEntry), no next IFD, then the entries.
  const mpf = Buffer.alloc(4 + 8 + 2 + 24 + 4 + 16 * entries);
  mpf.write("MPF\0", 0, "latin1");
  mpf.write("II*\0", 4, "latin1");
  mpf.writeUInt32LE(8, 8);
  mpf.writeUInt16LE(2, 12);
  mpf.writeUInt16LE(0xb000, 14);
  mpf.writeUInt16LE(7, 16);
  mpf.writeUInt32LE(4, 18);
  mpf.write("0100", 22, "latin1");
  mpf.writeUInt16LE(0xb002, 26);
  mpf.writeUInt16LE(7, 28);
  mpf.writeUInt32LE(16 * entries, 30);
  mpf.writeUInt32LE(38, 34);
  const primary = jpeg({ comment: opts.comment, app2: mpf });
  const tiffAt = primary.indexOf("MPF\0", 0, "latin1") + 4;
  const entry = (k: number, size: number, offset: number) => {
    primary.writeUInt32LE(k === 0 ? 0x030000 : 0, tiffAt + 38 + 16 * k);
    primary.writeUInt32LE(size, tiffAt + 38 + 16 * k + 4);
    primary.writeUInt32LE(offset, tiffAt + 38 + 16 * k + 8);
  };
  entry(0, primary.length, 0);
  let at = primary.length;
  more.forEach((image, k) => {
    entry(k + 1, image.length, at - tiffAt);
    at += image.length;
  });
  return Buffer.concat([primary, ...more, opts.after ?? Buffer.alloc(0)]);
}

/** A minimal JPEG (SOI, JFIF APP0, optional APP2 and COM, quantisation table, frame, scan, EOI). */
export function jpeg(opts: { comment?: string; exifText?: string; after?: Buffer; app2?: Buffer } = {}): Buffer {
  const seg = (marker: number, data: Buffer) => {
    const head = Buffer.from([0xff, marker, 0, 0]);
    head.writeUInt16BE(data.length + 2, 2);
    return Buffer.concat([head, data]);
  };
  const parts: Buffer[] = [Buffer.from([0xff, 0xd8]), seg(0xe0, Buffer.from("JFIF\0\x01\x01\0\0\x01\0\x01\0\0", "latin1"))];
  if (opts.exifText) parts.push(seg(0xe1, Buffer.concat([Buffer.from("Exif\0\0II*\0", "latin1"), Buffer.from(opts.exifText, "latin1")])));
  if (opts.app2) parts.push(seg(0xe2, opts.app2));
  if (opts.comment) parts.push(seg(0xfe, Buffer.from(opts.comment, "latin1")));
  parts.push(seg(0xdb, Buffer.concat([Buffer.from([0]), Buffer.alloc(64, 1)])));
  parts.push(seg(0xc0, Buffer.from([8, 0, 8, 0, 8, 1, 1, 0x11, 0])));
  parts.push(seg(0xda, Buffer.from([1, 1, 0, 0, 63, 0])));
  parts.push(Buffer.from([0x12, 0x34, 0xff, 0x00, 0x56, 0xff, 0xd0, 0x78]));
  parts.push(Buffer.from([0xff, 0xd9]));
  if (opts.after) parts.push(opts.after);
  return Buffer.concat(parts);
}

/** An MP3: an ID3v2.3 tag with a comment frame (UTF-16 with a BOM when `utf16`), then a few MPEG frames. */
export function mp3(comment: string, utf16 = true, frames = 3): Buffer {
  const text = utf16 ? Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(comment, "utf16le")]) : Buffer.from(comment, "latin1");
  const frameData = Buffer.concat([Buffer.from([utf16 ? 1 : 0]), Buffer.from("eng", "latin1"), utf16 ? Buffer.from([0xff, 0xfe, 0, 0]) : Buffer.from([0]), text]);
  const frame = Buffer.concat([Buffer.from("COMM", "latin1"), Buffer.from([0, 0, 0, 0]), Buffer.from([0, 0]), frameData]);
  frame.writeUInt32BE(frameData.length, 4);
  const title = Buffer.concat([Buffer.from("TIT2", "latin1"), Buffer.from([0, 0, 0, 6, 0, 0, 0]), Buffer.from("Track", "latin1")]);
  const tag = Buffer.concat([title, frame]);
  const size = tag.length;
  const header = Buffer.from([0x49, 0x44, 0x33, 3, 0, 0, (size >> 21) & 0x7f, (size >> 14) & 0x7f, (size >> 7) & 0x7f, size & 0x7f]);
  // MPEG-1 Layer III, 128 kbit/s, 44.1 kHz: 417-byte frames.
  const mpegFrame = Buffer.concat([Buffer.from([0xff, 0xfb, 0x90, 0x64]), Buffer.alloc(413, 0x55)]);
  return Buffer.concat([header, tag, ...Array.from({ length: frames }, () => mpegFrame)]);
}

const le16 = (n: number) => Buffer.from([n & 0xff, n >> 8]);
const le32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
};
const be32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};
const riffChunk = (id: string, data: Buffer) => Buffer.concat([Buffer.from(id, "latin1"), le32(data.length), data, Buffer.alloc(data.length % 2)]);
const riff = (form: string, chunks: Buffer[]) => {
  const body = Buffer.concat([Buffer.from(form, "latin1"), ...chunks]);
  return Buffer.concat([Buffer.from("RIFF"), le32(body.length), body]);
};
const isoBox = (type: string, data: Buffer) => Buffer.concat([be32(8 + data.length), Buffer.from(type, "latin1"), data]);

/** A 1x1 GIF with a comment extension (its text in sub-blocks of up to 255 bytes). */
export function gif(comment: string): Buffer {
  const text = Buffer.from(comment, "latin1");
  const blocks: Buffer[] = [];
  for (let at = 0; at < text.length; at += 255) {
    const block = text.subarray(at, at + 255);
    blocks.push(Buffer.from([block.length]), block);
  }
  return Buffer.concat([
    Buffer.from("GIF89a"),
    le16(1),
    le16(1),
    Buffer.from([0x80, 0, 0, 0, 0, 0, 255, 255, 255]),
    Buffer.from([0x21, 0xfe]),
    ...blocks,
    Buffer.from([0, 0x2c]),
    le16(0),
    le16(0),
    le16(1),
    le16(1),
    Buffer.from([0, 2, 2, 0x44, 0x01, 0, 0x3b]),
  ]);
}

/** A lossless 1x1 WebP with an EXIF chunk. */
export function webp(exifText: string): Buffer {
  return riff("WEBP", [riffChunk("VP8L", Buffer.from([0x2f, 0, 0, 0, 0x10, 0x07, 0x10, 0x11, 0x11, 0x88, 0x88, 0xfe, 0x07, 0])), riffChunk("EXIF", Buffer.from(exifText, "latin1"))]);
}

/** A 1x1 24-bit BMP. */
export function bmp(): Buffer {
  const dib = Buffer.concat([le32(40), le32(1), le32(1), le16(1), le16(24), le32(0), le32(4), le32(0), le32(0), le32(0), le32(0)]);
  return Buffer.concat([Buffer.from("BM"), le32(14 + 40 + 4), le32(0), le32(54), dib, Buffer.from([0, 0, 255, 0])]);
}

/** A WAV with a LIST/INFO comment and 64 samples. */
/** A WAV whose INFO comment is `comment`; `samples` of audio, before the comment when `infoLast` (as some editors write it). */
export function wav(comment: string, samples: Buffer = Buffer.alloc(64, 0x80), infoLast = false): Buffer {
  const fmt = Buffer.concat([le16(1), le16(1), le32(8000), le32(8000), le16(1), le16(8)]);
  const info = riffChunk("LIST", Buffer.concat([Buffer.from("INFO"), riffChunk("ICMT", Buffer.from(`${comment}\0`, "latin1"))]));
  const data = riffChunk("data", samples);
  return riff("WAVE", infoLast ? [riffChunk("fmt ", fmt), data, info] : [riffChunk("fmt ", fmt), info, data]);
}

/**
 * An MP4: ftyp, a moov with an iTunes-style comment, and media data; with
 * `moovLast` the moov follows the media data, as a camera writes it, and
 * `moovPadding` bytes make it that much larger.
 */
export function mp4(comment: string, media: Buffer = Buffer.alloc(256, 7), moovLast = false, moovPadding = 100): Buffer {
  const data = isoBox("data", Buffer.concat([be32(1), be32(0), Buffer.from(comment, "utf8")]));
  const meta = isoBox("meta", Buffer.concat([be32(0), isoBox("hdlr", Buffer.alloc(25)), isoBox("ilst", isoBox("\xa9cmt", data))]));
  const moov = isoBox("moov", Buffer.concat([isoBox("mvhd", Buffer.alloc(moovPadding)), isoBox("udta", meta)]));
  const ftyp = isoBox("ftyp", Buffer.concat([Buffer.from("isom"), be32(0), Buffer.from("isommp41")]));
  return Buffer.concat(moovLast ? [ftyp, isoBox("mdat", media), moov] : [ftyp, moov, isoBox("mdat", media)]);
}

/** A FLAC file: its STREAMINFO, a Vorbis comment holding `comment`, more `blocks` if given, then `audio` as its frames. */
export function flac(comment: string, audio: Buffer = Buffer.concat([Buffer.from([0xff, 0xf8, 0x69, 0x08]), Buffer.alloc(600, 0x33)]), blocks: [number, Buffer][] = []): Buffer {
  const text = Buffer.from(`COMMENT=${comment}`);
  const vorbis = Buffer.concat([le32(3), Buffer.from("lib"), le32(1), le32(text.length), text]);
  const all: [number, Buffer][] = [[0, Buffer.alloc(34, 0x11)], [4, vorbis], ...blocks];
  const encoded = all.map(([type, body], i) => Buffer.concat([Buffer.from([(i === all.length - 1 ? 0x80 : 0) | type, body.length >> 16, (body.length >> 8) & 0xff, body.length & 0xff]), body]));
  return Buffer.concat([Buffer.from("fLaC"), ...encoded, audio]);
}

/** A Matroska element: its ID, its size (8 bytes; all bits set when `unknown`), its data. */
function ebml(id: number, body: Buffer, unknown = false): Buffer {
  const idBytes = Buffer.from(id.toString(16).padStart(id > 0xffffff ? 8 : id > 0xffff ? 6 : id > 0xff ? 4 : 2, "0"), "hex");
  const size = Buffer.alloc(8);
  if (unknown) size.fill(0xff, 1);
  else size.writeBigUInt64BE(BigInt(body.length));
  size[0] = 0x01;
  return Buffer.concat([idBytes, size, body]);
}

/**
 * A WebM file as a browser's MediaRecorder writes it (a segment and clusters
 * of unknown size), with `comment` in its Tags after the clusters, or, with
 * `sized`, every size known.
 */
export function webm(comment: string, { sized = false, blocks = [Buffer.alloc(500, 0x77), Buffer.alloc(300, 0x88)] }: { sized?: boolean; blocks?: Buffer[] } = {}): Buffer {
  const header = ebml(0x1a45dfa3, Buffer.concat([ebml(0x4286, Buffer.from([1])), ebml(0x4282, Buffer.from("webm"))]));
  const info = ebml(0x1549a966, ebml(0x7ba9, Buffer.from("a recording")));
  const cluster = ebml(0x1f43b675, Buffer.concat([ebml(0xe7, Buffer.from([0])), ...blocks.map((b) => ebml(0xa3, b))]), !sized);
  const tags = ebml(0x1254c367, ebml(0x7373, ebml(0x67c8, Buffer.concat([ebml(0x45a3, Buffer.from("COMMENT")), ebml(0x4487, Buffer.from(comment))]))));
  return Buffer.concat([header, ebml(0x18538067, Buffer.concat([info, cluster, tags]), !sized)]);
}

/** One Ogg page of stream `serial`: `lacing` values and the bytes they measure (no CRC: nothing here checks it). */
function oggPage(serial: number, sequence: number, flags: number, lacing: number[], body: Buffer): Buffer {
  const h = Buffer.alloc(27 + lacing.length);
  h.write("OggS", 0, "latin1");
  h[5] = flags;
  h.writeUInt32LE(serial, 14);
  h.writeUInt32LE(sequence, 18);
  h[26] = lacing.length;
  Buffer.from(lacing).copy(h, 27);
  return Buffer.concat([h, body]);
}

/**
 * `packets` laid out in Ogg pages as encoders do: each header packet on
 * pages of its own, at most `pageBytes` (a multiple of 255) per page, a
 * packet longer than that continued on the next page.
 */
export function oggPages(serial: number, packets: Buffer[], pageBytes = 255 * 255): Buffer {
  const pages: Buffer[] = [];
  let sequence = 0;
  for (const packet of packets) {
    const lacing = [...Array<number>(Math.floor(packet.length / 255)).fill(255), packet.length % 255];
    for (let k = 0, at = 0; k < lacing.length; ) {
      const take = lacing.slice(k, Math.min(lacing.length, k + 255, k + pageBytes / 255));
      const bytes = take.reduce((a, b) => a + b, 0);
      pages.push(oggPage(serial, sequence, (sequence === 0 ? 0x02 : 0) | (k > 0 ? 0x01 : 0), take, packet.subarray(at, at + bytes)));
      sequence++;
      k += take.length;
      at += bytes;
    }
  }
  return Buffer.concat(pages);
}

/**
 * An Ogg Opus or Vorbis file whose tags hold `comment`, then audio packets.
 * `cut`: pages of 255 bytes, the comment starting so that the middle of it
 * falls on a page boundary (a scan of the bytes as they are reads it cut by
 * a page header).
 */
export function ogg(comment: string, { codec = "opus", cut = false, audio = [Buffer.alloc(300, 0x5a), Buffer.alloc(200, 0xa5)] }: { codec?: "opus" | "vorbis"; cut?: boolean; audio?: Buffer[] } = {}): Buffer {
  const text = Buffer.from(`COMMENT=${comment}`);
  const before = codec === "opus" ? 8 + 4 + 4 : 7 + 4 + 4 + 4;
  const vendor = Buffer.alloc(cut ? Math.max(0, 255 - before - Math.floor(text.length / 2)) : 11, 0x76);
  const tags = Buffer.concat([Buffer.from(codec === "opus" ? "OpusTags" : "\x03vorbis", "latin1"), le32(vendor.length), vendor, le32(1), le32(text.length), text, Buffer.from(codec === "opus" ? [] : [1])]);
  const head =
    codec === "opus"
      ? Buffer.concat([Buffer.from("OpusHead"), Buffer.from([1, 1, 0x38, 0x01]), le32(48000), Buffer.from([0, 0, 0])])
      : Buffer.concat([Buffer.from("\x01vorbis", "latin1"), le32(0), Buffer.from([1]), le32(44100), le32(0), le32(128000), le32(0), Buffer.from([0xb8, 1])]);
  const headers = codec === "opus" ? [head, tags] : [head, tags, Buffer.from("\x05vorbis\x00setup", "latin1")];
  return oggPages(0x4d4f, [...headers, ...audio], cut ? 255 : 255 * 255);
}

const stream = (dict: string, body: Buffer) => Buffer.concat([Buffer.from(`<< ${dict} /Length ${body.length} >>\nstream\n`), body, Buffer.from("\nendstream")]);
const hex = (n: number, bytes: number) => n.toString(16).toUpperCase().padStart(2 * bytes, "0");

/** How a PDF generator lays out its lines of text (pdfSubsetFont). */
export interface SubsetFontLayout {
  /** 2: Identity-H with hex strings (Chrome, WeasyPrint); 1: a byte per glyph in literal strings with escapes (LibreOffice). */
  codes?: 1 | 2;
  /** The page names its fonts in an object of their own. */
  indirect?: boolean;
  /** The font dictionaries and that object lie in a compressed object stream (pdf-lib, WeasyPrint). */
  objectStream?: boolean;
  /**
   * "tj": each line a TJ array cut into pieces, moved by Td; "glyphs": a glyph per Tj, each placed by `dx 0 Td` (Chrome, wkhtmltopdf);
   * "cm": each line in q/Q, placed by cm, at `0 0 Td` (matplotlib); "cells": each line a table row whose cells (cut at `|`) are a
   * text object each, placed by Tm at the row's height (Chrome's tables); "pieces": each line's pieces (cut at `|`) placed by a Tm
   * each where the one before ends, 16 pt at 0.6 em a glyph (pdfkit and jsPDF: a bold prefix, a highlighted word, a font fallback).
   */
  lines?: "tj" | "glyphs" | "cm" | "cells" | "pieces";
  /** The lines spread over this many pages, each page's stream opening with Chrome's `0.24 0 0 -0.24 0 792 cm` outside any q/Q. */
  pages?: number;
  /** Each line in a content stream of its own (PyMuPDF). */
  streamPerLine?: boolean;
  /** The map gives the space glyph a tab (wkhtmltopdf). */
  spaceAsTab?: boolean;
  /** The map's stream says /Length1, as a font program's does (jsPDF). */
  length1?: boolean;
  /** Streams without compression (jsPDF's default; a mutation test reaches the map and the strings). */
  plain?: boolean;
  seed?: number;
}

/**
 * A PDF that draws `text` as an embedded subset font does (Chrome and Skia,
 * WeasyPrint, LibreOffice, Word, matplotlib, PyMuPDF, jsPDF): glyph numbers
 * in a shuffled order, which only the font's ToUnicode map turns back into
 * letters (its bfchar, bfrange and bfrange-array entries), laid out as
 * `layout` says.
 */
export function pdfSubsetFont(text: string, layout: SubsetFontLayout = {}): Buffer {
  const codes = layout.codes ?? 2;
  const next = rng(layout.seed ?? 5);
  const chars = [...new Set(text.replace(layout.lines === "cells" || layout.lines === "pieces" ? /[\n|]/g : /\n/g, ""))];
  const numbers = chars.map((_, i) => i + 3);
  for (let i = numbers.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [numbers[i], numbers[j]] = [numbers[j]!, numbers[i]!];
  }
  const codeOf = new Map(chars.map((c, i) => [c, numbers[i]!]));
  const show = (piece: string) => {
    const glyphs = [...piece].map((c) => codeOf.get(c)!);
    if (codes === 2) return `<${glyphs.map((g) => hex(g, 2)).join("")}>`;
    return `(${glyphs.map((g) => (g === 40 || g === 41 || g === 92 ? `\\${String.fromCharCode(g)}` : g < 32 || g > 126 ? `\\${g.toString(8).padStart(3, "0")}` : String.fromCharCode(g))).join("")})`;
  };
  const pieces = (line: string) => `[${(line.match(/[\s\S]{1,5}/g) ?? []).map(show).join(" -20 ")}] TJ`;
  const layOut = (line: string, i: number) => {
    if (layout.lines === "glyphs") return `BT /F7 10 Tf 1 0 0 -1 8 ${18 + 14 * i} Tm\n${[...line].map(show).join(" Tj\n6.4 0 Td ")} Tj\nET`;
    if (layout.lines === "cm") return `q\n1 0 -0 1 50 ${750 - 14 * i} cm\nBT\n/F7 10 Tf\n0 0 Td\n${pieces(line)}\nET\nQ`;
    if (layout.lines === "pieces") {
      const placed = line.split("|").map((piece, k, all) => `1 0 0 -1 ${(11 + 9.6 * all.slice(0, k).join("").length).toFixed(2)} ${1063551 + 19 * i} Tm\n${show(piece)} Tj`);
      return `BT\n/F7 16 Tf\n${placed.join("\n")}\nET`;
    }
    if (layout.lines === "cells") return line.split("|").map((cell, c) => `BT\n/F7 16 Tf\n1 0 0 -1 ${11 + 120 * c} ${1063551 + 19 * i} Tm\n${show(cell)} Tj\nET`).join("\n");
    return `${i === 0 ? "BT /F7 10 Tf 50 750 Td\n" : ""}0 -14 Td ${pieces(line)}`;
  };
  const ending = layout.lines === "glyphs" || layout.lines === "cm" || layout.lines === "cells" || layout.lines === "pieces" ? "" : "\nET";
  const all = text.split("\n");
  const perPage = Math.ceil(all.length / (layout.pages ?? 1));
  const pageLines = Array.from({ length: layout.pages ?? 1 }, (_, p) => all.slice(p * perPage, (p + 1) * perPage).map(layOut));
  // Chrome's page transform, never restored: only a reader that starts each page anew keeps its lines apart.
  const opening = layout.pages ? ".23999999 0 0 -.23999999 0 792 cm\nq\n3.125 0 0 3.125 115.625 -3323340.5 cm\n" : "";
  const closing = layout.pages ? "\nQ" : "";
  // One stream per page, or per line; the first stream of a page opens it, the last closes it.
  const pageContents = pageLines.map((lines) =>
    layout.streamPerLine ? lines.map((l, i) => (i === 0 ? opening : "") + l + (i === lines.length - 1 ? ending + closing : "")) : [opening + lines.join("\n") + ending + closing],
  );
  const contents = pageContents.flat();
  const entries = chars.map((c, i) => ({ code: hex(numbers[i]!, codes), to: hex(c === " " && layout.spaceAsTab ? 9 : c.charCodeAt(0), 2) }));
  const third = Math.ceil(entries.length / 3);
  const bfchar = entries.slice(0, third).map((e) => `<${e.code}> <${e.to}>`);
  const bfrange = entries.slice(third, 2 * third).map((e) => `<${e.code}> <${e.code}> <${e.to}>`);
  const bfarray = entries.slice(2 * third).map((e) => `<${e.code}> <${e.code}> [<${e.to}>]`);
  const cmap = [
    "/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def",
    "/CMapName /Adobe-Identity-UCS def\n/CMapType 2 def",
    `1 begincodespacerange\n<${hex(0, codes)}> <${hex(codes === 2 ? 0xffff : 0xff, codes)}>\nendcodespacerange`,
    `${bfchar.length} beginbfchar\n${bfchar.join("\n")}\nendbfchar`,
    `${bfrange.length + bfarray.length} beginbfrange\n${[...bfrange, ...bfarray].join("\n")}\nendbfrange`,
    "endcmap\nCMapName currentdict /CMap defineresource pop\nend\nend\n",
  ].join("\n");
  const font =
    codes === 2
      ? "<< /Type /Font /Subtype /Type0 /BaseFont /AAAAAA+DejaVuSansMono /Encoding /Identity-H /DescendantFonts [7 0 R] /ToUnicode 6 0 R >>"
      : "<< /Type /Font /Subtype /TrueType /BaseFont /BAAAAA+DejaVuSansMono /FirstChar 0 /LastChar 255 /FontDescriptor 7 0 R /ToUnicode 6 0 R >>";
  const descendant = codes === 2 ? "<< /Type /Font /Subtype /CIDFontType2 /BaseFont /AAAAAA+DejaVuSansMono /CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> /DW 602 >>" : "<< /Type /FontDescriptor /FontName /BAAAAA+DejaVuSansMono /Flags 5 >>";
  const resources = layout.indirect || layout.objectStream ? "/Font 8 0 R" : "/Font << /F7 5 0 R >>";
  const packed = (dict: string, body: string | Buffer) => (layout.plain ? stream(dict, Buffer.from(body)) : stream(`${dict} /Filter /FlateDecode`, zlib.deflateSync(body)));
  // Content streams: object 4, then 10 on; the first page is object 3, the others follow the streams.
  const contentIds = contents.map((_, i) => (i === 0 ? 4 : 9 + i));
  const pageIds = pageContents.map((_, p) => (p === 0 ? 3 : 9 + contents.length + p));
  let streamAt = 0;
  const pageObjects = pageContents.map((streams) => {
    const ids = contentIds.slice(streamAt, (streamAt += streams.length));
    return Buffer.from(`<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents [${ids.map((id) => `${id} 0 R`).join(" ")}] /Resources << ${resources} >> >>`);
  });
  const objects = [
    Buffer.from("<< /Type /Catalog /Pages 2 0 R >>"),
    Buffer.from(`<< /Type /Pages /Kids [${pageIds.map((id) => `${id} 0 R`).join(" ")}] /Count ${pageIds.length} >>`),
    pageObjects[0]!,
    packed("", contents[0]!),
    Buffer.from(font),
    packed(layout.length1 ? "/Length1 900" : "", cmap),
    Buffer.from(descendant),
    Buffer.from("<< /F7 5 0 R >>"),
    Buffer.from("null"),
    ...contents.slice(1).map((c) => packed("", c)),
    ...pageObjects.slice(1),
  ];
  if (layout.objectStream) {
    // Objects 5, 7 and 8 move into object 9, a compressed object stream; their places hold null.
    const inside = [5, 7, 8].map((n) => objects[n - 1]!.toString());
    let offset = 0;
    const index = inside.map((body, k) => {
      const at = offset;
      offset += body.length + 1;
      return `${[5, 7, 8][k]} ${at}`;
    });
    const head = `${index.join(" ")}\n`;
    objects[8] = packed(`/Type /ObjStm /N 3 /First ${head.length}`, head + inside.join("\n") + "\n");
    for (const n of [5, 7, 8]) objects[n - 1] = Buffer.from("null");
  }
  return pdfOf(objects);
}

/** ASCII85 as PDF 32000-1 7.4.3 writes it: `z` for a whole zero group, a short last group, `~>`. */
export function encode85(bytes: Buffer): string {
  let out = "";
  for (let i = 0; i < bytes.length; i += 4) {
    const n = Math.min(4, bytes.length - i);
    const group = Buffer.alloc(4);
    bytes.copy(group, 0, i, i + n);
    let value = group.readUInt32BE(0);
    if (value === 0 && n === 4) {
      out += "z";
      continue;
    }
    const digits: string[] = [];
    for (let k = 0; k < 5; k++) {
      digits.unshift(String.fromCharCode(33 + (value % 85)));
      value = Math.floor(value / 85);
    }
    out += digits.slice(0, n + 1).join("");
  }
  return `${out}~>`;
}

/** A PDF whose text is in a content stream filtered [/ASCII85Decode /FlateDecode]. */
export function pdfAscii85(text: string): Buffer {
  const body = encode85(zlib.deflateSync(Buffer.from(`BT (${text.replace(/[\\()]/g, "\\$&")}) Tj ET`, "latin1")));
  return pdf("Report", false, [Buffer.from(`<< /Length ${body.length} /Filter [/ASCII85Decode /FlateDecode] >>\nstream\n${body}\nendstream`, "latin1")]);
}

// ---- compound files (.doc, .xls, .ppt) and RTF ----------------------------

const CFB_END = 0xfffffffe;
const CFB_FREE = 0xffffffff;

/** How `cfb` lays out a compound file. */
export interface CfbLayout {
  /** Sectors of 512 bytes (version 3, what Office writes) or 4096 (version 4). */
  version?: 3 | 4;
  /** Lay the sectors and mini sectors after the FAT out in an order shuffled from this seed, as a file saved over and over has them. */
  shuffle?: number;
  /** Changes the FAT (each sector's next) and mini FAT before they are written; `chains` gives each stream's sectors by name ("" the directory, "\0mini" the mini stream, "mini:NAME" a small stream's mini sectors). */
  patch?: (fat: number[], miniFat: number[], chains: Record<string, number[]>) => void;
  /** Directory entries of no stream (type 0) after the streams'. */
  emptyEntries?: number;
  /** Sets the root entry's size (the mini stream's) to this. */
  rootSize?: number;
}

/**
 * A compound file ([MS-CFB]) holding `streams` (name -> bytes) under its
 * root: streams under 4096 bytes in the mini stream, the others in sectors
 * of their own, the FAT listed by the header's DIFAT and, past 109 FAT
 * sectors, by DIFAT sectors; the directory's entries chained as right
 * siblings (a tree olefile reads).
 */
export function cfb(streams: Record<string, Buffer>, layout: CfbLayout = {}): Buffer {
  const version = layout.version ?? 3;
  const size = version === 4 ? 4096 : 512;
  const perSector = size / 4;
  const names = Object.keys(streams);
  const small = names.filter((n) => streams[n]!.length < 4096);
  const big = names.filter((n) => streams[n]!.length >= 4096);
  const next = rng(layout.shuffle ?? 0);
  const shuffled = (count: number) => {
    const order = Array.from({ length: count }, (_, i) => i);
    if (layout.shuffle !== undefined) {
      for (let i = count - 1; i > 0; i--) {
        const j = Math.floor(next() * (i + 1));
        [order[i], order[j]] = [order[j]!, order[i]!];
      }
    }
    return order;
  };
  // The mini stream: each small stream's 64-byte sectors, placed in a shuffled order.
  const miniCount = small.reduce((n, name) => n + Math.ceil(streams[name]!.length / 64), 0);
  const miniOrder = shuffled(miniCount);
  const miniChains: Record<string, number[]> = {};
  let m = 0;
  for (const name of small) miniChains[name] = Array.from({ length: Math.ceil(streams[name]!.length / 64) }, () => miniOrder[m++]!);
  const miniStream = Buffer.alloc(miniCount * 64);
  for (const name of small) miniChains[name]!.forEach((at, k) => streams[name]!.copy(miniStream, at * 64, k * 64, (k + 1) * 64));
  const miniFat = Array<number>(Math.ceil(miniCount / perSector) * perSector).fill(CFB_FREE);
  for (const chain of Object.values(miniChains)) chain.forEach((at, k) => (miniFat[at] = k + 1 < chain.length ? chain[k + 1]! : CFB_END));
  const entries = 1 + names.length + (layout.emptyEntries ?? 0);
  const counts: [string, number][] = [
    ["", Math.ceil((entries * 128) / size)],
    ["\0minifat", miniFat.length / perSector],
    ["\0mini", Math.ceil(miniStream.length / size)],
    ...big.map((name): [string, number] => [name, Math.ceil(streams[name]!.length / size)]),
  ];
  const data = counts.reduce((n, [, c]) => n + c, 0);
  // FAT sectors (and DIFAT sectors past the header's 109 entries) until they cover themselves and the data.
  let fatCount = 1;
  let difatCount = 0;
  for (;;) {
    difatCount = Math.max(0, Math.ceil((fatCount - 109) / (perSector - 1)));
    if (fatCount * perSector >= fatCount + difatCount + data) break;
    fatCount++;
  }
  const first = fatCount + difatCount;
  const order = shuffled(data).map((i) => first + i);
  const chains: Record<string, number[]> = {};
  let d = 0;
  for (const [name, count] of counts) chains[name] = order.slice(d, (d += count));
  const fat = Array<number>(fatCount * perSector).fill(CFB_FREE);
  for (let i = 0; i < fatCount; i++) fat[i] = 0xfffffffd;
  for (let i = fatCount; i < first; i++) fat[i] = 0xfffffffc;
  for (const chain of Object.values(chains)) chain.forEach((at, k) => (fat[at] = k + 1 < chain.length ? chain[k + 1]! : CFB_END));
  layout.patch?.(fat, miniFat, { ...chains, ...Object.fromEntries(Object.entries(miniChains).map(([n, c]) => [`mini:${n}`, c])) });

  const file = Buffer.alloc((1 + first + data) * size);
  const sectorAt = (n: number) => (n + 1) * size;
  const place = (chain: number[], bytes: Buffer) => chain.forEach((at, k) => bytes.copy(file, sectorAt(at), k * size, (k + 1) * size));
  const u32s = (values: number[]) => {
    const b = Buffer.alloc(values.length * 4);
    values.forEach((v, i) => b.writeUInt32LE(v >>> 0, i * 4));
    return b;
  };
  for (let i = 0; i < fatCount; i++) u32s(fat.slice(i * perSector, (i + 1) * perSector)).copy(file, sectorAt(i));
  // The FAT sectors' numbers: 109 in the header, the rest in DIFAT sectors, each ending with the next one's number.
  const fatNumbers = Array.from({ length: fatCount }, (_, i) => i);
  for (let k = 0; k < difatCount; k++) {
    const listed = fatNumbers.slice(109 + k * (perSector - 1), 109 + (k + 1) * (perSector - 1));
    const entries = [...listed, ...Array<number>(perSector - 1 - listed.length).fill(CFB_FREE), k + 1 < difatCount ? fatCount + k + 1 : CFB_END];
    u32s(entries).copy(file, sectorAt(fatCount + k));
  }
  place(chains["\0minifat"]!, u32s(miniFat));
  place(chains["\0mini"]!, miniStream);
  for (const name of big) place(chains[name]!, streams[name]!);
  // The directory: the root, whose child is the first stream; each stream's right sibling is the next.
  const directory = Buffer.alloc(chains[""]!.length * size);
  const entry = (i: number, name: string, type: number, start: number, length: number, right: number, child: number) => {
    const at = i * 128;
    const nameBytes = Buffer.from(`${name}\0`, "utf16le");
    nameBytes.copy(directory, at, 0, 64);
    directory.writeUInt16LE(Math.min(64, nameBytes.length), at + 64);
    directory[at + 66] = type;
    directory[at + 67] = 1;
    directory.writeUInt32LE(CFB_FREE, at + 68);
    directory.writeUInt32LE(right >>> 0, at + 72);
    directory.writeUInt32LE(child >>> 0, at + 76);
    directory.writeUInt32LE(start >>> 0, at + 116);
    directory.writeUInt32LE(length >>> 0, at + 120);
  };
  for (let i = 0; i < directory.length / 128; i++) entry(i, "", 0, 0, 0, CFB_FREE, CFB_FREE);
  entry(0, "Root Entry", 5, miniCount > 0 ? chains["\0mini"]![0]! : CFB_END, layout.rootSize ?? miniStream.length, CFB_FREE, names.length > 0 ? 1 : CFB_FREE);
  names.forEach((name, i) => {
    const chain = streams[name]!.length < 4096 ? miniChains[name]! : chains[name]!;
    entry(i + 1, name, 2, streams[name]!.length === 0 ? CFB_END : chain[0]!, streams[name]!.length, i + 1 < names.length ? i + 2 : CFB_FREE, CFB_FREE);
  });
  place(chains[""]!, directory);

  const h = Buffer.alloc(512);
  Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]).copy(h);
  h.writeUInt16LE(0x3e, 24);
  h.writeUInt16LE(version, 26);
  h.writeUInt16LE(0xfffe, 28);
  h.writeUInt16LE(version === 4 ? 12 : 9, 30);
  h.writeUInt16LE(6, 32);
  h.writeUInt32LE(version === 4 ? chains[""]!.length : 0, 40);
  h.writeUInt32LE(fatCount, 44);
  h.writeUInt32LE(chains[""]![0]!, 48);
  h.writeUInt32LE(4096, 56);
  h.writeUInt32LE(miniFat.length > 0 ? chains["\0minifat"]![0]! : CFB_END, 60);
  h.writeUInt32LE(miniFat.length / perSector, 64);
  h.writeUInt32LE(difatCount > 0 ? fatCount : CFB_END, 68);
  h.writeUInt32LE(difatCount, 72);
  for (let i = 0; i < 109; i++) h.writeUInt32LE(i < fatCount ? i : CFB_FREE, 76 + 4 * i);
  h.copy(file, 0);
  return file;
}

/**
 * A Word 97 document: a WordDocument stream of more than 4 KiB (in sectors
 * of its own, in a shuffled order) whose text is UTF-16LE, laid so that its
 * middle falls on a sector boundary; a 1Table and a summary stream in the
 * mini stream.
 */
export function wordDoc(text: string, layout: CfbLayout = { shuffle: 3 }): Buffer {
  const units = Buffer.from(text, "utf16le");
  // The FIB's first bytes (wIdent 0xA5EC), then zeros up to where the text's middle meets the end of the stream's second sector.
  const lead = Math.max(32, 1024 - Math.floor(units.length / 4) * 2);
  const fib = Buffer.alloc(lead);
  fib.writeUInt16LE(0xa5ec, 0);
  const body = Buffer.concat([fib, units, Buffer.from("\r\0", "latin1")]);
  const word = Buffer.concat([body, Buffer.alloc(Math.max(0, 4608 - body.length))]);
  return cfb({ WordDocument: word, "1Table": Buffer.alloc(600, 0x01), "\u0005SummaryInformation": Buffer.concat([Buffer.from("feff0000", "hex"), Buffer.alloc(200)]) }, layout);
}

/** An OLE package's \x01Ole10Native stream holding `data` as the file `name` (as Word's Insert > Object > Package writes it). */
export function olePackage(name: string, data: Buffer): Buffer {
  const u16 = (n: number) => Buffer.from([n & 0xff, n >> 8]);
  const command = Buffer.from(`C:\\Users\\agent\\AppData\\Local\\Temp\\${name}\0`, "latin1");
  const body = Buffer.concat([u16(2), Buffer.from(`${name}\0C:\\Users\\agent\\${name}\0`, "latin1"), u16(0), u16(3), le32(command.length), command, le32(data.length), data]);
  return Buffer.concat([le32(body.length), body]);
}

/** BIFF8 records: type, then length, then data, the data cut into CONTINUE records past 8224 bytes (no flags byte: not for strings). */
export function biffRecord(type: number, data: Buffer): Buffer {
  const parts: Buffer[] = [];
  for (let at = 0, t = type; at === 0 || at < data.length; at += 8224, t = 0x003c) {
    const piece = data.subarray(at, at + 8224);
    const head = Buffer.alloc(4);
    head.writeUInt16LE(t, 0);
    head.writeUInt16LE(piece.length, 2);
    parts.push(head, piece);
  }
  return Buffer.concat(parts);
}

/** A BIFF8 record of `type` whose data is `pieces[0]`, then a CONTINUE record for each further piece, each as given (flags bytes and all). */
export function biffPieces(type: number, pieces: Buffer[]): Buffer {
  return Buffer.concat(
    pieces.flatMap((piece, i) => {
      const head = Buffer.alloc(4);
      head.writeUInt16LE(i === 0 ? type : 0x003c, 0);
      head.writeUInt16LE(piece.length, 2);
      return [head, piece];
    }),
  );
}

/** The most data a BIFF8 record holds; past it, CONTINUE records follow. */
const BIFF_MAX = 8224;

/**
 * The shared string table (SST, then CONTINUE records) as Excel writes it
 * ([MS-XLS] 2.4.265, 2.4.58): each string's header (cch, flags) whole in one
 * record, its characters cut where a record is full, the next record opening
 * with a flags byte of its own (fHighByte) for the characters after the cut.
 * A piece is written in 8 bits when its characters allow (Latin-1), else in
 * UTF-16; `wideAfterCut` writes every piece after a cut in UTF-16 (as Excel
 * does when a character past Latin-1 follows in it).
 */
export function sstRecords(cells: string[], { wideAfterCut = false } = {}): Buffer {
  const out: Buffer[] = [];
  let pieces: Buffer[] = [];
  let size = 0;
  let type = 0x00fc;
  const put = (b: Buffer) => {
    pieces.push(b);
    size += b.length;
  };
  const flush = () => {
    const head = Buffer.alloc(4);
    head.writeUInt16LE(type, 0);
    head.writeUInt16LE(size, 2);
    out.push(head, ...pieces);
    pieces = [];
    size = 0;
    type = 0x003c;
  };
  const counts = Buffer.alloc(8);
  counts.writeUInt32LE(cells.length, 0);
  counts.writeUInt32LE(cells.length, 4);
  put(counts);
  for (const cell of cells) {
    // A header and one character at least, or the string starts in the next record.
    if (size + 4 > BIFF_MAX) flush();
    for (let i = 0, first = true; ; first = false) {
      const room = BIFF_MAX - size - (first ? 3 : 1);
      const wide = [...cell.slice(i, i + room)].some((c) => c.charCodeAt(0) > 0xff) || (!first && wideAfterCut);
      const n = Math.min(cell.length - i, wide ? room >> 1 : room);
      const head = first ? Buffer.from([cell.length & 0xff, cell.length >> 8, wide ? 1 : 0]) : Buffer.from([wide ? 1 : 0]);
      put(Buffer.concat([head, Buffer.from(cell.slice(i, i + n), wide ? "utf16le" : "latin1")]));
      i += n;
      if (i >= cell.length) break;
      flush();
    }
  }
  flush();
  return Buffer.concat(out);
}

/**
 * An Excel 97 workbook whose shared strings (the SST) are `cells`' texts,
 * as sstRecords writes them, line breaks kept (a cell of several lines): for
 * a few short cells, a small Workbook stream, so in the mini stream, its
 * mini sectors in a shuffled order.
 */
export function excelXls(cells: string[], layout: CfbLayout = { shuffle: 4 }, { wideAfterCut = false, records = Buffer.alloc(0) }: { wideAfterCut?: boolean; records?: Buffer } = {}): Buffer {
  const bof = Buffer.from("0006050054384d07c1000000060000", "hex").subarray(0, 16);
  const workbook = Buffer.concat([biffRecord(0x0809, bof), sstRecords(cells, { wideAfterCut }), records, biffRecord(0x000a, Buffer.alloc(0))]);
  return cfb({ Workbook: workbook, "\u0005SummaryInformation": Buffer.concat([Buffer.from("feff0000", "hex"), Buffer.alloc(200)]) }, layout);
}

/**
 * An .xls whose shared string table's first record ends in the middle of
 * `text`'s string (a long string of prose before it): its characters after
 * the cut in a CONTINUE record, after a flags byte, in UTF-16 when `wide`.
 */
export function excelXlsCut(text: string, wide: boolean): Buffer {
  const cut = Math.floor(text.length / 2);
  const prose = "Quarterly figures, north and south regions. ".repeat(200).slice(0, BIFF_MAX - 8 - 3 - 3 - cut);
  return excelXls([prose, text, "Total"], { shuffle: 4 }, { wideAfterCut: wide });
}

/** `text` as RTF's characters: `\`, `{` and `}` escaped, line breaks as \par, anything past ASCII as \uN with a `?` fallback. */
function rtfTokens(text: string): string[] {
  const tokens: string[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (text[i] === "\n") tokens.push("\\par ");
    else if (text[i] === "\t") tokens.push("\\tab ");
    else if (text[i] === "\\" || text[i] === "{" || text[i] === "}") tokens.push(`\\${text[i]}`);
    else if (c >= 0x80) tokens.push(`\\u${c > 0x7fff ? c - 0x10000 : c}?`);
    else tokens.push(text[i]!);
  }
  return tokens;
}

/** Word's hex for binary data in RTF: 128 digits a line. */
const rtfHex = (b: Buffer) => (b.toString("hex").match(/.{1,128}/g) ?? []).join("\r\n");

/**
 * An embedded object as Word writes it in RTF: `\objdata`'s hex holds an
 * OLE1 object ([MS-OLEDS] 2.2.5) of class `className` whose native data is
 * `data` (a compound file; for a Package, the packager's header and file).
 */
export function rtfObject(className: string, data: Buffer): string {
  const name = Buffer.from(`${className}\0`, "latin1");
  const ole1 = Buffer.concat([le32(0x501), le32(2), le32(name.length), name, le32(0), le32(0), le32(data.length), data]);
  return `{\\object\\objemb{\\*\\objclass ${className}}\\objw1440\\objh480{\\*\\objdata \r\n${rtfHex(ole1)}\r\n}{\\result {\\pict\\wmetafile8\\picw1440\\pich480 \r\n${rtfHex(Buffer.alloc(300, 0x11))}}}}`;
}

/**
 * An RTF file as Word writes one: a font table, an \info group, then
 * `text` cut into groups of `run` characters, each with its revision marks,
 * and a line break (CR LF) every `wrap` characters, in the middle of words.
 */
export function rtf(text: string, { run = 5, wrap = 7, info = "" }: { run?: number; wrap?: number; info?: string } = {}): Buffer {
  const tokens = rtfTokens(text);
  let body = "";
  for (let i = 0; i < tokens.length; i += run) {
    const group = tokens.slice(i, i + run).map((t, k) => ((i + k) % wrap === wrap - 1 ? `${t}\r\n` : t));
    body += `{\\rtlch\\fcs1 \\af0 \\ltrch\\fcs0 \\insrsid${1000 + (i % 9000)} ${group.join("")}}`;
  }
  const head = `{\\rtf1\\adeflang1025\\ansi\\ansicpg1252\\uc1\\adeff31507\\deff0{\\fonttbl{\\f0\\fbidi \\froman\\fcharset0\\fprq2{\\*\\panose 02020603050405020304}Times New Roman;}}\r\n{\\colortbl;\\red0\\green0\\blue0;}{\\*\\generator Microsoft Word 16.0;}{\\info{\\author Agent${info}}{\\operator Agent}{\\creatim\\yr2026\\mo12\\dy4\\hr10\\min0}}\r\n\\paperw12240\\paperh15840\\pard\\plain \\ltrpar\\ql \\f0\\fs24\\insrsid1234 `;
  return Buffer.from(`${head}${body}\\par }\r\n`, "latin1");
}

/**
 * Every carrier the corpus puts a text in, by name (its extension last):
 * the content test uses them all, the bench a subset.
 */
export const CARRIERS: Record<string, (text: string) => Buffer> = {
  txt: (t) => Buffer.from(`Notes from the run\n${t}\nend\n`),
  "utf16.txt": (t) => Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(`Notes\r\n${t}\r\n`, "utf16le")]),
  docx: (t) => docx(`Report\n${t}\nThanks`),
  xlsx: (t) => xlsx(`Name\n${t}`),
  pptx: (t) => pptx(`Slide\n${t}`),
  pdf: (t) => pdf(`Report\n${t}`),
  "plain.pdf": (t) => pdf(`Report\n${t}`, true),
  "a85.pdf": (t) => pdfAscii85(t),
  "tEXt.png": (t) => pngWithText(t, "tEXt"),
  "zTXt.png": (t) => pngWithText(t, "zTXt"),
  "iTXt.png": (t) => pngWithText(t, "iTXt"),
  "com.jpg": (t) => jpeg({ comment: t }),
  "exif.jpg": (t) => jpeg({ exifText: t }),
  mp3: (t) => mp3(t),
  "utf16le.docx": (t) => docxUtf16(`Report\n${t}`, "le"),
  "utf16be.docx": (t) => docxUtf16(`Report\n${t}`, "be"),
  "object.docx": (t) => docxWithObject(`Notes\r\n${t}\r\n`),
  "info-hex.pdf": (t) => pdfInfoUtf16(t, "hex"),
  "info-literal.pdf": (t) => pdfInfoUtf16(t, "literal"),
  "objstm.pdf": (t) => pdfObjectStream(t),
  "xmp16.pdf": (t) => pdfXmpUtf16(t),
  "embedded-pdf.docx": (t) => docx("See the attached report.", 7, { "word/embeddings/report.pdf": pdf(`Report\n${t}`) }),
  "embedded-xlsx.docx": (t) => docx("See the sheet.", 7, { "word/embeddings/Microsoft_Excel_Worksheet.xlsx": xlsx(`Name\n${t}`) }),
  "subset-font.pdf": (t) => pdfSubsetFont(`Report\n${t}`, { lines: "glyphs" }),
  "subset-font-1byte.pdf": (t) => pdfSubsetFont(`Report\n${t}`, { codes: 1, indirect: true, spaceAsTab: true, length1: true }),
  "subset-font-objstm.pdf": (t) => pdfSubsetFont(`Report\n${t}`, { objectStream: true, lines: "cm", streamPerLine: true }),
  "attached-docx.pdf": (t) => pdfAttachment(docx(`Report\n${t}`)),
  "attached-pdf.pdf": (t) => pdfAttachment(pdf(`Report\n${t}`)),
  "com.gif": (t) => gif(t),
  "exif.webp": (t) => webp(t),
  "info.wav": (t) => wav(t),
  "cmt.mp4": (t) => mp4(t),
  "tags.opus": (t) => ogg(t),
  "comment.flac": (t) => flac(t),
  "tags.webm": (t) => webm(t),
  "cut-tags.ogg": (t) => ogg(t, { codec: "vorbis", cut: true }),
  "after-iend.png": (t) => Buffer.concat([makePng(8, (i) => i * 7), Buffer.from(t)]),
  "after-eoi.jpg": (t) => jpeg({ after: Buffer.from(t) }),
  tar: (t) => tar({ "report/notes.txt": `Notes\n${t}\n`, "report/chart.png": makePng(8, (i) => i * 5) }),
  "tar.gz": (t) => zlib.gzipSync(tar({ "report/notes.txt": `Notes\n${t}\n` })),
  "docx-in.tgz": (t) => zlib.gzipSync(tar({ "report/summary.docx": docx(`Report\n${t}`) })),
  "txt.gz": (t) => zlib.gzipSync(Buffer.from(`Notes from the run\n${t}\nend\n`)),
  "fragmented.doc": (t) => wordDoc(`Report\r${t}\rThanks`),
  "ministream.xls": (t) => excelXls(["Name", t]),
  "sst-cut.xls": (t) => excelXlsCut(t, false),
  "sst-cut-utf16.xls": (t) => excelXlsCut(t, true),
  "split-runs.rtf": (t) => rtf(`Report\n${t}\nThanks`),
  "xpcomment.tiff": (t) => tiffWithXpComment(t),
};

/** Extensions the corpus uses beyond the default allow list (archives, the compound files and RTF, TIFF): the tests and the bench allow them. */
export const CORPUS_EXTRA_ALLOW = ["tar", "gz", "tgz", "bz2", "xz", "7z", "rar", "zip", "doc", "xls", "ppt", "rtf", "tiff"];

export { makePng };
