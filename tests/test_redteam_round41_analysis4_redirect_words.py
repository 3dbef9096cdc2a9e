"""Red team, round 41 (analysis4): words after a redirection, which bash reads as the command's arguments.

bash takes a redirection anywhere in a simple command (``git 2>/dev/null push origin`` is ``git push
origin``); tree-sitter-bash makes every word after it one more target of the redirection. The planner
dropped those words as "a redirect with several targets": ``Bash(git push:*)`` saw ``git`` alone, a
``Read(.env)`` deny saw ``cat`` read nothing, and a command substitution there was never planned, so
``ls 2>/dev/null $(rm -rf x)`` ran past ``Bash(rm:*)`` under an allow rule for ``ls`` in the default mode
(and in ``bypassPermissions``). Now they are the command's words; where the command is not a simple one
(``export >/dev/null PATH=.``, ``{ cat; } <<EOF x``) the command is refused with what to do next.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.analysis import analyze
from shellrt.tools.bash import Bash
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

pytestmark = pytest.mark.anyio

ATTACKS = [
    "ls 2>/dev/null $(rm -rf x)", "ls 2>/dev/null `rm -rf x`", 'ls >/dev/null "$(rm x)"', "ls 2>&1 <(rm x)",
    "git 2>/dev/null push origin main", "git 2>&1 push", "ls | git 2>/dev/null push", "! git 2>/dev/null push",
    "git <<EOF push\nx\nEOF", "git <<EOF 2>/dev/null push\nx\nEOF", "cat 2>/dev/null .env",
    "cat <<EOF 2>/dev/null .env\nx\nEOF", "export >/dev/null x=$(rm -rf y)", "{ ls; } <<EOF $(rm x)\nx\nEOF",
    "git 2>&- push", "git <&- push", "ls >&- $(rm x)", "0</dev/null rm -rf x", "0</dev/null git push",
]
KEPT = ["git status 2>/dev/null", "ls 2>&1 src", "git 2>/dev/null log --oneline", "cat <<EOF x\nhi\nEOF"]
RULES = {"deny": ["Bash(rm:*)", "Bash(git push:*)", "Read(.env)"], "allow": ["Bash(ls:*)", "Bash(git:*)", "Bash(cat:*)"]}


@pytest.mark.parametrize("mode", ["default", "bypassPermissions"])
async def test_words_after_a_redirection_meet_the_deny_rules(tmp_path: Path, mode: str) -> None:
    got = await decide(tmp_path, Bash(), ATTACKS + KEPT, mode, **RULES)
    assert [c for c, d in zip(ATTACKS, got, strict=False) if d != "deny"] == []
    assert [c for c, d in zip(KEPT, got[len(ATTACKS) :], strict=True) if d != "allow"] == []


@pytest.mark.parametrize(
    ("command", "argv"),
    [
        ("git 2>/dev/null push origin main", [["git", "push", "origin", "main"]]),
        ("git >a x >b y", [["git", "x", "y"]]),
        ("x=1 git 2>/dev/null push > o", [["git", "push"]]),
        ("ls && git 2>&1 push", [["ls"], ["git", "push"]]),
        ("cat <<EOF 2>/dev/null x\nhi\nEOF", [["cat", "x"]]),
        ("git 2>&- push", [["git", "push"]]),
        ("0</dev/null rm x", [["rm", "x"]]),
    ],
)
def test_the_plan_gives_the_command_its_words(command: str, argv: list[list[str]]) -> None:
    assert [s.argv for s in analyze(command).subcommands] == argv


def test_a_substitution_after_a_redirection_is_planned() -> None:
    names = [s.name for s in analyze("ls 2>/dev/null $(rm -rf x)").subcommands]
    assert "rm" in names


def test_words_after_a_redirection_of_no_simple_command_are_refused_with_advice() -> None:
    a = analyze("export >/dev/null PATH=.")
    assert not a.parse_ok or a.plan is not None and a.plan.syntax_errors
    assert "put the redirections after the command's words" in " ".join(a.reasons)


def test_a_word_the_parser_skips_between_redirections_is_never_trusted() -> None:
    """tree-sitter-bash drops a lone ``-`` between two redirections (real bash passes it to the command)."""
    a = analyze("cat 2>/dev/null - 2>/dev/null .env")
    assert not a.read_only and "source text the parser skipped before a redirection" in a.plan.unsupported  # type: ignore[union-attr]
