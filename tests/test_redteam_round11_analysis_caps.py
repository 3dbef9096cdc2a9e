"""Red team, round 11 (command analysis): the planner's limits dropped commands silently.

The planner stopped planning at two limits and kept what it had: a wrapped command
(``env X``, ``timeout 5 X``, ``find -exec X``) once the plan held 200 commands, and any
construct nested deeper than 64 levels (``{ { ... rm; }; }``, ``if``s, a long ``&&`` list,
which the grammar nests to the left). The dropped command was no part of the command, so
``true; ...; env rm -rf x`` was allowed by ``Bash(env:*)`` and ``true; { { ... rm -rf x; }; }``
by ``Bash(true:*)``, and a deny rule never saw it. A command beyond a limit is now not
analysed at all: it is one unread part that no allow rule matches (its raw text is what
deny rules see), never read-only. Wrappers nested deeper than the name resolution follows
(16) already gave a part without a name, which no rule allows; a test pins that down.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from shellrt.analysis import analyze
from shellrt.permissions import Governance, PermissionDecision, build_governance
from shellrt.protocol import ToolContext
from shellrt.tools.bash import Bash
from tests._governance import envelope_text as _text
from tests._governance import isolated_workspace, run_bash

pytestmark = pytest.mark.anyio

_MANY = "; ".join(["true"] * 201) + "; "
_DEEP = 70

#: (command, the allow rule that allowed it before) -- each also runs ``rm -rf victim``.
_ATTACKS = [
    (_MANY + "env rm -rf victim", "Bash(env:*)"),
    (_MANY + "timeout 5 rm -rf victim", "Bash(timeout:*)"),
    (_MANY + "nice rm -rf victim", "Bash(nice:*)"),
    ("true; " + "{ " * _DEEP + "rm -rf victim; " + "}; " * _DEEP, "Bash(true:*)"),
    ("true; " + "if true; then " * _DEEP + "rm -rf victim; " + "fi; " * _DEEP, "Bash(true:*)"),
    ("rm -rf victim" + " && true" * 250, "Bash(true:*)"),
    ("true; " + "while false; do " * _DEEP + "true; done; " * _DEEP + "rm -rf victim", "Bash(true:*)"),
    ("env " * 33 + "rm -rf victim", "Bash(env:*)"),
    ("timeout 5 " * 40 + "rm -rf victim", "Bash(timeout:*)"),
    ("bash -c '" + "true; " * 201 + "env rm -rf victim'", "Bash(bash:*)"),
]


def _gov(tmp_path: Path, mode: str = "default", **perms: Any) -> Governance:
    ws = tmp_path / "ws"
    (ws / ".shellrt").mkdir(parents=True, exist_ok=True)
    (ws / ".shellrt" / "settings.json").write_text(json.dumps({"permissions": perms}))
    return build_governance(
        ws, home=tmp_path / "home", managed_path=tmp_path / "managed.json", mode=mode, trust_workspace=True
    )


async def _decide(gov: Governance, command: str, tmp_path: Path) -> PermissionDecision:
    bash = Bash()
    ws = gov.settings.workspace
    ctx = ToolContext(session_id="s", session_dir=tmp_path / "session", workspace=ws, cwd=str(ws), allowed_roots=(ws,))
    return await gov.engine.decide(bash, bash.parse_input({"command": command}), ctx)


@pytest.mark.parametrize(("command", "rule"), _ATTACKS, ids=range(len(_ATTACKS)))
async def test_an_allow_rule_never_allows_a_command_over_a_limit(command: str, rule: str, tmp_path: Path) -> None:
    analysis = analyze(command)
    assert not analysis.read_only
    for allow in (rule, "Bash(true:*)"):
        decision = await _decide(_gov(tmp_path, allow=[allow, "Bash(true:*)"]), command, tmp_path)
        assert decision.behavior != "allow", (allow, decision.reason)


@pytest.mark.parametrize(("command", "rule"), _ATTACKS[:7], ids=range(7))
async def test_a_deny_rule_is_not_dodged_over_a_limit(command: str, rule: str, tmp_path: Path) -> None:
    decision = await _decide(
        _gov(tmp_path, mode="bypassPermissions", deny=["Bash(rm:*)"]), command, tmp_path
    )
    assert decision.behavior == "deny", decision.reason


def test_a_command_over_a_limit_is_one_unread_part_that_says_why() -> None:
    analysis = analyze(_MANY + "env rm -rf victim")
    assert not analysis.parse_ok
    assert [part.name for part in analysis.subcommands] == [""]
    assert any("split" in reason for reason in analysis.reasons), analysis.reasons


def test_commands_under_the_limits_are_still_read() -> None:
    for command in (
        "; ".join(["true"] * 150) + "; env ls",
        "{ " * 20 + "ls; " + "}; " * 20,
        "true" + " && true" * 40 + " && ls",
        "env " * 10 + "ls",
    ):
        analysis = analyze(command)
        names = {part.name for part in analysis.subcommands}
        assert analysis.parse_ok and "ls" in names and "" not in names, (command[:40], analysis.reasons)
    assert analyze("{ " * 20 + "ls; " + "}; " * 20).read_only


async def test_the_bash_tool_asks_over_a_limit_with_allow_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = isolated_workspace(tmp_path, monkeypatch)
    rules = ["Bash(true:*)", "Bash(env:*)", "Bash(timeout:*)"]
    commands = [command.replace("victim", f"victim{i}") for i, (command, _) in enumerate(_ATTACKS[:6])]
    for i in range(6):
        (ws / f"victim{i}").mkdir()
    results = await run_bash(ws, commands, mode="default", id_prefix="r11c", allow=rules)
    for i, envelope in enumerate(results):
        assert envelope.is_error, _text(envelope)
        assert (ws / f"victim{i}").is_dir(), i
    [ok] = await run_bash(ws, ["true; env true"], mode="default", id_prefix="r11c", allow=rules)
    assert not ok.is_error, _text(ok)
