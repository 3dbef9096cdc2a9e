"""Red team, round 49 (analysis9): ``env PS4='$(…)' bash -xc ls`` sets code as ``PS4='$(…)' bash`` does.

Round 33 made a variable whose value bash runs as code (``PS4`` under ``set -x``, prompts, the
``…_COMMAND``/``…PAGER`` command lines) a part no rule can check when its value holds an expansion:
``PS4='$(r""m y)' bash -xc ls`` was denied beside ``Bash(rm:*)``. The same value given through ``env``'s
``NAME=VALUE`` operands was no binding at all: ``env PS4='$(r""m y)' bash -xc ls`` (and after ``-u``, under
``nice``/``timeout``, with ``SHELLOPTS=xtrace`` instead of ``-x``) ran in ``bypassPermissions``. Real bash
5.2 takes ``PS4`` from the environment when it is not root (a sandbox user) and runs the ``$(…)``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.tools.bash import Bash
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

pytestmark = pytest.mark.anyio

ATTACKS = [
    "env PS4='$(r\"\"m y)' bash -xc ls", "env 'PS4=$(r\"\"m y)' bash -x s.sh",
    "env -u x PS4='$(r\"\"m y)' bash -xc ls", "nice env PS4='$(r\"\"m y)' bash -xc ls",
    "timeout 5 env PS4='$(r\"\"m y)' bash -xc ls", "env SHELLOPTS=xtrace PS4='$(r\"\"m y)' bash -c ls",
    "env PS4='`r\"\"m y`' bash -xc ls", "/usr/bin/env PS4='$(r\"\"m y)' bash -xc ls",
]
KEPT = ["env LC_ALL=C ls", "env PS4='+ ' bash -xc ls", "env FOO=bar ls"]


async def test_a_code_variable_env_sets_is_a_part_no_rule_checks(tmp_path: Path) -> None:
    got = await decide(tmp_path, Bash(), ATTACKS + KEPT, "bypassPermissions", deny=["Bash(rm:*)"])
    ran = [c for c, d in zip(ATTACKS, got[: len(ATTACKS)], strict=True) if d == "allow"]
    refused = [c for c, d in zip(KEPT, got[len(ATTACKS) :], strict=True) if d != "allow"]
    assert (ran, refused) == ([], [])


def test_real_bash_runs_a_ps4_env_gives_it_when_not_root() -> None:
    bash, runuser = shutil.which("bash"), shutil.which("runuser")
    argv = ["env", "PS4=$(echo RAN >&2)", bash or "bash", "-xc", "true"]
    if os.geteuid() == 0:  # bash ignores PS4 from the environment as root; a sandbox user is not
        if runuser is None:
            pytest.skip("root without runuser")
        argv = [runuser, "-u", "nobody", "--", *argv]
    if bash is None:
        pytest.skip("bash not installed")
    done = subprocess.run(argv, cwd="/", stdin=subprocess.DEVNULL, capture_output=True, timeout=20, check=False)
    assert b"RAN" in done.stderr
