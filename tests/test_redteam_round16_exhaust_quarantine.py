"""Round 16, exhaustion: planted files' quarantine copies filled the session directory's disk.

When the workspace and the session directory are on different file systems (a repository on
its own disk, the state under the home), the protected-file guard copies each planted file into
the session's quarantine, up to 64 MiB a file -- but any number of files. A command's sparse
``truncate -s 3M .claude/hooks/hN.sh`` costs it nothing, each copy 3 MiB of real blocks: ten
of them took an 8 MiB session disk to its last byte (the host's home, by default), past every
output quota. A copy is now kept only while the disk keeps its reserve
(``SHELLRT_OUTPUT_RESERVE``); the planted file is removed either way, and the note says why.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from sandbox import SandboxPolicy
from sandbox.local import LocalBackend
from shellrt.supervisor import Supervisor
from tests._small_disk import mounted_tmpfs
from tests.conftest import require

_DISK = 8 << 20


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """An 8 MiB tmpfs mounted on a directory of ``tmp_path`` (unmounted after)."""
    with mounted_tmpfs(tmp_path, _DISK) as disk:
        yield disk


def test_quarantine_copies_leave_the_session_disks_reserve_free(small_disk: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    require(os.stat(ws).st_dev != os.stat(small_disk).st_dev, "the workspace must be on another file system")
    plant = "mkdir -p .claude/hooks && for i in $(seq 10); do truncate -s 3M .claude/hooks/h$i.sh; done"

    async def main() -> tuple[str, ...]:
        backend = LocalBackend(policy=SandboxPolicy(workspace=ws))
        await backend.start()
        try:
            async with Supervisor(backend, session_dir=small_disk / "s") as sup:
                await sup.run("true", timeout_s=30)
                return (await sup.run(plant, timeout_s=30)).notes  # type: ignore[attr-defined,no-any-return]
        finally:
            await backend.close()

    notes = anyio.run(main)
    st = os.statvfs(small_disk)
    free = st.f_bavail * st.f_frsize
    assert free >= (_DISK // 20) * 3 // 4, f"{free:,} bytes left free on the session's disk"
    hooks = ws / ".claude" / "hooks"
    assert not hooks.exists() or not list(hooks.iterdir()), "planted files stay removed"
    assert any("SHELLRT_OUTPUT_RESERVE" in n for n in notes), notes
