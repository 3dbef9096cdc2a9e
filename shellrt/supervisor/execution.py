"""One process from spawn to exit: stream pumping into spools, bounded drain, tree kill.

An `Execution` does not care whether it is foreground or background: its pump
runs detached (see `_spawner`), and the foreground caller merely waits on
`done` with a deadline. That is what lets a timed-out command move to the
background without losing a byte.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable

import anyio
from anyio.abc import ByteReceiveStream

from sandbox import ExitStatus, SandboxProcess
from sandbox._fdstream import FdReceiveStream
from shellrt.supervisor.spool import OutputSpool

__all__ = ["PACED_WINDOW_S", "Execution", "asyncio_loop"]

#: After the shell exits, how long its output may take to reach EOF before the
#: tree is swept (a detached process still holding the pipe).
_DRAIN_S = 1.0
_READ_SIZE = 1 << 20
#: A command whose output ends within this window is pumped without helper tasks.
_FAST_S = 0.02


class Execution:
    """A running (or finished) process with its output spools."""

    def __init__(
        self,
        process: SandboxProcess,
        out: OutputSpool,
        err: OutputSpool | None,
        *,
        stdin_data: bytes | None = None,
    ) -> None:
        self.process = process
        self.out = out
        self.err = err
        self.started = time.monotonic()
        self.ended: float | None = None
        self.status: ExitStatus | None = None
        #: Set when the process has exited and its output is captured (`done`, made on demand).
        self._done: anyio.Event | None = None
        self._finished = False
        #: Set once we killed it (timeout, stop, interrupt, close) — a signal death is then ours.
        self.killed_by_us = False
        #: Set when capturing failed and shellrt killed the command for it (what and why).
        self.capture_error: str | None = None
        self.notes: list[str] = []
        self._stdin_data = stdin_data
        self._readers_left = 1 + (1 if process.stderr is not None else 0)
        #: Every output stream reached its end. The event is made only when something waits for
        #: it (`_readers_event`): a quick command's pump never does (an anyio.Event costs ~13k
        #: instructions to make, a noticeable part of a `true`).
        self._readers_finished = False
        self._readers_done: anyio.Event | None = None
        #: Called once, in the task that finishes it, the moment it is done (`when_finished`).
        self._on_finish: Callable[[], None] | None = None

    @property
    def done(self) -> anyio.Event:
        """Set once the process has exited and its output is captured. Made when first asked
        for: a quick foreground command ends before anyone waits (an anyio.Event is ~13k
        instructions to make)."""
        if self._done is None:
            self._done = anyio.Event()
            if self._finished:
                self._done.set()
        return self._done

    @property
    def total_bytes(self) -> int:
        return self.out.total_bytes + (self.err.total_bytes if self.err else 0)

    def loss_report(self, *, previews_complete_ok: bool = False) -> str | None:
        """What output is missing (from the files, or not captured at all) and why; None when nothing.

        ``previews_complete_ok``: a stream whose every byte is in memory (so in the
        result's preview) lost nothing the caller will see: not reported (foreground).
        """
        spools = [("output", self.out)] + ([("stderr", self.err)] if self.err is not None else [])
        parts = [
            spool.loss_report(label)
            for label, spool in spools
            if not (previews_complete_ok and spool.complete_in_memory)
        ]
        parts.append(self.capture_error)
        found = [p for p in parts if p]
        return " ".join(found) if found else None

    @property
    def elapsed_s(self) -> float:
        return (self.ended or time.monotonic()) - self.started

    async def pump(self) -> None:
        """Stream output to the spools until the process exits and its streams end.

        Also the continuation of a `run_inline` that did not finish: it picks up
        where that left off (a cancelled read has read nothing).
        """
        try:
            if not await self._fast_pump():
                await self._pump_concurrently()
        except Exception as exc:  # never let one command's capture take the session's task group down
            await self._capture_failed(exc)
        finally:
            self._finish()

    async def run_inline(self) -> bool:
        """Foreground hot path: pump in the caller's task; True when the command has finished.

        False (or a cancellation) means it goes on: the caller must then start
        `pump` detached, which continues from where this stopped.
        """
        try:
            if not await self._fast_pump():
                return False
        except Exception as exc:
            await self._capture_failed(exc)
        self._finish()
        return True

    async def _capture_failed(self, exc: Exception) -> None:
        cause = exc
        while isinstance(cause, BaseExceptionGroup) and len(cause.exceptions) == 1:
            inner = cause.exceptions[0]
            if not isinstance(inner, Exception):
                break
            cause = inner
        self.capture_error = (
            f"Output capture failed ({type(cause).__name__}: {cause}); shellrt killed the command, "
            f"so output after {self.total_bytes:,} bytes was not captured."
        )
        self.killed_by_us = True
        with anyio.CancelScope(shield=True):
            await self.process.kill()
            if self.status is None:
                self.status = await self.process.wait()

    def when_finished(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` as it finishes (now, when it has): before anyone woken by `done` runs,
        so what it releases is released by the time a waiter looks (a spawned waiter ran after them:
        a stopped task's registry entry was still open when `tasks.stop` returned)."""
        if self._finished:
            callback()
        else:
            self._on_finish = callback

    def _finish(self) -> None:
        self.ended = time.monotonic()
        self.out.close()
        if self.err is not None:
            self.err.close()
        self._finished = True
        if self._done is not None:
            self._done.set()
        callback, self._on_finish = self._on_finish, None
        if callback is not None:
            callback()

    async def _fast_pump(self) -> bool:
        """Hot path of a quick command with one output stream and no stdin: no helper tasks.

        Reads the stream in this task until EOF, for at most ``_FAST_S``; then
        waits for the exit (status set: True). False (nothing lost: a cancelled
        read has read nothing) when the command is still writing, or has more
        than one stream: the caller goes on concurrently.
        """
        process = self.process
        if not self._readers_finished:
            if process.stderr is not None or process.stdin is not None:
                return False
            stream, spool = process.stdout, self.out
            eof = False
            if type(stream) is FdReceiveStream and (loop := asyncio_loop()) is not None:
                eof = await _pipe_to_eof_within(loop, stream, spool, _FAST_S)
            else:
                with anyio.move_on_after(_FAST_S):
                    try:
                        while True:
                            spool.write(await stream.receive(_READ_SIZE))
                    except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                        eof = True
            if not eof:
                return False
            await _close_stream(stream)
            self._readers_left = 0
            self._readers_finish()
        if self.status is None:
            # EOF: the shell is exiting (or closed its output and runs on: wait covers both).
            self.status = await process.wait()
        return True

    async def _pump_concurrently(self) -> None:
        readers_done = self._readers_event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._read, self.process.stdout, self.out)
            if self.process.stderr is not None:
                tg.start_soon(self._read, self.process.stderr, self.err)
            if self.process.stdin is not None:
                tg.start_soon(self._feed_stdin)
            self.status = await self.process.wait()
            with anyio.move_on_after(_DRAIN_S):
                await readers_done.wait()
            if not readers_done.is_set():
                # A foreground command ends when its shell exits: what it left running
                # (still holding its output) is swept, on every backend (docs/faults.md).
                await self.process.kill()
                with anyio.move_on_after(0.5):
                    await readers_done.wait()
                if readers_done.is_set():
                    self.notes.append(
                        "Processes the command started were still running after its shell exited; "
                        "they were killed. Start long-running processes with run_in_background."
                    )
            if not readers_done.is_set():
                self.notes.append(
                    "A detached process kept the output pipe open after the command exited; "
                    "output after that point was not captured."
                )
                tg.cancel_scope.cancel()

    async def kill(self) -> None:
        """Kill the whole tree (idempotent) and wait until the pump has finished."""
        self.killed_by_us = True
        with anyio.CancelScope(shield=True):
            if not self.done.is_set():
                await self.process.kill()
                await self.done.wait()

    async def _read(self, stream: ByteReceiveStream, spool: OutputSpool | None) -> None:
        assert spool is not None
        pacer = _ReadPacer()  # a few wake-ups a window for a dribbling writer (round 33)
        try:
            while True:
                data = await stream.receive(_READ_SIZE)
                spool.write(data)
                if pause := pacer.pause_after(len(data)):
                    await anyio.sleep(pause)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            with anyio.CancelScope(shield=True):
                await stream.aclose()
            self._readers_left -= 1
            if self._readers_left == 0:
                self._readers_finish()

    def _readers_finish(self) -> None:
        self._readers_finished = True
        if self._readers_done is not None:
            self._readers_done.set()

    def _readers_event(self) -> anyio.Event:
        """The event set when every output stream has ended (made now if nothing waited before)."""
        if self._readers_done is None:
            self._readers_done = anyio.Event()
            if self._readers_finished:
                self._readers_done.set()
        return self._readers_done

    async def _feed_stdin(self) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        try:
            if self._stdin_data:
                await stdin.send(self._stdin_data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass  # the command did not read all of its input: that is its business
        finally:
            try:
                await stdin.aclose()
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                pass


async def _close_stream(stream: ByteReceiveStream) -> None:
    """Close a pump's stream, even while its task is being cancelled.

    A pipe's `FdReceiveStream` closes without awaiting anything (a test holds it to that),
    so no cancellation can cut its close short: it needs no shield scope, which anyio makes
    for ~28k instructions. Any other stream is closed inside one.
    """
    if type(stream) is FdReceiveStream:
        await stream.aclose()
        return
    with anyio.CancelScope(shield=True):
        await stream.aclose()


#: (thread ident, the loop that thread found running): `asyncio_loop`'s one slot, any thread's.
_last_loop: tuple[int, asyncio.AbstractEventLoop] | None = None


def asyncio_loop() -> asyncio.AbstractEventLoop | None:
    """The running asyncio loop of this thread (None under another anyio backend, or none).

    Without a system call per lookup (issue 22 item 2, round 54): CPython 3.11's
    ``asyncio.get_running_loop`` makes a ``getpid`` every time (a loop a forked child inherited
    does not run there), and a ``true`` through the Supervisor asked three times (the timeout's
    timer, the pump's window, the peers' relist timer), each run cold after the command's sleep.
    The loop found last is remembered with its thread; it is that thread's running loop again
    while it says it runs in that thread (``_thread_id``, set by ``run_forever``, cleared when it
    stops: one loop runs in a thread at a time). A forked child forgets it (`_forget_loop`);
    a loop without ``_thread_id`` (another implementation) is looked up every time."""
    global _last_loop
    last = _last_loop
    if last is not None:
        ident = threading.get_ident()
        if last[0] == ident and getattr(last[1], "_thread_id", None) == ident:
            return last[1]
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    _last_loop = (threading.get_ident(), loop)
    return loop


def _forget_loop() -> None:
    global _last_loop
    _last_loop = None


os.register_at_fork(after_in_child=_forget_loop)


async def _pipe_to_eof_within(
    loop: asyncio.AbstractEventLoop, stream: FdReceiveStream, spool: OutputSpool, seconds: float
) -> bool:
    """The fast pump's window on a pipe, on asyncio's own reader and timer: read into ``spool``
    until EOF (True) or until ``seconds`` passed (False).

    The same as reading under ``anyio.move_on_after(seconds)``, without the cancel scope and
    anyio's ``wait_readable`` around each wait (~30 µs a call, of a ``true``'s ~1.4 ms). Nothing
    is lost when the window closes or the caller is cancelled: a read happens only when the
    pipe is readable, and whatever it returned is in the spool.
    """
    deadline = loop.time() + seconds
    fd = stream.fileno()
    if fd is not None and not await _readable_within(loop, fd, seconds):
        # Waited first: a command just started has written nothing yet, and a read before the
        # wait was one failed system call (EAGAIN) and its exception on every call (round 35).
        return False
    while True:
        try:
            data = stream.receive_nowait(_READ_SIZE)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            return True
        if data is not None:
            spool.write(data)
            continue
        left = deadline - loop.time()
        if left <= 0:
            return False
        fd = stream.fileno()
        if fd is not None and not await _readable_within(loop, fd, left):
            return False
        # Readable (or closed meanwhile: the next read says so).


async def _readable_within(loop: asyncio.AbstractEventLoop, fd: int, seconds: float) -> bool:
    """Whether ``fd`` turned readable within ``seconds`` (a cancellation propagates)."""
    waiter: asyncio.Future[bool] = loop.create_future()
    loop.add_reader(fd, _settle, waiter, True)
    timer = loop.call_later(seconds, _settle, waiter, False)
    try:
        return await waiter
    finally:
        loop.remove_reader(fd)
        timer.cancel()


def _settle(waiter: asyncio.Future[bool], value: bool) -> None:
    if not waiter.done():
        waiter.set_result(value)


#: The window reads are counted in (a dribbling stream: `_FREE_READS` reads a window, 300 a
#: second, ~1.5% of a core).
PACED_WINDOW_S = 0.01
#: Reads a window takes without a pause, whatever they bring.
_FREE_READS = 3
#: Bytes a window must bring for its reads never to pause (a default pipe's worth).
_BUSY_BYTES = 65536


class _ReadPacer:
    """The pause one stream's pump takes after each read: a few wake-ups of the owner per
    window, not one per write (red team, round 33).

    The pump read a pipe as soon as it turned readable. A command writing a byte every few
    microseconds (sleeping in between: a few % of a core) made the owner's event loop -- shared
    by every session of the process, outside the sandbox's CPU limit -- wake, read, account and
    save once per byte, ~50 µs each: 70-80% of a core for one command. Once a window of
    `PACED_WINDOW_S` has seen `_FREE_READS` reads that brought less than a default pipe's worth
    together, the pump sleeps until the window ends and the writes gather in the pipe. A writer
    of 64 KiB a window (6.5 MB/s) or more is never paced (no throughput lost); a slower one
    never fills the pipe in a pause, its bytes and EOF are at most a window late; a command
    printing a line or two, and every quick command (the fast pump), is not delayed at all.
    """

    __slots__ = ("_bytes", "_reads", "_start")

    def __init__(self) -> None:
        self._start = -PACED_WINDOW_S
        self._reads = 0
        self._bytes = 0

    def pause_after(self, size: int) -> float:
        """Seconds to sleep after a read of ``size`` bytes (0.0: read on at once)."""
        now = time.monotonic()
        if now - self._start >= PACED_WINDOW_S:
            self._start, self._reads, self._bytes = now, 0, 0
        self._reads += 1
        self._bytes += size
        if self._reads < _FREE_READS or self._bytes >= _BUSY_BYTES:
            return 0.0
        return max(0.0, self._start + PACED_WINDOW_S - now)
