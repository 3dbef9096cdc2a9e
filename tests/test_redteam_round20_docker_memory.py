"""Red team round 20, docker: a session without a memory limit took the host's memory.

`DockerBackend` set ``mem_limit`` only when the policy named ``limits.memory_bytes``; ``shellrt
run``/``serve --sandbox docker``, the Python API and Inspect sessions name none by default (only
batch fills in ceilings). Inside, the container's ``memory.limit_in_bytes`` and ``memsw`` read
9223372036854771712 (no limit): a command's heap, the SysV shared memory it leaves behind
(``shmmax``/``shmall`` are unbounded in the container's IPC namespace and a segment outlives its
maker: ``/dev/shm``'s 64 MiB does not bound it) or the kernel memory of its open files could take
the host's whole memory, and the host's OOM killer then chose among every process on the host.
Every container now gets a ceiling (`sandbox._hostmem.default_memory_ceiling`: three quarters of
the host's or shellrt's own cgroup's memory; no swap). FAIL, not skip, under CI=true.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from sandbox import ResourceLimits
from sandbox._hostmem import MIN_DEFAULT_MEMORY, default_memory_ceiling, usable_memory
from sandbox.docker import DockerBackend
from tests._docker_support import BUSYBOX, config, policy, require_docker, run_sh

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_READ = (
    "m=$(grep :memory: /proc/self/cgroup | cut -d: -f3); d=/sys/fs/cgroup/memory$m; "
    "[ -r $d/memory.limit_in_bytes ] || d=/sys/fs/cgroup/memory; "
    "cat $d/memory.limit_in_bytes $d/memory.memsw.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max"
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _limits(tmp_path: Path, **kw: object) -> list[int]:
    async with DockerBackend(config(BUSYBOX), policy(tmp_path, **kw)) as b:
        with anyio.fail_after(30):
            rc, out = await run_sh(b, _READ)
    assert rc == 0, out
    return [int(w) for w in out.split()]


async def test_a_session_without_limits_has_a_memory_ceiling_without_swap(tmp_path: Path) -> None:
    """No ``limits``: the container's memory (and memory+swap) limit is the default ceiling, below
    the host's memory. Failed 1 of 1 before (both read 9223372036854771712)."""
    require_docker()
    host = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    values = await _limits(tmp_path)
    assert values and all(v < host for v in values), (values, host)
    # docker rounds the limit to pages; swap (memsw) equals it: none.
    assert all(abs(v - default_memory_ceiling()) < 1 << 16 for v in values), (values, default_memory_ceiling())


async def test_a_policy_limit_still_wins(tmp_path: Path) -> None:
    """An explicit ``memory_bytes`` (below the default) is the container's, memory and swap alike."""
    require_docker()
    values = await _limits(tmp_path, limits=ResourceLimits(memory_bytes=96 << 20))
    assert values and all(v == 96 << 20 for v in values), values


def test_the_default_ceiling_leaves_the_host_a_share() -> None:
    """Three quarters of what this process may use (host or own cgroup), never below the floor."""
    usable = usable_memory()
    ceiling = default_memory_ceiling()
    assert ceiling == max(MIN_DEFAULT_MEMORY, usable * 3 // 4)
    assert ceiling < usable or usable < MIN_DEFAULT_MEMORY
