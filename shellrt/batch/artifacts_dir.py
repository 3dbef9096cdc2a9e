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
import re
import shutil
import stat
from pathlib import Path

__all__ = ["claim_artifacts_dir", "start_clean"]


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


#: What an attempt writes in its task's directory: whole outputs and the collected files' folder.
_OURS = re.compile(r"cmd-[0-9]+\.(out|err)|files")


def start_clean(task_dir: Path) -> None:
    """Empty ``task_dir`` (``<artifacts>/<task id>``) before an attempt writes there: an earlier
    attempt's collected files and ``cmd-N.out`` (a ``--resume`` after a crash, an ``error`` line run
    again) stayed beside the new ones, and the new result's ``artifacts_dir`` named them all as this
    attempt's (red team round 38). Only what an attempt writes is removed (links unlinked, never
    followed; `shutil.rmtree` follows none inside): a directory holding anything else (``--artifacts
    ~`` and a task ``Documents``) is refused whole, never emptied. Raises OSError saying what to do."""
    try:
        st = os.lstat(task_dir)
    except FileNotFoundError:
        return
    why = "is a symbolic link" if stat.S_ISLNK(st.st_mode) else _why_not_ours(st)
    names: list[str] = []
    if why is None:
        names = os.listdir(task_dir)
        foreign = sorted(n for n in names if not _OURS.fullmatch(n))
        if foreign:
            why = f"holds {foreign[0]!r}, which no attempt of a task writes"
    if why is not None:
        raise PermissionError(
            f"{task_dir}, where this task's outputs go, {why}; nothing was removed. Move it away, or "
            "pass --artifacts DIR (artifacts_dir= in Python) naming a directory of the run's own"
        )
    for name in names:
        path = task_dir / name
        try:
            if stat.S_ISDIR(os.lstat(path).st_mode):
                shutil.rmtree(path)
            else:
                os.unlink(path)
        except OSError as exc:
            raise OSError(
                exc.errno,
                f"cannot remove {path}, an earlier attempt's output of this task ({exc.strerror or exc}); "
                "remove it by hand, then run the task again",
            ) from exc
