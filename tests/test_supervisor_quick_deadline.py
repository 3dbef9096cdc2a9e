"""A foreground command's timeout without a cancel scope on the quick path (issue 22, item 2).

`Supervisor.run` on asyncio arms a loop timer that kills the whole tree (`KillingDeadline`)
instead of entering ``anyio.move_on_after`` for every command. These tests hold the timeout's
behaviour: the tree dies (setsid, subshell and nohup children included) whether the shell
closed its output and runs on, keeps it open past the pump window, or has a timeout shorter
than that window; a command moved to the background on timeout is not killed; a caller's
cancel still kills the tree; and a quick command enters no cancel scope at all.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from sandbox import SandboxPolicy
from sandbox.local import LocalBackend
from shellrt.supervisor import Supervisor

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def sup(tmp_path: Path) -> AsyncIterator[Supervisor]:
    ws = tmp_path / "ws"
    ws.mkdir()
    async with (
        LocalBackend(policy=SandboxPolicy(workspace=ws)) as backend,
        Supervisor(backend, session_dir=tmp_path / "s") as supervisor,
    ):
        yield supervisor


@pytest.fixture
def marker() -> Iterator[str]:
    """A sleep length no other process on the machine uses; survivors are killed afterwards."""
    mark = f"{os.getpid() % 1000 + 1000}.{time.monotonic_ns() % 10**6:06d}"
    yield mark
    for proc in _sleepers(mark):
        proc.kill()


def _sleepers(mark: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmd = proc.info["cmdline"] or []
        if any(mark in word for word in cmd) and "bash" not in os.path.basename(cmd[0] if cmd else ""):
            found.append(proc)
    return found


def _tree(mark: str) -> str:
    """Children in every way a command can leave them: background, setsid, subshell, nohup."""
    return f"sleep {mark}1 & setsid sleep {mark}2 & (sleep {mark}3 &); nohup sleep {mark}4 >/dev/null 2>&1 &"


async def _gone(mark: str) -> list[psutil.Process]:
    with anyio.move_on_after(5):
        while _sleepers(mark):
            await anyio.sleep(0.05)
    return _sleepers(mark)


async def test_a_shell_that_closed_its_output_and_runs_on_is_killed_whole(
    sup: Supervisor, marker: str
) -> None:
    """EOF comes at once, then the wait for the exit would last forever: the timer kills the tree."""
    begin = time.monotonic()
    result = await sup.run(f"exec >/dev/null 2>&1; {_tree(marker)} sleep {marker}5", timeout_s=1.0)
    assert result.timed_out
    assert time.monotonic() - begin < 5
    assert await _gone(marker) == []


async def test_a_command_past_the_pump_window_is_killed_whole(sup: Supervisor, marker: str) -> None:
    result = await sup.run(f"echo started; {_tree(marker)} sleep {marker}5", timeout_s=0.8)
    assert result.timed_out and "started" in result.preview
    assert await _gone(marker) == []


async def test_a_timeout_inside_the_pump_window_is_kept(sup: Supervisor, marker: str) -> None:
    begin = time.monotonic()
    result = await sup.run(f"{_tree(marker)} sleep {marker}5", timeout_s=0.005)
    assert result.timed_out
    assert time.monotonic() - begin < 5
    assert await _gone(marker) == []


async def test_background_on_timeout_is_not_killed(sup: Supervisor, marker: str) -> None:
    result = await sup.run(f"sleep {marker}5; echo late", timeout_s=0.3, background_on_timeout=True)
    assert result.timed_out and result.backgrounded_task_id
    assert _sleepers(marker), "a command moved to the background must keep running"
    await sup.tasks.stop(result.backgrounded_task_id)
    assert await _gone(marker) == []


async def test_a_callers_cancel_kills_the_tree(sup: Supervisor, marker: str) -> None:
    with anyio.move_on_after(0.5) as scope:
        await sup.run(f"exec >/dev/null 2>&1; {_tree(marker)} sleep {marker}5", timeout_s=60)
    assert scope.cancelled_caught
    assert await _gone(marker) == []


async def test_quick_commands_enter_no_cancel_scope(sup: Supervisor, monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[float] = []
    real = anyio.move_on_after

    def counting(delay: float | None, *args: Any, **kwargs: Any) -> anyio.CancelScope:
        made.append(delay or 0.0)
        return real(delay, *args, **kwargs)

    monkeypatch.setattr(anyio, "move_on_after", counting)  # the module object: every caller counts
    for _ in range(5):
        assert (await sup.run("true", timeout_s=30)).exit_code == 0
    assert made == []
    # A command that outlives the window waits under a scope for what is left of its timeout.
    assert (await sup.run("sleep 0.2", timeout_s=30)).exit_code == 0
    assert len([d for d in made if 29 < d < 30]) == 1  # (the pump's own drain bound is another)
