"""The audit login uid a session's container pins for all its processes (red team round 38, novel2).

A container's processes inherit ``/proc/self/loginuid`` from runc (containerd's shim, the daemon),
not from the caller: unset where no login ran, and then any command could set it once, to any uid,
0 included (host root's login in the audit log). ``priv`` pins it at the container's start and at
every ``docker exec`` (priv.c ``pin_audit_identity``) to the value chosen here: the caller's own
where a login set it (as a bwrap sandbox inherits it), else the uid the commands run as.
"""

from __future__ import annotations

__all__ = ["audit_uid"]

#: ``/proc/self/loginuid`` of a process no login set it for.
_UNSET = 4294967295


def audit_uid(command_uid: int) -> int:
    """The caller's audit login uid if set (and this kernel has one), else ``command_uid``."""
    try:
        with open("/proc/self/loginuid", "rb") as fh:
            text = fh.read(16).strip()
    except OSError:
        return command_uid
    own = int(text) if text.isdigit() else _UNSET
    return command_uid if own >= _UNSET else own
