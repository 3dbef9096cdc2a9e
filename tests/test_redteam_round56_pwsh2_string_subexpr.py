"""Red team, round 56 (pwsh2): a ``$(...)`` inside a double-quoted string ended where pwsh does not end it.

PowerShell finds the end of a subexpression inside an expandable string (``"..."``, ``@"..."@``) by counting
parentheses alone (``Tokenizer.ScanSubExpression``): quotes do not hide a parenthesis there (PowerShell#4543),
and only ``""`` and ```"`` are collapsed to ``"`` before the text is parsed as code. The analysis skipped quoted
parentheses, so ``"$(Get-Date #'(')`` ended for it at the first ``)``, and the lines after it, which pwsh runs
as more statements of the subexpression (the ``#`` comment hides the quote from pwsh), were string text:
``Write-Output "$(Get-Date #'(')<LF>Remove-Item x<LF>)"`` was read-only. Decisions only (no pwsh here).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.analysis import analyze
from shellrt.tools.powershell import PowerShell
from tests._governance import rule_decisions

pytestmark = pytest.mark.anyio

#: pwsh runs ``Remove-Item x`` in each (the subexpression spans the lines after the quoted parenthesis).
HIDDEN = [
    "Write-Output \"$(Get-Date #'(')\nRemove-Item x\n)\"",
    "Write-Output \"$(Get-Date #\"(\" )\nRemove-Item x\n)\"",
    "Write-Output @\"\n$(Get-Date #'(')\nRemove-Item x\n)\n\"@",
    "Write-Output \"a $(Get-Date #'(('\nRemove-Item x\n))) b\"",
    "Get-Content -Path \"$(Get-Date #'(')\nRemove-Item x\n)\"",
]
#: Subexpressions pwsh reads as the analysis now does: still read-only.
KEPT = [
    "Get-Content \"$(Get-Date -Format '(yyyy)')\"",
    "Write-Output \"x $(Get-Date) y\"",
    "Write-Output \"$(Write-Output \"\"x\"\")\"",
    "Write-Output @\"\n$(Get-Date -Format '(yyyy)')\n\"@",
]


def test_code_after_a_quoted_parenthesis_is_judged() -> None:
    assert [c for c in HIDDEN if analyze(c, shell="powershell").read_only] == []
    for command in HIDDEN:
        parts = analyze(command, shell="powershell").subcommands
        assert any(p.argv[:1] == ["Remove-Item"] for p in parts) or not analyze(command, shell="powershell").parse_ok


def test_subexpressions_pwsh_reads_alike_stay_read_only() -> None:
    assert [c for c in KEPT if not analyze(c, shell="powershell").read_only] == []


def test_unbalanced_quoted_parenthesis_fails_closed() -> None:
    # pwsh itself cannot parse these (PowerShell#4543); they must not be read-only here either.
    for command in ["Write-Output \"$(Write-Output ')')\"", "Write-Output \"$(Write-Output '(')\""]:
        assert not analyze(command, shell="powershell").read_only


async def test_deny_rule_meets_the_hidden_command(tmp_path: Path) -> None:
    decided = await rule_decisions(tmp_path, PowerShell(), HIDDEN[:1], mode="bypassPermissions",
                                   deny=["PowerShell(Remove-Item:*)"])
    assert decided == ["deny"]
