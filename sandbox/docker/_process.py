"""A command running under the container's executor, and the executor session it belongs to.

`DockerProcess` owns its wait and its kill: both go through the
`ExecutorSession` that started it (the control channel of one container
incarnation), never through the backend's private state. A session that ends
(the executor died, the container was killed or removed, the backend closed or
reset) resolves every command it still holds at once, with a status that says
so (`ExitStatus.sandbox_failure`) unless shellrt itself ended them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable

import anyio

from sandbox.base import ExitStatus, SandboxProcess
from sandbox.docker._channel import ControlChannel, ExecutorGoneError
from sandbox.docker._fifo import FifoReceiveStream, FifoSendStream
from sandbox.docker._hostpid import host_pid
from sandbox.docker._protocol import PID_MAX, Event, parse_exit, parse_number

__all__ = ["KILL_GRACE", "DockerProcess", "ExecutorSession"]

#: How long a kill may take inside the container before the host replaces the container.
KILL_GRACE = 5.0
KILLED = ExitStatus(exit_code=137, signal=9)


class ExecutorSession:
    """One executor (one container incarnation): its channel and the commands it runs.

    ``on_kill_failed`` is the backend's last resort when a kill does not
    finish in time (it replaces the container, which ends this session).
    """

    def __init__(
        self,
        channel: ControlChannel,
        container_id: str,
        on_kill_failed: Callable[[ExecutorSession, str], Awaitable[None]],
    ) -> None:
        self.channel = channel
        self.container_id = container_id
        self.procs: dict[str, DockerProcess] = {}
        self._on_kill_failed = on_kill_failed
        #: Why the session ended (None while it runs).
        self.ended: str | None = None

    @property
    def alive(self) -> bool:
        return self.ended is None and not self.channel.closed

    def end(self, reason: str, *, killed: bool) -> None:
        """Close the channel and resolve every command still held (``killed``: shellrt ended them)."""
        if self.ended is None:
            self.ended = reason
        self.channel.close()
        status = KILLED if killed else ExitStatus(exit_code=255, sandbox_failure=reason)
        for proc in list(self.procs.values()):
            proc._resolve(status)
        self.procs.clear()

    async def kill_failed(self, reason: str) -> None:
        await self._on_kill_failed(self, reason)


class DockerProcess(SandboxProcess):
    """A command running under the container's executor.

    ``container_pid`` is its pid inside the container (also its process group and
    session id); ``pid`` is the same process seen from the host.
    """

    def __init__(
        self,
        session: ExecutorSession,
        task_id: str,
        container_pid: int,
        stdout: FifoReceiveStream,
        stderr: FifoReceiveStream | None,
        stdin: FifoSendStream | None,
    ) -> None:
        self._session = session
        self.task_id = task_id
        self.container_pid = container_pid
        self.stdout = stdout
        self.stderr = stderr
        self.stdin = stdin
        self._stdin_fifo = stdin
        self._host_pid: int | None = None
        self._status: ExitStatus | None = None
        self._done = anyio.Event()
        self._wait_lock = anyio.Lock()
        self._kill_lock = anyio.Lock()
        self._killed = False
        session.procs[task_id] = self

    @property
    def pid(self) -> int | None:
        """Host pid of the command (the daemon is local), resolved on first use; None once gone."""
        if self._host_pid is None and self._status is None and self._session.alive:
            self._host_pid = host_pid(self._session.container_id, self.container_pid)
        return self._host_pid

    @property
    def returncode(self) -> int | None:
        """Exit code once known (None while running or not yet waited for)."""
        return None if self._status is None else self._status.exit_code

    def _resolve(self, status: ExitStatus) -> None:
        if self._status is None:
            self._status = status
            self._session.procs.pop(self.task_id, None)
            if self._stdin_fifo is not None:
                self._stdin_fifo.close()
            self._done.set()

    async def wait(self) -> ExitStatus:
        async with self._wait_lock:
            if self._status is None:
                await self._receive_exit()
            assert self._status is not None
            return self._status

    async def _receive_exit(self) -> None:
        session = self._session
        channel = session.channel

        async def receive(scope: anyio.CancelScope) -> None:
            try:
                event = await channel.wait("X", self.task_id)
            except ExecutorGoneError:
                pass  # resolved below
            else:
                # Resolved here, before any checkpoint: the event left the mailbox, and a
                # cancellation of our caller arriving now (a timeout, an output limit) would
                # otherwise drop it and leave every later wait() hanging for an exit already told.
                self._resolve_exit(event)
            scope.cancel()

        async def decided(scope: anyio.CancelScope) -> None:
            # A kill can decide the end (KILLED) and discard the exit event this waits for:
            # then stop waiting for it, or a waiter would hang for ever.
            await self._done.wait()
            scope.cancel()

        async with anyio.create_task_group() as tg:
            tg.start_soon(receive, tg.cancel_scope)
            tg.start_soon(decided, tg.cancel_scope)
        if self._status is not None:
            return
        # The session ended: `end` resolved us (killed or failed); if not, say it plainly.
        reason = (
            session.ended
            or session.channel.failure
            or "the container's executor is gone (the container died or was removed)"
        )
        self._resolve(ExitStatus(exit_code=255, sandbox_failure=reason))

    def _resolve_exit(self, event: Event) -> None:
        try:
            rc, oom, cwd, signalled = parse_exit(event)
        except ValueError as exc:  # a forged line: nothing that executor says is believed any more
            reason = f"the container's executor sent a {exc}"
            self._session.channel.distrust(reason)
            self._session.end(reason, killed=False)
            return
        signal = rc - 128 if signalled and 128 < rc < 160 else None
        self._resolve(ExitStatus(exit_code=rc, signal=signal, oom_killed=oom, cwd=cwd))

    async def kill(self) -> None:
        async with self._kill_lock:
            if self._killed:
                return
            self._killed = True
            session = self._session
            if not session.alive:
                return
            if self._status is not None:
                # Its exit was told (X): the helper reports it only once it has swept everything
                # the command left (priv.c, a subreaper), and the runner has reaped the helper, so
                # its pid may name another command's helper by now: a K by it killed that
                # command's whole session (red team round 22). Nothing is left to kill.
                return
            try:
                with anyio.fail_after(KILL_GRACE):
                    await session.channel.send(f"K {self.task_id} {self.container_pid}")
                    ack = await session.channel.wait("K", self.task_id)
            except ExecutorGoneError:
                return
            except TimeoutError:
                await session.kill_failed(f"the kill of a command did not finish within {KILL_GRACE:g}s")
                self._resolve(KILLED)
                return
            count = parse_number(ack.rest, PID_MAX)
            if (
                count is None
            ):  # sh counts in ASCII digits: a forged line ends the session, and the tree with it
                reason = f"the container's executor answered a kill with {ack.rest[:80]!r}, not a count"
                session.channel.distrust(reason)
                session.end(reason, killed=True)
                return
            if count and self._status is None:
                # Processes of the command were still running and were killed: whatever the
                # first process's own exit code (a fork bomb's parent exits 0 at once), the
                # command ended by our kill.
                session.channel.discard("X", self.task_id)
                self._resolve(KILLED)
                return
            # The tree is gone; the runner's exit report follows at once.
            with anyio.move_on_after(KILL_GRACE), contextlib.suppress(Exception):
                await self.wait()
