"""The control channel to the in-container executor: requests out, events in.

The channel is the hijacked socket of one ``docker exec`` session. There is no
background reader task (a backend's ``start`` and ``close`` need not run in the
same task, so it could not own a task group): whichever coroutine is waiting for
an event becomes the reader, decodes what arrived, files every event in a
mailbox keyed by (kind, id) and wakes the other waiters. Event lines are short
and the data streams never pass here, so the mailbox stays small.
"""

from __future__ import annotations

import contextlib
import logging
import socket

import anyio

from sandbox._docker_protocol import Event, FrameDecoder, LineSplitter, parse_event

__all__ = ["ControlChannel", "ExecutorGoneError"]

_log = logging.getLogger("sandbox.docker")


class ExecutorGoneError(Exception):
    """Raised to waiters when the executor's session ended (EOF, socket error, container gone)."""


class ControlChannel:
    """Line requests to, and events from, the executor over one exec socket."""

    def __init__(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        self._sock = sock
        self._frames = FrameDecoder()
        self._lines = LineSplitter()
        self._mail: dict[tuple[str, str], Event] = {}
        self._reading = False
        self._delivered = anyio.Event()
        self._send_lock = anyio.Lock()
        self.closed = False
        #: Last lines the executor wrote to its stderr (for error messages).
        self.stderr_tail: list[str] = []

    # --- requests ------------------------------------------------------------
    async def send(self, line: str) -> None:
        """Send one request line (must not contain a newline)."""
        data = memoryview((line + "\n").encode())
        async with self._send_lock:
            while data:
                if self.closed:
                    raise ExecutorGoneError("executor session is closed")
                try:
                    n = self._sock.send(data)
                except BlockingIOError:
                    await anyio.wait_writable(self._sock)
                    continue
                except OSError as exc:
                    self._mark_closed()
                    raise ExecutorGoneError(f"executor socket failed: {exc}") from exc
                data = data[n:]

    # --- events --------------------------------------------------------------
    def take(self, kind: str, task_id: str) -> Event | None:
        """Remove and return a filed event, if it arrived."""
        return self._mail.pop((kind, task_id), None)

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
        try:
            data = self._sock.recv(65536)
        except BlockingIOError:
            await anyio.wait_readable(self._sock)
            return
        except OSError as exc:
            _log.debug("executor socket error: %s", exc)
            self._mark_closed()
            return
        if not data:
            self._mark_closed()
            return
        for stream, payload in self._frames.feed(data):
            if stream == 2:
                text = payload.decode("utf-8", "replace").strip()
                if text:
                    _log.debug("executor stderr: %s", text)
                    self.stderr_tail = (self.stderr_tail + text.splitlines())[-20:]
                continue
            for line in self._lines.feed(payload):
                event = parse_event(line)
                if event is None:
                    _log.debug("executor noise: %r", line)
                    continue
                self._mail[(event.kind, event.id)] = event

    def _mark_closed(self) -> None:
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(Exception):
            anyio.notify_closing(self._sock)
        with contextlib.suppress(OSError):
            self._sock.close()

    def close(self) -> None:
        """Close the socket; the executor sees EOF on stdin and exits."""
        self._mark_closed()
