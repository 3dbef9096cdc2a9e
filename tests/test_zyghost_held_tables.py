"""Issue 22 item 3, round 56 (zyghost): other namespaces' socket tables read through held descriptors.

`sandbox._netns_sockets.namespace_lines` runs before every bwrap session command. It opened each
other namespace's ``/proc/<pid>/net/unix`` afresh every time; it now keeps the descriptor (the open
file holds its namespace) and reads it again from offset 0 while the process it was opened through
is there. These pin what must not change with that: a socket bound after the first read is seen by
the next check, a gone process's namespace is not read on (its descriptor is closed), and the
descriptors kept are bounded.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox import _netns_sockets
from tests.conftest import require

#: Waits for a line, binds the socket named by argv[1] and says so; exits at the next line.
_BINDER = r"""
import socket, sys
print("ready", flush=True)
sys.stdin.readline()
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen()
print("bound", flush=True)
sys.stdin.readline()
"""


def _unshare_ok() -> bool:
    return subprocess.run(["unshare", "-Urn", "true"], check=False).returncode == 0


@pytest.fixture
def quiet_scan(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A scan of its own, no full pass meanwhile (it would look everything up anyway)."""
    require(_unshare_ok(), "needs unshare -Urn")
    require(_netns_sockets._last_pid.read() is not None, "needs ns_last_pid")
    monkeypatch.setattr(_netns_sockets, "_FULL_EVERY_S", 3600.0)
    monkeypatch.setattr(_netns_sockets, "_HANDED_MAX", 1 << 15)  # other tests' processes meanwhile
    monkeypatch.setattr(_netns_sockets, "_scan", _netns_sockets._Scan())
    held = _netns_sockets._HeldTables()
    monkeypatch.setattr(_netns_sockets, "_held", held)
    yield
    held.keep_only(set())


def _binder(path: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        ["unshare", "-Urn", sys.executable, "-c", _BINDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    return proc


def _opens_of_tables(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    real = os.open

    def counting(path: str, flags: int, *args: int) -> int:
        if path.endswith("/net/unix"):
            seen.append(path)
        return real(path, flags, *args)

    monkeypatch.setattr(_netns_sockets.os, "open", counting)
    return seen


def test_a_known_namespace_is_read_again_without_opening_its_table(
    tmp_path: Path, quiet_scan: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second check reads the namespace through the kept descriptor (no open), and still sees a
    socket bound there after the first."""
    path = tmp_path / "late.sock"
    proc = _binder(path)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        _netns_sockets._scan.full_at = -float("inf")
        _netns_sockets.namespace_lines()  # a full pass: opens every namespace's table once
        inos = {os.stat(f"/proc/{proc.pid}/net/unix").st_ino}
        assert inos <= _netns_sockets._held.fds.keys()
        opened = _opens_of_tables(monkeypatch)
        proc.stdin.write("bind\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "bound"
        ours, theirs = _netns_sockets.namespace_lines()
        assert str(path).encode() in ours + theirs, "a socket bound since the last check was missed"
        assert not [p for p in opened if p == f"/proc/{proc.pid}/net/unix"], "its table was opened again"
    finally:
        proc.kill()
        proc.wait()


def test_a_gone_process_namespace_is_not_read_on(tmp_path: Path, quiet_scan: None) -> None:
    """Its process gone (reaped), the descriptor is closed at the next check: the namespace is not
    listed on, and its number can go to another namespace again (as before: round 39)."""
    proc = _binder(tmp_path / "s.sock")
    ino = os.stat(f"/proc/{proc.pid}/net/unix").st_ino
    _netns_sockets._scan.full_at = -float("inf")
    _netns_sockets.namespace_lines()
    assert ino in _netns_sockets._held.fds
    fd = _netns_sockets._held.fds[ino][0]
    target = os.readlink(f"/proc/self/fd/{fd}")
    proc.kill()
    proc.wait()
    _netns_sockets.namespace_lines()
    assert ino not in _netns_sockets._held.fds
    assert ino not in _netns_sockets._scan.namespaces, "a gone process's namespace was read on"
    try:
        still = os.readlink(f"/proc/self/fd/{fd}") == target
    except OSError:
        still = False
    assert not still or fd in {held for held, _pid in _netns_sockets._held.fds.values()}, "its descriptor was kept"


def test_the_descriptors_kept_are_bounded(tmp_path: Path, quiet_scan: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past `_HELD_MAX` namespaces the rest are opened each time, as before, and still read."""
    monkeypatch.setattr(_netns_sockets, "_HELD_MAX", 1)
    first, second = tmp_path / "a.sock", tmp_path / "b.sock"
    procs = [_binder(first), _binder(second)]
    try:
        for proc in procs:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write("bind\n")
            proc.stdin.flush()
            assert proc.stdout.readline().strip() == "bound"
        _netns_sockets._scan.full_at = -float("inf")
        for _ in range(3):
            ours, theirs = _netns_sockets.namespace_lines()
            assert str(first).encode() in ours + theirs and str(second).encode() in ours + theirs
            assert len(_netns_sockets._held.fds) <= 1
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def test_a_held_namespaces_process_that_moves_is_seen_within_the_full_interval(tmp_path: Path) -> None:
    """The process a table is held through enters another namespace in place and binds there: the
    held descriptor still shows the old namespace, and the new one is found by the next full pass,
    at most `_FULL_EVERY_S` later -- the bound every process seen before already had (before this
    round a held table's process was caught one check sooner, by its fresh open)."""
    require(_unshare_ok(), "needs unshare -Urn")
    path = tmp_path / "moved.sock"
    script = (
        "import ctypes,socket,sys\n"
        "print('up', flush=True); sys.stdin.readline()\n"
        "assert ctypes.CDLL(None, use_errno=True).unshare(0x40000000) == 0\n"
        f"s=socket.socket(socket.AF_UNIX); s.bind({str(path)!r}); s.listen()\n"
        "print('bound', flush=True); sys.stdin.readline()\n"
    )
    proc = subprocess.Popen(
        ["unshare", "-Urn", sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdin is not None
        assert proc.stdout.readline().strip() == "up"
        before = os.stat(f"/proc/{proc.pid}/net/unix").st_ino
        _netns_sockets.namespace_lines()
        _netns_sockets.namespace_lines()  # its namespace known and (room allowing) held
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "bound"
        assert os.stat(f"/proc/{proc.pid}/net/unix").st_ino != before
        deadline = time.monotonic() + _netns_sockets._FULL_EVERY_S + 1.0
        while str(path).encode() not in _netns_sockets.other_namespace_lines():
            assert time.monotonic() < deadline, "the moved process's new namespace was never found"
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.wait()
