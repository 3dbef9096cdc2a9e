"""Red team, round 49 (analysis9): ``[[ -v $x ]]`` evaluates the subscript of a name known only at run time.

Round 33 made arithmetic on a value built at run time a part no rule can check, and ``test -v "$x"`` /
``unset "$x"`` with a computed name one too; round 48 counted ``[[ -v a[PATH=1] ]]``'s literal subscript.
``[[ -v $x ]]`` (and ``${x:-a}``, ``! -v``, after ``||``) was neither: the name is the value of ``x``, and
with ``x`` read from a file holding ``a[$(rm y)]`` real bash 5.2 ran ``rm y``. Beside ``Bash(rm:*)``
denied in ``bypassPermissions`` these ran (``test -v "$x"``, the same test, was denied).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.tools.bash import Bash
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

pytestmark = pytest.mark.anyio

ATTACKS = [
    "read x < f; [[ -v $x ]]", 'read -r x < f; [[ -v "$x" ]]', "read x < f; [[ -v ${x:-a} ]]",
    "read x < f; [[ ! -v $x ]]", "read x < f; [[ -v a || -v $x ]]", "mapfile -t l < f; [[ -v ${l[0]} ]]",
    "x=$(<f); [[ -v $x ]]", 'g() { [[ -v $1 ]]; }; g "$(cat f)"', "read x < f; if [[ -v $x ]]; then :; fi",
]
KEPT = ["[[ -v x ]]", "[[ -v a[1] ]]", "read x < f; [[ -n $x ]]", "[[ -R $x ]]"]


async def test_a_computed_name_given_to_test_v_is_a_part_no_rule_checks(tmp_path: Path) -> None:
    got = await decide(tmp_path, Bash(), ATTACKS + KEPT, "bypassPermissions", deny=["Bash(rm:*)"])
    ran = [c for c, d in zip(ATTACKS, got[: len(ATTACKS)], strict=True) if d == "allow"]
    refused = [c for c, d in zip(KEPT, got[len(ATTACKS) :], strict=True) if d != "allow"]
    assert (ran, refused) == ([], [])


def test_real_bash_runs_the_subscript_of_a_name_test_v_is_given(tmp_path: Path) -> None:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash not installed")
    (tmp_path / "f").write_text("a[$(touch ran)]\n")
    subprocess.run([bash, "-c", "read -r x < f; [[ -v $x ]]"], cwd=tmp_path, timeout=20, check=False,
                   stdin=subprocess.DEVNULL, capture_output=True)
    assert (tmp_path / "ran").exists()
