// The host's own values as a red-team pass (redteam30) found them missed: a
// real password that holds a placeholder's mark (`<`, `@…`, `here`) dropped
// as a placeholder, a value written by a JSON encoder that escapes more than
// JSON.stringify (Go's `\u0026`), a .env saved with a byte order mark, and
// variables named for a second or an older credential (`PASSWORD_OLD`,
// `DB_PASSWORD_2`). Fake values are made at test time; each case goes
// through the real CLI, with the forms that must stay published beside it.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { expand, parseDotenv } from "../src/content/dotenv.js";
import { findInEncodedDockerConfig } from "../src/content/encoded-docker-config.js";
import { KnownSecrets, base64Forms, escapedForms, nonAsciiForms, utf16Base64Forms, valuesWorthLookingFor } from "../src/content/known.js";
import { forEachSecretEntry } from "../src/content/secret-file-formats.js";
import { variableNameSaysSecret } from "../src/content/secret-variables.js";
import { isPlaceholder, isPlaceholderValue } from "../src/content/shape.js";
import { Fakes, pdf } from "./corpus.js";
import { cli, leftBehind, makeHome, write } from "./helpers.js";
import { ensureVenv, systemPython } from "./python-env.js";

let h: ReturnType<typeof makeHome>;
let work: string;
let hermes: string;
beforeEach(() => {
  h = makeHome();
  work = h.work;
  hermes = path.join(h.home, ".hermes");
  fs.mkdirSync(hermes, { recursive: true, mode: 0o700 });
});
afterEach(() => h.cleanup());

const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** Prepares `files`; what a refusal leaves behind is asserted here for every caller: nothing in staging, no outbox file but those published. */
function prepareJson(files: string[], allow = "txt,md,csv,json,html") {
  const before = leftBehind(h).outbox.length;
  const r = cli(["prepare", "--json", "--allow", allow, ...files], { env: h.env, cwd: work });
  const doc = JSON.parse(r.stdout) as { media: { source: string; reused: boolean }[]; media_dropped: { path: string; code: string; reason: string }[] };
  const left = leftBehind(h);
  expect(left.staging).toEqual([]);
  expect(left.outbox).toHaveLength(before + doc.media.filter((m) => !m.reused).length);
  return { code: r.code, published: doc.media.map((m) => path.basename(m.source)), dropped: doc.media_dropped.map((d) => [path.basename(d.path), d.code, d.reason] as const) };
}


describe("a real .env password that holds a placeholder's mark is looked for; a template's whole placeholder is not", () => {
  const f = new Fakes(3001);
  const r = (n: number) => f.pick(ALNUM, n);
  // One per mark isPlaceholder reads inside a generic assignment's value.
  const passwords: Record<string, string> = {
    SMTP_PASSWORD: `${r(3)}<${r(15)}`,
    EMAIL_PASSWORD: `${r(4)}>${r(15)}`,
    MATRIX_PASSWORD: `@${r(19)}`,
    IRC_PASSWORD: `$${r(19)}`,
    XMPP_PASSWORD: `%${r(19)}`,
    MQTT_PASSWORD: `${r(5)}{{${r(12)}`,
    REDIS_PASSWORD: `${r(5)}$(${r(12)}`,
    FTP_PASSWORD: `${r(5)}here${r(10)}`,
    LDAP_PASSWORD: `${r(5)}todo${r(10)}`,
    VNC_PASSWORD: `${r(5)}abc123${r(10)}`,
  };
  // What a template .env holds (Hermes' own and the common ones): never looked for, or every README would be refused.
  const template: Record<string, string> = {
    OPENAI_API_KEY: "your-key-here",
    OPENROUTER_API_KEY: "your_openrouter_api_key",
    TELEGRAM_BOT_TOKEN: "<your-telegram-bot-token>",
    ANTHROPIC_API_KEY: "sk-ant-xxxxxxxxxxxxxxxx",
    DEEPSEEK_API_KEY: "sk-...",
    GITHUB_TOKEN: "ghp_XXXXXXXXXXXXXXXXXXXX",
    DB_PASSWORD: "changeme",
    ADMIN_PASSWORD: "admin123",
    SLACK_BOT_TOKEN: "xoxb-xxxx-xxxx-xxxx",
    SESSION_SECRET: "replace_with_your_secret",
    WEBHOOK_SECRET: "********",
    FIRECRAWL_API_KEY: "$FIRECRAWL_KEY",
    EXA_API_KEY: "insert-exa-key-here",
  };

  it("judges the host's whole value: a reference, filler or a template's words are placeholders; a mark inside a random value is not", () => {
    for (const value of Object.values(passwords)) {
      expect(isPlaceholderValue(value), value).toBe(false);
      // The generic assignment's test still reads them so, for the rules' precision in documentation.
      expect(isPlaceholder(value), value).toBe(true);
    }
    for (const value of [...Object.values(template), "${OPENAI_API_KEY}", "${KEY:-sk-default}", "%API_KEY%", "{{ api_key }}", "$(cat /run/secrets/key)", "<TOKEN>", "AKIAXXXXXXXXXXXXXXXX", "12345678", "abcdefgh", "xxxxxxxxxx", "sk-or-v1-xxxxxxxx", "password", "secret-key", "TODO-set-this"]) {
      expect(isPlaceholderValue(value), value).toBe(true);
    }
    // Words of letters beside a template's word, and a passphrase without one; digits make a value a value.
    expect(isPlaceholderValue("your-openai-key-here")).toBe(true);
    expect(isPlaceholderValue("correct horse battery staple")).toBe(false);
    expect(isPlaceholderValue("my-dashboard-secret-2024")).toBe(false);
    expect(isPlaceholderValue(`sk-${r(4)}xxxx${r(8)}`)).toBe(false);
    expect(isPlaceholderValue(`${r(12)}...`)).toBe(false);
  });

  it("refuses each such password through the CLI, naming the variable, never the value; a README of the template's placeholders is published", () => {
    const env = [...Object.entries(passwords).map(([name, value]) => `${name}='${value}'`), ...Object.entries(template).map(([name, value]) => `${name}=${value}`), ""].join("\n");
    write(hermes, ".env", env);
    // A JSON store's reference, which no parse expands.
    write(hermes, "auth.json", JSON.stringify({ providers: { nous: { api_key: "${NOUS_API_KEY}", refresh_token: "<refresh-token>" } } }));
    const names = Object.keys(passwords);
    const files = names.map((name, i) => write(work, `leak-${i}.md`, `| service | password |\n|---|---|\n| ${name.toLowerCase()} | ${passwords[name]} |\n`));
    const readme = write(work, "README.md", `Set these in ~/.hermes/.env:\n\n${Object.entries(template).map(([name, value]) => `    ${name}=${value}\n`).join("")}\nand in auth.json: \${NOUS_API_KEY}, <refresh-token>.\n`);
    const out = prepareJson([...files, readme]);
    expect(out.dropped.map(([name, code]) => [name, code])).toEqual(files.map((file) => [path.basename(file), "secret_detected"]));
    out.dropped.forEach(([, , reason], i) => expect(reason).toContain(`the value of ${names[i]} (the Hermes .env)`));
    for (const [, , reason] of out.dropped) for (const value of Object.values(passwords)) expect(reason).not.toContain(value);
    expect(out.published).toEqual(["README.md"]);
    expect(leftBehind(h).staging).toEqual([]);
  });

  it("expands `${NAME}` as python-dotenv does, in single-quoted values too (the real parser, in .venv/)", () => {
    const cases = [
      "A=x1\nB=${A}\nC='${A}'\nD=\"${A}\"\nE=${NOPE_K30}\nF=${A:-d}\nG=$A\nH=${A-x}\nI=${a.b}\n",
      "A=v\nB='pre${A}post${A:-z}${Q_K30:-dflt}'\nC=${A:x}\nD=${A:x${A}\nE=${A\nF=}${A}{\nG=${:-only}\nH=${A:-}\n",
    ];
    const script = ["import io, json, sys", "from dotenv import dotenv_values", "print(json.dumps([dict(dotenv_values(stream=io.StringIO(t))) for t in json.load(sys.stdin)]))"].join("\n");
    const py = spawnSync(ensureVenv(), ["-c", script], { input: JSON.stringify(cases), encoding: "utf8", env: { PATH: process.env.PATH } });
    expect(py.status, py.stderr).toBe(0);
    const python = JSON.parse(py.stdout) as Record<string, string>[];
    cases.forEach((text, i) => expect(Object.fromEntries(parseDotenv(text).map((e) => [e.name, e.value])), JSON.stringify(text)).toEqual(python[i]));
  });

  // Each takes a few milliseconds a MiB; a quadratic reading would take minutes (the test's timeout).
  it("stays linear on values built against the placeholder test and the expansion", () => {
    const n = 1 << 20;
    for (const value of ["x-".repeat(n / 2), "xxx-".repeat(n / 4), "$".repeat(n), "${".repeat(n / 2), "<".repeat(n), "{{".repeat(n / 2), "a1-".repeat(n / 3), `${"x".repeat(n)}1`, "-.".repeat(n / 2)]) {
      expect(typeof isPlaceholderValue(value), value.slice(0, 8)).toBe("boolean");
    }
    const known = new Map([["A", "v"]]);
    for (const value of ["${".repeat(n / 2), "${A:x".repeat(n / 5), `${"${".repeat(n / 2)}}`, "${A}".repeat(n / 4), "}".repeat(n)]) {
      expect(typeof expand(value, known), value.slice(0, 8)).toBe("string");
    }
  });
});

