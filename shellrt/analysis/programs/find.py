"""``find``: read-only when the expression only tests and prints to stdout."""

from __future__ import annotations

import re
from typing import Final

__all__ = ["check_find", "find_exec_commands"]

_NOARG: Final = frozenset(
    ["-empty", "-executable", "-readable", "-writable", "-nouser", "-nogroup", "-true", "-false", "-prune", "-print", "-print0", "-ls", "-quit", "-depth", "-d", "-mount", "-xdev", "-follow", "-noleaf", "-ignore_readdir_race", "-noignore_readdir_race", "-daystart", "-not", "-a", "-and", "-o", "-or", "-help", "--help", "-version", "--version", "(", ")", "!", ","]
)
_ARG: Final = frozenset(
    ["-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex", "-type", "-xtype", "-size", "-perm", "-user", "-group", "-uid", "-gid", "-mtime", "-atime", "-ctime", "-mmin", "-amin", "-cmin", "-newer", "-anewer", "-cnewer", "-links", "-inum", "-samefile", "-lname", "-ilname", "-maxdepth", "-mindepth", "-regextype", "-fstype", "-used", "-context", "-printf", "-files0-from"]
)
_FORBIDDEN: Final = {
    "-exec": "runs a command", "-execdir": "runs a command", "-ok": "runs a command", "-okdir": "runs a command",
    "-delete": "deletes files", "-fprint": "writes a file", "-fprint0": "writes a file",
    "-fprintf": "writes a file", "-fls": "writes a file",
}
_NEWER_XY: Final = re.compile(r"^-newer[aBcmt][aBcmt]$")
_EXEC: Final = ("-exec", "-execdir", "-ok", "-okdir")


def check_find(args: list[str]) -> list[str]:
    """Reasons the ``find`` invocation is not read-only (empty: read-only)."""
    reasons: list[str] = []
    i = 0
    # Leading options: -H -L -P -D debugopts -Olevel.
    while (i < len(args) and args[i] in ("-H", "-L", "-P", "-D")) or (i < len(args) and args[i].startswith("-O")):
        i += 2 if args[i] == "-D" else 1
    # Starting points: everything up to the first expression word.
    while i < len(args) and not (args[i].startswith("-") or args[i] in ("(", ")", "!", ",")):
        i += 1
    while i < len(args):
        word = args[i]
        i += 1
        if word in _FORBIDDEN:
            reasons.append(f"find {word}: {_FORBIDDEN[word]}")
            continue
        if word in _NOARG:
            continue
        if word in _ARG or _NEWER_XY.match(word):
            i += 1
            if i > len(args):
                reasons.append(f"find {word}: missing value")
            continue
        reasons.append(f"find: unknown or non-test expression word {word!r}")
    return reasons


def find_exec_commands(args: list[str]) -> list[list[int]]:
    """Index ranges (into ``args``) of the commands ``find -exec ... ;`` would run."""
    out: list[list[int]] = []
    i = 0
    while i < len(args):
        if args[i] in _EXEC:
            start = i + 1
            j = start
            while j < len(args) and args[j] not in (";", "+"):
                j += 1
            if j > start:
                out.append(list(range(start, j)))
            i = j
        i += 1
    return out
