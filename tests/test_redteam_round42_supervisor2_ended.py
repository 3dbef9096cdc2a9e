"""Red team, round 42 (supervisor2): ended background tasks held a descriptor and their previews.

A session keeps every task it ran (a model reads an ended task's output later); the running ones
are capped (`SHELLRT_MAX_BACKGROUND_TASKS`), the ended ones are not. Each ended task kept its
root's pidfd open (the process tree's pin on the group id, closed only at a check that never
came once the group was killed before the reap), so a session that ran a few thousand short
tasks ran out of descriptors: then every start is refused (the peers' registry cannot be read).
And each kept its output's head and tail in memory (up to 32 KiB), which nothing reads once the
file holds every byte: 1,000 tasks, 40 MB.
"""

from __future__ import annotations

import gc
import os
import tracemalloc
from pathlib import Path

import pytest

from tests import _nonroot
from tests._local_session import local_supervisor

pytestmark = pytest.mark.anyio

_TASKS = 200


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _kinds() -> dict[str, int]:
    """What this process's descriptors are (for the failure message)."""
    kinds: dict[str, int] = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            kind = os.readlink(f"/proc/self/fd/{fd}").split("[")[0][:30]
        except OSError:
            continue
        kinds[kind] = kinds.get(kind, 0) + 1
    return kinds


async def test_ended_tasks_hold_no_descriptor(tmp_path: Path) -> None:
    """Failed before: 200 ended tasks held 200 pidfds."""
    ws = tmp_path / "ws"
    ws.mkdir()
    async with local_supervisor(ws, tmp_path / "s") as sup:
        await sup.tasks.wait((await sup.start_background("true")).id)
        before = _fds()
        for _ in range(_TASKS):
            await sup.tasks.wait((await sup.start_background("echo x")).id)
        grown, kinds = _fds() - before, _kinds()
        assert len(sup.tasks.list()) == _TASKS + 1
    assert grown < 10, f"{_TASKS} ended background tasks held {grown} descriptors: {kinds}"


async def test_ended_tasks_keep_no_preview_in_memory(tmp_path: Path) -> None:
    """Failed before: 200 ended tasks of 40 KB output each held ~6.5 MB of heads and tails."""
    ws = tmp_path / "ws"
    ws.mkdir()
    async with local_supervisor(ws, tmp_path / "s") as sup:
        await sup.tasks.wait((await sup.start_background("true")).id)
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            ids = []
            for _ in range(_TASKS):
                task = await sup.start_background("head -c 40000 /dev/zero | tr '\\0' a")
                await sup.tasks.wait(task.id)
                ids.append(task.id)
            gc.collect()
            grown = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        chunk = await sup.tasks.read_new(ids[-1], max_bytes=100_000)  # still read whole, from the file
        assert chunk.text == "a" * 40_000
        execution = sup.tasks.execution(ids[-1])
        assert execution is not None
        preview, cut = execution.out.preview()  # asked later: read back from the file
        assert cut and preview.startswith("a" * 16_384) and preview.endswith("a" * 16_384)
    assert grown < 2_000_000, f"{_TASKS} ended tasks grew the heap by {grown:,} bytes"


def test_it_holds_for_an_unprivileged_caller() -> None:
    """The same as uid 65534 (the local backend's subreaper in place of the session cgroup, the
    registry in that uid's place)."""
    _nonroot.held_as_nobody(
        __file__,
        "test_ended_tasks_hold_no_descriptor",
        "test_ended_tasks_keep_no_preview_in_memory",
    )
