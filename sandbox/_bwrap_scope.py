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
from typing import Literal

from sandbox.errors import BackendUnavailableError

__all__ = [
    "BwrapIsolation",
    "command_isolation",
    "isolation_refusal",
    "isolation_warning",
    "landlock_abi",
    "warn_if_unscoped",
]

#: How far a bwrap sandbox's commands are kept from each other. Each has its own pid, mount and IPC
#: namespaces in every mode (no signal, ptrace or /proc reach); ``full``: no abstract unix socket of
#: another command either (one bwrap per command: a network namespace each; a session: each
#: command's Landlock scope); ``abstract-shared``: a session's commands share abstract names (a
#: kernel before Landlock ABI 6, or network ``host``: the host's names, by design).
BwrapIsolation = Literal["full", "abstract-shared"]

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
    level = command_isolation(session=True, host_network=False, abi=abi)
    said = isolation_warning(level, host_network=False, abi=abi)  # the start warning's own words
    if said is not None:
        _log.warning("%s", said)


def command_isolation(*, session: bool, host_network: bool, abi: int) -> BwrapIsolation:
    """The level of a sandbox run as a ``session`` (a zygote) or one bwrap per command."""
    if host_network:
        return "abstract-shared"  # the host's network namespace: its abstract names, each command's
    return "full" if not session or abi >= 6 else "abstract-shared"


def isolation_warning(level: BwrapIsolation, *, host_network: bool, abi: int) -> str | None:
    """What the person running the session must hear at its start (None: nothing to say). Network
    ``host`` was chosen with its promise (docs/security.md): not repeated at every start."""
    if level == "full" or host_network:
        return None
    return (
        f"bwrap: this kernel has Landlock ABI {abi} (6 needed, Linux 6.12): the session's commands "
        "share abstract unix sockets (a background task can answer a later command's connect to an "
        "abstract name); each still has its own pid, mount and IPC namespaces. BwrapConfig("
        "require_command_isolation=True) refuses such hosts; one bwrap per command (persistent=False, "
        "no session zygote) gives each command its own network namespace; or upgrade the kernel "
        "(enable Landlock: lsm=landlock,...)"
    )


def isolation_refusal(
    level: BwrapIsolation, *, host_network: bool, abi: int
) -> BackendUnavailableError | None:
    """Why a start under ``require_command_isolation`` must not go on, with what to do instead."""
    if level == "full":
        return None
    if host_network:
        return BackendUnavailableError(
            "bwrap: require_command_isolation refuses network 'host': its commands share the host's "
            "abstract unix sockets by design. Fix: network 'none' or 'proxied', or drop "
            "require_command_isolation"
        )
    return BackendUnavailableError(
        f"bwrap: require_command_isolation refuses a session sandbox on this kernel (Landlock ABI {abi}, "
        "6 needed: Linux 6.12 with Landlock enabled): its commands would share abstract unix sockets. "
        "Fix: one bwrap per command (BwrapConfig(persistent=False); not with network 'proxied'), "
        "a newer kernel, or drop require_command_isolation"
    )
