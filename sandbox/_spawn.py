"""Starting a host process with the same system calls as `subprocess.Popen`, less Python around them.

Popen spends ~100k instructions of Python per start here (argument checks, handle
bookkeeping, PATH candidates, the error-pipe protocol); the vfork and exec
themselves are in C. On the local hot path (``bash -c true``, ~1.3 ms) that is a
measurable share, so `start` calls CPython's own child starter,
``_posixsubprocess.fork_exec``, directly: the same vfork, ``setsid``, dup2 of the
stdio fds, ``close_fds``, chdir and exec, and the same error pipe, which turns an
exec or chdir failure into an `OSError` as Popen would (~28k instructions).

``fork_exec`` is private and its parameters have changed between versions: the
direct path is taken only on the version this was written and tested for
(CPython 3.11), and for an executable given as a path; everything else goes
through Popen, with the same result.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["Child", "start"]

_fork_exec: Any
try:
    from _posixsubprocess import fork_exec as _fork_exec
except ImportError:  # pragma: no cover - every CPython on Linux has it
    _fork_exec = None

#: The direct path: CPython 3.11's ``fork_exec`` signature (23 parameters, ``process_group`` last added).
_DIRECT = _fork_exec is not None and sys.implementation.name == "cpython" and sys.version_info[:2] == (3, 11)


class Child:
    """A started process, as far as `sandbox._hostproc.HostProcess` uses one (Popen's names).

    ``poll`` reaps it without blocking; like Popen's, it is safe from several threads
    (one reaps, the others see None until the returncode is set).
    """

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._lock = threading.Lock()

    def poll(self) -> int | None:
        if self.returncode is not None or not self._lock.acquire(blocking=False):
            return self.returncode
        try:
            if self.returncode is None:
                self._reap()
        finally:
            self._lock.release()
        return self.returncode

    def _reap(self) -> None:
        """Set `returncode` if the process ended, without blocking (`poll` holds the lock)."""
        try:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:  # reaped elsewhere: its status is gone (Popen says 0 too)
            self.returncode = 0
        else:
            if pid == self.pid:
                self.returncode = os.waitstatus_to_exitcode(status)


def start(
    argv: Sequence[str],
    *,
    executable: str | None,
    stdin: int,
    stdout: int,
    stderr: int | None,
    cwd: str | None,
    env: Mapping[str, str],
    pass_fds: tuple[int, ...] = (),
) -> Child | subprocess.Popen[bytes]:
    """Start ``argv`` in a new session with the given stdio fds (``stderr=None``: into stdout),
    all other fds closed but ``pass_fds``; raises `OSError` when it cannot start."""
    if not _DIRECT or executable is None or "/" not in executable:
        return subprocess.Popen(
            list(argv),
            executable=executable,
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.STDOUT if stderr is None else stderr,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
            close_fds=True,
            pass_fds=pass_fds,
        )
    args = list(argv)
    sys.audit("subprocess.Popen", executable, args, cwd, env)
    env_list = _env_list(env)
    err_read, err_write = os.pipe2(os.O_CLOEXEC)
    try:
        pid = _fork_exec(
            args,
            (os.fsencode(executable),),
            True,  # close_fds
            tuple(sorted({*pass_fds, err_write})),
            cwd,
            env_list,
            stdin,  # p2cread
            -1,  # p2cwrite
            -1,  # c2pread
            stdout,  # c2pwrite
            -1,  # errread
            stdout if stderr is None else stderr,  # errwrite
            err_read,
            err_write,
            True,  # restore_signals
            True,  # start_new_session
            -1,  # process_group
            None,  # gid
            None,  # extra_groups
            None,  # uid
            -1,  # umask
            None,  # preexec_fn
            True,  # allow vfork
        )
    except BaseException:
        os.close(err_read)
        os.close(err_write)
        raise
    os.close(err_write)
    try:
        report = _read_all(err_read)
    finally:
        os.close(err_read)
    if report:
        _reap(pid)
        raise _start_error(report, executable, cwd)
    return Child(pid)


#: What `os.fsencode` encodes with (read once, as `os` itself does at import).
_FS_ENCODING, _FS_ERRORS = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()


def _env_list(env: Mapping[str, str]) -> list[bytes]:
    """``KEY=value`` entries as Popen makes them (`os.fsencode` of each part; a name holding ``=``
    is a `ValueError`), the same bytes.

    Popen's loop calls `os.fsencode` (Python) twice per entry: ~40 of the ~45 µs this took for a
    command's ~40 variables, on the start's critical path. One ``str.encode`` per entry gives the
    same bytes: UTF-8 puts byte ``=`` only where the text has ``=`` (a multibyte sequence and a
    ``surrogateescape`` byte are all >= 0x80), so the name is checked as text. Any other entry
    (a non-str part, another file-system encoding) takes Popen's loop.
    """
    if _FS_ENCODING == "utf-8":
        for key, value in env.items():
            if type(key) is not str or type(value) is not str or "=" in key:
                break
        else:
            return [f"{key}={value}".encode(_FS_ENCODING, _FS_ERRORS) for key, value in env.items()]
    out: list[bytes] = []
    for key, value in env.items():
        name = os.fsencode(key)
        if b"=" in name:
            raise ValueError("illegal environment variable name")
        out.append(name + b"=" + os.fsencode(value))
    return out


def _read_all(fd: int) -> bytes:
    """What the child wrote to the error pipe before exec closed it (empty: it exec'd)."""
    chunks = []
    while chunk := os.read(fd, 50_000):
        chunks.append(chunk)
        if sum(map(len, chunks)) > 50_000:
            break
    return b"".join(chunks)


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def _start_error(report: bytes, executable: str, cwd: str | None) -> OSError:
    """The child's report (``OSError:<hex errno>:<message>``) as the OSError Popen raises."""
    try:
        kind, hex_errno, message = report.split(b":", 2)
        code = int(hex_errno, 16)
    except ValueError:
        return OSError(errno.EIO, f"bad report from the starting child: {report[:100]!r}")
    if kind != b"OSError" or code == 0:
        return OSError(errno.EIO, f"the child failed before exec: {report[:200].decode(errors='replace')}")
    # "noexec": the failure was in the child's setup (chdir), before exec was tried.
    filename = cwd if message == b"noexec" else executable
    return OSError(code, os.strerror(code), filename)
