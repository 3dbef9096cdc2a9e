"""The fast pump's window on asyncio's own reader and timer loses nothing (issue 22, item 2).

A foreground command's output is read in the caller's task for a short window; what
is still running after it continues in a detached pump. The window is asyncio's
reader and timer, not an anyio cancel scope: it must end at EOF with every byte,
end at its deadline with every byte read so far (the rest is the detached pump's),
and leave no reader registered when it ends or is cancelled.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import anyio
import pytest

from sandbox import SandboxPolicy
from sandbox._fdstream import FdReceiveStream
from sandbox.local import LocalBackend
from shellrt.supervisor import Supervisor
from shellrt.supervisor.execution import _pipe_to_eof_within
from shellrt.supervisor.spool import OutputSpool

pytestmark = pytest.mark.anyio


def _registered(loop: asyncio.AbstractEventLoop, fd: int) -> bool:
    selector = loop._selector  # type: ignore[attr-defined]
    return fd in selector.get_map()


def _pipe(tmp_path: Path) -> tuple[FdReceiveStream, int, OutputSpool]:
    read_end, write_end = os.pipe()
    return FdReceiveStream(read_end), write_end, OutputSpool(tmp_path / "out")


async def test_the_window_reads_every_byte_up_to_eof(tmp_path: Path) -> None:
    stream, write_end, spool = _pipe(tmp_path)
    loop = asyncio.get_running_loop()

    async def writer() -> None:
        for chunk in (b"a", b"b", b"c"):
            os.write(write_end, chunk)
            await anyio.sleep(0.002)
        os.close(write_end)

    async with anyio.create_task_group() as tg:
        tg.start_soon(writer)
        assert await _pipe_to_eof_within(loop, stream, spool, 5.0)
    assert spool.preview()[0] == "abc"
    assert not _registered(loop, stream.fileno() or -1)


async def test_the_window_ends_at_its_deadline_with_what_it_read(tmp_path: Path) -> None:
    stream, write_end, spool = _pipe(tmp_path)
    loop = asyncio.get_running_loop()
    os.write(write_end, b"early")
    started = time.monotonic()
    assert not await _pipe_to_eof_within(loop, stream, spool, 0.05)
    assert 0.04 <= time.monotonic() - started < 3.0  # ~0.05 s idle; a window blind to its deadline never ends
    assert spool.preview()[0] == "early"
    fd = stream.fileno()
    assert fd is not None and not _registered(loop, fd)
    os.write(write_end, b" late")  # nothing read twice, nothing skipped: the next read gets it
    os.close(write_end)
    assert await _pipe_to_eof_within(loop, stream, spool, 5.0)
    assert spool.preview()[0] == "early late"


async def test_a_cancelled_window_leaves_no_reader_behind(tmp_path: Path) -> None:
    stream, write_end, spool = _pipe(tmp_path)
    loop = asyncio.get_running_loop()
    with anyio.move_on_after(0.05) as scope:
        await _pipe_to_eof_within(loop, stream, spool, 5.0)
    assert scope.cancelled_caught
    fd = stream.fileno()
    assert fd is not None and not _registered(loop, fd)
    os.close(write_end)


async def test_output_split_across_the_window_reaches_the_result_whole(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    async with (
        LocalBackend(policy=SandboxPolicy(workspace=ws)) as backend,
        Supervisor(backend, session_dir=tmp_path / "s") as sup,
    ):
        quick = await sup.run("printf a; sleep 0.005; printf b", timeout_s=10)
        slow = await sup.run("printf a; sleep 0.2; printf b", timeout_s=10)
    assert (quick.exit_code, quick.preview) == (0, "ab")
    assert (slow.exit_code, slow.preview) == (0, "ab")
