"""Round 52 red team, runtime4: a task line's size in items is bounded before it is judged.

The task file is read on the batch's event loop (`aiter_tasks` pulls the loader's lines there), and
each item of some fields costs Python work before a task runs: measured on one line, a million
``collect.files`` patterns took 38 s (14 MB), a million ``allowed_domains`` 33 s (23 MB), a million
``env`` entries 11 s (15 MB), a tool_use input of a million keys 19.5 s (21 MB, its JSON dump),
against 1.3 s for a 60 MB line of plain command text. The loader takes lines of 64 MiB: one hostile
record held every running task's timers and output pumps for about a minute, each such line again.
Each bound is checked by counting, before any item is built; the counts here are what is asserted
(no timing). Pure Python: the loader and the model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from shellrt.batch.checked import checked_task
from shellrt.batch.loader import MAX_TASK_ITEMS, load_tasks
from shellrt.batch.tasks import (
    MAX_COLLECT_FILES,
    MAX_COMMANDS,
    MAX_DOMAINS,
    MAX_ENV_ENTRIES,
)


def _over(field: str) -> dict[str, Any]:
    if field == "env":
        return {"commands": ["true"], "env": {f"K{i}": "" for i in range(MAX_ENV_ENTRIES + 1)}}
    if field == "command env":
        return {"commands": [{"run": "true", "env": {f"K{i}": "" for i in range(MAX_ENV_ENTRIES + 1)}}]}
    if field == "collect.files":
        return {"commands": ["true"], "collect": {"files": [f"f{i}" for i in range(MAX_COLLECT_FILES + 1)]}}
    if field == "allowed_domains":
        return {"commands": ["true"], "sandbox": {"allowed_domains": [f"a{i}.example.org" for i in range(MAX_DOMAINS + 1)]}}
    if field == "denied_domains":
        return {"commands": ["true"], "sandbox": {"denied_domains": [f"d{i}.example.org" for i in range(MAX_DOMAINS + 1)]}}
    # the whole line: a tool_use input of many small items (each field within its own bound)
    tool_use = {"type": "tool_use", "id": "t", "name": "Bash", "input": {"xs": [0] * MAX_TASK_ITEMS}}
    return {"commands": [tool_use]}


FIELDS = ["env", "command env", "collect.files", "allowed_domains", "denied_domains", "items"]


def test_each_unbounded_field_of_a_task_line_is_refused_by_count(tmp_path: Path) -> None:
    """Failed before: every one of these lines became a task (6 of 6)."""
    path = tmp_path / "tasks.jsonl"
    lines = [json.dumps({"id": f"t{n}", **_over(field)}) for n, field in enumerate(FIELDS)]
    path.write_text("\n".join(lines) + "\n")
    tasks, errors = load_tasks(path)
    assert [t.id for t in tasks] == [], [t.id for t in tasks]
    assert [e.line for e in errors] == list(range(1, len(FIELDS) + 1))
    for field, error in zip(FIELDS, errors, strict=True):
        named = "items" if field == "items" else field.split()[-1]
        assert named in error.message and "at most" in error.message, (field, error.message[:300])
        assert error.task_id is not None, field


def test_a_large_honest_task_still_loads(tmp_path: Path) -> None:
    """The guard: the most commands a task may list (tool_use blocks, and command objects with an
    env), fields at their bounds: loaded, and validated again as a run does."""
    tool_uses = [
        {"type": "tool_use", "id": f"u{i}", "name": "Bash", "input": {"command": f"echo {i}"}} for i in range(MAX_COMMANDS)
    ]
    task = {
        "id": "big",
        "commands": tool_uses,
        "env": {f"K{i}": "v" for i in range(MAX_ENV_ENTRIES)},
        "collect": {"files": [f"out/{i}.txt" for i in range(MAX_COLLECT_FILES)]},
    }
    task["commands"][:1000] = [{"run": "true", "env": {f"E{n}": "v" for n in range(20)}}] * 1000
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(task) + "\n")
    tasks, errors = load_tasks(path)
    assert not errors, errors[0].message[:300]
    assert len(tasks) == 1 and len(tasks[0].commands) == MAX_COMMANDS
    # and where it runs: each run validates the task again, from its dump (every default field too)
    assert len(checked_task(tasks[0]).commands) == MAX_COMMANDS
