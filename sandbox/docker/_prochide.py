"""Commands see only their own user's processes in ``/proc`` (round 39).

The executor (the image's shell), its runners and docker-init live as long as the container, and
a process's ``/proc/<pid>/stat`` and ``status`` are world-readable: page faults, CPU time, context
switches and, once a runner is reaped, every command's CPU time (``cutime``). A recycled
container's next task read how many commands the last one ran and how long they burnt: a channel
between tasks that must not talk, and no reset can zero a process's counters. So the host sets
``hidepid=invisible`` on the container's own ``/proc`` before anything of the image runs: an
entry shows only to its own user or to a holder of ``CAP_SYS_PTRACE`` (the executor, which kills
and sweeps through it; the host, which judges a reset through it). Commands of one identity still
see each other; per-call users no longer see one another's processes.
"""

from __future__ import annotations

from sandbox.docker._nsmount import NsReconfigure, super_options
from sandbox.errors import BackendUnavailableError

__all__ = ["check_proc_hidden", "hide_processes"]

_PROC = "/proc"


def hide_processes() -> NsReconfigure:
    """The container's ``/proc`` option that hides other users' processes."""
    return NsReconfigure(target=_PROC, key="hidepid", value="invisible")


def check_proc_hidden(pid: int) -> None:
    """The container's ``/proc`` hides them (fail closed)."""
    opts = super_options(pid, _PROC)
    if not {"hidepid=invisible", "hidepid=2"} & set(opts):
        raise BackendUnavailableError(f"the container's /proc does not hide other users' processes ({opts})")
