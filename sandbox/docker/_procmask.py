"""Cover the ``/proc`` directories of a container's lasting processes (round 40).

docker-init (PID 1) and the executor outlive every reset. Their ``/proc/<pid>`` files are mostly
world-readable (``stat``, ``status``, ``sched``, ``schedstat``, ``statm``...), and their counters
sum what the commands they reaped did: a task that burnt 2 s of CPU left ~150 ticks in the
executor's ``cutime`` for the next task, which must learn nothing of it. No counter of a living
process can be reset, and masking single files is a deny-list a newer kernel outgrows. So, from the
host and before any command runs, each directory is covered whole by an empty read-only directory
(whatever file a kernel adds stays hidden); the executor's own ``fd`` is bound back on top (read-only
mount), since it names its I/O directory ``/proc/self/fd/8`` (``_detach``). Directory listings of
``/proc`` still name both pids; nothing below them is readable.

The mount namespace is joined through a pidfd (`_nsmount.PidRef`): a recycled pid is never joined.
"""

from __future__ import annotations

import os

from sandbox.docker._detach import run_child
from sandbox.docker._mountscript import mount_script
from sandbox.docker._nsmount import top_mounts
from sandbox.docker._pidref import PidRef
from sandbox.errors import BackendUnavailableError

__all__ = ["check_masked", "make_mask_dir", "mask_lasting"]

#: argv: the pidfd's number, the mask directory, the executor's container pid, then PID 1's.
_SCRIPT = mount_script("""
pidfd, mask, executor, init = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
masks = [clone(mask), clone(mask)]
join(pidfd)
fds = clone("/proc/" + executor + "/fd")
for tree, pid in zip(masks, (executor, init)):
    attach(tree, "/proc/" + pid)
attach(fds, "/proc/" + executor + "/fd")
""")


def make_mask_dir(path: str) -> str:
    """The new directory ``path``: empty but for an empty ``fd`` (the executor's lands there), 0555."""
    os.mkdir(path, 0o755)
    os.mkdir(os.path.join(path, "fd"), 0o555)
    os.chmod(path, 0o555)
    return path


def mask_lasting(ref: PidRef, mask: str, executor: int) -> None:
    """Cover ``/proc/<executor>`` and ``/proc/1`` in the container whose process ``ref`` is, then
    check (fail closed: `BackendUnavailableError`)."""
    proc = run_child(_SCRIPT, str(ref.pidfd), mask, str(executor), "1", pass_fds=(ref.pidfd,))
    if proc.returncode != 0:
        raise BackendUnavailableError(
            f"could not hide the executor's and docker-init's /proc counters: {proc.stderr.strip()[-300:]}"
        )
    check_masked(ref, executor)


def check_masked(ref: PidRef, executor: int) -> None:
    """Both directories are covered by a read-only non-proc mount, the executor's ``fd`` by a
    read-only proc one."""
    for target in (f"/proc/{executor}", "/proc/1"):
        stack = top_mounts(ref, target)
        if not stack or stack[-1][0] == "proc" or not stack[-1][1]:
            raise BackendUnavailableError(f"{target} in the container is not covered ({stack})")
    stack = top_mounts(ref, f"/proc/{executor}/fd")
    if not stack or stack[-1] != ("proc", True):
        raise BackendUnavailableError(f"/proc/{executor}/fd in the container is not the executor's own ({stack})")
