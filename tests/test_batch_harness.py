"""Batch task files for harnesses: argv commands, cwd and user per task or command, stdout and
stderr kept apart in results (previews, sizes, flags, whole files), docker pull policies."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError

from shellrt.batch import Task, TaskResult, run
from tests.conftest import require

pytestmark = pytest.mark.anyio


async def _run(tasks: list[Task], tmp_path: Path) -> dict[str, TaskResult]:
    found: dict[str, TaskResult] = {}
    async with run(tasks, concurrency=2, artifacts_dir=tmp_path / "art") as stream:
        async for result in stream:
            found[result.id] = result
    return found


def _sandbox(name: str) -> str:
    require(name != "bwrap" or shutil.which("bwrap") is not None, "bubblewrap is not installed")
    return name


@pytest.mark.parametrize("sandbox", ["local", "bwrap"])
async def test_argv_cwd_env_and_separate_streams(tmp_path: Path, sandbox: str) -> None:
    source = tmp_path / "src"
    (source / "sub").mkdir(parents=True)
    task = Task.model_validate(
        {
            "id": "harness",
            "sandbox": _sandbox(sandbox),
            "workspace": str(source),
            "cwd": "sub",
            "env": {"FROM_TASK": "t"},
            "collect": {"output": "full"},
            "commands": [
                {"argv": ["printf", "[%s]", "two words", 'it\'s "q"', "new\nline", "$HOME"]},
                {"run": "echo out; echo err >&2; echo $FROM_TASK $FROM_CMD", "env": {"FROM_CMD": "c"}},
                {"argv": ["pwd"]},
                {"argv": ["pwd"], "cwd": "/usr/bin"},
            ],
        }
    )
    result = (await _run([task], tmp_path))["harness"]
    assert result.status == "ok", result
    words, streams, task_cwd, own_cwd = result.commands
    assert words.preview == '[two words][it\'s "q"][new\nline][$HOME]'
    assert words.command == "printf '[%s]' 'two words' 'it'\"'\"'s \"q\"' 'new\nline' '$HOME'"
    assert streams.preview == "out\nt c\n" and streams.stderr == "err\n"
    assert (streams.stdout_bytes, streams.stderr_bytes, streams.total_bytes) == (8, 4, 12)
    assert not streams.stdout_truncated and not streams.stderr_truncated
    assert streams.output_path and Path(streams.output_path).read_text() == "out\nt c\n"
    assert streams.stderr_path and Path(streams.stderr_path).read_text() == "err\n"
    assert task_cwd.preview and task_cwd.preview.endswith("/workspace/sub\n")
    assert own_cwd.preview == "/usr/bin\n"


async def test_each_stream_is_truncated_on_its_own(tmp_path: Path) -> None:
    task = Task.model_validate(
        {"id": "big", "collect": {"preview_bytes": 400}, "commands": ["seq 1 100000 >&2; echo small"]}
    )
    outcome = (await _run([task], tmp_path))["big"].commands[0]
    assert outcome.preview == "small\n" and not outcome.stdout_truncated
    assert outcome.stderr_truncated and outcome.truncated and len(outcome.stderr or "") < 1_000
    assert outcome.stderr_bytes == 588_895 and outcome.stderr_path is None  # preview only


async def test_a_cwd_the_sandbox_cannot_enter_is_a_task_error(tmp_path: Path) -> None:
    task = Task.model_validate(
        {"id": "nocwd", "commands": [{"run": "echo ran", "cwd": "/no-such-dir-shellrt"}]}
    )
    result = (await _run([task], tmp_path))["nocwd"]
    assert result.status == "error" and result.commands == []
    assert result.error and "/no-such-dir-shellrt does not exist" in result.error


@pytest.mark.parametrize("sandbox", ["local", "bwrap"])
async def test_a_user_is_refused_where_identities_cannot_switch(tmp_path: Path, sandbox: str) -> None:
    task = Task.model_validate(
        {"id": "asroot", "sandbox": _sandbox(sandbox), "user": "root", "commands": ["id"]}
    )
    result = (await _run([task], tmp_path))["asroot"]
    assert result.status == "error" and result.error and "cannot run as user 'root'" in result.error


async def test_docker_pull_missing_without_a_registry_names_the_image(tmp_path: Path) -> None:
    require(shutil.which("docker") is not None or Path("/var/run/docker.sock").exists(), "no docker here")
    image = "shellrt-test-absent-image:never-built"
    task = Task.model_validate(
        {"id": "pull", "sandbox": {"type": "docker", "image": image, "pull": "missing"}, "commands": ["true"]}
    )
    result = (await _run([task], tmp_path))["pull"]
    assert result.status == "error" and result.error
    assert f"could not pull image {image!r}" in result.error and "docker load" in result.error


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ({"run": "true", "argv": ["true"]}, "exactly one of"),
        ({"timeout": 3}, "exactly one of"),
        ({"argv": []}, "at least 1"),
        ({"run": "true", "cwd": ""}, "at least 1"),
    ],
)
def test_bad_command_objects_fail_their_line(command: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Task.model_validate({"id": "bad", "commands": [command]})


def test_a_task_user_does_not_apply_to_tool_use_blocks() -> None:
    block = {"type": "tool_use", "id": "toolu_harness_user_1", "name": "Bash", "input": {"command": "id"}}
    with pytest.raises(ValidationError, match="user applies to shell commands"):
        Task.model_validate({"id": "t", "user": "root", "commands": [block]})


def test_pull_accepts_the_old_booleans() -> None:
    task = Task.model_validate({"id": "p", "sandbox": {"type": "docker", "pull": True}, "commands": ["true"]})
    assert task.sandbox.backend.type == "docker" and task.sandbox.backend.pull == "missing"
