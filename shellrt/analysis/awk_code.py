"""Whether an awk program may run a command: ``system(…)``, a pipe to or from one, an extension.

Round 29 asked for any ``|`` or ``system`` in the program text, so ``{print "a|b"}`` and ``$1 || $2``
asked beside every command rule. Only code outside string literals and regexes runs; there a ``|``
that is not part of ``||`` is a pipe (``print | cmd``, ``cmd | getline``, gawk's ``|&``). A regex
is told from a division as awk's lexer does (by what precedes the ``/``); where that is not
certain and a quote follows, the program is not read (fail closed).
"""

from __future__ import annotations

import re

__all__ = ["awk_runs"]

#: What runs a command once strings are gone: ``system``, a lone ``|``, and any ``@`` but
#: ``@namespace``: ``@load`` of an extension, ``@include`` of a file (``"/dev/stdin"``) and gawk's
#: indirect calls (``f = "sys" "tem"; @f($0)``: the name is in strings; round 31).
_RUNS = re.compile(r"system|(?<!\|)\|(?!\|)|\|\|\||@(?!namespace\b)")


def awk_runs(program: str) -> bool:
    """True when ``program`` may run a command (or is not read: an unclosed string, a ``"`` that a
    regex may hold)."""
    code = _code_outside_strings(program)
    return code is None or _RUNS.search(code) is not None


#: A ``/`` after one of these (or a keyword, or at the start) opens a regex, as awk's lexer reads it;
#: after ``+``/``-`` it may be a division (``a++ / 2``), so those are left out (read as a division).
_BEFORE_REGEX = frozenset("(,{;~!&|?:=<>*%^}\n")
_KEYWORDS = re.compile(r"(?:^|[^\w$])(?:print|printf|return|case|in|do|else)$")


def _code_outside_strings(program: str) -> str | None:
    """``program`` with string literals and regexes emptied; None when that is not certain."""
    out: list[str] = []
    i, n = 0, len(program)
    while i < n:
        opens = _opens(program, i, "".join(out) if program[i] == "/" else "")
        if opens is None:
            return None
        if opens:
            end = (_regex_end if opens == "//" else _string_end)(program, i + 1)
            if end is None:
                return None
            out.append(opens)
            i = end
            continue
        out.append(program[i])
        i += 1
    return "".join(out)


def _opens(program: str, i: int, before: str) -> str | None:
    """What starts at ``i``: ``//`` a regex, ``""`` a string, "" neither, None not certain."""
    if program[i] == '"':
        return '""'
    if program[i] != "/":
        return ""
    before = before.rstrip(" \t")
    if not before or before[-1] in _BEFORE_REGEX or _KEYWORDS.search(before):
        return "//"
    # A division: but if awk reads a regex here, a quote in it would open no string.
    line_end = program.find("\n", i)
    return None if '"' in program[i : len(program) if line_end < 0 else line_end] else ""


def _string_end(program: str, i: int) -> int | None:
    """Index after the ``"`` closing the string from ``i`` (a raw newline never is in one)."""
    while i < len(program) and program[i] != '"':
        if program[i] == "\n":
            return None
        i += 2 if program[i] == "\\" else 1
    return i + 1 if i < len(program) else None


def _regex_end(program: str, i: int) -> int | None:
    """Index after the ``/`` closing the regex from ``i`` (escapes and bracket expressions skipped)."""
    n = len(program)
    while i < n and program[i] != "/":
        if program[i] == "\n":
            return None
        if program[i] == "[":
            i += 1
            i += 1 if i < n and program[i] == "^" else 0
            i += 1 if i < n and program[i] == "]" else 0
            while i < n and program[i] != "]":
                if program[i] == "\n":
                    return None
                if program[i] == "[" and program[i + 1 : i + 2] in (":", ".", "="):
                    close = program.find(program[i + 1] + "]", i + 2)  # [:alpha:] may hold a /
                    if close < 0:
                        return None
                    i = close + 1
                i += 1
        i += 2 if i < n and program[i] == "\\" else 1
    return i + 1 if i < n else None
