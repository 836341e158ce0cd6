"""media-outbox for Hermes: no prepared file is ever silently left out of a reply.

A thin shim over the media-outbox CLI (every rule lives there):

* the ``send_file`` tool runs ``media-outbox prepare --json`` on a path (an
  argument list, never a shell) and hands the model the structured result;
* a ``media-outbox prepare`` the model ran through the terminal tool is seen in
  that tool's result (``post_tool_call``);
* both record what was published for the turn, per session; what a
  ``delegate_task`` subagent publishes is recorded for its parent too
  (``subagent_start`` names the pair), since only the parent's reply reaches
  the chat; those wait in a small file under Hermes' state
  (``$HERMES_HOME/state/media-outbox/delegated.json``) until that reply, so a
  gateway restart in between does not lose them;
* ``transform_llm_output`` hands the final reply and the turn's published files
  to ``media-outbox check-reply``, which puts every published file's exact
  ``MEDIA:`` line into the reply and names what the gateway would drop. It is
  bounded in time and fails open: on any failure the reply goes out unchanged
  and the log says why. A reply without ``MEDIA:`` when nothing was published
  costs no subprocess at all.

Standard library only: it runs inside the gateway's own interpreter.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import secrets
import shutil
import stat
import subprocess
import threading
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

logger = logging.getLogger(__name__)

PLUGIN_DIR = Path(__file__).resolve().parent
# Written by `media-outbox install hermes-plugin`: the exact command to run
# (node and the CLI), so the gateway's PATH does not matter.
COMMAND_FILE = PLUGIN_DIR / "command.json"
COMMAND_ENV = "MEDIA_OUTBOX_BIN"
TIMEOUT_ENV = "MEDIA_OUTBOX_REPLY_TIMEOUT"
# The hook's bound: past it the reply goes out unchanged. check-reply takes
# about a Node start-up (well under 150 ms); the bound only catches a stuck or
# starved process.
DEFAULT_REPLY_TIMEOUT = 2.0
PREPARE_TIMEOUT = 120.0
MAX_FILES_PER_TURN = 64
MAX_SESSIONS = 256
# Longer than any path the kernel takes (PATH_MAX): never a published file, so never kept.
MAX_PATH_CHARS = 4096
# Subagents of subagents: Hermes allows a few levels; the walk up is bounded whatever a hook says.
MAX_DELEGATION_DEPTH = 8
# Characters a failed JSON decode may scan in one tool output, beyond which no
# more `{` are tried: each try costs what it scanned, so the reading stays
# linear in the output, however many braces it holds.
JSON_SCAN_FACTOR = 4
JSON_SCAN_SLACK = 65536
# The subagents' files waiting for their parent's reply, kept across a gateway
# restart: in Hermes' state directory (the gateway always writes there), in a
# directory of the plugin's own.
STATE_DIRS = ("state", "media-outbox")
STATE_FILE = "delegated.json"
# A few hundred sessions of outbox paths fit many times over; a file past it is
# not read (and is replaced at the next write).
MAX_STATE_BYTES = 1 << 20
MAX_SESSION_ID_CHARS = 256

TOOL_NAME = "send_file"
TOOLSET = "media_outbox"

SEND_FILE_SCHEMA: Dict[str, Any] = {
    "name": TOOL_NAME,
    "description": (
        "Send a file you made (image, document, audio, video) to the user. It is checked and "
        "published by media-outbox, and attached to your final reply automatically. The result "
        "says what was published, or why the file was refused (fix that and call again)."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": "Path of the file to send (absolute, or relative to your working directory), with its real extension.",
            },
            "name": {
                "type": "string",
                "description": "Optional file name the user sees (its extension must match the content), e.g. report.pdf.",
            },
        },
        "required": ["path"],
    },
}

DELIVERY_NOTE = (
    "Published: it will be attached to your final reply automatically. You may also put the "
    "directive line in your reply exactly as given, on a line of its own; never retype or wrap it."
)

_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\\]")
_DIRECTIVE = re.compile(r"(media)(\s*):", re.IGNORECASE)
_MEDIA_LINE = re.compile(r"^MEDIA:(/\S+)$")
_MEDIA_ANYWHERE = re.compile(r"media:", re.IGNORECASE)
_PREPARE_WORD = re.compile(r"\bprepare\b")


def _safe(text: Any, limit: int = 300) -> str:
    """Text fit for one log line: controls escaped, no forged MEDIA: directive, bounded."""
    s = str(text)[:limit]
    s = _UNSAFE.sub(lambda m: "\\x%02x" % ord(m.group(0)) if ord(m.group(0)) < 0x100 else "\\u{%x}" % ord(m.group(0)), s)
    return _DIRECTIVE.sub(r"\1\2\\x3a", s)


def media_outbox_command() -> Optional[List[str]]:
    """The argument list that runs the CLI: $MEDIA_OUTBOX_BIN, then command.json, then PATH."""
    env = os.environ.get(COMMAND_ENV, "").strip()
    if env:
        return [env]
    try:
        data = json.loads(COMMAND_FILE.read_text(encoding="utf-8"))
        if isinstance(data, list) and data and all(isinstance(x, str) and x for x in data):
            return list(data)
        logger.warning("media-outbox: %s is not a list of strings; ignoring it", _safe(COMMAND_FILE))
    except FileNotFoundError:
        pass
    except (OSError, ValueError) as exc:
        logger.warning("media-outbox: cannot read %s: %s", _safe(COMMAND_FILE), _safe(exc))
    found = shutil.which("media-outbox")
    return [found] if found else None


def _reply_timeout() -> float:
    raw = os.environ.get(TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_REPLY_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = None
    if value is not None and 0 < value <= 60:
        return value
    # Said at each reply, not once: a setting that is not used should not go unnoticed.
    logger.warning(
        "media-outbox: %s=%s is not a number of seconds above 0 and at most 60; using %.1f s",
        TIMEOUT_ENV,
        _safe(raw),
        DEFAULT_REPLY_TIMEOUT,
    )
    return DEFAULT_REPLY_TIMEOUT


def _hermes_home() -> Optional[Path]:
    """The Hermes home of this gateway, as Hermes resolves it: $HERMES_HOME, else ~/.hermes (None when there is no home to expand)."""
    raw = os.environ.get("HERMES_HOME", "").strip()
    try:
        return Path(raw).expanduser() if raw else Path.home() / ".hermes"
    except (RuntimeError, KeyError):
        return None


def _keep_paths(paths: Any, into: Optional[List[str]] = None) -> List[str]:
    """`paths` added to `into` as a turn keeps them: strings a path may be, each once, at most MAX_FILES_PER_TURN."""
    files = into if into is not None else []
    for p in paths if isinstance(paths, list) else []:
        if isinstance(p, str) and 0 < len(p) <= MAX_PATH_CHARS and p not in files and len(files) < MAX_FILES_PER_TURN:
            files.append(p)
    return files


class DelegatedStore:
    """The subagents' files waiting for a session's next reply, on disk:
    `{"version": 1, "sessions": {session_id: [path, ...]}}`, oldest session first.

    The gateway's user is the agent's too (single-user mode), so the agent may
    have planted anything there: each directory below the Hermes home is opened
    without following a symlink and must be the gateway user's own, writable by
    no one else; the file is read only when it is a regular file of that user
    with one link, bounded; it is replaced whole (a new file, renamed over the
    name: never written through a link), and removed once nothing waits.
    Processes sharing the Hermes home (the gateway, a `hermes` CLI) take turns
    under a lock on the directory. Every failure is logged and leaves the
    records in memory only, as before.
    """

    def __init__(self, home: Path) -> None:
        self.home = home

    @property
    def path(self) -> Path:
        return self.home.joinpath(*STATE_DIRS, STATE_FILE)

    def _open_dir(self, create: bool) -> Optional[int]:
        """The state directory, opened (None when it does not exist and `create` is false)."""
        try:
            fd = os.open(self.home, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except FileNotFoundError:
            if create:
                raise
            return None
        try:
            for name in STATE_DIRS:
                if create:
                    try:
                        os.mkdir(name, 0o700, dir_fd=fd)
                    except FileExistsError:
                        pass
                try:
                    child = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
                except FileNotFoundError:
                    if create:
                        raise
                    os.close(fd)
                    return None
                os.close(fd)
                fd = child
                st = os.fstat(fd)
                if st.st_uid != os.geteuid() or st.st_mode & 0o022:
                    raise PermissionError(f"{name} is not the gateway user's own directory, or others may write in it")
            return fd
        except BaseException:
            os.close(fd)
            raise

    def _read(self, dfd: int) -> Dict[str, List[str]]:
        try:
            fd = os.open(STATE_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
        except FileNotFoundError:
            return {}
        except OSError as exc:
            # A symlink (ELOOP) or worse: not read, and replaced at the next write.
            logger.warning("media-outbox: %s is not read (%s); it is replaced at the next write", _safe(self.path), _safe(exc))
            return {}
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1 or st.st_uid != os.geteuid():
                logger.warning("media-outbox: %s is not read (not a file of the gateway's own with one link); it is replaced at the next write", _safe(self.path))
                return {}
            chunks: List[bytes] = []
            size = 0
            while size <= MAX_STATE_BYTES:
                chunk = os.read(fd, MAX_STATE_BYTES + 1 - size)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
        finally:
            os.close(fd)
        try:
            if size > MAX_STATE_BYTES:
                raise ValueError(f"over {MAX_STATE_BYTES} bytes")
            document = json.loads(b"".join(chunks).decode("utf-8"))
            sessions = document["sessions"] if isinstance(document, dict) and document.get("version") == 1 else None
            if not isinstance(sessions, dict):
                raise ValueError("not a version 1 record")
        except (ValueError, RecursionError) as exc:
            logger.warning("media-outbox: %s is not read (%s); it is replaced at the next write", _safe(self.path), _safe(exc))
            return {}
        table: Dict[str, List[str]] = {}
        for key, paths in sessions.items():
            files = _keep_paths(paths)
            if len(key) <= MAX_SESSION_ID_CHARS and files:
                table[key] = files
        while len(table) > MAX_SESSIONS:
            table.pop(next(iter(table)))
        return table

    def _write(self, dfd: int, table: Dict[str, List[str]]) -> None:
        # Bounded in bytes too: the oldest sessions go first (sizes counted once, so it stays linear).
        # Each session is `"key": [...], ` in the document.
        sizes = {key: len(json.dumps(key)) + len(json.dumps(files)) + 4 for key, files in table.items()}
        total = sum(sizes.values()) + 64
        while table and total > MAX_STATE_BYTES:
            total -= sizes[next(iter(table))]
            table.pop(next(iter(table)))
        if not table:
            try:
                os.unlink(STATE_FILE, dir_fd=dfd)
            except FileNotFoundError:
                pass
            return
        data = json.dumps({"version": 1, "sessions": table}).encode("ascii")
        temp = ".%s.%d.%s" % (STATE_FILE, os.getpid(), secrets.token_hex(4))
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dfd)
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.rename(temp, STATE_FILE, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            try:
                os.unlink(temp, dir_fd=dfd)
            except OSError:
                pass
            raise

    def _update(self, create: bool, change: Any) -> Any:
        """`change(table)` under the lock, the table written back when it says so; its answer, or None on failure."""
        try:
            dfd = self._open_dir(create)
            if dfd is None:
                return None
            try:
                fcntl.flock(dfd, fcntl.LOCK_EX)
                table = self._read(dfd)
                answer, changed = change(table)
                if changed:
                    self._write(dfd, table)
                return answer
            finally:
                os.close(dfd)
        except (OSError, ValueError) as exc:
            logger.warning("media-outbox: %s: %s; subagents' files wait in memory only (a gateway restart loses them)", _safe(self.path), _safe(exc))
            return None

    def add(self, sessions: List[str], paths: List[str]) -> None:
        """`paths` wait for each of `sessions`' next reply."""
        def change(table: Dict[str, List[str]]) -> Tuple[None, bool]:
            for key in sessions:
                if len(key) <= MAX_SESSION_ID_CHARS:
                    table[key] = _keep_paths(paths, table.pop(key, []))
            while len(table) > MAX_SESSIONS:
                table.pop(next(iter(table)))
            return None, True

        if sessions and paths:
            self._update(True, change)

    def take(self, session_id: str) -> List[str]:
        """What waits for this session's reply, removed from the file."""
        return self._update(False, lambda table: _pop(table, session_id)) or []

    def peek(self, session_id: str) -> List[str]:
        return self._update(False, lambda table: (list(table.get(session_id, [])), False)) or []


