"""A session that may write its roots says so, cheaply: one appended line beside the record.

Why: every session that runs commands must leave a mark a later guarded start can see
(`shellrt.permissions.tree_marks`, red team round 25), and ``shellrt run`` must stay cheap
(issue 22: nothing of ``shellrt.permissions`` on its path). A line appended to
``workspace-writes.unmarked`` (the record's directory) under a shared `flock` costs a few
syscalls; the next holder of the record's lock folds the lines into it under an exclusive one.
Never raises: a note that cannot be written leaves the record as it was, and a note that is not
the caller's own file marks every path when folded (fails closed).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterable
from pathlib import Path

__all__ = ["note_path", "note_roots"]


def note_path() -> Path:
    """``workspace-writes.unmarked`` beside the trust store (as `trust_paths.trust_store_path`)."""
    explicit = os.environ.get("SHELLRT_TRUST_STORE")
    if explicit:
        return Path(explicit).with_name("workspace-writes.unmarked")
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.environ.get("HOME") or str(Path.home()), ".config")
    return Path(config) / "shellrt" / "workspace-writes.unmarked"


def note_roots(roots: Iterable[object], session: str, *, opening: bool) -> None:
    """Append ``session`` opening (or ending) on each root; retried once when the folder took the file."""
    at = time.time()  # an end's time: the last write it may have made (folded later as ``last``)
    lines = "".join(
        json.dumps({"root": os.path.realpath(str(r)), "session": session, "open": opening, "at": at}) + "\n"
        for r in roots
    )
    path = note_path()
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        for _ in range(3):
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_SH)  # the folder reads and removes it under LOCK_EX
                try:
                    same = os.stat(path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
                except FileNotFoundError:
                    same = False
                if not same:
                    continue  # folded and removed while we waited: append to the new one
                os.write(fd, lines.encode())
                return
            finally:
                os.close(fd)
