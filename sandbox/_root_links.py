"""Extra writable roots resolved one component at a time (red team, rounds 11 and 12).

A symbolic link inside the workspace was chosen by the repository (``build -> ~/.ssh``):
resolving it silently made the place it points at writable to every command. A link outside
the workspace is the operator's own. Shared by every source of a writable root.
"""

from __future__ import annotations

import os
from pathlib import Path


def walk_root(
    raw: str | Path, workspace: Path, cwd: Path | None = None
) -> tuple[Path, tuple[Path, Path] | None]:
    """``raw`` resolved one component at a time (``~`` expanded, relative to ``cwd``), and the
    first symbolic link inside ``workspace`` met on the way with its real target, else None. A
    link outside the workspace (the operator's own) is followed; the walk stops at one inside
    (the path returned is then that link)."""
    inside = Path(os.path.realpath(workspace))
    text = os.path.expanduser(str(raw))
    current = Path("/") if text.startswith("/") else Path(os.path.realpath(cwd or Path.cwd()))
    for part in text.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            current = current.parent
            continue
        candidate = current / part
        if os.path.islink(candidate):
            target = Path(os.path.realpath(candidate))
            if candidate == inside or inside in candidate.parents:
                return candidate, (candidate, target)
            current = target
        else:
            current = candidate
    return current, None


def repo_link_on_the_way(
    raw: str | Path, workspace: Path, cwd: Path | None = None
) -> tuple[Path, Path] | None:
    """The first symbolic link inside ``workspace`` met resolving ``raw``, with its real target; else None."""
    return walk_root(raw, workspace, cwd)[1]


def link_refusal(raw: str | Path, link: Path, target: Path) -> str:
    """What to say when ``raw`` passes through ``link``: why, and the real path to name instead."""
    return (
        f"writable root {raw}: {link} is a symbolic link inside the workspace (to {target}); the "
        f"repository chose where it points, so it cannot name a writable root. Name the real path "
        f"({target}) if you mean to open that directory to commands"
    )
