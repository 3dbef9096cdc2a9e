"""Red team, round 26 (analysis): PowerShell 7's background operator ``&`` ends a statement.

In pwsh 7, ``&`` after a pipeline runs it as a background job and, like ``;``, ends the statement
(``Get-Process & Get-Service`` runs both; ``about_Operators``). The analysis read every ``&`` as the
call operator inside one command element, so in ``Get-ChildItem & ri sub`` the second command was
no part of its own: only the literal cmdlet name was caught (the engine scans a part's text), and
an alias (``ri``, ``del``, ``ren``) walked past ``PowerShell(Remove-Item:*)``/``(Rename-Item:*)`` deny
rules in ``bypassPermissions`` mode. A ``&`` after a command's words now ends its statement (the
command keeps the reason "uses the & operator": not read-only), and what follows is judged and
named as its own part. ``& $c`` at a statement's start stays the call operator. Decisions only.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.analysis import analyze
from shellrt.tools.powershell import PowerShell
from tests._governance import rule_decisions

pytestmark = pytest.mark.anyio

DENY = ["PowerShell(Remove-Item:*)", "PowerShell(Rename-Item:*)"]
ATTACKS = ["Get-ChildItem & ri sub", "Write-Output x & del sub", "Get-ChildItem & ren a b", "Get-ChildItem a&ri sub",
           "Get-ChildItem & Remove-Item sub"]
KEPT = ["Get-ChildItem", "Get-ChildItem & Get-Content x"]


async def test_deny_rules_meet_the_command_after_a_background_operator(tmp_path: Path) -> None:
    decided = dict(zip(ATTACKS + KEPT, await rule_decisions(tmp_path, PowerShell(), ATTACKS + KEPT,
                                                                  mode="bypassPermissions", deny=DENY), strict=True))
    assert [c for c in ATTACKS if decided[c] != "deny"] == []
    assert [c for c in KEPT if decided[c] != "allow"] == []


def test_each_statement_is_a_part_and_a_job_is_not_read_only() -> None:
    verdict = analyze("Get-ChildItem & ri sub", shell="powershell")
    assert [s.name for s in verdict.subcommands] == ["Get-ChildItem", "ri"]
    assert not verdict.read_only
    assert not analyze("Get-ChildItem &", shell="powershell").read_only
    call = analyze("& $c x", shell="powershell")
    assert [s.static_name for s in call.subcommands] == [False]
