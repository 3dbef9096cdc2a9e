"""A per-session subreaper for the local backend: nothing a command started outlives its session.

The local backend has no namespace to hold its processes. A command that
double-forks, calls ``setsid`` and clears its environment (``(setsid env -i
sleep 1000 &)``) leaves its process group, drops the marker variable the sweeps
look for and is re-parented to init: none of `sandbox._proctree`'s nets finds it,
and it ran until the owner process exited (and, without root, after that).

A process marked ``PR_SET_CHILD_SUBREAPER`` adopts the orphans of its
descendants instead of init. shellrt is a library in someone else's process, so
that process is never marked; instead each local session starts one small
**reaper** process (a Python in its own session, marked subreaper) and starts
every command as the reaper's child. Whatever a command leaves behind, however
it detaches, stays below the reaper, which:

- starts each command (``Popen`` with the owner's stdio fds, passed over a
  socket) and answers with its pid and a pidfd, then its exit status;
- kills every other child (adopted orphans and what they started) whenever no
  command of the session is running: a leftover dies when its command ends, or
  its timeout's tree kill ends it, unless another command or background task
  of the session still runs (then at the next idle moment or at close);
- at close, or when the owner dies (its socket ends), kills everything below it
  and exits.

Cost: one Python start (~20 ms) per session, taken before the first command, and
a socket round trip per command (measured in docs/security.md). Where the reaper
cannot start, commands start as before (`sandbox._proctree`'s nets only).

The lean ``shellrt run`` (`shellrt.cli._local_run`) is shellrt's own process and runs
one command: it marks itself subreaper for that run instead (`sandbox._subreaper`),
which costs no extra process.
"""

from __future__ import annotations

import array
import contextlib
import errno
import marshal
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import Protocol

__all__ = ["ReapedChild", "Reaper", "ReaperError", "start_reaper", "stop_reaper"]

#: Requests larger than this travel in a memfd (a datagram socket caps a message's size).
_INLINE_MAX = 60_000
_RECV_SIZE = 65_536
#: How long the reaper may take to start, and to answer a request.
_START_TIMEOUT_S = 15.0
_REPLY_TIMEOUT_S = 15.0
#: After a command's pidfd says it exited, how long its status may take to arrive.
_STATUS_TIMEOUT_S = 2.0
#: How many spares that died before use one start may meet before it gives up on the reaper.
_SPARE_TRIES = 5

