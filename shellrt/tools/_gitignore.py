"""A file walker with ripgrep's ignore semantics, for when ripgrep is not installed.

Glob and Grep must return the same results with and without ripgrep, so this
module reproduces what ``rg --files --hidden --no-require-git
--no-ignore-global -g '!.git'`` lists (the flags `shellrt.tools.grep` passes):

- ``.gitignore``, ``.ignore`` and ``.rgignore`` files in the searched tree and
  in every ancestor of the search root, plus ``.git/info/exclude`` of any
  directory with a ``.git`` (git files stop applying above the nearest
  repository root; ``.ignore`` files do not); kinds have precedence (``.rgignore`` > ``.ignore``
  > ``.gitignore`` > exclude), and within a kind the nearest directory with a
  matching pattern decides, the last matching line of its file winning;
- gitignore glob syntax as ripgrep's ``globset`` reads it (``*`` never crosses
  ``/``, ``**`` components, ``[...]`` classes, ``{a,b}`` alternates, ``\\``
  escapes, ``!`` negation, trailing ``/`` for directories, a leading or inner
  ``/`` anchoring the pattern to its file's directory);
- ``-g`` override globs take precedence over ignore files (a whitelist glob
  re-includes an ignored file; with any whitelist glob a non-matching file is
  skipped), then ``--type`` filters by file name;
- ignored directories are not entered; symlinks, FIFOs, sockets and devices
  are never listed (ripgrep does not follow links by default).
"""

from __future__ import annotations

import itertools
import os
import re
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from sandbox._namefold import fold_path
from shellrt.permissions.globs import GlobMatcher, GlobTimeoutError, compile_matcher, reversed_range
from shellrt.tools._dirs_below import DirsBelow, plain_relative

__all__ = [
    "FILE_TYPES",
    "Fence",
    "GlobList",
    "GlobSyntaxError",
    "TypeFilter",
    "compile_glob",
    "gitfile_along",
    "odd_ignore_file",
    "walk_entries",
    "walk_files",
]

Match = Literal["ignore", "whitelist"] | None

#: File types for Grep's ``type`` (globs on the file name), passed to ripgrep with ``--type-add``
#: as well, so both backends use the same definitions whatever ripgrep version is installed.
FILE_TYPES: dict[str, tuple[str, ...]] = {
    "c": ("*.[chH]", "*.[chH].in", "*.cats"),
    "cpp": (
        "*.[ChH]",
        "*.[ChH].in",
        "*.[ch]pp",
        "*.[ch]pp.in",
        "*.[ch]xx",
        "*.[ch]xx.in",
        "*.cc",
        "*.cc.in",
        "*.hh",
        "*.hh.in",
        "*.inl",
    ),
    "cs": ("*.cs",),
    "css": ("*.css", "*.scss"),
    "dart": ("*.dart",),
    "elixir": ("*.eex", "*.ex", "*.exs"),
    "go": ("*.go",),
    "h": ("*.h", "*.hpp"),
    "html": ("*.ejs", "*.htm", "*.html"),
    "java": ("*.java", "*.jsp", "*.jspx", "*.properties"),
    "js": ("*.js", "*.jsx", "*.vue", "*.mjs", "*.cjs"),
    "json": ("*.json", "composer.lock"),
    "jsonl": ("*.jsonl",),
    "kotlin": ("*.kt", "*.kts"),
    "lua": ("*.lua",),
    "make": ("*.mak", "*.mk", "[Gg][Nn][Uu]makefile", "[Mm]akefile"),
    "md": ("*.markdown", "*.md", "*.mdown", "*.mkdn"),
    "markdown": ("*.markdown", "*.md", "*.mdown", "*.mkdn"),
    "php": ("*.php", "*.php3", "*.php4", "*.php5", "*.phtml"),
    "proto": ("*.proto",),
    "py": ("*.py", "*.pyi"),
    "python": ("*.py", "*.pyi"),
    "r": ("*.R", "*.Rmd", "*.Rnw", "*.r"),
    "rst": ("*.rst",),
    "ruby": ("*.gemspec", "*.rb", "*.rbw", "Gemfile", "Rakefile"),
    "rust": ("*.rs",),
    "scala": ("*.sbt", "*.scala"),
    "sh": ("*.bash", "*.sh", "*.zsh", "*.ksh", ".bashrc", ".zshrc", ".profile"),
    "sql": ("*.psql", "*.sql"),
    "swift": ("*.swift",),
    "tex": ("*.bib", "*.cls", "*.sty", "*.tex"),
    "tf": ("*.tf", "*.tfvars"),
    "toml": ("*.toml", "Cargo.lock"),
    "ts": ("*.ts", "*.tsx", "*.mts", "*.cts"),
    "txt": ("*.txt",),
    "xml": ("*.dtd", "*.xhtml", "*.xml", "*.xsd", "*.xsl", "*.xslt"),
    "yaml": ("*.yaml", "*.yml"),
    "zig": ("*.zig",),
}

