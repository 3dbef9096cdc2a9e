"""Whether any name on the way to a few host paths changed, told by the kernel (inotify, one poll).

`sandbox.bwrap` masks shellrt's own places (budget meeting places, static program caches) that a
sandbox would show; working them out costs ~36 ``lstat``s and ``realpath``s, and the set must be
checked before every command (a change replaces the zygote). Each of those places depends only on
the names along its path (a directory made, removed, renamed, replaced by a link, chowned): a watch
on every existing directory of the way, each told the one name below it that matters, says when to
work them out again (red team round 27). Mounts make no inotify event: a mount over one of these
directories (root's, on the host) was not seen until the set was worked out again for another
reason, and a later bwrap copied the new mount table with the old masks. Each watch now also polls
its own ``/proc/self/mountinfo``, which the kernel marks (``POLLPRI``) at any change of this
process's mount table, and compares the mounts at or above its ways (round 28, `_MountWatch`).
"""

from __future__ import annotations

import ctypes
import os
import re
import select
import stat
import struct
import threading
from collections.abc import Iterable
from typing import Any

from sandbox._inotify import _libc as libc

__all__ = ["PathWatch"]

#: A child's mode, owner or link count; made; removed; renamed away or in. The directory itself
#: removed, renamed or unmounted.
_IN_ATTRIB = 0x004
_IN_MOVED_FROM = 0x040
_IN_MOVED_TO = 0x080
_IN_CREATE = 0x100
_IN_DELETE = 0x200
_IN_DELETE_SELF = 0x400
_IN_MOVE_SELF = 0x800
_IN_ONLYDIR = 0x01000000
_IN_DONT_FOLLOW = 0x02000000
_MASK = _IN_ATTRIB | _IN_MOVED_FROM | _IN_MOVED_TO | _IN_CREATE | _IN_DELETE | _IN_DELETE_SELF | _IN_MOVE_SELF
_HEADER = struct.Struct("iIII")  # wd, mask, cookie, len (then len bytes of name)
#: Reads of 64 KiB one `_Shared.drain` makes at most (~2 MiB of events, ~60,000 renames).
_DRAIN_READS = 32


def _ways(path: str) -> Iterable[tuple[str, str]]:
    """(directory, name below it) along ``path`` from ``/``, as far as each step is a directory and
    no link (a link's replacement is an event of its parent; where it points is walked separately)."""
    parts = [p for p in path.split("/") if p and p != "."]
    here = "/"
    for name in parts:
        yield here, name
        there = os.path.join(here, name)
        try:
            if not stat.S_ISDIR(os.lstat(there).st_mode):
                return
        except OSError:
            return
        here = there


class _Shared:
    """This process's one inotify instance, shared by every `PathWatch`: instances are a per-uid
    budget (128 by default, half of it a non-root caller's commands'), so one a backend would take
    the caller's share with many sessions. Events are read by whichever watch asks and marked on
    each watch the directory and name concern."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.fd: int | None = None
        self._poll = select.poll()
        self._add: Any = None
        self._rm: Any = None
        #: wd -> watch -> the names below that directory the watch cares for
        self.users: dict[int, dict[PathWatch, set[bytes]]] = {}

    def open(self) -> int:
        """The instance's fd (made on first use). Under `lock`."""
        if self.fd is None:
            lib = libc()
            if lib is None:
                raise OSError("inotify: no C library to call")
            fd = lib.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
            if fd < 0:
                err = ctypes.get_errno()
                raise OSError(err, f"inotify_init1: {os.strerror(err)}")
            self._add, self._rm = lib.inotify_add_watch, lib.inotify_rm_watch
            self._add.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
            self._rm.argtypes = [ctypes.c_int, ctypes.c_int]
            self.fd = fd
            self._poll = select.poll()
            self._poll.register(fd, select.POLLIN)
        return self.fd

    def add(self, path: str) -> int:
        """A wd for the directory ``path`` (the same one for every watch of it), or -1."""
        return int(self._add(self.open(), os.fsencode(path), _MASK | _IN_ONLYDIR | _IN_DONT_FOLLOW))

    def drain(self) -> None:
        """Read the queued events and mark the watches they concern. Under `lock`.

        At most `_DRAIN_READS` reads: a command renaming names in a watched directory as fast as
        they are read (several processes at once, the reader starved on a loaded host) kept this
        loop, and every watch's caller waiting on the lock, going for as long as it liked (a 300 s
        hang was seen in a loaded test run). Past the bound every watch is marked (fail closed: its
        places are worked out again); what is still queued is read at the next call."""
        if self.fd is None or not self._poll.poll(0):
            return
        try:
            for _ in range(_DRAIN_READS):
                data = os.read(self.fd, 1 << 16)
                if not data:
                    return
                self._mark(data)
            self._mark_all()
        except BlockingIOError:
            pass
        except OSError:
            self._mark_all()

    def _mark(self, data: bytes) -> None:
        at = 0
        while at + _HEADER.size <= len(data):
            wd, mask, _cookie, size = _HEADER.unpack_from(data, at)
            name = data[at + _HEADER.size : at + _HEADER.size + size].rstrip(b"\0")
            at += _HEADER.size + size
            if wd < 0:
                self._mark_all()  # the queue overflowed: anything may have changed
                continue
            for watch, names in self.users.get(wd, {}).items():
                if (not name and mask & ~_IN_ATTRIB) or name in names:
                    watch.dirty = True  # the directory itself went, or a name that matters changed

    def _mark_all(self) -> None:
        for users in self.users.values():
            for watch in users:
                watch.dirty = True

    def release(self, watch: PathWatch, wds: Iterable[int]) -> None:
        """``watch``'s directories, each unwatched once no watch has it. Under `lock`."""
        for wd in wds:
            users = self.users.get(wd)
            if users is None:
                continue
            users.pop(watch, None)
            if not users:
                del self.users[wd]
                if self.fd is not None:
                    self._rm(self.fd, wd)


