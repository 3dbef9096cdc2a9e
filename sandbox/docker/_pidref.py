"""A host process named by a pidfd, for joining a container's namespaces (round 40).

Opening ``/proc/<pid>/ns/...`` by number in a child joins whatever process holds that number when
the child runs: a container's process that ended in between (its container killed, a daemon's
restart) may have handed its pid to a host process, and a root host would then mount into, or
detach from, the host's own namespace. A `PidRef` is opened first and proven after; joins use
``setns`` on the pidfd (kernel >= 5.8), which refers to that process alone and fails once it ended.

Round 41 (docker4): reads too. ``/proc/<pid>/...`` read by number after an `alive` check reads
whoever took the number in between; `PidRef.proc_dir` opens ``/proc/<pid>`` first and proves the
process alive after, so the directory descriptor is that process's (a live process keeps its
number), and every read through it fails once the process ended, never reaching another's files.
"""

from __future__ import annotations

import os
import select
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sandbox.errors import BackendUnavailableError

__all__ = ["PidRef", "pid_ref"]


@dataclass(frozen=True, slots=True)
class PidRef:
    """A host process by pid and by a pidfd opened before its identity was checked: while
    `alive` says so, ``pid`` is that process, and joins go through ``pidfd`` alone."""

    pid: int
    pidfd: int

    def alive(self) -> int:
        """``pid``, or `BackendUnavailableError` once the process ended (the number may be reused)."""
        poller = select.poll()
        poller.register(self.pidfd, select.POLLIN)
        if poller.poll(0):
            raise BackendUnavailableError(f"host process {self.pid} ended (its pid may be another's now)")
        return self.pid

    @contextmanager
    def proc_dir(self) -> Iterator[str]:
        """A path to this process's ``/proc`` directory alone (``/proc/self/fd/<n>``): opened by
        number, then proven alive (`BackendUnavailableError` if not); reads below it fail (ENOENT,
        ESRCH) once the process ended, whoever holds the number then."""
        try:
            fd = os.open(f"/proc/{self.pid}", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise BackendUnavailableError(f"host process {self.pid} is gone: {exc}") from exc
        try:
            self.alive()
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)

    def read(self, name: str) -> str:
        """``/proc/<pid>/<name>`` of this process alone (`proc_dir`); `OSError` once it ended."""
        with self.proc_dir() as base, open(f"{base}/{name}", encoding="utf-8", errors="replace") as fh:
            return fh.read()


def pid_ref(pid: int, is_it: Callable[[int], bool], what: str) -> PidRef:
    """Open a pidfd on ``pid``, then prove with ``is_it`` that the number still names ``what``
    (after the open: a pid reused before it fails the proof, one reused after it leaves the
    pidfd dead). The caller closes ``pidfd``. `BackendUnavailableError` if not proven."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError as exc:
        raise BackendUnavailableError(f"{what} (host pid {pid}) is gone: {exc}") from exc
    ref = PidRef(pid, pidfd)
    try:
        if not is_it(pid):
            raise BackendUnavailableError(f"host pid {pid} is no longer {what}")
        ref.alive()
    except BaseException:
        os.close(pidfd)
        raise
    return ref
