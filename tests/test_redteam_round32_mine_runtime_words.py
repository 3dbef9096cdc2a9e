"""Red team, round 32 (lead): a run-time option to a program with no model, and ``enable -f``.

With ``Bash(rm:*)`` denied in ``bypassPermissions`` mode, round 31 asked for ``kotlin -e …`` but not
for ``E=-e; kotlin $E …`` (the option known only at run time, round 31 analysis' Left), nor for
``enable -f x.so y``, which loads a shared object into bash (its constructor runs: any code).
Decisions of the real engine, the same for every caller and backend.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.tools.bash import Bash
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

pytestmark = pytest.mark.anyio

ATTACKS = [
    "E=-e; kotlin $E exit", 'kotlin "$E" x', "kotlin ${E} x", "kotlin `printf -- -e` x", "guile $O x",
    "enable -f ./x.so y", "enable -nf x.so y", "enable -f x.so y; y",
]
KEPT = ["kotlin x.kts", "mytool --file=$F", "mytool x$F", "enable -n echo", "enable"]


async def test_run_time_options_and_loaded_builtins_meet_deny_rules(tmp_path: Path) -> None:
    got = await decide(tmp_path, Bash(), ATTACKS + KEPT, "bypassPermissions", deny=["Bash(rm:*)"])
    assert [c for c, d in zip(ATTACKS, got[: len(ATTACKS)], strict=True) if d == "allow"] == []
    assert [c for c, d in zip(KEPT, got[len(ATTACKS) :], strict=True) if d != "allow"] == []
