"""Files git tracks that a tree's ignore files hide from Glob and Grep.

Why this exists: Glob and Grep obey ``.gitignore``, ``.ignore``, ``.rgignore`` and
``.git/info/exclude``, as ripgrep does. Git never ignores a file it tracks, but ripgrep
does: a repository (or a command before the call) that adds ``backdoor.py`` to an
ignore file made a tracked ``src/backdoor.py`` vanish from every Glob and Grep, so a
model auditing the code was told "No matches" (red team, round 36). The index is
read here, without running git (a hostile repository configures git), bounded, and
a tracked name counts only when it is a regular file reached from the search root
without following a symlink.
"""

from __future__ import annotations

import os
import stat
import struct
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path

from sandbox._hostread import read_regular
from sandbox.confine import Stamp, View, stamp
from shellrt.tools._dirs_below import DirsBelow, plain_relative
from shellrt.tools._gitdiscover import is_repository

__all__ = ["MAX_INDEX_BYTES", "UNIGNORED_NOTE", "hidden_tracked", "tracked_in_view", "tracked_under"]

#: The index of a repository of ~500,000 files (the Linux kernel's, 80,000 files: ~8 MB); past this
#: nothing is added. Read whole on the host per call: the bound is what a command can make it cost.
MAX_INDEX_BYTES = 64 << 20
#: Names checked for presence in one call (each costs a few ``openat``); the rest are not added.
_MAX_CHECKED = 100_000
#: Distinct directories opened to check them (each once: `DirsBelow`); past this the rest are not
#: added. The Linux kernel's tree holds ~5,000.
_MAX_DIRS_OPENED = 100_000
_REGULAR = 0o100000
_GITLINK = 0o160000
#: A path longer than Linux's ``PATH_MAX`` names no file; and all names together hold at most
#: `_NAMES_PER_INDEX_BYTE` times the index's size (a real one: about 1) and `MAX_INDEX_BYTES`:
#: version 4 grows each name from the last, so n entries of 65 bytes held n²/2 bytes of names (a
#: 1 MB index: 128 MB of the host's memory; round 36, review3). Past either the index is refused.
_MAX_NAME_BYTES = 4096
_NAMES_PER_INDEX_BYTE = 4
#: Parsed indexes kept (most recently used last), and the largest index kept (~8 MB: 80,000 files).
_CACHE_ENTRIES = 8
_CACHED_MAX_BYTES = 16 << 20
#: How old an index's ctime must be before its parse is kept: a file system's timestamps may be a
#: clock tick (a few ms) coarse, so a rewrite of the same size within one tick could look unchanged.
_SETTLED_NS = 2_000_000_000
_CACHE: OrderedDict[tuple[str, Stamp], tuple[str, ...]] = OrderedDict()
_CACHE_LOCK = threading.Lock()
#: The note Glob and Grep add (``count``, ``verb``): the model learns the ignore files were overruled.
UNIGNORED_NOTE = (
    "{count} file(s) shown are tracked by git but named in this tree's ignore files (.gitignore/"
    ".ignore/.rgignore/.git/info/exclude), and were {verb} anyway: an ignore file never hides a "
    "tracked file."
)


def tracked_under(root: Path, top_bound: Path) -> list[str] | None:
    """Paths relative to ``root`` of the regular files the index of the repository holding
    ``root`` tracks (``root`` and its parents up to ``top_bound`` are looked at for a ``.git``
    directory). None when there is no such repository or its index cannot be read (a ``.git``
    file, a split index, a bad or oversized index): nothing is added then."""
    found: list[str] | None = None
    spent = _Spent()
    for top in _repository_tops(root):
        gitdir = _gitdir(top, top_bound)
        names = None if gitdir is None else _with_submodules(top, gitdir, top_bound, spent, 0)
        if names is None:
            continue
        prefix = "" if top == root else root.relative_to(top).as_posix() + "/"
        found = [*(found or ()), *(n[len(prefix) :] for n in names if n.startswith(prefix) and len(n) > len(prefix))]
    return None if found is None else list(dict.fromkeys(found))


