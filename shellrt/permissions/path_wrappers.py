"""The programs a wrapper spelt as a path runs (``/usr/bin/env sh`` runs ``sh``), as parts.

Why: the analysis looks through wrappers by their bare name (``env sh <<<'rm x'`` is planned as
``sh`` too), not through ``/usr/bin/env sh``: the engine's unread-code check then read ``sh`` as
the wrapper's operand, a script file that exists before the call, and ``bypassPermissions`` ran
the here-string past a ``Bash(rm:*)`` deny rule (red team round 31, variants). Each wrapper, by
whatever path it is spelt, adds the part it runs, judged as the bare form's would be; a program the
analysis names by a path outside the system bin directories is judged under its bare name too.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from collections.abc import Sequence
from pathlib import PurePosixPath

from shellrt.analysis.programs.wrappers import WRAPPERS, unwrap
from shellrt.permissions.interfaces import CommandPart

__all__ = ["spelt_forms", "through_path_wrappers"]

#: Wrappers inside wrappers followed at most (``/usr/bin/nice /usr/bin/env sh``).
_MAX_DEPTH = 8
#: git's dashed names (``/usr/lib/git-core/git-push`` is a link to git, which then runs ``push``;
#: ``git push`` itself runs ``git-push`` for what it does not build in): ``git-X a`` is ``git X a``.
_GIT_DASHED = re.compile(r"git-([a-z][a-z0-9-]*)")
#: Characters of a word bash may still expand (the part's argv keeps a dynamic word's source).
_DYNAMIC = frozenset("$`*?[{\\'\"")


def through_path_wrappers(parts: Sequence[CommandPart]) -> list[CommandPart]:
    """``parts``, each followed by its `spelt_forms`. For deny and ask checks only: more parts,
    only more catches."""
    return [form for part in parts for form in (part, *spelt_forms(part))]


def spelt_forms(part: CommandPart) -> list[CommandPart]:
    """The part again under its bare name when the analysis kept a path as its name
    (``/usr/lib/git-core/git`` is git: its code-running option values count), as ``git X`` when it
    is git's dashed ``git-X``, and the parts its path-spelt wrappers run (innermost last)."""
    out: list[CommandPart] = []
    if "/" in part.name and _base(part.name):
        out.append(dataclasses.replace(part, name=_base(part.name)))
    dashed = _GIT_DASHED.fullmatch(_base(part.name))
    if dashed is not None and part.argv:
        argv = ("git", dashed.group(1), *part.argv[1:])
        out.append(dataclasses.replace(part, name="git", argv=argv, text=shlex.join(argv)))
    out.extend(
        dataclasses.replace(part, argv=argv, name=_base(argv[0]), text=shlex.join(argv)) for argv in _wrapped(part.argv)
    )
    return out


def _wrapped(argv: Sequence[str]) -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = []
    current = tuple(argv)
    for _ in range(_MAX_DEPTH):
        if not current or "/" not in current[0] or _base(current[0]) not in WRAPPERS:
            break  # a bare wrapper's command the analysis plans itself
        words: list[str | None] = [_base(current[0])]
        words += [None if set(w) & _DYNAMIC else w for w in current[1:]]
        result = unwrap(words)
        if result.start is None:
            break
        current = current[result.start :]
        found.append(current)
    return found


def _base(word: str) -> str:
    return PurePosixPath(word).name
