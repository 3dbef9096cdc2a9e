"""Red team, round 50 (analysis10): a wrapper or shell named by its path (``/bin/bash -c …``).

The part names read ``/usr/bin/env``, ``/bin/bash`` as ``env``, ``bash`` (a system directory's program),
but the planner looked inside a wrapper only when its word was the bare name: ``/bin/bash -c 'r""m y'``
was one part named ``bash``, and its script was never read. Beside ``Bash(rm:*)`` denied in
``bypassPermissions`` these ran ``rm`` (6 of 7 before); the 7th, ``/usr/bin/env PS4='$(…)' bash -xc :``, was
caught only by round 49's own ``env`` reader, which this round removed (the planner's reading is the one now).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from shellrt.tools.bash import Bash
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

pytestmark = pytest.mark.anyio

ATTACKS = [
    "/bin/bash -c 'r\"\"m y'", "/bin/sh -c 'x=r; ${x}m y'", "/usr/bin/timeout 5 bash -c 'r\"\"m y'",
    "/usr/bin/env bash -c 'r\"\"m y'", "/usr/bin/nice /usr/bin/env bash -c 'r\"\"m y'",
    "/bin/bash -c 'printf %s \"$(r\"\"m y)\"'", "/usr/bin/env PS4='$(r\"\"m y)' bash -xc :",
]  # fmt: skip
KEPT = ["/bin/bash -c ls", "/usr/bin/env X=1 ls", "/usr/bin/timeout 5 ls"]


async def test_the_attacks_run_rm(tmp_path: Path) -> None:
    """Each attack does remove ``y`` under the real programs (as a non-root user's bash would read PS4)."""
    script = "".join(f": > y; {c} 2>/dev/null; [ -e y ] && echo 'kept: {c!r}'\n" for c in ATTACKS[:-1])
    ran = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert "kept" not in ran.stdout, ran.stdout


async def test_wrappers_named_by_path_meet_deny_rules(tmp_path: Path) -> None:
    got = await decide(tmp_path, Bash(), ATTACKS + KEPT, "bypassPermissions", deny=["Bash(rm:*)"])
    ran = [c for c, d in zip(ATTACKS, got[: len(ATTACKS)], strict=True) if d == "allow"]
    refused = [c for c, d in zip(KEPT, got[len(ATTACKS) :], strict=True) if d != "allow"]
    assert (ran, refused) == ([], [])
