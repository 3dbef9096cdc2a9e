"""The memory a sandbox may take when its policy sets no limit: a share of what this host has.

A docker session without ``limits.memory_bytes`` used to run in a container with no memory limit:
one command's heap, the SysV shared memory it leaves behind (not bounded by ``/dev/shm``'s size,
and kept after the command exits) or the kernel memory of its open files took the host's whole
memory, and the host's OOM killer chose among every process on it, not the container's (red team
round 20). A container always gets a ceiling now; this module picks the default: three quarters
of the memory of the host, or of the lowest limit on the cgroups shellrt runs in when that is less (batch's per-task
ceilings take the same measure and divide it among the tasks running at once).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["MIN_DEFAULT_MEMORY", "default_memory_ceiling", "usable_memory"]

#: No default ceiling is smaller than this (an interpreter and a compiler need some room).
MIN_DEFAULT_MEMORY = 256 << 20  # = sandbox.config.MIN_DEFAULT_MEMORY (stdlib only here)
#: The share of `usable_memory` a sandbox without a limit may take: the rest stays the host's.
_SHARE_NUM, _SHARE_DEN = 3, 4
#: cgroup v1 says "no limit" with a number near 2**63; anything above this is no limit.
_NO_LIMIT = 1 << 60
#: Where this process's cgroups are named, and where the hierarchies are mounted.
_PROC_CGROUP = Path("/proc/self/cgroup")
_CGROUP_ROOT = Path("/sys/fs/cgroup")


def usable_memory() -> int:
    """The host's memory, or the lowest memory limit of this process's cgroup and its ancestors."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    limit = _own_cgroup_limit()
    return min(total, limit) if limit else total


def default_memory_ceiling() -> int:
    """Bytes of memory (no swap) for a sandbox whose policy names none."""
    return max(MIN_DEFAULT_MEMORY, usable_memory() * _SHARE_NUM // _SHARE_DEN)


def _own_cgroup_limit() -> int | None:
    """The lowest memory limit on the way from this process's cgroup up to the hierarchy's root.

    Why every ancestor: the kernel enforces each one, and the limit is often not on the process's
    own cgroup: shellrt itself moves its process into a leaf child to enable controllers for its
    session cgroups (`sandbox._cgroup`), a systemd service runs in a scope under a limited slice,
    and a cgroup v1 container sees its own cgroup mounted as the root (its path under the mount
    does not exist). Reading the own cgroup only took the host's whole memory for such a process
    (red team, round 43: the proxies' memory bound, round 42, did not hold).
    """
    try:
        lines = _PROC_CGROUP.read_text().splitlines()
    except OSError:
        return None
    found: list[int] = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":  # cgroup v2
            mount, knob = _CGROUP_ROOT, "memory.max"
        elif "memory" in controllers.split(","):
            mount, knob = _CGROUP_ROOT / "memory", "memory.limit_in_bytes"
        else:
            continue
        found += _limits_up(mount, path, knob)
    return min(found) if found else None


def _limits_up(mount: Path, path: str, knob: str) -> list[int]:
    """The limits ``knob`` sets in ``mount``/``path`` and each of its ancestors up to ``mount``."""
    parts = [p for p in path.split("/") if p and p not in (".", "..")]
    limits = []
    for depth in range(len(parts), -1, -1):
        try:
            text = (mount.joinpath(*parts[:depth]) / knob).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < _NO_LIMIT:
            limits.append(int(text))
    return limits