def _pop(table: Dict[str, List[str]], key: str) -> Tuple[List[str], bool]:
    """The key's files, taken out of the table (which changed only when it held them)."""
    if key not in table:
        return [], False
    return table.pop(key), True


class TurnRecords:
    """What was published in the current turn, per session (bounded, thread-safe).

    A subagent's publications are also kept for every session above it (its
    parent, and so on), apart from the turn: a background subagent may publish
    after its parent's turn ended, and its result re-enters the conversation as
    a new turn. They wait for the next final reply of that session, whichever
    turn it ends, and are then counted in its turn; the store keeps them across
    a gateway restart (the sessions' ids survive it, the memory does not).
    """

    def __init__(self, store: Optional[DelegatedStore] = None) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._files: Dict[str, List[str]] = {}
        self._delegated: Dict[str, List[str]] = {}
        self._parents: Dict[str, str] = {}

    @staticmethod
    def _bounded_add(table: Dict[str, List[str]], key: str, paths: List[str]) -> None:
        table[key] = _keep_paths(paths, table.pop(key, []))
        while len(table) > MAX_SESSIONS:
            # The oldest session's turn is long over.
            table.pop(next(iter(table)))

    def start(self, session_id: str) -> None:
        with self._lock:
            self._files.pop(session_id or "", None)

    def _ancestors(self, key: str) -> List[str]:
        found: List[str] = []
        parent = self._parents.get(key)
        while parent is not None and parent != key and parent not in found and len(found) < MAX_DELEGATION_DEPTH:
            found.append(parent)
            parent = self._parents.get(parent)
        return found

    def add(self, session_id: str, paths: List[str]) -> None:
        key = session_id or ""
        with self._lock:
            self._bounded_add(self._files, key, paths)
            ancestors = self._ancestors(key) if paths else []
            for ancestor in ancestors:
                self._bounded_add(self._delegated, ancestor, paths)
            if self._store is not None:
                self._store.add(ancestors, _keep_paths(paths))

    def adopt(self, child_session_id: str, parent_session_id: str) -> None:
        """A subagent started: what it publishes is its parent's too."""
        if not child_session_id or not parent_session_id or child_session_id == parent_session_id:
            return
        with self._lock:
            self._parents.pop(child_session_id, None)
            self._parents[child_session_id] = parent_session_id
            while len(self._parents) > MAX_SESSIONS:
                self._parents.pop(next(iter(self._parents)))

    def release(self, child_session_id: str) -> None:
        """The subagent has finished: its publications are already recorded above it."""
        with self._lock:
            self._parents.pop(child_session_id or "", None)

    def get(self, session_id: str) -> List[str]:
        """The turn's files, then its subagents' not yet handed to a reply."""
        key = session_id or ""
        with self._lock:
            files = list(self._files.get(key, []))
            stored = self._store.peek(key) if self._store is not None else []
            return list(dict.fromkeys(files + self._delegated.get(key, []) + stored))

    def claim(self, session_id: str) -> List[str]:
        """The files for this final reply: the subagents' files waiting join the turn's (and so leave with it)."""
        key = session_id or ""
        with self._lock:
            waiting = self._delegated.pop(key, []) + (self._store.take(key) if self._store is not None else [])
            if waiting:
                self._bounded_add(self._files, key, waiting)
            return list(self._files.get(key, []))

    def end(self, session_id: str) -> None:
        self.start(session_id)


