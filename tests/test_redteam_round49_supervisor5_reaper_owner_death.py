"""Red team, round 49 (supervisor5): a reaper stopped by a command, then its owner SIGKILLed.

Without a session cgroup (a non-root caller) the session's reaper (`sandbox._reaper`) is the only
thing that sweeps what a command leaves behind when the owner dies: it reads its socket's end and
kills everything below it. A command of the same uid stops it (``kill -STOP $PPID``); round 48's
owner continues a silent reaper, but a dead owner continues nothing: the stopped reaper never read
the end, and a detached leftover (``setsid``, no marker) outlived the owner for ever. The reaper's
owner death now continues it (``PR_SET_PDEATHSIG`` = ``SIGCONT``). A command that stops it in a loop
stops it again after that one signal: the owner's watchdog (`sandbox._ownerguard`, without a
cgroup: a caller without root) now kills what is below the reaper, then the reaper, stopped or not.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

#: The owner: a reaper, one command that leaves a detached process, stops the reaper and runs on
#: (``loop``: stops it again and again). With ``guard``, the owner's watchdog as a caller without
#: root has it (no cgroup: the test runs as root, so the cgroup's making is switched off).
_OWNER = r"""
import os, sys, time
import sandbox._ownerguard as guard
from sandbox._reaper import Reaper
work, loop, with_guard = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "1"
if with_guard:
    guard._make_cgroup = lambda: None
    assert guard.guard_owner() is not None
r = Reaper()
r.wait_ready()
stop = "while :; do kill -STOP $PPID; done" if loop else "kill -STOP $PPID; exec sleep 3049"
cmd = ("setsid sh -c 'echo $$ > left.pid; exec sleep 3049' </dev/null >/dev/null 2>&1 & "
       "while [ ! -s left.pid ]; do sleep 0.01; done; " + stop)
child = r.spawn(["/bin/sh", "-c", cmd], executable=None, env={"PATH": "/usr/bin:/bin"}, cwd=work,
                stdin=0, stdout=1, stderr=None)
print(r.pid, child.pid, flush=True)
time.sleep(300)
"""


def _state(pid: int) -> str | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    return raw[raw.rfind(b")") + 2 :].split()[0].decode()


def _wait(condition: object, what: str, limit_s: float = 20.0) -> None:
    deadline = time.monotonic() + limit_s
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


@pytest.mark.parametrize(("loop", "guard"), [(False, False), (True, True)], ids=["stopped-once", "stopped-in-a-loop"])
def test_a_stopped_reaper_sweeps_when_its_owner_is_killed(tmp_path: Path, loop: bool, guard: bool) -> None:
    """Failed before (both): the reaper stayed stopped ('T') after its owner's SIGKILL, and the
    detached leftover ran on (the test kills it)."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    owner = subprocess.Popen(
        [sys.executable, "-c", _OWNER, str(tmp_path), str(int(loop)), str(int(guard))],
        stdout=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    )
    pids: list[int] = []
    try:
        assert owner.stdout is not None
        line = owner.stdout.readline().split()
        assert len(line) == 2, f"the owner did not start its command: {line!r}"
        reaper, root = int(line[0]), int(line[1])
        pids += [reaper, root]
        left_file = tmp_path / "left.pid"
        _wait(lambda: left_file.exists() and left_file.read_text().strip(), "no leftover started")
        left = int(left_file.read_text())
        pids.append(left)
        _wait(lambda: _state(reaper) == "T", "the command did not stop the reaper")
        owner.kill()
        owner.wait()
        # The reaper, continued, sweeps and exits: its children (the command, the leftover) die.
        # The bound only ends a failing run; a passing one ends as soon as both are gone.
        _wait(
            lambda: _state(left) in (None, "Z") and _state(root) in (None, "Z"),
            f"the leftover ({_state(left)}) or the command ({_state(root)}) outlived the owner "
            f"beside a stopped reaper ({_state(reaper)})",
        )
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
