"""The background tasks of a Runtime its owner drops without closing die with it.

Why: ``close()`` stops every process of a session, but a host program that forgets a Runtime
(no ``async with``, an error path that skips ``aclose``) left each ``run_in_background`` task
running for as long as the program lived: a model could start work that outlived the
conversation (a listener, a miner). A process exit was already covered (the local backend's
owner guard, the sandbox's own namespace); a living program was not. So the host pid (and its
start time, the pid's identity) of every background task's process is noted as tasks change,
and a `weakref.finalize` on the Runtime (which also runs at interpreter exit) kills those
processes and everything below them once the Runtime is collected unclosed. Nothing here refers
to the Runtime: the finalizer must not keep it alive.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import threading
import weakref
from collections.abc import Callable
from typing import Any

from sandbox._proctree import kill_checked, kill_marked, pids_with_marker, process_table, start_time

__all__ = ["LeftoverTasks", "watch_task_end", "weakly"]


class LeftoverTasks:
    """Host processes of one Runtime's background tasks, killed if the Runtime is dropped unclosed."""

    def __init__(self, owner: object) -> None:
        #: task id -> (host pid, start time in clock ticks)
        self._pids: dict[str, tuple[int, int]] = {}
        #: Run markers of host processes (the local backend's): what left the tree still carries one.
        self._markers: set[str] = set()
        self._lock = threading.Lock()
        self._finalizer = weakref.finalize(owner, self.kill)

    def note(self, tasks: Any) -> None:
        """Record the host pid of each task of ``tasks`` (a `TaskManager`) not yet known."""
        for task in tasks.list():
            execution = tasks.execution(task.id)
            if task.id in self._pids or execution is None:
                continue
            marker = getattr(getattr(execution.process, "tree", None), "marker", None)
            if isinstance(marker, str) and marker:
                with self._lock:
                    self._markers.add(marker)
            try:
                pid = execution.process.pid
            except Exception:  # a backend that cannot say: nothing to note
                continue
            started = start_time(pid) if isinstance(pid, int) else None
            if started is not None and not root_still_there(execution.process):
                continue  # read after the root was reaped: that start time is another process's
            if started is not None:
                with self._lock:
                    self._pids[task.id] = (pid, started)

    def closed(self) -> None:
        """The Runtime closed properly (every process stopped): nothing to do when it goes."""
        self._finalizer.detach()

    def kill(self) -> None:
        """SIGKILL each noted process that is still the one noted, its group and its descendants."""
        with self._lock:
            noted, self._pids = list(self._pids.values()), {}
            markers, self._markers = self._markers, set()
        if not noted and not markers:
            return
        table = process_table()
        children: dict[int, list[int]] = {}
        for pid, (ppid, _started) in table.items():
            children.setdefault(ppid, []).append(pid)
        for root, started in noted:
            if table.get(root, (0, None))[1] != started:
                continue  # ended (its pid may be another process's now)
            below, stack = [], [root]
            while stack:
                for child in children.get(stack.pop(), ()):
                    below.append(child)
                    stack.append(child)
            # Through pidfds, each identity checked after its pidfd is open: the table is a
            # snapshot, and a pid that ended since may be another process's (red team, round 15).
            kill_checked(root, functools.partial(_leads_group_of, started=started))
            for pid in below:
                kill_checked(pid, functools.partial(_started_at, started=table[pid][1]))
        for marker in markers:  # a local run that left its group and tree (``setsid``, a double fork)
            kill_marked(pids_with_marker(marker), marker.__eq__)


def root_still_there(process: object) -> bool:
    """Whether the command's root is still unreaped *now*, so its pid read just before named it.

    A task is noted (and recorded in ``tasks.json``) when the session changes, possibly long
    after its shell exited and was reaped: its pid may be another process's by then, which a
    dropped Runtime's kill, or a reopened session's, would then kill (red team, round 15).
    Backends without a host process tree (docker) cannot say: True, as before.
    """
    tree = getattr(process, "tree", None)
    unreaped = getattr(tree, "root_unreaped", None)
    return bool(unreaped()) if callable(unreaped) else True


def _started_at(pid: int, *, started: int) -> bool:
    return start_time(pid) == started


def _leads_group_of(pid: int, *, started: int) -> bool:
    """``pid`` is still the noted process; its group is killed first when it leads one (the local
    backend's runs): the leader is alive, so the group's id is still its own."""
    if start_time(pid) != started:
        return False
    with contextlib.suppress(OSError):
        if os.getpgid(pid) == pid:
            os.killpg(pid, signal.SIGKILL)
    return True


def weakly(method: Callable[[], None]) -> Callable[[], None]:
    """``method`` (bound) called through a weak reference to its object: a callback the session's
    own tasks hold must not keep a dropped Runtime alive (then it could never be collected)."""
    ref = weakref.WeakMethod(method)

    def call() -> None:
        bound = ref()
        if bound is not None:
            bound()

    return call


async def watch_task_end(tasks: Any, registry: Any, task_id: str) -> None:
    """Save the task registry once the task ends (a loop task holding no Runtime)."""
    await tasks.wait(task_id)
    registry.save()
