"""Red team, round 56 (rules): ``domain:`` rules on tools that never fetch, which denied nothing.

A ``domain:`` specifier made a domain rule for any tool. Only WebFetch's subject carries hosts, so
``Bash(domain:evil.com)`` (an operator's way, they thought, to keep commands off a host) or
``PowerShell(domain:…)`` matched no call and was compiled into nothing (only WebFetch's domain rules
reach the sandbox's proxy). ``Read(domain:k.txt)`` was a domain rule to the permission layer and the
file ``domain:k.txt`` to the sandbox: commands could not read it, the Read tool read it unasked in
``bypassPermissions``. Now a command tool's ``domain:`` rule is refused, saying to write
``WebFetch(domain:…)`` (a malformed deny degrades the session: fail closed), and a file tool's names
the file, for both layers. Other tools (the Python API's own) keep domain rules over their subjects.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shellrt.permissions import build_governance
from shellrt.permissions.errors import RuleSyntaxError
from shellrt.permissions.rules import parse_rule
from shellrt.protocol import ToolContext
from shellrt.tools.bash import Bash
from shellrt.tools.read import ReadTool

INERT = ["Bash(domain:evil.com)", "PowerShell(domain:evil.com)"]
FILES = ["Read(domain:k.txt)", "Edit(domain:k.txt)", "Write(domain:k.txt)", "Grep(domain:k.txt)",
         "Glob(domain:k.txt)"]  # fmt: skip
KEPT = ["WebFetch(domain:evil.com)", "WebFetch(domain:*.evil.com)", "MyFetcher(domain:evil.com)"]


@pytest.mark.parametrize("text", INERT)
def test_a_commands_domain_rule_is_refused(text: str) -> None:
    """Failed 2 of 2 before: parsed as a domain rule no call of the tool can meet."""
    with pytest.raises(RuleSyntaxError, match=r"WebFetch\(domain:"):
        parse_rule(text, "deny")


@pytest.mark.parametrize("text", FILES)
def test_a_file_tools_domain_rule_names_the_file(text: str) -> None:
    """Failed 5 of 5 before: a domain rule (the sandbox masked the file of that name)."""
    rule = parse_rule(text, "deny")
    assert (rule.spec_kind, rule.specifier) == ("path", "domain:k.txt")


@pytest.mark.parametrize("text", KEPT)
def test_domain_rules_of_fetching_tools_still_parse(text: str) -> None:
    assert parse_rule(text, "deny").spec_kind == "domain"


async def _decide(tmp_path: Path, rule: str, tool: object, tool_input: dict[str, str]) -> tuple[str, list[str]]:
    ws = tmp_path / "ws"
    (ws / ".shellrt").mkdir(parents=True)
    (ws / ".shellrt" / "settings.json").write_text(json.dumps({"permissions": {"deny": [rule]}}))
    (ws / "domain:k.txt").write_text("SECRET56\n")
    gov = build_governance(
        ws, home=tmp_path / "home", managed_path=tmp_path / "managed.json", mode="bypassPermissions",
        trust_workspace=True,
    )
    ctx = ToolContext(session_id="s", session_dir=tmp_path / "s", workspace=ws, cwd=str(ws), allowed_roots=(ws,))
    parsed = tool.parse_input(tool_input)  # type: ignore[attr-defined]
    decision = await gov.engine.decide(tool, parsed, ctx)  # type: ignore[arg-type]
    return decision.behavior, gov.settings.diagnostics


@pytest.mark.anyio
async def test_the_commands_deny_is_not_silently_inert(tmp_path: Path) -> None:
    """Failed 1 of 1 before: ``curl https://evil.com/`` allowed (bypassPermissions), nothing said."""
    behavior, notes = await _decide(tmp_path, "Bash(domain:evil.com)", Bash(), {"command": "curl https://evil.com/"})
    assert behavior != "allow" and any("WebFetch(domain:" in n for n in notes), (behavior, notes)


@pytest.mark.anyio
async def test_the_file_of_that_name_is_not_read_unasked(tmp_path: Path) -> None:
    """Failed 1 of 1 before: Read of ``domain:k.txt`` allowed, the deny a domain rule."""
    ws = tmp_path / "ws"
    behavior, notes = await _decide(tmp_path, "Read(domain:k.txt)", ReadTool(), {"file_path": str(ws / "domain:k.txt")})
    assert behavior == "deny", (behavior, notes)