_HOME = _hermes_home()
records = TurnRecords(DelegatedStore(_HOME) if _HOME is not None else None)


def published_paths(document: Any) -> List[str]:
    """The published paths of a `prepare --json` document."""
    if not isinstance(document, dict):
        return []
    media = document.get("media")
    if not isinstance(media, list):
        return []
    return [m["path"] for m in media if isinstance(m, dict) and isinstance(m.get("path"), str)]


_JSON = json.JSONDecoder()
# Where a JSON object may start: `{`, blanks, then a key or the end. Other braces (a
# Python dict's `{'`, prepare's own `\u{200b}` escapes) are never tried.
_OBJECT_START = re.compile(r"\{[ \t\r\n]*[\"}]")
# The first window a try decodes: a JSONDecodeError counts the lines before its
# position, so a try is made on a slice starting at the brace (never on the
# whole output), grown while the document runs past its end.
JSON_WINDOW = 128


def _decode_object(text: str, at: int) -> Tuple[Any, int, int]:
    """(object, its end, 0) for the JSON object at `at`, or (None, at, cost): cost is the characters the failed try scanned."""
    size = JSON_WINDOW
    while True:
        window = text[at : at + size]
        whole = at + size >= len(text)
        try:
            value, end = _JSON.raw_decode(window)
            # An object ends at its own `}`: decoded in a window, it is what the whole text holds.
            return value, at + end, 0
        except json.JSONDecodeError as exc:
            cut = exc.pos >= len(window) - 8 or exc.msg.startswith("Unterminated string")
            if whole or not cut:
                return None, at, max(exc.pos, 1)
        except RecursionError:
            # Nested deeper than the parser goes: not prepare's document.
            return None, at, len(window)
        size *= 4


