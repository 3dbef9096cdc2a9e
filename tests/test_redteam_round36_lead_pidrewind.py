"""Round 36 (lead; review3's Left): a recycled container's pid rewind entered a namespace by bare pid.

`rewind_pids` ran ``nsenter --target=PID --pid`` after the reset had checked the executor, but a pid
is only a number: had the executor died and its pid been reused by another process (the host's own,
in the worst case) between that check and `nsenter`, the other process's pid namespace would have
had its counter set. The namespace is now held open first and the executor proven after that. Here
the "reused" pid is a process in a pid namespace of the test's own, and the proof fails: nothing
of that namespace may change.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time

import pytest

from sandbox.docker._pidrewind import PID_FLOOR, rewind_pids


def _child_of(pid: int) -> int:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                kids = f.read().split()
        except OSError:
            kids = []
        if kids:
            return int(kids[0])
        time.sleep(0.02)
    raise AssertionError("unshare started no child")


def _last_pid(pid: int) -> int:
    """The pid counter of ``pid``'s namespace, as a process forked into it reads it."""
    out = subprocess.run(
        ["nsenter", f"--target={pid}", "--pid", "--", "cat", "/proc/sys/kernel/ns_last_pid"],
        capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip
    return int(out.stdout)


@pytest.mark.skipif(os.geteuid() != 0, reason="entering a pid namespace needs root (recycling needs a root host)")
def test_a_pid_that_is_no_longer_the_executor_is_not_entered() -> None:
    assert shutil.which("unshare") and shutil.which("nsenter")
    holder = subprocess.Popen(["unshare", "--pid", "--fork", "--kill-child", "sleep", "60"])
    try:
        other = _child_of(holder.pid)
        before = _last_pid(other)
        assert before < PID_FLOOR

        def not_the_executor() -> None:
            raise OSError("the executor's process is gone")

        with pytest.raises(OSError, match="executor's process is gone"):
            rewind_pids(other, not_the_executor)
        after = _last_pid(other)
        assert after < PID_FLOOR, f"the other namespace's pid counter was set: {before} -> {after}"
    finally:
        holder.send_signal(signal.SIGKILL)  # --kill-child: its sleep (the namespace's init) goes too
        holder.wait()


@pytest.mark.skipif(os.geteuid() != 0, reason="entering a pid namespace needs root (recycling needs a root host)")
def test_the_executor_proven_gets_its_namespace_rewound() -> None:
    holder = subprocess.Popen(["unshare", "--pid", "--fork", "--kill-child", "sleep", "60"])
    try:
        target = _child_of(holder.pid)
        rewind_pids(target, lambda: None)
        assert _last_pid(target) == PID_FLOOR + 1  # the reading fork took the next pid
    finally:
        holder.send_signal(signal.SIGKILL)  # --kill-child: its sleep (the namespace's init) goes too
        holder.wait()
