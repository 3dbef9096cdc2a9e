"""Every live shellrt process's writable roots (of this uid), not only this process's.

Why: `_hostpath` kept host programs (``PATH`` entries, ``CC`` and the compiler's tree, hooks'
programs) out of the roots this process's sessions write, but another shellrt process's workspace
(an MCP server and a CLI of the same user on one machine, two agents) was not this process's to
know: a ``CC`` or ``PATH`` entry there passed, and the host ran a file that session's commands write
(red team rounds 15, 30 and 31, mend). Each registration is now also published: one file per
registration in a per-uid directory only this uid (root: only root) can write, holding the real
root paths, written under a temporary name and renamed into place. Whether its process lives is
told by one file per process (``p-…``), locked (``flock`` exclusive) for the process's life before
any registration of it is published; a registration (``s-<p-name>-<n>``) names it. A reader takes a
registration as live while its process file is locked; one whose process file it can lock (or that
is gone) was left by a dead process and is removed, with the process file. One descriptor a
process, however many backends it made (CI80: one locked file a registration held 784 descriptors
in a test worker until the collector freed the backends). The directory is fixed (not from ``TMPDIR`` or
``XDG_RUNTIME_DIR``, which differ between processes): ``/run/shellrt-roots`` for root,
``/run/user/UID/shellrt-roots`` (systemd's private runtime dir) else ``/tmp/shellrt-roots-UID``
for other users. A directory another user made or others can write is not used (logged once):
then only this process's own roots are known, as before.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import secrets
import stat
import time
from collections.abc import Iterable

__all__ = ["live_roots", "peers_dir", "peers_places", "publish", "registry_dir", "withdraw"]

logger = logging.getLogger(__name__)

#: Bytes of one registration file read at most (a session has a handful of roots).
_MAX_FILE = 1 << 20
_PREFIX = "s-"
_PROCESS = "p-"
#: token -> (file name, publishing pid) of this process's published registrations.
_mine: dict[int, tuple[str, int]] = {}
#: This process's locked process file: (fd, name, pid); a forked child makes its own.
_alive: list[tuple[int, str, int]] = []
_warned: list[str] = []
#: name -> roots of the other processes' files read so far (a file never changes after its rename)
#: and when each was last seen locked; a file is read once, and its lock is looked at again after
#: `_RECHECK_S` (a dead process's roots stay refused until then: the safe side).
_seen: dict[str, tuple[list[str], float]] = {}
_RECHECK_S = 2.0


def registry_dir() -> str:
    """Where this uid's registrations live (fixed for every process of the uid)."""
    uid = os.geteuid()
    if uid == 0 and _root_only(os.lstat("/run") if os.path.isdir("/run") else None):
        return "/run/shellrt-roots"
    run_user = f"/run/user/{uid}"
    try:
        st = os.lstat(run_user)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == uid and not st.st_mode & 0o077:
            return f"{run_user}/shellrt-roots"
    except OSError:
        pass
    return f"/tmp/shellrt-roots-{uid}"


def peers_dir() -> str:
    """Where this uid's shellrt processes announce what they run to each other's hooks
    (`shellrt.supervisor._host_pause_peers`), beside `registry_dir`: named here so that no sandbox's
    root may be or hold it either (`_systemroots`)."""
    return os.path.join(os.path.dirname(registry_dir()), f"shellrt-peers-{os.geteuid()}")


def peers_places() -> tuple[str, ...]:
    """Every place `peers_dir` can name for this uid: it picks by what exists when asked (a non-root
    user's ``/run/user/<uid>`` comes with a login and goes with the last one's end), so two
    processes of one uid may have picked two; a hook's or a start's look reads each (red team round
    41 review19)."""
    uid = os.geteuid()
    name = f"shellrt-peers-{uid}"
    return (*((f"/run/{name}",) if uid == 0 else ()), f"/run/user/{uid}/{name}", f"/tmp/{name}")


def _root_only(st: os.stat_result | None) -> bool:
    return st is not None and stat.S_ISDIR(st.st_mode) and st.st_uid == 0 and not st.st_mode & 0o022


def _open_dir(create: bool) -> int | None:
    """An fd of the registry directory, made 0700 when ``create``; None when it is missing or not
    this uid's alone (logged once: a squatted directory must not feed or hide roots)."""
    path = registry_dir()
    if create:
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError as exc:
            _warn(f"cannot make {path} ({exc.strerror}): other shellrt processes' roots are not known")
            return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            _warn(f"cannot open {path} ({exc.strerror}): other shellrt processes' roots are not known")
        return None
    st = os.fstat(fd)
    if st.st_uid != os.geteuid() or st.st_mode & 0o077:
        os.close(fd)
        _warn(
            f"{path} is not this user's private directory (owner uid {st.st_uid}, mode "
            f"{stat.S_IMODE(st.st_mode):o}): other shellrt processes' roots are not known; remove it"
        )
        return None
    return fd


def _warn(message: str) -> None:
    if message not in _warned:
        _warned.append(message)
        logger.warning("%s", message)


