"""Red team, round 45 (supervisor3): an ended task's preview, once read back, stayed in memory.

Round 42 let an ended task's head and tail go (the file holds every byte) and read them back
when asked; what was read back was kept (round 43's Left). A caller that looks at every ended
task's preview (a UI listing them, a harness collecting results) brought the memory back:
up to 32 KiB a task, for the session's life, however many tasks it ran.
"""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

import pytest

from tests import _nonroot
from tests._local_session import local_supervisor

pytestmark = pytest.mark.anyio

_TASKS = 150


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_previews_read_back_are_not_kept(tmp_path: Path) -> None:
    """Failed before: 150 previews read back kept ~4.9 MB of heads and tails."""
    ws = tmp_path / "ws"
    ws.mkdir()
    async with local_supervisor(ws, tmp_path / "s") as sup:
        ids = []
        for _ in range(_TASKS):
            task = await sup.start_background("head -c 40000 /dev/zero | tr '\\0' a")
            await sup.tasks.wait(task.id)
            ids.append(task.id)
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for task_id in ids:
                execution = sup.tasks.execution(task_id)
                assert execution is not None
                preview, cut = execution.out.preview()
                assert cut and preview.startswith("a" * 16_384) and preview.endswith("a" * 16_384)
                assert execution.out.last_lines(1) == ("a" * 16_384,)
                assert execution.out.head(3) == b"aaa"
            del preview
            gc.collect()
            grown = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
    assert grown < 1_000_000, f"{_TASKS} previews read back grew the heap by {grown:,} bytes"


def test_it_holds_for_an_unprivileged_caller() -> None:
    """The same as uid 65534 (the local backend's reaper process in place of the session cgroup)."""
    _nonroot.held_as_nobody(__file__, "test_previews_read_back_are_not_kept")
