"""Other shellrt processes on an overlapping workspace, seen by a hook's pause.

Why: a hook's pause (`_host_pause`) stops the sessions of its own process; a second shellrt (a CLI
run, an MCP server) on the same repository kept running its sandboxed commands, which rewrote the
tree the hook read (round 39's Left; red team round 40 hooks3). Another process cannot be paused
from here, so, as for a busy session of another thread, a hook is refused while one runs anything
on an overlapping workspace, and its starts wait while a hook of ours holds the pause.

Where: one registry directory per effective uid, ``shellrt-peers-<euid>`` beside the live roots'
registry (`sandbox._liveroots`: ``/run`` for root, ``/run/user/<uid>`` or ``/tmp`` else), mode 0700,
owned by that uid (anything else there refuses every hook: fail closed). No sandbox sees it: bwrap
gives commands a /tmp and /run of their own, docker its container's; no writable root may be, hold
or lie inside it (`sandbox._systemroots`; it was missing there until round 40 review15), and one
holding it anyway refuses that session's hooks.
Local commands reach it (local is no boundary).

Each entry is a file ``<kind>-<process>-<pid>-<n>`` (``b``: a session, in the registry; ``h``: a
hook holding its pause, in its ``h`` directory, so a start lists hooks only) naming its writable roots, made under a dot name and locked (``flock``) at once (a dot file
unlocked past `HALF_MADE_S` is removed by a look), then renamed in. A hook's entry is locked while
it lives and removed at its end. A session's (`Presence`) is made at its first start and kept: it is
locked while the session runs anything and unlocked when it is idle, so a start costs a lock and a
listing, not a file made, renamed and removed (~50 us of a ~600 us ``true``: issue 22). A lock ends
with its process however it dies: a look removes a hook's entry it finds unlocked, and a session's
whose process is gone. A start locks its entry, then looks for hooks; a hook announces itself, then
looks for locked sessions: either the hook sees the start (refused) or the start sees the hook (it
unlocks and waits).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import itertools
import os
import secrets
import stat
import time
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from sandbox._liveroots import peers_dir, peers_places

__all__ = [
    "Entry",
    "PeersError",
    "Presence",
    "Reach",
    "RegistryUntrusted",
    "announce",
    "hook_among_peers",
    "others_live",
    "registry",
]

#: This process's name in entries; a forked child draws its own (`_fork_reset`).
_SELF = secrets.token_hex(6)
#: This process's pid, kept (``os.getpid`` is a system call, asked several times a start).
_PID = os.getpid()
_COUNT = itertools.count(1)
#: The most entries read in one look (a flood is refused, not read for ever).
MAX_ENTRIES = 4096


class PeersError(Exception):
    """Raised when the registry cannot be made or trusted (a squatted or open directory, no room):
    a hook is then refused, since another process's commands could not be seen."""


class RegistryUntrusted(PeersError):
    """Raised when the registry itself cannot be used by any process of the uid (squatted, open to
    others, flooded past `MAX_ENTRIES`): every process's hook is refused on it too, so a start goes
    on unannounced. Any other `PeersError` is this process's own (its ``EMFILE``, a full ``/run``):
    a hook of another process still runs, so the start is refused (red team round 41 review19)."""


def _failed(what: str, exc: OSError) -> PeersError:
    """A read-only or closed place fails every process of the uid alike (`RegistryUntrusted`: every
    hook is refused there too); no room or no descriptor is this process's own and may pass
    (`PeersError`: its start is refused; red team round 41 review19)."""
    shared = exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM)
    return (RegistryUntrusted if shared else PeersError)(f"{what} ({exc.strerror or exc})")


def _ours_alone(found: os.stat_result) -> bool:
    """Whether ``found`` (an ``lstat``) is a directory of this uid that no one else may open."""
    return stat.S_ISDIR(found.st_mode) and found.st_uid == os.geteuid() and not found.st_mode & 0o077


