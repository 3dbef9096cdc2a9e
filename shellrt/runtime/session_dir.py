"""A session directory only its owner can read, plant or swap.

Everything a session saw lands in its directory (transcript, persisted outputs, MCP servers'
stderr), and a reopened session trusts what it finds there (recorded results are answered
without running). A directory that already exists is therefore checked before use, not merely
created when missing: it must be the caller's own directory (not a symlink), it is made 0700
(files inside are then private whatever their own mode), and its parent must not let another
user rename or replace it (owned by the caller or root, and not writable by others unless sticky). Only the parent is
checked, not every ancestor.

A session in use says so: its `Runtime` holds a shared `flock` on ``<dir>/.in-use`` from its
start to its close (`hold_session_dir`; the kernel drops it when the process dies), and removal
(``shellrt sessions rm``, the age prune) takes it exclusively first (`lock_for_removal`).
"""

from __future__ import annotations

import fcntl
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from sandbox._root_links import repo_link_on_the_way

__all__ = [
    "IN_USE_FILE",
    "SessionDirError",
    "check_holder",
    "ensure_private_session_dir",
    "hold_session_dir",
    "lock_for_removal",
    "refuse_linked_session_dir",
    "shown_to_other_sessions",
]


class SessionDirError(PermissionError):
    """Raised when a session directory, or the directory holding it, is not private to the caller.

    The message names the path and what to do (remove it, or choose another place).
    """


_HINT = "choose another --session / session_dir, or set SHELLRT_HOME to a directory of yours"


def ensure_private_session_dir(path: Path) -> None:
    """Create ``path`` (0700, parents as needed) or check the existing one; raises `SessionDirError`."""
    uid = os.geteuid()
    path.parent.mkdir(parents=True, exist_ok=True)
    check_holder(path.parent, "the session directory", _HINT)
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        pass
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise SessionDirError(f"the session directory {path} is a symlink; remove it, or {_HINT}")
    if not stat.S_ISDIR(st.st_mode):
        raise SessionDirError(f"the session directory {path} is not a directory; remove it, or {_HINT}")
    if st.st_uid != uid:
        raise SessionDirError(
            f"the session directory {path} is not owned by you (uid {st.st_uid}, you are {uid}): another "
            f"user may have planted it; remove it, or {_HINT}"
        )
    if stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(path, 0o700, follow_symlinks=False)


def refuse_linked_session_dir(path: Path, writable_roots: Iterable[Path]) -> None:
    """Raise `SessionDirError` when ``path`` is reached through a symbolic link inside a root
    commands may write (red team, round 13).

    The directory and its holder are checked resolved; a link on the way that lies in a writable
    root is the repository's to replace (``rm link && mkdir -p link/s``), after which every host
    write by path (state, tasks, spools, transcript) lands in the command's directory, and a
    reopened session trusts it. A mount point cannot be renamed from inside the sandbox, so the
    unlinked path itself is safe; only links need refusing.
    """
    for root in writable_roots:
        found = repo_link_on_the_way(path, Path(root))
        if found is not None:
            link, target = found
            raise SessionDirError(
                f"the session directory {path} is reached through {link}, a symbolic link inside the "
                f"writable root {root} (to {target}): a command could replace it and redirect what "
                f"the session writes; name the real path ({target / os.path.relpath(path, link)}) "
                f"or {_HINT}"
            )