def json_documents(text: str) -> List[Any]:
    """Every JSON object in the text: a decode is tried at each place an object
    may start, and a document that decodes is skipped past whole (its own
    braces are not tried again). A try that fails costs what it scanned; past a
    budget linear in the text no more are made, so the reading stays linear."""
    documents: List[Any] = []
    budget = JSON_SCAN_FACTOR * len(text) + JSON_SCAN_SLACK
    m = _OBJECT_START.search(text)
    while m is not None and budget > 0:
        value, end, cost = _decode_object(text, m.start())
        if cost:
            budget -= cost
            m = _OBJECT_START.search(text, m.start() + 1)
        else:
            documents.append(value)
            m = _OBJECT_START.search(text, end)
    return documents


def media_lines(output: str) -> List[str]:
    """The paths of the lines of the text that are a bare `MEDIA:/path`."""
    return [m.group(1) for m in (_MEDIA_LINE.match(line.rstrip("\r")) for line in output.splitlines()) if m]


def parse_prepare_output(output: str) -> List[str]:
    """Published paths in what a terminal run of `media-outbox prepare` printed:
    MEDIA: lines, and every `--json` document in it (one command may run
    prepare twice, print other JSON first, or have prepare's own stderr line,
    which may hold a brace, merged before its document)."""
    paths = media_lines(output)
    for document in json_documents(output):
        paths.extend(published_paths(document))
    return list(dict.fromkeys(paths))