_IGNORE_KINDS = (".rgignore", ".ignore", ".gitignore")
#: The names a directory's rules depend on (`_load_dir_rules`'s ``present``).
_WATCHED = frozenset((*_IGNORE_KINDS, ".git"))
#: Ignore files are parsed up to this many bytes: they are the repository's (a command's) to write,
#: and the walker runs on the host (a sparse ``truncate -s 3G .gitignore`` was read whole).
_MAX_IGNORE_BYTES = 1 << 20
#: Rules one walk obeys at most, over all its ignore files. Each rule is compiled and tried against
#: every path the walk meets (in Python: ~30 µs per try), so a flood of them held the host for
#: minutes; real repositories have a few hundred. Past it the walk stops (`TooManyIgnoreRulesError`).
MAX_IGNORE_RULES = 10_000
#: A longer line is no rule (a path has at most 4096 bytes; the matcher's cost grows with the glob).
_MAX_RULE_CHARS = 4096


class WalkTimeoutError(Exception):
    """Raised by a walk given a ``deadline`` (`time.monotonic`) that it passed."""


class TooManyIgnoreRulesError(Exception):
    """Raised by a walk whose ignore files hold more than `MAX_IGNORE_RULES` rules in all."""

    def __init__(self, where: str) -> None:
        super().__init__(
            f"the ignore files (.gitignore, .ignore, .rgignore) under {where} hold more than "
            f"{MAX_IGNORE_RULES:,} rules; search or list there with Bash instead (e.g. `find`, `grep -r`)"
        )


# --- glob syntax: the one dialect, owned by shellrt.permissions.globs -----------------------


class GlobSyntaxError(ValueError):
    """A glob that cannot be compiled (a reversed class range, ``[z-a]``); the message names it."""


def compile_glob(glob: str) -> GlobMatcher:
    """Compile a glob (globset syntax, ``*`` not crossing ``/``) to a whole-string matcher
    (never a backtracking regex: a repository's .gitignore is hostile input).

    Raises `GlobSyntaxError`: a class ``re`` refuses escaped as a bare ``re.error`` and crashed
    the call (round 32)."""
    bad = reversed_range(glob)
    if bad is not None:
        raise GlobSyntaxError(f"invalid glob {glob!r}: the class range {bad} is reversed (write it low-high)")
    try:
        return compile_matcher(glob)
    except re.error as exc:
        raise GlobSyntaxError(f"invalid glob {glob!r}: {exc.msg}") from None


@dataclass(frozen=True)
class _Rule:
    regex: GlobMatcher
    whitelist: bool
    dir_only: bool
    #: How many last components of a path the rule is matched against (0: the whole path). An
    #: unanchored rule (``*.pyc``) or one opening with ``**/`` whose rest has k components and no
    #: other ``**`` (``**/build/*``) names the last k components at any depth, so only those are
    #: matched (git and ripgrep never let ``*``, ``?`` or a class match ``/``). Matching ``**/X``
    #: against the whole path cost each rule the path's length, at every level with an ignore file,
    #: for every entry: a deep chain made that cubic (red team round 27).
    tail: int = 0


def _parse_line(line: str) -> _Rule | None:
    """One gitignore line, as ripgrep's ``ignore`` crate reads it: one it cannot compile is
    skipped, as ripgrep skips it (a repository's ``[z-a]`` line crashed every walk, round 32)."""
    try:
        return _parse_rule(line)
    except GlobSyntaxError:
        return None


def _parse_rule(line: str) -> _Rule | None:
    if line.startswith("#"):
        return None
    if not line.endswith("\\ "):
        line = line.rstrip(" \t")
    if not line:
        return None
    whitelist = False
    if line.startswith("!"):
        whitelist, line = True, line[1:]
    elif line.startswith(("\\!", "\\#")):
        line = line[1:]
    anchored = False
    if line.startswith("/"):
        anchored, line = True, line[1:]
    dir_only = False
    if line.endswith("/"):
        dir_only, line = True, line[:-1]
        if not line:
            return None
    rest = line
    while rest.startswith("**/"):
        rest = rest[3:]
    several = "/" in rest  # then no alternate or class either: one may hold a "/" of its own
    if not anchored and rest and "**" not in rest and (rest != line or not several) and not (
        several and ("{" in rest or "[" in rest)
    ):
        return _Rule(compile_glob(rest), whitelist, dir_only, tail=rest.count("/") + 1)
    if not anchored and "/" not in line and not line.startswith("**"):
        line = "**/" + line
    return _Rule(compile_glob(line), whitelist, dir_only)


