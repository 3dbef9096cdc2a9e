"""What of the host's /sys a bwrap sandbox shows: an allow-list, not the host's whole sysfs.

``--ro-bind / /`` brought the host's sysfs in as the host mounted it (red team, rounds 16 and
17): ``/sys/fs/cgroup`` named every cgroup of the host (other sessions', containers') with
their pids and usage, and ``/sys/class/net``, ``/sys/devices/virtual/net`` and the PCI devices
named the host's interfaces and MAC addresses -- though a command's network namespace has none
of them. Masking each such place would be a deny-list that misses the next one, so /sys is an
empty read-only tmpfs and only what programs read is bound back, read-only:

- ``/sys/devices/system/cpu`` and ``node``: glibc's ``get_nprocs``, ``lscpu``, OpenMP/BLAS and
  NUMA libraries (hwloc) size themselves from them;
- ``/sys/kernel/mm/transparent_hugepage``: allocators and runtimes (jemalloc, Go) read it.

- the session's own cgroup (a root caller's limits), at its hierarchy's place: node, the JVM
  and Go read their limits there.

What goes: every other cgroup, block and network devices, ``/sys/kernel`` but the
above, firmware, modules. Measured (python, git, node, make, nproc, gcc): none opens anything
else of /sys.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

__all__ = ["SYS_SHOWN", "sys_args"]

#: The parts of the host's /sys bound back (read-only) over the empty one, where they exist.
SYS_SHOWN: tuple[str, ...] = (
    "/sys/devices/system/cpu",
    "/sys/devices/system/node",
    "/sys/kernel/mm/transparent_hugepage",
)


def sys_args(cgroups: Sequence[tuple[Path, Path]] = ()) -> list[str]:
    """bwrap flags replacing /sys by a read-only tmpfs holding only `SYS_SHOWN` and the session's
    own ``cgroups`` ((directory, its hierarchy's mount point): each bound read-only at that mount
    point, so with the sandbox's cgroup namespace -- whose root is that cgroup, /proc/self/cgroup
    says ``/`` -- a program finds its limits where it looks, and no other cgroup).

    Parents are made 0555 first (bwrap would make them 0700, root's as a root caller: the
    sandbox uid could not cross them), and an empty ``/sys/fs/cgroup`` (programs that look for
    cgroup files find none and fall back); a part missing on this host is left out (bwrap would
    fail on it). The remount comes last."""
    binds = [(path, path) for path in SYS_SHOWN if os.path.isdir(path)]
    binds += [(str(d), str(point)) for d, point in cgroups if point.is_relative_to("/sys") and point != Path("/sys")]
    parents = {p for _src, dest in binds for p in _parents(dest)} | {"/sys/fs", "/sys/fs/cgroup"}
    parents -= {dest for _src, dest in binds}
    args = ["--perms", "0555", "--tmpfs", "/sys"]
    for parent in sorted(parents, key=lambda p: (p.count("/"), p)):
        args += ["--perms", "0555", "--dir", parent]
    for src, dest in sorted(binds, key=lambda b: b[1].count("/")):
        args += ["--ro-bind", src, dest]
    return [*args, "--remount-ro", "/sys"]


def _parents(path: str) -> list[str]:
    """The directories strictly between /sys and ``path``."""
    parts = path.split("/")[2:-1]  # "", "sys", ..., leaf
    return ["/sys/" + "/".join(parts[: i + 1]) for i in range(len(parts))]
