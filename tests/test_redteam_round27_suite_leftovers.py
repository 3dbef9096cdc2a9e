"""Round 27 (suite): the session's guard against processes a test leaves running (tests/_leftovers.py).

CI57 ended with a ``sleep 1000`` still running: test_sandbox_local_owner's watchdog test killed the ``sh`` of
``sh -c 'sleep 1000; : marker'`` and left its ``sleep`` to init, and nothing noticed. The guard
finds such a process by the session token it inherited (or the local run marker of this process),
names the test that was running when it started, and kills it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid

from tests._leftovers import SESSION_VAR, SessionProcesses


def _wait_for(predicate: object, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.02)
    return False


def _sleeps_of(marker: str) -> list[int]:
    """The ``sleep`` children of the ``sh`` carrying ``marker`` (by their parent's command line)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
            ppid = int(stat[stat.rfind(b")") + 2 :].split()[1])
            with open(f"/proc/{ppid}/cmdline", "rb") as f:
                parent = f.read()
        except (OSError, ValueError, IndexError):
            continue
        if marker.encode() in parent and b"(sleep)" in stat:
            found.append(int(entry))
    return found


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
        sh = subprocess.Popen(["sh", "-c", f"sleep 1000; : {marker}"], start_new_session=True)
        try:
            assert _wait_for(lambda: _sleeps_of(marker))
            (sleep_pid,) = _sleeps_of(marker)
            sh.kill()
            sh.wait()
            assert sleep_pid in guard.survivors(), "the orphaned sleep was not found"
            said = guard.describe(sleep_pid)
            assert "sleep 1000" in said and "tests/example.py::test_leaky" in said, said
            guard.kill([sleep_pid])
            assert _wait_for(lambda: sleep_pid not in guard.survivors())
        finally:
            if sh.poll() is None:
                os.killpg(sh.pid, signal.SIGKILL)
                sh.wait()
    finally:
        guard.end()
    assert os.environ.get(SESSION_VAR) == saved
