"""A write mark's name that says which process owns it, so a later start can tell it died.

Why: every session that runs commands notes its writable roots open, and ended when it closes
(`shellrt.supervisor._tree_note`); a session killed before its end (SIGKILL, OOM) left its mark
open for good, so a guarded start said "it is running" and refused every change to the tree,
even after ``shellrt trust add`` (round 25 "Left"). The mark's session name now carries its
owner: pid, start time in clock ticks, boot and pid namespace; a start on the same boot and in
the same pid namespace that finds the pid gone, reused (another start time) or a zombie treats
the mark as ended then. Anything else (a name without an owner, another boot or namespace, an
unreadable ``/proc``) is never taken as dead: the mark stays open (fails closed).

Stdlib only: ``shellrt run``'s lean path names its mark with it.
"""

from __future__ import annotations

import os
import secrets

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


def _stat(pid: int) -> tuple[str, str] | None:
    """(state, start time in clock ticks) of ``pid``; None when it does not exist."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()
    if len(fields) < 20:
        raise OSError(f"/proc/{pid}/stat is not readable as such")
    return fields[0].decode(), fields[19].decode()


def owned_mark() -> str:
    """A new session name for this process's mark: ``<random>:<pid>:<start>:<boot>:<pidns>``;
    the bare random part when the owner cannot be told (then the mark never reads as dead)."""
    token = secrets.token_hex(8)
    pid, boot, namespace = os.getpid(), _boot_id(), _pid_namespace()
    try:
        me = _stat(pid)
    except OSError:
        me = None
    if me is None or boot is None or namespace is None:
        return token
    return f"{token}:{pid}:{me[1]}:{boot}:{namespace}"


def owner_gone(session: str) -> bool:
    """Whether the process that owns ``session``'s mark is known to have ended (see the module)."""
    parts = session.split(":")
    if len(parts) != 5 or not parts[1].isdigit() or not parts[2].isdigit():
        return False
    _, pid, start, boot, namespace = parts
    if boot != _boot_id() or namespace != _pid_namespace() or int(pid) <= 0:
        return False
    try:
        now = _stat(int(pid))
    except OSError:
        return False
    return now is None or now[1] != start or now[0] in ("Z", "X", "x")
