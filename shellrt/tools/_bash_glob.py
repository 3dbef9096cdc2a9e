"""What a word bash reads as a pattern may expand to, on this machine (for deny rules).

Why not ``glob.iglob``: Python's dialect is not bash's. ``cat .[^x]nv``, ``cat .[[:alpha:]]nv`` and
(after an earlier ``shopt -s nocaseglob`` or ``globstar``) ``cat .E*`` and ``cat **/.env`` read
``.env`` in bash, and ``iglob`` matched nothing, so a ``Read(./.env)`` deny rule never saw the
read (red team, round 56). Each segment is matched with the analysis's over-approximating
`bash_segment_regex`; a ``**`` segment is any depth (``globstar``), as bash 5.2 walks it: without
following links to directories.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from shellrt.analysis.globwords import bash_segment_regex, is_bash_pattern

__all__ = ["bash_glob", "dot_entries", "is_bash_glob", "option_values"]

#: Directory entries looked at for one word before its expansion counts as unknown ("").
MAX_ENTRIES = 50_000


def is_bash_glob(word: str) -> bool:
    """Whether any ``/``-separated part of ``word`` is a pattern bash may expand."""
    return any(is_bash_pattern(segment) for segment in word.split("/"))


def bash_glob(word: str, base: str, limit: int) -> Iterator[str]:
    """Existing paths (joined to ``base``, not resolved) the pattern ``word`` may name; "" once
    more than ``limit`` matches or `MAX_ENTRIES` entries were seen (unknown: fails closed)."""
    paths = [base]
    budget = [MAX_ENTRIES]
    segments = word.split("/")
    for index, segment in enumerate(segments):
        if segment in ("", "."):
            continue
        if segment == "**":
            paths = [p for path in paths for p in _tree(path, budget)]
        elif is_bash_pattern(segment):
            through = index < len(segments) - 1
            paths = [p for path in paths for p in _matches(path, segment, budget, through)]
        else:
            paths = [os.path.join(path, segment) for path in paths]
        if budget[0] < 0 or len(paths) > limit:
            yield ""
            return
    yield from (path for path in paths if os.path.lexists(path))


def _matches(directory: str, segment: str, budget: list[int], through: bool) -> Iterator[str]:
    """The names in ``directory`` the segment may match; ``.`` and ``..`` too for a leading dot on
    the way to a further name (``cat .*/x`` after ``shopt -u globskipdots`` reads ``../x``), not
    as the last name (``ls -d .*`` lists no parent in bash 5.2's default, and stays allowed)."""
    regex = bash_segment_regex(segment)
    names = [".", ".."] if through and segment.startswith((".", "\\.")) else []
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                budget[0] -= 1
                if budget[0] < 0:
                    return
                names.append(entry.name)
    except OSError:
        return
    yield from (os.path.join(directory, name) for name in names if regex.fullmatch(name))


def dot_entries(word: str) -> list[str]:
    """``word``'s ``.`` and ``..`` when its last segment may match them (``.*``, ``.?``, ``.[.]``): bash
    does after ``shopt -u globskipdots`` (and before 5.2 by default). `bash_glob` leaves them out of a last
    name (``ls -d .*`` stays allowed); a recursive program walks them, so its caller adds these (``grep -r
    S .*`` read ``../secret`` unseen: round 56, reviewa)."""
    head, _, last = word.rpartition("/")
    if not last.startswith((".", "\\.")) or not is_bash_pattern(last):
        return []
    regex = bash_segment_regex(last)
    return [f"{head}/{name}" if head else name for name in (".", "..") if regex.fullmatch(name)]


def _tree(directory: str, budget: list[int]) -> Iterator[str]:
    """``directory`` and every name below it, links to directories not followed (``**``)."""
    yield directory
    for root, dirs, files in os.walk(directory):
        budget[0] -= len(dirs) + len(files)
        if budget[0] < 0:
            return
        for name in (*dirs, *files):
            yield os.path.join(root, name)


def option_values(expanded: str) -> list[str]:
    """The file names a word bash expanded to (``expanded``, as the program sees it) may give an
    option when it starts with ``-``: ``grep x ?f.env`` beside a file named ``-f.env`` runs ``grep x
    -f.env``, which reads ``.env`` (red team, round 56). Every value it may hold: after each ``=``
    (``--file=V``), and every tail after the first option letter (``-fV``, ``-nfV``)."""
    if expanded[:1] != "-" or expanded == "-":
        return []
    tails = {expanded.split("=", i + 1)[-1] for i in range(expanded.count("="))}
    if expanded[:2] != "--":
        tails.update(expanded[i:] for i in range(2, len(expanded)))
    return sorted(tail for tail in tails if tail)
