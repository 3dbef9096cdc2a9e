"""The control channel to the in-container executor: requests out, events in.

The channel is the ``docker attach`` stream of the container's main process
(the executor): requests go to its stdin, events come from its stdout. The
host attaches before the container starts (so the hello cannot be missed) and
holds the only connection; inside the container the stream has no path at
all (see ``executor.sh`` for why ``/proc/<executor>/fd`` is closed to
commands). Exit codes, start and kill acknowledgements therefore come from the
executor alone. The container is created with ``StdinOnce``: when this
connection closes (``close()``, or the owning process dies, even by SIGKILL)
the executor reads EOF and exits, and the daemon removes the container.

Without a TTY the daemon multiplexes stdout and stderr: each frame is an
8-byte header (stream 1 or 2, then a big-endian length) and its payload.
Stdout payloads are event lines; stderr (the executor's and docker-init's
complaints) is kept, bounded, to explain a failed start.

There is no background reader task (a backend's ``start`` and ``close`` need
not run in the same task, so it could not own a task group): whichever
coroutine is waiting for an event becomes the reader, decodes what arrived,
files every event in a mailbox keyed by (kind, id) and wakes the other
waiters. Event lines are short and the data streams never pass here.
"""

from __future__ import annotations

import contextlib
import logging
import os
import struct
from collections import OrderedDict
from dataclasses import dataclass

import anyio
import anyio.lowlevel

from sandbox.docker._protocol import EVENT_LINE_MAX, Event, LineSplitter, parse_event
from sandbox.docker._shown import shown

__all__ = [
    "MAX_NOISE_BYTES",
    "MAX_PENDING_BYTES",
    "MAX_PENDING_EVENTS",
    "MAX_STDERR_BYTES",
    "SEND_TIMEOUT",
    "ChannelBudget",
    "ChannelTimeoutError",
    "ControlChannel",
    "ExecutorGoneError",
    "ExecutorStalledError",
    "FrameDecoder",
]

_log = logging.getLogger("sandbox.docker")
_STDERR_KEEP = 8192
#: Events filed and not yet taken. The executor answers each request once and reports each
#: command's end once, so a few per running command are ever pending; the image's ``/bin/sh``
#: writes this channel, and one that sends events nobody asked for must not grow the host's
#: memory without end (red team round 11): past this the session fails.
MAX_PENDING_EVENTS = 65536
#: Bytes of those events (id and text after it). The count alone left each event as long as a line
#: may be: 65,536 of them at 4 KiB are 256 MiB (red team round 36). An honest executor's pending
#: events are a few short lines per running command: past this the session fails.
MAX_PENDING_BYTES = 8 << 20
#: Bytes on the events' stream that were no event (other lines, runaway lines), over the session.
#: The executor writes nothing else there (its shell's complaints go to stderr); the image's
#: ``/bin/sh`` that floods it keeps the host parsing for as long as it likes (round 36): past
#: this the session fails.
MAX_NOISE_BYTES = 16 << 20
#: Bytes on the executor's stderr (its shell's and docker-init's complaints), over the session. The
#: honest executor sends every fork's and removal's complaints to /dev/null: a few lines at most.
#: Read as fast as they came and only the last 8 KiB kept, a flood there kept a host core busy for
#: every running command's life (round 36's Left, round 37): past this the session fails.
MAX_STDERR_BYTES = 16 << 20
#: Seconds one request may wait for room on the executor's stdin. The honest executor reads a line
#: per loop turn (at most ~1 s for a pid, `executor.sh`), and the attach buffers hold thousands of
#: requests before a write waits at all; an image whose ``/bin/sh`` never reads held every later
#: request of the session for ever (red team round 36, docker2): past this the session fails.
SEND_TIMEOUT = 10.0
#: Events already taken (or discarded) that are remembered, so that the same event sent again is
#: seen as the forgery it is (red team round 13). The oldest are forgotten past this: one sent
#: again after that is an event nobody asked for (filed, and counted by `MAX_PENDING_EVENTS`).
RECENT_TAKEN = 65536


def _size(event: Event) -> int:
    """What a filed event counts against `MAX_PENDING_BYTES`: its id and its text."""
    return len(event.id) + len(event.rest)


class ExecutorGoneError(Exception):
    """Raised to waiters when the executor's session ended (EOF, connection error, container gone)."""


