"""Red team, round 33 (analysis): ``$"…"`` runs the translation a message catalog holds.

bash replaces ``$"hello"`` by its translation from ``$TEXTDOMAINDIR/<locale>/LC_MESSAGES/
$TEXTDOMAIN.mo`` and expands the result as a double-quoted string, so a catalog the repository
ships with ``msgstr "$(rm x)"`` makes ``echo $"hello"`` run ``rm x`` (checked by hand with bash 5.2,
glibc 2.36 and a locale built with ``localedef``; too slow to build here). With ``Bash(rm:*)``
denied in ``bypassPermissions`` mode, 6 of 6 such forms were allowed before; the word is now a
part no rule matches. Decisions of the real engine, the same for every caller and backend.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.analysis import analyze
from tests._hidden_code import rule_misses

pytestmark = pytest.mark.anyio

ATTACKS = [
    "LC_ALL=en_US.UTF-8 TEXTDOMAINDIR=loc TEXTDOMAIN=x bash -c 'echo $\"hello\"'",
    "LC_ALL=en_US.UTF-8; TEXTDOMAINDIR=loc; TEXTDOMAIN=x; echo $\"hello\"",
    "export TEXTDOMAINDIR=loc TEXTDOMAIN=x; echo a$\"b\"c", "TEXTDOMAIN=x; x=$\"hi\"",
    "TEXTDOMAIN=x; case $\"hi\" in *) ;; esac", "echo $\"hello\"",
]
KEPT = ["echo \"hello\"", "echo '$\"hello\"'", "echo \"$\"", "echo hello"]


async def test_translated_strings_meet_deny_rules(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, ATTACKS, KEPT) == ([], [])
    part = analyze("echo $\"hello\"").subcommands[-1]
    assert part.name == "" and part.text.startswith("translated by a message catalog, then expanded: $")
