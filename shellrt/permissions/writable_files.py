"""The files a host-side command (a hook, a stdio MCP server) runs from every root commands write.

Why: hooks and MCP servers from settings run on the host, outside the sandbox. When what they run
lies where a sandboxed command can write, the command could rewrite it and have the host run the
plant. Round 10 hashed such files in the workspace only (`shellrt.permissions.hook_files`); an
extra writable root (``permissions.additionalDirectories``, ``--writable``) or a home directory
made writable is as much the command's. So the files are resolved and hashed in each writable
root, as the session finds them, ``$HOME/...`` resolved as the hook's environment has it, and
compared again before each run. A link out of a writable root is recorded by its target (a
command re-pointing it is a change); everything else that cannot be vouched for (a load chosen at
run time, a directory too large to hash) keeps the command from running.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from shellrt.permissions.hook_files import (
    OUTSIDE_PREFIX,
    ROOT_FILES,
    TOO_LARGE,
    WHOLE_WORKSPACE,
    HookFiles,
    hook_files,
)

__all__ = ["RootsFiles", "root_file_paths", "roots_changed", "roots_files"]


@dataclass(frozen=True)
class RootsFiles:
    """Per writable root (its real path): what the commands run from there, hashed."""

    roots: tuple[tuple[str, HookFiles], ...]


def roots_files(roots: Sequence[Path], commands: Sequence[str], *, base: Path) -> RootsFiles:
    """Hash now what ``commands`` (run from ``base``) run from each of ``roots``."""
    real = dict.fromkeys(os.path.realpath(r) for r in roots)
    return RootsFiles(tuple((root, hook_files(Path(root), commands, base=base, home=True)) for root in real))


def root_file_paths(found: RootsFiles) -> list[str]:
    """The full paths of the files ``found`` records inside a root (present or not yet; a link
    out of a root is recorded by its target and is not the root's), then the directories hashed
    whole with them (a hook script's own: ``scripts/`` of ``node scripts/fmt.js``, which may
    ``require('./lib')``), but a root's own files and the whole root (a server's cwd in it,
    round 23: protecting it would keep every command from writing the workspace). Why: the runtime makes them protected (a
    directory: every file below it), so a command's rewrite is reverted and no later session runs
    it (rounds 17 and 18: a directory was compared within the session only)."""
    paths = [
        os.path.join(root, rel)
        for root, files in found.roots
        for rel, digest in files.files.items()
        if rel != WHOLE_WORKSPACE and not (digest or "").startswith(OUTSIDE_PREFIX)
    ]
    # A tree past the bounds is not protected (red team round 45: a workspace's whole node_modules,
    # 4,000 files, cost ~250 ms after every command): what records it never runs while it is so.
    return paths + [
        os.path.join(root, rel)
        for root, files in found.roots
        for rel, digest in files.dirs.items()
        if rel != ROOT_FILES and not (digest or "").startswith(OUTSIDE_PREFIX) and digest != TOO_LARGE
    ]


def roots_changed(found: RootsFiles, commands: Sequence[str], *, base: Path) -> str | None:
    """Why what ``commands`` run from the writable roots is not as ``found`` (None: it is)."""
    for root, then in found.roots:
        now = hook_files(Path(root), commands, base=base, home=True)
        why = _problem(root, now) or _difference(root, then, now)
        if why is not None:
            return why
    return None


def _problem(root: str, files: HookFiles) -> str | None:
    """The first thing in ``files`` that cannot be vouched for, but a link out of the root."""
    for problem in files.problems(links_out=False):
        return problem.replace("hook file ", f"hook file {root}/", 1).replace(
            "hook directory ", f"hook directory {root}/", 1
        )
    return None


def _difference(root: str, then: HookFiles, now: HookFiles) -> str | None:
    for kind, before_all, after_all in (
        ("hook file", then.files, now.files),
        ("hook directory", then.dirs, now.dirs),
    ):
        for rel in sorted(set(before_all) | set(after_all)):
            before, after = before_all.get(rel), after_all.get(rel)
            if before == after:
                continue
            what = (
                f"the files directly in {root}" if rel == ROOT_FILES else f"{kind} {os.path.join(root, rel)}"
            )
            if before is None:
                return f"{what} appeared since the session started"
            if after is None:
                return f"{what} was removed since the session started"
            if after.startswith(OUTSIDE_PREFIX) or before.startswith(OUTSIDE_PREFIX):
                return f"{what} now leads elsewhere than when the session started"
            return f"{what} changed since the session started"
    if set(then.untrackable) != set(now.untrackable):
        return "its untrackable parts differ from those the session started with"
    return None
