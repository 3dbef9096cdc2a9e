"""Red team, round 23 (classifier): a PowerShell ``#requires`` line was a comment to the analysis.

To PowerShell, ``#requires -Modules NAME|PATH`` in a script is a statement the parser collects:
before the script runs, a module it names that is not loaded is imported (its code runs; a path
may name a ``.psm1`` the repository ships), and ``-Assembly`` loads an assembly. The analysis read
every ``#`` line as a comment, so ``Get-ChildItem`` followed by ``#requires -Modules ./m.psm1`` was
read-only and allowed unasked in default mode. A ``#requires`` line now makes the command a parse
error (it asks); other comments keep their verdicts. Decisions only (no pwsh on this machine).
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

ATTACKS = ["Get-ChildItem\n#requires -Modules ./m.psm1", "#Requires -Modules ./m.psm1\nGet-ChildItem",
           "Get-ChildItem # x\n#REQUIRES -Modules @{ModuleName='./m.psm1'; ModuleVersion='1.0'}",
           "Get-ChildItem; #requires -Assembly ./x.dll", "Get-ChildItem #requires -Modules m"]
KEPT = ["Get-ChildItem # requires a listing", "Get-ChildItem\n# list #requires", "Get-ChildItem <#requires#>"]


async def test_requires_lines_are_not_read_only_and_ask(tmp_path: Path) -> None:
    assert [c for c in ATTACKS if analyze(c, "powershell").read_only] == []
    assert [c for c in KEPT if not analyze(c, "powershell").read_only] == []
    ws = tmp_path / "ws"
    (ws / ".shellrt").mkdir(parents=True)
    (ws / "m.psm1").write_text("New-Item P\n")
    (ws / ".shellrt" / "settings.json").write_text(json.dumps({"permissions": {}}))
    gov = build_governance(ws, home=tmp_path / "home", managed_path=tmp_path / "managed.json", mode="default",
                           trust_workspace=True)
    ctx = ToolContext(session_id="s", session_dir=tmp_path / "session", workspace=ws, cwd=str(ws), allowed_roots=(ws,))
    tool = PowerShell()
    decisions = [(await gov.engine.decide(tool, tool.parse_input({"command": c}), ctx)).behavior for c in ATTACKS + KEPT]
    assert decisions == ["ask"] * len(ATTACKS) + ["allow"] * len(KEPT), list(zip(ATTACKS + KEPT, decisions, strict=True))
