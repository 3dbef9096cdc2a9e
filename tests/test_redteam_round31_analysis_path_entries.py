"""Red team, round 31 (analysis): ``PATH`` entries that name the repository or ``/tmp`` by absolute path.

Round 30 asked for ``PATH=bin ls`` (a relative entry: the repository's files) but not for the same
directory spelled absolutely (``PATH=/work/ws/bin ls``, ``PATH=/usr/bin/../../work/ws``), nor for
``PATH=/tmp/w ls`` after an earlier call of the session wrote ``/tmp/w/ls`` (bwrap keeps ``/tmp`` for
the session; the engine judges one call). With ``Bash(rm:*)`` denied, in ``bypassPermissions`` mode:
decisions of the real engine, the same for root and non-root callers and on every backend.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.tools.bash import Bash
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

pytestmark = pytest.mark.anyio

ATTACKS = [
    "PATH=WS/bin:$PATH ls", "PATH=WS ls", "PATH=WS/sub/../bin ls", "PATH=/usr/bin/../..WS/bin ls",
    "PATH=/tmp/w:$PATH ls", "export PATH=/tmp/w:$PATH; ls", "GIT_EXEC_PATH=WS git fetch", "PATH=/usr/tmp ls",
    "PATH=~/..WS/bin ls",
]
KEPT = [
    "export PATH=/usr/local/bin:$PATH; ls", "export PATH=\"$HOME/.local/bin:$PATH\"; ls", "PATH=/usr/bin ls",
    "PATH=/usr/lib/jvm/bin:/opt/x/bin:/snap/bin ls", "PATH=$PATH:/usr/sbin ls", "PATH=~/bin:$PATH ls",
]


async def test_path_entries_outside_system_directories_ask(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    attacks = [c.replace("WS", str(ws)) for c in ATTACKS]
    got = await decide(tmp_path, Bash(), attacks + KEPT, "bypassPermissions", ws=ws, deny=["Bash(rm:*)"])
    assert [c for c, d in zip(attacks, got[: len(attacks)], strict=True) if d == "allow"] == []
    assert [c for c, d in zip(KEPT, got[len(attacks) :], strict=True) if d != "allow"] == []
