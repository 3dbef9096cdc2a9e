"""Red team, round 26 (analysis): a backtick in a PowerShell command name hid it from deny rules.

PowerShell reads a command name as a bare word, and a backtick there escapes the next character
(``ScanGenericToken`` calls ``Backtick``: any letter but ``0abefnrtuv`` stands for itself), so
``Re`move-Item sub`` runs Remove-Item and ``g`it push`` runs git push. The analysis kept the
backticks in the name: the part was named ``Re`move-Item`` (``_pwshparts._canonical`` found no
cmdlet in it) and ``PowerShell(Remove-Item:*)`` / ``PowerShell(git push:*)`` deny rules did not meet
it, so in ``bypassPermissions`` mode, where deny rules are the only guard, the command was allowed.
(The Bash tool reads ``\\rm``, ``r\\m``, ``'r'm`` as ``rm`` and denies them; asserted.) A command name
with a backtick is no longer a static name: with deny rules for the tool, the engine denies the part
("its program name is not static"); the reason says to write the name without backticks.
Decisions only (no pwsh here).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.analysis import analyze
from shellrt.tools.bash import Bash
from shellrt.tools.powershell import PowerShell
from tests._governance import rule_decisions

pytestmark = pytest.mark.anyio

DENY = ["PowerShell(Remove-Item:*)", "PowerShell(git push:*)", "Bash(rm:*)", "Bash(git push:*)"]
#: Each runs Remove-Item or git push in pwsh.
ATTACKS = ["Re`move-Item sub", "Remove`-Item sub", "Remove-Ite`m sub", "r`m sub", "`rm sub", "g`it push",
           "Get-ChildItem; Remove-Ite`m sub", "Get-ChildItem | Re`move-Item"]
#: Other commands still run in bypass mode (the cost side), backticks in arguments included.
KEPT = ["Get-ChildItem sub", "git status", "Write-Output a`tb", "Get-ChildItem `\n  sub"]
#: The Bash tool's twins were denied before and stay denied.
BASH_TWINS = ["\\rm sub", "r\\m sub", "'r'm sub", "g\\it push"]


async def _decide(tmp_path: Path, tool: object, commands: list[str]) -> list[str]:
    (tmp_path / "ws" / "sub").mkdir(parents=True, exist_ok=True)
    return await rule_decisions(tmp_path, tool, commands, mode="bypassPermissions", deny=DENY)


async def test_deny_rules_meet_a_backticked_command_name(tmp_path: Path) -> None:
    decided = dict(zip(ATTACKS + KEPT, await _decide(tmp_path, PowerShell(), ATTACKS + KEPT), strict=True))
    assert [c for c in ATTACKS if decided[c] != "deny"] == []
    assert [c for c in KEPT if decided[c] != "allow"] == []
    assert await _decide(tmp_path, Bash(), BASH_TWINS) == ["deny"] * len(BASH_TWINS)


def test_the_name_is_not_static_and_the_reason_says_why() -> None:
    verdict = analyze("Re`move-Item sub", shell="powershell")
    assert [(s.static_name, s.name) for s in verdict.subcommands] == [(False, "")]
    assert "backtick" in " ".join(verdict.reasons), verdict.reasons
