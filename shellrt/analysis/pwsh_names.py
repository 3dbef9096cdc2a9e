"""What a PowerShell command word names: the one reading of aliases, module prefixes and case.

Why one module: the parts the permission engine judges (`tools._pwshparts`) and the deny/ask
rule matcher (`permissions.rules`) both read ``ri``, ``REMOVE-ITEM`` and
``Microsoft.PowerShell.Management\\Remove-Item`` as Remove-Item; two copies of that reading
drift apart (round 27's review), and a deny rule is only as good as the reading it meets.
Not compiled (mypyc): it is asked when parts and rules are built, not inside ``analyze()``.
"""

from __future__ import annotations

import re
from typing import Final

from .powershell import ALIASES, WINDOWS_ALIASES

__all__ = ["also_runs", "canonical_name", "command_key", "unqualified"]

#: Cmdlets that run code or a program named by their arguments, or rebind a name.
_RUNS_CODE: Final = frozenset(
    {
        "invoke-expression",
        "invoke-command",
        "start-process",
        "start-job",
        "start-threadjob",
        "set-alias",
        "new-alias",
        "import-module",
        "add-type",
        "invoke-item",
        "new-module",
        "register-engineevent",
        "register-objectevent",
    }
)
#: Cmdlets whose documented name has capitals inside a word (the rest: each word capitalised).
_CASED: Final = {
    name.lower(): name
    for name in [
        "ConvertFrom-Csv",
        "ConvertFrom-Json",
        "ConvertFrom-StringData",
        "ConvertTo-Csv",
        "ConvertTo-Html",
        "ConvertTo-Json",
        "ConvertTo-Xml",
        "ForEach-Object",
        "Get-ChildItem",
        "Get-ItemProperty",
        "Get-ItemPropertyValue",
        "Set-ItemProperty",
        "New-ItemProperty",
        "Remove-ItemProperty",
        "Get-PSDrive",
        "New-PSDrive",
        "Get-WmiObject",
        "Get-CimInstance",
        "Invoke-RestMethod",
        "Invoke-WebRequest",
        "Get-FileHash",
        "Start-ThreadJob",
        "Register-EngineEvent",
        "Register-ObjectEvent",
        "Get-PSReadLineOption",
        "Set-PSReadLineOption",
        "Invoke-WmiMethod",
        "Get-ExecutionPolicy",
        "Set-ExecutionPolicy",
        "Out-GridView",
    ]
}
#: Functions pwsh defines in every session (``InitialSessionState.BuiltInFunctions``; some on Windows
#: only) and the alias ``md``, with the commands they run: a deny rule on any of them must meet the name.
#: (``prompt`` and ``Clear-Host`` run no other command; ``man`` is the alias of ``help`` on Windows.)
_RUNS_ALSO: Final = {
    "md": ("mkdir", "New-Item"),
    "mkdir": ("New-Item",),
    "more": ("Get-Content", "more.com"),
    "help": ("Get-Help", "less", "more"),
    "man": ("help", "Get-Help", "less", "more"),
    "pause": ("Read-Host",),
    "oss": ("Out-String",),
    "cd..": ("Set-Location",),
    "cd\\": ("Set-Location",),
    "cd~": ("Set-Location",),
    "tabexpansion2": ("Import-Module",),  # completing a command's parameters loads its module
}
#: Windows's drive functions (``C:`` runs ``Set-Location C:``).
_DRIVE_FUNCTION: Final = re.compile(r"[A-Za-z]:").fullmatch
_CMDLET: Final = re.compile(r"[a-z]+-[a-z0-9]+").fullmatch


def unqualified(word: str) -> str:
    """``Microsoft.PowerShell.Management\\Remove-Item`` -> ``Remove-Item`` (a path such as ``.\\x``
    or ``\\\\host\\x`` is kept: pwsh runs that file)."""
    return word.rsplit("\\", 1)[-1] if "\\" in word and not word.startswith((".", "/", "\\")) else word


def command_key(word: str) -> str:
    """The lower-case command pwsh resolves ``word`` to by name: module prefix dropped, a built-in
    alias read as its cmdlet (``ri``, ``DEL``, ``M\\Remove-Item`` -> ``remove-item``); a native
    program's name, lower-cased, otherwise."""
    lower = unqualified(word).lower()
    return ALIASES.get(lower, lower)


def canonical_name(word: str) -> str:
    """``ri`` / ``REMOVE-ITEM`` / ``Module\\Remove-Item`` -> ``Remove-Item``; "" for code runners."""
    lower = command_key(word)
    if lower == "." or lower in _RUNS_CODE:
        return ""
    if _CMDLET(lower):
        return _CASED.get(lower) or "-".join(piece.capitalize() for piece in lower.split("-"))
    return word  # a native program: names are case-sensitive on the systems pwsh runs here


def also_runs(word: str, name: str) -> list[str]:
    """The commands other than ``name`` that pwsh may run for the command word ``word``.

    Why: the part is named by one reading, and in ``bypassPermissions`` mode deny rules are the only
    guard, so every reading must meet them (fail closed; round 26): the word as written (``rm`` is the
    program rm on Linux and macOS, Remove-Item on Windows), what a session function runs, and
    ``Get-<word>``, which pwsh's command discovery tries last for a name without ``-`` or ``\\``
    when nothing else has that name (``Content x`` is Get-Content: PATH is not known here), and the
    cmdlet a Windows-only alias names (``powershell.WINDOWS_ALIASES``)."""
    base = word.rsplit("\\", 1)[-1]
    lower = base.lower()
    out = [word, *_RUNS_ALSO.get(word.lower(), _RUNS_ALSO.get(lower, ()))]
    if lower in WINDOWS_ALIASES:
        # On Windows the name is an alias (``cpp`` is Copy-ItemProperty); elsewhere the program (round 56).
        out.append(canonical_name(WINDOWS_ALIASES[lower]) or WINDOWS_ALIASES[lower])
    if _DRIVE_FUNCTION(base):
        out.append("Set-Location")
    if "-" not in word and "\\" not in word:
        out.append(canonical_name(f"get-{lower}"))
    # (Case: PowerShell rules compare command and parameter names without case; `rules.py`.)
    return [c for c in dict.fromkeys(out) if c and c != name]


