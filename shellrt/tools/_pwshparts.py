"""A PowerShell command's parts as the permission engine judges them (`CommandPart`).

Why a module of its own: the PowerShell analysis names subcommands but no paths, and
PowerShell resolves names in ways a literal rule does not see: cmdlets are
case-insensitive (``REMOVE-ITEM``), have aliases (``ri``, ``del``), module-qualified
names (``Microsoft.PowerShell.Management\\Remove-Item``), and run code chosen at run
time (``iex``, ``& $c``, ``Start-Process``). Without parts, ``PowerShell(Remove-Item:*)``
missed all of these and ``Read(...)``/``Edit(...)`` rules were never checked at all.

Each part is named by its canonical ``Verb-Noun`` cmdlet (what rules are written
against), reads paths the analysis does not know (so path deny and ask rules fail
closed) and, unless the whole command is read-only, may write unknown files. A name that may run
more than one command (``Content`` is Get-Content when nothing else has that name, ``md`` is
New-Item or the program mkdir) carries each other command for deny and ask rules (`analysis.pwsh_names.also_runs`).
"""

from __future__ import annotations

import re
from typing import Final

from shellrt.analysis import CommandAnalysis
from shellrt.analysis.pwsh_names import also_runs, canonical_name
from shellrt.permissions.interfaces import CommandPart
from shellrt.tools._bashparts import git_hazard, git_reads_only

__all__ = ["powershell_git_hazard", "powershell_parts", "powershell_path_words"]

#: ``$name = literal`` (a number or a quoted string with no expansion).
_LITERAL: Final = re.compile(r"-?[0-9.]+|'[^']*'|\"[^\"$`]*\"").fullmatch
_VARIABLE: Final = re.compile(r"\$[A-Za-z_][A-Za-z0-9_]*").fullmatch


def powershell_git_hazard(a: CommandAnalysis, cwd: str) -> str:
    """Why a git part of this PowerShell command would run a program the repository names ("" when none).

    The Bash tool checks the repository a git part obeys (a clean filter, a textconv driver: programs
    the hardening environment cannot switch off) in every directory the command may be in; the
    PowerShell tool judged no parts, so a read-only ``git status`` ran them unasked (round 22).
    PowerShell's locations are not resolved here (either separator, ``~``, providers, ``Pop-Location``,
    ``Set-Location -``): git after any location change is not checked and asks."""
    gits = [sub for sub in a.subcommands if sub.name == "git" and sub.argv]
    if not gits:
        return ""
    moves = {"cd", "chdir", "sl", "pushd", "popd", "set-location", "push-location", "pop-location"}
    if a.cd_targets or any(sub.name.lower() in moves for sub in a.subcommands):
        return "git runs after a location change, in a directory whose configuration was not checked"
    for sub in gits:
        if a.read_only or git_reads_only(sub.argv):
            hazard = git_hazard(sub.argv, cwd, hardened=a.read_only)
            if hazard:
                return hazard
    return ""


def powershell_parts(a: CommandAnalysis) -> list[CommandPart]:
    """The parts of a parsed PowerShell command; reads are always unknown."""
    parts: list[CommandPart] = []
    writes_unknown = ("",) if not a.read_only else ()
    for sub in a.subcommands:
        argv = tuple(sub.argv)
        if len(argv) == 3 and argv[1] == "=" and _VARIABLE(argv[0]) and _LITERAL(argv[2]):
            parts.append(
                CommandPart(text=sub.text, argv=argv, assignment_only=True, why_not="assigns a variable")
            )
            continue
        name = canonical_name(argv[0]) if argv and sub.static_name and sub.name else ""
        text = " ".join((name, *argv[1:])) if name else sub.text
        # Deny and ask rules search `assigned` as commands a part may run (allow rules never do).
        also = tuple(" ".join((other, *argv[1:])) for other in also_runs(argv[0], name)) if name else ()
        parts.append(
            CommandPart(
                text=text,
                argv=(name, *argv[1:]) if name else argv,
                name=name,
                reads=("",),
                program_writes=writes_unknown,
                why_not="PowerShell paths are not resolved by the analysis",
                assigned=also,
            )
        )
    return parts


#: A drive qualifier (``Env:``, ``C:``, ``HKLM:``): not a workspace path (providers: ``::`` anywhere).
_DRIVE: Final = re.compile(r"[A-Za-z][\w.]*:").match
#: What PowerShell expands or evaluates inside an argument (outside single quotes).
_DYNAMIC: Final = frozenset("$`(@{")


def powershell_path_words(word: str) -> list[str | None]:
    """The path-like values a PowerShell argument word may name, as a bash-style check reads them;
    None for one that cannot be resolved here (the caller treats it as outside the workspace).

    Why: PowerShell passes ``-Path:/etc/x`` (a value attached to its parameter), ``"/etc/x"``
    (quotes kept in the analysis's argv), ``a,/etc/x`` (an array), ``..\\x`` (either separator
    on Unix), ``FileSystem::/etc/x``, ``Env:NAME`` and ``~`` in quotes to its providers; a check
    that only looks for a leading ``/``, ``~`` or ``..`` let them all read outside the workspace."""
    if word.startswith("-"):
        _, colon, value = word.partition(":")
        if not colon or not value:
            return []  # a parameter name; its value, if any, is the next word
        word = value
    out: list[str | None] = []
    for item in word.split(","):
        quoted = len(item) >= 2 and item[0] == item[-1] and item[0] in "'\""
        if quoted:
            item = item[1:-1]
        if (not quoted or word[0] == '"') and not _DYNAMIC.isdisjoint(item):
            out.append(None)
            continue
        item = item.replace("\\", "/")
        out.append(None if "::" in item or _DRIVE(item) else item)
    return out