#: The reaper: fd 0 is its socket to the owner. See the module docstring.
_REAPER = r"""
import array, ctypes, marshal, os, select, signal, socket, sys, time
sock = socket.socket(fileno=0)
def send(msg, fds=()):
    try:
        sock.sendmsg([marshal.dumps(msg)], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds).tobytes())] if fds else [])
    except OSError:
        pass  # the owner is gone: what is left is killed when its socket's end is read
if ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
    send({"error": "prctl(PR_SET_CHILD_SUBREAPER): " + os.strerror(ctypes.get_errno())})
    sys.exit(1)
# No signal is ignored here: an ignored signal stays ignored across exec, in every command. The
# reaper leads its own session without a terminal, so no terminal's SIGINT/SIGHUP reaches it.
wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
signal.set_wakeup_fd(wake_w)
signal.signal(signal.SIGCHLD, lambda *_: None)
signal.signal(signal.SIGTERM, lambda *_: None)
ME = os.getpid()
roots = set()  # the spare and every command: never killed while the session is idle
spare = None  # (pid, read end of a pipe only the spare holds: EOF = it exec'd or died)
def children():
    try:
        with open("/proc/%d/task/%d/children" % (ME, ME)) as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        found = []
        for e in os.listdir("/proc"):
            if e.isdigit():
                try:
                    with open("/proc/" + e + "/stat", "rb") as f:
                        stat = f.read()
                    if int(stat[stat.rfind(b")") + 2:].split()[1]) == ME:
                        found.append(int(e))
                except (OSError, ValueError, IndexError):
                    pass
        return found
def reaped(pid, status):
    if pid in roots:
        roots.discard(pid)
        send({"exit": pid, "code": os.waitstatus_to_exitcode(status)})
def reap():
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        reaped(pid, status)
def sweep(everything):
    end = time.monotonic() + 10
    while time.monotonic() < end:
        pids = [p for p in children() if everything or p not in roots]
        if not pids:
            return
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        for p in pids:
            try:
                reaped(*os.waitpid(p, 0))
            except ChildProcessError:
                pass
def serve(conn, told):
    # The spare: a new session with nothing open but /dev/null, its socket and `told`, waiting for
    # one command from the owner. It sets up the command's stdio and cwd and execs it; a failure
    # goes to the owner's error pipe (close-on-exec: EOF there means the exec succeeded).
    signal.set_wakeup_fd(-1)
    for s in (signal.SIGCHLD, signal.SIGTERM, signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(s, signal.SIG_DFL)  # as Popen's restore_signals: what Python ignores, commands must not
    os.setsid()
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    keep = sorted({conn, told})
    os.closerange(3, keep[0])
    os.closerange(keep[0] + 1, keep[1])
    os.closerange(keep[1] + 1, 1 << 20)
    try:
        data, anc, _, _ = socket.socket(fileno=conn).recvmsg(65536, socket.CMSG_SPACE(8 * 4), socket.MSG_CMSG_CLOEXEC)
    except OSError:
        os._exit(0)
    fds = array.array("i")
    for level, kind, raw in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(raw[: len(raw) - len(raw) % fds.itemsize])
    if not data or len(fds) < 3:
        os._exit(0)  # the owner let go of this spare
    err = fds[0]
    try:
        req = marshal.loads(data)
        if req.get("memfd"):
            with os.fdopen(fds[-1], "rb") as f:
                req = marshal.loads(f.read())
        os.dup2(fds[1], 0)
        os.dup2(fds[2], 1)
        os.dup2(fds[3] if req["err"] else fds[2], 2)
        if req["cwd"] is not None:
            os.chdir(req["cwd"])
        if req["exe"] is not None:
            os.execve(req["exe"], req["argv"], req["env"])
        os.execvpe(req["argv"][0], req["argv"], req["env"])
    except BaseException as exc:
        report = (getattr(exc, "errno", None) or 22, getattr(exc, "strerror", None) or str(exc), str(getattr(exc, "filename", None) or ""))
        try:
            os.write(err, marshal.dumps(report))
        except OSError:
            pass
    os._exit(127)
def fork_spare():
    global spare
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    told_r, told_w = os.pipe2(os.O_CLOEXEC)
    try:
        pid = os.fork()
    except OSError as exc:
        for fd in (told_r, told_w):
            os.close(fd)
        ours.close(); theirs.close()
        return exc
    if pid == 0:
        try:
            serve(theirs.detach(), told_w)
        finally:
            os._exit(127)
    theirs.close()
    os.close(told_w)
    roots.add(pid)
    spare = (pid, told_r)
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        pass  # the spare is already gone: `told` says so and another is forked
    else:
        send({"spare": pid}, [pidfd, ours.fileno()])
        os.close(pidfd)
    ours.close()
    poller.register(told_r, select.POLLIN)
    return None
def used():
    # The spare exec'd (it is a command now) or died: fork the next one now, while the command
    # runs and the owner waits for it (a fork failure is tried again `RETRY_S` later).
    global spare
    if spare is not None:
        poller.unregister(spare[1])
        os.close(spare[1])
        spare = None
        refill()
def refill():
    global due, failed
    due = None
    exc = fork_spare()
    if exc is not None:
        due = time.monotonic() + RETRY_S
        if not failed:
            send({"nospare": exc.errno or 11, "error": exc.strerror or str(exc)})
    failed = exc is not None
def spare_used():
    if spare is None:
        return False
    p = select.poll()
    p.register(spare[1], select.POLLIN)
    return bool(p.poll(0))
RETRY_S = 0.1
poller = select.poll()
poller.register(sock.fileno(), select.POLLIN)
poller.register(wake_r, select.POLLIN)
failed = False
due = None
send({"ready": ME})
refill()
while True:
    try:
        events = poller.poll(None if due is None else max(0, int((due - time.monotonic()) * 1000 + 1)))
    except InterruptedError:
        continue
    for fd, _ in events:
        if spare is not None and fd == spare[1]:
            used()
        elif fd == wake_r:
            try:
                while os.read(wake_r, 4096):
                    pass
            except BlockingIOError:
                pass
            reap()
            if spare_used():  # seen before the idle test: a fresh command may already have forked
                used()
            if not roots - {spare[0] if spare else 0}:
                sweep(False)
        elif fd == sock.fileno():
            try:
                data, anc, _, _ = sock.recvmsg(65536, socket.CMSG_SPACE(8 * 4), socket.MSG_CMSG_CLOEXEC)
            except OSError:
                data, anc = b"", []
            for level, kind, raw in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    a = array.array("i")
                    a.frombytes(raw[: len(raw) - len(raw) % a.itemsize])
                    for fd2 in a:
                        os.close(fd2)
            if not data:
                sweep(True)
                sys.exit(0)
            if spare is None:  # the owner waits for a spare: try the failed fork again now
                refill()
    if due is not None and time.monotonic() >= due:
        refill()
"""


