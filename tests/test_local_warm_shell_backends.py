"""No pre-spawned shell for bwrap or docker (`sandbox._warm` is the local backend's only).

Root only in CI (docker's socket); the local tests are in `tests/test_local_warm_shell.py`.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.factory import create_backend
from shellrt.supervisor import Supervisor
from tests._docker_support import config as docker_config
from tests._docker_support import require_docker
from tests.conftest import require


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["bwrap", "docker"])
async def test_no_warm_shell_for_bwrap_or_docker(tmp_path: Path, kind: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    policy = SandboxPolicy(workspace=ws)
    if kind == "docker":
        require_docker()
        from sandbox.docker import DockerBackend

        backend: Any = DockerBackend(docker_config(), policy)
    else:
        require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
        backend = create_backend(BwrapConfig(), policy)
    async with backend, Supervisor(backend, session_dir=tmp_path / "s") as sup:
        await sup.run("true", timeout_s=60)
        # Its own pid namespace: a waiting warm shell would be listed here (the pattern does not match grep).
        result = await sup.run(
            "grep -l '__shellrt_[n]' /proc/[0-9]*/cmdline 2>/dev/null | wc -l", timeout_s=60
        )
        assert result.preview.strip() == "0", result.preview
    assert getattr(getattr(backend, "_runner", None), "warm", None) is None
