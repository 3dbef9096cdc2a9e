"""Red team, round 9 (command analysis): where the grammar cuts words where bash does not.

Classes (not examples), each run for real:

- an escaped blank between two words (``\\ `` or ``\\<tab>``): bash passes it as a word of its own,
  tree-sitter-bash drops it. ``sort -t \\  -o out.txt in`` was ``sort -t -o out.txt in`` to the
  analysis (``-o`` taken for ``-t``'s value): judged read-only, it wrote ``out.txt``;
- a ``#`` right after such an escaped blank: the grammar starts a comment there, bash reads a word
  and goes on. ``ls \\ #; touch pwned.txt`` was ``ls`` alone: read-only, concurrency-safe, allowed by
  ``Bash(ls:*)``, and not denied by ``Bash(touch:*)``; bash ran ``touch``;
- a word cut after a quote before an escaped byte (``'a'\\-b`` is one word ``a-b`` to bash, two to the
  grammar), an escaped byte at a command's end (dropped), and a line that starts with a line
  continuation (the grammar joins it to the command above; bash ends that command at the newline);
- ``[ab]`` (a glob naming a command) read as a ``[ ]`` test with the operand ``ab``: read-only, while
  bash runs whatever one-letter file name it expands to;
- an assignment after an ideographic space (U+3000): the grammar skips the space, bash runs a command
  named ``<U+3000>x=1``.

The fix checks, for every word the planner reads, that bash starts and ends a word at the node's
span, and that only blanks and continuations lie between the pieces of a simple command; anything
else is a syntax error (never read-only; the raw command is a part no allow rule matches).

The differential test runs real bash on a seeded corpus of quoting, escaping and separator forms
and compares the commands and words bash runs with the analysis, for every input the analysis
accepts as parsed with static words (fast path and parser path).
"""

from __future__ import annotations

import random
import subprocess
from pathlib import Path
from typing import Any

import pytest

from shellrt.analysis import analyze
from shellrt.analysis.analyze import _analyze_bash
from shellrt.protocol import ResultEnvelope
from tests._governance import envelope_text as _text
from tests._governance import isolated_workspace, run_bash

pytestmark = pytest.mark.anyio


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_workspace(tmp_path, monkeypatch)


async def _bash(ws: Path, commands: list[str], *, mode: str, **kw: Any) -> list[ResultEnvelope]:
    return await run_bash(ws, commands, mode=mode, id_prefix="r9w", **kw)


# --- an escaped blank the grammar drops ---------------------------------------------------------

_DROPPED_BLANK_WRITES = [
    "sort -t \\  -o out.txt in.txt",
    "sort -t \\\t -o out.txt in.txt",
    "sort -k1 -t \\  -o out.txt in.txt",
]


@pytest.mark.parametrize("command", _DROPPED_BLANK_WRITES)
def test_a_dropped_escaped_blank_does_not_hide_an_option(command: str) -> None:
    analysis = analyze(command)
    assert not analysis.read_only, (command, analysis.reasons)
    assert not analysis.parse_ok


@pytest.mark.parametrize("mode", ["default", "plan"])
async def test_a_dropped_escaped_blank_writes_nothing_unasked(ws: Path, mode: str) -> None:
    (ws / "in.txt").write_text("b\na\n")
    [envelope] = await _bash(ws, ["sort -t \\  -o out.txt in.txt"], mode=mode)
    assert envelope.is_error, _text(envelope)
    assert not (ws / "out.txt").exists()


# --- a comment the grammar starts after an escaped blank ----------------------------------------

_HIDDEN_BY_COMMENT = [
    "ls \\ #; touch pwned.txt",
    "ls \\\t#; touch pwned.txt",
    "ls;\\ #; touch pwned.txt",
    "ls && \\ # && touch pwned.txt",
]


@pytest.mark.parametrize("command", _HIDDEN_BY_COMMENT)
def test_a_comment_after_an_escaped_blank_hides_nothing(command: str) -> None:
    analysis = analyze(command)
    assert not analysis.read_only and not analysis.parse_ok, (command, analysis.reasons)
    # The raw command is a part: no allow rule matches it, a deny rule's search of the words sees `touch`.
    assert command in [part.text for part in analysis.subcommands]


@pytest.mark.parametrize("mode", ["default", "plan"])
async def test_a_comment_after_an_escaped_blank_runs_nothing_unasked(ws: Path, mode: str) -> None:
    [envelope] = await _bash(ws, ["ls \\ #; touch pwned.txt"], mode=mode)
    assert envelope.is_error, _text(envelope)
    assert not (ws / "pwned.txt").exists()


async def test_an_allow_rule_does_not_pass_a_command_hidden_by_a_comment(ws: Path) -> None:
    [envelope] = await _bash(ws, ["ls \\ #; touch pwned.txt"], mode="default", allow=["Bash(ls:*)"])
    assert envelope.is_error, _text(envelope)
    assert not (ws / "pwned.txt").exists()


async def test_a_deny_rule_sees_a_command_hidden_by_a_comment(ws: Path) -> None:
    [envelope] = await _bash(
        ws, ["ls \\ #; touch pwned.txt"], mode="bypassPermissions", deny=["Bash(touch:*)"]
    )
    assert envelope.is_error, _text(envelope)
    assert not (ws / "pwned.txt").exists()


