"""Whether a session sandbox could reach a host socket listed at a path, judged on the host.

A session sandbox (zygote) hides the host's sockets with masks made once, at its start, so a
socket that appears later retires it (`sandbox._hostsockets.SocketWatch`). Most sockets a busy
host makes appear where no sandbox looks: below the directories every sandbox fills with its own
content (its /tmp, /run, the caller's XDG_RUNTIME_DIR, a TMPDIR elsewhere, /dev). Such a socket
needs neither a mask nor a new zygote -- if nothing else shows it. What else can:

* a symlink on the listed path (the table keeps the path given to ``bind``, not where the file
  is): the path is resolved (`resolve`) and judged where it leads;
* another mount of the same filesystem tree (a host bind mount of /tmp/x at /srv/x, or of
  /var/lib/z at /tmp/m): the host's mount table (``mountinfo``) is read, and every place where
  the socket's directory shows is judged, not only the listed one;
* a path bound into the sandbox below a hidden directory (a writable root under /tmp): judged as
  bound (the caller's ``bound`` paths);
* another name (a hard link): a socket file with more than one link is reachable;
* a name the table gives relative to some process's cwd: unknown, so reachable.

Mounts made later change the answer: the mount table is watched (the kernel marks an open
``mountinfo`` with POLLPRI when it changes) and every socket judged unreachable is judged again.
What is not seen: the host renaming a directory holding a socket from a hidden place to a shown
one on the same filesystem (the table keeps the old path), as before this module.
"""

from __future__ import annotations

import os
import select
import stat
from dataclasses import dataclass

__all__ = ["Mount", "MountIndex", "Reach", "parse_mountinfo", "read_mounts", "resolve", "shown_at"]


@dataclass(frozen=True)
class Mount:
    """One line of ``mountinfo``: which filesystem (``dev``), which of its trees (``root``), where."""

    id: str
    parent: str
    dev: str
    root: str
    point: str


def _unescape(field: str) -> str:
    """mountinfo's octal escapes (``\\040`` for a space) undone."""
    if "\\" not in field:
        return field
    raw = field.encode("utf-8", "surrogateescape")
    out = bytearray()
    i = 0
    while i < len(raw):
        if raw[i : i + 1] == b"\\" and i + 4 <= len(raw) and raw[i + 1 : i + 4].isdigit():
            out.append(int(raw[i + 1 : i + 4], 8) & 0xFF)
            i += 4
        else:
            out.append(raw[i])
            i += 1
    return out.decode("utf-8", "surrogateescape")


def parse_mountinfo(text: str) -> tuple[Mount, ...]:
    """Every mount of ``text`` (proc(5) ``mountinfo``) as a `Mount`."""
    mounts: list[Mount] = []
    for line in text.splitlines():
        parts = line.split(" ")
        if len(parts) >= 5:
            mounts.append(Mount(parts[0], parts[1], parts[2], _unescape(parts[3]), _unescape(parts[4])))
    return tuple(mounts)


def resolve(listed: str) -> str | None:
    """``listed`` with every symlink above its last part resolved, as the kernel names the
    directory (an O_PATH fd's ``/proc/self/fd`` link: three system calls, where
    `os.path.realpath` stats each part in Python, ~80 us a socket under load); the last part
    is the socket file itself, never followed. None when the directory is gone."""
    head, _, name = listed.rpartition("/")
    try:
        fd = os.open(head or "/", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, ValueError):
        return os.path.realpath(listed)
    try:
        where = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return os.path.realpath(listed)
    finally:
        os.close(fd)
    if not where.startswith("/") or where.endswith(" (deleted)"):
        return None if where.endswith(" (deleted)") else os.path.realpath(listed)
    return f"{where.rstrip('/')}/{name}"


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _under_any(path: str, roots: tuple[str, ...]) -> bool:
    return any(_under(path, root) for root in roots)


