"""The host's IPC endpoints a bwrap sandbox must not reach, as bwrap mount flags.

A read-only mount does not stop ``connect()`` on a unix socket, and a
seccomp rule on ``socket(AF_UNIX)`` would break what commands do with their
own sockets (``socketpair``, asyncio, a test server in /tmp). So the sockets
themselves are hidden:

* ``/run`` (``/var/run`` is a link to it on every current distribution),
  where system daemons put theirs (docker.sock, dbus, systemd, databases),
  and the caller's ``XDG_RUNTIME_DIR`` (user agents: ssh, gpg, pulse) become
  empty tmpfs (``/etc/resolv.conf`` stays readable when it points into /run);
* every other pathname socket the host's ``/proc/net/unix`` lists -- read here,
  on the host, in the host's network namespace -- is covered by /dev/null,
  unless it lives in the sandbox's own /tmp or state directory. One in a writable
  root (a daemon of the operator's in the workspace: git's fsmonitor, Docker
  Desktop's ``~/.docker/desktop/docker.sock`` in a home workspace) is covered too,
  after the root is bound (`ipc_mask_args`' ``inside``), whenever the sandbox has its own
  network namespace: a command's own sockets are then never in the host's table.
  (For a root caller the idmapped root shows root's 0600 socket as the sandbox
  uid's own: the uid was no wall there.) With ``network: host`` they stay, as the
  command's own background servers are listed there too.
* and the pathname sockets of the host's *other* network namespaces (a container's, another
  session's: `sandbox._netns_sockets`, red team round 38), but those under the kept and covered
  paths, where this sandbox's own commands bind theirs.

Abstract sockets are cut by the network namespace (``network: none``). For
a root caller the unprivileged sandbox uid is the second wall: a 0660
root:docker socket refuses it even where it is visible.
"""

from __future__ import annotations

import os
import re
import socket
import stat
import struct
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from sandbox._netns_sockets import namespace_lines
from sandbox._reach import searchable
from sandbox._relnames import relative_places, relative_socket_paths
from sandbox._sockreach import MountIndex, Reach, read_mounts, resolve, shown_at
from sandbox.errors import SandboxExecError

if TYPE_CHECKING:
    from sandbox._inotify import AttribWatch

__all__ = [
    "RUN_DIRS",
    "VANISHED_MASK",
    "IpcMasks",
    "SocketWatch",
    "StartMasks",
    "UnixDiag",
    "host_socket_paths",
    "ipc_mask_args",
    "open_unix_diag",
    "outside_sockets",
    "relative_socket_paths",
]

RUN_DIRS = ("/run", "/var/run")


def _socket_table() -> bytes:
    """``/proc/net/unix`` (read before every per-command bwrap: plain reads, no file object), b""
    when it cannot be read."""
    return _strict_socket_table() or b""


def _bound(table: bytes) -> frozenset[tuple[str, str]]:
    """(inode, path) of every pathname socket in ``table``: a socket bound again at a listed path
    shows up as a new inode."""
    lines = table.decode("utf-8", "surrogateescape").splitlines()[1:]
    return frozenset(
        (parts[6], parts[7])
        for line in lines
        if len(parts := line.split(None, 7)) == 8 and not parts[7].startswith("@")
    )


def host_socket_paths(table: bytes | None = None) -> list[str]:
    """Pathname unix sockets bound in the host's network namespace (``/proc/net/unix``, or ``table``
    read from it), by absolute path. A name relative to its binder's cwd (``bind("app.sock")``)
    is located through the processes whose cwd shows its file (`sandbox._relnames`): skipped, it left
    such a daemon unmasked, in the workspace or anywhere the sandbox shows (red team round 14)."""
    bound = _bound(_socket_table() if table is None else table)
    paths = {path for _, path in bound if path.startswith("/")}
    found = relative_socket_paths(pair for pair in bound if not pair[1].startswith("/"))
    paths.update(path for path in found.values() if path is not None)
    return sorted(paths)


