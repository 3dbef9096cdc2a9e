"""Red team round 6: a planted sparse file filled the host through the quarantine.

A reverted file is moved into ``<session dir>/quarantine``; when the session directory is on
another file system than the workspace (``/dev/shm``, a tmpfs ``/tmp``, another disk), the move
is a copy. The copy had no bound: ``truncate -s 1G .bashrc`` (free in the workspace: a sparse
file) became a gigabyte of zeros in the session directory (on a tmpfs: the host's memory), copied
inside the check, which runs in the event loop that serves every session. A planted file larger
than the quarantine keeps is now removed, not copied, and the note says so.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.factory import create_backend
from shellrt.supervisor import CommandResult, Supervisor
from tests.conftest import require


@pytest.fixture
def shm_session() -> Iterator[Path]:
    """A session directory on /dev/shm (a tmpfs: another file system than pytest's /tmp)."""
    path = Path(tempfile.mkdtemp(prefix="shellrt-rt6-", dir="/dev/shm"))
    yield path / "session"
    shutil.rmtree(path, ignore_errors=True)


def test_a_huge_planted_file_is_not_copied_into_the_quarantine(tmp_path: Path, shm_session: Path) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = tmp_path / "ws"
    ws.mkdir()
    assert ws.stat().st_dev != shm_session.parent.stat().st_dev, "the test needs two file systems"

    async def main() -> CommandResult:
        backend = create_backend(BwrapConfig(), SandboxPolicy(workspace=ws))
        await backend.start()
        try:
            async with Supervisor(backend, session_dir=shm_session) as sup:
                return await sup.run("truncate -s 1G .bashrc", timeout_s=60)
        finally:
            await backend.close()

    result = anyio.run(main)
    assert result.exit_code == 0, result
    assert not (ws / ".bashrc").exists(), result.notes
    kept = sum(p.stat().st_size for p in (shm_session / "quarantine").rglob("*") if p.is_file())
    assert kept <= 64 << 20, (kept, result.notes)
    assert any("removed" in n for n in result.notes), result.notes
