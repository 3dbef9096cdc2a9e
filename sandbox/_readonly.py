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

__all__ = [
    "MASK_TMPFS_BYTES",
    "WRITABLE_TMPFS",
    "layered_args",
    "mask_remounts",
    "read_only_args",
    "read_only_paths",
    "sealed_tmpfs",
    "sized_tmpfs",
]

#: The size of every tmpfs bwrap makes without one (a mask, the /run and /proc masks, a frozen or
#: skeleton directory): bwrap's default is half the host's RAM, and one a command owns (one bwrap per
#: command as the sandbox uid, or a non-root caller's) is a place to fill host memory past the /tmp
#: cap (red team, round 13). They hold mount points and nothing a command needs to write.
MASK_TMPFS_BYTES = 1 << 20


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


def mask_remounts(masks: Sequence[tuple[Path, str | None]]) -> list[str]:
    """``--remount-ro`` for each directory mask: an empty tmpfs over a read-denied directory was
    writable to a command that owned it (written data went nowhere a reader expects, into memory).
    Last, after every mount below the mask (a result directory shown inside it) is made."""
    return [flag for path, kind in masks if kind == "dir" for flag in ("--remount-ro", str(path))]


#: The tmpfs mounts a command may write to: the session's /tmp (a sized host tmpfs for a root
#: caller, or bwrap's own when no session directory is bound) and /dev/shm. Every other is sealed.
WRITABLE_TMPFS = ("/tmp", "/dev/shm")


def sealed_tmpfs(args: list[str]) -> list[str]:
    """``args`` with ``--remount-ro`` for every ``--tmpfs`` outside `WRITABLE_TMPFS`, at the end
    (after every mount below it; bwrap's remount is not recursive, so a root bound inside stays
    writable). Without it a per-command sandbox's /run, /proc/acpi and skeleton directories were
    tmpfs its uid owned: writable, with no inode cap (red team, round 25). Whole argv, as
    `sized_tmpfs`, so a tmpfs any module adds is covered."""
    tmpfs = [args[i + 1] for i, flag in enumerate(args[:-1]) if flag == "--tmpfs"]
    sealed = {args[i + 1] for i, flag in enumerate(args[:-1]) if flag == "--remount-ro"}
    extra: list[str] = []
    for path in dict.fromkeys(tmpfs):
        if path not in WRITABLE_TMPFS and path not in sealed:
            extra += ["--remount-ro", path]
    return [*args, *extra]


def sized_tmpfs(args: list[str]) -> list[str]:
    """``args`` with ``--size MASK_TMPFS_BYTES`` before each ``--tmpfs`` that has no size (the
    session's /dev/shm and a sized /tmp keep theirs). Applied to the whole argv, so a mask any
    module adds is covered."""
    out: list[str] = []
    for i, flag in enumerate(args):
        if (
            flag == "--tmpfs"
            and not (i >= 2 and args[i - 2] == "--size")
            and (not out or out[-1] != "--tmpfs")
        ):
            out += ["--size", str(MASK_TMPFS_BYTES)]
        out.append(flag)
    return out
