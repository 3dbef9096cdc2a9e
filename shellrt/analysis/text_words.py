"""Split a part's source text into shell words, keeping substitutions whole.

Why: the checks that read a writing part's words after planning (`written_places`) split its text
with ``shlex``, which knows no ``$(…)``: a word nesting quotes inside a substitution (``cp q
"$(dirname "$(command -v git)")/ls"``) was cut inside it, or the split failed, so the program name
after the substitution was never read (red team, round 41's Left). Quotes are removed at the top
level only; a substitution's text stays as written (it is a run-time piece, never a name).
"""

from __future__ import annotations

__all__ = ["split_words"]

_BLANKS = " \t\n"


def split_words(text: str) -> list[str]:
    """The words of ``text`` as bash splits a simple command's source (no expansion done)."""
    words: list[str] = []
    piece: list[str] = []
    started = False
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in _BLANKS:
            if started:
                words.append("".join(piece))
                piece, started = [], False
            i += 1
            continue
        started = True
        if c == "\\":
            piece.append(text[i + 1 : i + 2])
            i += 2
        elif c == "'":
            end = text.find("'", i + 1)
            end = n if end < 0 else end
            piece.append(text[i + 1 : end])
            i = end + 1
        elif c == '"':
            end = _double_end(text, i + 1)
            piece.append(text[i + 1 : end])
            i = end + 1
        elif c == "`" or text.startswith(("$(", "${"), i):
            end = _substitution_end(text, i)
            piece.append(text[i:end])
            i = end
        else:
            piece.append(c)
            i += 1
    if started:
        words.append("".join(piece))
    return words


def _double_end(text: str, i: int) -> int:
    """The index of the ``"`` closing a double-quoted string that starts at ``i`` (len at none)."""
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
        elif c == '"':
            return i
        elif c == "`" or text.startswith(("$(", "${"), i):
            i = _substitution_end(text, i)
        else:
            i += 1
    return n


def _substitution_end(text: str, i: int) -> int:
    """The index just past the ``$(…)``, ``${…}`` or backquoted piece starting at ``i``: quotes and
    nested pieces inside are skipped whole (len at none)."""
    n = len(text)
    if text[i] == "`":
        while (i := i + 1) < n:
            if text[i] == "\\":
                i += 1
            elif text[i] == "`":
                return i + 1
        return n
    opening = text[i + 1]
    closing = ")" if opening == "(" else "}"
    depth, i = 1, i + 2
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "'" and opening == "(":
            end = text.find("'", i + 1)
            i = n if end < 0 else end + 1
            continue
        if c == '"':
            i = _double_end(text, i + 1) + 1
            continue
        if c == "`" or text.startswith(("$(", "${"), i):
            i = _substitution_end(text, i)
            continue
        if c == opening:
            depth += 1
        elif c == closing:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n
