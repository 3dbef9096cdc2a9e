"""A non-root caller's one bwrap per command gets a capped /dev/shm (red team round 27).

bwrap 0.8's ``--tmpfs`` takes a size but no ``nr_inodes``: each command's /dev/shm held the tmpfs
default (~3 M inodes here, ~3 GB of kernel memory no process owns while the command runs). A root
caller's commands bind a directory of the backend's capped pool (`sandbox._shmpool`); a non-root
caller has no mount of its own on the host, and nothing may be given to bwrap's command that its
init (pid 1, dumpable, the command's to write) would hold too (round 26). So the mount is made
before bwrap, on the host side: the sealed starter program (``zinit shm``, `sandbox._bwrap_starter`)
makes a user and mount namespace of the caller's own (its uid and gid mapped to themselves), mounts
a tmpfs of `SHM_BYTES` and `inode_cap` inodes on an empty 0700 directory of the backend's own
(``where``, beside the session's /tmp; given to each call like the starter's fd) there and execs bwrap, which binds it at the sandbox's
/dev/shm. Not on the host's ``/dev/shm`` itself: that hid whatever bwrap binds from there (a temp
dir under /dev/shm: the session's /tmp, CI61's VM test). Its capabilities end at that exec; the namespace and tmpfs end with the
sandbox. The same step mounts a devpts instance of at most `PTY_MAX` ptys on a second such directory
(``pts``), which bwrap binds over its own at /dev/pts (round 33: bwrap's has no ``max=``, and the
kernel's pty pool is host-wide: one command held every other sandbox's). Without the starter (no C compiler, ``vm.memfd_noexec`` 2) this interpreter takes the
same step (`sandbox._bwrap_shmstep`, round 28). Where the kernel refuses the step its namespace or
mount (an AppArmor userns restriction: tried once per backend, `ShmCap.decide`), /dev/shm stays
bwrap's uncapped one, logged once.
"""

from __future__ import annotations

import logging
import os
import stat
import subprocess
import sys
from pathlib import Path

from sandbox._devtree import PTY_OPTIONS
from sandbox._tmpcap import inode_cap

__all__ = ["ShmCap", "shm_wrapper"]

_log = logging.getLogger(__name__)
#: ``zinit shm`` in Python, for a caller without the C starter (run by path: no import of ours).
_STEP = Path(__file__).with_name("_bwrap_shmstep.py")


def shm_wrapper(starter: int | None, size: int, where: str | None, pts: str | None) -> list[str]:
    """The argv to put right before a non-root caller's bwrap (after ``nsenter`` into its budget
    namespace: the new namespace is its child), or empty: root (the pool serves it) or no directory
    ``where`` (the tmpfs) or ``pts`` (the devpts) to mount on (in the step's namespace; bwrap binds
    them from there). Without the starter, the same step by this interpreter
    (`sandbox._bwrap_shmstep`, round 28: it stayed uncapped)."""
    if where is None or pts is None or os.geteuid() == 0:
        return []
    try:
        if not (stat.S_ISDIR(os.lstat(where).st_mode) and stat.S_ISDIR(os.lstat(pts).st_mode)):
            return []
    except OSError:
        return []
    options = f"mode=1777,size={size},nr_inodes={inode_cap(size)}"
    if starter is None:
        return [sys.executable, "-I", "-S", str(_STEP), where, options, pts, PTY_OPTIONS]
    return [f"/proc/self/fd/{starter}", "shm", where, options, pts, PTY_OPTIONS]


class ShmCap:
    """One backend's decision whether `shm_wrapper` works here: tried once (the wrapper before
    ``true``, after the budget ``prefix``) before the first non-root command, so that a kernel
    refusing the starter's namespace leaves commands as they were (uncapped, logged) instead of
    failing every one."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._works: bool | None = None

    @property
    def decided(self) -> bool:
        return self._works is not None

    def decide(
        self, starter: int | None, where: str | None, pts: str | None, prefix: list[str], program: list[str]
    ) -> None:
        """Try the wrapper once before ``program`` (absolute: ``bwrap --version``; blocking: call
        it off the event loop); ``where``, ``pts``: the backend's empty directories to mount on
        (None: none)."""
        if self._works is not None:
            return
        argv = shm_wrapper(starter, self._size, where, pts)
        if not argv:
            self._works = False
            return
        passed = () if starter is None else (starter,)
        try:
            done = subprocess.run(
                [*prefix, *argv, *program], pass_fds=passed, capture_output=True, text=True, timeout=30, cwd="/"
            )
            why = "" if done.returncode == 0 else (done.stderr.strip() or f"exit {done.returncode}")
        except (OSError, subprocess.TimeoutExpired) as exc:
            why = str(exc)
        self._works = not why
        if why:
            _log.warning(
                "bwrap: one bwrap per command keeps an uncapped /dev/shm (~3 M inodes) and devpts: %s", why
            )

    def argv(self, starter: int | None, where: str | None, pts: str | None) -> list[str]:
        """`shm_wrapper`'s argv once `decide` found it works, else empty."""
        return shm_wrapper(starter, self._size, where, pts) if self._works else []
