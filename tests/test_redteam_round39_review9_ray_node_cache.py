"""Red team round 39 (review9): a Ray node's judgement of a workspace is kept for the whole run.

Novel4 made each root node judge the workspace it copies (`TaskFloor.judge_workspace`), "cached
per directory as the driver's": the verdict stands while the directory's own (device, inode) does.
A node's actor lives for the run, and what a directory holds changes under the same inode: its
owner renames a root-only directory into it (from a parent it may write) after the first task's
judgement. Probed: HELD -- the copy itself checks each entry it copies as root (round 38) and
refuses one only its owner reads, so the later task got a setup error, not the file. This test
keeps that: real bwrap tasks through the node actor as Ray calls it; as root; FAIL, not skip,
under CI=true.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.batch import Task, TaskFloor
from tests._shared_dir import world_readable_dir
from tests.conftest import require

pytestmark = [
    pytest.mark.bwrap,
    pytest.mark.timeout(120),
    pytest.mark.skipif(
        os.geteuid() != 0, reason="only a root harness copies with more rights than its sandbox user"
    ),
]

_SECRET = "root-only-moved-in-later"


@pytest.fixture
def shared() -> Iterator[Path]:
    with world_readable_dir("shellrt-r39-r9cache-") as path:
        yield path


def _task(ws: Path, task_id: str, command: str) -> dict[str, Any]:
    task = Task.model_validate(
        {"id": task_id, "workspace": str(ws), "commands": [command], "sandbox": "bwrap"}
    )
    return (
        TaskFloor(allow_backend_keys=True, allow_private_workspace=False).apply(task).model_dump(mode="json")
    )


def test_a_node_judges_a_workspace_again_after_it_changed(shared: Path) -> None:
    """Held before and after: the cached verdict let the copy start; the copy refused the entry."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed")
    from shellrt.batch.ray_runner import ShellrtNodeActor

    ws = shared / "ws"
    ws.mkdir(mode=0o755)
    (ws / "data.txt").write_text("public\n")
    (ws / "data.txt").chmod(0o644)
    vault = shared / "vault"
    vault.mkdir(mode=0o700)
    (vault / "secret.txt").write_text(_SECRET + "\n")
    (vault / "secret.txt").chmod(0o600)
    first = _task(ws, "t1", "cat data.txt")
    second = _task(ws, "t2", "cat vault/secret.txt")
    actor = ShellrtNodeActor(
        "node-1", None, str(shared / "node-artifacts"), None, 1, "never", (), (), None, None, ()
    )

    async def go() -> tuple[dict[str, Any], dict[str, Any]]:
        try:
            one: dict[str, Any] = (await actor.run(first, 1, 1 << 20))["result"]
            vault.rename(ws / "vault")  # the same directory, by inode, now holds a root-only one
            two: dict[str, Any] = (await actor.run(second, 1, 1 << 20))["result"]
            return one, two
        finally:
            await actor.shutdown()

    one, two = anyio.run(go)
    assert one["status"] == "ok", one
    shown = repr(two)
    assert _SECRET not in shown, shown
    assert two["status"] == "error" and "only its owner reads" in (two["error"] or ""), shown
