"""One local command from spawn to exit without an event loop: the lean ``shellrt run``'s engine.

The async stack (`shellrt.supervisor.Supervisor` over `sandbox.local.LocalBackend`)
serves sessions of many concurrent commands; one command needs none of it, and
importing it costs more than a whole interpreter start (issue 22). This module
does the same for a single process, synchronously, with the same sandbox
primitives: a fresh session (process group) and the run's marker variable
(`sandbox._proctree`), its stdout and stderr spooled as they stream
(`shellrt.supervisor.spool`), descendants recorded while it runs, the tree killed
at a timeout, a signal or a capture failure, and the bounded drain after the shell
exits (processes it left holding the output are killed, with the same notes as
`shellrt.supervisor.execution`).

One ``poll`` waits for everything: both output pipes, the child's pidfd, the
signal wake-up pipe (`signal.set_wakeup_fd`), and the next deadline (timeout,
progress tick, descendant poll).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence

from sandbox._bwrap_sched import calm_prefix
from sandbox._proctree import MARKER_VAR, ProcessTree, last_pid, process_table
from sandbox._subreaper import reap_adopted
from shellrt.supervisor.spool import OutputSpool

__all__ = ["LocalPump", "PumpResult", "StartError"]

_READ_SIZE = 1 << 20
#: As `shellrt.supervisor.execution`: after the shell exits, how long its output may take to end.
_DRAIN_S = 1.0
#: As the local backend's janitor: escaped processes that carry the run's marker die this soon after
#: the shell exits (those still holding the output would otherwise cost the whole drain).
_SWEEP_AFTER_EXIT_S = 0.05
#: ... and, once the leftovers were killed, how long before the pipe is abandoned.
_DRAIN_AFTER_KILL_S = 0.5
#: As `sandbox._hostproc`: descendants are first recorded after this, then every interval.
_FIRST_POLL_S = 0.02
_POLL_INTERVAL_S = 0.1
#: A read this large filled a default pipe buffer; the pipe then grows to `_PIPE_SIZE`.
_DEFAULT_PIPE = 65536
_PIPE_SIZE = 1 << 20
#: Without a pidfd (kernels before 5.3), how often the exit is polled.
_NO_PIDFD_POLL_S = 0.005
#: How long a kill may sweep for survivors (as `HostProcess.kill` on a live root).
_KILL_DEADLINE_S = 2.0

_LEFT_RUNNING = (
    "Processes the command started were still running after its shell exited; "
    "they were killed. Start long-running processes with run_in_background."
)
_PIPE_KEPT_OPEN = (
    "A detached process kept the output pipe open after the command exited; "
    "output after that point was not captured."
)


class StartError(Exception):
    """The command could not be started (no such program, a cwd that vanished ...)."""


class PumpResult:
    """How the command ended, as the CLI reports it (a plain class: ``dataclasses`` costs ~4 ms)."""

    __slots__ = ("capture_error", "exit_code", "notes", "output_closed", "received_signal", "timed_out")

    def __init__(self) -> None:
        #: The root's exit code (128+N for a signal death); None when it never ended on its own.
        self.exit_code: int | None = None
        self.timed_out = False
        #: The signal shellrt itself received (SIGINT, SIGTERM, SIGHUP), which ended the run.
        self.received_signal: int | None = None
        #: Writing our own stdout/stderr failed with EPIPE (``| head``).
        self.output_closed = False
        #: Capturing failed for another reason: what and why (the command was killed for it).
        self.capture_error: str | None = None
        self.notes: list[str] = []


class LocalPump:
    """Spawn ``argv`` in its own session with ``env`` and ``MARKER_VAR=marker``; `run` pumps it to the end."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: dict[str, str],
        cwd: str,
        marker: str,
        out: OutputSpool,
        err: OutputSpool,
    ) -> None:
        self.out = out
        self.err = err
        self.started = time.monotonic()
        child_env = {**env, MARKER_VAR: marker}
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        devnull = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        try:
            command, executable = _calmed(argv, _resolve(argv[0], child_env.get("PATH")))
            self._popen = subprocess.Popen(
                command,
                executable=executable,
                stdin=devnull,
                stdout=out_w,
                stderr=err_w,
                cwd=cwd,
                env=child_env,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as exc:
            os.close(out_r)
            os.close(err_r)
            raise StartError(f"cannot start {argv[0]!r}: {exc}") from exc
        finally:
            for fd in (out_w, err_w, devnull):
                os.close(fd)
        self.tree = ProcessTree(self._popen.pid, marker)
        self._readers: dict[int, OutputSpool] = {out_r: out, err_r: err}
        self._grown: set[int] = set()
        try:
            self._pidfd: int | None = os.pidfd_open(self._popen.pid)
        except (OSError, AttributeError):  # pragma: no cover - kernels before 5.3
            self._pidfd = None

    @property
    def total_bytes(self) -> int:
        return self.out.total_bytes + self.err.total_bytes

    def run(
        self,
        *,
        timeout_s: float,
        wakeup_fd: int,
        signalled: Callable[[], int | None],
        on_progress: Callable[[float], None] | None = None,
        progress_interval_s: float = 0.5,
    ) -> PumpResult:
        """Pump output until the command ended and its output did (or was abandoned); kill on the way out.

        ``signalled`` names a signal shellrt got (checked whenever ``wakeup_fd`` wakes
        the wait): the tree is killed and the run ends at once.
        """
        result = PumpResult()
        poller = select.poll()
        for fd in (*self._readers, wakeup_fd):
            poller.register(fd, select.POLLIN)
        if self._pidfd is not None:
            poller.register(self._pidfd, select.POLLIN)
        deadline = self.started + timeout_s
        next_record = self.started + _FIRST_POLL_S
        next_progress = self.started + progress_interval_s
        #: After the shell exited (or we killed it): when the output must have ended.
        drain_until: float | None = None
        drain_killed = False
        #: After the exit: when escaped processes still carrying the marker are killed.
        sweep_at: float | None = None
        try:
            while True:
                now = time.monotonic()
                if result.exit_code is None and self._popen.poll() is not None:
                    result.exit_code = self._exited()
                    sweep_at = now + _SWEEP_AFTER_EXIT_S
                    if drain_until is None:
                        drain_until = now + _DRAIN_S
                if result.exit_code is not None and not self._readers:
                    if drain_killed:
                        result.notes.append(_LEFT_RUNNING)
                    return result
                if sweep_at is not None and now >= sweep_at:
                    sweep_at = None
                    self.tree.sweep_marker()
                if drain_until is not None and now >= drain_until:
                    if drain_killed:
                        result.notes.append(_PIPE_KEPT_OPEN)
                        return result
                    self.kill()  # what the command left running still holds the output
                    drain_killed = True
                    drain_until = time.monotonic() + _DRAIN_AFTER_KILL_S
                    continue
                if not result.timed_out and now >= deadline:  # running, or its output still draining
                    result.timed_out = True
                    self.kill()
                    if drain_until is None:
                        drain_until = time.monotonic() + _DRAIN_S
                    continue
                if result.exit_code is None and now >= next_record:
                    self._record_descendants()
                    next_record = now + _POLL_INTERVAL_S
                if on_progress is not None and now >= next_progress:
                    next_progress = now + progress_interval_s
                    on_progress(round(now - self.started, 3))
                wake = [next_progress] if on_progress is not None else []
                if not result.timed_out:
                    wake.append(deadline)
                if result.exit_code is None:
                    wake.append(next_record)
                    if self._pidfd is None:
                        wake.append(now + _NO_PIDFD_POLL_S)
                wake += [t for t in (drain_until, sweep_at) if t is not None]
                wait_ms = max(0, int((min(wake, default=now + 1.0) - now) * 1000) + 1)
                for fd, _ in poller.poll(wait_ms):
                    if fd == wakeup_fd:
                        _drain_wakeups(wakeup_fd)
                        received = signalled()
                        if received is not None:
                            result.received_signal = received
                            self.kill()
                            return result
                    elif fd == self._pidfd:
                        poller.unregister(fd)
                    elif fd in self._readers:
                        self._read(fd, poller, result)
                        if result.output_closed or result.capture_error is not None:
                            self.kill()
                            return result
        finally:
            self._close(result)

    def _read(self, fd: int, poller: select.poll, result: PumpResult) -> None:
        spool = self._readers[fd]
        try:
            chunk = os.read(fd, _READ_SIZE)
        except BlockingIOError:  # pragma: no cover - poll said readable
            return
        except OSError:  # as `sandbox._fdstream`: a broken pipe ends the stream
            chunk = b""
        if len(chunk) >= _DEFAULT_PIPE and fd not in self._grown:
            self._grown.add(fd)
            _grow_pipe(fd)  # the command floods its output: fewer, larger reads
        if not chunk:
            poller.unregister(fd)
            os.close(fd)
            del self._readers[fd]
            return
        try:
            spool.write(chunk)  # echoes it (on_chunk)
        except BrokenPipeError:
            result.output_closed = True
        except Exception as exc:  # never lose output silently: say what and why, then stop the command
            result.capture_error = (
                f"Output capture failed ({type(exc).__name__}: {exc}); shellrt killed the command, "
                f"so output after {self.total_bytes:,} bytes was not captured."
            )

    def _exited(self) -> int:
        """The root was reaped: its group dies with it (as `sandbox._hostproc.HostProcess.wait`)."""
        self.tree.kill_group()
        reap_adopted()  # and what it left however it detached (`shellrt.cli._local_run` adopts it)
        code = self._popen.returncode
        assert code is not None
        return 128 - code if code < 0 else code

    def _record_descendants(self) -> None:
        """Remember the command's descendants (``setsid`` ones included) for the tree kill."""
        root = self.tree.root_pid
        last = last_pid()
        floor = root if last is not None and last >= root else 0  # pids wrapped: scan them all
        self.tree.record(process_table(floor))

    def kill(self) -> None:
        """Kill the whole tree (group, recorded descendants, every marked process) and reap the root."""
        deadline = _KILL_DEADLINE_S if self._popen.returncode is None else 0.5
        self.tree.kill_all(deadline_s=deadline)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._popen.wait(deadline)
        reap_adopted()

    def _close(self, result: PumpResult) -> None:
        for fd in self._readers:
            os.close(fd)
        self._readers.clear()
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None
        if result.exit_code is None and self._popen.poll() is not None and not result.timed_out:
            result.exit_code = self._exited()
        self.out.close()
        self.err.close()


def _grow_pipe(fd: int) -> None:
    """Best effort: enlarge a pipe (Linux F_SETPIPE_SZ), as `sandbox._hostproc.grow_pipe`."""
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), _PIPE_SIZE)


