"""Red team, round 19 (files): Glob's matching cannot hold the host's CPU past its call.

Glob matches every listed path against the model's pattern in Python (`GlobMatcher`, an NFA:
no backtracking, but a step costs every live state). A pattern of many ``*`` over a repository's
long names (``*a`` x 300 over 2,000 names of 250 ``a``) costs ~30 ms a name, and a long pattern of
``**`` segments over a deep tree seconds a path: the call failed at `off_loop`'s deadline ("the file
system does not answer"), but a thread cannot be stopped, so the matching went on -- a minute here,
half an hour for a 1,000-deep tree -- holding the GIL of every session, and counted as stuck (16
such calls and every file tool of the process refused). The matching now stops itself at
`MATCH_TIMEOUT_S`, below that deadline, and says why. (Deadlines shortened here to keep it quick.)
"""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

import shellrt
from shellrt.tools import _offloop
from shellrt.tools import glob as glob_tool

pytestmark = pytest.mark.anyio

NAMES = 2000


def _long_names(ws: Path) -> None:
    """NAMES files of 250 ``a`` (with a number): each costs a ``*a`` x 300 pattern ~30 ms."""
    for n in range(NAMES):
        (ws / f"{'a' * 240}-{n:05d}.txt").touch()


async def test_a_costly_glob_stops_and_leaves_no_cpu_burning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The matching's own 1 s deadline (below) must answer, not off_loop's: listing 2,000 names and
    # matching to that deadline is ~1.1 s idle; 4 s left a loaded lane 2.9 s for the listing.
    monkeypatch.setattr(_offloop, "FILE_IO_TIMEOUT_S", 12.0)
    # Its own threads alone: another test's abandoned threads still running in this worker (round 44
    # batch2's Glob matching, up to 20 s) would count as stuck under the shortened deadline.
    monkeypatch.setattr(_offloop, "_abandoned", {})
    stuck_before = _offloop.stuck_threads()
    monkeypatch.setattr(glob_tool, "MATCH_TIMEOUT_S", 1.0, raising=False)
    ws = tmp_path / "ws"
    ws.mkdir()
    _long_names(ws)
    pattern = "*a" * 300 + "b"
    async with shellrt.Runtime(
        workspace=ws, sandbox="local", mode="default", session_dir=tmp_path / "s", settings_files=()
    ) as rt:
        user = await rt.run([{"type": "tool_use", "id": "g", "name": "Glob", "input": {"pattern": pattern}}])
        block = user["content"][0]
        # What the process spends once the call has answered: nothing of this call may still run.
        cpu, wall = time.process_time(), time.monotonic()
        await anyio.sleep(1.5)
        burnt = (time.process_time() - cpu) / (time.monotonic() - wall)
    assert burnt < 0.25, f"the matching went on after the call answered ({burnt:.0%} of a CPU)"
    assert block["is_error"], block
    assert "took longer than" in block["content"] and "pattern" in block["content"], block
    # No operation of this call is left blocked (under load the walk may pass the file-I/O bound and
    # end a little later; another test in this worker may have left its own count).
    deadline = time.monotonic() + 10
    while _offloop.stuck_threads() > stuck_before and time.monotonic() < deadline:
        await anyio.sleep(0.1)
    assert _offloop.stuck_threads() <= stuck_before
