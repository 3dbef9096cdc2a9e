"""The "command in flight" record of a workspace: its protected files' baseline, on disk.

The protected-files check (`protect`) compares the workspace after a command with
a baseline taken before it. If shellrt dies (SIGKILL, OOM kill, power loss of the
host process) after a command planted a hook but before that check, the baseline
died with it, and the next session would take the plant as its own baseline. So
while a command of a session may be running, the baseline is kept in
``<state>/inflight/`` (``$SHELLRT_HOME``, else ``$XDG_STATE_HOME/shellrt``, else
``~/.local/state/shellrt``: never in the workspace, which commands write), named
after the workspace and its owner (pid and start time, so a reused pid is not
taken for the owner). A session starting on the workspace checks against the
records whose owner is dead, then removes them.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sandbox._proctree import stat_fields
from shellrt.supervisor._caller_home import caller_home

__all__ = ["InflightRecord", "inflight_dir", "orphaned_records", "session_root", "state_dir"]

#: A record larger than this is not read back (the check then reverts without restoring).
_MAX_RECORD_BYTES = 64 << 20
#: Modes of a record: a command may be running (its check is owed), or the check ran.
_IN_FLIGHT, _IDLE = 0o600, 0o400


def state_dir() -> Path:
    """shellrt's per-user state directory: ``$SHELLRT_HOME``, else ``$XDG_STATE_HOME/shellrt``,
    else ``~/.local/state/shellrt``. Durable on purpose (not ``$TMPDIR``, which a reboot or tmp
    cleaner empties). Here, not in the runtime: the lean ``shellrt run`` masks it too."""
    base = os.environ.get("SHELLRT_HOME")
    if base:
        return Path(base)
    state = os.environ.get("XDG_STATE_HOME", "")
    root = Path(state) if os.path.isabs(state) else caller_home() / ".local" / "state"
    return root / "shellrt"


def inflight_dir() -> Path:
    """Where records live (the per-user state directory, as sessions)."""
    return state_dir() / "inflight"


def session_root() -> Path:
    """Where sessions live: ``<state_dir>/sessions``."""
    return state_dir() / "sessions"


def _workspace_key(root: Path) -> str:
    return hashlib.sha256(os.fsencode(os.path.realpath(root))).hexdigest()[:32]


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (``/proc/<pid>/stat`` field 22)."""
    fields = stat_fields(pid)
    return fields[19].decode() if fields is not None and len(fields) > 19 else None


class InflightRecord:
    """This process's record for one workspace. Its owner-write bit says whether a command may
    be running (set before a command, cleared after its check); the content is rewritten only
    when the baseline changed, and the file is removed when the session closes.

    The bit is flipped through a descriptor held on the record (``fchmod``): two ``chmod``s of its
    path took 21 µs a command (median wall time here, 7 µs with the descriptor). Before each
    command one ``fstat`` asks whether the record still has a name: one removed or replaced
    meanwhile is written afresh (a ``chmod`` of the path failed then, or changed the impostor)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        start = _start_time(os.getpid()) or "0"
        name = f"{_workspace_key(root)}.{os.getpid()}.{start}.{os.urandom(4).hex()}.json"
        self.path = inflight_dir() / name
        self._key: object = None
        self._in_flight = False
        #: The record written last, held open (its bit is flipped through it).
        self._fd: int | None = None

    def in_flight(self, key: object, baseline: Callable[[], dict[str, Any]]) -> None:
        """A command may run now; ``key`` identifies the baseline (``baseline()`` makes it when
        it changed). Raises OSError when the record cannot be written."""
        if key != self._key or self._key is None or not self._at_path():
            self._key = None
            data = json.dumps({"root": os.path.realpath(self.root), "baseline": baseline()}).encode()
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            tmp = self.path.with_name(self.path.name + ".tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:
                os.fchmod(fd, _IN_FLIGHT)
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.replace(tmp, self.path)
            except BaseException:
                os.close(fd)
                raise
            self._release()
            self._fd = fd
            self._key = key
        elif not self._in_flight:
            assert self._fd is not None  # `_at_path` holds it
            os.fchmod(self._fd, _IN_FLIGHT)
        self._in_flight = True

    def checked(self) -> None:
        """The check ran and nothing of the session runs: the record stays, marked idle."""
        if self._in_flight and self._key is not None:
            try:
                if self._fd is None:
                    raise FileNotFoundError(self.path)
                os.fchmod(self._fd, _IDLE)
            except OSError:
                self._key = None  # rewrite it next time
        self._in_flight = False

    def clear(self) -> None:
        """Remove the record (the session closes after its last check)."""
        self._key, self._in_flight = None, False
        self._release()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def _at_path(self) -> bool:
        """The held record still has a name: not removed, nor replaced by a rename over it.

        Its link count, not a lookup of the path: a path walk costs more than the ``chmod`` it
        replaces. A record moved elsewhere under a new name is not seen; only a program running
        as the session's user outside a sandbox can do that, and the sandboxes hide these records
        (`shellrt.runtime.session_mask`), while such a program could as well rewrite them."""
        if self._fd is None:
            return False
        try:
            return os.fstat(self._fd).st_nlink > 0
        except OSError:
            return False

    def _release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __del__(self) -> None:  # a guard that was never closed must not leak the descriptor
        try:
            self._release()
        except OSError:
            pass


def orphaned_records(root: Path) -> list[tuple[Path, dict[str, Any] | None]]:
    """Records of ``root`` whose owner is dead, oldest first, with their baseline (None when
    unreadable: the check then has no baseline to compare with). Idle ones (their check ran)
    are removed here."""
    directory = inflight_dir()
    key = _workspace_key(root)
    try:
        names = [n for n in os.listdir(directory) if n.startswith(key + ".") and n.endswith(".json")]
    except OSError:
        return []
    found: list[tuple[float, Path, dict[str, Any] | None]] = []
    for name in names:
        parts = name.split(".")
        if len(parts) != 5 or not parts[1].isdigit():
            continue
        pid, start = int(parts[1]), parts[2]
        if _start_time(pid) == start:
            continue  # its owner is alive: a concurrent session of this workspace
        path = directory / name
        try:
            st = os.lstat(path)
            if not st.st_mode & 0o200:
                os.unlink(path)  # idle: the owner's last check ran
                continue
            baseline = _load(path) if st.st_size <= _MAX_RECORD_BYTES else None
        except OSError:
            continue
        found.append((st.st_mtime, path, baseline))
    return [(path, baseline) for _, path, baseline in sorted(found, key=lambda f: f[0])]


def _load(path: Path) -> dict[str, Any] | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            data = json.loads(fh.read(_MAX_RECORD_BYTES + 1))
    except (OSError, ValueError):
        return None
    baseline = data.get("baseline") if isinstance(data, dict) else None
    return baseline if isinstance(baseline, dict) else None
