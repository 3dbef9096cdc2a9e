"""Red team, round 34 (analysis2): a function definition's redirection feeds its body.

``f() { psql db; } < s.sql; f`` runs psql with standard input from a file the command chose, as
``{ psql db; } < s.sql`` does: code for a program with no model (round 31 asks for the group).
The planner gave the function's redirection a part of its own only, so the body's commands showed
no standard input: 5 of 6 forms (``function f { guile; }``, a subshell body, a loop inside, a
function calling another; `0<` was denied) were allowed past ``Bash(rm:*)`` in ``bypassPermissions`` mode. The
redirection now belongs to every command of the body, as a group's does.
Decisions of the real engine, the same for every caller and backend.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._hidden_code import rule_misses

pytestmark = pytest.mark.anyio

ATTACKS = [
    "f() { psql db; } < s.sql; f", "function f { guile; } < s.scm; f", "f() ( mysql db ) < s.sql; f",
    "f() { while read -r l; do psql db; done; } < s.sql; f", "f() { g; } < s.sql; g() { psql db; }; f",
    "f() { if true; then guile; fi; } 0< s.scm; f",
]
KEPT = ["f() { ls; } < s.sql; f", "f() { echo hi; } > /dev/null; f", "f() { git status; }; f < /dev/null"]


async def test_a_function_redirection_reaches_its_body(tmp_path: Path) -> None:
    allowed, refused = await rule_misses(tmp_path, ATTACKS, KEPT)
    assert (allowed, refused) == ([], [])
