"""Red team round 15: an untrusted task file copied in what only root could read.

A batch task's ``workspace`` names a host directory, and a root host copies it with root's
rights before handing the copy to the task's sandbox user. The task file chose the directory:
``"workspace": "/root"``, another user's home, a world-readable project inside a 0700 home,
``/var/lib/...``: under the default floor (`TaskFloor()`, ``shellrt batch run`` without flags)
the task printed files its sandbox user could not read on the host (the host view shows them
to it as unreadable, or not at all). Each such workspace is now refused before it runs, unless
the operator trusts the task file; a dataset beside its task file and readable to all runs.

Root only: a non-root host copies with its own rights, which are its sandbox user's.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from shellrt.batch import Task, TaskFloor, iter_tasks, run
from tests.conftest import require

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(os.geteuid() != 0, reason="root hosts copy with root's rights"),
]

_SECRET = "ROOT-ONLY-rt15-4471"


@pytest.fixture
def dataset() -> Iterator[Path]:
    """A task file in ``tasks/`` (readable to all) and, around it, directories only root reads."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    base = Path(tempfile.mkdtemp(prefix="shellrt-rt15-data-", dir="/var/tmp"))
    try:
        base.chmod(0o755)
        private = base / "private"  # a 0700 directory of root's
        private.mkdir(mode=0o700)
        (private / "secret").write_text(_SECRET)
        opened = base / "open"  # readable to all, but one file in it is not
        opened.mkdir(mode=0o755)
        (opened / "notes").write_text("fine\n")
        (opened / "inner").write_text(_SECRET)
        (opened / "inner").chmod(0o600)
        home = base / "home"  # a world-readable project inside a 0700 home
        home.mkdir(mode=0o700)
        (home / "proj").mkdir(mode=0o755)
        (home / "proj" / "cfg").write_text(_SECRET)
        (home / "proj" / "cfg").chmod(0o644)
        tasks = base / "tasks"
        (tasks / "ok").mkdir(parents=True, mode=0o755)
        tasks.chmod(0o755)
        (tasks / "ok" / "f").write_text("dataset-file\n")
        (tasks / "link").symlink_to(private)
        lines = [
            {"id": "private", "workspace": "../private", "commands": ["cat secret"]},
            {"id": "nested", "workspace": "../open", "commands": ["cat inner"]},
            {"id": "parent", "workspace": str(home / "proj"), "commands": ["cat cfg"]},
            {"id": "link", "workspace": "link", "commands": ["cat secret"]},
            {"id": "ok", "workspace": "ok", "commands": ["cat f"]},
        ]
        (tasks / "t.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
        yield tasks / "t.jsonl"
    finally:
        shutil.rmtree(base, ignore_errors=True)


async def test_a_task_file_cannot_name_what_only_root_reads_as_its_workspace(dataset: Path) -> None:
    refused: dict[str, str] = {}
    batch = run(
        iter_tasks(dataset),
        floor=TaskFloor(),
        out=dataset.parent / "out.jsonl",
        on_refused=lambda task, exc: refused.setdefault(task.id, str(exc)),
    )
    results = [r async for r in batch]
    seen = "\n".join(json.dumps(r.model_dump(mode="json")) for r in results)
    assert _SECRET not in seen, f"a task read a root-only file through its workspace copy: {seen[:600]}"
    assert set(refused) == {"private", "nested", "parent", "link"}, refused
    assert "--trust-task-file" in refused["nested"] and "inner" in refused["nested"]
    assert str(dataset.parent.parent / "home") in refused["parent"]  # the 0700 parent is named
    [ok] = results
    assert ok.id == "ok" and ok.status == "ok" and ok.commands[0].preview == "dataset-file\n", ok


def test_an_operator_who_trusts_the_task_file_may_name_it(dataset: Path) -> None:
    task = Task.model_validate(
        {"id": "p", "workspace": str(dataset.parent.parent / "private"), "commands": ["true"]}
    )
    assert TaskFloor.trusting().apply(task).workspace == task.workspace
    assert TaskFloor(allow_private_workspace=True).apply(task).workspace == task.workspace
