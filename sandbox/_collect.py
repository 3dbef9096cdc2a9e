"""Run one request to completion and collect its output, bounded, with an optional timeout.

The file API (`sandbox._files`) and harness adapters need "run this, feed it
these bytes, give me what it printed" on every backend. Memory stays bounded
whatever the process prints: each stream keeps at most ``limit`` bytes (its
head or its tail) and says whether more arrived; a process whose output is no
longer wanted (``stop_on_overflow``) is killed at once.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Literal

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

from sandbox.base import ExecRequest, ExitStatus, SandboxBackend

__all__ = ["Collected", "run_collected"]

_CHUNK = 1024 * 1024
#: After the process exits, how long output still arriving (from its descendants) is read.
LINGER_S = 0.2


@dataclass(frozen=True, slots=True)
class Collected:
    """What a process printed (bounded) and how it ended."""

    status: ExitStatus
    stdout: bytes
    stderr: bytes
    #: More than ``limit`` bytes arrived on the stream (what was kept is its head or tail).
    stdout_overflow: bool
    stderr_overflow: bool


class _Buffer:
    """One stream's bytes: at most ``limit`` of them, the first or the last."""

    def __init__(self, limit: int | None, keep: Literal["head", "tail"]) -> None:
        self.data = bytearray()
        self.limit = limit
        self.keep = keep
        self.overflow = False

    def add(self, chunk: bytes) -> None:
        self.data += chunk
        limit = self.limit
        if limit is not None and len(self.data) > limit:
            self.overflow = True
            if self.keep == "head":
                del self.data[limit:]
            else:
                del self.data[: len(self.data) - limit]  # bytearray drops a prefix in O(1)


async def run_collected(
    backend: SandboxBackend,
    request: ExecRequest,
    *,
    stdin_data: bytes | None = None,
    limit: int | None = None,
    keep: Literal["head", "tail"] = "tail",
    stop_on_overflow: bool = False,
    timeout_s: float | None = None,
    linger_s: float = LINGER_S,
) -> Collected:
    """Start ``request``, feed it ``stdin_data``, and collect both streams until it exits.

    Once the process has exited, output still arriving is read for up to
    ``linger_s`` seconds; descendants that still hold its streams after that
    (``server &``) are killed, as shellrt ends whatever a finished command left
    running, so a call never hangs on them. Raises `TimeoutError` after
    ``timeout_s`` seconds (the process tree is killed first), and whatever
    ``backend.exec`` raises when the process cannot start. ``request.stdin``
    must be true exactly when ``stdin_data`` is given.
    """
    if (stdin_data is not None) != request.stdin:
        raise ValueError("request.stdin must be true exactly when stdin_data is given")
    proc = await backend.exec(request)
    out, err = _Buffer(limit, keep), _Buffer(limit, keep)
    streams = [s for s in (proc.stdout, proc.stderr) if s is not None]
    drained = anyio.Event()
    open_streams = len(streams)
    overflowed = False
    status: ExitStatus | None = None
    try:
        with anyio.move_on_after(timeout_s):
            async with anyio.create_task_group() as tg:

                async def drain(stream: ByteReceiveStream, buf: _Buffer) -> None:
                    nonlocal overflowed, open_streams
                    async for chunk in stream:
                        buf.add(chunk)
                        if buf.overflow and stop_on_overflow:
                            overflowed = True
                            tg.cancel_scope.cancel()
                            return
                    open_streams -= 1
                    if open_streams == 0:
                        drained.set()

                for stream, buf in zip(streams, (out, err), strict=False):
                    tg.start_soon(drain, stream, buf)
                if proc.stdin is not None:
                    tg.start_soon(_feed, proc.stdin, stdin_data or b"")
                exited = await proc.wait()
                with anyio.move_on_after(linger_s):
                    await drained.wait()
                if not drained.is_set():
                    await proc.kill()  # descendants hold the streams: end them (their EOF ends the drains)
                status = exited
        if status is None:
            with anyio.CancelScope(shield=True):
                await proc.kill()
            if not overflowed:
                raise TimeoutError(f"{request.argv[0]!r} did not finish within {timeout_s:g} s (killed)")
            status = await proc.wait()
    except BaseException:
        with anyio.CancelScope(shield=True):
            await proc.kill()
        raise
    finally:
        with anyio.CancelScope(shield=True):
            for closable in (proc.stdout, proc.stderr, proc.stdin):
                if closable is not None:
                    with contextlib.suppress(OSError, anyio.BrokenResourceError):
                        await closable.aclose()  # the streams own their pipe ends: never leak them
    return Collected(status, bytes(out.data), bytes(err.data), out.overflow, err.overflow)


async def _feed(stdin: ByteSendStream, data: bytes) -> None:
    """Write ``data`` then close (EOF); a process that stops reading early is not an error here."""
    view = memoryview(data)
    try:
        for start in range(0, len(view), _CHUNK):
            await stdin.send(bytes(view[start : start + _CHUNK]))
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass
    finally:
        await stdin.aclose()
