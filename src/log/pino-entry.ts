// Bundled apart (dist/vendor/pino.js): pino is half the size of a command
// bundle, and only runs that log need it.
export { default } from "pino";
