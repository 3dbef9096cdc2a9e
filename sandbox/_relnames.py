"""Where a unix socket listed by a name relative to its binder's cwd (``bind("app.sock")``) is.

Why: ``/proc/net/unix`` (and another namespace's table) lists such a socket by the name its binder
gave, which says nothing of the directory; skipped, it left such a daemon unmasked (red team round
14). It was found through the processes holding it, by a ``readlink`` of every descriptor of every
process on the host: a sandboxed command holding 18,000 descriptors and binding a new name every
50 ms made every later check of every session walk them all (0.27 s a check; 57,000 descriptors in
3 processes, 0.95 s; red team round 53, supdock, Left). Now the kernel says which file the socket
is bound to (`sandbox._boundfile`), and that file is looked for under its name in each distinct
process cwd: a ``readlink`` and a ``stat`` a process, one ``stat`` a (cwd, name), whatever anyone
holds (red team round 54, relsock). Where the kernel cannot be asked, the old walk of descriptors
finds the holders, bounded.

Each lookup looks first in the cwds of the processes of the socket's own network namespace (its
binder's, nearly always) with a budget of its own per namespace: a command's many processes and
names spend its own namespace's budget, never that of a host daemon's socket. A socket not found
there within the budget is unsettled: looked up again next time, and kept by a caller that must
fail closed. Found nowhere in its namespace, the others' cwds are tried with what is left; not found
there either, it is found nowhere (None: as a binder that changed directory after ``bind``, the name
then names no place a process shows).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable

from sandbox._boundfile import BoundFile, bound_file_at, bound_files
from sandbox._netns_sockets import namespaces_listing, own_namespace, processes_by_namespace

__all__ = ["relative_places", "relative_socket_paths"]

Pair = tuple[str, str]

#: Relative names looked up already: (socket inode, name) -> the absolute path found, or None.
_RELATIVE: dict[Pair, str | None] = {}

#: ``stat`` calls a lookup may spend on (cwd, name) pairs for one namespace's sockets, and
#: descriptors the fallback walk may read for them: above an honest namespace's needs (a few distinct
#: cwds; a few thousand descriptors) and a session's default process cap (4,096: one name in each of
#: its processes' cwds is settled), so a command cannot buy a check's time with what it holds (~20 ms
#: and ~0.1 s at most; the walk only where the kernel cannot be asked).
_LOOK_BUDGET = 8192
_WALK_BUDGET = 16384


def relative_socket_paths(pairs: Iterable[Pair]) -> dict[Pair, str | None]:
    """Where each socket (inode, relative name) of ``pairs`` is (`relative_places`), None when not
    found (nowhere, or unsettled: nothing can be masked at a place not known)."""
    return relative_places(pairs)[0]


def relative_places(pairs: Iterable[Pair]) -> tuple[dict[Pair, str | None], set[Pair]]:
    """(where each socket (inode, relative name) of ``pairs`` is, the pairs left unsettled).

    Where: the name joined to the current directory of a process that shows the socket's own file
    there, when the host sees that same file at that path (same device and inode: not a lookalike in
    another mount namespace); None when no process shows it or the socket is gone. Remembered per
    (inode, name), but unsettled ones; the new ones cost one lookup together."""
    wanted = list(dict.fromkeys(pairs))
    new = [pair for pair in wanted if pair not in _RELATIVE]
    unsettled: set[Pair] = set()
    if new:
        if len(_RELATIVE) + len(new) > 4096:
            _RELATIVE.clear()
        found, unsettled = _locate(new)
        _RELATIVE.update(found)
    return {pair: _RELATIVE.get(pair) for pair in wanted}, unsettled


def _locate(pairs: list[Pair]) -> tuple[dict[Pair, str | None], set[Pair]]:
    """`relative_places` of pairs not looked up before: (settled ones, unsettled ones)."""
    files, spaces = _bound_files(pairs)
    order = _Order()
    found: dict[Pair, str | None] = {pair: None for pair, file in files.items() if file is None}
    unsettled: set[Pair] = set()
    for space, group in _by_space((pair for pair, file in files.items() if file is not None), spaces).items():
        budget = [_LOOK_BUDGET]
        for pair in group:
            file = files[pair]
            assert file is not None
            path, settled = _find_in_cwds(pair[1], file, order, space, budget)
            if settled:
                found[pair] = path
            else:
                unsettled.add(pair)
    rest = [pair for pair in pairs if pair not in files]
    for space, group in _by_space(rest, spaces).items():
        walked, undone = _walk_holders(group, order, space)
        found.update(walked)
        unsettled |= undone
    return found, unsettled


def _by_space(pairs: Iterable[Pair], spaces: dict[str, int | None]) -> dict[int | None, list[Pair]]:
    out: dict[int | None, list[Pair]] = {}
    for pair in pairs:
        out.setdefault(spaces.get(pair[0]), []).append(pair)
    return out


def _bound_files(pairs: list[Pair]) -> tuple[dict[Pair, BoundFile | None], dict[str, int | None]]:
    """(the file each pair's socket is bound to, None for a socket no namespace has: gone; each
    inode's namespace, by its table's inode). Asked in this process's network namespace, then in
    each other one listing the inode; a pair is left out of the first where the kernel could not be
    asked there (the caller walks descriptors for it)."""
    by_inode: dict[str, list[Pair]] = {}
    for pair in pairs:
        if pair[0].isdigit() and int(pair[0]) <= 0xFFFFFFFF and "\0" not in pair[1]:
            by_inode.setdefault(pair[0], []).append(pair)
    own = own_namespace()
    listing = namespaces_listing([inode for inode, _ in pairs])
    spaces: dict[str, int | None] = {
        inode: (listing[inode][0][0] if inode in listing else own) for inode, _ in pairs
    }
    ours = bound_files(int(inode) for inode in by_inode)
    if ours is None:
        return {}, spaces
    files: dict[str, BoundFile | None] = {}
    asked: dict[tuple[int, str], list[str]] = {}
    for inode in by_inode:
        files[inode] = ours[int(inode)]
        if files[inode] is not None:
            spaces[inode] = own
            continue
        for where in listing.get(inode, ()):
            asked.setdefault(where, []).append(inode)
    unanswered: set[str] = set()
    for (space, pid), inodes in asked.items():
        theirs = bound_files((int(inode) for inode in inodes), pid) if pid else None
        if theirs is None:
            unanswered.update(inodes)
            continue
        for inode in inodes:
            if theirs[int(inode)] is not None:
                files[inode], spaces[inode] = theirs[int(inode)], space
    for inode in unanswered:
        if files.get(inode) is None:
            del files[inode]  # not found where asked, and a namespace listing it could not be asked
    return {pair: file for inode, file in files.items() for pair in by_inode[inode]}, spaces


class _Order:
    """Every process, those of a given namespace first, and each one's cwd (read once a lookup)."""

    def __init__(self) -> None:
        try:
            self._pids = [name for name in os.listdir("/proc") if name.isdigit()]
        except OSError:
            self._pids = []
        self._by_space = processes_by_namespace()
        self._cwds: dict[str, tuple[int, int, str] | None] = {}

    def of(self, space: int | None) -> tuple[list[str], list[str]]:
        """(the processes of ``space``, the others); every process is of a namespace no scan placed
        any process in (a caller that never listed the namespaces: the budget then settles nothing
        it did not reach)."""
        first = self._by_space.get(space) if space is not None else None
        if not first:
            return list(self._pids), []
        firsts = set(first)
        return first, [pid for pid in self._pids if pid not in firsts]

    def cwd(self, pid: str) -> tuple[int, int, str] | None:
        """(device, inode, path as the process names it) of ``pid``'s cwd; None when gone."""
        if pid not in self._cwds:
            try:
                where = os.readlink(f"/proc/{pid}/cwd")
                st = os.stat(f"/proc/{pid}/cwd")
                self._cwds[pid] = (st.st_dev, st.st_ino, where)
            except OSError:
                self._cwds[pid] = None  # gone, or a kernel thread
        return self._cwds[pid]


