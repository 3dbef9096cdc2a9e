"""Round 28, protocol: TaskOutput's ``filter`` attacked by a hostile model.

The filter is matched in a child process (round 12: backtracking), but `TaskOutput.validate` compiles
it in the event loop to refuse a bad one, and its length was unbounded: an alternation of 3 MB took
9 s to compile there (0.6 s for 270 KB), and a JSONL line may carry 32 MB. It is now at most 4,096
characters, refused before anything compiles.
"""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest
from pydantic import ValidationError

from shellrt.protocol import ToolContext
from shellrt.tools.task_output import TaskOutput


def test_a_huge_filter_is_refused_before_it_compiles(tmp_path: Path) -> None:
    tool = TaskOutput()
    huge = "|".join(f"w{i}" for i in range(40_000))  # 269 KB
    with pytest.raises(ValidationError, match="at most 4096 characters"):
        tool.parse_input({"task_id": "t1", "filter": huge})
    # At the bound, the costliest kind found (a long alternation) compiles quickly.
    ctx = ToolContext(session_id="s", session_dir=tmp_path, workspace=tmp_path, cwd=str(tmp_path))
    bound = "|".join(f"w{i}" for i in range(830))  # 4,039 characters
    assert 4_000 < len(bound) <= 4_096
    parsed = tool.parse_input({"task_id": "t1", "filter": bound})
    start = time.thread_time()
    checked = anyio.run(tool.validate, parsed, ctx)
    assert checked.ok and time.thread_time() - start < 0.2
    bad = anyio.run(tool.validate, tool.parse_input({"task_id": "t1", "filter": "(a"}), ctx)
    assert not bad.ok and "not a valid regular expression" in bad.message
