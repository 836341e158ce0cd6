// Local mode's pipeline, bundled apart (dist/parts/prepare-local.js): a
// prepare through the gate never loads it, nor the content checks within.
// Only plain data crosses between the bundles: each has its own copy of the
// error classes, so a FatalError comes back as its code and message.
import { type FatalCode, FatalError } from "../core/errors.js";
import { type PrepareInput, type PrepareOptions, type PrepareReport, prepare } from "./prepare.js";

export type LocalOutcome = { report: PrepareReport } | { fatal: { code: FatalCode; message: string } };

export async function prepareLocal(inputs: PrepareInput[], options: PrepareOptions): Promise<LocalOutcome> {
  try {
    return { report: await prepare(inputs, options) };
  } catch (err) {
    if (err instanceof FatalError) return { fatal: { code: err.code, message: err.message } };
    throw err;
  }
}
