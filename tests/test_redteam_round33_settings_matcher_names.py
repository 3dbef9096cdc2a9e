"""Red team round 33 (settings): an MCP server's very long tool name against a regex hook matcher.

Round 28 refused matchers that nest repeats and left polynomial ones: ``mcp__.*__.*_write`` (two
``.*``, a shape hook docs show) costs the square of the name's length in Python's backtracking
``re``, on the event loop, every call. An MCP server chooses its tools' names and nothing bounded
them: a name of ``x__`` repeated made matching 0.5 s at 10,000 characters (minutes at 300,000).
Now a name longer than any model API takes matches every regex matcher without running it: the
guard hook runs and judges the call, the safe side.
"""

from __future__ import annotations

from pathlib import Path

from shellrt.permissions.hooks import CommandHookRunner
from shellrt.permissions.rules import RuleOrigin
from shellrt.permissions.settings import HookSpec
from tests._timing import cpu_seconds


def test_a_long_tool_name_does_not_stall_matching_and_meets_the_guard(tmp_path: Path) -> None:
    origin = RuleOrigin("user", tmp_path / "settings.json", 1, tmp_path)
    guard = HookSpec("PreToolUse", "mcp__.*__.*_write", "/bin/true", None, origin)
    runner = CommandHookRunner([guard], workspace=tmp_path)
    assert runner.specs == [guard], runner.diagnostics  # a shape round 28 keeps
    name = "mcp__srv__" + "x__" * 15_000  # 45,000 characters: ~10 s before, at no load
    started = cpu_seconds()  # CPU, not wall: a loaded lane's wait for a core is not the matcher's cost
    matched = runner.matching("PreToolUse", name)
    elapsed = cpu_seconds() - started
    assert elapsed < 1.0, f"matching one call took {elapsed:.1f} s of CPU"  # ~0.1 ms (round 49)
    assert matched == [guard]  # the guard judges it
    assert runner.matching("PreToolUse", "mcp__srv__read") == []  # short names: matched as before
    assert runner.matching("PreToolUse", "mcp__srv__file_write") == [guard]
