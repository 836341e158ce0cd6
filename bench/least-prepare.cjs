// The least any prepare written for Node does with a file, and nothing of
// what media-outbox checks: read it, hash it (sha256, for the ledger), copy it
// durably (fdatasync, before it is published), publish it (link), record it
// (one ledger line) and print its MEDIA: line. bench/prepare.mjs times it
// beside `node -e ''` to show what the Node start-up target leaves for the
// checks themselves. Usage: node least-prepare.cjs FILE OUTBOX
"use strict";
const fs = require("node:fs");
const { createHash } = require("node:crypto");

const [src, outbox] = process.argv.slice(2);
const bytes = fs.readFileSync(src);
const sha256 = createHash("sha256").update(bytes).digest("hex");
fs.mkdirSync(`${outbox}/.staging`, { recursive: true });
const staged = `${outbox}/.staging/${process.pid}.part`;
const fd = fs.openSync(staged, "wx");
fs.writeSync(fd, bytes);
fs.fdatasyncSync(fd);
fs.closeSync(fd);
const name = src.slice(src.lastIndexOf("/") + 1);
fs.rmSync(`${outbox}/${name}`, { force: true });
fs.linkSync(staged, `${outbox}/${name}`);
fs.unlinkSync(staged);
fs.appendFileSync(`${outbox}/.ledger.jsonl`, `${JSON.stringify({ name, sha256, bytes: bytes.length })}\n`);
process.stdout.write(`MEDIA:${outbox}/${name}\n`);
