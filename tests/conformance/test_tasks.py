"""Conformance: background tasks — start, new output, filter, stop, close, unexpected death."""

from __future__ import annotations

import os
import signal
import time

import anyio
import pytest

from sandbox._proctree import is_alive
from shellrt.supervisor import (
    Supervisor,
    SupervisorClosedError,
    TaskNotFoundError,
    TaskOutputChunk,
    TaskStatus,
)

pytestmark = pytest.mark.anyio


async def assert_gone(sup: Supervisor, pid: int | None, pattern: str) -> None:
    """The task's process is gone: by host pid, else (no host pid) as seen from inside the sandbox.

    A process killed with SIGKILL ends when the kernel next runs it: on a loaded machine
    (a docker task's root is killed inside its container) that may be a moment after the
    stop returned, so the host pid gets up to 3 s to become a zombie or vanish.
    """
    if pid is not None:
        with anyio.move_on_after(3):
            while is_alive(pid):
                await anyio.sleep(0.02)
        assert not is_alive(pid)
        return
    probe = await sup.run(f"ps -eo args | grep -c '[{pattern[0]}]{pattern[1:]}' || true", timeout_s=10)
    assert probe.preview.strip() == "0", probe.preview


async def _first_output(sup: Supervisor, task_id: str) -> TaskOutputChunk:
    """Read until the task's first output arrives (a condition, not a fixed sleep)."""
    with anyio.fail_after(30):
        while True:
            chunk = await sup.tasks.read_new(task_id)
            if chunk.text:
                return chunk
            await anyio.sleep(0.05)


async def test_start_returns_at_once_and_output_streams(sup: Supervisor) -> None:
    start = time.monotonic()
    task = await sup.start_background(
        "echo line 1; sleep 2; echo line 2; sleep 0.3; echo line 3; exit 4", description="count"
    )
    # RUNNING proves it returned before the command ended; the bound only catches a hang.
    assert time.monotonic() - start < 5
    assert task.status is TaskStatus.RUNNING and len(task.id) == 6 and task.description == "count"
    first = await _first_output(sup, task.id)
    assert first.text.startswith("line 1\n") and "line 3" not in first.text
    final = await sup.tasks.wait(task.id)
    assert final.status is TaskStatus.FAILED and final.exit_code == 4
    rest = await sup.tasks.read_new(task.id)
    assert "line 3\n" in rest.text and "line 1" not in rest.text
    assert (await sup.tasks.read_new(task.id)).text == ""
    assert task.output_path.read_bytes() == b"line 1\nline 2\nline 3\n"
    assert [t.id for t in sup.tasks.list()] == [task.id]


async def test_filter_keeps_matching_lines(sup: Supervisor) -> None:
    task = await sup.start_background("printf 'ok 1\\nERROR a\\nok 2\\nERROR b\\n'")
    await sup.tasks.wait(task.id)
    chunk = await sup.tasks.read_new(task.id, r"^ERROR")
    assert chunk.text == "ERROR a\nERROR b\n" and chunk.matched_lines == 2 and chunk.scanned_lines == 4
    assert sup.tasks.get(task.id).status is TaskStatus.COMPLETED


async def test_partial_lines_are_held_back_while_running(sup: Supervisor) -> None:
    task = await sup.start_background("printf 'whole\\npart'; sleep 3; printf 'ial\\n'")
    chunk = await _first_output(sup, task.id)
    assert chunk.text == "whole\n" and chunk.pending_bytes == 4
    await sup.tasks.wait(task.id)
    assert (await sup.tasks.read_new(task.id)).text == "partial\n"


async def test_stop_kills_the_tree(sup: Supervisor) -> None:
    task = await sup.start_background("sleep 1011 & setsid sleep 1012 & sleep 1013")
    await anyio.sleep(0.3)
    start = time.monotonic()
    stopped = await sup.tasks.stop(task.id)
    assert time.monotonic() - start < 10  # the tree sleeps ~1000 s: only a hang fails this
    assert stopped.status is TaskStatus.STOPPED and stopped.note
    await assert_gone(sup, task.pid, "sleep 101")


async def test_unknown_task_id(sup: Supervisor) -> None:
    with pytest.raises(TaskNotFoundError, match="Known task ids"):
        sup.tasks.get("bnope1")
    assert sup.tasks.find("bnope1") is None


async def test_session_close_kills_remaining_tasks(sup: Supervisor) -> None:
    task = await sup.start_background("sleep 1021")
    await anyio.sleep(0.1)
    await sup.close()
    final = sup.tasks.get(task.id)
    assert final.status is TaskStatus.STOPPED and "session closed" in (final.note or "")
    if task.pid is not None:
        assert not is_alive(task.pid)
    await sup.close()  # idempotent


async def test_task_killed_from_outside_reports_it(sup: Supervisor) -> None:
    task = await sup.start_background("echo $$ > .task.pid; echo ready; sleep 1031")
    await _first_output(sup, task.id)  # the pid file is written
    if task.pid is not None:
        os.kill(task.pid, signal.SIGKILL)
    else:  # no host pid (container): kill the task's shell from a sibling command
        await sup.run("kill -9 $(cat .task.pid)", timeout_s=10)
    final = await sup.tasks.wait(task.id)
    assert final.status is TaskStatus.KILLED and final.signal == signal.SIGKILL
    assert final.note and "outside" in final.note


async def test_foreground_moves_to_background_on_timeout(sup: Supervisor) -> None:
    result = await sup.run("echo start; sleep 3; echo end", timeout_s=1.5, background_on_timeout=True)
    assert result.timed_out and result.backgrounded_task_id and result.exit_code is None
    assert result.preview == "start\n"
    final = await sup.tasks.wait(result.backgrounded_task_id)
    assert final.status is TaskStatus.COMPLETED
    assert (await sup.tasks.read_new(final.id)).text == "end\n"
    assert final.output_path.read_bytes() == b"start\nend\n"


async def test_close_interrupts_a_running_foreground_command(sup: Supervisor) -> None:
    running = anyio.Event()

    async def close_soon() -> None:
        # Once the command runs (its first output), not after a fixed 0.3 s: at CI61's load the
        # start took longer and the close came first ("the shell session is closed").
        await running.wait()
        await anyio.sleep(0.2)
        await sup.close()

    async with anyio.create_task_group() as tg:
        tg.start_soon(close_soon)
        result = await sup.run(
            "echo started; sleep 1041", timeout_s=30, on_output=lambda _s, _b: running.set()
        )
    assert result.interrupted and not result.timed_out
    with pytest.raises(SupervisorClosedError):
        await sup.run("true", timeout_s=5)
