"""Whether any name on the way to a few host paths changed, told by the kernel (inotify, one poll).

`sandbox.bwrap` masks shellrt's own places (budget meeting places, static program caches) that a
sandbox would show; working them out costs ~36 ``lstat``s and ``realpath``s, and the set must be
checked before every command (a change replaces the zygote). Each of those places depends only on
the names along its path (a directory made, removed, renamed, replaced by a link, chowned): a watch
on every existing directory of the way, each told the one name below it that matters, says when to
work them out again (red team round 27). Mounts make no inotify event: a mount over one of these
directories (root's, on the host) is not seen until the set is worked out again for another reason.
"""

from __future__ import annotations

import ctypes
import os
import select
import stat
import struct
from collections.abc import Iterable

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


class PathWatch:
    """One inotify instance watching the ways to ``paths`` (each lexically and by real path).
    `changed` is True once any name that matters changed, the queue overflowed, or a watch could
    not be set: never a missed change, at worst a needless look."""

    def __init__(self, paths: Iterable[str]) -> None:
        lib = libc()
        if lib is None:
            raise OSError("inotify: no C library to call")
        fd = lib.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"inotify_init1: {os.strerror(err)}")
        self._fd: int | None = fd
        self._dirty = False
        self._names: dict[int, set[bytes]] = {}
        add = lib.inotify_add_watch
        add.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        wds: dict[str, int] = {}
        ways = {way for path in paths if path.startswith("/") for way in (path, os.path.realpath(path))}
        for way in sorted(ways):
            for here, name in _ways(way):
                wd = wds.get(here)
                if wd is None:
                    wd = add(fd, os.fsencode(here), _MASK | _IN_ONLYDIR | _IN_DONT_FOLLOW)
                    if wd < 0:
                        self._dirty = True  # unwatched: every call looks again
                        break
                    wds[here] = wd
                self._names.setdefault(wd, set()).add(os.fsencode(name))
        self._poll = select.poll()
        self._poll.register(fd, select.POLLIN)

    def changed(self) -> bool:
        """Whether a name that matters changed since the watch began (stays True once it did)."""
        if self._dirty or self._fd is None:
            return True
        if not self._poll.poll(0):
            return False
        try:
            while data := os.read(self._fd, 1 << 16):
                self._dirty = self._dirty or self._matters(data)
        except BlockingIOError:
            pass
        except OSError:
            self._dirty = True
        return self._dirty

    def _matters(self, data: bytes) -> bool:
        at = 0
        while at + _HEADER.size <= len(data):
            wd, mask, _cookie, size = _HEADER.unpack_from(data, at)
            name = data[at + _HEADER.size : at + _HEADER.size + size].rstrip(b"\0")
            at += _HEADER.size + size
            if wd < 0 or wd not in self._names:
                return True  # overflow, or a watch the kernel dropped (IN_IGNORED)
            if not name:
                if mask & ~_IN_ATTRIB:
                    return True  # the directory itself went
                continue
            if name in self._names[wd]:
                return True
        return False

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