def _readable(fd: int, timeout_s: float) -> bool:
    """Whether ``fd`` is readable within ``timeout_s`` (poll: ``select`` fails on an fd past 1023,
    which a busy owner with many background tasks reaches)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(max(0, int(timeout_s * 1000 + 0.999))))


class ReaperError(Exception):
    """The reaper could not start or stopped answering (the caller starts commands itself then)."""


class _Spare:
    """A child the reaper forked ahead of time, waiting on its socket for one command to exec."""

    def __init__(self, pid: int, pidfd: int, sock: int) -> None:
        self.pid = pid
        self.pidfd = pidfd
        self.sock = socket.socket(fileno=sock)

    def discard(self) -> None:
        """Let the spare go (it exits when its socket ends; the reaper kills it at close anyway)."""
        self.sock.close()
        os.close(self.pidfd)


class Reaper:
    """The owner's end of one session's reaper (thread-safe: one request at a time)."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        ours.set_inheritable(False)
        try:
            self._proc: subprocess.Popen[bytes] = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _REAPER],
                stdin=theirs.fileno(),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env={},
                start_new_session=True,
                close_fds=True,
            )
        except OSError as exc:
            ours.close()
            raise ReaperError(f"cannot start the session's reaper: {exc}") from exc
        finally:
            theirs.close()
        with contextlib.suppress(OSError):  # many ends may be read at once: room for their reports
            ours.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
        self._sock = ours
        self._lock = threading.Lock()
        self._ready = False
        #: pid -> exit code of commands whose end was read while waiting for something else.
        self._ended: dict[int, int] = {}
        #: Children whose end nobody will ask for (spares let go, commands that failed to exec).
        self._dropped: set[int] = set()
        self._spares: list[_Spare] = []
        #: The errno of the reaper's last failed fork of a spare, until a spare comes again.
        self._no_spare: tuple[int, str] | None = None
        self.closed = False

    @property
    def pid(self) -> int:
        return self._proc.pid

    def _receive(self, timeout_s: float) -> dict[str, object]:
        """One message; exits and spares are filed (`_file`). `ReaperError` when none comes in time
        or the socket ended."""
        if not _readable(self._sock.fileno(), timeout_s):
            raise ReaperError(f"the session's reaper did not answer within {timeout_s:g}s")
        try:
            data, ancillary, _, _ = self._sock.recvmsg(
                _RECV_SIZE, socket.CMSG_SPACE(4 * 4), socket.MSG_CMSG_CLOEXEC
            )
        except OSError as exc:
            self.closed = True
            raise ReaperError(f"the session's reaper cannot be read: {exc}") from exc
        if not data:
            self.closed = True
            raise ReaperError("the session's reaper is gone")
        fds = array.array("i")
        for level, kind, raw in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(raw[: len(raw) - len(raw) % fds.itemsize])
        message = marshal.loads(data)
        message = message if isinstance(message, dict) else {}
        self._file(message, list(fds))
        return message

    def _file(self, message: dict[str, object], fds: list[int]) -> None:
        """Keep what a message brings: a command's exit code, or a new spare with its pidfd and socket."""
        pid, code, spare = message.get("exit"), message.get("code"), message.get("spare")
        if isinstance(pid, int) and isinstance(code, int):
            if pid in self._dropped:
                self._dropped.discard(pid)
            else:
                self._ended[pid] = code
        elif isinstance(spare, int) and len(fds) == 2:
            self._spares.append(_Spare(spare, fds[0], fds[1]))
            self._no_spare = None
            return
        elif "nospare" in message:
            code = message["nospare"]
            self._no_spare = (code if isinstance(code, int) else errno.EAGAIN, str(message.get("error", "")))
        for fd in fds:
            os.close(fd)

    def wait_ready(self) -> None:
        """Block until the reaper runs as a subreaper (`ReaperError` if it cannot); call it off the event loop."""
        with self._lock:
            self._ensure_ready()

    def _ensure_ready(self) -> None:
        if self._ready:
            return
        if self.closed:
            raise ReaperError("the session's reaper is closed")
        message = self._receive(_START_TIMEOUT_S)
        if "ready" not in message:
            self.closed = True
            raise ReaperError(f"the session's reaper could not start: {message.get('error', message)}")
        self._ready = True

    def _take_spare(self) -> _Spare:
        """The next spare: one already here, else wait for the one the reaper is forking."""
        asked = False
        while not self._spares:
            if _readable(self._sock.fileno(), 0.0):
                self._receive(0.0)
                continue
            if self._no_spare is not None:
                code, why = self._no_spare
                self._no_spare = None
                raise OSError(code, f"the session's reaper cannot fork: {why}")
            if not asked:  # the reaper forks the next spare at once, not after its delay
                self._sock.sendmsg([marshal.dumps({"kind": "spare"})], [], socket.MSG_NOSIGNAL)
                asked = True
            self._receive(_REPLY_TIMEOUT_S)
        return self._spares.pop(0)

    def spawn(
        self,
        argv: Sequence[str],
        *,
        executable: str | None,
        env: dict[str, str],
        cwd: str | None,
        stdin: int,
        stdout: int,
        stderr: int | None,
    ) -> ReapedChild:
        """Start ``argv`` as the reaper's child in a new session (as ``Popen(start_new_session=True)``).

        The command goes straight to a spare, which execs it; the reaper is not asked. ``stderr``
        None: into stdout. Raises OSError (with the errno) when the program cannot start,
        `ReaperError` when the reaper cannot be asked.
        """
        request = marshal.dumps(
            {"argv": list(argv), "exe": executable, "env": env, "cwd": cwd, "err": stderr is not None}
        )
        memfd = None
        if len(request) > _INLINE_MAX:
            memfd = os.memfd_create("shellrt-spawn", os.MFD_CLOEXEC)
            os.write(memfd, request)
            os.lseek(memfd, 0, os.SEEK_SET)
            request = marshal.dumps({"memfd": True})
        report_r, report_w = os.pipe2(os.O_CLOEXEC)
        fds = array.array(
            "i",
            [
                report_w,
                stdin,
                stdout,
                *(() if stderr is None else (stderr,)),
                *(() if memfd is None else (memfd,)),
            ],
        ).tobytes()
        try:
            with self._lock:
                self._ensure_ready()
                while _readable(self._sock.fileno(), 0.0):  # reports of ended commands, spares
                    self._receive(0.0)
                spare = self._send(request, fds)
        except BaseException:
            os.close(report_r)
            raise
        finally:
            os.close(report_w)
            if memfd is not None:
                os.close(memfd)
        try:
            report = self._report(report_r, spare)
        finally:
            os.close(report_r)
        if not report:
            return ReapedChild(self, spare.pid, spare.pidfd)
        with self._lock:
            if self._ended.pop(spare.pid, None) is None:
                self._dropped.add(spare.pid)
        os.close(spare.pidfd)
        raise _start_error(report)

    def _send(self, request: bytes, fds: bytes) -> _Spare:
        """Hand the request to a live spare (one that died meanwhile is let go for the next)."""
        for _ in range(_SPARE_TRIES):
            spare = self._take_spare()
            try:
                spare.sock.sendmsg(
                    [request], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)], socket.MSG_NOSIGNAL
                )
            except OSError:
                self._dropped.add(spare.pid)
                spare.discard()
                continue
            spare.sock.close()
            return spare
        raise ReaperError(f"{_SPARE_TRIES} spares of the session's reaper died before use")

    def _report(self, report_r: int, spare: _Spare) -> bytes:
        """What the spare wrote before exec closed the pipe: empty when the command runs."""
        if not _readable(report_r, _REPLY_TIMEOUT_S):
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(spare.pidfd, signal.SIGKILL)
            os.close(spare.pidfd)
            self.closed = True
            raise ReaperError(f"the session's spare did not start its command within {_REPLY_TIMEOUT_S:g}s")
        chunks = []
        while chunk := os.read(report_r, 4096):
            chunks.append(chunk)
        return b"".join(chunks)

    def try_spawn(
        self,
        argv: Sequence[str],
        *,
        executable: str | None,
        env: dict[str, str],
        cwd: str | None,
        stdin: int,
        stdout: int,
        stderr: int | None,
    ) -> ReapedChild | None:
        """`spawn`, or None when the reaper cannot be asked (gone: the caller starts the command itself)."""
        if self.closed:
            return None
        try:
            return self.spawn(
                argv, executable=executable, env=env, cwd=cwd, stdin=stdin, stdout=stdout, stderr=stderr
            )
        except ReaperError:
            self.closed = True
            return None

    def exit_code(self, pid: int, seen: int | None) -> int | None:
        """The exit code of ended command ``pid``: the reaper's report if it is here, else ``seen``
        (read from its zombie, `_zombie_code`), else the report once it comes."""
        with self._lock:
            if pid in self._ended:
                return self._ended.pop(pid)
            if seen is not None:
                self._dropped.add(pid)  # its report comes later: nobody will ask for it
                return seen
        return self.status(pid, wait_s=_STATUS_TIMEOUT_S)

    def status(self, pid: int, *, wait_s: float) -> int | None:
        """The exit code of command ``pid`` once the reaper reported it (waiting up to ``wait_s``)."""
        with self._lock:
            if pid in self._ended:
                return self._ended.pop(pid)
            if self.closed:
                return None
            deadline = time.monotonic() + wait_s
            try:  # other messages (a new spare, other commands' ends) may come first
                while pid not in self._ended:
                    self._receive(max(0.0, deadline - time.monotonic()))
            except (ReaperError, OSError):
                pass
            return self._ended.pop(pid, None)

    def close(self, timeout_s: float = 5.0) -> None:
        """End the reaper: it kills everything below it first (blocking; call from a worker thread)."""
        with self._lock:
            self.closed = True
            for spare in self._spares:
                spare.discard()
            self._spares.clear()
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)
            self._sock.close()
        try:
            self._proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


