"""Red team round 39, docker2: the cgroup counters a task leaves in a recycled container.

A reset kills every process, wipes every writable place and refuses a container whose network
counters moved (round 36), but the container's cgroups outlive it, and every command read them:
``/sys/fs/cgroup/memory/memory.max_usage_in_bytes`` (the container's) and
``/.shellrt-cmds/memory.max_usage_in_bytes`` (the commands' own, round 25) said how much memory the
previous task chose to hold (100 MB held: 104,202,240 read by the next task), ``cpuacct.usage``
how long it ran, ``memory.stat`` how many page faults: an exact number carried from a task to the
next one, which must not talk (a benchmark's answers). No reset can zero a v1 counter.

Now commands see the container's cgroup files through a read-only copy of its limits only
(`sandbox.docker._cgview`), and the commands' own cgroup is made afresh at each reset.

A real container (FAIL, not skip, under CI=true), as root: recycling needs a root host.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from sandbox.docker import DockerBackend
from sandbox.policy import ResourceLimits
from tests._docker_support import config, policy, require_docker, run_sh
from tests.conftest import require

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_LIMITS = ResourceLimits(memory_bytes=512 << 20)
#: Holds 100 MB for a moment and burns ~1 s of CPU: what the next task must not be able to read.
_LEAVE = (
    "head -c 100000000 /dev/zero | perl -e 'local $/; $x = <STDIN>; $i = 0;"
    " $t = time; $i++ while time - $t < 2; print length($x), qq(\\n)'"
)
#: Every readable counter-like file under both cgroup views, as `name value` lines.
_READ = (
    "for f in $(find /sys/fs/cgroup/ /.shellrt-cmds/ -name '*max_usage_in_bytes' -o -name 'cpuacct.usage'"
    " -o -name 'memory.stat' 2>/dev/null); do"
    " [ -r \"$f\" ] || continue;"
    " case $f in *memory.stat) v=$(sed -n 's/^total_pgpgin //p' \"$f\");; *) v=$(cat \"$f\");; esac;"
    " echo \"$f ${v:-0}\"; done; echo done"
)


def _numbers(said: str) -> dict[str, int]:
    found: dict[str, int] = {}
    for line in said.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            found[parts[0]] = int(parts[1])
    return found


async def test_the_next_task_reads_no_counter_of_the_previous_one(tmp_path: Path) -> None:
    require_docker()
    require(os.geteuid() == 0, "recycling needs a root host")
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    async with DockerBackend(config(), policy(first, limits=_LIMITS)) as backend:
        await backend.protect_executor()
        code, said = await run_sh(backend, _LEAVE)
        assert (code, said) == (0, "100000000\n"), said
        with anyio.fail_after(30):
            await backend.reset()
        await backend.reuse_for(policy(second, limits=_LIMITS))
        code, said = await run_sh(backend, _READ)
        assert code == 0 and said.endswith("done\n"), said
        seen = _numbers(said)
        left = {
            name: value
            for name, value in seen.items()
            if (name.endswith("max_usage_in_bytes") and value >= 60_000_000)
            or (name.endswith("cpuacct.usage") and value >= 1_000_000_000)
            or (name.endswith("memory.stat") and value >= 20_000)
        }
        assert not left, f"the next task read the previous task's counters: {left}"


async def test_commands_still_read_the_container_limits(tmp_path: Path) -> None:
    """What programs size themselves by (a JVM's heap, Go's and node's limits) stays readable:
    only counters are hidden."""
    require_docker()
    require(os.geteuid() == 0, "the view is a root host's")
    async with DockerBackend(config(), policy(tmp_path, limits=ResourceLimits(memory_bytes=512 << 20, cpus=1.0))) as backend:
        code, said = await run_sh(
            backend,
            "cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/cpu/cpu.cfs_quota_us;"
            " ls /sys/fs/cgroup/memory/; touch /sys/fs/cgroup/memory/x 2>&1 | grep -c Read-only",
        )
        assert code == 0, said
        lines = said.split()
        assert lines[0] == str(512 << 20) and lines[1] == "100000", said
        assert "memory.stat" not in lines and "memory.max_usage_in_bytes" not in lines, said
        assert lines[-1] == "1", said
