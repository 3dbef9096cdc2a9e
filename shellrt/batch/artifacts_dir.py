"""The run's artifacts directory: made 0700, or taken only when it is the caller's own.

Every task's full outputs and collected files are written there by the harness (as root, often),
at ``<dir>/<task id>/...``, a name anyone can predict (the CLI's default is ``<out>.artifacts``).
A directory another local user made first (``--out /tmp/results.jsonl``), or one they may write,
lets them read every task's outputs and put a link where a task's directory goes: the harness
then wrote a task's ``cmd-0.out`` and its collected files (``files/authorized_keys``) where the
link pointed (red team round 27).
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

__all__ = ["claim_artifacts_dir"]


def claim_artifacts_dir(path: Path) -> None:
    """Make ``path`` (0700, with its parents) or accept it as it is only when this user owns it (a
    link too, and what it points to) and no other user may write it; else `PermissionError`."""
    with contextlib.suppress(FileExistsError):  # not a directory: said below
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    why = _why_not_ours(os.lstat(path))
    if why is None and path.is_symlink():
        why = _why_not_ours(os.stat(path), "points to a directory that ")
    if why is not None:
        raise PermissionError(
            f"artifacts directory {path} {why}: another user could read every task's outputs or "
            "swap a task's directory for a link the harness writes through. Remove it, or pass "
            "--artifacts DIR (artifacts_dir= in Python) naming a directory of your own (chmod go-w)"
        )


def _why_not_ours(st: os.stat_result, lead: str = "") -> str | None:
    me = os.geteuid()
    if stat.S_ISLNK(st.st_mode):
        return None if st.st_uid == me else f"is a symbolic link of uid {st.st_uid}"
    if not stat.S_ISDIR(st.st_mode):
        return f"{lead}is not a directory"
    if st.st_uid != me:
        return f"{lead}belongs to uid {st.st_uid}, not to you (uid {me})"
    if st.st_mode & 0o022:
        return f"{lead}other users may write (mode {stat.S_IMODE(st.st_mode):o})"
    return None
