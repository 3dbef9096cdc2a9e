"""Red team, round 52 (analysis12): a FIFO in the workspace read as a file (round 51's Left).

``mkfifo q`` (an earlier call, or an unpacked archive) leaves a name that every reading program opens and then
waits on until a writer comes, or takes what another command writes there: ``cat q`` was read-only, allowed
unasked in the default mode and in plan mode (5 of 5 allowed before), and the call blocked until its timeout.
The analysis sees no filesystem; the tools resolve each read (`_bashparts`), and now a FIFO, socket or device
among them makes the part not read-only (asked), for programs that open what they read (``ls -l q`` does not).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from shellrt.tools.bash import Bash
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

ATTACKS = ["cat q", "wc -l < q", "head -n 1 q", "grep x q", "cat ./*"]
KEPT = ["cat notes.txt", "ls -l q", "test -p q", "grep -r x ."]


def test_a_reader_takes_what_another_command_writes(tmp_path: Path) -> None:
    """The premise, with coreutils ``cat``: what a writer puts in the FIFO is read by the "read-only" call."""
    os.mkfifo(tmp_path / "q")
    writer = os.open(tmp_path / "q", os.O_RDWR)  # another command's end (O_RDWR: opening does not wait)
    os.write(writer, b"a secret meant for another command\n")
    reader = subprocess.Popen(["cat", "q"], cwd=tmp_path, stdout=subprocess.PIPE)
    try:
        assert reader.stdout is not None
        line = reader.stdout.readline()  # once cat printed it, it holds the FIFO open: the writer may go
    finally:
        os.close(writer)
        reader.kill()
        reader.communicate(timeout=60)
    assert line == b"a secret meant for another command\n"


@pytest.mark.anyio
async def test_a_fifo_read_is_not_read_only(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    os.mkfifo(ws / "q")
    (ws / "notes.txt").write_text("x\n")
    got = await decide(tmp_path, Bash(), ATTACKS + KEPT, "default", ws=ws)
    assert got == ["ask"] * len(ATTACKS) + ["allow"] * len(KEPT)
