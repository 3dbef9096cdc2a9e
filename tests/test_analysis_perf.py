"""Regression tests added with the analysis speed-ups (verdicts must not change)."""

from __future__ import annotations

import pytest

from shellrt.analysis import analyze
from shellrt.analysis.analyze import _analyze_uncached


@pytest.mark.parametrize("command", ["case x in x) ls &;; esac", "case x in x) ls & ls;; esac"])
def test_background_job_inside_case_item_is_not_read_only(command: str) -> None:
    result = analyze(command)
    assert not result.read_only
    assert "runs a background job (&) that outlives the command" in result.reasons


@pytest.mark.parametrize(
    "command",
    ["echo héllo wörld > é", "grep -r '日本' . | head", "cat 'fïle' && rm -rf 日本", "[[ ü == ü ]] && echo ü",
     "git log --format='%an ü' -n 3", "cat <<EOF\nü $(id)\nEOF", "x=ü; echo $x", "echo \udc80 ls"],
)
def test_non_ascii_source_text_matches_byte_offsets(command: str) -> None:
    """The planner slices one decoded string for ASCII input and decodes byte slices otherwise."""
    result = _analyze_uncached(command, "bash")
    if result.plan is None:
        return
    for sub in result.subcommands:
        assert "\ufffd" not in sub.text
    for cmd in result.plan.commands:
        for word in cmd.argv:
            assert word.raw in command or "\udc80" in command
