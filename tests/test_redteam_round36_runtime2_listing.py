"""Round 36 red team, runtime2: building the model-facing ``tools[]``.

A registered tool (MCP proxy, plugin, an API caller's tool) whose ``name``, ``prompt()``,
``input_schema()``, ``is_enabled()`` or ``is_deferred()`` raises, answers the wrong type, or
answers something huge or not JSON ended ``tools_for_anthropic``/``tools_for_openai`` for
every tool (or sent an entry the API refuses, failing every request). Now the bad tool is left
out with a diagnostic and refused if called (fail closed); the others stand. Real Runtime,
real local sandbox."""

from __future__ import annotations

import itertools
import json
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
from tests._governance import envelope_text, isolated_workspace

pytestmark = pytest.mark.anyio

_ids = itertools.count()


class _In(BaseModel):
    text: str = ""


class _Odd(BaseException):
    """Not an Exception: a tool's own BaseException subclass."""


def _cyclic() -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    schema["properties"]["self"] = schema
    return schema


def _deep() -> dict[str, Any]:
    node: dict[str, Any] = {"type": "object"}
    for _ in range(5000):
        node = {"type": "object", "properties": {"x": node}}
    return node


class Good(Tool[_In, str]):
    name = "Good"
    input_model = _In

    def prompt(self) -> str:
        return "a healthy tool"

    async def check_permissions(self, tool_input: _In, ctx: ToolContext) -> PermissionResult:
        return PermissionResult.allow()

    async def call(self, tool_input: _In, ctx: ToolContext) -> ToolOutput[str]:
        return ToolOutput("good ran")

    def to_model_content(self, output: str) -> str:
        return output


class Bad(Tool[_In, str]):
    """Healthy until ``armed``; then the member its ``mode`` names misbehaves."""

    input_model = _In

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.armed = False
        self.calls = 0

    def _on(self, mode: str) -> bool:
        return self.armed and self.mode == mode

    @property  # type: ignore[override]
    def name(self) -> Any:
        if self._on("name_raises"):
            raise AttributeError("name broke")
        if self._on("name_not_str"):
            return 42
        if self._on("name_changes"):
            return "Good"
        return "Bad"

    def prompt(self) -> Any:
        if self._on("prompt_raises"):
            raise RuntimeError("prompt broke")
        if self._on("prompt_base"):
            raise _Odd("not an Exception")
        if self._on("prompt_recursion"):
            return self.prompt() + "x"
        if self._on("prompt_not_str"):
            return {"not": "a str"}
        if self._on("prompt_huge"):
            return "x" * 5_000_000
        return "a tool that turns"

    def input_schema(self) -> Any:
        if self._on("schema_raises"):
            raise KeyError("schema broke")
        if self._on("schema_not_dict"):
            return ["type", "object"]
        if self._on("schema_not_object"):
            return {"type": "string"}
        if self._on("schema_not_json"):
            return {"type": "object", "properties": {"x": {"enum": {1, 2}}}}
        if self._on("schema_nan"):
            return {"type": "object", "properties": {"x": {"type": "number", "maximum": float("nan")}}}
        if self._on("schema_cyclic"):
            return _cyclic()
        if self._on("schema_deep"):
            return _deep()
        if self._on("schema_huge"):
            return {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(200_000)}}
        if self._on("schema_bad_strict"):
            return {"type": "object", "additionalProperties": False, "minItems": "two"}
        return super().input_schema()

    def is_enabled(self) -> Any:
        if self._on("enabled_raises"):
            raise ValueError("is_enabled broke")
        if self._on("enabled_not_bool"):
            return "yes"
        return True

    def is_deferred(self) -> Any:
        if self._on("deferred_raises"):
            raise ValueError("is_deferred broke")
        if self._on("deferred_not_bool"):
            return None
        return False

    async def check_permissions(self, tool_input: _In, ctx: ToolContext) -> PermissionResult:
        return PermissionResult.allow()

    async def call(self, tool_input: _In, ctx: ToolContext) -> ToolOutput[str]:
        self.calls += 1
        return ToolOutput("bad ran")

    def to_model_content(self, output: str) -> str:
        return output