def _find_in_cwds(
    name: str, file: BoundFile, order: _Order, space: int | None, budget: list[int]
) -> tuple[str | None, bool]:
    """(the host path of ``file`` found as ``name`` in a process's cwd, or None; whether settled).
    Each distinct cwd once, those of ``space``'s processes first; ``budget`` (shared by a namespace's
    names) spent a ``stat`` each: spent among the namespace's own processes, unsettled; among the
    others, None."""
    seen: set[tuple[int, int, str]] = set()
    first, others = order.of(space)
    for own_phase, pids in ((True, first), (False, others)):
        for pid in pids:
            where = order.cwd(pid)
            if where is None or where in seen:
                continue
            seen.add(where)
            if budget[0] <= 0:
                return None, not own_phase
            budget[0] -= 1
            theirs = bound_file_at(f"/proc/{pid}/cwd/{name}", file, f"/proc/{pid}/mountinfo")
            if theirs is not None:
                path = _seen_by_host(where[2], name, theirs)
                if path is not None:
                    return path, True
    return None, True


def _seen_by_host(cwd: str, name: str, theirs: os.stat_result) -> str | None:
    """The host's path of ``name`` in a process's ``cwd`` (as it names it), when the host sees the same
    file there as the process does (``theirs``)."""
    path = os.path.normpath(os.path.join(cwd, name))
    try:
        ours = os.stat(path, follow_symlinks=False)
    except (OSError, ValueError):
        return None
    if stat.S_ISSOCK(ours.st_mode) and (ours.st_dev, ours.st_ino) == (theirs.st_dev, theirs.st_ino):
        return path
    return None


