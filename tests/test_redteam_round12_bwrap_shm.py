"""Red team round 12 (bwrap): /dev/shm was a tmpfs the size of half the host's memory.

bwrap mounts ``--tmpfs /dev/shm`` with the kernel's default size: half of RAM (12 GB here).
Tmpfs pages are neither swappable (no swap) nor freed by the OOM killer, and in a session
sandbox /dev/shm is the zygote's, shared by every command of the session: one command wrote
12 GB there, ended, and the memory stayed taken until the session closed. With no memory
limit (the default; a non-root caller without a delegated cgroup cannot set one) nothing
counted it. Docker's /dev/shm is 64 MiB; bwrap's is now the same size, in the session sandbox
and per command (``--size`` before each ``--tmpfs /dev/shm``).
"""

from __future__ import annotations

import pytest

from tests import test_sandbox_escape_bwrap as escape
from tests.test_sandbox_escape_bwrap import Run

pytestmark = [pytest.mark.anyio, pytest.mark.bwrap]
run, ws, host_sockets = escape.run, escape.ws, escape.host_sockets

#: docker's default, and what a command may keep in /dev/shm.
SHM_MIB = 64


async def test_dev_shm_is_bounded_like_dockers(run: Run) -> None:
    """96 MiB into /dev/shm: the write stops at 64 MiB (ENOSPC), and df says 64 MiB."""
    code, out = await run(
        "head -c 96M /dev/zero > /dev/shm/fill 2>/dev/null && echo FILLED; "
        "echo SIZE-KB $(df -k --output=size /dev/shm | tail -1); "
        "echo USED-KB $(du -sk /dev/shm/fill | cut -f1); rm -f /dev/shm/fill"
    )
    assert "FILLED" not in out, out
    size_kb = int(out.split("SIZE-KB")[1].split()[0])
    used_kb = int(out.split("USED-KB")[1].split()[0])
    assert size_kb <= SHM_MIB * 1024 and used_kb <= SHM_MIB * 1024, out


async def test_dev_shm_still_takes_what_multiprocessing_needs(run: Run) -> None:
    """A 32 MiB shared-memory block (below the cap) still works."""
    script = (
        "from multiprocessing import shared_memory as s; m = s.SharedMemory(create=True, size=32 << 20); "
        "m.buf[-1] = 1; m.close(); m.unlink(); print('BIG-SHM-OK')"
    )
    code, out = await run(f'python3 -c "{script}"')
    assert code == 0 and "BIG-SHM-OK" in out, out


async def test_nothing_else_of_dev_takes_a_file(run: Run) -> None:
    """The bound: /dev/shm is the one writable place of /dev (bwrap's own /dev is an unsized tmpfs)."""
    code, out = await run(
        "for d in /dev /dev/pts /dev/mqueue; do : > $d/rt12-fill 2>/dev/null && echo WROTE-$d; done; true"
    )
    assert "WROTE-" not in out, out