class ExecutorStalledError(ExecutorGoneError):
    """Raised by `ControlChannel.send` when the executor read no request for `SEND_TIMEOUT` (the
    channel is closed; a new container of the same image would stall the same way)."""


@dataclass
class ChannelBudget:
    """What an image's ``/bin/sh`` spent on the channels of its containers, and why one failed.

    Shared by every channel of the image in the process (`_imagebudget`): per channel, an image
    that flooded just under a budget and then ended its own container (or failed a replacement's
    start, or sent a forged line, which ended only the session) got a new container with fresh
    budgets for every exec, and recycling, a batch's next task or a new session fresh ones too
    (red team round 38)."""

    #: Bytes of events' stream lines that were no event (runaway lines included), all channels.
    noise: int = 0
    #: Bytes the executors wrote to stderr, all channels.
    stderr: int = 0
    #: Why a channel stopped believing the image (None: none did): no new container of it is started.
    failure: str | None = None


class ChannelTimeoutError(TimeoutError):
    """Raised when an event asked for does not arrive within its deadline (the channel stays open)."""


class FrameDecoder:
    """Splits docker's multiplexed attach stream into (stream number, payload) pieces.

    A frame's payload is handed on as it arrives, in pieces: a header may announce 4 GiB, and
    nothing waits for (or holds) a whole frame."""

    def __init__(self) -> None:
        self._buf = bytearray()
        #: The stream of the frame being read and how many of its payload bytes are still to come.
        self._kind = 0
        self._left = 0

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        self._buf += data
        out: list[tuple[int, bytes]] = []
        while True:
            if self._left:
                if not self._buf:
                    break
                piece = bytes(self._buf[: self._left])
                del self._buf[: len(piece)]
                self._left -= len(piece)
                out.append((self._kind, piece))
                continue
            if len(self._buf) < 8:
                break
            self._kind = self._buf[0]
            (self._left,) = struct.unpack(">I", self._buf[4:8])
            del self._buf[:8]
        return out


