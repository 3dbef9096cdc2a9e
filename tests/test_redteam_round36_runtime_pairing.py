"""Round 36 red team, runtime: every tool_use of a message gets exactly one paired tool_result,
whatever a tool raises at any stage (parse, validate, check_permissions, describe,
permission_subject, call, to_model_content). A non-ValidationError from ``parse_input``
(RecursionError, KeyError, TypeError from a validator) ended the whole turn: every call of the
message lost its result. Real Runtime, real local sandbox, a hostile tool registered here."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import shellrt
from shellrt.permissions import callback_approver
from shellrt.protocol import ToolContext, ToolUseBlock
from shellrt.protocol.permission import PermissionResult, PermissionSubject
from shellrt.protocol.tool import Tool, ToolOutput, ValidationResult
from shellrt.tools.bash import Bash
from tests._governance import envelope_text, isolated_workspace

pytestmark = pytest.mark.anyio

_ids = itertools.count()


class _In(BaseModel):
    stage: str


def _boom(stage: str, wanted: str, exc: BaseException) -> None:
    if stage == wanted:
        raise exc


class _Odd(BaseException):
    """Not an Exception: a tool's own BaseException subclass."""


def _recurse(n: int) -> int:
    return _recurse(n + 1) + 1


class Hostile(Tool[_In, str]):
    """Raises at the stage its input names (each a different non-pydantic exception)."""

    name = "Hostile"
    input_model = _In
    interrupt_behavior = "cancel"

    def prompt(self) -> str:
        return "raises at a stage"

    def parse_input(self, raw: Any) -> _In:
        stage = raw.get("stage") if isinstance(raw, dict) else None
        if stage == "parse_recursion":
            _recurse(0)
        _boom(stage or "", "parse", KeyError("no such key"))
        _boom(stage or "", "parse_type", TypeError("validator broke"))
        _boom(stage or "", "parse_base", _Odd("not an Exception"))
        return super().parse_input(raw)

    async def validate(self, tool_input: _In, ctx: ToolContext) -> ValidationResult:
        _boom(tool_input.stage, "validate", TypeError("validate broke"))
        return ValidationResult.success()

    async def check_permissions(self, tool_input: _In, ctx: ToolContext) -> PermissionResult:
        _boom(tool_input.stage, "check_permissions", ValueError("check broke"))
        if tool_input.stage == "describe":
            return PermissionResult.ask("asks, so describe runs")
        return PermissionResult.passthrough()

    def describe(self, tool_input: _In) -> str:
        _boom(tool_input.stage, "describe", AttributeError("describe broke"))
        return "Hostile"

    def permission_subject(self, tool_input: _In) -> PermissionSubject:
        _boom(tool_input.stage, "permission_subject", IndexError("subject broke"))
        return PermissionSubject()

    async def call(self, tool_input: _In, ctx: ToolContext) -> ToolOutput[str]:
        _boom(tool_input.stage, "call", RuntimeError("call broke"))
        return ToolOutput(tool_input.stage)

    def to_model_content(self, output: str) -> str:
        _boom(output, "to_model_content", ZeroDivisionError("content broke"))
        if output == "bad_content":
            return 12345  # type: ignore[return-value]
        return "fine"

    def render_result(self, output: str) -> str:
        _boom(output, "render_result", OverflowError("render broke"))
        return output

    def audit_text(self, output: str) -> str:
        _boom(output, "audit_text", UnicodeError("audit broke"))
        return output


STAGES = [
    "parse",
    "parse_type",
    "parse_recursion",
    "validate",
    "check_permissions",
    "describe",
    "permission_subject",
    "call",
    "to_model_content",
    "bad_content",
    "render_result",
    "audit_text",
    "parse_base",
]


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_workspace(tmp_path, monkeypatch)


def _runtime(ws: Path, asked: list[Any] | None = None) -> shellrt.Runtime:
    def approve(request: Any) -> bool:
        if asked is not None:
            asked.append(request)
        return True

    return shellrt.Runtime(
        ws,
        "local",
        session_dir=ws.parent / f"s{next(_ids)}",
        tools=[Bash(), Hostile()],
        mode="default",
        allow=["Bash(echo:*)"],
        approver=callback_approver(approve),
    )


