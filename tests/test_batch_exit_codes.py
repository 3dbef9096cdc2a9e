"""Batch tool calls fail by the Bash tool's rule, shell commands on any non-zero exit; exit codes kept."""

from __future__ import annotations

import pytest

from shellrt.batch import Task, run

pytestmark = pytest.mark.anyio


def _bash(id_: str, command: str) -> dict[str, object]:
    return {"type": "tool_use", "id": id_, "name": "Bash", "input": {"command": command}}


async def test_a_failed_bash_tool_call_fails_the_task_with_its_exit_code() -> None:
    task = Task.model_validate({"id": "tu", "commands": [_bash("a", "echo out; exit 2")]})
    [result] = [r async for r in run([task])]
    assert result.status == "failed", result
    assert result.commands[0].exit_code == 2 and result.commands[0].is_error


async def test_grep_no_match_is_no_failure_for_a_tool_call_only() -> None:
    tasks = [
        Task.model_validate({"id": "shell", "commands": ["echo hello > f; grep absent f"]}),
        Task.model_validate({"id": "tool", "commands": [_bash("g", "echo hello > f; grep absent f")]}),
    ]
    results = {r.id: r async for r in run(tasks)}
    tool = results["tool"]  # the Bash tool's rule, as a model sees it
    assert tool.status == "ok", tool
    assert tool.commands[0].exit_code == 1 and not tool.commands[0].is_error
    # A harness's own command: any non-zero exit is its verdict (red team round 27: a failed
    # ``grep -q PASSED log`` check was ``ok``).
    shell = results["shell"]
    assert shell.status == "failed", shell
    assert shell.commands[0].exit_code == 1 and shell.commands[0].is_error
