"""Processes a test session started that are still running when it ends: found, blamed, killed.

A test that kills only the ``sh`` of ``sh -c 'sleep 1000; : marker'`` leaves its ``sleep`` to init
(CI57 left one); nothing failed, and the machine kept it. The session (`tests/conftest.py`) puts a
token in its environment that every process it starts directly inherits (child interpreters,
``sh -c`` helpers, servers); sandboxed commands get a clean environment, so they are found by the
local backend's run marker (``SHELLRT_RUN_ID=local-<this pid>x…``) and, as root with a cgroup v1
``pids`` hierarchy, by membership of this process's owner cgroup (`sandbox._ownerguard`), which
nothing started below it can leave. Each survivor is blamed on the test that was running when it
started (its start time against the tests' start times).
"""

from __future__ import annotations

import bisect
import contextlib
import os
import secrets
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from sandbox import _ownerguard
from sandbox._proctree import MARKER_VAR, is_alive, start_time

#: Carried by every process the session starts with its environment: ``<token>`` for the outermost
#: session, ``<outer>/<token>`` for a pytest run inside it (a non-root child run, tests/_nonroot.py).
SESSION_VAR = "SHELLRT_TEST_SESSION"

_TICKS = os.sysconf("SC_CLK_TCK")


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _env_value(environ: bytes, name: str) -> str | None:
    needle = f"\0{name}=".encode()
    at = (b"\0" + environ).find(needle)
    if at < 0:
        return None
    start = at + len(needle) - 1
    stop = environ.find(b"\0", start)
    return environ[start : stop if stop >= 0 else len(environ)].decode("utf-8", "replace")


def _now_ticks() -> int:
    """Now on the clock of ``/proc/<pid>/stat``'s start time (clock ticks since boot)."""
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * _TICKS)


@dataclass
class SessionProcesses:
    """One pytest session's token, its tests' start times, and the processes it left running."""

    token: str = ""
    _tests: list[tuple[int, str]] = field(default_factory=list)
    _saved: str | None = None

    def begin(self) -> None:
        """Mark every process started from now on (with this process's environment)."""
        self._saved = os.environ.get(SESSION_VAR)
        own = f"{os.getpid()}x{secrets.token_hex(4)}"
        self.token = f"{self._saved}/{own}" if self._saved else own
        os.environ[SESSION_VAR] = self.token

    def end(self) -> None:
        if self._saved is None:
            os.environ.pop(SESSION_VAR, None)
        else:
            os.environ[SESSION_VAR] = self._saved

    def test_started(self, nodeid: str) -> None:
        self._tests.append((_now_ticks(), nodeid))

    def _ours(self, pid: int, in_cgroup: set[int]) -> bool:
        if pid in in_cgroup:
            return True
        try:
            environ = _read(f"/proc/{pid}/environ")
        except OSError:
            return False
        session = _env_value(environ, SESSION_VAR)
        if session is not None and (session == self.token or session.startswith(f"{self.token}/")):
            return True
        run = _env_value(environ, MARKER_VAR)
        return run is not None and run.startswith(f"local-{_ownerguard.owner_marker_token()}")

    def survivors(self) -> list[int]:
        """Live processes of this session (never this process, nor its owner guard's watchdog,
        which lives as long as this process by design and kills what is left when it exits)."""
        skip = {os.getpid()}
        guard = _ownerguard._GUARD
        if guard is not None and guard.pid == os.getpid():
            skip.add(guard.watchdog.pid)
        in_cgroup = set(_cgroup_members(guard.cgroup if guard is not None and guard.pid == os.getpid() else None))
        pids = [int(e) for e in os.listdir("/proc") if e.isdigit() and int(e) not in skip]
        return [pid for pid in pids if self._ours(pid, in_cgroup) and is_alive(pid)]

    def wait_for_none(self, timeout: float) -> list[int]:
        """The survivors once ``timeout`` passed without all of them going (kills may be under way).

        First the pools that live as long as the process by design and end at its exit end now:
        the page converter's idle workers (`shellrt.tools._convert_worker`)."""
        converter = sys.modules.get("shellrt.tools._convert_worker")
        if converter is not None:
            converter.shutdown()
        deadline = time.monotonic() + timeout
        left = self.survivors()
        while left and time.monotonic() < deadline:
            time.sleep(0.1)
            left = self.survivors()
        return left

    def describe(self, pid: int) -> str:
        try:
            cmdline = _read(f"/proc/{pid}/cmdline").replace(b"\0", b" ").decode("utf-8", "replace").strip()
        except OSError:
            cmdline = "?"
        started = start_time(pid)
        blamed = "before the first test"
        if started is not None:
            at = bisect.bisect_right([t for t, _ in self._tests], started) - 1
            if at >= 0:
                blamed = f"during (or after) {self._tests[at][1]}"
        return f"pid {pid} [{cmdline[:200]}] started {blamed}"

    def kill(self, pids: list[int]) -> None:
        """SIGKILL each survivor that is still the process listed (pidfds: never a reused pid)."""
        for pid in pids:
            with contextlib.suppress(OSError):
                fd = os.pidfd_open(pid)
                try:
                    if pid in self.survivors():
                        signal.pidfd_send_signal(fd, signal.SIGKILL)
                finally:
                    os.close(fd)


def _cgroup_members(cgroup: Path | None) -> list[int]:
    if cgroup is None:
        return []
    pids: list[int] = []
    for directory, _, _ in os.walk(cgroup):
        with contextlib.suppress(OSError, ValueError):
            pids += [int(p) for p in Path(directory, "cgroup.procs").read_text().split()]
    return pids
