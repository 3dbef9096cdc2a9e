"""Red team, round 49 (analysis9): a command line given as a variable's value, or to ``-o '|…'``, past a deny rule.

A deny rule reads the command an option's value holds (``rsync -e``, ``man -P``, ``tar --to-command``:
permissions/embedded.command_options), and a value the shell would read differently from its text
(``'r""m y'``: quotes, escapes) is "not static", which a deny rule refuses. Two other places hold a command
line a program hands to ``sh -c`` and had neither check: a variable that names a command (``LESSOPEN``,
``GIT_EXTERNAL_DIFF``; ``GIT_PAGER`` and ``EDITOR`` were caught by other checks) and the ``|cmd`` "file" of
``psql -o`` and ``strace -o`` (round 49's loaders). Beside ``Bash(rm:*)`` denied in ``bypassPermissions``,
``LESSOPEN='|r""m y %s' less f`` and ``psql -o '|r""m y' db`` ran (``sh -c`` reads ``r""m`` as ``rm``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.tools.bash import Bash
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

pytestmark = pytest.mark.anyio

ATTACKS = [
    "LESSOPEN='|r\"\"m y %s' less f", "env LESSOPEN='|r\"\"m y %s' less f", "LESSOPEN='||r\"\"m y %s' less f",
    "GIT_EXTERNAL_DIFF='r\"\"m' git diff", "env GIT_EXTERNAL_DIFF='\\rm' git diff",
    "psql -o '|r\"\"m y' db", "psql --output='|r\"\"m y' db", "strace -o '|r\"\"m y' ls", "strace -o'!r\\m y' ls",
    "strace -o '|rm y' ls",
]
KEPT = ["GIT_PAGER=cat git log", "LESSOPEN='|lesspipe %s' less f", "psql -o out.txt db", "strace -o log ls"]


async def test_command_lines_in_values_meet_deny_rules(tmp_path: Path) -> None:
    got = await decide(tmp_path, Bash(), ATTACKS + KEPT, "bypassPermissions", deny=["Bash(rm:*)"])
    ran = [c for c, d in zip(ATTACKS, got[: len(ATTACKS)], strict=True) if d == "allow"]
    refused = [c for c, d in zip(KEPT, got[len(ATTACKS) :], strict=True) if d != "allow"]
    assert (ran, refused) == ([], [])
