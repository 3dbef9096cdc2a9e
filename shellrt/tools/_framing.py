"""A file's own lines that would pass for a file tool's framing, escaped (standard library only).

Why: Read shows a notebook (``<cell ...>`` tags, ``<outputs ...>``) and a PDF (``--- page N of M
---``, ``(Showing pages ...)``) without line numbers, so a line of the file starts a line of the
result and could forge a cell, a page or a note on how much was shown. A line is judged as a model
reads it (red team round 23: ``\\u200b<cell``, ``\\x1b[0m</cell>`` and fullwidth ``\\uff1ccell`` passed
the round 13 check, which only stripped blanks): terminal escapes, invisible characters, blanks
and controls dropped, NFKC, case folded. The notebook's child process imports this module and `shellrt.protocol.textchars` alone.
"""

from __future__ import annotations

import re
import unicodedata

from shellrt.protocol.textchars import ANSI, DROPPED_CATEGORIES, ESCAPE_INTRODUCER, LINE_BREAKS

__all__ = ["NOTEBOOK_CUT", "NOTEBOOK_FRAMING", "NOTEBOOK_LABELS", "PDF_FRAMING", "unframed"]

#: What the notebook rendering writes at a line's start (blanks dropped, folded).
NOTEBOOK_FRAMING = ("<cell", "</cell", "<outputs", "</outputs", "(outputbudgetreached")
#: The notebook rendering's cut mark, ``… [1,204 more characters]``, as judged (NFKC folds ``…``).
NOTEBOOK_CUT = re.compile(r"\.\.\.\[[\d,]+morecharacters\]")
#: What the notebook rendering writes on a line of an output's own (red team round 25): a label
#: (``[stdout]``, ``[error] ...``, ``[text/html output, ...]``: any bracketed start opening with a
#: letter) or the cut mark. Judged in outputs only: a cell's source is inside its tags.
NOTEBOOK_LABELS = re.compile(rf"\[[a-z][^\]]*\]|{NOTEBOOK_CUT.pattern}")
#: What the PDF rendering writes at a line's start (blanks dropped, folded).
PDF_FRAMING = (
    "---page",
    "(outputbudgetreached",
    "(showingpages",
    "[noextractabletext]",
    "[textextractionfailed",
)
_FIRSTS = frozenset(o[0] for o in NOTEBOOK_FRAMING + PDF_FRAMING) | {"[", "."}
#: The line breaks Python's ``splitlines`` knows; a line start that may open framing: any first
#: character after blanks but an ASCII letter or digit (the usual line is skipped by the regex).
_BREAKS = LINE_BREAKS
_CANDIDATE = re.compile(f"(?:^|[{_BREAKS}])[ \t]*[^A-Za-z0-9 \t{_BREAKS}]")
_BREAK = re.compile(f"[{_BREAKS}]")
_JUDGED_CHARS = 160
_ENTITIES = {"<": "&lt;", "[": "&#91;"}


def _visible(c: str) -> bool:
    return not c.isspace() and unicodedata.category(c) not in DROPPED_CATEGORIES


def _reads_as(line: str, openings: tuple[str, ...], labels: re.Pattern[str] | None) -> bool:
    seen = _visible_head(line)
    if unicodedata.normalize("NFKC", seen[:1])[:1] not in _FIRSTS:
        return False  # cheap: most lines start with a character no opening starts with
    if not seen.isascii():
        seen = "".join(c for c in unicodedata.normalize("NFKC", seen) if _visible(c))
    seen = seen.casefold()
    return seen.startswith(openings) or (labels is not None and labels.match(seen) is not None)


def _visible_head(line: str) -> str:
    """The first `_JUDGED_CHARS` characters of ``line`` a reader sees, however many unseen ones come
    first (round 31: 160 zero-width spaces, ``ESC[0m`` x 40 or controls before ``</cell>`` hid it
    from a look at the line's first 160 characters)."""
    text = ANSI.sub("", line) if "\x1b" in line else line
    seen: list[str] = []
    for c in text:
        if _visible(c):
            seen.append(c)
            if len(seen) >= _JUDGED_CHARS:
                break
    return "".join(seen)


def _shown(line: str, openings: tuple[str, ...], labels: re.Pattern[str] | None) -> str | None:
    """``line`` escaped when it reads as framing, as a terminal shows it (escapes unseen) or as a
    model reads it (an escape's ``ESC`` and kind dropped: ``ESC[</cell>`` is a CSI to a terminal,
    ``</cell>`` to a model; then shown without them); None when it reads as none."""
    if _reads_as(line, openings, labels):
        return _escaped(line)
    if "\x1b" in line:
        bare = ESCAPE_INTRODUCER.sub("", line)
        if _reads_as(bare, openings, labels):
            return _escaped(bare)
    return None


def _escaped(line: str) -> str:
    """``line`` with its first visible character as an HTML character reference."""
    i = 0
    while i < len(line):
        escape = ANSI.match(line, i) if line[i] == "\x1b" else None
        if escape:
            i = escape.end()
        elif not _visible(line[i]):
            i += 1
        else:
            c = line[i]
            return line[:i] + _ENTITIES.get(c, f"&#{ord(c)};") + line[i + 1 :]
    return line


def unframed(text: str, openings: tuple[str, ...], labels: re.Pattern[str] | None = None) -> str:
    """``text`` (the file's) with each line that reads as one of ``openings`` (or that ``labels``
    matches at its start) escaped (its first visible character as ``&lt;`` / ``&#40;`` /
    ``&#91;`` ...), at any line break Python knows."""
    out: list[str] = []
    done = 0
    for candidate in _CANDIDATE.finditer(text):
        start = candidate.start() + (text[candidate.start()] in _BREAKS)  # after the line's break
        if start < done:
            continue
        end = _BREAK.search(text, start)
        line = text[start : end.start() if end else len(text)]  # whole: unseen characters may come first
        shown = _shown(line, openings, labels)
        if shown is not None:
            out += [text[done:start], shown]
            done = start + len(line)
    return "".join([*out, text[done:]]) if out else text
