"""A non-root caller's commands may hold only their share of the uid's descriptors in flight.

The kernel counts the descriptors in flight over unix sockets (sent with ``SCM_RIGHTS``, not yet
received) per user (``user_struct.unix_inflight``: a user namespace changes no user), and refuses
a send with ``ETOOMANYREFS`` once that count exceeds the *sender's* soft ``RLIMIT_NOFILE``
(CAP_SYS_RESOURCE or CAP_SYS_ADMIN in the host's user namespace exempt). A non-root caller's
commands run as its own uid: one that queued its limit's worth of descriptors on a socket pair of
its own and held them made every ``SCM_RIGHTS`` send of every other process of the caller's uid fail
for as long as it ran -- the host's shellrt, the caller's desktop, its user systemd (red team round
47, sandbox7). A send passes only while the count is at most its sender's limit and adds at most
`SCM_MAX_FD`; so commands whose ``RLIMIT_NOFILE`` (soft and hard: they cannot raise it) is
`nofile_share` of the caller's hold at most about half the caller's limit in flight together,
however many there are, and the caller's own processes keep the rest (`sandbox._ucounts`' share).
A root caller's commands run as a leased uid of their own, and its host process is exempt.
"""

from __future__ import annotations

import os
import resource

from sandbox._ucounts import SHARE

__all__ = ["SCM_MAX_FD", "nofile_share", "prlimit_flags", "rlimits"]

#: The most descriptors one ``SCM_RIGHTS`` message carries (the kernel's ``SCM_MAX_FD``).
SCM_MAX_FD = 253


def nofile_share(soft: int) -> int:
    """The commands' ``RLIMIT_NOFILE`` when the caller's soft limit is ``soft``: what they hold in
    flight together, at most this plus `SCM_MAX_FD`, is then at most ``(soft + SCM_MAX_FD) // SHARE``."""
    return max(SCM_MAX_FD, soft - SCM_MAX_FD) // SHARE


def _caller_soft() -> int | None:
    if os.geteuid() == 0:
        return None  # a root caller: a leased uid of the commands' own, its host exempt
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    limit = soft if soft != resource.RLIM_INFINITY else hard
    return None if limit == resource.RLIM_INFINITY else limit


def rlimits() -> list[tuple[int, int]]:
    """(resource, value) to set soft and hard in a non-root caller's zygote; empty for root."""
    soft = _caller_soft()
    return [] if soft is None else [(resource.RLIMIT_NOFILE, nofile_share(soft))]


def prlimit_flags() -> list[str]:
    """``prlimit`` flags setting `rlimits` for one bwrap per command (and a zygote's bwrap)."""
    return [f"--nofile={value}:{value}" for _res, value in rlimits()]
