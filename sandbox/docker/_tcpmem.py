"""A container's socket buffers, capped at a share of the host's (red team round 35).

Why: TCP and UDP buffer memory is one host budget (``net.ipv4.tcp_mem``/``udp_mem``, pages), and
above its hard limit every socket of the host fails to allocate (ssh, proxies, other sessions). A
command's loopback connections count (``network: none`` too): 96 connections whose reader never
reads queued 358 MiB from one command here; a few such commands reach the hard limit. cgroup v1
charges socket memory to a memory cgroup only once its ``memory.kmem.tcp.limit_in_bytes`` is
written, so on a root host with a v1 memory hierarchy the host writes `socket_memory_cap` there,
for the container's cgroup (the executor's shell, the image's) and the commands' (`_cmdcg`),
before anything of the image runs: at the cap a socket is under memory pressure and a send waits
or says EAGAIN. Sixteen sessions at their cap reach the hard limit. Elsewhere (a non-root host,
cgroup v2, which charges socket memory to the whole memory ceiling) nothing is written.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

__all__ = ["TCP_LIMIT_FILE", "cap_socket_memory", "socket_memory_cap"]

TCP_LIMIT_FILE = "memory.kmem.tcp.limit_in_bytes"
#: One session's share of the host's hard limit.
_SHARE = 16
#: Used where ``tcp_mem`` cannot be read: 64 MiB.
_FALLBACK = 64 << 20


def socket_memory_cap(tcp_mem: str = "/proc/sys/net/ipv4/tcp_mem") -> int:
    """Bytes of socket buffers one container may hold: 1/16 of ``tcp_mem``'s hard limit."""
    try:
        with open(tcp_mem, encoding="ascii") as fh:
            pages = int(fh.read().split()[2])
    except (OSError, ValueError, IndexError):
        return _FALLBACK
    return max(1 << 20, pages * os.sysconf("SC_PAGE_SIZE") // _SHARE)


def cap_socket_memory(cgroups: Iterable[str], limit: int) -> None:
    """Write ``limit`` to each v1 memory cgroup's TCP limit and check it took (OSError if not).
    A kernel without the file (no v1 socket accounting) is left as it is."""
    for cgroup in cgroups:
        path = os.path.join(cgroup, TCP_LIMIT_FILE)
        if not os.path.exists(path):
            continue
        with open(path, "w", encoding="ascii") as fh:
            fh.write(str(limit))
        with open(path, encoding="ascii") as fh:
            kept = fh.read().strip()
        if not kept.isdigit() or int(kept) > limit:
            raise OSError(f"{path} kept {kept!r}, not {limit}")
