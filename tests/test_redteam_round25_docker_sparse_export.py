"""Red team round 25, docker: a huge sparse file made the copy-back stream zeros for minutes.

``truncate -s 100G big`` in a copy-mode workspace is free on disk; dockerd's archive (Go's
``archive/tar``: no sparse members) carries it as 100 GB of zeros, which the export read up to its
16 GiB bound before refusing: more than 150 s of the host's CPU here (stopped by hand), for an
archive that could never fit. Now a member whose header declares more than the bound leaves is
refused at its header (`sandbox.docker._untar.extract`), with the name. FAIL, not skip, under CI=true.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from sandbox.docker import DockerBackend
from sandbox.docker._untar import WorkspaceExportError
from tests._docker_support import DEBIAN, config, policy, require_docker, run_sh

pytestmark = [pytest.mark.anyio, pytest.mark.docker]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_huge_sparse_file_is_refused_at_its_header(tmp_path: Path) -> None:
    require_docker()
    ws, dest = tmp_path / "ws", tmp_path / "dest"
    ws.mkdir()
    async with DockerBackend(config(DEBIAN, workspace_mode="copy"), policy(ws)) as b:
        with anyio.fail_after(60):
            assert await run_sh(b, "echo kept > small && truncate -s 100G big") == (0, "")
        with pytest.raises(
            WorkspaceExportError, match=r"larger than its bound: \S*big alone is 107374182400 bytes"
        ):
            with anyio.fail_after(30):  # before: minutes of zeros until the 16 GiB bound
                await b.export_workspace(dest)
    assert not (dest / "big").exists() or (dest / "big").stat().st_blocks == 0