@dataclass
class GlobList:
    """An ordered list of gitignore-syntax globs rooted at one directory; the last match decides."""

    rules: list[_Rule] = field(default_factory=list)

    @classmethod
    def parse(cls, lines: Sequence[str], limit: int | None = None) -> GlobList:
        """The rules of ``lines`` (a line over `_MAX_RULE_CHARS` is skipped); with ``limit``, at most
        that many are compiled (the rest unread)."""
        parsed = (_parse_line(ln) for ln in lines if len(ln) <= _MAX_RULE_CHARS)
        rules = (r for r in parsed if r is not None)
        return cls(list(itertools.islice(rules, limit)))

    @property
    def num_ignores(self) -> int:
        return sum(1 for r in self.rules if not r.whitelist)

    def matched(self, rel: str, is_dir: bool, deadline: float | None = None) -> Match:
        """The last rule's verdict on ``rel``; `GlobTimeoutError` past ``deadline`` (a rule of a
        hostile ignore file can cost ~30 ms a name, and a directory may hold 10,000 of them)."""
        parts: list[str] | None = None
        for rule in reversed(self.rules):
            if rule.dir_only and not is_dir:
                continue
            target = rel
            if rule.tail:
                parts = rel.split("/") if parts is None else parts
                if len(parts) < rule.tail:
                    continue
                target = "/".join(parts[-rule.tail :]) if rule.tail > 1 else parts[-1]
            if rule.regex.fullmatch(target, deadline):
                return "whitelist" if rule.whitelist else "ignore"
        return None


@dataclass(frozen=True)
class TypeFilter:
    """``--type`` selection: files whose name matches one of the type's globs."""

    globs: tuple[GlobMatcher, ...]

    @classmethod
    def for_type(cls, name: str) -> TypeFilter:
        return cls(tuple(compile_glob(g) for g in FILE_TYPES[name]))

    def matched(self, name: str, is_dir: bool) -> Match:
        if is_dir:
            return None
        return "whitelist" if any(g.match(name) for g in self.globs) else "ignore"


# --- the walk ----------------------------------------------------------------------


@dataclass
class _DirRules:
    directory: str
    by_kind: dict[str, GlobList]
    exclude: GlobList | None
    #: A repository root: .gitignore files above it do not apply below it (.ignore files still do).
    has_git: bool = False


def _read_rules(dir_fd: int, *names: str) -> GlobList | None:
    """Parse the ignore file ``names`` below the directory ``dir_fd``, following no symlink on the way."""
    fd = os.dup(dir_fd)
    try:
        for i, name in enumerate(names):
            last = i == len(names) - 1
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_NONBLOCK if last else os.O_DIRECTORY)
            try:
                nfd = os.open(name, flags, dir_fd=fd)
            except OSError:
                return None
            os.close(fd)
            fd = nfd
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.pread(fd, _MAX_IGNORE_BYTES, 0)  # bounded: never the whole of a sparse file
    except OSError:
        return None
    finally:
        os.close(fd)
    lines = data.decode("utf-8", errors="replace").removeprefix("\ufeff").splitlines()
    return GlobList.parse(lines, MAX_IGNORE_RULES + 1)  # one more than a walk obeys: it then stops


#: How an ancestor of a walk's root is opened: ``O_PATH`` needs no read permission on it, as
#: ripgrep's and git's reads by path need none: opened ``O_RDONLY``, a directory the caller may
#: search but not list (``chmod 711``: a shared home; a workspace root a command chmods) gave no
#: rules -- the walker listed what ripgrep hid, and the guard missed a linked ignore file there,
#: which ripgrep then obeyed (red team round 46, review25).
_ANCESTOR_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC


def _load_dir_rules(
    directory: str, dir_fd: int | None = None, present: Mapping[str, os.DirEntry[str]] | None = None
) -> _DirRules:
    """The rules of ``directory``'s ignore files, each read through ``dir_fd`` (or the directory
    opened by its path: an ancestor of the walk's root) without following a link. An ancestor's
    were read by path, following links: ``.gitignore -> secrets/key.txt`` made every search below
    the workspace obey a masked file's lines (red team round 45). ``present``: the directory's
    entries named like an ignore file or ``.git`` (`_WATCHED`), as the walk listed it: no other
    name is tried (4 failed opens a directory were a third of a walk's time)."""
    if dir_fd is None:
        try:
            opened = os.open(directory, _ANCESTOR_FLAGS)
        except OSError:
            return _DirRules(directory, {}, None)
        try:
            return _load_dir_rules(directory, opened)
        finally:
            os.close(opened)
    by_kind: dict[str, GlobList] = {}
    for kind in _IGNORE_KINDS:
        parsed = None if present is not None and kind not in present else _read_rules(dir_fd, kind)
        if parsed is not None and parsed.rules:
            by_kind[kind] = parsed
    if present is not None:
        has_git = ".git" in present
    else:
        try:
            os.stat(".git", dir_fd=dir_fd, follow_symlinks=False)
            has_git = True
        except OSError:
            has_git = False
    exclude = _read_rules(dir_fd, ".git", "info", "exclude") if has_git else None
    return _DirRules(directory, by_kind, exclude if exclude and exclude.rules else None, has_git)


