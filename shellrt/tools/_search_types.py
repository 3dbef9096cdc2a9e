"""The query and hit types both search backends (ripgrep, pure Python) share."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["FileHits", "GrepQuery"]


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


@dataclass
class FileHits:
    """Lines of one file to show: line number -> (text without its line break, is a match)."""

    lines: dict[int, tuple[str, bool]] = field(default_factory=dict)

    @property
    def match_count(self) -> int:
        return sum(1 for _, is_match in self.lines.values() if is_match)
