"""Red team, round 20 (classifier): PowerShell reads outside the workspace passed as "inside".

The Bash tool's own check allows a read-only command unasked only when every path-like word is
inside the workspace, and it looked for words starting with ``/``, ``~`` or ``..`` as bash passes
them. The PowerShell tool shares that check, but PowerShell's argv keeps quotes (``"/etc/x"``),
attaches a parameter's value (``-Path:/etc/x``, skipped as an option), accepts either separator on
Unix (``..\\x``), arrays (``a,/etc/x``) and provider or drive paths (``FileSystem::/etc/x``,
``Env:NAME``): ``Get-Content "/etc/passwd"``, ``Get-ChildItem -Path:/ -Recurse`` and
``Get-Content -LiteralPath:../../etc/shadow`` were "read-only command inside the workspace",
allowed unasked in default mode. PowerShell words are now read as its providers read them, and a
word that cannot be resolved here (a qualifier, an expansion) is never inside. Decisions only
(the permission engine; no pwsh on this machine), so nothing runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shellrt.permissions import build_governance
from shellrt.protocol import ToolContext
from shellrt.tools.powershell import PowerShell

pytestmark = pytest.mark.anyio

OUTSIDE = [
    "Get-Content -Path:/etc/passwd",
    'Get-Content "/etc/passwd"',
    "Get-Content '/etc/passwd'",
    'Get-Content "~/.ssh/id_rsa"',
    "Get-Content ..\\x",
    "Get-Content x\\..\\..\\y",
    "Get-Content FileSystem::/etc/passwd",
    "Get-Content Microsoft.PowerShell.Core\\FileSystem::/etc/passwd",
    "Get-Content -LiteralPath:../../etc/shadow",
    'Get-Content -Path: "../x"',
    "Get-Content x.txt,/etc/passwd",
    "Get-ChildItem -Path:/ -Recurse",
    "Select-String -Path:/etc/passwd -Pattern root",
    'cat "/etc/passwd"',
    'Get-Content "$HOME/x"',
    "Get-Content Env:AWS_SECRET_ACCESS_KEY",
]
#: Still allowed unasked: paths inside the workspace, however written.
INSIDE = ["Get-ChildItem", "Get-Content x.txt", "Get-Content -Path:x.txt", 'Get-Content "sub\\x.txt"',
          "Get-Content 'a b.txt',x.txt", "Get-Content ./sub/../x.txt"]


async def _behaviour(tmp_path: Path, command: str) -> str:
    ws = tmp_path / "ws"
    (ws / ".shellrt").mkdir(parents=True, exist_ok=True)
    (ws / ".shellrt" / "settings.json").write_text(json.dumps({"permissions": {}}))
    gov = build_governance(ws, home=tmp_path / "home", managed_path=tmp_path / "managed.json", mode="default",
                           trust_workspace=True)
    ctx = ToolContext(session_id="s", session_dir=tmp_path / "session", workspace=ws, cwd=str(ws), allowed_roots=(ws,))
    ps = PowerShell()
    return (await gov.engine.decide(ps, ps.parse_input({"command": command}), ctx)).behavior


@pytest.mark.parametrize("command", OUTSIDE)
async def test_a_powershell_read_outside_the_workspace_is_not_allowed_unasked(tmp_path: Path, command: str) -> None:
    assert await _behaviour(tmp_path, command) != "allow"


@pytest.mark.parametrize("command", INSIDE)
async def test_powershell_reads_inside_the_workspace_stay_allowed(tmp_path: Path, command: str) -> None:
    assert await _behaviour(tmp_path, command) == "allow"
