"""Where a docker session's I/O directory goes: a place no sandboxed command can write.

Why: the I/O directory holds what the container runs as its executor, with the executor's
capabilities: ``priv`` (at the start and at every command), ``executor.sh``, and each command's
request file (sourced by the executor). It was made on /dev/shm when usable, else in the temp dir.
A temp dir inside a bwrap session's writable root (``TMPDIR`` in a workspace, a session over
/tmp's subtree) let that session's command rename the directory away and put its own ``priv`` at
its name before the container's start: measured for a root caller (commands write as root through
idmapped roots) and, as the same uid, for a non-root caller (red team round 30, mend). A check of
the bytes before the start leaves the window between the check and the daemon's exec, and a command
could still replace a request file later, so the place itself must be out of every command's reach:
the first of /dev/shm, ``$XDG_RUNTIME_DIR`` and /tmp that is usable, lies
in no registered writable root (`sandbox._hostprog.writable_place`), and is a system directory
(root's and sticky; ``$XDG_RUNTIME_DIR``: the caller's own 0700 one) below directories only root
writes. A ``TMPDIR`` in a workspace is such a directory of the caller's, and is skipped. The temp
dir and /var/tmp are no longer candidates, nor an ``$XDG_RUNTIME_DIR`` outside /run: only places
every bwrap sandbox of every process replaces (red team round 40, tenants2).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from sandbox._hostprog import writable_place
from sandbox.errors import BackendUnavailableError

__all__ = ["io_base", "io_bases"]

#: /dev/shm: every command creates, opens and removes a request file and its FIFOs there; on a
#: disk file system (ext4 here) that metadata work alone cost ~1.5 ms per command, on tmpfs ~0.1 ms.
_TMPFS = Path("/dev/shm")
#: Free space /dev/shm must have to be used (each live session keeps ~1 MiB there).
_TMPFS_MIN_FREE = 64 * 1024 * 1024


#: Where every bwrap sandbox of every process shows its own content, not the host's (its /dev, /run
#: emptied, its /tmp): an I/O directory elsewhere (``TMPDIR``, /var/tmp) was in the read-only view
#: of another shellrt process's bwrap commands of the same uid (red team round 40, tenants2).
_HIDDEN_EVERYWHERE = ("/dev/shm", "/run", "/var/run", "/tmp")


def _hidden_everywhere(path: Path) -> bool:
    real = os.path.realpath(path)
    return any(real == top or real.startswith(top + "/") for top in _HIDDEN_EVERYWHERE)


def _candidates() -> list[Path]:
    """Where an I/O directory may go, most preferred first: only where no process's sandbox sees it."""
    found = [_TMPFS]
    if xdg := os.environ.get("XDG_RUNTIME_DIR"):
        found.append(Path(xdg))
    found.append(Path("/tmp"))
    return list(dict.fromkeys(p for p in found if p.is_absolute() and _hidden_everywhere(p)))


def _why_not(base: Path, *, own: bool) -> str | None:
    """Why ``base`` is no place for an I/O directory (None: it is one). ``own``: the caller's own
    0700 directory is accepted (``$XDG_RUNTIME_DIR``); otherwise a root-owned sticky one. The
    daemon is local (checked at start): it sees the same directories."""
    try:
        return _judge(base, own=own)
    except OSError as exc:
        return f"{base}: {exc.strerror or exc}"


def _judge(base: Path, *, own: bool) -> str | None:
    """`_why_not`'s checks, in order (OSError: a place that cannot be looked at is no place)."""
    st = os.lstat(base)
    if (place := writable_place(str(base))) is not None:
        return f"{base} lies in a sandbox's writable root ({place})"
    me = os.geteuid()
    system = st.st_uid == 0 and st.st_mode & stat.S_ISVTX
    private = own and st.st_uid == me and not st.st_mode & 0o077
    if not stat.S_ISDIR(st.st_mode) or not (system or private):
        return f"{base} is not a system temp directory (root's, sticky) nor the caller's private runtime dir"
    if not os.access(base, os.W_OK | os.X_OK):
        return f"{base} is not writable"
    for parent in base.parents:
        pst = os.lstat(parent)
        if pst.st_uid != 0 or (pst.st_mode & 0o022 and not pst.st_mode & stat.S_ISVTX):
            return f"{parent} (above {base}) is not root's alone: it may be a sandbox's workspace"
    if base == _TMPFS:
        vfs = os.statvfs(base)
        if vfs.f_bavail * vfs.f_frsize < _TMPFS_MIN_FREE:
            return f"{base} has less than {_TMPFS_MIN_FREE >> 20} MiB free"
    return None


def io_bases() -> list[Path]:
    """Every usable place, most preferred first (`io_base`'s choice, and what a sweep looks through)."""
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    return [b for b in _candidates() if _why_not(b, own=str(b) == xdg) is None]


def io_base() -> Path:
    """The directory a session's I/O directory is made in; BackendUnavailableError (saying what to
    do) when no candidate is out of every sandboxed command's reach."""
    usable = io_bases()
    if usable:
        return usable[0]
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    why = "; ".join(str(_why_not(b, own=str(b) == xdg)) for b in _candidates())
    raise BackendUnavailableError(
        "the docker backend's I/O directory (what its container runs with the executor's capabilities) "
        f"needs a place no sandboxed command can write, and none qualifies: {why}. Free 64 MiB on "
        "/dev/shm, or set XDG_RUNTIME_DIR to a 0700 directory of yours below /run, or make /tmp usable"
    )
