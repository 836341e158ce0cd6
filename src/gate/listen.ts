// Where the gate listens: the socket systemd passes (socket activation,
// LISTEN_FDS/LISTEN_PID, always descriptor 3), or a socket it creates itself
// at a path given by hand, mode 0660 (its owner and group may connect).
import fs from "node:fs";
import net from "node:net";
import { FatalError, errnoCode, usageError } from "../core/errors.js";
import { escapeText } from "../core/escape.js";

/** The first descriptor systemd passes (SD_LISTEN_FDS_START). */
const SD_LISTEN_FDS_START = 3;
/** The mode of a socket serve creates: connect(2) needs write permission, so this is who may ask. */
export const SOCKET_MODE = 0o660;

/**
 * The listening descriptor systemd passed to this very process, if any. The
 * variables are removed either way, so nothing started later takes them.
 */
export function systemdSocket(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const pid = env.LISTEN_PID;
  const count = Number(env.LISTEN_FDS);
  delete env.LISTEN_PID;
  delete env.LISTEN_FDS;
  delete env.LISTEN_FDNAMES;
  if (pid === undefined || Number(pid) !== process.pid || !Number.isInteger(count) || count < 1) return undefined;
  let st: fs.Stats;
  try {
    st = fs.fstatSync(SD_LISTEN_FDS_START);
  } catch {
    throw new FatalError("config_invalid", `systemd passed LISTEN_FDS=${count} but descriptor ${SD_LISTEN_FDS_START} is not open`);
  }
  if (!st.isSocket()) throw new FatalError("config_invalid", `descriptor ${SD_LISTEN_FDS_START} passed by systemd is not a socket; the gate's .socket unit must be ListenStream= on a path`);
  return SD_LISTEN_FDS_START;
}

function canConnect(file: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.connect(file);
    probe.once("connect", () => {
      probe.destroy();
      resolve(true);
    });
    probe.once("error", () => resolve(false));
  });
}

/**
 * Makes `file` free for a new socket: nothing there, or a socket nobody
 * listens on any more (left by a gate that was killed). Anything else there
 * is never replaced.
 */
export async function clearSocketPath(file: string): Promise<void> {
  const st = fs.lstatSync(file, { throwIfNoEntry: false });
  if (!st) return;
  if (!st.isSocket()) throw usageError(`refusing to replace ${escapeText(file)}: it is not a socket; give --socket a free path`);
  if (await canConnect(file)) throw usageError(`another process already listens on ${escapeText(file)}; stop it or give --socket another path`);
  fs.unlinkSync(file);
}

/**
 * Creates the listening socket at `file`, mode 0660 from the start: the
 * umask is tightened around bind(2), which Node makes synchronously within
 * listen(), so no other user can ever connect through a looser mode.
 */
export function listenOnPath(server: net.Server, file: string): Promise<{ ino: number }> {
  return new Promise((resolve, reject) => {
    const failed = (err: Error) => {
      const code = errnoCode(err);
      if (code === "ENOENT") reject(usageError(`cannot create the socket ${escapeText(file)}: its directory does not exist`));
      else if (code === "EACCES") reject(usageError(`cannot create the socket ${escapeText(file)}: permission denied`));
      else if (code === "EADDRINUSE") reject(usageError(`${escapeText(file)} was taken while the gate started; try again`));
      else reject(err);
    };
    server.once("error", failed);
    const previous = process.umask(0o777 & ~SOCKET_MODE);
    try {
      server.listen({ path: file }, () => {
        server.off("error", failed);
        try {
          fs.chmodSync(file, SOCKET_MODE);
          resolve({ ino: fs.lstatSync(file).ino });
        } catch (err) {
          reject(err as Error);
        }
      });
    } finally {
      process.umask(previous);
    }
  });
}

/** Removes the socket serve created, unless something else has taken its path since. */
export function removeOwnSocket(file: string, ino: number): void {
  const st = fs.lstatSync(file, { throwIfNoEntry: false });
  if (st?.isSocket() && st.ino === ino) fs.unlinkSync(file);
}
