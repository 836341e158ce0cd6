// One chokidar watch on one directory, for the guard and the drop folders.
import path from "node:path";
import type { FSWatcher } from "chokidar";

/**
 * Watches `dir` itself, not its entries: one inotify watch, however many
 * files it holds (10,000 published files, a flood of drops), and its raw
 * events name every entry created, renamed, written or removed. Entries are
 * judged for what they are (no link followed, no recursion), and at once:
 * chokidar's own `add` would come only after it re-read the whole directory,
 * and never for a dangling symlink. Resolves once the watch is armed.
 */
export async function watchDirectory(dir: string, onEntry: (name: string) => void, onError: (message: string) => void): Promise<FSWatcher> {
  const { watch } = await import("chokidar");
  const watcher = watch(dir, {
    persistent: true,
    ignoreInitial: true,
    followSymlinks: false,
    depth: 0,
    // Report unlink+add at once instead of merging them into a change later.
    atomic: false,
    ignorePermissionErrors: true,
    ignored: (p: string) => p !== dir,
  });
  watcher.on("raw", (_event, evPath, details) => {
    const watched = (details as { watchedPath?: string } | undefined)?.watchedPath;
    if (watched === dir && evPath) onEntry(path.basename(evPath));
    else if (watched && path.dirname(watched) === dir) onEntry(path.basename(watched));
  });
  watcher.on("error", (err) => onError(String((err as Error)?.message ?? err)));
  await new Promise<void>((resolve) => watcher.once("ready", () => resolve()));
  return watcher;
}