class Reach:
    """Judges listed host socket paths against one sandbox's layout and the host's mounts.

    ``hidden``: host directories the sandbox shows its own content at (resolved here).
    ``bound``: host paths bound into the sandbox (writable roots, state dir): whatever is below
    one is reachable, even below a hidden directory. ``mountinfo``: the mount table of the
    namespace the sandbox starts in (a root caller's holder namespace).
    """

    def __init__(
        self,
        hidden: tuple[str, ...],
        bound: tuple[str, ...],
        mountinfo: str = "/proc/self/mountinfo",
    ) -> None:
        self.hidden = tuple(os.path.realpath(p) for p in hidden)
        self.bound = tuple(os.path.realpath(p) for p in bound)
        self._path = mountinfo
        self._fd: int | None = None
        self._poll: select.poll | None = None
        self._mounts: MountIndex | None = None
        self._reload()

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def _reload(self) -> None:
        """Read the mount table afresh (None when it cannot be read: every socket is reachable)."""
        self.close()
        try:
            fd = os.open(self._path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            self._mounts = None
            return
        try:
            chunks = []
            while chunk := os.read(fd, 1 << 16):
                chunks.append(chunk)
        except OSError:
            os.close(fd)
            self._mounts = None
            return
        self._fd = fd
        self._poll = select.poll()
        self._poll.register(fd, select.POLLPRI)
        table = parse_mountinfo(b"".join(chunks).decode("utf-8", "surrogateescape"))
        self._mounts = MountIndex(table) if table else None

    def mounts_changed(self) -> bool:
        """Whether the mount table changed since it was read (it is read again then). A table
        that cannot be watched counts as changed each time (fail closed)."""
        if self._fd is None or self._poll is None:
            self._reload()
            return True
        try:
            events = self._poll.poll(0)
        except OSError:
            events = [(self._fd, select.POLLERR)]
        if not events:
            return False
        self._reload()
        return True

    def reachable(self, listed: str, real: str | None = None) -> bool:
        """Whether a sandbox could reach the socket the host lists at ``listed`` (True when
        unsure; ``real``: the path resolved already). Below a ``bound`` path: reachable; the
        caller decides what that means."""
        if not listed.startswith("/"):
            return True  # relative to some process's cwd: where it is is unknown
        if real is None:
            real = resolve(listed)
            if real is None:
                return False  # its directory is gone: no path reaches it
        if _under_any(real, self.bound) or not _under_any(real, self.hidden):
            return True
        try:
            st = os.lstat(real)
        except OSError:
            st = None  # gone (or its directory renamed): judged by where its directory shows
        if st is not None and (not stat.S_ISSOCK(st.st_mode) or st.st_nlink > 1):
            return True  # replaced by something else, or another name of it elsewhere
        shown = self.shown_at(real)
        return shown is None or any(
            _under_any(place, self.bound) or not _under_any(place, self.hidden) for place in shown
        )

    def shown_at(self, real: str) -> list[str] | None:
        """`shown_at` in the mount table as last read."""
        return shown_at(real, self._mounts)


def read_mounts(path: str = "/proc/self/mountinfo") -> tuple[Mount, ...] | None:
    """The mount table at ``path``; None when it cannot be read."""
    try:
        with open(path, "rb") as table:
            return parse_mountinfo(table.read().decode("utf-8", "surrogateescape"))
    except OSError:
        return None


class MountIndex:
    """A mount table indexed for `shown_at`: mounts by mount point and by filesystem."""

    def __init__(self, mounts: tuple[Mount, ...]) -> None:
        self.mounts = mounts
        self._at: dict[str, list[Mount]] = {}
        self._of: dict[str, list[Mount]] = {}
        for mount in mounts:
            self._at.setdefault(mount.point, []).append(mount)
            self._of.setdefault(mount.dev, []).append(mount)

    def shown_at(self, real: str) -> list[str] | None:
        """Every path of the namespace where the file at ``real`` (resolved) shows: its own and
        those of every other mount of the same tree. None when unsure."""
        point = real
        while True:  # the deepest mount point above ``real``
            stacked = self._at.get(point)
            if stacked is not None or point == "/":
                break
            point = point.rpartition("/")[0] or "/"
        if not stacked:
            return None
        # Mounts stacked on one point: the one no other of them is mounted on shows.
        below = {m.parent for m in stacked}
        top = [m for m in stacked if m.id not in below]
        if len(top) != 1:
            return None
        held = top[0]
        rest = real[len(held.point.rstrip("/")) :]
        inner = (held.root.rstrip("/") + rest) or "/"
        places: list[str] = []
        for mount in self._of.get(held.dev, ()):
            if _under(inner, mount.root):
                tail = inner[len(mount.root.rstrip("/")) :]
                places.append((mount.point.rstrip("/") + tail) or "/")
        return places


def shown_at(real: str, mounts: tuple[Mount, ...] | MountIndex | None) -> list[str] | None:
    """`MountIndex.shown_at` of ``mounts`` (indexed now when given as a table); None when unsure
    (no table)."""
    if not mounts:
        return None
    index = mounts if isinstance(mounts, MountIndex) else MountIndex(mounts)
    return index.shown_at(real)
