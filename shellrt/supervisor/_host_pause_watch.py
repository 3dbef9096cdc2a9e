"""Kill what a host pause stopped when shellrt dies before it continues it.

Why: a pause (`_host_pause`) stops every process of a session's sandboxes while a hook runs on
the host, and only shellrt continues them. Killed during a hook (SIGKILL, the OOM killer), it
left them stopped: on docker the container's init and executor are among them, so the executor
never read the end of its attach stream and the container stayed, its processes in ``T``, until
another shellrt start reaped it (red team round 39; bwrap's die with its zygote).

So one small watcher process per shellrt process (started at its first pause, in its own session)
is given a duplicate pidfd of each process before the pause stops it, and drops them when the
pause ends. When its socket ends while it still holds some (shellrt died), it kills them
(``SIGKILL`` lands on a stopped process; a container's init killed ends its container, which
docker removes). Not continued: the owner's sandboxes die with it on every backend, and a hook
of the dead owner may still be running.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading

__all__ = ["WatchError", "drop", "hold", "key_for", "watcher_pid"]

#: The watcher: ``h`` + key with one pidfd holds it, ``g`` + key a hook's (its group is killed
#: too), each answered ``+`` (held) or ``-`` (not: the kernel dropped the descriptor past the
#: watcher's ``RLIMIT_NOFILE``, ``MSG_CTRUNC``); ``d`` + key closes the key's. At the end of its
#: socket (its owner died, or exited), ``SIGKILL`` through each pidfd still held, and to the group a
#: live hook leads. It raises its own descriptor limit to the hard one first (round 40 hooks3).
_SCRIPT = r"""
import array, os, resource, signal, socket, sys
s = socket.socket(fileno=int(sys.argv[1]))
try:
    resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)
except (OSError, ValueError):
    pass
held = {}
groups = set()
def answer(byte):
    try:
        s.send(byte)
        return True
    except OSError:  # its owner is gone: kill what is held
        return False
while True:
    fds = array.array("i")
    try:
        msg, anc, flags, _ = s.recvmsg(16, socket.CMSG_SPACE(4 * fds.itemsize))
    except InterruptedError:
        continue
    except OSError:
        msg, anc, flags = b"", [], 0
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
    if not msg:
        break
    if msg[:1] in b"hg":
        if len(fds) != 1 or flags & socket.MSG_CTRUNC:
            for fd in fds:
                os.close(fd)
            if not answer(b"-"):
                break
            continue
        held.setdefault(msg[1:], []).extend(fds)
        if msg[:1] == b"g":
            groups.update(fds)
        if not answer(b"+"):
            break
        continue
    for fd in held.pop(msg[1:], []) + list(fds):
        groups.discard(fd)
        os.close(fd)
for fds in held.values():
    for fd in fds:
        try:
            if fd in groups:  # alive, so its pid is still its group's id: never a reused one
                signal.pidfd_send_signal(fd, 0)
                with open(f"/proc/self/fdinfo/{fd}") as info:
                    pid = [int(l.split()[1]) for l in info if l.startswith("Pid:")][0]
                if pid > 0:
                    os.killpg(pid, signal.SIGKILL)
            signal.pidfd_send_signal(fd, signal.SIGKILL)
        except (OSError, IndexError, ValueError):
            pass
