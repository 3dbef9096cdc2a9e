"""Red team round 7: one hostile line of a task file (or of the results file) stopped the whole run.

docs/batch.md promises that a line which is not JSON or fails validation is reported with its
line number and skipped, and the other tasks run. Broken by:

* a line nested 100,000 deep (``[[[...]]]``): ``json.loads`` raised `RecursionError`, not
  `ValueError`, out of the loader: a traceback, no task run. The same line in the results file
  crashed ``--resume``;
* a lone surrogate (``"echo \\ud800"``, valid JSON): the task validated, then the run crashed
  turning it into a command (pydantic refuses it there, and no result line could hold it): the
  other tasks never ran;
* a line of gigabytes with no newline: read whole into memory before it was judged;
* ``"id": "a\\n"``: the id check ended in ``$``, which matches before a final newline, so an id
  that is not "letters, digits and ._:@+=-" passed (a results line's id the operator cannot tell
  from ``a``; an artifacts directory ``a\\n``);
* escape sequences: a task file's keys (``{"\\u001b]52;c;...\\u0007": 1}``) were printed raw in the
  "skipped" message, reaching the operator's terminal (OSC 52 sets the clipboard, OSC 0 the
  title, CSI rewrites what is on screen); the summary's container reasons likewise.

Each test failed before the fix.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from shellrt.batch import iter_tasks, load_tasks, read_finished_ids
from shellrt.batch.pool import PoolStats
from shellrt.batch.progress import Progress, terminal_safe
from tests._batch_helpers import run_cli

_DEEP = "[" * 100_000 + "]" * 100_000


def _write(path: Path, *lines: str) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


@pytest.mark.parametrize(
    "hostile",
    [
        _DEEP,
        '{"id": "bad", "commands": ["echo \\ud800"]}',
        '{"id": "bad", "commands": ["x"], "env": {"A": "\\udfff"}}',
    ],
    ids=["deep", "surrogate-command", "surrogate-env"],
)
def test_a_hostile_line_is_skipped_and_the_others_run(tmp_path: Path, hostile: str) -> None:
    tasks = _write(tmp_path / "tasks.jsonl", hostile, json.dumps({"id": "good", "commands": ["echo ok"]}))
    out = tmp_path / "out.jsonl"
    proc = run_cli("run", str(tasks), "--out", str(out), "-q", timeout=120)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "tasks.jsonl:1:" in proc.stderr
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["good"]


def test_a_giant_line_is_refused_without_reading_it_whole(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    with tasks.open("w") as fh:
        fh.write('{"id": "huge", "commands": ["echo ' + "x" * (80 << 20) + '"]}\n')
        fh.write(json.dumps({"id": "good", "commands": ["echo ok"]}) + "\n")
    errors: list[str] = []
    names = [t.id for t in iter_tasks(tasks, on_error=lambda e: errors.append(str(e)))]
    assert names == ["good"]
    assert len(errors) == 1 and "tasks.jsonl:1:" in errors[0] and "longer than" in errors[0], errors


def test_resume_survives_a_deep_results_line(tmp_path: Path) -> None:
    results = _write(tmp_path / "out.jsonl", _DEEP, json.dumps({"id": "done", "status": "ok"}))
    assert read_finished_ids(results) == {"done"}


@pytest.mark.parametrize("task_id", ["a\n", "a\r", "a\x1b"])
def test_an_id_ends_where_it_seems_to(tmp_path: Path, task_id: str) -> None:
    tasks, errors = load_tasks(
        _write(tmp_path / "t.jsonl", json.dumps({"id": task_id, "commands": ["true"]}))
    )
    assert tasks == [] and len(errors) == 1, (tasks, errors)


_ESCAPES = ("\x1b", "\x07", "\x9b", "\u202e", "\r")


def test_task_file_text_reaches_the_terminal_escaped(tmp_path: Path) -> None:
    osc52 = "\x1b]52;c;cm0gLXJmIH4K\x07"
    tasks = _write(
        tmp_path / "tasks.jsonl",
        json.dumps({"id": "k", "commands": ["true"], osc52: 1}),
        json.dumps({"id": "e", "commands": ["true"], "env": {"\x1b]0;pwned\x07\u202e\r": 1}}),
        json.dumps({"id": "\x9b2J", "commands": ["true"]}),
    )
    proc = run_cli("run", str(tasks), "--out", str(tmp_path / "out.jsonl"), timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.count("shellrt batch: skipped") == 3, proc.stderr
    assert not any(c in proc.stderr for c in _ESCAPES), repr(proc.stderr)
    assert "\\x1b]52;c;" in proc.stderr  # still said, visibly


def test_summary_reasons_are_escaped() -> None:
    progress = Progress(1, live=False)
    progress.containers.add("abc")
    progress.pool = PoolStats(reasons=Counter({"/dev/shm/\x1b]0;x\x07 survived": 1}))
    assert not any(c in progress.summary() for c in _ESCAPES)
    assert terminal_safe("a\x1bb\n") == "a\\x1bb\\n"