def _drain_wakeups(fd: int) -> None:
    with contextlib.suppress(BlockingIOError):
        while os.read(fd, 512):
            pass


def _calmed(argv: Sequence[str], executable: str | None) -> tuple[list[str], str | None]:
    """``argv`` (and what to exec) started without this thread's raised scheduling priority: a
    real-time policy, a negative nice, the real-time I/O class or non-zero nice/rtprio limits
    (`sandbox._bwrap_sched.calm_prefix`, as the local backend's starts: red team round 36, bwrap3).
    Unchanged, no exec more, for an ordinary caller. Raises `StartError` when a program it needs
    is missing."""
    try:
        prefix = calm_prefix(limits=True)
    except FileNotFoundError as exc:
        raise StartError(str(exc)) from exc
    if not prefix:
        return list(argv), executable
    return [*prefix, *argv], prefix[0]  # each execs the next by the child's PATH, as Popen would


def _resolve(name: str, path: str | None) -> str | None:
    """``name`` looked up on ``path`` now, so the child execs it at the first try (as `HostRunner`).

    None (Popen searches) for a path, a miss, or a PATH with relative entries
    (they resolve against the child's cwd).
    """
    if "/" in name:
        return None
    dirs = (os.defpath if path is None else path).split(os.pathsep)
    if not all(d.startswith("/") for d in dirs):
        return None
    return shutil.which(name, path=os.pathsep.join(dirs))
