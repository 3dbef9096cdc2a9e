"""Red team, round 36 (bwrap): a command ran with its caller's scheduling priority.

Every bwrap command inherited the scheduling of the process that started its sandbox: a caller run
under a real-time policy (``chrt -r``, a service with ``CPUSchedulingPolicy=rr``) gave each command
SCHED_RR, and one at a negative nice (a harness that keeps its own supervision responsive under
load, ``Nice=-5``) gave each command that nice. A real-time busy loop takes up to 95% of a CPU
from every ordinary process of the host, and no cgroup CPU limit (``--cpus``: CFS quota) counts
it; a negative nice outweighs the host's own processes. ``RLIMIT_RTPRIO`` and ``RLIMIT_NICE``
(which let an unprivileged process raise its own priority) were inherited the same way, and so
was a root caller's real-time I/O class (``ionice -c 1``).

Now every command starts under SCHED_OTHER, at a nice of 0 or more, outside the real-time I/O
class, with both rlimits 0:0
(`sandbox._bwrap_sched`). Root (commands as the leased uid) and uid 65534, session and per command.
"""

from __future__ import annotations

import ctypes
import os
import platform
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from sandbox.policy import ResourceLimits
from tests import _nonroot
from tests._bwrap_session import probe_lines, require_bwrap

pytestmark = pytest.mark.bwrap

_PROBE = r"""
import ctypes, errno, os, platform, resource
get = {"x86_64": 252, "aarch64": 31}[platform.machine()]
print("IOCLASS", ctypes.CDLL(None).syscall(get, 1, 0) >> 13)
print("POLICY", os.sched_getscheduler(0))
print("NICE", os.getpriority(os.PRIO_PROCESS, 0))
print("RLIMITS", *resource.getrlimit(resource.RLIMIT_RTPRIO), *resource.getrlimit(resource.RLIMIT_NICE))
try:
    os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(1))
    print("RAISE ok")
except OSError as exc:
    print("RAISE", errno.errorcode[exc.errno])
"""

_CALM_NICE = 0
_libc = ctypes.CDLL(None, use_errno=True)
#: ioprio_get, ioprio_set
_IOPRIO = {"x86_64": (252, 251), "aarch64": (31, 30)}[platform.machine()]
_CALLER_NICE = -5


@contextmanager
def _caller_priority(kind: str) -> Iterator[None]:
    """This thread (which starts the sandbox) under ``kind``: a negative nice or SCHED_RR 1; as root
    set here and put back after, as uid 65534 inherited from the root wrapper (asserted)."""
    nice = os.getpriority(os.PRIO_PROCESS, 0)
    policy = os.sched_getscheduler(0)
    ioprio = _libc.syscall(_IOPRIO[0], 1, 0)
    if os.geteuid() != 0:
        from tests.conftest import require

        require(nice == _CALLER_NICE, "a caller at nice -5: run as root (the wrapper gives uid 65534 that nice)")
        yield
        return
    try:
        if kind == "nice":
            os.setpriority(os.PRIO_PROCESS, 0, _CALLER_NICE)
        elif kind == "io":
            assert _libc.syscall(_IOPRIO[1], 1, 0, (1 << 13) | 4) == 0, "ionice -c 1 -n 4 on itself"
        else:
            os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(1))
        yield
    finally:
        os.sched_setscheduler(0, policy, os.sched_param(0))
        os.setpriority(os.PRIO_PROCESS, 0, nice)
        _libc.syscall(_IOPRIO[1], 1, 0, max(ioprio, 0))


def _probe(tmp_path: Path, persistent: bool, kind: str) -> None:
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    with _caller_priority(kind):
        said, out = probe_lines(ws, tmp_path / "s", _PROBE, persistent=persistent)
    assert said.get("POLICY") == str(os.SCHED_OTHER), out
    assert int(said.get("NICE", "-99")) >= _CALM_NICE, out
    assert said.get("IOCLASS") in ("0", "2", "3"), out  # never 1, real time
    assert said.get("RLIMITS") == "0 0 0 0", out
    assert said.get("RAISE") == "EPERM", out


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_a_command_does_not_inherit_its_callers_nice(tmp_path: Path, persistent: bool) -> None:
    """Failed before: ``NICE -5``, root 2 of 2 and uid 65534 2 of 2."""
    _probe(tmp_path, persistent, "nice")


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_a_command_does_not_inherit_its_callers_real_time_policy(tmp_path: Path, persistent: bool) -> None:
    """Failed before: ``POLICY 2`` (SCHED_RR), root 2 of 2. Root only: an unprivileged caller
    cannot be given SCHED_RR here (``RLIMIT_RTPRIO`` 0, no ``CAP_SYS_RESOURCE`` to raise it)."""
    from tests.conftest import require

    require(os.geteuid() == 0, "setting SCHED_RR on the caller needs root (CAP_SYS_NICE)")
    _probe(tmp_path, persistent, "rr")


_BUSY = r"""
import os, time
print("POLICY", os.sched_getscheduler(0))
t0 = time.monotonic(); c0 = time.process_time()
while time.monotonic() - t0 < 1.0: pass
print("SHARE", round((time.process_time() - c0) / (time.monotonic() - t0), 2))
"""


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_a_real_time_callers_cpu_limited_session_runs_its_commands(tmp_path: Path, persistent: bool) -> None:
    """A root caller under SCHED_RR with ``--cpus``: the zygote, the spawner and every nsenter start
    were real-time tasks joining a CPU cgroup with no real-time time (``cpu.rt_runtime_us`` 0), which
    the kernel refuses: no command ran at all (``shellrt-cgroup: ... I/O error``). Failed before: 2
    of 2. Now each command runs, as SCHED_OTHER, within its limit."""
    from tests.conftest import require

    require(os.geteuid() == 0, "setting SCHED_RR on the caller and a CPU limit need root")
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    with _caller_priority("rr"):
        said, out = probe_lines(
            ws, tmp_path / "s", _BUSY, persistent=persistent, limits=ResourceLimits(cpus=0.25)
        )
    assert said.get("POLICY") == str(os.SCHED_OTHER), out
    assert float(said.get("SHARE", "9")) <= 0.5, out


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_a_command_does_not_inherit_its_callers_real_time_io_class(tmp_path: Path, persistent: bool) -> None:
    """A root caller under ``ionice -c 1``: its commands' disk requests were served before every
    ordinary process's (``IOCLASS 1``). Failed before: root 2 of 2. Root only (the class needs
    CAP_SYS_ADMIN or CAP_SYS_NICE to set)."""
    from tests.conftest import require

    require(os.geteuid() == 0, "setting the real-time I/O class on the caller needs root")
    _probe(tmp_path, persistent, "io")


def test_it_holds_for_an_unprivileged_caller() -> None:
    """The uid 65534 run starts at nice -5 (set here, as root, and inherited)."""
    before = os.getpriority(os.PRIO_PROCESS, 0)
    os.setpriority(os.PRIO_PROCESS, 0, _CALLER_NICE)
    try:
        _nonroot.held_as_nobody(__file__, "test_a_command_does_not_inherit_its_callers_nice")
    finally:
        os.setpriority(os.PRIO_PROCESS, 0, before)

