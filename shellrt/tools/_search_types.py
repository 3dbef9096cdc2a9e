"""The query and hit types both search backends (ripgrep, pure Python) share."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "KEPT_LINE_CHARS",
    "MAX_HIT_LINES",
    "MAX_LISTED_FILES",
    "FileHits",
    "GrepQuery",
    "TooManyHitsError",
    "too_many_files",
    "too_many_hits",
]

#: Characters of a hit's line a search keeps: the tool shows 500 (then "… [truncated]"), so more
#: is never needed -- and a whole line can be a megabyte, hard-linked a thousand times.
KEPT_LINE_CHARS = 512
#: Lines (matches and context) one search may hold; past this the search stops (`too_many_hits`):
#: the host's memory is bounded by this, not by what the files hold.
MAX_HIT_LINES = 100_000


#: Paths one listing (Glob, Grep's file list) may hold: hard links make a million names cost no
#: inode, and each name costs the host's memory.
MAX_LISTED_FILES = 1_000_000


def too_many_files(root: object) -> str:
    """What the model is told when a listing passed `MAX_LISTED_FILES`."""
    return (
        f"More than {MAX_LISTED_FILES:,} files under {root}; the listing stopped. Search a smaller "
        "directory (`path`, or a fixed prefix in the pattern)."
    )


class TooManyHitsError(Exception):
    """Raised by a search that found more than `MAX_HIT_LINES` lines to keep."""


def too_many_hits() -> str:
    """What the model is told when a search found more than `MAX_HIT_LINES` lines."""
    return (
        f"The search found more than {MAX_HIT_LINES:,} lines to show and stopped. Narrow it: a more "
        "specific pattern, a `path`, `glob` or `type`, or output_mode files_with_matches."
    )


@dataclass(frozen=True)
class GrepQuery:
    """One search; ``root`` is a directory, or ``single_file`` names the one file to search."""

    pattern: str
    root: Path
    single_file: Path | None = None
    globs: tuple[str, ...] = ()
    file_type: str | None = None
    ignore_case: bool = False
    multiline: bool = False
    before: int = 0
    after: int = 0
    #: Only which files match is needed (stop at the first match).
    files_only: bool = False
    #: Directory fd anchoring ``root`` (opened through `sandbox.confine`; not owned by the query).
    root_fd: int | None = None
    #: Open fd of ``single_file`` (opened through `sandbox.confine`; not owned by the query).
    file_fd: int | None = None
    #: Obey the tree's ignore files (False: they hid files git tracks; `shellrt.tools._tracked`).
    obey_ignores: bool = True
    #: Search only these paths below ``root`` (already chosen by globs and type), not the tree:
    #: the tracked files the ignore files hid (`shellrt.tools._hidden_search`).
    only: tuple[str, ...] | None = None
    #: Paths below ``root`` the walker neither searches nor enters: the session's masked
    #: (read-denied) places there. What a search reads can reach a count, a note or the
    #: too-many-lines stop, so a masked file must not be read at all (red team round 41, files4).
    skip: tuple[str, ...] = ()
    #: ``(st_dev, st_ino)`` of the masked files: another name of one (a hard link) is not read
    #: either; None: unknown (their search was refused), so no file with several names is read.
    skip_inodes: tuple[tuple[int, int], ...] | None = ()
    #: The highest directory whose ignore files the walker reads (`_gitignore.ancestors_below`):
    #: docker's host directory behind ``/workspace``, whose parents the container never sees.
    top: str | None = None


@dataclass
class FileHits:
    """Lines of one file to show: line number -> (text without its line break, is a match)."""

    lines: dict[int, tuple[str, bool]] = field(default_factory=dict)

    @property
    def match_count(self) -> int:
        return sum(1 for _, is_match in self.lines.values() if is_match)
