"""Pre-spawned shells for the local backend: a command's bash started before the command is known.

Most of a raw ``bash -c true`` is the exec of bash (its dynamic linking and start-up). The local
backend therefore keeps ``LocalConfig.warm_shells`` processes started exactly as `exec` would start
the next command's shell -- same spawn path (reaper or session cgroup), same argv shape, same
environment, same cwd, own run marker, cwd report file, process group and session -- except that
the command's text has not arrived: the shell blocks reading it from its stdin pipe. When a
command comes whose request matches (argv, environment apart from the text, cwd and that
directory's identity, stdin mode, stderr merge, cwd report), its text is written to that pipe and
the shell ``eval``s it, as the fresh launch does with the text from its environment. Every command
still gets a fresh bash process of its own: a warm shell serves exactly one command.

The wire format: ``<byte count> <text>``. Bash reads a pipe one byte per system call unless it
reads a fixed count (``read -N``, buffered), so the count comes first (a few bytes read singly),
then the text in one go, counted in bytes (``LC_ALL=C`` for that one ``read``; its stderr goes
to /dev/null, since restoring a locale bash cannot set warns again, which a fresh shell does not). The rest of the
pipe is the command's stdin when it asked for one; otherwise the shell turns its stdin into
/dev/null before the ``eval``, as a fresh start would have it.

Differences from a fresh start that a command can see: ``$BASH_EXECUTION_STRING`` (the fixed
script, which names no command either way) and the process's start time. Nothing else: the
shell's environment never held the text, so it equals a fresh shell's once that unset it.

Fail safe, never an error: a request that does not match, a text above `MAX_TEXT_BYTES` or with a
NUL, a warm shell that died (a command of the same uid may kill it) or whose cwd was replaced
since, each start fresh, and the idle warm shells are retired. When a finished command
leaves something behind, the idle warm shells are retired first, so the session is idle and its
sweep (reaper or cgroup) ends the leftovers at once, as without warm shells.

Not on a saturated machine: while the kernel's CPU pressure (``/proc/pressure/cpu``, ``some avg10``)
is above `WarmPool.busy_psi` (70%), no shell is pre-started and commands start fresh. With no idle
core a pre-start only moves the next shell's start onto the cores the current call needs and adds
the hand-off's work (measured: worse medians and ~0.3-0.6 ms more CPU per call at load 9-40;
docs/performance.md, eleventh round). Below it, the pool pre-starts again.

Not for bwrap or docker: only the local backend creates a pool.

Outliving a command (red team round 15): an idle warm shell is no command, so while it waits
nothing of the session "runs" -- the protected-files guard (`shellrt.supervisor.protect`) takes
changes made then for the operator's own. A command running beside one could write a text of its
own into its stdin pipe (same uid, ``/proc/<pid>/fd/0``): a shell builtin-only loop that starts no
process, so no sweep sees a leftover, and plants a git hook after the command's check. So no
command ever runs beside an idle warm shell: a request that does not take one retires them all
(not only a mismatched one: an argv, another user, a text too long or with a NUL too), and none is
pre-started while any other command or background task of the session runs.

Security: the local backend isolates nothing, and this changes nothing of it. A command runs as
the same uid as the warm shell waiting beside it and can reach that shell's stdin pipe
(``/proc/<pid>/fd/0``) or kill it, so it could write the next command's text itself -- which
gives it nothing it did not have: as that uid it can already run any program, ``ptrace`` the
owner or write to every later command's files -- but for one thing, outliving its own end
unnoticed, closed above (a shell waits only while no command runs). A killed shell only costs the next call a fresh
start (`_dying`). The text never appears in any process's argv or environment.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sandbox._hostproc import HostProcess, HostRunner
    from sandbox.base import ExecRequest

__all__ = ["BASH_FROM_ENV", "COMMAND_VAR", "MAX_TEXT_BYTES", "WarmPool", "warm_argv"]

#: The environment variable that carries a command's text to its shell (`shellrt.supervisor.shells`).
COMMAND_VAR = "SHELLRT_COMMAND"
#: The fresh launch's tail (`shellrt.supervisor.shells`, which defines it: this copy keeps that
#: module's imports lean; `tests/test_local_warm_shell.py` checks that the two agree).
BASH_FROM_ENV = (
    f"__shellrt_c=${{{COMMAND_VAR}?shellrt: the command text did not reach the shell}}; "
    f'unset {COMMAND_VAR}; eval "$__shellrt_c"'
)
#: The warm launch's tail: the text from stdin (count, space, bytes); a closed pipe ends the shell.
_FROM_PIPE = (
    "IFS= read -r -d ' ' __shellrt_n && { LC_ALL=C IFS= read -r -N \"$__shellrt_n\" __shellrt_c; } "
    "2>/dev/null || exit 125; unset __shellrt_n; "
)
_BASH_FROM_PIPE = _FROM_PIPE + 'eval "$__shellrt_c"'
_BASH_FROM_PIPE_NO_STDIN = _FROM_PIPE + 'exec </dev/null; eval "$__shellrt_c"'
#: The kernel's CPU pressure (PSI): ``some avg10=<share of the last 10 s in which a task waited for a CPU>``.
_PSI_CPU = "/proc/pressure/cpu"
#: The pressure is read at most this often (one ~10 us read; it is a 10 s average anyway).
_PSI_EVERY_S = 1.0


def cpu_pressure() -> float | None:
    """The share (%) of the last 10 s in which some task waited for a CPU, or None where the kernel
    does not tell (no PSI)."""
    try:
        fd = os.open(_PSI_CPU, os.O_RDONLY | os.O_CLOEXEC)
        try:
            raw = os.read(fd, 256)
        finally:
            os.close(fd)
        line = raw.split(b"\n", 1)[0].split()
        return (
            float(line[1].split(b"=", 1)[1]) if line[0] == b"some" and line[1].startswith(b"avg10=") else None
        )
    except (OSError, IndexError, ValueError):
        return None


#: Above this a fresh start is cheaper (the text's eval dominates; the pipe holds 64 KiB).
MAX_TEXT_BYTES = 32 * 1024


def warm_argv(argv: tuple[str, ...], stdin: bool) -> tuple[str, ...] | None:
    """The warm form of a fresh launch's argv, or None when ``argv`` is not one (no warm shell)."""
    if len(argv) != 3 or argv[1] != "-c" or not argv[2].endswith(BASH_FROM_ENV):
        return None
    tail = _BASH_FROM_PIPE if stdin else _BASH_FROM_PIPE_NO_STDIN
    return (argv[0], "-c", argv[2][: -len(BASH_FROM_ENV)] + tail)


