"""A shell word's brace expansion, as bash and zsh do it before any other expansion.

Why (red team round 40, review18): ``for file in ~/.{path,exports}; do . "$file"; done`` and
``. "$DOTFILES"/sh/{funcs,env}.sh`` load each name of the list; a start-up file's word read as one
literal path named a file no one has, and a command's ``funcs.sh`` ran in the operator's next shell.
Past `LIMIT` words, or past the caller's budget, each group stands for ``*`` (every name it could
give: guarded, fail closed).
"""

from __future__ import annotations

import itertools
import re

__all__ = ["LIMIT", "as_pattern", "expand_braces"]

#: Words one word may expand to before its groups are read as ``*``.
LIMIT = 64
_SEQUENCE = re.compile(r"(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])(?:\.\.(-?\d+))?")
_BRACE = re.compile(r"[{},]")


def expand_braces(word: str) -> tuple[list[str], int]:
    """(the words ``word`` expands to, in the shell's order -- itself when it has no list or
    sequence; past `LIMIT` `as_pattern`'s one; the characters scanned, for the caller's budget)."""
    done: list[str] = []
    todo = [word]
    scanned = 0
    while todo:
        current = todo.pop(0)
        scanned += len(current)
        group = _first_group(current)
        if group is None:
            done.append(current)
        else:
            start, end, items = group
            todo[:0] = [current[:start] + item + current[end:] for item in items]
        if len(done) + len(todo) > LIMIT:
            return [as_pattern(word)], scanned + len(word)
    return done, scanned


def as_pattern(word: str) -> str:
    """``word`` with each outermost group that expands as ``*`` (one pass)."""
    out: list[str] = []
    end = 0
    for start, close, commas in _groups(word):
        if start >= end and (commas or _sequence(word[start + 1 : close]) is not None):
            out += [word[end:start], "*"]
            end = close + 1
    return "".join(out) + word[end:]


def _first_group(word: str) -> tuple[int, int, list[str]] | None:
    """(start, end, the alternatives) of the first brace group of ``word`` that expands; a group
    without a top-level comma or sequence is literal."""
    for start, close, commas in _groups(word):
        if commas:
            cuts = [start, *commas, close]
            return start, close + 1, [word[a + 1 : b] for a, b in itertools.pairwise(cuts)]
        items = _sequence(word[start + 1 : close])
        if items is not None:
            return start, close + 1, items
    return None


def _groups(word: str) -> list[tuple[int, int, list[int]]]:
    """The balanced ``{…}`` of ``word`` (open, close, top-level commas) by their opening, none
    inside a ``${…}`` parameter."""
    stack: list[tuple[int, list[int]]] = []
    found: list[tuple[int, int, list[int]]] = []
    parameter = -1  # the depth of an open ``${``: groups inside it are not expanded
    for m in _BRACE.finditer(word):
        char, index = m.group(), m.start()
        if char == "{":
            if parameter < 0 and index > 0 and word[index - 1] == "$":
                parameter = len(stack)
            stack.append((index, []))
        elif char == "," and stack:
            stack[-1][1].append(index)
        elif char == "}" and stack:
            start, commas = stack.pop()
            if parameter == len(stack):
                parameter = -1
            elif parameter < 0:
                found.append((start, index, commas))
    return sorted(found)


def _sequence(body: str) -> list[str] | None:
    m = _SEQUENCE.fullmatch(body)
    if m is None:
        return None
    first, last, step = m.group(1), m.group(2), abs(int(m.group(3) or 1)) or 1
    if first.isalpha() != last.isalpha():
        return None
    low, high = (ord(first), ord(last)) if first.isalpha() else (int(first), int(last))
    if abs(high - low) // step >= LIMIT:
        return ["*"] * (LIMIT + 1)  # more than the limit: the caller reads the word as a pattern
    numbers = range(low, high + (1 if high >= low else -1), step if high >= low else -step)
    if first.isalpha():
        return [chr(n) for n in numbers]
    padded = any(s.lstrip("-").startswith("0") and len(s.lstrip("-")) > 1 for s in (first, last))
    width = max(len(first), len(last)) if padded else 0
    return [str(n).zfill(width) for n in numbers]
