"""Shared checks of the round-33 analysis tests: engine decisions under ``Bash(rm:*)`` in
``bypassPermissions`` mode, and a script run by real bash in a temporary directory."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from shellrt.tools.bash import Bash
from tests.conftest import require
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide


async def rule_misses(tmp_path: Path, attacks: list[str], kept: list[str]) -> tuple[list[str], list[str]]:
    """(attacks the engine allowed, kept commands it did not allow) with ``Bash(rm:*)`` denied."""
    got = await decide(tmp_path, Bash(), attacks + kept, "bypassPermissions", deny=["Bash(rm:*)"])
    allowed = [c for c, d in zip(attacks, got[: len(attacks)], strict=True) if d == "allow"]
    refused = [c for c, d in zip(kept, got[len(attacks) :], strict=True) if d != "allow"]
    return allowed, refused


def run_bash(cwd: Path, script: str) -> None:
    """Run ``script`` with real bash in ``cwd`` (a test's temporary directory)."""
    bash = shutil.which("bash")
    require(bash is not None, "bash not installed")
    assert bash is not None
    subprocess.run([bash, "-c", script], cwd=cwd, env={"PATH": "/usr/bin:/bin"}, timeout=30, capture_output=True)
