"""Words bash expands into other words the analysis never sees (pathname and tilde expansion).

Why this exists: a static word with an unquoted ``*``, ``?`` or ``[`` is replaced by the names of
matching files *before* the command runs, and a hostile repository chooses those names. Where the
analysis reads a word's text as structure -- the script of ``bash -c``, the words a wrapper reads
before its command (``timeout *``), ``find``'s ``-exec ... ;`` -- such a word is not the text it
shows: ``bash -c 'ls '*`` runs a file named ``ls ;touch x`` as its script (red team, round 19).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from typing import Final

from .nodes import Word

__all__ = ["EXPANDED_FEATURES", "bash_segment_regex", "expanded_by_bash", "glob_may_match", "is_bash_pattern"]

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


#: The extglob operators: ``@(a|b)``, ``!(a)``, ``+(a)``, ``*(a)``, ``?(a)`` (``shopt -s extglob``).
_EXTGLOB: Final = re.compile(r"[@!+*?]\(")


def is_bash_pattern(segment: str) -> bool:
    """Whether bash may read ``segment`` (one ``/``-free part of a word) as a pattern, under any
    shell option a session may have set (``extglob`` too)."""
    return any(c in segment for c in "*?[") or _EXTGLOB.search(segment) is not None


def bash_segment_regex(segment: str) -> re.Pattern[str]:
    """A regex matching every name bash's pathname expansion may match with ``segment``.

    Why not ``fnmatch``: bash's bracket expressions are richer (``[^x]`` negates, ``[[:alpha:]]``,
    ``[[=e=]]``, ``[[.e.]]``, ``[\\e]``), and a session's shell options widen what a pattern matches
    (``nocaseglob``: any case; ``extglob``: ``!(x)``; ``dotglob``/``GLOBIGNORE``: hidden names), options
    an earlier call may have set. So: any case, every bracket expression is any one character, an
    extglob operator matches any name. Over-approximates, never under (the reads it names are
    checked against deny rules)."""
    if _EXTGLOB.search(segment):
        return re.compile(".*", re.DOTALL)
    # Spelled for `fnmatch.translate`, whose regex never backtracks into an earlier ``*``: a ``.*`` per
    # star made ``*a*a*a*a*a*b`` beside a name of 200 ``a`` take 38 s in the engine (round 56, reviewa).
    out: list[str] = []
    i, n = 0, len(segment)
    while i < n:
        char = segment[i]
        if char == "\\" and i + 1 < n:
            out.append(_fnmatch_literal(segment[i + 1]))
            i += 2
        elif char in "*?":
            out.append(char)
            i += 1
        elif char == "[" and (end := _bracket_end(segment, i)) is not None:
            out.append("?")
            i = end
        else:
            out.append(_fnmatch_literal(char))
            i += 1
    return re.compile(fnmatch.translate("".join(out)), re.DOTALL | re.IGNORECASE)


def _fnmatch_literal(char: str) -> str:
    """``char`` as an `fnmatch` pattern matching only itself."""
    return f"[{char}]" if char in "*?[" else char


def _bracket_end(segment: str, start: int) -> int | None:
    """The index after the bracket expression opening at ``segment[start] == "["``, as bash's
    ``brackmatch`` reads it; None when it never closes (then bash reads ``[`` as itself)."""
    i, n = start + 1, len(segment)
    if i < n and segment[i] in "!^":
        i += 1
    first = True
    while i < n:
        char = segment[i]
        if char == "]" and not first:
            return i + 1
        first = False
        if char == "\\":
            i += 2
            continue
        if char == "[" and i + 1 < n and segment[i + 1] in ":=.":
            close = segment.find(segment[i + 1] + "]", i + 2)
            if close != -1:
                i = close + 2
                continue
        i += 1
    return None
