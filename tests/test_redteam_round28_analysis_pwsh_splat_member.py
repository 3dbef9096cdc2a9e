"""Red team, round 28 (analysis): PowerShell arguments bound at run time, against deny rules.

A splatted argument (``@args``, ``@p``, ``@PSBoundParameters``, ``@_``) binds whatever parameters
and values the variable holds, so ``function f { Remove-Item @args }; f x -Recurse`` ran
``Remove-Item -Recurse`` past ``PowerShell(Remove-Item -Recurse:*)``; and ForEach-Object's
-MemberName form (``gci | % Delete``) calls a method by name where ``(gci x).Delete()`` is already
refused under a deny rule. Decisions of the real engine in ``bypassPermissions`` mode.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.tools.powershell import PowerShell
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide, missed_denies

pytestmark = pytest.mark.anyio

DENIED = [
    ("PowerShell(Remove-Item -Recurse:*)", [
        "function f { Remove-Item @args }; f x -Recurse", "filter g { ri @args }; g x -Recurse",
        "function f { Remove-Item x @PSBoundParameters }; f", "Remove-Item x @_", "del x @input",
    ]),
    ("PowerShell(Remove-Item secret)", ["function f { Remove-Item @args }; f secret"]),
    ("PowerShell(Remove-Item:*)", ["gci | % Delete", "Get-Item x | ForEach-Object -MemberName Delete",
                                   "gci | foreach -m Delete", "function f { gci | % @args }; f Delete"]),
]


async def test_splats_and_member_names_meet_deny_rules(tmp_path: Path) -> None:
    assert await missed_denies(tmp_path, PowerShell(), DENIED) == []
    # A splat into another cmdlet, and a part of another cmdlet past 32 spellings, stay other.
    kept = ["Get-ChildItem @p", "Get-Foo -r -r -r -r -r -r x", "Remove-Item x"]
    got = await decide(tmp_path, PowerShell(), kept, "bypassPermissions", deny=["PowerShell(Remove-Item -Recurse:*)"])
    assert got == ["allow"] * len(kept)