#: Submodules (gitlinks) whose indexes one call reads, how deep, and their indexes' bytes in all.
_MAX_SUBMODULES = 64
#: Gitlinks one call looks at, read or not, and the most components one may have: each costs a
#: ``realpath`` (quadratic in its components); 2,000 of 2,000 components naming no directory cost
#: 17 s of every Glob and Grep, uncounted (round 37 review2). A real submodule path has a few.
_MAX_GITLINKS_LOOKED = 4 * _MAX_SUBMODULES
_MAX_GITLINK_PARTS = 32
_MAX_SUBMODULE_DEPTH = 3
_MAX_SUBMODULE_INDEX_BYTES = MAX_INDEX_BYTES


class _Spent:
    """What one call's submodule reads have used of their bounds.

    ``chars``: the characters of the names submodules added (each with its gitlink's path), held
    to `_NAMES_PER_INDEX_BYTE` times the bytes read: a gitlink path of ~3,700 characters over an
    index of short names made each 72-byte entry a 3,700-character name, ~3 GB of the host's
    memory from 64 MiB of indexes (red team round 37, review2)."""

    def __init__(self) -> None:
        self.count = 0
        self.bytes = 0
        self.chars = 0
        self.looked = 0

    def room(self) -> int:
        return _NAMES_PER_INDEX_BYTE * self.bytes - self.chars


def _with_submodules(top: Path, gitdir: Path, top_bound: Path, spent: _Spent, depth: int) -> list[str] | None:
    """The regular files the index at ``gitdir`` tracks, and those of the repositories its gitlinks
    name below ``top`` (submodules, embedded repositories), as paths relative to ``top``.

    Round 37: a submodule's own ignore files hid the files its index tracks, as round 36's did for
    the top repository's. A gitlink's directory counts only when it is a real directory inside the
    workspace's mount (no symlink on the way: its index is a path the repository chose) and its
    ``.git`` as `_gitdir` judges it; bounded by `_MAX_SUBMODULES`, `_MAX_SUBMODULE_DEPTH`,
    `_MAX_SUBMODULE_INDEX_BYTES`, `_MAX_GITLINKS_LOOKED` and `_MAX_GITLINK_PARTS` (past them the rest
    add nothing), and what they add by `_Spent.room`."""
    entries = _index_names_cached(gitdir / "index", gitdir)
    if entries is None:
        return None
    names = [n for n in entries if not n.endswith("/")]
    if depth >= _MAX_SUBMODULE_DEPTH:
        return names
    real_top = os.path.realpath(top)
    for link in (n[:-1] for n in entries if n.endswith("/")):
        spent.looked += 1
        if spent.count >= _MAX_SUBMODULES or spent.looked > _MAX_GITLINKS_LOOKED or not plain_relative(link):
            break
        if link.count("/") >= _MAX_GITLINK_PARTS:
            continue  # adds nothing (past a bound)
        sub = top / link
        real = os.path.join(real_top, link)
        if os.path.realpath(sub) != real or not stat.S_ISDIR(_lstat_mode(sub)):
            continue
        sub_gitdir = _gitdir(sub, top_bound)
        if sub_gitdir is None:
            continue
        size = _regular_size(sub_gitdir / "index")
        if spent.bytes + size > _MAX_SUBMODULE_INDEX_BYTES:
            break
        spent.count += 1
        spent.bytes += size
        below = _with_submodules(sub, sub_gitdir, top_bound, spent, depth + 1)
        for name in below or ():
            if spent.room() < len(link) + 1 + len(name):
                return names  # past the bound the rest add nothing
            spent.chars += len(link) + 1 + len(name)
            names.append(f"{link}/{name}")
    return names


