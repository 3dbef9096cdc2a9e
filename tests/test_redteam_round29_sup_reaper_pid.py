"""Red team, round 29: a dead reaper's pid was read as if it were still the reaper.

The local backend's reaper (`sandbox._reaper`) is a process of the commands' uid: a command can
SIGKILL it (``kill -9 $PPID``). ``Reaper.alive`` then reaped it (``Popen.poll``), freeing its pid,
and the session's settle step went on reading ``/proc/<that pid>/task/<that pid>/children`` and
SIGKILLing what it listed. With ``pid_max`` at 32768 a freed pid is soon another process's: the
sweep would kill that process's children -- as root, anyone's. Now the dead reaper stays an
unreaped zombie until `Reaper.close` (its pid cannot be reused meanwhile), liveness is told with
``WNOWAIT``, and nothing reads the reaper's children once it ended.
"""

from __future__ import annotations

import os
import signal
import time

from sandbox._reaper import Reaper


def _state(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return None
    return stat[stat.rfind(b")") + 2 :].split()[0].decode()


def test_a_dead_reaper_keeps_its_pid_until_close() -> None:
    reaper = Reaper()
    reaper.wait_ready()
    pid = reaper.pid
    try:
        assert reaper.alive()
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while reaper.alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not reaper.alive()
        # Still our zombie: no other process can hold this pid while the session holds the reaper.
        assert _state(pid) == "Z"
        assert reaper.children() == []
        assert not reaper.children_within(set())
    finally:
        reaper.close()
    assert reaper._proc.returncode == -signal.SIGKILL  # reaped by close, not before
