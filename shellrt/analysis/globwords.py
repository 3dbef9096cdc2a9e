"""Words bash expands into other words the analysis never sees (pathname and tilde expansion).

Why this exists: a static word with an unquoted ``*``, ``?`` or ``[`` is replaced by the names of
matching files *before* the command runs, and a hostile repository chooses those names. Where the
analysis reads a word's text as structure -- the script of ``bash -c``, the words a wrapper reads
before its command (``timeout *``), ``find``'s ``-exec ... ;`` -- such a word is not the text it
shows: ``bash -c 'ls '*`` runs a file named ``ls ;touch x`` as its script (red team, round 19).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from .nodes import Word

__all__ = ["EXPANDED_FEATURES", "expanded_by_bash", "glob_may_match"]

#: Features of a static word that bash still expands into other text (or into several words).
EXPANDED_FEATURES: Final = frozenset({"glob", "flag_glob", "tilde"})


def expanded_by_bash(word: Word) -> bool:
    """Whether bash may replace the static ``word`` by other text (file names, a home directory)."""
    return word.value is not None and not EXPANDED_FEATURES.isdisjoint(word.features)


def glob_may_match(pattern: str, names: Iterable[str]) -> bool:
    """Whether the glob ``pattern`` (a word's value) may match one of ``names``.

    Over-approximates, never under: the value has lost its quotes, so every ``*``/``?`` counts
    as a wildcard, and a bracket expression matches anything from where it opens.
    """
    out: list[str] = []
    for char in pattern:
        if char == "*":
            out.append(".*")
        elif char == "?":
            out.append(".")
        elif char == "[":
            out.append(".*")
            break
        else:
            out.append(re.escape(char))
    regex = re.compile("".join(out), re.DOTALL)
    return any(regex.fullmatch(name) for name in names)