def registry() -> str:
    """The registry directory, made if missing; raises `PeersError` when it is not ours alone."""
    path = peers_dir()
    with contextlib.suppress(FileExistsError):
        try:
            os.mkdir(path, 0o700)
        except OSError as exc:
            if isinstance(exc, FileExistsError):
                raise
            raise _failed(f"cannot make {path}", exc) from exc
    try:
        found = os.lstat(path)
    except OSError as exc:
        raise PeersError(f"cannot read {path} ({exc.strerror or exc})") from exc
    if not _ours_alone(found):
        who = "remove it" if found.st_uid == os.geteuid() else f"uid {found.st_uid}'s: only that user or root can remove it"
        raise RegistryUntrusted(
            f"{path} is not a directory that only uid {os.geteuid()} can open ({who}; shellrt makes it again)"
        )
    return path


@dataclass(frozen=True)
class Reach:
    """Here, not in `_host_pause`: a start that meets another process's entry compares roots, and
    importing the pause machinery then made what `shellrt run` imports depend on what else ran on
    the host (test_cli_imports: 220 or 222 modules).

    Where a session's commands may write: a hook's programs read its own session's tree, and a
    session whose writable roots lie above, below or on it (another spelling, a bind mount) can
    re-plant there under the hook, so it is paused too (round 38 review3: keyed by the workspace's
    exact real path, a session on its parent or with it as an extra root ran on)."""

    paths: tuple[str, ...]
    #: ``(st_dev, st_ino)`` of each root, and of each root and its ancestors (a bind mount spells
    #: the same directory with another path, not another inode).
    ids: frozenset[tuple[int, int]] = frozenset()
    chain: frozenset[tuple[int, int]] = frozenset()

    @classmethod
    def of(cls, roots: Iterable[str | os.PathLike[str]]) -> Reach:
        """The reach of ``roots`` (host paths) as they are now (a few ``stat`` a root, once a session)."""
        paths = tuple(os.path.realpath(root) for root in roots)
        ids: set[tuple[int, int]] = set()
        chain: set[tuple[int, int]] = set()
        for path in paths:
            here = path
            while True:
                with contextlib.suppress(OSError):  # gone: its path still compares
                    found = os.stat(here)
                    chain.add((found.st_dev, found.st_ino))
                    if here == path:
                        ids.add((found.st_dev, found.st_ino))
                parent = os.path.dirname(here)
                if parent == here:
                    break
                here = parent
        return cls(paths, frozenset(ids), frozenset(chain))

    def overlaps(self, other: Reach) -> bool:
        """Whether a root of one is a root of the other, or lies inside one of its roots."""
        if self.ids & other.chain or other.ids & self.chain:
            return True
        return any(_nested(mine, theirs) for mine in self.paths for theirs in other.paths)


def _nested(one: str, other: str) -> bool:
    """Whether one of two real paths is the other or lies below it (a stand-in's name: equal only)."""
    short, long = sorted((one, other), key=len)
    return long == short or (short.startswith("/") and long.startswith(short.rstrip("/") + "/"))


class Entry:
    """One live entry of this process (its file, locked while it lives)."""

    def __init__(self, path: str, fd: int) -> None:
        self.path = path
        self._fd = fd
        self._pid = _PID
        if fd >= 0:
            _LIVE.add(self)

    def __del__(self) -> None:  # a session dropped unclosed: its entry ends with it
        self.withdraw()

    @property
    def live(self) -> bool:
        """Whether it still stands for this process (a forked child's copies do not)."""
        return self._fd >= 0 and self._pid == _PID

    def hold(self) -> bool | None:
        """Lock it again (a session's start): True; False when a look holds it this moment (wait);
        None when it was removed meanwhile (a look took it for a dead process's: make another).
        Locked before its link count is read: a look removes an entry only while it holds it."""
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        except OSError:
            return None
        if self.linked():
            return True
        self.release()
        return None

    def linked(self) -> bool:
        """Whether its file is still in a registry (a look, or a registry's removal, unlinks it)."""
        try:
            return self._fd >= 0 and os.fstat(self._fd).st_nlink > 0
        except OSError:
            return False

    def release(self) -> None:
        """Unlock it (its session is idle): a look passes it over."""
        with contextlib.suppress(OSError):
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def withdraw(self) -> None:
        """Remove it (idempotent): unlinked before its lock ends, so no one reads it as stale; a
        forked child's copy only closes its descriptor (the entry is its parent's)."""
        if self._fd < 0:
            return
        if self._pid == _PID:
            with contextlib.suppress(OSError):
                os.unlink(self.path)
        with contextlib.suppress(OSError):
            os.close(self._fd)
        self._fd = -1
        _LIVE.discard(self)


