"""Red team, round 47 (sandbox7): a command opened a host-wide /proc file for writing.

Every writable entry of a command's /proc is its own process's (``/proc/self/*``, its children's)
but one: ``/proc/pressure/{cpu,io,memory}`` are the kernel's pressure stall files for the whole
host (cgroup v1 here: the system group), mode 0666. A write there makes a pressure trigger
(``some 500000 2000000``: since Linux 6.5 an unprivileged one, any 2 s multiple as window), which
the host's PSI aggregation then checks every 2 s for as long as the command holds the descriptor:
work and wake-ups in the host's kernel, outside the command's cgroup, that no build needs. Now
every command's /proc shows ``pressure`` read-only (a session's init, as ``sys``; one bwrap per
command with ``--ro-bind``): reading the averages is unchanged, a trigger fails with EROFS.

The probe is the class, not the example: it tries to open for writing every regular file of
/proc outside the per-process directories and every one of /sys; none may open.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._bwrap_session import probe_lines, require_bwrap

pytestmark = pytest.mark.bwrap

_PROBE = r"""
import os, stat
opened, tried = [], 0
def scan(top, depth):
    global tried
    for root, dirs, files in os.walk(top):
        parts = root.split("/")
        if top == "/proc" and len(parts) > 2 and (parts[2].isdigit() or parts[2] in ("self", "thread-self")):
            dirs[:] = []
            continue
        if root.count("/") - top.count("/") >= depth:
            dirs[:] = []
        for name in files:
            path = os.path.join(root, name)
            try:
                if not stat.S_ISREG(os.lstat(path).st_mode):
                    continue
                tried += 1
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
                opened.append(path)
            except OSError:
                pass
scan("/proc", 3)
scan("/sys", 6)
print("TRIED", tried)
print("OPENED", ",".join(opened) or "none")
try:
    fd = os.open("/proc/pressure/cpu", os.O_RDWR)
    os.write(fd, b"some 500000 2000000\0")
    print("TRIGGER made")
except OSError as exc:
    print("TRIGGER", exc.errno)
print("READ", "ok" if os.path.exists("/proc/pressure/cpu") and open("/proc/pressure/cpu").read().startswith("some") else "no")
"""


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_no_host_wide_proc_or_sys_file_opens_for_writing(tmp_path: Path, persistent: bool) -> None:
    """Failed before (root and uid 65534, session and per command, 4 of 4: ``OPENED
    /proc/pressure/io,/proc/pressure/cpu,/proc/pressure/memory`` and ``TRIGGER made``)."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    said, out = probe_lines(ws, tmp_path / "s", _PROBE, persistent=persistent)
    assert int(said.get("TRIED", "0")) > 100, out  # the scan saw /proc and /sys
    assert said.get("OPENED") == "none", out
    assert said.get("TRIGGER") not in (None, "made"), out
    if Path("/proc/pressure/cpu").exists():
        assert said.get("READ") == "ok", out  # the averages stay readable