def _index_names_cached(index: Path, gitdir: Path, shared: bool = False) -> tuple[str, ...] | None:
    """`_index_names` of the index file, from `_CACHE` when its identity (device, inode, size,
    mtime, ctime) is the one it was read with. Only an index whose ctime was at least
    `_SETTLED_NS` old when read, and unchanged across the read, is kept: any write after that
    sets a new ctime (a command cannot set ctime back), so a kept entry is never stale."""
    try:
        st = os.lstat(index)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_INDEX_BYTES:
        return None  # a sparse 10 GB index costs no read (the read below is bounded as well)
    key = (str(index), stamp(st))
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
            return hit
    data = read_regular(index, MAX_INDEX_BYTES, follow=False)
    if data is None or len(data) > MAX_INDEX_BYTES:
        return None
    parsed = _index_names(data)
    if parsed is None:
        return None
    entries, link = parsed
    if link is not None:  # a split index: its entries and its shared index's (a superset: safe)
        if shared:
            return None
        base = _index_names_cached(gitdir / f"sharedindex.{link}", gitdir, shared=True)
        if base is None:
            return None
        entries = [*base, *entries]
    names = tuple(dict.fromkeys(n for n in entries if n))
    try:
        after = os.lstat(index)
    except OSError:
        return names
    settled = time.time_ns() - st.st_ctime_ns >= _SETTLED_NS
    if settled and stamp(after) == stamp(st) and len(data) == st.st_size <= _CACHED_MAX_BYTES:
        with _CACHE_LOCK:
            _CACHE[key] = names
            while len(_CACHE) > _CACHE_ENTRIES:
                _CACHE.popitem(last=False)
    return names


def hidden_tracked(root_fd: int, tracked: Iterable[str], listed: Iterable[str]) -> list[str]:
    """The names of ``tracked`` the listing left out that are regular files under ``root_fd``
    now, each reached without following a symlink (sorted; the first `_MAX_CHECKED` looked at,
    in at most `_MAX_DIRS_OPENED` directories: round 36, review3)."""
    seen = set(listed)
    missing = sorted(t for t in tracked if t not in seen)
    found: list[str] = []
    dirs = DirsBelow(root_fd, _MAX_DIRS_OPENED)
    try:
        for name in missing[:_MAX_CHECKED]:
            if not plain_relative(name):
                continue
            parts = name.split("/")
            fd = dirs.enter(parts[:-1])
            if fd is None:
                if dirs.spent:
                    break
                continue
            try:
                if stat.S_ISREG(os.stat(parts[-1], dir_fd=fd, follow_symlinks=False).st_mode):
                    found.append(name)
            except OSError:
                continue
    finally:
        dirs.close()
    return found


def _repository_tops(root: Path) -> list[Path]:
    """The nearest directory at or above ``root`` holding a ``.git`` (directory or file), as git
    finds it. Above the workspace's mount it is the operator's (a command cannot write there):
    a workspace below its repository's top is covered (round 36, files2). A ``.git`` directory
    that is no repository does not end the walk, as it does not end git's: a ``mkdir src/.git``
    made Glob and Grep read only its (absent) index, and no tracked file was reported hidden
    (round 56, hostrepo). Each passed over is listed too, nearest first (its index, if any, counts:
    more names reported is the safe side)."""
    found: list[Path] = []
    for here in (root, *root.parents):
        try:
            mode = os.lstat(here / ".git").st_mode
        except OSError:
            continue
        if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
            return found
        found.append(here)
        if stat.S_ISREG(mode) or is_repository(str(here / ".git")):
            return found
    return found


#: A ``.git`` file (``gitdir: <path>``) of a worktree or submodule is a line; past this it is not read.
_MAX_GITFILE_BYTES = 4096
#: Components the directory a ``.git`` file names may have (round 37 review2: ``realpath`` cost).
_MAX_GITDIR_PARTS = 128


def _gitdir(top: Path, top_bound: Path) -> Path | None:
    """The git directory of the repository at ``top``: ``.git`` itself, or the one a ``.git`` file
    names (a linked worktree's, a submodule's). The file is the repository's: read as a regular
    file, bounded, without following a symlink, and the directory it names counts only inside the
    workspace's mount when the file is (it may name any host path): else None, nothing added."""
    dotgit = top / ".git"
    try:
        if stat.S_ISDIR(os.lstat(dotgit).st_mode):
            return dotgit
    except OSError:
        return None
    data = read_regular(dotgit, _MAX_GITFILE_BYTES, follow=False)
    if data is None or len(data) > _MAX_GITFILE_BYTES or not data.startswith(b"gitdir: "):
        return None
    try:
        named = data[len(b"gitdir: ") :].splitlines()[0].decode("utf-8")
    except (IndexError, UnicodeDecodeError):
        return None
    if not named or "\0" in named or named.count("/") > _MAX_GITDIR_PARTS:
        return None  # a real one has a few components; each costs realpath quadratic time
    target = Path(os.path.realpath(top / named))
    inside = top == top_bound or top_bound in top.parents
    if inside and target != top_bound and top_bound not in target.parents:
        return None
    return target if stat.S_ISDIR(_lstat_mode(target)) else None