# --- other cuts: after a quote, at the end, a continuation starting a line, `[ab]` --------------

_MISCUT = [
    "cat 'a'\\-n",
    'cat "x"\\ -n',
    '\\  ""ls',
    'cat "a"\\;ls',
    "cat x \\ ",
    "cat x \\  ; ls",
    "ls \"\\\\\"'\\'x\n\\\nx=1",
    "[ab]",
    "[-v]",
    "export a'b'",
    "\u3000x=1",
    "ls; \u3000LANG=C",
]


@pytest.mark.parametrize("command", _MISCUT)
def test_a_word_the_grammar_cuts_elsewhere_fails_closed(command: str) -> None:
    analysis = analyze(command)
    assert not analysis.read_only and not analysis.parse_ok, (command, analysis.reasons)


def test_words_bash_cuts_the_same_way_stay_read_only() -> None:
    for command in (
        "cat a\\ b",
        "cat a\\  b",
        "cat a\\ ",
        "cat 'a b' \"c d\" e\\ f",
        "cat a \\\n  b",
        "ls # a comment",
        "ls a\\  # a comment",
        "ls; # comment",
        "grep -e 'a b' -r .",
        "[ -n x ]",
        "[ ]",
    ):
        analysis = analyze(command)
        assert analysis.parse_ok and analysis.read_only, (command, analysis.reasons)
    for command in ('echo $"a"', "find . -exec rm {} \\;", "x=a\\ b ls"):  # parsed, not read-only
        assert analyze(command).parse_ok, command


# --- differential: the commands and words bash runs, against the analysis ------------------------

_ATOMS = [
    "a", "-n", "-o", "--", "x=1", "=", "}", "{a,b}", "~",
    " ", " ", " ", "\t", ";", " ; ", "\n", ";f ", "\nf ", " f ",
    "\\ ", "\\\t", "\\\\", '\\"', "\\'", "\\\n", "\\#", "\\$", "\\a", "\\-", "\\{", "\\}", "\\;",
    "\\|", "\\&", "\\<", "\\>", "\\(", "\\)", "\\!", "\\`", "\\\r", "\\\f", "\\\v",
    '""', "''", '"a b"', "'a b'", '"\\ "', '"\\\\"', '"\\""', "'\\'", '"\\$"', "'$'", '"\\a"', '"a"',
    "'a'", '"\n"', "'\n'", '"#"', "$'a'", '$"a"',
    "#", "#x", "!", "\r", "\v", "\f", "\u00a0", "\u2028", "\u3000",
]  # fmt: skip
#: ``f`` and unknown commands print a record per call: \x01 name, then every argument, NUL-ended.
_RECORDER = (
    "f() { builtin printf '\\1f\\0'; for a; do builtin printf '%s\\0' \"$a\"; done; }; "
    "command_not_found_handle() { builtin printf '\\1%s\\0' \"$1\"; shift; "
    "for a; do builtin printf '%s\\0' \"$a\"; done; }; "
)


def _bash_runs(command: str, cwd: Path) -> tuple[list[list[str]], bool]:
    """The commands bash runs for ``command`` (name and words), and whether it had a syntax error."""
    result = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", _RECORDER + command],
        capture_output=True,
        cwd=cwd,
        timeout=10,
        check=False,
    )
    runs: list[list[str]] = []
    for field in result.stdout.split(b"\0")[:-1]:
        text = field.decode("utf-8", "surrogateescape")
        if text.startswith("\1"):
            runs.append([text[1:]])
        elif runs:
            runs[-1].append(text)
    return runs, b"syntax error" in result.stderr


def _analysis_runs(command: str, fast: bool) -> list[list[str]] | None:
    """The commands the analysis plans, when it parsed them and knows every word (else None)."""
    analysis = _analyze_bash(command, fast)
    if analysis.plan is None or not analysis.parse_ok:
        return None
    runs: list[list[str]] = []
    for planned in analysis.plan.commands:
        if planned.redirects:
            return None
        if not planned.argv:
            continue
        values: list[str] = []
        for word in planned.argv:
            if word.value is None or "glob" in word.features or "tilde" in word.features:
                return None
            values.append(word.value)
        runs.append(values)
    return runs


def _corpus(seed: int, size: int) -> list[str]:
    rng = random.Random(seed)
    return ["f " + "".join(rng.choice(_ATOMS) for _ in range(rng.randint(1, 8))) for _ in range(size)]


def test_the_analysis_cuts_words_like_bash(tmp_path: Path) -> None:
    compared = 0
    wrong: list[tuple[str, bool, object, object]] = []
    for command in _corpus(9, 900):
        for fast in (True, False):
            ours = _analysis_runs(command, fast)
            if ours is None:
                continue  # failed closed: not parsed, or a word it cannot know
            theirs, syntax_error = _bash_runs(command, tmp_path)
            compared += 1
            if syntax_error or ours != theirs:
                wrong.append((command, fast, ours, "syntax error" if syntax_error else theirs))
    assert not wrong, wrong[:5]
    assert compared > 600  # most of the corpus is judged, not refused
