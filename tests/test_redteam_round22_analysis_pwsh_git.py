"""Red team, round 22 (classifier): PowerShell's read-only git ran the repository's own programs unasked.

Before a read-only git command runs unasked, the Bash tool checks the configuration of the
repository it obeys: a clean filter, a textconv driver or ``diff.external`` are programs the
hardening environment cannot switch off (git 2.39 has no "none" for them), so such a repository
makes the command ask. The PowerShell tool shares the Bash tool's machinery but judged no parts,
so that check never ran: ``git status``, ``git diff`` and ``git log -p`` (native programs judged
read-only) were allowed unasked in a repository whose ``.git/config`` names a clean filter, and
pwsh would have run git, and the filter, with the same environment. The PowerShell tool now runs
the same check; git after a location change (``cd``, ``Push-Location``/``Pop-Location``,
``Set-Location -``: PowerShell paths are not resolved here) asks. Decisions only (no pwsh on this
machine), so nothing runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shellrt.permissions import build_governance
from shellrt.protocol import ToolContext
from shellrt.tools.bash import Bash, ShellTool
from shellrt.tools.powershell import PowerShell
from tests._git import filtered_repo

pytestmark = pytest.mark.anyio

ASKED = ["git status", "git diff", "git log -p", "git show", "cd xy; git status", "Set-Location xy; git diff",
         "Push-Location xy; Push-Location {ws}; Pop-Location; git status"]


async def _decide(tmp_path: Path, ws: Path, tool: ShellTool, commands: list[str], mode: str = "default") -> list[str]:
    (ws / ".shellrt").mkdir(parents=True, exist_ok=True)
    (ws / ".shellrt" / "settings.json").write_text(json.dumps({"permissions": {}}))
    gov = build_governance(ws, home=tmp_path / "home", managed_path=tmp_path / "managed.json", mode=mode,
                           trust_workspace=True)
    ctx = ToolContext(session_id="s", session_dir=tmp_path / "session", workspace=ws, cwd=str(ws), allowed_roots=(ws,))
    out = []
    for command in commands:
        out.append((await gov.engine.decide(tool, tool.parse_input({"command": command}), ctx)).behavior)
    return out


async def test_powershell_git_in_a_repository_that_names_a_filter_asks(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    filtered_repo(ws, filtered=True)
    filtered_repo(ws / "xy", filtered=True)
    commands = [c.format(ws=ws) for c in ASKED]
    assert await _decide(tmp_path, ws, PowerShell(), commands) == ["ask"] * len(commands)
    # In every mode: the repository, not the person, chose the program (as for Bash).
    assert await _decide(tmp_path, ws, PowerShell(), ["git status"], mode="bypassPermissions") == ["ask"]
    # The premise: the Bash tool asks for the same command in the same repository.
    assert await _decide(tmp_path, ws, Bash(), ["git status"]) == ["ask"]


async def test_powershell_git_in_a_clean_repository_stays_allowed(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    filtered_repo(ws, filtered=False)
    assert await _decide(tmp_path, ws, PowerShell(), ["git status", "git log -1", "git diff"]) == ["allow"] * 3
