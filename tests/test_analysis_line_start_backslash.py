"""A line that starts with a backslash: bash ends the previous command at the line break.

tree-sitter-bash lexes ``ls<newline>\\rm x`` as one command, ``ls`` with the arguments
``<newline>\\rm`` and ``x``, and ``ls<newline>\\ rm`` as ``ls rm``; bash runs ``ls``, then
``rm x`` (or a command named `` rm``). Found by the property test
(``test_unsafe_fragment_never_read_only``): the analysis judged ``rm`` read-only and a
deny rule for ``rm`` saw no ``rm`` part. Such input is now a syntax error (not read-only,
the raw command a part no rule allows); an escaped line break or quoted text is unchanged.
"""

from __future__ import annotations

import pytest

from shellrt.analysis import analyze

JOINED_LINES = [
    "ls\n\\rm x",
    "ls && ls\n\\rm x",
    "ls | cat\n\\rm x",
    "ls  \n\\rm x",
    "ls\n\\ls\n\\rm x",
    "echo a\n\\rm",
    'ls\n\\rm"" x',
    'echo "$(ls\n\\rm x)"',
    "ls\n\\ rm -rf x",
    "ls\n\\\trm x",
]


@pytest.mark.parametrize("command", JOINED_LINES)
def test_a_line_joined_by_the_parser_is_refused(command: str) -> None:
    result = analyze(command)
    assert not result.read_only, result.reasons
    assert not result.parse_ok, result.reasons
    assert command in [part.text for part in result.subcommands]  # the raw command: no rule allows it
    assert result.writes_unknown


@pytest.mark.parametrize(
    "command",
    [
        "ls \\\n\\rm x",  # an escaped line break: one line to bash too (ls with arguments rm, x)
        "echo 'a\n\\b'",  # a line break inside quotes
        'echo "a\n\\b"',
        "ls\nrm x",
    ],
)
def test_escaped_or_quoted_line_breaks_read_as_before(command: str) -> None:
    result = analyze(command)
    assert result.parse_ok, result.reasons
    assert result.read_only == (command != "ls\nrm x")