describe("a value as JSON encoders other than JSON.stringify write it (Go's `\\u0026`, Python's `\\u00e9`, PHP's `\\/`, .NET's `\\u0027`)", () => {
  const f = new Fakes(3002);
  const r = (n: number) => f.pick(ALNUM, n);
  const amp = `${r(4)}&${r(14)}`;
  // Go's form of this one is no other encoder's: `=` as it is (Gson: `\\u003d`), `\\u003c` in small letters (.NET: `\\u003C`).
  const angle = `${r(4)}<${r(6)}>${r(4)}=${r(4)}`;
  const accent = `${r(5)}\u00e9${r(5)}/${r(8)}`;
  const quote = `${r(5)}'${r(5)}+${r(8)}`;
  // What Go 1.26's encoding/json wrote for these characters (json.Marshal, checked once with `go run`: a cold build takes ~30 s, too long for a test).
  const goJson = (v: string) => JSON.stringify(v).slice(1, -1).replace(/&/g, "\\u0026").replace(/</g, "\\u003c").replace(/>/g, "\\u003e");
  /** The real json.dumps (ensure_ascii, its default) of each value, less the quotes. */
  const pythonJson = (values: string[]) => {
    const py = spawnSync(systemPython(), ["-c", "import json, sys\nfor v in json.load(sys.stdin): print(json.dumps(v)[1:-1])"], { input: JSON.stringify(values), encoding: "utf8" });
    expect(py.status, py.stderr).toBe(0);
    return py.stdout.split("\n").slice(0, values.length);
  };

  it("adds Go's, Python's, PHP's, Gson's and .NET's forms, each once, a few at most, and none for a value no escape changes", () => {
    const [pyAccent] = pythonJson([accent]);
    expect(pyAccent).toContain("\\u00e9");
    const forms = (v: string) => escapedForms(v).map((x) => x.form);
    expect(forms(amp)).toContain(goJson(amp));
    expect(forms(angle)).toContain(goJson(angle));
    expect(forms(accent)).toContain(pyAccent);
    // PHP's json_encode: `\/` and ASCII only.
    expect(forms(accent)).toContain(pyAccent!.replace("/", "\\/"));
    // .NET's System.Text.Json: `'` and `+` in capitals' hex; Gson's: `'` too, small letters.
    expect(forms(quote)).toContain(quote.replace("'", "\\u0027").replace("+", "\\u002B"));
    expect(forms(quote)).toContain(quote.replace("'", "\\u0027"));
    for (const v of [amp, angle, accent, quote, `${r(3)}&<>'"/+=\u00e9\u2028${r(3)}`]) {
      const all = forms(v);
      expect(new Set(all).size).toBe(all.length);
      // Three percent-encodings and a form's (each also in small letters), JSON.stringify's and five encoders', five HTML, a CSV field's and three shell forms: 23 at most.
      expect(all.length).toBeLessThanOrEqual(23);
    }
    expect(escapedForms(r(24))).toEqual([]);
  });

  it("refuses each form through the CLI, naming the variable; another value written the same way is published", () => {
    write(hermes, ".env", [`SMTP_PASSWORD='${amp}'`, `MAIL_PASSWORD='${angle}'`, `DB_PASSWORD='${accent}'`, `SFTP_PASSWORD="${quote}"`, ""].join("\n"));
    const [pyAccent, pyOther] = pythonJson([accent, accent.replace(/[0-9]/g, (d) => String((Number(d) + 1) % 10)).replace(/^./, "Q")]);
    const files = [
      // docker inspect's Env and terraform output -json, as Go writes them.
      write(work, "docker-inspect.json", `[{"Config":{"Env":["SMTP_PASSWORD=${goJson(amp)}","PATH=/usr/bin"]}}]\n`),
      write(work, "tf-output.json", `{"outputs":{"relay":{"sensitive":false,"value":"${goJson(angle)}"}}}\n`),
      write(work, "settings.json", `{"db": {"note": "${pyAccent}"}}\n`),
      write(work, "php.txt", `{"db":"${pyAccent!.replace("/", "\\/")}"}\n`),
      write(work, "dotnet.json", `{"sftp":"${quote.replace("'", "\\u0027").replace("+", "\\u002B")}"}\n`),
    ];
    const twins = [write(work, "other-inspect.json", `{"Env":["X=${goJson(`${r(4)}&${r(14)}`)}"]}\n`), write(work, "other-settings.json", `{"db": {"note": "${pyOther}"}}\n`)];
    const out = prepareJson([...files, ...twins]);
    expect(out.dropped.map(([name, code]) => [name, code])).toEqual(files.map((file) => [path.basename(file), "secret_detected"]));
    const reasons = out.dropped.map(([, , reason]) => reason);
    expect(reasons[0]).toContain("the value of SMTP_PASSWORD (the Hermes .env), escaped in a string");
    expect(reasons[1]).toContain("the value of MAIL_PASSWORD (the Hermes .env), escaped in a string");
    expect(reasons[2]).toContain("the value of DB_PASSWORD (the Hermes .env), escaped in a string");
    expect(reasons[3]).toContain("the value of DB_PASSWORD (the Hermes .env), escaped in a string");
    expect(reasons[4]).toContain("the value of SFTP_PASSWORD (the Hermes .env), escaped in a string");
    for (const reason of reasons) for (const v of [amp, angle, accent, quote]) expect(reason).not.toContain(v);
    expect(out.published).toEqual(twins.map((file) => path.basename(file)));
  });
});

