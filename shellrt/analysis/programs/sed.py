"""``sed``: read-only only with ``-n`` and a script that just prints.

The script is parsed command by command; ``w``/``W``/``r``/``R``/``e`` commands,
``s///`` with the ``w`` or ``e`` flag, and anything not understood are rejected.
A delimiter inside a bracket expression does not end a regex (``s/[/]/x/w f`` has the
flag ``w f``); GNU and BusyBox sed read brackets differently, so each part is ended
under both readings and a script they split differently is refused.
"""

from __future__ import annotations

from typing import Final

from .spec import ProgramSpec, longs, parse_args

__all__ = ["SED_SPEC", "check_sed", "script_runs", "script_writes"]

#: sed's options (``-i[SUFFIX]`` takes an attached suffix only).
SED_SPEC: Final = ProgramSpec(
    "sed", short="nErsuz", short_arg="elf", short_opt="i", long=longs(
        "quiet silent regexp-extended null-data zero-terminated separate unbuffered posix debug sandbox "
        "expression= line-length= file= in-place=? follow-symlinks help version"),
    forbidden={"-i": "edits files in place", "--in-place": "edits files in place",
               "-f": "script from a file (not checked)", "--file": "script from a file (not checked)"},
)
#: Commands that only print, move through input or branch.
_SAFE_CMDS: Final = frozenset("pPl=qQnNdDgGhHxz")


def check_sed(args: list[str]) -> list[str]:
    """Reasons ``sed`` is not read-only."""
    parsed = parse_args(SED_SPEC, args)
    reasons = list(parsed.reasons)
    if not parsed.has("-n", "--quiet", "--silent"):
        reasons.append("sed without -n: only print-only scripts under -n are treated as read-only")
    scripts = parsed.values("-e", "--expression")
    positionals = parsed.positionals
    if not scripts and not parsed.has("-f", "--file"):
        if not positionals:
            return [*reasons, "sed: no script"]
        scripts = [positionals[0]]
    for script in scripts:
        reasons.extend(_check_script(script))
    if len(scripts) > 1 and not reasons:
        # sed joins its -e scripts with newlines: a part may run on into the next one.
        reasons.extend(_check_script("\n".join(scripts)))
    return reasons


def script_writes(script: str) -> bool:
    """True when the script may write a file (``w``, ``W``, ``s///w``, or anything not understood)."""
    return bool(_check_script(script))


def script_runs(script: str) -> bool:
    """True when the script may run a command (``e``, ``s///e``, or anything not understood).

    Why: round 29 asked for any script holding an ``e`` that was not print-only, so ``3a text``
    (text to append, never run) asked beside every command rule (round 30)."""
    return bool(_check_script(script, runs=True))


#: Commands whose argument runs to the end of the line: text (a, i, c), a file name (r, R, w, W).
_LINE_ARGUMENT: Final = frozenset("aicrRwW")
#: Commands whose argument is a label (b, t, T, :) or a version (v): up to a ``;``, a blank or the line's end.
_LABELLED: Final = frozenset("btT:v")


def _line_end(script: str, i: int, *, continued: bool) -> int:
    """Index of the newline ending the argument from ``i`` (a ``\\``-newline continues text)."""
    n = len(script)
    while i < n and script[i] != "\n":
        i += 2 if continued and script[i] == "\\" else 1
    return i


def _check_script(script: str, runs: bool = False) -> list[str]:
    """Why the script is not print-only; with ``runs``, only why it may run a command."""
    i = 0
    n = len(script)
    while i < n:
        ch = script[i]
        if ch in " \t\n;{}!":
            i += 1
            continue
        # Address: number, $, /re/, \cREc, first~step, +N, ~N; then optional ,addr.
        j = _skip_address(script, i)
        if j is None:
            return [f"sed: cannot parse address at {script[i:i + 10]!r}"]
        if j != i:
            i = j
            continue
        if ch == "s" or ch == "y":
            end = _skip_command(script, i + 1, ch)
            if end is None:
                return [f"sed: cannot parse {ch} command"]
            i = end
            if ch == "s":
                while i < n and script[i] in "gpiImM0123456789":
                    i += 1
                if runs and i < n and script[i] == "w":
                    i = _line_end(script, i, continued=False)
                    continue
                if i < n and script[i] in "we":
                    return [f"sed s///{script[i]}: {'writes a file' if script[i] == 'w' else 'executes a command'}"]
            if i < n and script[i] not in " \t\n;}#":
                return [f"sed: unexpected {script[i]!r} after the {ch} command ({_UNREAD})"]
            continue
        if runs and ch in _LINE_ARGUMENT:
            i = _line_end(script, i + 1, continued=ch in "aic")
            continue
        if runs and ch in _LABELLED:
            i += 1
            while i < n and script[i] in " \t":
                i += 1
            while i < n and script[i] not in "; \t\n":  # GNU sed 4.9 ends a label at a blank too
                i += 1
            continue
        if ch in _SAFE_CMDS or (runs and ch == "F"):
            i += 1
            if ch in "qQlL":
                while i < n and script[i].isdigit():
                    i += 1
            continue
        if ch == "#":
            while i < n and script[i] != "\n":
                i += 1
            continue
        if ch in "wWrReF":
            return [f"sed command {ch!r}: {'reads or writes files' if ch in 'wWrR' else 'executes a command'}"]
        return [f"sed command {ch!r} is not modelled as read-only"]
    return []