def _start_error(report: bytes) -> OSError:
    """The spare's report (errno, message, filename) as the OSError ``Popen`` raises."""
    try:
        code, why, filename = marshal.loads(report)
        error = OSError(int(code), str(why))
        error.filename = str(filename) or None
    except (ValueError, TypeError, EOFError):
        error = OSError(errno.EIO, f"bad report from the session's spare: {report[:100]!r}")
    return error


class ReapedChild:
    """A command started by the `Reaper`: the part of ``Popen`` a host process handle uses."""

    def __init__(self, reaper: Reaper, pid: int, pidfd: int) -> None:
        self._reaper = reaper
        self.pid = pid
        #: Opened by the reaper before it could reap the command: always this process, never a reused pid.
        self.pidfd = pidfd
        self.returncode: int | None = None
        self._lock = threading.Lock()

    def poll(self) -> int | None:
        """The exit code once the command ended: read from its zombie, or the reaper's report."""
        if self.returncode is not None or not self._lock.acquire(blocking=False):
            return self.returncode
        try:
            if self.returncode is None and _readable(self.pidfd, 0.0):
                code = self._reaper.exit_code(self.pid, _zombie_code(self.pid, self.pidfd))
                if code is None and self._reaper.closed:
                    code = -9  # the reaper died before it reported: the command is gone, how is unknown
                if code is not None:
                    self.returncode = code
                    os.close(self.pidfd)
        finally:
            self._lock.release()
        return self.returncode

    def take_pidfd(self) -> int:
        """A pidfd of the command for the caller to wait on and close (a duplicate of ours)."""
        return os.dup(self.pidfd)

    def __del__(self) -> None:
        if self.returncode is None:
            with contextlib.suppress(OSError):
                os.close(self.pidfd)