describe("a .env password with spaces, form-encoded (application/x-www-form-urlencoded: `+` for a space)", () => {
  const f = new Fakes(3005);
  const r = (n: number) => f.pick(ALNUM, n);

  it("adds the form-encoded form of a value with spaces (Python's urlencode, quote_plus), once; none for a value without a space, whose quote form is the same", () => {
    const spaced = `${r(5)} ${r(6)}+${r(4)} ${r(5)}`;
    const py = spawnSync(systemPython(), ["-c", "import sys\nfrom urllib.parse import urlencode\nprint(urlencode({'pw': sys.stdin.read()}))"], { input: spaced, encoding: "utf8" });
    expect(py.status, py.stderr).toBe(0);
    const form = py.stdout.trim().slice("pw=".length);
    expect(form).toContain("+");
    // And as .NET writes it, in small letters.
    expect(escapedForms(spaced).filter((x) => x.how === "form-encoded").map((x) => x.form)).toEqual([form, form.replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase())]);
    expect(escapedForms(`${r(8)}+${r(8)}&${r(4)}`).filter((x) => x.how === "form-encoded")).toEqual([]);
  });

  it("refuses a .env password with spaces written form-encoded through the CLI, naming the variable; another password so written and the password's first words so written are published", () => {
    const password = `${r(4)} ${r(5)} ${r(4)} ${r(5)}`;
    const other = `${r(4)} ${r(5)} ${r(4)} ${r(5)}`;
    write(hermes, ".env", `DB_PASSWORD='${password}'\n`);
    const py = spawnSync(systemPython(), ["-c", "import json, sys\nfrom urllib.parse import urlencode\nfor v in json.load(sys.stdin): print(urlencode({'user': 'app', 'pw': v}))"], { input: JSON.stringify([password, other]), encoding: "utf8" });
    expect(py.status, py.stderr).toBe(0);
    const [body, otherBody] = py.stdout.split("\n");
    const file = write(work, "requests.log.txt", `POST /login body: ${body}\n`);
    const twins = [write(work, "other.log.txt", `POST /login body: ${otherBody}\n`), write(work, "part.txt", `pw=${password.split(" ").slice(0, 3).join("+")}\n`)];
    const out = prepareJson([file, ...twins]);
    expect(out.dropped.map(([name, code]) => [name, code])).toEqual([["requests.log.txt", "secret_detected"]]);
    expect(out.dropped[0]![2]).toContain("the value of DB_PASSWORD (the Hermes .env), form-encoded");
    expect(out.dropped[0]![2]).not.toContain(password.split(" ")[1]!);
    expect(out.published).toEqual(twins.map((f) => path.basename(f)));
  });
});

describe("a file of secrets saved with a UTF-8 byte order mark", () => {
  const f = new Fakes(3003);
  const password = `${f.pick(ALNUM, 8)}#${f.pick(ALNUM, 10)}`;
  const token = f.pick(ALNUM, 40);
  const exported = `${f.pick(ALNUM, 9)}!${f.pick(ALNUM, 9)}`;

  it("gives its first variable's value: python-dotenv keeps the mark in the name, which still reads as a secret's", () => {
    const py = spawnSync(ensureVenv(), ["-c", "import io, json, sys\nfrom dotenv import dotenv_values\nprint(json.dumps(dict(dotenv_values(stream=io.StringIO(sys.stdin.read())))))"], { input: `\ufeffSMTP_PASSWORD=${password}\n`, encoding: "utf8" });
    expect(py.status, py.stderr).toBe(0);
    expect(JSON.parse(py.stdout)).toEqual({ "\ufeffSMTP_PASSWORD": password });
    // As Hermes would set it in an environment: the name with its mark is judged a secret's too.
    expect(valuesWorthLookingFor("\ufeffSMTP_PASSWORD", password, false)).toEqual([password]);
  });

  it("refuses the first variable's value of a .env, of a profile's .env and of a JSON store saved so, through the CLI", () => {
    write(hermes, ".env", `\ufeffSMTP_PASSWORD=${password}\nLLM_MODEL=anthropic/claude-sonnet-4\n`);
    fs.mkdirSync(path.join(hermes, "profiles", "work"), { recursive: true });
    write(path.join(hermes, "profiles", "work"), ".env", `\ufeffexport MAIL_PASSWORD='${exported}'\n`);
    write(hermes, "auth.json", `\ufeff${JSON.stringify({ providers: { nous: { refresh_token: token } } })}`);
    const files = [write(work, "smtp.txt", `smtp ${password}\n`), write(work, "mail.txt", `mail ${exported}\n`), write(work, "token.txt", `${token}\n`)];
    const clean = write(work, "clean.txt", "model anthropic/claude-sonnet-4\n");
    const out = prepareJson([...files, clean]);
    expect(out.dropped.map(([name, code]) => [name, code])).toEqual(files.map((file) => [path.basename(file), "secret_detected"]));
    expect(out.dropped[0]![2]).toContain("the value of SMTP_PASSWORD (the Hermes .env)");
    expect(out.dropped[1]![2]).toContain("the value of MAIL_PASSWORD (the .env of Hermes profile work)");
    expect(out.dropped[2]![2]).toContain("the value of providers.nous.refresh_token (the Hermes auth.json)");
    expect(out.published).toEqual(["clean.txt"]);
  });
});

describe("names of a second or an older credential (`SMTP_PASSWORD1`, `PASSWORD_OLD`, `DB_PASSWORD_2`, `API_KEY_BACKUP`)", () => {
  const secret = ["SMTP_PASSWORD1", "PASSWORD_OLD", "DB_PASSWORD_2", "API_KEY_BACKUP", "API_KEY_V2", "GITHUB_TOKEN_NEW", "API_KEY_2_OLD", "SECRET_KEY_PREVIOUS", "OPENAI_API_KEY_FALLBACK", "WEBHOOK_SECRET-2", "db.password.old", "ADMIN_PASSWORD_ROTATED3"];
  const setting = ["PASSWORD_MIN_LENGTH", "TOKEN_EXPIRY", "KEY_ID", "KEY_ID_2", "MAX_TOKENS_2", "PUBLIC_KEY_OLD", "CACHE_KEY_1", "TOKEN_PATH_2", "PASSWORD_FILE_OLD", "API_KEY_V", "TOKEN_TTL_3600", "PASSWORD_LENGTH_12", "KEYBOARD_2", "OLD", "V2", "12345", "SORT_KEY_BACKUP"];

  it("reads a number or a word of SUFFIX_WORDS after a secret's name as the secret's; settings stay settings; linear on long names", () => {
    for (const name of secret) expect(variableNameSaysSecret(name), name).toBe(true);
    for (const name of setting) expect(variableNameSaysSecret(name), name).toBe(false);
    for (const name of [`A${"1".repeat(1 << 20)}`, `PASSWORD${"_OLD".repeat(1 << 18)}`, `${"_1".repeat(1 << 19)}`, `KEY${"_V".repeat(1 << 19)}2`]) {
      expect(typeof variableNameSaysSecret(name), name.slice(0, 12)).toBe("boolean");
    }
  });

  it("refuses their values through the CLI, naming the variable; a setting's value is published", () => {
    const f = new Fakes(3004);
    // A `#` in each: no token's shape, so only the name makes it a secret.
    const value = () => `${f.pick(ALNUM, 7)}#${f.pick(ALNUM, 9)}`;
    const secrets = Object.fromEntries(["SMTP_PASSWORD1", "PASSWORD_OLD", "DB_PASSWORD_2", "API_KEY_BACKUP", "API_KEY_V2"].map((name) => [name, value()]));
    const settings = Object.fromEntries(["PASSWORD_MIN_LENGTH", "TOKEN_EXPIRY", "KEY_ID_2", "MAX_TOKENS_2", "PUBLIC_KEY_OLD"].map((name) => [name, value()]));
    write(hermes, ".env", `${Object.entries({ ...secrets, ...settings }).map(([name, v]) => `${name}='${v}'`).join("\n")}\n`);
    const files = Object.entries(secrets).map(([name, v]) => write(work, `${name.toLowerCase()}.txt`, `it is ${v}\n`));
    const clean = write(work, "settings.txt", `${Object.values(settings).join("\n")}\n`);
    const out = prepareJson([...files, clean]);
    expect(out.dropped.map(([name, code]) => [name, code])).toEqual(files.map((file) => [path.basename(file), "secret_detected"]));
    Object.keys(secrets).forEach((name, i) => expect(out.dropped[i]![2]).toContain(`the value of ${name} (the Hermes .env)`));
    expect(out.published).toEqual(["settings.txt"]);
  });
});

