"""A write mark's name that says which process owns it, so a later start can tell it died.

Why: every session that runs commands notes its writable roots open, and ended when it closes
(`shellrt.supervisor._tree_note`); a session killed before its end (SIGKILL, OOM) left its mark
open for good, so a guarded start said "it is running" and refused every change to the tree,
even after ``shellrt trust add`` (round 25 "Left"). The mark's session name now carries its
owner: pid, start time in clock ticks, boot and pid namespace; a start on the same boot and in
the same pid namespace that finds the pid gone or reused (another start time) treats the mark
as ended then. Anything else (a name without an owner, another boot or namespace, an
unreadable ``/proc``) is never taken as dead: the mark stays open (fails closed).

Stdlib and `sandbox._proctree` only (both already on ``shellrt run``'s lean path, which names
its mark with it).
"""

from __future__ import annotations

import os

from sandbox._proctree import start_time

__all__ = ["owned_mark", "owner_gone"]


def _boot_id() -> str | None:
    try:
        with open("/proc/sys/kernel/random/boot_id", "rb") as fh:  # bytes: no codec to import
            return fh.read().strip().replace(b"-", b"")[:16].decode() or None
    except OSError:
        return None


def _pid_namespace() -> str | None:
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return None


def owned_mark() -> str:
    """A new session name for this process's mark: ``<random>:<pid>:<start>:<boot>:<pidns>``;
    the bare random part when the owner cannot be told (then the mark never reads as dead)."""
    token = os.urandom(8).hex()
    pid, boot, namespace = os.getpid(), _boot_id(), _pid_namespace()
    start = start_time(pid)
    if start is None or boot is None or namespace is None:
        return token
    return f"{token}:{pid}:{start}:{boot}:{namespace}"


def owner_gone(session: str) -> bool:
    """Whether the process that owns ``session``'s mark is known to have ended (see the module);
    a zombie still counts as running until it is reaped."""
    parts = session.split(":")
    if len(parts) != 5 or not parts[1].isdigit() or not parts[2].isdigit():
        return False
    _, pid, start, boot, namespace = parts
    if boot != _boot_id() or namespace != _pid_namespace() or int(pid) <= 0:
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # another user's process, or not ours to ask: it exists
        pass
    now = start_time(int(pid))
    return now is not None and str(now) != start  # None: gone meanwhile, or unreadable: next time
