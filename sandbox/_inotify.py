"""Attribute changes of a few files, noticed with one ``poll`` (Linux ``inotify``, ``IN_ATTRIB``).

`sandbox._hostsockets.SocketWatch` keeps host sockets a root caller's sandbox uid cannot connect
to out of its "something new" verdict; a ``chmod``, ``chown`` or ACL change would open one without
any change in the socket table. Checking each one's mode before every command cost ~2 us a socket;
the kernel saying whether any attribute changed costs one ``poll``.
"""

from __future__ import annotations

import ctypes
import os
import select

__all__ = ["AttribWatch"]

_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = os.O_CLOEXEC
#: chmod, chown, link count, extended attributes (a POSIX ACL) -- and the file's end.
_IN_ATTRIB = 0x00000004
_IN_DELETE_SELF = 0x00000400


def _libc() -> ctypes.CDLL | None:
    """This process's own symbols (libc among them), as `sandbox._idmap` takes them: no
    ``find_library`` (it runs ldconfig)."""
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


class AttribWatch:
    """One inotify instance: files added (`add`) and whether any of their attributes changed
    since the last `changed` (which empties the queue). An overflowed queue reads as changed."""

    def __init__(self) -> None:
        libc = _libc()
        if libc is None:
            raise OSError("inotify: no C library to call")
        self._add_watch = libc.inotify_add_watch
        self._add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        fd = libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"inotify_init1: {os.strerror(err)}")
        self._fd: int | None = fd
        self._poll = select.poll()
        self._poll.register(fd, select.POLLIN)

    def add(self, path: str) -> None:
        """Watch the file at ``path`` (``/proc/self/fd/N``: the file an fd holds). Raises
        `OSError` when it cannot be watched (the caller then treats the file as unwatched)."""
        if self._fd is None:
            raise OSError("inotify: closed")
        if self._add_watch(self._fd, os.fsencode(path), _IN_ATTRIB | _IN_DELETE_SELF) < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"inotify_add_watch: {os.strerror(err)}")

    def changed(self) -> bool:
        """Whether an attribute of a watched file changed since the last call (True once closed)."""
        fd = self._fd
        if fd is None:
            return True
        if not self._poll.poll(0):
            return False
        try:
            while os.read(fd, 1 << 16):
                pass
        except BlockingIOError:
            pass
        except OSError:
            self.close()
        return True

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
