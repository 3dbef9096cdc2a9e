"""Red team, round 56 (reviewa): a recursive walk of ``..`` through a pattern word, unseen.

``bash_glob`` (round 56) names ``.`` and ``..`` for a leading-dot segment only on the way to a further name, so
``ls -d .*`` stays allowed. But a session's earlier ``shopt -u globskipdots`` (allowed, and bash before 5.2 by
default) makes ``.*``, ``.?`` and ``.[.]`` expand to ``..`` too, and a recursive program walks it: ``grep -r S .*``
printed ``../secret`` while a deny rule on it saw no read (``grep -r S ..`` is asked). Now a recursive program's
pattern word whose last segment may match ``..`` reads that parent too; a non-recursive one is unchanged.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from shellrt.tools.bash import Bash
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

ATTACKS = ["grep -r S .*", "grep -r S .?", "grep -r S .[.]", "grep -rl S sub/../.*", "chmod -R u+r .*"]
KEPT = ["ls -d .*", "cat .*", "grep S .*", "grep -r S .r*", "cat .rc"]


def _layout(root: Path) -> Path:
    ws = root / "ws"
    (ws / "sub").mkdir(parents=True)
    (root / "secret").write_text("S\n")
    (ws / ".rc").write_text("x\n")
    return ws


def test_bash_walks_the_parent_through_each_word(tmp_path: Path) -> None:
    """The premise (bash 5.2): after ``shopt -u globskipdots`` each word walks ``..``."""
    ws = _layout(tmp_path)
    script = "shopt -u globskipdots\n" + "".join(f"{c} | grep -c secret\n" for c in ATTACKS[:3])
    ran = subprocess.run(["bash", "-c", script.replace("grep -r S", "grep -rl S")], cwd=ws, capture_output=True,
                         text=True, timeout=30)  # fmt: skip
    assert ran.stdout.split() == ["1", "1", "1"]


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["default", "bypassPermissions"])
async def test_a_recursive_walk_of_the_parent_meets_its_deny_rule(tmp_path: Path, mode: str) -> None:
    ws = _layout(tmp_path)
    rule = f"Read(/{tmp_path / 'secret'})"
    got = await decide(tmp_path, Bash(), ATTACKS + KEPT, mode, ws=ws, deny=[rule])
    assert "allow" not in got[: len(ATTACKS)], got
    assert got[len(ATTACKS) :] == ["allow"] * len(KEPT)