#: Where hooks' entries live, below the registry: a start lists only them (listing every session's
#: kept entry cost each start ~0.3 us an entry, 0.6 ms beside 2,000 sessions of the uid; round 41).
_HOOKS_DIR = "h"


def _kind_dir(base: str, kind: str) -> str:
    """The directory of ``kind``'s entries in the registry ``base``."""
    return os.path.join(base, _HOOKS_DIR) if kind == "h" else base


#: This process's live entries (a forked child lets go of its copies: `_fork_reset`).
_LIVE: weakref.WeakSet[Entry] = weakref.WeakSet()


def _fork_reset() -> None:
    """A forked child is another process: it gets its own name (with its parent's, each skipped the
    other's entries as its own, and a hook ran under the other's task), and closes its copies of
    the parent's entries (their locks outlived the parent; dropping one unlinked the parent's live
    entry; red team round 40 review15). Closing a copy leaves the parent's lock held."""
    global _SELF, _PID
    _SELF, _PID = secrets.token_hex(6), os.getpid()
    for entry in list(_LIVE):
        entry.withdraw()  # another pid now: closes only
    _LIVE.clear()


os.register_at_fork(after_in_child=_fork_reset)


def announce(kind: str, roots: tuple[str, ...]) -> Entry:
    """A live entry of ``kind`` naming ``roots`` (real paths); raises `PeersError`."""
    for _ in range(3):  # a look took its half-made file for a dead one's (stopped past HALF_MADE_S)
        entry = _announce_once(kind, roots)
        if entry is not None:
            return entry
    raise PeersError("its entry was removed while it was being made, three times")


def _announce_once(kind: str, roots: tuple[str, ...]) -> Entry | None:
    """Made under a dot name and locked at once (an unlocked dot file past `HALF_MADE_S` is a dead
    process's: a look removes it), then renamed in. None: removed meanwhile."""
    base = _kind_dir(registry(), kind)
    if kind == "h":
        _make_hooks_dir(base)
    name = f"{kind}-{_SELF}-{_PID}-{next(_COUNT)}"
    temp = os.path.join(base, "." + name)
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise _failed(f"cannot write in {base}", exc) from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # blocking: a look may hold it shared for a moment
        os.write(fd, "\0".join(roots).encode("utf-8", "surrogateescape"))
        os.rename(temp, os.path.join(base, name))
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        os.close(fd)
        if isinstance(exc, FileNotFoundError):
            return None
        raise PeersError(f"cannot write in {base} ({exc.strerror or exc})") from exc
    return Entry(os.path.join(base, name), fd)


def _make_hooks_dir(path: str) -> None:
    """The hooks' directory, made if missing (its registry is this uid's alone: `registry`)."""
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o700)
        found = os.lstat(path)
    except OSError as exc:
        raise PeersError(f"cannot make {path} ({exc.strerror or exc})") from exc
    if not stat.S_ISDIR(found.st_mode):
        raise PeersError(f"{path} is not a directory (remove it; shellrt makes it again)")


#: A dot file (an entry being made) unlocked this long is a process's that died making it (red team
#: round 40 review15: it stayed for ever and counted toward `MAX_ENTRIES`).
HALF_MADE_S = 10.0


