"""Red team, round 51 (analysis11): standard input named by another spelling of its path.

A shell, ``source``, an interpreter or ``awk -f``/``sed -f``/``make -f`` given ``/dev/stdin`` runs a
here-string no rule reads, and round 29's checks ask for it beside a deny rule; they matched the word's text
(``-|/dev/stdin|/dev/fd/…|/proc/…/fd/…``), so ``//dev/stdin``, ``/dev/./stdin``, ``/dev/./fd/3``,
``../…/dev/stdin`` and ``/proc/self/root/dev/stdin`` ran the obfuscated ``rm`` beside ``Bash(rm:*)`` denied in
``bypassPermissions`` (9 of 10 allowed before; `/dev/./fd/3` was caught by another check). Now every such check reads the path as the kernel opens it
(`analysis.kernel_paths.names_stdin`, which `permissions.embedded` uses too).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from shellrt.tools.bash import Bash
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

UP = "../" * 40  # more `..` than any directory is deep: they stop at the root
RM = "'x=r; ${x}m y'"
ATTACKS = [
    f"bash //dev/stdin <<< {RM}", f"source //dev/stdin <<< {RM}", f". /dev/./stdin <<< {RM}",
    f"bash /dev/./fd/3 3<<< {RM}", f"sh {UP}dev/stdin <<< {RM}", f"bash /proc/self/root/dev/stdin <<< {RM}",
    "python3 //dev/stdin <<< 'import os; os.remove(\"y\")'", "perl //dev/stdin <<< 'unlink \"y\"'",
    "awk -f //dev/stdin <<< 'BEGIN{system(\"r\"\"m y\")}'", "sed -n -f //dev/stdin x <<< '1e r\"\"m y'",
]  # fmt: skip
KEPT = ["cat //dev/stdin <<< x", "bash -c 'echo x'"]


def test_each_spelling_runs_the_here_string(tmp_path: Path) -> None:
    """The premise, with the real programs (bash 5.2, python3, perl, awk, GNU sed): each attack removes ``y``."""
    script = "".join(f": > y; echo > x; {c} >/dev/null 2>&1; [ -e y ] && echo 'kept: {c!r}'\n" for c in ATTACKS)
    ran = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert "kept" not in ran.stdout, ran.stdout


@pytest.mark.anyio
async def test_stdin_spellings_meet_deny_rules(tmp_path: Path) -> None:
    got = await decide(tmp_path, Bash(), ATTACKS + KEPT, "bypassPermissions", deny=["Bash(rm:*)"])
    ran = [c for c, d in zip(ATTACKS, got[: len(ATTACKS)], strict=True) if d == "allow"]
    refused = [c for c, d in zip(KEPT, got[len(ATTACKS) :], strict=True) if d != "allow"]
    assert (ran, refused) == ([], [])
