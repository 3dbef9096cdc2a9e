"""A non-root caller's share of its per-uid kernel budgets that its sandboxed commands may hold.

A non-root caller's commands run as its own uid in a user namespace it created. The kernel
charges what they hold to that uid at every level up to the host's (``/proc/sys/user/max_*``,
and the rlimits it counts per uid), where the caller's editor, ``tail -f``, its user systemd and
the next session's guard draw on the same budget: one command holding every inotify instance (128
by default) or every queued signal left them none for as long as it ran (red team round 20).
The session gets half of each (`SHARE`): its user namespace's own ``/proc/sys/user`` limits
(written by the zygote, `sandbox._zygote_main.lower_ceilings`) and rlimits its commands inherit
and cannot raise (the zygote's own; ``prlimit`` for one bwrap per command). A root caller's
commands run as a leased uid of their own (`sandbox._uid_lease`) and need none of this.
"""

from __future__ import annotations

import resource
from pathlib import Path

__all__ = ["RLIMITS", "SHARE", "SYSCTLS", "prlimit_flags", "session_rlimits", "session_sysctls"]

#: A session may hold 1/SHARE of each budget; the caller keeps the rest.
SHARE = 2
#: Per-user-namespace limits a command can spend without privilege (user, mount and the other
#: namespaces are not among them: the seccomp filter refuses a command new namespaces).
SYSCTLS = ("max_inotify_instances", "max_inotify_watches", "max_fanotify_groups", "max_fanotify_marks")
#: Rlimits the kernel counts per uid rather than per process: (prlimit's name, resource).
RLIMITS = (("msgqueue", resource.RLIMIT_MSGQUEUE), ("sigpending", resource.RLIMIT_SIGPENDING))


def session_sysctls(root: Path = Path("/proc/sys/user")) -> dict[str, int]:
    """Each of `SYSCTLS` this kernel has, at 1/SHARE of the caller's own namespace's value."""
    out: dict[str, int] = {}
    for name in SYSCTLS:
        try:
            value = int((root / name).read_text())
        except (OSError, ValueError):
            continue  # an older kernel without it: nothing to share
        out[name] = max(1, value // SHARE)
    return out


def session_rlimits() -> list[tuple[str, int, int]]:
    """(prlimit's name, resource, value) for each of `RLIMITS` the caller has a finite soft limit on."""
    out: list[tuple[str, int, int]] = []
    for name, res in RLIMITS:
        soft, hard = resource.getrlimit(res)
        limit = soft if soft != resource.RLIM_INFINITY else hard  # the kernel keeps soft <= hard
        if limit != resource.RLIM_INFINITY:
            out.append((name, res, max(1, limit // SHARE)))
    return out


def prlimit_flags() -> list[str]:
    """``prlimit`` flags setting `session_rlimits` (soft and hard)."""
    return [f"--{name}={value}:{value}" for name, _res, value in session_rlimits()]
