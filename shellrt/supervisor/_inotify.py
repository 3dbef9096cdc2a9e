"""A minimal inotify reader (ctypes): which watched directories saw entry or content changes.

Used by `shellrt.supervisor.protect` to avoid ``lstat``-ing every directory of a
big workspace after each command. Events are queued by the kernel inside the
system call that caused them, so once a command has exited every change it
made is in the queue — whichever mount namespace or container made it (the
events belong to the inode). Anything unusual (queue overflow, a watch that
could not be added, a directory deleted or moved) tells the caller to fall
back to a full scan.

Watches are capped (`watch_cap`): each pins an inode and spends the uid's inotify budget, which
every program of that uid shares; a command that makes 60,000 directories made the host hold
60,000 watches for the session (red team, round 16). Past the cap, `add` refuses, as the kernel
does at its own limit, and the caller scans in full. All guards of a uid also stay under one
shared ceiling, counted from the kernel before each step (`shellrt.supervisor._watch_budget`,
round 17: eight sessions at an eighth each held the uid's whole budget).
"""

from __future__ import annotations

import ctypes
import functools
import os
import select
import struct
import threading
import weakref

from shellrt.supervisor._watch_budget import STEP, uid_ceiling, uid_watches

__all__ = ["MAX_WATCHES", "WATCHES_ENV", "Inotify", "InotifyEvents", "watch_cap"]

#: Watches one instance holds at most (``SHELLRT_GUARD_MAX_WATCHES`` overrides), and never more
#: than an eighth of the uid's ``fs.inotify.max_user_watches`` (24,066 of 192,530 here). Past it
#: a check lists every directory: ~90 ms per command for 10,000 directories, against ~3 ms.
MAX_WATCHES = 65536
WATCHES_ENV = "SHELLRT_GUARD_MAX_WATCHES"
_USER_WATCHES = "/proc/sys/fs/inotify/max_user_watches"


def watch_cap(environ: dict[str, str] | None = None) -> int:
    """How many directories one instance may watch (see `MAX_WATCHES`); a bad setting is the default."""
    env = os.environ if environ is None else environ
    try:
        cap = int(env.get(WATCHES_ENV, "") or MAX_WATCHES)
    except ValueError:
        cap = MAX_WATCHES
    try:
        with open(_USER_WATCHES) as fh:
            cap = min(cap, int(fh.read()) // 8)
    except (OSError, ValueError):
        pass
    return max(0, cap)

IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_UNMOUNT = 0x00002000
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_EXCL_UNLINK = 0x04000000
IN_ISDIR = 0x40000000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC

_MASK = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
    | IN_ONLYDIR
    | IN_DONT_FOLLOW
    | IN_EXCL_UNLINK
)
#: Events after which the caller's picture of the tree is stale beyond one directory.
_STRUCTURAL = IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT | IN_Q_OVERFLOW | IN_IGNORED
_HEADER = struct.Struct("iIII")


class InotifyEvents:
    """What one drain found (a plain class: ``dataclasses`` costs ``shellrt run`` ~4 ms)."""

    __slots__ = ("dirs", "full_scan", "new_dirs")

    def __init__(self) -> None:
        #: Paths of watched directories with any event (entries created/removed, files changed).
        self.dirs: set[str] = set()
        #: Directories created or moved in: (parent path, name).
        self.new_dirs: list[tuple[str, str]] = []
        #: Overflow, a watched directory gone or moved, an unknown watch: scan everything.
        self.full_scan = False

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, InotifyEvents):
            return NotImplemented
        return (self.dirs, self.new_dirs, self.full_scan) == (other.dirs, other.new_dirs, other.full_scan)

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def __repr__(self) -> str:
        return f"InotifyEvents(dirs={self.dirs!r}, new_dirs={self.new_dirs!r}, full_scan={self.full_scan!r})"


#: This process's instances, and the lock their grants are taken under: the kernel counts the watches
#: a guard holds, not the room granted to it and not yet used, so two guards of one process counting
#: at once could each be granted the same room (round 17's ceiling passed by 537 under load, CI84).
_INSTANCES: weakref.WeakSet[Inotify] = weakref.WeakSet()
_GRANTING = threading.Lock()


