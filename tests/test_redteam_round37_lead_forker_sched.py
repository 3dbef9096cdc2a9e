"""Round 37 (lead, from the speed helper's reading): the process that forks a local command is
not the one whose priority `calm_prefix` reads.

`sandbox._bwrap_sched.calm_prefix` looks at the event loop's thread; a local command is forked by
the session cgroup's spawner thread (a root caller) or by the session's reaper (a non-root
caller). Both run as the caller with the caller's ``RLIMIT_RTPRIO``/``RLIMIT_NICE``: a command of
the same uid may raise THEIR priority (the kernel checks the target's limits), and every later
command was forked under ``SCHED_FIFO`` / a negative nice, with no ``chrt --other`` added because
the loop's thread still looked ordinary. Simulated here as root (the precondition, a caller whose
limits are above 0, cannot be granted to uid 65534 on this machine): the forker is raised from
outside, as such a command would, and the next commands must still start calm.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import anyio
import pytest

from sandbox import LocalConfig, SandboxPolicy
from sandbox.local import LocalBackend
from shellrt.supervisor import Supervisor
from tests.conftest import require

_PROBE = 'python3 -c \'import os; print("POLICY", os.sched_getscheduler(0)); print("NICE", os.getpriority(os.PRIO_PROCESS, 0))\''


def _forkers(backend: LocalBackend) -> list[int]:
    """The thread ids / pids that fork this session's commands."""
    runner = backend._runner
    ids: list[int] = []
    cgroup = runner.session_cgroup
    if cgroup is not None and cgroup.usable and cgroup._tid is not None:
        ids.append(cgroup._tid)
    if runner.reaper is not None:
        ids.append(runner.reaper.pid)
    return ids


def _raise(tid: int) -> None:
    """What a command of the caller's uid may do when the caller's limits allow it: without
    ``CAP_SYS_NICE`` a policy change must keep ``SCHED_RESET_ON_FORK`` where it is set (the kernel
    refuses one that drops it), so the flag the forker holds is kept here as it would have to be."""
    kept = os.sched_getscheduler(tid) & os.SCHED_RESET_ON_FORK
    os.sched_setscheduler(tid, os.SCHED_FIFO | kept, os.sched_param(1))
    os.setpriority(os.PRIO_PROCESS, tid, -5)


def _check(outs: list[str]) -> None:
    for out in outs:
        said = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
        assert said.get("POLICY") == str(os.SCHED_OTHER), outs
        assert int(said.get("NICE", "-99")) >= 0, outs


@pytest.mark.anyio
@pytest.mark.parametrize("reaper", [False, True], ids=["spawner-thread", "reaper"])
async def test_a_raised_forker_hands_no_priority_to_later_commands(tmp_path: Path, reaper: bool) -> None:
    """Failed before: ``POLICY 1`` (SCHED_FIFO) and ``NICE -5`` for every later command."""
    require(os.geteuid() == 0, "raising another thread's priority needs root here (CAP_SYS_NICE)")
    ws = tmp_path / "ws"
    ws.mkdir()
    backend = LocalBackend(LocalConfig(warm_shells=0), SandboxPolicy(workspace=ws))
    backend.session_cgroup = not reaper  # off: the reaper process forks, as for a non-root caller
    outs: list[str] = []
    async with backend, Supervisor(backend, session_dir=tmp_path / "s") as sup:
        first = await sup.run("true", timeout_s=30)
        assert first.exit_code == 0
        assert (backend._runner.reaper is not None) == reaper
        forkers = _forkers(backend)
        assert forkers, "no forker found: the test no longer matches the backend"
        for tid in forkers:
            assert os.sched_getscheduler(tid) & os.SCHED_RESET_ON_FORK, "the forker's children inherit"
            _raise(tid)
        for _ in range(3):
            result = await sup.run(_PROBE, timeout_s=30)
            outs.append(result.preview)
            await anyio.sleep(0.05)
    _check(outs)


def test_an_unprivileged_command_cannot_clear_the_flag() -> None:
    """What the fix rests on, checked on this kernel: uid 65534 sets the flag on itself, then a
    policy change that drops it is refused, and its child starts with the flag cleared."""
    require(os.geteuid() == 0, "dropping to uid 65534 needs root")
    require(
        os.path.exists("/usr/bin/python3"), "the system python3 (uid 65534 cannot run a root-owned pyenv one)"
    )
    code = (
        "import os\n"
        "os.sched_setscheduler(0, os.SCHED_OTHER | os.SCHED_RESET_ON_FORK, os.sched_param(0))\n"
        "try:\n"
        "    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))\n"
        "    print('CLEARED', flush=True)\n"
        "except PermissionError:\n"
        "    print('REFUSED', flush=True)\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    print('CHILD', os.sched_getscheduler(0) & os.SCHED_RESET_ON_FORK, flush=True)\n"
        "    os._exit(0)\n"
        "os.waitpid(pid, 0)\n"
    )
    out = subprocess.run(
        ["/usr/bin/python3", "-I", "-c", code],
        user=65534,
        group=65534,
        extra_groups=[],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout.split("\n")
    assert out[:2] == ["REFUSED", "CHILD 0"], out