def delegated_paths(result: Any) -> List[str]:
    """The MEDIA: lines of a delegate_task result's summaries: a subagent's final
    reply, checked by this plugin in its own session, carries a line for each
    file it published (a summary Hermes cut may have lost some: those come from
    subagent_start's record instead)."""
    try:
        document = json.loads(result) if isinstance(result, str) else result
    except (ValueError, RecursionError):
        return []
    entries = document.get("results") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        return []
    paths: List[str] = []
    for entry in entries:
        summary = entry.get("summary") if isinstance(entry, dict) else None
        if isinstance(summary, str):
            paths.extend(media_lines(summary))
    return list(dict.fromkeys(paths))


def _working_dir() -> str:
    """Where a relative path is taken from: the agent's terminal directory when the gateway sets one."""
    cwd = os.environ.get("TERMINAL_CWD", "").strip()
    return cwd if cwd and os.path.isdir(cwd) else os.getcwd()


def _error(code: str, message: str) -> str:
    return json.dumps({"success": False, "error": {"code": code, "message": message}}, ensure_ascii=False)


def _run_prepare(command: List[str], extra: List[str], stdin: Any) -> Dict[str, Any]:
    proc = subprocess.run(
        [*command, "prepare", "--json", *extra],
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=_working_dir(),
        timeout=PREPARE_TIMEOUT,
        check=False,
    )
    try:
        document = json.loads(proc.stdout.decode("utf-8"))
    except ValueError:
        document = None
    if not isinstance(document, dict):
        detail = proc.stderr.decode("utf-8", "replace").strip() or f"exit status {proc.returncode}"
        return {"success": False, "error": {"code": "prepare_failed", "message": _safe(detail)}}
    return document