def _under(path: str, roots: Iterable[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def _kept(keep: Iterable[Path]) -> list[str]:
    return [os.path.realpath(p) for p in keep] + ["/tmp"]


def outside_sockets(keep: Iterable[Path], table: bytes | None = None) -> frozenset[str]:
    """The host's socket paths as listed, but those under ``keep``, /tmp and the run dirs.

    Cheap (no stat): a session sandbox compares it before each command, and one
    that started before a socket appeared is replaced by one that hides it.
    """
    return _outside([*_kept(keep), *RUN_DIRS], table)


def _outside(skip: list[str], table: bytes | None) -> frozenset[str]:
    return frozenset(p for p in host_socket_paths(table) if not _under(p, skip))


#: NETLINK_SOCK_DIAG and its one request type (linux/sock_diag.h); the unix_diag request's
#: ``udiag_show`` bit for the name (linux/unix_diag.h), its attribute type, and netlink's own.
_NETLINK_SOCK_DIAG = 4
_SOCK_DIAG_BY_FAMILY = 20
_UDIAG_SHOW_NAME = 1
_UNIX_DIAG_NAME = 0
_NLMSG_ERROR = 2
_NLMSG_DONE = 3
_NLM_F_REQUEST_DUMP = 0x1 | 0x300
_NLM_F_DUMP_INTR = 0x10
#: struct nlmsghdr, then struct unix_diag_msg (family, type, state, pad, inode, cookie[2]).
_HEADER = struct.Struct("=IHHII")
_DIAG_MSG_SIZE = 16
#: A dump message of a socket without a name: its headers only.
_UNNAMED_SIZE = _HEADER.size + _DIAG_MSG_SIZE


#: The one request `UnixDiag` sends: a dump of every unix socket (all states, any inode and
#: cookie) with its name. Always the same (sequence number 1): an answer buffer identical to one
#: checked before is known good without a second walk (see `UnixDiag.dump`).
_SEQ = 1
_REQUEST = (
    _HEADER.pack(_HEADER.size + 24, _SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST_DUMP, _SEQ, 0)
    + struct.pack("=BBHIII", socket.AF_UNIX, 0, 0, 0xFFFFFFFF, 0, _UDIAG_SHOW_NAME)
    + b"\xff" * 8
)


#: ``MSG_TRUNC`` as a plain int: ``socket.MSG_TRUNC`` is an ``IntFlag``, and ``int & IntFlag`` runs
#: the enum's Python ``__and__`` (~5-10 us, twice a dump: before every session command; round 56).
_MSG_TRUNC = int(socket.MSG_TRUNC)

#: Named sockets' messages `UnixDiag` remembers at most (sockets come and go on a busy host).
_SEEN_MAX = 4096


class UnixDiag:
    """The pathname unix sockets of this process's network namespace, from the kernel's
    ``unix_diag`` over one ``NETLINK_SOCK_DIAG`` socket kept open (``ss -x`` asks the same way).

    The same sockets as ``/proc/net/unix`` (every state: listening, unconnected, connected and
    accepted ones, which carry their listener's path), as the same (inode, path) pairs, without
    the kernel printing a line of text per socket (most of them unnamed socket pairs) and this
    process splitting them (docs/performance.md, seventh round). Fails closed: any error, a
    truncated or interrupted dump, a message of an unexpected kind raises `OSError`, and the
    socket is closed with it, so no later call can read what is left of an abandoned answer.
    The socket is connected to the kernel: no other process's message can reach it.
    """

    def __init__(self) -> None:
        self._sock: socket.socket | None = socket.socket(
            socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC, _NETLINK_SOCK_DIAG
        )
        try:
            # A kernel timeout (no poll before each receive): an answer that never comes fails.
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", 1, 0))
            self._sock.connect((0, 0))
        except OSError:
            self.close()
            raise
        #: The last answer's buffers, each walked (`_walk`); named sockets' messages, each read
        #: (`_walk`'s ``seen``; emptied past `_SEEN_MAX`).
        self._checked: dict[bytes, Walked] = {}
        self._seen: dict[bytes, tuple[tuple[str, str], ...]] = {}

    def close(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()

    def dump(self) -> tuple[bytes, frozenset[tuple[str, str]]]:
        """The kernel's answer as received (every socket's message, checked, without its end)
        and the (inode, path) pairs of the named sockets in it.

        Raises `OSError` (and closes) on anything but a complete, well-formed answer."""
        sock = self._sock
        if sock is None:
            raise OSError("the unix_diag socket was closed after an error")
        try:
            return self._dump(sock)
        except BaseException:
            self.close()
            raise

    def _dump(self, sock: socket.socket) -> tuple[bytes, frozenset[tuple[str, str]]]:
        sock.send(_REQUEST)
        chunks: list[bytes] = []
        pairs: list[tuple[str, str]] = []
        checked: dict[bytes, Walked] = {}
        if len(self._seen) > _SEEN_MAX:
            self._seen.clear()
        while True:
            data, _ancillary, flags, _address = sock.recvmsg(1 << 16)
            if flags & _MSG_TRUNC:
                raise OSError("unix_diag: a dump message was cut short")
            walked = self._checked.get(data)
            if walked is None:  # the walk is a function of the bytes alone: once per buffer seen
                walked = _walk(data, self._seen)
            checked[data] = walked
            end, named = walked
            pairs += named
            if end < 0:
                chunks.append(data)
                continue
            self._checked = checked
            chunks.append(data[:end])
            return b"".join(chunks), frozenset(pairs)

    def bound(self) -> frozenset[tuple[str, str]]:
        """(inode, path) of every pathname socket, as `_bound` reads them from the table."""
        return self.dump()[1]


#: A run of unnamed sockets' dump messages (most of a dump: one per socket of a pair), matched in
#: C: each one's length, kind, the flags of an uninterrupted multi-part answer (NLM_F_MULTI
#: alone) and the request's sequence number, its port and unix_diag_msg (any), then either
#: nothing more (32 bytes) or only the ``UNIX_DIAG_SHUTDOWN`` byte that current kernels add (40
#: bytes; a name is attribute type 0, so a 40-byte message with a short name is never taken for
#: unnamed).
_UNNAMED_RUN = re.compile(
    b"(?:"
    + re.escape(struct.pack("=IHHI", 40, _SOCK_DIAG_BY_FAMILY, 0x2, _SEQ))
    + b".{20}"
    + re.escape(struct.pack("=HH", 5, 6))
    + b".{4}|"
    + re.escape(struct.pack("=IHHI", _UNNAMED_SIZE, _SOCK_DIAG_BY_FAMILY, 0x2, _SEQ))
    + b".{20})*",
    re.DOTALL,
)


def _skip_unnamed(data: bytes, at: int) -> int:
    """Past the run of unnamed sockets' messages at ``at`` (one regex match, in C: walking them one
    by one in Python cost more than the kernel's dump). What follows a run (a named socket, the
    end, anything else) gets the full check."""
    found = _UNNAMED_RUN.match(data, at)
    return found.end() if found is not None else at


#: One received buffer of a dump, walked: the offset of the answer's end in it (``NLMSG_DONE``;
#: -1 when more follows) and the (inode, path) pairs of the named sockets before it.
Walked = tuple[int, tuple[tuple[str, str], ...]]


def _walk(data: bytes, seen: dict[bytes, tuple[tuple[str, str], ...]] | None = None) -> Walked:
    """Walk one received buffer of the dump, message by message (runs of unnamed sockets in C).

    Raises `OSError` on an error message, an interrupted dump, another request's answer, a
    message or attribute of an unexpected kind or length. Abstract names are left out, as
    `_bound` leaves out the table's ``@`` ones. ``seen``: each socket message's attributes as
    read before, by its exact bytes (a socket that is still there sends the same message, and
    reading its attributes is a function of those bytes); the ones read now are added."""
    pairs: list[tuple[str, str]] = []
    size = len(data)
    at = _skip_unnamed(data, 0)
    while at < size:
        if size - at < _HEADER.size:
            raise OSError("unix_diag: a message header was cut short")
        length, kind, flags, seq, _port = _HEADER.unpack_from(data, at)
        end = at + length
        if seq != _SEQ or flags & _NLM_F_DUMP_INTR or length < _HEADER.size or end > size:
            raise OSError("unix_diag: an interrupted, stale or malformed dump")
        if kind == _NLMSG_DONE:
            return at, tuple(pairs)
        if kind == _NLMSG_ERROR:
            code = -struct.unpack_from("=i", data, at + _HEADER.size)[0] if length >= 20 else 0
            raise OSError(
                code, f"unix_diag: the kernel refused the dump ({os.strerror(code) if code else 'error'})"
            )
        if kind != _SOCK_DIAG_BY_FAMILY or length < _UNNAMED_SIZE:
            raise OSError("unix_diag: an unexpected message in the dump")
        message = data[at:end] if seen is not None else b""
        known = seen.get(message) if seen is not None else None
        if known is not None:
            pairs += known
            at = _skip_unnamed(data, at + ((length + 3) & ~3))
            continue
        named = len(pairs)
        attr = at + _UNNAMED_SIZE
        while attr < end:
            if end - attr < 4:
                raise OSError("unix_diag: a malformed attribute")
            attr_len, attr_kind = struct.unpack_from("=HH", data, attr)
            if attr_len < 4 or attr + attr_len > end:
                raise OSError("unix_diag: a malformed attribute")
            if attr_kind == _UNIX_DIAG_NAME and data[attr + 4 : attr + 5] not in (b"", b"\0"):
                # a path (a C string), not an abstract name
                path = data[attr + 4 : attr + attr_len].split(b"\0", 1)[0]
                inode = struct.unpack_from("=I", data, at + 20)[0]
                pairs.append((str(inode), path.decode("utf-8", "surrogateescape")))
            attr += (attr_len + 3) & ~3
        if seen is not None:
            seen[message] = tuple(pairs[named:])
        at = _skip_unnamed(data, at + ((length + 3) & ~3))
    return -1, tuple(pairs)


def open_unix_diag() -> UnixDiag | None:
    """A working `UnixDiag`, or None where the kernel has none for us (no ``unix_diag``, netlink
    refused): the caller then reads ``/proc/net/unix``, the same sockets more slowly."""
    try:
        diag = UnixDiag()
        diag.dump()  # closes it on failure
    except OSError:
        return None
    return diag


class SocketWatch:
    """Whether a host socket a session sandbox could reach appeared since it hid them, at the least
    cost per command.

    A socket counts by (inode, path): one removed and bound again at a hidden path
    is a new one. Its mask went with the old file (the host's unlink detaches a mount
    made on it in another namespace), so the next command needs a new sandbox.
    Only sockets the sandbox could reach count (`sandbox._sockreach.Reach`): one below the
    directories it shows its own content at (``hidden``: its /tmp, /run, XDG_RUNTIME_DIR...)
    that no symlink, other mount or other name shows elsewhere needs no new sandbox; one below
    ``keep`` is where commands may bind, unless also below ``cover``. A name relative to its
    binder's cwd counts (where it is is unknown).
    One listing per check -- the kernel's ``unix_diag`` (`UnixDiag`), or ``/proc/net/unix``
    where that is unavailable; it is parsed only when it changed since the last check that
    found nothing new, and a listed (inode, path) is judged only the first time it is seen,
    until the mount table changes (then every one is judged again). Fails closed: a listing
    that cannot be had (a netlink error, an unreadable table) is "something new", so the caller
    replaces the sandbox (and its new watch opens a new listing).
    """

    def __init__(
        self,
        keep: Iterable[Path],
        cover: Iterable[Path] = (),
        *,
        hidden: Iterable[str] | None = None,
        mountinfo: str = "/proc/self/mountinfo",
        uid: int | None = None,
    ) -> None:
        self._keep = tuple(os.path.realpath(p) for p in keep)
        #: The uid commands run as when it owns nothing on the host (a root caller's sandbox uid):
        #: a socket it may not write to it cannot connect to (`_closed`).
        self._uid = uid
        #: Sockets that appeared after the start, reachable by path but closed to ``uid``: an
        #: O_PATH fd of each, its mode checked before every command (a chmod changes no table).
        self._closed: dict[tuple[str, str], int] = {}
        #: Tells whether any of those changed mode, owner or ACL (`sandbox._inotify`): one poll a
        #: check instead of a stat a socket. None until the first is kept.
        self._attrib: AttribWatch | None = None
        self._starting = True
        #: Set when `nothing_new` found a new socket inside ``cover``: commands already running
        #: can reach it (red team, round 29), not only later ones.
        self.new_in_cover = False
        #: Covered although kept (`IpcMasks` ``cover``: the writable roots, also below /tmp).
        self._cover = tuple(os.path.realpath(p) for p in cover)
        places = ("/tmp", *RUN_DIRS) if hidden is None else tuple(hidden)
        self._reach = Reach(places, self._keep, mountinfo)
        self._diag = open_unix_diag()
        #: The other namespaces' socket lines this watch started from: the start's masks are
        #: worked out from them too (`IpcMasks.args`), one listing a start (round 40).
        self.namespaces: tuple[bytes, bytes] = namespace_lines()
        listing = self._listing(self.namespaces)
        self._table, pairs = listing if listing is not None else (b"", frozenset())
        bound = _bound(self._table) if pairs is None else pairs
        self.hidden = self._outside_bound(bound)  # masked at the start whatever their mode
        self._starting = False
        #: Every (inode, path) a check found harmless (hidden, out of reach, or where commands may
        #: bind): the table changes with every command (its own unnamed socket pairs), and judging
        #: each path again was most of a check's cost (~0.2 ms a command under load).
        self._fine = bound

    def close(self) -> None:
        """Let go of the netlink socket, the mount table and the sockets' fds (the watch's
        sandbox is gone)."""
        if self._diag is not None:
            self._diag.close()
        self._reach.close()
        self._forget_closed(set(self._closed))
        if self._attrib is not None:
            self._attrib.close()

    def _forget_closed(self, pairs: Iterable[tuple[str, str]]) -> None:
        for pair in pairs:
            fd = self._closed.pop(pair, None)
            if fd is not None:
                os.close(fd)

    def _closed_to_sandbox(self, pair: tuple[str, str], real: str) -> bool:
        """Whether the socket file at ``real`` refuses ``connect`` to the sandbox uid (it needs write
        permission: owned by another uid, no group or other write bit -- a POSIX ACL's named
        entries are capped by the group bits), its fd kept to check that again before every
        command; True as well when it is gone by now (see `_counts`). False when unsure or past
        `_CLOSED_MAX`."""
        if self._uid is None or self._starting or len(self._closed) >= _CLOSED_MAX:
            return False
        try:
            if self._attrib is None:
                from sandbox._inotify import AttribWatch  # here: ctypes, for a root caller's only

                self._attrib = AttribWatch()
            fd = os.open(real, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
        except (FileNotFoundError, NotADirectoryError):
            return True  # removed since `_counts` looked: gone, as there
        except OSError:
            return False
        try:
            self._attrib.add(f"/proc/self/fd/{fd}")  # watched first: a change after the stat is seen
            st = os.fstat(fd)
        except OSError:
            st = None
        if st is None or not stat.S_ISSOCK(st.st_mode) or not _refuses(st, self._uid):
            os.close(fd)
            return False
        self._forget_closed([pair])
        self._closed[pair] = fd
        return True

    def _still_closed(self) -> bool:
        """Every socket judged closed to the sandbox uid still is (its mode and owner now)."""
        attrib = self._attrib
        if attrib is not None and not attrib.changed():
            return True
        uid = self._uid
        for fd in self._closed.values():
            try:
                if not _refuses(os.fstat(fd), uid):
                    return False
            except OSError:
                return False
        return True

    def _listing(
        self, namespaces: tuple[bytes, bytes] | None = None
    ) -> tuple[bytes, frozenset[tuple[str, str]] | None] | None:
        """The current listing, raw, with its (inode, path) pairs when they came with it (the
        netlink walk finds them); None when it cannot be had. The host's namespace's sockets and
        every other namespace's but those under the kept and covered paths (`_foreign_lines`).
        ``namespaces``: `namespace_lines` as just read (default: read now)."""
        ours, theirs = namespace_lines() if namespaces is None else namespaces
        foreign = _foreign_lines(ours, [*self._keep, "/tmp", *self._cover]) + _foreign_lines(theirs, ["/tmp"])
        if self._diag is not None:
            try:
                dumped, pairs = self._diag.dump()
            except OSError:
                return None
            return dumped + foreign, pairs | _bound(b"\n" + foreign)
        table = _strict_socket_table()
        return None if table is None else (table + foreign, None)

    def _counts(self, pair: tuple[str, str]) -> bool:
        """Whether the socket listed as ``pair`` could be reached by the sandbox's commands and is
        not one of theirs (True when unsure)."""
        listed = pair[1]
        if not listed.startswith("/"):
            return True
        real = resolve(listed)
        if real is None:
            return False  # its directory is gone (see below)
        try:
            os.lstat(real)
        except (FileNotFoundError, NotADirectoryError):
            # Its file is gone (test suites unlink theirs before closing them): no path reaches
            # it, and no mask could cover it (`ipc_mask_args` skips it too); bound again, it is
            # a new inode, judged then.
            return False
        except OSError:
            return True
        if _under(listed, self._cover) or _under(real, self._cover):
            return True
        if _under(real, self._keep):
            return False  # where commands may bind
        return self._reach.reachable(listed, real) and not self._closed_to_sandbox(pair, real)

    def _in_cover(self, pair: tuple[str, str]) -> bool:
        """Whether the socket listed as ``pair`` lies in ``cover`` (a writable root): a host process's
        socket in the workspace (a command's own are not in the host's table under its own network)."""
        listed = pair[1]
        real = resolve(listed) if listed.startswith("/") else None
        return _under(listed, self._cover) or (real is not None and _under(real, self._cover))

    def _outside_bound(self, bound: frozenset[tuple[str, str]]) -> frozenset[tuple[str, str]]:
        """The pairs of ``bound`` that count (`_counts`)."""
        return frozenset(pair for pair in bound if self._counts(pair))

    def nothing_new(self) -> bool:
        """No socket the sandbox could reach but those there when this watch was made."""
        listing = self._listing()
        if listing is None:
            return False  # fail closed: the caller starts a new sandbox (and a new watch)
        if self._reach.mounts_changed():  # what was out of reach may show somewhere now
            self._fine = self.hidden
            self._table = b""
            self._forget_closed(set(self._closed))
        if self._closed and not self._still_closed():
            return False  # a chmod or chown opened one to the sandbox uid
        table, pairs = listing
        if table == self._table:
            return True
        bound = _bound(table) if pairs is None else pairs
        if not bound <= self._fine:
            new = self._outside_bound(bound - self._fine) - self.hidden
            if new:
                self.new_in_cover = any(self._in_cover(pair) for pair in new)
                return False
        if self._closed:
            self._forget_closed(self._closed.keys() - bound)  # gone from the table
        self._table = table
        self._fine = bound if len(self._fine) > _FINE_MAX else self._fine | bound
        return True


#: The verdict on each foreign socket line already judged, per set of own paths: a line names one
#: socket (its inode), so a namespace holding thousands costs each listing a lookup a line, not a
#: parse and a path resolution (19,000 lines: ~100 ms a start for every session; round 38 review).
#: One table per set of own paths, each bounded: one shared table, cleared whole when full, let a
#: command's 57,000 sockets make two sessions' checks evict each other's verdicts and judge every
#: line again at each command (1.1-2.0 s a command; red team round 53, supdock).
_VERDICTS: dict[tuple[str, ...], dict[bytes, bool]] = {}
_VERDICTS_MAX = 1 << 16
#: Sets of own paths remembered at most, the least recently used forgotten first: a full table is
#: ~10 MB (65,536 lines), so at most ~80 MB while namespaces list that many sockets.
_VERDICT_SETS_MAX = 8


def _foreign_lines(lines: bytes, own: list[str]) -> bytes:
    """The socket lines of the host's other network namespaces (`sandbox._netns_sockets`: a
    container's, another session's; red team round 38) but those bound under ``own`` (real paths:
    the kept and covered ones), where a sandbox's own commands bind theirs, in a network namespace
    of the sandbox's (session) or of each command's own (one bwrap per command): masking those, or
    counting them as new, would hide a session's own background servers from its later commands.
    A name relative to its binder's cwd is located by `sandbox._relnames` (found nowhere: left out;
    not settled yet: kept, and judged again next time), all new names in one lookup: one per name let
    a process holding thousands of relative names make every start walk /proc thousands of times
    (round 38 review). Directories are resolved once, and a line judged before is not judged again
    (`_VERDICTS`)."""
    key = tuple(own)
    verdicts = _VERDICTS.pop(key, None)
    if verdicts is None:
        verdicts = {}
        if len(_VERDICTS) >= _VERDICT_SETS_MAX:
            del _VERDICTS[next(iter(_VERDICTS))]
    _VERDICTS[key] = verdicts  # the most recently used last
    kept: dict[bytes, bool] = {}
    rows: list[tuple[bytes, str, str]] = []
    for line in lines.splitlines(keepends=True):
        known = verdicts.get(line)
        kept[line] = bool(known)
        if known is None:
            parts = line.split(None, 7)
            name = parts[7].strip().decode("utf-8", "surrogateescape") if len(parts) == 8 else ""
            rows.append((line, parts[6].decode() if len(parts) == 8 else "", name))
    if rows:
        if len(verdicts) + len(rows) > _VERDICTS_MAX:
            verdicts.clear()
        for line, verdict, final in _judge(rows, own):
            kept[line] = verdict
            if final:  # an unsettled relative name is judged again next time
                verdicts[line] = verdict
    return b"".join(line for line, verdict in kept.items() if verdict)


def _judge(rows: list[tuple[bytes, str, str]], own: list[str]) -> list[tuple[bytes, bool, bool]]:
    """Whether each (line, inode, name) of ``rows`` is kept, and whether that is final (False for a
    relative name not settled yet: kept meanwhile, `relative_places`)."""
    out: list[tuple[bytes, bool, bool]] = []
    relative = [(inode, name) for _line, inode, name in rows if name and not name.startswith(("/", "@"))]
    found, unsettled = relative_places(relative) if relative else ({}, set())
    dirs: dict[str, str] = {}
    for line, inode, name in rows:
        if name and not name.startswith(("/", "@")):  # relative to its binder's cwd
            if (inode, name) in unsettled:
                out.append((line, True, False))  # where it is is not known yet: counted (fail closed)
                continue
            name = found.get((inode, name)) or ""  # None: no process shows it anywhere
            if not name:
                out.append((line, False, True))
                continue
        out.append((line, not (name.startswith("/") and _under(_real(name, dirs), own)), True))
    return out


def _real(name: str, dirs: dict[str, str]) -> str:
    """``os.path.realpath(name)``, its directory resolved once per ``dirs`` (thousands of sockets
    in one directory: one resolution); a last component that is a link is resolved whole."""
    head, tail = os.path.split(name)
    if not tail or tail in (".", "..") or os.path.islink(name):
        return os.path.realpath(name)
    if head not in dirs:
        dirs[head] = os.path.realpath(head)
    return os.path.join(dirs[head], tail)


def _strict_socket_table() -> bytes | None:
    """``/proc/net/unix``, or None when it cannot be read (`_socket_table` says b"": no sockets)."""
    try:
        fd = os.open("/proc/net/unix", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


#: Sockets closed to the sandbox uid `SocketWatch` keeps an fd of at most (more count as new).
_CLOSED_MAX = 256


def _refuses(st: os.stat_result, uid: int | None) -> bool:
    """Whether a socket file of ``st`` refuses ``connect`` to ``uid`` (no capabilities, no
    supplementary groups): another owner, and neither group nor others may write."""
    return uid is not None and st.st_uid != uid and not st.st_mode & 0o022


#: Pairs `SocketWatch` remembers at most beyond the current table's (a session whose commands
#: bind sockets in /tmp over and over must not grow it without end).
_FINE_MAX = 4096


def ipc_mask_args(
    keep: Iterable[Path],
    *,
    reachable_only: bool = False,
    reach_ids: tuple[int, int] | None = None,
    table: bytes | None = None,
    cover: Iterable[Path] = (),
    inside: list[str] | None = None,
    mountinfo: str = "/proc/self/mountinfo",
) -> list[str]:
    """bwrap flags hiding /run, XDG_RUNTIME_DIR and every host socket outside ``keep`` (and /tmp).

    To be placed after ``--ro-bind / /`` and before the binds of ``keep``.
    ``reachable_only``: for a bwrap run as an unprivileged uid that owns nothing on the
    host, leave out sockets in directories "others" cannot cross (it could neither mask
    nor reach them); ``reach_ids``: that uid and gid, judged with ACLs, owner and group as the
    kernel does (`sandbox._reach`; red team round 47: a socket in a 0700 directory an ACL opens to
    the uid was left unmasked and connected to). ``table``: ``/proc/net/unix`` as already read.
    ``inside``: gets the flags covering the host sockets below ``cover`` (kept paths: the
    writable roots), to be placed after everything bound there (a later bind of a parent
    would cover them); each listed path is resolved once for both. A socket left unmasked as out
    of reach (below /tmp, a run dir, ``keep``) that another mount of its tree shows elsewhere
    (``mountinfo``: the table of the namespace bwrap starts in) is masked there
    (`sandbox._sockreach.shown_at`).
    """
    kept = _kept(keep)
    covered_roots = [os.path.realpath(p) for p in cover]
    args: list[str] = []
    covered: list[str] = []
    for run in (*RUN_DIRS, os.environ.get("XDG_RUNTIME_DIR", "")):
        real = os.path.realpath(run) if run else ""
        if (
            not real
            or real in covered
            or not os.path.isdir(real)
            or _under(real, kept)
            or _under(real, covered)
        ):
            continue
        covered.append(real)
        args += ["--tmpfs", real]
    resolv = os.path.realpath("/etc/resolv.conf")
    if _under(resolv, covered) and os.path.isfile(resolv):
        args += ["--ro-bind", resolv, resolv]  # DNS keeps working with network: host
    mounts: MountIndex | None = None
    ns_root = mountinfo.removesuffix("/mountinfo") + "/root"  # /proc/<pid>/root: that namespace's /
    for listed in host_socket_paths(table):
        try:
            path = os.path.realpath(listed)
        except (OSError, ValueError):  # a directory on its way renamed between lstat and readlink
            path = listed
        if _under(path, covered) or _under(path, kept):
            if inside is not None and _under(path, covered_roots) and _is_socket(path):
                inside += ["--ro-bind", "/dev/null", path]
            if mounts is None:
                mounts = MountIndex(read_mounts(mountinfo) or ())
            for place in shown_at(path, mounts) or ():
                # looked up in that namespace: the mount showing it may exist only there
                if (
                    not (_under(place, covered) or _under(place, kept))
                    and _is_socket(ns_root + place)
                    and (not reachable_only or _crossable(ns_root, place, reach_ids))
                ):
                    args += ["--ro-bind", "/dev/null", place]  # the same socket, shown there too
            continue
        try:
            if not stat.S_ISSOCK(os.lstat(path).st_mode):
                continue
            if reachable_only and not _crossable("", path, reach_ids):
                continue
        except OSError:
            continue
        args += ["--ro-bind", "/dev/null", path]
    return args


class IpcMasks:
    """`ipc_mask_args` for one sandbox's kept paths, worked out again only when the host's sockets changed.

    One bwrap per command needs the flags before every command, and working them
    out (resolving and checking each listed socket) cost more than the rest of its
    argv. Each call reads ``/proc/net/unix`` once (and each other network namespace's:
    `sandbox._netns_sockets`: each namespace's table, ~40 us a call here, the
    processes' namespaces looked up again only for new ones and every 0.5 s): the same table, or the same
    (inode, path) pairs in a changed one (a connection came or went), reuse the
    flags; a socket bound since -- at a new path or again at a listed one (a new
    inode) -- or another ``XDG_RUNTIME_DIR`` works them out afresh, so the next
    command hides it, as before; so does a masked socket's file that is gone
    (one ``lstat`` each: bwrap cannot cover a file that is not there). What the
    check leaves out: a host directory's mode or a host symlink changed while the
    listed sockets stayed the same (only the host's root can do that; the
    sandbox cannot write there).
    """

    def __init__(
        self,
        keep: Iterable[Path],
        *,
        reachable_only: bool = False,
        reach_ids: tuple[int, int] | None = None,
        cover: Iterable[Path] = (),
        mountinfo: str = "/proc/self/mountinfo",
    ) -> None:
        self._keep = tuple(keep)
        #: The mount table the flags were worked out with (`ipc_mask_args` masks a socket where
        #: another mount shows it): a change works them out again.
        self._mountinfo = mountinfo
        self._mounts = Reach((), (), mountinfo)
        self._reachable_only = reachable_only
        self._reach_ids = reach_ids
        #: Kept paths whose host sockets are covered anyway, after their binds (`inside`).
        self._cover = tuple(cover)
        self._key: tuple[bytes, str] | None = None
        self._bound: frozenset[tuple[str, str]] | None = None
        self._args: tuple[str, ...] = ()
        self._inside: tuple[str, ...] = ()
        #: The sockets ``_args`` covers with /dev/null: each must still be there for bwrap to cover.
        self._masked: list[str] = []

    def args(self, namespaces: tuple[bytes, bytes] | None = None) -> list[str]:
        """The flags for a sandbox starting now. Raises `SandboxExecError` when the host's
        sockets cannot be listed (an unreadable table listed none: nothing would be hidden).
        ``namespaces``: the other namespaces' lines (`namespace_lines`) a `SocketWatch` of this
        start read a moment ago (default: read now)."""
        table = _strict_socket_table()
        if table is None:
            raise SandboxExecError(
                "cannot list the host's unix sockets (/proc/net/unix is unreadable), so none of them "
                "could be hidden from the sandbox: refusing to start it. Fix: run with /proc mounted "
                "and readable (procfs of the host's network namespace)"
            )
        ours, theirs = namespace_lines() if namespaces is None else namespaces
        table += self._foreign(ours) + _foreign_lines(theirs, ["/tmp"])
        key = (table, os.environ.get("XDG_RUNTIME_DIR", ""))
        if self._mounts.mounts_changed():
            self._key = None
        worked_out = False
        if key != self._key:
            bound = _bound(table)
            if self._key is None or key[1] != self._key[1] or bound != self._bound:
                self._work_out(table)
                worked_out = True
            self._bound = bound
            self._key = key
        # whatever else changed (a connection of no path): a listed socket's file that was
        # removed cannot be covered by bwrap, so the flags are worked out without it
        if not worked_out and not all(_is_socket(path) for path in self._masked):
            self._work_out(table)
        return list(self._args)

    def close(self) -> None:
        """Let go of the mount table's file."""
        self._mounts.close()

    def _foreign(self, lines: bytes) -> bytes:
        """`_foreign_lines` of this sandbox's kept and covered paths."""
        return _foreign_lines(lines, [*_kept(self._keep), *(os.path.realpath(p) for p in self._cover)])

    def inside(self) -> list[str]:
        """The flags covering host sockets in the ``cover`` paths, as of the last `args`."""
        return list(self._inside)

    def _work_out(self, table: bytes) -> None:
        inside: list[str] = []
        self._args = tuple(
            ipc_mask_args(
                self._keep,
                reachable_only=self._reachable_only,
                reach_ids=self._reach_ids,
                table=table,
                cover=self._cover,
                inside=inside,
                mountinfo=self._mountinfo,
            )
        )
        self._inside = tuple(inside)
        both = (*self._args, *self._inside)
        self._masked = [
            both[i + 2] for i in range(len(both) - 2) if both[i] == "--ro-bind" and both[i + 1] == "/dev/null"
        ]


def _crossable(ns_root: str, path: str, ids: tuple[int, int] | None = None) -> bool:
    """Whether "others" (or ``ids``, `sandbox._reach`) may cross every directory above ``path``
    (seen from ``ns_root``)."""
    return all(searchable(ns_root + str(parent), ids, absent=False) for parent in Path(path).parents)


def _is_socket(path: str) -> bool:
    try:
        return stat.S_ISSOCK(os.lstat(path).st_mode)
    except OSError:
        return False


#: What bwrap says when a mask's target (a listed socket, or its directory) is gone.
VANISHED_MASK = (b"Can't mkdir parents for", b"Can't create file at")
#: How bwrap names a mask's target in those messages, and when it is gone between its look and
#: its mount ("Can't bind mount /oldroot/dev/null on /newroot<path>: Unable to find ...").
_NAMED_AS = (b"at ", b"for ", b"/newroot")
#: Free attempts of one start whose failure names a mask whose socket is there again (`StartMasks.rebound`).
REBOUND_RETRIES = 16


class StartMasks:
    """The socket masks of one sandbox start, kept across its attempts.

    A listed socket can be removed, with its directory, before bwrap covers it
    (temp directories of test suites, language servers, agents): bwrap then fails
    before the command starts. The next attempt takes the same masks less those
    whose socket is gone (`drop_vanished`) -- a socket that is gone needs no mask --
    and lists nothing afresh: each such retry drops at least one mask, so a start
    can fail this way only as many times as it had masks. A socket bound after the
    first listing is one bound after the start: the next command's sandbox hides it
    (`IpcMasks`, `SocketWatch` see its new inode).

    A socket at a fixed path that a host program removes and binds again (a daemon's restart, a
    test suite's server) can be missing just when bwrap covers it and there again when the failure
    is judged: nothing to drop, and such failures counted as lost mount races failed a start after
    `sandbox._bwrap_retry.MAX_RETRIES` of them (red team round 53, hostchurn: 5 of 200 starts while 40 sockets were bound
    again and again). `rebound` tells that case by bwrap's message naming the mask: it goes again,
    mask kept (the socket is there: it stays hidden), up to `REBOUND_RETRIES` times a start.
    """

    def __init__(
        self, listed: list[str] | None = None, *, namespaces: tuple[bytes, bytes] | None = None
    ) -> None:
        """``listed``: the flags `IpcMasks.args` gave just before, for this start (one bwrap per
        command records its covered sockets from that listing: one listing a command, not two).
        ``namespaces``: the other namespaces' lines the start's `SocketWatch` was made from (a
        session's zygote: the masks and the watch's start set from one listing, round 40)."""
        self._args: list[str] | None = None if listed is None else list(listed)
        self._namespaces = namespaces
        self._rebound_left = REBOUND_RETRIES

    def args(self, masks: IpcMasks) -> list[str]:
        """The flags of this start: ``masks``' at the first attempt, the same less vanished ones after."""
        if self._args is None:
            self._args = masks.args(self._namespaces)
            self._namespaces = None  # used once: a later listing is read afresh
        return list(self._args)

    def drop_vanished(self) -> bool:
        """Drop the masks whose socket is no longer there; True if any was (the start may be retried)."""
        if self._args is None:
            return False
        args = self._args
        gone = {i + k for i, target in _socket_masks(args) if not _is_socket(target) for k in range(3)}
        self._args = [arg for i, arg in enumerate(args) if i not in gone]
        return bool(gone)

    def rebound(self, said: bytes) -> bool:
        """Whether bwrap's failure ``said`` names a mask of this start whose socket is there now:
        removed and bound again while bwrap set up (host churn, not a lost mount race); True at most
        `REBOUND_RETRIES` times (a command churning a socket in a writable root only slows its own
        session's starts). The mask is kept: the socket there now stays hidden."""
        if self._args is None or self._rebound_left <= 0:
            return False
        for _, target in _socket_masks(self._args):
            named = os.fsencode(target) + b":"
            if any(how + named in said for how in _NAMED_AS) and _is_socket(target):
                self._rebound_left -= 1
                return True
        return False


def _socket_masks(args: list[str]) -> Iterator[tuple[int, str]]:
    """(index, target) of each ``--ro-bind /dev/null <target>`` in ``args``, read flag by flag: every
    /dev/null mask of a start's socket flags covers a socket."""
    i = 0
    while i < len(args):
        if args[i] == "--ro-bind" and i + 2 < len(args) and args[i + 1] == "/dev/null":
            yield i, args[i + 2]
            i += 3
        else:
            i += 1
