"""Red team round 26, docker: a NUL byte in a command's words was dropped, not refused.

The kernel's ``execve`` takes C strings: a NUL ends a word, so the local and bwrap backends refuse
such an argv or environment (``ValueError: embedded null byte``) and nothing runs. The docker
backend wrote the words into the request file the executor sources, and dash drops NUL bytes from
what it reads: ``sh -c 'echo safe<NUL>; touch /tmp/injected'`` ran as ``echo safe; touch ...``, a
different command than the one asked for (an API caller, a batch harness or an integration that
judged the text as bash would: a word cut at the NUL). Now the host refuses a NUL in any argv word,
environment name or value before anything reaches the container (`SandboxExecError`, nothing run).
FAIL, not skip, under CI=true.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from sandbox import ExecRequest
from sandbox.docker import DockerBackend
from sandbox.errors import SandboxExecError
from shellrt.supervisor import Supervisor
from tests._docker_support import run_sh, shared_backend

pytestmark = [pytest.mark.anyio, pytest.mark.docker]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def backend(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[DockerBackend]:
    async for b in shared_backend(tmp_path_factory, "rt26nul"):
        yield b


_REQUESTS = [
    (("sh", "-c", "echo safe\0; touch /tmp/injected"), {}),
    (("sh", "-c", 'touch "/tmp/$X"'), {"X": "inj\0ected"}),
    (("sh", "-c", "touch /tmp/injected"), {"X\0Y": "1"}),
    (("touch", "/tmp/inj\0ected"), {}),
]


@pytest.mark.parametrize("argv, env", _REQUESTS)
async def test_a_nul_in_the_words_is_refused_and_nothing_runs(
    backend: DockerBackend, argv: tuple[str, ...], env: dict[str, str]
) -> None:
    with anyio.fail_after(60):
        with pytest.raises(SandboxExecError, match="NUL"):
            await backend.exec(ExecRequest(argv=argv, cwd="/workspace", env={"PATH": "/usr/bin:/bin", **env}))
        assert await run_sh(backend, "ls /tmp") == (0, "")  # before: injected


async def test_through_the_supervisor(backend: DockerBackend, tmp_path: Path) -> None:
    sup = Supervisor(backend, session_dir=tmp_path / "session")
    try:
        with anyio.fail_after(60):
            with pytest.raises(SandboxExecError, match="NUL"):
                await sup.run("echo safe\0; touch /tmp/injected", timeout_s=30)
            assert await run_sh(backend, "ls /tmp") == (0, "")
    finally:
        await sup.close()
