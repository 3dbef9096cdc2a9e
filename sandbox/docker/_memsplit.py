"""How much of a container's memory ceiling may be held outside processes (red team round 24).

Pages of a tmpfs (``/tmp``, ``/dev/shm``) and of SysV segments and message queues belong to no
process, yet the container's memory cgroup is charged for them. Once they filled the ceiling every
allocation ran the OOM killer, and with no command process left to take it chose the executor
(the largest process left): the host replaced the container and the session's ``/tmp`` and
background tasks were lost. Commands run at ``oom_score_adj`` 1000 (``priv.c``), but the executor
cannot be put below the container's own score here (that needs ``CAP_SYS_RESOURCE``, which the
daemon may not be able to grant), so the executor keeps a reserve instead: these stores together
are sized to the ceiling minus that reserve, and a command filling them gets ``ENOSPC``.

A tmpfs's ``size=`` counts data pages only: its inodes and dentries (~1 KiB of kernel memory each,
charged to the same cgroup) were uncapped, and a command making millions of empty files filled the
ceiling all the same (red team round 25). Each tmpfs's share now holds both: an eighth of it at
least is kept for inodes, and ``nr_inodes=`` caps their count to what is left of the share.
"""

from __future__ import annotations

from dataclasses import dataclass

from sandbox.docker._tmpslots import TMP_SLOTS

__all__ = ["INODE_COST", "MemorySplit", "reserve_bytes", "split_memory"]

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
#: Kernel memory one empty tmpfs file costs its cgroup (inode, dentry, their slab), rounded up from
#: the ~900-1000 bytes measured (round 24: 103,016 files filled 96 MiB; round 25 by ``df -i``).
INODE_COST = 1024
#: The fewest inodes a tmpfs gets, however small its share.
_MIN_INODES = 1024
#: A TMPDIR slot's most (here-documents, sort's spill files; bigger data belongs in /tmp) and its
#: fewest inodes.
_SLOT_MAX = 64 * _MIB
_SLOT_MIN_INODES = 64


@dataclass(frozen=True, slots=True)
class MemorySplit:
    """Sizes for what holds memory outside processes: together at most ceiling minus reserve."""

    tmp_bytes: int
    tmp_inodes: int
    #: Each command's own TMPDIR slot (`sandbox.docker._tmpslots`), cut from /tmp's share.
    slot_bytes: int
    slot_inodes: int
    shm_bytes: int
    shm_inodes: int
    sysctls: dict[str, str]


def reserve_bytes(memory: int) -> int:
    """What a ceiling of ``memory`` keeps for the executor, its runners and helpers."""
    return max(RESERVE_MIN, memory // 8)


def _share(share: int, asked: int) -> tuple[int, int]:
    """Data bytes (at most ``asked``) and inodes for a tmpfs whose data and inodes together may
    hold ``share`` bytes: at least an eighth of it is left to inodes."""
    data = max(_MIB, min(asked, share - share // 8))
    inodes = max(_MIN_INODES, (share - data) // INODE_COST)
    return data, inodes


def split_memory(memory: int, tmp_bytes: int) -> MemorySplit:
    """Cut ``/tmp`` (asked ``tmp_bytes``; its data and inodes) and the commands' TMPDIR slots to
    half of what may be held outside processes (the slots a quarter of that half), ``/dev/shm`` to
    a quarter, SysV shared memory and message queues to an eighth each."""
    outside = max(memory - reserve_bytes(memory), 4 * _MIB)
    # A quarter of /tmp's half goes to the commands' own TMPDIR slots (round 29).
    slots = outside // 8
    tmp, tmp_inodes = _share(outside // 2 - slots, tmp_bytes)
    slot = slots // TMP_SLOTS
    slot_bytes = min(_SLOT_MAX, slot - slot // 8)
    slot_inodes = max(_SLOT_MIN_INODES, (slot - slot_bytes) // INODE_COST)
    shm, shm_inodes = _share(outside // 4, _DEFAULT_SHM)
    eighth = outside // 8
    sysctls = {
        "kernel.shmall": str(max(1, eighth // _PAGE)),
        "kernel.shmmax": str(max(_PAGE, eighth)),
        "kernel.msgmnb": str(_MSGMNB),
        "kernel.msgmni": str(max(1, min(_MSGMNI_MAX, eighth // _MSGMNB))),
    }
    return MemorySplit(
        tmp_bytes=tmp,
        tmp_inodes=tmp_inodes,
        slot_bytes=slot_bytes,
        slot_inodes=slot_inodes,
        shm_bytes=shm,
        shm_inodes=shm_inodes,
        sysctls=sysctls,
    )
