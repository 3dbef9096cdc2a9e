"""The parts of a command that names no path, made once per analysis instead of once per call.

`shellrt.tools._bashparts.command_parts` looks at the machine only to resolve what a
part reads or writes (realpath, globs, hard links), where its ``cd``s lead, and for
``git`` and ``jq`` (repository configuration, module files). A command whose parts
read and write nothing, that has no ``cd`` target and runs neither program (``true``,
``date``, ``echo hi``; ``ls`` reads its cwd) gets the same parts whatever the cwd, the allowed
roots, the disk or the repository hold: they follow from its analysis alone. Those
are remembered with the analysis (which is itself memoised per command text); every
other command is split afresh on every call, as before. One field is the exception: where
the parts run (`CommandPart.dirs`, the cwd, which a remembered approval is anchored at;
red team round 16), set afresh on a remembered split made in another directory.

The test is made on the parts a real split produced: each resolution step returns at
least one entry for each word it is given, so empty ``reads``, ``writes`` and
``program_writes`` mean no word reached a step that consults the disk.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from shellrt.analysis import CommandAnalysis
from shellrt.permissions.interfaces import CommandPart
from shellrt.tools._configfiles import config_program

__all__ = ["memoised_parts", "names_no_path"]

#: Programs whose split consults the host beyond path resolution (git: repository
#: configuration, hooks, changed files; jq: module search paths). Also, by `config_program`
#: (round 50): the programs whose configuration files found from their directory are read.
_HOST_LOOKUP_PROGRAMS = frozenset({"git", "jq", "gojq", "jaq"})

#: Most analyses remembered (the analysis cache holds 256 commands).
_MAX_REMEMBERED = 256

#: id(analysis) -> (the analysis, its parts, the cwd they were split in): the analysis is kept
#: so that an id reused by another object after the first was freed can never match.
_remembered: dict[int, tuple[CommandAnalysis, tuple[CommandPart, ...], str]] = {}


def names_no_path(a: CommandAnalysis, parts: list[CommandPart]) -> bool:
    """Whether ``parts`` (split from ``a``) depend on nothing but ``a`` (see the module doc)."""
    if a.cd_targets:
        return False
    return all(
        not p.reads
        and not p.writes
        and not p.program_writes
        and p.name not in _HOST_LOOKUP_PROGRAMS
        and not config_program(p.name, p.argv)
        for p in parts
    )


def memoised_parts(a: CommandAnalysis, split: Callable[[], list[CommandPart]], cwd: str) -> list[CommandPart]:
    """``split()``'s parts of ``a`` run in ``cwd``: remembered when they name no path, else made
    on every call. A remembered split made in another cwd gets ``cwd`` as where its parts run
    (no ``cd`` target: they run there, or where no word says, ``dirs`` empty, as split).

    A fresh list each time (the parts themselves are frozen), so a caller may change it.
    """
    found = _remembered.get(id(a))
    if found is not None and found[0] is a:
        if found[2] == cwd:
            return list(found[1])
        # Kept for the new cwd: a session stays in one directory for many calls (a replace costs
        # ~25 us a part, a remembered hit ~1.5 us).
        moved = tuple(dataclasses.replace(p, dirs=(cwd,)) if p.dirs else p for p in found[1])
        _remembered[id(a)] = (a, moved, cwd)
        return list(moved)
    parts = split()
    if names_no_path(a, parts):
        if len(_remembered) >= _MAX_REMEMBERED:
            _remembered.clear()
        _remembered[id(a)] = (a, tuple(parts), cwd)
    return parts
