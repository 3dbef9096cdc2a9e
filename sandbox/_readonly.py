"""Read-only binds over paths a command may otherwise write or not see (`SandboxPolicy.read_only`).

Two uses, one mechanism (bwrap): names a later host program obeys, below a home
directory inside the workspace, are bound read-only onto themselves where they
exist (the post-command check in ``shellrt.supervisor.protect`` still reverts what
appears elsewhere); and a directory of the session's own results is shown again,
read-only, inside a masked state directory. Every directory between a writable
root and such a path is pinned by the caller (`sandbox.bwrap._pinned_dirs`), so a
command cannot rename a parent away and recreate it writable.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

__all__ = ["layered_args", "read_only_args", "read_only_paths"]


def read_only_paths(
    paths: Sequence[Path], reach: list[Path] | None, maskable: Callable[[Path, list[Path]], bool]
) -> list[Path]:
    """The paths to bind: existing, reached without a symlink (a link would move the bind elsewhere)
    and, for a bwrap started as the sandbox uid (``reach`` given), reachable by it."""
    shown = []
    for path in paths:
        normal = os.path.normpath(path)
        try:
            if not os.path.exists(normal) or os.path.realpath(normal) != normal:
                continue
        except (OSError, ValueError):  # mid-swap (a link between lstat and readlink): as a link
            continue
        if reach is not None and not maskable(Path(normal), reach):
            continue
        shown.append(Path(normal))
    return shown


def read_only_args(shown: list[Path], roots: Sequence[Path], sources: Mapping[Path, Path]) -> list[str]:
    """``--ro-bind`` arguments for ``shown``; below a writable root bound from that root's source
    (its idmapped copy, for a bwrap started as the sandbox uid)."""
    args: list[str] = []
    for path in shown:
        holders = [r for r in roots if r == path or r in path.parents]
        source = path
        if holders:
            root = max(holders, key=lambda r: len(r.parts))
            source = sources.get(root, root) / path.relative_to(root)
        args += ["--ro-bind", str(source), str(path)]
    return args


def layered_args(
    masks: Sequence[tuple[Path, str | None]],
    shown: list[Path],
    roots: Sequence[Path],
    sources: Mapping[Path, Path],
) -> list[str]:
    """The masks (``--tmpfs`` over a directory, ``/dev/null`` over a file) and the read-only binds,
    shallowest first, a mask after a bind of the same path.

    bwrap applies its mounts in argument order, and a later mount covers what is below it: a
    read-only bind of a directory after a mask inside it showed the masked path again (red team,
    round 11). In depth order every mount lands on top of each one that covers it: a mask inside
    a bound directory stays, and a path shown inside a masked one (this session's results) shows.
    """
    layers: list[tuple[int, int, list[str]]] = []
    for path in shown:
        layers.append((len(path.parts), 0, read_only_args([path], roots, sources)))
    for path, kind in masks:
        flags = ["--tmpfs", str(path)] if kind == "dir" else ["--ro-bind", "/dev/null", str(path)]
        layers.append((len(path.parts), 1, flags))
    layers.sort(key=lambda layer: (layer[0], layer[1]))
    return [flag for _depth, _order, flags in layers for flag in flags]
