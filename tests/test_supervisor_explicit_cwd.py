"""An explicit cwd is judged against what the sandbox shows, read-denied masks and symlinks
included; the docker backend's per-call user reaches the command."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from sandbox import BwrapConfig, DockerConfig, SandboxConfig, SandboxPolicy
from sandbox.factory import create_backend
from shellrt.supervisor import Supervisor, WorkingDirectoryError
from tests.conftest import require

pytestmark = pytest.mark.anyio

CONFIGS: dict[str, SandboxConfig] = {
    "bwrap": BwrapConfig(),
    "docker": DockerConfig(image="shellrt-test-debian"),
}


@pytest.fixture(params=sorted(CONFIGS))
async def masked_sup(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Supervisor]:
    name = str(request.param)
    if name == "bwrap":
        require(shutil.which("bwrap") is not None, "bubblewrap is not installed")
    ws = tmp_path / "ws"
    (ws / "secret" / "inner").mkdir(parents=True)
    (ws / "open").mkdir()
    os.symlink(ws / "secret", ws / "to-secret")
    policy = SandboxPolicy(workspace=ws, read_denied=(ws / "secret",))
    async with (
        create_backend(CONFIGS[name], policy) as backend,
        Supervisor(backend, session_dir=tmp_path / "s") as sup,
    ):
        yield sup


async def test_read_denied_directories_are_not_a_cwd(masked_sup: Supervisor) -> None:
    assert (await masked_sup.run(["pwd"], timeout_s=30, cwd="open")).preview.endswith("/open\n")
    for where in ("secret", "secret/inner"):
        with pytest.raises(WorkingDirectoryError, match="hidden from commands"):
            await masked_sup.run(["pwd"], timeout_s=30, cwd=where)


async def test_a_symlink_into_a_read_denied_directory_is_not_a_cwd(masked_sup: Supervisor) -> None:
    with pytest.raises(WorkingDirectoryError, match="hidden from commands|cannot be used"):
        await masked_sup.run(["ls"], timeout_s=30, cwd="to-secret")


async def test_docker_runs_a_command_as_the_requested_user(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    policy = SandboxPolicy(workspace=ws)
    async with (
        create_backend(CONFIGS["docker"], policy) as backend,
        Supervisor(backend, session_dir=tmp_path / "s") as sup,
    ):
        as_root = await sup.run(["id", "-u"], timeout_s=30, user="0")
        plain = await sup.run(["id", "-u"], timeout_s=30)
    assert as_root.preview == "0\n" and plain.preview != "0\n"
