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

import os

__all__ = ["namespace_lines", "other_namespace_lines"]


def _read(path: str) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
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


def other_namespace_lines() -> bytes:
    """The socket lines (``/proc/net/unix`` format, no header) of every network namespace on the
    host that some process is in, but this process's own."""
    ours, theirs = namespace_lines()
    return ours + theirs


def namespace_lines() -> tuple[bytes, bytes]:
    """The socket lines of every other network namespace on the host that some process is in:
    (those of namespaces a descendant of this process is in -- the sandboxes it started, whose
    commands bind their own sockets in their roots --, those of the rest: a container's, another
    program's sessions'). A socket the rest bound in a sandbox's root is not one of its commands'
    (round 38 review: it was left out by its path, and reachable). A process gone between the
    listing and the read is skipped (its namespace, if another process holds it, is read through
    that one)."""
    try:
        own = os.stat("/proc/self/net/unix").st_ino
    except OSError:
        own = None
    seen: set[int] = set() if own is None else {own}
    tables: dict[int, bytes] = {}
    ours: set[int] = set()
    mine = _descendants(os.getpid())
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return b"", b""
    for pid in pids:
        path = f"/proc/{pid}/net/unix"
        try:
            ino = os.stat(path).st_ino
        except OSError:
            continue
        if pid in mine:
            ours.add(ino)
        if ino in seen:
            continue
        table = _read(path)
        if table is None:
            continue
        seen.add(ino)
        _head, _sep, lines = table.partition(b"\n")
        if lines:
            tables[ino] = lines if lines.endswith(b"\n") else lines + b"\n"
    return (
        b"".join(t for ino, t in tables.items() if ino in ours),
        b"".join(t for ino, t in tables.items() if ino not in ours),
    )


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
