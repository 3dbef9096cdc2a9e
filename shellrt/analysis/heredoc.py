"""Here-documents, read the way bash reads them (tree-sitter-bash does not).

The grammar leaves backquotes and ``$(...)`` on indented body lines as plain text,
and its idea of where a body ends is not bash's. So the planner (1) checks that
bash ends each body on the same line the parser did (else it fails closed), and
(2) scans an expanding body itself: every ``$(...)``, backquote, ``${...}``,
``$((...))`` and ``$[...]`` is found, and the commands inside are planned.
Anything this scanner does not understand is reported as a problem (fail closed).
"""

from __future__ import annotations

import re
from typing import Final

from .nodes import Word

__all__ = ["BodyScan", "bash_delimiter", "bash_end_line", "glued_metacharacter", "join_continuations", "scan_body"]

_NAME_START: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_NAME_CHARS: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_0123456789")
_SPECIAL_PARAMS: Final = frozenset("@*#?$!-0123456789")
_SIMPLE_BRACED: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!_-]").fullmatch
_PURE_ARITH: Final = re.compile(r"[0-9+\-*/%() \t<>=!&|^~?:]*").fullmatch
_SIMPLE: Final[frozenset[str]] = frozenset({"parameter", "simple_parameter"})
_COMPLEX: Final[frozenset[str]] = frozenset({"parameter", "complex_parameter"})
_ARITH: Final[frozenset[str]] = frozenset({"arithmetic"})
_PURE: Final[frozenset[str]] = frozenset({"pure_arithmetic"})
_UNKNOWN: Final[frozenset[str]] = frozenset({"unknown_node"})
#: Inside a ``$(...)`` these make the end of the substitution depend on bash's full grammar
#: (comments, ``case`` patterns, nested here-documents): the scanner does not guess.
_UNSURE_INNER: Final = ("#", "case", "<<")
#: Unquoted, these end bash's delimiter word (``<<E;`` is ``<<E`` then ``;``); tree-sitter-bash keeps
#: them in it, so the two read different bodies and different commands after them.
_METACHARACTERS: Final = frozenset(";|&()<> \t\n")


class BodyScan:
    """Expansions (judged like echo data), substitutions (kind, raw text, inner script) and problems."""

    __slots__ = ("expansions", "problems", "substitutions")

    def __init__(self) -> None:
        self.expansions: list[Word] = []
        self.substitutions: list[tuple[str, str, str]] = []
        self.problems: list[str] = []


def bash_delimiter(word: str) -> tuple[str, bool] | None:
    """The delimiter bash compares lines with (quote removal) and whether it was quoted; None: not modelled."""
    if "$" in word or "`" in word:
        return None
    out: list[str] = []
    quoted = False
    i = 0
    n = len(word)
    while i < n:
        ch = word[i]
        if ch == "\\":
            quoted = True
            if i + 1 < n:
                out.append(word[i + 1])
            i += 2
            continue
        if ch == "'" or ch == '"':
            quoted = True
            end = word.find(ch, i + 1)
            if end < 0:
                return None
            inner = word[i + 1 : end]
            if ch == '"' and "\\" in inner:
                return None
            out.append(inner)
            i = end + 1
            continue
        out.append(ch)
        i += 1
    return "".join(out), quoted


def glued_metacharacter(word: str) -> bool:
    """Whether the parser's delimiter word holds an unquoted metacharacter, where bash's word ends.

    bash then reads another body (it ends at the shorter word) and runs what follows the
    metacharacter as commands, both hidden in what the parser calls the delimiter and the body.
    """
    i = 0
    n = len(word)
    while i < n:
        ch = word[i]
        if ch == "\\":
            i += 2
        elif ch == "'" or ch == '"':
            end = word.find(ch, i + 1)
            if end < 0:
                return False  # not a word bash_delimiter models either
            i = end + 1
        elif ch in _METACHARACTERS:
            return True
        else:
            i += 1
    return False


def bash_end_line(source: bytes, first: int, delimiter: bytes, strip_tabs: bool, joins: bool) -> int:
    """Byte offset of the line that ends a body starting at ``first`` (``len(source)``: none does).

    ``joins``: the delimiter was unquoted, so bash joins a line ending in ``\\`` with the next one
    before comparing (``EO\\`` + ``F`` ends a body delimited by ``EOF``).
    """
    pos = first
    n = len(source)
    while pos < n:
        start = pos
        parts: list[bytes] = []
        while True:
            nl = source.find(b"\n", pos)
            end = n if nl < 0 else nl
            line = source[pos:end]
            if strip_tabs:
                line = line.lstrip(b"\t")
            pos = n if nl < 0 else nl + 1
            if joins and nl >= 0 and _odd_backslashes(line):
                parts.append(line[:-1])
                continue
            parts.append(line)
            break
        if b"".join(parts) == delimiter:
            return start
    return n


