"""Red team round 15, docker (bind mode): does anything of a command outlive its reported end?

See `tests._outlive15`. One container per module. FAIL, not skip, under CI=true.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from sandbox.docker import DockerBackend
from shellrt.supervisor import Supervisor
from tests._docker_support import config, policy, require_docker
from tests._outlive15 import planted_after_end, workspace

pytestmark = [pytest.mark.anyio, pytest.mark.docker]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def bound(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Path, Supervisor]]:
    require_docker()
    base = tmp_path_factory.mktemp("rt15outdocker")
    ws = base / "ws"
    ws.mkdir()
    workspace(ws)
    backend = DockerBackend(config(workspace_mode="bind"), policy(ws))
    async with backend, Supervisor(backend, session_dir=base / "session") as sup:
        yield ws, sup


async def test_a_detached_marker_scrubbed_leftover_does_not_plant_after_the_end(
    bound: tuple[Path, Supervisor],
) -> None:
    ws, sup = bound
    why = await planted_after_end(sup, ws)
    assert why is None, why
