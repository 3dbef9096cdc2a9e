"""Red team, round 39 (novel4): a Ray node copied a task's workspace that no floor judged there.

On a root harness the operator's floor refuses a row whose workspace holds what a stranger cannot
read (round 15), pinned to the directory judged (round 38). On Ray the floor judges the *driver's*
file system; the task travels to a node as JSON (the pin, a (device, inode) of the driver's, does
not travel), and the node copied whatever the same path named there, as root (round 38 batch's
Left). A node's copy of a shared dataset that differs (another mount, a link its owner made, a
directory swapped after the driver judged) handed the task root-only files. Played here on one
machine: the driver's floor judges a public directory, then the path is made to name a root-only
one before the node's actor (`ShellrtNodeActor.run`, called as Ray calls it: task data as JSON)
runs the task. Real bwrap tasks, as root; FAIL, not skip, under CI=true.
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
    pytest.mark.skipif(os.geteuid() != 0, reason="only a root harness copies with more rights than its sandbox user"),
]

_SECRET = "root-only-on-the-node"


@pytest.fixture
def shared() -> Iterator[Path]:
    """A directory every user reaches (pytest's own is root-only), as a downloaded dataset's."""
    with world_readable_dir("shellrt-r39-raynode-") as path:
        yield path


def _actor(base: Path, **options: Any) -> Any:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed")
    from shellrt.batch.ray_runner import ShellrtNodeActor

    artifacts = base / "node-artifacts"
    return ShellrtNodeActor(
        "node-1", None, str(artifacts), None, 1, "never", (), (), None, None, (), **options
    )


def _driver_judged(shared: Path) -> tuple[Path, dict[str, Any]]:
    """The driver's floor judges ``ws`` (public), as `shellrt.batch.run` does; the task as Ray ships it."""
    ws = shared / "ws"
    ws.mkdir(mode=0o755)
    (ws / "data.txt").write_text("public\n")
    (ws / "data.txt").chmod(0o644)
    task = Task.model_validate(
        {"id": "t1", "workspace": str(ws), "commands": ["cat data.txt"], "sandbox": "bwrap"}
    )
    applied = TaskFloor(allow_backend_keys=True, allow_private_workspace=False).apply(task)
    return ws, applied.model_dump(mode="json")


def _node_differs(shared: Path, ws: Path) -> None:
    """On the node the same path names a root-only directory (here: swapped after the judgement)."""
    vault = shared / "vault"
    vault.mkdir(mode=0o700)
    inner = vault / "inner"
    inner.mkdir(mode=0o755)
    (inner / "data.txt").write_text(_SECRET + "\n")
    (inner / "data.txt").chmod(0o644)
    ws.rename(shared / "ws.judged")
    ws.symlink_to(inner)


def _run(actor: Any, data: dict[str, Any]) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        try:
            payload: dict[str, Any] = await actor.run(data, 1, 1 << 20)
            return payload["result"]
        finally:
            await actor.shutdown()

    return anyio.run(go)


def test_a_node_judges_the_workspace_it_copies(shared: Path) -> None:
    """Failed before (1 of 1): the node copied the root-only directory and the task printed it."""
    ws, data = _driver_judged(shared)
    _node_differs(shared, ws)
    result = _run(_actor(shared), data)
    shown = repr(result)
    assert _SECRET not in shown, shown
    assert result["status"] == "error", shown
    assert "cannot read" in (result["error"] or ""), shown


def test_a_node_still_runs_a_public_workspace(shared: Path) -> None:
    """The guard: what the node judges readable by all runs as before (passed before and after)."""
    _ws, data = _driver_judged(shared)
    result = _run(_actor(shared), data)
    assert result["status"] == "ok", result
    assert "public" in (result["commands"][0]["preview"] or ""), result


def test_a_driver_that_allows_private_workspaces_says_so(shared: Path) -> None:
    """A run whose floor allows private workspaces (or that has none: the caller's own tasks) tells
    its nodes: they copy as before (no judgement the operator turned off)."""
    ws, data = _driver_judged(shared)
    _node_differs(shared, ws)
    result = _run(_actor(shared, private_workspaces=True), data)
    assert result["status"] == "ok", result
    assert _SECRET in (result["commands"][0]["preview"] or ""), result


def test_a_node_keeps_the_task_files_place_unjudged(shared: Path) -> None:
    """A task file in a root-only directory (``/root/ds/tasks.jsonl``, ``"workspace": "ws"``): the
    driver's floor does not judge the place the operator chose; the node, told that place, judges
    the same (without it every such task was refused on the node)."""
    place = shared / "private"
    place.mkdir(mode=0o700)
    ds = place / "ds"
    ds.mkdir(mode=0o755)
    ws = ds / "ws"
    ws.mkdir(mode=0o755)
    (ws / "data.txt").write_text("public\n")
    (ws / "data.txt").chmod(0o644)
    task = Task.model_validate({"id": "t2", "workspace": str(ws), "commands": ["cat data.txt"], "sandbox": "bwrap"})
    task._task_dir = ds
    applied = TaskFloor(allow_backend_keys=True, allow_private_workspace=False).apply(task)
    data = applied.model_dump(mode="json")

    async def go() -> dict[str, Any]:
        actor = _actor(shared)
        try:
            payload: dict[str, Any] = await actor.run(data, 1, 1 << 20, str(ds))
            return payload["result"]
        finally:
            await actor.shutdown()

    result = anyio.run(go)
    assert result["status"] == "ok", result
