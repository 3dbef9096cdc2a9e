"""Script strings (``bash -c '...'``, ``eval``) planned without the parser must give the parser path's verdict.

The planner hands a script string to ``fastplan.plan_simple`` first (``plan.SCRIPT_PLANNERS``)
and parses it only when that refuses. ``analyze`` with the fast paths and without any
(``fast=False``: the command and every script string parsed) must agree on everything,
for hostile scripts in a table and generated ones, at every nesting depth.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shellrt.analysis.analyze import _analyze_bash
from shellrt.analysis.fastplan import plan_simple
from shellrt.analysis.plan import SCRIPT_PLANNERS
from tests._fuzz import examples


def _agree(command: str) -> None:
    fast = _analyze_bash(command, fast=True).model_dump()
    slow = _analyze_bash(command, fast=False).model_dump()
    assert fast == slow, command


def test_the_fast_planner_is_registered() -> None:
    assert [plan_simple] == SCRIPT_PLANNERS


#: Scripts, each put inside the quotes of :data:`WRAPPERS`.
SCRIPTS = [
    "ls",
    "sleep 1; ls",
    "ls | wc -l",
    "cd /tmp && rm -rf x",
    "cd src && make 2>&1 | tail",
    "ls &",
    "ls & rm x",
    "export A=1; ls $A",
    "find . -exec rm {} \\;",
    "timeout 5 bash -c ls",
    "sudo rm -rf /",
    "echo a > /etc/passwd",
    "A=1 B=2 env",
    "ls $HOME",
    "$X",
    "ls $1 $? $$ $@",
    "ls ${x:-$(rm x)}",
    "echo $(rm x)",
    "echo `rm x`",
    'echo "$(rm x)"',
    'echo "$@"',
    "echo \\$x",
    "echo \\",
    "echo $'\\x72m'",
    "ls\nrm x",
    "ls\x00rm",
    "ls\x01",
    "l\u0455 -la",  # a Cyrillic lookalike
    "ls \uff1b rm x",  # a fullwidth semicolon
    "cat <<EOF\nx\nEOF",
    "for f in *; do rm $f; done",
    "ls; ;",
    "",
    " ",
    "|",
    "ls |",
    "ls ;; rm",
    "time ls",
    "! ls",
    "(ls)",
    "{ ls; }",
    "ls >& 2",
    "ls 2>/dev/null || echo failed",
]
#: How each script is run: a shell, a wrapper around one, nested shells, ``eval``.
WRAPPERS = [
    "bash -c '{}'",
    "sh -c '{}' x y",
    "timeout 5 bash -c '{}'",
    "sudo bash -c '{}'",
    "ls | bash -c '{}' > out",
    "bash -c 'bash -c \"{}\"'",
    'bash -c "bash -c \'bash -c \\"{}\\"\'"',
    'bash -c \'bash -c "bash -c \\"bash -c {}\\""\'',
    "eval '{}'",
    "cd src && bash -lc '{}'",
]


@pytest.mark.parametrize(
    ("wrapper", "script"),
    # A script with a single quote goes only where it does not end the quoting around it.
    [(w, s) for w in WRAPPERS for s in SCRIPTS if "'" not in s or w.startswith('bash -c "')],
)
def test_hostile_scripts_agree(wrapper: str, script: str) -> None:
    _agree(wrapper.format(script))


def test_scripts_are_taken_by_the_fast_planner() -> None:
    """The comparisons above exercise the new path: most plain scripts are planned without the parser."""
    taken = [script for script in SCRIPTS if plan_simple(script, 1) is not None]
    assert len(taken) >= 15, taken


_NAMES = [
    "echo",
    "ls",
    "git status",
    "cd",
    "rm",
    "sudo",
    "timeout 5",
    "bash -c",
    "env",
    "find .",
    "A=1 ls",
    "export",
]
_WORDS = ["-la", "x", "a/b", "*.py", "$HOME", "2>&1", "> f", "< in", "{}", "\\;", "-", "A=b", "ls", '"q"']
_OPS = [" | ", " && ", " || ", "; ", " & ", ";", "|", " ;; ", "\n"]


@st.composite
def _scripts(draw: st.DrawFn) -> str:
    command = ""
    for index in range(draw(st.integers(1, 4))):
        if index:
            command += draw(st.sampled_from(_OPS))
        words = [draw(st.sampled_from(_NAMES)), *draw(st.lists(st.sampled_from(_WORDS), max_size=3))]
        command += draw(st.sampled_from([" ", "  ", "\t"])).join(words)
    return command + draw(st.sampled_from(["", " ", ";", " &"]))


@settings(max_examples=examples(1500), deadline=None)
@given(_scripts(), st.sampled_from(WRAPPERS[:5] + WRAPPERS[8:]))
def test_generated_scripts_agree(script: str, wrapper: str) -> None:
    _agree(wrapper.format(script))
