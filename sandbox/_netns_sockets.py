"""Pathname unix sockets bound in the host's *other* network namespaces: a container's, a session's.

Why: ``connect`` to a pathname socket finds it by its file, whatever network namespace bound it,
and a read-only mount does not stop it. The host's ``/proc/net/unix`` (what `sandbox._hostsockets`
masks from) lists only the sockets of the host's own namespace, so a socket a container (its own
network namespace, a host directory bound into it) or another sandbox session listened on at a
host path the sandbox shows was never masked: one bwrap per command connected to a 0777 socket
a process in another namespace bound under ``/var/tmp`` (red team round 38, novel).

Each namespace is read through ``/proc/<pid>/net/unix`` of one process in it (any process may
read it), told apart by that file's inode (one per namespace: no ``ns/net`` link to read, which
needs ptrace access to another user's process). This process's own namespace is left out (the
caller reads it already). Not listed: a namespace no process is in (kept by a bind mount, or by
the fd of a process that bound a socket there and then entered another): its table is read
through no process ("Left" in docs/security.md).
"""

from __future__ import annotations

import math
import os
import re
import threading
import time
from collections.abc import Iterable

from sandbox._proctree import stat_fields

__all__ = [
    "namespace_lines",
    "namespaces_listing",
    "other_namespace_lines",
    "own_namespace",
    "processes_by_namespace",
]


def _whole(fd: int) -> bytes:
    """Everything ``fd`` (a procfs table) shows now, read from its start to its end (a seq file
    shows it afresh from offset 0). Raises `OSError`."""
    chunks = []
    at = 0
    while chunk := os.pread(fd, 1 << 16, at):
        chunks.append(chunk)
        at += len(chunk)
    return b"".join(chunks)


#: Descriptors `_HeldTables` keeps at most: the host process's fds are shared with its sessions'
#: proxies and pipes (`sandbox._fdbudget` keeps a reserve of 256 for everything else).
_HELD_MAX = 32


