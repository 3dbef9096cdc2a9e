"""Red team round 15, the bwrap session sandbox (zygote): does anything of a command outlive its
reported end? The init "kills and reaps everything before reporting" (`sandbox/zinit.c`).

See `tests._outlive15`. One session per module; this file belongs in the non-root selection.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from shellrt.supervisor import Supervisor
from tests._bwrap_session import zygote_session
from tests._outlive15 import planted_after_end, workspace

pytestmark = [pytest.mark.anyio, pytest.mark.bwrap]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def zygote(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Path, Supervisor]]:
    base = tmp_path_factory.mktemp("rt15outzyg")
    async with zygote_session(base) as (_, sup):
        workspace(base / "ws")
        yield base / "ws", sup


async def test_a_detached_marker_scrubbed_leftover_does_not_plant_after_the_end(
    zygote: tuple[Path, Supervisor],
) -> None:
    ws, sup = zygote
    why = await planted_after_end(sup, ws)
    assert why is None, why

