"""Host daemons' unix sockets inside a bind-mounted workspace: masked like read-denied paths.

A pathname unix socket is reached by its path, whatever the network namespace: in bind mode a
daemon the operator runs with its socket in the workspace (git's fsmonitor,
``.git/fsmonitor--daemon.ipc``; Docker Desktop's ``~/.docker/desktop/docker.sock`` when the home
directory is the workspace; any server in the repository) answered every command, and the
idmapped workspace shows a root-owned 0600 socket as the leased uid's own (red team round 9; the
bwrap backend's round 8 twin). The container never shares the host's network namespace, so a
socket the host's ``/proc/net/unix`` lists under the workspace is never a command's own: each
is covered at the container's start by an empty read-only file (``connect`` is then refused), its
parents pinned like a masked path's, and the session moves to a new container when one appears
(or is bound again: an unlink on the host detaches the mask that covered the old file).

The table holds a name as the binder passed it to ``bind``: a daemon started in the repository
with ``./app.sock`` is listed as ``app.sock`` (red team round 14). Such a name raised
``ValueError`` here, so any local user binding a relative name anywhere made every bind-mode
session fail to start and every command fail, and one bound in the workspace was never
covered. A relative name is now looked up through the current directory of each process that
holds the socket (``/proc/<pid>/fd`` -> ``/proc/<pid>/cwd``): the file there, when it is inside
the workspace and is the very file the process sees, is covered like any other. Each such
(inode, name) is judged once.
"""

from __future__ import annotations

import os
import stat

from sandbox._hostsockets import _bound, _socket_table, relative_socket_paths
from sandbox.confine import relative_to

__all__ = ["WorkspaceSockets"]


class WorkspaceSockets:
    """The host's sockets under one workspace, and whether new ones appeared since (cheap per call)."""

    def __init__(self, workspace: str) -> None:
        self._root = os.path.realpath(workspace)
        self._table = _socket_table()
        #: (socket inode, path) of those covered: the listed path is where it was bound.
        self._covered = self._inside(self._table)

    def _inside(self, table: bytes) -> frozenset[tuple[str, str]]:
        found = set()
        bound = _bound(table)
        relative = relative_socket_paths(pair for pair in bound if not pair[1].startswith("/"))
        for inode, listed in bound:
            path = relative.get((inode, listed)) if not listed.startswith("/") else listed
            if path is None:
                continue  # a relative name no holder shows
            if (
                relative_to(path, self._root) is None
                and relative_to(os.path.realpath(path), self._root) is None
            ):
                continue
            found.add((inode, path))
        return frozenset(found)

    def paths(self) -> list[str]:
        """Host paths (resolved, inside the workspace) of the covered sockets that exist as sockets."""
        out = set()
        for _, path in self._covered:
            real = os.path.realpath(path)
            try:
                is_socket = stat.S_ISSOCK(os.lstat(real).st_mode)
            except OSError:
                continue
            if is_socket and relative_to(real, self._root):
                out.add(real)
        return sorted(out)

    def appeared(self) -> list[str]:
        """Paths of sockets bound under the workspace since this was made (empty: none)."""
        table = _socket_table()
        if table == self._table:
            return []
        new = self._inside(table) - self._covered
        if not new:
            self._table = table
        return sorted(path for _, path in new)