MODES = [
    "name_raises", "name_not_str", "name_changes",
    "prompt_raises", "prompt_base", "prompt_recursion", "prompt_not_str", "prompt_huge",
    "schema_raises", "schema_not_dict", "schema_not_object", "schema_not_json", "schema_nan",
    "schema_cyclic", "schema_deep", "schema_huge",
    "enabled_raises", "enabled_not_bool", "deferred_raises", "deferred_not_bool",
]


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_workspace(tmp_path, monkeypatch)


def _names(entries: list[dict[str, Any]]) -> list[str]:
    return [e["function"]["name"] if "function" in e else e["name"] for e in entries]


@pytest.mark.parametrize("mode", MODES)
async def test_a_bad_tool_is_left_out_and_refused_the_rest_stand(ws: Path, mode: str) -> None:
    bad = Bad(mode)
    runtime = shellrt.Runtime(
        ws, "local", session_dir=ws.parent / f"s{next(_ids)}", tools=[Bash(), bad, Good()],
        mode="default", allow=["Bash(echo:*)"], approver=callback_approver(lambda _r: True),
    )
    async with runtime as rt:
        healthy = _names(rt.tools_for_anthropic())
        assert "Bad" in healthy
        bad.armed = True
        listings = [
            rt.tools_for_anthropic(),
            rt.tools_for_anthropic(strict=True),
            rt.tools_for_anthropic(defer_loading=True, strict=True),
            rt.tools_for_openai(),
            rt.tools_for_openai(strict=True),
        ]
        for entries in listings:
            assert _names(entries) == ["Bash", "Good"] or _names(entries)[-1:] == ["Good"], _names(entries)
            assert "Bad" not in _names(entries) and len(_names(entries)) == len(healthy) - 1
            json.dumps(entries, allow_nan=False)  # what is sent is plain JSON
        assert any("left out" in line for line in rt.registry.listing_diagnostics), rt.registry.listing_diagnostics
        blocks = [
            ToolUseBlock(id=f"r36a{next(_ids)}", name="Bash", input={"command": "echo before"}),
            ToolUseBlock(id=f"r36h{next(_ids)}", name="Bad", input={"text": "x"}),
            ToolUseBlock(id=f"r36g{next(_ids)}", name="Good", input={"text": "x"}),
        ]
        envelopes = await rt.run_envelopes(blocks)
    before, hostile, good = envelopes
    assert not before.is_error and "before" in envelope_text(before)
    assert hostile.is_error and bad.calls == 0, envelope_text(hostile)
    assert "Unknown tool 'Bad'" in envelope_text(hostile)  # refused, never run
    assert not good.is_error and envelope_text(good) == "good ran"


async def test_a_malformed_bound_is_not_strict_and_breaks_nothing(ws: Path) -> None:
    """``minItems: "two"`` made the strict check raise (TypeError) for the whole listing."""
    bad = Bad("schema_bad_strict")
    runtime = shellrt.Runtime(
        ws, "local", session_dir=ws.parent / f"s{next(_ids)}", tools=[Bash(), bad, Good()],
        mode="default", allow=["Bash(echo:*)"], approver=callback_approver(lambda _r: True),
    )
    async with runtime as rt:
        bad.armed = True
        for entries in (rt.tools_for_anthropic(strict=True), rt.tools_for_openai(strict=True)):
            [entry] = [e for e in entries if "Bad" in json.dumps(e)]
            assert "strict" not in entry and "strict" not in entry.get("function", {})
            assert _names(entries)[-1] == "Good"


def test_unregister_removes_the_names_registered_not_the_names_claimed_now() -> None:
    """A tool that renames itself to another's name made ``unregister`` drop that other's key."""
    from shellrt.runtime.registry import ToolRegistry

    bad, good = Bad("name_changes"), Good()
    registry = ToolRegistry([bad, good])
    bad.armed = True  # now claims to be "Good"
    registry.unregister("Bad")
    assert registry.get("Good") is good and registry.get("Bad") is None
    assert registry.names() == ["Good"]
