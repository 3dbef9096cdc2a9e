"""Red team, round 37 (hooks): a matcher regex with many repeats stalled every call on a long MCP name.

Round 28 refused matchers that nest repeats (exponential backtracking); round 33 skips regexes on
names over 256 characters. A matcher of plain repeats in a row (``mcp__.*_.*_.*_.*_write``) is
polynomial: Python's backtracking ``re`` took 1.7 s on a 250-character MCP tool name that it does
not match (``.*a.*a.*a.*a.*X``: 16 s), on the event loop, at every call, and a server names its
tools. Now a matcher with more than three repeats is refused at load with what to write, and a
guard refused so degrades the session (as round 28's).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.permissions.hook_matchers import matcher_problem
from shellrt.permissions.hooks import matcher_matches
from tests._timing import cpu_seconds
from tests.test_redteam_round28_hooks_matchers import _gov, _hook

_SLOW = ["mcp__.*_.*_.*_.*_write", ".*a.*a.*a.*a.*X", r"\w+_\w+_\w+_\w+", "mcp__.+__.+_.+_.+"]


@pytest.mark.parametrize("matcher", _SLOW)
def test_a_matcher_with_many_repeats_is_refused(matcher: str) -> None:
    """Failed before: 4 of 4 were accepted (no diagnostic)."""
    problem = matcher_problem(matcher)
    assert problem is not None and "more than 3 repeats" in problem and "mcp__github__.*" in problem


def test_a_refused_guard_degrades_the_session(tmp_path: Path) -> None:
    gov = _gov(tmp_path, "slow", {"PreToolUse": _hook(_SLOW[0])}, {"allow": ["Bash(ls:*)"]})
    assert any("more than 3 repeats" in d for d in gov.diagnostics), gov.diagnostics
    assert gov.settings.degraded and gov.engine.degraded


@pytest.mark.parametrize("matcher", ["mcp__.*__.*", "mcp__.*_(read|write)_.*", r"mcp__.*__.*_.*", "Notebook.*", "(ab){2}"])
def test_kept_matchers_cost_little_on_the_longest_name(matcher: str) -> None:
    assert matcher_problem(matcher) is None
    name = "mcp__" + "_" * 251  # 256 characters: the longest a regex matcher is run on
    start = cpu_seconds()  # CPU, not wall: a loaded lane's wait for a core is not the matcher's cost
    matcher_matches(matcher, name)
    assert cpu_seconds() - start < 0.5  # ~0.1 ms of CPU idle (round 49)
