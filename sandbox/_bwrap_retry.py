"""Transparent retry of a bwrap whose sandbox setup lost a race with the host's mounts.

``--ro-bind / /`` remounts every submount of the host read-only. When a mount
disappears meanwhile (a Docker container stopping, an automount expiring),
bwrap fails before the command starts: ``bwrap: Can't bind mount /oldroot/ on
/newroot/: Unable to apply mount flags: remount "…": Invalid argument``.
Observed here about once in 200 starts while containers churn. The same goes
for a host socket that was listed for masking and is gone (with its directory)
before bwrap covers it: ``Can't create file at …`` / ``Can't mkdir parents for …``.
That one is retried without counting against `MAX_RETRIES` when the caller's
``drop_vanished`` removed at least one mask whose socket is gone
(`sandbox._hostsockets.StartMasks`): each such retry has fewer masks, so host
programs removing sockets cannot make a start fail, however fast they churn.
Nor when the socket is bound again at its path before the failure is judged
(``rebound``: bwrap's message names the mask and a socket is there again): such
a retry keeps the mask and counts against a budget of its own (red team round 53).

Detection never guesses from output alone: bwrap is started with
``--json-status-fd``, which reports ``exit-code`` only when the command itself
ran. A process that exits 1 without that report, with a mount-race message as
its first output, never started the command, so it is started again. Until
that is known, a first output chunk beginning ``bwrap: `` is held back, so the
caller never sees a failed attempt's bytes (or its EOF). bwrap writes its message
in pieces (``bwrap: ``, then the text): once such an attempt failed, the rest of
that stream is read before the message is judged. A command's stdin is kept
(up to one pipe's worth, `REPLAY_MAX`) and written again to a new attempt: a
failed attempt never read it. What goes beyond that bound waits until the
attempt is past its set-up (`sandbox._bwrap_init.SetupProbe`: bwrap has read its
seccomp program, after every mount) or proved it ran, so a start that lost a race
is retried whatever the size of its stdin (it failed once in CI with 3 MB).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Awaitable, Callable

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

from sandbox._bwrap_init import PinnedBwrapProcess, init_pid, kill_init, peek
from sandbox._hostsockets import VANISHED_MASK
from sandbox.base import ExitStatus, SandboxProcess

__all__ = [
    "MAX_RETRIES",
    "REPLAY_MAX",
    "TRANSIENT",
    "RetryingBwrapProcess",
    "Spawn",
    "lost_mount_race",
    "setup_failure",
]

_log = logging.getLogger(__name__)

#: Extra attempts after a failed setup.
MAX_RETRIES = 3
#: stdin kept for a new attempt: a fresh pipe takes this much without a reader (Linux's default
#: pipe size). Not for a uid past ``fs.pipe-user-pages-soft`` (a non-root caller's command can put
#: it there: its pipes get 8 KiB): the write then waits for the command, without blocking the
#: event loop (`FdSendStream`), and ends with the command (red team, round 15).
REPLAY_MAX = 1 << 16
#: How long stdin past `REPLAY_MAX` waits for its attempt's set-up (bwrap's report came in
#: `sandbox._bwrap_init.PIN_TIMEOUT_S`); then it is written anyway, and that start is not retried.
_SETUP_WAIT_S = 20.0
_SETUP_POLL_S = 0.002
#: A failed attempt's message after its first piece: at most this much, this long.
_REST_MAX = 1 << 16
_REST_WAIT_S = 1.0
TRANSIENT = (
    b"Unable to apply mount flags",
    b"Can't bind mount /oldroot/",
    # A host socket listed for masking went away (with its directory) before bwrap covered it
    # (counted only when no mask could be dropped: sandbox._hostsockets.StartMasks).
    *VANISHED_MASK,
)


def lost_mount_race(output: bytes | str) -> bool:
    """Whether what bwrap printed is one of the transient mount-race failures (worth a retry)."""
    data = output.encode("utf-8", "replace") if isinstance(output, str) else output
    return any(t in data for t in TRANSIENT)


#: Starts one bwrap attempt: returns the process and the read end of its json-status fd.
Spawn = Callable[[], Awaitable[tuple[SandboxProcess, int]]]


class _Attempt:
    def __init__(self, proc: SandboxProcess, status_fd: int) -> None:
        self.proc = proc
        self.status_fd = status_fd
        self.started = False  # some output proved the command ran
        self.held: list[bytes] = []
        self.held_by: str | None = None  # the stream whose first chunk is held
        #: The status pipe read early (`sandbox._bwrap_init.pin_init`, `RetryingBwrapProcess.kill`).
        self.report = proc.status_prefix if isinstance(proc, PinnedBwrapProcess) else b""
        self.decided: bool | None = None  # True: retried; False: final
        #: Set when this final attempt failed in bwrap's own set-up (`RetryingBwrapProcess._settle`).
        self.failure: str | None = None
        #: Set once a first chunk was held or every stream ended: bwrap's message, if any, is
        #: in ``held`` (`RetryingBwrapProcess._settle` waits for it).
        self.message = anyio.Event()
        self.ended: set[str] = set()  # the streams whose EOF was seen
        self.streams = 2 if proc.stderr is not None else 1


class RetryingBwrapProcess(SandboxProcess):
    """A bwrap process that restarts itself when its sandbox setup hit a mount race."""

    def __init__(
        self,
        spawn: Spawn,
        first: tuple[SandboxProcess, int],
        *,
        may_retry: bool,
        drop_vanished: Callable[[], bool] | None = None,
        rebound: Callable[[bytes], bool] | None = None,
    ) -> None:
        self._spawn = spawn
        #: Drops the masks whose socket is gone from the next attempt's flags; True if it dropped any.
        self._drop_vanished = drop_vanished
        #: Whether bwrap's message names a mask whose socket was bound again (a free retry, bounded
        #: by the caller: `sandbox._hostsockets.StartMasks.rebound`).
        self._rebound = rebound
        self._attempt = _Attempt(*first)
        self._may_retry = may_retry
        self._retries = 0
        self._killed = False
        #: Set once `wait` returned: the command ended (`end_for` leaves it alone then).
        self.finished = False
        self._ended_why: str | None = None
        self._lock = anyio.Lock(fast_acquire=True)  # uncontended (the usual case): no extra loop round
        self.stdout = _GatedStream(self, "stdout")
        self.stderr = _GatedStream(self, "stderr") if first[0].stderr is not None else None
        self.stdin: _ReplayedStdin | None = _ReplayedStdin(self) if first[0].stdin is not None else None

    @property
    def pid(self) -> int | None:
        return self._attempt.proc.pid

    async def wait(self) -> ExitStatus:
        while True:
            attempt = self._attempt
            status = await attempt.proc.wait()
            if not await self._settle(attempt):
                self.finished = True
                failure = attempt.failure or self._ended_why
                if failure is not None:  # shellrt's sandbox failed or ended it, not the command
                    return status.model_copy(update={"sandbox_failure": failure})
                return status

    async def end_for(self, why: str) -> None:
        """Kill it, its status reporting ``why`` as a sandbox failure: a place appeared that its
        masks, worked out at its start, do not hide (red team, round 29)."""
        if not self.finished:
            self._ended_why = why
            await self.kill()

    async def kill(self) -> None:
        self._killed = True
        attempt = self._attempt
        # bwrap's init first, by the pid it reported: the command may have patched it not to die
        # with the outer bwrap (`sandbox._bwrap_init`); its namespace's processes die with it.
        with contextlib.suppress(OSError):
            attempt.report += peek(attempt.status_fd)
        pid = init_pid(attempt.report)
        if pid is not None:
            kill_init(pid, attempt.proc.pid)
        await attempt.proc.kill()

    async def past_setup(self) -> None:
        """Return once the current attempt is past its sandbox set-up (so no mount race can fail
        it any more), proved it ran, or failed for good; a retry meanwhile (settled by the output
        readers) is waited for in turn. Without a probe (not a pinned bwrap) at once."""
        with anyio.move_on_after(_SETUP_WAIT_S):
            while True:
                attempt = self._attempt
                if attempt.started or attempt.decided is False or self._killed:
                    return
                probe = getattr(attempt.proc, "past_setup", None)
                if probe is None:
                    return
                if probe():
                    attempt.started = True  # the command runs: its "bwrap: " output is its own
                    return
                await anyio.sleep(_SETUP_POLL_S)

    async def _settle(self, attempt: _Attempt) -> bool:
        """Decide (once) whether ``attempt`` failed its setup and was replaced; True if so."""
        if attempt.decided is not None:
            return attempt.decided
        async with self._lock:
            if attempt.decided is not None:
                return attempt.decided
            status = await attempt.proc.wait()
            report, attempt.status_fd = attempt.report + _drain(attempt.status_fd), -1
            failed = (
                status.exit_code == 1
                and b'"exit-code"' not in report  # the command never ran
                and not attempt.started
                and not self._killed
            )
            may = failed and self._may_retry and (self.stdin is None or self.stdin.replayable)
            # Still before its seccomp program was read (after every mount): bwrap's own failure.
            own = failed and not _past_setup(attempt.proc)
            if (may or own) and attempt.held_by is None:
                # With stderr apart, stdout's EOF may settle the attempt before bwrap's message
                # on stderr was read (its task holds it): wait for it, or for that stream's end.
                with anyio.move_on_after(_REST_WAIT_S):
                    await attempt.message.wait()
            if may or own:
                await self._read_rest(attempt)
            said = b"".join(attempt.held)
            # A mask whose socket is gone, dropped: a retry with fewer masks (bounded by their number).
            # Not judged by the text alone: with stderr apart, stdout's EOF may settle the attempt
            # before the message arrived; the command never ran either way.
            fewer_masks = may and self._drop_vanished is not None and self._drop_vanished()
            # A mask's socket bound again at its path (gone when bwrap looked): host churn, not a race.
            free = fewer_masks or (may and self._rebound is not None and self._rebound(said))
            retry = free or (may and lost_mount_race(said) and self._retries < MAX_RETRIES)
            if retry:
                if not free:
                    self._retries += 1
                # Shielded: done once for every reader, whichever of them (under a deadline of its
                # own) settles it; a start waits for bwrap's report (`sandbox._bwrap_init.pin_init`).
                try:
                    with anyio.CancelScope(shield=True):
                        self._attempt = _Attempt(*await self._spawn())
                except Exception:  # cannot even start again: this attempt's failure is the answer
                    _log.warning("bwrap: a failed start could not be retried", exc_info=True)
                    retry = False
                else:
                    if self.stdin is not None:
                        await self.stdin.catch_up()
            if own and not retry:
                attempt.failure = setup_failure(said)
            attempt.decided = retry
            return retry

    async def _read_rest(self, attempt: _Attempt) -> None:
        """The rest of a failed attempt's held stream (bwrap has exited; its EOF is due now)."""
        if attempt.held_by is None:
            return
        stream = self._stream(attempt, attempt.held_by)
        size = sum(map(len, attempt.held))
        with anyio.move_on_after(_REST_WAIT_S):
            while size < _REST_MAX:
                try:
                    chunk = await stream.receive()
                except (anyio.EndOfStream, anyio.ClosedResourceError):
                    break
                attempt.held.append(chunk)
                size += len(chunk)

    def _stream(self, attempt: _Attempt, name: str) -> ByteReceiveStream:
        stream = attempt.proc.stdout if name == "stdout" else attempt.proc.stderr
        assert stream is not None
        return stream