@pytest.mark.parametrize("stage", STAGES)
async def test_every_call_of_the_message_keeps_its_result(ws: Path, stage: str) -> None:
    blocks = [
        ToolUseBlock(id=f"r36a{next(_ids)}", name="Bash", input={"command": "echo before"}),
        ToolUseBlock(id=f"r36h{next(_ids)}", name="Hostile", input={"stage": stage}),
        ToolUseBlock(id=f"r36b{next(_ids)}", name="Bash", input={"command": "echo after"}),
    ]
    asked: list[Any] = []
    async with _runtime(ws, asked) as rt:
        envelopes = await rt.run_envelopes(blocks)
        message = await rt.run(
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": f"r36m{next(_ids)}", "name": "Hostile", "input": {"stage": stage}}
            ]}
        )
    assert [e.tool_use_id for e in envelopes] == [b.id for b in blocks]
    before, hostile, after = envelopes
    assert not before.is_error and "before" in envelope_text(before)
    assert not after.is_error and "after" in envelope_text(after)
    [only] = message["content"]
    assert only["type"] == "tool_result" and only["tool_use_id"].startswith("r36m"), only
    if stage == "describe":  # the gate asks with the tool's name for its line, and the whole input
        _asked_plainly(asked)
        return
    assert hostile.is_error, envelope_text(hostile)
    assert "Hostile" in envelope_text(hostile)
    assert only["is_error"] is True, only


def _asked_plainly(asked: list[Any]) -> None:
    assert asked, "describe raised: the person must still be asked"
    for request in asked:
        assert request.description == "Hostile" and request.tool_input == {"stage": "describe"}, request


@pytest.mark.parametrize("stage", STAGES)
async def test_a_lone_call_gets_its_result(ws: Path, stage: str) -> None:
    block = ToolUseBlock(id=f"r36l{next(_ids)}", name="Hostile", input={"stage": stage})
    asked: list[Any] = []
    async with _runtime(ws, asked) as rt:
        [envelope] = await rt.run_envelopes([block])
    assert envelope.tool_use_id == block.id, envelope_text(envelope)
    if stage == "describe":
        _asked_plainly(asked)
    else:
        assert envelope.is_error and "Hostile" in envelope_text(envelope), envelope_text(envelope)


async def test_a_healthy_call_of_the_same_tool_still_runs(ws: Path) -> None:
    block = ToolUseBlock(id=f"r36ok{next(_ids)}", name="Hostile", input={"stage": "none"})
    async with _runtime(ws) as rt:
        [envelope] = await rt.run_envelopes([block])
    assert not envelope.is_error and envelope_text(envelope) == "fine", envelope_text(envelope)


async def test_an_executor_that_raises_loses_only_its_own_result(ws: Path) -> None:
    """The scheduler's own net: an executor (a subclass's step: the session's recording one)
    that raises for one call answers that call with an error; its siblings keep theirs."""
    blocks = [
        ToolUseBlock(id=f"r36x{next(_ids)}", name="Bash", input={"command": "echo one"}),
        ToolUseBlock(id=f"r36y{next(_ids)}", name="Bash", input={"command": "echo two"}),
    ]
    async with _runtime(ws) as rt:
        executor = rt._executor
        assert executor is not None
        real = executor.execute

        async def flaky(block: ToolUseBlock, ctx: ToolContext, **kw: Any) -> Any:
            if block.input.get("command") == "echo one":
                raise LookupError("executor broke")
            return await real(block, ctx, **kw)

        executor.execute = flaky  # type: ignore[method-assign]
        envelopes = await rt.run_envelopes(blocks)
        [lone] = await rt.run_envelopes([blocks[0].model_copy(update={"id": f"r36z{next(_ids)}"})])
    assert [e.tool_use_id for e in envelopes] == [b.id for b in blocks]
    assert envelopes[0].is_error and "executor broke" in envelope_text(envelopes[0])
    assert not envelopes[1].is_error and "two" in envelope_text(envelopes[1])
    assert lone.is_error, envelope_text(lone)