def _remove_half_made(path: str) -> None:
    """Remove ``path`` (a dot file) if no one holds its lock and it is older than `HALF_MADE_S`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        if time.time() - os.fstat(fd).st_mtime > HALF_MADE_S:
            os.unlink(path)
    except OSError:  # locked (being made), or gone
        pass
    finally:
        os.close(fd)


def others_live(kind: str, overlaps: Callable[[tuple[str, ...]], bool], base: str | None = None) -> bool:
    """Whether a live entry of ``kind`` of another process names roots that ``overlaps`` says
    overlap, in this process's registry or any other place one of the uid may have picked
    (`peers_places`: a process started before a login announced under /tmp, one after under
    /run/user; red team round 41 review19); stale ones are removed. Raises `PeersError` when it
    cannot tell. ``base``: the registry as this process found it already (a start's look: `Presence`)."""
    base = base or registry()
    return any(_live_in(_kind_dir(place, kind), kind, overlaps) for place in (base, *_elsewhere(base)))


def _elsewhere(base: str) -> list[str]:
    """The uid's other registry places that exist as its own (0700, its uid). One that is not: no
    process of the uid can have announced there (`registry` refuses it), so it holds nothing."""
    places = []
    for place in peers_places():
        if place == base:
            continue
        try:
            found = os.lstat(place)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise PeersError(f"cannot read {place} ({exc.strerror or exc})") from exc
        if _ours_alone(found):
            places.append(place)
    return places


def _live_in(base: str, kind: str, overlaps: Callable[[tuple[str, ...]], bool]) -> bool:
    """`others_live` in one registry directory."""
    try:
        names = os.listdir(base)
    except FileNotFoundError as exc:
        if kind == "h" and os.path.isdir(os.path.dirname(base)):
            return False  # no hook was ever announced in this registry
        raise PeersError(f"cannot list {base} ({exc.strerror or exc})") from exc
    except OSError as exc:
        raise PeersError(f"cannot list {base} ({exc.strerror or exc})") from exc
    if len(names) > MAX_ENTRIES:
        raise RegistryUntrusted(f"{base} holds {len(names)} entries, more than {MAX_ENTRIES}")
    for name in names:
        if name.startswith("."):
            _remove_half_made(os.path.join(base, name))
            continue
        if not name.startswith(kind + "-") or name.startswith(f"{kind}-{_SELF}-"):
            continue
        path = os.path.join(base, name)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        except FileNotFoundError:
            continue  # withdrawn meanwhile
        except OSError as exc:
            raise PeersError(f"cannot read {path} ({exc.strerror or exc})") from exc
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:  # locked: its process lives
                roots = tuple(r for r in os.read(fd, 1 << 20).decode("utf-8", "surrogateescape").split("\0") if r)
                if not roots or overlaps(roots):
                    return True
                continue
            if kind == "b" and _owner_lives(name):
                continue  # unlocked: an idle session (`Presence`)
            with contextlib.suppress(OSError):  # unlocked: its process died (or withdrew it)
                os.unlink(path)
        finally:
            os.close(fd)
    return False


def _owner_lives(name: str) -> bool:
    """Whether the process an entry's name gives (``<kind>-<process>-<pid>-<n>``) still runs (a
    reused pid keeps a dead one's idle entry, unlocked: no hook counts it)."""
    try:
        os.kill(int(name.split("-")[2]), 0)
    except (IndexError, ValueError, ProcessLookupError):
        return False
    except OSError:
        return True
    return True


def _real(paths: tuple[str, ...]) -> bool:
    return bool(paths) and all(os.path.isabs(p) for p in paths)


def _overlapping(reach: Callable[[], Reach]) -> Callable[[tuple[str, ...]], bool]:
    """Compares with another entry's roots (`Reach`)."""

    def overlaps(roots: tuple[str, ...]) -> bool:
        return reach().overlaps(Reach.of(roots))

    return overlaps


class Presence:
    """A session among other processes' hooks: its entry, made at its first start, held while it
    runs anything (`enter`), let go when idle (`leave`), removed at its end (`close`)."""

    def __init__(self) -> None:
        self._entry: Entry | None = None
        #: The roots (as the policy gives them) its entry names the real paths of.
        self._given: tuple[str | os.PathLike[str], ...] | None = None
        #: The process that holds it (a forked child's copy holds nothing: it enters anew).
        self._held_by = 0
        #: The registry its entry was made in, checked then ("": check it again at the next look).
        self._registry = ""

    @property
    def held(self) -> bool:
        return self._held_by == _PID

    def enter(self, given: tuple[str | os.PathLike[str], ...], reach: Callable[[], Reach]) -> bool:
        """Hold it for a start (``given``: the session's writable roots); False when a hook of
        another process on an overlapping workspace holds its pause, or a look holds the entry this
        moment (wait, try again). A registry no process can use (`RegistryUntrusted`): it goes on
        with nothing held (every hook is refused there too). Raises `PeersError` when this process
        cannot announce itself or look (its ``EMFILE``, a full ``/run``): it ran unseen, or waited
        for ever (red team round 41 review19); an entry removed under it is made again once."""
        for _ in range(2):
            held = self._enter_once(given, reach)
            if held is not None:
                return held
        raise PeersError("its entry was removed under it while it looked, twice")

    def _enter_once(self, given: tuple[str | os.PathLike[str], ...], reach: Callable[[], Reach]) -> bool | None:
        """`enter`'s one try; None: its entry (or the registry) was removed before its look ended."""
        entry = self._entry
        if entry is not None and given == self._given and entry.live:
            held = entry.hold()
            if held is False:
                return False
            if held is None:
                entry.withdraw()
                entry = None
        elif entry is not None:
            entry.withdraw()  # other roots (a recycled backend), or a forked child's copy
            entry = None
        if entry is None:
            paths = tuple(os.path.realpath(r) for r in given)
            self._given, self._entry = given, None
            if not _real(paths):
                self._held_by = _PID
                return True
            try:
                entry = self._entry = announce("b", paths)  # made locked
            except RegistryUntrusted:
                self._held_by = _PID
                return True
            self._registry = os.path.dirname(entry.path)  # checked just now: looked in again
        try:
            hooked = others_live("h", _overlapping(reach), self._registry or None)
        except RegistryUntrusted:
            hooked = False  # every hook is refused there
        except PeersError:
            self._registry = ""  # checked again at the next look
            entry.release()
            if not entry.linked():
                return None  # the registry went with it: made again, looked again
            raise
        if not hooked and entry.linked():  # still listed once its look ended: a later hook sees it
            self._held_by = _PID
            return True
        entry.release()
        return False if hooked else None

    def relist(self) -> bool:
        """While it is held: an entry removed under it (its registry removed, a temp cleaner) is made
        again, locked, so hooks of other processes see the session before its next start does
        (round 41's Left; red team round 42). True when made again; a failure waits for the next try."""
        entry = self._entry
        if not self.held or entry is None or self._given is None or entry.linked():
            return False
        try:
            fresh = announce("b", tuple(os.path.realpath(r) for r in self._given))  # made locked
        except PeersError:
            return False
        entry.withdraw()
        self._entry, self._registry = fresh, os.path.dirname(fresh.path)
        return True

    def leave(self) -> None:
        """Nothing of the session runs any more: let its entry go (kept, unlocked)."""
        if self.held:
            self._held_by = 0
            if self._entry is not None:
                self._entry.release()

    def close(self) -> None:
        """The session ended: its entry goes."""
        self._held_by = 0
        if self._entry is not None:
            self._entry.withdraw()
            self._entry = None


def hook_among_peers(reach: Reach) -> tuple[Entry | None, str | None]:
    """A hook about to run on the host: its entry (withdrawn at the hook's end), and why it cannot
    run (None: no other shellrt process runs anything on an overlapping workspace)."""
    if not _real(reach.paths):
        return None, None
    try:
        base = os.path.realpath(registry())
        if any(os.path.commonpath((base, root)) == root for root in reach.paths):
            return None, f"the registry of shellrt processes ({base}) lies inside this session's writable roots"
        entry = announce("h", reach.paths)
    except PeersError as exc:
        return None, f"other shellrt processes on this workspace could not be looked for: {exc}"
    try:
        if not others_live("b", _overlapping(lambda: reach)):
            return entry, None
        why = (
            "another shellrt process on an overlapping workspace runs commands or background tasks, "
            "which a hook of this process cannot pause"
        )
    except PeersError as exc:
        why = f"other shellrt processes on this workspace could not be looked for: {exc}"
    entry.withdraw()
    return None, why