#: Said when a script is refused because its syntax is outside what this check reads.
_UNREAD = "a form this check does not read is not treated as read-only"
#: Delimiters that mean something inside a bracket expression: refused there.
_BRACKET_SPECIAL = frozenset("[]^-:.=\\")


def _skip_address(s: str, i: int) -> int | None:
    n = len(s)
    start = i
    while i < n:
        ch = s[i]
        if ch.isdigit() or ch in "$~+,":
            i += 1
        elif ch == "/":
            end = _regex_end(s, i + 1, "/")
            if end is None:
                return None
            i = end
            while i < n and s[i] in "IM":
                i += 1
        elif ch == "\\" and i + 1 < n:
            if s[i + 1] in "\\\n[]":
                return None  # a delimiter sed refuses, or one that opens or closes a bracket
            end = _regex_end(s, i + 2, s[i + 1])
            if end is None:
                return None
            i = end
        else:
            break
    return i if i != start else start


def _skip_command(s: str, i: int, command: str) -> int | None:
    """Skip the two strings of ``s`` (regex, replacement) or ``y`` after the delimiter at ``i``."""
    if i >= len(s):
        return None
    d = s[i]
    if d in "\\\n" or d in "[]":
        return None
    if command == "s":
        end = _regex_end(s, i + 1, d)
        return None if end is None else _part_end(s, end, d, brackets=None)
    # GNU sed reads y's strings literally, BusyBox reads brackets in them: both must agree.
    end = _agreed(s, i + 1, d, None, False)
    return None if end is None else _agreed(s, end, d, None, False)


def _regex_end(s: str, i: int, d: str) -> int | None:
    """Index after the delimiter ``d`` ending the regex from ``i``, where GNU and BusyBox sed agree.

    Both skip a delimiter inside a bracket expression; GNU also reads ``[:class:]``,
    ``[.coll.]`` and ``[=equiv=]`` inside it (BusyBox ends the bracket at their ``]``).
    A regex the two end in different places is not read (None): sed could be either.
    """
    return _agreed(s, i, d, True, False)


def _agreed(s: str, i: int, d: str, first: bool | None, second: bool | None) -> int | None:
    a = _part_end(s, i, d, brackets=first)
    b = _part_end(s, i, d, brackets=second)
    return a if a is not None and a == b else None


def _part_end(s: str, i: int, d: str, *, brackets: bool | None) -> int | None:
    """Index after the delimiter ending the part from ``i``; None when it is not read.

    ``brackets`` is None for literal strings (a replacement, GNU's ``y``), False for
    bracket expressions without classes (BusyBox), True for GNU's bracket expressions.
    An unescaped newline, a trailing or newline-escaping backslash, or no end is refused.
    """
    n = len(s)
    while i < n:
        ch = s[i]
        if ch == d:
            return i + 1
        if ch == "\n":
            return None
        if ch == "\\":
            if i + 1 >= n or s[i + 1] == "\n":
                return None
            i += 2
            continue
        if ch == "[" and brackets is not None:
            end = _bracket_end(s, i, d, classes=brackets)
            if end is None:
                return None
            i = end
            continue
        i += 1
    return None


def _bracket_end(s: str, i: int, d: str, *, classes: bool) -> int | None:
    """Index after the ``]`` closing the bracket expression opened at ``i`` (a backslash is literal there)."""
    n = len(s)
    start = i
    i += 1
    if i < n and s[i] == "^":
        i += 1
    if i < n and s[i] == "]":
        i += 1
    while i < n:
        ch = s[i]
        if ch == "\n":
            return None
        if ch == "]":
            if d in _BRACKET_SPECIAL and d in s[start:i + 1]:
                return None
            return i + 1
        if classes and ch == "[" and i + 1 < n and s[i + 1] in ":.=":
            close = s.find(s[i + 1] + "]", i + 2)
            if close < 0 or d in s[i + 2:close] or "\n" in s[i + 2:close]:
                return None
            i = close + 2
            continue
        i += 1
    return None
