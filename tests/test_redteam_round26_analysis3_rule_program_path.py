"""Red team, round 26 (wave 3, analysis-3): a deny rule naming its program by path.

``Bash(./deploy.sh:*)`` and ``Bash(/usr/bin/curl:*)`` were compared as text, so in
``bypassPermissions`` mode, where deny rules are the only guard, other paths of the same program
passed: ``.//deploy.sh``, ``././deploy.sh``, ``sub/../deploy.sh``, the absolute path, ``sh ./deploy.sh``;
``/usr//bin/curl``, ``/bin/../usr/bin/curl``, ``/bin/curl`` (merged /usr) and ``curl`` found on PATH.
Decisions of the real permission engine; nothing runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.tools.bash import Bash
from shellrt.tools.powershell import PowerShell
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

pytestmark = pytest.mark.anyio

ATTACKS = {
    "Bash(./deploy.sh:*)": [".//deploy.sh", "././deploy.sh", "sub/../deploy.sh", "WS/deploy.sh x", "sh ./deploy.sh",
                            "bash deploy.sh", "./deploy.sh"],
    "Bash(/usr/bin/curl:*)": ["curl x", "/usr//bin/curl x", "/bin/../usr/bin/curl x", "/usr/bin/./curl x",
                              "/bin/curl x", "/usr/bin/curl x"],
}


async def test_a_deny_rule_by_path_meets_every_path_of_its_program(tmp_path: Path) -> None:
    missed = []
    for rule, commands in ATTACKS.items():
        ws = str(tmp_path / f"ws{len(list(tmp_path.iterdir()))}")
        got = await decide(tmp_path, Bash(), [c.replace("WS", ws) for c in commands], "bypassPermissions",
                           deny=[rule])
        missed += [(rule, c, d) for c, d in zip(commands, got, strict=True) if d != "deny"]
    assert missed == []
    assert await decide(tmp_path, PowerShell(), [".//deploy.sh", "/bin/curl x"], "bypassPermissions",
                        deny=["PowerShell(./deploy.sh:*)", "PowerShell(/usr/bin/curl:*)"]) == ["deny", "deny"]


async def test_other_programs_and_allow_rules_keep_their_paths(tmp_path: Path) -> None:
    assert await decide(tmp_path, Bash(), ["./deploy.sh2", "./sub/run.sh", "curly x"], "bypassPermissions",
                        deny=["Bash(./deploy.sh:*)", "Bash(/usr/bin/curl:*)"]) == ["allow"] * 3
    # An allow rule by path covers that path as written only (round 16's anchoring is unchanged).
    assert await decide(tmp_path, Bash(), [".//deploy.sh", "deploy.sh"], "default",
                        allow=["Bash(./deploy.sh:*)"]) == ["ask", "ask"]
