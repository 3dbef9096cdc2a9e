"""Round 37 red team, review: ToolSearch over a deferred tool whose own code answers badly.

``ToolSearch`` searches `ToolCatalog.deferred_tools()` and reads each one's ``prompt()``,
``search_hint``, ``name`` and ``aliases`` itself. The registry handed it every deferred tool,
whether or not that tool could be listed (round 36 runtime2 checked tools only when ``tools[]``
was built, and a deferred tool is not in it until found): one deferred tool whose ``prompt()``
answered a non-str, whose ``search_hint`` was not a str, or whose ``aliases`` changed to a
non-str since registration made every search fail, so no
deferred tool (every MCP tool of a session with many) could be found. Now the registry hands
out only deferred tools whose entry checks (and whose hint is a str); the bad one is left out
and refused, the others are found. Real Runtime, real local sandbox.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import shellrt
from shellrt.permissions import callback_approver
from shellrt.protocol import ToolContext, ToolUseBlock
from shellrt.protocol.permission import PermissionResult
from shellrt.protocol.tool import Tool, ToolOutput
from shellrt.tools.bash import Bash
from shellrt.tools.tool_search import ToolSearchTool
from tests._governance import envelope_text, isolated_workspace

pytestmark = pytest.mark.anyio

_ids = itertools.count()


class _In(BaseModel):
    text: str = ""


class Deferred(Tool[_In, str]):
    input_model = _In
    defer_loading = True

    def __init__(self, name: str, mode: str = "") -> None:
        self.name = name
        self.mode = mode
        self.armed = False

    def prompt(self) -> Any:
        if self.armed and self.mode == "prompt_not_str":
            return 42
        return f"{self.name}: sends a weather report"

    @property  # type: ignore[override]
    def search_hint(self) -> Any:
        return None if self.armed and self.mode == "hint_not_str" else "weather"

    @property  # type: ignore[override]
    def aliases(self) -> Any:
        return (7,) if self.armed and self.mode == "aliases_changed" else ()

    async def check_permissions(self, tool_input: _In, ctx: ToolContext) -> PermissionResult:
        return PermissionResult.allow()

    async def call(self, tool_input: _In, ctx: ToolContext) -> ToolOutput[str]:
        return ToolOutput("ran")

    def to_model_content(self, output: str) -> str:
        return output


@pytest.mark.parametrize("query", ["weather report", "select:GoodWeather,BadWeather"])
@pytest.mark.parametrize("mode", ["prompt_not_str", "hint_not_str", "aliases_changed"])
async def test_one_bad_deferred_tool_does_not_hide_every_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, query: str
) -> None:
    ws = isolated_workspace(tmp_path, monkeypatch)
    bad, good = Deferred("BadWeather", mode), Deferred("GoodWeather")
    runtime = shellrt.Runtime(
        ws, "local", session_dir=tmp_path / f"s{next(_ids)}", tools=[Bash(), ToolSearchTool(), bad, good],
        mode="default", approver=callback_approver(lambda _r: True),
    )
    async with runtime as rt:
        bad.armed = True
        [found] = await rt.run_envelopes(
            [ToolUseBlock(id=f"r37s{next(_ids)}", name="ToolSearch", input={"query": query})]
        )
        [called] = await rt.run_envelopes([ToolUseBlock(id=f"r37c{next(_ids)}", name="BadWeather", input={})])
    text = envelope_text(found)
    assert not found.is_error and "GoodWeather" in text, text
    assert "- BadWeather" not in text, text  # not found (the query itself may name it)
    assert called.is_error and "Unknown tool" in envelope_text(called)
