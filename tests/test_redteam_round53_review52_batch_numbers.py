"""Round 53 red team, review52: one task line with a very long number is one bad line, not the end
of the run.

Round 52 (runtime4) bounded what a task line costs before it becomes a task (items counted, costly
fields bounded by count). Reading its loader again: `json.loads` turns a JSON integer into a Python
``int``, and past `sys.get_int_max_str_digits()` (4,300 digits) that raises a plain ``ValueError``,
which is neither the ``JSONDecodeError`` nor the ``ValidationError`` the loader reports per line. It
left `iter_tasks`, so a hostile dataset line (``{"id": "x", "timeout": 1111…}``, 4.4 KB) stopped the
whole batch, every other task unread, instead of being reported like any other invalid line (round
37 made a workspace that cannot be resolved one bad line for the same reason). Real task files, the
real loader and the real `shellrt batch` command.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from shellrt.batch import load_tasks

DIGITS = "1" * 5000


def _lines(ws: Path) -> list[str]:
    good = {"commands": ["echo ok"], "workspace": str(ws)}
    return [
        json.dumps({"id": "first", **good}),
        '{"id": "long-number", "commands": ["echo bad"], "timeout": ' + DIGITS + "}",
        '{"id": "deep-number", "commands": [{"run": "echo bad", "env": {"A": "b"}}], "x": [' + DIGITS + "]}",
        json.dumps({"id": "last", **good}),
    ]


@pytest.fixture
def task_file(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(_lines(ws)) + "\n")
    return path


def test_a_long_number_is_one_bad_line(task_file: Path) -> None:
    """Failed before: ValueError ("Exceeds the limit (4300 digits) …") out of the loader."""
    tasks, errors = load_tasks(task_file)
    assert [t.id for t in tasks] == ["first", "last"]
    assert [e.line for e in errors] == [2, 3]
    for error in errors:
        assert "digits" in error.message and "string" in error.message, error.message
        assert DIGITS not in error.message  # the line's words are not echoed back


def test_the_batch_command_runs_the_other_tasks(task_file: Path, tmp_path: Path) -> None:
    """Failed before: `shellrt batch` ended with a traceback, no task run."""
    out = tmp_path / "results.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "shellrt", "batch", "run", str(task_file), "--out", str(out), "--sandbox", "local"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=str(Path(__file__).resolve().parents[1]),
    )
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    results = out.read_text() if out.exists() else ""
    assert '"first"' in results and '"last"' in results, (proc.returncode, proc.stderr[-2000:], results[:500])
