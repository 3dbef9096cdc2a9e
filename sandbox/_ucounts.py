"""A non-root caller's share of its per-uid kernel budgets that its sandboxed commands may hold.

A non-root caller's commands run as its own uid in a user namespace it created. The kernel
charges what they hold to that uid at every level up to the host's (``/proc/sys/user/max_*``,
and the rlimits it counts per uid), where the caller's editor, ``tail -f``, its user systemd and
the next session's guard draw on the same budget: one command holding every inotify instance (128
by default) or every queued signal left them none for as long as it ran (red team round 20).
The session gets half of each (`SHARE`): its user namespace's own ``/proc/sys/user`` limits
(written by the zygote, `sandbox._zygote_main.lower_ceilings`) and rlimits its commands inherit
and cannot raise (the zygote's own; ``prlimit`` for one bwrap per command). A root caller's
commands run as a leased uid of their own (`sandbox._uid_lease`) and need none of this.

The half is one budget for all of this process's sandboxes together, not one per session or
command (red team round 21: two sessions each holding half held everything, and one bwrap per
command had no inotify ceiling at all, its bwrap dropping every capability before the limits could
be written). `budget_prefix` puts every sandbox's bwrap (session zygote and one-shot alike) in one
user namespace of the process's own (`_BudgetNamespace`) whose ``/proc/sys/user`` limits are the
half: the kernel checks each level up, so what all its descendants hold together stays under them.
Every shellrt process of the uid joins the same one (round 22: two ``shellrt serve`` each made their
own and each got half): the holder that makes it serves it under a rendezvous, a socket in a
directory only the uid may enter (`sandbox._budget_meet.meeting_dir`), and the others' holders join it there
(`_MAKE`).
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import threading
from pathlib import Path

from sandbox._budget_meet import meeting_dir

__all__ = [
    "RLIMITS",
    "SHARE",
    "SYSCTLS",
    "BudgetError",
    "budget_prefix",
    "prlimit_flags",
    "session_rlimits",
    "session_sysctls",
]

#: A session may hold 1/SHARE of each budget; the caller keeps the rest.
SHARE = 2
#: Per-user-namespace limits a command can spend without privilege (user, mount and the other
#: namespaces are not among them: the seccomp filter refuses a command new namespaces).
SYSCTLS = ("max_inotify_instances", "max_inotify_watches", "max_fanotify_groups", "max_fanotify_marks")
#: Rlimits the kernel counts per uid rather than per process: (prlimit's name, resource).
RLIMITS = (("msgqueue", resource.RLIMIT_MSGQUEUE), ("sigpending", resource.RLIMIT_SIGPENDING))


def session_sysctls(root: Path = Path("/proc/sys/user")) -> dict[str, int]:
    """Each of `SYSCTLS` this kernel has, at 1/SHARE of the caller's own namespace's value."""
    out: dict[str, int] = {}
    for name in SYSCTLS:
        try:
            value = int((root / name).read_text())
        except (OSError, ValueError):
            continue  # an older kernel without it: nothing to share
        out[name] = max(1, value // SHARE)
    return out


def session_rlimits() -> list[tuple[str, int, int]]:
    """(prlimit's name, resource, value) for each of `RLIMITS` the caller has a finite soft limit on."""
    out: list[tuple[str, int, int]] = []
    for name, res in RLIMITS:
        soft, hard = resource.getrlimit(res)
        limit = soft if soft != resource.RLIM_INFINITY else hard  # the kernel keeps soft <= hard
        if limit != resource.RLIM_INFINITY:
            out.append((name, res, max(1, limit // SHARE)))
    return out


def prlimit_flags() -> list[str]:
    """``prlimit`` flags setting `session_rlimits` (soft and hard)."""
    return [f"--{name}={value}:{value}" for name, _res, value in session_rlimits()]


#: The socket's name in the rendezvous directory (tests give theirs a name of their own).
_RENDEZVOUS = "shellrt-budget-v1.sock"


class BudgetError(OSError):
    """Raised by `budget_prefix` when the shared budget namespace cannot be made or joined."""


#: Run by ``python3 -I -S -c`` (the caller's uid) with the rendezvous name and the limits: the
#: holder of the uid's budget namespace. First it connects to the holder serving ``NAME``
#: (`sandbox._budget_meet.meeting_dir`, passed as an fd it works in; -1: none usable, so it
#: neither joins nor serves and only makes and holds its own), opens that holder's namespace by the pid the
#: kernel gives for the connection and joins it when it checks out (`_BudgetNamespace`; nothing
#: crosses the socket, red team round 23); else it makes one: a user namespace mapping only the caller's own uid
#: and gid (as bwrap's own does), its ``/proc/sys/user`` limits written while this process holds
#: every capability in it (before any exec; a /proc/sys the host mounted read-only: through a
#: fresh /proc in a pid and mount namespace of the new namespace's own, as the zygote's
#: `lower_ceilings`). Then "ready made" or "ready joined"; it holds the namespace until its stdin
#: closes (its owner closed it or died), serving it under ``NAME`` when the name is free.
#: Every holder that shares its namespace holds ``NAME.live``'s flock shared while it lives: a start
#: makes a namespace of its own only when none does (round 54), else it waits for one to serve.
_MAKE = r"""
import ctypes, fcntl, os, select, socket, struct, sys, threading, time
libc = ctypes.CDLL(None, use_errno=True)
uid, gid = os.geteuid(), os.getegid()
MEET = int(sys.argv[1])  # the uid's own 0700 directory, checked by its fd: names below are relative
if MEET >= 0:
    os.fchdir(MEET); os.close(MEET)
NAME = sys.argv[2]
LOCK = NAME + ".lock"
LIVE = NAME + ".live"
limits = [a.split("=") for a in sys.argv[3:]]
HOST = os.stat("/proc/self/ns/user").st_ino
def fail(what):
    print("no", what, os.strerror(ctypes.get_errno()), flush=True); sys.exit(1)
def write(path, text):
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try: os.write(fd, text.encode())
    finally: os.close(fd)
def write_all(root):
    for name, value in limits:
        write(root + name, value)
def peer_uid(sock):
    return struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
def owned_child(fd):
    # a user namespace owned by this uid whose parent is the host's (a sandbox's is deeper)
    owner = bytearray(4)
    fcntl.ioctl(fd, 0xB704, owner, True)  # NS_GET_OWNER_UID (EINVAL: not a user namespace)
    parent = fcntl.ioctl(fd, 0xB702)  # NS_GET_PARENT
    try: return struct.unpack("I", owner)[0] == uid and os.fstat(parent).st_ino == HOST
    finally: os.close(parent)
def same_limits(fd):
    # checked in a child: a joined namespace cannot be left
    pid = os.fork()
    if pid == 0:
        ok = libc.setns(fd, 0x10000000) == 0
        try: ok = ok and all(open("/proc/sys/user/" + n).read().strip() == v for n, v in limits)
        finally: os._exit(0 if ok else 1)
    return os.waitpid(pid, 0)[1] == 0
def open_live():
    # LIVE, made if missing; None when it cannot be opened (a planted link, no room)
    try:
        return os.open(LIVE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    except OSError:
        return None
def someone_lives():
    # whether a holder sharing a namespace under NAME lives: each holds LIVE's flock shared while
    # it does (round 54). Not LOCK: the kernel does not hand a freed flock to its waiter, which
    # takes it when it next runs, so right after a server's exit LOCK was free while its survivor lived
    fd = open_live()
    if fd is None:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)
def hold_live():
    # LIVE's flock shared, held until this holder ends (an fd never closed); a probe holds it
    # exclusively for a moment at most
    fd = open_live()
    if fd is None:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
    except OSError:
        os.close(fd); return None
    return fd
def join():
    # the namespace of the holder serving NAME, opened by its own /proc entry when it checks out;
    # else None. Nothing is read from the server (it cannot stall this start or hand this process
    # an fd), and the connect never waits (a squatter's full backlog says EAGAIN at once). While
    # nobody serves but a holder lives (a server just ended and a survivor is taking over; a
    # server ending as this one connected) it asks again, for 10 s at most (round 54: 1 s, and
    # only while LOCK was taken, made a namespace of its own beside a survivor not yet running)
    deadline = time.monotonic() + 10
    while True:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC | socket.SOCK_NONBLOCK) as sock:
            try:
                sock.connect(NAME)
                pid, their_uid, _gid = peer_uid(sock)  # the listener's, recorded by the kernel at listen()
                served = True
            except OSError:
                served = False
        if served:
            if their_uid != uid or pid <= 0: return None
            try:
                fd = os.open("/proc/%d/ns/user" % pid, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                fd = -1  # the server ended since: its survivor takes over
            if fd >= 0:
                try:
                    if owned_child(fd) and same_limits(fd) and libc.setns(fd, 0x10000000) == 0:
                        return True
                except OSError:
                    pass
                finally:
                    os.close(fd)
                return None
        if not someone_lives() or time.monotonic() > deadline: return None
        time.sleep(0.02)
def make():
    if libc.unshare(0x10000000): fail("unshare(CLONE_NEWUSER)")
    write("/proc/self/setgroups", "deny")
    write("/proc/self/uid_map", "%d %d 1" % (uid, uid))
    write("/proc/self/gid_map", "%d %d 1" % (gid, gid))
    try:
        write_all("/proc/sys/user/")
    except OSError:
        if libc.unshare(0x20000 | 0x20000000): fail("unshare(CLONE_NEWNS|CLONE_NEWPID)")
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                if libc.mount(None, b"/", None, 0x4000 | 0x40000, None) == 0 and libc.mount(b"proc", b"/proc", b"proc", 0xE, None) == 0:
                    write_all("/proc/sys/user/"); code = 0
            finally:
                os._exit(code)
        if os.waitpid(pid, 0)[1]: print("no /proc/sys/user limits", flush=True); sys.exit(1)
joined = join() if MEET >= 0 else None
if not joined: make()
live = hold_live() if MEET >= 0 else None  # a start from now on waits for this one's server
def serve():
    # a listener on NAME once it is free (its holder ended), else None. The name is taken only by
    # the holder of LOCK's flock (released when it dies), which alone removes a stale socket file
    global lock
    if lock is None:
        try:
            fd = os.open(LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        except OSError:
            return None
        try: fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd); return None
        lock = fd
    try: os.unlink(NAME)
    except OSError: pass
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC | socket.SOCK_NONBLOCK)
    try:
        sock.bind(NAME); sock.listen(16)
    except OSError:
        sock.close(); return None
    return sock
def wait_for_lock(taken, wake):
    # a holder not serving waits on LOCK itself: the kernel hands it over the moment the serving
    # holder dies, so a start in between finds the lock taken and the name served within ms
    try:
        fd = os.open(LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError:
        return  # the 2 s poll below still takes the name over
    taken.append(fd)
    os.write(wake, b"x")
lock = None
listener = serve() if MEET >= 0 else None  # before "ready": a process that starts next finds this one's namespace
print("ready", "joined" if joined else "made", flush=True)
taken, (woken, wake) = [], os.pipe()
if listener is None and MEET >= 0:
    threading.Thread(target=wait_for_lock, args=(taken, wake), daemon=True).start()
while True:
    if listener is None and MEET >= 0:
        if taken and lock is None:
            lock = taken[0]
        listener = serve()
    ready = select.select([sys.stdin, woken] + ([listener] if listener else []), [], [], None if listener or MEET < 0 else 2)[0]
    if woken in ready:
        os.read(woken, 1)
    if sys.stdin in ready and not os.read(sys.stdin.fileno(), 4096):
        if listener is not None:
            try: os.unlink(NAME)  # under the lock: no other holder serves the path yet
            except OSError: pass
        break  # its owner closed it or died
    if listener in ready:
        try:
            # the name is only a rendezvous: a joiner reads this holder's pid from the connection
            # and opens /proc/<pid>/ns/user itself. Nothing is sent, so no fd can reach whoever
            # connects (a network="host" sandbox's command; a peer whose pid was reused).
            listener.accept()[0].close()
        except OSError:
            pass  # the peer gave up, or no fd left: the holder goes on holding
"""


class _BudgetNamespace:
    """The process's budget namespace (`budget_prefix`), owned by a long-lived holder process.

    The holder (`_MAKE`, a child of this process) stays in the namespace until its stdin (a
    close-on-exec pipe only this process writes) reaches EOF: when this process closes it or
    dies, so it dies with its owner. nsenter joins by ``/proc/<holder pid>/ns/user``. The holder
    is dumpable whatever this process is (``execve`` without a credential change makes it so),
    so a service that dropped root with ``setuid`` (non-dumpable) needs no ``prctl`` (red team
    round 22; round 21 opened this process's own ``/proc/<pid>/fd`` entry). Its pid cannot be
    reused while this process holds it unreaped: it is never waited for while in use (a holder
    that died stays a zombie, whose credentials still hold the namespace)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holder: subprocess.Popen[bytes] | None = None
        self._uid = -1

    def path(self) -> str:
        """``/proc/<holder pid>/ns/user``: no namespace fd is ever inherited (bwrap would hand it
        on to the command). Raises `BudgetError`."""
        with self._lock:
            if self._holder is None or self._uid != os.geteuid():
                holder = self._make()
                try:
                    _check_joinable(f"/proc/{holder.pid}/ns/user")
                except BaseException:
                    _stop(holder)
                    raise
                if self._holder is not None:
                    _stop(self._holder)  # another euid's: no sandbox of this one joins it
                self._holder, self._uid = holder, os.geteuid()
            return f"/proc/{self._holder.pid}/ns/user"

    def holder_pid(self) -> int | None:
        """The holder's pid, once made (tests: it must die with this process)."""
        return None if self._holder is None else self._holder.pid

    @staticmethod
    def _make() -> subprocess.Popen[bytes]:
        limits = [f"{name}={value}" for name, value in session_sysctls().items()]
        meet = meeting_dir()  # None: this process's own namespace, shared with nobody (warned)
        try:
            helper = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _MAKE, str(-1 if meet is None else meet), _RENDEZVOUS, *limits],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd="/",
                env={},
                pass_fds=() if meet is None else (meet,),
                start_new_session=True,  # a terminal's ^C to this process's group must not end it
            )
        except OSError as exc:
            raise BudgetError(exc.errno, f"cannot start the budget namespace holder: {exc}") from exc
        finally:
            if meet is not None:
                os.close(meet)
        assert helper.stdout is not None
        try:
            said = helper.stdout.readline().decode("utf-8", "replace").strip()
        finally:
            helper.stdout.close()
        if said not in ("ready made", "ready joined"):
            _stop(helper)
            raise BudgetError(f"cannot make the sandboxes' budget namespace ({said or 'no answer'})")
        return helper


def _stop(holder: subprocess.Popen[bytes]) -> None:
    """End a holder: EOF on its stdin, then reap it (only once no sandbox joins it any more)."""
    if holder.stdin is not None:
        holder.stdin.close()
    try:
        holder.wait(timeout=30)
    except subprocess.TimeoutExpired:
        holder.kill()
        holder.wait()


def _nsenter() -> str:
    found = shutil.which("nsenter", path=os.defpath + ":/usr/sbin:/sbin")
    if found is None:
        raise BudgetError(
            "a non-root caller's sandboxes need util-linux's nsenter (apt-get install util-linux)"
        )
    return found


def _check_joinable(path: str) -> None:
    """Once: another process of this uid can join the namespace by ``path`` (a /proc mounted
    with ``hidepid`` or a security module might refuse it): said at the session's start, not as
    every command failing."""
    result = subprocess.run(
        [_nsenter(), f"--user={path}", "--preserve-credentials", "--", "true"],
        capture_output=True,
        timeout=30,
        check=False,
        env={"PATH": os.defpath},  # nsenter finds `true` on the system's path, never the caller's
        cwd="/",
    )
    if result.returncode != 0:
        said = result.stderr.decode("utf-8", "replace").strip()
        raise BudgetError(
            f"cannot join the sandboxes' budget namespace ({said or result.returncode}) by {path}; "
            "check that this uid may open its own processes' /proc/<pid>/ns entries, or run as root"
        )


_NAMESPACE = _BudgetNamespace()


def budget_prefix() -> list[str]:
    """For a non-root caller: the argv to put before a sandbox's bwrap (after any ``prlimit``) so
    that its user namespace is a child of the process's budget namespace, whose ``/proc/sys/user``
    limits are `session_sysctls`; empty for root (commands spend a leased uid's budgets). Pair it
    with `prlimit_flags` on the same start: the kernel checks the namespace's shared count of the
    per-uid rlimits against the rlimits its child was made under. Raises `BudgetError` (with what
    to do) when the namespace cannot be made: no sandbox then, never one without the ceilings."""
    if os.geteuid() == 0 or not session_sysctls():
        return []
    return [_nsenter(), f"--user={_NAMESPACE.path()}", "--preserve-credentials", "--"]
