"""Red team, round 56 (rules): a recursive read over a denied path spelled in the other normal form.

A recursive read of a tree that holds a denied path reads it, so it is never allowed unasked
(`PermissionRule.may_match_below`, rounds 9 and 45). The check looked for the rule's anchor as the rule
spells it and matched a floating rule's names as written: ``Read(./café/**)`` typed in NFC over an
on-disk NFD ``cafe`` + U+0301 directory, or ``Read(clé.pem)`` over an NFD ``clé.pem``, left
``grep -r SECRET .`` allowed in ``bypassPermissions`` -- on the local backend (no sandbox) it printed
the secret the Read tool is denied. The permission layer matches every other deny across NFC and NFD;
now this check does too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.tools.bash import Bash
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

NFC, NFD = "caf\u00e9", "cafe\u0301"
RULES = [f"Read(./{NFC}/**)", f"Read(./{NFC}/*)", f"Read({NFC}/key)", "Read(cl\u00e9.pem)", f"Read(./{NFD}/**)"]


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / NFD).mkdir(parents=True)
    (ws / NFD / "key").write_text("SECRET56\n")
    (ws / "cle\u0301.pem").write_text("SECRET56\n")
    (ws / "other").mkdir()
    (ws / "other" / "notes").write_text("notes\n")
    return ws


@pytest.mark.anyio
@pytest.mark.parametrize("rule", RULES)
async def test_a_recursive_read_over_the_other_spelling_is_not_allowed(tmp_path: Path, rule: str) -> None:
    """Failed 4 of 5 before (the NFD rule over the NFD tree held): ``grep -r`` of the workspace allowed."""
    got = await decide(tmp_path, Bash(), ["grep -r SECRET .", "grep -r SECRET other"], "bypassPermissions",
                       ws=_workspace(tmp_path), deny=[rule])  # fmt: skip
    assert got[0] != "allow" and got[1] == "allow", got
