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

- starts each command with the owner's stdio fds, passed over a socket (CPython's
  vfork+exec called directly, as `sandbox._spawn` does: Popen's system calls without
  its ~100k instructions of Python), and answers with its pid and a pidfd, then,
  when it reaps it, its exit status;
- kills every other child (adopted orphans and what they started) whenever no
  command of the session is running: a leftover dies when its command ends, or
  its timeout's tree kill ends it, unless another command or background task
  of the session still runs (then at the next idle moment or at close);
- at close, or when the owner dies (its socket ends), kills everything below it
  and exits.

It is the commands' own uid's process: a command that kills it (``kill -9 $PPID``) before it
detaches leaves it nothing to adopt (round 17, left open: docs/security.md).

The owner does not wait for the exit report when the command's zombie shows its
code (`_zombie_code`): waiting would cost a wake-up of the reaper and then of the
owner, per command, on a loaded machine.

Cost: one Python start (~20 ms) per session, taken before the first command, and
a socket round trip per command (measured in docs/performance.md). Where the reaper
cannot start, commands start as before (`sandbox._proctree`'s nets only).

A pre-forked spare child per command (the owner sending straight to it) was built and
measured: 3x the CPU per command (a fork of the interpreter, its copy-on-write faults,
the forked address space torn down at each exec) and slower under load; not kept.

The lean ``shellrt run`` (`shellrt.cli._local_run`) is shellrt's own process and runs
one command: it marks itself subreaper for that run instead (`sandbox._subreaper`),
which costs no extra process.
"""

from __future__ import annotations

import array
import contextlib
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

from sandbox._ownerguard import REAPER_VAR, owner_marker_token
from sandbox._proctree import stat_fields
from sandbox._spawn import Child

__all__ = ["ReapedChild", "Reaper", "ReaperError", "ReaperLostError", "start_reaper", "stop_reaper"]

#: Requests larger than this travel in a memfd (a datagram socket caps a message's size).
_INLINE_MAX = 60_000
_RECV_SIZE = 65_536
#: How long the reaper may take to start, and to answer a request.
_START_TIMEOUT_S = 15.0
_REPLY_TIMEOUT_S = 15.0
#: After a command's pidfd says it exited, how long its status may take to arrive.
_STATUS_TIMEOUT_S = 2.0
#: How long the owner waits on a silent reaper before it continues it (a command of its uid may
#: stop it: ``kill -STOP $PPID``; red team round 48), and again after each such wait.
_NUDGE_S = 0.05

#: The reaper: fd 0 is its socket to the owner. See the module docstring.
_REAPER = r"""
import array, ctypes, marshal, os, select, signal, socket, sys, time
sock = socket.socket(fileno=0)
def send(msg, fds=()):
    try:
        sock.sendmsg([marshal.dumps(msg)], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds).tobytes())] if fds else [])
    except OSError:
        pass  # the owner is gone: what is left is killed when its socket's end is read
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
    send({"error": "prctl(PR_SET_CHILD_SUBREAPER): " + os.strerror(ctypes.get_errno())})
    sys.exit(1)
# The owner's death continues this process (PR_SET_PDEATHSIG, SIGCONT): a command of its uid may have
# stopped it (kill -STOP $PPID), and stopped it never read its socket's end, never swept what it had
# adopted (red team round 49). SIGCONT is harmless when it comes early (a thread of the owner ends).
libc.prctl(1, signal.SIGCONT, 0, 0, 0)
# A command of the caller's uid may raise this process's priority (the kernel checks the caller's
# limits, which it has): every child starts under SCHED_OTHER at nice >= 0 all the same (round 37).
try:
    os.sched_setscheduler(0, os.sched_getscheduler(0) | os.SCHED_RESET_ON_FORK, os.sched_getparam(0))
except OSError:
    pass
# No signal is ignored here: an ignored signal stays ignored across exec, in every command. The
# reaper leads its own session without a terminal, so no terminal's SIGINT/SIGHUP reaches it.
wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
signal.set_wakeup_fd(wake_w)
signal.signal(signal.SIGCHLD, lambda *_: None)
signal.signal(signal.SIGTERM, lambda *_: None)
ME = os.getpid()
CHILDREN = "/proc/%d/task/%d/children" % (ME, ME)
roots = set()  # the commands: never killed while the session is idle
# CPython 3.11's vfork+exec, as `sandbox._spawn` uses it: Popen's system calls without its Python
# (~100k instructions per start); any other version goes through Popen.
if sys.implementation.name == "cpython" and sys.version_info[:2] == (3, 11):
    from _posixsubprocess import fork_exec
else:
    fork_exec = None