class Inotify:
    """One inotify instance watching directories by path."""

    def __init__(self, fd: int, libc: ctypes.CDLL) -> None:
        self.fd = fd
        self._libc = libc
        self._paths: dict[int, str] = {}
        self._cap = watch_cap()
        #: Watches this instance may hold before it counts the uid's again (`_grow`).
        self._granted = 0
        #: Asked before each read: a check of a quiet workspace (the common case, four drains a
        #: command) then makes no read that fails with EAGAIN, whose exception cost more than the
        #: syscall itself.
        self._poll = select.poll()
        self._poll.register(fd, select.POLLIN)
        _INSTANCES.add(self)

    @classmethod
    def open(cls) -> Inotify | None:
        """A new instance, or None where inotify is not available."""
        libc = _libc()
        if libc is None:
            return None
        try:
            fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        except AttributeError:
            return None
        if fd < 0:
            return None
        return cls(fd, libc)

    def add(self, path: str) -> bool:
        """Watch ``path`` (a directory, not followed if a symlink); False when the kernel or the cap refused."""
        held = len(self._paths)
        if held >= self._cap:
            return False
        if held >= self._granted and not self._grow(held):
            return False
        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(path), _MASK)
        if wd < 0:
            return False
        self._paths[wd] = path
        return True

    def _grow(self, held: int) -> bool:
        """Take the next step of watches if the uid's guards stay under their shared ceiling
        (`shellrt.supervisor._watch_budget`); False (the caller scans in full) if not.

        The uid's count walks ``/proc`` (~5 ms for 100 processes): it is taken before the grant
        lock, so guards of this process never wait for each other's walk, and what this process's
        other guards added or were granted since is added under the lock (their sizes are noted
        before the count: a watch added during it is counted twice, never missed)."""
        ceiling = uid_ceiling()
        before = {id(i): len(i._paths) for i in list(_INSTANCES) if i is not self}
        try:
            counted = uid_watches()
        except OSError:
            return False
        with _GRANTING:
            live = [i for i in list(_INSTANCES) if i is not self and i.fd >= 0]
            # every guard and program of the uid, this one excepted, and what this process's other
            # guards added after their sizes were noted (a guard opened since: all of its watches)
            added = sum(max(0, len(i._paths) - before.get(id(i), 0)) for i in live)
            others = counted - held + added
            # the room this process's other guards were granted and have not used yet
            promised = sum(max(0, i._granted - len(i._paths)) for i in live)
            step = min(max(STEP, held // 2), self._cap - held, ceiling - others - held - promised)
            if step <= 0:
                return False
            self._granted = held + step
        return True

    def drain(self) -> InotifyEvents:
        """Read every queued event."""
        out = InotifyEvents()
        while self._pending():
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return out
            except OSError:
                out.full_scan = True
                return out
            if not data:
                return out
            offset = 0
            while offset + _HEADER.size <= len(data):
                wd, mask, _cookie, length = _HEADER.unpack_from(data, offset)
                raw = data[offset + _HEADER.size : offset + _HEADER.size + length]
                offset += _HEADER.size + length
                if mask & _STRUCTURAL:
                    out.full_scan = True
                    if mask & IN_IGNORED:
                        self._paths.pop(wd, None)
                    continue
                path = self._paths.get(wd)
                if path is None:
                    out.full_scan = True
                    continue
                out.dirs.add(path)
                if mask & IN_ISDIR:
                    if mask & (IN_DELETE | IN_MOVED_FROM):
                        out.full_scan = True
                    elif mask & (IN_CREATE | IN_MOVED_TO):
                        out.new_dirs.append((path, os.fsdecode(raw.split(b"\0", 1)[0])))
        return out

    def _pending(self) -> bool:
        """Whether a read may return something: events queued, or an error for the read to report
        (a closed or broken descriptor polls as POLLNVAL/POLLERR, and the read then fails)."""
        if self.fd < 0:
            return True
        try:
            return bool(self._poll.poll(0))
        except (OSError, RuntimeError):  # RuntimeError: a concurrent poll (callers hold a lock)
            return True

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __del__(self) -> None:  # a supervisor that was never closed must not leak the descriptor
        try:
            self.close()
        except OSError:
            pass


@functools.cache
def _libc() -> ctypes.CDLL | None:
    """The C library, loaded once: the interpreter's own symbols (it links libc), else by name.

    ``ctypes.util.find_library`` runs ``ldconfig -p`` (a process and ~1 MB of
    output) on every call: once per Supervisor, and first on ``shellrt run``'s path.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.inotify_init1  # noqa: B018 - a lookup: raises AttributeError when absent
        return libc
    except (OSError, AttributeError):
        pass
    from ctypes.util import find_library

    name = find_library("c")
    if name is None:
        return None
    try:
        return ctypes.CDLL(name, use_errno=True)
    except OSError:
        return None
