"""Red team, round 38 (batch): what one attempt of a task leaves must never pass for another's.

A task's full outputs and collected files go to ``<artifacts>/<task id>/``. Round 37 left that a
``--resume`` attempt ran on top of an earlier attempt's directory: files the earlier attempt
collected (or a ``cmd-N.out`` of a command the new attempt never ran) stayed beside the new ones,
where a grader reading ``artifacts_dir`` finds them as this task's. And the Python API took two
tasks of one id in one run (the task file's loader refuses that, a list or a lazy source did
not): both ran at once into the same directory, each overwriting and adding to the other's
results, and the results file held the id twice. Real bwrap tasks; FAIL, not skip, under CI=true.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

from shellrt.batch import Task, TaskRefused, run_sync
from tests.conftest import require

_OPTIONS = {"output_budget": None, "default_limits": None}


def _task(task_id: str, *commands: str) -> Task:
    return Task.model_validate(
        {
            "id": task_id,
            "sandbox": "bwrap",
            "commands": list(commands),
            "collect": {"output": "full", "files": ["out/**"]},
        }
    )


def _kept(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def test_a_resumed_attempt_starts_from_an_empty_artifacts_directory(tmp_path: Path) -> None:
    """Failed before (1 of 1): ``files/out/planted`` and ``cmd-1.out`` of the crashed attempt stayed
    in the new attempt's directory, which its ``ok`` line names."""
    require(shutil.which("bwrap") is not None, "bubblewrap is needed for batch tasks")
    out = tmp_path / "results.jsonl"
    first = _task("t", "mkdir -p out && echo first > out/planted", "echo second-command")
    [result] = run_sync([first], out=out, **_OPTIONS)
    assert result.status == "ok", result
    artifacts = Path(result.artifacts_dir or "")
    assert "files/out/planted" in _kept(artifacts), _kept(artifacts)
    out.write_text("")  # the harness died before the line was written: --resume runs it again

    again = _task("t", "mkdir -p out && echo fresh > out/fresh")
    [result] = run_sync([again], out=out, resume=True, **_OPTIONS)
    assert result.status == "ok" and result.files == ["out/fresh"], result
    assert Path(result.artifacts_dir or "") == artifacts
    assert _kept(artifacts) == {"cmd-0.out", "cmd-0.err", "files/out/fresh"}, _kept(artifacts)


def test_an_attempt_that_cannot_run_leaves_no_earlier_files_behind(tmp_path: Path) -> None:
    """Failed before (1 of 1): a rerun whose workspace is gone is ``error`` with no
    ``artifacts_dir``, yet the earlier attempt's collected files stayed under its id."""
    require(shutil.which("bwrap") is not None, "bubblewrap is needed for batch tasks")
    out = tmp_path / "results.jsonl"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    data = {
        "id": "t",
        "sandbox": "bwrap",
        "workspace": str(workspace),
        "commands": ["mkdir -p out && echo old > out/old"],
        "collect": {"files": ["out/**"]},
    }
    [result] = run_sync([Task.model_validate(data)], out=out, **_OPTIONS)
    assert result.status == "ok", result
    artifacts = Path(result.artifacts_dir or "")
    out.write_text("")
    workspace.rmdir()
    [result] = run_sync([Task.model_validate(data)], out=out, resume=True, **_OPTIONS)
    assert result.status == "error" and result.artifacts_dir is None, result
    assert not artifacts.exists() or not _kept(artifacts), _kept(artifacts)


def test_two_tasks_of_one_id_in_a_list_do_not_share_a_directory(tmp_path: Path) -> None:
    """Failed before (1 of 1): both ran (two ``t`` lines) into one ``<artifacts>/t``."""
    require(shutil.which("bwrap") is not None, "bubblewrap is needed for batch tasks")
    out = tmp_path / "results.jsonl"
    refused: list[tuple[str, TaskRefused]] = []
    tasks = [
        _task("t", "mkdir -p out && echo mine > out/mine"),
        _task("t", "mkdir -p out && echo theirs > out/theirs && echo theirs > out/mine"),
    ]
    results = run_sync(tasks, out=out, concurrency=2, on_refused=lambda t, r: refused.append((t.id, r)), **_OPTIONS)
    assert [r.id for r in results] == ["t"], results
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["id"] for line in lines] == ["t"], lines
    artifacts = Path(results[0].artifacts_dir or "")
    assert (artifacts / "files/out/mine").read_text() == "mine\n"
    assert not (artifacts / "files/out/theirs").exists()
    assert len(refused) == 1 and "repeats" in str(refused[0][1]), refused


def test_a_lazy_source_repeating_an_id_is_refused_too(tmp_path: Path) -> None:
    """Failed before (1 of 1): an async source's second ``t`` ran as well."""
    require(shutil.which("bwrap") is not None, "bubblewrap is needed for batch tasks")

    async def source() -> AsyncIterator[Task]:
        yield _task("t", "mkdir -p out && echo one > out/one")
        yield _task("u", "true")
        yield _task("t", "mkdir -p out && echo two > out/two")

    results = run_sync(source(), artifacts_dir=tmp_path / "a", concurrency=1, **_OPTIONS)
    assert sorted(r.id for r in results) == ["t", "u"], results
    assert not (tmp_path / "a/t/files/out/two").exists()


def test_a_task_directory_holding_anything_else_is_refused_not_emptied(tmp_path: Path) -> None:
    """Guard of the fix (nothing was removed before it either): ``--artifacts ~`` and a task id
    ``Documents`` must not cost the operator a directory; the task is ``error``, every file kept."""
    require(shutil.which("bwrap") is not None, "bubblewrap is needed for batch tasks")
    artifacts = tmp_path / "home"
    (artifacts / "Documents" / "files").mkdir(parents=True)
    (artifacts / "Documents" / "thesis.tex").write_text("years of work\n")
    (artifacts / "Documents" / "files" / "keep").write_text("keep\n")
    artifacts.chmod(0o700)
    [result] = run_sync([_task("Documents", "true")], artifacts_dir=artifacts, **_OPTIONS)
    assert result.status == "error" and "thesis.tex" in (result.error or ""), result
    assert (artifacts / "Documents" / "thesis.tex").read_text() == "years of work\n"
    assert (artifacts / "Documents" / "files" / "keep").read_text() == "keep\n"