def publish(token: int, roots: Iterable[str]) -> None:
    """Make ``roots`` (real paths) known to every shellrt process of this uid until `withdraw`.
    A root that is or holds a system place is not published: bwrap and docker refuse it
    (`_systemroots`), and the local backend's commands, unconfined, reach every place anyway; shown,
    it would refuse every host program and temp place to every other process."""
    from sandbox._systemroots import system_place_in  # it imports this module

    roots = [r for r in roots if system_place_in(r) is None]
    if not roots:
        return
    dfd = _open_dir(create=True)
    if dfd is None:
        return
    try:
        process = _process_file(dfd)
        tmp = f"t-{os.getpid()}-{secrets.token_hex(8)}"
        fd = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dfd
        )
        try:
            os.write(fd, "\0".join(roots).encode("utf-8", "surrogateescape"))
            name = f"{_PREFIX}{process}-{secrets.token_hex(6)}"
            os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            os.unlink(tmp, dir_fd=dfd)
            raise
        finally:
            os.close(fd)
        _mine[token] = (name, os.getpid())
    except OSError as exc:
        _warn(
            f"cannot publish writable roots in {registry_dir()} ({exc.strerror}): other processes will not know them"
        )
    finally:
        os.close(dfd)


def _process_file(dfd: int) -> str:
    """This process's locked process file's name (``p-PID-HEX``), made and locked on first use."""
    if _alive and _alive[0][2] == os.getpid():
        return _alive[0][1]
    _alive.clear()  # a forked child: the parent's lock is not its own
    tmp = f"t-{os.getpid()}-{secrets.token_hex(8)}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dfd)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        name = f"{_PROCESS}{os.getpid()}-{secrets.token_hex(8)}"
        os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)  # locked before any reader can see it
    except BaseException:
        os.close(fd)
        os.unlink(tmp, dir_fd=dfd)
        raise
    _alive.append((fd, name, os.getpid()))
    return name


def withdraw(token: int) -> None:
    """Forget ``token``'s published roots; never waits for a lock (a `weakref.finalize` runs it).
    A forked child only forgets it: the file stays its parent's."""
    found = _mine.pop(token, None)
    if found is None:
        return
    name, pid = found
    if pid != os.getpid():
        return
    try:
        dfd = _open_dir(create=False)
        if dfd is not None:
            try:
                os.unlink(name, dir_fd=dfd)
            finally:
                os.close(dfd)
    except OSError:
        pass  # gone already


def live_roots() -> list[str]:
    """The roots other live shellrt processes of this uid published (this process's own are
    `_hostpath`'s); stale files (their process gone) are removed. Each call lists the directory, so
    a registration made before the call is always seen."""
    dfd = _open_dir(create=False)
    if dfd is None:
        return []
    mine = {name for name, _pid in list(_mine.values())}
    now = time.monotonic()
    found: list[str] = []
    try:
        listed = os.listdir(dfd)
        names = [n for n in listed if n.startswith(_PREFIX) and n not in mine]
        _sweep_processes(dfd, [n for n in listed if n.startswith(_PROCESS)], now)
        for name in list(_seen):
            if name not in names:
                _seen.pop(name, None)
        for name in names:
            cached = _seen.get(name)
            if cached is None or now - cached[1] > _RECHECK_S:
                roots = _read_live(dfd, name)
                if roots is None:
                    _seen.pop(name, None)
                    continue
                cached = _seen[name] = (roots, now)
            found += cached[0]
    finally:
        os.close(dfd)
    return found


#: Process files looked at (name -> when), so a live one's lock is tried once per `_RECHECK_S`.
_processes_seen: dict[str, float] = {}


def _sweep_processes(dfd: int, processes: list[str], now: float) -> None:
    """Remove the process files of dead processes that left no registration (all were withdrawn)."""
    own = _alive[0][1] if _alive else ""
    for name in list(_processes_seen):
        if name not in processes:
            _processes_seen.pop(name, None)
    for name in processes:
        if name == own or now - _processes_seen.get(name, -_RECHECK_S - 1.0) <= _RECHECK_S:
            continue
        _processes_seen[name] = now
        if not _locked(dfd, name):
            try:
                os.unlink(name, dir_fd=dfd)
            except OSError:
                pass


def _read_live(dfd: int, name: str) -> list[str] | None:
    """The roots in ``name`` if its process lives (None: it does not); a stale file is removed,
    with its process file."""
    process = name[len(_PREFIX) :].rsplit("-", 1)[0]
    if not process.startswith(_PROCESS) or not _locked(dfd, process):
        for stale in (name, process):
            try:
                os.unlink(stale, dir_fd=dfd)
            except OSError:
                pass
        return None
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
    except OSError:
        return None  # withdrawn meanwhile
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            return None
        data = os.read(fd, _MAX_FILE).decode("utf-8", "surrogateescape")
        return [r for r in data.split("\0") if r.startswith("/")]
    finally:
        os.close(fd)


def _locked(dfd: int, process: str) -> bool:
    """Whether process file ``process`` is held locked (its process lives)."""
    try:
        fd = os.open(process, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        return False
    finally:
        os.close(fd)
