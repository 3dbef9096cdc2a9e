"""The lean ``shellrt run``'s own process as the subreaper of its one command.

``shellrt run`` on the lean local path (`shellrt.cli._local_run`) is shellrt's own
process, not a library inside someone else's, and runs exactly one command. So
it marks itself ``PR_SET_CHILD_SUBREAPER`` for that run: whatever the command
leaves behind however it detaches (``(setsid env -i sleep 1000 &)``, a daemon
that closed its fds) is re-parented to it instead of to init, and is killed and
reaped before the run returns. No extra process, one ``prctl`` and a ``/proc``
read per run. The library's sessions use a reaper process instead (`sandbox._reaper`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator

__all__ = ["kill_adopted", "own_subreaper", "reap_adopted"]


_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37


def _children() -> set[int]:
    """This process's children (every thread's: a child belongs to the thread that forked it)."""
    found: set[int] = set()
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:  # pragma: no cover - /proc is always there on Linux
        return found
    for tid in tasks:
        with contextlib.suppress(OSError, ValueError), open(f"/proc/self/task/{tid}/children") as f:
            found.update(int(p) for p in f.read().split())
    return found


#: While `own_subreaper` is active: the children this process had before (never killed by it).
_keep: set[int] | None = None


def reap_adopted() -> None:
    """Kill and reap what this process adopted so far (no-op outside `own_subreaper`): the lean
    run calls it when its command's shell ended or was killed, as the session reaper does."""
    if _keep is not None:
        kill_adopted(_keep)


@contextlib.contextmanager
def own_subreaper() -> Iterator[None]:
    """Mark this process subreaper for the block; at its end kill and reap every child it gained.

    Only for a process shellrt owns (the lean CLI), never a library caller's. Children it had
    before (the owner guard's watchdog) are left alone; the flag is put back as it was.
    """
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    before = ctypes.c_int(0)
    libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(before), 0, 0, 0)
    global _keep
    keep = _children()
    marked = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    if marked:
        _keep = keep
    try:
        yield
    finally:
        if marked:
            _keep = None
            kill_adopted(keep)
            libc.prctl(_PR_SET_CHILD_SUBREAPER, before.value, 0, 0, 0)


def kill_adopted(keep: set[int], *, deadline_s: float = 5.0) -> None:
    """SIGKILL and reap every child but ``keep``, until none is left (their orphans come to us too)."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        pids = _children() - keep
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        for pid in pids:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
