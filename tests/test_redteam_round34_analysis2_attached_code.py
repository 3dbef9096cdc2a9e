"""Red team, round 34 (analysis2): code attached to ``-e``/``-c`` in letters alone.

Round 31 asks for ``-c``/``-e``/``-E`` of a program with no model, but read a longer all-letter
word as a single-dash long option, so ``mysql -eshutdown`` (``-e shutdown``: SQL that stops the
server), ``psql -cCHECKPOINT db``, ``kotlin -eexit``, ``scala -eexit``, ``guile -cexit`` passed
where the spaced form asks: 5 of 5 allowed past ``Bash(rm:*)`` in ``bypassPermissions`` mode. A
word led by a code letter now counts unless it carries an ``=`` value (``-chdir=x``) or is a
known whole word (``-classpath``). Decisions of the real engine, the same for every caller and backend.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._hidden_code import rule_misses

pytestmark = pytest.mark.anyio

ATTACKS = ["mysql -eshutdown", "psql -cCHECKPOINT db", "kotlin -eexit", "scala -eexit", "guile -cexit"]
KEPT = ["terraform -chdir=x version", "java -classpath lib -version", "go test -count=1 -cover ./...",
        "gcc -c x.c", "kotlin -version"]


async def test_letters_attached_to_code_options_are_code(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, ATTACKS, KEPT) == ([], [])