describe("the shared Nous login and a Google service account key (hermes-agent 0.19.0: hermes_cli/auth.py, agent/vertex_adapter.py)", () => {
  const f = new Fakes(3010);
  const access = f.pick(ALNUM, 48);
  const refresh = f.pick(ALNUM, 44);
  // A service account key's PEM body, line by line (random: no format rule knows such a line on its own).
  const keyLines = Array.from({ length: 4 }, () => f.pick(ALNUM, 64));
  const privateKey = `-----BEGIN PRIVATE KEY-----\n${keyLines.join("\n")}\n-----END PRIVATE KEY-----\n`;
  const nousStore = (a: string, r: string) => JSON.stringify({ access_token: a, refresh_token: r, token_type: "Bearer", portal_base_url: "https://portal.nousresearch.com", expires_at: "2026-12-05T16:00:00+00:00" });
  const keyFile = () => JSON.stringify({ type: "service_account", project_id: "demo-project", private_key_id: "0123456789abcdef0123456789abcdef01234567", private_key: privateKey, client_email: "hermes@demo-project.iam.gserviceaccount.com" });

  /** prepareJson with `env` over the test home's. */
  function prepareWith(env: NodeJS.ProcessEnv, files: string[]) {
    const r = cli(["prepare", "--json", "--allow", "txt", ...files], { env: { ...h.env, ...env }, cwd: work });
    const doc = JSON.parse(r.stdout) as { media: { source: string }[]; media_dropped: { path: string; code: string; reason: string }[] };
    expect(leftBehind(h).staging).toEqual([]);
    return { published: doc.media.map((m) => path.basename(m.source)), dropped: doc.media_dropped.map((d) => [path.basename(d.path), d.code, d.reason] as const), stderr: r.stderr };
  }

  it("refuses the tokens of <root>/shared/nous_auth.json (for a profile's home too: its root's) and of $HERMES_SHARED_AUTH_DIR/nous_auth.json, naming the store, never the value", () => {
    fs.mkdirSync(path.join(hermes, "shared"));
    write(path.join(hermes, "shared"), "nous_auth.json", nousStore(access, refresh));
    const moved = path.join(h.home, "nous-elsewhere");
    fs.mkdirSync(moved);
    const movedAccess = f.pick(ALNUM, 48);
    write(moved, "nous_auth.json", nousStore(movedAccess, f.pick(ALNUM, 44)));
    const files = [write(work, "access.txt", `token ${access}\n`), write(work, "refresh.txt", `refresh: ${refresh}\n`), write(work, "moved.txt", `${movedAccess}\n`)];
    const clean = write(work, "clean.txt", "meeting notes\n");
    const out = prepareWith({ HERMES_SHARED_AUTH_DIR: moved }, [...files, clean]);
    expect(out.dropped.map(([name, code]) => [name, code])).toEqual(files.map((file) => [path.basename(file), "secret_detected"]));
    expect(out.dropped[0]![2]).toContain("the value of access_token (the Hermes shared/nous_auth.json)");
    expect(out.dropped[1]![2]).toContain("the value of refresh_token (the Hermes shared/nous_auth.json)");
    expect(out.dropped[2]![2]).toContain("the value of access_token (the shared Nous OAuth store ($HERMES_SHARED_AUTH_DIR/nous_auth.json))");
    expect(out.published).toEqual(["clean.txt"]);
    // A profile's home: the root's store is its too.
    fs.mkdirSync(path.join(hermes, "profiles", "work"), { recursive: true });
    const fromProfile = prepareWith({ HERMES_HOME: path.join(hermes, "profiles", "work") }, [write(work, "again.txt", `token ${access}\n`)]);
    expect(fromProfile.dropped.map(([name, code, reason]) => [name, code, reason.includes("access_token (the shared/nous_auth.json of the shared Hermes root)")])).toEqual([["again.txt", "secret_detected", true]]);
    expect(JSON.stringify([out, fromProfile])).not.toContain(access);
  });

  it("refuses a line of the private key that $VERTEX_CREDENTIALS_PATH or $GOOGLE_APPLICATION_CREDENTIALS names, naming the variable; a relative path is not followed", () => {
    fs.mkdirSync(path.join(h.home, "keys"));
    const vertex = write(path.join(h.home, "keys"), "vertex.json", keyFile());
    const leak = write(work, "key-line.txt", `pasted: ${keyLines[2]}\n`);
    const clean = write(work, "clean.txt", "meeting notes\n");
    for (const variable of ["VERTEX_CREDENTIALS_PATH", "GOOGLE_APPLICATION_CREDENTIALS"]) {
      const out = prepareWith({ [variable]: vertex }, [leak, clean]);
      expect(out.dropped.map(([name, code]) => [name, code]), variable).toEqual([["key-line.txt", "secret_detected"]]);
      expect(out.dropped[0]![2]).toContain(`the value of private_key (the Google service account key $${variable} names)`);
      expect(out.dropped[0]![2]).not.toContain(keyLines[2]!);
      expect(out.published).toEqual(["clean.txt"]);
    }
    // Relative (its meaning: Hermes' working directory): not followed, the line not known.
    expect(prepareWith({ VERTEX_CREDENTIALS_PATH: "keys/vertex.json" }, [leak]).published).toEqual(["key-line.txt"]);
  });
});

