"""Scheduling: parallel safe batches, serial unsafe calls, ordered context, sibling cancellation, streaming."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from shellrt.permissions import BasicGate, NoHooks
from shellrt.protocol import ToolContext, ToolUseBlock
from shellrt.runtime import CallExecutor, StreamingExecution, ToolRegistry, run_blocks
from tests._runtime_tools import Echo, SafeCd, SafeSleep, ShellLike, UnsafeSleep

pytestmark = pytest.mark.anyio


def make(tmp_path: Path) -> tuple[CallExecutor, ToolContext]:
    registry = ToolRegistry([SafeSleep(), UnsafeSleep(), ShellLike(), SafeCd(), Echo()])
    ctx = ToolContext(session_id="s", session_dir=tmp_path, workspace=tmp_path, cwd="/start")
    return CallExecutor(registry, BasicGate(), NoHooks()), ctx


def spans(results: list, executor: CallExecutor) -> list[tuple[float, float]]:
    return [(float(r.ui.split()[0]), float(r.ui.split()[1])) for r in results]


async def test_eight_safe_calls_overlap(tmp_path: Path) -> None:
    executor, ctx = make(tmp_path)
    seen = _record_spans(executor, "SafeSleep")
    blocks = [
        ToolUseBlock(id=f"s{i}", name="SafeSleep", input={"seconds": 1.0, "label": str(i)}) for i in range(8)
    ]
    results = await run_blocks(executor, ctx, blocks)
    assert [r.model.tool_use_id for r in results] == [f"s{i}" for i in range(8)]
    # All eight were sleeping at one moment: the last started before the first ended (in turn: each
    # starts after the one before ended). Not a wall-clock total, which a loaded machine stretches.
    assert len(seen) == 8 and max(s for s, _ in seen) < min(e for _, e in seen), seen


def _record_spans(executor: CallExecutor, name: str) -> list[tuple[float, float]]:
    """Each call of tool ``name`` appends its (start, end), as the tool measured them."""
    seen: list[tuple[float, float]] = []
    registry_tool = executor.registry.get(name)
    assert registry_tool is not None
    original = registry_tool.call

    async def recording(tool_input, ctx):  # type: ignore[no-untyped-def]
        out = await original(tool_input, ctx)
        seen.append((out.data.start, out.data.end))
        return out

    registry_tool.call = recording  # type: ignore[method-assign]
    return seen


async def test_eight_unsafe_calls_never_overlap(tmp_path: Path) -> None:
    executor, ctx = make(tmp_path)
    seen: list[tuple[float, float]] = []
    registry_tool = executor.registry.get("UnsafeSleep")
    assert registry_tool is not None
    original = registry_tool.call

    async def recording(tool_input, ctx):  # type: ignore[no-untyped-def]
        out = await original(tool_input, ctx)
        seen.append((out.data.start, out.data.end))
        return out

    registry_tool.call = recording  # type: ignore[method-assign]
    blocks = [ToolUseBlock(id=f"u{i}", name="UnsafeSleep", input={"seconds": 0.05}) for i in range(8)]
    results = await run_blocks(executor, ctx, blocks)
    assert [r.model.tool_use_id for r in results] == [f"u{i}" for i in range(8)]
    assert len(seen) == 8
    ordered = sorted(seen)
    for (_, end), (next_start, _) in zip(ordered, ordered[1:], strict=False):
        assert next_start >= end, "two unsafe calls overlapped"
    assert seen == ordered  # and they ran in tool_use order


async def test_unparseable_input_is_unsafe_barrier(tmp_path: Path) -> None:
    executor, ctx = make(tmp_path)
    blocks = [
        ToolUseBlock(id="a", name="SafeSleep", input={"seconds": 0.3}),
        ToolUseBlock(id="bad", name="SafeSleep", input={"seconds": "soon"}),
        ToolUseBlock(id="b", name="SafeSleep", input={"seconds": 0.3}),
    ]
    start = time.monotonic()
    results = await run_blocks(executor, ctx, blocks)
    assert time.monotonic() - start >= 0.55  # the bad block split the two sleeps into separate batches
    assert results[1].is_error and "Invalid input" in results[1].model.text()


async def test_context_changes_applied_after_batch_in_order(tmp_path: Path) -> None:
    executor, ctx = make(tmp_path)
    blocks = [
        ToolUseBlock(id="c1", name="SafeCd", input={"path": "/one", "delay": 0.2}),
        ToolUseBlock(id="c2", name="SafeCd", input={"path": "/two", "delay": 0.0}),
        ToolUseBlock(id="c3", name="SafeCd", input={"path": "/three", "delay": 0.1}),
        ToolUseBlock(id="u", name="UnsafeSleep", input={"seconds": 0}),
        ToolUseBlock(id="c4", name="SafeCd", input={"path": "/four"}),
    ]
    results = await run_blocks(executor, ctx, blocks)
    # Every call in the first batch saw the cwd from before the batch; the next batch sees the last change.
    assert [r.model.text() for r in results[:3]] == ["saw /start"] * 3
    assert results[4].model.text() == "saw /three"
    assert ctx.tool_state["cd-order"] == ["/one", "/two", "/three", "/four"]
    assert ctx.cwd == "/four"


async def test_shell_failure_cancels_running_siblings(tmp_path: Path) -> None:
    executor, ctx = make(tmp_path)
    blocks = [
        ToolUseBlock(id="long", name="ShellLike", input={"seconds": 10}),
        ToolUseBlock(id="fail", name="ShellLike", input={"seconds": 0.1, "fail": True}),
        ToolUseBlock(id="other", name="SafeSleep", input={"seconds": 10}),
    ]
    start = time.monotonic()
    results = await run_blocks(executor, ctx, blocks)
    assert time.monotonic() - start < 8  # not cancelled: 10 s (cancelled: ~0.1 s idle, so 80x)
    assert [r.model.tool_use_id for r in results] == ["long", "fail", "other"]
    assert results[1].is_error
    for cancelled in (results[0], results[2]):
        assert (
            cancelled.is_error
            and "sibling" in cancelled.model.text()
            and "ShellLike fail" in cancelled.model.text()
        )


async def test_other_tool_failure_does_not_cancel_siblings(tmp_path: Path) -> None:
    executor, ctx = make(tmp_path)
    blocks = [
        ToolUseBlock(id="ok", name="SafeSleep", input={"seconds": 0.3}),
        ToolUseBlock(id="fail", name="SafeSleep", input={"seconds": 0.05, "fail": True}),
    ]
    results = await run_blocks(executor, ctx, blocks)
    assert not results[0].is_error and results[0].model.text() == "slept "
    assert results[1].is_error


async def test_streaming_starts_safe_calls_early_and_keeps_order(tmp_path: Path) -> None:
    executor, ctx = make(tmp_path)
    received: list[str] = []
    seen = _record_spans(executor, "SafeSleep")
    async with StreamingExecution(executor, ctx) as stream:
        stream.add(ToolUseBlock(id="slow", name="SafeSleep", input={"seconds": 3.0}))
        await anyio.sleep(1.5)  # the model is still streaming; the first call already runs
        closed = time.monotonic()
        stream.add(ToolUseBlock(id="fast", name="SafeSleep", input={"seconds": 0.0}))
        stream.add(ToolUseBlock(id="after", name="UnsafeSleep", input={"seconds": 0.0}))
        stream.close()
        async for envelope in stream.results():
            received.append(envelope.model.tool_use_id)
    assert received == ["slow", "fast", "after"]
    # Started early: the slow call's sleep began before the message was complete (an order of two
    # readings of one clock, not a wall-clock bound a loaded machine stretches).
    slow_start = min(s for s, _ in seen)
    assert slow_start < closed, "the first call did not start before the message was complete"


async def test_interrupt_cancels_cancel_type_tools(tmp_path: Path) -> None:
    executor, ctx = make(tmp_path)
    async with anyio.create_task_group() as tg:

        async def interrupt() -> None:
            await anyio.sleep(0.2)
            ctx.abort.set()

        tg.start_soon(interrupt)
        results = await run_blocks(
            executor,
            ctx,
            [
                ToolUseBlock(id="a", name="SafeSleep", input={"seconds": 5}),
                ToolUseBlock(id="b", name="UnsafeSleep", input={"seconds": 5}),
            ],
        )
    assert [r.model.tool_use_id for r in results] == ["a", "b"]
    assert "Interrupted by the user" in results[0].model.text()
    assert "before this call started" in results[1].model.text()
