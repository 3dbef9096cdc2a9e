"""Kill a per-command bwrap's own init (pid 1 of the command's pid namespace) from the host.

bwrap's init is dumpable and runs as the command's uid: a command may write its memory through
``/proc/1/mem`` (seccomp stops ``ptrace`` and ``process_vm_writev``, not that file) and make it
call ``prctl(PR_SET_PDEATHSIG, 0)`` and never return, with its environment (the run marker)
overwritten. Killing the outer bwrap then left the namespace, and every process in it, running
(red team, round 12). SIGKILL to a namespace's init from the host cannot be caught or undone,
and ends every process of the namespace: the kill path sends it to the pid bwrap reported.

The same patch can also *end* the command: write its exit status to the eventfd the outer bwrap
waits on, close its stdio, and pause. The outer bwrap then exited as after any command, the host
ran its post-command checks, and the namespace lived on, its processes free to plant a git hook
after the check (red team, round 15). So every per-command bwrap's init is pinned with a pidfd
before the command can run (`pin_init`: bwrap reports the init's pid right after ``clone``, and
the sandbox reads its seccomp program, which the host writes only after the pin, before it
starts the command), and `PinnedBwrapProcess.wait` kills it and waits until it is gone -- after
every process of its namespace -- before it reports the command's end.
"""

from __future__ import annotations

import array
import contextlib
import fcntl
import json
import os
import select
import signal
import termios
from collections.abc import Callable

import anyio

from sandbox.base import ExitStatus, SandboxProcess

#: How long bwrap may take to report its init (it does right after ``clone``, before the set-up).
PIN_TIMEOUT_S = 20.0
#: How long a killed init may take to be gone, with every process of its namespace.
END_TIMEOUT_S = 10.0


def init_pid(report: bytes) -> int | None:
    """The ``child-pid`` of bwrap's ``--json-status-fd`` report (one JSON object a line)."""
    for line in report.splitlines():
        with contextlib.suppress(ValueError):
            data = json.loads(line)
            if isinstance(data, dict) and isinstance(data.get("child-pid"), int):
                return int(data["child-pid"])
    return None


def peek(fd: int) -> bytes:
    """What is in the status pipe now, without waiting (the caller keeps it for the final report)."""
    if fd < 0:
        return b""
    chunks: list[bytes] = []
    os.set_blocking(fd, False)
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def kill_init(pid: int, parent: int | None) -> bool:
    """SIGKILL ``pid`` when it is still ``parent``'s child (the outer bwrap has not reaped it, so
    the pid is not reused: checked through a pidfd, which pins it); True if sent."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return False  # gone already: its namespace with it
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            ppid = int(stat.read().rsplit(b")", 1)[1].split()[1])
        if parent is not None and ppid != parent:
            return False
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        return True
    except (OSError, ValueError, IndexError):
        return False
    finally:
        os.close(pidfd)


class InitPin:
    """A pidfd on one per-command bwrap's init, opened while it was surely that init."""

    def __init__(self, pidfd: int | None = None) -> None:
        self._pidfd = pidfd
        self._ended: anyio.Event | None = None  # `end` in progress or done: the others wait for it

    @property
    def pinned(self) -> bool:
        return self._pidfd is not None

    def kill(self) -> None:
        """SIGKILL the init (nothing if it is gone: the pidfd pins it, a reused pid is never hit)."""
        if self._pidfd is not None:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)

    async def end(self) -> None:
        """Kill the init and wait until it is gone. A namespace's init is gone only after every
        other process of its namespace is (the kernel kills and reaps them first)."""
        if self._ended is not None:  # `kill` and `wait` may both end it, at once
            await self._ended.wait()
            return
        fd = self._pidfd
        if fd is None:
            return
        self._ended = anyio.Event()
        try:
            if not _exited(fd):
                self.kill()  # usually gone already: the init exits right after its command
                with anyio.move_on_after(END_TIMEOUT_S):
                    await anyio.wait_readable(fd)
        finally:
            self.close()
            self._ended.set()

    def close(self) -> None:
        fd, self._pidfd = self._pidfd, None
        if fd is not None:
            os.close(fd)


def _exited(pidfd: int) -> bool:
    """Whether the pidfd's process exited (a pidfd is readable then). ``poll``, not ``select``:
    a long-lived owner's descriptors pass 1024, where ``select`` raises (CI found it)."""
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    return bool(poller.poll(0))