def _zombie_code(pid: int, pidfd: int) -> int | None:
    """The exit code of exited command ``pid`` from ``/proc/<pid>/stat``, without waiting for the reaper.

    Its parent (the reaper) has the code from ``waitpid``; until it reaps the command the
    zombie's stat shows the same code (``exit_code``, Linux >= 3.5). Trusted only when the
    kernel let us see it (``wchan`` 1: a permitted reader on Linux >= 5.16; otherwise 0 for
    both fields), and when the pidfd still names an unreaped process after the read (so the
    pid was not reaped and reused meanwhile). None: ask the reaper.
    """
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        raw = os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)
    fields = raw[raw.rfind(b")") + 2 :].split()
    if len(fields) < _STAT_FIELDS or fields[0] != b"Z" or fields[_WCHAN] != b"1":
        return None
    try:
        signal.pidfd_send_signal(pidfd, 0)
    except OSError:
        return None
    return os.waitstatus_to_exitcode(int(fields[_EXIT_CODE]))


#: Fields of ``/proc/<pid>/stat`` after the command name: state is 3 (index 0), wchan 35, exit_code 52.
_WCHAN, _EXIT_CODE, _STAT_FIELDS = 35 - 3, 52 - 3, 52 - 2


async def start_reaper() -> Reaper | None:
    """A started, ready reaper for a new session; None where none can start (commands then start
    as the owner's children, with `sandbox._proctree`'s nets only)."""
    import anyio

    try:
        reaper = Reaper()
    except ReaperError:
        return None
    try:
        await anyio.to_thread.run_sync(reaper.wait_ready)
    except ReaperError:
        await anyio.to_thread.run_sync(reaper.close)
        return None
    return reaper


class _HasReaper(Protocol):
    reaper: Reaper | None


async def stop_reaper(holder: _HasReaper) -> None:
    """Close ``holder``'s reaper (killing whatever is still below it), once."""
    import anyio

    reaper, holder.reaper = holder.reaper, None
    if reaper is not None:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(reaper.close)