def send_file(args: Dict[str, Any], **kwargs: Any) -> str:
    """The send_file tool: prepare the file, record what was published for the turn, return the result."""
    path = args.get("path") if isinstance(args, dict) else None
    name = args.get("name") if isinstance(args, dict) else None
    if not isinstance(path, str) or not path.strip():
        return _error("usage", "path must be the path of the file to send")
    if name is not None and (not isinstance(name, str) or not name.strip()):
        return _error("usage", "name, when given, must be a file name such as report.pdf")
    command = media_outbox_command()
    if command is None:
        return _error("plugin_error", "media-outbox is not installed where the gateway can run it (run media-outbox install hermes-plugin)")
    # One prepare: the file's own path goes through every check, the name (as
    # `--name=NAME`, so a name starting with `-` is still a value) only decides
    # the published name and extension. `--` ends the options: a path starting
    # with `-` is a path.
    extra = ([f"--name={name}"] if name else []) + ["--", os.path.expanduser(path)]
    try:
        document = _run_prepare(command, extra, subprocess.DEVNULL)
        published = published_paths(document)
    except subprocess.TimeoutExpired:
        return _error("plugin_error", f"media-outbox prepare took longer than {PREPARE_TIMEOUT:.0f} s")
    except OSError as exc:
        return _error("plugin_error", f"cannot run media-outbox: {_safe(exc)}")
    records.add(str(kwargs.get("session_id") or ""), published)
    if published:
        document["delivery"] = DELIVERY_NOTE
    return json.dumps(document, ensure_ascii=False)


def on_post_tool_call(tool_name: str = "", args: Any = None, result: Any = None, session_id: str = "", **_: Any) -> None:
    """Records the files a `media-outbox prepare` run through the terminal tool
    published, and those a synchronous delegate_task's subagents did."""
    if tool_name == "delegate_task":
        # Over-inclusive on purpose, as for terminal runs: check-reply takes only files really published in the outbox.
        records.add(session_id, delegated_paths(result))
        return None
    if tool_name != "terminal" or not isinstance(args, dict):
        return None
    command = args.get("command")
    # Over-inclusive on purpose: check-reply takes only files really published in the outbox.
    if not isinstance(command, str) or "media-outbox" not in command or not _PREPARE_WORD.search(command):
        return None
    output = result
    if isinstance(result, str):
        try:
            parsed = json.loads(result)
            output = parsed.get("output", "") if isinstance(parsed, dict) else result
        except (ValueError, RecursionError):
            output = result
    if isinstance(output, str):
        records.add(session_id, parse_prepare_output(output))
    return None


def on_subagent_start(parent_session_id: Any = None, child_session_id: Any = None, **_: Any) -> None:
    """A delegate_task subagent runs in a session of its own, and its final reply
    only reaches its parent: what it publishes is recorded for the parent too."""
    if isinstance(parent_session_id, str) and isinstance(child_session_id, str):
        records.adopt(child_session_id, parent_session_id)
    return None


def on_subagent_stop(child_session_id: Any = None, **_: Any) -> None:
    if isinstance(child_session_id, str):
        records.release(child_session_id)
    return None


def on_pre_llm_call(session_id: str = "", **_: Any) -> None:
    """A new turn: nothing published yet."""
    records.start(session_id)
    return None


