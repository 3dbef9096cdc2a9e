"""Red team round 40, docker3: what ``/proc`` of a recycled container's lasting processes tells.

docker-init (PID 1) and the executor outlive every reset (round 39 docker2's Left). Their
``/proc/<pid>/stat``, ``status``, ``sched``, ``schedstat``, ``statm`` are world-readable: the
executor's ``cutime``/``cstime`` sum every command's CPU time it reaped, its ``cminflt`` their page
faults, its context switches grow with each request, docker-init's sum every orphan it reaped. A
task that burnt 2 s of CPU left ~200 ticks there for the next task, which must not learn anything
of it (a benchmark's answers).

Now neither process's ``/proc`` directory shows anything to a command: the host covers both with
an empty read-only directory (the executor's own ``fd`` bound back: it names its I/O directory
through ``/proc/self/fd/8``), so no per-process file, today's or a newer kernel's, is readable.

A real container (FAIL, not skip, under CI=true), as root: recycling needs a root host; debian
(dash, the session's leased uid) and busybox (ash, root in the container).
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from sandbox.docker import DockerBackend
from tests._docker_support import BUSYBOX, DEBIAN, config, policy, require_docker, run_sh
from tests.conftest import require

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

#: Burns ~2 s of CPU in a child the helper reaps (and an orphan docker-init reaps).
_LEAVE = (
    "( t=$(date +%s); while [ $(( $(date +%s) - t )) -lt 2 ]; do :; done ) & wait;"
    " ( ( t=$(date +%s); while [ $(( $(date +%s) - t )) -lt 1 ]; do :; done ) & ) ; sleep 2; echo left"
)
#: Per readable ``/proc/<pid>/stat`` not of this command's own tree: pid, cutime+cstime, cminflt.
_READ = (
    "me=$$; for d in /proc/[0-9]*; do p=${d#/proc/}; [ \"$p\" = \"$me\" ] && continue;"
    " s=$(cat $d/stat 2>/dev/null) || continue; [ -n \"$s\" ] || continue;"
    " s=${s##*) }; set -- $s; echo \"$p $2 $(( ${14} + ${15} )) $8\"; done; echo done"
)
#: Every per-process file of PID 1 and of the executor (``$1``) that a command could read.
_FILES = (
    "for p in 1 $E; do for f in stat status sched schedstat statm io limits wchan cmdline comm"
    " task/$p/stat task/$p/status task/$p/sched children task/$p/children; do"
    " if [ -r /proc/$p/$f ] && cat /proc/$p/$f >/dev/null 2>&1; then echo \"read $p/$f\"; fi; done; done;"
    " ls /proc/$E/fd/ >/dev/null 2>&1 && echo 'listed the executor fd table';"
    " ls /proc/$E/fdinfo/ >/dev/null 2>&1 && echo 'listed the executor fdinfo';"
    " echo done"
)


def _leaks(said: str, executor: int) -> dict[int, tuple[int, int]]:
    """Processes (PID 1, the executor) whose reaped-children counters carry a previous task."""
    found: dict[int, tuple[int, int]] = {}
    for line in said.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0].isdigit() and int(parts[0]) in (1, executor):
            ticks, faults = int(parts[2]), int(parts[3])
            if ticks >= 50:
                found[int(parts[0])] = (ticks, faults)
    return found


@pytest.mark.parametrize("image", [DEBIAN, BUSYBOX])
async def test_the_next_task_reads_no_counter_of_the_lasting_processes(tmp_path: Path, image: str) -> None:
    require_docker()
    require(os.geteuid() == 0, "recycling needs a root host")
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    async with DockerBackend(config(image), policy(first)) as backend:
        await backend.protect_executor()
        code, said = await run_sh(backend, _LEAVE)
        assert (code, said) == (0, "left\n"), said
        with anyio.fail_after(60):
            await backend.reset()
        await backend.reuse_for(policy(second))
        code, said = await run_sh(backend, _READ)
        assert code == 0 and said.endswith("done\n"), said
        assert backend.executor_pid is not None
        leaks = _leaks(said, backend.executor_pid)
        assert not leaks, f"the next task read the previous task's CPU time (ticks, faults): {leaks}"
        for user in (None, "root", "nobody"):
            code, said = await run_sh(backend, f"E={backend.executor_pid}; {_FILES}", user=user)
            assert code == 0 and said == "done\n", (user, said)
            # Nor can a command take the cover away (no CAP_SYS_ADMIN, root included).
            code, said = await run_sh(
                backend, f"umount -l /proc/1 2>/dev/null || umount -l /proc/{backend.executor_pid} 2>/dev/null"
                " || echo kept", user=user
            )
            assert said == "kept\n", (user, said)


async def test_root_can_administer_keeps_its_io_directory(tmp_path: Path) -> None:
    """The executor still reaches its detached I/O directory through ``/proc/self/fd/8``."""
    require_docker()
    require(os.geteuid() == 0, "root_can_administer needs a root host")
    async with DockerBackend(config(BUSYBOX, root_can_administer=True), policy(tmp_path)) as backend:
        for n in range(3):
            code, said = await run_sh(backend, f"echo run{n}; cat /proc/1/stat 2>&1 | grep -c ' S ' || true")
            assert code == 0 and said.splitlines() == [f"run{n}", "0"], said
