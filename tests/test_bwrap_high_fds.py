"""An owner whose descriptors pass 1024 still runs per-command bwraps (CI found it, round 15).

Round 15 pinned per-command bwrap's init with a pidfd and checked it with ``select``, which raises
``ValueError`` for a descriptor above 1023: in a long-lived owner (a server, a test worker after
thousands of sessions) every per-command bwrap then ended with exit 1 and no output, and batch
tasks failed. The check uses ``poll`` now. Failed before: yes.
"""

from __future__ import annotations

import os
import resource
import shutil
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, ExecRequest, SandboxPolicy
from sandbox.factory import create_backend
from shellrt.supervisor import Supervisor
from tests.conftest import require


@pytest.fixture
def high_fds() -> Iterator[None]:
    """Descriptors 0-1099 taken, so every new one is numbered above 1024."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 4096 if hard == resource.RLIM_INFINITY else min(hard, 4096)
    require(wanted > 1200, f"RLIMIT_NOFILE's hard limit ({hard}) leaves no room above 1024")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, wanted), hard))
    held: list[int] = []
    try:
        fd = os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC)
        held.append(fd)
        while fd < 1100:
            fd = os.dup(held[0])
            held.append(fd)
        yield
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_per_command_bwrap_runs_with_descriptors_above_1024(high_fds: None, tmp_path: Path) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = tmp_path / "ws"
    ws.mkdir()

    async def main() -> tuple[int | None, int | None]:
        backend = create_backend(BwrapConfig(persistent=False), SandboxPolicy(workspace=ws))
        await backend.start()
        try:
            proc = await backend.exec(ExecRequest(argv=("true",), cwd=str(ws), env={"PATH": "/usr/bin:/bin"}))
            first = (await proc.wait()).exit_code
            async with Supervisor(backend, session_dir=tmp_path / "s") as sup:
                result = await sup.run("exit 3", timeout_s=60)
            return first, result.exit_code
        finally:
            await backend.close()

    assert anyio.run(main) == (0, 3)
