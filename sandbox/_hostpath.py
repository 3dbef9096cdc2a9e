"""The ``PATH`` shellrt's own host-side programs are found on: none a sandboxed command can write.

Why: shellrt runs programs on the host, outside the sandbox (bwrap, nsenter, nft, the C compiler
of the zygote's init, ripgrep, git queries, hook launchers). Found
through the operator's ``PATH``, a directory there that lies where the session's commands write
(an activated ``.venv/bin`` inside the project, direnv's ``PATH_add bin``, ``node_modules/.bin``)
or a relative entry (searched from a working directory commands write) lets a command plant
``git`` and have the host run it (red team, round 15). Every backend registers the roots its
commands write when it is made (`sandbox.factory.create_backend`, until it is closed or gone), and
runtime sessions register theirs before the backend starts (`register_writable`); `host_path` is ``PATH`` without relative entries and without entries
inside any registered root (compared as written and resolved), and `host_which` looks a program
up there. Since round 31 the registered roots are every live shellrt process's of this uid
(`_liveroots`), not only this process's.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterable, Mapping

from sandbox._liveroots import live_roots, publish, withdraw

__all__ = [
    "host_env",
    "host_path",
    "host_which",
    "inside",
    "others_write",
    "register_writable",
    "registered_roots",
    "unregister_writable",
]

_lock = threading.Lock()
#: token -> the real paths of the roots one session's commands write.
_roots: dict[int, tuple[str, ...]] = {}
_next = [0]


def register_writable(roots: Iterable[os.PathLike[str] | str]) -> int:
    """Remember roots commands write until `unregister_writable` with the returned token, here
    and for every shellrt process of this uid (`_liveroots`, round 31)."""
    real = tuple(dict.fromkeys(os.path.realpath(os.fspath(r)) for r in roots))
    with _lock:
        _next[0] += 1
        token = _next[0]
        _roots[token] = real
    publish(token, real)
    return token


#: Tokens whose removal found the lock taken; removed by the next holder of the lock.
_pending: list[int] = []


def unregister_writable(token: int) -> None:
    """Forget the roots of ``token``; never waits for the lock. A backend's `weakref.finalize` runs
    this, and a garbage collection can run it inside `host_path`'s locked section on the very thread
    that holds the lock: waiting there deadlocked that thread and every later caller (CI57, a Bash
    call's git query). A removal that finds the lock taken is left to the next holder (until then
    the roots stay excluded from ``PATH``: the safe side)."""
    withdraw(token)
    if not _lock.acquire(blocking=False):
        _pending.append(token)  # list.append is atomic: no lock needed
        return
    try:
        _roots.pop(token, None)
        _drop_pending()
    finally:
        _lock.release()


def _drop_pending() -> None:
    """Removals deferred by `unregister_writable` (called with the lock held)."""
    while _pending:
        _roots.pop(_pending.pop(), None)


def registered_roots() -> list[str]:
    """The real paths of every root a live session's commands write, this process's and every
    other live shellrt process's of this uid (a snapshot)."""
    with _lock:
        _drop_pending()
        own = [r for group in _roots.values() for r in group]
    return own + live_roots()


def inside(path: str, roots: Iterable[str]) -> bool:
    """Whether ``path`` (absolute, normalised) is one of ``roots`` or below one."""
    return any(path == r or path.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


def others_write(entry: str) -> bool:
    """As root: ``entry`` (resolved) or a directory above it is another user's or writable by
    group or others (a sticky directory excepted) -- another process's workspace (an MCP server
    and a CLI on one machine: this process knows only its own roots), a user's checkout.
    Round 16; missing entries are kept (nothing to run there until made, and made by whom is
    judged at the next lookup)."""
    current = os.path.realpath(entry)
    while True:
        try:
            st = os.stat(current)
        except OSError:
            st = None
        if st is not None and (st.st_uid != 0 or (st.st_mode & 0o022 and not st.st_mode & 0o1000)):
            return True
        parent = os.path.dirname(current)
        if parent == current:
            return False
        current = parent


def host_path(path: str | None = None, also: Iterable[os.PathLike[str] | str] = ()) -> str:
    """``path`` (default: this process's ``PATH``, else ``os.defpath``) without the entries a
    sandboxed command may write: relative ones, those inside a registered root or ``also``
    (roots the caller knows of, e.g. a hook runner's session roots), and, as root, those another
    user or group can write (`others_write`)."""
    value = os.environ.get("PATH", os.defpath) if path is None else path
    roots = registered_roots() + [os.path.realpath(os.fspath(r)) for r in also]
    kept: list[str] = []
    root = os.geteuid() == 0
    for entry in value.split(os.pathsep):
        if not entry.startswith("/"):
            continue  # relative or empty: searched from a working directory commands write
        if roots and (inside(os.path.normpath(entry), roots) or inside(os.path.realpath(entry), roots)):
            continue
        if root and others_write(entry):
            continue
        kept.append(entry)
    return os.pathsep.join(kept)


def host_env(env: Mapping[str, str], also: Iterable[os.PathLike[str] | str] = ()) -> dict[str, str]:
    """``env`` with ``PATH`` made `host_path`: for a host-side child that looks programs up itself
    (a hook script running ``jq``, an MCP server started as ``npx``), round 16."""
    return {**env, "PATH": host_path(env.get("PATH", os.defpath), also)}


def host_which(name: str, path: str | None = None) -> str | None:
    """``shutil.which`` on `host_path`: never a program a sandboxed command wrote."""
    return shutil.which(name, path=host_path(path))
