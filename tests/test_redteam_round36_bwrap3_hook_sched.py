"""Red team, round 36 (bwrap3): a hook process ran at its caller's raised priority.

Hooks are the operator's own programs, run on the host as the operator (`shellrt.permissions.
hookproc`), but what they work on is a hostile model's tool input: a command string, a path, a
file's new content, up to the hook's timeout each. shellrt run under ``chrt -r`` or at nice -5 (a
harness keeping its own supervision responsive) gave every hook that policy: a hook's busy loop
on a crafted input (a policy regex, a formatter, a scanner) took up to 95% of a CPU from every
ordinary process for its whole timeout, and no limit applies to a hook. The caller raised its
priority for shellrt's own supervision, not for work a model's input drives: hooks now start
under `sandbox._bwrap_sched.calm_prefix` as commands do. Their umask and signal state stay the
caller's (decided: a hook writes the operator's files, as the operator's shell would run it).
"""

from __future__ import annotations

import os
import platform
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from shellrt.permissions.hookproc import run_hook_process
from tests import _nonroot
from tests.conftest import require

_PROBE = (
    "python3 -c 'import ctypes, os; "
    f'print("IOCLASS", ctypes.CDLL(None).syscall({ {"x86_64": 252, "aarch64": 31}[platform.machine()] }, 1, 0) >> 13); '
    'print("POLICY", os.sched_getscheduler(0)); print("NICE", os.getpriority(os.PRIO_PROCESS, 0))\''
)
_CALLER_NICE = -5


@contextmanager
def _caller_priority(kind: str) -> Iterator[None]:
    """This thread (which starts the hook) under ``kind``, as root; as uid 65534 the nice -5 is
    inherited from the root wrapper (asserted)."""
    nice = os.getpriority(os.PRIO_PROCESS, 0)
    policy = os.sched_getscheduler(0)
    if os.geteuid() != 0:
        require(
            kind == "nice" and nice == _CALLER_NICE,
            "a caller at nice -5: run as root (the wrapper gives uid 65534 that nice)",
        )
        yield
        return
    try:
        if kind == "nice":
            os.setpriority(os.PRIO_PROCESS, 0, _CALLER_NICE)
        elif kind == "rr":
            os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(1))
        else:
            import ctypes

            number = {"x86_64": 251, "aarch64": 30}[platform.machine()]  # ioprio_set: real time, level 4
            assert ctypes.CDLL(None).syscall(number, 1, 0, (1 << 13) | 4) == 0
        yield
    finally:
        os.sched_setscheduler(0, policy, os.sched_param(0))
        os.setpriority(os.PRIO_PROCESS, 0, nice)
        if kind == "io":
            import ctypes

            ctypes.CDLL(None).syscall({"x86_64": 251, "aarch64": 30}[platform.machine()], 1, 0, 0)


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["nice", "rr", "io"])
async def test_a_hook_does_not_run_at_its_callers_raised_priority(tmp_path: Path, kind: str) -> None:
    """Failed before (root): ``NICE -5``, ``POLICY 2``, ``IOCLASS 1``: 3 of 3; uid 65534 nice 1 of 1."""
    require(kind == "nice" or os.geteuid() == 0, "a real-time policy or I/O class needs root")
    with _caller_priority(kind):
        result = await run_hook_process(
            _PROBE, b"{}", cwd=tmp_path, env={"PATH": os.defpath, "HOME": str(tmp_path)}, timeout=60
        )
    said = dict(line.split(" ", 1) for line in result.stdout.splitlines() if " " in line)
    assert said.get("POLICY") == str(os.SCHED_OTHER), result
    assert int(said.get("NICE", "-99")) >= 0, result
    assert said.get("IOCLASS") in ("0", "2", "3"), result


def test_it_holds_for_an_unprivileged_caller() -> None:
    """The uid 65534 run starts at nice -5 (set here, as root, and inherited)."""
    before = os.getpriority(os.PRIO_PROCESS, 0)
    os.setpriority(os.PRIO_PROCESS, 0, _CALLER_NICE)
    try:
        _nonroot.held_as_nobody(__file__, "test_a_hook_does_not_run_at_its_callers_raised_priority[nice]")
    finally:
        os.setpriority(os.PRIO_PROCESS, 0, before)
