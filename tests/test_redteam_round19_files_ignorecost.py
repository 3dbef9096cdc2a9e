"""Red team, round 19 (files): a hostile ignore file cannot hold the host's thread past its deadline.

Where Glob lists with the Python walker (docker; local, whose view masks secrets by default), the
walk runs in a thread of the shellrt process for `IN_PROCESS_LIST_S`, then in a child process held
to a deadline. The thread looked at its deadline between entries only; each entry is matched against
every rule of the repository's ignore files (up to 10,000 rules of up to 4,096 characters), and a rule
of many ``*`` costs ~25 ms against a 250-character name: 400 such rules held the host's thread (and
its GIL) ~10 s for one name, whatever the deadline; 10,000 would be minutes. The rule matching now
looks at the deadline too. (Deadlines shortened here to keep it quick.)
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import shellrt
from shellrt.tools import _search

pytestmark = pytest.mark.anyio

RULES = 400


async def test_a_costly_ignore_file_stops_at_the_threads_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_search, "IN_PROCESS_LIST_S", 0.5)
    monkeypatch.setattr(_search, "PYTHON_SEARCH_TIMEOUT_S", 2.0)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".gitignore").write_text("".join("*a" * 300 + f"b{n}\n" for n in range(RULES)))
    for n in range(3):
        (ws / f"{'a' * 240}-{n}.txt").touch()
    async with shellrt.Runtime(
        workspace=ws, sandbox="local", mode="default", session_dir=tmp_path / "s", settings_files=()
    ) as rt:
        cpu, wall = time.process_time(), time.monotonic()
        user = await rt.run(
            [{"type": "tool_use", "id": "g", "name": "Glob", "input": {"pattern": "**/*.txt"}}]
        )
        cpu, wall = time.process_time() - cpu, time.monotonic() - wall
    block = user["content"][0]
    # The walk left the thread at its deadline (0.5 s) for the child, which the deadline (2 s) ended.
    assert cpu < 3.0, f"the host process spent {cpu:.1f} s of CPU in one Glob ({wall:.1f} s)"
    assert block["is_error"] and "longer than" in block["content"], block
