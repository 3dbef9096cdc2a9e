"""Which ``.git`` git's own discovery takes, as host checks must model it.

Why this exists (red team, round 56, hostrepo): git walks up from where it runs and takes the
first ``.git`` that *is* a repository. A ``.git`` directory without a valid ``HEAD``, ``objects``
and ``refs`` (``mkdir sub/.git``, which any command can make) is passed over and the walk goes on
(a ``.git`` file is not: git uses it or stops with an error). Host checks that stopped at the
first ``.git`` of any kind judged the wrong repository: the file check let host git block on
the real one's FIFO, Glob and Grep read the empty one's index (no tracked file was reported
hidden), and ``git show HEAD:secrets/key`` was judged as reading ``sub/secrets/key``, past a
deny rule on ``secrets/``.
"""

from __future__ import annotations

import os
import re
import stat

from sandbox._hostread import read_regular

__all__ = ["is_repository", "tops_up_to_git", "tree_tops"]

#: A ``.git`` file (``gitdir: <path>``) is a line; past this it is not read.
_MAX_GITFILE_BYTES = 4096
#: git reads this much of ``HEAD`` to validate it (``validate_headref``).
_HEAD_BYTES = 255
_OBJECT_ID = re.compile(rb"([0-9a-f]{40}|[0-9a-f]{64})")


def is_repository(gitdir: str) -> bool:
    """Whether git takes ``gitdir`` as a git directory (``is_git_directory``): a ``HEAD`` that is a
    ``refs/…`` symlink, a ``ref: refs/…`` or an object id, and ``objects`` and ``refs`` it may
    enter. ``HEAD`` is read without blocking: one that is no regular file counts as invalid (the
    callers check such a file on their own)."""
    head = os.path.join(gitdir, "HEAD")
    try:
        mode = os.lstat(head).st_mode
        if stat.S_ISLNK(mode):
            valid = os.readlink(head).startswith("refs/")
        else:
            data = read_regular(head, _HEAD_BYTES) or b""
            ref = data[4:].lstrip() if data.startswith(b"ref:") else b""
            valid = len(data) >= 4 and (ref.startswith(b"refs/") or _OBJECT_ID.match(data) is not None)
    except OSError:
        return False
    return valid and all(os.access(os.path.join(gitdir, n), os.X_OK) for n in ("objects", "refs"))


def tops_up_to_git(directory: str) -> list[str]:
    """Directories at or above ``directory`` (real paths, nearest first) holding a ``.git``, up to
    and including the one git's discovery takes: each ``.git`` passed over is listed too (one a
    later command completes, or git of another version, may take it). Empty without any."""
    found: list[str] = []
    current = os.path.realpath(directory)
    while True:
        dot_git = os.path.join(current, ".git")
        if os.path.lexists(dot_git):
            found.append(current)
            if not os.path.isdir(dot_git) or is_repository(dot_git):
                return found
        parent = os.path.dirname(current)
        if parent == current:
            return found
        current = parent


def tree_tops(directory: str) -> list[str]:
    """Where a path of a commit's tree (``git show HEAD:secrets/key``) may lie on disk, for git run
    in ``directory``: each directory of `tops_up_to_git`, and for a ``.git`` file naming another
    ``.git`` (``gitdir: ../.git``) that one's work tree too, whose files the commits hold. Over-
    inclusive on purpose: each is only a read judged against the rules. ``directory`` itself
    when there is no repository."""
    tops = tops_up_to_git(directory) or [os.path.realpath(directory)]
    dot_git = os.path.join(tops[-1], ".git")
    if os.path.lexists(dot_git) and not os.path.isdir(dot_git):
        data = read_regular(dot_git, _MAX_GITFILE_BYTES) or b""
        if data.startswith(b"gitdir:"):
            named = os.path.realpath(os.path.join(tops[-1], os.fsdecode(data[7:].strip())))
            parts = named.split(os.sep)
            for end in range(len(parts), 1, -1):  # ``…/.git`` or ``…/.git/worktrees/x``
                if parts[end - 1] == ".git":
                    tops.append(os.sep.join(parts[: end - 1]) or os.sep)
                    break
    return list(dict.fromkeys(tops))
