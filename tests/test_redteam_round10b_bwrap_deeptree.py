"""Red team, round 10 (part 2): a directory tree deeper than Python's recursion limit.

A command made a chain of 3000 directories in its session ``/tmp`` (and in the state
dir it writes its cwd report to; as root that is a tmpfs of 256 files since round 25). Removing them at ``close()`` used ``shutil.rmtree``,
which recurses once per level on Python 3.11: ``RecursionError`` (not an ``OSError``, so
``ignore_errors`` did not catch it) came out of ``backend.close()``, the directories
stayed on the host, and once their owner was gone every later start of any bwrap or
local backend in the host's temp dir raised it again from the orphan sweep.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from sandbox import BackendUnavailableError, BwrapConfig, SandboxPolicy
from sandbox._scratch import OwnedDir, sweep_orphans
from sandbox.bwrap import BwrapBackend
from shellrt.supervisor import Supervisor
from tests._bwrap_session import require_bwrap
from tests.conftest import require

pytestmark = [pytest.mark.anyio, pytest.mark.bwrap]

DEPTH = 3000
#: Makes a DEPTH-deep chain of directories under "$D", through directory fds (no long paths).
CHAIN = (
    "python3 -c 'import os, sys\n"
    "fd = os.open(sys.argv[1], os.O_PATH)\n"
    f"for _ in range({DEPTH}):\n"
    ' os.mkdir("d", dir_fd=fd); n = os.open("d", os.O_PATH, dir_fd=fd); os.close(fd); fd = n\n'
    '\' "$D"'
)


def _rm(*paths: Path) -> None:
    """Whatever a failing run left (deep trees in the host's temp dir would trip every later sweep)."""
    subprocess.run(["rm", "-rf", "--", *map(str, paths)], check=False)


def _chain(top: Path) -> None:
    """The same chain, made here."""
    fd = os.open(top, os.O_RDONLY)
    for _ in range(DEPTH):
        os.mkdir("d", dir_fd=fd)
        child = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = child
    os.close(fd)


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
async def test_a_deep_tree_in_the_session_tmp_neither_breaks_close_nor_stays(
    tmp_path: Path, persistent: bool
) -> None:
    """Failed before: ``backend.close()`` raised RecursionError and both directories stayed."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    backend = BwrapBackend(BwrapConfig(persistent=persistent), SandboxPolicy(workspace=ws))
    try:
        await backend.start()
    except BackendUnavailableError as exc:
        require(False, f"bwrap unusable here: {exc}")
    assert backend._tmp_owner is not None and backend._runner.state_dir is not None
    left = [backend._tmp_owner.path, backend._runner.state_dir]
    sup = Supervisor(backend, session_dir=tmp_path / "session")
    try:
        try:
            # As root the reports sit on a tmpfs of 256 files since round 25: the chain there stops
            # early (ENOSPC), and what it made must still be gone after the close.
            result = await sup.run(
                f'D=/tmp; {CHAIN} && echo made; D=$(dirname "$SHELLRT_CWD_FILE") && {CHAIN} 2>/dev/null; true',
                timeout_s=60,
            )
        finally:
            try:
                await sup.close()
            finally:
                await backend.close()
        assert result.exit_code == 0 and "made" in result.preview, result.preview
        assert [path for path in left if os.path.lexists(path)] == []
    finally:
        _rm(*left)


def test_the_orphan_sweep_removes_a_deep_tree_and_follows_no_link(tmp_path: Path) -> None:
    """Failed before: sweep_orphans raised RecursionError (every later start with it)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("not the sweep's")
    owned = OwnedDir("shellrt-rt10b-sweep-", directory=tmp_path)
    try:
        _swept(owned, outside)
    finally:
        _rm(owned.path)


def _swept(owned: OwnedDir, outside: Path) -> None:
    _chain(owned.path)
    (owned.path / "d" / "link").symlink_to(outside)
    os.close(owned._lock_fd or -1)
    owned._lock_fd = None  # its owner is gone
    old = time.time() - 3600
    os.utime(owned.path, (old, old))
    assert sweep_orphans("shellrt-rt10b-sweep-", owned.path.parent) == [owned.path]
    assert not owned.path.exists()
    assert (outside / "keep").read_text() == "not the sweep's"


def test_a_deep_planted_directory_leaves_for_another_file_system(tmp_path: Path) -> None:
    """The protected-files sweep removes a planted directory that cannot be renamed into the
    quarantine (another file system): the same recursion raised there before."""
    shm = Path("/dev/shm")
    require(
        shm.is_dir() and os.stat(shm).st_dev != os.stat(tmp_path).st_dev, "/dev/shm on its own file system"
    )
    from shellrt.supervisor._anchored import move_out

    parent = Path(tempfile.mkdtemp(prefix="shellrt-rt10b-", dir=shm))
    try:
        (parent / "planted").mkdir()
        _chain(parent / "planted")
        fd = os.open(parent, os.O_PATH | os.O_DIRECTORY)
        try:
            how = move_out(fd, "planted", tmp_path / "quarantine" / "planted")
        finally:
            os.close(fd)
        assert how.startswith("removed"), how
        assert not (parent / "planted").exists()
    finally:
        _rm(parent)