def on_session_end(session_id: str = "", **_: Any) -> None:
    """The turn is over (Hermes fires this at the end of every run)."""
    records.end(session_id)
    return None


def reply_bytes(reply: str) -> bytes:
    """The reply as the UTF-8 check-reply reads. A model's emoji split into
    escapes leaves surrogates in the text, which UTF-8 cannot encode (Hermes
    removes them only from what it sends to the API): a pair becomes its
    character and a lone one U+FFFD, so the check still runs on the rest
    rather than being skipped."""
    try:
        return reply.encode("utf-8")
    except UnicodeEncodeError:
        return reply.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace").encode("utf-8")


def check_reply(reply: str, published: List[str], timeout: Optional[float] = None) -> Optional[str]:
    """The reply check-reply returns, or None (reply unchanged) on any failure, which is logged."""
    command = media_outbox_command()
    if command is None:
        logger.warning("media-outbox: check-reply skipped: media-outbox is not installed where the gateway can run it")
        return None
    argv = [*command, "check-reply", "--json"]
    for p in published:
        argv += ["--media", p]
    bound = timeout if timeout is not None else _reply_timeout()
    try:
        proc = subprocess.run(
            argv,
            input=reply_bytes(reply),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            timeout=bound,
            check=False,
        )
    except subprocess.TimeoutExpired:
        logger.warning("media-outbox: check-reply took longer than %.2f s; the reply goes out unchanged", bound)
        return None
    except (OSError, ValueError, UnicodeError) as exc:
        logger.warning("media-outbox: cannot run check-reply (%s); the reply goes out unchanged", _safe(exc))
        return None
    if proc.returncode != 0:
        logger.warning(
            "media-outbox: check-reply failed (exit %s: %s); the reply goes out unchanged",
            proc.returncode,
            _safe(proc.stderr.decode("utf-8", "replace").strip()),
        )
        return None
    try:
        report = json.loads(proc.stdout.decode("utf-8"))
        text = report["reply"]
        changed = report["changed"]
    except (ValueError, KeyError, TypeError) as exc:
        logger.warning("media-outbox: check-reply answered something unreadable (%s); the reply goes out unchanged", _safe(exc))
        return None
    if not isinstance(text, str) or not changed:
        return None
    logger.info(
        "media-outbox: reply checked: %d line(s) added, %d mangled cop(ies) removed, %d file(s) named as not sent",
        len(report.get("added") or []),
        len(report.get("removed") or []),
        len(report.get("notes") or []),
    )
    return text


def on_transform_llm_output(response_text: Any = "", session_id: str = "", **_: Any) -> Optional[str]:
    """The final reply, checked; None leaves it unchanged."""
    if not isinstance(response_text, str) or not response_text:
        return None
    published = records.claim(session_id)
    # Nothing published and no directive in the reply: nothing to judge, no subprocess.
    if not published and not _MEDIA_ANYWHERE.search(response_text):
        return None
    try:
        return check_reply(response_text, published)
    except Exception as exc:  # noqa: BLE001 — fail open: a reply is never lost to this hook
        logger.warning("media-outbox: check-reply hook failed (%s); the reply goes out unchanged", _safe(exc))
        return None


def register(ctx: Any) -> None:
    ctx.register_tool(
        name=TOOL_NAME,
        toolset=TOOLSET,
        schema=SEND_FILE_SCHEMA,
        handler=send_file,
        # Without a CLI to run, the tool is not offered: the model follows the skill's manual path instead.
        check_fn=lambda: media_outbox_command() is not None,
        description=SEND_FILE_SCHEMA["description"],
        emoji="📎",
    )
    ctx.register_hook("pre_llm_call", on_pre_llm_call)
    ctx.register_hook("post_tool_call", on_post_tool_call)
    ctx.register_hook("transform_llm_output", on_transform_llm_output)
    ctx.register_hook("on_session_end", on_session_end)
    ctx.register_hook("subagent_start", on_subagent_start)
    ctx.register_hook("subagent_stop", on_subagent_stop)
