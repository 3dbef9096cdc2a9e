"""Bash syntax errors are ``parse_ok: false``, judged against bash itself (``bash -n``).

tree-sitter-bash accepts some input bash refuses (``ls ;; pwd``, ``done x``,
``a | ! b``, a here-document whose end bash reads elsewhere). Every command
``bash -n`` rejects must come back with ``parse_ok`` false, never read-only.
"""

from __future__ import annotations

import random
import subprocess

import pytest

from shellrt.analysis import analyze
from tests._fuzz import examples
from tests.test_analysis_corpus import NOT_READ_ONLY, READ_ONLY
from tests.test_analysis_fastplan import _NAMES, _OPS, _REDIRECTS, _WORDS
from tests.test_analysis_oracle import COMMANDS


def _generated(count: int) -> list[str]:
    rng = random.Random(8)
    out: list[str] = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(1, 4)):
            words = [rng.choice(_NAMES)] + [rng.choice(_WORDS) for _ in range(rng.randint(0, 3))]
            words += [rng.choice(_REDIRECTS) for _ in range(rng.randint(0, 1))]
            parts.append(" ".join(words))
        command = parts[0]
        for part in parts[1:]:
            command += rng.choice(_OPS) + part
        out.append(command)
    return out


def _bash_accepts(command: str) -> bool:
    result = subprocess.run(
        ["bash", "-n"], input=command.encode("utf-8", "surrogateescape"), capture_output=True, check=False
    )
    return result.returncode == 0


@pytest.mark.parametrize(
    "command",
    [
        "ls ;; pwd",
        "ls;;",
        "done",
        "ls; fi",
        "then ls",
        "a | ! b",
        "time fi",
        "{ cat <<EOF\nx\nEOF; }",
        "ls )",
        "ls (",
        "if true; then ls",
        "echo $(",
        "case x in",
        # a `time` that times nothing yet, before an operator bash wants a pipeline after
        "time && ls",
        "time | ls",
        "time || ls",
        "time -p && ls",
        "time time && ls",
        "! time && ls",
        "( time ) && ls",
        "time & ls",
        "ls && time && ls",
        "time && ls >f",
        "case x in a) time;; esac",
    ],
)
def test_syntax_errors_are_not_parse_ok(command: str) -> None:
    assert not _bash_accepts(command)
    result = analyze(command)
    assert not result.parse_ok, result.reasons
    assert not result.read_only
    assert result.subcommands[-1].text == command  # the raw text stays visible to rule matching


@pytest.mark.parametrize(
    "command",
    [
        "case x in a) ls;; esac",
        "case x in a) ls;& b) pwd;; esac",
        "! ls | wc",
        "time ls",
        "cat <<EOF\nEOF",
        "cat <<-EOF\n\tx\n\tEOF",
        "time; ls",
        "time",
        "ls | time && ls",
        "ls && time",
        "time >f && ls",
        "time 2>&1 | ls",
        "x=1 time && ls",
        "( time; ) && ls",
        "echo $(time)",
        "time -p; ls",
    ],
)
def test_valid_shapes_stay_parse_ok(command: str) -> None:
    assert _bash_accepts(command)
    assert analyze(command).parse_ok, analyze(command).reasons


def test_every_command_bash_rejects_is_not_parse_ok() -> None:
    commands = list(dict.fromkeys(NOT_READ_ONLY + READ_ONLY + COMMANDS + _generated(examples(1500))))
    rejected = [c for c in commands if "\x00" not in c and not _bash_accepts(c)]
    wrong = [c for c in rejected if analyze(c).parse_ok]
    assert not wrong, f"{len(wrong)} commands bash rejects are parse_ok: {wrong[:10]!r}"
    assert len(rejected) > 100  # the generator does produce syntax errors
