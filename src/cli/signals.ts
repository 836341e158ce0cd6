/**
 * Resolves on the first SIGTERM or SIGINT. The handlers stay: a second
 * signal must not kill a long-running command (watch, serve) while it
 * finishes the work already begun.
 */
export function untilSignal(): Promise<string> {
  return new Promise((resolve) => {
    const on = (signal: string) => resolve(signal);
    process.on("SIGTERM", on);
    process.on("SIGINT", on);
  });
}
