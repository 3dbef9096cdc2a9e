"""Round 27 (suite): the session's guard against processes a test leaves running (tests/_leftovers.py).

CI57 ended with a ``sleep 1000`` still running: test_sandbox_local_owner's watchdog test killed the ``sh`` of
``sh -c 'sleep 1000; : marker'`` and left its ``sleep`` to init, and nothing noticed. The guard
finds such a process by the session token it inherited (or the local run marker of this process),
names the test that was running when it started, and kills it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import uuid

import psutil

from tests._leftovers import SESSION_VAR, SessionProcesses


def _wait_for_exec(pid: int, program: bytes) -> None:
    """Wait until ``pid`` runs ``program``: mid-execve its cmdline reads empty (CI on c54a1b17: ``pid 23632 []``)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if f.read().split(b"\0")[0].endswith(program):
                return
        time.sleep(0.005)
    raise AssertionError(f"pid {pid} never ran {program!r} within 10 s")


def test_an_orphaned_child_is_found_blamed_and_killed() -> None:
    """What the watchdog test did: the ``sh`` killed alone, its ``sleep`` orphaned."""
    guard = SessionProcesses()
    saved = os.environ.get(SESSION_VAR)
    guard.begin()
    try:
        assert os.environ[SESSION_VAR] == guard.token
        assert saved is None or guard.token.startswith(f"{saved}/")  # nested in the running session
        guard.test_started("tests/example.py::test_before")
        time.sleep(0.05)  # clock ticks: the start below comes after this test's start
        guard.test_started("tests/example.py::test_leaky")
        marker = f"rt27-leftover-{uuid.uuid4().hex}"
        sh = subprocess.Popen(
            ["sh", "-c", f"sleep 1000 & echo $!; wait; : {marker}"], stdout=subprocess.PIPE, start_new_session=True
        )
        try:
            assert sh.stdout is not None
            sleep_pid = int(sh.stdout.readline())
            _wait_for_exec(sleep_pid, b"sleep")  # $! is printed at fork: the child may still be in execve
            sh.kill()  # the sh alone: its sleep goes to init
            sh.wait()
            assert sleep_pid in guard.survivors(), "the orphaned sleep was not found"
            said = guard.describe(sleep_pid)
            assert "sleep 1000" in said and "tests/example.py::test_leaky" in said, said
            guard.kill([sleep_pid])
            psutil.Process(sleep_pid).wait(timeout=10)
            assert sleep_pid not in guard.survivors()
        finally:  # the group outlives the sh while its sleep lives: its id is not reused meanwhile
            with contextlib.suppress(ProcessLookupError):
                os.killpg(sh.pid, signal.SIGKILL)
            sh.wait()
    finally:
        guard.end()
    assert os.environ.get(SESSION_VAR) == saved
