"""Left-overs, round 15: every tool result and every prompt is sendable, whatever tool made it.

A result holding a lone surrogate (a name from the disk decoded with ``surrogateescape``, or a
``\\udcff`` escape in JSON an MCP server or a client sent) is text no UTF-8 encoder takes: the
MCP SDK refuses to serialise it (the call ran, its result is lost) and the JSONL server fell back
to ``\\u`` escapes of lone surrogates, which strict JSON readers (serde_json) refuse. Round 14
made five file tools sendable one by one (`shellrt.tools._sendable.SendableText`); here an
external tool's result, refusal and permission prompt, and Bash's, go through the JSONL and MCP
servers' own encoders and must come out as strict UTF-8 JSON without surrogates. In process,
local backend: no sandbox matters here.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import BaseModel

import shellrt
from shellrt.permissions.interfaces import ApprovalRequest, ApprovalResponse
from shellrt.protocol import (
    PermissionResult,
    TextBlock,
    Tool,
    ToolContext,
    ToolExecutionError,
    ToolOutput,
    ToolUseBlock,
    ValidationResult,
)
from shellrt.server.jsonl import encode_answer, handle_line
from shellrt.server.mcp import to_call_tool_result

pytestmark = pytest.mark.anyio

#: A byte that is not UTF-8 as ``surrogateescape`` decodes it, and a lone high surrogate (JSON ``\\ud800``).
BAD = "name\udcff-and\ud800-end"


class LoneInput(BaseModel):
    mode: str


class LoneTool(Tool[LoneInput, str]):
    """An external tool (as an MCP server's or a plugin's) whose every text holds lone surrogates."""

    name = "Lone"
    input_model = LoneInput
    touches_environment = False

    def prompt(self) -> str:
        return "Returns hostile text."

    def is_read_only(self, tool_input: LoneInput) -> bool:
        return tool_input.mode != "ask"

    async def validate(self, tool_input: LoneInput, ctx: ToolContext) -> ValidationResult:
        if tool_input.mode == "invalid":
            return ValidationResult(False, f"no such file: {BAD}")
        return ValidationResult(True)

    async def check_permissions(self, tool_input: LoneInput, ctx: ToolContext) -> PermissionResult:
        if tool_input.mode == "ask":
            return PermissionResult(behavior="ask", reason=f"writes {BAD}")
        return PermissionResult(behavior="allow")

    def describe(self, tool_input: LoneInput) -> str:
        return f"Lone {tool_input.mode} {BAD}"

    async def call(self, tool_input: LoneInput, ctx: ToolContext) -> ToolOutput[str]:
        if tool_input.mode == "raise":
            raise ToolExecutionError(f"cannot open {BAD}")
        return ToolOutput(BAD)

    def to_model_content(self, output: str) -> Any:
        if output == BAD:
            return [TextBlock(text=f"block {output}"), TextBlock(text="plain")]
        return output

    def render_result(self, output: str) -> str:
        return f"ui {output}"


PROMPTS: list[ApprovalRequest] = []
#: One id per call: the session is shared by the cases and an id names one call (round 19).
_IDS = itertools.count()


async def approver(request: ApprovalRequest) -> ApprovalResponse:
    PROMPTS.append(request)
    # What a prompting client does with it: serialise it (the MCP elicitation, a JSONL line).
    request.model_dump_json().encode("utf-8")
    return ApprovalResponse(behavior="allow")


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def rt(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[shellrt.Runtime]:
    ws = tmp_path_factory.mktemp("ws")
    (ws / "bad.sh").write_bytes(b"mkdir -p 'd\xff' && cd 'd\xff' && printf 'out \\377 \\300\\n'; echo x > f\n")
    from shellrt.runtime.session import _builtin_tools

    tools = [*_builtin_tools(), LoneTool()]
    async with shellrt.Runtime(
        ws,
        "local",
        session_dir=tmp_path_factory.mktemp("session") / "s",
        mode="default",
        allow=["Bash"],
        approver=approver,
        tools=tools,
    ) as runtime:
        yield runtime


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _strict(raw: bytes) -> Any:
    """What a strict client reads: UTF-8, JSON, no lone surrogate in any string (escaped or not)."""
    text = raw.decode("utf-8")
    value = json.loads(text)
    for s in _strings(value):
        s.encode("utf-8")
    return value


def _line(block_id: str, name: str, tool_input: dict[str, Any]) -> str:
    block = {"type": "tool_use", "id": block_id, "name": name, "input": tool_input}
    return json.dumps(block)


@pytest.mark.parametrize(
    ("name", "tool_input", "expect"),
    [
        ("Lone", {"mode": "text"}, "block name\\xff-and\ufffd-end"),
        ("Lone", {"mode": "raise"}, "cannot open name\\xff"),
        ("Lone", {"mode": "invalid"}, "no such file: name\\xff"),
        ("Lone", {"mode": "ask"}, "block name"),
        ("Bash", {"command": "sh bad.sh && cat $'d\\xff/f'"}, "out \ufffd"),
        ("Bash", {"command": "echo a\ud800b\udcffc"}, ""),  # a client's JSON escapes, in the input
    ],
)
async def test_jsonl_and_mcp_get_strict_utf8(
    rt: shellrt.Runtime, name: str, tool_input: dict[str, Any], expect: str
) -> None:
    answer = await handle_line(rt, _line(f"lone-{name}-{next(_IDS)}", name, tool_input), 1)
    assert answer is not None
    value = _strict(encode_answer(answer, 1))
    text = "\n".join(_strings(value))
    assert expect in text, text
    # The MCP face of the same call, as `shellrt serve` sends it.
    envelopes = await rt.run_envelopes(
        [ToolUseBlock(id=f"mcp-{name}-{next(_IDS)}", name=name, input=tool_input)]
    )
    result = to_call_tool_result(envelopes[0])
    _strict(result.model_dump_json(by_alias=True).encode("utf-8"))
    for envelope in envelopes:
        for face in (envelope.ui, envelope.audit):
            face.encode("utf-8")


async def test_the_prompt_is_sendable(rt: shellrt.Runtime) -> None:
    before = len(PROMPTS)
    await handle_line(rt, _line("lone-prompt", "Lone", {"mode": "ask"}), 1)
    assert len(PROMPTS) > before
    request = PROMPTS[-1]
    assert "name\\xff" in request.reason and "name\\xff" in request.description, request
    _strict(request.model_dump_json().encode("utf-8"))
