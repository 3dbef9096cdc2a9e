"""Round 23: one task's result must stay bounded in the harness's memory and in the results file.

Every command's previews (stdout and stderr, up to ``collect.preview_bytes`` each, which the task
file sets up to 1 MB) were held in the harness process until the task ended and written as one
results line, with no bound on the number of commands: a 17 KB task line of 200 commands made a
400 MB results line and took the CLI to 1.2 GB resident in 14 s (a 64 MiB line allows ~780,000
commands: the host's memory, for every task of the run). A task's previews now share one bound
(`shellrt.batch.worker.RESULT_PREVIEW_BYTES`); past it a command keeps its exit code and sizes and
its previews are dropped, marked truncated. A task may list at most `MAX_COMMANDS` commands.
"""

from __future__ import annotations

import json
from pathlib import Path

from shellrt.batch.tasks import MAX_COMMANDS
from shellrt.batch.worker import RESULT_PREVIEW_BYTES
from tests._batch_helpers import run_tasks
from tests._bwrap_session import require_bwrap

_FAT = "head -c 1000000 /dev/zero | tr '\\0' x; head -c 1000000 /dev/zero | tr '\\0' y >&2"


def test_a_tasks_previews_share_one_bound(tmp_path: Path) -> None:
    require_bwrap()
    count = RESULT_PREVIEW_BYTES // 1_000_000 + 8  # ~2x the bound, printed
    task = {"id": "fat", "commands": [_FAT] * count, "collect": {"preview_bytes": 1_000_000}}
    out = tmp_path / "results.jsonl"
    proc, _ = run_tasks(tmp_path, [task], timeout=300)
    assert proc.returncode == 0, proc.stderr
    line = out.read_bytes()
    assert len(line) < RESULT_PREVIEW_BYTES + (1 << 20), len(line)  # was count * 2 MB
    commands = json.loads(line)["commands"]
    assert [c["exit_code"] for c in commands] == [0] * count  # every command ran and is reported
    assert commands[0]["preview"].startswith("x") and commands[0]["stderr"].startswith("y")
    dropped = [c for c in commands if not c["preview"] and not c["stderr"]]
    assert dropped and all(c["truncated"] and c["stdout_bytes"] == 1_000_000 for c in dropped)


def test_a_task_with_too_many_commands_is_an_invalid_line(tmp_path: Path) -> None:
    from shellrt.batch import TaskLineError, iter_tasks

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "long", "commands": ["true"] * (MAX_COMMANDS + 1)}) + "\n")
    errors: list[TaskLineError] = []
    read = list(iter_tasks(tasks, on_error=errors.append))
    assert not read, len(read)  # (the task itself would print 10,001 commands)
    assert len(errors) == 1 and "commands" in str(errors[0]), errors
