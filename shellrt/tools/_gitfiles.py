"""Whether the files host git would open in a repository are safe to let it open.

Why this exists: the Bash tool runs a few git queries on the host before it judges a
git command (``shellrt.tools._gitrepo``). Git opens ``.git/config``, ``HEAD``, the index
and whatever ``include.path`` names with a plain blocking ``open``/``read``: a FIFO there
blocks each query until its timeout (every git command in that repository took 30 s to
judge), and a sparse 10 GB file is read into git's heap on the host (1 GB in the 10 s
before the timeout). Both are files a hostile repository can ship or a sandboxed command
can make. So before any host git runs, the repository is located the way git does it and
each of those files is checked here, without running git: it must be a regular file
(after symlinks, as git follows them) and below a size bound. Anything else fails closed:
the caller reports it and the git command asks.

A list of names is never complete: git also opens the loose ref HEAD names, loose objects,
pack indexes, the commit-graph, an alternate's objects (a FIFO at any held a query for its
10 s timeout, red team round 36). So every entry of the git directories is walked too
(`_tree_kind`): anything but a regular file or a directory, after symlinks, fails closed.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
import time

from sandbox._hostread import read_regular
from sandbox._proclinks import through_proc
from shellrt.tools._gitdiscover import is_repository

__all__ = ["MAX_CHECK_S", "MAX_CONFIG_BYTES", "MAX_GIT_ENTRIES", "MAX_INDEX_BYTES", "unsafe_git_files"]

#: Configuration-like files (config, HEAD, commondir, a ``.git`` file, included files).
MAX_CONFIG_BYTES = 1 << 20
#: The index and packed-refs of a very large repository are far below this.
MAX_INDEX_BYTES = 1 << 30
#: Entries of a repository's git directories (and alternates) walked before the check gives up
#: (fails closed). A packed repository has a few hundred; ``gc.auto`` packs loose objects
#: past 6,700. Measured: 5,300 entries (3,000 loose objects, 2,000 loose tags) in 11-27 ms at load 15.
MAX_GIT_ENTRIES = 100_000
#: Seconds one check may take before it fails closed. Entries alone did not bound it: each link's
#: target is resolved step by step (`through_proc`, `realpath`), and 5,000 links whose targets
#: walk ``d/..`` a hundred times took ~8 s a check, 4-5 checks a git command (review of round 36).
MAX_CHECK_S = 2.0
#: git follows alternates of alternates to depth 5 (``link_alt_odb_entry``).
_MAX_ALTERNATE_DEPTH = 5
#: Directories of a git directory that host git queries never open: another repository's
#: git directory (``modules/``: a submodule's, checked when its own queries run), the LFS and
#: git-annex stores.
_SKIPPED_DIRS = frozenset({"modules", "lfs", "annex"})
#: git stops following includes at depth 10 (``MAX_INCLUDE_DEPTH``).
_MAX_INCLUDE_DEPTH = 10
_SECTION = re.compile(r"\s*\[\s*([A-Za-z0-9.-]+)(?:\s+\"(?:[^\"\\]|\\.)*\")?\s*\]")
_PATH_LINE = re.compile(r"\s*path\s*=\s*(.*?)\s*(?:[#;].*)?$", re.IGNORECASE)


def unsafe_git_files(cwd: str) -> str:
    """Why host git must not run in ``cwd`` ("" when the files it opens are all regular
    and bounded, or there is no repository). Never raises."""
    try:
        where = os.path.realpath(cwd)
        kept = _over_budget.get(where)
        if kept is not None and time.monotonic() - kept[0] < _KEEP_OVER_BUDGET_S:
            return kept[1]
        budget = _Budget()
        why = _check(where, budget)
        if why and budget.exhausted:
            if len(_over_budget) >= _MAX_CLEAN_DIRS:
                _over_budget.clear()
            _over_budget[where] = (time.monotonic(), why)
        return why
    except (OSError, ValueError, RecursionError) as exc:
        return f"the repository's git files could not be checked ({exc})"


#: Verdicts that ran out of the check's bounds, by directory: ``(when, why)``, kept
#: `_KEEP_OVER_BUDGET_S`. A git command's judgement checks 4-5 times, and each such check costs
#: the whole `MAX_CHECK_S`: kept, one judgement costs it once. Only a refusal is kept (more
#: asking for a few seconds after the repository is cleaned, never less).
_over_budget: dict[str, tuple[float, str]] = {}
_KEEP_OVER_BUDGET_S = 10.0


def _check(cwd: str, budget: _Budget) -> str:
    """Each git directory on git's way up from ``cwd``, to the one it takes. A ``.git`` directory
    (or a bare-looking one) that is no repository is checked and passed over, as git passes it:
    ``mkdir sub/.git`` stopped the check there while host git went on to the parent's FIFO
    (red team round 56, hostrepo)."""
    current = cwd
    while True:
        dot_git = os.path.join(current, ".git")
        if os.path.lexists(dot_git):
            why = _kind(dot_git, MAX_CONFIG_BYTES, directory_ok=True)
            if why:
                return why
            if not os.path.isdir(dot_git):
                return _check_gitfile(dot_git, budget)
            why = _check_gitdir(dot_git, budget)
            if why or is_repository(dot_git):
                return why
        elif _looks_bare(current):
            why = _check_gitdir(current, budget)
            if why or is_repository(current):
                return why
        parent = os.path.dirname(current)
        if parent == current:
            return ""
        current = parent


def _looks_bare(directory: str) -> bool:
    return all(os.path.lexists(os.path.join(directory, n)) for n in ("HEAD", "objects", "refs"))


def _check_gitfile(path: str, budget: _Budget) -> str:
    """A ``.git`` file (``gitdir: <path>``, a worktree or submodule)."""
    data = read_regular(path, MAX_CONFIG_BYTES)
    if data is None:
        return f"{path} could not be read as a regular file"
    text = data.decode("utf-8", "surrogateescape").strip()
    if not text.startswith("gitdir:"):
        return ""  # git refuses it itself ("invalid gitfile format") without opening more
    target = os.path.join(os.path.dirname(path), text[len("gitdir:") :].strip())
    if not os.path.isdir(target):
        return _kind(target, MAX_CONFIG_BYTES, directory_ok=True)
    return _check_gitdir(target, budget)


#: (name, size bound) of the files of a git directory that host git opens.
_GITDIR_FILES = (
    ("HEAD", MAX_CONFIG_BYTES),
    ("commondir", MAX_CONFIG_BYTES),
    ("config", MAX_CONFIG_BYTES),
    ("config.worktree", MAX_CONFIG_BYTES),
    ("index", MAX_INDEX_BYTES),
    ("packed-refs", MAX_INDEX_BYTES),
    ("shallow", MAX_INDEX_BYTES),
    ("objects/info/alternates", MAX_CONFIG_BYTES),
    ("info/grafts", MAX_CONFIG_BYTES),
)

#: The same for the common directory a worktree's ``commondir`` names.
_COMMONDIR_FILES = (
    ("config", MAX_CONFIG_BYTES),
    ("packed-refs", MAX_INDEX_BYTES),
    ("objects/info/alternates", MAX_CONFIG_BYTES),
)


def _first_kind(base: str, files: tuple[tuple[str, int], ...]) -> str:
    """`_kind` of each of ``files`` below ``base``: the first reason found, or ""."""
    for name, bound in files:
        why = _kind(os.path.join(base, name), bound)
        if why:
            return why
    return ""


def _check_gitdir(gitdir: str, budget: _Budget) -> str:
    """The files of one git directory (and its common directory) that host git opens."""
    why = _first_kind(gitdir, _GITDIR_FILES)
    if why:
        return why
    common = gitdir
    commondir = read_regular(os.path.join(gitdir, "commondir"), MAX_CONFIG_BYTES)
    if commondir:
        common = os.path.join(gitdir, commondir.decode("utf-8", "surrogateescape").strip())
        why = _first_kind(common, _COMMONDIR_FILES)
        if why:
            return why
    for config in {os.path.join(common, "config"), os.path.join(gitdir, "config.worktree")}:
        why = _includes(config, 0)
        if why:
            return why
    if not all(os.path.lexists(p) for p in (f"{gitdir}/HEAD", f"{common}/objects", f"{common}/refs")):
        return ""  # not a git directory (``gitdir: /``): git stops here, and so does the walk
    seen: set[tuple[int, int]] = set()
    for base in dict.fromkeys((gitdir, common)):
        why = _tree_kind(base, budget, seen)
        if why:
            return why
    return _alternates_kind(os.path.join(common, "objects"), 0, budget, seen)


#: Directories found clean (regular files and directories only), by path: ``(the directory's
#: dev, inode, mtime and ctime when listed, its entry count, its subdirectories)``. Any entry
#: made, removed or renamed there changes the mtime; a kind cannot change in place. Only a
#: directory last changed over `_SETTLED_S` before its listing is kept (git's racy-clean rule:
#: a change within the file system's clock tick leaves the mtime as it was). The judgement of
#: each git command lists them several times: 5,300 entries cost 250 ms a command at load 18.
_clean_dirs: dict[str, tuple[tuple[int, int, int, int], int, tuple[str, ...]]] = {}
_SETTLED_S = 2.0
_MAX_CLEAN_DIRS = 20_000


class _Budget:
    """What one check may still spend: `MAX_GIT_ENTRIES` entries and `MAX_CHECK_S` seconds."""

    def __init__(self) -> None:
        self.entries = MAX_GIT_ENTRIES
        self.deadline = time.monotonic() + MAX_CHECK_S
        #: Set when a bound was passed (the verdict is kept: `unsafe_git_files`).
        self.exhausted = False

    def late(self) -> bool:
        return time.monotonic() > self.deadline

    def spend(self, count: int, where: str) -> str:
        """Take ``count`` entries: why the check stops here ("" while within both bounds)."""
        self.entries -= count
        self.exhausted = self.entries < 0 or self.late()
        if self.entries < 0:
            return (
                f"the git directory {where} has more than {MAX_GIT_ENTRIES} entries to check "
                "(run `git gc` to pack loose objects, or run this git command yourself)"
            )
        if self.late():
            return (
                f"checking the git directory took over {MAX_CHECK_S:g} s (at {where}: many links or "
                "entries); remove what a command planted there, or run this git command yourself"
            )
        return ""


def _tree_kind(top: str, budget: _Budget, seen: set[tuple[int, int]]) -> str:
    """Why an entry below ``top`` may block git ("" when each is a regular file or a directory
    after symlinks, or absent). Symlinked directories are walked where they lead, once each;
    past ``budget`` entries: fails closed."""
    pending = [top]
    while pending:
        directory = pending.pop()
        try:
            st = os.stat(directory)
        except OSError:
            continue  # gone: git finds nothing there either
        if (st.st_dev, st.st_ino) in seen:
            continue
        seen.add((st.st_dev, st.st_ino))
        key = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
        cached = _clean_dirs.get(directory)
        if cached is not None and cached[0] == key:
            count, subdirs, why = cached[1], cached[2], ""
        else:
            listed = time.time_ns()
            count, subdirs, why, settled = _list_kinds(directory, budget)
            if settled and listed - max(st.st_mtime_ns, st.st_ctime_ns) > _SETTLED_S * 1e9:
                if len(_clean_dirs) >= _MAX_CLEAN_DIRS:
                    _clean_dirs.clear()
                _clean_dirs[directory] = (key, count, subdirs)
        if why:
            return why
        why = budget.spend(count, top)
        if why:
            return why
        pending.extend(d for d in subdirs if directory != top or os.path.basename(d) not in _SKIPPED_DIRS)
    return ""


def _list_kinds(directory: str, budget: _Budget) -> tuple[int, tuple[str, ...], str, bool]:
    """``(entry count, directories to walk, why an entry may block git, whether the answer
    stays true while the directory is unchanged)`` of one directory. A symlink's target is
    checked (a linked directory walked) where it leads, which may change without the
    directory changing."""
    try:
        entries = list(os.scandir(directory))
    except OSError as exc:
        return 0, (), f"{directory} could not be listed ({exc.strerror})", False
    subdirs: list[str] = []
    settled = True
    for entry in entries:
        if budget.late():
            return len(entries), (), budget.spend(0, directory), False
        if entry.is_dir(follow_symlinks=False):
            subdirs.append(entry.path)
            continue
        if entry.is_file(follow_symlinks=False):
            continue
        why = _kind(entry.path, sys.maxsize, directory_ok=True)
        if why:
            return len(entries), (), why, False
        if entry.is_symlink():
            settled = False
            if os.path.isdir(entry.path):
                subdirs.append(os.path.realpath(entry.path))
    return len(entries), tuple(subdirs), "", settled


#: What git opens in an object directory: the fan-out directories of loose objects, ``pack/``
#: and ``info/`` (commit-graph, alternates).
_OBJECT_DIR_NAMES = re.compile(r"[0-9a-f]{2}|pack|info")


def _objects_kind(objects: str, budget: _Budget, seen: set[tuple[int, int]]) -> str:
    """`_tree_kind` of the parts of an alternate object directory git opens. An alternate names
    any directory (``/usr``): walked whole, 100,000 entries took 0.5-4 s a check."""
    try:
        listed = [e.name for e in os.scandir(objects)]
    except OSError:
        return ""  # not a directory git can list either: it finds no objects there
    why = budget.spend(len(listed), objects)  # every listing counts (an alternate named 100,000 times)
    if why:
        return why
    for name in sorted(n for n in listed if _OBJECT_DIR_NAMES.fullmatch(n)):
        why = _tree_kind(os.path.join(objects, name), budget, seen)
        if why:
            return why
    return ""


def _alternates_kind(objects: str, depth: int, budget: _Budget, seen: set[tuple[int, int]]) -> str:
    """`_tree_kind` of every object directory ``objects/info/alternates`` names, recursively."""
    data = read_regular(os.path.join(objects, "info", "alternates"), MAX_CONFIG_BYTES)
    if not data:
        return ""
    if depth >= _MAX_ALTERNATE_DEPTH:
        return f"{objects}: alternates nested too deeply"
    for raw in data.decode("utf-8", "surrogateescape").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith('"'):
            return f"{objects}/info/alternates: a quoted entry, which is not checked"
        target = os.path.join(objects, line)  # relative entries are relative to ``objects``
        why = budget.spend(1, objects)  # each line costs a resolution, even one git drops as a repeat
        if why:
            return why
        why = _kind(target, MAX_CONFIG_BYTES, directory_ok=True) or _objects_kind(target, budget, seen)
        why = why or _alternates_kind(target, depth + 1, budget, seen)
        if why:
            return why
    return ""


def _kind(path: str, bound: int, *, directory_ok: bool = False) -> str:
    """Why ``path`` may not be opened by git ("" when it is absent, or a regular file
    within ``bound``). Symlinks are followed, as git follows them. A path that leads into
    ``/proc`` (``/proc/self/fd/1``, ``/dev/stdin``) names another file in git than here: git's
    own stdout is the pipe it writes and would block reading (red team round 36); so does one
    resolved through too many links or steps (`sandbox._proclinks`)."""
    if through_proc(path):
        return (
            f"{path} leads into /proc (another file in git's process than here) or through more "
            "links or steps than are followed"
        )
    try:
        st = os.stat(path)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return ""
        if exc.errno == errno.ELOOP:
            return f"{path} is a symlink loop"
        return f"{path} could not be checked ({exc.strerror})"
    if directory_ok and stat.S_ISDIR(st.st_mode):
        return ""
    if not stat.S_ISREG(st.st_mode):
        return f"{path} is not a regular file (a FIFO, device, socket or directory git would block on)"
    if st.st_size > bound:
        return f"{path} is larger than {bound} bytes"
    return ""


def _includes(config: str, depth: int) -> str:
    """The files ``include.path``/``includeIf.*.path`` of ``config`` name, recursively
    (every condition counted as true: fail closed)."""
    if depth > _MAX_INCLUDE_DEPTH:
        return f"{config}: includes nested too deeply"
    data = read_regular(config, MAX_CONFIG_BYTES)
    if data is None or len(data) > MAX_CONFIG_BYTES:
        return _kind(config, MAX_CONFIG_BYTES)
    section = ""
    for raw in data.decode("utf-8", "surrogateescape").splitlines():
        line = raw
        while (head := _SECTION.match(line)) is not None:
            section = head.group(1).lower()
            line = line[head.end() :]
        if section not in ("include", "includeif"):
            continue
        match = _PATH_LINE.match(line)
        if match is None:
            continue
        value = match.group(1)
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        if not value:
            continue
        target = os.path.expanduser(value)
        if not os.path.isabs(target):
            target = os.path.join(os.path.dirname(config), target)
        why = _kind(target, MAX_CONFIG_BYTES)
        if why:
            return f"include.path of {config}: {why}"
        why = _includes(target, depth + 1) if os.path.isfile(target) else ""
        if why:
            return why
    return ""
