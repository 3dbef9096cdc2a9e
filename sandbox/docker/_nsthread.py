"""Run a piece of work in a host thread of its own, for a namespace it joins (``setns``).

A thread that joined a container's namespace must not go back to serving anything else: the switch
ends with the thread. Both SysV IPC readers (`_reset.sysv_ipc_objects`, `_ipcseq.take_ipc_ids`) run
this way, with one bound on how long they may take and one way of reporting what failed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

__all__ = ["in_own_thread"]

T = TypeVar("T")

#: How long the work may take before the caller gives up on it (the thread is a daemon).
TIMEOUT_S = 10.0


def in_own_thread(work: Callable[[], T], *, name: str, what: str) -> T:
    """``work()`` run in a new daemon thread ``name``; its result. Raises `OSError` when it failed
    (any other exception becomes one, its text kept) or did not end within `TIMEOUT_S` (``what``
    timed out)."""
    result: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            result.append(work())
        except BaseException as exc:  # reported to the caller
            failure.append(exc)

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    thread.join(TIMEOUT_S)
    if thread.is_alive():
        raise OSError(f"{what} timed out")
    if failure:
        exc = failure[0]
        raise exc if isinstance(exc, OSError) else OSError(str(exc))
    return result[0]
