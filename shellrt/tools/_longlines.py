"""Edit's and Write's view of very long lines: a window of each, never the whole line.

Why (red team round 47): Edit's ``cat -n`` snippet and Edit's and Write's diff held every line
they showed whole. One Edit in a one-line 60 MB file (a minified bundle a repository ships) gave
the model a 60-million-character result, people and the transcript a 120-million-character diff
twice, and held the host for 11 s and 700 MB -- while Read shows such a line cut at
`LINE_CHARS`. Here a line longer than that is shown cut: the snippet shows the edited line's
window around the change (and says which lines were cut, after the lines, where no file can
write); the diff shows each long line's head and a digest of the whole, so two long lines that
differ still differ. Work is bounded by the window, not the line (no split of the whole text).
"""

from __future__ import annotations

import hashlib
import re

from shellrt.tools._render import one_line

__all__ = ["LINE_CHARS", "cut_lines", "snippet"]

#: Characters of a line shown (Read's `MAX_LINE_CHARS`).
LINE_CHARS = 2_000
_LONG = re.compile(f"[^\n]{{{LINE_CHARS + 1}}}")


def _digest(line: str) -> str:
    return hashlib.sha256(line.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def cut_lines(text: str) -> str:
    """``text`` with each line longer than `LINE_CHARS` cut to its head, a count of the rest and a
    digest of the whole line (for a diff: a change past the head still shows). ``text`` itself
    when no line is that long."""
    if len(text) <= LINE_CHARS or _LONG.search(text) is None:
        return text
    lines = text.split("\n")
    for n, line in enumerate(lines):
        if len(line) > LINE_CHARS:
            more = len(line) - LINE_CHARS
            lines[n] = f"{line[:LINE_CHARS]}… [{more:,} more characters; sha256 {_digest(line)}]"
    return "\n".join(lines)


def snippet(text: str, at: int, span: int, *, context: int = 3, max_lines: int = 16) -> str:
    """`shellrt.tools._render.numbered_snippet` (``cat -n`` lines around ``text[at : at + span]``,
    numbered as Read numbers them), each line cut to a window of `LINE_CHARS` characters: around the
    change on the line it starts in, else the line's head; a note after the lines names the lines
    cut. Only the lines shown are looked at."""
    first = text.count("\n", 0, at)
    last = first + text.count("\n", at, at + max(span, 0))
    lo = max(0, first - context)
    hi = min(last + context + 1, lo + max_lines)
    pos = text.rfind("\n", 0, at) + 1  # where line `first` starts
    for _ in range(first - lo):
        pos = text.rfind("\n", 0, pos - 1) + 1
    rows: list[str] = []
    cut: list[int] = []
    n = lo
    while n < hi and not (pos >= len(text) and n > lo):  # no line after a last line break
        end = text.find("\n", pos)
        end = len(text) if end == -1 else end
        if end - pos <= LINE_CHARS:
            shown = text[pos:end].removesuffix("\r")
        else:
            start = max(pos, min(at - LINE_CHARS // 4, end - LINE_CHARS)) if pos <= at <= end else pos
            stop = min(end, start + LINE_CHARS)
            before = f"[… {start - pos:,} characters] " if start > pos else ""
            after = f" [… {end - stop:,} characters]" if stop < end else ""
            piece = text[start:stop]
            shown = before + (piece.removesuffix("\r") if stop == end else piece) + after
            cut.append(n + 1)
        rows.append(f"{n + 1:>6}\t{one_line(shown)[0]}")
        pos, n = end + 1, n + 1
    if cut:
        named = ", ".join(str(c) for c in cut)
        rows.append(
            f"(Line{'s' if len(cut) > 1 else ''} {named} {'are' if len(cut) > 1 else 'is'} longer than "
            f"{LINE_CHARS:,} characters and shown cut around the change, the cuts marked '[… N characters]'; "
            "Bash shows the rest, e.g. `cut -c1-4000`.)"
        )
    return "\n".join(rows)
