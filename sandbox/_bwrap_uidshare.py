"""A non-root caller's commands may hold only their share of two more per-uid budgets (round 47).

`sandbox._ucounts` gives a non-root caller's sandboxes half of the per-uid budgets the kernel checks
against rlimits (message-queue bytes, queued signals) and ``/proc/sys/user`` ceilings. Two more
were the whole uid's (red team round 47, sandbox7):

* **Descriptors in flight.** The kernel counts descriptors sent over unix sockets (``SCM_RIGHTS``,
  not yet received) per user (``user_struct.unix_inflight``: a user namespace changes no user),
  and refuses a send with ``ETOOMANYREFS`` once that count exceeds the *sender's* soft
  ``RLIMIT_NOFILE`` (CAP_SYS_RESOURCE or CAP_SYS_ADMIN in the host's user namespace exempt). A
  command that queued its limit's worth on a socket pair of its own and held them made every
  ``SCM_RIGHTS`` send of every other process of the caller's uid fail while it ran: the host's
  shellrt, the caller's desktop, its user systemd. A send passes only while the count is at most
  its sender's limit and adds at most `SCM_MAX_FD`; so commands whose ``RLIMIT_NOFILE`` is
  `nofile_share` of the caller's hold at most about half of it in flight together, however many.
* **Locked shared memory.** ``shmctl(SHM_LOCK)`` charges the segment to the uid's
  ``RLIMIT_MEMLOCK`` count at every user-namespace level up to the host's, where each process
  checks the count against its own limit: a command that locked its 8 MiB made the caller's
  own ``SHM_LOCK`` fail (``ENOMEM``). Halved as `sandbox._ucounts` does the others (set before
  bwrap makes its user namespace, so the budget namespace checks all sessions' sum against it).

Soft and hard: a command cannot raise either. Not the descriptors on a session's zygote (round 48,
sandbox8): it sends too (each command's ends to its init, each init's to the host), and a command
that raised the count to its limit plus 253 made every zygote of the caller under the same limit
fail its sends -- no command ran in any session. Its inits get the share instead (``nofile``, the
zygote's configuration: `sandbox._zygote_main.Zygote.nofile`). A root caller's commands run as a leased uid of their
own, and its host process is exempt from both checks.
"""

from __future__ import annotations

import os
import resource

from sandbox._ucounts import SHARE

__all__ = ["SCM_MAX_FD", "commands_nofile", "nofile_share", "prlimit_flags", "rlimits"]

#: The most descriptors one ``SCM_RIGHTS`` message carries (the kernel's ``SCM_MAX_FD``).
SCM_MAX_FD = 253


def nofile_share(soft: int) -> int:
    """The commands' ``RLIMIT_NOFILE`` when the caller's soft limit is ``soft``: what they hold in
    flight together, at most this plus `SCM_MAX_FD`, is then at most ``(soft + SCM_MAX_FD) // SHARE``."""
    return max(SCM_MAX_FD, soft - SCM_MAX_FD) // SHARE


def _limit(res: int) -> int | None:
    """The caller's soft limit on ``res`` (its hard one when the soft is unlimited); None: unlimited."""
    soft, hard = resource.getrlimit(res)
    limit = soft if soft != resource.RLIM_INFINITY else hard
    return None if limit == resource.RLIM_INFINITY else limit


def commands_nofile() -> int | None:
    """A non-root caller's commands' ``RLIMIT_NOFILE`` (`nofile_share`); None: root, or unlimited."""
    if os.geteuid() == 0:
        return None
    nofile = _limit(resource.RLIMIT_NOFILE)
    return None if nofile is None else nofile_share(nofile)


def rlimits(zygote: bool = False) -> list[tuple[str, int, int]]:
    """(prlimit's name, resource, value) to set, soft and hard, on a non-root caller's sandboxes
    (their bwrap and zygote; ``zygote``: a session's, which keeps the caller's descriptors and
    lowers its inits' to `commands_nofile`); empty for root."""
    if os.geteuid() == 0:
        return []
    out: list[tuple[str, int, int]] = []
    nofile = _limit(resource.RLIMIT_NOFILE)
    if nofile is not None and not zygote:
        out.append(("nofile", resource.RLIMIT_NOFILE, nofile_share(nofile)))
    memlock = _limit(resource.RLIMIT_MEMLOCK)
    if memlock is not None:
        out.append(("memlock", resource.RLIMIT_MEMLOCK, memlock // SHARE))
    return out


def prlimit_flags(zygote: bool = False) -> list[str]:
    """``prlimit`` flags setting `rlimits`."""
    return [f"--{name}={value}:{value}" for name, _res, value in rlimits(zygote)]
