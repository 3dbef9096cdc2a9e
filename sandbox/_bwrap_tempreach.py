"""Why a root caller's one bwrap per command cannot reach the session's own paths (red team round 28).

A root caller's per-command bwraps run as the leased sandbox uid (`sandbox.bwrap`); the session's
/dev tree, /tmp and /dev/shm pool are under the host's temp dir (``OwnedDir``). With ``TMPDIR``
below a 0700 directory (``/root/tmp``) the sandbox uid cannot cross it: every command failed with
bwrap's "Can't find source path ...: Permission denied", which the start's probe reported as
"bubblewrap cannot create namespaces here" (a wrong cause and a wrong fix). A session under its
zygote is not affected (its bwrap reaches them before the switch).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from sandbox._reach import NO_ACL, acl_of, bits_for, every_user_has

__all__ = ["closed_to_others"]


def closed_to_others(path: Path, ids: tuple[int, int] | None = None) -> str | None:
    """The clear error when some directory from ``/`` down to ``path`` (the temp dir: the session's
    0700 owner directory below it is made crossable in the holder's namespace) is not searchable by
    the sandbox uid, else None.

    ``ids``: that uid and gid, read as the kernel does -- the owner's, the owning group's or an ACL
    entry's search bit before the "other" one (`sandbox._reach`; round 49: a directory of the uid's
    group closed to that group, or one an ACL closes to the uid, passed on "other" bits and every
    command failed in bwrap with the probe's wrong cause). None (a uid not known yet): every uid but
    root must cross it. An ACL that cannot be read is named too (fail closed)."""
    who = "the sandbox uid" if ids is None else f"the sandbox uid {ids[0]} (gid {ids[1]})"
    for part in (*reversed(path.parents), path):
        try:
            st = os.stat(part)
        except OSError as exc:
            return f"bwrap: cannot look at {part} ({exc.strerror})"
        acl = acl_of(part, follow=True, st=st) if st.st_mode & stat.S_IRWXG else NO_ACL  # no mask: no ACL
        if acl is None:
            return f"bwrap: cannot read the ACL of {part}, on the way to this session's files under {path}"
        crosses = every_user_has(st, acl, stat.S_IXOTH) if ids is None else bits_for(st, acl, ids) & stat.S_IXOTH
        if not crosses:
            return (
                f"bwrap: one bwrap per command runs as {who}, which cannot reach this session's files "
                f"under {path}: {part} is closed to it (mode {stat.S_IMODE(st.st_mode):04o}, owner "
                f"{st.st_uid}, group {st.st_gid}{', an ACL' if acl else ''}). Fix: set TMPDIR to a directory "
                f"every user can cross (e.g. unset it to use /tmp), or make {part} searchable by that uid "
                "(chmod a+x, and an ACL entry naming it or its group must grant x), or use the session "
                "sandbox (persistent)"
            )
    return None
