"""Red team, round 26, bwrap: one bwrap per command's /dev/shm had no inode cap (root caller).

bubblewrap's ``--tmpfs`` takes a size but no ``nr_inodes``: each command's fresh /dev/shm held
the kernel default (~3 M inodes, ~3 GB of kernel memory while it ran). A root caller's commands
now each get a fresh directory of the backend's capped tmpfs (`sandbox._shmpool`: 16,384 inodes,
as a session zygote's /dev/shm), bound at /dev/shm and removed when the command's namespace is
gone (its end, a timeout's kill), the tmpfs unmounted at close (or by the next start's sweep, its owner killed). A non-root caller's stays
uncapped (no mount of its own outside the sandbox). FAILS, not skips, under CI=true.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox._shmpool import ShmPool
from sandbox._tmpcap import _MOUNTED, SHM_POOL_NAME, inode_cap, sweep_tmp_caps
from sandbox.bwrap import SHM_BYTES, BwrapBackend
from shellrt.supervisor import Supervisor
from tests._bwrap_session import supervised
from tests.conftest import require

pytestmark = [pytest.mark.anyio, pytest.mark.bwrap]

CAP = inode_cap(SHM_BYTES)
#: Makes files in /dev/shm until ENOSPC or CAP+100; prints how many and the inode count.
FILL = (
    "python3 -c 'import os\n"
    "n = 0\n"
    f"while n < {CAP + 100}:\n"
    '    try: os.close(os.open(f"/dev/shm/f{n}", os.O_CREAT | os.O_WRONLY, 0o600))\n'
    "    except OSError: break\n"
    "    n += 1\n"
    'print("MADE", n, "FILES", os.statvfs("/dev/shm").f_files)\''
)


@pytest.fixture
async def per_command(tmp_path: Path) -> AsyncIterator[tuple[BwrapBackend, Supervisor]]:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    require(
        os.geteuid() == 0,
        "the capped /dev/shm of one bwrap per command serves a root caller (CI runs as root)",
    )
    ws = tmp_path / "ws"
    ws.mkdir()
    backend = BwrapBackend(BwrapConfig(persistent=False), SandboxPolicy(workspace=ws))
    async with supervised(backend, tmp_path / "session") as sup:
        yield backend, sup


def _entries(pool: Path) -> list[str]:
    return sorted(os.listdir(pool))


async def test_a_command_cannot_fill_dev_shm_past_the_cap(
    per_command: tuple[BwrapBackend, Supervisor],
) -> None:
    backend, sup = per_command
    result = await sup.run(FILL, timeout_s=120)
    out = result.preview
    assert "MADE" in out, out
    made, files = int(out.split("MADE", 1)[1].split()[0]), int(out.split("FILES", 1)[1].split()[0])
    assert made <= CAP and files <= CAP, f"/dev/shm took {made} files, has {files} inodes (cap {CAP})"
    pool = backend._shm_pool
    assert pool is not None and _entries(pool.path) == [], "the command's /dev/shm was left in the pool"


async def test_each_command_has_its_own_and_a_killed_ones_is_removed(
    per_command: tuple[BwrapBackend, Supervisor], tmp_path: Path
) -> None:
    backend, sup = per_command
    pool = backend._shm_pool
    assert pool is not None
    ws = tmp_path / "ws"
    # A holds a note in its /dev/shm while B looks for it: B's /dev/shm is empty and the pool
    # (the other commands' directories) is not reachable from inside.
    slow = sup.run(
        f"echo secret > /dev/shm/note; touch {ws}/a-ready; "
        f"for i in $(seq 300); do [ -e {ws}/b-done ] && break; sleep 0.1; done; cat /dev/shm/note",
        timeout_s=60,
    )
    async with anyio.create_task_group() as tg:
        results: list[str] = []

        async def run_a() -> None:
            results.append((await slow).preview)

        tg.start_soon(run_a)
        with anyio.fail_after(60):
            while not (ws / "a-ready").exists():
                await anyio.sleep(0.05)
        a_dir = _entries(pool.path)
        assert len(a_dir) == 1, a_dir
        b = await sup.run(
            f"ls -A /dev/shm; ls {pool.path / a_dir[0]} 2>&1; ls {pool.path} 2>&1; touch {ws}/b-done",
            timeout_s=60,
        )
    assert "note" not in b.preview and "secret" not in b.preview, b.preview
    assert b.preview.count("No such file or directory") == 2, b.preview  # the pool is not in sight
    assert "secret" in results[0], results[0]
    assert _entries(pool.path) == [], "an ended command's /dev/shm is left in the pool"
    # A command killed by its timeout, with files and a link in its /dev/shm: removed too.
    killed = await sup.run(
        "mkdir -p /dev/shm/d/e && ln -s /etc /dev/shm/d/link && touch /dev/shm/d/e/f && sleep 60", timeout_s=2
    )
    assert killed.timed_out, killed.preview
    assert _entries(pool.path) == [], "a killed command's /dev/shm is left in the pool"
    assert os.path.exists("/etc/hostname"), "removal followed the command's link"


async def test_close_unmounts_the_pool(tmp_path: Path) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    require(
        os.geteuid() == 0,
        "the capped /dev/shm of one bwrap per command serves a root caller (CI runs as root)",
    )
    ws = tmp_path / "ws"
    ws.mkdir()
    backend = BwrapBackend(BwrapConfig(persistent=False), SandboxPolicy(workspace=ws))
    async with supervised(backend, tmp_path / "session") as sup:
        result = await sup.run("echo x > /dev/shm/x && echo WROTE", timeout_s=60)
        assert "WROTE" in result.preview
        pool = backend._shm_pool
        assert pool is not None and os.path.ismount(pool.path)
        path = pool.path
    assert not os.path.exists(path), f"{path} is left after close"
    assert f" {path} " not in Path("/proc/self/mountinfo").read_text(), "the pool is still mounted"


def test_a_killed_owners_pool_is_swept() -> None:
    """An owner SIGKILLed before `close` leaves its pool mounted: the next start's sweep takes it off."""
    require(
        os.geteuid() == 0,
        "the capped /dev/shm of one bwrap per command serves a root caller (CI runs as root)",
    )
    owner = Path(tempfile.mkdtemp(prefix="shellrt-bwrap-tmp-"))  # no .owner.lock: its owner is gone
    pool = ShmPool(owner / SHM_POOL_NAME, SHM_BYTES, CAP)
    (pool.make() / "left").write_text("x")
    _MOUNTED.discard(str(pool.path))  # as another process's mount
    try:
        assert pool.path in sweep_tmp_caps()
        assert not owner.exists() and f" {pool.path} " not in Path("/proc/self/mountinfo").read_text()
    finally:
        pool.close()
