"""A warm shell for the local backend: the next command's ``bash`` started before it is asked for.

A raw ``bash -c`` costs a fork, an exec and bash's own start-up (dynamic
linking, locale, variables): about a millisecond here, most of a trivial
command's latency. So, after each shell command, one shell is started ahead,
off the event loop (a worker thread), exactly as the next command would be
started: the same argv[0], environment (with its own run marker; a command that
asks for a cwd report exports the report file's name first, on the text's line 1),
working directory, stdio and session. It blocks reading one line from a
private "go" pipe; the command's text waits for it in a private memfd. When the
next command matches (see `WarmShells.take`), its text is written to the memfd,
the go line is sent, and the shell closes both descriptors and ``eval``s the
text: what runs sees what a fresh ``bash -c TEXT`` sees — its own ``$$``,
``$0``, line numbers, ``$_``, ``$SECONDS`` from 0, no extra descriptor, no
variable of ours.

Anything that does not match exactly (another environment, cwd, stdin,
stderr handling, an argv without a shell) starts fresh as before; a warm shell
whose working directory is no longer the directory the path names now (removed
and made again) does not match either. The process is a `HostProcess` like any
other: tree kill, descendant polling and the marker sweep are unchanged.

What differs from ``bash -c``: ``$BASH_EXECUTION_STRING`` holds the warm shell's
script, and a syntax error is reported as ``bash: eval: line N`` instead of
``bash: -c: line N``.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import shlex
import threading
from dataclasses import dataclass
from pathlib import Path

import anyio

from sandbox._hostproc import HostProcess, HostRunner
from sandbox.base import ExecRequest

__all__ = ["WarmShells"]

#: How long a command may wait for a warm shell whose start is under way (then it starts fresh).
_STARTING_WAIT_S = 0.05
#: Kinds of start (environment, cwd, stdio) kept warm at once; a command of another kind
#: replaces the least recent one. Whether a command reports its cwd is no kind of its own.
_KINDS = 1

#: Read the go line, then the text (a regular file: bash reads it in blocks, not byte by byte),
#: close both, and run the text with nothing of ours left: ``$_`` back to argv[0], ``$SECONDS`` at 0.
_SCRIPT = (
    "read -r __shellrt_g <&{go}; IFS= read -r -d '' __shellrt_c <&{text}; exec {go}<&- {text}<&-; "
    'eval "unset __shellrt_c __shellrt_g; SECONDS=0; : {argv0}; $__shellrt_c"'
)


@dataclass
class _Warm:
    """One shell waiting for its command, and the request it was started for."""

    process: HostProcess
    request: ExecRequest
    go_fd: int
    #: The memfd's number in the shell (ours is closed: it is opened again through /proc to write).
    text_fd: int
    #: Where it reports its final cwd when its command asks for that.
    cwd_file: Path | None


def _fits(request: ExecRequest) -> bool:
    """Whether ``request`` is a shell text a warm shell could run (``SHELL -c TEXT``, no stdin)."""
    argv = request.argv
    return (
        len(argv) == 3
        and argv[1] == "-c"
        and not request.stdin
        and request.user is None
        and "_" not in request.env  # bash would start with $_ from it; ours is argv[0]
        and _plain_word(argv[0])
    )


def _plain_word(word: str) -> bool:
    """A word the script can name without quoting (a shell name or path)."""
    return bool(word) and all(c.isalnum() or c in "/._-+" for c in word)


def _same_start(started: ExecRequest, request: ExecRequest) -> bool:
    """Whether a shell started for ``started`` is started as ``request`` would be (text aside)."""
    return (
        request.argv[0] == started.argv[0]
        and request.env == started.env
        and request.cwd == started.cwd
        and request.merge_stderr == started.merge_stderr
    )


def _same_dir(pid: int, path: str) -> bool:
    """Whether process ``pid`` still works in the directory ``path`` names now."""
    try:
        there = os.stat(f"/proc/{pid}/cwd")
        here = os.stat(path)
    except OSError:
        return False
    return (there.st_dev, there.st_ino) == (here.st_dev, here.st_ino)


class WarmShells:
    """Shells started ahead for a runner's next shell commands: one per kind of start (environment,
    cwd, stdio), at most `_KINDS` kinds. A command that reports its cwd and a read-only one that
    does not are of one kind: the report's file is exported by the command's text."""

    def __init__(self, runner: HostRunner) -> None:
        self._runner = runner
        self._lock = threading.Lock()
        #: Notified when a start ends (a warm shell is ready, or the start failed).
        self._changed = threading.Condition(self._lock)
        #: Waiting shells, the least recently made or used first.
        self._ready: list[_Warm] = []
        #: The requests warm shells are being started for.
        self._starting: list[ExecRequest] = []
        self._closed = False
        self._worker: concurrent.futures.ThreadPoolExecutor | None = None
        self._asked = 0
        self._waiting = False

    @property
    def ready(self) -> bool:
        """A warm shell is waiting for a matching command."""
        return bool(self._ready)

    async def take_soon(self, request: ExecRequest) -> HostProcess | None:
        """`take`, after waiting (off the event loop) for a warm shell whose start for a request
        like this one is under way: the rest of that start costs less than a whole start here."""
        if (
            not self._waiting
            and any(_same_start(s, request) for s in self._starting)
            and not any(_same_start(w.request, request) for w in self._ready)
        ):
            # One waiter: of commands started together, the others start fresh at once.
            self._waiting = True
            try:
                await anyio.to_thread.run_sync(self._wait_started, request, abandon_on_cancel=True)
            finally:
                self._waiting = False
        return self.take(request)

    def _wait_started(self, request: ExecRequest) -> None:
        with self._changed:
            if any(_same_start(s, request) for s in self._starting):
                self._changed.wait(_STARTING_WAIT_S)

    def take(self, request: ExecRequest) -> HostProcess | None:
        """The warm shell running ``request`` now, or None (start it fresh).

        Either way the next warm shell is started for a request like this one,
        from the second shell command on.
        """
        if self._closed or not _fits(request):
            return None
        self._asked += 1
        if self._asked == 1:
            return None  # a one-off (``shellrt run``) would only pay for a shell nobody uses
        warm: _Warm | None = None
        with self._lock:
            for i, candidate in enumerate(self._ready):
                if _same_start(candidate.request, request):
                    warm = self._ready.pop(i)
                    break
        if warm is not None and not self._matches(warm):
            self._retire_later(warm)
            warm = None
        self._prepare(request)
        if warm is None:
            return None
        try:
            text = request.argv[2]
            if request.report_cwd and warm.cwd_file is not None:
                # On line 1, before the text (its line numbers stay), then $_ as a fresh start has it.
                text = (
                    f"export SHELLRT_CWD_FILE={shlex.quote(str(warm.cwd_file))}; : {request.argv[0]}; {text}"
                )
                warm.process.report_cwd_to(warm.cwd_file)
            _write_text(warm, text.encode("utf-8", "surrogateescape"))
            os.write(warm.go_fd, b"\n")
        except OSError:  # it died while waiting (killed from outside): start this one fresh
            self._retire_later(warm)
            return None
        _close(warm.go_fd)
        warm.process.open_pidfd()
        warm.process.begin_run()
        self._runner.register(warm.process)
        return warm.process

    @staticmethod
    def _matches(warm: _Warm) -> bool:
        """Whether a shell started like the request still works where the request would."""
        pid = warm.process.pid
        return pid is not None and not warm.process.exited and _same_dir(pid, warm.request.cwd)

    def _prepare(self, request: ExecRequest) -> None:
        """Start the next warm shell for ``request`` in the worker thread (one per kind)."""
        evicted: _Warm | None = None
        with self._lock:
            if self._closed or any(_same_start(s, request) for s in self._starting):
                return
            if any(_same_start(w.request, request) for w in self._ready):
                return
            if len(self._ready) + len(self._starting) >= _KINDS:
                if not self._ready:
                    return
                evicted = self._ready.pop(0)
            self._starting.append(request)
            if self._worker is None:
                self._worker = concurrent.futures.ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix=f"shellrt-{self._runner.label}-warm"
                )
            worker = self._worker
        if evicted is not None:
            self._retire_later(evicted)
        worker.submit(self._start, request)

    def _start(self, request: ExecRequest) -> None:
        """Worker thread: start a shell for ``request`` that waits for its text."""
        warm: _Warm | None = None
        try:
            warm = self._spawn(request)
        except Exception:  # no warm shell then: the next command starts fresh, and says what fails
            warm = None
        finally:
            with self._changed:
                self._starting = [s for s in self._starting if s is not request]
                if warm is not None and not self._closed:
                    self._ready.append(warm)
                    warm = None
                self._changed.notify_all()
        if warm is not None:  # closed meanwhile
            self._retire(warm)

    def _spawn(self, request: ExecRequest) -> _Warm:
        go_read, go_write = os.pipe2(os.O_CLOEXEC)
        text_fd = os.memfd_create("shellrt-command", os.MFD_CLOEXEC)
        try:
            # Started without a cwd report: a command that asks for one exports the name first.
            run = self._runner.new_run(True)
            argv0 = request.argv[0]
            script = _SCRIPT.format(go=go_read, text=text_fd, argv0=argv0)
            process = self._runner.start_process(
                (argv0, "-c", script),
                request,
                marker=run.marker,
                cwd_host_file=None,
                env_extra={},
                cwd=request.cwd,
                pass_fds=(go_read, text_fd),
                register=False,
            )
        except BaseException:
            _close(go_write)
            raise
        finally:
            _close(go_read, text_fd)
        # While it waits it costs this process two descriptors: its output and the go pipe.
        process.close_pidfd()
        return _Warm(process, request, go_write, text_fd, run.cwd_file)

    def _retire_later(self, warm: _Warm) -> None:
        """`_retire` in the worker thread (reaping blocks); at once when there is none."""
        with self._lock:
            worker = self._worker
        try:
            if worker is not None:
                worker.submit(self._retire, warm)
                return
        except RuntimeError:  # shut down meanwhile
            pass
        self._retire(warm)

    @staticmethod
    def _retire(warm: _Warm) -> None:
        """End a warm shell nobody will use (blocking: it is killed and reaped)."""
        _close(warm.go_fd)
        warm.process.abandon()

    def close(self) -> None:
        """End the waiting shells (blocking: the worker may be starting one)."""
        with self._lock:
            self._closed = True
            worker, self._worker = self._worker, None
        if worker is not None:
            worker.shutdown(wait=True)
        with self._lock:
            waiting, self._ready = self._ready, []
        for warm in waiting:
            self._retire(warm)


def _write_text(warm: _Warm, text: bytes) -> None:
    """Put the command's text in the waiting shell's memfd (opened through its descriptor)."""
    fd = os.open(f"/proc/{warm.process.pid}/fd/{warm.text_fd}", os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.pwrite(fd, text, 0)
    finally:
        os.close(fd)


def _close(*fds: int) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
