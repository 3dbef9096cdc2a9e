"""The host's IPC endpoints a bwrap sandbox must not reach, as bwrap mount flags.

A read-only mount does not stop ``connect()`` on a unix socket, and a
seccomp rule on ``socket(AF_UNIX)`` would break what commands do with their
own sockets (``socketpair``, asyncio, a test server in /tmp). So the sockets
themselves are hidden:

* ``/run`` (``/var/run`` is a link to it on every current distribution),
  where system daemons put theirs (docker.sock, dbus, systemd, databases),
  and the caller's ``XDG_RUNTIME_DIR`` (user agents: ssh, gpg, pulse) become
  empty tmpfs (``/etc/resolv.conf`` stays readable when it points into /run);
* every other pathname socket the host's ``/proc/net/unix`` lists -- read here,
  on the host, in the host's network namespace -- is covered by /dev/null,
  unless it lives where the sandbox's own files are (its writable roots, its
  /tmp), where it is the command's own or the user's workspace.

Abstract sockets are cut by the network namespace (``network: none``). For
a root caller the unprivileged sandbox uid is the second wall: a 0660
root:docker socket refuses it even where it is visible.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

__all__ = ["RUN_DIRS", "host_socket_paths", "ipc_mask_args", "outside_sockets"]

RUN_DIRS = ("/run", "/var/run")


def host_socket_paths() -> list[str]:
    """Pathname unix sockets bound in the host's network namespace (``/proc/net/unix``)."""
    try:
        with open("/proc/net/unix", "rb") as f:
            lines = f.read().decode("utf-8", "surrogateescape").splitlines()[1:]
    except OSError:
        return []
    paths = {
        parts[7] for line in lines if len(parts := line.split(None, 7)) == 8 and parts[7].startswith("/")
    }
    return sorted(paths)


def _under(path: str, roots: Iterable[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def _kept(keep: Iterable[Path]) -> list[str]:
    return [os.path.realpath(p) for p in keep] + ["/tmp"]


def outside_sockets(keep: Iterable[Path]) -> frozenset[str]:
    """The host's socket paths as listed, but those under ``keep``, /tmp and the run dirs.

    Cheap (no stat): a session sandbox compares it before each command, and one
    that started before a socket appeared is replaced by one that hides it.
    """
    skip = [*_kept(keep), *RUN_DIRS]
    return frozenset(p for p in host_socket_paths() if not _under(p, skip))


def ipc_mask_args(keep: Iterable[Path], *, reachable_only: bool = False) -> list[str]:
    """bwrap flags hiding /run, XDG_RUNTIME_DIR and every host socket outside ``keep`` (and /tmp).

    To be placed after ``--ro-bind / /`` and before the binds of ``keep``.
    ``reachable_only``: for a bwrap run as an unprivileged uid that owns nothing on the
    host, leave out sockets in directories "others" cannot cross (it could neither mask
    nor reach them).
    """
    kept = _kept(keep)
    args: list[str] = []
    covered: list[str] = []
    for run in (*RUN_DIRS, os.environ.get("XDG_RUNTIME_DIR", "")):
        real = os.path.realpath(run) if run else ""
        if (
            not real
            or real in covered
            or not os.path.isdir(real)
            or _under(real, kept)
            or _under(real, covered)
        ):
            continue
        covered.append(real)
        args += ["--tmpfs", real]
    resolv = os.path.realpath("/etc/resolv.conf")
    if _under(resolv, covered) and os.path.isfile(resolv):
        args += ["--ro-bind", resolv, resolv]  # DNS keeps working with network: host
    for listed in host_socket_paths():
        path = os.path.realpath(listed)
        if _under(path, covered) or _under(path, kept):
            continue
        try:
            if not stat.S_ISSOCK(os.lstat(path).st_mode):
                continue
            if reachable_only and not all(
                os.stat(parent).st_mode & stat.S_IXOTH for parent in Path(path).parents
            ):
                continue
        except OSError:
            continue
        args += ["--ro-bind", "/dev/null", path]
    return args
