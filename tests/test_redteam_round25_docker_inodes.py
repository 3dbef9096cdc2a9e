"""Red team round 25, docker: a tmpfs's inodes were uncapped kernel memory.

``size=`` on ``/tmp`` and docker's ``shm_size`` count data pages only. Empty files cost the
container's memory cgroup ~1 KiB each (inode, dentry) and there was no ``nr_inodes`` cap (3 M per
tmpfs here), so a command making empty files filled the whole ceiling past the sizes round 24 set
to leave the executor a reserve: the filler was OOM-killed and the ceiling stayed full of files
no process holds. Now each tmpfs (``/tmp``, ``/dev/shm``, the executor's own) has ``nr_inodes``
within its share (`sandbox.docker._memsplit`): the filler gets ``ENOSPC`` and the reserve is kept.
FAIL, not skip, under CI=true.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from sandbox.docker import DockerBackend
from sandbox.docker._memsplit import INODE_COST, reserve_bytes, split_memory
from sandbox.policy import ResourceLimits
from tests._docker_support import DEBIAN, config, policy, require_docker, run_sh

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_MIB = 1 << 20
_MEMORY = 96 * _MIB
#: Empty files in each tmpfs a command may write, until the first refusal: count and error.
_FILL = (
    'perl -e \'for $d ("/tmp", "/dev/shm") { $n = 0; '
    'while (open(my $f, ">", "$d/f$n")) { close $f; $n++ } print "$d $n $!\\n" }\''
)
#: Commands no longer read the container's counters (round 39: `sandbox.docker._cgview`): the host does.
_USAGE = "cat /sys/fs/cgroup/memory/memory.usage_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.current"


def _usage_from_host(container_id: str) -> str:
    """The container's memory use as its cgroup says, read on the host (root, v1); else as a
    command reads it."""
    import subprocess

    from sandbox.docker._cmdcg import container_memory_cgroup

    pid = subprocess.run(
        ["docker", "inspect", "-f", "{{.State.Pid}}", container_id], capture_output=True, text=True, timeout=30
    ).stdout.strip()
    found = container_memory_cgroup(int(pid)) if pid.isdigit() else None
    if found is None:
        return ""
    with open(f"{found}/memory.usage_in_bytes", encoding="ascii") as fh:
        return fh.read().strip()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_empty_files_in_tmpfs_leave_the_executor_its_reserve(tmp_path: Path) -> None:
    require_docker()
    limits = ResourceLimits(memory_bytes=_MEMORY, tmp_bytes=200 * _MIB)
    async with DockerBackend(config(DEBIAN), policy(tmp_path, limits=limits)) as b:
        with anyio.fail_after(120):
            rc, out = await run_sh(b, f"echo kept > /tmp/mark; {_FILL}; {_USAGE} 2>/dev/null; true")
            assert b._cid is not None
            host_said = _usage_from_host(b._cid)
            if host_said:
                out = out.rstrip("\n") + "\n" + host_said + "\n"
            after = await run_sh(b, "cat /tmp/mark; rm -rf /tmp/f* /dev/shm/f*")
        # Before: "Killed" (the filler was the OOM victim, 100.5 MB of 100.7 held by inodes).
        assert rc == 0 and "Killed" not in out, out
        lines = out.splitlines()
        assert lines[0].startswith("/tmp ") and lines[0].endswith("No space left on device"), out
        assert lines[1].startswith("/dev/shm ") and lines[1].endswith("No space left on device"), out
        split = split_memory(_MEMORY, 200 * _MIB)
        assert (
            int(lines[0].split()[1]) <= split.tmp_inodes and int(lines[1].split()[1]) <= split.shm_inodes
        ), out
        assert int(lines[-1]) < _MEMORY - reserve_bytes(_MEMORY) // 2, out  # the reserve is kept
        assert after[0] == 0 and after[1].startswith("kept\n"), after
        assert b.recoveries == []


def test_every_tmpfs_share_counts_its_inodes() -> None:
    for memory in (64 * _MIB, _MEMORY, 1 << 30, 18 << 30):
        s = split_memory(memory, 256 * _MIB)
        held = s.tmp_bytes + s.shm_bytes + (s.tmp_inodes + s.shm_inodes) * INODE_COST
        held += int(s.sysctls["kernel.shmall"]) * 4096
        held += int(s.sysctls["kernel.msgmni"]) * int(s.sysctls["kernel.msgmnb"])
        assert held <= memory - reserve_bytes(memory), (memory, s)
        assert s.tmp_inodes >= 1024 and s.shm_inodes >= 1024, s
