"""Round 27 (analysis, review): one reading of a PowerShell command word for parts and rules.

The parts the engine judges (`_pwshparts`) and the deny/ask rule matcher (`permissions.rules`) held
two copies of the alias / module prefix / case reading; both now use `analysis.pwsh_names`. Pinned
on every built-in alias both ways: the part names the cmdlet, and a deny rule naming either spelling
meets the other.
"""

from __future__ import annotations

from pathlib import Path

from shellrt.analysis.powershell import ALIASES
from shellrt.analysis.pwsh_names import canonical_name, command_key
from shellrt.permissions.rules import parse_rule


def test_parts_and_rules_read_every_alias_alike(tmp_path: Path) -> None:
    missed = []
    for alias, cmdlet in ALIASES.items():
        named = canonical_name(alias.upper())
        if named and named.lower() != cmdlet:
            missed.append(("part", alias, named))
        if command_key(f"Microsoft.PowerShell.Utility\\{alias.upper()}") != cmdlet:
            missed.append(("key", alias, cmdlet))
        by_alias = parse_rule(f"PowerShell({alias}:*)", "deny")
        by_cmdlet = parse_rule(f"PowerShell({cmdlet}:*)", "deny")
        if not by_alias.match_item(f"{named or cmdlet} x", home=tmp_path, resolve=False):
            missed.append(("rule by alias", alias, cmdlet))
        if not by_cmdlet.match_item(f"{alias.upper()} x", home=tmp_path, resolve=False):
            missed.append(("rule by cmdlet", alias, cmdlet))
    assert missed == []
