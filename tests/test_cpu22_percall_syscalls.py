"""Issue 22 item 2, round 54 (cpu22): system calls a local `true` made that could not answer
differently from one call to the next.

- The running asyncio loop was looked up three times a command (the timeout's timer, the pump's
  window, the peers' relist timer); CPython 3.11's ``get_running_loop`` makes a ``getpid`` each
  time. Now the loop found last is remembered (`shellrt.supervisor.execution.asyncio_loop`), and what it
  answers must still be the running loop of the asking thread: a new loop, another thread, a
  forked child.
- ``io_class`` (every local start's scheduling check, `sandbox._bwrap_sched`) read ``os.uname``
  for the machine's syscall number each time.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from pathlib import Path

import anyio
import pytest

from shellrt.supervisor.execution import asyncio_loop
from tests._local_session import local_supervisor


def _from_shellrt(frame_file: str) -> bool:
    return f"{os.sep}shellrt{os.sep}" in frame_file


@pytest.mark.anyio
async def test_a_command_asks_the_kernel_for_the_running_loop_no_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before: 3 lookups a command (9 for 3 commands)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    asked: list[str] = []
    real = asyncio.get_running_loop

    def counting() -> asyncio.AbstractEventLoop:
        asked.append(sys._getframe(1).f_code.co_filename)
        return real()

    async with local_supervisor(ws, tmp_path / "s") as sup:
        await sup.run("true", timeout_s=30)  # the first lookup is the kernel's
        monkeypatch.setattr(asyncio, "get_running_loop", counting)
        results = [await sup.run("echo hi", timeout_s=30) for _ in range(3)]
        monkeypatch.setattr(asyncio, "get_running_loop", real)
    assert [r.exit_code for r in results] == [0, 0, 0]
    assert all("hi" in r.preview for r in results)
    ours = [f for f in asked if _from_shellrt(f)]
    assert not ours, f"{len(ours)} lookups of the running loop by shellrt for 3 commands: {ours[:3]}"


def test_the_remembered_loop_is_the_running_one_of_the_asking_thread() -> None:
    """Held: a second loop in the same thread, a loop in another thread and no loop at all each
    get their own answer, as `asyncio.get_running_loop` gives it."""
    seen: list[tuple[object, object]] = []

    async def look() -> None:
        seen.append((asyncio_loop(), asyncio.get_running_loop()))
        await asyncio.sleep(0)
        seen.append((asyncio_loop(), asyncio.get_running_loop()))

    asyncio.run(look())
    asyncio.run(look())  # a new loop in the same thread: not the closed one
    worker = threading.Thread(target=lambda: asyncio.run(look()))
    worker.start()
    worker.join(30)
    assert not worker.is_alive()
    asyncio.run(look())
    assert len(seen) == 8
    assert all(found is running for found, running in seen), seen
    assert len({id(running) for _, running in seen[::2]}) == 4
    assert asyncio_loop() is None, "no loop runs here now"


def test_a_forked_child_has_no_running_loop() -> None:
    """Held: as `asyncio.get_running_loop` answers in a child forked under a running loop."""
    answers: list[str] = []

    async def fork_here() -> None:
        assert asyncio_loop() is asyncio.get_running_loop()
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            os.close(read)
            os.write(write, b"none" if asyncio_loop() is None else b"a loop")
            os._exit(0)
        os.close(write)
        with os.fdopen(read, "rb") as pipe:
            answers.append(pipe.read().decode())
        os.waitpid(pid, 0)

    asyncio.run(fork_here())
    assert answers == ["none"]


def test_the_scheduling_check_reads_the_machine_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed before: one ``os.uname`` a start (3 for 3 checks)."""
    from sandbox import _bwrap_sched

    calls = []
    real = os.uname

    def counting() -> os.uname_result:
        calls.append(1)
        return real()

    before = _bwrap_sched.io_class()
    monkeypatch.setattr(os, "uname", counting)
    after = [_bwrap_sched.io_class() for _ in range(3)]
    prefix = _bwrap_sched.calm_prefix(limits=True)
    monkeypatch.setattr(os, "uname", real)
    assert after == [before] * 3 and before != -1, (before, after)
    assert isinstance(prefix, list)
    assert not calls, f"{len(calls)} uname calls for 3 scheduling checks and a prefix"


@pytest.mark.anyio
async def test_a_command_started_after_an_earlier_loop_ended_runs(tmp_path: Path) -> None:
    """Held: the remembered loop of an earlier `anyio.run` is not used for this one's timers."""
    ws = tmp_path / "ws"
    ws.mkdir()

    async def one() -> int:
        async with local_supervisor(ws, tmp_path / "s1") as sup:
            return (await sup.run("true", timeout_s=30)).exit_code

    codes = await anyio.to_thread.run_sync(lambda: [anyio.run(one), anyio.run(one)])
    async with local_supervisor(ws, tmp_path / "s2") as sup:
        result = await sup.run("sleep 0.05; echo late", timeout_s=30)
    assert codes == [0, 0]
    assert result.exit_code == 0 and "late" in result.preview