describe("a .env password with a quote as shells quote it (redteam32a 08) and as PHP, JSP and XML escape it (09)", () => {
  const f = new Fakes(3006);
  const r = (n: number) => f.pick(ALNUM, n);
  const single = `${r(3)}'${r(12)}`;
  const double = `${r(3)}"${r(12)}`;
  /** bash's own quoting of `value`: printf %q, a `set -x` trace's; and Python's shlex.quote. */
  const shells = (value: string) => {
    const q = spawnSync("bash", ["--norc", "--noprofile", "-c", 'printf "%q" "$V"'], { env: { V: value, PATH: process.env.PATH }, encoding: "utf8" });
    const x = spawnSync("bash", ["--norc", "--noprofile", "-c", 'set -x; : "$V"'], { env: { V: value, PATH: process.env.PATH }, encoding: "utf8" });
    const py = spawnSync(systemPython(), ["-c", "import shlex, sys\nprint(shlex.quote(sys.argv[1]))", value], { encoding: "utf8" });
    expect([q.status, x.status, py.status]).toEqual([0, 0, 0]);
    return { printfQ: q.stdout, xtrace: x.stderr.split("\n").find((line) => line.startsWith("+ : "))!.slice("+ : ".length), shlex: py.stdout.trim() };
  };
  /** The escapes of PHP's htmlspecialchars (ENT_QUOTES), JSP's fn:escapeXml and an XML writer's. */
  const html = (value: string) => ({
    php: value.replace(/'/g, "&#039;").replace(/"/g, "&quot;"),
    jsp: value.replace(/'/g, "&#039;").replace(/"/g, "&#034;"),
    xml: value.replace(/'/g, "&apos;").replace(/"/g, "&quot;"),
  });

  it("adds the shell-quoted forms of a value with a quote, and %q's of one with a character %q escapes; none for a value without", () => {
    const forms = (v: string) => escapedForms(v).map((x) => x.form);
    const s = shells(single);
    for (const form of [s.printfQ, s.xtrace.slice(1, -1), s.shlex.slice(1, -1)]) expect(forms(single)).toContain(form);
    const spaced = `${r(4)}$${r(4)} ${r(8)}`;
    expect(forms(spaced)).toContain(shells(spaced).printfQ);
    const hashed = `#${r(16)}`;
    expect(forms(hashed)).toContain(shells(hashed).printfQ);
    expect(escapedForms(`${r(8)}\t${r(8)}`).filter((x) => x.how === "shell-quoted")).toEqual([]);
    expect(escapedForms(r(24))).toEqual([]);
    for (const v of [single, double]) for (const form of Object.values(html(v))) expect(forms(v)).toContain(form);
  });

  it("refuses each form through the CLI, naming the variable; another password so written is published", () => {
    write(hermes, ".env", `MAIL_PASSWORD="${single}"\nAPI_PASSWORD='${double}'\n`);
    const s = shells(single);
    const h1 = html(single);
    const h2 = html(double);
    const shellFiles = [
      write(work, "shlex.txt", `docker run -e MAIL_PASSWORD=${s.shlex} app\n`),
      write(work, "printf-q.txt", `MAIL_PASSWORD=${s.printfQ}\n`),
      write(work, "xtrace.txt", `+ : ${s.xtrace}\n`),
    ];
    const htmlFiles = [write(work, "php.txt", `<td>${h1.php}</td>\n`), write(work, "xml.txt", `<pw>${h1.xml}</pw>\n`), write(work, "jsp.csv", `user,${h2.jsp}\n`), write(work, "php2.html.txt", `<td>${h2.php}</td>\n`)];
    const other = shells(`${r(3)}'${r(12)}`);
    const twins = [write(work, "other-shlex.txt", `x=${other.shlex}\n`), write(work, "other-q.txt", `x=${other.printfQ}\n`), write(work, "other-php.txt", `<td>${html(`${r(3)}'${r(12)}`).php}</td>\n`)];
    const out = prepareJson([...shellFiles, ...htmlFiles, ...twins]);
    expect(out.dropped.map(([name, code]) => [name, code])).toEqual([...shellFiles, ...htmlFiles].map((file) => [path.basename(file), "secret_detected"]));
    out.dropped.slice(0, 3).forEach(([, , reason]) => expect(reason).toContain("the value of MAIL_PASSWORD (the Hermes .env), shell-quoted"));
    expect(out.dropped[3]![2]).toContain("the value of MAIL_PASSWORD (the Hermes .env), HTML-escaped");
    expect(out.dropped[4]![2]).toContain("the value of MAIL_PASSWORD (the Hermes .env), HTML-escaped");
    expect(out.dropped[5]![2]).toContain("the value of API_PASSWORD (the Hermes .env), HTML-escaped");
    for (const [, , reason] of out.dropped) for (const v of [single, double]) expect(reason).not.toContain(v.slice(4));
    expect(out.published).toEqual(twins.map((file) => path.basename(file)));
  });
});

describe("a .env password with a backslash and a quote as Python's repr writes it (`print(os.environ)`, `print(settings)`; redteam32c 05)", () => {
  const f = new Fakes(3205);
  const r = (n: number) => f.pick(ALNUM, n);
  const withDouble = `${r(3)}"${r(3)}\\${r(12)}`;
  const withSingle = `${r(3)}'${r(3)}\\${r(12)}`;
  const withBoth = `${r(3)}'${r(3)}"${r(3)}\\${r(9)}`;
  /** Python's repr of each value, less its quotes (the real python3). */
  const reprs = (values: string[]) => {
    const py = spawnSync(systemPython(), ["-c", "import json, sys\nfor v in json.load(sys.stdin): print(repr(v)[1:-1])"], { input: JSON.stringify(values), encoding: "utf8" });
    expect(py.status, py.stderr).toBe(0);
    return py.stdout.split("\n").slice(0, values.length);
  };

  it("adds repr's form where it differs from the JSON one (a backslash and a quote), once; none for a value without a backslash", () => {
    const control = `${r(4)}\x01${r(4)}\t${r(4)}\\${r(4)}'`;
    const values = [withDouble, withSingle, withBoth, control];
    const pys = reprs(values);
    values.forEach((v, i) => expect(escapedForms(v).map((x) => x.form), JSON.stringify(v)).toContain(pys[i]));
    // The double-quoted one differs from JSON's (`\"` and `\\`) and from the value.
    expect(pys[0]).not.toBe(JSON.stringify(withDouble).slice(1, -1));
    // Without a backslash, or without a quote, repr writes the value as it is or as JSON does: no form of its own.
    const plain = [`${r(4)}"${r(12)}`, `${r(4)}'${r(12)}`, `${r(4)}\\${r(12)}`];
    reprs(plain).forEach((py, i) => expect([plain[i], JSON.stringify(plain[i]).slice(1, -1)]).toContain(py));
    expect(escapedForms(withDouble).filter((x) => x.form === pys[0]).length).toBe(1);
  });

  it("refuses a dict, a list and an environ printed by Python, naming the variable; another password so printed is published", () => {
    // Unquoted, as the red team's: python-dotenv and Hermes take each byte as it is.
    write(hermes, ".env", `SMTP_PASSWORD=${withDouble}\nREDIS_PASSWORD=${withSingle}\n`);
    const printed = (script: string, value: string) => {
      const py = spawnSync(systemPython(), ["-c", `import sys\nv = sys.argv[1]\n${script}`, value], { encoding: "utf8" });
      expect(py.status, py.stderr).toBe(0);
      return py.stdout;
    };
    const files = [
      write(work, "dict.txt", printed("print({'SMTP_PASSWORD': v, 'SMTP_HOST': 'mail.example.com'})", withDouble)),
      write(work, "list.txt", printed("print('settings:', [v])", withDouble)),
      write(work, "environ.txt", printed("print(\"environ({'HOME': '/home/u', 'SMTP_PASSWORD': %r})\" % v)", withDouble)),
      write(work, "redis.txt", printed("print({'REDIS_PASSWORD': v})", withSingle)),
    ];
    const twins = [write(work, "other.txt", printed("print({'SMTP_PASSWORD': v})", `${r(3)}"${r(3)}\\${r(12)}`))];
    const out = prepareJson([...files, ...twins]);
    expect(out.dropped.map(([name, code]) => [name, code])).toEqual(files.map((file) => [path.basename(file), "secret_detected"]));
    out.dropped.slice(0, 3).forEach(([, , reason]) => expect(reason).toContain("the value of SMTP_PASSWORD (the Hermes .env), escaped in a string"));
    expect(out.dropped[3]![2]).toContain("the value of REDIS_PASSWORD (the Hermes .env)");
    for (const [, , reason] of out.dropped) for (const v of [withDouble, withSingle]) expect(reason).not.toContain(v.slice(8));
    expect(out.published).toEqual(twins.map((file) => path.basename(file)));
  });
});

describe("a host token base64-encoded twice: a Kubernetes image-pull secret (redteam32a 07)", () => {
  const f = new Fakes(3007);
  const token = `ghp_${f.pick(ALNUM, 36)}`;
  const other = `ghp_${f.pick(ALNUM, 36)}`;
  const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");
  /** A Secret as `kubectl create secret generic --from-file=.dockerconfigjson=… -o yaml` shows it. */
  const secret = (config: string) => `apiVersion: v1\ndata:\n  .dockerconfigjson: ${b64(config)}\nkind: Secret\nmetadata:\n  name: regcred\ntype: kubernetes.io/dockerconfigjson\n`;
  /** `docker login`'s config.json (tabs) and kubectl's compact one, for users whose names put the token at each of its three positions. */
  const configs = (t: string) => [
    JSON.stringify({ auths: { "ghcr.io": { auth: b64(`u:${t}`) } } }),
    JSON.stringify({ auths: { "ghcr.io": { auth: b64(`oc:${t}`) } } }),
    JSON.stringify({ auths: { "registry.example.com:5000": { auth: b64(`octocat:${t}`) } } }),
    JSON.stringify({ auths: { "https://index.docker.io/v1/": { auth: b64(`ci-bot:${t}`) } } }, null, "\t"),
  ];
  /** What the openings read until forms33 missed: a formatter's two and four spaces, CRLF, another key first (Docker Desktop's `credsStore`, a proxy's `HttpHeaders`). */
  const otherConfigs = (t: string) => [
    JSON.stringify({ auths: { "ghcr.io": { auth: b64(`u:${t}`) } } }, null, 2),
    JSON.stringify({ auths: { "ghcr.io": { auth: b64(`oc:${t}`) } } }, null, 4),
    JSON.stringify({ auths: { "registry.example.com:5000": { auth: b64(`octocat:${t}`) } } }, null, "\t").replace(/\n/g, "\r\n"),
    JSON.stringify({ credsStore: "desktop", auths: { "https://index.docker.io/v1/": { auth: b64(`ci-bot:${t}`) } } }),
    JSON.stringify({ HttpHeaders: { "User-Agent": "Docker-Client/27.3.1 (linux)" }, auths: { "ghcr.io": { auth: b64(`u:${t}`) } } }, null, 2),
  ];

  it("refuses each through the CLI, naming the variable, never the token; another token so encoded is published", () => {
    write(hermes, ".env", `GITHUB_TOKEN=${token}\n`);
    const files = [...configs(token), ...otherConfigs(token)].map((config, i) => write(work, `regcred-${i}.txt`, secret(config)));
    const twins = [...configs(other), ...otherConfigs(other)].map((config, i) => write(work, `other-${i}.txt`, secret(config)));
    const out = prepareJson([...files, ...twins]);
    expect(out.dropped.map(([name, code]) => [name, code])).toEqual(files.map((file) => [path.basename(file), "secret_detected"]));
    for (const [, , reason] of out.dropped) {
      expect(reason).toContain("the value of GITHUB_TOKEN (the Hermes .env), base64-encoded twice");
      expect(reason).not.toContain(token);
    }
    expect(out.published).toEqual(twins.map((file) => path.basename(file)));
  });

  it("reads a run of base64 that holds a config's `\"auths\"` (kubectl's compact JSON, docker's tab, spaces, CRLF, another key first; wrapped at 76 columns), each run once: 10,000 keys in a row give a verdict", () => {
    const known = new KnownSecrets([{ name: "GITHUB_TOKEN (here)", bytes: Buffer.from(token) }, ...base64Forms(Buffer.from(token)).map((bytes) => ({ name: "GITHUB_TOKEN (here), base64-encoded", bytes, form: true as const }))]);
    for (const config of [...configs(token), ...otherConfigs(token)]) {
      const wrapped = b64(config).replace(/.{76}/g, "$&\n");
      const text = `.dockerconfigjson: ${wrapped}\n`;
      expect(findInEncodedDockerConfig(text, 0, text.length, known)?.index, config.slice(0, 12)).toBe(".dockerconfigjson: ".length);
    }
    // The token in clear (kubectl create secret docker-registry's `password`).
    const clear = b64(JSON.stringify({ auths: { r: { password: token } } }));
    expect(findInEncodedDockerConfig(clear, 0, clear.length, known)?.what).toBe("the value of GITHUB_TOKEN (here), base64-encoded");
    // A name's `=` and a word on the line before a wrapped run are not read as its first characters.
    for (const lead of ["DOCKER_AUTH_CONFIG=", "config\n", "ab\n"]) {
      const text = `${lead}${b64(otherConfigs(token)[3]!).replace(/.{76}/g, "$&\n")}\n`;
      expect(findInEncodedDockerConfig(text, 0, text.length, known)?.what, lead).toBe("the value of GITHUB_TOKEN (here), base64-encoded twice");
    }
    // Judged by the window in which its run starts: not one that starts after `before`, nor one whose key was judged before `from`.
    const late = `${"x".repeat(100)} ${b64(configs(token)[0]!)}`;
    expect(findInEncodedDockerConfig(late, 0, 100, known)).toBeUndefined();
    expect(findInEncodedDockerConfig(late, 0, 102, known)?.index).toBe(101);
    expect(findInEncodedDockerConfig(late, 120, late.length, known)).toBeUndefined();
    // Another token's config, base64 images and JWTs hold no host value: nothing.
    const negatives = [
      b64(otherConfigs(other)[4]!),
      `<img src="data:image/png;base64,${Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 7919) % 251)).toString("base64")}">`,
      `![x](data:image/gif;base64,${b64("GIF89a")}${b64('"auths"')})`,
      `${b64(JSON.stringify({ alg: "HS256", typ: "JWT" }))}.${b64(JSON.stringify({ sub: "u", auths: ["ghcr.io"] }))}.sig`,
    ];
    for (const text of negatives) expect(findInEncodedDockerConfig(text, 0, text.length, known)).toBeUndefined();
    // Adversarial: one run of keys, and keys each in a run of its own.
    const flood = b64('{"auths":').repeat(10_000);
    expect(findInEncodedDockerConfig(flood, 0, flood.length, known)).toBeUndefined();
    for (const skip of ["", "a", "ab"]) {
      const runs = `${b64(`${skip}"auths"`)} `.repeat(20_000);
      expect(findInEncodedDockerConfig(runs, 0, runs.length, known)).toBeUndefined();
    }
  });
});

describe("a host value past ASCII as tools write it otherwise than in UTF-8, and percent-encoded in small letters (redteam33 02, 05)", () => {
  const f = new Fakes(3301);
  const passphrase = `Kr\u00e4ftig-W\u00f6lfe-${f.pick(ALNUM, 6)}`;
  const other = `Gr\u00fcn-B\u00e4r-${f.pick(ALNUM, 8)}`;
  const forms = (value: string) => ({
    "utf16.txt": Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(`the vault passphrase is ${value}\r\n`, "utf16le")]),
    "entities.md": Buffer.from(`<p>${value.replace(/\u00e4/g, "&auml;").replace(/\u00f6/g, "&ouml;").replace(/\u00fc/g, "&uuml;")}</p>\n`),
    "nfd.txt": Buffer.from(`pw ${value.normalize("NFD")}\n`),
    "mojibake.csv": Buffer.from(`name,value\ndb,${new TextDecoder("windows-1252").decode(Buffer.from(value))}\n`),
    "winansi.pdf": pdf(`the passphrase ${value}`),
  });

  it("refuses each form through the CLI, naming the variable and the form, never the value; another passphrase so written is published", () => {
    write(hermes, ".env", `DB_PASSPHRASE=${passphrase}\nAPI_SERVER_KEY=${f.pick(ALNUM, 20)}/${f.pick(ALNUM, 10)}+${f.pick(ALNUM, 6)}=\n`);
    const key = fs.readFileSync(path.join(hermes, ".env"), "utf8").match(/API_SERVER_KEY=(.*)/)![1]!;
    const files = [...Object.entries(forms(passphrase)).map(([name, bytes]) => write(work, name, bytes)), write(work, "dotnet-url.txt", `GET /hook?key=${encodeURIComponent(key).replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase())}\n`)];
    const twins = [...Object.entries(forms(other)).map(([name, bytes]) => write(work, `other-${name}`, bytes)), write(work, "other-url.txt", `GET /search?q=${encodeURIComponent("reports/2026 + q4 = total").replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase())}\n`)];
    const out = prepareJson([...files, ...twins], "txt,md,csv,pdf");
    expect(out.dropped.map(([name, code]) => [name, code])).toEqual(files.map((file) => [path.basename(file), "secret_detected"]));
    const hows = ["in Windows-1252 or UTF-16", "HTML-escaped", "Unicode-normalised", "mis-decoded as Windows-1252", "in Windows-1252 or UTF-16"];
    hows.forEach((how, i) => expect(out.dropped[i]![2]).toContain(`the value of DB_PASSPHRASE (the Hermes .env), ${how}`));
    expect(out.dropped[5]![2]).toContain("the value of API_SERVER_KEY (the Hermes .env), percent-encoded");
    for (const [, , reason] of out.dropped) for (const v of [passphrase.slice(8), key.slice(4, 16)]) expect(reason).not.toContain(v);
    expect(out.published).toEqual(twins.map((file) => path.basename(file)));
  });

  it("makes no form of an ASCII value, none shorter than a value looked for, and none that is the value's own UTF-8", () => {
    expect(nonAsciiForms(f.pick(ALNUM, 30))).toEqual([]);
    expect(nonAsciiForms("\u00e4\u00f6\u00fc\u00df")).toEqual(nonAsciiForms("\u00e4\u00f6\u00fc\u00df").filter((form) => form.bytes.length >= 8));
    for (const value of [passphrase, "\u0142\u00f3d\u017a-\u20ac-pass-1234", "\u03b1\u03b2\u03b3-secret-key"]) {
      const forms = nonAsciiForms(value);
      expect(forms.length).toBeGreaterThan(0);
      for (const { bytes } of forms) {
        expect(bytes.length).toBeGreaterThanOrEqual(8);
        expect(bytes.equals(Buffer.from(value))).toBe(false);
      }
    }
    // A character Windows-1252 has no byte for: no single-byte form, the narrowed one stands.
    expect(nonAsciiForms("\u0142\u00f3d\u017a-pass-1234").map((form) => form.how)).not.toContain("in Windows-1252 or UTF-16");
    expect(nonAsciiForms("\u20ac\u0161-pass-1234").find((form) => form.how === "in Windows-1252 or UTF-16")!.bytes).toEqual(Buffer.from([0x80, 0x9a, ...Buffer.from("-pass-1234")]));
  });
});

describe("the host's values where red-team pass 34 found them published: quote forms, PowerShell's -EncodedCommand, MCP servers' args and URLs, ~/.netrc (redteam34 02, 03, 04, 06, 07, 13)", () => {
  const f = new Fakes(3402);
  const r = (n: number) => f.pick(ALNUM, n);
  const bothQuotes = `${r(3)}'${r(3)}"${r(10)}`;
  const single = `${r(7)}'${r(2)}&${r(4)}`;
  const custom = r(32);
  const argsKey = r(32);
  const flowKey = r(28);
  const optionKey = r(30);
  const urlSecret = r(32);
  const netrcPassword = r(22);
  const b64utf16 = (text: string) => Buffer.from(text, "utf16le").toString("base64");

  it("adds Python repr's form for a value with both quotes and no backslash, and the doubled `'` for one with a `'`: what python3 and SQL write; neither for a value without a quote", () => {
    const py = spawnSync(systemPython(), ["-c", "import json, sys\nfor v in json.load(sys.stdin): print(repr(v)[1:-1])"], { input: JSON.stringify([bothQuotes]), encoding: "utf8" });
    expect(py.status, py.stderr).toBe(0);
    const repr = py.stdout.split("\n")[0]!;
    expect(repr).toContain("\\'");
    expect(escapedForms(bothQuotes).map((x) => x.form)).toContain(repr);
    expect(escapedForms(single)).toContainEqual({ how: "quoted, its ' doubled", form: single.replace("'", "''") });
    const plain = `${r(8)}&${r(8)}`;
    expect(escapedForms(plain).map((x) => x.form).filter((form) => form.includes("'") || form.includes("\\'"))).toEqual([]);
  });

  it("makes three forms of base64 of UTF-16LE (one per alignment), each found in an encoded command that holds the value at any offset; none for a value under 16 characters", () => {
    expect(utf16Base64Forms(r(15))).toEqual([]);
    const forms = utf16Base64Forms(custom);
    expect(forms).toHaveLength(3);
    const known = new KnownSecrets(forms.map((bytes) => ({ name: "V, base64-encoded in UTF-16", bytes, form: true as const })));
    for (let lead = 0; lead < 6; lead++) {
      const command = `${"$".repeat(lead)}env:X='${custom}'; ./deploy.ps1`;
      expect(known.find(Buffer.from(`powershell -EncodedCommand ${b64utf16(command)}\n`))?.name, String(lead)).toBe("V, base64-encoded in UTF-16");
      expect(known.find(Buffer.from(`powershell -EncodedCommand ${b64utf16(command.replace(custom, r(32)))}\n`)), String(lead)).toBeUndefined();
    }
  });

  it("reads a config.yaml sequence's scalars (block at its key's indent or under it, flow), each by its shape, an option's value named by the option; a setting's sequence gives none", () => {
    const seen: [string, string, boolean][] = [];
    const config = [
      "toolsets: [hermes-cli, web]",
      "mcp_servers:",
      "  notion:",
      "    command: npx",
      "    args:",
      "      - -y",
      "      - '@acme/notion-mcp'",
      "      - --api-key",
      `      - ${argsKey}`,
      "  github:",
      "    args:",
      "    - --token",
      `    - "${optionKey}"`,
      "    env:",
      "      LOG_LEVEL: debug",
      `  search: {command: npx, args: ["-y", "@acme/search", --key, '${flowKey}']}`,
      `  other:`,
      `    args: [--port=8080, --client-secret=${optionKey}]`,
      "",
    ].join("\n");
    forEachSecretEntry(config, "yaml", (name, value, byShape) => seen.push([name, value, byShape]));
    expect(seen).toContainEqual(["mcp_servers.notion.args --api-key", argsKey, true]);
    expect(seen).toContainEqual(["mcp_servers.github.args --token", optionKey, true]);
    expect(seen).toContainEqual(["mcp_servers.other.args --client-secret", optionKey, true]);
    // After an option, named by it whatever it is (`-y` takes no value: a name only, the value judged by its shape).
    expect(seen).toContainEqual(["mcp_servers.notion.args -y", "@acme/notion-mcp", true]);
    expect(seen).toContainEqual(["github.env.LOG_LEVEL", "debug", false]);
    expect(seen).toContainEqual(["toolsets", "web", true]);
    // A flow mapping's sequence is passed over whole, as before (a nested collection).
    expect(seen.map(([, value]) => value)).not.toContain(flowKey);
    const values = seen.flatMap(([name, value, byShape]) => valuesWorthLookingFor(name, value, byShape));
    expect(values).toEqual(expect.arrayContaining([argsKey, optionKey]));
    for (const setting of ["-y", "@acme/notion-mcp", "hermes-cli", "web", "8080", "debug"]) expect(values).not.toContain(setting);
  });

  it("takes a random path segment of 24 characters or more of an MCP server's url, and nothing of another URL or of short or worded segments", () => {
    expect(valuesWorthLookingFor("mcp_servers.zapier.url", `https://mcp.zapier.com/api/mcp/s/${urlSecret}/mcp`, false)).toEqual([urlSecret]);
    expect(valuesWorthLookingFor("mcp_servers.zapier.url", `https://mcp.zapier.com/api/mcp/s/${urlSecret}?x=1#y`, false)).toEqual([urlSecret]);
    for (const url of ["https://mcp.notion.com/mcp", "https://mcp.example.com/api/v1/organizations/engineering-platform-tools/sse", `https://mcp.example.com/s/${r(20)}/mcp`])
      expect(valuesWorthLookingFor("mcp_servers.x.url", url, false), url).toEqual([]);
    expect(valuesWorthLookingFor("model.base_url", `https://api.example.com/v1/${urlSecret}`, false)).toEqual([]);
  });

  it("reads a .netrc's passwords (entries on one line or many, `default`, comments, a macro's lines passed over, quoted words), each named by its machine", () => {
    const seen: [string, string][] = [];
    const netrc = [
      "# ~/.netrc",
      `machine api.example.com login deploy password ${netrcPassword}`,
      "machine pypi.org",
      "  login __token__",
      `  password "pypi-${r(20)} x"`,
      "macdef init",
      "password not-a-password-here",
      "",
      `default login anonymous password ${r(16)}`,
      "",
    ].join("\n");
    forEachSecretEntry(netrc, "netrc", (name, value) => seen.push([name, value]));
    expect(seen.map(([name]) => name)).toEqual(["api.example.com password", "pypi.org password", "default password"]);
    expect(seen[0]![1]).toBe(netrcPassword);
    expect(seen[1]![1]).toMatch(/^pypi-[A-Za-z0-9]{20} x$/);
    expect(valuesWorthLookingFor(seen[0]![0], seen[0]![1], false)).toEqual([netrcPassword]);
  });

  it("refuses each form through the CLI, naming the variable, the store and the form, never the value; the same forms of other values are published", () => {
    write(hermes, ".env", `DB_PASSWORD="${bothQuotes.replace('"', '\\"')}"\nSUDO_PASSWORD="${single}"\nCUSTOM_SECRET=${custom}\n`);
    write(
      hermes,
      "config.yaml",
      `mcp_servers:\n  notion:\n    command: npx\n    args:\n    - -y\n    - '@acme/notion-mcp'\n    - --api-key\n    - ${argsKey}\n  search:\n    args: ["-y", "@acme/search", "--key", "${flowKey}"]\n  zapier:\n    url: https://mcp.zapier.com/api/mcp/s/${urlSecret}/mcp\n`,
    );
    write(h.home, ".netrc", `machine api.example.com\n  login deploy\n  password ${netrcPassword}\n`);
    const printed = (value: string) => {
      const py = spawnSync(systemPython(), ["-c", "import sys\nprint(\"environ({'HOME': '/home/u', 'DB_PASSWORD': %r})\" % sys.argv[1])", value], { encoding: "utf8" });
      expect(py.status, py.stderr).toBe(0);
      return py.stdout;
    };
    const forms = (v: { both: string; single: string; custom: string; args: string; flow: string; url: string; netrc: string }) => ({
      "environ.txt": printed(v.both),
      "migration.sql.txt": `ALTER USER app WITH PASSWORD '${v.single.replace("'", "''")}';\n`,
      "runbook.md": `\`\`\`yaml\nsudo_password: '${v.single.replace("'", "''")}'\n\`\`\`\n`,
      "task.txt": `powershell.exe -NoProfile -EncodedCommand ${b64utf16(`$env:CUSTOM_SECRET='${v.custom}'; ./deploy.ps1`)}\n`,
      "ps.txt": `agent 4242 node /usr/lib/node_modules/@acme/notion-mcp/dist/index.js --api-key ${v.args}\n`,
      "ps-flow.txt": `agent 4250 node search.js --key ${v.flow}\n`,
      "status.md": `- zapier: https://mcp.zapier.com/api/mcp/s/${v.url}/mcp (12 tools)\n`,
      "netrc.txt": `the deploy password is ${v.netrc}\n`,
    });
    const mine = { both: bothQuotes, single, custom, args: argsKey, flow: flowKey, url: urlSecret, netrc: netrcPassword };
    const other = { both: `${r(3)}'${r(3)}"${r(10)}`, single: `${r(7)}'${r(2)}&${r(4)}`, custom: r(32), args: r(32), flow: r(28), url: r(32), netrc: r(22) };
    const files = Object.entries(forms(mine)).map(([name, text]) => write(work, name, text));
    const twins = Object.entries(forms(other)).map(([name, text]) => write(work, `other-${name}`, text));
    const out = prepareJson([...files, ...twins], "txt,md");
    expect(out.dropped.map(([name, code]) => [name, code])).toEqual(files.map((file) => [path.basename(file), "secret_detected"]));
    const whats = [
      "the value of DB_PASSWORD (the Hermes .env), escaped in a string",
      "the value of SUDO_PASSWORD (the Hermes .env), quoted, its ' doubled",
      "the value of SUDO_PASSWORD (the Hermes .env), quoted, its ' doubled",
      "the value of CUSTOM_SECRET (the Hermes .env), base64-encoded in UTF-16",
      "the value of mcp_servers.notion.args --api-key (the Hermes config.yaml)",
      "the value of mcp_servers.search.args --key (the Hermes config.yaml)",
      "the value of mcp_servers.zapier.url (the Hermes config.yaml)",
      "the value of api.example.com password (the user's ~/.netrc)",
    ];
    whats.forEach((what, i) => expect(out.dropped[i]![2]).toContain(what));
    for (const [, , reason] of out.dropped) for (const v of Object.values(mine)) expect(reason).not.toContain(v.slice(4));
    expect(out.published).toEqual(twins.map((file) => path.basename(file)));
  });
});
