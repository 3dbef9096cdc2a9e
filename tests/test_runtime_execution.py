"""Single-call lifecycle: every failure path yields exactly one paired error result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from shellrt.permissions import ApprovalRequest, ApprovalResponse, BasicGate, NoHooks
from shellrt.protocol import ToolContext, ToolUseBlock
from shellrt.runtime import CallExecutor, ToolRegistry, run_blocks
from tests._runtime_tools import AskingTool, Echo, RecordingHooks, SafeSleep

pytestmark = pytest.mark.anyio


def make(tmp_path: Path, *, hooks: Any = None, approver: Any = None) -> tuple[CallExecutor, ToolContext]:
    registry = ToolRegistry([Echo(), AskingTool(), SafeSleep()])
    ctx = ToolContext(session_id="s", session_dir=tmp_path / "session", workspace=tmp_path, cwd=str(tmp_path))
    return CallExecutor(registry, BasicGate(approver), hooks or NoHooks()), ctx


async def one(executor: CallExecutor, ctx: ToolContext, name: str, tool_input: Any, id_: str = "t1") -> Any:
    results = await run_blocks(executor, ctx, [ToolUseBlock(id=id_, name=name, input=tool_input)])
    assert len(results) == 1
    assert results[0].model.tool_use_id == id_
    return results[0]


async def test_unknown_tool_names_the_available_ones(tmp_path: Path) -> None:
    executor, ctx = make(tmp_path)
    result = await one(executor, ctx, "Ecko", {})
    assert result.is_error
    text = result.model.text()
    assert (
        "Unknown tool 'Ecko'" in text and "Did you mean 'Echo'?" in text and "Available tools: Echo" in text
    )


async def test_schema_error_says_what_to_fix(tmp_path: Path) -> None:
    executor, ctx = make(tmp_path)
    result = await one(executor, ctx, "Echo", {"text": "x", "timeout": 900000})
    assert result.is_error
    assert "`timeout` must be <= 600000" in result.model.text()
    missing = await one(executor, ctx, "SafeSleep", {})
    assert "`seconds` is required" in missing.model.text()
    extra = await one(executor, ctx, "Echo", {"txt": "x"})
    assert "`txt` is not a parameter of Echo" in extra.model.text()
    not_object = await one(executor, ctx, "Echo", ["x"])
    assert "expected a JSON object" in not_object.model.text()


async def test_semantic_validation_failure(tmp_path: Path) -> None:
    executor, ctx = make(tmp_path)
    result = await one(executor, ctx, "Echo", {"text": "invalid"})
    assert result.is_error and "choose other text" in result.model.text()


async def test_permission_denied_by_tool_and_headless_ask(tmp_path: Path) -> None:
    executor, ctx = make(tmp_path)
    denied = await one(executor, ctx, "Echo", {"text": "forbidden"})
    assert denied.is_error and "Echo refuses 'forbidden'" in denied.model.text()
    asked = await one(executor, ctx, "Asker", {"text": "x"})
    assert asked.is_error and "No one is available to approve" in asked.model.text()


async def test_approver_allows_and_denies(tmp_path: Path) -> None:
    answers: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalResponse:
        answers.append(request)
        if request.tool_input.get("text") == "yes":
            return ApprovalResponse(behavior="allow")
        return ApprovalResponse(behavior="deny", message="not today")

    executor, ctx = make(tmp_path, approver=approver)
    ok = await one(executor, ctx, "Asker", {"text": "yes"})
    assert not ok.is_error and ok.model.text() == "done"
    no = await one(executor, ctx, "Asker", {"text": "no"})
    assert no.is_error and "not today" in no.model.text()
    assert [a.reason for a in answers] == ["writes things", "writes things"]


async def test_hook_block_and_rewrite(tmp_path: Path) -> None:
    executor, ctx = make(tmp_path, hooks=RecordingHooks(block="policy says no"))
    blocked = await one(executor, ctx, "Echo", {"text": "hi"})
    assert blocked.is_error and "Blocked by a PreToolUse hook: policy says no" in blocked.model.text()
    executor, ctx = make(tmp_path, hooks=RecordingHooks(rewrite={"text": "rewritten"}))
    rewritten = await one(executor, ctx, "Echo", {"text": "hi"})
    assert not rewritten.is_error and rewritten.model.text() == "rewritten"
    executor, ctx = make(tmp_path, hooks=RecordingHooks(rewrite={"text": 5}))
    bad = await one(executor, ctx, "Echo", {"text": "hi"})
    assert bad.is_error and "rewrote the input badly" in bad.model.text()


async def test_original_input_unchanged_after_backfill_and_hooks(tmp_path: Path) -> None:
    hooks = RecordingHooks()
    executor, ctx = make(tmp_path, hooks=hooks)
    raw = {"text": "hello"}
    block = ToolUseBlock(id="t1", name="Echo", input=raw)
    [result] = await run_blocks(executor, ctx, [block])
    assert raw == {"text": "hello"} and block.input == {"text": "hello"}
    assert result.model.text() == "hello"  # the hook's mutation of its copy did not leak
    assert hooks.seen[0]["derived"] == "HELLO"  # hooks saw the backfilled (observed) input


async def test_exceptions_become_error_results(tmp_path: Path) -> None:
    executor, ctx = make(tmp_path)
    expected = await one(executor, ctx, "Echo", {"text": "raise-expected"})
    assert expected.is_error and expected.model.text() == "expected failure: try another text"
    bug = await one(executor, ctx, "Echo", {"text": "raise-bug"})
    assert bug.is_error and "Echo failed unexpectedly: RuntimeError: boom" in bug.model.text()


async def test_empty_output_placeholder(tmp_path: Path) -> None:
    executor, ctx = make(tmp_path)
    result = await one(executor, ctx, "Echo", {"text": ""})
    assert result.model.text() == "(Echo completed with no output)" and not result.is_error


async def test_large_result_is_persisted_whole(tmp_path: Path) -> None:
    executor, ctx = make(tmp_path)
    result = await one(executor, ctx, "Echo", {"text": "big:5000"}, id_="toolu_big")
    full = "".join(f"line {i}\n" for i in range(5000))
    path = (
        tmp_path / "session" / "tool-results-host" / "toolu_big.txt"
    )  # an API tool: only the file tools see it
    assert result.persisted_path == str(path)
    assert path.read_bytes() == full.encode()
    text = result.model.text()
    assert str(path) in text and f"{len(full):,} characters" in text
    assert "line 0\n" in text and "line 4999\n" in text and "line 2500\n" not in text
    assert result.ui.startswith("line 0")  # the UI face is not the preview


async def test_message_budget_persists_largest(tmp_path: Path) -> None:
    from shellrt.protocol import apply_message_budget

    executor, ctx = make(tmp_path)
    blocks = [
        ToolUseBlock(id="a", name="Echo", input={"text": "x" * 9000}),
        ToolUseBlock(id="b", name="Echo", input={"text": "y" * 6000}),
        ToolUseBlock(id="c", name="Echo", input={"text": "z" * 100}),
    ]
    results = await run_blocks(executor, ctx, blocks)
    fitted = apply_message_budget(results, tmp_path / "session", budget=10_000)
    assert [r.model.tool_use_id for r in fitted] == ["a", "b", "c"]
    assert fitted[0].persisted_path is not None and fitted[2].persisted_path is None
    assert (tmp_path / "session" / "tool-results-host" / "a.txt").read_text() == "x" * 9000
