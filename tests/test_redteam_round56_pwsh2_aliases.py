"""Red team, round 56 (pwsh2): pwsh aliases the analysis did not know, and Windows readings it never judged.

pwsh 7 defines ``ndr`` (New-PSDrive: maps a drive, a network share with ``-Persist``) and ``rdr``
(Remove-PSDrive) in every session; the analysis's alias table missed them, so the part was a native program
named ``rdr`` and a ``PowerShell(Remove-PSDrive:*)`` deny rule never met it (``bypassPermissions`` mode, where
deny rules are the only guard, allowed it). On Windows ``cpp`` is Copy-ItemProperty, ``mount`` New-PSDrive,
``lp`` Out-Printer and ``man`` the ``help`` function (Get-Help, which imports the module of the command it is
asked about, piped to a pager): only the Unix program was judged, so ``man Invoke-Thing`` was read-only and
those deny rules never met the Windows reading. Decisions only (no pwsh here).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.analysis import analyze
from shellrt.tools.powershell import PowerShell
from tests._governance import rule_decisions

pytestmark = pytest.mark.anyio

#: (command, a cmdlet pwsh runs for it on some platform).
ATTACKS = [("rdr X", "Remove-PSDrive"), ("ndr X FileSystem /", "New-PSDrive"), ("NDR X FileSystem /", "New-PSDrive"),
           ("cpp a b n", "Copy-ItemProperty"), ("mount", "New-PSDrive"), ("lp x", "Out-Printer"),
           ("man Invoke-Thing", "Get-Help")]
#: Read by pwsh on Windows as the ``help`` function (module autoload, a pager): never read-only.
WINDOWS_READINGS = ["man Invoke-Thing", "man ls", "man about_Thing", "MAN git"]


async def test_deny_rules_meet_every_reading_of_an_alias(tmp_path: Path) -> None:
    commands = [c for c, _ in ATTACKS]
    for command, cmdlet in ATTACKS:
        decided = await rule_decisions(tmp_path, PowerShell(), [command], mode="bypassPermissions",
                                       deny=[f"PowerShell({cmdlet}:*)"])
        assert decided == ["deny"], (command, cmdlet, decided)
    assert await rule_decisions(tmp_path, PowerShell(), ["Get-ChildItem", "Get-PSDrive"], mode="bypassPermissions",
                                deny=["PowerShell(Remove-PSDrive:*)", "PowerShell(New-PSDrive:*)"]) == ["allow", "allow"]
    assert [c for c in commands if analyze(c, shell="powershell").read_only] == []


def test_windows_reading_of_man_is_judged() -> None:
    assert [c for c in WINDOWS_READINGS if analyze(c, shell="powershell").read_only] == []
    assert "help" in " ".join(analyze("man ls", shell="powershell").reasons)


def test_every_unix_native_name_has_its_windows_reading() -> None:
    from shellrt.analysis.powershell import _UNIX_NATIVE, ALIASES, WINDOWS_ALIASES

    assert sorted(n for n in _UNIX_NATIVE if n not in ALIASES and n not in WINDOWS_ALIASES) == []


async def test_read_only_cmdlets_aliases_are_their_cmdlets(tmp_path: Path) -> None:
    """``fhx``, ``gbp``, ``gcs``, ``gtz`` and ``oh`` are pwsh 7's aliases of read-only cmdlets on every
    platform: judged as those cmdlets (read-only), and a rule on the cmdlet meets the alias."""
    (tmp_path / "secret.bin").write_text("S")
    assert [c for c in ["fhx a.bin", "gbp", "gcs", "gtz", "Get-Process | oh"]
            if not analyze(c, shell="powershell").read_only] == []
    decided = await rule_decisions(tmp_path, PowerShell(), ["fhx a.bin", "FHX secret.bin", "gtz"], mode="default",
                                   deny=["PowerShell(Format-Hex:*)"])
    assert decided[:2] == ["deny", "deny"] and decided[2] == "allow", decided
    assert await rule_decisions(tmp_path, PowerShell(), ["fhx secret.bin"], mode="bypassPermissions",
                                deny=["Read(./secret.bin)"]) == ["deny"]
