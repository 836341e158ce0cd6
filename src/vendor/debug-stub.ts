// Stands in for the `debug` package inside the bundles. file-type's zip reader
// imports it for trace output we never enable; loading the real one (with tty,
// util and supports-color) would cost every prepare run start-up time.
type DebugFn = ((...args: unknown[]) => void) & { enabled: boolean; extend: () => DebugFn };

function createDebug(): DebugFn {
  const fn = (() => {}) as DebugFn;
  fn.enabled = false;
  fn.extend = createDebug;
  return fn;
}

export default createDebug;
