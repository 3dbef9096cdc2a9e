"""Red team, round 53 (analysis13): a FIFO opened by a redirection of a program that opens nothing itself.

Round 52 made a read of a FIFO, socket or device not read-only, except for programs that look at a name without
opening it (``ls -l q``, ``test -p q``, ``stat``, ``find``). The exemption covered the part's redirections too, but
bash opens those itself before the program starts: ``ls < q``, ``ls 3<q``, ``ls 2< q``, ``test -p q < q``, ``stat .
< q``, ``find . -name x < q``, ``{ ls; } < q``, ``( ls ) < q`` were read-only, allowed unasked (default and plan
mode: 8 of 8 before), and the call waited for a writer until its timeout. Now the redirections a part's shell
opens are checked for every program; the program's own words keep the exemption.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from shellrt.tools.bash import Bash
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

ATTACKS = ["ls < q", "ls 3<q", "ls 2< q", "test -p q < q", "stat . < q", "find . -name x < q", "{ ls; } < q",
           "( ls ) < q"]  # fmt: skip
KEPT = ["ls -l q", "test -p q", "ls < notes.txt", "stat notes.txt < notes.txt", "ls 0<&-", "find . -name q"]


def test_the_shell_opens_the_fifo_before_the_program(tmp_path: Path) -> None:
    """The premise, with bash 5.2: each attack waits on the FIFO (``timeout`` ends it: 124)."""
    os.mkfifo(tmp_path / "q")
    waited = []
    for command in ATTACKS:
        ran = subprocess.run(["timeout", "0.5", "bash", "-c", command], cwd=tmp_path, capture_output=True, timeout=30)
        waited.append(ran.returncode)
    assert waited == [124] * len(ATTACKS)


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["default", "plan"])
async def test_a_redirected_fifo_is_not_read_only(tmp_path: Path, mode: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    os.mkfifo(ws / "q")
    (ws / "notes.txt").write_text("x\n")
    got = await decide(tmp_path, Bash(), ATTACKS + KEPT, mode, ws=ws)
    assert got == ["ask"] * len(ATTACKS) + ["allow"] * len(KEPT)
