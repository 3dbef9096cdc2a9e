"""Red team, round 35 (analysis): ``jobs -x COMMAND`` runs COMMAND.

bash's ``jobs -x`` replaces job specs in its arguments and runs the command they name (``jobs -x
touch p``, also ``-xl``, ``-x -l``, ``-rx``, ``-x --``, behind ``builtin``/``command``). The analysis
read ``jobs`` as a builtin that runs nothing: its words were data, so ``x=$(printf '\\x72m'); jobs -x
$x y`` passed ``Bash(rm:*)`` in ``bypassPermissions`` mode, and an allow rule ``Bash(jobs:*)``
allowed ``jobs -x rm y`` in default mode: 6 of 7 allowed before. ``jobs`` is a wrapper now: with
``-x`` its command is a part, a dynamic one a nameless part.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.tools.bash import Bash
from tests._hidden_code import rule_misses, run_bash
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

pytestmark = pytest.mark.anyio

ATTACKS = ["x=$(printf '\\x72m'); jobs -x $x y", "x=$(printf '\\x72m'); jobs -xl $x y",
           "x=$(printf '\\x72m'); builtin jobs -x -- $x y", "jobs -x $'\\x72m' y", "o=-x; jobs $o rm y"]
KEPT = ["jobs", "jobs -l", "jobs %1", "jobs -p"]


async def test_jobs_x_runs_its_command(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, ATTACKS, KEPT) == ([], [])
    got = await decide(tmp_path, Bash(), ["jobs -x rm y", "jobs -rx rm y", "jobs -l"], "default",
                       allow=["Bash(jobs:*)"])
    assert got == ["ask", "ask", "allow"]


def test_bash_runs_the_command_of_jobs_x(tmp_path: Path) -> None:
    run_bash(tmp_path, "jobs -x touch a; jobs -xl touch b; builtin jobs -x -- touch c")
    assert [(tmp_path / n).exists() for n in "abc"] == [True, True, True]