def _no_rules(
    directory: str, dir_fd: int | None = None, present: Mapping[str, os.DirEntry[str]] | None = None
) -> _DirRules:
    """A directory's rules when ignore files are not obeyed: none."""
    return _DirRules(directory, {}, None)


class _RuleBudget:
    """Counts the ignore rules one walk has loaded; raises past `MAX_IGNORE_RULES`."""

    def __init__(self, root: str) -> None:
        self._root = root
        self._used = 0

    def charge(self, rules: _DirRules) -> _DirRules:
        self._used += sum(len(g.rules) for g in rules.by_kind.values())
        self._used += len(rules.exclude.rules) if rules.exclude is not None else 0
        if self._used > MAX_IGNORE_RULES:
            raise TooManyIgnoreRulesError(self._root)
        return rules


def _ignored(abs_path: str, is_dir: bool, chain: Sequence[_DirRules], deadline: float | None = None) -> Match:
    """Ignore-file verdict: per kind, nearest directory first; kinds in precedence order."""
    found: dict[str, Match] = {}
    saw_git = False
    for rules in reversed(chain):
        if not rules.by_kind and (saw_git or rules.exclude is None):
            # Nothing to match here: no path worked out (round 27: a `relpath` per directory above
            # every entry, each as long as the path, made a 300-deep chain cost a walk 15-25 s).
            saw_git = saw_git or rules.has_git
            continue
        rel = _relative(abs_path, rules.directory)
        for kind, globs in rules.by_kind.items():
            if kind == ".gitignore" and saw_git:
                continue
            if found.get(kind) is None:
                found[kind] = globs.matched(rel, is_dir, deadline)
        if not saw_git and found.get("exclude") is None and rules.exclude is not None:
            found["exclude"] = rules.exclude.matched(rel, is_dir, deadline)
        saw_git = saw_git or rules.has_git
    for kind in (*_IGNORE_KINDS, "exclude"):
        verdict = found.get(kind)
        if verdict is not None:
            return verdict
    return None


def _relative(path: str, directory: str) -> str:
    """``os.path.relpath(path, directory)``; a slice when ``path`` is spelt below ``directory``,
    as the walk spells it (relpath splits and joins both whole)."""
    prefix = directory if directory.endswith("/") else directory + "/"
    if path.startswith(prefix) and "/./" not in path and "/../" not in path and prefix.startswith("/"):
        return path[len(prefix):]
    return os.path.relpath(path, directory)


def _skip(
    abs_path: str,
    rel: str,
    name: str,
    is_dir: bool,
    chain: Sequence[_DirRules],
    overrides: GlobList | None,
    types: TypeFilter | None,
    deadline: float | None = None,
) -> bool:
    if overrides is not None and overrides.rules:
        verdict = overrides.matched(rel, is_dir, deadline)
        # Overrides are written as "-g glob" = include; stored un-inverted, so invert here.
        if verdict == "ignore":
            return False
        if verdict == "whitelist":
            return True
        if overrides.num_ignores > 0 and not is_dir:
            return True
    if _ignored(abs_path, is_dir, chain, deadline) == "ignore":
        return True
    return types is not None and types.matched(name, is_dir) == "ignore"


def selected(rel: str, overrides: GlobList | None, types: TypeFilter | None) -> bool:
    """Whether the walk's globs and type (not ignore files) let it reach the file ``rel``: each
    parent directory, then the file, judged as `walk_entries` judges them."""
    parts = rel.split("/")
    for depth in range(1, len(parts) + 1):
        is_dir = depth < len(parts)
        if _skip("", "/".join(parts[:depth]), parts[depth - 1], is_dir, (), overrides, types):
            return False
    return True


def ancestors_below(root: Path, top: str | None) -> list[str]:
    """The ancestors of ``root`` whose ignore files a walk obeys, outermost first: all of them, or
    with ``top`` only ``top`` and those below it. A docker session's walk runs on the host directory
    behind ``/workspace``, whose host parents (``/home/alice/.gitignore``) the container never
    sees: their rules shaped its answers (red team round 45); `search_top` gives that directory."""
    return [str(p) for p in reversed(root.parents) if top is None or _within(str(p), top)]


