"""A bwrap task must not read the other tasks' workspace sources, nor a dataset beside the task file.

bwrap shows the host read-only: each task works in a private host-side copy of its workspace,
but the sources (a benchmark's other problems) and the task file's directory (its answers) were
readable by every task. Every task's sandbox now masks every source and, when the workspaces lie
under it, the task file's directory tree; a source that would mask the system is refused.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from shellrt.batch import Task, dataset_masks, run_sync, scan_task_file
from tests._batch_helpers import run_cli
from tests.conftest import require

_ANSWER = "ANSWER-dataset-7731"
_OTHER = "SOURCE-of-task-a-5519"


@pytest.fixture
def bench() -> Iterator[Path]:
    """A dataset the sandbox uid can reach: tasks.jsonl, answers.json, one directory per task."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    base = Path(tempfile.mkdtemp(prefix="shellrt-dsmask-", dir="/var/tmp"))
    base.chmod(0o755)
    for name, text in (("a", _OTHER), ("b", "mine-b")):
        (base / name).mkdir(mode=0o755)
        (base / name / "problem.txt").write_text(text + "\n")
        (base / name / "problem.txt").chmod(0o644)
    (base / "answers.json").write_text(json.dumps({"a": _ANSWER}) + "\n")
    (base / "answers.json").chmod(0o644)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _spy(*paths: Path) -> str:
    """Task B: its own file, then ``paths`` (A's source, the answers beside the task file)."""
    return (
        f"cat problem.txt; cat {' '.join(map(str, paths))} 2>/dev/null"
        f" | grep -c -e {_OTHER} -e {_ANSWER} || true"
    )


def _lines(base: Path, answers: bool = True) -> list[dict[str, object]]:
    spy = _spy(base / "a/problem.txt", *([base / "answers.json"] if answers else []))
    return [
        {"id": "a", "sandbox": "bwrap", "workspace": "a", "commands": ["cat problem.txt"]},
        {"id": "b", "sandbox": "bwrap", "workspace": "b", "commands": [spy]},
    ]


def test_the_cli_masks_other_sources_and_the_dataset(bench: Path) -> None:
    tasks = bench / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in _lines(bench)))
    tasks.chmod(0o644)
    out = Path(tempfile.mkdtemp(prefix="shellrt-dsmask-out-")) / "results.jsonl"
    try:
        proc = run_cli("run", str(tasks), "--out", str(out), "-j", "1", "--prestart", "0", "-q", timeout=120)
        assert proc.returncode == 0, proc.stderr
        results = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    finally:
        shutil.rmtree(out.parent, ignore_errors=True)
    assert results["a"]["commands"][0]["preview"].strip() == _OTHER  # A still works in its own copy
    assert results["b"]["commands"][0]["preview"].split() == ["mine-b", "0"]


def test_the_api_masks_the_sources_of_a_task_list(bench: Path) -> None:
    """A list names every source up front (the API cannot know of a task file: no answers here)."""
    lines = _lines(bench, answers=False)
    tasks = [Task.model_validate({**t, "workspace": str(bench / str(t["workspace"]))}) for t in lines]
    results = {r.id: r for r in run_sync(tasks, concurrency=1, prestart=0)}
    assert str(results["a"].commands[0].preview).strip() == _OTHER
    preview = str(results["b"].commands[0].preview).split()
    assert preview[0] == "mine-b"
    assert preview[1] == "0", "task b read task a's workspace source"


def test_a_lazy_source_is_masked_with_dataset_paths_from_the_file(bench: Path) -> None:
    tasks = bench / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in _lines(bench)))
    masks = dataset_masks(scan_task_file(tasks), tasks)
    assert masks == (bench.resolve(),)  # the task file's tree covers both sources and the answers
    from shellrt.batch import iter_tasks

    results = {r.id: r for r in run_sync(iter_tasks(tasks), concurrency=1, prestart=0, dataset_paths=masks)}
    assert str(results["b"].commands[0].preview).split() == ["mine-b", "0"]


@pytest.mark.parametrize("source", ["/", "/usr", "/tmp"])
def test_a_workspace_that_would_mask_the_system_is_refused(bench: Path, source: str) -> None:
    tasks = bench / "tasks.jsonl"
    lines = [*_lines(bench)[:1], {"id": "sys", "sandbox": "bwrap", "workspace": source, "commands": ["true"]}]
    tasks.write_text("".join(json.dumps(t) + "\n" for t in lines))
    out = bench / "results.jsonl"
    proc = run_cli("run", str(tasks), "--out", str(out), "-j", "1", "--prestart", "0", "-q", timeout=120)
    assert proc.returncode == 1, proc.stderr
    results = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert results["a"]["status"] == "ok"  # the system is not masked for the others
    assert results["sys"]["status"] == "error"
    assert "which every task's sandbox needs" in results["sys"]["error"]