def _open_init(report: bytes) -> int | None:
    """A pidfd on the ``child-pid`` of ``report``, checked to be in the ``pid-namespace`` bwrap
    reported with it (a pid reused meanwhile is in another), or None (gone: nothing runs there)."""
    for line in report.splitlines():
        with contextlib.suppress(ValueError):
            data = json.loads(line)
            if isinstance(data, dict) and isinstance(data.get("child-pid"), int):
                pid, ns = int(data["child-pid"]), data.get("pid-namespace")
                try:
                    pidfd = os.pidfd_open(pid)
                except OSError:
                    return None
                try:
                    if os.readlink(f"/proc/{pid}/ns/pid") == f"pid:[{ns}]":
                        return pidfd
                except OSError:
                    pass
                os.close(pidfd)
                return None
    return None


async def pin_init(status_fd: int) -> tuple[InitPin, bytes]:
    """Read bwrap's ``--json-status-fd`` up to its first report (the init's pid and namespaces)
    and pin that init; returns the pin and the bytes read (the caller keeps them for the final
    report). Not pinned: bwrap failed first (EOF), the init is gone, or no report came in time."""
    os.set_blocking(status_fd, False)
    data = b""
    with anyio.move_on_after(PIN_TIMEOUT_S):
        while b"\n" not in data:
            try:
                chunk = os.read(status_fd, 4096)
            except BlockingIOError:
                await anyio.wait_readable(status_fd)
                continue
            if not chunk:
                break
            data += chunk
    return InitPin(_open_init(data) if b"\n" in data else None), data


class SetupProbe:
    """Whether a per-command bwrap is past its sandbox set-up, from the host.

    bwrap reads its ``--seccomp`` program only after every mount (and after ``--block-fd``):
    a host copy of that pipe's read end shows the program still unread (``FIONREAD``) until
    then. Once it is read, no mount race can fail the start any more (`sandbox._bwrap_retry`
    holds stdin it could not replay until then). Only a program written to the pipe says so:
    an unpinned start gets none, and fails before its command.
    """

    def __init__(self, read_end: int) -> None:
        self._fd: int | None = read_end
        #: Set once the program is in the pipe (the start was pinned).
        self.written = False

    def past_setup(self) -> bool:
        fd = self._fd
        if fd is None or not self.written:
            return False
        unread = array.array("i", [0])
        try:
            fcntl.ioctl(fd, termios.FIONREAD, unread)
        except OSError:
            return False
        return unread[0] == 0

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


class PinnedBwrapProcess(SandboxProcess):
    """A per-command bwrap whose end is its namespace's end: `wait` returns once the init it
    pinned (`pin_init`) is gone, whatever the command made of that init."""

    def __init__(
        self,
        proc: SandboxProcess,
        pin: InitPin,
        status_prefix: bytes,
        probe: SetupProbe | None = None,
        on_end: Callable[[], None] | None = None,
    ) -> None:
        self._proc = proc
        self._pin = pin
        self._probe = probe
        #: Run once (in a thread) when the namespace is gone: what the command had is released.
        self._on_end = on_end
        self._past_setup = False
        #: What `pin_init` read of the json status (the rest stays in the pipe).
        self.status_prefix = status_prefix
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.stdin = proc.stdin

    @property
    def pid(self) -> int | None:
        return self._proc.pid

    def past_setup(self) -> bool:
        """Whether the sandbox set-up is over (`SetupProbe`): the command ran or is about to."""
        if not self._past_setup and self._probe is not None and self._probe.past_setup():
            self._past_setup = True
            self._close_probe()  # known for good
        return self._past_setup

    async def wait(self) -> ExitStatus:
        try:
            status = await self._proc.wait()
            self.past_setup()  # known for good now: the probe closes below (`_bwrap_retry` asks after)
            await self._pin.end()
            await self._ended()
            return status
        finally:
            self._close_probe()

    async def kill(self) -> None:
        try:
            self._pin.kill()
            await self._proc.kill()
            await self._pin.end()
            await self._ended()
        finally:
            self._close_probe()

    async def _ended(self) -> None:
        """`on_end`, once: the command's per-command resources (its /dev/shm, `sandbox._shmpool`)."""
        on_end, self._on_end = self._on_end, None
        if on_end is not None:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(on_end)

    def _close_probe(self) -> None:
        probe, self._probe = self._probe, None
        if probe is not None:
            probe.close()
