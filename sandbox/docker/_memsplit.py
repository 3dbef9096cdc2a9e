"""How much of a container's memory ceiling may be held outside processes (red team round 24).

Pages of a tmpfs (``/tmp``, ``/dev/shm``) and of SysV segments and message queues belong to no
process, yet the container's memory cgroup is charged for them. Once they filled the ceiling every
allocation ran the OOM killer, and with no command process left to take it chose the executor
(the largest process left): the host replaced the container and the session's ``/tmp`` and
background tasks were lost. Commands run at ``oom_score_adj`` 1000 (``priv.c``), but the executor
cannot be put below the container's own score here (that needs ``CAP_SYS_RESOURCE``, which the
daemon may not be able to grant), so the executor keeps a reserve instead: these stores together
are sized to the ceiling minus that reserve, and a command filling them gets ``ENOSPC``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MemorySplit", "split_memory"]

_MIB = 1 << 20
_PAGE = 4096
#: Memory always left to the executor, its runners and helpers (dash, priv: ~1 MiB each) and the
#: commands themselves: at least this, or an eighth of the ceiling.
RESERVE_MIN = 32 * _MIB
#: docker's default ``/dev/shm`` size.
_DEFAULT_SHM = 64 * _MIB
#: The kernel's default ``msgmnb`` (bytes one SysV queue may hold) and ``msgmni`` ceiling (IPCMNI).
_MSGMNB = 16384
_MSGMNI_MAX = 32000


@dataclass(frozen=True, slots=True)
class MemorySplit:
    """Sizes for what holds memory outside processes: together at most ceiling minus reserve."""

    tmp_bytes: int
    shm_bytes: int
    sysctls: dict[str, str]


def split_memory(memory: int, tmp_bytes: int) -> MemorySplit:
    """Cut ``/tmp`` (asked ``tmp_bytes``) to half of what may be held outside processes,
    ``/dev/shm`` to a quarter, SysV shared memory and message queues to an eighth each."""
    reserve = max(RESERVE_MIN, memory // 8)
    outside = max(memory - reserve, 4 * _MIB)
    tmp = max(_MIB, min(tmp_bytes, outside // 2))
    shm = max(_MIB, min(_DEFAULT_SHM, outside // 4))
    eighth = outside // 8
    sysctls = {
        "kernel.shmall": str(max(1, eighth // _PAGE)),
        "kernel.shmmax": str(max(_PAGE, eighth)),
        "kernel.msgmnb": str(_MSGMNB),
        "kernel.msgmni": str(max(1, min(_MSGMNI_MAX, eighth // _MSGMNB))),
    }
    return MemorySplit(tmp_bytes=tmp, shm_bytes=shm, sysctls=sysctls)
