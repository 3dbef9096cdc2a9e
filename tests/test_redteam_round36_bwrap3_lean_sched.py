"""Red team, round 36 (bwrap3): the lean ``shellrt run`` local path handed its caller's priority on.

The review of round 36 made the local backend start every command without its caller's
real-time policy, negative nice or real-time I/O class (`sandbox._bwrap_sched.calm_prefix`). A
plain ``shellrt run --sandbox local -- CMD`` takes the lean path (`shellrt.cli._local_pump`, no
backend, no event loop), which started its command with ``subprocess.Popen`` straight from the
caller: under ``chrt -r 1`` the command ran SCHED_RR (a busy loop takes up to 95% of a CPU from
every ordinary process), at nice -5 it ran at -5 (root, and a non-root caller started at -5 by
root or a unit, which cannot give it back). Now the lean path puts the same prefix before its
command.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

from tests import _nonroot
from tests.conftest import require

_PROBE = (
    "import ctypes, os; "
    f'print("IOCLASS", ctypes.CDLL(None).syscall({ {"x86_64": 252, "aarch64": 31}[platform.machine()] }, 1, 0) >> 13); '
    'print("POLICY", os.sched_getscheduler(0)); print("NICE", os.getpriority(os.PRIO_PROCESS, 0))'
)
_CALLER_NICE = -5


def _lean_run(tmp_path: Path, raise_with: list[str]) -> dict[str, str]:
    """``shellrt run --sandbox local`` of the probe (the lean path: no option it does not take),
    started under ``raise_with`` as root; as uid 65534 the wrapper's nice -5 is inherited instead
    (asserted)."""
    if os.geteuid() != 0:
        require(
            raise_with[:1] == ["nice"] and os.getpriority(os.PRIO_PROCESS, 0) == _CALLER_NICE,
            "a caller at nice -5: run as root (the wrapper gives uid 65534 that nice)",
        )
        raise_with = []
    ws = tmp_path / "ws"
    home = tmp_path / "home"
    for d in (ws, home):
        d.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_STATE_HOME": str(home / "state"),
        "XDG_CACHE_HOME": str(home / "c"),
    }
    argv = [
        *raise_with,
        sys.executable,
        "-m",
        "shellrt",
        "run",
        "--sandbox",
        "local",
        "--",
        f"python3 -c '{_PROBE}'",
    ]
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=ws, env=env, timeout=120)
    said = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if " " in line)
    assert "POLICY" in said, (proc.returncode, proc.stdout, proc.stderr[-2000:])
    return said


def test_the_lean_run_does_not_pass_on_a_negative_nice(tmp_path: Path) -> None:
    """Failed before: ``NICE -5``, root and uid 65534 (2 of 2)."""
    said = _lean_run(tmp_path, ["nice", "-n", str(_CALLER_NICE)])
    assert int(said["NICE"]) >= 0, said


def test_the_lean_run_does_not_pass_on_a_real_time_policy(tmp_path: Path) -> None:
    """Failed before: ``POLICY 2`` (SCHED_RR), root (1 of 1)."""
    require(os.geteuid() == 0, "setting SCHED_RR on the caller needs root (CAP_SYS_NICE)")
    require(shutil.which("chrt") is not None, "chrt (util-linux)")
    said = _lean_run(tmp_path, ["chrt", "--rr", "1"])
    assert int(said["POLICY"]) in (os.SCHED_OTHER, os.SCHED_BATCH, os.SCHED_IDLE), said


def test_the_lean_run_does_not_pass_on_the_real_time_io_class(tmp_path: Path) -> None:
    """Failed before: ``IOCLASS 1``, root (1 of 1)."""
    require(os.geteuid() == 0, "the real-time I/O class needs root (CAP_SYS_ADMIN)")
    require(shutil.which("ionice") is not None, "ionice (util-linux)")
    said = _lean_run(tmp_path, ["ionice", "-c", "1"])
    assert int(said["IOCLASS"]) != 1, said


def test_it_holds_for_an_unprivileged_caller() -> None:
    """The uid 65534 run starts at nice -5 (set here, as root, and inherited)."""
    before = os.getpriority(os.PRIO_PROCESS, 0)
    os.setpriority(os.PRIO_PROCESS, 0, _CALLER_NICE)
    try:
        _nonroot.held_as_nobody(__file__, "test_the_lean_run_does_not_pass_on_a_negative_nice")
    finally:
        os.setpriority(os.PRIO_PROCESS, 0, before)
