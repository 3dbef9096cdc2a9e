"""The session's /dev of one bwrap per command as root (`sandbox._devtree`), and the holder's pruned mounts.

As root, per command, the holder's namespace holds one /dev made at session
start that every bwrap binds (instead of building its own with ``--dev``: six
binds, each a parse of the whole mount table), and the mounts below /dev and
/proc that every bwrap covers are taken off there (`sandbox._covered_mounts`).
What a command sees must still be a working, private /dev: the device nodes, a
pty instance that is not the host's, POSIX shared memory, and nothing a command
can leave there for the next one (FAILS, not skips, under CI=true).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox._covered_mounts import covered_mounts
from sandbox.bwrap import BwrapBackend
from shellrt.supervisor import Supervisor
from tests._bwrap_session import supervised
from tests.conftest import require

MOUNTINFO = "\n".join(
    [
        "46 45 254:0 / / rw,relatime - ext4 /dev/vda rw",
        "48 46 0:21 / /proc rw,relatime - proc proc rw",
        "49 48 0:40 / /proc/sys/fs/binfmt_misc rw,relatime - binfmt_misc binfmt_misc rw",
        "62 46 0:6 / /dev rw,relatime - devtmpfs devtmpfs rw",
        "63 62 0:23 / /dev/shm rw,relatime - tmpfs tmpfs rw",
        "64 63 0:27 / /dev/shm rw,relatime - tmpfs tmpfs rw",
        "65 62 0:24 / /dev/pts rw,relatime - devpts devpts rw",
        "66 62 0:50 / /dev/my\\040mq rw,relatime - mqueue mqueue rw",
        "67 62 0:51 / /dev/hugepages rw,relatime - hugetlbfs hugetlbfs rw",
        "68 46 0:22 / /sys rw,relatime - sysfs sysfs rw",
        "69 46 254:0 /x /devices rw,relatime - ext4 /dev/vda rw",
    ]
)


def test_covered_mounts_are_those_below_dev_and_proc_deepest_first() -> None:
    points = covered_mounts(MOUNTINFO, needed=[])
    assert sorted(points) == sorted(
        ["/proc/sys/fs/binfmt_misc", "/dev/shm", "/dev/shm", "/dev/pts", "/dev/my mq", "/dev/hugepages"]
    )
    assert points[0] == "/proc/sys/fs/binfmt_misc"  # deepest first: it comes off before what holds it


def test_covered_mounts_keep_what_a_needed_path_lies_on() -> None:
    points = covered_mounts(MOUNTINFO, needed=[Path("/dev/shm/ws"), Path("/dev/hugepages")])
    assert "/dev/shm" not in points and "/dev/hugepages" not in points
    assert "/dev/pts" in points


@pytest.fixture
async def per_command(tmp_path: Path) -> AsyncIterator[tuple[BwrapBackend, Supervisor]]:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    require(os.geteuid() == 0, "the session's /dev serves a root caller only (CI runs as root)")
    ws = tmp_path / "ws"
    ws.mkdir()
    backend = BwrapBackend(BwrapConfig(persistent=False), SandboxPolicy(workspace=ws))
    async with supervised(backend, tmp_path / "session") as sup:
        yield backend, sup


async def _run(sup: Supervisor, command: str) -> str:
    result = await sup.run(command, timeout_s=60)
    text = result.output_path.read_text() if result.output_path is not None else result.preview
    assert result.exit_code == 0, text
    return text


@pytest.mark.anyio
@pytest.mark.bwrap
async def test_the_session_dev_works_and_is_not_the_hosts(
    per_command: tuple[BwrapBackend, Supervisor],
) -> None:
    backend, sup = per_command
    assert backend._devtree is not None, "as root, per command, the session's /dev is made at start"
    out = await _run(
        sup,
        "echo x > /dev/null && echo NULL; head -c 8 /dev/urandom | wc -c; head -c 4 /dev/zero | wc -c; "
        "python3 -c 'import os; m, s = os.openpty(); print(\"PTY\", os.ttyname(s))'; "
        "python3 -c 'import multiprocessing as mp; mp.Lock(); print(\"SHM\")'; "
        "echo PTS $(stat -c %d /dev/pts)",
    )
    assert "NULL" in out and "\n8\n" in out and "\n4\n" in out, out
    assert "PTY /dev/pts/" in out and "SHM" in out, out
    inside = int(out.split("PTS", 1)[1].split()[0])
    assert inside != os.stat("/dev/pts").st_dev, "the commands' pty instance is the host's"


@pytest.mark.anyio
@pytest.mark.bwrap
async def test_a_command_leaves_nothing_in_dev_for_the_next(
    per_command: tuple[BwrapBackend, Supervisor],
) -> None:
    _, sup = per_command
    out = await _run(
        sup,
        "touch /dev/planted 2>/dev/null && echo PLANTED; ln -s /etc /dev/link 2>/dev/null && echo LINKED; "
        "echo secret > /dev/shm/note && echo SHM-WROTE; true",
    )
    assert "PLANTED" not in out and "LINKED" not in out and "SHM-WROTE" in out, out
    out = await _run(sup, "ls -A /dev/shm; ls /dev; true")
    assert "note" not in out and "planted" not in out, out


@pytest.mark.anyio
@pytest.mark.bwrap
async def test_the_holder_no_longer_holds_the_covered_mounts(
    per_command: tuple[BwrapBackend, Supervisor],
) -> None:
    backend, _ = per_command
    holder = backend._holder
    assert holder is not None and holder.host_pid is not None
    mountinfo = Path(f"/proc/{holder.host_pid}/mountinfo").read_text()
    assert covered_mounts(mountinfo, needed=[]) == [], "mounts below /dev and /proc are left in the holder"
    assert f" {backend._devtree} " in mountinfo


class _NoDevtree(BwrapBackend):
    """A session whose /dev cannot be made (its place is below a file)."""

    def _devtree_target(self) -> Path:
        return Path("/etc/hostname/dev")


@pytest.mark.anyio
@pytest.mark.bwrap
async def test_without_the_session_dev_each_bwrap_builds_its_own(tmp_path: Path) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    require(os.geteuid() == 0, "the session's /dev serves a root caller only (CI runs as root)")
    ws = tmp_path / "ws"
    ws.mkdir()
    backend = _NoDevtree(BwrapConfig(persistent=False), SandboxPolicy(workspace=ws))
    async with backend, Supervisor(backend, session_dir=tmp_path / "session") as sup:
        assert backend._devtree is None
        args = backend.bwrap_args(cwd=str(ws), state_dir=tmp_path, spawned=True)
        assert "--dev" in args and "--dev-bind" not in args
        out = await _run(sup, "echo x > /dev/null && echo NULL")
        assert "NULL" in out