class _HeldTables:
    """An open descriptor of each other namespace's ``/proc/<pid>/net/unix``, by its table's inode,
    with the process it was opened through.

    Why: opening it again for every check (a four-name walk through /proc, an ``fstat``, a ``close``)
    was a third of reading a small table, for each namespace before every session command (issue 22,
    item 3, round 56). A procfs net file is bound to the namespace it was opened in (the open file
    holds that namespace: its number is not handed to another while held), so read from offset 0
    again it shows that namespace's table now. It is read so only while the process it was opened
    through is still there and still taken to be in it (`_Scan.namespace_of`): the same condition
    under which a fresh open through that process read it before; otherwise it is closed and the
    table opened through a process as before (a gone one's namespace is not read on, round 39)."""

    def __init__(self) -> None:
        self.fds: dict[int, tuple[int, str]] = {}

    def read(self, ino: int, namespace_of: dict[str, int]) -> bytes | None:
        """The table of namespace ``ino`` through the descriptor held for it; None when none is held,
        its process is gone or taken to be elsewhere now, or it cannot be read (then it is closed:
        the caller opens one through a process)."""
        held = self.fds.get(ino)
        if held is None:
            return None
        fd, pid = held
        try:
            if namespace_of.get(pid) == ino and _exists(pid):
                return _whole(fd)
        except OSError:
            pass
        del self.fds[ino]
        os.close(fd)
        return None

    def open_through(self, pid: str) -> tuple[int, bytes] | None:
        """(the inode of the namespace's table it read, the table) through a new descriptor of
        ``pid``'s table, kept for the next checks; None when it cannot be read (the process may be
        gone, or have entered another namespace since it was looked up: the inode tells which)."""
        try:
            fd = os.open(f"/proc/{pid}/net/unix", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            ino = os.fstat(fd).st_ino
            table = _whole(fd)
        except OSError:
            os.close(fd)
            return None
        old = self.fds.pop(ino, None)
        if old is not None:
            os.close(old[0])
        elif len(self.fds) >= _HELD_MAX:  # a host of many namespaces: the rest opened each time
            os.close(fd)
            return ino, table
        self.fds[ino] = (fd, pid)
        return ino, table

    def keep_only(self, inos: set[int]) -> None:
        """Close the descriptors of the namespaces not read this time (no process found in them)."""
        for ino in self.fds.keys() - inos:
            os.close(self.fds.pop(ino)[0])


def _exists(pid: str) -> bool:
    """Whether a process ``pid`` is there (``kill(pid, 0)``: no path walk; a zombie counts, as
    another uid's does)."""
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_held = _HeldTables()


#: A line of a socket no path reaches (``/proc/net/unix``: no name, or an abstract one, ``@...``,
#: which only its own network namespace sees), with the line end before it: dropped before any
#: caller's per-line work. Why (red team round 53): a sandboxed command holding 57,000 sockets (in
#: pairs) in its session's namespace made every bwrap command on the host -- every session's, not only
#: its own -- parse and join 57,000 lines on the event loop (~0.27 s a command). A line this pattern
#: does not match is kept (a pathname socket, or a line of an unknown format: the callers judge it
#: as before). It starts with a literal line end, so the engine jumps from line to line (a ``^``
#: under MULTILINE tried every byte: 2.3 us a kept line, against 0.7).
_NO_PATH = re.compile(
    rb"\n[0-9A-Fa-f]+: [0-9A-F]{8} [0-9A-F]{8} [0-9A-F]{8} [0-9A-F]{4} [0-9A-F]{2} +[0-9]+(?: @[^\n]*)?(?=\n)"
)


class _Pathnames:
    """Each namespace's table (by its inode) as last read, and its pathname lines: a table read again
    unchanged (a command's idle socket pairs) costs one comparison (~0.5 ms for 57,000 lines), not the
    pattern again (~35 ms). The table is kept for it (5.7 MB for those lines; a digest cost ~25 ms)."""

    def __init__(self) -> None:
        self.last: dict[int, tuple[bytes, bytes]] = {}

    def of(self, ino: int, lines: bytes) -> bytes:
        """The lines of ``lines`` (a table without its header, ending in a line end) that name a path."""
        known = self.last.get(ino)
        if known is not None and known[0] == lines:
            return known[1]
        kept = _NO_PATH.sub(b"", b"\n" + lines)[1:]
        self.last[ino] = (lines, kept)
        return kept

    def keep_only(self, inos: set[int]) -> None:
        """Forget the namespaces not read this time (gone, or their inode reused)."""
        for ino in self.last.keys() - inos:
            del self.last[ino]


_pathnames = _Pathnames()


def other_namespace_lines() -> bytes:
    """The socket lines (``/proc/net/unix`` format, no header) of every network namespace on the
    host that some process is in, but this process's own."""
    ours, theirs = namespace_lines()
    return ours + theirs


#: Every process's namespace is looked up again at least this often (seconds): between full passes a
#: check stats only processes it has not seen (round 38, lead: a stat a process on every session
#: command cost ~0.3 ms of host CPU). What it bounds: a process seen before that enters another
#: namespace in place (``unshare``, ``setns``) and binds there is found within this long; a new
#: process, and a socket bound later in a namespace already known, at the next check.
_FULL_EVERY_S = 0.5


class _Scan:
    """What the last check learnt: each process's namespace (by its table's inode), when every
    process was last looked up, the namespaces this process's descendants were in, and the last
    pid handed out then."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.namespace_of: dict[str, int] = {}
        self.full_at = -math.inf
        self.namespaces: frozenset[int] = frozenset()
        self.ours: frozenset[int] = frozenset()
        #: This process's descendants (pids as /proc names) as of the last look, and their children
        #: seen since (`_children_of_ours`)
        self.mine: set[str] = set()
        #: The pid namespace's last pid handed out (`_LastPid`) when the last check began; None
        #: when it cannot be had (then every check lists /proc).
        self.last_pid: int | None = None
        #: Pids handed out before the last check that it could not look up yet (`_handed_out`).
        self.retry: set[str] = set()


_scan = _Scan()


#: Past this many pids handed out since the last check, it lists /proc instead of looking each up.
_HANDED_MAX = 256


class _LastPid:
    """The last pid the kernel handed out in this process's pid namespace (``ns_last_pid``, one
    ``pread`` of a kept descriptor, ~2 us), and ``pid_max``, where numbers wrap.

    Why: listing /proc to find the processes made since the last check was most of a bwrap session
    command's socket check (~90 us for 110 processes here, growing with the host's processes; issue
    22). A pid is handed out cyclically, in every pid namespace a process is in (a container's and
    a sandbox's processes have one in ours too), and threads take them from the same numbers, so
    every process made since the last check has a number in (the last one then, the last one now].
    """

    def __init__(self) -> None:
        self._fd: int | None = None
        self.pid_max = 0

    def read(self, full: bool = False) -> int | None:
        """The last pid handed out; None when it cannot be had, or when /proc is another pid
        namespace's than this process's (then its numbers say nothing about /proc's). ``full``
        (the full pass): ``pid_max`` and /proc's namespace are read again (root may change either)."""
        try:
            if self._fd is None or full:
                if os.readlink("/proc/self") != str(os.getpid()):
                    self.close()
                    return None
                with open("/proc/sys/kernel/pid_max", "rb") as fh:
                    self.pid_max = int(fh.read())
                if self._fd is None:
                    self._fd = os.open("/proc/sys/kernel/ns_last_pid", os.O_RDONLY | os.O_CLOEXEC)
            return int(os.pread(self._fd, 32, 0))
        except (OSError, ValueError):
            self.close()
            return None

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


_last_pid = _LastPid()


def _handed_out(before: int | None, now: int | None) -> list[str] | None:
    """The pids handed out after ``before`` up to ``now`` (as /proc names), or None when there are
    more than `_HANDED_MAX` or either is unknown (the caller then lists /proc). Numbers wrap at
    ``pid_max`` to the low ones (300 in the host's namespace, 1 in a fresh one: from 1, to be sure)."""
    if before is None or now is None:
        return None
    pid_max = _last_pid.pid_max
    if now >= before:
        count = now - before
        numbers = range(before + 1, now + 1)
        wrapped: range = range(0)
    else:  # wrapped round: the top of the numbers, then the bottom
        count = pid_max - 1 - before + now
        numbers = range(before + 1, pid_max)
        wrapped = range(1, now + 1)
    if not 0 <= count <= _HANDED_MAX or pid_max <= 0:  # negative: pid_max lowered meanwhile
        return None
    return [str(pid) for pid in (*numbers, *wrapped)]


def namespace_lines() -> tuple[bytes, bytes]:
    """The socket lines of every other network namespace on the host that some process is in:
    (those of namespaces a descendant of this process is in -- the sandboxes it started, whose
    commands bind their own sockets in their roots --, those of the rest: a container's, another
    program's sessions'). A socket the rest bound in a sandbox's root is not one of its commands'
    (round 38 review: it was left out by its path, and reachable). A process gone between the
    listing and the read is skipped (its namespace, if another process holds it, is read through
    that one). Each namespace's table is read every call; which process is in which namespace is
    looked up only for processes made since the last call (`_handed_out`; /proc is listed when
    that is not known), and for all every `_FULL_EVERY_S`. Which are ours is worked out again on
    a full pass, when the set of namespaces changed, and when a process not seen before is in one
    taken as ours (a command of a session; or another program's process in a namespace that took
    the number of one of ours that is gone: round 39)."""
    own = own_namespace()
    with _scan.lock:
        now = time.monotonic()
        full = now - _scan.full_at >= _FULL_EVERY_S
        if full:
            _scan.full_at = now
        last = _last_pid.read(full)  # before looking: a process made after it is the next call's
        handed = None if full else _handed_out(_scan.last_pid, last)
        if handed is not None:
            handed += _scan.retry - set(handed)
        if handed is None or len(handed) > _HANDED_MAX:
            looked = _look_up_all({} if full else _scan.namespace_of)
            if looked is None:
                return b"", b""
            (namespace_of, fresh), retry = looked, set[str]()
        else:
            namespace_of, fresh, retry = _look_up_handed(handed, _scan.retry)
            _scan.mine.difference_update(fresh)  # a number handed out again: a new process
        _scan.last_pid, _scan.retry = last, retry
        tables: dict[int, bytes] = {}
        gone: list[str] = []
        # Namespace by namespace (a few), not process by process (every process on the host): a
        # namespace's processes are gone through only when its held table cannot be read.
        for ino in set(namespace_of.values()):
            if ino == own or ino in tables:
                continue
            held = _held.read(ino, namespace_of)
            if held is not None:
                tables[ino] = _path_lines(ino, held)
                continue
            for pid in [pid for pid, its in namespace_of.items() if its == ino]:
                read = _held.open_through(pid)
                if read is None:
                    gone.append(pid)
                    continue
                really, table = read
                if really != ino:  # it moved since it was looked up: the next check looks at every one
                    namespace_of[pid] = really
                    _scan.full_at = -math.inf
                    if really == own or really in tables:
                        continue
                tables[really] = _path_lines(really, table)
                if ino in tables:
                    break
        for pid in gone:
            del namespace_of[pid]
        read_now = set(tables)
        _pathnames.keep_only(read_now)
        _held.keep_only(read_now)
        _scan.namespace_of = namespace_of
        _scan.mine.intersection_update(namespace_of)  # gone ones: their pids may be reused
        if (
            full
            or frozenset(tables) != _scan.namespaces
            or not _children_of_ours(_fresh_in_ours(fresh, namespace_of, own), _scan.mine)
        ):
            _scan.ours, _scan.mine = _our_namespaces(namespace_of, fresh)
            _scan.namespaces = frozenset(tables)
        ours = _scan.ours
    return (
        b"".join(t for ino, t in tables.items() if ino in ours),
        b"".join(t for ino, t in tables.items() if ino not in ours),
    )


def namespaces_listing(inodes: Iterable[str]) -> dict[str, list[tuple[int, str]]]:
    """For each socket inode of ``inodes`` (decimal, as listed), each other namespace whose table, as
    `namespace_lines` last read it, has a pathname line naming that inode, as (its table's inode, a
    process in it: a /proc name, "" when none is known now): where to ask the kernel about that
    socket (`sandbox._boundfile`). A line merely holding the number (in a path) gives a namespace
    that has no such socket: its answer says so."""
    with _scan.lock:
        reader = {ino: pids[0] for ino, pids in _grouped_by_namespace().items()}
        wanted = [(inode, b" " + inode.encode() + b" ") for inode in inodes]
        found: dict[str, list[tuple[int, str]]] = {}
        for ino, (_table, kept) in _pathnames.last.items():
            for inode, column in wanted:
                if column in kept:
                    found.setdefault(inode, []).append((ino, reader.get(ino, "")))
    return found


def processes_by_namespace() -> dict[int, list[str]]:
    """The processes (/proc names) in each network namespace (by its table's inode), as the last
    `namespace_lines` found them (a process made since is in none: callers take it as any other)."""
    with _scan.lock:
        return _grouped_by_namespace()


def _grouped_by_namespace() -> dict[int, list[str]]:
    """`_scan.namespace_of` turned round: each namespace's processes in the scan's order (the caller
    holds `_scan.lock`)."""
    by: dict[int, list[str]] = {}
    for pid, ino in _scan.namespace_of.items():
        by.setdefault(ino, []).append(pid)
    return by


def _path_lines(ino: int, table: bytes) -> bytes:
    """The pathname lines (`_Pathnames.of`) of namespace ``ino``'s ``table`` (with its header)."""
    _head, _sep, lines = table.partition(b"\n")
    return _pathnames.of(ino, lines if not lines or lines.endswith(b"\n") else lines + b"\n")


def own_namespace() -> int | None:
    """This process's network namespace, by its table's inode (as `processes_by_namespace` names them)."""
    try:
        return os.stat("/proc/self/net/unix").st_ino
    except OSError:
        return None


def _fresh_in_ours(fresh: set[str], namespace_of: dict[str, int], own: int | None) -> list[str]:
    """The processes of ``fresh`` in namespaces taken as ours, but this process's own namespace
    (a descendant of ours may be in it, but its table is the caller's to read, never one of the
    tables told apart): every new host process there was "not a child of ours" and had every
    descendant looked up again (~0.35 ms; 115 of 300 session commands on a busy host, issue 22)."""
    ours = _scan.ours
    return [pid for pid in fresh if (ino := namespace_of.get(pid)) in ours and ino != own]


def _look_up_all(known: dict[str, int]) -> tuple[dict[str, int], set[str]] | None:
    """(every process's namespace, the pids looked up now): those in ``known`` are taken from it;
    None when /proc cannot be listed."""
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return None
    namespace_of: dict[str, int] = {}
    fresh: set[str] = set()
    for pid in pids:
        ino = known.get(pid)
        if ino is None:
            try:
                ino = os.stat(f"/proc/{pid}/net/unix").st_ino
            except OSError:
                continue
            fresh.add(pid)
        namespace_of[pid] = ino
    return namespace_of, fresh


def _look_up_handed(handed: list[str], retried: set[str]) -> tuple[dict[str, int], set[str], set[str]]:
    """(the last check's namespaces with those of ``handed`` looked up now, the pids found, those to
    try again next time). A number handed out before the last pid was read may not be in /proc yet
    (the kernel hands it out before it lists the process): tried again by the next check, once
    (``retried`` are not again; the full pass, at most `_FULL_EVERY_S` later, bounds the rest).
    A number not found now is dropped: its process is gone, or that number is a new one's."""
    namespace_of = _scan.namespace_of  # updated in place (the caller holds the lock and keeps it)
    fresh: set[str] = set()
    retry: set[str] = set()
    for pid in handed:
        try:
            namespace_of[pid] = os.stat(f"/proc/{pid}/net/unix").st_ino
        except OSError:
            namespace_of.pop(pid, None)
            if pid not in retried:
                retry.add(pid)
            continue
        fresh.add(pid)
    return namespace_of, fresh, retry


def _our_namespaces(namespace_of: dict[str, int], fresh: set[str]) -> tuple[frozenset[int], set[str]]:
    """(the namespaces this process's descendants are in, those descendants), each descendant's
    namespace looked up now unless ``fresh`` (looked up by this call): a number is the kernel's
    lowest free one, so a namespace made after one of ours is gone gets its number, and a pid (32,768
    on many hosts) is reused; the cache of either let another program's namespace pass for ours
    until the next full pass, its sockets in the workspace left unmasked (red team round 39,
    sockets). Changes ``namespace_of`` in place."""
    found: set[int] = set()
    mine = _descendants(os.getpid())
    for pid in mine:
        if pid not in fresh:
            try:
                namespace_of[pid] = os.stat(f"/proc/{pid}/net/unix").st_ino
            except OSError:
                namespace_of.pop(pid, None)
                continue
        if pid in namespace_of:
            found.add(namespace_of[pid])
    return frozenset(found), mine


def _children_of_ours(pids: list[str], mine: set[str]) -> bool:
    """Whether each of ``pids`` (processes new since the last check, in namespaces taken as ours)
    is a child of ``mine`` or of another of them: then each is added to ``mine``. A session's
    command is (one read of ``/proc/<pid>/stat`` each, not a walk of every descendant); another
    program's process in a namespace that took a gone one's number is not."""
    parents: dict[str, str] = {}
    for pid in pids:
        parent = _parent_of(pid)
        if parent is None:
            return False
        parents[pid] = parent
    while parents:
        adopted = [pid for pid, parent in parents.items() if parent in mine]
        if not adopted:
            return False
        for pid in adopted:
            mine.add(pid)
            del parents[pid]
    return True


def _parent_of(pid: str) -> str | None:
    """The parent pid of ``pid`` (a /proc name) from ``/proc/<pid>/stat``, None when it cannot be
    read (`stat_fields`: one ``open``/``read``/``close``, not a file object: this runs for each
    session command's processes before every command, issue 22)."""
    fields = stat_fields(pid)
    return fields[1].decode() if fields is not None and len(fields) > 1 else None


def _descendants(root: int) -> set[str]:
    """The pids (as /proc names) below ``root``, through ``/proc/<pid>/task/<tid>/children``. None
    found (a kernel without ``CONFIG_PROC_CHILDREN``): every namespace is another program's, so a
    sandbox's own sockets in its roots are masked too (fail closed)."""
    found: set[str] = set()
    work = [str(root)]
    while work:
        pid = work.pop()
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                    children = fh.read().split()
            except OSError:
                continue
            for child in children:
                name = child.decode()
                if name not in found:
                    found.add(name)
                    work.append(name)
    return found
