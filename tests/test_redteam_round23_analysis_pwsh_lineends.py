"""Red team, round 23 (classifier): PowerShell line ends and blanks the analysis did not read as PowerShell does.

PowerShell's tokenizer ends a statement, a ``#`` comment and a here-string header or body line at a
carriage return as at a line feed, and reads a form feed or vertical tab as a blank between words.
The analysis read a lone CR as a blank, ended comments and here-strings at LF only, and kept form
feeds and vertical tabs inside a word. So ``Get-ChildItem # c<CR>Remove-Item sub`` (a comment to the
analysis; a second statement to pwsh), ``Write-Output ok<CR>Remove-Item sub`` (two arguments to
Write-Output; a second statement), a here-string closed at ``<CR>'@`` and ``Get-Content x<FF>/etc/passwd``
(one word inside the workspace; a second path outside it) were read-only and allowed unasked in
default mode. Any such character now makes the command a parse error (it asks); CRLF line ends are
kept. Decisions only (no pwsh on this machine), so nothing runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shellrt.analysis import analyze
from shellrt.permissions import build_governance
from shellrt.protocol import ToolContext
from shellrt.tools.powershell import PowerShell

pytestmark = pytest.mark.anyio

#: Each runs another statement, reads outside the workspace or reaches another host to pwsh.
ATTACKS = [
    "Write-Output ok\rRemove-Item sub",
    "Get-ChildItem\rRemove-Item sub",
    "Get-ChildItem # list\rRemove-Item sub",
    "Write-Output @'\r'@; Remove-Item sub\n'@ # '",
    "Write-Output @\"\r\"@; Remove-Item sub\n\"@ # \"",
    "Write-Output @'\nx\r'@; Remove-Item sub\n'@ # '",
    "Get-Content x\x0c/etc/passwd",
    "Get-Content x\x0b/etc/passwd",
    "Get-Process x\x0c-ComputerName\x0cevil.example",
]
#: CRLF line ends and plain blanks keep their verdicts (the cost side).
KEPT = ["Get-Content x\r\nGet-Content y", "Write-Output 'a'\r\n", "Get-ChildItem # list\r\nGet-Content x",
        "Get-Content\tx"]
#: A CRLF here-string stays read-only to the analysis (the tool asks for here-strings anyway).
KEPT_READ_ONLY = [*KEPT, "Write-Output @'\r\nx\r\n'@\r\n"]


async def _decide(tmp_path: Path, commands: list[str]) -> list[str]:
    ws = tmp_path / "ws"
    (ws / ".shellrt").mkdir(parents=True, exist_ok=True)
    (ws / "sub").mkdir(exist_ok=True)
    (ws / "x").write_text("x\n")
    (ws / "y").write_text("y\n")
    (ws / ".shellrt" / "settings.json").write_text(json.dumps({"permissions": {}}))
    gov = build_governance(ws, home=tmp_path / "home", managed_path=tmp_path / "managed.json", mode="default",
                           trust_workspace=True)
    ctx = ToolContext(session_id="s", session_dir=tmp_path / "session", workspace=ws, cwd=str(ws), allowed_roots=(ws,))
    tool = PowerShell()
    return [(await gov.engine.decide(tool, tool.parse_input({"command": c}), ctx)).behavior for c in commands]


def test_carriage_returns_and_form_feeds_are_not_read_only() -> None:
    read_only = [c for c in ATTACKS if analyze(c, "powershell").read_only]
    assert not read_only, read_only
    reasons = analyze(ATTACKS[0], "powershell").reasons
    assert any("carriage return" in r for r in reasons), reasons  # the reason says what to do
    assert [c for c in KEPT_READ_ONLY if not analyze(c, "powershell").read_only] == []


async def test_powershell_tool_asks_for_them_and_keeps_crlf(tmp_path: Path) -> None:
    decisions = await _decide(tmp_path, ATTACKS + KEPT)
    assert decisions[: len(ATTACKS)] == ["ask"] * len(ATTACKS), list(zip(ATTACKS, decisions, strict=False))
    assert decisions[len(ATTACKS):] == ["allow"] * len(KEPT), list(zip(KEPT, decisions[len(ATTACKS):], strict=True))


#: PowerShell 7.1's null-conditional access after a braced variable calls a method or indexes, as
#: `$x.M()` does (found with the forms above; the tool asked already for the `$` word, low).
NULL_CONDITIONAL = ["Write-Output ${x}?.Delete()", "Write-Output ${Host}?.EnterNestedPrompt()",
                    "Write-Output ${function:prompt}?.Invoke()", "Get-Content ${x}?.y", "Write-Output ${x}?[0]"]


def test_null_conditional_member_access_is_not_read_only() -> None:
    assert [c for c in NULL_CONDITIONAL if analyze(c, "powershell").read_only] == []
    assert analyze("Write-Output ${x}", "powershell").read_only  # a plain braced variable stays read-only