def _regular_size(path: Path) -> int:
    """The size of the regular file at ``path`` (not followed), else 0."""
    try:
        st = os.lstat(path)
    except OSError:
        return 0
    return st.st_size if stat.S_ISREG(st.st_mode) else 0


def _lstat_mode(path: Path) -> int:
    try:
        return os.lstat(path).st_mode
    except OSError:
        return 0


def _index_names(data: bytes) -> tuple[list[str], str | None] | None:
    """The paths of regular-file entries of a git index (versions 2-4) and of its gitlinks (with a
    trailing ``/``), and the hex name of its
    shared index when it is split (``link`` extension: its entries there, replaced ones here with
    empty names); None when it is not one this reads."""
    if len(data) < 12 or data[:4] != b"DIRC":
        return None
    version, count = struct.unpack(">II", data[4:12])
    if version not in (2, 3, 4):
        return None
    pos, previous, names, total = 12, b"", [], 0
    most = min(_NAMES_PER_INDEX_BYTE * len(data), MAX_INDEX_BYTES)
    for _ in range(count):
        start = pos
        if pos + 62 > len(data):
            return None
        mode = int.from_bytes(data[pos + 24 : pos + 28], "big")
        flags = int.from_bytes(data[pos + 60 : pos + 62], "big")
        pos += 62
        if flags & 0x4000:
            if version < 3:
                return None
            pos += 2
        if version == 4:
            strip, pos = _varint(data, pos)
            end = data.find(b"\0", pos)
            if end < 0 or strip > len(previous) or len(previous) - strip + end - pos > _MAX_NAME_BYTES:
                return None
            name = previous[: len(previous) - strip] + data[pos:end]
            pos = end + 1
        else:
            end = data.find(b"\0", pos)
            if end < 0:
                return None
            name = data[pos:end]
            pos = start + ((end - start + 8) & ~7)
        previous = name
        total += len(name)
        if len(name) > _MAX_NAME_BYTES or total > most:
            return None
        if mode & 0o170000 == _REGULAR:  # a conflicted file's stages name it more than once
            names.append(name.decode("utf-8", "surrogateescape"))
        elif mode & 0o170000 == _GITLINK:  # a submodule: named with a "/" (no file's name ends so)
            names.append(name.decode("utf-8", "surrogateescape") + "/")
    link = _extension(data, pos, b"link")
    if link is not None:
        if len(link) < 20:
            return None
        return names, link[:20].hex()
    return list(dict.fromkeys(names)), None


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """Git's offset varint (``decode_varint``)."""
    if pos >= len(data):
        return 1 << 62, pos
    c = data[pos]
    pos += 1
    value = c & 127
    while c & 128:
        if pos >= len(data) or value > 1 << 40:
            return 1 << 62, pos
        c = data[pos]
        pos += 1
        value = ((value + 1) << 7) + (c & 127)
    return value, pos


def _extension(data: bytes, pos: int, signature: bytes) -> bytes | None:
    end = len(data) - 20  # the trailing checksum
    while pos + 8 <= end:
        size = int.from_bytes(data[pos + 4 : pos + 8], "big")
        if data[pos : pos + 4] == signature:
            return data[pos + 8 : min(pos + 8 + size, end)]
        pos += 8 + size
    return None


def tracked_in_view(view: View, root: str) -> list[str] | None:
    """`tracked_under` for the sandbox directory ``root``, looking for the repository no higher
    than the top of the mount that backs it; None when it has no host path."""
    mount = view.mount_of(root)
    host = view.to_host(root)
    if mount is None or host is None:
        return None
    return tracked_under(Path(host), Path(mount.host))
