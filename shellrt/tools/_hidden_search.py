"""Grep of the tracked files a tree's ignore files hid, and of nothing else.

Why: the first fix (red team round 36, files) searched the whole tree again without ignore
files, so a repository hiding one tracked file beside a huge ignored ``build/`` made every
Grep walk that tree up to its deadline. Here only the hidden files' own paths are searched:
what they cost is what they hold. They are chosen by the call's globs and type first (named
paths are searched whatever filters say), then searched by the walker's child, each opened below
the anchored root without following a symlink (never by ripgrep: it follows a named link).
"""

from __future__ import annotations

from dataclasses import replace

from shellrt.protocol import ToolExecutionError
from shellrt.tools._gitignore import GlobList, TypeFilter, selected
from shellrt.tools._search import search
from shellrt.tools._search_types import MAX_HIT_LINES, FileHits, GrepQuery, too_many_hits

__all__ = ["MAX_HIDDEN_SEARCHED", "chosen", "search_hidden"]

#: Hidden tracked files one Grep searches; past this the rest are counted as not searched.
MAX_HIDDEN_SEARCHED = 20_000


def chosen(query: GrepQuery, hidden: list[str]) -> list[str]:
    """The paths of ``hidden`` the call's globs and type let through (as the walk judges them)."""
    overrides = GlobList.parse([*query.globs, "!.git"])
    types = TypeFilter.for_type(query.file_type) if query.file_type else None
    return [rel for rel in hidden if selected(rel, overrides, types)]


async def search_hidden(query: GrepQuery, paths: list[str]) -> dict[str, FileHits]:
    """Hits of ``query`` in ``paths`` alone (relative to its root; `chosen` already), without
    ignore files; raises `ToolExecutionError` as `search` does, or past `MAX_HIT_LINES` lines.
    Searched by the walker's child, never ripgrep: ripgrep follows a symlink named on its command
    line (``--no-follow`` or not), so a tracked file a command swapped for a link to a denied file
    after the checks was read there, and its lines shown under the tracked name (round 42). The
    walker opens each below the anchored root without following a link. Hits outside ``paths``
    are dropped."""
    wanted = set(paths)
    hits = await search(replace(query, obey_ignores=False, only=tuple(paths)), use_rg=False)
    found = {rel: h for rel, h in hits.items() if rel in wanted}
    if sum(len(h.lines) for h in found.values()) > MAX_HIT_LINES:
        raise ToolExecutionError(too_many_hits())
    return found
