"""Review of round 36 (bwrap sched): the local backend still handed its caller's priority on.

Round 36 made every bwrap sandbox start under SCHED_OTHER, at a nice of 0 or more, outside the
real-time I/O class, with ``RLIMIT_RTPRIO``/``RLIMIT_NICE`` 0:0 (`sandbox._bwrap_sched`). The
local backend starts commands from the same caller: a shellrt run under ``chrt -r`` or at nice
-5 (a unit's ``Nice=-5``: non-root too) gave each local command that policy and nice, the first
one (a fresh start), the warm shells and those started in the session's cgroup or by its reaper
alike. A real-time busy loop takes up to 95% of a CPU from every ordinary process; a
non-root caller's command cannot be given back to nice 0 by anyone but root.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

from sandbox import LocalConfig, SandboxPolicy
from sandbox._warm import WarmPool
from sandbox.local import LocalBackend
from shellrt.supervisor import Supervisor
from tests import _nonroot
from tests.conftest import require

_PROBE = (
    "python3 -c 'import ctypes, os; "
    f'print("IOCLASS", ctypes.CDLL(None).syscall({ {"x86_64": 252, "aarch64": 31}[platform.machine()]}, 1, 0) >> 13); '
    'print("POLICY", os.sched_getscheduler(0)); print("NICE", os.getpriority(os.PRIO_PROCESS, 0))\''
)
_CALLER_NICE = -5


@pytest.fixture(autouse=True)
def _prestart_when_busy() -> Iterator[None]:
    """Warm shells start on a loaded machine too (`WarmPool.busy_psi`): they are probed here."""
    saved, WarmPool.busy_psi = WarmPool.busy_psi, 101.0
    yield
    WarmPool.busy_psi = saved


@contextmanager
def _caller_priority(kind: str) -> Iterator[None]:
    """This thread (which starts the commands) under ``kind``, as root; as uid 65534 the nice
    -5 is inherited from the root wrapper (asserted)."""
    nice = os.getpriority(os.PRIO_PROCESS, 0)
    policy = os.sched_getscheduler(0)
    if os.geteuid() != 0:
        require(nice == _CALLER_NICE, "a caller at nice -5: run as root (the wrapper gives uid 65534 that nice)")
        yield
        return
    try:
        if kind == "nice":
            os.setpriority(os.PRIO_PROCESS, 0, _CALLER_NICE)
        else:
            os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(1))
        yield
    finally:
        os.sched_setscheduler(0, policy, os.sched_param(0))
        os.setpriority(os.PRIO_PROCESS, 0, nice)


async def _probe_commands(tmp_path: Path) -> list[str]:
    """Five commands of one shape in a local session (fresh starts, then warm shells)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    backend = LocalBackend(LocalConfig(warm_shells=1), SandboxPolicy(workspace=ws))
    outs = []
    async with backend, Supervisor(backend, session_dir=tmp_path / "s") as sup:
        for _ in range(5):
            result = await sup.run(_PROBE, timeout_s=30)
            outs.append(result.preview)
            await anyio.sleep(0.2)  # the warm shell for the next command starts after this one ends
        assert backend._runner.warm is not None and backend._runner.warm.handed >= 1, outs
    return outs


def _check(outs: list[str]) -> None:
    for out in outs:
        said = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
        assert said.get("POLICY") == str(os.SCHED_OTHER), outs
        assert int(said.get("NICE", "-99")) >= 0, outs
        assert said.get("IOCLASS") in ("0", "2", "3"), outs


@pytest.mark.anyio
async def test_a_local_command_does_not_inherit_its_callers_nice(tmp_path: Path) -> None:
    """Failed before: ``NICE -5`` for every command (root; uid 65534 in the wrapper below)."""
    with _caller_priority("nice"):
        outs = await _probe_commands(tmp_path)
    _check(outs)


@pytest.mark.anyio
async def test_a_local_command_does_not_inherit_its_callers_real_time_policy(tmp_path: Path) -> None:
    """Failed before: ``POLICY 2`` (SCHED_RR) for every command. Root only (SCHED_RR needs it)."""
    require(os.geteuid() == 0, "setting SCHED_RR on the caller needs root (CAP_SYS_NICE)")
    with _caller_priority("rr"):
        outs = await _probe_commands(tmp_path)
    _check(outs)


def test_it_holds_for_an_unprivileged_local_caller() -> None:
    """The uid 65534 run starts at nice -5 (set here, as root, and inherited): its commands start
    through the session's reaper there (no cgroup of its own)."""
    before = os.getpriority(os.PRIO_PROCESS, 0)
    os.setpriority(os.PRIO_PROCESS, 0, _CALLER_NICE)
    try:
        _nonroot.held_as_nobody(__file__, "test_a_local_command_does_not_inherit_its_callers_nice")
    finally:
        os.setpriority(os.PRIO_PROCESS, 0, before)