popens = {}  # pid -> Popen of the commands started without fork_exec
def children():
    try:
        fd = os.open(CHILDREN, os.O_RDONLY | os.O_CLOEXEC)
        try:
            return [int(p) for p in os.read(fd, 1 << 20).split()]
        finally:
            os.close(fd)
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
    p = popens.pop(pid, None)
    if p is not None:
        p.returncode = os.waitstatus_to_exitcode(status)
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
def start(argv, exe, env, cwd, stdin, stdout, stderr):
    # Popen(argv, executable=exe, env=env, cwd=cwd, start_new_session=True, close_fds=True)'s pid.
    if fork_exec is None:
        import subprocess
        p = subprocess.Popen(argv, executable=exe, stdin=stdin, stdout=stdout, stderr=stderr, cwd=cwd,
                             env=env, start_new_session=True, close_fds=True)
        popens[p.pid] = p  # held until reaped here: a dropped running Popen is reaped by the next one
        return p.pid
    program = exe or argv[0]
    if os.path.dirname(program):
        candidates = (os.fsencode(program),)
    else:
        candidates = tuple(os.path.join(os.fsencode(d), os.fsencode(program)) for d in os.get_exec_path(env))
    env_list = []
    for k, v in env.items():
        k = os.fsencode(k)
        if b"=" in k:
            raise ValueError("illegal environment variable name")
        env_list.append(k + b"=" + os.fsencode(v))
    err_r, err_w = os.pipe2(os.O_CLOEXEC)
    try:
        pid = fork_exec(argv, candidates, True, (err_w,), cwd, env_list, stdin, -1, -1, stdout, -1, stderr,
                        err_r, err_w, True, True, -1, None, None, None, -1, None, True)
    except BaseException:
        os.close(err_r)
        raise
    finally:
        os.close(err_w)
    try:
        report = b""
        while chunk := os.read(err_r, 50000):
            report += chunk
            if len(report) > 50000:
                break
    finally:
        os.close(err_r)
    if not report:
        return pid
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
    kind, _, rest = report.partition(b":")
    code, _, why = rest.partition(b":")
    try:
        code = int(code, 16)
    except ValueError:
        code = 0
    if kind != b"OSError" or not code:
        raise OSError(5, "the child failed before exec: " + report[:200].decode(errors="replace"))
    raise OSError(code, os.strerror(code), cwd if why == b"noexec" else program)
def spawn(req, fds):
    try:
        if req.get("memfd"):
            with os.fdopen(fds.pop(), "rb") as f:
                req = marshal.loads(f.read())
        pid = start(req["argv"], req["exe"], req["env"], req["cwd"], fds[0], fds[1], fds[2] if len(fds) > 2 else fds[1])
    except (OSError, ValueError) as exc:
        send({"error": getattr(exc, "strerror", None) or str(exc), "errno": getattr(exc, "errno", None) or 22,
              "filename": str(getattr(exc, "filename", None) or "")})
        return
    finally:
        for fd in fds:
            os.close(fd)
    roots.add(pid)
    pidfd = os.pidfd_open(pid)
    send({"pid": pid}, [pidfd])
    os.close(pidfd)
send({"ready": ME})
poller = select.poll()
poller.register(sock.fileno(), select.POLLIN)
poller.register(wake_r, select.POLLIN)
while True:
    try:
        events = poller.poll()
    except InterruptedError:
        continue
    for fd, _ in events:
        if fd == wake_r:
            try:
                while os.read(wake_r, 4096):
                    pass
            except BlockingIOError:
                pass
            reap()
            if not roots:
                try:  # one system call says whether anything is below us: the common case, nothing
                    os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
                except ChildProcessError:
                    continue
                sweep(False)
            continue
        try:
            data, anc, _, _ = sock.recvmsg(65536, socket.CMSG_SPACE(8 * 4), socket.MSG_CMSG_CLOEXEC)
        except OSError:
            data = b""
        fds = []
        for level, kind, raw in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                a = array.array("i")
                a.frombytes(raw[: len(raw) - len(raw) % a.itemsize])
                fds += list(a)
        if not data:
            sweep(True)
            sys.exit(0)
        req = marshal.loads(data)
        if req.get("kind") == "spawn":
            spawn(req, fds)
        else:
            for fd in fds:
                os.close(fd)
"""


def _readable(fd: int, timeout_s: float) -> bool:
    """Whether ``fd`` is readable within ``timeout_s`` (poll: ``select`` fails on an fd past 1023,
    which a busy owner with many background tasks reaches)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(max(0, int(timeout_s * 1000 + 0.999))))


class ReaperError(Exception):
    """The reaper could not start or stopped answering (the caller starts commands itself then)."""


