"""This host's root-only ``/sys`` files, as a bounded list of masks (round 48's walk, round 49's bound).

A per-call root command is host uid 0 with no capability, so a ``/sys`` file guarded by its mode
alone (0400/0600, root's) is open to it: round 48 masked each such file, and refused every start
past 2,000 of them. A bare-metal or GPU server has more: each PCI function's ``resource<N>``,
``resource<N>_wc`` and ``rom`` (hundreds of functions with SR-IOV), each CPU's ``crash_notes``
and its ``cpufreq`` policy's ``cpuinfo_cur_freq``. Round 49 (docker9) keeps every one masked and
refuses only when nothing a container can do without could hold them:

- the walk visits at most `MAX_ENTRIES` entries; past that, each directory it has not listed is
  masked whole (an empty read-only tmpfs: nothing below it reads), and only the directories a
  container needs (`NEEDED`) and their ancestors are still listed, their subdirectories masked whole;
- a directory the walk may not list (a non-root caller, a mode 0700 directory) is masked whole, and
  so is one others may not list or enter (its files are root's alone, whatever their modes: the
  rule round 48 gave ``/proc``'s walk);
- past `MAX_MASKS` masks, `collapse` replaces the masks below one directory with one mask of that
  directory, deepest directories first and, at one depth, the one holding the most masks first,
  until the count fits; directories inside a `NEEDED` tree (a CPU's) only when the rest did not
  do. Neither ever masks ``/sys``, a `NEEDED` directory or one of their ancestors; when nothing
  else is left to collapse, `ValueError` (fail closed: the start refuses);
- the network namespace's directories are not walked (`_PER_NETNS`).
"""

from __future__ import annotations

import os
import re
import stat
from collections import Counter
from collections.abc import Iterable

__all__ = [
    "MAX_ENTRIES",
    "MAX_MASKS",
    "NEEDED",
    "closed_to_others",
    "collapse",
    "is_under",
    "root_only_file",
    "walk_root_only",
]

#: Directories a container reads that no mask may hide, nor one of their ancestors (subdirectories
#: may be masked): the CPU list and topology (``nproc``, ``os.cpu_count``, glibc's ``get_nprocs``
#: read ``cpu/online``), NUMA nodes (libnuma, the JVM), the cgroup mount (its own file system: the
#: limits a runtime sizes itself by), the container's network devices (``/sys/class/net/<dev>`` links
#: to ``/sys/devices/virtual/net/<dev>``: veth and lo are virtual) and transparent huge pages (the
#: JVM, jemalloc).
NEEDED = (
    "/sys/devices/system/cpu",
    "/sys/devices/system/node",
    "/sys/fs/cgroup",
    "/sys/class/net",
    "/sys/devices/virtual/net",
    "/sys/kernel/mm/transparent_hugepage",
)

#: The network namespace's own devices (sysfs shows a reader those of its own namespace there): a
#: container's are its own, the host's are not in its view; not walked (a host's thousands of veths).
_PER_NETNS = ("/sys/class/net", "/sys/devices/virtual/net")

#: Masks of root-only ``/sys`` entries a container gets at most (each one is a mount runc makes at
#: each create; this host has 39): a 512-thread host's two ``crash_notes`` files a CPU fit, by then
#: one mask a CPU directory.
MAX_MASKS = 1024
#: Entries the walk visits before it masks what it has not listed whole (this host: ~9,100 in
#: ~0.2 s; a large server's ``/sys`` holds 100,000 and more).
MAX_ENTRIES = 40_000

#: A path a mask may name: below /sys, no ``.`` or ``..`` step, no empty one.
_PLACE = re.compile(r"/sys(?:/(?!\.\.?(?:/|$))[^/\0]+)+")


def is_under(path: str, roots: Iterable[str]) -> bool:
    """``path`` is one of ``roots`` or below one."""
    return any(path == root or path.startswith(root + "/") for root in roots)


def _keeps(path: str) -> bool:
    """A directory no mask may name: ``/sys`` itself, a `NEEDED` one or an ancestor of one."""
    return path == "/sys" or any(need == path or need.startswith(path + "/") for need in NEEDED)


#: A directory others may list and enter: one without both bits is its owner's (root's) alone, and
#: so is every file below it, whatever the file's mode says.
_OTHERS_ENTER = stat.S_IROTH | stat.S_IXOTH


def root_only_file(mode: int) -> bool:
    """A regular file its owner (root: a per-call root command is host uid 0) reads and others do
    not: its mode is its only guard (the one rule for ``/sys`` and ``/proc``'s walks)."""
    return stat.S_ISREG(mode) and bool(mode & stat.S_IRUSR) and not mode & stat.S_IROTH


def closed_to_others(mode: int) -> bool:
    """A directory others may not list or enter: what it holds is its owner's (root's) alone."""
    return stat.S_ISDIR(mode) and mode & _OTHERS_ENTER != _OTHERS_ENTER


def _named(inside: str) -> str:
    if _PLACE.fullmatch(inside) is None:
        raise ValueError(f"a root-only /sys entry no mask can name: {inside!r:.200}")
    return inside


