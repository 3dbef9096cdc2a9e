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

__all__ = ["other_namespace_lines"]


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
    host that some process is in, but this process's own. A process gone between the listing and
    the read is skipped (its namespace, if another process holds it, is read through that one)."""
    try:
        own = os.stat("/proc/self/net/unix").st_ino
    except OSError:
        own = None
    seen: set[int] = set() if own is None else {own}
    out: list[bytes] = []
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return b""
    for pid in pids:
        path = f"/proc/{pid}/net/unix"
        try:
            ino = os.stat(path).st_ino
        except OSError:
            continue
        if ino in seen:
            continue
        table = _read(path)
        if table is None:
            continue
        seen.add(ino)
        _head, _sep, lines = table.partition(b"\n")
        if lines:
            out.append(lines if lines.endswith(b"\n") else lines + b"\n")
    return b"".join(out)
