"""The container's ptys: a devpts of at most `PTY_MAX` over docker's (red team round 34).

The kernel counts ptys for the whole host: ``kernel.pty.max`` less ``kernel.pty.reserve`` (3071 of
4096 by default) for every devpts instance but the host's own, each container's and each sandbox's
together. Docker (runc) mounts a container's ``/dev/pts`` with no ``max=``, so one command opening
``/dev/ptmx`` until it failed held every pty of every other container and sandbox on the host.

On a root host the host mounts a new devpts instance with ``max=`` (`sandbox._devtree.PTY_OPTIONS`,
bwrap's since round 33, and runc's ``gid=5``) over the container's ``/dev/pts`` before anything of
the image runs (the start gate): ``/dev/ptmx`` is runc's link to ``pts/ptmx``, so every process of
the container, the executor's shell and every command, draws on those 64. A non-root host cannot
join the container's mount namespace: its containers keep docker's devpts (docs/security.md).
"""

from __future__ import annotations

from sandbox._devtree import PTY_MAX, PTY_OPTIONS
from sandbox.docker._detach import run_child
from sandbox.docker._pidref import PidRef
from sandbox.errors import BackendUnavailableError

__all__ = ["PTS", "PTS_OPTIONS", "cap_ptys", "check_ptys"]

_PTS = PTS = "/dev/pts"
#: runc's ``gid=5`` with shellrt's cap.
PTS_OPTIONS = f"{PTY_OPTIONS},gid=5"

#: Joins the mount namespace by pidfd (`_pidref`; root and cwd become the container's) and mounts a devpts there.
_CHILD = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.setns(int(sys.argv[1]), 0x00020000) != 0:  # CLONE_NEWNS
    sys.exit("setns: " + os.strerror(ctypes.get_errno()))
# MS_NOSUID | MS_NOEXEC, as runc's
if libc.mount(b"devpts", sys.argv[2].encode(), b"devpts", 2 | 8, sys.argv[3].encode()) != 0:
    sys.exit("mount: " + os.strerror(ctypes.get_errno()))
"""


def cap_ptys(ref: PidRef) -> None:
    """Mount a devpts of at most `PTY_MAX` ptys at ``/dev/pts`` in the mount namespace of ``ref``'s
    process, then check from outside that it is the one there (fail closed)."""
    pid = ref.alive()
    proc = run_child(_CHILD, str(ref.pidfd), _PTS, PTS_OPTIONS, pass_fds=(ref.pidfd,))
    if proc.returncode != 0:
        raise BackendUnavailableError(
            f"could not cap the container's ptys (a devpts with max={PTY_MAX} at {_PTS}): "
            f"{proc.stderr.strip()[-300:]}"
        )
    check_ptys(ref, pid)


def check_ptys(ref: PidRef, pid: int) -> None:
    """The devpts on top of ``/dev/pts`` in the container (init ``pid``, ``ref``'s) is the capped one."""
    with open(f"/proc/{pid}/mountinfo", encoding="utf-8", errors="replace") as fh:
        last = [
            line.split(" - ", 1)[1].split() for line in fh if line.split()[4:5] == [_PTS] and " - " in line
        ]
    if ref.alive() != pid or not last or last[-1][0] != "devpts" or f"max={PTY_MAX}" not in last[-1][-1].split(","):
        raise BackendUnavailableError(
            f"{_PTS} in the container is not the capped devpts after mounting it ({last[-1:]})"
        )