@dataclass
class _Warm:
    """One warm shell and what shaped it."""

    handle: HostProcess
    argv: tuple[str, ...]
    env: dict[str, str]
    cwd: str
    cwd_id: tuple[int, int]
    stdin: bool
    merge_stderr: bool
    report_cwd: bool

    def matches(self, request: ExecRequest, env: dict[str, str]) -> bool:
        return (
            self.argv == request.argv
            and self.cwd == request.cwd
            and self.stdin == request.stdin
            and self.merge_stderr == request.merge_stderr
            and self.report_cwd == request.report_cwd
            and self.env == env
        )


def _dir_id(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


#: ``/proc/<pid>/stat``: PF_EXITING in the flags field; SIGKILL's bit in the pending-signal field.
_PF_EXITING = 0x4
_SIGKILL_BIT = 1 << (signal.SIGKILL - 1)


def _dying(pid: int | None) -> bool:
    """Whether ``pid`` (alive by its pidfd) was killed and is on its way out.

    A command may ``kill -9`` the waiting shell and end before that shell has died (it must be
    scheduled to): its pidfd is not readable yet, but the kill is pending or the exit under way,
    and a text written to it would be lost with it. One read of ``stat`` (~10 us) tells.
    """
    if pid is None:
        return True
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)  # no file object: ~8 us less
        try:
            raw = os.read(fd, 4096)
        finally:
            os.close(fd)
        fields = raw.rsplit(b")", 1)[1].split()
        state, flags, pending = fields[0], int(fields[6]), int(fields[28])
    except (OSError, IndexError, ValueError):
        return True
    return state in (b"Z", b"X", b"x") or bool(flags & _PF_EXITING) or bool(pending & _SIGKILL_BIT)


