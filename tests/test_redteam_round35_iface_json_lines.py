"""Red team round 35 (iface): a harness's JSON lines stay one line however the harness splits them.

Round 8 escaped U+2028, U+2029 and U+0085 on the two stdio wires: JSON keeps them raw inside
strings, and Python's ``str.splitlines()`` (and other Unicode line splitters) break lines there,
so a command's output could split an answer and stand as a line of its own. The other JSON lines
a harness reads kept them raw: ``shellrt run --json``'s report and a batch run's results file,
where a command printing ``U+2028 {} U+2028`` made a line ``{}`` of its own (a result with no id
or status to a reader that skips what it cannot parse). Both now escape them
(`shellrt.protocol._one_line`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from shellrt.batch import Task, run

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[1]
#: A command printing each separator before and after a JSON value of its own.
PRINTS = "printf 'a\\342\\200\\250{}\\342\\200\\251[1]\\302\\205b'"


def _lines_ok(text: str) -> None:
    lines = text.splitlines()
    assert len(lines) == 1, lines
    value = json.loads(lines[0])
    assert "a\u2028{}\u2029[1]\x85b" in json.dumps(value, ensure_ascii=False), value


def test_run_json_is_one_line_for_splitlines(tmp_path: Path) -> None:
    """Failed before: 1 of 1 (the report split into 4 lines, ``{}`` and ``[1]`` among them)."""
    proc = subprocess.run(
        [sys.executable, "-m", "shellrt", "run", "--sandbox", "local", "--json", "--", PRINTS],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    _lines_ok(proc.stdout)


async def test_batch_results_are_one_line_for_splitlines(tmp_path: Path) -> None:
    """Failed before: 1 of 1 (the task's result line split at each separator)."""
    out = tmp_path / "results.jsonl"
    task = Task.model_validate({"id": "sep", "commands": [PRINTS]})
    [result] = [r async for r in run([task], out=out, artifacts_dir=tmp_path / "art")]
    assert result.status == "ok", result
    _lines_ok(out.read_text(encoding="utf-8"))
