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

__all__ = ["closed_to_others"]


def closed_to_others(path: Path) -> str | None:
    """The clear error when some directory from ``/`` down to ``path`` (the temp dir: the session's
    0700 owner directory below it is made crossable in the holder's namespace) is not searchable by
    other users (the sandbox uid), else None."""
    for part in (*reversed(path.parents), path):
        try:
            mode = os.stat(part).st_mode
        except OSError as exc:
            return f"bwrap: cannot look at {part} ({exc.strerror})"
        if not mode & stat.S_IXOTH:
            return (
                f"bwrap: one bwrap per command runs as an unprivileged sandbox uid, which cannot reach "
                f"this session's files under {path}: {part} is closed to other users (mode "
                f"{stat.S_IMODE(mode):04o}). Fix: set TMPDIR to a directory every user can cross (e.g. "
                f"unset it to use /tmp, or chmod o+x {part}), or use the session sandbox (persistent)"
            )
    return None
