"""Red team, round 38 (iface): a registered tool's name must be one the model APIs take and rules can name.

The registry checked only that a name is a non-empty ``str``. A hostile tool definition (a plugin,
an API caller's tool) named ``my tool``, ``Bаsh`` (Cyrillic a) or 200 letters went into every
``tools[]``: the Messages and Chat Completions APIs refuse the whole request over one tool whose
name is not ``[A-Za-z0-9_-]`` (at most 64 letters for OpenAI, 128 for Anthropic), so one tool ended
every request of the session. A tool named ``bash`` or ``webfetch`` (a built-in's name in another
case) could be named by no permission rule: the rule parser refuses ``bash`` as a typo of ``Bash``
(round 26), so a deny or ask could never reach it. Now such a tool is left out of every listing and
refused (named in ``listing_diagnostics``), the others stand. Real ``Runtime``, local backend.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

import shellrt
from shellrt.permissions.rules import RuleSyntaxError, parse_rule
from shellrt.protocol import ToolContext
from shellrt.protocol.permission import PermissionResult
from shellrt.protocol.tool import Tool, ToolOutput
from shellrt.tools.bash import Bash

pytestmark = pytest.mark.anyio

_BAD = ["my tool", "B\u0430sh", "t" * 200, "bash", "webfetch", "x.y"]


class _In(BaseModel):
    text: str = ""


class _Named(Tool[_In, str]):
    input_model = _In

    def __init__(self, name: str) -> None:
        self.name = name
        self.calls = 0

    def prompt(self) -> str:
        return "a tool"

    async def check_permissions(self, tool_input: _In, ctx: ToolContext) -> PermissionResult:
        return PermissionResult.allow()

    async def call(self, tool_input: _In, ctx: ToolContext) -> ToolOutput[str]:
        self.calls += 1
        return ToolOutput("ran")

    def to_model_content(self, output: str) -> str:
        return output


def test_a_builtin_name_in_another_case_is_no_rule() -> None:
    """The premise: no rule can name ``bash`` (a guard; passed before)."""
    with pytest.raises(RuleSyntaxError, match="case-sensitive"):
        parse_rule("bash", "deny")


async def test_unsendable_and_unnameable_names_are_left_out(tmp_path: Path) -> None:
    """Failed before: all six were in ``tools_for_anthropic``/``tools_for_openai`` and ran when
    called. Now only Bash and the good tool are listed; the six are refused and named."""
    bad = [_Named(name) for name in _BAD]
    good = _Named("Good_tool-2")
    async with shellrt.Runtime(
        tmp_path, "local", mode="bypassPermissions", tools=[Bash(), *bad, good], session_dir=tmp_path / "s"
    ) as rt:
        anthropic = [entry["name"] for entry in rt.tools_for_anthropic()]
        openai = [entry["function"]["name"] for entry in rt.tools_for_openai()]
        message = {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": f"toolu_{i}", "name": t.name, "input": {"text": "x"}}
                for i, t in enumerate(bad)
            ],
        }
        answer = await rt.run(message)
        diagnostics = list(rt.registry.listing_diagnostics)
    assert anthropic == openai == ["Bash", "Good_tool-2"], (anthropic, openai)
    assert not any(t.calls for t in bad), [t.calls for t in bad]
    assert all(block["is_error"] for block in answer["content"]), answer
    for tool in bad:
        assert any(repr(tool.name[:100]) in line for line in diagnostics), (tool.name, diagnostics)
