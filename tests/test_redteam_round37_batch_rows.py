"""Round 37: one hostile dataset row stopped the whole run; NUL bytes were found only mid-task.

A task file is a dataset someone else wrote, and every file beside it is theirs too. A row whose
``workspace`` the host could not resolve -- a relative name that is a symlink loop the dataset
ships (``ws -> ws``), or a path holding a NUL byte (``"a\\u0000b"``) -- raised out of the loader
(``Path.resolve``: RuntimeError) or out of the floor (``os.path.realpath``: ValueError) through
the runner's task groups: a traceback, and no task after it ran (the tasks before it were torn
down, their lines lost when they had not finished). Now such a row is a bad line of its own
(skipped, named on stderr), and every other task runs.

A NUL byte in a path, an environment entry or a command reached the OS only while the task ran:
the row ran its commands first and failed at the end (``collect.files``: "exporting files failed:
ValueError: embedded null byte") or in the middle. The loader now refuses such a row before it
runs, naming the field. tool_use blocks' inputs are the tools' own (a Write may hold a NUL).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shellrt.batch import load_tasks
from tests._batch_helpers import run_cli
from tests._bwrap_session import require_bwrap


def test_a_row_naming_an_unresolvable_workspace_stops_only_itself(tmp_path: Path) -> None:
    require_bwrap()
    (tmp_path / "loop").symlink_to("loop")  # shipped by the dataset beside its task file
    rows = [
        {"id": "good1", "commands": ["echo one"]},
        {"id": "loop", "workspace": "loop", "commands": ["echo x"]},
        {"id": "nul-rel", "workspace": "a\0b", "commands": ["echo x"]},
        {"id": "nul-abs", "workspace": "/x/a\0b", "commands": ["echo x"]},
        {"id": "good2", "commands": ["echo two"]},
    ]
    path, out = tmp_path / "tasks.jsonl", tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    proc = run_cli("run", str(path), "--out", str(out), "-j", "1", "--prestart", "0", "-q", timeout=180)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    results = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())} if out.exists() else {}
    assert {k: v["status"] for k, v in results.items()} == {"good1": "ok", "good2": "ok"}, proc.stderr
    assert proc.returncode == 1  # bad lines make the run exit 1, as every invalid line does
    skipped = [ln for ln in proc.stderr.splitlines() if "skipped" in ln]
    assert len(skipped) == 3, proc.stderr
    for n, line in zip((2, 3, 4), skipped, strict=True):
        assert f"tasks.jsonl:{n}:" in line and "workspace" in line, line


@pytest.mark.parametrize(
    "row",
    [
        {"collect": {"files": ["out/a\0b"]}},
        {"cwd": "a\0b"},
        {"env": {"A": "a\0b"}},
        {"env": {"A\0B": "x"}},
        {"commands": [{"argv": ["ec\0ho", "x"]}]},
        {"commands": ["echo \0 x"]},
        {"commands": [{"run": "true", "cwd": "x\0"}]},
        {"commands": [{"run": "true", "env": {"A": "\0"}}]},
        {"workspace": "/srv/a\0b"},
    ],
    ids=lambda r: next(iter(r)),
)
def test_a_nul_byte_the_os_cannot_take_is_refused_before_the_task_runs(
    tmp_path: Path, row: dict[str, object]
) -> None:
    task = {"id": "t", "commands": ["echo ran"], **row}
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(task) + "\n")
    loaded, errors = load_tasks(path)
    assert not loaded and len(errors) == 1, (loaded, errors)
    assert "NUL" in str(errors[0]), str(errors[0])


def test_a_tool_use_input_may_hold_a_nul(tmp_path: Path) -> None:
    block = {"type": "tool_use", "id": "w1", "name": "Write", "input": {"file_path": "x", "content": "a\0b"}}
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps({"id": "t", "commands": [block]}) + "\n")
    loaded, errors = load_tasks(path)
    assert [t.id for t in loaded] == ["t"] and not errors
