"""Task model and JSONL loader: flat sandbox syntax, tool_use detection, bad lines reported by number."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

import shellrt.batch as batch
from sandbox import BwrapConfig, DockerConfig, LocalConfig
from shellrt.batch import CommandSpec, Task, TaskLineError, iter_tasks, load_tasks
from shellrt.protocol import ToolUseBlock


def test_public_names_pinned() -> None:
    assert batch.__all__ == [
        "BatchRun",
        "CollectSpec",
        "CommandOutcome",
        "CommandSpec",
        "LocalRunner",
        "NodeInfo",
        "ResultWriter",
        "Task",
        "TaskFloor",
        "TaskLineError",
        "TaskRefused",
        "TaskResult",
        "TaskSandbox",
        "TaskStatus",
        "WorkerSettings",
        "dataset_masks",
        "default_concurrency",
        "iter_tasks",
        "load_tasks",
        "read_finished_ids",
        "run",
        "run_sync",
        "run_task",
        "scan_task_file",
    ]


def test_defaults_are_local_no_network() -> None:
    task = Task.model_validate({"id": "a", "commands": ["true"]})
    assert isinstance(task.sandbox.backend, LocalConfig)
    assert task.sandbox.network == "none"
    assert task.collect.output == "preview"
    assert task.command_specs() == [CommandSpec(run="true")]


def test_flat_sandbox_with_limits_and_network() -> None:
    task = Task.model_validate(
        {
            "id": "d1",
            "sandbox": {"type": "docker", "image": "busybox", "network": "bridge", "limits": {"pids": 64}},
            "commands": ["true"],
        }
    )
    assert isinstance(task.sandbox.backend, DockerConfig)
    assert task.sandbox.backend.image == "busybox"
    assert task.sandbox.network == "bridge"
    assert task.sandbox.limits.pids == 64
    assert isinstance(
        Task.model_validate({"id": "b", "sandbox": "bwrap", "commands": ["x"]}).sandbox.backend, BwrapConfig
    )
    assert task.sandbox.reuse == "auto"  # container recycling is the default
    never = Task.model_validate(
        {"id": "n", "sandbox": {"type": "docker", "reuse": "never"}, "commands": ["x"]}
    )
    assert never.sandbox.reuse == "never" and isinstance(never.sandbox.backend, DockerConfig)
    with pytest.raises(ValidationError):
        Task.model_validate(
            {"id": "n", "sandbox": {"type": "docker", "reuse": "sometimes"}, "commands": ["x"]}
        )


def test_commands_strings_specs_and_tool_use() -> None:
    task = Task.model_validate(
        {
            "id": "t",
            "commands": [
                "echo a",
                {"run": "sleep 9", "timeout": 0.5, "env": {"X": "1"}},
                {"type": "tool_use", "id": "tu1", "name": "Bash", "input": {"command": "ls"}},
            ],
        }
    )
    specs = task.command_specs()
    assert isinstance(specs[1], CommandSpec) and specs[1].timeout == 0.5
    assert isinstance(specs[2], ToolUseBlock) and specs[2].name == "Bash"
    assert task.uses_tools
    # round trip (what the Ray driver ships to a node)
    assert Task.model_validate(task.model_dump(mode="json")) == task


@pytest.mark.parametrize(
    "bad",
    [
        {"id": "x", "commands": []},
        {"id": "x", "commands": ["true"], "typo": 1},
        {"id": "../etc", "commands": ["true"]},
        {"id": "x", "commands": ["true"], "collect": {"files": ["../secret"]}},
        {"id": "x", "commands": ["true"], "sandbox": {"type": "vm"}},
        {"id": "x", "commands": [{"run": "x", "timeout": -1}]},
    ],
)
def test_invalid_tasks_rejected(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        Task.model_validate(bad)


def test_loader_reports_bad_lines_and_keeps_going(tmp_path: Path) -> None:
    ws = tmp_path / "fixture"
    ws.mkdir()
    lines = [
        json.dumps({"id": "ok1", "commands": ["true"], "workspace": "fixture"}),
        "",
        "# a comment",
        "{not json",
        json.dumps({"id": "bad", "commands": []}),
        json.dumps(["not", "an", "object"]),
        json.dumps({"id": "ok1", "commands": ["true"]}),
        json.dumps({"id": "ok2", "commands": ["false"]}),
    ]
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(lines) + "\n")
    tasks, errors = load_tasks(path)
    assert [t.id for t in tasks] == ["ok1", "ok2"]
    assert tasks[0].workspace == ws.resolve()  # relative to the task file
    assert [e.line for e in errors] == [4, 5, 6, 7]
    assert "not valid JSON" in errors[0].message
    assert "commands" in errors[1].message and errors[1].task_id == "bad"
    assert "duplicate task id 'ok1'" in errors[3].message
    assert str(errors[0]).startswith(f"{path}:4:")


def test_loader_is_lazy(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps({"id": f"t{i}", "commands": ["true"]}) + "\n" for i in range(1000)))
    seen: list[TaskLineError] = []
    it = iter_tasks(path, on_error=seen.append)
    assert next(it).id == "t0"
    assert next(it).id == "t1"


def test_bwrap_runs_one_command_tasks_without_a_session_zygote() -> None:
    from sandbox import BwrapConfig
    from shellrt.batch.worker import _sandbox_config

    def config(sandbox: object, commands: list[str]) -> BwrapConfig:
        result = _sandbox_config(Task.model_validate({"id": "t", "sandbox": sandbox, "commands": commands}))
        assert isinstance(result, BwrapConfig)
        return result

    assert config("bwrap", ["true"]).persistent is False  # a zygote cannot pay off
    assert config("bwrap", ["true", "true"]).persistent is True  # commands may share loopback, /dev/shm
    assert config({"type": "bwrap", "persistent": True}, ["true"]).persistent is True  # asked for
