"""Red team, round 8 (command analysis): classes no earlier round named, each run for real.

Classes (not examples):

- ``[`` is a command, so ``>``, ``>>`` and ``<`` between its operands are redirections, but the grammar
  reads ``[ … ]`` with ``[[ … ]]``'s rules, where they compare strings: ``[ x > src/main.py ]``
  truncated the file while judged read-only (auto-allowed in default and plan mode, concurrency
  safe), and ``bypassPermissions`` ran it beside ``Edit(./src/main.py)`` (no part named the write).
  Redirections the grammar reads as a statement inside the test (``[ a 2> f ]``, ``[ > f ]``,
  ``[ a >| f ]``) and a target it splits (``[ a > ~/.bashrc ]`` gave the target ``~``) wrote past
  ``Edit(...)`` deny rules in ``bypassPermissions`` the same way;
- a line break inside ``[ … ]``: bash ends the ``[`` command at the newline and runs the next line as
  a command of its own; the grammar reads one test across lines. ``[ -n<newline>sh ]`` ran the
  repository's file ``]`` as a shell script (code execution) while judged read-only, and no part named
  ``sh`` for deny rules;
- a line break inside a double-quoted word: the grammar splits the string's content at line breaks
  and leaves them out, so ``"a<newline>b"`` was evaluated as ``ab``: ``bash -c "echo hi<newline>touch x"``
  was judged read-only (the script ``echo hitouch x``) and ran ``touch``, and ``bash -c
  "true<newline>rm -rf y"`` passed ``Bash(rm:*)`` in ``bypassPermissions``;
- a function definition's own redirection (``f() { :; } > keep.txt; f``): every call opens the file,
  but the planner dropped the redirection: ``bypassPermissions`` truncated an ``Edit(...)``-denied file;
- a shell's options after ``-c``: bash reads options up to the first other word and runs that word
  (``bash -c -x 'rm y'``, ``bash -co pipefail 'rm y'``, ``sh -c -- 'rm y'``), the analysis planned the
  option as the script. The rule engine's own search of the words caught ``Bash(rm:*)`` (defence
  in depth held); the parts now say what bash runs is not read.

Governance attacks run on the local backend, where governance is the only guard.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from shellrt.analysis import analyze
from shellrt.protocol import ResultEnvelope
from tests._governance import envelope_text as _text
from tests._governance import isolated_workspace, run_bash

pytestmark = pytest.mark.anyio


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_workspace(tmp_path, monkeypatch)


async def _bash(ws: Path, commands: list[str], *, mode: str, **kw: Any) -> list[ResultEnvelope]:
    return await run_bash(ws, commands, mode=mode, id_prefix="r8a", **kw)


# --- `[ a > f ]`: a redirection the grammar reads as a comparison --------------------------------

_BRACKET_WRITES = [
    ("[ x > victim.txt ]", "victim.txt"),
    ("[ -n x > victim.txt ]", "victim.txt"),
    ("[ x >> victim.txt ]", "victim.txt"),
    ("[ ( x > victim.txt ) ]", "victim.txt"),
    ("[ x = y -o z > victim.txt ]", "victim.txt"),
    ("[ -f a ] && [ x > victim.txt ]", "victim.txt"),
    ("if [ x > victim.txt ]; then :; fi", "victim.txt"),
    ("[ x 2> victim.txt ]", "victim.txt"),
    ("[ > victim.txt ]", "victim.txt"),
    ("[ x >| victim.txt ]", "victim.txt"),
    ("[ x &>> victim.txt ]", "victim.txt"),
]


@pytest.mark.parametrize(("command", "target"), _BRACKET_WRITES)
def test_a_redirection_inside_single_brackets_is_a_write(command: str, target: str) -> None:
    analysis = analyze(command)
    assert not analysis.read_only, command
    assert not analysis.concurrency_safe, command
    assert target in analysis.write_targets, (command, analysis.write_targets)


def test_an_input_redirection_inside_single_brackets_is_a_read() -> None:
    analysis = analyze("[ x < secret.txt ]")
    assert "secret.txt" in analysis.read_paths
    assert not analyze("[ x << EOF ]").read_only  # a here-document bash would read: not modelled


def test_comparisons_in_single_and_double_brackets_stay_read_only() -> None:
    for command in ("[ a = b ]", '[ -n "$x" ]', "[[ a > b ]]", "[[ a < b ]]", "[ a -o b ]"):
        assert analyze(command).read_only, command


@pytest.mark.parametrize("mode", ["default", "plan"])
async def test_a_bracket_redirection_does_not_run_unasked(ws: Path, mode: str) -> None:
    (ws / "victim.txt").write_text("precious\n")
    [envelope] = await _bash(ws, ["[ x > victim.txt ]"], mode=mode)
    assert envelope.is_error, _text(envelope)
    assert (ws / "victim.txt").read_text() == "precious\n"


def test_a_bracket_redirection_target_the_grammar_splits_is_unknown() -> None:
    analysis = analyze("[ x > ~/.bashrc ]")
    assert analysis.writes_unknown and "~" not in analysis.write_targets, analysis.write_targets


async def test_an_edit_deny_rule_sees_a_bracket_redirection(ws: Path) -> None:
    (ws / "victim.txt").write_text("precious\n")
    results = await _bash(
        ws,
        [
            "[ x > victim.txt ]",
            "[ -z '' ] && [ x >> victim.txt ]",
            "[ x 2> victim.txt ]",
            "[ > victim.txt ]",
            "[ x >| victim.txt ]",
            "[ x > ~+/victim.txt ]",
        ],
        mode="bypassPermissions",
        deny=["Edit(./victim.txt)"],
    )
    for envelope in results:
        assert envelope.is_error, _text(envelope)
    assert (ws / "victim.txt").read_text() == "precious\n"


async def test_single_bracket_tests_still_run(ws: Path) -> None:
    [envelope] = await _bash(ws, ["[ a = a ] && echo same"], mode="default")
    assert not envelope.is_error, _text(envelope)
    assert "same" in _text(envelope)


# --- `bash -c -x 'cmd'`: options between -c and the command string -----------------------------

_SHELL_OPTIONS_AFTER_C = [
    "bash -c -x 'true; rm -rf y'",
    "bash -c -- 'true; rm -rf y'",
    "sh -c -e 'true; rm -rf y'",
    "bash -co pipefail 'true; rm -rf y'",
    "bash -e -c +x 'true; rm -rf y'",
]


@pytest.mark.parametrize("command", _SHELL_OPTIONS_AFTER_C)
def test_options_after_dash_c_leave_the_script_unread(command: str) -> None:
    analysis = analyze(command)
    assert not analysis.read_only
    names = [part.name for part in analysis.subcommands]
    # Never an option taken for the program, always a part no allow rule matches.
    assert not any(name.startswith(("-", "+")) or name == "pipefail" for name in names), names
    assert "" in names, names


def test_a_plain_dash_c_script_is_still_planned() -> None:
    for command in (
        "bash -c 'ls'",
        "bash -ec 'ls'",
        "bash -o pipefail -c 'ls | cat'",
        "bash --rcfile x -c ls",
    ):
        assert "ls" in [part.name for part in analyze(command).subcommands], command
    assert analyze("bash -c 'ls'").read_only


# --- a line break inside `[ ]`: bash ends the command there ------------------------------------

_BRACKET_LINE_BREAKS = ["[ -n\nsh ]", "[ -n x -a\nsh ]", "[ x =\nsh ]", "[ !\nsh ]", "[ x = y -o\nsh ]"]


@pytest.mark.parametrize("command", _BRACKET_LINE_BREAKS)
def test_a_line_break_inside_single_brackets_fails_closed(command: str) -> None:
    analysis = analyze(command)
    assert not analysis.read_only and not analysis.parse_ok, command


def test_line_breaks_bash_accepts_in_tests_stay_read_only() -> None:
    for command in ('[ "a\nb" = x ]', "[ -n \\\nx ]", "[[ -n a &&\nb ]]", "if [ -f x ]; then\n  ls\nfi"):
        assert analyze(command).read_only, command


@pytest.mark.parametrize("mode", ["default", "plan"])
async def test_a_line_break_inside_single_brackets_runs_nothing_unasked(ws: Path, mode: str) -> None:
    (ws / "]").write_text("echo planted > pwned.txt\n")
    [envelope] = await _bash(ws, ["[ -n\nsh ]"], mode=mode)
    assert envelope.is_error, _text(envelope)
    assert not (ws / "pwned.txt").exists()


async def test_a_deny_rule_sees_the_line_after_a_bracket_line_break(ws: Path) -> None:
    (ws / "]").write_text("echo planted > pwned.txt\n")
    [envelope] = await _bash(ws, ["[ -n\nsh ]"], mode="bypassPermissions", deny=["Bash(sh:*)"])
    assert envelope.is_error, _text(envelope)
    assert not (ws / "pwned.txt").exists()


# --- `f() { …; } > f`: a function definition's redirection ---------------------------------------

_FUNCTION_REDIRECTS = [
    "f() { :; } > keep.txt; f",
    "f() (:) >> keep.txt; f",
    "function f { :; } 2> keep.txt; f",
]


@pytest.mark.parametrize("command", _FUNCTION_REDIRECTS)
def test_a_function_definitions_redirection_is_a_write(command: str) -> None:
    assert "keep.txt" in analyze(command).write_targets, command
    assert "secret.txt" in analyze("f() { cat; } < secret.txt; f").read_paths


async def test_an_edit_deny_rule_sees_a_function_definitions_redirection(ws: Path) -> None:
    (ws / "keep.txt").write_text("precious\n")
    results = await _bash(ws, _FUNCTION_REDIRECTS, mode="bypassPermissions", deny=["Edit(./keep.txt)"])
    for envelope in results:
        assert envelope.is_error, _text(envelope)
    assert (ws / "keep.txt").read_text() == "precious\n"


# --- a line break inside "...": the grammar drops it from the string's content -----------------


def test_a_double_quoted_line_break_is_kept() -> None:
    for command, value in (('echo "a\nb"', "a\nb"), ('echo "x\n"', "x\n"), ('echo "\ny"', "\ny")):
        plan = analyze(command).plan
        assert plan is not None and plan.commands[0].argv[1].value == value, command
    for command in ('bash -c "echo hi\ntouch pwned"', 'sh -c "[ -n\nsh ]"'):
        analysis = analyze(command)
        assert not analysis.read_only, command


async def test_a_quoted_script_line_runs_nothing_unasked_nor_past_a_deny_rule(ws: Path) -> None:
    [asked] = await _bash(ws, ['bash -c "echo hi\ntouch pwned1"'], mode="default")
    [denied] = await _bash(
        ws, ['bash -c "true\ntouch pwned2"'], mode="bypassPermissions", deny=["Bash(touch:*)"]
    )
    assert asked.is_error and denied.is_error, (_text(asked), _text(denied))
    assert not (ws / "pwned1").exists() and not (ws / "pwned2").exists()
