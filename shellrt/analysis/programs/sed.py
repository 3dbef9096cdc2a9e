"""``sed``: read-only only with ``-n`` and a script that just prints.

The script is parsed command by command; ``w``/``W``/``r``/``R``/``e`` commands,
``s///`` with the ``w`` or ``e`` flag, and anything not understood are rejected.
"""

from __future__ import annotations

from typing import Final

from .spec import ProgramSpec, longs, parse_args

__all__ = ["SED_SPEC", "check_sed", "script_writes"]

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
    return reasons


def script_writes(script: str) -> bool:
    """True when the script may write a file (``w``, ``W``, ``s///w``, or anything not understood)."""
    return bool(_check_script(script))


def _check_script(script: str) -> list[str]:
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
            end = _skip_delimited(script, i + 1, 2)
            if end is None:
                return [f"sed: cannot parse {ch} command"]
            i = end
            if ch == "s":
                while i < n and script[i] in "gpiImM0123456789":
                    i += 1
                if i < n and script[i] in "we":
                    return [f"sed s///{script[i]}: {'writes a file' if script[i] == 'w' else 'executes a command'}"]
            continue
        if ch in _SAFE_CMDS:
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


def _skip_address(s: str, i: int) -> int | None:
    n = len(s)
    start = i
    while i < n:
        ch = s[i]
        if ch.isdigit() or ch in "$~+,":
            i += 1
        elif ch == "/":
            end = _skip_delimited(s, i, 1, delim="/")
            if end is None:
                return None
            i = end
            while i < n and s[i] in "IM":
                i += 1
        elif ch == "\\" and i + 1 < n:
            end = _skip_delimited(s, i + 1, 1)
            if end is None:
                return None
            i = end
        else:
            break
    return i if i != start else start


def _skip_delimited(s: str, i: int, parts: int, delim: str | None = None) -> int | None:
    """Skip ``<d>part<d>...`` (``parts`` sections) starting at the delimiter at ``i``."""
    if i >= len(s):
        return None
    d = delim or s[i]
    if d in "\\\n":
        return None
    i += 1
    for _ in range(parts):
        while i < len(s) and s[i] != d:
            i += 2 if s[i] == "\\" else 1
        if i >= len(s):
            return None
        i += 1
    return i
