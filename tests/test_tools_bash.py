"""Bash, PowerShell, TaskOutput and TaskStop on the Tool protocol, over a real supervisor."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from pydantic import ValidationError

from sandbox import LocalConfig, SandboxPolicy
from sandbox.local import LocalBackend
from shellrt.protocol import ProgressEvent, ToolContext, ToolExecutionError
from shellrt.supervisor import Supervisor, TaskStatus
from shellrt.tools.bash import Bash, BashInput
from shellrt.tools.powershell import PowerShell
from shellrt.tools.task_output import TaskOutput, TaskOutputInput
from shellrt.tools.task_stop import TaskStop, TaskStopInput

pytestmark = pytest.mark.anyio


@pytest.fixture
async def ctx(tmp_path: Path) -> AsyncIterator[ToolContext]:
    ws = tmp_path / "ws"
    ws.mkdir()
    backend = LocalBackend(LocalConfig(), SandboxPolicy(workspace=ws))
    await backend.start()
    sup = Supervisor(backend, session_dir=tmp_path / "session", progress_interval_s=0.1)
    try:
        yield ToolContext(
            session_id="t",
            session_dir=tmp_path / "session",
            workspace=ws,
            cwd=sup.cwd,
            allowed_roots=(ws,),
            services={Supervisor: sup},
        )
    finally:
        await sup.close()
        await backend.close()


def test_input_limits_tell_the_model_what_to_do() -> None:
    bash = Bash()
    assert bash.parse_input({"command": "ls"}).timeout is None
    with pytest.raises(ValidationError, match="from 1 to 600000"):
        bash.parse_input({"command": "ls", "timeout": 600_001})
    with pytest.raises(ValidationError):
        bash.parse_input({"command": ""})
    with pytest.raises(ValidationError, match="Extra inputs"):
        bash.parse_input({"command": "ls", "cwd": "/"})
    schema = bash.input_schema()
    assert set(schema["properties"]) == {"command", "timeout", "description", "run_in_background"}


async def test_semantic_validation(ctx: ToolContext) -> None:
    bash = Bash()
    assert (await bash.validate(BashInput(command="ls"), ctx)).ok
    blank = await bash.validate(BashInput(command="   "), ctx)
    assert not blank.ok and "empty" in blank.message
    long = await bash.validate(BashInput(command="echo " + "x" * 100_001), ctx)
    assert not long.ok and "Write the script to a file" in long.message


def test_classification_comes_from_the_analysis() -> None:
    bash = Bash()
    ls, rm = BashInput(command="ls -la"), BashInput(command="rm -rf build")
    assert bash.is_read_only(ls) and bash.is_concurrency_safe(ls) and not bash.is_destructive(ls)
    assert not bash.is_read_only(rm) and not bash.is_concurrency_safe(rm) and bash.is_destructive(rm)
    assert not bash.is_concurrency_safe(BashInput(command="ls", run_in_background=True))
    subject = bash.permission_subject(BashInput(command="git status && rm -rf x"))
    assert subject.commands == ("git status", "rm -rf x") and subject.access == "execute"


async def test_own_permission_check(ctx: ToolContext) -> None:
    bash = Bash()
    assert (await bash.check_permissions(BashInput(command="ls -la"), ctx)).behavior == "allow"
    write = await bash.check_permissions(BashInput(command="touch x"), ctx)
    assert write.behavior == "ask" and "not read-only" in write.reason
    outside = await bash.check_permissions(BashInput(command="cat /etc/passwd"), ctx)
    assert outside.behavior == "ask" and "/etc/passwd" in outside.reason
    cd_out = await bash.check_permissions(BashInput(command="cd .. && ls"), ctx)
    assert cd_out.behavior == "ask"


async def test_call_returns_output_exit_code_and_cwd(ctx: ToolContext) -> None:
    bash = Bash()
    out = await bash.call(BashInput(command="mkdir -p sub && cd sub && echo hi && exit 3"), ctx)
    assert out.data.exit_code == 3 and out.data.output == "hi\n" and out.data.cwd_changed
    text = bash.to_model_content(out.data)
    assert text.startswith("hi\n") and "Exit code 3" in text and "Working directory is now" in text
    assert out.context_modifier is not None
    out.context_modifier(ctx)
    assert ctx.cwd.endswith("/sub")
    empty = await bash.call(BashInput(command="true"), ctx)
    assert bash.to_model_content(empty.data) == "(Bash completed with no output)"


def test_cwd_tracking_is_skipped_only_when_provably_unneeded() -> None:
    bash = Bash()
    assert not bash.may_change_cwd(BashInput(command="ls -la"))
    assert bash.may_change_cwd(BashInput(command="cd sub && ls"))
    assert bash.may_change_cwd(BashInput(command="source env.sh"))
    assert bash.may_change_cwd(BashInput(command="make"))


async def test_analysis_env_reaches_git(ctx: ToolContext) -> None:
    bash = Bash()
    out = await bash.call(BashInput(command="git --version && env | grep -c '^GIT_CONFIG_KEY_'"), ctx)
    assert int(out.data.output.strip().splitlines()[-1]) > 5


async def test_timeout_flags_and_message(ctx: ToolContext) -> None:
    bash = Bash()
    out = await bash.call(BashInput(command="echo start; sleep 5", timeout=300), ctx)
    assert out.is_error and out.data.timed_out
    text = bash.to_model_content(out.data)
    assert "start" in text and "timed out after 0.3s" in text and "run_in_background" in text


async def test_abort_interrupts(ctx: ToolContext) -> None:
    bash = Bash()

    async def fire() -> None:
        await anyio.sleep(0.2)
        ctx.abort.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(fire)
        out = await bash.call(BashInput(command="sleep 5"), ctx)
    assert out.data.interrupted and "interrupted" in bash.to_model_content(out.data)


async def test_progress_reaches_the_context(ctx: ToolContext) -> None:
    events: list[ProgressEvent] = []
    ctx.progress = events.append
    ctx.tool_use_id = "toolu_1"
    await Bash().call(BashInput(command="for i in 1 2 3; do echo $i; sleep 0.1; done"), ctx)
    assert events and events[-1].tool_use_id == "toolu_1" and events[-1].tool_name == "Bash"
    assert events[-1].bytes_so_far and events[-1].last_lines


async def test_large_output_is_previewed_with_path(ctx: ToolContext) -> None:
    bash = Bash()
    out = await bash.call(BashInput(command="seq 1 200000"), ctx)
    text = bash.to_model_content(out.data)
    assert out.data.truncated and len(text) < 30_000
    assert text.startswith("1\n2\n") and "200000" in text and str(out.data.output_path) in text
    assert Path(str(out.data.output_path)).stat().st_size == out.data.total_bytes


async def test_background_task_output_and_stop(ctx: ToolContext) -> None:
    bash, reader, stopper = Bash(), TaskOutput(), TaskStop()
    started = await bash.call(
        BashInput(
            command="for i in 1 2 3; do echo tick $i; echo noise; sleep 0.2; done; sleep 30",
            run_in_background=True,
        ),
        ctx,
    )
    task_id = started.data.task_id
    assert task_id and "TaskOutput" in bash.to_model_content(started.data)
    tasks = ctx.service(Supervisor).tasks
    with anyio.fail_after(30):  # wait for the three ticks (a condition, not a fixed sleep)
        while tasks.get(task_id).total_bytes < len("tick 1\nnoise\n") * 3:
            await anyio.sleep(0.05)
    first = await reader.call(TaskOutputInput(task_id=task_id, filter="^tick"), ctx)
    assert first.data.text == "tick 1\ntick 2\ntick 3\n"
    first_text = reader.to_model_content(first.data)
    assert f"Task {task_id}: running" in first_text and "3 of 6 new lines matched" in first_text
    again = await reader.call(TaskOutputInput(task_id=task_id), ctx)
    assert "(no new output)" in reader.to_model_content(again.data)
    stopped = await stopper.call(TaskStopInput(task_id=task_id), ctx)
    assert stopped.data.status is TaskStatus.STOPPED and "stopped" in stopper.to_model_content(stopped.data)
    repeat = await stopper.call(TaskStopInput(task_id=task_id), ctx)
    assert "already ended" in stopper.to_model_content(repeat.data)


async def test_task_output_waits_and_validates(ctx: ToolContext) -> None:
    bash, reader = Bash(), TaskOutput()
    started = await bash.call(BashInput(command="sleep 0.2; echo done", run_in_background=True), ctx)
    assert started.data.task_id
    out = await reader.call(TaskOutputInput(task_id=started.data.task_id, wait_ms=5000), ctx)
    assert out.data.task.status is TaskStatus.COMPLETED and out.data.text == "done\n"
    assert "(exit code 0)" in reader.to_model_content(out.data)
    bad = await reader.validate(TaskOutputInput(task_id="x", filter="("), ctx)
    assert not bad.ok and "regular expression" in bad.message
    with pytest.raises(ToolExecutionError, match="No background task"):
        await reader.call(TaskOutputInput(task_id="bzzzzz"), ctx)
    with pytest.raises(ToolExecutionError, match="No background task"):
        await TaskStop().call(TaskStopInput(task_id="bzzzzz"), ctx)
    assert reader.is_read_only(TaskOutputInput(task_id="x"))


async def test_powershell_missing_is_a_clear_validation_error(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    result = await PowerShell().validate(BashInput(command="Get-ChildItem"), ctx)
    assert not result.ok and "pwsh" in result.message and "Bash" in result.message
    with pytest.raises(ToolExecutionError, match="not installed"):
        await PowerShell().call(BashInput(command="Get-ChildItem"), ctx)


@pytest.mark.skipif(shutil.which("pwsh") is None, reason="pwsh is not installed here")
async def test_powershell_runs_when_installed(ctx: ToolContext) -> None:
    out = await PowerShell().call(
        BashInput(command="Write-Output 'hi'; New-Item -ItemType Directory d | Out-Null; Set-Location d"), ctx
    )
    assert out.data.output.strip() == "hi" and out.data.cwd_changed


def test_tool_metadata() -> None:
    assert Bash().name == "Bash" and PowerShell().name == "PowerShell"
    assert TaskOutput().name == "TaskOutput" and TaskStop().name == "TaskStop"
    assert Bash.interrupt_behavior == "cancel" and Bash.cancels_siblings_on_error
    assert "run_in_background" in Bash().prompt()
