"""Take the I/O directory's mount out of a running container (``DockerConfig.root_can_administer``).

A root command with ``CAP_DAC_OVERRIDE`` ignores the I/O directory's mode
0700: it could read other commands' request files (argv, environment) and
open their FIFOs. So once the executor holds the directory open (fd 8, before
its hello), the host detaches the mount inside the container's mount
namespace (``umount2(MNT_DETACH)``): the executor keeps using it through
``/proc/self/fd/8``, which only its own identity (and host root) may follow,
and no path in the container names it any more. Needs a root host (joining
another mount namespace needs ``CAP_SYS_ADMIN``). The join happens in a
short-lived child process: a multi-threaded process cannot join a mount
namespace.
"""

from __future__ import annotations

import subprocess
import sys

from sandbox.docker._pidref import PidRef
from sandbox.errors import BackendUnavailableError

__all__ = ["detach_mount", "detach_top", "mount_points", "run_child"]

_CHILD = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.setns(int(sys.argv[1]), 0x00020000) != 0:  # CLONE_NEWNS, by pidfd (`_pidref`)
    sys.exit("setns: " + os.strerror(ctypes.get_errno()))
if libc.umount2(sys.argv[2].encode(), 2) != 0:  # MNT_DETACH
    sys.exit("umount2: " + os.strerror(ctypes.get_errno()))
"""


def mount_points(pid: int) -> set[str]:
    """Mount points in the mount namespace of ``pid`` (from its mountinfo; octal escapes kept)."""
    with open(f"/proc/{pid}/mountinfo", encoding="utf-8", errors="replace") as fh:
        return {line.split()[4] for line in fh if len(line.split()) > 4}


def run_child(script: str, *args: str, pass_fds: tuple[int, ...] = ()) -> subprocess.CompletedProcess[str]:
    """``script`` in a fresh single-threaded interpreter (one that may join a mount namespace):
    isolated, without the site import (``-S``: ~125 ms less with editable installs' ``.pth``);
    ``pass_fds`` (a pidfd to join by) stay open in it."""
    return subprocess.run(
        [sys.executable, "-I", "-S", "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=30,
        pass_fds=pass_fds,
        cwd="/",  # not the caller's (a workspace): relative LD_PRELOAD entries resolve there (round 49)
    )


def detach_top(ref: PidRef, target: str) -> int:
    """Detach the mount on top of ``target`` in the mount namespace of ``ref``'s process (what is
    below it stays); the process's pid. The caller checks what is left."""
    pid = ref.alive()
    proc = run_child(_CHILD, str(ref.pidfd), target, pass_fds=(ref.pidfd,))
    if proc.returncode != 0:
        raise BackendUnavailableError(
            f"could not take {target} out of the container (root_can_administer needs shellrt to run as "
            f"root on the host): {proc.stderr.strip()[-300:]}"
        )
    return pid


def detach_mount(ref: PidRef, target: str) -> None:
    """Detach ``target`` in the mount namespace of ``ref``'s process, then check it is gone (fail closed)."""
    pid = detach_top(ref, target)
    if target in mount_points(pid) or ref.alive() != pid:
        raise BackendUnavailableError(f"{target} is still mounted in the container after detaching it")