def walk_root_only(
    sys_root: str, skip: tuple[str, ...], max_entries: int | None = None, under: str = "/sys"
) -> tuple[str, ...]:
    """Every regular file below ``sys_root`` (on its file system, not below ``skip``'s container
    paths; only below ``under``'s when given) that its owner may read and others may not, as the
    container names it, and each
    directory masked whole instead (not listed: past ``max_entries``, `MAX_ENTRIES` by default, or
    refused to this caller)."""
    budget = MAX_ENTRIES if max_entries is None else max_entries
    try:
        root_dev = os.lstat(sys_root).st_dev
    except OSError:  # no /sys here: nothing of this host's to name (a remote daemon's is not read)
        return ()
    found: list[str] = []
    visited = 0
    first: list[str] = [_named(under) if under != "/sys" else under]  # `NEEDED`'s trees and their
    # ancestors, walked before the rest
    stack: list[str] = []
    while first or stack:
        inside = first.pop() if first else stack.pop()
        if visited >= budget and not _keeps(inside):
            found.append(_named(inside))  # not listed: masked whole, what it holds unread
            continue
        try:
            entries = os.scandir(sys_root + inside[4:])
        except FileNotFoundError:  # unplugged while walked: gone, nothing to read
            continue
        except OSError as exc:  # not ours to list (a mode 0700 directory, a non-root caller)
            if _keeps(inside):
                raise ValueError(f"cannot list {inside} to find its root-only files: {exc}") from exc
            found.append(_named(inside))
            continue
        marks = (len(found), len(first), len(stack))
        with entries:
            for entry in entries:
                if visited >= budget and not _keeps(inside):  # the budget ran out inside it:
                    del found[marks[0] :], first[marks[1] :], stack[marks[2] :]
                    found.append(_named(inside))  # what it holds, read or not, masked whole
                    break
                visited += 1
                path = f"{inside}/{entry.name}"
                try:
                    st = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                except OSError as exc:  # cannot tell its mode: masked (a directory or a file alike)
                    if _keeps(path):
                        raise ValueError(f"cannot stat {path} to find its root-only files: {exc}") from exc
                    found.append(_named(path))
                    continue
                if stat.S_ISDIR(st.st_mode):
                    if st.st_dev != root_dev or is_under(path, (*skip, *_PER_NETNS)):
                        continue
                    if closed_to_others(st.st_mode):  # what it holds is root's alone
                        if _keeps(path):
                            raise ValueError(f"{path} is root's alone (mode {st.st_mode & 0o7777:o})")
                        found.append(_named(path))
                    else:
                        (first if _keeps(path) or is_under(path, NEEDED) else stack).append(path)
                elif root_only_file(st.st_mode):
                    found.append(_named(path))
    return tuple(sorted(found))


def collapse(masks: Iterable[str], max_masks: int | None = None) -> tuple[str, ...]:
    """At most ``max_masks`` (`MAX_MASKS` by default) paths that hide every one of ``masks``
    (``/sys`` paths; one below another is dropped): the masks below a directory replaced by that directory,
    deepest directories first and, at one depth, the one holding the most first; those inside a
    `NEEDED` tree after all others; never ``/sys``, a `NEEDED` directory or an ancestor of one.
    `ValueError` when only those would bring the count down."""
    bound = MAX_MASKS if max_masks is None else max_masks
    given = set(masks)
    leaves = sorted(m for m in given if not _below_any(m.rpartition("/")[0], given))
    if len(leaves) <= bound:
        return tuple(leaves)
    held: dict[str, int] = {}  # directory -> masks below it now
    for directory, count in Counter(leaf.rpartition("/")[0] for leaf in leaves).items():
        while directory not in ("/sys", ""):
            held[directory] = held.get(directory, 0) + count
            directory = directory.rpartition("/")[0]
    total = len(leaves)
    chosen: list[str] = []
    # Two passes: directories outside `NEEDED`'s trees, then those inside (a CPU's directory hides
    # its topology: the last resort). Neither's collapses change the other's counts.
    places: dict[tuple[bool, int], list[str]] = {}  # (inside a NEEDED tree, depth) -> directories
    for directory in held:
        if not _keeps(directory):
            places.setdefault((is_under(directory, NEEDED), directory.count("/")), []).append(directory)
    for place in sorted(places, key=lambda p: (p[0], -p[1])):
        for directory in sorted(places[place], key=lambda d: (-held[d], d)):
            if total <= bound:
                break
            gain = held[directory] - 1
            if gain <= 0:
                continue
            chosen.append(directory)
            total -= gain
            parent = directory.rpartition("/")[0]
            while parent not in ("/sys", ""):
                held[parent] -= gain
                parent = parent.rpartition("/")[0]
    if total > bound:
        raise ValueError(
            f"{total} root-only /sys entries of this host are left after masking every directory a "
            f"container can do without, more than {bound}"
        )
    picked = set(chosen)
    outer = [d for d in chosen if not _below_any(d.rpartition("/")[0], picked)]
    return tuple(sorted([*outer, *(leaf for leaf in leaves if not _below_any(leaf, picked))]))


def _below_any(path: str, directories: set[str]) -> bool:
    """``path`` is one of ``directories`` or below one (its ancestors looked up: no scan of them)."""
    while path not in ("/sys", ""):
        if path in directories:
            return True
        path = path.rpartition("/")[0]
    return False