def _walk_holders(
    pairs: list[Pair], order: _Order, space: int | None
) -> tuple[dict[Pair, str | None], set[Pair]]:
    """The fallback where the kernel tells no bound file: the holders found by a walk of descriptors,
    ``space``'s processes first, at most `_WALK_BUDGET` descriptors; a pair not found when the budget
    ran out among them is unsettled, among the others found nowhere."""
    targets = {f"socket:[{inode}]" for inode, _ in pairs}
    first, others = order.of(space)
    budget = [_WALK_BUDGET]
    holders, complete = _holders(targets, first, budget)
    found: dict[Pair, str | None] = {}
    unsettled: set[Pair] = set()
    left: list[Pair] = []
    for inode, name in pairs:
        path = _through(holders.get(f"socket:[{inode}]", ()), name)
        if path is not None:
            found[(inode, name)] = path
        elif complete:
            left.append((inode, name))
        else:
            unsettled.add((inode, name))
    if left:
        holders, _complete = _holders({f"socket:[{inode}]" for inode, _ in left}, others, budget)
        for inode, name in left:
            found[(inode, name)] = _through(holders.get(f"socket:[{inode}]", ()), name)
    return found, unsettled


def _holders(targets: set[str], pids: list[str], budget: list[int]) -> tuple[dict[str, list[str]], bool]:
    """The pids (as /proc names) of ``pids`` holding each of ``targets`` (``socket:[inode]``), in one
    walk, and whether it read every descriptor (False when ``budget`` ran out first)."""
    found: dict[str, list[str]] = {}
    for pid in pids:
        fds = f"/proc/{pid}/fd"
        try:
            names = os.listdir(fds)
        except OSError:
            continue  # gone, or not ours to read
        if len(names) > budget[0]:
            budget[0] = 0
            return found, False
        budget[0] -= len(names)
        for fd in names:
            try:
                link = os.readlink(f"{fds}/{fd}")
            except OSError:
                continue  # closed meanwhile
            if link in targets and pid not in found.setdefault(link, []):
                found[link].append(pid)
    return found, True


def _through(pids: Iterable[str], name: str) -> str | None:
    """Where ``name`` is in the cwd of one of ``pids`` (holders of its socket), as the host sees it."""
    if "\0" in name:
        return None
    for pid in pids:
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
            theirs = os.stat(f"/proc/{pid}/cwd/{name}", follow_symlinks=False)
        except (OSError, ValueError):
            continue
        path = _seen_by_host(cwd, name, theirs)
        if path is not None:
            return path
    return None