class _GatedStream(ByteReceiveStream):
    """One output stream across attempts; holds a suspicious first chunk until the attempt is settled."""

    def __init__(self, owner: RetryingBwrapProcess, name: str) -> None:
        self._owner = owner
        self._name = name
        self._pending: bytes | None = None
        self._first_of: _Attempt | None = None
        #: A held first chunk whose attempt was not settled yet when a receive got
        #: cancelled: settled (and handed out, or dropped) by the next receive.
        self._unsettled: tuple[_Attempt, bytes] | None = None

    async def receive(self, max_bytes: int = 65536) -> bytes:
        owner = self._owner
        while True:
            if self._pending is not None:
                data, self._pending = self._pending, None
                return data
            if self._unsettled is not None:
                held_by, data = self._unsettled
                retried = await owner._settle(held_by)
                self._unsettled = None
                if retried:
                    await owner._stream(held_by, self._name).aclose()
                    continue
                return _handed(held_by, self._name, data)
            attempt = owner._attempt
            stream = owner._stream(attempt, self._name)
            first = self._first_of is not attempt
            try:
                data = await stream.receive(max_bytes)
            except anyio.EndOfStream:
                attempt.ended.add(self._name)
                if len(attempt.ended) >= attempt.streams:
                    attempt.message.set()
                if attempt.started or attempt.decided is False:
                    raise
                if await owner._settle(attempt):
                    await stream.aclose()
                    continue  # a new attempt replaced this one
                raise
            # Only now: a receive cancelled before any data must not make the next one "not first".
            self._first_of = attempt
            if attempt.started or not first or attempt.decided is False:
                attempt.started = True
                return data
            if not data.startswith(b"bwrap: "):
                attempt.started = True
                return data
            if attempt.held_by is None:
                attempt.held_by = self._name
            attempt.held.append(data)
            attempt.message.set()
            self._unsettled = (attempt, data)
            retried = await owner._settle(attempt)
            self._unsettled = None
            if retried:
                await stream.aclose()
                continue
            return _handed(attempt, self._name, data)

    async def aclose(self) -> None:
        await self._owner._stream(self._owner._attempt, self._name).aclose()


