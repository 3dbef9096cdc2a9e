"""Red team, round 38 (review2): a root-only file moved into a judged workspace after the judgement.

Round 38 (batch) pinned a row's workspace to the directory the floor judged (its device and
inode), so a link or directory swapped for it is refused. What the pinned directory *holds* could
still change: its owner (the dataset's, a local user) renames into it a file only root reads
that lies in a directory of theirs (a 0600 file root wrote there: a results file, a cache), right
after the judgement. The root harness copied it into the task's workspace, owned by the sandbox
user: the task printed it. The same copy serves Inspect samples. Played by a floor whose
``apply`` is followed by the owner's rename, done as uid 65534 (a forked child). Real bwrap
tasks, as root (the floor judges only for a root harness); FAIL, not skip, under CI=true.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from shellrt.batch import Task, TaskFloor, run_sync
from tests.conftest import require

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="root hosts copy with root's rights")

_SECRET = "root-only-secret"
_NOBODY = 65534


@pytest.fixture
def download() -> Iterator[Path]:
    """A dataset directory owned by uid 65534 (a local user's download), reachable by all."""
    top = Path(tempfile.mkdtemp(prefix="shellrt-r38-review2-", dir="/tmp"))
    top.chmod(0o755)
    dl = top / "dl"
    dl.mkdir(mode=0o755)
    ws = dl / "ws"
    ws.mkdir(mode=0o755)
    (ws / "data.txt").write_text("public\n")
    (ws / "data.txt").chmod(0o644)
    secret = dl / "secret.txt"  # root's, 0600, in the user's directory
    secret.write_text(_SECRET + "\n")
    secret.chmod(0o600)
    for path in (dl, ws, ws / "data.txt"):
        os.chown(path, _NOBODY, _NOBODY)
    try:
        yield dl
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _as_nobody_rename(src: Path, dst: Path) -> None:
    """``rename(src, dst)`` as uid 65534 (the directories' owner), in a forked child."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        code = 1
        try:
            os.setgroups([])
            os.setgid(_NOBODY)
            os.setuid(_NOBODY)
            os.rename(src, dst)
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "uid 65534 could not rename in its own directory"


@dataclass(frozen=True)
class _MovingFloor(TaskFloor):
    """The operator's floor; the dataset's owner moves a root-only file in right after it judged."""

    move: tuple[Path, Path] | None = None

    def apply(self, task: Task) -> Task:
        applied = super().apply(task)
        if self.move is not None:
            _as_nobody_rename(*self.move)
        return applied


def _printed(results: list) -> str:
    return "".join(c.preview or "" for r in results for c in r.commands)


def test_a_root_only_file_moved_in_after_the_judgement_is_not_copied(download: Path) -> None:
    """Failed before (1 of 1): the task printed the root-only file."""
    require(shutil.which("bwrap") is not None, "bubblewrap is needed for batch tasks")
    ws = download / "ws"
    task = Task.model_validate(
        {"id": "t", "sandbox": "bwrap", "workspace": str(ws), "commands": ["cat data.txt moved.txt"]}
    )
    floor = _MovingFloor(
        allow_backend_keys=True, allow_private_workspace=False, move=(download / "secret.txt", ws / "moved.txt")
    )
    results = run_sync([task], floor=floor, output_budget=None, default_limits=None)
    assert _SECRET not in _printed(results), results
    assert [r.status for r in results] == ["error"], results
    assert "moved.txt" in (results[0].error or "") and "only its owner" in (results[0].error or ""), results


def test_a_judged_workspace_left_alone_still_runs(download: Path) -> None:
    """Guard: nothing moved, the task runs and reads the public file."""
    require(shutil.which("bwrap") is not None, "bubblewrap is needed for batch tasks")
    ws = download / "ws"
    task = Task.model_validate({"id": "t", "sandbox": "bwrap", "workspace": str(ws), "commands": ["cat data.txt"]})
    floor = TaskFloor(allow_backend_keys=True, allow_private_workspace=False)
    results = run_sync([task], floor=floor, output_budget=None, default_limits=None)
    assert [r.status for r in results] == ["ok"] and _printed(results) == "public\n", results
