"""Whether a bwrap session's commands are each scoped by Landlock (red team round 29, bwrapabs).

Each command's init restricts itself to a Landlock domain of its own scoped for signals and
abstract unix sockets (`sandbox._zygote_main` ``Zygote._own_domain``, ``zinit.c own_domain``):
that needs Landlock ABI 6 (Linux 6.12). On an older kernel, or with Landlock off at boot, a
session's commands share abstract names and nothing says so inside: the host logs it once here,
so an operator knows which promise holds (docs/security.md, "Red team, round 29: bwrapabs").
"""

from __future__ import annotations

import ctypes
import logging
import threading

__all__ = ["landlock_abi", "warn_if_unscoped"]

_log = logging.getLogger(__name__)
_SYS_LANDLOCK_CREATE_RULESET = 444  # the same number on every architecture
_VERSION = 1  # LANDLOCK_CREATE_RULESET_VERSION
_lock = threading.Lock()
_warned = False


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, or 0 (none, or disabled at boot). (The zygote has its own
    copy: it imports nothing of ``sandbox``.)"""
    libc = ctypes.CDLL(None, use_errno=True)
    return max(0, int(libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, None, 0, _VERSION)))


def warn_if_unscoped() -> None:
    """Log once per process when session commands cannot get their own Landlock scopes here."""
    global _warned
    with _lock:
        if _warned:
            return
        _warned = True
    abi = landlock_abi()
    if abi < 6:
        _log.warning(
            "bwrap: this kernel has Landlock ABI %d (6 needed, Linux 6.12): a session's commands "
            "share abstract unix sockets and are not scoped for signals (each still has its own pid "
            "namespace). Upgrade the kernel (or enable Landlock: lsm=landlock,...) to isolate them",
            abi,
        )