class ReaperLostError(ReaperError):
    """Raised by `HostRunner.spawn` when the session's reaper died while it was asked to start a
    command (a command killed it): the local backend starts another reaper and asks again, rather
    than starting the command as the owner's own child, where what it leaves goes to init."""


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
                # Its mark for the owner's watchdog (`sandbox._ownerguard`), which kills what is
                # below it when the owner dies, stopped or not (red team round 49). Never inherited:
                # each command's environment is its request's.
                env={REAPER_VAR: "local-" + owner_marker_token()},
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
        #: Commands whose exit code was read from their zombie: their report is dropped when it comes.
        self._dropped: set[int] = set()
        self.closed = False

    @property
    def pid(self) -> int:
        return self._proc.pid

    def _receive(self, timeout_s: float) -> tuple[dict[str, object], list[int]]:
        """One message (with the fds it carries); `ReaperError` when none comes in time or the socket ended.

        A reaper silent for `_NUDGE_S` is sent ``SIGCONT`` (and again each `_NUDGE_S`): a command
        that stopped it made the next start wait out the whole timeout, then the stopped reaper's
        close, ~20 s (red team round 48). An answer in time costs nothing more.
        """
        deadline = time.monotonic() + timeout_s
        while not _readable(self._sock.fileno(), min(_NUDGE_S, max(0.0, deadline - time.monotonic()))):
            if time.monotonic() >= deadline:
                raise ReaperError(f"the session's reaper did not answer within {timeout_s:g}s")
            self._resume()
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
        return (message if isinstance(message, dict) else {}), list(fds)

    def _reply(self) -> tuple[dict[str, object], list[int]]:
        """The next message that is not a command's end (those are kept for `status`)."""
        while True:
            message, fds = self._receive(_REPLY_TIMEOUT_S)
            pid, code = message.get("exit"), message.get("code")
            if isinstance(pid, int) and isinstance(code, int):
                self._file_exit(pid, code)
                continue
            return message, fds

    def _file_exit(self, pid: int, code: int) -> None:
        """Keep a command's exit code for `status`, unless nobody will ask (its zombie told it)."""
        if pid in self._dropped:
            self._dropped.discard(pid)
        else:
            self._ended[pid] = code

    def wait_ready(self) -> None:
        """Block until the reaper runs as a subreaper (`ReaperError` if it cannot); call it off the event loop."""
        with self._lock:
            self._ensure_ready()

    def _ensure_ready(self) -> None:
        if self._ready:
            return
        if self.closed:
            raise ReaperError("the session's reaper is closed")
        message, _ = self._receive(_START_TIMEOUT_S)
        if "ready" not in message:
            self.closed = True
            raise ReaperError(f"the session's reaper could not start: {message.get('error', message)}")
        self._ready = True

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

        ``stderr`` None: into stdout. Raises OSError (with the errno) when the program cannot
        start, `ReaperError` when the reaper cannot be asked.
        """
        request = marshal.dumps(
            {"kind": "spawn", "argv": list(argv), "exe": executable, "env": env, "cwd": cwd}
        )
        fds = [stdin, stdout, *(() if stderr is None else (stderr,))]
        memfd = None
        if len(request) > _INLINE_MAX:
            memfd = os.memfd_create("shellrt-spawn", os.MFD_CLOEXEC)
            os.write(memfd, request)
            os.lseek(memfd, 0, os.SEEK_SET)
            request, fds = marshal.dumps({"kind": "spawn", "memfd": True}), [*fds, memfd]
        try:
            with self._lock:
                self._ensure_ready()
                self._sock.sendmsg(
                    [request], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds).tobytes())]
                )
                message, got = self._reply()
        except OSError as exc:
            raise ReaperError(f"the session's reaper cannot be asked: {exc}") from exc
        finally:
            if memfd is not None:
                os.close(memfd)
        pid = message.get("pid")
        if isinstance(pid, int) and got:
            for extra in got[1:]:
                os.close(extra)
            return ReapedChild(self, pid, got[0])
        for fd in got:
            os.close(fd)
        errno, filename = message.get("errno"), message.get("filename")
        error = OSError(errno if isinstance(errno, int) else 0, str(message.get("error", message)))
        error.filename = filename or None
        raise error

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

    def exit_code(self, pid: int, pidfd: int) -> int | None:
        """The exit code of ended command ``pid``: the reaper's report if it is here already, else the
        code its zombie shows (`_zombie_code`: no wait for the reaper to be scheduled), else the
        report once it comes."""
        with self._lock:
            if pid not in self._ended and not self.closed:
                try:
                    while _readable(self._sock.fileno(), 0.0):
                        self._file_reports(0.0)
                except ReaperError:
                    pass
            if pid in self._ended:
                return self._ended.pop(pid)
            seen = _zombie_code(pid, pidfd)
            if seen is not None:
                self._dropped.add(pid)  # its report comes later: nobody will ask for it
                return seen
        return self.status(pid, wait_s=_STATUS_TIMEOUT_S)

    def _file_reports(self, timeout_s: float) -> None:
        """Read one message within ``timeout_s`` and keep it if it is a command's end."""
        message, fds = self._receive(timeout_s)
        for fd in fds:
            os.close(fd)
        ended, code = message.get("exit"), message.get("code")
        if isinstance(ended, int) and isinstance(code, int):
            self._file_exit(ended, code)

    def status(self, pid: int, *, wait_s: float) -> int | None:
        """The exit code of command ``pid`` once the reaper reported it (waiting up to ``wait_s``)."""
        with self._lock:
            if pid in self._ended:
                return self._ended.pop(pid)
            if self.closed:
                return None
            deadline = time.monotonic() + wait_s
            try:  # other commands' ends may come first
                while pid not in self._ended:
                    self._file_reports(max(0.0, deadline - time.monotonic()))
            except (ReaperError, OSError):
                pass
            return self._ended.pop(pid, None)

    def _resume(self) -> None:
        """Continue the reaper if a command stopped it (its pid is ours until `close` reaps it)."""
        if not self._ended_unreaped():
            with contextlib.suppress(OSError):
                os.kill(self._proc.pid, signal.SIGCONT)

    def alive(self) -> bool:
        """The reaper process still runs: a command of its uid can kill it (``kill -9 $PPID``)."""
        return not self.closed and not self._ended_unreaped()

    def _ended_unreaped(self) -> bool:
        """Whether the reaper process ended, told without reaping it (``WNOWAIT``).

        Its pid stays ours, a zombie, until `close` reaps it: the session reads "the reaper's
        children" by that pid (`children`, `children_within`), and a reaped pid is soon another
        process's (``pid_max`` may be 32768), whose children a sweep would then kill (round 29).
        """
        if self._proc.returncode is not None:
            return True
        try:
            return os.waitid(os.P_PID, self._proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:  # reaped elsewhere: its pid is no longer ours to read
            return True

    def children(self) -> list[int]:
        """The processes directly below the reaper ([] once it ended or closed: see `alive`)."""
        if self.closed or self._ended_unreaped():
            return []
        pid = self._proc.pid
        try:
            fd = os.open(f"/proc/{pid}/task/{pid}/children", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return []
        try:
            return [int(p) for p in os.read(fd, 1 << 20).split()]
        except (OSError, ValueError):
            return []
        finally:
            os.close(fd)

    def children_within(self, allowed: set[int]) -> bool:
        """Whether every process directly below the reaper is in ``allowed`` (False when unsure).

        Anything a command left behind once its root ended is re-parented to the reaper
        (its subreaper) before the root's pidfd says it ended, so the reaper's own
        ``children`` list, one small read, tells whether a /proc sweep has anything to
        find. A dead reaper (its pid kept unreaped until `close`, so never reused) or no such file: unsure.
        """
        if self.closed or self._ended_unreaped():
            return False
        pid = self._proc.pid
        try:
            fd = os.open(f"/proc/{pid}/task/{pid}/children", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            listed = os.read(fd, 1 << 16)
        except OSError:
            return False
        finally:
            os.close(fd)
        if len(listed) >= 1 << 16:
            return False
        return all(int(p) in allowed for p in listed.split())

    def close(self, timeout_s: float = 5.0) -> None:
        """End the reaper: it kills everything below it first (blocking; call from a worker thread)."""
        with self._lock:
            self.closed = True
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)
            self._sock.close()
        # A stopped reaper never read the end: it was killed after the wait, without its sweep,
        # and what it had adopted went to init (round 48). Continued, it sweeps and exits.
        self._resume()
        try:
            self._proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


class ReapedChild(Child):
    """A command started by the `Reaper`: the part of ``Popen`` a host process handle uses
    (`Child`'s ``poll``, the exit code read from its zombie or the reaper's report)."""

    def __init__(self, reaper: Reaper, pid: int, pidfd: int) -> None:
        super().__init__(pid)
        self._reaper = reaper
        #: Opened by the reaper before it could reap the command: always this process, never a reused pid.
        self.pidfd = pidfd

    def _reap(self) -> None:
        if not _readable(self.pidfd, 0.0):
            return
        code = self._reaper.exit_code(self.pid, self.pidfd)
        if code is None and self._reaper.closed:
            code = -9  # the reaper died before it reported: the command is gone, how is unknown
        if code is not None:
            self.returncode = code
            os.close(self.pidfd)

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
    fields = stat_fields(pid)
    if fields is None or len(fields) < _STAT_FIELDS or fields[0] != b"Z" or fields[_WCHAN] != b"1":
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
