"""Red team, round 15 (classifier): PowerShell member access after a group in argument mode.

PowerShell applies member access and method calls written right after a parenthesised
expression, a subexpression or an array subexpression even in argument mode:
``Write-Host (Get-Date).ToString('yyyy')`` is a common idiom, and ``Write-Output
(Get-Item victim).Delete()`` deletes the file. The analysis judged the group's own command
(``Get-Item victim``, read-only) and read ``.Delete`` and ``()`` as a plain word and an empty
group, so the whole command was read-only (auto-allowed, concurrency safe). Member access on a
variable (``$x.Delete()``) was already refused, static access (``$x::M()``) was not: it was read
as part of the variable's name. Any ``.``, ``[`` or ``::`` glued to the end of a group,
subexpression or string, and ``::`` after a variable, is now member access: not read-only.
(Analysis only: no pwsh here; the argument-mode rule is PowerShell's documented parsing.)
"""

from __future__ import annotations

import pytest

from shellrt.analysis.powershell import analyze_powershell


@pytest.mark.parametrize(
    "command",
    [
        "Write-Output (Get-Item victim).Delete()",
        "Write-Host (Get-Item victim).Delete()",
        "Write-Output $(Get-Item victim).Delete()",
        "Write-Output @(Get-Item victim).Delete()",
        "Write-Output -InputObject:(Get-Item victim).Delete()",
        "Write-Output 1,(Get-Item victim).Delete()",
        "Get-ChildItem -Path (Get-Item victim).Delete()",
        "Write-Output (Get-Item victim)::new()",
        "Write-Output (Get-ChildItem)[0].Delete()",
        "Write-Output (Get-Item victim) .Delete() (Get-Item victim).MoveTo('x')",
        "Write-Output 'victim'.Length",
        'Write-Output "victim".Length',
        "Write-Output (Get-Process -Id 1).Kill()",
        "Get-Item x | Select-Object -Property (Get-Item victim).Delete()",
        "Write-Output $x::new()",
        "Write-Output ${x}::Delete('victim')",
    ],
)
def test_member_access_after_a_group_is_not_read_only(command: str) -> None:
    analysis = analyze_powershell(command)
    assert not analysis.read_only, (command, analysis.reasons)
    assert any("member" in reason for reason in analysis.reasons), analysis.reasons


@pytest.mark.parametrize(
    "command",
    [
        "Write-Output (Get-Item x)",
        "Write-Output (Get-Item x) .txt",
        "Get-ChildItem -Path (Get-Location)",
        "Write-Output 'a.b'",
        "Get-Content ./x.txt",
        "Write-Output 'a' 'b'",
    ],
)
def test_groups_and_strings_without_members_stay_read_only(command: str) -> None:
    analysis = analyze_powershell(command)
    assert analysis.read_only, (command, analysis.reasons)
