"""Red team, round 28 (analysis): a program named with the extension Windows finds it by.

cmd, pwsh and Git Bash look a command name up with PATHEXT (``.exe``, ``.cmd``, ``.bat``, …; pwsh
also finds ``*.ps1``), so ``git.exe push`` runs what ``git push`` runs, and in ``bypassPermissions``
mode, where deny rules are the only guard, ``Bash(git push:*)`` and ``PowerShell(curl:*)`` met
neither ``git.exe`` nor ``GIT.CMD``. Decisions of the real engine; allow rules are unchanged.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.tools.bash import Bash
from shellrt.tools.powershell import PowerShell
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide, missed_denies

pytestmark = pytest.mark.anyio

FORMS = ["git.exe push", "GIT.EXE push -f", "/c/Program\\ Files/Git/cmd/git.exe push", "git.cmd push", "env git.exe push"]
BASH = [("Bash(git push:*)", FORMS), ("Bash(curl:*)", ["curl.exe http://x", "CURL.COM x"]),
        ("Bash(./deploy:*)", ["./deploy.ps1 prod", "deploy.bat"])]
PWSH = [("PowerShell(git push:*)", FORMS[:4] + ["& git.exe push"]), ("PowerShell(deploy:*)", ["./deploy.ps1 prod"])]


async def test_deny_rules_meet_programs_named_with_a_run_extension(tmp_path: Path) -> None:
    assert await missed_denies(tmp_path, Bash(), BASH) == []
    assert await missed_denies(tmp_path, PowerShell(), PWSH) == []
    # Other names stay other (an extension is dropped at the end of the program name only).
    kept = ["git.exe status", "gitx.exe push", "git.exe.bak push", "echo git.exe push"]
    assert await decide(tmp_path, Bash(), kept, "bypassPermissions", deny=["Bash(git push:*)"]) == ["allow"] * 4