def join_continuations(text: str) -> str:
    """Remove backslash-newline pairs the way bash does in an expanding body (``$\\`` + ``(id)`` runs id)."""
    out: list[str] = []
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "\\" and i + 1 < n:
            if text[i + 1] == "\n":
                i += 2
                continue
            out.append(text[i : i + 2])
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _odd_backslashes(line: bytes) -> bool:
    count = len(line) - len(line.rstrip(b"\\"))
    return count % 2 == 1


def scan_body(text: str) -> BodyScan:
    """Every expansion and substitution bash performs in an expanding here-document body."""
    scan = BodyScan()
    _scan(text, scan)
    return scan


def _scan(text: str, scan: BodyScan) -> None:
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "`":
            i = _backquote(text, i, scan)
            continue
        if ch != "$" or i + 1 >= n:
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "(":
            if text.startswith("((", i + 1):
                end = _match(text, i + 3, "(", ")", 2)
                if end < 0:
                    return _unterminated(text, i, scan)
                inner = text[i + 3 : end - 2]
                scan.expansions.append(Word(text[i:end], None, _PURE if _PURE_ARITH(inner) else _ARITH))
                _scan(inner, scan)
                i = end
                continue
            end = _match(text, i + 2, "(", ")", 1)
            if end < 0:
                return _unterminated(text, i, scan)
            inner = text[i + 2 : end - 1]
            if any(marker in inner for marker in _UNSURE_INNER):
                scan.problems.append(f"command substitution {text[i:end]!r} in a here-document is not modelled")
            scan.substitutions.append(("command", text[i:end], inner))
            i = end
        elif nxt == "[":
            end = _match(text, i + 2, "[", "]", 1)
            if end < 0:
                return _unterminated(text, i, scan)
            scan.expansions.append(Word(text[i:end], None, _ARITH))
            _scan(text[i + 2 : end - 1], scan)
            i = end
        elif nxt == "{":
            end = _match(text, i + 2, "{", "}", 1)
            if end < 0:
                return _unterminated(text, i, scan)
            inner = text[i + 2 : end - 1]
            if _SIMPLE_BRACED(inner):
                scan.expansions.append(Word(text[i:end], None, _SIMPLE))
            else:
                scan.expansions.append(Word(text[i:end], None, _COMPLEX))
                _scan(inner, scan)
            i = end
        elif nxt in _NAME_START:
            j = i + 2
            while j < n and text[j] in _NAME_CHARS:
                j += 1
            scan.expansions.append(Word(text[i:j], None, _SIMPLE))
            i = j
        elif nxt in _SPECIAL_PARAMS:
            scan.expansions.append(Word(text[i : i + 2], None, _SIMPLE))
            i += 2
        elif nxt == "'" or nxt == '"':
            scan.expansions.append(Word(text[i : i + 2], None, _UNKNOWN))
            i += 2
        else:
            i += 1  # a lone `$` is literal


def _unterminated(text: str, i: int, scan: BodyScan) -> None:
    scan.problems.append(f"unterminated expansion {text[i:i + 20]!r} in a here-document")
    scan.substitutions.append(("command", text[i:], text[i + 2 :]))


def _backquote(text: str, i: int, scan: BodyScan) -> int:
    """Record the backquote substitution starting at ``i``; returns the index after it."""
    inner: list[str] = []
    j = i + 1
    n = len(text)
    while j < n:
        c = text[j]
        if c == "\\" and j + 1 < n:
            nxt = text[j + 1]
            inner.append(nxt if nxt in "$`\\" else c + nxt)
            j += 2
            continue
        if c == "`":
            scan.substitutions.append(("backtick", text[i : j + 1], "".join(inner)))
            return j + 1
        inner.append(c)
        j += 1
    scan.problems.append(f"unterminated backquote {text[i:i + 20]!r} in a here-document")
    scan.substitutions.append(("backtick", text[i:], "".join(inner)))
    return n


def _match(text: str, i: int, open_ch: str, close_ch: str, closes: int) -> int:
    """Index after the ``closes`` closing characters that end a construct opened before ``i`` (-1: none)."""
    depth = closes
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "'" and open_ch == "(":
            end = text.find("'", i + 1)
            if end < 0:
                return -1
            i = end + 1
            continue
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            if j >= n:
                return -1
            i = j + 1
            continue
        if c == "`":
            end = text.find("`", i + 1)
            if end < 0:
                return -1
            i = end + 1
            continue
        if c == open_ch:
            depth += 1
        elif c == close_ch:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1
