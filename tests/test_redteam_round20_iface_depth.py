"""Red team round 20 (iface): a tool input nested hundreds of levels deep ended the whole batch.

The model chooses the input, and a tool with a free-form schema (an MCP tool's) takes any JSON:
nested 260 levels it passed the schema, then pydantic's serializer refused it ("Circular
reference detected") and, deeper, the backfill and a hook payload's encoder raised
RecursionError, out of `run_envelopes`: the other calls of the batch got no result. The runtime
now answers such a call with an error that says what to do, and runs the rest. Real `Runtime`
sessions, a free-form tool of the test's own, a real PreToolUse hook.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import shellrt
from shellrt.protocol import Tool, ToolContext, ToolOutput, ToolUseBlock
from tests._governance import envelope_text, isolated_workspace

pytestmark = pytest.mark.anyio

_ids = itertools.count()


class _FreeInput(BaseModel):
    data: Any = None


class _Free(Tool[_FreeInput, str]):
    """Takes any JSON, as an MCP tool's schema may."""

    name = "Free"
    input_model = _FreeInput
    touches_environment = False

    def prompt(self) -> str:
        return "Takes anything."

    async def call(self, tool_input: _FreeInput, ctx: ToolContext) -> ToolOutput[str]:
        return ToolOutput("took it")

    def to_model_content(self, output: str) -> str:
        return output


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_workspace(tmp_path, monkeypatch)


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("hooked", [False, True])
async def test_a_deep_input_is_refused_and_the_batch_goes_on(ws: Path, hooked: bool) -> None:
    settings = ws.parent / f"operator{next(_ids)}.json"
    hook = {"type": "command", "command": "cat >/dev/null", "timeout": 10, "onFailure": "block"}
    settings.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [hook]}]}} if hooked else {}))
    blocks = [
        ToolUseBlock(id=f"r20d{next(_ids)}", name="Free", input={"data": _nested(depth)})
        for depth in (300, 900, 40)
    ]
    async with shellrt.Runtime(
        ws,
        "local",
        session_dir=ws.parent / f"s{next(_ids)}",
        tools=[_Free()],
        settings_files=[settings],
        mode="bypassPermissions",
    ) as rt:
        envelopes = await rt.run_envelopes(blocks)
    texts = [envelope_text(e) for e in envelopes]
    assert [e.is_error for e in envelopes] == [True, True, False], texts
    assert all("nested more than 64 levels" in t for t in texts[:2]), texts
    assert texts[2] == "took it", texts
