"""Red team, round 26 (analysis): a PowerShell command name that may resolve to more than one command.

pwsh's command discovery, when no alias, function, cmdlet or program of a name without ``-`` or ``\\``
exists, tries ``Get-<name>`` (``CommandDiscovery.TryNormalSearch``): ``Content x`` is Get-Content,
``Clipboard`` Get-Clipboard. Functions pwsh defines in every session call cmdlets: ``mkdir`` (and its
alias ``md``) is New-Item on Windows and the program mkdir elsewhere, ``more`` runs Get-Content, ``help``
(and ``man`` on Windows) Get-Help, ``Pause`` Read-Host, ``oss`` Out-String, ``cd..``/``cd\\``/``cd~`` and
Windows's drive functions (``C:``) Set-Location, ``TabExpansion2`` may load modules. And a Windows-only
alias (``rm``, ``sort``) runs the program of that name on Linux and macOS. The parts were named by one
reading only, so in ``bypassPermissions`` mode, where deny rules are the only guard, a deny rule on the
other reading never met them. Decisions only (no pwsh here).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.analysis import analyze
from shellrt.tools.powershell import PowerShell
from tests._governance import rule_decisions

pytestmark = pytest.mark.anyio

#: (command, a command pwsh may run for it that a deny rule names).
ATTACKS = [
    ("Content secret.txt", "Get-Content"), ("content secret.txt", "Get-Content"),
    ("ChildItem -Recurse", "Get-ChildItem"), ("Clipboard", "Get-Clipboard"), ("Credential", "Get-Credential"),
    ("md d", "New-Item"), ("md d", "mkdir"), ("mkdir d", "New-Item"), ("more secret.txt", "Get-Content"),
    ("help x", "Get-Help"), ("man x", "Get-Help"), ("Pause", "Read-Host"), ("oss", "Out-String"),
    ("cd..", "Set-Location"), ("cd\\", "Set-Location"), ("cd~", "Set-Location"), ("C:", "Set-Location"),
    ("TabExpansion2 'Get-Foo -'", "Import-Module"), ("rm x", "rm"), ("sort -o x y", "sort"),
]
#: Deny rules written in lower case (cmdlet names are case-insensitive) and the commands they must meet.
LOWER_CASE = [("Get-Content x", "get-content"), ("Content x", "get-content"), ("gc x", "get-content"),
              ("ri x", "remove-item"), ("Remove-Item x", "remove-item"), ("md d", "new-item")]
#: Commands whose every reading is outside the deny rules below: still allowed.
KEPT = ["Get-ChildItem", "Rename-Item a b", "Content x", "md d", "git status", "Clear-Host"]


async def test_deny_rules_meet_every_command_a_name_may_run(tmp_path: Path) -> None:
    failed = []
    for i, (command, target) in enumerate(ATTACKS + LOWER_CASE):
        [decided] = await rule_decisions(tmp_path, PowerShell(), [command], mode="bypassPermissions",
                                         deny=[f"PowerShell({target}:*)"], ws=tmp_path / f"ws{i}")
        if decided != "deny":
            failed.append((command, target, decided))
    assert failed == []
    assert await rule_decisions(tmp_path, PowerShell(), KEPT, mode="bypassPermissions",
                                deny=["PowerShell(Remove-Item:*)", "PowerShell(Get-Process:*)"]) == ["allow"] * len(KEPT)


def test_read_only_judgements_do_not_loosen() -> None:
    # ``man x`` is the program man on Linux and macOS (judged as before; see docs/security.md's Left).
    assert [c for c, _ in ATTACKS if c != "man x" and analyze(c, shell="powershell").read_only] == []
    assert analyze("Get-Content x", shell="powershell").read_only
    assert analyze("Get-ChildItem -Recurse", shell="powershell").read_only
