"""The Tool protocol: conservative defaults, definition-time checks, tools[] generation."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict, Field

from shellrt.protocol import (
    PermissionResult,
    Tool,
    ToolContext,
    ToolDefinitionError,
    ToolOutput,
    to_anthropic,
    to_openai,
)
from shellrt.protocol.errors import ServiceNotAvailableError
from tests._runtime_tools import Echo


class In(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(description="Where")


def test_environment_tool_without_permission_check_is_rejected_at_definition() -> None:
    with pytest.raises(ToolDefinitionError, match="defines no check_permissions"):

        class Sneaky(Tool[In, str]):  # noqa: F841 - defining the class is the test
            name = "Sneaky"
            input_model = In

            def prompt(self) -> str:
                return "x"

            async def call(self, tool_input: In, ctx: ToolContext) -> ToolOutput[str]:
                return ToolOutput("x")

            def to_model_content(self, output: str) -> str:
                return output


def test_tool_without_input_model_is_rejected() -> None:
    with pytest.raises(ToolDefinitionError, match="input_model"):

        class NoModel(Tool[In, str]):  # noqa: F841
            name = "NoModel"
            touches_environment = False

            def prompt(self) -> str:
                return "x"

            async def call(self, tool_input: In, ctx: ToolContext) -> ToolOutput[str]:
                return ToolOutput("x")

            def to_model_content(self, output: str) -> str:
                return output


class Plain(Tool[In, str]):
    name = "Plain"
    input_model = In

    def prompt(self) -> str:
        return "Does plain things."

    async def check_permissions(self, tool_input: In, ctx: ToolContext) -> PermissionResult:
        return PermissionResult.ask("plain asks")

    async def call(self, tool_input: In, ctx: ToolContext) -> ToolOutput[str]:
        return ToolOutput(tool_input.path)

    def to_model_content(self, output: str) -> str:
        return output


def test_defaults_are_conservative() -> None:
    tool = Plain()
    tool_input = In(path="x")
    assert not tool.is_read_only(tool_input)
    assert not tool.is_concurrency_safe(tool_input)
    assert not tool.is_destructive(tool_input)
    assert not tool.is_open_world(tool_input)
    assert tool.interrupt_behavior == "block"
    assert tool.max_result_chars == 30_000
    assert not tool.defer_loading and not tool.always_load


def test_backfill_returns_a_copy() -> None:
    tool = Echo()
    original = tool.input_model.model_validate({"text": "hi"})
    observed = tool.backfill(original)  # type: ignore[arg-type]
    assert observed is not original and observed.derived == "HI" and original.derived is None  # type: ignore[attr-defined]


class _Nested(BaseModel):
    model_config = ConfigDict(extra="forbid")
    paths: list[str] = Field(default_factory=list)
    name: str = ""


def test_default_backfill_never_shares_a_mutable_value_with_the_input() -> None:
    tool = Plain()
    original = _Nested(paths=["a"], name="x")
    copied: _Nested = Tool.backfill(tool, original)  # type: ignore[arg-type,misc]  # any model, not Plain's
    copied.paths.append("b")  # a hook or the gate changing its copy
    assert original.paths == ["a"]
    scalars = In(path="p")
    observed = tool.backfill(scalars)
    assert observed is not scalars and observed == scalars


def test_tools_definitions_from_one_source() -> None:
    tool = Plain()
    anthropic = to_anthropic(tool)
    openai = to_openai(tool)
    assert anthropic["name"] == "Plain" and anthropic["description"] == "Does plain things."
    schema = anthropic["input_schema"]
    assert schema["type"] == "object" and schema["required"] == ["path"]
    assert schema["properties"]["path"]["description"] == "Where"
    assert schema.get("additionalProperties") is False
    assert openai == {
        "type": "function",
        "function": {"name": "Plain", "description": "Does plain things.", "parameters": schema},
    }


def test_context_services_and_fork(tmp_path: Path) -> None:
    ctx = ToolContext(session_id="s", session_dir=tmp_path, workspace=tmp_path, cwd="/w")
    with pytest.raises(ServiceNotAvailableError, match="no Plain"):
        ctx.service(Plain)
    plain = Plain()
    ctx.services[Plain] = plain
    assert ctx.service(Plain) is plain and ctx.service(Tool) is plain
    fork = ctx.for_call("t9")
    assert fork.tool_use_id == "t9" and fork.read_state is ctx.read_state and ctx.tool_use_id == ""
