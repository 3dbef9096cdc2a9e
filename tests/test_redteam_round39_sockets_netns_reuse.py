"""Red team, round 39 (sockets): a foreign namespace that took a gone sandbox's number was "ours".

`sandbox._netns_sockets.namespace_lines` tells namespaces apart by the inode of their
``/proc/<pid>/net/unix`` and leaves the sockets of the namespaces its own sandboxes are in (a
descendant's) out by path: in the workspace they are the session's own. Which namespaces were its
own was worked out again only on a full pass (every 0.5 s) or when the *set* of inodes changed.
The kernel hands a freed namespace's number to the next namespace made (the lowest free one: a
one bwrap per command sandbox's namespace is gone ~0.1-0.3 s after its command ends), so a process
that is not this one's (a container's, any uid's ``unshare -Urn``) could get it; the set looked
unchanged, and until the next full pass the socket it bound in the workspace was left unmasked as
the sandbox's own. Now which namespaces are its own is looked up again whenever a process not seen
before is in one of them (a sandbox's new command, or another's process that took the number), and
its descendants' namespaces are read afresh, not from the per-process cache (a pid of the host's
32,768 reused by a descendant). Root and uid 65534.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sandbox import _netns_sockets
from tests import _nonroot
from tests.conftest import require

#: Another program's server: a socket listening in a user and network namespace of its own.
_SERVER = r"""
import os, socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen()
print("bound", os.getpid(), flush=True)
time.sleep(120)
"""


class _Kernel:
    """This module's ``os`` as the kernel shows it, but that (1) ``/proc`` lists this process and
    those naming ``marker`` only (other tests' namespaces, made and gone meanwhile on a busy host,
    change the set of namespaces and hide the reuse), and (2) the namespace of ``pid`` has the
    number ``number``: what the kernel does with the lowest free number, here 10 of 10 tries of
    ``unshare -Urn`` 0.2 s after another's last process exited, on a quiet host (on a busy one
    others' namespaces take it first; told by hand, not raced here)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker.encode()
        self.pid = ""
        self.number = 0
        self._fds: set[int] = set()

    def __getattr__(self, name: str) -> object:
        return getattr(os, name)

    def listdir(self, path: str) -> list[str]:
        names = os.listdir(path)
        if path != "/proc":
            return names
        mine = str(os.getpid())
        return [n for n in names if n == mine or (n.isdigit() and self.marker in _cmdline(n))]

    def _renumbered(self, st: os.stat_result) -> os.stat_result:
        fields = list(st)
        fields[stat.ST_INO] = self.number
        return os.stat_result(fields)

    def stat(self, path: str) -> os.stat_result:
        st = os.stat(path)
        return self._renumbered(st) if path == f"/proc/{self.pid}/net/unix" else st

    def open(self, path: str, flags: int) -> int:
        fd = os.open(path, flags)
        if path == f"/proc/{self.pid}/net/unix":
            self._fds.add(fd)
        return fd

    def fstat(self, fd: int) -> os.stat_result:
        return self._renumbered(os.fstat(fd)) if fd in self._fds else os.fstat(fd)

    def close(self, fd: int) -> None:
        self._fds.discard(fd)
        os.close(fd)


def _cmdline(pid: str) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read()
    except OSError:
        return b""


def test_a_foreign_namespace_with_a_gone_sandboxs_number_is_not_ours(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before: the foreign socket in the workspace was listed with the sandbox's own
    (root 1 of 1, uid 65534 1 of 1; the full pass held off to show it without a race)."""
    require(subprocess.run(["unshare", "-Urn", "true"], check=False).returncode == 0, "needs unshare -Urn")
    monkeypatch.setattr(_netns_sockets, "_FULL_EVERY_S", 3600.0)
    monkeypatch.setattr(_netns_sockets, "_scan", _netns_sockets._Scan())
    ws = tmp_path / "ws"
    ws.mkdir()
    path = ws / "app.sock"
    kernel = _Kernel(str(path))
    monkeypatch.setattr(_netns_sockets, "os", kernel)  # this module's os only
    own = os.stat("/proc/self/net/unix").st_ino
    # a sandbox this process started: its namespace is its own
    sandbox = subprocess.Popen(["unshare", "-Urn", "sh", "-c", f"sleep 60; : {path}"], start_new_session=True)
    deadline = time.monotonic() + 10
    while (number := os.stat(f"/proc/{sandbox.pid}/net/unix").st_ino) == own:
        assert time.monotonic() < deadline, "unshare -Urn never entered its namespace"
        time.sleep(0.01)
    _netns_sockets.namespace_lines()
    assert number in _netns_sockets._scan.ours
    os.killpg(sandbox.pid, signal.SIGKILL)
    sandbox.wait()
    log = tmp_path / "server.log"
    with open(log, "w") as out:  # setsid -f: no descendant of this process
        subprocess.run(
            ["setsid", "-f", "unshare", "-Urn", sys.executable, "-c", _SERVER, str(path)], stdout=out, check=True
        )
    deadline = time.monotonic() + 30
    while not log.read_text().strip():
        assert time.monotonic() < deadline, "the server never answered"
        time.sleep(0.05)
    kernel.pid, kernel.number = log.read_text().split()[1], number  # it took the gone one's number
    try:
        ours, theirs = _netns_sockets.namespace_lines()
        assert str(path).encode() in theirs, "another program's socket taken as the sandbox's own"
        assert str(path).encode() not in ours
    finally:
        os.kill(int(kernel.pid), signal.SIGKILL)


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(__file__, "test_a_foreign_namespace_with_a_gone_sandboxs_number_is_not_ours")
