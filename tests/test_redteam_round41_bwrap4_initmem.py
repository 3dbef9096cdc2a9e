"""Red team, round 41 (bwrap4): one bwrap per command let its command write its sandbox's init.

bwrap's pid 1 in a per-command sandbox (the init whose death ends the pid namespace) runs as the
command's uid, stays dumpable and sits in no Landlock domain: the command opened ``/proc/1/mem``
for writing and read ``/proc/1/environ``, ``maps`` and ``syscall``. With that it rewrote the
init's memory: here the run marker in its environment, by which the host's kill sweep
(`sandbox._proctree.kill_marked`) finds what a run left behind; the same write clears its
parent-death signal or replaces its code. A session's per-command init was not reachable (not
dumpable). Now ``zinit enter`` puts the command in a Landlock domain of its own (Landlock denies
ptrace-mode access to a process outside the tracer's domain): EACCES/EPERM, as in a session.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import _nonroot
from tests._bwrap_session import probe_lines, require_bwrap

pytestmark = pytest.mark.bwrap

_PROBE = r"""
import errno, os
def tried(what, fn):
    try:
        print(what, fn())
    except OSError as exc:
        print(what, errno.errorcode[exc.errno])
def erase():
    env = open("/proc/1/environ", "rb").read()
    at = env.find(b"SHELLRT_RUN_ID=")
    if at < 0:
        return "nomarker"
    start = int(open("/proc/1/stat").read().rsplit(")", 1)[1].split()[47])  # env_start (field 50)
    fd = os.open("/proc/1/mem", os.O_RDWR)
    try:
        os.pwrite(fd, b"X", start + at)
    finally:
        os.close(fd)
    return "erased" if b"SHELLRT_RUN_ID=" not in open("/proc/1/environ", "rb").read() else "kept"
tried("MEMW", lambda: (os.close(os.open("/proc/1/mem", os.O_RDWR)), "open")[1])
tried("ENV", lambda: len(open("/proc/1/environ", "rb").read()) and "read")
tried("MAPS", lambda: len(open("/proc/1/maps").read()) and "read")
tried("ERASE", erase)
print("DONE yes")
"""


def _check(tmp_path: Path) -> None:
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    said, out = probe_lines(ws, tmp_path / "s", _PROBE, persistent=False)
    assert said.get("DONE") == "yes", out
    assert said.get("MEMW") in ("EACCES", "EPERM"), out
    assert said.get("ENV") in ("EACCES", "EPERM"), out
    assert said.get("MAPS") in ("EACCES", "EPERM"), out
    assert said.get("ERASE") in ("EACCES", "EPERM"), out


def test_a_per_command_sandbox_cannot_write_its_init(tmp_path: Path) -> None:
    """Failed before as root (``MEMW open``, ``ERASE erased``; 1 of 1)."""
    _check(tmp_path)


def test_a_session_command_cannot_write_its_init(tmp_path: Path) -> None:
    """The session's per-command init (not dumpable): held before, kept so."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    said, out = probe_lines(ws, tmp_path / "s", _PROBE, persistent=True)
    assert said.get("DONE") == "yes", out
    assert said.get("MEMW") in ("EACCES", "EPERM"), out
    assert said.get("ERASE") in ("EACCES", "EPERM"), out


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(
        __file__,
        "test_a_per_command_sandbox_cannot_write_its_init",
        "test_a_session_command_cannot_write_its_init",
    )