def shown_to_other_sessions(path: Path, hidden: Iterable[str | os.PathLike[str]]) -> str | None:
    """Why a non-root caller's bwrap session may not keep its state at ``path`` (a caller's
    ``session_dir``), or None when every other session's sandbox hides it.

    bwrap shows the host read-only and a non-root caller's sessions share its uid, so 0700 keeps
    no other session's commands out: each masks the state places it knows (`session_mask`) and
    the places every bwrap replaces (``hidden``: /tmp, the temp dir, /run), not a directory only
    this process was told of. Another session's command read this one's spools there (red team
    round 20). A root caller's commands run as leased uids, which cannot enter root's 0700 dirs.
    """
    from shellrt.runtime.session_mask import state_dirs_anywhere

    real = Path(os.path.realpath(path))
    places = [Path(os.path.realpath(p)) for p in (*hidden, *state_dirs_anywhere())]
    if any(real == place or place in real.parents for place in places):
        return None
    return (
        f"the session directory {path} is readable by the commands of your other bwrap sessions (they "
        "run as your uid and see the host read-only; only shellrt's state directories, /tmp and the "
        "temp dir are hidden from them); leave session_dir unset, put it under /tmp, or set "
        "SHELLRT_HOME to a directory of yours"
    )


def check_holder(parent: Path, what: str, hint: str = _HINT) -> None:
    """Raise `SessionDirError` unless only the caller (or root) can rename or replace entries of
    ``parent``, the directory holding ``what`` (owned by the caller or root; not writable by other
    users, unless sticky). Also used for ``<state>``, which holds ``shellrt serve``'s token directory."""
    uid = os.geteuid()
    st = os.stat(parent)
    if st.st_uid not in (uid, 0):
        raise SessionDirError(
            f"{parent}, which holds {what}, is not owned by you or root (uid {st.st_uid}); "
            f"its owner could swap {what}: {hint}"
        )
    # Group write counts only for a group that is not the caller's own (umask 002 setups).
    others_write = st.st_mode & stat.S_IWOTH or (st.st_mode & stat.S_IWGRP and st.st_gid != os.getegid())
    if others_write and not st.st_mode & stat.S_ISVTX:
        raise SessionDirError(
            f"{parent}, which holds {what}, is writable by other users "
            f"(mode {stat.S_IMODE(st.st_mode):o}): they could swap {what}; "
            f"run `chmod go-w {parent}`, or {hint}"
        )


#: The lock a live session holds shared (``<session dir>/.in-use``); removal takes it exclusively.
IN_USE_FILE = ".in-use"
#: Never through a link; never waiting for a FIFO's other end; not inherited by commands.
_LOCK_FLAGS = os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _open_lock(path: Path) -> int:
    """``path``'s lock file open (made when missing); `OSError` when it is not a regular file."""
    fd = os.open(path / IN_USE_FILE, _LOCK_FLAGS, 0o600)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{path / IN_USE_FILE} is not a regular file")
    return fd


def hold_session_dir(path: Path) -> int:
    """`ensure_private_session_dir`, then hold its in-use lock shared; returns the descriptor
    to close when the session ends. Why: ``shellrt sessions rm`` removed live sessions (round 26,
    wave 3). Waits only while a removal holds it, then makes the directory afresh if it went."""
    for _ in range(3):
        ensure_private_session_dir(path)
        try:
            fd = _open_lock(path)
        except FileNotFoundError:
            continue  # removed between the two
        except OSError as exc:
            raise SessionDirError(f"the session lock {path / IN_USE_FILE} is unusable ({exc}); remove it") from exc
        fcntl.flock(fd, fcntl.LOCK_SH)
        try:
            if os.stat(path / IN_USE_FILE, follow_symlinks=False).st_ino == os.fstat(fd).st_ino:
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)  # removed while we waited: make it again
    raise SessionDirError(f"the session directory {path} keeps being removed while starting; {_HINT}")


def lock_for_removal(path: Path) -> int | str:
    """A descriptor holding ``path``'s in-use lock exclusively (close it after removing the
    directory), or why the directory must be kept: a running session holds it, or whether one
    does cannot be told (the lock is not a regular file, or cannot be opened): fails closed."""
    try:
        fd = _open_lock(path)
    except OSError as exc:
        return f"cannot tell whether it is in use ({exc})"
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return "in use by a running session"
    except OSError as exc:
        os.close(fd)
        return f"cannot tell whether it is in use ({exc})"
    return fd
