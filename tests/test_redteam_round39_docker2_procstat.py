"""Red team round 39, docker2: the executor's own counters, read by the next task.

The executor (the image's shell), its runners and docker-init outlive every reset, and their
``/proc/<pid>/stat`` is world-readable: page faults (``minflt``, ``cminflt``), CPU time (``utime``)
and, once a runner is reaped, the CPU time of every command it ran (``cutime``, ``cstime``), and
``/proc/<pid>/status``'s context switches. A task that ran N commands, or burnt T seconds, left N
and T for the next task on the container to read (a fresh container: 462 child faults and 1 tick;
after a task that burnt CPU: 2,969 and 47). No reset can zero a process's counters.

Now the container's ``/proc`` hides other users' processes from commands (``hidepid=invisible``,
set by the host before anything of the image runs): the executor's, its runners' and docker-init's
entries are not there for any command identity. A real container (FAIL, not skip, under CI=true),
as root: recycling needs a root host.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from sandbox.docker import DockerBackend
from tests._docker_support import config, policy, require_docker, run_sh
from tests.conftest import require

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_BURN = "perl -e '$t = time; 1 while time - $t < 2'; echo burnt"
#: Every process this command can see that is not its own: pid, child faults, children's CPU ticks.
_READ = (
    "me=$(id -u); for p in /proc/[0-9]*; do n=${p#/proc/};"
    " [ -r $p/stat ] || continue; u=$(stat -c %u $p); [ \"$u\" = \"$me\" ] && continue;"
    " set -- $(cut -d' ' -f11,16,17 $p/stat 2>/dev/null); echo \"$n $u ${1:-0} $((${2:-0} + ${3:-0}))\"; done; echo done"
)


async def test_the_next_task_sees_no_process_of_the_last_one_s_executor(tmp_path: Path) -> None:
    require_docker()
    require(os.geteuid() == 0, "recycling needs a root host")
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    async with DockerBackend(config(), policy(first)) as backend:
        await backend.protect_executor()
        for _ in range(3):
            code, said = await run_sh(backend, _BURN)
            assert (code, said) == (0, "burnt\n"), said
        with anyio.fail_after(30):
            await backend.reset()
        await backend.reuse_for(policy(second))
        code, said = await run_sh(backend, _READ)
        assert code == 0 and said.endswith("done\n"), said
        others = said.splitlines()[:-1]
        assert not others, f"the next task read other identities' processes (pid uid cminflt cticks): {others}"


async def test_a_command_still_sees_its_own_processes(tmp_path: Path) -> None:
    """A command's own processes stay visible (a listing of ``/proc``, ``$!``, ``/proc/self``); other commands'
    were already closed to it by Landlock where the kernel has it (`_isolation`)."""
    require_docker()
    require(os.geteuid() == 0, "the option is set by a root host")
    async with DockerBackend(config(), policy(tmp_path)) as backend:
        code, seen = await run_sh(
            backend, "sleep 3 & p=$!; cat /proc/$p/comm; cat /proc/self/comm; for q in /proc/[0-9]*; do cat $q/comm; done 2>/dev/null | tr '\\n' ' '"
        )
        assert code == 0, seen
        lines = seen.splitlines()
        assert lines[:2] == ["sleep", "cat"], seen
        assert {"sleep", "sh"} <= set(lines[2].split()), seen
        assert "docker-init" not in lines[2], seen
