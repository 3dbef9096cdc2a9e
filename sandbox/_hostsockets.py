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

Abstract sockets are cut by the network namespace (``network: none``). For
a root caller the unprivileged sandbox uid is the second wall: a 0660
root:docker socket refuses it even where it is visible.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "RUN_DIRS",
    "VANISHED_MASK",
    "IpcMasks",
    "SocketWatch",
    "StartMasks",
    "host_socket_paths",
    "ipc_mask_args",
    "outside_sockets",
]

RUN_DIRS = ("/run", "/var/run")


def _socket_table() -> bytes:
    """``/proc/net/unix`` (read before every per-command bwrap: plain reads, no file object)."""
    try:
        fd = os.open("/proc/net/unix", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return b""
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return b""
    finally:
        os.close(fd)


def _bound(table: bytes) -> frozenset[tuple[str, str]]:
    """(inode, path) of every pathname socket in ``table``: a socket bound again at a listed path
    shows up as a new inode."""
    lines = table.decode("utf-8", "surrogateescape").splitlines()[1:]
    return frozenset(
        (parts[6], parts[7])
        for line in lines
        if len(parts := line.split(None, 7)) == 8 and parts[7].startswith("/")
    )


def host_socket_paths(table: bytes | None = None) -> list[str]:
    """Pathname unix sockets bound in the host's network namespace (``/proc/net/unix``, or ``table``
    read from it)."""
    return sorted({path for _, path in _bound(_socket_table() if table is None else table)})


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


class SocketWatch:
    """Whether a host socket appeared since a session sandbox hid them, at the least cost per command.

    A socket counts by (inode, path): one removed and bound again at a hidden path
    is a new one. Its mask went with the old file (the host's unlink detaches a mount
    made on it in another namespace), so the next command needs a new sandbox.
    One read of ``/proc/net/unix`` per check; the table is parsed only when it
    changed since the last check that found nothing new (the roots are resolved once),
    and a listed (inode, path) is judged against the roots only the first time it is seen.
    """

    def __init__(self, keep: Iterable[Path], cover: Iterable[Path] = ()) -> None:
        self._skip = [*_kept(keep), *RUN_DIRS]
        #: Covered although kept (`IpcMasks` ``cover``: the writable roots, also below /tmp).
        self._cover = [os.path.realpath(p) for p in cover]
        self._table = _socket_table()
        self.hidden = self._outside_bound(self._table)
        #: Every (inode, path) a check found harmless (hidden, or where commands may bind): the
        #: table changes with every command (its own unnamed socket pairs), and judging each path
        #: against the roots again was most of a check's cost (~0.2 ms a command under load).
        self._fine = _bound(self._table)

    def _outside_bound(self, table: bytes) -> frozenset[tuple[str, str]]:
        return frozenset(
            pair for pair in _bound(table) if not _under(pair[1], self._skip) or _under(pair[1], self._cover)
        )

    def nothing_new(self) -> bool:
        """No socket outside the kept paths but those there when this watch was made."""
        table = _socket_table()
        if table == self._table:
            return True
        bound = _bound(table)
        if bound <= self._fine or self._outside_bound(table) <= self.hidden:
            self._table = table
            self._fine = bound if len(self._fine) > _FINE_MAX else self._fine | bound
            return True
        return False


#: Pairs `SocketWatch` remembers at most beyond the current table's (a session whose commands
#: bind sockets in /tmp over and over must not grow it without end).
_FINE_MAX = 4096


def ipc_mask_args(
    keep: Iterable[Path],
    *,
    reachable_only: bool = False,
    table: bytes | None = None,
    cover: Iterable[Path] = (),
    inside: list[str] | None = None,
) -> list[str]:
    """bwrap flags hiding /run, XDG_RUNTIME_DIR and every host socket outside ``keep`` (and /tmp).

    To be placed after ``--ro-bind / /`` and before the binds of ``keep``.
    ``reachable_only``: for a bwrap run as an unprivileged uid that owns nothing on the
    host, leave out sockets in directories "others" cannot cross (it could neither mask
    nor reach them). ``table``: ``/proc/net/unix`` as already read (default: read now).
    ``inside``: gets the flags covering the host sockets below ``cover`` (kept paths: the
    writable roots), to be placed after everything bound there (a later bind of a parent
    would cover them); each listed path is resolved once for both.
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
    for listed in host_socket_paths(table):
        try:
            path = os.path.realpath(listed)
        except (OSError, ValueError):  # a directory on its way renamed between lstat and readlink
            path = listed
        if _under(path, covered) or _under(path, kept):
            if inside is not None and _under(path, covered_roots) and _is_socket(path):
                inside += ["--ro-bind", "/dev/null", path]
            continue
        try:
            if not stat.S_ISSOCK(os.lstat(path).st_mode):
                continue
            if reachable_only and not all(
                os.stat(parent).st_mode & stat.S_IXOTH for parent in Path(path).parents
            ):
                continue
        except OSError:
            continue
        args += ["--ro-bind", "/dev/null", path]
    return args


class IpcMasks:
    """`ipc_mask_args` for one sandbox's kept paths, worked out again only when the host's sockets changed.

    One bwrap per command needs the flags before every command, and working them
    out (resolving and checking each listed socket) cost more than the rest of its
    argv. Each call reads ``/proc/net/unix`` once: the same table, or the same
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
        self, keep: Iterable[Path], *, reachable_only: bool = False, cover: Iterable[Path] = ()
    ) -> None:
        self._keep = tuple(keep)
        self._reachable_only = reachable_only
        #: Kept paths whose host sockets are covered anyway, after their binds (`inside`).
        self._cover = tuple(cover)
        self._key: tuple[bytes, str] | None = None
        self._bound: frozenset[tuple[str, str]] | None = None
        self._args: tuple[str, ...] = ()
        self._inside: tuple[str, ...] = ()
        #: The sockets ``_args`` covers with /dev/null: each must still be there for bwrap to cover.
        self._masked: list[str] = []

    def args(self) -> list[str]:
        """The flags for a sandbox starting now."""
        table = _socket_table()
        key = (table, os.environ.get("XDG_RUNTIME_DIR", ""))
        if key != self._key:
            bound = _bound(table)
            if self._key is None or key[1] != self._key[1] or bound != self._bound:
                self._work_out(table)
            self._bound = bound
            self._key = key
        elif not all(_is_socket(path) for path in self._masked):
            self._work_out(table)  # a listed socket's file was removed: bwrap could not cover it
        return list(self._args)

    def inside(self) -> list[str]:
        """The flags covering host sockets in the ``cover`` paths, as of the last `args`."""
        return list(self._inside)

    def _work_out(self, table: bytes) -> None:
        inside: list[str] = []
        self._args = tuple(
            ipc_mask_args(
                self._keep, reachable_only=self._reachable_only, table=table, cover=self._cover, inside=inside
            )
        )
        self._inside = tuple(inside)
        both = (*self._args, *self._inside)
        self._masked = [
            both[i + 2] for i in range(len(both) - 2) if both[i] == "--ro-bind" and both[i + 1] == "/dev/null"
        ]


def _is_socket(path: str) -> bool:
    try:
        return stat.S_ISSOCK(os.lstat(path).st_mode)
    except OSError:
        return False


#: What bwrap says when a mask's target (a listed socket, or its directory) is gone.
VANISHED_MASK = (b"Can't mkdir parents for", b"Can't create file at")


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
    """

    def __init__(self) -> None:
        self._args: list[str] | None = None

    def args(self, masks: IpcMasks) -> list[str]:
        """The flags of this start: ``masks``' at the first attempt, the same less vanished ones after."""
        if self._args is None:
            self._args = masks.args()
        return list(self._args)

    def drop_vanished(self) -> bool:
        """Drop the masks whose socket is no longer there; True if any was (the start may be retried)."""
        if self._args is None:
            return False
        kept: list[str] = []
        dropped = False
        args = self._args
        i = 0
        while i < len(args):
            if args[i] == "--ro-bind" and i + 2 < len(args) and args[i + 1] == "/dev/null":
                if _is_socket(args[i + 2]):  # every /dev/null mask here covers a socket
                    kept += args[i : i + 3]
                else:
                    dropped = True
                i += 3
            else:
                kept.append(args[i])
                i += 1
        self._args = kept
        return dropped