class _ReplayedStdin(ByteSendStream):
    """The command's stdin across attempts: what was sent is written again to a new attempt."""

    def __init__(self, owner: RetryingBwrapProcess) -> None:
        self._owner = owner
        self._kept: list[bytes] = []
        self._size = 0
        self.replayable = True  # all that was sent is kept
        self._closed = False
        self._fed: _Attempt = owner._attempt  # the attempt whose pipe got ``_kept[: _count]``
        self._count = 0
        self._lock = anyio.Lock(fast_acquire=True)

    def _stdin(self, attempt: _Attempt) -> ByteSendStream:
        stdin = attempt.proc.stdin
        assert stdin is not None
        return stdin

    async def _feed(self) -> None:
        """Bring the current attempt's pipe up to date (under ``_lock``)."""
        attempt = self._owner._attempt
        if attempt is not self._fed:
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await self._stdin(self._fed).aclose()  # a failed attempt's pipe
            self._fed, self._count = attempt, 0
        while self._count < len(self._kept):
            await self._stdin(attempt).send(self._kept[self._count])
            self._count += 1
        if self._closed:
            await self._stdin(attempt).aclose()

    async def catch_up(self) -> None:
        """A new attempt replaced a failed one: write it what was sent (and its EOF) again."""
        async with self._lock:
            try:
                await self._feed()
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                pass  # that attempt failed too: settled (and caught up) in turn

    async def send(self, item: bytes) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        kept = self.replayable and self._size + len(item) <= REPLAY_MAX
        if not kept and self.replayable:
            # Not kept: written only to an attempt past its set-up (outside the lock: a retry's
            # `catch_up` takes it), so a start that lost a mount race is still retried.
            await self._owner.past_setup()
        if kept:
            self._kept.append(item)
            self._size += len(item)
        else:
            self.replayable = False  # too much to write again without a reader: no retry
        try:
            async with self._lock:
                await self._feed()
                if not kept:
                    await self._stdin(self._owner._attempt).send(item)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            if not kept:
                raise
            # Kept: a command that stopped reading (its business), or an attempt that failed
            # its setup, whose successor gets it all (`catch_up`).

    async def aclose(self) -> None:
        self._closed = True
        try:
            async with self._lock:
                await self._feed()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            # The command is gone or stopped reading (a successor is caught up): our end closed.
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await self._stdin(self._fed).aclose()


def _past_setup(proc: SandboxProcess) -> bool:
    """Whether ``proc`` got past its sandbox set-up; True when it cannot tell (not a pinned bwrap):
    its exit is then left the command's, as before."""
    probe = getattr(proc, "past_setup", None)
    return probe is None or bool(probe())


def setup_failure(said: bytes) -> str:
    """The `ExitStatus.sandbox_failure` of a bwrap that failed before its command: its message."""
    text = said.decode(errors="replace").strip()[:2000] or "bwrap exited 1 without a message"
    return (
        "the sandbox (bwrap) could not be set up, so the command did not run; this is shellrt's "
        f"failure, not the command's: {text}"
    )


def _handed(attempt: _Attempt, name: str, first: bytes) -> bytes:
    """What a stream hands out for its held first chunk of a final attempt: with the rest of the
    message read while judging it (`RetryingBwrapProcess._read_rest`), when it held that one."""
    return b"".join(attempt.held) if attempt.held_by == name else first


def _drain(fd: int) -> bytes:
    """Everything bwrap wrote to its json-status fd (it has exited), then close it (-1: drained)."""
    if fd < 0:
        return b""
    try:
        return peek(fd)
    finally:
        os.close(fd)