def _within(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


#: Levels of directories the walk descends (it holds one fd per level of its current path).
MAX_WALK_DEPTH = 512


def walk_entries(
    root: Path,
    *,
    overrides: GlobList | None = None,
    types: TypeFilter | None = None,
    root_fd: int | None = None,
    deadline: float | None = None,
    obey_ignores: bool = True,
    skip: Iterable[str] = (),
    dirs_only: bool = False,
    look: Callable[[int, str, Mapping[str, os.DirEntry[str]] | None], None] | None = None,
    top: str | None = None,
) -> Iterator[tuple[str, int, str]]:
    """``(relative path, parent dir fd, name)`` of the regular files ripgrep would list under ``root``.

    The walk holds directory fds and never follows a symlink (each directory is
    opened ``O_NOFOLLOW`` relative to its parent), so a directory swapped for a
    symlink mid-walk cannot lead it out of ``root``. It is depth first and opens a
    subdirectory only when it enters it: the fds it holds are those of the path it
    is on (at most `MAX_WALK_DEPTH`), never one per directory seen -- a directory of
    thousands of subdirectories would otherwise use up the host process's fds (every
    session's). ``root_fd`` (a directory fd, not consumed) anchors it; ``root`` then
    only names it for ignore-rule matching. The parent fd is valid until the next
    item is requested. Ignore files are the repository's: each is read up to
    `_MAX_IGNORE_BYTES`, and past `MAX_IGNORE_RULES` rules in all the walk raises
    `TooManyIgnoreRulesError`. Past ``deadline`` (`time.monotonic`) it raises `WalkTimeoutError`.
    ``obey_ignores=False``: no ignore file is read (ripgrep's ``--no-ignore``; `shellrt.tools._tracked`).
    ``skip``: places below ``root`` (relative) that are neither listed nor entered -- the session's
    masked ones, matched as spelt and case-folded (`View.masked_by` folds): a walk that entered
    one read its names and ignore files, and their counts reached the model (red team round 42).
    ``dirs_only``: only the directories are judged and entered, no file is yielded; ``look`` is
    given each directory whose ignore files are read (ancestors first; fd, path, and its entries
    named in `_WATCHED`, None for an ancestor, which is not listed) before they are.
    ``top``: the highest ancestor whose ignore files are read (`ancestors_below`).
    """
    root_s = str(root)
    fenced = Fence(skip)
    budget = _RuleBudget(root_s)
    ancestors = ancestors_below(root, top)
    plain = _load_dir_rules if obey_ignores else _no_rules

    def ancestor(directory: str) -> _DirRules:
        if look is None:
            return plain(directory)
        try:
            dir_fd = os.open(directory, _ANCESTOR_FLAGS)
        except OSError:
            return _no_rules(directory)
        try:
            look(dir_fd, directory, None)
            return plain(directory, dir_fd)
        finally:
            os.close(dir_fd)

    def enter(dir_fd: int, directory: str, chain: list[_DirRules]) -> tuple[list[_DirRules], list[os.DirEntry[str]]]:
        entries = _listing(dir_fd, directory, deadline, dirs_only)
        present = {e.name: e for e in entries if e.name in _WATCHED}
        if look is not None:
            look(dir_fd, directory, present)
        return [*chain, budget.charge(plain(directory, dir_fd, present))], entries

    base_chain = [budget.charge(ancestor(a)) for a in ancestors]
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW
    top_fd = os.dup(root_fd) if root_fd is not None else os.open(root_s, flags & ~os.O_NOFOLLOW)
    try:
        chain, entries = enter(top_fd, root_s, base_chain)
    except BaseException:
        os.close(top_fd)
        raise
    #: The path being walked: (fd, directory, relative dir, rule chain, subdirectories still to enter).
    path: list[tuple[int, str, str, list[_DirRules], list[str]]] = []
    try:
        path.append((top_fd, root_s, "", chain, []))
        files, subdirs = _list_dir(entries, root_s, "", chain, overrides, types, deadline, fenced, dirs_only)
        path[-1] = (top_fd, root_s, "", chain, subdirs)
        for name in files:
            yield name, top_fd, name
        while path:
            dfd, directory, rel_dir, chain, subdirs = path[-1]
            if not subdirs or len(path) >= MAX_WALK_DEPTH:
                os.close(dfd)
                path.pop()
                continue
            name = subdirs.pop()
            try:
                child = os.open(name, flags, dir_fd=dfd)
            except OSError:
                continue
            abs_path, rel = os.path.join(directory, name), f"{rel_dir}{name}/"
            path.append((child, abs_path, rel, chain, []))
            child_chain, entries = enter(child, abs_path, chain)
            files, grandchildren = _list_dir(
                entries, abs_path, rel, child_chain, overrides, types, deadline, fenced, dirs_only
            )
            path[-1] = (child, abs_path, rel, child_chain, grandchildren)
            for file_name in files:
                yield f"{rel}{file_name}", child, file_name
    finally:
        for dfd, *_ in path:
            os.close(dfd)


#: Entries a listing reads between two looks at its deadline.
_LISTING_BATCH = 1024


def _listing(
    dfd: int, directory: str = "", deadline: float | None = None, dirs_only: bool = False
) -> list[os.DirEntry[str]]:
    """The entries of the open directory (none when it cannot be listed); with ``dirs_only`` only
    its directories and the names in `_WATCHED`. Past ``deadline`` it raises `WalkTimeoutError`,
    looking every `_LISTING_BATCH` entries. Round 45's guard walk (``dirs_only``) listed a
    directory whole -- every file's entry in memory at once, the deadline looked at only after:
    300,000 files in one directory, which a command makes, cost 57 MB a search in the shellrt
    process (red team round 46, review25)."""
    kept: list[os.DirEntry[str]] = []
    try:
        with os.scandir(dfd) as listing:
            for count, entry in enumerate(listing, 1):
                if deadline is not None and count % _LISTING_BATCH == 0 and time.monotonic() > deadline:
                    raise WalkTimeoutError(directory)
                if dirs_only and entry.name not in _WATCHED and not _is_dir(entry):
                    continue
                kept.append(entry)
    except OSError:
        return []
    return kept


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _list_dir(
    entries: list[os.DirEntry[str]],
    directory: str,
    rel_dir: str,
    chain: list[_DirRules],
    overrides: GlobList | None,
    types: TypeFilter | None,
    deadline: float | None = None,
    fenced: Fence | None = None,
    dirs_only: bool = False,
) -> tuple[list[str], list[str]]:
    """``(files, subdirectories)`` of a directory's ``entries`` that the walk keeps (names, sorted
    descending for subdirectories: they are popped from the end); a ``fenced`` name is left out
    unlooked at."""
    files: list[str] = []
    subdirs: list[str] = []
    for entry in entries:
        if deadline is not None and time.monotonic() > deadline:
            raise WalkTimeoutError(directory)
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
            is_file = entry.is_file(follow_symlinks=False)
        except OSError:
            continue
        if not (is_dir or is_file) or (dirs_only and not is_dir):
            continue
        if fenced and fenced.holds(f"{rel_dir}{entry.name}"):
            continue
        try:
            skip = _skip(
                os.path.join(directory, entry.name),
                f"{rel_dir}{entry.name}",
                entry.name,
                is_dir,
                chain,
                overrides,
                types,
                deadline,
            )
        except GlobTimeoutError:
            # Between entries is not enough: one entry against a hostile ignore file's rules took
            # minutes in the host's thread (red team round 19).
            raise WalkTimeoutError(directory) from None
        if skip:
            continue
        (subdirs if is_dir else files).append(entry.name)
    subdirs.reverse()
    return files, subdirs


class Fence:
    """The places a walk must not enter or list (`walk_entries`'s ``skip``), as spelt and folded."""

    def __init__(self, places: Iterable[str]) -> None:
        spelt = {os.path.normpath(p) for p in places}
        self._places = frozenset(spelt | {fold_path(p) for p in spelt})

    def __bool__(self) -> bool:
        return bool(self._places)

    def holds(self, rel: str) -> bool:
        """Whether the entry ``rel`` (relative to the walk's root) is one of the places: its parent
        was entered, so none above it is."""
        return rel in self._places or fold_path(rel) in self._places

    def covers(self, rel: str) -> bool:
        """Whether ``rel`` is one of the places or lies below one (a tracked name the index gives)."""
        if not self._places:
            return False
        parts = rel.split("/")
        return any(self.holds("/".join(parts[:n])) for n in range(1, len(parts) + 1))


def walk_files(
    root: Path,
    *,
    overrides: GlobList | None = None,
    types: TypeFilter | None = None,
    root_fd: int | None = None,
    deadline: float | None = None,
    obey_ignores: bool = True,
    skip: Iterable[str] = (),
    top: str | None = None,
) -> Iterator[str]:
    """Relative POSIX paths of the regular files ripgrep would list under ``root`` (unsorted)."""
    entries = walk_entries(
        root,
        overrides=overrides,
        types=types,
        root_fd=root_fd,
        deadline=deadline,
        obey_ignores=obey_ignores,
        skip=skip,
        top=top,
    )
    for rel, _, _ in entries:
        yield rel



class _OddIgnoreFile(Exception):
    """Raised out of `odd_ignore_file`'s walk at the first ignore file ripgrep would read otherwise."""


#: Bytes of a ``.git`` file read for its ``gitdir:`` line (git writes one short line).
_MAX_GITFILE_BYTES = 4096


def _gitfile_commondir(dir_fd: int, directory: str, cwd: str) -> bool:
    """Whether ripgrep may obey a ``commondir``'s ``info/exclude`` through the ``.git`` *file* of
    ``directory`` (``dir_fd``), which the walker never reads (red team round 47).

    ripgrep (13) reads such a file's first line, ``gitdir: <dir>``, and when ``<dir>/commondir``
    opens obeys ``<its first line>/info/exclude``: wherever the two point. ``<dir>`` relative is
    taken from ripgrep's working directory (``cwd``); git's reading (from ``directory``) is looked at
    too. True (fail closed) for a ``.git`` file it cannot read, a first line longer than it reads,
    or a ``commondir`` that exists or cannot be told absent there; False when ripgrep reads none."""
    try:
        fd = os.open(".git", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return True
    try:
        data = os.pread(fd, _MAX_GITFILE_BYTES, 0) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    except OSError:
        return True
    finally:
        os.close(fd)
    line, newline, _ = data.partition(b"\n")
    if not newline and len(data) >= _MAX_GITFILE_BYTES:
        return True  # a first line longer than read: what follows is unknown
    if not line.startswith(b"gitdir: "):
        return False  # ripgrep stops at it ("no gitdir"), reading no exclude file
    gitdir = os.fsdecode(line.removesuffix(b"\r")[len(b"gitdir: ") :])
    bases = (gitdir,) if os.path.isabs(gitdir) else (os.path.join(cwd, gitdir), os.path.join(directory, gitdir))
    for base in bases:
        try:
            os.lstat(os.path.join(base, "commondir"))
        except (FileNotFoundError, NotADirectoryError):
            continue  # absent: ripgrep reads no exclude file through it
        except (OSError, ValueError):
            pass  # cannot be told absent (a NUL in the name is no path for ripgrep either)
        return True
    return False


def _odd_here(
    dir_fd: int,
    present: Mapping[str, os.DirEntry[str]] | None,
    directory: str = "",
    cwd: str = "",
    read_exclude: bool = True,
) -> str | None:
    """The first ignore file of the directory ``dir_fd`` that ripgrep would read otherwise than
    `_load_dir_rules` does: one that is not a regular file (ripgrep follows a link, and blocks on
    a FIFO) or is longer than the walker reads; ``.git`` or ``.git/info`` that is a link (ripgrep
    reads ``.git/info/exclude`` through it); a ``.git`` file through which ripgrep may read a
    worktree's common exclude file (`_gitfile_commondir`; ``directory``: its path, ``cwd``:
    ripgrep's working directory, the walk's root). ``present``: the entries named in `_WATCHED`
    (None: each name is looked up). None when there is none. ``read_exclude=False``: ripgrep runs
    with ``--no-ignore-exclude`` (`gitfile_along`) and reads no exclude file, through a ``.git``
    file or link or not: then only a ``.git/info/exclude`` whose rules the walker obeys differs."""
    for name in _IGNORE_KINDS:
        try:
            if present is None:
                found = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            elif name in present:
                found = present[name].stat(follow_symlinks=False)
            else:
                continue
        except OSError:
            continue
        if not stat.S_ISREG(found.st_mode) or found.st_size > _MAX_IGNORE_BYTES:
            return name
    if present is not None and ".git" not in present:
        return None
    if not read_exclude:
        walker_reads = _read_rules(dir_fd, ".git", "info", "exclude")
        return ".git/info/exclude" if walker_reads is not None and walker_reads.rules else None
    for name in (".git", ".git/info", ".git/info/exclude"):
        try:
            found = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            return None  # missing
        if name == ".git" and stat.S_ISREG(found.st_mode):
            return ".git" if _gitfile_commondir(dir_fd, directory, cwd) else None
        if stat.S_ISLNK(found.st_mode):
            return name
        if name.endswith("exclude") and (not stat.S_ISREG(found.st_mode) or found.st_size > _MAX_IGNORE_BYTES):
            return name
    return None


def gitfile_along(root: Path, root_fd: int | None = None, top: str | None = None) -> bool:
    """Whether ``root`` (``root_fd``) or an ancestor whose ignore files a walk reads
    (`ancestors_below`) holds a ``.git`` that is no directory: a linked worktree's or a submodule's
    file, or a link. A search there runs ripgrep with ``--no-ignore-exclude``: through a worktree's
    ``.git`` file ripgrep obeys ``<commondir>/info/exclude`` (the main repository's, outside the
    worktree), which the walker never reads; told so, it reads none, and the guard sends the search
    to the walker only where the walker obeys a ``.git/info/exclude`` (red team round 47: walking
    every worktree's searches instead cost a Grep 0.7 -> 2.2 s on this repository)."""
    for directory in ancestors_below(root, top):
        try:
            found = os.stat(os.path.join(directory, ".git"), follow_symlinks=False)
        except (OSError, ValueError):
            continue
        if not stat.S_ISDIR(found.st_mode):
            return True
    try:
        if root_fd is not None:
            found = os.stat(".git", dir_fd=root_fd, follow_symlinks=False)
        else:
            found = os.stat(root / ".git", follow_symlinks=False)
    except (OSError, ValueError):
        return False
    return not stat.S_ISDIR(found.st_mode)


def odd_ignore_file(
    root: Path,
    *,
    root_fd: int | None = None,
    deadline: float | None = None,
    skip: Iterable[str] = (),
    top: str | None = None,
    read_exclude: bool = True,
) -> str | None:
    """The first ignore file that ``rg --files`` below ``root`` would read otherwise than the
    walker (`_odd_here`), in the root's ancestors or the directories it enters; None when ripgrep
    reads the same rules the walker does. It walks the directories only, as `walk_entries` judges
    them (the walker enters every directory ripgrep enters: a link it does not follow hides
    nothing from it); past `MAX_IGNORE_RULES` it raises `TooManyIgnoreRulesError`, past
    ``deadline`` `WalkTimeoutError`, as the walk does.

    Why (red team round 45): ripgrep follows a linked ignore file and obeys ignore files of any
    size, so ``.gitignore -> keys/id.pem`` (a rule-denied file) or ``-> ~/.netrc`` made which
    names a search listed tell the file's lines, and a tree past the walker's rule bound was
    answered by ripgrep and refused by the walker. Where this names a file, the walker answers.
    ``read_exclude``: whether ripgrep reads exclude files (see `_odd_here`).
    """

    def look(dir_fd: int, directory: str, present: Mapping[str, os.DirEntry[str]] | None) -> None:
        odd = _odd_here(dir_fd, present, directory, str(root), read_exclude)
        if odd is not None:
            raise _OddIgnoreFile(os.path.join(directory, odd))

    try:
        walk = walk_entries(
            root, overrides=GlobList.parse(["!.git"]), root_fd=root_fd, deadline=deadline, skip=skip,
            dirs_only=True, look=look, top=top,
        )
        for _ in walk:
            pass
    except _OddIgnoreFile as exc:
        return str(exc)
    return None


#: Directories holding tracked files `rules_along` looks in; past this it answers True.
MAX_RULE_DIRECTORIES = 20_000


def rules_along(root: Path, root_fd: int, names: Iterable[str], top: str | None = None) -> bool:
    """Whether any ignore rule could hide one of ``names`` (relative to ``root``) from
    `walk_entries`: an ignore file (or ``.git/info/exclude``) with rules above ``root`` or in a
    directory on the way to one of them (each opened below ``root_fd`` without following a
    symlink). Why: the whole-tree listing that finds hidden tracked files cost every Grep
    ~100 ms (round 36, files2); with no rule on their way nothing can hide them. Doubt (too
    many directories, too many rules) answers True: the caller lists the tree."""
    root_s = str(root)
    try:
        budget = _RuleBudget(root_s)
        for a in ancestors_below(root, top):
            if _has_rules(budget.charge(_load_dir_rules(a))):
                return True
        if _has_rules(budget.charge(_load_dir_rules(root_s, root_fd))):
            return True
        # Each directory once, in sorted order, each opened from its parent (`DirsBelow`): per
        # name, the cost was its depth in opens and its length per level (round 36, review3).
        parents = sorted({rel.rpartition("/")[0] for rel in names if plain_relative(rel)} - {""})
        dirs = DirsBelow(root_fd, MAX_RULE_DIRECTORIES)
        try:
            for parent in parents:
                parts = parent.split("/")

                def opened(depth: int, fd: int, parts: list[str] = parts) -> None:
                    rel_dir = "/".join(parts[:depth])
                    if _has_rules(budget.charge(_load_dir_rules(os.path.join(root_s, rel_dir), fd))):
                        raise _RuleFound

                dirs.enter(parts, opened)
                if dirs.spent:
                    return True
        finally:
            dirs.close()
    except _RuleFound:
        return True
    except TooManyIgnoreRulesError:
        return True
    return False


class _RuleFound(Exception):
    """Raised out of a `DirsBelow` walk by `rules_along` at the first rule found."""


def _has_rules(rules: _DirRules) -> bool:
    return bool(rules.by_kind) or rules.exclude is not None
