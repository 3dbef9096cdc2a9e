"""`FdReceiveStream.aclose` tells anyio's waiters only when one can exist (issue 22, local latency).

A quick command's output is read by the fast pump on asyncio's own reader (`receive_nowait`),
never through `anyio.wait_readable`; anyio's `notify_closing` then has no waiter to wake and
cost ~36 µs per close (two context-variable misses and the backend lookup). A stream that ever
waited in `receive` still notifies, so a reader blocked on it is woken, not left hanging.
"""

from __future__ import annotations

import os

import anyio
import pytest

from sandbox import _fdstream
from sandbox._fdstream import FdReceiveStream


@pytest.mark.anyio
async def test_a_reader_waiting_in_receive_is_woken_by_the_close() -> None:
    r, w = os.pipe()
    stream = FdReceiveStream(r)
    # anyio keeps its read waiters in a context variable: made here, so the reader task shares it.
    os.write(w, b"x")
    await anyio.wait_readable(r)
    assert await stream.receive() == b"x"
    woken: list[type[BaseException]] = []

    async def reader() -> None:
        try:
            await stream.receive()
        except anyio.ClosedResourceError as exc:
            woken.append(type(exc))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            await anyio.wait_all_tasks_blocked()
            await stream.aclose()
    assert woken == [anyio.ClosedResourceError]
    os.close(w)


@pytest.mark.anyio
async def test_a_stream_read_without_waiting_closes_without_notifying(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    notified: list[int] = []
    monkeypatch.setattr(_fdstream.anyio, "notify_closing", notified.append)
    r, w = os.pipe()
    stream = FdReceiveStream(r)
    os.write(w, b"out")
    os.close(w)
    assert stream.receive_nowait() == b"out"
    with pytest.raises(anyio.EndOfStream):
        stream.receive_nowait()
    await stream.aclose()
    assert notified == [] and stream.fileno() is None
    with pytest.raises(OSError):
        os.fstat(r)
    # One that waited does notify.
    r2, w2 = os.pipe()
    waited = FdReceiveStream(r2)

    async def late_write() -> None:
        await anyio.sleep(0.01)
        os.write(w2, b"y")

    async with anyio.create_task_group() as tg:
        tg.start_soon(late_write)
        assert await waited.receive() == b"y"
    await waited.aclose()
    assert notified == [r2]
    os.close(w2)