"""


class WatchError(Exception):
    """Raised when no watcher can hold a process the pause would stop (it could not start, or
    died): the pause refuses rather than leave a tree stopped for good should shellrt die."""


_lock = threading.Lock()
_sock: socket.socket | None = None
_proc: subprocess.Popen[bytes] | None = None
#: The keys the watcher holds now, and the timer that ends it once it held none for `IDLE_S`.
_held: set[bytes] = set()
_idle: threading.Timer | None = None
#: How long a watcher holding nothing is kept for the next pause or hook (a start: ~3 ms).
IDLE_S = 1.0


def _start() -> socket.socket:
    """The watcher's socket (started once a process; again if it died). Under `_lock`."""
    global _sock, _proc
    if _sock is not None and _proc is not None and _proc.poll() is None and _sock.fileno() >= 0:
        return _sock
    if _sock is not None:
        _sock.close()
        _sock = None
    _held.clear()  # a dead watcher held nothing: each pause's hold raises or starts anew
    if not sys.executable:
        raise WatchError("no Python interpreter to start the pause's watcher (sys.executable is empty)")
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        _proc = subprocess.Popen(  # our own interpreter, isolated (-I -S), our script
            [sys.executable, "-I", "-S", "-c", _SCRIPT, str(theirs.fileno())],
            pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd="/",
            env={"PATH": "/usr/bin:/bin"},
            start_new_session=True,  # not in the terminal's group: a Ctrl-C is shellrt's to handle
        )
    except OSError as exc:
        mine.close()
        raise WatchError(f"the pause's watcher could not start ({exc.strerror or exc})") from exc
    finally:
        theirs.close()
    _sock = mine
    return mine


def hold(key: bytes, pidfd: int, *, group: bool = False) -> None:
    """Give the watcher a duplicate of ``pidfd`` under ``key`` (before its process is stopped; with
    ``group``, a hook's leader: its process group is killed too). Raises `WatchError` when no
    watcher takes it."""
    global _sock
    op = b"g" if group else b"h"
    with _lock:
        for attempt in range(2):  # a watcher that died is started again once
            sock = _start()
            try:
                sock.sendmsg(
                    [op + key], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, pidfd.to_bytes(4, sys.byteorder))]
                )
                answer = sock.recv(1)  # it said whether it holds it: one past its limit was dropped
                if answer == b"+":
                    _held.add(key)
                    _cancel_idle()
                    return
                if answer == b"-":  # alive, holding what it held: not restarted
                    raise WatchError(
                        "the pause's watcher could not take one more process (its descriptor limit, "
                        "RLIMIT_NOFILE, is reached)"
                    )
                raise ConnectionResetError("the pause's watcher ended")
            except OSError as exc:
                sock.close()
                _sock = None
                if attempt:
                    raise WatchError(f"the pause's watcher took no process ({exc.strerror or exc})") from exc


def drop(key: bytes) -> None:
    """Tell the watcher the pause ``key`` ended (its processes were continued): nothing to kill."""
    global _idle
    with _lock:
        _held.discard(key)
        if _sock is not None:
            try:
                _sock.send(b"d" + key)
            except OSError:  # gone: it holds nothing of ours any more
                pass
            if not _held and _idle is None:
                _idle = threading.Timer(IDLE_S, _end_if_idle)
                _idle.daemon = True
                _idle.start()


def _cancel_idle() -> None:
    """Under `_lock`: the watcher holds something again; it stays."""
    global _idle
    if _idle is not None:
        _idle.cancel()
        _idle = None


def _end_if_idle() -> None:
    """End a watcher that held nothing for `IDLE_S`: its socket closes with nothing held, so it exits
    having killed nothing (a process-lifetime helper was a process the embedding program never started
    and the test suite's leftover check found, round 39 lead); the next hold starts another."""
    global _sock, _proc, _idle
    with _lock:
        if _held or _sock is None or _idle is None:
            return
        _idle = None
        _sock.close()
        _sock, proc, _proc = None, _proc, None
    if proc is not None:
        try:
            proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def watcher_pid() -> int | None:
    """The watcher's pid (tests), None before the first pause."""
    return None if _proc is None else _proc.pid


def key_for(token: int) -> bytes:
    """A pause's key: 8 bytes."""
    return token.to_bytes(8, "big")


def _fork_reset() -> None:
    """A forked child holds no watcher of its own (the parent's socket is the parent's), and closes
    its copy of the socket now: a thread of the parent inside `hold` when it forked left its frame,
    and the socket, alive in the child, and the watcher saw the parent's death only when the child
    exited (red team round 40 hooks3)."""
    global _sock, _proc, _lock, _held, _idle
    if _sock is not None:
        _sock.close()  # this process's descriptor only: the parent's stays open
    _sock, _proc, _lock, _held, _idle = None, None, threading.Lock(), set(), None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_fork_reset)
