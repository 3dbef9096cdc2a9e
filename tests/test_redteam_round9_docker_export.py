"""Red team round 9, docker: ``--export`` paid on the host for bytes the command never wrote.

``truncate -s 10G big`` costs a command nothing (a sparse file in its workspace), but the copy
mode export (``shellrt run --export DIR``) streamed it from the daemon and wrote every zero into
the operator's directory: up to the export's 16 GiB bound of real disk per export, for free.
Runs of zeros are now left as holes, so the exported file takes on disk what the command's own
file took, and reads the same.

Real containers (FAIL, not skip, under CI=true).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import anyio
import pytest

from sandbox import ExecRequest
from sandbox.docker import DockerBackend
from tests._docker_support import config, policy, require_docker

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_SIZE = 256 * 1024 * 1024


async def test_a_sparse_file_stays_sparse_on_export(tmp_path: Path) -> None:
    require_docker()
    ws = tmp_path / "ws"
    ws.mkdir()
    async with DockerBackend(config(), policy(ws)) as backend:
        proc = await backend.exec(
            ExecRequest(
                argv=("sh", "-c", f"printf head > big && truncate -s {_SIZE} big && printf tail >> big"),
                cwd="/workspace",
                env={"PATH": "/usr/bin:/bin"},
            )
        )
        assert (await proc.wait()).exit_code == 0
        with anyio.fail_after(120):
            await backend.export_workspace(tmp_path / "out")
    big = tmp_path / "out" / "big"
    st = os.stat(big)
    assert st.st_size == _SIZE + 4
    assert st.st_blocks * 512 < 16 * 1024 * 1024, f"a sparse file took {st.st_blocks * 512} bytes on the host"
    with open(big, "rb") as fh:
        assert fh.read(4) == b"head"
        fh.seek(_SIZE)
        assert fh.read() == b"tail"
        fh.seek(0)
        digest = hashlib.sha256()
        while chunk := fh.read(1 << 22):
            digest.update(chunk)
    expected = hashlib.sha256(b"head" + bytes(_SIZE - 4) + b"tail").hexdigest()
    assert digest.hexdigest() == expected