_SHARED = _Shared()


class _MountWatch:
    """Whether a mount on the way to ``ways`` (at one of them or above one) came, went or was
    replaced since it was made. An open ``/proc/self/mountinfo`` reports ``POLLPRI`` once per change
    of this process's mount table (the kernel keeps the last event it told each open file); only
    then is the table read again, and only the mounts at or above a way are compared (a session's
    own /tmp mounts elsewhere change the table many times a second on a busy host). Without /proc
    every call says changed."""

    def __init__(self, ways: Iterable[str]) -> None:
        self._ways = [w.rstrip("/") or "/" for w in ways]
        self._fd: int | None = None
        self._poll = select.poll()
        try:
            self._fd = os.open("/proc/self/mountinfo", os.O_RDONLY | os.O_CLOEXEC)
            self._seen = self._on_the_way()
        except OSError:
            self.close()
            return
        self._poll.register(self._fd, select.POLLPRI | select.POLLERR)

    def _on_the_way(self) -> frozenset[tuple[str, str]]:
        """(mount id, mount point) of each mount at or above a way, read now."""
        assert self._fd is not None
        os.lseek(self._fd, 0, os.SEEK_SET)
        chunks = []
        while chunk := os.read(self._fd, 1 << 16):
            chunks.append(chunk)
        found = set()
        for line in b"".join(chunks).decode("utf-8", "surrogateescape").splitlines():
            fields = line.split(" ", 5)
            if len(fields) < 5:
                continue
            point = _unescaped(fields[4])
            above = point.rstrip("/") + "/"
            if point == "/" or any(way == point or way.startswith(above) for way in self._ways):
                found.add((fields[0], point))
        return frozenset(found)

    def changed(self) -> bool:
        if self._fd is None:
            return True
        if not any(events & (select.POLLPRI | select.POLLERR) for _fd, events in self._poll.poll(0)):
            return False
        try:
            return self._on_the_way() != self._seen
        except OSError:
            return True

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


def _unescaped(field: str) -> str:
    """A mountinfo path with its octal escapes (space, tab, newline, backslash) undone."""
    if "\\" not in field:
        return field
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


class PathWatch:
    """The ways to ``paths`` (each lexically and by real path), watched on this process's inotify
    instance. `changed` is True once any name that matters changed, the queue overflowed, or a
    watch could not be set: never a missed change, at worst a needless look."""

    def __init__(self, paths: Iterable[str]) -> None:
        self.dirty = False
        self._closed = False
        self._wds: set[int] = set()
        ways = {way for path in paths if path.startswith("/") for way in (path, os.path.realpath(path))}
        with _SHARED.lock:
            _SHARED.open()  # raises OSError without inotify: the caller looks every time
            for way in sorted(ways):
                for here, name in _ways(way):
                    wd = _SHARED.add(here)
                    if wd < 0:
                        self.dirty = True  # unwatched: every call looks again
                        break
                    self._wds.add(wd)
                    _SHARED.users.setdefault(wd, {}).setdefault(self, set()).add(os.fsencode(name))
        self._mounts = _MountWatch(ways)  # round 28: mounts make no inotify event

    def changed(self) -> bool:
        """Whether a name that matters changed since the watch began (stays True once it did)."""
        if self.dirty or self._closed:
            return True
        if self._mounts.changed():
            self.dirty = True
            return True
        with _SHARED.lock:
            _SHARED.drain()
        return self.dirty

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._mounts.close()
            with _SHARED.lock:
                _SHARED.release(self, self._wds)
