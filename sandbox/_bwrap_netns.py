"""A bwrap session's one network namespace, kept across its zygotes (red team, round 30).

Why: a session's zygote is replaced whenever a host socket appears where its commands could see
it (any host process makes one), a read-denied path appears, or it died. Each zygote was a new
bwrap with ``--unshare-net``, so the commands after a replacement ran in a new network namespace:
a background server on 127.0.0.1 or an abstract name, started before, was gone for them.

So the first zygote (``--unshare-net``: bwrap makes the namespace and its loopback) sends the host
an fd of its namespace before ``ready`` (and, network ``proxied``, its bridge's listener), which
the host keeps for the session (`SessionNet`); every later zygote's bwrap starts in that namespace
through ``nsenter --net=/proc/<this pid>/fd/<fd>`` (a path: no namespace fd is ever inherited,
bwrap would hand it on to the command) without ``--unshare-net``, and serves the same listener.
Each command keeps its own pid, mount and IPC namespaces and Landlock domain; two sessions never
share a namespace (each first zygote makes its own).

Root caller: the zygote's bwrap runs as root in the host's user namespace, which owns the
namespace: ``--net`` joins the ``nsenter`` that already enters the holder's mount namespace.
Non-root caller: the namespace belongs to the first bwrap's user namespace, a child of the budget
namespace (`sandbox._ucounts`); joining it needs CAP_SYS_ADMIN over both, which the caller has
once it entered the budget namespace it owns: ``--net`` joins the ``nsenter --user=<budget>``
every bwrap starts under. bwrap then makes its user namespace there, as the first one did (same
uid maps, same depth). Where the layout is other (no budget namespace), or nsenter is refused,
the session keeps the old behaviour (a new namespace per zygote) and says so once (`warn_once`).
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading

__all__ = ["SessionNet", "joined", "warn_once"]

_log = logging.getLogger(__name__)
_NS_GET_USERNS = 0xB701  # ioctl(2) on an nsfs fd: the user namespace owning it
_NS_GET_PARENT = 0xB702  # and on a user namespace's fd: its parent
_lock = threading.Lock()
_warned = False


class SessionNet:
    """The session's network namespace (an fd of it, close-on-exec) and its bridge's listener."""

    def __init__(self, netns: int, listener: int | None) -> None:
        self._netns = netns
        self.listener = listener

    @classmethod
    def adopt(cls, held: list[int], *, bridge: bool, owner_parent: str | None) -> SessionNet | None:
        """What a first zygote sent (`Zygote.take_held`: its namespace, then with ``bridge`` the
        listener), kept; None (all closed, said once) when later zygotes cannot join it:
        ``owner_parent`` (a non-root caller's budget namespace, by path) is not the parent of
        the user namespace that owns it, or a root caller's host user namespace does not own it."""
        if len(held) != 1 + bridge:
            _close(held)
            warn_once(f"the first zygote sent {len(held)} of {1 + bridge} network fds")
            return None
        why = _unjoinable(held[0], owner_parent)
        if why:
            _close(held)
            warn_once(why)
            return None
        return cls(held[0], held[1] if bridge else None)

    def net_arg(self) -> str:
        """``nsenter``'s option entering it (its fd by this process's /proc entry)."""
        return f"--net=/proc/{os.getpid()}/fd/{self._netns}"

    def close(self) -> None:
        _close([self._netns, *([self.listener] if self.listener is not None else [])])
        self._netns, self.listener = -1, None


def joined(prefix: list[str], net: SessionNet) -> list[str] | None:
    """``prefix`` (an ``nsenter ... --`` before bwrap, possibly after a ``prlimit ... --``) entering
    ``net`` too; None when it holds no ``nsenter``."""
    for i, word in enumerate(prefix):
        if os.path.basename(word) == "nsenter":
            end = prefix.index("--", i)
            return [*prefix[:end], net.net_arg(), *prefix[end:]]
    return None


def warn_once(why: str) -> None:
    """Tell the operator, once per process, that sessions here get a new network namespace with
    each new zygote (the behaviour before round 30)."""
    global _warned
    with _lock:
        if _warned:
            return
        _warned = True
    _log.warning(
        "bwrap: a session's replaced zygote gets a new network namespace here (%s): a background "
        "server on its loopback is not reachable from the commands after it",
        why,
    )


def _unjoinable(netns: int, owner_parent: str | None) -> str:
    """Why a later zygote's bwrap could not join ``netns`` ("" when it can)."""
    try:
        owner = fcntl.ioctl(netns, _NS_GET_USERNS)
    except OSError as exc:
        return f"cannot find the owner of its network namespace: {exc}"
    try:
        if owner_parent is None:  # root: the host's user namespace owns it
            return "" if _same(owner, "/proc/self/ns/user") else "its network namespace is not the host's user's"
        try:
            parent = fcntl.ioctl(owner, _NS_GET_PARENT)
        except OSError as exc:
            return f"cannot find the parent of its network namespace's owner: {exc}"
        try:
            return "" if _same(parent, owner_parent) else "its network namespace's owner is not the budget one's child"
        finally:
            os.close(parent)
    finally:
        os.close(owner)


def _same(fd: int, path: str) -> bool:
    st, other = os.fstat(fd), os.stat(path)
    return (st.st_dev, st.st_ino) == (other.st_dev, other.st_ino)


def _close(fds: list[int]) -> None:
    for fd in fds:
        if fd >= 0:
            os.close(fd)
