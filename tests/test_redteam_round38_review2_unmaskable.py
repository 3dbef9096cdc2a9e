"""Red team, round 38 (review2): a workspace the floor left to the worker went on unpinned.

Round 38 (batch) pinned a row's workspace to the directory the floor judged. A workspace that
`unmaskable_source` names (``/usr``, a directory on ``PATH``: every sandbox needs it) was not
judged at all: "the worker refuses it". The worker asks `unmaskable_source` again only with a task
file (``dataset_paths``), and then of what the path names *then*. So the dataset's owner points
``ws`` at ``/usr`` (or a directory on ``PATH``) while the floor looks, then at a root-only directory: nothing was judged or
pinned, and the task printed root's file. Real bwrap tasks, as root; FAIL, not skip, under CI=true.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from shellrt.batch import Task, TaskFloor, run_sync
from tests._shared_dir import world_readable_dir
from tests.conftest import require

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="root hosts copy with root's rights")

_SECRET = "root-only-secret"


@pytest.fixture
def shared() -> Iterator[Path]:
    with world_readable_dir("shellrt-r38-review2-unm-") as path:
        yield path


def _swap_link(ws: Path, target: Path) -> None:
    tmp = ws.with_name(ws.name + ".new")
    tmp.symlink_to(target)
    os.replace(tmp, ws)


@dataclass(frozen=True)
class _SwappingFloor(TaskFloor):
    """The operator's floor; the dataset's owner swaps the link right after it looked."""

    swap: tuple[Path, Path] | None = None

    def apply(self, task: Task) -> Task:
        applied = super().apply(task)
        if self.swap is not None:
            _swap_link(*self.swap)
        return applied


def test_a_workspace_naming_a_path_dir_while_judged_then_root_only_is_not_copied(
    shared: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before (1 of 1): the task printed the root-only file. Now it gets the directory the
    floor looked at. (A directory on ``PATH`` stands for ``/usr``: as unmaskable, small to copy.)"""
    require(shutil.which("bwrap") is not None, "bubblewrap is needed for batch tasks")
    vault = shared / "vault"
    vault.mkdir(mode=0o700)
    inner = vault / "inner"
    inner.mkdir(mode=0o755)
    (inner / "data.txt").write_text(_SECRET + "\n")
    (inner / "data.txt").chmod(0o644)
    tools = shared / "tools"
    tools.mkdir(mode=0o755)
    (tools / "data.txt").write_text("public\n")
    monkeypatch.setenv("PATH", f"{os.environ['PATH']}:{tools}")
    ws = shared / "ws"
    ws.symlink_to(tools)
    task = Task.model_validate({"id": "t", "sandbox": "bwrap", "workspace": str(ws), "commands": ["cat data.txt"]})
    refused: list[str] = []
    floor = _SwappingFloor(allow_backend_keys=True, allow_private_workspace=False, swap=(ws, inner))
    results = run_sync(
        [task], floor=floor, on_refused=lambda t, r: refused.append(str(r)), output_budget=None, default_limits=None
    )
    printed = "".join(c.preview or "" for r in results for c in r.commands)
    assert _SECRET not in printed, results
    assert not refused and [r.status for r in results] == ["ok"] and printed == "public\n", (results, refused)
