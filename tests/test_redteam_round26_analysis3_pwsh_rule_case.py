"""Red team, round 26 (wave 3, analysis-3): PowerShell command rules and case.

pwsh resolves command names (cmdlets, aliases, functions) and parameter names (``-Recurse``) without
regard to case, and reads ``-Name:value`` as ``-Name value``; rules compared them case-sensitively, so a
deny rule written ``PowerShell(Remove-item:*)`` or ``PowerShell(Get-ChildItem -Recurse:*)`` met nothing
of what it names in ``bypassPermissions`` mode, where deny rules are the only guard. Allow rules must
cover the cmdlet they name in any case and nothing more. Bash rules stay case-sensitive.
Decisions of the real permission engine (no pwsh here).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from shellrt.permissions.rules import parse_rule
from shellrt.tools.bash import Bash
from shellrt.tools.powershell import PowerShell

pytestmark = pytest.mark.anyio


async def decide(
    tmp_path: Path, tool: Any, calls: list[Any], mode: str, ws: Path | None = None, **rules: list[str]
) -> list[str]:
    """The engine's behaviour for each call (a command, or the tool's input) in a trusted workspace
    (``ws``, else a new one) whose settings hold ``rules``."""
    from shellrt.permissions import build_governance
    from shellrt.protocol import ToolContext

    ws = ws or tmp_path / f"ws{len(list(tmp_path.iterdir()))}"
    (ws / ".shellrt").mkdir(parents=True)
    (ws / ".shellrt" / "settings.json").write_text(json.dumps({"permissions": rules}))
    gov = build_governance(ws, home=tmp_path / "home", managed_path=tmp_path / "managed.json", mode=mode,
                           trust_workspace=True)
    ctx = ToolContext(session_id="s", session_dir=tmp_path / "s", workspace=ws, cwd=str(ws), allowed_roots=(ws,))
    inputs = [c if isinstance(c, dict) else {"command": c} for c in calls]
    return [(await gov.engine.decide(tool, tool.parse_input(i), ctx)).behavior for i in inputs]


#: (deny rule, commands pwsh runs as what it names).
DENIED = [
    ("PowerShell(Remove-item:*)", ["Remove-Item x", "ri x", "del x", "REMOVE-ITEM x", "remove-item x"]),
    ("PowerShell(get-Content:*)", ["gc secret.txt", "Content secret.txt", "Get-Content secret.txt"]),
    ("PowerShell(Get-ChildItem -Recurse:*)", ["Get-ChildItem -recurse", "gci -RECURSE", "ls -Recurse",
                                               "Get-ChildItem -Recurse:$true", "dir -recurse:$true"]),
    ("PowerShell(Set-Content -Path:*)", ["Set-Content -path:x y", "sc -PATH x y"]),
    ("PowerShell(REMOVE-ITEM:*)", ["Remove-Item x", "rm x"]),
    ("PowerShell(Get-Content -Path secret.txt)", ["Get-Content -path secret.txt", "gc -Path:secret.txt"]),
]


async def test_deny_rules_meet_command_and_parameter_names_in_any_case(tmp_path: Path) -> None:
    missed = []
    for group in (DENIED[:4], DENIED[4:]):  # each group's rules name different cmdlets
        commands = [c for _, cs in group for c in cs]
        got = await decide(tmp_path, PowerShell(), commands, "bypassPermissions", deny=[r for r, _ in group])
        missed += [(c, d) for c, d in zip(commands, got, strict=True) if d != "deny"]
    assert missed == []
    # An ask rule the same way (default mode: Get-ChildItem alone is read-only, allowed unasked).
    assert await decide(tmp_path, PowerShell(), ["Get-ChildItem -recurse", "gci"], "default",
                        ask=["PowerShell(get-childitem -RECURSE:*)"]) == ["ask", "allow"]


#: Deny rules naming an alias or a module-qualified cmdlet, and commands that run that cmdlet.
BY_ALIAS = [
    ("PowerShell(ri:*)", ["Remove-Item x", "del x"]), ("PowerShell(iwr:*)", ["Invoke-WebRequest x"]),
    ("PowerShell(Microsoft.PowerShell.Management\\Remove-Item:*)", ["Remove-Item x", "ri x"]),
    ("PowerShell(del x)", ["Remove-Item x", "ri x"]), ("PowerShell(cat secret.txt)", ["Get-Content secret.txt"]),
]


async def missed_denies(tmp_path: Path, tool: Any, pairs: list[tuple[str, list[str]]]) -> list[tuple[str, str, str]]:
    """(rule, command, decision) for each command its deny rule alone, in bypass mode, did not deny."""
    missed = []
    for rule, commands in pairs:
        got = await decide(tmp_path, tool, commands, "bypassPermissions", deny=[rule])
        missed += [(rule, c, d) for c, d in zip(commands, got, strict=True) if d != "deny"]
    return missed


async def test_deny_rules_naming_an_alias_or_a_module_meet_the_cmdlet(tmp_path: Path) -> None:
    assert await missed_denies(tmp_path, PowerShell(), BY_ALIAS) == []


def test_allow_rules_cover_their_cmdlet_in_any_case_and_nothing_more() -> None:
    # The engine allows no PowerShell part by a command rule today (its reads are not known), so the
    # allow side is pinned on the rule: its cmdlet in any case, nothing more.
    def covers(rule: str, part: str) -> bool:
        return parse_rule(rule, "allow").match_item(part, home=Path("/nonexistent"), resolve=True)

    assert [covers("PowerShell(new-item:*)", p) for p in ("New-Item d", "New-Item")] == [True, True]
    assert covers("PowerShell(get-childitem -Path x)", "Get-ChildItem -Path x")
    assert not any(covers(r, p) for r, p in [
        ("PowerShell(New-Item d)", "New-Item D"), ("PowerShell(Make build)", "make build"),
        ("PowerShell(remove-*:*)", "Remove-Item x"), ("PowerShell(New-Item -Path x)", "New-Item -path x"),
        ("PowerShell(new-item:*)", "New-ItemProperty x"), ("PowerShell(new-item:*)", "New-Itemx"),
    ])


async def test_bash_rules_stay_case_sensitive(tmp_path: Path) -> None:
    assert await decide(tmp_path, Bash(), ["make build", "Make build"], "default",
                        allow=["Bash(Make build)"]) == ["ask", "allow"]
