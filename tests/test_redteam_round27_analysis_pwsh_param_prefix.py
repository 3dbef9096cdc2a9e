"""Red team, round 27 (analysis): PowerShell parameter prefixes and aliases against deny rules.

pwsh binds any unambiguous prefix of a parameter name and each of its declared aliases
(``-Rec``, ``-r`` and Get-ChildItem's ``-s`` are ``-Recurse``; ``-LP``/``-PSPath`` are
``-LiteralPath``), so a deny rule that spells the parameter out (``PowerShell(Remove-Item
-Recurse:*)``) must meet every spelling. Where the cmdlet's parameters are not known here, a
prefix either way is taken as the same parameter (fail closed). Decisions of the real engine.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.tools.powershell import PowerShell
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide, missed_denies

pytestmark = pytest.mark.anyio

#: (deny rule, commands pwsh runs as what it names).
DENIED = [
    ("PowerShell(Remove-Item -Recurse:*)", ["Remove-Item -Rec x", "Remove-Item -r x", "ri -RECU x",
                                            "del -recurse:$true x", "Remove-Item -Re x"]),
    ("PowerShell(Get-ChildItem -Recurse:*)", ["gci -s", "Get-ChildItem -Rec", "ls -recu"]),
    ("PowerShell(Get-Content -LiteralPath:*)", ["gc -LP secret.txt", "Get-Content -PSPath secret.txt",
                                                "Get-Content -lit secret.txt"]),
    ("PowerShell(Invoke-WebRequest -OutFile:*)", ["iwr -Out f http://x", "Invoke-WebRequest -OutF f http://x"]),
    # A rule written with a prefix means the parameter it binds.
    ("PowerShell(Set-Content -Enc:*)", ["Set-Content -Encoding utf8 x y"]),
    # Named parameters bind wherever they stand (round 26's Left: a prefix rule met one order only).
    ("PowerShell(Remove-Item -Recurse -Force:*)", ["Remove-Item x -Recurse -Force", "del x -Fo -Rec",
                                                   "Remove-Item -Force x -r"]),
    ("PowerShell(Remove-Item -Recurse x)", ["Remove-Item x -Recurse", "ri x -rec"]),
    # Cmdlets whose parameters are not known here: a prefix either way is a possible match.
    ("PowerShell(Frob-Widget -Dangerous:*)", ["Frob-Widget -Dang", "frob-widget -d"]),
]


async def test_deny_rules_meet_parameter_prefixes_and_aliases(tmp_path: Path) -> None:
    assert await missed_denies(tmp_path, PowerShell(), DENIED) == []
    # An ask rule the same way (default mode: Get-ChildItem alone is read-only, allowed unasked).
    assert await decide(tmp_path, PowerShell(), ["gci -s", "gci -Force", "gci -Depth 1"], "default",
                        ask=["PowerShell(Get-ChildItem -Recurse:*)"]) == ["ask", "allow", "allow"]
    # Other parameters of a known cmdlet stay other parameters (no blanket match).
    kept = ["Remove-Item -Force x", "Remove-Item -LiteralPath x", "gc -Tail 1 x", "gci -Directory", "gci x -Force"]
    got = await decide(tmp_path, PowerShell(), kept, "bypassPermissions",
                       deny=["PowerShell(Remove-Item -Recurse:*)", "PowerShell(Get-ChildItem -Recurse:*)",
                             "PowerShell(Get-Content -LiteralPath:*)"])
    assert got == ["allow"] * len(kept)
