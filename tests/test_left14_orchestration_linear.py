"""Left-overs, round 14: `StreamingExecution` is linear in the number of calls of one message.

`_run` copied every earlier entry (``self._entries[: entry.index]``) and walked it for each call:
a safe call checked each earlier entry's batch, an unsafe call awaited each earlier entry's
``applied`` in turn (a wake-up or a checkpoint per earlier entry). n calls: O(n^2) steps. A call
now waits on one event only (``applied`` is set strictly in tool_use order, so the last entry
before its batch, or before itself, stands for all of them).

The test counts executed lines of ``orchestration.py`` (``sys.settrace``), not time: 4x the
calls must cost about 4x the lines; quadratic work costs 16x. Numbers: docs/performance.md,
"StreamingExecution: linear in the message".
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from shellrt.permissions import BasicGate, NoHooks
from shellrt.protocol import ToolContext, ToolUseBlock
from shellrt.runtime import CallExecutor, ToolRegistry, orchestration, run_blocks
from tests._runtime_tools import ShellLike, UnsafeSleep

pytestmark = pytest.mark.anyio

_FILE = orchestration.__file__


async def _lines(tmp_path: Path, name: str, count: int) -> int:
    """Lines of orchestration.py run for one message of ``count`` calls of ``name``."""
    registry = ToolRegistry([ShellLike(), UnsafeSleep()])
    ctx = ToolContext(session_id="s", session_dir=tmp_path, workspace=tmp_path, cwd="/")
    executor = CallExecutor(registry, BasicGate(), NoHooks())
    blocks = [ToolUseBlock(id=f"c{i}", name=name, input={"seconds": 0}) for i in range(count)]
    lines = [0]

    def local(frame: FrameType, event: str, arg: object) -> Any:
        if event == "line":
            lines[0] += 1
        return local

    def tracer(frame: FrameType, event: str, arg: object) -> Any:
        return local if frame.f_code.co_filename == _FILE else None

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        results = await run_blocks(executor, ctx, blocks)
    finally:
        sys.settrace(previous)
    assert len(results) == count and not [r for r in results if r.is_error]
    return lines[0]


@pytest.mark.parametrize("name", ["UnsafeSleep", "ShellLike"])
async def test_a_message_costs_lines_linear_in_its_calls(tmp_path: Path, name: str) -> None:
    """Unsafe calls (each alone, in order) and safe ones (one batch): 600 calls cost < 6x
    the lines of 150 (linear: ~4x; the old per-call walk: ~12-16x)."""
    small = await _lines(tmp_path, name, 150)
    large = await _lines(tmp_path, name, 600)
    assert large < 6 * small, f"{name}: 150 calls ran {small} lines, 600 ran {large} ({large / small:.1f}x)"
