"""Red team, round 26 (analysis): pwsh's own aliases the analysis did not know hid cmdlets from deny rules.

PowerShell 7 defines ``ren``/``rni`` (Rename-Item), ``ipmo`` (Import-Module), ``si``/``sp`` (Set-Item,
Set-ItemProperty), ``rp`` (Remove-ItemProperty), ``rv`` (Remove-Variable), ``ihy``/``r`` (Invoke-History:
runs an earlier command again), ``epcsv`` (Export-Csv: writes), ``sajb`` (Start-Job) and more in every
session (``InitialSessionState.BuiltInAliases`` and the cmdlets' ``[Alias]`` attributes); an alias wins
over a program of that name. The analysis's alias table missed them, so the part was a native program
named ``ren`` and ``PowerShell(Rename-Item:*)``-style deny rules never met it: in ``bypassPermissions``
mode, where deny rules are the only guard, each was allowed. The table now lists them (Windows-only
aliases such as ``cpp`` stay the Unix programs, as before). Decisions only (no pwsh here).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.analysis import analyze
from shellrt.tools.powershell import PowerShell
from tests._governance import rule_decisions

pytestmark = pytest.mark.anyio

#: (command, the cmdlet pwsh runs for it).
ATTACKS = [("ren a b", "Rename-Item"), ("rni a b", "Rename-Item"), ("ipmo ./m.psm1", "Import-Module"),
           ("si x y", "Set-Item"), ("sp x n v", "Set-ItemProperty"), ("rp x n", "Remove-ItemProperty"),
           ("rv x", "Remove-Variable"), ("ihy 1", "Invoke-History"), ("r 1", "Invoke-History"),
           ("epcsv x", "Export-Csv"), ("sajb -FilePath x.ps1", "Start-Job")]
KEPT = ["Get-ChildItem", "Rename-Item a b"]


async def test_deny_rules_meet_pwsh_aliases(tmp_path: Path) -> None:
    deny = sorted({f"PowerShell({cmdlet}:*)" for _, cmdlet in ATTACKS})
    commands = [c for c, _ in ATTACKS]
    decided = dict(zip(commands, await rule_decisions(tmp_path, PowerShell(), commands, mode="bypassPermissions", deny=deny), strict=True))
    assert [c for c in commands if decided[c] != "deny"] == []
    assert await rule_decisions(tmp_path, PowerShell(), KEPT, mode="bypassPermissions",
                                deny=["PowerShell(Remove-Item:*)"]) == ["allow", "allow"]


def test_aliases_of_writers_are_not_read_only_and_windows_aliases_stay_native() -> None:
    assert [c for c, _ in ATTACKS if analyze(c, shell="powershell").read_only] == []
    assert analyze("cpp x", shell="powershell").reasons == ["cpp is not a known read-only command"]
