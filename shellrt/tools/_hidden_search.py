"""Grep of the tracked files a tree's ignore files hid, and of nothing else.

Why: the first fix (red team round 36, files) searched the whole tree again without ignore
files, so a repository hiding one tracked file beside a huge ignored ``build/`` made every
Grep walk that tree up to its deadline. Here only the hidden files' own paths are searched:
what they cost is what they hold. They are chosen by the call's globs and type first (named
paths are searched whatever filters say), then searched by ripgrep named on its command line
(a bounded argv per run) or by the walker's child, each opened below the anchored root
without following a symlink.
"""

from __future__ import annotations

from dataclasses import replace

from shellrt.protocol import ToolExecutionError
from shellrt.tools._gitignore import GlobList, TypeFilter, selected
from shellrt.tools._search import RgRunner, search
from shellrt.tools._search_types import MAX_HIT_LINES, FileHits, GrepQuery, too_many_hits

__all__ = ["MAX_HIDDEN_SEARCHED", "chosen", "search_hidden"]

#: Hidden tracked files one Grep searches; past this the rest are counted as not searched.
MAX_HIDDEN_SEARCHED = 20_000
#: Bytes of paths one ripgrep run is given (well below Linux's 2 MiB argv and 128 KiB per string).
_ARGV_BYTES = 256 << 10


def chosen(query: GrepQuery, hidden: list[str]) -> list[str]:
    """The paths of ``hidden`` the call's globs and type let through (as the walk judges them)."""
    overrides = GlobList.parse([*query.globs, "!.git"])
    types = TypeFilter.for_type(query.file_type) if query.file_type else None
    return [rel for rel in hidden if selected(rel, overrides, types)]


def _batches(paths: list[str]) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    batch: list[str] = []
    size = 0
    for rel in paths:
        cost = len(rel.encode("utf-8", "surrogateescape")) + 1
        if batch and size + cost > _ARGV_BYTES:
            out.append(tuple(batch))
            batch, size = [], 0
        batch.append(rel)
        size += cost
    if batch:
        out.append(tuple(batch))
    return out


async def search_hidden(
    query: GrepQuery, paths: list[str], use_rg: bool, runner: tuple[RgRunner, str] | None
) -> dict[str, FileHits]:
    """Hits of ``query`` in ``paths`` alone (relative to its root; `chosen` already), without
    ignore files; raises `ToolExecutionError` as `search` does, or past `MAX_HIT_LINES` lines.
    Paths that start with ``-`` follow ripgrep's ``--``; hits outside ``paths`` are dropped."""
    found: dict[str, FileHits] = {}
    kept = 0
    wanted = set(paths)
    for batch in _batches(paths) if use_rg else [tuple(paths)]:
        if not batch:
            continue
        hits = await search(replace(query, obey_ignores=False, only=batch), use_rg=use_rg, runner=runner)
        for rel, h in hits.items():
            if rel in wanted:
                found[rel] = h
                kept += len(h.lines)
        if kept > MAX_HIT_LINES:
            raise ToolExecutionError(too_many_hits())
    return found
