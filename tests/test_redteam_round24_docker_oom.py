"""Red team round 24, docker: memory held outside processes made the executor the OOM victim.

A command that fills the container's tmpfs ``/tmp`` (or ``/dev/shm``, SysV segments or message
queues) charges the container's memory cgroup with pages that are no process's RSS. At the ceiling
every allocation runs the OOM killer; with every process at ``oom_score_adj`` 0 and no command left
it chose the executor (the largest process left), the host replaced the container and the
session's ``/tmp`` and background tasks were lost (round 23, shown by hand; here: 96 MiB ceiling,
200 MiB ``/tmp``). Now each command runs at ``oom_score_adj`` 1000 (``priv``: any process of a
command outscores the executor) and those stores are sized to leave the executor a reserve
(`sandbox.docker._memsplit`): filling them gives ``ENOSPC``, a heap past the ceiling is the
victim and is reported as OOM-killed, and the next command runs. FAIL, not skip, under CI=true.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from sandbox.base import ExecRequest
from sandbox.docker import DockerBackend
from sandbox.docker._hostpid import host_pid
from sandbox.docker._memsplit import split_memory
from sandbox.docker._tmpslots import TMP_SLOTS
from sandbox.policy import ResourceLimits
from tests._docker_support import DEBIAN, config, policy, read_to_end, require_docker, run_sh

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_MIB = 1 << 20
#: Fills /tmp, /dev/shm, SysV shared memory and SysV message queues (both outlive their maker) as
#: far as they go. Perl's builtins; IPC_PRIVATE 0, IPC_CREAT|0600 01600, IPC_NOWAIT 04000.
_FILL = (
    "head -c 200000000 /dev/zero > /tmp/fill; head -c 200000000 /dev/zero > /dev/shm/fill; "
    "perl -e 'my $n = 0; for (1..256) { my $id = shmget(0, 1<<20, 01600) // last; "
    'shmwrite($id, "a" x (1<<20), 0, 1<<20) or last; $n++ } '
    "my $m = 0; Q: for (1..4096) { my $q = msgget(0, 01600) // last; "
    'while (msgsnd($q, pack("l! a*", 1, "a" x 8000), 04000)) { $m++ } } '
    'print "segments $n messages $m\\n"\'; echo filled'
)
#: A heap past the ceiling, in a process of its own.
_HOG = 'perl -e \'$x = "a" x 150000000; print "survived\\n"\''


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _run(b: DockerBackend, script: str) -> tuple[int | None, bool, str]:
    proc = await b.exec(
        ExecRequest(
            argv=("sh", "-c", script), cwd="/workspace", env={"PATH": "/usr/bin:/bin"}, merge_stderr=True
        )
    )
    with anyio.fail_after(120):
        out = await read_to_end(proc.stdout)
        status = await proc.wait()
    return status.exit_code, status.oom_killed, out.decode(errors="replace")


async def test_memory_held_outside_processes_leaves_the_executor_alive(tmp_path: Path) -> None:
    require_docker()
    limits = ResourceLimits(memory_bytes=96 * _MIB, tmp_bytes=200 * _MIB)
    async with DockerBackend(config(DEBIAN), policy(tmp_path, limits=limits)) as b:
        rc, oom, out = await _run(b, "echo kept > /tmp/mark; cat /proc/self/oom_score_adj")
        assert rc == 0 and len(out.split()) == 1, (rc, out)
        command = int(out)
        # The executor's score, read from the host: commands see nothing below /proc/1 (round 40).
        host = host_pid(b.container_id, b.executor_pid)
        assert host is not None
        with open(f"/proc/{host}/oom_score_adj", encoding="ascii") as fh:
            base = int(fh.read())
        assert command == 1000 and base < command, (command, base)
        # No command, the leased uid's or root's, gets below the executor's score (no CAP_SYS_RESOURCE).
        for user in (None, "root"):
            with anyio.fail_after(60):
                rc, out = await run_sh(
                    b,
                    f"echo {base - 1} > /proc/self/oom_score_adj 2>/dev/null; cat /proc/self/oom_score_adj",
                    user=user,
                )
            assert int(out.split()[-1]) >= base, (user, rc, out)
        filled = await _run(b, _FILL)
        hog = await _run(b, _HOG)
        after = await _run(b, "cat /tmp/mark")
        # Before: the fill ended with 137 or 255, every later request too, then the executor was gone.
        assert b.recoveries == [], f"the executor was the OOM victim: {b.recoveries} {filled} {hog}"
        assert filled[0] == 0 and "filled" in filled[2], filled
        assert hog[:2] == (137, True) and "survived" not in hog[2], hog
        assert after == (0, False, "kept\n"), after


def test_the_stores_outside_processes_leave_a_reserve() -> None:
    for memory in (64 * _MIB, 96 * _MIB, 1 << 30, 18 << 30):
        s = split_memory(memory, 256 * _MIB)
        held = s.tmp_bytes + s.shm_bytes + int(s.sysctls["kernel.shmall"]) * 4096
        held += TMP_SLOTS * s.slot_bytes  # each command's own TMPDIR (round 29)
        held += int(s.sysctls["kernel.msgmni"]) * int(s.sysctls["kernel.msgmnb"])
        assert held <= memory - max(32 * _MIB, memory // 8), (memory, s)
    assert split_memory(18 << 30, 256 * _MIB).tmp_bytes == 256 * _MIB  # a large ceiling keeps /tmp as asked
