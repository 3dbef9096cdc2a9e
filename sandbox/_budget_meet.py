"""Where a non-root caller's budget holders meet (`sandbox._ucounts`): a directory only its uid may
enter, found without letting another user decide whether a sandbox starts.

Round 23 met in the caller's ``XDG_RUNTIME_DIR``; round 26 added ``<temp>/shellrt-budget-<uid>``
and refused to start when another user had made that path first, so any local user could stop
every sandbox of a caller without a runtime directory. Now the places are tried in turn: the
runtime directory, ``~/.cache/shellrt/budget-<host>`` in a home of the caller's own (no other user can
create names there), the temp path. When none is usable the holder meets nobody: the process
takes its own half (the degraded mode before round 22), with a warning saying what to fix.

Every place is checked on its fd (``O_NOFOLLOW``, ``fstat``): the holder works in the directory
checked, whatever the path names later.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
import tempfile

__all__ = ["meeting_dir", "meeting_places", "met_count", "place_paths", "real_below"]

_log = logging.getLogger(__name__)

#: The real path of every directory this process's holders met in: ``HOME`` or ``TMPDIR`` may change
#: after, and the one in use must stay hidden from sandboxes all the same.
_MET: set[str] = set()


def home_place() -> tuple[str, ...]:
    """Below the caller's home, the components made (0700) when missing: one directory per host,
    as the budgets are per kernel (a home shared by NFS: a holder of another host holds the
    lock's flock but serves a socket nobody here can connect to)."""
    node = os.uname().nodename.replace("/", "_").lstrip(".") or "host"
    return (".cache", "shellrt", f"budget-{node}")


def _opened(name: str, dir_fd: int | None = None, *, follow: bool = False) -> int | None:
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except OSError:
        return None


def _checked(fd: int | None, others: int) -> int | None:
    """``fd`` when it is a directory of this euid without any of the mode bits ``others``; else
    None (and ``fd`` closed)."""
    if fd is None:
        return None
    info = os.fstat(fd)
    if stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & others:
        return fd
    os.close(fd)
    return None


def own_dir(path: str) -> int | None:
    """An fd of ``path`` when it is a directory of this euid that nobody else may enter, opened
    without following a link there; else None."""
    return _checked(_opened(path), 0o077)


def _below(parent: int, names: tuple[str, ...]) -> int | None:
    """``names`` below the directory ``parent`` (closed here), each made 0700 when missing and
    opened without following a link: each the caller's and writable by nobody else, the last one
    nobody else may enter. None when any is not."""
    fd: int | None = parent
    for index, name in enumerate(names):
        assert fd is not None
        try:
            os.mkdir(name, 0o700, dir_fd=fd)
        except OSError as exc:
            if exc.errno != errno.EEXIST:
                os.close(fd)
                return None
        child = _opened(name, fd)
        os.close(fd)
        fd = _checked(child, 0o077 if index == len(names) - 1 else 0o022)
        if fd is None:
            return None
    return fd


def _home_place() -> int | None:
    """``~/.cache/shellrt/budget-<host>`` when the home is the caller's and nobody else may write there
    (else another user could make the names below it)."""
    home = os.environ.get("HOME", "")
    if not home.startswith("/"):
        return None
    fd = _checked(_opened(home, follow=True), 0o022)  # the caller's own setting: a link is fine
    return None if fd is None else _below(fd, home_place())


def temp_place() -> str:
    """The last place tried: ``<temp>/shellrt-budget-<euid>``."""
    return os.path.join(tempfile.gettempdir(), f"shellrt-budget-{os.geteuid()}")


def _found(path: str) -> str:
    try:
        info = os.lstat(path)
    except OSError as exc:
        return exc.strerror or "gone"
    return f"owner uid {info.st_uid}, mode {stat.filemode(info.st_mode)}"


def meeting_dir() -> int | None:
    """An fd of the directory the uid's holders meet in, or None (warned once per call) when there
    is none: the caller's ``XDG_RUNTIME_DIR`` when that is its own and nobody else may enter it
    (red team round 23), else ``~/.cache/shellrt/budget-<host>`` (round 26), else ``<temp>/shellrt-budget-
    <euid>`` made 0700. A path another user made first, a link, or one open to others is never
    used (its maker could hold the lock or serve a socket there) and never stops a start."""
    run = os.environ.get("XDG_RUNTIME_DIR", "")
    fd = own_dir(run) if run.startswith("/") else None
    if fd is None:
        fd = _home_place()
    if fd is not None:
        return _noted(fd)
    path = temp_place()
    try:
        os.mkdir(path, 0o700)
    except OSError:
        pass  # this uid's from before, someone else's, or no temp dir: checked below
    fd = own_dir(path)
    if fd is None:
        _log.warning(
            "shellrt: this process's sandboxes take their own half of uid %d's inotify, fanotify and "
            "signal budgets (shared with no other shellrt process): %s (%s) is not a directory of "
            "uid %d that only it may enter (another user may have made it first), and neither "
            "XDG_RUNTIME_DIR nor ~/%s is usable; set XDG_RUNTIME_DIR to a 0700 directory of your own, "
            "or remove that path",
            os.geteuid(),
            path,
            _found(path),
            os.geteuid(),
            "/".join(home_place()),
        )
    return None if fd is None else _noted(fd)


def _noted(fd: int) -> int:
    """``fd``, its directory's real path noted in `_MET` (by the fd: what was checked)."""
    try:
        _MET.add(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        pass  # no /proc: the places `meeting_places` names by path are still hidden
    return fd


def meeting_places() -> list[str]:
    """Every directory this uid's holders meet in or may meet in, by real path, that exists now: the
    runtime directory, ``~/.cache/shellrt/budget-<host>``, the temp path, and each this process met in.

    bwrap hides them all from its sandboxes (`sandbox.bwrap.private_places`): a command runs as the
    caller's uid, so where its sandbox shows one (a workspace of ``$HOME``, a ``TMPDIR`` in the
    workspace) it could take the lock, serve the name, or move the way to it, and processes started
    later would not share (red team round 26, wave 3). A root caller has no rendezvous; a directory
    of these names is hidden all the same."""
    places = [met for met in sorted(_MET) if real_below(met, ()) is not None]  # still there
    run = os.environ.get("XDG_RUNTIME_DIR", "")
    if run.startswith("/") and os.path.isdir(run):
        places.append(os.path.realpath(run))  # the caller's own setting: a link is fine
    home = os.environ.get("HOME", "")
    temp = temp_place()
    for base, names in ((home, home_place()), (os.path.dirname(temp), (os.path.basename(temp),))):
        if base.startswith("/"):
            place = real_below(os.path.realpath(base), names)
            if place is not None:
                places.append(place)
    return list(dict.fromkeys(places))


def met_count() -> int:
    """How many places this process met in (only grows): part of what `meeting_places` depends on."""
    return len(_MET)


def place_paths() -> list[str]:
    """The paths `meeting_places` looks at, as named now (links not followed): what a change of
    which changes its answer (`sandbox._placewatch`), with this process's met places."""
    home = os.environ.get("HOME", "")
    run = os.environ.get("XDG_RUNTIME_DIR", "")
    paths = [*sorted(_MET), temp_place()]
    if run.startswith("/"):
        paths.append(run)
    if home.startswith("/"):
        paths.append(os.path.join(home, *home_place()))
    return paths


def real_below(base: str, names: tuple[str, ...]) -> str | None:
    """``base/names...`` when each name is a directory there, not a link (one a command or another
    user planted must not make bwrap hide where it points: a workspace), the last of this euid."""
    path = base
    info = None
    for name in ("", *names):
        path = os.path.join(path, name) if name else path
        try:
            info = os.lstat(path)
        except OSError:
            return None
        if not stat.S_ISDIR(info.st_mode):
            return None
    return path if info is not None and info.st_uid == os.geteuid() else None