class WarmPool:
    """Up to ``size`` warm shells of one `HostRunner` (the local backend's)."""

    #: No shell is pre-started while the CPU pressure (`cpu_pressure`) is above this (%): with no idle
    #: core a pre-start only moves the next shell's start (its CPU and its wake-ups) earlier, onto
    #: the cores the current call needs, and adds the hand-off's checks and the pipe's wake-up
    #: (eleventh round, docs/performance.md). Saturated here read 85-99%; a benchmark alone on two
    #: cores (loop, command, next shell) makes some pressure of its own, hence not lower. Above 100:
    #: always pre-start.
    busy_psi = 70.0

    def __init__(self, runner: HostRunner, size: int) -> None:
        self._runner = runner
        self.size = size
        self._idle: list[_Warm] = []
        #: Retired (killed) warm shells not reaped yet.
        self._dead: list[HostProcess] = []
        #: Counters (tests and the benchmark read them): hand-offs and fresh starts of eligible requests.
        self.handed = 0
        self.missed = 0
        #: The shape of the last request that could have had a warm shell (see `refill`).
        self._last_shape: tuple[object, ...] | None = None
        self._last_env: dict[str, str] | None = None
        #: The last warm request made (`refill`) and the shape and environment it was made for.
        self._warm_request: tuple[tuple[object, ...], ExecRequest] | None = None
        #: Refills skipped because the machine was busy (`busy_psi`), and the last pressure reading.
        self.skipped = 0
        self._psi_at = -_PSI_EVERY_S
        self._psi: float | None = None

    def pids(self) -> set[int]:
        return {w.handle.pid for w in self._idle if w.handle.pid is not None}

    @property
    def idle(self) -> int:
        return len(self._idle)

    async def take(self, request: ExecRequest) -> HostProcess | None:
        """A warm shell running ``request``'s command, or None (start it fresh)."""
        if not self._idle:
            return None
        text = request.env.get(COMMAND_VAR)
        if text is None or request.user is not None:
            self.retire_all()  # no command runs beside an idle shell (see "Outliving a command")
            return None
        env = dict(request.env)
        del env[COMMAND_VAR]
        warm = next((w for w in self._idle if w.matches(request, env)), None)
        if warm is None:
            self.missed += 1
            self.retire_all()  # shaped for another request: never serves a stale environment or cwd
            return None
        data = text.encode("utf-8", "surrogateescape")
        if len(data) > MAX_TEXT_BYTES or b"\0" in data:
            self.retire_all()  # fresh (it fails or is cheaper so), and no idle shell beside it
            return None
        self._idle.remove(warm)
        handle = warm.handle
        if _dir_id(request.cwd) != warm.cwd_id or handle.exited or _dying(handle.pid):
            self._retire(warm)
            self.missed += 1
            return None
        try:
            if handle.stdin_fd is None:
                raise OSError("no text pipe")
            os.write(handle.stdin_fd, b"%d " % len(data) + data)  # an empty pipe: never blocks below 64 KiB
        except OSError:  # it died meanwhile (EPIPE)
            self._retire(warm)
            self.missed += 1
            return None
        if not request.stdin and handle.stdin is not None:
            await handle.stdin.aclose()  # the shell reads no further: its stdin is /dev/null now
            handle.stdin = None
        handle.warm_idle = False
        handle.started_at = time.monotonic()
        self._runner.command_started()
        self.handed += 1
        return handle

    def refill(self, request: ExecRequest) -> None:
        """Start warm shells shaped like ``request`` up to the pool size (when its command ended).

        Only once two commands in a row had this shape: a session that runs one command (or one
        per cwd or environment) never pays for a shell nobody takes.
        """
        if len(self._idle) >= self.size or COMMAND_VAR not in request.env or request.user is not None:
            return
        if self._runner.closed or self._runner.commands_running():
            return  # a command or background task of the session runs: no idle shell beside it
        env = dict(request.env)
        del env[COMMAND_VAR]
        shape = (request.argv, request.cwd, request.stdin, request.merge_stderr, request.report_cwd)
        if self._last_shape != shape or self._last_env != env:
            self._last_shape, self._last_env = shape, env
            return
        if self._busy():
            self.skipped += 1
            return
        argv = warm_argv(request.argv, request.stdin)
        cwd_id = _dir_id(request.cwd)
        if argv is None or cwd_id is None:
            return
        # The same shape twice in a row (checked above): its warm request too, unless the pool's
        # last one was made for another shape (a pydantic copy is ~10 us of every call otherwise).
        key = (shape, env)
        if self._warm_request is None or self._warm_request[0] != key:
            self._warm_request = (key, request.model_copy(update={"argv": argv, "env": env, "stdin": True}))
        warm_request = self._warm_request[1]
        runner = self._runner
        while len(self._idle) < self.size:
            run = runner.new_run(request.report_cwd)
            try:
                handle = runner.spawn(
                    argv,
                    warm_request,
                    marker=run.marker,
                    cwd_host_file=run.cwd_file,
                    env_extra=run.env,
                    cwd=request.cwd,
                    warm_idle=True,
                )
            except Exception:
                return
            self._idle.append(
                _Warm(
                    handle,
                    request.argv,
                    env,
                    request.cwd,
                    cwd_id,
                    request.stdin,
                    request.merge_stderr,
                    request.report_cwd,
                )
            )

    def _busy(self) -> bool:
        """Whether the CPU pressure is above `busy_psi` (read at most once per `_PSI_EVERY_S`)."""
        if self.busy_psi > 100:
            return False
        now = time.monotonic()
        if now - self._psi_at >= _PSI_EVERY_S:
            self._psi_at = now
            self._psi = cpu_pressure()
        return self._psi is not None and self._psi > self.busy_psi

    def retire_all(self) -> None:
        """Kill every idle warm shell (their requests no longer match, or the session must go idle)."""
        idle, self._idle = self._idle, []
        for warm in idle:
            self._retire(warm)

    def _retire(self, warm: _Warm) -> None:
        handle = warm.handle
        pid = handle.pid
        if pid is not None and not handle.exited:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)  # its own group, not reaped yet: the pid is still its
        cgroup = self._runner.session_cgroup
        if handle.in_session_cgroup and cgroup is not None and pid is not None:
            cgroup.ended(pid)  # no command of the session any more: the idle sweep may run
        handle.close_pipes()
        self._dead.append(handle)

    async def reap(self) -> None:
        """Reap retired warm shells that have exited (they are in the runner's open set until then)."""
        if not self._dead:
            return
        dead, self._dead = self._dead, []
        for handle in dead:
            if handle.exited:
                await handle.wait()
            else:
                self._dead.append(handle)

    def forget(self) -> None:
        """The runner closed: it killed and reaped every open process, warm ones included."""
        for warm in self._idle:
            warm.handle.close_pipes()  # no command ever took them: nobody else closes their pipes
        self._idle.clear()
        self._dead.clear()

