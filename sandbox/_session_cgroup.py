"""A per-session cgroup for the local backend: the reaper's guarantee without its process hop.

`sandbox._reaper` keeps what a command leaves behind (``(setsid env -i sleep 1000 &)``:
out of its process group, marker scrubbed, re-parented to init) below a per-session
subreaper process, at the price of a socket round trip and two wake-ups of another
process per command (~0.5 ms of a ~1.4 ms ``bash -c true`` on a loaded machine).

Where the owner has a cgroup of its own (root, a cgroup v1 ``pids`` hierarchy: see
`sandbox._ownerguard`), each session gets a child cgroup of it instead, and the
owner starts its commands itself (vfork+exec, `sandbox._spawn`): the starting
thread joins the session cgroup for the fork only (cgroup v1 places threads one by
one; two writes, ~10 us), so the command is a member from its first instruction, and
every process it starts, however it detaches, is one too (only root can leave a
cgroup). Then, as with the reaper:

- when a command ends and no other command of the session runs, every member is
  killed (`kill_members`): a leftover dies with its command, or at the next idle
  moment, or at close, when the cgroup is emptied and removed;
- when the owner dies, its watchdog empties the owner cgroup and those nested in it,
  this one included, and the next start sweeps what a killed watchdog left.

The owner's own process is never killed (its thread is a member during a fork).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol, TypeVar

__all__ = ["SessionCgroup", "open_session_cgroup"]

#: How long emptying the cgroup may take (processes fork while they are killed).
_KILL_DEADLINE_S = 5.0


class _HasPid(Protocol):
    pid: int


_Started = TypeVar("_Started", bound=_HasPid)


class SessionCgroup:
    """One session's cgroup (a child of the owner's ``pids`` cgroup); see the module docstring."""

    def __init__(self, path: Path, home: Path) -> None:
        self.path = path
        #: Where the starting thread goes back after each fork (the owner's cgroup).
        self._home_tasks = os.open(home / "tasks", os.O_WRONLY | os.O_CLOEXEC)
        try:
            self._tasks = os.open(path / "tasks", os.O_WRONLY | os.O_CLOEXEC)
        except OSError:
            os.close(self._home_tasks)
            raise
        try:
            #: Read again in place (``pread`` at 0 regenerates it): one system call per check.
            self._count = os.open(path / "pids.current", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            os.close(self._home_tasks)
            os.close(self._tasks)
            raise
        self._procs = str(path / "cgroup.procs")
        self._lock = threading.Lock()
        #: The session's commands still running (their roots' pids): no idle sweep while there are any.
        self._roots: set[int] = set()
        self.closed = False

    def start(self, starter: Callable[[], _Started]) -> _Started:
        """Run ``starter`` (a vfork+exec) with the calling thread a member: what it starts is one
        for good, and counts as a running command of the session until `ended`.

        Raises `OSError` when the thread cannot join (then nothing was started). When it cannot
        go back, the cgroup is closed to new commands and the error is raised: the owner's
        later children must not land where the idle sweep kills (it never kills the owner).
        """
        tid = str(threading.get_native_id()).encode()
        with self._lock:
            if self.closed:
                raise OSError(f"the session cgroup {self.path} is closed")
            os.write(self._tasks, tid)
            try:
                child = starter()
                self._roots.add(child.pid)
            finally:
                try:
                    os.write(self._home_tasks, tid)
                except OSError:
                    self.closed = True
                    raise
        return child

    def ended(self, pid: int) -> bool:
        """Command ``pid`` ended (and was reaped); returns whether it left something behind."""
        with self._lock:
            self._roots.discard(pid)
        return not self.empty()

    def empty(self) -> bool:
        """No task is in the cgroup (``pids.current``: reaped tasks only leave it; the root was
        reaped, and the owner's thread is in it only while it starts a command)."""
        try:
            return int(os.pread(self._count, 32, 0)) == 0
        except (OSError, ValueError):
            return False  # unsure: the caller sweeps

    def kill_if_idle(self) -> None:
        """Kill every member when no command of the session runs (the reaper's idle sweep).

        Under the lock `start` takes: no command starts meanwhile, so none is killed by mistake.
        """
        with self._lock:
            if not self._roots:
                self.kill_members()

    def members(self) -> list[int]:
        """The processes in the cgroup, but the owner (empty when it cannot be read)."""
        try:
            fd = os.open(self._procs, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return []
        try:
            listed = os.read(fd, 1 << 20)
        except OSError:
            return []
        finally:
            os.close(fd)
        me = os.getpid()
        return [pid for pid in map(int, listed.split()) if pid != me]

    def kill_members(self, *, deadline_s: float = _KILL_DEADLINE_S) -> bool:
        """SIGKILL every member until none is left (they are not our children: init reaps them).

        Returns whether the cgroup is empty. A zombie stays a member until its parent reaps it:
        a root of ours that has not been waited for yet keeps it non-empty, nothing else does.
        """
        end = time.monotonic() + deadline_s
        while True:
            pids = self.members()
            if not pids:
                return True
            if time.monotonic() > end:
                return False
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.005)

    def close(self) -> None:
        """Kill every member and remove the cgroup (blocking: call it off the event loop)."""
        with self._lock:
            self.closed = True
        self.kill_members()
        for fd in (self._tasks, self._home_tasks, self._count):
            with contextlib.suppress(OSError):
                os.close(fd)
        for _ in range(100):  # the last killed members may take a moment to leave
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.01)


def open_session_cgroup(owner_cgroup: Path | None) -> SessionCgroup | None:
    """A fresh session cgroup below the owner's, or None where none can be made (the caller
    uses the reaper process then): not root, no owner cgroup, or a kernel that refuses."""
    if owner_cgroup is None or os.geteuid() != 0:
        return None
    path = owner_cgroup / f"session-{secrets.token_hex(6)}"
    try:
        path.mkdir()
    except OSError:
        return None
    try:
        made = SessionCgroup(path, owner_cgroup)
    except OSError:
        with contextlib.suppress(OSError):
            path.rmdir()
        return None
    try:  # the kernel lets this thread in and out: commands can start here
        made.start(_Nothing)
    except OSError:
        made.close()
        return None
    made.ended(_Nothing.pid)
    return made


class _Nothing:
    """What the probe of `open_session_cgroup` "starts": no process."""

    pid = -1
