"""The control channel to the in-container executor: requests out, events in.

The executor is the container's main process (under docker-init), so no
``docker exec`` is needed to start it: it talks to the host over two FIFOs in
the session's host directory, which is bind-mounted into the container
(``ctl.in``: requests, host -> executor; ``ctl.out``: events, executor -> host).
The host opens the read end of ``ctl.out`` before the container starts and
the write end of ``ctl.in`` once the executor said hello (by then the executor
holds ``ctl.in`` open, so the open cannot fail for want of a reader).

End of the session: when the executor and all its runners are gone, the last
writer of ``ctl.out`` is closed and the host reads EOF. Before any writer
appeared, a FIFO read also returns EOF, but ``poll`` reports nothing until a
writer came (and wrote or left), so the first EOF is answered by waiting for
readiness and only an EOF after that counts.

There is no background reader task (a backend's ``start`` and ``close`` need not
run in the same task, so it could not own a task group): whichever coroutine is
waiting for an event becomes the reader, decodes what arrived, files every
event in a mailbox keyed by (kind, id) and wakes the other waiters. Event lines
are short and the data streams never pass here, so the mailbox stays small.
"""

from __future__ import annotations

import contextlib
import logging
import os

import anyio

from sandbox._docker_protocol import Event, LineSplitter, parse_event

__all__ = ["ControlChannel", "ExecutorGoneError"]

_log = logging.getLogger("sandbox.docker")


class ExecutorGoneError(Exception):
    """Raised to waiters when the executor's session ended (EOF, pipe error, container gone)."""


class ControlChannel:
    """Line requests to, and events from, the executor over a pair of FIFOs.

    ``read_fd`` (events) is a non-blocking read end opened before the executor
    starts; the write end (requests) is attached with `attach_writer` once the
    executor is up.
    """

    def __init__(self, read_fd: int) -> None:
        self._rfd: int | None = read_fd
        self._wfd: int | None = None
        self._lines = LineSplitter()
        self._mail: dict[tuple[str, str], Event] = {}
        self._reading = False
        self._delivered = anyio.Event()
        self._send_lock = anyio.Lock()
        #: A writer has been seen (data arrived): from now on EOF means the executor is gone.
        self._connected = False
        #: The last read followed a readiness wait (an EOF now is real even before any data).
        self._polled = False
        self.closed = False

    def attach_writer(self, write_fd: int) -> None:
        """Give the channel the request FIFO's (non-blocking) write end; it owns it from now on."""
        if self.closed:
            os.close(write_fd)
            raise ExecutorGoneError("executor session is closed")
        self._wfd = write_fd

    # --- requests ------------------------------------------------------------
    async def send(self, line: str) -> None:
        """Send one request line (must not contain a newline)."""
        data = memoryview((line + "\n").encode())
        async with self._send_lock:
            while data:
                fd = self._wfd
                if self.closed or fd is None:
                    raise ExecutorGoneError("executor session is closed")
                try:
                    n = os.write(fd, data)
                except BlockingIOError:
                    await anyio.wait_writable(fd)
                    continue
                except OSError as exc:
                    self._mark_closed()
                    raise ExecutorGoneError(f"executor pipe failed: {exc}") from exc
                data = data[n:]

    # --- events --------------------------------------------------------------
    def take(self, kind: str, task_id: str) -> Event | None:
        """Remove and return a filed event, if it arrived."""
        return self._mail.pop((kind, task_id), None)

    def drop_mail(self) -> None:
        """Forget every filed event (a recycled container starts with a clean mailbox).

        Processes in the container can write to the event FIFO; whatever a
        previous task forged there was read before the reset's own reply, so
        dropping the mailbox after that reply leaves nothing of it.
        """
        self._mail.clear()

    async def wait(self, kinds: str, task_id: str) -> Event:
        """Wait for the first event of any kind in ``kinds`` (e.g. ``"SE"``) for ``task_id``; consume it."""
        while True:
            for kind in kinds:
                event = self._mail.pop((kind, task_id), None)
                if event is not None:
                    return event
            if self.closed:
                raise ExecutorGoneError("the executor session ended")
            if self._reading:
                await self._delivered.wait()
                continue
            self._reading = True
            try:
                await self._read_once()
            finally:
                self._reading = False
                done, self._delivered = self._delivered, anyio.Event()
                done.set()

    async def _read_once(self) -> None:
        fd = self._rfd
        if fd is None:
            self._mark_closed()
            return
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            await anyio.wait_readable(fd)
            self._polled = True
            return
        except OSError as exc:
            _log.debug("executor pipe error: %s", exc)
            self._mark_closed()
            return
        if not data:
            if not self._connected and not self._polled:
                # No writer yet (the executor is still starting): poll wakes us
                # when it writes, or when it came and went without a word.
                await anyio.wait_readable(fd)
                self._polled = True
                return
            self._mark_closed()
            return
        self._connected = True
        self._polled = False
        for line in self._lines.feed(data):
            event = parse_event(line)
            if event is None:
                _log.debug("executor noise: %r", line)
                continue
            self._mail[(event.kind, event.id)] = event

    def _mark_closed(self) -> None:
        if self.closed:
            return
        self.closed = True
        for attr in ("_rfd", "_wfd"):
            fd = getattr(self, attr)
            setattr(self, attr, None)
            if fd is None:
                continue
            with contextlib.suppress(Exception):
                anyio.notify_closing(fd)
            with contextlib.suppress(OSError):
                os.close(fd)

    def close(self) -> None:
        """Close both ends (the executor itself is stopped with its container)."""
        self._mark_closed()
