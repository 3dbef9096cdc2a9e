"""Which parts of a PowerShell command write files, and which may run code they find by place.

Why: the PowerShell analysis resolves no paths, so the rule that asks when one part writes what a
later part runs by place (a git hook, a conftest.py, a program on PATH: `written_places`) read Bash's
parts only (CI108). ``Copy-Item q .git/hooks/pre-commit; git commit``, ``Set-Content conftest.py …;
pytest`` and ``Set-Content ~/bin/x …; x`` then ran past ``PowerShell(Remove-Item:*)`` in
``bypassPermissions`` mode (red team, round 40). With no path known, any write counts beside any
program that may find code by place; read-only core cmdlets (``Get-ChildItem & Get-Content x``) are
neither, so they stay allowed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Final

from .pwsh_cmdlets import READ_ONLY_CMDLETS

__all__ = ["pwsh_found_code", "pwsh_runs_found", "pwsh_writer"]

#: Core cmdlets that write or move files, items or variables and run no program themselves.
_FILE_CMDLETS: Final = frozenset(
    {"set-content", "add-content", "clear-content", "out-file", "new-item", "copy-item", "move-item",
     "rename-item", "remove-item", "set-item", "clear-item", "tee-object", "export-csv", "export-clixml",
     "compress-archive", "expand-archive", "new-itemproperty", "set-itemproperty", "remove-itemproperty",
     "rename-itemproperty", "copy-itemproperty", "move-itemproperty", "set-variable", "new-variable",
     "remove-variable", "clear-variable", "write-error", "write-warning", "write-progress", "out-gridview"}
)  # fmt: skip

#: Native programs that write the files their words or archives name.
_NATIVE_WRITERS: Final = frozenset(
    {"cp", "mv", "install", "ln", "tee", "dd", "touch", "truncate", "patch", "rsync", "scp", "sed", "perl",
     "tar", "bsdtar", "gtar", "unzip", "7z", "7za", "7zr", "cpio", "pax", "ar", "busybox", "curl", "wget",
     "mkdir", "zip", "gzip", "gunzip", "xz", "unxz", "bzip2", "bunzip2", "zstd", "sqlite3"}
)  # fmt: skip


def pwsh_writer(name: str, text: str) -> bool:
    """Whether a part may write a file: a redirection (any ``>``), a cmdlet that is not a read-only core
    cmdlet (a module's cmdlet may write whatever its verb), a file utility run natively (``cp``, ``tar``),
    or a name known only at run time (``& $c``). Natives whose writes are not modelled (``git add``,
    ``npm ci``) do not count, as for Bash (every git command beside one would ask)."""
    low = name.lower()
    if not low or ">" in text:
        return True
    if low in READ_ONLY_CMDLETS:
        return False
    return _cmdlet(low) or os.path.basename(low) in _NATIVE_WRITERS


def pwsh_runs_found(name: str) -> bool:
    """Whether a part may run code it finds by place: any native program (found on PATH, where a write
    may land: ``Copy-Item q ~/bin/cat; cat``; git runs hooks, pytest a conftest.py, npm a package.json),
    a script run by path, a cmdlet that runs code or is no core cmdlet (its module is autoloaded from
    PSModulePath), or a name known only at run time. Only the core cmdlets that read or write items run
    nothing they find."""
    low = name.lower()
    if not low:
        return True  # `iex`, `& $c`, `.`: code runners are named "" (`pwsh_names.canonical_name`)
    return not (_cmdlet(low) and (low in READ_ONLY_CMDLETS or low in _FILE_CMDLETS))


def pwsh_found_code(parts: Sequence[tuple[Sequence[str], str, Sequence[str]]]) -> str:
    """Why a part may run what another part writes ("" when none may). Each part is (its readings:
    the canonical name first, then each other command pwsh may run for its word, `also_runs`; its
    text; its argv). ``ls`` is Get-ChildItem on Windows and the program found on PATH elsewhere: the
    program reading counts; the ``Get-<word>`` fallback (only when nothing else has the name) does not."""
    writers = [i for i, (names, text, _) in enumerate(parts) if pwsh_writer(names[0] if names else "", text)]
    if not writers:
        return ""
    for j in writers:
        if _MODULE_PLACE(parts[j][1]) and any(i != j and not _same_words(parts[j][2], p[2]) for i, p in enumerate(parts)):
            # A module written where PSModulePath looks (the user's path comes first) may shadow the
            # module of any cmdlet another part runs, read-only core ones too (`Get-Date` autoloads
            # Microsoft.PowerShell.Utility by name): round 42.
            return f"{parts[j][1]!r} writes a PowerShell module, which any cmdlet of the same command may import"
    for i, (names, text, argv) in enumerate(parts):
        readings = _readings(names)
        if not any(pwsh_runs_found(name) for name in readings) and not _autoloads(readings, argv):
            continue
        for j in writers:
            if j != i and not _same_words(parts[j][2], argv):
                return (
                    f"{text!r} may run code {parts[j][1]!r} writes in the same command (PowerShell paths are not "
                    "resolved: a git hook, a script, a program on PATH or a file it finds by itself)"
                )
    return ""


#: A write naming a module file or a directory of modules (``…/Modules/M/M.psm1``, ``M.psd1``, a
#: binary module's ``.dll`` in ``Modules``).
_MODULE_PLACE: Final = re.compile(r"(?:^|[\\/\s'\"])modules(?:[\\/\s'\"]|$)|\.ps[dm]1\b", re.IGNORECASE).search

#: Core cmdlets that import the module a command name they are given belongs to (about_Modules:
#: "using Get-Command or Get-Help for a command in a module" autoloads it from PSModulePath).
_AUTOLOADERS: Final = frozenset({"get-command", "get-help", "help"})


def _autoloads(readings: Sequence[str], argv: Sequence[str]) -> bool:
    """Whether a part looks a command up by name and so may import (run) a module a write placed on
    PSModulePath (``Set-Content ~/.local/share/powershell/Modules/M/M.psm1 …; Get-Help Get-M``: round
    40's Left, round 42). ``Get-Command`` with no name lists without importing."""
    return any(r.lower() in _AUTOLOADERS for r in readings) and any(w[:1] not in ("-", "") for w in argv[1:])


def _readings(names: Sequence[str]) -> list[str]:
    """The readings of a part, without discovery's ``Get-<word>`` fallback."""
    if not names:
        return [""]
    fallbacks = {f"get-{n.lower()}" for n in names}
    return [names[0], *(n for n in names[1:] if n.lower() not in fallbacks)]


def _cmdlet(low: str) -> bool:
    """A ``Verb-Noun`` name (not a path: ``./run-tests.ps1`` is a script)."""
    return "-" in low and "/" not in low and "\\" not in low and not os.path.splitext(low)[1]


def _same_words(one: Sequence[str], other: Sequence[str]) -> bool:
    """One part wraps the other or they are the same words (a nested block's part and its own)."""
    short, long = sorted((tuple(one), tuple(other)), key=len)
    return bool(short) and long[len(long) - len(short) :] == short
