"""The zygote is told of a pooled init's command that runs long (``taken``: make the next init now)
by one timer per zygote, not one per command: each command still told once, ~50 ms after its
start; quick commands cost no timer of their own. Real bubblewrap; FAILS, not skips, under CI=true.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

import sandbox._bwrap_zygote as zygote_module
from sandbox import ExecRequest
from sandbox._bwrap_zygote import Zygote
from sandbox.base import SandboxProcess
from sandbox.bwrap import BwrapBackend
from shellrt.supervisor import Supervisor
from tests._bwrap_session import zygote_session
from tests.test_sandbox_bwrap import until_count

# Serial: a host socket any parallel test binds meanwhile retires the zygote (by design: it is
# masked only at a zygote's start), and these tests follow one zygote's messages, pool and timers.
pytestmark = [pytest.mark.anyio, pytest.mark.bwrap, pytest.mark.serial]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the timer is asyncio's (under trio the zygote is told at once)


@pytest.fixture
async def session(tmp_path: Path) -> AsyncIterator[tuple[BwrapBackend, Supervisor]]:
    async with zygote_session(tmp_path) as made:
        yield made


def _request(ws: Path, script: str) -> ExecRequest:
    return ExecRequest(argv=("bash", "-c", script), cwd=str(ws), env={}, merge_stderr=True)


async def _finish(proc: SandboxProcess) -> int:
    try:
        while await proc.stdout.receive():
            pass
    except (anyio.EndOfStream, anyio.ClosedResourceError):
        pass
    return (await proc.wait()).exit_code


async def test_quick_commands_share_one_timer(
    session: tuple[BwrapBackend, Supervisor], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fails on the old code: one timer per command (60 here)."""
    backend, _sup = session
    ws = backend.policy.allowed_roots()[0]
    loop = asyncio.get_running_loop()
    armed: list[str] = []
    real_later, real_at = loop.call_later, loop.call_at

    def later(delay: float, callback: Any, *args: Any, **kwargs: Any) -> asyncio.TimerHandle:
        armed.append(getattr(callback, "__name__", ""))
        return real_later(delay, callback, *args, **kwargs)

    def at(when: float, callback: Any, *args: Any, **kwargs: Any) -> asyncio.TimerHandle:
        armed.append(getattr(callback, "__name__", ""))
        return real_at(when, callback, *args, **kwargs)

    monkeypatch.setattr(loop, "call_later", later)
    monkeypatch.setattr(loop, "call_at", at)
    commands = 60
    started = time.monotonic()
    for _ in range(commands):
        assert await _finish(await backend.exec(_request(ws, "true"))) == 0
    elapsed = time.monotonic() - started
    ours = [name for name in armed if name in ("_tell_long", "_tell_taken")]
    # At most about one armed per timer period, however many commands ran in it (a firing near a
    # period's edge may re-arm once more: CI at load saw 14 for a bound of 13.9, hence the 2x), and
    # never one per command: the old code armed ~2 per command (116 for 60), whatever the load.
    assert len(ours) <= 2 + 2 * elapsed / zygote_module._TAKEN_AFTER_S, (len(ours), elapsed)
    assert len(ours) < commands * 3 // 2, (len(ours), elapsed)
    assert len(ours) < commands or elapsed > commands * zygote_module._TAKEN_AFTER_S, (len(ours), elapsed)
    zygote = backend._zygote
    assert zygote is not None and not zygote._untold  # nothing left behind by ended commands


async def test_each_long_command_is_told_once_after_its_time(
    session: tuple[BwrapBackend, Supervisor], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three long commands started 20 ms apart: each told once, no sooner than 50 ms after its
    start; and the zygote refills its pool while they run (that is what the message is for)."""
    backend, _sup = session
    ws = backend.policy.allowed_roots()[0]
    told: list[tuple[int, float]] = []
    real = Zygote._tell_taken

    def spy(self: Zygote, init_pid: int) -> None:
        told.append((init_pid, time.monotonic()))
        real(self, init_pid)

    monkeypatch.setattr(Zygote, "_tell_taken", spy)
    zygote = backend._zygote
    assert zygote is not None and zygote.host_pid is not None
    await until_count(zygote.host_pid, 1 + backend.warm_pool)  # the pool full before the test
    starts: dict[int, float] = {}
    procs = []
    for _ in range(3):
        before = time.monotonic()
        proc = await backend.exec(_request(ws, "sleep 1.5"))
        # wrapped when the session has a memory cgroup (a root caller's default since round 25)
        init_pid = getattr(proc, "_inner", proc)._init_pid
        assert init_pid, "the command should have gone to a pooled init"
        starts[init_pid] = before
        procs.append(proc)
        await anyio.sleep(0.02)
    family = await until_count(zygote.host_pid, 1 + backend.warm_pool + 3)
    assert len(family) == 1 + backend.warm_pool + 3, family  # refilled while the three run
    assert sorted(pid for pid, _ in told) == sorted(starts), told  # each told, once
    for init_pid, when in told:
        assert when - starts[init_pid] >= zygote_module._TAKEN_AFTER_S - 0.002, (when, starts)
    for proc in procs:
        assert await _finish(proc) == 0
    assert not zygote._untold