class ControlChannel:
    """Line requests to, and events from, the executor over one attach connection (``fd``, owned);
    what the image spends counts against ``budget`` (its backend's: shared by its containers)."""

    def __init__(self, fd: int, budget: ChannelBudget | None = None) -> None:
        os.set_blocking(fd, False)
        self._fd: int | None = fd
        self._frames = FrameDecoder()
        self._lines = LineSplitter(max_line=EVENT_LINE_MAX)
        self._mail: dict[tuple[str, str], Event] = {}
        #: `_size` of the events in ``_mail`` (at most `MAX_PENDING_BYTES`).
        self._mail_bytes = 0
        #: Noise and stderr bytes so far, this channel's and its backend's earlier ones.
        self.budget = budget if budget is not None else ChannelBudget()
        #: `LineSplitter.dropped` already counted in ``budget.noise``.
        self._dropped_counted = 0
        self._discard: set[tuple[str, str]] = set()
        #: Keys of events taken or discarded, most recent last (at most `RECENT_TAKEN`).
        self._taken: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._reading = False
        self._delivered = anyio.Event()
        self._send_lock = anyio.Lock()
        self._stderr = bytearray()
        self.closed = False
        #: Why the channel was closed from this side because of what the executor sent (None: it was not).
        self.failure: str | None = None
        #: ``"<token> "``: what every event line after the hello starts with (`expect_token`).
        self._mark: str | None = None
        #: The hello was taken: from then on, a line without ``_mark`` is no event.
        self._marked = False

    def expect_token(self, token: str) -> None:
        """Believe no line after the hello unless it starts with ``token`` and a space (stripped).

        The executor gets ``token`` on its stdin before any command exists (`_backend`) and writes
        it before each event after its hello; a line without it is no record of the executor's,
        whoever found a way to write this stream (red team round 51): it is noise, and counts as
        noise. Lines before the hello is taken need none: nothing but the image's shell runs yet
        (the executor reads the token after its hello, so an image that never reads still says
        hello and fails its first request, as since round 36)."""
        self._mark = token + " "

    @property
    def stderr_text(self) -> str:
        """The last few KiB the executor (or docker-init) wrote to stderr, every control and format
        character but the newline escaped: the image's words, shown in errors an operator's
        terminal prints (an escape sequence there sets the clipboard or rewrites the screen)."""
        return shown(self._stderr.decode("utf-8", "replace"), newlines=True)

    # --- requests ------------------------------------------------------------
    async def send(self, line: str) -> None:
        """Send one request line (must not contain a newline) within `SEND_TIMEOUT`.

        Past the deadline, or when the send is cancelled after part of its line went out (the
        next line would be glued to that part), the channel fails closed: `ExecutorGoneError`.
        """
        data = memoryview((line + "\n").encode())
        size = len(data)
        async with self._send_lock:
            deadline = anyio.current_time() + SEND_TIMEOUT
            try:
                while data:
                    fd = self._fd
                    if self.closed or fd is None:
                        raise ExecutorGoneError(self.failure or "executor session is closed")
                    try:
                        n = os.write(fd, data)
                    except BlockingIOError:
                        if anyio.current_time() >= deadline:
                            self._fail(
                                f"the container's executor did not read its requests for {SEND_TIMEOUT:g}s (the "
                                "image's /bin/sh does not read the control channel): the session is closed; use "
                                "an image with a plain POSIX shell",
                                image=False,  # a daemon overloaded long enough looks the same
                            )
                            raise ExecutorStalledError(self.failure or "executor session is closed") from None
                        with anyio.move_on_after(max(0.0, deadline - anyio.current_time())):
                            await anyio.wait_writable(fd)
                        continue
                    except OSError as exc:
                        self._mark_closed()
                        raise ExecutorGoneError(f"executor connection failed: {exc}") from exc
                    data = data[n:]
            except anyio.ClosedResourceError as exc:  # closed while waiting for room
                raise ExecutorGoneError(self.failure or "executor session is closed") from exc
            except BaseException:
                if 0 < len(data) < size and not self.closed:
                    self._fail(
                        "a request to the container's executor was cut off halfway: the session is closed",
                        image=False,  # the host's own cancellation
                    )
                raise

    # --- events --------------------------------------------------------------
    def take(self, kind: str, task_id: str) -> Event | None:
        """Remove and return a filed event, if it arrived."""
        return self._pop((kind, task_id))

    def discard(self, kind: str, task_id: str) -> None:
        """Drop that event now, or when it arrives (a command whose end was already decided)."""
        if self._pop((kind, task_id)) is None:
            self._discard.add((kind, task_id))

    def _pop(self, key: tuple[str, str]) -> Event | None:
        event = self._mail.pop(key, None)
        if event is not None:
            self._mail_bytes -= _size(event)
            self._remember(key)
            if key[0] == "H":
                # The hello is taken: no command runs before this (the host sends its first
                # request after), and every line the executor writes from here on is marked.
                self._marked = self._mark is not None
        return event

    def _remember(self, key: tuple[str, str]) -> None:
        """Note an event as taken: the same (kind, id) arriving again is a forged line."""
        self._taken[key] = None
        if len(self._taken) > RECENT_TAKEN:
            self._taken.popitem(last=False)

    def drop_mail(self) -> None:
        """Forget every filed event (a recycled container starts with a clean mailbox). The noise
        and stderr spent stay spent: they are the backend's (`ChannelBudget`), not a task's."""
        self._mail.clear()
        self._mail_bytes = 0
        self._discard.clear()

    async def wait(self, kinds: str, task_id: str, *, within: float | None = None) -> Event:
        """Wait for the first event of any kind in ``kinds`` (e.g. ``"SE"``) for ``task_id``; consume it.

        A reply to a request (hello, start, kill, reset, ping) is bounded by ``within`` seconds: past it
        `ChannelTimeoutError` says which event never came, instead of a wait that never ends.
        Only a command's exit (``X``) is waited for without one: it comes when the command ends.
        The event is returned with no checkpoint after its taking: a caller must use it before
        its own next one, or a cancellation arriving then loses it (`DockerProcess._receive_exit`).
        """
        if within is None:
            return await self._wait(kinds, task_id)
        try:
            with anyio.fail_after(within):
                return await self._wait(kinds, task_id)
        except TimeoutError as exc:
            raise ChannelTimeoutError(
                f"no {kinds!r} reply for {task_id} from the container's executor within {within:g}s "
                "(the executor is stuck or the daemon is overloaded)"
            ) from exc

    async def _wait(self, kinds: str, task_id: str) -> Event:
        while True:
            for kind in kinds:
                event = self._pop((kind, task_id))
                if event is not None:
                    return event
            if self.closed:
                raise ExecutorGoneError(self.failure or "the executor session ended")
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
        fd = self._fd
        if fd is None:
            self._mark_closed()
            return
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            try:
                await anyio.wait_readable(fd)
            except anyio.ClosedResourceError:
                self._mark_closed()
            return
        except OSError as exc:
            _log.debug("executor connection error: %s", exc)
            self._mark_closed()
            return
        if not data:
            self._mark_closed()
            return
        for stream, payload in self._frames.feed(data):
            if stream != 1:
                self._stderr += payload
                del self._stderr[:-_STDERR_KEEP]
                self.budget.stderr += len(payload)
                continue
            for line in self._lines.feed(payload):
                mark = self._mark
                if mark is not None and line.startswith(mark):
                    line = line[len(mark) :]
                elif self._marked:  # not the executor's: no event, whatever it looks like
                    _log.debug("unmarked line on the events' stream: %r", line[:200])
                    self.budget.noise += len(line) + 1
                    continue
                event = parse_event(line)
                if event is None:
                    _log.debug("executor noise: %r", line[:200])
                    self.budget.noise += len(line) + 1
                    continue
                key = (event.kind, event.id)
                if key in self._mail or key in self._taken:
                    # The executor answers each request once and reports each end once: a second
                    # line would replace (or follow) the true one; believe neither (round 13).
                    self._fail(
                        f"the container's executor sent the {shown(event.kind)} event for "
                        f"{shown(event.id[:80])} twice (the image's /bin/sh writes the control "
                        "channel): nothing it says is believed any more and the session is closed; "
                        "use an image with a plain POSIX shell"
                    )
                    return
                if key in self._discard:
                    self._discard.discard(key)
                    self._remember(key)
                    continue
                if len(self._mail) >= MAX_PENDING_EVENTS and key not in self._mail:
                    self._fail(
                        f"the container's executor sent more than {MAX_PENDING_EVENTS:,} events nobody asked "
                        "for (the image's /bin/sh writes the control channel): the session is closed; "
                        "use an image with a plain POSIX shell"
                    )
                    return
                if self._mail_bytes + _size(event) > MAX_PENDING_BYTES:
                    self._fail(
                        f"the container's executor sent more than {MAX_PENDING_BYTES >> 20} MiB of events nobody "
                        "asked for (the image's /bin/sh writes the control channel): the session is closed; "
                        "use an image with a plain POSIX shell"
                    )
                    return
                self._mail[key] = event
                self._mail_bytes += _size(event)
        self.budget.noise += self._lines.dropped - self._dropped_counted
        self._dropped_counted = self._lines.dropped
        if self.budget.noise > MAX_NOISE_BYTES:
            self._fail(
                f"the container's executor wrote more than {MAX_NOISE_BYTES >> 20} MiB that were no event "
                "on the control channel (the image's /bin/sh writes it): the session is closed; use an "
                "image with a plain POSIX shell"
            )
            return
        if self.budget.stderr > MAX_STDERR_BYTES:
            self._fail(
                f"the container's executor wrote more than {MAX_STDERR_BYTES >> 20} MiB to its stderr (the "
                "image's /bin/sh or docker-init complains without end): the session is closed; use an image "
                "with a plain POSIX shell"
            )
            return
        # A checkpoint per read: with data always ready (an image that floods the channel) no read
        # would ever wait, and this loop held the host's event loop, every other session, timer
        # and deadline (the hello's too) with it, for as long as the flood lasted (round 36).
        await anyio.lowlevel.checkpoint()

    def distrust(self, reason: str) -> None:
        """Close the channel for a line the host found forged (a pid, an exit, a kill count that is
        none): as for the floods above, the backend starts no new container of the image."""
        self._fail(reason)

    def _fail(self, reason: str, *, image: bool = True) -> None:
        """Close the channel for what the executor sent: every waiter gets ``reason``. ``image``:
        only the image's ``/bin/sh`` does this (a flood, a forged line), so ``budget`` keeps it."""
        _log.warning("%s", reason)
        self.failure = reason
        if image and self.budget.failure is None:
            self.budget.failure = reason
        self._mail.clear()
        self._mail_bytes = 0
        self._mark_closed()

    def _mark_closed(self) -> None:
        if self.closed:
            return
        self.closed = True
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(Exception):
            anyio.notify_closing(fd)
        with contextlib.suppress(OSError):
            os.close(fd)

    def close(self) -> None:
        """Close the connection: the executor reads EOF and exits, and the container with it."""
        self._mark_closed()
