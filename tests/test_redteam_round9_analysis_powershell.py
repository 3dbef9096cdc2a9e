"""Red team, round 9 (command analysis, PowerShell): characters PowerShell reads as syntax.

Analysis only (no pwsh on this machine): what PowerShell's own tokenizer does is taken from its
source (``CharTraits``/``SpecialChars``): ``‘ ’ ‚ ‛`` open and close single-quoted strings and
``“ ” „`` double-quoted ones, ``– — ―`` start a parameter like ``-``, NBSP and NEL separate words,
and ``#`` starts a comment only at the start of a token (``a#b`` is one word).

The tokenizer here treated them as word characters (and ``#`` inside a word as a comment), so
``Write-Output 'a’; Remove-Item victim; ’'`` and ``Write-Output a#b; Remove-Item victim`` were
judged read-only (PowerShell runs ``Remove-Item``), ``Get-Help x –Online`` passed the check of
``-Online`` (it opens a browser), and ``Remove-Item<NBSP>victim`` was a part named
``Remove-Item<NBSP>victim``, which a ``PowerShell(Remove-Item:*)`` deny rule did not match. Such
input is now a parse error: never read-only, the raw command is a part no allow rule matches and
deny rules refuse.
"""

from __future__ import annotations

import pytest

from shellrt.analysis import analyze

_HIDDEN = [
    "Write-Output a#b; Remove-Item -Recurse victim",
    "Write-Output 'a\u2019; Remove-Item victim; \u2019'",
    "Write-Output 'a\u2018; Remove-Item victim; \u201b'",
    'Write-Output "a\u201d; Remove-Item victim; \u201c"',
    'Write-Output "a\u201e; Remove-Item victim; \u201e"',
    "Get-Help Get-Item \u2013Online",
    "Get-Help Get-Item \u2014Online",
    "Remove-Item\u00a0victim",
    "Remove-Item\u0085victim",
    "Get-ChildItem $x#; Remove-Item victim",
]


@pytest.mark.parametrize("command", _HIDDEN)
def test_powershell_syntax_this_tokenizer_misread_fails_closed(command: str) -> None:
    analysis = analyze(command, "powershell")
    assert not analysis.read_only and not analysis.parse_ok, (command, analysis.reasons)
    assert command in [part.text for part in analysis.subcommands]


def test_comments_and_plain_text_stay_read_only() -> None:
    for command in (
        "Get-ChildItem # a comment",
        "Get-ChildItem;# a comment",
        "Write-Output 'a#b'",
        'Write-Output "caf\u00e9"',
        "Get-Content x | Select-String foo",
    ):
        analysis = analyze(command, "powershell")
        assert analysis.read_only, (command, analysis.reasons)
